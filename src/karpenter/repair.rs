//! Karpenter's node repair, as far as its rules are fixed: the node conditions each cloud
//! provider's repair policies name (a node with one of them counts as unhealthy), the
//! breaker that stops repair in a NodePool where more than 20% of the nodes are unhealthy,
//! and its `NodeRepairBlocked` event.
//!
//! Repair runs only with Karpenter's `NodeRepair` feature gate (off by default). From v1.15
//! it is a disruption method (`disruption/repair.go`) that writes `NodeRepairBlocked` on
//! the Node, the NodeClaim and the NodePool; before (and with `--legacy-node-repair`) the
//! `node/health` controller writes it on the Node alone, in other words.

use super::requirements::Provider;

/// The (condition type, status) pairs of a provider's repair policies: a node carrying one
/// counts as unhealthy for the breaker at once, whatever the policy's toleration or reason
/// pattern (v1.15 `RepairPolicyMatcher.Matches`).
///
/// - the kwok provider (sigs.k8s.io/karpenter `kwok/cloudprovider`): Ready False and
///   Unknown; v1.15 adds its simulated faults `KWOKUnhealthy` and `KWOKRebootRequired`;
/// - the AWS provider (karpenter-provider-aws v1.14.1 and v1.15.2 `RepairPolicies`): Ready
///   False and Unknown, and the node monitoring agent's `AcceleratedHardwareReady`,
///   `StorageReady`, `NetworkingReady`, `KernelReady` and `ContainerRuntimeReady` False;
/// - any other provider: Ready False and Unknown, which every provider kelp knows repairs
///   (a provider may repair more).
pub fn unhealthy_conditions(provider: Provider) -> &'static [(&'static str, &'static str)] {
    match provider {
        Provider::Kwok => &[
            ("Ready", "False"),
            ("Ready", "Unknown"),
            ("KWOKUnhealthy", "True"),
            ("KWOKRebootRequired", "True"),
        ],
        Provider::Aws => &[
            ("Ready", "False"),
            ("Ready", "Unknown"),
            ("AcceleratedHardwareReady", "False"),
            ("StorageReady", "False"),
            ("NetworkingReady", "False"),
            ("KernelReady", "False"),
            ("ContainerRuntimeReady", "False"),
        ],
        Provider::Core => &[("Ready", "False"), ("Ready", "Unknown")],
    }
}

/// How many of a pool's `nodes` may be unhealthy before the breaker stops repair there:
/// 20%, rounded up (intstr's `GetScaledValueFromIntOrPercent(20%, nodes, true)`), so one
/// unhealthy node never stops it.
pub fn breaker_threshold(nodes: usize) -> usize {
    (nodes * 20).div_ceil(100)
}

/// Whether repair is stopped in a pool of `nodes` of which `unhealthy` are: more than the
/// threshold.
pub fn breaker_tripped(unhealthy: usize, nodes: usize) -> bool {
    unhealthy > breaker_threshold(nodes)
}

/// What a `NodeRepairBlocked` message says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RepairBlocked {
    /// Too much of a pool is unhealthy; v1.15 names the pool, the older controller does
    /// not (the event is about one of its nodes).
    Pool(Option<String>),
    /// The older controller, for a node of no pool: too much of the cluster is unhealthy.
    Cluster,
    Other,
}

re!(POOL_NAMED = r#"^more than \S+ of nodes in nodepool "([^"]+)" are unhealthy"#);

/// Parses a `NodeRepairBlocked` message: v1.15 `more than 20% of nodes in nodepool "gpu"
/// are unhealthy`, and before `more than 20% nodes are unhealthy in the nodepool` or
/// (sic) `more then 20% nodes are unhealthy in the cluster`.
pub fn parse_repair_blocked(message: &str) -> RepairBlocked {
    let m = message.trim();
    if let Some(c) = POOL_NAMED.captures(m) {
        return RepairBlocked::Pool(Some(c[1].to_string()));
    }
    if m.ends_with("nodes are unhealthy in the nodepool") {
        RepairBlocked::Pool(None)
    } else if m.ends_with("nodes are unhealthy in the cluster") {
        RepairBlocked::Cluster
    } else {
        RepairBlocked::Other
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_breaker_allows_20_percent_rounded_up() {
        // One unhealthy node never stops repair; two of four do; two of ten do not.
        assert_eq!(breaker_threshold(1), 1);
        assert!(!breaker_tripped(1, 1));
        assert!(!breaker_tripped(1, 4));
        assert!(breaker_tripped(2, 4));
        assert_eq!(breaker_threshold(10), 2);
        assert!(!breaker_tripped(2, 10));
        assert!(breaker_tripped(3, 10));
        assert_eq!(breaker_threshold(11), 3);
        assert_eq!(breaker_threshold(0), 0);
    }

    #[test]
    fn each_releases_words_are_read() {
        assert_eq!(
            parse_repair_blocked(r#"more than 20% of nodes in nodepool "gpu" are unhealthy"#),
            RepairBlocked::Pool(Some("gpu".into()))
        );
        assert_eq!(
            parse_repair_blocked("more than 20% nodes are unhealthy in the nodepool"),
            RepairBlocked::Pool(None)
        );
        assert_eq!(
            parse_repair_blocked("more then 20% nodes are unhealthy in the cluster"),
            RepairBlocked::Cluster
        );
        assert_eq!(parse_repair_blocked("something else"), RepairBlocked::Other);
    }

    #[test]
    fn ready_false_and_unknown_are_unhealthy_everywhere() {
        for p in [Provider::Core, Provider::Aws, Provider::Kwok] {
            let c = unhealthy_conditions(p);
            assert!(c.contains(&("Ready", "False")) && c.contains(&("Ready", "Unknown")));
        }
        assert!(unhealthy_conditions(Provider::Kwok).contains(&("KWOKUnhealthy", "True")));
        assert!(!unhealthy_conditions(Provider::Aws).contains(&("KWOKUnhealthy", "True")));
    }
}
