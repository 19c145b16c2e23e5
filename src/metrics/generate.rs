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

/// The Grafana dashboard: an overview, per-NodePool rows and the seed metrics.
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
             "query": format!("label_values({}, {np})", f.name),
             "multi": true, "includeAll": true, "refresh": 2},
        ]},
        "panels": p.out,
    })
}

/// The dashboard as pretty JSON.
pub fn grafana_json() -> String {
    serde_json::to_string_pretty(&grafana()).expect("a JSON value serialises")
}
