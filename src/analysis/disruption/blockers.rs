//! What holds a node Karpenter wants to disrupt, decided as Karpenter decides it: per
//! method and per phase (v1.14.1 `disruption/types.go` `NewCandidate`, `nodeclaim/expiration`,
//! `node/termination`).
//!
//! - **Candidate** (nothing started): each want is held on its own. Drift, emptiness and
//!   consolidation are held by the node-level blockers (a missing NodePool, not initialized,
//!   the node's do-not-disrupt, a nomination) and the pod-level ones (do-not-disrupt pods,
//!   PDBs allowing none), drift and emptiness also by their budget. Drift is eventual: when
//!   the NodeClaim has a terminationGracePeriod, pod-level blockers do not hold it. Expiry
//!   is held by nothing: Karpenter deletes an expired NodeClaim at once. The node is held
//!   only while every want is: one free want is the one Karpenter acts on. A node wanted
//!   for nothing shows what would hold a graceful disruption of it.
//! - **Queued** (tainted `karpenter.sh/disrupted`, replacements launching): nothing holds it.
//! - **Deleting**: only the drain's pod-level blockers hold it, until the NodeClaim's
//!   terminationGracePeriod deadline (`karpenter.sh/nodeclaim-termination-timestamp`), after
//!   which Karpenter deletes the pods whatever they say.

use chrono::{DateTime, Utc};

use super::super::{clock::Clock, selector};
use super::verdict::{Blocker, Want, WantReason};
use crate::findings::ObjectRef;
use crate::karpenter::budgets::{self, DoNotDisrupt};
use crate::karpenter::duration;
use crate::karpenter::events::BlockerKind;
use crate::karpenter::labels;
use crate::model::*;

/// The annotation Karpenter writes on a deleting NodeClaim with the instant its drain is
/// forced: the deletion time plus its terminationGracePeriod (or now, for a repair).
pub const TERMINATION_TIMESTAMP: &str = "karpenter.sh/nodeclaim-termination-timestamp";

/// Where a node stands in Karpenter's disruption.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Nothing started: each want is judged as a candidate.
    Candidate,
    /// Tainted `karpenter.sh/disrupted`: chosen, its replacements launching.
    Queued,
    /// Being deleted: draining.
    Deleting,
}

/// The things that can hold a node, gathered once and handed out per want.
pub struct Holds {
    /// A missing NodePool, not initialized, the node's do-not-disrupt, a nomination.
    pub node: Vec<Blocker>,
    /// Do-not-disrupt pods and PDBs that allow no disruption.
    pub pods: Vec<Blocker>,
    /// The NodeClaim's terminationGracePeriod, if it has one.
    pub grace_period: Option<String>,
    /// When the drain is forced, for a deleting NodeClaim with a deadline.
    pub deadline: Option<DateTime<Utc>>,
}

impl Holds {
    /// What holds the node from the wants given, in `phase`; `budget` is the budget
    /// blocker of a want's reason where the budget allows none. Empty when Karpenter can
    /// act on one of them.
    pub fn for_wants(
        &self,
        wants: &[Want],
        phase: Phase,
        clock: &Clock,
        budget: &dyn Fn(WantReason) -> Option<Blocker>,
    ) -> Vec<Blocker> {
        match phase {
            Phase::Queued => Vec::new(),
            Phase::Deleting => self.drain(clock),
            // Wanting nothing, it is held as any graceful disruption would be.
            Phase::Candidate if wants.is_empty() => self.graceful(),
            Phase::Candidate => {
                let mut out: Vec<Blocker> = Vec::new();
                for w in wants {
                    let held = self.for_want(w.reason, budget);
                    if held.is_empty() {
                        return Vec::new();
                    }
                    for b in held {
                        if !out.contains(&b) {
                            out.push(b);
                        }
                    }
                }
                out
            }
        }
    }

    /// What holds a graceful disruption (emptiness, consolidation) whatever the phase:
    /// every node-level and pod-level blocker.
    pub fn graceful(&self) -> Vec<Blocker> {
        self.node.iter().chain(&self.pods).cloned().collect()
    }

    /// What holds one want of a node nothing has started on.
    fn for_want(
        &self,
        reason: WantReason,
        budget: &dyn Fn(WantReason) -> Option<Blocker>,
    ) -> Vec<Blocker> {
        if reason == WantReason::Expired {
            return Vec::new();
        }
        let mut out = self.node.clone();
        let pods_hold = !(reason == WantReason::Drifted && self.grace_period.is_some());
        if pods_hold {
            out.extend(self.pods.iter().cloned());
        }
        out.extend(budget(reason));
        out
    }

    /// What holds the drain of a deleting node: its pod-level blockers until the deadline,
    /// nothing past it.
    fn drain(&self, clock: &Clock) -> Vec<Blocker> {
        let Some(deadline) = self.deadline else {
            return self.pods.clone();
        };
        if clock.reached(deadline) {
            return Vec::new();
        }
        clock.changes_at(deadline);
        let note = format!(
            " (until {} forces it at {})",
            self.grace_period.as_deref().map_or_else(
                || "Karpenter".to_string(),
                |g| format!("terminationGracePeriod {g}")
            ),
            deadline.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
        );
        let mut out = self.pods.clone();
        out.iter_mut().for_each(|b| b.message.push_str(&note));
        out
    }
}

/// When a deleting NodeClaim's drain is forced: Karpenter's own annotation, else its
/// deletion time plus its terminationGracePeriod.
pub fn drain_deadline(claim: &NodeClaim) -> Option<DateTime<Utc>> {
    let deleting = claim.metadata.deletion_timestamp?;
    if let Some(t) = claim
        .metadata
        .annotation(TERMINATION_TIMESTAMP)
        .and_then(|v| DateTime::parse_from_rfc3339(v).ok())
    {
        return Some(t.with_timezone(&Utc));
    }
    let tgp = claim.spec.termination_grace_period.as_deref()?;
    duration::parse_go_duration(tgp).ok().map(|d| deleting + d)
}

/// Node-level blockers of a node nothing has started on: its pool missing (a claim the
/// garbage collector deletes with its pool is not held by it), not initialized, the node's
/// do-not-disrupt, a nomination.
pub fn node_blockers(
    c: &Cluster,
    node: &Node,
    claim: Option<&NodeClaim>,
    pool_name: Option<&str>,
    nominated: Option<ObjectRef>,
) -> Vec<Blocker> {
    let mut out = Vec::new();
    // Karpenter makes each NodeClaim a dependent of its NodePool: when the pool is deleted,
    // the garbage collector deletes the claims that still name it as their owner, within
    // moments. Only a claim orphaned from its pool (`--cascade=orphan`), or a node with no
    // claim, is left without one.
    let removed_with_pool = claim.is_some_and(|cl| {
        cl.metadata
            .owner_references
            .iter()
            .any(|o| o.kind == "NodePool" && Some(o.name.as_str()) == pool_name)
    });
    if pool_name.and_then(|p| c.nodepools.get(p)).is_none() && !removed_with_pool {
        out.push(Blocker {
            kind: BlockerKind::NodepoolMissing,
            object: pool_name.map(|p| ObjectRef::cluster(ObjectKind::NodePool, p)),
            message: match pool_name {
                Some(p) => format!("NodePool {p} not found"),
                None => "node has no karpenter.sh/nodepool label".into(),
            },
        });
    }
    if claim.is_some_and(|cl| !is_true(&cl.status.conditions, "Initialized")) {
        out.push(Blocker {
            kind: BlockerKind::NotInitialized,
            object: None,
            message: "node isn't initialized".into(),
        });
    }
    if node.metadata.annotation(labels::DO_NOT_DISRUPT) == Some("true") {
        out.push(Blocker {
            kind: BlockerKind::DoNotDisruptNode,
            object: Some(ObjectRef::of(ObjectKind::Node, &node.metadata)),
            message: "the node has \"karpenter.sh/do-not-disrupt: true\"".into(),
        });
    }
    if let Some(pod) = nominated {
        out.push(Blocker {
            kind: BlockerKind::Nominated,
            message: format!("node is nominated for pending pod {}", pod_key(&pod)),
            object: Some(pod),
        });
    }
    out
}

/// Pod-level blockers: do-not-disrupt pods and PDBs that allow no disruption.
pub fn pod_blockers(c: &Cluster, node: &str, clock: &Clock) -> Vec<Blocker> {
    let mut out = Vec::new();
    // Karpenter lets every active pod block with do-not-disrupt, DaemonSet and mirror pods too.
    for p in c.active_pods_on(node) {
        let Some(v) = p.metadata.annotation(labels::DO_NOT_DISRUPT) else {
            continue;
        };
        // The grace period counts from status.startTime; without one a valid value is
        // still active (an invalid one never is).
        let since = p.status.start_time;
        let until = match budgets::pod_do_not_disrupt(v, since.unwrap_or(clock.now()), clock.now())
        {
            DoNotDisrupt::Forever => Some(String::new()),
            DoNotDisrupt::Until(_) | DoNotDisrupt::Elapsed(_) if since.is_none() => {
                Some(String::new())
            }
            DoNotDisrupt::Until(t) => {
                clock.changes_at(t);
                Some(format!(
                    " until {}",
                    t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
                ))
            }
            DoNotDisrupt::Elapsed(_) | DoNotDisrupt::Invalid => None,
        };
        if let Some(until) = until {
            out.push(Blocker {
                kind: BlockerKind::DoNotDisruptPod,
                object: Some(ObjectRef::of(ObjectKind::Pod, &p.metadata)),
                message: format!(
                    "pod {} has \"karpenter.sh/do-not-disrupt: {v}\"{until}",
                    p.metadata.key()
                ),
            });
        }
    }
    // PDBs guard the pods Karpenter would evict: not mirror pods, nor pods that tolerate
    // the disrupted taint, nor pods a do-not-disrupt already holds (v1.14.1 `IsEvictable`).
    let held: Vec<ObjectRef> = out.iter().filter_map(|b| b.object.clone()).collect();
    for p in c.active_pods_on(node).filter(|p| {
        !p.metadata.owned_by("Node")
            && !tolerates_disruption(p)
            && !held.contains(&ObjectRef::of(ObjectKind::Pod, &p.metadata))
    }) {
        let ns = p
            .metadata
            .namespace
            .as_deref()
            .unwrap_or_default()
            .to_string();
        let covering: Vec<&PodDisruptionBudget> = c
            .pdbs
            .range((ns.clone(), String::new())..)
            .take_while(|(k, _)| k.0 == ns)
            .map(|(_, v)| v)
            .filter(|pdb| selector::matches(pdb.spec.selector.as_ref(), &p.metadata.labels))
            .collect();
        if covering.len() > 1 {
            let names: Vec<String> = covering.iter().map(|pdb| pdb.metadata.key()).collect();
            out.push(Blocker {
                kind: BlockerKind::Pdb,
                object: Some(ObjectRef::of(ObjectKind::PodDisruptionBudget, &covering[0].metadata)),
                message: format!("pod {} is covered by several PDBs ({}): eviction does not support multiple PDBs", p.metadata.key(), names.join(", ")),
            });
            continue;
        }
        // A PDB that always allows unhealthy pods to go does not hold an unready one.
        let unready = condition(&p.status.conditions, "Ready").is_some_and(|r| r.status == "False");
        if unready
            && covering
                .iter()
                .any(|pdb| pdb.spec.unhealthy_pod_eviction_policy.as_deref() == Some("AlwaysAllow"))
        {
            continue;
        }
        // A PDB without status counts as allowing none, as the eviction API sees it.
        for pdb in covering
            .into_iter()
            .filter(|pdb| pdb.status.disruptions_allowed.unwrap_or(0) == 0)
        {
            let already = out.iter().any(|b| {
                b.kind == BlockerKind::Pdb
                    && b.object.as_ref().is_some_and(|o| {
                        o.name == pdb.metadata.name
                            && o.namespace.as_deref() == pdb.metadata.namespace.as_deref()
                    })
            });
            if !already {
                out.push(Blocker {
                    kind: BlockerKind::Pdb,
                    object: Some(ObjectRef::of(
                        ObjectKind::PodDisruptionBudget,
                        &pdb.metadata,
                    )),
                    message: format!(
                        "PDB {} allows 0 disruptions (it covers pod {})",
                        pdb.metadata.key(),
                        p.metadata.key()
                    ),
                });
            }
        }
    }
    out
}

fn pod_key(o: &ObjectRef) -> String {
    match &o.namespace {
        Some(ns) => format!("{ns}/{}", o.name),
        None => o.name.clone(),
    }
}

/// Whether a pod tolerates `karpenter.sh/disrupted:NoSchedule` (Karpenter does not evict it).
fn tolerates_disruption(p: &Pod) -> bool {
    let taint = k8s_openapi::api::core::v1::Taint {
        key: "karpenter.sh/disrupted".into(),
        effect: "NoSchedule".into(),
        ..Default::default()
    };
    p.spec
        .tolerations
        .iter()
        .any(|t| crate::karpenter::taints::tolerates(t, &taint))
}

#[cfg(test)]
mod tests {
    use super::super::state::{node_disruption, NodeDisruption, NodeInputs};
    use super::*;

    const NOW: &str = "2026-11-21T10:00:00Z";

    /// Node n1 of NodeClaim c1 (created 2026-11-01) in pool `default` (budgets `budgets`),
    /// with more of the claim's metadata `claim_meta`, its spec `claim_spec`, its conditions
    /// `conds`, more of the node's spec `node_spec`, and a web pod under a PDB allowing none.
    fn state(
        budgets: &str,
        claim_meta: &str,
        claim_spec: &str,
        conds: &str,
        node_spec: &str,
    ) -> NodeDisruption {
        let yaml = format!(
            r#"
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {{name: default}}
spec: {{disruption: {{consolidateAfter: 0s, budgets: {budgets}}}}}
status: {{conditions: [{{type: Ready, status: "True"}}]}}
---
apiVersion: karpenter.sh/v1
kind: NodeClaim
metadata: {{name: c1, creationTimestamp: "2026-11-01T00:00:00Z", labels: {{karpenter.sh/nodepool: default}}{claim_meta}}}
spec: {{{claim_spec}}}
status:
  nodeName: n1
  conditions: [{{type: Initialized, status: "True"}}{conds}]
---
apiVersion: v1
kind: Node
metadata: {{name: n1, labels: {{karpenter.sh/nodepool: default, karpenter.sh/initialized: "true"}}}}
spec: {{providerID: "kwok://n1"{node_spec}}}
status: {{conditions: [{{type: Ready, status: "True"}}]}}
---
apiVersion: v1
kind: Pod
metadata: {{name: web-1, namespace: shop, labels: {{app: web}}}}
spec: {{nodeName: n1}}
status: {{phase: Running}}
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {{name: web, namespace: shop}}
spec: {{selector: {{matchLabels: {{app: web}}}}}}
status: {{disruptionsAllowed: 0}}
"#
        );
        let mut c = Cluster::default();
        crate::source::load_str("t.yaml", &yaml, &mut c).unwrap();
        let now = DateTime::parse_from_rfc3339(NOW).unwrap().to_utc();
        node_disruption(&c, &c.nodes["n1"], now, &NodeInputs::new(&c, now))
    }

    fn kinds(s: &NodeDisruption) -> Vec<BlockerKind> {
        s.blockers.iter().map(|b| b.kind).collect()
    }

    const DRIFTED: &str = r#", {type: Drifted, status: "True", reason: AMIDrift}"#;
    const CONSOLIDATABLE: &str = r#", {type: Consolidatable, status: "True"}"#;
    const OPEN: &str = r#"[{nodes: "100%"}]"#;

    #[test]
    fn a_drifted_node_already_tainted_for_disruption_is_held_by_nothing() {
        // Budget 1, taken by this node itself: it is in progress, not held.
        let taint = ", taints: [{key: karpenter.sh/disrupted, effect: NoSchedule}]";
        let s = state(r#"[{nodes: "1"}]"#, "", "", DRIFTED, taint);
        assert_eq!(kinds(&s), []);
        let s = state(r#"[{nodes: "0"}]"#, "", "", DRIFTED, "");
        assert_eq!(kinds(&s), [BlockerKind::Pdb, BlockerKind::Budget]);
    }

    #[test]
    fn a_claims_grace_period_lets_drift_past_pod_blockers_not_consolidation() {
        let tgp = "expireAfter: 720h, terminationGracePeriod: 1h";
        assert_eq!(kinds(&state(OPEN, "", tgp, DRIFTED, "")), []);
        // Drifted and a consolidation candidate: drift still goes ahead.
        let both = format!("{DRIFTED}{CONSOLIDATABLE}");
        let s = state(OPEN, "", tgp, &both, "");
        assert_eq!(kinds(&s), [], "{:?}", s.wants);
        // Without the period the PDB holds drift; consolidation is held either way.
        assert_eq!(kinds(&state(OPEN, "", "", DRIFTED, "")), [BlockerKind::Pdb]);
        let s = state(OPEN, "", tgp, CONSOLIDATABLE, "");
        assert!(
            s.consolidation.message.contains("PDB shop/web"),
            "{}",
            s.consolidation.message
        );
        assert!(!s.consolidation.message.contains("terminationGracePeriod"));
    }

    #[test]
    fn expiry_is_held_by_nothing_until_the_drain() {
        // Expired on 2026-11-04, drifted, the drift budget 0: Karpenter deletes it anyway.
        let expired =
            |meta: &str| state(r#"[{nodes: "0"}]"#, meta, "expireAfter: 72h", DRIFTED, "");
        let s = expired("");
        assert!(s.expired);
        assert_eq!(kinds(&s), []);
        // Deleting: the drain waits on the PDB, and nothing else.
        let s = expired(r#", deletionTimestamp: "2026-11-21T09:00:00Z""#);
        assert_eq!(kinds(&s), [BlockerKind::Pdb]);
    }

    #[test]
    fn the_drain_is_held_only_until_the_grace_period_deadline() {
        let deleting = r#", deletionTimestamp: "2026-11-21T09:30:00Z""#;
        // 09:30 + 1h: still held at 10:00, with the deadline named.
        let s = state(OPEN, deleting, "terminationGracePeriod: 1h", DRIFTED, "");
        assert_eq!(kinds(&s), [BlockerKind::Pdb]);
        assert!(
            s.blockers[0]
                .message
                .contains("forces it at 2026-11-21T10:30:00Z"),
            "{}",
            s.blockers[0].message
        );
        // 09:30 + 10m: past it, Karpenter deletes the pods whatever their PDB says.
        let s = state(OPEN, deleting, "terminationGracePeriod: 10m", DRIFTED, "");
        assert_eq!(kinds(&s), []);
        // Karpenter's own annotation wins (a repair forces the drain at once).
        let annotated = format!("{deleting}, annotations: {{karpenter.sh/nodeclaim-termination-timestamp: \"2026-11-21T09:31:00Z\"}}");
        let s = state(OPEN, &annotated, "", DRIFTED, "");
        assert_eq!(kinds(&s), []);
        // Without a period or annotation the drain waits for as long as the PDB says.
        assert_eq!(
            kinds(&state(OPEN, deleting, "", DRIFTED, "")),
            [BlockerKind::Pdb]
        );
        // An expired node still here says which: draining pods nothing holds, or none left.
        let s = state(
            OPEN,
            deleting,
            "expireAfter: 72h, terminationGracePeriod: 10m",
            "",
            "",
        );
        let said = super::super::blocked::expired_suffix(&s, 1);
        assert!(
            said.contains("being drained, 1 pod(s) still on it"),
            "{said}"
        );
        let said = super::super::blocked::expired_suffix(&s, 0);
        assert!(said.contains("finalizers"), "{said}");
        let s = state(OPEN, "", "expireAfter: 72h", "", "");
        let said = super::super::blocked::expired_suffix(&s, 1);
        assert!(said.contains("has not deleted its NodeClaim"), "{said}");
    }

    #[test]
    fn one_free_want_is_enough() {
        // Drifted and empty: the Empty budget is 0, the Drifted one open; drift takes it.
        let empty_pool = r#"[{nodes: "0", reasons: [Empty]}, {nodes: "100%"}]"#;
        let both = format!("{DRIFTED}{CONSOLIDATABLE}");
        let tgp = "expireAfter: 720h, terminationGracePeriod: 1h";
        let s = state(empty_pool, "", tgp, &both, "");
        assert_eq!(kinds(&s), [], "{:?}", s.wants);
        // Both budgets 0: both hold it, each named once.
        let s = state(r#"[{nodes: "0"}]"#, "", tgp, &both, "");
        assert!(
            kinds(&s)
                .iter()
                .all(|k| *k == BlockerKind::Pdb || *k == BlockerKind::Budget),
            "{:?}",
            kinds(&s)
        );
        assert!(kinds(&s).contains(&BlockerKind::Budget));
    }

    #[test]
    fn a_pdb_does_not_hold_a_pod_its_do_not_disrupt_already_holds() {
        let mut c = Cluster::default();
        crate::source::load_str(
            "t.yaml",
            r#"
apiVersion: v1
kind: Pod
metadata: {name: web-1, namespace: shop, labels: {app: web}, annotations: {karpenter.sh/do-not-disrupt: "true"}}
spec: {nodeName: n1}
status: {phase: Running}
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: web, namespace: shop}
spec: {selector: {matchLabels: {app: web}}}
status: {disruptionsAllowed: 0}
"#,
            &mut c,
        )
        .unwrap();
        let now = DateTime::parse_from_rfc3339(NOW).unwrap().to_utc();
        let kinds: Vec<_> = pod_blockers(&c, "n1", &Clock::at(now))
            .into_iter()
            .map(|b| b.kind)
            .collect();
        assert_eq!(kinds, [BlockerKind::DoNotDisruptPod]);
    }
}
