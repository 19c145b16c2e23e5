//! End to end against a real control plane running the real Karpenter (kwok provider):
//! `testenv/up` first. Each scenario creates a real situation through the API and
//! asserts what `kelp doctor` / `kelp why` report live through the kubeconfig, and that
//! kelp's per-NodePool verdicts agree with what Karpenter actually did.
//!
//! Without a running testenv these tests say so and pass, unless `KELP_E2E=1` (as CI
//! sets it), where a missing testenv fails them: the suite is never skipped silently.
//! Scenarios are isolated from each other (and from the default pool) by a label their
//! pools carry and their pods select, so they can run in parallel.

mod common;

use std::process::Command;
use std::time::Instant;

use common::*;
use serde_json::Value;

#[test]
fn a_tainted_pool_rejects_and_karpenter_launches_from_the_pool_kelp_called_compatible() {
    let Some(e) = env() else { return };
    let ns = "e2e-taint";
    namespace(&e, ns);
    e.fresh(ns, &["trainer"]);
    // Fresh pools each run: a node left by an earlier run would take the pod at once.
    let run = run_id();
    let (gpu_pool, ok_pool, scenario) = (
        format!("e2e-taint-gpu-{run}"),
        format!("e2e-taint-ok-{run}"),
        format!("taint-{run}"),
    );
    e.apply(&pool(
        &gpu_pool,
        &scenario,
        "        - {key: e2e.kelp.dev/gpu, value: \"true\", effect: NoSchedule}",
        "100",
    ));
    // Starts with no room, so the pod waits and kelp can be asked while it does.
    e.apply(&pool(&ok_pool, &scenario, "", "0"));
    e.apply(&pod(ns, "trainer", &scenario, "1", ""));

    let why = wait_for(
        "Karpenter's FailedScheduling event for e2e-taint/trainer",
        2 * MINUTES,
        || {
            let w = e.kelp_json(&["why", "pod", "e2e-taint/trainer"]);
            (w["diagnosis"]["event"]["source"] == "karpenter").then_some(w)
        },
    );
    let gpu = verdict(&why, &gpu_pool);
    assert_eq!(gpu["verdict"], "rejected", "{why:#}");
    assert_eq!(gpu["reasons"][0]["category"], "taints");
    assert!(gpu["reasons"][0]["message"]
        .as_str()
        .unwrap()
        .contains("e2e.kelp.dev/gpu=true:NoSchedule"));
    assert_eq!(
        verdict(&why, &ok_pool)["reasons"][0]["category"],
        "limits",
        "{why:#}"
    );
    assert_eq!(
        verdict(&why, "default")["reasons"][0]["category"],
        "requirements",
        "{why:#}"
    );
    // Karpenter's own words carry the taint too.
    let event = why["diagnosis"]["event"]["message"].as_str().unwrap();
    assert!(
        event.contains("e2e.kelp.dev/gpu=true:NoSchedule"),
        "{event}"
    );

    // Give the good pool room: kelp must now call it compatible, and Karpenter must use it.
    e.ok(&[
        "patch",
        "nodepool",
        &ok_pool,
        "--type",
        "merge",
        "-p",
        r#"{"spec":{"limits":{"cpu":"100"}}}"#,
    ]);
    // A spec change briefly makes the pool's conditions Unknown (AwaitingReconciliation), and
    // Karpenter skips it until it reconciles: kelp must say so, then call it compatible.
    wait_for(
        "kelp to call the raised pool compatible, or the pod to be bound",
        MINUTES,
        || {
            let why = e.kelp_json(&["why", "pod", "e2e-taint/trainer"]);
            if !why["diagnosis"].is_object() {
                return Some(()); // already bound: Karpenter was faster than this poll
            }
            let ok = verdict(&why, &ok_pool);
            assert_eq!(verdict(&why, &gpu_pool)["verdict"], "rejected");
            if ok["verdict"] == "compatible" {
                return Some(());
            }
            let category = ok["reasons"][0]["category"].as_str().unwrap_or_default();
            assert!(
                matches!(category, "nodepool-not-ready" | "limits"),
                "{why:#}"
            );
            None
        },
    );
    assert_eq!(launched_pool(&e, ns, "trainer"), ok_pool);
}

#[test]
fn a_custom_label_no_pool_defines_is_rejected_by_every_pool() {
    let Some(e) = env() else { return };
    let ns = "e2e-label";
    namespace(&e, ns);
    e.fresh(ns, &["picky"]);
    e.apply(&pool("e2e-label", "label", "", "100"));
    e.apply(&pod(ns, "picky", "label", "100m", "  affinity:\n    nodeAffinity:\n      requiredDuringSchedulingIgnoredDuringExecution:\n        nodeSelectorTerms:\n          - matchExpressions:\n              - {key: e2e.kelp.dev/nonexistent, operator: In, values: [x]}"));
    let report = wait_for(
        "pod-unschedulable for e2e-label/picky with Karpenter's event",
        2 * MINUTES,
        || {
            let r = e.doctor();
            let f = find(&r, "pod-unschedulable", "picky")?;
            f["details"]["event"].is_object().then(|| f.clone())
        },
    );
    for v in report["details"]["nodepools"].as_array().unwrap() {
        assert_eq!(v["verdict"], "rejected", "{report:#}");
    }
    let mine = report["details"]["nodepools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["name"] == "e2e-label")
        .unwrap();
    assert_eq!(mine["reasons"][0]["category"], "requirements");
    assert!(
        mine["reasons"][0]["message"]
            .as_str()
            .unwrap()
            .contains(r#"label "e2e.kelp.dev/nonexistent" does not have known values"#),
        "{mine:#}"
    );
    let msg = report["details"]["event"]["message"].as_str().unwrap();
    assert!(
        msg.contains("e2e.kelp.dev/nonexistent"),
        "Karpenter's event: {msg}"
    );
    // And Karpenter launched nothing for it.
    let claims = e.json(&["get", "nodeclaims", "-l", "karpenter.sh/nodepool=e2e-label"]);
    assert_eq!(claims["items"].as_array().unwrap().len(), 0);
}

#[test]
fn exhausted_limits_keep_pods_waiting_and_kelp_says_so() {
    let Some(e) = env() else { return };
    let ns = "e2e-limits";
    namespace(&e, ns);
    e.fresh(ns, &["first", "second"]);
    // At most one node: the second pod needs another, so it waits on the `nodes` limit.
    // (The kwok provider records a NodeClaim's capacity as its pods' requests, so a cpu
    // limit cannot be filled exactly; the `nodes` limit can.)
    e.apply(
        &pool("e2e-limits", "limits", "", "100")
            .replace("    cpu: \"100\"", "    cpu: \"100\"\n    nodes: \"1\""),
    );
    e.apply(&pod(ns, "first", "limits", "1500m", ""));
    assert_eq!(launched_pool(&e, ns, "first"), "e2e-limits");
    e.apply(&pod(ns, "second", "limits", "1500m", ""));
    let report = wait_for(
        "nodepool-limits-exhausted for e2e-limits, critical",
        3 * MINUTES,
        || {
            let r = e.doctor();
            let f = find(&r, "nodepool-limits-exhausted", "e2e-limits")?;
            (f["severity"] == "critical").then(|| r.clone())
        },
    );
    let f = find(&report, "pod-unschedulable", "second").expect("second waits");
    let v = f["details"]["nodepools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["name"] == "e2e-limits")
        .unwrap();
    assert_eq!(v["verdict"], "rejected");
    assert_eq!(v["reasons"][0]["category"], "limits");
}

#[test]
fn an_exhausted_cpu_limit_keeps_pods_waiting() {
    let Some(e) = env() else { return };
    let ns = "e2e-cpulimit";
    namespace(&e, ns);
    e.fresh(ns, &["cpu-first", "cpu-second"]);
    // cpu 2: the first pod's node leaves less than any instance type (1 cpu) under the
    // limit, so Karpenter has no type left for a second pod that does not fit beside the first.
    e.apply(&pool("e2e-cpulimit", "cpulimit", "", "2"));
    e.apply(&pod(ns, "cpu-first", "cpulimit", "1500m", ""));
    assert_eq!(launched_pool(&e, ns, "cpu-first"), "e2e-cpulimit");
    e.apply(&pod(ns, "cpu-second", "cpulimit", "1", ""));
    let report = wait_for(
        "a critical cpu nodepool-limits-exhausted for e2e-cpulimit, and Karpenter's event",
        3 * MINUTES,
        || {
            let r = e.doctor();
            let f = find(&r, "nodepool-limits-exhausted", "e2e-cpulimit")?;
            let waiting = find(&r, "pod-unschedulable", "cpu-second")?;
            (f["severity"] == "critical"
                && f["details"]["resource"] == "cpu"
                && waiting["details"]["event"].is_object())
            .then(|| r.clone())
        },
    );
    let f = find(&report, "pod-unschedulable", "cpu-second").expect("cpu-second waits");
    let v = f["details"]["nodepools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["name"] == "e2e-cpulimit")
        .unwrap();
    assert_eq!(
        (v["verdict"].as_str(), v["reasons"][0]["category"].as_str()),
        (Some("rejected"), Some("limits")),
        "{f:#}"
    );
    // Karpenter says the same, naming the pool.
    let event = f["details"]["event"]["message"]
        .as_str()
        .unwrap_or_default();
    assert!(
        event.contains("exceed limits for nodepool (NodePool=e2e-cpulimit)"),
        "{event}"
    );
}

#[test]
fn a_pool_with_a_missing_node_class_is_not_ready() {
    let Some(e) = env() else { return };
    let yaml =
        pool("e2e-noclass", "noclass", "", "10").replace("name: default}", "name: does-not-exist}");
    e.apply_as_is(&yaml);
    // A pool just created has no status yet (kelp says so); then Karpenter reports the class missing.
    let f = wait_for(
        "nodepool-not-ready for e2e-noclass naming the node class",
        2 * MINUTES,
        || {
            find(&e.doctor(), "nodepool-not-ready", "e2e-noclass")
                .filter(|f| {
                    f["message"]
                        .as_str()
                        .unwrap_or_default()
                        .contains("NodeClassNotFound")
                })
                .cloned()
        },
    );
    assert_eq!(f["details"]["reason"], "NodeClassNotFound", "{f:#}");
}

#[test]
fn drift_blocked_by_a_do_not_disrupt_pod_a_pdb_and_a_zero_budget() {
    let Some(e) = env() else { return };
    let ns = "e2e-drift";
    namespace(&e, ns);
    e.fresh(ns, &["pinned", "guarded", "budgeted"]);
    let spread = "  affinity:\n    podAntiAffinity:\n      requiredDuringSchedulingIgnoredDuringExecution:\n        - labelSelector: {matchLabels: {e2e.kelp.dev/scenario: drift}}\n          topologyKey: kubernetes.io/hostname";
    e.apply(&pool("e2e-drift", "drift", "", "100"));
    e.apply(&pool("e2e-budget", "budget", "", "100").replace(
        "    consolidateAfter: 10m",
        "    consolidateAfter: 10m\n    budgets:\n      - nodes: \"0\"",
    ));
    e.apply(&pod(ns, "pinned", "drift", "500m", spread).replace(
        "  labels:",
        "  annotations: {karpenter.sh/do-not-disrupt: \"true\"}\n  labels:",
    ));
    e.apply(&pod(ns, "guarded", "drift", "500m", spread));
    e.apply(&format!("apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {{name: guarded, namespace: {ns}}}\nspec:\n  minAvailable: 1\n  selector: {{matchLabels: {{app: guarded}}}}\n"));
    e.apply(&pod(ns, "budgeted", "budget", "500m", ""));
    let pinned = launched_pool(&e, ns, "pinned");
    let _ = launched_pool(&e, ns, "guarded");
    let _ = launched_pool(&e, ns, "budgeted");
    assert_eq!(pinned, "e2e-drift");
    // Change the templates: Karpenter marks the claims Drifted (NodePoolDrifted).
    for p in ["e2e-drift", "e2e-budget"] {
        e.ok(&[
            "patch",
            "nodepool",
            p,
            "--type",
            "merge",
            "-p",
            r#"{"spec":{"template":{"metadata":{"annotations":{"e2e.kelp.dev/rev":"2"}}}}}"#,
        ]);
    }
    let report = wait_for(
        "drift findings for the drift and budget pools",
        5 * MINUTES,
        || {
            let r = e.doctor();
            let drifted: Vec<&Value> = findings(&r, "nodeclaim-drifted")
                .into_iter()
                .filter(|f| f["nodepool"] == "e2e-drift" || f["nodepool"] == "e2e-budget")
                .collect();
            let blocked = findings(&r, "disruption-blocked")
                .into_iter()
                .filter(|f| f["nodepool"] == "e2e-drift")
                .count();
            (drifted.len() >= 3
                && blocked >= 2
                && find(&r, "budget-blocking", "e2e-budget").is_some())
            .then(|| r.clone())
        },
    );
    for f in findings(&report, "nodeclaim-drifted")
        .into_iter()
        .filter(|f| f["nodepool"] == "e2e-drift")
    {
        assert_eq!(f["details"]["reason"], "NodePoolDrifted", "{f:#}");
    }
    let blockers: Vec<&Value> = findings(&report, "disruption-blocked")
        .into_iter()
        .filter(|f| f["nodepool"] == "e2e-drift")
        .flat_map(|f| f["details"]["blockers"].as_array().unwrap().iter())
        .collect();
    assert!(
        blockers
            .iter()
            .any(|b| b["kind"] == "do-not-disrupt-pod" && b["object"]["name"] == "pinned"),
        "{blockers:#?}"
    );
    assert!(
        blockers
            .iter()
            .any(|b| b["kind"] == "pdb" && b["object"]["name"] == "guarded"),
        "{blockers:#?}"
    );
    let budget = find(&report, "budget-blocking", "e2e-budget").unwrap();
    assert_eq!(budget["details"]["reason"], "all");
    // kelp why node names the same blockers.
    let node = e.json(&["get", "pod", "-n", ns, "pinned"])["spec"]["nodeName"]
        .as_str()
        .unwrap()
        .to_string();
    let why = e.kelp_json(&["why", "node", &node]);
    assert_eq!(why["drifted"], "NodePoolDrifted");
    assert!(
        why["blockers"]
            .as_array()
            .unwrap()
            .iter()
            .any(|b| b["kind"] == "do-not-disrupt-pod"),
        "{why:#}"
    );
}

/// With a terminationGracePeriod on its NodeClaims, a do-not-disrupt pod does not hold
/// drift (Karpenter's eventual disruption): the real Karpenter replaces the node, and kelp
/// never says the pod holds the drifted node, only, once it is deleting, that the drain
/// waits for the pod until the period forces it.
#[test]
fn a_grace_period_lets_drift_past_a_do_not_disrupt_pod() {
    let Some(e) = env() else { return };
    let ns = "e2e-drift-tgp";
    namespace(&e, ns);
    let run = run_id();
    let p = format!("e2e-drift-tgp-{run}");
    let name = format!("pinned-{run}");
    e.apply(&pool(&p, &p, "      terminationGracePeriod: 2m", "100"));
    e.apply(&pod(ns, &name, &p, "500m", "").replace(
        "  labels:",
        "  annotations: {karpenter.sh/do-not-disrupt: \"true\"}\n  labels:",
    ));
    assert_eq!(launched_pool(&e, ns, &name), p);
    let node = e.json(&["get", "pod", "-n", ns, &name])["spec"]["nodeName"]
        .as_str()
        .unwrap()
        .to_string();
    let claim = claim_of(&e, &node);
    e.ok(&[
        "patch",
        "nodepool",
        &p,
        "--type",
        "merge",
        "-p",
        r#"{"spec":{"template":{"metadata":{"annotations":{"e2e.kelp.dev/rev":"2"}}}}}"#,
    ]);
    // Until Karpenter disrupts it, kelp never calls the drifted node held by the pod.
    let said = wait_for(
        &format!("Karpenter to disrupt {claim}"),
        5 * MINUTES,
        || {
            let r = e.doctor();
            let drifted = findings(&r, "nodeclaim-drifted")
                .into_iter()
                .any(|f| f["object"]["name"] == claim.as_str());
            if drifted {
                for f in findings(&r, "disruption-blocked")
                    .into_iter()
                    .filter(|f| f["object"]["name"] == node.as_str())
                {
                    // A nomination holds it for a moment after the pod binds; the pod never.
                    for b in f["details"]["blockers"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .filter(|b| b["kind"] == "do-not-disrupt-pod")
                    {
                        let m = b["message"].as_str().unwrap_or_default();
                        assert!(
                            m.contains("terminationGracePeriod 2m0s forces it at"),
                            "kelp holds the drifted node: {f:#}"
                        );
                    }
                }
            }
            disruption_message(&e, &claim)
        },
    );
    assert!(said.ends_with(": Drifted"), "Karpenter: {said}");
    e.kubectl(&["delete", "pod", "-n", ns, &name, "--wait=false"], None);
    e.kubectl(&["delete", "nodepool", &p, "--wait=false"], None);
}

#[test]
fn a_daemonset_that_excludes_a_pool_but_runs_there_is_a_mismatch() {
    let Some(e) = env() else { return };
    let ns = "e2e-ds";
    namespace(&e, ns);
    e.fresh(ns, &["anchor"]);
    e.apply(&pool("e2e-ds", "ds", "", "100"));
    e.apply(&pod(ns, "anchor", "ds", "500m", ""));
    let node = wait_for("e2e-ds/anchor to be bound", 3 * MINUTES, || {
        e.json(&["get", "pod", "-n", ns, "anchor"])["spec"]["nodeName"]
            .as_str()
            .map(str::to_string)
    });
    // The node is labelled by hand, so the DaemonSet's selector lets it run there, although
    // the pool's template does not have that label: Karpenter leaves it out of the overhead.
    e.ok(&[
        "label",
        "node",
        &node,
        "e2e.kelp.dev/agent=true",
        "--overwrite",
    ]);
    e.apply(&format!(
        r#"
apiVersion: apps/v1
kind: DaemonSet
metadata: {{name: agent, namespace: {ns}}}
spec:
  selector: {{matchLabels: {{app: agent}}}}
  template:
    metadata: {{labels: {{app: agent}}}}
    spec:
      nodeSelector: {{e2e.kelp.dev/agent: "true"}}
      tolerations: [{{operator: Exists}}]
      containers: [{{name: agent, image: registry.k8s.io/pause:3.10, resources: {{requests: {{cpu: 10m}}}}}}]
"#
    ));
    let f = wait_for(
        "daemonset-nodepool-mismatch for e2e-ds/agent",
        2 * MINUTES,
        || find(&e.doctor(), "daemonset-nodepool-mismatch", "agent").cloned(),
    );
    assert_eq!(f["nodepool"], "e2e-ds");
    assert_eq!(f["details"]["node"], node.as_str());
    assert!(
        f["details"]["why"]
            .as_str()
            .unwrap()
            .contains("e2e.kelp.dev/agent"),
        "{f:#}"
    );
}

#[test]
fn a_healthy_workload_is_provisioned_and_the_snapshot_reads_back_the_same() {
    let Some(e) = env() else { return };
    let ns = "e2e-healthy";
    namespace(&e, ns);
    e.fresh(ns, &["web-0", "web-1", "web-2"]);
    e.apply(&pool("e2e-healthy", "healthy", "", "100"));
    for i in 0..3 {
        e.apply(&pod(ns, &format!("web-{i}"), "healthy", "250m", ""));
    }
    for i in 0..3 {
        assert_eq!(launched_pool(&e, ns, &format!("web-{i}")), "e2e-healthy");
    }
    wait_for("the healthy pods to run", 2 * MINUTES, || {
        let pods = e.json(&["get", "pods", "-n", ns]);
        pods["items"]
            .as_array()
            .unwrap()
            .iter()
            .all(|p| p["status"]["phase"] == "Running")
            .then_some(())
    });
    let report = e.doctor();
    let about_me: Vec<&Value> = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["nodepool"] == "e2e-healthy" || f["object"]["namespace"] == ns)
        .filter(|f| f["severity"] == "critical")
        .collect();
    assert!(about_me.is_empty(), "{about_me:#?}");
    assert_eq!(report["karpenter"]["installed"], true);

    // kelp snapshot, read back with --from: the same findings about the same objects.
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("snap.json");
    let out = e.kelp(&["snapshot", "-f", file.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let snap: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    let text = serde_json::to_string(&snap).unwrap();
    assert!(
        !text.contains("managedFields"),
        "snapshots strip managedFields"
    );
    assert!(!snap["items"]
        .as_array()
        .unwrap()
        .iter()
        .any(|i| i["kind"] == "Secret"));
    let live = e.doctor();
    let offline = {
        let out = Command::new(env!("CARGO_BIN_EXE_kelp"))
            .args(["doctor", "-o", "json", "--from", file.to_str().unwrap()])
            .output()
            .unwrap();
        serde_json::from_slice::<Value>(&out.stdout).unwrap()
    };
    // Other scenarios change the cluster meanwhile: compare what concerns this one.
    let keys = |r: &Value| {
        let mut k: Vec<String> = r["findings"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|f| f["nodepool"] == "e2e-healthy" || f["object"]["namespace"] == ns)
            .map(|f| format!("{} {}", f["code"], f["object"]))
            .collect();
        k.sort();
        k
    };
    assert_eq!(keys(&live), keys(&offline));
}

/// `kelp serve` against the real cluster: ready after its first sync, a new unschedulable
/// pod reaches `/metrics` and is logged once as a structured JSON line.
#[test]
fn serve_exports_and_logs_a_new_unschedulable_pod() {
    let Some(e) = env() else { return };
    let ns = "e2e-serve";
    namespace(&e, ns);
    e.fresh(ns, &["stuck"]);
    let serve = Serve::start(&e);
    assert_eq!(
        wait_for("/livez", MINUTES, || serve.get("/livez").map(|r| r.0)),
        200
    );
    wait_for("/readyz to be 200", MINUTES, || {
        (serve.get("/readyz")?.0 == 200).then_some(())
    });

    let created = Instant::now();
    e.apply(&format!(
        "apiVersion: v1\nkind: Pod\nmetadata: {{name: stuck, namespace: {ns}}}\nspec:\n  nodeSelector: {{e2e.kelp.dev/nowhere: x}}\n  containers: [{{name: a, image: registry.k8s.io/pause:3.10}}]\n"
    ));
    let body = wait_for("the pod in /metrics", MINUTES, || {
        let (_, body) = serve.get("/metrics")?;
        body.contains(r#"karpenter_helper_findings{code="pod-unschedulable""#)
            .then_some(body)
    });
    eprintln!(
        "serve: unschedulable pod visible in /metrics {:?} after creation",
        created.elapsed()
    );
    assert!(
        body.contains("# TYPE karpenter_helper_findings gauge"),
        "{body}"
    );
    let line = wait_for("the appeared log line", MINUTES, || {
        serve
            .logs()
            .lines()
            .find(|l| l.contains("\"appeared\"") && l.contains("Pod/e2e-serve/stuck"))
            .map(str::to_string)
    });
    let v: Value =
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("not a JSON log line ({e}): {line}"));
    assert_eq!(v["code"], "pod-unschedulable", "{v}");
    assert_eq!(v["level"], "WARN", "{v}");
    e.ok(&[
        "delete",
        "pod",
        "-n",
        ns,
        "stuck",
        "--grace-period=0",
        "--force",
    ]);
    wait_for("the resolved log line", MINUTES, || {
        serve
            .logs()
            .lines()
            .any(|l| l.contains("\"resolved\"") && l.contains("Pod/e2e-serve/stuck"))
            .then_some(())
    });
}

/// A zone spread with `minDomains` above the zones its pool offers: Karpenter fills each
/// zone to `maxSkew` and places the next replica nowhere. kelp computes it (the pool is
/// rejected for topology, not called compatible), and Karpenter's event agrees.
#[test]
fn a_zone_spread_with_more_min_domains_than_zones_is_rejected_as_karpenter_does() {
    let Some(e) = env() else { return };
    let ns = "e2e-spread";
    namespace(&e, ns);
    let p = format!("e2e-spread-{}", run_id());
    e.apply(&pool_with(
        &p,
        &p,
        "        - {key: topology.kubernetes.io/zone, operator: In, values: [test-zone-a, test-zone-b]}",
        "",
        "16",
        "{consolidationPolicy: WhenEmpty, consolidateAfter: 10m}",
    ));
    e.apply(&deployment(
        ns,
        &p,
        &p,
        3,
        "100m",
        "",
        &format!(
            "      topologySpreadConstraints:\n        - {{maxSkew: 1, minDomains: 3, topologyKey: topology.kubernetes.io/zone, whenUnsatisfiable: DoNotSchedule, labelSelector: {{matchLabels: {{app: {p}}}}}}}"
        ),
    ));
    // Two replicas run, one per zone; the third waits.
    let pending = wait_for("two replicas bound and one pending", 3 * MINUTES, || {
        let pods = e.json(&["get", "pods", "-n", ns, "-l", &format!("app={p}")]);
        let items = pods["items"].as_array()?;
        let bound = items
            .iter()
            .filter(|p| p["spec"]["nodeName"].is_string())
            .count();
        let waiting: Vec<&Value> = items
            .iter()
            .filter(|p| p["spec"]["nodeName"].is_null())
            .collect();
        (bound == 2 && waiting.len() == 1)
            .then(|| waiting[0]["metadata"]["name"].as_str().unwrap().to_string())
    });
    let key = format!("{ns}/{pending}");
    let why = wait_for("kelp's verdict on the third replica", MINUTES, || {
        let w = e.kelp_json(&["why", "pod", &key]);
        w["diagnosis"].is_object().then_some(w)
    });
    let v = verdict(&why, &p);
    assert_eq!(v["verdict"], "rejected", "{why:#}");
    assert_eq!(v["reasons"][0]["category"], "topology", "{why:#}");
    assert!(
        v["reasons"][0]["message"]
            .as_str()
            .unwrap()
            .contains("minDomains 3"),
        "{why:#}"
    );
    // Karpenter's own word, once written, says the same.
    let event = wait_for(
        "Karpenter's FailedScheduling for the third replica",
        2 * MINUTES,
        || {
            let w = e.kelp_json(&["why", "pod", &key]);
            (w["diagnosis"]["event"]["source"] == "karpenter").then(|| {
                w["diagnosis"]["event"]["message"]
                    .as_str()
                    .unwrap_or("")
                    .to_string()
            })
        },
    );
    // Karpenter refuses the pool for it: in its words "unsatisfiable topology constraint",
    // or, when the spread leaves the pod no zone and so no offering, "all available instance
    // types exceed limits for nodepool" (both seen on v1.14.1).
    assert!(
        event.contains("topology") || event.contains(&format!("(NodePool={p})")),
        "{event}"
    );
    assert_eq!(
        verdict(&e.kelp_json(&["why", "pod", &key]), &p)["verdict"],
        "rejected"
    );
    e.ok(&["delete", "deployment", "-n", ns, &p, "--wait=false"]);
    e.ok(&["delete", "nodepool", &p, "--wait=false"]);
}

/// A node whose startup taint is never removed: Karpenter launches a NodeClaim for the pod,
/// nominates the pod to it, and the pod waits. kelp says capacity is on its way, and the
/// claim launched for this very pod does not count against it: the pool (whose limit the
/// claim fills) is not "rejected: limits" for it. (A Deployment's pod: a pod that
/// tolerated karpenter.sh/unregistered could bind before the startup taint is on.)
#[test]
fn a_pod_nominated_to_a_claim_that_fills_the_limit_is_on_its_way() {
    let Some(e) = env() else { return };
    let ns = "e2e-startup";
    namespace(&e, ns);
    let p = format!("e2e-startup-{}", run_id());
    e.apply(&pool(
        &p,
        &p,
        "      startupTaints:\n        - {key: e2e.kelp.dev/never-removed, value: \"x\", effect: NoSchedule}",
        "2",
    ));
    // 1 cpu needs the 2-cpu type (the 1-cpu one has 900m allocatable): the claim fills the limit.
    let waiter = format!("{p}-waiter");
    e.apply(&deployment(ns, &waiter, &p, 1, "1", "", ""));
    let pod = wait_for("the waiter's pod", MINUTES, || {
        let pods = e.json(&["get", "pods", "-n", ns, "-l", &format!("app={waiter}")]);
        pods["items"][0]["metadata"]["name"]
            .as_str()
            .map(str::to_string)
    });
    let key = format!("{ns}/{pod}");
    let why = wait_for(
        "Karpenter's nomination of the pod to its NodeClaim",
        3 * MINUTES,
        || {
            let w = e.kelp_json(&["why", "pod", &key]);
            w["state"]
                .as_str()
                .is_some_and(|s| {
                    s.contains("capacity is on its way") || s.starts_with("Pending: nominated to")
                })
                .then_some(w)
        },
    );
    let claims = e.json(&[
        "get",
        "nodeclaims",
        "-l",
        &format!("karpenter.sh/nodepool={p}"),
    ]);
    assert_eq!(
        claims["items"].as_array().map(Vec::len),
        Some(1),
        "{claims:#}"
    );
    if why["diagnosis"].is_object() {
        let v = verdict(&why, &p);
        assert_ne!(v["reasons"][0]["category"], "limits", "{why:#}");
    }
    // Still waiting a while later (the taint stays), and still on its way, not limits.
    std::thread::sleep(std::time::Duration::from_secs(15));
    let later = e.kelp_json(&["why", "pod", &key]);
    assert!(
        later["state"].as_str().unwrap().starts_with("Pending"),
        "{later:#}"
    );
    if later["diagnosis"].is_object() {
        assert_ne!(
            verdict(&later, &p)["reasons"][0]["category"],
            "limits",
            "{later:#}"
        );
    }
    e.ok(&["delete", "deployment", "-n", ns, &waiter, "--wait=false"]);
    e.ok(&["delete", "nodepool", &p, "--wait=false"]);
}

/// A short expireAfter: Karpenter deletes the expired claim and replaces it. While the
/// claim is being deleted, kelp never says a budget holds it (the node Karpenter is already
/// deleting takes the pool's one allowed disruption itself).
#[test]
fn a_node_karpenter_is_deleting_is_not_held_by_its_own_budget() {
    let Some(e) = env() else { return };
    let ns = "e2e-expiry";
    namespace(&e, ns);
    let p = format!("e2e-expiry-{}", run_id());
    e.apply(
        &pool_with(
            &p,
            &p,
            "",
            "",
            "8",
            "{consolidationPolicy: WhenEmpty, consolidateAfter: 0s}",
        )
        .replace("expireAfter: 720h", "expireAfter: 45s"),
    );
    let app = format!("{p}-short-lived");
    e.apply(&deployment(ns, &app, &p, 1, "300m", "", ""));
    let claim_names = || -> Vec<(String, bool)> {
        let claims = e.json(&[
            "get",
            "nodeclaims",
            "-l",
            &format!("karpenter.sh/nodepool={p}"),
        ]);
        claims["items"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|c| {
                (
                    c["metadata"]["name"].as_str().unwrap_or("").to_string(),
                    !c["metadata"]["deletionTimestamp"].is_null(),
                )
            })
            .collect()
    };
    let first = wait_for("the first NodeClaim", 2 * MINUTES, || {
        claim_names().first().map(|c| c.0.clone())
    });
    // Until the first claim is gone: every look at doctor while it is deleting.
    let mut deleting_looks = 0;
    wait_for(&format!("{first} to expire and go"), 4 * MINUTES, || {
        let claims = claim_names();
        let deleting = claims.iter().any(|(n, d)| *n == first && *d);
        let report = e.doctor();
        if deleting {
            deleting_looks += 1;
            for f in findings(&report, "disruption-blocked") {
                if f["nodepool"] == p.as_str() {
                    let kinds: Vec<&str> = f["details"]["blockers"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .filter_map(|b| b["kind"].as_str())
                        .collect();
                    assert!(!kinds.contains(&"budget"), "{f:#}");
                }
            }
        }
        (!claims.iter().any(|(n, _)| *n == first)).then_some(())
    });
    eprintln!("expiry: looked at doctor {deleting_looks} times while {first} was deleting");
    e.ok(&["delete", "deployment", "-n", ns, &app, "--wait=false"]);
    e.ok(&["delete", "nodepool", &p, "--wait=false"]);
}

/// A pod with scheduling gates: neither the scheduler nor Karpenter acts on it. kelp says it
/// is gated and names the gates, calls no pool compatible for it, and raises no
/// pod-unschedulable.
#[test]
fn a_scheduling_gated_pod_is_nobodys_to_place() {
    let Some(e) = env() else { return };
    let ns = "e2e-gated";
    namespace(&e, ns);
    e.fresh(ns, &["gated"]);
    e.apply(&pod(
        ns,
        "gated",
        "gated",
        "100m",
        "  schedulingGates:\n    - name: e2e.kelp.dev/wait-for-quota",
    ));
    let why = wait_for("the API server to report the gate", MINUTES, || {
        let w = e.kelp_json(&["why", "pod", &format!("{ns}/gated")]);
        w["state"]
            .as_str()
            .is_some_and(|s| s.contains("scheduling gate"))
            .then_some(w)
    });
    assert!(
        why["state"]
            .as_str()
            .unwrap()
            .contains("e2e.kelp.dev/wait-for-quota"),
        "{why:#}"
    );
    assert!(why["diagnosis"].is_null(), "{why:#}");
    // Past Karpenter's batch window: still no pod-unschedulable for it.
    std::thread::sleep(std::time::Duration::from_secs(25));
    let report = e.doctor();
    assert!(
        find(&report, "pod-unschedulable", "gated").is_none(),
        "{report:#}"
    );
    e.ok(&["delete", "pod", "-n", ns, "gated", "--wait=false"]);
}

/// `kelp doctor` names the Karpenter release it judges: the testenv runs it as a process
/// (no controller pod, and the default metrics Service is not there), so kelp reads its
/// NodePool CRD, which bounds the release.
#[test]
fn doctor_names_the_karpenter_release_from_its_crd() {
    let Some(e) = env() else { return };
    let built: kelp::karpenter::version::Release =
        testenv_value("KARPENTER_VERSION").parse().unwrap();
    let want = if built.minor() >= 15 {
        "v1.15 or newer".to_string()
    } else if built.minor() == 14 {
        "v1.14".to_string()
    } else {
        "older than v1.14".to_string()
    };
    let report = e.doctor();
    let v = &report["karpenter"]["version"];
    assert_eq!(v["source"], "crd", "{v}");
    assert_eq!(v["version"], want.as_str(), "{v}");
    assert_eq!(v["window"], "supported", "{v}");
    let out = e.kelp(&["doctor"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains(&format!("Karpenter {want} (crd)")), "{text}");
}

/// A NodePool whose `spec.disruption` leaves out `consolidateAfter`: the real API server of
/// this release takes it exactly when `kelp lint --karpenter-version` for it says it does
/// (v1.15 defaults the field to 0s; older CRDs require it). Taken, it is stored as 0s and
/// Karpenter deletes a node as soon as it is empty.
#[test]
fn lint_agrees_with_the_api_server_on_a_pool_without_consolidate_after() {
    let Some(e) = env() else { return };
    let release = testenv_value("KARPENTER_VERSION");
    let run = run_id();
    let (name, scenario) = (format!("e2e-unset-{run}"), format!("unset-{run}"));
    let yaml = pool_with(
        &name,
        &scenario,
        "",
        "",
        "10",
        "    consolidationPolicy: WhenEmpty",
    );
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("pool.yaml");
    std::fs::write(&file, &yaml).unwrap();
    // Offline: lint reads files, never a cluster.
    let out = Command::new(env!("CARGO_BIN_EXE_kelp"))
        .args([
            "lint",
            file.to_str().unwrap(),
            "--fail-on",
            "never",
            "-o",
            "json",
        ])
        .args(["--karpenter-version", &release])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lint: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(lint["karpenterVersion"], release.as_str());
    let rejected_by_kelp = lint["results"].as_array().unwrap().iter().any(|r| {
        r["rule"] == "disruption-missing-consolidate-after" && r["severity"] == "critical"
    });
    let out = e.kubectl(&["apply", "-f", "-"], Some(&yaml));
    let accepted = out.status.success();
    assert_eq!(
        rejected_by_kelp,
        !accepted,
        "Karpenter {release}: kelp lint {lint:#} vs the API server: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    if !accepted {
        return;
    }
    // Defaulted to 0s by the CRD, so an empty node goes at once.
    let stored = e.json(&["get", "nodepool", &name]);
    assert_eq!(
        stored["spec"]["disruption"]["consolidateAfter"], "0s",
        "{stored:#}"
    );
    e.ok(&[
        "wait",
        "--for=condition=Ready",
        "--timeout=60s",
        &format!("nodepool/{name}"),
    ]);
    let ns = "e2e-unset";
    namespace(&e, ns);
    e.fresh(ns, &["brief"]);
    e.apply(&pod(ns, "brief", &scenario, "1", ""));
    let node = wait_for(
        "a node for the pod",
        std::time::Duration::from_secs(120),
        || {
            let p = e.json(&["get", "pod", "-n", ns, "brief"]);
            p["spec"]["nodeName"].as_str().map(str::to_string)
        },
    );
    e.ok(&[
        "delete",
        "pod",
        "-n",
        ns,
        "brief",
        "--grace-period=0",
        "--force",
    ]);
    wait_for(
        "Karpenter to delete the empty node",
        std::time::Duration::from_secs(120),
        || {
            let out = e.kubectl(&["get", "node", &node], None);
            (!out.status.success()).then_some(())
        },
    );
    e.kubectl(&["delete", "nodepool", &name, "--wait=false"], None);
}
