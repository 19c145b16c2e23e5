//! A pod's eviction cost as Karpenter weighs it (v1.14.1 `utils/disruption.EvictionCost`),
//! and the emptiness it decides: Karpenter calls a node empty when no pod it would have to
//! reschedule costs more than nothing to evict (`Candidate.IsEmpty`), so a node running
//! only pods of very low priority or deletion cost is deleted as empty.

/// Each pod starts at 1; a `controller.kubernetes.io/pod-deletion-cost` adds its value over
/// 2^27, and `spec.priority` its value over 2^25; the sum is clamped to [-10, 10].
/// A deletion cost Go's `strconv.ParseFloat` refuses is ignored, as Karpenter ignores it
/// (it logs the error). A NaN stays NaN, as Go's comparisons leave it.
pub fn cost(deletion_cost: Option<&str>, priority: Option<i32>) -> f64 {
    let mut cost = 1.0;
    if let Some(d) = deletion_cost.and_then(parse_go_float) {
        cost += d / 2f64.powi(27);
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
        assert_eq!(cost(None, None), 1.0);
        assert_eq!(cost(None, Some(0)), 1.0);
        assert!(!empty([cost(None, None)]));
        assert!(empty([]));
    }

    #[test]
    fn very_low_priority_or_deletion_cost_makes_a_pod_cost_nothing() {
        // priority -2^25 cancels the base 1.
        assert_eq!(cost(None, Some(-(1 << 25))), 0.0);
        assert!(empty([cost(None, Some(-(1 << 25)))]));
        assert!(!empty([cost(None, Some(-(1 << 25) + 1))]));
        // deletion cost -2^27 does the same; the most negative one clamps to -10.
        assert_eq!(cost(Some("-134217728"), None), 0.0);
        assert_eq!(cost(Some("-2147483647"), Some(-2147483648)), -10.0);
        // A negative pod does not offset a positive one.
        assert!(!empty([-10.0, 1.0]));
        // The system-node-critical priority clamps at 10.
        assert_eq!(cost(Some("2147483647"), Some(2_000_001_000)), 10.0);
    }

    #[test]
    fn a_deletion_cost_go_cannot_read_is_ignored() {
        assert_eq!(cost(Some("cheap"), None), 1.0);
        assert_eq!(cost(Some("1e400"), None), 1.0);
        assert_eq!(cost(Some("-1.34217728e8"), None), 0.0);
        assert_eq!(cost(Some("-Inf"), None), -10.0);
        assert!(cost(Some("NaN"), None).is_nan());
        assert!(!empty([cost(Some("nan"), None)]));
    }
}
