//! Every kind kelp reads, in one table: its [`Resource`] (where a live cluster serves it),
//! which apiVersions of it a dump may hold, whether a live cluster is listed for it, and,
//! through the [`Kind`] trait on its projection, how an object enters the [`Cluster`]:
//! applied, deleted, reset by a full relist, and fixed up after decoding.
//!
//! A kind's name is dispatched to its projection type here only ([`with_kind`]): dumps
//! ([`super::dump`]), one-shot lists ([`super::live`]) and the watch streams of
//! `kelp serve` all go through it.

use serde::de::DeserializeOwned;

use crate::karpenter::labels::{AWS_GROUP, GROUP, KWOK_GROUP};
use crate::model::event::{CoreEvent, EventsV1Event};
use crate::model::*;

/// A change for the model, per kind (what [`Kind`]'s handlers take): the linkerd-style apply / delete / reset.
#[derive(Debug)]
pub enum Change<T> {
    Apply(T),
    Delete(T),
    /// A full relist: the complete current set.
    Reset(Vec<T>),
}

/// A resource kelp reads: its API group, version, plural (the URL's last part) and kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Resource {
    pub group: &'static str,
    pub version: &'static str,
    pub plural: &'static str,
    pub kind: ObjectKind,
}

impl Resource {
    const fn new(
        group: &'static str,
        version: &'static str,
        plural: &'static str,
        kind: ObjectKind,
    ) -> Self {
        Resource {
            group,
            version,
            plural,
            kind,
        }
    }
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.to_string()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }
    /// The collection's path on the API server.
    pub fn path(&self) -> String {
        if self.group.is_empty() {
            format!("/api/{}/{}", self.version, self.plural)
        } else {
            format!("/apis/{}/{}/{}", self.group, self.version, self.plural)
        }
    }
    /// The name of the CustomResourceDefinition that defines it (`nodepools.karpenter.sh`).
    pub fn crd_name(&self) -> String {
        format!("{}.{}", self.plural, self.group)
    }
}

pub const NODEPOOLS: Resource = Resource::new(GROUP, "v1", "nodepools", ObjectKind::NodePool);
pub const NODECLAIMS: Resource = Resource::new(GROUP, "v1", "nodeclaims", ObjectKind::NodeClaim);
pub const EC2NODECLASSES: Resource =
    Resource::new(AWS_GROUP, "v1", "ec2nodeclasses", ObjectKind::EC2NodeClass);
pub const KWOKNODECLASSES: Resource = Resource::new(
    KWOK_GROUP,
    "v1alpha1",
    "kwoknodeclasses",
    ObjectKind::KWOKNodeClass,
);
pub const NODES: Resource = Resource::new("", "v1", "nodes", ObjectKind::Node);
pub const PODS: Resource = Resource::new("", "v1", "pods", ObjectKind::Pod);
pub const DAEMONSETS: Resource = Resource::new("apps", "v1", "daemonsets", ObjectKind::DaemonSet);
pub const PDBS: Resource = Resource::new(
    "policy",
    "v1",
    "poddisruptionbudgets",
    ObjectKind::PodDisruptionBudget,
);
pub const EVENTS: Resource = Resource::new("", "v1", "events", ObjectKind::Event);
/// events.k8s.io Events: read from dumps; a live cluster is read through core/v1 [`EVENTS`].
pub const EVENTS_V1: Resource = Resource::new("events.k8s.io", "v1", "events", ObjectKind::Event);
pub const CRDS: Resource = Resource::new(
    "apiextensions.k8s.io",
    "v1",
    "customresourcedefinitions",
    ObjectKind::CustomResourceDefinition,
);

/// Karpenter's API groups: core, AWS and KWOK.
pub const KARPENTER_GROUPS: [&str; 3] = [GROUP, AWS_GROUP, KWOK_GROUP];

/// Whether `group` is one of Karpenter's.
pub fn is_karpenter_group(group: &str) -> bool {
    KARPENTER_GROUPS.contains(&group)
}

/// Karpenter kinds kelp knows but does not read: older APIs (v1alpha5, v1beta1) recorded
/// as such when a dump holds them, so the analysis can say the install is outdated.
const LEGACY_KINDS: [&str; 6] = [
    "NodePool",
    "NodeClaim",
    "EC2NodeClass",
    "Provisioner",
    "Machine",
    "AWSNodeTemplate",
];

/// Whether an object of `kind` in one of Karpenter's groups, which no entry of the table
/// reads, is a legacy Karpenter object (rather than an unknown kind).
pub fn is_legacy(kind: &str) -> bool {
    LEGACY_KINDS.contains(&kind)
}

/// Which apiVersions of a kind a dump's object may have.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum InDump {
    /// Exactly the resource's group and version.
    Exact,
    /// The resource's group, any version.
    Group,
    /// Any of Karpenter's groups, any version but a beta (`v1beta1` is legacy).
    KarpenterNotBeta,
    /// Any group and version.
    Any,
}

/// When a live cluster is listed (and watched) for a kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Listed {
    Always,
    /// When discovery shows the cluster serves it.
    IfServed,
    /// Dumps only.
    Never,
}

/// One row of [`TABLE`].
#[derive(Debug, Clone, Copy)]
struct Entry {
    resource: Resource,
    in_dump: InDump,
    listed: Listed,
}

const fn entry(resource: Resource, in_dump: InDump, listed: Listed) -> Entry {
    Entry {
        resource,
        in_dump,
        listed,
    }
}

/// Every kind kelp reads, in the order a live cluster is listed.
const TABLE: [Entry; 11] = [
    entry(NODEPOOLS, InDump::Exact, Listed::IfServed),
    entry(NODECLAIMS, InDump::Exact, Listed::IfServed),
    entry(EC2NODECLASSES, InDump::KarpenterNotBeta, Listed::IfServed),
    entry(KWOKNODECLASSES, InDump::KarpenterNotBeta, Listed::IfServed),
    entry(NODES, InDump::Exact, Listed::Always),
    entry(PODS, InDump::Exact, Listed::Always),
    entry(DAEMONSETS, InDump::Group, Listed::Always),
    entry(PDBS, InDump::Group, Listed::Always),
    entry(EVENTS, InDump::Exact, Listed::Always),
    entry(EVENTS_V1, InDump::Group, Listed::Never),
    entry(CRDS, InDump::Any, Listed::Never),
];

/// The resources to list (and watch) on a live cluster, given what discovery found.
pub fn listed(api: &ApiInfo) -> Vec<Resource> {
    TABLE
        .iter()
        .filter(|e| match e.listed {
            Listed::Always => true,
            Listed::IfServed => api.served.contains(&e.resource.api_version()),
            Listed::Never => false,
        })
        .map(|e| e.resource)
        .collect()
}

/// The core resources kelp lists on every cluster (whatever discovery finds), in order.
pub fn core() -> impl Iterator<Item = Resource> {
    TABLE
        .iter()
        .filter(|e| e.listed == Listed::Always)
        .map(|e| e.resource)
}

/// The Karpenter resources kelp lists when a cluster serves them.
pub fn karpenter() -> impl Iterator<Item = Resource> {
    TABLE
        .iter()
        .filter(|e| e.listed == Listed::IfServed)
        .map(|e| e.resource)
}

/// The kind a dump's object of `api_version` and `kind` is read as, if kelp reads it. A
/// node class may sit in any of Karpenter's groups: the resource returned carries the
/// object's own group, which its fix-up records.
pub fn in_dump(api_version: &str, kind: &str) -> Option<Resource> {
    let group = api_version.rsplit_once('/').map(|(g, _)| g).unwrap_or("");
    TABLE
        .iter()
        .filter(|e| e.resource.kind.as_str() == kind)
        .find_map(|e| {
            let r = e.resource;
            match e.in_dump {
                InDump::Exact => (api_version == r.api_version()).then_some(r),
                InDump::Group => (group == r.group).then_some(r),
                InDump::KarpenterNotBeta if !api_version.ends_with("beta1") => KARPENTER_GROUPS
                    .into_iter()
                    .find(|g| *g == group)
                    .map(|group| Resource { group, ..r }),
                InDump::KarpenterNotBeta => None,
                InDump::Any => Some(r),
            }
        })
}

// ------------------------------------------------------------------ projections

/// Objects that carry kelp's trimmed metadata.
pub trait Object {
    fn meta(&self) -> &Meta;
    fn meta_mut(&mut self) -> &mut Meta;
}

macro_rules! objects {
    ($($t:ty),*) => { $(impl Object for $t {
        fn meta(&self) -> &Meta { &self.metadata }
        fn meta_mut(&mut self) -> &mut Meta { &mut self.metadata }
    })* };
}
objects!(
    NodePool,
    NodeClaim,
    NodeClass,
    Node,
    Pod,
    DaemonSet,
    PodDisruptionBudget,
    CoreEvent,
    EventsV1Event,
    Crd
);

/// How one kind's projection enters the model.
pub trait Kind: Object + DeserializeOwned + Clone + Send + 'static {
    /// Add or replace it.
    fn apply(self, c: &mut Cluster);
    /// Remove it.
    fn delete(&self, c: &mut Cluster);
    /// A full relist of `r`: forget every object of it the model holds, then apply `items`.
    fn reset(c: &mut Cluster, r: &Resource, items: Vec<Self>);
    /// Fill in what decoding cannot know, from the resource it was read as.
    fn fix(&mut self, _r: &Resource) {}
    /// Why an API server would never have stored this object (a pod's `NaN` or negative
    /// request), naming it; such an object is skipped, not judged. None for most.
    fn invalid(&self) -> Option<String> {
        None
    }
    /// Whether the model already holds this very object, as kept (a watch's update that
    /// changed nothing kelp reads: a node's heartbeat, a status field kelp drops). Kinds
    /// that cannot tell say no.
    fn unchanged(&self, _c: &Cluster) -> bool {
        false
    }
}

/// A namespaced object's key in the model: (namespace, name).
fn key_of(m: &Meta) -> ObjKey {
    (
        m.namespace.as_deref().unwrap_or_default().to_string(),
        m.name.clone(),
    )
}

/// Remove each of `keys`, then apply every item.
fn replace<T: Kind, K>(
    c: &mut Cluster,
    keys: Vec<K>,
    delete: impl Fn(&mut Cluster, &K),
    items: Vec<T>,
) {
    for k in &keys {
        delete(c, k);
    }
    items.into_iter().for_each(|o| o.apply(c));
}

macro_rules! cluster_kind {
    ($t:ty, $map:ident, $apply:ident, $del:ident) => {
        impl Kind for $t {
            fn apply(self, c: &mut Cluster) {
                c.$apply(self);
            }
            fn delete(&self, c: &mut Cluster) {
                c.$del(&self.metadata.name)
            }
            fn reset(c: &mut Cluster, _: &Resource, items: Vec<Self>) {
                let keys: Vec<String> = c.$map.keys().cloned().collect();
                replace(c, keys, |c, name| c.$del(name), items);
            }
            fn unchanged(&self, c: &Cluster) -> bool {
                c.$map
                    .get(&self.metadata.name)
                    .is_some_and(|o| std::borrow::Borrow::<$t>::borrow(o) == self)
            }
        }
    };
    ($t:ty, $map:ident, $apply:ident, $del:ident, namespaced) => {
        impl Kind for $t {
            fn apply(self, c: &mut Cluster) {
                c.$apply(self)
            }
            fn delete(&self, c: &mut Cluster) {
                c.$del(
                    self.metadata.namespace.as_deref().unwrap_or_default(),
                    &self.metadata.name,
                )
            }
            fn reset(c: &mut Cluster, _: &Resource, items: Vec<Self>) {
                let keys: Vec<ObjKey> = c.$map.keys().cloned().collect();
                replace(c, keys, |c, (ns, name)| c.$del(ns, name), items);
            }
            fn unchanged(&self, c: &Cluster) -> bool {
                c.$map.get(&key_of(&self.metadata)) == Some(self)
            }
        }
    };
}

cluster_kind!(NodePool, nodepools, apply_nodepool, delete_nodepool);
cluster_kind!(NodeClaim, nodeclaims, apply_nodeclaim, delete_nodeclaim);
cluster_kind!(Node, nodes, apply_node, delete_node);
cluster_kind!(
    DaemonSet,
    daemonsets,
    apply_daemonset,
    delete_daemonset,
    namespaced
);
cluster_kind!(PodDisruptionBudget, pdbs, apply_pdb, delete_pdb, namespaced);

impl Kind for Pod {
    fn apply(self, c: &mut Cluster) {
        c.apply_pod(self)
    }
    fn delete(&self, c: &mut Cluster) {
        c.delete_pod(
            self.metadata.namespace.as_deref().unwrap_or_default(),
            &self.metadata.name,
        )
    }
    fn reset(c: &mut Cluster, _: &Resource, items: Vec<Self>) {
        c.reset_pods();
        items.into_iter().for_each(|o| o.apply(c));
    }
    fn unchanged(&self, c: &Cluster) -> bool {
        c.pods.get(&key_of(&self.metadata)) == Some(self)
    }
    fn invalid(&self) -> Option<String> {
        let why = self.invalid_resources()?;
        let (ns, name) = key_of(&self.metadata);
        Some(format!("Pod {ns}/{name}: {why}"))
    }
}

impl Kind for NodeClass {
    fn apply(self, c: &mut Cluster) {
        c.apply_nodeclass(self)
    }
    fn delete(&self, c: &mut Cluster) {
        c.delete_nodeclass(&self.kind, &self.metadata.name)
    }
    fn unchanged(&self, c: &Cluster) -> bool {
        c.nodeclasses
            .get(&(self.kind.clone(), self.metadata.name.clone()))
            == Some(self)
    }
    /// Only the node classes of `r`'s kind: EC2NodeClass and KWOKNodeClass share names.
    fn reset(c: &mut Cluster, r: &Resource, items: Vec<Self>) {
        let keys: Vec<(String, String)> = c
            .nodeclasses
            .keys()
            .filter(|(kind, _)| kind == r.kind.as_str())
            .cloned()
            .collect();
        replace(
            c,
            keys,
            |c, (kind, name)| c.delete_nodeclass(kind, name),
            items,
        );
    }
    /// The kind and group come from the resource, not the object's body.
    fn fix(&mut self, r: &Resource) {
        self.kind = r.kind.as_str().to_string();
        self.group = r.group.to_string();
    }
}

/// Both kinds of Event share the model's events: a relist of either replaces them all.
/// (Only core/v1 Events are listed; events.k8s.io ones come from dumps.)
fn reset_events<T: Kind>(c: &mut Cluster, items: Vec<T>) {
    c.reset_events();
    items.into_iter().for_each(|o| o.apply(c));
}

impl Kind for CoreEvent {
    fn apply(self, c: &mut Cluster) {
        c.apply_event(self.into());
    }
    fn delete(&self, c: &mut Cluster) {
        c.delete_event(&self.clone_event().id);
    }
    fn reset(c: &mut Cluster, _: &Resource, items: Vec<Self>) {
        reset_events(c, items);
    }
}

impl Kind for EventsV1Event {
    fn apply(self, c: &mut Cluster) {
        c.apply_event(self.into());
    }
    fn delete(&self, c: &mut Cluster) {
        c.delete_event(&self.id());
    }
    fn reset(c: &mut Cluster, _: &Resource, items: Vec<Self>) {
        reset_events(c, items);
    }
}

/// A CRD of one of Karpenter's groups also says which of its versions are served.
impl Kind for Crd {
    fn apply(self, c: &mut Cluster) {
        if is_karpenter_group(&self.spec.group) {
            c.api.authoritative = true;
            for v in self.spec.versions.iter().filter(|v| v.served) {
                c.api
                    .served
                    .insert(format!("{}/{}", self.spec.group, v.name));
            }
        }
        c.apply_crd(self);
    }
    /// CRDs are read from dumps only, and index nothing: the map is all there is.
    fn delete(&self, c: &mut Cluster) {
        c.crds.remove(&self.metadata.name);
        c.touch_all();
    }
    fn reset(c: &mut Cluster, _: &Resource, items: Vec<Self>) {
        c.crds.clear();
        c.touch_all();
        items.into_iter().for_each(|o| o.apply(c));
    }
}

/// Feed one change of a kind read as `r` into the model: each object is fixed up
/// ([`Kind::fix`]), then applied, deleted, or (a relist) replaces the kind's objects.
///
/// Returns whether the model changed: an update to an object whose kept projection is the
/// same (a node's heartbeat, a resourceVersion bump) changes nothing, and wakes no pass.
pub fn feed<T: Kind>(c: &mut Cluster, r: &Resource, change: Change<T>) -> bool {
    match change {
        Change::Apply(mut o) => {
            prepare(&mut o, r);
            if o.unchanged(c) {
                return false;
            }
            o.apply(c);
            true
        }
        Change::Delete(mut o) => {
            o.fix(r);
            o.delete(c);
            true
        }
        Change::Reset(mut items) => {
            items.iter_mut().for_each(|o| o.fix(r));
            T::reset(c, r, items);
            true
        }
    }
}

/// An object as the model would keep it: fixed up ([`Kind::fix`]) and without its
/// resourceVersion (the watch has read it already). Doing it twice changes nothing.
pub fn prepare<T: Kind>(o: &mut T, r: &Resource) {
    o.fix(r);
    o.meta_mut().resource_version.clear();
}

/// Something to do with one kind, whatever its projection: [`with_kind`] calls
/// [`run`](ForKind::run) with the projection type of the resource it is given.
pub trait ForKind {
    type Output;
    fn run<T: Kind>(self, r: &Resource) -> Self::Output;
}

/// Run `f` with the projection type of `r` (one of the table's resources, or a node
/// class from [`in_dump`]); None for a kind kelp does not read.
pub fn with_kind<F: ForKind>(r: &Resource, f: F) -> Option<F::Output> {
    use ObjectKind as K;
    Some(match r.kind {
        K::NodePool => f.run::<NodePool>(r),
        K::NodeClaim => f.run::<NodeClaim>(r),
        K::EC2NodeClass | K::KWOKNodeClass => f.run::<NodeClass>(r),
        K::Node => f.run::<Node>(r),
        K::Pod => f.run::<Pod>(r),
        K::DaemonSet => f.run::<DaemonSet>(r),
        K::PodDisruptionBudget => f.run::<PodDisruptionBudget>(r),
        K::Event if r.group == EVENTS_V1.group => f.run::<EventsV1Event>(r),
        K::Event => f.run::<CoreEvent>(r),
        K::CustomResourceDefinition => f.run::<Crd>(r),
        K::Cluster | K::Offering => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_core_kinds_are_listed_on_every_cluster_in_the_tables_order() {
        let core: Vec<Resource> = core().collect();
        assert_eq!(core, vec![NODES, PODS, DAEMONSETS, PDBS, EVENTS]);
    }

    /// The name of the projection each kind is read into.
    struct TypeName;
    impl ForKind for TypeName {
        type Output = &'static str;
        fn run<T: Kind>(self, _: &Resource) -> &'static str {
            std::any::type_name::<T>().rsplit("::").next().unwrap_or("")
        }
    }

    #[test]
    fn every_entry_has_a_projection() {
        let names: Vec<_> = TABLE
            .iter()
            .map(|e| with_kind(&e.resource, TypeName).unwrap_or("none"))
            .collect();
        assert_eq!(
            names,
            [
                "NodePool",
                "NodeClaim",
                "NodeClass",
                "NodeClass",
                "Node",
                "Pod",
                "DaemonSet",
                "PodDisruptionBudget",
                "CoreEvent",
                "EventsV1Event",
                "Crd"
            ]
        );
        assert_eq!(
            with_kind(
                &Resource {
                    kind: ObjectKind::Offering,
                    ..NODES
                },
                TypeName
            ),
            None
        );
    }

    #[test]
    fn dumps_match_kinds_by_api_version() {
        let read_as = |v: &str, k: &str| in_dump(v, k).map(|r| (r.group, r.kind.as_str()));
        assert_eq!(
            read_as("karpenter.sh/v1", "NodePool"),
            Some((GROUP, "NodePool"))
        );
        assert_eq!(read_as("karpenter.sh/v1beta1", "NodePool"), None);
        assert_eq!(read_as("v1", "Node"), Some(("", "Node")));
        assert_eq!(
            read_as("apps/v1beta2", "DaemonSet"),
            Some(("apps", "DaemonSet"))
        );
        assert_eq!(
            read_as("policy/v1beta1", "PodDisruptionBudget"),
            Some(("policy", "PodDisruptionBudget"))
        );
        assert_eq!(read_as("v1", "Event"), Some(("", "Event")));
        assert_eq!(
            read_as("events.k8s.io/v1", "Event"),
            Some(("events.k8s.io", "Event"))
        );
        assert_eq!(
            read_as("karpenter.k8s.aws/v1", "EC2NodeClass"),
            Some((AWS_GROUP, "EC2NodeClass"))
        );
        assert_eq!(read_as("karpenter.k8s.aws/v1beta1", "EC2NodeClass"), None);
        // A node class keeps the group it was found in.
        assert_eq!(
            read_as("karpenter.sh/v1", "KWOKNodeClass"),
            Some((GROUP, "KWOKNodeClass"))
        );
        assert_eq!(read_as("example.com/v1", "KWOKNodeClass"), None);
        assert_eq!(
            read_as("apiextensions.k8s.io/v1beta1", "CustomResourceDefinition"),
            Some(("apiextensions.k8s.io", "CustomResourceDefinition"))
        );
        assert_eq!(read_as("v1", "ConfigMap"), None);
    }

    #[test]
    fn a_relist_of_one_node_class_kind_leaves_the_other() {
        let mut c = Cluster::default();
        let class = |name: &str| NodeClass {
            metadata: Meta {
                name: name.into(),
                ..Meta::default()
            },
            ..NodeClass::default()
        };
        feed(&mut c, &EC2NODECLASSES, Change::Apply(class("a")));
        feed(&mut c, &KWOKNODECLASSES, Change::Apply(class("a")));
        feed(&mut c, &KWOKNODECLASSES, Change::Apply(class("b")));
        feed(&mut c, &KWOKNODECLASSES, Change::Reset(vec![class("c")]));
        let keys: Vec<_> = c.nodeclasses.keys().cloned().collect();
        assert_eq!(
            keys,
            [
                ("EC2NodeClass".to_string(), "a".to_string()),
                ("KWOKNodeClass".to_string(), "c".to_string())
            ]
        );
        assert_eq!(c.nodeclasses[&keys[0]].group, AWS_GROUP);
        feed(&mut c, &EC2NODECLASSES, Change::Delete(class("a")));
        assert_eq!(c.nodeclasses.len(), 1);
    }

    #[test]
    fn an_update_of_nothing_kelp_keeps_changes_nothing() {
        let node = |rv: &str, heartbeat: &str, ready: &str| -> Node {
            serde_json::from_value(serde_json::json!({
                "metadata": {"name": "n1", "resourceVersion": rv, "labels": {"karpenter.sh/nodepool": "a"}},
                "status": {"conditions": [{"type": "Ready", "status": ready,
                    "lastHeartbeatTime": heartbeat, "lastTransitionTime": "2026-11-21T09:00:00Z"}]}
            }))
            .unwrap()
        };
        let pod = |rv: &str, phase: &str| -> Pod {
            serde_json::from_value(serde_json::json!({
                "metadata": {"name": "p", "namespace": "d", "resourceVersion": rv},
                "spec": {"nodeName": "n1", "containers": [{"name": "a", "resources": {"requests": {"cpu": "1"}}}]},
                "status": {"phase": phase}
            }))
            .unwrap()
        };
        let mut c = Cluster::default();
        assert!(feed(
            &mut c,
            &NODES,
            Change::Apply(node("1", "2026-11-21T09:59:00Z", "True"))
        ));
        // A heartbeat: a new resourceVersion and heartbeat time, nothing kelp keeps.
        assert!(!feed(
            &mut c,
            &NODES,
            Change::Apply(node("2", "2026-11-21T09:59:40Z", "True"))
        ));
        assert!(feed(
            &mut c,
            &NODES,
            Change::Apply(node("3", "2026-11-21T09:59:50Z", "False"))
        ));
        assert!(feed(&mut c, &PODS, Change::Apply(pod("1", "Pending"))));
        assert!(!feed(&mut c, &PODS, Change::Apply(pod("2", "Pending"))));
        assert!(feed(&mut c, &PODS, Change::Apply(pod("3", "Running"))));
        assert_eq!(c.pods_on("n1").count(), 1);
        assert!(feed(&mut c, &PODS, Change::Delete(pod("4", "Running"))));
        assert_eq!(c.pods_on("n1").count(), 0);
    }
}
