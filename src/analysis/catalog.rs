//! Which instance-type catalogue a pass judges with, in order: one given to kelp
//! (`--catalog`, or embedded in a dump); the AWS provider's
//! `karpenter_cloudprovider_instance_type_*` metrics, with the labels and allocatable of
//! a node of each type where the cluster has one; the kwok provider's built-in types when
//! the pools use KWOKNodeClass. Else none, and instance types stay "unknown".

use std::collections::BTreeMap;
use std::sync::Arc;

use super::provisioning::instance_types::type_key;
use crate::karpenter::instance_types::{self as rules, GI};
use crate::karpenter::labels;
use crate::karpenter::requirements::Provider;
use crate::karpenter::resources::Resources;
use crate::model::{
    Catalog, CatalogSource, Cluster, ControllerMetrics, InstanceType, Node, TypeOffering,
};

/// The catalogue for this pass, if kelp has one.
pub fn resolve(c: &Cluster, provider: Provider) -> Option<Arc<Catalog>> {
    if let Some(given) = &c.catalog {
        return Some(given.clone());
    }
    if let Some(m) = c.metrics.as_ref().filter(|m| !m.instance_cpu.is_empty()) {
        let catalog = from_metrics(c, m);
        // Types with no available offering at all would reject every pool: a scrape
        // without offering series is no catalogue.
        if catalog
            .instance_types
            .iter()
            .any(|t| t.offerings.iter().any(|o| o.available))
        {
            return Some(Arc::new(catalog));
        }
    }
    (provider == Provider::Kwok).then(|| Arc::new(Catalog::kwok_builtin()))
}

/// The AWS provider's types from its metrics. A type a node of the cluster runs gets that
/// node's labels, capacity and allocatable (exact). Any other gets what the metrics say
/// (vCPUs, memory, offerings) and the provider's overhead as a range: its pods (and so
/// its kube-reserved memory) depend on ENI limits kelp does not know; its architecture
/// is amd64 or arm64, kelp cannot tell which; extended resources are unknown.
pub fn from_metrics(c: &Cluster, m: &ControllerMetrics) -> Catalog {
    // A node Karpenter launched carries every label of its type; prefer one.
    let mut sample: BTreeMap<&str, &Node> = BTreeMap::new();
    for n in c.nodes.values() {
        if let Some(t) = n.instance_type() {
            let karpenters = |n: &Node| n.pool().is_some();
            let e = sample.entry(t).or_insert(n);
            if !karpenters(e) && karpenters(n) {
                *e = n;
            }
        }
    }
    let mut offerings: BTreeMap<&str, Vec<TypeOffering>> = BTreeMap::new();
    for o in &m.offerings {
        offerings
            .entry(o.instance_type.as_str())
            .or_default()
            .push(TypeOffering {
                zone: o.zone.clone(),
                capacity_type: o.capacity_type.clone(),
                price: o.price,
                available: o.available.unwrap_or(true),
            });
    }
    let types = m
        .instance_cpu
        .iter()
        .filter(|(_, cores)| cores.is_finite() && **cores > 0.0)
        .map(|(name, &cores)| {
            let raw = m
                .instance_memory
                .get(name)
                .copied()
                .filter(|v| v.is_finite() && *v > 0.0);
            let mut offerings = offerings.remove(name.as_str()).unwrap_or_default();
            offerings.retain(|o| o.price.is_none_or(f64::is_finite));
            sample
                .get(name.as_str())
                .and_then(|node| from_node(name, node, offerings.clone()))
                .unwrap_or_else(|| estimated(name, cores, raw, offerings))
        })
        .collect();
    Catalog::new(CatalogSource::KarpenterMetrics, types)
}

/// A type as a node of it shows it: None when the node's quantities do not all read.
/// Only a node Karpenter launched is complete (it carries every label of its type, and the
/// AWS provider's `instance-*` labels it lacks the type does not have).
fn from_node(name: &str, node: &Node, offerings: Vec<TypeOffering>) -> Option<InstanceType> {
    let labels = node
        .metadata
        .labels
        .iter()
        .filter(|(k, _)| type_key(k))
        .map(|(k, v)| (k.clone(), vec![v.clone()]))
        .collect();
    let capacity = Resources::from_quantities(&node.status.capacity).ok()?;
    let allocatable = Resources::from_quantities(&node.status.allocatable).ok()?;
    if allocatable.0.is_empty() {
        return None;
    }
    let complete = node.pool().is_some();
    Some(InstanceType::exact(
        name,
        labels,
        capacity,
        allocatable,
        complete,
        offerings,
    ))
}

fn estimated(
    name: &str,
    cores: f64,
    raw: Option<f64>,
    offerings: Vec<TypeOffering>,
) -> InstanceType {
    let (family, size) = name.split_once('.').unwrap_or((name, ""));
    let mut labels = BTreeMap::from([
        (labels::INSTANCE_TYPE.to_string(), vec![name.to_string()]),
        (
            labels::ARCH.to_string(),
            vec!["amd64".into(), "arm64".into()],
        ),
        (labels::OS.to_string(), vec!["linux".into()]),
        (rules::AWS_FAMILY.to_string(), vec![family.to_string()]),
    ]);
    if !size.is_empty() {
        labels.insert(rules::AWS_SIZE.to_string(), vec![size.to_string()]);
    }
    // What the AWS provider derives from the name and the figures the metrics carry.
    if let Some((category, generation)) = rules::aws_category_generation(name) {
        labels.insert(rules::AWS_CATEGORY.to_string(), vec![category.to_string()]);
        labels.insert(
            rules::AWS_GENERATION.to_string(),
            vec![generation.to_string()],
        );
    }
    if cores.fract() == 0.0 {
        labels.insert(rules::AWS_CPU.to_string(), vec![format!("{cores}")]);
    }
    if let Some(mib) = raw.map(|r| r / rules::MI).filter(|m| m.fract() == 0.0) {
        labels.insert(rules::AWS_MEMORY.to_string(), vec![format!("{mib}")]);
    }
    let cpu = cores - rules::aws_kube_reserved_cpu(cores);
    let (fewest, most) = rules::aws_pods_range(cores);
    let mut capacity = BTreeMap::from([("cpu".to_string(), cores)]);
    let mut low = BTreeMap::from([
        ("cpu".to_string(), cpu),
        ("pods".to_string(), fewest),
        // The AMI's default 20Gi root volume, less 1Gi kube-reserved and 10% eviction.
        ("ephemeral-storage".to_string(), 17.0 * GI),
    ]);
    let mut high = BTreeMap::from([
        ("cpu".to_string(), cpu),
        ("pods".to_string(), most),
        ("ephemeral-storage".to_string(), 64.0 * 1024.0 * GI),
    ]);
    if let Some(raw) = raw {
        let memory = rules::aws_memory_capacity(raw);
        capacity.insert("memory".into(), memory);
        // An arm64 type has 64Mi less; kelp does not know which this one is.
        let left = |memory: f64, pods| {
            (memory - rules::aws_kube_reserved_memory(pods) - rules::AWS_EVICTION_MEMORY).max(0.0)
        };
        low.insert("memory".into(), left(memory - 64.0 * rules::MI, most));
        high.insert("memory".into(), left(memory, fewest));
    }
    InstanceType {
        name: name.into(),
        labels,
        capacity: Resources(capacity),
        allocatable: Resources(low),
        allocatable_most: Some(Resources(high)),
        uncertain: vec![labels::ARCH.to_string()],
        complete: false,
        offerings,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_type_no_node_runs_is_a_range_and_one_a_node_runs_is_exact() {
        let text = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/metrics/aws-instance-types.txt"
        ))
        .unwrap();
        let m = crate::source::metrics::parse("aws", &text).unwrap();
        let mut c = Cluster::default();
        let node: Node = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "ip-10-0-1-5.ec2.internal", "labels": {
                "node.kubernetes.io/instance-type": "m5.large", "kubernetes.io/arch": "amd64",
                "kubernetes.io/os": "linux", "karpenter.k8s.aws/instance-family": "m5",
                "karpenter.sh/nodepool": "default"}},
            "status": {"capacity": {"cpu": "2", "memory": "7910320Ki", "pods": "29"},
                       "allocatable": {"cpu": "1930m", "memory": "7220144Ki", "pods": "29"}}
        }))
        .unwrap();
        c.apply_node(node);
        let cat = from_metrics(&c, &m);
        let m5 = cat.get("m5.large").unwrap();
        assert!(m5.complete && m5.uncertain.is_empty());
        assert_eq!(m5.allocatable.get("pods"), 29.0);
        assert!(m5
            .offerings
            .iter()
            .any(|o| o.capacity_type == "spot" && o.price.is_some()));
        let c6g = cat.get("c6g.xlarge").unwrap();
        assert!(!c6g.complete);
        assert_eq!(c6g.labels[labels::ARCH], vec!["amd64", "arm64"]);
        assert_eq!(c6g.labels[rules::AWS_FAMILY], vec!["c6g"]);
        assert_eq!(c6g.labels[rules::AWS_CATEGORY], vec!["c"]);
        assert_eq!(c6g.labels[rules::AWS_GENERATION], vec!["6"]);
        assert_eq!(c6g.labels[rules::AWS_CPU], vec!["4"]);
        assert_eq!(c6g.labels[rules::AWS_MEMORY], vec!["8192"]);
        // 4 vCPU: 80m reserved; 8 GiB less 7.5%.
        assert!((c6g.allocatable.get("cpu") - 3.92).abs() < 1e-9);
        assert!(c6g.allocatable.get("memory") < c6g.allocatable_most("memory"));
    }
}
