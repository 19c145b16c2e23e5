//! `kelp serve`'s incremental pass equals a full pass: on random sequences of changes
//! (pods bound, moved, deleted, marked do-not-disrupt, relabelled, their phase changed;
//! nodes and claims changed or gone; events written and deleted; pools re-tuned or
//! deleted; PDBs closed and opened) and clock moves, on the demo cluster and on the real
//! Karpenter capture, the pass that reuses the previous one gives the same report and the
//! same node states as one computed afresh.

use std::path::PathBuf;

use chrono::{DateTime, Duration, Utc};
use kelp::analysis::{self, incremental::Incremental};
use kelp::model::*;
use proptest::prelude::*;

/// One change to the model, or a clock move. Indexes are taken modulo what is there.
#[derive(Debug, Clone)]
enum Step {
    Tick(i64),
    DeletePod(usize),
    /// Bind a pod to a node, or unbind it (`None`).
    MovePod(usize, Option<usize>),
    DoNotDisrupt(usize, usize),
    /// A pod's phase (Pending, Running, Succeeded, Failed), or its deletion begun.
    PodPhase(usize, usize),
    /// A pod's labels made another pod's (so it joins that one's workload in the eyes of
    /// spread and anti-affinity), or emptied.
    PodLabel(usize, Option<usize>),
    DeleteNode(usize),
    /// Set a claim's Consolidatable (or Drifted) condition now.
    ClaimCondition(usize, bool, bool),
    DeleteClaim(usize),
    /// A Karpenter event about a node or its claim, some seconds ago.
    Event(usize, usize, i64),
    DeleteEvent(usize),
    /// An event about an unbound pod, some seconds ago: Karpenter's FailedScheduling (two
    /// messages) or Nominated, or the kube-scheduler's FailedScheduling.
    PodEvent(usize, usize, i64),
    PoolConsolidateAfter(usize, usize),
    PoolBudget(usize, usize),
    /// Another part of a pool's spec: what its nodes' states read (expiry, policy) and
    /// what pending pods' verdicts read (limits, weight, requirements, taints), or the
    /// pool deleted.
    PoolEdit(usize, usize),
    PdbAllows(usize, i32),
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        3 => (0i64..3_600).prop_map(Step::Tick),
        1 => (0i64..172_800).prop_map(Step::Tick),
        2 => any::<usize>().prop_map(Step::DeletePod),
        3 => (any::<usize>(), prop::option::of(any::<usize>())).prop_map(|(p, n)| Step::MovePod(p, n)),
        2 => (any::<usize>(), 0usize..4).prop_map(|(p, v)| Step::DoNotDisrupt(p, v)),
        2 => (any::<usize>(), 0usize..5).prop_map(|(p, v)| Step::PodPhase(p, v)),
        2 => (any::<usize>(), prop::option::of(any::<usize>())).prop_map(|(p, v)| Step::PodLabel(p, v)),
        1 => any::<usize>().prop_map(Step::DeleteNode),
        3 => (any::<usize>(), any::<bool>(), any::<bool>()).prop_map(|(c, a, b)| Step::ClaimCondition(c, a, b)),
        1 => any::<usize>().prop_map(Step::DeleteClaim),
        3 => (any::<usize>(), 0usize..5, 0i64..7_200).prop_map(|(n, r, a)| Step::Event(n, r, a)),
        1 => any::<usize>().prop_map(Step::DeleteEvent),
        2 => (any::<usize>(), 0usize..4, 0i64..7_200).prop_map(|(p, r, a)| Step::PodEvent(p, r, a)),
        1 => (any::<usize>(), 0usize..4).prop_map(|(p, v)| Step::PoolConsolidateAfter(p, v)),
        1 => (any::<usize>(), 0usize..4).prop_map(|(p, v)| Step::PoolBudget(p, v)),
        2 => (any::<usize>(), 0usize..8).prop_map(|(p, v)| Step::PoolEdit(p, v)),
        1 => (any::<usize>(), 0i32..2).prop_map(|(p, v)| Step::PdbAllows(p, v)),
    ]
}

fn nth<K: Clone, V>(m: &std::collections::BTreeMap<K, V>, i: usize) -> Option<K> {
    (!m.is_empty()).then(|| m.keys().nth(i % m.len()).cloned())?
}

/// Give pool `p`'s nodes a NoSchedule taint `key`.
fn taint(p: &mut NodePool, key: &str) {
    p.spec
        .template
        .spec
        .taints
        .make_mut()
        .push(k8s_openapi::api::core::v1::Taint {
            key: key.into(),
            effect: "NoSchedule".into(),
            ..Default::default()
        });
}

/// Change the `i`th pod (taken modulo) with `edit`, which may read the cluster as it is,
/// and apply it.
fn edit_pod(c: &mut Cluster, i: usize, edit: impl FnOnce(&mut Pod, &Cluster)) {
    let Some(key) = nth(&c.pods, i) else { return };
    let mut p = c.pods[&key].clone();
    edit(&mut p, c);
    c.apply_pod(p);
}

fn apply(c: &mut Cluster, now: &mut DateTime<Utc>, s: &Step, serial: &mut usize) {
    *serial += 1;
    match *s {
        Step::Tick(secs) => *now += Duration::seconds(secs),
        Step::DeletePod(i) => {
            if let Some((ns, name)) = nth(&c.pods, i) {
                c.delete_pod(&ns, &name);
            }
        }
        Step::MovePod(i, n) => {
            let node = n.and_then(|n| nth(&c.nodes, n));
            edit_pod(c, i, |p, _| p.spec.node_name = node.map(Shared::from));
        }
        Step::DoNotDisrupt(i, v) => edit_pod(c, i, |p, _| {
            let a = p.metadata.annotations.make_mut();
            match ["true", "10m", "2h", ""][v] {
                "" => a.remove("karpenter.sh/do-not-disrupt"),
                v => a.insert("karpenter.sh/do-not-disrupt".into(), v.into()),
            };
            p.status.start_time = Some(*now - Duration::minutes(5));
        }),
        Step::PodPhase(i, v) => edit_pod(c, i, |p, _| {
            match ["Pending", "Running", "Succeeded", "Failed", ""][v] {
                "" => p.metadata.deletion_timestamp = Some(*now),
                phase => {
                    p.status.phase = Some(Shared::from(phase));
                    p.status.start_time = Some(*now);
                }
            }
        }),
        Step::PodLabel(i, v) => edit_pod(c, i, |p, c| {
            p.metadata.labels = match v.and_then(|j| nth(&c.pods, j)) {
                Some(other) => c.pods[&other].metadata.labels.clone(),
                None => Default::default(),
            };
        }),
        Step::DeleteNode(i) => {
            if let Some(n) = nth(&c.nodes, i) {
                c.delete_node(&n);
            }
        }
        Step::ClaimCondition(i, consolidatable, drifted) => {
            let Some(name) = nth(&c.nodeclaims, i) else {
                return;
            };
            let mut cl = (*c.nodeclaims[&name]).clone();
            let (kind, status) = if drifted {
                ("Drifted", "True")
            } else {
                (
                    "Consolidatable",
                    if consolidatable { "True" } else { "False" },
                )
            };
            cl.status.conditions.retain(|c| &*c.type_ != kind);
            cl.status.conditions.push(Condition {
                type_: kind.into(),
                status: status.into(),
                reason: drifted.then(|| "NodePoolDrifted".into()),
                message: None,
                last_transition_time: Some(*now),
            });
            cl.status.last_pod_event_time = Some(*now - Duration::minutes(1));
            c.apply_nodeclaim(cl);
        }
        Step::DeleteClaim(i) => {
            if let Some(n) = nth(&c.nodeclaims, i) {
                c.delete_nodeclaim(&n);
            }
        }
        Step::Event(i, r, ago) => {
            let Some(node) = nth(&c.nodes, i) else { return };
            let claim = c
                .nodeclaim_for_node(&c.nodes[&node])
                .map(|cl| cl.metadata.name.clone());
            let (reason, message) = [
                ("DisruptionBlocked", "Node is nominated for a pending pod"),
                ("DisruptionBlocked", "Not all pods would schedule, default/x => would schedule against uninitialized nodeclaim"),
                ("Unconsolidatable", "Can't replace with a cheaper node"),
                ("ConsolidationCandidate", "replace: [node] -> [1 replacement]"),
                ("Nominated", "Pod should schedule on: nodeclaim/x"),
            ][r];
            let (kind, name) = match (&claim, r % 2) {
                (Some(cl), 0) => ("NodeClaim", cl.clone()),
                _ => ("Node", node),
            };
            let at = *now - Duration::seconds(ago);
            c.apply_event(Event {
                id: format!("step-{serial}"),
                regarding: kelp::model::event::ObjectRef {
                    kind: kind.into(),
                    name,
                    ..Default::default()
                },
                reason: reason.into(),
                message: message.into(),
                type_: "Normal".into(),
                source: "karpenter".into(),
                first_seen: Some(at),
                last_seen: Some(at),
                count: 1,
                ..Default::default()
            });
        }
        Step::PodEvent(i, r, ago) => {
            let n = c.unbound_pods().count();
            let Some(pod) = c.unbound_pods().nth(i % n.max(1)) else {
                return;
            };
            let (reason, source, message) = [
                ("FailedScheduling", "karpenter", "Failed to schedule pod, incompatible requirements, label \"capture.kelp.dev/scenario\" does not have known values; node limits have been exhausted for nodepool (NodePool=cap-nodes-limit)"),
                ("FailedScheduling", "karpenter", "Failed to schedule pod, all available instance types exceed limits for nodepool (NodePool=cap-limits)"),
                ("Nominated", "karpenter", "Pod should schedule on: nodeclaim/x"),
                ("FailedScheduling", "default-scheduler", "0/17 nodes are available: 17 node(s) had untolerated taint(s)."),
            ][r];
            let at = *now - Duration::seconds(ago);
            let event = Event {
                id: format!("step-{serial}"),
                regarding: kelp::model::event::ObjectRef {
                    kind: "Pod".into(),
                    namespace: pod.metadata.namespace.as_deref().map(str::to_string),
                    name: pod.metadata.name.clone(),
                    uid: pod.metadata.uid.to_string(),
                },
                reason: reason.into(),
                message: message.into(),
                type_: if r == 2 { "Normal" } else { "Warning" }.into(),
                source: source.into(),
                first_seen: Some(at),
                last_seen: Some(at),
                count: 1,
                ..Default::default()
            };
            c.apply_event(event);
        }
        Step::DeleteEvent(i) => {
            let mut ids: Vec<String> = c.events.keys().cloned().collect();
            ids.sort();
            if !ids.is_empty() {
                let id = ids[i % ids.len()].clone();
                c.delete_event(&id);
            }
        }
        Step::PoolConsolidateAfter(i, v) => {
            let Some(name) = nth(&c.nodepools, i) else {
                return;
            };
            let mut p = c.nodepools[&name].clone();
            p.spec.disruption.consolidate_after =
                Some(["0s", "30s", "10m", "Never"][v].to_string());
            c.apply_nodepool(p);
        }
        Step::PoolBudget(i, v) => {
            let Some(name) = nth(&c.nodepools, i) else {
                return;
            };
            let mut p = c.nodepools[&name].clone();
            let budget = |nodes: &str, schedule: Option<&str>| kelp::karpenter::budgets::Budget {
                nodes: nodes.into(),
                schedule: schedule.map(str::to_string),
                duration: schedule.map(|_| "2h".to_string()),
                reasons: None,
            };
            p.spec.disruption.budgets = match v {
                0 => None,
                1 => Some(vec![budget("0", None)]),
                2 => Some(vec![budget("0", Some("0 9 * * *"))]),
                _ => Some(vec![budget("50%", None)]),
            };
            c.apply_nodepool(p);
        }
        Step::PoolEdit(i, v) => {
            let Some(name) = nth(&c.nodepools, i) else {
                return;
            };
            let mut p = c.nodepools[&name].clone();
            let spec = &mut p.spec;
            match v {
                0 => spec.template.spec.expire_after = Some("1h".into()),
                1 => spec.template.spec.expire_after = Some("Never".into()),
                2 => {
                    spec.disruption.consolidation_policy = Some("WhenEmpty".into());
                }
                3 => {
                    spec.limits.insert(
                        "cpu".into(),
                        k8s_openapi::apimachinery::pkg::api::resource::Quantity("1".into()),
                    );
                }
                4 => spec.weight = Some(spec.weight.unwrap_or_default() + 10),
                5 => spec.template.spec.requirements.make_mut().push(
                    kelp::karpenter::requirements::Requirement {
                        key: "karpenter.sh/capacity-type".into(),
                        operator: "In".into(),
                        values: vec!["spot".into()],
                        min_values: None,
                    },
                ),
                6 => taint(&mut p, "kelp.test/dedicated"),
                _ => {
                    c.delete_nodepool(&name);
                    return;
                }
            }
            c.apply_nodepool(p);
        }
        Step::PdbAllows(i, v) => {
            let Some(key) = nth(&c.pdbs, i) else { return };
            let mut pdb = c.pdbs[&key].clone();
            pdb.status.disruptions_allowed = Some(v);
            c.apply_pdb(pdb);
        }
    }
}

/// The incremental pass and a full one, side by side.
fn same(c: &Cluster, now: DateTime<Utc>, engine: &mut Incremental) -> Result<(), TestCaseError> {
    let inc = analysis::run_incremental(c, now, engine);
    let full = analysis::run(c, now);
    for (name, state) in &full.nodes {
        prop_assert_eq!(inc.nodes.get(name), Some(state), "node {} at {}", name, now);
    }
    prop_assert_eq!(inc.nodes.len(), full.nodes.len());
    prop_assert_eq!(&inc.holds, &full.holds);
    prop_assert_eq!(&inc.pools, &full.pools, "pool usage at {}", now);
    // Pods still inside the grace for Karpenter's event reach no finding, but the
    // dashboard, the TUI and `why` show their diagnoses.
    prop_assert_eq!(&inc.pending, &full.pending);
    let json = |p: &analysis::Pass| serde_json::to_string(&*p.report).unwrap();
    prop_assert_eq!(json(&inc), json(&full));
    Ok(())
}

fn demo() -> (Cluster, DateTime<Utc>) {
    (kelp::demo::cluster().unwrap(), kelp::demo::now())
}

fn real() -> (Cluster, DateTime<Utc>) {
    let dir =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/real/karpenter-v1.14.1");
    let mut c = Cluster::default();
    kelp::source::load_paths(&[dir.join("cluster.json")], &mut c).unwrap();
    let now = c.captured_at.expect("the capture's clock");
    (c, now)
}

fn run(base: fn() -> (Cluster, DateTime<Utc>), steps: &[Step]) -> Result<(), TestCaseError> {
    let (mut c, mut now) = base();
    let mut engine = Incremental::default();
    let mut serial = 0;
    same(&c, now, &mut engine)?;
    for s in steps {
        apply(&mut c, &mut now, s, &mut serial);
        same(&c, now, &mut engine)?;
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 32, ..ProptestConfig::default() })]

    #[test]
    fn incremental_equals_full_on_the_demo(steps in prop::collection::vec(step(), 1..24)) {
        run(demo, &steps)?;
    }

    #[test]
    fn incremental_equals_full_on_the_real_capture(steps in prop::collection::vec(step(), 1..24)) {
        run(real, &steps)?;
    }
}

/// The reuse is real: with nothing changed every node state and pending pod verdict is
/// reused; one pod's change recomputes its node (and the nodes that read the cluster's
/// free room), not the rest; a pool's change recomputes its nodes and every verdict.
#[test]
fn a_pass_reuses_what_did_not_change() {
    let (mut c, now) = demo();
    let mut engine = Incremental::default();
    analysis::run_incremental(&c, now, &mut engine);
    let all = engine.stats().computed;
    assert!(all > 3, "the demo has Karpenter nodes: {all}");
    let pods = engine.stats().pods_computed;
    assert!(
        pods > 1 && engine.stats().verdicts_computed > 1,
        "the demo has pending pods: {:?}",
        engine.stats()
    );
    analysis::run_incremental(&c, now, &mut engine);
    assert_eq!(engine.stats().computed, 0, "{:?}", engine.stats());
    assert_eq!(engine.stats().reused, all);
    assert_eq!(engine.stats().pods_computed, 0, "{:?}", engine.stats());
    assert_eq!(engine.stats().pods_reused, pods);
    assert_eq!(engine.stats().verdicts_computed, 0, "{:?}", engine.stats());
    // A minute later, only what has a threshold inside that minute.
    analysis::run_incremental(&c, now + Duration::seconds(1), &mut engine);
    assert!(engine.stats().reused > 0, "{:?}", engine.stats());
    // A pod's change on one node.
    let key = bound_pod(&c);
    relabel(&mut c, &key);
    analysis::run_incremental(&c, now + Duration::seconds(1), &mut engine);
    let s = engine.stats();
    assert!(s.computed >= 1 && s.reused > 0, "{s:?}");
    assert_eq!(
        (s.pods_reused, s.verdicts_computed),
        (pods, 0),
        "a labelled bound pod is no pool's business"
    );
    // A pending pod's change: that pod alone is diagnosed again.
    let pending = analysis::run(&c, now).pending[0].pod.clone();
    relabel(
        &mut c,
        &(pending.namespace.unwrap_or_default(), pending.name),
    );
    analysis::run_incremental(&c, now + Duration::seconds(1), &mut engine);
    let s = engine.stats();
    assert_eq!((s.pods_reused, s.pods_computed), (pods - 1, 1), "{s:?}");
    // A pool's change: its nodes and every pending pod's verdicts, not the other pools'
    // nodes (but those that priced a replacement, which read every pool).
    let pool = c.nodepools.values().next().unwrap().clone();
    let of_pool = |c: &Cluster, name: &str| {
        c.nodes
            .values()
            .filter(|n| Cluster::pool_of(&n.metadata.labels) == Some(name))
            .count()
    };
    let (mine, others) = (
        of_pool(&c, &pool.metadata.name),
        c.nodes.len() - of_pool(&c, &pool.metadata.name),
    );
    assert!(
        mine > 0 && others > 0,
        "the demo's first pool has nodes, and others too"
    );
    c.apply_nodepool(pool);
    analysis::run_incremental(&c, now + Duration::seconds(1), &mut engine);
    let s = engine.stats();
    assert!(s.computed >= mine, "{s:?}");
    assert!(s.reused > 0, "another pool's nodes stand: {s:?}");
    assert_eq!((s.verdicts_reused, s.pods_reused), (0, 0), "{s:?}");
}

/// The first pod bound to a node.
fn bound_pod(c: &Cluster) -> (String, String) {
    c.pods
        .iter()
        .find(|(_, p)| p.spec.node_name.is_some())
        .map(|(k, _)| k.clone())
        .expect("a bound pod")
}

/// A label added to pod (namespace, name).
fn relabel(c: &mut Cluster, key: &(String, String)) {
    let mut p = c.pods[key].clone();
    p.metadata
        .labels
        .make_mut()
        .insert("touched".into(), "yes".into());
    c.apply_pod(p);
}

/// A bound pod's labels are what its peers' zone spread counts: relabelling the one pod
/// a pending pod's spread selects changes that pod's verdict, and the incremental pass
/// follows (a kept verdict must not outlive the zone counts it was judged with). Its
/// phase from Pending to Running changes no count, and keeps the verdicts.
#[test]
fn a_relabelled_peer_reaches_the_zone_counts() {
    let (mut c, now) = real();
    let key = ("cap-topology".to_string(), "anchor".to_string());
    let skewed = |p: &analysis::Pass| {
        let d = p
            .diagnosis("cap-topology", "skewed")
            .expect("the spread pod is pending");
        serde_json::to_string(&d.nodepools).unwrap()
    };
    let mut engine = Incremental::default();
    let before = skewed(&analysis::run_incremental(&c, now, &mut engine));
    // Running again: the same room, the verdicts kept.
    let mut p = c.pods[&key].clone();
    p.status.phase = Some(Shared::from("Running"));
    p.status.start_time = Some(now);
    c.apply_pod(p);
    let pass = analysis::run_incremental(&c, now, &mut engine);
    assert_eq!(engine.stats().verdicts_computed, 0, "{:?}", engine.stats());
    assert_eq!(skewed(&pass), before);
    // The anchor leaves the spread's selection.
    let mut p = c.pods[&key].clone();
    p.metadata.labels = Default::default();
    c.apply_pod(p);
    let inc = skewed(&analysis::run_incremental(&c, now, &mut engine));
    let full = skewed(&analysis::run(&c, now));
    assert_ne!(full, before, "the anchor's labels decide the skew");
    assert_eq!(inc, full);
}

/// Zone anti-affinity reads the running pods: `loner` keeps out of `anchor`'s zone, the
/// only one its pool allows, and relabelling the anchor out of its term frees the zone. A
/// pod started in another namespace whose anti-affinity selects `clingy` (which has no
/// zone term of its own, nor spread) keeps it out of that zone, though clingy did not
/// change. The incremental pass follows each step.
#[test]
fn zone_anti_affinity_follows_the_running_pods() {
    let (mut c, now) = real();
    let key = ("cap-topology".to_string(), "anchor".to_string());
    let verdict = |p: &analysis::Pass, pod: &str| {
        let d = p.diagnosis("cap-topology", pod).expect("pending");
        let v = d
            .nodepools
            .iter()
            .find(|v| v.name == "cap-topology")
            .unwrap();
        serde_json::to_string(&**v).unwrap()
    };
    let mut engine = Incremental::default();
    let pass = analysis::run_incremental(&c, now, &mut engine);
    let before = verdict(&pass, "loner");
    assert!(before.contains("cap-topology/anchor"), "{before}");
    let clingy = verdict(&pass, "clingy");
    assert!(clingy.contains(r#""source":"event""#), "{clingy}");
    // The anchor leaves loner's selection.
    let mut p = c.pods[&key].clone();
    p.metadata.labels = Default::default();
    c.apply_pod(p);
    let freed = verdict(&analysis::run_incremental(&c, now, &mut engine), "loner");
    assert_eq!(freed, verdict(&analysis::run(&c, now), "loner"));
    assert_ne!(freed, before, "the anchor's labels decide it");
    // A pod beside the anchor keeps pods labelled app=clingy, in every namespace, out of
    // its zone.
    let node = c.pods[&key].spec.node_name.clone().unwrap();
    c.apply_pod(probe(
        "guard",
        &node,
        "1m",
        "guard",
        Some("{matchLabels: {app: clingy}}"),
    ));
    let closed = verdict(&analysis::run_incremental(&c, now, &mut engine), "clingy");
    assert_eq!(closed, verdict(&analysis::run(&c, now), "clingy"));
    assert!(
        closed.contains("of running pods") && closed.contains("default/guard"),
        "{closed}"
    );
}

/// A node whose pods fit on no other node prices a replacement from the first pool that
/// takes them all, so it reads every pool: a pool added ahead of its own changes its
/// answer, and the incremental pass follows. The nodes of other pools that priced
/// nothing stand.
#[test]
fn a_replacement_reads_every_pool() {
    let (mut c, now) = real();
    let node = "kwok-cap-underused-9d2dl-reaperleather-4-uagkzne6mf-224593195";
    let check = |p: &analysis::Pass| {
        p.nodes[node]
            .consolidation
            .kelp_check
            .clone()
            .expect("kelp checks the node's consolidation")
    };
    let mut engine = Incremental::default();
    let before = check(&analysis::run_incremental(&c, now, &mut engine));
    assert!(
        before.contains("from NodePool cap-underused"),
        "its own pool prices it: {before}"
    );
    // A heavier pool whose taint the pods do not tolerate, then the taint gone: the same
    // pools by name, with the same usage, and only the other pool's spec changed.
    let mut first = c.nodepools["cap-underused"].clone();
    first.metadata.name = "kelp-first".into();
    first.spec.weight = Some(100);
    let mut tainted = first.clone();
    taint(&mut tainted, "kelp.test/keep-out");
    c.apply_nodepool(tainted);
    assert_eq!(
        check(&analysis::run_incremental(&c, now, &mut engine)),
        before
    );
    c.apply_nodepool(first);
    let inc = analysis::run_incremental(&c, now, &mut engine);
    let full = analysis::run(&c, now);
    assert!(
        check(&full).contains("from NodePool kelp-first"),
        "the heavier pool comes first: {}",
        check(&full)
    );
    assert_eq!(check(&inc), check(&full));
    assert!(engine.stats().reused > 0, "{:?}", engine.stats());
}

/// The room reads each node's pool for when the node settles, not only whether it does
/// yet: a Karpenter decision written before a node's room opened is stale. Here the demo's
/// node that Karpenter left ("Can't replace with a cheaper node", two minutes ago) while
/// kelp finds its pod room elsewhere gets its own pool, the other nodes another; moving
/// the other pool's consolidateAfter so that a node settled after Karpenter's event (but
/// before now) makes the node a candidate without changing who is settling now. The
/// incremental pass follows.
/// The demo with its node that Karpenter left ("Can't replace with a cheaper node") alone
/// in pool `default`, and the other nodes of that pool in [`OTHERS`].
fn left_node_apart() -> (Cluster, DateTime<Utc>) {
    let (mut c, now) = demo();
    let node = LEFT_NODE;
    let others = OTHERS;
    let mut pool = c.nodepools["default"].clone();
    pool.metadata.name = others.into();
    c.apply_nodepool(pool);
    let relabel = |labels: &mut kelp::model::meta::StringMap| {
        labels
            .make_mut()
            .insert("karpenter.sh/nodepool".into(), others.into());
    };
    for mut n in c.nodes.values().cloned().collect::<Vec<_>>() {
        if Cluster::pool_of(&n.metadata.labels) == Some("default") && n.metadata.name != node {
            relabel(&mut n.metadata.labels);
            c.apply_node(n);
        }
    }
    for mut cl in c
        .nodeclaims
        .values()
        .map(|cl| (**cl).clone())
        .collect::<Vec<_>>()
    {
        let on = cl.status.node_name.as_deref();
        if Cluster::pool_of(&cl.metadata.labels) == Some("default") && on != Some(node) {
            relabel(&mut cl.metadata.labels);
            c.apply_nodeclaim(cl);
        }
    }
    (c, now)
}

/// For each node of [`OTHERS`], the pool's consolidateAfter that settles it at `at`.
fn settling_at(c: &Cluster, at: DateTime<Utc>) -> Vec<String> {
    c.nodeclaims
        .values()
        .filter(|cl| Cluster::pool_of(&cl.metadata.labels) == Some(OTHERS))
        .filter_map(|cl| {
            let since = cl.status.last_pod_event_time?;
            let secs = (at - since).num_seconds();
            (secs > 0).then(|| format!("{secs}s"))
        })
        .collect()
}

const LEFT_NODE: &str = "ip-10-0-60-77.us-west-2.compute.internal";
const OTHERS: &str = "default-others";

#[test]
fn another_pools_consolidate_after_moves_when_the_room_opened() {
    let (mut c, now) = left_node_apart();
    let (node, others) = (LEFT_NODE, OTHERS);
    let mut engine = Incremental::default();
    let answer = |p: &analysis::Pass| p.nodes[node].consolidation.clone();
    let base = answer(&analysis::run_incremental(&c, now, &mut engine));
    assert_eq!(
        base.state,
        analysis::disruption::consolidation::State::Blocked,
        "{base:?}"
    );
    // For each of the other nodes, the other pool's consolidateAfter that settles it a
    // minute before now (after Karpenter's event).
    let settle_one_minute_ago = settling_at(&c, now - Duration::seconds(60));
    let mut flipped = 0;
    for after in settle_one_minute_ago {
        let was = c.nodepools[others].clone();
        let mut p = was.clone();
        p.spec.disruption.consolidate_after = Some(after);
        c.apply_nodepool(p);
        let inc = analysis::run_incremental(&c, now, &mut engine);
        let full = analysis::run(&c, now);
        assert_eq!(answer(&inc), answer(&full));
        assert_eq!(inc.nodes, full.nodes);
        if answer(&full).state != base.state {
            flipped += 1;
        }
        c.apply_nodepool(was);
        analysis::run_incremental(&c, now, &mut engine);
    }
    assert!(
        flipped > 0,
        "some setting of the other pool makes Karpenter's event stale"
    );
}

/// With nothing changed but the clock, a node leaving its pool's consolidateAfter opens
/// its room to the plans that read it: the other pool's consolidateAfter is set so that
/// each other node settles half a minute after now, one at a time; a pass before and a
/// pass after, with no change between them, follow the full pass, and some plan moves.
#[test]
fn a_node_settling_with_only_the_clock_moving_reaches_the_plans() {
    let (mut c, now) = left_node_apart();
    let answer = |p: &analysis::Pass| p.nodes[LEFT_NODE].consolidation.clone();
    let settle_soon = settling_at(&c, now + Duration::seconds(30));
    assert!(!settle_soon.is_empty(), "the demo has nodes to settle");
    let mut flipped = 0;
    for after in settle_soon {
        let mut p = c.nodepools[OTHERS].clone();
        p.spec.disruption.consolidate_after = Some(after);
        c.apply_nodepool(p);
        let mut engine = Incremental::default();
        let before = answer(&analysis::run_incremental(&c, now, &mut engine));
        // Only the clock moves, past the settling.
        let later = now + Duration::seconds(60);
        same(&c, later, &mut engine).unwrap();
        if answer(&analysis::run(&c, later)) != before {
            flipped += 1;
        }
    }
    assert!(flipped > 0, "a node settling moves some plan");
}

/// A node inside its pool's consolidateAfter counts down in seconds ("runs out in 9m59s"):
/// a pass a second later writes the countdown again, as the full pass does, without
/// judging the node again.
#[test]
fn a_countdown_is_written_again_without_judging_the_node_again() {
    let (mut c, now) = left_node_apart();
    // Each claim of the other pool: a pod event a minute ago, not Consolidatable yet.
    let mut p = c.nodepools[OTHERS].clone();
    p.spec.disruption.consolidate_after = Some("10m".into());
    c.apply_nodepool(p);
    for cl in c.nodeclaims.values().cloned().collect::<Vec<_>>() {
        if Cluster::pool_of(&cl.metadata.labels) != Some(OTHERS) {
            continue;
        }
        let mut cl = (*cl).clone();
        cl.status.last_pod_event_time = Some(now - Duration::minutes(1));
        cl.status
            .conditions
            .retain(|k| &*k.type_ != "Consolidatable");
        c.apply_nodeclaim(cl);
    }
    let mut engine = Incremental::default();
    let first = analysis::run_incremental(&c, now, &mut engine);
    let counting: Vec<&str> = first
        .nodes
        .iter()
        .filter(|(_, s)| s.consolidation.countdown.is_some())
        .map(|(n, _)| &**n)
        .collect();
    assert!(!counting.is_empty(), "a node counts down");
    let later = now + Duration::seconds(1);
    same(&c, later, &mut engine).unwrap();
    assert_eq!(engine.stats().computed, 0, "{:?}", engine.stats());
    let again = analysis::run_incremental(&c, later, &mut engine);
    for node in counting {
        let (was, is) = (
            &first.nodes[node].consolidation,
            &again.nodes[node].consolidation,
        );
        assert_ne!(was.message, is.message, "{node}");
        assert!(is.message.contains("runs out in"), "{}", is.message);
    }
}

/// A pod bound to `node` for the room tests: `cpu` requested, labelled `app`, and with a
/// required anti-affinity over zones against the pods `against` selects, in every
/// namespace.
fn probe(name: &str, node: &str, cpu: &str, app: &str, against: Option<&str>) -> Pod {
    let anti = against.map_or(String::new(), |sel| {
        format!(
            r#"
  affinity:
    podAntiAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
      - topologyKey: topology.kubernetes.io/zone
        namespaceSelector: {{}}
        labelSelector: {sel}"#
        )
    });
    let yaml = format!(
        r#"
apiVersion: v1
kind: Pod
metadata: {{name: {name}, namespace: default, uid: uid-{name}, labels: {{app: {app}}}}}
spec:
  nodeName: {node}
  containers: [{{name: c, resources: {{requests: {{cpu: "{cpu}"}}}}}}]{anti}
status: {{phase: Running}}
"#
    );
    let mut scratch = Cluster::default();
    kelp::source::load_str("probe.yaml", &yaml, &mut scratch).unwrap();
    scratch.pods.into_values().next().unwrap()
}

/// A bound pod's change reaches every plan that read its node's room, wherever that
/// node stands in the room's order: on each node of the demo in turn, a pod that takes
/// all its CPU; a second pod whose anti-affinity keeps every labelled pod out of the
/// zone, on a node already guarding it; and a pod that the moving pods' own
/// anti-affinity counts. After each change, and after it is undone, the incremental
/// pass equals a full one, and some of those changes do change a node's answer.
#[test]
fn a_room_change_reaches_every_plan_that_read_that_node() {
    let (mut c, now) = demo();
    let mut engine = Incremental::default();
    let check = |c: &Cluster, engine: &mut Incremental| {
        let inc = analysis::run_incremental(c, now, engine);
        let full = analysis::run(c, now);
        assert_eq!(inc.nodes, full.nodes);
        full.nodes
    };
    let mut before = check(&c, &mut engine);
    let mut changed = [0; 3];
    let names: Vec<String> = c.nodes.keys().cloned().collect();
    for node in &names {
        let cpu = c.nodes[node]
            .status
            .allocatable
            .get("cpu")
            .map_or("1".to_string(), |q| q.0.clone());
        // It takes every CPU of the node: the node drops to the end of the order.
        c.apply_pod(probe("fill", node, &cpu, "fill", None));
        let after = check(&c, &mut engine);
        changed[0] += usize::from(after != before);
        c.delete_pod("default", "fill");
        check(&c, &mut engine);
        // A guard that matches nothing, then a second one that keeps out every pod with
        // an app label: the node guards its zone before and after.
        let none = "{matchLabels: {app: no-such-app}}";
        c.apply_pod(probe("guard-a", node, "10m", "guard", Some(none)));
        before = check(&c, &mut engine);
        let every = "{matchExpressions: [{key: app, operator: Exists}]}";
        c.apply_pod(probe("guard-b", node, "10m", "guard", Some(every)));
        let after = check(&c, &mut engine);
        changed[1] += usize::from(after != before);
        c.delete_pod("default", "guard-b");
        c.delete_pod("default", "guard-a");
        before = check(&c, &mut engine);
    }
    // The pods of one node keep away, over zones, from pods labelled app=probe: a probe
    // on any other node is counted by that node's plan, however far it read the order.
    // Three nodes Karpenter could delete because their pods have a place elsewhere: what
    // they found depends on the room. (Each takes two passes per other node.)
    let candidate = analysis::disruption::consolidation::State::Candidate;
    let homes: Vec<&String> = names
        .iter()
        .filter(|n| {
            before
                .get(n.as_str())
                .is_some_and(|s| s.consolidation.state == candidate)
        })
        .filter(|n| c.pods_on(n).any(|p| !p.metadata.owned_by("DaemonSet")))
        .take(3)
        .collect();
    assert_eq!(homes.len(), 3, "the demo has such nodes");
    for home in homes {
        let keys: Vec<(String, String)> = c
            .pods_on(home)
            .map(|p| {
                let ns = p.metadata.namespace.as_deref().unwrap_or_default();
                (ns.to_string(), p.metadata.name.clone())
            })
            .collect();
        if keys.is_empty() {
            continue;
        }
        let anti = probe("x", "x", "1m", "x", Some("{matchLabels: {app: probe}}"));
        let saved: Vec<Pod> = keys.iter().map(|k| c.pods[k].clone()).collect();
        for mut p in saved.clone() {
            p.spec.affinity = anti.spec.affinity.clone();
            c.apply_pod(p);
        }
        before = check(&c, &mut engine);
        for node in names.iter().filter(|n| *n != home) {
            c.apply_pod(probe("probe", node, "10m", "probe", None));
            let after = check(&c, &mut engine);
            changed[2] += usize::from(after != before);
            c.delete_pod("default", "probe");
            before = check(&c, &mut engine);
        }
        for p in saved {
            c.apply_pod(p);
        }
        check(&c, &mut engine);
    }
    assert!(
        changed.iter().all(|n| *n > 0),
        "each kind of change moves some node's answer: {changed:?}"
    );
}

/// More changes between two passes than the model's journal keeps
/// ([`kelp::model::stamps::JOURNAL`]): the pass asks every node again, so the first
/// change, long gone from the journal, is still followed.
#[test]
fn a_burst_longer_than_the_journal_is_still_followed() {
    let (mut c, now) = demo();
    let mut engine = Incremental::default();
    same(&c, now, &mut engine).unwrap();
    let full_before = analysis::run(&c, now);
    // Two bound pods on two Karpenter nodes, the first on a node nothing blocks.
    let bound: Vec<_> = c
        .pods
        .iter()
        .filter_map(|(k, p)| {
            let node = p.spec.node_name.as_deref()?.to_string();
            let state = full_before.nodes.get(node.as_str())?;
            Some((k.clone(), node, state.blockers.is_empty()))
        })
        .collect();
    let (first, node, _) = bound.iter().find(|b| b.2).cloned().unwrap();
    let (other, _, _) = bound.iter().find(|b| b.1 != node).unwrap().clone();
    // The first change blocks its node's disruption...
    let mut p = c.pods[&first].clone();
    p.metadata
        .annotations
        .make_mut()
        .insert("karpenter.sh/do-not-disrupt".into(), "true".into());
    c.apply_pod(p);
    // ...then another node's pod changes more times than the journal keeps.
    for i in 0..kelp::model::stamps::JOURNAL + 8 {
        let mut p = c.pods[&other].clone();
        p.metadata
            .labels
            .make_mut()
            .insert("burst".into(), i.to_string());
        c.apply_pod(p);
    }
    let full = analysis::run(&c, now);
    assert_ne!(
        full.nodes.get(node.as_str()),
        full_before.nodes.get(node.as_str()),
        "the first change changes its node's state"
    );
    same(&c, now, &mut engine).unwrap();
}

/// A clock that steps back (a pass at an earlier instant than the last): every node's age
/// reads as of the earlier instant, as a full pass says.
#[test]
fn a_clock_stepping_back_gives_the_ages_of_then() {
    let (c, now) = demo();
    let mut engine = Incremental::default();
    same(&c, now + Duration::hours(2), &mut engine).unwrap();
    same(&c, now + Duration::minutes(1), &mut engine).unwrap();
    same(&c, now + Duration::seconds(1), &mut engine).unwrap();
}

/// A pod's wait crosses the five minutes after which it is critical, with nothing in the
/// model changing: the kept diagnosis is re-timed (its words change at most once a
/// second, a day-long wait's once an hour) and the finding turns critical, as a full
/// pass says, second by second.
#[test]
fn a_wait_crossing_five_minutes_turns_critical_with_no_change() {
    let (c, now) = demo();
    let since = analysis::run(&c, now)
        .pending
        .iter()
        .find_map(|d| d.since)
        .expect("a pending pod with a start");
    let mut engine = Incremental::default();
    let mut severities = Vec::new();
    for secs in [298, 299, 300, 301, 302] {
        let at = since + Duration::seconds(secs);
        same(&c, at, &mut engine).unwrap();
        let pass = analysis::run_incremental(&c, at, &mut engine);
        let d = pass
            .pending
            .iter()
            .find(|d| d.since == Some(since))
            .unwrap();
        let f = pass
            .report
            .findings
            .iter()
            .find(|f| f.object == d.pod)
            .expect("its finding");
        severities.push(f.severity.to_string());
    }
    assert_eq!(
        severities,
        ["warning", "warning", "warning", "critical", "critical"]
    );
}

/// A finding written from a kept answer (a pending pod's diagnosis, a node's disruption
/// state) is the last pass's finding handed on, not written again; the answer's change
/// writes it anew, and a full pass writes every finding.
#[test]
fn a_kept_answer_hands_on_its_finding() {
    use kelp::findings::Code;
    use std::sync::Arc;
    let (mut c, now) = demo();
    let mut engine = Incremental::default();
    let first = analysis::run_incremental(&c, now, &mut engine);
    let of = |p: &analysis::Pass, code: Code| -> Vec<Arc<kelp::findings::Finding>> {
        p.report
            .findings
            .iter()
            .filter(|f| f.code == code)
            .cloned()
            .collect()
    };
    let handed_on = |a: &[Arc<kelp::findings::Finding>], b: &[Arc<kelp::findings::Finding>]| {
        a.iter()
            .filter(|f| b.iter().any(|g| Arc::ptr_eq(f, g)))
            .count()
    };
    for code in [
        Code::PodUnschedulable,
        Code::DisruptionBlocked,
        Code::ConsolidationBlocked,
    ] {
        let before = of(&first, code);
        assert!(!before.is_empty(), "the demo has {code}");
        let again = analysis::run_incremental(&c, now, &mut engine);
        assert_eq!(
            handed_on(&of(&again, code), &before),
            before.len(),
            "{code}"
        );
        let full = analysis::run(&c, now);
        assert_eq!(
            handed_on(&of(&full, code), &before),
            0,
            "{code}: a full pass"
        );
    }
    // One pending pod relabelled: its finding is written anew, the others handed on.
    let before = of(
        &analysis::run_incremental(&c, now, &mut engine),
        Code::PodUnschedulable,
    );
    let pod = before[0].object.clone();
    relabel(
        &mut c,
        &(pod.namespace.clone().unwrap_or_default(), pod.name.clone()),
    );
    let after = of(
        &analysis::run_incremental(&c, now, &mut engine),
        Code::PodUnschedulable,
    );
    assert_eq!(after.len(), before.len());
    assert_eq!(handed_on(&after, &before), before.len() - 1);
    let mine = after.iter().find(|f| f.object == pod).expect("its finding");
    assert!(!before.iter().any(|f| Arc::ptr_eq(f, mine)));
    // A day later every consolidation-blocked finding's "Consolidatable for" changes
    // words: each is written anew, as the full pass writes it.
    let before = of(
        &analysis::run_incremental(&c, now, &mut engine),
        Code::ConsolidationBlocked,
    );
    let later = now + chrono::Duration::days(1);
    let after = of(
        &analysis::run_incremental(&c, later, &mut engine),
        Code::ConsolidationBlocked,
    );
    assert_eq!(handed_on(&after, &before), 0);
    let words = |fs: &[Arc<kelp::findings::Finding>]| -> Vec<String> {
        fs.iter().map(|f| f.message.clone()).collect()
    };
    assert_eq!(
        words(&after),
        words(&of(&analysis::run(&c, later), Code::ConsolidationBlocked))
    );
    assert_ne!(words(&after), words(&before));
}

/// Karpenter's settings (its controller pods' inline environment) are read by every
/// answer of its simulation: a change of one has every node judged afresh, and the
/// incremental pass still equals a full one. A change of the controller pod that leaves
/// them alone keeps what the other nodes had.
#[test]
fn a_change_of_karpenters_settings_judges_every_node_again() {
    let (mut c, now) = demo();
    let key = c
        .controller_pods()
        .map(|p| {
            let ns = p.metadata.namespace.as_deref().unwrap_or_default();
            (ns.to_string(), p.metadata.name.clone())
        })
        .next()
        .expect("the demo runs Karpenter");
    let mut engine = Incremental::default();
    same(&c, now, &mut engine).unwrap();
    let edit = |c: &mut Cluster, f: &dyn Fn(&mut Pod)| {
        let mut p = c.pods[&key].clone();
        f(&mut p);
        c.apply_pod(p);
    };
    // Its start time only: the other nodes keep their states.
    edit(&mut c, &|p| p.status.start_time = Some(now));
    same(&c, now, &mut engine).unwrap();
    assert!(engine.stats().reused > 0, "{:?}", engine.stats());
    edit(&mut c, &|p| {
        let spec = p.spec.scheduling.make_mut();
        spec.containers.make_mut()[0]
            .env
            .push(kelp::model::container::EnvVar {
                name: "PREFERENCE_POLICY".into(),
                value: "Ignore".into(),
            });
    });
    assert_eq!(c.karpenter_setting("PREFERENCE_POLICY"), Some("Ignore"));
    same(&c, now, &mut engine).unwrap();
    assert_eq!(engine.stats().reused, 0, "{:?}", engine.stats());
    assert!(engine.stats().computed > 0, "{:?}", engine.stats());
}

/// The AWS catalogue (every type of Karpenter's metrics, computed as the provider does, about
/// 9 ms for 1,386 types) is resolved again only when what it reads changed: the metrics and
/// the classes (global), the pools, the nodes. A pod's change keeps the very same one.
#[test]
fn the_catalogue_is_kept_while_only_pods_change() {
    let (mut c, now) = demo();
    let mut engine = Incremental::default();
    let first = analysis::run_incremental(&c, now, &mut engine).catalog;
    let first = first.expect("the demo's AWS metrics give a catalogue");
    let key = bound_pod(&c);
    relabel(&mut c, &key);
    let second = analysis::run_incremental(&c, now, &mut engine)
        .catalog
        .unwrap();
    assert!(
        std::sync::Arc::ptr_eq(&first, &second),
        "resolved again for a pod"
    );
    // A node's change may bring a type's memory (the provider learns it from a node).
    let node = c.nodes.values().next().unwrap().clone();
    c.apply_node(node);
    let third = analysis::run_incremental(&c, now, &mut engine)
        .catalog
        .unwrap();
    assert!(
        !std::sync::Arc::ptr_eq(&second, &third),
        "kept across a node's change"
    );
    assert_eq!(*third, *analysis::run(&c, now).catalog.unwrap());
}
