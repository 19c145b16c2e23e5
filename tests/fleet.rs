//! Fleets: the generated alerts and dashboard keep the label that tells clusters apart (one
//! alert per cluster, every panel filtered by `$cluster`), checked on the generated text and
//! with promtool on series of two clusters.

use std::path::Path;
use std::process::Command;

use serde_json::{json, Value};

use kelp::metrics::defs;
use kelp::metrics::generate::{self, ClusterLabel};

fn label(s: &str) -> ClusterLabel {
    s.parse().unwrap()
}

/// promtool, or `None` (with a note) where it is missing outside CI.
fn promtool() -> Option<()> {
    if Command::new("promtool").arg("--version").output().is_ok() {
        return Some(());
    }
    let msg =
        "promtool not found: install Debian's `prometheus` package (apt-get install -y prometheus)";
    if std::env::var_os("CI").is_some() {
        panic!("{msg}");
    }
    eprintln!("skipping: {msg}");
    None
}

fn run_promtool(dir: &Path, args: &[&str]) {
    let out = Command::new("promtool")
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "promtool {args:?} failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

fn rules(cl: &ClusterLabel) -> Vec<Value> {
    generate::prometheus_rule(cl)["spec"]["groups"][0]["rules"]
        .as_array()
        .unwrap()
        .clone()
}

fn panel_exprs(dashboard: &Value) -> Vec<(String, String)> {
    dashboard["panels"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["type"] != "row")
        .flat_map(|p| {
            let title = p["title"].as_str().unwrap().to_string();
            p["targets"]
                .as_array()
                .unwrap()
                .iter()
                .map(move |t| (title.clone(), t["expr"].as_str().unwrap().to_string()))
        })
        .collect()
}

/// Every aggregation in `expr` (`sum`, `count`, `max`, ...) is `by` a list that has `cl`.
fn aggregations_keep(expr: &str, cl: &str) -> Result<usize, String> {
    let re = regex::Regex::new(r"\b(sum|count|max|min|avg)\s*(by\s*\(([^)]*)\))?\s*\(").unwrap();
    let mut n = 0;
    for c in re.captures_iter(expr) {
        n += 1;
        let by = c.get(3).map(|m| m.as_str()).unwrap_or("");
        if !by.split(',').any(|l| l.trim() == cl) {
            return Err(format!("`{}` drops {cl} in {expr}", &c[0]));
        }
    }
    Ok(n)
}

#[test]
fn every_alert_aggregates_by_the_cluster_label() {
    for cl in ["cluster", "k8s_cluster"] {
        for r in rules(&label(cl)) {
            let expr = r["expr"].as_str().unwrap();
            let n = aggregations_keep(expr, cl).unwrap_or_else(|e| panic!("{}: {e}", r["alert"]));
            assert!(n > 0, "{}: no aggregation in {expr}", r["alert"]);
            for a in ["summary", "description"] {
                let text = r["annotations"][a].as_str().unwrap();
                assert!(
                    text.starts_with(&format!("{{{{ with $labels.{cl} }}}}Cluster {{{{ . }}}}: ")),
                    "{}'s {a} does not name the cluster: {text}",
                    r["alert"]
                );
            }
        }
    }
    // Matching across vectors is within a cluster.
    let empty = rules(&label("k8s_cluster"))
        .into_iter()
        .find(|r| r["alert"] == "KarpenterHelperNodePoolEmpty")
        .unwrap();
    assert!(
        empty["expr"]
            .as_str()
            .unwrap()
            .contains("and on (k8s_cluster, nodepool)"),
        "{}",
        empty["expr"]
    );
}

#[test]
fn every_panel_filters_on_the_cluster_variable_and_keeps_the_label() {
    let sel = regex::Regex::new(r"karpenter_helper_[a-z_]+(\{[^}]*\})?").unwrap();
    for cl in ["cluster", "k8s_cluster"] {
        let json: Value = serde_json::from_str(&generate::grafana_json(&label(cl)))
            .expect("the dashboard parses");
        let vars = json["templating"]["list"].as_array().unwrap();
        let var = vars
            .iter()
            .find(|v| v["name"] == "cluster")
            .expect("a cluster variable");
        assert_eq!(var["type"], "query");
        assert_eq!(var["multi"], true);
        assert_eq!(var["includeAll"], true);
        assert_eq!(var["allValue"], ".*");
        assert_eq!(
            var["query"],
            format!("label_values({}, {cl})", defs::NODEPOOL_NODES.name)
        );
        // The NodePool list follows the clusters chosen.
        let pools = vars.iter().find(|v| v["name"] == "nodepool").unwrap();
        assert!(
            pools["query"]
                .as_str()
                .unwrap()
                .contains(&format!("{{{cl}=~\"$cluster\"}}")),
            "{}",
            pools["query"]
        );
        let filter = format!("{cl}=~\"$cluster\"");
        let exprs = panel_exprs(&json);
        assert!(exprs.len() > 30, "{exprs:?}");
        for (title, e) in &exprs {
            for m in sel.captures_iter(e) {
                let matchers = m.get(1).map(|x| x.as_str()).unwrap_or("");
                assert!(
                    matchers.contains(&filter),
                    "{title}: `{}` lacks {filter} in {e}",
                    &m[0]
                );
            }
            aggregations_keep(e, cl).unwrap_or_else(|err| panic!("{title}: {err}"));
        }
    }
}

#[test]
fn the_fleet_overview_row_shows_findings_and_cost_by_cluster() {
    let d = generate::grafana(&ClusterLabel::default());
    let panels = d["panels"].as_array().unwrap();
    assert_eq!(panels[0]["type"], "row");
    assert_eq!(panels[0]["title"], "Fleet overview");
    let row: Vec<&Value> = panels[1..]
        .iter()
        .take_while(|p| p["type"] != "row")
        .collect();
    let find = |title: &str| {
        row.iter()
            .find(|p| p["title"] == title)
            .unwrap_or_else(|| panic!("no {title} in the fleet row"))["targets"][0]["expr"]
            .as_str()
            .unwrap()
            .to_string()
    };
    assert_eq!(
        find("Findings by cluster"),
        "sum by (cluster, severity) (karpenter_helper_findings{cluster=~\"$cluster\"})"
    );
    assert_eq!(
        find("Cost by cluster ($/hr)"),
        "sum by (cluster) (karpenter_helper_nodepool_cost_per_hour{cluster=~\"$cluster\"})"
    );
    let cost = row
        .iter()
        .find(|p| p["title"] == "Cost by cluster ($/hr)")
        .unwrap();
    assert_eq!(cost["fieldConfig"]["defaults"]["unit"], "currencyUSD");
}

#[test]
fn panels_are_titled_in_words_not_metric_names() {
    let d = generate::grafana(&ClusterLabel::default());
    let titles: Vec<&str> = d["panels"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["title"].as_str().unwrap())
        .collect();
    for t in &titles {
        assert!(!t.contains("karpenter_helper_"), "raw metric name: {t}");
        assert!(!t.contains('_'), "raw label or metric name: {t}");
    }
    for want in [
        "Pod provisioning latency (p50/p95/p99)",
        "Node provisioning time (p50/p90)",
        "NodeClaim launch failures",
        "Cost ($/hr)",
    ] {
        assert!(titles.contains(&want), "{want} missing from {titles:?}");
    }
    // The latency panel shows what its title says.
    let lat = d["panels"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["title"] == "Pod provisioning latency (p50/p95/p99)")
        .unwrap();
    let qs: Vec<&str> = lat["targets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["expr"].as_str().unwrap())
        .collect();
    for (q, e) in ["0.5", "0.95", "0.99"].iter().zip(&qs) {
        assert!(e.starts_with(&format!("histogram_quantile({q}, ")), "{e}");
    }
}

#[test]
fn promtool_accepts_the_rules_for_any_cluster_label() {
    if promtool().is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    for cl in ["cluster", "k8s_cluster", "tenant"] {
        let spec = &generate::prometheus_rule(&label(cl))["spec"];
        let file = format!("{cl}.yaml");
        std::fs::write(
            dir.path().join(&file),
            serde_norway::to_string(spec).unwrap(),
        )
        .unwrap();
        run_promtool(dir.path(), &["check", "rules", &file]);
    }
}

/// An annotation as Prometheus expands it, for the templates kelp writes: the cluster
/// prefix, `{{ $labels.X }}` and `{{ $value }}`.
fn expand(template: &str, labels: &[(&str, &str)], value: &str) -> String {
    let with =
        regex::Regex::new(r"\{\{ with \$labels\.(\w+) \}\}(.*?)\{\{ \. \}\}(.*?)\{\{ end \}\}")
            .unwrap();
    let get = |l: &str| {
        labels
            .iter()
            .find(|(k, _)| *k == l)
            .map(|(_, v)| v.to_string())
            .unwrap_or_default()
    };
    let s = with.replace_all(template, |c: &regex::Captures| match get(&c[1]).as_str() {
        "" => String::new(),
        v => format!("{}{v}{}", &c[2], &c[3]),
    });
    let lab = regex::Regex::new(r"\{\{ \$labels\.(\w+) \}\}").unwrap();
    let s = lab.replace_all(&s, |c: &regex::Captures| get(&c[1]));
    s.replace("{{ $value }}", value)
}

/// The alerts `name` fires with: each its labels (besides severity) and `$value`.
fn expect(rules: &[Value], name: &str, fired: &[(&[(&str, &str)], &str)]) -> Value {
    let rule = rules.iter().find(|r| r["alert"] == name).unwrap();
    let alerts: Vec<Value> = fired
        .iter()
        .map(|(labels, value)| {
            let mut l = serde_json::Map::new();
            l.insert("severity".into(), rule["labels"]["severity"].clone());
            for (k, v) in labels.iter() {
                l.insert(k.to_string(), json!(v));
            }
            let ann = |a: &str| expand(rule["annotations"][a].as_str().unwrap(), labels, value);
            json!({"exp_labels": l,
                   "exp_annotations": {"summary": ann("summary"), "description": ann("description")}})
        })
        .collect();
    json!(alerts)
}

fn series(name: &str, labels: &str, values: &str) -> Value {
    json!({"series": format!("{name}{{{labels}}}"), "values": values})
}

/// Two clusters, `a` and `b`, with the same NodePool names: each alert fires for the cluster
/// whose series call for it, names it, and one cluster's series never fire (or hide) the
/// other's alert.
#[test]
fn promtool_fires_alerts_per_cluster() {
    if promtool().is_none() {
        return;
    }
    let cl = ClusterLabel::default();
    let rules = rules(&cl);
    let (f, nodes, unsched) = (
        defs::FINDINGS.name,
        defs::NODEPOOL_NODES.name,
        defs::UNSCHEDULABLE_PODS.name,
    );
    let (lat, lf) = (
        defs::POD_PROVISIONING_LATENCY.name,
        defs::LAUNCH_FAILURES.name,
    );
    let gauges = vec![
        // a: pods no pool can take; b: only a warning of the same code.
        series(
            f,
            r#"cluster="a",code="pod-unschedulable",severity="critical",nodepool="""#,
            "2x40",
        ),
        series(
            f,
            r#"cluster="b",code="pod-unschedulable",severity="warning",nodepool="""#,
            "3x40",
        ),
        // b: no NodePool is ready.
        series(
            f,
            r#"cluster="b",code="no-nodepool-ready",severity="critical",nodepool="""#,
            "1x40",
        ),
        // a's gpu pool is at its limits, and empty while pods wait on it; b's gpu pool has
        // nodes (a fleet-wide max would hide a's empty pool).
        series(
            f,
            r#"cluster="a",code="nodepool-limits-exhausted",severity="warning",nodepool="gpu""#,
            "1x40",
        ),
        series(nodes, r#"cluster="a",nodepool="gpu""#, "0x40"),
        series(
            unsched,
            r#"cluster="a",category="limits",nodepool="gpu""#,
            "1x40",
        ),
        series(nodes, r#"cluster="b",nodepool="gpu""#, "2x40"),
        // b's cpu pool is empty and nothing in b needs it; a's pods wait on a's cpu pool,
        // which has nodes: b's empty cpu pool must stay quiet.
        series(nodes, r#"cluster="a",nodepool="cpu""#, "3x40"),
        series(
            unsched,
            r#"cluster="a",category="compatible",nodepool="cpu""#,
            "1x40",
        ),
        series(nodes, r#"cluster="b",nodepool="cpu""#, "0x40"),
    ];
    let a: &[(&str, &str)] = &[("cluster", "a")];
    let b: &[(&str, &str)] = &[("cluster", "b")];
    let a_gpu: &[(&str, &str)] = &[("cluster", "a"), ("nodepool", "gpu")];
    let annotated = json!([
        {"interval": "1m", "input_series": gauges, "alert_rule_test": [
            {"eval_time": "20m", "alertname": "KarpenterHelperPodUnschedulable",
             "exp_alerts": expect(&rules, "KarpenterHelperPodUnschedulable", &[(a, "2")])},
            {"eval_time": "20m", "alertname": "KarpenterHelperNoNodePoolReady",
             "exp_alerts": expect(&rules, "KarpenterHelperNoNodePoolReady", &[(b, "1")])},
            {"eval_time": "20m", "alertname": "KarpenterHelperNodePoolLimitsExhausted",
             "exp_alerts": expect(&rules, "KarpenterHelperNodePoolLimitsExhausted", &[(a_gpu, "1")])},
            {"eval_time": "5m", "alertname": "KarpenterHelperNodePoolEmpty", "exp_alerts": []},
            {"eval_time": "20m", "alertname": "KarpenterHelperNodePoolEmpty",
             "exp_alerts": expect(&rules, "KarpenterHelperNodePoolEmpty", &[(a_gpu, "0")])},
        ]},
        // One cluster whose series carry no cluster label: the alert fires once, unprefixed.
        {"interval": "1m",
         "input_series": [series(f, r#"code="no-nodepool-ready",severity="critical",nodepool="""#, "1x40")],
         "alert_rule_test": [
            {"eval_time": "20m", "alertname": "KarpenterHelperNoNodePoolReady",
             "exp_alerts": expect(&rules, "KarpenterHelperNoNodePoolReady", &[(&[], "1")])},
        ]},
    ]);
    // Rates (the annotations' values are not round): labels only.
    let rates = json!([
        {"interval": "1m", "input_series": [
            // a: half its pods slow; b: all fast, and five times as many (a fleet-wide ratio
            // would stay under the fast burn's threshold).
            series(&format!("{lat}_bucket"), r#"cluster="a",le="300.0",nodepool="x""#, "0+1x500"),
            series(&format!("{lat}_count"), r#"cluster="a",nodepool="x""#, "0+2x500"),
            series(&format!("{lat}_bucket"), r#"cluster="b",le="300.0",nodepool="x""#, "0+10x500"),
            series(&format!("{lat}_count"), r#"cluster="b",nodepool="x""#, "0+10x500"),
            // a's pool x fails 15 launches in 15m; pool y fails about 2 in each cluster, 4
            // fleet-wide: only a's x is a spike.
            series(lf, r#"cluster="a",nodepool="x",reason="InsufficientCapacityError""#, "0+1x60"),
            series(lf, r#"cluster="a",nodepool="y",reason="InsufficientCapacityError""#, "0+0.15x60"),
            series(lf, r#"cluster="b",nodepool="y",reason="InsufficientCapacityError""#, "0+0.15x60"),
         ],
         "alert_rule_test": [
            {"eval_time": "70m", "alertname": "KarpenterHelperPodProvisioningSLOBurn",
             "exp_alerts": [{"exp_labels": {"severity": "critical", "cluster": "a"}}]},
            {"eval_time": "30m", "alertname": "KarpenterHelperLaunchFailureSpike",
             "exp_alerts": [{"exp_labels": {"severity": "warning", "cluster": "a", "nodepool": "x",
                "reason": "InsufficientCapacityError"}}]},
        ]},
    ]);
    let dir = tempfile::tempdir().unwrap();
    let spec = generate::prometheus_rule(&cl)["spec"].clone();
    std::fs::write(
        dir.path().join("rules.yaml"),
        serde_norway::to_string(&spec).unwrap(),
    )
    .unwrap();
    let mut bare = spec;
    for r in bare["groups"][0]["rules"].as_array_mut().unwrap() {
        r.as_object_mut().unwrap().remove("annotations");
    }
    std::fs::write(
        dir.path().join("bare.yaml"),
        serde_norway::to_string(&bare).unwrap(),
    )
    .unwrap();
    for (name, rule_file, tests) in [
        ("annotated", "rules.yaml", annotated),
        ("rates", "bare.yaml", rates),
    ] {
        let file = format!("{name}.test.yaml");
        let body = json!({"rule_files": [rule_file], "evaluation_interval": "1m", "tests": tests});
        std::fs::write(
            dir.path().join(&file),
            serde_norway::to_string(&body).unwrap(),
        )
        .unwrap();
        run_promtool(dir.path(), &["test", "rules", &file]);
    }
}

#[test]
fn kelp_generate_takes_the_cluster_label() {
    let kelp = |args: &[&str]| {
        assert_cmd::Command::cargo_bin("kelp")
            .unwrap()
            .args(args)
            .output()
            .unwrap()
    };
    let out = kelp(&["generate", "alerts", "--cluster-label", "k8s_cluster"]);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("sum by (k8s_cluster, nodepool)"), "{text}");
    assert!(!text.contains("by (cluster"), "{text}");
    let out = kelp(&["generate", "grafana", "--cluster-label", "k8s_cluster"]);
    assert!(out.status.success());
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        v["templating"]["list"][1]["query"],
        "label_values(karpenter_helper_nodepool_nodes, k8s_cluster)"
    );
    // Not a label name, reserved, or one of kelp's own labels: one error line, exit 2.
    for bad in ["k8s-cluster", "", "__name__", "nodepool", "1st"] {
        let out = kelp(&["generate", "grafana", "--cluster-label", bad]);
        assert_eq!(out.status.code(), Some(2), "{bad}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.starts_with("error: invalid value"), "{bad}: {err}");
        assert!(!err.contains("panicked"), "{err}");
        assert!(out.stdout.is_empty());
    }
}
