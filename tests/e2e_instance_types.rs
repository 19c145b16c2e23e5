//! End to end, on the real control plane with the real Karpenter (kwok provider): the
//! instance-type dimension of kelp's verdict, computed from the kwok provider's built-in
//! types, agrees with Karpenter before its event exists and after. Each scenario reads
//! kelp's verdict right after the pod is created (Karpenter batches pending pods for at
//! least a second before it writes anything), then waits for Karpenter's FailedScheduling
//! event or its launch and checks the two agree:
//! - a pod bigger than every instance type;
//! - a pod only the biggest types hold: kelp's predicted type is the one Karpenter launches;
//! - a DaemonSet's overhead that tips a pod over every type;
//! - an architecture the pool allows but no instance type offers;
//! - pod-level requests (`spec.resources`) bigger than every type, over small containers.
//!
//! Without a running testenv these tests say so and pass, unless `KELP_E2E=1`.

mod common;

use common::*;
use serde_json::Value;

/// A scenario's pool with a high CPU limit (the big types must stay within it).
fn big_pool(name: &str, requirements: &str) -> String {
    pool_with(
        name,
        name,
        requirements,
        "",
        "2000",
        "{consolidationPolicy: WhenEmpty, consolidateAfter: 10m}",
    )
}

/// kelp's verdict for the scenario's own pool, with the diagnosis it came in.
fn kelp_verdict(e: &Env, ns: &str, pod: &str, pool: &str) -> (Value, Value) {
    let why = e.kelp_json(&["why", "pod", &format!("{ns}/{pod}")]);
    let v = verdict(&why, pool).clone();
    (v, why["diagnosis"].clone())
}

/// kelp's verdict once Karpenter's FailedScheduling event is in its diagnosis.
fn verdict_with_event(e: &Env, ns: &str, pod: &str, pool: &str) -> (Value, String) {
    wait_for(
        &format!("Karpenter's event about {ns}/{pod}"),
        2 * MINUTES,
        || {
            let (v, d) = kelp_verdict(e, ns, pod, pool);
            let m = d["event"]["message"].as_str()?.to_string();
            Some((v, m))
        },
    )
}

/// The first look: before Karpenter has written anything about the pod.
fn before_event(e: &Env, ns: &str, pod: &str, pool: &str) -> Value {
    let (v, d) = kelp_verdict(e, ns, pod, pool);
    assert!(
        d["event"].is_null(),
        "Karpenter wrote its event before kelp's first look (the check needs kelp first): {d:#}"
    );
    v
}

fn message(v: &Value) -> &str {
    v["reasons"][0]["message"].as_str().unwrap_or_default()
}

#[test]
fn a_pod_bigger_than_every_instance_type_is_rejected_before_karpenter_says_so() {
    let Some(e) = env() else { return };
    let id = run_id();
    let (ns, scenario) = ("e2e-it-huge", format!("it-huge-{id}"));
    namespace(&e, ns);
    e.apply(&big_pool(&scenario, ""));
    e.apply(&pod(ns, &format!("huge-{id}"), &scenario, "300", ""));
    let name = format!("huge-{id}");
    too_big_before_and_after(&e, ns, &name, &scenario);
}

/// kelp rejects the pool for the pod's size before Karpenter's event, and the event, when
/// it comes, says the same: kelp computed it, the event only agrees.
fn too_big_before_and_after(e: &Env, ns: &str, name: &str, scenario: &str) {
    let v = before_event(e, ns, name, scenario);
    assert_eq!(v["verdict"], "rejected", "{v:#}");
    assert_eq!(v["reasons"][0]["category"], "instance-types", "{v:#}");
    assert!(
        message(&v).starts_with("no instance type has enough resources"),
        "{v:#}"
    );
    let (after, event) = verdict_with_event(e, ns, name, scenario);
    assert!(
        event.contains("no instance type has enough resources"),
        "Karpenter: {event}"
    );
    assert_eq!(after["verdict"], "rejected");
    assert_eq!(after["eventAgrees"], true, "{after:#}");
    assert_eq!(
        after["source"], "kelp",
        "kelp computed it; the event only agrees"
    );
}

#[test]
fn a_pod_only_the_biggest_types_hold_launches_the_type_kelp_predicted() {
    let Some(e) = env() else { return };
    let id = run_id();
    let (ns, scenario) = ("e2e-it-big", format!("it-big-{id}"));
    namespace(&e, ns);
    e.apply(&big_pool(&scenario, ""));
    let name = format!("big-{id}");
    e.apply(&pod(ns, &name, &scenario, "200", ""));
    let v = before_event(&e, ns, &name, &scenario);
    assert_eq!(v["verdict"], "compatible", "{v:#}");
    let predicted = &v["launch"]["cheapest"][0];
    assert_eq!(predicted["instanceType"], "c-256x-amd64-linux", "{v:#}");
    assert_eq!(
        predicted["capacityType"], "on-demand",
        "the pool allows on-demand only"
    );
    assert_eq!(v["launch"]["instanceTypes"], 3, "c, s and m at 256 CPUs");
    // Karpenter launches it, and the node is of the predicted type.
    assert_eq!(launched_pool(&e, ns, &name), scenario);
    let pod = e.json(&["get", "pod", "-n", ns, &name]);
    let node = e.json(&["get", "node", pod["spec"]["nodeName"].as_str().unwrap()]);
    assert_eq!(
        node["metadata"]["labels"]["node.kubernetes.io/instance-type"], predicted["instanceType"],
        "kelp predicted {predicted}"
    );
    assert_eq!(
        node["metadata"]["labels"]["karpenter.sh/capacity-type"],
        "on-demand"
    );
    let zones = predicted["zones"].as_array().unwrap();
    assert!(zones.contains(&node["metadata"]["labels"]["topology.kubernetes.io/zone"]));
    e.kubectl(&["delete", "pod", "-n", ns, &name, "--wait=false"], None);
}

#[test]
fn a_daemonsets_overhead_tips_a_pod_over_every_type() {
    let Some(e) = env() else { return };
    let id = run_id();
    let (ns, scenario) = ("e2e-it-ds", format!("it-ds-{id}"));
    namespace(&e, ns);
    e.apply(&big_pool(&scenario, ""));
    // A DaemonSet that runs on the scenario's nodes (it selects and tolerates them): 2 CPUs
    // on every node. There are no nodes yet, so it has no pods; Karpenter counts it anyway.
    e.apply(&format!(
        r#"
apiVersion: apps/v1
kind: DaemonSet
metadata: {{name: agent-{id}, namespace: {ns}}}
spec:
  selector: {{matchLabels: {{app: agent-{id}}}}}
  template:
    metadata: {{labels: {{app: agent-{id}}}}}
    spec:
      nodeSelector: {{e2e.kelp.dev/scenario: {scenario}}}
      tolerations: [{{key: e2e.kelp.dev/scenario, value: {scenario}, effect: NoSchedule}}]
      containers:
        - {{name: agent, image: registry.k8s.io/pause:3.10, resources: {{requests: {{cpu: "2"}}}}}}
"#
    ));
    // 254.5 CPUs fit c-256x (255.9 allocatable) alone; with the agent's 2 they do not.
    let name = format!("tipped-{id}");
    e.apply(&pod(ns, &name, &scenario, "254500m", ""));
    let v = before_event(&e, ns, &name, &scenario);
    assert_eq!(v["verdict"], "rejected", "{v:#}");
    assert!(
        message(&v).starts_with("no instance type has enough resources"),
        "{v:#}"
    );
    assert!(
        message(&v).contains(r#""cpu":"256500m""#),
        "the DaemonSet counted: {v:#}"
    );
    let (after, event) = verdict_with_event(&e, ns, &name, &scenario);
    assert!(
        event.contains("no instance type has enough resources"),
        "Karpenter: {event}"
    );
    assert!(
        event.contains("256500m"),
        "Karpenter counts the DaemonSet too: {event}"
    );
    assert_eq!(after["eventAgrees"], true, "{after:#}");
}

#[test]
fn an_architecture_no_instance_type_offers_is_rejected_before_karpenter_says_so() {
    let Some(e) = env() else { return };
    let id = run_id();
    let (ns, scenario) = ("e2e-it-arch", format!("it-arch-{id}"));
    namespace(&e, ns);
    // The pool allows s390x as well as amd64; kwok offers no s390x type.
    let pool = big_pool(&scenario, "").replace("values: [amd64]}", "values: [amd64, s390x]}");
    assert!(pool.contains("s390x"));
    e.apply(&pool);
    let name = format!("mainframe-{id}");
    e.apply(&pod(ns, &name, &scenario, "1", "  affinity:\n    nodeAffinity:\n      requiredDuringSchedulingIgnoredDuringExecution:\n        nodeSelectorTerms:\n          - matchExpressions:\n              - {key: kubernetes.io/arch, operator: In, values: [s390x]}"));
    let v = before_event(&e, ns, &name, &scenario);
    assert_eq!(v["verdict"], "rejected", "{v:#}");
    assert!(
        message(&v).starts_with("no instance type met all requirements"),
        "{v:#}"
    );
    let (after, event) = verdict_with_event(&e, ns, &name, &scenario);
    assert!(
        event.contains("no instance type met all requirements"),
        "Karpenter: {event}"
    );
    assert_eq!(after["eventAgrees"], true, "{after:#}");
}

#[test]
fn pod_level_requests_bigger_than_every_type_are_rejected_before_karpenter_says_so() {
    let Some(e) = env() else { return };
    let id = run_id();
    let (ns, scenario) = ("e2e-it-podlevel", format!("it-podlevel-{id}"));
    namespace(&e, ns);
    e.apply(&big_pool(&scenario, ""));
    let name = format!("podlevel-{id}");
    // The container asks 100m; the pod as a whole asks 300 CPUs (PodLevelResources, on by
    // default since Kubernetes 1.34), which is what the scheduler and Karpenter count.
    e.apply(&pod(
        ns,
        &name,
        &scenario,
        "100m",
        "  resources: {requests: {cpu: \"300\"}}",
    ));
    let created = e.json(&["get", "pod", "-n", ns, &name]);
    assert_eq!(
        created["spec"]["resources"]["requests"]["cpu"], "300",
        "the API server kept the pod-level requests: {created:#}"
    );
    too_big_before_and_after(&e, ns, &name, &scenario);
}
