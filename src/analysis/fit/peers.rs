//! Who else is on a node: what pod (anti-)affinity and topology spread count. A pod's own
//! required anti-affinity and `DoNotSchedule` spread are counted once per pod (matching
//! pods per domain, the moving node left out); the anti-affinity of pods already running
//! is indexed by the domain it guards; spread domains are shared by the replicas that ask
//! alike; matching pods are counted once per (namespaces, selector) and pass. Also what
//! Karpenter's simulation holds a moving pod to first: its preferences and the nodes'
//! PreferNoSchedule taints.

use std::collections::{BTreeMap, HashMap};
use std::rc::Rc;

use k8s_openapi::api::core::v1::{PodAffinityTerm, TopologySpreadConstraint};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;

use super::{holds_room, Placed, Room};
use crate::analysis::selector;
use crate::karpenter::taints;
use crate::model::*;

/// A pod's own anti-affinity terms and spread constraints, counted once per pod.
pub(super) struct PodTerms<'p> {
    /// Each term, its namespaces, and the matching pods per domain.
    anti: Vec<(
        &'p PodAffinityTerm,
        Option<Vec<String>>,
        HashMap<String, u32>,
    )>,
    spread: Vec<Spread<'p>>,
}

impl PodTerms<'_> {
    /// The pod has no required anti-affinity or `DoNotSchedule` spread of its own.
    pub(super) fn is_empty(&self) -> bool {
        self.anti.is_empty() && self.spread.is_empty()
    }
}

/// Domain -> (matching pods, nodes in it).
pub(super) type SpreadDomains = HashMap<String, (u32, u32)>;

/// One `DoNotSchedule` constraint, counted: matching pods per domain the pod may use.
pub(super) struct Spread<'p> {
    key: &'p str,
    max_skew: i64,
    /// Fewer domains than minDomains: the minimum counts as 0.
    below_min_domains: bool,
    min: u32,
    sel: LabelSelector,
    ns: Option<Vec<String>>,
    domains: HashMap<String, u32>,
}

/// A running pod's required anti-affinity term.
pub(super) struct Guard<'c> {
    pub(super) node: &'c Node,
    pub(super) pod: &'c Pod,
    pub(super) term: &'c PodAffinityTerm,
}

impl<'c> Room<'c> {
    /// What a pod's own required anti-affinity and `DoNotSchedule` spread count, once per
    /// pod (not once per node it is tried on): matching pods per domain, the moving node's
    /// own left out.
    /// With `preferred`, the pod's preferred anti-affinity terms and its `ScheduleAnyway`
    /// spread count as required (as Karpenter's simulation holds a pod to them until
    /// nothing else places it).
    pub(super) fn pod_terms<'p>(&self, from: &Node, pod: &'p Pod, preferred: bool) -> PodTerms<'p> {
        let by_domain = |counts: &HashMap<&'c str, u32>, key: &str| {
            let mut out: HashMap<String, u32> = HashMap::new();
            for (name, k) in counts {
                if *name == from.metadata.name {
                    continue;
                }
                if let Some(v) = self
                    .c
                    .nodes
                    .get(*name)
                    .and_then(|n| n.metadata.labels.get(key))
                {
                    *out.entry(v.clone()).or_default() += k;
                }
            }
            out
        };
        let preferred_terms = if preferred {
            pod.spec.preferred_anti_affinity()
        } else {
            Vec::new()
        };
        let anti = anti_affinity_terms(pod)
            .chain(preferred_terms)
            .map(|term| {
                let namespaces = term_namespaces(term, pod);
                let counts = self.matching(namespaces.as_deref(), term.label_selector.as_ref());
                let domains = by_domain(&counts, &term.topology_key);
                (term, namespaces, domains)
            })
            .collect();
        let spread = pod
            .spec
            .topology_spread_constraints
            .iter()
            .filter(|t| {
                t.when_unsatisfiable == "DoNotSchedule"
                    || (preferred && t.when_unsatisfiable == "ScheduleAnyway")
            })
            .map(|tsc| {
                // matchLabelKeys narrows the selector to the pod's own values (a revision).
                let mut sel = tsc.label_selector.clone().unwrap_or_default();
                for k in tsc.match_label_keys.iter().flatten() {
                    if let Some(v) = pod.metadata.labels.get(k) {
                        sel.match_labels
                            .get_or_insert_with(Default::default)
                            .insert(k.clone(), v.clone());
                    }
                }
                let ns = pod
                    .metadata
                    .namespace
                    .as_deref()
                    .map(|n| vec![n.to_string()]);
                let counts = self.matching(ns.as_deref(), Some(&sel));
                let honor = tsc.node_affinity_policy.as_deref() != Some("Ignore");
                let all = self.spread_domains(pod, tsc, &sel, ns.as_deref(), honor, &counts);
                // The moving node's own pods and, if it is the last of its domain, the
                // domain itself, left out.
                let mut domains: HashMap<String, u32> =
                    all.iter().map(|(d, (n, _))| (d.clone(), *n)).collect();
                let from_domain = from.metadata.labels.get(&tsc.topology_key);
                let from_counted = self.targets.iter().any(|t| std::ptr::eq(t.node, from))
                    && (!honor || selector::node_fits_pod(pod, &from.metadata.labels));
                if let (Some(d), true) = (from_domain, from_counted) {
                    let mine = counts
                        .get(from.metadata.name.as_str())
                        .copied()
                        .unwrap_or(0);
                    match all.get(d) {
                        Some((_, 1)) => {
                            domains.remove(d);
                        }
                        Some(_) => {
                            if let Some(n) = domains.get_mut(d) {
                                *n = n.saturating_sub(mine);
                            }
                        }
                        None => {}
                    }
                }
                let below_min_domains = tsc
                    .min_domains
                    .is_some_and(|m| (domains.len() as i64) < i64::from(m));
                let min = if below_min_domains {
                    Some(0)
                } else {
                    domains.values().copied().min()
                };
                Spread {
                    key: &tsc.topology_key,
                    max_skew: i64::from(tsc.max_skew),
                    below_min_domains,
                    min: min.unwrap_or(0),
                    sel,
                    ns,
                    domains,
                }
            })
            .collect();
        PodTerms { anti, spread }
    }

    /// A spread constraint's domains over the nodes the pod may use, once per distinct
    /// (selector, key, node selection): the replicas of a workload ask alike.
    fn spread_domains(
        &self,
        pod: &Pod,
        tsc: &TopologySpreadConstraint,
        sel: &LabelSelector,
        ns: Option<&[String]>,
        honor: bool,
        counts: &HashMap<&'c str, u32>,
    ) -> Rc<SpreadDomains> {
        let affinity = pod
            .spec
            .affinity
            .as_deref()
            .map_or(0, |a| a as *const _ as usize);
        let selector: &BTreeMap<String, String> = &pod.spec.node_selector;
        let key = format!(
            "{ns:?}|{}|{}|{honor}|{affinity}|{}",
            serde_json::to_string(sel).unwrap_or_default(),
            tsc.topology_key,
            selector as *const _ as usize,
        );
        if let Some(hit) = self.spreads.borrow().get(&key) {
            return hit.clone();
        }
        let mut domains: SpreadDomains = HashMap::new();
        for t in &self.targets {
            if honor && !selector::node_fits_pod(pod, &t.node.metadata.labels) {
                continue;
            }
            if let Some(d) = t.node.metadata.labels.get(&tsc.topology_key) {
                let e = domains.entry(d.clone()).or_default();
                e.0 += counts
                    .get(t.node.metadata.name.as_str())
                    .copied()
                    .unwrap_or(0);
                e.1 += 1;
            }
        }
        let domains = Rc::new(domains);
        self.spreads.borrow_mut().insert(key, domains.clone());
        domains
    }

    /// Required anti-affinity: the pod's own (a matching pod in the node's domain), and the
    /// pods' already there or placed (one whose term matches the pod, in its domain). None
    /// when only a term whose namespaces kelp cannot tell ([`Scope::Unknown`]) might.
    pub(super) fn anti_affinity_blocks(
        &self,
        from: &Node,
        node: &Node,
        pod: &Pod,
        terms: &PodTerms,
        placed: &[Placed],
    ) -> Option<bool> {
        let same_domain = |other: &Node, key: &str| {
            node.metadata.labels.get(key).is_some()
                && node.metadata.labels.get(key) == other.metadata.labels.get(key)
        };
        let guards = self
            .guard_keys
            .iter()
            .filter_map(|key| {
                let value = node.metadata.labels.get(*key)?;
                self.guards.get(&(*key, value.as_str()))
            })
            .flatten()
            .filter(|g| !std::ptr::eq(g.node, from))
            .map(|g| (g.node, g.pod, g.term))
            .chain(placed.iter().flat_map(|p| {
                anti_affinity_terms(p.pod).map(move |t| (self.targets[p.target].node, p.pod, t))
            }));
        let mut unsure = false;
        for (at, guard, term) in guards {
            if same_domain(at, &term.topology_key)
                && selector::matches(term.label_selector.as_ref(), &pod.metadata.labels)
            {
                match term_covers(term, guard, pod) {
                    Some(true) => return Some(true),
                    Some(false) => {}
                    None => unsure = true,
                }
            }
        }
        for (term, namespaces, domains) in &terms.anti {
            let Some(domain) = node.metadata.labels.get(&term.topology_key) else {
                continue;
            };
            let here = domains.get(domain).copied().unwrap_or(0);
            let moved = placed.iter().any(|p| {
                self.targets[p.target]
                    .node
                    .metadata
                    .labels
                    .get(&term.topology_key)
                    == Some(domain)
                    && in_namespaces(p.pod, namespaces.as_deref())
                    && selector::matches(term.label_selector.as_ref(), &p.pod.metadata.labels)
            });
            if here > 0 || moved {
                return Some(true);
            }
        }
        (!unsure).then_some(false)
    }

    /// Topology spread with `DoNotSchedule`: placing the pod on the node would exceed the
    /// skew over the domains of the nodes the pod may use.
    pub(super) fn spread_blocks(&self, node: &Node, terms: &PodTerms, placed: &[Placed]) -> bool {
        for s in &terms.spread {
            let Some(domain) = node.metadata.labels.get(s.key) else {
                return true;
            };
            // The pods this move already placed, per domain they count in.
            let mut extra: HashMap<&str, u32> = HashMap::new();
            for p in placed {
                let n = self.targets[p.target].node;
                if in_namespaces(p.pod, s.ns.as_deref())
                    && selector::matches(Some(&s.sel), &p.pod.metadata.labels)
                {
                    if let Some(d) = n.metadata.labels.get(s.key) {
                        if s.domains.contains_key(d) {
                            *extra.entry(d.as_str()).or_default() += 1;
                        }
                    }
                }
            }
            let count = |d: &str| {
                s.domains.get(d).copied().unwrap_or(0) + extra.get(d).copied().unwrap_or(0)
            };
            let here = count(domain);
            // Placed pods only raise counts: the minimum moves only when every domain at
            // it took one (rare; then count again).
            let min = if s.below_min_domains {
                0
            } else if s
                .domains
                .iter()
                .filter(|(_, n)| **n == s.min)
                .all(|(d, _)| extra.contains_key(d.as_str()))
            {
                s.domains.keys().map(|d| count(d)).min().unwrap_or(0)
            } else {
                s.min
            };
            if i64::from(here) + 1 - i64::from(min) > s.max_skew {
                return true;
            }
        }
        false
    }

    /// How many running pods match a selector in some namespaces (None: all), per node.
    fn matching(
        &self,
        namespaces: Option<&[String]>,
        sel: Option<&LabelSelector>,
    ) -> Rc<HashMap<&'c str, u32>> {
        let key = format!(
            "{:?}|{}",
            namespaces,
            serde_json::to_string(&sel).unwrap_or_default()
        );
        if let Some(hit) = self.matching.borrow().get(&key) {
            return hit.clone();
        }
        let mut counts: HashMap<&'c str, u32> = HashMap::new();
        let mut count = |p: &'c Pod| {
            if let Some(node) = p.spec.node_name.as_deref() {
                if holds_room(p)
                    && p.metadata.deletion_timestamp.is_none()
                    && self.c.nodes.contains_key(node)
                    && selector::matches(sel, &p.metadata.labels)
                {
                    *counts.entry(node).or_default() += 1;
                }
            }
        };
        match namespaces {
            // Pods are keyed by (namespace, name): only the namespaces asked for are read.
            Some(list) => {
                for ns in list {
                    let from = (ns.clone(), String::new());
                    for (_, p) in self.c.pods.range(from..).take_while(|((n, _), _)| n == ns) {
                        count(p);
                    }
                }
            }
            None => self.c.pods.values().for_each(count),
        }
        let counts = Rc::new(counts);
        self.matching.borrow_mut().insert(key, counts.clone());
        counts
    }
}

/// The preferences a pod is held to first, as Karpenter's simulation holds it (v1.14.1 and
/// v1.15 `Preferences`), by name; empty when it has none kelp can hold it to.
pub(super) fn preferences(pod: &Pod) -> Vec<&'static str> {
    let mut out = Vec::new();
    let anti = pod.spec.preferred_anti_affinity();
    if !anti.is_empty() && !anti.into_iter().any(scope_unknown) {
        out.push("preferred pod anti-affinity");
    }
    if !pod.spec.preferred_node_affinity().is_empty() {
        out.push("preferred node affinity");
    }
    if pod
        .spec
        .topology_spread_constraints
        .iter()
        .any(|t| t.when_unsatisfiable == "ScheduleAnyway")
    {
        out.push("ScheduleAnyway topology spread");
    }
    out
}

/// What keeps a pod that fits only by breaking a preference off the nodes with room, and
/// where it would go without: its own preferences ([`preferences`]) and `node`'s
/// PreferNoSchedule taints it does not tolerate.
pub(super) fn held_off(prefers: &[&str], pod: &Pod, node: &Node) -> String {
    let mut held = Vec::new();
    if !prefers.is_empty() {
        held.push(format!("its {}", prefers.join(" and ")));
    }
    let soft: Vec<String> = taints::soft(&pod.spec.tolerations, &node.spec.taints)
        .map(taints::render)
        .collect();
    if !soft.is_empty() {
        held.push(format!(
            "the PreferNoSchedule taint {} of {} (which it does not tolerate)",
            soft.join(", "),
            node.metadata.name
        ));
    }
    format!(
        "{} keeps it off the nodes with room (it would fit on {} without): Karpenter puts it on a new node before it breaks a preference",
        held.join(" and "),
        node.metadata.name
    )
}

/// PreferNoSchedule taints among the nodes a pod may move to ([`taints::soft`]).
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct SoftTaints {
    /// Some node there carries one.
    pub(super) present: bool,
    /// Karpenter's preference relaxation tolerates them at last: some NodePool's template
    /// carries one (v1.15 `NewScheduler`). Otherwise they hold like NoSchedule.
    relaxable: bool,
}

impl SoftTaints {
    pub(super) fn of<'c>(c: &'c Cluster, targets: impl Iterator<Item = &'c Node>) -> Self {
        let present = targets
            .flat_map(|n| n.spec.taints.iter())
            .any(|t| t.effect == "PreferNoSchedule");
        let relaxable = present
            && taints::any_pool_soft(
                c.nodepools
                    .values()
                    .map(|p| p.spec.template.spec.taints.as_slice()),
            );
        SoftTaints { present, relaxable }
    }

    /// Whether a PreferNoSchedule taint keeps a pod out: while its preferences hold
    /// (`preferred`), or always where Karpenter never tolerates them.
    pub(super) fn holds(&self, preferred: bool) -> bool {
        self.present && (preferred || !self.relaxable)
    }
}

/// A pod's required anti-affinity terms.
pub(super) fn anti_affinity_terms(p: &Pod) -> impl Iterator<Item = &PodAffinityTerm> {
    p.spec.required_anti_affinity().iter()
}

/// The namespaces a pod-affinity term looks in, as Karpenter v1.14.1 lists them
/// (`buildNamespaceList`): the owner's own when the term names none and has no namespace
/// selector; else those it names and those its selector picks. kelp keeps no Namespaces, so
/// it reads a selector only where it needs none: an empty selector picks every namespace,
/// and one on `kubernetes.io/metadata.name` alone (the label the API server gives every
/// namespace: its name) picks those names. Any other selector: unknown.
pub(crate) enum Scope {
    Names(Vec<String>),
    All,
    Unknown,
}

impl Scope {
    /// Whether namespace `ns` is among the term's (never, where kelp cannot tell them).
    pub(crate) fn contains(&self, ns: Option<&str>) -> bool {
        match self {
            Scope::Names(list) => list.iter().any(|n| Some(n.as_str()) == ns),
            Scope::All => true,
            Scope::Unknown => false,
        }
    }
}

/// The label every namespace carries, whose value is its name.
const NAMESPACE_NAME: &str = "kubernetes.io/metadata.name";

pub(crate) fn scope(term: &PodAffinityTerm, owner: &Pod) -> Scope {
    let listed = term.namespaces.clone().unwrap_or_default();
    match &term.namespace_selector {
        None if listed.is_empty() => Scope::Names(vec![owner
            .metadata
            .namespace
            .as_deref()
            .unwrap_or_default()
            .to_string()]),
        None => Scope::Names(listed),
        Some(sel) if selects_all(sel) => Scope::All,
        Some(sel) => match names_picked(sel) {
            Some(mut names) => {
                names.extend(listed);
                Scope::Names(names)
            }
            None => Scope::Unknown,
        },
    }
}

/// Whether kelp cannot tell a term's namespaces ([`Scope::Unknown`]), without listing
/// them (a namespace selector is rare; the list is the common case).
pub(crate) fn scope_unknown(term: &PodAffinityTerm) -> bool {
    term.namespace_selector
        .as_ref()
        .is_some_and(|sel| !selects_all(sel) && names_picked(sel).is_none())
}

/// An empty selector: it picks every namespace.
fn selects_all(sel: &LabelSelector) -> bool {
    sel.match_labels.as_ref().is_none_or(|m| m.is_empty())
        && sel.match_expressions.as_ref().is_none_or(|e| e.is_empty())
}

/// The namespace names a selector on `kubernetes.io/metadata.name` alone picks (`In` or a
/// label's value, each requirement narrowing the last); None for any other selector.
fn names_picked(sel: &LabelSelector) -> Option<Vec<String>> {
    let mut picks: Vec<Vec<String>> = Vec::new();
    for (key, value) in sel.match_labels.iter().flatten() {
        (key == NAMESPACE_NAME).then_some(())?;
        picks.push(vec![value.clone()]);
    }
    for e in sel.match_expressions.iter().flatten() {
        (e.key == NAMESPACE_NAME && e.operator == "In").then_some(())?;
        picks.push(e.values.clone().unwrap_or_default());
    }
    let mut picks = picks.into_iter();
    let first = picks.next()?;
    Some(picks.fold(first, |had, names| {
        had.into_iter().filter(|n| names.contains(n)).collect()
    }))
}

/// Whether `pod` is in a namespace the term of `owner` looks in (as [`scope`], without
/// building a list but for a selector's); None when kelp cannot tell.
pub(crate) fn term_covers(term: &PodAffinityTerm, owner: &Pod, pod: &Pod) -> Option<bool> {
    let ns = pod.metadata.namespace.as_deref();
    let listed = term.namespaces.as_deref().unwrap_or_default();
    if listed.iter().any(|n| Some(n.as_str()) == ns) {
        return Some(true);
    }
    match &term.namespace_selector {
        None => Some(listed.is_empty() && owner.metadata.namespace.as_deref() == ns),
        Some(sel) if selects_all(sel) => Some(true),
        Some(sel) => names_picked(sel).map(|names| names.iter().any(|n| Some(n.as_str()) == ns)),
    }
}

/// The namespaces a pod's own term looks in (None: every one). A term whose scope kelp
/// cannot tell keeps its pod out of the fit check first (`unjudged`), so never comes here.
pub(super) fn term_namespaces(term: &PodAffinityTerm, pod: &Pod) -> Option<Vec<String>> {
    match scope(term, pod) {
        Scope::Names(names) => Some(names),
        Scope::All | Scope::Unknown => None,
    }
}

fn in_namespaces(p: &Pod, namespaces: Option<&[String]>) -> bool {
    namespaces.is_none_or(|list| {
        list.iter()
            .any(|n| Some(n.as_str()) == p.metadata.namespace.as_deref())
    })
}
