//! What `kelp top` shows, as plain data: pools, nodes and pending pods with their usage
//! bars, prices and verdicts. Built from the dashboard's view model
//! ([`crate::view::overview`], so the terminal and the page agree) plus what only
//! the terminal shows: requested vs allocatable cpu and memory per node and pool, each
//! node's price and the spot share. A pure function of (model, analysis, now).

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};

use crate::analysis::{self, capacity, provisioning, Pass};
use crate::findings::Severity;
use crate::karpenter::resources::Resources;
use crate::model::Cluster;
use crate::view;

/// Requested vs allocatable, for one resource.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Usage {
    pub requested: f64,
    pub allocatable: f64,
}

impl Usage {
    /// requested / allocatable, or None when nothing is allocatable.
    pub fn ratio(&self) -> Option<f64> {
        (self.allocatable > 0.0).then(|| self.requested / self.allocatable)
    }
    fn add(&mut self, o: Usage) {
        self.requested += o.requested;
        self.allocatable += o.allocatable;
    }
}

#[derive(Debug, Clone)]
pub struct PoolLine {
    pub name: String,
    pub weight: i32,
    pub nodes: usize,
    pub cpu: Usage,
    pub memory: Usage,
    pub cost_per_hour: Option<f64>,
    /// The share of the pool's NodeClaims on spot capacity, 0..1; None with no claims.
    pub spot_share: Option<f64>,
    pub drifted: usize,
    pub ready: bool,
}

#[derive(Debug, Clone)]
pub struct NodeLine {
    /// The node's name, or its NodeClaim's while it has no node.
    pub name: String,
    pub nodeclaim: String,
    pub pool: String,
    pub instance_type: String,
    pub capacity_type: String,
    pub zone: String,
    pub cpu: Usage,
    pub memory: Usage,
    pub price: Option<f64>,
    pub age: String,
    pub created: Option<DateTime<Utc>>,
    pub drifted: bool,
    pub drift_reason: String,
    pub blocked_by: Vec<String>,
    /// Its consolidation answer as the dashboard badges it (`candidate`, a reason), or "".
    pub consolidation: String,
}

#[derive(Debug, Clone)]
pub struct PendingLine {
    pub namespace: String,
    pub name: String,
    pub pending_for: String,
    pub requests: String,
    /// The one-line verdict ("6 pools rejected: ...").
    pub verdict: String,
}

/// One frame's worth of data.
#[derive(Debug, Clone)]
pub struct Top {
    pub origin: String,
    pub now: DateTime<Utc>,
    /// The cluster's $/hr: every priced node, else the pools' own cost.
    pub total_per_hour: Option<f64>,
    /// Why there are no prices, when there are none.
    pub price_note: Option<String>,
    pub critical: usize,
    pub warning: usize,
    pub pools: Vec<PoolLine>,
    pub nodes: Vec<NodeLine>,
    pub pending: Vec<PendingLine>,
}

/// A model, analysed, with the view built from it.
pub struct Snapshot {
    pub cluster: Cluster,
    /// The analysis pass the view was built from; `why` answers read it.
    pub pass: Pass,
    pub top: Top,
}

impl Snapshot {
    /// Analyse `cluster` at `now` and build the view.
    pub fn new(cluster: Cluster, origin: &str, now: DateTime<Utc>) -> Self {
        let pass = analysis::run(&cluster, now);
        let top = build(&cluster, &pass, origin);
        Snapshot { cluster, pass, top }
    }
}

fn usage_of(list: &crate::model::kinds::SharedResources, key: &str) -> f64 {
    Resources::from_quantities(list)
        .map(|r| r.get(key))
        .unwrap_or(0.0)
}

/// cpu and memory requested by the active pods on each node, against its allocatable.
fn node_usage(c: &Cluster) -> BTreeMap<String, (Usage, Usage)> {
    c.nodes
        .values()
        .map(|n| {
            let name = n.metadata.name.clone();
            let mut req = Resources::default();
            for p in c.pods_on(&name).filter(|p| p.active()) {
                req.add(&provisioning::pod_requests(&p.spec));
            }
            let cpu = Usage {
                requested: req.get("cpu"),
                allocatable: usage_of(&n.status.allocatable, "cpu"),
            };
            let memory = Usage {
                requested: req.get("memory"),
                allocatable: usage_of(&n.status.allocatable, "memory"),
            };
            (name, (cpu, memory))
        })
        .collect()
}

pub fn build(c: &Cluster, pass: &Pass, origin: &str) -> Top {
    let (report, pending, now) = (&*pass.report, &pass.pending, pass.now);
    let ov = view::overview(
        c,
        pass,
        view::Inputs {
            cluster_name: origin,
            price_problem: None,
            forbidden: None,
            stale: None,
            fixed_clock: false,
        },
    );
    let usage = node_usage(c);
    let mut nodes = Vec::new();
    for group in &ov.nodeclaims {
        for row in &group.rows {
            let node = c.nodes.get(&row.node);
            let (cpu, memory) = usage.get(&row.node).copied().unwrap_or_default();
            nodes.push(NodeLine {
                name: if row.node.is_empty() {
                    row.name.clone()
                } else {
                    row.node.clone()
                },
                nodeclaim: row.name.clone(),
                pool: group.nodepool.clone(),
                instance_type: row.instance_type.clone(),
                capacity_type: row.capacity_type.clone(),
                zone: row.zone.clone(),
                cpu,
                memory,
                price: node.and_then(|n| capacity::node_price(c, n)),
                age: row.age.clone(),
                created: c
                    .nodeclaims
                    .get(&row.name)
                    .and_then(|cl| cl.metadata.creation_timestamp),
                drifted: row.drifted,
                drift_reason: row.drift_reason.clone(),
                blocked_by: row.blocked_by.clone(),
                consolidation: row.consolidation.clone(),
            });
        }
    }
    let pools = ov
        .nodepools
        .iter()
        .map(|p| {
            let mine: Vec<&NodeLine> = nodes.iter().filter(|n| n.pool == p.name).collect();
            let (mut cpu, mut memory) = (Usage::default(), Usage::default());
            for n in &mine {
                cpu.add(n.cpu);
                memory.add(n.memory);
            }
            let spot = mine.iter().filter(|n| n.capacity_type == "spot").count();
            PoolLine {
                name: p.name.clone(),
                weight: p.weight,
                nodes: p.nodes,
                cpu,
                memory,
                cost_per_hour: p.cost_per_hour,
                spot_share: (!mine.is_empty()).then(|| spot as f64 / mine.len() as f64),
                drifted: p.drifted,
                ready: p.ready_ok,
            }
        })
        .collect::<Vec<_>>();
    let node_prices: Vec<f64> = c
        .nodes
        .values()
        .filter_map(|n| capacity::node_price(c, n))
        .collect();
    let total_per_hour = if node_prices.is_empty() {
        let pool_costs: Vec<f64> = pools.iter().filter_map(|p| p.cost_per_hour).collect();
        (!pool_costs.is_empty()).then(|| pool_costs.iter().sum())
    } else {
        Some(node_prices.iter().sum())
    };
    // Every pending pod (the dashboard caps its list; a terminal table scrolls), oldest
    // first, then by name, as the dashboard orders them.
    let mut diagnoses: Vec<&std::sync::Arc<provisioning::PodDiagnosis>> = pending.iter().collect();
    diagnoses.sort_by(|a, b| {
        a.since
            .is_none()
            .cmp(&b.since.is_none())
            .then(a.since.cmp(&b.since))
            .then_with(|| a.pod.cmp(&b.pod))
    });
    let pending_rows = diagnoses
        .into_iter()
        .map(|d| PendingLine {
            namespace: d.pod.namespace.clone().unwrap_or_default(),
            name: d.pod.name.clone(),
            pending_for: d.pending_for.clone(),
            requests: crate::explain::text::requests_line(&d.requests),
            verdict: d.verdict_summary().to_string(),
        })
        .collect();
    let sev = |s: Severity| report.findings.iter().filter(|f| f.severity == s).count();
    Top {
        origin: origin.to_string(),
        now,
        price_note: total_per_hour
            .is_none()
            .then(|| "no prices (pass --metrics-file or --karpenter-service)".to_string()),
        total_per_hour,
        critical: sev(Severity::Critical),
        warning: sev(Severity::Warning),
        pools,
        nodes,
        pending: pending_rows,
    }
}

/// `$1.23/h`, or `-` with no price.
pub fn money(v: Option<f64>) -> String {
    v.map(|v| format!("${v:.2}/h"))
        .unwrap_or_else(|| "-".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn demo() -> Snapshot {
        Snapshot::new(crate::demo::cluster().unwrap(), "demo", crate::demo::now())
    }

    #[test]
    fn the_demo_has_pools_nodes_pending_and_prices() {
        let s = demo();
        let t = &s.top;
        let names: Vec<&str> = t.pools.iter().map(|p| p.name.as_str()).collect();
        for want in ["default", "arm64", "gpu", "batch", "legacy"] {
            assert!(names.contains(&want), "{names:?}");
        }
        assert!(t.pending.iter().any(|p| p.name == "trainer-0"));
        // The same pods, in the same order, as the dashboard's list.
        let pass = analysis::run(&s.cluster, crate::demo::now());
        let ov = view::overview(
            &s.cluster,
            &pass,
            view::Inputs {
                cluster_name: "demo",
                price_problem: None,
                forbidden: None,
                stale: None,
                fixed_clock: false,
            },
        );
        let mine: Vec<(&str, &str)> = t
            .pending
            .iter()
            .map(|p| (p.namespace.as_str(), p.name.as_str()))
            .collect();
        let theirs: Vec<(&str, &str)> = ov
            .pending
            .rows
            .iter()
            .map(|p| (p.namespace.as_str(), p.name.as_str()))
            .collect();
        assert_eq!(mine, theirs);
        assert_eq!(t.pending[0].verdict, ov.pending.rows[0].summary);
        assert!(t.total_per_hour.unwrap() > 0.0);
        // Requests and allocatable are read: some pool is partly used.
        let default = t.pools.iter().find(|p| p.name == "default").unwrap();
        let r = default.cpu.ratio().unwrap();
        assert!(r > 0.0 && r <= 1.5, "{r}");
        assert!(default.memory.ratio().unwrap() > 0.0);
        // The total is the sum of the priced nodes.
        let sum: f64 = t.nodes.iter().filter_map(|n| n.price).sum();
        assert!(sum > 0.0 && sum <= t.total_per_hour.unwrap() + 1e-9);
        // Drift and blockers come through.
        assert!(t.nodes.iter().any(|n| n.drifted));
        assert!(t.nodes.iter().any(|n| !n.blocked_by.is_empty()));
        // And why a node is or is not consolidated.
        assert!(t.nodes.iter().any(|n| n.consolidation == "candidate"));
        // A spot share is a share.
        assert!(t
            .pools
            .iter()
            .filter_map(|p| p.spot_share)
            .all(|s| (0.0..=1.0).contains(&s)));
        assert_eq!(t.critical, 7);
    }

    #[test]
    fn without_prices_the_total_is_unknown_and_says_why() {
        let mut c = crate::demo::cluster().unwrap();
        c.metrics = None;
        let s = Snapshot::new(c, "dump", crate::demo::now());
        assert!(s.top.total_per_hour.is_none());
        assert!(s.top.price_note.is_some());
        assert_eq!(money(None), "-");
        assert_eq!(money(Some(1.5)), "$1.50/h");
    }

    #[test]
    fn every_pending_pod_is_listed_past_the_dashboards_cap() {
        let mut c = crate::demo::cluster().unwrap();
        let pod = c
            .pods
            .get(&("ml".to_string(), "trainer-0".to_string()))
            .unwrap()
            .clone();
        for i in 0..view::PENDING_CAP {
            let mut p = pod.clone();
            p.metadata.name = format!("copy-{i}");
            c.apply_pod(p);
        }
        let s = Snapshot::new(c, "demo", crate::demo::now());
        assert!(s.top.pending.len() > view::PENDING_CAP);
        assert!(s.top.pending.iter().any(|p| p.name == "copy-49"));
    }
}
