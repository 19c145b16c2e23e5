//! What a NodePool change does to pods: pending pods whose answer changes (the first pool
//! Karpenter would launch for, or none), and the pods on drifting nodes, which Karpenter must
//! place elsewhere before it replaces their node.
//!
//! Each pod is judged with the provisioning checks kelp uses for `why pod` (readiness,
//! limits, taints, requirements, instance types where a catalogue says, zone spread and
//! affinity), against the pools as they are and as the change leaves them. A drifting
//! node's pods that no pool admits any more do not go Pending: Karpenter's drift simulation
//! finds they would not schedule, says "Not all pods would schedule" and leaves the node, so
//! that node's replacement stalls (unless other nodes have room for them).

use std::collections::BTreeMap;

use serde::Serialize;

use crate::analysis::provisioning::affinity::ZoneAffinity;
use crate::analysis::provisioning::pending::provisionable;
use crate::analysis::provisioning::topology::ZoneSpread;
use crate::analysis::provisioning::{evaluate, pod_requests, pod_terms, PoolSet, Verdict};
use crate::model::*;

/// Where Karpenter would launch for a pod: the first pool that takes it, `nowhere`, or
/// `unknown` (only pools kelp cannot judge could).
pub fn placement(pools: &PoolSet, pod: &Pod) -> String {
    let requests = pod_requests(&pod.spec);
    let terms = pod_terms(&pod.spec, pools.provider);
    let spread = ZoneSpread::of(pools, pod);
    let affinity = ZoneAffinity::of(pools, pod);
    let mut unknown = false;
    for p in &pools.ordered {
        match evaluate(p, &pod.spec, &requests, &terms, &spread, &affinity).verdict {
            Verdict::Compatible => return p.name.to_string(),
            Verdict::Unknown => unknown = true,
            _ => {}
        }
    }
    if unknown { "unknown" } else { "nowhere" }.to_string()
}

/// A pod (or a workload's pods, counted) whose answer the change moves.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PodChange {
    /// `namespace/name` of the pod, or of the workload that owns the pods.
    pub pod: String,
    /// How many pods this row stands for (the replicas of one owner).
    pub pods: usize,
    /// The node they run on (running pods only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
    pub before: String,
    pub after: String,
}

/// The pods' side of a change.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PodsImpact {
    /// Pending pods whose first pool (or none) changes.
    pub pending: Vec<PodChange>,
    /// Pods on drifting nodes that no pool admits after the change: Karpenter will not
    /// replace their nodes while no other node has room for them.
    pub stranded: Vec<PodChange>,
    /// Pods on drifting nodes that a different pool would take after the change (and did
    /// not before it).
    pub moving: Vec<PodChange>,
}

/// The pods' side of a change: `before` and `after` are the pools as they are and as the
/// change leaves them; `drifting` the nodes that will drift.
pub fn pods(c: &Cluster, before: &PoolSet, after: &PoolSet, drifting: &[&str]) -> PodsImpact {
    let mut out = PodsImpact::default();
    for pod in c.unbound_pods().filter(|p| provisionable(p)) {
        let (b, a) = (placement(before, pod), placement(after, pod));
        if a != b {
            out.pending.push(PodChange {
                pod: name_of(pod),
                pods: 1,
                node: None,
                before: b,
                after: a,
            });
        }
    }
    // The replicas of one owner on one node share their answer: judged once.
    let mut groups: BTreeMap<(String, String), (usize, &Pod, String)> = BTreeMap::new();
    for node in drifting {
        let Some(n) = c.nodes.get(*node) else {
            continue;
        };
        let pool = Cluster::pool_of(&n.metadata.labels)
            .unwrap_or("")
            .to_string();
        for pod in c.pods_on(node) {
            if pod.metadata.owned_by("DaemonSet") || pod.metadata.owned_by("Node") {
                continue;
            }
            let key = (node.to_string(), owner_of(pod));
            groups.entry(key).or_insert((0, pod, pool.clone())).0 += 1;
        }
    }
    for ((node, owner), (count, pod, pool)) in groups {
        let (was, after) = (placement(before, pod), placement(after, pod));
        let row = PodChange {
            pod: owner,
            pods: count,
            node: Some(node),
            before: pool.clone(),
            after: after.clone(),
        };
        if after == "nowhere" {
            out.stranded.push(row);
        } else if after != was && after != pool && after != "unknown" {
            out.moving.push(row);
        }
    }
    out
}

fn name_of(p: &Pod) -> String {
    format!(
        "{}/{}",
        p.metadata.namespace.as_deref().unwrap_or(""),
        p.metadata.name
    )
}

/// `namespace/owner` for a pod a controller owns (a ReplicaSet's name stands for its
/// Deployment's pods), else the pod's own name.
fn owner_of(p: &Pod) -> String {
    let ns = p.metadata.namespace.as_deref().unwrap_or("");
    match p.metadata.owner_references.first() {
        Some(o) => format!("{ns}/{} {}", o.kind, o.name),
        None => name_of(p),
    }
}
