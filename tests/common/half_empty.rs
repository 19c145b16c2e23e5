//! Nodes Karpenter may consolidate, made on the testenv: a scenario's pool with given
//! disruption settings, two half-empty nodes of it, and what to wait for and nudge.

use serde_json::Value;

use super::*;

/// A scenario's pool (as `common::pool`) with the given disruption settings.
pub fn consolidation_pool(name: &str, disruption: &str) -> String {
    pool_with(name, name, "", "", "16", disruption)
}

/// A one-replica Deployment of `cpu` on the scenario's nodes; `hostname` pins it to one.
pub fn one_deployment(
    ns: &str,
    name: &str,
    scenario: &str,
    cpu: &str,
    hostname: Option<&str>,
) -> String {
    let pin = hostname
        .map(|h| format!("        kubernetes.io/hostname: {h}"))
        .unwrap_or_default();
    super::deployment(ns, name, scenario, 1, cpu, &pin, "")
}

/// The node a Deployment's pod runs on, once it does.
pub fn node_of(e: &Env, ns: &str, app: &str) -> String {
    wait_for(&format!("{ns}/{app} to run"), 3 * MINUTES, || {
        let pods = e.json(&["get", "pods", "-n", ns, "-l", &format!("app={app}")]);
        pods["items"]
            .as_array()?
            .iter()
            .filter(|p| p["metadata"]["deletionTimestamp"].is_null())
            .find_map(|p| p["spec"]["nodeName"].as_str().map(str::to_string))
    })
}

pub fn consolidatable(e: &Env, claim: &str) -> bool {
    let c = e.json(&["get", "nodeclaim", claim]);
    c["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|c| c["type"] == "Consolidatable" && c["status"] == "True")
}

/// The first of the nodes Karpenter deletes (or has deleted).
pub fn one_removed(e: &Env, nodes: [&String; 2]) -> String {
    wait_for("Karpenter to remove one of the nodes", 3 * MINUTES, || {
        nodes.into_iter().find_map(|n| {
            let node = e.kubectl(&["get", "node", n, "-o", "json"], None);
            let v: Value = serde_json::from_slice(&node.stdout).unwrap_or(Value::Null);
            (!node.status.success() || !v["metadata"]["deletionTimestamp"].is_null())
                .then(|| n.clone())
        })
    })
}

/// Patch the pool's limits: a NodePool spec change makes Karpenter look again.
pub fn nudge(e: &Env, pool: &str, cpu: &str) {
    e.ok(&[
        "patch",
        "nodepool",
        pool,
        "--type",
        "merge",
        "-p",
        &format!(r#"{{"spec":{{"limits":{{"cpu":"{cpu}"}}}}}}"#),
    ]);
}

/// Two half-empty nodes of a new pool `p`: a (300m) on the first, which it shared with a
/// 500m filler until the filler was deleted, and b (300m, its pod spec with `b_spec` added)
/// on the second. Returns a's and b's names and the two nodes, once both NodeClaims are
/// Consolidatable.
pub fn two_half_empty_nodes(
    e: &Env,
    ns: &str,
    p: &str,
    b_spec: &str,
) -> ([String; 2], [String; 2]) {
    e.apply(&consolidation_pool(
        p,
        "{consolidationPolicy: WhenEmptyOrUnderutilized, consolidateAfter: 30s}",
    ));
    half_empty_nodes_of(e, ns, p, b_spec, |_| {})
}

/// As [`two_half_empty_nodes`], of a pool `p` already there; `before` is given the second
/// node before the filler goes (before either claim can turn Consolidatable).
pub fn half_empty_nodes_of(
    e: &Env,
    ns: &str,
    p: &str,
    b_spec: &str,
    before: impl FnOnce(&str),
) -> ([String; 2], [String; 2]) {
    // a and fill share one smallest node (900m allocatable); b needs a second one.
    let (a, fill, b) = (format!("{p}-a"), format!("{p}-fill"), format!("{p}-b"));
    e.apply(&one_deployment(ns, &a, p, "300m", None));
    e.apply(&one_deployment(ns, &fill, p, "500m", None));
    let first = node_of(e, ns, &a);
    assert_eq!(node_of(e, ns, &fill), first);
    e.apply(&super::deployment(ns, &b, p, 1, "300m", "", b_spec));
    let second = node_of(e, ns, &b);
    assert_ne!(first, second, "b should have needed a node of its own");
    before(&second);
    e.ok(&["delete", "deployment", "-n", ns, &fill]);
    for c in [claim_of(e, &first), claim_of(e, &second)] {
        wait_for(&format!("{c} Consolidatable"), 2 * MINUTES, || {
            consolidatable(e, &c).then_some(())
        });
    }
    ([a, b], [first, second])
}

/// Delete a scenario's Deployments and its pool, without waiting.
pub fn clean_up(e: &Env, ns: &str, deployments: &[&String], pool: &str) {
    for d in deployments {
        e.ok(&["delete", "deployment", "-n", ns, d, "--wait=false"]);
    }
    e.ok(&["delete", "nodepool", pool, "--wait=false"]);
}

/// Nudge Karpenter (a change to pool `p`), wait for one of `nodes` to go, and check that it
/// is one kelp called a candidate: that node.
pub fn removed_candidate(e: &Env, p: &str, nodes: [&String; 2], candidates: &[String]) -> String {
    nudge(e, p, "17");
    let gone = one_removed(e, nodes);
    assert!(
        candidates.contains(&gone),
        "Karpenter removed {gone}, kelp called {candidates:?} candidates"
    );
    gone
}
