//! Which of a node's pods Karpenter counts when it disrupts the node: the pods it would
//! have to place elsewhere, and whether the node is empty by its eviction costs.

use crate::model::*;

/// Pods that count on a node, those Karpenter would have to place elsewhere (v1.14.1
/// `IsReschedulable`): active ones, and a StatefulSet's pod still terminating (its
/// successor cannot start until it is gone); not DaemonSet or mirror pods.
pub fn workload_pods<'c>(c: &'c Cluster, node: &str) -> impl Iterator<Item = &'c Pod> + 'c {
    c.pods_on(node).filter(|p| {
        let m = &p.metadata;
        (p.active() || (m.deletion_timestamp.is_some() && m.owned_by("StatefulSet")))
            && !m.owned_by("DaemonSet")
            && !m.owned_by("Node")
    })
}

/// Whether Karpenter counts a node as empty: none of its workload pods costs anything to
/// evict (v1.14.1 `Candidate.IsEmpty`). Most pods cost 1; one of very low priority or
/// deletion cost costs nothing, and a node of only such pods is deleted as empty.
pub fn karpenter_empty(c: &Cluster, node: &str) -> bool {
    use crate::karpenter::eviction;
    eviction::empty(workload_pods(c, node).map(|p| {
        let a = &p.metadata.annotations;
        eviction::cost(
            a.get(eviction::DISRUPTION_COST).map(String::as_str),
            a.get(crate::model::POD_DELETION_COST).map(String::as_str),
            p.spec.priority,
        )
    }))
}
