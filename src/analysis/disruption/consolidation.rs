//! Why a node is, or is not, consolidated: one answer per Karpenter node per pass.
//!
//! The order is Karpenter's own (v1.14.1 `disruption/consolidation.go`): a node Karpenter
//! is already removing; node- and pod-level blockers (checked before any method looks at
//! a node); a static pool; `consolidateAfter: Never`; an empty node (Emptiness); policy
//! `WhenEmpty`; not yet `Consolidatable`; the pool's budget. Past those, Karpenter's own
//! decision where it wrote one (`Unconsolidatable`, `ConsolidationRejected`,
//! `ConsolidationCandidate`, `ConsolidationApproved`), else kelp's: would the node's pods
//! fit on the other nodes ([`super::super::fit`])? If they fit, Karpenter can delete it;
//! if not, only a cheaper replacement could consolidate it, which needs an instance-type
//! catalogue kelp does not have, and the answer says so.

use chrono::{DateTime, Duration, Utc};
use serde::Serialize;

use super::super::clock::Clock;
use super::super::fit::{Plan, Room};
use super::super::provisioning::PoolSet;
use super::budget::{allowed_of, budget_message};
use super::replace::{self, Replacement};
use super::verdict::Blocker;
use crate::karpenter::budgets::DisruptionReason;
use crate::karpenter::consolidation::{self as karpenter, PodMiss, Reason};
use crate::karpenter::duration::{self, NillableDuration};
use crate::karpenter::events::{BlockerKind, Reason as EventReason};
use crate::model::*;

/// How far a node is from being consolidated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum State {
    /// Karpenter is removing or replacing it now.
    Disrupting,
    /// Karpenter can consolidate it: it named it a candidate, or kelp finds its pods fit
    /// on the other nodes (or it is empty).
    Candidate,
    /// Karpenter considers it, and something holds it: the reason says what.
    Blocked,
    /// kelp cannot tell (a pod it cannot place or rule out).
    Unknown,
    /// Karpenter does not consider it (yet): the reason says why.
    NotConsidered,
}

/// Whose answer it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Source {
    Karpenter,
    Kelp,
}

/// Karpenter's newest consolidation event about the node, as evidence.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Evidence {
    pub reason: String,
    pub message: String,
    pub seen: Option<DateTime<Utc>>,
}

/// One node's consolidation answer.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Consolidation {
    pub state: State,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<Reason>,
    pub source: Source,
    /// One sentence.
    pub message: String,
    /// Pods that would not schedule elsewhere, with why.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub pods: Vec<PodMiss>,
    /// What consolidating it would save, where Karpenter or kelp knows.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub savings_per_hour: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub event: Option<Evidence>,
    /// kelp's own check where Karpenter's event gives the answer: shown, so that a
    /// disagreement is seen, not hidden.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kelp_check: Option<String>,
    /// Since when Karpenter has considered it (its Consolidatable condition).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub considered_since: Option<DateTime<Utc>>,
    /// The countdown that ends the message, if it has one.
    #[serde(skip)]
    pub countdown: Option<Countdown>,
}

/// A countdown at the end of a message: to when, and the byte its words start at. Its
/// words change more often than the answer (each second below an hour); a reader that
/// keeps the answer writes them again ([`Consolidation::recount`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Countdown {
    pub at: DateTime<Utc>,
    pub from: usize,
}

/// Karpenter re-publishes an `Unconsolidatable` event every 15 minutes while it holds: an
/// older one may describe a node that has changed since.
const EVENT_FRESH_MINUTES: i64 = 20;

/// Karpenter's disruption events kelp reads as consolidation decisions.
const DECISIONS: &[EventReason] = &[
    EventReason::Unconsolidatable,
    EventReason::ConsolidationRejected,
    EventReason::ConsolidationCandidate,
    EventReason::ConsolidationApproved,
];

/// What the node's other analysis already found, for its consolidation answer.
pub(super) struct Facts<'a> {
    pub node: &'a Node,
    pub claim: Option<&'a NodeClaim>,
    pub pool: Option<&'a NodePool>,
    pub empty: bool,
    pub consolidatable: bool,
    pub deleting: bool,
    pub blockers: &'a [Blocker],
    /// Karpenter's events about the node and its claim.
    pub events: &'a [&'a Event],
    pub budget_counts: (usize, usize),
    pub price: Option<f64>,
}

impl Consolidation {
    fn kelp(state: State, reason: Option<Reason>, message: String) -> Self {
        Consolidation {
            state,
            reason,
            source: Source::Kelp,
            message,
            pods: Vec::new(),
            savings_per_hour: None,
            event: None,
            kelp_check: None,
            considered_since: None,
            countdown: None,
        }
    }

    /// The message with its countdown's words as of `clock`'s instant (noting when they
    /// next change), if it has a countdown and they differ from the words it has.
    pub fn recount(&self, clock: &Clock) -> Option<String> {
        let c = self.countdown?;
        let words = clock.countdown(c.at);
        let (head, was) = self.message.split_at_checked(c.from)?;
        (was != words).then(|| format!("{head}{words}"))
    }

    /// The reason it is not consolidated, as the metric labels it: None for a candidate
    /// and a node being disrupted.
    pub fn unconsolidated(&self) -> Option<&'static str> {
        match (self.state, self.reason) {
            (State::Candidate | State::Disrupting, _) => None,
            (State::Unknown, _) | (_, None) => Some("unknown"),
            (_, Some(r)) => Some(r.as_str()),
        }
    }

    /// Whether Karpenter would act but for blockers or the budget.
    pub fn held_by_blockers(&self) -> bool {
        self.state == State::Candidate
            || matches!(self.reason, Some(Reason::Blocked | Reason::Budget))
    }
}

/// The node's consolidation answer at `now`.
pub(super) fn judge<'r, 'c: 'r>(
    c: &Cluster,
    f: &Facts,
    room: &dyn Fn() -> Option<&'r Room<'c>>,
    pools: &dyn Fn() -> Option<&'r PoolSet<'c>>,
    clock: &Clock,
) -> Consolidation {
    let latest = newest_decision(f, clock);
    let mut out = decide(c, f, room, pools, clock, latest.as_ref());
    out.event = out.event.take().or(latest);
    out
}

fn decide<'r, 'c: 'r>(
    c: &Cluster,
    f: &Facts,
    room: &dyn Fn() -> Option<&'r Room<'c>>,
    pools: &dyn Fn() -> Option<&'r PoolSet<'c>>,
    clock: &Clock,
    latest: Option<&Evidence>,
) -> Consolidation {
    use State::*;
    let node = f.node;
    let disrupted_taint = node.tainted_disrupted();
    if f.deleting || disrupted_taint {
        return Consolidation::kelp(
            Disrupting,
            None,
            if f.deleting {
                "Karpenter is deleting it".into()
            } else {
                "Karpenter has tainted it karpenter.sh/disrupted and is replacing or removing it"
                    .into()
            },
        );
    }
    let Some(pool) = f.pool else {
        return Consolidation::kelp(
            NotConsidered,
            Some(Reason::Blocked),
            f.blockers
                .first()
                .map_or_else(|| "its NodePool is not found".into(), |b| b.message.clone()),
        );
    };
    let pool_name = &pool.metadata.name;
    let d = &pool.spec.disruption;
    let policy = d
        .consolidation_policy
        .as_deref()
        .unwrap_or("WhenEmptyOrUnderutilized");
    let after = d.consolidate_after.as_deref().unwrap_or("0s");
    let disabled = matches!(duration::parse_nillable(after), Ok(NillableDuration::Never));
    let static_pool = pool.spec.replicas.is_some();
    let considered_since = f
        .claim
        .and_then(|cl| condition(&cl.status.conditions, "Consolidatable"))
        .filter(|c| c.is_true())
        .and_then(|c| c.last_transition_time);
    // Would Karpenter look at it at all, blockers aside?
    let looked_at =
        !static_pool && !disabled && f.consolidatable && (f.empty || policy != "WhenEmpty");
    let with_since = |mut x: Consolidation| {
        x.considered_since =
            considered_since.filter(|_| x.state == Blocked || x.state == Candidate);
        x
    };

    // Blockers (except budgets, judged below per reason) come first, as in Karpenter.
    let held: Vec<&Blocker> = f
        .blockers
        .iter()
        .filter(|b| b.kind != BlockerKind::Budget)
        .collect();
    if let Some(first) = held.first() {
        let more = match held.len() {
            1 => String::new(),
            n => format!(" (and {} more)", n - 1),
        };
        return with_since(Consolidation::kelp(
            if looked_at { Blocked } else { NotConsidered },
            Some(Reason::Blocked),
            format!("{}{more}", first.message),
        ));
    }
    if static_pool {
        return Consolidation::kelp(
            NotConsidered,
            Some(Reason::StaticPool),
            format!(
                "NodePool {pool_name} is static (spec.replicas): Karpenter never consolidates it"
            ),
        );
    }
    if disabled {
        return Consolidation::kelp(
            NotConsidered,
            Some(Reason::ConsolidationDisabled),
            format!("NodePool {pool_name} has consolidation disabled (consolidateAfter: Never)"),
        );
    }
    if !f.empty && policy == "WhenEmpty" {
        return Consolidation::kelp(
            NotConsidered,
            Some(Reason::WhenEmptyNotEmpty),
            format!(
                "NodePool {pool_name} has consolidationPolicy WhenEmpty, and {} pods run here",
                workload_count(c, node)
            ),
        );
    }
    if !f.consolidatable {
        let (message, countdown) = not_yet(f, after, clock);
        return Consolidation {
            countdown,
            ..Consolidation::kelp(NotConsidered, Some(Reason::ConsolidateAfter), message)
        };
    }
    let reason = if f.empty {
        DisruptionReason::Empty
    } else {
        DisruptionReason::Underutilized
    };
    // At the clock's instant: a reader that reuses this answer compares the pool's
    // budgets again itself (they follow schedules, not this node).
    let allowed = allowed_of(f.budget_counts, pool, reason, clock.now());
    if allowed.allowed == 0 {
        return with_since(Consolidation::kelp(
            Blocked,
            Some(Reason::Budget),
            budget_message(pool_name, reason, &allowed),
        ));
    }
    if f.empty {
        let mut x = Consolidation::kelp(
            Candidate,
            None,
            match workload_count(c, node) {
                0 => "empty (only DaemonSet pods) and Consolidatable: Karpenter deletes it".into(),
                n => format!("empty to Karpenter (its {n} pod(s) cost nothing to evict) and Consolidatable: Karpenter deletes it"),
            },
        );
        x.savings_per_hour = f.price;
        return with_since(x);
    }

    // Past every gate: Karpenter's own decision, if it wrote one since it started to
    // consider the node, else kelp's check.
    let kelp = || check(c, f, room, pools);
    // Only a decision written since Karpenter started to consider the node.
    let since_considered =
        latest.filter(|e| considered_since.is_none_or(|s| e.seen.is_some_and(|t| t >= s)));
    if let Some(e) = since_considered.cloned() {
        let mut x = from_event(&e);
        x.event = Some(e.clone());
        if x.state != Candidate {
            let (mine, open_since) = kelp();
            // Karpenter repeats an Unconsolidatable only every 15 minutes: one written before
            // the room kelp finds existed (a node that has since left its own consolidateAfter,
            // or joined) describes a tighter cluster, and Karpenter's next look sees the room.
            let stale = mine.state == Candidate
                && open_since
                    .zip(e.seen)
                    .is_some_and(|(open, seen)| open > seen);
            if stale {
                let mut m = mine;
                m.message = format!(
                    "{}; Karpenter's {} (\"{}\") came before that room opened",
                    m.message,
                    e.reason,
                    e.message.trim()
                );
                m.event = Some(e);
                return with_since(m);
            }
            x.kelp_check = Some(match mine.state {
                Candidate => format!("kelp finds {}", mine.message),
                _ => format!("kelp agrees: {}", mine.message),
            });
        }
        return with_since(x);
    }
    with_since(kelp().0)
}

/// kelp's own answer for a considered, non-empty node: would its pods fit elsewhere? With
/// it, since when the nodes that would take them could (see [`Plan::open_since`]).
fn check<'r, 'c: 'r>(
    c: &Cluster,
    f: &Facts,
    room: &dyn Fn() -> Option<&'r Room<'c>>,
    pools: &dyn Fn() -> Option<&'r PoolSet<'c>>,
) -> (Consolidation, Option<DateTime<Utc>>) {
    let Some(room) = room() else {
        let x = Consolidation::kelp(
            State::Unknown,
            None,
            "no schedulable nodes are known".into(),
        );
        return (x, None);
    };
    let pods: Vec<&Pod> = super::pods::workload_pods(c, &f.node.metadata.name).collect();
    let plan = room.moves(f.node, &pods);
    let open_since = plan.open_since;
    // Pods that fit on the nodes there only by breaking a preference (preferred affinity,
    // ScheduleAnyway spread, a PreferNoSchedule taint): Karpenter breaks it only when no
    // NodePool can launch a node for them, and then deletes this node as if they fit.
    let only_preferring =
        !plan.preferring.is_empty() && plan.misses.iter().all(|m| plan.preferring.contains(&m.pod));
    // Pods with no place elsewhere: would one cheaper node take them?
    let replacement = (!plan.misses.is_empty() && plan.unknown.is_empty()).then(|| {
        let left: Vec<&Pod> = pods
            .iter()
            .copied()
            .filter(|p| {
                let id = format!(
                    "{}/{}",
                    p.metadata.namespace.as_deref().unwrap_or_default(),
                    p.metadata.name
                );
                plan.misses.iter().any(|m| m.pod == id)
            })
            .collect();
        match pools() {
            Some(pools) => replace::replacement(pools, f.node, &left, f.price, !only_preferring),
            None => Replacement::Unknown(
                "kelp cannot price one without an instance-type catalogue".into(),
            ),
        }
    });
    let mut answer = match replacement {
        Some(Replacement::WouldNotSchedule(_)) if only_preferring => {
            let mut x = Consolidation::kelp(
                State::Candidate,
                None,
                format!(
                    "its pods fit on the other nodes once Karpenter breaks their preferences, which it does as no NodePool would take them on a new node ({}): Karpenter can delete it",
                    describe(&plan.misses)
                ),
            );
            x.savings_per_hour = f.price;
            x
        }
        Some(Replacement::Unknown(why)) if only_preferring => {
            let mut x = Consolidation::kelp(
                State::Unknown,
                None,
                format!(
                    "its pods fit on the other nodes only by breaking their preferences ({}): Karpenter first tries a new node for them, and {why}",
                    describe(&plan.misses)
                ),
            );
            x.pods = plan.misses;
            x
        }
        replacement => answer_of(f, plan, replacement),
    };
    let balanced = f
        .pool
        .is_some_and(|p| p.spec.disruption.consolidation_policy.as_deref() == Some("Balanced"));
    if balanced && answer.state == State::Candidate {
        // v1.14.1 also scores a Balanced pool's move (its share of the pool's cost saved
        // against its share of the pool's disruption) and passes over a node whose best
        // move scores under the threshold, without an event.
        answer.state = State::Unknown;
        answer.message.push_str(
            ", if the pool's Balanced policy approves the move (Karpenter weighs the savings \
             against the pods it disrupts; kelp does not compute that score)",
        );
    }
    (answer, open_since)
}

/// The answer a fit plan gives, with the replacement for the pods it left over.
fn answer_of(f: &Facts, plan: Plan, replacement: Option<Replacement>) -> Consolidation {
    if plan.fits() {
        let mut x = Consolidation::kelp(
            State::Candidate,
            None,
            match plan.placed {
                1 => "its pod fits on another node: Karpenter can delete it".to_string(),
                n => format!("its {n} pods fit on the other nodes: Karpenter can delete it"),
            },
        );
        x.savings_per_hour = f.price;
        return x;
    }
    if plan.misses.is_empty() {
        let mut x = Consolidation::kelp(
            State::Unknown,
            None,
            format!(
                "kelp cannot tell whether its pods fit elsewhere: {}",
                describe(&plan.unknown)
            ),
        );
        x.pods = plan.unknown;
        return x;
    }
    let misses = describe(&plan.misses);
    let dollars = |p: f64| format!("${p:.4}/h");
    let (state, reason, tail, savings) = match replacement {
        Some(Replacement::Cheaper { pool, instance_type, capacity_type, price, was }) => (
            State::Candidate,
            None,
            format!(
                "a cheaper node holds them: {instance_type} {capacity_type} from NodePool {pool} at {} against {}: Karpenter can replace it",
                dollars(price),
                dollars(was)
            ),
            Some(was - price),
        ),
        Some(Replacement::NoCheaper { pool, instance_type, price, was }) => (
            State::Blocked,
            Some(Reason::NoCheaperNode),
            format!(
                "the cheapest node that holds them ({instance_type} from NodePool {pool}, {}) is not cheaper than this one ({})",
                dollars(price),
                dollars(was)
            ),
            None,
        ),
        Some(Replacement::SpotToSpot) => (
            State::Blocked,
            Some(Reason::SpotToSpot),
            "it is spot and so would its replacement be, and Karpenter's spot-to-spot consolidation is off by default".into(),
            None,
        ),
        Some(Replacement::Multiple) => (
            State::Blocked,
            Some(Reason::WouldCreateMultiple),
            "no one node holds them all, and Karpenter does not replace one node with several".into(),
            None,
        ),
        Some(Replacement::WouldNotSchedule(pod)) => (
            State::Blocked,
            Some(Reason::PodsWouldNotSchedule),
            format!("no NodePool would take {pod} on a new node"),
            None,
        ),
        Some(Replacement::Unknown(why)) => (
            State::Blocked,
            Some(Reason::NeedsReplacement),
            format!("only a cheaper replacement node could consolidate it, and {why}"),
            None,
        ),
        None => (
            State::Blocked,
            Some(Reason::NeedsReplacement),
            "only a cheaper replacement node could consolidate it".into(),
            None,
        ),
    };
    let mut x = Consolidation::kelp(
        state,
        reason,
        format!("not all its pods fit on the other nodes ({misses}); {tail}"),
    );
    x.savings_per_hour = savings;
    x.pods = plan.misses;
    x
}

fn describe(pods: &[PodMiss]) -> String {
    let mut parts: Vec<String> = pods
        .iter()
        .take(3)
        .map(|m| format!("{}: {}", m.pod, m.why))
        .collect();
    if pods.len() > 3 {
        parts.push(format!("and {} more", pods.len() - 3));
    }
    parts.join("; ")
}

/// The answer a Karpenter decision event gives.
fn from_event(e: &Evidence) -> Consolidation {
    let mut x = Consolidation {
        source: Source::Karpenter,
        ..Consolidation::kelp(State::Blocked, None, e.message.clone())
    };
    match EventReason::parse(&e.reason) {
        Some(EventReason::Unconsolidatable) => {
            let u = karpenter::parse_unconsolidatable(&e.message);
            x.reason = Some(u.reason);
            x.pods = u.pods;
            x.message = format!("Karpenter: {}", e.message.trim());
        }
        Some(EventReason::ConsolidationRejected) => {
            x.reason = Some(Reason::Rejected);
            x.savings_per_hour = karpenter::savings(&e.message);
            x.message = format!(
                "Karpenter rejected its consolidation: {}",
                karpenter::rejected_reason(&e.message)
            );
        }
        _ => {
            x.state = State::Candidate;
            x.savings_per_hour = karpenter::savings(&e.message);
            x.message = format!("Karpenter: {}", e.message.trim());
        }
    }
    x
}

/// Karpenter's newest recent consolidation decision about the node or its claim. A
/// candidate event of a multi-node attempt is not one: Karpenter writes it while it
/// searches and may drop the attempt silently, so an older verdict about the node alone
/// (an `Unconsolidatable` it repeats only every 15 minutes), or kelp's own check, stands.
fn newest_decision(f: &Facts, clock: &Clock) -> Option<Evidence> {
    f.events
        .iter()
        .filter(|e| e.from_karpenter() && e.is_any(DECISIONS))
        .filter(|e| {
            !e.is(EventReason::ConsolidationCandidate)
                || karpenter::multi_node(&e.message).is_none()
        })
        .filter(|e| {
            e.seen()
                .is_some_and(|t| clock.within(t, Duration::minutes(EVENT_FRESH_MINUTES)))
        })
        .max_by_key(|e| e.seen())
        .map(|e| Evidence {
            reason: e.reason.clone(),
            message: e.message.clone(),
            seen: e.seen(),
        })
}

/// Why a node is not Consolidatable yet: when consolidateAfter runs out (a countdown,
/// where kelp knows when).
fn not_yet(f: &Facts, after: &str, clock: &Clock) -> (String, Option<Countdown>) {
    let claim = f.claim;
    let initialized = claim
        .and_then(|cl| condition(&cl.status.conditions, "Initialized"))
        .filter(|c| c.is_true())
        .and_then(|c| c.last_transition_time);
    let last_pod = claim.and_then(|cl| cl.status.last_pod_event_time);
    // Karpenter counts from the last pod event when there is one, else from
    // initialization (v1.14.1 `IsUnderConsolidateAfter`).
    let from = last_pod.or(initialized);
    let at = match (from, duration::parse_go_duration(after)) {
        (Some(t), Ok(d)) => Some(t + d),
        _ => None,
    };
    match (at, last_pod) {
        (Some(at), _) if !clock.reached(at) => {
            let mut message = format!(
                "not Consolidatable yet: consolidateAfter {after} since its {} runs out in ",
                if last_pod.is_some() { "last pod event" } else { "initialization" },
            );
            let from = message.len();
            message.push_str(&clock.countdown(at));
            (message, Some(Countdown { at, from }))
        }
        (Some(_), _) => (
            format!(
                "not Consolidatable yet: consolidateAfter {after} has passed, and Karpenter has not marked it yet"
            ),
            None,
        ),
        (None, _) => (
            format!("not Consolidatable yet (consolidateAfter {after})"),
            None,
        ),
    }
}

fn workload_count(c: &Cluster, node: &Node) -> usize {
    super::pods::workload_pods(c, &node.metadata.name).count()
}

#[cfg(test)]
mod tests {
    use super::super::{node_disruption, NodeInputs};
    use super::*;

    const NOW: &str = "2026-11-21T10:00:00Z";

    /// Node n1 (claim c1, Consolidatable since 09:00) runs one 1-cpu pod; node n2 has
    /// `free` cpu of 4 free. `pool` is the pool's `spec.disruption` and `extra` more YAML.
    fn answer(pool: &str, free: &str, extra: &str) -> Consolidation {
        answer_priced(pool, free, extra, "", None)
    }

    /// [`answer`] with more labels on n1 (its type, zone, capacity type) and a catalogue.
    fn answer_priced(
        pool: &str,
        free: &str,
        extra: &str,
        n1_labels: &str,
        catalog: Option<crate::model::Catalog>,
    ) -> Consolidation {
        // n2: room for n1's pods as `free` CPU allows.
        let n2 = crate::testing::node("n2")
            .label("kubernetes.io/hostname", "n2")
            .allocatable(free, "8Gi", "110")
            .ready()
            .yaml();
        let yaml = format!(
            r#"
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {{name: default}}
spec: {{disruption: {pool}}}
status: {{conditions: [{{type: Ready, status: "True"}}]}}
---
apiVersion: karpenter.sh/v1
kind: NodeClaim
metadata: {{name: c1, uid: uc1, creationTimestamp: "2026-11-20T00:00:00Z", labels: {{karpenter.sh/nodepool: default}}}}
status:
  nodeName: n1
  lastPodEventTime: "2026-11-21T08:55:00Z"
  conditions:
  - {{type: Initialized, status: "True", lastTransitionTime: "2026-11-20T00:01:00Z"}}
  - {{type: Consolidatable, status: "True", lastTransitionTime: "2026-11-21T09:00:00Z"}}
---
apiVersion: v1
kind: Node
metadata: {{name: n1, uid: un1, labels: {{karpenter.sh/nodepool: default, kubernetes.io/hostname: n1{n1_labels}}}}}
status:
  allocatable: {{cpu: "4", memory: 8Gi, pods: "110"}}
  conditions: [{{type: Ready, status: "True"}}]
{n2}---
apiVersion: v1
kind: Pod
metadata: {{name: web-1, namespace: shop, ownerReferences: [{{kind: ReplicaSet, name: web, controller: true}}]}}
spec:
  nodeName: n1
  containers: [{{name: c, resources: {{requests: {{cpu: "1"}}}}}}]
status: {{phase: Running, startTime: "2026-11-21T08:55:00Z"}}
{extra}"#
        );
        let mut c = Cluster::default();
        crate::source::load_str("t.yaml", &yaml, &mut c).unwrap();
        let now = DateTime::parse_from_rfc3339(NOW).unwrap().to_utc();
        let catalog = catalog.map(std::sync::Arc::new);
        let pools = crate::analysis::provisioning::PoolSet::new(&c).with_catalog(catalog.as_ref());
        let inputs = NodeInputs::new(&c, now).with_pools(Some(&pools));
        node_disruption(&c, &c.nodes["n1"], now, &inputs).consolidation
    }

    #[test]
    fn a_pool_with_a_prefer_no_schedule_taint_replaces_only_after_every_other() {
        // "batch" comes first by weight, but its template's PreferNoSchedule taint holds
        // the pod off it until no other pool takes it (Karpenter relaxes that last).
        let kwok = || Some(crate::model::Catalog::kwok_builtin());
        let labels = ", node.kubernetes.io/instance-type: c-8x-amd64-linux, topology.kubernetes.io/zone: test-zone-a, karpenter.sh/capacity-type: on-demand";
        let batch = |taints: &str| {
            format!("---\napiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {{name: batch}}\nspec:\n  weight: 100\n  template:\n    spec:\n      taints: [{taints}]\nstatus: {{conditions: [{{type: Ready, status: \"True\"}}]}}\n")
        };
        let a = answer_priced(UNDERUSED, "500m", &batch(""), labels, kwok());
        assert!(a.message.contains("from NodePool batch"), "{}", a.message);
        let soft = "{key: batch, effect: PreferNoSchedule}";
        let a = answer_priced(UNDERUSED, "500m", &batch(soft), labels, kwok());
        assert_eq!(a.state, State::Candidate, "{}", a.message);
        assert!(a.message.contains("from NodePool default"), "{}", a.message);
        // "default" barred by a taint the pod does not tolerate: "batch" is where Karpenter
        // falls back to, once it tolerates the PreferNoSchedule taint.
        let barred = "{consolidationPolicy: WhenEmptyOrUnderutilized, consolidateAfter: 5m}, template: {spec: {taints: [{key: x, effect: NoSchedule}]}}";
        let a = answer_priced(barred, "500m", &batch(soft), labels, kwok());
        assert!(a.message.contains("from NodePool batch"), "{}", a.message);
    }

    #[test]
    fn with_a_catalogue_kelp_prices_the_replacement_as_karpenter_does() {
        let kwok = || Some(crate::model::Catalog::kwok_builtin());
        let on = |t: &str, ct: &str| {
            format!(", node.kubernetes.io/instance-type: {t}, topology.kubernetes.io/zone: test-zone-a, karpenter.sh/capacity-type: {ct}")
        };
        // An on-demand 8-CPU node whose 1-CPU pod fits nowhere else: a 2-CPU spot node
        // holds it for less.
        let a = answer_priced(
            UNDERUSED,
            "500m",
            "",
            &on("c-8x-amd64-linux", "on-demand"),
            kwok(),
        );
        assert_eq!(
            (a.state, a.reason),
            (State::Candidate, None),
            "{}",
            a.message
        );
        assert!(a.message.contains("c-2x-amd64-linux spot"), "{}", a.message);
        let saved = a.savings_per_hour.unwrap();
        assert!(
            (saved - (0.2171798691840 - 0.0380064771072)).abs() < 1e-9,
            "{saved}"
        );
        // The same node on spot: its replacement would be spot too.
        let a = answer_priced(
            UNDERUSED,
            "500m",
            "",
            &on("c-8x-amd64-linux", "spot"),
            kwok(),
        );
        assert_eq!(a.reason, Some(Reason::SpotToSpot), "{}", a.message);
        // The smallest on-demand type: a 1-CPU pod needs 2 CPUs (900m allocatable on 1),
        // and even spot at 2 CPUs costs more.
        let a = answer_priced(
            UNDERUSED,
            "500m",
            "",
            &on("c-1x-amd64-linux", "on-demand"),
            kwok(),
        );
        assert_eq!(a.reason, Some(Reason::NoCheaperNode), "{}", a.message);
        // Without a catalogue kelp says what it cannot tell.
        let a = answer_priced(
            UNDERUSED,
            "500m",
            "",
            &on("c-1x-amd64-linux", "on-demand"),
            None,
        );
        assert_eq!(a.reason, Some(Reason::NeedsReplacement));
        assert!(
            a.message.contains("without an instance-type catalogue"),
            "{}",
            a.message
        );
    }

    const UNDERUSED: &str = "{consolidationPolicy: WhenEmptyOrUnderutilized, consolidateAfter: 5m}";

    fn event(reason: &str, message: &str, at: &str) -> String {
        format!(
            r#"---
apiVersion: v1
kind: Event
metadata: {{name: e-{reason}, namespace: default}}
involvedObject: {{kind: Node, name: n1, uid: un1}}
reason: {reason}
message: "{message}"
source: {{component: karpenter}}
firstTimestamp: "{at}"
lastTimestamp: "{at}"
type: Normal
"#
        )
    }

    #[test]
    fn karpenters_gates_come_first_in_its_order() {
        let a = answer(
            "{consolidationPolicy: WhenEmpty, consolidateAfter: 5m}",
            "4",
            "",
        );
        assert_eq!(
            (a.state, a.reason),
            (State::NotConsidered, Some(Reason::WhenEmptyNotEmpty))
        );
        assert!(a.message.contains("1 pods run here"), "{}", a.message);
        let a = answer(
            "{consolidationPolicy: WhenEmptyOrUnderutilized, consolidateAfter: Never}",
            "4",
            "",
        );
        assert_eq!(a.reason, Some(Reason::ConsolidationDisabled));
        let a = answer(UNDERUSED, "4", "").state;
        assert_eq!(a, State::Candidate);
        // A budget of 0 holds a candidate; the answer says which budget.
        let a = answer(
            "{consolidationPolicy: WhenEmptyOrUnderutilized, consolidateAfter: 5m, budgets: [{nodes: \"0\"}]}",
            "4",
            "",
        );
        assert_eq!((a.state, a.reason), (State::Blocked, Some(Reason::Budget)));
        // Blockers come before the policy, as Karpenter validates a node before any method
        // (it writes DisruptionBlocked, not Unconsolidatable, for such a node).
        let held = "---\napiVersion: v1\nkind: Node\nmetadata: {name: n1, uid: un1, labels: {karpenter.sh/nodepool: default}, annotations: {karpenter.sh/do-not-disrupt: \"true\"}}\nstatus: {conditions: [{type: Ready, status: \"True\"}]}\n";
        let a = answer(
            "{consolidationPolicy: WhenEmpty, consolidateAfter: 5m}",
            "4",
            held,
        );
        assert_eq!(
            (a.state, a.reason),
            (State::NotConsidered, Some(Reason::Blocked))
        );
        assert!(a.message.contains("do-not-disrupt"), "{}", a.message);
        let a = answer(UNDERUSED, "4", held);
        assert_eq!((a.state, a.reason), (State::Blocked, Some(Reason::Blocked)));
    }

    #[test]
    fn kelps_check_says_candidate_or_needs_replacement() {
        let fits = answer(UNDERUSED, "4", "");
        assert_eq!((fits.state, fits.source), (State::Candidate, Source::Kelp));
        assert!(
            fits.message.contains("fits on another node"),
            "{}",
            fits.message
        );
        assert_eq!(
            fits.considered_since.map(|t| t.to_rfc3339()),
            Some("2026-11-21T09:00:00+00:00".into())
        );
        // 500m free on the only other node: the pod goes nowhere, only a replacement could.
        let held = answer(UNDERUSED, "500m", "");
        assert_eq!(
            (held.state, held.reason, held.source),
            (State::Blocked, Some(Reason::NeedsReplacement), Source::Kelp)
        );
        assert_eq!(held.pods.len(), 1);
        assert_eq!(held.pods[0].pod, "shop/web-1");
        assert!(
            held.pods[0].why.contains("cpu 1 asked, at most 500m free"),
            "{:?}",
            held.pods
        );
    }

    #[test]
    fn karpenters_decision_since_it_considered_the_node_is_the_answer() {
        // Written at 09:50, after the node became Consolidatable (09:00): the answer, with
        // kelp's own check shown beside it (here it disagrees: the pod fits on n2).
        let e = event(
            "Unconsolidatable",
            "Can't replace with a cheaper node",
            "2026-11-21T09:50:00Z",
        );
        let a = answer(UNDERUSED, "4", &e);
        assert_eq!(
            (a.state, a.reason, a.source),
            (
                State::Blocked,
                Some(Reason::NoCheaperNode),
                Source::Karpenter
            )
        );
        assert!(
            a.kelp_check
                .as_deref()
                .is_some_and(|k| k.starts_with("kelp finds")),
            "{a:?}"
        );
        // Written before n2 joined (09:55): Karpenter saw no room then; kelp's newer answer
        // stands, with the event as evidence.
        let joined = "---\napiVersion: v1\nkind: Node\nmetadata: {name: n2, creationTimestamp: \"2026-11-21T09:55:00Z\", labels: {kubernetes.io/hostname: n2}}\nstatus:\n  allocatable: {cpu: \"4\", memory: 8Gi, pods: \"110\"}\n  conditions: [{type: Ready, status: \"True\"}]\n";
        let a = answer(UNDERUSED, "4", &format!("{e}{joined}"));
        assert_eq!(
            (a.state, a.source),
            (State::Candidate, Source::Kelp),
            "{a:?}"
        );
        assert!(
            a.message.contains("came before that room opened"),
            "{}",
            a.message
        );
        assert_eq!(
            a.event.as_ref().map(|e| e.reason.as_str()),
            Some("Unconsolidatable")
        );
        // Written before the node became Consolidatable: it describes an older node.
        let old = event(
            "Unconsolidatable",
            "Can't replace with a cheaper node",
            "2026-11-21T08:50:00Z",
        );
        let a = answer(UNDERUSED, "4", &old);
        assert_eq!((a.state, a.source), (State::Candidate, Source::Kelp));
        // The pods Karpenter names, and a rejected command's savings.
        let e = event(
            "Unconsolidatable",
            "Not all pods would schedule, shop/web-1 => incompatible with nodepool \\\"default\\\" ",
            "2026-11-21T09:50:00Z",
        );
        let a = answer(UNDERUSED, "500m", &e);
        assert_eq!(a.reason, Some(Reason::PodsWouldNotSchedule));
        assert_eq!(a.pods[0].pod, "shop/web-1");
        assert!(
            a.kelp_check
                .as_deref()
                .is_some_and(|k| k.starts_with("kelp agrees")),
            "{a:?}"
        );
        let e = event(
            "ConsolidationRejected",
            "Consolidation rejected: delete, terminating 1 nodes, reason: score 0.10 < threshold 0.50 (savings: $0.12)",
            "2026-11-21T09:50:00Z",
        );
        let a = answer(
            "{consolidationPolicy: Balanced, consolidateAfter: 5m}",
            "4",
            &e,
        );
        assert_eq!(
            (a.state, a.reason),
            (State::Blocked, Some(Reason::Rejected))
        );
        assert_eq!(a.savings_per_hour, Some(0.12));
        // A later candidate event of a multi-node attempt Karpenter dropped is no answer
        // about this node: its own verdict stands (seen on v1.14.1).
        let verdict = event(
            "Unconsolidatable",
            "Can't replace with a cheaper node",
            "2026-11-21T09:50:00Z",
        );
        let multi = event(
            "ConsolidationCandidate",
            "Consolidation candidate: replace: [n1] (part of 2-node consolidation) (savings: $0.05)",
            "2026-11-21T09:55:00Z",
        )
        .replace("e-ConsolidationCandidate", "e-multi");
        let a = answer(UNDERUSED, "4", &format!("{verdict}{multi}"));
        assert_eq!(
            (a.state, a.reason, a.source),
            (
                State::Blocked,
                Some(Reason::NoCheaperNode),
                Source::Karpenter
            ),
            "{a:?}"
        );
        // Alone, it leaves kelp's own check as the answer, not a candidate by fiat.
        let a = answer(UNDERUSED, "500m", &multi);
        assert_eq!(a.source, Source::Kelp, "{a:?}");
    }

    #[test]
    fn a_node_being_removed_or_not_yet_consolidatable_is_not_held() {
        let taint = "---\napiVersion: v1\nkind: Node\nmetadata: {name: n1, uid: un1, labels: {karpenter.sh/nodepool: default}}\nspec: {taints: [{key: karpenter.sh/disrupted, effect: NoSchedule}]}\nstatus: {conditions: [{type: Ready, status: \"True\"}]}\n";
        assert_eq!(answer(UNDERUSED, "4", taint).state, State::Disrupting);
        // consolidateAfter 2h from the last pod event at 08:55: 55m to go.
        let a = answer(
            "{consolidationPolicy: WhenEmptyOrUnderutilized, consolidateAfter: 2h}",
            "4",
            "",
        );
        // The claim still says Consolidatable (Karpenter re-evaluates it): kelp reads the
        // condition, not its own clock, for whether Karpenter considers the node.
        assert_eq!(a.state, State::Candidate);
        let not_yet = "---\napiVersion: karpenter.sh/v1\nkind: NodeClaim\nmetadata: {name: c1, uid: uc1, labels: {karpenter.sh/nodepool: default}}\nstatus:\n  nodeName: n1\n  lastPodEventTime: \"2026-11-21T08:55:00Z\"\n  conditions: [{type: Initialized, status: \"True\", lastTransitionTime: \"2026-11-20T00:01:00Z\"}]\n";
        let a = answer(
            "{consolidationPolicy: WhenEmptyOrUnderutilized, consolidateAfter: 2h}",
            "4",
            not_yet,
        );
        assert_eq!(
            (a.state, a.reason),
            (State::NotConsidered, Some(Reason::ConsolidateAfter))
        );
        assert!(a.message.contains("runs out in 55m"), "{}", a.message);
        // Pods bound before the node was initialized (09:30): Karpenter still counts from
        // the last pod event (08:55), not the later initialization.
        let a = answer(
            "{consolidationPolicy: WhenEmptyOrUnderutilized, consolidateAfter: 2h}",
            "4",
            &not_yet.replace("2026-11-20T00:01:00Z", "2026-11-21T09:30:00Z"),
        );
        assert!(a.message.contains("runs out in 55m"), "{}", a.message);
    }

    #[test]
    fn a_balanced_pool_scores_the_move_kelp_does_not() {
        let a = answer(
            "{consolidationPolicy: Balanced, consolidateAfter: 5m}",
            "4",
            "",
        );
        assert_eq!((a.state, a.source), (State::Unknown, Source::Kelp));
        assert!(
            a.message.contains("fits on another node")
                && a.message.contains("Balanced policy approves"),
            "{}",
            a.message
        );
    }
}
