//! The dashboard's disruption timeline: NodeClaim lifecycles and Karpenter's events over the
//! last [`TIMELINE_HOURS`] hours, one lane per kind of change.

use chrono::{DateTime, Utc};

use super::{select_key, Mark, Timeline, TIMELINE_HOURS};
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
        _ => return None,
    })
}

pub const LANES: [&str; 5] = [
    "launch",
    "disruption",
    "termination",
    "eviction",
    "interruption",
];

pub(super) fn timeline(c: &Cluster, now: DateTime<Utc>) -> Timeline {
    let start = now - chrono::Duration::hours(TIMELINE_HOURS);
    let span = (now - start).num_milliseconds().max(1) as f64;
    let x = |t: DateTime<Utc>| (((t - start).num_milliseconds() as f64 / span) * 1000.0) as u32;
    let mut marks = Vec::new();
    let mut push = |at: DateTime<Utc>, lane: &'static str, title: String| {
        if at >= start && at <= now {
            marks.push(Mark {
                at,
                lane,
                lane_index: LANES.iter().position(|l| *l == lane).unwrap_or(0),
                x: x(at),
                title,
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
            );
        }
        if let Some(t) = claim.metadata.deletion_timestamp {
            push(
                t,
                "termination",
                format!("NodeClaim {} terminating", claim.metadata.name),
            );
        }
    }
    for e in c.events.values() {
        let Some(lane) = lane_of(&e.reason, &e.regarding.kind) else {
            continue;
        };
        // Creation is already on the launch lane from the claim itself.
        if e.reason == "Launched" && c.nodeclaims.contains_key(&e.regarding.name) {
            continue;
        }
        if let Some(t) = e.seen() {
            let obj = select_key(
                &e.regarding.kind,
                e.regarding.namespace.as_deref(),
                &e.regarding.name,
            );
            push(t, lane, format!("{}: {obj}: {}", e.reason, e.message));
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
