#!/usr/bin/env python3
"""Generates demo/cluster.yaml and demo/karpenter-metrics.txt: the dump bundled in the kelp binary.

The story, as seen at 2026-11-21T10:00:00Z (a Saturday) on EKS cluster prod-usw2 (Kubernetes 1.34,
Karpenter v1.14.1 with the AWS provider):

* 08:30 the platform team moved EC2NodeClass `default` from al2023@v20251027 to al2023@v20251117.
  Karpenter has been replacing drifted nodes since. In `default` three are stuck: one holds a
  do-not-disrupt StatefulSet pod (payments/ledger-0), one a pod whose PDB allows 0 disruptions
  (web/checkout-pdb), one is empty but someone annotated the node itself do-not-disrupt. A fourth is
  being replaced right now. In `arm64` two drifted nodes wait on a budget that freezes drift between
  06:00 and 14:00 UTC every day.
* NodePools: arm64 (weight 50), default (weight 10, near its cpu limit), legacy (points at the deleted
  EC2NodeClass legacy-al2: not Ready), inferentia (requirements match no instance type), gpu (tainted,
  limits), batch (spot only, tainted, cpu limit exhausted).
* Waiting pods: ml/trainer-0 (needs a GPU, does not tolerate the gpu taint), a payments worker with a
  typo'd nodeSelector label, a batch report job blocked by batch's limit, a storefront canary asking for
  reserved capacity (2 minutes old), a search indexer nominated to an arm64 NodeClaim whose node never
  joined, a storefront replica nominated a few seconds ago (fine), and node-exporter's pod for one
  packed node.
* Also: a gpu node whose nvidia.com/gpu never registered, an expired batch node held by a
  do-not-disrupt job pod, a default node NotReady for 16 minutes, a spot interruption two minutes ago,
  two InsufficientCapacityError launches, and a DaemonSet (log-shipper) running on a gpu node its pool
  template does not allow.
* The Karpenter controller runs on the `system` managed node group, as it should.

Run: python3 demo/generate.py  (writes demo/cluster.yaml and demo/karpenter-metrics.txt)
"""

from __future__ import annotations

import os
import sys
from datetime import timedelta

sys.dont_write_bytecode = True  # keep demo/ free of __pycache__
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from kobjects import (  # noqa: E402
    NOW, Cluster, ago, today, ts, req, taint, toleration, dump_docs, render_requirements, pool_requirement_map,
    resources_json, instance_type, spot_price, parse_ts, ami_id, parse_cpu_m, parse_mem_ki, fmt_cpu, fmt_mem_mi,
    cond, truncate_event, core_cond,
)

OLD_AMI = "v20251027"
NEW_AMI = "v20251117"
ROLLOUT = today("08:30:00")
DRIFT_SEEN = today("08:31:10")
GPU_TAINT = taint("nvidia.com/gpu", "true", "NoSchedule")
BATCH_TAINT = taint("workload", "batch", "NoSchedule")
NEURON_TAINT = taint("aws.amazon.com/neuron", None, "NoSchedule")
A, B, C = "us-west-2a", "us-west-2b", "us-west-2c"
ECR = "111122223333.dkr.ecr.us-west-2.amazonaws.com"

cl = Cluster(seed="demo")
for grp, plural, kind, vers in (("karpenter.sh", "nodepools", "NodePool", ["v1"]),
                                ("karpenter.sh", "nodeclaims", "NodeClaim", ["v1"]),
                                ("karpenter.sh", "nodeoverlays", "NodeOverlay", ["v1alpha1"]),
                                ("karpenter.k8s.aws", "ec2nodeclasses", "EC2NodeClass", ["v1"])):
    cl.crd(grp, plural, kind, vers, created=ago(d=212))


def old_ami(itype):
    it = instance_type(itype)
    return ami_id(OLD_AMI, cl.s("ami"), it["arch"], bool(it["gpu"]))


# ---------------------------------------------------------------------------
# NodeClasses and NodePools
# ---------------------------------------------------------------------------

default_nc = cl.ec2nodeclass("default", created=ago(d=212), ami_alias=f"al2023@{NEW_AMI}", generation=7)
for c in default_nc["status"]["conditions"]:
    if c["type"] == "AMIsReady":
        c["lastTransitionTime"] = ts(ROLLOUT + timedelta(seconds=5))
gpu_nc = cl.ec2nodeclass("gpu", created=ago(d=150), ami_alias=f"al2023@{OLD_AMI}", generation=3, block_gib=200)
gpu_nc["spec"]["blockDeviceMappings"][0]["ebs"].update(iops=6000, throughput=500)

general_labels = {"node.example.com/class": "general", "logging.example.com/enabled": "true"}

cl.nodepool("arm64", weight=50, created=ago(d=96), labels=general_labels, requirements=[
    req("kubernetes.io/arch", "In", "arm64"), req("kubernetes.io/os", "In", "linux"),
    req("karpenter.sh/capacity-type", "In", "spot", "on-demand"),
    req("karpenter.k8s.aws/instance-family", "In", "c7g", "m7g", "r7g"),
    req("karpenter.k8s.aws/instance-size", "NotIn", "metal", "medium")],
    budgets=[{"nodes": "0", "schedule": "0 6 * * *", "duration": "8h", "reasons": ["Drifted"]}, {"nodes": "20%"}],
    consolidate_after="10m", limits={"cpu": "256", "memory": "1024Gi"}, generation=4)

cl.nodepool("default", weight=10, created=ago(d=212), labels=general_labels, requirements=[
    req("kubernetes.io/arch", "In", "amd64"), req("kubernetes.io/os", "In", "linux"),
    req("karpenter.sh/capacity-type", "In", "spot", "on-demand"),
    req("karpenter.k8s.aws/instance-family", "In", "c6a", "c6i", "c7i", "m6a", "m6i", "m7i", "r6i", "r7i"),
    req("karpenter.k8s.aws/instance-size", "NotIn", "metal")],
    budgets=[{"nodes": "20%"}, {"nodes": "0", "schedule": "0 9 * * mon-fri", "duration": "8h",
                                "reasons": ["Underutilized"]}],
    consolidate_after="5m", termination_grace="48h", limits={"cpu": "160", "memory": "640Gi"}, generation=9)

cl.nodepool("legacy", nodeclass="legacy-al2", nodeclass_missing=True, created=ago(d=401),
            labels={"team": "legacy-apps"}, requirements=[
                req("kubernetes.io/arch", "In", "amd64"), req("karpenter.sh/capacity-type", "In", "on-demand"),
                req("karpenter.k8s.aws/instance-family", "In", "c5", "m5")],
            policy="WhenEmpty", consolidate_after="30m", generation=2)
legacy = cl.nodepools["legacy"]
for c in legacy["status"]["conditions"]:
    if c["type"] in ("NodeClassReady", "Ready"):
        c["lastTransitionTime"] = ts(ago(d=6, h=3, m=12))

inferentia = cl.nodepool("inferentia", created=today("07:05:02"), taints=[dict(NEURON_TAINT)],
                         labels={"node.example.com/class": "inference"}, requirements=[
                             req("kubernetes.io/arch", "In", "arm64"), req("kubernetes.io/os", "In", "linux"),
                             req("karpenter.k8s.aws/instance-family", "In", "inf2"),
                             req("karpenter.sh/capacity-type", "In", "on-demand")],
                         policy="WhenEmpty", consolidate_after="15m", limits={"aws.amazon.com/neuron": "8"})

cl.nodepool("gpu", nodeclass="gpu", created=ago(d=150), taints=[dict(GPU_TAINT)],
            labels={"node.example.com/class": "gpu"}, requirements=[
                req("karpenter.k8s.aws/instance-family", "In", "g5", "g6"),
                req("karpenter.sh/capacity-type", "In", "on-demand"),
                req("kubernetes.io/arch", "In", "amd64"), req("kubernetes.io/os", "In", "linux")],
            limits={"cpu": "200", "memory": "800Gi", "nvidia.com/gpu": "8"}, budgets=[{"nodes": "1"}],
            policy="WhenEmpty", consolidate_after="10m", expire_after="336h", generation=3)

cl.nodepool("batch", created=ago(d=180), taints=[dict(BATCH_TAINT)],
            labels={"node.example.com/class": "batch", "workload-type": "batch"}, requirements=[
                req("kubernetes.io/arch", "In", "amd64"), req("kubernetes.io/os", "In", "linux"),
                req("karpenter.sh/capacity-type", "In", "spot"),
                req("karpenter.k8s.aws/instance-category", "In", "c", "m"),
                req("karpenter.k8s.aws/instance-size", "In", "4xlarge", "8xlarge")],
            limits={"cpu": "96", "memory": "384Gi"}, budgets=[{"nodes": "25%"}],
            consolidate_after="2m", expire_after="24h", termination_grace="2h", generation=5)

# ---------------------------------------------------------------------------
# Nodes
# ---------------------------------------------------------------------------

system = [cl.managed_node("system", "m6i.xlarge", z, ago(d=38, h=4, m=i * 3),
                          labels={"node-role.example.com/system": "true"})
          for i, z in enumerate((A, B, C))]

N = {}  # short name -> (claim, node)


def m(key, pool, itype, zone, created, **kw):
    claim, node = cl.machine(pool, itype, zone, created, **kw)
    N[key] = (claim, node)
    return claim, node


# arm64 -- two nodes still on the old AMI, blocked by the Drifted budget
m("a1", "arm64", "m7g.2xlarge", A, ago(d=6, h=2), capacity_type="on-demand",
  drifted=("AMIDrift", DRIFT_SEEN), image_id=old_ami("m7g.2xlarge"))
m("a2", "arm64", "m7g.2xlarge", B, ago(d=3, h=9), capacity_type="spot",
  drifted=("AMIDrift", DRIFT_SEEN + timedelta(seconds=2)), image_id=old_ami("m7g.2xlarge"))
m("a3", "arm64", "c7g.2xlarge", C, today("08:41:12"), capacity_type="spot")
m("a4", "arm64", "c7g.xlarge", A, today("08:44:50"), capacity_type="spot")
m("a5", "arm64", "r7g.xlarge", B, today("09:05:31"), capacity_type="on-demand")
m("a6", "arm64", "m7g.xlarge", C, today("09:12:03"), capacity_type="spot")
# launched for search/indexer at 09:46, the node never joined
m("a7", "arm64", "c7g.2xlarge", C, today("09:46:18"), capacity_type="spot", registered=False, name="arm64-7tqzc")

# default -- old-AMI stragglers
m("d1", "default", "m6i.2xlarge", A, ago(d=9, h=4), capacity_type="on-demand",
  drifted=("AMIDrift", DRIFT_SEEN + timedelta(seconds=1)), image_id=old_ami("m6i.2xlarge"))
m("d2", "default", "c6i.2xlarge", B, ago(d=4, h=7), capacity_type="spot",
  drifted=("AMIDrift", DRIFT_SEEN + timedelta(seconds=1)), image_id=old_ami("c6i.2xlarge"))
m("d3", "default", "m6i.2xlarge", C, ago(d=7, h=1), capacity_type="on-demand",
  drifted=("AMIDrift", DRIFT_SEEN + timedelta(seconds=3)), image_id=old_ami("m6i.2xlarge"),
  deleting=today("09:55:20"))
m("d4", "default", "c6i.xlarge", A, ago(d=2, h=11), capacity_type="spot",
  drifted=("AMIDrift", DRIFT_SEEN + timedelta(seconds=4)), image_id=old_ami("c6i.xlarge"),
  node_annotations={"karpenter.sh/do-not-disrupt": "true"})
# replacement for d3, launched by the drift command
m("d3r", "default", "m6i.2xlarge", C, today("09:54:10"), capacity_type="on-demand",
  registered_at=today("09:54:48"), initialized_at=today("09:55:05"))
# NotReady since 09:44
m("d5", "default", "c6i.2xlarge", B, today("09:02:44"), capacity_type="spot", node_ready="Unknown",
  node_not_ready_since=today("09:44:12"))
# already replaced onto the new AMI this morning
m("d6", "default", "m6i.2xlarge", A, today("08:33:02"), capacity_type="on-demand")
m("d7", "default", "m7i.2xlarge", B, today("08:36:40"), capacity_type="spot")
m("d8", "default", "c7i.2xlarge", C, today("08:40:05"), capacity_type="spot")
m("d9", "default", "c6i.2xlarge", A, today("08:47:29"), capacity_type="spot")
m("d10", "default", "r6i.2xlarge", B, today("08:52:13"), capacity_type="on-demand")
m("d11", "default", "m6a.2xlarge", C, today("08:58:57"), capacity_type="spot")
m("d12", "default", "c6a.2xlarge", A, today("09:07:36"), capacity_type="spot")
m("d13", "default", "m6i.2xlarge", B, today("09:14:21"), capacity_type="on-demand")
m("d14", "default", "r6i.xlarge", C, today("09:21:48"), capacity_type="spot")
m("d15", "default", "m7i.2xlarge", A, today("09:28:30"), capacity_type="spot")
m("d16", "default", "c6i.4xlarge", B, today("09:33:07"), capacity_type="on-demand")
# spot interruption at 09:57:41
m("d17", "default", "c6i.2xlarge", B, today("09:05:58"), capacity_type="spot", deleting=today("09:57:42"))
# launching now for a storefront replica
m("d18", "default", "c6i.xlarge", A, today("09:59:08"), capacity_type="spot", registered=False)

# gpu
m("g1", "gpu", "g5.2xlarge", A, ago(d=5, h=3), capacity_type="on-demand")
m("g2", "gpu", "g6.12xlarge", B, ago(d=1, h=6), capacity_type="on-demand",
  node_labels={"logging.example.com/enabled": "true"})
m("g3", "gpu", "g5.2xlarge", C, today("09:35:20"), capacity_type="on-demand", registered_at=today("09:36:02"),
  initialized=False, gpu_allocatable="absent",
  init_reason=("ResourceNotRegistered", 'Resource "nvidia.com/gpu" was requested but not registered'),
  claim_requests={"cpu": "6", "memory": "20Gi", "nvidia.com/gpu": "1", "pods": "6"})

# batch -- 96 of 96 vCPU; b1 expired at 09:18:30 and is draining
m("b1", "batch", "c6i.8xlarge", A, parse_ts("2026-11-20T09:18:30Z"), capacity_type="spot",
  deleting=today("09:18:32"))
m("b2", "batch", "m6i.8xlarge", B, today("02:10:44"), capacity_type="spot")
m("b3", "batch", "m6i.8xlarge", C, today("05:41:19"), capacity_type="spot")

claim = lambda k: N[k][0]  # noqa: E731
node = lambda k: N[k][1]  # noqa: E731

# ---------------------------------------------------------------------------
# DaemonSets
# ---------------------------------------------------------------------------

for ns, name, r, img, hn in (
        ("kube-system", "aws-node", {"cpu": "25m"},
         "602401143452.dkr.ecr.us-west-2.amazonaws.com/amazon-k8s-cni:v1.20.4-eksbuild.1", True),
        ("kube-system", "kube-proxy", {"cpu": "100m"},
         "602401143452.dkr.ecr.us-west-2.amazonaws.com/eks/kube-proxy:v1.34.0-minimal-eksbuild.2", True),
        ("kube-system", "ebs-csi-node", {"cpu": "30m", "memory": "120Mi"},
         "public.ecr.aws/ebs-csi-driver/aws-ebs-csi-driver:v1.50.1", False),
        ("observability", "otel-agent", {"cpu": "100m", "memory": "256Mi"},
         "otel/opentelemetry-collector-contrib:0.138.0", False)):
    cl.daemonset(ns, name, r, image=img, host_network=hn, created=ago(d=200))

log_shipper = cl.daemonset("logging", "log-shipper", {"cpu": "150m", "memory": "300Mi"}, created=ago(d=70),
                           node_selector={"logging.example.com/enabled": "true"},
                           image="cr.fluentbit.io/fluent/fluent-bit:4.1.1")
device_plugin = cl.daemonset(
    "kube-system", "nvidia-device-plugin-daemonset", {"cpu": "50m", "memory": "64Mi"}, created=ago(d=150),
    tolerations=[toleration("nvidia.com/gpu", "Exists", effect="NoSchedule"),
                 toleration("CriticalAddonsOnly", "Exists")],
    affinity={"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "karpenter.k8s.aws/instance-gpu-manufacturer", "operator": "In",
                               "values": ["nvidia"]}]}]}}},
    image="nvcr.io/nvidia/k8s-device-plugin:v0.18.0")
node_exporter = cl.daemonset("monitoring", "node-exporter", {"cpu": "200m", "memory": "180Mi"},
                             created=today("09:49:00"), image="quay.io/prometheus/node-exporter:v1.10.2",
                             host_network=True)

PACKED = node("d13")["metadata"]["name"]
exporter_pending = None

for n in list(cl.nodes.values()):
    for ds in cl.daemonsets:
        if not cl.ds_fits(ds, n):
            continue
        if ds is node_exporter:
            if n["metadata"]["name"] == PACKED:
                exporter_pending = cl.ds_pod(ds, n, created=today("09:49:03"), phase="Pending",
                                             pending_since=today("09:49:03"))
                continue
            cl.ds_pod(ds, n, created=today("09:49:03"))
            continue
        dp = cl.ds_pod(ds, n)
        if ds is device_plugin and n is node("g3"):
            st = dp["status"]
            st["containerStatuses"][0].update(ready=False, restartCount=9, started=False, state={"waiting": {
                "reason": "CrashLoopBackOff",
                "message": "back-off 5m0s restarting failed container=nvidia-device-plugin-daemonset "
                           f"pod={dp['metadata']['name']}_kube-system({dp['metadata']['uid']})"}},
                lastState={"terminated": {"exitCode": 1, "reason": "Error", "startedAt": ts(today("09:54:41")),
                                          "finishedAt": ts(today("09:54:42"))}})
            for c in st["conditions"]:
                if c["type"] in ("Ready", "ContainersReady"):
                    c.update(status="False", reason="ContainersNotReady",
                             message="containers with unready status: [nvidia-device-plugin-daemonset]")
            device_plugin["status"]["numberReady"] -= 1
            device_plugin["status"]["numberAvailable"] -= 1
            device_plugin["status"]["numberUnavailable"] = 1
            cl.event(dp, "BackOff", "Back-off restarting failed container nvidia-device-plugin-daemonset in pod "
                     f"{dp['metadata']['name']}_kube-system({dp['metadata']['uid']})", today("09:37:12"),
                     today("09:59:47"), count=96, etype="Warning", component="kubelet",
                     host=node("g3")["metadata"]["name"])

# ---------------------------------------------------------------------------
# Workloads
# ---------------------------------------------------------------------------


def run(owner_obj, keys, created=None, **kw):
    pods = []
    for k in keys:
        n = node(k) if isinstance(k, str) and k in N else k
        t = created or max(ago(d=1, h=2), parse_ts(n["metadata"]["creationTimestamp"]) + timedelta(seconds=25))
        pods.append(cl.pod(owner_obj, n, created=t, **kw))
    return pods


# karpenter itself, on the system node group
karp_labels = {"app.kubernetes.io/instance": "karpenter", "app.kubernetes.io/name": "karpenter"}
karp_rs = cl.deployment(
    "karpenter", "karpenter", 2, {"cpu": "1", "memory": "1Gi"}, created=ago(d=212), rs_created=ago(d=11),
    labels=karp_labels, limits={"cpu": "1", "memory": "1Gi"},
    image="public.ecr.aws/karpenter/controller:1.14.1@sha256:" + "7c1e" * 16,
    affinity={"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "karpenter.sh/nodepool", "operator": "DoesNotExist"}]}]}},
        "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": dict(karp_labels)}, "topologyKey": "kubernetes.io/hostname"}]}})
karp_rs["spec"]["template"]["spec"]["priorityClassName"] = "system-cluster-critical"
for n in system[:2]:
    cl.pod(karp_rs, n, created=ago(d=11))
cl.pdb("karpenter", "karpenter", karp_labels, max_unavailable=1, healthy=2, expected=2, desired=1, allowed=1)

for ns, name, reps, r, img, labels in (
        ("kube-system", "coredns", 2, {"cpu": "100m", "memory": "70Mi"},
         "602401143452.dkr.ecr.us-west-2.amazonaws.com/eks/coredns:v1.12.4-eksbuild.1", {"k8s-app": "kube-dns"}),
        ("kube-system", "ebs-csi-controller", 2, {"cpu": "10m", "memory": "40Mi"},
         "public.ecr.aws/ebs-csi-driver/aws-ebs-csi-driver:v1.50.1", {"app": "ebs-csi-controller"}),
        ("kube-system", "aws-load-balancer-controller", 2, {"cpu": "100m", "memory": "200Mi"},
         "public.ecr.aws/eks/aws-load-balancer-controller:v2.14.1", None),
        ("kube-system", "metrics-server", 1, {"cpu": "100m", "memory": "200Mi"},
         "registry.k8s.io/metrics-server/metrics-server:v0.8.0", {"k8s-app": "metrics-server"})):
    rs = cl.deployment(ns, name, reps, r, created=ago(d=212), rs_created=ago(d=20), image=img, labels=labels)
    rs["spec"]["template"]["spec"]["priorityClassName"] = "system-cluster-critical"
    for i in range(reps):
        cl.pod(rs, system[(i + len(name)) % 3], created=ago(d=20))
cl.pdb("kube-system", "coredns", {"k8s-app": "kube-dns"}, max_unavailable=1, healthy=2, expected=2, desired=1,
       allowed=1)

# web
storefront = cl.deployment("web", "storefront", 9, {"cpu": "1", "memory": "2Gi"}, created=ago(d=300),
                           rs_created=ago(d=2, h=5), labels={"app": "storefront"},
                           image=f"{ECR}/web/storefront:2026.11.19-3")
run(storefront, ["a3", "a4", "a6", "d6", "d7", "d12", "d3r"])
run(storefront, ["d16"], created=today("09:49:18"))  # replaced the replica stuck on the unreachable d5
sf_interrupted = run(storefront, ["d17"], created=ago(d=1, h=2) + timedelta(minutes=3))[0]
sf_interrupted["metadata"]["deletionTimestamp"] = ts(today("09:57:45"))
sf_interrupted["metadata"]["deletionGracePeriodSeconds"] = 30
sf_unreachable = run(storefront, ["d5"])[0]
sf_unreachable["metadata"]["deletionTimestamp"] = ts(today("09:49:17"))
sf_unreachable["metadata"]["deletionGracePeriodSeconds"] = 30
for c in sf_unreachable["status"]["conditions"]:
    if c["type"] == "Ready":
        c.update(status="False", lastTransitionTime=ts(today("09:44:17")))
# the replacement replica: Karpenter nominated it to d18 seconds ago
sf_new_since = today("09:59:05")
sf_new = cl.pod(storefront, None, created=sf_new_since, pending_since=sf_new_since)
cl.pdb("web", "storefront", {"app": "storefront"}, max_unavailable=1, healthy=8, expected=9, desired=8)

canary = cl.deployment("web", "storefront-canary", 1, {"cpu": "1", "memory": "2Gi"}, created=today("09:57:55"),
                       labels={"app": "storefront", "track": "canary"},
                       image=f"{ECR}/web/storefront:2026.11.21-1",
                       node_selector={"karpenter.sh/capacity-type": "reserved"})
checkout = cl.deployment("web", "checkout", 2, {"cpu": "1500m", "memory": "3Gi"}, created=ago(d=300),
                         rs_created=ago(d=4, h=6), labels={"app": "checkout"}, image=f"{ECR}/web/checkout:2026.11.14-1")
run(checkout, ["d2", "d9"], created=ago(d=4, h=5))
cl.pdb("web", "checkout-pdb", {"app": "checkout"}, min_available=2, healthy=2, expected=2)

# shop
cart = cl.deployment("shop", "cart", 3, {"cpu": "500m", "memory": "1Gi"}, created=ago(d=250), rs_created=ago(d=6),
                     labels={"app": "cart"}, image=f"{ECR}/shop/cart:2026.11.12-2")
run(cart, ["a1", "a2", "a5"])
catalog = cl.deployment("shop", "catalog", 4, {"cpu": "750m", "memory": "1536Mi"}, created=ago(d=250),
                        rs_created=ago(d=3), labels={"app": "catalog"}, image=f"{ECR}/shop/catalog:2026.11.18-1")
run(catalog, ["a1", "a3", "d7", "d8"])

# payments
ledger = cl.statefulset("payments", "ledger", 1, {"cpu": "2", "memory": "6Gi"}, created=ago(d=180),
                        labels={"app": "ledger"}, pod_annotations={"karpenter.sh/do-not-disrupt": "true"})
cl.pod(ledger, node("d1"), created=ago(d=9, h=3), ordinal=0)
papi = cl.deployment("payments", "api", 3, {"cpu": "1", "memory": "2Gi"}, created=ago(d=180), rs_created=ago(d=1),
                     labels={"app": "payments-api"}, image=f"{ECR}/payments/api:2026.11.20-1")
run(papi, ["d1", "d6", "d11"])
settle_worker = cl.deployment("payments", "settlement-worker", 1, {"cpu": "500m", "memory": "1Gi"},
                              created=ago(d=90), rs_created=today("09:30:58"), labels={"app": "settlement-worker"},
                              image=f"{ECR}/payments/settlement-worker:2026.11.21-1",
                              node_selector={"node.example.com/clas": "general"})

# search
indexer = cl.deployment("search", "indexer", 2, {"cpu": "7500m", "memory": "12Gi"}, created=ago(d=120),
                        rs_created=ago(d=1, h=1), labels={"app": "indexer"}, image=f"{ECR}/search/indexer:2026.11.20-2")
run(indexer, ["d13"])
idx_since = today("09:46:15")
indexer_pending = cl.pod(indexer, None, created=idx_since, pending_since=idx_since)
query = cl.deployment("search", "query", 3, {"cpu": "1", "memory": "4Gi"}, created=ago(d=120), rs_created=ago(d=2),
                      labels={"app": "query"}, image=f"{ECR}/search/query:2026.11.19-1")
run(query, ["a2", "a4", "d14"])

# monitoring
prom = cl.statefulset("monitoring", "prometheus", 1, {"cpu": "2", "memory": "24Gi"}, created=ago(d=300),
                      labels={"app.kubernetes.io/name": "prometheus"})
cl.pod(prom, node("d10"), created=today("08:53:02"), ordinal=0)
grafana = cl.deployment("monitoring", "grafana", 1, {"cpu": "250m", "memory": "512Mi"}, created=ago(d=300),
                        rs_created=ago(d=30), labels={"app.kubernetes.io/name": "grafana"},
                        image="grafana/grafana:12.2.1")
run(grafana, ["d15"])

# ml
gpu_tol = [toleration("nvidia.com/gpu", "Exists", effect="NoSchedule")]
trainer = cl.statefulset("ml", "trainer", 1, {"cpu": "4", "memory": "16Gi", "nvidia.com/gpu": "1"}, created=today("09:45:50"),
                         labels={"app": "trainer"}, node_selector={"kubernetes.io/arch": "amd64"})
trainer["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"] = {"nvidia.com/gpu": "1"}
triton = cl.deployment("ml", "triton-inference", 1, {"cpu": "4", "memory": "16Gi", "nvidia.com/gpu": "1"},
                       created=ago(d=60), rs_created=ago(d=5), labels={"app": "triton"}, tolerations=gpu_tol,
                       image="nvcr.io/nvidia/tritonserver:25.10-py3",
                       limits={"nvidia.com/gpu": "1"})
run(triton, ["g1"], created=ago(d=5, h=2))
embed_batch = cl.job("ml", "embedding-backfill-20251121", {"cpu": "4", "memory": "16Gi", "nvidia.com/gpu": "1"},
                     today("09:35:00"), tolerations=gpu_tol, labels={"app": "embedding-backfill"})
finetune = cl.job("ml", "finetune-llama-20251120", {"cpu": "40", "memory": "160Gi", "nvidia.com/gpu": "4"},
                  ago(d=1, h=6), tolerations=gpu_tol, labels={"app": "finetune"})
cl.pod(finetune, node("g2"), created=ago(d=1, h=6) + timedelta(seconds=30))

# batch
batch_tol = [toleration("workload", "Equal", "batch", "NoSchedule")]
spark = cl.deployment("batch", "spark-executor", 5, {"cpu": "14", "memory": "48Gi"}, created=ago(d=100),
                      rs_created=today("02:10:00"), labels={"app": "spark-executor"}, tolerations=batch_tol,
                      node_selector={"workload-type": "batch"}, image=f"{ECR}/batch/spark:3.5.6-aws-1")
run(spark, ["b2", "b2", "b3", "b3"])
etl_cron = cl.cronjob("batch", "nightly-etl", "20 9 * * *", created=ago(d=100))
etl = cl.job("batch", "nightly-etl-29392400", {"cpu": "24", "memory": "40Gi"}, parse_ts("2026-11-20T09:20:00Z"),
             cronjob=etl_cron, node_selector={"workload-type": "batch"}, tolerations=batch_tol,
             pod_annotations={"karpenter.sh/do-not-disrupt": "true"})
cl.pod(etl, node("b1"), created=parse_ts("2026-11-20T09:20:01Z"))
report_cron = cl.cronjob("batch", "report-builder", "*/30 * * * *", created=ago(d=100))
report = cl.job("batch", "report-builder-29393850", {"cpu": "4", "memory": "8Gi"}, today("09:30:00"),
                cronjob=report_cron, node_selector={"workload-type": "batch"}, tolerations=batch_tol)

# ---------------------------------------------------------------------------
# Pending pods and Karpenter's view of them
# ---------------------------------------------------------------------------

# What Karpenter v1.14.1 counts per instance type for these pools: aws-node, ebs-csi-node,
# kube-proxy, log-shipper, node-exporter and otel-agent. The NVIDIA device plugin requires
# instance-gpu-manufacturer In [nvidia], which no type of theirs has (the AWS provider gives every
# other type DoesNotExist), so it is not counted. The counts include the pod itself.
DS_OVERHEAD = {"arm64": ("605m", "856Mi", 7), "default": ("605m", "856Mi", 7)}


def _requests(p):
    out = {}
    for c in p["spec"]["containers"]:
        for k, v in ((c.get("resources") or {}).get("requests") or {}).items():
            if k == "cpu":
                out[k] = out.get(k, 0) + parse_cpu_m(v)
            elif k in ("memory", "ephemeral-storage"):
                out[k] = out.get(k, 0) + parse_mem_ki(v)
            else:
                out[k] = out.get(k, 0) + float(v)
    return out


def _alloc(n):
    out = {}
    for k, v in n["status"]["allocatable"].items():
        if k == "cpu":
            out[k] = parse_cpu_m(v)
        elif k in ("memory", "ephemeral-storage"):
            out[k] = parse_mem_ki(v)
        else:
            out[k] = float(v)
    return out


def _tolerated(tols, t):
    from kobjects import tolerates
    return tolerates(tols, t)


def scheduler_message(pod):
    """What kube-scheduler writes for a pod that fits nowhere (filters in its default order)."""
    reasons, preempt = {}, {}
    spec = pod["spec"]
    want = _requests(pod)
    target = None
    for term in (((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
            "requiredDuringSchedulingIgnoredDuringExecution") or {}).get("nodeSelectorTerms", []):
        for mf in term.get("matchFields", []):
            target = set(mf["values"])
    for n in cl.nodes.values():
        name = n["metadata"]["name"]
        rs_ = []
        hopeless = True
        if target is not None and name not in target:
            rs_ = ["node(s) didn't satisfy plugin(s) [NodeAffinity]"]
        else:
            bad = [t for t in n["spec"].get("taints", []) if t["effect"] in ("NoSchedule", "NoExecute")
                   and not _tolerated(spec.get("tolerations", []), t)]
            if bad:
                rs_ = [f"node(s) had untolerated taint {{{bad[0]['key']}: {bad[0].get('value', '')}}}"]
            elif any(n["metadata"]["labels"].get(k) != v for k, v in (spec.get("nodeSelector") or {}).items()):
                rs_ = ["node(s) didn't match Pod's node affinity/selector"]
            else:
                used = {}
                count = 0
                for p in cl.pods:
                    if p["spec"].get("nodeName") == name and p["status"].get("phase") in ("Running", "Pending"):
                        count += 1
                        for k, v in _requests(p).items():
                            used[k] = used.get(k, 0) + v
                alloc = _alloc(n)
                for k, v in sorted(want.items()):
                    if alloc.get(k, 0) - used.get(k, 0) < v:
                        rs_.append(f"Insufficient {k}")
                if count + 1 > alloc.get("pods", 110):
                    rs_.append("Too many pods")
                hopeless = False
        for r in rs_:
            reasons[r] = reasons.get(r, 0) + 1
        key = "Preemption is not helpful for scheduling" if hopeless else "No preemption victims found for incoming pod"
        preempt[key] = preempt.get(key, 0) + 1
    total = len(cl.nodes)
    # kube-scheduler sorts the "<count> <reason>" strings themselves
    body = ", ".join(sorted(f"{c} {r}" for r, c in reasons.items()))
    pre = ", ".join(sorted(f"{c} {r}" for r, c in preempt.items()))
    return f"0/{total} nodes are available: {body}. preemption: 0/{total} nodes are available: {pre}."


def set_sched(pod):
    msg = scheduler_message(pod)
    pod["status"]["conditions"][0]["message"] = msg
    return msg


def it_segment(pool, pod_reqs, requests):
    cpu, mem, pods = DS_OVERHEAD[pool]
    res = {"cpu": fmt_cpu(parse_cpu_m(requests["cpu"]) + parse_cpu_m(cpu)),
           "memory": fmt_mem_mi(int(parse_mem_ki(requests["memory"]) // 1024 + parse_mem_ki(mem) // 1024)),
           "pods": str(pods)}
    for k, v in requests.items():
        if k not in ("cpu", "memory"):
            res[k] = v
    reqs = pool_requirement_map(cl, pool, pod_reqs)
    # The NodeClaim template also requires these two (for DaemonSets' node affinity).
    reqs["karpenter.sh/registered"] = ("In", ["true"])
    reqs["karpenter.sh/initialized"] = ("In", ["true"])
    return ("no instance type has enough resources, requirements="
            + render_requirements(reqs) + ", resources=" + resources_json(res))


SEG_GPU_TAINT = "did not tolerate taint (taint=nvidia.com/gpu=true:NoSchedule)"
SEG_BATCH_LIMIT = "all available instance types exceed limits for nodepool (NodePool=batch)"


def undefined(key):
    return f'incompatible requirements, label "{key}" does not have known values'


def mismatch(key, pod_vals, pool_vals):
    return (f"incompatible requirements, key {key}, {key} In [{' '.join(sorted(pod_vals))}] not in "
            f"{key} In [{' '.join(sorted(pool_vals))}]")


def karpenter_fs(pod, since, segments, count, modern_sched=False, sched_msg=None):
    first = since + timedelta(seconds=3)
    last = first + timedelta(minutes=5 * (count - 1), seconds=3 * (count - 1))
    cl.event(pod, "FailedScheduling", "Failed to schedule pod, " + "; ".join(segments), first, last, count=count,
             etype="Warning")
    msg = set_sched(pod) if sched_msg is None else sched_msg
    cl.event(pod, "FailedScheduling", msg, since, min(NOW - timedelta(seconds=9), last + timedelta(seconds=41)),
             count=max(2, count + 1), etype="Warning", component="default-scheduler", modern=modern_sched)


# a) ml/trainer-0: no GPU in default, gpu's taint not tolerated
t_since = today("09:46:00")
trainer_pod = cl.pod(trainer, None, created=t_since, pending_since=t_since, ordinal=0)
karpenter_fs(trainer_pod, t_since, [
    mismatch("kubernetes.io/arch", ["amd64"], ["arm64"]),
    it_segment("default", {"kubernetes.io/arch": ("In", ["amd64"])},
               {"cpu": "4", "memory": "16Gi", "nvidia.com/gpu": "1"}),
    SEG_GPU_TAINT,
    SEG_BATCH_LIMIT,
], 3)

# b) payments/settlement-worker: typo'd label key
s_since = today("09:31:00")
settle_pod = cl.pod(settle_worker, None, created=s_since, pending_since=s_since, pending_message=None)
karpenter_fs(settle_pod, s_since, [undefined("node.example.com/clas"), undefined("node.example.com/clas"),
                                   SEG_GPU_TAINT, SEG_BATCH_LIMIT], 6, modern_sched=True)

# c) batch/report-builder: batch is at its cpu limit
r_since = today("09:30:00")
report_pod = cl.pod(report, None, created=r_since, pending_since=r_since, pending_message=None)
karpenter_fs(report_pod, r_since, [undefined("workload-type"), undefined("workload-type"), SEG_GPU_TAINT,
                                   SEG_BATCH_LIMIT], 6)

# d) web/storefront-canary: asks for reserved capacity no pool offers -- 2 minutes old
c_since = today("09:58:00")
canary_pod = cl.pod(canary, None, created=c_since, pending_since=c_since, pending_message=None)
karpenter_fs(canary_pod, c_since, [
    mismatch("karpenter.sh/capacity-type", ["reserved"], ["on-demand", "spot"]),
    mismatch("karpenter.sh/capacity-type", ["reserved"], ["on-demand", "spot"]),
    SEG_GPU_TAINT, SEG_BATCH_LIMIT], 1)

# g) node-exporter's pod for the packed node
ex_msg = set_sched(exporter_pending)
cl.event(exporter_pending, "FailedScheduling", ex_msg, today("09:49:03"), today("09:59:33"), count=12,
         etype="Warning", component="default-scheduler", modern=True)

# e) storefront replica nominated to d18 (just launched): not a problem
set_sched(sf_new)
cl.event(sf_new, "Nominated", f"Pod should schedule on: nodeclaim/{claim('d18')['metadata']['name']}",
         today("09:59:09"))
cl.event(sf_new, "FailedScheduling", sf_new["status"]["conditions"][0]["message"], sf_new_since, today("09:59:36"),
         count=2, etype="Warning", component="default-scheduler")

# f) search/indexer: nominated to arm64-7tqzc at 09:46:20, whose node never registered
set_sched(indexer_pending)
# Karpenter re-nominates a pending pod on each provisioning pass (the event dedupes for 2 minutes)
cl.event(indexer_pending, "Nominated", "Pod should schedule on: nodeclaim/arm64-7tqzc", today("09:46:20"),
         today("09:58:31"), count=7)
cl.event(indexer_pending, "FailedScheduling", indexer_pending["status"]["conditions"][0]["message"], idx_since,
         today("09:58:51"), count=9, etype="Warning", component="default-scheduler")

# h) ml/embedding-backfill: Karpenter launched gpu-k8tg9 for it; the node joined but never advertised
#    nvidia.com/gpu (device plugin crash-looping), so the pod waits on a nomination that cannot be honoured
e_since = today("09:35:01")
embed_pod = cl.pod(embed_batch, None, created=e_since, pending_since=e_since)
set_sched(embed_pod)
g3_claim, g3_node = N["g3"]
cl.event(embed_pod, "Nominated", f"Pod should schedule on: nodeclaim/{g3_claim['metadata']['name']}",
         today("09:35:21"))
cl.event(embed_pod, "Nominated", f"Pod should schedule on: nodeclaim/{g3_claim['metadata']['name']}, "
         f"node/{g3_node['metadata']['name']}", today("09:36:05"), today("09:58:44"), count=12)
cl.event(embed_pod, "FailedScheduling", embed_pod["status"]["conditions"][0]["message"], e_since, today("09:59:21"),
         count=14, etype="Warning", component="default-scheduler")

# ---------------------------------------------------------------------------
# Disruption, interruption and launch events
# ---------------------------------------------------------------------------

ledger_msg = 'Pod has "karpenter.sh/do-not-disrupt" annotation (Pod=payments/ledger-0)'
for o in N["d1"]:
    cl.event(o, "DisruptionBlocked", ledger_msg, today("09:00:14"), today("09:58:21"), count=24)
pdb_msg = "Pdb prevents pod evictions (PodDisruptionBudget=[web/checkout-pdb])"
for o in N["d2"]:
    cl.event(o, "DisruptionBlocked", pdb_msg, today("09:00:14"), today("09:58:21"), count=24)
ann_msg = 'Disruption is blocked through the "karpenter.sh/do-not-disrupt" annotation'
for o in N["d4"]:
    cl.event(o, "DisruptionBlocked", ann_msg, today("09:00:14"), today("09:58:21"), count=24)
cl.event(cl.nodepools["arm64"], "DisruptionBlocked",
         "No allowed disruptions for disruption reason Drifted due to blocking budget",
         today("09:00:40"), today("09:59:40"), count=60)

# drift replacement of d3 in progress
cl.event(claim("d3r"), "DisruptionLaunching", "Launching NodeClaim: Drifted", today("09:54:10"))
cl.event(claim("d3r"), "DisruptionWaitingReadiness", "Waiting on readiness to continue disruption", today("09:54:11"))
cl.event(node("d3"), "DisruptionTerminating", "Disrupting Node: Drifted", today("09:55:20"))
cl.event(claim("d3"), "DisruptionTerminating", "Disrupting NodeClaim: Drifted", today("09:55:20"))

# consolidation chatter
cl.event(node("d10"), "Unconsolidatable", "Can't replace with a cheaper node", today("09:13:02"), today("09:58:02"),
         count=4)
cl.event(claim("d10"), "Unconsolidatable", "Can't replace with a cheaper node", today("09:13:02"), today("09:58:02"),
         count=4)
cl.event(node("g2"), "Unconsolidatable", 'NodePool "gpu" has consolidation policy WhenEmpty, but node is not empty',
         today("09:10:31"), today("09:55:31"), count=4)

# spot interruption of d17
for o in N["d17"]:
    cl.event(o, "SpotInterrupted", "Spot interruption warning was triggered", today("09:57:41"), etype="Warning")
    cl.event(o, "TerminatingOnInterruption", f"Interruption triggered termination for the {o['kind']}",
             today("09:57:42"), etype="Warning")
cl.event(sf_interrupted, "SpotInterrupted", "Pod will be evicted from the node due to a spot interruption warning",
         today("09:57:41"), etype="Warning")

# insufficient capacity (Karpenter deleted both NodeClaims right after)
ice_gpu = ("NodeClaim gpu-q8w2x event: " + truncate_event(
    "creating instance, insufficient capacity, with fleet error(s), InsufficientInstanceCapacity: We currently do "
    "not have sufficient g6.12xlarge capacity in the Availability Zone you requested (us-west-2c). Our system will "
    "be working on provisioning additional capacity. You can currently get g6.12xlarge capacity by not specifying "
    "an Availability Zone in your request or choosing us-west-2a, us-west-2b."))
cl.event(("karpenter.sh/v1", "NodeClaim", "gpu-q8w2x", None, "6f0c2a8e-3b7d-4c1e-9a55-2d1f0e7b9c31"),
         "InsufficientCapacityError", ice_gpu, today("09:58:40"), etype="Warning")
ice_arm = ("NodeClaim arm64-m4hzb event: " + truncate_event(
    "creating instance, insufficient capacity, with fleet error(s), UnfulfillableCapacity: Unable to fulfill "
    "capacity due to your request configuration. Please adjust your request and try again."))
cl.event(("karpenter.sh/v1", "NodeClaim", "arm64-m4hzb", None, "2a7d9e14-6c3b-4f85-b0e2-9d4c1a7f3e62"),
         "InsufficientCapacityError", ice_arm, today("09:58:05"), etype="Warning")

# a NodePool nobody can use
cl.event(inferentia, "NoCompatibleInstanceTypes", "NodePool requirements filtered out all compatible available instance types",
         today("09:00:12"), today("09:59:14"), count=60, etype="Warning")

# ---------------------------------------------------------------------------
# lastPodEventTime and Consolidatable, from the pods placed above
# ---------------------------------------------------------------------------

EXPLICIT_LAST = {"d4": today("09:12:40"), "d3": today("09:55:31"), "d17": today("09:57:45"), "d5": today("09:49:17")}
pool_after = {"arm64": 10, "default": 5, "gpu": 10, "batch": 2}
for key, (c, n) in N.items():
    if n is None:
        continue
    if key in EXPLICIT_LAST:
        last = EXPLICIT_LAST[key]
    else:
        times = [parse_ts(p["status"]["conditions"][-1]["lastTransitionTime"]) for p in cl.pods
                 if p["spec"].get("nodeName") == n["metadata"]["name"]
                 and not any(o["kind"] == "DaemonSet" for o in p["metadata"].get("ownerReferences", []))
                 and p["status"].get("phase") == "Running"]
        if not times:
            continue
        last = max(times)
    c["status"]["lastPodEventTime"] = ts(last)
    pool = c["metadata"]["labels"]["karpenter.sh/nodepool"]
    ready_at = parse_ts(next(x for x in c["status"]["conditions"] if x["type"] == "Launched")["lastTransitionTime"])
    when = max(last, ready_at) + timedelta(minutes=pool_after[pool])
    initialized = any(x["type"] == "Initialized" and x["status"] == "True" for x in c["status"]["conditions"])
    if when < NOW and initialized and "deletionTimestamp" not in c["metadata"]:
        c["status"]["conditions"].append(cond("Consolidatable", "True", when))

# ---------------------------------------------------------------------------
# write
# ---------------------------------------------------------------------------

objs = cl.finish()
ORDER = ["CustomResourceDefinition", "EC2NodeClass", "NodePool", "NodeClaim", "Node", "Deployment", "ReplicaSet",
         "StatefulSet", "CronJob", "Job", "DaemonSet", "Pod", "PodDisruptionBudget", "Event"]
objs.sort(key=lambda o: (ORDER.index(o["kind"]), o["metadata"].get("namespace", ""),
                         o.get("lastTimestamp") or o["metadata"]["creationTimestamp"] if o["kind"] == "Event" else "",
                         o["metadata"]["name"]))
header = (__doc__.strip() + "\n\nGenerated by demo/generate.py -- edit the generator, not this file. "
          f"Evaluate with --now {ts(NOW)}.")
dump_docs(objs, os.path.join(HERE, "cluster.yaml"), header=header)

# ---------------------------------------------------------------------------
# metrics
# ---------------------------------------------------------------------------

TYPES = ["c6i.large", "c6i.xlarge", "c6i.2xlarge", "c6i.4xlarge", "c6i.8xlarge", "c7i.xlarge", "c7i.2xlarge",
         "c6a.2xlarge", "m6i.large", "m6i.xlarge", "m6i.2xlarge", "m6i.4xlarge", "m6i.8xlarge", "m6a.xlarge",
         "m6a.2xlarge", "m7i.xlarge", "m7i.2xlarge", "r6i.xlarge", "r6i.2xlarge", "r7i.xlarge",
         "c7g.xlarge", "c7g.2xlarge", "m7g.xlarge", "m7g.2xlarge", "r7g.xlarge",
         "g5.xlarge", "g5.2xlarge", "g5.12xlarge", "g6.xlarge", "g6.2xlarge", "g6.12xlarge"]
UNAVAILABLE = {("g6.12xlarge", "on-demand", C), ("c6i.2xlarge", "spot", B), ("r7g.xlarge", "spot", C),
               ("m7g.2xlarge", "spot", C), ("g5.12xlarge", "on-demand", A)}
lines = [
    "# Excerpt of the Karpenter controller's /metrics (karpenter.karpenter.svc:8080) at 2026-11-21T10:00:00Z",
    "# HELP karpenter_cloudprovider_instance_type_offering_available Instance type offering availability, based on instance type, capacity type, and zone",
    "# TYPE karpenter_cloudprovider_instance_type_offering_available gauge",
]
for t in TYPES:
    for ct in ("on-demand", "spot"):
        for z in (A, B, C):
            v = 0 if (t, ct, z) in UNAVAILABLE else 1
            lines.append(f'karpenter_cloudprovider_instance_type_offering_available{{capacity_type="{ct}",instance_type="{t}",zone="{z}"}} {v}')
lines += [
    "# HELP karpenter_cloudprovider_instance_type_offering_price_estimate Instance type offering estimated hourly price used when making informed decisions on node cost calculation, based on instance type, capacity type, and zone.",
    "# TYPE karpenter_cloudprovider_instance_type_offering_price_estimate gauge",
]
for t in TYPES:
    for ct in ("on-demand", "spot"):
        for z in (A, B, C):
            p = instance_type(t)["od_price"] if ct == "on-demand" else spot_price(t, z)
            lines.append(f'karpenter_cloudprovider_instance_type_offering_price_estimate{{capacity_type="{ct}",instance_type="{t}",zone="{z}"}} {p}')

# The AWS provider's instance-type series: vCPUs and EC2 memory (kelp's catalogue source).
lines += ["# TYPE karpenter_cloudprovider_instance_type_cpu_cores gauge"]
for t in TYPES:
    lines.append(f'karpenter_cloudprovider_instance_type_cpu_cores{{instance_type="{t}"}} {instance_type(t)["cpu"]}')
lines += ["# TYPE karpenter_cloudprovider_instance_type_memory_bytes gauge"]
for t in TYPES:
    lines.append(f'karpenter_cloudprovider_instance_type_memory_bytes{{instance_type="{t}"}} {instance_type(t)["mem_gib"] * 2**30}')

np_objs = {o["metadata"]["name"]: o for o in objs if o["kind"] == "NodePool"}


def qval(k, v):
    if k == "cpu":
        x = parse_cpu_m(v) / 1000
    elif k in ("memory", "ephemeral-storage"):
        x = int(parse_mem_ki(v) * 1024)
    else:
        x = float(v)
    return int(x) if x == int(x) else x


lines += ["# HELP karpenter_nodepools_limit Limits specified on the nodepool that restrict the quantity of resources provisioned. Labeled by nodepool name and resource type.",
          "# TYPE karpenter_nodepools_limit gauge"]
for name in sorted(np_objs):
    for k, v in sorted((np_objs[name]["spec"].get("limits") or {}).items()):
        lines.append(f'karpenter_nodepools_limit{{nodepool="{name}",resource_type="{k}"}} {qval(k, v)}')
lines += ["# HELP karpenter_nodepools_usage The amount of resources that have been provisioned for a nodepool. Labeled by nodepool name and resource type.",
          "# TYPE karpenter_nodepools_usage gauge"]
for name in sorted(np_objs):
    for k, v in sorted(np_objs[name]["status"]["resources"].items()):
        lines.append(f'karpenter_nodepools_usage{{nodepool="{name}",resource_type="{k}"}} {qval(k, v)}')
lines += ["# HELP karpenter_nodepools_allowed_disruptions The number of nodes for a given NodePool that can be concurrently disrupting at a point in time. Labeled by NodePool. Note that allowed disruptions can change very rapidly, as new nodes may be created and others may be deleted at any point.",
          "# TYPE karpenter_nodepools_allowed_disruptions gauge"]
ALLOWED = {("arm64", "drifted"): 0, ("arm64", "empty"): 2, ("arm64", "underutilized"): 2,
           ("batch", "drifted"): 0, ("batch", "empty"): 0, ("batch", "underutilized"): 0,
           ("default", "drifted"): 2, ("default", "empty"): 2, ("default", "underutilized"): 2,
           ("gpu", "drifted"): 1, ("gpu", "empty"): 1, ("gpu", "underutilized"): 1}
for (pool, reason), v in sorted(ALLOWED.items()):
    lines.append(f'karpenter_nodepools_allowed_disruptions{{nodepool="{pool}",reason="{reason}"}} {v}')
lines += ["# HELP karpenter_nodeclaims_disrupted_total Number of nodeclaims disrupted in total by Karpenter. Labeled by reason the nodeclaim was disrupted and the owning nodepool.",
          "# TYPE karpenter_nodeclaims_disrupted_total counter",
          'karpenter_nodeclaims_disrupted_total{capacity_type="on-demand",nodepool="default",reason="drifted"} 6',
          'karpenter_nodeclaims_disrupted_total{capacity_type="spot",nodepool="default",reason="drifted"} 6',
          'karpenter_nodeclaims_disrupted_total{capacity_type="spot",nodepool="arm64",reason="drifted"} 3',
          'karpenter_nodeclaims_disrupted_total{capacity_type="spot",nodepool="default",reason="spot_interrupted"} 1',
          'karpenter_nodeclaims_disrupted_total{capacity_type="spot",nodepool="batch",reason="expired"} 1',
          'karpenter_nodeclaims_disrupted_total{capacity_type="on-demand",nodepool="gpu",reason="insufficient_capacity"} 1',
          'karpenter_nodeclaims_disrupted_total{capacity_type="spot",nodepool="arm64",reason="insufficient_capacity"} 1',
          "# HELP karpenter_cluster_state_synced Returns 1 if cluster state is synced and 0 otherwise. Synced checks that nodeclaims and nodes that are stored in the APIServer have the same representation as Karpenter's cluster state",
          "# TYPE karpenter_cluster_state_synced gauge",
          "karpenter_cluster_state_synced 1",
          "# HELP karpenter_cluster_state_node_count Current count of nodes in cluster state",
          "# TYPE karpenter_cluster_state_node_count gauge",
          f"karpenter_cluster_state_node_count {sum(1 for o in objs if o['kind'] == 'Node')}",
          "# HELP karpenter_scheduler_unschedulable_pods_count The number of unschedulable Pods.",
          "# TYPE karpenter_scheduler_unschedulable_pods_count gauge",
          'karpenter_scheduler_unschedulable_pods_count{controller="provisioner"} 4']
lines.insert(1, "# (prices in USD/hour; a 0 in offering_available is an offering in Karpenter's insufficient-capacity cache)")
with open(os.path.join(HERE, "karpenter-metrics.txt"), "w") as f:
    f.write("\n".join(lines) + "\n")

kinds = {}
for o in objs:
    kinds[o["kind"]] = kinds.get(o["kind"], 0) + 1
print(f"demo/cluster.yaml: {len(objs)} objects", dict(sorted(kinds.items())))
