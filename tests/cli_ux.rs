//! The command line's user experience (issue 12): the demo dump round trip, what-if's
//! unknown answers, quiet notes, help text, the kubectl plugin, completions, aligned
//! colour tables and doctor's filters and summary.

use assert_cmd::Command;
use serde_json::Value;

const SMALL: &str = "tests/data/small.yaml";

fn kelp() -> Command {
    let mut c = Command::cargo_bin("kelp").unwrap();
    c.env_remove("KUBECONFIG").env("NO_COLOR", "1");
    c
}

fn stdout(c: &mut Command) -> (String, String, i32) {
    let out = c.output().unwrap();
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        out.status.code().unwrap_or(-1),
    )
}

#[test]
fn demo_dump_round_trip_gives_the_demo_report() {
    let (dump, _, code) = stdout(kelp().args(["demo", "--dump"]));
    assert_eq!(code, 0);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("demo.yaml");
    std::fs::write(&path, dump).unwrap();
    let (direct, _, _) = stdout(kelp().args(["demo", "-o", "json"]));
    let (offline, err, _) = stdout(kelp().args(["doctor", "-o", "json", "--from"]).arg(&path));
    let direct: Value = serde_json::from_str(&direct).unwrap();
    let offline: Value = serde_json::from_str(&offline).unwrap_or_else(|e| panic!("{e}: {err}"));
    assert_eq!(direct["generatedAt"], "2026-11-21T10:00:00Z");
    assert_eq!(direct["findings"], offline["findings"]);
    assert_eq!(direct["generatedAt"], offline["generatedAt"]);
    assert_eq!(direct["karpenter"], offline["karpenter"]);
}
