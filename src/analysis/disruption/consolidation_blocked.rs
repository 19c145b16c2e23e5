//! `consolidation-blocked`: the finding for each node Karpenter considers for
//! consolidation and that something holds, written from the node's disruption state.

use std::sync::Arc;

use chrono::Duration;
use serde::Serialize;

use super::super::{ago, Context};
use super::consolidation::{Evidence, Source, State};
use super::state::NodeDisruption;
use crate::findings::{Code, Finding, ObjectRef, Severity};
use crate::karpenter::consolidation::{PodMiss, Reason};
use crate::model::ObjectKind;

/// The details of a `consolidation-blocked` finding: the node's consolidation answer,
/// read from its disruption state, which the finding shares (so a later pass can hand the
/// finding on while the state is the same allocation: [`super::super::kept`]).
#[derive(Debug)]
pub struct BlockedDetails {
    state: Arc<NodeDisruption>,
    /// How long the node has been Consolidatable, in the words of the message.
    since_words: Option<String>,
}

impl BlockedDetails {
    /// The node's disruption state the finding was written from.
    pub fn state(&self) -> &Arc<NodeDisruption> {
        &self.state
    }
}

impl Serialize for BlockedDetails {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        #[serde(rename_all = "camelCase")]
        struct View<'a> {
            reason: Option<Reason>,
            source: Source,
            pods: &'a [PodMiss],
            #[serde(skip_serializing_if = "Option::is_none")]
            savings_per_hour: Option<f64>,
            nodeclaim: &'a Option<String>,
            #[serde(skip_serializing_if = "Option::is_none")]
            event: Option<&'a Evidence>,
            #[serde(skip_serializing_if = "Option::is_none")]
            kelp_check: Option<&'a String>,
        }
        let x = &self.state.consolidation;
        View {
            reason: x.reason,
            source: x.source,
            pods: &x.pods,
            savings_per_hour: x.savings_per_hour,
            nodeclaim: &self.state.nodeclaim,
            event: x.event.as_ref(),
            kelp_check: x.kelp_check.as_ref(),
        }
        .serialize(s)
    }
}

/// `consolidation-blocked`: every node Karpenter considers for consolidation and that
/// something holds; a warning once it has stood an hour. A finding of the pass before is
/// handed on while its node's state is the same and its words and severity stand.
pub(super) fn findings(ctx: &Context) -> Vec<Arc<Finding>> {
    let mut out = Vec::new();
    for s in ctx.pass.nodes.values() {
        let x = &s.consolidation;
        let (State::Blocked, Some(_)) = (x.state, x.reason) else {
            continue;
        };
        let long = x
            .considered_since
            .is_some_and(|t| ctx.pass.now - t > Duration::hours(1));
        let severity = if long {
            Severity::Warning
        } else {
            Severity::Info
        };
        let since_words = x.considered_since.map(|t| ago(ctx.pass.now, t));
        let kept = ctx
            .kept
            .and_then(|k| k.get(Code::ConsolidationBlocked, s))
            .filter(|f| {
                f.severity == severity
                    && f.details
                        .downcast_ref::<BlockedDetails>()
                        .is_some_and(|d| d.since_words == since_words)
            });
        if let Some(kept) = kept {
            out.push(kept.clone());
            continue;
        }
        out.push(Arc::new(
            Finding::new(
                Code::ConsolidationBlocked,
                severity,
                ObjectRef::cluster(ObjectKind::Node, &s.node),
                format!(
                    "Not consolidated{}: {}",
                    since_words
                        .as_ref()
                        .map(|w| format!(" (Consolidatable for {w})"))
                        .unwrap_or_default(),
                    x.message
                ),
            )
            .pool(s.nodepool.as_deref())
            .since(x.considered_since)
            .details(BlockedDetails {
                state: s.clone(),
                since_words,
            }),
        ));
    }
    out
}
