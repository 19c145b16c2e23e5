//! What holds a pending pod, in one line: the pools that could take it and what Karpenter
//! said, or why no pool can. Worked out once for the replicas that share their verdicts
//! and event; the finding's message and the dashboard's rows carry it.

use std::sync::Arc;

use super::verdict::{PoolVerdict, Verdict};
use crate::karpenter::events::{split_parts, without_requirements, Category};

/// What holds a pod judged `nodepools`, with Karpenter's event `message`, without how
/// long: one line.
pub(super) fn verdict_summary(nodepools: &[Arc<PoolVerdict>], message: Option<&str>) -> String {
    if nodepools.is_empty() {
        return "there are no NodePools, so Karpenter cannot provision for it".into();
    }
    let compatible: Vec<&str> = nodepools
        .iter()
        .filter(|v| v.verdict == Verdict::Compatible)
        .map(|v| v.name.as_str())
        .collect();
    if compatible.is_empty() {
        // The first reason of each pool, without the long requirements/resources dump
        // of instance-type errors; `kelp why pod` has the whole story.
        let mut why: Vec<String> = nodepools
            .iter()
            .take(4)
            .map(|v| match v.reasons.first() {
                Some(r) if r.category == Category::InstanceTypes => {
                    format!(
                        "{}: instance types: {}",
                        v.name,
                        without_requirements(&r.message)
                    )
                }
                Some(r) => format!("{}: {}", v.name, without_requirements(&r.message)),
                None => format!("{}: cannot tell", v.name),
            })
            .collect();
        if nodepools.len() > 4 {
            why.push(format!("{} more", nodepools.len() - 4));
        }
        return format!("no NodePool can run it ({})", why.join("; "));
    }
    let evidence = match message {
        Some(m) => karpenter_says(m),
        None => "no Karpenter scheduling event yet: is the Karpenter controller running?".into(),
    };
    let pools = if compatible.len() == 1 {
        format!("NodePool {} could take it", compatible[0])
    } else {
        format!("NodePools {} could take it", compatible.join(", "))
    };
    format!("{pools}, yet no capacity was launched ({evidence})")
}

/// How many of Karpenter's reasons a one-line summary quotes. The whole message is the
/// finding's `details.event`, `kelp why pod`'s and the dashboard's detail pane's.
const QUOTED_REASONS: usize = 3;

/// Karpenter's `FailedScheduling` message in a summary: its first [`QUOTED_REASONS`]
/// reasons in its own words and order, each without the requirements and resources an
/// instance-type error lists, then how many more it gives.
fn karpenter_says(message: &str) -> String {
    let body = message.trim_start_matches("Failed to schedule pod, ");
    let parts = split_parts(body);
    let quoted: Vec<&str> = parts
        .iter()
        .take(QUOTED_REASONS)
        .map(|p| without_requirements(p))
        .collect();
    let mut says = format!("Karpenter says: {}", quoted.join("; "));
    if let Some(more) = parts.len().checked_sub(QUOTED_REASONS).filter(|&n| n > 0) {
        says.push_str(&format!("; {more} more reasons"));
    }
    says
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Karpenter v1.14.1's message (flat, as `testenv/capture-fixtures` recorded it):
    /// the first three reasons are quoted as written, the rest counted.
    #[test]
    fn a_long_message_quotes_its_first_reasons_and_counts_the_rest() {
        let message = "Failed to schedule pod, incompatible requirements, label \"capture.kelp.dev/scenario\" does not have known values; did not tolerate taint (taint=capture.kelp.dev/scenario=when-empty:NoSchedule); did not tolerate taint (taint=capture.kelp.dev/scenario=underused:NoSchedule); did not tolerate taint (taint=capture.kelp.dev/scenario=topology:NoSchedule); no instance type met the scheduling requirements or had a required offering, requirements=karpenter.sh/nodepool In [default], resources={\"cpu\":\"1\"}";
        assert_eq!(
            karpenter_says(message),
            "Karpenter says: incompatible requirements, label \"capture.kelp.dev/scenario\" does not have known values; did not tolerate taint (taint=capture.kelp.dev/scenario=when-empty:NoSchedule); did not tolerate taint (taint=capture.kelp.dev/scenario=underused:NoSchedule); 2 more reasons"
        );
    }

    /// v1.0-v1.4's wrapped form keeps its wrapper (it names the pool); an instance-type
    /// error loses only its requirements and resources; a short message has no count.
    #[test]
    fn a_short_message_is_quoted_whole_but_for_its_requirements() {
        let message = "Failed to schedule pod, incompatible with nodepool \"gpu\", daemonset overhead={\"cpu\":\"155m\"}, did not tolerate nvidia.com/gpu=true:NoSchedule; incompatible with nodepool \"default\", daemonset overhead={\"cpu\":\"155m\"}, no instance type has enough resources, requirements=karpenter.sh/nodepool In [default], resources={\"cpu\":\"500155m\"}";
        assert_eq!(
            karpenter_says(message),
            "Karpenter says: incompatible with nodepool \"gpu\", daemonset overhead={\"cpu\":\"155m\"}, did not tolerate nvidia.com/gpu=true:NoSchedule; incompatible with nodepool \"default\", daemonset overhead={\"cpu\":\"155m\"}, no instance type has enough resources"
        );
        assert_eq!(
            karpenter_says("something kelp has never seen"),
            "Karpenter says: something kelp has never seen"
        );
    }
}
