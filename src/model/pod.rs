//! The pod's projection: its metadata, the part of its spec the scheduler and Karpenter
//! read (shared among the replicas of a workload, with its requests worked out once), its
//! affinity, and the status conditions that say whether it waits to be scheduled.

use chrono::{DateTime, Utc};
use k8s_openapi::api::core::v1::{
    NodeAffinity, PodAffinity, PodAffinityTerm, PodAntiAffinity, Taint, Toleration,
    TopologySpreadConstraint,
};
use serde::{de, Deserialize, Serialize};

use super::container::{Container, ResourceList};
use super::memo::null_default;
use super::meta::{Condition, Meta};
use super::shared::{
    address_fingerprint, no_entries, no_items, serde_fingerprint, Compact, DefaultHasher,
    Fingerprint, Shared,
};
use crate::karpenter::requirements::Requirement;

/// A pod. Its fields live in one shared allocation, read and written through `Deref` as
/// `pod.metadata`, `pod.spec`, `pod.status`: the map of 100,000s of pods then holds a
/// pointer per pod rather than mostly empty B-tree slots of whole pods, and the index of
/// pods by node holds the same pod, not a copy of its key. Cloning a `Pod` shares it;
/// changing a shared one (`DerefMut`) changes a copy of its own.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(transparent)]
pub struct Pod(Shared<PodFields>);

impl std::ops::Deref for Pod {
    type Target = PodFields;
    fn deref(&self) -> &PodFields {
        &self.0
    }
}

impl std::ops::DerefMut for Pod {
    fn deref_mut(&mut self) -> &mut PodFields {
        self.0.make_mut()
    }
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PodFields {
    #[serde(default)]
    pub metadata: Meta,
    #[serde(default)]
    pub spec: PodSpec,
    #[serde(default)]
    pub status: PodStatus,
}

impl PodFields {
    /// Why the API server would refuse this pod's resources (a quantity that is not a
    /// number, such as `NaN`, or a negative one), or None. A dump holding such a pod was
    /// not written by an API server, and nothing can be judged on its requests.
    pub fn invalid_resources(&self) -> Option<String> {
        use crate::karpenter::resources::quantity_value;
        let check = |what: String, list: &ResourceList| -> Option<String> {
            list.iter().find_map(|(k, q)| match quantity_value(&q.0) {
                Err(e) => Some(format!("{what}: {k}: {e}")),
                Ok(v) if v < 0.0 => Some(format!("{what}: {k}: {:?} is negative", q.0)),
                Ok(_) => None,
            })
        };
        let spec = &self.spec.scheduling;
        let containers = spec
            .containers
            .iter()
            .map(|c| ("container", c))
            .chain(spec.init_containers.iter().map(|c| ("init container", c)));
        for (role, c) in containers {
            if let Some(why) = check(
                format!("{role} {:?} requests", c.name),
                &c.resources.requests,
            ) {
                return Some(why);
            }
        }
        if let Some(why) = spec
            .resources
            .as_ref()
            .and_then(|r| check("pod-level requests".into(), &r.requests))
        {
            return Some(why);
        }
        spec.overhead
            .as_ref()
            .and_then(|o| check("overhead".into(), o))
    }

    /// Done: phase Succeeded or Failed. A finished pod holds no room on its node.
    pub fn finished(&self) -> bool {
        matches!(self.status.phase.as_deref(), Some("Succeeded" | "Failed"))
    }

    /// Still active: not finished, not being deleted.
    pub fn active(&self) -> bool {
        self.metadata.deletion_timestamp.is_none() && !self.finished()
    }
}

/// A pod's spec: where it is bound, and what it asks of the scheduler. The second part is
/// the same for every replica of a workload, so the replicas share one copy of it; fields
/// read as before (`spec.tolerations`, `spec.containers`, ...) through `Deref`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PodSpec {
    /// A shared string: some thirty pods share each node's name.
    pub node_name: Option<Shared<str>>,
    /// Beside the shared part, not in it: a DaemonSet pod's affinity names its node, and
    /// is the same for all the DaemonSets' pods on that node.
    pub affinity: Option<Shared<Affinity>>,
    pub scheduling: Shared<SchedulingSpec>,
    /// The volumes that are persistent volume claims (or ephemeral ones, which make a
    /// claim), by volume name: beside the shared part, as a StatefulSet's replicas differ.
    pub volume_claims: Vec<String>,
}

impl PodSpec {
    /// Its required pod affinity terms (none without an affinity).
    pub fn required_pod_affinity(&self) -> &[PodAffinityTerm] {
        self.affinity
            .as_ref()
            .and_then(|a| a.pod_affinity.as_ref())
            .and_then(|a| {
                a.required_during_scheduling_ignored_during_execution
                    .as_deref()
            })
            .unwrap_or_default()
    }

    /// Whether it has required pod anti-affinity on a key other than the hostname: once
    /// bound, it may keep pending pods out of a domain a new node can be in.
    pub fn guards(&self) -> bool {
        self.required_anti_affinity()
            .iter()
            .any(|t| t.topology_key != crate::karpenter::labels::HOSTNAME)
    }

    /// Its preferred node-affinity terms, in order (none without an affinity).
    pub fn preferred_node_affinity(
        &self,
    ) -> &[k8s_openapi::api::core::v1::PreferredSchedulingTerm] {
        self.affinity
            .as_ref()
            .and_then(|a| a.node_affinity.as_ref())
            .and_then(|n| {
                n.preferred_during_scheduling_ignored_during_execution
                    .as_deref()
            })
            .unwrap_or_default()
    }

    /// Its preferred pod-affinity terms, in order (none without an affinity).
    pub fn preferred_pod_affinity(&self) -> &[k8s_openapi::api::core::v1::WeightedPodAffinityTerm] {
        self.affinity
            .as_ref()
            .and_then(|a| a.pod_affinity.as_ref())
            .and_then(|a| {
                a.preferred_during_scheduling_ignored_during_execution
                    .as_deref()
            })
            .unwrap_or_default()
    }

    /// Its preferred pod anti-affinity terms, heaviest first (none without an affinity).
    pub fn preferred_anti_affinity(&self) -> Vec<&PodAffinityTerm> {
        let mut terms: Vec<_> = self
            .affinity
            .as_ref()
            .and_then(|a| a.pod_anti_affinity.as_ref())
            .and_then(|a| {
                a.preferred_during_scheduling_ignored_during_execution
                    .as_deref()
            })
            .unwrap_or_default()
            .iter()
            .collect();
        terms.sort_by_key(|t| std::cmp::Reverse(t.weight));
        terms.into_iter().map(|t| &t.pod_affinity_term).collect()
    }

    /// Its required pod anti-affinity terms (none without an affinity).
    pub fn required_anti_affinity(&self) -> &[PodAffinityTerm] {
        self.affinity
            .as_ref()
            .and_then(|a| a.pod_anti_affinity.as_ref())
            .and_then(|a| {
                a.required_during_scheduling_ignored_during_execution
                    .as_deref()
            })
            .unwrap_or_default()
    }
}

impl std::ops::Deref for PodSpec {
    type Target = SchedulingSpec;
    fn deref(&self) -> &SchedulingSpec {
        &self.scheduling
    }
}

/// What a pod asks of the scheduler, besides its affinity: the same for every replica of
/// a workload. Each part is shared on its own too (alike workloads ask alike).
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SchedulingSpec {
    #[serde(
        default,
        deserialize_with = "null_default",
        skip_serializing_if = "no_entries"
    )]
    pub node_selector: super::meta::StringMap,
    #[serde(
        default,
        deserialize_with = "null_default",
        skip_serializing_if = "no_items"
    )]
    pub tolerations: Shared<Vec<Toleration>>,
    #[serde(
        default,
        deserialize_with = "null_default",
        skip_serializing_if = "no_items"
    )]
    pub containers: Shared<Vec<Container>>,
    #[serde(
        default,
        deserialize_with = "null_default",
        skip_serializing_if = "no_items"
    )]
    pub init_containers: Shared<Vec<Container>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub overhead: Option<ResourceList>,
    /// Pod-level requests (`spec.resources`, Kubernetes 1.34's PodLevelResources): where set
    /// for cpu, memory or hugepages, they stand for the containers' sum.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<super::container::ContainerResources>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority_class_name: Option<String>,
    /// `spec.priority`, resolved from the priority class at admission: part of the pod's
    /// eviction cost, which decides whether Karpenter counts its node as empty.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scheduler_name: Option<String>,
    /// The names of `spec.schedulingGates`: while any is there, neither the scheduler nor
    /// Karpenter acts on the pod.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        serialize_with = "gates_as_written"
    )]
    pub scheduling_gates: Vec<String>,
    /// How the pod spreads over nodes and zones (`spec.topologySpreadConstraints`).
    #[serde(
        default,
        deserialize_with = "null_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub topology_spread_constraints: Vec<TopologySpreadConstraint>,
    /// Its effective requests, worked out on first use ([`SchedulingSpec::requests`]).
    #[serde(skip)]
    requests: super::shared::Memo<crate::karpenter::resources::Resources>,
}

impl SchedulingSpec {
    /// The pod's effective resource requests, as the scheduler and Karpenter sum them
    /// (containers, init containers and sidecars, pod-level requests, overhead). Worked out once per spec,
    /// which the replicas of a workload share, and kept with it for as long as it lives.
    /// A spec is not changed in place once shared (a changed copy starts without it).
    pub fn requests(&self) -> &crate::karpenter::resources::Resources {
        self.requests.get_or_init(|| {
            let containers: Vec<_> = self
                .containers
                .iter()
                .map(|c| c.resources.effective_requests())
                .collect();
            let inits: Vec<_> = self
                .init_containers
                .iter()
                .map(|c| {
                    (
                        c.resources.effective_requests(),
                        c.restart_policy.as_deref() == Some("Always"),
                    )
                })
                .collect();
            crate::karpenter::resources::pod_requests(
                &containers,
                &inits,
                self.resources.as_ref().map(|r| &r.requests),
                self.overhead.as_ref(),
            )
        })
    }
}

/// Scheduling gates as the API writes them: `[{name: ...}]`.
fn gates_as_written<S: serde::Serializer>(gates: &[String], s: S) -> Result<S::Ok, S::Error> {
    use serde::ser::SerializeSeq;
    let mut seq = s.serialize_seq(Some(gates.len()))?;
    for name in gates {
        seq.serialize_element(&std::collections::BTreeMap::from([("name", name)]))?;
    }
    seq.end()
}

impl Compact for SchedulingSpec {
    fn compact(&mut self) {}
}

/// Its parts are interned first (see `Cluster::apply_pod`), so their addresses stand for them.
impl Fingerprint for SchedulingSpec {
    fn fingerprint(&self, h: &mut DefaultHasher) {
        use std::hash::Hash;
        address_fingerprint(&self.node_selector, h);
        address_fingerprint(&self.tolerations, h);
        address_fingerprint(&self.containers, h);
        address_fingerprint(&self.init_containers, h);
        for (k, v) in self.resources.iter().flat_map(|r| &r.requests) {
            (k, &v.0).hash(h);
        }
        self.priority_class_name.hash(h);
        self.priority.hash(h);
        self.scheduler_name.hash(h);
        self.scheduling_gates.hash(h);
        self.topology_spread_constraints.fingerprint(h);
    }
}

/// k8s-openapi's types have no `Hash`: their JSON form stands for them.
macro_rules! serde_fingerprint {
    ($($t:ty),*) => {$(
        impl Fingerprint for $t {
            fn fingerprint(&self, h: &mut DefaultHasher) {
                serde_fingerprint(self, h)
            }
        }
    )*};
}
serde_fingerprint!(
    Affinity,
    Vec<Taint>,
    Vec<TopologySpreadConstraint>,
    Vec<Requirement>
);

/// The parts every pod has are hashed field by field: serialising them for a hash was a
/// twentieth of loading a pod. Equal values hash alike; the interner confirms with `==`.
impl Fingerprint for Vec<Toleration> {
    fn fingerprint(&self, h: &mut DefaultHasher) {
        use std::hash::Hash;
        self.len().hash(h);
        for t in self {
            (
                &t.key,
                &t.operator,
                &t.value,
                &t.effect,
                t.toleration_seconds,
            )
                .hash(h);
        }
    }
}

impl Fingerprint for Vec<Container> {
    fn fingerprint(&self, h: &mut DefaultHasher) {
        use std::hash::Hash;
        self.len().hash(h);
        for c in self {
            (&c.name, &c.restart_policy, &c.host_ports).hash(h);
            c.resources.requests.fingerprint(h);
        }
    }
}

impl Fingerprint for ResourceList {
    fn fingerprint(&self, h: &mut DefaultHasher) {
        use std::hash::Hash;
        self.len().hash(h);
        for (name, quantity) in self {
            (name, &quantity.0).hash(h);
        }
    }
}

impl Compact for Affinity {
    fn compact(&mut self) {}
}

impl Compact for TopologySpreadConstraint {
    fn compact(&mut self) {}
}

impl Compact for Toleration {
    fn compact(&mut self) {}
}

/// A pod's `volumes`, read as the names of those that are claims (persistent volume
/// claims, or ephemeral ones, which make a claim).
#[derive(Debug, Clone, Default)]
struct VolumeClaims(Vec<String>);

impl<'de> Deserialize<'de> for VolumeClaims {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct Volume {
            #[serde(default)]
            name: String,
            #[serde(default)]
            persistent_volume_claim: Option<serde::de::IgnoredAny>,
            #[serde(default)]
            ephemeral: Option<serde::de::IgnoredAny>,
        }
        let volumes = Vec::<Volume>::deserialize(d)?;
        Ok(VolumeClaims(
            volumes
                .into_iter()
                .filter(|v| v.persistent_volume_claim.is_some() || v.ephemeral.is_some())
                .map(|v| v.name)
                .collect(),
        ))
    }
}

impl Compact for VolumeClaims {
    fn compact(&mut self) {
        self.0.compact()
    }
}

impl<'de> Deserialize<'de> for PodSpec {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        /// The JSON shape: `nodeName` beside the scheduling fields (named as Kubernetes
        /// names it, for errors).
        #[derive(Deserialize)]
        #[serde(expecting = "struct PodSpec", rename_all = "camelCase")]
        struct Raw {
            #[serde(default)]
            node_name: Option<Shared<str>>,
            #[serde(default, deserialize_with = "super::memo::read")]
            node_selector: super::meta::StringMap,
            #[serde(default, deserialize_with = "super::memo::read")]
            affinity: Option<Shared<Affinity>>,
            #[serde(default, deserialize_with = "super::memo::read")]
            tolerations: Shared<Vec<Toleration>>,
            #[serde(default, deserialize_with = "super::memo::read")]
            containers: Shared<Vec<Container>>,
            #[serde(default, deserialize_with = "super::memo::read")]
            init_containers: Shared<Vec<Container>>,
            #[serde(default)]
            overhead: Option<ResourceList>,
            #[serde(default)]
            resources: Option<super::container::ContainerResources>,
            #[serde(default)]
            priority_class_name: Option<String>,
            #[serde(default)]
            priority: Option<i32>,
            #[serde(default)]
            scheduler_name: Option<String>,
            #[serde(default, deserialize_with = "null_default")]
            scheduling_gates: Vec<Gate>,
            #[serde(default, deserialize_with = "super::memo::read")]
            topology_spread_constraints: Vec<TopologySpreadConstraint>,
            #[serde(default, deserialize_with = "super::memo::read")]
            volumes: VolumeClaims,
        }
        #[derive(Deserialize)]
        struct Gate {
            #[serde(default)]
            name: String,
        }
        let r = Raw::deserialize(d)?;
        Ok(PodSpec {
            node_name: r.node_name,
            affinity: r.affinity,
            volume_claims: r.volumes.0,
            scheduling: Shared::new(SchedulingSpec {
                node_selector: r.node_selector,
                tolerations: r.tolerations,
                containers: r.containers,
                init_containers: r.init_containers,
                overhead: r.overhead,
                resources: r.resources.filter(|r| !r.requests.is_empty()),
                priority_class_name: r.priority_class_name,
                priority: r.priority,
                scheduler_name: r.scheduler_name,
                scheduling_gates: r.scheduling_gates.into_iter().map(|g| g.name).collect(),
                topology_spread_constraints: r.topology_spread_constraints,
                requests: Default::default(),
            }),
        })
    }
}

impl Serialize for PodSpec {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        #[serde(rename_all = "camelCase")]
        struct Flat<'a> {
            #[serde(skip_serializing_if = "Option::is_none")]
            node_name: &'a Option<Shared<str>>,
            #[serde(skip_serializing_if = "Option::is_none")]
            affinity: &'a Option<Shared<Affinity>>,
            #[serde(flatten)]
            scheduling: &'a SchedulingSpec,
            #[serde(skip_serializing_if = "Vec::is_empty")]
            volumes: Vec<serde_json::Value>,
        }
        // Written back as claims of the same name: what kelp reads of them.
        let volumes = self
            .volume_claims
            .iter()
            .map(|v| serde_json::json!({"name": v, "persistentVolumeClaim": {"claimName": v}}))
            .collect();
        Flat {
            node_name: &self.node_name,
            affinity: &self.affinity,
            scheduling: &self.scheduling,
            volumes,
        }
        .serialize(s)
    }
}

/// A pod's affinity: node affinity (Karpenter's per-NodePool requirement check) and pod
/// (anti-)affinity (where its pods could move).
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Affinity {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_affinity: Option<NodeAffinity>,
    /// Read by the consolidation check (would a node's pods fit elsewhere).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_affinity: Option<PodAffinity>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_anti_affinity: Option<PodAntiAffinity>,
}

impl Compact for Requirement {
    fn compact(&mut self) {
        self.values.shrink_to_fit();
    }
}

impl Compact for Taint {
    fn compact(&mut self) {}
}

/// Keep only the pod conditions the analysis reads: PodScheduled, and Ready when it is False
/// (a PDB with `unhealthyPodEvictionPolicy: AlwaysAllow` lets such a pod go). Each condition is read
/// borrowed from the input (a condition's type comes last in what the API server writes)
/// and only the kept one is made into a [`Condition`]: a pod has five or so.
fn scheduling_conditions<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<PodConditions, D::Error> {
    use std::borrow::Cow;
    #[derive(Deserialize)]
    #[serde(expecting = "struct PodCondition", rename_all = "camelCase")]
    struct Raw<'a> {
        #[serde(rename = "type", default, borrow)]
        type_: Cow<'a, str>,
        #[serde(default, borrow)]
        status: Cow<'a, str>,
        #[serde(default, borrow)]
        reason: Option<Cow<'a, str>>,
        #[serde(default, borrow)]
        message: Option<Cow<'a, str>>,
        #[serde(default, borrow)]
        last_transition_time: Option<Cow<'a, str>>,
    }
    let all: Vec<Raw<'de>> = null_default(d)?;
    let mut kept = Vec::new();
    let kept_kind =
        |c: &Raw<'_>| c.type_ == "PodScheduled" || (c.type_ == "Ready" && c.status == "False");
    for c in all.into_iter().filter(kept_kind) {
        let last_transition_time = match c.last_transition_time {
            Some(t) => super::meta::timestamp(de::value::StrDeserializer::<D::Error>::new(&t))?,
            None => None,
        };
        kept.push(Condition {
            type_: Shared::from(&*c.type_),
            status: Shared::from(&*c.status),
            reason: c.reason.map(Cow::into_owned),
            message: c.message.map(Cow::into_owned),
            last_transition_time,
        });
    }
    Ok(kept.into())
}

/// A pod's conditions as kelp keeps them: PodScheduled (and a False Ready), so almost always one, held
/// in place rather than in a list of its own. Reads (and serialises) as a slice.
#[derive(Debug, Clone, Default, PartialEq)]
pub enum PodConditions {
    #[default]
    None,
    One(Condition),
    Many(Box<[Condition]>),
}

impl std::ops::Deref for PodConditions {
    type Target = [Condition];
    fn deref(&self) -> &[Condition] {
        match self {
            PodConditions::None => &[],
            PodConditions::One(c) => std::slice::from_ref(c),
            PodConditions::Many(cs) => cs,
        }
    }
}

impl std::ops::DerefMut for PodConditions {
    fn deref_mut(&mut self) -> &mut [Condition] {
        match self {
            PodConditions::None => &mut [],
            PodConditions::One(c) => std::slice::from_mut(c),
            PodConditions::Many(cs) => cs,
        }
    }
}

impl From<Vec<Condition>> for PodConditions {
    fn from(mut v: Vec<Condition>) -> Self {
        match v.len() {
            0 => PodConditions::None,
            1 => v.pop().map(PodConditions::One).unwrap_or_default(),
            _ => PodConditions::Many(v.into_boxed_slice()),
        }
    }
}

impl Serialize for PodConditions {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        (**self).serialize(s)
    }
}

fn no_conditions(c: &PodConditions) -> bool {
    c.is_empty()
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PodStatus {
    /// A shared string (`Running`, `Pending`, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<Shared<str>>,
    #[serde(
        default,
        deserialize_with = "scheduling_conditions",
        skip_serializing_if = "no_conditions"
    )]
    pub conditions: PodConditions,
    /// A shared string, like `spec.nodeName`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nominated_node_name: Option<Shared<str>>,
    #[serde(
        default,
        deserialize_with = "super::meta::timestamp",
        skip_serializing_if = "Option::is_none"
    )]
    pub start_time: Option<DateTime<Utc>>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pod_level_requests_stand_for_the_containers() {
        let spec: PodSpec = serde_json::from_str(
            r#"{"resources": {"limits": {"cpu": "8", "memory": "4Gi"}},
                "containers": [{"name": "a", "resources": {"requests": {"cpu": "1"}}},
                               {"name": "b"}]}"#,
        )
        .unwrap();
        // Requests default from limits at the pod level too, as the API server writes them.
        let r = spec.requests();
        assert_eq!(
            (r.get("cpu"), r.get("memory")),
            (8.0, 4.0 * 1024.0 * 1024.0 * 1024.0)
        );
        // Written back, and read again the same.
        let again: PodSpec = serde_json::from_value(serde_json::to_value(&spec).unwrap()).unwrap();
        assert_eq!(again.requests(), r);
        // Without them, the containers' sum.
        let spec: PodSpec = serde_json::from_str(
            r#"{"containers": [{"name": "a", "resources": {"requests": {"cpu": "1"}}}]}"#,
        )
        .unwrap();
        assert_eq!(spec.requests().get("cpu"), 1.0);
    }
}
