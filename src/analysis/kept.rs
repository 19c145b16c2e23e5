//! The findings a `kelp serve` pass hands on from the pass before (`pod-unschedulable`,
//! `disruption-blocked`, `consolidation-blocked`): a finding that is a pure function of
//! one shared answer (a pending pod's diagnosis, a node's disruption state) and of what
//! the clock decides (its severity; how long a node has been Consolidatable, in words) is
//! the same finding while that answer is the same allocation, kept by the incremental
//! engine because nothing it read changed, and the clock's part reads the same. A pass
//! looks it up by the answer's address instead of writing its words again. The kept
//! finding holds its answer (its details share it), so no address is reused while it is
//! kept.

use std::sync::Arc;

use super::disruption::blocked::BlockedDetails;
use super::disruption::consolidation_blocked::BlockedDetails as ConsolidationDetails;
use super::provisioning::PodDiagnosis;
use crate::findings::{Code, Finding, Report};
use crate::model::shared::FastMap;

/// The last pass's findings that can be handed on, by code and the address of the
/// answer they were written from.
#[derive(Default)]
pub struct KeptFindings(FastMap<(Code, usize), Arc<Finding>>);

impl KeptFindings {
    /// The findings of `report` that can be handed on.
    pub fn of(report: &Report) -> Self {
        let mut kept = FastMap::default();
        for f in &report.findings {
            let source = match f.code {
                Code::PodUnschedulable => f.details.downcast_ref::<PodDiagnosis>().map(address),
                Code::DisruptionBlocked => f
                    .details
                    .downcast_ref::<BlockedDetails>()
                    .map(|b| address(&**b.state())),
                Code::ConsolidationBlocked => f
                    .details
                    .downcast_ref::<ConsolidationDetails>()
                    .map(|b| address(&**b.state())),
                _ => None,
            };
            if let Some(source) = source {
                kept.insert((f.code, source), f.clone());
            }
        }
        KeptFindings(kept)
    }

    /// The finding of `code` written from the answer at `source`, if the last pass wrote
    /// one.
    pub fn get<T>(&self, code: Code, source: &Arc<T>) -> Option<&Arc<Finding>> {
        self.0.get(&(code, address(&**source)))
    }
}

/// Where an answer lives: what a kept finding is found by.
fn address<T>(answer: &T) -> usize {
    answer as *const T as usize
}
