//! One fixture per finding code: `fires.yaml` must produce every finding listed in
//! `expect.yaml`, and `near-miss.yaml` must produce no finding of that code.

use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use serde::Deserialize;
use serde_json::Value;

use kelp::analysis::analyze;
use kelp::findings::{Code, Report};
use kelp::model::Cluster;

const NOW: &str = "2026-11-21T10:00:00Z";

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Expect {
    code: String,
    fires: Vec<Expected>,
    #[serde(default)]
    metrics_file: Option<String>,
    #[serde(default)]
    near_miss_metrics_file: Option<String>,
    #[serde(default)]
    now: Option<String>,
    /// What `kelp serve`'s history writer reports (it sets the model's `history_problem`),
    /// for the fires file; the near miss has none.
    #[serde(default)]
    history_problem: Option<String>,
}

#[derive(Deserialize)]
struct Expected {
    severity: Option<String>,
    object: Option<Value>,
    #[serde(default = "absent")]
    nodepool: Value,
    #[serde(default)]
    details: serde_json::Map<String, Value>,
}

/// Distinguishes "key left out" from an explicit `nodepool: null`.
fn absent() -> Value {
    Value::String("\u{0}absent".into())
}

fn report(dir: &Path, file: &str, metrics: Option<&String>, expect: &Expect) -> Report {
    let mut c = Cluster::default();
    kelp::source::load_paths(&[dir.join(file)], &mut c)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.join(file).display()));
    if file == "fires.yaml" {
        c.history_problem = expect.history_problem.clone();
    }
    if let Some(m) = metrics {
        c.metrics = Some(kelp::source::metrics::read(&dir.join(m)).unwrap());
    }
    let now: DateTime<Utc> = DateTime::parse_from_rfc3339(expect.now.as_deref().unwrap_or(NOW))
        .unwrap()
        .into();
    analyze(&c, now)
}

fn matches(f: &Value, e: &Expected) -> Result<(), String> {
    if let Some(s) = &e.severity {
        if f["severity"] != *s {
            return Err(format!("severity {} != {s}", f["severity"]));
        }
    }
    if let Some(o) = &e.object {
        if f["object"] != *o {
            return Err(format!("object {} != {o}", f["object"]));
        }
    }
    if e.nodepool != absent() && f["nodepool"] != e.nodepool {
        return Err(format!("nodepool {} != {}", f["nodepool"], e.nodepool));
    }
    for (ptr, want) in &e.details {
        let got = f["details"].pointer(ptr).cloned().unwrap_or(Value::Null);
        if got != *want {
            return Err(format!("details{ptr} = {got}, want {want}"));
        }
    }
    Ok(())
}

/// A fixture folder's `expect.yaml`.
fn expect_of(dir: &Path) -> Expect {
    serde_norway::from_str(&std::fs::read_to_string(dir.join("expect.yaml")).unwrap()).unwrap()
}

/// The report on a fixture folder's `fires.yaml`, as JSON.
fn fires_of(dir: &Path, expect: &Expect) -> Value {
    serde_json::to_value(report(
        dir,
        "fires.yaml",
        expect.metrics_file.as_ref(),
        expect,
    ))
    .unwrap()
}

fn fixture_dirs() -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir("tests/fixtures/findings")
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("expect.yaml").exists())
        .collect();
    dirs.sort();
    dirs
}

#[test]
fn every_finding_fires_on_its_fixture_and_not_on_its_near_miss() {
    let mut failures = Vec::new();
    let mut covered = std::collections::BTreeSet::new();
    for dir in fixture_dirs() {
        let name = dir.file_name().unwrap().to_string_lossy().to_string();
        let expect = expect_of(&dir);
        assert!(
            Code::parse(&expect.code).is_some(),
            "{name}: unknown code {}",
            expect.code
        );
        covered.insert(expect.code.clone());
        let fires = fires_of(&dir, &expect);
        let of_code: Vec<&Value> = fires["findings"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|f| f["code"] == expect.code)
            .collect();
        if of_code.is_empty() {
            failures.push(format!(
                "{name}: fires.yaml produced no {} finding; got {:#}",
                expect.code, fires["findings"]
            ));
        }
        for e in &expect.fires {
            let errors: Vec<String> = of_code
                .iter()
                .map(|f| matches(f, e).unwrap_err_or_ok())
                .collect();
            if !errors.iter().any(String::is_empty) {
                failures.push(format!(
                    "{name}: no {} finding matches {:?}: {errors:?}",
                    expect.code, e.object
                ));
            }
        }
        let near = serde_json::to_value(report(
            &dir,
            "near-miss.yaml",
            expect
                .near_miss_metrics_file
                .as_ref()
                .or(expect.metrics_file.as_ref()),
            &expect,
        ))
        .unwrap();
        let bad: Vec<&Value> = near["findings"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|f| f["code"] == expect.code)
            .collect();
        if !bad.is_empty() {
            failures.push(format!("{name}: near-miss.yaml produced {bad:#?}"));
        }
    }
    let missing: Vec<&str> = Code::ALL
        .iter()
        .map(|c| c.as_str())
        .filter(|c| !covered.contains(*c))
        .collect();
    assert!(missing.is_empty(), "codes without a fixture: {missing:?}");
    assert!(
        failures.is_empty(),
        "{} fixture failures:\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}

trait OkOrErr {
    fn unwrap_err_or_ok(self) -> String;
}
impl OkOrErr for Result<(), String> {
    fn unwrap_err_or_ok(self) -> String {
        self.err().unwrap_or_default()
    }
}

/// The details of a node's disruption findings are read from its state when written: they
/// say what the state says, in the shape they always had (an expired node's blockers with
/// their keys sorted, as a JSON tree writes them; a blocked node's in the blocker's order).
#[test]
fn a_nodes_disruption_details_are_its_state_in_their_old_shape() {
    let dir = Path::new("tests/fixtures/findings/node-expired-not-replaced");
    let expect: Value =
        serde_norway::from_str(&std::fs::read_to_string(dir.join("expect.yaml")).unwrap()).unwrap();
    let now: DateTime<Utc> = DateTime::parse_from_rfc3339(expect["now"].as_str().unwrap_or(NOW))
        .unwrap()
        .into();
    let mut c = Cluster::default();
    kelp::source::load_paths(&[dir.join("fires.yaml")], &mut c).unwrap();
    let pass = kelp::analysis::run(&c, now);
    let mut seen = 0;
    for f in &pass.report.findings {
        let Some(s) = pass.nodes.get(f.object.name.as_str()) else {
            continue;
        };
        let want = match f.code {
            Code::NodeExpiredNotReplaced => serde_json::to_string(&serde_json::json!({
                "age": s.age, "expireAfter": s.expire_after, "blockers": s.blockers
            })),
            Code::DisruptionBlocked => Ok(format!(
                "{{\"blockers\":{},\"nodeclaim\":{},\"wants\":{}}}",
                serde_json::to_string(&s.blockers).unwrap(),
                serde_json::to_string(&s.nodeclaim).unwrap(),
                serde_json::to_string(&s.wants).unwrap()
            )),
            _ => continue,
        }
        .unwrap();
        assert!(!s.blockers.is_empty(), "the fixture's node has a blocker");
        assert_eq!(
            serde_json::to_string(&f.details).unwrap(),
            want,
            "{:?}",
            f.code
        );
        seen += 1;
    }
    assert!(seen >= 1, "the fixture has an expired node: {seen}");
}

/// docs/findings.md, the findings contract users read: each code with what it means
/// (`Code::meaning`), and the severities, objects and `details` keys its fixture's findings
/// have, as kelp gives them. `KELP_BLESS=1` rewrites the file; else it must be equal.
#[test]
fn the_findings_doc_is_what_the_codes_and_their_fixtures_give() {
    use std::collections::BTreeSet;
    let mut rows = Vec::new();
    for code in Code::ALL {
        let dir = Path::new("tests/fixtures/findings").join(code.as_str());
        let expect = expect_of(&dir);
        let fires = fires_of(&dir, &expect);
        let (mut severities, mut objects, mut keys) =
            (BTreeSet::new(), BTreeSet::new(), BTreeSet::new());
        for f in fires["findings"].as_array().unwrap() {
            if f["code"] != code.as_str() {
                continue;
            }
            severities.insert(f["severity"].as_str().unwrap().to_string());
            objects.insert(f["object"]["kind"].as_str().unwrap().to_string());
            if let Some(d) = f["details"].as_object() {
                keys.extend(d.keys().map(|k| format!("`{k}`")));
            }
        }
        let list = |s: &BTreeSet<String>| s.iter().cloned().collect::<Vec<_>>().join(", ");
        rows.push(format!(
            "| `{}` | {} | {} | {} | {} |",
            code.as_str(),
            code.meaning(),
            list(&severities),
            list(&objects),
            if keys.is_empty() {
                "-".into()
            } else {
                list(&keys)
            }
        ));
    }
    let doc = format!(
        "# Findings\n\n\
         What `kelp doctor` (and `serve`'s `/metrics`, its dashboard and its history) reports,\n\
         one finding per problem, each with a stable `code`. A code is never renamed; new ones are\n\
         added. The JSON shape of a finding and of the report is\n\
         [report.schema.json](report.schema.json): `code`, `severity` (`info`, `warning`,\n\
         `critical`), `object` (`kind`, `namespace` when namespaced, `name`), `nodepool` (the pool\n\
         it concerns, or null), `message` (kelp's words), `since` (when it began, if known) and\n\
         `details` (an object whose keys depend on the code).\n\n\
         Below, each code with what it means, and the severities, objects and `details` keys\n\
         its fixture (`tests/fixtures/findings/CODE/fires.yaml`) gives. A code's severity can\n\
         depend on the situation (a pool not Ready is critical while pods wait); the table lists\n\
         what the fixture shows. `tests/findings.rs` writes this table from the code and the\n\
         fixtures and fails when the file differs (`KELP_BLESS=1` rewrites it).\n\n\
         | code | what it means | severity | object | details keys |\n\
         |---|---|---|---|---|\n{}\n",
        rows.join("\n")
    );
    let path = Path::new("docs/findings.md");
    if std::env::var_os("KELP_BLESS").is_some() {
        std::fs::write(path, &doc).unwrap();
    }
    let have = std::fs::read_to_string(path).unwrap_or_default();
    assert!(
        have == doc,
        "docs/findings.md is not what the codes and their fixtures give: run KELP_BLESS=1 cargo test --test findings"
    );
}
