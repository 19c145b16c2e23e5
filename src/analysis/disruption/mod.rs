//! Disruption: what Karpenter wants to do to a node (drift, expiry, emptiness) and what
//! stops it: do-not-disrupt pods and nodes, PDBs with no disruptions allowed, nominations,
//! initialisation, a missing NodePool, and budgets evaluated at `now` in UTC.
//!
//! By domain:
//! - [`state`]: each Karpenter node's disruption state and its blockers, once per pass;
//! - [`blockers`]: what holds a node, per want and per phase, as Karpenter decides it;
//! - [`budget`]: Karpenter's budget arithmetic and the `budget-blocking` finding;
//! - [`blocked`]: nodes Karpenter wants gone and has not removed, and drifted NodeClaims;
//! - [`consolidation`]: why each node is, or is not, consolidated;
//! - [`replace`]: whether a cheaper node could replace one whose pods fit nowhere else;
//! - [`repair`]: node repair stopped by its breaker in a pool;
//! - [`spot`]: spot interruptions per NodePool.
//!
//! This module owns the wiring ([`findings`]) and re-exports every public item, so
//! paths such as `crate::analysis::disruption::NodeDisruption` name them here.

pub mod blocked;
pub mod blockers;
pub mod budget;
pub mod consolidation;
pub mod consolidation_blocked;
pub mod pods;
pub mod repair;
pub mod replace;
pub mod spot;
pub mod state;
pub mod verdict;

pub use blocked::{BlockedDetails, NotReapedDetails};
pub use budget::{budget_counts, pool_allowed, pool_budgets, pool_budgets_with, PoolBudgets};
pub use pods::{karpenter_empty, workload_pods};
pub use state::{
    karpenter_node, karpenter_node_with, node_disruption, node_disruption_at, node_states,
    NodeDisruption, NodeInputs, NodeStates, Nominations, DEFAULT_EXPIRE_AFTER,
};
pub use verdict::{Blocker, Want, WantReason};

use std::sync::Arc;

use super::Context;
use crate::findings::Finding;

/// Every disruption finding, in one pass over the context's node states.
pub fn findings(ctx: &Context) -> Vec<Arc<Finding>> {
    let mut out = blocked::findings(ctx);
    out.extend(consolidation_blocked::findings(ctx));
    for more in [
        budget::budget_blocking(ctx),
        spot::spot_interruptions(ctx),
        repair::findings(ctx),
    ] {
        out.extend(super::shared(more));
    }
    out
}
