//! Provisioning: why pending pods wait. kelp computes each NodePool's verdict for a pod
//! the way Karpenter decides (readiness, limits, taints, requirements, in Karpenter's pool
//! order), then reads Karpenter's FailedScheduling event beside it as evidence: since
//! v1.5 that text no longer names the pools, so the verdict cannot come from it alone.
//! Also: nominations that never bound, NodePool readiness and limits, NodeClaims stuck
//! launching, registering or initialising, NotReady nodes, and DaemonSet pods with no room.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use chrono::{DateTime, Duration, Utc};
use serde::Serialize;

use super::{ago, Context};
use crate::findings::{rfc3339, Code, Finding, ObjectRef, Severity};
use crate::karpenter::events::{self, Category, MessageFormat, NominationTarget, Segment};
use crate::karpenter::requirements::{self, Provider, Requirements};
use crate::karpenter::resources::{self, format_quantity, Resources};
use crate::karpenter::taints;
use crate::model::*;

/// How long a pod may wait before kelp calls it critical; also the nomination deadline.
pub const GRACE: i64 = 5;

// ------------------------------------------------------------------ pools, once per pass

/// A NodePool with what every pod evaluation needs, computed once.
pub struct PoolInfo<'a> {
    pub pool: &'a NodePool,
    pub name: &'a str,
    pub requirements: Result<Requirements, String>,
    pub usage: Resources,
    pub limits: Result<Resources, String>,
    /// NodeClaims (or nodes) the pool has: what the `nodes` limit counts.
    pub node_count: f64,
    /// Why Karpenter skips this pool entirely, if it does.
    pub not_ready: Option<NotReady>,
    /// A recent NoCompatibleInstanceTypes event: Karpenter drops the pool before scheduling.
    pub no_instance_types: Option<String>,
}

/// Why a NodePool takes no pods.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NotReady {
    pub condition: String,
    pub status: String,
    pub reason: Option<String>,
    pub message: Option<String>,
    #[serde(skip)]
    pub category: Category,
}

impl NotReady {
    fn describe(&self) -> String {
        let mut s = format!("{}={}", self.condition, self.status);
        if let Some(r) = &self.reason {
            s.push_str(&format!(" ({r}"));
            if let Some(m) = self.message.as_ref().filter(|m| !m.is_empty()) {
                s.push_str(&format!(": {m}"));
            }
            s.push(')');
        }
        s
    }
}

/// The pool's readiness the way Karpenter filters pools before scheduling.
pub fn pool_not_ready(pool: &NodePool) -> Option<NotReady> {
    let nr = |condition: &str,
              status: &str,
              reason: Option<String>,
              message: Option<String>,
              category| NotReady {
        condition: condition.into(),
        status: status.into(),
        reason,
        message,
        category,
    };
    if pool.metadata.deletion_timestamp.is_some() {
        return Some(nr(
            "Deleting",
            "True",
            None,
            Some("the NodePool is being deleted".into()),
            Category::NodepoolNotReady,
        ));
    }
    if pool.spec.replicas.is_some() {
        let msg = "static NodePool (spec.replicas is set): Karpenter does not provision it for pending pods";
        return Some(nr(
            "Static",
            "True",
            None,
            Some(msg.into()),
            Category::Other,
        ));
    }
    let conds = &pool.status.conditions;
    match condition(conds, "Ready") {
        Some(c) if c.is_true() => None,
        ready => {
            // Name the dependent that is failing, which says more than Ready does. Ready
            // depends only on these two (NodeRegistrationHealthy is informational).
            let failing = conds.iter().find(|c| {
                matches!(c.type_.as_str(), "ValidationSucceeded" | "NodeClassReady")
                    && !c.is_true()
                    && !c.status.is_empty()
            });
            Some(match (failing, ready) {
                (Some(c), _) => nr(
                    &c.type_,
                    &c.status,
                    c.reason.clone(),
                    c.message.clone(),
                    Category::NodepoolNotReady,
                ),
                (None, Some(c)) => nr(
                    "Ready",
                    &c.status,
                    c.reason.clone(),
                    c.message.clone(),
                    Category::NodepoolNotReady,
                ),
                (None, None) => nr(
                    "Ready",
                    "Unknown",
                    Some("NoStatus".into()),
                    Some("the NodePool has no Ready condition yet".into()),
                    Category::NodepoolNotReady,
                ),
            })
        }
    }
}

/// Every NodePool, in the order Karpenter tries them: weight descending, then name descending.
pub struct PoolSet<'a> {
    pub ordered: Vec<PoolInfo<'a>>,
    /// The cloud provider behind the pools, which widens well-known labels and validation.
    pub provider: Provider,
}

impl<'a> PoolSet<'a> {
    pub fn new(c: &'a Cluster) -> Self {
        Self::with_usage(c, &pool_usages(c))
    }

    /// The pools with the usage a pass computed already ([`pool_usages`]).
    pub fn with_usage(c: &'a Cluster, usages: &BTreeMap<String, PoolUsage>) -> Self {
        let mut ordered: Vec<PoolInfo<'a>> = c
            .nodepools
            .values()
            .map(|p| {
                let usage = usages
                    .get(&p.metadata.name)
                    .cloned()
                    .unwrap_or_else(|| PoolUsage::of(c, p));
                pool_info(p, usage)
            })
            .collect();
        ordered.sort_by(|a, b| {
            let w = |p: &PoolInfo| p.pool.spec.weight.unwrap_or(0);
            w(b).cmp(&w(a)).then_with(|| b.name.cmp(a.name))
        });
        PoolSet {
            ordered,
            provider: cluster_provider(c),
        }
    }

    /// Mark pools whose requirements Karpenter reported (in the last hour) to match no
    /// instance type: it drops them before scheduling, and no later event names them.
    pub fn with_instance_type_events(mut self, c: &Cluster, now: DateTime<Utc>) -> Self {
        for p in &mut self.ordered {
            let m = &p.pool.metadata;
            p.no_instance_types = c
                .events_for("NodePool", None, &m.name, &m.uid)
                .into_iter()
                .find(|e| {
                    e.from_karpenter()
                        && e.reason == "NoCompatibleInstanceTypes"
                        && e.seen().is_some_and(|t| now - t <= Duration::hours(1))
                })
                .map(|e| e.message.clone());
        }
        self
    }
}

/// The provider Karpenter runs with, from the node classes the pools reference.
pub fn cluster_provider(c: &Cluster) -> Provider {
    c.nodepools
        .values()
        .filter_map(|p| p.spec.template.spec.node_class_ref.as_ref()?.label())
        .map(|(key, _)| Provider::from_nodeclass_label(&key))
        .find(|p| *p != Provider::Core)
        .unwrap_or_default()
}

/// A pool template's requirements as Karpenter builds them (requirements, template labels,
/// the pool's own label and its node class label).
fn pool_requirements(pool: &NodePool) -> Result<Requirements, String> {
    let t = &pool.spec.template;
    let class_label = t.spec.node_class_ref.as_ref().and_then(|r| r.label());
    Requirements::for_nodepool(
        &pool.metadata.name,
        &t.spec.requirements,
        &t.metadata.labels,
        class_label.as_ref().map(|(k, v)| (k.as_str(), *v)),
    )
    .map_err(|e| e.to_string())
}

/// Whether a pool's taints and requirements (checks 3 and 4 alone) admit a pod: for a pool
/// that rejected the pod before those checks (not ready, limits), whether the pod is one
/// the pool is meant for.
pub fn pool_admits(pool: &NodePool, pod: &PodSpec, provider: Provider) -> bool {
    taints::untolerated(&pod.tolerations, &pool.spec.template.spec.taints).is_empty()
        && pool_requirements_admit(pool, pod, provider)
}

/// Whether a pool's requirements alone (check 4) admit a pod: for a pool that rejected it
/// for its taints, whether a toleration is all the pod lacks.
pub fn pool_requirements_admit(pool: &NodePool, pod: &PodSpec, provider: Provider) -> bool {
    match (pool_requirements(pool), pod_terms(pod, provider)) {
        (Ok(reqs), Ok(terms)) => terms
            .iter()
            .any(|t| requirements::compatible(t, &reqs).is_ok()),
        _ => false,
    }
}

fn pool_info(pool: &NodePool, usage: PoolUsage) -> PoolInfo<'_> {
    let name = pool.metadata.name.as_str();
    let requirements = pool_requirements(pool);
    PoolInfo {
        pool,
        name,
        requirements,
        usage: usage.used,
        limits: Resources::from_quantities(&pool.spec.limits),
        node_count: usage.nodes as f64,
        not_ready: pool_not_ready(pool),
        no_instance_types: None,
    }
}

/// What counts against one pool's limits, computed once per pass.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PoolUsage {
    /// Karpenter's own count (`status.resources`), else its NodeClaims' capacity.
    pub used: Resources,
    /// Nodes it has, for the `nodes` limit ([`pool_node_count`]).
    pub nodes: usize,
}

impl PoolUsage {
    pub fn of(c: &Cluster, pool: &NodePool) -> Self {
        PoolUsage {
            used: pool_usage(c, pool),
            nodes: pool_node_count(c, pool),
        }
    }

    /// What the limits count: `used`, with `nodes` the larger of Karpenter's count and
    /// the nodes kelp sees.
    pub fn counted(&self) -> Resources {
        let mut r = self.used.clone();
        let nodes = r.get("nodes").max(self.nodes as f64);
        r.0.insert("nodes".into(), nodes);
        r
    }
}

/// Every pool's usage, by name.
pub fn pool_usages(c: &Cluster) -> BTreeMap<String, PoolUsage> {
    c.nodepools
        .iter()
        .map(|(name, p)| (name.clone(), PoolUsage::of(c, p)))
        .collect()
}

/// What counts against a pool's limits: its `status.resources` (Karpenter's own count),
/// else the capacity of its NodeClaims.
fn pool_usage(c: &Cluster, pool: &NodePool) -> Resources {
    if let Ok(r) = Resources::from_quantities(&pool.status.resources) {
        if !r.0.is_empty() {
            return r;
        }
    }
    let mut sum = Resources::default();
    for claim in c.claims_in_pool(&pool.metadata.name) {
        if let Ok(r) = Resources::from_quantities(&claim.status.capacity) {
            sum.add(&r);
        }
    }
    sum
}

/// Nodes a pool has, for the `nodes` limit.
fn pool_node_count(c: &Cluster, pool: &NodePool) -> usize {
    if let Some(n) = pool.status.nodes {
        return n.max(0) as usize;
    }
    let claims = c.claims_in_pool(&pool.metadata.name).count();
    if claims > 0 {
        claims
    } else {
        c.nodes_in_pool(&pool.metadata.name).count()
    }
}

// ------------------------------------------------------------------ pods Karpenter considers

/// The pod's effective resource requests.
pub fn pod_requests(spec: &PodSpec) -> Resources {
    let containers: Vec<_> = spec
        .containers
        .iter()
        .map(|c| c.resources.effective_requests())
        .collect();
    let inits: Vec<_> = spec
        .init_containers
        .iter()
        .map(|c| {
            (
                c.resources.effective_requests(),
                c.restart_policy.as_deref() == Some("Always"),
            )
        })
        .collect();
    resources::pod_requests(&containers, &inits, spec.overhead.as_ref())
}

fn is_unschedulable(pod: &Pod) -> bool {
    pod.spec.node_name.is_none()
        && matches!(pod.status.phase.as_deref(), None | Some("Pending"))
        && condition(&pod.status.conditions, "PodScheduled")
            .is_some_and(|c| c.status == "False" && c.reason.as_deref() == Some("Unschedulable"))
}

/// The events about a pod that the analysis reads, found in one lookup.
#[derive(Debug, Default, Clone, Copy)]
pub struct PodEvents<'c> {
    /// Karpenter's latest FailedScheduling.
    pub failed: Option<&'c Event>,
    /// Karpenter's latest Nominated.
    pub nominated: Option<&'c Event>,
    /// The kube-scheduler's latest FailedScheduling.
    pub scheduler: Option<&'c Event>,
}

impl<'c> PodEvents<'c> {
    pub fn of(c: &'c Cluster, pod: &Pod) -> Self {
        let m = &pod.metadata;
        let mut out = PodEvents::default();
        // Newest first, so the first of each kind is the latest.
        for e in c.events_for("Pod", m.namespace.as_deref(), &m.name, &m.uid) {
            let slot = match (e.from_karpenter(), e.reason.as_str()) {
                (true, "FailedScheduling") => &mut out.failed,
                (true, "Nominated") => &mut out.nominated,
                (false, "FailedScheduling") => &mut out.scheduler,
                _ => continue,
            };
            slot.get_or_insert(e);
        }
        out
    }

    /// Nominated by Karpenter after its last failure to schedule: capacity is on its way.
    /// Only a nomination seen within the last hour counts: an old one whose NodeClaim is
    /// long gone must not hide a pod that still waits.
    fn nominated_since_failure(&self, now: DateTime<Utc>) -> Option<DateTime<Utc>> {
        let nominated = self
            .nominated?
            .seen()
            .filter(|t| now - *t <= Duration::hours(1))?;
        match self.failed.and_then(Event::seen) {
            Some(failed) if failed > nominated => None,
            _ => Some(nominated),
        }
    }
}

/// Pods Karpenter would try to provision for (facts section 6), with their events.
pub fn unschedulable_pods(
    c: &Cluster,
    now: DateTime<Utc>,
) -> impl Iterator<Item = (&Pod, PodEvents<'_>)> {
    c.pods
        .values()
        .filter(|p| {
            is_unschedulable(p)
                && p.status
                    .nominated_node_name
                    .as_deref()
                    .unwrap_or("")
                    .is_empty()
                && !p.metadata.owned_by("DaemonSet")
                && !p.metadata.owned_by("Node")
                && p.metadata.deletion_timestamp.is_none()
        })
        .map(move |p| (p, PodEvents::of(c, p)))
        .filter(move |(_, ev)| ev.nominated_since_failure(now).is_none())
}

// ------------------------------------------------------------------ per-pod diagnosis

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    Rejected,
    Compatible,
    Unknown,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
pub struct Reason {
    pub category: Category,
    pub message: String,
}

/// Who decided a verdict (serialised `kelp` or `event`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum VerdictSource {
    /// kelp's own checks, the way Karpenter decides.
    Kelp,
    /// The reasons come from Karpenter's FailedScheduling event.
    Event,
}

/// One NodePool's verdict for a pod.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PoolVerdict {
    pub name: String,
    pub verdict: Verdict,
    pub reasons: Vec<Reason>,
    /// Who decided: kelp's own checks, or Karpenter's event (instance types, topology,
    /// volumes: what kelp cannot compute).
    pub source: VerdictSource,
    /// Whether Karpenter's event agrees with kelp's own verdict, where it speaks of this pool.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub event_agrees: Option<bool>,
}

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

/// Everything kelp knows about why a pod is pending.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PodDiagnosis {
    #[serde(skip)]
    pub pod: ObjectRef,
    #[serde(skip)]
    pub since: Option<DateTime<Utc>>,
    #[serde(skip)]
    pub pending: Duration,
    pub pending_for: String,
    pub requests: Arc<BTreeMap<String, String>>,
    /// Each pool's verdict; equal verdicts (a pool that is not ready, or at its limits,
    /// rejects every pod alike) are one shared copy.
    pub nodepools: Arc<Vec<Arc<PoolVerdict>>>,
    pub event: Option<EventEvidence>,
    /// The kube-scheduler's own last word, when it left one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scheduler: Option<Arc<str>>,
}

impl PodDiagnosis {
    pub fn compatible(&self) -> impl Iterator<Item = &PoolVerdict> {
        self.nodepools
            .iter()
            .map(|v| &**v)
            .filter(|v| v.verdict == Verdict::Compatible)
    }
    pub fn verdict_for(&self, pool: &str) -> Option<&PoolVerdict> {
        self.nodepools.iter().map(|v| &**v).find(|v| v.name == pool)
    }
    /// One line: what holds the pod.
    pub fn summary(&self) -> String {
        format!("Pending {}: {}", self.pending_for, self.verdict_summary())
    }

    /// What holds the pod, without how long: the same for every replica that shares
    /// its verdicts and event.
    pub fn verdict_summary(&self) -> String {
        if self.nodepools.is_empty() {
            return "there are no NodePools, so Karpenter cannot provision for it".into();
        }
        let compatible: Vec<&str> = self.compatible().map(|v| v.name.as_str()).collect();
        if compatible.is_empty() {
            // The first reason of each pool, without the long requirements/resources dump
            // of instance-type errors; `kelp why pod` has the whole story.
            let short = |m: &str| m.split(", requirements=").next().unwrap_or(m).to_string();
            let mut why: Vec<String> = self
                .nodepools
                .iter()
                .take(4)
                .map(|v| match v.reasons.first() {
                    Some(r) if r.category == Category::InstanceTypes => {
                        format!("{}: instance types: {}", v.name, short(&r.message))
                    }
                    Some(r) => format!("{}: {}", v.name, short(&r.message)),
                    None => format!("{}: cannot tell", v.name),
                })
                .collect();
            if self.nodepools.len() > 4 {
                why.push(format!("{} more", self.nodepools.len() - 4));
            }
            return format!("no NodePool can run it ({})", why.join("; "));
        }
        let evidence = match &self.event {
            Some(e) => format!(
                "Karpenter says: {}",
                e.message.trim_start_matches("Failed to schedule pod, ")
            ),
            None => {
                "no Karpenter scheduling event yet: is the Karpenter controller running?".into()
            }
        };
        let pools = if compatible.len() == 1 {
            format!("NodePool {} could take it", compatible[0])
        } else {
            format!("NodePools {} could take it", compatible.join(", "))
        };
        format!("{pools}, yet no capacity was launched ({evidence})")
    }
}

fn reason(category: Category, message: impl Into<String>) -> Reason {
    Reason {
        category,
        message: message.into(),
    }
}

/// Resources every instance type has, so that none is left once such a limit is used up.
pub fn every_instance_has(resource: &str) -> bool {
    matches!(resource, "cpu" | "memory" | "pods" | "ephemeral-storage")
}

/// Whether `left` of a limited resource is less than any instance type has, so Karpenter
/// has no type left for the pool. kelp has no provider catalogue, so it uses floors every
/// real instance type meets (AWS and kwok alike): 1 CPU, 512Mi, 1 pod; an extended resource
/// (a GPU) only when over the limit, since types without it still fit at exactly 0.
pub fn no_instance_type_left(resource: &str, left: f64) -> bool {
    match resource {
        "nodes" | "pods" => left < 1.0,
        "cpu" => left < 1.0,
        "memory" => left < 512.0 * 1024.0 * 1024.0,
        r if every_instance_has(r) => left <= 0.0,
        _ => left < 0.0,
    }
}

/// kelp's own checks of one pool for one pod, in Karpenter's order; the first failing
/// check gives the reasons.
pub fn evaluate(
    pool: &PoolInfo,
    pod: &PodSpec,
    requests: &Resources,
    pod_terms: &Result<Vec<Requirements>, String>,
) -> PoolVerdict {
    let verdict = |verdict, reasons| PoolVerdict {
        name: pool.name.to_string(),
        verdict,
        reasons,
        source: VerdictSource::Kelp,
        event_agrees: None,
    };
    // 1. readiness
    if let Some(nr) = &pool.not_ready {
        let msg = match nr.category {
            Category::Other => nr.message.clone().unwrap_or_default(),
            _ => format!("NodePool is not ready: {}", nr.describe()),
        };
        return verdict(Verdict::Rejected, vec![reason(nr.category, msg)]);
    }
    if let Some(msg) = &pool.no_instance_types {
        return verdict(
            Verdict::Rejected,
            vec![reason(Category::InstanceTypes, msg.clone())],
        );
    }
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
    let mut last_failure = Vec::new();
    for term in terms {
        match requirements::compatible(term, pool_reqs) {
            Ok(()) => {
                // 5. instance types: every type big enough for the pod is beyond what is
                // left of a limit, so none both fits and stays under it.
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
                return if over.is_empty() {
                    verdict(Verdict::Compatible, Vec::new())
                } else {
                    verdict(Verdict::Rejected, over)
                };
            }
            Err(incompatibilities) => last_failure = incompatibilities,
        }
    }
    // Karpenter relaxes by dropping leading terms, so the last term's error is the one it reports.
    let reasons = last_failure
        .into_iter()
        .map(|i| {
            reason(
                Category::Requirements,
                format!("incompatible requirements, {i}"),
            )
        })
        .collect();
    verdict(Verdict::Rejected, reasons)
}

/// The pod's requirement alternatives: nodeSelector with each required node-affinity
/// term (or alone), after Karpenter's validation.
pub fn pod_terms(spec: &PodSpec, provider: Provider) -> Result<Vec<Requirements>, String> {
    let terms: Vec<_> = spec
        .affinity
        .as_ref()
        .and_then(|a| a.node_affinity.as_ref())
        .and_then(|na| {
            na.required_during_scheduling_ignored_during_execution
                .as_ref()
        })
        .map(|r| r.node_selector_terms.clone())
        .unwrap_or_default();
    requirements::validate_pod_requirements_for(&spec.node_selector, &terms, provider)?;
    if terms.is_empty() {
        return Requirements::for_pod(&spec.node_selector, None)
            .map(|r| vec![r])
            .map_err(|e| e.to_string());
    }
    terms
        .iter()
        .map(|t| Requirements::for_pod(&spec.node_selector, Some(t)).map_err(|e| e.to_string()))
        .collect()
}

/// The pool named inside an instance-types segment's `requirements=` (`karpenter.sh/nodepool In [x]`).
fn pool_in_requirements(message: &str) -> Option<&str> {
    let rest = message.split("karpenter.sh/nodepool In [").nth(1)?;
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
/// reject a pool for what kelp cannot compute, and record agreement.
fn cross_check(verdicts: &mut [PoolVerdict], segments: &[Segment]) {
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
    let compatible: Vec<usize> = (0..verdicts.len())
        .filter(|&i| verdicts[i].verdict == Verdict::Compatible)
        .collect();
    if let [only] = compatible[..] {
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
                let beyond: Vec<&&Segment> = segs
                    .iter()
                    .filter(|s| !KELP_COMPUTES.contains(&s.category))
                    .collect();
                if beyond.is_empty() {
                    v.event_agrees = Some(false);
                } else {
                    v.verdict = Verdict::Rejected;
                    v.source = VerdictSource::Event;
                    v.reasons = beyond
                        .iter()
                        .map(|s| reason(s.category, s.message.clone()))
                        .collect();
                }
            }
            // kelp only estimates instance types (it has no provider catalogue): where the
            // event speaks of this very pool, Karpenter's own reasons are the precise ones.
            Verdict::Rejected
                if v.reasons
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

/// Diagnose one pending pod against every pool.
/// Verdicts already computed in this pass. The verdicts are a function of the pod's
/// scheduling spec, its affinity and Karpenter's event message alone, and the model shares
/// one spec and one affinity among all pods that ask the same (the replicas of a
/// controller, and alike workloads): so they are computed, parsed and held once per
/// distinct (spec, affinity, message).
#[derive(Default)]
pub struct DiagnosisCache<'c> {
    /// By the addresses of the shared spec, affinity and parsed event message.
    verdicts: HashMap<(usize, usize, usize), SharedVerdicts>,
    /// The kube-scheduler's messages, one copy each (replicas get the same one).
    messages: HashMap<&'c str, Arc<str>>,
    /// One copy of each distinct pool verdict.
    pool_verdicts: std::collections::HashSet<Arc<PoolVerdict>>,
    /// Karpenter's messages, parsed.
    parses: HashMap<&'c str, ParsedEvent>,
}

/// A FailedScheduling message parsed: its format, segments and text.
type ParsedEvent = (MessageFormat, Arc<Vec<Segment>>, Arc<str>);

/// Requests as shown, and verdicts: what replicas share.
type SharedVerdicts = (Arc<BTreeMap<String, String>>, Arc<Vec<Arc<PoolVerdict>>>);

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
    let pending = since.map(|s| now - s).unwrap_or_else(Duration::zero);
    let event = events.failed;
    let DiagnosisCache {
        verdicts: cached,
        messages,
        pool_verdicts,
        parses,
    } = cache;
    // Each distinct message is parsed once, whichever pods it is about; its one shared
    // copy then stands for it (by address) in the verdicts' key.
    let parsed = event.map(|e| {
        parses
            .entry(e.message.as_str())
            .or_insert_with(|| {
                let fs = events::parse_failed_scheduling(&e.message);
                (
                    fs.format,
                    Arc::new(fs.segments),
                    Arc::from(e.message.as_str()),
                )
            })
            .clone()
    });
    let compute = || {
        let requests = pod_requests(&pod.spec);
        let terms = pod_terms(&pod.spec, pools.provider);
        let mut verdicts: Vec<PoolVerdict> = pools
            .ordered
            .iter()
            .map(|p| evaluate(p, &pod.spec, &requests, &terms))
            .collect();
        if let Some((_, segments, _)) = &parsed {
            cross_check(&mut verdicts, segments);
        }
        let verdicts = verdicts
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
        (Arc::new(shown), Arc::new(verdicts))
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
    let key = (
        spec as *const SchedulingSpec as usize,
        affinity.unwrap_or_default(),
        message.unwrap_or_default(),
    );
    let (requests, nodepools) = cached.entry(key).or_insert_with(compute).clone();
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
        pod: ObjectRef::of("Pod", &pod.metadata),
        since,
        pending,
        pending_for: crate::karpenter::duration::human(pending),
        requests,
        nodepools,
        event,
        scheduler,
    }
}

// ------------------------------------------------------------------ findings

pub fn findings(ctx: &Context) -> Vec<Finding> {
    let mut out = Vec::new();
    out.extend(unschedulable(ctx));
    out.extend(nominated_not_bound(ctx));
    out.extend(pool_readiness(ctx));
    out.extend(limits(ctx));
    out.extend(no_instance_types(ctx));
    out.extend(nodeclaims(ctx));
    out.extend(nodes_not_ready(ctx));
    out.extend(daemonset_pods_pending(ctx));
    out
}

fn unschedulable(ctx: &Context) -> Vec<Finding> {
    // Replicas share verdicts (the same Arc), so their summaries are written once.
    let mut summaries: HashMap<(*const Vec<Arc<PoolVerdict>>, Option<*const str>), String> =
        HashMap::new();
    ctx.pending
        .iter()
        .map(|d| {
            let key = (
                Arc::as_ptr(&d.nodepools),
                d.event.as_ref().map(|e| Arc::as_ptr(&e.message)),
            );
            let why = summaries.entry(key).or_insert_with(|| d.verdict_summary());
            let message = format!("Pending {}: {why}", d.pending_for);
            let sev = if d.pending > Duration::minutes(GRACE) {
                Severity::Critical
            } else {
                Severity::Warning
            };
            Finding::new(Code::PodUnschedulable, sev, d.pod.clone(), message)
                .since(d.since)
                .shared_details(d.clone())
        })
        .collect()
}

/// The details of a `pod-nominated-not-bound` finding.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NominationDetails {
    /// `node/NAME` or `nodeclaim/NAME`, as Karpenter's events name them.
    pub nominated_to: Vec<String>,
    pub outcome: String,
}

fn nominated_not_bound(ctx: &Context) -> Vec<Finding> {
    let c = ctx.cluster;
    let deadline = Duration::minutes(GRACE);
    let mut out = Vec::new();
    let mut seen = BTreeSet::new();
    // Karpenter's Nominated events, newest per pod.
    let mut nominations: BTreeMap<(Option<String>, String), &Event> = BTreeMap::new();
    for e in c
        .events
        .values()
        .filter(|e| e.from_karpenter() && e.reason == "Nominated" && e.regarding.kind == "Pod")
    {
        let key = (e.regarding.namespace.clone(), e.regarding.name.clone());
        let newer = nominations
            .get(&key)
            .is_none_or(|old| (e.seen(), &e.id) > (old.seen(), &old.id));
        if newer {
            nominations.insert(key, e);
        }
    }
    for ((ns, name), e) in nominations {
        // Karpenter re-nominates on every pass, so the same event's first sighting is when
        // the wait began; its last sighting must be recent for the nomination to matter.
        let (Some(at), Some(last)) = (e.first_seen.or(e.seen()), e.seen()) else {
            continue;
        };
        if ctx.now - at <= deadline || ctx.now - last > Duration::hours(1) {
            continue;
        }
        let targets = events::parse_nominated(&e.message);
        let nodes: BTreeSet<String> = targets
            .iter()
            .filter_map(|t| match t {
                NominationTarget::Node(n) => Some(n.clone()),
                NominationTarget::NodeClaim(nc) => c
                    .nodeclaims
                    .get(nc)
                    .and_then(|x| x.status.node_name.clone()),
            })
            .collect();
        // The nomination must be about this pod, not an earlier one of the same name.
        let pod = c
            .pods
            .get(&(ns.clone().unwrap_or_default(), name.clone()))
            .filter(|p| {
                e.regarding.uid.is_empty()
                    || p.metadata.uid.is_empty()
                    || p.metadata.uid == e.regarding.uid
            });
        // Bound within the deadline of the nomination: it was served in time, wherever it
        // runs now (consolidation or drift may have moved it since).
        let bound_in_time = |p: &Pod| {
            condition(&p.status.conditions, "PodScheduled")
                .filter(|c| c.is_true())
                .and_then(|c| c.last_transition_time)
                .is_some_and(|t| t - at <= deadline)
        };
        let outcome = match pod {
            // Gone: only while Karpenter was still renewing the nomination lately.
            None if ctx.now - last > deadline => continue,
            None => "gone: the pod no longer exists".to_string(),
            Some(p) if matches!(p.status.phase.as_deref(), Some("Succeeded" | "Failed")) => {
                continue
            }
            Some(p) if bound_in_time(p) => continue,
            Some(p) => match &p.spec.node_name {
                Some(n) if nodes.contains(n.as_str()) => continue,
                Some(n) => {
                    format!("bound elsewhere: it runs on {n}, not where Karpenter nominated it")
                }
                // Failed again since: pod-unschedulable speaks.
                None if PodEvents::of(c, p)
                    .nominated_since_failure(ctx.now)
                    .is_none() =>
                {
                    continue
                }
                None => "still pending".to_string(),
            },
        };
        let to: Vec<String> = targets
            .iter()
            .map(|t| match t {
                NominationTarget::Node(n) => format!("node/{n}"),
                NominationTarget::NodeClaim(n) => format!("nodeclaim/{n}"),
            })
            .collect();
        let pool = targets.iter().find_map(|t| match t {
            NominationTarget::NodeClaim(n) => c
                .nodeclaims
                .get(n)
                .and_then(|x| Cluster::pool_of(&x.metadata.labels)),
            NominationTarget::Node(n) => c
                .nodes
                .get(n)
                .and_then(|x| Cluster::pool_of(&x.metadata.labels)),
        });
        seen.insert((ns.clone().unwrap_or_default(), name.clone()));
        let object = ObjectRef {
            kind: "Pod".into(),
            namespace: ns,
            name,
        };
        out.push(
            Finding::new(
                Code::PodNominatedNotBound,
                Severity::Warning,
                object,
                format!(
                    "Nominated to {} {} ago, {outcome}",
                    to.join(", "),
                    ago(ctx.now, at)
                ),
            )
            .pool(pool)
            .since(Some(at))
            .details(NominationDetails {
                nominated_to: to,
                outcome,
            }),
        );
    }
    // status.nominatedNodeName with no Karpenter nomination behind it (the scheduler's own, after preemption).
    for (key, p) in &c.pods {
        let Some(node) = p
            .status
            .nominated_node_name
            .as_deref()
            .filter(|n| !n.is_empty())
        else {
            continue;
        };
        if seen.contains(key)
            || p.spec.node_name.is_some()
            || !is_unschedulable(p) && p.status.phase.as_deref() != Some("Pending")
        {
            continue;
        }
        let since = condition(&p.status.conditions, "PodScheduled")
            .and_then(|c| c.last_transition_time)
            .or(p.metadata.creation_timestamp);
        if since.is_none_or(|s| ctx.now - s <= deadline) {
            continue;
        }
        let pool = c
            .nodes
            .get(node)
            .and_then(|n| Cluster::pool_of(&n.metadata.labels));
        let outcome = "still pending".to_string();
        out.push(
            Finding::new(
                Code::PodNominatedNotBound,
                Severity::Warning,
                ObjectRef::of("Pod", &p.metadata),
                format!(
                    "status.nominatedNodeName is {node}, yet the pod is {outcome} after {}",
                    since.map(|s| ago(ctx.now, s)).unwrap_or_default()
                ),
            )
            .pool(pool)
            .since(since)
            .details(NominationDetails {
                nominated_to: vec![format!("node/{node}")],
                outcome,
            }),
        );
    }
    out
}

fn pool_readiness(ctx: &Context) -> Vec<Finding> {
    let c = ctx.cluster;
    let waiting = !ctx.pending.is_empty();
    let sev = if waiting {
        Severity::Critical
    } else {
        Severity::Warning
    };
    let mut out = Vec::new();
    let mut any_ready = false;
    for pool in c.nodepools.values() {
        match pool_not_ready(pool) {
            None => any_ready = true,
            Some(nr) if nr.category == Category::Other => {} // static pools are not meant to take pods
            Some(nr) => {
                let since = condition(&pool.status.conditions, &nr.condition)
                    .and_then(|c| c.last_transition_time);
                let hint = match nr.reason.as_deref() {
                    Some("NodeClassNotFound") => " Create the node class it references, or fix spec.template.spec.nodeClassRef.",
                    Some("NodeClassNotReady" | "NodeClassReadinessUnknown") => " Check the node class's own conditions.",
                    _ => "",
                };
                out.push(
                    Finding::new(
                        Code::NodepoolNotReady,
                        sev,
                        ObjectRef::of("NodePool", &pool.metadata),
                        format!("NodePool is not ready: {}; Karpenter will not launch nodes from it.{hint}", nr.describe()),
                    )
                    .pool(Some(&pool.metadata.name))
                    .since(since)
                    .details(nr),
                );
            }
        }
    }
    if !any_ready {
        let msg = if c.nodepools.is_empty() {
            "Karpenter is installed but there is no NodePool, so it provisions nothing".to_string()
        } else {
            format!(
                "Karpenter is installed but none of its {} NodePools is Ready, so it provisions nothing and writes no FailedScheduling events{}",
                c.nodepools.len(),
                if waiting { format!(" ({} pods wait)", ctx.pending.len()) } else { String::new() }
            )
        };
        out.push(Finding::new(
            Code::NoNodepoolReady,
            sev,
            ObjectRef::cluster("Cluster", "karpenter"),
            msg,
        ));
    }
    out
}

#[derive(Serialize)]
struct LimitDetails {
    resource: String,
    usage: String,
    limit: String,
    ratio: f64,
}

fn limits(ctx: &Context) -> Vec<Finding> {
    let c = ctx.cluster;
    let mut out = Vec::new();
    // Pools that some pending pod waits on for limits (verdicts are shared between replicas,
    // so each distinct verdict list is looked at once).
    let mut waiting_on: BTreeSet<&str> = BTreeSet::new();
    let mut seen: BTreeSet<*const Vec<Arc<PoolVerdict>>> = BTreeSet::new();
    for d in &ctx.pending {
        if seen.insert(Arc::as_ptr(&d.nodepools)) {
            for v in d.nodepools.iter() {
                if v.verdict == Verdict::Rejected
                    && v.reasons.iter().any(|r| r.category == Category::Limits)
                {
                    waiting_on.insert(&v.name);
                }
            }
        }
    }
    for pool in c.nodepools.values() {
        let name = pool.metadata.name.as_str();
        let Ok(limits) = Resources::from_quantities(&pool.spec.limits) else {
            continue;
        };
        let usage = match ctx.pools.get(name) {
            Some(u) => u.counted(),
            None => PoolUsage::of(c, pool).counted(),
        };
        let waiting_on_limits = waiting_on.contains(name);
        for (res, &limit) in &limits.0 {
            let used = usage.get(res);
            let res = res.clone();
            let ratio = if limit > 0.0 {
                used / limit
            } else {
                f64::INFINITY
            };
            // Exhausted for Karpenter once no instance type fits in what is left.
            let exhausted = ratio >= 1.0 || no_instance_type_left(&res, limit - used);
            if !exhausted && ratio < 0.9 {
                continue;
            }
            let details = LimitDetails {
                resource: res.clone(),
                usage: format_quantity(&res, used),
                limit: format_quantity(&res, limit),
                ratio: (ratio * 1000.0).round() / 1000.0,
            };
            let f = if exhausted {
                let sev = if waiting_on_limits {
                    Severity::Critical
                } else {
                    Severity::Warning
                };
                Finding::new(
                    Code::NodepoolLimitsExhausted,
                    sev,
                    ObjectRef::of("NodePool", &pool.metadata),
                    format!(
                        "{res} limit reached: {} of {} in use{}; Karpenter launches no more nodes {} from this pool{}",
                        details.usage,
                        details.limit,
                        if ratio < 1.0 { " (what is left is less than any instance type)" } else { "" },
                        if res == "nodes" || every_instance_has(&res) { "at all" } else { "with it" },
                        if waiting_on_limits { " and pods wait on it" } else { "" }
                    ),
                )
            } else {
                Finding::new(
                    Code::NodepoolLimitsNear,
                    Severity::Info,
                    ObjectRef::of("NodePool", &pool.metadata),
                    format!(
                        "{res} at {:.0}% of its limit ({} of {})",
                        ratio * 100.0,
                        details.usage,
                        details.limit
                    ),
                )
            };
            out.push(f.pool(Some(name)).details(details));
        }
    }
    out
}

fn no_instance_types(ctx: &Context) -> Vec<Finding> {
    let c = ctx.cluster;
    c.nodepools
        .values()
        .filter_map(|pool| {
            let m = &pool.metadata;
            let e = c
                .events_for("NodePool", None, &m.name, &m.uid)
                .into_iter()
                .find(|e| {
                    e.from_karpenter()
                        && e.reason == "NoCompatibleInstanceTypes"
                        && ctx.within(e.seen(), Duration::hours(1))
                })?;
            Some(
                Finding::new(
                    Code::NodepoolNoInstanceTypes,
                    Severity::Warning,
                    ObjectRef::of("NodePool", m),
                    format!(
                        "{} (widen the pool's instance requirements or relax minValues)",
                        e.message
                    ),
                )
                .pool(Some(&m.name))
                .since(e.seen())
                .details(serde_json::json!({"event": e.message})),
            )
        })
        .collect()
}

#[derive(Serialize)]
struct ClaimDetails {
    reason: Option<String>,
    message: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    hint: Option<&'static str>,
}

/// A NodeClaim's pool: its label, else its name's prefix when that pool exists.
pub fn claim_pool(c: &Cluster, name: &str) -> Option<String> {
    if let Some(p) = c
        .nodeclaims
        .get(name)
        .and_then(|n| Cluster::pool_of(&n.metadata.labels))
    {
        return Some(p.to_string());
    }
    let (prefix, _) = name.rsplit_once('-')?;
    c.nodepools.contains_key(prefix).then(|| prefix.to_string())
}

/// Event reasons Karpenter writes on a NodeClaim whose launch failed.
pub const LAUNCH_ERRORS: &[&str] = &[
    "InsufficientCapacityError",
    "NodeClassNotReady",
    "LaunchFailed",
    "FailedLaunch",
];

fn nodeclaims(ctx: &Context) -> Vec<Finding> {
    let c = ctx.cluster;
    let mut out = Vec::new();
    let mut launch_reported = BTreeSet::new();
    for claim in c.nodeclaims.values() {
        let m = &claim.metadata;
        let conds = &claim.status.conditions;
        let pool = Cluster::pool_of(&m.labels);
        let obj = ObjectRef::of("NodeClaim", m);
        if m.deletion_timestamp.is_some() {
            continue;
        }
        let launched = condition(conds, "Launched");
        let registered = condition(conds, "Registered");
        let initialized = condition(conds, "Initialized");
        let created = m.creation_timestamp;
        if !launched.is_some_and(Condition::is_true) {
            if created.is_some_and(|t| ctx.now - t > Duration::minutes(GRACE)) {
                let msg = launched.and_then(|l| l.message.clone());
                let hint = msg
                    .as_deref()
                    .and_then(|m| events::parse_launch_error(m).hint);
                launch_reported.insert(m.name.clone());
                out.push(
                    Finding::new(
                        Code::NodeclaimLaunchFailed,
                        Severity::Critical,
                        obj,
                        format!(
                            "Not launched {} after creation{}",
                            created.map(|t| ago(ctx.now, t)).unwrap_or_default(),
                            msg.as_deref().map(|m| format!(": {m}")).unwrap_or_default()
                        ),
                    )
                    .pool(pool)
                    .since(created)
                    .details(ClaimDetails {
                        reason: launched.and_then(|l| l.reason.clone()),
                        message: msg,
                        hint,
                    }),
                );
            }
            continue;
        }
        let after = |cond: Option<&Condition>, mins| {
            cond.and_then(|c| c.last_transition_time)
                .filter(|t| ctx.now - *t > Duration::minutes(mins))
        };
        if !registered.is_some_and(Condition::is_true) {
            if let Some(t) = after(launched, 10) {
                out.push(
                    Finding::new(
                        Code::NodeclaimNotRegistered,
                        Severity::Critical,
                        obj,
                        format!(
                            "Launched {} ago but its node never joined the cluster (check the node's bootstrap/user data, security groups reaching the API server, and the node IAM role's access entry)",
                            ago(ctx.now, t)
                        ),
                    )
                    .pool(pool)
                    .since(Some(t))
                    .details(ClaimDetails { reason: registered.and_then(|r| r.reason.clone()), message: registered.and_then(|r| r.message.clone()), hint: None }),
                );
            }
            continue;
        }
        if !initialized.is_some_and(Condition::is_true) {
            if let Some(t) = after(registered, 10) {
                let reason = initialized.and_then(|i| i.reason.clone());
                let hint = match reason.as_deref() {
                    Some("NodeNotReady") => Some("the kubelet never reported Ready: check the CNI and kubelet logs"),
                    Some("StartupTaintsExist") => Some("a startupTaint was never removed: the agent that should remove it is missing or failing"),
                    Some("ResourceNotRegistered") => Some("an extended resource (e.g. a GPU) never appeared: check its device plugin"),
                    _ => None,
                };
                out.push(
                    Finding::new(
                        Code::NodeclaimNotInitialized,
                        Severity::Warning,
                        obj,
                        format!(
                            "Registered {} ago but not initialized{}",
                            ago(ctx.now, t),
                            reason
                                .as_deref()
                                .map(|r| format!(" ({r})"))
                                .unwrap_or_default()
                        ),
                    )
                    .pool(pool)
                    .since(Some(t))
                    .details(ClaimDetails {
                        reason,
                        message: initialized.and_then(|i| i.message.clone()),
                        hint,
                    }),
                );
            }
        }
    }
    // Launch errors from events: the NodeClaim is usually deleted by then.
    let mut latest: BTreeMap<&str, &Event> = BTreeMap::new();
    for e in c.events.values() {
        if e.from_karpenter()
            && e.regarding.kind == "NodeClaim"
            && LAUNCH_ERRORS.contains(&e.reason.as_str())
            && ctx.within(e.seen(), Duration::hours(1))
        {
            let slot = latest.entry(e.regarding.name.as_str()).or_insert(e);
            if (e.seen(), &e.id) > (slot.seen(), &slot.id) {
                *slot = e;
            }
        }
    }
    for (name, e) in latest {
        if launch_reported.contains(name) {
            continue;
        }
        let parsed = events::parse_launch_error(&e.message);
        out.push(
            Finding::new(
                Code::NodeclaimLaunchFailed,
                Severity::Warning,
                ObjectRef::cluster("NodeClaim", name),
                format!("{}: {}", e.reason, e.message),
            )
            .pool(claim_pool(c, name).as_deref())
            .since(e.seen())
            .details(ClaimDetails {
                reason: Some(e.reason.clone()),
                message: Some(e.message.clone()),
                hint: parsed.hint,
            }),
        );
    }
    out
}

fn nodes_not_ready(ctx: &Context) -> Vec<Finding> {
    let c = ctx.cluster;
    c.nodes
        .values()
        // A node being terminated goes NotReady on its way out: not lost capacity.
        .filter(|n| n.metadata.deletion_timestamp.is_none())
        .filter_map(|n| {
            let pool = Cluster::pool_of(&n.metadata.labels)?;
            let ready = condition(&n.status.conditions, "Ready")?;
            let since = ready.last_transition_time?;
            if ready.is_true() || ctx.now - since <= Duration::minutes(GRACE) {
                return None;
            }
            Some(
                Finding::new(
                    Code::NodeNotReady,
                    Severity::Critical,
                    ObjectRef::of("Node", &n.metadata),
                    format!(
                        "Ready={} for {}{}",
                        ready.status,
                        ago(ctx.now, since),
                        ready.reason.as_deref().map(|r| format!(" ({r})")).unwrap_or_default()
                    ),
                )
                .pool(Some(pool))
                .since(Some(since))
                .details(serde_json::json!({"status": ready.status, "reason": ready.reason, "message": ready.message})),
            )
        })
        .collect()
}

/// The node a DaemonSet pod is pinned to (`matchFields metadata.name In [node]`).
pub fn daemonset_target(spec: &PodSpec) -> Option<&str> {
    let terms = &spec
        .affinity
        .as_ref()?
        .node_affinity
        .as_ref()?
        .required_during_scheduling_ignored_during_execution
        .as_ref()?
        .node_selector_terms;
    terms
        .iter()
        .flat_map(|t| t.match_fields.iter().flatten())
        .find_map(|f| {
            (f.key == "metadata.name" && f.operator == "In")
                .then(|| f.values.as_ref()?.first().map(String::as_str))
                .flatten()
        })
}

fn daemonset_pods_pending(ctx: &Context) -> Vec<Finding> {
    let c = ctx.cluster;
    c.pods
        .values()
        .filter(|p| p.metadata.owned_by("DaemonSet") && is_unschedulable(p))
        .filter_map(|p| {
            let node = daemonset_target(&p.spec)?;
            let pool = Cluster::pool_of(&c.nodes.get(node)?.metadata.labels)?;
            let cond = condition(&p.status.conditions, "PodScheduled");
            let since = cond.and_then(|c| c.last_transition_time).or(p.metadata.creation_timestamp);
            let ds = p.metadata.owner_references.iter().find(|o| o.kind == "DaemonSet").map(|o| o.name.clone());
            Some(
                Finding::new(
                    Code::DaemonsetPodPending,
                    Severity::Warning,
                    ObjectRef::of("Pod", &p.metadata),
                    format!(
                        "DaemonSet pod cannot fit on Karpenter node {node}{}; Karpenter never provisions for DaemonSet pods. Give the DaemonSet a PriorityClass that preempts, or make room in the pool's instance sizes",
                        cond.and_then(|c| c.message.as_deref()).map(|m| format!(" ({m})")).unwrap_or_default()
                    ),
                )
                .pool(Some(pool))
                .since(since)
                .details(serde_json::json!({"daemonset": ds, "node": node})),
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn verdict(name: &str, v: Verdict, reasons: Vec<Reason>) -> PoolVerdict {
        PoolVerdict {
            name: name.into(),
            verdict: v,
            reasons,
            source: VerdictSource::Kelp,
            event_agrees: None,
        }
    }

    #[test]
    fn a_stale_event_never_overrides_what_kelp_computes_but_adds_what_it_cannot() {
        // Limits were raised after Karpenter wrote its event: kelp's own check wins.
        let mut v = vec![verdict("ok", Verdict::Compatible, vec![])];
        let fs = events::parse_failed_scheduling("Failed to schedule pod, all available instance types exceed limits for nodepool (NodePool=ok)");
        cross_check(&mut v, &fs.segments);
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
        cross_check(&mut v, &fs.segments);
        assert_eq!(v[0].event_agrees, Some(true));
        assert_eq!((v[1].verdict, v[1].source), (Verdict::Rejected, VerdictSource::Event));
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
        cross_check(&mut v, &fs.segments);
        assert!(v.iter().all(|p| p.verdict == Verdict::Compatible));
    }
}
