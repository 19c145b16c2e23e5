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
