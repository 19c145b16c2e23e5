//! The Cluster index: every trimmed object by kind, with apply / delete / reset per kind
//! (the same operations a watch stream drives) and the joins the analysis makes:
//! pods by node, nodes and claims by pool, events by the object they are about.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use chrono::{DateTime, Utc};

use super::container::Container;
use super::controller::{ApiInfo, ControllerMetrics};
use super::event::Event;
use super::kinds::*;
use super::meta::{Meta, OwnerRef};
use super::object_kind::ObjectKind;
use super::pod::*;
use super::shared::{FastMap, FastSet, Interner, Shared, Strings};

/// `namespace/name` for namespaced objects.
pub type ObjKey = (String, String);

/// How many deleted pods' nodes the model remembers ([`Cluster::node_of_gone_pod`]).
pub const GONE_PODS: usize = 4096;

/// The model. All fields are public for reading; mutate through the `apply_*`/`delete_*`
/// methods so the joins stay right.
#[derive(Debug, Default)]
pub struct Cluster {
    pub nodepools: BTreeMap<String, NodePool>,
    /// Shared with the indexes by node and provider ID ([`Cluster::nodeclaim_for_node`]):
    /// change it through `apply_nodeclaim`/`delete_nodeclaim` only, or those go stale.
    pub nodeclaims: BTreeMap<String, Arc<NodeClaim>>,
    /// Keyed by (kind, name): EC2NodeClass and KWOKNodeClass share a namespace of names.
    pub nodeclasses: BTreeMap<(String, String), NodeClass>,
    pub nodes: BTreeMap<String, Node>,
    pub pods: BTreeMap<ObjKey, Pod>,
    pub daemonsets: BTreeMap<ObjKey, DaemonSet>,
    pub pdbs: BTreeMap<ObjKey, PodDisruptionBudget>,
    /// By event id. Unordered: analysis that iterates it must not depend on the order.
    pub events: FastMap<String, Arc<Event>>,
    pub crds: BTreeMap<String, Crd>,
    pub api: ApiInfo,
    pub metrics: Option<ControllerMetrics>,
    /// An instance-type catalogue given to kelp (`--catalog`, or embedded in a dump);
    /// analysis falls back on Karpenter's metrics and the kwok built-in types.
    pub catalog: Option<std::sync::Arc<super::catalog::Catalog>>,
    /// When a `kelp snapshot` dump was captured.
    pub captured_at: Option<DateTime<Utc>>,
    /// The history a `kelp snapshot --history` dump carries (rows as JSON, opaque here).
    pub history: Option<Arc<str>>,
    /// Why `kelp serve --state-dir` is not keeping history right now (a full disk, a
    /// read-only directory), as its writer said it; set by serve, never by a source.
    pub history_problem: Option<String>,
    /// Pods by the node they are bound to, sorted by (namespace, name). A `Pod` is a
    /// shared handle: this holds the same pods as `pods`, not copies.
    pods_by_node: FastMap<Shared<str>, Vec<Pod>>,
    /// The pods bound to no node, the pods of DaemonSets, and those labelled as
    /// Karpenter's controller (handles to the same pods as `pods`): the few a check looks
    /// for among all pods, so it need not read them all.
    unbound: BTreeMap<ObjKey, Pod>,
    daemon_pods: BTreeMap<ObjKey, Pod>,
    controller_pods: BTreeMap<ObjKey, Pod>,
    /// The last pods deleted while bound, with their node (at most [`GONE_PODS`]): an
    /// eviction's event often comes after its pod is gone, and names no node.
    gone_pods: std::collections::VecDeque<(ObjKey, String)>,
    /// The parts objects hold alike, shared (see [`super::shared`]).
    shared: Pools,
    /// The NodeClaims (shared with `nodeclaims`) by `status.nodeName` and by
    /// `status.providerID`.
    claims_by_node: FastMap<String, Arc<NodeClaim>>,
    claims_by_provider: FastMap<String, Arc<NodeClaim>>,
    /// Node and NodeClaim names by their `karpenter.sh/nodepool` label.
    nodes_by_pool: FastMap<String, BTreeSet<String>>,
    claims_by_pool: FastMap<String, BTreeSet<String>>,
    /// Event ids by the name of the object they are about (kind and namespace are checked on lookup).
    /// The events about each object, by its name: shared with `events`, so an object's
    /// events are read without looking each up by id.
    events_by_object: FastMap<String, Vec<Arc<Event>>>,
    /// What changed, and in which order (see [`super::stamps`]).
    stamps: super::stamps::Stamps,
    /// While a bulk load runs ([`Cluster::begin_load`] until [`Cluster::compact`]): the
    /// nodes whose pod lists took a pod at their end out of order, to be sorted once when
    /// the load ends. Finding each pod's place as it came cost a cache miss a comparison.
    loading: Option<FastSet<Shared<str>>>,
}

/// The interning tables behind [`Cluster`]'s `apply_*` methods.
#[derive(Debug, Default)]
struct Pools {
    strings: Strings,
    maps: Interner<std::collections::BTreeMap<String, String>>,
    owners: Interner<Vec<OwnerRef>>,
    scheduling: Interner<SchedulingSpec>,
    affinities: Interner<Affinity>,
    tolerations: Interner<Vec<k8s_openapi::api::core::v1::Toleration>>,
    containers: Interner<Vec<Container>>,
    taints: Interner<Vec<k8s_openapi::api::core::v1::Taint>>,
    resources: Interner<ResourceList>,
    requirements: Interner<Vec<crate::karpenter::requirements::Requirement>>,
}

impl Pools {
    /// Know each table's values by address during a bulk load ([`Interner::by_address`]).
    fn by_address(&mut self, on: bool) {
        self.maps.by_address(on);
        self.owners.by_address(on);
        self.scheduling.by_address(on);
        self.affinities.by_address(on);
        self.tolerations.by_address(on);
        self.containers.by_address(on);
        self.taints.by_address(on);
        self.resources.by_address(on);
        self.requirements.by_address(on);
    }
    fn meta(&mut self, m: &mut Meta) {
        if let Some(ns) = &mut m.namespace {
            self.strings.intern(ns);
        }
        self.maps.intern(&mut m.labels);
        self.maps.intern(&mut m.annotations);
        self.owners.intern(&mut m.owner_references);
        // Only a watch reads it, from the event itself (see `Meta::resource_version`).
        m.resource_version = String::new();
    }
    fn conditions(&mut self, conditions: &mut [super::meta::Condition]) {
        for c in conditions.iter_mut() {
            self.strings.intern(&mut c.type_);
            self.strings.intern(&mut c.status);
        }
    }
    fn pod(&mut self, p: &mut Pod) {
        self.meta(&mut p.metadata);
        // The parts first: a new spec is then kept holding the shared parts.
        if let Some(a) = &mut p.spec.affinity {
            self.affinities.intern(a);
        }
        if let Some(s) = Shared::get_mut(&mut p.spec.scheduling) {
            self.maps.intern(&mut s.node_selector);
            self.tolerations.intern(&mut s.tolerations);
            self.containers.intern(&mut s.containers);
            self.containers.intern(&mut s.init_containers);
        }
        self.scheduling.intern(&mut p.spec.scheduling);
        if let Some(n) = &mut p.spec.node_name {
            self.strings.intern(n);
        }
        if let Some(phase) = &mut p.status.phase {
            self.strings.intern(phase);
        }
        if let Some(n) = &mut p.status.nominated_node_name {
            self.strings.intern(n);
        }
        self.conditions(&mut p.status.conditions);
    }
    fn node(&mut self, n: &mut Node) {
        self.meta(&mut n.metadata);
        self.taints.intern(&mut n.spec.taints);
        self.resources.intern(&mut n.status.capacity);
        self.resources.intern(&mut n.status.allocatable);
        self.conditions(&mut n.status.conditions);
        n.status.conditions.shrink_to_fit();
    }
    fn nodeclaim(&mut self, c: &mut NodeClaim) {
        self.meta(&mut c.metadata);
        self.requirements.intern(&mut c.spec.requirements);
        self.taints.intern(&mut c.spec.taints);
        self.taints.intern(&mut c.spec.startup_taints);
        self.resources.intern(&mut c.status.capacity);
        self.resources.intern(&mut c.status.allocatable);
        self.conditions(&mut c.status.conditions);
        c.status.conditions.shrink_to_fit();
    }
}

/// Remove `item` from the set under `key`, dropping the set when it empties.
/// Put pod `o` in `index` or take it out.
fn set_in(index: &mut BTreeMap<ObjKey, Pod>, key: &ObjKey, o: &Pod, member: bool) {
    if member {
        match index.get_mut(key) {
            Some(p) => *p = o.clone(),
            None => {
                index.insert(key.clone(), o.clone());
            }
        }
    } else {
        index.remove(key);
    }
}

fn remove_from<K, T, Q>(index: &mut FastMap<K, BTreeSet<T>>, key: &K, item: &Q)
where
    K: std::hash::Hash + Eq,
    T: Ord + std::borrow::Borrow<Q>,
    Q: Ord + ?Sized,
{
    if let Some(set) = index.get_mut(key) {
        set.remove(item);
        if set.is_empty() {
            index.remove(key);
        }
    }
}

/// Where a pod sorts against a (namespace, name) key.
fn pod_order(p: &Pod, key: &ObjKey) -> std::cmp::Ordering {
    pod_key(p).cmp(&(key.0.as_str(), key.1.as_str()))
}

/// A pod's (namespace, name), the order of each node's pods.
fn pod_key(p: &Pod) -> (&str, &str) {
    let ns = p.metadata.namespace.as_deref().unwrap_or_default();
    (ns, p.metadata.name.as_str())
}

/// Whether a pod's new version takes the same room as the old: bound to the same node,
/// as active, asking the same (spec), and seen the same by its peers' anti-affinity and
/// spread (namespace, labels, owners). What the free room, zone counts and consolidation
/// moves read of a bound pod is all here; its phase between Pending and Running, start
/// time, annotations and conditions are not.
fn same_room(old: &Pod, new: &Pod) -> bool {
    old.spec == new.spec
        && old.finished() == new.finished()
        && old.metadata.deletion_timestamp == new.metadata.deletion_timestamp
        && old.metadata.namespace == new.metadata.namespace
        && old.metadata.labels == new.metadata.labels
        && old.metadata.owner_references == new.metadata.owner_references
}

fn obj_key(meta: &super::meta::Meta) -> ObjKey {
    meta.obj_key()
}

impl Cluster {
    /// Start a bulk load: until [`Cluster::compact`] ends it, nodes' pod lists are sorted
    /// once at the end rather than kept sorted as pods come.
    pub fn begin_load(&mut self) {
        self.loading.get_or_insert_with(Default::default);
        self.shared.by_address(true);
    }

    /// Pack the model after a bulk load (a dump, a full list): the maps of objects are
    /// rebuilt from their sorted entries, which fills their B-tree nodes (entries arrive in
    /// no order and leave them about two-thirds full), and unused shared values are dropped.
    pub fn compact(&mut self) {
        for node in self.loading.take().into_iter().flatten() {
            if let Some(on) = self.pods_by_node.get_mut(&node) {
                on.sort_by(|a, b| pod_key(a).cmp(&pod_key(b)));
            }
        }
        fn repack<K: Ord, V>(m: &mut BTreeMap<K, V>) {
            if m.len() > 11 {
                *m = std::mem::take(m).into_iter().collect();
            }
        }
        repack(&mut self.pods);
        repack(&mut self.nodes);
        repack(&mut self.nodeclaims);
        repack(&mut self.daemonsets);
        repack(&mut self.pdbs);
        self.events.shrink_to_fit();
        self.pods_by_node.values_mut().for_each(Vec::shrink_to_fit);
        self.shared.by_address(false);
        self.purge_shared();
    }

    /// Drop the shared values (label sets, pod specs, ...) no object holds any more. They
    /// are also dropped as the tables grow; this is for when a whole kind was reset.
    pub fn purge_shared(&mut self) {
        let p = &mut self.shared;
        p.maps.purge();
        p.owners.purge();
        p.scheduling.purge();
        p.affinities.purge();
        p.tolerations.purge();
        p.containers.purge();
        p.taints.purge();
        p.resources.purge();
        p.requirements.purge();
        p.strings.purge();
    }

    /// The change stamps, for a reader that reuses what it computed before.
    pub fn stamps(&self) -> &super::stamps::Stamps {
        &self.stamps
    }

    /// Say that something every reader depends on changed: for a write to a public field
    /// (the catalogue, the metrics, the API discovery), which the stamps cannot see.
    pub fn touch_all(&mut self) {
        self.stamps.touch_all();
    }

    fn prune_stamps(&mut self) {
        let live_nodes = self.nodes.len() + self.pods_by_node.len() + self.claims_by_node.len();
        let (claims, events) = (self.nodeclaims.len(), self.events_by_object.len());
        self.stamps.prune(live_nodes, claims, events);
    }

    pub fn apply_nodepool(&mut self, o: NodePool) {
        self.stamps.touch_pool(&o.metadata.name);
        self.nodepools.insert(o.metadata.name.clone(), o);
    }
    pub fn delete_nodepool(&mut self, name: &str) {
        self.stamps.touch_pool(name);
        self.nodepools.remove(name);
    }
    pub fn apply_nodeclaim(&mut self, mut o: NodeClaim) {
        self.shared.nodeclaim(&mut o);
        let name = o.metadata.name.clone();
        self.unindex_nodeclaim(&name);
        self.stamps.touch_claim(&name);
        if let Some(n) = &o.status.node_name {
            self.stamps.touch_node(n);
        }
        let o = Arc::new(o);
        if let Some(n) = &o.status.node_name {
            self.claims_by_node.insert(n.clone(), o.clone());
        }
        if let Some(p) = &o.status.provider_id {
            self.claims_by_provider.insert(p.clone(), o.clone());
        }
        if let Some(pool) = Self::pool_of(&o.metadata.labels) {
            self.claims_by_pool
                .entry(pool.to_string())
                .or_default()
                .insert(name.clone());
        }
        self.nodeclaims.insert(name, o);
    }
    pub fn delete_nodeclaim(&mut self, name: &str) {
        self.unindex_nodeclaim(name);
        self.stamps.touch_claim(name);
        self.nodeclaims.remove(name);
        self.prune_stamps();
    }
    fn unindex_nodeclaim(&mut self, name: &str) {
        let Some(old) = self.nodeclaims.get(name) else {
            return;
        };
        let (node, pid) = (old.status.node_name.clone(), old.status.provider_id.clone());
        if let Some(n) = &node {
            self.stamps.touch_node(n);
        }
        let pool = Self::pool_of(&old.metadata.labels).map(str::to_string);
        // Only if the entry is still this claim's: node names are reused (AWS ip-based
        // hostnames) while an old claim terminates.
        let this = |c: &Arc<NodeClaim>| c.metadata.name == name;
        if let Some(n) = node.filter(|n| self.claims_by_node.get(n).is_some_and(this)) {
            self.claims_by_node.remove(&n);
        }
        if let Some(p) = pid.filter(|p| self.claims_by_provider.get(p).is_some_and(this)) {
            self.claims_by_provider.remove(&p);
        }
        if let Some(pool) = pool {
            remove_from(&mut self.claims_by_pool, &pool, name);
        }
    }
    pub fn apply_nodeclass(&mut self, o: NodeClass) {
        self.stamps.touch_all();
        self.nodeclasses
            .insert((o.kind.clone(), o.metadata.name.clone()), o);
    }
    pub fn delete_nodeclass(&mut self, kind: &str, name: &str) {
        self.stamps.touch_all();
        self.nodeclasses
            .remove(&(kind.to_string(), name.to_string()));
    }
    pub fn apply_node(&mut self, mut o: Node) {
        o.forget_well_known();
        self.shared.node(&mut o);
        let name = o.metadata.name.clone();
        let zone_moved = self
            .nodes
            .get(&name)
            .is_none_or(|old| old.zone() != o.zone());
        if zone_moved && self.runs_guards(&name) {
            self.stamps.touch_guards();
        }
        self.unindex_node(&name);
        self.stamps.touch_node(&name);
        if let Some(pool) = Self::pool_of(&o.metadata.labels) {
            self.nodes_by_pool
                .entry(pool.to_string())
                .or_default()
                .insert(name.clone());
        }
        self.nodes.insert(name, o);
    }
    /// Whether a pod with required anti-affinity on a key other than the hostname is
    /// bound to node `name` (its zone is then what pending pods' verdicts read).
    fn runs_guards(&self, name: &str) -> bool {
        self.pods_on(name).any(|p| p.spec.guards())
    }
    pub fn delete_node(&mut self, name: &str) {
        if self.nodes.contains_key(name) && self.runs_guards(name) {
            self.stamps.touch_guards();
        }
        self.unindex_node(name);
        self.stamps.touch_node(name);
        self.nodes.remove(name);
        self.prune_stamps();
    }
    fn unindex_node(&mut self, name: &str) {
        if let Some(pool) = self
            .nodes
            .get(name)
            .and_then(|n| Self::pool_of(&n.metadata.labels))
            .map(str::to_string)
        {
            remove_from(&mut self.nodes_by_pool, &pool, name);
        }
    }
    pub fn apply_pod(&mut self, mut o: Pod) {
        self.shared.pod(&mut o);
        let key = obj_key(&o.metadata);
        // One search of the map of all pods, for the old version and the new.
        let old = self.pods.insert(key.clone(), o.clone());
        let room = !old.as_ref().is_some_and(|old| same_room(old, &o));
        if let Some(old) = &old {
            self.unindex_pod(&key, old, room);
        }
        if let Some(node) = &o.spec.node_name {
            self.stamps
                .touch_pod_on(node, &key.0, room, o.spec.guards());
            let on = self.pods_by_node.entry(node.clone()).or_default();
            if let Some(unsorted) = &mut self.loading {
                // Its old version, if any, was taken out above: the pod is not there.
                if !unsorted.contains(node) {
                    unsorted.insert(node.clone());
                }
                on.push(o.clone());
            } else if let Err(at) = on.binary_search_by(|p| pod_order(p, &key)) {
                on.insert(at, o.clone());
            }
        }
        let unbound = o.spec.node_name.is_none();
        // Unbound now, or unbound until this change (it was bound).
        if unbound || self.unbound.contains_key(&key) {
            self.stamps.touch_unbound(&key.0, &key.1);
        }
        let daemon = o.metadata.owned_by("DaemonSet");
        if daemon || self.daemon_pods.contains_key(&key) {
            self.stamps.touch_daemon_pod();
        }
        let controller = o.metadata.label(crate::karpenter::labels::APP_NAME) == Some("karpenter");
        let settings = (controller || self.controller_pods.contains_key(&key))
            .then(|| self.karpenter_settings());
        set_in(&mut self.unbound, &key, &o, unbound);
        set_in(&mut self.daemon_pods, &key, &o, daemon);
        set_in(&mut self.controller_pods, &key, &o, controller);
        self.settings_changed(settings);
    }
    pub fn delete_pod(&mut self, namespace: &str, name: &str) {
        let key = (namespace.to_string(), name.to_string());
        if let Some(old) = self.pods.remove(&key) {
            self.unindex_pod(&key, &old, true);
            if let Some(node) = old.spec.node_name.as_deref() {
                if self.gone_pods.len() == GONE_PODS {
                    self.gone_pods.pop_front();
                }
                self.gone_pods.push_back((key.clone(), node.to_string()));
            }
        }
        if self.unbound.remove(&key).is_some() {
            self.stamps.touch_unbound(namespace, name);
        }
        if self.daemon_pods.remove(&key).is_some() {
            self.stamps.touch_daemon_pod();
        }
        let settings = self
            .controller_pods
            .contains_key(&key)
            .then(|| self.karpenter_settings());
        self.controller_pods.remove(&key);
        self.settings_changed(settings);
        self.prune_stamps();
    }
    /// Karpenter's settings change what every answer of its simulation reads (a new
    /// `PREFERENCE_POLICY`, say): anything kept from before them is stale.
    fn settings_changed(&mut self, before: Option<[Option<String>; 4]>) {
        if before.is_some_and(|b| b != self.karpenter_settings()) {
            self.stamps.touch_all();
        }
    }
    fn karpenter_settings(&self) -> [Option<String>; 4] {
        super::container::KARPENTER_SETTINGS.map(|n| self.karpenter_setting(n).map(str::to_string))
    }
    /// Take a pod's old version out of its node's list, stamping the node (and the room,
    /// if `room`).
    fn unindex_pod(&mut self, key: &ObjKey, old: &Pod, room: bool) {
        let Some(node) = old.spec.node_name.clone() else {
            return;
        };
        self.stamps
            .touch_pod_on(&node, &key.0, room, old.spec.guards());
        if let Some(on) = self.pods_by_node.get_mut(&node) {
            let at = match &self.loading {
                Some(unsorted) if unsorted.contains(&node) => {
                    on.iter().position(|p| pod_order(p, key).is_eq()).ok_or(0)
                }
                _ => on.binary_search_by(|p| pod_order(p, key)),
            };
            if let Ok(at) = at {
                on.remove(at);
            }
            if on.is_empty() {
                self.pods_by_node.remove(&node);
            }
        }
    }
    pub fn apply_daemonset(&mut self, o: DaemonSet) {
        self.stamps.touch_all();
        self.daemonsets.insert(obj_key(&o.metadata), o);
    }
    pub fn delete_daemonset(&mut self, namespace: &str, name: &str) {
        self.stamps.touch_all();
        self.daemonsets
            .remove(&(namespace.to_string(), name.to_string()));
    }
    pub fn apply_pdb(&mut self, o: PodDisruptionBudget) {
        self.stamps
            .touch_pdbs(o.metadata.namespace.as_deref().unwrap_or_default());
        self.pdbs.insert(obj_key(&o.metadata), o);
    }
    pub fn delete_pdb(&mut self, namespace: &str, name: &str) {
        self.stamps.touch_pdbs(namespace);
        self.pdbs.remove(&(namespace.to_string(), name.to_string()));
    }
    /// Keeps the event only if kelp can use it; returns whether it was kept.
    pub fn apply_event(&mut self, e: Event) -> bool {
        if !e.is_relevant() {
            return false;
        }
        self.delete_event(&e.id.clone());
        let e = Arc::new(e);
        let r = &e.regarding;
        self.stamps.touch_events(&r.name);
        self.events_by_object
            .entry(r.name.clone())
            .or_default()
            .push(e.clone());
        self.events.insert(e.id.clone(), e);
        true
    }
    pub fn delete_event(&mut self, id: &str) {
        if let Some(old) = self.events.remove(id) {
            self.stamps.touch_events(&old.regarding.name);
            let name = &old.regarding.name;
            if let Some(about) = self.events_by_object.get_mut(name) {
                about.retain(|e| e.id != id);
                if about.is_empty() {
                    self.events_by_object.remove(name);
                }
            }
            self.prune_stamps();
        }
    }
    pub fn apply_crd(&mut self, o: Crd) {
        self.stamps.touch_all();
        self.crds.insert(o.metadata.name.clone(), o);
    }
    /// Forget every pod (a watch relist replaces them all).
    pub fn reset_pods(&mut self) {
        self.stamps.reset();
        self.pods.clear();
        self.pods_by_node.clear();
        self.unbound.clear();
        self.daemon_pods.clear();
        self.controller_pods.clear();
    }
    /// Forget every event.
    pub fn reset_events(&mut self) {
        self.stamps.reset();
        self.events.clear();
        self.events_by_object.clear();
    }

    // ------------------------------------------------------------ joins

    /// Pods bound to no node, in (namespace, name) order.
    pub fn unbound_pods(&self) -> impl Iterator<Item = &Pod> + '_ {
        self.unbound.values()
    }

    /// Pods a DaemonSet owns, in (namespace, name) order.
    pub fn daemonset_pods(&self) -> impl Iterator<Item = &Pod> + '_ {
        self.daemon_pods.values()
    }

    /// The node a pod was bound to when it was deleted, for the last [`GONE_PODS`] deleted.
    pub fn node_of_gone_pod(&self, namespace: &str, name: &str) -> Option<&str> {
        self.gone_pods
            .iter()
            .rev()
            .find(|((ns, n), _)| ns == namespace && n == name)
            .map(|(_, node)| node.as_str())
    }

    /// Pods labelled `app.kubernetes.io/name=karpenter`, in (namespace, name) order.
    pub fn controller_pods(&self) -> impl Iterator<Item = &Pod> + '_ {
        self.controller_pods.values()
    }

    /// One of Karpenter's settings ([`super::container::KARPENTER_SETTINGS`]) as its
    /// running controller pods set it inline: the first found, None when none sets it.
    pub fn karpenter_setting(&self, name: &str) -> Option<&str> {
        self.controller_pods()
            .filter(|p| p.active())
            .flat_map(|p| p.spec.containers.iter())
            .flat_map(|c| c.env.iter())
            .find(|e| e.name == name)
            .map(|e| e.value.as_str())
    }

    /// Pods bound to a node, in (namespace, name) order.
    pub fn pods_on<'a>(&'a self, node: &str) -> impl Iterator<Item = &'a Pod> + 'a {
        self.pods_by_node.get(node).into_iter().flatten()
    }

    /// Pods still active on a node: not finished, not being deleted.
    pub fn active_pods_on<'a>(&'a self, node: &str) -> impl Iterator<Item = &'a Pod> + 'a {
        self.pods_on(node).filter(|p| p.active())
    }

    /// Events about an object, newest first. A non-empty `uid` must match when the event
    /// carries one (events of an earlier object with the same name are not this one's).
    pub fn events_for(
        &self,
        kind: ObjectKind,
        namespace: Option<&str>,
        name: &str,
        uid: &str,
    ) -> Vec<&Event> {
        let mut out: Vec<&Event> = self
            .events_by_object
            .get(name)
            .into_iter()
            .flatten()
            .map(|e| &**e)
            .filter(|e| e.about(kind) && e.regarding.namespace.as_deref() == namespace)
            .filter(|e| uid.is_empty() || e.regarding.uid.is_empty() || e.regarding.uid == uid)
            .collect();
        // Ties (the same instant) by id, whatever order the events arrived in.
        out.sort_by(|a, b| b.seen().cmp(&a.seen()).then_with(|| a.id.cmp(&b.id)));
        out
    }

    /// The NodeClaim behind a node: by providerID, else by status.nodeName.
    pub fn nodeclaim_for_node(&self, node: &Node) -> Option<&NodeClaim> {
        // The provider ID is unique; a node name may have been reused.
        node.spec
            .provider_id
            .as_deref()
            .and_then(|p| self.claims_by_provider.get(p))
            .or_else(|| self.claims_by_node.get(&node.metadata.name))
            .map(|c| &**c)
    }

    /// The node of a NodeClaim, if it registered.
    pub fn node_for_claim(&self, claim: &NodeClaim) -> Option<&Node> {
        claim
            .status
            .node_name
            .as_deref()
            .and_then(|n| self.nodes.get(n))
            .or_else(|| {
                let pid = claim.status.provider_id.as_deref()?;
                self.nodes
                    .values()
                    .find(|n| n.spec.provider_id.as_deref() == Some(pid))
            })
    }

    /// The NodePool a node or claim belongs to, from the `karpenter.sh/nodepool` label.
    pub fn pool_of(labels: &BTreeMap<String, String>) -> Option<&str> {
        labels
            .get(crate::karpenter::labels::NODEPOOL)
            .map(String::as_str)
    }

    /// Nodes Karpenter manages in a pool.
    pub fn nodes_in_pool<'a>(&'a self, pool: &str) -> impl Iterator<Item = &'a Node> + 'a {
        self.nodes_by_pool
            .get(pool)
            .into_iter()
            .flatten()
            .filter_map(|n| self.nodes.get(n))
    }

    /// How many nodes Karpenter manages in a pool ([`Cluster::nodes_in_pool`], counted).
    pub fn pool_node_count(&self, pool: &str) -> usize {
        self.nodes_by_pool.get(pool).map_or(0, |n| n.len())
    }

    /// NodeClaims of a pool.
    pub fn claims_in_pool<'a>(&'a self, pool: &str) -> impl Iterator<Item = &'a NodeClaim> + 'a {
        self.claims_by_pool
            .get(pool)
            .into_iter()
            .flatten()
            .filter_map(|n| self.nodeclaims.get(n).map(|cl| &**cl))
    }

    /// The node class a NodePool references, if it exists.
    pub fn nodeclass_of(&self, pool: &NodePool) -> Option<&NodeClass> {
        let r = pool.spec.template.spec.node_class_ref.as_ref()?;
        self.nodeclasses.get(&(r.kind.clone(), r.name.clone()))
    }

    /// Whether any Karpenter v1 object or API is known.
    pub fn karpenter_seen(&self) -> bool {
        !self.nodepools.is_empty()
            || !self.nodeclaims.is_empty()
            || self
                .api
                .served
                .iter()
                .any(|v| v.starts_with("karpenter.sh/"))
    }

    /// Number of objects of each kind, for logs and `snapshot` summaries.
    pub fn counts(&self) -> BTreeMap<&'static str, usize> {
        BTreeMap::from([
            ("NodePool", self.nodepools.len()),
            ("NodeClaim", self.nodeclaims.len()),
            ("NodeClass", self.nodeclasses.len()),
            ("Node", self.nodes.len()),
            ("Pod", self.pods.len()),
            ("DaemonSet", self.daemonsets.len()),
            ("PodDisruptionBudget", self.pdbs.len()),
            ("Event", self.events.len()),
            ("CustomResourceDefinition", self.crds.len()),
        ])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A bulk load sorts each node's pods once at its end: the lists come out as applying
    /// the pods one by one leaves them, a pod listed twice (moved to another node) or one
    /// already in the model included.
    #[test]
    fn a_bulk_load_lists_each_nodes_pods_as_one_by_one_applies_do() {
        let pod = |ns: &str, name: &str, node: &str| -> Pod {
            serde_json::from_value(serde_json::json!({
                "metadata": {"namespace": ns, "name": name},
                "spec": {"nodeName": node},
            }))
            .unwrap()
        };
        let before = pod("a", "p0", "n1");
        let pods = [
            pod("b", "p2", "n1"),
            pod("a", "p9", "n1"),
            pod("a", "p1", "n2"),
            pod("a", "p3", "n1"),
            pod("b", "p2", "n2"),
            pod("a", "p0", "n2"),
            pod("a", "p5", "n1"),
        ];
        let lists = |c: &Cluster| {
            ["n1", "n2"].map(|n| c.pods_on(n).map(|p| p.metadata.key()).collect::<Vec<_>>())
        };
        let mut one_by_one = Cluster::default();
        let mut bulk = Cluster::default();
        for c in [&mut one_by_one, &mut bulk] {
            c.apply_pod(before.clone());
        }
        bulk.begin_load();
        for p in &pods {
            one_by_one.apply_pod(p.clone());
            bulk.apply_pod(p.clone());
        }
        bulk.compact();
        assert_eq!(
            lists(&one_by_one),
            [vec!["a/p3", "a/p5", "a/p9"], vec!["a/p0", "a/p1", "b/p2"]]
        );
        assert_eq!(lists(&bulk), lists(&one_by_one));
        // After the load, pods keep their places as they come.
        bulk.apply_pod(pod("a", "p4", "n1"));
        assert_eq!(lists(&bulk)[0], ["a/p3", "a/p4", "a/p5", "a/p9"]);
    }

    #[test]
    fn an_objects_events_at_one_instant_come_in_id_order_whatever_their_arrival() {
        let at = "2026-11-21T10:00:00Z".parse().ok();
        let event = |id: &str| Event {
            id: id.into(),
            regarding: crate::model::event::ObjectRef {
                kind: "Pod".into(),
                namespace: Some("default".into()),
                name: "p".into(),
                ..Default::default()
            },
            reason: "FailedScheduling".into(),
            source: "karpenter".into(),
            last_seen: at,
            ..Default::default()
        };
        let order = |ids: &[&str]| {
            let mut c = Cluster::default();
            for id in ids {
                c.apply_event(event(id));
            }
            let got: Vec<String> = c
                .events_for(ObjectKind::Pod, Some("default"), "p", "")
                .iter()
                .map(|e| e.id.clone())
                .collect();
            got
        };
        assert_eq!(order(&["b", "a", "c"]), ["a", "b", "c"]);
        assert_eq!(order(&["c", "b", "a"]), ["a", "b", "c"]);
    }

    fn pod(phase: &str, app: &str) -> Pod {
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": "p", "namespace": "default", "labels": {"app": app}},
            "spec": {"nodeName": "n1", "containers": [{"name": "c",
                "resources": {"requests": {"cpu": "1"}}}]},
            "status": {"phase": phase},
        }))
        .unwrap()
    }

    /// A bound pod's change moves the room's stamp only when it changes what the room is
    /// made of; its node's own stamp moves either way.
    #[test]
    fn a_pod_change_stamps_the_room_only_when_the_room_moves() {
        let mut c = Cluster::default();
        c.apply_pod(pod("Pending", "web"));
        let (bound, node) = (c.stamps().bound(), c.stamps().node("n1"));
        // Pending to Running: the same room.
        c.apply_pod(pod("Running", "web"));
        assert_eq!(c.stamps().bound(), bound);
        assert!(c.stamps().node("n1") > node);
        // A label its peers' spread and anti-affinity read.
        c.apply_pod(pod("Running", "api"));
        assert!(c.stamps().bound() > bound);
        // Finished: it holds no room.
        let bound = c.stamps().bound();
        c.apply_pod(pod("Succeeded", "api"));
        assert!(c.stamps().bound() > bound);
        // Gone.
        let bound = c.stamps().bound();
        c.delete_pod("default", "p");
        assert!(c.stamps().bound() > bound);
    }

    /// A node's well-known labels are read once and kept; a changed copy applied in its
    /// place reads them again, and the claim and pool indexes follow it.
    #[test]
    fn a_node_changed_and_applied_again_reads_its_labels_again() {
        let node = |pool: &str| -> Node {
            serde_json::from_value(serde_json::json!({"metadata": {"name": "n1", "labels": {
                "karpenter.sh/nodepool": pool, "topology.kubernetes.io/zone": "z1",
                "node.kubernetes.io/instance-type": "m5.large", "karpenter.sh/capacity-type": "spot"}},
                "spec": {"providerID": "aws:///z1/i-1"}}))
            .unwrap()
        };
        let claim: NodeClaim = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "c1", "labels": {"karpenter.sh/nodepool": "a"}},
            "status": {"providerID": "aws:///z1/i-1", "nodeName": "n1"}}))
        .unwrap();
        let mut c = Cluster::default();
        c.apply_nodeclaim(claim.clone());
        c.apply_node(node("a"));
        let n = &c.nodes["n1"];
        assert_eq!((n.pool(), n.zone()), (Some("a"), Some("z1")));
        assert_eq!(
            (n.instance_type(), n.capacity_type()),
            (Some("m5.large"), Some("spot"))
        );
        assert_eq!(
            c.nodeclaim_for_node(n).map(|cl| cl.metadata.name.as_str()),
            Some("c1")
        );
        let mut moved = c.nodes["n1"].clone();
        moved
            .metadata
            .labels
            .make_mut()
            .insert("karpenter.sh/nodepool".into(), "b".into());
        c.apply_node(moved);
        assert_eq!(
            c.nodes["n1"].pool(),
            Some("b"),
            "the copy read its own labels"
        );
        assert_eq!((c.pool_node_count("a"), c.pool_node_count("b")), (0, 1));
        // The claim goes: the node has none, by provider ID or by name.
        c.delete_nodeclaim("c1");
        assert!(c.nodeclaim_for_node(&c.nodes["n1"]).is_none());
    }

    /// The few-pod indexes follow every change: binding, labels, owners, deletion, relist.
    #[test]
    fn the_pod_indexes_follow_each_change() {
        let names = |it: &mut dyn Iterator<Item = &Pod>| -> Vec<String> {
            it.map(|p| p.metadata.name.clone()).collect()
        };
        let mut c = Cluster::default();
        let mut p: Pod = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "p", "namespace": "default",
                "labels": {"app.kubernetes.io/name": "karpenter"}},
            "spec": {"containers": [{"name": "c"}]},
        }))
        .unwrap();
        c.apply_pod(p.clone());
        assert_eq!(names(&mut c.unbound_pods()), ["p"]);
        assert_eq!(names(&mut c.controller_pods()), ["p"]);
        assert!(names(&mut c.daemonset_pods()).is_empty());
        // Bound, relabelled, owned by a DaemonSet.
        let mut q: Pod = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "p", "namespace": "default", "labels": {"app": "x"},
                "ownerReferences": [{"kind": "DaemonSet", "name": "ds", "uid": "u",
                    "apiVersion": "apps/v1"}]},
            "spec": {"nodeName": "n1", "containers": [{"name": "c"}]},
        }))
        .unwrap();
        c.apply_pod(q.clone());
        assert!(names(&mut c.unbound_pods()).is_empty());
        assert!(names(&mut c.controller_pods()).is_empty());
        assert_eq!(names(&mut c.daemonset_pods()), ["p"]);
        // The index holds the pod as it is now, not as it was.
        q.metadata.uid = "v2".into();
        c.apply_pod(q);
        assert_eq!(c.daemonset_pods().next().unwrap().metadata.uid, "v2");
        c.delete_pod("default", "p");
        assert!(names(&mut c.daemonset_pods()).is_empty());
        p.metadata.name = "r".into();
        c.apply_pod(p);
        c.reset_pods();
        assert!(names(&mut c.unbound_pods()).is_empty());
        assert!(names(&mut c.controller_pods()).is_empty());
    }
}
