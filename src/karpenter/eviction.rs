//! A pod's eviction cost as Karpenter weighs it (v1.14.1 and v1.15 `utils/disruption.EvictionCost`),
//! and the emptiness it decides: Karpenter calls a node empty when no pod it would have to
//! reschedule costs more than nothing to evict (`Candidate.IsEmpty`), so a node running
//! only pods of very low priority or deletion cost is deleted as empty.

/// The annotation a user sets to weigh a pod's eviction for Karpenter alone (v1.15 on).
pub const DISRUPTION_COST: &str = "karpenter.sh/disruption-cost";

/// Each pod starts at 1; a `karpenter.sh/disruption-cost` (v1.15), else a
/// `controller.kubernetes.io/pod-deletion-cost`, adds its value over 2^27, and
/// `spec.priority` its value over 2^25; the sum is clamped to [-10, 10].
/// A disruption cost must be a base-10 int32: any other is ignored, and the deletion cost
/// is then not read either (v1.15 `EvictionCost`). A deletion cost Go's
/// `strconv.ParseFloat` refuses is ignored, as Karpenter ignores it (it logs the error); a
/// NaN stays NaN, as Go's comparisons leave it. (v1.15 reads the deletion cost as an int32
/// too: for the integers Kubernetes allows there, the two agree.)
pub fn cost(
    disruption_cost: Option<&str>,
    deletion_cost: Option<&str>,
    priority: Option<i32>,
) -> f64 {
    let mut cost = 1.0;
    match disruption_cost {
        Some(d) => {
            if let Ok(v) = d.parse::<i32>() {
                cost += f64::from(v) / 2f64.powi(27);
            }
        }
        None => {
            if let Some(d) = deletion_cost.and_then(parse_go_float) {
                cost += d / 2f64.powi(27);
            }
        }
    }
    if let Some(p) = priority {
        cost += f64::from(p) / 2f64.powi(25);
    }
    // f64::clamp keeps a NaN, as Go's lo.Clamp does.
    cost.clamp(-10.0, 10.0)
}

/// Whether pods of these costs leave their node empty to Karpenter: the base cost of a
/// node plus each pod's positive cost stays at the base (`RescheduleDisruptionCost <=
/// PerNodeBaseDisruptionCost`). A NaN cost makes the sum NaN, and that is not empty.
pub fn empty(costs: impl IntoIterator<Item = f64>) -> bool {
    let mut total = 1.0;
    for c in costs {
        // Go's math.Max(0, NaN) is NaN; Rust's f64::max would drop the NaN.
        total += if c.is_nan() { c } else { c.max(0.0) };
    }
    total <= 1.0
}

/// A float as Go's `strconv.ParseFloat(s, 64)` reads one, for the forms a deletion cost is
/// written in: decimals, exponents, and inf/infinity/nan in any case. A value out of range
/// is an error there (Rust would read it as infinity), and so is none here. Go's hex
/// floats and underscores are not read, so such a cost is ignored.
fn parse_go_float(s: &str) -> Option<f64> {
    let v: f64 = s.parse().ok()?;
    if v.is_infinite() && !s.to_ascii_lowercase().contains("inf") {
        return None;
    }
    Some(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plain_pod_costs_one_and_keeps_its_node_from_being_empty() {
        assert_eq!(cost(None, None, None), 1.0);
        assert_eq!(cost(None, None, Some(0)), 1.0);
        assert!(!empty([cost(None, None, None)]));
        assert!(empty([]));
    }

    #[test]
    fn very_low_priority_or_deletion_cost_makes_a_pod_cost_nothing() {
        // priority -2^25 cancels the base 1.
        assert_eq!(cost(None, None, Some(-(1 << 25))), 0.0);
        assert!(empty([cost(None, None, Some(-(1 << 25)))]));
        assert!(!empty([cost(None, None, Some(-(1 << 25) + 1))]));
        // deletion cost -2^27 does the same; the most negative one clamps to -10.
        assert_eq!(cost(None, Some("-134217728"), None), 0.0);
        assert_eq!(cost(None, Some("-2147483647"), Some(-2147483648)), -10.0);
        // A negative pod does not offset a positive one.
        assert!(!empty([-10.0, 1.0]));
        // The system-node-critical priority clamps at 10.
        assert_eq!(cost(None, Some("2147483647"), Some(2_000_001_000)), 10.0);
    }

    #[test]
    fn a_deletion_cost_go_cannot_read_is_ignored() {
        assert_eq!(cost(None, Some("cheap"), None), 1.0);
        assert_eq!(cost(None, Some("1e400"), None), 1.0);
        assert_eq!(cost(None, Some("-1.34217728e8"), None), 0.0);
        assert_eq!(cost(None, Some("-Inf"), None), -10.0);
        assert!(cost(None, Some("NaN"), None).is_nan());
        assert!(!empty([cost(None, Some("nan"), None)]));
    }

    #[test]
    fn a_disruption_cost_comes_first_and_is_an_int32() {
        // v1.15: karpenter.sh/disruption-cost wins over the pod-deletion-cost.
        assert_eq!(cost(Some("-134217728"), Some("134217728"), None), 0.0);
        // A bad one is ignored, and the deletion cost is not read instead.
        for bad in ["1.5", "NaN", "cheap", "1e3", "2147483648"] {
            assert_eq!(cost(Some(bad), Some("-134217728"), None), 1.0, "{bad}");
        }
        assert_eq!(cost(Some("+0"), None, None), 1.0);
    }
}
