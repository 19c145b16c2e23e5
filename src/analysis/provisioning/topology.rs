//! Zone topology spread for a pending pod, as Karpenter's scheduler counts it: for each
//! `DoNotSchedule` constraint on `topology.kubernetes.io/zone`, the pods it selects per
//! zone (bound, not terminating, in the pod's namespace), the zones Karpenter knows (those
//! of the nodes, and those every ready pool names, whether or not it admits the pod), and
//! whether a zone a pool allows stays within `maxSkew` once the pod lands there. The
//! minimum is taken over the known zones the pod's own term allows; with fewer of those
//! than `minDomains` it counts as 0, so a pool that offers fewer zones than that fills each
//! zone up to `maxSkew` and then takes no more.
//!
//! What kelp cannot know without an instance-type catalogue: the zones a pool that does
//! not name its zones can offer. There a pod no known zone takes is "unknown", never
//! compatible; a pool that names its zones is judged exactly. Hostname spread is always
//! satisfiable by a new node and is not checked. Zone pod affinity and anti-affinity are
//! [`super::affinity`]'s; pod affinity on other keys, anti-affinity on keys other than the
//! zone and the hostname, and spread on other keys are not judged: a pod with any of them
//! is "unknown" on a pool that passes the rest ([`unjudged`]).

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::core::v1::{Toleration, TopologySpreadConstraint};

use super::{PoolInfo, PoolSet};
use crate::karpenter::labels;
use crate::karpenter::requirements::{Operator, Requirements};
use crate::model::*;

/// One zone constraint, counted.
#[derive(Debug, Clone, PartialEq)]
pub struct ZoneSpread {
    max_skew: i64,
    min_domains: Option<i64>,
    /// Matching pods per known zone (0 for a zone with none).
    counts: BTreeMap<String, i64>,
}

/// What a pool's zones come to for the pod.
#[derive(Debug, Clone, PartialEq)]
pub enum SpreadVerdict {
    Fits,
    /// No zone the pool allows takes it: why.
    Rejected(String),
    /// No known zone takes it, and the pool may offer others.
    Unknown(String),
}

impl ZoneSpread {
    /// The pod's zone constraints that can refuse it, counted against the pools' cluster.
    pub fn of(pools: &PoolSet, pod: &Pod) -> Vec<ZoneSpread> {
        pod.spec
            .topology_spread_constraints
            .iter()
            .filter(|t| t.when_unsatisfiable == "DoNotSchedule" && t.topology_key == labels::ZONE)
            .map(|t| Self::count(pools, pod, t))
            .collect()
    }

    fn count(pools: &PoolSet, pod: &Pod, t: &TopologySpreadConstraint) -> ZoneSpread {
        let mut sel = t.label_selector.clone();
        for k in t.match_label_keys.iter().flatten() {
            if let (Some(s), Some(v)) = (sel.as_mut(), pod.metadata.labels.get(k)) {
                s.match_labels
                    .get_or_insert_with(Default::default)
                    .insert(k.clone(), v.clone());
            }
        }
        let mut counts: BTreeMap<String, i64> = BTreeMap::new();
        // Every zone Karpenter knows: the nodes' (that the pod may use) and the pools'.
        let ignore = t.node_affinity_policy.as_deref() == Some("Ignore");
        counts.extend(pools.spread_index().counts(pod, sel.as_ref(), ignore));
        // The zones every pool Karpenter schedules with names (`buildDomainGroups`: each
        // ready pool's, whether or not it admits the pod), taints aside as nodeTaintsPolicy
        // Ignore (the default) reads them; under Honor, the pools whose taints it tolerates.
        let honor_taints = t.node_taints_policy.as_deref() == Some("Honor");
        let counted = |p: &&PoolInfo| {
            p.not_ready.is_none() && (!honor_taints || tolerates_all(&pod.spec.tolerations, p))
        };
        for p in pools.ordered.iter().filter(counted) {
            let named = p.requirements.as_ref().ok().and_then(named_zones);
            for z in named.into_iter().flatten() {
                counts.entry(z).or_default();
            }
        }
        ZoneSpread {
            max_skew: i64::from(t.max_skew),
            min_domains: t.min_domains.map(i64::from),
            counts,
        }
    }

    /// Whether the pod lands in a zone the pool (and the pod's term) allows. As Karpenter's
    /// `domainMinCount`, the least-filled zone and the zones minDomains counts are those the
    /// pod's own term allows, whatever the pool allows.
    pub fn judge(&self, pool: &Requirements, term: &Requirements) -> SpreadVerdict {
        let pod_zones: Vec<i64> = self
            .counts
            .iter()
            .filter(|(z, _)| term.allows(labels::ZONE, z))
            .map(|(_, n)| *n)
            .collect();
        let below_min_domains = self
            .min_domains
            .is_some_and(|m| (pod_zones.len() as i64) < m);
        let min = if below_min_domains {
            0
        } else {
            pod_zones.iter().copied().min().unwrap_or(0)
        };
        let allowed = |z: &str| pool.allows(labels::ZONE, z) && term.allows(labels::ZONE, z);
        let fits = |n: i64| n + 1 - min <= self.max_skew;
        if self.counts.iter().any(|(z, n)| allowed(z) && fits(*n)) {
            return SpreadVerdict::Fits;
        }
        let pool_zones = named_zones(pool);
        let seen: Vec<String> = self
            .counts
            .iter()
            .filter(|(z, _)| allowed(z))
            .map(|(z, n)| format!("{z}: {n}"))
            .collect();
        let why = format!(
            "topology spread on {} (maxSkew {}{}) takes it in no zone: matching pods per zone {}; {}",
            labels::ZONE,
            self.max_skew,
            self.min_domains
                .map(|m| format!(", minDomains {m}"))
                .unwrap_or_default(),
            if seen.is_empty() {
                "(none known)".to_string()
            } else {
                seen.join(", ")
            },
            if below_min_domains {
                format!(
                    "with {} zones known that the pod allows, fewer than minDomains, the minimum counts as 0",
                    pod_zones.len()
                )
            } else {
                format!("the least-filled zone the pod allows has {min}")
            }
        );
        match pool_zones {
            // Every zone the pool can offer is known: exact.
            Some(_) => SpreadVerdict::Rejected(why),
            None => SpreadVerdict::Unknown(format!(
                "{why}; the pool names no zones, and without an instance-type catalogue kelp cannot tell whether it offers another"
            )),
        }
    }
}

/// Whether the pod tolerates every taint of the pool's template (Karpenter's
/// `Taints.ToleratesPod`, PreferNoSchedule included).
pub(super) fn tolerates_all(tolerations: &[Toleration], pool: &PoolInfo) -> bool {
    pool.pool.spec.template.spec.taints.iter().all(|taint| {
        tolerations
            .iter()
            .any(|tol| crate::karpenter::taints::tolerates(tol, taint))
    })
}

/// The zones a pool names with `In`, if it does.
pub(super) fn named_zones(pool: &Requirements) -> Option<BTreeSet<String>> {
    (pool.operator(labels::ZONE) == Some(Operator::In)).then(|| {
        pool.values(labels::ZONE)
            .map(|v| v.into_iter().map(str::to_string).collect())
            .unwrap_or_default()
    })
}

/// What of a pod's own required placement among other pods kelp does not judge for a new
/// node, in words: required pod affinity on a key other than the zone (on the hostname,
/// Karpenter may place several pending pods of one batch on one new node, and kelp does not
/// simulate batches), required anti-affinity on a key other than the zone and the hostname
/// (a new node's hostname is always free of them), a zone term whose namespaceSelector
/// reads namespace labels (kelp keeps no Namespaces), and `DoNotSchedule` spread on a key
/// other than the zone and the hostname. Karpenter judges each (v1.14.1
/// `Topology.AddRequirements`), so a pool kelp finds fit otherwise is "unknown" for such a
/// pod, never compatible. Zone affinity and anti-affinity, the pod's own and the running
/// pods', are judged ([`super::affinity`]).
pub fn unjudged(pod: &PodSpec) -> Option<String> {
    use super::super::fit::peers::scope_unknown;
    let namespaces = |kind: &str, t: &k8s_openapi::api::core::v1::PodAffinityTerm| {
        format!(
            "kelp does not judge required pod {kind} on {} whose namespaceSelector reads namespace labels (kelp keeps no Namespaces), which Karpenter also places the pod by",
            t.topology_key
        )
    };
    for term in pod.required_pod_affinity() {
        if term.topology_key == labels::HOSTNAME {
            return Some(format!(
                "kelp does not judge required pod affinity on {}: Karpenter may place the pods it selects, pending in the same batch, on the same new node",
                term.topology_key
            ));
        }
        if term.topology_key != labels::ZONE {
            return Some(format!(
                "kelp does not judge required pod affinity on {}, which Karpenter also places the pod by",
                term.topology_key
            ));
        }
        if scope_unknown(term) {
            return Some(namespaces("affinity", term));
        }
    }
    for term in pod.required_anti_affinity() {
        if term.topology_key == labels::HOSTNAME {
            continue;
        }
        if term.topology_key != labels::ZONE {
            return Some(format!(
                "kelp does not judge required pod anti-affinity on {}, which Karpenter also places the pod by",
                term.topology_key
            ));
        }
        if scope_unknown(term) {
            return Some(namespaces("anti-affinity", term));
        }
    }
    let spread = pod.topology_spread_constraints.iter().find(|t| {
        t.when_unsatisfiable == "DoNotSchedule"
            && t.topology_key != labels::ZONE
            && t.topology_key != labels::HOSTNAME
    });
    spread.map(|t| {
        format!(
            "kelp does not judge topology spread on {}, which Karpenter also places the pod by",
            t.topology_key
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::provisioning::pod_terms;
    use crate::karpenter::events::Category;

    /// Nodes na in zone a and nb in zone b.
    fn zone_nodes() -> String {
        use crate::testing::node;
        node("na").zone("a").yaml() + &node("nb").zone("b").yaml()
    }

    /// Two zones a and b with a node each, the pool naming `zones`, `peers` web pods in a.
    fn verdict(zones: &str, constraint: &str, peers: usize) -> SpreadVerdict {
        let zones_ab = zone_nodes();
        let mut yaml = format!(
            r#"
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {{name: zonal}}
spec:
  template:
    spec:
      requirements: [{zones}]
{zones_ab}---
apiVersion: v1
kind: Pod
metadata: {{name: pending, namespace: shop, labels: {{app: web}}}}
spec:
  topologySpreadConstraints: [{constraint}]
status: {{phase: Pending}}
"#
        );
        for (i, node) in ["na", "nb"].iter().cycle().take(peers).enumerate() {
            yaml.push_str(&format!(
                "---\napiVersion: v1\nkind: Pod\nmetadata: {{name: web-{i}, namespace: shop, labels: {{app: web}}}}\nspec: {{nodeName: {node}}}\nstatus: {{phase: Running}}\n"
            ));
        }
        let mut c = Cluster::default();
        crate::source::load_str("t.yaml", &yaml, &mut c).unwrap();
        let pod = &c.pods[&("shop".to_string(), "pending".to_string())];
        let pools = PoolSet::new(&c);
        let pool = pools.ordered[0].requirements.as_ref().unwrap();
        let term = &pod_terms(&pod.spec, pools.provider).unwrap()[0];
        ZoneSpread::of(&pools, pod)[0].judge(pool, term)
    }

    /// The first pool's verdict for pod shop/pending in `yaml`, its zone spread counted.
    fn pending_verdict(yaml: &str) -> crate::analysis::provisioning::PoolVerdict {
        use crate::analysis::provisioning::{evaluate, pod_requests};
        let mut c = Cluster::default();
        crate::source::load_str("t.yaml", yaml, &mut c).unwrap();
        let pod = &c.pods[&("shop".to_string(), "pending".to_string())];
        let pools = PoolSet::new(&c);
        let terms = pod_terms(&pod.spec, pools.provider);
        let spread = ZoneSpread::of(&pools, pod);
        let affinity = super::super::affinity::ZoneAffinity::of(&pools, pod);
        evaluate(
            &pools.ordered[0],
            &pod.spec,
            &pod_requests(&pod.spec),
            &terms,
            &spread,
            &affinity,
        )
    }

    const SPREAD: &str = "{maxSkew: 1, topologyKey: topology.kubernetes.io/zone, whenUnsatisfiable: DoNotSchedule, labelSelector: {matchLabels: {app: web}}";

    #[test]
    fn a_term_the_spread_refuses_is_relaxed_to_the_next() {
        use crate::analysis::provisioning::Verdict;
        // Two web pods in zone a, none in b. A term allowing a alone has fewer zones than
        // minDomains 2, so their minimum counts as 0 and a is over maxSkew 1; a term
        // allowing a and b takes b.
        let verdict_for = |terms: &str| {
            let zones_ab = zone_nodes();
            let mut yaml = format!(
                r#"
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {{name: zonal}}
spec: {{template: {{spec: {{requirements: [{{key: topology.kubernetes.io/zone, operator: In, values: [a, b]}}]}}}}}}
status: {{conditions: [{{type: Ready, status: "True"}}]}}
{zones_ab}---
apiVersion: v1
kind: Pod
metadata: {{name: pending, namespace: shop, labels: {{app: web}}}}
spec:
  topologySpreadConstraints: [{SPREAD}, minDomains: 2}}]
  affinity: {{nodeAffinity: {{requiredDuringSchedulingIgnoredDuringExecution: {{nodeSelectorTerms: [{terms}]}}}}}}
status: {{phase: Pending}}
"#
            );
            for i in 0..2 {
                yaml.push_str(&format!(
                    "---\napiVersion: v1\nkind: Pod\nmetadata: {{name: web-{i}, namespace: shop, labels: {{app: web}}}}\nspec: {{nodeName: na}}\nstatus: {{phase: Running}}\n"
                ));
            }
            let v = pending_verdict(&yaml);
            (v.verdict, v.reasons.first().map(|r| r.category))
        };
        let zone = |z: &str| {
            format!("{{matchExpressions: [{{key: topology.kubernetes.io/zone, operator: In, values: [{z}]}}]}}")
        };
        let only_a = verdict_for(&zone("a"));
        assert_eq!(only_a, (Verdict::Rejected, Some(Category::Topology)));
        // Zone a first: Karpenter relaxes it away and takes b.
        assert_eq!(
            verdict_for(&format!("{}, {}", zone("a"), zone("a, b"))),
            (Verdict::Compatible, None)
        );
        // Zone a last, after a term no pool meets: the last attempt's reason stands.
        assert_eq!(
            verdict_for(&format!("{}, {}", zone("c"), zone("a"))),
            (Verdict::Rejected, Some(Category::Topology))
        );
    }

    #[test]
    fn a_pool_is_compatible_only_where_kelp_judged_every_constraint() {
        use crate::analysis::provisioning::Verdict;
        let judged = |spec: &str| {
            let yaml = format!(
                r#"
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {{name: any}}
spec: {{template: {{spec: {{requirements: []}}}}}}
status: {{conditions: [{{type: Ready, status: "True"}}]}}
---
apiVersion: v1
kind: Pod
metadata: {{name: pending, namespace: shop, labels: {{app: web}}}}
spec: {{{spec}}}
status: {{phase: Pending}}
"#
            );
            let v = pending_verdict(&yaml);
            (v.verdict, v.reasons.first().map(|r| r.message.clone()))
        };
        let term = |key: &str| {
            format!("[{{labelSelector: {{matchLabels: {{app: cache}}}}, topologyKey: {key}}}]")
        };
        // A new node's hostname is free of every pod: hostname anti-affinity is judged.
        let anti = |key: &str| {
            format!(
                "affinity: {{podAntiAffinity: {{requiredDuringSchedulingIgnoredDuringExecution: {}}}}}",
                term(key)
            )
        };
        assert_eq!(
            judged(&anti("kubernetes.io/hostname")),
            (Verdict::Compatible, None)
        );
        assert_eq!(judged(""), (Verdict::Compatible, None));
        // Zone anti-affinity is judged; a pool that names no zones, with no zone known,
        // may offer one free of the pods it selects: unknown, never compatible.
        let zone_anti = judged(&anti("topology.kubernetes.io/zone"));
        assert_eq!(zone_anti.0, Verdict::Unknown);
        assert!(zone_anti.1.unwrap().contains("the pool names no zones"));
        // What kelp does not judge leaves the pool unknown.
        let affinity = format!(
            "affinity: {{podAffinity: {{requiredDuringSchedulingIgnoredDuringExecution: {}}}}}",
            term("kubernetes.io/hostname")
        );
        let on_hostname = judged(&affinity);
        assert_eq!(on_hostname.0, Verdict::Unknown);
        assert!(on_hostname.1.unwrap().contains("same batch"));
        let by_arch = judged(&anti("kubernetes.io/arch"));
        assert_eq!(by_arch.0, Verdict::Unknown);
        assert!(by_arch
            .1
            .unwrap()
            .contains("anti-affinity on kubernetes.io/arch"));
        let spread = SPREAD.replace("topology.kubernetes.io/zone", "karpenter.sh/capacity-type");
        let by_capacity = judged(&format!("topologySpreadConstraints: [{spread}}}]"));
        assert_eq!(by_capacity.0, Verdict::Unknown);
        assert!(by_capacity
            .1
            .unwrap()
            .contains("spread on karpenter.sh/capacity-type"));
    }

    #[test]
    fn min_domains_above_the_zones_a_pool_offers_fills_each_zone_to_max_skew() {
        let zones = "{key: topology.kubernetes.io/zone, operator: In, values: [a, b]}";
        let with_min = format!("{SPREAD}, minDomains: 3}}");
        // One pod in a and one in b: each zone is at maxSkew over a minimum of 0.
        assert!(
            matches!(verdict(zones, &with_min, 2), SpreadVerdict::Rejected(m) if m.contains("minDomains 3"))
        );
        // One pod only: b takes the next.
        assert_eq!(verdict(zones, &with_min, 1), SpreadVerdict::Fits);
        // Without minDomains the minimum is 1 once both zones have one: either takes it.
        assert_eq!(
            verdict(zones, &format!("{SPREAD}}}"), 2),
            SpreadVerdict::Fits
        );
    }

    #[test]
    fn a_pool_that_names_no_zones_is_unknown_never_compatible() {
        let any = "{key: kubernetes.io/os, operator: In, values: [linux]}";
        let with_min = format!("{SPREAD}, minDomains: 3}}");
        assert!(matches!(
            verdict(any, &with_min, 2),
            SpreadVerdict::Unknown(_)
        ));
        // ScheduleAnyway never refuses.
        let soft = format!(
            "{}, minDomains: 3}}",
            SPREAD.replace("DoNotSchedule", "ScheduleAnyway")
        );
        let mut c = Cluster::default();
        crate::source::load_str(
            "t.yaml",
            &format!("apiVersion: v1\nkind: Pod\nmetadata: {{name: p, namespace: shop}}\nspec: {{topologySpreadConstraints: [{soft}]}}\n"),
            &mut c,
        )
        .unwrap();
        let pod = c.pods.values().next().unwrap();
        let pools = PoolSet::new(&c);
        assert!(ZoneSpread::of(&pools, pod).is_empty());
    }

    /// Pool `zonal` naming `zones` and pool `arm` naming zone d for arm64 only, both ready;
    /// nodes in a and b (amd64) with a web pod each; the pending pod (amd64) with `affinity`
    /// and the spread, judged against `zonal`.
    fn two_pools(zones: &str, affinity: &str) -> SpreadVerdict {
        let pool = |name: &str, reqs: &str| {
            format!("---\napiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {{name: {name}}}\nspec: {{template: {{spec: {{requirements: [{reqs}]}}}}}}\nstatus: {{conditions: [{{type: Ready, status: \"True\"}}]}}\n")
        };
        let mut yaml = pool(
            "zonal",
            &format!("{{key: topology.kubernetes.io/zone, operator: In, values: [{zones}]}}"),
        ) + &pool(
            "arm",
            "{key: topology.kubernetes.io/zone, operator: In, values: [d]}, {key: kubernetes.io/arch, operator: In, values: [arm64]}",
        );
        for z in ["a", "b"] {
            yaml += &format!("---\napiVersion: v1\nkind: Node\nmetadata: {{name: n{z}, labels: {{topology.kubernetes.io/zone: {z}, kubernetes.io/arch: amd64}}}}\n---\napiVersion: v1\nkind: Pod\nmetadata: {{name: web-{z}, namespace: shop, labels: {{app: web}}}}\nspec: {{nodeName: n{z}}}\nstatus: {{phase: Running}}\n");
        }
        yaml += &format!("---\napiVersion: v1\nkind: Pod\nmetadata: {{name: pending, namespace: shop, labels: {{app: web}}}}\nspec:\n  nodeSelector: {{kubernetes.io/arch: amd64}}\n  affinity: {affinity}\n  topologySpreadConstraints: [{SPREAD}}}]\nstatus: {{phase: Pending}}\n");
        let mut c = Cluster::default();
        crate::source::load_str("t.yaml", &yaml, &mut c).unwrap();
        let pod = &c.pods[&("shop".to_string(), "pending".to_string())];
        let pools = PoolSet::new(&c);
        let zonal = pools.ordered.iter().find(|p| p.name == "zonal").unwrap();
        let term = &pod_terms(&pod.spec, pools.provider).unwrap()[0];
        ZoneSpread::of(&pools, pod)[0].judge(zonal.requirements.as_ref().unwrap(), term)
    }

    #[test]
    fn the_least_filled_zone_is_taken_over_the_zones_the_pod_allows() {
        // a: 1, b: 1, c: 0 (zonal names it), d: 0 (arm names it). Karpenter's domainMinCount
        // reads only the zones the pod's own requirements allow: with a and b, the minimum
        // is 1 and either takes the pod.
        let ab = "{nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: [{matchExpressions: [{key: topology.kubernetes.io/zone, operator: In, values: [a, b]}]}]}}}";
        assert_eq!(two_pools("a, b, c", ab), SpreadVerdict::Fits);
    }

    #[test]
    fn every_ready_pools_zones_are_domains_whether_or_not_it_admits_the_pod() {
        // Karpenter's domains are every ready pool's zones (buildDomainGroups), so d, named
        // only by the arm64 pool the pod cannot use, is an empty domain: the minimum is 0,
        // and a and b, all zonal offers, are at maxSkew.
        let v = two_pools("a, b", "{}");
        assert!(
            matches!(v, SpreadVerdict::Rejected(ref m) if m.contains("the least-filled zone the pod allows has 0")),
            "{v:?}"
        );
        // A pod that does not allow d is not held back by it.
        let ab = "{nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: [{matchExpressions: [{key: topology.kubernetes.io/zone, operator: In, values: [a, b]}]}]}}}";
        assert_eq!(two_pools("a, b", ab), SpreadVerdict::Fits);
    }
}
