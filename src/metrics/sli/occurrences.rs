//! The SLI occurrences: pod provisioning latency, node provisioning time, launch
//! failures, node churn and evictions, each read from timestamps the objects carry and
//! keyed by the UID of the object it is about, so it is counted once.

use crate::analysis::provisioning::{claim_pool, LAUNCH_ERRORS};
use crate::karpenter::duration::{self, NillableDuration};
use crate::karpenter::events::Reason;
use crate::karpenter::labels;
use crate::metrics::common::{label_value, uid, uid_ref};
use crate::model::stamps::PerNode;
use crate::model::*;
use chrono::{DateTime, Duration, Utc};
use std::collections::{BTreeMap, BTreeSet};

use super::*;

/// `Some(until)` when `t` lies within the recent window before `now` (or after it: clocks
/// skew), i.e. an occurrence at `t` may be counted now and can be seen until `until`.
pub(super) fn recent(t: DateTime<Utc>, now: DateTime<Utc>) -> Option<DateTime<Utc>> {
    (now - t <= recent_window()).then(|| t.max(now) + recent_window())
}

/// As [`recent`], for an occurrence seen at `seen`; one with no time of its own is seen
/// `now`.
pub(super) fn recent_seen(
    seen: Option<DateTime<Utc>>,
    now: DateTime<Utc>,
) -> Option<DateTime<Utc>> {
    recent(seen.unwrap_or(now), now)
}

pub(super) fn seconds(d: Duration) -> f64 {
    d.num_milliseconds().max(0) as f64 / 1000.0
}

/// When a condition became True, if it is True.
pub(super) fn true_since(conds: &[Condition], type_: &str) -> Option<DateTime<Utc>> {
    condition(conds, type_)
        .filter(|c| c.is_true())
        .and_then(|c| c.last_transition_time)
}

/// A disruption reason as the churn and eviction labels write it: `Drifted` -> `drifted`.
/// Karpenter writes `Drifted`, or `Drifted/Replace` in older versions: the first word counts.
pub(super) fn disruption_reason(s: &str) -> String {
    let word = s
        .trim()
        .split(|c: char| c == '/' || c == ',' || c.is_whitespace())
        .next()
        .unwrap_or_default();
    label_value(&word.to_lowercase())
}

/// The id of the object an event is about: its UID, else the object's in the model.
pub(super) fn regarding_id(c: &Cluster, e: &Event) -> String {
    if !e.regarding.uid.is_empty() {
        return e.regarding.uid.clone();
    }
    let r = &e.regarding;
    match r.kind.as_str() {
        "NodeClaim" => c
            .nodeclaims
            .get(&r.name)
            .map(|x| uid("NodeClaim", &x.metadata)),
        "Pod" => c
            .pods
            .get(&(r.namespace.clone().unwrap_or_default(), r.name.clone()))
            .map(|x| uid("Pod", &x.metadata)),
        _ => None,
    }
    .unwrap_or_else(|| {
        format!(
            "{}/{}/{}",
            r.kind,
            r.namespace.as_deref().unwrap_or_default(),
            r.name
        )
    })
}

/// Karpenter's recent events of these reasons about objects of `kind`, with when each was
/// last seen.
pub(super) fn karpenter_events<'c>(
    c: &'c Cluster,
    kind: ObjectKind,
    reasons: &'c [Reason],
    now: DateTime<Utc>,
) -> impl Iterator<Item = (&'c Event, Option<DateTime<Utc>>)> + 'c {
    recent_events(
        c.events
            .values()
            .map(|e| &**e)
            .filter(move |e| karpenter_event(e, kind, reasons)),
        now,
    )
}

/// Whether `e` is Karpenter's, about an object of `kind`, for one of these reasons.
fn karpenter_event(e: &Event, kind: ObjectKind, reasons: &[Reason]) -> bool {
    e.from_karpenter() && e.about(kind) && e.is_any(reasons)
}

/// The recent ones of `events`, with when each was last seen (an event with no time at
/// all is taken as seen now).
fn recent_events<'e>(
    events: impl Iterator<Item = &'e Event> + 'e,
    now: DateTime<Utc>,
) -> impl Iterator<Item = (&'e Event, Option<DateTime<Utc>>)> + 'e {
    events.filter_map(move |e| {
        recent_seen(e.seen(), now)?;
        Some((e, e.seen()))
    })
}

/// The reasons of Karpenter's events about a pod it evicted or disrupted.
const EVICTIONS: &[Reason] = &[Reason::Evicted, Reason::Disrupted];

// ------------------------------------------------------------------ occurrences

/// One scan's finds, kept while the parts of the model it reads have the same stamps
/// (`token`). Time alone only takes finds away (each is seen within the recent window of
/// its own instant, which does not move), so a kept find is given again while it is still
/// recent: the same as scanning again.
#[derive(Debug, Default)]
pub struct Kept {
    token: Option<[u64; 4]>,
    finds: Vec<Occurrence>,
}

impl Kept {
    /// The finds of `scan` now, scanning only when `token` differs from the last scan's.
    pub fn current(
        &mut self,
        token: [u64; 4],
        now: DateTime<Utc>,
        scan: impl FnOnce() -> Vec<Occurrence>,
    ) -> &[Occurrence] {
        if self.token == Some(token) {
            self.finds.retain(|o| o.until(now).is_some());
        } else {
            self.finds = scan();
            self.token = Some(token);
        }
        &self.finds
    }
}

/// What [`pod_latencies_with`] keeps between passes, per node ([`PerNode`], read again
/// when the node or its pods change): when the newest of its pods was bound, and the pool
/// and newest bound instant of those it counted. A node whose pods were all bound before
/// the window is not read; nor is one read since neither it, its pods nor their events
/// changed: what it has to count was counted then, and time only takes occurrences away.
#[derive(Debug, Default)]
pub struct LatencyScans {
    nodes: PerNode<NodeRead>,
    /// What the last scan saw, and the pool and time of each node whose pods were counted:
    /// a scan after which nothing changed reads no node, only which of those are still
    /// within the window; one after which only pods changed reads only their nodes.
    last: Option<LastScan>,
}

#[derive(Debug)]
struct LastScan {
    /// The model (its epoch) and its newest stamp.
    token: [u64; 2],
    /// The nodes and claims stamp: the same nodes while it stands.
    zones: u64,
    /// By node name: the pool and newest bound instant of the pods counted there.
    counted: BTreeMap<String, (String, DateTime<Utc>)>,
}

#[derive(Debug)]
pub struct NodeRead {
    newest: Option<DateTime<Utc>>,
    counted: Option<(String, DateTime<Utc>)>,
}

/// The pod latencies a pass found on the nodes it read, and the series of the nodes it
/// did not read again whose counted pods are still within the window (they are still
/// seen, for the series' time to live).
#[derive(Debug, Default)]
pub struct Latencies {
    pub found: Vec<Occurrence>,
    pub still_seen: Vec<SliSeries>,
}

/// Pods bound in the last hour that waited on new capacity from Karpenter: bound to a
/// Karpenter node created after the pod, or with a FailedScheduling or Karpenter Nominated
/// event. Observed: creation to PodScheduled=True.
pub fn pod_latencies(c: &Cluster, now: DateTime<Utc>) -> Vec<Occurrence> {
    pod_latencies_with(c, now, &mut LatencyScans::default()).found
}

/// As [`pod_latencies`], reading only the nodes `scans` does not know already
/// ([`LatencyScans`]).
pub fn pod_latencies_with(c: &Cluster, now: DateTime<Utc>, scans: &mut LatencyScans) -> Latencies {
    let st = c.stamps();
    let mut out = Latencies::default();
    let token = [st.epoch(), st.last()];
    match scans.last.as_mut() {
        Some(last) if last.token == token => {
            // Every node's read holds (nothing changed): each is kept, as below.
            out.still_seen = still_seen(last.counted.values(), now);
            return out;
        }
        Some(last)
            if last.token[0] == token[0]
                && last.zones == st.zones()
                && st.events_any() <= last.token[1] =>
        {
            // Only pods changed, and no event: a node the journal does not name since is
            // kept (its read depends on nothing else that changed, and time only takes
            // its occurrences away); the others are read again, as below.
            if let Some(touched) = st.nodes_since(last.token[1]) {
                let touched: BTreeSet<&str> = touched.collect();
                let mut fresh = Vec::new();
                for name in touched {
                    let Some(node) = c.nodes.get(name) else {
                        continue;
                    };
                    let (read, kept) = node_read(&mut scans.nodes, c, node, now, &mut out.found);
                    match &read.counted {
                        Some(counted) => {
                            last.counted.insert(name.to_string(), counted.clone());
                        }
                        None => {
                            last.counted.remove(name);
                        }
                    }
                    if !kept {
                        fresh.push(name);
                    }
                }
                out.still_seen = still_seen(
                    last.counted
                        .iter()
                        .filter(|(n, _)| !fresh.contains(&n.as_str()))
                        .map(|(_, c)| c),
                    now,
                );
                last.token = token;
                return out;
            }
        }
        _ => {}
    }
    // The nodes whose pods were counted, and whether each was kept (not read now).
    let mut counted = Vec::new();
    let scans_nodes = &mut scans.nodes;
    scans_nodes.retain_nodes(&c.nodes);
    for node in c.nodes.values() {
        let (read, kept) = node_read(scans_nodes, c, node, now, &mut out.found);
        if let Some(read) = &read.counted {
            counted.push((node.metadata.name.clone(), read.clone(), kept));
        }
    }
    out.still_seen = still_seen(
        counted
            .iter()
            .filter(|(_, _, kept)| *kept)
            .map(|(_, c, _)| c),
        now,
    );
    scans.last = Some(LastScan {
        token,
        zones: st.zones(),
        counted: counted.into_iter().map(|(n, c, _)| (n, c)).collect(),
    });
    out
}

/// `node`'s read as `nodes` keeps it, or made now (its finds added to `found`), and
/// whether it was kept: while the node and its pods are unchanged and none of its pods was
/// bound in the window, or no event about one of them changed.
fn node_read<'s>(
    nodes: &'s mut PerNode<NodeRead>,
    c: &Cluster,
    node: &Node,
    now: DateTime<Utc>,
    found: &mut Vec<Occurrence>,
) -> (&'s NodeRead, bool) {
    let st = c.stamps();
    let name = &node.metadata.name;
    let still = |at: u64, r: &NodeRead| {
        r.newest.is_none_or(|t| recent(t, now).is_none())
            || st.events_any() <= at
            || c.pods_on(name).all(|p| st.events(&p.metadata.name) <= at)
    };
    nodes.get_or_refresh_with(st, name, still, || read_node(c, node, now, found))
}

/// The latency series of the nodes whose counted pods (pool, newest bound instant) are
/// still within the window: they are still seen.
fn still_seen<'a>(
    counted: impl Iterator<Item = &'a (String, DateTime<Utc>)>,
    now: DateTime<Utc>,
) -> Vec<SliSeries> {
    counted
        .filter(|(_, t)| recent(*t, now).is_some())
        .map(|(pool, _)| {
            SliSeries::PodLatency(PoolLabels {
                nodepool: pool.clone(),
            })
        })
        .collect()
}

/// The pod latencies on `node` ([`pod_latencies`]), added to `found`, and what is kept of
/// the node until it is read again.
fn read_node(
    c: &Cluster,
    node: &Node,
    now: DateTime<Utc>,
    found: &mut Vec<Occurrence>,
) -> NodeRead {
    let newest = c
        .pods_on(&node.metadata.name)
        .filter_map(|p| true_since(&p.status.conditions, "PodScheduled"))
        .max();
    let pool = node.pool();
    let (Some(pool), true) = (pool, newest.is_some_and(|t| recent(t, now).is_some())) else {
        return NodeRead {
            newest,
            counted: None,
        };
    };
    let mut counted: Option<DateTime<Utc>> = None;
    let node_created = node.metadata.creation_timestamp.or_else(|| {
        c.nodeclaim_for_node(node)
            .and_then(|cl| cl.metadata.creation_timestamp)
    });
    for p in c.pods_on(&node.metadata.name) {
        let Some(bound) = true_since(&p.status.conditions, "PodScheduled") else {
            continue;
        };
        if recent(bound, now).is_none() {
            continue;
        }
        let m = &p.metadata;
        // Karpenter never provisions for DaemonSet or mirror pods.
        if m.owned_by("DaemonSet") || m.owned_by("Node") {
            continue;
        }
        let Some(created) = m.creation_timestamp else {
            continue;
        };
        let waited = node_created.is_some_and(|t| t > created)
            || c.events_for(ObjectKind::Pod, m.namespace.as_deref(), &m.name, &m.uid)
                .iter()
                .any(|e| {
                    e.is(Reason::FailedScheduling)
                        || (e.from_karpenter() && e.is(Reason::Nominated))
                });
        if !waited {
            continue;
        }
        counted = counted.max(Some(bound));
        found.push(Occurrence {
            key: format!("pod-latency/{}", uid("Pod", m)),
            series: SliSeries::PodLatency(PoolLabels {
                nodepool: pool.to_string(),
            }),
            seen: Some(bound),
            value: seconds(bound - created),
        });
    }
    NodeRead {
        newest,
        counted: counted.map(|t| (pool.to_string(), t)),
    }
}

/// NodeClaims initialized in the last hour: creation to Initialized=True.
pub fn node_provisioning(c: &Cluster, now: DateTime<Utc>) -> Vec<Occurrence> {
    let mut out = Vec::new();
    for claim in c.nodeclaims.values() {
        let Some(init) = true_since(&claim.status.conditions, "Initialized") else {
            continue;
        };
        let (Some(_), Some(created)) = (recent(init, now), claim.metadata.creation_timestamp)
        else {
            continue;
        };
        let capacity_type = claim
            .metadata
            .label(labels::CAPACITY_TYPE)
            .or_else(|| c.node_for_claim(claim).and_then(|n| n.capacity_type()))
            .unwrap_or_default()
            .to_string();
        out.push(Occurrence {
            key: format!("node-provisioning/{}", uid("NodeClaim", &claim.metadata)),
            series: SliSeries::NodeProvisioning(PoolCapacityLabels {
                nodepool: claim_pool(c, &claim.metadata.name).unwrap_or_default(),
                capacity_type,
            }),
            seen: Some(init),
            value: seconds(init - created),
        });
    }
    out
}

/// NodeClaims whose launch failed in the last hour: Launched not True with a failure reason
/// (LaunchFailed, provider reasons), or a launch-error event (the NodeClaim is usually deleted right after). Once per NodeClaim.
pub fn launch_failures(c: &Cluster, now: DateTime<Utc>) -> Vec<Occurrence> {
    let mut out = Vec::new();
    for claim in c.nodeclaims.values() {
        // Karpenter marks a failed launch Launched=Unknown (reason LaunchFailed) or False
        // (provider reasons); a launch still in progress only awaits reconciliation.
        let Some(l) = condition(&claim.status.conditions, "Launched").filter(|l| {
            l.status == "False"
                || (l.status != "True"
                    && !matches!(
                        l.reason.as_deref(),
                        None | Some("" | "AwaitingReconciliation")
                    ))
        }) else {
            continue;
        };
        let at = l.last_transition_time.or(claim.metadata.creation_timestamp);
        if recent_seen(at, now).is_none() {
            continue;
        }
        out.push(Occurrence {
            key: format!("launch-failure/{}", uid("NodeClaim", &claim.metadata)),
            series: SliSeries::LaunchFailure(PoolReasonLabels {
                nodepool: claim_pool(c, &claim.metadata.name).unwrap_or_default(),
                reason: label_value(l.reason.as_deref().unwrap_or("LaunchFailed")),
            }),
            seen: at,
            value: 1.0,
        });
    }
    for (e, seen) in karpenter_events(c, ObjectKind::NodeClaim, LAUNCH_ERRORS, now) {
        out.push(Occurrence {
            key: format!("launch-failure/{}", regarding_id(c, e)),
            series: SliSeries::LaunchFailure(PoolReasonLabels {
                nodepool: claim_pool(c, &e.regarding.name).unwrap_or_default(),
                reason: label_value(&e.reason),
            }),
            seen,
            value: 1.0,
        });
    }
    out
}

pub(super) fn churn_occurrence(
    id: &str,
    pool: &str,
    event: &str,
    reason: &str,
    seen: Option<DateTime<Utc>>,
) -> Occurrence {
    // One key per NodeClaim and event: a disruption is counted once, whichever source
    // (condition or event) names it first.
    Occurrence {
        key: format!("churn/{event}/{id}"),
        series: SliSeries::Churn(ChurnLabels {
            nodepool: pool.to_string(),
            event: event.to_string(),
            reason: reason.to_string(),
        }),
        seen,
        value: 1.0,
    }
}

/// NodeClaim lifecycle transitions of the last hour: launched, registered, initialized,
/// and disrupted (its DisruptionReason condition or Karpenter's DisruptionTerminating
/// event, expiry, interruption). Deletions come from [`deletions`].
pub fn churn(c: &Cluster, now: DateTime<Utc>) -> Vec<Occurrence> {
    let mut out = Vec::new();
    for claim in c.nodeclaims.values() {
        let m = &claim.metadata;
        let conds = &claim.status.conditions;
        // Most claims have nothing recent: their id and pool are worked out only for one
        // that has.
        let named = std::cell::OnceCell::new();
        let name = || {
            named.get_or_init(|| {
                (
                    uid("NodeClaim", m),
                    claim_pool(c, &m.name).unwrap_or_default(),
                )
            })
        };
        for (event, cond) in [
            ("launched", "Launched"),
            ("registered", "Registered"),
            ("initialized", "Initialized"),
        ] {
            if let Some(t) = true_since(conds, cond).filter(|t| recent(*t, now).is_some()) {
                let (id, pool) = name();
                out.push(churn_occurrence(id, pool, event, "", Some(t)));
            }
        }
        if let Some(d) = condition(conds, "DisruptionReason").filter(|d| d.is_true()) {
            let at = d.last_transition_time.or(m.deletion_timestamp);
            if recent_seen(at, now).is_some() {
                let reason = disruption_reason(d.reason.as_deref().unwrap_or("other"));
                let (id, pool) = name();
                out.push(churn_occurrence(id, pool, "disrupted", &reason, at));
            }
        } else if let Some(deleted) = m.deletion_timestamp {
            // Expiry deletes the NodeClaim directly (no DisruptionReason in v1).
            // The claim's own (the CRD defaults it), never its pool's: a pool's change
            // drifts its claims rather than changing when they expire.
            let expire_after = claim
                .spec
                .expire_after
                .clone()
                .unwrap_or_else(|| crate::analysis::disruption::DEFAULT_EXPIRE_AFTER.into());
            let expired = match (
                duration::parse_nillable(&expire_after),
                m.creation_timestamp,
            ) {
                (Ok(NillableDuration::After(d)), Some(created)) => deleted >= created + d,
                _ => false,
            };
            if expired && recent(deleted, now).is_some() {
                let (id, pool) = name();
                out.push(churn_occurrence(
                    id,
                    pool,
                    "disrupted",
                    "expired",
                    Some(deleted),
                ));
            }
        }
    }
    for (e, seen) in karpenter_events(
        c,
        ObjectKind::NodeClaim,
        &[
            Reason::DisruptionTerminating,
            Reason::TerminatingOnInterruption,
        ],
        now,
    ) {
        let reason = if e.is(Reason::TerminatingOnInterruption) {
            "interrupted".to_string()
        } else {
            // "Disrupting NodeClaim: Drifted"
            disruption_reason(e.message.rsplit_once(": ").map_or("", |(_, r)| r))
        };
        let pool = claim_pool(c, &e.regarding.name).unwrap_or_default();
        out.push(churn_occurrence(
            &regarding_id(c, e),
            &pool,
            "disrupted",
            &reason,
            seen,
        ));
    }
    out
}

/// NodeClaims of the previous pass that are gone now: deleted.
pub(super) fn deletions(st: &mut SliState, c: &Cluster) -> Vec<Occurrence> {
    // The claims of the last pass are kept, and only the ones that came or went are
    // looked at: a pass with no claim change allocates nothing here.
    let current: crate::model::shared::FastMap<std::borrow::Cow<str>, &NodeClaim> = c
        .nodeclaims
        .values()
        .map(|cl| (uid_ref("NodeClaim", &cl.metadata), &**cl))
        .collect();
    let mut out = Vec::new();
    st.claims.retain(|id, pool| {
        let kept = current.contains_key(id.as_str());
        if !kept {
            out.push(churn_occurrence(id, pool, "deleted", "", None));
        }
        kept
    });
    for (id, cl) in current {
        // A claim first seen without a pool is looked at again: its pool may come later.
        if st.claims.get(id.as_ref()).is_none_or(String::is_empty) {
            let pool = claim_pool(c, &cl.metadata.name).unwrap_or_default();
            st.claims.insert(id.into_owned(), pool);
        }
    }
    out
}

/// The nodes of a pool being drained (deleted, tainted `karpenter.sh/disrupted`, or their
/// NodeClaim deleted), with their pool.
fn draining_nodes(c: &Cluster) -> Vec<(String, String)> {
    // A node's NodeClaim is looked up only while some claim is being deleted.
    let claims_deleting = c
        .nodeclaims
        .values()
        .any(|cl| cl.metadata.deletion_timestamp.is_some());
    c.nodes
        .values()
        .filter_map(|node| {
            let pool = node.pool()?;
            let draining = node.metadata.deletion_timestamp.is_some()
                || node.tainted_disrupted()
                || (claims_deleting
                    && c.nodeclaim_for_node(node)
                        .is_some_and(|cl| cl.metadata.deletion_timestamp.is_some()));
            draining.then(|| (node.metadata.name.clone(), pool.to_string()))
        })
        .collect()
}

/// Pods Karpenter evicted (`Evicted pod: <reason>`) or deleted for the node's
/// terminationGracePeriod (`Disrupted`), in the last hour. Once per pod.
pub(super) fn evictions(st: &mut SliState, c: &Cluster, now: DateTime<Utc>) -> Vec<Occurrence> {
    // Pods on nodes being drained, for when the eviction is seen after the pod is gone.
    // Which nodes drain is read of the nodes and claims alone: found again only when one
    // of them changed. Their pods are read every pass.
    let token = [c.stamps().epoch(), c.stamps().zones()];
    if st
        .draining_nodes
        .as_ref()
        .is_none_or(|(at, _)| *at != token)
    {
        st.draining_nodes = Some((token, draining_nodes(c)));
    }
    let (_, nodes) = st.draining_nodes.as_ref().expect("found above");
    for (node, pool) in nodes {
        for p in c.pods_on(node) {
            let id = uid_ref("Pod", &p.metadata);
            match st.draining.get_mut(id.as_ref()) {
                Some(seen) if seen.0 == *pool => seen.1 = now,
                _ => {
                    st.draining.insert(id.into_owned(), (pool.clone(), now));
                }
            }
        }
    }
    st.draining.retain(|_, (_, t)| now - *t <= recent_window());
    let mut out = Vec::new();
    // Picked out of every event only when an event changed.
    let picked = st
        .evictions
        .of(c, |e| karpenter_event(e, ObjectKind::Pod, EVICTIONS))
        .to_vec();
    for (e, seen) in recent_events(picked.iter().map(|e| &**e), now) {
        let id = regarding_id(c, e);
        let reason = if e.is(Reason::Disrupted) {
            "termination-grace-period".to_string()
        } else {
            match e.message.trim().strip_prefix("Evicted pod:") {
                Some(r) => disruption_reason(r),
                None => "other".to_string(),
            }
        };
        let r = &e.regarding;
        let pool = c
            .pods
            .get(&(r.namespace.clone().unwrap_or_default(), r.name.clone()))
            .filter(|p| uid("Pod", &p.metadata) == id)
            .and_then(|p| c.nodes.get(p.spec.node_name.as_deref()?))
            .and_then(|n| n.pool())
            .map(str::to_string)
            .or_else(|| st.draining.get(&id).map(|(pool, _)| pool.clone()))
            .unwrap_or_default();
        out.push(Occurrence {
            key: format!("eviction/{id}"),
            series: SliSeries::Eviction(PoolReasonLabels {
                nodepool: pool,
                reason,
            }),
            seen,
            value: 1.0,
        });
    }
    out
}
