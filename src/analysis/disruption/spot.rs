//! Spot interruptions: Karpenter's interruption events of the last 24 hours, counted per
//! NodePool and instance. The AWS provider writes each one twice, on the NodeClaim and on
//! its Node: both count once, under the claim's name where kelp can join them.

use std::collections::BTreeMap;

use chrono::Duration;

use super::super::provisioning::claim_pool;
use super::super::Context;
use crate::findings::{Code, Finding, ObjectRef, Severity};
use crate::karpenter::events;
use crate::model::*;

pub(super) fn spot_interruptions(ctx: &Context) -> Vec<Finding> {
    let c = ctx.cluster;
    let mut by_pool: BTreeMap<String, Vec<(&Event, String)>> = BTreeMap::new();
    for e in c.events.values() {
        if !(e.from_karpenter()
            && e.is_any(events::SPOT_INTERRUPTION_REASONS)
            && ctx.within(e.seen(), Duration::hours(24)))
        {
            continue;
        }
        let (pool, instance) = match e.regarding.kind.as_str() {
            "NodeClaim" => (claim_pool(c, &e.regarding.name), e.regarding.name.clone()),
            "Node" => {
                let node = c.nodes.get(&e.regarding.name);
                let claim = node.and_then(|n| c.nodeclaim_for_node(n));
                (
                    node.and_then(|n| n.pool()).map(str::to_string),
                    claim.map_or_else(|| e.regarding.name.clone(), |cl| cl.metadata.name.clone()),
                )
            }
            _ => (None, String::new()),
        };
        if let Some(p) = pool {
            by_pool.entry(p).or_default().push((e, instance));
        }
    }
    by_pool
        .into_iter()
        .map(|(pool, evs)| {
            let mut reasons: BTreeMap<&str, usize> = BTreeMap::new();
            let mut seen: std::collections::BTreeSet<(&str, &str)> = Default::default();
            let mut nodes: Vec<&str> = Vec::new();
            for (e, instance) in &evs {
                if seen.insert((e.reason.as_str(), instance.as_str())) {
                    *reasons.entry(e.reason.as_str()).or_default() += 1;
                }
                if !nodes.contains(&instance.as_str()) {
                    nodes.push(instance);
                }
            }
            nodes.sort_unstable();
            let last = evs.iter().filter_map(|(e, _)| e.seen()).max();
            let summary: Vec<String> = reasons.iter().map(|(r, n)| format!("{n} {r}")).collect();
            Finding::new(
                Code::SpotInterruption,
                Severity::Info,
                ObjectRef::cluster(ObjectKind::NodePool, &pool),
                format!(
                    "{} in the last 24h ({} {})",
                    summary.join(", "),
                    nodes.len(),
                    if nodes.len() == 1 { "node" } else { "nodes" }
                ),
            )
            .pool(Some(&pool))
            .since(last)
            .details(serde_json::json!({"reasons": reasons, "objects": nodes}))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_interruption_written_on_the_claim_and_its_node_counts_once() {
        let event = |kind: &str, name: &str, reason: &str| {
            format!(
                "---\napiVersion: v1\nkind: Event\nmetadata: {{name: {name}.{reason}, namespace: default}}\ninvolvedObject: {{kind: {kind}, name: {name}}}\nreason: {reason}\nmessage: x\nsource: {{component: karpenter}}\nlastTimestamp: \"2026-11-21T09:58:00Z\"\n"
            )
        };
        let mut yaml = String::from(
            "apiVersion: karpenter.sh/v1\nkind: NodeClaim\nmetadata: {name: spot-a, labels: {karpenter.sh/nodepool: spot}}\nstatus: {nodeName: n1}\n---\napiVersion: v1\nkind: Node\nmetadata: {name: n1, labels: {karpenter.sh/nodepool: spot}}\n",
        );
        for reason in ["SpotInterrupted", "TerminatingOnInterruption"] {
            yaml.push_str(&event("NodeClaim", "spot-a", reason));
            yaml.push_str(&event("Node", "n1", reason));
        }
        let mut c = Cluster::default();
        crate::source::load_str("t.yaml", &yaml, &mut c).unwrap();
        let now = chrono::DateTime::parse_from_rfc3339("2026-11-21T10:00:00Z")
            .unwrap()
            .to_utc();
        let found = spot_interruptions(&Context::new(&c, now));
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(
            found[0].message,
            "1 SpotInterrupted, 1 TerminatingOnInterruption in the last 24h (1 node)"
        );
    }
}
