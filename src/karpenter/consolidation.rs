//! Karpenter's consolidation decisions as it writes them into events (v1.0 .. v1.14):
//! `Unconsolidatable` with each of its messages, `ConsolidationCandidate`,
//! `ConsolidationRejected` (v1.9+) and `ConsolidationApproved` (v1.14+), and the reason
//! codes kelp names a node's consolidation state by. Every parser is total: any text,
//! truncated or foreign, yields a best-effort answer and never panics.

use serde::Serialize;

/// Why a node is not consolidated, as kelp names it (the `reason` of a
/// `consolidation-blocked` finding and of `karpenter_helper_unconsolidated_nodes`).
/// A bounded set: metrics label by it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Reason {
    /// The pool has `spec.replicas`: Karpenter never consolidates a static pool.
    StaticPool,
    /// `consolidateAfter: Never`.
    ConsolidationDisabled,
    /// Policy `WhenEmpty` and the node runs pods.
    WhenEmptyNotEmpty,
    /// Not Consolidatable yet: `consolidateAfter` has not passed since the last pod event.
    ConsolidateAfter,
    /// Node- or pod-level blockers (do-not-disrupt, PDBs, a nomination, ...).
    Blocked,
    /// The pool's budgets allow no disruption for the reason now.
    Budget,
    /// Some of its pods would schedule nowhere else.
    PodsWouldNotSchedule,
    /// Its pods need a new node, and no cheaper one would take them.
    NoCheaperNode,
    /// A spot node with spot-to-spot consolidation off, or too few cheaper spot types.
    SpotToSpot,
    /// Its pods would need more than one new node.
    WouldCreateMultiple,
    /// Karpenter could not compare prices (minValues, or no price).
    FilteringByPrice,
    /// Karpenter does not know its instance type, capacity type or zone.
    UnknownInstance,
    /// Buffer pods hold it.
    BufferPods,
    /// A command was computed and then rejected (Balanced scoring, validation).
    Rejected,
    /// Its pods would not fit on the other nodes, so only a cheaper replacement could
    /// consolidate it: kelp cannot price one without an instance-type catalogue.
    NeedsReplacement,
    /// A Karpenter message kelp does not know.
    Other,
}

impl Reason {
    pub const ALL: &'static [Reason] = &[
        Reason::StaticPool,
        Reason::ConsolidationDisabled,
        Reason::WhenEmptyNotEmpty,
        Reason::ConsolidateAfter,
        Reason::Blocked,
        Reason::Budget,
        Reason::PodsWouldNotSchedule,
        Reason::NoCheaperNode,
        Reason::SpotToSpot,
        Reason::WouldCreateMultiple,
        Reason::FilteringByPrice,
        Reason::UnknownInstance,
        Reason::BufferPods,
        Reason::Rejected,
        Reason::NeedsReplacement,
        Reason::Other,
    ];

    /// The name it serialises to (`no-cheaper-node`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::StaticPool => "static-pool",
            Self::ConsolidationDisabled => "consolidation-disabled",
            Self::WhenEmptyNotEmpty => "when-empty-not-empty",
            Self::ConsolidateAfter => "consolidate-after",
            Self::Blocked => "blocked",
            Self::Budget => "budget",
            Self::PodsWouldNotSchedule => "pods-would-not-schedule",
            Self::NoCheaperNode => "no-cheaper-node",
            Self::SpotToSpot => "spot-to-spot",
            Self::WouldCreateMultiple => "would-create-multiple",
            Self::FilteringByPrice => "filtering-by-price",
            Self::UnknownInstance => "unknown-instance",
            Self::BufferPods => "buffer-pods",
            Self::Rejected => "rejected",
            Self::NeedsReplacement => "needs-replacement",
            Self::Other => "other",
        }
    }
}

/// A pod Karpenter (or kelp) found no place for, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PodMiss {
    /// `namespace/name`.
    pub pod: String,
    pub why: String,
}

/// One `Unconsolidatable` message, read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unconsolidatable {
    pub reason: Reason,
    /// The pods that would not schedule (`not all pods would schedule, ...`), at most 5.
    pub pods: Vec<PodMiss>,
    /// How many more pods Karpenter left out of its message (` and N other(s)`).
    pub more: usize,
}

re!(POD_ARROW = r"([A-Za-z0-9][-A-Za-z0-9.]*/[A-Za-z0-9][-A-Za-z0-9.]*) => ");
re!(OTHERS = r"\s*and (\d+) other\(s\)\s*$");
re!(SAVINGS = r"\(savings:? \$(-?[0-9.]+)\)");

/// Reads an `Unconsolidatable` message.
pub fn parse_unconsolidatable(message: &str) -> Unconsolidatable {
    let text = message.trim();
    let lower = text.to_lowercase();
    let has = |p: &str| lower.contains(p);
    let reason = if has("would schedule") {
        Reason::PodsWouldNotSchedule
    } else if has("consolidation disabled") {
        Reason::ConsolidationDisabled
    } else if has("policy whenempty") {
        Reason::WhenEmptyNotEmpty
    } else if has("spottospotconsolidation") {
        Reason::SpotToSpot
    } else if has("cheaper node") {
        Reason::NoCheaperNode
    } else if has("without creating") {
        Reason::WouldCreateMultiple
    } else if has("filtering by price") {
        Reason::FilteringByPrice
    } else if has("buffer pods") {
        Reason::BufferPods
    } else if has("instance type") && has("not found") || has("does not have label") {
        Reason::UnknownInstance
    } else {
        Reason::Other
    };
    let (pods, more) = if reason == Reason::PodsWouldNotSchedule {
        pods_of(text)
    } else {
        (Vec::new(), 0)
    };
    Unconsolidatable { reason, pods, more }
}

/// The `ns/pod => error` pairs of a "not all pods would schedule" message.
fn pods_of(text: &str) -> (Vec<PodMiss>, usize) {
    let (text, more) = match OTHERS.captures(text) {
        Some(c) => (
            &text[..c.get(0).map_or(text.len(), |m| m.start())],
            c[1].parse().unwrap_or(0),
        ),
        None => (text, 0),
    };
    let heads: Vec<_> = POD_ARROW.captures_iter(text).collect();
    let mut out = Vec::new();
    for (i, c) in heads.iter().enumerate() {
        let (Some(all), Some(pod)) = (c.get(0), c.get(1)) else {
            continue;
        };
        let end = heads
            .get(i + 1)
            .and_then(|n| n.get(0))
            .map_or(text.len(), |m| m.start());
        out.push(PodMiss {
            pod: pod.as_str().to_string(),
            why: text.get(all.end()..end).unwrap_or("").trim().to_string(),
        });
    }
    (out, more)
}

re!(PART_OF = r"\(part of (\d+)-node consolidation\)");

/// How many nodes the command a `ConsolidationCandidate` message names takes together,
/// when it is a multi-node one: `replace: [n1] (part of 2-node consolidation) (savings:
/// $0.05)` says 2 (and its savings are the whole command's). Karpenter writes these while
/// it searches, for every node of each multi-node window it tries, and then may drop the
/// command without a word (v1.14.1 and v1.15 `multinodeconsolidation.go`): such an event
/// is no decision about the node alone.
pub fn multi_node(message: &str) -> Option<u32> {
    PART_OF.captures(message).and_then(|c| c[1].parse().ok())
}

/// The savings in a `ConsolidationCandidate` or `ConsolidationRejected` message, in $/h.
pub fn savings(message: &str) -> Option<f64> {
    SAVINGS
        .captures(message)
        .and_then(|c| c[1].parse().ok())
        .filter(|v: &f64| v.is_finite())
}

/// The reason in a `ConsolidationRejected` message
/// (`Consolidation rejected: <command>, reason: <reason> (savings: $x)`).
pub fn rejected_reason(message: &str) -> String {
    let tail = message
        .rfind(", reason: ")
        .map_or(message, |i| &message[i + ", reason: ".len()..]);
    let tail = SAVINGS.find(tail).map_or(tail, |m| &tail[..m.start()]);
    tail.trim().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_unconsolidatable_message_of_v1_14_has_its_reason() {
        let cases = [
            ("Instance Type \"m5.large\" not found", Reason::UnknownInstance),
            (
                "Node does not have label \"topology.kubernetes.io/zone\"",
                Reason::UnknownInstance,
            ),
            (
                "NodePool \"default\" has consolidation disabled",
                Reason::ConsolidationDisabled,
            ),
            (
                "NodePool \"batch\" has consolidation policy WhenEmpty, but node is not empty",
                Reason::WhenEmptyNotEmpty,
            ),
            ("Node \"n1\" has buffer pods", Reason::BufferPods),
            (
                "Can't remove without creating 2 candidates",
                Reason::WouldCreateMultiple,
            ),
            (
                "Filtering by price: minValues requirement is not met for label(s) (karpenter.k8s.aws/instance-family)",
                Reason::FilteringByPrice,
            ),
            ("Can't replace with a cheaper node", Reason::NoCheaperNode),
            (
                "SpotToSpotConsolidation is disabled, can't replace a spot node with a spot node",
                Reason::SpotToSpot,
            ),
            (
                "SpotToSpotConsolidation requires 15 cheaper instance type options than the current candidate to consolidate, got 4",
                Reason::SpotToSpot,
            ),
            ("something new", Reason::Other),
        ];
        for (m, want) in cases {
            assert_eq!(parse_unconsolidatable(m).reason, want, "{m}");
        }
        assert_eq!(Reason::ALL.len(), 16);
    }

    #[test]
    fn pods_that_would_not_schedule_are_named_with_their_reasons() {
        let u = parse_unconsolidatable(
            "Not all pods would schedule, shop/web-7d9f-abc => would schedule against uninitialized nodeclaim/default-x, \
             ml/trainer-0 => incompatible with nodepool \"gpu\", daemonset overhead={\"cpu\":\"200m\"}, no instance type satisfied resources  and 3 other(s)",
        );
        assert_eq!(u.reason, Reason::PodsWouldNotSchedule);
        assert_eq!(u.more, 3);
        assert_eq!(u.pods.len(), 2);
        assert_eq!(u.pods[0].pod, "shop/web-7d9f-abc");
        assert!(
            u.pods[0].why.starts_with("would schedule against"),
            "{:?}",
            u.pods[0]
        );
        assert_eq!(u.pods[1].pod, "ml/trainer-0");
        assert!(u.pods[1].why.ends_with("resources"), "{:?}", u.pods[1]);
        // Truncated or foreign: no panic, best effort.
        for m in [
            "not all pods would schedule, ",
            "not all pods would schedule, a/b =>",
            "é/é => x",
        ] {
            let _ = parse_unconsolidatable(m);
        }
    }

    #[test]
    fn savings_and_rejections_read_as_written() {
        // As the real v1.14.1 writes them (seen on the testenv).
        assert_eq!(
            savings("Consolidation candidate: replace: [kwok-cap-shrink-x-2554112446] -> [1 replacement] (savings: $0.03)"),
            Some(0.03)
        );
        let m = "Consolidation rejected: replace: [kwok-cap-shrink-x-2554112446] -> [1 replacement], reason: churn (savings: $0.03)";
        assert_eq!(savings(m), Some(0.03));
        assert_eq!(rejected_reason(m), "churn");
        assert_eq!(savings("no money here"), None);
    }

    #[test]
    fn a_multi_node_candidate_says_how_many_nodes_it_takes() {
        assert_eq!(
            multi_node("Consolidation candidate: replace: [n1] (part of 2-node consolidation) (savings: $0.05)"),
            Some(2)
        );
        assert_eq!(
            multi_node(
                "Consolidation candidate: replace: [n1] -> [1 replacement] (savings: $0.02)"
            ),
            None
        );
    }
}
