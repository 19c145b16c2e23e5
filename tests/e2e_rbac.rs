//! kelp runs with exactly the RBAC its chart grants: the ServiceAccount, ClusterRole and
//! ClusterRoleBinding from `deploy/kelp.yaml` (the chart's plain rendering) are applied to
//! the testenv, and kelp runs through a kubeconfig that impersonates that ServiceAccount.
//! Normal operation must meet no 403; a missing permission must be one clear line.
//! Run with `--test-threads 1` (as scripts/e2e does): both tests apply the same Namespace.
//!
//! Skipped without a running testenv (`testenv/up`), required with `KELP_E2E=1`.

mod common;

use std::time::Duration;

use common::*;
use serde::Deserialize;
use serde_json::{json, Value};

/// The documents of `deploy/kelp.yaml`.
fn manifests() -> Vec<Value> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/deploy/kelp.yaml");
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_norway::Deserializer::from_str(&text)
        .map(|d| Value::deserialize(d).unwrap_or_else(|e| panic!("{path}: {e}")))
        .filter(|v| !v.is_null())
        .collect()
}

fn of_kind<'a>(docs: &'a [Value], kind: &str) -> &'a Value {
    docs.iter()
        .find(|d| d["kind"] == kind)
        .unwrap_or_else(|| panic!("no {kind} in deploy/kelp.yaml"))
}

/// Apply the Namespace, ServiceAccount, ClusterRole and ClusterRoleBinding exactly as
/// rendered; returns the ServiceAccount's (namespace, name).
fn apply_rbac(e: &Env) -> (String, String) {
    let docs = manifests();
    let sa = of_kind(&docs, "ServiceAccount");
    let ns = sa["metadata"]["namespace"].as_str().unwrap().to_string();
    let name = sa["metadata"]["name"].as_str().unwrap().to_string();
    for kind in [
        "Namespace",
        "ServiceAccount",
        "ClusterRole",
        "ClusterRoleBinding",
    ] {
        e.apply(&of_kind(&docs, kind).to_string());
    }
    (ns, name)
}

fn no_403(what: &str, text: &str) {
    let lower = text.to_lowercase();
    // A 403 as a status code, not digits inside a generated name (kwok-...-4037245932).
    let status_403 = regex::Regex::new(r"(^|[^0-9a-z-])403([^0-9a-z-]|$)").unwrap();
    assert!(
        !lower.contains("forbidden")
            && !lower.contains("unauthorized")
            && !lower.lines().any(|l| status_403.is_match(l)),
        "{what} met an RBAC refusal:\n{text}"
    );
}

fn can_i(e: &Env, args: &[&str]) -> String {
    let mut a = vec!["auth", "can-i"];
    a.extend(args);
    let out = e.kubectl(&a, None);
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

#[test]
fn kelp_runs_with_exactly_the_charts_rbac() {
    let Some(admin) = env() else { return };
    let (ns, name) = apply_rbac(&admin);
    let (sa, _kc) = impersonating(&admin, &ns, &name);

    // The impersonation is in force, and the role is as narrow as promised.
    assert_eq!(can_i(&sa, &["list", "pods", "-A"]), "yes");
    assert_eq!(can_i(&sa, &["watch", "nodeclaims.karpenter.sh"]), "yes");
    for denied in [
        vec!["list", "secrets", "-A"],
        vec!["get", "secrets", "-n", "kube-system"],
        vec!["list", "configmaps", "-A"],
        vec!["create", "pods", "-n", &ns],
        vec!["delete", "nodeclaims.karpenter.sh"],
        vec!["patch", "nodes"],
        vec!["list", "customresourcedefinitions"],
        vec![
            "get",
            "customresourcedefinitions/capacitybuffers.karpenter.sh",
        ],
    ] {
        assert_eq!(
            can_i(&sa, &denied),
            "no",
            "the ServiceAccount may {denied:?}"
        );
    }
    assert_eq!(
        can_i(
            &sa,
            &["get", "customresourcedefinitions/nodepools.karpenter.sh"]
        ),
        "yes"
    );

    // The Deployment's pod passes the namespace's `restricted` Pod Security admission
    // (a server-side dry run: nothing here can run its image).
    let deployment = of_kind(&manifests(), "Deployment").clone();
    let mut pod = json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "kelp-e2e-rbac-dry-run", "namespace": ns},
        "spec": deployment["spec"]["template"]["spec"]});
    pod["metadata"]["labels"] = deployment["spec"]["template"]["metadata"]["labels"].clone();
    let out = admin.kubectl(
        &["create", "--dry-run=server", "-f", "-"],
        Some(&pod.to_string()),
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "kelp's pod refused: {stderr}");
    assert!(!stderr.contains("violate"), "{stderr}");

    // doctor: a report, no refusal.
    let out = sa.kelp(&["doctor", "-o", "json"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "kelp doctor as {ns}/{name}: {:?} {stderr}",
        out.status
    );
    no_403("kelp doctor", &stderr);
    let report: Value = serde_json::from_slice(&out.stdout).expect("doctor JSON");
    assert!(report["findings"].is_array(), "{report:#}");

    // snapshot: every kind, plus Karpenter's CRDs through the resourceNames-restricted get.
    let dump = tempfile::NamedTempFile::new().unwrap();
    let out = sa.kelp(&["snapshot", "-f", dump.path().to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "kelp snapshot: {stderr}");
    no_403("kelp snapshot", &stderr);
    let text = std::fs::read_to_string(dump.path()).unwrap();
    let list: Value = serde_json::from_str(&text)
        .or_else(|_| serde_norway::from_str(&text))
        .expect("snapshot is JSON or YAML");
    let items = list["items"].as_array().expect("snapshot items");
    let kinds = |k: &str| items.iter().filter(|i| i["kind"] == k).count();
    let crds: Vec<&str> = items
        .iter()
        .filter(|i| i["kind"] == "CustomResourceDefinition")
        .filter_map(|i| i["metadata"]["name"].as_str())
        .collect();
    for crd in [
        "nodepools.karpenter.sh",
        "nodeclaims.karpenter.sh",
        "kwoknodeclasses.karpenter.kwok.sh",
    ] {
        assert!(crds.contains(&crd), "snapshot lacks CRD {crd}: {crds:?}");
    }
    assert!(kinds("NodePool") >= 1 && kinds("KWOKNodeClass") >= 1);
    assert!(kinds("Secret") == 0 && kinds("ConfigMap") == 0);

    // serve: ready, metrics, and not one refusal in its logs.
    let serve = Serve::start(&sa);
    wait_for("kelp serve /readyz = 200", 2 * MINUTES, || {
        serve.get("/readyz").filter(|(c, _)| *c == 200)
    });
    let (code, body) = wait_for("kelp serve /metrics", MINUTES, || serve.get("/metrics"));
    assert_eq!(code, 200, "{body}");
    assert!(body.contains("karpenter_helper_findings"), "{body}");
    std::thread::sleep(Duration::from_secs(2));
    no_403("kelp serve", &serve.logs());
}

#[test]
fn a_missing_permission_is_one_clear_line() {
    let Some(admin) = env() else { return };
    let (ns, _) = apply_rbac(&admin);
    let docs = manifests();
    // The chart's ClusterRole, minus `list` on pods.
    let mut role = of_kind(&docs, "ClusterRole").clone();
    let name = "kelp-e2e-no-list-pods";
    role["metadata"] = json!({"name": name});
    let mut rules = Vec::new();
    for rule in role["rules"].as_array().unwrap() {
        let core = rule["apiGroups"] == json!([""]);
        let has_pods = rule["resources"]
            .as_array()
            .is_some_and(|r| r.iter().any(|x| x == "pods"));
        if core && has_pods {
            let mut rest = rule.clone();
            rest["resources"] = json!(rule["resources"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|x| *x != "pods")
                .collect::<Vec<_>>());
            rules.push(rest);
            rules
                .push(json!({"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "watch"]}));
        } else {
            rules.push(rule.clone());
        }
    }
    role["rules"] = json!(rules);
    admin.apply(&role.to_string());
    admin.apply(
        &json!({"apiVersion": "v1", "kind": "ServiceAccount",
            "metadata": {"name": name, "namespace": ns}})
        .to_string(),
    );
    admin.apply(
        &json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": {"name": name},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
            "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": ns}]})
        .to_string(),
    );
    let (sa, _kc) = impersonating(&admin, &ns, name);
    // RBAC changes reach the authorizer's cache quickly, but not synchronously.
    wait_for("the narrowed role to be in force", MINUTES, || {
        (can_i(&sa, &["list", "pods", "-A"]) == "no" && can_i(&sa, &["list", "nodes"]) == "yes")
            .then_some(())
    });

    for cmd in [
        vec!["doctor"],
        vec!["why", "node", "does-not-matter"],
        vec!["snapshot", "-f", "/dev/null"],
    ] {
        let out = sa.kelp(&cmd);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "kelp {cmd:?}: {stderr}");
        let lines: Vec<&str> = stderr.lines().filter(|l| !l.trim().is_empty()).collect();
        assert_eq!(lines.len(), 1, "kelp {cmd:?}: not one line:\n{stderr}");
        assert!(
            lines[0].contains("forbidden: kelp cannot list pods"),
            "kelp {cmd:?}: {stderr}"
        );
        assert!(
            out.stdout.is_empty() || cmd[0] != "doctor",
            "kelp {cmd:?} printed a report"
        );
    }

    // serve stays up but never claims readiness, and says why.
    let serve = Serve::start(&sa);
    let said = wait_for("kelp serve to log the refused pod list", MINUTES, || {
        let logs = serve.logs();
        logs.lines()
            .find(|l| l.contains("pods") && l.to_lowercase().contains("forbidden"))
            .map(str::to_string)
    });
    assert!(said.contains("list"), "{said}");
    let (code, _) = wait_for("kelp serve /readyz", MINUTES, || serve.get("/readyz"));
    assert_ne!(code, 200, "ready without being able to list pods");
    assert_eq!(serve.get("/livez").map(|(c, _)| c), Some(200));
}
