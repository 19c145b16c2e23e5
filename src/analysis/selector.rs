//! Kubernetes label selectors (PodDisruptionBudget `spec.selector`).

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;

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
