//! `kelp lint`: every rule fires on its bad example at the marked lines and stays silent on
//! its near miss (`tests/fixtures/lint/<rule>/`), a best-practice set is clean, the three
//! output formats (SARIF validated against the official 2.1.0 schema), suppression
//! comments, `.kelp.yaml`, exit codes and bad input.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use assert_cmd::Command;
use kelp::findings::Severity;
use kelp::lint::{self, rules::RULES, Config};
use serde_json::Value;

const FIXTURES: &str = "tests/fixtures/lint";

fn kelp() -> Command {
    let mut c = Command::cargo_bin("kelp").unwrap();
    c.env_remove("KUBECONFIG").env("NO_COLOR", "1");
    c
}

/// A fixture folder's own `.kelp.yaml` (e.g. the Karpenter release it is for), if any.
fn config_in(dir: &Path) -> Option<PathBuf> {
    Some(dir.join(".kelp.yaml")).filter(|p| p.is_file())
}

fn lint_dir(dir: &Path) -> lint::Report {
    let inputs = lint::read_inputs(&[dir.to_path_buf()]).unwrap();
    let config = config_in(dir).map_or_else(Config::default, |p| Config::load(&p).unwrap());
    lint::lint(&inputs, &config)
}

/// `(file, line)` of every `expect: RULE` marker (a YAML comment, or a JSON string) for `rule`.
fn markers(dir: &Path, rule: &str) -> BTreeSet<(String, usize)> {
    let mut out = BTreeSet::new();
    for input in lint::read_inputs(&[dir.to_path_buf()]).unwrap() {
        for (i, line) in input.text.lines().enumerate() {
            let Some((_, names)) = line.split_once("expect: ") else {
                continue;
            };
            let names = names.trim_end_matches(['"', ' ', '}']);
            if names
                .split(|c: char| c == ',' || c.is_whitespace())
                .any(|n| n == rule)
            {
                out.insert((input.name.clone(), i + 1));
            }
        }
    }
    out
}

fn subdirs(dir: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    out.sort();
    out
}

#[test]
fn every_rule_fires_at_the_marked_lines_and_stays_silent_on_its_near_miss() {
    for rule in RULES {
        let dir = Path::new(FIXTURES).join(rule.id);
        assert!(dir.is_dir(), "no fixtures for {}", rule.id);
        let bad = dir.join("bad");
        let want = markers(&bad, rule.id);
        assert!(
            !want.is_empty(),
            "{}: no `expect:` markers in bad/",
            rule.id
        );
        let got: BTreeSet<(String, usize)> = lint_dir(&bad)
            .results
            .into_iter()
            .filter(|r| r.rule == rule.id)
            .inspect(|r| {
                assert_eq!(r.severity, rule.severity, "{r:?}");
                assert!(r.message.len() > 20, "say what to change: {r:?}");
            })
            .map(|r| (r.file, r.line))
            .collect();
        assert_eq!(got, want, "{}: results vs markers", rule.id);
        let near: Vec<PathBuf> = subdirs(&dir)
            .into_iter()
            .filter(|p| {
                p.file_name()
                    .unwrap()
                    .to_string_lossy()
                    .starts_with("near-miss")
            })
            .collect();
        assert!(!near.is_empty(), "{}: no near-miss", rule.id);
        for n in near {
            let fired: Vec<_> = lint_dir(&n)
                .results
                .into_iter()
                .filter(|r| r.rule == rule.id)
                .collect();
            assert!(
                fired.is_empty(),
                "{} fired on its near miss: {fired:#?}",
                rule.id
            );
        }
    }
}

#[test]
fn a_best_practice_set_is_clean() {
    let report = lint_dir(&Path::new(FIXTURES).join("clean"));
    assert_eq!(report.objects, 6);
    assert!(report.results.is_empty(), "{:#?}", report.results);
    kelp()
        .args(["lint", "tests/fixtures/lint/clean", "--fail-on", "info"])
        .assert()
        .success()
        .stdout("");
}

#[test]
fn lines_point_at_the_field_in_multi_document_streams_from_stdin() {
    // kustomize build output: several documents, the offending fields deep in the third.
    let stream = "\
apiVersion: v1
kind: Namespace
metadata:
  name: karpenter
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: unrelated
data:
  expireAfter: Never
---
apiVersion: karpenter.sh/v1
kind: NodePool
metadata:
  name: default
spec:
  limits:
    cpu: \"100\"
  disruption:
    consolidateAfter: 10m
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      expireAfter: Never
      requirements:
        - key: karpenter.k8s.aws/instance-category
          operator: In
          values: [c, m, r]
        - key: karpenter.k8s.aws/instance-generation
          operator: Gt
          values: [\"5\"]
";
    let out = kelp()
        .args(["lint", "-"])
        .write_stdin(stream)
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let text = String::from_utf8(out).unwrap();
    assert_eq!(
        text,
        "<stdin>:25: warning expire-after-never: NodePool default sets expireAfter: Never, so its nodes are never rotated: set a duration such as 720h\n\
         <stdin>:26: info missing-min-values: NodePool default has no karpenter.sh/capacity-type requirement, so it allows spot (Karpenter launches spot before on-demand) without minValues: add minValues (e.g. instance-family Exists, minValues: 5) so Karpenter keeps a floor of instance flexibility\n"
    );
}

#[test]
fn text_lines_follow_file_line_severity_rule_message() {
    let out = kelp()
        .args(["lint", "tests/fixtures/lint/budget-blocks-all/bad"])
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(!text.is_empty());
    let shape =
        regex::Regex::new(r"^[^:]+\.ya?ml:\d+: (critical|warning|info) [a-z0-9-]+: \S.*$").unwrap();
    for line in text.lines() {
        assert!(shape.is_match(line), "{line}");
    }
    assert!(text.contains("pool.yaml:10: warning budget-blocks-all: "));
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(
        stderr.starts_with("kelp lint: 1 file, 2 Karpenter objects"),
        "{stderr}"
    );
}

#[test]
fn json_is_results_with_rule_severity_file_line_message() {
    let out = kelp()
        .args([
            "lint",
            "tests/fixtures/lint/imds-not-locked/bad",
            "-o",
            "json",
        ])
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let results = v["results"].as_array().unwrap();
    assert_eq!(v.as_object().unwrap().len(), 2);
    assert_eq!(
        v["karpenterVersion"], "v1.15.0",
        "the newest release kelp knows"
    );
    assert!(!results.is_empty());
    for r in results {
        let keys: BTreeSet<&str> = r.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(
            keys,
            BTreeSet::from(["rule", "severity", "file", "line", "message"])
        );
    }
    let first = &results[0];
    assert_eq!(first["rule"], "imds-not-locked");
    assert_eq!(first["severity"], "warning");
    assert_eq!(
        first["file"],
        "tests/fixtures/lint/imds-not-locked/bad/nodeclass.yaml"
    );
    assert_eq!(first["line"], 11);
}

/// The official SARIF 2.1.0 schema, as the serde-sarif crate ships it in its source
/// (cargo has unpacked it into the registry to build kelp).
fn sarif_schema() -> Value {
    let lock = std::fs::read_to_string("Cargo.lock").unwrap();
    let version = lock
        .split("[[package]]")
        .find(|p| p.contains("name = \"serde-sarif\""))
        .and_then(|p| p.lines().find_map(|l| l.strip_prefix("version = \"")))
        .map(|v| v.trim_end_matches('"').to_string())
        .expect("serde-sarif in Cargo.lock");
    let home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo")))
        .expect("CARGO_HOME or HOME");
    let registry = home.join("registry").join("src");
    let path = std::fs::read_dir(&registry)
        .unwrap_or_else(|e| panic!("{}: {e}", registry.display()))
        .map(|e| {
            e.unwrap()
                .path()
                .join(format!("serde-sarif-{version}/src/schema.json"))
        })
        .find(|p| p.is_file())
        .unwrap_or_else(|| {
            panic!(
                "serde-sarif-{version}/src/schema.json not under {}",
                registry.display()
            )
        });
    let schema: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert_eq!(
        schema["title"],
        "Static Analysis Results Format (SARIF) Version 2.1.0 JSON Schema",
        "{}",
        path.display()
    );
    schema
}

fn sarif_of(path: &str) -> Value {
    let mut cmd = kelp();
    cmd.args(["lint", path, "-o", "sarif", "--fail-on", "never"]);
    if let Some(config) = config_in(Path::new(path)) {
        cmd.arg("--config").arg(config);
    }
    let out = cmd.output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn sarif_is_valid_against_the_official_2_1_0_schema() {
    // Each rule's bad example on its own (so every rule's results are checked), then every
    // fixture at once.
    let mut logs: Vec<Value> = RULES
        .iter()
        .map(|r| sarif_of(&format!("{FIXTURES}/{}/bad", r.id)))
        .collect();
    logs.push(sarif_of(FIXTURES));
    let mut schema = sarif_schema();
    // The published 2.1.0 schema has a stray `]` in its `language` patterns, which a strict
    // meta-schema check rejects as a regex; escaping it keeps its meaning (a literal `]`).
    fn escape_stray_bracket(v: &mut Value) -> usize {
        match v {
            Value::Object(m) => m
                .iter_mut()
                .map(|(k, v)| match (k.as_str(), v.as_str()) {
                    ("pattern", Some("^[a-zA-Z]{2}|^[a-zA-Z]{2}-[a-zA-Z]{2}]?$")) => {
                        *v = "^[a-zA-Z]{2}|^[a-zA-Z]{2}-[a-zA-Z]{2}\\]?$".into();
                        1
                    }
                    _ => escape_stray_bracket(v),
                })
                .sum(),
            Value::Array(items) => items.iter_mut().map(escape_stray_bracket).sum(),
            _ => 0,
        }
    }
    assert!(escape_stray_bracket(&mut schema) > 0);
    let validator = jsonschema::options()
        .should_validate_formats(true)
        .build(&schema)
        .unwrap();
    for log in &logs {
        let errors: Vec<String> = validator
            .iter_errors(log)
            .map(|e| format!("{e} at {}", e.instance_path()))
            .collect();
        assert!(errors.is_empty(), "{errors:#?}");
    }
    let fired: BTreeSet<&str> = logs
        .iter()
        .flat_map(|l| l["runs"][0]["results"].as_array().unwrap())
        .map(|r| r["ruleId"].as_str().unwrap())
        .collect();
    assert_eq!(fired.len(), RULES.len(), "every rule appears: {fired:?}");

    let log = logs.last().unwrap();
    assert_eq!(log["version"], "2.1.0");
    let run = &log["runs"][0];
    let driver = &run["tool"]["driver"];
    assert_eq!(driver["name"], "kelp");
    let rule_ids: Vec<&str> = driver["rules"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap())
        .collect();
    assert_eq!(rule_ids, RULES.iter().map(|r| r.id).collect::<Vec<_>>());
    for r in driver["rules"].as_array().unwrap() {
        assert!(r["help"]["markdown"].as_str().unwrap().contains("**Fix.**"));
        assert!(r["shortDescription"]["text"].is_string());
    }
    let results = run["results"].as_array().unwrap();
    assert!(results.len() > RULES.len());
    for r in results {
        let i = r["ruleIndex"].as_u64().unwrap() as usize;
        assert_eq!(rule_ids[i], r["ruleId"]);
        let loc = &r["locations"][0]["physicalLocation"];
        let uri = loc["artifactLocation"]["uri"].as_str().unwrap();
        assert!(
            uri.starts_with("tests/fixtures/lint/"),
            "relative to the repository: {uri}"
        );
        assert!(loc["region"]["startLine"].as_u64().unwrap() >= 1);
        assert!(["error", "warning", "note"].contains(&r["level"].as_str().unwrap()));
    }
}

#[test]
fn inline_comments_suppress_on_the_line_and_above() {
    let report = lint_dir(&Path::new(FIXTURES).join("suppress"));
    let got: Vec<(&str, usize)> = report
        .results
        .iter()
        .map(|r| (r.rule.as_str(), r.line))
        .collect();
    assert_eq!(got, [("nodepool-missing-limits", 27)]);
}

#[test]
fn kelp_yaml_sets_severities_and_ignores_by_rule_and_path() {
    let dir = Path::new(FIXTURES).join("config");
    let out = kelp()
        .current_dir(&dir)
        .args(["lint", "manifests", "-o", "json"])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(1),
        "nodepool-missing-limits raised to critical"
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let got: BTreeSet<(String, String, String)> = v["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["file"].as_str().unwrap().to_string(),
                r["rule"].as_str().unwrap().to_string(),
                r["severity"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let want: BTreeSet<(String, String, String)> = [
        (
            "manifests/prod/nodeclass.yaml",
            "ami-alias-latest",
            "warning",
        ),
        (
            "manifests/prod/nodepool.yaml",
            "nodepool-missing-limits",
            "critical",
        ),
        // No capacity-type requirement: the pool allows spot.
        ("manifests/prod/nodepool.yaml", "missing-min-values", "info"),
    ]
    .iter()
    .map(|(a, b, c)| (a.to_string(), b.to_string(), c.to_string()))
    .collect();
    assert_eq!(got, want);

    // Without the config (from elsewhere) the defaults apply; --config finds it again.
    let manifests = dir.join("manifests");
    let plain = kelp()
        .args(["lint", "-o", "json"])
        .arg(&manifests)
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&plain.stdout).unwrap();
    let rules: BTreeSet<&str> = v["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["rule"].as_str().unwrap())
        .collect();
    assert!(rules.contains("old-generation-allowed") && rules.contains("deprecated-api-version"));
    let configured = kelp()
        .args(["lint", "-o", "json", "--config"])
        .arg(dir.join(".kelp.yaml"))
        .arg(&manifests)
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&configured.stdout).unwrap();
    assert!(v["results"]
        .as_array()
        .unwrap()
        .iter()
        .all(|r| r["rule"] != "old-generation-allowed" && r["rule"] != "deprecated-api-version"));
}

#[test]
fn fail_on_sets_the_exit_code_like_doctor() {
    let warn_only = "tests/fixtures/lint/expire-after-never/bad";
    let code = |args: &[&str]| {
        kelp()
            .arg("lint")
            .args(args)
            .output()
            .unwrap()
            .status
            .code()
    };
    assert_eq!(code(&[warn_only]), Some(0), "default threshold: critical");
    assert_eq!(code(&[warn_only, "--fail-on", "warning"]), Some(1));
    assert_eq!(
        code(&["tests/fixtures/lint/parse-error/bad"]),
        Some(1),
        "a parse error is critical"
    );
    assert_eq!(
        code(&["tests/fixtures/lint/parse-error/bad", "--fail-on", "never"]),
        Some(0)
    );
    assert_eq!(
        code(&["tests/fixtures/lint/clean", "--fail-on", "info"]),
        Some(0)
    );
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
    assert!(one_line_error(&["lint", "no/such/dir"]).starts_with("error: cannot read no/such/dir"));
    let empty = tempfile::tempdir().unwrap();
    let e = one_line_error(&["lint", empty.path().to_str().unwrap()]);
    assert!(e.contains("no *.yaml, *.yml or *.json files"), "{e}");
    assert!(one_line_error(&["lint", "--explain", "no-such-rule"])
        .contains("unknown rule \"no-such-rule\""));
    let cfg = empty.path().join("bad.yaml");
    std::fs::write(&cfg, "rules:\n  no-such-rule: off\n").unwrap();
    let e = one_line_error(&[
        "lint",
        "--config",
        cfg.to_str().unwrap(),
        "tests/fixtures/lint/clean",
    ]);
    assert!(e.contains("unknown rule \"no-such-rule\""), "{e}");
    let out = kelp().args(["lint"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "a PATH is required");
}

#[test]
fn explain_prints_why_fix_and_examples_for_every_rule() {
    for rule in RULES {
        let out = kelp()
            .args(["lint", "--explain", rule.id])
            .assert()
            .success()
            .get_output()
            .stdout
            .clone();
        let text = String::from_utf8(out).unwrap();
        for part in ["\nWhy\n", "\nFix\n", "\nBad\n", "\nGood\n"] {
            assert!(
                text.contains(part),
                "{}: {part:?} missing:\n{text}",
                rule.id
            );
        }
        assert!(text.starts_with(&format!("{} ({})", rule.id, rule.severity)));
    }
    let out = kelp()
        .args(["lint", "--list-rules"])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    assert_eq!(String::from_utf8(out).unwrap().lines().count(), RULES.len());
}

#[test]
fn every_rule_has_a_severity_the_docs_table_agrees_with() {
    let docs = std::fs::read_to_string("docs/lint.md").unwrap();
    for rule in RULES {
        let row = format!("| `{}` | {} |", rule.id, rule.severity);
        assert!(docs.contains(&row), "docs/lint.md lacks {row}");
    }
    assert!(RULES.iter().any(|r| r.severity == Severity::Info));
}

#[test]
fn the_docs_give_what_if_the_catalogue_and_exit_statuses_its_help_gives() {
    let docs = std::fs::read_to_string("docs/lint.md").unwrap();
    let section = &docs[docs.find("## `kelp what-if").unwrap()..];
    let out = kelp()
        .args(["what-if", "--help"])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let help = String::from_utf8(out).unwrap();
    let exits = &help[help.find("Exit status:").unwrap()..];
    let codes: BTreeSet<&str> = exits
        .split(|c: char| c.is_whitespace() || c == ',')
        .filter(|t| t.len() == 1 && t.chars().all(|c| c.is_ascii_digit()))
        .collect();
    assert!(codes.contains("3"), "{exits}");
    for code in codes {
        assert!(
            section.contains(&format!("{code} when")),
            "docs/lint.md's what-if section lacks exit {code}"
        );
    }
    for flag in ["--catalog", "--metrics-file"] {
        assert!(
            help.contains(flag) && section.contains(flag),
            "docs/lint.md's what-if section lacks {flag}"
        );
    }
    assert!(
        !section.contains("Instance types, topology spread and volumes are not evaluated"),
        "what-if judges instance types from a catalogue"
    );
}

/// The NodePool CRD a Karpenter release ships (`kwok/charts/crds`, the same as its chart's),
/// from the Go module cache, downloaded through the module proxy when missing; None when Go
/// cannot fetch it.
fn nodepool_crd(release: &kelp::karpenter::version::Release) -> Option<Value> {
    let out = std::process::Command::new("go")
        .current_dir("/")
        // v1.14.3 and v1.15 need a newer Go than some machines have; the proxy serves it.
        .env("GOTOOLCHAIN", "go1.26.11")
        .args(["mod", "download", "-json"])
        .arg(format!("sigs.k8s.io/karpenter@{release}"))
        .output()
        .ok()?;
    let info: Value = serde_json::from_slice(&out.stdout).ok()?;
    let dir = PathBuf::from(info["Dir"].as_str()?);
    let text =
        std::fs::read_to_string(dir.join("kwok/charts/crds/karpenter.sh_nodepools.yaml")).ok()?;
    serde_norway::from_str(&text).ok()
}

#[test]
fn no_release_in_the_window_is_told_its_crd_rejects_what_it_accepts() {
    use kelp::karpenter::version::TESTED;
    let pool = "apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata:\n  name: p\nspec:\n  limits: {cpu: \"10\"}\n  disruption:\n    consolidationPolicy: WhenEmpty\n";
    let mut required_in = Vec::new();
    for release in TESTED {
        let Some(crd) = nodepool_crd(&release) else {
            eprintln!("skipped: Go cannot fetch sigs.k8s.io/karpenter@{release}");
            return;
        };
        let v1 = crd["spec"]["versions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|v| v["name"] == "v1")
            .unwrap();
        let disruption =
            &v1["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["disruption"];
        assert!(disruption.is_object(), "{release}: no spec.disruption");
        let required = disruption["required"]
            .as_array()
            .is_some_and(|r| r.iter().any(|f| f == "consolidateAfter"));
        if required {
            required_in.push(release.to_string());
        }
        let mut config = Config::default();
        config.karpenter_version = Some(release.clone());
        let criticals: Vec<String> = lint::lint(&[lint::Input::new("p.yaml", pool)], &config)
            .results
            .into_iter()
            .filter(|r| r.severity == Severity::Critical)
            .map(|r| r.rule)
            .collect();
        let rejected = criticals
            .iter()
            .any(|r| r == "disruption-missing-consolidate-after");
        assert_eq!(
            rejected, required,
            "{release}: kelp {criticals:?} vs the CRD"
        );
        // The best-practice set is clean on every release.
        let clean = lint::read_inputs(&[PathBuf::from(FIXTURES).join("clean")]).unwrap();
        let report = lint::lint(&clean, &config);
        assert!(
            report.results.is_empty(),
            "{release}: {:#?}",
            report.results
        );
    }
    // The test can fail both ways: some releases require the field, some do not.
    assert_eq!(required_in, ["v1.9.0", "v1.12.1", "v1.14.3"]);
}

#[test]
fn the_karpenter_version_is_checked_and_one_outside_the_window_is_said() {
    let bad = kelp()
        .args([
            "lint",
            "tests/fixtures/lint/clean",
            "--karpenter-version",
            "v0.37.0",
        ])
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
    let err = String::from_utf8_lossy(&bad.stderr);
    assert!(err.contains("is not a Karpenter release"), "{err}");
    let old = kelp()
        .args([
            "lint",
            "tests/fixtures/lint/clean",
            "--karpenter-version",
            "1.8",
        ])
        .output()
        .unwrap();
    assert_eq!(old.status.code(), Some(0));
    let err = String::from_utf8_lossy(&old.stderr);
    assert!(
        err.contains(
            "Karpenter v1.8.0 is outside the releases kelp is tested against (v1.9 to v1.15)"
        ),
        "{err}"
    );
    assert!(err.contains("(rules of Karpenter v1.8.0)"), "{err}");
}
