//! Provisioning: why pending pods wait. kelp computes each NodePool's verdict for a pod
//! the way Karpenter decides (readiness, limits, taints, requirements, in Karpenter's pool
//! order), then reads Karpenter's FailedScheduling event beside it as evidence: since
//! v1.5 that text no longer names the pools, so the verdict cannot come from it alone.
//!
//! By domain:
//! - [`pools`]: the NodePools once per pass (requirements, usage, readiness), what a pool
//!   admits, and the readiness and no-instance-type findings;
//! - [`pending`]: which pods Karpenter considers, their requests and requirement terms,
//!   and DaemonSet pods with no room;
//! - [`diagnosis`]: each pool's verdict for a pod, and `pod-unschedulable`;
//! - [`kept`]: verdicts `kelp serve` keeps from one pass to the next;
//! - [`evidence`]: Karpenter's event cross-checked with those verdicts;
//! - [`summary`]: what holds a pod in one line, quoting Karpenter's first reasons;
//! - [`limits`]: pools at or near their limits;
//! - [`nominations`]: nominations that never bound;
//! - [`nodeclaims`]: NodeClaims stuck launching, registering or initialising, and
//!   NotReady nodes;
//! - [`topology`]: a pending pod's zone spread against the zones each pool allows, and
//!   the placement among other pods kelp does not judge (which leaves a pool "unknown");
//! - [`instance_types`]: the instance types each pool can launch for a pod, from a
//!   catalogue, and the launch Karpenter would make.
//!
//! This module owns the wiring ([`findings`]) and re-exports every public item, so
//! paths such as `crate::analysis::provisioning::PoolSet` name them here.

pub mod affinity;
pub mod affinity_index;
pub mod diagnosis;
pub mod evidence;
pub mod instance_types;
pub mod kept;
pub mod limits;
pub mod nodeclaims;
pub mod nominations;
pub mod pending;
pub mod pools;
pub mod spread_index;
pub mod summary;
pub mod topology;
pub mod verdict;

pub use diagnosis::{diagnose, diagnose_cached, evaluate, DiagnosisCache, PodDiagnosis};
pub use evidence::EventEvidence;
pub use instance_types::{describe_launch, Launch, LaunchOption, TypeVerdict};
pub use kept::KeptVerdicts;
pub use limits::{every_instance_has, no_instance_type_left};
pub use nodeclaims::{claim_pool, LAUNCH_ERRORS};
pub use nominations::NominationDetails;
pub use pending::{
    daemon_terms, daemonset_target, pod_requests, pod_terms, unschedulable_pods, PodEvents,
};
pub use pools::{
    cluster_provider, pool_not_ready, pool_usages, usages_without, NotReady, PoolAdmits, PoolInfo,
    PoolSet, PoolUsage,
};
pub use verdict::{PoolVerdict, Reason, Verdict, VerdictSource};

use std::sync::Arc;

use super::Context;
use crate::findings::Finding;

/// How long a pod may wait before kelp calls it critical; also the nomination deadline.
pub const GRACE: i64 = 5;

/// Every provisioning finding, in one pass over the context.
pub fn findings(ctx: &Context) -> Vec<Arc<Finding>> {
    let mut out = diagnosis::unschedulable(ctx);
    for more in [
        nominations::nominated_not_bound(ctx),
        pools::pool_readiness(ctx),
        limits::limits(ctx),
        pools::no_instance_types(ctx),
        nodeclaims::nodeclaims(ctx),
        nodeclaims::nodes_not_ready(ctx),
        pending::daemonset_pods_pending(ctx),
    ] {
        out.extend(super::shared(more));
    }
    out
}
