//! The bundled demo: a realistic dump of a cluster running Karpenter v1.14, evaluated at
//! a fixed time, so a newcomer sees every kind of finding with no cluster at hand.

use chrono::{DateTime, Utc};

use crate::model::Cluster;

/// The demo cluster (written for kelp, in the formats Karpenter really writes).
pub const CLUSTER: &str = include_str!("../demo/cluster.yaml");
/// A Karpenter controller `/metrics` excerpt for the demo (prices, offering availability).
pub const METRICS: &str = include_str!("../demo/karpenter-metrics.txt");
/// The instant the demo is evaluated at.
pub const NOW: &str = "2026-11-21T10:00:00Z";

/// Load the demo into a model.
pub fn cluster() -> crate::Result<Cluster> {
    let mut c = Cluster::default();
    crate::source::load_str("demo/cluster.yaml", CLUSTER, &mut c)?;
    c.metrics = Some(crate::source::metrics::parse(
        "demo/karpenter-metrics.txt",
        METRICS,
    )?);
    Ok(c)
}

/// The demo's clock.
pub fn now() -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(NOW)
        .map(|t| t.with_timezone(&Utc))
        .unwrap_or_default()
}

/// The demo as a dump (`kelp demo --dump`): the cluster's documents, then an empty kelp
/// List whose annotations carry the demo's clock and its controller metrics, so that
/// `--from` reads it exactly as `kelp demo` does.
pub fn dump() -> crate::Result<String> {
    let mut list = crate::source::dump::snapshot_list(Vec::new(), now());
    if let Some(a) = list
        .pointer_mut("/metadata/annotations")
        .and_then(|a| a.as_object_mut())
    {
        a.insert(
            crate::source::dump::KARPENTER_METRICS.into(),
            METRICS.into(),
        );
    }
    let stamp = serde_norway::to_string(&list).map_err(|e| crate::Error::Parse {
        path: "demo".into(),
        message: e.to_string(),
    })?;
    let mut out = String::with_capacity(CLUSTER.len() + stamp.len() + 64);
    out.push_str(CLUSTER);
    if !out.ends_with('\n') {
        out.push('\n');
    }
    out.push_str("---\n# The demo's clock and its Karpenter controller metrics, for --from.\n");
    out.push_str(&stamp);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use crate::karpenter::resources::Resources;

    /// A real node never runs more than its allocatable: the kubelet admits no pod past
    /// it. Every demo node's active pods fit, resource by resource.
    #[test]
    fn every_demo_node_holds_its_pods_within_its_allocatable() {
        let c = super::cluster().unwrap();
        let mut over = Vec::new();
        for n in c.nodes.values() {
            let alloc = Resources::from_quantities(&n.status.allocatable).unwrap();
            let mut used = Resources::default();
            for p in c.active_pods_on(&n.metadata.name) {
                used.add(p.spec.requests());
            }
            for (k, v) in &used.0 {
                if *v > alloc.get(k) + 1e-9 {
                    over.push(format!(
                        "{}: {k} {v} requested of {} allocatable",
                        n.metadata.name,
                        alloc.get(k)
                    ));
                }
            }
        }
        assert!(c.nodes.len() > 20, "the demo has its nodes");
        assert!(over.is_empty(), "{}", over.join("\n"));
    }
}
