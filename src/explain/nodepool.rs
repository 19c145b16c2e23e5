//! `why nodepool`: a pool's rollout (up to date, drifted, being replaced, what holds the
//! rest, an ETA) and its budget calendar for the week, in words.

use chrono::{DateTime, Duration, Utc};

use super::text::{clean, columns, Style};
use super::NotFound;
use crate::analysis::rollout::{progress, Progress};
use crate::analysis::Pass;
use crate::karpenter::duration::human;
use crate::model::Cluster;

/// The rollout and calendar of pool `name`, each drift wave taking `wave`.
pub fn nodepool_answer(
    c: &Cluster,
    pass: &Pass,
    name: &str,
    wave: Duration,
) -> Result<Progress, NotFound> {
    let pool = c
        .nodepools
        .get(name)
        .ok_or_else(|| NotFound::NodePool(name.to_string()))?;
    Ok(progress(c, &pass.nodes, pool, pass.now, wave))
}

fn count(n: Option<usize>) -> String {
    n.map_or("unbounded".into(), |n| n.to_string())
}

fn when(t: DateTime<Utc>) -> String {
    t.format("%a %m-%d %H:%M").to_string()
}

/// The answer as text.
pub fn nodepool_text(p: &Progress, s: Style) -> String {
    let mut out = format!(
        "NodePool {} · {} node(s): {} up to date, {} drifted ({} being replaced)\n",
        s.bold(&clean(&p.nodepool)),
        p.nodes,
        p.up_to_date,
        p.drifted,
        p.replacing.len()
    );
    if !p.replacing.is_empty() {
        out.push_str(&format!(
            "  replacing now: {}\n",
            p.replacing
                .iter()
                .map(|n| clean(n).into_owned())
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    let free = p.held.len() - p.blocked;
    match p.eta_seconds {
        Some(eta) => out.push_str(&format!(
            "  {free} waiting on the budget: about {} at {} a wave (--wave-time)\n",
            human(Duration::seconds(eta)),
            human(Duration::seconds(p.wave_seconds))
        )),
        None if free > 0 => out.push_str(&format!(
            "  {}\n",
            s.severity(
                crate::findings::Severity::Critical,
                "the budgets allow no drift replacement now nor in the next 7 days"
            )
        )),
        None => {}
    }
    if p.blocked > 0 {
        out.push_str(&format!(
            "  {} held by blockers of their own: no ETA until they let go\n",
            p.blocked
        ));
    }
    if let Some(why) = &p.no_capacity {
        out.push_str(&format!(
            "  {}\n",
            s.severity(
                crate::findings::Severity::Warning,
                &format!("replacements may find none either: {}", clean(why))
            )
        ));
    }
    if !p.held.is_empty() {
        let mut rows = vec![["DRIFTED NODE", "REASON", "HELD BY"]
            .map(String::from)
            .to_vec()];
        rows.extend(p.held.iter().map(|h| {
            vec![
                clean(&h.node).into_owned(),
                clean(&h.reason).into_owned(),
                if h.blockers.is_empty() {
                    "nothing of its own: the budget's turn".into()
                } else {
                    clean(&h.blockers.join("; ")).into_owned()
                },
            ]
        }));
        out.push('\n');
        out.push_str(&columns(&rows));
    }
    out.push_str("\nBudgets (UTC, the next 7 days):\n");
    for k in &p.calendar {
        let now = match &k.error {
            Some(e) => format!("none: Karpenter cannot read the budgets ({})", clean(e)),
            None => format!("{} now (budget {})", k.allowed_now, count(k.nodes_now)),
        };
        out.push_str(&format!("  {:<14}{now}", k.reason));
        if !k.changes.is_empty() {
            let steps: Vec<String> = k
                .changes
                .iter()
                .take(6)
                .map(|c| format!("{} → {}", when(c.at), count(c.nodes)))
                .collect();
            out.push_str(&format!("; then {}", steps.join(", ")));
            if k.changes.len() > 6 {
                out.push_str(&format!(" (+{} more)", k.changes.len() - 6));
            }
        }
        out.push('\n');
    }
    out
}
