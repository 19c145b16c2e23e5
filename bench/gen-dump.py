#!/usr/bin/env python3
"""Generate a large, realistic Karpenter cluster dump for kelp's benchmarks.

The output is ONE JSON `v1/List` in the shape `kubectl get ... -o json` writes (items
carry apiVersion and kind). It is compact JSON by default; `--indent 4` adds kubectl's own
whitespace, which makes the same cluster about 2.6x bigger on disk. Everything is
deterministic for a given --seed, and every timestamp is relative to the fixed clock
2026-11-21T10:00:00Z, so `kelp doctor --now 2026-11-21T10:00:00Z` gives the same
findings on every run.

What it writes (defaults in brackets):
  NodePools [20]      karpenter.sh/v1, requirements, some taints and startupTaints, limits
                      (some used up, some nearly), budgets, status.resources/nodes,
                      conditions (one pool NodeClassNotFound), half with last-applied
  EC2NodeClasses      karpenter.k8s.aws/v1, with a resolved status
  NodeClaims          one per node: Launched/Registered/Initialized/Ready, ~3% Drifted
  Nodes [5000]        well-known and Karpenter labels, capacity/allocatable, conditions,
                      images, managedFields, a few NotReady
  Pods [150000]       DaemonSet pods on every node; ReplicaSet pods with 1-3 containers
                      (env, volumeMounts, probes, requests/limits; ~6 KB of JSON each),
                      5% with managedFields; ~2% Pending with PodScheduled=False/Unschedulable
                      (GPU, huge, zone, arch, typo'd label, affinity, team and batch pods)
  DaemonSets, PDBs    with kubectl's last-applied-configuration annotation
  Events [50000]      core/v1: Karpenter FailedScheduling (v1.5+ flat format) for most
                      pending pods, Nominated, DisruptionBlocked, kube-scheduler
                      FailedScheduling, and ordinary kubelet / scheduler events

Python 3 standard library only.

  bench/gen-dump.py --nodes 5000 --pods 150000 --events 50000 --nodepools 20 --seed 1 -o FILE
"""

import argparse
import datetime as dt
import json
import random
import sys
import uuid
import zlib

NOW = dt.datetime(2026, 11, 21, 10, 0, 0, tzinfo=dt.timezone.utc)
REGION = "us-west-2"
ZONES = ["us-west-2a", "us-west-2b", "us-west-2c", "us-west-2d"]
ZONE_IDS = {"us-west-2a": "usw2-az1", "us-west-2b": "usw2-az2", "us-west-2c": "usw2-az3", "us-west-2d": "usw2-az4"}
KUBELET = "v1.34.1-eks-113cf36"

# (family, category, generation, arch, {size: (vcpu, GiB)}), gpus
SIZES = {"large": (2, 1), "xlarge": (4, 2), "2xlarge": (8, 4), "4xlarge": (16, 8), "8xlarge": (32, 16), "12xlarge": (48, 24)}
FAMILIES = [
    ("m5", "m", 5, "amd64", 4, 0), ("m6i", "m", 6, "amd64", 4, 0), ("m7i", "m", 7, "amd64", 4, 0),
    ("c5", "c", 5, "amd64", 2, 0), ("c6i", "c", 6, "amd64", 2, 0), ("c7i", "c", 7, "amd64", 2, 0),
    ("r5", "r", 5, "amd64", 8, 0), ("r6i", "r", 6, "amd64", 8, 0),
    ("m7g", "m", 7, "arm64", 4, 0), ("c7g", "c", 7, "arm64", 2, 0), ("r7g", "r", 7, "arm64", 8, 0),
    ("g5", "g", 5, "amd64", 4, 1),
]
NAMESPACES = ["shop", "checkout", "payments", "search", "catalog", "recs", "ml", "data", "ingest", "auth",
              "api", "web", "mobile-bff", "notifications", "billing", "ledger", "analytics", "reporting",
              "kafka", "redis", "observability", "logging", "platform", "ci", "batch", "etl", "media",
              "images", "geo", "pricing", "inventory", "orders", "fulfillment", "support", "crm", "ads",
              "growth", "experiments", "feature-flags", "gateway"]
APP_WORDS = ["api", "worker", "frontend", "consumer", "scheduler", "indexer", "gateway", "cache", "sync",
             "ingester", "renderer", "exporter", "processor", "router", "aggregator", "validator"]
REGISTRY = "123456789012.dkr.ecr.us-west-2.amazonaws.com"


def ts(t):
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def ago(**kw):
    return NOW - dt.timedelta(**kw)


class Gen:
    def __init__(self, args):
        self.a = args
        self.r = random.Random(args.seed)
        self.rv = 1_000_000
        self.used = set()

    def unique(self, make):
        """A name `make()` returns that was not handed out before (names must not collide)."""
        while True:
            name = make()
            if name not in self.used:
                self.used.add(name)
                return name

    # ------------------------------------------------------------ helpers
    def uid(self):
        return str(uuid.UUID(int=self.r.getrandbits(128), version=4))

    def resource_version(self):
        self.rv += self.r.randint(1, 40)
        return str(self.rv)

    def rand_str(self, n, alphabet="bcdfghjklmnpqrstvwxz2456789"):
        return "".join(self.r.choice(alphabet) for _ in range(n))

    def hexs(self, n):
        return "%0*x" % (n, self.r.getrandbits(4 * n))

    def when(self, max_minutes, min_minutes=0):
        return ago(minutes=self.r.uniform(min_minutes, max_minutes))

    # ------------------------------------------------------------ catalogue
    def instance_types(self, pool):
        out = []
        for fam, cat, gen, arch, _mem, gpus in FAMILIES:
            if cat not in pool["categories"] or arch != pool["arch"]:
                continue
            for size in SIZES:
                out.append((f"{fam}.{size}", fam, cat, gen, arch, size, gpus))
        return out

    def itype_resources(self, fam, size):
        vcpu = SIZES[size][0]
        mem_per = next(f[4] for f in FAMILIES if f[0] == fam)
        mem_gib = vcpu * mem_per
        return vcpu, mem_gib

    # ------------------------------------------------------------ NodePools
    def make_pools(self):
        base = [
            # name, arch, categories, capacity types, taints, weight, zones
            ("default", "amd64", ["c", "m", "r"], ["spot", "on-demand"], [], None, ZONES),
            ("on-demand", "amd64", ["c", "m", "r"], ["on-demand"], [], 10, ZONES),
            ("spot-general", "amd64", ["c", "m"], ["spot"], [], 20, ZONES),
            ("arm64", "arm64", ["c", "m", "r"], ["spot", "on-demand"], [], 5, ZONES),
            ("gpu", "amd64", ["g"], ["on-demand"], [{"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}], 50, ZONES[:2]),
            ("batch", "amd64", ["c", "m"], ["spot"], [{"key": "workload", "value": "batch", "effect": "NoSchedule"}], None, ZONES),
            ("memory", "amd64", ["r"], ["on-demand"], [{"key": "memory-optimized", "effect": "NoSchedule"}], 15, ZONES[:3]),
            ("system", "amd64", ["m"], ["on-demand"], [{"key": "CriticalAddonsOnly", "value": "true", "effect": "NoSchedule"}], 100, ZONES),
        ]
        pools = []
        for i in range(self.a.nodepools):
            if i < len(base):
                name, arch, cats, cts, taints, weight, zones = base[i]
            else:
                name = f"team-{NAMESPACES[i % len(NAMESPACES)]}-{i}"
                arch = "arm64" if i % 5 == 0 else "amd64"
                cats = [["c", "m"], ["m", "r"], ["c", "m", "r"]][i % 3]
                cts = [["spot", "on-demand"], ["on-demand"], ["spot"]][i % 3]
                taints = [{"key": "dedicated", "value": name, "effect": "NoSchedule"}] if i % 2 == 0 else []
                weight = [None, 1, 30, 10][i % 4]
                zones = ZONES if i % 4 else ZONES[1:]
            pools.append({
                "name": name, "arch": arch, "categories": cats, "capacity_types": cts, "taints": taints,
                "weight": weight, "zones": zones, "index": i,
                "nodeclass": {"arm64": "bottlerocket-arm"}.get(arch, "gpu" if "g" in cats else "default"),
                "team": name[5:] if name.startswith("team-") else None,
            })
        return pools

    def pool_requirements(self, p):
        reqs = [
            {"key": "kubernetes.io/arch", "operator": "In", "values": [p["arch"]]},
            {"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]},
            {"key": "karpenter.sh/capacity-type", "operator": "In", "values": p["capacity_types"]},
            {"key": "karpenter.k8s.aws/instance-category", "operator": "In", "values": p["categories"]},
            {"key": "karpenter.k8s.aws/instance-generation", "operator": "Gt", "values": ["4"]},
            {"key": "topology.kubernetes.io/zone", "operator": "In", "values": p["zones"]},
        ]
        if p["index"] % 3 == 1:
            reqs.append({"key": "karpenter.k8s.aws/instance-size", "operator": "NotIn", "values": ["nano", "micro", "small", "medium"]})
        if p["index"] % 4 == 2:
            reqs[3]["minValues"] = 2
        return reqs

    def nodepool(self, p, usage):
        i = p["index"]
        created = ago(days=200 - i)
        labels = {"team": p["team"]} if p["team"] else {}
        if p["name"] == "batch":
            labels["workload"] = "batch"
        cpu_used, mem_used, nodes = usage
        limits = {"cpu": str(max(1000, cpu_used * 3)), "memory": f"{max(4000, mem_used * 3)}Gi"}
        # A few pools run at (or near) their limit, so pending pods get limit verdicts.
        if i % 7 == 3:
            limits = {"cpu": str(cpu_used), "memory": f"{mem_used * 2}Gi"}
        elif i % 7 == 5:
            limits = {"cpu": str(int(cpu_used / 0.93) + 1), "memory": f"{mem_used * 2}Gi"}
        if i % 9 == 4:
            limits["nodes"] = str(nodes + 2)
        budgets = [{"nodes": "10%"}]
        if i % 4 == 0:
            budgets.append({"nodes": "0", "schedule": "0 9 * * mon-fri", "duration": "8h", "reasons": ["Drifted", "Underutilized"]})
        if i % 6 == 5:
            budgets = [{"nodes": "0"}]
        ready = not (i == 11 or (self.a.nodepools <= 11 and i == self.a.nodepools - 1 and i > 3))
        nc_cond = ({"type": "NodeClassReady", "status": "True", "reason": "NodeClassReady", "message": ""}
                   if ready else
                   {"type": "NodeClassReady", "status": "False", "reason": "NodeClassNotFound",
                    "message": "NodeClass not found on cluster"})
        conds = [
            {"type": "ValidationSucceeded", "status": "True", "reason": "ValidationSucceeded", "message": ""},
            nc_cond,
            {"type": "NodeRegistrationHealthy", "status": "True", "reason": "NodeRegistrationHealthy", "message": ""},
            {"type": "Ready", "status": "True" if ready else "False",
             "reason": "Ready" if ready else "UnhealthyDependents",
             "message": "" if ready else "NodeClassReady=False"},
        ]
        for c in conds:
            c["lastTransitionTime"] = ts(created + dt.timedelta(minutes=1))
            c["observedGeneration"] = 3
        spec = {
            "disruption": {
                "budgets": budgets,
                "consolidateAfter": ["0s", "30s", "5m", "1h"][i % 4],
                "consolidationPolicy": "WhenEmpty" if p["name"] in ("gpu", "system") else "WhenEmptyOrUnderutilized",
            },
            "limits": limits,
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "expireAfter": ["720h", "336h", "Never", "2160h"][i % 4],
                    "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass",
                                     "name": p["nodeclass"] if ready else "deleted-class"},
                    "requirements": self.pool_requirements(p),
                },
            },
        }
        if p["taints"]:
            spec["template"]["spec"]["taints"] = p["taints"]
        if i % 5 == 1:
            spec["template"]["spec"]["startupTaints"] = [{"key": "node.cilium.io/agent-not-ready", "value": "true", "effect": "NoExecute"}]
        if i % 3 == 0:
            spec["template"]["spec"]["terminationGracePeriod"] = "48h"
        if p["weight"] is not None:
            spec["weight"] = p["weight"]
        meta = {
            "annotations": {
                "karpenter.sh/nodepool-hash": spec_hash("nodepool", p["name"]),
                "karpenter.sh/nodepool-hash-version": "v3",
            },
            "creationTimestamp": ts(created),
            "generation": 3,
            "name": p["name"],
            "resourceVersion": self.resource_version(),
            "uid": p["uid"],
        }
        if i % 2 == 0:
            meta["annotations"]["kubectl.kubernetes.io/last-applied-configuration"] = json.dumps(
                {"apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"annotations": {}, "name": p["name"]}, "spec": spec},
                separators=(",", ":")) + "\n"
        return {
            "apiVersion": "karpenter.sh/v1",
            "kind": "NodePool",
            "metadata": meta,
            "spec": spec,
            "status": {
                "conditions": conds,
                "nodes": nodes,
                "resources": {"cpu": str(cpu_used), "ephemeral-storage": f"{nodes * 100}Gi",
                              "memory": f"{mem_used}Gi", "nodes": str(nodes), "pods": str(nodes * 58)},
            },
        }

    def nodeclass(self, name):
        subnets = [{"id": f"subnet-0{self.hexs(16)}", "zone": z, "zoneID": ZONE_IDS[z]} for z in ZONES]
        family = "bottlerocket" if "bottlerocket" in name else "al2023"
        alias = f"{family}@v1.48.0" if family == "bottlerocket" else "al2023@v20261101"
        amis = [{"id": f"ami-0{self.hexs(16)}", "name": f"{family}-{arch}-{v}",
                 "requirements": [{"key": "kubernetes.io/arch", "operator": "In", "values": [arch]}]}
                for arch in ("amd64", "arm64") for v in ("v20261101",)]
        conds = [{"type": t, "status": "True", "reason": t, "message": "", "lastTransitionTime": ts(ago(days=120)),
                  "observedGeneration": 2}
                 for t in ("AMIsReady", "SubnetsReady", "SecurityGroupsReady", "InstanceProfileReady",
                           "ValidationSucceeded", "CapacityReservationsReady", "Ready")]
        return {
            "apiVersion": "karpenter.k8s.aws/v1",
            "kind": "EC2NodeClass",
            "metadata": {
                "annotations": {"karpenter.k8s.aws/ec2nodeclass-hash": spec_hash("ec2nodeclass", name),
                                "karpenter.k8s.aws/ec2nodeclass-hash-version": "v4"},
                "creationTimestamp": ts(ago(days=300)),
                "finalizers": ["karpenter.k8s.aws/termination"],
                "generation": 2, "name": name, "resourceVersion": self.resource_version(), "uid": self.uid(),
            },
            "spec": {
                "amiSelectorTerms": [{"alias": alias}],
                "blockDeviceMappings": [{"deviceName": "/dev/xvda", "ebs": {"encrypted": True, "volumeSize": "100Gi", "volumeType": "gp3", "deleteOnTermination": True}}],
                "metadataOptions": {"httpEndpoint": "enabled", "httpProtocolIPv6": "disabled", "httpPutResponseHopLimit": 1, "httpTokens": "required"},
                "role": "KarpenterNodeRole-prod",
                "securityGroupSelectorTerms": [{"tags": {"karpenter.sh/discovery": "prod"}}],
                "subnetSelectorTerms": [{"tags": {"karpenter.sh/discovery": "prod"}}],
                "tags": {"team": "platform", "cost-center": "1234"},
            },
            "status": {
                "amis": amis,
                "conditions": conds,
                "instanceProfile": f"prod_{self.r.getrandbits(64)}",
                "securityGroups": [{"id": f"sg-0{self.hexs(16)}", "name": "eks-cluster-sg-prod"}],
                "subnets": subnets,
            },
        }

    # ------------------------------------------------------------ nodes and claims
    def plan_nodes(self, pools):
        usable = [p for p in pools if p["name"] != "gpu"] or pools
        weights = [8 if p["name"] in ("default", "spot-general") else (1 if p["name"] == "gpu" else 3) for p in usable]
        nodes = []
        for n in range(self.a.nodes):
            p = self.r.choices(usable, weights)[0] if n >= len(pools) else pools[n]
            itypes = self.instance_types(p) or self.instance_types({"categories": ["m"], "arch": "amd64"})
            it = self.r.choice(itypes[: max(1, len(itypes) - 1)])
            zone = self.r.choice(p["zones"])
            ct = self.r.choice(p["capacity_types"])
            ip = self.unique(lambda: f"10.{self.r.randint(0, 63)}.{self.r.randint(0, 255)}.{self.r.randint(1, 254)}")
            name = f"ip-{ip.replace('.', '-')}.{REGION}.compute.internal"
            claim = self.unique(lambda: f"{p['name']}-{self.rand_str(5)}")
            created = ago(minutes=self.r.uniform(15, 60 * 24 * 20))
            nodes.append({
                "name": name, "claim": claim, "pool": p, "it": it, "zone": zone, "ct": ct, "ip": ip,
                "created": created, "instance": "i-0" + self.hexs(16), "uid": self.uid(), "claim_uid": self.uid(),
                "drifted": self.r.random() < 0.03, "not_ready": self.r.random() < 0.002,
                "do_not_disrupt": self.r.random() < 0.01,
            })
        return nodes

    def node_labels(self, n):
        itname, fam, cat, gen, arch, size, gpus = n["it"]
        vcpu, mem = self.itype_resources(fam, size)
        p = n["pool"]
        labels = {
            "beta.kubernetes.io/arch": arch,
            "beta.kubernetes.io/instance-type": itname,
            "beta.kubernetes.io/os": "linux",
            "failure-domain.beta.kubernetes.io/region": REGION,
            "failure-domain.beta.kubernetes.io/zone": n["zone"],
            "k8s.io/cloud-provider-aws": "a3d1f0c9b2e84f6d9c0e1b2a3f4d5e6c",
            "karpenter.k8s.aws/ec2nodeclass": p["nodeclass"],
            "karpenter.k8s.aws/instance-category": cat,
            "karpenter.k8s.aws/instance-cpu": str(vcpu),
            "karpenter.k8s.aws/instance-cpu-manufacturer": "aws" if arch == "arm64" else "intel",
            "karpenter.k8s.aws/instance-ebs-bandwidth": str(4750 * max(1, vcpu // 4)),
            "karpenter.k8s.aws/instance-encryption-in-transit-supported": "true",
            "karpenter.k8s.aws/instance-family": fam,
            "karpenter.k8s.aws/instance-generation": str(gen),
            "karpenter.k8s.aws/instance-hypervisor": "nitro",
            "karpenter.k8s.aws/instance-memory": str(mem * 1024),
            "karpenter.k8s.aws/instance-network-bandwidth": str(750 * vcpu),
            "karpenter.k8s.aws/instance-size": size,
            "karpenter.sh/capacity-type": n["ct"],
            "karpenter.sh/initialized": "true",
            "karpenter.sh/nodepool": p["name"],
            "karpenter.sh/registered": "true",
            "kubernetes.io/arch": arch,
            "kubernetes.io/hostname": n["name"],
            "kubernetes.io/os": "linux",
            "node.kubernetes.io/instance-type": itname,
            "topology.ebs.csi.aws.com/zone": n["zone"],
            "topology.k8s.aws/zone-id": ZONE_IDS[n["zone"]],
            "topology.kubernetes.io/region": REGION,
            "topology.kubernetes.io/zone": n["zone"],
        }
        if gpus:
            labels["karpenter.k8s.aws/instance-gpu-count"] = str(gpus)
            labels["karpenter.k8s.aws/instance-gpu-manufacturer"] = "nvidia"
            labels["karpenter.k8s.aws/instance-gpu-name"] = "a10g"
        if p["team"]:
            labels["team"] = p["team"]
        if p["name"] == "batch":
            labels["workload"] = "batch"
        return labels, vcpu, mem, gpus

    def capacity(self, vcpu, mem, gpus):
        cap = {"cpu": str(vcpu), "ephemeral-storage": "104845292Ki", "hugepages-1Gi": "0", "hugepages-2Mi": "0",
               "memory": f"{mem * 1024 * 1024 - 500000}Ki", "pods": str(min(110, 8 + vcpu * 7))}
        alloc = dict(cap)
        alloc["cpu"] = f"{vcpu * 1000 - 70 - vcpu * 10}m"
        alloc["memory"] = f"{mem * 1024 * 1024 - 500000 - 900000}Ki"
        alloc["ephemeral-storage"] = "95551679124"
        if gpus:
            cap["nvidia.com/gpu"] = alloc["nvidia.com/gpu"] = str(gpus)
        return cap, alloc

    @staticmethod
    def add_last_applied(obj):
        """The annotation `kubectl apply` leaves: the whole applied manifest, as one line."""
        meta = obj["metadata"]
        applied = {"apiVersion": obj["apiVersion"], "kind": obj["kind"],
                   "metadata": {k: meta[k] for k in ("labels", "name", "namespace") if k in meta}, "spec": obj["spec"]}
        meta.setdefault("annotations", {})["kubectl.kubernetes.io/last-applied-configuration"] = json.dumps(applied, separators=(",", ":")) + "\n"
        return obj

    def managed_fields(self, manager, t, fields):
        return {"apiVersion": "v1", "fieldsType": "FieldsV1", "fieldsV1": fields, "manager": manager,
                "operation": "Update", "time": ts(t)}

    def node(self, n):
        labels, vcpu, mem, gpus = self.node_labels(n)
        cap, alloc = self.capacity(vcpu, mem, gpus)
        created = n["created"]
        hb = ago(seconds=self.r.randint(1, 50))
        ready = {"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "kubelet is posting ready status",
                 "lastHeartbeatTime": ts(hb), "lastTransitionTime": ts(created + dt.timedelta(seconds=40))}
        if n["not_ready"]:
            ready = {"type": "Ready", "status": "Unknown", "reason": "NodeStatusUnknown",
                     "message": "Kubelet stopped posting node status.", "lastHeartbeatTime": ts(ago(minutes=25)),
                     "lastTransitionTime": ts(ago(minutes=24))}
        conds = [
            {"type": t, "status": "False", "reason": r, "message": m, "lastHeartbeatTime": ts(hb),
             "lastTransitionTime": ts(created + dt.timedelta(seconds=30))}
            for t, r, m in (("MemoryPressure", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
                            ("DiskPressure", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
                            ("PIDPressure", "KubeletHasSufficientPID", "kubelet has sufficient PID available"))
        ] + [ready]
        images = []
        for k in range(self.r.randint(12, 22)):
            repo = f"{REGISTRY}/{self.r.choice(NAMESPACES)}/{self.r.choice(APP_WORDS)}"
            digest = "sha256:" + self.hexs(64)
            images.append({"names": [f"{repo}@{digest}", f"{repo}:v{self.r.randint(1, 9)}.{self.r.randint(0, 40)}.{self.r.randint(0, 9)}"],
                           "sizeBytes": self.r.randint(20_000_000, 900_000_000)})
        spec = {"providerID": f"aws:///{n['zone']}/{n['instance']}"}
        taints = list(n["pool"]["taints"])
        if n["drifted"] and self.r.random() < 0.5:
            taints.append({"key": "karpenter.sh/disrupted", "effect": "NoSchedule"})
        if n["not_ready"]:
            taints.append({"key": "node.kubernetes.io/unreachable", "effect": "NoSchedule", "timeAdded": ts(ago(minutes=24))})
            taints.append({"key": "node.kubernetes.io/unreachable", "effect": "NoExecute", "timeAdded": ts(ago(minutes=23))})
        if taints:
            spec["taints"] = taints
        annotations = {
            "alpha.kubernetes.io/provided-node-ip": n["ip"],
            "csi.volume.kubernetes.io/nodeid": json.dumps({"ebs.csi.aws.com": n["instance"], "efs.csi.aws.com": n["instance"]}, separators=(",", ":")),
            "karpenter.k8s.aws/ec2nodeclass-hash": spec_hash("ec2nodeclass", n["pool"]["nodeclass"]),
            "karpenter.k8s.aws/ec2nodeclass-hash-version": "v4",
            "karpenter.sh/nodepool-hash": spec_hash("nodepool", n["pool"]["name"]),
            "karpenter.sh/nodepool-hash-version": "v3",
            "node.alpha.kubernetes.io/ttl": "0",
            "volumes.kubernetes.io/controller-managed-attach-detach": "true",
        }
        if n["do_not_disrupt"]:
            annotations["karpenter.sh/do-not-disrupt"] = "true"
        mf = [
            self.managed_fields("karpenter", created, {"f:metadata": {"f:labels": {f"f:{k}": {} for k in list(labels)[:12]},
                                                                      "f:ownerReferences": {f"k:{{\"uid\":\"{n['claim_uid']}\"}}": {}}},
                                                       "f:spec": {"f:taints": {}}}),
            self.managed_fields("kubelet", created + dt.timedelta(seconds=20), {"f:metadata": {"f:annotations": {f"f:{k}": {} for k in annotations}}}),
            self.managed_fields("kubelet", hb, {"f:status": {"f:conditions": {f"k:{{\"type\":\"{c['type']}\"}}": {"f:lastHeartbeatTime": {}} for c in conds},
                                                              "f:images": {}, "f:nodeInfo": {"f:bootID": {}}}}),
        ]
        return {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {
                "annotations": annotations,
                "creationTimestamp": ts(created),
                "finalizers": ["karpenter.sh/termination"],
                "labels": labels,
                "managedFields": mf,
                "name": n["name"],
                "ownerReferences": [{"apiVersion": "karpenter.sh/v1", "blockOwnerDeletion": True, "kind": "NodeClaim",
                                     "name": n["claim"], "uid": n["claim_uid"]}],
                "resourceVersion": self.resource_version(),
                "uid": n["uid"],
            },
            "spec": spec,
            "status": {
                "addresses": [{"address": n["ip"], "type": "InternalIP"},
                              {"address": n["name"], "type": "InternalDNS"},
                              {"address": n["name"], "type": "Hostname"}],
                "allocatable": alloc,
                "capacity": cap,
                "conditions": conds,
                "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
                "images": images,
                "nodeInfo": {"architecture": n["it"][4], "bootID": self.uid(), "containerRuntimeVersion": "containerd://2.1.4",
                             "kernelVersion": "6.12.40-64.114.amzn2023.x86_64", "kubeProxyVersion": "",
                             "kubeletVersion": KUBELET, "machineID": self.hexs(32), "operatingSystem": "linux",
                             "osImage": "Amazon Linux 2023.9.20261101", "systemUUID": self.uid()},
            },
        }

    def nodeclaim(self, n):
        labels, vcpu, mem, gpus = self.node_labels(n)
        cap, alloc = self.capacity(vcpu, mem, gpus)
        created = n["created"] - dt.timedelta(seconds=50)
        p = n["pool"]
        t = lambda s: ts(created + dt.timedelta(seconds=s))
        conds = [
            {"type": "Launched", "status": "True", "reason": "Launched", "message": "", "lastTransitionTime": t(5)},
            {"type": "Registered", "status": "True", "reason": "Registered", "message": "", "lastTransitionTime": t(45)},
            {"type": "Initialized", "status": "True", "reason": "Initialized", "message": "", "lastTransitionTime": t(70)},
            {"type": "Consolidatable", "status": "True" if self.r.random() < 0.2 else "False",
             "reason": "Consolidatable", "message": "", "lastTransitionTime": t(600)},
            {"type": "Ready", "status": "True", "reason": "Ready", "message": "", "lastTransitionTime": t(70)},
        ]
        if n["drifted"]:
            conds.append({"type": "Drifted", "status": "True", "reason": self.r.choice(["NodePoolDrifted", "AMIDrift", "RequirementsDrifted"]),
                          "message": "", "lastTransitionTime": ts(ago(minutes=self.r.uniform(20, 600)))})
        for c in conds:
            c["observedGeneration"] = 1
        reqs = [r for r in self.pool_requirements(p)]
        reqs += [
            {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": [n["it"][0]]},
            {"key": "karpenter.sh/nodepool", "operator": "In", "values": [p["name"]]},
            {"key": "karpenter.k8s.aws/ec2nodeclass", "operator": "In", "values": [p["nodeclass"]]},
        ]
        spec = {
            "expireAfter": ["720h", "336h", "Never", "2160h"][p["index"] % 4],
            "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": p["nodeclass"]},
            "requirements": reqs,
            "resources": {"requests": {"cpu": f"{self.r.randint(300, vcpu * 900)}m", "memory": f"{self.r.randint(300, mem * 700)}Mi", "pods": str(self.r.randint(5, 30))}},
        }
        if p["taints"]:
            spec["taints"] = p["taints"]
        return {
            "apiVersion": "karpenter.sh/v1",
            "kind": "NodeClaim",
            "metadata": {
                "annotations": {"compatibility.karpenter.k8s.aws/cluster-name-tagged": "true",
                                "karpenter.k8s.aws/ec2nodeclass-hash": spec_hash("ec2nodeclass", p["nodeclass"]),
                                "karpenter.k8s.aws/ec2nodeclass-hash-version": "v4",
                                "karpenter.k8s.aws/tagged": "true",
                                "karpenter.sh/nodepool-hash": spec_hash("nodepool", p["name"]),
                                "karpenter.sh/nodepool-hash-version": "v3"},
                "creationTimestamp": ts(created),
                "finalizers": ["karpenter.sh/termination"],
                "generateName": f"{p['name']}-",
                "generation": 1,
                "labels": {k: v for k, v in labels.items() if k.startswith(("karpenter", "kubernetes.io/arch", "kubernetes.io/os", "node.kubernetes.io", "topology"))},
                "name": n["claim"],
                "ownerReferences": [{"apiVersion": "karpenter.sh/v1", "blockOwnerDeletion": True, "kind": "NodePool",
                                     "name": p["name"], "uid": p["uid"]}],
                "resourceVersion": self.resource_version(),
                "uid": n["claim_uid"],
            },
            "spec": spec,
            "status": {
                "allocatable": alloc, "capacity": cap, "conditions": conds,
                "imageID": f"ami-0{self.hexs(16)}",
                "lastPodEventTime": ts(ago(minutes=self.r.uniform(1, 300))),
                "nodeName": n["name"],
                "providerID": f"aws:///{n['zone']}/{n['instance']}",
            },
        }

    # ------------------------------------------------------------ workloads
    def make_deployments(self, n):
        deps = []
        for k in range(n):
            ns = NAMESPACES[k % len(NAMESPACES)]
            name = f"{self.r.choice(APP_WORDS)}-{self.r.choice(APP_WORDS)}-{k}"
            deps.append({"ns": ns, "name": name, "rs": f"{name}-{self.rand_str(10)}", "rs_uid": self.uid(),
                         "containers": self.r.choice([1, 1, 1, 1, 2, 2, 3]), "init": self.r.random() < 0.3,
                         "cpu": self.r.choice(["50m", "100m", "250m", "500m", "1", "2"]),
                         "mem": self.r.choice(["64Mi", "128Mi", "256Mi", "512Mi", "1Gi", "2Gi", "4Gi"]),
                         "team": ns, "pdb": self.r.random() < 0.15, "image_tag": f"v{self.r.randint(1, 5)}.{self.r.randint(0, 60)}.{self.r.randint(0, 20)}"})
        return deps

    DAEMONSETS = [
        ("kube-system", "aws-node", "amazon-k8s-cni", "25m", "50Mi"),
        ("kube-system", "kube-proxy", "kube-proxy", "100m", "64Mi"),
        ("kube-system", "ebs-csi-node", "aws-ebs-csi-driver", "10m", "40Mi"),
        ("kube-system", "eks-pod-identity-agent", "eks-pod-identity-agent", "25m", "32Mi"),
        ("observability", "node-exporter", "node-exporter", "50m", "64Mi"),
        ("logging", "fluent-bit", "fluent-bit", "100m", "128Mi"),
    ]

    def daemonset(self, ds, n_nodes):
        ns, name, image, cpu, mem = ds
        return self.add_last_applied({
            "apiVersion": "apps/v1", "kind": "DaemonSet",
            "metadata": {"annotations": {"deprecated.daemonset.template.generation": "4"},
                         "creationTimestamp": ts(ago(days=400)), "generation": 4,
                         "labels": {"app.kubernetes.io/name": name}, "name": name, "namespace": ns,
                         "resourceVersion": self.resource_version(), "uid": ds_uid(name)},
            "spec": {
                "revisionHistoryLimit": 10,
                "selector": {"matchLabels": {"app.kubernetes.io/name": name}},
                "template": {
                    "metadata": {"labels": {"app.kubernetes.io/name": name}},
                    "spec": {
                        "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                            {"matchExpressions": [{"key": "eks.amazonaws.com/compute-type", "operator": "NotIn", "values": ["fargate", "hybrid"]}]}]}}},
                        "containers": [{"name": name, "image": f"602401143452.dkr.ecr.us-west-2.amazonaws.com/eks/{image}:v1.20.0",
                                        "resources": {"requests": {"cpu": cpu, "memory": mem}}}],
                        "hostNetwork": name in ("aws-node", "kube-proxy"),
                        "priorityClassName": "system-node-critical",
                        "tolerations": [{"operator": "Exists"}],
                    },
                },
                "updateStrategy": {"rollingUpdate": {"maxSurge": 0, "maxUnavailable": "10%"}, "type": "RollingUpdate"},
            },
            "status": {"currentNumberScheduled": n_nodes, "desiredNumberScheduled": n_nodes, "numberAvailable": n_nodes,
                       "numberMisscheduled": 0, "numberReady": n_nodes, "observedGeneration": 4, "updatedNumberScheduled": n_nodes},
        })

    def pdb(self, d):
        tight = self.r.random() < 0.3
        spec = {"selector": {"matchLabels": {"app": d["name"]}}}
        if tight:
            spec["maxUnavailable"] = 0
        else:
            spec["minAvailable"] = self.r.choice([1, "50%"])
        return self.add_last_applied({
            "apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
            "metadata": {"creationTimestamp": ts(ago(days=90)), "generation": 1, "name": d["name"], "namespace": d["ns"],
                         "resourceVersion": self.resource_version(), "uid": self.uid()},
            "spec": spec,
            "status": {"conditions": [{"type": "DisruptionAllowed", "status": "False" if tight else "True",
                                       "reason": "InsufficientPods" if tight else "SufficientPods", "message": "",
                                       "lastTransitionTime": ts(ago(days=3)), "observedGeneration": 1}],
                       "currentHealthy": 3, "desiredHealthy": 3 if tight else 2, "disruptionsAllowed": 0 if tight else 1,
                       "expectedPods": 3, "observedGeneration": 1},
        })

    def container(self, d, idx, image, cpu, mem, probes=True):
        name = "app" if idx == 0 else ["sidecar", "envoy", "log-shipper"][idx % 3]
        env = [{"name": "APP_NAME", "value": d["name"]}, {"name": "LOG_LEVEL", "value": "info"},
               {"name": "AWS_REGION", "value": REGION}, {"name": "AWS_DEFAULT_REGION", "value": REGION},
               {"name": "POD_NAME", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}}},
               {"name": "POD_NAMESPACE", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}},
               {"name": "NODE_NAME", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "spec.nodeName"}}},
               {"name": "OTEL_EXPORTER_OTLP_ENDPOINT", "value": "http://otel-collector.observability.svc.cluster.local:4317"},
               {"name": "DB_PASSWORD", "valueFrom": {"secretKeyRef": {"key": "password", "name": f"{d['name']}-db"}}}]
        env = env[: 3 + (zlib.crc32(d["name"].encode()) + idx) % 7] if idx == 0 else env[:3]
        c = {
            "env": env,
            "image": image,
            "imagePullPolicy": "IfNotPresent",
            "name": name,
            "ports": [{"containerPort": 8080 + idx, "name": "http" if idx == 0 else f"p{idx}", "protocol": "TCP"}],
            "resources": {"limits": {"memory": mem}, "requests": {"cpu": cpu, "memory": mem}},
            "securityContext": {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]},
                                "readOnlyRootFilesystem": True, "runAsNonRoot": True},
            "terminationMessagePath": "/dev/termination-log",
            "terminationMessagePolicy": "File",
            "volumeMounts": [{"mountPath": "/etc/config", "name": "config", "readOnly": True},
                             {"mountPath": "/tmp", "name": "tmp"},
                             {"mountPath": "/var/run/secrets/kubernetes.io/serviceaccount", "name": "kube-api-access", "readOnly": True}],
        }
        if probes:
            port = 8080 + idx
            c["livenessProbe"] = {"failureThreshold": 3, "httpGet": {"path": "/healthz", "port": port, "scheme": "HTTP"},
                                  "initialDelaySeconds": 10, "periodSeconds": 10, "successThreshold": 1, "timeoutSeconds": 1}
            c["readinessProbe"] = {"failureThreshold": 3, "httpGet": {"path": "/ready", "port": port, "scheme": "HTTP"},
                                   "periodSeconds": 5, "successThreshold": 1, "timeoutSeconds": 1}
        return c

    def pod_volumes(self, d):
        return [
            {"configMap": {"defaultMode": 420, "name": f"{d['name']}-config"}, "name": "config"},
            {"emptyDir": {}, "name": "tmp"},
            {"name": "kube-api-access", "projected": {"defaultMode": 420, "sources": [
                {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                {"configMap": {"items": [{"key": "ca.crt", "path": "ca.crt"}], "name": "kube-root-ca.crt"}},
                {"downwardAPI": {"items": [{"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}, "path": "namespace"}]}}]}},
        ]

    def pod_status_running(self, pod, node, started):
        spec = pod["spec"]
        cs = []
        for c in spec["containers"]:
            cs.append({"containerID": "containerd://" + self.hexs(64), "image": c["image"],
                       "imageID": c["image"].split(":")[0] + "@sha256:" + self.hexs(64),
                       "lastState": {}, "name": c["name"], "ready": True, "restartCount": self.r.choice([0, 0, 0, 0, 1, 3]),
                       "started": True, "state": {"running": {"startedAt": ts(started + dt.timedelta(seconds=8))}},
                       "volumeMounts": [{"mountPath": m["mountPath"], "name": m["name"], **({"readOnly": True, "recursiveReadOnly": "Disabled"} if m.get("readOnly") else {})}
                                        for m in c.get("volumeMounts", [])]})
        t = lambda s: ts(started + dt.timedelta(seconds=s))
        st = {
            "conditions": [
                {"lastProbeTime": None, "lastTransitionTime": t(3), "status": "True", "type": "PodReadyToStartContainers"},
                {"lastProbeTime": None, "lastTransitionTime": t(2), "status": "True", "type": "Initialized"},
                {"lastProbeTime": None, "lastTransitionTime": t(20), "status": "True", "type": "Ready"},
                {"lastProbeTime": None, "lastTransitionTime": t(20), "status": "True", "type": "ContainersReady"},
                {"lastProbeTime": None, "lastTransitionTime": t(0), "status": "True", "type": "PodScheduled"},
            ],
            "containerStatuses": cs,
            "hostIP": node["ip"], "hostIPs": [{"ip": node["ip"]}],
            "phase": "Running",
            "podIP": f"10.{self.r.randint(64, 127)}.{self.r.randint(0, 255)}.{self.r.randint(1, 254)}",
            "qosClass": "Burstable",
            "startTime": t(0),
        }
        st["podIPs"] = [{"ip": st["podIP"]}]
        if spec.get("initContainers"):
            st["initContainerStatuses"] = [{"containerID": "containerd://" + self.hexs(64), "image": ic["image"],
                                            "imageID": ic["image"].split(":")[0] + "@sha256:" + self.hexs(64), "lastState": {},
                                            "name": ic["name"], "ready": True, "restartCount": 0, "started": False,
                                            "state": {"terminated": {"containerID": "containerd://" + self.hexs(64), "exitCode": 0,
                                                                     "finishedAt": t(2), "reason": "Completed", "startedAt": t(1)}}}
                                           for ic in spec["initContainers"]]
        return st

    def app_pod(self, d, node, pending_kind=None, pools=None):
        name = self.unique(lambda: f"{d['rs']}-{self.rand_str(5)}")
        started = ago(minutes=self.r.uniform(5, 60 * 24 * 10)) if node else None
        image = f"{REGISTRY}/{d['ns']}/{d['name']}:{d['image_tag']}"
        containers = [self.container(d, 0, image, d["cpu"], d["mem"])]
        for k in range(1, d["containers"]):
            containers.append(self.container(d, k, f"{REGISTRY}/platform/{['sidecar', 'envoy', 'log-shipper'][k % 3]}:v1.{k}.0", "50m", "64Mi", probes=k % 2 == 0))
        spec = {
            "containers": containers,
            "dnsPolicy": "ClusterFirst",
            "enableServiceLinks": False,
            "preemptionPolicy": "PreemptLowerPriority",
            "priority": 0,
            "restartPolicy": "Always",
            "schedulerName": "default-scheduler",
            "securityContext": {"fsGroup": 2000, "runAsUser": 1000, "seccompProfile": {"type": "RuntimeDefault"}},
            "serviceAccount": d["name"],
            "serviceAccountName": d["name"],
            "terminationGracePeriodSeconds": 30,
            "tolerations": [{"effect": "NoExecute", "key": "node.kubernetes.io/not-ready", "operator": "Exists", "tolerationSeconds": 300},
                            {"effect": "NoExecute", "key": "node.kubernetes.io/unreachable", "operator": "Exists", "tolerationSeconds": 300}],
            "volumes": self.pod_volumes(d),
        }
        if d["init"]:
            spec["initContainers"] = [{"command": ["sh", "-c", "until nc -z db 5432; do sleep 1; done"], "image": f"{REGISTRY}/platform/wait-for:v2",
                                       "imagePullPolicy": "IfNotPresent", "name": "wait-for-db",
                                       "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}},
                                       "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File"}]
        if self.r.random() < 0.25:
            spec["topologySpreadConstraints"] = [{"labelSelector": {"matchLabels": {"app": d["name"]}}, "maxSkew": 1,
                                                  "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "ScheduleAnyway"}]
        if node:
            spec["nodeName"] = node["name"]
            p = node["pool"]
            if p["taints"]:
                spec["tolerations"] += [dict(t, operator="Equal") if "value" in t else dict(t, operator="Exists") for t in p["taints"]]
            if p["team"]:
                spec["nodeSelector"] = {"team": p["team"]}
        created = (started - dt.timedelta(seconds=2)) if node else ago(minutes=self.r.uniform(1, 180))
        meta = {
            "creationTimestamp": ts(created),
            "generateName": f"{d['rs']}-",
            "labels": {"app": d["name"], "app.kubernetes.io/name": d["name"], "app.kubernetes.io/part-of": d["ns"],
                       "pod-template-hash": d["rs"].rsplit("-", 1)[1], "team": d["team"]},
            "name": name,
            "namespace": d["ns"],
            "ownerReferences": [{"apiVersion": "apps/v1", "blockOwnerDeletion": True, "controller": True,
                                 "kind": "ReplicaSet", "name": d["rs"], "uid": d["rs_uid"]}],
            "resourceVersion": self.resource_version(),
            "uid": self.uid(),
        }
        if self.r.random() < 0.3:
            meta["annotations"] = {"prometheus.io/scrape": "true", "prometheus.io/port": "9090",
                                   "kubectl.kubernetes.io/restartedAt": ts(ago(days=self.r.randint(1, 30))),
                                   "checksum/config": self.hexs(64)}
        if node and node["do_not_disrupt"] and self.r.random() < 0.3 or self.r.random() < 0.003:
            meta.setdefault("annotations", {})["karpenter.sh/do-not-disrupt"] = "true"
        if self.r.random() < 0.05:
            # As if fetched straight from the API: managedFields for the controller and kubelet.
            meta["managedFields"] = [
                self.managed_fields("kube-controller-manager", created, {"f:metadata": {"f:generateName": {}, "f:labels": {f"f:{k}": {} for k in meta["labels"]},
                                                                                       "f:ownerReferences": {f"k:{{\"uid\":\"{d['rs_uid']}\"}}": {}}},
                                                                          "f:spec": {f"f:containers": {f"k:{{\"name\":\"{c['name']}\"}}": {"f:env": {}, "f:image": {}, "f:resources": {}} for c in containers}}}),
                self.managed_fields("kubelet", created + dt.timedelta(seconds=20), {"f:status": {"f:conditions": {}, "f:containerStatuses": {}, "f:hostIP": {}, "f:phase": {}, "f:podIP": {}}}),
            ]
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}
        if node:
            pod["status"] = self.pod_status_running(pod, node, started)
        else:
            self.make_pending(pod, pending_kind, pools, created)
        return pod

    def make_pending(self, pod, kind, pools, created):
        spec = pod["spec"]
        c0 = spec["containers"][0]
        # Vary what the pod asks for so per-NodePool verdicts differ.
        if kind == "gpu":
            c0["resources"]["limits"]["nvidia.com/gpu"] = "1"
            c0["resources"]["requests"]["nvidia.com/gpu"] = "1"
            if self.r.random() < 0.5:
                spec["tolerations"].append({"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"})
        elif kind == "huge":
            c0["resources"]["requests"]["cpu"] = "120"
            c0["resources"]["requests"]["memory"] = "900Gi"
            c0["resources"]["limits"]["memory"] = "900Gi"
        elif kind == "zone":
            spec["nodeSelector"] = {"topology.kubernetes.io/zone": "us-west-2e"}
        elif kind == "arm":
            spec["nodeSelector"] = {"kubernetes.io/arch": "arm64"}
        elif kind == "typo":
            spec["nodeSelector"] = {"zone": "us-west-2a"}
        elif kind == "affinity":
            spec["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                {"matchExpressions": [{"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]},
                                      {"key": "karpenter.k8s.aws/instance-family", "operator": "In", "values": ["m7i", "m6i"]}]},
                {"matchExpressions": [{"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["r6i.2xlarge"]}]}]}}}
        elif kind == "batch":
            spec["tolerations"].append({"key": "workload", "operator": "Equal", "value": "batch", "effect": "NoSchedule"})
            spec["nodeSelector"] = {"workload": "batch"}
        elif kind == "team":
            team = [p for p in pools if p["team"]]
            if team:
                p = self.r.choice(team)
                spec["nodeSelector"] = {"team": p["team"]}
                if self.r.random() < 0.7:
                    spec["tolerations"].append({"key": "dedicated", "operator": "Equal", "value": p["name"], "effect": "NoSchedule"})
        elif kind == "spread":
            spec["topologySpreadConstraints"] = [{"labelSelector": {"matchLabels": {"app": pod["metadata"]["labels"]["app"]}}, "maxSkew": 1,
                                                  "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "DoNotSchedule"}]
        sched_msg = self.scheduler_message(kind)
        pod["status"] = {
            "conditions": [{"lastProbeTime": None, "lastTransitionTime": ts(created + dt.timedelta(seconds=1)),
                            "message": sched_msg, "reason": "Unschedulable", "status": "False", "type": "PodScheduled"}],
            "phase": "Pending",
            "qosClass": "Burstable",
        }

    def scheduler_message(self, kind):
        n = self.a.nodes
        if kind == "gpu":
            return f"0/{n} nodes are available: {n} Insufficient nvidia.com/gpu. preemption: 0/{n} nodes are available: {n} No preemption victims found for incoming pod."
        if kind in ("zone", "arm", "typo", "affinity", "team", "batch"):
            return f"0/{n} nodes are available: {n} node(s) didn't match Pod's node affinity/selector. preemption: 0/{n} nodes are available: {n} Preemption is not helpful for scheduling."
        a = self.r.randint(n // 3, n - 1)
        return (f"0/{n} nodes are available: {a} Insufficient cpu, {n - a} Insufficient memory, 40 node(s) had untolerated taint "
                f"{{nvidia.com/gpu: true}}. preemption: 0/{n} nodes are available: {n} No preemption victims found for incoming pod.")

    def ds_pod(self, ds, node, pending=False):
        ns, name, image, cpu, mem = ds
        created = node["created"] + dt.timedelta(seconds=30)
        meta = {
            "creationTimestamp": ts(created), "generateName": f"{name}-",
            "labels": {"app.kubernetes.io/name": name, "controller-revision-hash": "6d4b8f7c9", "pod-template-generation": "4"},
            "name": self.unique(lambda: f"{name}-{self.rand_str(5)}"), "namespace": ns,
            "ownerReferences": [{"apiVersion": "apps/v1", "blockOwnerDeletion": True, "controller": True, "kind": "DaemonSet",
                                 "name": name, "uid": ds_uid(name)}],
            "resourceVersion": self.resource_version(), "uid": self.uid(),
        }
        d = {"name": name, "ns": ns}
        spec = {
            "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node["name"]]}]}]}}},
            "containers": [self.container(d, 0, f"602401143452.dkr.ecr.us-west-2.amazonaws.com/eks/{image}:v1.20.0", cpu, mem)],
            "dnsPolicy": "ClusterFirst", "hostNetwork": name in ("aws-node", "kube-proxy"),
            "priority": 2000001000, "priorityClassName": "system-node-critical", "restartPolicy": "Always",
            "schedulerName": "default-scheduler", "serviceAccountName": name, "terminationGracePeriodSeconds": 30,
            "tolerations": [{"operator": "Exists"}] + [{"effect": e, "key": k, "operator": "Exists"} for k, e in (
                ("node.kubernetes.io/not-ready", "NoExecute"), ("node.kubernetes.io/unreachable", "NoExecute"),
                ("node.kubernetes.io/disk-pressure", "NoSchedule"), ("node.kubernetes.io/memory-pressure", "NoSchedule"),
                ("node.kubernetes.io/pid-pressure", "NoSchedule"), ("node.kubernetes.io/unschedulable", "NoSchedule"))],
            "volumes": self.pod_volumes(d),
        }
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}
        if pending:
            pod["status"] = {"conditions": [{"lastProbeTime": None, "lastTransitionTime": ts(ago(minutes=30)),
                                             "message": "0/1 nodes are available: 1 Insufficient cpu. preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod.",
                                             "reason": "Unschedulable", "status": "False", "type": "PodScheduled"}],
                             "phase": "Pending", "qosClass": "Burstable"}
        else:
            spec["nodeName"] = node["name"]
            pod["status"] = self.pod_status_running(pod, node, created + dt.timedelta(seconds=5))
        return pod

    # ------------------------------------------------------------ events
    def event(self, obj_kind, ns, name, uid, reason, message, etype="Normal", component="kubelet", host=None,
              first=None, last=None, count=1, api_version="v1", field_path=None):
        last = last or first
        ev_ns = ns or "default"
        inv = {"apiVersion": api_version, "kind": obj_kind, "name": name, "uid": uid,
               "resourceVersion": str(self.r.randint(10_000, 9_999_999))}
        if ns:
            inv["namespace"] = ns
        if field_path:
            inv["fieldPath"] = field_path
        src = {"component": component}
        if host:
            src["host"] = host
        return {
            "apiVersion": "v1", "kind": "Event",
            "count": count,
            "eventTime": None,
            "firstTimestamp": ts(first),
            "involvedObject": inv,
            "lastTimestamp": ts(last),
            "message": message,
            "metadata": {"creationTimestamp": ts(first), "name": f"{name}.{self.hexs(16)}", "namespace": ev_ns,
                         "resourceVersion": self.resource_version(), "uid": self.uid()},
            "reason": reason,
            "reportingComponent": component if component != "kubelet" else "kubelet",
            "reportingInstance": host or "",
            "source": src,
            "type": etype,
        }

    def karpenter_failed_scheduling(self, pod, kind, pools):
        """A v1.5+ FailedScheduling message: segments joined with "; ", no pool wrapper,
        only limit segments name their pool."""
        spec = pod["spec"]
        tolerated = {t.get("key") for t in spec["tolerations"]}
        segs = []
        for p in sorted(pools, key=lambda p: (-(p["weight"] or 0), [-ord(c) for c in p["name"]])):
            if not p["ready"]:
                continue  # Karpenter skips pools that are not Ready
            if p["at_limit"]:
                segs.append(f"all available instance types exceed limits for nodepool (NodePool={p['name']})")
                continue
            for t in p["taints"]:
                if t["key"] not in tolerated:
                    tv = f"{t['key']}={t['value']}:{t['effect']}" if "value" in t else f"{t['key']}:{t['effect']}"
                    segs.append(f"did not tolerate taint (taint={tv})")
        if kind == "typo":
            segs.append('incompatible requirements, label "zone" does not have known values (typo of "topology.kubernetes.io/zone"?)')
        elif kind == "zone":
            segs.append("incompatible requirements, key topology.kubernetes.io/zone, topology.kubernetes.io/zone In [us-west-2e] not in "
                        "topology.kubernetes.io/zone In [us-west-2a us-west-2b us-west-2c us-west-2d]")
        elif kind == "spread":
            segs.append("unsatisfiable topology constraint for topology spread, key=topology.kubernetes.io/zone "
                        "(counts = map[us-west-2a:4 us-west-2b:1 us-west-2c:1], podDomains = topology.kubernetes.io/zone Exists, "
                        "nodeDomains = topology.kubernetes.io/zone In [us-west-2a us-west-2b us-west-2c]")
        c0 = spec["containers"][0]["resources"]["requests"]
        res = json.dumps({"cpu": c0.get("cpu", "100m"), "memory": c0.get("memory", "128Mi"), "pods": "1"}, separators=(",", ":"))
        phrase = {"huge": "no instance type has enough resources", "gpu": "no instance type met all requirements"}.get(
            kind, "no instance type met the scheduling requirements or had a required offering")
        segs.append(f"{phrase}, requirements=karpenter.k8s.aws/ec2nodeclass In [default], karpenter.sh/capacity-type In [on-demand spot], "
                    f"karpenter.sh/nodepool In [default], kubernetes.io/arch In [amd64], kubernetes.io/os In [linux], "
                    f"topology.kubernetes.io/zone In [us-west-2a us-west-2b us-west-2c us-west-2d], resources={res}")
        return "Failed to schedule pod, " + "; ".join(segs)


def spec_hash(kind, name):
    """The hash Karpenter stamps on a NodePool or node class and on every NodeClaim and
    Node made from it (one value per pool or class, as long as its spec is unchanged)."""
    return str(uuid.uuid5(uuid.NAMESPACE_DNS, f"{kind}.{name}").int >> 65)


def ds_uid(name):
    return str(uuid.uuid5(uuid.NAMESPACE_DNS, f"ds.{name}"))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nodes", type=int, default=5000)
    ap.add_argument("--pods", type=int, default=150000)
    ap.add_argument("--events", type=int, default=50000)
    ap.add_argument("--nodepools", type=int, default=20)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--pending-fraction", type=float, default=0.02, help="share of pods Pending/Unschedulable [0.02]")
    ap.add_argument("--indent", type=int, default=0,
                    help="indent like kubectl (4) instead of compact JSON [0]; 4 roughly doubles the file size")
    ap.add_argument("-o", "--output", default="-", help="file to write [stdout]")
    a = ap.parse_args()
    if a.nodepools < 1 or a.nodes < a.nodepools:
        ap.error("need at least one NodePool and at least as many nodes as NodePools")

    g = Gen(a)
    out = sys.stdout if a.output == "-" else open(a.output, "w", encoding="utf-8", buffering=1 << 20)
    indent = a.indent or None
    dumps = json.JSONEncoder(indent=indent, separators=(",", ":") if indent is None else (",", ": "), ensure_ascii=False).encode
    is_first = [True]
    counts = {}

    def emit(obj):
        counts[obj["kind"]] = counts.get(obj["kind"], 0) + 1
        text = dumps(obj)
        if indent:
            pad = " " * (2 * indent)
            text = pad + text.replace("\n", "\n" + pad)
        out.write(("\n" if is_first[0] else ",\n") + text)
        is_first[0] = False

    if indent:
        out.write('{\n    "apiVersion": "v1",\n    "items": [')
    else:
        out.write('{"apiVersion":"v1","items":[')

    pools = g.make_pools()
    for p in pools:
        p["uid"] = g.uid()
    nodes = g.plan_nodes(pools)

    # NodePools, with usage summed from their nodes.
    for p in pools:
        mine = [n for n in nodes if n["pool"] is p]
        cpu = sum(g.itype_resources(n["it"][1], n["it"][5])[0] for n in mine)
        mem = sum(g.itype_resources(n["it"][1], n["it"][5])[1] for n in mine)
        np_obj = g.nodepool(p, (cpu, mem, len(mine)))
        p["ready"] = next(c for c in np_obj["status"]["conditions"] if c["type"] == "Ready")["status"] == "True"
        p["at_limit"] = p["index"] % 7 == 3  # cpu limit == usage (see nodepool())
        emit(np_obj)
    for name in sorted({p["nodeclass"] for p in pools}):
        emit(g.nodeclass(name))
    for n in nodes:
        emit(g.nodeclaim(n))
    for n in nodes:
        emit(g.node(n))
    for ds in Gen.DAEMONSETS:
        emit(g.daemonset(ds, len(nodes)))

    # Pods: DaemonSet pods on every node (as many as the budget allows), then ReplicaSet pods.
    n_pending = int(a.pods * a.pending_fraction)
    ds_per_node = min(len(Gen.DAEMONSETS), max(0, (a.pods - n_pending) // (2 * max(1, len(nodes)))))
    n_ds_pods = ds_per_node * len(nodes)
    ds_pending = max(0, min(n_pending // 50, 20)) if ds_per_node else 0
    n_app = max(0, a.pods - n_ds_pods - (n_pending - ds_pending))
    deps = g.make_deployments(max(1, n_app // 80))
    for d in deps:
        if d["pdb"]:
            emit(g.pdb(d))
    pending_pods = []
    for i, n in enumerate(nodes):
        for k, ds in enumerate(Gen.DAEMONSETS[:ds_per_node]):
            # A handful of DaemonSet pods stuck Pending on full nodes.
            emit(g.ds_pod(ds, n, pending=(k == ds_per_node - 1 and i < ds_pending)))
    kinds = ["plain"] * 6 + ["gpu", "huge", "zone", "arm", "typo", "affinity", "batch", "team", "team", "spread"]
    for i in range(n_app):
        emit(g.app_pod(deps[i % len(deps)], g.r.choice(nodes)))
    for i in range(n_pending - ds_pending):
        kind = kinds[i % len(kinds)]
        pod = g.app_pod(deps[g.r.randrange(len(deps))], None, kind, pools)
        pending_pods.append((pod, kind))
        emit(pod)

    # Events.
    n_events = a.events
    made = 0
    pfirst = lambda pod: dt.datetime.strptime(pod["metadata"]["creationTimestamp"], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=dt.timezone.utc)
    for j, (pod, kind) in enumerate(pending_pods):
        if made >= n_events:
            break
        m = pod["metadata"]
        first = pfirst(pod) + dt.timedelta(seconds=2)
        last = max(first, ago(seconds=g.r.randint(5, 240)))
        emit(g.event("Pod", m["namespace"], m["name"], m["uid"], "FailedScheduling", pod["status"]["conditions"][0]["message"],
                     "Warning", "default-scheduler", first=first, last=last, count=g.r.randint(1, 40)))
        made += 1
        if j % 10 == 9:
            continue  # some pending pods have no Karpenter event yet
        if j % 25 == 3:
            # Nominated, then the pod stayed pending.
            claim = g.r.choice(nodes)["claim"]
            emit(g.event("Pod", m["namespace"], m["name"], m["uid"], "Nominated", f"Pod should schedule on: nodeclaim/{claim}",
                         "Normal", "karpenter", first=first, last=first + dt.timedelta(seconds=1)))
            made += 1
            if j % 50 == 3:
                continue
        emit(g.event("Pod", m["namespace"], m["name"], m["uid"], "FailedScheduling", g.karpenter_failed_scheduling(pod, kind, pools),
                     "Warning", "karpenter", first=first, last=last, count=g.r.randint(1, 30)))
        made += 1
    for n in nodes:
        if made >= n_events:
            break
        if n["drifted"] or n["do_not_disrupt"]:
            msg = ('Disruption is blocked through the "karpenter.sh/do-not-disrupt" annotation' if n["do_not_disrupt"]
                   else "Pdb prevents pod evictions (PodDisruptionBudget=[shop/api-worker-0])")
            t = ago(minutes=g.r.uniform(1, 30))
            emit(g.event("Node", None, n["name"], n["uid"], "DisruptionBlocked", msg, "Normal", "karpenter", first=t - dt.timedelta(minutes=40), last=t, count=12))
            emit(g.event("NodeClaim", None, n["claim"], n["claim_uid"], "DisruptionBlocked", msg, "Normal", "karpenter",
                         first=t - dt.timedelta(minutes=40), last=t, count=12, api_version="karpenter.sh/v1"))
            made += 2
    ordinary = [
        ("Scheduled", "Normal", "default-scheduler", "Successfully assigned {ns}/{name} to {node}", None),
        ("Pulling", "Normal", "kubelet", 'Pulling image "{image}"', "spec.containers{app}"),
        ("Pulled", "Normal", "kubelet", 'Successfully pulled image "{image}" in 2.113s (2.113s including waiting). Image size: 48213344 bytes.', "spec.containers{app}"),
        ("Created", "Normal", "kubelet", "Created container: app", "spec.containers{app}"),
        ("Started", "Normal", "kubelet", "Started container app", "spec.containers{app}"),
        ("Unhealthy", "Warning", "kubelet", "Readiness probe failed: Get \"http://10.64.3.7:8080/ready\": context deadline exceeded (Client.Timeout exceeded while awaiting headers)", "spec.containers{app}"),
        ("BackOff", "Warning", "kubelet", "Back-off restarting failed container app in pod {name}_{ns}({uid})", "spec.containers{app}"),
        ("Killing", "Normal", "kubelet", "Stopping container app", "spec.containers{app}"),
    ]
    while made < n_events:
        n = g.r.choice(nodes)
        d = deps[g.r.randrange(len(deps))]
        name = f"{d['rs']}-{g.rand_str(5)}"
        reason, etype, comp, fmt, fp = ordinary[made % len(ordinary)]
        t = ago(minutes=g.r.uniform(0, 55))
        msg = fmt.format(ns=d["ns"], name=name, node=n["name"], image=f"{REGISTRY}/{d['ns']}/{d['name']}:{d['image_tag']}", uid=g.uid())
        emit(g.event("Pod", d["ns"], name, g.uid(), reason, msg, etype, comp, host=n["name"] if comp == "kubelet" else None,
                     first=t, last=t + dt.timedelta(seconds=g.r.randint(0, 200)), count=g.r.randint(1, 5), field_path=fp))
        made += 1

    if indent:
        out.write('\n    ],\n    "kind": "List",\n    "metadata": {\n        "resourceVersion": ""\n    }\n}\n')
    else:
        out.write('],"kind":"List","metadata":{"resourceVersion":""}}\n')
    if out is not sys.stdout:
        size = out.tell()
        out.close()
        print(f"wrote {a.output}: {size / 1e6:.1f} MB, " + ", ".join(f"{v} {k}" for k, v in counts.items()), file=sys.stderr)


if __name__ == "__main__":
    main()
