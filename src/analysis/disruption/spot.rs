//! Spot interruptions: Karpenter's interruption events of the last 24 hours, counted per
//! NodePool.

use std::collections::BTreeMap;

use chrono::Duration;

use super::super::provisioning::claim_pool;
use super::super::Context;
use crate::findings::{Code, Finding, ObjectRef, Severity};
use crate::karpenter::events;
use crate::model::*;

pub(super) fn spot_interruptions(ctx: &Context) -> Vec<Finding> {
    let c = ctx.cluster;
    let mut by_pool: BTreeMap<String, Vec<&Event>> = BTreeMap::new();
    for e in c.events.values() {
        if !(e.from_karpenter()
            && events::SPOT_INTERRUPTION_REASONS.contains(&e.reason.as_str())
            && ctx.within(e.seen(), Duration::hours(24)))
        {
            continue;
        }
        let pool = match e.regarding.kind.as_str() {
            "NodeClaim" => claim_pool(c, &e.regarding.name),
            "Node" => c
                .nodes
                .get(&e.regarding.name)
                .and_then(|n| n.pool())
                .map(str::to_string),
            _ => None,
        };
        if let Some(p) = pool {
            by_pool.entry(p).or_default().push(e);
        }
    }
    by_pool
        .into_iter()
        .map(|(pool, evs)| {
            let mut reasons: BTreeMap<&str, usize> = BTreeMap::new();
            let mut nodes: Vec<&str> = Vec::new();
            for e in &evs {
                *reasons.entry(e.reason.as_str()).or_default() += 1;
                if !nodes.contains(&e.regarding.name.as_str()) {
                    nodes.push(&e.regarding.name);
                }
            }
            nodes.sort_unstable();
            let last = evs.iter().filter_map(|e| e.seen()).max();
            let summary: Vec<String> = reasons.iter().map(|(r, n)| format!("{n} {r}")).collect();
            Finding::new(
                Code::SpotInterruption,
                Severity::Info,
                ObjectRef::cluster(ObjectKind::NodePool, &pool),
                format!(
                    "{} in the last 24h ({} objects)",
                    summary.join(", "),
                    nodes.len()
                ),
            )
            .pool(Some(&pool))
            .since(last)
            .details(serde_json::json!({"reasons": reasons, "objects": nodes}))
        })
        .collect()
}
