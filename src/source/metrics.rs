//! A Karpenter controller's `/metrics` (Prometheus text exposition): offering prices and
//! availability (AWS provider), `karpenter_nodepools_cost_total` (kwok and newer cores),
//! and its voluntary disruption: eligible nodes and decisions carried out per pool.

use std::collections::BTreeMap;

use crate::error::{Error, Result};
use crate::model::{ControllerMetrics, Offering};

const PRICE: &str = "karpenter_cloudprovider_instance_type_offering_price_estimate";
const AVAILABLE: &str = "karpenter_cloudprovider_instance_type_offering_available";
const CPU: &str = "karpenter_cloudprovider_instance_type_cpu_cores";
const MEMORY: &str = "karpenter_cloudprovider_instance_type_memory_bytes";
const POOL_COST: &str = "karpenter_nodepools_cost_total";
const ELIGIBLE: &str = "karpenter_voluntary_disruption_eligible_nodes";
const DECISIONS: &str = "karpenter_voluntary_disruption_decisions_by_nodepool_total";

/// Parse a text exposition; `name` labels errors.
pub fn parse(name: &str, text: &str) -> Result<ControllerMetrics> {
    let scrape =
        prometheus_parse::Scrape::parse(text.lines().map(|l| Ok(l.to_string()))).map_err(|e| {
            Error::Parse {
                path: name.to_string(),
                message: format!("not a Prometheus text exposition: {e}"),
            }
        })?;
    let has_content = text
        .lines()
        .any(|l| !l.trim().is_empty() && !l.starts_with('#'));
    if scrape.samples.is_empty() && has_content {
        return Err(Error::Parse {
            path: name.to_string(),
            message: "not a Prometheus text exposition (no samples found)".into(),
        });
    }
    let mut offerings: BTreeMap<(String, String, String), Offering> = BTreeMap::new();
    let mut nodepool_cost = BTreeMap::new();
    let mut instance_cpu = BTreeMap::new();
    let mut instance_memory = BTreeMap::new();
    let mut eligible_nodes = BTreeMap::new();
    let mut decisions = BTreeMap::new();
    for s in &scrape.samples {
        let v = match s.value {
            prometheus_parse::Value::Gauge(v)
            | prometheus_parse::Value::Counter(v)
            | prometheus_parse::Value::Untyped(v) => v,
            _ => continue,
        };
        let label = |k: &str| s.labels.get(k).unwrap_or_default().to_string();
        match s.metric.as_str() {
            PRICE | AVAILABLE => {
                let key = (
                    label("instance_type"),
                    label("zone"),
                    label("capacity_type"),
                );
                let o = offerings.entry(key.clone()).or_insert_with(|| Offering {
                    instance_type: key.0,
                    zone: key.1,
                    capacity_type: key.2,
                    ..Offering::default()
                });
                if s.metric == PRICE {
                    o.price = Some(v);
                } else {
                    o.available = Some(v > 0.0);
                }
            }
            CPU => {
                instance_cpu.insert(label("instance_type"), v);
            }
            MEMORY => {
                instance_memory.insert(label("instance_type"), v);
            }
            POOL_COST => {
                nodepool_cost.insert(label("nodepool"), v);
            }
            ELIGIBLE => {
                eligible_nodes.insert(label("reason"), v);
            }
            // prometheus-parse keeps a counter's name without `_total` in some versions.
            m if m == DECISIONS || Some(m) == DECISIONS.strip_suffix("_total") => {
                *decisions
                    .entry((label("nodepool"), label("decision"), label("reason")))
                    .or_default() += v;
            }
            _ => {}
        }
    }
    Ok(ControllerMetrics {
        offerings: offerings.into_values().collect(),
        instance_cpu,
        instance_memory,
        nodepool_cost,
        eligible_nodes,
        decisions,
        offering_index: Default::default(),
    })
}

/// Read and parse a metrics file.
pub fn read(path: &std::path::Path) -> Result<ControllerMetrics> {
    let text = std::fs::read_to_string(path).map_err(|source| Error::Read {
        path: path.to_path_buf(),
        source,
    })?;
    parse(&path.display().to_string(), &text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offerings_and_pool_cost_are_read() {
        let text = "# TYPE karpenter_cloudprovider_instance_type_offering_price_estimate gauge\n\
karpenter_cloudprovider_instance_type_offering_price_estimate{capacity_type=\"spot\",instance_type=\"m5.large\",zone=\"us-west-2a\"} 0.035\n\
# TYPE karpenter_cloudprovider_instance_type_offering_available gauge\n\
karpenter_cloudprovider_instance_type_offering_available{capacity_type=\"spot\",instance_type=\"m5.large\",zone=\"us-west-2a\"} 0\n\
# TYPE karpenter_nodepools_cost_total gauge\n\
karpenter_nodepools_cost_total{nodepool=\"default\"} 1.25\n";
        let m = parse("m.txt", text).unwrap();
        assert_eq!(m.offerings.len(), 1);
        assert_eq!(m.offerings[0].price, Some(0.035));
        assert_eq!(m.offerings[0].available, Some(false));
        assert_eq!(m.nodepool_cost["default"], 1.25);
    }

    #[test]
    fn voluntary_disruption_is_read() {
        // As Karpenter v1.14.1 exposes them (counters with HELP/TYPE and `_total`).
        let text = "# HELP karpenter_voluntary_disruption_eligible_nodes Number of nodes eligible for disruption by Karpenter. Labeled by disruption reason.\n\
# TYPE karpenter_voluntary_disruption_eligible_nodes gauge\n\
karpenter_voluntary_disruption_eligible_nodes{reason=\"underutilized\"} 3\n\
karpenter_voluntary_disruption_eligible_nodes{reason=\"empty\"} 0\n\
# HELP karpenter_voluntary_disruption_decisions_by_nodepool_total Number of disruption decisions performed per NodePool.\n\
# TYPE karpenter_voluntary_disruption_decisions_by_nodepool_total counter\n\
karpenter_voluntary_disruption_decisions_by_nodepool_total{consolidation_type=\"single\",decision=\"delete\",nodepool=\"default\",reason=\"underutilized\"} 2\n\
karpenter_voluntary_disruption_decisions_by_nodepool_total{consolidation_type=\"multi\",decision=\"delete\",nodepool=\"default\",reason=\"underutilized\"} 1\n";
        let m = parse("m.txt", text).unwrap();
        assert_eq!(m.eligible_nodes["underutilized"], 3.0);
        let key = (
            "default".to_string(),
            "delete".to_string(),
            "underutilized".to_string(),
        );
        assert_eq!(m.decisions[&key], 3.0);
    }
}
