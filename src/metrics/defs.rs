//! The one table of metric definitions: registration, `kelp generate alerts`,
//! `kelp generate grafana` and docs/metrics.md all read it, so nothing is kept twice.

/// A metric's type, as Prometheus knows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MetricKind {
    Counter,
    Gauge,
    Histogram,
}

impl MetricKind {
    pub fn as_str(self) -> &'static str {
        match self {
            MetricKind::Counter => "counter",
            MetricKind::Gauge => "gauge",
            MetricKind::Histogram => "histogram",
        }
    }
}

/// One metric: its exposed name (with `_total` for counters), type, help and labels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MetricDef {
    pub name: &'static str,
    pub kind: MetricKind,
    pub help: &'static str,
    pub labels: &'static [&'static str],
}

impl MetricDef {
    /// The name to register with prometheus-client, which appends `_total` to counters.
    pub fn registered_name(&self) -> &'static str {
        match self.kind {
            MetricKind::Counter => self.name.strip_suffix("_total").unwrap_or(self.name),
            _ => self.name,
        }
    }

    /// `label`, checked to be one of this metric's labels (a typo is a bug, caught by tests).
    pub fn label(&self, label: &'static str) -> &'static str {
        assert!(
            self.labels.contains(&label),
            "{} has no label {label}",
            self.name
        );
        label
    }

    /// `by (a, b)`, every label checked.
    pub fn by(&self, labels: &[&'static str]) -> String {
        let l: Vec<&str> = labels.iter().map(|l| self.label(l)).collect();
        format!("by ({})", l.join(", "))
    }
}

pub const FINDINGS: MetricDef = MetricDef {
    name: "karpenter_helper_findings",
    kind: MetricKind::Gauge,
    help: "Current kelp findings by code, severity and NodePool (computed at scrape time).",
    labels: &["code", "severity", "nodepool"],
};

pub const DAEMONSET_NODEPOOL_MISMATCH: MetricDef = MetricDef {
    name: "karpenter_helper_daemonset_nodepool_mismatch_total",
    kind: MetricKind::Counter,
    help: "DaemonSet pods found on nodes of a NodePool their template is incompatible with (once per DaemonSet and node UID).",
    labels: &["daemonset", "namespace", "node", "nodepool"],
};

pub const NODE_TTL_DEATHS: MetricDef = MetricDef {
    name: "karpenter_helper_node_ttl_deaths_total",
    kind: MetricKind::Counter,
    help: "NodeClaims that reached their expireAfter and are reaped by expiration (once per NodeClaim UID).",
    labels: &["node", "nodepool", "ttl_reason"],
};

pub const NOMINATED_POD_FAILURES: MetricDef = MetricDef {
    name: "karpenter_helper_nominated_pod_failures_total",
    kind: MetricKind::Counter,
    help: "Pods nominated to a node or NodeClaim that did not bind there in time (once per pod UID and target).",
    labels: &["pod", "namespace", "node", "reason"],
};

pub const NODES_CREATED_FOR_NOMINATED_PODS: MetricDef = MetricDef {
    name: "karpenter_helper_nodes_created_for_nominated_pods_total",
    kind: MetricKind::Counter,
    help: "NodeClaims Karpenter launched that a pending pod was nominated to (once per NodeClaim and pod UID).",
    labels: &["node", "pod", "namespace", "nodepool"],
};

pub const NODES_NOT_REAPED_DUE_TO_NOMINATION: MetricDef = MetricDef {
    name: "karpenter_helper_nodes_not_reaped_due_to_nomination",
    kind: MetricKind::Gauge,
    help: "Empty nodes past consolidateAfter kept because a pod is nominated to them (1 per node and nominated pod).",
    labels: &["node", "nodepool", "nominated_pod", "nominated_namespace"],
};

pub const NODE_REAPING_DELAY: MetricDef = MetricDef {
    name: "karpenter_helper_node_reaping_delay_seconds",
    kind: MetricKind::Histogram,
    help: "How long an empty node stayed past consolidateAfter + 5m before it was reaped or stopped being empty, by its first blocker.",
    labels: &["node", "nodepool", "delay_reason"],
};

/// Buckets of the reaping delay histogram, in seconds (1 minute to 1 day).
pub const REAPING_DELAY_BUCKETS: &[f64] =
    &[60.0, 300.0, 600.0, 1800.0, 3600.0, 7200.0, 21600.0, 86400.0];

/// The seed operator's metrics.
pub const SEED: &[MetricDef] = &[
    DAEMONSET_NODEPOOL_MISMATCH,
    NODE_TTL_DEATHS,
    NOMINATED_POD_FAILURES,
    NODES_CREATED_FOR_NOMINATED_PODS,
    NODES_NOT_REAPED_DUE_TO_NOMINATION,
    NODE_REAPING_DELAY,
];

/// Every metric kelp serves.
pub const ALL: &[MetricDef] = &[
    FINDINGS,
    DAEMONSET_NODEPOOL_MISMATCH,
    NODE_TTL_DEATHS,
    NOMINATED_POD_FAILURES,
    NODES_CREATED_FOR_NOMINATED_PODS,
    NODES_NOT_REAPED_DUE_TO_NOMINATION,
    NODE_REAPING_DELAY,
];

/// docs/metrics.md's table, generated.
pub fn markdown_table() -> String {
    let mut s = String::from("| metric | type | labels | meaning |\n|---|---|---|---|\n");
    for d in ALL {
        s.push_str(&format!(
            "| `{}` | {} | {} | {} |\n",
            d.name,
            d.kind.as_str(),
            d.labels.join(", "),
            d.help
        ));
    }
    s
}
