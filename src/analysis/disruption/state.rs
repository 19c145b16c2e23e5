//! One Karpenter node's disruption state: what Karpenter wants to do to it (drift, expiry,
//! emptiness, consolidation) and what stops it: do-not-disrupt pods and nodes, PDBs with
//! no disruptions allowed, nominations, initialisation, a missing NodePool, budgets, and
//! Karpenter's own DisruptionBlocked event for what kelp cannot compute.

use std::collections::BTreeMap;

use chrono::{DateTime, Duration, Utc};
use serde::Serialize;

use super::super::fit::{Reach, Room, RoomCache, Settling};
use super::super::provisioning::PoolSet;
use super::super::{ago, capacity, clock::Clock};
use super::blockers::{drain_deadline, node_blockers, pod_blockers, Holds, Phase};
use super::budget::{allowed_of, budget_counts, budget_message, PoolBudgets};
use super::consolidation::{self, Consolidation, Facts};
use super::pods::{karpenter_empty, workload_pods};
use super::verdict::{Blocker, Want, WantReason};
use crate::findings::ObjectRef;
use crate::karpenter::budgets::DisruptionReason;
use crate::karpenter::duration::{self, NillableDuration};
use crate::karpenter::events::Reason;
use crate::karpenter::events::{self, BlockerKind, NominationTarget};
use crate::model::shared::FastMap;
use crate::model::*;

/// Karpenter's default `expireAfter` (the CRD default) when a dump omits it.
pub const DEFAULT_EXPIRE_AFTER: &str = "720h";

/// Everything about one Karpenter node's disruption.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeDisruption {
    pub node: String,
    pub nodeclaim: Option<String>,
    pub nodepool: Option<String>,
    pub age: Option<String>,
    pub expire_after: Option<String>,
    pub expired: bool,
    pub drifted: Option<String>,
    pub empty: bool,
    pub consolidatable: bool,
    pub deleting: bool,
    pub wants: Vec<Want>,
    pub blockers: Vec<Blocker>,
    /// Why it is, or is not, consolidated.
    pub consolidation: Consolidation,
    #[serde(skip)]
    pub created: Option<DateTime<Utc>>,
    #[serde(skip)]
    pub expires_at: Option<DateTime<Utc>>,
    #[serde(skip)]
    pub empty_since: Option<DateTime<Utc>>,
    /// When Karpenter marked its claim Consolidatable (the condition's last transition):
    /// under the pool's current policy, as Karpenter re-marks every claim of a pool on
    /// its change.
    #[serde(skip)]
    pub consolidatable_since: Option<DateTime<Utc>>,
    #[serde(skip)]
    pub drifted_since: Option<DateTime<Utc>>,
    #[serde(skip)]
    pub blocked_event: Option<String>,
}

/// How long Karpenter keeps a node nominated after it nominates a pod to it: twice its
/// batch window (v1.14.1 `state/statenode.go` `nominationWindow`, 2 x 10 s by default).
pub const NOMINATION_WINDOW_SECONDS: i64 = 20;

/// How long Karpenter's `Nominated` event about a pod stays unrepeated while it nominates
/// the pod again on every pass (the recorder's default dedupe).
const NOMINATED_EVENT_DEDUPE_SECONDS: i64 = 120;

/// Whether a `Nominated` event at `seen` still holds the node at `now`: Karpenter
/// nominates a pending pod again on every pass (its event repeats only every 2 minutes),
/// and its last nomination of a pod that has since bound lasts the window past the bind.
fn still_nominated(c: &Cluster, e: &Event, seen: DateTime<Utc>, now: DateTime<Utc>) -> bool {
    let window = Duration::seconds(NOMINATION_WINDOW_SECONDS);
    let key = (
        e.regarding.namespace.clone().unwrap_or_default(),
        e.regarding.name.clone(),
    );
    match c.pods.get(&key) {
        Some(p) if p.spec.node_name.is_none() => {
            now - seen <= Duration::seconds(NOMINATED_EVENT_DEDUPE_SECONDS) + window
        }
        Some(p) => {
            let bound = condition(&p.status.conditions, "PodScheduled")
                .filter(|c| c.is_true())
                .and_then(|c| c.last_transition_time)
                .unwrap_or(seen);
            now - bound.max(seen) <= window
        }
        None => now - seen <= window,
    }
}

/// Karpenter's nominations that still hold, by target (a node's name, a NodeClaim's),
/// built once per pass: Karpenter keeps a node nominated for 20 s after it nominates a pod
/// to it, and nominates a pending pod again on every pass.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Nominations {
    nodes: FastMap<String, ObjectRef>,
    claims: FastMap<String, ObjectRef>,
}

impl Nominations {
    pub fn new(c: &Cluster, now: DateTime<Utc>) -> Self {
        let mut n = Nominations::default();
        let recent = c.events.values().filter(|e| {
            e.from_karpenter()
                && e.is(Reason::Nominated)
                && e.seen().is_some_and(|t| still_nominated(c, e, t, now))
        });
        for e in recent {
            let pod = ObjectRef {
                kind: ObjectKind::Pod,
                namespace: e.regarding.namespace.clone(),
                name: e.regarding.name.clone(),
            };
            for t in events::parse_nominated(&e.message) {
                let (map, name) = match t {
                    NominationTarget::Node(name) => (&mut n.nodes, name),
                    NominationTarget::NodeClaim(name) => (&mut n.claims, name),
                };
                // Deterministic whatever the event order: the smallest pod key wins.
                let slot = map.entry(name).or_insert_with(|| pod.clone());
                if pod < *slot {
                    *slot = pod.clone();
                }
            }
        }
        n
    }

    /// The pod a node is nominated for, if any.
    fn for_node(&self, node: &Node, claim: Option<&NodeClaim>) -> Option<ObjectRef> {
        self.nodes
            .get(&node.metadata.name)
            .or_else(|| self.claims.get(&claim?.metadata.name))
            .cloned()
    }
}

/// What every node's analysis in one pass reads alike, made once: recent nominations,
/// each pool's budget counts (which count the pool's other nodes), and the free room on
/// every node (built the first time a node's consolidation needs it, or serve's
/// incremental pass compares it with the last pass's).
#[derive(Default)]
pub struct NodeInputs<'c> {
    pub nominations: Nominations,
    budgets: FastMap<String, (usize, usize)>,
    cluster: Option<&'c Cluster>,
    now: DateTime<Utc>,
    room: std::cell::OnceCell<Room<'c>>,
    /// Each node's share of the room from the last pass ([`RoomCache`]).
    room_cache: std::cell::RefCell<RoomCache>,
    /// Where each node stands as a target, when the last pass's still holds.
    settling: Option<std::sync::Arc<Settling>>,
    /// The pass's pools with their instance types, for pricing a replacement node.
    pools: Option<&'c PoolSet<'c>>,
    /// Whether the room and the pools were asked for since [`NodeInputs::take_asked`]:
    /// what a node's answer read beyond the node.
    asked_room: std::cell::Cell<bool>,
    asked_pools: std::cell::Cell<bool>,
}

impl<'c> NodeInputs<'c> {
    pub fn new(c: &'c Cluster, now: DateTime<Utc>) -> Self {
        Self::with_budgets(c, now, &super::budget::pool_budgets(c, now))
    }

    /// As [`NodeInputs::new`], with the pass's pool budgets.
    pub fn with_budgets(
        c: &'c Cluster,
        now: DateTime<Utc>,
        budgets: &BTreeMap<String, PoolBudgets>,
    ) -> Self {
        NodeInputs {
            nominations: Nominations::new(c, now),
            budgets: budgets.iter().map(|(p, b)| (p.clone(), b.counts)).collect(),
            cluster: Some(c),
            now,
            room: std::cell::OnceCell::new(),
            room_cache: Default::default(),
            settling: None,
            pools: None,
            asked_room: Default::default(),
            asked_pools: Default::default(),
        }
    }

    /// Price replacements with the pass's pools and their instance types (a pool set
    /// without a catalogue says it cannot price one).
    pub fn with_pools(mut self, pools: Option<&'c PoolSet<'c>>) -> Self {
        self.pools = pools;
        self
    }

    /// Build the room from what the last pass kept of each node's share, and from where
    /// each node stands as a target if that is known still to hold ([`super::super::fit::settling`]).
    pub fn with_room_cache(
        mut self,
        cache: RoomCache,
        settling: Option<std::sync::Arc<Settling>>,
    ) -> Self {
        self.room_cache.replace(cache);
        self.settling = settling;
        self
    }

    /// Where node `n`, the `i`th in the model's order, stands in the room
    /// ([`super::super::fit::place_of`]), from the kept shares, without building the room;
    /// None when where each node settles is not known.
    pub fn place_of(&self, n: &Node, i: usize) -> Option<(Option<f64>, bool)> {
        let c = self.cluster?;
        let settling = self
            .settling
            .as_ref()
            .filter(|s| s.len() == c.nodes.len())?;
        let settles = *settling.get(i)?;
        Some(super::super::fit::place_of(
            c,
            n,
            settles,
            &mut self.room_cache.borrow_mut(),
        ))
    }

    /// Each node's share of the room, for the next pass.
    pub fn into_room_cache(self) -> RoomCache {
        self.room_cache.into_inner()
    }

    /// The free room on the cluster's schedulable nodes, built once.
    fn room(&self) -> Option<&Room<'c>> {
        self.asked_room.set(true);
        self.built_room()
    }

    /// The room, built now if it was not yet, without counting as asked for: what an
    /// incremental pass compares with the room of the pass before.
    pub fn built_room(&self) -> Option<&Room<'c>> {
        let c = self.cluster?;
        Some(self.room.get_or_init(|| {
            Room::with_cache(
                c,
                self.now,
                &mut self.room_cache.borrow_mut(),
                self.settling.as_deref(),
            )
        }))
    }

    /// How far into the room the plans made since the last call looked, if it was built.
    pub fn take_reach(&self) -> Reach {
        self.room.get().map_or(Reach::Nothing, Room::take_reach)
    }

    /// The pools, for pricing a replacement.
    fn pools(&self) -> Option<&'c PoolSet<'c>> {
        self.asked_pools.set(true);
        self.pools
    }

    /// Whether the room and the pools were asked for since the last call: (room, pools).
    pub fn take_asked(&self) -> (bool, bool) {
        (self.asked_room.take(), self.asked_pools.take())
    }

    /// The pod a node is nominated for, if any (Karpenter's recent nominations).
    pub fn nominated(&self, node: &Node, claim: Option<&NodeClaim>) -> Option<ObjectRef> {
        self.nominations.for_node(node, claim)
    }

    /// The pods nominated to each node and NodeClaim at the pass's instant.
    pub fn nominations(&self) -> &Nominations {
        &self.nominations
    }

    pub fn budget_counts(&self, c: &Cluster, pool: &str) -> (usize, usize) {
        self.budgets
            .get(pool)
            .copied()
            .unwrap_or_else(|| budget_counts(c, pool))
    }
}

/// Analyse one node.
pub fn node_disruption(
    c: &Cluster,
    node: &Node,
    now: DateTime<Utc>,
    inputs: &NodeInputs<'_>,
) -> NodeDisruption {
    node_disruption_at(c, node, &Clock::at(now), inputs)
}

/// Analyse one node, noting on `clock` when the answer changes with time alone.
pub fn node_disruption_at(
    c: &Cluster,
    node: &Node,
    clock: &Clock,
    inputs: &NodeInputs<'_>,
) -> NodeDisruption {
    let now = clock.now();
    let nominations = &inputs.nominations;
    let claim = c.nodeclaim_for_node(node);
    let pool_name = node.pool().map(str::to_string);
    let pool = pool_name.as_deref().and_then(|p| c.nodepools.get(p));
    let created = claim
        .and_then(|cl| cl.metadata.creation_timestamp)
        .or(node.metadata.creation_timestamp);
    let claim_conds: &[Condition] = claim
        .map(|cl| cl.status.conditions.as_slice())
        .unwrap_or_default();

    // Expiry: the claim's own expireAfter (copied at launch; the CRD defaults it), as
    // Karpenter reads it: a pool's change drifts its claims, it does not move their expiry.
    // A node without a claim never expires; its pool's value is only shown.
    let expire_after = match claim {
        Some(cl) => cl.spec.expire_after.clone(),
        None => pool.and_then(|p| p.spec.template.spec.expire_after.clone()),
    }
    .unwrap_or_else(|| DEFAULT_EXPIRE_AFTER.to_string());
    let expires_at = match duration::parse_nillable(&expire_after) {
        Ok(NillableDuration::After(d)) => created.map(|t| t + d),
        _ => None,
    };
    // Karpenter expires NodeClaims; a node without one is not its to disrupt at all
    // (v1.14.1 `StateNode.Managed`), however old.
    let expired = claim.is_some() && expires_at.is_some_and(|t| clock.reached(t));

    let drift = condition(claim_conds, "Drifted").filter(|d| d.is_true());
    let consolidatable = is_true(claim_conds, "Consolidatable");
    let empty = karpenter_empty(c, &node.metadata.name);
    // Karpenter counts consolidateAfter from the last pod event, else from initialization
    // (v1.14.1 nodeclaim/disruption): a node not initialized, or without a claim, is not
    // on that clock at all.
    let initialized_at = condition(claim_conds, "Initialized")
        .filter(|c| c.is_true())
        .and_then(|c| c.last_transition_time);
    let empty_since = claim
        .and_then(|cl| cl.status.last_pod_event_time)
        .or(initialized_at);

    // The events about the node and its claim, read once for its blockers and its
    // consolidation answer.
    let mut events = c.events_for(
        ObjectKind::Node,
        None,
        &node.metadata.name,
        &node.metadata.uid,
    );
    if let Some(cl) = claim {
        events.extend(c.events_for(
            ObjectKind::NodeClaim,
            None,
            &cl.metadata.name,
            &cl.metadata.uid,
        ));
    }
    let blocked_event = events
        .iter()
        .filter(|e| {
            e.from_karpenter()
                && e.is(Reason::DisruptionBlocked)
                && e.seen()
                    .is_some_and(|t| clock.within(t, Duration::hours(1)))
        })
        .max_by_key(|e| e.seen())
        .map(|e| e.message.clone());

    let mut wants = Vec::new();
    if let Some(d) = drift {
        wants.push(Want {
            reason: WantReason::Drifted,
            message: format!("drifted ({})", d.reason.as_deref().unwrap_or("Drifted")),
        });
    }
    if expired {
        wants.push(Want {
            reason: WantReason::Expired,
            message: format!("older than expireAfter {expire_after}"),
        });
    }
    if empty && consolidatable {
        let pods = workload_pods(c, &node.metadata.name).count();
        wants.push(Want {
            reason: WantReason::Empty,
            message: if pods == 0 {
                "empty and consolidatable".into()
            } else {
                format!("empty and consolidatable (its {pods} pod(s) cost nothing to evict: priority or pod-deletion-cost low enough)")
            },
        });
    }
    // An underused node is considered for consolidation where the policy allows it (kept
    // below only if its consolidation answer says Karpenter would act). A DisruptionBlocked
    // event alone says nothing of intent: Karpenter checks every node for blockers before
    // it picks candidates (seen on the real controller).
    let policy = pool.and_then(|p| p.spec.disruption.consolidation_policy.as_deref());
    if consolidatable
        && !empty
        && pool.is_some_and(|p| p.spec.replicas.is_none())
        && policy != Some("WhenEmpty")
    {
        wants.push(Want {
            reason: WantReason::Underutilized,
            message: "a consolidation candidate".into(),
        });
    }

    // What holds it, as Karpenter decides it per want and per phase (see [`blockers`]).
    let deleting = node.metadata.deletion_timestamp.is_some()
        || claim.is_some_and(|cl| cl.metadata.deletion_timestamp.is_some());
    let phase = if deleting {
        Phase::Deleting
    } else if node.tainted_disrupted() {
        Phase::Queued
    } else {
        Phase::Candidate
    };
    let holds = Holds {
        node: node_blockers(
            c,
            node,
            claim,
            pool_name.as_deref(),
            nominations.for_node(node, claim),
        ),
        pods: pod_blockers(c, &node.metadata.name, clock),
        grace_period: claim.and_then(|cl| cl.spec.termination_grace_period.clone()),
        deadline: claim.and_then(drain_deadline),
    };
    let budget = |reason: WantReason| -> Option<Blocker> {
        // Underutilized is judged by Karpenter's consolidation itself, not here.
        let reason = reason
            .budget()
            .filter(|r| *r != DisruptionReason::Underutilized)?;
        let p = pool?;
        let allowed = allowed_of(inputs.budget_counts(c, &p.metadata.name), p, reason, now);
        (allowed.allowed == 0).then(|| Blocker {
            kind: BlockerKind::Budget,
            object: Some(ObjectRef::of(ObjectKind::NodePool, &p.metadata)),
            message: budget_message(&p.metadata.name, reason, &allowed),
        })
    };
    let mut blockers = holds.for_wants(&wants, phase, clock, &budget);
    // What kelp cannot compute itself (e.g. "Not all pods would schedule": the pods have
    // nowhere to go), taken from Karpenter's own recent event.
    // Expiry is held by nothing of Karpenter's disruption: not by its event either.
    let expiring = wants.iter().any(|w| w.reason == WantReason::Expired);
    if blockers.is_empty() && !wants.is_empty() && phase == Phase::Candidate && !expiring {
        if let Some(m) = &blocked_event {
            let parsed = events::parse_disruption_blocked(m);
            // A node being deleted is Karpenter's own work, never a blocker.
            if parsed.kind == BlockerKind::Other {
                blockers.push(Blocker {
                    kind: BlockerKind::Other,
                    object: None,
                    message: parsed.message,
                });
            }
        }
    }

    // Consolidation (and emptiness) is graceful: the node-level and pod-level blockers hold
    // it whatever the phase's wants.
    let consolidation_blockers = holds.graceful();
    let budget_counts = pool_name
        .as_deref()
        .map(|p| inputs.budget_counts(c, p))
        .unwrap_or_default();
    let consolidation = consolidation::judge(
        c,
        &Facts {
            node,
            claim,
            pool,
            empty,
            consolidatable,
            deleting,
            blockers: &consolidation_blockers,
            events: &events,
            budget_counts,
            price: capacity::node_price(c, node),
        },
        &|| inputs.room(),
        &|| inputs.pools(),
        clock,
    );
    // Underused but not consolidable (its pods have nowhere cheaper to go): Karpenter does
    // not want to disrupt it after all.
    if !consolidation.held_by_blockers() {
        wants.retain(|w| w.reason != WantReason::Underutilized);
    }

    NodeDisruption {
        node: node.metadata.name.clone(),
        nodeclaim: claim.map(|cl| cl.metadata.name.clone()),
        nodepool: pool_name,
        age: created.map(|t| ago(now, t)),
        expire_after: Some(expire_after),
        expired,
        drifted: drift.map(|d| d.reason.clone().unwrap_or_else(|| "Drifted".into())),
        empty,
        consolidatable,
        deleting,
        wants,
        blockers,
        consolidation,
        created,
        expires_at,
        empty_since: empty.then_some(empty_since).flatten(),
        consolidatable_since: condition(claim_conds, "Consolidatable")
            .filter(|c| c.is_true())
            .and_then(|c| c.last_transition_time),
        drifted_since: drift.and_then(|d| d.last_transition_time),
        blocked_event,
    }
}

/// Whether Karpenter manages a node: it has a NodePool label or a NodeClaim.
pub fn karpenter_node(c: &Cluster, n: &Node) -> bool {
    karpenter_node_with(n.pool(), c.nodeclaim_for_node(n))
}

/// [`karpenter_node`], with the node's pool label and NodeClaim already looked up.
pub fn karpenter_node_with(pool: Option<&str>, claim: Option<&NodeClaim>) -> bool {
    pool.is_some() || claim.is_some()
}

/// Every Karpenter node's disruption state, by name. Each is shared: serve's incremental
/// pass hands the next pass the same state, and the same name, while nothing it read
/// changed.
pub type NodeStates = BTreeMap<std::sync::Arc<str>, std::sync::Arc<NodeDisruption>>;

/// The disruption state of every Karpenter node (one with a NodePool label or a NodeClaim),
/// by name: once per pass.
pub fn node_states(
    c: &Cluster,
    now: DateTime<Utc>,
    pools: Option<&PoolSet>,
    budgets: &BTreeMap<String, PoolBudgets>,
) -> NodeStates {
    let inputs = NodeInputs::with_budgets(c, now, budgets).with_pools(pools);
    c.nodes
        .values()
        .filter(|n| karpenter_node(c, n))
        .map(|n| {
            let state = node_disruption(c, n, now, &inputs);
            (
                std::sync::Arc::from(n.metadata.name.as_str()),
                std::sync::Arc::new(state),
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: &str = "2026-11-21T10:00:00Z";

    fn node_state(extra: &str) -> NodeDisruption {
        let base = &(r#"
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: default}
spec: {template: {spec: {expireAfter: 720h}}}
status: {conditions: [{type: Ready, status: "True"}]}
---
apiVersion: karpenter.sh/v1
kind: NodeClaim
metadata: {name: default-a, creationTimestamp: "2026-11-01T00:00:00Z", labels: {karpenter.sh/nodepool: default}}
spec: {expireAfter: 720h}
status:
  nodeName: n1
  conditions: [{type: Initialized, status: "True"}, {type: Drifted, status: "True", reason: NodePoolDrifted}]
"#.to_string() + &n1_node("default", Some("2026-10-01T00:00:00Z"), true));
        state_of(&format!("{base}{extra}"))
    }

    /// The disruption state of node `n1` in `yaml`, at NOW.
    fn state_of(yaml: &str) -> NodeDisruption {
        let mut c = Cluster::default();
        crate::source::load_str("t.yaml", yaml, &mut c).unwrap();
        let now = DateTime::parse_from_rfc3339(NOW).unwrap().to_utc();
        node_disruption(&c, &c.nodes["n1"], now, &NodeInputs::new(&c, now))
    }

    /// Node n1 of `pool`, Ready, created at `created`, annotated do-not-disrupt if asked.
    fn n1_node(pool: &str, created: Option<&str>, do_not_disrupt: bool) -> String {
        let mut n = crate::testing::node("n1").pool(pool).ready();
        if let Some(t) = created {
            n = n.created(t);
        }
        if do_not_disrupt {
            n = n.annotation("karpenter.sh/do-not-disrupt", "true");
        }
        n.yaml()
    }

    fn kinds(s: &NodeDisruption) -> Vec<BlockerKind> {
        s.blockers.iter().map(|b| b.kind).collect()
    }

    #[test]
    fn pod_level_blockers_follow_karpenters_rules() {
        let pods = r#"
---
apiVersion: v1
kind: Pod
metadata: {name: agent-x, namespace: kube-system, labels: {app: agent}, annotations: {karpenter.sh/do-not-disrupt: "true"}, ownerReferences: [{kind: DaemonSet, name: agent, controller: true}]}
spec: {nodeName: n1}
status: {phase: Running, startTime: "2026-11-21T09:00:00Z"}
---
apiVersion: v1
kind: Pod
metadata: {name: web-1, namespace: shop, labels: {app: web}}
spec: {nodeName: n1}
status: {phase: Running}
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: web-a, namespace: shop}
spec: {selector: {matchLabels: {app: web}}}
status: {disruptionsAllowed: 1}
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: web-b, namespace: shop}
spec: {selector: {matchLabels: {app: web}}}
status: {disruptionsAllowed: 1}
"#;
        let s = node_state(pods);
        // Drifted: node-level do-not-disrupt applies, a DaemonSet pod's annotation blocks too,
        // and a pod under two PDBs cannot be evicted even when each allows one.
        assert_eq!(
            kinds(&s),
            [
                BlockerKind::DoNotDisruptNode,
                BlockerKind::DoNotDisruptPod,
                BlockerKind::Pdb
            ]
        );
        assert!(
            s.blockers[2].message.contains("several PDBs"),
            "{}",
            s.blockers[2].message
        );
    }

    #[test]
    fn pod_values_and_pdb_policies_block_as_karpenter_reads_them() {
        let pod = |annotation: &str, status: &str| {
            format!(
                r#"
---
apiVersion: v1
kind: Pod
metadata: {{name: web-1, namespace: shop, labels: {{app: web}}, annotations: {{karpenter.sh/do-not-disrupt: "{annotation}"}}}}
spec: {{nodeName: n1}}
status: {{phase: Running{status}}}
"#
            )
        };
        let blocked_by = |yaml: &str| {
            kinds(&node_state(yaml))
                .into_iter()
                .filter(|k| *k != BlockerKind::DoNotDisruptNode)
                .collect::<Vec<_>>()
        };
        // Without a startTime, a valid duration still holds; an invalid value never does.
        assert_eq!(blocked_by(&pod("1h", "")), [BlockerKind::DoNotDisruptPod]);
        assert_eq!(blocked_by(&pod("True", "")), []);
        assert_eq!(blocked_by(&pod("yes", "")), []);
        // A PDB allowing none holds the pod, unless it lets unhealthy pods go and the pod
        // is not Ready.
        let pdb = |policy: &str| {
            format!(
                r#"
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {{name: web, namespace: shop}}
spec: {{selector: {{matchLabels: {{app: web}}}}, unhealthyPodEvictionPolicy: {policy}}}
status: {{disruptionsAllowed: 0}}
"#
            )
        };
        let unready = ", conditions: [{type: Ready, status: \"False\"}]";
        let ready = ", conditions: [{type: Ready, status: \"True\"}]";
        assert_eq!(blocked_by(&(pod("0s", unready) + &pdb("AlwaysAllow"))), []);
        assert_eq!(
            blocked_by(&(pod("0s", ready) + &pdb("AlwaysAllow"))),
            [BlockerKind::Pdb]
        );
        assert_eq!(
            blocked_by(&(pod("0s", unready) + &pdb("IfHealthyBudget"))),
            [BlockerKind::Pdb]
        );
    }

    /// Node n1 running pod p-0 with more metadata `pod_meta` and spec `spec`: is it empty?
    fn empty_with(pod_meta: &str, spec: &str) -> bool {
        let n1 = n1_node("default", None, false);
        state_of(&format!(
            r#"
{n1}---
apiVersion: v1
kind: Pod
metadata: {{name: p-0, namespace: shop{pod_meta}}}
spec: {{nodeName: n1{spec}}}
status: {{phase: Running}}
"#
        ))
        .empty
    }

    #[test]
    fn what_keeps_a_node_from_being_empty_is_what_karpenter_reschedules() {
        let with = |pod_meta: &str| empty_with(pod_meta, "");
        let owner = |api: &str, kind: &str| {
            format!(", ownerReferences: [{{apiVersion: {api}, kind: {kind}, name: x, uid: u, controller: true}}]")
        };
        let deleting = ", deletionTimestamp: \"2026-11-21T09:59:00Z\"";
        assert!(with(&owner("apps/v1", "DaemonSet")));
        // An OpenKruise Advanced DaemonSet is not Kubernetes' DaemonSet.
        assert!(!with(&owner("apps.kruise.io/v1alpha1", "DaemonSet")));
        // A terminating pod has gone, unless a StatefulSet's: its successor waits for it.
        assert!(with(&(owner("apps/v1", "ReplicaSet") + deleting)));
        assert!(!with(&(owner("apps/v1", "StatefulSet") + deleting)));
    }

    #[test]
    fn a_node_whose_pods_cost_nothing_to_evict_is_empty_as_karpenter_counts_it() {
        let with = empty_with;
        let cost = |c: &str| {
            format!(", annotations: {{controller.kubernetes.io/pod-deletion-cost: \"{c}\"}}")
        };
        assert!(!with("", ""));
        // Priority -2^25 takes the base cost of 1 to 0; one more and it costs something.
        assert!(with("", ", priority: -33554432"));
        assert!(!with("", ", priority: -33554431"));
        // So does a deletion cost of -2^27, and any lower.
        assert!(with(&cost("-134217728"), ""));
        assert!(with(&cost("-2147483647"), ""));
        assert!(!with(&cost("-1000"), ""));
        // One Go cannot read is ignored.
        assert!(!with(&cost("-1e999"), ""));
    }

    #[test]
    fn an_empty_node_is_timed_from_its_last_pod_event_else_its_initialization() {
        let with = |status: &str| {
            let n1 = n1_node("default", Some("2026-11-21T09:01:00Z"), false);
            state_of(&format!(
                r#"
apiVersion: karpenter.sh/v1
kind: NodeClaim
metadata: {{name: c1, creationTimestamp: "2026-11-21T09:00:00Z", labels: {{karpenter.sh/nodepool: default}}}}
status:
  nodeName: n1
{status}
{n1}"#
            ))
            .empty_since
            .map(|t| t.to_rfc3339())
        };
        let init = "  conditions: [{type: Initialized, status: \"True\", lastTransitionTime: \"2026-11-21T09:57:00Z\"}]";
        // A GPU node that took an hour to initialize: its clock starts then, not at launch.
        assert_eq!(with(init).as_deref(), Some("2026-11-21T09:57:00+00:00"));
        let pod_event = format!("  lastPodEventTime: \"2026-11-21T09:30:00Z\"\n{init}");
        assert_eq!(
            with(&pod_event).as_deref(),
            Some("2026-11-21T09:30:00+00:00")
        );
        // Not initialized: Karpenter does not consider it.
        assert_eq!(with("  conditions: []"), None);
    }

    #[test]
    fn an_expired_claim_without_its_pool_is_not_held_by_the_missing_pool() {
        let s = state_of(
            &(r#"
apiVersion: karpenter.sh/v1
kind: NodeClaim
metadata: {name: gone-a, creationTimestamp: "2026-10-01T00:00:00Z", labels: {karpenter.sh/nodepool: gone}}
spec: {expireAfter: 720h}
status:
  nodeName: n1
  conditions: [{type: Initialized, status: "True"}]
"#.to_string() + &n1_node("gone", None, false)),
        );
        assert!(s.expired);
        assert!(s.blockers.is_empty(), "{:?}", s.blockers);
    }

    #[test]
    fn a_node_being_deleted_is_not_held_by_the_budget_it_uses_up() {
        let yaml = |deleting: &str| {
            let n1 = n1_node("default", Some("2026-10-01T00:00:00Z"), false);
            format!(
                r#"
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {{name: default}}
spec: {{disruption: {{budgets: [{{nodes: "1"}}]}}, template: {{spec: {{expireAfter: Never}}}}}}
status: {{conditions: [{{type: Ready, status: "True"}}]}}
---
apiVersion: karpenter.sh/v1
kind: NodeClaim
metadata: {{name: default-a, creationTimestamp: "2026-10-01T00:00:00Z", labels: {{karpenter.sh/nodepool: default}}{deleting}}}
spec: {{expireAfter: Never}}
status:
  nodeName: n1
  conditions: [{{type: Initialized, status: "True"}}, {{type: Drifted, status: "True", reason: NodePoolDrifted}}]
{n1}"#
            )
        };
        let state = |deleting: &str| state_of(&yaml(deleting));
        // Not deleting: one node, budget one, none taken: drift may go ahead.
        assert_eq!(kinds(&state("")), []);
        // Deleting: it takes the one disruption itself, and waits for nothing.
        let s = state(
            r#", deletionTimestamp: "2026-11-21T09:59:00Z", finalizers: [karpenter.sh/termination]"#,
        );
        assert!(s.deleting);
        assert!(
            !kinds(&s).contains(&BlockerKind::Budget),
            "{:?}",
            s.blockers
        );
    }

    #[test]
    fn a_pool_just_deleted_takes_its_claims_with_it_and_blocks_nothing() {
        let yaml = |owners: &str| {
            let n1 = n1_node("gone", None, false);
            format!(
                r#"
apiVersion: karpenter.sh/v1
kind: NodeClaim
metadata: {{name: gone-a, labels: {{karpenter.sh/nodepool: gone}}{owners}}}
status:
  nodeName: n1
  conditions: [{{type: Initialized, status: "True"}}]
{n1}"#
            )
        };
        let state = |owners: &str| state_of(&yaml(owners));
        // Owned by the pool (as Karpenter creates every claim): the garbage collector is
        // deleting it, nothing is blocked.
        let owned = state(", ownerReferences: [{apiVersion: karpenter.sh/v1, kind: NodePool, name: gone, uid: u1, blockOwnerDeletion: true}]");
        assert!(!kinds(&owned).contains(&BlockerKind::NodepoolMissing));
        // Orphaned from it: nothing will remove it, and Karpenter cannot disrupt it.
        assert!(kinds(&state("")).contains(&BlockerKind::NodepoolMissing));
    }

    #[test]
    fn a_nomination_holds_for_karpenters_window_past_the_bind() {
        // Nominated at 09:58:30 (event last seen then); the pod is pending, bound 10 s ago,
        // or bound 30 s ago.
        let yaml = |pod_status: &str| {
            let n1 = n1_node("default", None, false);
            format!(
                r#"
{n1}---
apiVersion: v1
kind: Pod
metadata: {{name: web-1, namespace: shop}}
{pod_status}
---
apiVersion: v1
kind: Event
metadata: {{name: e1, namespace: shop}}
involvedObject: {{kind: Pod, namespace: shop, name: web-1}}
reason: Nominated
message: "Pod should schedule on: node/n1"
source: {{component: karpenter}}
firstTimestamp: "2026-11-21T09:58:30Z"
lastTimestamp: "2026-11-21T09:58:30Z"
"#
            )
        };
        let nominated = |pod_status: &str| {
            let mut c = Cluster::default();
            crate::source::load_str("t.yaml", &yaml(pod_status), &mut c).unwrap();
            let now = DateTime::parse_from_rfc3339(NOW).unwrap().to_utc();
            Nominations::new(&c, now)
                .for_node(&c.nodes["n1"], None)
                .is_some()
        };
        // Pending: Karpenter nominates it again on every pass (the event repeats every 2m).
        assert!(nominated("status: {phase: Pending}"));
        let bound = |at: &str| {
            format!("spec: {{nodeName: n1}}\nstatus: {{phase: Running, conditions: [{{type: PodScheduled, status: \"True\", lastTransitionTime: \"{at}\"}}]}}")
        };
        assert!(nominated(&bound("2026-11-21T09:59:50Z")));
        assert!(!nominated(&bound("2026-11-21T09:59:30Z")));
    }

    #[test]
    fn expiry_ignores_node_level_blockers() {
        // Expired 2026-10-31; not drifted: only expiry wants it gone.
        let s = node_state("").blockers;
        assert!(
            s.iter().any(|b| b.kind == BlockerKind::DoNotDisruptNode),
            "drift honours the node annotation"
        );
        let mut c = Cluster::default();
        crate::source::load_str(
            "t.yaml",
            &(r#"
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: default}
status: {conditions: [{type: Ready, status: "True"}]}
---
apiVersion: karpenter.sh/v1
kind: NodeClaim
metadata: {name: default-a, creationTimestamp: "2026-10-01T00:00:00Z", labels: {karpenter.sh/nodepool: default}}
status:
  nodeName: n1
  conditions: [{type: Initialized, status: "True"}]
"#.to_string() + &n1_node("default", Some("2026-10-01T00:00:00Z"), true)),
            &mut c,
        )
        .unwrap();
        let now = DateTime::parse_from_rfc3339(NOW)
            .unwrap()
            .with_timezone(&Utc);
        let s = node_disruption(&c, &c.nodes["n1"], now, &NodeInputs::default());
        assert!(s.expired);
        assert!(s.blockers.is_empty(), "{:?}", s.blockers);
        // Without its NodeClaim the node is not Karpenter's to expire.
        let name = c.nodeclaims.keys().next().cloned().unwrap();
        c.delete_nodeclaim(&name);
        assert!(c.nodeclaim_for_node(&c.nodes["n1"]).is_none());
        let s = node_disruption(&c, &c.nodes["n1"], now, &NodeInputs::default());
        assert!(!s.expired && s.wants.is_empty(), "{s:?}");
    }
}
