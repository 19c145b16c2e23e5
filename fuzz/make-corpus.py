#!/usr/bin/env python3
"""Regenerate the fuzz seed corpora (fuzz/corpus/TARGET/) and the known-bug regression
inputs (fuzz/regressions/TARGET/) from the test fixtures. Needs PyYAML.

The seeds are small on purpose (the whole tree stays well under 2 MB): real Karpenter
event messages, trimmed dumps, the lint fixtures, metrics excerpts and request lines.
Files are named by the SHA-1 of their content, as libFuzzer names what it finds.
"""

import glob
import hashlib
import json
import os
import re
import shutil
import sys

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FUZZ = os.path.join(ROOT, "fuzz")


def out_dir(kind, target):
    d = os.path.join(FUZZ, kind, target)
    os.makedirs(d, exist_ok=True)
    return d


def put(kind, target, data, name=None):
    if isinstance(data, str):
        data = data.encode()
    d = out_dir(kind, target)
    name = name or hashlib.sha1(data).hexdigest()
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def documents(path):
    """Every object of a fixture, Lists flattened."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    if path.endswith(".json"):
        docs = [json.loads(text)]
    else:
        docs = [d for d in yaml.safe_load_all(text) if d]
    out = []
    for d in docs:
        if isinstance(d, dict) and str(d.get("kind", "")).endswith("List"):
            out.extend(i for i in d.get("items") or [] if isinstance(i, dict))
        elif isinstance(d, dict):
            out.append(d)
    return out


FIXTURES = os.path.join(ROOT, "tests", "fixtures")
DUMPS = sorted(
    glob.glob(os.path.join(FIXTURES, "findings", "*", "*.yaml"))
    + [os.path.join(FIXTURES, "real", "karpenter-v1.14.1", "cluster.yaml")]
    + [os.path.join(ROOT, "demo", "cluster.yaml")]
)
DUMPS = [p for p in DUMPS if not p.endswith("expect.yaml")]


def events():
    messages = {}
    for path in DUMPS + [os.path.join(FIXTURES, "real", "karpenter-v1.14.1", "events.yaml")]:
        for o in documents(path):
            texts = []
            if o.get("kind") == "Event":
                texts.append((o.get("reason", ""), o.get("message", "")))
            for c in (o.get("status") or {}).get("conditions") or []:
                if isinstance(c, dict) and c.get("message"):
                    texts.append((c.get("reason", ""), c["message"]))
            for reason, m in texts:
                if isinstance(m, str) and m.strip():
                    # One example per shape: digits and names vary between copies.
                    shape = (reason, re.sub(r"[0-9a-z-]{5,}", "x", m)[:120])
                    messages.setdefault(shape, m)
    for m in messages.values():
        put("corpus", "events", m)
    # The unit tests' hand-written shapes of older versions and of AWS errors.
    for m in [
        'Failed to schedule pod, incompatible with nodepool "gpu", daemonset overhead={"cpu":"605m"}, '
        'did not tolerate nvidia.com/gpu=1:NoSchedule; incompatible with nodepool "app", daemonset '
        'overhead={}, incompatible requirements, label "eks.amazonaws.com/nodegroup" does not have known values',
        'Failed to schedule pod, all available instance types exceed limits for nodepool: "batch"',
        "Failed to schedule pod, pod didn\u2019t schedule because NodePool couldn\u2019t meet minValues "
        "requirements, minValues requirement is not met for label(s) "
        "(label(s)=[karpenter.k8s.aws/instance-family]) (NodePool=spot-pool)",
        "Pod should schedule on node: ip-10-0-1-2.ec2.internal",
        "Pod should schedule on: nodeclaim/default-abcde, node/ip-10-0-1-2",
        'Cannot disrupt Node: pod "web/api-0" has "karpenter.sh/do-not-disrupt" annotation',
        'Cannot disrupt NodeClaim: pdb "web/api" prevents pod evictions',
        "Pod (Pod=web/api-0, PodDisruptionBudget(s)=[web/api]) prevents pod evictions",
        "(combined from similar events): Node is nominated for a pending pod",
        "Not all pods would schedule, nodepool \"gpu\" not found",
        "Node isn't initialized",
        "No allowed disruptions due to blocking budget",
        "NodeClaim default-x7k2p event: creating instance, insufficient capacity, with fleet error(s), "
        "InsufficientInstanceCapacity: We currently do not have sufficient g6.12xlarge capacity in the "
        "Availability Zone you requested (us-west-2c). Our system will be working on provisioning "
        "additional capacity. You can currently get g6.12xlarge capacity by not specifying an "
        "Availability Zone in your request or choosing us-west-2a, us-west-2b.",
        "creating instance, insufficient capacity, with fleet error(s), UnfulfillableCapacity: Unable "
        "to fulfill capacity due to your request configuration; MaxSpotInstanceCountExceeded: Max "
        "spot instance count exceeded",
        "launching nodeclaim, creating instance, operation error EC2: CreateFleet, https response "
        "error StatusCode: 403, RequestID: x, api error UnauthorizedOperation: You are not "
        "authorized to perform this operation.",
        'instance-type="m5.large" zone=us-east-1a capacity-type=spot aws-error-code=SpotMaxPriceTooLow',
    ]:
        put("corpus", "events", m)


def values():
    seen = set()

    def one(s):
        if s not in seen:
            seen.add(s)
            put("corpus", "values", s)

    for path in DUMPS + sorted(glob.glob(os.path.join(FIXTURES, "lint", "**", "*.yaml"), recursive=True)):
        try:
            objs = documents(path)
        except Exception:  # the lint fixtures hold broken files on purpose
            continue
        for o in objs:
            if o.get("kind") != "NodePool":
                continue
            spec = o.get("spec") or {}
            d = spec.get("disruption") or {}
            for b in d.get("budgets") or []:
                lines = [str(b.get("schedule", "")), str(b.get("duration", "")), str(b.get("nodes", "10%"))]
                one("\n".join(lines) if b.get("schedule") else lines[2])
            for k in ("consolidateAfter",):
                if k in d:
                    one(str(d[k]))
            t = (spec.get("template") or {}).get("spec") or {}
            for k in ("expireAfter", "terminationGracePeriod"):
                if k in t:
                    one(str(t[k]))
            for q in (spec.get("limits") or {}).values():
                one(str(q))
    for s in [
        "@daily", "@midnight", "@hourly\n30m", "0 9 * * mon-fri\n8h\n0", "*/15 * * * *\n5m\n20%",
        "0 0 31 2 *\n1h\n0", "0-59/7 1,13 ? JAN-DEC SUN\n90m\n3", "5/10 * * * SAT,SUN",
        "0", "1h30m", "1.5h", "300ms", "-1h", "+2m", "1\u00b5s", "1\u03bcs", "9223372036854775807ns",
        "Never", "true", "100m", "1Gi", "1.5Ki", "1E", "1Ei", "1e3", ".5", "+1", "-0", "12Mi",
        "5000000000000000000000000000", "0.000000001", "1%", "100%",
    ]:
        one(s)


def metrics():
    for path in [os.path.join(ROOT, "demo", "karpenter-metrics.txt")] + sorted(
        glob.glob(os.path.join(FIXTURES, "findings", "*", "*metrics.txt"))
        + glob.glob(os.path.join(FIXTURES, "metrics", "*.txt"))
    ):
        with open(path, encoding="utf-8") as f:
            text = f.read()
        if len(text) > 16384:
            # Keep a slice of each metric family rather than the whole scrape.
            kept, per = [], {}
            for line in text.splitlines():
                name = re.split(r"[{ ]", line.lstrip("# ").removeprefix("TYPE ").removeprefix("HELP "))[0]
                per[name] = per.get(name, 0) + 1
                if per[name] <= 12:
                    kept.append(line)
            text = "\n".join(kept) + "\n"
        put("corpus", "metrics", text)
    put(
        "corpus",
        "metrics",
        '# TYPE karpenter_nodepools_cost_total gauge\nkarpenter_nodepools_cost_total{nodepool="gpu"} 12.5\n'
        'karpenter_cloudprovider_instance_type_offering_price_estimate{instance_type="g5.xlarge",'
        'zone="us-west-2a",capacity_type="spot"} 0.42\n'
        'karpenter_cloudprovider_instance_type_offering_available{instance_type="g5.xlarge",'
        'zone="us-west-2a",capacity_type="spot"} 0\n',
    )


def catalog():
    """Instance-type catalogues: kelp's own file, and the kwok provider's JSON shape."""
    with open(os.path.join(FIXTURES, "what-if", "aws-catalog.yaml"), encoding="utf-8") as f:
        put("corpus", "catalog", f.read())
    kwok = []
    for cpu in (1, 2):
        for arch in ("amd64", "arm64"):
            price = 0.025 * cpu + 0.001 * cpu * 2 * 2**30 / 1e9
            kwok.append({
                "name": f"c-{cpu}x-{arch}-linux", "architecture": arch, "operatingSystems": ["linux"],
                "resources": {"cpu": str(cpu), "memory": f"{cpu * 2}Gi", "pods": str(cpu * 16), "ephemeral-storage": "20Gi"},
                "offerings": [{"Price": price * f, "Available": True, "Requirements": [
                    {"key": "karpenter.sh/capacity-type", "operator": "In", "values": [ct]},
                    {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["test-zone-a"]}]}
                    for ct, f in (("spot", 0.7), ("on-demand", 1.0))],
            })
    put("corpus", "catalog", json.dumps(kwok))
    put("corpus", "catalog", "apiVersion: kelp.dev/v1\nkind: InstanceTypeCatalog\nsource: file\ninstanceTypes:\n"
        "- {name: x.large, capacity: {cpu: '2', memory: 8Gi}, allocatable: {cpu: 1930m, memory: 7Gi},"
        " allocatableMost: {memory: 7.5Gi}, uncertain: [kubernetes.io/arch], complete: false,"
        " labels: {kubernetes.io/arch: [amd64, arm64]}, offerings: [{zone: z, capacityType: spot, price: 0.1}]}\n")


KEEP_KINDS = {"NodePool", "NodeClaim", "EC2NodeClass", "KWOKNodeClass", "Node", "Pod",
              "Event", "PodDisruptionBudget", "DaemonSet", "CustomResourceDefinition"}


def trim(o):
    """Drop what no analysis reads, so a dump seed stays a few KB."""
    meta = o.get("metadata") or {}
    for k in ("managedFields", "resourceVersion", "generation"):
        meta.pop(k, None)
    ann = meta.get("annotations") or {}
    for k in list(ann):
        if not ("karpenter" in k or "kelp" in k):
            del ann[k]
    labels = meta.get("labels") or {}
    for k in list(labels):
        if k.startswith(("beta.", "failure-domain.", "eks.amazonaws.com/source", "k8s.io/", "controller-revision")):
            del labels[k]
    status = o.get("status")
    if isinstance(status, dict):
        for k in ("images", "containerStatuses", "initContainerStatuses", "nodeInfo", "volumesAttached",
                  "daemonEndpoints", "amis", "securityGroups", "subnets", "podIPs", "hostIPs", "podIP",
                  "hostIP", "addresses", "qosClass"):
            status.pop(k, None)
        conds = status.get("conditions")
        if isinstance(conds, list) and o.get("kind") in ("Pod", "Node"):
            status["conditions"] = [c for c in conds if c.get("type") in ("Ready", "PodScheduled")
                                    or c.get("status") != {"Node": "False", "Pod": "True"}[o["kind"]]]
    spec = o.get("spec")
    if o.get("kind") == "CustomResourceDefinition" and isinstance(spec, dict):
        for v in spec.get("versions") or []:
            v.pop("schema", None)
            v.pop("additionalPrinterColumns", None)
    if o.get("kind") == "Pod" and isinstance(spec, dict):
        for c in spec.get("containers") or []:
            for k in ("env", "volumeMounts", "ports", "livenessProbe", "readinessProbe", "command", "args",
                      "image", "imagePullPolicy", "terminationMessagePath", "terminationMessagePolicy",
                      "securityContext"):
                c.pop(k, None)
        for k in ("volumes", "dnsPolicy", "enableServiceLinks", "preemptionPolicy", "schedulerName",
                  "serviceAccountName", "serviceAccount", "restartPolicy", "securityContext"):
            spec.pop(k, None)
        tol = spec.get("tolerations")
        if isinstance(tol, list):
            spec["tolerations"] = [t for t in tol if not str(t.get("key", "")).startswith("node.kubernetes.io/")]
    return o


def dump_seed(path, as_json):
    objs = [o for o in documents(path) if o.get("kind") in KEEP_KINDS]
    running = 0
    kept = []
    for o in objs:
        o = trim(o)
        plain = not ((o.get("metadata") or {}).get("annotations"))
        if o.get("kind") == "Pod" and (o.get("status") or {}).get("phase") == "Running" and plain:
            running += 1
            if running > 2:
                continue
        kept.append(o)
    m = re.search(r"--now (\S+)", open(path, encoding="utf-8").read(400))
    lst = {"apiVersion": "v1", "kind": "List", "items": kept}
    if m:
        lst["metadata"] = {"annotations": {"kelp.dev/captured-at": m.group(1)}}
    if as_json:
        return json.dumps(lst, separators=(",", ":"))
    return yaml.safe_dump(lst, default_flow_style=None, width=200, sort_keys=False)


def dump_page():
    with open(os.path.join(ROOT, "tests", "data", "small.yaml"), encoding="utf-8") as f:
        small = f.read()
    put("corpus", "dump_page", small)
    put("corpus", "dump_page", json.dumps([d for d in yaml.safe_load_all(small) if d]))
    for i, path in enumerate(p for p in DUMPS if "/findings/" in p and p.endswith("fires.yaml")):
        text = dump_seed(path, as_json=i % 4 == 0)
        if len(text) <= 24576:
            put("corpus", "dump_page", text)
    # The real capture, cut to the Karpenter objects and the events' first few.
    real = os.path.join(FIXTURES, "real", "karpenter-v1.14.1", "cluster.yaml")
    objs = [trim(o) for o in documents(real) if o.get("kind") in {"NodePool", "NodeClaim", "KWOKNodeClass"}]
    objs = objs[:12] + [trim(o) for o in documents(real) if o.get("kind") == "Event"][:24]
    put("corpus", "dump_page", yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": objs,
        "metadata": {"annotations": {"kelp.dev/captured-at": "2026-11-21T21:42:58Z"}}},
        default_flow_style=None, width=200, sort_keys=False))


def lint():
    for path in sorted(glob.glob(os.path.join(FIXTURES, "lint", "**", "*"), recursive=True)
                       + glob.glob(os.path.join(FIXTURES, "lint", "**", ".kelp.yaml"), recursive=True)):
        if os.path.isfile(path) and os.path.getsize(path) <= 32768:
            with open(path, "rb") as f:
                put("corpus", "lint", f.read())


def router():
    sel = ["NodePool/gpu", "NodePool/default", "NodeClaim/gpu-abcde", "Node/ip-10-0-1-1",
           "Pod/ml/trainer-0", "Pod/ml", "Node/a%2Fb", "Pod//x"]
    lines = [
        "/", "/clusters/test/karpenter", "/clusters/demo/karpenter", "/clusters/nope/karpenter",
        "/clusters/ctx%2Fwith%3Aodd%20chars/karpenter", "/clusters/test/karpenter/panels",
        "/clusters/test/karpenter/events", "/clusters/demo/karpenter/nodeclaims/default",
        "/clusters/test/karpenter/nodeclaims/gpu", "/clusters/test/karpenter/pending/ml/trainer-0",
        "/clusters/demo/karpenter/pending/team-a/web-0", "/api/v1/clusters",
        "/api/v1/clusters/test/karpenter", "/api/v1/clusters/demo/nodeclaims",
        "/api/v1/clusters/test/findings", "/api/v1/clusters/test/findings?severity=critical",
        "/api/v1/clusters/test/pods/ml/trainer-0/why", "/api/v1/clusters/test/nodes/ip-10-0-1-1/why",
        "/api/openapi.yaml", "/static/kelp.js", "/static/kelp.css", "/clusters/test/karpenter?token=x&sel=NodePool/gpu",
        "HEAD /clusters/test/karpenter", "POST /api/v1/clusters", "OPTIONS *",
    ]
    lines += [f"/clusters/test/karpenter/pane?sel={s}&tab={t}" for s in sel for t in ("describe", "yaml", "events", "x")][:20]
    lines += [f"/clusters/demo/karpenter?sel={s}" for s in sel]
    for line in lines:
        put("corpus", "router", line + "\n")
    for headers in [
        "Authorization: Bearer fuzz-token",
        "Cookie: a=b; kelp_token=fuzz-token",
        "Authorization: Bearer wrong\nAccept: text/html",
        "Accept: text/event-stream\nCache-Control: no-cache",
    ]:
        put("corpus", "router", "/clusters/test/karpenter\n" + headers + "\n")
    put("corpus", "router", "/clusters/test/karpenter?token=fuzz-token&sel=Pod/ml/trainer-0\n")


def regressions():
    """Inputs that hang or crash today (known bugs being fixed): replayed by scripts/fuzz."""
    for target in ("values",):
        put("regressions", target, ", * * * *", "cron-empty-list-item-minute")
        put("regressions", target, "0 , * * 0", "cron-empty-list-item-day")
        put("regressions", target, "0 4 * * ,", "cron-empty-list-item-weekday")
        # What `scripts/fuzz 30` found in its first 30 s (the same bug).
        put("regressions", target, " , * */1 * SUN", "cron-empty-list-item-found-by-fuzzing")
    pool = ("apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: p}\nspec:\n  disruption:\n"
            "    budgets:\n    - {nodes: \"0\", schedule: \"%s\", duration: 1h}\n  template:\n    spec:\n"
            "      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}\n")
    for target in ("dump_page", "lint"):
        put("regressions", target, pool % ", * * * *", "nodepool-cron-empty-list-item-minute")
        put("regressions", target, pool % "0 , * * 0", "nodepool-cron-empty-list-item-day")
        put("regressions", target, pool % "0 4 * * ,", "nodepool-cron-empty-list-item-weekday")
        put("regressions", target, "[" * 20000, "json-array-20000-deep")
        put("regressions", target, "- " * 20000 + "x\n", "yaml-block-sequence-20000-deep")
        put("regressions", target, "a: " + "[" * 100000 + "\n", "yaml-flow-sequence-100000-deep")


def main():
    for kind in ("corpus", "regressions"):
        shutil.rmtree(os.path.join(FUZZ, kind), ignore_errors=True)
    events()
    values()
    metrics()
    catalog()
    dump_page()
    lint()
    router()
    regressions()
    total = 0
    for dirpath, _, files in os.walk(FUZZ):
        if "/target" in dirpath or "/artifacts" in dirpath:
            continue
        if dirpath.startswith(os.path.join(FUZZ, "corpus")) or dirpath.startswith(os.path.join(FUZZ, "regressions")):
            for f in files:
                total += os.path.getsize(os.path.join(dirpath, f))
    print(f"corpus and regressions: {total} bytes", file=sys.stderr)


if __name__ == "__main__":
    main()
