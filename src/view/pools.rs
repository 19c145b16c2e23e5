//! The NodePools panel: one row per pool with its weight, consolidation policy, budgets
//! (active now or not) and disruptions allowed by reason, limits against usage, readiness,
//! $/hr and spot savings.

use std::collections::BTreeMap;

use serde::Serialize;

use super::*;
use crate::analysis::disruption::{self, consolidation};
use crate::analysis::provisioning::{self};
use crate::analysis::{capacity, rollout, Pass};
use crate::findings::Severity;
use crate::karpenter::budgets::{self, DisruptionReason};
use crate::karpenter::labels;
use crate::karpenter::resources::Resources;
use crate::model::{condition, Cluster, NodePool};

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PoolRow {
    pub name: String,
    pub weight: i32,
    pub consolidation_policy: String,
    pub consolidate_after: String,
    pub expire_after: String,
    pub budgets: Vec<BudgetRow>,
    /// Disruptions allowed now, by reason (`drifted: 1`).
    pub allowed: Vec<(String, String)>,
    pub limits: Vec<LimitBar>,
    pub nodes: usize,
    pub ready: String,
    pub ready_ok: bool,
    pub ready_reason: String,
    pub cost_per_hour: Option<f64>,
    pub cost: String,
    pub spot_savings_pct: Option<f64>,
    pub savings: String,
    pub drifted: usize,
    pub claims: usize,
    /// What consolidating its candidate nodes would save, summed over those whose price
    /// Karpenter's event or kelp knows (each judged alone: an upper bound).
    pub consolidation_savings_per_hour: Option<f64>,
    /// `up to $0.34/h from 2 candidate nodes`, or "".
    pub could_save: String,
    /// The worst finding about this pool: critical, warning, info or "".
    /// The worst finding about it, if any.
    #[serde(serialize_with = "super::words::severity_or_empty")]
    pub severity: Option<Severity>,
    /// The next 7 days of its budgets, a day a row, an hour a cell; empty when no budget
    /// has a schedule.
    pub week: Vec<WeekDay>,
}

/// One day of a pool's week strip.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WeekDay {
    /// `Tue 12-08`
    pub day: String,
    /// `Tu`
    pub short: String,
    pub hours: Vec<WeekHour>,
}

/// One hour of the strip: `open` (every reason allowed), `some`, or `shut` (none).
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WeekHour {
    pub state: &'static str,
    /// `Tue 09:00 UTC: Underutilized 0, Empty 2, Drifted 0`
    pub title: String,
}

/// The week strip from the hourly calendar.
fn week_strip(hours: &[rollout::progress::Hour]) -> Vec<WeekDay> {
    let mut days: Vec<WeekDay> = Vec::new();
    for h in hours {
        let day = h.at.format("%a %m-%d").to_string();
        if days.last().is_none_or(|d| d.day != day) {
            // The first day starts at this hour: the hours gone by are blank cells, so each
            // column is the same hour of the day.
            let gone = if days.is_empty() {
                chrono::Timelike::hour(&h.at) as usize
            } else {
                0
            };
            days.push(WeekDay {
                short: day.chars().take(2).collect(),
                day,
                hours: (0..gone)
                    .map(|_| WeekHour {
                        state: "past",
                        title: String::new(),
                    })
                    .collect(),
            });
        }
        let open = |n: &Option<usize>| n.is_none_or(|n| n > 0);
        let state = if h.nodes.iter().all(open) {
            "open"
        } else if h.nodes.iter().any(open) {
            "some"
        } else {
            "shut"
        };
        let words: Vec<String> = DisruptionReason::ALL
            .iter()
            .zip(&h.nodes)
            .map(|(r, n)| {
                format!(
                    "{} {}",
                    r.as_str(),
                    n.map_or("unbounded".into(), |n| n.to_string())
                )
            })
            .collect();
        if let Some(d) = days.last_mut() {
            d.hours.push(WeekHour {
                state,
                title: format!("{} UTC: {}", h.at.format("%a %H:%M"), words.join(", ")),
            });
        }
    }
    days
}

/// Where a pool's drift rollout stands: `1 replacing, 2 waiting (about 15s), 1 held by
/// their own blockers`, or "" while nothing is drifted.
pub(super) fn rollout_line(c: &Cluster, pass: &Pass, pool: &NodePool) -> String {
    let r = rollout::progress::rollout(
        c,
        &pass.nodes,
        pool,
        pass.now,
        rollout::WAVE_TIME,
        &[DisruptionReason::Drifted],
    );
    if r.drifted == 0 {
        return String::new();
    }
    let waiting = r.held.len() - r.blocked;
    let mut parts = Vec::new();
    if !r.replacing.is_empty() {
        parts.push(format!("{} replacing", r.replacing.len()));
    }
    if waiting > 0 {
        parts.push(match r.eta_seconds {
            Some(eta) => format!(
                "{waiting} waiting (about {})",
                crate::karpenter::duration::human(chrono::Duration::seconds(eta))
            ),
            None => format!("{waiting} waiting: no budget window in 7 days"),
        });
    }
    if r.blocked > 0 {
        parts.push(format!("{} held by their own blockers", r.blocked));
    }
    parts.join(", ")
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BudgetRow {
    /// `0 nodes · 0 6 * * * for 8h · Drifted`
    pub label: String,
    pub nodes: String,
    pub schedule: String,
    pub duration: String,
    pub reasons: String,
    pub active: bool,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LimitBar {
    pub resource: String,
    pub used: String,
    pub limit: String,
    /// used / limit, 0..=1 (capped for the bar; `pct` says the truth).
    pub ratio: f64,
    pub pct: String,
    pub level: &'static str,
}

/// Prices by (instance type, zone, capacity type), and where they come from.
pub(super) struct Prices {
    pub(super) source: Option<&'static str>,
    pub(super) on_demand: BTreeMap<(String, String), f64>,
}

impl Prices {
    pub(super) fn of(c: &Cluster) -> Prices {
        let mut on_demand = BTreeMap::new();
        let mut source = None;
        if let Some(m) = &c.metrics {
            for o in &m.offerings {
                if let Some(p) = o.price {
                    source = Some("controller offering price estimates");
                    if o.capacity_type == "on-demand" {
                        on_demand.insert((o.instance_type.clone(), o.zone.clone()), p);
                    }
                }
            }
            if source.is_none() && !m.nodepool_cost.is_empty() {
                source = Some("karpenter_nodepools_cost_total");
            }
        }
        if source.is_none()
            && c.nodes
                .values()
                .any(|n| n.metadata.labels.contains_key(labels::KWOK_PRICE))
        {
            source = Some("kwok instance-price node labels");
        }
        Prices { source, on_demand }
    }
}

pub(super) fn pool_row(
    c: &Cluster,
    pass: &Pass,
    p: &NodePool,
    prices: &Prices,
    drifted: &BTreeMap<String, usize>,
    worst: &BTreeMap<String, Severity>,
) -> PoolRow {
    let now = pass.now;
    let name = p.metadata.name.clone();
    let d = &p.spec.disruption;
    let default_budgets = [budgets::Budget::default()];
    let budget_list: &[budgets::Budget] = d.budgets.as_deref().unwrap_or(&default_budgets);
    let budgets = budget_list
        .iter()
        .map(|b| {
            let schedule = b.schedule.clone().unwrap_or_default();
            let duration = b.duration.clone().unwrap_or_default();
            let reasons = b
                .reasons
                .as_ref()
                .map(|r| r.join(", "))
                .unwrap_or_else(|| "all".into());
            BudgetRow {
                label: words::budget_label(&b.nodes, &schedule, &duration, &reasons),
                nodes: b.nodes.clone(),
                schedule,
                duration,
                reasons,
                active: budgets::is_active(b, now).unwrap_or(false),
            }
        })
        .collect();
    let allowed = DisruptionReason::ALL
        .iter()
        .map(|&r| {
            let a = match pass.budgets.get(&name) {
                Some(b) => b.allowed(r).clone(),
                None => disruption::pool_allowed(c, p, r, now),
            };
            let v = match (&a.error, a.limit) {
                (Some(e), _) => format!("error: {e}"),
                (None, None) => "unbounded".into(),
                (None, Some(_)) => a.allowed.to_string(),
            };
            (r.as_str().to_string(), v)
        })
        .collect();
    let usage = pass
        .pools
        .get(&name)
        .cloned()
        .unwrap_or_else(|| provisioning::PoolUsage::of(c, p));
    let nodes = usage.nodes;
    let usage = usage.counted();
    let limits = Resources::from_quantities(&p.spec.limits)
        .map(|l| {
            l.0.iter()
                .map(|(k, &limit)| {
                    let used = usage.get(k);
                    let ratio = if limit > 0.0 {
                        used / limit
                    } else if used > 0.0 {
                        f64::INFINITY
                    } else {
                        1.0
                    };
                    LimitBar {
                        resource: k.clone(),
                        used: display_quantity(k, used),
                        limit: display_quantity(k, limit),
                        ratio: ratio.clamp(0.0, 1.0),
                        pct: if ratio.is_finite() {
                            format!("{:.0}%", ratio * 100.0)
                        } else {
                            "over".into()
                        },
                        level: if ratio >= 1.0 {
                            "full"
                        } else if ratio >= 0.9 {
                            "near"
                        } else {
                            "ok"
                        },
                    }
                })
                .collect()
        })
        .unwrap_or_default();
    let (ready, ready_ok, ready_reason) = match condition(&p.status.conditions, "Ready") {
        Some(cnd) => (
            cnd.status.clone(),
            cnd.is_true(),
            [cnd.reason.clone(), cnd.message.clone()]
                .into_iter()
                .flatten()
                .filter(|s| !s.is_empty())
                .collect::<Vec<_>>()
                .join(": "),
        ),
        None => ("Unknown".into(), false, "no Ready condition yet".into()),
    };
    // $/hr: the sum of node prices; spot savings against on-demand of the same offering.
    let mut cost = 0.0;
    let mut priced = false;
    let (mut spot, mut spot_od) = (0.0, 0.0);
    for n in c.nodes_in_pool(&name) {
        if let Some(price) = capacity::node_price(c, n) {
            cost += price;
            priced = true;
            let l = &n.metadata.labels;
            if l.get(labels::CAPACITY_TYPE).map(String::as_str) == Some("spot") {
                if let (Some(t), Some(z)) = (l.get(labels::INSTANCE_TYPE), l.get(labels::ZONE)) {
                    if let Some(od) = prices.on_demand.get(&(t.clone(), z.clone())) {
                        spot += price;
                        spot_od += od;
                    }
                }
            }
        }
    }
    let pool_cost = c
        .metrics
        .as_ref()
        .and_then(|m| m.nodepool_cost.get(&name).copied());
    let cost_per_hour = if priced { Some(cost) } else { pool_cost };
    let spot_savings_pct = (spot_od > 0.0).then(|| (1.0 - spot / spot_od) * 100.0);
    let candidates: Vec<f64> = pass
        .nodes
        .values()
        .filter(|s| s.nodepool.as_deref() == Some(name.as_str()))
        .filter(|s| s.consolidation.state == consolidation::State::Candidate)
        .filter_map(|s| s.consolidation.savings_per_hour)
        .collect();
    let consolidation_savings_per_hour =
        (!candidates.is_empty()).then(|| candidates.iter().sum::<f64>());
    PoolRow {
        could_save: consolidation_savings_per_hour
            .map(|v| {
                format!(
                    "consolidation could save up to {} ({} candidate node{})",
                    money(v),
                    candidates.len(),
                    if candidates.len() == 1 { "" } else { "s" }
                )
            })
            .unwrap_or_default(),
        consolidation_savings_per_hour,
        weight: p.spec.weight.unwrap_or(0),
        consolidation_policy: d
            .consolidation_policy
            .clone()
            .unwrap_or_else(|| "WhenEmptyOrUnderutilized".into()),
        consolidate_after: d.consolidate_after.clone().unwrap_or_else(|| "0s".into()),
        expire_after: p
            .spec
            .template
            .spec
            .expire_after
            .clone()
            .unwrap_or_else(|| disruption::DEFAULT_EXPIRE_AFTER.into()),
        budgets,
        allowed,
        limits,
        nodes,
        ready: ready.to_string(),
        ready_ok,
        ready_reason,
        cost: cost_per_hour.map(money).unwrap_or_else(|| "-".into()),
        cost_per_hour,
        savings: spot_savings_pct
            .map(|s| format!("{s:.0}%"))
            .unwrap_or_else(|| "-".into()),
        spot_savings_pct,
        drifted: drifted.get(&name).copied().unwrap_or(0),
        claims: c.claims_in_pool(&name).count(),
        severity: words::worst([worst.get(&select_key("NodePool", None, &name)).copied()]),
        week: rollout::progress::week(p, now, disruption::budget_counts(c, &name).0)
            .map(|h| week_strip(&h))
            .unwrap_or_default(),
        name,
    }
}
