//! Node repair stopped by its breaker: a NodePool where more than 20% of the nodes carry a
//! condition the provider's repair policies name, so Karpenter repairs none of them
//! (`node-repair-blocked`).
//!
//! kelp counts the unhealthy nodes itself, as Karpenter does, but speaks only where
//! Karpenter's own `NodeRepairBlocked` event shows that repair runs (it needs the
//! `NodeRepair` feature gate, which a cluster does not show): the finding holds while the
//! count stays over the threshold, and resolves as soon as enough nodes recover, whatever
//! the event's age.

use chrono::Duration;
use serde::Serialize;

use super::super::Context;
use crate::findings::{Code, Finding, ObjectRef, Severity};
use crate::karpenter::events::Reason;
use crate::karpenter::labels::NODEPOOL;
use crate::karpenter::repair::{self, RepairBlocked};
use crate::model::{Cluster, Node, ObjectKind};

/// How long a `NodeRepairBlocked` event shows that repair runs: Karpenter writes it again
/// every 15 minutes per object while the breaker holds and a node is due for repair.
const EVENT_FRESH_MINUTES: i64 = 20;

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RepairBlockedDetails {
    pub nodes: usize,
    pub threshold: usize,
    /// The unhealthy nodes, each with the condition that makes it so.
    pub unhealthy: Vec<UnhealthyNode>,
    pub event: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct UnhealthyNode {
    pub node: String,
    pub condition: String,
}

/// A node's first condition a repair policy names, as `Type=Status`.
fn unhealthy_by(node: &Node, policies: &[(&str, &str)]) -> Option<String> {
    node.status.conditions.iter().find_map(|c| {
        let (type_, status) = (&*c.type_, &*c.status);
        policies
            .iter()
            .any(|(t, s)| *t == type_ && *s == status)
            .then(|| format!("{type_}={status}"))
    })
}

/// The pool a `NodeRepairBlocked` event is about, and its message, for the recent ones.
fn recent_blocked_events<'c>(ctx: &Context<'c>) -> Vec<(String, &'c str)> {
    let c: &'c Cluster = ctx.cluster;
    c.events
        .values()
        .filter(|e| e.from_karpenter() && e.is(Reason::NodeRepairBlocked))
        .filter(|e| ctx.within(e.seen(), Duration::minutes(EVENT_FRESH_MINUTES)))
        .filter_map(|e| {
            let pool = match repair::parse_repair_blocked(&e.message) {
                RepairBlocked::Pool(Some(p)) => p,
                // The older controller writes it on the node: its pool is the node's.
                RepairBlocked::Pool(None) if e.regarding.kind == ObjectKind::Node.as_str() => c
                    .nodes
                    .get(&e.regarding.name)?
                    .metadata
                    .labels
                    .get(NODEPOOL)?
                    .clone(),
                _ => return None,
            };
            Some((pool, e.message.as_str()))
        })
        .collect()
}

/// One `node-repair-blocked` finding per pool whose breaker holds now, where Karpenter
/// said it stopped repair.
pub fn findings(ctx: &Context) -> Vec<Finding> {
    let c = ctx.cluster;
    let mut events = recent_blocked_events(ctx);
    events.sort();
    events.dedup_by(|a, b| a.0 == b.0);
    let policies = repair::unhealthy_conditions(super::super::provisioning::cluster_provider(c));
    let mut out = Vec::new();
    for (pool, message) in events {
        let Some(p) = c.nodepools.get(&pool) else {
            continue;
        };
        let nodes: Vec<&Node> = c.nodes_in_pool(&pool).collect();
        let unhealthy: Vec<UnhealthyNode> = nodes
            .iter()
            .filter_map(|n| {
                Some(UnhealthyNode {
                    node: n.metadata.name.clone(),
                    condition: unhealthy_by(n, policies)?,
                })
            })
            .collect();
        if !repair::breaker_tripped(unhealthy.len(), nodes.len()) {
            continue;
        }
        let threshold = repair::breaker_threshold(nodes.len());
        let listed: Vec<String> = unhealthy
            .iter()
            .take(5)
            .map(|u| format!("{} ({})", u.node, u.condition))
            .collect();
        let more = unhealthy.len().saturating_sub(listed.len());
        out.push(
            Finding::new(
                Code::NodeRepairBlocked,
                Severity::Warning,
                ObjectRef::of(ObjectKind::NodePool, &p.metadata),
                format!(
                    "Karpenter repairs no node of NodePool {pool}: {} of its {} nodes are unhealthy, more than 20% (at most {threshold} may be), so its repair breaker holds until {}: {}{}. Karpenter: {}",
                    unhealthy.len(),
                    nodes.len(),
                    match unhealthy.len() - threshold {
                        1 => "one of them recovers".to_string(),
                        k => format!("{k} of them recover"),
                    },
                    listed.join(", "),
                    if more > 0 { format!(" and {more} more") } else { String::new() },
                    message.trim()
                ),
            )
            .pool(Some(&pool))
            .details(RepairBlockedDetails {
                nodes: nodes.len(),
                threshold,
                unhealthy,
                event: message.trim().to_string(),
            }),
        );
    }
    out
}
