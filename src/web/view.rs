//! The dashboard's view model: a pure function of (model, report, pending diagnoses,
//! price status, now). The HTML page and the JSON API both render it, so they cannot
//! disagree, and it is built once per analysis pass, not per request.

use std::collections::BTreeMap;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use serde::Serialize;

use crate::analysis::disruption;
use crate::analysis::provisioning::{self, PodDiagnosis, Verdict};
use crate::analysis::{ago, capacity, Pass};
pub use crate::source::status::PriceProblem;
use crate::explain::text::{requests_line, serde_name};
use crate::findings::{Code, Report, Severity};
use crate::karpenter::budgets::{self, DisruptionReason};
use crate::karpenter::labels;
use crate::karpenter::resources::{format_quantity, Resources};
use crate::model::{condition, is_true, Cluster, Node, NodeClaim, NodePool};

mod events;
mod words;

use events::{capacity_panel, timeline};
pub use events::{ice_offering, LANES};

/// At most this many pending pods are listed, oldest first.
pub const PENDING_CAP: usize = 50;
/// Rows of one NodeClaim group a fragment (an expanded group) renders; the JSON API has them all.
pub const CLAIMS_PER_GROUP: usize = 1000;
/// Rows of an open (drifted) group rendered in the page itself, and in all groups together:
/// the rest load when asked, so the page stays small on a big cluster.
pub const INLINE_ROWS_PER_GROUP: usize = 10;
pub const INLINE_ROWS_TOTAL: usize = 60;
/// Findings listed on the page and in the overview API (worst first); `/findings` has all.
pub const FINDINGS_CAP: usize = 50;
/// Pending pods' verdicts are rendered in the page when there are at most this many
/// (pods x NodePools); past it, a row's verdicts load when it is expanded.
pub const INLINE_VERDICTS: usize = 400;
/// How far back the timeline reaches.
pub const TIMELINE_HOURS: i64 = 3;

/// Whether the page can show Karpenter at all, and if not, why and how to fix it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Install {
    /// ok, not-installed, v1beta1-only, forbidden
    pub state: &'static str,
    pub title: String,
    pub fix: String,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Overview {
    pub cluster: String,
    pub generated_at: DateTime<Utc>,
    pub install: Install,
    pub counts: Counts,
    /// Where prices come from; None hides the cost columns.
    pub price_source: Option<String>,
    pub price_problem: Option<PriceProblem>,
    /// The cluster's $/hr: the sum of the priced nodes (None when nothing is priced).
    pub cost_per_hour: Option<f64>,
    pub cost: String,
    pub nodepools: Vec<PoolRow>,
    pub nodeclaims: Vec<ClaimGroup>,
    pub pending: Pending,
    pub rollout: Vec<Rollout>,
    pub capacity: Capacity,
    pub timeline: Timeline,
    /// The worst [`FINDINGS_CAP`] findings; `counts.findings` says how many there are.
    pub findings: Vec<FindingRow>,
    /// Set when the model may be out of date: which watches stopped, and since when.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stale: Option<crate::source::status::Stale>,
}

#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Counts {
    pub findings: usize,
    pub nodepools: usize,
    pub nodeclaims: usize,
    pub nodes: usize,
    pub pods: usize,
    pub pending: usize,
    pub drifted: usize,
    pub critical: usize,
    pub warning: usize,
    pub info: usize,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PoolRow {
    pub name: String,
    pub weight: i32,
    pub consolidation_policy: String,
    pub consolidate_after: String,
    pub expire_after: String,
    pub budgets: Vec<BudgetRow>,
    /// Disruptions allowed now, by reason (`drifted: 1`).
    pub allowed: Vec<(String, String)>,
    pub limits: Vec<LimitBar>,
    pub nodes: usize,
    pub ready: String,
    pub ready_ok: bool,
    pub ready_reason: String,
    pub cost_per_hour: Option<f64>,
    pub cost: String,
    pub spot_savings_pct: Option<f64>,
    pub savings: String,
    pub drifted: usize,
    pub claims: usize,
    /// The worst finding about this pool: critical, warning, info or "".
    pub severity: String,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BudgetRow {
    /// `0 nodes · 0 6 * * * for 8h · Drifted`
    pub label: String,
    pub nodes: String,
    pub schedule: String,
    pub duration: String,
    pub reasons: String,
    pub active: bool,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LimitBar {
    pub resource: String,
    pub used: String,
    pub limit: String,
    /// used / limit, 0..=1 (capped for the bar; `pct` says the truth).
    pub ratio: f64,
    pub pct: String,
    pub level: &'static str,
}

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
    pub deleting: bool,
    /// The worst finding about the claim or its node: critical, warning, info or "".
    pub severity: String,
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
    /// The worst finding about the pod: critical, warning, info or "".
    pub severity: String,
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
    /// The imageIDs of claims that are not in `amis` (to be replaced).
    pub old: Vec<String>,
}

#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Capacity {
    /// Offerings the controller reports unavailable.
    pub unavailable: Vec<OfferingRow>,
    /// InsufficientCapacityError events, grouped.
    pub errors: Vec<IceRow>,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct OfferingRow {
    pub instance_type: String,
    pub zone: String,
    pub capacity_type: String,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct IceRow {
    pub instance_type: String,
    pub zone: String,
    pub capacity_type: String,
    pub nodepool: String,
    pub count: i64,
    pub last: String,
    pub message: String,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Timeline {
    pub hours: i64,
    pub start: DateTime<Utc>,
    pub end: DateTime<Utc>,
    pub marks: Vec<Mark>,
    /// Hour ticks: (x in 0..1000, label).
    pub ticks: Vec<(u32, String)>,
    /// Lane names, top to bottom.
    pub lanes: Vec<&'static str>,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Mark {
    pub at: DateTime<Utc>,
    /// launch, disruption, termination, eviction, interruption
    pub lane: &'static str,
    pub lane_index: usize,
    /// 0..1000 across the window.
    pub x: u32,
    pub title: String,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FindingRow {
    pub severity: Severity,
    pub code: &'static str,
    pub object: String,
    /// `Kind/ns/name` selection key for the detail pane.
    pub select: String,
    pub nodepool: String,
    /// The object's namespace ("" for cluster-scoped objects), for the page's filter.
    pub namespace: String,
    pub message: String,
}

/// Everything one pass hands to the view, besides the model.
pub struct Inputs<'a> {
    pub cluster_name: &'a str,
    /// The last scrape problem, when prices come from nowhere.
    pub price_problem: Option<PriceProblem>,
    /// A permission the watcher lacks (e.g. `list nodepools.karpenter.sh`), with the API's message.
    pub forbidden: Option<String>,
    /// Kinds whose watches have made no progress for a while (an API server outage).
    pub stale: Option<crate::source::status::Stale>,
    /// The clock stands still (a dump's capture time): the page says "as of".
    pub fixed_clock: bool,
}

pub fn overview(c: &Cluster, pass: &Pass, i: Inputs) -> Overview {
    let now = pass.now;
    let report = &*pass.report;
    let install = install(c, report, i.forbidden.as_deref());
    let prices = Prices::of(c);
    let worst = words::worst_by_object(report);
    let mut drifted_by_pool: BTreeMap<String, usize> = BTreeMap::new();
    let nodeclaims = claim_groups(c, pass, &mut drifted_by_pool, &worst);
    let mut nodepools: Vec<PoolRow> = c
        .nodepools
        .values()
        .map(|p| pool_row(c, pass, p, &prices, &drifted_by_pool, &worst))
        .collect();
    // Karpenter's order: the highest weight first, then by name.
    nodepools.sort_by(|a, b| b.weight.cmp(&a.weight).then_with(|| a.name.cmp(&b.name)));
    let pending = pending(&pass.pending, now, &worst);
    let priced: Vec<f64> = c
        .nodes
        .values()
        .filter_map(|n| capacity::node_price(c, n))
        .collect();
    let cost_per_hour = (!priced.is_empty()).then(|| priced.iter().sum::<f64>());
    let price_source = prices.source.map(str::to_string);
    let price_problem = if price_source.is_some() {
        None
    } else {
        Some(i.price_problem.unwrap_or_else(|| PriceProblem::NotScraped {
            message:
                "no prices: no controller metrics were read, and nodes carry no price label".into(),
        }))
    };
    let sev = |s: Severity| report.findings.iter().filter(|f| f.severity == s).count();
    let counts = Counts {
        findings: report.findings.len(),
        nodepools: c.nodepools.len(),
        nodeclaims: c.nodeclaims.len(),
        nodes: c.nodes.len(),
        pods: c.pods.len(),
        pending: pass.pending.len(),
        drifted: drifted_by_pool.values().sum(),
        critical: sev(Severity::Critical),
        warning: sev(Severity::Warning),
        info: sev(Severity::Info),
    };
    Overview {
        cluster: i.cluster_name.to_string(),
        generated_at: now,
        install,
        counts,
        price_source,
        price_problem,
        cost: cost_per_hour.map(money).unwrap_or_default(),
        cost_per_hour,
        nodepools,
        rollout: rollout(c, &nodeclaims),
        nodeclaims,
        pending,
        capacity: capacity_panel(c, now),
        timeline: timeline(c, now),
        findings: report
            .findings
            .iter()
            .take(FINDINGS_CAP)
            .map(|f| FindingRow {
                severity: f.severity,
                code: f.code.as_str(),
                object: f.object.to_string(),
                // Only the kinds the detail pane shows are selectable.
                select: if ["NodePool", "NodeClaim", "Node", "Pod"]
                    .contains(&f.object.kind.as_str())
                {
                    select_key(
                        &f.object.kind,
                        f.object.namespace.as_deref(),
                        &f.object.name,
                    )
                } else {
                    String::new()
                },
                nodepool: f.nodepool.clone().unwrap_or_default(),
                namespace: f.object.namespace.clone().unwrap_or_default(),
                message: f.message.clone(),
            })
            .collect(),
        stale: i.stale,
    }
}

/// The detail pane's selection key: `Kind/name` or `Kind/namespace/name`.
pub fn select_key(kind: &str, namespace: Option<&str>, name: &str) -> String {
    match namespace {
        Some(ns) => format!("{kind}/{ns}/{name}"),
        None => format!("{kind}/{name}"),
    }
}

fn install(c: &Cluster, report: &Report, forbidden: Option<&str>) -> Install {
    if let Some(f) = forbidden {
        return Install {
            state: "forbidden",
            title: format!("kelp may not read Karpenter's objects: {f}"),
            fix: "Grant kelp's ServiceAccount get, list and watch on nodepools, nodeclaims (karpenter.sh) and ec2nodeclasses (karpenter.k8s.aws): the ClusterRole in charts/kelp has exactly these.".into(),
        };
    }
    let has = |code: Code| report.findings.iter().find(|f| f.code == code);
    if let Some(f) = has(Code::KarpenterApiOutdated) {
        return Install {
            state: "v1beta1-only",
            title: f.message.clone(),
            fix: "Upgrade Karpenter to v1 and migrate your v1beta1 NodePools, NodeClaims and EC2NodeClasses to karpenter.sh/v1 (see Karpenter's v1 migration guide).".into(),
        };
    }
    if has(Code::KarpenterNotInstalled).is_some() && !c.karpenter_seen() {
        return Install {
            state: "not-installed",
            title: "Karpenter is not installed in this cluster: the karpenter.sh/v1 API is not served.".into(),
            fix: "Install Karpenter (its Helm chart installs the CRDs), or point kelp at the right cluster with --context.".into(),
        };
    }
    Install {
        state: "ok",
        title: String::new(),
        fix: String::new(),
    }
}

/// Prices by (instance type, zone, capacity type), and where they come from.
struct Prices {
    source: Option<&'static str>,
    on_demand: BTreeMap<(String, String), f64>,
}

impl Prices {
    fn of(c: &Cluster) -> Prices {
        let mut on_demand = BTreeMap::new();
        let mut source = None;
        if let Some(m) = &c.metrics {
            for o in &m.offerings {
                if let Some(p) = o.price {
                    source = Some("controller offering price estimates");
                    if o.capacity_type == "on-demand" {
                        on_demand.insert((o.instance_type.clone(), o.zone.clone()), p);
                    }
                }
            }
            if source.is_none() && !m.nodepool_cost.is_empty() {
                source = Some("karpenter_nodepools_cost_total");
            }
        }
        if source.is_none()
            && c.nodes
                .values()
                .any(|n| n.metadata.labels.contains_key(labels::KWOK_PRICE))
        {
            source = Some("kwok instance-price node labels");
        }
        Prices { source, on_demand }
    }
}

/// A quantity for people: memory in Gi (or Ti) with at most one decimal, the rest as
/// Kubernetes writes it.
pub fn display_quantity(resource: &str, v: f64) -> String {
    let bytes = resource == "memory" || resource.ends_with("storage");
    const GI: f64 = (1u64 << 30) as f64;
    if !bytes || !v.is_finite() || v < GI {
        return format_quantity(resource, v);
    }
    let (n, unit) = if v >= 10.0 * 1024.0 * GI {
        (v / (1024.0 * GI), "Ti")
    } else {
        (v / GI, "Gi")
    };
    let s = format!("{n:.1}");
    format!("{}{unit}", s.strip_suffix(".0").unwrap_or(&s))
}

fn money(v: f64) -> String {
    format!("${v:.2}/h")
}

fn pool_row(
    c: &Cluster,
    pass: &Pass,
    p: &NodePool,
    prices: &Prices,
    drifted: &BTreeMap<String, usize>,
    worst: &BTreeMap<String, Severity>,
) -> PoolRow {
    let now = pass.now;
    let name = p.metadata.name.clone();
    let d = &p.spec.disruption;
    let default_budgets = [budgets::Budget::default()];
    let budget_list: &[budgets::Budget] = d.budgets.as_deref().unwrap_or(&default_budgets);
    let budgets = budget_list
        .iter()
        .map(|b| {
            let schedule = b.schedule.clone().unwrap_or_default();
            let duration = b.duration.clone().unwrap_or_default();
            let reasons = b
                .reasons
                .as_ref()
                .map(|r| r.join(", "))
                .unwrap_or_else(|| "all".into());
            BudgetRow {
                label: words::budget_label(&b.nodes, &schedule, &duration, &reasons),
                nodes: b.nodes.clone(),
                schedule,
                duration,
                reasons,
                active: budgets::is_active(b, now).unwrap_or(false),
            }
        })
        .collect();
    let allowed = DisruptionReason::ALL
        .iter()
        .map(|&r| {
            let a = disruption::pool_allowed(c, p, r, now);
            let v = match (&a.error, a.limit) {
                (Some(e), _) => format!("error: {e}"),
                (None, None) => "unbounded".into(),
                (None, Some(_)) => a.allowed.to_string(),
            };
            (r.as_str().to_string(), v)
        })
        .collect();
    let usage = pass
        .pools
        .get(&name)
        .cloned()
        .unwrap_or_else(|| provisioning::PoolUsage::of(c, p));
    let nodes = usage.nodes;
    let usage = usage.counted();
    let limits = Resources::from_quantities(&p.spec.limits)
        .map(|l| {
            l.0.iter()
                .map(|(k, &limit)| {
                    let used = usage.get(k);
                    let ratio = if limit > 0.0 {
                        used / limit
                    } else if used > 0.0 {
                        f64::INFINITY
                    } else {
                        1.0
                    };
                    LimitBar {
                        resource: k.clone(),
                        used: display_quantity(k, used),
                        limit: display_quantity(k, limit),
                        ratio: ratio.clamp(0.0, 1.0),
                        pct: if ratio.is_finite() {
                            format!("{:.0}%", ratio * 100.0)
                        } else {
                            "over".into()
                        },
                        level: if ratio >= 1.0 {
                            "full"
                        } else if ratio >= 0.9 {
                            "near"
                        } else {
                            "ok"
                        },
                    }
                })
                .collect()
        })
        .unwrap_or_default();
    let (ready, ready_ok, ready_reason) = match condition(&p.status.conditions, "Ready") {
        Some(cnd) => (
            cnd.status.clone(),
            cnd.is_true(),
            [cnd.reason.clone(), cnd.message.clone()]
                .into_iter()
                .flatten()
                .filter(|s| !s.is_empty())
                .collect::<Vec<_>>()
                .join(": "),
        ),
        None => ("Unknown".into(), false, "no Ready condition yet".into()),
    };
    // $/hr: the sum of node prices; spot savings against on-demand of the same offering.
    let mut cost = 0.0;
    let mut priced = false;
    let (mut spot, mut spot_od) = (0.0, 0.0);
    for n in c.nodes_in_pool(&name) {
        if let Some(price) = capacity::node_price(c, n) {
            cost += price;
            priced = true;
            let l = &n.metadata.labels;
            if l.get(labels::CAPACITY_TYPE).map(String::as_str) == Some("spot") {
                if let (Some(t), Some(z)) = (l.get(labels::INSTANCE_TYPE), l.get(labels::ZONE)) {
                    if let Some(od) = prices.on_demand.get(&(t.clone(), z.clone())) {
                        spot += price;
                        spot_od += od;
                    }
                }
            }
        }
    }
    let pool_cost = c
        .metrics
        .as_ref()
        .and_then(|m| m.nodepool_cost.get(&name).copied());
    let cost_per_hour = if priced { Some(cost) } else { pool_cost };
    let spot_savings_pct = (spot_od > 0.0).then(|| (1.0 - spot / spot_od) * 100.0);
    PoolRow {
        weight: p.spec.weight.unwrap_or(0),
        consolidation_policy: d
            .consolidation_policy
            .clone()
            .unwrap_or_else(|| "WhenEmptyOrUnderutilized".into()),
        consolidate_after: d.consolidate_after.clone().unwrap_or_else(|| "0s".into()),
        expire_after: p
            .spec
            .template
            .spec
            .expire_after
            .clone()
            .unwrap_or_else(|| disruption::DEFAULT_EXPIRE_AFTER.into()),
        budgets,
        allowed,
        limits,
        nodes,
        ready: ready.to_string(),
        ready_ok,
        ready_reason,
        cost: cost_per_hour.map(money).unwrap_or_else(|| "-".into()),
        cost_per_hour,
        savings: spot_savings_pct
            .map(|s| format!("{s:.0}%"))
            .unwrap_or_else(|| "-".into()),
        spot_savings_pct,
        drifted: drifted.get(&name).copied().unwrap_or(0),
        claims: c.claims_in_pool(&name).count(),
        severity: words::worst([worst.get(&select_key("NodePool", None, &name)).copied()]),
        name,
    }
}

fn badge(claim: &NodeClaim, name: &'static str) -> Badge {
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
            reason: [c.reason.clone(), c.message.clone()]
                .into_iter()
                .flatten()
                .filter(|s| !s.is_empty())
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

fn claim_groups(
    c: &Cluster,
    pass: &Pass,
    drifted_by_pool: &mut BTreeMap<String, usize>,
    worst: &BTreeMap<String, Severity>,
) -> Vec<ClaimGroup> {
    let mut groups: BTreeMap<String, Vec<ClaimRow>> = BTreeMap::new();
    for claim in c.nodeclaims.values() {
        let pool = claim
            .metadata
            .labels
            .get(labels::NODEPOOL)
            .cloned()
            .unwrap_or_default();
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
        let (blocked_by, blocked_detail) = match node.and_then(|n| pass.nodes.get(&n.metadata.name)) {
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

fn verdict_name(v: &Verdict) -> &'static str {
    match v {
        Verdict::Compatible => "compatible",
        Verdict::Rejected => "rejected",
        Verdict::Unknown => "unknown",
    }
}

fn pending(
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
            summary: d.verdict_summary(),
            verdict_line: words::verdict_line(d),
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

fn rollout(c: &Cluster, groups: &[ClaimGroup]) -> Vec<Rollout> {
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
            let mut old: Vec<String> = g
                .rows
                .iter()
                .filter(|r| !r.image_id.is_empty() && !amis.contains(&r.image_id))
                .map(|r| r.image_id.clone())
                .collect();
            old.sort();
            old.dedup();
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
                old: if status_amis.is_empty() {
                    Vec::new()
                } else {
                    old
                },
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantities_read_like_a_person_would_write_them() {
        let gi = (1u64 << 30) as f64;
        assert_eq!(
            display_quantity("memory", 143972.0 * 1024.0 * 1024.0),
            "140.6Gi"
        );
        assert_eq!(display_quantity("memory", 1024.0 * gi), "1024Gi");
        assert_eq!(display_quantity("memory", 20.0 * 1024.0 * gi), "20Ti");
        assert_eq!(display_quantity("memory", 512.0 * 1024.0 * 1024.0), "512Mi");
        assert_eq!(display_quantity("cpu", 1.5), "1500m");
        assert_eq!(display_quantity("ephemeral-storage", 100.0 * gi), "100Gi");
    }

    #[test]
    fn an_insufficient_capacity_message_names_its_offering() {
        let m = "NodeClaim gpu-q8w2x event: creating instance, insufficient capacity, with fleet error(s), InsufficientInstanceCapacity: We currently do not have sufficient g6.12xlarge capacity in the Availability Zone you requested (us-west-2c). Our system";
        assert_eq!(
            ice_offering(m),
            (Some("g6.12xlarge".into()), Some("us-west-2c".into()))
        );
        assert_eq!(ice_offering("insufficient capacity, all requested instance types were unavailable during launch"), (None, None));
    }
}
