//! The picture of now: the gauges computed once per pass from its typed results
//! (unschedulable pods by what holds them, drifted, disruption-blocked and unconsolidated
//! nodes, NodePool usage against limits and $/hr), encoded at scrape time. Each pool's node count
//! is the model's alone: it is published as the watch event is applied ([`crate::metrics::live`]).

use std::collections::BTreeMap;

use crate::analysis::capacity::node_price;
use crate::analysis::disruption::BlockedDetails;
use crate::analysis::provisioning::PodDiagnosis;
use crate::analysis::Pass;
use crate::findings::{Code, Finding};
use crate::karpenter::resources::Resources;
use crate::metrics::common::label_value;
use crate::metrics::defs::{self, MetricDef};
use crate::model::shared::FastMap;
use crate::model::*;

/// One gauge family of the picture of now: label values (in the definition's label order)
/// and the value.
#[derive(Debug, Clone, PartialEq)]
pub struct GaugeFamily {
    pub def: MetricDef,
    pub samples: BTreeMap<Vec<String>, f64>,
}

pub(super) fn family(def: MetricDef) -> GaugeFamily {
    GaugeFamily {
        def,
        samples: BTreeMap::new(),
    }
}

impl GaugeFamily {
    fn add(&mut self, labels: &[&str], v: f64) {
        *self
            .samples
            .entry(labels.iter().map(|s| s.to_string()).collect())
            .or_insert(0.0) += v;
    }
}

/// The kinds of blocker a disruption-blocked finding names, each once (a node has a few
/// blockers).
pub(super) fn blocker_kinds(f: &Finding) -> Vec<&'static str> {
    let mut kinds: Vec<&'static str> = f
        .details
        .downcast_ref::<BlockedDetails>()
        .map(|d| d.blockers().iter().map(|b| b.kind.as_str()).collect())
        .unwrap_or_default();
    kinds.sort_unstable();
    kinds.dedup();
    kinds
}

/// Each (pool, capacity type)'s $/hr: the price of its nodes summed. It reads the nodes
/// and Karpenter's metrics alone, so a caller keeps it while neither changes.
pub fn pool_costs(c: &Cluster) -> BTreeMap<(String, String), f64> {
    let mut by_pool_capacity: BTreeMap<(&str, &str), f64> = BTreeMap::new();
    for node in c.nodes.values() {
        let Some(pool) = node.pool() else {
            continue;
        };
        if let Some(price) = node_price(c, node).filter(|p| p.is_finite()) {
            let ct = node.capacity_type().unwrap_or_default();
            *by_pool_capacity.entry((pool, ct)).or_default() += price;
        }
    }
    by_pool_capacity
        .into_iter()
        .map(|((pool, ct), price)| ((pool.to_string(), ct.to_string()), price))
        .collect()
}

/// The picture of now, from one pass, with the pools' costs ([`pool_costs`]).
pub fn gauges(
    pass: &Pass,
    c: &Cluster,
    costs: &BTreeMap<(String, String), f64>,
) -> Vec<GaugeFamily> {
    let mut unschedulable = family(defs::UNSCHEDULABLE_PODS);
    let mut drifted = family(defs::DRIFTED_NODES);
    let mut blocked = family(defs::DISRUPTION_BLOCKED_NODES);
    let mut unconsolidated = family(defs::UNCONSOLIDATED_NODES);
    let mut usage = family(defs::NODEPOOL_USAGE_RATIO);
    let mut cost = family(defs::NODEPOOL_COST);
    let mut rollout = family(defs::NODEPOOL_ROLLOUT_NODES);
    let mut eta = family(defs::NODEPOOL_ROLLOUT_ETA);

    // Summed over borrowed labels first: a family's sample is keyed by owned strings, made
    // once per sample rather than once per pod or node.
    let holds = pass.holds_by_diagnosis();
    let mut by_hold: FastMap<(&str, &str), f64> = FastMap::default();
    let mut drifted_by_pool: FastMap<&str, f64> = FastMap::default();
    let mut blocked_by_kind: FastMap<(&str, &str), f64> = FastMap::default();
    for f in pass.report.findings.iter() {
        let pool = f.nodepool.as_deref().unwrap_or_default();
        match f.code {
            Code::PodUnschedulable => {
                let hold = f
                    .details
                    .downcast_ref::<PodDiagnosis>()
                    .and_then(|d| holds.get(&(d as *const PodDiagnosis)));
                let key = match hold {
                    Some(h) => (h.category.as_str(), h.nodepool.as_str()),
                    None => ("unknown", ""),
                };
                *by_hold.entry(key).or_default() += 1.0;
            }
            Code::NodeclaimDrifted => *drifted_by_pool.entry(pool).or_default() += 1.0,
            Code::DisruptionBlocked => {
                for kind in blocker_kinds(f) {
                    *blocked_by_kind.entry((pool, kind)).or_default() += 1.0;
                }
            }
            _ => {}
        }
    }
    for ((category, pool), n) in by_hold {
        unschedulable.add(&[&label_value(category), pool], n);
    }
    for (pool, n) in drifted_by_pool {
        drifted.add(&[pool], n);
    }
    for ((pool, kind), n) in blocked_by_kind {
        blocked.add(&[pool, kind], n);
    }
    let mut by_pool_reason: FastMap<(&str, &str), f64> = FastMap::default();
    for s in pass.nodes.values() {
        let (Some(pool), Some(reason)) = (&s.nodepool, s.consolidation.unconsolidated()) else {
            continue;
        };
        *by_pool_reason.entry((pool, reason)).or_default() += 1.0;
    }
    for ((pool, reason), n) in by_pool_reason {
        unconsolidated.add(&[pool, reason], n);
    }
    for (name, pool) in &c.nodepools {
        // Every pool shows, with 0: "no drifted nodes" is an answer.
        drifted.add(&[name], 0.0);
        let r = crate::analysis::rollout::progress::rollout(
            c,
            &pass.nodes,
            pool,
            pass.now,
            crate::analysis::rollout::WAVE_TIME,
            &[crate::karpenter::budgets::DisruptionReason::Drifted],
        );
        let waiting = (r.held.len() - r.blocked) as f64;
        for (state, n) in [
            ("up-to-date", r.up_to_date as f64),
            ("replacing", r.replacing.len() as f64),
            ("waiting", waiting),
            ("blocked", r.blocked as f64),
        ] {
            rollout.add(&[name, state], n);
        }
        // 0 while none wait (done, or only blocked nodes left: those have no ETA); absent
        // while the budgets allow no drift for a week.
        match r.eta_seconds {
            Some(s) => eta.add(&[name], s as f64),
            None if waiting == 0.0 => eta.add(&[name], 0.0),
            None => {}
        }
        let Ok(limits) = Resources::from_quantities(&pool.spec.limits) else {
            continue;
        };
        // What counts against the limits, as the limit findings count it.
        let Some(used) = pass.pools.get(name).map(|u| u.counted()) else {
            continue;
        };
        for (res, &limit) in &limits.0 {
            let ratio = if limit > 0.0 {
                used.get(res) / limit
            } else {
                1.0
            };
            if ratio.is_finite() {
                usage.add(&[name, res], ratio);
            }
        }
    }
    for ((pool, ct), price) in costs {
        cost.add(&[pool, ct], *price);
    }
    vec![
        unschedulable,
        drifted,
        blocked,
        unconsolidated,
        usage,
        cost,
        rollout,
        eta,
    ]
}
