"""Builders for Kubernetes / Karpenter objects as `kubectl get -o yaml` shows them.

Shared by demo/generate.py (the bundled demo dump) and
tests/fixtures/generate.py (the per-finding fixtures). Everything here is
deterministic: names, uids, instance ids and IPs are derived from seeds, so
re-running a generator reproduces byte-identical output.

The shapes follow Karpenter v1 (karpenter.sh/v1 NodePool/NodeClaim,
karpenter.k8s.aws/v1 EC2NodeClass) as of v1.14, with the AWS provider's
labels and annotations, and core/v1 objects as a 1.34 apiserver returns them
(managedFields left out, as `kubectl get -o yaml` does by default).
"""

from __future__ import annotations

import copy
import hashlib
import json
import math
import uuid
from datetime import datetime, timedelta, timezone

import yaml

# --------------------------------------------------------------------------
# Clock
# --------------------------------------------------------------------------

NOW = datetime(2026, 11, 21, 10, 0, 0, tzinfo=timezone.utc)


def fmt_time(t: datetime) -> str:
    return t.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def ago(d=0, h=0, m=0, s=0) -> datetime:
    """A moment before NOW."""
    return NOW - timedelta(days=d, hours=h, minutes=m, seconds=s)


def today(hms: str) -> datetime:
    """'09:46:00' on the day of NOW (UTC)."""
    hh, mm, ss = (int(x) for x in hms.split(":"))
    return NOW.replace(hour=hh, minute=mm, second=ss)


def ts(t) -> str:
    if isinstance(t, str):
        return t
    return fmt_time(t)


# --------------------------------------------------------------------------
# Deterministic identifiers
# --------------------------------------------------------------------------

_ALNUM = "bcdfghjklmnpqrstvwxz2456789"  # the alphabet Kubernetes uses for generated names


def _digest(seed: str) -> bytes:
    return hashlib.sha256(seed.encode()).digest()


def uid(seed: str) -> str:
    return str(uuid.UUID(bytes=_digest("uid:" + seed)[:16], version=4))


def suffix(seed: str, n: int = 5) -> str:
    d = _digest("sfx:" + seed)
    return "".join(_ALNUM[b % len(_ALNUM)] for b in d[:n])


def hexid(seed: str, n: int) -> str:
    return hashlib.sha256(("hex:" + seed).encode()).hexdigest()[:n]


def numid(seed: str, n: int = 20) -> str:
    v = int.from_bytes(_digest("num:" + seed)[:8], "big")
    return str(v)[:n]


def resource_version(seed: str) -> str:
    return str(10_000_000 + int.from_bytes(_digest("rv:" + seed)[:4], "big") % 89_999_999)


# --------------------------------------------------------------------------
# Quantities
# --------------------------------------------------------------------------

def parse_cpu_m(q) -> int:
    q = str(q)
    if q.endswith("m"):
        return int(q[:-1])
    return int(round(float(q) * 1000))


_BIN = {"Ki": 1, "Mi": 1024, "Gi": 1024 ** 2, "Ti": 1024 ** 3}


def parse_mem_ki(q) -> float:
    q = str(q)
    for suf, mul in _BIN.items():
        if q.endswith(suf):
            return float(q[: -len(suf)]) * mul
    if q.endswith("G"):
        return float(q[:-1]) * 1e9 / 1024
    if q.endswith("M"):
        return float(q[:-1]) * 1e6 / 1024
    return float(q) / 1024


def fmt_cpu(m: int) -> str:
    return str(m // 1000) if m % 1000 == 0 else f"{m}m"


def fmt_mem_mi(mi: int) -> str:
    if mi % 1024 == 0:
        return f"{mi // 1024}Gi"
    return f"{mi}Mi"


# --------------------------------------------------------------------------
# AWS catalogue (the instance types the fixtures and demo use)
# --------------------------------------------------------------------------

REGION = "us-west-2"
ZONE_IDS = {"us-west-2a": "usw2-az1", "us-west-2b": "usw2-az2", "us-west-2c": "usw2-az3", "us-west-2d": "usw2-az4"}
ZONE_NET = {"us-west-2a": 0, "us-west-2b": 32, "us-west-2c": 64, "us-west-2d": 96}
ACCOUNT = "111122223333"
CLUSTER = "prod-usw2"

_SIZES = {"large": 2, "xlarge": 4, "2xlarge": 8, "4xlarge": 16, "8xlarge": 32, "12xlarge": 48}
_MAXPODS = {"large": 29, "xlarge": 58, "2xlarge": 58, "4xlarge": 234, "8xlarge": 234, "12xlarge": 234}
_GIB_PER_VCPU = {"c": 2, "m": 4, "r": 8}
_OD_PER_VCPU = {  # us-west-2 on-demand $/h per vCPU, by family
    "c6i": 0.0425, "c7i": 0.044625, "c6a": 0.03825, "m6i": 0.048, "m7i": 0.0504, "m6a": 0.0432,
    "r6i": 0.063, "r7i": 0.06615, "c7g": 0.03625, "m7g": 0.0408, "r7g": 0.05355,
}
_CPU_MAKER = {"i": "intel", "a": "amd", "g": "aws"}
_GPU = {  # name: (gpu count, gpu name, gpu mem MiB, memory GiB, od price)
    "g5.xlarge": (1, "a10g", 24576, 16, 1.006),
    "g5.2xlarge": (1, "a10g", 24576, 32, 1.212),
    "g5.12xlarge": (4, "a10g", 98304, 192, 5.672),
    "g6.xlarge": (1, "l4", 23034, 16, 0.8048),
    "g6.2xlarge": (1, "l4", 23034, 32, 0.9776),
    "g6.12xlarge": (4, "l4", 92136, 192, 4.6016),
}


def instance_type(name: str) -> dict:
    fam, size = name.split(".")
    cpu = _SIZES[size]
    it = {
        "name": name, "family": fam, "size": size, "cpu": cpu, "pods": _MAXPODS[size],
        "category": fam[0], "generation": int("".join(c for c in fam[1:] if c.isdigit())),
        "gpu": 0, "hypervisor": "nitro",
    }
    if name in _GPU:
        n, gname, gmem, mem, price = _GPU[name]
        it.update(mem_gib=mem, gpu=n, gpu_name=gname, gpu_mem=gmem, od_price=price, arch="amd64",
                  cpu_maker="amd")
    else:
        it["mem_gib"] = cpu * _GIB_PER_VCPU[fam[0]]
        it["od_price"] = round(cpu * _OD_PER_VCPU[fam], 4)
        it["cpu_maker"] = _CPU_MAKER[fam[-1]] if fam[-1] in _CPU_MAKER else "intel"
        it["arch"] = "arm64" if fam.endswith("g") else "amd64"
    return it


def spot_price(itype: str, zone: str) -> float:
    it = instance_type(itype)
    f = 0.31 + (int(hexid(itype + zone, 2), 16) % 25) / 100  # 31%..55% of on-demand
    return round(it["od_price"] * f, 4)


def kube_reserved_cpu_m(cpu: int) -> int:
    r = 60
    if cpu > 1:
        r += 10
    if cpu > 2:
        r += 5 * (min(cpu, 4) - 2)
    if cpu > 4:
        r += int(2.5 * (cpu - 4))
    return r


# --------------------------------------------------------------------------
# Small builders
# --------------------------------------------------------------------------

def cond(ctype, status, when, reason=None, message="", generation=1, include_generation=True):
    c = {
        "type": ctype,
        "status": status,
        "lastTransitionTime": ts(when),
        "reason": reason if reason is not None else ctype,
        "message": message,
    }
    if include_generation:
        c["observedGeneration"] = generation
    return c


def core_cond(ctype, status, when, reason=None, message=None, probe=None):
    c = {"type": ctype, "status": status, "lastTransitionTime": ts(when)}
    if probe is not None:
        c["lastProbeTime"] = probe
    if reason:
        c["reason"] = reason
    if message:
        c["message"] = message
    return c


def owner(obj, controller=True, block=True):
    o = {"apiVersion": obj["apiVersion"], "kind": obj["kind"], "name": obj["metadata"]["name"],
         "uid": obj["metadata"]["uid"]}
    if controller:
        o["controller"] = True
    if block:
        o["blockOwnerDeletion"] = True
    return o


def meta(name, created, namespace=None, labels=None, annotations=None, seed=None, generation=None,
         owners=None, finalizers=None, deleted=None):
    m = {"name": name, "uid": uid(seed or f"{namespace}/{name}"), "creationTimestamp": ts(created),
         "resourceVersion": resource_version(seed or f"{namespace}/{name}")}
    if namespace is not None:
        m["namespace"] = namespace
    if labels:
        m["labels"] = dict(labels)
    if annotations:
        m["annotations"] = dict(annotations)
    if generation is not None:
        m["generation"] = generation
    if owners:
        m["ownerReferences"] = owners
    if finalizers:
        m["finalizers"] = finalizers
    if deleted is not None:
        m["deletionTimestamp"] = ts(deleted)
        m["deletionGracePeriodSeconds"] = 0
    return m


def req(key, op, *values, min_values=None):
    r = {"key": key, "operator": op}
    if values:
        r["values"] = [str(v) for v in values]
    if min_values is not None:
        r["minValues"] = min_values
    return r


def taint(key, value=None, effect="NoSchedule", added=None):
    t = {"key": key, "effect": effect}
    if value is not None:
        t["value"] = value
    if added is not None:
        t["timeAdded"] = ts(added)
    return t


def toleration(key=None, op="Equal", value=None, effect=None, seconds=None):
    t = {}
    if key is not None:
        t["key"] = key
    t["operator"] = op
    if value is not None:
        t["value"] = value
    if effect is not None:
        t["effect"] = effect
    if seconds is not None:
        t["tolerationSeconds"] = seconds
    return t


TOLERATE_ALL = [toleration(op="Exists")]
DEFAULT_POD_TOLERATIONS = [
    toleration("node.kubernetes.io/not-ready", "Exists", effect="NoExecute", seconds=300),
    toleration("node.kubernetes.io/unreachable", "Exists", effect="NoExecute", seconds=300),
]
DS_POD_TOLERATIONS = [
    toleration("node.kubernetes.io/not-ready", "Exists", effect="NoExecute"),
    toleration("node.kubernetes.io/unreachable", "Exists", effect="NoExecute"),
    toleration("node.kubernetes.io/disk-pressure", "Exists", effect="NoSchedule"),
    toleration("node.kubernetes.io/memory-pressure", "Exists", effect="NoSchedule"),
    toleration("node.kubernetes.io/pid-pressure", "Exists", effect="NoSchedule"),
    toleration("node.kubernetes.io/unschedulable", "Exists", effect="NoSchedule"),
]


# --------------------------------------------------------------------------
# The cluster under construction
# --------------------------------------------------------------------------

class Cluster:
    """Collects objects and keeps the joins between them coherent."""

    def __init__(self, seed="kelp", k8s_version="v1.34.1-eks-3025e55", cluster=CLUSTER):
        self.seed = seed
        self.k8s_version = k8s_version
        self.cluster = cluster
        self.objects: list[dict] = []
        self.nodeclasses: dict[str, dict] = {}
        self.nodepools: dict[str, dict] = {}
        self.nodeclaims: dict[str, dict] = {}
        self.nodes: dict[str, dict] = {}
        self.daemonsets: list[dict] = []
        self.pods: list[dict] = []
        self._ip_used: set[str] = set()
        self._counter = 0

    # ---- plumbing -------------------------------------------------------
    def s(self, *parts) -> str:
        return "/".join([self.seed, *[str(p) for p in parts]])

    def add(self, obj):
        self.objects.append(obj)
        return obj

    def ip_in(self, zone: str, seed: str) -> str:
        base = ZONE_NET[zone]
        d = _digest(self.s("ip", seed))
        for i in range(0, 30, 2):
            ip = f"10.0.{base + d[i] % 32}.{1 + d[i + 1] % 254}"
            if ip not in self._ip_used:
                self._ip_used.add(ip)
                return ip
        raise RuntimeError("ip space exhausted")

    # ---- Karpenter: EC2NodeClass ---------------------------------------
    def ec2nodeclass(self, name, created=None, ami_alias="al2023@v20251117", ready=True, role=None,
                     not_ready=None, amis=None, generation=1, block_gib=100, extra_spec=None,
                     http_tokens="required", hop_limit=1):
        created = created or ago(d=120)
        role = role or f"KarpenterNodeRole-{self.cluster}"
        ami_ver = ami_alias.split("@")[1]
        if amis is None:
            amis = default_amis(ami_ver, self.s("ami"))
        ver = ami_ver.lstrip("v")
        spec = {
            "amiFamily": "AL2023",
            "amiSelectorTerms": [{"alias": ami_alias}],
            "role": role,
            "subnetSelectorTerms": [{"tags": {"karpenter.sh/discovery": self.cluster}}],
            "securityGroupSelectorTerms": [{"tags": {"karpenter.sh/discovery": self.cluster}}],
            "metadataOptions": {"httpEndpoint": "enabled", "httpProtocolIPv6": "disabled",
                                "httpPutResponseHopLimit": hop_limit, "httpTokens": http_tokens},
            "blockDeviceMappings": [{"deviceName": "/dev/xvda", "ebs": {
                "volumeSize": f"{block_gib}Gi", "volumeType": "gp3", "encrypted": True,
                "deleteOnTermination": True}}],
            "tags": {"team": "platform", "karpenter.sh/discovery": self.cluster},
        }
        if extra_spec:
            spec.update(extra_spec)
        subnets = [{"id": f"subnet-0{hexid(self.s('subnet', z), 16)}", "zone": z, "zoneID": ZONE_IDS[z]}
                   for z in ("us-west-2a", "us-west-2b", "us-west-2c")]
        sgs = [{"id": f"sg-0{hexid(self.s('sg', 'node'), 16)}", "name": f"eks-cluster-sg-{self.cluster}-{numid(self.s('sgn'), 10)}"}]
        when = created + timedelta(seconds=6)
        conds = [
            cond("AMIsReady", "True", when, generation=generation),
            cond("CapacityReservationsReady", "True", when, generation=generation),
            cond("InstanceProfileReady", "True", when, generation=generation),
            cond("SecurityGroupsReady", "True", when, generation=generation),
            cond("SubnetsReady", "True", when, generation=generation),
            cond("ValidationSucceeded", "True", when, generation=generation),
            cond("Ready", "True", when, generation=generation),
        ]
        status = {
            "amis": amis,
            "instanceProfile": f"{self.cluster}_{numid(self.s('ip', name), 19)}",
            "securityGroups": sgs,
            "subnets": subnets,
            "conditions": conds,
        }
        if not ready:
            # not_ready = (condition type, reason, message)
            ctype, reason, message = not_ready
            for c in conds:
                if c["type"] == ctype:
                    c.update(status="False", reason=reason, message=message,
                             lastTransitionTime=ts(created + timedelta(seconds=7)))
                if c["type"] == "Ready":
                    c.update(status="False", reason="UnhealthyDependents", message=f"{ctype}=False",
                             lastTransitionTime=ts(created + timedelta(seconds=7)))
            if ctype == "SubnetsReady":
                status["subnets"] = []
        obj = {
            "apiVersion": "karpenter.k8s.aws/v1",
            "kind": "EC2NodeClass",
            "metadata": meta(name, created, seed=self.s("ec2nc", name), generation=generation,
                             annotations={"karpenter.k8s.aws/ec2nodeclass-hash": numid(self.s("nchash", name, generation)),
                                          "karpenter.k8s.aws/ec2nodeclass-hash-version": "v4"},
                             finalizers=["karpenter.k8s.aws/termination"]),
            "spec": spec,
            "status": status,
        }
        self.nodeclasses[name] = obj
        return self.add(obj)

    # ---- Karpenter: NodePool -------------------------------------------
    def nodepool(self, name, nodeclass="default", created=None, weight=None, requirements=None,
                 labels=None, taints=None, startup_taints=None, limits=None, budgets=None,
                 policy="WhenEmptyOrUnderutilized", consolidate_after="5m", expire_after="720h",
                 termination_grace=None, generation=1, ready=True, nodeclass_missing=False,
                 registration_healthy=True, status_resources=None):
        created = created or ago(d=90)
        if requirements is None:
            requirements = [
                req("kubernetes.io/arch", "In", "amd64"),
                req("kubernetes.io/os", "In", "linux"),
                req("karpenter.sh/capacity-type", "In", "spot", "on-demand"),
                req("karpenter.k8s.aws/instance-category", "In", "c", "m", "r"),
            ]
        tmpl_spec = {
            "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": nodeclass},
            "requirements": requirements,
            "expireAfter": expire_after,
        }
        if taints:
            tmpl_spec["taints"] = taints
        if startup_taints:
            tmpl_spec["startupTaints"] = startup_taints
        if termination_grace:
            tmpl_spec["terminationGracePeriod"] = termination_grace
        template = {"spec": tmpl_spec}
        if labels:
            template["metadata"] = {"labels": dict(labels)}
        disruption = {"consolidationPolicy": policy, "consolidateAfter": consolidate_after,
                      "budgets": budgets if budgets is not None else [{"nodes": "10%"}]}
        spec = {"template": template, "disruption": disruption}
        if limits:
            spec["limits"] = dict(limits)
        if weight is not None:
            spec["weight"] = weight
        when = created + timedelta(seconds=3)
        conds = [cond("ValidationSucceeded", "True", when, generation=generation)]
        if nodeclass_missing:
            conds.append(cond("NodeClassReady", "False", when, "NodeClassNotFound",
                              "NodeClass not found on cluster", generation=generation))
            conds.append(cond("NodeRegistrationHealthy", "Unknown", when, "AwaitingReconciliation",
                              "object is awaiting reconciliation", generation=generation))
            conds.append(cond("Ready", "False", when, "UnhealthyDependents", "NodeClassReady=False",
                              generation=generation))
        elif not ready:
            nc = self.nodeclasses.get(nodeclass)
            nc_ready = next(c for c in nc["status"]["conditions"] if c["type"] == "Ready")
            t = nc_ready["lastTransitionTime"]
            conds.append(cond("NodeClassReady", "False", t, nc_ready["reason"], nc_ready["message"],
                              generation=generation))
            conds.append(cond("NodeRegistrationHealthy", "Unknown", when, "AwaitingReconciliation",
                              "object is awaiting reconciliation", generation=generation))
            conds.append(cond("Ready", "False", t, "UnhealthyDependents", "NodeClassReady=False",
                              generation=generation))
        else:
            conds.append(cond("NodeClassReady", "True", when, generation=generation))
            if registration_healthy is True:
                conds.append(cond("NodeRegistrationHealthy", "True", created + timedelta(minutes=2),
                                  generation=generation))
            elif registration_healthy is False:
                conds.append(cond("NodeRegistrationHealthy", "False", ago(m=25), "RegistrationFailed",
                                  "Failed to register node", generation=generation))
            conds.append(cond("Ready", "True", when, generation=generation))
        obj = {
            "apiVersion": "karpenter.sh/v1",
            "kind": "NodePool",
            "metadata": meta(name, created, seed=self.s("np", name), generation=generation,
                             annotations={"karpenter.sh/nodepool-hash": numid(self.s("nphash", name, generation)),
                                          "karpenter.sh/nodepool-hash-version": "v3"}),
            "spec": spec,
            "status": {"conditions": conds, "nodeClassObservedGeneration": 1, "nodes": 0,
                       "resources": {"cpu": "0", "ephemeral-storage": "0", "memory": "0", "nodes": "0", "pods": "0"}},
        }
        obj["_status_override"] = status_resources
        self.nodepools[name] = obj
        return self.add(obj)

    def pool_labels(self, pool: str) -> dict:
        np_ = self.nodepools[pool]
        return dict(np_["spec"]["template"].get("metadata", {}).get("labels", {}))

    # ---- Karpenter: NodeClaim + Node -----------------------------------
    def machine(self, pool, itype, zone, created, capacity_type="on-demand", name=None,
                launched=True, registered=True, initialized=True, launch_failure=None,
                registered_at=None, initialized_at=None, init_reason=None, drifted=None,
                consolidatable=None, last_pod_event=None, node_ready=True, node_not_ready_since=None,
                node_annotations=None, node_labels=None, node_taints=None, deleting=None,
                image_id=None, node_exists=None, claim_annotations=None, nodeclass=None,
                expire_after=None, node_name=None, gpu_allocatable=None, extra_requirements=None,
                claim_requests=None):
        """A NodeClaim and (once registered) its Node, coherent with each other and the pool."""
        np_ = self.nodepools[pool]
        tmpl = np_["spec"]["template"]["spec"]
        nodeclass = nodeclass or tmpl["nodeClassRef"]["name"]
        it = instance_type(itype)
        name = name or f"{pool}-{suffix(self.s('nc', pool, itype, zone, ts(created)))}"
        iid = "i-0" + hexid(self.s("iid", name), 16)
        provider_id = f"aws:///{zone}/{iid}"
        ip = self.ip_in(zone, name)
        node_name = node_name or f"ip-{ip.replace('.', '-')}.{REGION}.compute.internal"
        nc_obj = self.nodeclasses.get(nodeclass)
        if image_id is None and nc_obj is not None:
            image_id = pick_ami(nc_obj["status"]["amis"], it)
        launched_at = created + timedelta(seconds=4)
        registered_at = registered_at or (created + timedelta(seconds=38))
        initialized_at = initialized_at or (registered_at + timedelta(seconds=14))
        if node_exists is None:
            node_exists = bool(launched and registered and not launch_failure)

        mem_mi = it["mem_gib"] * 1024
        cap_mem_mi = int(mem_mi * 0.925)
        res_cpu_m = kube_reserved_cpu_m(it["cpu"])
        res_mem_mi = 255 + 11 * it["pods"]
        capacity = {"cpu": str(it["cpu"]), "ephemeral-storage": "100Gi", "memory": f"{cap_mem_mi}Mi",
                    "pods": str(it["pods"])}
        allocatable = {"cpu": fmt_cpu(it["cpu"] * 1000 - res_cpu_m), "ephemeral-storage": "89Gi",
                       "memory": f"{cap_mem_mi - res_mem_mi - 100}Mi", "pods": str(it["pods"])}
        if it["gpu"]:
            capacity["nvidia.com/gpu"] = str(it["gpu"])
            allocatable["nvidia.com/gpu"] = str(it["gpu"])

        labels = {
            "karpenter.k8s.aws/ec2nodeclass": nodeclass,
            "karpenter.k8s.aws/instance-category": it["category"],
            "karpenter.k8s.aws/instance-cpu": str(it["cpu"]),
            "karpenter.k8s.aws/instance-cpu-manufacturer": it["cpu_maker"],
            "karpenter.k8s.aws/instance-family": it["family"],
            "karpenter.k8s.aws/instance-generation": str(it["generation"]),
            "karpenter.k8s.aws/instance-hypervisor": it["hypervisor"],
            "karpenter.k8s.aws/instance-memory": str(mem_mi),
            "karpenter.k8s.aws/instance-size": it["size"],
            "karpenter.sh/capacity-type": capacity_type,
            "karpenter.sh/nodepool": pool,
            "kubernetes.io/arch": it["arch"],
            "kubernetes.io/os": "linux",
            "node.kubernetes.io/instance-type": itype,
            "topology.k8s.aws/zone-id": ZONE_IDS[zone],
            "topology.kubernetes.io/region": REGION,
            "topology.kubernetes.io/zone": zone,
        }
        if it["gpu"]:
            labels.update({
                "karpenter.k8s.aws/instance-gpu-count": str(it["gpu"]),
                "karpenter.k8s.aws/instance-gpu-manufacturer": "nvidia",
                "karpenter.k8s.aws/instance-gpu-memory": str(it["gpu_mem"]),
                "karpenter.k8s.aws/instance-gpu-name": it["gpu_name"],
            })
        labels.update(self.pool_labels(pool))

        # requirements as Karpenter writes them on the NodeClaim: the pool's, narrowed
        requirements = copy.deepcopy(tmpl["requirements"])
        requirements = [r for r in requirements if r["key"] not in ("node.kubernetes.io/instance-type",)]
        requirements.append(req("node.kubernetes.io/instance-type", "In", itype))
        requirements.append(req("karpenter.sh/nodepool", "In", pool))
        requirements.append(req("karpenter.k8s.aws/ec2nodeclass", "In", nodeclass))
        for k, v in self.pool_labels(pool).items():
            requirements.append(req(k, "In", v))
        if extra_requirements:
            requirements.extend(extra_requirements)

        cl_spec = {
            "nodeClassRef": dict(tmpl["nodeClassRef"], name=nodeclass),
            "requirements": requirements,
            "resources": {"requests": {"cpu": fmt_cpu(int(it["cpu"] * 1000 * 0.55)),
                                       "memory": fmt_mem_mi(int(mem_mi * 0.4) // 256 * 256), "pods": "7"}},
            "expireAfter": expire_after or tmpl.get("expireAfter", "720h"),
        }
        if claim_requests:
            cl_spec["resources"]["requests"] = dict(claim_requests)
        if tmpl.get("taints"):
            cl_spec["taints"] = copy.deepcopy(tmpl["taints"])
        if tmpl.get("startupTaints"):
            cl_spec["startupTaints"] = copy.deepcopy(tmpl["startupTaints"])
        if tmpl.get("terminationGracePeriod"):
            cl_spec["terminationGracePeriod"] = tmpl["terminationGracePeriod"]

        conds = []
        if launch_failure:
            # (reason, message) -- Karpenter keeps Launched Unknown while it retries
            conds.append(cond("Launched", "Unknown", created + timedelta(seconds=2), launch_failure[0],
                              launch_failure[1]))
            conds.append(cond("Registered", "Unknown", created + timedelta(seconds=1),
                              "AwaitingReconciliation", "object is awaiting reconciliation"))
            conds.append(cond("Initialized", "Unknown", created + timedelta(seconds=1),
                              "AwaitingReconciliation", "object is awaiting reconciliation"))
            conds.append(cond("Ready", "Unknown", created + timedelta(seconds=2), "ReconcilingDependents",
                              "Launched=Unknown, Registered=Unknown, Initialized=Unknown"))
        elif not launched:
            conds.append(cond("Launched", "Unknown", created + timedelta(seconds=1), "AwaitingReconciliation",
                              "object is awaiting reconciliation"))
            conds.append(cond("Registered", "Unknown", created + timedelta(seconds=1), "AwaitingReconciliation",
                              "object is awaiting reconciliation"))
            conds.append(cond("Initialized", "Unknown", created + timedelta(seconds=1), "AwaitingReconciliation",
                              "object is awaiting reconciliation"))
            conds.append(cond("Ready", "Unknown", created + timedelta(seconds=1), "ReconcilingDependents",
                              "Launched=Unknown, Registered=Unknown, Initialized=Unknown"))
        else:
            conds.append(cond("Launched", "True", launched_at))
            if registered:
                conds.append(cond("Registered", "True", registered_at))
            else:
                conds.append(cond("Registered", "Unknown", launched_at + timedelta(seconds=1), "NodeNotFound",
                                  "Node not registered with cluster"))
            if registered and initialized:
                conds.append(cond("Initialized", "True", initialized_at))
                conds.append(cond("Ready", "True", initialized_at))
            elif registered:
                reason, message = init_reason or ("NodeNotReady", "Node status is NotReady")
                conds.append(cond("Initialized", "Unknown", registered_at + timedelta(seconds=1), reason, message))
                conds.append(cond("Ready", "Unknown", registered_at + timedelta(seconds=1), "ReconcilingDependents",
                                  "Initialized=Unknown"))
            else:
                conds.append(cond("Initialized", "Unknown", launched_at + timedelta(seconds=1), "NodeNotFound",
                                  "Node not registered with cluster"))
                conds.append(cond("Ready", "Unknown", launched_at + timedelta(seconds=1), "ReconcilingDependents",
                                  "Registered=Unknown, Initialized=Unknown"))
            conds.append(cond("ConsistentStateFound", "True", registered_at + timedelta(seconds=30))
                         if registered else None)
            conds = [c for c in conds if c]
        if consolidatable is not None:
            conds.append(cond("Consolidatable", "True", consolidatable))
        if drifted is not None:
            reason, since = drifted
            conds.append(cond("Drifted", "True", since, reason, reason))

        status = {"conditions": conds}
        if launched and not launch_failure:
            status.update({"providerID": provider_id, "imageID": image_id, "capacity": capacity,
                           "allocatable": allocatable})
            if registered:
                status["nodeName"] = node_name
        if last_pod_event is not None:
            status["lastPodEventTime"] = ts(last_pod_event)

        np_meta = np_["metadata"]
        nc_meta = self.nodeclasses.get(nodeclass, {}).get("metadata", {})
        annotations = {
            "karpenter.k8s.aws/ec2nodeclass-hash": nc_meta.get("annotations", {}).get(
                "karpenter.k8s.aws/ec2nodeclass-hash", numid(self.s("nchash", nodeclass, 1))),
            "karpenter.k8s.aws/ec2nodeclass-hash-version": "v4",
            "karpenter.k8s.aws/tagged": "true",
            "karpenter.sh/nodepool-hash": np_meta["annotations"]["karpenter.sh/nodepool-hash"],
            "karpenter.sh/nodepool-hash-version": "v3",
        }
        if claim_annotations:
            annotations.update(claim_annotations)
        if launch_failure or not launched:
            annotations.pop("karpenter.k8s.aws/tagged")
        claim_labels = dict(labels)
        if launch_failure or not launched:
            claim_labels = {k: v for k, v in labels.items() if k in ("karpenter.sh/nodepool",
                                                                    "karpenter.k8s.aws/ec2nodeclass")}
            claim_labels.update(self.pool_labels(pool))
        claim = {
            "apiVersion": "karpenter.sh/v1",
            "kind": "NodeClaim",
            "metadata": meta(name, created, seed=self.s("nodeclaim", name), generation=1,
                             labels=claim_labels, annotations=annotations,
                             owners=[owner(np_, controller=False)],
                             finalizers=["karpenter.sh/termination"], deleted=deleting),
            "spec": cl_spec,
            "status": status,
        }
        self.nodeclaims[name] = claim
        self.add(claim)
        claim["_it"] = it
        claim["_zone"] = zone
        claim["_ip"] = ip

        node = None
        if node_exists:
            node = self._node_for(claim, it, zone, ip, node_name, provider_id, labels, created, registered_at,
                                  initialized, node_ready, node_not_ready_since, node_annotations, node_labels,
                                  node_taints, deleting, image_id, tmpl, gpu_allocatable, init_reason)
        return claim, node

    def _node_for(self, claim, it, zone, ip, node_name, provider_id, labels, created, registered_at,
                  initialized, node_ready, not_ready_since, node_annotations, extra_labels, extra_taints,
                  deleting, image_id, tmpl, gpu_allocatable, init_reason):
        nlabels = dict(labels)
        nlabels.update({
            "beta.kubernetes.io/arch": it["arch"],
            "beta.kubernetes.io/instance-type": it["name"],
            "beta.kubernetes.io/os": "linux",
            "failure-domain.beta.kubernetes.io/region": REGION,
            "failure-domain.beta.kubernetes.io/zone": zone,
            "k8s.io/cloud-provider-aws": hexid(self.s("cpaws"), 32),
            "karpenter.sh/registered": "true",
            "kubernetes.io/hostname": node_name,
        })
        if initialized:
            nlabels["karpenter.sh/initialized"] = "true"
        if extra_labels:
            nlabels.update(extra_labels)
        annotations = {
            "alpha.kubernetes.io/provided-node-ip": ip,
            "karpenter.k8s.aws/ec2nodeclass-hash": claim["metadata"]["annotations"]["karpenter.k8s.aws/ec2nodeclass-hash"],
            "karpenter.k8s.aws/ec2nodeclass-hash-version": "v4",
            "karpenter.sh/nodepool-hash": claim["metadata"]["annotations"]["karpenter.sh/nodepool-hash"],
            "karpenter.sh/nodepool-hash-version": "v3",
            "node.alpha.kubernetes.io/ttl": "0",
            "volumes.kubernetes.io/controller-managed-attach-detach": "true",
        }
        if node_annotations:
            annotations.update(node_annotations)
        taints = copy.deepcopy(tmpl.get("taints", []))
        if not initialized and tmpl.get("startupTaints") and init_reason and init_reason[0] == "StartupTaintsExist":
            taints += copy.deepcopy(tmpl["startupTaints"])
        if deleting is not None:
            taints.append(taint("karpenter.sh/disrupted", effect="NoSchedule", added=deleting))
        if extra_taints:
            taints += extra_taints
        mem_ki = int(it["mem_gib"] * 1024 * 1024 * 0.9875)
        res_mem_ki = (255 + 11 * it["pods"] + 100) * 1024
        capacity = {"cpu": str(it["cpu"]), "ephemeral-storage": "104845292Ki", "hugepages-1Gi": "0",
                    "hugepages-2Mi": "0", "memory": f"{mem_ki}Ki", "pods": str(it["pods"])}
        allocatable = {"cpu": fmt_cpu(it["cpu"] * 1000 - kube_reserved_cpu_m(it["cpu"])),
                       "ephemeral-storage": "95551679124", "hugepages-1Gi": "0", "hugepages-2Mi": "0",
                       "memory": f"{mem_ki - res_mem_ki}Ki", "pods": str(it["pods"])}
        if it["gpu"] and gpu_allocatable != "absent":
            g = str(it["gpu"]) if gpu_allocatable is None else str(gpu_allocatable)
            capacity["nvidia.com/gpu"] = g
            allocatable["nvidia.com/gpu"] = g
        ready_at = registered_at + timedelta(seconds=9)
        heartbeat = NOW - timedelta(seconds=17 + int(hexid(node_name, 2), 16) % 30)
        conditions = []
        for t, r, msg in (("MemoryPressure", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
                          ("DiskPressure", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
                          ("PIDPressure", "KubeletHasSufficientPID", "kubelet has sufficient PID available")):
            conditions.append({"type": t, "status": "False", "reason": r, "message": msg,
                               "lastHeartbeatTime": ts(heartbeat), "lastTransitionTime": ts(registered_at)})
        if node_ready == "Unknown":
            for c in conditions:
                c.update(status="Unknown", reason="NodeStatusUnknown", message="Kubelet stopped posting node status.",
                         lastTransitionTime=ts(not_ready_since))
                c["lastHeartbeatTime"] = ts(not_ready_since - timedelta(seconds=40))
            conditions.append({"type": "Ready", "status": "Unknown", "reason": "NodeStatusUnknown",
                               "message": "Kubelet stopped posting node status.",
                               "lastHeartbeatTime": ts(not_ready_since - timedelta(seconds=40)),
                               "lastTransitionTime": ts(not_ready_since)})
            taints.append(taint("node.kubernetes.io/unreachable", effect="NoSchedule", added=not_ready_since))
            taints.append(taint("node.kubernetes.io/unreachable", effect="NoExecute",
                                added=not_ready_since + timedelta(seconds=5)))
        elif node_ready is False:
            conditions.append({"type": "Ready", "status": "False", "reason": "KubeletNotReady",
                               "message": "container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady message:Network plugin returns error: cni plugin not initialized",
                               "lastHeartbeatTime": ts(heartbeat), "lastTransitionTime": ts(not_ready_since)})
            taints.append(taint("node.kubernetes.io/not-ready", effect="NoSchedule", added=not_ready_since))
        else:
            conditions.append({"type": "Ready", "status": "True", "reason": "KubeletReady",
                               "message": "kubelet is posting ready status", "lastHeartbeatTime": ts(heartbeat),
                               "lastTransitionTime": ts(ready_at)})
        ami_name = image_id
        node = {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": meta(node_name, registered_at - timedelta(seconds=3), seed=self.s("node", node_name),
                             labels=nlabels, annotations=annotations, owners=[owner(claim, controller=False)],
                             finalizers=["karpenter.sh/termination"], deleted=deleting),
            "spec": {"providerID": provider_id},
            "status": {
                "addresses": [{"type": "InternalIP", "address": ip},
                              {"type": "InternalDNS", "address": node_name},
                              {"type": "Hostname", "address": node_name}],
                "allocatable": allocatable,
                "capacity": capacity,
                "conditions": conditions,
                "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
                "nodeInfo": {
                    "architecture": it["arch"],
                    "bootID": uid(self.s("boot", node_name)),
                    "containerRuntimeVersion": "containerd://2.1.4",
                    "kernelVersion": "6.12.46-66.121.amzn2023.x86_64" if it["arch"] == "amd64"
                    else "6.12.46-66.121.amzn2023.aarch64",
                    "kubeProxyVersion": "",
                    "kubeletVersion": self.k8s_version,
                    "machineID": hexid(self.s("mid", node_name), 32),
                    "operatingSystem": "linux",
                    "osImage": "Amazon Linux 2023.9.20251110",
                    "systemUUID": "ec2" + hexid(self.s("suid", node_name), 5) + "-" + hexid(self.s("suid2", node_name), 4)
                    + "-" + hexid(self.s("suid3", node_name), 4) + "-" + hexid(self.s("suid4", node_name), 4)
                    + "-" + hexid(self.s("suid5", node_name), 12),
                },
            },
        }
        if taints:
            node["spec"]["taints"] = taints
        self.nodes[node_name] = node
        node["_it"] = it
        node["_zone"] = zone
        node["_ip"] = ip
        node["_ami"] = ami_name
        return self.add(node)

    def managed_node(self, nodegroup, itype, zone, created, labels=None, ready=True, not_ready_since=None):
        """An EKS managed node group node (not Karpenter's)."""
        it = instance_type(itype)
        ip = self.ip_in(zone, f"mng-{nodegroup}-{ts(created)}-{itype}")
        node_name = f"ip-{ip.replace('.', '-')}.{REGION}.compute.internal"
        iid = "i-0" + hexid(self.s("iid", node_name), 16)
        mem_ki = int(it["mem_gib"] * 1024 * 1024 * 0.9875)
        res_mem_ki = (255 + 11 * it["pods"] + 100) * 1024
        nlabels = {
            "beta.kubernetes.io/arch": it["arch"], "beta.kubernetes.io/instance-type": itype,
            "beta.kubernetes.io/os": "linux", "eks.amazonaws.com/capacityType": "ON_DEMAND",
            "eks.amazonaws.com/nodegroup": nodegroup,
            "eks.amazonaws.com/nodegroup-image": "ami-0" + hexid(self.s("mngami"), 16),
            "eks.amazonaws.com/sourceLaunchTemplateId": "lt-0" + hexid(self.s("lt", nodegroup), 16),
            "eks.amazonaws.com/sourceLaunchTemplateVersion": "3",
            "failure-domain.beta.kubernetes.io/region": REGION, "failure-domain.beta.kubernetes.io/zone": zone,
            "k8s.io/cloud-provider-aws": hexid(self.s("cpaws"), 32),
            "kubernetes.io/arch": it["arch"], "kubernetes.io/hostname": node_name, "kubernetes.io/os": "linux",
            "node.kubernetes.io/instance-type": itype, "topology.k8s.aws/zone-id": ZONE_IDS[zone],
            "topology.kubernetes.io/region": REGION, "topology.kubernetes.io/zone": zone,
        }
        if labels:
            nlabels.update(labels)
        heartbeat = NOW - timedelta(seconds=21 + int(hexid(node_name, 2), 16) % 30)
        conditions = []
        for t, r, msg in (("MemoryPressure", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
                          ("DiskPressure", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
                          ("PIDPressure", "KubeletHasSufficientPID", "kubelet has sufficient PID available")):
            conditions.append({"type": t, "status": "False", "reason": r, "message": msg,
                               "lastHeartbeatTime": ts(heartbeat), "lastTransitionTime": ts(created + timedelta(seconds=20))})
        taints = []
        if ready:
            conditions.append({"type": "Ready", "status": "True", "reason": "KubeletReady",
                               "message": "kubelet is posting ready status", "lastHeartbeatTime": ts(heartbeat),
                               "lastTransitionTime": ts(created + timedelta(seconds=40))})
        else:
            for c in conditions:
                c.update(status="Unknown", reason="NodeStatusUnknown", message="Kubelet stopped posting node status.",
                         lastTransitionTime=ts(not_ready_since))
                c["lastHeartbeatTime"] = ts(not_ready_since - timedelta(seconds=40))
            conditions.append({"type": "Ready", "status": "Unknown", "reason": "NodeStatusUnknown",
                               "message": "Kubelet stopped posting node status.",
                               "lastHeartbeatTime": ts(not_ready_since - timedelta(seconds=40)),
                               "lastTransitionTime": ts(not_ready_since)})
            taints.append(taint("node.kubernetes.io/unreachable", effect="NoSchedule", added=not_ready_since))
            taints.append(taint("node.kubernetes.io/unreachable", effect="NoExecute",
                                added=not_ready_since + timedelta(seconds=5)))
        node = {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": meta(node_name, created, seed=self.s("node", node_name), labels=nlabels,
                             annotations={"alpha.kubernetes.io/provided-node-ip": ip,
                                          "node.alpha.kubernetes.io/ttl": "0",
                                          "volumes.kubernetes.io/controller-managed-attach-detach": "true"}),
            "spec": {"providerID": f"aws:///{zone}/{iid}"},
            "status": {
                "addresses": [{"type": "InternalIP", "address": ip}, {"type": "InternalDNS", "address": node_name},
                              {"type": "Hostname", "address": node_name}],
                "allocatable": {"cpu": fmt_cpu(it["cpu"] * 1000 - kube_reserved_cpu_m(it["cpu"])),
                                "ephemeral-storage": "76224326324", "hugepages-1Gi": "0", "hugepages-2Mi": "0",
                                "memory": f"{mem_ki - res_mem_ki}Ki", "pods": str(it["pods"])},
                "capacity": {"cpu": str(it["cpu"]), "ephemeral-storage": "83873772Ki", "hugepages-1Gi": "0",
                             "hugepages-2Mi": "0", "memory": f"{mem_ki}Ki", "pods": str(it["pods"])},
                "conditions": conditions,
                "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
                "nodeInfo": {"architecture": it["arch"], "bootID": uid(self.s("boot", node_name)),
                             "containerRuntimeVersion": "containerd://2.1.4",
                             "kernelVersion": "6.12.46-66.121.amzn2023.x86_64", "kubeProxyVersion": "",
                             "kubeletVersion": self.k8s_version, "machineID": hexid(self.s("mid", node_name), 32),
                             "operatingSystem": "linux", "osImage": "Amazon Linux 2023.9.20251110",
                             "systemUUID": uid(self.s("suuid", node_name))},
            },
        }
        if taints:
            node["spec"]["taints"] = taints
        node["_it"] = it
        node["_zone"] = zone
        node["_ip"] = ip
        self.nodes[node_name] = node
        return self.add(node)

    # ---- workloads -------------------------------------------------------
    def daemonset(self, namespace, name, requests, created=None, tolerations=None, node_selector=None,
                  affinity=None, labels=None, image=None, host_network=False, containers=None):
        created = created or ago(d=120)
        labels = labels or {"app.kubernetes.io/name": name}
        tolerations = tolerations if tolerations is not None else list(TOLERATE_ALL)
        tmpl_spec = {
            "containers": containers or [{"name": name, "image": image or f"public.ecr.aws/example/{name}:1.0.0",
                                          "resources": {"requests": dict(requests)}}],
            "tolerations": tolerations,
            "priorityClassName": "system-node-critical",
            "serviceAccountName": name,
        }
        if host_network:
            tmpl_spec["hostNetwork"] = True
        if node_selector:
            tmpl_spec["nodeSelector"] = dict(node_selector)
        if affinity:
            tmpl_spec["affinity"] = affinity
        ds = {
            "apiVersion": "apps/v1",
            "kind": "DaemonSet",
            "metadata": meta(name, created, namespace=namespace, seed=self.s("ds", namespace, name), generation=3,
                             labels=labels, annotations={"deprecated.daemonset.template.generation": "3"}),
            "spec": {
                "revisionHistoryLimit": 10,
                "selector": {"matchLabels": dict(labels)},
                "template": {"metadata": {"labels": dict(labels)}, "spec": tmpl_spec},
                "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 1}},
            },
            "status": {"currentNumberScheduled": 0, "desiredNumberScheduled": 0, "numberAvailable": 0,
                       "numberMisscheduled": 0, "numberReady": 0, "observedGeneration": 3,
                       "updatedNumberScheduled": 0},
        }
        ds["_hash"] = suffix(self.s("dshash", namespace, name), 10)
        self.daemonsets.append(ds)
        return self.add(ds)

    def ds_fits(self, ds, node) -> bool:
        spec = ds["spec"]["template"]["spec"]
        labels = node["metadata"]["labels"]
        for k, v in spec.get("nodeSelector", {}).items():
            if labels.get(k) != v:
                return False
        aff = spec.get("affinity", {}).get("nodeAffinity", {}).get("requiredDuringSchedulingIgnoredDuringExecution")
        if aff:
            ok_any = False
            for term in aff["nodeSelectorTerms"]:
                ok = True
                for e in term.get("matchExpressions", []):
                    val = labels.get(e["key"])
                    op = e["operator"]
                    if op == "In" and val not in e["values"]:
                        ok = False
                    if op == "NotIn" and val in e["values"]:
                        ok = False
                    if op == "Exists" and val is None:
                        ok = False
                    if op == "DoesNotExist" and val is not None:
                        ok = False
                ok_any = ok_any or ok
            if not ok_any:
                return False
        for t in node["spec"].get("taints", []):
            if t["effect"] == "PreferNoSchedule":
                continue
            if t["key"].startswith("node.kubernetes.io/"):
                continue
            if t["key"] == "karpenter.sh/disrupted":
                continue  # DaemonSet pods stay on a disrupted node
            if not tolerates(spec.get("tolerations", []), t):
                return False
        return True

    def ds_pod(self, ds, node, created=None, phase="Running", pending_message=None, pending_since=None):
        ns = ds["metadata"]["namespace"]
        node_name = node["metadata"]["name"]
        name = f"{ds['metadata']['name']}-{suffix(self.s('dspod', ns, ds['metadata']['name'], node_name))}"
        created = created or (parse_ts(node["metadata"]["creationTimestamp"]) + timedelta(seconds=2))
        tmpl = copy.deepcopy(ds["spec"]["template"])
        spec = tmpl["spec"]
        spec["affinity"] = spec.get("affinity", {})
        spec["affinity"] = copy.deepcopy(spec["affinity"])
        spec["affinity"]["nodeAffinity"] = {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node_name]}]}]}}
        tols = list(spec.get("tolerations", []))
        for t in DS_POD_TOLERATIONS:
            if t not in tols:
                tols.append(t)
        spec["tolerations"] = tols
        spec.setdefault("schedulerName", "default-scheduler")
        spec.setdefault("restartPolicy", "Always")
        spec.setdefault("dnsPolicy", "ClusterFirst")
        spec["enableServiceLinks"] = True
        spec["priority"] = 2000001000
        spec["preemptionPolicy"] = "PreemptLowerPriority"
        spec["terminationGracePeriodSeconds"] = 30
        labels = dict(tmpl["metadata"]["labels"])
        labels["controller-revision-hash"] = ds["_hash"]
        labels["pod-template-generation"] = "3"
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": meta(name, created, namespace=ns, seed=self.s("pod", ns, name), labels=labels,
                             owners=[owner(ds)], generation=1),
            "spec": spec,
        }
        if phase == "Running":
            spec["nodeName"] = node_name
            pod["status"] = running_status(spec, created, node, self, host_network=spec.get("hostNetwork", False),
                                           qos=qos_of(spec), seed=f"{ns}/{name}")
        else:
            pod["status"] = pending_status(pending_since or created, pending_message, qos_of(spec))
        st = ds["status"]
        st["desiredNumberScheduled"] += 1
        st["currentNumberScheduled"] += 1
        st["updatedNumberScheduled"] += 1
        if phase == "Running":
            st["numberReady"] += 1
            st["numberAvailable"] += 1
        else:
            st["numberUnavailable"] = st.get("numberUnavailable", 0) + 1
        self.pods.append(pod)
        return self.add(pod)

    def fill_daemonsets(self, skip=()):
        """Run every DaemonSet's pod on every node it fits (nodes that are registered)."""
        for node in list(self.nodes.values()):
            for ds in self.daemonsets:
                key = (ds["metadata"]["namespace"], ds["metadata"]["name"], node["metadata"]["name"])
                if key in skip or ds["metadata"]["name"] in skip:
                    continue
                if self.ds_fits(ds, node):
                    self.ds_pod(ds, node)

    def deployment(self, namespace, name, replicas, requests, created=None, labels=None, image=None,
                   node_selector=None, tolerations=None, affinity=None, rs_created=None, pod_annotations=None,
                   limits=None):
        created = created or ago(d=60)
        labels = labels or {"app.kubernetes.io/name": name}
        tmpl_spec = {"containers": [{"name": name, "image": image or f"{ACCOUNT}.dkr.ecr.{REGION}.amazonaws.com/{namespace}/{name}:2026.11.3",
                                     "resources": {"requests": dict(requests)}}]}
        if limits:
            tmpl_spec["containers"][0]["resources"]["limits"] = dict(limits)
        if node_selector:
            tmpl_spec["nodeSelector"] = dict(node_selector)
        if tolerations:
            tmpl_spec["tolerations"] = tolerations
        if affinity:
            tmpl_spec["affinity"] = affinity
        tmpl_meta = {"labels": dict(labels)}
        if pod_annotations:
            tmpl_meta["annotations"] = dict(pod_annotations)
        dep = {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": meta(name, created, namespace=namespace, seed=self.s("deploy", namespace, name), generation=4,
                             labels=labels, annotations={"deployment.kubernetes.io/revision": "4"}),
            "spec": {"replicas": replicas, "selector": {"matchLabels": dict(labels)},
                     "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}},
                     "template": {"metadata": tmpl_meta, "spec": tmpl_spec}},
            "status": {"observedGeneration": 4, "replicas": replicas, "updatedReplicas": replicas,
                       "readyReplicas": 0, "availableReplicas": 0},
        }
        self.add(dep)
        h = suffix(self.s("rshash", namespace, name), 10)
        rs_labels = dict(labels, **{"pod-template-hash": h})
        rs = {
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "metadata": meta(f"{name}-{h}", rs_created or created, namespace=namespace,
                             seed=self.s("rs", namespace, name, h), generation=1, labels=rs_labels,
                             annotations={"deployment.kubernetes.io/desired-replicas": str(replicas),
                                          "deployment.kubernetes.io/max-replicas": str(replicas + math.ceil(replicas * 0.25)),
                                          "deployment.kubernetes.io/revision": "4"},
                             owners=[owner(dep)]),
            "spec": {"replicas": replicas, "selector": {"matchLabels": rs_labels},
                     "template": {"metadata": dict(tmpl_meta, labels=rs_labels), "spec": copy.deepcopy(tmpl_spec)}},
            "status": {"observedGeneration": 1, "replicas": replicas, "fullyLabeledReplicas": replicas,
                       "readyReplicas": 0, "availableReplicas": 0},
        }
        rs["_deploy"] = dep
        self.add(rs)
        return rs

    def statefulset(self, namespace, name, replicas, requests, created=None, labels=None, node_selector=None,
                    tolerations=None, pod_annotations=None, affinity=None):
        created = created or ago(d=60)
        labels = labels or {"app.kubernetes.io/name": name}
        tmpl_spec = {"containers": [{"name": name, "image": f"{ACCOUNT}.dkr.ecr.{REGION}.amazonaws.com/{namespace}/{name}:2026.11.1",
                                     "resources": {"requests": dict(requests)}}]}
        if node_selector:
            tmpl_spec["nodeSelector"] = dict(node_selector)
        if tolerations:
            tmpl_spec["tolerations"] = tolerations
        if affinity:
            tmpl_spec["affinity"] = affinity
        tmpl_meta = {"labels": dict(labels)}
        if pod_annotations:
            tmpl_meta["annotations"] = dict(pod_annotations)
        sts = {
            "apiVersion": "apps/v1",
            "kind": "StatefulSet",
            "metadata": meta(name, created, namespace=namespace, seed=self.s("sts", namespace, name), generation=2,
                             labels=labels),
            "spec": {"replicas": replicas, "serviceName": name, "selector": {"matchLabels": dict(labels)},
                     "podManagementPolicy": "OrderedReady",
                     "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"partition": 0}},
                     "template": {"metadata": tmpl_meta, "spec": tmpl_spec}},
            "status": {"observedGeneration": 2, "replicas": replicas, "readyReplicas": 0, "availableReplicas": 0,
                       "currentReplicas": replicas, "updatedReplicas": replicas,
                       "currentRevision": f"{name}-{suffix(self.s('stsrev', name), 10)}",
                       "updateRevision": f"{name}-{suffix(self.s('stsrev', name), 10)}"},
        }
        sts["_rev"] = sts["status"]["currentRevision"]
        return self.add(sts)

    def job(self, namespace, name, requests, created, labels=None, node_selector=None, tolerations=None,
            pod_annotations=None, cronjob=None, affinity=None):
        labels = dict(labels or {"app.kubernetes.io/name": name})
        tmpl_spec = {"containers": [{"name": "main", "image": f"{ACCOUNT}.dkr.ecr.{REGION}.amazonaws.com/{namespace}/{name.rsplit('-', 1)[0]}:2026.11.2",
                                     "resources": {"requests": dict(requests)}}], "restartPolicy": "Never"}
        if node_selector:
            tmpl_spec["nodeSelector"] = dict(node_selector)
        if tolerations:
            tmpl_spec["tolerations"] = tolerations
        if affinity:
            tmpl_spec["affinity"] = affinity
        tmpl_meta = {"labels": dict(labels)}
        if pod_annotations:
            tmpl_meta["annotations"] = dict(pod_annotations)
        owners = None
        if cronjob is not None:
            owners = [owner(cronjob)]
        j = {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": meta(name, created, namespace=namespace, seed=self.s("job", namespace, name), generation=1,
                             labels=labels, owners=owners),
            "spec": {"backoffLimit": 2, "completions": 1, "parallelism": 1,
                     "template": {"metadata": tmpl_meta, "spec": tmpl_spec}},
            "status": {"active": 1, "startTime": ts(created), "ready": 0, "terminating": 0,
                       "uncountedTerminatedPods": {}},
        }
        j["metadata"]["labels"]["batch.kubernetes.io/job-name"] = name
        j["metadata"]["labels"]["job-name"] = name
        uidv = j["metadata"]["uid"]
        j["_podlabels"] = {"batch.kubernetes.io/controller-uid": uidv, "batch.kubernetes.io/job-name": name,
                           "controller-uid": uidv, "job-name": name}
        return self.add(j)

    def cronjob(self, namespace, name, schedule, created=None):
        created = created or ago(d=40)
        cj = {
            "apiVersion": "batch/v1",
            "kind": "CronJob",
            "metadata": meta(name, created, namespace=namespace, seed=self.s("cj", namespace, name), generation=1),
            "spec": {"schedule": schedule, "concurrencyPolicy": "Forbid", "successfulJobsHistoryLimit": 3,
                     "failedJobsHistoryLimit": 1, "suspend": False,
                     "jobTemplate": {"spec": {"template": {"spec": {"containers": [{"name": "main", "image": "x"}],
                                                                     "restartPolicy": "Never"}}}}},
            "status": {},
        }
        return self.add(cj)

    def pod(self, owner_obj, node=None, created=None, requests=None, name=None, phase=None, pending_since=None,
            pending_message=None, annotations=None, nominated_node=None, extra_labels=None, ordinal=None,
            scheduled_at=None, gated=False, containers_ready=True, spec_overrides=None):
        """A pod of a ReplicaSet / StatefulSet / Job. node=None means Pending (unschedulable)."""
        kind = owner_obj["kind"]
        ns = owner_obj["metadata"]["namespace"]
        tmpl = copy.deepcopy(owner_obj["spec"]["template"])
        spec = tmpl["spec"]
        labels = dict(tmpl["metadata"].get("labels", {}))
        if kind == "ReplicaSet":
            name = name or f"{owner_obj['metadata']['name']}-{suffix(self.s('pod', ns, owner_obj['metadata']['name'], created and ts(created), node and node['metadata']['name'], self._bump()))}"
        elif kind == "StatefulSet":
            name = name or f"{owner_obj['metadata']['name']}-{ordinal}"
            labels["apps.kubernetes.io/pod-index"] = str(ordinal)
            labels["controller-revision-hash"] = owner_obj["_rev"]
            labels["statefulset.kubernetes.io/pod-name"] = name
            spec["hostname"] = name
            spec["subdomain"] = owner_obj["spec"]["serviceName"]
        elif kind == "Job":
            name = name or f"{owner_obj['metadata']['name']}-{suffix(self.s('jobpod', ns, owner_obj['metadata']['name']))}"
            labels.update(owner_obj["_podlabels"])
        if extra_labels:
            labels.update(extra_labels)
        if requests:
            spec["containers"][0]["resources"]["requests"] = dict(requests)
        created = created or ago(d=3)
        spec.setdefault("schedulerName", "default-scheduler")
        spec.setdefault("restartPolicy", "Always")
        spec.setdefault("dnsPolicy", "ClusterFirst")
        spec["enableServiceLinks"] = True
        spec["priority"] = 0
        spec["preemptionPolicy"] = "PreemptLowerPriority"
        spec["serviceAccountName"] = spec.get("serviceAccountName", "default")
        spec["terminationGracePeriodSeconds"] = 30
        tols = list(spec.get("tolerations", []))
        for t in DEFAULT_POD_TOLERATIONS:
            if t not in tols:
                tols.append(t)
        spec["tolerations"] = tols
        if spec_overrides:
            spec.update(spec_overrides)
        ann = dict(tmpl["metadata"].get("annotations", {}))
        if annotations:
            ann.update(annotations)
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": meta(name, created, namespace=ns, seed=self.s("pod", ns, name), labels=labels,
                             annotations=ann or None, owners=[owner(owner_obj)], generation=1),
            "spec": spec,
        }
        if gated:
            spec["schedulingGates"] = [{"name": gated}]
            pod["status"] = {"phase": "Pending", "qosClass": qos_of(spec), "conditions": [
                core_cond("PodScheduled", "False", created, "SchedulingGated", "Scheduling is blocked due to non-empty scheduling gates")]}
        elif node is not None:
            spec["nodeName"] = node["metadata"]["name"]
            pod["status"] = running_status(spec, created, node, self, qos=qos_of(spec), scheduled_at=scheduled_at,
                                           phase=phase or "Running", containers_ready=containers_ready,
                                           seed=f"{ns}/{name}")
        else:
            pod["status"] = pending_status(pending_since or created, pending_message, qos_of(spec))
            if nominated_node:
                pod["status"]["nominatedNodeName"] = nominated_node
        self._count_owner(owner_obj, node is not None and (phase or "Running") == "Running" and containers_ready)
        self.pods.append(pod)
        return self.add(pod)

    def _bump(self):
        self._counter += 1
        return self._counter

    def _count_owner(self, o, ready):
        if not ready:
            return
        st = o["status"]
        if o["kind"] in ("ReplicaSet", "StatefulSet"):
            st["readyReplicas"] = st.get("readyReplicas", 0) + 1
            st["availableReplicas"] = st.get("availableReplicas", 0) + 1
            if "_deploy" in o:
                d = o["_deploy"]["status"]
                d["readyReplicas"] += 1
                d["availableReplicas"] += 1
        if o["kind"] == "Job":
            st["ready"] = st.get("ready", 0) + 1

    def pdb(self, namespace, name, selector, min_available=None, max_unavailable=None, healthy=2, expected=2,
            desired=None, allowed=None, created=None):
        created = created or ago(d=50)
        spec = {"selector": {"matchLabels": dict(selector)}}
        if min_available is not None:
            spec["minAvailable"] = min_available
        if max_unavailable is not None:
            spec["maxUnavailable"] = max_unavailable
        if desired is None:
            desired = min_available if isinstance(min_available, int) else max(expected - (max_unavailable or 0), 0)
        if allowed is None:
            allowed = max(healthy - desired, 0)
        conds = [core_cond("DisruptionAllowed", "True" if allowed > 0 else "False", ago(h=3),
                           "SufficientPods" if allowed > 0 else "InsufficientPods", "")]
        conds[0]["observedGeneration"] = 1
        obj = {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": meta(name, created, namespace=namespace, seed=self.s("pdb", namespace, name), generation=1),
            "spec": spec,
            "status": {"conditions": conds, "currentHealthy": healthy, "desiredHealthy": desired,
                       "disruptionsAllowed": allowed, "expectedPods": expected, "observedGeneration": 1},
        }
        return self.add(obj)

    def event(self, involved, reason, message, first, last=None, count=1, etype="Normal", component="karpenter",
              namespace=None, host=None, modern=False):
        """A core/v1 Event. `involved` is an object dict or a (apiVersion, kind, name, namespace, uid) tuple."""
        if isinstance(involved, dict):
            io = {"apiVersion": involved["apiVersion"], "kind": involved["kind"],
                  "name": involved["metadata"]["name"], "uid": involved["metadata"]["uid"]}
            if involved["metadata"].get("namespace"):
                io["namespace"] = involved["metadata"]["namespace"]
            if involved["kind"] != "Pod":
                io["resourceVersion"] = involved["metadata"]["resourceVersion"]
        else:
            api, kind, name, ns, u = involved
            io = {"apiVersion": api, "kind": kind, "name": name, "uid": u}
            if ns:
                io["namespace"] = ns
        ev_ns = namespace or io.get("namespace") or "default"
        last = last or first
        name = f"{io['name']}.{hexid(self.s('ev', io['name'], reason, ts(first), message), 16)}"
        ev = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": meta(name, first, namespace=ev_ns, seed=self.s("event", name)),
            "involvedObject": io,
            "reason": reason,
            "message": message,
            "type": etype,
            "count": count,
            "firstTimestamp": ts(first),
            "lastTimestamp": ts(last),
            "source": {"component": component},
            "reportingComponent": component,
            "reportingInstance": host or "",
        }
        if host:
            ev["source"]["host"] = host
        if modern:
            # kube-scheduler writes through events.k8s.io/v1; read back as core/v1 it looks like this
            ev.update({"action": "Scheduling", "eventTime": ts(first).replace("Z", ".000000Z"),
                       "firstTimestamp": None, "lastTimestamp": None, "source": {},
                       "reportingComponent": component,
                       "reportingInstance": host or f"{component}-ip-10-0-12-34"})
            del ev["count"]
            if count > 1:
                ev["series"] = {"count": count, "lastObservedTime": ts(last).replace("Z", ".000000Z")}
            ev["metadata"]["creationTimestamp"] = ts(first)
        return self.add(ev)

    def crd(self, group, plural, kind, versions, storage=None, scope="Cluster", created=None):
        """A CustomResourceDefinition (trimmed schema) serving `versions`."""
        created = created or ago(d=400)
        storage = storage or versions[-1]
        vers = []
        for v in versions:
            vers.append({
                "name": v, "served": True, "storage": v == storage,
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "apiVersion": {"type": "string"}, "kind": {"type": "string"}, "metadata": {"type": "object"},
                    "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                    "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}}},
                "subresources": {"status": {}},
            })
        name = f"{plural}.{group}"
        obj = {
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": meta(name, created, seed=self.s("crd", name), generation=1,
                             annotations={"controller-gen.kubebuilder.io/version": "v0.18.0" if "v1" in versions else "v0.13.0"}),
            "spec": {"group": group, "names": {"categories": ["karpenter"], "kind": kind, "listKind": f"{kind}List",
                                               "plural": plural, "singular": kind.lower()},
                     "scope": scope, "versions": vers},
            "status": {"acceptedNames": {"categories": ["karpenter"], "kind": kind, "listKind": f"{kind}List",
                                         "plural": plural, "singular": kind.lower()},
                       "conditions": [core_cond("NamesAccepted", "True", created, "NoConflicts", "no conflicts found"),
                                      core_cond("Established", "True", created, "InitialNamesAccepted",
                                                "the initial names have been accepted")],
                       "storedVersions": [storage]},
        }
        return self.add(obj)

    # ---- finishing -------------------------------------------------------
    def finish(self):
        """Compute NodePool status from its NodeClaims and strip helper keys."""
        for name, np_ in self.nodepools.items():
            claims = [c for c in self.nodeclaims.values()
                      if c["metadata"]["labels"].get("karpenter.sh/nodepool") == name and "capacity" in c["status"]]
            cpu = sum(parse_cpu_m(c["status"]["capacity"]["cpu"]) for c in claims)
            mem_mi = sum(int(parse_mem_ki(c["status"]["capacity"]["memory"]) // 1024) for c in claims)
            pods = sum(int(c["status"]["capacity"]["pods"]) for c in claims)
            eph_gi = sum(int(parse_mem_ki(c["status"]["capacity"]["ephemeral-storage"]) // (1024 * 1024)) for c in claims)
            res = {"cpu": fmt_cpu(cpu), "ephemeral-storage": f"{eph_gi}Gi" if eph_gi else "0",
                   "memory": fmt_mem_mi(mem_mi) if mem_mi else "0", "nodes": str(len(claims)), "pods": str(pods)}
            gpus = sum(int(c["status"]["capacity"].get("nvidia.com/gpu", 0)) for c in claims)
            if gpus:
                res["nvidia.com/gpu"] = str(gpus)
            if np_.get("_status_override"):
                res.update(np_["_status_override"])
            np_["status"]["resources"] = res
            np_["status"]["nodes"] = len(claims)
            ref = np_["spec"]["template"]["spec"]["nodeClassRef"]["name"]
            if ref in self.nodeclasses:
                np_["status"]["nodeClassObservedGeneration"] = self.nodeclasses[ref]["metadata"]["generation"]
            else:
                np_["status"].pop("nodeClassObservedGeneration", None)
            if getattr(self, "karpenter_minor", 14) < 8:
                np_["status"].pop("nodes", None)  # status.nodes arrived in v1.8
        for o in self.objects:
            for k in [k for k in o if k.startswith("_")]:
                del o[k]
        return self.objects


# --------------------------------------------------------------------------
# helpers used by the builders
# --------------------------------------------------------------------------

def parse_ts(s: str) -> datetime:
    return datetime.strptime(s, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc)


def default_amis(version: str, seed: str, k8s="1.34"):
    ver = version.lstrip("v")
    out = []
    for variant, arch in (("x86_64-standard", "amd64"), ("arm64-standard", "arm64"), ("x86_64-nvidia", "amd64"),
                          ("arm64-nvidia", "arm64"), ("x86_64-neuron", "amd64")):
        r = [{"key": "kubernetes.io/arch", "operator": "In", "values": [arch]}]
        if "nvidia" in variant:
            r.append({"key": "karpenter.k8s.aws/instance-gpu-count", "operator": "Exists"})
        elif "neuron" in variant:
            r.append({"key": "karpenter.k8s.aws/instance-accelerator-count", "operator": "Exists"})
        else:
            r.append({"key": "karpenter.k8s.aws/instance-gpu-count", "operator": "DoesNotExist"})
            r.append({"key": "karpenter.k8s.aws/instance-accelerator-count", "operator": "DoesNotExist"})
        out.append({"id": "ami-0" + hexid(f"{seed}/{ver}/{variant}", 16),
                    "name": f"amazon-eks-node-al2023-{variant}-{k8s}-v{ver}", "requirements": r})
    return out


def ami_id(version: str, seed: str, arch="amd64", gpu=False) -> str:
    variant = ("x86_64" if arch == "amd64" else "arm64") + ("-nvidia" if gpu else "-standard")
    return "ami-0" + hexid(f"{seed}/{version.lstrip('v')}/{variant}", 16)


def pick_ami(amis, it) -> str:
    want = ("x86_64" if it["arch"] == "amd64" else "arm64") + ("-nvidia" if it["gpu"] else "-standard")
    for a in amis:
        if want in a["name"]:
            return a["id"]
    return amis[0]["id"]


def qos_of(spec) -> str:
    has_req = any(c.get("resources", {}).get("requests") for c in spec["containers"])
    if not has_req:
        return "BestEffort"
    lim = [c.get("resources", {}).get("limits") for c in spec["containers"]]
    req_ = [c.get("resources", {}).get("requests") for c in spec["containers"]]
    if all(l and r and l.get("cpu") == r.get("cpu") and l.get("memory") == r.get("memory") for l, r in zip(lim, req_)):
        return "Guaranteed"
    return "Burstable"


def tolerates(tols, t) -> bool:
    for tol in tols:
        if tol.get("effect") and tol["effect"] != t["effect"]:
            continue
        op = tol.get("operator", "Equal")
        if "key" not in tol and op == "Exists":
            return True
        if tol.get("key") != t["key"]:
            continue
        if op == "Exists" or tol.get("value") == t.get("value"):
            return True
    return False


def running_status(spec, created, node, cl, host_network=False, qos="Burstable", scheduled_at=None, phase="Running",
                   containers_ready=True, seed=""):
    node_created = parse_ts(node["metadata"]["creationTimestamp"])
    start = max(created, node_created) + timedelta(seconds=3)
    sched = scheduled_at or start - timedelta(seconds=2)
    ready_at = start + timedelta(seconds=6)
    ip = node["_ip"] if host_network else cl.ip_in(node["_zone"], f"pod-{spec.get('nodeName')}-{seed}")
    statuses = []
    for c in spec["containers"]:
        st = {"name": c["name"], "image": c["image"], "imageID": "", "containerID": "containerd://" + hexid(cl.s("cid", ip, c["name"]), 64),
              "ready": containers_ready, "restartCount": 0, "started": True,
              "state": {"running": {"startedAt": ts(start + timedelta(seconds=2))}}}
        del st["imageID"]
        statuses.append(st)
    ready = "True" if containers_ready else "False"
    conds = [
        core_cond("PodReadyToStartContainers", "True", start, probe=None),
        core_cond("Initialized", "True", start - timedelta(seconds=1)),
        core_cond("Ready", ready, ready_at, None if containers_ready else "ContainersNotReady",
                  None if containers_ready else f"containers with unready status: [{spec['containers'][0]['name']}]"),
        core_cond("ContainersReady", ready, ready_at, None if containers_ready else "ContainersNotReady",
                  None if containers_ready else f"containers with unready status: [{spec['containers'][0]['name']}]"),
        core_cond("PodScheduled", "True", sched),
    ]
    return {"phase": phase, "conditions": conds, "hostIP": node["_ip"], "hostIPs": [{"ip": node["_ip"]}],
            "podIP": ip, "podIPs": [{"ip": ip}], "qosClass": qos, "startTime": ts(start),
            "containerStatuses": statuses}


def pending_status(since, message, qos):
    return {"phase": "Pending", "qosClass": qos, "conditions": [
        core_cond("PodScheduled", "False", since, "Unschedulable",
                  message or "0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector. preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling.")]}


# --------------------------------------------------------------------------
# Karpenter's requirement rendering (for FailedScheduling messages)
# --------------------------------------------------------------------------

def render_requirements(reqs: dict) -> str:
    """reqs: key -> (op, [values]). Renders like Karpenter's Requirements.String()."""
    parts = []
    for key, (op, values) in reqs.items():
        if op in ("Exists", "DoesNotExist"):
            parts.append(f"{key} {op}")
            continue
        vals = sorted(set(values))
        if len(vals) > 5:
            vals = vals[:5] + [f"and {len(vals) - 5} others"]
        parts.append(f"{key} {op} [{' '.join(vals)}]")
    parts.sort()
    return ", ".join(parts)


def pool_requirement_map(cl: Cluster, pool: str, pod_reqs=None) -> dict:
    np_ = cl.nodepools[pool]
    tmpl = np_["spec"]["template"]
    out = {}
    for r in tmpl["spec"]["requirements"]:
        out[r["key"]] = (r["operator"], r.get("values", []))
    for k, v in tmpl.get("metadata", {}).get("labels", {}).items():
        out[k] = ("In", [v])
    out["karpenter.sh/nodepool"] = ("In", [pool])
    out["karpenter.k8s.aws/ec2nodeclass"] = ("In", [tmpl["spec"]["nodeClassRef"]["name"]])
    for k, (op, vals) in (pod_reqs or {}).items():
        if k in out and out[k][0] == "In" and op == "In":
            out[k] = ("In", [v for v in out[k][1] if v in vals])
        else:
            out[k] = (op, vals)
    return out


def resources_json(res: dict) -> str:
    return json.dumps(dict(sorted(res.items())), separators=(",", ":"))


def truncate_event(msg: str, n=300) -> str:
    return msg if len(msg) <= n else msg[:n] + "..."


# --------------------------------------------------------------------------
# YAML output the way kubectl writes it (sorted keys, no wrapping)
# --------------------------------------------------------------------------

class _Dumper(yaml.SafeDumper):
    pass


_resolver = yaml.resolver.Resolver()


def _repr_str(dumper, data):
    style = None
    if data == "" or _resolver.resolve(yaml.ScalarNode, data, (True, False)) != "tag:yaml.org,2002:str":
        style = '"'
    elif "\n" in data:
        style = "|"
    return dumper.represent_scalar("tag:yaml.org,2002:str", data, style=style)


_Dumper.add_representer(str, _repr_str)


Dumper = _Dumper


def dump_docs(objs, path, header=None, as_list=False):
    with open(path, "w") as f:
        if header:
            for line in header.strip().splitlines():
                f.write(f"# {line}\n" if line else "#\n")
        if as_list:
            doc = {"apiVersion": "v1", "kind": "List", "items": objs, "metadata": {"resourceVersion": ""}}
            f.write(yaml.dump(doc, Dumper=Dumper, sort_keys=True, width=100000, default_flow_style=False,
                              allow_unicode=True))
            return
        first = True
        for o in objs:
            if not first or header:
                f.write("---\n")
            first = False
            f.write(yaml.dump(o, Dumper=Dumper, sort_keys=True, width=100000, default_flow_style=False,
                              allow_unicode=True))


def dump_yaml(obj, path, header=None):
    with open(path, "w") as f:
        if header:
            for line in header.strip().splitlines():
                f.write(f"# {line}\n" if line else "#\n")
        f.write(yaml.dump(obj, Dumper=Dumper, sort_keys=False, width=100000, default_flow_style=False,
                          allow_unicode=True))
