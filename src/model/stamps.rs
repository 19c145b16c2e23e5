//! Change stamps: which parts of the model changed, and when, counted in changes rather
//! than in time. Every `apply_*`/`delete_*`/`reset_*` of [`super::Cluster`] stamps what it
//! touched with the next number; an incremental reader (`kelp serve`'s analysis) keeps the
//! stamp it computed a result at and reuses the result while nothing it read has a newer
//! stamp. A write that goes around those methods (a public field set directly: the
//! catalogue, Karpenter's metrics, the API discovery) must call
//! [`super::Cluster::touch_all`]. The last changes are also kept by name, in order
//! ([`Stamps::since`]), for a reader that would otherwise ask each object whether it
//! changed.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};

use super::shared::{FastMap, FastSet};

/// Tells one model from another: a reader must not compare stamps across models.
static EPOCHS: AtomicU64 = AtomicU64::new(1);

#[derive(Debug)]
pub struct Stamps {
    epoch: u64,
    last: u64,
    /// Something every node's analysis reads: a node class, a DaemonSet, a CRD, the
    /// catalogue, the metrics, a relist.
    global: u64,
    /// Any NodePool, and by name: what a pending pod's verdicts read (every pool), and a
    /// node's state (its own pool, or every pool where it priced a replacement). A pool's
    /// change is not global: the room and the nodes of other pools stand.
    pools: u64,
    pool: FastMap<String, u64>,
    /// Any node, NodeClaim or bound pod: what the free room on the nodes is made of
    /// (a pod's change that keeps its room the same, [`super::Cluster::apply_pod`], leaves
    /// it).
    bound: u64,
    /// Any node or NodeClaim (or anything global): what zone spread reads of the nodes.
    zones: u64,
    /// By namespace: a bound pod's change there that moves its room (what zone spread
    /// counts of a namespace's pods).
    bound_in: FastMap<String, u64>,
    /// A bound pod with required anti-affinity on a key other than the hostname (come,
    /// changed, gone), or the zone of a node running one: what every pending pod's
    /// verdicts read of the running pods' anti-affinity.
    guards: u64,
    /// An unbound pod came, changed or went (bound, or deleted): what a pending pod's
    /// verdicts read of the other pending pods Karpenter places in the same batch.
    pending: u64,
    /// By node name: the node, a pod bound to it, a NodeClaim naming it.
    nodes: FastMap<String, u64>,
    /// By NodeClaim name.
    claims: FastMap<String, u64>,
    /// By the name of the object the events are about.
    events: FastMap<String, u64>,
    /// Any event.
    events_any: u64,
    /// By namespace: the PodDisruptionBudgets there.
    pdbs: FastMap<String, u64>,
    /// Any pod a DaemonSet owns (come, changed, gone).
    daemon_pods: u64,
    /// The last [`JOURNAL`] changes by name, oldest first, for a reader that asks which
    /// objects changed since its stamp rather than asking of each object.
    journal: VecDeque<(u64, Touched)>,
    /// The stamp of the newest change the journal let go of.
    dropped: u64,
}

/// How many changes the journal keeps: a reader further behind looks at everything.
pub const JOURNAL: usize = 4096;

/// What one change touched, by name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Touched {
    Pool(String),
    /// The node, or a pod bound to it.
    Node(String),
    Claim(String),
    /// The events about an object of this name.
    Events(String),
    /// The PodDisruptionBudgets of a namespace.
    Pdbs(String),
    /// An unbound pod (namespace, name): come, changed, or unbound again. Its going (bound
    /// or deleted) a reader tells by its absence from [`super::Cluster::unbound_pods`].
    Unbound(String, String),
}

impl Default for Stamps {
    fn default() -> Self {
        Stamps {
            epoch: EPOCHS.fetch_add(1, Ordering::Relaxed),
            last: 0,
            global: 0,
            bound: 0,
            pools: 0,
            pool: FastMap::default(),
            zones: 0,
            bound_in: FastMap::default(),
            guards: 0,
            pending: 0,
            nodes: FastMap::default(),
            claims: FastMap::default(),
            events: FastMap::default(),
            events_any: 0,
            pdbs: FastMap::default(),
            daemon_pods: 0,
            journal: VecDeque::new(),
            dropped: 0,
        }
    }
}

impl Stamps {
    fn next(&mut self) -> u64 {
        self.last += 1;
        self.last
    }

    fn journal(&mut self, stamp: u64, touched: Touched) {
        if self.journal.len() == JOURNAL {
            if let Some((s, _)) = self.journal.pop_front() {
                self.dropped = s;
            }
        }
        self.journal.push_back((stamp, touched));
    }

    /// What changed after stamp `at`, oldest first; none when the journal no longer
    /// reaches back that far, or something global changed since (anything may have).
    pub fn since(&self, at: u64) -> Option<impl Iterator<Item = &Touched>> {
        if self.global > at || self.dropped > at {
            return None;
        }
        let first = self.journal.partition_point(|(s, _)| *s <= at);
        Some(self.journal.range(first..).map(|(_, t)| t))
    }

    /// The nodes changed after stamp `at` (a node, a pod bound to it, a claim naming it),
    /// oldest first and as often as they changed; none when the journal does not tell
    /// ([`Stamps::since`]).
    pub fn nodes_since(&self, at: u64) -> Option<impl Iterator<Item = &str>> {
        Some(self.since(at)?.filter_map(|t| match t {
            Touched::Node(n) => Some(n.as_str()),
            _ => None,
        }))
    }

    /// Which model these stamps belong to.
    pub fn epoch(&self) -> u64 {
        self.epoch
    }

    /// The newest stamp: a result computed now is current as of it.
    pub fn last(&self) -> u64 {
        self.last
    }

    pub fn global(&self) -> u64 {
        self.global
    }

    /// The newest change of any NodePool, or of anything global.
    pub fn pools(&self) -> u64 {
        self.pools.max(self.global)
    }

    /// The newest change of NodePool `name` (its creation and deletion included), or of
    /// anything global.
    pub fn pool(&self, name: &str) -> u64 {
        self.pool.get(name).copied().unwrap_or(0).max(self.global)
    }

    pub fn bound(&self) -> u64 {
        self.bound
    }

    /// The newest change of any node or NodeClaim (or anything global): what zone
    /// spread reads of the nodes.
    pub fn zones(&self) -> u64 {
        self.zones
    }

    /// The newest change of what zone spread counts for a pod of `namespace`: any node
    /// or claim, or a bound pod of that namespace that moved room.
    pub fn spread(&self, namespace: &str) -> u64 {
        self.bound_in
            .get(namespace)
            .copied()
            .unwrap_or(0)
            .max(self.zones)
    }

    /// The newest change of a bound pod with required anti-affinity on a key other than
    /// the hostname, or of the zone of a node running one (or anything global).
    pub fn guards(&self) -> u64 {
        self.guards.max(self.global)
    }

    /// The newest change of the unbound pods (one came, changed, or went), or anything
    /// global.
    pub fn pending(&self) -> u64 {
        self.pending.max(self.global)
    }

    pub fn node(&self, name: &str) -> u64 {
        self.nodes.get(name).copied().unwrap_or(0)
    }

    pub fn claim(&self, name: &str) -> u64 {
        self.claims.get(name).copied().unwrap_or(0)
    }

    pub fn events(&self, about: &str) -> u64 {
        self.events.get(about).copied().unwrap_or(0)
    }

    /// The newest change of any event.
    pub fn events_any(&self) -> u64 {
        self.events_any
    }

    /// The last change of a pod a DaemonSet owns, or of anything global.
    pub fn daemon_pods(&self) -> u64 {
        self.daemon_pods.max(self.global)
    }

    pub fn pdbs(&self, namespace: &str) -> u64 {
        self.pdbs.get(namespace).copied().unwrap_or(0)
    }

    pub(super) fn touch_all(&mut self) {
        self.global = self.next();
        self.bound = self.global;
        self.zones = self.global;
    }

    pub(super) fn touch_pool(&mut self, name: &str) {
        let s = self.next();
        self.pools = s;
        set(&mut self.pool, name, s);
        self.journal(s, Touched::Pool(name.to_string()));
    }

    /// A node running a pod with required anti-affinity on a key other than the hostname
    /// came, went, or changed its zone.
    pub(super) fn touch_guards(&mut self) {
        self.guards = self.next();
    }

    pub(super) fn touch_node(&mut self, name: &str) {
        let s = self.next();
        self.bound = s;
        self.zones = s;
        set(&mut self.nodes, name, s);
        self.journal(s, Touched::Node(name.to_string()));
    }

    /// A change of a pod of `namespace` on node `name`: the node's stamp, and the room's
    /// (and the namespace's) when `room`. A change that leaves the free room as it was (a
    /// pod's phase between Pending and Running, its annotations) leaves the room's stamp.
    /// A pod that `guards` (required anti-affinity on a key other than the hostname) moves
    /// the guards' stamp too.
    pub(super) fn touch_pod_on(&mut self, name: &str, namespace: &str, room: bool, guards: bool) {
        let s = self.next();
        if room {
            self.bound = s;
            set(&mut self.bound_in, namespace, s);
            if guards {
                self.guards = s;
            }
        }
        set(&mut self.nodes, name, s);
        self.journal(s, Touched::Node(name.to_string()));
    }

    pub(super) fn touch_claim(&mut self, name: &str) {
        let s = self.next();
        self.bound = s;
        self.zones = s;
        set(&mut self.claims, name, s);
        self.journal(s, Touched::Claim(name.to_string()));
    }

    pub(super) fn touch_events(&mut self, about: &str) {
        let s = self.next();
        self.events_any = s;
        set(&mut self.events, about, s);
        self.journal(s, Touched::Events(about.to_string()));
    }

    /// A pod that is unbound now changed: nothing else reads it but the pending pods'
    /// diagnoses, which ask the journal.
    pub(super) fn touch_unbound(&mut self, namespace: &str, name: &str) {
        let s = self.next();
        self.pending = s;
        self.journal(s, Touched::Unbound(namespace.to_string(), name.to_string()));
    }

    /// A pod a DaemonSet owns changed; its node is stamped besides, where it is bound.
    pub(super) fn touch_daemon_pod(&mut self) {
        self.daemon_pods = self.next();
    }

    pub(super) fn touch_pdbs(&mut self, namespace: &str) {
        let s = self.next();
        set(&mut self.pdbs, namespace, s);
        self.journal(s, Touched::Pdbs(namespace.to_string()));
    }

    /// Forget the per-object stamps once they are mostly of objects that are gone (they
    /// would only grow as pods and events come and go): a global change, so every reader
    /// starts over once, is the price. `live` is how many objects each map could name.
    pub(super) fn prune(&mut self, live_nodes: usize, live_claims: usize, live_events: usize) {
        let stale = |len: usize, live: usize| len > 1024 && len > 2 * live;
        if stale(self.nodes.len(), live_nodes)
            || stale(self.claims.len(), live_claims)
            || stale(self.events.len(), live_events)
        {
            self.reset();
        }
    }

    /// Forget every per-object stamp: a global change makes every reader start over.
    pub(super) fn reset(&mut self) {
        self.nodes.clear();
        self.claims.clear();
        self.events.clear();
        self.pdbs.clear();
        self.pool.clear();
        self.bound_in.clear();
        self.journal.clear();
        self.touch_all();
    }
}

/// A value worked out per node from the node and its pods, kept between an incremental
/// reader's passes: reused while neither the node's stamp nor the global one (a relist
/// forgets the per-node stamps) is newer than it, and let go with the nodes. Whether a
/// node's stamp is newer is read from the journal where it reaches: a node it does not
/// name since the model's last change seen before is not looked up.
#[derive(Debug)]
pub struct PerNode<T> {
    epoch: u64,
    nodes: FastMap<String, (u64, T)>,
    /// The model's newest stamp when last asked, and the one before it with the nodes the
    /// journal names between the two (None when it does not reach back).
    seen: u64,
    since: u64,
    touched: Option<FastSet<String>>,
}

impl<T> Default for PerNode<T> {
    fn default() -> Self {
        PerNode {
            epoch: 0,
            nodes: FastMap::default(),
            seen: 0,
            since: 0,
            touched: None,
        }
    }
}

impl<T> PerNode<T> {
    /// Node `name`'s value, worked out by `f` unless the kept one still holds.
    pub fn get_or_insert_with(&mut self, st: &Stamps, name: &str, f: impl FnOnce() -> T) -> &T {
        self.get_or_refresh_with(st, name, |_, _| true, f).0
    }

    /// As [`PerNode::get_or_insert_with`], for a value that reads more than the node and
    /// its pods: a kept one the node's stamps leave current holds only if `still` says so
    /// too (given the stamp it was worked out at). Also says whether it was kept.
    pub fn get_or_refresh_with(
        &mut self,
        st: &Stamps,
        name: &str,
        still: impl FnOnce(u64, &T) -> bool,
        f: impl FnOnce() -> T,
    ) -> (&T, bool) {
        if self.epoch != st.epoch() {
            *self = PerNode {
                epoch: st.epoch(),
                ..PerNode::default()
            };
        }
        if self.seen != st.last() {
            // The nodes changed since the last model this was asked about (none to tell
            // apart while nothing is kept: a full pass's room, a first pass).
            let kept = !self.nodes.is_empty();
            self.touched = st
                .nodes_since(self.seen)
                .filter(|_| kept)
                .map(|changed| changed.map(str::to_string).collect());
            (self.since, self.seen) = (self.seen, st.last());
        }
        let (since, touched) = (self.since, self.touched.as_ref());
        // Current as of `since` and not changed after it, or not changed after its own stamp.
        let unchanged = |at: u64| match touched {
            Some(t) if at >= since => !t.contains(name),
            _ => st.node(name) <= at,
        };
        // A value that still holds is as current as one worked out now: it is stamped so.
        let kept = self.nodes.get_mut(name).is_some_and(|(at, v)| {
            let holds = st.global() <= *at && unchanged(*at) && still(*at, v);
            if holds {
                *at = st.last();
            }
            holds
        });
        if !kept {
            self.nodes.insert(name.to_string(), (st.last(), f()));
        }
        (&self.nodes[name].1, kept)
    }

    /// Let go of the nodes `live` no longer names, once more are kept than it has.
    pub fn retain_nodes<V>(&mut self, live: &std::collections::BTreeMap<String, V>) {
        if self.nodes.len() > live.len() {
            self.nodes.retain(|name, _| live.contains_key(name));
        }
    }
}

fn set(map: &mut FastMap<String, u64>, key: &str, stamp: u64) {
    match map.get_mut(key) {
        Some(s) => *s = stamp,
        None => {
            map.insert(key.to_string(), stamp);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A node changed while nobody asked for it is worked out again when next asked, though
    /// the journal since the last ask does not name it.
    #[test]
    fn a_node_changed_while_nobody_asked_is_worked_out_again() {
        let mut st = Stamps::default();
        let mut per: PerNode<u64> = PerNode::default();
        let ask = |per: &mut PerNode<u64>, st: &Stamps, name: &str| {
            *per.get_or_insert_with(st, name, || st.last())
        };
        st.touch_node("a");
        st.touch_node("b");
        assert_eq!(ask(&mut per, &st, "a"), 2);
        st.touch_node("a");
        st.touch_node("b");
        assert_eq!(ask(&mut per, &st, "b"), 4, "b changed");
        st.touch_node("b");
        assert_eq!(ask(&mut per, &st, "a"), 5, "a changed before the last ask");
        assert_eq!(ask(&mut per, &st, "b"), 5, "b changed since");
        st.touch_pdbs("ns");
        assert_eq!(ask(&mut per, &st, "a"), 5, "nothing of a changed");
        assert_eq!(ask(&mut per, &st, "b"), 5);
    }
}
