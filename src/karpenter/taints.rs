//! Taint and toleration semantics as Karpenter v1.14 and v1.15 apply them to a NodePool
//! template and a node: Kubernetes' `ToleratesTaint` (with the numeric Gt/Lt toleration
//! operators enabled, as Karpenter calls it), which taints a pod leaves untolerated (the
//! PreferNoSchedule ones apart: a preference Karpenter relaxes last), and Karpenter's
//! rendering of a taint in its messages.

use k8s_openapi::api::core::v1::{Taint, Toleration};

/// Kubernetes `Toleration.ToleratesTaint`: an empty effect matches every effect; an empty key
/// (with Exists) matches every key; Exists ignores the value; Equal or an empty operator compares
/// values; Gt/Lt compare canonical decimal integers (taint value > / < toleration value); any
/// other operator tolerates nothing.
pub fn tolerates(toleration: &Toleration, taint: &Taint) -> bool {
    let (effect, key, value) = (
        field(&toleration.effect),
        field(&toleration.key),
        field(&toleration.value),
    );
    if !effect.is_empty() && effect != taint.effect || !key.is_empty() && key != taint.key {
        return false;
    }
    let taint_value = field(&taint.value);
    match field(&toleration.operator) {
        "" | "Equal" => value == taint_value,
        "Exists" => true,
        op @ ("Gt" | "Lt") => match (canonical_integer(value), canonical_integer(taint_value)) {
            (Some(bound), Some(actual)) => {
                if op == "Gt" {
                    actual > bound
                } else {
                    actual < bound
                }
            }
            _ => false,
        },
        _ => false,
    }
}

fn field(s: &Option<String>) -> &str {
    s.as_deref().unwrap_or_default()
}

/// A decimal integer in Kubernetes' canonical form ("0", or an optional '-' then 1-9 and digits).
fn canonical_integer(s: &str) -> Option<i64> {
    let digits = s.strip_prefix('-').unwrap_or(s);
    let canonical = s == "0"
        || (digits.starts_with(|c: char| ('1'..='9').contains(&c))
            && digits.bytes().all(|b| b.is_ascii_digit()));
    canonical.then(|| s.parse().ok()).flatten()
}

/// Template taints the pod does not tolerate, in order, as Karpenter checks a NodePool. Pass
/// `spec.template.spec.taints` (never `startupTaints`). PreferNoSchedule taints are left out:
/// Karpenter's simulation holds a pod to them at first, and its last relaxation step
/// tolerates them all when some NodePool's template carries one (v1.15 `Preferences`,
/// `NewScheduler`), which a pool whose own taint is in question does; see [`soft`].
pub fn untolerated<'a>(tolerations: &[Toleration], taints: &'a [Taint]) -> Vec<&'a Taint> {
    taints
        .iter()
        .filter(|t| {
            t.effect != "PreferNoSchedule" && !tolerations.iter().any(|tol| tolerates(tol, t))
        })
        .collect()
}

/// The PreferNoSchedule taints the pod does not tolerate. Karpenter's `Taints.ToleratesPod`
/// checks every effect, so its simulation keeps a pod off such a taint (a node's, or a
/// NodePool template's) like any other, until the pod has failed everywhere and has no
/// other preference left to relax; then it tolerates them, but only if some NodePool's
/// template carries a PreferNoSchedule taint ([`any_pool_soft`]). Otherwise never.
pub fn soft<'a>(
    tolerations: &'a [Toleration],
    taints: &'a [Taint],
) -> impl Iterator<Item = &'a Taint> {
    taints.iter().filter(|t| {
        t.effect == "PreferNoSchedule" && !tolerations.iter().any(|tol| tolerates(tol, t))
    })
}

/// Whether a template of these NodePools carries a PreferNoSchedule taint: only then does
/// Karpenter's preference relaxation tolerate such taints at all.
pub fn any_pool_soft<'a>(templates: impl IntoIterator<Item = &'a [Taint]>) -> bool {
    templates
        .into_iter()
        .any(|ts| ts.iter().any(|t| t.effect == "PreferNoSchedule"))
}

/// Karpenter's rendering: `key=value:Effect`, or `key:Effect` without a value.
pub fn render(taint: &Taint) -> String {
    match taint.value.as_deref().filter(|v| !v.is_empty()) {
        Some(value) => format!("{}={}:{}", taint.key, value, taint.effect),
        None => format!("{}:{}", taint.key, taint.effect),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn taint(key: &str, value: Option<&str>, effect: &str) -> Taint {
        Taint {
            key: key.into(),
            value: value.map(Into::into),
            effect: effect.into(),
            time_added: None,
        }
    }

    fn tol(
        key: Option<&str>,
        op: Option<&str>,
        value: Option<&str>,
        effect: Option<&str>,
    ) -> Toleration {
        Toleration {
            key: key.map(Into::into),
            operator: op.map(Into::into),
            value: value.map(Into::into),
            effect: effect.map(Into::into),
            toleration_seconds: None,
        }
    }

    #[test]
    fn equal_compares_key_value_and_effect() {
        let t = taint("gpu", Some("true"), "NoSchedule");
        assert!(tolerates(
            &tol(Some("gpu"), Some("Equal"), Some("true"), Some("NoSchedule")),
            &t
        ));
        assert!(
            tolerates(
                &tol(Some("gpu"), None, Some("true"), Some("NoSchedule")),
                &t
            ),
            "empty operator means Equal"
        );
        assert!(!tolerates(
            &tol(
                Some("gpu"),
                Some("Equal"),
                Some("false"),
                Some("NoSchedule")
            ),
            &t
        ));
        assert!(!tolerates(
            &tol(Some("gpu"), Some("Equal"), None, Some("NoSchedule")),
            &t
        ));
        assert!(!tolerates(
            &tol(
                Some("other"),
                Some("Equal"),
                Some("true"),
                Some("NoSchedule")
            ),
            &t
        ));
        assert!(!tolerates(
            &tol(Some("gpu"), Some("Equal"), Some("true"), Some("NoExecute")),
            &t
        ));
        // A valueless taint is tolerated by Equal with no value.
        assert!(tolerates(
            &tol(Some("dedicated"), Some("Equal"), None, None),
            &taint("dedicated", None, "NoSchedule")
        ));
    }

    #[test]
    fn exists_ignores_value_and_an_empty_key_matches_every_key() {
        let t = taint("gpu", Some("true"), "NoExecute");
        assert!(tolerates(&tol(Some("gpu"), Some("Exists"), None, None), &t));
        assert!(!tolerates(
            &tol(Some("cpu"), Some("Exists"), None, None),
            &t
        ));
        assert!(
            tolerates(&tol(None, Some("Exists"), None, None), &t),
            "tolerate-everything"
        );
        assert!(tolerates(
            &tol(None, Some("Exists"), None, Some("NoExecute")),
            &t
        ));
        assert!(
            !tolerates(&tol(None, Some("Exists"), None, Some("NoSchedule")), &t),
            "effect still has to match"
        );
    }

    #[test]
    fn empty_effect_matches_every_effect() {
        for effect in ["NoSchedule", "NoExecute", "PreferNoSchedule"] {
            assert!(tolerates(
                &tol(Some("k"), Some("Equal"), Some("v"), None),
                &taint("k", Some("v"), effect)
            ));
            assert!(tolerates(
                &tol(Some("k"), Some("Equal"), Some("v"), Some("")),
                &taint("k", Some("v"), effect)
            ));
        }
    }

    #[test]
    fn gt_and_lt_compare_canonical_integers() {
        let t = taint("tier", Some("5"), "NoSchedule");
        assert!(
            tolerates(&tol(Some("tier"), Some("Gt"), Some("3"), None), &t),
            "5 > 3"
        );
        assert!(!tolerates(
            &tol(Some("tier"), Some("Gt"), Some("5"), None),
            &t
        ));
        assert!(
            tolerates(&tol(Some("tier"), Some("Lt"), Some("6"), None), &t),
            "5 < 6"
        );
        assert!(!tolerates(
            &tol(Some("tier"), Some("Lt"), Some("5"), None),
            &t
        ));
        assert!(tolerates(
            &tol(Some("tier"), Some("Gt"), Some("-2"), None),
            &t
        ));
        assert!(
            !tolerates(&tol(Some("tier"), Some("Gt"), Some("03"), None), &t),
            "leading zero is not canonical"
        );
        assert!(!tolerates(
            &tol(Some("tier"), Some("Gt"), Some("x"), None),
            &t
        ));
        assert!(!tolerates(
            &tol(Some("tier"), Some("Lt"), Some("9"), None),
            &taint("tier", Some("-0"), "NoSchedule")
        ));
        assert!(tolerates(
            &tol(Some("tier"), Some("Lt"), Some("1"), None),
            &taint("tier", Some("0"), "NoSchedule")
        ));
    }

    #[test]
    fn unknown_operator_tolerates_nothing() {
        assert!(!tolerates(
            &tol(Some("k"), Some("Like"), Some("v"), None),
            &taint("k", Some("v"), "NoSchedule")
        ));
    }

    #[test]
    fn untolerated_keeps_order_and_skips_prefer_no_schedule() {
        let taints = vec![
            taint("a", Some("1"), "NoSchedule"),
            taint("soft", None, "PreferNoSchedule"),
            taint("b", None, "NoExecute"),
            taint("c", Some("x"), "NoSchedule"),
        ];
        let tolerations = vec![tol(Some("c"), Some("Exists"), None, None)];
        let left: Vec<String> = untolerated(&tolerations, &taints)
            .into_iter()
            .map(render)
            .collect();
        assert_eq!(left, ["a=1:NoSchedule", "b:NoExecute"]);
        assert!(untolerated(&[tol(None, Some("Exists"), None, None)], &taints).is_empty());
        assert!(untolerated(&[], &[]).is_empty());
    }

    #[test]
    fn prefer_no_schedule_is_soft_and_relaxable_only_with_a_pool_that_carries_one() {
        let taints = vec![
            taint("a", Some("1"), "NoSchedule"),
            taint("soft", None, "PreferNoSchedule"),
            taint("spot", Some("yes"), "PreferNoSchedule"),
        ];
        let none: Vec<String> = soft(&[], &taints).map(render).collect();
        assert_eq!(none, ["soft:PreferNoSchedule", "spot=yes:PreferNoSchedule"]);
        let tolerated = [tol(Some("soft"), Some("Exists"), None, None)];
        let left: Vec<String> = soft(&tolerated, &taints).map(render).collect();
        assert_eq!(left, ["spot=yes:PreferNoSchedule"]);
        let hard_only = [taint("a", None, "NoSchedule")];
        assert!(!any_pool_soft([&hard_only[..], &[]]));
        assert!(any_pool_soft([&hard_only[..], &taints[1..2]]));
    }

    #[test]
    fn render_with_and_without_value() {
        assert_eq!(
            render(&taint("nvidia.com/gpu", Some("true"), "NoSchedule")),
            "nvidia.com/gpu=true:NoSchedule"
        );
        assert_eq!(
            render(&taint("karpenter.sh/unregistered", None, "NoExecute")),
            "karpenter.sh/unregistered:NoExecute"
        );
        assert_eq!(render(&taint("k", Some(""), "NoSchedule")), "k:NoSchedule");
    }
}
