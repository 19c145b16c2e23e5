//! Findings about nodes Karpenter wants gone and has not removed: disruption blocked
//! (with its blockers), empty nodes past consolidateAfter, expired nodes still running,
//! and drifted NodeClaims.

use std::sync::Arc;

use chrono::Duration;
use serde::Serialize;

use super::super::provisioning::claim_pool;
use super::super::{ago, Context};
use super::{Blocker, NodeDisruption, WantReason};
use crate::findings::{Code, Finding, ObjectRef, Severity};
use crate::karpenter::duration::{self, NillableDuration};
use crate::karpenter::events::BlockerKind;
use crate::model::*;

/// The details of a `disruption-blocked` finding: the node's blockers, NodeClaim and
/// wants, read from its state (shared, not copied).
#[derive(Debug, Clone)]
pub struct BlockedDetails(Arc<NodeDisruption>);

impl BlockedDetails {
    pub fn blockers(&self) -> &[Blocker] {
        &self.0.blockers
    }
    /// The node's state the finding was written from.
    pub fn state(&self) -> &Arc<NodeDisruption> {
        &self.0
    }
}

impl Serialize for BlockedDetails {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut m = s.serialize_struct("BlockedDetails", 3)?;
        m.serialize_field("blockers", &self.0.blockers)?;
        m.serialize_field("nodeclaim", &self.0.nodeclaim)?;
        m.serialize_field("wants", &self.0.wants)?;
        m.end()
    }
}

/// The details of a `node-expired-not-replaced` finding: the node's age, expireAfter and
/// blockers (in the JSON's key order), read from its state when they are written.
struct ExpiredDetails(Arc<NodeDisruption>);

impl Serialize for ExpiredDetails {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut m = s.serialize_struct("ExpiredDetails", 3)?;
        m.serialize_field("age", &self.0.age)?;
        // As a JSON tree, as these details always were: each blocker's keys sorted.
        let blockers = serde_json::to_value(&self.0.blockers).map_err(serde::ser::Error::custom)?;
        m.serialize_field("blockers", &blockers)?;
        m.serialize_field("expireAfter", &self.0.expire_after)?;
        m.end()
    }
}

/// The details of an `empty-node-not-reaped` finding: nominations first among the blockers.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NotReapedDetails {
    pub blockers: Vec<Blocker>,
    pub consolidate_after: Option<String>,
    pub empty_for: String,
}

/// `disruption-blocked` (a pure function of the node's state: a kept state hands on the
/// last pass's finding, [`crate::analysis::KeptFindings`]), `empty-node-not-reaped`,
/// `node-expired-not-replaced` and `nodeclaim-drifted`.
pub(super) fn findings(ctx: &Context) -> Vec<Arc<Finding>> {
    let c = ctx.cluster;
    let mut out = Vec::new();
    for s in ctx.pass.nodes.values().filter(|s| s.nodepool.is_some()) {
        if !s.wants.is_empty() && !s.blockers.is_empty() {
            match ctx.kept.and_then(|k| k.get(Code::DisruptionBlocked, s)) {
                Some(kept) => out.push(kept.clone()),
                None => out.push(Arc::new(blocked(s))),
            }
        }
        // An empty node already being deleted is being reaped.
        if s.empty && !s.deleting {
            if let Some(f) = empty_not_reaped(ctx, s) {
                out.push(Arc::new(f));
            }
        }
        // Only a NodeClaim expires: `expired` is false for a node without one.
        if let Some(at) = s
            .expires_at
            .filter(|t| s.expired && ctx.pass.now - *t > Duration::minutes(10))
        {
            out.push(Arc::new(
                Finding::new(
                    Code::NodeExpiredNotReplaced,
                    Severity::Warning,
                    ObjectRef::cluster(ObjectKind::Node, &s.node),
                    format!(
                        "Expired {} ago (age {}, expireAfter {}) and still here{}",
                        ago(ctx.pass.now, at),
                        s.age.clone().unwrap_or_default(),
                        s.expire_after.clone().unwrap_or_default(),
                        expired_suffix(s, c.active_pods_on(&s.node).count())
                    ),
                )
                .pool(s.nodepool.as_deref())
                .since(Some(at))
                .details(ExpiredDetails(s.clone())),
            ));
        }
    }
    for claim in c.nodeclaims.values() {
        if let Some(d) = condition(&claim.status.conditions, "Drifted").filter(|d| d.is_true()) {
            let reason = d.reason.clone().unwrap_or_else(|| "Drifted".into());
            // What the reason means, where it is one Karpenter or the AWS provider sets.
            let meaning = crate::karpenter::aws::nodeclass::drift_meaning(&reason)
                .map(|m| format!(": {m}"))
                .unwrap_or_default();
            let pool = claim_pool(c, &claim.metadata.name);
            out.push(Arc::new(
                Finding::new(
                    Code::NodeclaimDrifted,
                    Severity::Info,
                    ObjectRef::of(ObjectKind::NodeClaim, &claim.metadata),
                    format!(
                        "Drifted ({reason}){}{meaning}; {}",
                        d.last_transition_time.map(|t| format!(" {} ago", ago(ctx.pass.now, t))).unwrap_or_default(),
                        drift_outcome(c, claim, pool.as_deref())
                    ),
                )
                .pool(pool.as_deref())
                .since(d.last_transition_time)
                .details(serde_json::json!({"reason": reason, "since": d.last_transition_time, "node": claim.status.node_name})),
            ));
        }
    }
    out
}

/// `disruption-blocked`: what Karpenter wants of the node and what stops it, from its
/// state alone.
fn blocked(s: &Arc<NodeDisruption>) -> Finding {
    let wants: Vec<&str> = s.wants.iter().map(|w| w.message.as_str()).collect();
    let blockers: Vec<&str> = s.blockers.iter().map(|b| b.message.as_str()).collect();
    Finding::new(
        Code::DisruptionBlocked,
        // Held back from consolidation only: worth knowing, not yet a problem.
        if s.wants
            .iter()
            .all(|w| w.reason == WantReason::Underutilized)
        {
            Severity::Info
        } else {
            Severity::Warning
        },
        ObjectRef::cluster(ObjectKind::Node, &s.node),
        format!(
            "Karpenter wants to disrupt it ({}) but cannot: {}",
            wants.join(", "),
            blockers.join("; ")
        ),
    )
    .pool(s.nodepool.as_deref())
    .since(s.drifted_since.or(s.expires_at))
    .details(BlockedDetails(s.clone()))
}

/// What comes of a drifted NodeClaim (v1.14.1): one being deleted keeps the condition it
/// had, and is going anyway; drift cannot take one whose NodePool is gone, nor one without
/// a Node (Karpenter's liveness deletes that if it does not register in 15 minutes).
fn drift_outcome(c: &Cluster, claim: &NodeClaim, pool: Option<&str>) -> String {
    if claim.metadata.deletion_timestamp.is_some() {
        return "Karpenter is already deleting it".into();
    }
    match pool {
        Some(p) if !c.nodepools.contains_key(p) => {
            return format!("its NodePool {p} is gone, so drift will not replace it: delete the NodeClaim to replace it")
        }
        None => return "it names no NodePool, so drift will not replace it".into(),
        _ => {}
    }
    if claim
        .status
        .node_name
        .as_deref()
        .unwrap_or_default()
        .is_empty()
    {
        return "it has no Node yet, and drift replaces only nodes: Karpenter deletes it if it does not register within 15 minutes".into();
    }
    "Karpenter replaces it as budgets and blockers allow".into()
}

/// Why an expired node is still here. Karpenter deletes an expired NodeClaim at once,
/// whatever holds other disruption (v1.14.1 `nodeclaim/expiration`): one not deleted says
/// its expiration did not act; one deleting is held by its drain, or past it.
pub(super) fn expired_suffix(s: &NodeDisruption, pods: usize) -> String {
    if !s.deleting {
        return ": Karpenter has not deleted its NodeClaim, which it does as soon as it expires: is Karpenter running, and does it manage the NodeClaim's nodeClassRef?".into();
    }
    match (s.blockers.is_empty(), pods) {
        (true, 0) => ": it is being deleted and no pod is left on it: look at the NodeClaim's finalizers, the instance's termination and volume detachment".into(),
        (true, n) => format!(": it is being drained, {n} pod(s) still on it, none held by a do-not-disrupt or a PDB (are they slow to terminate?)"),
        (false, _) => blockers_suffix(&s.blockers),
    }
}

fn blockers_suffix(blockers: &[Blocker]) -> String {
    if blockers.is_empty() {
        String::new()
    } else {
        format!(
            ": {}",
            blockers
                .iter()
                .map(|b| b.message.as_str())
                .collect::<Vec<_>>()
                .join("; ")
        )
    }
}

fn empty_not_reaped(ctx: &Context, s: &NodeDisruption) -> Option<Finding> {
    let pool = ctx.cluster.nodepools.get(s.nodepool.as_deref()?)?;
    let d = &pool.spec.disruption;
    // Static pools (spec.replicas) are never consolidated.
    if pool.spec.replicas.is_some() {
        return None;
    }
    if !matches!(
        d.consolidation_policy.as_deref(),
        None | Some("WhenEmpty" | "WhenEmptyOrUnderutilized" | "Balanced")
    ) {
        return None;
    }
    let after = match duration::parse_nillable(d.consolidate_after.as_deref().unwrap_or("0s")) {
        Ok(NillableDuration::After(a)) => a,
        _ => return None,
    };
    // Karpenter acts on an empty node only once it has marked its claim Consolidatable
    // (consolidateAfter since the last pod event). It marks every claim of a pool again
    // when the pool changes, so the mark's time is when Karpenter could first act under
    // the current policy: a pool whose consolidateAfter was just shortened is not late
    // for a node that emptied long before (v1.14.1 and v1.15 nodeclaim/disruption).
    if !s.consolidatable {
        return None;
    }
    let since = s.empty_since?;
    let actionable = [Some(since + after), s.consolidatable_since]
        .into_iter()
        .flatten()
        .max()?;
    if ctx.pass.now - actionable <= Duration::minutes(5) {
        return None;
    }
    // Nominations first: the most common reason an empty node stays.
    let mut blockers = s.blockers.clone();
    blockers.sort_by_key(|b| b.kind != BlockerKind::Nominated);
    Some(
        Finding::new(
            Code::EmptyNodeNotReaped,
            Severity::Warning,
            ObjectRef::cluster(ObjectKind::Node, &s.node),
            format!(
                "Empty ({}) for {}, past consolidateAfter {} + 5m (Karpenter could act {} ago), and still here{}",
                match super::workload_pods(ctx.cluster, &s.node).count() {
                    0 => "no pods but DaemonSets".to_string(),
                    n => format!("its {n} pod(s) cost nothing to evict"),
                },
                ago(ctx.pass.now, since),
                d.consolidate_after.as_deref().unwrap_or("0s"),
                ago(ctx.pass.now, actionable),
                blockers_suffix(&blockers)
            ),
        )
        .pool(s.nodepool.as_deref())
        .since(Some(since))
        .details(NotReapedDetails {
            blockers,
            consolidate_after: d.consolidate_after.clone(),
            empty_for: ago(ctx.pass.now, since),
        }),
    )
}
