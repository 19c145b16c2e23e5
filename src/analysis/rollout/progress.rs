//! A pool's rollout as it runs: how many of its nodes are up to date, drifted, or being
//! replaced now, what holds the drifted ones (the budget, with the next window, each node's
//! blockers, and a replacement the pool's last launch found no capacity for), an ETA, and
//! the budget calendar: what the pool's budgets allow for
//! each reason now and whenever that changes over the next 7 days, as Karpenter reads its
//! cron schedules (UTC).

use chrono::{DateTime, Duration, Utc};
use serde::Serialize;

use super::super::disruption::budget::budget_counts;
use super::super::disruption::NodeStates;
use crate::karpenter::budgets::{allowed_disruptions, allowed_for_each, DisruptionReason};
use crate::karpenter::events::Reason;
use crate::model::*;

/// A drifted node Karpenter has not started to replace, and what holds it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Held {
    pub node: String,
    /// Karpenter's drift reason.
    pub reason: String,
    /// Its blockers besides the budget, in kelp's words (a do-not-disrupt pod, a PDB
    /// allowing none, a nomination for seconds).
    pub blockers: Vec<String>,
    /// Whether one of them holds it until it lets go ([`super::holds`]).
    #[serde(skip)]
    pub holds: bool,
}

/// One change in what the budgets allow for a reason.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Step {
    pub at: DateTime<Utc>,
    /// Nodes the budgets allow from then (before the nodes already unavailable are taken
    /// off); None: no budget limits the reason.
    pub nodes: Option<usize>,
}

/// What the budgets allow for one reason, now and over the next 7 days.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Calendar {
    pub reason: &'static str,
    /// What may start now (the nodes already unavailable taken off).
    pub allowed_now: usize,
    /// The budgets' count now; None: unbounded.
    pub nodes_now: Option<usize>,
    /// Each change within the next 7 days, in order.
    pub changes: Vec<Step>,
    /// A budget Karpenter cannot read: it allows none for any reason.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// A pool's rollout and its budget calendar.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Progress {
    pub nodepool: String,
    pub nodes: usize,
    pub up_to_date: usize,
    pub drifted: usize,
    /// Drifted nodes being replaced (deleting, or picked by a disruption command).
    pub replacing: Vec<String>,
    /// Drifted nodes waiting, with what holds each.
    pub held: Vec<Held>,
    /// Rough time to replace the drifted nodes nothing of their own holds, at
    /// `wave_seconds` a wave; None while there are none, or while the budgets allow no
    /// drift for the next 7 days.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub eta_seconds: Option<i64>,
    /// Held nodes with blockers of their own (a do-not-disrupt pod, a PDB allowing none):
    /// no ETA until those let go.
    pub blocked: usize,
    /// The pool's last launch found no capacity (Karpenter's InsufficientCapacityError on
    /// one of its NodeClaims in the last 15 minutes), while drifted nodes wait: their
    /// replacements launch from the same pool and may find none either. In kelp's words.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub no_capacity: Option<String>,
    pub wave_seconds: i64,
    pub calendar: Vec<Calendar>,
}

/// How long a launch that found no capacity is taken to hold a pool's replacements.
const NO_CAPACITY_FOR: Duration = Duration::minutes(15);

/// How far the calendar looks ahead.
const AHEAD: Duration = Duration::days(7);

/// The rollout of `pool` at `now`, from the pass's node states, with its whole calendar.
pub fn progress(
    c: &Cluster,
    nodes: &NodeStates,
    pool: &NodePool,
    now: DateTime<Utc>,
    wave: Duration,
) -> Progress {
    rollout(c, nodes, pool, now, wave, &DisruptionReason::ALL)
}

/// As [`progress`], with the calendar of `reasons` only (serve's metrics need Drifted's,
/// and only for the ETA).
pub fn rollout(
    c: &Cluster,
    nodes: &NodeStates,
    pool: &NodePool,
    now: DateTime<Utc>,
    wave: Duration,
    reasons: &[DisruptionReason],
) -> Progress {
    let name = &pool.metadata.name;
    let mut p = Progress {
        nodepool: name.clone(),
        nodes: 0,
        up_to_date: 0,
        drifted: 0,
        replacing: Vec::new(),
        held: Vec::new(),
        eta_seconds: None,
        blocked: 0,
        no_capacity: None,
        wave_seconds: wave.num_seconds(),
        calendar: Vec::new(),
    };
    for (node, state) in nodes.iter() {
        if state.nodepool.as_deref() != Some(name.as_str()) {
            continue;
        }
        p.nodes += 1;
        match &state.drifted {
            None if !state.deleting => p.up_to_date += 1,
            None => {}
            Some(reason) => {
                p.drifted += 1;
                if state.deleting {
                    p.replacing.push(node.to_string());
                } else {
                    p.held.push(Held {
                        node: node.to_string(),
                        reason: reason.clone(),
                        blockers: state
                            .blockers
                            .iter()
                            .filter(|b| super::named(b))
                            .map(|b| b.message.clone())
                            .collect(),
                        holds: state.blockers.iter().any(super::holds),
                    });
                }
            }
        }
    }
    p.blocked = p.held.iter().filter(|h| h.holds).count();
    if !p.held.is_empty() {
        p.no_capacity = no_capacity(c, name, now);
        if let Some(why) = &p.no_capacity {
            for h in &mut p.held {
                h.blockers.push(format!("its replacement: {why}"));
            }
        }
    }
    let free = p.held.len() - p.blocked;
    let (total, unavailable) = budget_counts(c, name);
    // The whole week for `why nodepool`; for the ETA alone (serve's metrics and the
    // dashboard, each pass), Drifted's calendar only while nodes wait, and only up to the
    // window that opens.
    let whole = reasons.len() > 1;
    p.calendar = reasons
        .iter()
        .filter(|_| whole || free > 0)
        .map(|&r| calendar(pool, r, now, total, unavailable, !whole))
        .collect();
    if free > 0 {
        let drift = p
            .calendar
            .iter()
            .find(|k| k.reason == DisruptionReason::Drifted.as_str());
        p.eta_seconds = drift.and_then(|k| eta(k, free, now, wave));
    }
    p
}

/// The pool's latest launch that found no capacity within [`NO_CAPACITY_FOR`], in words.
fn no_capacity(c: &Cluster, pool: &str, now: DateTime<Utc>) -> Option<String> {
    let e = c
        .events
        .values()
        .filter(|e| {
            e.from_karpenter()
                && e.is(Reason::InsufficientCapacityError)
                && e.regarding.kind == ObjectKind::NodeClaim.as_str()
                && e.seen().is_some_and(|t| now - t <= NO_CAPACITY_FOR)
        })
        .filter(|e| {
            super::super::provisioning::claim_pool(c, &e.regarding.name).as_deref() == Some(pool)
        })
        .max_by_key(|e| e.seen())?;
    let ago = e
        .seen()
        .map(|t| crate::karpenter::duration::human(now - t))
        .unwrap_or_default();
    Some(format!(
        "the pool's last launch (NodeClaim {}, {ago} ago) found no capacity",
        e.regarding.name
    ))
}

/// The time to replace `left` nodes: the wait until the budgets allow one, then waves of
/// what they allow from then.
fn eta(k: &Calendar, left: usize, now: DateTime<Utc>, wave: Duration) -> Option<i64> {
    if k.error.is_some() {
        return None;
    }
    let (wait, per) = if k.allowed_now > 0 {
        (0, k.nodes_now)
    } else {
        let open = k.changes.iter().find(|s| s.nodes != Some(0))?;
        ((open.at - now).num_seconds(), open.nodes)
    };
    let waves = match per {
        None => 1,
        Some(0) => return None,
        Some(n) => left.div_ceil(n) as i64,
    };
    Some(wait + waves * wave.num_seconds())
}

/// What the budgets allow for `reason` now and at each change of the week; with
/// `to_opening`, no change while some are allowed now, else only up to the first opening.
fn calendar(
    pool: &NodePool,
    reason: DisruptionReason,
    now: DateTime<Utc>,
    total: usize,
    unavailable: usize,
    to_opening: bool,
) -> Calendar {
    let budgets = pool.spec.disruption.budgets.as_deref();
    let at = |t| allowed_disruptions(budgets, reason, t, total, unavailable);
    let first = at(now);
    let mut k = Calendar {
        reason: reason.as_str(),
        allowed_now: first.allowed,
        nodes_now: first.limit,
        changes: Vec::new(),
        error: first.error.clone(),
    };
    let scheduled = budgets.is_some_and(|b| b.iter().any(|b| b.schedule.is_some()));
    if first.error.is_some() || !scheduled || to_opening && first.allowed > 0 {
        return k;
    }
    // Minute by minute, as the schedules are: each minute whose count differs.
    let mut t = now
        - Duration::nanoseconds(now.timestamp_subsec_nanos().into())
        - Duration::seconds(now.timestamp() % 60);
    let mut last = first.limit;
    let end = now + AHEAD;
    while t < end {
        t += Duration::minutes(1);
        let a = at(t);
        if a.limit != last {
            k.changes.push(Step {
                at: t,
                nodes: a.limit,
            });
            last = a.limit;
            if to_opening && a.limit != Some(0) {
                break;
            }
        }
    }
    k
}

/// One hour of a pool's week: what its budgets allow for Underutilized, Empty and Drifted
/// (in [`DisruptionReason::ALL`]'s order) at the hour's start; None: unbounded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Hour {
    pub at: DateTime<Utc>,
    pub nodes: [Option<usize>; 3],
}

/// The next 7 days of `pool`'s budgets, hour by hour from the current hour (UTC): the
/// dashboard's week strip. None when no budget has a schedule (the week is the same as now).
pub fn week(pool: &NodePool, now: DateTime<Utc>, total: usize) -> Option<Vec<Hour>> {
    let budgets = pool.spec.disruption.budgets.as_deref()?;
    if !budgets.iter().any(|b| b.schedule.is_some()) {
        return None;
    }
    let start = now
        - Duration::nanoseconds(now.timestamp_subsec_nanos().into())
        - Duration::seconds(now.timestamp() % 3600);
    Some(
        (0..7 * 24)
            .map(|h| {
                let at = start + Duration::hours(h);
                let nodes = allowed_for_each(Some(budgets), at, total, 0).map(|a| {
                    if a.error.is_some() {
                        Some(0)
                    } else {
                        a.limit
                    }
                });
                Hour { at, nodes }
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pool(budgets: serde_json::Value) -> NodePool {
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": "p"},
            "spec": {"disruption": {"budgets": budgets}}
        }))
        .unwrap()
    }

    #[test]
    fn the_calendar_lists_each_change_of_the_week_in_utc() {
        // Drift only on weekdays 09:00-17:00: 0 outside, 2 inside.
        let p = pool(serde_json::json!([
            {"nodes": "0", "reasons": ["Drifted"], "schedule": "0 17 * * *", "duration": "16h"},
            {"nodes": "0", "reasons": ["Drifted"], "schedule": "0 0 * * sat", "duration": "48h"},
            {"nodes": "2"}
        ]));
        let monday_evening: DateTime<Utc> = "2026-12-07T18:30:00Z".parse().unwrap();
        let k = calendar(&p, DisruptionReason::Drifted, monday_evening, 10, 0, false);
        assert_eq!((k.allowed_now, k.nodes_now), (0, Some(0)));
        let at = |s: &str| s.parse::<DateTime<Utc>>().unwrap();
        assert_eq!(
            k.changes[0],
            Step {
                at: at("2026-12-08T09:00:00Z"),
                nodes: Some(2)
            }
        );
        assert_eq!(
            k.changes[1],
            Step {
                at: at("2026-12-08T17:00:00Z"),
                nodes: Some(0)
            }
        );
        // Saturday and Sunday stay closed: Friday 17:00 closes until Monday 09:00.
        let friday_close = k
            .changes
            .iter()
            .position(|s| s.at == at("2026-12-11T17:00:00Z"))
            .unwrap();
        assert_eq!(
            k.changes[friday_close + 1],
            Step {
                at: at("2026-12-14T09:00:00Z"),
                nodes: Some(2)
            }
        );
        // For an ETA alone: up to the first opening, and nothing while drift is allowed.
        let quick = calendar(&p, DisruptionReason::Drifted, monday_evening, 10, 0, true);
        assert_eq!(quick.changes, k.changes[..1].to_vec());
        let tuesday_noon: DateTime<Utc> = "2026-12-08T12:00:00Z".parse().unwrap();
        let open = calendar(&p, DisruptionReason::Drifted, tuesday_noon, 10, 0, true);
        assert_eq!((open.allowed_now, open.changes.len()), (2, 0));
        // Other reasons are not limited by the Drifted budgets: 2 always.
        let e = calendar(&p, DisruptionReason::Empty, monday_evening, 10, 0, false);
        assert_eq!(
            (e.allowed_now, e.nodes_now, e.changes.len()),
            (2, Some(2), 0)
        );
        // The ETA waits for Tuesday 09:00, then three waves of two for five nodes.
        assert_eq!(
            eta(&k, 5, monday_evening, Duration::seconds(60)),
            Some(14 * 3600 + 1800 + 3 * 60)
        );
    }

    #[test]
    fn the_week_is_hourly_from_this_hour_and_absent_without_schedules() {
        let p = pool(serde_json::json!([
            {"nodes": "0", "reasons": ["Drifted"], "schedule": "0 17 * * *", "duration": "16h"},
            {"nodes": "2"}
        ]));
        let t: DateTime<Utc> = "2026-12-07T18:30:00Z".parse().unwrap();
        let w = week(&p, t, 10).unwrap();
        assert_eq!(w.len(), 168);
        assert_eq!(
            w[0].at,
            "2026-12-07T18:00:00Z".parse::<DateTime<Utc>>().unwrap()
        );
        // Drift shut until 09:00, the others open.
        assert_eq!(w[0].nodes, [Some(2), Some(2), Some(0)]);
        assert_eq!(w[15].nodes, [Some(2), Some(2), Some(2)]); // Tue 09:00
        assert!(week(&pool(serde_json::json!([{"nodes": "1"}])), t, 10).is_none());
    }

    #[test]
    fn unscheduled_budgets_have_no_changes_and_a_bad_one_allows_none() {
        let k = calendar(
            &pool(serde_json::json!([{"nodes": "20%"}])),
            DisruptionReason::Drifted,
            Utc::now(),
            10,
            1,
            false,
        );
        assert_eq!(
            (k.allowed_now, k.nodes_now, k.changes.len()),
            (1, Some(2), 0)
        );
        let bad = calendar(
            &pool(serde_json::json!([{"nodes": "x"}])),
            DisruptionReason::Drifted,
            Utc::now(),
            10,
            0,
            false,
        );
        assert!(bad.error.is_some());
        assert_eq!(bad.allowed_now, 0);
        assert_eq!(eta(&bad, 3, Utc::now(), Duration::seconds(60)), None);
    }
}
