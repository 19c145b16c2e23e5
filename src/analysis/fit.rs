//! Would these pods fit on the nodes already there? The scheduler's filters kelp can
//! compute from the model: requests against free allocatable (and the pod count), taints,
//! `nodeSelector` and required node affinity, host ports, required pod anti-affinity (the
//! pod's own, and that of the pods already on a node or placed there),
//! topology spread (`DoNotSchedule`), and a claim's volume kept in its zone.
//!
//! [`Room`] is built once per pass, lazily (only when some node is asked about): each
//! schedulable node's free room, ordered by free CPU so a search stops at the first node
//! too small. [`Room::moves`] places a node's pods on the others, first fit, as if the
//! node were gone, and names each pod that finds no place with the filters that kept it
//! out. What kelp does not evaluate (required pod affinity) makes the answer unknown for
//! that pod, never "fits". As in Karpenter's consolidation simulation (v1.14.1
//! `scheduler.go`, `enforceConsolidateAfter`), a Karpenter node still inside its pool's
//! `consolidateAfter` since its last pod event takes none of the moving pods.

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};
use std::rc::Rc;

use chrono::{DateTime, Utc};

use k8s_openapi::api::core::v1::{PodAffinityTerm, TopologySpreadConstraint};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;

use super::provisioning::pod_requests;
use super::selector;
use crate::karpenter::consolidation::PodMiss;
use crate::karpenter::duration::{self, NillableDuration};
use crate::karpenter::labels;
use crate::karpenter::resources::{format_quantity, Resources};
use crate::karpenter::taints;
use crate::model::*;

/// One node pods could move to.
struct Target<'c> {
    node: &'c Node,
    /// Inside its pool's consolidateAfter: Karpenter moves no pods onto it.
    settling: bool,
    /// Since when it could take moving pods: its creation, or the end of its pool's
    /// consolidateAfter since its last pod event, whichever is later.
    open_since: Option<DateTime<Utc>>,
    /// Allocatable minus the requests of the pods there (with `pods` for the count).
    free: Resources,
}

/// The free room of every schedulable node, once per pass.
pub struct Room<'c> {
    c: &'c Cluster,
    /// Ordered by free CPU, most first.
    targets: Vec<Target<'c>>,
    /// How many pods match a selector, per node: (namespaces, selector) -> node -> count.
    matching: RefCell<HashMap<String, Rc<HashMap<&'c str, u32>>>>,
    /// A spread constraint's domains over every node a pod may use: (selector, key, the
    /// pod's node selection) -> domain -> (matching pods, nodes in it). Replicas share it.
    spreads: RefCell<HashMap<String, Rc<SpreadDomains>>>,
    /// Every running pod's required anti-affinity term, by the domain it keeps other pods
    /// out of: (topology key, the value its node has).
    guards: HashMap<(&'c str, &'c str), Vec<Guard<'c>>>,
    /// The topology keys of those terms (a few: hostname, zone).
    guard_keys: Vec<&'c str>,
}

/// A pod's own anti-affinity terms and spread constraints, counted once per pod.
struct PodTerms<'p> {
    /// Each term, its namespaces, and the matching pods per domain.
    anti: Vec<(
        &'p PodAffinityTerm,
        Option<Vec<String>>,
        HashMap<String, u32>,
    )>,
    spread: Vec<Spread<'p>>,
}

/// Domain -> (matching pods, nodes in it).
type SpreadDomains = HashMap<String, (u32, u32)>;

/// One `DoNotSchedule` constraint, counted: matching pods per domain the pod may use.
struct Spread<'p> {
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
struct Guard<'c> {
    node: &'c Node,
    pod: &'c Pod,
    term: &'c PodAffinityTerm,
}

/// What moving a node's pods elsewhere comes to.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Plan {
    /// Pods with no place on any other node, and why.
    pub misses: Vec<PodMiss>,
    /// Pods kelp cannot judge, and why.
    pub unknown: Vec<PodMiss>,
    /// How many pods were placed.
    pub placed: usize,
    /// Since when every node the plan places pods on could take them (None: unknown). A
    /// decision Karpenter wrote before then saw less room than there is now.
    pub open_since: Option<DateTime<Utc>>,
}

impl Plan {
    /// Every pod has a place.
    pub fn fits(&self) -> bool {
        self.misses.is_empty() && self.unknown.is_empty()
    }
}

/// A pod placed by this plan: where, and what it takes.
struct Placed<'p> {
    target: usize,
    pod: &'p Pod,
    requests: Resources,
}

/// Why the nodes turned a pod away, counted per filter.
#[derive(Default)]
struct Tally {
    resources: usize,
    /// The resource most often short, with the most of it any node has free.
    short: BTreeMap<String, f64>,
    taints: usize,
    affinity: usize,
    ports: usize,
    anti_affinity: usize,
    spread: usize,
    zone: usize,
    settling: usize,
}

pub fn is_schedulable_target(c: &Cluster, n: &Node) -> bool {
    let deleting = n.metadata.deletion_timestamp.is_some()
        || c.nodeclaim_for_node(n)
            .is_some_and(|cl| cl.metadata.deletion_timestamp.is_some());
    !deleting && n.spec.unschedulable != Some(true) && is_true(&n.status.conditions, "Ready")
}

/// A pod that takes room on its node: not finished.
fn holds_room(p: &Pod) -> bool {
    !matches!(p.status.phase.as_deref(), Some("Succeeded" | "Failed"))
}

/// When a Karpenter node's pool's consolidateAfter runs out since its last pod event (or
/// its initialization): until then Karpenter's consolidation moves no pods onto it
/// (`IsUnderConsolidateAfter`). None where it never applies (no claim, a zero or Never
/// consolidateAfter, not initialized).
fn settles_at(c: &Cluster, n: &Node) -> Option<DateTime<Utc>> {
    let claim = c.nodeclaim_for_node(n)?;
    let pool = Cluster::pool_of(&n.metadata.labels).and_then(|p| c.nodepools.get(p))?;
    let after = match pool
        .spec
        .disruption
        .consolidate_after
        .as_deref()
        .map(duration::parse_nillable)
    {
        Some(Ok(NillableDuration::After(d))) if d > chrono::Duration::zero() => d,
        _ => return None,
    };
    let initialized = condition(&claim.status.conditions, "Initialized").filter(|c| c.is_true())?;
    let since = claim
        .status
        .last_pod_event_time
        .or(initialized.last_transition_time)?;
    Some(since + after)
}

impl<'c> Room<'c> {
    pub fn new(c: &'c Cluster, now: DateTime<Utc>) -> Self {
        // Replicas share their scheduling spec: their requests are summed once.
        let mut requests: HashMap<*const SchedulingSpec, Resources> = HashMap::new();
        let mut targets: Vec<Target<'c>> = c
            .nodes
            .values()
            .filter(|n| is_schedulable_target(c, n))
            .map(|n| {
                let mut free =
                    Resources::from_quantities(&n.status.allocatable).unwrap_or_default();
                for p in c.pods_on(&n.metadata.name).filter(|p| holds_room(p)) {
                    let key: *const SchedulingSpec = &*p.spec.scheduling;
                    let r = requests.entry(key).or_insert_with(|| pod_requests(&p.spec));
                    for (k, v) in &r.0 {
                        *free.0.entry(k.clone()).or_default() -= v;
                    }
                    *free.0.entry("pods".into()).or_default() -= 1.0;
                }
                let settles = settles_at(c, n);
                Target {
                    node: n,
                    free,
                    settling: settles.is_some_and(|t| now < t),
                    open_since: settles.max(n.metadata.creation_timestamp),
                }
            })
            .collect();
        targets.sort_by(|a, b| b.free.get("cpu").total_cmp(&a.free.get("cpu")));
        let mut guards: HashMap<(&str, &str), Vec<Guard>> = HashMap::new();
        for n in c.nodes.values() {
            for p in c.pods_on(&n.metadata.name).filter(|p| holds_room(p)) {
                for term in anti_affinity_terms(p) {
                    if let Some(v) = n.metadata.labels.get(&term.topology_key) {
                        guards
                            .entry((term.topology_key.as_str(), v.as_str()))
                            .or_default()
                            .push(Guard {
                                node: n,
                                pod: p,
                                term,
                            });
                    }
                }
            }
        }
        let mut guard_keys: Vec<&str> = guards.keys().map(|(k, _)| *k).collect();
        guard_keys.sort_unstable();
        guard_keys.dedup();
        Room {
            c,
            targets,
            matching: RefCell::default(),
            spreads: RefCell::default(),
            guards,
            guard_keys,
        }
    }

    /// Places `pods` (of node `from`, one of the cluster's own, compared by address) on the
    /// other nodes, first fit, largest first.
    pub fn moves(&self, from: &Node, pods: &[&Pod]) -> Plan {
        let mut order: Vec<(&Pod, Resources)> =
            pods.iter().map(|p| (*p, pod_requests(&p.spec))).collect();
        order.sort_by(|a, b| b.1.get("cpu").total_cmp(&a.1.get("cpu")));
        let mut plan = Plan::default();
        let mut placed: Vec<Placed> = Vec::new();
        for (pod, requests) in order {
            let key = pod.metadata.key();
            if let Some(why) = unjudged(pod) {
                plan.unknown.push(PodMiss { pod: key, why });
                continue;
            }
            match self.place(from, pod, &requests, &placed) {
                Ok(target) => {
                    plan.open_since = plan.open_since.max(self.targets[target].open_since);
                    placed.push(Placed {
                        target,
                        pod,
                        requests,
                    });
                    plan.placed += 1;
                }
                Err(why) => plan.misses.push(PodMiss { pod: key, why }),
            }
        }
        plan
    }

    /// The first node that takes the pod, or why none does.
    fn place(
        &self,
        from: &Node,
        pod: &Pod,
        requests: &Resources,
        placed: &[Placed],
    ) -> Result<usize, String> {
        let cpu = requests.get("cpu");
        let terms = self.pod_terms(from, pod);
        let mut tally = Tally::default();
        let mut others = 0;
        let zone_of = |n: &Node| n.metadata.labels.get(labels::ZONE).cloned();
        let home_zone = zone_of(from);
        for (i, t) in self.targets.iter().enumerate() {
            if std::ptr::eq(t.node, from) {
                continue;
            }
            others += 1;
            // Ordered by free CPU: no node after this one has room for it.
            if cpu > 0.0 && t.free.get("cpu") < cpu {
                let rest = self.targets[i..]
                    .iter()
                    .filter(|t| !std::ptr::eq(t.node, from))
                    .count();
                others += rest - 1;
                tally.resources += rest;
                note_short(&mut tally, "cpu", t.free.get("cpu").max(0.0));
                break;
            }
            let mut free = t.free.clone();
            for p in placed.iter().filter(|p| p.target == i) {
                for (k, v) in &p.requests.0 {
                    *free.0.entry(k.clone()).or_default() -= v;
                }
                *free.0.entry("pods".into()).or_default() -= 1.0;
            }
            let mut need = requests.clone();
            *need.0.entry("pods".into()).or_default() += 1.0;
            if let Some((r, have)) = need
                .0
                .iter()
                .filter(|(_, v)| **v > 0.0)
                .map(|(k, v)| (k, v, free.get(k)))
                .find(|(_, v, have)| have < v)
                .map(|(k, _, have)| (k, have))
            {
                tally.resources += 1;
                note_short(&mut tally, r, have.max(0.0));
                continue;
            }
            if t.settling {
                tally.settling += 1;
                continue;
            }
            if !taints::untolerated(&pod.spec.tolerations, scheduling_taints(t.node)).is_empty() {
                tally.taints += 1;
                continue;
            }
            if !selector::node_fits_pod(pod, &t.node.metadata.labels) {
                tally.affinity += 1;
                continue;
            }
            if !pod.spec.volume_claims.is_empty()
                && home_zone.is_some()
                && zone_of(t.node) != home_zone
            {
                tally.zone += 1;
                continue;
            }
            if self.port_taken(t.node, pod, placed, i) {
                tally.ports += 1;
                continue;
            }
            if self.anti_affinity_blocks(from, t.node, pod, &terms, placed) {
                tally.anti_affinity += 1;
                continue;
            }
            if self.spread_blocks(t.node, &terms, placed) {
                tally.spread += 1;
                continue;
            }
            return Ok(i);
        }
        Err(explain(&tally, others, requests, home_zone.as_deref()))
    }

    /// A host port of the pod already taken on the node (by a pod there or placed there).
    fn port_taken(&self, node: &Node, pod: &Pod, placed: &[Placed], target: usize) -> bool {
        let wanted: Vec<&HostPort> = host_ports(pod).collect();
        if wanted.is_empty() {
            return false;
        }
        let there = self
            .c
            .pods_on(&node.metadata.name)
            .filter(|p| holds_room(p))
            .chain(placed.iter().filter(|p| p.target == target).map(|p| p.pod));
        let clash = |a: &HostPort, b: &HostPort| {
            let proto = |p: &HostPort| p.protocol.clone().unwrap_or_else(|| "TCP".into());
            let any =
                |ip: &Option<String>| ip.as_deref().is_none_or(|i| i.is_empty() || i == "0.0.0.0");
            a.host_port == b.host_port
                && proto(a) == proto(b)
                && (any(&a.host_ip) || any(&b.host_ip) || a.host_ip == b.host_ip)
        };
        for p in there {
            if host_ports(p).any(|h| wanted.iter().any(|w| clash(w, h))) {
                return true;
            }
        }
        false
    }

    /// What a pod's own required anti-affinity and `DoNotSchedule` spread count, once per
    /// pod (not once per node it is tried on): matching pods per domain, the moving node's
    /// own left out.
    fn pod_terms<'p>(&self, from: &Node, pod: &'p Pod) -> PodTerms<'p> {
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
        let anti = anti_affinity_terms(pod)
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
            .filter(|t| t.when_unsatisfiable == "DoNotSchedule")
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
    /// pods' already there or placed (one whose term matches the pod, in its domain).
    fn anti_affinity_blocks(
        &self,
        from: &Node,
        node: &Node,
        pod: &Pod,
        terms: &PodTerms,
        placed: &[Placed],
    ) -> bool {
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
        for (at, guard, term) in guards {
            if same_domain(at, &term.topology_key)
                && selector::matches(term.label_selector.as_ref(), &pod.metadata.labels)
                && term_covers(term, guard, pod)
            {
                return true;
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
                return true;
            }
        }
        false
    }

    /// Topology spread with `DoNotSchedule`: placing the pod on the node would exceed the
    /// skew over the domains of the nodes the pod may use.
    fn spread_blocks(&self, node: &Node, terms: &PodTerms, placed: &[Placed]) -> bool {
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

/// A pod's required anti-affinity terms.
fn anti_affinity_terms(p: &Pod) -> impl Iterator<Item = &PodAffinityTerm> {
    p.spec
        .affinity
        .as_ref()
        .and_then(|a| a.pod_anti_affinity.as_ref())
        .and_then(|a| {
            a.required_during_scheduling_ignored_during_execution
                .as_deref()
        })
        .unwrap_or_default()
        .iter()
}

/// What kelp does not evaluate for a pod, if anything.
fn unjudged(pod: &Pod) -> Option<String> {
    let affinity = pod.spec.affinity.as_ref()?;
    affinity
        .pod_affinity
        .as_ref()
        .and_then(|a| {
            a.required_during_scheduling_ignored_during_execution
                .as_ref()
        })
        .filter(|terms| !terms.is_empty())
        .map(|_| "it has required pod affinity, which kelp does not evaluate".to_string())
}

/// The taints that keep new pods off a node (NoSchedule and NoExecute).
fn scheduling_taints(n: &Node) -> &[k8s_openapi::api::core::v1::Taint] {
    &n.spec.taints
}

fn host_ports(p: &Pod) -> impl Iterator<Item = &HostPort> {
    p.spec
        .containers
        .iter()
        .chain(p.spec.init_containers.iter())
        .flat_map(|c| c.host_ports.iter())
}

/// The namespaces a pod-affinity term looks in: its own list, all (a namespace selector,
/// read as every namespace), or the pod's.
/// Whether `pod` is in a namespace the term of `owner` looks in (as [`term_namespaces`],
/// without building the list).
fn term_covers(term: &PodAffinityTerm, owner: &Pod, pod: &Pod) -> bool {
    if term.namespace_selector.is_some() {
        return true;
    }
    let ns = pod.metadata.namespace.as_deref();
    match term.namespaces.as_deref() {
        Some(list) if !list.is_empty() => list.iter().any(|n| Some(n.as_str()) == ns),
        _ => owner.metadata.namespace.as_deref() == ns,
    }
}

fn term_namespaces(term: &PodAffinityTerm, pod: &Pod) -> Option<Vec<String>> {
    if term.namespace_selector.is_some() {
        return None;
    }
    match term.namespaces.as_deref() {
        Some(list) if !list.is_empty() => Some(list.to_vec()),
        _ => Some(vec![pod
            .metadata
            .namespace
            .as_deref()
            .unwrap_or_default()
            .to_string()]),
    }
}

fn in_namespaces(p: &Pod, namespaces: Option<&[String]>) -> bool {
    namespaces.is_none_or(|list| {
        list.iter()
            .any(|n| Some(n.as_str()) == p.metadata.namespace.as_deref())
    })
}

fn note_short(t: &mut Tally, resource: &str, have: f64) {
    let most = t.short.entry(resource.to_string()).or_insert(have);
    *most = most.max(have);
}

/// One line: which filters kept the pod off the other nodes.
fn explain(t: &Tally, others: usize, requests: &Resources, zone: Option<&str>) -> String {
    if others == 0 {
        return "there is no other schedulable node".into();
    }
    let mut parts = Vec::new();
    if t.resources > 0 {
        let short: Vec<String> = t
            .short
            .iter()
            .map(|(r, have)| {
                let want = if r == "pods" { 1.0 } else { requests.get(r) };
                format!(
                    "{r} {} asked, at most {} free",
                    format_quantity(r, want),
                    format_quantity(r, *have)
                )
            })
            .collect();
        parts.push(format!(
            "{} too full ({})",
            count(t.resources),
            short.join(", ")
        ));
    }
    for (n, what) in [
        (t.taints, "taints it does not tolerate".to_string()),
        (
            t.affinity,
            "labels its node selector or affinity excludes".into(),
        ),
        (
            t.zone,
            format!(
                "outside zone {}, where its volume claims keep it",
                zone.unwrap_or("?")
            ),
        ),
        (t.ports, "its host port taken".into()),
        (t.anti_affinity, "pods its anti-affinity excludes".into()),
        (t.spread, "its topology spread would exceed maxSkew".into()),
        (
            t.settling,
            "inside their pool's consolidateAfter, which Karpenter moves no pods onto".into(),
        ),
    ] {
        if n > 0 {
            parts.push(format!("{}: {what}", count(n)));
        }
    }
    format!(
        "fits none of the {others} other schedulable nodes: {}",
        parts.join("; ")
    )
}

fn count(n: usize) -> String {
    if n == 1 {
        "1 node".into()
    } else {
        format!("{n} nodes")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cluster(yaml: &str) -> Cluster {
        let mut c = Cluster::default();
        crate::source::load_str("t.yaml", yaml, &mut c).unwrap();
        c
    }

    fn node(name: &str, cpu: &str, extra: &str) -> String {
        format!(
            r#"
---
apiVersion: v1
kind: Node
metadata: {{name: {name}, labels: {{kubernetes.io/hostname: {name}, topology.kubernetes.io/zone: z-{name}{extra}}}}}
status:
  allocatable: {{cpu: "{cpu}", memory: 8Gi, pods: "110"}}
  conditions: [{{type: Ready, status: "True"}}]
"#
        )
    }

    fn pod(name: &str, on: &str, cpu: &str, extra: &str) -> String {
        format!(
            r#"
---
apiVersion: v1
kind: Pod
metadata: {{name: {name}, namespace: shop, labels: {{app: web}}}}
spec:
  nodeName: {on}
  containers: [{{name: c, resources: {{requests: {{cpu: "{cpu}"}}}}}}]
{extra}
status: {{phase: Running}}
"#
        )
    }

    fn plan(yaml: &str, from: &str) -> Plan {
        let c = cluster(yaml);
        let now = DateTime::parse_from_rfc3339("2026-11-21T10:00:00Z")
            .unwrap()
            .to_utc();
        let room = Room::new(&c, now);
        let pods: Vec<&Pod> = c.pods_on(from).collect();
        room.moves(&c.nodes[from], &pods)
    }

    #[test]
    fn pods_move_where_there_is_room_and_the_miss_names_the_shortfall() {
        let base = format!(
            "{}{}{}{}",
            node("a", "4", ""),
            node("b", "4", ""),
            pod("w1", "a", "1", ""),
            pod("busy", "b", "3500m", "")
        );
        // 500m free on b: a 1-cpu pod has nowhere to go.
        let p = plan(&base, "a");
        assert_eq!(p.misses.len(), 1, "{p:?}");
        assert!(
            p.misses[0].why.contains("cpu 1 asked, at most 500m free"),
            "{p:?}"
        );
        // A third node with room takes it.
        let p = plan(&format!("{base}{}", node("c", "2", "")), "a");
        assert!(p.fits(), "{p:?}");
        assert_eq!(p.placed, 1);
    }

    #[test]
    fn taints_selectors_ports_and_anti_affinity_keep_pods_off() {
        let other = node("b", "8", ", disk: hdd");
        let cases = [
            (
                "  nodeSelector: {disk: ssd}",
                "its node selector or affinity excludes",
            ),
            (
                "  affinity: {podAntiAffinity: {requiredDuringSchedulingIgnoredDuringExecution: [{topologyKey: kubernetes.io/hostname, labelSelector: {matchLabels: {app: web}}}]}}",
                "anti-affinity",
            ),
        ];
        for (extra, want) in cases {
            let yaml = format!(
                "{}{other}{}{}",
                node("a", "4", ""),
                pod("w1", "a", "1", extra),
                pod("w2", "b", "1", "")
            );
            let p = plan(&yaml, "a");
            assert_eq!(p.misses.len(), 1, "{extra}: {p:?}");
            assert!(p.misses[0].why.contains(want), "{extra}: {p:?}");
        }
        // A taint it does not tolerate.
        let tainted = format!(
            "{}{}{}",
            node("a", "4", ""),
            node("b", "8", "").replacen(
                "status:",
                "spec: {taints: [{key: dedicated, value: db, effect: NoSchedule}]}\nstatus:",
                1
            ),
            pod("w1", "a", "1", "")
        );
        let p = plan(&tainted, "a");
        assert!(p.misses[0].why.contains("taints"), "{p:?}");
        // Two replicas with a host port cannot share the one other node.
        let port = "  containers: [{name: c, ports: [{containerPort: 80, hostPort: 8080}], resources: {requests: {cpu: 100m}}}]";
        let yaml = format!(
            "{}{}{}{}",
            node("a", "4", ""),
            node("b", "8", ""),
            pod("w1", "a", "1", "").replace(
                "  containers: [{name: c, resources: {requests: {cpu: \"1\"}}}]",
                port
            ),
            pod("w2", "b", "1", "").replace(
                "  containers: [{name: c, resources: {requests: {cpu: \"1\"}}}]",
                port
            ),
        );
        let p = plan(&yaml, "a");
        assert!(
            p.misses
                .first()
                .is_some_and(|m| m.why.contains("host port")),
            "{p:?}"
        );
    }

    #[test]
    fn a_pod_already_there_keeps_out_what_its_anti_affinity_names() {
        // db on b will not share its node with app=web; w1 (app=web) cannot go there.
        let guard = "  affinity: {podAntiAffinity: {requiredDuringSchedulingIgnoredDuringExecution: [{topologyKey: kubernetes.io/hostname, labelSelector: {matchLabels: {app: web}}}]}}";
        let yaml = format!(
            "{}{}{}{}",
            node("a", "4", ""),
            node("b", "8", ""),
            pod("w1", "a", "1", ""),
            pod("db", "b", "1", guard).replace("labels: {app: web}", "labels: {app: db}"),
        );
        let p = plan(&yaml, "a");
        assert_eq!(p.misses.len(), 1, "{p:?}");
        assert!(p.misses[0].why.contains("anti-affinity"), "{p:?}");
        // The guard moves too (from a): it and w1 only need nodes of their own.
        let both = |nodes: &str| {
            format!(
                "{}{nodes}{}{}",
                node("a", "4", ""),
                pod("w1", "a", "1", ""),
                pod("db", "a", "1", guard).replace("labels: {app: web}", "labels: {app: db}"),
            )
        };
        let one = plan(&both(&node("b", "8", "")), "a");
        assert_eq!(one.misses.len(), 1, "{one:?}");
        let two = plan(
            &both(&format!("{}{}", node("b", "8", ""), node("c", "8", ""))),
            "a",
        );
        assert!(two.fits(), "{two:?}");
    }

    #[test]
    fn topology_spread_counts_peers_per_domain() {
        // Zones z-a, z-b, z-c: two web pods in z-b, one on a (moving), none in z-c. c is too
        // small for it, so only b could take it, and the skew there would be 3 - 0 > 1.
        let spread = "  topologySpreadConstraints: [{maxSkew: 1, topologyKey: topology.kubernetes.io/zone, whenUnsatisfiable: DoNotSchedule, labelSelector: {matchLabels: {app: web}}}]";
        let yaml = format!(
            "{}{}{}{}{}{}",
            node("a", "4", ""),
            node("b", "8", ""),
            node("c", "500m", ""),
            pod("w1", "a", "1", spread),
            pod("w2", "b", "1", ""),
            pod("w3", "b", "1", ""),
        );
        let p = plan(&yaml, "a");
        assert_eq!(p.misses.len(), 1, "{p:?}");
        assert!(p.misses[0].why.contains("maxSkew"), "{p:?}");
        // ScheduleAnyway never blocks.
        let p = plan(&yaml.replace("DoNotSchedule", "ScheduleAnyway"), "a");
        assert!(p.fits(), "{p:?}");
    }

    #[test]
    fn required_pod_affinity_is_unknown_never_fits() {
        let extra = "  affinity: {podAffinity: {requiredDuringSchedulingIgnoredDuringExecution: [{topologyKey: kubernetes.io/hostname, labelSelector: {matchLabels: {app: db}}}]}}";
        let yaml = format!(
            "{}{}{}",
            node("a", "4", ""),
            node("b", "8", ""),
            pod("w1", "a", "1", extra)
        );
        let p = plan(&yaml, "a");
        assert!(!p.fits());
        assert_eq!(p.unknown.len(), 1, "{p:?}");
    }
}
