//! `kelp what-if --nodepools CHANGED --from DUMP` without `--pod`: the impact of NodePool
//! changes on a 1,000-node, 30,000-pod cluster (`bench/gen-dump.py`, generated once into
//! `$KELP_BENCH_DIR`, default /tmp/kelp-bench, if missing): one pool's template label
//! changed (its nodes drift, their pods are judged against the pools after), and every
//! pool's. The goal is an answer under 2 s; the whole command also reads the dump, which
//! `doctor --from` pays too (see the README's figures). Beside it, the dashboard's budget
//! week strips for every pool (what a page build adds).
//!
//!     cargo bench --bench what_if

use std::path::PathBuf;

#[path = "common/dump.rs"]
mod dump;

#[global_allocator]
static HEAP: kelp::heap::Heap = kelp::heap::Heap;

use chrono::{DateTime, Utc};
use criterion::{criterion_group, criterion_main, Criterion};
use kelp::analysis::rollout::{impact, Proposed};
use kelp::karpenter::hash;

/// The generated dump; `cargo test` runs the bench once on a small one.
fn dump() -> PathBuf {
    let benching = std::env::args().any(|a| a == "--bench");
    if benching {
        dump::generated(1000, 30_000, 10_000)
    } else {
        dump::generated(50, 1500, 500)
    }
}

/// A pool with a new template label, hashed as a manifest would be.
fn relabelled(pool: &kelp::model::NodePool) -> Proposed {
    let mut raw = serde_json::to_value(pool).expect("a pool serialises");
    raw["spec"]["template"]["metadata"]["labels"]["kelp.dev/bench"] = "changed".into();
    let pool: kelp::model::NodePool = serde_json::from_value(raw.clone()).expect("and reads back");
    Proposed {
        hash: hash::template_hash(&hash::with_defaults(&raw["spec"]["template"])),
        pool,
    }
}

fn benches(c: &mut Criterion) {
    let mut cluster = kelp::model::Cluster::default();
    kelp::source::load_paths(&[dump()], &mut cluster).expect("the dump loads");
    let now: DateTime<Utc> = "2026-11-21T10:00:00Z".parse().unwrap();
    // The pool with the most nodes, and every pool.
    let biggest = cluster
        .nodepools
        .values()
        .max_by_key(|p| cluster.pool_node_count(&p.metadata.name))
        .expect("a pool");
    let one = vec![relabelled(biggest)];
    let all: Vec<Proposed> = cluster.nodepools.values().map(relabelled).collect();
    let drifting = impact(&cluster, &all, now).drifting();
    assert!(drifting > 0, "the change drifts nodes");
    let nodes = cluster.nodes.len();
    let mut g = c.benchmark_group(format!("what-if-{nodes}-nodes"));
    g.sample_size(10);
    g.bench_function("one-pool-relabelled", |b| {
        b.iter(|| impact(&cluster, &one, now))
    });
    g.bench_function("every-pool-relabelled", |b| {
        b.iter(|| impact(&cluster, &all, now))
    });
    g.finish();
    // The dashboard's week strips: every pool's budgets, hour by hour for 7 days (what a
    // page build adds per pool with scheduled budgets).
    let total = |p: &kelp::model::NodePool| cluster.pool_node_count(&p.metadata.name);
    c.bench_function(
        &format!("week-strips-{}-pools", cluster.nodepools.len()),
        |b| {
            b.iter(|| {
                cluster
                    .nodepools
                    .values()
                    .filter_map(|p| kelp::analysis::rollout::progress::week(p, now, total(p)))
                    .count()
            })
        },
    );
}

criterion_group!(group, benches);
criterion_main!(group);
