//! Kubernetes label selectors (PodDisruptionBudget `spec.selector`, pod (anti-)affinity
//! terms) and node selectors (a pod's `nodeSelector` and required node affinity) as the
//! scheduler reads them against a node's labels.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{NodeSelectorRequirement, NodeSelectorTerm};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;

use crate::model::Pod;

/// Whether `labels` match `selector`. For policy/v1 PDBs an empty selector matches every
/// pod of the namespace; an absent one matches none (the caller passes `None`).
pub fn matches(selector: Option<&LabelSelector>, labels: &BTreeMap<String, String>) -> bool {
    let Some(sel) = selector else { return false };
    let by_labels = sel
        .match_labels
        .iter()
        .flatten()
        .all(|(k, v)| labels.get(k) == Some(v));
    let by_exprs = sel.match_expressions.iter().flatten().all(|e| {
        let values = e.values.as_deref().unwrap_or_default();
        match e.operator.as_str() {
            "In" => labels.get(&e.key).is_some_and(|v| values.contains(v)),
            "NotIn" => labels.get(&e.key).is_none_or(|v| !values.contains(v)),
            "Exists" => labels.contains_key(&e.key),
            "DoesNotExist" => !labels.contains_key(&e.key),
            _ => false,
        }
    });
    by_labels && by_exprs
}

/// Whether a node with `labels` passes the pod's `nodeSelector` and its required node
/// affinity (terms ORed, each term's expressions ANDed; an empty term list matches none,
/// as the scheduler reads it).
pub fn node_fits_pod(pod: &Pod, labels: &BTreeMap<String, String>) -> bool {
    if !pod
        .spec
        .node_selector
        .iter()
        .all(|(k, v)| labels.get(k) == Some(v))
    {
        return false;
    }
    let required = pod
        .spec
        .affinity
        .as_ref()
        .and_then(|a| a.node_affinity.as_ref())
        .and_then(|n| {
            n.required_during_scheduling_ignored_during_execution
                .as_ref()
        });
    let Some(required) = required else {
        return true;
    };
    required
        .node_selector_terms
        .iter()
        .any(|t| term_matches(t, labels))
}

/// Whether a node with `labels` meets the pod's heaviest preferred node-affinity term (the
/// one Karpenter's simulation holds a pod to first, `Requirements` of v1.14.1 and v1.15);
/// true when it has none.
pub fn node_meets_preference(pod: &Pod, labels: &BTreeMap<String, String>) -> bool {
    // The first of the heaviest, as a stable sort by weight leaves it.
    let heaviest = pod
        .spec
        .preferred_node_affinity()
        .iter()
        .rev()
        .max_by_key(|t| t.weight)
        .map(|t| &t.preference);
    heaviest.is_none_or(|t| term_matches(t, labels))
}

/// One node selector term against a node's labels: its expressions ANDed (an empty term
/// matches none, as the scheduler reads it).
fn term_matches(t: &NodeSelectorTerm, labels: &BTreeMap<String, String>) -> bool {
    // matchFields (metadata.name) is a node's name, not a label.
    let fields_ok =
        t.match_fields.iter().flatten().all(|r| {
            r.key == "metadata.name" && expression(r, labels.get("kubernetes.io/hostname"))
        });
    let exprs = t.match_expressions.iter().flatten();
    (t.match_expressions.is_some() || t.match_fields.is_some())
        && fields_ok
        && exprs.clone().all(|r| expression(r, labels.get(&r.key)))
}

/// One node selector requirement against the label's value (None: no such label).
fn expression(r: &NodeSelectorRequirement, value: Option<&String>) -> bool {
    let values = r.values.as_deref().unwrap_or_default();
    let number = |s: &str| s.parse::<i64>().ok();
    match r.operator.as_str() {
        "In" => value.is_some_and(|v| values.contains(v)),
        "NotIn" => value.is_none_or(|v| !values.contains(v)),
        "Exists" => value.is_some(),
        "DoesNotExist" => value.is_none(),
        "Gt" | "Lt" => {
            let (Some(v), Some(bound)) = (
                value.and_then(|v| number(v)),
                values.first().and_then(|b| number(b)),
            ) else {
                return false;
            };
            if r.operator == "Gt" {
                v > bound
            } else {
                v < bound
            }
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelectorRequirement;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn selector_semantics() {
        let pod = labels(&[("app", "web"), ("tier", "front")]);
        assert!(!matches(None, &pod));
        assert!(matches(Some(&LabelSelector::default()), &pod));
        let sel = LabelSelector {
            match_labels: Some(labels(&[("app", "web")])),
            match_expressions: Some(vec![
                LabelSelectorRequirement {
                    key: "tier".into(),
                    operator: "In".into(),
                    values: Some(vec!["front".into()]),
                },
                LabelSelectorRequirement {
                    key: "canary".into(),
                    operator: "DoesNotExist".into(),
                    values: None,
                },
            ]),
        };
        assert!(matches(Some(&sel), &pod));
        assert!(!matches(
            Some(&sel),
            &labels(&[("app", "web"), ("tier", "back")])
        ));
        assert!(!matches(
            Some(&sel),
            &labels(&[("app", "web"), ("tier", "front"), ("canary", "1")])
        ));
        let bad = LabelSelector {
            match_expressions: Some(vec![LabelSelectorRequirement {
                key: "x".into(),
                operator: "Weird".into(),
                values: None,
            }]),
            ..Default::default()
        };
        assert!(!matches(Some(&bad), &pod));
    }
}
