//! A NodePool as the lint rules read it, once for all of them: its requirements as
//! written (with their lines) and as Karpenter builds them, weight, taints, provider,
//! and whether it is static or allows spot and on-demand (a pool without a capacity-type
//! requirement allows both: Karpenter has no default).

use std::collections::BTreeSet;

use k8s_openapi::api::core::v1::Taint;

use super::super::yaml::Node;
use super::{Hit, Obj};
use crate::karpenter::labels::{AWS_GROUP, CAPACITY_TYPE, KWOK_GROUP};
use crate::karpenter::requirements::{Provider, Requirement, Requirements};
use crate::model::NodeClassRef;

const TEMPLATE_SPEC: [&str; 3] = ["spec", "template", "spec"];
const REQUIREMENTS: [&str; 4] = ["spec", "template", "spec", "requirements"];

/// A NodePool, read once for every rule.
pub(super) struct Pool<'a> {
    pub(super) obj: &'a Obj<'a>,
    pub(super) tspec: Option<&'a Node>,
    /// Requirements as written, with the line of each item.
    pub(super) raw: Vec<(Requirement, usize)>,
    /// `spec.template.spec.requirements` only (no labels), for overlap.
    pub(super) reqs: Option<Requirements>,
    /// The same without the capacity-type key, for the fallback rule.
    pub(super) reqs_no_ct: Option<Requirements>,
    /// What `kelp why pod` evaluates: requirements, template labels, pool and class labels.
    pub(super) full: Option<Requirements>,
    pub(super) weight: i64,
    pub(super) taints: Vec<Taint>,
    pub(super) provider: Provider,
    pub(super) is_static: bool,
    /// Whether it allows spot (so too when it has no capacity-type requirement).
    pub(super) spot: bool,
    pub(super) on_demand: bool,
}

impl<'a> Pool<'a> {
    pub(super) fn read(obj: &'a Obj<'a>) -> Pool<'a> {
        let tspec = obj.node.at(&TEMPLATE_SPEC);
        let raw = obj
            .node
            .at(&REQUIREMENTS)
            .map(|n| n.items().iter().filter_map(requirement).collect::<Vec<_>>())
            .unwrap_or_default();
        let complete = obj
            .node
            .at(&REQUIREMENTS)
            .is_none_or(|n| n.items().len() == raw.len());
        let list: Vec<Requirement> = raw.iter().map(|(r, _)| r.clone()).collect();
        let parse = |list: &[Requirement]| {
            complete
                .then(|| Requirements::from_requirements(list).ok())
                .flatten()
        };
        let reqs = parse(&list);
        let no_ct: Vec<Requirement> = list
            .iter()
            .filter(|r| r.key != CAPACITY_TYPE)
            .cloned()
            .collect();
        let reqs_no_ct = parse(&no_ct);
        let class_ref: Option<NodeClassRef> = tspec
            .and_then(|s| s.get("nodeClassRef"))
            .and_then(|n| serde_json::from_value(n.to_json()).ok());
        let class_label = class_ref.as_ref().and_then(NodeClassRef::label);
        let labels = obj
            .node
            .at(&["spec", "template", "metadata", "labels"])
            .and_then(|n| serde_json::from_value(n.to_json()).ok())
            .unwrap_or_default();
        let full = complete
            .then(|| {
                Requirements::for_nodepool(
                    &obj.name,
                    &list,
                    &labels,
                    class_label.as_ref().map(|(k, v)| (k.as_str(), *v)),
                )
                .ok()
            })
            .flatten();
        let provider = match class_ref.as_ref().map(|r| r.group.as_str()) {
            Some(KWOK_GROUP) => Provider::Kwok,
            Some(g) if !g.is_empty() && g != AWS_GROUP => Provider::Core,
            _ => Provider::Aws,
        };
        let taints = tspec
            .and_then(|s| s.get("taints"))
            .and_then(|n| serde_json::from_value(n.to_json()).ok())
            .unwrap_or_default();
        // Karpenter has no default: a pool that says nothing about capacity type admits
        // every one its offerings have (and on AWS launches spot before on-demand).
        // Requirements kelp cannot read are taken as allowing everything (no verdict).
        let allows = |v| reqs.as_ref().is_none_or(|r| r.allows(CAPACITY_TYPE, v));
        Pool {
            obj,
            tspec,
            weight: obj
                .node
                .at(&["spec", "weight"])
                .and_then(Node::as_i64)
                .unwrap_or(0),
            is_static: obj
                .node
                .at(&["spec", "replicas"])
                .is_some_and(|n| !n.is_null()),
            spot: allows("spot"),
            on_demand: allows("on-demand"),
            raw,
            reqs,
            reqs_no_ct,
            full,
            taints,
            provider,
        }
    }

    pub(super) fn hit(&self, rule: &'static str, line: usize, message: String) -> Hit {
        Hit {
            rule,
            file: self.obj.file,
            line,
            message,
        }
    }

    /// The line of the first requirement on `key`.
    pub(super) fn req_line(&self, key: &str) -> Option<usize> {
        self.raw.iter().find(|(r, _)| r.key == key).map(|(_, l)| *l)
    }

    pub(super) fn requirements_line(&self) -> usize {
        self.obj.anchor(&REQUIREMENTS)
    }

    pub(super) fn name(&self) -> &str {
        &self.obj.name
    }

    /// Hard (NoSchedule, NoExecute) taints by key and effect.
    pub(super) fn hard_taints(&self) -> BTreeSet<(String, String)> {
        self.taints
            .iter()
            .filter(|t| t.effect != "PreferNoSchedule")
            .map(|t| (t.key.clone(), t.effect.clone()))
            .collect()
    }
}

/// One `requirements[]` item with its line; `None` when it is not a requirement.
fn requirement(n: &Node) -> Option<(Requirement, usize)> {
    let key = n.get("key")?.scalar_text()?;
    let operator = n.get("operator")?.scalar_text()?;
    let values = n
        .get("values")
        .map(|v| v.items().iter().filter_map(Node::scalar_text).collect())
        .unwrap_or_default();
    let min_values = n.get("minValues").and_then(Node::as_i64);
    Some((
        Requirement {
            key,
            operator,
            values,
            min_values,
        },
        n.line,
    ))
}
