//! Requirement semantics as Karpenter computes them (its `scheduling.Requirements`): per
//! label key a value set or its complement plus inclusive integer bounds, intersected per
//! key; how a NodePool template and a pod term build them; and the pod-vs-template
//! [`compatible`] check with Karpenter's exact error wording.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use k8s_openapi::api::core::v1::{NodeSelectorRequirement, NodeSelectorTerm};

use super::labels::{
    normalize_key, Provider, INITIALIZED_LABEL, NODEPOOL_LABEL, REGISTERED_LABEL,
    RESTRICTED_LABELS, WELL_KNOWN_LABELS,
};

/// A node-selector operator Karpenter v1.14 accepts. `Gte` and `Lte` are Karpenter's own
/// extensions (NodePool and NodeOverlay requirements, v1.9+); Kubernetes rejects them in pods.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum Operator {
    In,
    NotIn,
    Exists,
    DoesNotExist,
    Gt,
    Lt,
    Gte,
    Lte,
}

impl Operator {
    pub const ALL: [Operator; 8] = [
        Operator::In,
        Operator::NotIn,
        Operator::Exists,
        Operator::DoesNotExist,
        Operator::Gt,
        Operator::Lt,
        Operator::Gte,
        Operator::Lte,
    ];

    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|op| op.as_str() == s)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Operator::In => "In",
            Operator::NotIn => "NotIn",
            Operator::Exists => "Exists",
            Operator::DoesNotExist => "DoesNotExist",
            Operator::Gt => "Gt",
            Operator::Lt => "Lt",
            Operator::Gte => "Gte",
            Operator::Lte => "Lte",
        }
    }

    pub(super) fn is_numeric(self) -> bool {
        matches!(
            self,
            Operator::Gt | Operator::Lt | Operator::Gte | Operator::Lte
        )
    }
}

impl fmt::Display for Operator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One requirement as written in a NodePool (spec.template.spec.requirements[]) or a pod term.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Requirement {
    pub key: String,
    /// Raw operator text; it may be one kelp cannot interpret.
    pub operator: String,
    #[serde(default)]
    pub values: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_values: Option<i64>,
}

impl From<&NodeSelectorRequirement> for Requirement {
    fn from(r: &NodeSelectorRequirement) -> Self {
        Requirement {
            key: r.key.clone(),
            operator: r.operator.clone(),
            values: r.values.clone().unwrap_or_default(),
            min_values: None,
        }
    }
}

/// A requirement kelp cannot interpret (an unknown operator, or a bound that is not one integer).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequirementError {
    pub key: String,
    pub operator: String,
    pub message: String,
}

impl fmt::Display for RequirementError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for RequirementError {}

/// One key's constraint: `values` (or everything but `values` when `complement`), further
/// limited to integers within the inclusive `gte`/`lte` bounds when either is set.
#[derive(Debug, Clone, PartialEq, Eq)]
struct KeyReq {
    complement: bool,
    values: BTreeSet<String>,
    gte: Option<i64>,
    lte: Option<i64>,
    min_values: Option<i64>,
}

impl KeyReq {
    fn exists() -> Self {
        KeyReq {
            complement: true,
            values: BTreeSet::new(),
            gte: None,
            lte: None,
            min_values: None,
        }
    }

    fn does_not_exist(min_values: Option<i64>) -> Self {
        KeyReq {
            complement: false,
            min_values,
            ..KeyReq::exists()
        }
    }

    /// Karpenter's NewRequirementWithFlexibility: Gt N becomes Gte N+1 and Lt N becomes Lte N-1.
    fn new(op: Operator, values: &[String], min_values: Option<i64>) -> Result<Self, String> {
        let set = || values.iter().cloned().collect();
        let mut r = KeyReq {
            min_values,
            ..KeyReq::exists()
        };
        match op {
            Operator::In => {
                return Ok(KeyReq {
                    complement: false,
                    values: set(),
                    ..r
                })
            }
            Operator::NotIn => r.values = set(),
            Operator::Exists => {}
            Operator::DoesNotExist => return Ok(KeyReq::does_not_exist(min_values)),
            _ => {
                let n = match values {
                    [v] => v
                        .parse::<i64>()
                        .map_err(|_| format!("{v:?} is not an integer"))?,
                    _ => return Err(format!("expected exactly one value, got {}", values.len())),
                };
                match op {
                    Operator::Gt if n == i64::MAX => return Ok(KeyReq::does_not_exist(None)),
                    Operator::Gt => r.gte = Some(n + 1),
                    // Go's int arithmetic wraps here; mirror it rather than panic.
                    Operator::Lt => r.lte = Some(n.wrapping_sub(1)),
                    Operator::Gte => r.gte = Some(n),
                    _ => r.lte = Some(n),
                }
            }
        }
        Ok(r)
    }

    fn merged_bounds(&self, other: &KeyReq) -> (Option<i64>, Option<i64>) {
        let gte = self.gte.max(other.gte);
        let lte = match (self.lte, other.lte) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        (gte, lte)
    }

    fn intersection(&self, other: &KeyReq) -> KeyReq {
        let min_values = self.min_values.max(other.min_values);
        let (gte, lte) = self.merged_bounds(other);
        if matches!((gte, lte), (Some(g), Some(l)) if g > l) {
            return KeyReq::does_not_exist(min_values);
        }
        let complement = self.complement && other.complement;
        let values: BTreeSet<String> = match (self.complement, other.complement) {
            (true, true) => self.values.union(&other.values).cloned().collect(),
            (true, false) => other.values.difference(&self.values).cloned().collect(),
            (false, true) => self.values.difference(&other.values).cloned().collect(),
            (false, false) => self.values.intersection(&other.values).cloned().collect(),
        };
        let values = values.into_iter().filter(|v| within(v, gte, lte)).collect();
        let (gte, lte) = if complement { (gte, lte) } else { (None, None) };
        KeyReq {
            complement,
            values,
            gte,
            lte,
            min_values,
        }
    }

    fn has_intersection(&self, other: &KeyReq) -> bool {
        let (gte, lte) = self.merged_bounds(other);
        if matches!((gte, lte), (Some(g), Some(l)) if g > l) {
            return false;
        }
        let shared = |concrete: &KeyReq, excluded: &KeyReq, negate: bool| {
            concrete
                .values
                .iter()
                .any(|v| excluded.values.contains(v) != negate && within(v, gte, lte))
        };
        match (self.complement, other.complement) {
            (true, true) => true,
            (true, false) => shared(other, self, true),
            (false, true) => shared(self, other, true),
            (false, false) => shared(self, other, false),
        }
    }

    fn allows(&self, value: &str) -> bool {
        self.values.contains(value) != self.complement && within(value, self.gte, self.lte)
    }

    /// The operator Karpenter reports for this constraint; bounds read as `Exists`.
    fn operator(&self) -> Operator {
        match (self.complement, self.values.is_empty()) {
            (true, false) => Operator::NotIn,
            (true, true) => Operator::Exists,
            (false, false) => Operator::In,
            (false, true) => Operator::DoesNotExist,
        }
    }

    fn render(&self, key: &str) -> String {
        let op = self.operator();
        let mut s = match op {
            Operator::Exists | Operator::DoesNotExist => format!("{key} {op}"),
            _ => {
                let mut shown: Vec<String> = self.values.iter().take(5).cloned().collect();
                if self.values.len() > 5 {
                    shown.push(format!("and {} others", self.values.len() - 5));
                }
                format!("{key} {op} [{}]", shown.join(" "))
            }
        };
        if let Some(g) = self.gte {
            s.push_str(&format!(" >={g}"));
        }
        if let Some(l) = self.lte {
            s.push_str(&format!(" <={l}"));
        }
        if let Some(m) = self.min_values {
            s.push_str(&format!(" minValues {m}"));
        }
        s
    }
}

/// Whether `value` lies within the bounds; with any bound set, only integers do.
fn within(value: &str, gte: Option<i64>, lte: Option<i64>) -> bool {
    if gte.is_none() && lte.is_none() {
        return true;
    }
    value
        .parse::<i64>()
        .is_ok_and(|v| gte.is_none_or(|g| v >= g) && lte.is_none_or(|l| v <= l))
}

/// Normalized requirements by key (Karpenter's `scheduling.Requirements`). A NodePool's
/// requirements also remember their provider, whose labels count as well-known in `compatible`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Requirements {
    reqs: BTreeMap<String, KeyReq>,
    provider: Provider,
}

impl Requirements {
    /// Parses and intersects requirements (keys normalized, several on one key intersected).
    /// An operator kelp cannot interpret, or a Gt/Lt/Gte/Lte without exactly one integer value,
    /// gives `Err` naming key and operator.
    pub fn from_requirements(reqs: &[Requirement]) -> Result<Self, RequirementError> {
        let mut out = Requirements::default();
        for r in reqs {
            out.add_raw(&r.key, &r.operator, &r.values, r.min_values)?;
        }
        Ok(out)
    }

    /// NodePool side: template requirements + template labels (as In) + `karpenter.sh/nodepool In
    /// [pool]` + the NodeClass label (e.g. `("karpenter.k8s.aws/ec2nodeclass", "default")`) when
    /// given, which also selects the provider's well-known labels.
    pub fn for_nodepool(
        pool: &str,
        reqs: &[Requirement],
        labels: &BTreeMap<String, String>,
        nodeclass_label: Option<(&str, &str)>,
    ) -> Result<Self, RequirementError> {
        let mut out = Requirements::from_requirements(reqs)?;
        let mut labels = labels.clone();
        labels.insert(NODEPOOL_LABEL.to_string(), pool.to_string());
        if let Some((key, name)) = nodeclass_label {
            labels.insert(key.to_string(), name.to_string());
            out.provider = Provider::from_nodeclass_label(key);
        }
        out.add_labels(&labels);
        Ok(out)
    }

    /// The NodeClaim template's requirements as Karpenter checks DaemonSets against them
    /// (`NewNodeClaimTemplate`): a pool's ([`Requirements::for_nodepool`]) plus
    /// `karpenter.sh/registered In [true]` and `karpenter.sh/initialized In [true]`. Karpenter
    /// adds these for every pod, but only a DaemonSet can name them: validation turns away a
    /// pending pod that selects on the karpenter.sh domain.
    pub fn with_node_lifecycle(&self) -> Self {
        let mut out = self.clone();
        let labels = [REGISTERED_LABEL, INITIALIZED_LABEL]
            .into_iter()
            .map(|k| (k.to_string(), "true".to_string()))
            .collect();
        out.add_labels(&labels);
        out
    }

    /// Pod side: nodeSelector (as In) + one required node-affinity term's matchExpressions.
    /// matchFields are ignored here, as Karpenter does when it builds pod requirements (its
    /// validation rejects them: see `validate_pod_requirements`).
    pub fn for_pod(
        node_selector: &BTreeMap<String, String>,
        term: Option<&NodeSelectorTerm>,
    ) -> Result<Self, RequirementError> {
        let mut out = Requirements::default();
        out.add_labels(node_selector);
        for r in term
            .and_then(|t| t.match_expressions.as_deref())
            .unwrap_or_default()
        {
            out.add_raw(
                &r.key,
                &r.operator,
                r.values.as_deref().unwrap_or_default(),
                None,
            )?;
        }
        Ok(out)
    }

    pub(super) fn add_labels(&mut self, labels: &BTreeMap<String, String>) {
        for (key, value) in labels {
            self.add(
                key,
                KeyReq {
                    complement: false,
                    values: BTreeSet::from([value.clone()]),
                    ..KeyReq::exists()
                },
            );
        }
    }

    pub(super) fn add_raw(
        &mut self,
        key: &str,
        op: &str,
        values: &[String],
        min_values: Option<i64>,
    ) -> Result<(), RequirementError> {
        let error = |message: String| RequirementError {
            key: key.to_string(),
            operator: op.to_string(),
            message,
        };
        let parsed = Operator::parse(op)
            .ok_or_else(|| error(format!("key {key} has an unsupported operator {op}")))?;
        let req = KeyReq::new(parsed, values, min_values).map_err(|why| {
            error(format!(
                "key {key} with operator {op} needs a single integer value: {why}"
            ))
        })?;
        self.add(key, req);
        Ok(())
    }

    fn add(&mut self, key: &str, req: KeyReq) {
        let key = normalize_key(key);
        let merged = match self.reqs.get(key) {
            Some(existing) => req.intersection(existing),
            None => req,
        };
        self.reqs.insert(key.to_string(), merged);
    }

    pub fn keys(&self) -> impl Iterator<Item = &str> {
        self.reqs.keys().map(String::as_str)
    }

    /// Render one key's requirement as Karpenter v1.14 does: `key In [a b]`, `key NotIn [a]`,
    /// `key Exists`, `key DoesNotExist`, at most 5 values then `and N others`, then ` >=N`,
    /// ` <=N` and ` minValues N` as set.
    pub fn render(&self, key: &str) -> Option<String> {
        let key = normalize_key(key);
        self.reqs.get(key).map(|r| r.render(key))
    }

    /// The operator Karpenter reports for a key (In, NotIn, Exists or DoesNotExist; bounds read as
    /// Exists); `None` when the key is undefined.
    pub fn operator(&self, key: &str) -> Option<Operator> {
        self.reqs.get(normalize_key(key)).map(KeyReq::operator)
    }

    /// Whether a node label value satisfies the requirement on `key` (an undefined key allows all).
    pub fn allows(&self, key: &str, value: &str) -> bool {
        self.reqs
            .get(normalize_key(key))
            .is_none_or(|r| r.allows(value))
    }

    pub fn is_empty(&self) -> bool {
        self.reqs.is_empty()
    }

    /// Both sets at once (a NodeClaim's requirements: its pool's and its pod's), each
    /// key intersected as Karpenter's `Add` does; the provider is `self`'s.
    pub fn intersect(&self, other: &Requirements) -> Requirements {
        let mut out = self.clone();
        for (k, r) in &other.reqs {
            out.add(k, r.clone());
        }
        out
    }

    /// Whether `key` is constrained at all.
    pub fn defines(&self, key: &str) -> bool {
        self.reqs.contains_key(normalize_key(key))
    }

    /// The keys with a `minValues`, and how many values each needs.
    pub fn min_values(&self) -> impl Iterator<Item = (&str, i64)> {
        self.reqs
            .iter()
            .filter_map(|(k, r)| Some((k.as_str(), r.min_values?)))
    }

    /// The values an `In` requirement on `key` allows; None for any other operator or an
    /// undefined key.
    pub fn values(&self, key: &str) -> Option<Vec<&str>> {
        self.reqs
            .get(normalize_key(key))
            .filter(|r| !r.complement)
            .map(|r| r.values.iter().map(String::as_str).collect())
    }
}

/// Karpenter's `Requirements.String()`: every key but restricted ones, sorted, joined by ", ".
impl fmt::Display for Requirements {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut parts: Vec<String> = self
            .reqs
            .iter()
            .filter(|(k, _)| !RESTRICTED_LABELS.contains(&k.as_str()))
            .map(|(k, r)| r.render(k))
            .collect();
        parts.sort();
        f.write_str(&parts.join(", "))
    }
}

/// Why a pod's requirements do not fit a NodePool template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Incompatibility {
    /// The pod requires a custom key the pool does not define (pod op not NotIn/DoesNotExist).
    /// Karpenter: `label "k" does not have known values[ (typo of "x"?)]`
    UndefinedLabel {
        key: String,
        typo_of: Option<String>,
    },
    /// Both define the key and the sets do not intersect. Karpenter: `key k, <pod req> not in <pool req>`
    NoIntersection {
        key: String,
        pod: String,
        pool: String,
    },
}

impl Incompatibility {
    pub fn key(&self) -> &str {
        match self {
            Incompatibility::UndefinedLabel { key, .. }
            | Incompatibility::NoIntersection { key, .. } => key,
        }
    }
}

impl fmt::Display for Incompatibility {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Incompatibility::UndefinedLabel { key, typo_of } => {
                write!(f, "label {key:?} does not have known values")?;
                match typo_of {
                    Some(t) => write!(f, " (typo of {t:?}?)"),
                    None => Ok(()),
                }
            }
            Incompatibility::NoIntersection { key, pod, pool } => {
                write!(f, "key {key}, {pod} not in {pool}")
            }
        }
    }
}

/// Karpenter's pod-vs-template `Compatible` with undefined well-known labels allowed (the core
/// set plus the pool's provider labels): every incompatibility, ordered by key. Karpenter's own
/// message differs in one way: when any `UndefinedLabel` exists it stops at the first one it meets
/// (Go map order) and reports neither the others nor any `NoIntersection`.
pub fn compatible(pod: &Requirements, pool: &Requirements) -> Result<(), Vec<Incompatibility>> {
    let mut out = Vec::new();
    for (key, req) in &pod.reqs {
        match pool.reqs.get(key) {
            None if pool.provider.is_well_known(key) => {}
            None if matches!(req.operator(), Operator::NotIn | Operator::DoesNotExist) => {}
            None => out.push(Incompatibility::UndefinedLabel {
                key: key.clone(),
                typo_of: typo_hint(pool, key),
            }),
            Some(existing) if !existing.has_intersection(req) => {
                let lenient =
                    |r: &KeyReq| matches!(r.operator(), Operator::NotIn | Operator::DoesNotExist);
                if !(lenient(req) && lenient(existing)) {
                    out.push(Incompatibility::NoIntersection {
                        key: key.clone(),
                        pod: req.render(key),
                        pool: existing.render(key),
                    });
                }
            }
            Some(_) => {}
        }
    }
    if out.is_empty() {
        Ok(())
    } else {
        Err(out)
    }
}

/// Karpenter's requirement drift (`areRequirementsDrifted`): a NodeClaim's labels, each as
/// `In [value]`, against a NodePool's requirements alone (not its template labels), with
/// nothing allowed undefined: a pool key the labels lack fails unless its operator is
/// NotIn or DoesNotExist, and a key both have must intersect. Every incompatibility, by key.
pub fn labels_fit(
    labels: &BTreeMap<String, String>,
    pool: &Requirements,
) -> Result<(), Vec<Incompatibility>> {
    let mut have = Requirements::default();
    have.add_labels(labels);
    let mut out = Vec::new();
    for (key, req) in &pool.reqs {
        match have.reqs.get(key) {
            None if matches!(req.operator(), Operator::NotIn | Operator::DoesNotExist) => {}
            None => out.push(Incompatibility::UndefinedLabel {
                key: key.clone(),
                typo_of: None,
            }),
            Some(label) if !label.has_intersection(req) => {
                out.push(Incompatibility::NoIntersection {
                    key: key.clone(),
                    pod: label.render(key),
                    pool: req.render(key),
                })
            }
            Some(_) => {}
        }
    }
    if out.is_empty() {
        Ok(())
    } else {
        Err(out)
    }
}

/// Karpenter's label hint: the first well-known label, then the first pool key, that contains
/// the key or ends with the key's name part (Karpenter walks sets in map order; kelp sorts).
fn typo_hint(pool: &Requirements, key: &str) -> Option<String> {
    let name = key.split_once('/').map_or(key, |(_, name)| name);
    let mut well_known: Vec<&str> = WELL_KNOWN_LABELS
        .iter()
        .chain(pool.provider.labels())
        .copied()
        .collect();
    well_known.sort_unstable();
    well_known
        .into_iter()
        .chain(pool.keys())
        .find(|candidate| candidate.contains(key) || candidate.ends_with(name))
        .map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::super::testing::*;
    use super::super::*;
    use super::*;
    use proptest::prelude::*;

    fn reqs(list: &[Requirement]) -> Requirements {
        Requirements::from_requirements(list).expect("valid requirements")
    }
    fn errors(pod: &Requirements, pool: &Requirements) -> Vec<String> {
        compatible(pod, pool)
            .err()
            .unwrap_or_default()
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    /// Checks one operator pair on a custom key both sides define.
    fn pair(pod: Requirement, pool: Requirement) -> Vec<String> {
        errors(&reqs(&[pod]), &reqs(&[pool]))
    }
    #[test]
    fn in_sets_must_intersect_with_karpenters_wording() {
        let pool = reqs(&[req(ZONE, "In", &["us-west-2a", "us-west-2b"])]);
        assert_eq!(
            compatible(
                &reqs(&[req(ZONE, "In", &["us-west-2b", "us-west-2c"])]),
                &pool
            ),
            Ok(())
        );
        assert_eq!(
            errors(&reqs(&[req(ZONE, "In", &["us-west-2d"])]), &pool),
            ["key topology.kubernetes.io/zone, topology.kubernetes.io/zone In [us-west-2d] not in topology.kubernetes.io/zone In [us-west-2a us-west-2b]"]
        );
    }

    #[test]
    fn operator_pairs_follow_karpenters_intersection_rules() {
        let k = "example.com/team";
        // NotIn against In: fails only when it removes every pool value.
        assert_eq!(
            pair(req(k, "NotIn", &["a"]), req(k, "In", &["a"])),
            ["key example.com/team, example.com/team NotIn [a] not in example.com/team In [a]"]
        );
        assert!(pair(req(k, "NotIn", &["a"]), req(k, "In", &["a", "b"])).is_empty());
        assert!(pair(req(k, "In", &["b"]), req(k, "NotIn", &["a"])).is_empty());
        assert_eq!(
            pair(req(k, "In", &["a"]), req(k, "NotIn", &["a"])),
            ["key example.com/team, example.com/team In [a] not in example.com/team NotIn [a]"]
        );
        // DoesNotExist against Exists fails; against NotIn both sides tolerate absence.
        assert_eq!(pair(req(k, "DoesNotExist", &[]), req(k, "Exists", &[])), ["key example.com/team, example.com/team DoesNotExist not in example.com/team Exists"]);
        assert!(pair(req(k, "DoesNotExist", &[]), req(k, "NotIn", &["a"])).is_empty());
        assert!(pair(req(k, "NotIn", &["a"]), req(k, "DoesNotExist", &[])).is_empty());
        assert!(pair(req(k, "DoesNotExist", &[]), req(k, "DoesNotExist", &[])).is_empty());
        assert_eq!(pair(req(k, "DoesNotExist", &[]), req(k, "In", &["a"])), ["key example.com/team, example.com/team DoesNotExist not in example.com/team In [a]"]);
        // Exists against NotIn intersects (complements always do); against DoesNotExist it fails.
        assert!(pair(req(k, "Exists", &[]), req(k, "NotIn", &["a"])).is_empty());
        assert!(pair(req(k, "NotIn", &["a"]), req(k, "NotIn", &["a"])).is_empty());
        assert_eq!(pair(req(k, "Exists", &[]), req(k, "DoesNotExist", &[])), ["key example.com/team, example.com/team Exists not in example.com/team DoesNotExist"]);
        assert_eq!(pair(req(k, "In", &["a"]), req(k, "DoesNotExist", &[])), ["key example.com/team, example.com/team In [a] not in example.com/team DoesNotExist"]);
    }

    #[test]
    fn bounds_combine_with_values_and_each_other() {
        let pool = reqs(&[req(CPU, "Gt", &["2"]), req(CPU, "Lt", &["8"])]);
        assert_eq!(
            pool.render(CPU).as_deref(),
            Some("karpenter.k8s.aws/instance-cpu Exists >=3 <=7")
        );
        assert_eq!(pool.operator(CPU), Some(Operator::Exists));
        assert_eq!(
            compatible(&reqs(&[req(CPU, "In", &["4", "16"])]), &pool),
            Ok(())
        );
        assert_eq!(
            errors(&reqs(&[req(CPU, "In", &["2", "8"])]), &pool),
            ["key karpenter.k8s.aws/instance-cpu, karpenter.k8s.aws/instance-cpu In [2 8] not in karpenter.k8s.aws/instance-cpu Exists >=3 <=7"]
        );
        assert!(
            compatible(&reqs(&[req(CPU, "In", &["large"])]), &pool).is_err(),
            "a non-integer value is outside any bound"
        );
        assert_eq!(compatible(&reqs(&[req(CPU, "Gte", &["7"])]), &pool), Ok(()));
        assert!(compatible(&reqs(&[req(CPU, "Gte", &["8"])]), &pool).is_err());
        assert!(compatible(&reqs(&[req(CPU, "NotIn", &["3", "4"])]), &pool).is_ok());
        // Bounds applied to a concrete set filter it and then disappear.
        let mixed = reqs(&[
            req(CPU, "In", &["1", "2", "x", "5"]),
            req(CPU, "Gte", &["2"]),
            req(CPU, "Lte", &["4"]),
        ]);
        assert_eq!(
            mixed.render(CPU).as_deref(),
            Some("karpenter.k8s.aws/instance-cpu In [2]")
        );
        // Empty ranges collapse to DoesNotExist.
        assert_eq!(
            reqs(&[req(CPU, "Gt", &["8"]), req(CPU, "Lt", &["2"])]).operator(CPU),
            Some(Operator::DoesNotExist)
        );
        assert_eq!(
            reqs(&[req(CPU, "Gt", &["4"]), req(CPU, "Lt", &["5"])]).operator(CPU),
            Some(Operator::DoesNotExist)
        );
        assert_eq!(
            reqs(&[req(CPU, "Gt", &[&i64::MAX.to_string()])])
                .render(CPU)
                .as_deref(),
            Some("karpenter.k8s.aws/instance-cpu DoesNotExist")
        );
        // Karpenter drops excluded values that the bounds already exclude (non-integers included).
        let excluded = reqs(&[req(CPU, "NotIn", &["a", "1", "5"]), req(CPU, "Gt", &["1"])]);
        assert_eq!(
            excluded.render(CPU).as_deref(),
            Some("karpenter.k8s.aws/instance-cpu NotIn [5] >=2")
        );
        assert!(
            excluded.allows(CPU, "6") && !excluded.allows(CPU, "5") && !excluded.allows(CPU, "a")
        );
    }

    #[test]
    fn undefined_well_known_keys_are_allowed_and_custom_ones_rejected() {
        let pool = Requirements::for_nodepool(
            "default",
            &[req("team", "In", &["a"])],
            &BTreeMap::new(),
            None,
        )
        .unwrap();
        let pod = |r: Requirement| errors(&reqs(&[r]), &pool);
        assert!(pod(req(ZONE, "In", &["us-east-1a"])).is_empty());
        assert!(pod(req("kubernetes.io/arch", "In", &["arm64"])).is_empty());
        assert!(pod(req("karpenter.sh/capacity-type", "DoesNotExist", &[])).is_empty());
        assert_eq!(
            pod(req("example.com/gpu", "In", &["yes"])),
            ["label \"example.com/gpu\" does not have known values"]
        );
        assert_eq!(
            pod(req("example.com/gpu", "Exists", &[])),
            ["label \"example.com/gpu\" does not have known values"]
        );
        assert!(pod(req("example.com/gpu", "NotIn", &["yes"])).is_empty());
        assert!(pod(req("example.com/gpu", "DoesNotExist", &[])).is_empty());
        // A pool key the pod leaves undefined never matters.
        assert!(pod(req(ZONE, "Exists", &[])).is_empty());
    }

    #[test]
    fn typo_hints_mirror_karpenter() {
        let pool = Requirements::for_nodepool(
            "default",
            &[req("example.com/team-name", "In", &["a"])],
            &BTreeMap::new(),
            None,
        )
        .unwrap();
        let undefined =
            |key: &str| compatible(&reqs(&[req(key, "In", &["x"])]), &pool).unwrap_err();
        assert_eq!(
            undefined("zone")[0].to_string(),
            "label \"zone\" does not have known values (typo of \"topology.kubernetes.io/zone\"?)"
        );
        assert_eq!(
            undefined("team-name")[0],
            Incompatibility::UndefinedLabel {
                key: "team-name".into(),
                typo_of: Some("example.com/team-name".into())
            }
        );
        assert_eq!(undefined("other.io/team-name")[0].to_string(), "label \"other.io/team-name\" does not have known values (typo of \"example.com/team-name\"?)");
        assert_eq!(undefined("example.com/gpu")[0].key(), "example.com/gpu");
        assert_eq!(
            undefined("example.com/gpu")[0],
            Incompatibility::UndefinedLabel {
                key: "example.com/gpu".into(),
                typo_of: None
            }
        );
    }

    #[test]
    fn aliases_normalize_to_well_known_keys() {
        assert_eq!(
            normalize_key("failure-domain.beta.kubernetes.io/zone"),
            ZONE
        );
        assert_eq!(
            normalize_key("beta.kubernetes.io/instance-type"),
            "node.kubernetes.io/instance-type"
        );
        assert_eq!(normalize_key("example.com/x"), "example.com/x");
        assert!(
            is_well_known("beta.kubernetes.io/arch")
                && is_well_known("failure-domain.beta.kubernetes.io/region")
        );
        assert!(!is_well_known("karpenter.k8s.aws/instance-family"));
        assert!(is_well_known_for(
            "karpenter.k8s.aws/instance-family",
            AWS_WELL_KNOWN_LABELS
        ));
        let pool = reqs(&[req(ZONE, "In", &["b"])]);
        let pod = Requirements::for_pod(
            &labels(&[("failure-domain.beta.kubernetes.io/zone", "a")]),
            None,
        )
        .unwrap();
        assert_eq!(pod.keys().collect::<Vec<_>>(), [ZONE]);
        assert_eq!(errors(&pod, &pool), ["key topology.kubernetes.io/zone, topology.kubernetes.io/zone In [a] not in topology.kubernetes.io/zone In [b]"]);
        assert_eq!(
            pool.render("failure-domain.beta.kubernetes.io/zone")
                .as_deref(),
            Some("topology.kubernetes.io/zone In [b]")
        );
    }

    #[test]
    fn requirements_on_one_key_intersect_within_a_side() {
        let pool = reqs(&[req("k", "In", &["a", "b", "c"]), req("k", "NotIn", &["b"])]);
        assert_eq!(pool.render("k").as_deref(), Some("k In [a c]"));
        let pool = reqs(&[
            req("k", "NotIn", &["a"]),
            req("k", "NotIn", &["b"]),
            req("k", "Exists", &[]),
        ]);
        assert_eq!(pool.render("k").as_deref(), Some("k NotIn [a b]"));
        let pod = Requirements::for_pod(
            &labels(&[("k", "a")]),
            Some(&term(vec![nsr("k", "In", &["b"])])),
        )
        .unwrap();
        assert_eq!(pod.operator("k"), Some(Operator::DoesNotExist));
        let pod = Requirements::for_pod(
            &labels(&[("k", "a")]),
            Some(&term(vec![nsr("k", "In", &["a", "b"])])),
        )
        .unwrap();
        assert_eq!(pod.render("k").as_deref(), Some("k In [a]"));
    }

    #[test]
    fn pod_terms_ignore_match_fields() {
        let t = NodeSelectorTerm {
            match_expressions: Some(vec![nsr(ZONE, "In", &["a"])]),
            match_fields: Some(vec![nsr("metadata.name", "In", &["node-1"])]),
        };
        let pod = Requirements::for_pod(&BTreeMap::new(), Some(&t)).unwrap();
        assert_eq!(pod.keys().collect::<Vec<_>>(), [ZONE]);
        let only_fields = NodeSelectorTerm {
            match_expressions: None,
            match_fields: t.match_fields.clone(),
        };
        assert!(Requirements::for_pod(&BTreeMap::new(), Some(&only_fields))
            .unwrap()
            .is_empty());
        assert!(Requirements::for_pod(&BTreeMap::new(), None)
            .unwrap()
            .is_empty());
    }

    #[test]
    fn nodepool_side_adds_labels_pool_name_and_nodeclass() {
        let pool = Requirements::for_nodepool(
            "gpu",
            &[req("kubernetes.io/arch", "In", &["amd64"])],
            &labels(&[("team", "ml")]),
            Some(("karpenter.k8s.aws/ec2nodeclass", "default")),
        )
        .unwrap();
        assert_eq!(
            pool.keys().collect::<Vec<_>>(),
            [
                "karpenter.k8s.aws/ec2nodeclass",
                "karpenter.sh/nodepool",
                "kubernetes.io/arch",
                "team"
            ]
        );
        assert_eq!(
            pool.to_string(),
            "karpenter.k8s.aws/ec2nodeclass In [default], karpenter.sh/nodepool In [gpu], kubernetes.io/arch In [amd64], team In [ml]"
        );
        let pod = |pairs: &[(&str, &str)]| {
            errors(&Requirements::for_pod(&labels(pairs), None).unwrap(), &pool)
        };
        assert!(pod(&[("team", "ml"), ("karpenter.sh/nodepool", "gpu")]).is_empty());
        assert_eq!(pod(&[("karpenter.sh/nodepool", "other")]), ["key karpenter.sh/nodepool, karpenter.sh/nodepool In [other] not in karpenter.sh/nodepool In [gpu]"]);
        assert_eq!(
            pod(&[("team", "web")]),
            ["key team, team In [web] not in team In [ml]"]
        );
        // The AWS NodeClass makes the AWS instance labels well-known for this pool only.
        assert!(pod(&[("karpenter.k8s.aws/instance-family", "g5")]).is_empty());
        let core = Requirements::for_nodepool("gpu", &[], &BTreeMap::new(), None).unwrap();
        let aws_label = Requirements::for_pod(
            &labels(&[("karpenter.k8s.aws/instance-family", "g5")]),
            None,
        )
        .unwrap();
        assert_eq!(
            errors(&aws_label, &core),
            ["label \"karpenter.k8s.aws/instance-family\" does not have known values"]
        );
        let kwok = Requirements::for_nodepool(
            "k",
            &[],
            &BTreeMap::new(),
            Some(("karpenter.kwok.sh/kwoknodeclass", "default")),
        )
        .unwrap();
        let kwok_label =
            Requirements::for_pod(&labels(&[("karpenter.kwok.sh/instance-size", "4x")]), None)
                .unwrap();
        assert_eq!(compatible(&kwok_label, &kwok), Ok(()));
        assert_eq!(
            Provider::from_nodeclass_label("karpenter.kwok.sh/kwoknodeclass"),
            Provider::Kwok
        );
        assert_eq!(
            Provider::from_nodeclass_label("example.com/mynodeclass"),
            Provider::Core
        );
    }

    #[test]
    fn all_incompatibilities_come_back_ordered_by_key() {
        let pool = reqs(&[req("b", "In", &["1"]), req("d", "In", &["1"])]);
        let pod = reqs(&[
            req("d", "In", &["2"]),
            req("c", "In", &["x"]),
            req("b", "In", &["2"]),
            req("a", "Exists", &[]),
        ]);
        let found = compatible(&pod, &pool).unwrap_err();
        assert_eq!(
            found.iter().map(Incompatibility::key).collect::<Vec<_>>(),
            ["a", "b", "c", "d"]
        );
    }

    #[test]
    fn rendering_truncates_values_and_shows_min_values() {
        let many: Vec<String> = (1..=8).map(|i| format!("v{i}")).collect();
        let mut r = Requirement {
            key: "node.kubernetes.io/instance-type".into(),
            operator: "In".into(),
            values: many,
            min_values: Some(3),
        };
        let pool = reqs(&[r.clone()]);
        assert_eq!(
            pool.render("node.kubernetes.io/instance-type").as_deref(),
            Some("node.kubernetes.io/instance-type In [v1 v2 v3 v4 v5 and 3 others] minValues 3")
        );
        r.operator = "NotIn".into();
        r.min_values = None;
        assert!(reqs(&[r])
            .render("node.kubernetes.io/instance-type")
            .unwrap()
            .starts_with("node.kubernetes.io/instance-type NotIn [v1 "));
        assert_eq!(
            reqs(&[req("k", "Exists", &[])]).render("k").as_deref(),
            Some("k Exists")
        );
        assert_eq!(reqs(&[]).render("k"), None);
        // Display leaves out the restricted hostname label, like Karpenter's String().
        let shown = reqs(&[
            req("kubernetes.io/hostname", "In", &["n1"]),
            req("z", "In", &["1"]),
            req("a", "DoesNotExist", &[]),
        ]);
        assert_eq!(shown.to_string(), "a DoesNotExist, z In [1]");
    }

    #[test]
    fn allows_checks_a_node_label_value() {
        let pool = reqs(&[req(ZONE, "In", &["a", "b"]), req(CPU, "Gte", &["4"])]);
        assert!(pool.allows(ZONE, "a") && !pool.allows(ZONE, "c"));
        assert!(pool.allows(CPU, "4") && !pool.allows(CPU, "2") && !pool.allows(CPU, "four"));
        assert!(pool.allows("undefined/key", "anything"));
        assert!(!reqs(&[req("k", "NotIn", &["x"])]).allows("k", "x"));
    }

    #[test]
    fn uninterpretable_requirements_are_errors() {
        let err = Requirements::from_requirements(&[req("k", "Matches", &["a"])]).unwrap_err();
        assert_eq!((err.key.as_str(), err.operator.as_str()), ("k", "Matches"));
        assert_eq!(err.to_string(), "key k has an unsupported operator Matches");
        assert!(Requirements::from_requirements(&[req("k", "Gt", &["two"])]).is_err());
        assert!(Requirements::from_requirements(&[req("k", "Lt", &[])]).is_err());
        assert!(Requirements::from_requirements(&[req("k", "Gte", &["1", "2"])]).is_err());
        assert!(
            Requirements::for_pod(&BTreeMap::new(), Some(&term(vec![nsr("k", "in", &["a"])])))
                .is_err()
        );
        assert!(
            Requirements::for_nodepool("p", &[req("k", "", &[])], &BTreeMap::new(), None).is_err()
        );
    }

    #[test]
    fn requirement_serde_and_conversion() {
        let r: Requirement =
            serde_json::from_str(r#"{"key":"k","operator":"In","values":["a"],"minValues":2}"#)
                .unwrap();
        assert_eq!(
            r,
            Requirement {
                key: "k".into(),
                operator: "In".into(),
                values: vec!["a".into()],
                min_values: Some(2)
            }
        );
        let bare: Requirement = serde_json::from_str(r#"{"key":"k","operator":"Exists"}"#).unwrap();
        assert!(bare.values.is_empty() && bare.min_values.is_none());
        assert_eq!(
            serde_json::to_string(&bare).unwrap(),
            r#"{"key":"k","operator":"Exists","values":[]}"#
        );
        let from = Requirement::from(&NodeSelectorRequirement {
            key: "k".into(),
            operator: "DoesNotExist".into(),
            values: None,
        });
        assert_eq!(from, req("k", "DoesNotExist", &[]));
        assert_eq!(Operator::parse("Gte"), Some(Operator::Gte));
        assert_eq!(Operator::parse("gte"), None);
        assert_eq!(Operator::Lte.to_string(), "Lte");
    }

    fn arb_requirement() -> impl Strategy<Value = Requirement> {
        let key = prop::sample::select(vec![
            "a",
            "b",
            ZONE,
            "failure-domain.beta.kubernetes.io/zone",
            "example.com/c",
        ]);
        let value =
            prop::sample::select(vec!["x", "y", "0", "1", "5", "-3", "9223372036854775807"]);
        let op = prop::sample::select(Operator::ALL.to_vec());
        (
            key,
            op,
            prop::collection::vec(value, 0..4),
            prop::option::of(0i64..4),
        )
            .prop_map(|(key, op, values, min_values)| {
                let values = if op.is_numeric() {
                    values.into_iter().take(1).collect()
                } else {
                    values
                };
                Requirement {
                    key: key.into(),
                    operator: op.as_str().into(),
                    values: values.into_iter().map(String::from).collect(),
                    min_values,
                }
            })
    }

    proptest! {
        #[test]
        fn compatible_never_panics_and_every_set_fits_itself(
            pod in prop::collection::vec(arb_requirement(), 0..6),
            pool in prop::collection::vec(arb_requirement(), 0..6),
        ) {
            let (pod, pool) = (Requirements::from_requirements(&pod), Requirements::from_requirements(&pool));
            if let (Ok(pod), Ok(pool)) = (pod, pool) {
                let _ = compatible(&pod, &pool);
                prop_assert_eq!(compatible(&pod, &pod), Ok(()));
                prop_assert_eq!(compatible(&pool, &pool), Ok(()));
                for key in pod.keys() {
                    prop_assert!(pod.render(key).is_some());
                }
            }
        }

        #[test]
        fn intersection_is_commutative(
            a in prop::collection::vec(arb_requirement(), 0..5),
            b in prop::collection::vec(arb_requirement(), 0..5),
        ) {
            let ab: Vec<Requirement> = a.iter().chain(&b).cloned().collect();
            let ba: Vec<Requirement> = b.iter().chain(&a).cloned().collect();
            if let (Ok(x), Ok(y)) = (Requirements::from_requirements(&ab), Requirements::from_requirements(&ba)) {
                prop_assert_eq!(x, y);
            }
        }
    }
}
