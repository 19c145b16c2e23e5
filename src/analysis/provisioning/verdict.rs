//! The words of a pool's verdict for a pending pod: compatible, rejected or unknown, its
//! reasons, and who decided it.

use serde::Serialize;

use super::instance_types::Launch;
use crate::karpenter::events::Category;

/// A pool's answer for a pod.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    Rejected,
    Compatible,
    Unknown,
}

/// One reason for a verdict, in Karpenter's words, with its category.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
pub struct Reason {
    pub category: Category,
    pub message: String,
}

/// Who decided a verdict (serialised `kelp` or `event`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum VerdictSource {
    /// kelp's own checks, the way Karpenter decides.
    Kelp,
    /// The reasons come from Karpenter's FailedScheduling event.
    Event,
}

/// One NodePool's verdict for a pod.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PoolVerdict {
    pub name: String,
    pub verdict: Verdict,
    pub reasons: Vec<Reason>,
    /// Who decided: kelp's own checks, or Karpenter's event (instance types, topology,
    /// volumes: what kelp cannot compute).
    pub source: VerdictSource,
    /// Whether Karpenter's event agrees with kelp's own verdict, where it speaks of this pool.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub event_agrees: Option<bool>,
    /// What Karpenter would launch for the pod on this pool, where kelp has an
    /// instance-type catalogue and the pool is compatible.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub launch: Option<Launch>,
}

/// A reason of `category` in these words.
pub(super) fn reason(category: Category, message: impl Into<String>) -> Reason {
    Reason {
        category,
        message: message.into(),
    }
}
