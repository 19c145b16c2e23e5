//! kelp's AWS answers against the AWS provider's own code (all written by
//! `testenv/aws-truth`). The catalogue: every type of
//! `tests/fixtures/aws/provider-catalog.jsonl.gz` (written by `testenv/aws-truth`, which
//! runs karpenter-provider-aws's resolver over EC2's DescribeInstanceTypes data), at each
//! of its kubelet settings, judged type by type as kelp builds it from Karpenter's
//! `karpenter_cloudprovider_instance_type_*` metrics: with the facts kelp carries (must
//! be exact) and without them (the provider's figure must lie in kelp's range). The
//! EC2NodeClass hash: whether a change drifts, on every pair of
//! `nodeclass-hash-cases.json`. The conditions, reasons and drift reasons kelp names:
//! each one the provider's source has.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};

use kelp::analysis::catalog;
use kelp::karpenter::aws::{self, Facts, Settings};
use kelp::model::{Cluster, ControllerMetrics, InstanceType, Offering};
use serde::Deserialize;

const FIXTURE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/aws/provider-catalog.jsonl.gz"
);

#[derive(Deserialize)]
struct Header {
    provider: String,
    settings: BTreeMap<String, Option<serde_json::Value>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Resolved {
    setting: String,
    name: String,
    capacity: BTreeMap<String, i64>,
    allocatable: BTreeMap<String, i64>,
    #[serde(default)]
    labels: BTreeMap<String, Vec<String>>,
    #[serde(default)]
    absent: Vec<String>,
}

fn provider() -> (Header, Vec<Resolved>) {
    let file = std::fs::File::open(FIXTURE).expect("run testenv/aws-truth");
    let mut lines = BufReader::new(flate2::read::GzDecoder::new(file)).lines();
    let header: Header = serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap();
    let types = lines
        .map(|l| serde_json::from_str(&l.unwrap()).unwrap())
        .collect();
    (header, types)
}

fn settings(kubelet: &Option<serde_json::Value>) -> Settings {
    Settings {
        kubelet: kubelet
            .as_ref()
            .map(aws::Kubelet::from_json)
            .unwrap_or_default(),
        ..Settings::default()
    }
}

/// The metrics the provider exports for these types: vCPUs, EC2 memory, one offering.
fn metrics(types: &[&Resolved]) -> ControllerMetrics {
    let mut m = ControllerMetrics::default();
    for t in types {
        let f = aws::facts::get(&t.name).expect("the table has every type the provider lists");
        m.instance_cpu.insert(t.name.clone(), f64::from(f.vcpus));
        m.instance_memory
            .insert(t.name.clone(), f.memory_mib as f64 * 1024.0 * 1024.0);
        m.offerings.push(Offering {
            instance_type: t.name.clone(),
            zone: "us-west-2a".into(),
            capacity_type: "on-demand".into(),
            price: Some(0.1),
            available: Some(true),
        });
    }
    m
}

/// A quantity in milli-units as kelp holds it.
fn milli(v: f64) -> i64 {
    (v * 1000.0).round() as i64
}

#[derive(Default, Debug)]
struct Tally {
    exact: usize,
    in_range: usize,
    /// Figures kelp gives as a range (counted per type and setting).
    ranges: usize,
    wrong: Vec<String>,
}

fn judge_exact(t: &Resolved, it: &InstanceType, tally: &mut Tally) {
    let mut wrong = Vec::new();
    if !it.complete || it.allocatable_most.is_some() || !it.uncertain.is_empty() {
        wrong.push("not exact".to_string());
    }
    for (what, want, got) in [
        ("capacity", &t.capacity, &it.capacity),
        ("allocatable", &t.allocatable, &it.allocatable),
    ] {
        let got: BTreeMap<String, i64> = got
            .0
            .iter()
            .map(|(k, v)| (k.clone(), milli(*v)))
            .filter(|(_, v)| *v != 0)
            .collect();
        if &got != want {
            wrong.push(format!("{what}: provider {want:?}, kelp {got:?}"));
        }
    }
    if t.setting == "default" {
        let mut labels = it.labels.clone();
        labels.retain(|k, _| !t.absent.contains(k));
        if labels != t.labels {
            wrong.push(format!(
                "labels: provider {:?}, kelp {:?}",
                t.labels, it.labels
            ));
        }
        for k in &t.absent {
            if it.labels.contains_key(k) {
                wrong.push(format!("label {k}: the provider has none, kelp has one"));
            }
        }
    }
    if wrong.is_empty() {
        tally.exact += 1;
    } else {
        tally
            .wrong
            .push(format!("{} ({}): {}", t.name, t.setting, wrong.join("; ")));
    }
}

fn judge_range(t: &Resolved, it: &InstanceType, tally: &mut Tally) {
    let mut wrong = Vec::new();
    for (k, &want) in &t.allocatable {
        let (low, high) = (it.allocatable.get(k), it.allocatable_most(k));
        if !it.allocatable.0.contains_key(k) {
            // An extended resource kelp does not know of: it says the type is incomplete.
            if it.complete {
                wrong.push(format!("{k}: kelp says complete without it"));
            }
            continue;
        }
        if milli(low) != milli(high) {
            tally.ranges += 1;
        }
        if want < milli(low) || want > milli(high) {
            wrong.push(format!(
                "allocatable {k}: provider {want}, kelp {low}..{high}"
            ));
        }
    }
    if t.setting == "default" {
        for (k, values) in &it.labels {
            let Some(want) = t.labels.get(k) else {
                wrong.push(format!("label {k}: kelp has {values:?}, the provider none"));
                continue;
            };
            let fits = if it.uncertain.contains(k) {
                want.iter().all(|w| values.contains(w))
            } else {
                values == want
            };
            if !fits {
                wrong.push(format!("label {k}: provider {want:?}, kelp {values:?}"));
            }
        }
    }
    if wrong.is_empty() {
        tally.in_range += 1;
    } else {
        tally
            .wrong
            .push(format!("{} ({}): {}", t.name, t.setting, wrong.join("; ")));
    }
}

fn no_facts(_: &str) -> Option<&'static Facts> {
    None
}

#[test]
fn every_type_the_provider_lists_is_exact_with_the_facts_and_in_range_without() {
    let (header, types) = provider();
    assert!(header.provider.contains("karpenter-provider-aws"));
    let c = Cluster::default();
    let mut exact = Tally::default();
    let mut estimated = Tally::default();
    let mut counts = Vec::new();
    for (name, kubelet) in &header.settings {
        let of: Vec<&Resolved> = types.iter().filter(|t| &t.setting == name).collect();
        assert!(of.len() > 1000, "{name}: {} types", of.len());
        let m = metrics(&of);
        let s = settings(kubelet);
        let with = catalog::with_settings(&c, &m, &s);
        let without = catalog::with_facts(&c, &m, &s, no_facts);
        for t in &of {
            judge_exact(t, with.get(&t.name).unwrap(), &mut exact);
            judge_range(t, without.get(&t.name).unwrap(), &mut estimated);
        }
        counts.push(format!("{name}: {} types", of.len()));
    }
    println!(
        "{}: with the facts {} exact, {} wrong; without them {} in range ({} figures a range), {} wrong ({})",
        header.provider,
        exact.exact,
        exact.wrong.len(),
        estimated.in_range,
        estimated.ranges,
        estimated.wrong.len(),
        counts.join(", ")
    );
    let first = |w: &[String]| w.iter().take(5).cloned().collect::<Vec<_>>().join("\n");
    assert!(exact.wrong.is_empty(), "{}", first(&exact.wrong));
    assert!(estimated.wrong.is_empty(), "{}", first(&estimated.wrong));
}

#[test]
fn the_facts_table_reads_whole_and_names_its_sources() {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/data/aws-instance-types.tsv"
    ))
    .unwrap();
    let rows: Vec<_> = aws::facts::rows(&text).collect();
    let bad: Vec<_> = rows.iter().filter_map(|r| r.as_ref().err()).collect();
    assert!(bad.is_empty(), "{bad:?}");
    assert_eq!(rows.len(), aws::facts::count());
    let sources = aws::facts::sources();
    assert!(sources.iter().any(|s| s.contains("karpenter-provider-aws")));
    assert!(sources.iter().any(|s| s.contains("moto")));
}

#[derive(Deserialize)]
struct HashCase {
    name: String,
    a: serde_json::Value,
    b: serde_json::Value,
}

#[derive(Deserialize)]
struct Hashed {
    name: String,
    drifted: bool,
    version: String,
}

#[test]
fn an_ec2nodeclass_change_drifts_exactly_when_the_providers_hash_changes() {
    let read = |f: &str| {
        std::fs::read_to_string(format!(
            "{}/tests/fixtures/aws/{f}",
            env!("CARGO_MANIFEST_DIR")
        ))
        .unwrap()
    };
    let cases: Vec<HashCase> = serde_json::from_str(&read("nodeclass-hash-cases.json")).unwrap();
    let hashed: Vec<Hashed> = serde_json::from_str(&read("nodeclass-hashes.json")).unwrap();
    assert_eq!(cases.len(), hashed.len(), "run testenv/aws-truth");
    let (mut drifts, mut wrong) = (0, Vec::new());
    for (c, h) in cases.iter().zip(&hashed) {
        assert_eq!(c.name, h.name);
        assert_eq!(h.version, "v6");
        let kelp = aws::nodeclass::static_drift(&c.a, &c.b);
        drifts += usize::from(h.drifted);
        if kelp != h.drifted {
            wrong.push(format!("{}: provider {}, kelp {kelp}", c.name, h.drifted));
        }
    }
    assert!(drifts > 10 && drifts < cases.len() - 10, "{drifts}");
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn every_condition_and_reason_kelp_names_is_the_providers() {
    use aws::nodeclass::{advice, drift_meaning, CONDITIONS, DRIFT_REASONS, REASONS};
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/aws/provider-reasons.tsv"
    ))
    .unwrap();
    let rows: Vec<Vec<&str>> = text
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| l.split('\t').collect())
        .collect();
    let of = |kind: &str| -> Vec<&Vec<&str>> { rows.iter().filter(|r| r[0] == kind).collect() };
    let conditions: Vec<&str> = of("condition").iter().map(|r| r[1]).collect();
    let mut ours = CONDITIONS.to_vec();
    ours.sort_unstable();
    assert_eq!(ours, conditions);
    // Each reason the provider sets has kelp's advice ...
    for r in of("reason") {
        assert!(
            advice(r[1], r[2]).is_some(),
            "no advice for {} {}",
            r[1],
            r[2]
        );
    }
    // ... and each kelp gives is one the provider sets (or the generic ones of the
    // condition library it uses).
    for (condition, reason, _) in REASONS {
        let generic = matches!(
            *reason,
            "AwaitingReconciliation" | "UnhealthyDependents" | "ReconcilingDependents"
        );
        assert!(
            generic
                || of("reason")
                    .iter()
                    .any(|r| r[1] == *condition && r[2] == *reason),
            "{condition} {reason} is not the provider's"
        );
    }
    let drift: Vec<&str> = of("drift").iter().map(|r| r[1]).collect();
    for r in &drift {
        assert!(drift_meaning(r).is_some(), "no meaning for {r}");
    }
    let core = [
        "NodePoolDrifted",
        "RequirementsDrifted",
        "InstanceTypeNotFound",
    ];
    for (r, _) in DRIFT_REASONS {
        assert!(
            core.contains(r) || drift.contains(r),
            "{r} is not the provider's"
        );
    }
}

#[test]
fn a_pool_on_an_ec2nodeclass_that_is_not_ready_says_which_condition_and_what_to_do() {
    let path = std::path::Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/aws/ec2nodeclass-not-ready.yaml"
    ));
    let mut c = Cluster::default();
    kelp::source::load_paths(&[path.to_path_buf()], &mut c).unwrap();
    let now = chrono::DateTime::parse_from_rfc3339("2026-12-07T11:00:00Z")
        .unwrap()
        .into();
    let report = kelp::analysis::analyze(&c, now);
    let mut seen = 0;
    for class in c.nodeclasses.values() {
        let name = &class.metadata.name;
        let f = report
            .findings
            .iter()
            .find(|f| f.code == kelp::findings::Code::NodepoolNotReady && f.object.name == *name)
            .unwrap_or_else(|| panic!("{name}: no nodepool-not-ready"));
        // The dependent that failed, not the summary; DependenciesNotReady only when
        // nothing before it failed.
        let failing = aws::nodeclass::CONDITIONS
            .iter()
            .filter_map(|t| kelp::model::condition(&class.status.conditions, t))
            .find(|c| c.status != "True")
            .unwrap();
        let reason = failing.reason.as_deref().unwrap();
        let advice = aws::nodeclass::advice(&failing.type_, reason).unwrap();
        let want = format!(
            "EC2NodeClass {name}: {}={} ({reason}",
            failing.type_, failing.status
        );
        assert!(f.message.contains(&want), "{name}: {}", f.message);
        assert!(f.message.contains(advice), "{name}: {}", f.message);
        assert_ne!(reason, "DependenciesNotReady", "{name}");
        seen += 1;
    }
    assert_eq!(seen, 15);
}
