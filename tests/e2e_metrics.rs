//! The SLI metrics of `kelp serve` against the real control plane: a pod that needs new
//! capacity from a kwok NodePool is provisioned by the real Karpenter, and `/metrics` must
//! observe its provisioning latency, its node's provisioning time and the node's launch
//! exactly once, and keep those counts through later analysis passes and unrelated
//! changes (a pod deleted and re-created: new UID, same name). Deleting the pool then
//! counts the NodeClaim's deletion once.
//!
//! Skipped without a running testenv (`testenv/up`), required with `KELP_E2E=1`.
//! `scripts/e2e` runs it with `--test-threads 1`.

mod common;

use std::time::Duration;

use common::*;

/// The value of the one line of `metric` whose labels include every `label="value"` given.
fn sample(text: &str, metric: &str, labels: &[(&str, &str)]) -> Option<f64> {
    let found: Vec<f64> = text
        .lines()
        .filter(|l| l.starts_with(&format!("{metric}{{")))
        .filter(|l| {
            labels
                .iter()
                .all(|(k, v)| l.contains(&format!("{k}=\"{v}\"")))
        })
        .filter_map(|l| l.rsplit(' ').next()?.parse().ok())
        .collect();
    assert!(found.len() <= 1, "several {metric} {labels:?} in\n{text}");
    found.first().copied()
}

/// Every counter and histogram line about `pool` or `pod`: what must not change.
fn counted(text: &str, pool: &str, pod: &str) -> Vec<String> {
    let mut v: Vec<String> = text
        .lines()
        .filter(|l| {
            ["_total{", "_count{", "_sum{", "_bucket{"]
                .iter()
                .any(|s| l.contains(s))
        })
        .filter(|l| {
            l.contains(&format!("nodepool=\"{pool}\"")) || l.contains(&format!("pod=\"{pod}\""))
        })
        .map(str::to_string)
        .collect();
    v.sort();
    v
}

fn metrics(serve: &Serve) -> Option<String> {
    let (code, body) = serve.get("/metrics")?;
    (code == 200).then_some(body)
}

#[test]
fn serve_observes_a_provisioned_pod_and_its_node_once() {
    let Some(e) = env() else { return };
    let ns = "e2e-metrics";
    namespace(&e, ns);
    e.fresh(ns, &["waiter", "unrelated"]);
    // A fresh pool each run: a node left by an earlier run would take the pod at once.
    let run = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
        % 100_000;
    let (pool_name, scenario) = (format!("e2e-metrics-{run}"), format!("metrics-{run}"));
    let serve = Serve::start(&e);
    wait_for("/readyz to be 200", MINUTES, || {
        (serve.get("/readyz")?.0 == 200).then_some(())
    });

    e.apply(&pool(&pool_name, &scenario, "", "100"));
    e.apply(&pod(ns, "waiter", &scenario, "1", ""));
    assert_eq!(launched_pool(&e, ns, "waiter"), pool_name);

    let p = [("nodepool", pool_name.as_str())];
    let lat = "karpenter_helper_pod_provisioning_latency_seconds";
    let node = "karpenter_helper_node_provisioning_seconds";
    let churn = "karpenter_helper_node_churn_total";
    let event = |ev: &'static str| [("nodepool", pool_name.as_str()), ("event", ev)];
    let text = wait_for(
        "the pod's latency, its node's provisioning and launch in /metrics",
        2 * MINUTES,
        || {
            let m = metrics(&serve)?;
            let done = sample(&m, &format!("{lat}_count"), &p).is_some()
                && sample(&m, &format!("{node}_count"), &p).is_some()
                && ["launched", "registered", "initialized"]
                    .iter()
                    .all(|ev| sample(&m, churn, &event(ev)).is_some());
            done.then_some(m)
        },
    );
    assert_eq!(
        sample(&text, &format!("{lat}_count"), &p),
        Some(1.0),
        "{text}"
    );
    let waited = sample(&text, &format!("{lat}_sum"), &p).unwrap();
    assert!((0.0..300.0).contains(&waited), "{waited}");
    let in_slo = [("nodepool", pool_name.as_str()), ("le", "300.0")];
    assert_eq!(sample(&text, &format!("{lat}_bucket"), &in_slo), Some(1.0));
    let on_demand = [
        ("nodepool", pool_name.as_str()),
        ("capacity_type", "on-demand"),
    ];
    assert_eq!(
        sample(&text, &format!("{node}_count"), &on_demand),
        Some(1.0),
        "{text}"
    );
    for ev in ["launched", "registered", "initialized"] {
        assert_eq!(sample(&text, churn, &event(ev)), Some(1.0), "{ev}: {text}");
    }
    // The picture of now: one node, its price, and (once Karpenter has updated the pool's
    // status.resources) its share of the cpu limit.
    assert_eq!(
        sample(&text, "karpenter_helper_nodepool_nodes", &p),
        Some(1.0),
        "{text}"
    );
    assert!(
        sample(&text, "karpenter_helper_nodepool_cost_per_hour", &on_demand)
            .is_some_and(|c| c > 0.0)
    );
    let cpu = [("nodepool", pool_name.as_str()), ("resource", "cpu")];
    wait_for("the pool's cpu usage ratio", MINUTES, || {
        let m = metrics(&serve)?;
        sample(&m, "karpenter_helper_nodepool_usage_ratio", &cpu).filter(|r| *r > 0.0 && *r < 1.0)
    });

    // Karpenter nominates the pod to the NodeClaim it launches (the seed's counter).
    let created_for = "karpenter_helper_nodes_created_for_nominated_pods_total";
    let nominated = [
        ("pod", "waiter"),
        ("namespace", ns),
        ("nodepool", pool_name.as_str()),
    ];
    let text = wait_for("the nomination to be counted", MINUTES, || {
        let m = metrics(&serve)?;
        sample(&m, created_for, &nominated).map(|_| m)
    });
    assert_eq!(sample(&text, created_for, &nominated), Some(1.0));

    // Later passes and unrelated changes count nothing again: a pending pod appears, is
    // deleted, and comes back under a new UID; then a clock tick passes.
    let before = counted(&text, &pool_name, "waiter");
    let unrelated = format!(
        "apiVersion: v1\nkind: Pod\nmetadata: {{name: unrelated, namespace: {ns}}}\nspec:\n  nodeSelector: {{e2e.kelp.dev/nowhere: x}}\n  containers: [{{name: a, image: registry.k8s.io/pause:3.10}}]\n"
    );
    let logged = |what: &str| {
        serve
            .logs()
            .lines()
            .filter(|l| {
                l.contains(&format!("\"{what}\"")) && l.contains("Pod/e2e-metrics/unrelated")
            })
            .count()
    };
    e.apply(&unrelated);
    wait_for("the unrelated pod to be reported", MINUTES, || {
        (logged("appeared") == 1).then_some(())
    });
    e.ok(&[
        "delete",
        "pod",
        "-n",
        ns,
        "unrelated",
        "--grace-period=0",
        "--force",
    ]);
    wait_for("the unrelated pod to resolve", MINUTES, || {
        (logged("resolved") == 1).then_some(())
    });
    e.apply(&unrelated);
    wait_for("the re-created pod to be reported", MINUTES, || {
        (logged("appeared") == 2).then_some(())
    });
    std::thread::sleep(Duration::from_secs(16)); // one more pass on the clock tick
    let after = counted(&metrics(&serve).unwrap(), &pool_name, "waiter");
    assert_eq!(before, after);
    e.fresh(ns, &["unrelated"]);

    // The pool goes: its NodeClaim is deleted, counted once; the gauges of now drop it.
    e.fresh(ns, &["waiter"]);
    e.ok(&["delete", "nodepool", &pool_name, "--wait=false"]);
    let text = wait_for(
        "the NodeClaim's deletion to be counted",
        2 * MINUTES,
        || {
            let m = metrics(&serve)?;
            sample(&m, churn, &event("deleted")).map(|_| m)
        },
    );
    assert_eq!(sample(&text, churn, &event("deleted")), Some(1.0), "{text}");
    assert_eq!(sample(&text, churn, &event("launched")), Some(1.0));
    wait_for("the pool to leave the gauges", MINUTES, || {
        let m = metrics(&serve)?;
        sample(&m, "karpenter_helper_nodepool_nodes", &p)
            .is_none()
            .then_some(())
    });
    assert_eq!(serve.get("/readyz").map(|r| r.0), Some(200));
}
