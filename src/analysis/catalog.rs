//! Which instance-type catalogue a pass judges with, in order: one given to kelp
//! (`--catalog`, or embedded in a dump); the AWS provider's
//! `karpenter_cloudprovider_instance_type_*` metrics, each type computed as the provider
//! computes it from the EC2 facts kelp carries ([`aws::facts`]), per EC2NodeClass where
//! its settings move the figures; the kwok provider's built-in types when the pools use
//! KWOKNodeClass. Else none, and instance types stay "unknown".

use std::collections::BTreeMap;
use std::sync::Arc;

use super::provisioning::instance_types::type_key;
use crate::karpenter::aws::{self, Facts, Settings};
use crate::karpenter::instance_types::MI;
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
        let mut catalog = from_metrics(c, m);
        // Types with no available offering at all would reject every pool: a scrape
        // without offering series is no catalogue.
        if catalog
            .instance_types
            .iter()
            .any(|t| t.offerings.iter().any(|o| o.available))
        {
            let default = Settings::default();
            for nc in c.nodeclasses.values() {
                if let Some(settings) = nc.aws_settings().filter(|s| *s != default) {
                    let variant = with_settings(c, m, &settings);
                    catalog
                        .variants
                        .insert(nc.metadata.name.clone(), Arc::new(variant));
                }
            }
            return Some(Arc::new(catalog));
        }
    }
    (provider == Provider::Kwok).then(|| Arc::new(Catalog::kwok_builtin()))
}

/// The AWS provider's types from its metrics, under an EC2NodeClass with the default
/// settings (AL2023, no kubelet settings). See [`with_settings`].
pub fn from_metrics(c: &Cluster, m: &ControllerMetrics) -> Catalog {
    with_settings(c, m, &Settings::default())
}

/// The AWS provider's types from its metrics under `settings`. A type kelp carries the
/// facts of is computed as the provider computes it (exact), with the memory capacity of
/// a node of the type Karpenter launched where the cluster has one (the provider learns
/// it from such a node). Any other type is taken from such a node as it reports itself,
/// else estimated from the metrics' vCPUs and memory: its architecture (amd64 or arm64)
/// and pods (its ENI limits) unknown, so its allocatable is a range and its labels
/// incomplete.
pub fn with_settings(c: &Cluster, m: &ControllerMetrics, settings: &Settings) -> Catalog {
    with_facts(c, m, settings, aws::facts::get)
}

/// [`with_settings`], with the facts of each type from `facts` (a test judges kelp's
/// estimates by giving it none).
pub fn with_facts(
    c: &Cluster,
    m: &ControllerMetrics,
    settings: &Settings,
    facts: fn(&str) -> Option<&'static Facts>,
) -> Catalog {
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
            let node = sample.get(name.as_str()).filter(|n| n.pool().is_some());
            if let Some(facts) = facts(name) {
                return computed(facts, cores, raw, settings, node.copied(), offerings);
            }
            sample
                .get(name.as_str())
                .and_then(|node| from_node(name, node, offerings.clone()))
                .unwrap_or_else(|| estimated(name, cores, raw, settings, offerings))
        })
        .collect();
    Catalog::new(CatalogSource::KarpenterMetrics, types)
}

/// A type kelp has the facts of, as the provider computes it. The metrics' vCPUs and
/// memory win over the facts where they differ (the cluster's EC2 says so).
fn computed(
    facts: &Facts,
    cores: f64,
    raw: Option<f64>,
    settings: &Settings,
    node: Option<&Node>,
    offerings: Vec<TypeOffering>,
) -> InstanceType {
    let mut f = std::borrow::Cow::Borrowed(facts);
    if cores.fract() == 0.0 && cores as u32 != facts.vcpus {
        f.to_mut().vcpus = cores as u32;
    }
    if let Some(mib) = raw.map(|r| r / MI).filter(|m| m.fract() == 0.0) {
        if mib as u64 != facts.memory_mib {
            f.to_mut().memory_mib = mib as u64;
        }
    }
    let discovered = node
        .and_then(|n| n.status.capacity.get("memory"))
        .and_then(|q| crate::karpenter::resources::quantity_value(&q.0).ok());
    let r = aws::resolve(&f, settings, discovered);
    InstanceType::exact(
        &f.name,
        r.labels,
        r.capacity,
        r.allocatable,
        true,
        offerings,
    )
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

/// A type kelp has no facts of: what the provider derives from its name and the figures
/// the metrics carry, and its allocatable as the range the provider's rules give over
/// what kelp does not know (amd64 or arm64; the fewest or most pods its ENIs allow).
fn estimated(
    name: &str,
    cores: f64,
    raw: Option<f64>,
    settings: &Settings,
    offerings: Vec<TypeOffering>,
) -> InstanceType {
    let (family, size) = name.split_once('.').unwrap_or((name, ""));
    let os = match settings.family {
        aws::AmiFamily::Windows(_) => "windows",
        _ => "linux",
    };
    let mut labels = BTreeMap::from([
        (labels::INSTANCE_TYPE.to_string(), vec![name.to_string()]),
        (
            labels::ARCH.to_string(),
            vec!["amd64".into(), "arm64".into()],
        ),
        (labels::OS.to_string(), vec![os.into()]),
        (aws::FAMILY.to_string(), vec![family.to_string()]),
    ]);
    if !size.is_empty() {
        labels.insert(aws::SIZE.to_string(), vec![size.to_string()]);
    }
    if let Some((category, generation)) = aws::category_generation(name) {
        labels.insert(aws::CATEGORY.to_string(), vec![category.to_string()]);
        labels.insert(aws::GENERATION.to_string(), vec![generation.to_string()]);
    }
    if cores.fract() == 0.0 {
        labels.insert(aws::CPU.to_string(), vec![format!("{cores}")]);
    }
    let mib = raw.map(|r| (r / MI).floor() as u64);
    if let Some(mib) = raw.map(|r| r / MI).filter(|m| m.fract() == 0.0) {
        labels.insert(aws::MEMORY.to_string(), vec![format!("{mib}")]);
    }
    // The four corners of what kelp does not know, each computed as the provider would.
    let (fewest, most) = aws::pods_range(cores);
    let corner = |arch: &str, pods: f64| {
        let f = Facts {
            name: name.to_string(),
            architectures: vec![arch.to_string()],
            vcpus: cores.max(0.0) as u32,
            memory_mib: mib.unwrap_or(0),
            enis: 1,
            ipv4_per_eni: pods as u32 - 1,
            ..Facts::default()
        };
        aws::resolve(&f, settings, None)
    };
    let corners = [
        corner("x86_64", fewest),
        corner("x86_64", most),
        corner("arm64", fewest),
        corner("arm64", most),
    ];
    let bound = |pick: fn(f64, f64) -> f64| {
        let mut out = corners[0].allocatable.clone();
        for c in &corners[1..] {
            for (k, v) in &mut out.0 {
                *v = pick(*v, c.allocatable.get(k));
            }
        }
        // Not floored at 0, as the provider does not: what is below fits nothing.
        out.0.retain(|k, _| k != "memory" || mib.is_some());
        out
    };
    let mut low = bound(f64::min);
    // Instance storage may be the ephemeral storage (RAID0): kelp cannot tell how much.
    let mut high = bound(f64::max);
    if settings.raid0 {
        low.0.insert("ephemeral-storage".into(), 0.0);
        high.0.insert(
            "ephemeral-storage".into(),
            64.0 * 1024.0 * crate::karpenter::instance_types::GI,
        );
    }
    let mut capacity = BTreeMap::from([("cpu".to_string(), cores)]);
    if mib.is_some() {
        capacity.insert("memory".into(), corners[0].capacity.get("memory"));
    }
    InstanceType {
        name: name.into(),
        labels,
        capacity: Resources(capacity),
        allocatable: low,
        allocatable_most: Some(high),
        uncertain: vec![labels::ARCH.to_string()],
        complete: false,
        offerings,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_type_kelp_has_the_facts_of_is_exact_and_another_is_a_range() {
        let text = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/metrics/aws-instance-types.txt"
        ))
        .unwrap();
        let mut m = crate::source::metrics::parse("aws", &text).unwrap();
        // A type newer than kelp's facts: only what the metrics say of it.
        m.instance_cpu.insert("z9q.xlarge".into(), 4.0);
        m.instance_memory
            .insert("z9q.xlarge".into(), 8.0 * 1024.0 * MI);
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
        assert!(m5.complete && m5.uncertain.is_empty() && m5.allocatable_most.is_none());
        assert_eq!(m5.allocatable.get("pods"), 29.0);
        // The node's memory capacity, less the provider's overhead: what the node says.
        assert_eq!(m5.allocatable.get("memory"), 7220144.0 * 1024.0);
        assert!(m5
            .offerings
            .iter()
            .any(|o| o.capacity_type == "spot" && o.price.is_some()));
        // No node runs c6g.xlarge: the facts give it all the same.
        let c6g = cat.get("c6g.xlarge").unwrap();
        assert!(c6g.complete);
        assert_eq!(c6g.labels[labels::ARCH], vec!["arm64"]);
        assert_eq!(c6g.allocatable.get("pods"), 58.0);
        let z9q = cat.get("z9q.xlarge").unwrap();
        assert!(!z9q.complete);
        assert_eq!(z9q.labels[labels::ARCH], vec!["amd64", "arm64"]);
        assert_eq!(z9q.labels[aws::FAMILY], vec!["z9q"]);
        assert_eq!(z9q.labels[aws::CATEGORY], vec!["z"]);
        assert_eq!(z9q.labels[aws::GENERATION], vec!["9"]);
        assert_eq!(z9q.labels[aws::CPU], vec!["4"]);
        assert_eq!(z9q.labels[aws::MEMORY], vec!["8192"]);
        // 4 vCPU: 80m reserved.
        assert!((z9q.allocatable.get("cpu") - 3.92).abs() < 1e-9);
        assert!(z9q.allocatable.get("memory") < z9q.allocatable_most("memory"));
        assert!(z9q.allocatable.get("pods") < z9q.allocatable_most("pods"));
    }

    #[test]
    fn an_ec2nodeclass_with_kubelet_settings_gets_its_own_figures() {
        let text = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/metrics/aws-instance-types.txt"
        ))
        .unwrap();
        let mut c = Cluster::default();
        c.metrics = Some(crate::source::metrics::parse("aws", &text).unwrap());
        for (name, spec) in [
            (
                "plain",
                serde_json::json!({"amiSelectorTerms": [{"alias": "al2023@latest"}]}),
            ),
            (
                "dense",
                serde_json::json!({"amiSelectorTerms": [{"alias": "al2023@latest"}],
                                         "kubelet": {"maxPods": 110}}),
            ),
        ] {
            let mut nc: crate::model::NodeClass = serde_json::from_value(serde_json::json!({
                "metadata": {"name": name}, "spec": spec}))
            .unwrap();
            nc.kind = "EC2NodeClass".into();
            c.apply_nodeclass(nc);
        }
        let cat = resolve(&c, Provider::Aws).unwrap();
        assert!(!cat.variants.contains_key("plain"));
        let pods = |cat: &Arc<Catalog>| cat.get("m5.large").unwrap().allocatable.get("pods");
        assert_eq!(pods(cat.for_node_class(Some("plain"))), 29.0);
        assert_eq!(pods(cat.for_node_class(Some("dense"))), 110.0);
        assert_eq!(pods(cat.for_node_class(None)), 29.0);
    }
}
