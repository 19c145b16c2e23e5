//! The event reasons kelp reads, each spelled once: Karpenter's own (core and the AWS
//! provider) and the kube-scheduler's `FailedScheduling`. A reason is compared as a
//! [`Reason`], so a misspelt one fails to compile.

use std::fmt;

macro_rules! reasons {
    ($($(#[$doc:meta])* $name:ident,)*) => {
        /// An event reason kelp reads.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum Reason {
            $($(#[$doc])* $name,)*
        }

        impl Reason {
            /// Every reason, in the order written here.
            pub const ALL: &'static [Reason] = &[$(Reason::$name,)*];

            /// The reason as the event carries it.
            pub const fn as_str(self) -> &'static str {
                match self {
                    $(Reason::$name => stringify!($name),)*
                }
            }
        }
    };
}

reasons! {
    /// The scheduler's, and Karpenter's when no pool can take a pod.
    FailedScheduling,
    /// Karpenter expects a pod to land on a node (new or existing).
    Nominated,
    /// Karpenter cannot disrupt a node, and says why.
    DisruptionBlocked,
    DisruptionLaunching,
    DisruptionWaitingReadiness,
    DisruptionTerminating,
    /// Consolidation's decisions about a node.
    Unconsolidatable,
    ConsolidationCandidate,
    ConsolidationRejected,
    ConsolidationApproved,
    /// Node repair held by its breaker.
    NodeRepairBlocked,
    RebootObserved,
    RebootFailed,
    Evicted,
    Disrupted,
    FailedDraining,
    TerminationGracePeriodExpiring,
    /// Interruptions of running capacity (AWS provider).
    SpotInterrupted,
    SpotRebalanceRecommendation,
    InstanceStopping,
    InstanceTerminating,
    InstanceUnhealthy,
    TerminatingOnInterruption,
    CapacityReservationInstanceInterrupted,
    /// A pool that no instance type satisfies.
    NoCompatibleInstanceTypes,
    /// A NodeClaim's launch failed.
    InsufficientCapacityError,
    NodeClassNotReady,
    LaunchFailed,
    FailedLaunch,
    /// A NodeClaim launched.
    Launched,
}

impl Reason {
    /// The reason an event names, if kelp reads it.
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.iter().copied().find(|r| r.as_str() == s)
    }
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl PartialEq<Reason> for String {
    fn eq(&self, r: &Reason) -> bool {
        self.as_str() == r.as_str()
    }
}

#[cfg(test)]
mod tests {
    use super::Reason;

    #[test]
    fn every_reason_parses_back_and_is_spelt_once() {
        let mut seen = std::collections::BTreeSet::new();
        for r in Reason::ALL {
            assert_eq!(Reason::parse(r.as_str()), Some(*r));
            assert!(seen.insert(r.as_str()), "{r} twice");
        }
        assert_eq!(
            Reason::parse("nominated"),
            None,
            "reasons are case-sensitive"
        );
        assert!(String::from("Nominated") == Reason::Nominated);
    }
}
