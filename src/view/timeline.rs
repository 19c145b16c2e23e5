//! The dashboard's disruption timeline: NodeClaim lifecycles and Karpenter's events over the
//! last [`TIMELINE_HOURS`] hours, one lane per kind of change (node repair and reboots,
//! v1.15, on a lane of their own).

use chrono::{DateTime, Utc};

use super::{select_key, Mark, Timeline, TIMELINE_HOURS};
use crate::history::{Kind, Record};
use crate::karpenter::events::Reason;
use crate::model::Cluster;

/// The lane an event goes to, if it belongs on the timeline.
fn lane_of(reason: &str, kind: &str) -> Option<&'static str> {
    Some(match reason {
        "Launched" | "DisruptionLaunching" if kind == "NodeClaim" => "launch",
        "DisruptionTerminating" => "disruption",
        "Evicted" | "Disrupted" => "eviction",
        "SpotInterrupted"
        | "SpotRebalanceRecommendation"
        | "InstanceStopping"
        | "InstanceTerminating"
        | "InstanceUnhealthy"
        | "TerminatingOnInterruption"
        | "CapacityReservationInstanceInterrupted" => "interruption",
        "Finalized" | "TerminationGracePeriodExpiring" => "termination",
        // Karpenter writes NodeRepairBlocked on the node, its NodeClaim and its pool alike:
        // one mark, the node's.
        "NodeRepairBlocked" if kind == "Node" => "repair",
        "RebootObserved" | "RebootFailed" => "repair",
        _ => return None,
    })
}

pub const LANES: [&str; 6] = [
    "launch",
    "disruption",
    "termination",
    "eviction",
    "interruption",
    "repair",
];

/// The lane a history row goes to, if it belongs on the timeline: a claim's launch, the
/// disruption decided, its deletion, and the events the live timeline shows.
fn lane_of_row(r: &Record) -> Option<&'static str> {
    match r.kind {
        Kind::NodeClaim => Some(match r.what.as_str() {
            "launched" => "launch",
            "disrupting" | "disruption decided" => "disruption",
            "deleted" => "termination",
            _ => return None,
        }),
        // The claim's own launch row says it already.
        Kind::Event if r.what != "Launched" => lane_of(&r.what, &r.object.kind),
        _ => None,
    }
}

/// The timeline over `hours` up to `now` from serve's history (`rows`, already narrowed to
/// a pool if one was asked), only `lane` when one is given.
pub fn from_history(
    rows: &[Record],
    now: DateTime<Utc>,
    hours: i64,
    lane: Option<&str>,
) -> Timeline {
    let start = now - chrono::Duration::hours(hours);
    let span = (now - start).num_milliseconds().max(1) as f64;
    let x = |t: DateTime<Utc>| (((t - start).num_milliseconds() as f64 / span) * 1000.0) as u32;
    let mut marks: Vec<Mark> = rows
        .iter()
        .filter(|r| r.at >= start && r.at <= now)
        .filter_map(|r| {
            let l = lane_of_row(r)?;
            if lane.is_some_and(|want| want != l) {
                return None;
            }
            let obj = select_key(
                &r.object.kind,
                r.object.namespace.as_deref(),
                &r.object.name,
            );
            let mut title = format!("{}: {obj}", r.what);
            if !r.message.is_empty() {
                title.push_str(": ");
                title.push_str(&r.message);
            }
            Some(Mark {
                at: r.at,
                lane: l,
                lane_index: LANES.iter().position(|x| *x == l).unwrap_or(0),
                x: x(r.at),
                title,
                select: obj,
            })
        })
        .collect();
    marks.sort_by(|a, b| a.at.cmp(&b.at).then_with(|| a.title.cmp(&b.title)));
    // Six ticks; with days, the day's name too.
    let ticks = (0..=6)
        .map(|i| {
            let t = start + chrono::Duration::minutes(hours * 60 * i / 6);
            let label = if hours > 24 {
                t.format("%a %H:%M").to_string()
            } else {
                t.format("%H:%M").to_string()
            };
            (x(t), label)
        })
        .collect();
    Timeline {
        hours,
        start,
        end: now,
        marks,
        ticks,
        lanes: LANES.to_vec(),
    }
}

pub(super) fn timeline(c: &Cluster, now: DateTime<Utc>) -> Timeline {
    let start = now - chrono::Duration::hours(TIMELINE_HOURS);
    let span = (now - start).num_milliseconds().max(1) as f64;
    let x = |t: DateTime<Utc>| (((t - start).num_milliseconds() as f64 / span) * 1000.0) as u32;
    let mut marks = Vec::new();
    let mut push = |at: DateTime<Utc>, lane: &'static str, title: String, select: String| {
        if at >= start && at <= now {
            marks.push(Mark {
                at,
                lane,
                lane_index: LANES.iter().position(|l| *l == lane).unwrap_or(0),
                x: x(at),
                title,
                select,
            });
        }
    };
    // NodeClaim lifecycles: creation is a launch, a deletion timestamp a termination.
    for claim in c.nodeclaims.values() {
        if let Some(t) = claim.metadata.creation_timestamp {
            push(
                t,
                "launch",
                format!("NodeClaim {} created", claim.metadata.name),
                format!("NodeClaim/{}", claim.metadata.name),
            );
        }
        if let Some(t) = claim.metadata.deletion_timestamp {
            push(
                t,
                "termination",
                format!("NodeClaim {} terminating", claim.metadata.name),
                format!("NodeClaim/{}", claim.metadata.name),
            );
        }
    }
    for e in c.events.values() {
        let Some(lane) = lane_of(&e.reason, &e.regarding.kind) else {
            continue;
        };
        // Creation is already on the launch lane from the claim itself.
        if e.is(Reason::Launched) && c.nodeclaims.contains_key(&e.regarding.name) {
            continue;
        }
        if let Some(t) = e.seen() {
            let obj = select_key(
                &e.regarding.kind,
                e.regarding.namespace.as_deref(),
                &e.regarding.name,
            );
            let select = if matches!(
                e.regarding.kind.as_str(),
                "Pod" | "Node" | "NodeClaim" | "NodePool"
            ) {
                obj.clone()
            } else {
                String::new()
            };
            push(
                t,
                lane,
                format!("{}: {obj}: {}", e.reason, e.message),
                select,
            );
        }
    }
    marks.sort_by(|a, b| a.at.cmp(&b.at).then_with(|| a.title.cmp(&b.title)));
    let ticks = (0..=TIMELINE_HOURS)
        .map(|h| {
            let t = start + chrono::Duration::hours(h);
            (x(t), t.format("%H:%M").to_string())
        })
        .collect();
    Timeline {
        hours: TIMELINE_HOURS,
        start,
        end: now,
        marks,
        ticks,
        lanes: LANES.to_vec(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_repair_blocked_is_one_mark_on_the_repair_lane_not_three() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/findings/node-repair-blocked/fires.yaml"
        );
        let mut c = Cluster::default();
        crate::source::load_paths(&[path.into()], &mut c).unwrap();
        let now = DateTime::parse_from_rfc3339("2026-11-21T10:00:00Z")
            .unwrap()
            .to_utc();
        let t = timeline(&c, now);
        let repair: Vec<&str> = t
            .marks
            .iter()
            .filter(|m| m.lane == "repair")
            .map(|m| m.title.as_str())
            .collect();
        // Karpenter wrote it on the node, its claim and the pool: the node's is the mark.
        assert_eq!(repair.len(), 1, "{repair:?}");
        assert!(
            repair[0].starts_with("NodeRepairBlocked: Node/") && repair[0].contains("unhealthy"),
            "{repair:?}"
        );
        assert_eq!(t.lanes.last(), Some(&"repair"));
    }
}
