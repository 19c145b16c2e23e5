//! Rules that see every object of every input together: a NodePool's node class is
//! among the manifests, startup taints have a workload that removes them (one that
//! tolerates the taint's key, or every key with a keyless `operator: Exists`), pools of equal
//! weight do not overlap, spot pools have an on-demand fallback, and pods annotated
//! `do-not-disrupt: "true"` cannot land on a pool without a terminationGracePeriod.

use std::collections::BTreeSet;

use super::super::yaml::Node;
use super::pool::Pool;
use super::{list, Hit, Obj};
use crate::analysis::provisioning::pod_terms;
use crate::karpenter::labels::{CAPACITY_TYPE, DO_NOT_DISRUPT};
use crate::karpenter::requirements::{compatible, Incompatibility, Provider, Requirements};
use crate::karpenter::taints;
use crate::model::PodSpec;

/// Two requirement sets share a node shape: every key both define has a common value.
fn overlap(a: &Requirements, b: &Requirements) -> bool {
    match compatible(a, b) {
        Ok(()) => true,
        Err(errs) => errs
            .iter()
            .all(|e| matches!(e, Incompatibility::UndefinedLabel { .. })),
    }
}

pub(super) fn nodeclass_ref(p: &Pool, objects: &[Obj]) -> Vec<Hit> {
    let o = p.obj;
    let name = p.name();
    let path = ["spec", "template", "spec", "nodeClassRef"];
    let Some(r) = o.node.at(&path) else {
        return vec![p.hit(
            "nodeclassref-incomplete",
            o.anchor(&path),
            format!("NodePool {name} has no spec.template.spec.nodeClassRef: set group, kind and name (e.g. karpenter.k8s.aws, EC2NodeClass, default)"),
        )];
    };
    let field = |k| {
        r.get(k)
            .and_then(Node::scalar_text)
            .filter(|s| !s.is_empty())
    };
    let missing: Vec<&str> = ["group", "kind", "name"]
        .into_iter()
        .filter(|k| field(k).is_none())
        .collect();
    if !missing.is_empty() {
        return vec![p.hit(
            "nodeclassref-incomplete",
            o.anchor(&path),
            format!(
                "NodePool {name}'s nodeClassRef lacks {}: karpenter.sh/v1 requires group, kind and name",
                missing.join(", ")
            ),
        )];
    }
    let (group, kind, class) = (
        field("group").unwrap_or_default(),
        field("kind").unwrap_or_default(),
        field("name").unwrap_or_default(),
    );
    let same_kind: Vec<&Obj> = objects
        .iter()
        .filter(|c| c.kind == kind && c.group() == group)
        .collect();
    if !same_kind.is_empty() && !same_kind.iter().any(|c| c.name == class) {
        let known: BTreeSet<String> = same_kind.iter().map(|c| c.name.clone()).collect();
        return vec![p.hit(
            "nodeclass-not-found",
            r.key_line(&["name"]).unwrap_or(r.line),
            format!(
                "NodePool {name} references {kind} {class}, which is not among the manifests (found: {}): fix the name or add the {kind}",
                list(&known, 5)
            ),
        )];
    }
    Vec::new()
}

/// Agents known to remove a startup taint, for the message.
fn known_remover(key: &str) -> Option<&'static str> {
    match key {
        "node.cilium.io/agent-not-ready" => Some("the Cilium agent"),
        "ebs.csi.aws.com/agent-not-ready" => Some("the EBS CSI node driver"),
        "efs.csi.aws.com/agent-not-ready" => Some("the EFS CSI node driver"),
        "node.cloudprovider.kubernetes.io/uninitialized" => Some("the cloud controller manager"),
        _ => None,
    }
}

pub(super) fn startup_taints(p: &Pool, workloads: &[(&Obj, &Node)]) -> Vec<Hit> {
    let Some(list) = p.tspec.and_then(|s| s.get("startupTaints")) else {
        return Vec::new();
    };
    let tolerations: Vec<&Node> = workloads
        .iter()
        .filter_map(|(_, t)| t.at(&["spec", "tolerations"]))
        .flat_map(|t| t.items())
        .collect();
    let text = |t: &Node, k| t.get(k).and_then(Node::scalar_text).unwrap_or_default();
    let tolerated_keys: BTreeSet<String> = tolerations
        .iter()
        .map(|t| text(t, "key"))
        .filter(|k| !k.is_empty())
        .collect();
    // An empty key with operator Exists tolerates every taint (of its effect, if it names one).
    let wildcard_effects: Vec<String> = tolerations
        .iter()
        .filter(|t| text(t, "key").is_empty() && text(t, "operator") == "Exists")
        .map(|t| text(t, "effect"))
        .collect();
    let mut out = Vec::new();
    for t in list.items() {
        let Some(key) = t.get("key").and_then(Node::scalar_text) else {
            continue;
        };
        let effect = text(t, "effect");
        let message = if key.starts_with("karpenter.sh/") || key.starts_with("karpenter.k8s.aws/") {
            format!("NodePool {}'s startupTaint {key} is in Karpenter's own domain and nothing removes it: nodes never initialize; remove it or use a key your agent removes", p.name())
        } else if tolerated_keys.contains(&key)
            || wildcard_effects
                .iter()
                .any(|e| e.is_empty() || *e == effect)
        {
            continue;
        } else {
            let who = known_remover(&key).unwrap_or("an agent (CNI, CSI driver, device plugin)");
            format!("NodePool {}'s startupTaint {key} must be removed by {who}, and no workload in the manifests tolerates it: make sure that agent runs on these nodes, or nodes never initialize", p.name())
        };
        out.push(p.hit("startup-taint-without-remover", t.line, message));
    }
    out
}

pub(super) fn weight_ties(pools: &[Pool]) -> Vec<Hit> {
    let mut out = Vec::new();
    let live: Vec<&Pool> = pools.iter().filter(|p| !p.is_static).collect();
    for (j, b) in live.iter().enumerate() {
        for a in &live[..j] {
            let (Some(ra), Some(rb)) = (&a.reqs, &b.reqs) else {
                continue;
            };
            if a.weight != b.weight
                || a.name() == b.name()
                || a.hard_taints() != b.hard_taints()
                || !overlap(ra, rb)
            {
                continue;
            }
            let (first, second) = if a.name() > b.name() {
                (a.name(), b.name())
            } else {
                (b.name(), a.name())
            };
            out.push(b.hit(
                "nodepool-weight-tie",
                b.obj.anchor(&["spec", "weight"]),
                format!(
                    "NodePools {} and {} both have weight {} and their requirements overlap: Karpenter tries {first} before {second} only because of their names; give the preferred pool a higher spec.weight or make their requirements disjoint",
                    a.name(),
                    b.name(),
                    a.weight
                ),
            ));
        }
    }
    out
}

pub(super) fn spot_fallback(pools: &[Pool]) -> Vec<Hit> {
    let live: Vec<&Pool> = pools.iter().filter(|p| !p.is_static).collect();
    let mut out = Vec::new();
    for p in &live {
        let Some(reqs) = &p.reqs_no_ct else { continue };
        if !p.spot || p.on_demand {
            continue;
        }
        let mine = p.hard_taints();
        let fallback = live.iter().any(|q| {
            q.on_demand
                && q.reqs_no_ct.as_ref().is_some_and(|r| overlap(reqs, r))
                && q.hard_taints().is_subset(&mine)
        });
        if !fallback {
            out.push(p.hit(
                "spot-without-on-demand-fallback",
                p.req_line(CAPACITY_TYPE).unwrap_or_else(|| p.requirements_line()),
                format!("NodePool {} is spot-only and no NodePool in the manifests can take its pods on-demand: allow on-demand in it (capacity-type In [spot, on-demand]) or add an overlapping on-demand pool", p.name()),
            ));
        }
    }
    out
}

pub(super) fn do_not_disrupt(pools: &[Pool], workloads: &[(&Obj, &Node)]) -> Vec<Hit> {
    let provider = pools
        .iter()
        .map(|p| p.provider)
        .find(|p| *p != Provider::Core)
        .unwrap_or_default();
    let mut out = Vec::new();
    for (o, template) in workloads {
        let path = ["metadata", "annotations", DO_NOT_DISRUPT];
        let Some(value) = template.at(&path).and_then(Node::scalar_text) else {
            continue;
        };
        if value != "true" {
            continue; // a duration (v1.12+) bounds the block by itself
        }
        let Some(spec) = template
            .get("spec")
            .and_then(|s| serde_json::from_value::<PodSpec>(s.to_json()).ok())
        else {
            continue;
        };
        let Ok(terms) = pod_terms(&spec, provider) else {
            continue;
        };
        // Static pools too: their drift (StaticDrift) is held by the pod the same way.
        let exposed: BTreeSet<String> = pools
            .iter()
            .filter(|p| {
                p.tspec
                    .and_then(|s| s.get("terminationGracePeriod"))
                    .is_none_or(Node::is_null)
            })
            .filter(|p| taints::untolerated(&spec.tolerations, &p.taints).is_empty())
            .filter(|p| {
                p.full
                    .as_ref()
                    .is_some_and(|full| terms.iter().any(|t| compatible(t, full).is_ok()))
            })
            .map(|p| p.name().to_string())
            .collect();
        if exposed.is_empty() {
            continue;
        }
        out.push(Hit {
            rule: "do-not-disrupt-without-grace-period",
            file: o.file,
            line: template.anchor(&path),
            message: format!(
                "{}'s pods are karpenter.sh/do-not-disrupt: \"true\" and can run on NodePool{} {}, which set{} no terminationGracePeriod: while one runs, its node is never replaced when drifted, and when it expires its drain waits for the pod for ever; set spec.template.spec.terminationGracePeriod there (it applies to nodes created after), or give the annotation a duration",
                o.display(),
                if exposed.len() == 1 { "" } else { "s" },
                list(&exposed, 5),
                if exposed.len() == 1 { "s" } else { "" },
            ),
        });
    }
    out
}
