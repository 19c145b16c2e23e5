//! Pods nominated to capacity that never bound them: Karpenter's Nominated events (the
//! newest per pod) whose pod is still pending, bound elsewhere or gone past the deadline,
//! and a `status.nominatedNodeName` with no Karpenter nomination behind it.

use std::collections::{BTreeMap, BTreeSet};

use chrono::Duration;
use serde::Serialize;

use super::super::{ago, Context};
use super::pending::is_unschedulable;
use super::{claim_pool, PodEvents, GRACE};
use crate::findings::{Code, Finding, ObjectRef, Severity};
use crate::karpenter::events::Reason;
use crate::karpenter::events::{self, NominationTarget};
use crate::model::*;

/// The details of a `pod-nominated-not-bound` finding.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NominationDetails {
    /// `node/NAME` or `nodeclaim/NAME`, as Karpenter's events name them.
    pub nominated_to: Vec<String>,
    pub outcome: String,
}

pub(super) fn nominated_not_bound(ctx: &Context) -> Vec<Finding> {
    let c = ctx.cluster;
    let deadline = Duration::minutes(GRACE);
    let mut out = Vec::new();
    let mut seen = BTreeSet::new();
    // Karpenter's Nominated events per pod, newest first.
    let mut by_pod: BTreeMap<(Option<String>, String), Vec<&Event>> = BTreeMap::new();
    for e in c
        .events
        .values()
        .filter(|e| e.from_karpenter() && e.is(Reason::Nominated) && e.about(ObjectKind::Pod))
    {
        let key = (e.regarding.namespace.clone(), e.regarding.name.clone());
        by_pod.entry(key).or_default().push(e);
    }
    for ((ns, name), mut all) in by_pod {
        all.sort_by(|a, b| (b.seen(), &b.id).cmp(&(a.seen(), &a.id)));
        let e = all[0];
        // Karpenter re-nominates on every pass, so the same event's first sighting is when
        // the wait began; its last sighting must be recent for the nomination to matter.
        // Nominated to a NodeClaim, then to its node once it registered ("nodeclaim/x,
        // node/y"): a new event, the same wait, which began with the first.
        let (Some(last), Some(newest_at)) = (e.seen(), e.first_seen.or(e.seen())) else {
            continue;
        };
        let targets = events::parse_nominated(&e.message);
        let at = all
            .iter()
            .filter(|old| {
                events::parse_nominated(&old.message)
                    .iter()
                    .any(|t| targets.contains(t))
            })
            .filter_map(|old| old.first_seen.or(old.seen()))
            .min()
            .unwrap_or(newest_at)
            .min(newest_at);
        if ctx.pass.now - at <= deadline || ctx.pass.now - last > Duration::hours(1) {
            continue;
        }
        let nodes: BTreeSet<String> = targets
            .iter()
            .filter_map(|t| match t {
                NominationTarget::Node(n) => Some(n.clone()),
                NominationTarget::NodeClaim(nc) => c
                    .nodeclaims
                    .get(nc)
                    .and_then(|x| x.status.node_name.clone()),
            })
            .collect();
        // The nomination must be about this pod, not an earlier one of the same name.
        let pod = c
            .pods
            .get(&(ns.clone().unwrap_or_default(), name.clone()))
            .filter(|p| {
                e.regarding.uid.is_empty()
                    || p.metadata.uid.is_empty()
                    || p.metadata.uid == e.regarding.uid
            });
        // Bound within the deadline of the nomination: it was served in time, wherever it
        // runs now (consolidation or drift may have moved it since).
        let bound_in_time = |p: &Pod| {
            condition(&p.status.conditions, "PodScheduled")
                .filter(|c| c.is_true())
                .and_then(|c| c.last_transition_time)
                .is_some_and(|t| t - at <= deadline)
        };
        let outcome = match pod {
            // Gone: only while Karpenter was still renewing the nomination lately.
            None if ctx.pass.now - last > deadline => continue,
            None => "gone: the pod no longer exists".to_string(),
            Some(p) if matches!(p.status.phase.as_deref(), Some("Succeeded" | "Failed")) => {
                continue
            }
            Some(p) if bound_in_time(p) => continue,
            Some(p) => match &p.spec.node_name {
                Some(n) if nodes.contains(n.as_str()) => continue,
                Some(n) => {
                    format!("bound elsewhere: it runs on {n}, not where Karpenter nominated it")
                }
                // Failed again since: pod-unschedulable speaks.
                None if PodEvents::of(c, p)
                    .nominated_since_failure(ctx.pass.now)
                    .is_none() =>
                {
                    continue
                }
                None => "still pending".to_string(),
            },
        };
        let to: Vec<String> = targets
            .iter()
            .map(|t| match t {
                NominationTarget::Node(n) => format!("node/{n}"),
                NominationTarget::NodeClaim(n) => format!("nodeclaim/{n}"),
            })
            .collect();
        let pool = targets.iter().find_map(|t| match t {
            NominationTarget::NodeClaim(n) => claim_pool(c, n),
            NominationTarget::Node(n) => c.nodes.get(n).and_then(|x| x.pool()).map(str::to_string),
        });
        seen.insert((ns.clone().unwrap_or_default(), name.clone()));
        let object = ObjectRef {
            kind: ObjectKind::Pod,
            namespace: ns,
            name,
        };
        out.push(
            Finding::new(
                Code::PodNominatedNotBound,
                Severity::Warning,
                object,
                format!(
                    "Nominated to {} {} ago, {outcome}",
                    to.join(", "),
                    ago(ctx.pass.now, at)
                ),
            )
            .pool(pool.as_deref())
            .since(Some(at))
            .details(NominationDetails {
                nominated_to: to,
                outcome,
            }),
        );
    }
    // status.nominatedNodeName with no Karpenter nomination behind it (the scheduler's own, after preemption).
    for p in c.unbound_pods() {
        let Some(node) = p
            .status
            .nominated_node_name
            .as_deref()
            .filter(|n| !n.is_empty())
        else {
            continue;
        };
        let key = p.metadata.obj_key();
        if seen.contains(&key)
            || p.spec.node_name.is_some()
            || !is_unschedulable(p) && p.status.phase.as_deref() != Some("Pending")
        {
            continue;
        }
        let since = condition(&p.status.conditions, "PodScheduled")
            .and_then(|c| c.last_transition_time)
            .or(p.metadata.creation_timestamp);
        if since.is_none_or(|s| ctx.pass.now - s <= deadline) {
            continue;
        }
        let pool = c.nodes.get(node).and_then(|n| n.pool());
        let outcome = "still pending".to_string();
        out.push(
            Finding::new(
                Code::PodNominatedNotBound,
                Severity::Warning,
                ObjectRef::of(ObjectKind::Pod, &p.metadata),
                format!(
                    "status.nominatedNodeName is {node}, yet the pod is {outcome} after {}",
                    since.map(|s| ago(ctx.pass.now, s)).unwrap_or_default()
                ),
            )
            .pool(pool)
            .since(since)
            .details(NominationDetails {
                nominated_to: vec![format!("node/{node}")],
                outcome,
            }),
        );
    }
    out
}
