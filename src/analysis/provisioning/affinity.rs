//! Zone pod affinity and anti-affinity for a pending pod on a new node, as Karpenter
//! v1.14.1's scheduler reads them (`Topology.AddRequirements`): the pod's own required
//! anti-affinity on `topology.kubernetes.io/zone` keeps it out of every zone where a pod
//! it selects runs; its own required affinity on the zone takes it only to such a zone,
//! or, where none runs in a zone the pod allows and the pod matches its own term, to any
//! zone; and the required zone anti-affinity of the pods already bound keeps the pods it
//! selects out of their zones (the inverse anti-affinity). A pool passes where one zone it
//! allows (with the pod's node term) is left by every rule at once.
//!
//! The pods a term counts are bound to a node kelp has, with a zone, not finished and not
//! being deleted, in the term's namespaces (a term without a labelSelector counts every
//! pod there, but selects none, the pending pod included). The running pods whose
//! anti-affinity counts are bound, not finished, being deleted or not ([`Guards`]).
//!
//! What stays unknown: a running pod's anti-affinity on a key other than the zone and the
//! hostname that selects the pod, or one whose namespaceSelector reads namespace labels
//! ([`ZoneAffinity::unjudged`]); the pod's own terms kelp does not judge are
//! [`super::topology::unjudged`]'s. A pool that names no zones may offer zones kelp does
//! not know: there a pod no known zone takes is unknown, never compatible.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::core::v1::{PodAffinityTerm, Toleration};

use super::super::fit::peers::{scope, term_covers, Scope};
use super::super::selector;
use super::affinity_index::{in_scope, term_words, NAMED};
use super::topology::{named_zones, tolerates_all, SpreadVerdict};
use super::PoolSet;
use crate::karpenter::labels;
use crate::karpenter::requirements::Requirements;
use crate::model::*;

/// Whether a pod's verdicts read the other pending pods Karpenter places in the same
/// batch: its own zone terms do, and so does every pod's while some pending pod has zone
/// anti-affinity.
pub fn reads_pending(pools: &PoolSet, spec: &PodSpec) -> bool {
    own_zone_terms(spec) || pools.pending().any_zonal()
}

/// Whether a pod's own required affinity or anti-affinity is on the zone (its verdicts
/// then read the bound pods of the term's namespaces).
pub fn own_zone_terms(spec: &PodSpec) -> bool {
    spec.required_pod_affinity()
        .iter()
        .chain(spec.required_anti_affinity())
        .any(|t| t.topology_key == labels::ZONE)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Affinity,
    Anti,
    /// A running pod's anti-affinity.
    Inverse,
}

/// One rule on the zone, counted.
#[derive(Debug, Clone, PartialEq)]
struct Rule {
    kind: Kind,
    /// Whose term it is and what it selects, in words.
    what: String,
    /// Per zone, the pods it counts there (selected pods; for a running pod's term, the
    /// pods that have it): how many, and the first few by name.
    zones: BTreeMap<String, (usize, Vec<String>)>,
    /// Affinity: the pending pod matches its own term.
    self_selecting: bool,
    /// The zones Karpenter knows for it: those every ready pool whose taints the term's
    /// pod tolerates names, and, for the pod's own terms, every node's.
    domains: BTreeSet<String>,
    /// Such a pool names no zones: it may offer any.
    open: bool,
    /// A running pods' rule whose pods tolerate different pools: the zones some of their
    /// pools name and others' do not. Karpenter reads the pools of whichever pod it meets
    /// first (a Go map's order), so these are neither left nor taken for sure.
    unsure: BTreeSet<String>,
}

/// Whether a rule leaves a zone to the pod.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Left {
    No,
    Maybe,
    Yes,
}

/// A pending pod's zone affinity rules: its own, and the running pods' that select it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ZoneAffinity {
    rules: Vec<Rule>,
    /// What of the running pods' anti-affinity kelp cannot judge for the pod, in words.
    pub unjudged: Option<String>,
}

impl ZoneAffinity {
    /// The pod's rules, counted against the pools' cluster.
    pub fn of(pools: &PoolSet, pod: &Pod) -> Self {
        let c = pools.cluster;
        let mut out = ZoneAffinity::default();
        let affinity = pod.spec.required_pod_affinity().iter();
        let anti = pod.spec.required_anti_affinity().iter();
        let own: Vec<(Kind, &PodAffinityTerm)> = affinity
            .map(|t| (Kind::Affinity, t))
            .chain(anti.map(|t| (Kind::Anti, t)))
            .filter(|(_, t)| t.topology_key == labels::ZONE)
            .collect();
        if !own.is_empty() {
            // The pod's own groups know every node's zone (`countDomains`) and those of the
            // pools it tolerates (`NewTopologyGroup`, taints honoured).
            let (mut domains, open) = pool_zones(pools, &pod.spec.tolerations);
            domains.extend(
                c.nodes
                    .values()
                    .filter_map(|n| n.zone())
                    .map(str::to_string),
            );
            for (kind, term) in own {
                let namespaces = scope(term, pod);
                if matches!(namespaces, Scope::Unknown) {
                    continue; // `unjudged` says so
                }
                let sel = term.label_selector.as_ref();
                let word = if kind == Kind::Affinity {
                    "affinity"
                } else {
                    "anti-affinity"
                };
                // Another pending pod it selects: Karpenter places the pods of a batch one
                // by one, each new node taking a zone, which kelp does not simulate. What
                // the running pods exclude stands; what a peer could still open does not.
                if let Some(peer) = pools.pending().peer_selected(pod, &namespaces, sel) {
                    out.unjudged.get_or_insert_with(|| batch_words(word, &peer));
                    if kind == Kind::Affinity {
                        continue;
                    }
                }
                // Counted once per pass for every pod with the same term.
                let words = term_words(sel, &namespaces);
                let zones = pools.zone_counts(&words, || {
                    pools
                        .spread_index()
                        .zone_pods(c, |ns| namespaces.contains(ns), sel, NAMED)
                });
                out.rules.push(Rule {
                    kind,
                    what: format!("its required pod {word} ({words})"),
                    zones: (*zones).clone(),
                    self_selecting: in_scope(&namespaces, pod)
                        && selector::matches(sel, &pod.metadata.labels),
                    domains: domains.clone(),
                    open,
                    unsure: BTreeSet::new(),
                });
            }
        }
        out.add_inverse(pools, pod);
        if let Some(owner) = pools.pending().guarding(pod) {
            out.unjudged.get_or_insert_with(|| format!(
                "the required pod anti-affinity on {} of pod {owner}, pending too, selects it: Karpenter places the pods of one batch one by one, each new node taking a zone, and kelp does not simulate that",
                labels::ZONE
            ));
        }
        // v1.15's --scheduler-config gives a pod with no spread of its own the cluster's
        // default constraints, with a selector from its Services and controller, which
        // kelp does not keep: a pool kelp finds fit is unknown for it, never compatible.
        let defaults = c
            .karpenter_setting("SCHEDULER_CONFIG")
            .is_some_and(|v| !v.trim().is_empty());
        if defaults && pod.spec.topology_spread_constraints.is_empty() {
            out.unjudged.get_or_insert_with(|| {
                "Karpenter gives a pod with no topology spread of its own the default constraints of its scheduler config (SCHEDULER_CONFIG, v1.15), which kelp does not judge".to_string()
            });
        }
        out
    }

    /// For a pod judged without the cluster's pods (`kelp what-if`): its own zone terms
    /// are not judged.
    pub fn offline(spec: &PodSpec) -> Self {
        let term = spec
            .required_pod_affinity()
            .iter()
            .chain(spec.required_anti_affinity())
            .find(|t| t.topology_key == labels::ZONE);
        ZoneAffinity {
            rules: Vec::new(),
            unjudged: term.map(|t| {
                format!(
                    "kelp does not judge required pod (anti-)affinity on {} without the pods running in the cluster",
                    t.topology_key
                )
            }),
        }
    }

    /// The running pods' anti-affinity that selects `pod`: one rule per term alike
    /// (namespaces and selector), as Karpenter groups them; its zones are the owners'.
    fn add_inverse(&mut self, pools: &PoolSet, pod: &Pod) {
        let mut inverse: Vec<Rule> = Vec::new();
        for g in &pools.guards().groups {
            // Karpenter's `selects`: a term without a selector selects no pod.
            if !selector::matches(g.term.label_selector.as_ref(), &pod.metadata.labels) {
                continue;
            }
            let name = &g.owner_name;
            match term_covers(&g.term, &g.owner, pod) {
                Some(false) => continue,
                Some(true) => {}
                None => {
                    self.unjudged.get_or_insert_with(|| format!(
                        "kelp cannot tell whether the required anti-affinity of running pod {name} keeps it out: its namespaceSelector reads namespace labels, and kelp keeps no Namespaces"
                    ));
                    continue;
                }
            }
            if g.term.topology_key != labels::ZONE {
                self.unjudged.get_or_insert_with(|| format!(
                    "kelp does not judge the required anti-affinity of running pod {name} on {}, which selects it and which Karpenter also places the pod by",
                    g.term.topology_key
                ));
                continue;
            }
            // The group's zones are those of the pools the first pod Karpenter meets
            // tolerates; where its pods tolerate different pools, the zones they disagree
            // on are unsure.
            let mut rule: Option<Rule> = None;
            for tolerations in &g.tolerations {
                let (domains, open) = pool_zones(pools, tolerations);
                let r = rule.get_or_insert_with(|| Rule {
                    kind: Kind::Inverse,
                    what: g.what.clone(),
                    zones: g.zones.clone(),
                    self_selecting: false,
                    domains: domains.clone(),
                    open,
                    unsure: BTreeSet::new(),
                });
                if r.domains != domains {
                    let all: BTreeSet<String> = r.domains.union(&domains).cloned().collect();
                    r.domains = r.domains.intersection(&domains).cloned().collect();
                    r.unsure.extend(all.difference(&r.domains).cloned());
                }
                r.open |= open;
            }
            inverse.extend(rule);
        }
        inverse.sort_by(|a, b| a.what.cmp(&b.what));
        self.rules.extend(inverse);
    }

    /// Whether any rule is counted (else every pool passes this dimension).
    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// The zones to try: the pool's own (`named`) the term allows, or every zone kelp knows
    /// that both allow.
    fn candidates<'a>(
        &'a self,
        named: Option<&'a BTreeSet<String>>,
        pool: &Requirements,
        term: &Requirements,
    ) -> BTreeSet<&'a str> {
        match named {
            Some(zones) => zones
                .iter()
                .filter(|z| term.allows(labels::ZONE, z))
                .map(String::as_str)
                .collect(),
            None => self
                .rules
                .iter()
                .flat_map(|r| r.domains.iter().chain(r.zones.keys()))
                .filter(|z| pool.allows(labels::ZONE, z) && term.allows(labels::ZONE, z))
                .map(String::as_str)
                .collect(),
        }
    }

    /// The zones every rule leaves for sure, of those the pool and the pod's node term
    /// allow, where the rules leave some and not others: Karpenter narrows the new
    /// NodeClaim to them before it picks instance types (`nodeclaim.go` `Add`).
    pub fn zones_left(&self, pool: &Requirements, term: &Requirements) -> Option<Vec<String>> {
        if self.rules.is_empty() {
            return None;
        }
        let named = named_zones(pool);
        let candidates = self.candidates(named.as_ref(), pool, term);
        let left: Vec<String> = candidates
            .iter()
            .filter(|z| {
                self.rules
                    .iter()
                    .all(|r| r.leaves(Some(z), term) == Left::Yes)
            })
            .map(|z| z.to_string())
            .collect();
        (!left.is_empty() && left.len() < candidates.len()).then_some(left)
    }

    /// Whether a zone the pool and the pod's node term allow is left by every rule. With
    /// a zone spread too (`spread`), Karpenter takes the one least-filled zone the spread
    /// allows and then the affinity's: kelp does not combine the two, and says unknown
    /// where the affinity leaves some zones and not others.
    pub fn judge(&self, pool: &Requirements, term: &Requirements, spread: bool) -> SpreadVerdict {
        if self.rules.is_empty() {
            return SpreadVerdict::Fits;
        }
        let named = named_zones(pool);
        let candidates = self.candidates(named.as_ref(), pool, term);
        let left = |z: Option<&str>| {
            self.rules
                .iter()
                .map(|r| r.leaves(z, term))
                .min()
                .unwrap_or(Left::Yes)
        };
        let mut best = candidates
            .iter()
            .map(|z| left(Some(z)))
            .max()
            .unwrap_or(Left::No);
        if named.is_none() {
            // A zone kelp does not know, that the pool may offer.
            best = best.max(left(None));
        }
        let restricts = candidates.iter().any(|z| left(Some(z)) != Left::Yes);
        let allowed = if candidates.is_empty() {
            "none known".to_string()
        } else {
            candidates.iter().copied().collect::<Vec<_>>().join(", ")
        };
        let why = || {
            let excluding: Vec<&Rule> = self
                .rules
                .iter()
                .filter(|r| {
                    candidates.is_empty()
                        || candidates
                            .iter()
                            .any(|z| r.leaves(Some(z), term) != Left::Yes)
                })
                .collect();
            let affinity = excluding.iter().any(|r| r.kind == Kind::Affinity);
            let anti = excluding.iter().any(|r| r.kind != Kind::Affinity);
            let kind = match (affinity, anti) {
                (true, true) => "pod affinity and anti-affinity",
                (true, false) => "pod affinity",
                _ => "pod anti-affinity",
            };
            let reasons: Vec<String> = excluding.iter().map(|r| r.explain()).collect();
            format!(
                "{kind} on {} leaves no zone the pool allows ({allowed}): {}",
                labels::ZONE,
                reasons.join("; ")
            )
        };
        match best {
            Left::Yes if spread && restricts => SpreadVerdict::Unknown(format!(
                "kelp does not judge zone spread and pod affinity on {} together: Karpenter takes the spread's least-filled zone, and the affinity leaves only some zones of the pool ({allowed})",
                labels::ZONE
            )),
            Left::Yes => SpreadVerdict::Fits,
            Left::Maybe if named.is_none() => SpreadVerdict::Unknown(format!(
                "{}; the pool names no zones, and without an instance-type catalogue kelp cannot tell whether it offers another",
                why()
            )),
            Left::Maybe => SpreadVerdict::Unknown(format!(
                "{}; the zones left are Karpenter's for those pods only where a pool they tolerate offers them, and a pool they tolerate names no zones, or they tolerate different pools",
                why()
            )),
            Left::No => SpreadVerdict::Rejected(why()),
        }
    }
}

impl Rule {
    /// Whether the rule leaves zone `z` (None: a zone kelp does not know) to the pod.
    fn leaves(&self, z: Option<&str>, term: &Requirements) -> Left {
        let has = |z: &str| self.zones.get(z).is_some_and(|(n, _)| *n > 0);
        match (self.kind, z) {
            (Kind::Anti, Some(z)) => {
                if has(z) {
                    Left::No
                } else {
                    Left::Yes
                }
            }
            (Kind::Anti, None) => Left::Maybe,
            (Kind::Inverse, Some(z)) if has(z) => Left::No,
            (Kind::Inverse, Some(z)) if self.domains.contains(z) => Left::Yes,
            (Kind::Inverse, Some(z)) if self.unsure.contains(z) => Left::Maybe,
            (Kind::Inverse, _) if self.open => Left::Maybe,
            (Kind::Inverse, _) => Left::No,
            (Kind::Affinity, Some(z)) if has(z) => Left::Yes,
            // No pod it selects runs in a zone the pod allows, and the pod selects itself:
            // any zone the pod and the pool allow (`nextDomainAffinity`).
            (Kind::Affinity, z)
                if self.self_selecting
                    && !self
                        .zones
                        .keys()
                        .any(|k| has(k) && term.allows(labels::ZONE, k)) =>
            {
                if z.is_some() {
                    Left::Yes
                } else {
                    Left::Maybe
                }
            }
            (Kind::Affinity, _) => Left::No,
        }
    }

    /// Why it keeps the pod out, in words.
    fn explain(&self) -> String {
        let counts = if self.zones.is_empty() {
            "none runs".to_string()
        } else {
            self.zones
                .iter()
                .map(|(z, (n, names))| {
                    let more = if *n > names.len() { ", ..." } else { "" };
                    format!("{z}: {n} ({}{more})", names.join(", "))
                })
                .collect::<Vec<_>>()
                .join(", ")
        };
        match self.kind {
            Kind::Anti => format!(
                "{} excludes the zones of the pods it selects: {counts}",
                self.what
            ),
            Kind::Inverse => {
                let domains = if self.domains.is_empty() {
                    "none named".to_string()
                } else {
                    self.domains.iter().cloned().collect::<Vec<_>>().join(", ")
                };
                let unsure = if self.unsure.is_empty() {
                    String::new()
                } else {
                    let z: Vec<&str> = self.unsure.iter().map(String::as_str).collect();
                    format!(
                        "; or also {}, as they tolerate different pools and Karpenter reads the pools of whichever it meets first",
                        z.join(", ")
                    )
                };
                format!(
                    "{} select it and exclude their zones: {counts} (Karpenter's zones for them are those of the pools they tolerate: {domains}{unsure})",
                    self.what
                )
            }
            Kind::Affinity if self.zones.is_empty() && !self.self_selecting => format!(
                "{} needs a zone where a pod it selects runs: none runs, and the pod does not match its own term",
                self.what
            ),
            Kind::Affinity => format!(
                "{} needs a zone where a pod it selects runs: {counts}",
                self.what
            ),
        }
    }
}

/// Why a pod whose zone term selects another pending pod is not judged, in words.
fn batch_words(word: &str, peer: &str) -> String {
    format!(
        "its required pod {word} on {} selects pod {peer}, pending too: Karpenter places the pods of one batch one by one, each new node taking a zone, and kelp does not simulate that",
        labels::ZONE
    )
}

/// The zones every ready pool whose taints `tolerations` tolerate names, and whether one
/// of them names none (Karpenter's `buildDomainGroups`, read with the taints honoured).
fn pool_zones(pools: &PoolSet, tolerations: &[Toleration]) -> (BTreeSet<String>, bool) {
    let mut zones = BTreeSet::new();
    let mut open = false;
    for p in pools.ordered.iter().filter(|p| p.not_ready.is_none()) {
        if !tolerates_all(tolerations, p) {
            continue;
        }
        match p.requirements.as_ref().ok().and_then(named_zones) {
            Some(named) => zones.extend(named),
            None => open = true,
        }
    }
    (zones, open)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::provisioning::topology::ZoneSpread;
    use crate::analysis::provisioning::{evaluate, Verdict};
    use crate::analysis::provisioning::{pod_requests, pod_terms};

    /// Pool `pool` naming `zones` (and `extra` in its template spec), nodes na, nb, nc in
    /// zones a, b, c, the bound pods `pods`, and the pending pod shop/pending with
    /// `labels` and `spec`: the pool's verdict and its first reason.
    fn verdict(
        zones: &str,
        extra: &str,
        pods: &str,
        labels: &str,
        spec: &str,
    ) -> (Verdict, String) {
        let mut yaml = format!(
            "apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {{name: zonal}}\nspec: {{template: {{spec: {{requirements: [{{key: topology.kubernetes.io/zone, operator: In, values: [{zones}]}}]{extra}}}}}}}\nstatus: {{conditions: [{{type: Ready, status: \"True\"}}]}}\n"
        );
        if zones.is_empty() {
            yaml = yaml.replace(
                "{key: topology.kubernetes.io/zone, operator: In, values: []}",
                "",
            );
        }
        for z in ["a", "b", "c"] {
            yaml += &format!("---\napiVersion: v1\nkind: Node\nmetadata: {{name: n{z}, labels: {{topology.kubernetes.io/zone: {z}}}}}\n");
        }
        yaml += pods;
        yaml += &format!("---\napiVersion: v1\nkind: Pod\nmetadata: {{name: pending, namespace: shop, labels: {{{labels}}}}}\nspec: {{{spec}}}\nstatus: {{phase: Pending}}\n");
        let mut c = Cluster::default();
        crate::source::load_str("t.yaml", &yaml, &mut c).unwrap();
        let pod = &c.pods[&("shop".to_string(), "pending".to_string())];
        let pools = PoolSet::new(&c);
        let zonal = pools.ordered.iter().find(|p| p.name == "zonal").unwrap();
        let v = evaluate(
            zonal,
            &pod.spec,
            &pod_requests(&pod.spec),
            &pod_terms(&pod.spec, pools.provider),
            &ZoneSpread::of(&pools, pod),
            &ZoneAffinity::of(&pools, pod),
        );
        let why = v
            .reasons
            .first()
            .map(|r| r.message.clone())
            .unwrap_or_default();
        (v.verdict, why)
    }

    #[test]
    fn default_spread_from_karpenters_scheduler_config_is_unknown_never_compatible() {
        let controller = |env: &str| {
            format!("---\napiVersion: v1\nkind: Pod\nmetadata: {{name: karpenter-0, namespace: kube-system, labels: {{app.kubernetes.io/name: karpenter}}}}\nspec: {{nodeName: na, containers: [{{name: controller, image: public.ecr.aws/karpenter/controller:1.15.0, env: [{env}]}}]}}\nstatus: {{phase: Running}}\n")
        };
        let config = controller("{name: SCHEDULER_CONFIG, value: 'podTopologySpread: {defaultConstraints: [{maxSkew: 1, topologyKey: topology.kubernetes.io/zone, whenUnsatisfiable: DoNotSchedule}]}'}");
        let (v, _) = verdict("a, b, c", "", "", "app: web", "containers: [{name: c}]");
        assert_eq!(v, Verdict::Compatible);
        let (v, why) = verdict(
            "a, b, c",
            "",
            &config,
            "app: web",
            "containers: [{name: c}]",
        );
        assert_eq!(v, Verdict::Unknown, "{why}");
        assert!(why.contains("SCHEDULER_CONFIG"), "{why}");
        // An empty config gives no defaults; a pod with spread of its own gets none either.
        let (v, _) = verdict(
            "a, b, c",
            "",
            &controller("{name: SCHEDULER_CONFIG, value: ''}"),
            "app: web",
            "containers: [{name: c}]",
        );
        assert_eq!(v, Verdict::Compatible);
        let own = "containers: [{name: c}], topologySpreadConstraints: [{maxSkew: 1, topologyKey: kubernetes.io/hostname, whenUnsatisfiable: ScheduleAnyway, labelSelector: {matchLabels: {app: web}}}]";
        let (v, why) = verdict("a, b, c", "", &config, "app: web", own);
        assert_ne!(v, Verdict::Unknown, "{why}");
    }

    /// A bound, running pod `ns/name` with `labels` on node `node`, with `spec`.
    fn bound(ns: &str, name: &str, labels: &str, node: &str, spec: &str) -> String {
        format!("---\napiVersion: v1\nkind: Pod\nmetadata: {{name: {name}, namespace: {ns}, labels: {{{labels}}}}}\nspec: {{nodeName: {node}{spec}}}\nstatus: {{phase: Running}}\n")
    }

    /// Required pod (anti-)affinity (`kind`: podAffinity or podAntiAffinity) on `key`
    /// selecting app=`app`, with `more` in the term.
    fn term(kind: &str, key: &str, app: &str, more: &str) -> String {
        format!("affinity: {{{kind}: {{requiredDuringSchedulingIgnoredDuringExecution: [{{labelSelector: {{matchLabels: {{app: {app}}}}}, topologyKey: {key}{more}}}]}}}}")
    }

    const ZONE: &str = "topology.kubernetes.io/zone";

    /// A pending pod Karpenter has to place, `shop/name` with `labels` and `spec`.
    fn waiting(name: &str, labels: &str, spec: &str) -> String {
        format!("---\napiVersion: v1\nkind: Pod\nmetadata: {{name: {name}, namespace: shop, labels: {{{labels}}}}}\nspec: {{{spec}}}\nstatus: {{phase: Pending, conditions: [{{type: PodScheduled, status: \"False\", reason: Unschedulable}}]}}\n")
    }

    #[test]
    fn the_predicted_launch_keeps_to_the_zones_the_anti_affinity_leaves() {
        // Karpenter narrows the NodeClaim to the zones left before it picks types: kwok's
        // types are offered in every zone, so the launch names test-zone-b alone.
        let yaml = format!(
            "apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {{name: zonal}}\nspec: {{template: {{spec: {{requirements: [{{key: {ZONE}, operator: In, values: [test-zone-a, test-zone-b]}}]}}}}}}\nstatus: {{conditions: [{{type: Ready, status: \"True\"}}]}}\n---\napiVersion: v1\nkind: Node\nmetadata: {{name: na, labels: {{{ZONE}: test-zone-a}}}}\n{}{}",
            bound("shop", "db-0", "app: db", "na", ""),
            waiting("web-0", "app: web", &format!("containers: [{{name: c, image: x, resources: {{requests: {{cpu: 100m}}}}}}], {}", term("podAntiAffinity", ZONE, "db", "")))
        );
        let mut c = Cluster::default();
        crate::source::load_str("t.yaml", &yaml, &mut c).unwrap();
        let catalog = std::sync::Arc::new(Catalog::kwok_builtin());
        let pools = PoolSet::new(&c).with_catalog(Some(&catalog));
        let pod = &c.pods[&("shop".to_string(), "web-0".to_string())];
        let v = evaluate(
            &pools.ordered[0],
            &pod.spec,
            &pod_requests(&pod.spec),
            &pod_terms(&pod.spec, pools.provider),
            &ZoneSpread::of(&pools, pod),
            &ZoneAffinity::of(&pools, pod),
        );
        assert_eq!(v.verdict, Verdict::Compatible, "{v:?}");
        let zones = &v.launch.as_ref().unwrap().cheapest[0].zones;
        assert_eq!(zones, &["test-zone-b"], "{v:?}");
    }

    #[test]
    fn pods_pending_together_are_not_judged_against_each_other() {
        // Karpenter places the pods of one batch one by one, each new node taking a zone
        // (v1.14.1 topology_test.go: one zonal anti-affinity pod per batch).
        let anti = term("podAntiAffinity", ZONE, "web", "");
        // Alone, a replica that keeps out of its peers' zones takes a free one.
        assert_eq!(
            verdict("a, b", "", "", "app: web", &anti).0,
            Verdict::Compatible
        );
        // With another replica pending: unknown, naming it.
        let peer = waiting("web-1", "app: web", &anti);
        let (v, why) = verdict("a, b", "", &peer, "app: web", &anti);
        assert_eq!(v, Verdict::Unknown, "{why}");
        assert!(why.contains("shop/web-1"), "{why}");
        // What the running pods exclude still rejects.
        let running = bound("shop", "web-0", "app: web", "na", "");
        let (v, why) = verdict("a", "", &(running + &peer), "app: web", &anti);
        assert_eq!(v, Verdict::Rejected, "{why}");
        // A pending pod's zone anti-affinity that selects the pod, which has no terms.
        let guard = waiting(
            "guard",
            "app: guard",
            &term("podAntiAffinity", ZONE, "web", ""),
        );
        let (v, why) = verdict("a, b", "", &guard, "app: web", "");
        assert_eq!(v, Verdict::Unknown, "{why}");
        assert!(why.contains("shop/guard"), "{why}");
        // Zone affinity to a pod still pending: Karpenter may place both; not judged.
        let affinity = term("podAffinity", ZONE, "db", "");
        let db = waiting("db-0", "app: db", "");
        let (v, why) = verdict("a", "", &db, "app: web", &affinity);
        assert_eq!(v, Verdict::Unknown, "{why}");
        // With no pod it selects, running or pending, it is rejected.
        assert_eq!(
            verdict("a", "", "", "app: web", &affinity).0,
            Verdict::Rejected
        );
    }

    #[test]
    fn the_pods_own_zone_anti_affinity_excludes_the_zones_of_the_pods_it_selects() {
        let db = bound("shop", "db-0", "app: db", "na", "");
        let anti = term("podAntiAffinity", ZONE, "db", "");
        // b is free: the pool takes it.
        assert_eq!(
            verdict("a, b", "", &db, "app: web", &anti).0,
            Verdict::Compatible
        );
        // Zone a only, where db-0 runs: rejected, naming the pod and the zone.
        let (v, why) = verdict("a", "", &db, "app: web", &anti);
        assert_eq!(v, Verdict::Rejected, "{why}");
        assert!(
            why.contains("a: 1 (shop/db-0)") && why.contains("app=db, in namespace shop"),
            "{why}"
        );
        // Another namespace's db counts only where the term looks there.
        let other = bound("data", "db-0", "app: db", "na", "");
        assert_eq!(
            verdict("a", "", &other, "app: web", &anti).0,
            Verdict::Compatible
        );
        let everywhere = term("podAntiAffinity", ZONE, "db", ", namespaceSelector: {}");
        assert_eq!(
            verdict("a", "", &other, "app: web", &everywhere).0,
            Verdict::Rejected
        );
        let by_name = term(
            "podAntiAffinity",
            ZONE,
            "db",
            ", namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: data}}",
        );
        assert_eq!(
            verdict("a", "", &other, "app: web", &by_name).0,
            Verdict::Rejected
        );
        // A namespaceSelector on other labels: kelp keeps no Namespaces.
        let by_team = term(
            "podAntiAffinity",
            ZONE,
            "db",
            ", namespaceSelector: {matchLabels: {team: data}}",
        );
        let (v, why) = verdict("a, b", "", &other, "app: web", &by_team);
        assert_eq!(v, Verdict::Unknown, "{why}");
        assert!(why.contains("namespaceSelector"), "{why}");
        // A finished db does not count, nor one being deleted.
        let done = db.replace("Running", "Succeeded");
        assert_eq!(
            verdict("a", "", &done, "app: web", &anti).0,
            Verdict::Compatible
        );
        let leaving = db.replace(
            "labels:",
            "deletionTimestamp: \"2026-01-01T00:00:00Z\", labels:",
        );
        assert_eq!(
            verdict("a", "", &leaving, "app: web", &anti).0,
            Verdict::Compatible
        );
        // A pool that names no zones may offer one kelp does not know.
        let all = bound("shop", "db-1", "app: db", "nb", "")
            + &bound("shop", "db-2", "app: db", "nc", "")
            + &db;
        let (v, why) = verdict("", "", &all, "app: web", &anti);
        assert_eq!(v, Verdict::Unknown, "{why}");
        assert!(why.contains("names no zones"), "{why}");
    }

    #[test]
    fn the_pods_own_zone_affinity_takes_only_a_zone_where_a_pod_it_selects_runs() {
        let affinity = term("podAffinity", ZONE, "db", "");
        let in_c = bound("shop", "db-0", "app: db", "nc", "");
        let (v, why) = verdict("a, b", "", &in_c, "app: web", &affinity);
        assert_eq!(v, Verdict::Rejected, "{why}");
        assert!(why.contains("c: 1 (shop/db-0)"), "{why}");
        let in_b = bound("shop", "db-0", "app: db", "nb", "");
        assert_eq!(
            verdict("a, b", "", &in_b, "app: web", &affinity).0,
            Verdict::Compatible
        );
        // No db anywhere: a pod that does not match its own term has nowhere to go...
        let (v, why) = verdict("a, b", "", "", "app: web", &affinity);
        assert_eq!(v, Verdict::Rejected, "{why}");
        assert!(why.contains("does not match its own term"), "{why}");
        // ... and one that does goes anywhere (the first of its kind).
        assert_eq!(
            verdict("a, b", "", "", "app: db", &affinity).0,
            Verdict::Compatible
        );
        // But not where a selected pod runs in a zone the pod allows, outside the pool.
        assert_eq!(
            verdict("a, b", "", &in_c, "app: db", &affinity).0,
            Verdict::Rejected
        );
        // A zone the pod's own node term keeps out does not count.
        let ab = format!("{affinity}, nodeSelector: {{topology.kubernetes.io/zone: a}}");
        assert_eq!(
            verdict("a, b", "", &in_c, "app: db", &ab).0,
            Verdict::Compatible
        );
        // Affinity on the hostname stays unknown.
        let host = term("podAffinity", "kubernetes.io/hostname", "db", "");
        assert_eq!(
            verdict("a, b", "", &in_b, "app: web", &host).0,
            Verdict::Unknown
        );
    }

    #[test]
    fn a_running_pods_zone_anti_affinity_keeps_the_pods_it_selects_out_of_its_zone() {
        let guard = |key: &str, more: &str| {
            bound(
                "shop",
                "lonely",
                "app: lonely",
                "na",
                &format!(", {}", term("podAntiAffinity", key, "web", more)),
            )
        };
        let zone = guard(ZONE, "");
        let (v, why) = verdict("a", "", &zone, "app: web", "");
        assert_eq!(v, Verdict::Rejected, "{why}");
        assert!(
            why.contains("a: 1 (shop/lonely)") && why.contains("app=web"),
            "{why}"
        );
        assert_eq!(
            verdict("a, b", "", &zone, "app: web", "").0,
            Verdict::Compatible
        );
        // Not a pod it selects, by labels or namespace.
        assert_eq!(
            verdict("a", "", &zone, "app: api", "").0,
            Verdict::Compatible
        );
        let elsewhere = zone.replace("namespace: shop", "namespace: data");
        assert_eq!(
            verdict("a", "", &elsewhere, "app: web", "").0,
            Verdict::Compatible
        );
        // Being deleted, it still holds its zone; finished, it does not.
        let leaving = zone.replace(
            "labels:",
            "deletionTimestamp: \"2026-01-01T00:00:00Z\", labels:",
        );
        assert_eq!(
            verdict("a", "", &leaving, "app: web", "").0,
            Verdict::Rejected
        );
        let done = zone.replace("Running", "Failed");
        assert_eq!(
            verdict("a", "", &done, "app: web", "").0,
            Verdict::Compatible
        );
        // On the hostname a new node is free of it; on another key kelp cannot tell.
        let host = guard("kubernetes.io/hostname", "");
        assert_eq!(
            verdict("a", "", &host, "app: web", "").0,
            Verdict::Compatible
        );
        let (v, why) = verdict("a", "", &guard("kubernetes.io/arch", ""), "app: web", "");
        assert_eq!(v, Verdict::Unknown, "{why}");
        assert!(why.contains("shop/lonely on kubernetes.io/arch"), "{why}");
        let by_team = guard(ZONE, ", namespaceSelector: {matchLabels: {team: web}}");
        assert_eq!(
            verdict("a", "", &by_team, "app: web", "").0,
            Verdict::Unknown
        );
    }

    #[test]
    fn a_running_pods_anti_affinity_knows_only_the_zones_of_the_pools_it_tolerates() {
        // Karpenter's group for a running pod's term knows the zones of the pools whose
        // taints that pod tolerates (NewTopologyGroup with its taints honoured): zone b
        // of a tainted pool the guard does not tolerate is no zone of its, so the pod it
        // selects is kept out of b too.
        let guard = bound(
            "shop",
            "lonely",
            "app: lonely",
            "na",
            &format!(", {}", term("podAntiAffinity", ZONE, "web", "")),
        );
        let taint = ", taints: [{key: dedicated, value: web, effect: NoSchedule}]";
        let tolerates = "tolerations: [{key: dedicated, operator: Exists}]";
        let (v, why) = verdict("a, b", taint, &guard, "app: web", tolerates);
        assert_eq!(v, Verdict::Rejected, "{why}");
        let tolerated = guard.replace(
            "spec: {nodeName: na",
            &format!("spec: {{{tolerates}, nodeName: na"),
        );
        assert_eq!(
            verdict("a, b", taint, &tolerated, "app: web", tolerates).0,
            Verdict::Compatible
        );
        // Two such pods, one tolerating the pool and one not: Karpenter reads the pools
        // of whichever it meets first (a Go map's order), so b is neither left nor taken.
        let both = guard.clone()
            + &tolerated
                .replace("name: lonely", "name: lonely-2")
                .replace("nodeName: na", "nodeName: nc");
        let (v, why) = verdict("a, b", taint, &both, "app: web", tolerates);
        assert_eq!(v, Verdict::Unknown, "{why}");
        assert!(why.contains("tolerate different pools"), "{why}");
    }

    #[test]
    fn with_a_zone_spread_too_a_restricting_affinity_is_unknown() {
        let db = bound("shop", "db-0", "app: db", "na", "");
        let spec = format!(
            "{}, topologySpreadConstraints: [{{maxSkew: 1, topologyKey: {ZONE}, whenUnsatisfiable: DoNotSchedule, labelSelector: {{matchLabels: {{app: web}}}}}}]",
            term("podAntiAffinity", ZONE, "db", "")
        );
        let (v, why) = verdict("a, b", "", &db, "app: web", &spec);
        assert_eq!(v, Verdict::Unknown, "{why}");
        assert!(why.contains("together"), "{why}");
    }
}
