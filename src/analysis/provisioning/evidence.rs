//! Karpenter's FailedScheduling event as evidence beside kelp's own verdicts: since v1.5
//! its text no longer names the pools, so segments are attributed to pools (by name, or
//! by elimination), the event may reject a pool only for what kelp cannot compute
//! (instance types, topology, volumes), and agreement is recorded.

use std::collections::BTreeMap;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use serde::Serialize;

use super::verdict::{reason, PoolVerdict, Verdict, VerdictSource};
use crate::findings::rfc3339;
use crate::karpenter::events::{Category, MessageFormat, Segment};

/// Karpenter's FailedScheduling event for the pod, parsed.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EventEvidence {
    pub reason: String,
    pub source: String,
    /// Shared by the pods the same message is about.
    pub message: Arc<str>,
    #[serde(serialize_with = "rfc3339_opt")]
    pub last_seen: Option<DateTime<Utc>>,
    pub format: MessageFormat,
    pub segments: Arc<Vec<Segment>>,
}

fn rfc3339_opt<S: serde::Serializer>(t: &Option<DateTime<Utc>>, s: S) -> Result<S::Ok, S::Error> {
    match t {
        Some(t) => rfc3339(t, s),
        None => s.serialize_none(),
    }
}

/// The pool a segment's requirements name: an instance-types segment's `requirements=`
/// (the NodeClaim's: `karpenter.sh/nodepool In [x]`), or the pool's own side of a
/// `key karpenter.sh/nodepool, <pod's> not in <pool's>` incompatibility (the pod's side
/// names the pool it asked for, not the one that rejected it).
fn pool_in_requirements(message: &str) -> Option<&str> {
    let own = match message.split_once(", requirements=") {
        Some((_, reqs)) => reqs,
        None => {
            message
                .strip_prefix("incompatible requirements, key karpenter.sh/nodepool,")?
                .rsplit_once(" not in ")?
                .1
        }
    };
    let rest = own.split("karpenter.sh/nodepool In [").nth(1)?;
    let inner = rest.split(']').next()?;
    (!inner.contains(' ') && !inner.is_empty()).then_some(inner)
}

/// The checks kelp evaluates itself from the current objects.
const KELP_COMPUTES: &[Category] = &[
    Category::NodepoolNotReady,
    Category::Limits,
    Category::Taints,
    Category::Requirements,
];

/// Whether kelp's own reasons for a pool already account for an event segment.
fn explained_by(v: &PoolVerdict, seg: &Segment) -> bool {
    v.verdict == Verdict::Rejected
        && v.reasons.iter().any(|r| {
            r.category == seg.category
                && seg.subject.as_deref().is_none_or(|s| r.message.contains(s))
        })
}

/// Cross-check kelp's verdicts with the parsed event: attribute segments to pools
/// (named, or by elimination when exactly one pool passes kelp's checks), let the event
/// reject a pool for what kelp cannot compute, and record agreement. With a catalogue
/// (`kelp_types`), kelp computes instance types too: the event then only agrees or not.
pub(super) fn cross_check(verdicts: &mut [PoolVerdict], segments: &[Segment], kelp_types: bool) {
    // An unknown verdict is one kelp could not settle: the event settles it.
    let computes = |v: &PoolVerdict, c: &Category| {
        KELP_COMPUTES.contains(c)
            || (kelp_types && v.verdict == Verdict::Compatible && *c == Category::InstanceTypes)
    };
    let mut by_pool: BTreeMap<String, Vec<&Segment>> = BTreeMap::new();
    let mut unnamed = Vec::new();
    for seg in segments {
        let named = seg
            .nodepool
            .as_deref()
            .or_else(|| pool_in_requirements(&seg.message));
        match named {
            Some(p) => by_pool.entry(p.to_string()).or_default().push(seg),
            None => unnamed.push(seg),
        }
    }
    let mut unexplained = Vec::new();
    for seg in unnamed {
        let explaining: Vec<usize> = (0..verdicts.len())
            .filter(|&i| explained_by(&verdicts[i], seg))
            .collect();
        if explaining.is_empty() {
            unexplained.push(seg);
        }
        for i in explaining {
            verdicts[i].event_agrees.get_or_insert(true);
        }
    }
    // Segments no rejection explains are some passing pool's: with one pool left that kelp
    // did not reject (compatible, or unknown for what kelp does not judge), they are its.
    let passing: Vec<usize> = (0..verdicts.len())
        .filter(|&i| verdicts[i].verdict != Verdict::Rejected)
        .collect();
    if let [only] = passing[..] {
        if !unexplained.is_empty() {
            by_pool
                .entry(verdicts[only].name.clone())
                .or_default()
                .extend(unexplained);
        }
    }
    for v in verdicts.iter_mut() {
        let Some(segs) = by_pool.get(&v.name) else {
            continue;
        };
        match v.verdict {
            Verdict::Compatible | Verdict::Unknown => {
                // The event may only add what kelp cannot compute (instance types, topology,
                // volumes, ...). Where kelp computed the same check from the current objects,
                // the event is stale (e.g. limits raised since) and kelp's verdict stands.
                let beyond: Vec<&&Segment> =
                    segs.iter().filter(|s| !computes(v, &s.category)).collect();
                if beyond.is_empty() {
                    v.event_agrees = Some(false);
                } else {
                    v.verdict = Verdict::Rejected;
                    v.source = VerdictSource::Event;
                    v.launch = None;
                    v.reasons = beyond
                        .iter()
                        .map(|s| reason(s.category, s.message.clone()))
                        .collect();
                }
            }
            // kelp only estimates instance types (it has no provider catalogue): where the
            // event speaks of this very pool, Karpenter's own reasons are the precise ones.
            Verdict::Rejected
                if !kelp_types
                    && v.reasons
                        .iter()
                        .all(|r| r.category == Category::InstanceTypes) =>
            {
                v.event_agrees = Some(
                    segs.iter()
                        .any(|s| matches!(s.category, Category::InstanceTypes | Category::Limits)),
                );
                v.source = VerdictSource::Event;
                v.reasons = segs
                    .iter()
                    .map(|s| reason(s.category, s.message.clone()))
                    .collect();
            }
            Verdict::Rejected => v.event_agrees = Some(segs.iter().any(|s| explained_by(v, s))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::provisioning::Reason;
    use crate::karpenter::events;

    fn verdict(name: &str, v: Verdict, reasons: Vec<Reason>) -> PoolVerdict {
        PoolVerdict {
            name: name.into(),
            verdict: v,
            reasons,
            source: VerdictSource::Kelp,
            event_agrees: None,
            launch: None,
        }
    }

    #[test]
    fn a_stale_event_never_overrides_what_kelp_computes_but_adds_what_it_cannot() {
        // Limits were raised after Karpenter wrote its event: kelp's own check wins.
        let mut v = vec![verdict("ok", Verdict::Compatible, vec![])];
        let fs = events::parse_failed_scheduling("Failed to schedule pod, all available instance types exceed limits for nodepool (NodePool=ok)");
        cross_check(&mut v, &fs.segments, false);
        assert_eq!(
            (v[0].verdict, v[0].event_agrees),
            (Verdict::Compatible, Some(false))
        );

        // Instance types are beyond kelp: the unnamed segment can only be the one pool kelp passes.
        let mut v = vec![
            verdict(
                "gpu",
                Verdict::Rejected,
                vec![reason(
                    Category::Taints,
                    "did not tolerate taint nvidia.com/gpu=true:NoSchedule",
                )],
            ),
            verdict("default", Verdict::Compatible, vec![]),
        ];
        let fs = events::parse_failed_scheduling(
            "Failed to schedule pod, did not tolerate taint (taint=nvidia.com/gpu=true:NoSchedule); no instance type has enough resources, requirements=kubernetes.io/arch In [amd64], resources={\"cpu\":\"300\"}",
        );
        cross_check(&mut v, &fs.segments, false);
        assert_eq!(v[0].event_agrees, Some(true));
        assert_eq!(
            (v[1].verdict, v[1].source),
            (Verdict::Rejected, VerdictSource::Event)
        );
        assert_eq!(v[1].reasons[0].category, Category::InstanceTypes);
    }

    #[test]
    fn unnamed_segments_stay_evidence_when_several_pools_pass() {
        let mut v = vec![
            verdict("a", Verdict::Compatible, vec![]),
            verdict("b", Verdict::Compatible, vec![]),
        ];
        let fs = events::parse_failed_scheduling(
            "Failed to schedule pod, no instance type has enough resources",
        );
        cross_check(&mut v, &fs.segments, false);
        assert!(v.iter().all(|p| p.verdict == Verdict::Compatible));
    }

    #[test]
    fn a_nodepool_incompatibility_is_the_rejecting_pools_not_the_one_the_pod_asked_for() {
        let m = "incompatible requirements, key karpenter.sh/nodepool, karpenter.sh/nodepool In [mv-check] not in karpenter.sh/nodepool In [default]";
        assert_eq!(pool_in_requirements(m), Some("default"));
        let m = "no instance type has enough resources, requirements=karpenter.sh/nodepool In [big], kubernetes.io/os In [linux], resources={}";
        assert_eq!(pool_in_requirements(m), Some("big"));
        assert_eq!(
            pool_in_requirements("did not tolerate taint (taint=a=b:NoSchedule)"),
            None
        );
    }
}
