//! The checks behind each lint rule. Per-object rules read one NodePool or EC2NodeClass;
//! cross-file rules (weight ties, spot fallback, missing node classes, startup-taint
//! removers, do-not-disrupt pods) see every object of every input together. Requirements,
//! taints and pod admission use the same code as `kelp why pod`
//! ([`crate::karpenter::requirements`], [`crate::karpenter::taints`],
//! [`crate::analysis::provisioning::pod_terms`]).
//!
//! This module owns the objects ([`Obj`]), the hits ([`Hit`]), which objects are linted,
//! the deprecated-API rule (NodeOverlay is current at v1alpha1) and the order every rule runs in ([`run`]). The rules live by
//! what they read: `pool` (a NodePool read once for every rule), `nodepool` (one pool's
//! own rules), `ec2nodeclass` (one EC2NodeClass's rules) and `cross` (rules that see
//! every object together).

mod cross;
mod ec2nodeclass;
mod nodepool;
mod pool;

use std::collections::BTreeSet;

use super::yaml::Node;
use crate::karpenter::labels::{AWS_GROUP, GROUP, KWOK_GROUP};
use crate::karpenter::version::Release;
use cross::{do_not_disrupt, nodeclass_ref, spot_fallback, startup_taints, weight_ties};
use ec2nodeclass::ec2nodeclass;
use nodepool::nodepool;
use pool::Pool;

/// One object of an input file.
pub struct Obj<'a> {
    pub file: usize,
    pub node: &'a Node,
    pub api_version: &'a str,
    pub kind: &'a str,
    pub name: String,
    pub namespace: Option<String>,
}

impl Obj<'_> {
    pub fn new(file: usize, node: &Node) -> Option<Obj<'_>> {
        let kind = node.get("kind")?.as_str()?;
        let api_version = node.get("apiVersion").and_then(Node::as_str).unwrap_or("");
        let meta = |k| node.at(&["metadata", k]).and_then(Node::scalar_text);
        Some(Obj {
            file,
            node,
            api_version,
            kind,
            name: meta("name").unwrap_or_else(|| "<unnamed>".into()),
            namespace: meta("namespace"),
        })
    }

    pub fn group(&self) -> &str {
        self.api_version
            .rsplit_once('/')
            .map(|(g, _)| g)
            .unwrap_or("")
    }

    fn version(&self) -> &str {
        self.api_version
            .rsplit_once('/')
            .map(|(_, v)| v)
            .unwrap_or(self.api_version)
    }

    /// The line of the deepest existing key of `path`, else the `kind` line.
    fn anchor(&self, path: &[&str]) -> usize {
        match path.first() {
            Some(first) if self.node.entry(first).is_some() => self.node.anchor(path),
            _ => self.kind_line(),
        }
    }

    fn kind_line(&self) -> usize {
        self.node.key_line(&["kind"]).unwrap_or(self.node.line)
    }

    fn display(&self) -> String {
        match &self.namespace {
            Some(ns) => format!("{} {ns}/{}", self.kind, self.name),
            None => format!("{} {}", self.kind, self.name),
        }
    }
}

/// One rule violation before severities, suppressions and configuration apply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hit {
    pub rule: &'static str,
    pub file: usize,
    pub line: usize,
    pub message: String,
}

/// Whether kelp lints this object at all: Karpenter's kinds, and workloads with pod
/// templates (for the do-not-disrupt and startup-taint rules).
pub fn is_relevant(o: &Obj) -> bool {
    matches!(o.group(), GROUP | AWS_GROUP | KWOK_GROUP) || pod_template(o.kind, o.node).is_some()
}

/// The node holding `metadata` and `spec` of the pods a workload runs (the object itself
/// for a Pod).
pub fn pod_template<'a>(kind: &str, node: &'a Node) -> Option<&'a Node> {
    match kind {
        "Pod" => Some(node),
        "Deployment" | "StatefulSet" | "DaemonSet" | "ReplicaSet" | "Job" => {
            node.at(&["spec", "template"])
        }
        "CronJob" => node.at(&["spec", "jobTemplate", "spec", "template"]),
        _ => None,
    }
}

fn list(names: &BTreeSet<String>, max: usize) -> String {
    let shown: Vec<&str> = names.iter().take(max).map(String::as_str).collect();
    let more = names.len().saturating_sub(max);
    if more > 0 {
        format!("{} and {more} more", shown.join(", "))
    } else {
        shown.join(", ")
    }
}

/// Run every rule over every object.
pub fn run(objects: &[Obj], target: &Release) -> Vec<Hit> {
    let mut out = Vec::new();
    let mut pools = Vec::new();
    for o in objects {
        if let Some(h) = deprecated(o) {
            out.push(h);
            continue;
        }
        match (o.group(), o.kind) {
            (GROUP, "NodePool") => pools.push(Pool::read(o)),
            (AWS_GROUP, "EC2NodeClass") => out.extend(ec2nodeclass(o)),
            _ => {}
        }
    }
    let workloads: Vec<(&Obj, &Node)> = objects
        .iter()
        .filter_map(|o| pod_template(o.kind, o.node).map(|t| (o, t)))
        .collect();
    for p in &pools {
        out.extend(nodepool(p, target));
        out.extend(nodeclass_ref(p, objects));
        out.extend(startup_taints(p, &workloads));
    }
    out.extend(weight_ties(&pools));
    out.extend(spot_fallback(&pools));
    out.extend(do_not_disrupt(&pools, &workloads));
    out
}

fn deprecated(o: &Obj) -> Option<Hit> {
    let karpenter = matches!(o.group(), GROUP | AWS_GROUP);
    // NodeOverlay is served only as karpenter.sh/v1alpha1 (v1.14's CRD): current, not old.
    let current_alpha = o.group() == GROUP && o.kind == "NodeOverlay" && o.version() == "v1alpha1";
    let old_version = !current_alpha && matches!(o.version(), "v1beta1" | "v1alpha5" | "v1alpha1");
    let old_kind = matches!(o.kind, "Provisioner" | "AWSNodeTemplate" | "Machine");
    // Any other version of it (karpenter.sh/v1 included) has never been served.
    let unserved_overlay = o.group() == GROUP && o.kind == "NodeOverlay" && !current_alpha;
    if !karpenter || !(old_version || old_kind || unserved_overlay) {
        return None;
    }
    if unserved_overlay {
        return Some(Hit {
            rule: "deprecated-api-version",
            file: o.file,
            line: o.node.key_line(&["apiVersion"]).unwrap_or(o.node.line),
            message: format!(
                "{} uses {} NodeOverlay, which Karpenter does not serve (the API server rejects it): use karpenter.sh/v1alpha1, the only version NodeOverlay is served as",
                o.display(),
                o.api_version
            ),
        });
    }
    let to = match o.kind {
        "Provisioner" => "a karpenter.sh/v1 NodePool",
        "AWSNodeTemplate" => "a karpenter.k8s.aws/v1 EC2NodeClass",
        "Machine" => "nothing: NodeClaims (karpenter.sh/v1) are created by Karpenter",
        "EC2NodeClass" => "karpenter.k8s.aws/v1",
        "NodeOverlay" => "karpenter.sh/v1alpha1, the only version NodeOverlay is served as",
        _ => "karpenter.sh/v1",
    };
    Some(Hit {
        rule: "deprecated-api-version",
        file: o.file,
        line: o.node.key_line(&["apiVersion"]).unwrap_or(o.node.line),
        message: format!(
            "{} uses {} {}, which Karpenter v1.1+ no longer serves: migrate it to {to}",
            o.display(),
            o.api_version,
            o.kind
        ),
    })
}

#[cfg(test)]
mod tests;
