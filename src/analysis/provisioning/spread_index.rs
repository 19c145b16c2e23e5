//! The cluster's bound pods as zone topology spread counts them, indexed once per pass
//! and brought up to date between passes ([`SpreadIndex`]).

use std::collections::{BTreeMap, BTreeSet, HashMap};

use super::super::selector;
use crate::model::*;

/// The cluster's bound pods as zone spread counts them, built once per pass on first use
/// ([`PoolSet::spread_index`]): the nodes with a zone, and their active pods grouped by
/// namespace and labels (a workload's replicas share one interned label map, so a
/// selector is tried once per group, not once per pod). Which nodes a pod may use is
/// worked out once per distinct node selector and affinity. Serve keeps it between passes
/// and, while no node or claim changed, brings it up to date node by node
/// ([`SpreadIndex::updated`]).
pub struct SpreadIndex {
    /// The zones of the nodes, sorted. Shared with the indexes brought up to date from
    /// this one, as are the nodes: neither changes while only pods do.
    zones: std::sync::Arc<Vec<String>>,
    /// Every node with a zone label (its name and labels), with that zone's index in
    /// `zones`.
    nodes: std::sync::Arc<Vec<(String, StringMap, u32)>>,
    groups: Vec<PodGroup>,
    /// Per (node selector, affinity) seen, by address: whether each node of `nodes` fits
    /// it. Each entry holds the selector and affinity it is keyed by, so no other can take
    /// that address while the index is kept (serve keeps it between passes).
    fits: std::sync::Mutex<HashMap<(usize, usize), Fits>>,
    /// Counts already made, by namespace, selector and node filter.
    counted: std::sync::Mutex<HashMap<String, BTreeMap<String, i64>>>,
}

/// How many node filters ([`SpreadIndex::fits`]) an index brought up to date keeps.
const FITS_KEPT: usize = 1024;

/// A zone-spread index kept from an earlier pass ([`PoolSet::with_spread_index`]).
pub enum KeptSpread {
    /// Nothing it counts changed since.
    Current(std::sync::Arc<SpreadIndex>),
    /// Only pods changed, on the nodes whose stamp is newer than this.
    Since(std::sync::Arc<SpreadIndex>, u64),
}

/// Whether each zoned node fits a node selector and affinity, with the two kept alive.
type Fits = (
    StringMap,
    Option<Shared<Affinity>>,
    std::sync::Arc<Vec<bool>>,
);

/// Active pods alike in namespace and labels, by the index of their node.
#[derive(Clone)]
struct PodGroup {
    namespace: Option<Shared<str>>,
    labels: StringMap,
    nodes: Vec<u32>,
}

/// A pod group's key: the addresses of its interned namespace and labels.
type GroupKey = (usize, usize);

impl SpreadIndex {
    pub fn new(c: &Cluster) -> Self {
        let zoned: Vec<(&Node, &str)> = c
            .nodes
            .values()
            .filter_map(|n| Some((n, n.zone()?)))
            .collect();
        let zones: Vec<String> = zoned
            .iter()
            .map(|(_, z)| *z)
            .collect::<BTreeSet<&str>>()
            .into_iter()
            .map(str::to_string)
            .collect();
        let zone = |z: &str| {
            zones
                .binary_search_by(|x| x.as_str().cmp(z))
                .unwrap_or_default() as u32
        };
        let nodes = zoned
            .iter()
            .map(|(n, z)| (n.metadata.name.clone(), n.metadata.labels.clone(), zone(z)))
            .collect::<Vec<_>>()
            .into();
        let mut index = SpreadIndex {
            zones: zones.into(),
            nodes,
            groups: Vec::new(),
            fits: Default::default(),
            counted: Default::default(),
        };
        let mut by_key = HashMap::new();
        for i in 0..index.nodes.len() {
            index.add_pods(c, i, &mut by_key);
        }
        index
    }

    /// This index brought up to date with `c`, where no node or NodeClaim changed since
    /// it was built (the model's zones stamp is the same), only pods: the nodes whose
    /// stamp is newer than `since` have their pods counted again, the rest are kept, and
    /// so is which nodes each selector fits. Counts as [`SpreadIndex::new`] on `c` does:
    /// the groups and their nodes may be in another order, and pods alike in labels that
    /// are not shared may be split over more groups, which no count can tell.
    pub fn updated(&self, c: &Cluster, since: u64) -> Self {
        // The journal names the few nodes that changed; asked of each node otherwise.
        // `nodes` is in the model's (name) order.
        let changed: Vec<bool> = match c.stamps().nodes_since(since) {
            Some(names) => {
                let mut changed = vec![false; self.nodes.len()];
                for name in names {
                    if let Ok(i) = self
                        .nodes
                        .binary_search_by(|(n, _, _)| n.as_str().cmp(name))
                    {
                        changed[i] = true;
                    }
                }
                changed
            }
            None => self
                .nodes
                .iter()
                .map(|(name, _, _)| c.stamps().node(name) > since)
                .collect(),
        };
        let mut groups = self.groups.clone();
        for g in &mut groups {
            g.nodes.retain(|&i| !changed[i as usize]);
        }
        groups.retain(|g| !g.nodes.is_empty());
        let mut index = SpreadIndex {
            zones: self.zones.clone(),
            nodes: self.nodes.clone(),
            groups,
            fits: std::sync::Mutex::new({
                // Kept while it stays small: each entry holds a selector alive, and pods
                // come and go with new ones while the nodes stand still.
                let fits = self.fits.lock().unwrap_or_else(|e| e.into_inner());
                if fits.len() <= FITS_KEPT {
                    fits.clone()
                } else {
                    HashMap::new()
                }
            }),
            counted: Default::default(),
        };
        let mut by_key: HashMap<GroupKey, usize> = index
            .groups
            .iter()
            .enumerate()
            .map(|(at, g)| (group_key(g.namespace.as_deref(), &g.labels), at))
            .collect();
        for (i, _) in changed.iter().enumerate().filter(|(_, yes)| **yes) {
            index.add_pods(c, i, &mut by_key);
        }
        index
    }

    /// Count the active pods of node `i` into their groups.
    fn add_pods(&mut self, c: &Cluster, i: usize, by_key: &mut HashMap<GroupKey, usize>) {
        for p in c.active_pods_on(&self.nodes[i].0) {
            let key = group_key(p.metadata.namespace.as_deref(), &p.metadata.labels);
            let groups = &mut self.groups;
            let g = *by_key.entry(key).or_insert_with(|| {
                groups.push(PodGroup {
                    namespace: p.metadata.namespace.clone(),
                    labels: p.metadata.labels.clone(),
                    nodes: Vec::new(),
                });
                groups.len() - 1
            });
            groups[g].nodes.push(i as u32);
        }
    }

    /// The active bound pods in the namespaces `in_scope` takes that `sel` selects (every
    /// one without a selector), per zone, with the first few by name (in name order): a
    /// zone affinity term's count, one selector test per group of alike pods, and only
    /// the pods of the groups it selects read.
    pub fn zone_pods(
        &self,
        c: &Cluster,
        in_scope: impl Fn(Option<&str>) -> bool,
        sel: Option<&k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector>,
        named: usize,
    ) -> BTreeMap<String, (usize, Vec<String>)> {
        let mut found: BTreeMap<u32, (usize, Vec<(String, String)>)> = BTreeMap::new();
        for g in &self.groups {
            if !in_scope(g.namespace.as_deref())
                || (sel.is_some() && !super::super::selector::matches(sel, &g.labels))
            {
                continue;
            }
            let key = group_key(g.namespace.as_deref(), &g.labels);
            // Each node once, however the group's entries came to be ordered.
            let mut nodes = g.nodes.clone();
            nodes.sort_unstable();
            nodes.dedup();
            for i in nodes {
                let (node, _, zone) = &self.nodes[i as usize];
                let (count, names) = found.entry(*zone).or_default();
                for p in c.active_pods_on(node).filter(|p| {
                    group_key(p.metadata.namespace.as_deref(), &p.metadata.labels) == key
                }) {
                    *count += 1;
                    names.push(p.metadata.obj_key());
                }
            }
        }
        found
            .into_iter()
            .map(|(zone, (count, mut names))| {
                names.sort();
                names.truncate(named);
                let names = names
                    .into_iter()
                    .map(|(ns, n)| format!("{ns}/{n}"))
                    .collect();
                (self.zones[zone as usize].clone(), (count, names))
            })
            .collect()
    }

    /// The pods `sel` selects in the pod's namespace, per zone of the nodes the pod may
    /// use (every such zone, 0 where none), or of every node when `ignore` (the
    /// constraint's nodeAffinityPolicy Ignore). Replicas ask alike: once per pass.
    pub(super) fn counts(
        &self,
        pod: &Pod,
        sel: Option<&k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector>,
        ignore: bool,
    ) -> BTreeMap<String, i64> {
        let fits = (!ignore).then(|| self.fits(pod));
        let key = format!(
            "{:?}|{sel:?}|{:?}",
            pod.metadata.namespace,
            fits.as_ref().map(|f| std::sync::Arc::as_ptr(f) as usize)
        );
        if let Some(c) = self
            .counted
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&key)
        {
            return c.clone();
        }
        let usable = |i: usize| fits.as_ref().is_none_or(|f| f[i]);
        // Per zone, by index: a count where a usable node is in it.
        let mut per: Vec<Option<i64>> = vec![None; self.zones.len()];
        for (i, (_, _, z)) in self.nodes.iter().enumerate() {
            if usable(i) {
                per[*z as usize] = Some(0);
            }
        }
        for g in &self.groups {
            if g.namespace.as_deref() != pod.metadata.namespace.as_deref()
                || !selector::matches(sel, &g.labels)
            {
                continue;
            }
            for &i in &g.nodes {
                if usable(i as usize) {
                    if let Some(n) = &mut per[self.nodes[i as usize].2 as usize] {
                        *n += 1;
                    }
                }
            }
        }
        let counts: BTreeMap<String, i64> = per
            .into_iter()
            .zip(self.zones.iter())
            .filter_map(|(n, z)| Some((z.clone(), n?)))
            .collect();
        self.counted
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(key, counts.clone());
        counts
    }

    /// Whether each zoned node fits the pod's node selector and required affinity.
    fn fits(&self, pod: &Pod) -> std::sync::Arc<Vec<bool>> {
        let selector: &BTreeMap<String, String> = &pod.spec.node_selector;
        let key = (
            selector as *const _ as usize,
            pod.spec
                .affinity
                .as_deref()
                .map_or(0, |a| a as *const _ as usize),
        );
        let mut memo = self.fits.lock().unwrap_or_else(|e| e.into_inner());
        memo.entry(key)
            .or_insert_with(|| {
                (
                    pod.spec.node_selector.clone(),
                    pod.spec.affinity.clone(),
                    std::sync::Arc::new(
                        self.nodes
                            .iter()
                            .map(|(_, labels, _)| selector::node_fits_pod(pod, labels))
                            .collect(),
                    ),
                )
            })
            .2
            .clone()
    }
}

fn group_key(namespace: Option<&str>, labels: &BTreeMap<String, String>) -> GroupKey {
    (
        namespace.map_or(0, |s| s.as_ptr() as usize),
        labels as *const _ as usize,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What an index counts, order aside: per group (namespace, labels) its nodes, and
    /// the nodes and zones.
    fn canonical(i: &SpreadIndex) -> (Vec<(Option<String>, String, Vec<u32>)>, Vec<String>) {
        let mut groups: Vec<_> = i
            .groups
            .iter()
            .map(|g| {
                let mut nodes = g.nodes.clone();
                nodes.sort();
                (
                    g.namespace.as_deref().map(str::to_string),
                    format!("{:?}", *g.labels),
                    nodes,
                )
            })
            .collect();
        groups.sort();
        // Alike groups (equal labels not shared) count as one.
        groups.dedup_by(|b, a| {
            (a.0 == b.0 && a.1 == b.1) && {
                a.2.extend(b.2.drain(..));
                a.2.sort();
                true
            }
        });
        let nodes = i.nodes.iter().map(|(n, _, z)| format!("{n}@{z}")).collect();
        (groups, nodes)
    }

    #[test]
    fn an_index_brought_up_to_date_counts_as_one_built_afresh() {
        let mut yaml = String::new();
        for (n, z) in [("na", "a"), ("nb", "b"), ("nc", "c"), ("nx", "")] {
            let zone = if z.is_empty() {
                String::new()
            } else {
                format!("topology.kubernetes.io/zone: {z}")
            };
            yaml += &format!(
                "---\napiVersion: v1\nkind: Node\nmetadata: {{name: {n}, labels: {{{zone}}}}}\n"
            );
        }
        let pod = |name: &str, ns: &str, app: &str, node: &str, phase: &str| {
            format!("---\napiVersion: v1\nkind: Pod\nmetadata: {{name: {name}, namespace: {ns}, labels: {{app: {app}}}}}\nspec: {{nodeName: {node}}}\nstatus: {{phase: {phase}}}\n")
        };
        for (i, node) in ["na", "na", "nb", "nc", "nx"].iter().enumerate() {
            yaml += &pod(&format!("web-{i}"), "shop", "web", node, "Running");
        }
        yaml += &pod("db", "data", "db", "nb", "Running");
        let mut c = Cluster::default();
        crate::source::load_str("t.yaml", &yaml, &mut c).unwrap();
        let built = SpreadIndex::new(&c);
        let since = c.stamps().last();
        let (zones, bound) = (c.stamps().zones(), c.stamps().bound());
        // Only pods change: one relabelled, one gone, one new, one finished.
        let mut edit = Cluster::default();
        let changes = [
            pod("web-0", "shop", "api", "na", "Running"),
            pod("new", "shop", "web", "nc", "Running"),
            pod("db", "data", "db", "nb", "Succeeded"),
        ];
        crate::source::load_str("e.yaml", &changes.concat(), &mut edit).unwrap();
        for p in edit.pods.into_values() {
            c.apply_pod(p);
        }
        c.delete_pod("shop", "web-3");
        assert_eq!(c.stamps().zones(), zones, "no node or claim changed");
        assert_ne!(c.stamps().bound(), bound, "the pods did");
        let updated = built.updated(&c, since);
        let fresh = SpreadIndex::new(&c);
        assert_eq!(canonical(&updated), canonical(&fresh));
        assert_ne!(canonical(&built), canonical(&fresh), "the change counts");
        // And it counts alike.
        let pending = &c.pods[&("shop".to_string(), "web-1".to_string())];
        let sel = serde_json::from_str(r#"{"matchLabels": {"app": "web"}}"#).unwrap();
        let counts = updated.counts(pending, Some(&sel), true);
        assert_eq!(counts, fresh.counts(pending, Some(&sel), true));
        assert_eq!(
            counts.values().sum::<i64>(),
            3,
            "web-1, web-2 and new: {counts:?}"
        );
    }
}
