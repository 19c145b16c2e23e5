//! The analysis: pure functions of (model, now). Nothing here touches the network or
//! the wall clock, so every finding is reproducible from a dump and a `--now`.
//!
//! One file per concern: provisioning (pending pods and per-NodePool verdicts, launches,
//! limits), disruption (drift, expiry, emptiness, blockers, budgets), placement
//! (DaemonSets vs pools, where the controller runs), capacity (offerings, prices) and
//! install (CRDs and API versions).

pub mod capacity;
pub mod catalog;
pub mod clock;
pub mod disruption;
pub mod engine;
pub mod fit;
pub mod history;
pub mod hold;
pub mod incremental;
pub mod install;
pub mod kept;
pub mod placement;
pub mod provisioning;
pub mod rollout;
pub mod selector;
pub mod version;

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use chrono::{DateTime, Duration, Utc};

use crate::findings::{Finding, Report};
use crate::karpenter::events::LaunchError;
use crate::model::shared::FastMap;
use crate::model::{Catalog, Cluster};
use disruption::PoolBudgets;
pub use engine::{Engine, Fresh};
use hold::Hold;
pub use kept::KeptFindings;
use provisioning::{PodDiagnosis, PoolUsage};

/// Everything one analysis pass needs, each computed once and shared by the findings that
/// depend on it: the [`Pass`] the views will read (its report written last), and what only
/// the findings read.
pub struct Context<'a> {
    pub cluster: &'a Cluster,
    /// Per-pool usage, the pending pods' diagnoses and holds, the budgets, each node's
    /// disruption state, the catalogue and the launch errors' messages parsed; its report
    /// is empty until [`run`] writes it.
    pub pass: Pass,
    /// With a catalogue: per pool, the least of each limited resource a type it admits
    /// has (what the limits findings compare what is left with).
    pub smallest_types: BTreeMap<String, BTreeMap<String, f64>>,
    /// With a catalogue: the pools it offers no type for at all (Karpenter drops them
    /// before scheduling), with why in Karpenter's words.
    pub without_types: BTreeMap<String, String>,
    /// The `daemonset-nodepool-mismatch` findings ([`placement::daemonset_mismatch`]).
    pub daemonset_mismatch: Vec<Finding>,
    /// The last pass's findings a finding written from the same answer can be handed
    /// on from (only an incremental pass has them).
    pub kept: Option<&'a KeptFindings>,
}

impl<'a> Context<'a> {
    pub fn new(cluster: &'a Cluster, now: DateTime<Utc>) -> Self {
        Self::build(cluster, now, &mut Fresh)
    }

    /// Each part of the pass as `engine` gives it: worked out afresh, or kept from the
    /// previous pass where nothing it read has changed (see [`engine`]).
    pub fn build<E: Engine>(cluster: &'a Cluster, now: DateTime<Utc>, engine: &mut E) -> Self {
        let usages = engine.pool_usages(cluster);
        let catalog = engine.catalog(cluster);
        let pools = provisioning::PoolSet::with_usage(cluster, &usages)
            .with_instance_type_events(cluster, now)
            .with_catalog(catalog.as_ref());
        let without_types = pools
            .ordered
            .iter()
            // Karpenter looks at the types of the pools it schedules with, the ready ones.
            .filter(|p| p.not_ready.is_none())
            .filter_map(|p| match p.types.as_ref()?.pool_reject.as_ref()? {
                provisioning::instance_types::Reject::No {
                    message,
                    limits: false,
                } => Some((p.name.to_string(), message.clone())),
                _ => None,
            })
            .collect();
        let smallest_types = pools
            .ordered
            .iter()
            .filter_map(|p| Some((p.name.to_string(), p.types.as_ref()?.smallest.clone())))
            .collect();
        let pools = pools
            .with_spread_index(engine.spread_index(cluster))
            .with_guards(engine.guards(cluster));
        let pending = engine.pending(cluster, now, &pools);
        let budgets = engine.pool_budgets(cluster, now);
        let holds = engine.holds(cluster, &pending);
        // Read only where Karpenter is (as every finding of its part of the pass).
        let daemonset_mismatch = if cluster.karpenter_seen() {
            engine.daemonset_mismatch(cluster, &usages)
        } else {
            Vec::new()
        };
        let nodes = engine.node_states(cluster, now, &pools, &budgets);
        Context {
            cluster,
            pass: Pass {
                now,
                report: Arc::new(Report {
                    generated_at: now,
                    karpenter: install::info(cluster),
                    findings: Vec::new(),
                }),
                pending,
                holds,
                pools: usages,
                budgets,
                nodes,
                catalog,
                launch_errors: capacity::launch_errors(cluster),
            },
            smallest_types,
            without_types,
            daemonset_mismatch,
            kept: None,
        }
    }

    /// Whether `t` is within `window` before now.
    pub fn within(&self, t: Option<DateTime<Utc>>, window: Duration) -> bool {
        t.is_some_and(|t| self.pass.now - t <= window)
    }
}

/// One analysis pass, typed: the report and everything behind it that views show. The
/// dashboard, `/metrics`, `why` and `top` read these fields; none computes them again.
pub struct Pass {
    pub now: DateTime<Utc>,
    /// Shared as it is with `/metrics` and the dashboard's API.
    pub report: Arc<Report>,
    /// Every pod Karpenter has to place, diagnosed (replicas share their verdicts).
    pub pending: Vec<Arc<PodDiagnosis>>,
    /// What holds each pending pod, in `pending`'s order (replicas share one).
    pub holds: Vec<Arc<Hold>>,
    /// Every pool's usage against its limits, by name.
    pub pools: BTreeMap<String, PoolUsage>,
    /// Every pool's disruption budgets at the pass's instant, by name.
    pub budgets: BTreeMap<String, PoolBudgets>,
    /// The disruption state of every Karpenter node, by name.
    pub nodes: disruption::NodeStates,
    /// The instance-type catalogue the pass judged with, if any.
    pub catalog: Option<Arc<Catalog>>,
    /// Every launch-error event (a reason in [`provisioning::LAUNCH_ERRORS`]) with its message
    /// parsed, by event id: the insufficient-capacity panel reads them here.
    pub launch_errors: HashMap<String, LaunchError>,
}

impl Pass {
    /// A pending pod's diagnosis.
    pub fn diagnosis(&self, namespace: &str, name: &str) -> Option<&Arc<PodDiagnosis>> {
        self.pending
            .iter()
            .find(|d| d.pod.namespace.as_deref() == Some(namespace) && d.pod.name == name)
    }

    /// What holds each pending pod, by the address of its diagnosis (as a finding shares
    /// it): for a view that reads many.
    pub fn holds_by_diagnosis(&self) -> FastMap<*const PodDiagnosis, &Hold> {
        self.pending
            .iter()
            .zip(&self.holds)
            .map(|(d, h)| (Arc::as_ptr(d), &**h))
            .collect()
    }
}

/// Run every check and return the report, findings ordered by severity (worst first),
/// then code, then object.
pub fn analyze(cluster: &Cluster, now: DateTime<Utc>) -> Report {
    Arc::unwrap_or_clone(run(cluster, now).report)
}

/// One pass: every check, and the typed results behind the report.
pub fn run(cluster: &Cluster, now: DateTime<Utc>) -> Pass {
    pass(Context::new(cluster, now))
}

/// One pass that reuses what `engine` kept of the previous one where nothing it read
/// has changed: the same result as [`run`], for less work.
pub fn run_incremental(
    cluster: &Cluster,
    now: DateTime<Utc>,
    engine: &mut incremental::Incremental,
) -> Pass {
    engine.begin(now);
    let mut ctx = Context::build(cluster, now, engine);
    ctx.kept = Some(engine.kept_findings());
    let pass = pass(ctx);
    engine.keep_findings(&pass.report);
    pass
}

/// The findings of a pass, worst first, written into its report.
fn pass(mut ctx: Context) -> Pass {
    let cluster = ctx.cluster;
    let mut findings: Vec<Arc<Finding>> = shared(install::findings(&ctx)).collect();
    findings.extend(shared(version::findings(&ctx.pass.report.karpenter)));
    findings.extend(shared(history::findings(cluster)));
    if cluster.karpenter_seen() {
        findings.extend(provisioning::findings(&ctx));
        findings.extend(disruption::findings(&ctx));
        findings.extend(shared(placement::findings(&ctx)));
        findings.extend(shared(capacity::findings(&ctx)));
    }
    findings.sort_by(|a, b| {
        b.severity
            .cmp(&a.severity)
            .then(a.code.cmp(&b.code))
            .then_with(|| a.object.cmp(&b.object))
            .then_with(|| a.nodepool.cmp(&b.nodepool))
    });
    Arc::make_mut(&mut ctx.pass.report).findings = findings;
    ctx.pass
}

/// Findings made whole by a check that hands none on, shared as a report holds them.
fn shared(findings: Vec<Finding>) -> impl Iterator<Item = Arc<Finding>> {
    findings.into_iter().map(Arc::new)
}

/// Helper for "how long ago" in messages: `14m`, `2h5m`. As kubectl does, a time up to
/// a second ahead of the clock (skew) is `0s` and one further ahead is `<invalid>`: an
/// age is never negative.
pub fn ago(now: DateTime<Utc>, t: DateTime<Utc>) -> String {
    let d = now - t;
    if d < chrono::Duration::seconds(-1) {
        "<invalid>".into()
    } else if d < chrono::Duration::zero() {
        "0s".into()
    } else {
        crate::karpenter::duration::human(d)
    }
}

/// A clock kelp can evaluate at: years 1970 to 9999. A capture time or `--now` outside
/// them (a year-0000 annotation) would turn every age negative or absurd.
pub fn plausible_clock(t: DateTime<Utc>) -> bool {
    use chrono::Datelike;
    (1970..=9999).contains(&t.year())
}

#[cfg(test)]
mod clock_tests {
    use super::*;

    #[test]
    fn ages_are_never_negative_and_clocks_are_plausible() {
        let now = DateTime::parse_from_rfc3339("2026-11-21T10:00:00Z")
            .unwrap()
            .to_utc();
        let year0 = DateTime::parse_from_rfc3339("0000-01-01T00:00:00Z")
            .unwrap()
            .to_utc();
        assert_eq!(ago(now, now - chrono::Duration::minutes(14)), "14m");
        assert_eq!(ago(now, now + chrono::Duration::milliseconds(500)), "0s");
        assert_eq!(ago(year0, now), "<invalid>");
        assert!(!ago(now, year0).starts_with('-'));
        assert!(!plausible_clock(year0) && plausible_clock(now));
    }
}
