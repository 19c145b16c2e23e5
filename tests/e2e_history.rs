//! End to end, on the real control plane with the real Karpenter: `kelp serve --state-dir`
//! keeps a consolidation Karpenter makes while it runs, across a restart, and
//! `kelp history node` then says when and why the node went and which pods were evicted
//! from it; `kelp history import` of Karpenter's own log gives the same node's life.
//!
//! Without a running testenv this test says so and passes, unless `KELP_E2E=1`.

mod common;

use std::path::Path;
use std::process::Command;

use common::half_empty::*;
use common::*;
use serde_json::Value;

fn history(state: &Path, args: &[&str]) -> Vec<Value> {
    let out = Command::new(env!("CARGO_BIN_EXE_kelp"))
        .arg("history")
        .args(args)
        .args(["--since", "2h", "-o", "json", "--state-dir"])
        .arg(state)
        .output()
        .unwrap();
    serde_json::from_slice(&out.stdout).unwrap_or_default()
}

fn whats(rows: &[Value]) -> Vec<String> {
    rows.iter()
        .map(|r| {
            format!(
                "{} {}",
                r["object"]["kind"].as_str().unwrap_or(""),
                r["what"].as_str().unwrap_or("")
            )
        })
        .collect()
}

#[test]
fn a_consolidation_is_remembered_across_a_restart_and_rebuilt_from_karpenters_log() {
    let Some(e) = env() else { return };
    let state = tempfile::tempdir().unwrap();
    let dir = state.path().to_str().unwrap().to_string();
    let serve = Serve::start_with(&e, &["--state-dir", &dir]);
    let ns = "e2e-history";
    namespace(&e, ns);
    let p = format!("e2e-hist-{}", run_id());
    let ([a, b], [first, second]) = two_half_empty_nodes(&e, ns, &p, "");
    let claims = [claim_of(&e, &first), claim_of(&e, &second)];
    nudge(&e, &p, "17");
    let gone = one_removed(&e, [&first, &second]);
    let claim = if gone == first {
        &claims[0]
    } else {
        &claims[1]
    };
    // serve writes the claim's deletion once Karpenter has removed it.
    let rows = wait_for("serve to record the deletion", 3 * MINUTES, || {
        let rows = history(state.path(), &["node", &gone]);
        whats(&rows)
            .contains(&"NodeClaim deleted".to_string())
            .then_some(rows)
    });
    drop(serve);
    // A restart on the same directory carries on: the store opens, nothing is lost.
    let again = Serve::start_with(&e, &["--state-dir", &dir]);
    wait_for("the restarted serve to be ready", 2 * MINUTES, || {
        again.get("/readyz").filter(|(s, _)| *s == 200)
    });
    std::thread::sleep(std::time::Duration::from_secs(3));
    drop(again);
    let after = history(state.path(), &["node", &gone]);
    assert!(
        after.len() >= rows.len(),
        "rows went missing across the restart"
    );
    let w = whats(&after);
    for step in [
        "NodeClaim created",
        "NodeClaim launched",
        "NodeClaim initialized",
        "NodeClaim deleted",
    ] {
        assert_eq!(
            w.iter().filter(|x| *x == step).count(),
            1,
            "{step} once: {w:#?}"
        );
    }
    // Why: Karpenter's disruption of it, as its claim's condition and its event say.
    let disrupting = after
        .iter()
        .find(|r| r["what"] == "disrupting")
        .unwrap_or_else(|| panic!("no disrupting step: {w:#?}"));
    assert_eq!(
        disrupting["details"]["reason"], "Underutilized",
        "{disrupting:#}"
    );
    assert!(
        after.iter().any(|r| r["what"] == "DisruptionTerminating"
            && r["message"]
                .as_str()
                .is_some_and(|m| m.contains("Underutilized"))),
        "{w:#?}"
    );
    // Which pods were evicted from it.
    let evicted: Vec<&str> = after
        .iter()
        .filter(|r| r["what"] == "Evicted")
        .filter_map(|r| r["object"]["name"].as_str())
        .collect();
    assert!(
        evicted
            .iter()
            .any(|p| p.starts_with(a.as_str()) || p.starts_with(b.as_str())),
        "no eviction of {a} or {b} on {gone}: {w:#?}"
    );
    // A support dump carries it: `kelp why --from` the snapshot says what happened before.
    let snap = state.path().join("snapshot.json");
    let out = e.kelp(&["snapshot", "--history", &dir, "-f", snap.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let survivor = if gone == first { &second } else { &first };
    let out = Command::new(env!("CARGO_BIN_EXE_kelp"))
        .env("NO_COLOR", "1")
        .args(["why", "node", survivor, "--from"])
        .arg(&snap)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.split_once("What happened before")
            .is_some_and(|(_, t)| t.contains("launched")),
        "{text}"
    );
    // The same node's life from Karpenter's own log, into a store of its own.
    let imported = tempfile::tempdir().unwrap();
    let log = Path::new(
        &std::env::var("KELP_TESTENV_DIR").unwrap_or_else(|_| "/tmp/kelp-testenv".into()),
    )
    .join("logs/karpenter.log");
    let out = Command::new(env!("CARGO_BIN_EXE_kelp"))
        .args(["history", "import"])
        .arg(&log)
        .arg("--state-dir")
        .arg(imported.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let from_log = history(imported.path(), &["nodeclaim", claim]);
    let w = whats(&from_log);
    for step in [
        "NodeClaim created",
        "NodeClaim launched",
        "NodeClaim disruption decided",
        "NodeClaim deleted",
    ] {
        assert!(w.contains(&step.to_string()), "{step}: {w:#?}");
    }
    let decided = from_log
        .iter()
        .find(|r| r["what"] == "disruption decided")
        .unwrap();
    assert_eq!(decided["details"]["reason"], "Underutilized");
    assert_eq!(decided["node"].as_str(), Some(gone.as_str()));
    clean_up(&e, ns, &[&a, &b], &p);
}
