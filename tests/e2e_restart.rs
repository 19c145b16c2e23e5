//! Reliability against the real control plane: the API server is killed and started again
//! under `kelp serve`. Its watches must resume (or relist) by themselves, `/readyz` must
//! stay truthful, and a change made after the restart must reach `/metrics`. This suite
//! restarts the shared API server, so `scripts/e2e` runs it alone, after the others.

mod common;

use std::time::Instant;

use common::*;

#[test]
fn serve_reconverges_after_the_api_server_restarts() {
    let Some(e) = env() else { return };
    let ns = "e2e-restart";
    namespace(&e, ns);
    e.fresh(ns, &["before", "after"]);
    let serve = Serve::start(&e);
    wait_for("/readyz to be 200", MINUTES, || {
        (serve.get("/readyz")?.0 == 200).then_some(())
    });
    let pending = |name: &str| {
        format!("apiVersion: v1\nkind: Pod\nmetadata: {{name: {name}, namespace: {ns}}}\nspec:\n  nodeSelector: {{e2e.kelp.dev/nowhere: x}}\n  containers: [{{name: a, image: registry.k8s.io/pause:3.10}}]\n")
    };
    e.apply(&pending("before"));
    wait_for("the first pod in the logs", MINUTES, || {
        serve
            .logs()
            .contains("Pod/e2e-restart/before")
            .then_some(())
    });

    let dir = std::env::var("KELP_TESTENV_DIR").unwrap_or_else(|_| "/tmp/kelp-testenv".into());
    let restart = std::process::Command::new("testenv/restart-apiserver")
        .args(["--signal", "KILL", "--down-for", "3"])
        .env("KELP_TESTENV_DIR", &dir)
        .output()
        .unwrap();
    assert!(
        restart.status.success(),
        "{}",
        String::from_utf8_lossy(&restart.stderr)
    );
    let back = Instant::now();
    // Liveness never depends on the API server; readiness stays true once synced.
    assert_eq!(serve.get("/livez").map(|r| r.0), Some(200));

    e.apply(&pending("after"));
    let context = e.ok(&["config", "current-context"]);
    wait_for(
        "kelp's model to hold the pod created after the restart",
        MINUTES,
        || {
            let path = format!("/api/v1/clusters/{}/pods/{ns}/after/why", context.trim());
            (serve.dash(&path)?.0 == 200).then_some(())
        },
    );
    eprintln!(
        "serve: the pod created after the restart was in kelp's model {:?} after the API server came back",
        back.elapsed()
    );
    // The log line is written by the same analysis pass that updates /metrics (and needs
    // the scheduler, which reconnects by itself, to mark the pod unschedulable).
    wait_for(
        "the pod created after the restart to be reported",
        MINUTES,
        || serve.logs().contains("Pod/e2e-restart/after").then_some(()),
    );
    let (_, metrics) = serve.get("/metrics").expect("/metrics answers");
    assert!(
        metrics.contains(r#"karpenter_helper_findings{code="pod-unschedulable""#),
        "{metrics}"
    );
    eprintln!(
        "serve: reconverged {:?} after the API server came back",
        back.elapsed()
    );
    assert_eq!(serve.get("/readyz").map(|r| r.0), Some(200));
    // Each finding appeared once: no duplicate after the relist.
    let logs = serve.logs();
    let appeared = |name: &str| {
        logs.lines()
            .filter(|l| {
                l.contains("\"appeared\"") && l.contains(&format!("Pod/e2e-restart/{name}"))
            })
            .count()
    };
    assert_eq!((appeared("before"), appeared("after")), (1, 1), "{logs}");
}

/// (Runs after serve_reconverges_..., whose log check needs the scheduler settled.)
/// An API server outage longer than kelp's staleness bound: `/readyz` must fail while
/// the watches make no progress (with the reason), `/livez` must stay up (restarting
/// kelp would not help), and both must recover by themselves once the server is back.
/// Prints how long after the server's return a new object reached kelp.
#[test]
fn serve_tells_an_api_server_outage_on_readyz_and_recovers() {
    let Some(e) = env() else { return };
    let ns = "e2e-outage";
    namespace(&e, ns);
    e.fresh(ns, &["after-outage"]);
    let serve = Serve::start(&e);
    wait_for("/readyz to be 200", MINUTES, || {
        (serve.get("/readyz")?.0 == 200).then_some(())
    });
    let dir = std::env::var("KELP_TESTENV_DIR").unwrap_or_else(|_| "/tmp/kelp-testenv".into());
    // Down for 45 s: past the 30 s staleness bound.
    let mut restart = std::process::Command::new("testenv/restart-apiserver")
        .args(["--signal", "KILL", "--down-for", "45"])
        .env("KELP_TESTENV_DIR", &dir)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let (_, why) = wait_for("/readyz to fail during the outage", MINUTES, || {
        assert_eq!(
            serve.get("/livez").map(|r| r.0),
            Some(200),
            "liveness never depends on the API server"
        );
        serve.get("/readyz").filter(|r| r.0 == 503)
    });
    assert!(why.contains("stale since"), "{why}");
    // The dashboard says so too (its next pass carries the banner and the API field).
    let context = e.ok(&["config", "current-context"]);
    wait_for("the dashboard to say it is stale", MINUTES, || {
        let (code, body) = serve.dash(&format!("/api/v1/clusters/{}/karpenter", context.trim()))?;
        (code == 200 && body.contains("\"stale\"")).then_some(())
    });
    let status = restart.wait().unwrap();
    assert!(status.success(), "testenv/restart-apiserver failed");
    let back = Instant::now();
    e.apply(&format!("apiVersion: v1\nkind: Pod\nmetadata: {{name: after-outage, namespace: {ns}}}\nspec:\n  nodeSelector: {{e2e.kelp.dev/nowhere: x}}\n  containers: [{{name: a, image: registry.k8s.io/pause:3.10}}]\n"));
    wait_for(
        "kelp's model to hold the pod created after the outage",
        MINUTES,
        || {
            let path = format!(
                "/api/v1/clusters/{}/pods/{ns}/after-outage/why",
                context.trim()
            );
            (serve.dash(&path)?.0 == 200).then_some(())
        },
    );
    let seen = back.elapsed();
    wait_for("/readyz to recover", MINUTES, || {
        (serve.get("/readyz")?.0 == 200).then_some(())
    });
    eprintln!(
        "serve: a pod created after a 45 s outage was in kelp's model {seen:?} after the API server was back; ready again {:?} after",
        back.elapsed()
    );
    assert!(serve.logs().contains("watch recovered"), "{}", serve.logs());
}
