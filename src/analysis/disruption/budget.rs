//! Disruption budgets as Karpenter counts them: the nodes of a pool that count and those
//! already unavailable, the disruptions a pool's budgets allow for a reason at `now` (in
//! UTC), and the `budget-blocking` finding for pools whose budgets allow none.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};

use super::super::Context;
use crate::findings::{Code, Finding, ObjectRef, Severity};
use crate::karpenter::budgets::{self, DisruptionReason};
use crate::model::shared::FastMap;
use crate::model::*;

/// Karpenter's budget arithmetic for a pool: the nodes it counts (managed, initialised,
/// claim not InstanceTerminating) and, of those, the ones already unavailable: NotReady,
/// or marked for deletion ([`NodeClaim::marked_for_deletion`]). A node deleting while its
/// claim is not counts only once it is tainted, as Karpenter's drain does.
pub fn budget_counts(c: &Cluster, pool: &str) -> (usize, usize) {
    let (mut total, mut unavailable) = (0, 0);
    for n in c.nodes_in_pool(pool) {
        let Some(claim) = c.nodeclaim_for_node(n) else {
            continue;
        };
        let conds = &claim.status.conditions;
        if !is_true(conds, "Initialized") || is_true(conds, "InstanceTerminating") {
            continue;
        }
        total += 1;
        if claim.marked_for_deletion(Some(n)) || !is_true(&n.status.conditions, "Ready") {
            unavailable += 1;
        }
    }
    (total, unavailable)
}

/// A pool's disruption budgets at one instant, worked out once per pass: its (total,
/// unavailable) node counts, and what they allow for each reason, in
/// [`DisruptionReason::ALL`]'s order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PoolBudgets {
    pub counts: (usize, usize),
    pub allowed: Vec<budgets::Allowed>,
}

impl PoolBudgets {
    pub fn of(c: &Cluster, pool: &NodePool, now: DateTime<Utc>) -> Self {
        Self::with_counts(budget_counts(c, &pool.metadata.name), pool, now)
    }

    /// A pool's budgets from its (total, unavailable) counts ([`budget_counts`]).
    pub fn with_counts(counts: (usize, usize), pool: &NodePool, now: DateTime<Utc>) -> Self {
        let (total, unavailable) = counts;
        PoolBudgets {
            counts,
            allowed: budgets::allowed_for_each(
                pool.spec.disruption.budgets.as_deref(),
                now,
                total,
                unavailable,
            )
            .into(),
        }
    }

    /// What the budgets allow for `reason`.
    pub fn allowed(&self, reason: DisruptionReason) -> &budgets::Allowed {
        let i = DisruptionReason::ALL
            .iter()
            .position(|r| *r == reason)
            .unwrap_or_default();
        &self.allowed[i]
    }
}

/// Every pool's budgets at `now`, by name.
pub fn pool_budgets(c: &Cluster, now: DateTime<Utc>) -> BTreeMap<String, PoolBudgets> {
    pool_budgets_with(c, now, |pool| budget_counts(c, pool))
}

/// [`pool_budgets`], with each pool's node counts from `counts` (which serve keeps while
/// no node or claim changed).
pub fn pool_budgets_with(
    c: &Cluster,
    now: DateTime<Utc>,
    mut counts: impl FnMut(&str) -> (usize, usize),
) -> BTreeMap<String, PoolBudgets> {
    c.nodepools
        .values()
        .map(|p| {
            let n = counts(&p.metadata.name);
            (p.metadata.name.clone(), PoolBudgets::with_counts(n, p, now))
        })
        .collect()
}

/// Budget verdict for a pool and reason at `now`.
pub fn pool_allowed(
    c: &Cluster,
    pool: &NodePool,
    reason: DisruptionReason,
    now: DateTime<Utc>,
) -> budgets::Allowed {
    allowed_of(budget_counts(c, &pool.metadata.name), pool, reason, now)
}

/// Budget verdict for a pool whose (total, unavailable) counts are known.
pub(crate) fn allowed_of(
    (total, unavailable): (usize, usize),
    pool: &NodePool,
    reason: DisruptionReason,
    now: DateTime<Utc>,
) -> budgets::Allowed {
    budgets::allowed_disruptions(
        pool.spec.disruption.budgets.as_deref(),
        reason,
        now,
        total,
        unavailable,
    )
}

pub(super) fn budget_message(pool: &str, reason: DisruptionReason, a: &budgets::Allowed) -> String {
    match (&a.error, a.active_budget) {
        (Some(e), _) => {
            format!("NodePool {pool}: a misconfigured budget blocks all disruption ({e})")
        }
        (None, Some(i)) => format!(
            "NodePool {pool}: budget #{i} allows {} {reason} disruptions now{}",
            a.limit.unwrap_or(0),
            match a.limit {
                Some(l) if l > a.allowed => format!(
                    ", {} already taken by NotReady or deleting nodes",
                    l - a.allowed
                ),
                _ => String::new(),
            }
        ),
        (None, None) => format!("NodePool {pool}: no disruptions allowed for {reason} now"),
    }
}

pub(super) fn budget_blocking(ctx: &Context) -> Vec<Finding> {
    let c = ctx.cluster;
    let mut out = Vec::new();
    // Per pool, in one look at every node: (drifted, consolidatable, consolidatable and
    // empty). Nodes Karpenter is already deleting wait for no budget.
    let mut counts: FastMap<&str, (usize, usize, usize)> = FastMap::default();
    for s in ctx.pass.nodes.values().filter(|s| !s.deleting) {
        let Some(pool) = s.nodepool.as_deref() else {
            continue;
        };
        let n = counts.entry(pool).or_default();
        n.0 += usize::from(s.drifted.is_some());
        n.1 += usize::from(s.consolidatable);
        n.2 += usize::from(s.consolidatable && s.empty);
    }
    for pool in c.nodepools.values() {
        let name = &pool.metadata.name;
        if pool.spec.replicas.is_some() {
            continue; // static pools are not disrupted for these reasons
        }
        let (drifted, consolidatable, empty) =
            counts.get(name.as_str()).copied().unwrap_or_default();
        // WhenEmpty pools never consolidate a node that still has pods.
        let when_empty = pool.spec.disruption.consolidation_policy.as_deref() == Some("WhenEmpty");
        let candidates = if when_empty { 0 } else { consolidatable };
        let mut blocked: Vec<(DisruptionReason, budgets::Allowed, usize)> = Vec::new();
        for (reason, n) in [
            (DisruptionReason::Drifted, drifted),
            (DisruptionReason::Underutilized, candidates),
            (DisruptionReason::Empty, empty),
        ] {
            if n == 0 {
                continue;
            }
            let a = match ctx.pass.budgets.get(name) {
                Some(b) => b.allowed(reason).clone(),
                None => pool_allowed(c, pool, reason, ctx.pass.now),
            };
            if a.allowed == 0 && (a.limit == Some(0) || a.error.is_some()) {
                blocked.push((reason, a, n));
            }
        }
        if blocked.is_empty() {
            continue;
        }
        let reasons: Vec<String> = blocked
            .iter()
            .map(|(r, _, n)| format!("{r} ({n} nodes)"))
            .collect();
        let (first_reason, first, _) = &blocked[0];
        let active = first
            .active_budget
            .and_then(|i| pool.spec.disruption.budgets.as_ref()?.get(i).cloned());
        // The blocking budget names its reasons, or applies to all of them.
        let reason = match active.as_ref().and_then(|b| b.reasons.as_ref()) {
            Some(r) if !r.is_empty() => r.join(","),
            _ if first.error.is_some() => first_reason.to_string(),
            _ => "all".to_string(),
        };
        out.push(
            Finding::new(
                Code::BudgetBlocking,
                Severity::Warning,
                ObjectRef::of(ObjectKind::NodePool, &pool.metadata),
                format!(
                    "Disruption budgets allow 0 disruptions now for {}: {}",
                    reasons.join(", "),
                    budget_message(name, *first_reason, first)
                ),
            )
            .pool(Some(name))
            .details(serde_json::json!({
                "reason": reason,
                "reasons": blocked.iter().map(|(r, _, _)| r.to_string()).collect::<Vec<_>>(),
                "activeBudget": active,
                "error": first.error,
            })),
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A node Karpenter has picked to disrupt (tainted, not yet deleting) is already
    /// unavailable, as is one whose claim is deleting; a node deleting while its claim is
    /// not (and untainted) still counts as available, as v1.14.1 `MarkedForDeletion` has it.
    #[test]
    fn nodes_marked_for_deletion_are_unavailable() {
        let node = |name: &str, extra: &str| {
            format!(
                r#"---
apiVersion: karpenter.sh/v1
kind: NodeClaim
metadata: {{name: c-{name}, labels: {{karpenter.sh/nodepool: p}}{claim}}}
status:
  nodeName: {name}
  conditions: [{{type: Initialized, status: "True"}}]
---
apiVersion: v1
kind: Node
metadata: {{name: {name}, labels: {{karpenter.sh/nodepool: p}}{node}}}
spec: {{taints: [{taint}]}}
status: {{conditions: [{{type: Ready, status: "True"}}]}}
"#,
                claim = if extra == "claim-deleting" {
                    ", deletionTimestamp: \"2026-11-21T09:00:00Z\""
                } else {
                    ""
                },
                node = if extra == "node-deleting" {
                    ", deletionTimestamp: \"2026-11-21T09:00:00Z\""
                } else {
                    ""
                },
                taint = if extra == "tainted" {
                    "{key: karpenter.sh/disrupted, effect: NoSchedule}"
                } else {
                    ""
                },
            )
        };
        let counts = |nodes: &[&str]| {
            let yaml = nodes
                .iter()
                .map(|x| node(&format!("n-{x}"), x))
                .collect::<String>();
            let mut c = Cluster::default();
            crate::source::load_str("t.yaml", &yaml, &mut c).unwrap();
            budget_counts(&c, "p")
        };
        assert_eq!(counts(&["plain", "tainted"]), (2, 1));
        assert_eq!(counts(&["plain", "claim-deleting"]), (2, 1));
        assert_eq!(counts(&["plain", "node-deleting"]), (2, 0));
    }

    /// Each pool's blocked reasons count its own nodes only: here the empty, consolidatable
    /// node is `loud`'s, and `quiet` (the same budget, no nodes) has nothing waiting.
    #[test]
    fn a_budget_blocks_the_pool_whose_nodes_wait_for_it() {
        let pool = |name: &str| {
            format!(
                r#"
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {{name: {name}}}
spec:
  disruption:
    consolidationPolicy: WhenEmptyOrUnderutilized
    budgets: [{{nodes: "0", reasons: [Empty]}}]
status: {{conditions: [{{type: Ready, status: "True"}}]}}
"#
            )
        };
        let yaml = format!(
            r#"{}---{}---
apiVersion: karpenter.sh/v1
kind: NodeClaim
metadata: {{name: loud-a, creationTimestamp: "2026-11-01T00:00:00Z", labels: {{karpenter.sh/nodepool: loud}}}}
status:
  nodeName: n1
  conditions: [{{type: Initialized, status: "True"}}, {{type: Consolidatable, status: "True"}}]
{}"#,
            pool("loud"),
            pool("quiet"),
            crate::testing::node("n1")
                .created("2026-11-01T00:00:00Z")
                .pool("loud")
                .ready()
                .yaml()
        );
        let mut c = Cluster::default();
        crate::source::load_str("t.yaml", &yaml, &mut c).unwrap();
        let now = DateTime::parse_from_rfc3339("2026-11-21T10:00:00Z")
            .unwrap()
            .to_utc();
        let found = budget_blocking(&Context::new(&c, now));
        let pools: Vec<_> = found.iter().map(|f| f.object.name.as_str()).collect();
        assert_eq!(pools, ["loud"], "{found:#?}");
        let reasons = found[0].details.to_json()["reasons"].clone();
        assert_eq!(reasons, serde_json::json!(["Empty"]), "{found:#?}");
    }
}
