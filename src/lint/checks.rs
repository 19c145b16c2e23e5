//! The checks behind each lint rule. Per-object rules read one NodePool or EC2NodeClass;
//! cross-file rules (weight ties, spot fallback, missing node classes, startup-taint
//! removers, do-not-disrupt pods) see every object of every input together. Requirements,
//! taints and pod admission use the same code as `kelp why pod`
//! ([`crate::karpenter::requirements`], [`crate::karpenter::taints`],
//! [`crate::analysis::provisioning::pod_terms`]).

use std::collections::BTreeSet;

use chrono::Duration;
use k8s_openapi::api::core::v1::Taint;

use super::catalog::{self, Space};
use super::yaml::Node;
use crate::analysis::provisioning::pod_terms;
use crate::karpenter::duration::{parse_nillable, NillableDuration};
use crate::karpenter::labels::{AWS_GROUP, CAPACITY_TYPE, DO_NOT_DISRUPT, GROUP, KWOK_GROUP};
use crate::karpenter::requirements::{
    compatible, Incompatibility, Provider, Requirement, Requirements,
};
use crate::karpenter::taints;
use crate::model::{NodeClassRef, PodSpec};

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

const TEMPLATE_SPEC: [&str; 3] = ["spec", "template", "spec"];
const REQUIREMENTS: [&str; 4] = ["spec", "template", "spec", "requirements"];

/// A NodePool, read once for every rule.
struct Pool<'a> {
    obj: &'a Obj<'a>,
    tspec: Option<&'a Node>,
    /// Requirements as written, with the line of each item.
    raw: Vec<(Requirement, usize)>,
    /// `spec.template.spec.requirements` only (no labels), for overlap.
    reqs: Option<Requirements>,
    /// The same without the capacity-type key, for the fallback rule.
    reqs_no_ct: Option<Requirements>,
    /// What `kelp why pod` evaluates: requirements, template labels, pool and class labels.
    full: Option<Requirements>,
    weight: i64,
    taints: Vec<Taint>,
    provider: Provider,
    is_static: bool,
    spot: bool,
    on_demand: bool,
}

impl<'a> Pool<'a> {
    fn read(obj: &'a Obj<'a>) -> Pool<'a> {
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
        let ct_defined = list.iter().any(|r| r.key == CAPACITY_TYPE);
        let allows = |v| match &reqs {
            Some(r) if ct_defined => r.allows(CAPACITY_TYPE, v),
            // Karpenter launches on-demand when a pool says nothing about capacity type.
            _ => v == "on-demand",
        };
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

    fn hit(&self, rule: &'static str, line: usize, message: String) -> Hit {
        Hit {
            rule,
            file: self.obj.file,
            line,
            message,
        }
    }

    /// The line of the first requirement on `key`.
    fn req_line(&self, key: &str) -> Option<usize> {
        self.raw.iter().find(|(r, _)| r.key == key).map(|(_, l)| *l)
    }

    fn requirements_line(&self) -> usize {
        self.obj.anchor(&REQUIREMENTS)
    }

    fn name(&self) -> &str {
        &self.obj.name
    }

    /// Hard (NoSchedule, NoExecute) taints by key and effect.
    fn hard_taints(&self) -> BTreeSet<(String, String)> {
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

/// Two requirement sets share a node shape: every key both define has a common value.
fn overlap(a: &Requirements, b: &Requirements) -> bool {
    match compatible(a, b) {
        Ok(()) => true,
        Err(errs) => errs
            .iter()
            .all(|e| matches!(e, Incompatibility::UndefinedLabel { .. })),
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
pub fn run(objects: &[Obj]) -> Vec<Hit> {
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
        out.extend(nodepool(p));
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
    let old_version = matches!(o.version(), "v1beta1" | "v1alpha5" | "v1alpha1");
    let old_kind = matches!(o.kind, "Provisioner" | "AWSNodeTemplate" | "Machine");
    if !karpenter || !(old_version || old_kind) {
        return None;
    }
    let to = match o.kind {
        "Provisioner" => "a karpenter.sh/v1 NodePool",
        "AWSNodeTemplate" => "a karpenter.k8s.aws/v1 EC2NodeClass",
        "Machine" => "nothing: NodeClaims (karpenter.sh/v1) are created by Karpenter",
        "EC2NodeClass" => "karpenter.k8s.aws/v1",
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

fn nodepool(p: &Pool) -> Vec<Hit> {
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
    let policy = o
        .node
        .at(&["spec", "disruption", "consolidationPolicy"])
        .and_then(Node::as_str)
        .unwrap_or("WhenEmptyOrUnderutilized");
    if !p.is_static && policy == "WhenEmptyOrUnderutilized" {
        let path = ["spec", "disruption", "consolidateAfter"];
        let short = match o.node.at(&path).and_then(Node::scalar_text) {
            None => Some((
                "is not set (Karpenter defaults it to 0s)".to_string(),
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
                format!("NodePool {name} consolidates WhenEmptyOrUnderutilized and consolidateAfter {what}: set spec.disruption.consolidateAfter to at least 5m to avoid node churn"),
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
    if p.spot {
        let families = space.families();
        if !space.uncertain && families.len() < 3 {
            out.push(p.hit(
                "spot-too-few-families",
                ct_line,
                format!(
                    "NodePool {name} allows spot but only {} instance famil{} ({}): allow at least 3 families so Karpenter can diversify spot capacity",
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
                format!("NodePool {name} allows spot but its requirements leave about {n} instance types (kelp's offline estimate): allow 20 or more (more sizes, families or categories)"),
            ));
        }
        if p.raw.iter().all(|(r, _)| r.min_values.is_none()) {
            out.push(p.hit(
                "missing-min-values",
                p.requirements_line(),
                format!("NodePool {name} allows spot without minValues: add minValues (e.g. instance-family Exists, minValues: 5) so Karpenter keeps a floor of instance flexibility"),
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

fn nodeclass_ref(p: &Pool, objects: &[Obj]) -> Vec<Hit> {
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

fn startup_taints(p: &Pool, workloads: &[(&Obj, &Node)]) -> Vec<Hit> {
    let Some(list) = p.tspec.and_then(|s| s.get("startupTaints")) else {
        return Vec::new();
    };
    let tolerated_keys: BTreeSet<String> = workloads
        .iter()
        .filter_map(|(_, t)| t.at(&["spec", "tolerations"]))
        .flat_map(|t| t.items())
        .filter_map(|t| t.get("key").and_then(Node::scalar_text))
        .collect();
    let mut out = Vec::new();
    for t in list.items() {
        let Some(key) = t.get("key").and_then(Node::scalar_text) else {
            continue;
        };
        let message = if key.starts_with("karpenter.sh/") || key.starts_with("karpenter.k8s.aws/") {
            format!("NodePool {}'s startupTaint {key} is in Karpenter's own domain and nothing removes it: nodes never initialize; remove it or use a key your agent removes", p.name())
        } else if tolerated_keys.contains(&key) {
            continue;
        } else {
            let who = known_remover(&key).unwrap_or("an agent (CNI, CSI driver, device plugin)");
            format!("NodePool {}'s startupTaint {key} must be removed by {who}, and no workload in the manifests tolerates it: make sure that agent runs on these nodes, or nodes never initialize", p.name())
        };
        out.push(p.hit("startup-taint-without-remover", t.line, message));
    }
    out
}

fn weight_ties(pools: &[Pool]) -> Vec<Hit> {
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

fn spot_fallback(pools: &[Pool]) -> Vec<Hit> {
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

fn do_not_disrupt(pools: &[Pool], workloads: &[(&Obj, &Node)]) -> Vec<Hit> {
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
        let exposed: BTreeSet<String> = pools
            .iter()
            .filter(|p| !p.is_static)
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
                "{}'s pods are karpenter.sh/do-not-disrupt: \"true\" and can run on NodePool{} {}, which set{} no terminationGracePeriod: their nodes can never be drifted or consolidated; set spec.template.spec.terminationGracePeriod there, or give the annotation a duration",
                o.display(),
                if exposed.len() == 1 { "" } else { "s" },
                list(&exposed, 5),
                if exposed.len() == 1 { "s" } else { "" },
            ),
        });
    }
    out
}

fn ec2nodeclass(o: &Obj) -> Vec<Hit> {
    let mut out = Vec::new();
    let hit = |rule, line, message| Hit {
        rule,
        file: o.file,
        line,
        message,
    };
    let name = &o.name;
    if let Some(terms) = o.node.at(&["spec", "amiSelectorTerms"]) {
        for t in terms.items() {
            if let Some(alias) = t.get("alias").and_then(Node::scalar_text) {
                if alias.ends_with("@latest") {
                    let family = alias.trim_end_matches("@latest");
                    out.push(hit(
                        "ami-alias-latest",
                        t.key_line(&["alias"]).unwrap_or(t.line),
                        format!("EC2NodeClass {name} selects {alias}: every AMI release drifts and replaces all its nodes; pin a version (e.g. {family}@v20250715) and roll it forward deliberately"),
                    ));
                }
            }
        }
    }
    if let Some(tokens) = o
        .node
        .at(&["spec", "metadataOptions", "httpTokens"])
        .and_then(Node::scalar_text)
    {
        if tokens != "required" {
            out.push(hit(
                "imds-not-locked",
                o.anchor(&["spec", "metadataOptions", "httpTokens"]),
                format!("EC2NodeClass {name} sets httpTokens: {tokens}, which allows IMDSv1: set spec.metadataOptions.httpTokens: required"),
            ));
        }
    }
    if let Some(hops) = o
        .node
        .at(&["spec", "metadataOptions", "httpPutResponseHopLimit"])
        .and_then(Node::as_i64)
    {
        if hops > 1 {
            out.push(hit(
                "imds-not-locked",
                o.anchor(&["spec", "metadataOptions", "httpPutResponseHopLimit"]),
                format!("EC2NodeClass {name} sets httpPutResponseHopLimit: {hops}, so pods can reach the node's instance metadata and IAM role: set it to 1"),
            ));
        }
    }
    if let Some(mappings) = o.node.at(&["spec", "blockDeviceMappings"]) {
        for m in mappings.items() {
            let Some(ebs) = m.entry("ebs") else { continue };
            let device = m
                .get("deviceName")
                .and_then(Node::scalar_text)
                .unwrap_or_else(|| "a block device".into());
            let encrypted = ebs.value.get("encrypted");
            let ok = encrypted
                .and_then(Node::scalar_text)
                .is_some_and(|v| v == "true");
            if !ok {
                let (line, what) = match encrypted {
                    Some(_) => (
                        ebs.value.key_line(&["encrypted"]).unwrap_or(ebs.line),
                        "sets encrypted: false",
                    ),
                    None => (ebs.line, "does not set encrypted"),
                };
                out.push(hit(
                    "ebs-not-encrypted",
                    line,
                    format!(
                        "EC2NodeClass {name}'s EBS volume {device} {what}: set ebs.encrypted: true"
                    ),
                ));
            }
        }
    }
    out
}
