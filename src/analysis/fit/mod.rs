//! Would these pods fit on the nodes already there? The scheduler's filters kelp can
//! compute from the model: requests against free allocatable (and the pod count), taints,
//! `nodeSelector` and required node affinity, host ports, required pod anti-affinity (the
//! pod's own, and that of the pods already on a node or placed there), the pod's own
//! preferred pod anti-affinity and a node's PreferNoSchedule taints (held as required first,
//! as Karpenter's simulation does),
//! topology spread (`DoNotSchedule`), and a claim's volume kept in its zone.
//!
//! [`Room`] is built once per pass, lazily (when some node is asked about, or when serve's
//! incremental pass compares it with the last pass's after a bound pod changed), from each
//! node's share and where each node stands as a target kept between serve's passes
//! ([`RoomCache`], [`Settling`]): each
//! schedulable node's free room, ordered by free CPU so a search stops at the first node
//! too small; what the plans read of that order is kept ([`Reach`]) for serve's
//! incremental pass. [`Room::moves`] places a node's pods on the others, first fit, as if the
//! node were gone, and names each pod that finds no place with the filters that kept it
//! out. What kelp does not evaluate (required pod affinity, and an anti-affinity term whose
//! namespace selector reads namespace labels kelp does not keep) makes the answer unknown
//! for that pod, never "fits" nor "no place". As in Karpenter's consolidation simulation (v1.14.1
//! `scheduler.go`, `enforceConsolidateAfter`), a Karpenter node still inside its pool's
//! `consolidateAfter` since its last pod event takes none of the moving pods.

pub(crate) mod peers;

use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, HashMap};
use std::rc::Rc;
use std::sync::Arc;

use chrono::{DateTime, Utc};

use super::selector;
use crate::karpenter::consolidation::PodMiss;
use crate::karpenter::duration::{self, NillableDuration};
use crate::karpenter::resources::{format_quantity, Resources};
use crate::karpenter::taints;
use crate::model::stamps::PerNode;
use crate::model::*;
use peers::{anti_affinity_terms, Guard, SpreadDomains};

/// One node pods could move to.
struct Target<'c> {
    node: &'c Node,
    /// Inside its pool's consolidateAfter: Karpenter moves no pods onto it.
    settling: bool,
    /// Since when it could take moving pods: its creation, or the end of its pool's
    /// consolidateAfter since its last pod event, whichever is later.
    open_since: Option<DateTime<Utc>>,
    /// Allocatable minus the requests of the pods there (with `pods` for the count).
    free: Arc<Resources>,
    /// Its free CPU, what the targets are ordered by, read once.
    cpu: f64,
}

/// The free room of every schedulable node, once per pass.
pub struct Room<'c> {
    c: &'c Cluster,
    /// Ordered by free CPU, most first.
    targets: Vec<Target<'c>>,
    /// Each node's free CPU as a target (None: not one), in the model's node order.
    in_node_order: Vec<Option<f64>>,
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
    /// How far the plans since the last [`Room::take_reach`] looked: one past the last
    /// target any of them read, and whether one read them all.
    reach: Cell<(usize, bool)>,
    /// Karpenter runs with `PREFERENCE_POLICY=Ignore`: its simulation drops preferred terms.
    ignore_preferences: bool,
    soft: peers::SoftTaints,
}

/// How far into the room's order (most free CPU first, then by name) the plans made
/// since [`Room::take_reach`] looked: what a change of a node's room can change of them.
#[derive(Debug, Clone, PartialEq)]
pub enum Reach {
    /// Nothing of the room.
    Nothing,
    /// The nodes up to this one (its free CPU and name), no further.
    UpTo(f64, String),
    /// Every node, or what the pods on every node are (a moving pod's own required
    /// anti-affinity or `DoNotSchedule` spread counts them).
    All,
}

impl Reach {
    /// Whether a node at this place in the order (its free CPU and name), or none (not a
    /// target), lies within what was read.
    pub fn covers(&self, place: Option<(f64, &str)>) -> bool {
        match (self, place) {
            (Reach::Nothing, _) | (Reach::UpTo(..), None) => false,
            (Reach::All, _) => true,
            (Reach::UpTo(cpu, name), Some((c, n))) => match c.total_cmp(cpu) {
                std::cmp::Ordering::Greater => true,
                std::cmp::Ordering::Less => false,
                std::cmp::Ordering::Equal => n <= name.as_str(),
            },
        }
    }
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
    /// The pods among `misses` that another node would take if they broke their own
    /// preferred pod anti-affinity: Karpenter puts such a pod on a new node first, and
    /// breaks the preference only when no NodePool can launch one for it.
    pub preferring: Vec<String>,
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
    requests: &'p Resources,
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
    /// Nodes only a pod's anti-affinity might keep it off, whose namespaces kelp cannot
    /// tell (a namespace selector on labels other than the name).
    unsure: usize,
}

/// Why a pod found no place: no node takes it, or kelp cannot tell (some node might).
enum Miss {
    No(String),
    Unknown(String),
}

/// Whether a node takes moved pods: not deleting (nor its NodeClaim, `claim`), not
/// cordoned, Ready.
fn schedulable_with(n: &Node, claim: Option<&NodeClaim>) -> bool {
    let deleting = n.metadata.deletion_timestamp.is_some()
        || claim.is_some_and(|cl| cl.metadata.deletion_timestamp.is_some());
    !deleting && n.spec.unschedulable != Some(true) && is_true(&n.status.conditions, "Ready")
}

/// A pod that takes room on its node: not finished.
fn holds_room(p: &Pod) -> bool {
    !p.finished()
}

/// Each pool's consolidateAfter when it is a positive duration, parsed once per room
/// (the schedulable nodes' pools, by name).
#[derive(Default)]
struct SettleAfter<'c>(HashMap<&'c str, Option<chrono::Duration>>);

impl<'c> SettleAfter<'c> {
    fn of(&mut self, c: &'c Cluster, pool: &'c str) -> Option<chrono::Duration> {
        *self.0.entry(pool).or_insert_with(|| {
            let after = c
                .nodepools
                .get(pool)?
                .spec
                .disruption
                .consolidate_after
                .as_deref();
            match after.map(duration::parse_nillable) {
                Some(Ok(NillableDuration::After(d))) if d > chrono::Duration::zero() => Some(d),
                _ => None,
            }
        })
    }
}

/// When a Karpenter node's pool's consolidateAfter runs out since its last pod event (or
/// its initialization): until then Karpenter's consolidation moves no pods onto it
/// (`IsUnderConsolidateAfter`). None where it never applies (no claim, a zero or Never
/// consolidateAfter, not initialized).
fn settles_at<'c>(
    c: &'c Cluster,
    n: &'c Node,
    claim: Option<&NodeClaim>,
    after: &mut SettleAfter<'c>,
) -> Option<DateTime<Utc>> {
    let claim = claim?;
    let after = after.of(c, n.pool()?)?;
    let initialized = condition(&claim.status.conditions, "Initialized").filter(|c| c.is_true())?;
    let since = claim
        .status
        .last_pod_event_time
        .or(initialized.last_transition_time)?;
    Some(since + after)
}

/// Where each node stands as a room target, in node order: None where it takes no pods
/// (not schedulable), else when it settles (leaves its pool's consolidateAfter; None where
/// that never applies). All the room reads of the nodes' claims and the pools, through which
/// nodes are settling now and since when each is open. With the model's stamps, what tells
/// whether the room changed; it does not depend on the clock. Kept by `kelp serve`'s
/// incremental pass while no node, claim or pool changed, and handed to [`Room::with_cache`].
pub type Settling = Vec<Option<Option<DateTime<Utc>>>>;

/// Each node's [`Settling`].
pub fn settling(c: &Cluster) -> Settling {
    let mut after = SettleAfter::default();
    c.nodes
        .values()
        .map(|n| {
            let claim = c.nodeclaim_for_node(n);
            schedulable_with(n, claim).then(|| settles_at(c, n, claim, &mut after))
        })
        .collect()
}

/// Where node `n` stands in the room [`Room::with_cache`] builds with the same `cache` and
/// `settles` (the node's entry in [`Settling`]): its free CPU as a target (None: not one),
/// and whether it guards a domain ([`Room::guarded`]). What serve's incremental pass reads
/// of the few nodes that changed, instead of building the whole room.
pub fn place_of(
    c: &Cluster,
    n: &Node,
    settles: Option<Option<DateTime<Utc>>>,
    cache: &mut RoomCache,
) -> (Option<f64>, bool) {
    let name = &n.metadata.name;
    let share = cache.get_or_insert_with(c.stamps(), name, || NodeRoom::of(c, n));
    let place = settles.map(|_| share.free.get("cpu"));
    let guards = share.guarded && domain_guards(c, n).next().is_some();
    (place, guards)
}

/// The required anti-affinity terms of the pods holding room on `n` whose topology key
/// the node has, each with the domain it guards (the key and the node's value): what
/// [`Room`] indexes its guards by, and what makes a node guarded ([`place_of`]).
fn domain_guards<'c>(
    c: &'c Cluster,
    n: &'c Node,
) -> impl Iterator<Item = ((&'c str, &'c str), Guard<'c>)> + 'c {
    c.pods_on(&n.metadata.name)
        .filter(|p| holds_room(p))
        .flat_map(move |p| {
            anti_affinity_terms(p).filter_map(move |term| {
                let v = n.metadata.labels.get(&term.topology_key)?;
                Some((
                    (term.topology_key.as_str(), v.as_str()),
                    Guard {
                        node: n,
                        pod: p,
                        term,
                    },
                ))
            })
        })
}

/// Each node's own share of the room, kept between passes by `kelp serve`'s incremental
/// analysis ([`PerNode`]): a node whose pods did not change is not summed again.
pub type RoomCache = PerNode<NodeRoom>;

pub struct NodeRoom {
    /// Allocatable minus the requests of the pods there (with `pods` for the count).
    free: Arc<Resources>,
    /// Whether a pod there holding room has a required anti-affinity term.
    guarded: bool,
}

impl NodeRoom {
    fn of(c: &Cluster, n: &Node) -> NodeRoom {
        let mut free = Resources::from_quantities(&n.status.allocatable).unwrap_or_default();
        // Pods alike (one scheduling spec, shared by the replicas of a workload) are
        // counted first and taken off together.
        let mut alike: Vec<(*const SchedulingSpec, &Pod, f64)> = Vec::new();
        let mut count = 0.0;
        let mut guarded = false;
        for p in c.pods_on(&n.metadata.name).filter(|p| holds_room(p)) {
            count += 1.0;
            guarded = guarded || anti_affinity_terms(p).next().is_some();
            let key: *const SchedulingSpec = &*p.spec.scheduling;
            match alike.iter_mut().find(|(k, _, _)| *k == key) {
                Some((_, _, n)) => *n += 1.0,
                None => alike.push((key, p, 1.0)),
            }
        }
        for (_, p, n) in alike {
            for (k, v) in &p.spec.scheduling.requests().0 {
                match free.0.get_mut(k) {
                    Some(f) => *f -= v * n,
                    None => {
                        free.0.insert(k.clone(), -v * n);
                    }
                }
            }
        }
        match free.0.get_mut("pods") {
            Some(f) => *f -= count,
            None if count > 0.0 => {
                free.0.insert("pods".into(), -count);
            }
            None => {}
        }
        NodeRoom {
            free: Arc::new(free),
            guarded,
        }
    }
}

impl<'c> Room<'c> {
    pub fn new(c: &'c Cluster, now: DateTime<Utc>) -> Self {
        Self::with_cache(c, now, &mut RoomCache::default(), None)
    }

    /// As [`Room::new`], each node's share taken from `cache` where it still holds, and
    /// where each node stands from `settling` when it is the model's ([`settling`]).
    pub fn with_cache(
        c: &'c Cluster,
        now: DateTime<Utc>,
        cache: &mut RoomCache,
        settling: Option<&Settling>,
    ) -> Self {
        let worked_out;
        let settling = match settling.filter(|s| s.len() == c.nodes.len()) {
            Some(s) => s,
            None => {
                worked_out = self::settling(c);
                &worked_out
            }
        };
        let mut targets: Vec<Target<'c>> = Vec::new();
        let mut in_node_order = Vec::with_capacity(c.nodes.len());
        let mut guarded: Vec<&'c Node> = Vec::new();
        for (n, settles) in c.nodes.values().zip(settling) {
            let share =
                cache.get_or_insert_with(c.stamps(), &n.metadata.name, || NodeRoom::of(c, n));
            let (free, guards) = (share.free.clone(), share.guarded);
            if guards {
                guarded.push(n);
            }
            let Some(settles) = *settles else {
                in_node_order.push(None);
                continue;
            };
            let cpu = free.get("cpu");
            in_node_order.push(Some(cpu));
            targets.push(Target {
                node: n,
                cpu,
                free,
                settling: settles.is_some_and(|t| now < t),
                open_since: settles.max(n.metadata.creation_timestamp),
            });
        }
        cache.retain_nodes(&c.nodes);
        let soft = peers::SoftTaints::of(c, targets.iter().map(|t| t.node));
        targets.sort_by(|a, b| b.cpu.total_cmp(&a.cpu));
        let mut guards: HashMap<(&str, &str), Vec<Guard>> = HashMap::new();
        for n in guarded {
            for (domain, guard) in domain_guards(c, n) {
                guards.entry(domain).or_default().push(guard);
            }
        }
        let mut guard_keys: Vec<&str> = guards.keys().map(|(k, _)| *k).collect();
        guard_keys.sort_unstable();
        guard_keys.dedup();
        Room {
            c,
            targets,
            in_node_order,
            matching: RefCell::default(),
            spreads: RefCell::default(),
            guards,
            guard_keys,
            reach: Cell::new((0, false)),
            ignore_preferences: c.karpenter_setting("PREFERENCE_POLICY") == Some("Ignore"),
            soft,
        }
    }

    /// Each node's free CPU as a target (None: it is not one), in the model's node order.
    pub fn places_in_node_order(&self) -> &[Option<f64>] {
        &self.in_node_order
    }

    /// The nodes where a pod holding room has a required anti-affinity term (and the node
    /// has the term's topology key), once per term: a change of theirs can keep pods out of
    /// other nodes of its domain.
    pub fn guarded(&self) -> impl Iterator<Item = &'c str> + '_ {
        self.guards
            .values()
            .flatten()
            .map(|g| g.node.metadata.name.as_str())
    }

    /// How far the plans made since the last call looked ([`Reach`]).
    pub fn take_reach(&self) -> Reach {
        match self.reach.replace((0, false)) {
            (_, true) => Reach::All,
            (0, false) => Reach::Nothing,
            (end, false) => {
                let t = &self.targets[end - 1];
                Reach::UpTo(t.cpu, t.node.metadata.name.clone())
            }
        }
    }

    /// Target `i` was read.
    fn read_to(&self, i: usize) {
        let (end, all) = self.reach.get();
        self.reach.set((end.max(i + 1), all));
    }

    /// Every target was read, or what every node's pods are.
    fn read_all(&self) {
        self.reach.set((self.reach.get().0, true));
    }

    /// Places `pods` (of node `from`, one of the cluster's own, compared by address) on the
    /// other nodes, first fit, largest first.
    pub fn moves(&self, from: &Node, pods: &[&Pod]) -> Plan {
        // Each pod's requests as its shared spec keeps them: borrowed, not copied.
        let mut order: Vec<(&Pod, &Resources)> = pods
            .iter()
            .map(|p| (*p, p.spec.scheduling.requests()))
            .collect();
        order.sort_by(|a, b| b.1.get("cpu").total_cmp(&a.1.get("cpu")));
        let mut plan = Plan::default();
        let mut placed: Vec<Placed> = Vec::new();
        for (pod, requests) in order {
            if let Some(why) = unjudged(pod) {
                plan.unknown.push(PodMiss {
                    pod: pod.metadata.key(),
                    why,
                });
                continue;
            }
            // Karpenter's simulation holds a pod to its own preferred anti-affinity, and
            // relaxes it only once no node, placed or new, takes the pod (v1.14.1 and
            // v1.15 `Scheduler.add`, `Preferences.Relax`): kelp tries the nodes there with
            // the preference first; a pod that fits only without it goes to a new node.
            let prefers = if self.ignore_preferences {
                Vec::new()
            } else {
                peers::preferences(pod)
            };
            let strict = if !prefers.is_empty() || self.soft.present {
                Some(self.place(from, pod, requests, &placed, true))
            } else {
                None
            };
            let found = match strict {
                Some(Ok(target)) => Ok(target),
                Some(Err(_)) => match self.place(from, pod, requests, &placed, false) {
                    Ok(target) => {
                        plan.preferring.push(pod.metadata.key());
                        plan.misses.push(PodMiss {
                            pod: pod.metadata.key(),
                            why: peers::held_off(&prefers, pod, self.targets[target].node),
                        });
                        continue;
                    }
                    Err(miss) => Err(miss),
                },
                None => self.place(from, pod, requests, &placed, false),
            };
            match found {
                Ok(target) => {
                    plan.open_since = plan.open_since.max(self.targets[target].open_since);
                    placed.push(Placed {
                        target,
                        pod,
                        requests,
                    });
                    plan.placed += 1;
                }
                Err(Miss::No(why)) => plan.misses.push(PodMiss {
                    pod: pod.metadata.key(),
                    why,
                }),
                Err(Miss::Unknown(why)) => plan.unknown.push(PodMiss {
                    pod: pod.metadata.key(),
                    why,
                }),
            }
        }
        plan
    }

    /// The first node that takes the pod, or why none does.
    /// With `preferred`, the pod's preferred anti-affinity counts as required.
    fn place(
        &self,
        from: &Node,
        pod: &Pod,
        requests: &Resources,
        placed: &[Placed],
        preferred: bool,
    ) -> Result<usize, Miss> {
        let cpu = requests.get("cpu");
        let terms = self.pod_terms(from, pod, preferred);
        if !terms.is_empty() {
            // It counted the matching pods on every node.
            self.read_all();
        }
        let mut tally = Tally::default();
        let mut others = 0;
        let home_zone = from.zone();
        // What the pod needs of a node: its requests and one pod slot, worked out once.
        let mut need = requests.clone();
        *need.0.entry("pods".into()).or_default() += 1.0;
        let need: Vec<(&String, f64)> = need
            .0
            .iter()
            .filter(|(_, v)| **v > 0.0)
            .map(|(k, v)| (k, *v))
            .collect();
        for (i, t) in self.targets.iter().enumerate() {
            if std::ptr::eq(t.node, from) {
                continue;
            }
            others += 1;
            // Ordered by free CPU: no node after this one has room for it. The plan read the
            // order up to here, and how many nodes come after (a node that moves in front
            // of this one is within that reach).
            if cpu > 0.0 && t.cpu < cpu {
                self.read_to(i);
                let rest = self.targets[i..]
                    .iter()
                    .filter(|t| !std::ptr::eq(t.node, from))
                    .count();
                others += rest - 1;
                tally.resources += rest;
                note_short(&mut tally, "cpu", t.cpu.max(0.0));
                return Err(miss(&tally, others, requests, home_zone));
            }
            // The node's free room less what this plan already placed there (each placed
            // pod's requests and its pod slot, taken off in the order they were placed).
            let free = |k: &str| {
                let mut have = t.free.get(k);
                for p in placed.iter().filter(|p| p.target == i) {
                    have -= p.requests.get(k);
                    if k == "pods" {
                        have -= 1.0;
                    }
                }
                have
            };
            if let Some((r, have)) = need
                .iter()
                .map(|(k, v)| (*k, v, free(k)))
                .find(|(_, v, have)| have < *v)
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
            if !taints::untolerated(&pod.spec.tolerations, scheduling_taints(t.node)).is_empty()
                || self.soft.holds(preferred)
                    && taints::soft(&pod.spec.tolerations, scheduling_taints(t.node))
                        .next()
                        .is_some()
            {
                tally.taints += 1;
                continue;
            }
            if !selector::node_fits_pod(pod, &t.node.metadata.labels)
                || (preferred && !selector::node_meets_preference(pod, &t.node.metadata.labels))
            {
                tally.affinity += 1;
                continue;
            }
            if !pod.spec.volume_claims.is_empty()
                && home_zone.is_some()
                && t.node.zone() != home_zone
            {
                tally.zone += 1;
                continue;
            }
            if self.port_taken(t.node, pod, placed, i) {
                tally.ports += 1;
                continue;
            }
            match self.anti_affinity_blocks(from, t.node, pod, &terms, placed) {
                Some(true) => {
                    tally.anti_affinity += 1;
                    continue;
                }
                // Not placed where kelp cannot tell; if no node it can tell of takes
                // the pod, whether it fits is unknown.
                None => {
                    tally.unsure += 1;
                    continue;
                }
                Some(false) => {}
            }
            if self.spread_blocks(t.node, &terms, placed) {
                tally.spread += 1;
                continue;
            }
            self.read_to(i);
            return Ok(i);
        }
        // Turned away by every node: the plan read them all.
        self.read_all();
        Err(miss(&tally, others, requests, home_zone))
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
        for p in there {
            if host_ports(p).any(|h| wanted.iter().any(|w| w.clashes(h))) {
                return true;
            }
        }
        false
    }
}

/// What kelp does not evaluate for a pod, if anything.
fn unjudged(pod: &Pod) -> Option<String> {
    if !pod.spec.required_pod_affinity().is_empty() {
        return Some("it has required pod affinity, which kelp does not evaluate".into());
    }
    if !pod.spec.preferred_pod_affinity().is_empty() {
        return Some(
            "it has preferred pod affinity, which Karpenter holds it to first and kelp does not evaluate"
                .into(),
        );
    }
    anti_affinity_terms(pod)
        .any(peers::scope_unknown)
        .then(|| format!("its required pod anti-affinity {UNKNOWN_NAMESPACES}"))
}

/// Why a namespace selector leaves an anti-affinity term's reach unknown.
const UNKNOWN_NAMESPACES: &str =
    "picks namespaces by labels, which kelp does not read (it keeps no Namespaces)";

/// A pod turned away by every node kelp can tell of: no place, or unknown when a node
/// was left only for an anti-affinity term whose namespaces kelp cannot tell (the rest
/// explained as ever).
fn miss(t: &Tally, others: usize, requests: &Resources, zone: Option<&str>) -> Miss {
    if t.unsure == 0 {
        return Miss::No(explain(t, others, requests, zone));
    }
    let mut why = format!(
        "{} may or may not take it: a pod there has required anti-affinity that {UNKNOWN_NAMESPACES}",
        count(t.unsure)
    );
    if others > t.unsure {
        why.push_str("; ");
        why.push_str(&explain(t, others - t.unsure, requests, zone));
    }
    Miss::Unknown(why)
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
    fn the_pods_of_one_node_share_the_room_they_move_to() {
        // 1 cpu free on b: the first 600m pod takes it, the second finds 400m left.
        let p = plan(
            &format!(
                "{}{}{}{}",
                node("a", "4", ""),
                node("b", "1", ""),
                pod("w1", "a", "600m", ""),
                pod("w2", "a", "600m", "")
            ),
            "a",
        );
        assert_eq!((p.placed, p.misses.len()), (1, 1), "{p:?}");
        assert!(
            p.misses[0]
                .why
                .contains("cpu 600m asked, at most 400m free"),
            "{p:?}"
        );
        // Room for one more pod on c, CPU to spare: the second pod has no slot left.
        let one_slot = crate::testing::node("c")
            .label("kubernetes.io/hostname", "c")
            .allocatable("8", "8Gi", "1")
            .ready()
            .yaml();
        let p = plan(
            &format!(
                "{}{one_slot}{}{}",
                node("a", "4", ""),
                pod("w1", "a", "100m", ""),
                pod("w2", "a", "100m", "")
            ),
            "a",
        );
        assert_eq!((p.placed, p.misses.len()), (1, 1), "{p:?}");
        assert!(p.misses[0].why.contains("pods"), "{p:?}");
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
    fn a_pods_own_preferred_anti_affinity_holds_first_and_another_pods_never() {
        // w1 on a and w2 on b prefer not to share a hostname with app=web: each would fit
        // beside the other, but Karpenter holds a pod to its own preference and puts it on
        // a new node first.
        let prefer = "  affinity: {podAntiAffinity: {preferredDuringSchedulingIgnoredDuringExecution: [{weight: 100, podAffinityTerm: {topologyKey: kubernetes.io/hostname, labelSelector: {matchLabels: {app: web}}}}]}}";
        let mutual = format!(
            "{}{}{}{}",
            node("a", "4", ""),
            node("b", "4", ""),
            pod("w1", "a", "1", prefer),
            pod("w2", "b", "1", prefer),
        );
        let p = plan(&mutual, "a");
        assert_eq!((p.placed, p.misses.len()), (0, 1), "{p:?}");
        assert_eq!(p.preferring, ["shop/w1"]);
        assert!(
            p.misses[0].why.contains("preferred pod anti-affinity")
                && p.misses[0].why.contains("fit on b without"),
            "{p:?}"
        );
        // Only w2 prefers: w1 moves beside it (another pod's preference keeps nothing out),
        // and w2 is held off a.
        let one = format!(
            "{}{}{}{}",
            node("a", "4", ""),
            node("b", "4", ""),
            pod("w1", "a", "1", ""),
            pod("w2", "b", "1", prefer),
        );
        assert!(plan(&one, "a").fits());
        assert_eq!(plan(&one, "b").preferring, ["shop/w2"]);
        // A pod that fits nowhere even without its preference is a plain miss.
        let full = format!(
            "{}{}{}{}",
            node("a", "4", ""),
            node("b", "1", ""),
            pod("w1", "a", "1", prefer),
            pod("w2", "b", "1", prefer),
        );
        let p = plan(&full, "a");
        assert!(p.preferring.is_empty() && p.misses.len() == 1, "{p:?}");
        assert!(p.misses[0].why.contains("cpu"), "{p:?}");
        // Karpenter told to ignore preferences (its controller's PREFERENCE_POLICY): w1
        // moves beside w2.
        let controller = "\n---\napiVersion: v1\nkind: Pod\nmetadata: {name: karpenter-0, namespace: kube-system, labels: {app.kubernetes.io/name: karpenter}}\nspec:\n  nodeName: a\n  containers: [{name: controller, image: public.ecr.aws/karpenter/controller:1.15.0, env: [{name: PREFERENCE_POLICY, value: Ignore}, {name: OTHER, value: x}]}]\nstatus: {phase: Running}\n";
        let c = cluster(&format!("{mutual}{controller}"));
        assert_eq!(c.karpenter_setting("PREFERENCE_POLICY"), Some("Ignore"));
        assert_eq!(
            c.karpenter_setting("OTHER"),
            None,
            "only Karpenter's settings are kept"
        );
        let room = Room::new(&c, chrono::Utc::now());
        let pods: Vec<&Pod> = c.pods_on("a").filter(|p| p.metadata.name == "w1").collect();
        assert!(room.moves(&c.nodes["a"], &pods).fits());
    }

    #[test]
    fn a_prefer_no_schedule_taint_holds_first_and_for_good_without_a_pool_that_carries_one() {
        // b has room but a PreferNoSchedule taint w1 does not tolerate. Karpenter's
        // `ToleratesPod` checks every effect; it tolerates such taints only as its last
        // relaxation, and only when some NodePool's template carries one.
        let tainted = "\n---\napiVersion: v1\nkind: Node\nmetadata: {name: b, labels: {kubernetes.io/hostname: b, topology.kubernetes.io/zone: z-b}}\nspec:\n  taints: [{key: batch, value: only, effect: PreferNoSchedule}]\nstatus:\n  allocatable: {cpu: \"4\", memory: 8Gi, pods: \"110\"}\n  conditions: [{type: Ready, status: \"True\"}]\n";
        let yaml = format!("{}{tainted}{}", node("a", "4", ""), pod("w1", "a", "1", ""));
        let p = plan(&yaml, "a");
        assert!(p.preferring.is_empty() && p.misses.len() == 1, "{p:?}");
        assert!(p.misses[0].why.contains("taint"), "{p:?}");
        // A pool whose template carries one: the taint is a preference, broken last.
        let pool = "\n---\napiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: batch}\nspec:\n  template:\n    spec:\n      nodeClassRef: {group: karpenter.kwok.sh, kind: KWOKNodeClass, name: default}\n      requirements: []\n      taints: [{key: batch, value: only, effect: PreferNoSchedule}]\n";
        let p = plan(&format!("{yaml}{pool}"), "a");
        assert_eq!(p.preferring, ["shop/w1"], "{p:?}");
        assert!(
            p.misses[0]
                .why
                .contains("PreferNoSchedule taint batch=only:PreferNoSchedule of b")
                && p.misses[0].why.contains("fit on b without"),
            "{p:?}"
        );
        // Tolerated, it is no taint at all.
        let tolerates = "  tolerations: [{key: batch, operator: Exists}]";
        assert!(plan(
            &format!(
                "{}{tainted}{}",
                node("a", "4", ""),
                pod("w1", "a", "1", tolerates)
            ),
            "a"
        )
        .fits());
        // A NoSchedule-free node beside it takes the pod first, with nothing broken.
        assert!(plan(&format!("{yaml}{pool}{}", node("c", "2", "")), "a").fits());
    }

    #[test]
    fn preferred_node_affinity_and_schedule_anyway_spread_hold_first_too() {
        // w1 prefers disk=ssd: b has room but no ssd, so Karpenter would try a new node.
        let ssd = "  affinity: {nodeAffinity: {preferredDuringSchedulingIgnoredDuringExecution: [{weight: 1, preference: {matchExpressions: [{key: disk, operator: In, values: [ssd]}]}}]}}";
        let yaml = format!(
            "{}{}{}",
            node("a", "4", ""),
            node("b", "4", ""),
            pod("w1", "a", "1", ssd)
        );
        let p = plan(&yaml, "a");
        assert_eq!(p.preferring, ["shop/w1"], "{p:?}");
        assert!(p.misses[0].why.contains("preferred node affinity"), "{p:?}");
        let with_ssd = format!("{yaml}{}", node("c", "4", ", disk: ssd"));
        assert!(plan(&with_ssd, "a").fits());
        // ScheduleAnyway hostname spread: on b (which has w2) the skew would be 2 against
        // c; c is too small, so only breaking the spread places w1.
        let spread = "  topologySpreadConstraints: [{maxSkew: 1, topologyKey: kubernetes.io/hostname, whenUnsatisfiable: ScheduleAnyway, labelSelector: {matchLabels: {app: web}}}]";
        let yaml = format!(
            "{}{}{}{}{}",
            node("a", "4", ""),
            node("b", "4", ""),
            node("c", "500m", ""),
            pod("w1", "a", "1", spread),
            pod("w2", "b", "1", ""),
        );
        let p = plan(&yaml, "a");
        assert_eq!(p.preferring, ["shop/w1"], "{p:?}");
        assert!(p.misses[0].why.contains("ScheduleAnyway"), "{p:?}");
        // Preferred pod affinity: held to first, and kelp does not evaluate pod affinity.
        let together = "  affinity: {podAffinity: {preferredDuringSchedulingIgnoredDuringExecution: [{weight: 1, podAffinityTerm: {topologyKey: kubernetes.io/hostname, labelSelector: {matchLabels: {app: db}}}}]}}";
        let yaml = format!(
            "{}{}{}",
            node("a", "4", ""),
            node("b", "4", ""),
            pod("w1", "a", "1", together)
        );
        let p = plan(&yaml, "a");
        assert_eq!((p.unknown.len(), p.placed), (1, 0), "{p:?}");
        assert!(p.unknown[0].why.contains("preferred pod affinity"), "{p:?}");
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
        // ScheduleAnyway places it on b, but only once Karpenter breaks the preference: it
        // tries a new node first.
        let p = plan(&yaml.replace("DoNotSchedule", "ScheduleAnyway"), "a");
        assert_eq!(p.preferring, ["shop/w1"], "{p:?}");
    }

    /// A node read alone says what the whole room says of it: its place (a free-CPU
    /// target, or none when it is cordoned) and whether it guards a domain (a pod there with
    /// a required anti-affinity term over a key the node has; a term over a key it lacks
    /// guards nothing).
    #[test]
    fn a_node_read_alone_stands_where_the_whole_room_puts_it() {
        let guard = "  affinity: {podAntiAffinity: {requiredDuringSchedulingIgnoredDuringExecution: [{topologyKey: kubernetes.io/hostname, labelSelector: {matchLabels: {app: web}}}]}}";
        let keyless = guard.replace("kubernetes.io/hostname", "example.com/rack");
        let yaml = format!(
            "{}{}{}{}{}{}{}",
            node("a", "4", ""),
            node("b", "8", ""),
            node("c", "2", "").replacen("status:", "spec: {unschedulable: true}\nstatus:", 1),
            node("d", "6", ""),
            pod("w1", "a", "1", ""),
            pod("db", "b", "1", guard),
            pod("rk", "d", "2", &keyless),
        );
        let c = cluster(&yaml);
        let now = Utc::now();
        let room = Room::new(&c, now);
        let settling = settling(&c);
        let guarded: Vec<&str> = room.guarded().collect();
        assert_eq!(guarded, ["b"]);
        let mut cache = RoomCache::default();
        for (i, n) in c.nodes.values().enumerate() {
            let name = n.metadata.name.as_str();
            let (place, guards) = place_of(&c, n, settling[i], &mut cache);
            assert_eq!(place, room.places_in_node_order()[i], "{name}");
            assert_eq!(guards, guarded.contains(&name), "{name}");
        }
        assert_eq!(room.places_in_node_order()[2], None, "c is cordoned");
        assert_eq!(room.places_in_node_order()[3], Some(4.0), "d: 6 less 2");
    }

    /// A term's namespace selector is read where kelp needs no Namespace to read it (an
    /// empty one picks all; one on `kubernetes.io/metadata.name` picks those names), as
    /// Karpenter's `buildNamespaceList` reads it; any other makes the answer unknown, never
    /// "fits" and never "blocked".
    #[test]
    fn an_anti_affinity_namespace_selector_is_read_or_unknown() {
        let term = |namespaces: &str| {
            format!("  affinity: {{podAntiAffinity: {{requiredDuringSchedulingIgnoredDuringExecution: [{{topologyKey: kubernetes.io/hostname, labelSelector: {{matchLabels: {{app: web}}}}, namespaceSelector: {namespaces}}}]}}}}")
        };
        // w1 (namespace shop) leaves a; b holds a pod whose term may keep it out.
        let guarded = |namespaces: &str, more: &str| {
            let yaml = format!(
                "{}{}{}{}{more}",
                node("a", "4", ""),
                node("b", "8", ""),
                pod("w1", "a", "1", ""),
                pod("db", "b", "1", &term(namespaces)).replacen("app: web", "app: db", 1),
            );
            plan(&yaml, "a")
        };
        let by_name = |op: &str, names: &str| {
            format!("{{matchExpressions: [{{key: kubernetes.io/metadata.name, operator: {op}, values: [{names}]}}]}}")
        };
        for picks_shop in [
            "{}".to_string(),
            "{matchLabels: {kubernetes.io/metadata.name: shop}}".into(),
            by_name("In", "other, shop"),
        ] {
            let p = guarded(&picks_shop, "");
            assert_eq!(
                (p.misses.len(), p.unknown.len()),
                (1, 0),
                "{picks_shop}: {p:?}"
            );
            assert!(p.misses[0].why.contains("anti-affinity"), "{p:?}");
        }
        let p = guarded(&by_name("In", "other"), "");
        assert!(p.fits(), "shop is not picked: {p:?}");
        // A selector on another label, or another operator: kelp cannot tell.
        for unread in [
            "{matchLabels: {team: x}}".to_string(),
            by_name("NotIn", "other"),
        ] {
            let p = guarded(&unread, "");
            assert_eq!((p.misses.len(), p.unknown.len()), (0, 1), "{unread}: {p:?}");
            assert!(
                p.unknown[0]
                    .why
                    .starts_with("1 node may or may not take it: a pod there"),
                "{p:?}"
            );
            // A node it can tell of takes the pod: it fits.
            let p = guarded(&unread, &node("c", "8", ""));
            assert!(p.fits(), "{unread}: {p:?}");
        }
        // The moving pod's own term, picking by another label: unknown at once.
        let yaml = format!(
            "{}{}{}",
            node("a", "4", ""),
            node("b", "8", ""),
            pod("w1", "a", "1", &term("{matchLabels: {team: x}}")),
        );
        let p = plan(&yaml, "a");
        assert_eq!((p.misses.len(), p.unknown.len()), (0, 1), "{p:?}");
        assert!(p.unknown[0].why.contains("kelp does not read"), "{p:?}");
        // Its own term picking shop by name keeps it off b, where another web pod runs.
        let yaml = format!(
            "{}{}{}{}",
            node("a", "4", ""),
            node("b", "8", ""),
            pod(
                "w1",
                "a",
                "1",
                &term("{matchLabels: {kubernetes.io/metadata.name: shop}}")
            ),
            pod("w2", "b", "1", ""),
        );
        let p = plan(&yaml, "a");
        assert_eq!((p.misses.len(), p.unknown.len()), (1, 0), "{p:?}");
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
