//! `kelp generate alerts` (a PrometheusRule) and `kelp generate grafana` (a dashboard),
//! both built from the metric definitions in [`super::defs`]. Both keep the label that tells
//! clusters apart in a fleet's Prometheus (federation, Thanos, Mimir): every aggregation is
//! `by` it, every panel filters on the dashboard's `$cluster` variable.

use std::str::FromStr;

use serde_json::{json, Value};

use super::defs::{self, MetricDef};
use crate::findings::Code;

mod grafana;
pub use grafana::{grafana, grafana_json};

/// The label the user's Prometheus puts on each cluster's series (an external label, a
/// relabelling, or Thanos/Mimir's tenant label). `cluster` unless told otherwise.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterLabel(String);

impl Default for ClusterLabel {
    fn default() -> Self {
        ClusterLabel("cluster".into())
    }
}

impl ClusterLabel {
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// Why a cluster label was refused.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum BadClusterLabel {
    #[error(
        "{0:?} is not a Prometheus label name (letters, digits and _, not starting with a digit)"
    )]
    Syntax(String),
    #[error("{0:?} is reserved for Prometheus' own labels (it starts with __)")]
    Reserved(String),
    #[error("{0:?} is a label kelp's own metrics carry; name the label that tells clusters apart")]
    Taken(String),
}

impl FromStr for ClusterLabel {
    type Err = BadClusterLabel;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let mut chars = s.chars();
        let first_ok = chars
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_');
        if !first_ok || !chars.all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(BadClusterLabel::Syntax(s.into()));
        }
        if s.starts_with("__") {
            return Err(BadClusterLabel::Reserved(s.into()));
        }
        let taken = ["le", "job", "instance", "alertname", "severity"];
        if taken.contains(&s) || defs::ALL.iter().any(|d| d.labels.contains(&s)) {
            return Err(BadClusterLabel::Taken(s.into()));
        }
        Ok(ClusterLabel(s.into()))
    }
}

/// How queries are written: aggregated by the cluster label, and (on the dashboard) filtered
/// by the `$cluster` variable.
struct Q<'a> {
    cl: &'a str,
    filter: bool,
}

impl Q<'_> {
    /// `by (cluster, a, b)`, each of `labels` checked to be one of `d`'s.
    fn by(&self, d: &MetricDef, labels: &[&'static str]) -> String {
        let mut l = vec![self.cl];
        l.extend(labels.iter().map(|x| d.label(x)));
        format!("by ({})", l.join(", "))
    }

    /// The same with `le`, for `histogram_quantile`.
    fn by_le(&self, d: &MetricDef, labels: &[&'static str]) -> String {
        self.by(d, labels).replace(')', ", le)")
    }

    /// `series{matchers}`, with the `$cluster` filter first on the dashboard.
    fn sel(&self, series: &str, matchers: &[String]) -> String {
        let mut m = Vec::new();
        if self.filter {
            m.push(format!("{}=~\"$cluster\"", self.cl));
        }
        m.extend(matchers.iter().cloned());
        if m.is_empty() {
            series.to_string()
        } else {
            format!("{series}{{{}}}", m.join(","))
        }
    }

    /// A legend: the cluster, then `labels`.
    fn legend(&self, labels: &[&str]) -> String {
        std::iter::once(self.cl)
            .chain(labels.iter().copied())
            .map(|l| format!("{{{{{l}}}}}"))
            .collect::<Vec<_>>()
            .join(" ")
    }
}

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

fn code_is(code: Code) -> String {
    format!("{}=\"{}\"", defs::FINDINGS.label("code"), code.as_str())
}

fn code_in(codes: &[Code]) -> String {
    let re: Vec<&str> = codes.iter().map(|c| c.as_str()).collect();
    format!("{}=~\"{}\"", defs::FINDINGS.label("code"), re.join("|"))
}

/// The seed's alerts, then alerts on current findings; each aggregates by the cluster
/// label, so one fires per cluster.
pub fn alerts(cluster: &ClusterLabel) -> Vec<Alert> {
    let q = Q {
        cl: cluster.as_str(),
        filter: false,
    };
    let mm = defs::DAEMONSET_NODEPOOL_MISMATCH;
    let ttl = defs::NODE_TTL_DEATHS;
    let nf = defs::NOMINATED_POD_FAILURES;
    let stuck = defs::NODES_NOT_REAPED_DUE_TO_NOMINATION;
    let delay = defs::NODE_REAPING_DELAY;
    let f = defs::FINDINGS;
    let lf = defs::LAUNCH_FAILURES;
    let findings = |m: Vec<String>| q.sel(f.name, &m);
    vec![
        Alert {
            name: "KarpenterHelperDaemonSetNodePoolMismatch",
            expr: format!(
                "sum {} (increase({}[1h])) > 0",
                q.by(&mm, &["namespace", "daemonset", "nodepool"]),
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
                q.by(&ttl, &["nodepool"]),
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
                q.by(&nf, &["namespace"]),
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
                q.by(&stuck, &["nodepool", "node"]),
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
                q.by_le(&delay, &["nodepool"]),
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
                q.by(&f, &["nodepool"]),
                findings(vec![
                    code_is(Code::PodUnschedulable),
                    format!("{}=\"critical\"", f.label("severity"))
                ])
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
                q.by(&f, &["nodepool"]),
                findings(vec![code_is(Code::NodepoolLimitsExhausted)])
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
                q.by(&f, &["code", "nodepool"]),
                findings(vec![code_in(&[
                    Code::NodeclaimLaunchFailed,
                    Code::NodeclaimNotRegistered,
                    Code::NodeclaimNotInitialized
                ])])
            ),
            for_: "10m",
            severity: "warning",
            summary: "NodeClaims do not launch, register or initialize",
            description: "{{ $value }} NodeClaim(s) of NodePool {{ $labels.nodepool }}: {{ $labels.code }}. Run `kelp doctor`.".into(),
        },
        node_pool_empty(&q),
        Alert {
            name: "KarpenterHelperLaunchFailureSpike",
            expr: format!(
                "sum {} (increase({}[15m])) > 3",
                q.by(&lf, &["nodepool", "reason"]),
                lf.name
            ),
            for_: "0m",
            severity: "warning",
            summary: "NodeClaims keep failing to launch",
            description: "{{ $value }} NodeClaims of NodePool {{ $labels.nodepool }} failed to launch with {{ $labels.reason }} in 15m. Run `kelp doctor` (nodeclaim-launch-failed, insufficient-capacity).".into(),
        },
        provisioning_slo_burn(&q),
        Alert {
            name: "KarpenterHelperNoNodePoolReady",
            expr: format!(
                "sum {} ({}) > 0",
                q.by(&f, &[]),
                findings(vec![code_is(Code::NoNodepoolReady)])
            ),
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
    Code::NodepoolRegistrationUnhealthy,
    Code::NodeclaimLaunchFailed,
    Code::NodeclaimNotRegistered,
    Code::NodeclaimNotInitialized,
    Code::InsufficientCapacity,
];

/// A NodePool at zero nodes is normal (nothing needs it) until pods wait on it or it has a
/// pool-level problem: then it cannot deliver the capacity it is meant to. Pools are matched
/// within a cluster: the same pool name in another cluster is another pool.
fn node_pool_empty(q: &Q) -> Alert {
    let nodes = defs::NODEPOOL_NODES;
    let unsched = defs::UNSCHEDULABLE_PODS;
    let f = defs::FINDINGS;
    let np = nodes.label("nodepool");
    Alert {
        name: "KarpenterHelperNodePoolEmpty",
        expr: format!(
            "(max {by} ({nodes}) == 0) and on ({cl}, {np}) (sum {ub} ({unsched}) > 0 or sum {fb} ({findings}) > 0)",
            by = q.by(&nodes, &["nodepool"]),
            nodes = q.sel(nodes.name, &[]),
            cl = q.cl,
            ub = q.by(&unsched, &["nodepool"]),
            unsched = q.sel(
                unsched.name,
                &[
                    format!("{}!=\"\"", unsched.label("nodepool")),
                    format!("{}!=\"taints\"", unsched.label("category"))
                ]
            ),
            fb = q.by(&f, &["nodepool"]),
            findings = q.sel(f.name, &[code_in(POOL_PROBLEMS)]),
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
/// threshold, over `window`, per cluster, from the latency histogram's buckets.
fn slow_pod_ratio(q: &Q, window: &str) -> String {
    let d = defs::POD_PROVISIONING_LATENCY;
    let le = num(defs::PROVISIONING_SLO_SECONDS);
    let by = q.by(&d, &[]);
    format!(
        "(1 - sum {by} (rate({}[{window}])) / sum {by} (rate({}[{window}])))",
        q.sel(
            &format!("{}_bucket", d.name),
            &[format!("le=~\"{le}(\\\\.0)?\"")]
        ),
        q.sel(&format!("{}_count", d.name), &[]),
    )
}

/// The multi-window, multi-burn-rate alert on the provisioning-latency SLO (the SRE
/// workbook's: 14.4x over 1h and 5m, 6x over 6h and 30m), per cluster.
fn provisioning_slo_burn(q: &Q) -> Alert {
    let budget = 1.0 - defs::PROVISIONING_SLO_TARGET;
    let burn = |rate: f64, long: &str, short: &str| {
        let t = num(rate * budget);
        format!(
            "({} > {t} and {} > {t})",
            slow_pod_ratio(q, long),
            slow_pod_ratio(q, short)
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
            slo_threshold()
        ),
    }
}

fn slo_threshold() -> String {
    crate::karpenter::duration::human(chrono::Duration::seconds(
        defs::PROVISIONING_SLO_SECONDS as i64,
    ))
}

/// "Cluster NAME: " when the alert's series carry the cluster label, nothing when they do
/// not (a single cluster): a Go template, expanded by Prometheus.
pub fn cluster_prefix(cluster: &ClusterLabel) -> String {
    format!(
        "{{{{ with $labels.{} }}}}Cluster {{{{ . }}}}: {{{{ end }}}}",
        cluster.as_str()
    )
}

/// The PrometheusRule (monitoring.coreos.com/v1) as a value.
pub fn prometheus_rule(cluster: &ClusterLabel) -> Value {
    let prefix = cluster_prefix(cluster);
    let rules: Vec<Value> = alerts(cluster)
        .into_iter()
        .map(|a| {
            json!({
                "alert": a.name,
                "expr": a.expr,
                "for": a.for_,
                "labels": {"severity": a.severity},
                "annotations": {
                    "summary": format!("{prefix}{}", a.summary),
                    "description": format!("{prefix}{}", a.description),
                },
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
pub fn alerts_yaml(cluster: &ClusterLabel) -> String {
    serde_norway::to_string(&prometheus_rule(cluster)).expect("a JSON value serialises")
}
