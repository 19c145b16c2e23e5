//! What zone pod affinity reads, indexed once per pass: the bound pods whose required
//! anti-affinity guards zones ([`Guards`]) and the pending pods Karpenter places together
//! ([`Pending`]), with the words their terms are named by.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{PodAffinityTerm, Toleration};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;

use super::super::fit::peers::{scope, term_covers, Scope};
use super::super::selector;
use crate::karpenter::labels;
use crate::model::*;

/// How many pods a zone's count names.
pub(super) const NAMED: usize = 3;

/// How many pods a zone's count names.
/// The bound pods with required anti-affinity on a key other than the hostname (a new
/// node's hostname is free of them), grouped by term as Karpenter groups them (key,
/// selector and namespaces), each group with its pods per zone, in node and pod order.
/// Karpenter tracks such a pod while it is bound and not finished (its binding is dropped
/// then), being deleted or not (v1.14.1 `state.Cluster.ForPodsWithAntiAffinity`). Found
/// once per pass, or kept from the last while none changed ([`PoolSet::guards`]); a
/// pending pod then reads one group per term, not every pod.
pub struct Guards {
    pub(super) groups: Vec<GuardGroup>,
}

/// The running pods that share one anti-affinity term.
pub(super) struct GuardGroup {
    pub(super) term: PodAffinityTerm,
    /// The first of them (its namespace scopes the term), and its name.
    pub(super) owner: Pod,
    pub(super) owner_name: String,
    /// The term's selector and namespaces, in words.
    pub(super) what: String,
    /// Per zone, how many of them run there, and the first few by name.
    pub(super) zones: BTreeMap<String, (usize, Vec<String>)>,
    /// Their tolerations, each distinct list once (replicas share theirs).
    pub(super) tolerations: Vec<Shared<Vec<Toleration>>>,
}

impl Guards {
    pub fn new(c: &Cluster) -> Self {
        let mut groups: Vec<GuardGroup> = Vec::new();
        let mut by_term: BTreeMap<(String, String), usize> = BTreeMap::new();
        for n in c.nodes.values() {
            let zone = n.zone();
            for owner in c
                .pods_on(&n.metadata.name)
                .filter(|p| !p.finished() && p.spec.guards())
            {
                let name = pod_name(owner);
                for term in owner.spec.required_anti_affinity() {
                    if term.topology_key == labels::HOSTNAME {
                        continue;
                    }
                    let what = format!(
                        "the required anti-affinity ({}) of running pods",
                        term_words(term.label_selector.as_ref(), &scope(term, owner))
                    );
                    let at = *by_term
                        .entry((term.topology_key.clone(), what.clone()))
                        .or_insert_with(|| {
                            groups.push(GuardGroup {
                                term: term.clone(),
                                owner: owner.clone(),
                                owner_name: name.clone(),
                                what,
                                zones: BTreeMap::new(),
                                tolerations: Vec::new(),
                            });
                            groups.len() - 1
                        });
                    let g = &mut groups[at];
                    if !g
                        .tolerations
                        .iter()
                        .any(|t| std::ptr::eq(&**t, &*owner.spec.tolerations))
                    {
                        g.tolerations.push(owner.spec.tolerations.clone());
                    }
                    if let Some(z) = zone {
                        let (count, names) = g.zones.entry(z.to_string()).or_default();
                        *count += 1;
                        if names.len() < NAMED {
                            names.push(name.clone());
                        }
                    }
                }
            }
        }
        Guards { groups }
    }

    /// Whether no bound pod has such anti-affinity: then no pending pod is kept out.
    pub fn is_empty(&self) -> bool {
        self.groups.is_empty()
    }
}

/// The pods Karpenter has to place in this pass, as zone affinity reads them: found once
/// per pass ([`PoolSet::pending`]).
pub struct Pending {
    /// Every one, in the model's order.
    pods: Vec<Pod>,
    /// Those with required anti-affinity on the zone.
    zonal: Vec<Pod>,
}

impl Pending {
    pub fn new(c: &Cluster) -> Self {
        let pods: Vec<Pod> = c
            .unbound_pods()
            .filter(|p| super::pending::provisionable(p))
            .cloned()
            .collect();
        let zonal = pods
            .iter()
            .filter(|p| {
                p.spec
                    .required_anti_affinity()
                    .iter()
                    .any(|t| t.topology_key == labels::ZONE)
            })
            .cloned()
            .collect();
        Pending { pods, zonal }
    }

    /// Whether some pending pod has zone anti-affinity: then every pending pod's verdicts
    /// read the others.
    pub fn any_zonal(&self) -> bool {
        !self.zonal.is_empty()
    }

    /// Another pending pod a term of `pod`'s (in `namespaces`, by `sel`) selects, by name.
    pub(super) fn peer_selected(
        &self,
        pod: &Pod,
        namespaces: &Scope,
        sel: Option<&LabelSelector>,
    ) -> Option<String> {
        // A term without a labelSelector selects none.
        sel?;
        self.pods
            .iter()
            .find(|q| {
                !same_pod(q, pod)
                    && in_scope(namespaces, q)
                    && selector::matches(sel, &q.metadata.labels)
            })
            .map(pod_name)
    }

    /// Another pending pod whose zone anti-affinity selects `pod`, by name.
    pub(super) fn guarding(&self, pod: &Pod) -> Option<String> {
        self.zonal
            .iter()
            .find(|q| {
                !same_pod(q, pod)
                    && q.spec.required_anti_affinity().iter().any(|t| {
                        t.topology_key == labels::ZONE
                            && t.label_selector.is_some()
                            && selector::matches(t.label_selector.as_ref(), &pod.metadata.labels)
                            && term_covers(t, q, pod) != Some(false)
                    })
            })
            .map(pod_name)
    }
}

fn same_pod(a: &Pod, b: &Pod) -> bool {
    a.metadata.name == b.metadata.name && a.metadata.namespace == b.metadata.namespace
}

/// Per zone, how many pods a term counts there, and the first few by name.
pub(super) type ZoneCounts = BTreeMap<String, (usize, Vec<String>)>;

pub(super) fn in_scope(namespaces: &Scope, pod: &Pod) -> bool {
    namespaces.contains(pod.metadata.namespace.as_deref())
}

pub(super) fn pod_name(p: &Pod) -> String {
    format!(
        "{}/{}",
        p.metadata.namespace.as_deref().unwrap_or_default(),
        p.metadata.name
    )
}

/// A term's selector and namespaces, in words.
pub(super) fn term_words(sel: Option<&LabelSelector>, namespaces: &Scope) -> String {
    let sel = match sel {
        None => "no labelSelector: every pod".to_string(),
        Some(s) => {
            let mut parts: Vec<String> = s
                .match_labels
                .iter()
                .flatten()
                .map(|(k, v)| format!("{k}={v}"))
                .collect();
            for e in s.match_expressions.iter().flatten() {
                let values = e.values.as_deref().unwrap_or_default();
                parts.push(if values.is_empty() {
                    format!("{} {}", e.key, e.operator)
                } else {
                    format!("{} {} [{}]", e.key, e.operator, values.join(", "))
                });
            }
            if parts.is_empty() {
                "every pod".to_string()
            } else {
                parts.join(", ")
            }
        }
    };
    match namespaces {
        Scope::Names(list) if list.len() == 1 => format!("{sel}, in namespace {}", list[0]),
        Scope::Names(list) => format!("{sel}, in namespaces {}", list.join(", ")),
        Scope::All => format!("{sel}, in every namespace"),
        Scope::Unknown => sel,
    }
}
