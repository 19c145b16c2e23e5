//! Why one pending pod waits: each NodePool's verdict for it, computed the way Karpenter
//! decides (readiness, limits, taints, requirements, then instance types, in Karpenter's
//! pool order) and then cross-checked with Karpenter's event ([`super::evidence`]). Replicas
//! share their verdicts through [`DiagnosisCache`]. Also the `pod-unschedulable` finding.

use std::collections::BTreeMap;
use std::sync::Arc;

use chrono::{DateTime, Duration, Utc};
use serde::Serialize;

use super::super::Context;
use super::affinity::{reads_pending, ZoneAffinity};
use super::evidence::{cross_check, EventEvidence};
use super::instance_types::{container_host_ports, Reject, TypeVerdict};
use super::kept::{parse_event, KeptVerdicts, ParsedEvent, SharedVerdicts};
use super::summary::verdict_summary;
use super::topology::{SpreadVerdict, ZoneSpread};
use super::verdict::{reason, PoolVerdict, Reason, Verdict, VerdictSource};
use super::{no_instance_type_left, pod_requests, pod_terms, PodEvents, PoolInfo, PoolSet, GRACE};
use crate::findings::{Code, Finding, ObjectRef, Severity};
use crate::karpenter::events::Category;
use crate::karpenter::requirements::{self, Requirements};
use crate::karpenter::resources::{format_quantity, Resources};
use crate::karpenter::taints;
use crate::model::shared::FastMap;
use crate::model::*;

/// Everything kelp knows about why a pod is pending.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PodDiagnosis {
    #[serde(skip)]
    pub pod: ObjectRef,
    #[serde(skip)]
    pub since: Option<DateTime<Utc>>,
    /// How long it has waited, in words, at the instant it was diagnosed or last re-timed
    /// ([`PodDiagnosis::at`]); [`PodDiagnosis::pending`] reads the wait at any instant.
    pub pending_for: String,
    /// The instants over which `pending_for` holds (the second exclusive), where that
    /// is more than an instant.
    #[serde(skip)]
    words_hold: Option<(DateTime<Utc>, DateTime<Utc>)>,
    pub requests: Arc<BTreeMap<String, String>>,
    /// Each pool's verdict; equal verdicts (a pool that is not ready, or at its limits,
    /// rejects every pod alike) are one shared copy.
    pub nodepools: Arc<Vec<Arc<PoolVerdict>>>,
    pub event: Option<EventEvidence>,
    /// The kube-scheduler's own last word, when it left one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scheduler: Option<Arc<str>>,
    /// What holds it, in one line ([`PodDiagnosis::verdict_summary`]).
    #[serde(skip)]
    summary: Arc<str>,
}

impl PodDiagnosis {
    pub fn compatible(&self) -> impl Iterator<Item = &PoolVerdict> {
        self.nodepools
            .iter()
            .map(|v| &**v)
            .filter(|v| v.verdict == Verdict::Compatible)
    }
    /// One line: what holds the pod.
    pub fn summary(&self) -> String {
        format!("Pending {}: {}", self.pending_for, self.verdict_summary())
    }

    /// What holds the pod, without how long: the same for every replica that shares
    /// its verdicts and event ([`verdict_summary`]), worked out once with them.
    pub fn verdict_summary(&self) -> &str {
        &self.summary
    }

    /// How long the pod has waited at `now` (zero when kelp cannot tell since when).
    pub fn pending(&self, now: DateTime<Utc>) -> Duration {
        pending_at(self.since, now)
    }

    /// The same diagnosis at another instant: only how long the pod has waited, in words,
    /// reads the clock. The one given while those words stay the same (a pod pending for
    /// days reads the same for an hour), so a pass that only moved the clock makes no copy.
    pub fn at(self: &Arc<Self>, now: DateTime<Utc>) -> Arc<Self> {
        if self
            .words_hold
            .is_some_and(|(from, to)| from <= now && now < to)
        {
            return self.clone();
        }
        let (pending_for, words_hold) = wait_in_words(self.since, now);
        if pending_for == self.pending_for {
            return self.clone();
        }
        Arc::new(PodDiagnosis {
            pending_for,
            words_hold,
            ..(**self).clone()
        })
    }
}

/// kelp's own checks of one pool for one pod, in Karpenter's order; the first failing
/// check gives the reasons. A pool that passes them all is compatible only where kelp
/// judged every constraint Karpenter places the pod by ([`super::topology::unjudged`],
/// [`ZoneAffinity::unjudged`]), and "unknown" where it did not.
pub fn evaluate(
    pool: &PoolInfo,
    pod: &PodSpec,
    requests: &Resources,
    pod_terms: &Result<Vec<Requirements>, String>,
    spread: &[ZoneSpread],
    affinity: &ZoneAffinity,
) -> PoolVerdict {
    let mut v = checks(pool, pod, requests, pod_terms, spread, affinity);
    if v.verdict == Verdict::Compatible {
        let unjudged = super::topology::unjudged(pod).or_else(|| affinity.unjudged.clone());
        if let Some(why) = unjudged {
            v.verdict = Verdict::Unknown;
            v.reasons = vec![reason(Category::Topology, why)];
            v.launch = None;
        }
    }
    v
}

fn checks(
    pool: &PoolInfo,
    pod: &PodSpec,
    requests: &Resources,
    pod_terms: &Result<Vec<Requirements>, String>,
    spread: &[ZoneSpread],
    affinity: &ZoneAffinity,
) -> PoolVerdict {
    let verdict = |verdict, reasons| PoolVerdict {
        name: pool.name.to_string(),
        verdict,
        reasons,
        source: VerdictSource::Kelp,
        event_agrees: None,
        launch: None,
    };
    // 1. readiness
    if let Some(nr) = &pool.not_ready {
        let msg = match nr.category {
            Category::Other => nr.message.clone().unwrap_or_default(),
            _ => format!("NodePool is not ready: {}", nr.describe()),
        };
        return verdict(Verdict::Rejected, vec![reason(nr.category, msg)]);
    }
    // The catalogue's types the pool admits at all (else Karpenter drops the pool); without
    // a catalogue, Karpenter's NoCompatibleInstanceTypes event says so (with one, the
    // event is only evidence: the pool may have been fixed since).
    let types = pool.types.as_ref();
    if let (None, Some(msg)) = (types, &pool.no_instance_types) {
        return verdict(
            Verdict::Rejected,
            vec![reason(Category::InstanceTypes, msg.clone())],
        );
    }
    // The pool's own rejection by its types, at its step: before limits when its
    // requirements admit none, at the limits when none is left under them.
    let pool_reject = |at_limits: bool| match types.and_then(|t| t.pool_reject.as_ref()) {
        Some(Reject::No { message, limits }) if *limits == at_limits => {
            let category = if at_limits {
                Category::Limits
            } else {
                Category::InstanceTypes
            };
            Some(verdict(
                Verdict::Rejected,
                vec![reason(category, message.clone())],
            ))
        }
        _ => None,
    };
    if let Some(v) = pool_reject(false) {
        return v;
    }
    // A pool whose types the catalogue cannot settle is still judged on the rest (a taint
    // rejects it whatever its types); the types' own step below says unknown.
    // 2. limits
    match &pool.limits {
        Err(e) => {
            return verdict(
                Verdict::Unknown,
                vec![reason(Category::Limits, format!("cannot read limits: {e}"))],
            )
        }
        Ok(limits) => {
            // Karpenter drops every instance type bigger than what is left of a limit and
            // rejects the pool only when none is left, whatever the pod asks for (a pod
            // too big for what is left fails later, on instance types).
            let out: Vec<Reason> = limits
                .0
                .iter()
                // With a catalogue, what is left of a resource limit is judged against the
                // pool's real types (below); the floors are for when kelp has none.
                .filter(|(res, _)| types.is_none() || res.as_str() == "nodes")
                .filter_map(|(res, &limit)| {
                    let used = if res == "nodes" { pool.node_count.max(pool.usage.get("nodes")) } else { pool.usage.get(res) };
                    no_instance_type_left(res, limit - used).then(|| {
                        let msg = if res == "nodes" {
                            format!("node limits have been exhausted ({used} of {limit} nodes)")
                        } else {
                            format!(
                                "all available instance types exceed limits: {res} {} of {} in use, {} left is less than any instance type",
                                format_quantity(res, used),
                                format_quantity(res, limit),
                                format_quantity(res, (limit - used).max(0.0))
                            )
                        };
                        reason(Category::Limits, msg)
                    })
                })
                .collect();
            if !out.is_empty() {
                return verdict(Verdict::Rejected, out);
            }
            if let Some(v) = pool_reject(true) {
                return v;
            }
        }
    }
    // 3. taints (startupTaints are not the pod's concern)
    let untolerated = taints::untolerated(&pod.tolerations, &pool.pool.spec.template.spec.taints);
    if !untolerated.is_empty() {
        let reasons = untolerated
            .into_iter()
            .map(|t| {
                reason(
                    Category::Taints,
                    format!("did not tolerate taint {}", taints::render(t)),
                )
            })
            .collect();
        return verdict(Verdict::Rejected, reasons);
    }
    // 4. requirements: the pod fits if any of its node-affinity terms is compatible
    let pool_reqs = match &pool.requirements {
        Ok(r) => r,
        Err(e) => {
            return verdict(
                Verdict::Unknown,
                vec![reason(
                    Category::Requirements,
                    format!("cannot interpret the NodePool's requirements: {e}"),
                )],
            )
        }
    };
    let terms = match pod_terms {
        Ok(t) => t,
        Err(e) => {
            return verdict(
                Verdict::Rejected,
                vec![reason(Category::Validation, e.clone())],
            )
        }
    };
    // Karpenter relaxes a failing required term away and tries the next (v1.14.1
    // `removeRequiredNodeAffinityTerm`), and reports its last attempt: a pool takes the pod
    // if any term passes, is unknown if none does but one might, and otherwise is rejected
    // for the last term's reason, whichever check refused it.
    let mut last_rejected: Option<PoolVerdict> = None;
    let mut unknown: Option<PoolVerdict> = None;
    let mut failed = |v: PoolVerdict| match v.verdict {
        Verdict::Unknown => {
            unknown.get_or_insert(v);
        }
        _ => last_rejected = Some(v),
    };
    'terms: for term in terms {
        if let Err(incompatibilities) = requirements::compatible(term, pool_reqs) {
            let reasons = incompatibilities
                .into_iter()
                .map(|i| {
                    reason(
                        Category::Requirements,
                        format!("incompatible requirements, {i}"),
                    )
                })
                .collect();
            failed(verdict(Verdict::Rejected, reasons));
            continue;
        }
        // 5. topology: a zone the pool allows that the pod's spread admits, and that its
        // zone affinity and the running pods' anti-affinity leave.
        let zonal = affinity.judge(pool_reqs, term, !spread.is_empty());
        for judged in spread
            .iter()
            .map(|s| s.judge(pool_reqs, term))
            .chain(std::iter::once(zonal))
        {
            match judged {
                SpreadVerdict::Fits => {}
                SpreadVerdict::Rejected(m) => {
                    failed(verdict(
                        Verdict::Rejected,
                        vec![reason(Category::Topology, m)],
                    ));
                    continue 'terms;
                }
                SpreadVerdict::Unknown(m) => {
                    failed(verdict(
                        Verdict::Unknown,
                        vec![reason(Category::Topology, m)],
                    ));
                    continue 'terms;
                }
            }
        }
        // 6. instance types: from the catalogue, as Karpenter filters them.
        if let Some(types) = types {
            let mut reqs = pool_reqs.intersect(term);
            // Narrowed to the zones the pod's zone affinity leaves, as Karpenter narrows
            // the NodeClaim before it picks types.
            if let Some(zones) = affinity.zones_left(pool_reqs, term) {
                let zone = crate::karpenter::requirements::Requirement {
                    key: crate::karpenter::labels::ZONE.to_string(),
                    operator: "In".into(),
                    values: zones,
                    min_values: None,
                };
                if let Ok(z) = Requirements::from_requirements(&[zone]) {
                    reqs = reqs.intersect(&z);
                }
            }
            match types.judge(&reqs, requests, &container_host_ports(pod)) {
                TypeVerdict::Compatible(launch) => {
                    return PoolVerdict {
                        launch: Some(launch),
                        ..verdict(Verdict::Compatible, Vec::new())
                    }
                }
                TypeVerdict::Rejected(m) => failed(verdict(
                    Verdict::Rejected,
                    vec![reason(Category::InstanceTypes, m)],
                )),
                TypeVerdict::Unknown(m) => failed(verdict(
                    Verdict::Unknown,
                    vec![reason(Category::InstanceTypes, m)],
                )),
            }
            continue;
        }
        // Without one: every type big enough for the pod is beyond what is left
        // of a limit, so none both fits and stays under it.
        let over: Vec<Reason> = pool
            .limits
            .iter()
            .flat_map(|l| l.0.iter())
            .filter(|(res, _)| res.as_str() != "nodes")
            .filter_map(|(res, &limit)| {
                let left = limit - pool.usage.get(res);
                (requests.get(res) > left).then(|| {
                    reason(
                        Category::InstanceTypes,
                        format!(
                            "no instance type within the pool's remaining limits fits the pod: {res} {} left, the pod requests {}",
                            format_quantity(res, left.max(0.0)),
                            format_quantity(res, requests.get(res))
                        ),
                    )
                })
            })
            .collect();
        if over.is_empty() {
            return verdict(Verdict::Compatible, Vec::new());
        }
        failed(verdict(Verdict::Rejected, over));
    }
    unknown
        .or(last_rejected)
        .unwrap_or_else(|| verdict(Verdict::Rejected, Vec::new()))
}

/// Verdicts already computed in this pass. The verdicts are a function of the pod's
/// scheduling spec, its affinity and Karpenter's event message alone, and the model shares
/// one spec and one affinity among all pods that ask the same (the replicas of a
/// controller, and alike workloads): so they are computed, parsed and held once per
/// distinct (spec, affinity, message).
#[derive(Default)]
pub struct DiagnosisCache<'c> {
    /// By the addresses of the shared spec, affinity and parsed event message.
    verdicts: FastMap<(usize, usize, usize, (usize, usize)), SharedVerdicts>,
    /// The kube-scheduler's messages, one copy each (replicas get the same one).
    messages: FastMap<&'c str, Arc<str>>,
    /// One copy of each distinct pool verdict.
    pool_verdicts: std::collections::HashSet<Arc<PoolVerdict>, foldhash::fast::RandomState>,
    /// Karpenter's messages, parsed.
    parses: FastMap<&'c str, ParsedEvent>,
    /// What an earlier pass computed, where the caller keeps it.
    kept: Option<KeptVerdicts>,
}

impl DiagnosisCache<'_> {
    /// A cache that also reuses, and adds to, what earlier passes computed.
    pub fn with_kept(kept: KeptVerdicts) -> Self {
        DiagnosisCache {
            kept: Some(kept),
            ..Default::default()
        }
    }

    /// What this pass leaves for the next.
    pub fn into_kept(self) -> Option<KeptVerdicts> {
        self.kept
    }
}

/// Diagnose one pending pod against every pool.
pub fn diagnose(c: &Cluster, pools: &PoolSet, pod: &Pod, now: DateTime<Utc>) -> PodDiagnosis {
    diagnose_cached(
        pools,
        pod,
        PodEvents::of(c, pod),
        now,
        &mut DiagnosisCache::default(),
    )
}

/// [`diagnose`], sharing work with earlier pods of the same controller.
pub fn diagnose_cached<'c>(
    pools: &PoolSet,
    pod: &'c Pod,
    events: PodEvents<'c>,
    now: DateTime<Utc>,
    cache: &mut DiagnosisCache<'c>,
) -> PodDiagnosis {
    let since = condition(&pod.status.conditions, "PodScheduled")
        .and_then(|c| c.last_transition_time)
        .or(pod.metadata.creation_timestamp);
    let event = events.failed;
    let (pending_for, words_hold) = wait_in_words(since, now);
    let DiagnosisCache {
        verdicts: cached,
        messages,
        pool_verdicts,
        parses,
        kept,
    } = cache;
    // Each distinct message is parsed once, whichever pods it is about; its one shared
    // copy then stands for it (by address) in the verdicts' key.
    // Kept from earlier passes where the caller keeps verdicts.
    let parsed = event.map(|e| {
        parses
            .entry(e.message.as_str())
            .or_insert_with(|| match kept.as_mut() {
                Some(k) => k.parsed(&e.message),
                None => parse_event(&e.message),
            })
            .clone()
    });
    let mut compute = |terms: Result<Vec<Requirements>, String>,
                       spread: &[ZoneSpread],
                       affinity: &ZoneAffinity| {
        let requests = pod_requests(&pod.spec);
        let mut verdicts: Vec<PoolVerdict> = pools
            .ordered
            .iter()
            .map(|p| evaluate(p, &pod.spec, &requests, &terms, spread, affinity))
            .collect();
        if let Some((_, segments, _)) = &parsed {
            cross_check(&mut verdicts, segments, pools.catalog.is_some());
        }
        let verdicts: Vec<Arc<PoolVerdict>> = verdicts
            .into_iter()
            .map(|v| match pool_verdicts.get(&v) {
                Some(known) => known.clone(),
                None => {
                    let v = Arc::new(v);
                    pool_verdicts.insert(v.clone());
                    v
                }
            })
            .collect();
        let shown = requests
            .0
            .iter()
            .map(|(k, v)| (k.clone(), format_quantity(k, *v)))
            .collect();
        let summary = verdict_summary(&verdicts, parsed.as_ref().map(|(_, _, m)| &**m));
        (Arc::new(shown), Arc::new(verdicts), Arc::from(summary))
    };
    // Addresses only name the spec and affinity while the model is borrowed, as it is for 'c.
    let spec: &SchedulingSpec = &pod.spec.scheduling;
    let affinity = pod
        .spec
        .affinity
        .as_deref()
        .map(|a| a as *const Affinity as usize);
    let message = parsed
        .as_ref()
        .map(|(_, _, m)| Arc::as_ptr(m) as *const u8 as usize);
    // A zone spread counts the pod's peers: in its namespace, by its labels. So do its
    // own zone affinity terms (whether it selects itself), and the running and pending
    // pods' anti-affinity, by its namespace and labels, wherever such a pod has some.
    let zone_affinity = reads_pending(pools, &pod.spec) || !pools.guards().is_empty();
    let peers = if zone_affinity || spreads_over_zones(pod) {
        let ns = pod
            .metadata
            .namespace
            .as_deref()
            .map_or(0, |n| n.as_ptr() as usize);
        // Its own labels count only through matchLabelKeys, and for zone affinity.
        let own = zone_affinity
            || pod
                .spec
                .topology_spread_constraints
                .iter()
                .any(|t| t.match_label_keys.as_ref().is_some_and(|k| !k.is_empty()));
        let labels: &std::collections::BTreeMap<String, String> = &pod.metadata.labels;
        (ns, if own { labels as *const _ as usize } else { 0 })
    } else {
        (0, 0)
    };
    let key = (
        spec as *const SchedulingSpec as usize,
        affinity.unwrap_or_default(),
        message.unwrap_or_default(),
        peers,
    );
    let (requests, nodepools, summary) = match cached.get(&key) {
        Some(v) => v.clone(),
        None => {
            let v = match kept.as_mut() {
                None => {
                    let terms = pod_terms(&pod.spec, pools.provider);
                    let spread = ZoneSpread::of(pools, pod);
                    compute(terms, &spread, &ZoneAffinity::of(pools, pod))
                }
                Some(kept) => {
                    let kept_key = (
                        key.0,
                        key.1,
                        parsed.as_ref().map(|(_, _, m)| m.clone()),
                        key.3,
                    );
                    kept.verdicts(kept_key, pod, pools, &mut compute)
                }
            };
            cached.insert(key, v.clone());
            v
        }
    };
    let event = event
        .zip(parsed)
        .map(|(e, (format, segments, message))| EventEvidence {
            reason: e.reason.clone(),
            source: e.source.clone(),
            message,
            last_seen: e.seen(),
            format,
            segments,
        });
    let scheduler = events.scheduler.map(|e| {
        messages
            .entry(e.message.as_str())
            .or_insert_with(|| Arc::from(e.message.as_str()))
            .clone()
    });
    PodDiagnosis {
        pod: ObjectRef::of(ObjectKind::Pod, &pod.metadata),
        since,
        pending_for,
        words_hold,
        requests,
        nodepools,
        event,
        scheduler,
        summary,
    }
}

/// Whether a pod's verdicts read how its peers spread over the zones (a `DoNotSchedule`
/// constraint on the zone): then they read the bound pods of its namespace.
pub fn spreads_over_zones(pod: &Pod) -> bool {
    pod.spec.topology_spread_constraints.iter().any(|t| {
        t.when_unsatisfiable == "DoNotSchedule" && t.topology_key == crate::karpenter::labels::ZONE
    })
}

/// How long a pod pending since `since` has waited at `now`, in words, and the instants
/// over which those words hold.
fn wait_in_words(
    since: Option<DateTime<Utc>>,
    now: DateTime<Utc>,
) -> (String, Option<(DateTime<Utc>, DateTime<Utc>)>) {
    use crate::karpenter::duration::{human, human_span};
    let pending = pending_at(since, now);
    let hold = since
        .zip(human_span(pending))
        .and_then(|(s, (from, to))| Some((s.checked_add_signed(from)?, s.checked_add_signed(to)?)));
    (human(pending), hold)
}

/// How long a pod pending since `since` has waited at `now`.
fn pending_at(since: Option<DateTime<Utc>>, now: DateTime<Utc>) -> Duration {
    since.map(|s| now - s).unwrap_or_else(Duration::zero)
}

/// How long a pod kelp finds a pool for may wait for Karpenter's first answer (its
/// nomination or its FailedScheduling event) before kelp reports it: Karpenter's batch
/// window is 1 s idle, 10 s at most; this leaves room for a busy controller.
pub const EVENT_GRACE_SECONDS: i64 = 20;

/// `pod-unschedulable`, one per pending pod Karpenter has had its turn with. Its words
/// are the diagnosis's and its severity the clock's: a kept diagnosis hands on the last
/// pass's finding while its severity stands ([`crate::analysis::KeptFindings`]).
pub(super) fn unschedulable(ctx: &Context) -> Vec<Arc<Finding>> {
    ctx.pass
        .pending
        .iter()
        // Karpenter batches pending pods (up to 10 s) before it nominates or writes its
        // event: a pod kelp finds a pool for and Karpenter has not answered yet is only
        // waiting its turn for the first moments.
        .filter(|d| {
            d.event.is_some()
                || d.compatible().next().is_none()
                || d.pending(ctx.pass.now) >= Duration::seconds(EVENT_GRACE_SECONDS)
        })
        .map(|d| {
            let sev = if d.pending(ctx.pass.now) > Duration::minutes(GRACE) {
                Severity::Critical
            } else {
                Severity::Warning
            };
            if let Some(kept) = ctx
                .kept
                .and_then(|k| k.get(Code::PodUnschedulable, d))
                .filter(|f| f.severity == sev)
            {
                return kept.clone();
            }
            // Sized once: the summary can carry Karpenter's whole event message.
            let summary = d.verdict_summary();
            let mut message =
                String::with_capacity("Pending : ".len() + d.pending_for.len() + summary.len());
            message.push_str("Pending ");
            message.push_str(&d.pending_for);
            message.push_str(": ");
            message.push_str(summary);
            Arc::new(
                Finding::new(Code::PodUnschedulable, sev, d.pod.clone(), message)
                    .since(d.since)
                    .shared_details(d.clone()),
            )
        })
        .collect()
}
