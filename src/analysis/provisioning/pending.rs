//! The pods Karpenter would provision for: unschedulable, not nominated since their last
//! failure, not owned by a DaemonSet or a Node; with the events about each, the requests
//! Karpenter sums and the requirement alternatives it validates (a DaemonSet's, which it
//! does not validate). Also DaemonSet pods pinned to a Karpenter node with no room, which
//! Karpenter never provisions for.

use crate::karpenter::events::Reason;
use chrono::{DateTime, Duration, Utc};
use k8s_openapi::api::core::v1::NodeSelectorTerm;

use super::super::Context;
use crate::findings::{Code, Finding, ObjectRef, Severity};
use crate::karpenter::requirements::{self, Provider, Requirements};
use crate::karpenter::resources::Resources;
use crate::model::*;

/// The pod's effective resource requests (worked out once per shared spec:
/// [`SchedulingSpec::requests`]).
pub fn pod_requests(spec: &PodSpec) -> Resources {
    spec.scheduling.requests().clone()
}

pub fn is_unschedulable(pod: &Pod) -> bool {
    pod.spec.node_name.is_none()
        && matches!(pod.status.phase.as_deref(), None | Some("Pending"))
        && condition(&pod.status.conditions, "PodScheduled")
            .is_some_and(|c| c.status == "False" && c.reason.as_deref() == Some("Unschedulable"))
}

/// The events about a pod that the analysis reads, found in one lookup.
#[derive(Debug, Default, Clone, Copy)]
pub struct PodEvents<'c> {
    /// Karpenter's latest FailedScheduling.
    pub failed: Option<&'c Event>,
    /// Karpenter's latest Nominated.
    pub nominated: Option<&'c Event>,
    /// The kube-scheduler's latest FailedScheduling.
    pub scheduler: Option<&'c Event>,
}

impl<'c> PodEvents<'c> {
    pub fn of(c: &'c Cluster, pod: &Pod) -> Self {
        let m = &pod.metadata;
        let mut out = PodEvents::default();
        // Newest first, so the first of each kind is the latest.
        for e in c.events_for(ObjectKind::Pod, m.namespace.as_deref(), &m.name, &m.uid) {
            // Two comparisons, not a parse of every reason: this runs per pending pod.
            let slot = match (e.from_karpenter(), e.is(Reason::FailedScheduling)) {
                (true, true) => &mut out.failed,
                (true, false) if e.is(Reason::Nominated) => &mut out.nominated,
                (false, true) => &mut out.scheduler,
                _ => continue,
            };
            slot.get_or_insert(e);
        }
        out
    }

    /// Nominated by Karpenter after its last failure to schedule: capacity is on its way.
    /// Only a nomination seen within the last hour counts: an old one whose NodeClaim is
    /// long gone must not hide a pod that still waits.
    pub fn nominated_since_failure(&self, now: DateTime<Utc>) -> Option<DateTime<Utc>> {
        let nominated = self
            .nominated?
            .seen()
            .filter(|t| now - *t <= NOMINATION_HOLDS)?;
        match self.failed.and_then(Event::seen) {
            Some(failed) if failed > nominated => None,
            _ => Some(nominated),
        }
    }
}

/// How long after it was seen a nomination holds a pod back ([`PodEvents::nominated_since_failure`]).
pub const NOMINATION_HOLDS: Duration = Duration::hours(1);

/// Pods Karpenter would try to provision for (facts section 6), with their events.
pub fn unschedulable_pods(
    c: &Cluster,
    now: DateTime<Utc>,
) -> impl Iterator<Item = (&Pod, PodEvents<'_>)> {
    c.unbound_pods()
        .filter(|p| provisionable(p))
        .map(move |p| (p, PodEvents::of(c, p)))
        .filter(move |(_, ev)| ev.nominated_since_failure(now).is_none())
}

/// What of [`unschedulable_pods`]' choice reads the pod alone: unschedulable, no
/// nominated node in its status, not a DaemonSet's or a Node's, not being deleted. (A
/// nomination since its last failure, which its events tell, holds it back too.)
pub fn provisionable(p: &Pod) -> bool {
    is_unschedulable(p)
        && p.status
            .nominated_node_name
            .as_deref()
            .unwrap_or("")
            .is_empty()
        && !p.metadata.owned_by("DaemonSet")
        && !p.metadata.owned_by("Node")
        && p.metadata.deletion_timestamp.is_none()
}

/// The pod's requirement alternatives: nodeSelector with each required node-affinity
/// term (or alone), after Karpenter's validation (which also reads the heaviest preferred
/// term: one that leaves `karpenter.sh/nodepool` DoesNotExist makes Karpenter ignore the pod).
pub fn pod_terms(spec: &PodSpec, provider: Provider) -> Result<Vec<Requirements>, String> {
    let preferred = spec
        .affinity
        .as_ref()
        .and_then(|a| a.node_affinity.as_ref())
        .and_then(|na| {
            na.preferred_during_scheduling_ignored_during_execution
                .as_deref()
        })
        .and_then(requirements::heaviest_preferred);
    requirements::validate_pod_requirements_for(
        &spec.node_selector,
        required_terms(spec),
        preferred,
        provider,
    )?;
    daemon_terms(spec)
}

/// A DaemonSet pod's requirement alternatives, as [`pod_terms`] without the validation:
/// Karpenter's `isDaemonPodCompatible` checks a DaemonSet against a pool's template
/// unvalidated, so one may select on restricted labels such as the node class's.
pub fn daemon_terms(spec: &PodSpec) -> Result<Vec<Requirements>, String> {
    let terms = required_terms(spec);
    if terms.is_empty() {
        return Requirements::for_pod(&spec.node_selector, None)
            .map(|r| vec![r])
            .map_err(|e| e.to_string());
    }
    terms
        .iter()
        .map(|t| Requirements::for_pod(&spec.node_selector, Some(t)).map_err(|e| e.to_string()))
        .collect()
}

/// The pod's required node-affinity terms (none without them).
fn required_terms(spec: &PodSpec) -> &[NodeSelectorTerm] {
    spec.affinity
        .as_ref()
        .and_then(|a| a.node_affinity.as_ref())
        .and_then(|na| {
            na.required_during_scheduling_ignored_during_execution
                .as_ref()
        })
        .map_or(&[], |r| r.node_selector_terms.as_slice())
}

/// The node a DaemonSet pod is pinned to (`matchFields metadata.name In [node]`).
pub fn daemonset_target(spec: &PodSpec) -> Option<&str> {
    let terms = &spec
        .affinity
        .as_ref()?
        .node_affinity
        .as_ref()?
        .required_during_scheduling_ignored_during_execution
        .as_ref()?
        .node_selector_terms;
    terms
        .iter()
        .flat_map(|t| t.match_fields.iter().flatten())
        .find_map(|f| {
            (f.key == "metadata.name" && f.operator == "In")
                .then(|| f.values.as_ref()?.first().map(String::as_str))
                .flatten()
        })
}

pub(super) fn daemonset_pods_pending(ctx: &Context) -> Vec<Finding> {
    let c = ctx.cluster;
    c.unbound_pods()
        .filter(|p| p.metadata.owned_by("DaemonSet") && is_unschedulable(p))
        .filter_map(|p| {
            let node = daemonset_target(&p.spec)?;
            let pool = c.nodes.get(node)?.pool()?;
            let cond = condition(&p.status.conditions, "PodScheduled");
            let since = cond.and_then(|c| c.last_transition_time).or(p.metadata.creation_timestamp);
            let ds = p.metadata.owner_references.iter().find(|o| o.kind == "DaemonSet").map(|o| o.name.clone());
            Some(
                Finding::new(
                    Code::DaemonsetPodPending,
                    Severity::Warning,
                    ObjectRef::of(ObjectKind::Pod, &p.metadata),
                    format!(
                        "DaemonSet pod cannot fit on Karpenter node {node}{}; Karpenter never provisions for DaemonSet pods. Give the DaemonSet a PriorityClass that preempts, or make room in the pool's instance sizes",
                        cond.and_then(|c| c.message.as_deref()).map(|m| format!(" ({m})")).unwrap_or_default()
                    ),
                )
                .pool(Some(pool))
                .since(since)
                .details(serde_json::json!({"daemonset": ds, "node": node})),
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pod_preferring_no_pool_most_is_one_karpenter_ignores() {
        let pod = |weights: (i32, i32)| {
            let yaml = format!(
                r#"apiVersion: v1
kind: Pod
metadata: {{name: p, namespace: d}}
spec:
  affinity:
    nodeAffinity:
      preferredDuringSchedulingIgnoredDuringExecution:
        - weight: {}
          preference: {{matchExpressions: [{{key: karpenter.sh/nodepool, operator: DoesNotExist}}]}}
        - weight: {}
          preference: {{matchExpressions: [{{key: topology.kubernetes.io/zone, operator: In, values: [a]}}]}}
  containers: [{{name: c, image: x}}]
"#,
                weights.0, weights.1
            );
            let mut c = Cluster::default();
            crate::source::load_str("t.yaml", &yaml, &mut c).unwrap();
            let p = c.pods.values().next().unwrap().clone();
            p
        };
        let ignored = pod((10, 1));
        assert_eq!(
            pod_terms(&ignored.spec, Provider::Aws).unwrap_err(),
            requirements::NOT_FOR_KARPENTER
        );
        let relaxed = pod((1, 10));
        assert_eq!(pod_terms(&relaxed.spec, Provider::Aws).unwrap().len(), 1);
    }
}
