//! What one watch event costs `kelp serve` before any analysis: the event line read as the
//! watch reads it (kube's `WatchEvent` over a raw object), the object decoded into kelp's
//! projection, and fed into the model (`source::kinds::feed`), with the tally published
//! when the model changed. Per kind (Node, Pod), two events: one that changes nothing kelp
//! keeps (a heartbeat's timestamps and a new resourceVersion: the model is left alone and
//! no pass is woken) and one that does (a label flipped). Then a heartbeat along serve's
//! whole path (`Shared::feed`, which drops it on the watch's task when nothing is queued),
//! and the hand-off to the model's applier thread that a change costs on top
//! (`Shared::update_if` of an edit that changes nothing, waited for).
//!
//! The objects are a real Karpenter-made kwok Node and a real Pod (the v1.15.0 capture in
//! `tests/fixtures/real`), given `managedFields` as the API server sends them in a watch;
//! the model around them is `bench/gen-dump.py`'s (1,000 nodes and 30,000 pods by default;
//! `KELP_BENCH_NODES`/`KELP_BENCH_PODS`).
//!
//!     cargo bench --bench watch_event

use std::time::Duration;

#[path = "common/dump.rs"]
mod dump;

// The allocator kelp's binaries run with.
#[global_allocator]
static HEAP: kelp::heap::Heap = kelp::heap::Heap;

use criterion::{criterion_group, criterion_main, Criterion};
use kelp::model::{tally, Cluster, Node, Pod};
use kelp::source::kinds::{self, Change, Kind};
use kelp::source::live::Resource;
use serde_json::value::RawValue;
use serde_json::{json, Value};

/// The captured object of `kind` (a pod bound to a node, for pods), with the
/// `managedFields` a watch carries.
fn captured(kind: &str) -> Value {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/real/karpenter-v1.15.0/cluster.json"
    );
    let text = std::fs::read_to_string(path).expect("the v1.15.0 capture");
    let list: Value = serde_json::from_str(&text).expect("the capture is JSON");
    let mut o = list["items"]
        .as_array()
        .expect("a List")
        .iter()
        .find(|o| o["kind"] == kind && (kind != "Pod" || o["spec"]["nodeName"].is_string()))
        .cloned()
        .expect("an object of the kind");
    // What a kubelet's, the scheduler's and a controller's writes leave: one entry each,
    // with the fields each owns.
    let owned = |manager: &str, sub: Option<&str>| {
        let mut e = json!({
            "manager": manager, "operation": "Update", "apiVersion": "v1",
            "time": "2026-12-07T05:07:34Z", "fieldsType": "FieldsV1",
            "fieldsV1": {"f:metadata": {"f:labels": {".": {}, "f:kubernetes.io/hostname": {},
                "f:node.kubernetes.io/instance-type": {}, "f:topology.kubernetes.io/zone": {}},
                "f:annotations": {".": {}, "f:node.alpha.kubernetes.io/ttl": {}}},
                "f:status": {"f:conditions": {"k:{\"type\":\"Ready\"}": {".": {},
                "f:lastHeartbeatTime": {}, "f:lastTransitionTime": {}, "f:message": {},
                "f:reason": {}, "f:status": {}, "f:type": {}}}, "f:allocatable": {"f:cpu": {},
                "f:memory": {}, "f:pods": {}}, "f:capacity": {"f:cpu": {}, "f:memory": {},
                "f:pods": {}}}},
        });
        if let Some(s) = sub {
            e["subresource"] = json!(s);
        }
        e
    };
    o["metadata"]["managedFields"] = json!([
        owned("karpenter", None),
        owned("kwok", Some("status")),
        owned("kube-controller-manager", None),
    ]);
    o
}

/// `o` as a watch event line of `kind` (ADDED, MODIFIED), at resourceVersion `version`.
fn line(kind: &str, o: &Value, version: u64) -> String {
    let mut o = o.clone();
    o["metadata"]["resourceVersion"] = json!(version.to_string());
    // As the API server writes it: the type first (kube reads the object raw only then).
    format!(r#"{{"type":"{kind}","object":{o}}}"#)
}

/// One event as `kelp serve` takes it: the line read, its object decoded, the model fed,
/// the tally published when the model changed. Returns whether it changed.
fn take<T: Kind>(c: &mut Cluster, r: &Resource, live: &tally::LiveTally, line: &str) -> bool {
    let event: kube::core::WatchEvent<Box<RawValue>> =
        serde_json::from_str(line).expect("an event");
    let kube::core::WatchEvent::Modified(raw) = event else {
        panic!("a MODIFIED event")
    };
    let o: T = serde_json::from_str(raw.get()).expect("the object decodes");
    let changed = kinds::feed(c, r, Change::Apply(o));
    if changed {
        tally::publish(live, c);
    }
    changed
}

/// The event of a heartbeat (every condition's lastHeartbeatTime moved) and of a change (a
/// label flipped), each at a new resourceVersion in turn.
fn events(o: &Value) -> (Vec<String>, Vec<String>) {
    let mut heartbeats = Vec::new();
    let mut changes = Vec::new();
    for i in 0..64u64 {
        let mut beat = o.clone();
        if let Some(conds) = beat["status"]["conditions"].as_array_mut() {
            for c in conds {
                c["lastHeartbeatTime"] = json!(format!("2026-12-07T06:{:02}:00Z", i % 60));
            }
        }
        heartbeats.push(line("MODIFIED", &beat, 1000 + i));
        let mut change = o.clone();
        change["metadata"]["labels"]["kelp-bench"] = json!((i % 2).to_string());
        changes.push(line("MODIFIED", &change, 2000 + i));
    }
    (heartbeats, changes)
}

fn per_kind<T: Kind>(
    c: &mut Criterion,
    model: &mut Cluster,
    live: &tally::LiveTally,
    r: &Resource,
    name: &str,
    object: &Value,
) {
    // The object is in the model first, as the watch's list put it there.
    assert!(take::<T>(model, r, live, &line("MODIFIED", object, 1)));
    let (heartbeats, changes) = events(object);
    assert!(
        !take::<T>(model, r, live, &heartbeats[0]),
        "a heartbeat changed the model"
    );
    let mut g = c.benchmark_group(name);
    g.measurement_time(Duration::from_secs(5));
    let mut i = 0;
    g.bench_function("heartbeat", |b| {
        b.iter(|| {
            i = (i + 1) % heartbeats.len();
            take::<T>(model, r, live, &heartbeats[i])
        })
    });
    g.bench_function("changed", |b| {
        b.iter(|| {
            i = (i + 1) % changes.len();
            take::<T>(model, r, live, &changes[i])
        })
    });
    g.finish();
}

fn benches(c: &mut Criterion) {
    let benching = std::env::args().any(|a| a == "--bench");
    // `cargo test` runs each bench once, unoptimised, as a smoke test: on a smaller model.
    let scale = |n: usize| if benching { n } else { n / 10 };
    let (file, _) = dump::sized(scale(1000), scale(30_000), scale(10_000));
    let mut model = Cluster::default();
    kelp::source::load_paths(&[file], &mut model).expect("the dump loads");
    let live = tally::live(&model);
    per_kind::<Node>(
        c,
        &mut model,
        &live,
        &kinds::NODES,
        "node-event",
        &captured("Node"),
    );
    per_kind::<Pod>(
        c,
        &mut model,
        &live,
        &kinds::PODS,
        "pod-event",
        &captured("Pod"),
    );

    // The whole path of a heartbeat in `kelp serve`: read and decoded on the watch's task,
    // and dropped there (`Shared::feed`), with no hand-off to the applier.
    let shared = kelp::runtime::Shared::new("bench", Duration::from_secs(3600));
    shared.load(model, chrono::Utc::now());
    let (heartbeats, _) = events(&captured("Node"));
    let mut g = c.benchmark_group("serve");
    let mut i = 0;
    g.bench_function("node-heartbeat-dropped-on-the-watch", |b| {
        b.iter(|| {
            i = (i + 1) % heartbeats.len();
            let event: kube::core::WatchEvent<Box<RawValue>> =
                serde_json::from_str(&heartbeats[i]).expect("an event");
            let kube::core::WatchEvent::Modified(raw) = event else {
                panic!("a MODIFIED event")
            };
            let o: Node = serde_json::from_str(raw.get()).expect("the node decodes");
            shared.feed(kinds::NODES, Change::Apply(o));
        })
    });
    g.finish();
    let mut g = c.benchmark_group("applier");
    g.bench_function("hand-off-of-an-unchanged-edit", |b| {
        b.iter(|| {
            let (tx, rx) = std::sync::mpsc::sync_channel(1);
            shared.update_if(move |_| {
                let _ = tx.send(());
                false
            });
            rx.recv().expect("the applier ran the edit")
        })
    });
    g.finish();
}

criterion_group!(watch_event, benches);
criterion_main!(watch_event);
