//! Durations, budget schedules (cron) and quantities: the small value grammars of
//! Karpenter's objects (src/karpenter/duration.rs, budgets.rs, resources.rs).
//!
//! The input is up to three lines: a schedule, a duration and a node count. Every line,
//! and the whole input, is also read as a duration, an annotation value and a quantity.
#![no_main]

use std::collections::BTreeMap;

use chrono::{DateTime, TimeZone, Utc};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use kelp::karpenter::budgets::{self, Budget, DisruptionReason};
use kelp::karpenter::duration;
use kelp::karpenter::resources::{format_quantity, Resources};
use libfuzzer_sys::fuzz_target;

/// A fixed clock (the real fixtures' capture time).
fn now() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 11, 21, 21, 42, 58).unwrap()
}

fn scalar(s: &str, now: DateTime<Utc>) {
    if let Ok(d) = duration::parse_go_duration(s) {
        let _ = duration::human(d);
        assert!(
            matches!(duration::parse_nillable(s), Ok(duration::NillableDuration::After(n)) if n == d),
            "{s:?} parses as a duration but not as a NillableDuration"
        );
    }
    let _ = duration::parse_nillable(s);
    for since in [
        now,
        now - chrono::Duration::days(400),
        DateTime::<Utc>::MIN_UTC,
    ] {
        let _ = budgets::pod_do_not_disrupt(s, since, now);
    }

    let list: BTreeMap<String, Quantity> = ["cpu", "memory", "nvidia.com/gpu", "pods"]
        .into_iter()
        .map(|k| (k.to_string(), Quantity(s.to_string())))
        .collect();
    if let Ok(r) = Resources::from_quantities(&list) {
        for (resource, &value) in &r.0 {
            assert!(value.is_finite(), "{s:?} parsed to {value}");
            let shown = format_quantity(resource, value);
            // What kelp prints for a sane quantity must itself read back as one.
            if value.abs() < 1e18 {
                let back = BTreeMap::from([(resource.clone(), Quantity(shown.clone()))]);
                assert!(
                    Resources::from_quantities(&back).is_ok(),
                    "{s:?} ({resource}) renders as {shown:?}, which does not parse"
                );
            }
        }
        let _ = r.at_or_above(&r, 0.9);
    }
}

fuzz_target!(|data: &[u8]| {
    kelp_fuzz::catch_stack_overflow();
    let text = String::from_utf8_lossy(data);
    let now = now();
    let mut lines = text.splitn(3, '\n');
    let schedule = lines.next().unwrap_or_default();
    let window = lines.next();
    let nodes = lines.next();

    scalar(&text, now);
    for line in text.lines().take(3) {
        scalar(line, now);
    }

    let budget = Budget {
        nodes: nodes.unwrap_or("10%").to_string(),
        schedule: Some(schedule.to_string()),
        duration: window.map(str::to_string),
        reasons: Some(vec!["Drifted".to_string()]),
    };
    let _ = budgets::is_active(&budget, now);
    for total in [0, 1, 7, 1000, usize::MAX] {
        let _ = budgets::budget_nodes(&budget, total);
    }
    let list = [budget, Budget::default()];
    for reason in [DisruptionReason::Drifted, DisruptionReason::Empty] {
        let allowed = budgets::allowed_disruptions(Some(&list), reason, now, 10, 3);
        assert!(
            allowed.error.is_none() || allowed.allowed == 0,
            "fails closed"
        );
    }
});
