//! The view model of the dashboard and of `kelp top`: a pure function of (model, one
//! analysis pass, the sources' status). The HTML page, the JSON API and the terminal all
//! render it, so they cannot disagree, and it is built once per analysis pass, not per
//! request.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde::Serialize;

use crate::analysis::capacity::node_price;
use crate::analysis::Pass;
use crate::findings::{Code, Report, Severity};
use crate::karpenter::resources::format_quantity;
use crate::model::Cluster;
pub use crate::source::controller::PriceProblem;

mod capacity;
mod claims;
mod pending;
mod pools;
pub mod timeline;
mod words;

use capacity::capacity_panel;
use claims::{claim_groups, rollout};
pub use claims::{Badge, ClaimGroup, ClaimRow, Rollout};
use pending::pending;
pub use pending::{EventRow, Pending, PendingRow, VerdictRow};
use pools::{pool_row, Prices};
pub use pools::{BudgetRow, LimitBar, PoolRow};
use timeline::timeline;
pub use timeline::LANES;

/// At most this many pending pods are listed, oldest first.
pub const PENDING_CAP: usize = 50;

/// Rows of one NodeClaim group a fragment (an expanded group) renders; the JSON API has them all.
pub const CLAIMS_PER_GROUP: usize = 1000;

/// Rows of an open (drifted) group rendered in the page itself, and in all groups together:
/// the rest load when asked, so the page stays small on a big cluster.
pub const INLINE_ROWS_PER_GROUP: usize = 10;

/// As many as the page's other lists (pending pods, findings) show.
pub const INLINE_ROWS_TOTAL: usize = 50;

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
    pub state: InstallState,
    pub title: String,
    pub fix: String,
}

/// Whether Karpenter can be shown (serialised as [`InstallState::as_str`] names it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InstallState {
    Ok,
    NotInstalled,
    V1beta1Only,
    Forbidden,
}

impl Serialize for InstallState {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl InstallState {
    /// Its name, as the JSON API and the page's CSS write it.
    pub const fn as_str(self) -> &'static str {
        match self {
            InstallState::Ok => "ok",
            InstallState::NotInstalled => "not-installed",
            InstallState::V1beta1Only => "v1beta1-only",
            InstallState::Forbidden => "forbidden",
        }
    }

    /// Whether the page can show Karpenter.
    pub fn is_ok(self) -> bool {
        self == InstallState::Ok
    }
}

impl std::fmt::Display for InstallState {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Overview {
    pub cluster: String,
    pub generated_at: DateTime<Utc>,
    pub install: Install,
    /// The Karpenter release the analysis judged against, and where kelp read it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub karpenter: Option<crate::karpenter::version::Detected>,
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
    /// `Kind/ns/name` of the object, for the detail pane (empty: none it can show).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub select: String,
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
    let priced: Vec<f64> = c.nodes.values().filter_map(|n| node_price(c, n)).collect();
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
        karpenter: report.karpenter.version.clone(),
        counts,
        price_source,
        price_problem,
        cost: cost_per_hour.map(money).unwrap_or_default(),
        cost_per_hour,
        nodepools,
        rollout: rollout(c, &nodeclaims)
            .into_iter()
            .map(|mut r| {
                if let Some(p) = c.nodepools.get(&r.nodepool) {
                    r.progress = pools::rollout_line(c, pass, p);
                }
                r
            })
            .collect(),
        nodeclaims,
        pending,
        capacity: capacity_panel(c, pass),
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
                        f.object.kind.as_str(),
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
            state: InstallState::Forbidden,
            title: format!("kelp may not read Karpenter's objects: {f}"),
            fix: "Grant kelp's ServiceAccount get, list and watch on nodepools, nodeclaims (karpenter.sh) and ec2nodeclasses (karpenter.k8s.aws): the ClusterRole in charts/kelp has exactly these.".into(),
        };
    }
    let has = |code: Code| report.findings.iter().find(|f| f.code == code);
    if let Some(f) = has(Code::KarpenterApiOutdated) {
        return Install {
            state: InstallState::V1beta1Only,
            title: f.message.clone(),
            fix: "Upgrade Karpenter to v1 and migrate your v1beta1 NodePools, NodeClaims and EC2NodeClasses to karpenter.sh/v1 (see Karpenter's v1 migration guide).".into(),
        };
    }
    if has(Code::KarpenterNotInstalled).is_some() && !c.karpenter_seen() {
        return Install {
            state: InstallState::NotInstalled,
            title: "Karpenter is not installed in this cluster: the karpenter.sh/v1 API is not served.".into(),
            fix: "Install Karpenter (its Helm chart installs the CRDs), or point kelp at the right cluster with --context.".into(),
        };
    }
    Install {
        state: InstallState::Ok,
        title: String::new(),
        fix: String::new(),
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
        // The panel reads the offering through the one launch-error parser.
        let m = "NodeClaim gpu-q8w2x event: creating instance, insufficient capacity, with fleet error(s), InsufficientInstanceCapacity: We currently do not have sufficient g6.12xlarge capacity in the Availability Zone you requested (us-west-2c). Our system";
        let p = crate::karpenter::events::parse_launch_error(m);
        assert_eq!(
            p.instance_types.first().map(String::as_str),
            Some("g6.12xlarge")
        );
        assert_eq!(p.zones.first().map(String::as_str), Some("us-west-2c"));
        let p = crate::karpenter::events::parse_launch_error(
            "insufficient capacity, all requested instance types were unavailable during launch",
        );
        assert!(p.instance_types.is_empty() && p.zones.is_empty());
    }
}
