"""Turn the moto instances Karpenter launches into Nodes that testenv's kwok plays the kubelet
of, as the kwok provider does for its own nodes; every second until killed.
usage: shim.py MOTO_ENDPOINT KUBECTL
For each NodeClaim with a providerID and no Node with that providerID:
  1. moto: ModifyInstanceAttribute Groups=<EC2NodeClass status.securityGroups>. moto's CreateFleet
     ignores the launch template's NetworkInterfaces[0].Groups (instance gets the VPC default SG,
     and DescribeInstances .SecurityGroups is empty), which Karpenter reports as SecurityGroupDrift.
  2. kube: create Node <PrivateDnsName> with spec.providerID, the karpenter.sh/unregistered:NoExecute
     taint (what nodeadm's kubelet registers with) and annotation kwok.x-k8s.io/node=fake, so
     testenv's kwok controller plays its kubelet (Ready condition, heartbeats, pods Running).
  3. kube: set status.capacity/allocatable from the NodeClaim (kwok keeps existing values)."""
import json, subprocess, sys, time

import boto3
ep, kubectl = sys.argv[1], sys.argv[2]
ec2 = boto3.client("ec2", endpoint_url=ep, region_name="us-west-2", aws_access_key_id="kelp-shim", aws_secret_access_key="test")
def k(*a, stdin=None):
    return subprocess.run([kubectl, *a], input=stdin, capture_output=True, text=True, check=True).stdout


def once():
    try:
        nodes = json.loads(k("get", "nodes", "-o", "json"))["items"]
        have = {n["spec"].get("providerID") for n in nodes}
        for nc in json.loads(k("get", "nodeclaims", "-o", "json"))["items"]:
            pid = nc.get("status", {}).get("providerID")
            if not pid or pid in have or nc["spec"]["nodeClassRef"]["kind"] != "EC2NodeClass":
                continue
            iid = pid.rsplit("/", 1)[1]
            inst = ec2.describe_instances(InstanceIds=[iid])["Reservations"][0]["Instances"][0]
            ncl = json.loads(k("get", "ec2nodeclass", nc["spec"]["nodeClassRef"]["name"], "-o", "json"))
            sgs = [g["id"] for g in ncl["status"].get("securityGroups", [])]
            if sgs and sorted(g["GroupId"] for g in inst.get("SecurityGroups", [])) != sorted(sgs):
                ec2.modify_instance_attribute(InstanceId=iid, Groups=sgs)
            name = inst["PrivateDnsName"]
            node = {"apiVersion": "v1", "kind": "Node",
                    "metadata": {"name": name, "annotations": {"kwok.x-k8s.io/node": "fake"},
                                 "labels": {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
                                            "kubernetes.io/arch": nc["metadata"]["labels"].get("kubernetes.io/arch", "amd64")}},
                    "spec": {"providerID": pid,
                             "taints": [{"key": "karpenter.sh/unregistered", "effect": "NoExecute"}]}}
            k("create", "-f", "-", stdin=json.dumps(node))
            st = {"status": {"capacity": nc["status"]["capacity"], "allocatable": nc["status"]["allocatable"],
                             "addresses": [{"type": "InternalIP", "address": inst["PrivateIpAddress"]},
                                           {"type": "Hostname", "address": name}]}}
            k("patch", "node", name, "--subresource=status", "--type=merge", "-p", json.dumps(st))
            print(f"node {name} <- {pid} (sgs {sgs})", flush=True)
    except subprocess.CalledProcessError as e:  # the API server restarting, a race: next pass
        print(f"shim: {e.stderr.strip()}", file=sys.stderr, flush=True)
    except Exception as e:  # a claim half-written, an instance moto already dropped: next pass
        print(f"shim: {type(e).__name__}: {e}", file=sys.stderr, flush=True)


while True:
    once()
    time.sleep(1)
