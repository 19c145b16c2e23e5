//! The impact of a NodePool change before it is applied: which nodes Karpenter will mark
//! Drifted and why, computed as Karpenter computes it, and the rollout its budgets allow.
//!
//! Karpenter's drift check (`isDrifted`), for a launched NodeClaim, takes the first of:
//! - **static drift** (`NodePoolDrifted`): the claim's `karpenter.sh/nodepool-hash` differs
//!   from the pool's, both at the same hash version; a claim without the annotations is
//!   never statically drifted. kelp hashes the changed template itself
//!   ([`crate::karpenter::hash`]).
//! - **requirement drift** (`RequirementsDrifted`): the claim's labels no longer satisfy the
//!   pool's requirements ([`labels_fit`]).
//!
//! Then the provider's own drift, which only an EC2NodeClass change touches
//! ([`nodeclass`]): its hash (`NodeClassDrift`), then what it resolves in EC2. A claim
//! Karpenter already marked Drifted stays so, with its reason.
//!
//! A drifted node is replaced one command at a time, as many at once as the pool's budgets
//! allow for `Drifted` (Karpenter's drift commands carry a single candidate): the rollout
//! runs in waves of that size, and waits while a budget window allows none.

use chrono::{DateTime, Duration, Utc};
use serde::Serialize;

use super::disruption::budget::budget_counts;
use super::provisioning::PoolSet;
use crate::karpenter::budgets::{allowed_disruptions, DisruptionReason};
use crate::karpenter::hash::{self, Unhashable};
use crate::karpenter::requirements::{labels_fit, Requirements};
use crate::model::*;

pub mod cost;
pub mod nodeclass;
pub mod pods;
pub mod progress;

pub use cost::Cost;
pub use nodeclass::{ClassImpact, ProposedClass};
pub use pods::{PodChange, PodsImpact};
pub use progress::{progress, Progress};

/// A blocker that holds a drifting node until it lets go: a do-not-disrupt pod or node, a
/// PDB allowing none. (A nomination or an uninitialized node passes in seconds, and the
/// budget is what the waves count.)
pub fn holds(b: &super::disruption::Blocker) -> bool {
    use crate::karpenter::events::BlockerKind as K;
    matches!(b.kind, K::DoNotDisruptPod | K::DoNotDisruptNode | K::Pdb)
}

/// A blocker worth naming beside a drifting node: any but the budget.
pub fn named(b: &super::disruption::Blocker) -> bool {
    b.kind != crate::karpenter::events::BlockerKind::Budget
}

/// A NodePool as a change would leave it, with its template's hash (or why kelp cannot
/// compute it).
#[derive(Debug, Clone)]
pub struct Proposed {
    pub pool: NodePool,
    pub hash: Result<u64, Unhashable>,
}

/// Why Karpenter will mark a node Drifted, in its own words.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub enum DriftReason {
    NodePoolDrifted,
    RequirementsDrifted,
    /// The AWS provider's: a field of the EC2NodeClass its hash reads changed.
    NodeClassDrift,
}

/// What the change does to one NodeClaim of a changed pool.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeImpact {
    /// The node's name (the claim's `status.nodeName`), or the claim's while none registered.
    pub name: String,
    pub nodeclaim: String,
    pub nodepool: String,
    /// The reason Karpenter will give, or `None` when it will not drift this node.
    pub drift: Option<DriftReason>,
    /// Why kelp cannot tell (`drift` is then `None` and means "not known").
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unknown: Option<String>,
    /// Karpenter marked it Drifted before the change (its reason), so it goes either way.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub already: Option<String>,
    /// For requirement drift: the labels that no longer fit, in Karpenter's words.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub because: Vec<String>,
    /// For a node that will drift: what will hold its replacement besides the budget (a
    /// do-not-disrupt pod or node, a PDB allowing none; a nomination, for seconds), in
    /// kelp's words.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub held_by: Vec<String>,
    /// Karpenter judges drift only once the claim is launched.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub not_launched: bool,
}

/// One field group of the pool that the change touches, and what a change there drifts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FieldChange {
    pub field: String,
    /// `static` (in the hash: every node), `requirements` (nodes whose labels no longer
    /// fit), `provider` (an EC2NodeClass selector: what EC2 resolves it to decides), or
    /// `nothing`.
    pub drifts: &'static str,
}

/// The rollout the pool's budgets allow for `Drifted`, after the change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Waves {
    /// Nodes replaced at once; `None`: no budget limits drift (all at once).
    pub per_wave: Option<usize>,
    /// Waves to replace every drifting node.
    pub count: usize,
    /// Replacements the budgets allow to start now (after nodes already unavailable).
    pub allowed_now: usize,
    /// When nothing is allowed now: when a budget window next allows some, within a week.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub opens_at: Option<DateTime<Utc>>,
    /// Nothing allowed now nor in the next 7 days, or a budget Karpenter cannot read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub blocked: Option<String>,
    /// How long the rollout takes: the wait for a window, then `count` waves of
    /// `wave_seconds` each. None when blocked.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub eta_seconds: Option<i64>,
    /// The time one wave takes, as the estimate assumed.
    pub wave_seconds: i64,
    /// Drifting nodes held by blockers of their own: not in `count` nor the ETA, which hold
    /// for the others; they wait until their blockers let go (or the
    /// terminationGracePeriod forces them).
    pub blocked_nodes: usize,
}

/// What one drift wave takes by default: a replacement launched and initialized, the old
/// node drained and gone. Measured on the project's test cluster (the real Karpenter v1.15,
/// kwok nodes that start at once, pods with no grace period: `tests/e2e_rollout.rs` saw three
/// waves in 39 s on 2026-12-07); a cloud's launches and drains take minutes, which
/// `what-if --wave-time` says.
pub const WAVE_TIME: Duration = Duration::seconds(15);

/// What the change does to one NodePool.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PoolImpact {
    pub name: String,
    /// Not in the cluster yet: nothing to drift.
    pub new: bool,
    /// Judged because the EC2NodeClass it launches from changes (the pool itself does not).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub via_nodeclass: Option<String>,
    pub changes: Vec<FieldChange>,
    /// The hash Karpenter holds for the pool now, and the one the change gives.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hash_now: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hash_after: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hash_unknown: Option<String>,
    pub nodes: usize,
    pub drifting: usize,
    pub unknown: usize,
    pub waves: Option<Waves>,
    /// The drifting nodes' $/h against their replacements'.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cost: Option<Cost>,
    /// The pool's terminationGracePeriod after the change: a held node is drained anyway
    /// that long after its replacement starts (PDBs and do-not-disrupt give way).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub termination_grace_period: Option<String>,
}

/// The whole answer, each pool once and each of their nodes once.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Impact {
    pub nodepools: Vec<PoolImpact>,
    /// The EC2NodeClasses changed, with the pools that launch from them.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub nodeclasses: Vec<ClassImpact>,
    pub nodes: Vec<NodeImpact>,
    pub pods: PodsImpact,
}

impl Impact {
    /// Nodes that will drift.
    pub fn drifting(&self) -> usize {
        self.nodes.iter().filter(|n| n.drift.is_some()).count()
    }
    /// Nodes kelp cannot judge.
    pub fn unknown(&self) -> usize {
        self.nodes.iter().filter(|n| n.unknown.is_some()).count()
    }
}

/// The impact of `proposed` on `c` at `now`, each wave taking [`WAVE_TIME`].
pub fn impact(c: &Cluster, proposed: &[Proposed], now: DateTime<Utc>) -> Impact {
    impact_with(c, proposed, now, WAVE_TIME)
}

/// [`impact`] with each drift wave taking `wave`.
pub fn impact_with(
    c: &Cluster,
    proposed: &[Proposed],
    now: DateTime<Utc>,
    wave: Duration,
) -> Impact {
    impact_of(c, proposed, &[], now, wave)
}

/// The impact of NodePool and EC2NodeClass changes together: the changed pools, and every
/// pool that launches from a changed class (as it is, unless it changes too).
pub fn impact_of(
    c: &Cluster,
    pools: &[Proposed],
    classes: &[ProposedClass],
    now: DateTime<Utc>,
    wave: Duration,
) -> Impact {
    let mut out = Impact {
        nodepools: Vec::new(),
        nodeclasses: Vec::new(),
        nodes: Vec::new(),
        pods: PodsImpact::default(),
    };
    let class_changes: Vec<nodeclass::ClassChange> = classes
        .iter()
        .map(|p| nodeclass::ClassChange::new(c, p))
        .collect();
    let class_of = |pool: &NodePool| {
        let r = pool.spec.template.spec.node_class_ref.as_ref()?;
        let r = Some(r).filter(|r| r.kind == "EC2NodeClass")?;
        class_changes.iter().find(|ch| ch.proposed.name == r.name)
    };
    // The pools a class change reaches that do not change themselves, as they stand.
    let mut proposed: Vec<Proposed> = pools.to_vec();
    for pool in c.nodepools.values() {
        let name = &pool.metadata.name;
        if class_of(pool).is_some() && !pools.iter().any(|p| &p.pool.metadata.name == name) {
            proposed.push(Proposed {
                pool: pool.clone(),
                hash: unchanged_hash(pool),
            });
        }
    }
    for ch in &class_changes {
        let on: Vec<String> = proposed
            .iter()
            .filter(|p| class_of(&p.pool).is_some_and(|x| x.proposed.name == ch.proposed.name))
            .map(|p| p.pool.metadata.name.clone())
            .collect();
        out.nodeclasses.push(ch.impact(on));
    }
    // What holds each drifting node besides the budget (the waves count that).
    let inputs = super::disruption::NodeInputs::new(c, now);
    for p in &proposed {
        let name = &p.pool.metadata.name;
        let current = c.nodepools.get(name);
        let class = class_of(&p.pool);
        let mut nodes: Vec<NodeImpact> = claims_of(c, name)
            .map(|claim| judge(claim, p, class))
            .collect();
        let mut blocked = 0;
        for n in nodes.iter_mut().filter(|n| n.drift.is_some()) {
            if let Some(node) = c.nodes.get(&n.name) {
                let state = super::disruption::node_disruption(c, node, now, &inputs);
                n.held_by = state
                    .blockers
                    .iter()
                    .filter(|b| named(b))
                    .map(|b| b.message.clone())
                    .collect();
                blocked += usize::from(state.blockers.iter().any(holds));
            }
        }
        let drifting = nodes.iter().filter(|n| n.drift.is_some()).count();
        let unknown = nodes.iter().filter(|n| n.unknown.is_some()).count();
        let hash_now = current.and_then(|cur| {
            cur.metadata
                .annotation(hash::HASH_ANNOTATION)
                .map(str::to_string)
        });
        let via_nodeclass = class
            .filter(|_| !pools.iter().any(|q| &q.pool.metadata.name == name))
            .map(|ch| ch.proposed.name.clone());
        out.nodepools.push(PoolImpact {
            name: name.clone(),
            new: current.is_none(),
            via_nodeclass,
            changes: current.map(|cur| changes(cur, &p.pool)).unwrap_or_default(),
            hash_after: p.hash.as_ref().ok().map(u64::to_string),
            hash_unknown: p.hash.as_ref().err().map(ToString::to_string),
            hash_now,
            nodes: nodes.len(),
            drifting,
            unknown,
            waves: (drifting > 0).then(|| {
                let mut w = waves(c, &p.pool, drifting - blocked, now, wave);
                w.blocked_nodes = blocked;
                if blocked == drifting {
                    w.eta_seconds = None;
                }
                w
            }),
            cost: None,
            termination_grace_period: p.pool.spec.template.spec.termination_grace_period.clone(),
        });
        out.nodes.extend(nodes);
    }
    // The pools as the change leaves them keep their status until Karpenter reconciles
    // them; a new pool is taken as Ready, as a manifest without status is.
    let after: Vec<NodePool> = pools
        .iter()
        .map(|p| {
            let mut pool = p.pool.clone();
            pool.status = match c.nodepools.get(&pool.metadata.name) {
                Some(cur) => cur.status.clone(),
                None => NodePoolStatus {
                    conditions: vec![Condition {
                        type_: "Ready".into(),
                        status: "True".into(),
                        reason: Some("AssumedNew".into()),
                        message: None,
                        last_transition_time: None,
                    }],
                    ..Default::default()
                },
            };
            pool
        })
        .collect();
    let catalog = super::catalog::resolve(c, super::provisioning::cluster_provider(c));
    let before_set = PoolSet::new(c).with_catalog(catalog.as_ref());
    let after_catalog = with_classes(c, catalog.as_ref(), classes);
    let after_set = PoolSet::with_changed(c, &after).with_catalog(after_catalog.as_ref());
    let drifting: Vec<&str> = out
        .nodes
        .iter()
        .filter(|n| n.drift.is_some())
        .map(|n| n.name.as_str())
        .collect();
    out.pods = pods::pods(c, &before_set, &after_set, &drifting);
    for p in out.nodepools.iter_mut().filter(|p| p.drifting > 0) {
        let mine: Vec<&str> = out
            .nodes
            .iter()
            .filter(|n| n.nodepool == p.name && n.drift.is_some())
            .map(|n| n.name.as_str())
            .collect();
        p.cost = Some(cost::cost(c, &after_set, &mine));
    }
    out
}

/// A pool the change does not touch keeps the hash Karpenter stamped on it (so no claim
/// is called drifted by kelp's own hashing), else kelp computes it.
fn unchanged_hash(pool: &NodePool) -> Result<u64, Unhashable> {
    if let Some(h) = pool
        .metadata
        .annotation(hash::HASH_ANNOTATION)
        .and_then(|h| h.parse().ok())
    {
        return Ok(h);
    }
    let template = serde_json::to_value(&pool.spec.template).unwrap_or_default();
    hash::template_hash(&hash::with_defaults(&template))
}

/// The catalogue after the class changes: each changed class's types under its new
/// settings (kubelet, AMI family, root volume).
fn with_classes(
    c: &Cluster,
    catalog: Option<&std::sync::Arc<Catalog>>,
    classes: &[ProposedClass],
) -> Option<std::sync::Arc<Catalog>> {
    let catalog = catalog?;
    let metrics = c.metrics.as_ref();
    if classes.is_empty() || catalog.source != CatalogSource::KarpenterMetrics || metrics.is_none()
    {
        return Some(catalog.clone());
    }
    let mut after = (**catalog).clone();
    let default = crate::karpenter::aws::Settings::default();
    for p in classes {
        let settings = crate::model::nodeclass::aws_settings_of(&p.spec);
        if settings == default {
            after.variants.remove(&p.name);
        } else if let Some(m) = metrics {
            let variant = super::catalog::with_settings(c, m, &settings);
            after
                .variants
                .insert(p.name.clone(), std::sync::Arc::new(variant));
        }
    }
    Some(std::sync::Arc::new(after))
}

/// The NodeClaims Karpenter counts in a pool (its `karpenter.sh/nodepool` label), by name.
fn claims_of<'a>(c: &'a Cluster, pool: &'a str) -> impl Iterator<Item = &'a NodeClaim> + 'a {
    c.nodeclaims
        .values()
        .map(|claim| claim.as_ref())
        .filter(move |claim| Cluster::pool_of(&claim.metadata.labels) == Some(pool))
}

fn judge(claim: &NodeClaim, p: &Proposed, class: Option<&nodeclass::ClassChange>) -> NodeImpact {
    let conds = &claim.status.conditions;
    let mut n = NodeImpact {
        name: claim
            .status
            .node_name
            .clone()
            .unwrap_or_else(|| claim.metadata.name.clone()),
        nodeclaim: claim.metadata.name.clone(),
        nodepool: p.pool.metadata.name.clone(),
        drift: None,
        unknown: None,
        already: condition(conds, "Drifted")
            .filter(|c| c.is_true())
            .map(|c| c.reason.clone().unwrap_or_else(|| "Drifted".into())),
        because: Vec::new(),
        held_by: Vec::new(),
        not_launched: !is_true(conds, "Launched"),
    };
    if n.not_launched {
        return n;
    }
    // Static drift first, as Karpenter checks it.
    let stamped = (
        claim.metadata.annotation(hash::HASH_ANNOTATION),
        claim.metadata.annotation(hash::HASH_VERSION_ANNOTATION),
    );
    let mut static_unknown = None;
    if let (Some(have), Some(version)) = stamped {
        if version == hash::HASH_VERSION {
            match &p.hash {
                Ok(h) if h.to_string() != have => n.drift = Some(DriftReason::NodePoolDrifted),
                Ok(_) => {}
                Err(e) => static_unknown = Some(format!("the new template's hash: {e}")),
            }
        }
    }
    if n.drift.is_some() {
        return n;
    }
    let spec = &p.pool.spec.template.spec;
    match Requirements::from_requirements(&spec.requirements) {
        Ok(reqs) => {
            if let Err(misfits) = labels_fit(&claim.metadata.labels, &reqs) {
                n.drift = Some(DriftReason::RequirementsDrifted);
                n.because = misfits.iter().map(ToString::to_string).collect();
                return n;
            }
        }
        Err(e) => {
            static_unknown.get_or_insert(format!("the new requirements: {e}"));
        }
    }
    // Then the provider's, where the pool's EC2NodeClass changes.
    if let Some(class) = class {
        match class.judge(claim) {
            Ok(true) => {
                n.drift = Some(DriftReason::NodeClassDrift);
                return n;
            }
            Ok(false) => {}
            Err(why) => {
                static_unknown.get_or_insert(why);
            }
        }
    }
    n.unknown = static_unknown;
    n
}

/// What differs between the pool as it is and as proposed, by field group, with what a
/// change there drifts.
fn changes(now: &NodePool, after: &NodePool) -> Vec<FieldChange> {
    let (a, b) = (&now.spec, &after.spec);
    let (ta, tb) = (&a.template.spec, &b.template.spec);
    let sorted = |t: &SharedTaints| {
        let mut v: Vec<String> = t.iter().map(|t| format!("{t:?}")).collect();
        v.sort();
        v
    };
    let mut out = Vec::new();
    let mut add = |changed: bool, field: &'static str, drifts: &'static str| {
        if changed {
            out.push(FieldChange {
                field: field.to_string(),
                drifts,
            });
        }
    };
    add(
        a.template.metadata.labels != b.template.metadata.labels,
        "spec.template.metadata.labels",
        "static",
    );
    add(
        sorted(&ta.taints) != sorted(&tb.taints),
        "spec.template.spec.taints",
        "static",
    );
    add(
        sorted(&ta.startup_taints) != sorted(&tb.startup_taints),
        "spec.template.spec.startupTaints",
        "static",
    );
    add(
        ta.node_class_ref != tb.node_class_ref,
        "spec.template.spec.nodeClassRef",
        "static",
    );
    add(
        ta.expire_after.as_deref().unwrap_or("720h")
            != tb.expire_after.as_deref().unwrap_or("720h"),
        "spec.template.spec.expireAfter",
        "static",
    );
    add(
        ta.termination_grace_period != tb.termination_grace_period,
        "spec.template.spec.terminationGracePeriod",
        "static",
    );
    add(
        ta.requirements != tb.requirements,
        "spec.template.spec.requirements",
        "requirements",
    );
    add(a.limits != b.limits, "spec.limits", "nothing");
    add(a.weight != b.weight, "spec.weight", "nothing");
    add(a.disruption != b.disruption, "spec.disruption", "nothing");
    add(a.replicas != b.replicas, "spec.replicas", "nothing");
    out
}

/// How far ahead a closed budget window is searched for its opening.
const LOOK_AHEAD: Duration = Duration::days(7);

fn waves(
    c: &Cluster,
    pool: &NodePool,
    drifting: usize,
    now: DateTime<Utc>,
    wave: Duration,
) -> Waves {
    let (total, unavailable) = budget_counts(c, &pool.metadata.name);
    let budgets = pool.spec.disruption.budgets.as_deref();
    let at = |t: DateTime<Utc>, unavailable: usize| {
        allowed_disruptions(budgets, DisruptionReason::Drifted, t, total, unavailable)
    };
    let allowed = at(now, unavailable);
    if let Some(e) = &allowed.error {
        return Waves {
            per_wave: Some(0),
            count: 0,
            allowed_now: 0,
            opens_at: None,
            blocked: Some(format!(
                "Karpenter cannot read the budgets ({e}): it allows none"
            )),
            eta_seconds: None,
            wave_seconds: wave.num_seconds(),
            blocked_nodes: 0,
        };
    }
    let mut w = Waves {
        per_wave: allowed.limit,
        count: 0,
        allowed_now: allowed.allowed,
        opens_at: None,
        blocked: None,
        eta_seconds: None,
        wave_seconds: wave.num_seconds(),
        blocked_nodes: 0,
    };
    let scheduled = budgets.is_some_and(|b| b.iter().any(|b| b.schedule.is_some()));
    if (allowed.limit == Some(0) || allowed.allowed == 0) && scheduled {
        // Minute by minute from the minute's start, as the cron schedules are: the first
        // minute that allows one.
        let mut t = now
            - Duration::nanoseconds(now.timestamp_subsec_nanos().into())
            - Duration::seconds(now.timestamp() % 60);
        let end = now + LOOK_AHEAD;
        while t < end {
            t += Duration::minutes(1);
            let a = at(t, unavailable);
            if a.allowed > 0 {
                w.opens_at = Some(t);
                w.per_wave = a.limit;
                break;
            }
        }
    }
    if w.allowed_now == 0 && w.opens_at.is_none() {
        {
            w.blocked = Some(if allowed.limit == Some(0) {
                "the budgets allow no drift replacement now nor in the next 7 days".into()
            } else {
                format!(
                    "{unavailable} node(s) already unavailable use the whole budget, and no window widens it in the next 7 days"
                )
            });
        }
    }
    w.count = match w.per_wave {
        _ if drifting == 0 => 0,
        None => 1,
        Some(0) => 0,
        Some(k) => drifting.div_ceil(k),
    };
    if w.blocked.is_none() {
        let wait = w.opens_at.map_or(0, |t| (t - now).num_seconds().max(0));
        w.eta_seconds = Some(wait + w.count as i64 * wave.num_seconds());
    }
    w
}

#[cfg(test)]
mod tests;
