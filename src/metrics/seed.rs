//! The seed operator's metrics, derived from each analysis pass.
//!
//! [`SeedMetrics::update`] takes the report, the model it came from and the time, and
//! updates the families. Each occurrence is counted once, keyed by the UIDs of the objects
//! it is about (names when a dump has no UIDs), so a relist never counts twice. Series whose
//! objects no longer exist are removed after the series TTL, so cardinality stays bounded.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Mutex;

use chrono::{DateTime, Duration, Utc};
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

use super::common::{claims_token, reg, uid, PickedEvents, DEFAULT_SERIES_TTL};
use super::defs;
use crate::analysis::disruption::{Blocker, NotReapedDetails};
use crate::analysis::placement::MismatchDetails;
use crate::analysis::provisioning::{claim_pool, NominationDetails};
use crate::analysis::Pass;
use crate::findings::{Code, Finding, Report};
use crate::karpenter::duration;
use crate::karpenter::events::Reason;
use crate::karpenter::events::{self, BlockerKind, NominationTarget};
use crate::model::shared::{FastMap, FastSet};
use crate::model::Cluster;
use crate::model::ObjectKind;

#[derive(Clone, Debug, Hash, PartialEq, Eq, PartialOrd, Ord, EncodeLabelSet)]
pub struct MismatchLabels {
    pub daemonset: String,
    pub namespace: String,
    pub node: String,
    pub nodepool: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, PartialOrd, Ord, EncodeLabelSet)]
pub struct TtlLabels {
    pub node: String,
    pub nodepool: String,
    pub ttl_reason: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, PartialOrd, Ord, EncodeLabelSet)]
pub struct NominationFailureLabels {
    pub pod: String,
    pub namespace: String,
    pub node: String,
    pub reason: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, PartialOrd, Ord, EncodeLabelSet)]
pub struct CreatedForPodLabels {
    pub node: String,
    pub pod: String,
    pub namespace: String,
    pub nodepool: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, PartialOrd, Ord, EncodeLabelSet)]
pub struct NotReapedLabels {
    pub node: String,
    pub nodepool: String,
    pub nominated_pod: String,
    pub nominated_namespace: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, PartialOrd, Ord, EncodeLabelSet)]
pub struct DelayLabels {
    pub node: String,
    pub nodepool: String,
    pub delay_reason: String,
}

/// One series a counted occurrence landed in.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Series {
    Mismatch(MismatchLabels),
    Ttl(TtlLabels),
    NominationFailure(NominationFailureLabels),
    CreatedForPod(CreatedForPodLabels),
    Delay(DelayLabels),
}

/// Something seen in one pass, to count once.
#[derive(Clone, Debug)]
pub struct Occurrence {
    /// Unique per occurrence: made of object UIDs.
    pub key: String,
    pub series: Series,
    /// The objects it is about: while any is gone, its series ages towards removal.
    pub uids: Vec<String>,
    /// For the histogram: the observed value.
    pub value: f64,
}

#[derive(Debug)]
struct Counted {
    series: Series,
    uids: Vec<String>,
    alive_at: DateTime<Utc>,
}

/// What persists between passes.
#[derive(Debug, Default)]
pub struct SeedState {
    counted: FastMap<String, Counted>,
    /// Empty nodes not reaped, by node UID: their labels and since when.
    reaping: BTreeMap<String, (DelayLabels, DateTime<Utc>)>,
    stuck: BTreeSet<NotReapedLabels>,
    /// Every NodeClaim's expiry ([`ttl_candidates`]), with the stamps of the claims, nodes
    /// and pools it was read at ([`claims_token`]): the clock alone only makes more of
    /// them due.
    ttl: (Option<[u64; 4]>, Expiries),
    /// Karpenter's `Nominated` events about pods, picked out of all events.
    nominated: PickedEvents,
    /// Which of the nodes, NodeClaims and DaemonSets the counted occurrences name the
    /// model holds ([`alive_uids`]), with the model (its epoch) and its zones stamp they
    /// were looked for at.
    alive: Option<([u64; 2], BTreeSet<String>)>,
}

/// NodeClaims' deaths by expiry, each with the instant it is due, soonest first.
type Expiries = Vec<(DateTime<Utc>, Occurrence)>;

impl SeedState {
    /// How many occurrences are remembered (bounded by the series TTL).
    pub fn remembered(&self) -> usize {
        self.counted.len()
    }
}

type HistogramFamily<L> = Family<L, Histogram, fn() -> Histogram>;

fn delay_histogram() -> Histogram {
    Histogram::new(defs::REAPING_DELAY_BUCKETS.iter().copied())
}

/// The seed's families and the state that keeps them counted once.
#[derive(Debug)]
pub struct SeedMetrics {
    pub mismatch: Family<MismatchLabels, Counter>,
    pub ttl_deaths: Family<TtlLabels, Counter>,
    pub nomination_failures: Family<NominationFailureLabels, Counter>,
    pub created_for_pods: Family<CreatedForPodLabels, Counter>,
    pub not_reaped: Family<NotReapedLabels, Gauge>,
    pub reaping_delay: HistogramFamily<DelayLabels>,
    pub series_ttl: Duration,
    /// The SLIs and the picture of now, fed by the same passes.
    pub sli: super::sli::Sli,
    state: Mutex<SeedState>,
}

impl Default for SeedMetrics {
    fn default() -> Self {
        SeedMetrics::new(DEFAULT_SERIES_TTL)
    }
}

impl SeedMetrics {
    pub fn new(series_ttl: std::time::Duration) -> Self {
        SeedMetrics {
            mismatch: Family::default(),
            ttl_deaths: Family::default(),
            nomination_failures: Family::default(),
            created_for_pods: Family::default(),
            not_reaped: Family::default(),
            reaping_delay: Family::new_with_constructor(delay_histogram),
            series_ttl: Duration::from_std(series_ttl).unwrap_or(Duration::hours(1)),
            sli: super::sli::Sli::new(series_ttl),
            state: Mutex::new(SeedState::default()),
        }
    }

    /// Register every family (they share their data with `self`).
    pub fn register(&self, r: &mut Registry) {
        reg(r, &defs::DAEMONSET_NODEPOOL_MISMATCH, self.mismatch.clone());
        reg(r, &defs::NODE_TTL_DEATHS, self.ttl_deaths.clone());
        reg(
            r,
            &defs::NOMINATED_POD_FAILURES,
            self.nomination_failures.clone(),
        );
        reg(
            r,
            &defs::NODES_CREATED_FOR_NOMINATED_PODS,
            self.created_for_pods.clone(),
        );
        reg(
            r,
            &defs::NODES_NOT_REAPED_DUE_TO_NOMINATION,
            self.not_reaped.clone(),
        );
        reg(r, &defs::NODE_REAPING_DELAY, self.reaping_delay.clone());
        self.sli.register(r);
    }

    /// How many occurrences are remembered.
    pub fn remembered(&self) -> usize {
        self.state
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remembered()
    }

    /// Fold one analysis pass into the metrics at `now` (the pass's own time, but for tests
    /// that age what a pass saw).
    pub fn update(&self, pass: &Pass, c: &Cluster, now: DateTime<Utc>) {
        let report = &*pass.report;
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let mut found = now_seen(report, c, &mut state.nominated);
        found.extend(reaping_delays(&mut state, report, c, now));
        let at = claims_token(c.stamps(), false);
        if state.ttl.0 != Some(at) {
            state.ttl = (Some(at), ttl_candidates(c));
        }
        let SeedState {
            counted,
            ttl,
            alive,
            ..
        } = &mut *state;
        let expired = ttl.1.partition_point(|(t, _)| *t <= now);
        let expired = ttl.1[..expired].iter().map(|(_, o)| o);
        // Count what is new.
        for o in found.iter().chain(expired) {
            if let Some(seen) = counted.get_mut(&o.key) {
                seen.alive_at = now;
                continue;
            }
            match &o.series {
                Series::Mismatch(l) => {
                    self.mismatch.get_or_create(l).inc();
                }
                Series::Ttl(l) => {
                    self.ttl_deaths.get_or_create(l).inc();
                }
                Series::NominationFailure(l) => {
                    self.nomination_failures.get_or_create(l).inc();
                }
                Series::CreatedForPod(l) => {
                    self.created_for_pods.get_or_create(l).inc();
                }
                Series::Delay(l) => self.reaping_delay.get_or_create(l).observe(o.value),
            }
            counted.insert(
                o.key.clone(),
                Counted {
                    series: o.series.clone(),
                    uids: o.uids.clone(),
                    alive_at: now,
                },
            );
            // It may name an object the kept set was not looking for.
            *alive = None;
        }
        // Age out occurrences whose objects are gone. Which nodes, NodeClaims and
        // DaemonSets are alive is looked for again only when they changed (the zones
        // stamp: any node or claim, or anything global) or a new occurrence was counted
        // (one counted no more needs no look); the few pods a nomination failure names,
        // on every pass.
        let token = [c.stamps().epoch(), c.stamps().zones()];
        if alive.as_ref().is_none_or(|(at, _)| *at != token) {
            *alive = Some((token, alive_uids(c, counted)));
        }
        let alive = &alive.as_ref().expect("looked for above").1;
        let pods = alive_pods(c, counted);
        let ttl = self.series_ttl;
        let mut expired = Vec::new();
        for (key, c) in counted.iter_mut() {
            if c.uids.iter().all(|u| alive.contains(u) || pods.contains(u)) {
                c.alive_at = now;
            } else if now - c.alive_at > ttl {
                expired.push(key.clone());
            }
        }
        let gone: Vec<Series> = expired
            .iter()
            .filter_map(|k| state.counted.remove(k))
            .map(|c| c.series)
            .collect();
        for s in gone {
            if state.counted.values().any(|c| c.series == s) {
                continue;
            }
            match &s {
                Series::Mismatch(l) => self.mismatch.remove(l),
                Series::Ttl(l) => self.ttl_deaths.remove(l),
                Series::NominationFailure(l) => self.nomination_failures.remove(l),
                Series::CreatedForPod(l) => self.created_for_pods.remove(l),
                Series::Delay(l) => self.reaping_delay.remove(l),
            };
        }
        // The gauge is the picture of now.
        let stuck = not_reaped(report);
        for old in state.stuck.difference(&stuck) {
            self.not_reaped.remove(old);
        }
        for l in &stuck {
            self.not_reaped.get_or_create(l).set(1);
        }
        state.stuck = stuck;
        drop(state);
        self.sli.update(pass, c, now);
    }
}

/// Which of the object ids (see [`uid`]) the counted occurrences name the model still
/// holds, of nodes, DaemonSets and NodeClaims: one look at each, with nothing allocated
/// for the many that no occurrence names. Pods are [`alive_pods`].
fn alive_uids(c: &Cluster, counted: &FastMap<String, Counted>) -> BTreeSet<String> {
    let wanted: std::collections::HashSet<&str, foldhash::fast::RandomState> = counted
        .values()
        .flat_map(|c| c.uids.iter())
        .map(String::as_str)
        .collect();
    let mut alive = BTreeSet::new();
    if wanted.is_empty() {
        return alive;
    }
    let mut see = |kind: &str, m: &crate::model::Meta| {
        if m.uid.is_empty() {
            let u = uid(kind, m);
            if wanted.contains(u.as_str()) {
                alive.insert(u);
            }
        } else if wanted.contains(m.uid.as_str()) {
            alive.insert(m.uid.clone());
        }
    };
    c.nodes.values().for_each(|o| see("Node", &o.metadata));
    c.daemonsets
        .values()
        .for_each(|o| see("DaemonSet", &o.metadata));
    c.nodeclaims
        .values()
        .for_each(|o| see("NodeClaim", &o.metadata));
    alive
}

/// The ids of the pods the counted occurrences name that the model still holds: only a
/// nomination failure names one (by its labels), so each is looked up by name rather than
/// every pod read.
fn alive_pods(c: &Cluster, counted: &FastMap<String, Counted>) -> FastSet<String> {
    counted
        .values()
        .filter_map(|counted| match &counted.series {
            Series::NominationFailure(l) => c.pods.get(&(l.namespace.clone(), l.pod.clone())),
            _ => None,
        })
        .map(|p| uid("Pod", &p.metadata))
        .collect()
}

fn node_uid(c: &Cluster, name: &str) -> String {
    c.nodes
        .get(name)
        .map(|n| uid("Node", &n.metadata))
        .unwrap_or_else(|| format!("Node//{name}"))
}

fn pod_uid(c: &Cluster, ns: &str, name: &str) -> String {
    c.pods
        .get(&(ns.to_string(), name.to_string()))
        .map(|p| uid("Pod", &p.metadata))
        .unwrap_or_else(|| format!("Pod/{ns}/{name}"))
}

/// The occurrences of the pass's findings and Karpenter's nominations: all but the
/// NodeClaims' expiries.
fn now_seen(report: &Report, c: &Cluster, nominated: &mut PickedEvents) -> Vec<Occurrence> {
    let mut out = Vec::new();
    for f in &report.findings {
        match f.code {
            Code::DaemonsetNodepoolMismatch => {
                let pool = f.nodepool.clone().unwrap_or_default();
                let ns = f.object.namespace.clone().unwrap_or_default();
                let ds_uid = c
                    .daemonsets
                    .get(&(ns.clone(), f.object.name.clone()))
                    .map(|d| uid("DaemonSet", &d.metadata))
                    .unwrap_or_else(|| format!("DaemonSet/{ns}/{}", f.object.name));
                let nodes = f
                    .details
                    .downcast_ref::<MismatchDetails>()
                    .map(|d| d.nodes.as_slice());
                for node in nodes.unwrap_or_default().iter().cloned() {
                    let n_uid = node_uid(c, &node);
                    out.push(Occurrence {
                        key: format!("mismatch/{ds_uid}/{n_uid}"),
                        series: Series::Mismatch(MismatchLabels {
                            daemonset: f.object.name.clone(),
                            namespace: ns.clone(),
                            node,
                            nodepool: pool.clone(),
                        }),
                        uids: vec![ds_uid.clone(), n_uid],
                        value: 1.0,
                    });
                }
            }
            Code::PodNominatedNotBound => {
                let ns = f.object.namespace.clone().unwrap_or_default();
                let p_uid = pod_uid(c, &ns, &f.object.name);
                let d = f.details.downcast_ref::<NominationDetails>();
                let reason = d.map_or("not bound", |d| d.outcome.as_str()).to_string();
                for target in d.map(|d| d.nominated_to.clone()).unwrap_or_default() {
                    // node/NAME, or nodeclaim/NAME: the node it became, when it did.
                    let node = match target.split_once('/') {
                        Some(("nodeclaim", nc)) => c
                            .nodeclaims
                            .get(nc)
                            .and_then(|x| x.status.node_name.clone())
                            .unwrap_or_else(|| nc.to_string()),
                        Some((_, n)) => n.to_string(),
                        None => target.clone(),
                    };
                    out.push(Occurrence {
                        key: format!("nomination-failure/{p_uid}/{target}"),
                        series: Series::NominationFailure(NominationFailureLabels {
                            pod: f.object.name.clone(),
                            namespace: ns.clone(),
                            node,
                            reason: reason.clone(),
                        }),
                        uids: vec![p_uid.clone()],
                        value: 1.0,
                    });
                }
            }
            _ => {}
        }
    }
    out.extend(created_for_nominated(c, nominated));
    out
}

/// Every NodeClaim's death by its expireAfter (Karpenter v1's default is 720h), with the
/// instant it is due, soonest first: the ones due by now are the claims past it.
fn ttl_candidates(c: &Cluster) -> Expiries {
    let mut out = Vec::new();
    for claim in c.nodeclaims.values() {
        let Some(created) = claim.metadata.creation_timestamp else {
            continue;
        };
        let ea = claim.spec.expire_after.as_deref().unwrap_or("720h");
        let Ok(duration::NillableDuration::After(after)) = duration::parse_nillable(ea) else {
            continue;
        };
        let id = uid("NodeClaim", &claim.metadata);
        let occurrence = Occurrence {
            key: format!("ttl/{id}"),
            series: Series::Ttl(TtlLabels {
                node: claim
                    .status
                    .node_name
                    .clone()
                    .unwrap_or_else(|| claim.metadata.name.clone()),
                nodepool: claim_pool(c, &claim.metadata.name).unwrap_or_default(),
                ttl_reason: "expireAfter".into(),
            }),
            uids: vec![id],
            value: 1.0,
        };
        out.push((created + after, occurrence));
    }
    out.sort_by_key(|(t, _)| *t);
    out
}

/// Pods Karpenter nominated to a NodeClaim it launched (its `Nominated` events).
fn created_for_nominated(c: &Cluster, nominated: &mut PickedEvents) -> Vec<Occurrence> {
    let mut out = Vec::new();
    // Picked out of every event only when an event changed.
    for e in nominated.of(c, |e| {
        e.from_karpenter() && e.is(Reason::Nominated) && e.about(ObjectKind::Pod)
    }) {
        let ns = e.regarding.namespace.clone().unwrap_or_default();
        let p_uid = if e.regarding.uid.is_empty() {
            pod_uid(c, &ns, &e.regarding.name)
        } else {
            e.regarding.uid.clone()
        };
        for t in events::parse_nominated(&e.message) {
            let NominationTarget::NodeClaim(nc) = t else {
                continue;
            };
            let Some(claim) = c.nodeclaims.get(&nc) else {
                continue;
            };
            let id = uid("NodeClaim", &claim.metadata);
            out.push(Occurrence {
                key: format!("created-for/{id}/{p_uid}"),
                series: Series::CreatedForPod(CreatedForPodLabels {
                    node: claim.status.node_name.clone().unwrap_or(nc),
                    pod: e.regarding.name.clone(),
                    namespace: ns.clone(),
                    nodepool: claim_pool(c, &claim.metadata.name).unwrap_or_default(),
                }),
                uids: vec![id],
                value: 1.0,
            });
        }
    }
    out
}

/// The blockers of an empty-node-not-reaped finding, typed (nominations first).
fn blockers(f: &Finding) -> &[Blocker] {
    f.details
        .downcast_ref::<NotReapedDetails>()
        .map(|d| d.blockers.as_slice())
        .unwrap_or_default()
}

/// Empty nodes kept because a pod is nominated to them, now.
fn not_reaped(report: &Report) -> BTreeSet<NotReapedLabels> {
    let mut out = BTreeSet::new();
    for f in report
        .findings
        .iter()
        .filter(|f| f.code == Code::EmptyNodeNotReaped)
    {
        for b in blockers(f) {
            if b.kind != BlockerKind::Nominated {
                continue;
            }
            let object = b.object.as_ref();
            out.insert(NotReapedLabels {
                node: f.object.name.clone(),
                nodepool: f.nodepool.clone().unwrap_or_default(),
                nominated_pod: object.map(|o| o.name.clone()).unwrap_or_default(),
                nominated_namespace: object.and_then(|o| o.namespace.clone()).unwrap_or_default(),
            });
        }
    }
    out
}

/// Track empty-node-not-reaped from when it appears; observe its delay once when it resolves.
fn reaping_delays(
    state: &mut SeedState,
    report: &Report,
    c: &Cluster,
    now: DateTime<Utc>,
) -> Vec<Occurrence> {
    let mut current = BTreeMap::new();
    for f in report
        .findings
        .iter()
        .filter(|f| f.code == Code::EmptyNodeNotReaped)
    {
        let reason = blockers(f)
            .first()
            .map(|b| b.kind.as_str())
            .unwrap_or("none")
            .to_string();
        let labels = DelayLabels {
            node: f.object.name.clone(),
            nodepool: f.nodepool.clone().unwrap_or_default(),
            delay_reason: reason,
        };
        current.insert(
            node_uid(c, &f.object.name),
            (labels, f.since.unwrap_or(now)),
        );
    }
    let mut out = Vec::new();
    for (id, (labels, since)) in std::mem::take(&mut state.reaping) {
        if !current.contains_key(&id) {
            out.push(Occurrence {
                key: format!("reaping-delay/{id}"),
                series: Series::Delay(labels),
                uids: vec![id],
                value: (now - since).num_milliseconds().max(0) as f64 / 1000.0,
            });
        }
    }
    for (id, (labels, since)) in current {
        // A node counted already (reaped, then back under the same UID) is not re-opened.
        if !state.counted.contains_key(&format!("reaping-delay/{id}")) {
            state.reaping.insert(id, (labels, since));
        }
    }
    out
}
