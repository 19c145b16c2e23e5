//! NodeClaims and the nodes they become: claims stuck launching, registering or
//! initialising, launch errors Karpenter wrote on claims since deleted ([`LAUNCH_ERRORS`]),
//! and Karpenter nodes NotReady past the grace period.

use std::collections::{BTreeMap, BTreeSet};

use chrono::Duration;
use serde::Serialize;

use super::super::{ago, Context};
use super::GRACE;
use crate::findings::{Code, Finding, ObjectRef, Severity};
use crate::karpenter::events;
use crate::karpenter::events::Reason;
use crate::model::*;

#[derive(Serialize)]
struct ClaimDetails {
    reason: Option<String>,
    message: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    hint: Option<&'static str>,
}

/// A NodeClaim's pool, the one way kelp finds it: its `karpenter.sh/nodepool` label, else
/// its name's prefix (Karpenter names a claim `POOL-xxxxx`) when that pool exists, so a claim
/// since deleted, as an event names it, has its pool too. A node's pool is its label alone.
pub fn claim_pool(c: &Cluster, name: &str) -> Option<String> {
    if let Some(p) = c
        .nodeclaims
        .get(name)
        .and_then(|n| Cluster::pool_of(&n.metadata.labels))
    {
        return Some(p.to_string());
    }
    let (prefix, _) = name.rsplit_once('-')?;
    c.nodepools.contains_key(prefix).then(|| prefix.to_string())
}

/// Event reasons Karpenter writes on a NodeClaim whose launch failed.
pub const LAUNCH_ERRORS: &[Reason] = &[
    Reason::InsufficientCapacityError,
    Reason::NodeClassNotReady,
    Reason::LaunchFailed,
    Reason::FailedLaunch,
];

pub(super) fn nodeclaims(ctx: &Context) -> Vec<Finding> {
    let c = ctx.cluster;
    let mut out = Vec::new();
    let mut launch_reported = BTreeSet::new();
    for claim in c.nodeclaims.values() {
        let m = &claim.metadata;
        let conds = &claim.status.conditions;
        if m.deletion_timestamp.is_some() {
            continue;
        }
        // Most claims are fine: their pool and reference are made only for a finding.
        let pool = || claim_pool(c, &m.name);
        let obj = || ObjectRef::of(ObjectKind::NodeClaim, m);
        let [launched, registered, initialized] =
            conditions_of(conds, ["Launched", "Registered", "Initialized"]);
        let created = m.creation_timestamp;
        if !launched.is_some_and(Condition::is_true) {
            // A launch the cloud provider refused is marked at once: Launched stays
            // Unknown with the provider's reason and message (not the initial
            // AwaitingReconciliation), Karpenter retries it, and its liveness check deletes
            // the claim 5m after that condition last changed (v1.14.1 lifecycle/launch.go,
            // liveness.go), so a failing launch is reported as soon as it fails.
            let failing = launched.filter(|l| {
                l.reason
                    .as_deref()
                    .is_some_and(|r| !r.is_empty() && r != "AwaitingReconciliation")
            });
            let late = created.is_some_and(|t| ctx.pass.now - t > Duration::minutes(GRACE));
            if failing.is_some() || late {
                let msg = launched.and_then(|l| l.message.clone());
                let hint = msg
                    .as_deref()
                    .and_then(|m| events::parse_launch_error(m).hint);
                launch_reported.insert(m.name.clone());
                let deleted_at = launched
                    .and_then(|l| l.last_transition_time)
                    .or(created)
                    .map(|t| t + Duration::minutes(5));
                let message = match (failing, deleted_at) {
                    (Some(l), Some(at)) if at > ctx.pass.now => format!(
                        "Launch failing ({}){}; Karpenter retries it, and deletes the claim and provisions again in {}",
                        l.reason.as_deref().unwrap_or_default(),
                        msg.as_deref().map(|m| format!(": {m}")).unwrap_or_default(),
                        ago(at, ctx.pass.now)
                    ),
                    _ => format!(
                        "Not launched {} after creation{}",
                        created.map(|t| ago(ctx.pass.now, t)).unwrap_or_default(),
                        msg.as_deref().map(|m| format!(": {m}")).unwrap_or_default()
                    ),
                };
                out.push(
                    Finding::new(
                        Code::NodeclaimLaunchFailed,
                        Severity::Critical,
                        obj(),
                        message,
                    )
                    .pool(pool().as_deref())
                    .since(created)
                    .details(ClaimDetails {
                        reason: launched.and_then(|l| l.reason.clone()),
                        message: msg,
                        hint,
                    }),
                );
            }
            continue;
        }
        let after = |cond: Option<&Condition>, mins| {
            cond.and_then(|c| c.last_transition_time)
                .filter(|t| ctx.pass.now - *t > Duration::minutes(mins))
        };
        if !registered.is_some_and(Condition::is_true) {
            if let Some(t) = after(launched, 10) {
                // Karpenter deletes a claim whose node has not registered 15m after its
                // Registered condition last changed (v1.14.1 liveness), and launches again.
                let deleted = registered
                    .and_then(|r| r.last_transition_time)
                    .map(|r| r + Duration::minutes(15))
                    .filter(|at| *at > ctx.pass.now)
                    .map(|at| {
                        format!(
                            "; Karpenter deletes the claim and launches again in {}",
                            ago(at, ctx.pass.now)
                        )
                    })
                    .unwrap_or_default();
                let why = match registered.and_then(|r| r.reason.as_deref()) {
                    // The node joined; a hook (e.g. the AWS placement-group check) holds it.
                    Some("RegistrationHookPending") => "its node joined, but a registration hook has not passed yet".to_string(),
                    Some("MultipleNodesFound") => "more than one node has its provider ID, so Karpenter cannot tell which is its own".to_string(),
                    _ => "its node never joined the cluster (check the node's bootstrap/user data, security groups reaching the API server, and the node IAM role's access entry)".to_string(),
                };
                out.push(
                    Finding::new(
                        Code::NodeclaimNotRegistered,
                        Severity::Critical,
                        obj(),
                        format!("Launched {} ago but {why}{deleted}", ago(ctx.pass.now, t)),
                    )
                    .pool(pool().as_deref())
                    .since(Some(t))
                    .details(ClaimDetails {
                        reason: registered.and_then(|r| r.reason.clone()),
                        message: registered.and_then(|r| r.message.clone()),
                        hint: None,
                    }),
                );
            }
            continue;
        }
        // v1.15's node repair reboots a node in place: its claim is Rebooting=True (and
        // Initialized Unknown, reason Rebooting) until it comes back, or until Karpenter
        // gives up after its observation window and replaces it. Not stuck initializing.
        let rebooting = claim
            .status
            .conditions
            .iter()
            .any(|c| &*c.type_ == "Rebooting" && c.is_true());
        if !initialized.is_some_and(Condition::is_true) && !rebooting {
            if let Some(t) = after(registered, 10) {
                let reason = initialized.and_then(|i| i.reason.clone());
                let hint = match reason.as_deref() {
                    Some("NodeNotReady") => Some("the kubelet never reported Ready: check the CNI and kubelet logs"),
                    Some("StartupTaintsExist") => Some("a startupTaint was never removed: the agent that should remove it is missing or failing"),
                    Some("ResourceNotRegistered") => Some("an extended resource (e.g. a GPU) never appeared: check its device plugin"),
                    _ => None,
                };
                out.push(
                    Finding::new(
                        Code::NodeclaimNotInitialized,
                        Severity::Warning,
                        obj(),
                        format!(
                            "Registered {} ago but not initialized{}",
                            ago(ctx.pass.now, t),
                            reason
                                .as_deref()
                                .map(|r| format!(" ({r})"))
                                .unwrap_or_default()
                        ),
                    )
                    .pool(pool().as_deref())
                    .since(Some(t))
                    .details(ClaimDetails {
                        reason,
                        message: initialized.and_then(|i| i.message.clone()),
                        hint,
                    }),
                );
            }
        }
    }
    // Launch errors from events: the NodeClaim is usually deleted by then.
    let mut latest: BTreeMap<&str, &Event> = BTreeMap::new();
    for e in c.events.values() {
        if e.from_karpenter()
            && e.about(ObjectKind::NodeClaim)
            && e.is_any(LAUNCH_ERRORS)
            && ctx.within(e.seen(), Duration::hours(1))
        {
            let slot = latest.entry(e.regarding.name.as_str()).or_insert(e);
            if (e.seen(), &e.id) > (slot.seen(), &slot.id) {
                *slot = e;
            }
        }
    }
    for (name, e) in latest {
        if launch_reported.contains(name) {
            continue;
        }
        out.push(
            Finding::new(
                Code::NodeclaimLaunchFailed,
                Severity::Warning,
                ObjectRef::cluster(ObjectKind::NodeClaim, name),
                format!("{}: {}", e.reason, e.message),
            )
            .pool(claim_pool(c, name).as_deref())
            .since(e.seen())
            .details(ClaimDetails {
                reason: Some(e.reason.clone()),
                message: Some(e.message.clone()),
                hint: ctx.pass.launch_errors.get(&e.id).and_then(|p| p.hint),
            }),
        );
    }
    out
}

pub(super) fn nodes_not_ready(ctx: &Context) -> Vec<Finding> {
    let c = ctx.cluster;
    c.nodes
        .values()
        // A node being terminated goes NotReady on its way out: not lost capacity.
        .filter(|n| n.metadata.deletion_timestamp.is_none())
        .filter_map(|n| {
            let pool = n.pool()?;
            let ready = condition(&n.status.conditions, "Ready")?;
            let since = ready.last_transition_time?;
            if ready.is_true() || ctx.pass.now - since <= Duration::minutes(GRACE) {
                return None;
            }
            Some(
                Finding::new(
                    Code::NodeNotReady,
                    Severity::Critical,
                    ObjectRef::of(ObjectKind::Node, &n.metadata),
                    format!(
                        "Ready={} for {}{}",
                        ready.status,
                        ago(ctx.pass.now, since),
                        ready.reason.as_deref().map(|r| format!(" ({r})")).unwrap_or_default()
                    ),
                )
                .pool(Some(pool))
                .since(Some(since))
                .details(serde_json::json!({"status": ready.status, "reason": ready.reason, "message": ready.message})),
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(status: &str) -> Vec<Finding> {
        found_created("2026-11-21T09:40:00Z", status)
    }

    fn found_created(created: &str, status: &str) -> Vec<Finding> {
        let yaml = format!(
            "apiVersion: karpenter.sh/v1\nkind: NodeClaim\nmetadata: {{name: web-a, creationTimestamp: \"{created}\", labels: {{karpenter.sh/nodepool: web}}}}\nstatus:\n  conditions:\n{status}"
        );
        let mut c = Cluster::default();
        crate::source::load_str("t.yaml", &yaml, &mut c).unwrap();
        let now = chrono::DateTime::parse_from_rfc3339("2026-11-21T10:00:00Z")
            .unwrap()
            .to_utc();
        nodeclaims(&Context::new(&c, now))
    }

    #[test]
    fn a_launch_the_provider_refused_is_reported_at_once() {
        // Marked 2 minutes ago: Karpenter deletes the claim 3 minutes from now.
        let f = found_created("2026-11-21T09:58:00Z", "  - {type: Launched, status: Unknown, reason: LaunchFailed, message: \"UnauthorizedOperation: not authorized\", lastTransitionTime: \"2026-11-21T09:58:00Z\"}\n");
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].code, Code::NodeclaimLaunchFailed);
        assert_eq!(
            f[0].message,
            "Launch failing (LaunchFailed): UnauthorizedOperation: not authorized; Karpenter retries it, and deletes the claim and provisions again in 3m"
        );
        // Still launching, as every claim does at first: nothing to say.
        let f = found_created("2026-11-21T09:59:00Z", "  - {type: Launched, status: Unknown, reason: AwaitingReconciliation, lastTransitionTime: \"2026-11-21T09:59:00Z\"}\n");
        assert!(f.is_empty(), "{f:?}");
    }

    #[test]
    fn a_node_that_joined_but_waits_on_a_hook_is_not_called_missing() {
        let launched = "  - {type: Launched, status: \"True\", lastTransitionTime: \"2026-11-21T09:45:00Z\"}\n";
        let f = found(&format!("{launched}  - {{type: Registered, status: Unknown, reason: RegistrationHookPending, lastTransitionTime: \"2026-11-21T09:50:00Z\"}}\n"));
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(
            f[0].message,
            "Launched 15m ago but its node joined, but a registration hook has not passed yet; Karpenter deletes the claim and launches again in 5m"
        );
        let f = found(&format!("{launched}  - {{type: Registered, status: Unknown, lastTransitionTime: \"2026-11-21T09:40:00Z\"}}\n"));
        assert!(
            f[0].message.contains("its node never joined the cluster"),
            "{f:?}"
        );
    }
}
