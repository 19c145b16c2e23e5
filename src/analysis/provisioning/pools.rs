//! NodePools as Karpenter sees them when it schedules: each pool's requirements, usage
//! and limits computed once per pass ([`PoolSet`], in Karpenter's order), its readiness
//! the way Karpenter filters pools, and whether a pool's taints and requirements admit a
//! pod. Also the pool-level findings: NodePools that are not ready (or none that is) and
//! pools Karpenter reported to match no instance type.

use std::collections::{BTreeMap, HashMap};

use chrono::{DateTime, Duration, Utc};
use serde::Serialize;

use super::super::Context;
use super::claim_pool;
use super::instance_types::{self, PoolTypes};
use super::pending::pod_terms;
use crate::findings::{Code, Finding, ObjectRef, Severity};
use crate::karpenter::events::Category;
use crate::karpenter::events::Reason;
use crate::karpenter::requirements::{self, Provider, Requirements};
use crate::karpenter::resources::Resources;
use crate::karpenter::taints;
use crate::model::*;

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
    /// The catalogue's types for this pool, where kelp has a catalogue.
    pub types: Option<PoolTypes>,
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
    pub(super) fn describe(&self) -> String {
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

/// Why a pool's node class is not Ready, from its own conditions: for an EC2NodeClass,
/// the first the provider's Ready depends on that is not True, with what its reason
/// means.
fn class_problem(c: &Cluster, pool: &NodePool) -> Option<String> {
    use crate::karpenter::aws::nodeclass::{advice, CONDITIONS};
    let class = c.nodeclass_of(pool)?;
    let conds = &class.status.conditions;
    let failing = CONDITIONS
        .iter()
        .filter(|_| class.kind == "EC2NodeClass")
        .filter_map(|t| condition(conds, t))
        .find(|c| !c.is_true() && !c.status.is_empty())
        .or_else(|| condition(conds, "Ready").filter(|c| !c.is_true()))?;
    let reason = failing.reason.as_deref().unwrap_or_default();
    let mut s = format!(
        " {} {}: {}={}",
        class.kind, class.metadata.name, failing.type_, failing.status
    );
    match failing.message.as_deref().filter(|m| !m.is_empty()) {
        Some(m) => s.push_str(&format!(" ({reason}: {m})")),
        None if !reason.is_empty() => s.push_str(&format!(" ({reason})")),
        None => {}
    }
    if let Some(a) = advice(&failing.type_, reason) {
        s.push_str(&format!(": {a}."));
    } else {
        s.push('.');
    }
    Some(s)
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
    /// The cluster the pools are in: what a pod's topology spread counts.
    pub cluster: &'a Cluster,
    /// The cloud provider behind the pools, which widens well-known labels and validation.
    pub provider: Provider,
    /// The instance-type catalogue the verdicts were judged with, if any.
    pub catalog: Option<std::sync::Arc<Catalog>>,
    /// With a catalogue: every DaemonSet as Karpenter counts it into a pool's overhead.
    pub daemons: Vec<instance_types::Daemon>,
    /// The bound pods as zone spread counts them, built on first use (or kept from an
    /// earlier pass, [`PoolSet::with_spread_index`]).
    spread: std::sync::OnceLock<std::sync::Arc<super::spread_index::SpreadIndex>>,
    /// An index kept from an earlier pass, with the stamp since which only pods changed:
    /// what `spread` is built from on first use.
    spread_kept: Option<(std::sync::Arc<super::spread_index::SpreadIndex>, u64)>,
    /// The bound pods whose anti-affinity may keep a pending pod out of a zone, found on
    /// first use (or kept from an earlier pass, [`PoolSet::with_guards`]).
    guards: std::sync::OnceLock<std::sync::Arc<super::affinity_index::Guards>>,
    /// The pods Karpenter has to place, found on first use, afresh each pass.
    pending: std::sync::OnceLock<super::affinity_index::Pending>,
    /// The bound pods a zone affinity term counts per zone, by the term's selector and
    /// namespaces in words: counted once per pass.
    zone_counts: std::sync::Mutex<
        std::collections::HashMap<String, std::sync::Arc<super::affinity_index::ZoneCounts>>,
    >,
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
            cluster: c,
            provider: cluster_provider(c),
            catalog: None,
            daemons: Vec::new(),
            spread: std::sync::OnceLock::new(),
            spread_kept: None,
            guards: std::sync::OnceLock::new(),
            pending: std::sync::OnceLock::new(),
            zone_counts: Default::default(),
        }
    }

    /// The pools as a change would leave them: each of `changed` in place of the pool of its
    /// name (or beside the others, a new one), counting what the cluster's pool of that name
    /// uses; in Karpenter's order again.
    pub fn with_changed(c: &'a Cluster, changed: &'a [NodePool]) -> Self {
        let mut set = Self::new(c);
        set.ordered
            .retain(|p| !changed.iter().any(|n| n.metadata.name == p.name));
        set.ordered
            .extend(changed.iter().map(|p| pool_info(p, PoolUsage::of(c, p))));
        set.ordered.sort_by(|a, b| {
            let w = |p: &PoolInfo| p.pool.spec.weight.unwrap_or(0);
            w(b).cmp(&w(a)).then_with(|| b.name.cmp(a.name))
        });
        set
    }

    /// The bound pods with required anti-affinity on a key other than the hostname
    /// (found once, on first use).
    pub fn guards(&self) -> &super::affinity_index::Guards {
        self.guards
            .get_or_init(|| std::sync::Arc::new(super::affinity_index::Guards::new(self.cluster)))
    }

    /// The pods Karpenter has to place in this pass (found once, on first use).
    pub fn pending(&self) -> &super::affinity_index::Pending {
        self.pending
            .get_or_init(|| super::affinity_index::Pending::new(self.cluster))
    }

    /// What a zone affinity term (`words`: its selector and namespaces) counts, counted
    /// by `count` the first time this pass asks.
    pub fn zone_counts(
        &self,
        words: &str,
        count: impl FnOnce() -> super::affinity_index::ZoneCounts,
    ) -> std::sync::Arc<super::affinity_index::ZoneCounts> {
        let mut kept = self.zone_counts.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(z) = kept.get(words) {
            return z.clone();
        }
        let z = std::sync::Arc::new(count());
        kept.insert(words.to_string(), z.clone());
        z
    }

    /// Use the guards an earlier pass found, while they still hold (serve's engine says).
    pub fn with_guards(self, kept: Option<std::sync::Arc<super::affinity_index::Guards>>) -> Self {
        if let Some(g) = kept {
            let _ = self.guards.set(g);
        }
        self
    }

    /// The guards, if this pass found or was given them: for a later pass to keep.
    pub fn built_guards(&self) -> Option<std::sync::Arc<super::affinity_index::Guards>> {
        self.guards.get().cloned()
    }

    /// The cluster's bound pods indexed for zone spread (built once, on first use: from
    /// the kept index [`PoolSet::with_spread_index`] gave, if any).
    pub fn spread_index(&self) -> &super::spread_index::SpreadIndex {
        self.spread.get_or_init(|| {
            std::sync::Arc::new(match &self.spread_kept {
                Some((index, since)) => index.updated(self.cluster, *since),
                None => super::spread_index::SpreadIndex::new(self.cluster),
            })
        })
    }

    /// Count zone spread with an index an earlier pass built: as it is, when the bound
    /// pods and nodes it counts are unchanged; else, on first use, brought up to date on
    /// the nodes changed since (only pods may have: [`super::spread_index::SpreadIndex::updated`]).
    pub fn with_spread_index(mut self, kept: Option<super::spread_index::KeptSpread>) -> Self {
        match kept {
            Some(super::spread_index::KeptSpread::Current(index)) => {
                let _ = self.spread.set(index);
            }
            Some(super::spread_index::KeptSpread::Since(index, since)) => {
                self.spread_kept = Some((index, since));
            }
            None => {}
        }
        self
    }

    /// The spread index, if this pass built or was given one: for a later pass to keep.
    pub fn built_spread_index(&self) -> Option<std::sync::Arc<super::spread_index::SpreadIndex>> {
        self.spread.get().cloned()
    }

    /// Judge instance types from `catalog` (see [`super::instance_types`]), computing
    /// each pool's admitted types once.
    pub fn with_catalog(mut self, catalog: Option<&std::sync::Arc<Catalog>>) -> Self {
        let Some(catalog) = catalog else {
            return self;
        };
        self.catalog = Some(catalog.clone());
        self.daemons = instance_types::daemons(self.cluster);
        let daemons = &self.daemons;
        for p in &mut self.ordered {
            let Ok(reqs) = &p.requirements else { continue };
            // An EC2NodeClass's kubelet and AMI family move its types' figures.
            let class = p.pool.spec.template.spec.node_class_ref.as_ref();
            let class = class.filter(|r| r.kind == "EC2NodeClass");
            p.types = Some(PoolTypes::of(
                catalog.for_node_class(class.map(|r| r.name.as_str())),
                p.pool,
                reqs,
                p.limits.as_ref().ok(),
                &p.usage,
                daemons,
                self.provider,
            ));
        }
        self
    }

    /// Mark pools whose requirements Karpenter reported (in the last hour) to match no
    /// instance type: it drops them before scheduling, and no later event names them.
    pub fn with_instance_type_events(mut self, c: &Cluster, now: DateTime<Utc>) -> Self {
        for p in &mut self.ordered {
            let m = &p.pool.metadata;
            p.no_instance_types = c
                .events_for(ObjectKind::NodePool, None, &m.name, &m.uid)
                .into_iter()
                .find(|e| {
                    e.from_karpenter()
                        && e.is(Reason::NoCompatibleInstanceTypes)
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

/// Checks 3 and 4 alone (taints, requirements) of every pool against pods, each pool's
/// requirements worked out once.
pub struct PoolAdmits<'c> {
    provider: Provider,
    pools: HashMap<&'c str, (&'c NodePool, Option<Requirements>)>,
}

impl<'c> PoolAdmits<'c> {
    pub fn new(c: &'c Cluster, provider: Provider) -> Self {
        PoolAdmits {
            provider,
            pools: c
                .nodepools
                .values()
                .map(|p| (p.metadata.name.as_str(), (p, pool_requirements(p).ok())))
                .collect(),
        }
    }

    /// Whether pool `name`'s taints and requirements admit the pod (false for a pool
    /// that is gone): for a pool that rejected the pod before those checks (not ready,
    /// limits), whether the pod is one the pool is meant for.
    pub fn admits(&self, name: &str, pod: &PodSpec) -> bool {
        self.pools.get(name).is_some_and(|(pool, _)| {
            taints::untolerated(&pod.tolerations, &pool.spec.template.spec.taints).is_empty()
        }) && self.requirements_admit(name, pod)
    }

    /// Whether pool `name`'s requirements alone admit the pod: for a pool that rejected
    /// it for its taints, whether a toleration is all the pod lacks.
    pub fn requirements_admit(&self, name: &str, pod: &PodSpec) -> bool {
        let Some((_, Some(reqs))) = self.pools.get(name) else {
            return false;
        };
        pod_terms(pod, self.provider).is_ok_and(|terms| {
            terms
                .iter()
                .any(|t| requirements::compatible(t, reqs).is_ok())
        })
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
        types: None,
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

/// Every pool's usage as a pod Karpenter nominated sees it: the NodeClaims launched for it
/// (`nominated`, by name) do not count against it. A pool holding one of them is counted
/// from its other live claims' capacity, as Karpenter counts its in-flight claims, since its
/// `status.resources` may or may not include the new claim yet.
pub fn usages_without(
    c: &Cluster,
    usages: &BTreeMap<String, PoolUsage>,
    nominated: &[&str],
) -> BTreeMap<String, PoolUsage> {
    let mut out = usages.clone();
    for claim in nominated.iter().filter_map(|n| c.nodeclaims.get(*n)) {
        let Some(pool) = claim_pool(c, &claim.metadata.name) else {
            continue;
        };
        let Some(usage) = out.get_mut(&pool) else {
            continue;
        };
        let others: Vec<&NodeClaim> = active_claims_in_pool(c, &pool)
            .filter(|o| !nominated.contains(&o.metadata.name.as_str()))
            .collect();
        let mut used = capacity_of(others.iter().copied());
        used.0.insert("nodes".into(), others.len() as f64);
        *usage = PoolUsage {
            used,
            nodes: others.len(),
        };
    }
    out
}

/// What counts against a pool's limits: its `status.resources` (Karpenter's own count),
/// else the capacity of its NodeClaims.
fn pool_usage(c: &Cluster, pool: &NodePool) -> Resources {
    if let Ok(r) = Resources::from_quantities(&pool.status.resources) {
        if !r.0.is_empty() {
            return r;
        }
    }
    capacity_of(active_claims_in_pool(c, &pool.metadata.name))
}

/// A pool's NodeClaims that count against its limits. Karpenter schedules against
/// `nodes.Active()` and its counter leaves out `MarkedForDeletion` nodes, so a claim
/// [`NodeClaim::marked_for_deletion`] does not count.
fn active_claims_in_pool<'a>(c: &'a Cluster, pool: &str) -> impl Iterator<Item = &'a NodeClaim> {
    c.claims_in_pool(pool)
        .filter(|claim| !claim.marked_for_deletion(c.node_for_claim(claim)))
}

/// The summed capacity of NodeClaims (one whose capacity does not parse counts nothing).
fn capacity_of<'a>(claims: impl Iterator<Item = &'a NodeClaim>) -> Resources {
    let mut sum = Resources::default();
    for claim in claims {
        if let Ok(r) = Resources::from_quantities(&claim.status.capacity) {
            sum.add(&r);
        }
    }
    sum
}

/// Nodes a pool has, for the `nodes` limit: the larger of Karpenter's count
/// (`status.nodes`, written a while after a node comes or goes) and the claims (else, when
/// kelp sees no claim of the pool at all, the nodes) kelp sees now, so a new node counts
/// at once. As in Karpenter, claims and nodes being deleted do not count.
fn pool_node_count(c: &Cluster, pool: &NodePool) -> usize {
    let name = &pool.metadata.name;
    let seen = if c.claims_in_pool(name).next().is_some() {
        active_claims_in_pool(c, name).count()
    } else {
        c.nodes_in_pool(name)
            .filter(|n| n.metadata.deletion_timestamp.is_none())
            .count()
    };
    pool.status
        .nodes
        .map_or(seen, |n| seen.max(n.max(0) as usize))
}

/// How long a NodePool's readiness may stay Unknown after it is created or changed before
/// kelp calls it not ready: Karpenter's status controller sets every condition to Unknown
/// (AwaitingReconciliation) on a new generation and reconciles it within about a second;
/// this leaves room for a busy controller.
pub const RECONCILE_GRACE_SECONDS: i64 = 30;

/// Whether a pool's readiness is Unknown only because Karpenter has not reconciled its
/// latest change yet: an Unknown condition (or none at all) that is younger than
/// [`RECONCILE_GRACE_SECONDS`]. A False condition (a missing node class) is never graced.
fn awaiting_reconciliation(pool: &NodePool, nr: &NotReady, now: DateTime<Utc>) -> bool {
    if nr.status != "Unknown" || pool.metadata.deletion_timestamp.is_some() {
        return false;
    }
    let since = condition(&pool.status.conditions, &nr.condition)
        .and_then(|c| c.last_transition_time)
        .or(pool.metadata.creation_timestamp);
    since.is_some_and(|t| now - t < Duration::seconds(RECONCILE_GRACE_SECONDS))
}

pub(super) fn pool_readiness(ctx: &Context) -> Vec<Finding> {
    let c = ctx.cluster;
    let waiting = !ctx.pass.pending.is_empty();
    let sev = if waiting {
        Severity::Critical
    } else {
        Severity::Warning
    };
    let mut out = Vec::new();
    let mut any_ready = false;
    for pool in c.nodepools.values() {
        if let Some(f) = registration_unhealthy(pool) {
            out.push(f);
        }
        match pool_not_ready(pool) {
            None => any_ready = true,
            Some(nr) if nr.category == Category::Other => {} // static pools are not meant to take pods
            // Just created or changed: Karpenter has yet to reconcile it (a second or so).
            Some(nr) if awaiting_reconciliation(pool, &nr, ctx.pass.now) => any_ready = true,
            Some(nr) => {
                let since = condition(&pool.status.conditions, &nr.condition)
                    .and_then(|c| c.last_transition_time);
                let hint = match (nr.condition.as_str(), nr.reason.as_deref()) {
                    (_, Some("NodeClassNotFound")) => " Create the node class it references, or fix spec.template.spec.nodeClassRef.".to_string(),
                    (_, Some("NodeClassTerminating")) => " Its node class is being deleted: point the pool at another.".to_string(),
                    // Karpenter copies the class's Ready reason here; its own conditions say why.
                    ("NodeClassReady", _) => class_problem(c, pool)
                        .unwrap_or_else(|| " Check the node class's own conditions.".to_string()),
                    _ => String::new(),
                };
                out.push(
                    Finding::new(
                        Code::NodepoolNotReady,
                        sev,
                        ObjectRef::of(ObjectKind::NodePool, &pool.metadata),
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
                if waiting { format!(" ({} pods wait)", ctx.pass.pending.len()) } else { String::new() }
            )
        };
        out.push(Finding::new(
            Code::NoNodepoolReady,
            sev,
            ObjectRef::cluster(ObjectKind::Cluster, "karpenter"),
            msg,
        ));
    }
    out
}

/// `nodepool-registration-unhealthy`: Karpenter sets NodeRegistrationHealthy False when
/// most of a pool's recent NodeClaims failed to launch or to register (v1.14.1
/// nodeclaim/lifecycle liveness), with the launch's reason and message. It is the lasting
/// record of launch failures: the claims themselves are deleted after 5 or 15 minutes. It
/// is informational to Karpenter (Ready does not read it), True again once registrations
/// succeed, and Unknown again when the pool or its node class changes.
fn registration_unhealthy(pool: &NodePool) -> Option<Finding> {
    let cond = condition(&pool.status.conditions, "NodeRegistrationHealthy")
        .filter(|c| c.status == "False")?;
    let what = [cond.reason.as_deref(), cond.message.as_deref()]
        .into_iter()
        .flatten()
        .filter(|s| !s.is_empty())
        .collect::<Vec<_>>()
        .join(": ");
    Some(
        Finding::new(
            Code::NodepoolRegistrationUnhealthy,
            Severity::Warning,
            ObjectRef::of(ObjectKind::NodePool, &pool.metadata),
            format!(
                "NodeRegistrationHealthy=False{}: most nodes Karpenter launched from this pool lately failed to launch or to join the cluster; it is cleared when they succeed again, or when the pool or its node class changes",
                if what.is_empty() { String::new() } else { format!(" ({what})") }
            ),
        )
        .pool(Some(&pool.metadata.name))
        .since(cond.last_transition_time)
        .details(serde_json::json!({"reason": cond.reason, "message": cond.message})),
    )
}

pub(super) fn no_instance_types(ctx: &Context) -> Vec<Finding> {
    let c = ctx.cluster;
    c.nodepools
        .values()
        .filter_map(|pool| {
            let m = &pool.metadata;
            let e = c
                .events_for(ObjectKind::NodePool, None, &m.name, &m.uid)
                .into_iter()
                .find(|e| {
                    e.from_karpenter()
                        && e.is(Reason::NoCompatibleInstanceTypes)
                        && ctx.within(e.seen(), Duration::hours(1))
                });
            // kelp's own answer from the catalogue, where it has one; Karpenter's event
            // (written when it drops the pool) is the evidence.
            let computed = ctx.without_types.get(&m.name);
            let message = computed.or(e.map(|e| &e.message))?;
            let source = ctx.pass.catalog.as_ref().filter(|_| computed.is_some());
            Some(
                Finding::new(
                    Code::NodepoolNoInstanceTypes,
                    Severity::Warning,
                    ObjectRef::of(ObjectKind::NodePool, m),
                    format!(
                        "{message} (widen the pool's instance requirements or relax minValues)"
                    ),
                )
                .pool(Some(&m.name))
                .since(e.and_then(|e| e.seen()))
                .details(serde_json::json!({
                    "event": e.map(|e| &e.message),
                    "catalog": source.map(|c| c.source),
                })),
            )
        })
        .collect()
}

#[cfg(test)]
mod grace_tests {
    use crate::findings::Code;
    use crate::model::Cluster;
    use chrono::DateTime;

    const NOW: &str = "2026-11-21T10:00:00Z";

    /// The codes a pass finds in `yaml`, at NOW.
    fn codes(yaml: &str) -> Vec<Code> {
        let mut c = Cluster::default();
        crate::source::load_str("t.yaml", yaml, &mut c).unwrap();
        let now = DateTime::parse_from_rfc3339(NOW).unwrap().to_utc();
        crate::analysis::analyze(&c, now)
            .findings
            .iter()
            .map(|f| f.code)
            .collect()
    }

    fn pool(created: &str, status: &str) -> String {
        format!("apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {{name: web, creationTimestamp: \"{created}\"}}\nspec: {{template: {{spec: {{requirements: []}}}}}}\n{status}")
    }

    fn pod(created: &str, transition: &str, extra: &str) -> String {
        format!("---\napiVersion: v1\nkind: Pod\nmetadata: {{name: p, namespace: d, creationTimestamp: \"{created}\"}}\nspec: {{containers: [{{name: a, resources: {{requests: {{cpu: 100m}}}}}}]}}\nstatus:\n  phase: Pending\n  conditions: [{{type: PodScheduled, status: \"False\", reason: Unschedulable, lastTransitionTime: \"{transition}\"}}]\n{extra}")
    }

    const READY: &str = "status: {conditions: [{type: Ready, status: \"True\"}]}\n";

    #[test]
    fn a_pool_karpenter_has_yet_to_reconcile_is_not_called_not_ready() {
        let unknown = |t: &str| {
            format!("status: {{conditions: [{{type: Ready, status: Unknown, reason: AwaitingReconciliation, lastTransitionTime: \"{t}\"}}]}}\n")
        };
        // Created a second ago, no status yet; patched five seconds ago: not a finding.
        assert!(!codes(&pool("2026-11-21T09:59:59Z", "")).contains(&Code::NodepoolNotReady));
        assert!(!codes(&pool(
            "2026-11-01T00:00:00Z",
            &unknown("2026-11-21T09:59:55Z")
        ))
        .iter()
        .any(|c| matches!(c, Code::NodepoolNotReady | Code::NoNodepoolReady)));
        // Unknown for a minute, or never reconciled: it is.
        assert!(codes(&pool(
            "2026-11-01T00:00:00Z",
            &unknown("2026-11-21T09:59:00Z")
        ))
        .contains(&Code::NodepoolNotReady));
        assert!(codes(&pool("2026-11-21T09:58:00Z", "")).contains(&Code::NodepoolNotReady));
        // False is Karpenter's answer, however fresh.
        let missing = "status: {conditions: [{type: NodeClassReady, status: \"False\", reason: NodeClassNotFound, lastTransitionTime: \"2026-11-21T09:59:59Z\"}, {type: Ready, status: \"False\", lastTransitionTime: \"2026-11-21T09:59:59Z\"}]}\n";
        assert!(codes(&pool("2026-11-21T09:59:58Z", missing)).contains(&Code::NodepoolNotReady));
    }

    #[test]
    fn a_pod_is_given_karpenters_batch_window_before_it_is_reported() {
        let t = "2026-11-21T09:59:55Z";
        let fresh = format!("{}{}", pool("2026-11-01T00:00:00Z", READY), pod(t, t, ""));
        assert!(
            !codes(&fresh).contains(&Code::PodUnschedulable),
            "5 s, a pool fits, no answer yet"
        );
        let t = "2026-11-21T09:59:30Z";
        let waited = format!("{}{}", pool("2026-11-01T00:00:00Z", READY), pod(t, t, ""));
        assert!(
            codes(&waited).contains(&Code::PodUnschedulable),
            "30 s without an answer"
        );
        // No pool can take it: that is known at once.
        let t = "2026-11-21T09:59:55Z";
        let nowhere = format!(
            "{}{}",
            pool("2026-11-01T00:00:00Z", READY),
            pod(t, t, "").replace("containers:", "nodeSelector: {team: none}, containers:")
        );
        assert!(
            codes(&nowhere).contains(&Code::PodUnschedulable),
            "no pool fits"
        );
    }
}

#[cfg(test)]
mod usage_tests {
    use super::PoolUsage;
    use crate::model::Cluster;

    fn claim(name: &str, extra_meta: &str, status: &str) -> String {
        format!("---\napiVersion: karpenter.sh/v1\nkind: NodeClaim\nmetadata: {{name: {name}, labels: {{karpenter.sh/nodepool: web}}{extra_meta}}}\nspec: {{nodeClassRef: {{group: karpenter.k8s.aws, kind: EC2NodeClass, name: d}}}}\nstatus: {{capacity: {{cpu: \"4\"}}{status}}}\n")
    }

    fn usage(yaml: &str) -> PoolUsage {
        let pool = "apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: web}\nspec: {limits: {nodes: \"2\"}, template: {spec: {requirements: []}}}\n";
        let mut c = Cluster::default();
        crate::source::load_str("t.yaml", &format!("{pool}{yaml}"), &mut c).unwrap();
        PoolUsage::of(&c, &c.nodepools["web"])
    }

    #[test]
    fn deleting_claims_do_not_count_against_a_pools_limits() {
        let live = claim("a", "", "");
        let deleting = claim(
            "b",
            ", deletionTimestamp: \"2026-11-21T09:00:00Z\", finalizers: [karpenter.sh/termination]",
            "",
        );
        let terminating = claim(
            "c",
            "",
            ", conditions: [{type: InstanceTerminating, status: \"True\"}]",
        );
        let u = usage(&format!("{live}{deleting}{terminating}"));
        assert_eq!(u.nodes, 1);
        assert_eq!(u.counted().get("nodes"), 1.0);
        assert_eq!(u.counted().get("cpu"), 4.0);
        // Only deleting claims: none counts, and their nodes are not counted instead.
        assert_eq!(usage(&deleting).nodes, 0);
        // A claim whose node a disruption command has tainted is marked for deletion.
        let picked = claim("d", "", ", nodeName: n-d");
        let node = "---\napiVersion: v1\nkind: Node\nmetadata: {name: n-d, labels: {karpenter.sh/nodepool: web}}\nspec: {taints: [{key: karpenter.sh/disrupted, effect: NoSchedule}]}\n";
        assert_eq!(usage(&format!("{live}{picked}{node}")).nodes, 1);
        assert_eq!(usage(&format!("{live}{picked}")).nodes, 2);
    }
}
