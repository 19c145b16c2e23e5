//! The tally: what the model alone answers, with no analysis: how many nodes, pods,
//! NodePools and NodeClaims there are, and each pool's nodes now. `kelp serve` publishes a
//! new tally the moment a watch event changes the model ([`LiveTally`]), so `/metrics`'
//! node counts and the dashboard API's counts show a new node before the analysis pass
//! that follows it.

use std::sync::{Arc, RwLock};

use super::{Cluster, NodePool};

/// The counts of one state of the model.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Tally {
    pub nodes: usize,
    pub pods: usize,
    pub nodepools: usize,
    pub nodeclaims: usize,
    /// Each NodePool's nodes now ([`Cluster::pool_nodes_now`]), in name order.
    pub pool_nodes: Vec<(String, usize)>,
}

/// The latest tally, swapped whole by the one writer (the model's applier) and read by
/// scrapes and API answers: a reader holds the lock only to clone the `Arc`.
pub type LiveTally = Arc<RwLock<Arc<Tally>>>;

/// The tally of `c`, published.
pub fn live(c: &Cluster) -> LiveTally {
    Arc::new(RwLock::new(Arc::new(c.tally())))
}

/// The latest tally published in `live`.
pub fn latest(live: &LiveTally) -> Arc<Tally> {
    live.read().unwrap_or_else(|e| e.into_inner()).clone()
}

/// Publish `c`'s tally in `live` when it differs from the one there; whether it did.
/// Allocates only when it publishes.
pub fn publish(live: &LiveTally, c: &Cluster) -> bool {
    if latest(live).counts_of(c) {
        return false;
    }
    let next = Arc::new(c.tally());
    // The previous tally is let go outside the lock.
    let previous = std::mem::replace(&mut *live.write().unwrap_or_else(|e| e.into_inner()), next);
    drop(previous);
    true
}

impl Tally {
    /// Whether this is `c`'s tally, compared without building one.
    fn counts_of(&self, c: &Cluster) -> bool {
        self.nodes == c.nodes.len()
            && self.pods == c.pods.len()
            && self.nodepools == c.nodepools.len()
            && self.nodeclaims == c.nodeclaims.len()
            && self.pool_nodes.len() == c.nodepools.len()
            && self.pool_nodes.iter().zip(c.nodepools.iter()).all(
                |((name, n), (pool_name, pool))| name == pool_name && *n == c.pool_nodes_now(pool),
            )
    }
}

impl Cluster {
    /// The model's counts now.
    pub fn tally(&self) -> Tally {
        Tally {
            nodes: self.nodes.len(),
            pods: self.pods.len(),
            nodepools: self.nodepools.len(),
            nodeclaims: self.nodeclaims.len(),
            pool_nodes: self
                .nodepools
                .iter()
                .map(|(name, pool)| (name.clone(), self.pool_nodes_now(pool)))
                .collect(),
        }
    }

    /// A pool's nodes now: its Node objects (live; a NodeClaim that never launched is no
    /// node), else, when kelp sees neither nodes nor NodeClaims of it (a partial dump),
    /// what its status says (Karpenter updates status.nodes a few seconds behind).
    pub fn pool_nodes_now(&self, pool: &NodePool) -> usize {
        let name = &pool.metadata.name;
        let nodes = self.pool_node_count(name);
        if nodes == 0 && self.claims_in_pool(name).next().is_none() {
            pool.status.nodes.unwrap_or(0).max(0) as usize
        } else {
            nodes
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::testing::{cluster, node, nodepool};

    use super::*;

    #[test]
    fn a_new_node_is_published_and_an_unchanged_model_is_not() {
        let (a, n1, n2) = (nodepool("a"), node("n1").pool("a"), node("n2").pool("a"));
        let mut c = cluster([&a, &n1]);
        let live = live(&c);
        assert_eq!(latest(&live).pool_nodes, vec![("a".to_string(), 1)]);
        assert!(!publish(&live, &c), "the same model published again");
        let before = latest(&live);
        c = cluster([&a, &n1, &n2]);
        assert!(publish(&live, &c));
        let now = latest(&live);
        assert_eq!((before.nodes, now.nodes), (1, 2));
        assert_eq!(now.pool_nodes, vec![("a".to_string(), 2)]);
    }

    #[test]
    fn a_pool_with_neither_nodes_nor_claims_counts_what_its_status_says() {
        let pool = nodepool("lagging").set(&["status", "nodes"], serde_json::json!(3));
        let c = cluster([&pool]);
        assert_eq!(c.tally().pool_nodes, vec![("lagging".to_string(), 3)]);
    }
}
