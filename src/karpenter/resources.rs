//! Kubernetes resource lists as plain numbers (quantities parsed by kube_quantity),
//! limit checks, Kubernetes-style rendering, and a pod's effective requests under
//! Kubernetes' rule for init and sidecar containers, which Karpenter follows.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use kube_quantity::ParsedQuantity;

/// A resource list as numbers: cpu in cores, memory/storage in bytes, counts as-is.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct Resources(pub BTreeMap<String, f64>);

/// The numeric value of a quantity string ("100m" -> 0.1, "1Gi" -> 1073741824).
pub fn quantity_value(s: &str) -> Result<f64, String> {
    // A quantity needs digits before its suffix; kube_quantity would read "Ki" as 0.
    let body = s.strip_prefix(['+', '-']).unwrap_or(s);
    let digit = |r: &str| r.starts_with(|c: char| c.is_ascii_digit());
    let digits_first = digit(body) || body.strip_prefix('.').is_some_and(digit);
    let parse = |q: &str| {
        ParsedQuantity::try_from(q)
            .ok()
            .and_then(|p| p.to_bytes_f64())
    };
    // kube_quantity takes the E of "1E"/"1Ei" (exa, exbi) for an exponent and fails.
    let value = parse(s)
        .or_else(|| {
            s.strip_suffix("Ei")
                .and_then(|m| parse(&format!("{m}Pi")))
                .map(|v| v * 1024.0)
        })
        .or_else(|| {
            s.strip_suffix('E')
                .and_then(|m| parse(&format!("{m}P")))
                .map(|v| v * 1000.0)
        });
    match value {
        Some(v) if digits_first && v.is_finite() => Ok(v),
        _ => Err(format!("{s:?} is not a valid quantity")),
    }
}

/// The entries that parse, for objects the API server has already validated.
fn parsed(list: &BTreeMap<String, Quantity>) -> Resources {
    Resources(
        list.iter()
            .filter_map(|(k, q)| Some((k.clone(), quantity_value(&q.0).ok()?)))
            .collect(),
    )
}

impl Resources {
    /// Parses every quantity; a bad one is an Err naming its key and value.
    pub fn from_quantities(list: &BTreeMap<String, Quantity>) -> Result<Self, String> {
        list.iter()
            .map(|(k, q)| {
                quantity_value(&q.0)
                    .map(|v| (k.clone(), v))
                    .map_err(|e| format!("{k}: {e}"))
            })
            .collect::<Result<_, _>>()
            .map(Resources)
    }

    /// Adds `other` into `self`, key by key.
    pub fn add(&mut self, other: &Resources) {
        for (k, v) in &other.0 {
            *self.0.entry(k.clone()).or_default() += v;
        }
    }

    /// The value of `k`, 0 when absent.
    pub fn get(&self, k: &str) -> f64 {
        self.0.get(k).copied().unwrap_or(0.0)
    }

    /// Limited resources that `self` (usage) has reached or passed in `limits`, and those at >= `ratio` (e.g. 0.9): (resource, usage, limit).
    ///
    /// "Reached" includes equality: Karpenter can add nothing once usage equals the
    /// limit, so a limit of 0 is reached at once. Ordered by resource name.
    pub fn at_or_above(&self, limits: &Resources, ratio: f64) -> Vec<(String, f64, f64)> {
        limits
            .0
            .iter()
            .filter_map(|(k, &limit)| {
                let used = self.get(k);
                (used >= limit || used >= ratio * limit).then(|| (k.clone(), used, limit))
            })
            .collect()
    }

    /// Raises each entry of `self` to at least the matching entry of `other`.
    fn max_with(&mut self, other: &Resources) {
        for (k, &v) in &other.0 {
            let entry = self.0.entry(k.clone()).or_insert(v);
            *entry = entry.max(v);
        }
    }
}

/// Whether a resource is measured in bytes.
fn is_bytes(resource: &str) -> bool {
    resource == "memory" || resource.ends_with("storage") || resource.starts_with("hugepages-")
}

/// Kubernetes-style rendering: cpu "3500m" or "4", memory "12Gi" / "1536Mi", others integers.
///
/// Bytes take the largest binary suffix that divides them exactly, then the largest
/// decimal one ("13G"), else plain bytes.
pub fn format_quantity(resource: &str, value: f64) -> String {
    if !value.is_finite() {
        return value.to_string();
    }
    if value < 0.0 {
        return format!("-{}", format_quantity(resource, -value));
    }
    if resource == "cpu" {
        let milli = (value * 1000.0).round() as u128;
        return if milli.is_multiple_of(1000) {
            (milli / 1000).to_string()
        } else {
            format!("{milli}m")
        };
    }
    let n = value.round() as u128;
    if !is_bytes(resource) || n == 0 {
        return n.to_string();
    }
    let binary = [
        ("Ei", 60),
        ("Pi", 50),
        ("Ti", 40),
        ("Gi", 30),
        ("Mi", 20),
        ("Ki", 10),
    ]
    .map(|(suffix, shift)| (suffix, 1u128 << shift));
    let decimal = [
        ("E", 18),
        ("P", 15),
        ("T", 12),
        ("G", 9),
        ("M", 6),
        ("k", 3),
    ]
    .map(|(suffix, exp)| (suffix, 10u128.pow(exp)));
    binary
        .into_iter()
        .chain(decimal)
        .find(|(_, unit)| n.is_multiple_of(*unit))
        .map_or_else(
            || n.to_string(),
            |(suffix, unit)| format!("{}{suffix}", n / unit),
        )
}

/// Pod effective requests: max(sum of containers (+ restartable init sidecars), max of init containers) + overhead — Kubernetes' rule incl. sidecars.
///
/// Init containers run in order; each needs its own requests plus those of the
/// sidecars started before it, and a sidecar's requests also count towards the
/// pod's steady state. Pass each container's requests with its limits filling in
/// resources it requests nothing for (Karpenter does this; for live pods the API
/// server already has). Unparsable quantities are skipped: the API server rejects them.
pub fn pod_requests(
    containers: &[BTreeMap<String, Quantity>],
    init_containers: &[(BTreeMap<String, Quantity>, bool /* sidecar */)],
    pod_level: Option<&BTreeMap<String, Quantity>>,
    overhead: Option<&BTreeMap<String, Quantity>>,
) -> Resources {
    let mut total = Resources::default();
    for c in containers {
        total.add(&parsed(c));
    }
    let mut sidecars = Resources::default();
    let mut init_peak = Resources::default();
    for (c, sidecar) in init_containers {
        let mut needs = parsed(c);
        if *sidecar {
            total.add(&needs);
            sidecars.add(&needs);
            init_peak.max_with(&sidecars);
        } else {
            needs.add(&sidecars);
            init_peak.max_with(&needs);
        }
    }
    total.max_with(&init_peak);
    // Pod-level requests replace the containers' for the resources they may name (cpu,
    // memory, hugepages; component-helpers `PodRequests`, which Karpenter calls).
    if let Some(level) = pod_level {
        for (k, v) in parsed(level).0 {
            if k == "cpu" || k == "memory" || k.starts_with("hugepages-") {
                total.0.insert(k, v);
            }
        }
    }
    if let Some(o) = overhead {
        total.add(&parsed(o));
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const MIB: f64 = 1024.0 * 1024.0;
    const GIB: f64 = 1024.0 * MIB;

    fn list(items: &[(&str, &str)]) -> BTreeMap<String, Quantity> {
        items
            .iter()
            .map(|(k, v)| (k.to_string(), Quantity(v.to_string())))
            .collect()
    }

    fn value(s: &str) -> f64 {
        quantity_value(s).unwrap()
    }

    #[test]
    fn quantities() {
        assert_eq!(value("100m"), 0.1);
        assert_eq!(value("3500m"), 3.5);
        assert_eq!(value("2"), 2.0);
        assert_eq!(value("1Ki"), 1024.0);
        assert_eq!(value("12Mi"), 12.0 * 1024.0 * 1024.0);
        assert_eq!(value("1.5Gi"), 1.5 * 1024.0 * 1024.0 * 1024.0);
        assert_eq!(value("2k"), 2000.0);
        assert_eq!(value("1.5M"), 1.5e6);
        assert_eq!(value("13G"), 13e9);
        assert_eq!(value("1e3"), 1000.0);
        assert_eq!(value("1E3"), 1000.0);
        assert_eq!(value("1e-3"), 0.001);
        assert_eq!(value("1E"), 1e18);
        assert_eq!(value("2Ei"), 2.0 * 2f64.powi(60));
        assert_eq!(value(".5"), 0.5);
        assert_eq!(value("-1"), -1.0);
        for bad in [
            "", "Ki", "m", "+", "-", ".", "..5", "abc", "1Kb", " 1", "1 ", "nan", "inf", "1.2.3",
            "5x",
        ] {
            assert!(quantity_value(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn from_quantities_names_the_bad_entry() {
        let r = Resources::from_quantities(&list(&[
            ("cpu", "250m"),
            ("memory", "1Gi"),
            ("pods", "110"),
        ]))
        .unwrap();
        assert_eq!(
            (r.get("cpu"), r.get("memory"), r.get("pods"), r.get("gpu")),
            (0.25, GIB, 110.0, 0.0)
        );
        let err =
            Resources::from_quantities(&list(&[("cpu", "1"), ("memory", "lots")])).unwrap_err();
        assert!(err.contains("memory") && err.contains("lots"), "{err}");
    }

    #[test]
    fn add_and_limits() {
        let mut usage =
            Resources::from_quantities(&list(&[("cpu", "9"), ("memory", "10Gi")])).unwrap();
        usage.add(&Resources::from_quantities(&list(&[("cpu", "500m"), ("pods", "3")])).unwrap());
        assert_eq!(usage.get("cpu"), 9.5);
        assert_eq!(usage.get("pods"), 3.0);
        let limits = Resources::from_quantities(&list(&[
            ("cpu", "10"),
            ("memory", "100Gi"),
            ("nvidia.com/gpu", "0"),
            ("pods", "3"),
        ]))
        .unwrap();
        let hits = usage.at_or_above(&limits, 0.9);
        let names: Vec<_> = hits.iter().map(|(k, _, _)| k.as_str()).collect();
        assert_eq!(names, ["cpu", "nvidia.com/gpu", "pods"]);
        assert_eq!(hits[0], ("cpu".to_string(), 9.5, 10.0));
        assert_eq!(usage.at_or_above(&limits, 1.0).len(), 2);
    }

    #[test]
    fn formatting() {
        assert_eq!(format_quantity("cpu", 3.5), "3500m");
        assert_eq!(format_quantity("cpu", 4.0), "4");
        assert_eq!(format_quantity("cpu", 0.1), "100m");
        assert_eq!(format_quantity("cpu", 0.0), "0");
        assert_eq!(format_quantity("memory", 12.0 * GIB), "12Gi");
        assert_eq!(format_quantity("memory", 1536.0 * MIB), "1536Mi");
        assert_eq!(format_quantity("memory", 13e9), "13G");
        assert_eq!(format_quantity("memory", 1000.0), "1k");
        assert_eq!(format_quantity("memory", 1234567.0), "1234567");
        assert_eq!(format_quantity("ephemeral-storage", 20.0 * GIB), "20Gi");
        assert_eq!(format_quantity("hugepages-2Mi", 4.0 * MIB), "4Mi");
        assert_eq!(format_quantity("pods", 110.0), "110");
        assert_eq!(format_quantity("memory", -1024.0), "-1Ki");
        assert_eq!(format_quantity("cpu", f64::NAN), "NaN");
        for (resource, q) in [
            ("cpu", "1500m"),
            ("cpu", "16"),
            ("memory", "16069360Ki"),
            ("memory", "512Mi"),
        ] {
            assert_eq!(format_quantity(resource, value(q)), q);
        }
    }

    #[test]
    fn requests_with_init_containers_and_sidecars() {
        let app = [
            list(&[("cpu", "500m"), ("memory", "256Mi")]),
            list(&[("cpu", "250m")]),
        ];
        // No init containers: the sum.
        let r = pod_requests(&app, &[], None, None);
        assert_eq!((r.get("cpu"), r.get("memory")), (0.75, 256.0 * MIB));
        // A big init container dominates cpu; memory stays the containers' sum.
        let init = [(list(&[("cpu", "2"), ("memory", "64Mi")]), false)];
        let r = pod_requests(&app, &init, None, None);
        assert_eq!((r.get("cpu"), r.get("memory")), (2.0, 256.0 * MIB));
        // Sidecars add to the steady state and to every later init container.
        let init = [
            (list(&[("cpu", "100m"), ("memory", "1Gi")]), false),
            (list(&[("cpu", "200m"), ("memory", "128Mi")]), true),
            (list(&[("cpu", "1"), ("memory", "128Mi")]), false),
        ];
        let r = pod_requests(
            &app,
            &init,
            None,
            Some(&list(&[("cpu", "50m"), ("memory", "0")])),
        );
        assert!(
            (r.get("cpu") - (1.2 + 0.05)).abs() < 1e-9,
            "{}",
            r.get("cpu")
        );
        assert_eq!(r.get("memory"), GIB);
        // Sidecar before, plain init after: steady state 0.75 + 0.2; init phase 1 + 0.2.
        let r = pod_requests(&app, &init[1..], None, None);
        assert!((r.get("cpu") - 1.2).abs() < 1e-9);
        assert_eq!(r.get("memory"), (256.0 + 128.0) * MIB);
        // Overhead is added on top; bad quantities are skipped.
        let r = pod_requests(
            &[list(&[("cpu", "1"), ("memory", "junk")])],
            &[],
            None,
            Some(&list(&[("cpu", "250m")])),
        );
        assert_eq!((r.get("cpu"), r.0.contains_key("memory")), (1.25, false));
        // Pod-level requests stand for the containers' cpu and memory (not for what they
        // may not name), with overhead on top.
        let r = pod_requests(
            &[list(&[
                ("cpu", "1"),
                ("memory", "1Gi"),
                ("nvidia.com/gpu", "1"),
            ])],
            &[],
            Some(&list(&[("cpu", "4"), ("nvidia.com/gpu", "8")])),
            Some(&list(&[("cpu", "250m")])),
        );
        assert_eq!(
            (r.get("cpu"), r.get("memory"), r.get("nvidia.com/gpu")),
            (4.25, GIB, 1.0)
        );
    }

    proptest! {
        #[test]
        fn parsing_and_formatting_never_panic(s in "\\PC{0,16}", v in proptest::num::f64::ANY) {
            let _ = quantity_value(&s);
            for resource in ["cpu", "memory", "pods"] {
                let _ = format_quantity(resource, v);
            }
        }

        #[test]
        fn binary_memory_round_trips(n in 1u64..1_000_000, suffix in prop::sample::select(vec!["Ki", "Mi", "Gi"])) {
            let q = format!("{n}{suffix}");
            prop_assert_eq!(value(&format_quantity("memory", value(&q))), value(&q));
        }
    }
}
