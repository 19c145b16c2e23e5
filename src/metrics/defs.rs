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
    /// What a dashboard panel of it is titled (generation only: never exported).
    pub title: &'static str,
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
    title: "kelp findings",
    kind: MetricKind::Gauge,
    help: "Current kelp findings by code, severity and NodePool (computed at scrape time).",
    labels: &["code", "severity", "nodepool"],
};

pub const KARPENTER_INFO: MetricDef = MetricDef {
    name: "karpenter_helper_karpenter_info",
    title: "Karpenter release",
    kind: MetricKind::Gauge,
    help: "1, labelled with the Karpenter release kelp judges against (`v1.15.0`, or a bound such as `v1.15 or newer` read from the NodePool CRD), where it read it (image, metrics, crd) and whether kelp is tested against it (supported, older, newer); absent when the cluster says nothing of it.",
    labels: &["version", "source", "window"],
};

pub const DAEMONSET_NODEPOOL_MISMATCH: MetricDef = MetricDef {
    name: "karpenter_helper_daemonset_nodepool_mismatch_total",
    title: "DaemonSet pods on nodes of a pool they do not fit",
    kind: MetricKind::Counter,
    help: "DaemonSet pods found on nodes of a NodePool their template is incompatible with (once per DaemonSet and node UID).",
    labels: &["daemonset", "namespace", "node", "nodepool"],
};

pub const NODE_TTL_DEATHS: MetricDef = MetricDef {
    name: "karpenter_helper_node_ttl_deaths_total",
    title: "Nodes expired (expireAfter)",
    kind: MetricKind::Counter,
    help: "NodeClaims that reached their expireAfter and are reaped by expiration (once per NodeClaim UID).",
    labels: &["node", "nodepool", "ttl_reason"],
};

pub const NOMINATED_POD_FAILURES: MetricDef = MetricDef {
    name: "karpenter_helper_nominated_pod_failures_total",
    title: "Nominated pods that did not bind",
    kind: MetricKind::Counter,
    help: "Pods nominated to a node or NodeClaim that did not bind there in time (once per pod UID and target).",
    labels: &["pod", "namespace", "node", "reason"],
};

pub const NODES_CREATED_FOR_NOMINATED_PODS: MetricDef = MetricDef {
    name: "karpenter_helper_nodes_created_for_nominated_pods_total",
    title: "Nodes launched for nominated pods",
    kind: MetricKind::Counter,
    help: "NodeClaims Karpenter launched that a pending pod was nominated to (once per NodeClaim and pod UID).",
    labels: &["node", "pod", "namespace", "nodepool"],
};

pub const NODES_NOT_REAPED_DUE_TO_NOMINATION: MetricDef = MetricDef {
    name: "karpenter_helper_nodes_not_reaped_due_to_nomination",
    title: "Empty nodes kept by nominations",
    kind: MetricKind::Gauge,
    help: "Empty nodes past consolidateAfter kept because a pod is nominated to them (1 per node and nominated pod).",
    labels: &["node", "nodepool", "nominated_pod", "nominated_namespace"],
};

pub const NODE_REAPING_DELAY: MetricDef = MetricDef {
    name: "karpenter_helper_node_reaping_delay_seconds",
    title: "Empty-node reaping delay",
    kind: MetricKind::Histogram,
    help: "How long an empty node stayed past consolidateAfter + 5m before it was reaped or stopped being empty, by its first blocker.",
    labels: &["node", "nodepool", "delay_reason"],
};

/// Buckets of the reaping delay histogram, in seconds (1 minute to 1 day).
pub const REAPING_DELAY_BUCKETS: &[f64] =
    &[60.0, 300.0, 600.0, 1800.0, 3600.0, 7200.0, 21600.0, 86400.0];

pub const POD_PROVISIONING_LATENCY: MetricDef = MetricDef {
    name: "karpenter_helper_pod_provisioning_latency_seconds",
    title: "Pod provisioning latency",
    kind: MetricKind::Histogram,
    help: "Seconds from a pod's creation to its binding (PodScheduled=True), for pods that waited on new capacity from Karpenter, by the NodePool of the node it bound to (once per pod UID).",
    labels: &["nodepool"],
};

pub const NODE_PROVISIONING: MetricDef = MetricDef {
    name: "karpenter_helper_node_provisioning_seconds",
    title: "Node provisioning time",
    kind: MetricKind::Histogram,
    help: "Seconds from a NodeClaim's creation to Initialized=True (once per NodeClaim UID).",
    labels: &["nodepool", "capacity_type"],
};

pub const LAUNCH_FAILURES: MetricDef = MetricDef {
    name: "karpenter_helper_launch_failures_total",
    title: "NodeClaim launch failures",
    kind: MetricKind::Counter,
    help: "NodeClaims whose launch failed (Launched not True with a failure reason such as LaunchFailed, or a launch-error event such as InsufficientCapacityError), by that reason (once per NodeClaim UID).",
    labels: &["nodepool", "reason"],
};

pub const NODE_CHURN: MetricDef = MetricDef {
    name: "karpenter_helper_node_churn_total",
    title: "Node churn",
    kind: MetricKind::Counter,
    help: "NodeClaim lifecycle events: launched, registered, initialized, disrupted (reason: drifted, underutilized, empty, expired, interrupted) and deleted (once per NodeClaim UID and event).",
    labels: &["nodepool", "event", "reason"],
};

pub const EVICTIONS: MetricDef = MetricDef {
    name: "karpenter_helper_evictions_total",
    title: "Pods evicted by Karpenter",
    kind: MetricKind::Counter,
    help: "Pods Karpenter evicted while draining a node (its Evicted events), or deleted when the node's terminationGracePeriod ran out, by reason (once per pod UID).",
    labels: &["nodepool", "reason"],
};

pub const UNSCHEDULABLE_PODS: MetricDef = MetricDef {
    name: "karpenter_helper_unschedulable_pods",
    title: "Unschedulable pods",
    kind: MetricKind::Gauge,
    help: "Unschedulable pods now, by what holds them: the first NodePool meant for the pod (its taints and requirements admit it) and why that pool rejects it (limits, instance-types, nodepool-not-ready, ...; compatible when it could take it), else taints of a pool whose requirements admit it; nodepool is empty when no pool is meant for the pod (requirements, validation).",
    labels: &["category", "nodepool"],
};

pub const DRIFTED_NODES: MetricDef = MetricDef {
    name: "karpenter_helper_drifted_nodes",
    title: "Drifted nodes",
    kind: MetricKind::Gauge,
    help: "NodeClaims that are Drifted now, by NodePool.",
    labels: &["nodepool"],
};

pub const DISRUPTION_BLOCKED_NODES: MetricDef = MetricDef {
    name: "karpenter_helper_disruption_blocked_nodes",
    title: "Nodes blocked from disruption",
    kind: MetricKind::Gauge,
    help: "Nodes Karpenter wants to disrupt but cannot, now, by NodePool and blocker kind (a node with several kinds of blocker counts once under each).",
    labels: &["nodepool", "blocker"],
};

pub const UNCONSOLIDATED_NODES: MetricDef = MetricDef {
    name: "karpenter_helper_unconsolidated_nodes",
    title: "Nodes not consolidated, by reason",
    kind: MetricKind::Gauge,
    help: "Karpenter nodes that are not being consolidated now, by NodePool and the reason (Karpenter's own where it wrote one, else kelp's): static-pool, consolidation-disabled, when-empty-not-empty, consolidate-after, blocked, budget, pods-would-not-schedule, no-cheaper-node, spot-to-spot, would-create-multiple, filtering-by-price, unknown-instance, buffer-pods, rejected, needs-replacement, other, unknown. Candidates and nodes being disrupted do not count.",
    labels: &["nodepool", "reason"],
};

pub const NODEPOOL_USAGE_RATIO: MetricDef = MetricDef {
    name: "karpenter_helper_nodepool_usage_ratio",
    title: "NodePool usage of its limits",
    kind: MetricKind::Gauge,
    help: "A NodePool's usage over its limit, per resource that has a limit (1 means exhausted; a zero limit reads 1).",
    labels: &["nodepool", "resource"],
};

pub const NODEPOOL_COST: MetricDef = MetricDef {
    name: "karpenter_helper_nodepool_cost_per_hour",
    title: "Cost ($/hr)",
    kind: MetricKind::Gauge,
    help: "Hourly price of a NodePool's nodes by capacity type, summed over the nodes whose price is known (the controller's offering prices, or the kwok price label).",
    labels: &["nodepool", "capacity_type"],
};

pub const NODEPOOL_NODES: MetricDef = MetricDef {
    name: "karpenter_helper_nodepool_nodes",
    title: "Nodes",
    kind: MetricKind::Gauge,
    help: "Nodes a NodePool has now (its Node objects; its status.nodes only when kelp sees none of its nodes or NodeClaims).",
    labels: &["nodepool"],
};

pub const NODEPOOL_ROLLOUT_NODES: MetricDef = MetricDef {
    name: "karpenter_helper_nodepool_rollout_nodes",
    title: "Rollout",
    kind: MetricKind::Gauge,
    help: "A NodePool's nodes by where its drift rollout has them: up-to-date (not drifted), replacing (drifted and being replaced), waiting (drifted, waiting on the budget), blocked (drifted, held by a blocker of its own: a do-not-disrupt pod, a PDB allowing none).",
    labels: &["nodepool", "state"],
};

pub const NODEPOOL_ROLLOUT_ETA: MetricDef = MetricDef {
    name: "karpenter_helper_nodepool_rollout_eta_seconds",
    title: "Rollout ETA",
    kind: MetricKind::Gauge,
    help: "Rough seconds until a NodePool's waiting drifted nodes are replaced: the wait for a budget window, then waves of what the budgets allow at 15 s a wave (what the real Karpenter took with kwok's instant nodes: compare across time, not as a promise). 0 while none wait (blocked nodes have no ETA: see the rollout nodes' blocked state); absent while the budgets allow no drift for 7 days.",
    labels: &["nodepool"],
};

/// Buckets of the pod provisioning latency histogram, in seconds; one is the SLO threshold.
pub const POD_LATENCY_BUCKETS: &[f64] = &[
    5.0, 10.0, 15.0, 20.0, 30.0, 45.0, 60.0, 90.0, 120.0, 180.0, 240.0, 300.0, 420.0, 600.0, 900.0,
    1800.0, 3600.0,
];

/// Buckets of the node provisioning histogram, in seconds.
pub const NODE_PROVISIONING_BUCKETS: &[f64] = &[
    1.0, 2.0, 5.0, 10.0, 15.0, 20.0, 30.0, 45.0, 60.0, 90.0, 120.0, 180.0, 300.0, 600.0, 900.0,
    1800.0,
];

/// The provisioning-latency SLO: this share of the pods that waited on new capacity are
/// bound within [`PROVISIONING_SLO_SECONDS`].
pub const PROVISIONING_SLO_TARGET: f64 = 0.99;
pub const PROVISIONING_SLO_SECONDS: f64 = 300.0;

/// The seed operator's metrics.
pub const SEED: &[MetricDef] = &[
    DAEMONSET_NODEPOOL_MISMATCH,
    NODE_TTL_DEATHS,
    NOMINATED_POD_FAILURES,
    NODES_CREATED_FOR_NOMINATED_PODS,
    NODES_NOT_REAPED_DUE_TO_NOMINATION,
    NODE_REAPING_DELAY,
];

/// The SLIs and the picture of now, beside the seed's metrics.
pub const SLI: &[MetricDef] = &[
    POD_PROVISIONING_LATENCY,
    NODE_PROVISIONING,
    LAUNCH_FAILURES,
    NODE_CHURN,
    EVICTIONS,
    UNSCHEDULABLE_PODS,
    DRIFTED_NODES,
    DISRUPTION_BLOCKED_NODES,
    UNCONSOLIDATED_NODES,
    NODEPOOL_USAGE_RATIO,
    NODEPOOL_COST,
    NODEPOOL_NODES,
    NODEPOOL_ROLLOUT_NODES,
    NODEPOOL_ROLLOUT_ETA,
];

/// Every metric kelp serves.
pub const ALL: &[MetricDef] = &[
    FINDINGS,
    KARPENTER_INFO,
    DAEMONSET_NODEPOOL_MISMATCH,
    NODE_TTL_DEATHS,
    NOMINATED_POD_FAILURES,
    NODES_CREATED_FOR_NOMINATED_PODS,
    NODES_NOT_REAPED_DUE_TO_NOMINATION,
    NODE_REAPING_DELAY,
    POD_PROVISIONING_LATENCY,
    NODE_PROVISIONING,
    LAUNCH_FAILURES,
    NODE_CHURN,
    EVICTIONS,
    UNSCHEDULABLE_PODS,
    DRIFTED_NODES,
    DISRUPTION_BLOCKED_NODES,
    UNCONSOLIDATED_NODES,
    NODEPOOL_USAGE_RATIO,
    NODEPOOL_COST,
    NODEPOOL_NODES,
    NODEPOOL_ROLLOUT_NODES,
    NODEPOOL_ROLLOUT_ETA,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_every_metric_is_listed_once() {
        let mut names: Vec<&str> = ALL.iter().map(|d| d.name).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), ALL.len());
        assert_eq!(ALL.len(), 2 + SEED.len() + SLI.len());
        for d in SEED.iter().chain(SLI) {
            assert!(ALL.contains(d), "{} missing from ALL", d.name);
        }
        for d in ALL {
            assert!(d.name.starts_with("karpenter_helper_"), "{}", d.name);
            assert_eq!(d.kind == MetricKind::Counter, d.name.ends_with("_total"));
            assert!(
                !d.title.is_empty() && !d.title.contains('_'),
                "{}: a panel title is words, not a metric name",
                d.name
            );
        }
    }

    #[test]
    fn the_slo_threshold_is_a_bucket_boundary() {
        assert!(POD_LATENCY_BUCKETS.contains(&PROVISIONING_SLO_SECONDS));
        for b in [
            POD_LATENCY_BUCKETS,
            NODE_PROVISIONING_BUCKETS,
            REAPING_DELAY_BUCKETS,
        ] {
            assert!(b.windows(2).all(|w| w[0] < w[1]), "{b:?} not increasing");
        }
        const { assert!(PROVISIONING_SLO_TARGET > 0.0 && PROVISIONING_SLO_TARGET < 1.0) };
    }
}
