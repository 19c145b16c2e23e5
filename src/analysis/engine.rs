//! How a pass comes by the parts its findings share: worked out afresh ([`Fresh`], every
//! one-shot command), or kept from the last pass where nothing they read has changed
//! ([`super::incremental::Incremental`], `kelp serve`, which implements [`Engine`] beside
//! its caches). Both give the same answers; [`super::Context::build`] asks one of them for
//! each part, without knowing which.

use std::collections::BTreeMap;
use std::sync::Arc;

use chrono::{DateTime, Utc};

use super::catalog;
use super::disruption::{self, NodeStates, PoolBudgets};
use super::hold::{self, Hold};
use super::placement;
use super::provisioning::{self, PodDiagnosis, PoolSet, PoolUsage};
use super::provisioning::{affinity_index::Guards, spread_index::KeptSpread};
use crate::findings::Finding;
use crate::model::{Catalog, Cluster};

/// The parts of a pass, each asked for once per pass, in this order.
pub trait Engine {
    /// The instance-type catalogue the pass judges with ([`catalog::resolve`]).
    fn catalog(&mut self, c: &Cluster) -> Option<Arc<Catalog>> {
        catalog::resolve(c, provisioning::cluster_provider(c))
    }
    /// Every pool's usage against its limits, by name.
    fn pool_usages(&mut self, c: &Cluster) -> BTreeMap<String, PoolUsage>;
    /// A zone-spread index an earlier pass built, where it still serves.
    fn spread_index(&mut self, _c: &Cluster) -> Option<KeptSpread> {
        None
    }
    /// The guarding running pods an earlier pass found, where they still hold.
    fn guards(&mut self, _c: &Cluster) -> Option<Arc<Guards>> {
        None
    }
    /// Every pod Karpenter has to place, diagnosed.
    fn pending(
        &mut self,
        c: &Cluster,
        now: DateTime<Utc>,
        pools: &PoolSet,
    ) -> Vec<Arc<PodDiagnosis>>;
    /// Every pool's disruption budgets at `now`.
    fn pool_budgets(&mut self, c: &Cluster, now: DateTime<Utc>) -> BTreeMap<String, PoolBudgets>;
    /// What holds each pending pod, in `pending`'s order.
    fn holds(&mut self, c: &Cluster, pending: &[Arc<PodDiagnosis>]) -> Vec<Arc<Hold>>;
    /// The `daemonset-nodepool-mismatch` findings.
    fn daemonset_mismatch(
        &mut self,
        c: &Cluster,
        usages: &BTreeMap<String, PoolUsage>,
    ) -> Vec<Finding>;
    /// The disruption state of every Karpenter node; the pools' indexes this pass built
    /// are the engine's to keep for the next.
    fn node_states(
        &mut self,
        c: &Cluster,
        now: DateTime<Utc>,
        pools: &PoolSet,
        budgets: &BTreeMap<String, PoolBudgets>,
    ) -> NodeStates;
}

/// Every part worked out afresh.
#[derive(Debug, Default, Clone, Copy)]
pub struct Fresh;

impl Engine for Fresh {
    fn pool_usages(&mut self, c: &Cluster) -> BTreeMap<String, PoolUsage> {
        provisioning::pool_usages(c)
    }

    fn pending(
        &mut self,
        c: &Cluster,
        now: DateTime<Utc>,
        pools: &PoolSet,
    ) -> Vec<Arc<PodDiagnosis>> {
        let mut cache = provisioning::DiagnosisCache::default();
        provisioning::unschedulable_pods(c, now)
            .map(|(p, events)| {
                Arc::new(provisioning::diagnose_cached(
                    pools, p, events, now, &mut cache,
                ))
            })
            .collect()
    }

    fn pool_budgets(&mut self, c: &Cluster, now: DateTime<Utc>) -> BTreeMap<String, PoolBudgets> {
        disruption::pool_budgets(c, now)
    }

    fn holds(&mut self, c: &Cluster, pending: &[Arc<PodDiagnosis>]) -> Vec<Arc<Hold>> {
        hold::holds(c, pending)
    }

    fn daemonset_mismatch(
        &mut self,
        c: &Cluster,
        usages: &BTreeMap<String, PoolUsage>,
    ) -> Vec<Finding> {
        placement::daemonset_mismatch(c, usages)
    }

    fn node_states(
        &mut self,
        c: &Cluster,
        now: DateTime<Utc>,
        pools: &PoolSet,
        budgets: &BTreeMap<String, PoolBudgets>,
    ) -> NodeStates {
        disruption::node_states(c, now, Some(pools), budgets)
    }
}
