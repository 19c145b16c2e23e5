//! The command line's user experience (issue 12): the demo dump round trip, what-if's
//! unknown answers, quiet notes, help text, the kubectl plugin, completions, aligned
//! colour tables and doctor's filters and summary.

use assert_cmd::Command;
use serde_json::Value;

#[allow(dead_code)]
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

fn what_if(pod: &str) -> (Value, i32) {
    let (out, err, code) = stdout(kelp().args([
        "what-if",
        "--pod",
        pod,
        "--nodepools",
        "tests/fixtures/what-if/t3-m4-pools.yaml",
        "-o",
        "json",
    ]));
    (
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}{err}")),
        code,
    )
}

#[test]
fn what_if_never_calls_compatible_what_it_could_not_check() {
    let (v, code) = what_if("tests/fixtures/what-if/exotic-pods.yaml");
    assert_eq!(code, 3, "unknown has its own exit status");
    let pods = v["pods"].as_array().unwrap();
    assert_eq!(pods.len(), 2);
    for (pod, dimension) in [
        (&pods[0], "architecture kubernetes.io/arch In [s390x]"),
        (&pods[1], "extended resource nvidia.com/gpu"),
    ] {
        assert_eq!(pod["answer"], "unknown", "{pod}");
        assert_eq!(pod["first"], Value::Null, "{pod}");
        for pool in pod["nodepools"].as_array().unwrap() {
            assert_eq!(pool["verdict"], "unknown", "{pool}");
            let why = pool["reasons"][0]["message"].as_str().unwrap();
            assert_eq!(
                why,
                format!("cannot tell: no instance-type catalogue ({dimension})")
            );
        }
    }
    // The table says so in words, and never "compatible".
    let (text, _, code) = stdout(kelp().args([
        "what-if",
        "--pod",
        "tests/fixtures/what-if/exotic-pods.yaml",
        "--nodepools",
        "tests/fixtures/what-if/t3-m4-pools.yaml",
    ]));
    assert_eq!(code, 3);
    assert!(!text.contains("compatible"), "{text}");
    assert!(text.contains("Cannot tell"), "{text}");

    // What the pools do settle is still judged: exit 0.
    let (v, code) = what_if("tests/fixtures/what-if/plain-pod.yaml");
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["pods"][0]["first"], "general");
    assert_eq!(v["pods"][0]["nodepools"][0]["verdict"], "rejected");
}
