//! The history store at a month of a large cluster: how big it gets, and how fast
//! `kelp history` answers on it.
//!
//! The load (the figure a 1,000-node cluster with steady churn gives, stated here so it can
//! be argued with): 10 pod changes a second, a third of them new pods, 1% of those waiting on
//! Karpenter (a `pod` row each); 200 node launches and 200 disruptions a day (7 claim steps
//! each, and per disruption its events: DisruptionTerminating on the node and the claim,
//! FailedDraining, and an Evicted per pod, 15 pods a node); every node refused consolidation
//! in 3 different words a day, on its node and its claim (Unconsolidatable and
//! DisruptionBlocked, each one row from first to last sighting, as the recorder keys them);
//! 300 findings appearing and resolving a day. Pods that never waited and were never
//! disrupted have no row.
//!
//!   cargo bench --bench history_store            # 30 days, 1,000 nodes
//!   cargo bench --bench history_store -- 7 200   # 7 days, 200 nodes
//!
//! It prints the rows a day, the file's size, and the median time of `store::read` for one
//! pod and one node (and, when `target/release/kelp` exists, of the whole `kelp history pod`
//! command). Figures, not assertions: the README keeps the last run's.

use std::time::{Duration, Instant};

use chrono::{TimeZone, Utc};
use kelp::history::store::{self, Ask, Store};
use kelp::history::{Kind, Record, Subject};

fn subject(kind: &str, ns: Option<&str>, name: &str) -> Subject {
    Subject {
        kind: kind.into(),
        namespace: ns.map(str::to_string),
        name: name.into(),
    }
}

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let days: i64 = args.first().and_then(|a| a.parse().ok()).unwrap_or(30);
    let nodes: usize = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(1000);
    let dir = tempfile::tempdir().unwrap();
    let (mut s, _) = Store::open(dir.path(), true).unwrap();
    let start = Utc.with_ymd_and_hms(2026, 11, 1, 0, 0, 0).unwrap();
    let mut rows_total = 0usize;
    let mut batch: Vec<Record> = Vec::with_capacity(4096);
    let flush = |batch: &mut Vec<Record>, s: &mut Store, total: &mut usize| {
        *total += batch.len();
        s.write(batch).unwrap();
        batch.clear();
    };
    let began = Instant::now();
    let mut claim_seq = 0usize;
    for day in 0..days {
        let t0 = start + chrono::Duration::days(day);
        let at = |sec: i64| t0 + chrono::Duration::seconds(sec);
        // Launches and disruptions: 200 of each, spread over the day.
        for i in 0..200 {
            claim_seq += 1;
            let claim = format!("pool-{}-{claim_seq:x}", claim_seq % 8);
            let node = format!("ip-10-{}-{}-{}.ec2.internal", claim_seq % 250, i % 250, day);
            let base = i as i64 * 400;
            for (j, step) in [
                "created",
                "launched",
                "registered",
                "initialized",
                "disrupting",
                "deleting",
                "deleted",
            ]
            .iter()
            .enumerate()
            {
                let mut r = Record::new(
                    format!("nodeclaim/{claim}/{step}"),
                    at(base + j as i64 * 60),
                    Kind::NodeClaim,
                    step,
                    subject("NodeClaim", None, &claim),
                );
                r.node = Some(node.clone());
                r.nodeclaim = Some(claim.clone());
                r.nodepool = Some(format!("pool-{}", claim_seq % 8));
                if *step == "launched" {
                    r = r
                        .detail("instanceType", "m6i.2xlarge")
                        .detail("zone", "us-west-2a")
                        .detail("capacityType", "spot")
                        .detail("pricePerHour", "0.1520");
                }
                batch.push(r);
            }
            let mut events = vec![
                (
                    "Node",
                    None,
                    node.clone(),
                    "DisruptionTerminating",
                    "Disrupting Node: Underutilized".to_string(),
                ),
                (
                    "NodeClaim",
                    None,
                    claim.clone(),
                    "DisruptionTerminating",
                    "Disrupting NodeClaim: Underutilized".to_string(),
                ),
                (
                    "Node",
                    None,
                    node.clone(),
                    "FailedDraining",
                    "Failed to drain node, 3 pods are waiting to be evicted".to_string(),
                ),
            ];
            for p in 0..15 {
                events.push((
                    "Pod",
                    Some("shop"),
                    format!("web-{claim_seq:x}-{p}"),
                    "Evicted",
                    "Evicted pod: Underutilized".into(),
                ));
            }
            for (k, (kind, ns, name, reason, message)) in events.into_iter().enumerate() {
                let mut r = Record::new(
                    format!("event/{kind}/{}/{name}/{reason}/0", ns.unwrap_or("")),
                    at(base + 240 + k as i64),
                    Kind::Event,
                    reason,
                    subject(kind, ns, &name),
                );
                r.node = Some(node.clone());
                r.nodeclaim = Some(claim.clone());
                r.message = message;
                batch.push(r);
            }
        }
        // Refusals: every node, three different words a day, on the node and its claim.
        for n in 0..nodes {
            for w in 0..3 {
                for kind in ["Node", "NodeClaim"] {
                    let name = format!("{}-{n}", kind.to_lowercase());
                    let mut r = Record::new(
                        format!("event/{kind}//{name}/Unconsolidatable/{day}-{w}"),
                        at(w * 28_800),
                        Kind::Event,
                        "Unconsolidatable",
                        subject(kind, None, &name),
                    );
                    r.until = Some(at(w * 28_800 + 28_000));
                    r.node = Some(format!("node-{n}"));
                    r.message = "Can't replace with a cheaper node".into();
                    batch.push(r);
                }
            }
            if batch.len() > 4000 {
                flush(&mut batch, &mut s, &mut rows_total);
            }
        }
        // Pods that waited: 1% of a third of 10 changes a second.
        let waited = 10 * 86_400 / 3 / 100;
        for p in 0..waited {
            let name = format!("job-{day}-{p}");
            let mut r = Record::new(
                format!("pod/batch/{name}/{}", at(p as i64 * 3).timestamp_millis()),
                at(p as i64 * 3),
                Kind::Pod,
                "pending",
                subject("Pod", Some("batch"), &name),
            );
            r.until = Some(at(p as i64 * 3 + 45));
            r.node = Some(format!("node-{}", p % nodes.max(1)));
            r.message = "waiting for a node Karpenter is launching (pool-3)".into();
            batch.push(r.detail("outcome", "bound"));
            if batch.len() > 4000 {
                flush(&mut batch, &mut s, &mut rows_total);
            }
        }
        // Findings that appeared and resolved.
        for f in 0..300 {
            let mut r = Record::new(
                format!(
                    "finding/pod-unschedulable/Pod/batch/job-{day}-{f}//{}",
                    at(f * 200).timestamp_millis()
                ),
                at(f * 200),
                Kind::Finding,
                "pod-unschedulable",
                subject("Pod", Some("batch"), &format!("job-{day}-{f}")),
            )
            .detail("severity", "warning");
            r.until = Some(at(f * 200 + 400));
            r.message = "Pending 6m: no NodePool fits it".into();
            batch.push(r);
        }
        flush(&mut batch, &mut s, &mut rows_total);
    }
    let wrote = began.elapsed();
    let bytes = s.bytes().unwrap();
    drop(s);
    let file = std::fs::metadata(dir.path().join(store::FILE))
        .map(|m| m.len())
        .unwrap_or(0);
    println!(
        "history_store: {days} days, {nodes} nodes: {} rows ({} a day), written in {:.1} s",
        rows_total,
        rows_total as i64 / days.max(1),
        wrote.as_secs_f64()
    );
    println!(
        "history_store: {:.1} MiB in use, file {:.1} MiB ({:.0} bytes a row)",
        bytes as f64 / 1048576.0,
        file as f64 / 1048576.0,
        bytes as f64 / rows_total.max(1) as f64
    );
    let median = |mut v: Vec<Duration>| {
        v.sort();
        v[v.len() / 2]
    };
    let since = Some(start - chrono::Duration::days(1));
    let mut pod = Vec::new();
    let mut node = Vec::new();
    for i in 0..200 {
        let d = i % days.max(1);
        let t = Instant::now();
        let rows = store::read(
            dir.path(),
            &Ask::Pod(Some("batch".into()), format!("job-{d}-{}", i * 7)),
            since,
            2000,
        )
        .unwrap();
        pod.push(t.elapsed());
        assert!(!rows.is_empty());
        let t = Instant::now();
        let _ = store::read(
            dir.path(),
            &Ask::Node(format!("node-{}", (i as usize) * 3 % nodes.max(1))),
            since,
            2000,
        )
        .unwrap();
        node.push(t.elapsed());
    }
    println!(
        "history_store: store::read median: one pod {:.2} ms, one node {:.2} ms",
        median(pod).as_secs_f64() * 1000.0,
        median(node).as_secs_f64() * 1000.0
    );
    let bin = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("target/release/kelp");
    if bin.exists() {
        let mut runs = Vec::new();
        for i in 0..20 {
            let t = Instant::now();
            let out = std::process::Command::new(&bin)
                .args([
                    "history",
                    "pod",
                    &format!("batch/job-0-{}", i * 11),
                    "--since",
                    "3650d",
                    "--state-dir",
                ])
                .arg(dir.path())
                .output()
                .unwrap();
            runs.push(t.elapsed());
            assert!(out.status.success());
        }
        println!(
            "history_store: `kelp history pod` (target/release/kelp, whole process) median {:.1} ms",
            median(runs).as_secs_f64() * 1000.0
        );
    }
}
