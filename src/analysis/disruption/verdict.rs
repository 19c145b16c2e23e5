//! The words of a node's disruption verdict: why Karpenter wants to disrupt it ([`Want`])
//! and each thing that stops it ([`Blocker`]).

use serde::Serialize;

use crate::findings::ObjectRef;
use crate::karpenter::budgets::DisruptionReason;
use crate::karpenter::events::BlockerKind;

/// One thing that stops Karpenter from disrupting a node.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Blocker {
    pub kind: BlockerKind,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub object: Option<ObjectRef>,
    pub message: String,
}

/// Why Karpenter wants to disrupt a node (serialised as Karpenter names it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum WantReason {
    Drifted,
    Expired,
    Empty,
    Underutilized,
}

impl WantReason {
    /// The budget reason that counts this disruption; expiry has none (budgets never hold it).
    pub fn budget(self) -> Option<DisruptionReason> {
        match self {
            Self::Drifted => Some(DisruptionReason::Drifted),
            Self::Empty => Some(DisruptionReason::Empty),
            Self::Underutilized => Some(DisruptionReason::Underutilized),
            Self::Expired => None,
        }
    }

    /// Drift and expiry are eventual: a terminationGracePeriod forces them through.
    pub fn eventual(self) -> bool {
        matches!(self, Self::Drifted | Self::Expired)
    }
}

/// Why Karpenter wants to disrupt a node.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Want {
    pub reason: WantReason,
    pub message: String,
}
