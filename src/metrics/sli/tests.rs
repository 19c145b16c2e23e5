use super::*;
use crate::metrics::common::label_value;

const T0: &str = "2026-11-21T10:00:00Z";

fn t(offset_s: i64) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(T0)
        .unwrap()
        .with_timezone(&Utc)
        + Duration::seconds(offset_s)
}

fn ts(offset_s: i64) -> String {
    t(offset_s).to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

fn pool(name: &str) -> String {
    format!(
        r#"
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {{name: {name}, uid: np-{name}}}
spec:
  limits: {{cpu: "10", nodes: "4"}}
  template:
    spec:
      nodeClassRef: {{group: karpenter.kwok.sh, kind: KWOKNodeClass, name: default}}
      requirements: [{{key: kubernetes.io/os, operator: In, values: [linux]}}]
status:
  resources: {{cpu: "4"}}
  nodes: 1
  conditions: [{{type: Ready, status: "True"}}]
"#
    )
}

fn node(name: &str, pool: &str, created: i64, extra: &str) -> String {
    format!(
        r#"
apiVersion: v1
kind: Node
metadata:
  name: {name}
  uid: uid-{name}
  creationTimestamp: "{}"
  labels:
    karpenter.sh/nodepool: {pool}
    karpenter.sh/capacity-type: on-demand
    eks-node-viewer/instance-price: "0.25"
spec:
  providerID: kwok://{name}
{extra}
"#,
        ts(created)
    )
}

fn claim(name: &str, pool: &str, node: &str, created: i64, conditions: &str) -> String {
    format!(
        r#"
apiVersion: karpenter.sh/v1
kind: NodeClaim
metadata:
  name: {name}
  uid: uid-{name}
  creationTimestamp: "{}"
  labels: {{karpenter.sh/nodepool: {pool}, karpenter.sh/capacity-type: on-demand}}
status:
  nodeName: {node}
  providerID: kwok://{node}
  conditions:
{conditions}
"#,
        ts(created)
    )
}

fn cond(type_: &str, status: &str, reason: &str, at: i64) -> String {
    format!(
            "  - {{type: {type_}, status: \"{status}\", reason: {reason}, lastTransitionTime: \"{}\"}}\n",
            ts(at)
        )
}

fn pod(name: &str, node: &str, created: i64, bound: i64, extra_meta: &str) -> String {
    format!(
        r#"
apiVersion: v1
kind: Pod
metadata:
  name: {name}
  namespace: web
  uid: uid-{name}
  creationTimestamp: "{}"
{extra_meta}
spec:
  nodeName: {node}
  containers: [{{name: a, resources: {{requests: {{cpu: 100m}}}}}}]
status:
  phase: Running
  conditions: [{{type: PodScheduled, status: "True", lastTransitionTime: "{}"}}]
"#,
        ts(created),
        ts(bound)
    )
}

fn event(name: &str, kind: &str, obj: &str, uid: &str, reason: &str, msg: &str, at: i64) -> String {
    let ns = if kind == "Pod" { "namespace: web" } else { "" };
    format!(
        r#"
apiVersion: v1
kind: Event
metadata: {{name: {name}, namespace: default, uid: ev-{name}}}
involvedObject: {{kind: {kind}, name: {obj}, uid: {uid}, {ns}}}
reason: {reason}
message: "{msg}"
type: Normal
source: {{component: karpenter}}
firstTimestamp: "{at}"
lastTimestamp: "{at}"
"#,
        at = ts(at)
    )
}

/// A pool `web` with a node launched for a pod, a failed launch, an ICE event, a
/// disruption event and a few pods that must not count.
fn cluster_docs() -> Vec<String> {
    let conds = [
        cond("Launched", "True", "Launched", -95),
        cond("Registered", "True", "Registered", -60),
        cond("Initialized", "True", "Initialized", -40),
    ]
    .concat();
    vec![
        pool("web"),
        node("n1", "web", -60, ""),
        claim("web-abc", "web", "n1", -100, &conds),
        // An old node without a claim.
        node("n0", "web", -5 * 3600, ""),
        // Waited for n1, created after the pod: 90s from creation to bound.
        pod("web-0", "n1", -120, -30, ""),
        // Bound to the old node after a FailedScheduling: 45s.
        pod("evt-0", "n0", -100, -55, ""),
        event(
            "fs",
            "Pod",
            "evt-0",
            "uid-evt-0",
            "FailedScheduling",
            "Failed to schedule pod, x",
            -90,
        ),
        // Created after the node and never waited: not counted.
        pod("pre-0", "n1", -50, -49, ""),
        // Bound three hours ago: before the window.
        pod("old-0", "n1", -3 * 3600 - 100, -3 * 3600, ""),
        // DaemonSet pods are never provisioned for.
        pod(
            "ds-0",
            "n1",
            -120,
            -30,
            "  ownerReferences: [{kind: DaemonSet, name: ds, uid: d1}]",
        ),
        // A failed launch and a launch error on a claim already deleted.
        claim(
            "web-bad",
            "web",
            "",
            -700,
            &cond("Launched", "Unknown", "LaunchFailed", -650),
        ),
        event(
            "ice",
            "NodeClaim",
            "web-gone",
            "uid-web-gone",
            "InsufficientCapacityError",
            "NodeClaim web-gone event: insufficient capacity",
            -300,
        ),
        event(
            "dis",
            "NodeClaim",
            "web-old",
            "uid-web-old",
            "DisruptionTerminating",
            "Disrupting NodeClaim: Drifted",
            -200,
        ),
    ]
}

fn load(docs: &[String]) -> Cluster {
    let mut c = Cluster::default();
    crate::source::load_str("test", &docs.join("\n---\n"), &mut c).unwrap();
    c
}

fn pass(sli: &Sli, c: &Cluster, at: i64) {
    let now = t(at);
    sli.update(&crate::analysis::run(c, now), c, now);
}

fn scrape(sli: &Sli) -> String {
    let mut r = Registry::default();
    sli.register(&mut r);
    crate::metrics::encode(&r).unwrap()
}

/// The value of the one line of `metric` with exactly these labels.
fn value(text: &str, metric: &str, labels: &str) -> Option<f64> {
    let prefix = format!("{metric}{{{labels}}} ");
    text.lines()
        .find_map(|l| l.strip_prefix(&prefix))
        .map(|v| v.parse().unwrap())
}

fn counts(text: &str) -> Vec<&str> {
    let mut v: Vec<&str> = text
        .lines()
        .filter(|l| {
            l.starts_with("karpenter_helper_")
                && !l.starts_with("karpenter_helper_unschedulable")
                && !l.starts_with("karpenter_helper_drifted")
                && !l.starts_with("karpenter_helper_disruption_blocked")
                && !l.starts_with("karpenter_helper_unconsolidated")
                && !l.starts_with("karpenter_helper_nodepool_")
        })
        .collect();
    v.sort();
    v
}

#[test]
fn every_occurrence_is_counted_once_across_passes_and_relists() {
    let sli = Sli::default();
    let c = load(&cluster_docs());
    pass(&sli, &c, 0);
    let first = scrape(&sli);
    let lat = defs::POD_PROVISIONING_LATENCY.name;
    assert_eq!(
        value(&first, &format!("{lat}_count"), "nodepool=\"web\""),
        Some(2.0),
        "{first}"
    );
    assert_eq!(
        value(&first, &format!("{lat}_sum"), "nodepool=\"web\""),
        Some(135.0)
    );
    let np = defs::NODE_PROVISIONING.name;
    let labels = "nodepool=\"web\",capacity_type=\"on-demand\"";
    assert_eq!(value(&first, &format!("{np}_count"), labels), Some(1.0));
    assert_eq!(value(&first, &format!("{np}_sum"), labels), Some(60.0));
    let lf = defs::LAUNCH_FAILURES.name;
    assert_eq!(
        value(&first, lf, "nodepool=\"web\",reason=\"LaunchFailed\""),
        Some(1.0),
        "{first}"
    );
    assert_eq!(
        value(
            &first,
            lf,
            "nodepool=\"web\",reason=\"InsufficientCapacityError\""
        ),
        Some(1.0)
    );
    let churn = defs::NODE_CHURN.name;
    for event in ["launched", "registered", "initialized"] {
        let l = format!("nodepool=\"web\",event=\"{event}\",reason=\"\"");
        assert_eq!(value(&first, churn, &l), Some(1.0), "{event}: {first}");
    }
    let l = "nodepool=\"web\",event=\"disrupted\",reason=\"drifted\"";
    assert_eq!(value(&first, churn, l), Some(1.0), "{first}");

    // The same model again, and a relist (a fresh model of the same objects), later.
    pass(&sli, &c, 60);
    pass(&sli, &load(&cluster_docs()), 120);
    assert_eq!(counts(&first), counts(&scrape(&sli)));
}

#[test]
fn a_node_whose_pods_changed_is_read_again_for_latencies() {
    // Only an old pod on n0: the node is skipped from then on.
    let mut c = load(&[
        pool("web"),
        node("n0", "web", -5 * 3600, ""),
        pod("old-0", "n0", -4 * 3600, -4 * 3600, ""),
    ]);
    let mut scans = LatencyScans::default();
    assert!(pod_latencies_with(&c, t(0), &mut scans).found.is_empty());
    // A pod that waited for capacity binds there: the kept newest time must not hide it.
    let mut more = Cluster::default();
    let doc = pod("late-0", "n0", -100, -10, "");
    crate::source::load_str("test", &doc, &mut more).unwrap();
    c.apply_pod(more.pods.values().next().unwrap().clone());
    c.apply_event(
        load(&[event(
            "fs",
            "Pod",
            "late-0",
            "uid-late-0",
            "FailedScheduling",
            "x",
            -90,
        )])
        .events
        .into_values()
        .next()
        .map(Arc::unwrap_or_clone)
        .unwrap(),
    );
    let kept: Vec<String> = pod_latencies_with(&c, t(0), &mut scans)
        .found
        .into_iter()
        .map(|o| o.key)
        .collect();
    let fresh: Vec<String> = pod_latencies(&c, t(0)).into_iter().map(|o| o.key).collect();
    assert_eq!(kept, vec!["pod-latency/uid-late-0".to_string()]);
    assert_eq!(kept, fresh);
    // An hour on, nothing is recent any more.
    assert!(pod_latencies_with(&c, t(3700), &mut scans).found.is_empty());
}

#[test]
fn a_node_read_before_is_read_again_only_when_it_or_its_pods_events_change() {
    // A pod bound 10 minutes ago on a node older than it: it did not wait, yet.
    let mut c = load(&[
        pool("web"),
        node("n0", "web", -5 * 3600, ""),
        pod("p-0", "n0", -700, -600, ""),
    ]);
    let mut scans = LatencyScans::default();
    let first = pod_latencies_with(&c, t(0), &mut scans);
    assert!(first.found.is_empty() && first.still_seen.is_empty());
    // Karpenter's event about it arrives late, nothing else changes: it is read again.
    let late = load(&[event(
        "fs",
        "Pod",
        "p-0",
        "uid-p-0",
        "FailedScheduling",
        "x",
        -650,
    )]);
    c.apply_event(Arc::unwrap_or_clone(
        late.events.into_values().next().unwrap(),
    ));
    let second = pod_latencies_with(&c, t(10), &mut scans);
    let keys: Vec<&str> = second.found.iter().map(|o| o.key.as_str()).collect();
    assert_eq!(keys, ["pod-latency/uid-p-0"]);
    assert_eq!(keys.len(), pod_latencies(&c, t(10)).len());
    // Nothing changed since: not read again, its pool's series still seen while the
    // pod is within the window, and not after.
    let third = pod_latencies_with(&c, t(20), &mut scans);
    assert!(third.found.is_empty());
    let web = SliSeries::PodLatency(PoolLabels {
        nodepool: "web".into(),
    });
    assert_eq!(third.still_seen, [web]);
    let later = pod_latencies_with(&c, t(3100), &mut scans);
    assert!(later.found.is_empty() && later.still_seen.is_empty());
}

/// With only pods changed since (no event, no node), a scan reads just their nodes:
/// what it finds there, and the other nodes' counted series still seen, are what a
/// scan of every node would say.
#[test]
fn only_pods_changed_reads_their_nodes_alone() {
    // w-0 waited for n0 (the node is newer than the pod); n1, new too, is empty.
    let mut c = load(&[
        pool("web"),
        pool("batch"),
        node("n0", "web", -300, ""),
        pod("w-0", "n0", -400, -200, ""),
        node("n1", "batch", -60, ""),
    ]);
    let keys = |l: &Latencies| -> Vec<String> { l.found.iter().map(|o| o.key.clone()).collect() };
    let series = |pool: &str| {
        SliSeries::PodLatency(PoolLabels {
            nodepool: pool.into(),
        })
    };
    let mut scans = LatencyScans::default();
    let first = pod_latencies_with(&c, t(0), &mut scans);
    assert_eq!(keys(&first), ["pod-latency/uid-w-0"]);
    // A pod that waited for n1 binds there: found on n1; n0 is kept, still seen.
    let mut more = Cluster::default();
    crate::source::load_str("test", &pod("late-1", "n1", -100, -10, ""), &mut more).unwrap();
    c.apply_pod(more.pods.values().next().unwrap().clone());
    let second = pod_latencies_with(&c, t(10), &mut scans);
    assert_eq!(keys(&second), ["pod-latency/uid-late-1"]);
    assert_eq!(second.still_seen, [series("web")]);
    let all: Vec<String> = pod_latencies(&c, t(10))
        .into_iter()
        .map(|o| o.key)
        .collect();
    assert_eq!(all, ["pod-latency/uid-w-0", "pod-latency/uid-late-1"]);
    // w-0 deleted: n0 is read again and counts nothing; n1's series is still seen.
    c.delete_pod("web", "w-0");
    let third = pod_latencies_with(&c, t(20), &mut scans);
    assert!(third.found.is_empty());
    assert_eq!(third.still_seen, [series("batch")]);
    // Nothing changed, an hour on: nothing is within the window.
    let later = pod_latencies_with(&c, t(3700), &mut scans);
    assert!(later.found.is_empty() && later.still_seen.is_empty());
}

/// Applies every object of `docs` to `c`, as watch events would.
fn apply(c: &mut Cluster, docs: &[String]) {
    let more = load(docs);
    for e in more.events.into_values() {
        c.apply_event(Arc::unwrap_or_clone(e));
    }
    for cl in more.nodeclaims.into_values() {
        c.apply_nodeclaim(Arc::unwrap_or_clone(cl));
    }
}

#[test]
fn a_kept_scan_gives_what_a_scan_gives_as_time_passes_and_the_model_changes() {
    let mut c = load(&cluster_docs());
    let mut kept: [Kept; 3] = Default::default();
    type Scan = fn(&Cluster, DateTime<Utc>) -> Vec<Occurrence>;
    let scans: [(Scan, bool); 3] = [
        (node_provisioning, false),
        (launch_failures, true),
        (churn, true),
    ];
    let mut check = |c: &Cluster, at: i64| -> usize {
        let now = t(at);
        let mut n = 0;
        for ((scan, events), k) in scans.iter().zip(kept.iter_mut()) {
            let seen = |o: &Occurrence| (o.key.clone(), o.until(now));
            let token = claims_token(c.stamps(), *events);
            let got: Vec<_> = k
                .current(token, now, || scan(c, now))
                .iter()
                .map(seen)
                .collect();
            let want: Vec<_> = scan(c, now).iter().map(seen).collect();
            assert_eq!(got, want, "at {at}s");
            n += got.len();
        }
        n
    };
    // Time alone: finds leave the window one by one (the failed launch at -650 s, the
    // ICE event at -300 s, ...), and a find's window does not move.
    let first = check(&c, 0);
    check(&c, 600);
    let late = check(&c, 3350);
    assert!(0 < late && late < first, "{late} of {first}");
    // Only an event changes: the scans that read events scan again.
    apply(
        &mut c,
        &[event(
            "ice2",
            "NodeClaim",
            "web-new",
            "uid-web-new",
            "InsufficientCapacityError",
            "NodeClaim web-new event: insufficient capacity",
            3350,
        )],
    );
    assert_eq!(check(&c, 3360), late + 1);
    // A NodeClaim initialized: the scans of claims scan again.
    let conds = [
        cond("Launched", "True", "Launched", 3345),
        cond("Initialized", "True", "Initialized", 3365),
    ]
    .concat();
    apply(&mut c, &[claim("web-new", "web", "n9", 3340, &conds)]);
    // Its provisioning, launch and initialization.
    assert_eq!(check(&c, 3370), late + 4);
}

#[test]
fn a_change_of_events_or_claims_alone_is_counted_on_the_next_pass() {
    let sli = Sli::default();
    let mut c = load(&cluster_docs());
    pass(&sli, &c, 0);
    pass(&sli, &c, 10);
    apply(
        &mut c,
        &[
            event(
                "ice2",
                "NodeClaim",
                "web-gone2",
                "uid-web-gone2",
                "InsufficientCapacityError",
                "x",
                15,
            ),
            event(
                "dis2",
                "NodeClaim",
                "web-old2",
                "uid-web-old2",
                "DisruptionTerminating",
                "Disrupting NodeClaim: Drifted",
                15,
            ),
        ],
    );
    pass(&sli, &c, 20);
    let text = scrape(&sli);
    let lf = defs::LAUNCH_FAILURES.name;
    let ice = "nodepool=\"web\",reason=\"InsufficientCapacityError\"";
    assert_eq!(value(&text, lf, ice), Some(2.0), "{text}");
    let churn = defs::NODE_CHURN.name;
    let drifted = "nodepool=\"web\",event=\"disrupted\",reason=\"drifted\"";
    assert_eq!(value(&text, churn, drifted), Some(2.0), "{text}");
    let conds = cond("Initialized", "True", "Initialized", 25);
    apply(&mut c, &[claim("web-new", "web", "n9", -20, &conds)]);
    pass(&sli, &c, 30);
    let text = scrape(&sli);
    let np = format!("{}_count", defs::NODE_PROVISIONING.name);
    let labels = "nodepool=\"web\",capacity_type=\"on-demand\"";
    assert_eq!(value(&text, &np, labels), Some(2.0), "{text}");
    let l = "nodepool=\"web\",event=\"initialized\",reason=\"\"";
    assert_eq!(value(&text, churn, l), Some(2.0), "{text}");
}

#[test]
fn histograms_put_each_observation_in_its_bucket() {
    let sli = Sli::default();
    pass(&sli, &load(&cluster_docs()), 0);
    let text = scrape(&sli);
    let b = format!("{}_bucket", defs::POD_PROVISIONING_LATENCY.name);
    // 45s and 90s.
    assert_eq!(
        value(&text, &b, "le=\"30.0\",nodepool=\"web\""),
        Some(0.0),
        "{text}"
    );
    assert_eq!(value(&text, &b, "le=\"45.0\",nodepool=\"web\""), Some(1.0));
    assert_eq!(value(&text, &b, "le=\"90.0\",nodepool=\"web\""), Some(2.0));
    assert_eq!(value(&text, &b, "le=\"300.0\",nodepool=\"web\""), Some(2.0));
    let b = format!("{}_bucket", defs::NODE_PROVISIONING.name);
    let l = |le: &str| format!("le=\"{le}\",nodepool=\"web\",capacity_type=\"on-demand\"");
    assert_eq!(value(&text, &b, &l("45.0")), Some(0.0), "{text}");
    assert_eq!(value(&text, &b, &l("60.0")), Some(1.0));
}

/// The taint Karpenter puts on a node it drains.
const DISRUPTED: &str = "  taints: [{key: karpenter.sh/disrupted, effect: NoSchedule}]";

/// Karpenter's event evicting pod `victim` for drift, at `at`.
fn victim_evicted(at: i64) -> String {
    event(
        "ev",
        "Pod",
        "victim",
        "uid-victim",
        "Evicted",
        "Evicted pod: Drifted",
        at,
    )
}

#[test]
fn deleted_claims_and_evictions_are_counted_once() {
    let sli = Sli::default();
    let mut docs = cluster_docs();
    // A node being drained, with a pod on it.
    docs.push(node("n2", "web", -4000, DISRUPTED));
    docs.push(pod("victim", "n2", -4000, -3990, ""));
    pass(&sli, &load(&docs), 0);
    // Drained: the pod and the node are gone, Karpenter's event stays; web-abc is deleted.
    let mut later = cluster_docs();
    later.retain(|d| !d.contains("name: web-abc"));
    later.push(victim_evicted(5));
    let c = load(&later);
    pass(&sli, &c, 10);
    pass(&sli, &c, 20);
    pass(&sli, &load(&later), 30);
    let text = scrape(&sli);
    let churn = defs::NODE_CHURN.name;
    assert_eq!(
        value(
            &text,
            churn,
            "nodepool=\"web\",event=\"deleted\",reason=\"\""
        ),
        Some(1.0),
        "{text}"
    );
    let ev = defs::EVICTIONS.name;
    assert_eq!(
        value(&text, ev, "nodepool=\"web\",reason=\"drifted\""),
        Some(1.0),
        "{text}"
    );
    // Unknown pools stay unnamed rather than guessed.
    let sli = Sli::default();
    pass(&sli, &c, 10);
    assert_eq!(
        value(&scrape(&sli), ev, "nodepool=\"\",reason=\"drifted\""),
        Some(1.0)
    );
}

/// A node that begins to drain in a model kept between passes (as serve's is) is seen
/// draining: the eviction seen after its pod is gone names its pool.
#[test]
fn a_node_that_starts_draining_in_a_kept_model_names_its_evictions_pool() {
    let sli = Sli::default();
    let mut docs = cluster_docs();
    docs.push(node("n2", "web", -4000, ""));
    docs.push(pod("victim", "n2", -4000, -3990, ""));
    let mut c = load(&docs);
    pass(&sli, &c, 0);
    let tainted = load(&[node("n2", "web", -4000, DISRUPTED)])
        .nodes
        .remove("n2")
        .unwrap();
    c.apply_node(tainted);
    pass(&sli, &c, 5);
    c.delete_pod("web", "victim");
    c.delete_node("n2");
    let ev = load(&[victim_evicted(8)])
        .events
        .into_values()
        .next()
        .unwrap();
    c.apply_event(Arc::unwrap_or_clone(ev));
    pass(&sli, &c, 10);
    let text = scrape(&sli);
    assert_eq!(
        value(
            &text,
            defs::EVICTIONS.name,
            "nodepool=\"web\",reason=\"drifted\""
        ),
        Some(1.0),
        "{text}"
    );
}

#[test]
fn series_go_after_the_ttl_once_their_pool_is_gone() {
    let sli = Sli::new(std::time::Duration::from_secs(3600));
    pass(&sli, &load(&cluster_docs()), 0);
    let lat = format!("{}_count", defs::POD_PROVISIONING_LATENCY.name);
    assert!(value(&scrape(&sli), &lat, "nodepool=\"web\"").is_some());
    // Only the pool is left, for hours: its series stay (a counter must not vanish).
    let only_pool = load(&[pool("web")]);
    pass(&sli, &only_pool, 3 * 3600);
    // Only the two deletions just seen are remembered: the rest left the window.
    assert_eq!(sli.remembered(), 2);
    pass(&sli, &only_pool, 5 * 3600);
    assert!(value(&scrape(&sli), &lat, "nodepool=\"web\"").is_some());
    assert_eq!(
        sli.remembered(),
        0,
        "occurrences older than the window are forgotten"
    );
    // The pool goes too: the series stay for the TTL, then go.
    let empty = Cluster::default();
    pass(&sli, &empty, 5 * 3600 + 300);
    pass(&sli, &empty, 5 * 3600 + 3000);
    assert!(value(&scrape(&sli), &lat, "nodepool=\"web\"").is_some());
    pass(&sli, &empty, 5 * 3600 + 3700);
    let text = scrape(&sli);
    assert!(!text.contains("nodepool=\"web\""), "{text}");
}

#[test]
fn what_happened_before_the_window_is_not_counted_at_start() {
    let sli = Sli::default();
    // kelp starts two hours after everything happened.
    pass(&sli, &load(&cluster_docs()), 2 * 3600);
    let text = scrape(&sli);
    assert!(counts(&text).is_empty(), "{text}");
    assert_eq!(sli.remembered(), 0);
}

#[test]
fn the_picture_of_now_shows_only_the_latest_pass() {
    let sli = Sli::default();
    let mut docs = cluster_docs();
    docs.push(pool("empty"));
    pass(&sli, &load(&docs), 0);
    let text = scrape(&sli);
    // The node count is the model's tally's (`crate::model::tally`), not the pass's.
    assert!(!text.contains(defs::NODEPOOL_NODES.name), "{text}");
    let ratio = defs::NODEPOOL_USAGE_RATIO.name;
    assert_eq!(
        value(&text, ratio, "nodepool=\"web\",resource=\"cpu\""),
        Some(0.4)
    );
    // Its two nodes of a limit of four, like the node count (the status still says one).
    assert_eq!(
        value(&text, ratio, "nodepool=\"web\",resource=\"nodes\""),
        Some(0.5)
    );
    let cost = defs::NODEPOOL_COST.name;
    assert_eq!(
        value(&text, cost, "nodepool=\"web\",capacity_type=\"on-demand\""),
        Some(0.5)
    );
    assert_eq!(
        value(&text, defs::DRIFTED_NODES.name, "nodepool=\"web\""),
        Some(0.0)
    );
    // The pool "empty" is deleted: its series go with the next pass.
    pass(&sli, &load(&cluster_docs()), 10);
    let text = scrape(&sli);
    assert!(!text.contains("nodepool=\"empty\""), "{text}");
    assert!(text.contains(&format!("# TYPE {} gauge", defs::DRIFTED_NODES.name)));
}

#[test]
fn the_pools_cost_follows_a_node_changed_or_gone_on_the_same_model() {
    let sli = Sli::default();
    let mut c = load(&cluster_docs());
    let cost = defs::NODEPOOL_COST.name;
    let web = "nodepool=\"web\",capacity_type=\"on-demand\"";
    pass(&sli, &c, 0);
    assert_eq!(value(&scrape(&sli), cost, web), Some(0.5));
    // Nothing changed: the same sum.
    pass(&sli, &c, 5);
    assert_eq!(value(&scrape(&sli), cost, web), Some(0.5));
    // One node's price goes up: the sum is taken again.
    let mut n = c.nodes.values().next().unwrap().clone();
    n.metadata
        .labels
        .make_mut()
        .insert("eks-node-viewer/instance-price".into(), "1.25".into());
    let name = n.metadata.name.clone();
    c.apply_node(n);
    pass(&sli, &c, 10);
    assert_eq!(value(&scrape(&sli), cost, web), Some(1.5));
    // And that node goes.
    c.delete_node(&name);
    pass(&sli, &c, 15);
    assert_eq!(value(&scrape(&sli), cost, web), Some(0.25));
}

#[test]
fn free_text_never_makes_unbounded_labels() {
    assert_eq!(disruption_reason(" Drifted/Replace"), "drifted");
    assert_eq!(disruption_reason(""), "other");
    assert_eq!(label_value("a b"), "other");
    assert_eq!(label_value(&"x".repeat(65)), "other");
    assert_eq!(
        label_value("InsufficientCapacityError"),
        "InsufficientCapacityError"
    );
}
