//! Node-selector requirement semantics as Karpenter v1.14 computes them (its
//! `scheduling.Requirements`): per label key a value set or its complement plus
//! inclusive integer bounds, intersected per key; the pod-vs-NodePool-template
//! compatibility check with its exact error wording; the well-known, aliased and
//! restricted label sets (core and per provider); and the pod validation Karpenter
//! runs before it schedules a pod.
//!
//! By concern:
//! - [`labels`]: the label sets and the [`Provider`] that widens them;
//! - [`set`]: [`Requirements`] (parsing, intersection, rendering) and [`compatible`];
//! - [`validation`]: the pod validation before scheduling.
//!
//! Every public item is re-exported here, so `crate::karpenter::requirements::*` paths
//! are unchanged.

pub mod labels;
pub mod set;
pub mod validation;

pub use labels::{
    is_well_known, is_well_known_for, normalize_key, Provider, AWS_WELL_KNOWN_LABELS,
    KWOK_WELL_KNOWN_LABELS, WELL_KNOWN_LABELS,
};
pub use set::{
    compatible, labels_fit, Incompatibility, Operator, Requirement, RequirementError, Requirements,
};
pub use validation::{
    heaviest_preferred, validate_pod_requirements, validate_pod_requirements_for, NOT_FOR_KARPENTER,
};

/// Builders the requirement tests (and the lint catalogue's) share.
#[cfg(test)]
pub(crate) mod testing {
    use std::collections::BTreeMap;

    use k8s_openapi::api::core::v1::{NodeSelectorRequirement, NodeSelectorTerm};

    pub(super) const ZONE: &str = "topology.kubernetes.io/zone";
    pub(super) const CPU: &str = "karpenter.k8s.aws/instance-cpu";

    /// A pool requirement `key op values`.
    pub(crate) fn req(key: &str, op: &str, values: &[&str]) -> super::Requirement {
        super::Requirement {
            key: key.into(),
            operator: op.into(),
            values: values.iter().map(|v| v.to_string()).collect(),
            min_values: None,
        }
    }

    pub(super) fn nsr(key: &str, op: &str, values: &[&str]) -> NodeSelectorRequirement {
        NodeSelectorRequirement {
            key: key.into(),
            operator: op.into(),
            values: Some(values.iter().map(|v| v.to_string()).collect()),
        }
    }

    pub(super) fn term(exprs: Vec<NodeSelectorRequirement>) -> NodeSelectorTerm {
        NodeSelectorTerm {
            match_expressions: Some(exprs),
            match_fields: None,
        }
    }

    pub(super) fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }
}
