//! `kelp generate grafana`: the dashboard, every query by the cluster label and filtered by
//! the `$cluster` variable, panels titled from [`defs`]' titles.

use serde_json::{json, Value};

use super::{num, slo_threshold, slow_pod_ratio, ClusterLabel, Q};
use crate::metrics::defs::{self, MetricDef, MetricKind};

struct Panels {
    out: Vec<Value>,
    id: u64,
    y: u64,
}

/// A panel's unit, from its metric's name.
fn unit(name: &str) -> &'static str {
    if name.ends_with("_seconds") {
        "s"
    } else if name.ends_with("_cost_per_hour") {
        "currencyUSD"
    } else if name.ends_with("_ratio") {
        "percentunit"
    } else {
        "short"
    }
}

impl Panels {
    fn row(&mut self, title: &str, repeat: Option<&str>) {
        self.id += 1;
        let mut row = json!({"type": "row", "title": title, "id": self.id, "collapsed": false,
            "gridPos": {"h": 1, "w": 24, "x": 0, "y": self.y}, "panels": []});
        if let Some(r) = repeat {
            row["repeat"] = json!(r);
        }
        self.out.push(row);
        self.y += 1;
    }

    /// A panel at `x`, `w` wide; stat and bar-gauge panels show the instant value.
    #[allow(clippy::too_many_arguments)]
    fn panel(
        &mut self,
        kind: &str,
        title: &str,
        desc: &str,
        unit: &str,
        w: u64,
        x: u64,
        targets: &[(String, String)],
    ) {
        self.id += 1;
        let instant = matches!(kind, "stat" | "bargauge");
        let targets: Vec<Value> = targets
            .iter()
            .enumerate()
            .map(|(i, (expr, legend))| {
                json!({"refId": char::from(b'A' + i as u8).to_string(), "expr": expr,
                    "legendFormat": legend, "instant": instant, "range": !instant,
                    "datasource": {"type": "prometheus", "uid": "${datasource}"}})
            })
            .collect();
        self.out.push(
            json!({"type": kind, "title": title, "description": desc, "id": self.id,
            "datasource": {"type": "prometheus", "uid": "${datasource}"},
            "fieldConfig": {"defaults": {"unit": unit}, "overrides": []},
            "gridPos": {"h": 8, "w": w, "x": x, "y": self.y}, "targets": targets}),
        );
        if x + w >= 24 {
            self.y += 8;
        }
    }

    /// Half-width panels of `metrics` from `x`, each by the cluster and its labels, two a line.
    fn grid(
        &mut self,
        q: &Q,
        metrics: &[(MetricDef, &[&'static str])],
        matchers: &[String],
        mut x: u64,
    ) {
        for (d, labels) in metrics {
            let qs: &[f64] = if *d == defs::POD_PROVISIONING_LATENCY {
                &[0.5, 0.95, 0.99]
            } else {
                &[0.5, 0.9]
            };
            let (title, targets) = targets(q, d, labels, matchers, qs);
            self.panel("timeseries", &title, d.help, unit(d.name), 12, x, &targets);
            x = (x + 12) % 24;
        }
        if x != 0 {
            self.y += 8;
        }
    }
}

/// A metric's panel: its title (with the quantiles a histogram shows) and its queries: a
/// counter's increase or a gauge's sum by the cluster and `labels`, or a histogram's quantiles.
fn targets(
    q: &Q,
    d: &MetricDef,
    labels: &[&'static str],
    matchers: &[String],
    qs: &[f64],
) -> (String, Vec<(String, String)>) {
    let legend = q.legend(labels);
    match d.kind {
        MetricKind::Counter => (
            d.title.to_string(),
            vec![(
                format!(
                    "sum {} (increase({}[$__rate_interval]))",
                    q.by(d, labels),
                    q.sel(d.name, matchers)
                ),
                legend,
            )],
        ),
        MetricKind::Gauge => (
            d.title.to_string(),
            vec![(
                format!("sum {} ({})", q.by(d, labels), q.sel(d.name, matchers)),
                legend,
            )],
        ),
        MetricKind::Histogram => {
            let p = |x: &f64| format!("p{}", num(x * 100.0));
            let names: Vec<String> = qs.iter().map(p).collect();
            let bucket = q.sel(&format!("{}_bucket", d.name), matchers);
            (
                format!("{} ({})", d.title, names.join("/")),
                qs.iter()
                    .zip(&names)
                    .map(|(x, name)| {
                        (
                            format!(
                                "histogram_quantile({x}, sum {} (rate({bucket}[$__rate_interval])))",
                                q.by_le(d, labels)
                            ),
                            format!("{name} {legend}"),
                        )
                    })
                    .collect(),
            )
        }
    }
}

/// Labels that say what kind of thing happened (not which object): panels split by them.
const KINDS: &[&str] = &[
    "capacity_type",
    "category",
    "event",
    "reason",
    "blocker",
    "resource",
    "ttl_reason",
    "delay_reason",
];

/// What a metric's panel is split by, beside the cluster: its NodePool (nominated pod
/// failures have none: their namespace) and its kind labels.
fn pool_labels(d: &MetricDef) -> Vec<&'static str> {
    let first = if d.labels.contains(&"nodepool") {
        "nodepool"
    } else {
        "namespace"
    };
    std::iter::once(first)
        .chain(d.labels.iter().copied().filter(|l| KINDS.contains(l)))
        .collect()
}

/// The fleet overview: findings, $/hr, nodes and unschedulable pods by cluster.
fn fleet_row(p: &mut Panels, q: &Q) {
    let f = defs::FINDINGS;
    let cost = defs::NODEPOOL_COST;
    let nodes = defs::NODEPOOL_NODES;
    let unsched = defs::UNSCHEDULABLE_PODS;
    p.row("Fleet overview", None);
    p.panel(
        "bargauge",
        "Findings by cluster",
        "Current kelp findings in each selected cluster, by severity.",
        "short",
        8,
        0,
        &[(
            format!("sum {} ({})", q.by(&f, &["severity"]), q.sel(f.name, &[])),
            q.legend(&["severity"]),
        )],
    );
    p.panel(
        "timeseries",
        "Cost by cluster ($/hr)",
        "The hourly price of each cluster's Karpenter nodes whose price kelp knows (karpenter_helper_nodepool_cost_per_hour summed over pools and capacity types).",
        unit(cost.name),
        8,
        8,
        &[(
            format!("sum {} ({})", q.by(&cost, &[]), q.sel(cost.name, &[])),
            q.legend(&[]),
        )],
    );
    p.panel(
        "timeseries",
        "Nodes by cluster",
        "Nodes of Karpenter NodePools in each cluster.",
        "short",
        8,
        16,
        &[(
            format!("sum {} ({})", q.by(&nodes, &[]), q.sel(nodes.name, &[])),
            q.legend(&[]),
        )],
    );
    p.panel(
        "timeseries",
        "Findings by cluster and code",
        f.help,
        "short",
        12,
        0,
        &[(
            format!("sum {} ({})", q.by(&f, &["code"]), q.sel(f.name, &[])),
            q.legend(&["code"]),
        )],
    );
    p.panel(
        "timeseries",
        "Unschedulable pods by cluster and cause",
        unsched.help,
        "short",
        12,
        12,
        &[(
            format!(
                "sum {} ({})",
                q.by(&unsched, &["category"]),
                q.sel(unsched.name, &[])
            ),
            q.legend(&["category"]),
        )],
    );
}

/// The SLI row: provisioning latency and its SLO, node provisioning, launch failures,
/// churn, evictions, and the picture of now across pools.
fn sli_row(p: &mut Panels, q: &Q) {
    p.row("SLIs", None);
    let lat = defs::POD_PROVISIONING_LATENCY;
    let (title, targets) = targets(q, &lat, &["nodepool"], &[], &[0.5, 0.95, 0.99]);
    p.panel(
        "timeseries",
        &title,
        lat.help,
        unit(lat.name),
        12,
        0,
        &targets,
    );
    let slo = format!(
        "{}% bound within {}",
        num(defs::PROVISIONING_SLO_TARGET * 100.0),
        slo_threshold()
    );
    p.panel(
        "timeseries",
        &format!("Provisioning SLO ({slo}): share of pods bound in time"),
        "1 - the share of slow pods, over 1h and 6h windows, per cluster; the burn-rate alert compares the slow share with the error budget.",
        "percentunit",
        12,
        12,
        &["1h", "6h"]
            .iter()
            .map(|w| {
                (
                    format!("1 - {}", slow_pod_ratio(q, w)),
                    format!("{} {w} window", q.legend(&[])),
                )
            })
            .collect::<Vec<_>>(),
    );
    p.grid(
        q,
        &[
            (defs::NODE_PROVISIONING, &["nodepool", "capacity_type"]),
            (defs::LAUNCH_FAILURES, &["nodepool", "reason"]),
            (defs::NODE_CHURN, &["event", "reason"]),
            (defs::EVICTIONS, &["nodepool", "reason"]),
            (defs::UNSCHEDULABLE_PODS, &["category", "nodepool"]),
            (defs::DRIFTED_NODES, &["nodepool"]),
            (defs::DISRUPTION_BLOCKED_NODES, &["nodepool", "blocker"]),
            (defs::UNCONSOLIDATED_NODES, &["nodepool", "reason"]),
            (defs::NODEPOOL_USAGE_RATIO, &["nodepool", "resource"]),
            (defs::NODEPOOL_COST, &["nodepool", "capacity_type"]),
            (defs::NODEPOOL_NODES, &["nodepool"]),
        ],
        &[],
        0,
    );
}

/// The Grafana dashboard: a fleet overview by cluster, per-NodePool rows, the SLIs and the
/// seed metrics, every query filtered by the `$cluster` variable over `cluster`'s values.
pub fn grafana(cluster: &ClusterLabel) -> Value {
    let q = Q {
        cl: cluster.as_str(),
        filter: true,
    };
    let f = defs::FINDINGS;
    let (code, sev, np) = (f.label("code"), f.label("severity"), f.label("nodepool"));
    let mut p = Panels {
        out: Vec::new(),
        id: 0,
        y: 0,
    };
    fleet_row(&mut p, &q);
    p.row("NodePool $nodepool", Some("nodepool"));
    let pool = vec![format!("{np}=~\"$nodepool\"")];
    p.panel(
        "timeseries",
        "Findings in $nodepool",
        f.help,
        "short",
        12,
        0,
        &[(
            format!("sum {} ({})", q.by(&f, &[code, sev]), q.sel(f.name, &pool)),
            format!("{} ({{{{{sev}}}}})", q.legend(&[code])),
        )],
    );
    // The pool's own metrics, beside and after its findings.
    let labels: Vec<(MetricDef, Vec<&'static str>)> = defs::SEED
        .iter()
        .chain(defs::SLI)
        .filter(|d| d.labels.contains(&"nodepool"))
        .map(|d| (*d, pool_labels(d)))
        .collect();
    let per_pool: Vec<(MetricDef, &[&'static str])> =
        labels.iter().map(|(d, l)| (*d, l.as_slice())).collect();
    p.grid(&q, &per_pool, &pool, 12);
    sli_row(&mut p, &q);
    p.row("Seed metrics (all NodePools)", None);
    let labels: Vec<(MetricDef, Vec<&'static str>)> =
        defs::SEED.iter().map(|d| (*d, pool_labels(d))).collect();
    let seed: Vec<(MetricDef, &[&'static str])> =
        labels.iter().map(|(d, l)| (*d, l.as_slice())).collect();
    p.grid(&q, &seed, &[], 0);
    let nodes = defs::NODEPOOL_NODES;
    json!({
        "title": "kelp: Karpenter",
        "uid": "kelp-karpenter",
        "tags": ["karpenter", "kelp"],
        "schemaVersion": 39,
        "time": {"from": "now-6h", "to": "now"},
        "refresh": "1m",
        "templating": {"list": [
            {"name": "datasource", "type": "datasource", "query": "prometheus", "label": "Data source"},
            {"name": "cluster", "type": "query", "label": "Cluster",
             "description": format!("The clusters to show: values of the `{}` label your Prometheus puts on each cluster's series (All also matches series without it).", q.cl),
             "datasource": {"type": "prometheus", "uid": "${datasource}"},
             "query": format!("label_values({}, {})", nodes.name, q.cl),
             "definition": format!("label_values({}, {})", nodes.name, q.cl),
             "multi": true, "includeAll": true, "allValue": ".*",
             "current": {"text": "All", "value": "$__all"}, "refresh": 2, "sort": 1},
            {"name": "nodepool", "type": "query", "label": "NodePool",
             "datasource": {"type": "prometheus", "uid": "${datasource}"},
             "query": format!("label_values({}, {})", q.sel(nodes.name, &[]), nodes.label("nodepool")),
             "definition": format!("label_values({}, {})", q.sel(nodes.name, &[]), nodes.label("nodepool")),
             "multi": true, "includeAll": true, "refresh": 2, "sort": 1},
        ]},
        "panels": p.out,
    })
}

/// The dashboard as pretty JSON.
pub fn grafana_json(cluster: &ClusterLabel) -> String {
    serde_json::to_string_pretty(&grafana(cluster)).expect("a JSON value serialises")
}
