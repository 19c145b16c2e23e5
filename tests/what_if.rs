//! `kelp what-if`: agrees with `kelp why pod` on the same objects, reads every kind of pod
//! template, assumes Ready pools for manifests without status, exits 1 when nothing fits,
//! and turns bad input into one line and exit 2.

use assert_cmd::Command;
use serde_json::Value;

const DIR: &str = "tests/fixtures/lint/what-if";
const NOW: &str = "2026-11-21T10:00:00Z";
/// Four real EC2 types in kelp's catalogue format.
const CATALOG: &str = "tests/fixtures/what-if/aws-catalog.yaml";

fn kelp() -> Command {
    let mut c = Command::cargo_bin("kelp").unwrap();
    c.env_remove("KUBECONFIG").env("NO_COLOR", "1");
    c
}

fn json(args: &[&str]) -> (Value, i32) {
    let out = kelp().args(args).args(["-o", "json"]).output().unwrap();
    let v = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "not JSON ({e}): {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (v, out.status.code().unwrap())
}

/// (name, verdict, reasons) per pool, in order.
fn verdicts(pools: &Value) -> Vec<(String, String, Value)> {
    pools
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["name"].as_str().unwrap().to_string(),
                p["verdict"].as_str().unwrap().to_string(),
                p["reasons"].clone(),
            )
        })
        .collect()
}

#[test]
fn agrees_with_why_pod_on_the_same_objects() {
    let pools = format!("{DIR}/pools.yaml");
    let pod = format!("{DIR}/pod.yaml");
    let (why, code) = json(&[
        "why",
        "pod",
        "ml/trainer-0",
        "--from",
        &pools,
        "--from",
        &pod,
        "--now",
        NOW,
        "--catalog",
        CATALOG,
    ]);
    assert_eq!(code, 0);
    let (what_if, code) = json(&[
        "what-if",
        "--pod",
        &pod,
        "--nodepools",
        &pools,
        "--catalog",
        CATALOG,
    ]);
    assert_eq!(code, 0, "general can take it");
    let expected = verdicts(&why["diagnosis"]["nodepools"]);
    let got = verdicts(&what_if["pods"][0]["nodepools"]);
    assert_eq!(got, expected);
    // Karpenter's order and each kind of verdict are exercised.
    let names: Vec<&str> = got.iter().map(|(n, _, _)| n.as_str()).collect();
    assert_eq!(names, ["gpu", "arm", "general", "default"]);
    let kinds: Vec<&str> = got.iter().map(|(_, v, _)| v.as_str()).collect();
    assert_eq!(kinds, ["rejected", "rejected", "compatible", "rejected"]);
    assert_eq!(what_if["pods"][0]["first"], "general");
    assert_eq!(what_if["pods"][0]["requests"], why["diagnosis"]["requests"]);
    // The same launch: 4 CPUs need m5.2xlarge (m5.xlarge has 3920m), spot first on AWS.
    let launch = &what_if["pods"][0]["nodepools"][2]["launch"];
    assert_eq!(launch, &verdict_launch(&why, "general"));
    assert_eq!(launch["cheapest"][0]["instanceType"], "m5.2xlarge");
    assert_eq!(launch["cheapest"][0]["capacityType"], "spot");
    assert_eq!(what_if["catalog"], "file");
    assert_eq!(
        what_if["assumedReady"],
        serde_json::json!([]),
        "these pools carry status"
    );
}

fn verdict_launch(why: &Value, pool: &str) -> Value {
    why["diagnosis"]["nodepools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["name"] == pool)
        .unwrap()["launch"]
        .clone()
}

#[test]
fn workload_templates_against_pools_from_git() {
    let run = |catalog: bool| {
        let mut args = vec![
            "what-if".to_string(),
            "--pod".into(),
            format!("{DIR}/workloads.yaml"),
            "--nodepools".into(),
            format!("{DIR}/pools-from-git.yaml"),
        ];
        if catalog {
            args.extend(["--catalog".into(), CATALOG.into()]);
        }
        json(&args.iter().map(String::as_str).collect::<Vec<_>>())
    };
    // Without a catalogue no pool is called compatible: nothing checked an instance type.
    let (v, code) = run(false);
    assert_eq!(
        code, 3,
        "neither workload can be judged without a catalogue"
    );
    for p in v["pods"].as_array().unwrap() {
        assert_eq!(p["answer"], "unknown", "{p}");
        assert!(
            p["nodepools"]
                .as_array()
                .unwrap()
                .iter()
                .all(|v| v["verdict"] != "compatible"),
            "{p}"
        );
    }
    let web = &v["pods"][0]["nodepools"][1];
    assert_eq!(
        web["reasons"][0]["message"],
        "cannot tell: no instance-type catalogue (whether an instance type holds cpu 500m, memory 1Gi beside the pool's DaemonSets)"
    );
    let (v, code) = run(true);
    assert_eq!(code, 0, "with the catalogue both fit");
    assert_eq!(
        v["assumedReady"],
        serde_json::json!(["default", "general", "gpu"])
    );
    let pods = v["pods"].as_array().unwrap();
    assert_eq!(pods.len(), 2);
    assert_eq!(
        (pods[0]["kind"].as_str(), pods[0]["pod"].as_str()),
        (Some("Deployment"), Some("shop/web"))
    );
    assert_eq!(
        pods[0]["first"], "general",
        "weight 0 ties go to names descending"
    );
    assert_eq!(pods[0]["nodepools"][0]["weight"], 10);
    assert_eq!(pods[0]["nodepools"][0]["reasons"][0]["category"], "taints");
    assert_eq!(pods[0]["answer"], "fits");
    assert_eq!(
        pods[0]["nodepools"][1]["launch"]["cheapest"][0]["instanceType"],
        "m5.xlarge"
    );
    assert_eq!(
        (pods[1]["kind"].as_str(), pods[1]["first"].as_str()),
        (Some("CronJob"), Some("gpu"))
    );
    assert_eq!(pods[1]["answer"], "fits");
    assert_eq!(pods[1]["nodepools"][0]["name"], "gpu");
    assert_eq!(
        pods[1]["nodepools"][0]["launch"]["cheapest"][0]["instanceType"], "g4dn.xlarge",
        "the only type with a GPU"
    );
    assert_eq!(
        pods[1]["requests"]["nvidia.com/gpu"], "1",
        "requests default to limits"
    );
}

#[test]
fn exits_1_when_no_pool_can_take_it() {
    let out = kelp()
        .args([
            "what-if",
            "--pod",
            &format!("{DIR}/unfit.yaml"),
            "--nodepools",
            &format!("{DIR}/pools-from-git.yaml"),
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.starts_with("StatefulSet data/db · requests cpu 16\n"),
        "{text}"
    );
    assert!(text.contains("No NodePool can take this pod"), "{text}");
    assert!(
        text.contains("label \"example.com/storage\" does not have known values"),
        "{text}"
    );
    // Requirements come before instance types in Karpenter's order, so the label is what
    // rejects general and default, not the pod's size against their cpu limit of 10.
    assert!(!text.contains("remaining limits fits the pod"), "{text}");
    assert!(text.contains(
        "Assumed Ready with nothing in use (no status in the manifests): default, general, gpu"
    ));
}

#[test]
fn yaml_output_and_stdin() {
    let pod = std::fs::read_to_string(format!("{DIR}/pod.yaml")).unwrap();
    let out = kelp()
        .args([
            "what-if",
            "--pod",
            "-",
            "--nodepools",
            &format!("{DIR}/pools.yaml"),
            "--catalog",
            CATALOG,
            "-o",
            "yaml",
        ])
        .write_stdin(pod)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let v: Value = serde_norway::from_slice(&out.stdout).unwrap();
    assert_eq!(v["pods"][0]["pod"], "ml/trainer-0");
    assert_eq!(v["pods"][0]["first"], "general");
}

fn one_line_error(args: &[&str]) -> String {
    let out = kelp().args(args).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{args:?}");
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(!err.contains("panicked"), "{err}");
    err
}

#[test]
fn bad_input_is_one_line_and_exit_2() {
    let pools = format!("{DIR}/pools.yaml");
    let tmp = tempfile::tempdir().unwrap();
    let e = one_line_error(&[
        "what-if",
        "--pod",
        "no/such/pod.yaml",
        "--nodepools",
        &pools,
    ]);
    assert!(e.starts_with("error: cannot read no/such/pod.yaml"), "{e}");
    // A file with no pod in it.
    let e = one_line_error(&["what-if", "--pod", &pools, "--nodepools", &pools]);
    assert!(e.contains("no Pod or workload with a pod template"), "{e}");
    // Broken YAML.
    let broken = tmp.path().join("broken.yaml");
    std::fs::write(&broken, "kind: Pod\nspec: [\n").unwrap();
    let e = one_line_error(&[
        "what-if",
        "--pod",
        broken.to_str().unwrap(),
        "--nodepools",
        &pools,
    ]);
    assert!(e.contains("broken.yaml: line"), "{e}");
    // No NodePools where they should be.
    let pod = format!("{DIR}/pod.yaml");
    let e = one_line_error(&["what-if", "--pod", &pod, "--nodepools", &pod]);
    assert!(e.contains("no karpenter.sh/v1 NodePools found"), "{e}");
    // A pod spec of the wrong shape.
    let wrong = tmp.path().join("wrong.yaml");
    std::fs::write(
        &wrong,
        "apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec:\n  containers: 5\n",
    )
    .unwrap();
    let e = one_line_error(&[
        "what-if",
        "--pod",
        wrong.to_str().unwrap(),
        "--nodepools",
        &pools,
    ]);
    assert!(e.contains("Pod x"), "{e}");
    let out = kelp().args(["what-if", "--pod", &pod]).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "--nodepools is required");
}

const CAPTURE: &str = "tests/fixtures/real/karpenter-v1.15.0/cluster.json";
const IMPACT: &str = "tests/fixtures/what-if/impact";

/// Without --pod: the changed pools against a real capture. Every node of each changed pool
/// once, with Karpenter's reason or null; the waves; exit 0.
#[test]
fn the_impact_of_a_change_lists_each_node_once_with_its_drift() {
    let file = format!("{IMPACT}/label-and-limit.yaml");
    let (v, code) = json(&["what-if", "--nodepools", &file, "--from", CAPTURE]);
    assert_eq!(code, 0, "{v:#}");
    let nodes = v["nodes"].as_array().unwrap();
    let of =
        |pool: &str| -> Vec<&Value> { nodes.iter().filter(|n| n["nodepool"] == pool).collect() };
    assert_eq!(of("cap-drift").len(), 6);
    assert!(
        of("cap-drift")
            .iter()
            .all(|n| n["drift"] == "NodePoolDrifted"),
        "{v:#}"
    );
    assert_eq!(of("cap-limits").len(), 1);
    assert!(of("cap-limits")[0]["drift"].is_null());
    let mut claims: Vec<&str> = nodes
        .iter()
        .map(|n| n["nodeclaim"].as_str().unwrap())
        .collect();
    let all = claims.len();
    claims.sort();
    claims.dedup();
    assert_eq!(claims.len(), all, "a node listed twice");
    for n in nodes {
        assert!(n["name"].as_str().unwrap().starts_with("kwok-"), "{n}");
    }
    let drift = &v["nodepools"][0];
    // Five of the six are held by blockers of their own: the waves are the sixth's.
    assert_eq!(drift["waves"]["perWave"], 2);
    assert_eq!(drift["waves"]["count"], 1);
    assert_eq!(drift["waves"]["blockedNodes"], 5);
    assert_eq!(v["nodepools"][1]["changes"][0]["field"], "spec.limits");
    assert_eq!(v["nodepools"][1]["changes"][0]["drifts"], "nothing");

    let (text, _) = impact(&file, "table");
    assert!(
        text.contains("NodePool cap-drift · 6 node(s) · 6 will drift"),
        "{text}"
    );
    assert!(text.contains("2 node(s) at a time, 1 wave(s)"), "{text}");
    assert!(text.contains("5 held by blockers of their own"), "{text}");
    assert!(text.contains("spec.limits (drifts nothing)"), "{text}");
}

#[test]
fn a_blocked_rollout_exits_1_and_an_unhashable_template_exits_3() {
    let (v, code) = json(&[
        "what-if",
        "--nodepools",
        &format!("{IMPACT}/blocked.yaml"),
        "--from",
        CAPTURE,
    ]);
    assert_eq!(code, 1, "{v:#}");
    assert!(v["nodepools"][0]["waves"]["blocked"].is_string(), "{v:#}");
    let (v, code) = json(&[
        "what-if",
        "--nodepools",
        &format!("{IMPACT}/unhashable.yaml"),
        "--from",
        CAPTURE,
    ]);
    assert_eq!(code, 3, "{v:#}");
    assert!(v["nodes"][0]["drift"].is_null());
    assert!(
        v["nodes"][0]["unknown"]
            .as_str()
            .unwrap()
            .contains("timeAdded"),
        "{v:#}"
    );
}

/// Pods a change leaves with no pool: listed with their node, and exit 1.
#[test]
fn pods_left_without_a_pool_exit_1() {
    let file = format!("{IMPACT}/stranded.yaml");
    let (v, code) = json(&["what-if", "--nodepools", &file, "--from", CAPTURE]);
    assert_eq!(code, 1, "{v:#}");
    let stranded = v["pods"]["stranded"].as_array().unwrap();
    assert!(!stranded.is_empty(), "{v:#}");
    assert!(stranded
        .iter()
        .all(|s| s["after"] == "nowhere" && s["before"] == "cap-drift"));
    let (text, _) = impact(&file, "table");
    assert!(
        text.contains("Karpenter will not replace their nodes"),
        "{text}"
    );
}

fn run(args: &[&str]) -> (String, i32) {
    let out = kelp().args(args).output().unwrap();
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        out.status.code().unwrap(),
    )
}

/// `what-if --nodepools FILE --from CAPTURE -o OUTPUT`: stdout and the exit status.
fn impact(file: &str, output: &str) -> (String, i32) {
    run(&[
        "what-if",
        "--nodepools",
        file,
        "--from",
        CAPTURE,
        "-o",
        output,
    ])
}

/// The pull-request comment: a summary table, what breaks, the nodes collapsed.
#[test]
fn markdown_is_a_pull_request_comment() {
    let file = format!("{IMPACT}/stranded.yaml");
    let (md, code) = impact(&file, "markdown");
    assert_eq!(code, 1, "{md}");
    assert!(
        md.starts_with("### kelp: the impact of this NodePool change\n"),
        "{md}"
    );
    assert!(
        md.contains("| NodePool | nodes | drift | rollout | changed |"),
        "{md}"
    );
    assert!(
        md.contains("| cap-drift | 6 | 6 | 1 at a time, 1 wave(s), ~15s; 5 held by blockers |"),
        "{md}"
    );
    assert!(
        md.contains("Pods no NodePool takes after the change"),
        "{md}"
    );
    assert!(md.contains("<details><summary>Nodes (6)</summary>"), "{md}");
    assert_eq!(md.matches("| NodePoolDrifted |").count(), 6, "{md}");
    // docs/what-if.md shows this very comment.
    let doc = std::fs::read_to_string("docs/what-if.md").unwrap();
    assert!(
        doc.contains(&md),
        "docs/what-if.md's example is out of date:\n{md}"
    );
}

/// SARIF: a result per broken or drifting pool, at its manifest's line, naming its rule.
#[test]
fn sarif_points_at_the_changed_pool() {
    let file = format!("{IMPACT}/label-and-limit.yaml");
    let (text, code) = impact(&file, "sarif");
    assert_eq!(code, 0, "{text}");
    let v: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["version"], "2.1.0");
    let results = v["runs"][0]["results"].as_array().unwrap();
    // cap-drift drifts (a note at its document's line); cap-limits drifts nothing.
    assert_eq!(results.len(), 1, "{text}");
    assert_eq!(results[0]["ruleId"], "nodepool-change-drifts-nodes");
    let loc = &results[0]["locations"][0]["physicalLocation"];
    assert_eq!(loc["artifactLocation"]["uri"], file);
    assert_eq!(loc["region"]["startLine"], 3);
    let rules = v["runs"][0]["tool"]["driver"]["rules"].as_array().unwrap();
    assert_eq!(
        rules[results[0]["ruleIndex"].as_u64().unwrap() as usize]["id"],
        results[0]["ruleId"]
    );
}

#[test]
fn fail_on_sets_the_threshold() {
    let drift = format!("{IMPACT}/label-and-limit.yaml");
    let stranded = format!("{IMPACT}/stranded.yaml");
    let code = |file: &str, when: &str| {
        run(&[
            "what-if",
            "--nodepools",
            file,
            "--from",
            CAPTURE,
            "-o",
            "json",
            "--fail-on",
            when,
        ])
        .1
    };
    assert_eq!(code(&drift, "break"), 0);
    assert_eq!(code(&drift, "drift"), 1);
    assert_eq!(code(&stranded, "break"), 1);
    assert_eq!(code(&stranded, "never"), 0);
    // Without --pod only: markdown and SARIF are for a change.
    let (_, c) = run(&[
        "what-if",
        "--pod",
        "tests/fixtures/lint/what-if/pod.yaml",
        "--nodepools",
        CAPTURE,
        "-o",
        "sarif",
    ]);
    assert_eq!(c, 2);
}

#[test]
fn impact_input_mistakes_are_one_line_and_exit_2() {
    let cases: &[(&[&str], &str)] = &[
        (
            &[
                "what-if",
                "--pod",
                "x.yaml",
                "--nodepools",
                CAPTURE,
                "--from",
                CAPTURE,
            ],
            "with --pod, give the pools (or a dump) to --nodepools",
        ),
        (
            &[
                "what-if",
                "--nodepools",
                "tests/fixtures/what-if/aws-catalog.yaml",
                "--from",
                CAPTURE,
            ],
            "no karpenter.sh/v1 NodePools found in --nodepools",
        ),
        (
            &[
                "what-if",
                "--nodepools",
                &format!("{IMPACT}/blocked.yaml"),
                &format!("{IMPACT}/blocked.yaml"),
                "--from",
                CAPTURE,
            ],
            "NodePool cap-drift is given twice",
        ),
    ];
    for (args, want) in cases {
        let out = kelp().args(*args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    }
}

/// `--nodeclasses`: a hashed field of the demo's EC2NodeClass drifts every node launched
/// from it with its hash, in every pool on it; a subnet selector makes them unknown (exit
/// 3); a mistake is one line and exit 2.
#[test]
fn a_changed_ec2nodeclass_drifts_the_nodes_of_every_pool_on_it() {
    let demo = concat!(env!("CARGO_MANIFEST_DIR"), "/demo/cluster.yaml");
    let tags = format!("{IMPACT}/nodeclass-tags.yaml");
    let (v, code) = json(&["what-if", "--nodeclasses", &tags, "--from", demo]);
    assert_ne!(code, 2, "{v:#}");
    let class = &v["nodeclasses"][0];
    assert_eq!(class["name"], "default");
    assert_eq!(class["hashChanges"], true);
    assert_eq!(class["changes"][0]["field"], "spec.tags");
    let on: Vec<&str> = class["nodepools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p.as_str().unwrap())
        .collect();
    assert!(on.contains(&"default") && !on.contains(&"gpu"), "{on:?}");
    let nodes = v["nodes"].as_array().unwrap();
    assert!(!nodes.is_empty());
    for n in nodes {
        assert!(on.contains(&n["nodepool"].as_str().unwrap()), "{n}");
        assert_eq!(n["drift"], "NodeClassDrift", "{n}");
    }
    for p in v["nodepools"].as_array().unwrap() {
        assert_eq!(p["viaNodeclass"], "default");
        assert!(p["changes"].as_array().unwrap().is_empty());
    }

    let subnets = format!("{IMPACT}/nodeclass-subnets.yaml");
    let (v, code) = json(&["what-if", "--nodeclasses", &subnets, "--from", demo]);
    assert_eq!(code, 3, "{v:#}");
    assert_eq!(v["nodeclasses"][0]["hashChanges"], false);
    // Its metadataOptions left to the API server's defaults: not a change.
    assert_eq!(v["nodeclasses"][0]["changes"].as_array().unwrap().len(), 1);
    for n in v["nodes"].as_array().unwrap() {
        assert!(n["drift"].is_null());
        assert!(
            n["unknown"].as_str().unwrap().contains("SubnetDrift"),
            "{n}"
        );
    }

    let on_demo = |output: &str| {
        run(&[
            "what-if",
            "--nodeclasses",
            &tags,
            "--from",
            demo,
            "-o",
            output,
        ])
        .0
    };
    let md = on_demo("markdown");
    assert!(
        md.contains("| EC2NodeClass | hash | NodePools | changed |"),
        "{md}"
    );
    assert!(md.contains("its EC2NodeClass default"), "{md}");
    let sarif: Value = serde_json::from_str(&on_demo("sarif")).unwrap();
    let results = sarif["runs"][0]["results"].as_array().unwrap();
    let at_class = results
        .iter()
        .find(|r| {
            r["message"]["text"]
                .as_str()
                .unwrap()
                .starts_with("EC2NodeClass default")
        })
        .expect("a result at the class");
    assert_eq!(
        at_class["locations"][0]["physicalLocation"]["region"]["startLine"],
        3
    );

    let err = one_line_error(&[
        "what-if",
        "--nodeclasses",
        &format!("{IMPACT}/label-and-limit.yaml"),
        "--from",
        demo,
    ]);
    assert!(
        err.contains("no karpenter.k8s.aws/v1 EC2NodeClasses"),
        "{err}"
    );
}
