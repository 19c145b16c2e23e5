//! The seed operator's metrics, derived from fixture dumps (no cluster), and the generated
//! alert rules and dashboard.

use std::path::{Path, PathBuf};

use chrono::{DateTime, Duration, Utc};

use kelp::analysis::run;
use kelp::metrics::seed::SeedMetrics;
use kelp::metrics::{defs, generate};
use kelp::model::Cluster;

const NOW: &str = "2026-11-21T10:00:00Z";

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/findings")
        .join(name)
}

/// The fixture's `fires.yaml` model and the time its expect.yaml evaluates it at.
fn load(name: &str) -> (Cluster, DateTime<Utc>) {
    let dir = fixture(name);
    let mut c = Cluster::default();
    kelp::source::load_paths(&[dir.join("fires.yaml")], &mut c).unwrap();
    let expect: serde_json::Value =
        serde_norway::from_str(&std::fs::read_to_string(dir.join("expect.yaml")).unwrap()).unwrap();
    let now = expect["now"].as_str().unwrap_or(NOW);
    (c, DateTime::parse_from_rfc3339(now).unwrap().into())
}

fn scrape(seed: &SeedMetrics) -> String {
    let mut r = prometheus_client::registry::Registry::default();
    seed.register(&mut r);
    kelp::metrics::encode(&r).unwrap()
}

/// The series of the model's tally (each pool's nodes), as `kelp serve` adds them.
fn tallied(c: &Cluster) -> String {
    let mut r = prometheus_client::registry::Registry::default();
    kelp::metrics::live::register(&mut r, kelp::model::tally::live(c));
    kelp::metrics::encode(&r).unwrap()
}

fn pass(seed: &SeedMetrics, name: &str) -> (Cluster, kelp::analysis::Pass, DateTime<Utc>) {
    let (c, now) = load(name);
    let report = run(&c, now);
    seed.update(&report, &c, now);
    (c, report, now)
}

/// Lines of `metric` whose labels contain every `label="value"` given.
fn lines<'t>(text: &'t str, metric: &str, labels: &[&str]) -> Vec<&'t str> {
    text.lines()
        .filter(|l| l.starts_with(&format!("{metric}{{")))
        .filter(|l| labels.iter().all(|x| l.contains(x)))
        .collect()
}

#[test]
fn every_seed_metric_is_exposed_with_its_name_type_and_help() {
    let seed = SeedMetrics::default();
    for f in [
        "daemonset-nodepool-mismatch",
        "node-expired-not-replaced",
        "pod-nominated-not-bound",
        "empty-node-not-reaped",
    ] {
        pass(&seed, f);
    }
    // The empty node is reaped: its delay is observed.
    let (mut c, now) = load("empty-node-not-reaped");
    c.delete_node("ip-10-0-34-249.us-west-2.compute.internal");
    seed.update(&run(&c, now), &c, now + Duration::minutes(10));
    let text = scrape(&seed);
    // An empty family is not exposed; no fixture has an empty node held by a nomination.
    for d in defs::SEED
        .iter()
        .filter(|d| **d != defs::NODES_NOT_REAPED_DUE_TO_NOMINATION)
    {
        let family = d.name.strip_suffix("_total").unwrap_or(d.name);
        assert!(
            text.contains(&format!("# TYPE {family} {}", d.kind.as_str())),
            "{} not typed {} in\n{text}",
            d.name,
            d.kind.as_str()
        );
    }
}

#[test]
fn daemonset_mismatch_is_counted_once_across_passes_and_relists() {
    let seed = SeedMetrics::default();
    let (_, report, now) = pass(&seed, "daemonset-nodepool-mismatch");
    let text = scrape(&seed);
    let got = lines(
        &text,
        defs::DAEMONSET_NODEPOOL_MISMATCH.name,
        &["nodepool=\"gpu\""],
    );
    assert!(!got.is_empty(), "{text}");
    assert!(got.iter().all(|l| l.ends_with(" 1")), "{got:?}");
    for l in &got {
        for label in defs::DAEMONSET_NODEPOOL_MISMATCH.labels {
            assert!(l.contains(&format!("{label}=\"")), "{label} missing: {l}");
        }
    }
    // The same pass again, and a relist (a fresh model from the same dump), later.
    let (c, _) = load("daemonset-nodepool-mismatch");
    seed.update(&report, &c, now + Duration::minutes(1));
    pass(&seed, "daemonset-nodepool-mismatch");
    let again = scrape(&seed);
    assert_eq!(
        got,
        lines(
            &again,
            defs::DAEMONSET_NODEPOOL_MISMATCH.name,
            &["nodepool=\"gpu\""]
        )
    );
}

#[test]
fn series_of_gone_objects_are_dropped_after_the_ttl() {
    let seed = SeedMetrics::new(std::time::Duration::from_secs(3600));
    let (_, _, now) = pass(&seed, "daemonset-nodepool-mismatch");
    let name = defs::DAEMONSET_NODEPOOL_MISMATCH.name;
    assert!(!lines(&scrape(&seed), name, &[]).is_empty());
    let remembered = seed.remembered();
    assert!(remembered > 0);
    // Everything is deleted: the series stay for the TTL, then go.
    let empty = Cluster::default();
    let nothing = run(&empty, now);
    seed.update(&nothing, &empty, now + Duration::minutes(5));
    seed.update(&nothing, &empty, now + Duration::minutes(50));
    assert!(!lines(&scrape(&seed), name, &[]).is_empty());
    seed.update(&nothing, &empty, now + Duration::minutes(66));
    assert!(
        lines(&scrape(&seed), name, &[]).is_empty(),
        "{}",
        scrape(&seed)
    );
    assert_eq!(seed.remembered(), 0);
}

#[test]
fn series_of_live_objects_outlive_the_ttl() {
    let seed = SeedMetrics::new(std::time::Duration::from_secs(60));
    let (c, _, now) = pass(&seed, "daemonset-nodepool-mismatch");
    // The finding resolved but the DaemonSet and nodes still exist: the count stays.
    let nothing = run(&Cluster::default(), now);
    seed.update(&nothing, &c, now + Duration::hours(3));
    let name = defs::DAEMONSET_NODEPOOL_MISMATCH.name;
    assert!(!lines(&scrape(&seed), name, &[]).is_empty());
}

/// As `kelp serve` keeps one model from pass to pass: its pod deleted from that model, a
/// nomination failure's series goes once the TTL has passed, with no new finding between.
#[test]
fn a_nomination_failure_goes_with_its_pod_from_a_kept_model() {
    let seed = SeedMetrics::new(std::time::Duration::from_secs(60));
    let (mut c, _, now) = pass(&seed, "pod-nominated-not-bound");
    let name = defs::NOMINATED_POD_FAILURES.name;
    let nothing = run(&Cluster::default(), now);
    seed.update(&nothing, &c, now + Duration::hours(3));
    assert!(!lines(&scrape(&seed), name, &[]).is_empty());
    let pods: Vec<_> = c.pods.keys().cloned().collect();
    for (ns, pod) in pods {
        c.delete_pod(&ns, &pod);
    }
    outlives_the_ttl_then_goes(&seed, &nothing, &c, now + Duration::hours(3), name);
}

/// With `c` as the model from `at` on: `name`'s series stays within the TTL (60 s) and is
/// gone an hour later.
fn outlives_the_ttl_then_goes(
    seed: &SeedMetrics,
    pass: &kelp::analysis::Pass,
    c: &Cluster,
    at: DateTime<Utc>,
    name: &str,
) {
    seed.update(pass, c, at + Duration::seconds(30));
    assert!(!lines(&scrape(seed), name, &[]).is_empty());
    seed.update(pass, c, at + Duration::hours(1));
    assert!(
        lines(&scrape(seed), name, &[]).is_empty(),
        "{}",
        scrape(seed)
    );
}

/// As serve keeps one model: pods changing alone leave what the seed knows is alive, but
/// the DaemonSet deleted from that model takes its series once the TTL has passed.
#[test]
fn a_daemonset_mismatch_goes_with_its_daemonset_from_a_kept_model() {
    let seed = SeedMetrics::new(std::time::Duration::from_secs(60));
    let (mut c, _, now) = pass(&seed, "daemonset-nodepool-mismatch");
    let name = defs::DAEMONSET_NODEPOOL_MISMATCH.name;
    let nothing = run(&Cluster::default(), now);
    let pods: Vec<_> = c.pods.keys().cloned().collect();
    for (ns, pod) in pods {
        c.delete_pod(&ns, &pod);
    }
    seed.update(&nothing, &c, now + Duration::hours(3));
    assert!(!lines(&scrape(&seed), name, &[]).is_empty());
    let daemonsets: Vec<_> = c.daemonsets.keys().cloned().collect();
    for (ns, ds) in daemonsets {
        c.delete_daemonset(&ns, &ds);
    }
    outlives_the_ttl_then_goes(&seed, &nothing, &c, now + Duration::hours(3), name);
}

#[test]
fn a_nomination_failure_lives_while_its_pod_does() {
    let seed = SeedMetrics::new(std::time::Duration::from_secs(60));
    let (c, _, now) = pass(&seed, "pod-nominated-not-bound");
    let name = defs::NOMINATED_POD_FAILURES.name;
    assert!(!lines(&scrape(&seed), name, &[]).is_empty());
    // The finding is gone but the pod is still there: the count outlives the TTL.
    let nothing = run(&Cluster::default(), now);
    seed.update(&nothing, &c, now + Duration::hours(3));
    assert!(!lines(&scrape(&seed), name, &[]).is_empty());
    // The pod is gone too: the series goes once the TTL has passed.
    let empty = Cluster::default();
    seed.update(
        &nothing,
        &empty,
        now + Duration::hours(3) + Duration::seconds(30),
    );
    assert!(!lines(&scrape(&seed), name, &[]).is_empty());
    seed.update(&nothing, &empty, now + Duration::hours(4));
    assert!(
        lines(&scrape(&seed), name, &[]).is_empty(),
        "{}",
        scrape(&seed)
    );
}

#[test]
fn expired_nodes_are_ttl_deaths() {
    let seed = SeedMetrics::default();
    pass(&seed, "node-expired-not-replaced");
    let text = scrape(&seed);
    let got = lines(
        &text,
        defs::NODE_TTL_DEATHS.name,
        &["nodepool=\"default\"", "ttl_reason=\"expireAfter\""],
    );
    assert!(!got.is_empty(), "{text}");
    pass(&seed, "node-expired-not-replaced");
    assert_eq!(
        got,
        lines(
            &scrape(&seed),
            defs::NODE_TTL_DEATHS.name,
            &["nodepool=\"default\""]
        )
    );
}

/// A NodeClaim comes due with the clock alone, on a model that did not change since the
/// last pass; and one that changes to be past its expireAfter is counted on the next.
#[test]
fn a_claim_past_its_expiry_is_counted_when_the_clock_or_the_claim_gets_there() {
    let seed = SeedMetrics::default();
    let (mut c, now) = load("node-expired-not-replaced");
    let ttl = |seed: &SeedMetrics| lines(&scrape(seed), defs::NODE_TTL_DEATHS.name, &[]).len();
    let created = c
        .nodeclaims
        .values()
        .filter_map(|cl| cl.metadata.creation_timestamp)
        .min()
        .unwrap();
    let at = created + Duration::seconds(1);
    seed.update(&run(&c, at), &c, at);
    assert_eq!(
        ttl(&seed),
        0,
        "nothing is due a second after the first claim"
    );
    seed.update(&run(&c, now), &c, now);
    let due = ttl(&seed);
    assert!(due > 0, "{}", scrape(&seed));
    // A new claim, on its own node, already past a short expireAfter.
    let mut changed = (**c.nodeclaims.values().next().unwrap()).clone();
    changed.metadata.name = "kelp-young".into();
    changed.metadata.uid = "kelp-young".into();
    changed.metadata.creation_timestamp = Some(now - Duration::minutes(10));
    changed.spec.expire_after = Some("5m".into());
    changed.status.node_name = Some("kelp-young-node".into());
    c.apply_nodeclaim(changed);
    seed.update(&run(&c, now), &c, now);
    assert_eq!(ttl(&seed), due + 1, "{}", scrape(&seed));
}

#[test]
fn nominated_pods_that_do_not_bind_are_failures() {
    for (fixture, pod) in [
        ("pod-nominated-not-bound", "api-nr4rbx6lmx-9hwxm"),
        (
            "pod-nominated-not-bound-renominated",
            "indexer-fh42nttl7b-hcfbf",
        ),
    ] {
        let seed = SeedMetrics::default();
        pass(&seed, fixture);
        let text = scrape(&seed);
        let got = lines(
            &text,
            defs::NOMINATED_POD_FAILURES.name,
            &[&format!("pod=\"{pod}\"")],
        );
        assert!(!got.is_empty(), "{fixture}: {text}");
        assert!(got
            .iter()
            .all(|l| l.contains("reason=\"") && l.ends_with(" 1")));
    }
}

#[test]
fn nodes_created_for_nominated_pods_are_counted_from_karpenter_events() {
    // Any fixture where Karpenter nominated a pod to a NodeClaim it launched.
    let mut found = Vec::new();
    for e in std::fs::read_dir(fixture("")).unwrap() {
        let e = e.unwrap();
        if !e.path().join("fires.yaml").exists() {
            continue;
        }
        let name = e.file_name().to_string_lossy().to_string();
        let seed = SeedMetrics::default();
        pass(&seed, &name);
        let text = scrape(&seed);
        let got = lines(&text, defs::NODES_CREATED_FOR_NOMINATED_PODS.name, &[]);
        for l in &got {
            assert!(l.ends_with(" 1"), "{name}: {l}");
            for label in defs::NODES_CREATED_FOR_NOMINATED_PODS.labels {
                assert!(l.contains(&format!("{label}=\"")), "{label} missing: {l}");
            }
        }
        if !got.is_empty() {
            found.push(name);
        }
    }
    assert!(
        !found.is_empty(),
        "no fixture nominates a pod to a NodeClaim"
    );
}

#[test]
fn empty_nodes_not_reaped_feed_the_gauge_and_then_the_delay_histogram() {
    let seed = SeedMetrics::default();
    let (_, report, now) = pass(&seed, "empty-node-not-reaped");
    let node = "ip-10-0-34-249.us-west-2.compute.internal";
    assert!(report
        .report
        .findings
        .iter()
        .any(|f| f.code.as_str() == "empty-node-not-reaped" && f.object.name == node));
    let delay = defs::NODE_REAPING_DELAY.name;
    let count = format!("{delay}_count");
    assert!(lines(&scrape(&seed), &count, &[]).is_empty());
    // The gauge is exactly the nominated blockers now.
    let nominated: usize = report
        .report
        .findings
        .iter()
        .filter(|f| f.code.as_str() == "empty-node-not-reaped")
        .map(|f| {
            f.details.to_json()["blockers"]
                .as_array()
                .map(|b| b.iter().filter(|b| b["kind"] == "nominated").count())
                .unwrap_or(0)
        })
        .sum();
    let stuck = defs::NODES_NOT_REAPED_DUE_TO_NOMINATION.name;
    assert_eq!(lines(&scrape(&seed), stuck, &[]).len(), nominated);
    // The node is reaped 10 minutes later: its delay is observed once.
    let (mut reaped, _) = load("empty-node-not-reaped");
    reaped.delete_node(node);
    let later = now + Duration::minutes(10);
    seed.update(&run(&reaped, later), &reaped, later);
    seed.update(&run(&reaped, later), &reaped, later + Duration::minutes(1));
    let text = scrape(&seed);
    let got = lines(
        &text,
        &count,
        &[&format!("node=\"{node}\""), "nodepool=\"default\""],
    );
    assert_eq!(got.len(), 1, "{text}");
    assert!(got[0].ends_with(" 1"), "{}", got[0]);
    assert!(lines(&text, stuck, &[&format!("node=\"{node}\"")]).is_empty());
}

#[test]
fn the_nominated_blocker_gauge_follows_the_report() {
    // Every fixture: the gauge has one series per nominated blocker of an empty node.
    for e in std::fs::read_dir(fixture("")).unwrap() {
        let e = e.unwrap();
        if !e.path().join("fires.yaml").exists() {
            continue;
        }
        let name = e.file_name().to_string_lossy().to_string();
        let seed = SeedMetrics::default();
        let (_, report, _) = pass(&seed, &name);
        let want: usize = report
            .report
            .findings
            .iter()
            .filter(|f| f.code.as_str() == "empty-node-not-reaped")
            .map(|f| {
                f.details.to_json()["blockers"]
                    .as_array()
                    .map(|b| b.iter().filter(|b| b["kind"] == "nominated").count())
                    .unwrap_or(0)
            })
            .sum();
        let text = scrape(&seed);
        let got = lines(&text, defs::NODES_NOT_REAPED_DUE_TO_NOMINATION.name, &[]);
        assert_eq!(got.len(), want, "{name}: {text}");
    }
}

// ------------------------------------------------------------------ the SLIs

/// What the real Karpenter v1.14.1 left in a captured cluster, at its capture time.
fn real_capture() -> (Cluster, DateTime<Utc>) {
    let mut c = Cluster::default();
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/real/karpenter-v1.14.1/cluster.json");
    kelp::source::load_paths(&[path], &mut c).unwrap();
    let now = c.captured_at.expect("a kelp snapshot has its capture time");
    (c, now)
}

/// The value of the one line of `metric` with exactly these labels.
fn value(text: &str, metric: &str, labels: &str) -> Option<f64> {
    let prefix = format!("{metric}{{{labels}}} ");
    text.lines()
        .find_map(|l| l.strip_prefix(&prefix))
        .map(|v| v.parse().unwrap())
}

/// The sum of every line of `metric` (with any labels).
fn total(text: &str, metric: &str) -> f64 {
    lines(text, metric, &[])
        .iter()
        .map(|l| l.rsplit(' ').next().unwrap().parse::<f64>().unwrap())
        .sum()
}

#[test]
fn every_sli_metric_is_exposed_with_its_name_type_and_help() {
    // A month's TTL: the capture was made days after the fixture's time.
    let seed = SeedMetrics::new(std::time::Duration::from_secs(30 * 86400));
    // A launch failure, then the real capture (the picture of now is its).
    pass(&seed, "nodeclaim-launch-failed-ice-event");
    let (c, now) = real_capture();
    seed.update(&run(&c, now), &c, now);
    let text = scrape(&seed) + &tallied(&c);
    for d in defs::SLI {
        let family = d.name.strip_suffix("_total").unwrap_or(d.name);
        assert!(
            text.contains(&format!("# TYPE {family} {}", d.kind.as_str())),
            "{} not typed {} in\n{text}",
            d.name,
            d.kind.as_str()
        );
        assert!(text.contains(&format!("# HELP {family} ")), "{}", d.name);
        let sample = match d.kind {
            defs::MetricKind::Histogram => format!("{}_count", d.name),
            _ => d.name.to_string(),
        };
        let got = lines(&text, &sample, &[]);
        assert!(!got.is_empty(), "no {sample} sample in\n{text}");
        for l in got {
            for label in d.labels {
                assert!(l.contains(&format!("{label}=\"")), "{label} missing: {l}");
            }
        }
    }
}

#[test]
fn the_real_capture_counts_each_pod_and_nodeclaim_once() {
    let seed = SeedMetrics::default();
    let (c, now) = real_capture();
    let report = run(&c, now);
    seed.update(&report, &c, now);
    let first = scrape(&seed);
    // Every NodeClaim initialized within the hour before the capture: one observation each.
    let count = |t: &str| total(t, &format!("{}_count", defs::NODE_PROVISIONING.name));
    assert_eq!(count(&first), c.nodeclaims.len() as f64, "{first}");
    let churn = defs::NODE_CHURN.name;
    assert_eq!(
        value(
            &first,
            churn,
            "nodepool=\"cap-drift\",event=\"launched\",reason=\"\""
        ),
        Some(c.claims_in_pool("cap-drift").count() as f64)
    );
    // Karpenter drifted two cap-drift nodes and evicted their two pods.
    assert_eq!(
        value(
            &first,
            churn,
            "nodepool=\"cap-drift\",event=\"disrupted\",reason=\"drifted\""
        ),
        Some(2.0),
        "{first}"
    );
    // ... and replaced cap-shrink's node (consolidation), evicting its one pod.
    assert_eq!(total(&first, defs::EVICTIONS.name), 3.0, "{first}");
    let pods = total(
        &first,
        &format!("{}_count", defs::POD_PROVISIONING_LATENCY.name),
    );
    assert!(pods >= 10.0, "{first}");
    // More passes and a relist (a fresh model) later: nothing counts twice.
    seed.update(&report, &c, now + Duration::seconds(15));
    let (again, _) = real_capture();
    seed.update(&run(&again, now), &again, now + Duration::seconds(30));
    let text = scrape(&seed);
    let stable = |t: &str| {
        let mut v: Vec<String> = t
            .lines()
            .filter(|l| {
                ["_total{", "_count{", "_sum{", "_bucket{"]
                    .iter()
                    .any(|s| l.contains(s))
            })
            .map(str::to_string)
            .collect();
        v.sort();
        v
    };
    assert_eq!(stable(&first), stable(&text));
}

#[test]
fn unschedulable_pods_are_held_by_the_pool_meant_for_them() {
    let seed = SeedMetrics::default();
    let (c, now) = real_capture();
    let report = run(&c, now);
    seed.update(&report, &c, now);
    let text = scrape(&seed);
    let g = defs::UNSCHEDULABLE_PODS.name;
    // Every pending pod is counted once.
    let pending = report
        .report
        .findings
        .iter()
        .filter(|f| f.code.as_str() == "pod-unschedulable")
        .count();
    assert_eq!(total(&text, g), pending as f64, "{text}");
    for (labels, want) in [
        ("category=\"limits\",nodepool=\"cap-limits\"", 1.0),
        ("category=\"limits\",nodepool=\"cap-nodes-limit\"", 1.0),
        ("category=\"topology\",nodepool=\"cap-topology\"", 3.0),
        ("category=\"instance-types\",nodepool=\"cap-big\"", 1.0),
        ("category=\"validation\",nodepool=\"\"", 2.0),
        // Its pool has a second taint it does not tolerate; nothing else is in the way.
        ("category=\"taints\",nodepool=\"cap-taint\"", 1.0),
        // A label no pool defines, a typo, a wrong arch or zone.
        ("category=\"requirements\",nodepool=\"\"", 5.0),
    ] {
        assert_eq!(value(&text, g, labels), Some(want), "{labels}: {text}");
    }
    for (fixture, labels) in [
        (
            "pod-unschedulable-limits",
            "category=\"limits\",nodepool=\"batch\"",
        ),
        (
            "pod-unschedulable-taints",
            "category=\"instance-types\",nodepool=\"default\"",
        ),
    ] {
        let seed = SeedMetrics::default();
        pass(&seed, fixture);
        assert_eq!(value(&scrape(&seed), g, labels), Some(1.0), "{fixture}");
    }
}

#[test]
fn the_gauges_follow_the_findings_in_every_fixture() {
    for e in std::fs::read_dir(fixture("")).unwrap() {
        let e = e.unwrap();
        if !e.path().join("fires.yaml").exists() {
            continue;
        }
        let name = e.file_name().to_string_lossy().to_string();
        let seed = SeedMetrics::default();
        let (c, report, _) = pass(&seed, &name);
        let text = scrape(&seed);
        let n = |code: &str| {
            report
                .report
                .findings
                .iter()
                .filter(|f| f.code.as_str() == code)
                .count() as f64
        };
        assert_eq!(
            total(&text, defs::UNSCHEDULABLE_PODS.name),
            n("pod-unschedulable"),
            "{name}"
        );
        assert_eq!(
            total(&text, defs::DRIFTED_NODES.name),
            n("nodeclaim-drifted"),
            "{name}"
        );
        if n("disruption-blocked") > 0.0 {
            assert!(
                total(&text, defs::DISRUPTION_BLOCKED_NODES.name) >= n("disruption-blocked"),
                "{name}: {text}"
            );
        }
        // One node count per NodePool (from the model's tally), and a usage ratio per limit.
        let tallied = tallied(&c);
        assert_eq!(
            lines(&tallied, defs::NODEPOOL_NODES.name, &[]).len(),
            c.nodepools.len(),
            "{name}"
        );
        if n("nodepool-limits-exhausted") > 0.0 {
            let full = lines(&text, defs::NODEPOOL_USAGE_RATIO.name, &[])
                .iter()
                .any(|l| l.rsplit(' ').next().unwrap().parse::<f64>().unwrap() >= 0.9);
            assert!(full, "{name}: {text}");
        }
    }
}

#[test]
fn launch_failures_are_counted_once_per_nodeclaim() {
    for (fixture, reason) in [
        ("nodeclaim-launch-failed", "LaunchFailed"),
        (
            "nodeclaim-launch-failed-ice-event",
            "InsufficientCapacityError",
        ),
    ] {
        let seed = SeedMetrics::default();
        let (_, report, now) = pass(&seed, fixture);
        let (c, _) = load(fixture);
        seed.update(&report, &c, now + Duration::minutes(1));
        pass(&seed, fixture);
        let text = scrape(&seed);
        let got = lines(
            &text,
            defs::LAUNCH_FAILURES.name,
            &[&format!("reason=\"{reason}\"")],
        );
        assert_eq!(got.len(), 1, "{fixture}: {text}");
        assert!(got[0].ends_with(" 1"), "{fixture}: {}", got[0]);
    }
}

// ------------------------------------------------------------------ generated config

fn known_metric(name: &str) -> bool {
    defs::ALL.iter().any(|d| {
        name == d.name
            || (d.kind == defs::MetricKind::Histogram
                && ["_bucket", "_sum", "_count"]
                    .iter()
                    .any(|s| name == format!("{}{s}", d.name)))
    })
}

fn metric_names(expr: &str) -> Vec<String> {
    regex::Regex::new(r"karpenter_helper_[a-z_]+")
        .unwrap()
        .find_iter(expr)
        .map(|m| m.as_str().to_string())
        .collect()
}

#[test]
fn alerts_are_a_prometheus_rule_over_known_metrics() {
    let rule = generate::prometheus_rule(&Default::default());
    assert_eq!(rule["apiVersion"], "monitoring.coreos.com/v1");
    assert_eq!(rule["kind"], "PrometheusRule");
    let yaml: serde_json::Value =
        serde_norway::from_str(&generate::alerts_yaml(&Default::default())).unwrap();
    assert_eq!(yaml, rule);
    let rules = rule["spec"]["groups"][0]["rules"].as_array().unwrap();
    let names: Vec<&str> = rules.iter().map(|r| r["alert"].as_str().unwrap()).collect();
    for want in [
        "KarpenterHelperDaemonSetNodePoolMismatch",
        "KarpenterHelperNodeTTLDeathRateHigh",
        "KarpenterHelperNominationFailureSpike",
        "KarpenterHelperNodesStuckOnNominations",
        "KarpenterHelperNodeReapingDelayHigh",
        "KarpenterHelperPodUnschedulable",
        "KarpenterHelperNodePoolLimitsExhausted",
        "KarpenterHelperNodeClaimStuck",
        "KarpenterHelperNoNodePoolReady",
        "KarpenterHelperNodePoolEmpty",
        "KarpenterHelperLaunchFailureSpike",
        "KarpenterHelperPodProvisioningSLOBurn",
    ] {
        assert!(names.contains(&want), "{want} missing from {names:?}");
    }
    for r in rules {
        let expr = r["expr"].as_str().unwrap();
        let used = metric_names(expr);
        assert!(!used.is_empty(), "{expr}");
        assert!(used.iter().all(|m| known_metric(m)), "{expr}");
    }
    let unsched = rules
        .iter()
        .find(|r| r["alert"] == "KarpenterHelperPodUnschedulable")
        .unwrap();
    assert_eq!(unsched["for"], "10m");
    assert_eq!(unsched["labels"]["severity"], "critical");
    // Every seed metric has an alert.
    for d in defs::SEED.iter().filter(|d| {
        *d != &defs::NODES_CREATED_FOR_NOMINATED_PODS // informational: no alert
    }) {
        assert!(
            rules
                .iter()
                .any(|r| r["expr"].as_str().unwrap().contains(d.name)),
            "no alert on {}",
            d.name
        );
    }
}

#[test]
fn promtool_accepts_the_rules() {
    let Ok(out) = std::process::Command::new("promtool")
        .arg("--version")
        .output()
    else {
        let msg = "promtool not found: install Debian's `prometheus` package (apt-get install -y prometheus)";
        if std::env::var_os("CI").is_some() {
            panic!("{msg}");
        }
        eprintln!("skipping: {msg}");
        return;
    };
    assert!(out.status.success());
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("rules.yaml");
    // promtool checks a rule file: the PrometheusRule's spec.
    let spec = &generate::prometheus_rule(&Default::default())["spec"];
    std::fs::write(&file, serde_norway::to_string(spec).unwrap()).unwrap();
    let out = std::process::Command::new("promtool")
        .args(["check", "rules"])
        .arg(&file)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "promtool check rules failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// promtool, or `None` (with a note) where it is missing outside CI.
fn promtool() -> Option<()> {
    if std::process::Command::new("promtool")
        .arg("--version")
        .output()
        .is_ok()
    {
        return Some(());
    }
    let msg =
        "promtool not found: install Debian's `prometheus` package (apt-get install -y prometheus)";
    if std::env::var_os("CI").is_some() {
        panic!("{msg}");
    }
    eprintln!("skipping: {msg}");
    None
}

/// `promtool test rules` on the generated rules (annotations left out: they are templates)
/// with series a kelp would export: the alerts fire when they should and only then.
#[test]
fn promtool_tests_the_alert_logic() {
    if promtool().is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut spec = generate::prometheus_rule(&Default::default())["spec"].clone();
    for r in spec["groups"][0]["rules"].as_array_mut().unwrap() {
        r.as_object_mut().unwrap().remove("annotations");
    }
    std::fs::write(
        dir.path().join("rules.yaml"),
        serde_norway::to_string(&spec).unwrap(),
    )
    .unwrap();
    let lat = defs::POD_PROVISIONING_LATENCY.name;
    let (nodes, unsched, findings) = (
        defs::NODEPOOL_NODES.name,
        defs::UNSCHEDULABLE_PODS.name,
        defs::FINDINGS.name,
    );
    let slo = |fast_per_min: u32, all_per_min: u32, at: &str, fires: bool| {
        let exp = if fires {
            "[{exp_labels: {severity: critical}}]"
        } else {
            "[]"
        };
        format!(
            r#"
  - interval: 1m
    input_series:
      - series: '{lat}_bucket{{le="300.0",nodepool="a"}}'
        values: '0+{fast_per_min}x500'
      - series: '{lat}_count{{nodepool="a"}}'
        values: '0+{all_per_min}x500'
    alert_rule_test:
      - eval_time: {at}
        alertname: KarpenterHelperPodProvisioningSLOBurn
        exp_alerts: {exp}
"#
        )
    };
    let tests = [
        // Half the pods slow: the fast burn (1h and 5m) fires.
        slo(1, 2, "70m", true),
        // All fast: nothing.
        slo(10, 10, "400m", false),
        // 7% slow: under 14.4x but over 6x for 6h and 30m: the slow burn fires.
        slo(93, 100, "400m", true),
        // 5% slow: within budget burn for both.
        slo(95, 100, "400m", false),
        format!(
            r#"
  - interval: 1m
    input_series:
      - series: '{nodes}{{nodepool="waited-on"}}'
        values: '0x40'
      - series: '{unsched}{{category="limits",nodepool="waited-on"}}'
        values: '1x40'
      - series: '{nodes}{{nodepool="idle"}}'
        values: '0x40'
      - series: '{unsched}{{category="requirements",nodepool=""}}'
        values: '3x40'
      - series: '{nodes}{{nodepool="busy"}}'
        values: '2x40'
      - series: '{unsched}{{category="compatible",nodepool="busy"}}'
        values: '1x40'
      - series: '{nodes}{{nodepool="tainted"}}'
        values: '0x40'
      - series: '{unsched}{{category="taints",nodepool="tainted"}}'
        values: '2x40'
      - series: '{nodes}{{nodepool="broken"}}'
        values: '0x40'
      - series: '{findings}{{code="nodepool-not-ready",severity="warning",nodepool="broken"}}'
        values: '1x40'
    alert_rule_test:
      - eval_time: 10m
        alertname: KarpenterHelperNodePoolEmpty
        exp_alerts: []
      - eval_time: 20m
        alertname: KarpenterHelperNodePoolEmpty
        exp_alerts:
          - exp_labels: {{severity: warning, nodepool: waited-on}}
          - exp_labels: {{severity: warning, nodepool: broken}}
"#
        ),
    ];
    let test_file = format!(
        "rule_files: [rules.yaml]\nevaluation_interval: 1m\ntests:{}",
        tests.concat()
    );
    std::fs::write(dir.path().join("tests.yaml"), &test_file).unwrap();
    let out = std::process::Command::new("promtool")
        .args(["test", "rules", "tests.yaml"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "promtool test rules failed:\n{}{}\n{test_file}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn the_dashboard_shows_findings_per_nodepool_and_every_seed_metric() {
    let d = generate::grafana(&Default::default());
    let json: serde_json::Value =
        serde_json::from_str(&generate::grafana_json(&Default::default())).unwrap();
    assert_eq!(json, d);
    let panels = d["panels"].as_array().unwrap();
    let exprs: Vec<&str> = panels
        .iter()
        .flat_map(|p| p["targets"].as_array().into_iter().flatten())
        .map(|t| t["expr"].as_str().unwrap())
        .collect();
    for e in &exprs {
        assert!(metric_names(e).iter().all(|m| known_metric(m)), "{e}");
    }
    assert!(exprs
        .iter()
        .any(|e| e.contains("sum by (cluster, severity) (karpenter_helper_findings")));
    assert!(panels
        .iter()
        .any(|p| p["type"] == "row" && p["repeat"] == "nodepool"));
    for m in defs::SEED.iter().chain(defs::SLI) {
        assert!(
            exprs.iter().any(|e| e.contains(m.name)),
            "{} has no panel",
            m.name
        );
    }
    assert!(panels
        .iter()
        .any(|p| p["type"] == "row" && p["title"] == "SLIs"));
    let ids: std::collections::BTreeSet<u64> =
        panels.iter().map(|p| p["id"].as_u64().unwrap()).collect();
    assert_eq!(ids.len(), panels.len(), "panel ids are unique");
}

#[test]
fn docs_list_every_metric_as_the_code_defines_it() {
    let doc =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/metrics.md"))
            .unwrap();
    assert!(
        doc.contains(&defs::markdown_table()),
        "docs/metrics.md's table differs from the code; paste:\n{}",
        defs::markdown_table()
    );
}

#[test]
fn kelp_generate_prints_both() {
    let out = assert_cmd::Command::cargo_bin("kelp")
        .unwrap()
        .args(["generate", "alerts"])
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stdout).starts_with("apiVersion: monitoring.coreos.com/v1")
    );
    let out = assert_cmd::Command::cargo_bin("kelp")
        .unwrap()
        .args(["generate", "grafana"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["uid"], "kelp-karpenter");
}

#[test]
fn a_nominated_blocker_sets_the_gauge_until_it_resolves() {
    use kelp::findings::{Code, Finding, ObjectRef, Severity};
    let (c, now) = load("empty-node-not-reaped");
    use kelp::analysis::disruption::{Blocker, NotReapedDetails};
    use kelp::karpenter::events::BlockerKind;
    use kelp::model::ObjectKind;
    let mut report = run(&c, now);
    std::sync::Arc::make_mut(&mut report.report)
        .findings
        .push(std::sync::Arc::new(
            Finding::new(
                Code::EmptyNodeNotReaped,
                Severity::Warning,
                ObjectRef::cluster(ObjectKind::Node, "n1"),
                "m",
            )
            .pool(Some("default"))
            .since(Some(now - Duration::minutes(30)))
            .details(NotReapedDetails {
                blockers: vec![Blocker {
                    kind: BlockerKind::Nominated,
                    object: Some(ObjectRef {
                        kind: ObjectKind::Pod,
                        namespace: Some("web".into()),
                        name: "api-0".into(),
                    }),
                    message: "m".into(),
                }],
                consolidate_after: None,
                empty_for: "30m".into(),
            }),
        ));
    let seed = SeedMetrics::default();
    seed.update(&report, &c, now);
    let stuck = defs::NODES_NOT_REAPED_DUE_TO_NOMINATION.name;
    let text = scrape(&seed);
    let got = lines(&text, stuck, &["node=\"n1\""]);
    assert_eq!(
        got,
        vec![format!("{stuck}{{node=\"n1\",nodepool=\"default\",nominated_pod=\"api-0\",nominated_namespace=\"web\"}} 1")],
        "{text}"
    );
    // Resolved: the gauge series goes, the delay is observed with the blocker's kind.
    std::sync::Arc::make_mut(&mut report.report).findings.pop();
    seed.update(&report, &c, now + Duration::minutes(5));
    let text = scrape(&seed);
    assert!(lines(&text, stuck, &["node=\"n1\""]).is_empty(), "{text}");
    let sum = lines(
        &text,
        &format!("{}_sum", defs::NODE_REAPING_DELAY.name),
        &["node=\"n1\"", "delay_reason=\"nominated\""],
    );
    assert_eq!(sum.len(), 1, "{text}");
    assert!(sum[0].ends_with(" 2100.0"), "{}", sum[0]);
}

/// A pool's rollout on the real capture: cap-drift has one node on the current hash and
/// five drifted ones, each held by a blocker of its own (so none waits, and the ETA is 0).
#[test]
fn the_rollout_gauges_count_a_pools_nodes_by_state() {
    let seed = SeedMetrics::default();
    let (c, now) = real_capture();
    seed.update(&run(&c, now), &c, now);
    let text = scrape(&seed);
    let value = |state: &str| -> f64 {
        let l = lines(
            &text,
            kelp::metrics::defs::NODEPOOL_ROLLOUT_NODES.name,
            &["nodepool=\"cap-drift\"", &format!("state=\"{state}\"")],
        );
        assert_eq!(l.len(), 1, "{state}: {l:?}");
        l[0].rsplit(' ').next().unwrap().parse().unwrap()
    };
    assert_eq!(value("up-to-date"), 1.0);
    assert_eq!(value("blocked"), 5.0);
    assert_eq!(value("waiting"), 0.0);
    assert_eq!(value("replacing"), 0.0);
    let eta = lines(
        &text,
        kelp::metrics::defs::NODEPOOL_ROLLOUT_ETA.name,
        &["nodepool=\"cap-drift\""],
    );
    assert_eq!(eta.len(), 1);
    assert!(
        eta[0].ends_with(" 0") || eta[0].ends_with(" 0.0"),
        "{eta:?}"
    );
}
