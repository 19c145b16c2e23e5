//! `kelp serve`'s analysis pass on a large cluster: a full pass, and a pass after one pod
//! changes or one NodePool changes (issue: "a live path whose cost follows the change").
//!
//! The model is `bench/gen-dump.py`'s 5,000-node / 150,000-pod / 50,000-event dump (about
//! 1 GB, generated once into `$KELP_BENCH_DIR`, default /tmp/kelp-bench, if missing; smaller
//! with `KELP_BENCH_NODES`/`KELP_BENCH_PODS`/`KELP_BENCH_EVENTS`), loaded as `kelp serve
//! --from` loads it. Each pass is what serve runs: the analysis, the seed metrics and the
//! dashboard board's share. The dashboard builds a pass's page only while someone watches
//! it (`kelp::web::Board`): the `-no-viewer` cases run first, with nobody watching; the
//! others ask for a page before each pass, so they build it, as they always did. The last
//! two keep serve's history too (`--state-dir`), to weigh what it adds to a pass.
//!
//!     cargo bench --bench serve_pass

use std::path::PathBuf;

#[path = "common/dump.rs"]
mod dump;

// The allocator kelp's binaries run with.
#[global_allocator]
static HEAP: kelp::heap::Heap = kelp::heap::Heap;

use chrono::{DateTime, Utc};
use criterion::{criterion_group, criterion_main, Criterion};

/// The generated dump, made once. `cargo test` runs each bench once, unoptimised, as a
/// smoke test: then a small cluster does.
fn dump() -> (PathBuf, usize) {
    let benching = std::env::args().any(|a| a == "--bench");
    let scale = |n: usize| if benching { n } else { n / 100 };
    dump::sized(scale(5000), scale(150_000), scale(50_000))
}

fn now() -> DateTime<Utc> {
    DateTime::parse_from_rfc3339("2026-11-21T10:00:00Z")
        .unwrap()
        .to_utc()
}

fn benches(c: &mut Criterion) {
    let mut cluster = kelp::model::Cluster::default();
    let (file, pods) = dump();
    kelp::source::load_paths(&[file], &mut cluster).expect("the dump loads");
    // One running pod and one NodePool to change, back and forth.
    let pod = cluster
        .pods
        .values()
        .find(|p| p.spec.node_name.is_some())
        .cloned()
        .expect("a pod");
    let pool = cluster.nodepools.values().next().cloned().expect("a pool");
    let (shared, board) = kelp::serve::loaded("bench", cluster, now());
    let model = shared.model();
    let mut flip = false;
    // A change the watch path passes on (a resourceVersion bump alone it drops): a label,
    // which zone spread and anti-affinity read.
    let mut change_pod = || {
        flip = !flip;
        let mut p = pod.clone();
        p.metadata.resource_version = flip.to_string();
        p.metadata
            .labels
            .make_mut()
            .insert("kelp-bench".into(), flip.to_string());
        model.write().unwrap().apply_pod(p);
    };
    // Named by the size measured: serve-pass-150000-pods/full, and so on.
    let mut g = c.benchmark_group(format!("serve-pass-{pods}-pods"));
    g.sample_size(10);
    // Nobody has asked for a page yet: passes build none.
    assert!(!board.watched(), "no page was asked for");
    g.bench_function("nothing-changed-no-viewer", |b| {
        b.iter(|| shared.pass(now()))
    });
    g.bench_function("one-pod-change-no-viewer", |b| {
        b.iter(|| {
            change_pod();
            shared.pass(now())
        })
    });
    // As serve runs it: each pass at its own instant (here a second after the last), so
    // every answer that reads the clock is looked at again (each pending pod's wait).
    let mut at = now();
    g.bench_function("one-pod-change-clock-moves-no-viewer", |b| {
        b.iter(|| {
            change_pod();
            at += chrono::Duration::seconds(1);
            shared.pass(at)
        })
    });
    // A change that moves the free room: a replica of that pod bound beside it, then
    // deleted, in turn (what a rollout or a scale-up does, one pod at a time).
    let mut bound = false;
    let mut bind_pod = || {
        bound = !bound;
        let mut c = model.write().unwrap();
        if bound {
            let mut p = pod.clone();
            p.metadata.name = "kelp-bench-replica".into();
            p.metadata.uid = "kelp-bench-replica".into();
            c.apply_pod(p);
        } else {
            let ns = pod.metadata.namespace.as_deref().unwrap_or_default();
            c.delete_pod(ns, "kelp-bench-replica");
        }
    };
    g.bench_function("one-pod-bound-no-viewer", |b| {
        b.iter(|| {
            bind_pod();
            shared.pass(now())
        })
    });
    // From here on a page was asked for just before each pass, so each builds its page.
    g.bench_function("full", |b| {
        b.iter(|| {
            board.look();
            shared.pass_full(now())
        })
    });
    g.bench_function("nothing-changed", |b| {
        b.iter(|| {
            board.look();
            shared.pass(now())
        })
    });
    g.bench_function("one-pod-change", |b| {
        b.iter(|| {
            board.look();
            change_pod();
            shared.pass(now())
        })
    });
    let mut flip = false;
    g.bench_function("one-pool-change", |b| {
        b.iter(|| {
            board.look();
            flip = !flip;
            let mut p = pool.clone();
            p.spec.weight = Some(if flip { 7 } else { 8 });
            model.write().unwrap().apply_nodepool(p);
            shared.pass(now())
        })
    });
    // The same two, with serve's history kept (`--state-dir`): the recorder's diff runs in
    // the pass, the writes on their own thread. Against "nothing-changed" and
    // "one-pod-change" above, in the same run.
    let state = tempfile::tempdir().expect("a state dir");
    let history = kelp::serve::HistoryOptions {
        dir: state.path().to_path_buf(),
        retention: chrono::Duration::days(14),
        max_bytes: 1 << 30,
        strict: true,
    };
    let _kept = kelp::serve::keep_history(&shared, &history, state.path().to_path_buf())
        .expect("the history opens");
    shared.pass(now());
    g.bench_function("nothing-changed+history", |b| {
        b.iter(|| {
            board.look();
            shared.pass(now())
        })
    });
    g.bench_function("one-pod-change+history", |b| {
        b.iter(|| {
            board.look();
            change_pod();
            shared.pass(now())
        })
    });
    g.finish();
}

criterion_group!(serve_pass, benches);
criterion_main!(serve_pass);
