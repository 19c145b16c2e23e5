//! The instance-type dimension of a pool's verdict, computed from a catalogue the way
//! Karpenter v1.14.1's scheduler filters types: once per pool and pass, the types its
//! template admits with an available offering (else Karpenter drops the pool:
//! NoCompatibleInstanceTypes) and, of those, the ones within what is left of its limits
//! (capacity against limits); then per pod, the types whose requirements meet the
//! NodeClaim's (pool's and pod's), with an offering in an allowed zone and capacity type,
//! whose allocatable holds the pod's requests, one pod, and the DaemonSets that would run
//! there; then minValues. What survives predicts the launch: the cheapest offering.
//!
//! A catalogue may not know everything (a type's architecture, its pods): a check it
//! cannot settle is "unknown", and the verdict is compatible only if some type passes
//! every check for certain.

use std::collections::BTreeSet;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use serde::Serialize;

use crate::karpenter::instance_types::FilterTally;
use crate::karpenter::labels;
use crate::karpenter::requirements::{self, Operator, Provider, Requirements};
use crate::karpenter::resources::{format_quantity, Resources};
use crate::karpenter::taints;
use crate::model::{Catalog, CatalogSource, Cluster, HostPort, InstanceType, PodSpec};

use super::pending::{daemon_terms, pod_requests};

/// A three-way answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tri {
    Yes,
    No,
    Unknown,
}

impl Tri {
    fn and(self, other: Tri) -> Tri {
        match (self, other) {
            (Tri::No, _) | (_, Tri::No) => Tri::No,
            (Tri::Yes, Tri::Yes) => Tri::Yes,
            _ => Tri::Unknown,
        }
    }
}

/// Label keys that belong to the instance type (not to the node that runs it): a node of
/// a type shows them, and a catalogue that is not complete for a type cannot say it lacks
/// one.
pub(crate) fn type_key(key: &str) -> bool {
    matches!(key, labels::ARCH | labels::OS | labels::INSTANCE_TYPE)
        || key.starts_with("karpenter.k8s.aws/instance-")
        || key.starts_with("karpenter.kwok.sh/instance-")
}

/// Whether a type's requirements meet `reqs` (Karpenter's `Intersects`: only keys both
/// define; zone and capacity type are the type's offerings').
pub fn type_compatible(it: &InstanceType, reqs: &Requirements) -> Tri {
    let mut out = Tri::Yes;
    // Its zones and capacity types are its offerings' (all of them, available or not),
    // each one certain: some allowed is enough. Read in place: this runs per type per pod.
    let offered = [
        (
            labels::ZONE,
            (|o| &o.zone) as fn(&crate::model::TypeOffering) -> &String,
        ),
        (labels::CAPACITY_TYPE, |o| &o.capacity_type),
    ];
    for (key, value) in offered {
        if reqs.defines(key)
            && !it.offerings.is_empty()
            && !it.offerings.iter().any(|o| reqs.allows(key, value(o)))
        {
            out = Tri::No;
        }
    }
    for (key, values) in &it.labels {
        let key = key.as_str();
        if !reqs.defines(key) || values.is_empty() {
            continue;
        }
        let allowed = values.iter().filter(|v| reqs.allows(key, v)).count();
        let uncertain = it.uncertain.iter().any(|k| k == key);
        let this = match (allowed, uncertain) {
            (0, _) => Tri::No,
            (_, false) => Tri::Yes,
            (n, true) if n == values.len() => Tri::Yes,
            _ => Tri::Unknown,
        };
        out = out.and(this);
    }
    for key in reqs.keys() {
        if !type_key(key) || it.labels.contains_key(key) {
            continue;
        }
        // A provider defines every one of its instance labels on each of its types
        // (DoesNotExist where it does not apply): a complete type lacking one of its own
        // provider's keys lacks the label. A key of another domain it does not define at
        // all, and Karpenter compares only the keys both sides define.
        let domain = key.split('/').next().unwrap_or_default();
        let own_domain = it
            .labels
            .keys()
            .any(|k| k.starts_with(domain) && k.contains('/'));
        out = out.and(match (it.complete, own_domain) {
            (false, _) => Tri::Unknown,
            (true, false) => Tri::Yes,
            (true, true) => match reqs.operator(key) {
                Some(Operator::NotIn | Operator::DoesNotExist) => Tri::Yes,
                _ => Tri::No,
            },
        });
    }
    out
}

/// Whether the type has an available offering in a zone and capacity type `reqs` allow;
/// its cheapest such price if so.
fn offering(it: &InstanceType, reqs: &Requirements) -> Option<Option<f64>> {
    let mut found = None;
    for o in it.offerings.iter().filter(|o| o.available) {
        if reqs.allows(labels::ZONE, &o.zone)
            && reqs.allows(labels::CAPACITY_TYPE, &o.capacity_type)
        {
            let best: &mut Option<f64> = found.get_or_insert(None);
            *best = match (*best, o.price) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
        }
    }
    found
}

/// Whether `requests` fit the type's allocatable (every requested resource, a missing
/// one counting as none).
pub fn fits(it: &InstanceType, requests: &Resources) -> Tri {
    // Karpenter's Fits: a type with any negative allocatable holds nothing.
    if it.allocatable.0.values().any(|v| *v < 0.0) {
        return Tri::No;
    }
    let mut out = Tri::Yes;
    for (r, &q) in &requests.0 {
        if q <= 0.0 {
            continue;
        }
        let most = if !it.complete
            && !it.capacity.0.contains_key(r)
            && it
                .allocatable_most
                .as_ref()
                .is_none_or(|m| !m.0.contains_key(r))
        {
            f64::INFINITY
        } else {
            it.allocatable_most(r)
        };
        out = out.and(if le(q, it.allocatable.get(r)) {
            Tri::Yes
        } else if !le(q, most) {
            Tri::No
        } else {
            Tri::Unknown
        });
    }
    out
}

/// The pod's requests with the DaemonSets' overhead, as Karpenter prints them after
/// `resources=`: one list when every type carries the same overhead, else
/// `min=..., max=...` over the types' overheads (per resource, the least over the resources
/// every overhead names, and the most over any). Types where no DaemonSet runs are not
/// counted; with none anywhere, the pod's requests alone.
fn shown_resources<'a>(pod: &Resources, overheads: impl Iterator<Item = &'a Resources>) -> String {
    let mut bounds: Option<(Resources, Resources)> = None;
    for o in overheads.filter(|o| !o.0.is_empty()) {
        match &mut bounds {
            None => bounds = Some((o.clone(), o.clone())),
            Some((least, most)) => {
                least.0.retain(|k, v| match o.0.get(k) {
                    Some(x) => {
                        *v = v.min(*x);
                        true
                    }
                    None => false,
                });
                for (k, x) in &o.0 {
                    let v = most.0.entry(k.clone()).or_insert(*x);
                    *v = v.max(*x);
                }
            }
        }
    }
    let Some((least, most)) = bounds else {
        return render_resources(pod);
    };
    let total = |o: &Resources| {
        let mut t = pod.clone();
        t.add(o);
        render_resources(&t)
    };
    let (low, high) = (total(&least), total(&most));
    if low == high {
        low
    } else {
        format!("min={low}, max={high}")
    }
}

/// A DaemonSet's pod as Karpenter counts it into a pool's overhead.
pub struct Daemon {
    spec: PodSpec,
    requests: Resources,
    terms: Result<Vec<Requirements>, String>,
    /// The host ports its containers take.
    ports: Vec<HostPort>,
}

/// Every DaemonSet's template, with its requests and requirement terms (unvalidated:
/// [`daemon_terms`]), once per pass.
pub fn daemons(c: &Cluster) -> Vec<Daemon> {
    c.daemonsets
        .values()
        .map(|d| {
            let spec = d.spec.template.spec.clone();
            Daemon {
                requests: pod_requests(&spec),
                terms: daemon_terms(&spec),
                ports: container_host_ports(&spec),
                spec,
            }
        })
        .collect()
}

/// The host ports a pod's containers take, as Karpenter counts them (`GetHostPorts`:
/// containers, not init containers).
pub fn container_host_ports(spec: &PodSpec) -> Vec<HostPort> {
    spec.containers
        .iter()
        .flat_map(|c| c.host_ports.iter().cloned())
        .collect()
}

/// One type a pool can launch, with what Karpenter adds to every pod's requests there.
struct Candidate {
    /// Its index in the catalogue.
    it: usize,
    /// The pool's template admits it (Yes or Unknown) and it is within the limits.
    sure: bool,
    /// DaemonSet requests and pods.
    overhead: Resources,
    /// The host ports those DaemonSets take.
    ports: Vec<HostPort>,
}

/// A pool's instance types for one pass.
pub struct PoolTypes {
    catalog: Arc<Catalog>,
    pub source: CatalogSource,
    /// The least of each limited resource a type the pool admits has: once less than that
    /// is left of a limit, no type is left for the pool.
    pub smallest: std::collections::BTreeMap<String, f64>,
    provider: Provider,
    candidates: Vec<Candidate>,
    /// Why the pool takes no pod at all, if so (before its taints and requirements).
    pub pool_reject: Option<Reject>,
}

/// The instance types' answer for the pool alone, or for a pod.
#[derive(Debug, Clone, PartialEq)]
pub enum Reject {
    /// Karpenter's words, and whether it is about limits.
    No {
        message: String,
        limits: bool,
    },
    Unknown(String),
}

/// What Karpenter would launch for a pod on a pool.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Launch {
    /// How many instance types the NodeClaim would carry.
    pub instance_types: usize,
    /// The cheapest options, best first (at most three).
    pub cheapest: Vec<LaunchOption>,
    /// Types the catalogue cannot settle (their architecture, pods, ...) that might also
    /// hold the pod, and the cheapest offering among them: Karpenter might launch one.
    #[serde(skip_serializing_if = "is_zero")]
    pub unsure: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unsure_cheapest: Option<Dollars>,
    /// What the catalogue was.
    pub catalog: CatalogSource,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// One instance type with its best offering.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LaunchOption {
    pub instance_type: String,
    pub capacity_type: String,
    /// The zones at that price (Karpenter picks one of them).
    pub zones: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub price_per_hour: Option<Dollars>,
}

/// A price that can sit in a hashed verdict.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(transparent)]
pub struct Dollars(pub f64);

impl Eq for Dollars {}
impl Hash for Dollars {
    fn hash<H: Hasher>(&self, h: &mut H) {
        self.0.to_bits().hash(h)
    }
}

/// The instance-type dimension for one pod.
#[derive(Debug, Clone, PartialEq)]
pub enum TypeVerdict {
    Compatible(Launch),
    Rejected(String),
    Unknown(String),
}

impl PoolTypes {
    /// The pool's types: those its template admits with an available offering, within
    /// what is left of its limits (`usage` against `limits`).
    pub fn of(
        catalog: &Arc<Catalog>,
        pool: &crate::model::NodePool,
        pool_reqs: &Requirements,
        limits: Option<&Resources>,
        usage: &Resources,
        daemons: &[Daemon],
        provider: Provider,
    ) -> Self {
        let name = &pool.metadata.name;
        // The DaemonSets that run on the pool's nodes (Karpenter's `isDaemonPodCompatible`):
        // they tolerate its taints and one of their terms is compatible with its template,
        // registered and initialized labels included, and meets the instance type.
        let pool_taints = &pool.spec.template.spec.taints;
        let template = pool_reqs.with_node_lifecycle();
        let running: Vec<(&Daemon, Vec<&Requirements>)> = daemons
            .iter()
            .filter(|d| taints::untolerated(&d.spec.tolerations, pool_taints).is_empty())
            .filter_map(|d| {
                let terms: Vec<&Requirements> = d
                    .terms
                    .as_ref()
                    .ok()?
                    .iter()
                    .filter(|t| requirements::compatible(t, &template).is_ok())
                    .collect();
                (!terms.is_empty()).then_some((d, terms))
            })
            .collect();
        let mut admitted = Vec::new();
        let (mut any_maybe, mut limited_out, mut maybe_limited) = (false, false, false);
        // The least of each limited resource an admitted type has, to say what is short.
        let mut smallest: std::collections::BTreeMap<&str, f64> = Default::default();
        // The types the pool's own requirements admit for certain (its minValues count them).
        let (mut pool_sure, mut pool_unsure): (Vec<&InstanceType>, bool) = (Vec::new(), false);
        for (index, it) in catalog.instance_types.iter().enumerate() {
            let pool_ok = type_compatible(it, pool_reqs);
            if pool_ok == Tri::No || offering(it, pool_reqs).is_none() {
                continue;
            }
            any_maybe = true;
            if pool_ok == Tri::Yes {
                pool_sure.push(it);
            } else {
                pool_unsure = true;
            }
            for r in limits.iter().flat_map(|l| l.0.keys()) {
                if let Some(&cap) = it.capacity.0.get(r) {
                    let e = smallest.entry(r.as_str()).or_insert(cap);
                    *e = e.min(cap);
                }
            }
            let within = limits.map_or(Tri::Yes, |l| within_limits(it, l, usage));
            match within {
                Tri::No => {
                    limited_out = true;
                    continue;
                }
                Tri::Unknown => maybe_limited = true,
                Tri::Yes => {}
            }
            let mut overhead = Resources::default();
            let mut ports = Vec::new();
            let mut count = 0.0;
            for (d, terms) in &running {
                if terms
                    .iter()
                    .any(|term| type_compatible(it, term) != Tri::No)
                {
                    overhead.add(&d.requests);
                    ports.extend(d.ports.iter().cloned());
                    count += 1.0;
                }
            }
            if count > 0.0 {
                overhead.add(&Resources([("pods".to_string(), count)].into()));
            }
            admitted.push(Candidate {
                it: index,
                sure: pool_ok == Tri::Yes && within == Tri::Yes,
                overhead,
                ports,
            });
        }
        let short_min_values = pool_reqs.min_values().any(|(key, min)| {
            let values: BTreeSet<&str> = pool_sure
                .iter()
                .flat_map(|it| label_values(it, key))
                .collect();
            (values.len() as i64) < min
        });
        let pool_reject = if !any_maybe {
            Some(Reject::No {
                message:
                    "NodePool requirements filtered out all compatible available instance types"
                        .into(),
                limits: false,
            })
        } else if short_min_values && !pool_unsure {
            Some(Reject::No {
                message: "NodePool requirements filtered out all compatible available instance types due to minValues incompatibility".into(),
                limits: false,
            })
        } else if admitted.is_empty() && limited_out {
            let short: Vec<String> = smallest
                .iter()
                .filter_map(|(r, &least)| {
                    let limit = limits?.get(r);
                    let left = limit - usage.get(r);
                    (!le(least, left)).then(|| {
                        format!(
                            "{r} {} of {} in use, {} left, the smallest type it admits has {}",
                            format_quantity(r, usage.get(r)),
                            format_quantity(r, limit),
                            format_quantity(r, left.max(0.0)),
                            format_quantity(r, least)
                        )
                    })
                })
                .collect();
            Some(Reject::No {
                message: format!(
                    "all available instance types exceed limits for nodepool (NodePool={name}){}",
                    if short.is_empty() {
                        String::new()
                    } else {
                        format!(": {}", short.join("; "))
                    }
                ),
                limits: true,
            })
        } else if !admitted.iter().any(|c| c.sure) {
            Some(Reject::Unknown(format!(
                "cannot tell which instance types the pool admits{}: {} does not say",
                if maybe_limited {
                    " within its limits"
                } else {
                    ""
                },
                catalog.source.describe()
            )))
        } else {
            None
        };
        PoolTypes {
            smallest: smallest
                .into_iter()
                .map(|(k, v)| (k.to_string(), v))
                .collect(),
            source: catalog.source,
            catalog: catalog.clone(),
            provider,
            candidates: admitted,
            pool_reject,
        }
    }

    /// The types for one pod whose NodeClaim requirements are `reqs` (the pool's and the
    /// pod's, intersected), asking `requests` and taking host `ports`. A type whose
    /// DaemonSets take one of those ports is passed over, as Karpenter passes over a
    /// DaemonSet overhead group whose host ports conflict with the pod's.
    pub fn judge(
        &self,
        reqs: &Requirements,
        requests: &Resources,
        ports: &[HostPort],
    ) -> TypeVerdict {
        let mut tally = FilterTally::default();
        let mut kept: Vec<(&InstanceType, Option<f64>)> = Vec::new();
        let mut maybe = 0usize;
        let mut maybe_cheapest: Option<f64> = None;
        let mut one = requests.clone();
        one.add(&Resources([("pods".to_string(), 1.0)].into()));
        let usable: Vec<&Candidate> = self
            .candidates
            .iter()
            .filter(|c| !ports.iter().any(|p| c.ports.iter().any(|q| p.clashes(q))))
            .collect();
        let shown = shown_resources(&one, usable.iter().map(|c| &c.overhead));
        for c in usable {
            let it = &self.catalog.instance_types[c.it];
            let compat = type_compatible(it, reqs);
            let offer = offering(it, reqs);
            let mut total = one.clone();
            total.add(&c.overhead);
            // Karpenter reads the fit only against an offering the NodeClaim allows.
            let fit = if offer.is_some() {
                fits(it, &total)
            } else {
                Tri::No
            };
            tally.add(compat == Tri::Yes, fit == Tri::Yes, offer.is_some());
            match (compat.and(fit), c.sure) {
                (Tri::Yes, true) => kept.push((it, offer.flatten())),
                (Tri::No, _) => {}
                _ => {
                    maybe += 1;
                    if let Some(Some(p)) = offer {
                        maybe_cheapest = Some(maybe_cheapest.map_or(p, |m: f64| m.min(p)));
                    }
                }
            }
        }
        let context = || {
            // Karpenter's NodeClaim template also carries these two (for DaemonSets).
            let scheduling: Vec<requirements::Requirement> =
                ["karpenter.sh/registered", "karpenter.sh/initialized"]
                    .map(|key| requirements::Requirement {
                        key: key.into(),
                        operator: "In".into(),
                        values: vec!["true".into()],
                        min_values: None,
                    })
                    .to_vec();
            let shown_reqs = Requirements::from_requirements(&scheduling)
                .map(|r| reqs.intersect(&r))
                .unwrap_or_else(|_| reqs.clone());
            format!(", requirements={shown_reqs}, resources={shown}")
        };
        // minValues, over the types kept (in catalogue order, as Karpenter walks them).
        let short: Vec<&str> = reqs
            .min_values()
            .filter(|(key, min)| {
                let mut values = BTreeSet::new();
                for (it, _) in &kept {
                    values.extend(label_values(it, key));
                }
                (values.len() as i64) < *min
            })
            .map(|(k, _)| k)
            .collect();
        if !short.is_empty() {
            let message = format!(
                "minValues requirement is not met for label(s) (label(s)=[{}]){}",
                short.join(" "),
                context()
            );
            return if maybe > 0 {
                TypeVerdict::Unknown(format!(
                    "{message}; {maybe} more instance type(s) might count, {} does not say",
                    self.source.describe()
                ))
            } else {
                TypeVerdict::Rejected(message)
            };
        }
        if !kept.is_empty() {
            let mut launch = self.launch(&kept, reqs);
            launch.unsure = maybe;
            launch.unsure_cheapest = maybe_cheapest.map(Dollars);
            return TypeVerdict::Compatible(launch);
        }
        if maybe > 0 {
            return TypeVerdict::Unknown(format!(
                "cannot tell: {maybe} instance type(s) might fit, but {} does not say (their architecture, pods or extended resources){}",
                self.source.describe(),
                context()
            ));
        }
        let mut message = format!("{}{}", tally.words(), context());
        if !tally.fits && requests.get("cpu") >= 1e6 {
            message.push_str(" (CPU request >= 1 Million, m vs M typo?)");
        }
        TypeVerdict::Rejected(message)
    }

    /// The cheapest offerings of the kept types: by capacity type first on AWS
    /// (reserved, spot, then on-demand, as it launches), then by price and name.
    fn launch(&self, kept: &[(&InstanceType, Option<f64>)], reqs: &Requirements) -> Launch {
        let rank = |ct: &str| match (self.provider, ct) {
            (Provider::Aws, "reserved") => 0,
            (Provider::Aws, "spot") => 1,
            (Provider::Aws, _) => 2,
            _ => 0,
        };
        let mut options: Vec<(u8, f64, &str, &str)> = Vec::new();
        for (it, _) in kept {
            for o in it.offerings.iter().filter(|o| o.available) {
                if reqs.allows(labels::ZONE, &o.zone)
                    && reqs.allows(labels::CAPACITY_TYPE, &o.capacity_type)
                {
                    options.push((
                        rank(&o.capacity_type),
                        o.price.unwrap_or(f64::INFINITY),
                        &it.name,
                        &o.capacity_type,
                    ));
                }
            }
        }
        options.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.total_cmp(&b.1)).then(a.2.cmp(b.2)));
        let mut cheapest: Vec<LaunchOption> = Vec::new();
        for (_, price, name, ct) in options {
            if cheapest.iter().any(|c| c.instance_type == name) {
                continue;
            }
            if cheapest.len() == 3 {
                break;
            }
            let it = kept.iter().find(|(t, _)| t.name == name).map(|(t, _)| *t);
            let zones = it
                .map(|t| {
                    t.offerings
                        .iter()
                        .filter(|o| {
                            o.available
                                && o.capacity_type == ct
                                && reqs.allows(labels::ZONE, &o.zone)
                        })
                        .filter(|o| o.price.unwrap_or(f64::INFINITY) == price)
                        .map(|o| o.zone.clone())
                        .collect::<BTreeSet<_>>()
                        .into_iter()
                        .collect()
                })
                .unwrap_or_default();
            cheapest.push(LaunchOption {
                instance_type: name.to_string(),
                capacity_type: ct.to_string(),
                zones,
                price_per_hour: price.is_finite().then_some(Dollars(price)),
            });
        }
        Launch {
            unsure: 0,
            unsure_cheapest: None,
            instance_types: kept.len(),
            cheapest,
            catalog: self.source,
        }
    }
}

/// A type's values for a label, zone and capacity type from its offerings.
fn label_values<'a>(it: &'a InstanceType, key: &str) -> Vec<&'a str> {
    match key {
        labels::ZONE => it.offerings.iter().map(|o| o.zone.as_str()).collect(),
        labels::CAPACITY_TYPE => it
            .offerings
            .iter()
            .map(|o| o.capacity_type.as_str())
            .collect(),
        _ => it
            .labels
            .get(key)
            .map(|v| v.iter().map(String::as_str).collect())
            .unwrap_or_default(),
    }
}

/// Whether the type's capacity is within what is left of every limit (Karpenter's
/// `filterByRemainingResources`: capacity, not allocatable; `nodes` is checked apart).
fn within_limits(it: &InstanceType, limits: &Resources, usage: &Resources) -> Tri {
    let mut out = Tri::Yes;
    for (r, &limit) in &limits.0 {
        if r == "nodes" {
            continue;
        }
        let left = limit - usage.get(r);
        let known = it.complete || it.capacity.0.contains_key(r);
        out = out.and(match (it.capacity.0.get(r), known) {
            (Some(&cap), _) if !le(cap, left) => Tri::No,
            (None, true) if left < 0.0 => Tri::No,
            (_, true) => Tri::Yes,
            (_, false) => Tri::Unknown,
        });
    }
    out
}

/// `a <= b` for quantities: parsed quantities are off by a rounding step ("1900m" reads
/// as 1.9000000000000001), and Karpenter compares exact ones.
fn le(a: f64, b: f64) -> bool {
    a <= b + b.abs() * 1e-12 + 1e-9
}

/// Requests as Karpenter prints them: `{"cpu":"300","pods":"1"}`.
fn render_resources(r: &Resources) -> String {
    let shown: std::collections::BTreeMap<&str, String> =
        r.0.iter()
            .filter(|(_, v)| **v != 0.0)
            .map(|(k, v)| (k.as_str(), format_quantity(k, *v)))
            .collect();
    serde_json::to_string(&shown).unwrap_or_default()
}

/// One line for a launch: `c-2x-amd64-linux spot in test-zone-a..d, $0.0380/h`.
pub fn describe_launch(l: &Launch) -> Option<String> {
    let best = l.cheapest.first()?;
    let zones = match best.zones.as_slice() {
        [] => String::new(),
        [one] => format!(" in {one}"),
        many => format!(" in one of {}", many.join(", ")),
    };
    let price = best
        .price_per_hour
        .map(|p| format!(", ${:.4}/h", p.0))
        .unwrap_or_default();
    let unsure = match (l.unsure_cheapest, best.price_per_hour) {
        (Some(u), Some(b)) if u.0 < b.0 => format!(
            "; {} more the catalogue cannot settle might be cheaper, from ${:.4}/h",
            l.unsure, u.0
        ),
        _ => String::new(),
    };
    Some(format!(
        "{} {}{zones}{price} (cheapest of {} compatible instance type{}{unsure})",
        best.instance_type,
        best.capacity_type,
        l.instance_types,
        if l.instance_types == 1 { "" } else { "s" }
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::provisioning::{diagnose, PoolSet, Verdict};
    use crate::model::Pod;
    use chrono::Utc;

    /// A kwok pool as the testenv's, with `extra` YAML documents (pods, DaemonSets).
    fn cluster(limits: &str, extra: &str) -> Cluster {
        cluster_with(limits, extra, true)
    }

    fn cluster_with(limits: &str, extra: &str, amd64: bool) -> Cluster {
        let mut text = format!(
            r#"
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {{name: default}}
spec:
  template:
    spec:
      nodeClassRef: {{group: karpenter.kwok.sh, kind: KWOKNodeClass, name: default}}
      requirements:
        - {{key: kubernetes.io/os, operator: In, values: [linux]}}
        - {{key: kubernetes.io/arch, operator: In, values: [amd64]}}
        - {{key: karpenter.sh/capacity-type, operator: In, values: [on-demand, spot]}}
  limits: {limits}
status:
  conditions: [{{type: Ready, status: "True"}}]
---
{extra}"#
        );
        if !amd64 {
            text = text.replace(
                "        - {key: kubernetes.io/arch, operator: In, values: [amd64]}\n",
                "",
            );
        }
        let mut c = Cluster::default();
        crate::source::load_str("t.yaml", &text, &mut c).unwrap();
        c
    }

    fn pod(name: &str, cpu: &str, selector: &str) -> String {
        format!(
            r#"apiVersion: v1
kind: Pod
metadata: {{name: {name}, namespace: default}}
spec:
  nodeSelector: {{{selector}}}
  containers: [{{name: c, image: x, resources: {{requests: {{cpu: "{cpu}"}}}}}}]
status:
  phase: Pending
  conditions: [{{type: PodScheduled, status: "False", reason: Unschedulable}}]
---
"#
        )
    }

    fn daemonset(cpu: &str) -> String {
        format!(
            r#"apiVersion: apps/v1
kind: DaemonSet
metadata: {{name: agent, namespace: kube-system}}
spec:
  template:
    spec:
      containers: [{{name: a, image: x, resources: {{requests: {{cpu: "{cpu}"}}}}}}]
---
"#
        )
    }

    /// The default pool's verdict for a pod, judged with the kwok built-in catalogue.
    fn judge(c: &Cluster, name: &str) -> crate::analysis::provisioning::PoolVerdict {
        let catalog = Arc::new(Catalog::kwok_builtin());
        let pools = PoolSet::new(c).with_catalog(Some(&catalog));
        let p: &Pod = c.pods.values().find(|p| p.metadata.name == name).unwrap();
        let d = diagnose(c, &pools, p, Utc::now());
        (*d.nodepools[0]).clone()
    }

    fn launched(v: &crate::analysis::provisioning::PoolVerdict) -> (String, String) {
        let best = &v.launch.as_ref().unwrap().cheapest[0];
        (best.instance_type.clone(), best.capacity_type.clone())
    }

    #[test]
    fn a_pod_bigger_than_every_type_is_rejected_in_karpenters_words() {
        let c = cluster("{}", &pod("huge", "300", ""));
        let v = judge(&c, "huge");
        assert_eq!(v.verdict, Verdict::Rejected);
        let m = &v.reasons[0].message;
        assert!(
            m.starts_with("no instance type has enough resources, requirements="),
            "{m}"
        );
        assert!(m.contains(r#"resources={"cpu":"300","pods":"1"}"#), "{m}");
    }

    #[test]
    fn a_pod_only_the_biggest_type_holds_launches_it_cheapest_first() {
        let c = cluster("{}", &pod("big", "200", ""));
        let v = judge(&c, "big");
        assert_eq!(v.verdict, Verdict::Compatible, "{v:?}");
        assert_eq!(launched(&v), ("c-256x-amd64-linux".into(), "spot".into()));
        let l = v.launch.as_ref().unwrap();
        assert_eq!(l.instance_types, 3, "c, s and m at 256 CPUs");
        assert_eq!(l.cheapest[0].zones.len(), 4);
        // 0.7 x (0.025 x 256 + 0.001 x 512Gi/1e9)
        assert!((l.cheapest[0].price_per_hour.unwrap().0 - 4.8648290697216).abs() < 1e-9);
    }

    #[test]
    fn daemonset_overhead_counts_to_the_last_millicore() {
        // 1400m + 500m is exactly c-2x's allocatable (2 - 100m): it fits, as live.
        let c = cluster("{}", &(pod("exact", "1400m", "") + &daemonset("500m")));
        assert_eq!(launched(&judge(&c, "exact")).0, "c-2x-amd64-linux");
        // 100m more tips it over to the next size.
        let c = cluster("{}", &(pod("over", "1500m", "") + &daemonset("500m")));
        assert_eq!(launched(&judge(&c, "over")).0, "c-4x-amd64-linux");
        // And at the top, over every type.
        let c = cluster("{}", &(pod("top", "255500m", "") + &daemonset("500m")));
        let v = judge(&c, "top");
        assert_eq!(v.verdict, Verdict::Rejected);
        assert!(
            v.reasons[0].message.contains(r#""cpu":"256""#),
            "{:?}",
            v.reasons
        );
    }

    #[test]
    fn daemonsets_selecting_on_template_labels_count_in_the_overhead() {
        // Karpenter checks DaemonSets unvalidated against the template's requirements, which
        // hold the node class label and registered/initialized In [true]: both count.
        for selector in [
            "karpenter.kwok.sh/kwoknodeclass: default",
            "karpenter.sh/registered: \"true\", karpenter.sh/initialized: \"true\"",
            "karpenter.sh/nodepool: default",
        ] {
            let ds = daemonset("500m").replace(
                "    spec:\n      containers",
                &format!("    spec:\n      nodeSelector: {{{selector}}}\n      containers"),
            );
            let c = cluster("{}", &(pod("over", "1500m", "") + &ds));
            assert_eq!(
                launched(&judge(&c, "over")).0,
                "c-4x-amd64-linux",
                "{selector}"
            );
        }
        // One the template does not hold stays out.
        let ds = daemonset("500m").replace(
            "    spec:\n      containers",
            "    spec:\n      nodeSelector: {karpenter.sh/registered: \"false\"}\n      containers",
        );
        let c = cluster("{}", &(pod("over", "1500m", "") + &ds));
        assert_eq!(launched(&judge(&c, "over")).0, "c-2x-amd64-linux");
    }

    #[test]
    fn a_daemonsets_host_port_takes_the_types_it_runs_on_from_a_pod_that_wants_it() {
        let exporter = |selector: &str| {
            format!(
                r#"apiVersion: apps/v1
kind: DaemonSet
metadata: {{name: exporter, namespace: kube-system}}
spec:
  template:
    spec:
      nodeSelector: {{{selector}}}
      containers: [{{name: e, image: x, ports: [{{containerPort: 9100, hostPort: 9100}}], resources: {{requests: {{cpu: "10m"}}}}}}]
---
"#
            )
        };
        let wants = |port: u16| {
            pod("metrics", "100m", "").replace(
                "containers: [{name: c, image: x, ",
                &format!("containers: [{{name: c, image: x, ports: [{{containerPort: {port}, hostPort: {port}, protocol: TCP}}], "),
            )
        };
        // On every type: no type is left for the pod, as Karpenter passes every overhead
        // group over.
        let c = cluster("{}", &(wants(9100) + &exporter("")));
        let v = judge(&c, "metrics");
        assert_eq!(v.verdict, Verdict::Rejected, "{v:?}");
        assert!(
            v.reasons[0].message.starts_with(
                "no instance type met the scheduling requirements or had enough resources or had a required offering"
            ),
            "{:?}",
            v.reasons
        );
        // Another port: no clash.
        let c = cluster("{}", &(wants(9200) + &exporter("")));
        assert_eq!(judge(&c, "metrics").verdict, Verdict::Compatible);
        // Only on the type the pod would get: another one is launched.
        let c = cluster("{}", &(wants(9200) + &exporter("")));
        let cheapest = launched(&judge(&c, "metrics")).0;
        let only = format!("node.kubernetes.io/instance-type: {cheapest}");
        let c = cluster("{}", &(wants(9100) + &exporter(&only)));
        let v = judge(&c, "metrics");
        assert_eq!(v.verdict, Verdict::Compatible, "{v:?}");
        assert_ne!(launched(&v).0, cheapest);
    }

    #[test]
    fn an_overhead_that_differs_by_type_is_printed_as_its_least_and_most() {
        // Karpenter v1.14.1 counts DaemonSets per instance type: this one runs only on the
        // 256-CPU c type, so its types carry 750m and 2 pods, the rest 500m and 1.
        let big_only = r#"apiVersion: apps/v1
kind: DaemonSet
metadata: {name: big-only, namespace: kube-system}
spec:
  template:
    spec:
      nodeSelector: {node.kubernetes.io/instance-type: c-256x-amd64-linux}
      containers: [{name: a, image: x, resources: {requests: {cpu: "250m"}}}]
---
"#;
        let c = cluster(
            "{}",
            &(pod("huge", "300", "") + &daemonset("500m") + big_only),
        );
        let m = &judge(&c, "huge").reasons[0].message;
        assert!(
            m.ends_with(
                r#"resources=min={"cpu":"300500m","pods":"2"}, max={"cpu":"300750m","pods":"3"}"#
            ),
            "{m}"
        );
        // One overhead on every type: one list, as before.
        let c = cluster("{}", &(pod("huge", "300", "") + &daemonset("500m")));
        let m = &judge(&c, "huge").reasons[0].message;
        assert!(
            m.ends_with(r#"resources={"cpu":"300500m","pods":"2"}"#),
            "{m}"
        );
    }

    #[test]
    fn an_architecture_no_type_offers_fails_the_requirements() {
        let c = cluster("{}", &pod("mainframe", "1", "kubernetes.io/arch: s390x"));
        let v = judge(&c, "mainframe");
        assert_eq!(v.verdict, Verdict::Rejected);
        // The pool pins amd64: Karpenter stops at its requirements, before types.
        assert!(
            v.reasons[0]
                .message
                .starts_with("incompatible requirements"),
            "{:?}",
            v.reasons
        );
        // A pool that leaves the architecture open meets no type with it.
        let c = cluster_with(
            "{}",
            &pod("mainframe", "1", "kubernetes.io/arch: s390x"),
            false,
        );
        let v = judge(&c, "mainframe");
        assert_eq!(
            v.reasons[0].message.split(',').next().unwrap(),
            "no instance type met all requirements"
        );
    }

    #[test]
    fn limits_drop_the_types_bigger_than_what_is_left() {
        // 200 CPUs of limit: the 256-CPU types are out, so a 200-CPU pod has none.
        let c = cluster("{cpu: \"200\"}", &pod("big", "200", ""));
        let v = judge(&c, "big");
        assert_eq!(v.verdict, Verdict::Rejected);
        assert!(v.reasons[0]
            .message
            .starts_with("no instance type has enough resources"));
        // Nothing left at all below the smallest type: the pool itself is out.
        let c = cluster("{cpu: \"500m\"}", &pod("small", "100m", ""));
        let v = judge(&c, "small");
        assert_eq!(
            v.reasons[0].category,
            crate::karpenter::events::Category::Limits
        );
        assert!(v.reasons[0].message.starts_with("all available instance types exceed limits for nodepool (NodePool=default): cpu 0 of 500m in use"), "{:?}", v.reasons);
    }

    #[test]
    fn an_unknown_architecture_is_unknown_never_compatible() {
        let text = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/metrics/aws-instance-types.txt"
        ))
        .unwrap();
        let mut c = cluster("{}", &pod("web", "1", ""));
        c.metrics = Some(crate::source::metrics::parse("aws", &text).unwrap());
        let m = c.metrics.as_ref().unwrap();
        let verdict = |catalog: Catalog| {
            let catalog = Arc::new(catalog);
            let pools = PoolSet::new(&c).with_catalog(Some(&catalog));
            let p = c.pods.values().next().unwrap();
            diagnose(&c, &pools, p, Utc::now()).nodepools[0].clone()
        };
        // The pool pins amd64. Types newer than kelp's facts: the metrics do not say
        // which are amd64.
        let settings = crate::karpenter::aws::Settings::default();
        let v = verdict(crate::analysis::catalog::with_facts(
            &c,
            m,
            &settings,
            |_| None,
        ));
        assert_eq!(v.verdict, Verdict::Unknown, "{v:?}");
        // With the facts kelp carries, it knows.
        let v = verdict(crate::analysis::catalog::from_metrics(&c, m));
        assert_eq!(v.verdict, Verdict::Compatible, "{v:?}");
    }

    #[test]
    fn a_limit_is_exhausted_when_less_is_left_than_the_pools_smallest_type() {
        // 1Gi of memory left: more than the 512Mi floor, less than kwok's smallest (2Gi).
        let mut c = cluster("{memory: 10Gi}", "");
        let yaml =
            "status: {resources: {memory: 9Gi}, conditions: [{type: Ready, status: \"True\"}]}";
        let pool = c.nodepools.get("default").unwrap().clone();
        let mut v = serde_json::to_value(&pool).unwrap();
        v["status"] = serde_norway::from_str::<serde_json::Value>(yaml).unwrap()["status"].clone();
        c.apply_nodepool(serde_json::from_value(v).unwrap());
        let report = crate::analysis::analyze(&c, Utc::now());
        let f = report
            .findings
            .iter()
            .find(|f| f.code == crate::findings::Code::NodepoolLimitsExhausted)
            .expect("exhausted by the catalogue's smallest type");
        assert!(
            f.message
                .contains("what is left is less than any instance type"),
            "{}",
            f.message
        );
    }

    #[test]
    fn a_pool_whose_min_values_its_own_types_cannot_meet_is_dropped() {
        // Linux amd64 on-demand kwok types come in 3 families; minValues 4 cannot be met.
        let text = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/testenv/manifests/nodepool.yaml"
        ))
        .unwrap();
        let mut c = Cluster::default();
        let pool = text.replace(
            "      expireAfter: 720h",
            "        - {key: karpenter.kwok.sh/instance-family, operator: Exists, minValues: 4}\n      expireAfter: 720h",
        );
        crate::source::load_str(
            "p.yaml",
            &(pool
                + "\nstatus: {conditions: [{type: Ready, status: \"True\"}]}\n---\n"
                + &pod("p", "1", "")),
            &mut c,
        )
        .unwrap();
        let v = judge(&c, "p");
        assert_eq!(v.verdict, Verdict::Rejected, "{v:?}");
        assert!(
            v.reasons[0]
                .message
                .ends_with("due to minValues incompatibility"),
            "{:?}",
            v.reasons
        );
    }

    #[test]
    fn karpenter_falls_back_to_a_later_node_affinity_term_when_types_fail() {
        // Term 1 asks for the 1-CPU types (900m allocatable: a 1-CPU pod fits none); term 2
        // for the 2-CPU ones. Karpenter relaxes term 1 away and launches from term 2.
        let affinity = r#"apiVersion: v1
kind: Pod
metadata: {name: two-terms, namespace: default}
spec:
  affinity:
    nodeAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
        nodeSelectorTerms:
        - matchExpressions: [{key: karpenter.kwok.sh/instance-cpu, operator: In, values: ["1"]}]
        - matchExpressions: [{key: karpenter.kwok.sh/instance-cpu, operator: In, values: ["2"]}]
  containers: [{name: c, image: x, resources: {requests: {cpu: "1"}}}]
status:
  phase: Pending
  conditions: [{type: PodScheduled, status: "False", reason: Unschedulable}]
"#;
        let c = cluster("{}", affinity);
        let v = judge(&c, "two-terms");
        assert_eq!(v.verdict, Verdict::Compatible, "{v:?}");
        assert_eq!(launched(&v).0, "c-2x-amd64-linux");
    }

    #[test]
    fn a_taint_rejects_a_pool_whatever_its_unknown_types() {
        let text = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/metrics/aws-instance-types.txt"
        ))
        .unwrap();
        let mut c = cluster("{}", &pod("web", "1", ""));
        let pool = c.nodepools.get("default").unwrap().clone();
        let mut v = serde_json::to_value(&pool).unwrap();
        v["spec"]["template"]["spec"]["taints"] =
            serde_json::json!([{"key": "team", "value": "x", "effect": "NoSchedule"}]);
        c.apply_nodepool(serde_json::from_value(v).unwrap());
        c.metrics = Some(crate::source::metrics::parse("aws", &text).unwrap());
        let catalog = Arc::new(crate::analysis::catalog::from_metrics(
            &c,
            c.metrics.as_ref().unwrap(),
        ));
        let pools = PoolSet::new(&c).with_catalog(Some(&catalog));
        let p = c.pods.values().next().unwrap();
        let v = diagnose(&c, &pools, p, Utc::now()).nodepools[0].clone();
        assert_eq!(v.verdict, Verdict::Rejected, "{v:?}");
        assert_eq!(
            v.reasons[0].category,
            crate::karpenter::events::Category::Taints
        );
    }

    #[test]
    fn a_complete_type_lacking_one_of_its_providers_labels_does_not_have_it() {
        let mut it = Catalog::kwok_builtin().instance_types.remove(0);
        let reqs = |op: &str| {
            Requirements::from_requirements(&[requirements::Requirement {
                key: "karpenter.kwok.sh/instance-gpu-count".into(),
                operator: op.into(),
                values: if op == "Exists" || op == "DoesNotExist" {
                    vec![]
                } else {
                    vec!["1".into()]
                },
                min_values: None,
            }])
            .unwrap()
        };
        assert_eq!(type_compatible(&it, &reqs("Exists")), Tri::No);
        assert_eq!(type_compatible(&it, &reqs("DoesNotExist")), Tri::Yes);
        assert_eq!(type_compatible(&it, &reqs("NotIn")), Tri::Yes);
        // A key of a domain the type has no label in: not compared, as Karpenter does.
        let aws = Requirements::from_requirements(&[requirements::Requirement {
            key: "karpenter.k8s.aws/instance-family".into(),
            operator: "In".into(),
            values: vec!["m5".into()],
            min_values: None,
        }])
        .unwrap();
        assert_eq!(type_compatible(&it, &aws), Tri::Yes);
        // Where the catalogue is not complete for the type, it cannot tell.
        it.complete = false;
        assert_eq!(type_compatible(&it, &reqs("Exists")), Tri::Unknown);
    }
}
