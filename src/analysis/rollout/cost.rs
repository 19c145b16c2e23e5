//! What a rollout does to a pool's $/h: the drifting nodes' price against their
//! replacements', each node's pods on one new node from the pools as the change leaves them
//! (the cheapest type the catalogue is sure of). Karpenter may put some of those pods on
//! nodes already there, so the replacements' figure is an upper bound; a node with nothing
//! to move is replaced by nothing.

use serde::Serialize;

use super::super::capacity::node_price;
use super::super::disruption::replace::cheapest_claim;
use super::super::provisioning::PoolSet;
use crate::model::*;

/// The $/h of a pool's drifting nodes and of their replacements, over what kelp can price.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Cost {
    /// The drifting nodes' $/h, summed over the `priced` whose price kelp knows.
    pub drifting_per_hour: f64,
    pub priced: usize,
    /// Their replacements' $/h, summed over the `replaced` kelp could price (a node with
    /// nothing to move counts, at 0).
    pub replacements_per_hour: f64,
    pub replaced: usize,
    /// Drifting nodes whose replacement kelp cannot price: no catalogue, no price, or pods
    /// that no single new node holds.
    pub unknown: usize,
}

/// The cost of replacing `nodes` (names) with the pools `after`.
pub fn cost(c: &Cluster, after: &PoolSet, nodes: &[&str]) -> Cost {
    let mut out = Cost {
        drifting_per_hour: 0.0,
        priced: 0,
        replacements_per_hour: 0.0,
        replaced: 0,
        unknown: 0,
    };
    for name in nodes {
        let Some(node) = c.nodes.get(*name) else {
            out.unknown += 1;
            continue;
        };
        if let Some(p) = node_price(c, node).filter(|p| p.is_finite()) {
            out.drifting_per_hour += p;
            out.priced += 1;
        }
        let pods: Vec<&Pod> = c
            .pods_on(name)
            .filter(|p| !p.metadata.owned_by("DaemonSet") && !p.metadata.owned_by("Node"))
            .collect();
        if pods.is_empty() {
            out.replaced += 1;
            continue;
        }
        match cheapest_claim(after, node, &pods) {
            Some((_, _, price)) => {
                out.replacements_per_hour += price;
                out.replaced += 1;
            }
            None => out.unknown += 1,
        }
    }
    out
}
