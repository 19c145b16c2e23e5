//! One bad object must never freeze kelp, against the real control plane: a NodePool the
//! API server accepts, whose budget schedule robfig/cron (and so Karpenter) cannot parse
//! (`", * * * *"`), used to spin the cron search for minutes per node and stall `kelp
//! serve`'s runtime: `/livez`, `/readyz`, `/metrics` and the dashboard all timed out.
//! Now serve keeps answering, and reports the budget as misconfigured (failing closed,
//! as Karpenter does).

mod common;

use std::time::{Duration, Instant};

use common::*;
use serde_json::Value;

/// Every health and metrics endpoint answers (within get_from's 10 s read timeout).
fn responsive(serve: &Serve) {
    for path in ["/livez", "/readyz", "/metrics"] {
        let started = Instant::now();
        let answer = serve.get(path);
        assert!(
            answer.is_some(),
            "{path} did not answer within {:?}",
            started.elapsed()
        );
        if path != "/readyz" {
            assert_eq!(answer.map(|a| a.0), Some(200), "{path}");
        }
    }
}

#[test]
fn a_nodepool_with_an_unparseable_budget_schedule_does_not_freeze_serve() {
    let Some(e) = env() else { return };
    let ns = "e2e-freeze";
    namespace(&e, ns);
    e.fresh(ns, &["held"]);
    let serve = Serve::start(&e);
    wait_for("/readyz to be 200", MINUTES, || {
        (serve.get("/readyz")?.0 == 200).then_some(())
    });
    e.apply(&pool("e2e-freeze", "freeze", "", "100").replace(
        "    consolidateAfter: 10m",
        "    consolidateAfter: 10m\n    budgets:\n      - nodes: \"1\"\n        schedule: \", * * * *\"\n        duration: 1h",
    ));
    e.apply(&pod(ns, "held", "freeze", "500m", ""));
    assert_eq!(launched_pool(&e, ns, "held"), "e2e-freeze");
    // Drift the node: Karpenter would replace it, but its only budget is misconfigured,
    // so it fails closed, and kelp must say why.
    e.ok(&[
        "patch",
        "nodepool",
        "e2e-freeze",
        "--type",
        "merge",
        "-p",
        r#"{"spec":{"template":{"metadata":{"annotations":{"e2e.kelp.dev/rev":"2"}}}}}"#,
    ]);
    let metric = r#"karpenter_helper_findings{code="budget-blocking",severity="warning",nodepool="e2e-freeze"} 1"#;
    wait_for(
        "serve to report the misconfigured budget",
        5 * MINUTES,
        || {
            responsive(&serve);
            let (_, metrics) = serve.get("/metrics")?;
            metrics.contains(metric).then_some(())
        },
    );
    // The dashboard answers too, and names the bad schedule.
    let context = e.ok(&["config", "current-context"]);
    let (code, body) = serve
        .dash(&format!("/api/v1/clusters/{}/findings", context.trim()))
        .expect("the dashboard answers");
    assert_eq!(code, 200, "{body}");
    let json = body.split_once("\r\n\r\n").map_or("", |(_, b)| b);
    let text = if json.trim_start().starts_with('{') || json.trim_start().starts_with('[') {
        json.to_string()
    } else {
        // Chunked: the JSON sits between the chunk sizes.
        json.lines()
            .filter(|l| l.contains('{'))
            .collect::<Vec<_>>()
            .join("")
    };
    assert!(text.contains("invalid schedule"), "{text}");
    // kelp doctor (one shot) says the same, quickly.
    let started = Instant::now();
    let report = e.doctor();
    eprintln!("doctor took {:?} with the bad pool", started.elapsed());
    let f: &Value = find(&report, "budget-blocking", "e2e-freeze").expect("budget-blocking");
    let error = f["details"]["error"].as_str().unwrap_or_default();
    assert!(error.contains("invalid schedule"), "{f:#}");
    assert!(
        f["message"].as_str().unwrap().contains("invalid schedule"),
        "{f:#}"
    );
    // And serve is still alive and responsive after many passes over the pool, past the
    // client's old 60 s read timeout: a healthy quiet watch (NodePools, PDBs...) ends
    // cleanly and resumes, never as a failure.
    std::thread::sleep(Duration::from_secs(65));
    responsive(&serve);
    let logs = serve.logs();
    let failed: Vec<&str> = logs
        .lines()
        .filter(|l| l.contains("watch failed") || l.contains("list failed"))
        .collect();
    assert!(failed.is_empty(), "{failed:#?}");
    e.ok(&["delete", "nodepool", "e2e-freeze", "--wait=false"]);
}
