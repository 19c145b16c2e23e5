//! The SLIs (seed 003) and the picture of now, derived from each analysis pass.
//!
//! Two kinds of metric live here:
//!
//! - **Occurrences** (histograms and counters: pod provisioning latency, node provisioning
//!   time, launch failures, node churn, evictions). Each is keyed by the UID of the object it
//!   is about and counted once, so a second pass or a relist never counts it again. They come
//!   from timestamps the objects carry (a condition's transition, an event's last sighting),
//!   and only occurrences from the last [`RECENT`] are taken: a kelp that starts (or restarts)
//!   does not pour the cluster's history into its rates. That also bounds what is remembered:
//!   an occurrence older than [`RECENT`] can never be seen again, so it is forgotten.
//!   A series is kept while its NodePool exists or its occurrences are still seen, and
//!   removed after the series TTL otherwise.
//! - **The picture of now** (gauges: unschedulable pods by category, drifted and
//!   disruption-blocked nodes, NodePool usage ratio, $/hr and node count): computed once per
//!   pass and encoded at scrape time by a [`Collector`], so only the latest pass shows and no
//!   series goes stale.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, Mutex, RwLock};

use chrono::{DateTime, Duration, Utc};
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeLabelSet, EncodeMetric};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Registry;
use super::common::{label_value, uid};
use super::defs::{self, MetricDef};
use crate::analysis::capacity::node_price;
use crate::analysis::disruption::BlockedDetails;
use crate::analysis::provisioning::{claim_pool, LAUNCH_ERRORS};
use crate::analysis::Pass;
use crate::findings::{Code, Finding};
use crate::karpenter::duration::{self, NillableDuration};
use crate::karpenter::labels;
use crate::karpenter::resources::Resources;
use crate::model::*;

/// How far back an occurrence is still counted when kelp first sees it (1 hour).
pub const RECENT_SECONDS: i64 = 3600;

fn recent_window() -> Duration {
    Duration::seconds(RECENT_SECONDS)
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, PartialOrd, Ord, EncodeLabelSet)]
pub struct PoolLabels {
    pub nodepool: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, PartialOrd, Ord, EncodeLabelSet)]
pub struct PoolCapacityLabels {
    pub nodepool: String,
    pub capacity_type: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, PartialOrd, Ord, EncodeLabelSet)]
pub struct PoolReasonLabels {
    pub nodepool: String,
    pub reason: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, PartialOrd, Ord, EncodeLabelSet)]
pub struct ChurnLabels {
    pub nodepool: String,
    pub event: String,
    pub reason: String,
}

/// The series an occurrence lands in.
#[derive(Clone, Debug, Hash, PartialEq, Eq, PartialOrd, Ord)]
pub enum SliSeries {
    PodLatency(PoolLabels),
    NodeProvisioning(PoolCapacityLabels),
    LaunchFailure(PoolReasonLabels),
    Churn(ChurnLabels),
    Eviction(PoolReasonLabels),
}

impl SliSeries {
    fn nodepool(&self) -> &str {
        match self {
            SliSeries::PodLatency(l) => &l.nodepool,
            SliSeries::NodeProvisioning(l) => &l.nodepool,
            SliSeries::LaunchFailure(l) | SliSeries::Eviction(l) => &l.nodepool,
            SliSeries::Churn(l) => &l.nodepool,
        }
    }
}

/// Something seen in one pass, to count once.
#[derive(Clone, Debug)]
pub struct Occurrence {
    /// Unique per occurrence: made of object UIDs.
    pub key: String,
    pub series: SliSeries,
    /// After this it can no longer be seen (it left the [`RECENT_SECONDS`] window).
    pub until: DateTime<Utc>,
    /// For histograms: the observed value, in seconds.
    pub value: f64,
}

/// One gauge family of the picture of now: label values (in the definition's label order)
/// and the value.
#[derive(Debug, Clone, PartialEq)]
pub struct GaugeFamily {
    pub def: MetricDef,
    pub samples: BTreeMap<Vec<String>, f64>,
}

type Snapshot = Arc<RwLock<Option<Arc<Vec<GaugeFamily>>>>>;

#[derive(Debug, Default)]
struct SliState {
    /// Occurrences counted, until when they could still be seen.
    counted: HashMap<String, DateTime<Utc>>,
    /// Every series created, and when it was last alive (its pool existed, or one of its
    /// occurrences was seen).
    series: HashMap<SliSeries, DateTime<Utc>>,
    /// NodeClaims of the last pass (id -> pool), to tell which were deleted.
    claims: HashMap<String, String>,
    /// Pods seen on nodes being drained (pod id -> pool, when), to name the pool of an
    /// eviction whose pod is already gone.
    draining: HashMap<String, (String, DateTime<Utc>)>,
}

type HistogramFamily<L> = Family<L, Histogram, fn() -> Histogram>;

fn pod_latency_histogram() -> Histogram {
    Histogram::new(defs::POD_LATENCY_BUCKETS.iter().copied())
}

fn node_provisioning_histogram() -> Histogram {
    Histogram::new(defs::NODE_PROVISIONING_BUCKETS.iter().copied())
}

/// The SLI families, the picture of now, and the state that keeps occurrences counted once.
#[derive(Debug)]
pub struct Sli {
    pub pod_latency: HistogramFamily<PoolLabels>,
    pub node_provisioning: HistogramFamily<PoolCapacityLabels>,
    pub launch_failures: Family<PoolReasonLabels, Counter>,
    pub node_churn: Family<ChurnLabels, Counter>,
    pub evictions: Family<PoolReasonLabels, Counter>,
    pub series_ttl: Duration,
    now: Snapshot,
    state: Mutex<SliState>,
}

impl Default for Sli {
    fn default() -> Self {
        Sli::new(super::common::DEFAULT_SERIES_TTL)
    }
}

/// Encodes the latest pass's gauges at scrape time.
#[derive(Debug)]
struct NowCollector(Snapshot);

impl Collector for NowCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let snapshot = self.0.read().ok().and_then(|s| s.clone());
        let Some(families) = snapshot else {
            return Ok(());
        };
        for f in families.iter() {
            let mut metric =
                encoder.encode_descriptor(f.def.name, f.def.help, None, MetricType::Gauge)?;
            for (values, v) in &f.samples {
                let labels: Vec<(&str, &str)> = f
                    .def
                    .labels
                    .iter()
                    .copied()
                    .zip(values.iter().map(String::as_str))
                    .collect();
                ConstGauge::new(*v).encode(metric.encode_family(&labels)?)?;
            }
        }
        Ok(())
    }
}

impl Sli {
    pub fn new(series_ttl: std::time::Duration) -> Self {
        Sli {
            pod_latency: Family::new_with_constructor(pod_latency_histogram),
            node_provisioning: Family::new_with_constructor(node_provisioning_histogram),
            launch_failures: Family::default(),
            node_churn: Family::default(),
            evictions: Family::default(),
            series_ttl: Duration::from_std(series_ttl).unwrap_or(Duration::hours(1)),
            now: Arc::default(),
            state: Mutex::new(SliState::default()),
        }
    }

    /// Register every family and the collector of the picture of now.
    pub fn register(&self, r: &mut Registry) {
        use super::common::reg;
        reg(r, &defs::POD_PROVISIONING_LATENCY, self.pod_latency.clone());
        reg(r, &defs::NODE_PROVISIONING, self.node_provisioning.clone());
        reg(r, &defs::LAUNCH_FAILURES, self.launch_failures.clone());
        reg(r, &defs::NODE_CHURN, self.node_churn.clone());
        reg(r, &defs::EVICTIONS, self.evictions.clone());
        r.register_collector(Box::new(NowCollector(self.now.clone())));
    }

    /// How many occurrences are remembered (bounded by the last hour's).
    pub fn remembered(&self) -> usize {
        self.state
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .counted
            .len()
    }

    /// The gauges of the latest pass.
    pub fn gauges(&self) -> Option<Arc<Vec<GaugeFamily>>> {
        self.now.read().ok().and_then(|s| s.clone())
    }

    /// Fold one analysis pass into the metrics.
    pub fn update(&self, pass: &Pass, c: &Cluster, now: DateTime<Utc>) {
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let mut found = pod_latencies(c, now);
        found.extend(node_provisioning(c, now));
        found.extend(launch_failures(c, now));
        found.extend(churn(c, now));
        found.extend(deletions(&mut st, c, now));
        found.extend(evictions(&mut st, c, now));
        for o in found {
            st.series.insert(o.series.clone(), now);
            if let Some(until) = st.counted.get_mut(&o.key) {
                *until = (*until).max(o.until);
                continue;
            }
            match &o.series {
                SliSeries::PodLatency(l) => self.pod_latency.get_or_create(l).observe(o.value),
                SliSeries::NodeProvisioning(l) => {
                    self.node_provisioning.get_or_create(l).observe(o.value)
                }
                SliSeries::LaunchFailure(l) => {
                    self.launch_failures.get_or_create(l).inc();
                }
                SliSeries::Churn(l) => {
                    self.node_churn.get_or_create(l).inc();
                }
                SliSeries::Eviction(l) => {
                    self.evictions.get_or_create(l).inc();
                }
            }
            st.counted.insert(o.key, o.until);
        }
        // What can no longer be seen is forgotten.
        st.counted.retain(|_, until| *until >= now);
        // Series of pools that exist stay; the others go after the TTL.
        let ttl = self.series_ttl;
        let mut gone = Vec::new();
        for (s, alive_at) in st.series.iter_mut() {
            if c.nodepools.contains_key(s.nodepool()) {
                *alive_at = now;
            } else if now - *alive_at > ttl {
                gone.push(s.clone());
            }
        }
        for s in gone {
            st.series.remove(&s);
            match &s {
                SliSeries::PodLatency(l) => self.pod_latency.remove(l),
                SliSeries::NodeProvisioning(l) => self.node_provisioning.remove(l),
                SliSeries::LaunchFailure(l) => self.launch_failures.remove(l),
                SliSeries::Churn(l) => self.node_churn.remove(l),
                SliSeries::Eviction(l) => self.evictions.remove(l),
            };
        }
        drop(st);
        let families = Arc::new(gauges(pass, c));
        if let Ok(mut g) = self.now.write() {
            *g = Some(families);
        }
    }
}

// ------------------------------------------------------------------ helpers

/// `Some(until)` when `t` lies within the recent window before `now` (or after it: clocks
/// skew), i.e. an occurrence at `t` may be counted now and can be seen until `until`.
fn recent(t: DateTime<Utc>, now: DateTime<Utc>) -> Option<DateTime<Utc>> {
    (now - t <= recent_window()).then(|| t.max(now) + recent_window())
}

fn seconds(d: Duration) -> f64 {
    d.num_milliseconds().max(0) as f64 / 1000.0
}

/// When a condition became True, if it is True.
fn true_since(conds: &[Condition], type_: &str) -> Option<DateTime<Utc>> {
    condition(conds, type_)
        .filter(|c| c.is_true())
        .and_then(|c| c.last_transition_time)
}


/// A disruption reason as the churn and eviction labels write it: `Drifted` -> `drifted`.
/// Karpenter writes `Drifted`, or `Drifted/Replace` in older versions: the first word counts.
fn disruption_reason(s: &str) -> String {
    let word = s
        .trim()
        .split(|c: char| c == '/' || c == ',' || c.is_whitespace())
        .next()
        .unwrap_or_default();
    label_value(&word.to_lowercase())
}

/// A NodeClaim's pool: its label, else its name's prefix when that pool exists, else "".
fn claim_pool_name(c: &Cluster, claim: &NodeClaim) -> String {
    Cluster::pool_of(&claim.metadata.labels)
        .map(str::to_string)
        .or_else(|| claim_pool(c, &claim.metadata.name))
        .unwrap_or_default()
}

/// The id of the object an event is about: its UID, else the object's in the model.
fn regarding_id(c: &Cluster, e: &Event) -> String {
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

/// Karpenter's recent events of these reasons about objects of `kind`, with their window.
fn karpenter_events<'c>(
    c: &'c Cluster,
    kind: &'c str,
    reasons: &'c [&'c str],
    now: DateTime<Utc>,
) -> impl Iterator<Item = (&'c Event, DateTime<Utc>)> + 'c {
    c.events.values().filter_map(move |e| {
        if !(e.from_karpenter() && e.regarding.kind == kind && reasons.contains(&e.reason.as_str()))
        {
            return None;
        }
        // An event with no time at all is taken as seen now.
        Some((e, recent(e.seen().unwrap_or(now), now)?))
    })
}

// ------------------------------------------------------------------ occurrences

/// Pods bound in the last hour that waited on new capacity from Karpenter: bound to a
/// Karpenter node created after the pod, or with a FailedScheduling or Karpenter Nominated
/// event. Observed: creation to PodScheduled=True.
pub fn pod_latencies(c: &Cluster, now: DateTime<Utc>) -> Vec<Occurrence> {
    let mut out = Vec::new();
    for p in c.pods.values() {
        let Some(node_name) = p.spec.node_name.as_deref() else {
            continue;
        };
        let Some(bound) = true_since(&p.status.conditions, "PodScheduled") else {
            continue;
        };
        let Some(until) = recent(bound, now) else {
            continue;
        };
        let m = &p.metadata;
        // Karpenter never provisions for DaemonSet or mirror pods.
        if m.owned_by("DaemonSet") || m.owned_by("Node") {
            continue;
        }
        let (Some(created), Some(node)) = (m.creation_timestamp, c.nodes.get(node_name)) else {
            continue;
        };
        let Some(pool) = Cluster::pool_of(&node.metadata.labels) else {
            continue;
        };
        let node_created = node.metadata.creation_timestamp.or_else(|| {
            c.nodeclaim_for_node(node)
                .and_then(|cl| cl.metadata.creation_timestamp)
        });
        let waited = node_created.is_some_and(|t| t > created)
            || c.events_for("Pod", m.namespace.as_deref(), &m.name, &m.uid)
                .iter()
                .any(|e| {
                    e.reason == "FailedScheduling"
                        || (e.from_karpenter() && e.reason == "Nominated")
                });
        if !waited {
            continue;
        }
        out.push(Occurrence {
            key: format!("pod-latency/{}", uid("Pod", m)),
            series: SliSeries::PodLatency(PoolLabels {
                nodepool: pool.to_string(),
            }),
            until,
            value: seconds(bound - created),
        });
    }
    out
}

/// NodeClaims initialized in the last hour: creation to Initialized=True.
pub fn node_provisioning(c: &Cluster, now: DateTime<Utc>) -> Vec<Occurrence> {
    let mut out = Vec::new();
    for claim in c.nodeclaims.values() {
        let Some(init) = true_since(&claim.status.conditions, "Initialized") else {
            continue;
        };
        let (Some(until), Some(created)) = (recent(init, now), claim.metadata.creation_timestamp)
        else {
            continue;
        };
        let capacity_type = claim
            .metadata
            .label(labels::CAPACITY_TYPE)
            .or_else(|| {
                c.node_for_claim(claim)
                    .and_then(|n| n.metadata.label(labels::CAPACITY_TYPE))
            })
            .unwrap_or_default()
            .to_string();
        out.push(Occurrence {
            key: format!("node-provisioning/{}", uid("NodeClaim", &claim.metadata)),
            series: SliSeries::NodeProvisioning(PoolCapacityLabels {
                nodepool: claim_pool_name(c, claim),
                capacity_type,
            }),
            until,
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
        let at = l
            .last_transition_time
            .or(claim.metadata.creation_timestamp)
            .unwrap_or(now);
        let Some(until) = recent(at, now) else {
            continue;
        };
        out.push(Occurrence {
            key: format!("launch-failure/{}", uid("NodeClaim", &claim.metadata)),
            series: SliSeries::LaunchFailure(PoolReasonLabels {
                nodepool: claim_pool_name(c, claim),
                reason: label_value(l.reason.as_deref().unwrap_or("LaunchFailed")),
            }),
            until,
            value: 1.0,
        });
    }
    for (e, until) in karpenter_events(c, "NodeClaim", LAUNCH_ERRORS, now) {
        out.push(Occurrence {
            key: format!("launch-failure/{}", regarding_id(c, e)),
            series: SliSeries::LaunchFailure(PoolReasonLabels {
                nodepool: claim_pool(c, &e.regarding.name).unwrap_or_default(),
                reason: label_value(&e.reason),
            }),
            until,
            value: 1.0,
        });
    }
    out
}

fn churn_occurrence(
    id: &str,
    pool: &str,
    event: &str,
    reason: &str,
    until: DateTime<Utc>,
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
        until,
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
        let id = uid("NodeClaim", m);
        let pool = claim_pool_name(c, claim);
        for (event, cond) in [
            ("launched", "Launched"),
            ("registered", "Registered"),
            ("initialized", "Initialized"),
        ] {
            if let Some(until) = true_since(conds, cond).and_then(|t| recent(t, now)) {
                out.push(churn_occurrence(&id, &pool, event, "", until));
            }
        }
        if let Some(d) = condition(conds, "DisruptionReason").filter(|d| d.is_true()) {
            let at = d
                .last_transition_time
                .or(m.deletion_timestamp)
                .unwrap_or(now);
            if let Some(until) = recent(at, now) {
                let reason = disruption_reason(d.reason.as_deref().unwrap_or("other"));
                out.push(churn_occurrence(&id, &pool, "disrupted", &reason, until));
            }
        } else if let Some(deleted) = m.deletion_timestamp {
            // Expiry deletes the NodeClaim directly (no DisruptionReason in v1).
            let expire_after = claim
                .spec
                .expire_after
                .clone()
                .or_else(|| {
                    c.nodepools
                        .get(&pool)
                        .and_then(|p| p.spec.template.spec.expire_after.clone())
                })
                .unwrap_or_else(|| crate::analysis::disruption::DEFAULT_EXPIRE_AFTER.into());
            let expired = match (
                duration::parse_nillable(&expire_after),
                m.creation_timestamp,
            ) {
                (Ok(NillableDuration::After(d)), Some(created)) => deleted >= created + d,
                _ => false,
            };
            if let Some(until) = recent(deleted, now).filter(|_| expired) {
                out.push(churn_occurrence(&id, &pool, "disrupted", "expired", until));
            }
        }
    }
    for (e, until) in karpenter_events(
        c,
        "NodeClaim",
        &["DisruptionTerminating", "TerminatingOnInterruption"],
        now,
    ) {
        let reason = if e.reason == "TerminatingOnInterruption" {
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
            until,
        ));
    }
    out
}

/// NodeClaims of the previous pass that are gone now: deleted.
fn deletions(st: &mut SliState, c: &Cluster, now: DateTime<Utc>) -> Vec<Occurrence> {
    let current: HashMap<String, String> = c
        .nodeclaims
        .values()
        .map(|cl| (uid("NodeClaim", &cl.metadata), claim_pool_name(c, cl)))
        .collect();
    let before = std::mem::replace(&mut st.claims, current);
    before
        .into_iter()
        .filter(|(id, _)| !st.claims.contains_key(id))
        .map(|(id, pool)| churn_occurrence(&id, &pool, "deleted", "", now + recent_window()))
        .collect()
}

/// Pods Karpenter evicted (`Evicted pod: <reason>`) or deleted for the node's
/// terminationGracePeriod (`Disrupted`), in the last hour. Once per pod.
fn evictions(st: &mut SliState, c: &Cluster, now: DateTime<Utc>) -> Vec<Occurrence> {
    // Pods on nodes being drained, for when the eviction is seen after the pod is gone.
    for node in c.nodes.values() {
        let Some(pool) = Cluster::pool_of(&node.metadata.labels) else {
            continue;
        };
        let draining = node.metadata.deletion_timestamp.is_some()
            || node
                .spec
                .taints
                .iter()
                .any(|t| t.key == "karpenter.sh/disrupted")
            || c.nodeclaim_for_node(node)
                .is_some_and(|cl| cl.metadata.deletion_timestamp.is_some());
        if draining {
            for p in c.pods_on(&node.metadata.name) {
                st.draining
                    .insert(uid("Pod", &p.metadata), (pool.to_string(), now));
            }
        }
    }
    st.draining.retain(|_, (_, t)| now - *t <= recent_window());
    let mut out = Vec::new();
    for (e, until) in karpenter_events(c, "Pod", &["Evicted", "Disrupted"], now) {
        let id = regarding_id(c, e);
        let reason = if e.reason == "Disrupted" {
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
            .and_then(|n| Cluster::pool_of(&n.metadata.labels))
            .map(str::to_string)
            .or_else(|| st.draining.get(&id).map(|(pool, _)| pool.clone()))
            .unwrap_or_default();
        out.push(Occurrence {
            key: format!("eviction/{id}"),
            series: SliSeries::Eviction(PoolReasonLabels {
                nodepool: pool,
                reason,
            }),
            until,
            value: 1.0,
        });
    }
    out
}

// ------------------------------------------------------------------ the picture of now

fn family(def: MetricDef) -> GaugeFamily {
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

/// The kinds of blocker a disruption-blocked finding names, each once.
fn blocker_kinds(f: &Finding) -> BTreeSet<&'static str> {
    f.details
        .downcast_ref::<BlockedDetails>()
        .map(|d| d.blockers.iter().map(|b| b.kind.as_str()).collect())
        .unwrap_or_default()
}

/// A pool's nodes now: its Node objects (live; a NodeClaim that never launched is no node),
/// else, when kelp sees neither nodes nor NodeClaims of it (a partial dump), what its status
/// says (Karpenter updates status.nodes a few seconds behind).
fn nodes_now(c: &Cluster, pool: &NodePool) -> f64 {
    let name = &pool.metadata.name;
    let nodes = c.nodes_in_pool(name).count();
    let n = if nodes == 0 && c.claims_in_pool(name).next().is_none() {
        pool.status.nodes.unwrap_or(0).max(0) as usize
    } else {
        nodes
    };
    n as f64
}

/// The picture of now, from one pass.
pub fn gauges(pass: &Pass, c: &Cluster) -> Vec<GaugeFamily> {
    let mut unschedulable = family(defs::UNSCHEDULABLE_PODS);
    let mut drifted = family(defs::DRIFTED_NODES);
    let mut blocked = family(defs::DISRUPTION_BLOCKED_NODES);
    let mut usage = family(defs::NODEPOOL_USAGE_RATIO);
    let mut cost = family(defs::NODEPOOL_COST);
    let mut nodes = family(defs::NODEPOOL_NODES);

    for f in pass.report.findings.iter() {
        let pool = f.nodepool.as_deref().unwrap_or_default();
        match f.code {
            Code::PodUnschedulable => {
                let ns = f.object.namespace.as_deref().unwrap_or_default();
                let (cat, pool) = match pass.hold(ns, &f.object.name) {
                    Some(h) => (label_value(&h.category), h.nodepool.clone()),
                    None => ("unknown".to_string(), String::new()),
                };
                unschedulable.add(&[&cat, &pool], 1.0);
            }
            Code::NodeclaimDrifted => drifted.add(&[pool], 1.0),
            Code::DisruptionBlocked => {
                for kind in blocker_kinds(f) {
                    blocked.add(&[pool, kind], 1.0);
                }
            }
            _ => {}
        }
    }
    for (name, pool) in &c.nodepools {
        // Every pool shows, with 0: "no drifted nodes" and "no nodes" are answers.
        drifted.add(&[name], 0.0);
        let count = nodes_now(c, pool);
        nodes.add(&[name], count);
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
    for node in c.nodes.values() {
        let Some(pool) = Cluster::pool_of(&node.metadata.labels) else {
            continue;
        };
        if let Some(price) = node_price(c, node).filter(|p| p.is_finite()) {
            let ct = node
                .metadata
                .label(labels::CAPACITY_TYPE)
                .unwrap_or_default();
            cost.add(&[pool, ct], price);
        }
    }
    vec![unschedulable, drifted, blocked, usage, cost, nodes]
}

#[cfg(test)]
mod tests {
    use super::*;

    const T0: &str = "2026-11-21T10:00:00Z";

    fn t(offset_s: i64) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(T0)
            .unwrap()
            .with_timezone(&Utc)
            + Duration::seconds(offset_s)
    }

    fn ts(offset_s: i64) -> String {
        t(offset_s).to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
    }

    fn pool(name: &str) -> String {
        format!(
            r#"
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {{name: {name}, uid: np-{name}}}
spec:
  limits: {{cpu: "10", nodes: "4"}}
  template:
    spec:
      nodeClassRef: {{group: karpenter.kwok.sh, kind: KWOKNodeClass, name: default}}
      requirements: [{{key: kubernetes.io/os, operator: In, values: [linux]}}]
status:
  resources: {{cpu: "4"}}
  nodes: 1
  conditions: [{{type: Ready, status: "True"}}]
"#
        )
    }

    fn node(name: &str, pool: &str, created: i64, extra: &str) -> String {
        format!(
            r#"
apiVersion: v1
kind: Node
metadata:
  name: {name}
  uid: uid-{name}
  creationTimestamp: "{}"
  labels:
    karpenter.sh/nodepool: {pool}
    karpenter.sh/capacity-type: on-demand
    eks-node-viewer/instance-price: "0.25"
spec:
  providerID: kwok://{name}
{extra}
"#,
            ts(created)
        )
    }

    fn claim(name: &str, pool: &str, node: &str, created: i64, conditions: &str) -> String {
        format!(
            r#"
apiVersion: karpenter.sh/v1
kind: NodeClaim
metadata:
  name: {name}
  uid: uid-{name}
  creationTimestamp: "{}"
  labels: {{karpenter.sh/nodepool: {pool}, karpenter.sh/capacity-type: on-demand}}
status:
  nodeName: {node}
  providerID: kwok://{node}
  conditions:
{conditions}
"#,
            ts(created)
        )
    }

    fn cond(type_: &str, status: &str, reason: &str, at: i64) -> String {
        format!(
            "  - {{type: {type_}, status: \"{status}\", reason: {reason}, lastTransitionTime: \"{}\"}}\n",
            ts(at)
        )
    }

    fn pod(name: &str, node: &str, created: i64, bound: i64, extra_meta: &str) -> String {
        format!(
            r#"
apiVersion: v1
kind: Pod
metadata:
  name: {name}
  namespace: web
  uid: uid-{name}
  creationTimestamp: "{}"
{extra_meta}
spec:
  nodeName: {node}
  containers: [{{name: a, resources: {{requests: {{cpu: 100m}}}}}}]
status:
  phase: Running
  conditions: [{{type: PodScheduled, status: "True", lastTransitionTime: "{}"}}]
"#,
            ts(created),
            ts(bound)
        )
    }

    fn event(
        name: &str,
        kind: &str,
        obj: &str,
        uid: &str,
        reason: &str,
        msg: &str,
        at: i64,
    ) -> String {
        let ns = if kind == "Pod" { "namespace: web" } else { "" };
        format!(
            r#"
apiVersion: v1
kind: Event
metadata: {{name: {name}, namespace: default, uid: ev-{name}}}
involvedObject: {{kind: {kind}, name: {obj}, uid: {uid}, {ns}}}
reason: {reason}
message: "{msg}"
type: Normal
source: {{component: karpenter}}
firstTimestamp: "{at}"
lastTimestamp: "{at}"
"#,
            at = ts(at)
        )
    }

    /// A pool `web` with a node launched for a pod, a failed launch, an ICE event, a
    /// disruption event and a few pods that must not count.
    fn cluster_docs() -> Vec<String> {
        let conds = [
            cond("Launched", "True", "Launched", -95),
            cond("Registered", "True", "Registered", -60),
            cond("Initialized", "True", "Initialized", -40),
        ]
        .concat();
        vec![
            pool("web"),
            node("n1", "web", -60, ""),
            claim("web-abc", "web", "n1", -100, &conds),
            // An old node without a claim.
            node("n0", "web", -5 * 3600, ""),
            // Waited for n1, created after the pod: 90s from creation to bound.
            pod("web-0", "n1", -120, -30, ""),
            // Bound to the old node after a FailedScheduling: 45s.
            pod("evt-0", "n0", -100, -55, ""),
            event(
                "fs",
                "Pod",
                "evt-0",
                "uid-evt-0",
                "FailedScheduling",
                "Failed to schedule pod, x",
                -90,
            ),
            // Created after the node and never waited: not counted.
            pod("pre-0", "n1", -50, -49, ""),
            // Bound three hours ago: before the window.
            pod("old-0", "n1", -3 * 3600 - 100, -3 * 3600, ""),
            // DaemonSet pods are never provisioned for.
            pod(
                "ds-0",
                "n1",
                -120,
                -30,
                "  ownerReferences: [{kind: DaemonSet, name: ds, uid: d1}]",
            ),
            // A failed launch and a launch error on a claim already deleted.
            claim(
                "web-bad",
                "web",
                "",
                -700,
                &cond("Launched", "Unknown", "LaunchFailed", -650),
            ),
            event(
                "ice",
                "NodeClaim",
                "web-gone",
                "uid-web-gone",
                "InsufficientCapacityError",
                "NodeClaim web-gone event: insufficient capacity",
                -300,
            ),
            event(
                "dis",
                "NodeClaim",
                "web-old",
                "uid-web-old",
                "DisruptionTerminating",
                "Disrupting NodeClaim: Drifted",
                -200,
            ),
        ]
    }

    fn load(docs: &[String]) -> Cluster {
        let mut c = Cluster::default();
        crate::source::load_str("test", &docs.join("\n---\n"), &mut c).unwrap();
        c
    }

    fn pass(sli: &Sli, c: &Cluster, at: i64) {
        let now = t(at);
        sli.update(&crate::analysis::run(c, now), c, now);
    }

    fn scrape(sli: &Sli) -> String {
        let mut r = Registry::default();
        sli.register(&mut r);
        crate::metrics::encode(&r).unwrap()
    }

    /// The value of the one line of `metric` with exactly these labels.
    fn value(text: &str, metric: &str, labels: &str) -> Option<f64> {
        let prefix = format!("{metric}{{{labels}}} ");
        text.lines()
            .find_map(|l| l.strip_prefix(&prefix))
            .map(|v| v.parse().unwrap())
    }

    fn counts(text: &str) -> Vec<&str> {
        let mut v: Vec<&str> = text
            .lines()
            .filter(|l| {
                l.starts_with("karpenter_helper_")
                    && !l.starts_with("karpenter_helper_unschedulable")
                    && !l.starts_with("karpenter_helper_drifted")
                    && !l.starts_with("karpenter_helper_disruption_blocked")
                    && !l.starts_with("karpenter_helper_nodepool_")
            })
            .collect();
        v.sort();
        v
    }

    #[test]
    fn every_occurrence_is_counted_once_across_passes_and_relists() {
        let sli = Sli::default();
        let c = load(&cluster_docs());
        pass(&sli, &c, 0);
        let first = scrape(&sli);
        let lat = defs::POD_PROVISIONING_LATENCY.name;
        assert_eq!(
            value(&first, &format!("{lat}_count"), "nodepool=\"web\""),
            Some(2.0),
            "{first}"
        );
        assert_eq!(
            value(&first, &format!("{lat}_sum"), "nodepool=\"web\""),
            Some(135.0)
        );
        let np = defs::NODE_PROVISIONING.name;
        let labels = "nodepool=\"web\",capacity_type=\"on-demand\"";
        assert_eq!(value(&first, &format!("{np}_count"), labels), Some(1.0));
        assert_eq!(value(&first, &format!("{np}_sum"), labels), Some(60.0));
        let lf = defs::LAUNCH_FAILURES.name;
        assert_eq!(
            value(&first, lf, "nodepool=\"web\",reason=\"LaunchFailed\""),
            Some(1.0),
            "{first}"
        );
        assert_eq!(
            value(
                &first,
                lf,
                "nodepool=\"web\",reason=\"InsufficientCapacityError\""
            ),
            Some(1.0)
        );
        let churn = defs::NODE_CHURN.name;
        for event in ["launched", "registered", "initialized"] {
            let l = format!("nodepool=\"web\",event=\"{event}\",reason=\"\"");
            assert_eq!(value(&first, churn, &l), Some(1.0), "{event}: {first}");
        }
        let l = "nodepool=\"web\",event=\"disrupted\",reason=\"drifted\"";
        assert_eq!(value(&first, churn, l), Some(1.0), "{first}");

        // The same model again, and a relist (a fresh model of the same objects), later.
        pass(&sli, &c, 60);
        pass(&sli, &load(&cluster_docs()), 120);
        assert_eq!(counts(&first), counts(&scrape(&sli)));
    }

    #[test]
    fn histograms_put_each_observation_in_its_bucket() {
        let sli = Sli::default();
        pass(&sli, &load(&cluster_docs()), 0);
        let text = scrape(&sli);
        let b = format!("{}_bucket", defs::POD_PROVISIONING_LATENCY.name);
        // 45s and 90s.
        assert_eq!(
            value(&text, &b, "le=\"30.0\",nodepool=\"web\""),
            Some(0.0),
            "{text}"
        );
        assert_eq!(value(&text, &b, "le=\"45.0\",nodepool=\"web\""), Some(1.0));
        assert_eq!(value(&text, &b, "le=\"90.0\",nodepool=\"web\""), Some(2.0));
        assert_eq!(value(&text, &b, "le=\"300.0\",nodepool=\"web\""), Some(2.0));
        let b = format!("{}_bucket", defs::NODE_PROVISIONING.name);
        let l = |le: &str| format!("le=\"{le}\",nodepool=\"web\",capacity_type=\"on-demand\"");
        assert_eq!(value(&text, &b, &l("45.0")), Some(0.0), "{text}");
        assert_eq!(value(&text, &b, &l("60.0")), Some(1.0));
    }

    #[test]
    fn deleted_claims_and_evictions_are_counted_once() {
        let sli = Sli::default();
        let mut docs = cluster_docs();
        // A node being drained, with a pod on it.
        docs.push(node(
            "n2",
            "web",
            -4000,
            "  taints: [{key: karpenter.sh/disrupted, effect: NoSchedule}]",
        ));
        docs.push(pod("victim", "n2", -4000, -3990, ""));
        pass(&sli, &load(&docs), 0);
        // Drained: the pod and the node are gone, Karpenter's event stays; web-abc is deleted.
        let mut later = cluster_docs();
        later.retain(|d| !d.contains("name: web-abc"));
        later.push(event(
            "ev",
            "Pod",
            "victim",
            "uid-victim",
            "Evicted",
            "Evicted pod: Drifted",
            5,
        ));
        let c = load(&later);
        pass(&sli, &c, 10);
        pass(&sli, &c, 20);
        pass(&sli, &load(&later), 30);
        let text = scrape(&sli);
        let churn = defs::NODE_CHURN.name;
        assert_eq!(
            value(
                &text,
                churn,
                "nodepool=\"web\",event=\"deleted\",reason=\"\""
            ),
            Some(1.0),
            "{text}"
        );
        let ev = defs::EVICTIONS.name;
        assert_eq!(
            value(&text, ev, "nodepool=\"web\",reason=\"drifted\""),
            Some(1.0),
            "{text}"
        );
        // Unknown pools stay unnamed rather than guessed.
        let sli = Sli::default();
        pass(&sli, &c, 10);
        assert_eq!(
            value(&scrape(&sli), ev, "nodepool=\"\",reason=\"drifted\""),
            Some(1.0)
        );
    }

    #[test]
    fn series_go_after_the_ttl_once_their_pool_is_gone() {
        let sli = Sli::new(std::time::Duration::from_secs(3600));
        pass(&sli, &load(&cluster_docs()), 0);
        let lat = format!("{}_count", defs::POD_PROVISIONING_LATENCY.name);
        assert!(value(&scrape(&sli), &lat, "nodepool=\"web\"").is_some());
        // Only the pool is left, for hours: its series stay (a counter must not vanish).
        let only_pool = load(&[pool("web")]);
        pass(&sli, &only_pool, 3 * 3600);
        // Only the two deletions just seen are remembered: the rest left the window.
        assert_eq!(sli.remembered(), 2);
        pass(&sli, &only_pool, 5 * 3600);
        assert!(value(&scrape(&sli), &lat, "nodepool=\"web\"").is_some());
        assert_eq!(
            sli.remembered(),
            0,
            "occurrences older than the window are forgotten"
        );
        // The pool goes too: the series stay for the TTL, then go.
        let empty = Cluster::default();
        pass(&sli, &empty, 5 * 3600 + 300);
        pass(&sli, &empty, 5 * 3600 + 3000);
        assert!(value(&scrape(&sli), &lat, "nodepool=\"web\"").is_some());
        pass(&sli, &empty, 5 * 3600 + 3700);
        let text = scrape(&sli);
        assert!(!text.contains("nodepool=\"web\""), "{text}");
    }

    #[test]
    fn what_happened_before_the_window_is_not_counted_at_start() {
        let sli = Sli::default();
        // kelp starts two hours after everything happened.
        pass(&sli, &load(&cluster_docs()), 2 * 3600);
        let text = scrape(&sli);
        assert!(counts(&text).is_empty(), "{text}");
        assert_eq!(sli.remembered(), 0);
    }

    #[test]
    fn the_picture_of_now_shows_only_the_latest_pass() {
        let sli = Sli::default();
        let mut docs = cluster_docs();
        docs.push(pool("empty"));
        pass(&sli, &load(&docs), 0);
        let text = scrape(&sli);
        let nodes = defs::NODEPOOL_NODES.name;
        // Its two nodes, not the status' 1 that lags behind.
        assert_eq!(value(&text, nodes, "nodepool=\"web\""), Some(2.0), "{text}");
        // No NodeClaims or nodes known: the status says.
        assert_eq!(value(&text, nodes, "nodepool=\"empty\""), Some(1.0));
        let ratio = defs::NODEPOOL_USAGE_RATIO.name;
        assert_eq!(
            value(&text, ratio, "nodepool=\"web\",resource=\"cpu\""),
            Some(0.4)
        );
        assert_eq!(
            value(&text, ratio, "nodepool=\"web\",resource=\"nodes\""),
            Some(0.25)
        );
        let cost = defs::NODEPOOL_COST.name;
        assert_eq!(
            value(&text, cost, "nodepool=\"web\",capacity_type=\"on-demand\""),
            Some(0.5)
        );
        assert_eq!(
            value(&text, defs::DRIFTED_NODES.name, "nodepool=\"web\""),
            Some(0.0)
        );
        // The pool "empty" is deleted: its series go with the next pass.
        pass(&sli, &load(&cluster_docs()), 10);
        let text = scrape(&sli);
        assert!(!text.contains("nodepool=\"empty\""), "{text}");
        assert!(text.contains(&format!("# TYPE {nodes} gauge")));
    }

    #[test]
    fn free_text_never_makes_unbounded_labels() {
        assert_eq!(disruption_reason(" Drifted/Replace"), "drifted");
        assert_eq!(disruption_reason(""), "other");
        assert_eq!(label_value("a b"), "other");
        assert_eq!(label_value(&"x".repeat(65)), "other");
        assert_eq!(
            label_value("InsufficientCapacityError"),
            "InsufficientCapacityError"
        );
    }
}
