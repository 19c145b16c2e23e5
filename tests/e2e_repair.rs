//! Node repair against the real Karpenter (v1.15, kwok provider, `NodeRepair=true`, as
//! `scripts/e2e` starts the testenv): a pool whose nodes report the kwok provider's
//! simulated fault. With both of its two nodes unhealthy, more than 20%, Karpenter's
//! breaker holds and it writes `NodeRepairBlocked`; kelp then says why no node is repaired.
//! Once one node recovers, kelp's finding goes at once and Karpenter repairs the other.
//!
//! Needs a testenv up with the gate on; see tests/e2e.rs for how the suite runs.

mod common;

use std::time::Duration;

use common::*;
use serde_json::{json, Value};

/// The kwok provider's simulated fault (v1.15 `KWOKUnhealthyCondition`): a policy repairs
/// it after 30 s.
const FAULT: &str = "KWOKUnhealthy";

/// Whether this testenv runs node repair as a disruption method: v1.15 or newer, with the
/// feature gate on. Without it the scenario cannot happen; under `KELP_E2E=1` (CI, where
/// `scripts/e2e` turns the gate on) that is a failure, not a skip.
fn repair_runs() -> bool {
    let gates = testenv_value("KARPENTER_FEATURE_GATES");
    let release: kelp::karpenter::version::Release =
        testenv_value("KARPENTER_VERSION").parse().unwrap();
    let on = gates.split(',').any(|g| g.trim() == "NodeRepair=true");
    if !kelp::karpenter::version::has_unhealthy_budgets(&release) {
        eprintln!("skipped: Karpenter {release} has no node repair as a disruption method");
        return false;
    }
    if !on {
        assert!(
            std::env::var("KELP_E2E").is_err(),
            "the testenv runs without NodeRepair=true (KARPENTER_FEATURE_GATES={gates:?}); scripts/e2e turns it on"
        );
        eprintln!("skipped: the testenv runs without NodeRepair=true");
    }
    on
}

/// Set (or clear) the fault condition on a node's status, keeping its other conditions.
fn set_fault(e: &Env, node: &str, faulty: bool) {
    let n = e.json(&["get", "node", node, "-o", "json"]);
    let mut conditions: Vec<Value> = n["status"]["conditions"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .filter(|c| c["type"] != FAULT)
        .collect();
    if faulty {
        let now = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
        conditions.push(json!({
            "type": FAULT, "status": "True", "reason": "SimulatedFault",
            "message": "kelp e2e: a fault the kwok provider repairs",
            "lastHeartbeatTime": now, "lastTransitionTime": now,
        }));
    }
    let patch = json!({"status": {"conditions": conditions}}).to_string();
    e.ok(&[
        "patch",
        "node",
        node,
        "--subresource=status",
        "--type=merge",
        "-p",
        &patch,
    ]);
}

fn pool_nodes(e: &Env, pool: &str) -> Vec<String> {
    let list = e.json(&[
        "get",
        "nodes",
        "-l",
        &format!("karpenter.sh/nodepool={pool}"),
        "-o",
        "json",
    ]);
    let mut names: Vec<String> = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|n| n["metadata"]["deletionTimestamp"].is_null())
        .map(|n| n["metadata"]["name"].as_str().unwrap().to_string())
        .collect();
    names.sort();
    names
}

/// Karpenter's `NodeRepairBlocked` on the pool, if it has written one.
fn blocked_event(e: &Env, pool: &str) -> Option<String> {
    let list = e.json(&[
        "get",
        "events",
        "-A",
        "--field-selector",
        &format!(
            "reason=NodeRepairBlocked,involvedObject.kind=NodePool,involvedObject.name={pool}"
        ),
        "-o",
        "json",
    ]);
    list["items"]
        .as_array()?
        .first()
        .and_then(|ev| ev["message"].as_str().map(str::to_string))
}

#[test]
fn a_pool_too_unhealthy_to_repair_is_explained_and_clears_when_a_node_recovers() {
    let Some(e) = env() else { return };
    if !repair_runs() {
        return;
    }
    let ns = "e2e-repair";
    namespace(&e, ns);
    let run = run_id();
    let (pool_name, scenario) = (format!("e2e-repair-{run}"), format!("repair-{run}"));
    e.apply(&pool(&pool_name, &scenario, "", "100"));
    // Two pods that need a node each: two nodes in the pool.
    e.apply(&deployment(
        ns,
        "sick",
        &scenario,
        2,
        "1",
        "",
        "      affinity:\n        podAntiAffinity:\n          requiredDuringSchedulingIgnoredDuringExecution:\n            - {labelSelector: {matchLabels: {app: sick}}, topologyKey: kubernetes.io/hostname}",
    ));
    let nodes = wait_for(
        "two ready nodes in the pool",
        Duration::from_secs(120),
        || {
            let n = pool_nodes(&e, &pool_name);
            let ready = e.ok(&[
                "get",
                "pods",
                "-n",
                ns,
                "-l",
                "app=sick",
                "--field-selector=status.phase=Running",
                "-o",
                "name",
            ]);
            (n.len() == 2 && ready.lines().count() == 2).then_some(n)
        },
    );
    for n in &nodes {
        set_fault(&e, n, true);
    }
    // Before Karpenter speaks (its policy waits 30 s): kelp says nothing of repair, as it
    // cannot tell that repair runs at all.
    assert!(
        blocked_event(&e, &pool_name).is_some()
            || find(&e.doctor(), "node-repair-blocked", &pool_name).is_none(),
        "kelp spoke of repair before Karpenter showed it runs"
    );
    let message = wait_for(
        "Karpenter's NodeRepairBlocked on the pool",
        Duration::from_secs(150),
        || blocked_event(&e, &pool_name),
    );
    assert!(
        message.contains(&format!("nodepool \"{pool_name}\"")),
        "{message}"
    );
    let report = e.doctor();
    let f = find(&report, "node-repair-blocked", &pool_name)
        .unwrap_or_else(|| panic!("no node-repair-blocked for {pool_name}: {report:#}"));
    assert_eq!(f["severity"], "warning");
    assert_eq!(f["details"]["nodes"], 2, "{f:#}");
    assert_eq!(f["details"]["threshold"], 1, "{f:#}");
    let named: Vec<&str> = f["details"]["unhealthy"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u["node"].as_str().unwrap())
        .collect();
    assert_eq!(named, nodes.iter().map(String::as_str).collect::<Vec<_>>());
    // Karpenter holds: neither node is being replaced while the breaker holds.
    std::thread::sleep(Duration::from_secs(15));
    assert_eq!(
        pool_nodes(&e, &pool_name),
        nodes,
        "Karpenter repaired a node past its breaker"
    );

    // One recovers: 1 of 2 is within 20% rounded up. kelp's finding goes at once...
    set_fault(&e, &nodes[0], false);
    let report = e.doctor();
    assert!(
        find(&report, "node-repair-blocked", &pool_name).is_none(),
        "the finding outlived the breaker: {report:#}"
    );
    // ... and Karpenter repairs the other: it deletes the faulty node.
    wait_for(
        "Karpenter to repair the faulty node",
        Duration::from_secs(240),
        || (!pool_nodes(&e, &pool_name).contains(&nodes[1])).then_some(()),
    );
    e.kubectl(&["delete", "nodepool", &pool_name, "--wait=false"], None);
}
