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

mod gauges;
mod occurrences;

pub use gauges::{gauges, GaugeFamily};
use occurrences::*;
pub use occurrences::{churn, launch_failures, node_provisioning, pod_latencies};

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, RwLock};

use super::common::{claims_token, PickedEvents};
use super::defs::{self};
use crate::analysis::Pass;
use crate::model::shared::FastMap;
use crate::model::*;
use chrono::{DateTime, Duration, Utc};
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeLabelSet, EncodeMetric};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Registry;

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
    /// When it happened (for an event, when it was last seen: a recurrence is a change of
    /// the events, so a kept scan reads it again): its [`RECENT_SECONDS`] window counts
    /// from there. None for one with no time of its own, seen as of each pass's instant.
    pub seen: Option<DateTime<Utc>>,
    /// For histograms: the observed value, in seconds.
    pub value: f64,
}

impl Occurrence {
    /// Until when it can still be seen, if it can be at `now`.
    pub fn until(&self, now: DateTime<Utc>) -> Option<DateTime<Utc>> {
        recent_seen(self.seen, now)
    }
}

type Snapshot = Arc<RwLock<Option<Arc<Vec<GaugeFamily>>>>>;

#[derive(Debug, Default)]
struct SliState {
    /// Occurrences counted, until when they could still be seen.
    counted: FastMap<String, DateTime<Utc>>,
    /// Every series created, and when it was last alive (its pool existed, or one of its
    /// occurrences was seen).
    series: FastMap<SliSeries, DateTime<Utc>>,
    /// NodeClaims of the last pass (id -> pool), to tell which were deleted.
    claims: FastMap<String, String>,
    /// Pods seen on nodes being drained (pod id -> pool, when), to name the pool of an
    /// eviction whose pod is already gone.
    draining: FastMap<String, (String, DateTime<Utc>)>,
    /// The nodes being drained, with their pools, and the model and nodes-and-claims stamp
    /// they were found at.
    draining_nodes: Option<([u64; 2], Vec<(String, String)>)>,
    /// Karpenter's events about pods it evicted or disrupted, picked out of all events.
    evictions: PickedEvents,
    /// Per node, when its newest pod was bound and when its pods were last read for
    /// latencies ([`LatencyScans`]).
    latencies: LatencyScans,
    /// The scans of the NodeClaims and Karpenter's events about them, kept while nothing
    /// they read changed.
    node_provisioning: Kept,
    launch_failures: Kept,
    churn: Kept,
    /// The stamps the claims were last compared at for [`deletions`]: none can have gone
    /// while they are the same.
    deletions_at: Option<[u64; 4]>,
    /// The pools' costs ([`gauges::pool_costs`]), with the model (its epoch) and the
    /// stamp of its nodes and anything global (the metrics' prices) they were summed at.
    costs: Option<((u64, u64), Arc<BTreeMap<(String, String), f64>>)>,
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
        let stamps = c.stamps();
        let latencies = pod_latencies_with(c, now, &mut st.latencies);
        for s in latencies.still_seen {
            st.series.insert(s, now);
        }
        let mut found = latencies.found;
        let claims_at = claims_token(stamps, false);
        if st.deletions_at != Some(claims_at) {
            found.extend(deletions(&mut st, c));
            st.deletions_at = Some(claims_at);
        }
        found.extend(evictions(&mut st, c, now));
        let with_events = claims_token(stamps, true);
        let SliState {
            counted,
            series,
            node_provisioning: kept_provisioning,
            launch_failures: kept_failures,
            churn: kept_churn,
            ..
        } = &mut *st;
        let kept = [
            kept_provisioning.current(claims_at, now, || node_provisioning(c, now)),
            kept_failures.current(with_events, now, || launch_failures(c, now)),
            kept_churn.current(with_events, now, || churn(c, now)),
        ];
        for o in found.iter().chain(kept.into_iter().flatten()) {
            let Some(until) = o.until(now) else {
                continue;
            };
            match series.get_mut(&o.series) {
                Some(alive) => *alive = now,
                None => {
                    series.insert(o.series.clone(), now);
                }
            }
            if let Some(u) = counted.get_mut(&o.key) {
                *u = (*u).max(until);
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
            counted.insert(o.key.clone(), until);
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
        let at = (c.stamps().epoch(), c.stamps().zones());
        let costs = match &st.costs {
            Some((kept_at, costs)) if *kept_at == at => costs.clone(),
            _ => {
                let costs = Arc::new(gauges::pool_costs(c));
                st.costs = Some((at, costs.clone()));
                costs
            }
        };
        drop(st);
        let families = Arc::new(gauges(pass, c, &costs));
        if let Ok(mut g) = self.now.write() {
            *g = Some(families);
        }
    }
}

#[cfg(test)]
mod tests;
