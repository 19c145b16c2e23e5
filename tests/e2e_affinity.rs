//! End to end, on the real control plane with the real Karpenter (kwok provider): kelp's
//! verdict on zone pod anti-affinity agrees with Karpenter. A `db` pod is launched in
//! test-zone-a; then
//! - a pod that must avoid `db`'s zone and may only go to test-zone-a is rejected by kelp
//!   before Karpenter's event, and the event, when it comes, says the same;
//! - a pod that must avoid `db`'s zone and may go to a or b is compatible, and Karpenter
//!   launches it in test-zone-b;
//! - a pod `db` itself keeps out of its zone (the running pod's anti-affinity selects it),
//!   allowed only test-zone-a, is rejected the same way.
//!
//! Without a running testenv these tests say so and pass, unless `KELP_E2E=1`.

mod common;

use common::*;
use serde_json::Value;

const ZONE: &str = "topology.kubernetes.io/zone";

/// A required node affinity to `zones`, and a required anti-affinity against `app` on the
/// zone when `anti` is set, as a pod's spec lines.
fn placement(zones: &str, anti: Option<&str>) -> String {
    let mut out = format!(
        "  affinity:\n    nodeAffinity:\n      requiredDuringSchedulingIgnoredDuringExecution:\n        nodeSelectorTerms:\n          - matchExpressions:\n              - {{key: {ZONE}, operator: In, values: [{zones}]}}\n"
    );
    if let Some(app) = anti {
        out.push_str(&format!(
            "    podAntiAffinity:\n      requiredDuringSchedulingIgnoredDuringExecution:\n        - topologyKey: {ZONE}\n          labelSelector: {{matchLabels: {{app: {app}}}}}\n"
        ));
    }
    out
}

/// kelp's verdict for the scenario's pool, and Karpenter's event about the pod if kelp
/// has read one.
fn kelp_verdict(e: &Env, ns: &str, pod: &str, pool: &str) -> (Value, Option<String>) {
    let why = e.kelp_json(&["why", "pod", &format!("{ns}/{pod}")]);
    let v = verdict(&why, pool).clone();
    let event = why["diagnosis"]["event"]["message"]
        .as_str()
        .map(str::to_string);
    (v, event)
}

/// kelp rejects the pool for zone anti-affinity before Karpenter writes its event, and
/// agrees with the event when it comes.
fn rejected_before_and_after(e: &Env, ns: &str, name: &str, pool: &str) {
    let (v, event) = kelp_verdict(e, ns, name, pool);
    assert!(
        event.is_none(),
        "Karpenter wrote its event before kelp's first look: {event:?}"
    );
    assert_eq!(v["verdict"], "rejected", "{v:#}");
    assert_eq!(v["reasons"][0]["category"], "topology", "{v:#}");
    let message = v["reasons"][0]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("anti-affinity") && message.contains("test-zone-a"),
        "{v:#}"
    );
    let (after, event) = wait_for(
        &format!("Karpenter's event about {ns}/{name}"),
        2 * MINUTES,
        || {
            let (v, event) = kelp_verdict(e, ns, name, pool);
            event.map(|m| (v, m))
        },
    );
    assert!(
        event.contains("pod anti-affinity") && event.contains(ZONE),
        "Karpenter: {event}"
    );
    assert_eq!(after["verdict"], "rejected", "{after:#}");
    assert_eq!(after["eventAgrees"], true, "{after:#}");
    assert_eq!(
        after["source"], "kelp",
        "kelp computed it; the event only agrees"
    );
}

#[test]
fn zone_anti_affinity_verdicts_agree_with_karpenter() {
    let Some(e) = env() else { return };
    let id = run_id();
    let (ns, scenario) = ("e2e-affinity", format!("affinity-{id}"));
    namespace(&e, ns);
    e.apply(&pool_with(
        &scenario,
        &scenario,
        &format!("        - {{key: {ZONE}, operator: In, values: [test-zone-a, test-zone-b]}}"),
        "",
        "100",
        "{consolidationPolicy: WhenEmpty, consolidateAfter: 10m}",
    ));

    // db runs in test-zone-a, and keeps pods labelled app=guest-<id> out of its zone.
    let db = format!("db-{id}");
    let guest = format!("guest-{id}");
    let db_pod = pod(ns, &db, &scenario, "100m", &placement("test-zone-a", None))
        .replace(
            "  affinity:\n",
            &format!("  affinity:\n    podAntiAffinity:\n      requiredDuringSchedulingIgnoredDuringExecution:\n        - topologyKey: {ZONE}\n          labelSelector: {{matchLabels: {{app: {guest}}}}}\n"),
        );
    e.apply(&db_pod);
    assert_eq!(launched_pool(&e, ns, &db), scenario);

    // Only test-zone-a, where db runs: rejected by its own anti-affinity.
    let loner = format!("loner-{id}");
    e.apply(&pod(
        ns,
        &loner,
        &scenario,
        "100m",
        &placement("test-zone-a", Some(&db)),
    ));
    rejected_before_and_after(&e, ns, &loner, &scenario);

    // Zone a or b: compatible, and Karpenter launches it in b.
    let roamer = format!("roamer-{id}");
    e.apply(&pod(
        ns,
        &roamer,
        &scenario,
        "100m",
        &placement("test-zone-a, test-zone-b", Some(&db)),
    ));
    let (v, _) = kelp_verdict(&e, ns, &roamer, &scenario);
    assert_eq!(v["verdict"], "compatible", "{v:#}");
    assert_eq!(launched_pool(&e, ns, &roamer), scenario);
    let bound = e.json(&["get", "pod", "-n", ns, &roamer]);
    let node = e.json(&["get", "node", bound["spec"]["nodeName"].as_str().unwrap()]);
    assert_eq!(node["metadata"]["labels"][ZONE], "test-zone-b", "{node:#}");

    // The guest db keeps out of its zone, allowed only test-zone-a: rejected by db's
    // anti-affinity (the running pod's), before and after Karpenter's event.
    e.apply(&pod(
        ns,
        &guest,
        &scenario,
        "100m",
        &placement("test-zone-a", None),
    ));
    rejected_before_and_after(&e, ns, &guest, &scenario);

    for name in [&db, &loner, &roamer, &guest] {
        e.kubectl(&["delete", "pod", "-n", ns, name, "--wait=false"], None);
    }
    e.kubectl(&["delete", "nodepool", &scenario, "--wait=false"], None);
}
