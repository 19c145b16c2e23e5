//! NodePool limits: when what is left of a limit is less than any instance type has (so
//! Karpenter has no type left for the pool: the pool's own types from a catalogue, else
//! floors every type meets), and the findings for pools at or near their limits, critical
//! when pending pods wait on them.

use std::sync::Arc;

use serde::Serialize;

use super::super::Context;
use super::pools::PoolUsage;
use super::verdict::Verdict;
use crate::findings::{Code, Finding, ObjectRef, Severity};
use crate::karpenter::events::Category;
use crate::karpenter::resources::{format_quantity, Resources};
use crate::model::ObjectKind;

/// Resources every instance type has, so that none is left once such a limit is used up.
pub fn every_instance_has(resource: &str) -> bool {
    matches!(resource, "cpu" | "memory" | "pods" | "ephemeral-storage")
}

/// Whether `left` of a limited resource is less than any instance type has, so Karpenter
/// has no type left for the pool. kelp has no provider catalogue, so it uses floors every
/// real instance type meets (AWS and kwok alike): 1 CPU, 512Mi, 1 pod; an extended resource
/// (a GPU) only when over the limit, since types without it still fit at exactly 0.
pub fn no_instance_type_left(resource: &str, left: f64) -> bool {
    match resource {
        "nodes" | "pods" => left < 1.0,
        "cpu" => left < 1.0,
        "memory" => left < 512.0 * 1024.0 * 1024.0,
        r if every_instance_has(r) => left <= 0.0,
        _ => left < 0.0,
    }
}

#[derive(Serialize)]
struct LimitDetails {
    resource: String,
    usage: String,
    limit: String,
    ratio: f64,
}

pub(super) fn limits(ctx: &Context) -> Vec<Finding> {
    let c = ctx.cluster;
    let mut out = Vec::new();
    // Whether some pending pod waits on a pool for its limits, asked only once the pool's
    // limit is reached (it decides that finding's severity alone). Replicas share their
    // verdicts: a list the pod before held is not looked at again. Stops at the first.
    let waiting_on = |pool: &str| {
        let mut last = std::ptr::null();
        ctx.pass.pending.iter().any(|d| {
            let list = Arc::as_ptr(&d.nodepools);
            if list == last {
                return false;
            }
            last = list;
            d.nodepools.iter().any(|v| {
                v.name == pool
                    && v.verdict == Verdict::Rejected
                    && v.reasons.iter().any(|r| r.category == Category::Limits)
            })
        })
    };
    for pool in c.nodepools.values() {
        let name = pool.metadata.name.as_str();
        let Ok(limits) = Resources::from_quantities(&pool.spec.limits) else {
            continue;
        };
        let usage = match ctx.pass.pools.get(name) {
            Some(u) => u.counted(),
            None => PoolUsage::of(c, pool).counted(),
        };
        for (res, &limit) in &limits.0 {
            let used = usage.get(res);
            let res = res.clone();
            let ratio = if limit > 0.0 {
                used / limit
            } else {
                f64::INFINITY
            };
            // Exhausted for Karpenter once no instance type fits in what is left: by the
            // pool's own types with a catalogue, else by the floors every type meets.
            let smallest = ctx
                .smallest_types
                .get(name)
                .filter(|_| res != "nodes")
                .map(|s| s.get(&res).copied());
            let none_left = match smallest {
                Some(Some(least)) => least > limit - used + 1e-9,
                Some(None) => limit - used < 0.0,
                None => no_instance_type_left(&res, limit - used),
            };
            let exhausted = ratio >= 1.0 || none_left;
            if !exhausted && ratio < 0.9 {
                continue;
            }
            let details = LimitDetails {
                resource: res.clone(),
                usage: format_quantity(&res, used),
                limit: format_quantity(&res, limit),
                ratio: (ratio * 1000.0).round() / 1000.0,
            };
            let f = if exhausted {
                let waiting_on_limits = waiting_on(name);
                let sev = if waiting_on_limits {
                    Severity::Critical
                } else {
                    Severity::Warning
                };
                Finding::new(
                    Code::NodepoolLimitsExhausted,
                    sev,
                    ObjectRef::of(ObjectKind::NodePool, &pool.metadata),
                    format!(
                        "{res} limit reached: {} of {} in use{}; Karpenter launches no more nodes {} from this pool{}",
                        details.usage,
                        details.limit,
                        if ratio < 1.0 { " (what is left is less than any instance type)" } else { "" },
                        if res == "nodes" || every_instance_has(&res) { "at all" } else { "with it" },
                        if waiting_on_limits { " and pods wait on it" } else { "" }
                    ),
                )
            } else {
                Finding::new(
                    Code::NodepoolLimitsNear,
                    Severity::Info,
                    ObjectRef::of(ObjectKind::NodePool, &pool.metadata),
                    format!(
                        "{res} at {:.0}% of its limit ({} of {})",
                        ratio * 100.0,
                        details.usage,
                        details.limit
                    ),
                )
            };
            out.push(f.pool(Some(name)).details(details));
        }
    }
    out
}
