//! What holds a pending pod: the one (category, NodePool) that answers "why is it still
//! pending", computed once per pass from its verdicts. The SLI gauge
//! `karpenter_helper_unschedulable_pods` counts pods by it.

use std::sync::Arc;

use super::provisioning::{cluster_provider, PodDiagnosis, PoolAdmits, PoolVerdict, Verdict};
use crate::model::shared::FastMap;
use crate::model::Cluster;

/// What holds one pending pod.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Hold {
    /// `compatible`, `no-nodepools`, `unknown`, or the first reason's category in kebab
    /// case (`limits`, `taints`, `requirements`, `topology`, ...).
    pub category: String,
    /// The pool that holds it; empty when no pool is meant for the pod.
    pub nodepool: String,
}

/// The hold of every pending pod, in `pending`'s order. Replicas share their verdicts, so
/// each distinct verdict list is judged once, and its hold shared.
pub fn holds(c: &Cluster, pending: &[Arc<PodDiagnosis>]) -> Vec<Arc<Hold>> {
    holds_with(c, pending, &mut KeptHolds::default())
}

/// Holds by the verdict list they were judged from (by its address; the list is kept
/// beside, so no other takes that address): one list is one scheduling spec and
/// affinity judged against the pools, which is all a hold reads besides the pools (a
/// change of the pools makes new lists).
pub type KeptHolds = FastMap<usize, (Arc<Vec<Arc<PoolVerdict>>>, Arc<Hold>)>;

/// [`holds`], taking the hold of a verdict list from `kept` where it is there; `kept`
/// is left with the lists this pass asked for.
pub fn holds_with(
    c: &Cluster,
    pending: &[Arc<PodDiagnosis>],
    kept: &mut KeptHolds,
) -> Vec<Arc<Hold>> {
    let mut admits = None;
    let mut asked = KeptHolds::default();
    let mut out = Vec::with_capacity(pending.len());
    for d in pending {
        let key = Arc::as_ptr(&d.nodepools) as usize;
        if let Some((_, h)) = asked.get(&key) {
            out.push(h.clone());
            continue;
        }
        let entry = kept.remove(&key).unwrap_or_else(|| {
            let admits = admits.get_or_insert_with(|| PoolAdmits::new(c, cluster_provider(c)));
            let ns = d.pod.namespace.clone().unwrap_or_default();
            let pod = c.pods.get(&(ns, d.pod.name.clone()));
            let h = hold(
                &verdicts(d),
                |pool| pod.is_some_and(|p| admits.admits(pool, &p.spec)),
                |pool| pod.is_some_and(|p| admits.requirements_admit(pool, &p.spec)),
            );
            (d.nodepools.clone(), Arc::new(h))
        });
        out.push(entry.1.clone());
        asked.insert(key, entry);
    }
    *kept = asked;
    out
}

/// (pool, verdict, first reason's category) of each verdict, in Karpenter's order.
fn verdicts(d: &PodDiagnosis) -> Vec<(String, &'static str, Option<String>)> {
    d.nodepools
        .iter()
        .map(|v| {
            let verdict = match v.verdict {
                Verdict::Rejected => "rejected",
                Verdict::Compatible => "compatible",
                Verdict::Unknown => "unknown",
            };
            let cat = v.reasons.first().map(|r| kebab(&r.category));
            (v.name.clone(), verdict, cat)
        })
        .collect()
}

fn kebab<T: serde::Serialize>(v: &T) -> String {
    serde_json::to_value(v)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_else(|| "other".into())
}

/// What holds a pending pod, from its pools' verdicts in Karpenter's order, each as
/// (pool, verdict, first reason's category).
///
/// A pool that rejects the pod for its taints or requirements is not meant for it. The
/// pod is held by the first pool (in Karpenter's order) that is: rejected after those
/// checks (topology, volumes, instance types), or before them (not ready, limits) while its
/// taints and requirements would admit the pod (`admits`); `compatible` when a pool could
/// take it (the holdup is capacity or Karpenter itself). Else by the first pool rejecting it
/// for taints whose requirements admit it (`requirements_admit`: only a toleration is
/// missing). When no pool is meant for the pod, the category is `validation` if the pod is
/// invalid, else `requirements` (or the first pool's category), with no nodepool.
pub fn hold(
    verdicts: &[(String, &str, Option<String>)],
    admits: impl Fn(&str) -> bool,
    requirements_admit: impl Fn(&str) -> bool,
) -> Hold {
    let h = |category: &str, nodepool: &str| Hold {
        category: category.to_string(),
        nodepool: nodepool.to_string(),
    };
    if verdicts.is_empty() {
        return h("no-nodepools", "");
    }
    if let Some((pool, _, _)) = verdicts.iter().find(|(_, v, _)| *v == "compatible") {
        return h("compatible", pool);
    }
    let cats: Vec<&str> = verdicts
        .iter()
        .map(|(_, verdict, cat)| match *verdict {
            "rejected" => cat.as_deref().unwrap_or("other"),
            _ => "unknown",
        })
        .collect();
    for ((pool, _, _), &cat) in verdicts.iter().zip(&cats) {
        match cat {
            "taints" | "requirements" | "validation" => continue,
            "topology" | "volumes" => return h(cat, pool),
            _ if admits(pool) => return h(cat, pool),
            _ => {}
        }
    }
    if cats.contains(&"validation") {
        return h("validation", "");
    }
    for ((pool, _, _), &cat) in verdicts.iter().zip(&cats) {
        if cat == "taints" && requirements_admit(pool) {
            return h(cat, pool);
        }
    }
    if cats.iter().any(|&c| c == "requirements" || c == "taints") {
        h("requirements", "")
    } else {
        h(cats[0], "")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(
        pool: &str,
        verdict: &'static str,
        cat: Option<&str>,
    ) -> (String, &'static str, Option<String>) {
        (pool.into(), verdict, cat.map(str::to_string))
    }

    fn h(category: &str, nodepool: &str) -> Hold {
        Hold {
            category: category.into(),
            nodepool: nodepool.into(),
        }
    }

    #[test]
    fn a_pod_is_held_by_the_first_pool_meant_for_it() {
        let none = |_: &str| false;
        let all = |_: &str| true;
        assert_eq!(hold(&[], none, none), h("no-nodepools", ""));
        // A pool that could take it.
        let vs = [
            v("gpu", "rejected", Some("taints")),
            v("web", "compatible", None),
        ];
        assert_eq!(hold(&vs, none, none), h("compatible", "web"));
        // A full pool the pod is not meant for does not hold it; one it is meant for does.
        let vs = [
            v("full", "rejected", Some("limits")),
            v("gpu", "rejected", Some("taints")),
            v("web", "rejected", Some("requirements")),
        ];
        assert_eq!(hold(&vs, none, none), h("requirements", ""));
        let full = |p: &str| p == "full";
        assert_eq!(hold(&vs, full, all), h("limits", "full"));
        // Only a toleration missing for gpu: its taints hold the pod.
        let gpu = |p: &str| p == "gpu";
        assert_eq!(hold(&vs, none, gpu), h("taints", "gpu"));
        // Past the pool's selection checks: that pool holds it.
        let vs = [
            v("a", "rejected", Some("requirements")),
            v("b", "rejected", Some("topology")),
        ];
        assert_eq!(hold(&vs, none, none), h("topology", "b"));
        let vs = [
            v("a", "rejected", Some("validation")),
            v("b", "rejected", Some("limits")),
        ];
        assert_eq!(hold(&vs, none, all), h("validation", ""));
        let vs = [v("a", "unknown", Some("requirements"))];
        assert_eq!(hold(&vs, none, none), h("unknown", ""));
        assert_eq!(hold(&vs, all, all), h("unknown", "a"));
    }
}
