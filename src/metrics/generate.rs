//! `kelp generate alerts` (a PrometheusRule) and `kelp generate grafana` (a dashboard),
//! both built from the metric definitions in [`super::defs`].

use serde_json::{json, Value};

use super::defs::{self, MetricDef, MetricKind};
use crate::findings::Code;

/// One alerting rule.
#[derive(Debug, Clone)]
pub struct Alert {
    pub name: &'static str,
    pub expr: String,
    pub for_: &'static str,
    pub severity: &'static str,
    pub summary: &'static str,
    pub description: String,
}

fn findings(code: Code, extra: &str) -> String {
    format!(
        "{}{{{}=\"{}\"{extra}}}",
        defs::FINDINGS.name,
        defs::FINDINGS.label("code"),
        code.as_str()
    )
}

fn findings_any(codes: &[Code]) -> String {
    let re: Vec<&str> = codes.iter().map(|c| c.as_str()).collect();
    format!(
        "{}{{{}=~\"{}\"}}",
        defs::FINDINGS.name,
        defs::FINDINGS.label("code"),
        re.join("|")
    )
}

/// The seed's alerts, then alerts on current findings.
pub fn alerts() -> Vec<Alert> {
    let mm = defs::DAEMONSET_NODEPOOL_MISMATCH;
    let ttl = defs::NODE_TTL_DEATHS;
    let nf = defs::NOMINATED_POD_FAILURES;
    let stuck = defs::NODES_NOT_REAPED_DUE_TO_NOMINATION;
    let delay = defs::NODE_REAPING_DELAY;
    let f = defs::FINDINGS;
    let lf = defs::LAUNCH_FAILURES;
    vec![
        Alert {
            name: "KarpenterHelperDaemonSetNodePoolMismatch",
            expr: format!(
                "sum {} (increase({}[1h])) > 0",
                mm.by(&["namespace", "daemonset", "nodepool"]),
                mm.name
            ),
            for_: "0m",
            severity: "warning",
            summary: "DaemonSet pods land on nodes of a NodePool their template does not fit",
            description: "DaemonSet {{ $labels.namespace }}/{{ $labels.daemonset }} ran on {{ $value }} new node(s) of NodePool {{ $labels.nodepool }} in the last hour; Karpenter leaves it out of the pool's overhead. Run `kelp doctor`.".into(),
        },
        Alert {
            name: "KarpenterHelperNodeTTLDeathRateHigh",
            expr: format!(
                "sum {} (increase({}[1h])) > 5",
                ttl.by(&["nodepool"]),
                ttl.name
            ),
            for_: "15m",
            severity: "warning",
            summary: "Many nodes reach expireAfter at once",
            description: "{{ $value }} nodes of NodePool {{ $labels.nodepool }} expired in the last hour; stagger expireAfter or add a disruption budget.".into(),
        },
        Alert {
            name: "KarpenterHelperNominationFailureSpike",
            expr: format!(
                "sum {} (increase({}[15m])) > 3",
                nf.by(&["namespace"]),
                nf.name
            ),
            for_: "5m",
            severity: "warning",
            summary: "Pods nominated to new capacity do not bind",
            description: "{{ $value }} pods in {{ $labels.namespace }} failed to bind to the node they were nominated to in 15m. Run `kelp why pod`.".into(),
        },
        Alert {
            name: "KarpenterHelperNodesStuckOnNominations",
            expr: format!(
                "count {} ({}) > 0",
                stuck.by(&["nodepool", "node"]),
                stuck.name
            ),
            for_: "30m",
            severity: "warning",
            summary: "Empty nodes are kept alive by pod nominations",
            description: "Node {{ $labels.node }} (NodePool {{ $labels.nodepool }}) is empty but not reaped because pods are nominated to it. Run `kelp why node {{ $labels.node }}`.".into(),
        },
        Alert {
            name: "KarpenterHelperNodeReapingDelayHigh",
            expr: format!(
                "histogram_quantile(0.9, sum {} (rate({}_bucket[1h]))) > 1800",
                delay.by(&["nodepool"]).replace(')', ", le)"),
                delay.name
            ),
            for_: "15m",
            severity: "warning",
            summary: "Empty nodes take long to be reaped",
            description: "90% of empty nodes of NodePool {{ $labels.nodepool }} were reaped within {{ $value | humanizeDuration }} past consolidateAfter.".into(),
        },
        Alert {
            name: "KarpenterHelperPodUnschedulable",
            expr: format!(
                "sum {} ({}) > 0",
                f.by(&["nodepool"]),
                findings(Code::PodUnschedulable, ",severity=\"critical\"")
            ),
            for_: "10m",
            severity: "critical",
            summary: "Pods no NodePool can take",
            description: "{{ $value }} pod(s) have been unschedulable by every NodePool for 10m. Run `kelp doctor` and `kelp why pod NS/NAME`.".into(),
        },
        Alert {
            name: "KarpenterHelperNodePoolLimitsExhausted",
            expr: format!(
                "sum {} ({}) > 0",
                f.by(&["nodepool"]),
                findings(Code::NodepoolLimitsExhausted, "")
            ),
            for_: "5m",
            severity: "warning",
            summary: "A NodePool is at its limits",
            description: "NodePool {{ $labels.nodepool }} has exhausted spec.limits; it launches no more nodes.".into(),
        },
        Alert {
            name: "KarpenterHelperNodeClaimStuck",
            expr: format!(
                "sum {} ({}) > 0",
                f.by(&["code", "nodepool"]),
                findings_any(&[
                    Code::NodeclaimLaunchFailed,
                    Code::NodeclaimNotRegistered,
                    Code::NodeclaimNotInitialized
                ])
            ),
            for_: "10m",
            severity: "warning",
            summary: "NodeClaims do not launch, register or initialize",
            description: "{{ $value }} NodeClaim(s) of NodePool {{ $labels.nodepool }}: {{ $labels.code }}. Run `kelp doctor`.".into(),
        },
        node_pool_empty(),
        Alert {
            name: "KarpenterHelperLaunchFailureSpike",
            expr: format!(
                "sum {} (increase({}[15m])) > 3",
                lf.by(&["nodepool", "reason"]),
                lf.name
            ),
            for_: "0m",
            severity: "warning",
            summary: "NodeClaims keep failing to launch",
            description: "{{ $value }} NodeClaims of NodePool {{ $labels.nodepool }} failed to launch with {{ $labels.reason }} in 15m. Run `kelp doctor` (nodeclaim-launch-failed, insufficient-capacity).".into(),
        },
        provisioning_slo_burn(),
        Alert {
            name: "KarpenterHelperNoNodePoolReady",
            expr: format!("sum ({}) > 0", findings(Code::NoNodepoolReady, "")),
            for_: "5m",
            severity: "critical",
            summary: "No NodePool is ready",
            description: "Karpenter cannot provision at all: no NodePool is Ready.".into(),
        },
    ]
}

/// Finding codes that say a pool cannot deliver capacity (pool-level problems).
const POOL_PROBLEMS: &[Code] = &[
    Code::NodepoolNotReady,
    Code::NodepoolNoInstanceTypes,
    Code::NodeclaimLaunchFailed,
    Code::NodeclaimNotRegistered,
    Code::NodeclaimNotInitialized,
    Code::InsufficientCapacity,
];

/// A NodePool at zero nodes is normal (nothing needs it) until pods wait on it or it has a
/// pool-level problem: then it cannot deliver the capacity it is meant to.
fn node_pool_empty() -> Alert {
    let nodes = defs::NODEPOOL_NODES;
    let unsched = defs::UNSCHEDULABLE_PODS;
    let f = defs::FINDINGS;
    let np = nodes.label("nodepool");
    Alert {
        name: "KarpenterHelperNodePoolEmpty",
        expr: format!(
            "(max {by} ({nodes}) == 0) and on ({np}) (sum {ub} ({unsched}{{{unp}!=\"\",{cat}!=\"taints\"}}) > 0 or sum {fb} ({findings}) > 0)",
            by = nodes.by(&["nodepool"]),
            nodes = nodes.name,
            ub = unsched.by(&["nodepool"]),
            unsched = unsched.name,
            unp = unsched.label("nodepool"),
            cat = unsched.label("category"),
            fb = f.by(&["nodepool"]),
            findings = findings_any(POOL_PROBLEMS),
        ),
        for_: "15m",
        severity: "warning",
        summary: "A NodePool has no nodes while it is needed",
        description: "NodePool {{ $labels.nodepool }} has had zero nodes for 15m while unschedulable pods are meant for it (its taints and requirements admit them) or it has a pool-level problem (not ready, no instance types, launches failing, nodes not registering). A pool at zero is normal when nothing needs it; here something does and the pool is not delivering. Run `kelp doctor` and `kelp why pod NS/NAME`.".into(),
    }
}

/// A number for a PromQL expression, without float noise (0.14400000000000002 -> 0.144).
fn num(x: f64) -> String {
    let s = format!("{x:.6}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// The share of pods that waited on new capacity and were bound later than the SLO
/// threshold, over `window`, from the latency histogram's buckets.
pub fn slow_pod_ratio(window: &str) -> String {
    let d = defs::POD_PROVISIONING_LATENCY;
    let le = num(defs::PROVISIONING_SLO_SECONDS);
    format!(
        "(1 - sum(rate({name}_bucket{{le=~\"{le}(\\\\.0)?\"}}[{window}])) / sum(rate({name}_count[{window}])))",
        name = d.name
    )
}

/// The multi-window, multi-burn-rate alert on the provisioning-latency SLO (the SRE
/// workbook's: 14.4x over 1h and 5m, 6x over 6h and 30m).
fn provisioning_slo_burn() -> Alert {
    let budget = 1.0 - defs::PROVISIONING_SLO_TARGET;
    let burn = |rate: f64, long: &str, short: &str| {
        let t = num(rate * budget);
        format!(
            "({} > {t} and {} > {t})",
            slow_pod_ratio(long),
            slow_pod_ratio(short)
        )
    };
    Alert {
        name: "KarpenterHelperPodProvisioningSLOBurn",
        expr: format!(
            "{} or {}",
            burn(14.4, "1h", "5m"),
            burn(6.0, "6h", "30m")
        ),
        for_: "2m",
        severity: "critical",
        summary: "Pods that wait on new capacity are bound too slowly (provisioning-latency SLO)",
        description: format!(
            "The error budget of the SLO \"{}% of the pods that wait on new capacity from Karpenter are bound within {}\" burns too fast: more than 14.4x over 1h and 5m, or 6x over 6h and 30m (at 14.4x a 30-day budget lasts about 2 days). {{{{ $value | humanizePercentage }}}} of those pods were slow. See the SLI row of the kelp dashboard (pod provisioning latency by NodePool, node provisioning time, launch failures) and run `kelp doctor`.",
            num(defs::PROVISIONING_SLO_TARGET * 100.0),
            crate::karpenter::duration::human(chrono::Duration::seconds(defs::PROVISIONING_SLO_SECONDS as i64))
        ),
    }
}

/// The PrometheusRule (monitoring.coreos.com/v1) as a value.
pub fn prometheus_rule() -> Value {
    let rules: Vec<Value> = alerts()
        .into_iter()
        .map(|a| {
            json!({
                "alert": a.name,
                "expr": a.expr,
                "for": a.for_,
                "labels": {"severity": a.severity},
                "annotations": {"summary": a.summary, "description": a.description},
            })
        })
        .collect();
    json!({
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "PrometheusRule",
        "metadata": {"name": "kelp", "labels": {"app.kubernetes.io/name": "kelp"}},
        "spec": {"groups": [{"name": "kelp.karpenter", "rules": rules}]},
    })
}

/// The PrometheusRule as YAML.
pub fn alerts_yaml() -> String {
    serde_norway::to_string(&prometheus_rule()).expect("a JSON value serialises")
}

struct Panels {
    out: Vec<Value>,
    id: u64,
    y: u64,
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

    fn panel(
        &mut self,
        kind: &str,
        title: &str,
        desc: &str,
        w: u64,
        x: u64,
        targets: &[(String, String)],
    ) {
        self.id += 1;
        let targets: Vec<Value> = targets
            .iter()
            .enumerate()
            .map(|(i, (expr, legend))| {
                json!({"refId": char::from(b'A' + i as u8).to_string(), "expr": expr,
                    "legendFormat": legend, "datasource": {"type": "prometheus", "uid": "${datasource}"}})
            })
            .collect();
        self.out.push(
            json!({"type": kind, "title": title, "description": desc, "id": self.id,
            "datasource": {"type": "prometheus", "uid": "${datasource}"},
            "gridPos": {"h": 8, "w": w, "x": x, "y": self.y}, "targets": targets}),
        );
        if x + w >= 24 {
            self.y += 8;
        }
    }
}

/// The query a seed metric's panel shows.
fn seed_query(d: &MetricDef, pool_filter: &str) -> Vec<(String, String)> {
    let sel = if pool_filter.is_empty() {
        String::new()
    } else {
        format!("{{{pool_filter}}}")
    };
    // By NodePool where the metric has it (nominated pod failures are by namespace).
    let np = if d.labels.contains(&"nodepool") {
        d.label("nodepool")
    } else {
        d.label("namespace")
    };
    match d.kind {
        MetricKind::Counter => vec![(
            format!("sum {} (increase({}{sel}[$__rate_interval]))", d.by(&[np]), d.name),
            format!("{{{{{np}}}}}"),
        )],
        MetricKind::Gauge => vec![(
            format!("sum {} ({}{sel})", d.by(&[np]), d.name),
            format!("{{{{{np}}}}}"),
        )],
        MetricKind::Histogram => [0.5, 0.9]
            .iter()
            .map(|q| {
                (
                    format!(
                        "histogram_quantile({q}, sum by ({np}, le) (rate({}_bucket{sel}[$__rate_interval])))",
                        d.name
                    ),
                    format!("p{} {{{{{np}}}}}", (q * 100.0) as u32),
                )
            })
            .collect(),
    }
}

/// A histogram's quantiles, by `labels`.
fn quantiles(d: &MetricDef, labels: &[&'static str], qs: &[f64]) -> Vec<(String, String)> {
    let by = d.by(labels).replace(')', ", le)");
    let legend: Vec<String> = labels.iter().map(|l| format!("{{{{{l}}}}}")).collect();
    qs.iter()
        .map(|q| {
            (
                format!(
                    "histogram_quantile({q}, sum {by} (rate({}_bucket[$__rate_interval])))",
                    d.name
                ),
                format!("p{} {}", (q * 100.0) as u32, legend.join(" ")),
            )
        })
        .collect()
}

/// A counter's increase or a gauge's sum, by `labels`.
fn summed(d: &MetricDef, labels: &[&'static str]) -> Vec<(String, String)> {
    let legend: Vec<String> = labels.iter().map(|l| format!("{{{{{l}}}}}")).collect();
    let inner = match d.kind {
        MetricKind::Counter => format!("increase({}[$__rate_interval])", d.name),
        _ => d.name.to_string(),
    };
    vec![(format!("sum {} ({inner})", d.by(labels)), legend.join(" "))]
}

/// The SLI row: provisioning latency and its SLO, node provisioning, launch failures,
/// churn, evictions, and the picture of now across pools.
fn sli_row(p: &mut Panels) {
    let lat = defs::POD_PROVISIONING_LATENCY;
    p.row("SLIs", None);
    p.panel(
        "timeseries",
        "Pod provisioning latency (pods that waited on new capacity)",
        lat.help,
        12,
        0,
        &quantiles(&lat, &["nodepool"], &[0.5, 0.9, 0.99]),
    );
    let slo = format!(
        "{}% bound within {}",
        num(defs::PROVISIONING_SLO_TARGET * 100.0),
        crate::karpenter::duration::human(chrono::Duration::seconds(
            defs::PROVISIONING_SLO_SECONDS as i64
        ))
    );
    p.panel(
        "timeseries",
        &format!("Provisioning SLO ({slo}): share of pods bound in time"),
        "1 - the share of slow pods, over 1h and 6h windows; the burn-rate alert compares the slow share with the error budget.",
        12,
        12,
        &["1h", "6h"]
            .iter()
            .map(|w| (format!("1 - {}", slow_pod_ratio(w)), format!("{w} window")))
            .collect::<Vec<_>>(),
    );
    let rows: &[(MetricDef, &[&'static str])] = &[
        (defs::NODE_PROVISIONING, &["nodepool", "capacity_type"]),
        (defs::LAUNCH_FAILURES, &["nodepool", "reason"]),
        (defs::NODE_CHURN, &["event", "reason"]),
        (defs::EVICTIONS, &["nodepool", "reason"]),
        (defs::UNSCHEDULABLE_PODS, &["category", "nodepool"]),
        (defs::DRIFTED_NODES, &["nodepool"]),
        (defs::DISRUPTION_BLOCKED_NODES, &["nodepool", "blocker"]),
        (defs::NODEPOOL_USAGE_RATIO, &["nodepool", "resource"]),
        (defs::NODEPOOL_COST, &["nodepool", "capacity_type"]),
        (defs::NODEPOOL_NODES, &["nodepool"]),
    ];
    let mut x = 0;
    for (d, labels) in rows {
        let targets = match d.kind {
            MetricKind::Histogram => quantiles(d, labels, &[0.5, 0.9]),
            _ => summed(d, labels),
        };
        p.panel("timeseries", d.name, d.help, 12, x, &targets);
        x = (x + 12) % 24;
    }
    if x != 0 {
        p.y += 8;
    }
}

/// The Grafana dashboard: an overview, per-NodePool rows, the SLIs and the seed metrics.
pub fn grafana() -> Value {
    let f = defs::FINDINGS;
    let (code, sev, np) = (f.label("code"), f.label("severity"), f.label("nodepool"));
    let mut p = Panels {
        out: Vec::new(),
        id: 0,
        y: 0,
    };
    p.row("Overview", None);
    p.panel(
        "stat",
        "Findings by severity",
        f.help,
        8,
        0,
        &[(
            format!("sum {} ({})", f.by(&[sev]), f.name),
            format!("{{{{{sev}}}}}"),
        )],
    );
    p.panel(
        "timeseries",
        "Findings by code",
        f.help,
        16,
        8,
        &[(
            format!("sum {} ({})", f.by(&[code]), f.name),
            format!("{{{{{code}}}}}"),
        )],
    );
    p.row("NodePool $nodepool", Some("nodepool"));
    let filter = format!("{np}=~\"$nodepool\"");
    p.panel(
        "timeseries",
        "Findings in $nodepool",
        f.help,
        12,
        0,
        &[(
            format!("sum {} ({}{{{filter}}})", f.by(&[code, sev]), f.name),
            format!("{{{{{code}}}}} ({{{{{sev}}}}})"),
        )],
    );
    let mut x = 12;
    for d in defs::SEED.iter().filter(|d| d.labels.contains(&"nodepool")) {
        p.panel("timeseries", d.name, d.help, 12, x, &seed_query(d, &filter));
        x = (x + 12) % 24;
    }
    for d in defs::SLI.iter().filter(|d| d.labels.contains(&"nodepool")) {
        p.panel("timeseries", d.name, d.help, 12, x, &seed_query(d, &filter));
        x = (x + 12) % 24;
    }
    if x != 0 {
        p.y += 8;
    }
    sli_row(&mut p);
    p.row("Seed metrics (all NodePools)", None);
    let mut x = 0;
    for d in defs::SEED {
        p.panel("timeseries", d.name, d.help, 12, x, &seed_query(d, ""));
        x = (x + 12) % 24;
    }
    json!({
        "title": "kelp: Karpenter",
        "uid": "kelp-karpenter",
        "tags": ["karpenter", "kelp"],
        "schemaVersion": 39,
        "time": {"from": "now-6h", "to": "now"},
        "refresh": "1m",
        "templating": {"list": [
            {"name": "datasource", "type": "datasource", "query": "prometheus", "label": "Data source"},
            {"name": "nodepool", "type": "query", "label": "NodePool",
             "datasource": {"type": "prometheus", "uid": "${datasource}"},
             "query": format!("label_values({}, {})", defs::NODEPOOL_NODES.name, defs::NODEPOOL_NODES.label("nodepool")),
             "multi": true, "includeAll": true, "refresh": 2},
        ]},
        "panels": p.out,
    })
}

/// The dashboard as pretty JSON.
pub fn grafana_json() -> String {
    serde_json::to_string_pretty(&grafana()).expect("a JSON value serialises")
}
