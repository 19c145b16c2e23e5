//! Whether a cheaper node could replace one whose pods do not all fit on the other nodes,
//! the way Karpenter v1.14.1's single-node consolidation decides it
//! (`computeConsolidation`): the pods left over go on one new NodeClaim from the first
//! NodePool that takes them all (its instance types judged from the catalogue, as for a
//! pending pod); more than one NodeClaim, or a pod no pool takes, and Karpenter leaves the
//! node; a spot node is not replaced with spot (spot-to-spot consolidation is off by
//! default); otherwise only the types cheaper than the node remain, and with none the node
//! stays ("Can't replace with a cheaper node").

use crate::analysis::provisioning::instance_types::{container_host_ports, PoolTypes};
use crate::analysis::provisioning::{pod_requests, pod_terms, Launch, PoolSet, TypeVerdict};
use crate::karpenter::labels;
use crate::karpenter::requirements::{self, Requirements};
use crate::karpenter::resources::Resources;
use crate::karpenter::taints;
use crate::model::{Node, Pod};

const HOSTNAME: &str = "kubernetes.io/hostname";

/// What a replacement would be.
#[derive(Debug, Clone, PartialEq)]
pub enum Replacement {
    /// A cheaper node holds them: Karpenter replaces the node.
    Cheaper {
        pool: String,
        instance_type: String,
        capacity_type: String,
        price: f64,
        /// The node's own price, as compared.
        was: f64,
    },
    /// The cheapest node that holds them costs at least as much as this one.
    NoCheaper {
        pool: String,
        instance_type: String,
        price: f64,
        was: f64,
    },
    /// A spot node whose replacement would be spot.
    SpotToSpot,
    /// They need more than one new node.
    Multiple,
    /// A pod no pool takes at all.
    WouldNotSchedule(String),
    /// kelp cannot tell, and why.
    Unknown(String),
}

/// The replacement for `node` (of `price` where kelp knows one) whose `pods` fit nowhere
/// else. The node's own price is its offering's in the catalogue where it has it, as
/// Karpenter prices it (a price label is rounded). A pool whose template has a
/// PreferNoSchedule taint a pod does not tolerate is tried only after every other (as
/// Karpenter relaxes that preference last), and not at all without `relax`: for pods that
/// fit on the nodes there once their preferences go, which Karpenter places there first.
pub fn replacement(
    pools: &PoolSet,
    node: &Node,
    pods: &[&Pod],
    price: Option<f64>,
    relax: bool,
) -> Replacement {
    let Some(catalog) = &pools.catalog else {
        return Replacement::Unknown(
            "kelp cannot price one without an instance-type catalogue".into(),
        );
    };
    let capacity_type = node.capacity_type();
    let own = node
        .instance_type()
        .and_then(|t| catalog.get(t))
        .and_then(|t| {
            t.offerings
                .iter()
                .find(|o| {
                    Some(o.zone.as_str()) == node.zone()
                        && Some(o.capacity_type.as_str()) == capacity_type
                })?
                .price
        });
    let Some(price) = own.or(price) else {
        return Replacement::Unknown("the node's own price is unknown".into());
    };
    let freed = freed(node);
    let freed = freed.as_ref().map(|(p, r)| (*p, r));
    let Some(launch) = claim_for(pools, pods, freed, relax) else {
        // Each alone, then: does every pod have some pool?
        for p in pods {
            if claim_for(pools, std::slice::from_ref(p), freed, relax).is_none() {
                let m = &p.metadata;
                return Replacement::WouldNotSchedule(format!(
                    "{}/{}",
                    m.namespace.as_deref().unwrap_or_default(),
                    m.name
                ));
            }
        }
        return Replacement::Multiple;
    };
    let (pool, launch, reqs) = launch;
    // As Karpenter: all candidates spot and the replacement's requirements allow spot.
    if capacity_type == Some("spot") && reqs.allows(labels::CAPACITY_TYPE, "spot") {
        return Replacement::SpotToSpot;
    }
    let cheapest = launch
        .cheapest
        .iter()
        .filter_map(|o| Some((o, o.price_per_hour?.0)))
        .min_by(|a, b| a.1.total_cmp(&b.1));
    match cheapest {
        Some((o, p)) if p < price => Replacement::Cheaper {
            pool,
            instance_type: o.instance_type.clone(),
            capacity_type: o.capacity_type.clone(),
            price: p,
            was: price,
        },
        // A type the catalogue cannot settle might hold them for less than the node.
        Some(_) if launch.unsure_cheapest.is_some_and(|u| u.0 < price) => Replacement::Unknown(
            format!(
                "kelp cannot tell: the cheapest type it is sure of is not cheaper, but {} it cannot settle might be",
                launch.unsure
            ),
        ),
        Some((o, p)) => Replacement::NoCheaper {
            pool,
            instance_type: o.instance_type.clone(),
            price: p,
            was: price,
        },
        None => Replacement::Unknown("the catalogue has no price for the types that hold them".into()),
    }
}

/// Karpenter simulates without the candidate: its capacity (and one node) no longer counts
/// against its own pool's limits.
fn freed(node: &Node) -> Option<(&str, Resources)> {
    node.pool()
        .zip(Resources::from_quantities(&node.status.capacity).ok())
        .map(|(pool, mut capacity)| {
            capacity.0.insert("nodes".into(), 1.0);
            (pool, capacity)
        })
}

/// The one new node that would hold all of `node`'s `pods` (the first pool that takes them
/// all, the cheapest type the catalogue is sure of), as (pool, instance type, $/h): what a
/// drift replacement costs when they all go on one new node. None without a catalogue, a
/// price, or a single node that holds them.
pub fn cheapest_claim(
    pools: &PoolSet,
    node: &Node,
    pods: &[&Pod],
) -> Option<(String, String, f64)> {
    pools.catalog.as_ref()?;
    let freed = freed(node);
    let freed = freed.as_ref().map(|(p, r)| (*p, r));
    let (pool, launch, _) = claim_for(pools, pods, freed, true)?;
    let (o, price) = launch
        .cheapest
        .iter()
        .filter_map(|o| Some((o, o.price_per_hour?.0)))
        .min_by(|a, b| a.1.total_cmp(&b.1))?;
    Some((pool, o.instance_type.clone(), price))
}

/// One NodeClaim for `pods` ([`one_claim`]): held to the pools' PreferNoSchedule taints
/// first, then, with `relax` and where a pool carries one, tolerating them.
fn claim_for(
    pools: &PoolSet,
    pods: &[&Pod],
    freed: Option<(&str, &Resources)>,
    relax: bool,
) -> Option<(String, Launch, Requirements)> {
    one_claim(pools, pods, freed, false).or_else(|| {
        let templates = pools
            .ordered
            .iter()
            .map(|p| p.pool.spec.template.spec.taints.as_slice());
        (relax && taints::any_pool_soft(templates))
            .then(|| one_claim(pools, pods, freed, true))
            .flatten()
    })
}

/// The first pool (in Karpenter's order) with a type that holds all `pods` on one node;
/// `freed` is the candidate's pool and capacity, which its own pool's limits get back.
/// `soft`: the pods tolerate the pools' PreferNoSchedule taints.
fn one_claim(
    pools: &PoolSet,
    pods: &[&Pod],
    freed: Option<(&str, &Resources)>,
    soft: bool,
) -> Option<(String, Launch, Requirements)> {
    'pools: for p in &pools.ordered {
        if p.not_ready.is_some() {
            continue;
        }
        let (Some(types), Ok(pool_reqs)) = (&p.types, &p.requirements) else {
            continue;
        };
        let rebuilt = match (freed, &pools.catalog, &p.limits) {
            (Some((pool, capacity)), Some(catalog), Ok(limits))
                if pool == p.name && !limits.0.is_empty() =>
            {
                let mut usage = p.usage.clone();
                for (k, v) in &capacity.0 {
                    *usage.0.entry(k.clone()).or_default() -= v;
                }
                Some(PoolTypes::of(
                    catalog,
                    p.pool,
                    pool_reqs,
                    Some(limits),
                    &usage,
                    &pools.daemons,
                    pools.provider,
                ))
            }
            _ => None,
        };
        let types = rebuilt.as_ref().unwrap_or(types);
        if types.pool_reject.is_some() {
            continue;
        }
        let mut reqs = pool_reqs.clone();
        let mut requests = Resources::default();
        for pod in pods {
            let template = &p.pool.spec.template.spec.taints;
            if !taints::untolerated(&pod.spec.tolerations, template).is_empty()
                || !soft
                    && taints::soft(&pod.spec.tolerations, template)
                        .next()
                        .is_some()
            {
                continue 'pools;
            }
            let Ok(terms) = pod_terms(&pod.spec, pools.provider) else {
                continue 'pools;
            };
            // A new node has a hostname of its own: a pod pinned to a hostname never goes there.
            let Some(term) = terms.iter().find(|t| {
                !matches!(
                    t.operator(HOSTNAME),
                    Some(requirements::Operator::In | requirements::Operator::DoesNotExist)
                ) && requirements::compatible(t, &reqs).is_ok()
            }) else {
                continue 'pools;
            };
            reqs = reqs.intersect(term);
            requests.add(&pod_requests(&pod.spec));
        }
        // `judge` counts one pod; the others count too.
        requests.add(&Resources(
            [("pods".to_string(), pods.len() as f64 - 1.0)].into(),
        ));
        let ports: Vec<_> = pods
            .iter()
            .flat_map(|pod| container_host_ports(&pod.spec))
            .collect();
        if let TypeVerdict::Compatible(launch) = types.judge(&reqs, &requests, &ports) {
            return Some((p.name.to_string(), launch, reqs));
        }
    }
    None
}
