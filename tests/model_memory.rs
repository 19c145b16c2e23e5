//! Memory per object in the model, counted exactly with a counting global allocator.
//!
//! `kelp serve` keeps the whole cluster in a [`Cluster`]; at 5,000 nodes and 150,000 pods
//! the model is most of its memory. This measures the heap the model holds per pod, per
//! node (with its NodeClaim) and per kept event, on a generated cluster shaped like
//! `bench/gen-dump.py`'s (ReplicaSet and DaemonSet pods sharing label sets, tolerations and
//! owners, a few pending pods, 30-label nodes), loaded through `load_str` exactly as a dump
//! or a watch list is. Allocation counts are deterministic, so the bound below is a
//! regression guard, not a timing.
//!
//!     cargo test --release --test model_memory -- --nocapture
//!     # the same figures for a real dump (and one analysis pass over it):
//!     KELP_MEMORY_DUMP=/tmp/kelp-bench/dump-n5000-p150000-e50000-np20-s1.json \
//!         cargo test --release --test model_memory -- --ignored --nocapture

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicIsize, AtomicUsize, Ordering::Relaxed};
use std::sync::Mutex;

use serde_json::{json, Value};

use kelp::model::Cluster;

/// Counts live heap bytes and allocations (and the high-water mark), then defers to the
/// system allocator.
struct Counting;

static LIVE: AtomicIsize = AtomicIsize::new(0);
static PEAK: AtomicIsize = AtomicIsize::new(0);
static ALLOCS: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(l) };
        if !p.is_null() {
            grew(l.size() as isize);
        }
        p
    }
    unsafe fn alloc_zeroed(&self, l: Layout) -> *mut u8 {
        let p = unsafe { System.alloc_zeroed(l) };
        if !p.is_null() {
            grew(l.size() as isize);
        }
        p
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        unsafe { System.dealloc(p, l) };
        LIVE.fetch_sub(l.size() as isize, Relaxed);
        ALLOCS.fetch_sub(1, Relaxed);
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, new: usize) -> *mut u8 {
        let q = unsafe { System.realloc(p, l, new) };
        if !q.is_null() {
            let now = LIVE.fetch_add(new as isize - l.size() as isize, Relaxed)
                + (new as isize - l.size() as isize);
            PEAK.fetch_max(now, Relaxed);
        }
        q
    }
}

fn grew(n: isize) {
    let now = LIVE.fetch_add(n, Relaxed) + n;
    PEAK.fetch_max(now, Relaxed);
    ALLOCS.fetch_add(1, Relaxed);
}

#[global_allocator]
static A: Counting = Counting;

/// Live heap bytes and live allocations.
fn live() -> (isize, isize) {
    (LIVE.load(Relaxed), ALLOCS.load(Relaxed) as isize)
}

/// The tests share one counter: run them one at a time.
static SERIAL: Mutex<()> = Mutex::new(());

/// Heap (bytes, allocations) freed by `f`.
fn freed(c: &mut Cluster, f: impl FnOnce(&mut Cluster)) -> (isize, isize) {
    let before = live();
    f(c);
    let after = live();
    (before.0 - after.0, before.1 - after.1)
}

/// What each kind holds in a loaded model: freed kind by kind.
struct Breakdown {
    pods: (usize, isize, isize),
    nodes: (usize, isize, isize),
    claims: (usize, isize, isize),
    events: (usize, isize, isize),
    total: isize,
}

fn breakdown(mut c: Cluster) -> Breakdown {
    let total_before = live().0;
    let n_pods = c.pods.len();
    let (pb, pa) = freed(&mut c, |c| {
        c.reset_pods();
        c.purge_shared();
    });
    let n_events = c.events.len();
    let (eb, ea) = freed(&mut c, |c| {
        c.reset_events();
        c.purge_shared();
    });
    let n_nodes = c.nodes.len();
    let names: Vec<String> = c.nodes.keys().cloned().collect();
    let (nb, na) = freed(&mut c, |c| {
        names.iter().for_each(|n| c.delete_node(n));
        c.purge_shared();
    });
    drop(names);
    let n_claims = c.nodeclaims.len();
    let names: Vec<String> = c.nodeclaims.keys().cloned().collect();
    let (cb, ca) = freed(&mut c, |c| {
        names.iter().for_each(|n| c.delete_nodeclaim(n));
        c.purge_shared();
    });
    drop(names);
    drop(c);
    Breakdown {
        pods: (n_pods, pb, pa),
        nodes: (n_nodes, nb, na),
        claims: (n_claims, cb, ca),
        events: (n_events, eb, ea),
        total: total_before - live().0,
    }
}

fn print(title: &str, b: &Breakdown) {
    println!("\n{title}");
    println!(
        "{:<10} {:>8} {:>12} {:>14} {:>14}",
        "kind", "count", "heap (MiB)", "bytes/object", "allocs/object"
    );
    for (kind, (n, bytes, allocs)) in [
        ("Pod", b.pods),
        ("Node", b.nodes),
        ("NodeClaim", b.claims),
        ("Event", b.events),
    ] {
        let per = |x: isize| if n == 0 { 0.0 } else { x as f64 / n as f64 };
        println!(
            "{kind:<10} {n:>8} {:>12.1} {:>14.0} {:>14.1}",
            bytes as f64 / 1048576.0,
            per(bytes),
            per(allocs)
        );
    }
    println!(
        "{:<10} {:>8} {:>12.1}",
        "all",
        "",
        b.total as f64 / 1048576.0
    );
}

// ------------------------------------------------------------------ a generated cluster

const ZONES: [&str; 4] = ["us-west-2a", "us-west-2b", "us-west-2c", "us-west-2d"];
const NAMESPACES: [&str; 8] = [
    "shop", "checkout", "payments", "search", "ml", "data", "kafka", "platform",
];
const DAEMONSETS: [(&str, &str); 4] = [
    ("kube-system", "aws-node"),
    ("kube-system", "kube-proxy"),
    ("kube-system", "ebs-csi-node"),
    ("logging", "fluent-bit"),
];

/// A small deterministic PRNG (xorshift).
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn uid(&mut self) -> String {
        let (a, b) = (self.next(), self.next());
        format!(
            "{:08x}-{:04x}-4{:03x}-a{:03x}-{:012x}",
            a >> 32,
            (a >> 16) & 0xffff,
            a & 0xfff,
            b >> 52,
            b & 0xffff_ffff_ffff
        )
    }
    fn hex(&mut self) -> String {
        format!("{:016x}{:016x}", self.next(), self.next())
    }
}

fn ts(minutes_ago: usize) -> String {
    let t = chrono::DateTime::parse_from_rfc3339("2026-11-21T10:00:00Z").unwrap()
        - chrono::Duration::minutes(minutes_ago as i64);
    t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

struct NodePlan {
    name: String,
    pool: &'static str,
    zone: &'static str,
}

fn node(r: &mut Rng, n: &NodePlan) -> [Value; 2] {
    let claim = format!("{}-{:05x}", n.pool, r.next() & 0xfffff);
    let pid = format!("aws:///{}/i-0{:016x}", n.zone, r.next());
    let mut labels = serde_json::Map::new();
    for (k, v) in [
        ("kubernetes.io/arch", "amd64"),
        ("kubernetes.io/os", "linux"),
        ("karpenter.sh/nodepool", n.pool),
        ("karpenter.sh/capacity-type", "spot"),
        ("karpenter.sh/registered", "true"),
        ("karpenter.sh/initialized", "true"),
        ("node.kubernetes.io/instance-type", "m6i.2xlarge"),
        ("topology.kubernetes.io/zone", n.zone),
        ("topology.kubernetes.io/region", "us-west-2"),
        ("kubernetes.io/hostname", &n.name),
    ] {
        labels.insert(k.into(), v.into());
    }
    for i in 0..20 {
        labels.insert(
            format!("karpenter.k8s.aws/instance-attribute-{i}"),
            format!("value-{}", i * 7 % 5).into(),
        );
    }
    let cap = json!({"cpu": "8", "memory": "32068748Ki", "pods": "58", "ephemeral-storage": "104845292Ki"});
    let conds: Vec<Value> = ["MemoryPressure", "DiskPressure", "PIDPressure", "Ready"]
        .iter()
        .map(|t| json!({"type": t, "status": if *t == "Ready" {"True"} else {"False"}, "reason": format!("Kubelet{t}"),
                        "message": "kubelet is posting ready status", "lastHeartbeatTime": ts(1), "lastTransitionTime": ts(900)}))
        .collect();
    let reqs = json!([
        {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]},
        {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["spot", "on-demand"]},
        {"key": "karpenter.k8s.aws/instance-category", "operator": "In", "values": ["c", "m", "r"]},
        {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ZONES},
        {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["m6i.2xlarge"]},
        {"key": "karpenter.sh/nodepool", "operator": "In", "values": [n.pool]},
    ]);
    let claim_conds: Vec<Value> = ["Launched", "Registered", "Initialized", "Ready"]
        .iter()
        .map(|t| json!({"type": t, "status": "True", "reason": t, "message": "", "lastTransitionTime": ts(899)}))
        .collect();
    [
        json!({"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": n.name, "uid": r.uid(), "resourceVersion": "12345", "creationTimestamp": ts(900),
                         "labels": labels, "annotations": {"karpenter.sh/nodepool-hash": "123", "node.alpha.kubernetes.io/ttl": "0"},
                         "ownerReferences": [{"apiVersion": "karpenter.sh/v1", "kind": "NodeClaim", "name": claim, "uid": r.uid()}]},
            "spec": {"providerID": pid},
            "status": {"capacity": cap, "allocatable": cap, "conditions": conds}}),
        json!({"apiVersion": "karpenter.sh/v1", "kind": "NodeClaim",
            "metadata": {"name": claim, "uid": r.uid(), "creationTimestamp": ts(901),
                         "labels": {"karpenter.sh/nodepool": n.pool, "node.kubernetes.io/instance-type": "m6i.2xlarge",
                                    "topology.kubernetes.io/zone": n.zone, "karpenter.sh/capacity-type": "spot"},
                         "annotations": {"karpenter.sh/nodepool-hash": "123", "karpenter.sh/nodepool-hash-version": "v3"}},
            "spec": {"requirements": reqs, "expireAfter": "720h",
                     "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"}},
            "status": {"nodeName": n.name, "providerID": pid, "capacity": cap, "allocatable": cap, "imageID": "ami-0123",
                       "conditions": claim_conds}}),
    ]
}

fn container(name: &str, cpu: &str, mem: &str) -> Value {
    json!({"name": name, "image": format!("registry.example/{name}:v1.2.3"), "imagePullPolicy": "IfNotPresent",
           "env": [{"name": "LOG_LEVEL", "value": "info"}, {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}],
           "resources": {"requests": {"cpu": cpu, "memory": mem}, "limits": {"memory": mem}},
           "volumeMounts": [{"mountPath": "/tmp", "name": "tmp"}], "terminationMessagePath": "/dev/termination-log"})
}

fn running_status(r: &mut Rng, node: &NodePlan, started: usize) -> Value {
    let conds: Vec<Value> = [
        "PodReadyToStartContainers",
        "Initialized",
        "Ready",
        "ContainersReady",
        "PodScheduled",
    ]
    .iter()
    .map(|t| json!({"type": t, "status": "True", "lastProbeTime": null, "lastTransitionTime": ts(started)}))
    .collect();
    json!({"phase": "Running", "conditions": conds, "hostIP": "10.0.0.1", "podIP": "10.64.1.2", "qosClass": "Burstable",
           "startTime": ts(started), "nominatedNodeName": null,
           "containerStatuses": [{"name": "app", "ready": true, "restartCount": 0, "containerID": format!("containerd://{}", r.hex()),
                                  "image": "registry.example/app:v1.2.3", "state": {"running": {"startedAt": ts(started)}},
                                  "x-node": node.name}]})
}

/// `pods` pods on `nodes` nodes: DaemonSet pods on every node, then ReplicaSet pods of
/// deployments of ~80 replicas, with 2% pending.
fn cluster_json(nodes: usize, pods: usize) -> String {
    let mut r = Rng(0x5eed);
    let pools = ["default", "spot", "batch", "system"];
    let plans: Vec<NodePlan> = (0..nodes)
        .map(|i| NodePlan {
            name: format!(
                "ip-10-{}-{}-{}.us-west-2.compute.internal",
                i / 65536,
                (i / 256) % 256,
                i % 256
            ),
            pool: pools[i % pools.len()],
            zone: ZONES[i % ZONES.len()],
        })
        .collect();
    let mut items: Vec<Value> = Vec::new();
    for n in &plans {
        items.extend(node(&mut r, n));
    }
    let pending = pods / 50;
    let ds_pods = (DAEMONSETS.len() * nodes).min(pods / 5);
    for (n, (ns, ds)) in plans
        .iter()
        .flat_map(|n| DAEMONSETS.iter().map(move |d| (n, d)))
        .take(ds_pods)
    {
        items.push(json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": format!("{ds}-{:05x}", r.next() & 0xfffff), "namespace": ns, "uid": r.uid(), "resourceVersion": "777",
                         "creationTimestamp": ts(890), "generateName": format!("{ds}-"),
                         "labels": {"app.kubernetes.io/name": ds, "controller-revision-hash": "6d4b8f7c9", "pod-template-generation": "4"},
                         "ownerReferences": [{"apiVersion": "apps/v1", "kind": "DaemonSet", "name": ds, "uid": format!("ds-{ds}"),
                                              "controller": true, "blockOwnerDeletion": true}]},
            "spec": {"nodeName": n.name, "priorityClassName": "system-node-critical", "schedulerName": "default-scheduler",
                     "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                         {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [n.name]}]}]}}},
                     "containers": [container(ds, "50m", "64Mi")],
                     "tolerations": [{"operator": "Exists"},
                                     {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"},
                                     {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute"},
                                     {"key": "node.kubernetes.io/disk-pressure", "operator": "Exists", "effect": "NoSchedule"},
                                     {"key": "node.kubernetes.io/memory-pressure", "operator": "Exists", "effect": "NoSchedule"},
                                     {"key": "node.kubernetes.io/pid-pressure", "operator": "Exists", "effect": "NoSchedule"},
                                     {"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"}]},
            "status": running_status(&mut r, n, 880)}));
    }
    let app_pods = pods - ds_pods;
    let deployments = (app_pods / 80).max(1);
    for i in 0..app_pods {
        let d = i % deployments;
        let ns = NAMESPACES[d % NAMESPACES.len()];
        let app = format!("api-worker-{d}");
        let rs = format!("{app}-7c9d{d:06x}");
        let mut containers = vec![container(
            "app",
            ["100m", "250m", "1"][d % 3],
            ["128Mi", "1Gi"][d % 2],
        )];
        for k in 1..=(d % 3) {
            containers.push(container(["envoy", "log-shipper"][k - 1], "50m", "64Mi"));
        }
        let mut spec = json!({"containers": containers, "schedulerName": "default-scheduler", "dnsPolicy": "ClusterFirst",
            "serviceAccountName": app, "terminationGracePeriodSeconds": 30,
            "tolerations": [{"effect": "NoExecute", "key": "node.kubernetes.io/not-ready", "operator": "Exists", "tolerationSeconds": 300},
                            {"effect": "NoExecute", "key": "node.kubernetes.io/unreachable", "operator": "Exists", "tolerationSeconds": 300}]});
        if d.is_multiple_of(3) {
            spec["initContainers"] = json!([container("wait-for-db", "10m", "16Mi")]);
        }
        if d % 4 == 1 {
            spec["nodeSelector"] = json!({"team": ns});
        }
        let status = if i < pending {
            json!({"phase": "Pending", "qosClass": "Burstable", "conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                   "message": "0/5000 nodes are available: 5000 Insufficient cpu.", "lastTransitionTime": ts(30)}]})
        } else {
            let n = &plans[r.below(plans.len())];
            spec["nodeName"] = json!(n.name);
            running_status(&mut r, n, 600 + i % 7000)
        };
        items.push(json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": format!("{rs}-{:05x}", r.next() & 0xfffff), "namespace": ns, "uid": r.uid(), "resourceVersion": format!("{}", 100000 + i),
                         "creationTimestamp": ts(601 + i % 7000), "generateName": format!("{rs}-"),
                         "labels": {"app": app, "app.kubernetes.io/name": app, "app.kubernetes.io/part-of": ns, "pod-template-hash": format!("7c9d{d:06x}"), "team": ns},
                         "annotations": {"prometheus.io/scrape": "true", "checksum/config": r.hex()},
                         "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": rs, "uid": format!("rs-{d}"),
                                              "controller": true, "blockOwnerDeletion": true}]},
            "spec": spec, "status": status}));
    }
    for i in 0..pending {
        let name = items[items.len() - app_pods + i]["metadata"]["name"].clone();
        let ns = items[items.len() - app_pods + i]["metadata"]["namespace"].clone();
        items.push(json!({"apiVersion": "v1", "kind": "Event",
            "metadata": {"name": format!("{}.{:x}", name.as_str().unwrap_or_default(), r.next()), "namespace": ns, "uid": r.uid()},
            "involvedObject": {"kind": "Pod", "namespace": ns, "name": name, "uid": "x"},
            "reason": "FailedScheduling", "type": "Warning", "source": {"component": "karpenter"},
            "message": "Failed to schedule pod, incompatible with nodepool \"default\", daemonset overhead={\"cpu\":\"100m\"}, no instance type satisfied resources",
            "firstTimestamp": ts(29), "lastTimestamp": ts(1), "count": 12}));
    }
    json!({"apiVersion": "v1", "kind": "List", "items": items}).to_string()
}

/// Bytes the model holds per object, for a generated 100-node, 3,000-pod cluster.
const NODES: usize = 100;
const PODS: usize = 3_000;

#[test]
fn the_model_holds_little_per_pod_and_per_node() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let text = cluster_json(NODES, PODS);
    let base = live().0;
    let mut c = Cluster::default();
    let notes = kelp::source::load_str("generated.json", &text, &mut c).unwrap();
    let model = live().0 - base;
    assert_eq!(c.pods.len(), PODS, "{notes:?}");
    assert_eq!(c.nodes.len(), NODES);
    let b = breakdown(c);
    print(
        &format!(
            "generated cluster: {NODES} nodes, {PODS} pods; JSON {:.1} MiB, model {:.2} MiB",
            text.len() as f64 / 1048576.0,
            model as f64 / 1048576.0
        ),
        &b,
    );
    let per_pod = b.pods.1 as f64 / b.pods.0 as f64;
    let per_node = (b.nodes.1 + b.claims.1) as f64 / b.nodes.0 as f64;
    // Generous bounds: a regression guard (allocation counts are deterministic).
    assert!(per_pod < 900.0, "{per_pod:.0} bytes per pod");
    assert!(
        per_node < 12_000.0,
        "{per_node:.0} bytes per node and its claim"
    );
}

/// VmRSS of this process, in bytes (0 where /proc is not there).
fn rss() -> isize {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<isize>().ok())
        .unwrap_or(0)
        * 1024
}

/// The figures for a real dump, and what one analysis pass over it holds at its peak.
#[test]
#[ignore = "needs KELP_MEMORY_DUMP=<a big dump>, see bench/README.md"]
fn memory_per_object_in_a_dump() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(path) = std::env::var_os("KELP_MEMORY_DUMP") else {
        eprintln!("set KELP_MEMORY_DUMP to a dump (bench/gen-dump.py writes one)");
        return;
    };
    let base = live().0;
    let mut c = Cluster::default();
    kelp::source::load_paths(&[path.clone().into()], &mut c).unwrap();
    let model = live().0 - base;
    let load_peak = PEAK.load(Relaxed) - base;
    println!(
        "\nafter loading: heap {:.1} MiB in {} allocations, process RSS {:.1} MiB",
        live().0 as f64 / 1048576.0,
        live().1,
        rss() as f64 / 1048576.0
    );
    // bench/gen-dump.py's clock, when the dump does not carry its capture time.
    let now = c
        .captured_at
        .unwrap_or_else(|| "2026-11-21T10:00:00Z".parse().unwrap_or_default());
    PEAK.store(live().0, Relaxed);
    let before = live().0;
    let report = kelp::analysis::analyze(&c, now);
    let held = live().0 - before;
    let pass_peak = PEAK.load(Relaxed) - before;
    println!(
        "\n{}: model {:.1} MiB (load peak {:.1} MiB); one analysis pass: {} findings, report {:.1} MiB, pass peak {:.1} MiB above the model",
        path.to_string_lossy(),
        model as f64 / 1048576.0,
        load_peak as f64 / 1048576.0,
        report.findings.len(),
        held as f64 / 1048576.0,
        pass_peak as f64 / 1048576.0,
    );
    println!(
        "after the pass: heap {:.1} MiB, process RSS {:.1} MiB",
        live().0 as f64 / 1048576.0,
        rss() as f64 / 1048576.0
    );
    drop(report);
    let b = breakdown(c);
    print("by kind", &b);
}
