//! What kelp knows of the Karpenter controller itself: the APIs it serves ([`ApiInfo`])
//! and what its `/metrics` report ([`ControllerMetrics`]: offerings and prices, instance
//! sizes, pool costs, disruption decisions, its build).

use std::collections::{BTreeMap, BTreeSet};

use super::shared::FastMap;

/// What kelp learnt about the Karpenter APIs (from CRDs, discovery, or objects seen).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ApiInfo {
    /// `group/version` strings served for Karpenter's groups, e.g. `karpenter.sh/v1`.
    pub served: BTreeSet<String>,
    /// Whether a source could tell (a live cluster's discovery, or CRDs in a dump).
    pub authoritative: bool,
    /// Legacy objects seen (`karpenter.sh/v1beta1 NodePool x`, `Provisioner y`).
    pub legacy_objects: Vec<String>,
}

/// One offering from the Karpenter controller's metrics.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Offering {
    pub instance_type: String,
    pub zone: String,
    pub capacity_type: String,
    pub price: Option<f64>,
    pub available: Option<bool>,
}

/// What kelp read from a Karpenter controller `/metrics` exposition.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ControllerMetrics {
    pub offerings: Vec<Offering>,
    /// `karpenter_cloudprovider_instance_type_cpu_cores` and `_memory_bytes` (AWS
    /// provider): vCPUs and EC2 memory in bytes, by instance type.
    pub instance_cpu: BTreeMap<String, f64>,
    pub instance_memory: BTreeMap<String, f64>,
    /// `karpenter_nodepools_cost_total` by pool.
    pub nodepool_cost: BTreeMap<String, f64>,
    /// `karpenter_voluntary_disruption_eligible_nodes` by reason (`underutilized`, `empty`,
    /// `drifted`): the candidates of Karpenter's last pass of each method.
    pub eligible_nodes: BTreeMap<String, f64>,
    /// `karpenter_voluntary_disruption_decisions_by_nodepool_total`: decisions carried out,
    /// by (nodepool, decision, reason), e.g. (`default`, `delete`, `underutilized`).
    pub decisions: BTreeMap<(String, String, String), f64>,
    /// `karpenter_build_info`'s `version` label: the release the controller was built
    /// from (None when unstamped, `unspecified`).
    pub build_version: Option<String>,
    /// Where each offering is in `offerings`, by instance type, zone and capacity type:
    /// built on first use ([`ControllerMetrics::offering`]).
    pub(crate) offering_index: super::shared::Memo<OfferingIndex>,
}

type OfferingIndex = FastMap<String, FastMap<String, FastMap<String, usize>>>;

impl ControllerMetrics {
    /// The offering of an instance type in a zone and capacity type, if the controller
    /// reports it (the first, should it report one twice).
    pub fn offering(
        &self,
        instance_type: &str,
        zone: &str,
        capacity_type: &str,
    ) -> Option<&Offering> {
        let index = self.offering_index.get_or_init(|| {
            let mut index = OfferingIndex::default();
            for (i, o) in self.offerings.iter().enumerate() {
                index
                    .entry(o.instance_type.clone())
                    .or_default()
                    .entry(o.zone.clone())
                    .or_default()
                    .entry(o.capacity_type.clone())
                    .or_insert(i);
            }
            index
        });
        let i = *index.get(instance_type)?.get(zone)?.get(capacity_type)?;
        self.offerings.get(i)
    }
}
