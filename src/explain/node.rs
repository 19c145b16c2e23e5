//! `why node`: one node's disruption state (pool, age against expireAfter, drift,
//! emptiness), what Karpenter wants to do to it, every blocker and how to lift it, and why
//! it is or is not consolidated.

use chrono::{DateTime, Utc};
use serde::Serialize;

use super::text::{clean, columns, serde_name, Style};
use super::NotFound;
use crate::analysis::disruption::consolidation::{Consolidation, Source, State};
use crate::analysis::disruption::{self, Blocker, NodeDisruption};
use crate::analysis::{ago, Pass};
use crate::findings::Finding;
use crate::karpenter::events::BlockerKind;
use crate::model::{Cluster, ObjectKind};

/// What `kelp why node` answers (and the dashboard's node pane).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeAnswer {
    #[serde(flatten)]
    pub state: NodeDisruption,
    pub advice: Vec<String>,
    pub findings: Vec<Finding>,
    /// What Karpenter's own metrics say of its voluntary disruption, when they were read
    /// (`--metrics-file`, or the controller scrape).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub karpenter_metrics: Option<DisruptionMetrics>,
    /// The release it was judged against, as the pass detected it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub karpenter: Option<crate::karpenter::version::Detected>,
}

/// Karpenter's voluntary disruption, from its `/metrics`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DisruptionMetrics {
    /// Candidates of its last pass of each method, by reason (cluster-wide).
    pub eligible_nodes: std::collections::BTreeMap<String, f64>,
    /// Decisions carried out in the node's pool: (decision, reason, count).
    pub pool_decisions: Vec<(String, String, f64)>,
}

fn disruption_metrics(c: &Cluster, pool: Option<&str>) -> Option<DisruptionMetrics> {
    let m = c.metrics.as_ref()?;
    if m.eligible_nodes.is_empty() && m.decisions.is_empty() {
        return None;
    }
    Some(DisruptionMetrics {
        eligible_nodes: m.eligible_nodes.clone(),
        pool_decisions: m
            .decisions
            .iter()
            .filter(|((p, _, _), _)| Some(p.as_str()) == pool)
            .map(|((_, d, r), v)| (d.clone(), r.clone(), *v))
            .collect(),
    })
}

/// Explain one node (or NodeClaim, by its node); an error when there is none.
pub fn node_answer(c: &Cluster, pass: &Pass, name: &str) -> Result<NodeAnswer, NotFound> {
    let node = c
        .nodes
        .get(name)
        .or_else(|| c.nodeclaims.get(name).and_then(|cl| c.node_for_claim(cl)));
    let Some(node) = node else {
        if c.nodeclaims.contains_key(name) {
            return Err(NotFound::ClaimWithoutNode(name.to_string()));
        }
        return Err(NotFound::Node(name.to_string()));
    };
    // The pass has every Karpenter node; any other node is judged here (it has no pool).
    let state = match pass.nodes.get(node.metadata.name.as_str()) {
        Some(s) => NodeDisruption::clone(s),
        None => disruption::node_disruption(
            c,
            node,
            pass.now,
            // A node of no pool: Karpenter never consolidates it, so no replacement to price.
            &disruption::NodeInputs::with_budgets(c, pass.now, &pass.budgets),
        ),
    };
    let claim = state.nodeclaim.clone().unwrap_or_default();
    let mine: Vec<Finding> = pass
        .report
        .findings
        .iter()
        .filter(|f| {
            (f.object.kind == ObjectKind::Node && f.object.name == state.node)
                || (f.object.kind == ObjectKind::NodeClaim && f.object.name == claim)
        })
        .map(|f| (**f).clone())
        .collect();
    Ok(NodeAnswer {
        karpenter: pass.report.karpenter.version.clone(),
        karpenter_metrics: disruption_metrics(c, state.nodepool.as_deref()),
        advice: state.blockers.iter().map(unblock).collect(),
        state,
        findings: mine,
    })
}

/// `kelp why node` as text.
pub fn node_text(c: &Cluster, now: DateTime<Utc>, answer: &NodeAnswer, s: Style) -> String {
    let state = &answer.state;
    let mut out = format!("{} {}\n", s.bold("Node"), s.bold(&clean(&state.node)));
    let Some(pool) = &state.nodepool else {
        out.push_str("Not managed by Karpenter (no karpenter.sh/nodepool label).\n");
        return out;
    };
    let yes_no = |b: bool| if b { "yes" } else { "no" };
    let rows = vec![
        vec![
            "NodePool".to_string(),
            format!(
                "{}{}",
                clean(pool),
                if c.nodepools.contains_key(pool) {
                    ""
                } else {
                    " (missing!)"
                }
            ),
        ],
        vec![
            "NodeClaim".into(),
            state
                .nodeclaim
                .as_deref()
                .map(|n| clean(n).into_owned())
                .unwrap_or_else(|| {
                    "none found (Karpenter disrupts no node without one, expiry included)".into()
                }),
        ],
        vec![
            "Age".into(),
            format!(
                "{} (expireAfter {}{})",
                state.age.clone().unwrap_or_else(|| "?".into()),
                state.expire_after.clone().unwrap_or_default(),
                match state.expires_at {
                    Some(t) if state.expired => format!(", expired {} ago", ago(now, t)),
                    Some(t) => format!(", expires in {}", ago(t, now)),
                    None => String::new(),
                }
            ),
        ],
        vec![
            "Drifted".into(),
            state
                .drifted
                .clone()
                .map(|r| format!("yes ({})", clean(&r)))
                .unwrap_or_else(|| "no".into()),
        ],
        vec!["Empty".into(), yes_no(state.empty).into()],
        vec!["Consolidatable".into(), yes_no(state.consolidatable).into()],
    ];
    out.push_str(&columns(&rows));
    if state.wants.is_empty() {
        out.push_str("\nKarpenter has no reason to disrupt this node now.\n");
    } else {
        let wants: Vec<&str> = state.wants.iter().map(|w| w.message.as_str()).collect();
        out.push_str(&format!(
            "\nKarpenter wants to disrupt it: {}\n",
            clean(&wants.join(", "))
        ));
    }
    if state.blockers.is_empty() {
        out.push_str(if state.deleting {
            "Nothing blocks it: Karpenter is deleting it.\n"
        } else if state.expired {
            "Nothing blocks disruption: Karpenter deletes a NodeClaim as soon as it expires (if this one is not deleted soon, is Karpenter running, and does it manage its nodeClassRef?).\n"
        } else {
            "Nothing blocks disruption.\n"
        });
    } else {
        out.push_str(&format!("\n{}\n", s.bold("Blockers")));
        for b in &state.blockers {
            out.push_str(&format!(
                "  - {}: {}\n",
                serde_name(b.kind),
                clean(&b.message)
            ));
        }
        out.push_str(&format!("\n{}\n", s.bold("To unblock")));
        for a in &answer.advice {
            out.push_str(&format!("  - {}\n", clean(a)));
        }
    }
    out.push_str(&consolidation_text(&state.consolidation, now, s));
    if let Some(m) = &answer.karpenter_metrics {
        let eligible: Vec<String> = m
            .eligible_nodes
            .iter()
            .map(|(r, v)| format!("{v} {r}"))
            .collect();
        let decisions: Vec<String> = m
            .pool_decisions
            .iter()
            .map(|(d, r, v)| format!("{v} {d} ({r})"))
            .collect();
        out.push_str(&format!(
            "  Karpenter's metrics: eligible now: {}; decisions in {pool} so far: {}\n",
            if eligible.is_empty() {
                "-".into()
            } else {
                eligible.join(", ")
            },
            if decisions.is_empty() {
                "none".into()
            } else {
                decisions.join(", ")
            }
        ));
    }
    if let Some(e) = &state.blocked_event {
        out.push_str(&format!(
            "\nKarpenter's last DisruptionBlocked event: {}\n",
            clean(e)
        ));
    }
    out.push('\n');
    out.push_str(&s.dim(&super::text::karpenter_line(answer.karpenter.as_ref())));
    out
}

/// "Why not consolidated", in one sentence plus the evidence.
fn consolidation_text(x: &Consolidation, now: DateTime<Utc>, s: Style) -> String {
    let head = match x.state {
        State::Disrupting => "being disrupted",
        State::Candidate => "a candidate",
        State::Blocked => "blocked",
        State::Unknown => "unknown",
        State::NotConsidered => "not considered",
    };
    let by = match x.source {
        Source::Karpenter => "Karpenter",
        Source::Kelp => "kelp",
    };
    let mut out = format!(
        "\n{} {head} ({by}{}): {}\n",
        s.bold("Consolidation:"),
        x.reason
            .map(|r| format!(", {}", r.as_str()))
            .unwrap_or_default(),
        clean(&x.message)
    );
    if let Some(t) = x.considered_since {
        out.push_str(&format!("  Consolidatable for {}\n", ago(now, t)));
    }
    for p in &x.pods {
        out.push_str(&format!("  - {}: {}\n", clean(&p.pod), clean(&p.why)));
    }
    if let Some(v) = x.savings_per_hour {
        out.push_str(&format!("  Saves ${v:.3}/h\n"));
    }
    if let Some(e) = &x.event {
        out.push_str(&format!(
            "  Karpenter's {} event{}: {}\n",
            clean(&e.reason),
            e.seen
                .map(|t| format!(" ({} ago)", ago(now, t)))
                .unwrap_or_default(),
            clean(&e.message)
        ));
    }
    if let Some(k) = &x.kelp_check {
        out.push_str(&format!("  {}\n", clean(k)));
    }
    out
}

fn unblock(b: &Blocker) -> String {
    let name = b
        .object
        .as_ref()
        .map(|o| o.name.clone())
        .unwrap_or_default();
    let ns = b
        .object
        .as_ref()
        .and_then(|o| o.namespace.clone())
        .unwrap_or_default();
    match b.kind {
        BlockerKind::DoNotDisruptPod => format!(
            "pod {ns}/{name}: let it finish, or remove the annotation (kubectl annotate pod -n {ns} {name} karpenter.sh/do-not-disrupt-); a NodePool's terminationGracePeriod lets drift and expiry go ahead anyway, but only on nodes created after it is set (a NodeClaim keeps the one it was created with)"
        ),
        BlockerKind::DoNotDisruptNode => format!("remove the node annotation: kubectl annotate node {name} karpenter.sh/do-not-disrupt-"),
        BlockerKind::Pdb => format!("PDB {ns}/{name} allows no disruption: scale the workload up or relax minAvailable/maxUnavailable"),
        BlockerKind::Budget => "a disruption budget allows 0 now: wait for its window to close or change spec.disruption.budgets".into(),
        BlockerKind::Nominated => "a pending pod was nominated to this node: Karpenter waits for it to bind".into(),
        BlockerKind::NotInitialized => "the node never initialized: see nodeclaim-not-initialized in `kelp doctor`".into(),
        BlockerKind::NodepoolMissing => "its NodePool is gone: recreate it, or delete the NodeClaim to drain the node".into(),
        BlockerKind::Deleting => "the node is being deleted already: Karpenter is at work on it".into(),
        BlockerKind::Other => b.message.clone(),
    }
}
