//! The pending pods panel: each pod Karpenter has to place, oldest first, with every
//! NodePool's verdict in Karpenter's order, the reasons and what to change, and
//! Karpenter's event.

use std::collections::BTreeMap;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use serde::Serialize;

use super::*;
use crate::analysis::ago;
use crate::analysis::provisioning::{PodDiagnosis, Verdict};
use crate::explain::text::{requests_line, serde_name};
use crate::findings::Severity;

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Pending {
    pub total: usize,
    /// Whether the page carries the verdicts of each row (small clusters) or loads them
    /// when a row is expanded.
    pub inline: bool,
    pub rows: Vec<PendingRow>,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PendingRow {
    pub namespace: String,
    pub name: String,
    pub pending_for: String,
    pub requests: String,
    pub summary: String,
    /// One line: `6 pools rejected: 2 taints, 2 requirements, 1 limits, 1 not ready`.
    pub verdict_line: String,
    /// What Karpenter would launch on the first compatible pool, in words ("" when kelp
    /// has no catalogue or no pool is compatible).
    pub launch: String,
    /// The worst finding about the pod: critical, warning, info or "".
    /// The worst finding about it, if any.
    #[serde(serialize_with = "super::words::severity_or_empty")]
    pub severity: Option<Severity>,
    /// In the page (expanded row) and `.../pods/{ns}/{name}/why`, not the overview API.
    #[serde(skip_serializing)]
    pub verdicts: Vec<VerdictRow>,
    #[serde(skip_serializing)]
    pub event: Option<EventRow>,
    #[serde(skip_serializing)]
    pub scheduler: String,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct VerdictRow {
    pub nodepool: String,
    pub verdict: &'static str,
    pub reasons: Vec<String>,
    /// The first reason in words (`taints: did not tolerate ...`).
    pub reason: String,
    /// What would let this pool take the pod.
    pub advice: String,
    /// agrees, disagrees, not mentioned (an event that is silent on this pool), or no event.
    pub event: &'static str,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EventRow {
    pub reason: String,
    pub message: String,
    pub format: &'static str,
    pub ago: String,
}

pub(super) fn verdict_name(v: &Verdict) -> &'static str {
    match v {
        Verdict::Compatible => "compatible",
        Verdict::Rejected => "rejected",
        Verdict::Unknown => "unknown",
    }
}

pub(super) fn pending(
    diagnoses: &[Arc<PodDiagnosis>],
    now: DateTime<Utc>,
    worst: &BTreeMap<String, Severity>,
) -> Pending {
    let mut sorted: Vec<&Arc<PodDiagnosis>> = diagnoses.iter().collect();
    // Oldest first; pods with no known start last, then by name for a stable page.
    sorted.sort_by(|a, b| {
        a.since
            .is_none()
            .cmp(&b.since.is_none())
            .then(a.since.cmp(&b.since))
            .then_with(|| a.pod.cmp(&b.pod))
    });
    let rows: Vec<PendingRow> = sorted
        .into_iter()
        .take(PENDING_CAP)
        .map(|d| PendingRow {
            namespace: d.pod.namespace.clone().unwrap_or_default(),
            name: d.pod.name.clone(),
            pending_for: d.pending_for.clone(),
            requests: requests_line(&d.requests),
            summary: d.verdict_summary().to_string(),
            verdict_line: words::verdict_line(d),
            launch: d
                .compatible()
                .next()
                .and_then(|v| {
                    let l = crate::analysis::provisioning::describe_launch(v.launch.as_ref()?)?;
                    Some(format!("NodePool {}: {l}", v.name))
                })
                .unwrap_or_default(),
            severity: words::worst([worst
                .get(&select_key("Pod", d.pod.namespace.as_deref(), &d.pod.name))
                .copied()]),
            verdicts: d
                .nodepools
                .iter()
                .map(|v| VerdictRow {
                    nodepool: v.name.clone(),
                    verdict: verdict_name(&v.verdict),
                    reasons: v.reasons.iter().map(|r| r.message.clone()).collect(),
                    reason: words::reason_words(v),
                    advice: words::advice(v),
                    event: match (v.event_agrees, &d.event) {
                        (Some(true), _) => "agrees",
                        (Some(false), _) => "disagrees",
                        (None, Some(_)) => "not mentioned",
                        (None, None) => "no event",
                    },
                })
                .collect(),
            event: d.event.as_ref().map(|e| EventRow {
                reason: e.reason.clone(),
                message: e.message.to_string(),
                format: match serde_name(e.format).as_str() {
                    "wrapped" => "v1.0-v1.4",
                    "flat" => "v1.5+",
                    _ => "unrecognised",
                },
                ago: e
                    .last_seen
                    .map(|t| format!("{} ago", ago(now, t)))
                    .unwrap_or_default(),
            }),
            scheduler: d.scheduler.as_deref().unwrap_or_default().to_string(),
        })
        .collect();
    let verdicts: usize = rows
        .iter()
        .map(|r: &PendingRow| r.verdicts.len().max(1))
        .sum();
    Pending {
        total: diagnoses.len(),
        inline: verdicts <= INLINE_VERDICTS,
        rows,
    }
}
