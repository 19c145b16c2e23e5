//! The pod validation Karpenter runs before it schedules a pod: the nodeSelector and
//! required node-affinity expressions must use supported operators, no restricted label
//! or domain, known capacity types, qualified keys and valid label values, with
//! Karpenter's (and the apimachinery validators') error wording.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{NodeSelectorTerm, PreferredSchedulingTerm};

use super::labels::{
    normalize_key, Provider, CAPACITY_TYPES, CAPACITY_TYPE_LABEL, NODEPOOL_LABEL,
    RESTRICTED_LABELS, WELL_KNOWN_LABELS,
};
use super::set::{Operator, Requirements};

/// The FailedScheduling text Karpenter uses for a pod that requires `karpenter.sh/nodepool
/// DoesNotExist`; Karpenter publishes no event for it.
pub const NOT_FOR_KARPENTER: &str =
    "configured to not run on a Karpenter provisioned node (requirement=karpenter.sh/nodepool DoesNotExist)";

/// The pod validation Karpenter runs before scheduling (core label sets, no preferred
/// terms): see `validate_pod_requirements_for`.
pub fn validate_pod_requirements(
    node_selector: &BTreeMap<String, String>,
    terms: &[NodeSelectorTerm],
) -> Result<(), String> {
    validate_pod_requirements_for(node_selector, terms, None, Provider::Core)
}

/// The preferred node-affinity term Karpenter's `NewPodRequirements` adds to a pod's
/// requirements: the heaviest, the first of them on a tie (Go's `sort.Slice` sorts up to
/// 12 terms by insertion, which keeps ties in order).
pub fn heaviest_preferred(preferred: &[PreferredSchedulingTerm]) -> Option<&NodeSelectorTerm> {
    let mut best: Option<&PreferredSchedulingTerm> = None;
    for p in preferred {
        if best.is_none_or(|b| p.weight > b.weight) {
            best = Some(p);
        }
    }
    best.map(|p| &p.preference)
}

/// The pod validation Karpenter runs before scheduling, with the provider's label sets: the pod
/// must not require `karpenter.sh/nodepool DoesNotExist` (`NOT_FOR_KARPENTER`; Karpenter reads
/// this from `NewPodRequirements`, which adds the heaviest `preferred` term, so a preference for
/// no pool makes Karpenter ignore the pod too), and every nodeSelector
/// entry and required node-affinity expression must pass Karpenter's requirement validation
/// (supported operator, no restricted label or domain, a known capacity type, qualified key, valid
/// label values, values for In, one non-negative integer for Gt/Lt/Gte/Lte); a term with matchFields
/// fails. Err is Karpenter's message: its errors joined by "; " (nodeSelector keys sorted; Karpenter
/// lists the supported operators in map order, kelp in declaration order).
pub fn validate_pod_requirements_for(
    node_selector: &BTreeMap<String, String>,
    terms: &[NodeSelectorTerm],
    preferred: Option<&NodeSelectorTerm>,
    provider: Provider,
) -> Result<(), String> {
    let mut errs = Vec::new();
    if requires_no_nodepool(node_selector, terms.first(), preferred) {
        errs.push(NOT_FOR_KARPENTER.to_string());
    }
    for (key, value) in node_selector {
        validate_requirement(key, "In", std::slice::from_ref(value), provider, &mut errs);
    }
    for term in terms {
        if term.match_fields.is_some() {
            errs.push("node selector term with matchFields is not supported".to_string());
        }
        for r in term.match_expressions.as_deref().unwrap_or_default() {
            validate_requirement(
                &r.key,
                &r.operator,
                r.values.as_deref().unwrap_or_default(),
                provider,
                &mut errs,
            );
        }
    }
    if errs.is_empty() {
        Ok(())
    } else {
        Err(errs.join("; "))
    }
}

/// Whether the pod's requirements (`NewPodRequirements`: the nodeSelector, the heaviest
/// preferred term and the first required term) leave `karpenter.sh/nodepool` as
/// DoesNotExist. Expressions kelp cannot parse are skipped: Karpenter reads them as Exists,
/// which changes nothing.
fn requires_no_nodepool(
    node_selector: &BTreeMap<String, String>,
    term: Option<&NodeSelectorTerm>,
    preferred: Option<&NodeSelectorTerm>,
) -> bool {
    let mut reqs = Requirements::default();
    reqs.add_labels(node_selector);
    for r in [preferred, term]
        .into_iter()
        .flatten()
        .flat_map(|t| t.match_expressions.as_deref().unwrap_or_default())
    {
        if normalize_key(&r.key) == NODEPOOL_LABEL {
            let _ = reqs.add_raw(
                &r.key,
                &r.operator,
                r.values.as_deref().unwrap_or_default(),
                None,
            );
        }
    }
    reqs.operator(NODEPOOL_LABEL) == Some(Operator::DoesNotExist)
}

/// Karpenter's `v1.ValidateRequirement` for a pod requirement (no minValues), in its error order.
fn validate_requirement(
    key: &str,
    op: &str,
    values: &[String],
    provider: Provider,
    errs: &mut Vec<String>,
) {
    let key = normalize_key(key);
    let parsed = Operator::parse(op);
    if parsed.is_none() {
        let all: Vec<&str> = Operator::ALL.iter().map(|o| o.as_str()).collect();
        errs.push(format!(
            "key {key} has an unsupported operator {op} not in [{}]",
            all.join(" ")
        ));
    }
    if let Some(e) = restricted_label_error(key, provider) {
        errs.push(e);
    }
    if key == CAPACITY_TYPE_LABEL
        && parsed == Some(Operator::In)
        && !values.iter().any(|v| CAPACITY_TYPES.contains(&v.as_str()))
    {
        let known: Vec<String> = CAPACITY_TYPES.iter().map(|v| format!("{v}:{{}}")).collect();
        let got = go_list(values);
        errs.push(format!(
            "no valid values found in {got} for {key}, expected one of: map[{}], got: {got}",
            known.join(" ")
        ));
    }
    errs.extend(
        qualified_name_errors(key)
            .into_iter()
            .map(|e| format!("key {key} is not a qualified name, {e}")),
    );
    for v in values {
        errs.extend(
            label_value_errors(v)
                .into_iter()
                .map(|e| format!("invalid value {v} for key {key}, {e}")),
        );
    }
    if parsed == Some(Operator::In) && values.is_empty() {
        errs.push(format!(
            "key {key} with operator {op} must have a value defined"
        ));
    }
    if parsed.is_some_and(Operator::is_numeric)
        && !matches!(values, [v] if v.parse::<i64>().is_ok_and(|n| n >= 0))
    {
        errs.push(format!(
            "key {key} with operator {op} must have a single positive integer value"
        ));
    }
}

fn restricted_label_error(key: &str, provider: Provider) -> Option<String> {
    if provider.is_well_known(key) {
        return None;
    }
    let domain = key.split_once('/').map_or("", |(domain, _)| domain);
    let domains = provider.restricted_domains();
    let in_domain = domains.iter().any(|d| {
        domain == *d
            || domain
                .strip_suffix(d)
                .is_some_and(|rest| rest.ends_with('.'))
    });
    if !in_domain && !RESTRICTED_LABELS.contains(&key) {
        return None;
    }
    let mut well_known: Vec<&str> = WELL_KNOWN_LABELS
        .iter()
        .chain(provider.labels())
        .copied()
        .collect();
    well_known.sort_unstable();
    Some(format!(
        "using label {key} is not allowed as it might interfere with the internal provisioning logic; specify a well known label: [{}], or a custom label that does not use a restricted domain: [{}]",
        well_known.join(" "),
        domains.join(" ")
    ))
}

/// Go's `%v` of a string slice.
fn go_list(values: &[String]) -> String {
    format!("[{}]", values.join(" "))
}

const QUALIFIED_NAME_FMT: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
const QUALIFIED_NAME_MSG: &str =
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";

/// Kubernetes' `RegexError` wording (including its doubled spaces between examples).
fn regex_error(msg: &str, pattern: &str, examples: &[&str]) -> String {
    let shown: Vec<String> = examples.iter().map(|e| format!("'{e}', ")).collect();
    format!(
        "{msg} (e.g. {}regex used for validation is '{pattern}')",
        shown.join(" or ")
    )
}

fn is_qualified_name_part(s: &str) -> bool {
    let b = s.as_bytes();
    let ext = |c: &u8| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.');
    matches!((b.first(), b.last()), (Some(f), Some(l)) if f.is_ascii_alphanumeric() && l.is_ascii_alphanumeric())
        && b.iter().all(ext)
}

fn is_dns1123_subdomain(s: &str) -> bool {
    s.split('.').all(|label| {
        let b = label.as_bytes();
        let ok = |c: &u8| c.is_ascii_lowercase() || c.is_ascii_digit();
        matches!((b.first(), b.last()), (Some(f), Some(l)) if ok(f) && ok(l))
            && b.iter().all(|c| ok(c) || *c == b'-')
    })
}

/// Kubernetes' `IsQualifiedName` messages.
fn qualified_name_errors(value: &str) -> Vec<String> {
    let name_error = || {
        regex_error(
            QUALIFIED_NAME_MSG,
            QUALIFIED_NAME_FMT,
            &["MyName", "my.name", "123-abc"],
        )
    };
    let mut errs = Vec::new();
    let parts: Vec<&str> = value.split('/').collect();
    let name = match parts.as_slice() {
        [name] => *name,
        [prefix, name] => {
            if prefix.is_empty() {
                errs.push("prefix part must be non-empty".to_string());
            } else {
                if prefix.len() > 253 {
                    errs.push("prefix part must be no more than 253 characters".to_string());
                }
                if !is_dns1123_subdomain(prefix) {
                    errs.push(format!(
                        "prefix part {}",
                        regex_error(
                            "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character",
                            r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*",
                            &["example.com"],
                        )
                    ));
                }
            }
            *name
        }
        _ => {
            return vec![format!(
                "a qualified name {} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
                name_error()
            )]
        }
    };
    if name.is_empty() {
        errs.push("name part must be non-empty".to_string());
    } else if name.len() > 63 {
        errs.push("name part must be no more than 63 characters".to_string());
    }
    if !is_qualified_name_part(name) {
        errs.push(format!("name part {}", name_error()));
    }
    errs
}

/// Kubernetes' `IsValidLabelValue` messages.
fn label_value_errors(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > 63 {
        errs.push("must be no more than 63 characters".to_string());
    }
    if !value.is_empty() && !is_qualified_name_part(value) {
        errs.push(regex_error(
            "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character",
            &format!("({QUALIFIED_NAME_FMT})?"),
            &["MyValue", "my_value", "12345"],
        ));
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::super::testing::*;
    use super::*;
    use k8s_openapi::api::core::v1::NodeSelectorRequirement;

    fn validate(ns: &[(&str, &str)], terms: &[NodeSelectorTerm]) -> Result<(), String> {
        validate_pod_requirements(&labels(ns), terms)
    }

    #[test]
    fn validation_accepts_ordinary_pods() {
        assert_eq!(validate(&[], &[]), Ok(()));
        let t = term(vec![
            nsr(ZONE, "In", &["a"]),
            nsr("example.com/x", "Exists", &[]),
            nsr(CPU, "Gt", &["4"]),
        ]);
        assert_eq!(
            validate(
                &[
                    ("karpenter.sh/capacity-type", "spot"),
                    ("karpenter.sh/nodepool", "p")
                ],
                &[t]
            ),
            Ok(())
        );
        assert_eq!(validate(&[("notkarpenter.sh/x", "1")], &[]), Ok(()));
    }

    #[test]
    fn validation_rejects_restricted_labels_and_domains() {
        let core_list = "[karpenter.sh/capacity-type karpenter.sh/nodepool kubernetes.io/arch kubernetes.io/os node.kubernetes.io/instance-type node.kubernetes.io/windows-build topology.kubernetes.io/region topology.kubernetes.io/zone]";
        assert_eq!(
            validate(&[("kubernetes.io/hostname", "n1")], &[]).unwrap_err(),
            format!("using label kubernetes.io/hostname is not allowed as it might interfere with the internal provisioning logic; specify a well known label: {core_list}, or a custom label that does not use a restricted domain: [karpenter.sh]")
        );
        assert!(validate(&[("karpenter.sh/custom", "x")], &[])
            .unwrap_err()
            .starts_with("using label karpenter.sh/custom is not allowed"));
        assert!(validate(
            &[],
            &[term(vec![nsr("team.karpenter.sh/x", "Exists", &[])])]
        )
        .is_err());
        let aws = |key: &str| {
            validate_pod_requirements_for(&labels(&[(key, "1")]), &[], None, Provider::Aws)
        };
        assert_eq!(aws("karpenter.k8s.aws/instance-generation"), Ok(()));
        let err = aws("karpenter.k8s.aws/custom").unwrap_err();
        assert!(
            err.contains("topology.k8s.aws/zone-id")
                && err.ends_with("restricted domain: [karpenter.k8s.aws karpenter.sh]"),
            "{err}"
        );
        assert_eq!(
            validate(&[("karpenter.k8s.aws/custom", "1")], &[]),
            Ok(()),
            "core Karpenter does not reserve the AWS domain"
        );
    }

    #[test]
    fn validation_messages_match_karpenter() {
        let one = |r: NodeSelectorRequirement| validate(&[], &[term(vec![r])]).unwrap_err();
        assert_eq!(one(nsr("k", "Matches", &["a"])), "key k has an unsupported operator Matches not in [In NotIn Exists DoesNotExist Gt Lt Gte Lte]");
        assert_eq!(
            one(nsr("k", "In", &[])),
            "key k with operator In must have a value defined"
        );
        assert_eq!(
            one(nsr("k", "Gt", &["x1"])),
            "key k with operator Gt must have a single positive integer value"
        );
        let negative = one(nsr("k", "Gt", &["-1"]));
        assert!(
            negative.starts_with("invalid value -1 for key k, a valid label must be"),
            "{negative}"
        );
        assert!(
            negative
                .ends_with("; key k with operator Gt must have a single positive integer value"),
            "{negative}"
        );
        assert_eq!(
            one(nsr("k", "Lt", &["1", "2"])),
            "key k with operator Lt must have a single positive integer value"
        );
        assert_eq!(
            one(nsr("karpenter.sh/capacity-type", "In", &["spotty", "cheap"])),
            "no valid values found in [spotty cheap] for karpenter.sh/capacity-type, expected one of: map[on-demand:{} reserved:{} spot:{}], got: [spotty cheap]"
        );
        assert_eq!(
            one(nsr("k", "In", &["a b"])),
            "invalid value a b for key k, a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
        );
        assert_eq!(
            one(nsr("a/b/c", "Exists", &[])),
            "key a/b/c is not a qualified name, a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        );
        assert!(one(nsr("Bad.Prefix/x", "Exists", &[])).starts_with(
            "key Bad.Prefix/x is not a qualified name, prefix part a lowercase RFC 1123 subdomain"
        ));
        assert!(one(nsr("-x", "Exists", &[]))
            .starts_with("key -x is not a qualified name, name part must consist of"));
        let t = NodeSelectorTerm {
            match_expressions: None,
            match_fields: Some(vec![]),
        };
        assert_eq!(
            validate(&[], &[t]).unwrap_err(),
            "node selector term with matchFields is not supported"
        );
        // Errors accumulate across the nodeSelector and every term, joined by "; ".
        let err = validate(
            &[("kubernetes.io/hostname", "n")],
            &[term(vec![]), term(vec![nsr("k", "In", &[])])],
        )
        .unwrap_err();
        assert!(err.starts_with("using label kubernetes.io/hostname is not allowed"));
        assert_eq!(
            err.matches("; ").count(),
            2,
            "one inside Karpenter's restricted-label message, one joining"
        );
        assert!(err.ends_with("; key k with operator In must have a value defined"));
        // Aliases are normalized before validation.
        assert_eq!(
            validate(&[("beta.kubernetes.io/arch", "amd64")], &[]),
            Ok(())
        );
    }

    #[test]
    fn validation_flags_pods_that_avoid_karpenter() {
        let t = term(vec![nsr("karpenter.sh/nodepool", "DoesNotExist", &[])]);
        assert_eq!(
            validate(&[], std::slice::from_ref(&t)).unwrap_err(),
            NOT_FOR_KARPENTER
        );
        let emptied = term(vec![nsr("karpenter.sh/nodepool", "NotIn", &["a"])]);
        assert_eq!(
            validate(&[("karpenter.sh/nodepool", "a")], &[emptied]).unwrap_err(),
            NOT_FOR_KARPENTER
        );
        // Only the first term counts, as in Karpenter's pod requirements.
        assert_eq!(
            validate(&[], &[term(vec![nsr(ZONE, "In", &["a"])]), t.clone()]),
            Ok(())
        );
    }

    #[test]
    fn a_heaviest_preference_for_no_pool_makes_karpenter_ignore_the_pod() {
        // NewPodRequirements adds the heaviest preferred term (first on a tie).
        let pref = |weight: i32, t: &NodeSelectorTerm| PreferredSchedulingTerm {
            weight,
            preference: t.clone(),
        };
        let none = term(vec![nsr("karpenter.sh/nodepool", "DoesNotExist", &[])]);
        let zone = term(vec![nsr(ZONE, "In", &["a"])]);
        let check = |prefs: &[PreferredSchedulingTerm]| {
            validate_pod_requirements_for(
                &labels(&[]),
                &[],
                heaviest_preferred(prefs),
                Provider::Aws,
            )
        };
        assert_eq!(
            check(&[pref(1, &zone), pref(50, &none)]).unwrap_err(),
            NOT_FOR_KARPENTER
        );
        assert_eq!(
            check(&[pref(50, &none), pref(50, &zone)]).unwrap_err(),
            NOT_FOR_KARPENTER
        );
        // A lighter preference for no pool is relaxed away in scheduling, not validated.
        assert_eq!(check(&[pref(50, &zone), pref(50, &none)]), Ok(()));
        assert_eq!(check(&[pref(51, &zone), pref(50, &none)]), Ok(()));
        // Intersected with the nodeSelector: In [a] and NotIn [a] leave none.
        let not_a = term(vec![nsr("karpenter.sh/nodepool", "NotIn", &["a"])]);
        assert_eq!(
            validate_pod_requirements_for(
                &labels(&[("karpenter.sh/nodepool", "a")]),
                &[],
                heaviest_preferred(&[pref(1, &not_a)]),
                Provider::Core,
            )
            .unwrap_err(),
            NOT_FOR_KARPENTER
        );
    }
}
