//! Criterion benchmarks of kelp's core passes (see bench/README.md).
//!
//! - `analyze/10k-pending-x-20-pools`: one `kelp::analysis::analyze` pass over a cluster of
//!   20 NodePools (varied taints, requirements, limits, readiness, weights) and 10,000
//!   pending, unschedulable pods (varied requests, nodeSelectors, required node affinity,
//!   tolerations), most with a Karpenter FailedScheduling event. Goal: <= 50 ms.
//! - `load_str/~20MB-dump`: parsing a ~20 MB `v1/List` JSON dump of realistic objects
//!   (bulky running pods, nodes, claims, events) into the model.
//!
//! The clusters are built outside the timed part, as JSON, and loaded with
//! `kelp::source::load_str` exactly as a dump would be. Everything is deterministic.
//!
//!     cargo bench --bench analysis

use std::hint::black_box;
use std::time::Duration;

use chrono::{DateTime, Utc};
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use serde_json::{json, Value};

use kelp::model::Cluster;

const NOW: &str = "2026-11-21T10:00:00Z";
const POOLS: usize = 20;
const PENDING: usize = 10_000;
const NODES_PER_POOL: usize = 10;
const ZONES: [&str; 4] = ["us-west-2a", "us-west-2b", "us-west-2c", "us-west-2d"];

fn now() -> DateTime<Utc> {
    NOW.parse().unwrap()
}

/// `NOW` minus some seconds, as RFC 3339.
fn ago(secs: i64) -> String {
    (now() - chrono::Duration::seconds(secs)).to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

/// A small deterministic PRNG (xorshift), so the benches need no extra crates.
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
    fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }
    fn pick<'a, T>(&mut self, xs: &'a [T]) -> &'a T {
        &xs[self.below(xs.len())]
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
}

// ------------------------------------------------------------------ NodePools

struct PoolPlan {
    name: String,
    taint: Option<Value>,
    team: Option<String>,
    arch: &'static str,
    zones: Vec<&'static str>,
    capacity: Vec<&'static str>,
    categories: Vec<&'static str>,
    weight: Option<i32>,
    ready: bool,
    /// cpu limit is already used up (status.resources cpu == limits cpu).
    at_cpu_limit: bool,
    /// small cpu headroom, so big pods exceed the remaining limit.
    tight_cpu: bool,
    /// `nodes` limit reached.
    at_node_limit: bool,
}

fn pool_plans() -> Vec<PoolPlan> {
    (0..POOLS)
        .map(|i| {
            let (name, taint, team) = match i {
                0 => (
                    "gpu".to_string(),
                    Some(json!({"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"})),
                    None,
                ),
                1 => ("default".to_string(), None, None),
                2 => (
                    "batch".to_string(),
                    Some(json!({"key": "workload", "value": "batch", "effect": "NoSchedule"})),
                    None,
                ),
                3 => (
                    "system".to_string(),
                    Some(json!({"key": "CriticalAddonsOnly", "effect": "NoSchedule"})),
                    None,
                ),
                _ if i % 3 == 0 => {
                    let n = format!("team-{i}");
                    (
                        n.clone(),
                        Some(json!({"key": "dedicated", "value": n, "effect": "NoSchedule"})),
                        Some(format!("t{i}")),
                    )
                }
                _ if i % 3 == 1 => (format!("team-{i}"), None, Some(format!("t{i}"))),
                _ => (format!("general-{i}"), None, None),
            };
            PoolPlan {
                name,
                taint,
                team,
                arch: if i % 5 == 4 { "arm64" } else { "amd64" },
                zones: match i % 4 {
                    0 => ZONES.to_vec(),
                    1 => ZONES[..2].to_vec(),
                    2 => ZONES[1..].to_vec(),
                    _ => vec![ZONES[3]],
                },
                capacity: match i % 3 {
                    0 => vec!["on-demand"],
                    1 => vec!["spot"],
                    _ => vec!["spot", "on-demand"],
                },
                categories: if i == 0 {
                    vec!["g", "p"]
                } else if i % 2 == 0 {
                    vec!["c", "m"]
                } else {
                    vec!["m", "r"]
                },
                weight: [None, Some(10), Some(50), None, Some(1)][i % 5],
                ready: i != 7,
                at_cpu_limit: i % 6 == 5,
                tight_cpu: i % 6 == 2,
                at_node_limit: i == 13,
            }
        })
        .collect()
}

fn nodepool(p: &PoolPlan, rng: &mut Rng) -> Value {
    let mut reqs = vec![
        json!({"key": "kubernetes.io/arch", "operator": "In", "values": [p.arch]}),
        json!({"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]}),
        json!({"key": "karpenter.sh/capacity-type", "operator": "In", "values": p.capacity}),
        json!({"key": "topology.kubernetes.io/zone", "operator": "In", "values": p.zones}),
        json!({"key": "karpenter.k8s.aws/instance-category", "operator": "In", "values": p.categories}),
        json!({"key": "karpenter.k8s.aws/instance-generation", "operator": "Gt", "values": ["4"]}),
    ];
    if p.name.starts_with("general") {
        reqs.push(json!({"key": "karpenter.k8s.aws/instance-size", "operator": "NotIn", "values": ["nano", "micro", "small"]}));
    }
    let mut labels = json!({});
    if let Some(t) = &p.team {
        labels["team"] = json!(t);
    }
    if p.name == "batch" {
        labels["workload"] = json!("batch");
    }
    let used_cpu = NODES_PER_POOL * 16;
    let cpu_limit = if p.at_cpu_limit {
        used_cpu
    } else if p.tight_cpu {
        used_cpu + 3
    } else {
        used_cpu * 20
    };
    let mut limits =
        json!({"cpu": cpu_limit.to_string(), "memory": format!("{}Gi", NODES_PER_POOL * 64 * 10)});
    if p.at_node_limit {
        limits["nodes"] = json!(NODES_PER_POOL.to_string());
    }
    let mut spec = json!({
        "disruption": {"consolidationPolicy": "WhenEmptyOrUnderutilized", "consolidateAfter": "1m",
                       "budgets": [{"nodes": "10%"}]},
        "limits": limits,
        "template": {
            "metadata": {"labels": labels},
            "spec": {
                "expireAfter": "720h",
                "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"},
                "requirements": reqs,
            }
        }
    });
    if let Some(t) = &p.taint {
        spec["template"]["spec"]["taints"] = json!([t]);
    }
    if let Some(w) = p.weight {
        spec["weight"] = json!(w);
    }
    let ready = if p.ready {
        json!([
            {"type": "NodeClassReady", "status": "True", "reason": "NodeClassReady", "lastTransitionTime": ago(86_400)},
            {"type": "Ready", "status": "True", "reason": "Ready", "lastTransitionTime": ago(86_400)}])
    } else {
        json!([
            {"type": "NodeClassReady", "status": "False", "reason": "NodeClassNotFound", "message": "NodeClass not found on cluster", "lastTransitionTime": ago(3_600)},
            {"type": "Ready", "status": "False", "reason": "UnhealthyDependents", "message": "NodeClassReady=False", "lastTransitionTime": ago(3_600)}])
    };
    json!({
        "apiVersion": "karpenter.sh/v1", "kind": "NodePool",
        "metadata": {"name": p.name, "uid": rng.uid(), "creationTimestamp": ago(200 * 86_400), "generation": 1,
                     "annotations": {"karpenter.sh/nodepool-hash": rng.next().to_string(), "karpenter.sh/nodepool-hash-version": "v3"}},
        "spec": spec,
        "status": {
            "conditions": ready,
            "nodes": NODES_PER_POOL,
            "resources": {"cpu": used_cpu.to_string(), "memory": format!("{}Gi", NODES_PER_POOL * 64), "pods": (NODES_PER_POOL * 58).to_string(), "nodes": NODES_PER_POOL.to_string()},
        }
    })
}

fn nodeclass() -> Value {
    json!({
        "apiVersion": "karpenter.k8s.aws/v1", "kind": "EC2NodeClass",
        "metadata": {"name": "default", "uid": "6f1f1a59-2b3c-4d5e-8f90-0a1b2c3d4e5f", "creationTimestamp": ago(300 * 86_400)},
        "spec": {"amiSelectorTerms": [{"alias": "al2023@latest"}], "role": "KarpenterNodeRole",
                 "subnetSelectorTerms": [{"tags": {"karpenter.sh/discovery": "prod"}}],
                 "securityGroupSelectorTerms": [{"tags": {"karpenter.sh/discovery": "prod"}}]},
        "status": {"conditions": [{"type": "Ready", "status": "True", "reason": "Ready", "lastTransitionTime": ago(300 * 86_400)}]}
    })
}

/// A node and its NodeClaim in a pool.
fn node_and_claim(p: &PoolPlan, k: usize, rng: &mut Rng) -> (Value, Value) {
    let node = format!(
        "ip-10-{}-{}-{}.us-west-2.compute.internal",
        k / 250,
        k % 250,
        rng.below(250)
    );
    let claim = format!("{}-{:05x}", p.name, rng.next() & 0xfffff);
    let zone = p.zones[k % p.zones.len()];
    let instance = format!("i-0{:016x}", rng.next());
    let created = ago(3_600 + rng.below(10 * 86_400) as i64);
    let (claim_uid, node_uid) = (rng.uid(), rng.uid());
    let labels = json!({
        "karpenter.sh/nodepool": p.name, "karpenter.sh/capacity-type": p.capacity[0],
        "karpenter.sh/initialized": "true", "karpenter.sh/registered": "true",
        "karpenter.k8s.aws/ec2nodeclass": "default", "node.kubernetes.io/instance-type": "m6i.4xlarge",
        "kubernetes.io/arch": p.arch, "kubernetes.io/os": "linux", "kubernetes.io/hostname": node,
        "topology.kubernetes.io/zone": zone, "topology.kubernetes.io/region": "us-west-2",
    });
    let cap = json!({"cpu": "16", "memory": "64Gi", "pods": "110", "ephemeral-storage": "100Gi"});
    let c = json!({
        "apiVersion": "karpenter.sh/v1", "kind": "NodeClaim",
        "metadata": {"name": claim, "uid": claim_uid, "creationTimestamp": created, "labels": labels,
                     "ownerReferences": [{"apiVersion": "karpenter.sh/v1", "kind": "NodePool", "name": p.name, "uid": "x"}]},
        "spec": {"expireAfter": "720h", "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"},
                 "requirements": [{"key": "karpenter.sh/nodepool", "operator": "In", "values": [p.name]}]},
        "status": {"nodeName": node, "providerID": format!("aws:///{zone}/{instance}"), "capacity": cap, "allocatable": cap,
                   "conditions": [
                       {"type": "Launched", "status": "True", "reason": "Launched", "lastTransitionTime": created},
                       {"type": "Registered", "status": "True", "reason": "Registered", "lastTransitionTime": created},
                       {"type": "Initialized", "status": "True", "reason": "Initialized", "lastTransitionTime": created},
                       {"type": "Ready", "status": "True", "reason": "Ready", "lastTransitionTime": created}]}
    });
    let mut taints = vec![];
    if let Some(t) = &p.taint {
        taints.push(t.clone());
    }
    let n = json!({
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": node, "uid": node_uid, "creationTimestamp": created, "labels": labels,
                     "annotations": {"karpenter.sh/nodepool-hash": "123", "node.alpha.kubernetes.io/ttl": "0",
                                     "volumes.kubernetes.io/controller-managed-attach-detach": "true"},
                     "ownerReferences": [{"apiVersion": "karpenter.sh/v1", "kind": "NodeClaim", "name": claim, "uid": claim_uid}]},
        "spec": {"providerID": format!("aws:///{zone}/{instance}"), "taints": taints},
        "status": {"capacity": cap, "allocatable": cap,
                   "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "kubelet is posting ready status",
                                   "lastHeartbeatTime": ago(20), "lastTransitionTime": created}],
                   "nodeInfo": {"kubeletVersion": "v1.34.1", "containerRuntimeVersion": "containerd://2.1.4", "osImage": "Amazon Linux 2023"}}
    });
    (n, c)
}

// ------------------------------------------------------------------ pods

/// A container with the bulk real pods carry (env, mounts, probes), most of which kelp skips.
fn container(name: &str, image: &str, cpu: &str, mem: &str, extra: Option<(&str, &str)>) -> Value {
    let mut requests = json!({"cpu": cpu, "memory": mem});
    let mut limits = json!({"memory": mem});
    if let Some((k, v)) = extra {
        requests[k] = json!(v);
        limits[k] = json!(v);
    }
    json!({
        "name": name, "image": image, "imagePullPolicy": "IfNotPresent",
        "env": [{"name": "APP_NAME", "value": name}, {"name": "LOG_LEVEL", "value": "info"}, {"name": "AWS_REGION", "value": "us-west-2"},
                {"name": "POD_NAME", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}}},
                {"name": "OTEL_EXPORTER_OTLP_ENDPOINT", "value": "http://otel-collector.observability.svc.cluster.local:4317"}],
        "ports": [{"containerPort": 8080, "name": "http", "protocol": "TCP"}],
        "resources": {"requests": requests, "limits": limits},
        "livenessProbe": {"httpGet": {"path": "/healthz", "port": 8080, "scheme": "HTTP"}, "periodSeconds": 10, "timeoutSeconds": 1, "failureThreshold": 3, "successThreshold": 1},
        "readinessProbe": {"httpGet": {"path": "/ready", "port": 8080, "scheme": "HTTP"}, "periodSeconds": 5, "timeoutSeconds": 1, "failureThreshold": 3, "successThreshold": 1},
        "securityContext": {"allowPrivilegeEscalation": false, "capabilities": {"drop": ["ALL"]}, "readOnlyRootFilesystem": true, "runAsNonRoot": true},
        "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File",
        "volumeMounts": [{"mountPath": "/etc/config", "name": "config", "readOnly": true}, {"mountPath": "/tmp", "name": "tmp"},
                         {"mountPath": "/var/run/secrets/kubernetes.io/serviceaccount", "name": "kube-api-access", "readOnly": true}]
    })
}

fn base_pod(ns: &str, name: &str, uid: &str, created: &str, containers: Vec<Value>) -> Value {
    let app = name.rsplitn(3, '-').last().unwrap_or(name);
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": ns, "uid": uid, "creationTimestamp": created, "generateName": format!("{app}-"),
                     "labels": {"app": app, "app.kubernetes.io/name": app, "pod-template-hash": "6d4b8f7c9", "team": ns},
                     "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": format!("{app}-6d4b8f7c9"), "uid": "rs-uid", "controller": true, "blockOwnerDeletion": true}]},
        "spec": {
            "containers": containers,
            "dnsPolicy": "ClusterFirst", "restartPolicy": "Always", "schedulerName": "default-scheduler",
            "serviceAccountName": app, "terminationGracePeriodSeconds": 30, "priority": 0,
            "securityContext": {"fsGroup": 2000, "runAsUser": 1000},
            "tolerations": [
                {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
                {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}],
            "volumes": [{"name": "config", "configMap": {"name": format!("{app}-config"), "defaultMode": 420}}, {"name": "tmp", "emptyDir": {}},
                        {"name": "kube-api-access", "projected": {"defaultMode": 420, "sources": [
                            {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                            {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
                            {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}}]}}]
        }
    })
}

/// What a pending pod asks for, so that per-NodePool verdicts differ.
#[derive(Clone, Copy, PartialEq)]
enum Shape {
    Plain,
    Big,
    Gpu,
    Zone,
    Arm,
    Team,
    Batch,
    Affinity,
    Typo,
    OnDemand,
}
const SHAPES: [Shape; 14] = [
    Shape::Plain,
    Shape::Plain,
    Shape::Plain,
    Shape::Plain,
    Shape::Big,
    Shape::Gpu,
    Shape::Zone,
    Shape::Arm,
    Shape::Team,
    Shape::Team,
    Shape::Batch,
    Shape::Affinity,
    Shape::Typo,
    Shape::OnDemand,
];

fn pending_pod(i: usize, shape: Shape, pools: &[PoolPlan], rng: &mut Rng) -> (Value, Vec<String>) {
    let ns = *rng.pick(&[
        "shop", "ml", "search", "payments", "data", "batch", "web", "api",
    ]);
    let name = format!(
        "app{}-{:x}-{:05x}",
        i % 500,
        rng.next() & 0xffffff,
        rng.next() & 0xfffff
    );
    let uid = rng.uid();
    let created = ago(30 + rng.below(7_200) as i64);
    let (cpu, mem) = *rng.pick(&[
        ("100m", "128Mi"),
        ("250m", "512Mi"),
        ("500m", "1Gi"),
        ("1", "2Gi"),
        ("2", "4Gi"),
    ]);
    let cpu = if shape == Shape::Big { "12" } else { cpu };
    let extra = (shape == Shape::Gpu).then_some(("nvidia.com/gpu", "1"));
    let mut containers = vec![container(
        "app",
        &format!(
            "123456789012.dkr.ecr.us-west-2.amazonaws.com/{ns}/app:v1.{}",
            i % 40
        ),
        cpu,
        mem,
        extra,
    )];
    if i.is_multiple_of(3) {
        containers.push(container(
            "envoy",
            "public.ecr.aws/envoy:v1.31",
            "50m",
            "64Mi",
            None,
        ));
    }
    let mut pod = base_pod(ns, &name, &uid, &created, containers);
    let spec = &mut pod["spec"];
    let tolerate = |spec: &mut Value, t: &Value| {
        let mut tol = t.clone();
        tol["operator"] = json!(if t.get("value").is_some() {
            "Equal"
        } else {
            "Exists"
        });
        spec["tolerations"].as_array_mut().unwrap().push(tol);
    };
    // Segments a v1.5+ FailedScheduling event would carry for this pod.
    let mut segments = Vec::new();
    match shape {
        Shape::Plain | Shape::Big => {}
        Shape::Gpu => {
            if rng.chance(60) {
                tolerate(spec, pools[0].taint.as_ref().unwrap());
            }
        }
        Shape::Zone => {
            spec["nodeSelector"] = json!({"topology.kubernetes.io/zone": *rng.pick(&ZONES)});
        }
        Shape::Arm => {
            spec["nodeSelector"] = json!({"kubernetes.io/arch": "arm64"});
        }
        Shape::Team => {
            let p = rng.pick(&pools[4..]);
            if let Some(team) = &p.team {
                spec["nodeSelector"] = json!({"team": team});
            }
            if let (Some(t), true) = (&p.taint, rng.chance(70)) {
                tolerate(spec, t);
            }
        }
        Shape::Batch => {
            tolerate(spec, pools[2].taint.as_ref().unwrap());
            spec["nodeSelector"] = json!({"workload": "batch"});
        }
        Shape::Affinity => {
            spec["affinity"] = json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                {"matchExpressions": [
                    {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]},
                    {"key": "karpenter.k8s.aws/instance-category", "operator": "NotIn", "values": ["t"]},
                    {"key": "karpenter.k8s.aws/instance-generation", "operator": "Gt", "values": ["5"]}]},
                {"matchExpressions": [
                    {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["us-west-2c", "us-west-2d"]},
                    {"key": "kubernetes.io/arch", "operator": "Exists"}]}]}},
                "podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 100, "podAffinityTerm": {
                    "labelSelector": {"matchLabels": {"app": "x"}}, "topologyKey": "kubernetes.io/hostname"}}]}});
        }
        Shape::Typo => {
            spec["nodeSelector"] = json!({"zone": "us-west-2a"});
            segments.push(r#"incompatible requirements, label "zone" does not have known values (typo of "topology.kubernetes.io/zone"?)"#.to_string());
        }
        Shape::OnDemand => {
            spec["nodeSelector"] =
                json!({"karpenter.sh/capacity-type": "on-demand", "kubernetes.io/os": "linux"});
        }
    }
    pod["status"] = json!({
        "phase": "Pending", "qosClass": "Burstable",
        "conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "lastProbeTime": null,
                        "lastTransitionTime": created,
                        "message": "0/200 nodes are available: 120 Insufficient cpu, 80 node(s) had untolerated taint {dedicated: team-6}. preemption: 0/200 nodes are available: 200 No preemption victims found for incoming pod."}]
    });
    (pod, segments)
}

/// Karpenter's FailedScheduling message for a pod, v1.5+ flat format (or, for some pods,
/// the v1.0-v1.4 format that wraps each pool).
fn karpenter_message(pod: &Value, extra: &[String], pools: &[PoolPlan], legacy: bool) -> String {
    let tolerated: Vec<&str> = pod["spec"]["tolerations"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["key"].as_str())
        .collect();
    let res = &pod["spec"]["containers"][0]["resources"]["requests"];
    let resources = format!(
        r#"{{"cpu":"{}","memory":"{}","pods":"1"}}"#,
        res["cpu"].as_str().unwrap(),
        res["memory"].as_str().unwrap()
    );
    let it = format!(
        "no instance type met the scheduling requirements or had a required offering, requirements=karpenter.k8s.aws/ec2nodeclass In [default], \
         karpenter.sh/capacity-type In [on-demand spot], kubernetes.io/arch In [amd64], kubernetes.io/os In [linux], \
         topology.kubernetes.io/zone In [us-west-2a us-west-2b us-west-2c us-west-2d], resources={resources}"
    );
    let mut order: Vec<&PoolPlan> = pools.iter().filter(|p| p.ready).collect();
    order.sort_by(|a, b| {
        b.weight
            .unwrap_or(0)
            .cmp(&a.weight.unwrap_or(0))
            .then_with(|| b.name.cmp(&a.name))
    });
    let mut segs = Vec::new();
    for p in order {
        let mut mine = Vec::new();
        if p.at_cpu_limit {
            mine.push(if legacy {
                format!(
                    "all available instance types exceed limits for nodepool \"{}\"",
                    p.name
                )
            } else {
                format!(
                    "all available instance types exceed limits for nodepool (NodePool={})",
                    p.name
                )
            });
        } else if let Some(t) = p
            .taint
            .as_ref()
            .filter(|t| !tolerated.contains(&t["key"].as_str().unwrap()))
        {
            let rendered = match t.get("value") {
                Some(v) => format!(
                    "{}={}:{}",
                    t["key"].as_str().unwrap(),
                    v.as_str().unwrap(),
                    t["effect"].as_str().unwrap()
                ),
                None => format!(
                    "{}:{}",
                    t["key"].as_str().unwrap(),
                    t["effect"].as_str().unwrap()
                ),
            };
            mine.push(if legacy {
                format!("did not tolerate {rendered}")
            } else {
                format!("did not tolerate taint (taint={rendered})")
            });
        } else {
            mine.extend(extra.iter().cloned());
            mine.push(it.clone());
        }
        if legacy {
            segs.push(format!(
                "incompatible with nodepool \"{}\", daemonset overhead={{\"cpu\":\"605m\",\"memory\":\"1288Mi\",\"pods\":\"12\"}}, {}",
                p.name,
                mine.join("; ")
            ));
        } else {
            for s in mine {
                if !segs.contains(&s) {
                    segs.push(s);
                }
            }
        }
    }
    format!("Failed to schedule pod, {}", segs.join("; "))
}

fn event(
    rng: &mut Rng,
    pod: &Value,
    reason: &str,
    kind: &str,
    component: &str,
    message: String,
    last: i64,
) -> Value {
    let m = &pod["metadata"];
    json!({
        "apiVersion": "v1", "kind": "Event",
        "metadata": {"name": format!("{}.{:016x}", m["name"].as_str().unwrap(), rng.next()), "namespace": m["namespace"], "uid": rng.uid(),
                     "creationTimestamp": ago(last + 600)},
        "involvedObject": {"apiVersion": "v1", "kind": "Pod", "name": m["name"], "namespace": m["namespace"], "uid": m["uid"], "resourceVersion": "123"},
        "reason": reason, "message": message, "type": kind,
        "source": {"component": component}, "reportingComponent": component, "reportingInstance": "",
        "firstTimestamp": ago(last + 600), "lastTimestamp": ago(last), "count": 1 + rng.below(20), "eventTime": null
    })
}

fn list(items: Vec<Value>) -> String {
    json!({"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": ""}, "items": items})
        .to_string()
}

/// 20 NodePools (with 10 nodes and claims each) and 10,000 pending unschedulable pods,
/// ~70% with a Karpenter FailedScheduling event, some nominated.
fn pending_cluster_json() -> String {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let pools = pool_plans();
    let mut items: Vec<Value> = pools.iter().map(|p| nodepool(p, &mut rng)).collect();
    items.push(nodeclass());
    for (pi, p) in pools.iter().enumerate() {
        for k in 0..NODES_PER_POOL {
            let (n, c) = node_and_claim(p, pi * NODES_PER_POOL + k, &mut rng);
            items.push(n);
            items.push(c);
        }
    }
    for i in 0..PENDING {
        let shape = SHAPES[i % SHAPES.len()];
        let (pod, extra) = pending_pod(i, shape, &pools, &mut rng);
        let last = rng.below(300) as i64;
        let msg = pod["status"]["conditions"][0]["message"]
            .as_str()
            .unwrap()
            .to_string();
        items.push(event(
            &mut rng,
            &pod,
            "FailedScheduling",
            "Warning",
            "default-scheduler",
            msg,
            last,
        ));
        if i % 10 < 7 {
            let m = karpenter_message(&pod, &extra, &pools, i % 10 == 6);
            items.push(event(
                &mut rng,
                &pod,
                "FailedScheduling",
                "Warning",
                "karpenter",
                m,
                last,
            ));
        } else if i % 10 == 7 {
            // Nominated long ago, then failed again: still pending, still diagnosed.
            let m = format!(
                "Pod should schedule on: nodeclaim/{}-{:05x}",
                pools[1].name,
                rng.next() & 0xfffff
            );
            items.push(event(
                &mut rng,
                &pod,
                "Nominated",
                "Normal",
                "karpenter",
                m,
                last + 900,
            ));
            let m = karpenter_message(&pod, &extra, &pools, false);
            items.push(event(
                &mut rng,
                &pod,
                "FailedScheduling",
                "Warning",
                "karpenter",
                m,
                last,
            ));
        }
        items.push(pod);
    }
    list(items)
}

/// A ~20 MB dump of the kind `kubectl get -o json` writes: bulky running pods on nodes,
/// a few pending ones, nodes, claims, pools and events.
fn dump_json(target_bytes: usize) -> String {
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    let pools = pool_plans();
    let mut items: Vec<Value> = pools.iter().map(|p| nodepool(p, &mut rng)).collect();
    items.push(nodeclass());
    let mut nodes = Vec::new();
    for (pi, p) in pools.iter().enumerate() {
        for k in 0..NODES_PER_POOL {
            let (n, c) = node_and_claim(p, pi * NODES_PER_POOL + k, &mut rng);
            nodes.push((
                n["metadata"]["name"].as_str().unwrap().to_string(),
                n["metadata"]["uid"].as_str().unwrap().to_string(),
            ));
            items.push(n);
            items.push(c);
        }
    }
    let mut size: usize = items.iter().map(|i| i.to_string().len()).sum();
    let mut i = 0;
    while size < target_bytes {
        let item = if i % 50 == 49 {
            let (pod, _) = pending_pod(i, SHAPES[i % SHAPES.len()], &pools, &mut rng);
            pod
        } else if i % 10 == 9 {
            let (pod, _) = pending_pod(i, Shape::Plain, &pools, &mut rng);
            let (node, _) = rng.pick(&nodes).clone();
            event(
                &mut rng,
                &pod,
                "Pulled",
                "Normal",
                "kubelet",
                format!("Successfully pulled image \"app:v1\" in 2.1s on {node}"),
                60,
            )
        } else {
            let (mut pod, _) = pending_pod(i, Shape::Plain, &pools, &mut rng);
            let (node, _) = rng.pick(&nodes).clone();
            let started = ago(3_600 + rng.below(86_400) as i64);
            pod["spec"]["nodeName"] = json!(node);
            let statuses: Vec<Value> = pod["spec"]["containers"].as_array().unwrap().iter().map(|c| json!({
                "name": c["name"], "image": c["image"], "imageID": format!("{}@sha256:{:016x}{:016x}", c["image"].as_str().unwrap(), rng.next(), rng.next()),
                "containerID": format!("containerd://{:016x}{:016x}", rng.next(), rng.next()), "ready": true, "started": true, "restartCount": 0,
                "lastState": {}, "state": {"running": {"startedAt": started}}})).collect();
            let conditions: Vec<Value> = ["PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady", "PodScheduled"]
                .iter()
                .map(|t| json!({"type": t, "status": "True", "lastProbeTime": null, "lastTransitionTime": started}))
                .collect();
            pod["status"] = json!({
                "phase": "Running", "qosClass": "Burstable", "hostIP": "10.0.1.2", "podIP": "10.64.1.2", "startTime": started,
                "podIPs": [{"ip": "10.64.1.2"}], "hostIPs": [{"ip": "10.0.1.2"}],
                "conditions": conditions,
                "containerStatuses": statuses,
            });
            pod
        };
        size += item.to_string().len() + 1;
        items.push(item);
        i += 1;
    }
    list(items)
}

fn benches(c: &mut Criterion) {
    let now = now();

    let text = pending_cluster_json();
    let mut cluster = Cluster::default();
    kelp::source::load_str("pending.json", &text, &mut cluster)
        .expect("the generated cluster loads");
    drop(text);
    let report = kelp::analysis::analyze(&cluster, now);
    let unschedulable = report
        .findings
        .iter()
        .filter(|f| f.code == kelp::findings::Code::PodUnschedulable)
        .count();
    eprintln!(
        "analyze input: {} NodePools, {} pods, {} events kept; {} findings ({} pod-unschedulable)",
        cluster.nodepools.len(),
        cluster.pods.len(),
        cluster.events.len(),
        report.findings.len(),
        unschedulable
    );
    assert!(
        unschedulable >= PENDING * 9 / 10,
        "most pending pods should be diagnosed"
    );
    let mut g = c.benchmark_group("analyze");
    g.sample_size(10)
        .warm_up_time(Duration::from_secs(2))
        .measurement_time(Duration::from_secs(10));
    g.bench_function("10k-pending-x-20-pools", |b| {
        b.iter_with_large_drop(|| kelp::analysis::analyze(black_box(&cluster), now))
    });
    // The same pass judging instance types from a catalogue (the kwok provider's 144
    // built-in types: every pool's template admits types, every distinct pod is filtered
    // against each), to hold the instance-type dimension's cost against the pass without.
    let mut with_catalog = std::mem::take(&mut cluster);
    with_catalog.catalog = Some(std::sync::Arc::new(kelp::model::Catalog::kwok_builtin()));
    g.bench_function("10k-pending-x-20-pools-with-catalog", |b| {
        b.iter_with_large_drop(|| kelp::analysis::analyze(black_box(&with_catalog), now))
    });
    g.finish();
    drop(with_catalog);

    // The AWS provider's catalogue as a pass builds it from Karpenter's metrics: every type
    // kelp has the facts of (1,386), offered in 3 zones x 2 capacity types, each computed
    // as the provider computes it; then the same under an EC2NodeClass with its own kubelet
    // settings (one more variant per such class, each pass).
    let mut metrics = kelp::model::ControllerMetrics::default();
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/data/aws-instance-types.tsv"
    ))
    .unwrap();
    for f in kelp::karpenter::aws::facts::rows(&text).map(Result::unwrap) {
        metrics
            .instance_cpu
            .insert(f.name.clone(), f64::from(f.vcpus));
        metrics
            .instance_memory
            .insert(f.name.clone(), f.memory_mib as f64 * 1024.0 * 1024.0);
        for zone in ["us-west-2a", "us-west-2b", "us-west-2c"] {
            for ct in ["on-demand", "spot"] {
                metrics.offerings.push(kelp::model::Offering {
                    instance_type: f.name.clone(),
                    zone: zone.into(),
                    capacity_type: ct.into(),
                    price: Some(0.1),
                    available: Some(true),
                });
            }
        }
    }
    let empty = Cluster::default();
    let tuned = kelp::karpenter::aws::Settings {
        kubelet: kelp::karpenter::aws::Kubelet {
            max_pods: Some(110),
            ..Default::default()
        },
        ..Default::default()
    };
    let mut g = c.benchmark_group("catalog");
    g.sample_size(20)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(5));
    g.bench_function("aws-metrics-1386-types", |b| {
        b.iter_with_large_drop(|| {
            kelp::analysis::catalog::from_metrics(black_box(&empty), black_box(&metrics))
        })
    });
    g.bench_function("aws-metrics-1386-types-one-class-variant", |b| {
        b.iter_with_large_drop(|| {
            kelp::analysis::catalog::with_settings(black_box(&empty), &metrics, &tuned)
        })
    });
    g.finish();

    let dump = dump_json(20_000_000);
    eprintln!("load_str input: {:.1} MB", dump.len() as f64 / 1e6);
    let mut g = c.benchmark_group("load_str");
    g.sample_size(10)
        .warm_up_time(Duration::from_secs(2))
        .measurement_time(Duration::from_secs(15));
    g.throughput(Throughput::Bytes(dump.len() as u64));
    g.bench_function("~20MB-dump", |b| {
        b.iter_with_large_drop(|| {
            let mut c = Cluster::default();
            kelp::source::load_str("dump.json", black_box(&dump), &mut c).unwrap();
            c
        })
    });
    g.finish();
}

criterion_group!(analysis, benches);
criterion_main!(analysis);
