//! One NodePool's own rules: missing limits, a spec.disruption the API server rejects
//! (no consolidateAfter, up to Karpenter v1.14), a short consolidateAfter, budgets that
//! block every disruption, `expireAfter: Never`, and (AWS only, from the offline
//! [`catalog`]) how many instance families and generations its requirements leave.

use std::collections::BTreeSet;

use chrono::Duration;

use super::super::catalog::{self, Space};
use super::super::yaml::{Node, Value};
use super::pool::Pool;
use super::{list, Hit};
use crate::karpenter::duration::{parse_nillable, NillableDuration};
use crate::karpenter::labels::CAPACITY_TYPE;
use crate::karpenter::requirements::{Provider, Requirement};
use crate::karpenter::version::{self, Release};

pub(super) fn nodepool(p: &Pool, target: &Release) -> Vec<Hit> {
    let o = p.obj;
    let mut out = Vec::new();
    let name = p.name();
    // limits
    let limits = o.node.at(&["spec", "limits"]);
    if !p.is_static && limits.is_none_or(|l| l.entries().is_empty()) {
        out.push(p.hit(
            "nodepool-missing-limits",
            o.anchor(&["spec", "limits"]),
            format!("NodePool {name} has no spec.limits, so it can grow without bound: set spec.limits (at least cpu and memory)"),
        ));
    }
    // consolidation
    let path = ["spec", "disruption", "consolidateAfter"];
    // The CRD defaults an absent (or null) spec.disruption to {consolidateAfter: 0s}. Up
    // to v1.14 a spec.disruption it is given must carry consolidateAfter (required): the
    // API server rejects it otherwise, whatever the policy and for static pools too. From
    // v1.15 the field is optional there and defaulted to 0s.
    let disruption = o.node.at(&["spec", "disruption"]).filter(|d| !d.is_null());
    let after = o.node.at(&path).filter(|a| !a.is_null());
    let missing = after.is_none() && disruption.is_some_and(|d| matches!(d.value, Value::Map(_)));
    let rejected = missing && version::consolidate_after_required(target);
    if rejected {
        out.push(p.hit(
            "disruption-missing-consolidate-after",
            o.anchor(&["spec", "disruption"]),
            format!("NodePool {name} sets spec.disruption without consolidateAfter, which Karpenter {target}'s NodePool CRD requires there (v1.15 and newer default it to 0s): the API server rejects it; set spec.disruption.consolidateAfter (e.g. 10m, or Never)"),
        ));
    }
    let policy = o
        .node
        .at(&["spec", "disruption", "consolidationPolicy"])
        .and_then(Node::as_str)
        .unwrap_or("WhenEmptyOrUnderutilized");
    // Balanced consolidates underutilized nodes too (v1.14); only WhenEmpty waits for empty.
    if !p.is_static && !rejected && matches!(policy, "WhenEmptyOrUnderutilized" | "Balanced") {
        let short = match after.and_then(Node::scalar_text) {
            None if missing => Some((
                format!(
                    "is 0s (not set, and Karpenter {} defaults it to 0s)",
                    target.minor_name()
                ),
                o.anchor(&["spec", "disruption"]),
            )),
            None => Some((
                "is 0s (spec.disruption is not set, so Karpenter defaults it to 0s)".to_string(),
                o.anchor(&path),
            )),
            Some(text) => match parse_nillable(&text) {
                Ok(NillableDuration::After(d)) if d < Duration::minutes(5) => {
                    Some((format!("is {text}"), o.anchor(&path)))
                }
                _ => None,
            },
        };
        if let Some((what, line)) = short {
            out.push(p.hit(
                "consolidate-after-too-short",
                line,
                format!("NodePool {name} consolidates {policy} and consolidateAfter {what}: set spec.disruption.consolidateAfter to at least 5m to avoid node churn"),
            ));
        }
    }
    // budgets
    if let Some(budgets) = o.node.at(&["spec", "disruption", "budgets"]) {
        for b in budgets.items() {
            let nodes = b.get("nodes").and_then(Node::scalar_text);
            let zero = matches!(nodes.as_deref().map(str::trim), Some("0" | "0%"));
            let scheduled = b.get("schedule").is_some_and(|s| !s.is_null());
            let reasons: BTreeSet<String> = b
                .get("reasons")
                .map(|r| r.items().iter().filter_map(Node::scalar_text).collect())
                .unwrap_or_default();
            let all_reasons = b.get("reasons").is_none_or(Node::is_null)
                || ["Underutilized", "Empty", "Drifted"]
                    .iter()
                    .all(|r| reasons.contains(*r));
            if zero && !scheduled && all_reasons {
                out.push(p.hit(
                    "budget-blocks-all",
                    b.key_line(&["nodes"]).unwrap_or(b.line),
                    format!("NodePool {name} has a budget of nodes: \"0\" with no schedule for every reason: Karpenter never consolidates it or replaces drifted nodes; add a schedule and duration, or limit the budget's reasons"),
                ));
            }
        }
    }
    // expiry
    let expire = ["spec", "template", "spec", "expireAfter"];
    if o.node.at(&expire).and_then(Node::as_str) == Some("Never") {
        out.push(p.hit(
            "expire-after-never",
            o.anchor(&expire),
            format!("NodePool {name} sets expireAfter: Never, so its nodes are never rotated: set a duration such as 720h"),
        ));
    }
    // instance types (AWS only: the catalog is EC2's)
    if let (Provider::Aws, Some(reqs)) = (p.provider, &p.reqs) {
        let raw: Vec<Requirement> = p.raw.iter().map(|(r, _)| r.clone()).collect();
        let space = Space::of(reqs, &raw);
        if !space.is_empty() {
            out.extend(instance_rules(p, &space));
        }
    }
    out
}

fn instance_rules(p: &Pool, space: &Space) -> Vec<Hit> {
    let mut out = Vec::new();
    let name = p.name();
    let ct_line = p
        .req_line(CAPACITY_TYPE)
        .unwrap_or_else(|| p.requirements_line());
    // A pool without a capacity-type requirement admits spot too, and Karpenter on AWS
    // launches spot before on-demand: say so, as the user may believe it on-demand only.
    let allows_spot = if p.req_line(CAPACITY_TYPE).is_some() {
        "allows spot"
    } else {
        "has no karpenter.sh/capacity-type requirement, so it allows spot (Karpenter launches spot before on-demand)"
    };
    if p.spot {
        let families = space.families();
        if !space.uncertain && families.len() < 3 {
            out.push(p.hit(
                "spot-too-few-families",
                ct_line,
                format!(
                    "NodePool {name} {allows_spot} but only {} instance famil{} ({}): allow at least 3 families so Karpenter can diversify spot capacity, or set capacity-type In [on-demand]",
                    families.len(),
                    if families.len() == 1 { "y" } else { "ies" },
                    list(&families, 5)
                ),
            ));
        }
        if let Some(n) = space.type_count().filter(|n| *n < 20) {
            out.push(p.hit(
                "spot-too-few-instance-types",
                ct_line,
                format!("NodePool {name} {allows_spot} but its requirements leave about {n} instance types (kelp's offline estimate): allow 20 or more (more sizes, families or categories), or set capacity-type In [on-demand]"),
            ));
        }
        if p.raw.iter().all(|(r, _)| r.min_values.is_none()) {
            out.push(p.hit(
                "missing-min-values",
                p.requirements_line(),
                format!("NodePool {name} {allows_spot} without minValues: add minValues (e.g. instance-family Exists, minValues: 5) so Karpenter keeps a floor of instance flexibility"),
            ));
        }
    }
    // Point at a requirement that names the offending families, else at `requirements`.
    let naming = |families: &BTreeSet<String>, categories: &[&str]| {
        p.raw
            .iter()
            .find(|(r, _)| {
                r.operator == "In"
                    && r.values.iter().any(|v| {
                        let fam = v.split('.').next().unwrap_or(v);
                        families.contains(fam)
                            || (r.key == catalog::CATEGORY && categories.contains(&v.as_str()))
                    })
            })
            .map(|(_, l)| *l)
            .unwrap_or_else(|| p.requirements_line())
    };
    let extra_families: Vec<String> = space
        .extra_families
        .iter()
        .cloned()
        .chain(
            space
                .extra_types
                .iter()
                .map(|t| t.split('.').next().unwrap_or(t).to_string()),
        )
        .collect();
    let burstable: BTreeSet<String> = space
        .types
        .iter()
        .filter(|t| t.category == "t")
        .map(|t| t.family.to_string())
        .chain(
            extra_families
                .iter()
                .filter(|f| catalog::split_family(f).is_some_and(|(c, _, _)| c == "t"))
                .cloned(),
        )
        .collect();
    if !burstable.is_empty() {
        out.push(p.hit(
            "burstable-instances-allowed",
            naming(&burstable, &["t"]),
            format!(
                "NodePool {name} allows burstable instance types ({}): exclude them, e.g. instance-category NotIn [t]",
                list(&burstable, 4)
            ),
        ));
    }
    let old_families: BTreeSet<String> = space
        .types
        .iter()
        .map(|t| t.family.to_string())
        .chain(extra_families.iter().cloned())
        .filter(|f| catalog::is_old(f))
        .collect();
    if !old_families.is_empty() {
        out.push(p.hit(
            "old-generation-allowed",
            naming(&old_families, &[]),
            format!(
                "NodePool {name} allows old-generation instance types ({}): exclude them, e.g. instance-generation Gt 4 (or instance-family NotIn the ones listed)",
                list(&old_families, 5)
            ),
        ));
    }
    out
}
