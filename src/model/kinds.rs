//! Trimmed projections of every kind kelp reads. Each mirrors the Kubernetes JSON shape
//! (so the same types parse a dump, a live list and a watch event), but keeps only the
//! fields the analysis uses; serde skips the rest without allocating it. What many objects
//! hold alike (label sets, a workload's pod spec, a pool's requirements, an instance
//! type's capacity) is [`Shared`]: `Cluster::apply_*` makes equal values one allocation.
//! The pod's projection is in [`super::pod`], re-exported here.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use k8s_openapi::api::core::v1::Taint;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use serde::{Deserialize, Serialize};

use super::memo::null_default;
use super::meta::{Condition, Meta};
use super::pod::PodSpec;
use super::shared::{no_entries, no_items, Shared};
use crate::karpenter::budgets::Budget;
use crate::karpenter::requirements::Requirement;

pub use super::container::ResourceList;

/// Lists the objects of one pool, instance type or workload mostly hold alike.
pub type SharedRequirements = Shared<Vec<Requirement>>;
pub type SharedTaints = Shared<Vec<Taint>>;
pub type SharedResources = Shared<ResourceList>;

// ---------------------------------------------------------------- karpenter.sh/v1

#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NodePool {
    #[serde(default)]
    pub metadata: Meta,
    #[serde(default)]
    pub spec: NodePoolSpec,
    #[serde(default)]
    pub status: NodePoolStatus,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NodePoolSpec {
    #[serde(default)]
    pub template: NodeClaimTemplate,
    #[serde(default)]
    pub disruption: Disruption,
    #[serde(
        default,
        deserialize_with = "null_default",
        skip_serializing_if = "BTreeMap::is_empty"
    )]
    pub limits: ResourceList,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub weight: Option<i32>,
    /// Set only on static NodePools, which Karpenter never provisions for pending pods.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replicas: Option<i64>,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Disruption {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub consolidation_policy: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub consolidate_after: Option<String>,
    /// `None` means the CRD default (`nodes: 10%`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budgets: Option<Vec<Budget>>,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeClaimTemplate {
    #[serde(default)]
    pub metadata: TemplateMeta,
    #[serde(default)]
    pub spec: NodeClaimSpec,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TemplateMeta {
    #[serde(
        default,
        deserialize_with = "null_default",
        skip_serializing_if = "BTreeMap::is_empty"
    )]
    pub labels: BTreeMap<String, String>,
}

/// Shared by NodePool templates and NodeClaims.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeClaimSpec {
    #[serde(
        default,
        deserialize_with = "null_default",
        skip_serializing_if = "no_items"
    )]
    pub requirements: SharedRequirements,
    #[serde(
        default,
        deserialize_with = "null_default",
        skip_serializing_if = "no_items"
    )]
    pub taints: SharedTaints,
    #[serde(
        default,
        deserialize_with = "null_default",
        skip_serializing_if = "no_items"
    )]
    pub startup_taints: SharedTaints,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_class_ref: Option<NodeClassRef>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expire_after: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub termination_grace_period: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeClassRef {
    #[serde(default)]
    pub group: String,
    #[serde(default)]
    pub kind: String,
    #[serde(default)]
    pub name: String,
}

impl NodeClassRef {
    /// The label Karpenter puts on nodes for this class: `<group>/<lowercased kind>=<name>`.
    pub fn label(&self) -> Option<(String, &str)> {
        (!self.group.is_empty() && !self.kind.is_empty()).then(|| {
            (
                format!("{}/{}", self.group, self.kind.to_lowercase()),
                self.name.as_str(),
            )
        })
    }
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NodePoolStatus {
    #[serde(
        default,
        deserialize_with = "null_default",
        skip_serializing_if = "BTreeMap::is_empty"
    )]
    pub resources: ResourceList,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nodes: Option<i64>,
    #[serde(
        default,
        deserialize_with = "null_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub conditions: Vec<Condition>,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeClaim {
    #[serde(default)]
    pub metadata: Meta,
    #[serde(default)]
    pub spec: NodeClaimSpec,
    #[serde(default)]
    pub status: NodeClaimStatus,
}

impl NodeClaim {
    /// Whether Karpenter's cluster state counts it marked for deletion (v1.14.1
    /// `StateNode.MarkedForDeletion`): deleting (a deletionTimestamp, or InstanceTerminating
    /// True), or its `node` picked by a disruption command ([`Node::tainted_disrupted`]).
    pub fn marked_for_deletion(&self, node: Option<&Node>) -> bool {
        self.metadata.deletion_timestamp.is_some()
            || super::meta::is_true(&self.status.conditions, "InstanceTerminating")
            || node.is_some_and(Node::tainted_disrupted)
    }
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeClaimStatus {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_name: Option<String>,
    /// Karpenter and Kubernetes spell it `providerID`.
    #[serde(
        rename = "providerID",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub provider_id: Option<String>,
    #[serde(rename = "imageID", default, skip_serializing_if = "Option::is_none")]
    pub image_id: Option<String>,
    #[serde(
        default,
        deserialize_with = "null_default",
        skip_serializing_if = "no_entries"
    )]
    pub capacity: SharedResources,
    #[serde(
        default,
        deserialize_with = "null_default",
        skip_serializing_if = "no_entries"
    )]
    pub allocatable: SharedResources,
    #[serde(
        default,
        deserialize_with = "null_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub conditions: Vec<Condition>,
    #[serde(
        default,
        deserialize_with = "super::meta::timestamp",
        skip_serializing_if = "Option::is_none"
    )]
    pub last_pod_event_time: Option<DateTime<Utc>>,
}

/// EC2NodeClass (karpenter.k8s.aws) or KWOKNodeClass (karpenter.kwok.sh).
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeClass {
    #[serde(default)]
    pub metadata: Meta,
    /// Filled in from the object's apiVersion/kind when it is loaded.
    #[serde(skip)]
    pub kind: String,
    #[serde(skip)]
    pub group: String,
    /// The spec as the cluster holds it (a NodeClass is small and there are few): what
    /// an EC2NodeClass's instance types and its hash depend on ([`super::nodeclass`]).
    #[serde(default, skip_serializing_if = "serde_json::Value::is_null")]
    pub spec: serde_json::Value,
    #[serde(default)]
    pub status: NodeClassStatus,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeClassStatus {
    #[serde(
        default,
        deserialize_with = "null_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub amis: Vec<Ami>,
    #[serde(
        default,
        deserialize_with = "null_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub conditions: Vec<Condition>,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Ami {
    #[serde(default)]
    pub id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deprecated: Option<bool>,
}

// ---------------------------------------------------------------- core

#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Node {
    #[serde(default)]
    pub metadata: Meta,
    #[serde(default)]
    pub spec: NodeSpec,
    #[serde(default)]
    pub status: NodeStatus,
    /// The labels every pass reads of every node, read on first use ([`Node::pool`]).
    #[serde(skip)]
    well_known: super::shared::Memo<WellKnown>,
}

/// A node's labels that every pass reads, several times: looked up once among its thirty
/// or so, and kept with the node. A node is not changed in place once in the model (a
/// changed copy starts without them).
#[derive(Debug, Default)]
struct WellKnown {
    pool: Option<Box<str>>,
    instance_type: Option<Box<str>>,
    zone: Option<Box<str>>,
    capacity_type: Option<Box<str>>,
}

impl Node {
    /// Forget the labels read so far: the model calls it on every node it takes in, in case
    /// the caller read them and then changed the node in place.
    pub(super) fn forget_well_known(&mut self) {
        self.well_known = Default::default();
    }

    fn well_known(&self) -> &WellKnown {
        self.well_known.get_or_init(|| {
            let l = &self.metadata.labels;
            let get = |k: &str| l.get(k).map(|v| v.as_str().into());
            WellKnown {
                pool: get(crate::karpenter::labels::NODEPOOL),
                instance_type: get(crate::karpenter::labels::INSTANCE_TYPE),
                zone: get(crate::karpenter::labels::ZONE),
                capacity_type: get(crate::karpenter::labels::CAPACITY_TYPE),
            }
        })
    }

    /// The NodePool the node belongs to, from its `karpenter.sh/nodepool` label.
    pub fn pool(&self) -> Option<&str> {
        self.well_known().pool.as_deref()
    }

    /// Its `node.kubernetes.io/instance-type` label.
    pub fn instance_type(&self) -> Option<&str> {
        self.well_known().instance_type.as_deref()
    }

    /// Its `topology.kubernetes.io/zone` label.
    pub fn zone(&self) -> Option<&str> {
        self.well_known().zone.as_deref()
    }

    /// Its `karpenter.sh/capacity-type` label.
    pub fn capacity_type(&self) -> Option<&str> {
        self.well_known().capacity_type.as_deref()
    }

    /// Whether it carries `karpenter.sh/disrupted:NoSchedule`: Karpenter has picked it to
    /// disrupt (it taints a node just before it launches the replacements and marks it for
    /// deletion, and takes the taint off again if the command fails).
    pub fn tainted_disrupted(&self) -> bool {
        self.spec
            .taints
            .iter()
            .any(|t| t.key == "karpenter.sh/disrupted" && t.effect == "NoSchedule")
    }
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeSpec {
    /// Karpenter and Kubernetes spell it `providerID`.
    #[serde(
        rename = "providerID",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub provider_id: Option<String>,
    #[serde(
        default,
        deserialize_with = "null_default",
        skip_serializing_if = "no_items"
    )]
    pub taints: SharedTaints,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unschedulable: Option<bool>,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeStatus {
    #[serde(
        default,
        deserialize_with = "null_default",
        skip_serializing_if = "no_entries"
    )]
    pub capacity: SharedResources,
    #[serde(
        default,
        deserialize_with = "null_default",
        skip_serializing_if = "no_entries"
    )]
    pub allocatable: SharedResources,
    #[serde(
        default,
        deserialize_with = "null_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub conditions: Vec<Condition>,
}

// ---------------------------------------------------------------- apps, policy

#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DaemonSet {
    #[serde(default)]
    pub metadata: Meta,
    #[serde(default)]
    pub spec: DaemonSetSpec,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DaemonSetSpec {
    #[serde(default)]
    pub template: PodTemplate,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PodTemplate {
    #[serde(default)]
    pub spec: PodSpec,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PodDisruptionBudget {
    #[serde(default)]
    pub metadata: Meta,
    #[serde(default)]
    pub spec: PdbSpec,
    #[serde(default)]
    pub status: PdbStatus,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PdbSpec {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selector: Option<LabelSelector>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_available: Option<IntOrString>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_unavailable: Option<IntOrString>,
    /// `AlwaysAllow` lets an unready pod be evicted whatever the budget allows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unhealthy_pod_eviction_policy: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PdbStatus {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disruptions_allowed: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub current_healthy: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub desired_healthy: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected_pods: Option<i32>,
}

// ---------------------------------------------------------------- apiextensions

/// A CustomResourceDefinition, reduced to group, kind and served versions.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Crd {
    #[serde(default)]
    pub metadata: Meta,
    #[serde(default)]
    pub spec: CrdSpec,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CrdSpec {
    #[serde(default)]
    pub group: String,
    #[serde(default)]
    pub names: CrdNames,
    #[serde(default, deserialize_with = "null_default")]
    pub versions: Vec<CrdVersion>,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CrdNames {
    #[serde(default)]
    pub kind: String,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CrdVersion {
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub served: bool,
    /// The few facts of its schema that tell Karpenter releases apart (the schema itself
    /// is not kept, nor written back).
    #[serde(default, deserialize_with = "schema_facts", skip_serializing)]
    pub schema: SchemaFacts,
}

/// What a NodePool CRD's schema says about the release that ships it: the fields and enum
/// values that changed between releases. Empty for other CRDs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SchemaFacts {
    /// `spec.disruption.consolidateAfter`'s default, if the schema gives one.
    pub consolidate_after_default: Option<String>,
    /// `spec.disruption.consolidationPolicy`'s values.
    pub consolidation_policies: Vec<String>,
    /// `spec.disruption.budgets[].reasons[]`'s values.
    pub budget_reasons: Vec<String>,
}

fn schema_facts<'de, D: serde::Deserializer<'de>>(d: D) -> Result<SchemaFacts, D::Error> {
    let schema = Option::<serde_json::Value>::deserialize(d)?.unwrap_or_default();
    let disruption =
        &schema["openAPIV3Schema"]["properties"]["spec"]["properties"]["disruption"]["properties"];
    let strings = |v: &serde_json::Value| -> Vec<String> {
        v.as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|s| s.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default()
    };
    Ok(SchemaFacts {
        consolidate_after_default: disruption["consolidateAfter"]["default"]
            .as_str()
            .map(str::to_string),
        consolidation_policies: strings(&disruption["consolidationPolicy"]["enum"]),
        budget_reasons: strings(
            &disruption["budgets"]["items"]["properties"]["reasons"]["items"]["enum"],
        ),
    })
}
