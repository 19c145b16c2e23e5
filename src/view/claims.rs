//! The NodeClaims panel: claims grouped by pool with their node, state badges, drift,
//! disruption blockers (read from the pass) and price; and the rollout of drifted pools.

use std::collections::BTreeMap;

use serde::Serialize;

use super::*;
use crate::analysis::disruption::consolidation::State;
use crate::analysis::provisioning::claim_pool;
use crate::analysis::{ago, capacity, Pass};
use crate::explain::text::serde_name;
use crate::findings::Severity;
use crate::karpenter::consolidation::Reason;
use crate::karpenter::labels;
use crate::model::{condition, is_true, Cluster, Node, NodeClaim};

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ClaimGroup {
    pub nodepool: String,
    pub open: bool,
    pub total: usize,
    pub drifted: usize,
    pub blocked: usize,
    /// How many of `rows` the page renders inline (the rest load on demand).
    pub inline: usize,
    /// Every row (the overview API leaves them out: they are at `/nodeclaims`).
    #[serde(skip_serializing)]
    pub rows: Vec<ClaimRow>,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ClaimRow {
    pub name: String,
    pub nodepool: String,
    pub node: String,
    pub instance_type: String,
    pub capacity_type: String,
    pub zone: String,
    pub age: String,
    pub conditions: Vec<Badge>,
    pub drifted: bool,
    pub drift_reason: String,
    pub image_id: String,
    pub blocked_by: Vec<String>,
    pub blocked_detail: String,
    /// Its consolidation answer, shown when Karpenter considers it: `candidate`, or the
    /// reason it is held (`no-cheaper-node`, `needs-replacement`, ...); "" otherwise.
    pub consolidation: String,
    /// The answer in one sentence (the badge's title).
    pub consolidation_detail: String,
    pub deleting: bool,
    /// The worst finding about the claim or its node: critical, warning, info or "".
    /// The worst finding about it, if any.
    #[serde(serialize_with = "super::words::severity_or_empty")]
    pub severity: Option<Severity>,
    /// The node's price, when known.
    pub price_per_hour: Option<f64>,
    pub price: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct Badge {
    pub name: &'static str,
    /// true, false, unknown (condition absent)
    pub state: &'static str,
    /// The colour: ok (green), drift (amber), bad (red), neutral (grey).
    pub tone: &'static str,
    pub reason: String,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Rollout {
    pub nodepool: String,
    pub drifted: usize,
    pub total: usize,
    pub ratio: f64,
    pub pct: String,
    pub nodeclass: String,
    /// `status.amis` of the EC2NodeClass (empty for other providers).
    pub amis: Vec<String>,
    /// Claims whose imageID is one of `amis`.
    pub on_current_ami: usize,
    /// Claims with an imageID that is not in `amis`.
    pub on_old_ami: usize,
    /// The AMIs new nodes of this pool get: those of `amis` its claims run on (all of `amis`
    /// when none does yet), with their names.
    pub target: Vec<(String, String)>,
    /// The imageIDs of claims that are not in `amis` (to be replaced): the
    /// [`OLD_AMIS_SHOWN`] most claims run on (then by ID), and how many more there are.
    pub old: Vec<String>,
    pub old_more: usize,
    /// Where the rollout stands: `1 replacing, 2 waiting (about 15s), 1 held by their own
    /// blockers` (see [`super::pools::rollout_line`]).
    pub progress: String,
}

/// How many of the AMIs being replaced a rollout row names: a pool whose nodes run on
/// hundreds of old images shows the commonest and a count, not a wall of IDs.
pub const OLD_AMIS_SHOWN: usize = 5;

/// The distinct `ids`, the commonest first (then by ID): the first `shown`, and how many
/// others there are.
fn commonest(ids: impl Iterator<Item = String>, shown: usize) -> (Vec<String>, usize) {
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    for id in ids {
        *counts.entry(id).or_default() += 1;
    }
    let mut by_count: Vec<(String, usize)> = counts.into_iter().collect();
    by_count.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    let more = by_count.len().saturating_sub(shown);
    (
        by_count.into_iter().take(shown).map(|(id, _)| id).collect(),
        more,
    )
}

pub(super) fn badge(claim: &NodeClaim, name: &'static str) -> Badge {
    match condition(&claim.status.conditions, name) {
        Some(c) => Badge {
            name,
            state: match c.status.as_str() {
                "True" => "true",
                "False" => "false",
                _ => "unknown",
            },
            // Drifted=True asks for a replacement (amber); a lifecycle step that failed is red;
            // Consolidatable is neither good nor bad.
            tone: match (name, c.status.as_str()) {
                ("Drifted", "True") => "drift",
                ("Drifted", _) | ("Consolidatable", _) => "neutral",
                (_, "True") => "ok",
                (_, "False") => "bad",
                _ => "neutral",
            },
            // A reason that only repeats the condition's type (Karpenter's Launched=True
            // has reason Launched) says nothing more.
            reason: [c.reason.clone(), c.message.clone()]
                .into_iter()
                .flatten()
                .filter(|s| !s.is_empty() && s != name)
                .collect::<Vec<_>>()
                .join(": "),
        },
        None => Badge {
            name,
            state: "unknown",
            tone: "neutral",
            reason: String::new(),
        },
    }
}

pub(super) fn claim_groups(
    c: &Cluster,
    pass: &Pass,
    drifted_by_pool: &mut BTreeMap<String, usize>,
    worst: &BTreeMap<String, Severity>,
) -> Vec<ClaimGroup> {
    let mut groups: BTreeMap<String, Vec<ClaimRow>> = BTreeMap::new();
    for claim in c.nodeclaims.values() {
        let pool = claim_pool(c, &claim.metadata.name).unwrap_or_default();
        let node: Option<&Node> = c.node_for_claim(claim);
        let l = |k: &str| {
            claim
                .metadata
                .labels
                .get(k)
                .or_else(|| node.and_then(|n| n.metadata.labels.get(k)))
                .cloned()
                .unwrap_or_default()
        };
        let drifted = is_true(&claim.status.conditions, "Drifted");
        // The node's disruption state, as the pass worked it out.
        let state = node.and_then(|n| pass.nodes.get(n.metadata.name.as_str()));
        let (blocked_by, blocked_detail) = match state {
            Some(d) => {
                // Each kind once, in the order the blockers come.
                let mut kinds: Vec<String> = Vec::new();
                for b in &d.blockers {
                    // The kind and the object, visibly: `pdb web/storefront`.
                    let mut k = serde_name(b.kind);
                    if let Some(o) = &b.object {
                        let name = match &o.namespace {
                            Some(ns) => format!("{ns}/{}", o.name),
                            None => o.name.clone(),
                        };
                        k = format!("{k} {name}");
                    }
                    if !kinds.contains(&k) {
                        kinds.push(k);
                    }
                }
                let detail = d
                    .blockers
                    .iter()
                    .map(|b| b.message.clone())
                    .collect::<Vec<_>>()
                    .join("; ");
                (kinds, detail)
            }
            None => (Vec::new(), String::new()),
        };
        let (consolidation, consolidation_detail) = match state {
            Some(d) => {
                let x = &d.consolidation;
                let badge = match (x.state, x.reason) {
                    (State::Candidate, _) => "candidate".to_string(),
                    // The blockers' own badge says it already.
                    (State::Blocked, Some(Reason::Blocked)) if !d.blockers.is_empty() => {
                        String::new()
                    }
                    (State::Blocked, Some(r)) => r.as_str().to_string(),
                    (State::Unknown, _) => "unknown".to_string(),
                    _ => String::new(),
                };
                let detail = if badge.is_empty() {
                    String::new()
                } else {
                    x.message.clone()
                };
                (badge, detail)
            }
            None => (String::new(), String::new()),
        };
        let drift_reason = condition(&claim.status.conditions, "Drifted")
            .filter(|c| c.is_true())
            .and_then(|c| c.reason.clone())
            .unwrap_or_default();
        let node_name = claim.status.node_name.clone().unwrap_or_default();
        let severity = words::worst([
            worst
                .get(&select_key("NodeClaim", None, &claim.metadata.name))
                .copied(),
            (!node_name.is_empty())
                .then(|| worst.get(&select_key("Node", None, &node_name)).copied())
                .flatten(),
        ]);
        let price_per_hour = node.and_then(|n| capacity::node_price(c, n));
        groups.entry(pool.clone()).or_default().push(ClaimRow {
            nodepool: pool,
            name: claim.metadata.name.clone(),
            node: node_name,
            severity,
            price: price_per_hour.map(money).unwrap_or_default(),
            price_per_hour,
            instance_type: l(labels::INSTANCE_TYPE),
            capacity_type: l(labels::CAPACITY_TYPE),
            zone: l(labels::ZONE),
            age: claim
                .metadata
                .creation_timestamp
                .map(|t| ago(pass.now, t))
                .unwrap_or_default(),
            conditions: [
                "Launched",
                "Registered",
                "Initialized",
                "Drifted",
                "Consolidatable",
            ]
            .into_iter()
            .map(|n| badge(claim, n))
            .collect(),
            drifted,
            drift_reason,
            image_id: claim.status.image_id.clone().unwrap_or_default(),
            blocked_by,
            blocked_detail,
            consolidation,
            consolidation_detail,
            deleting: claim.metadata.deletion_timestamp.is_some(),
        });
    }
    let mut inline_left = INLINE_ROWS_TOTAL;
    groups
        .into_iter()
        .map(|(nodepool, mut rows)| {
            // Drifted and blocked first, then by name.
            rows.sort_by(|a, b| {
                b.drifted
                    .cmp(&a.drifted)
                    .then(
                        b.blocked_by
                            .is_empty()
                            .cmp(&a.blocked_by.is_empty())
                            .reverse(),
                    )
                    .then_with(|| a.name.cmp(&b.name))
            });
            let drifted = rows.iter().filter(|r| r.drifted).count();
            drifted_by_pool.insert(nodepool.clone(), drifted);
            let inline = if drifted > 0 {
                rows.len().min(INLINE_ROWS_PER_GROUP).min(inline_left)
            } else {
                0
            };
            inline_left -= inline;
            ClaimGroup {
                inline,
                open: drifted > 0,
                total: rows.len(),
                drifted,
                blocked: rows.iter().filter(|r| !r.blocked_by.is_empty()).count(),
                nodepool,
                rows,
            }
        })
        .collect()
}

pub(super) fn rollout(c: &Cluster, groups: &[ClaimGroup]) -> Vec<Rollout> {
    groups
        .iter()
        .filter(|g| !g.nodepool.is_empty())
        .map(|g| {
            let class = c.nodepools.get(&g.nodepool).and_then(|p| c.nodeclass_of(p));
            let status_amis = class.map(|k| k.status.amis.as_slice()).unwrap_or_default();
            let amis: Vec<String> = status_amis.iter().map(|a| a.id.clone()).collect();
            let in_use = |id: &str| g.rows.iter().any(|r| r.image_id == id);
            let mut target: Vec<(String, String)> = status_amis
                .iter()
                .filter(|a| in_use(&a.id))
                .map(|a| (a.id.clone(), a.name.clone().unwrap_or_default()))
                .collect();
            if target.is_empty() {
                target = status_amis
                    .iter()
                    .map(|a| (a.id.clone(), a.name.clone().unwrap_or_default()))
                    .collect();
            }
            let (old, old_more) = if status_amis.is_empty() {
                (Vec::new(), 0)
            } else {
                commonest(
                    g.rows
                        .iter()
                        .filter(|r| !r.image_id.is_empty() && !amis.contains(&r.image_id))
                        .map(|r| r.image_id.clone()),
                    OLD_AMIS_SHOWN,
                )
            };
            let with_image: Vec<&ClaimRow> =
                g.rows.iter().filter(|r| !r.image_id.is_empty()).collect();
            let on_current_ami = with_image
                .iter()
                .filter(|r| amis.contains(&r.image_id))
                .count();
            let ratio = if g.total == 0 {
                0.0
            } else {
                g.drifted as f64 / g.total as f64
            };
            Rollout {
                nodepool: g.nodepool.clone(),
                drifted: g.drifted,
                total: g.total,
                ratio,
                pct: format!("{:.0}%", ratio * 100.0),
                nodeclass: class
                    .map(|k| format!("{}/{}", k.kind, k.metadata.name))
                    .unwrap_or_default(),
                on_old_ami: if amis.is_empty() {
                    0
                } else {
                    with_image.len() - on_current_ami
                },
                on_current_ami,
                amis,
                target,
                old,
                old_more,
                progress: String::new(),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rollout_names_the_commonest_old_amis_and_counts_the_rest() {
        let ids = [
            "ami-b", "ami-a", "ami-c", "ami-c", "ami-d", "ami-e", "ami-f", "ami-g",
        ];
        let (shown, more) = commonest(ids.iter().map(|s| s.to_string()), 5);
        assert_eq!(shown, ["ami-c", "ami-a", "ami-b", "ami-d", "ami-e"]);
        assert_eq!(more, 2);
        let (shown, more) = commonest(["ami-x".to_string()].into_iter(), 5);
        assert_eq!((shown, more), (vec!["ami-x".to_string()], 0));
    }
}
