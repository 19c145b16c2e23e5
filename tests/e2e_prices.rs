//! The cost scrape against the real control plane: kelp reads the real Karpenter
//! controller's `/metrics` through the API server's service proxy.
//!
//! In the testenv Karpenter is a local process, not a pod, so the test gives it a Service
//! the way a cluster would: a Service without a selector, a Pod that stands in for the
//! controller (scheduling-gated, so nothing runs or provisions for it; its status carries
//! this machine's address, since the proxy only forwards to addresses that are Pods) and
//! an Endpoints object pointing at Karpenter's metrics port on that address (the API server
//! refuses loopback endpoints; Karpenter listens on all interfaces).
//!
//! Run with `--test-threads 1` (as scripts/e2e does): the tests share the namespace and
//! its objects. Skipped without a running testenv (`testenv/up`), required with `KELP_E2E=1`.

mod common;

use std::net::{IpAddr, TcpListener};
use std::time::Duration;

use common::*;
use kelp::model::ControllerMetrics;
use kelp::source::controller::{self, ScrapeError, ScrapeTarget};
use kelp::source::live;
use serde::Deserialize;
use serde_json::Value;

const NS: &str = "kelp-e2e-prices";

/// A variable of the testenv's env file.

/// This machine's non-loopback IPv4 address: the source address of the default route
/// (a UDP connect sends nothing), else the first of `hostname -I`.
fn host_ip() -> IpAddr {
    let routed = std::net::UdpSocket::bind("0.0.0.0:0")
        .and_then(|s| s.connect("192.0.2.1:9").map(|_| s))
        .and_then(|s| s.local_addr())
        .map(|a| a.ip())
        .ok()
        .filter(|ip| !ip.is_loopback() && !ip.is_unspecified());
    routed
        .or_else(|| {
            let out = std::process::Command::new("hostname")
                .arg("-I")
                .output()
                .ok()?;
            String::from_utf8_lossy(&out.stdout)
                .split_whitespace()
                .filter_map(|w| w.parse::<IpAddr>().ok())
                .find(|ip| ip.is_ipv4() && !ip.is_loopback())
        })
        .expect("a non-loopback IPv4 address for the endpoint")
}

/// A port on all interfaces that accepts connections (the kernel's backlog) and never answers.
fn silent_listener() -> (TcpListener, u16) {
    let l = TcpListener::bind("0.0.0.0:0").unwrap();
    let port = l.local_addr().unwrap().port();
    (l, port)
}

/// A port on all interfaces answering every request with 200 and a body that is no exposition.
fn html_server() -> u16 {
    use std::io::{Read, Write};
    let l = TcpListener::bind("0.0.0.0:0").unwrap();
    let port = l.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for mut s in l.incoming().flatten() {
            let mut buf = [0u8; 4096];
            let _ = s.read(&mut buf);
            let body = "<html><body>not metrics</body></html>";
            let _ = write!(
                s,
                "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    port
}

/// A port nothing listens on.
fn closed_port() -> u16 {
    let l = TcpListener::bind("0.0.0.0:0").unwrap();
    l.local_addr().unwrap().port()
}

/// A Service `name` (port 8080, named http-metrics, the way Karpenter's chart declares
/// it). With a backend: no selector, and an endpoint `ip:port` backed by the stand-in Pod.
/// Without: a selector no pod matches, so the endpoints controller keeps its Endpoints
/// empty (a Karpenter whose pods are all gone).
fn service(e: &Env, name: &str, backend: Option<(IpAddr, u16)>) {
    let Some((ip, port)) = backend else {
        e.apply(&format!(
            "apiVersion: v1\nkind: Service\nmetadata: {{name: {name}, namespace: {NS}}}\nspec:\n  selector: {{app: kelp-e2e-nothing}}\n  ports: [{{name: http-metrics, port: 8080, targetPort: 8080}}]\n"
        ));
        wait_for(&format!("the Endpoints of {name}"), MINUTES, || {
            let out = e.kubectl(&["get", "endpoints", "-n", NS, name], None);
            out.status.success().then_some(())
        });
        return;
    };
    e.apply(&format!(
        "apiVersion: v1\nkind: Service\nmetadata: {{name: {name}, namespace: {NS}}}\nspec:\n  ports: [{{name: http-metrics, port: 8080, targetPort: 8080}}]\n"
    ));
    let pod = format!("{name}-stand-in");
    e.apply(&format!(
        "apiVersion: v1\nkind: Pod\nmetadata: {{name: {pod}, namespace: {NS}, labels: {{app: {name}}}}}\nspec:\n  schedulingGates: [{{name: e2e.kelp.dev/never}}]\n  containers: [{{name: c, image: registry.k8s.io/pause:3.10}}]\n"
    ));
    let status = serde_json::json!({"status": {"podIP": ip.to_string(), "podIPs": [{"ip": ip.to_string()}]}});
    e.ok(&[
        "patch",
        "pod",
        "-n",
        NS,
        &pod,
        "--subresource=status",
        "--type=merge",
        "-p",
        &status.to_string(),
    ]);
    e.apply(&format!(
        "apiVersion: v1\nkind: Endpoints\nmetadata: {{name: {name}, namespace: {NS}}}\nsubsets:\n  - addresses: [{{ip: \"{ip}\", targetRef: {{kind: Pod, name: {pod}, namespace: {NS}}}}}]\n    ports: [{{name: http-metrics, port: {port}}}]\n"
    ));
}

/// The namespace, the `karpenter` Service in front of the real controller, and a clean
/// slate of RBAC; returns the host address.
fn setup(e: &Env) -> IpAddr {
    namespace(e, NS);
    let ip = host_ip();
    let metrics_port: u16 = testenv_value("KARPENTER_METRICS_PORT").parse().unwrap();
    assert!(
        std::net::TcpStream::connect((ip, metrics_port)).is_ok(),
        "Karpenter's metrics port {metrics_port} is not reachable on {ip}"
    );
    service(e, "karpenter", Some((ip, metrics_port)));
    for kind in ["rolebinding", "role"] {
        let _ = e.kubectl(
            &[
                "delete",
                kind,
                "-n",
                NS,
                "--ignore-not-found",
                controller::ROLE_NAME,
            ],
            None,
        );
    }
    ip
}

fn scrape_with(
    kubeconfig: &str,
    target: &str,
    timeout: Duration,
) -> Result<ControllerMetrics, ScrapeError> {
    let target: ScrapeTarget = target.parse().unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let conn = live::connect(&live::Target {
            kubeconfig: Some(kubeconfig.into()),
            context: None,
        })
        .await
        .unwrap();
        controller::scrape(&conn, &target, timeout).await
    })
}

fn scrape(e: &Env, target: &str) -> Result<ControllerMetrics, ScrapeError> {
    scrape_with(&e.kubeconfig, target, controller::DEFAULT_TIMEOUT)
}

fn service_account(e: &Env, name: &str) {
    e.apply(&format!(
        "apiVersion: v1\nkind: ServiceAccount\nmetadata: {{name: {name}, namespace: {NS}}}\n"
    ));
}

/// Retry a scrape until `ok` accepts it (RBAC reaches the authorizer quickly, not at once).
fn scrape_until(
    e: &Env,
    target: &str,
    what: &str,
    ok: impl Fn(&Result<ControllerMetrics, ScrapeError>) -> bool,
) -> Result<ControllerMetrics, ScrapeError> {
    wait_for(what, MINUTES, || {
        let r = scrape(e, target);
        ok(&r).then_some(r)
    })
}

#[test]
fn the_real_controllers_metrics_come_through_the_service_proxy() {
    let Some(e) = env() else { return };
    setup(&e);
    for target in [
        format!("{NS}/karpenter:8080"),
        format!("{NS}/karpenter:http-metrics"),
    ] {
        let m = scrape(&e, &target).unwrap_or_else(|err| panic!("{target}: {err}"));
        // The kwok provider exports karpenter_nodepools_cost_total per pool (the testenv's
        // NodePool `default` is always there), and no offering price or availability
        // series: those are the AWS provider's.
        assert!(
            m.nodepool_cost.contains_key("default"),
            "{target}: no cost for pool default: {m:?}"
        );
        assert!(m.offerings.is_empty(), "{target}: {:?}", m.offerings);
        // karpenter_build_info names the release the testenv built (and stamped).
        let built = testenv_value("KARPENTER_VERSION");
        assert_eq!(m.build_version.as_deref(), Some(built.as_str()), "{target}");
    }
}

#[test]
fn each_failure_is_told_apart() {
    let Some(e) = env() else { return };
    let ip = setup(&e);
    let health_port: u16 = testenv_value("KARPENTER_HEALTH_PROBE_PORT")
        .parse()
        .unwrap();
    let (_silent, silent_port) = silent_listener();
    service(&e, "karpenter-idle", None);
    service(&e, "karpenter-dead", Some((ip, closed_port())));
    service(&e, "karpenter-slow", Some((ip, silent_port)));
    service(&e, "karpenter-health", Some((ip, health_port)));
    service(&e, "karpenter-html", Some((ip, html_server())));

    let kind = |target: &str| match scrape_with(&e.kubeconfig, target, Duration::from_secs(3)) {
        Ok(m) => panic!("{target}: scraped {m:?}"),
        Err(err) => {
            let t: ScrapeTarget = target.parse().unwrap();
            let hint = err.hint(&t);
            assert!(!hint.is_empty() && !hint.contains('\n'), "{hint}");
            (err.kind(), err.to_string(), hint)
        }
    };
    let cases = [
        (
            format!("{NS}/no-such-service:8080"),
            "not-found",
            "services \"no-such-service\" not found",
        ),
        (
            "kelp-e2e-no-such-namespace/karpenter:8080".to_string(),
            "not-found",
            "not found",
        ),
        (
            format!("{NS}/karpenter:9999"),
            "port-not-found",
            "no service port 9999",
        ),
        (
            format!("{NS}/karpenter:no-such-port"),
            "no-endpoints",
            "no endpoints available",
        ),
        (
            format!("{NS}/karpenter-idle:8080"),
            "no-endpoints",
            "no endpoints available",
        ),
        (
            format!("{NS}/karpenter-dead:8080"),
            "unreachable",
            "connection refused",
        ),
        (
            format!("{NS}/karpenter-slow:8080"),
            "timeout",
            "no answer within 3s",
        ),
        // Karpenter's health port has no /metrics: its own 404 comes through the proxy.
        (
            format!("{NS}/karpenter-health:8080"),
            "endpoint-error",
            "404",
        ),
        (
            format!("{NS}/karpenter-html:8080"),
            "unparseable",
            "no samples",
        ),
    ];
    for (target, want, says) in cases {
        let (got, text, hint) = kind(&target);
        assert_eq!(got, want, "{target}: {text}");
        assert!(text.contains(says), "{target}: {text}");
        if want == "not-found" {
            assert!(hint.contains("--karpenter-service"), "{hint}");
        }
    }
}

#[test]
fn a_forbidden_scrape_shows_the_rbac_that_fixes_it() {
    let Some(admin) = env() else { return };
    setup(&admin);
    let sa_name = "kelp-e2e-prices-nobody";
    service_account(&admin, sa_name);
    let (sa, _kc) = impersonating(&admin, NS, sa_name);
    let target = format!("{NS}/karpenter:8080");
    let t: ScrapeTarget = target.parse().unwrap();

    let err = scrape_until(&sa, &target, "a 403", |r| {
        matches!(r, Err(ScrapeError::Forbidden { .. }))
    })
    .unwrap_err();
    // The API server's own message, naming who and what.
    let text = err.to_string();
    assert!(
        text.contains(&format!("system:serviceaccount:{NS}:{sa_name}"))
            && text.contains("services/proxy"),
        "{text}"
    );
    assert!(err.hint(&t).contains("services/proxy"), "{}", err.hint(&t));
    assert_eq!(
        err.forbidden_user(),
        Some(format!("system:serviceaccount:{NS}:{sa_name}").as_str())
    );

    // The YAML kelp offers is what it takes: applied, the same ServiceAccount gets through.
    let yaml = err.rbac_yaml(&t).expect("RBAC YAML for a 403");
    admin.apply(&yaml);
    let m = scrape_until(&sa, &target, "the scrape to pass with kelp's Role", |r| {
        r.is_ok()
    })
    .unwrap();
    assert!(m.nodepool_cost.contains_key("default"), "{m:?}");
    // And no more than it takes: still no Secrets, and no other Service's proxy.
    let can_i = |args: &[&str]| {
        let mut a = vec!["auth", "can-i"];
        a.extend(args);
        String::from_utf8_lossy(&sa.kubectl(&a, None).stdout)
            .trim()
            .to_string()
    };
    assert_eq!(can_i(&["get", "secrets", "-n", NS]), "no");
    assert_eq!(can_i(&["list", "services", "-n", NS]), "no");
    assert_eq!(
        can_i(&[
            "get",
            "services/other:8080",
            "--subresource=proxy",
            "-n",
            NS
        ]),
        "no"
    );
    let other = scrape(&sa, &format!("{NS}/karpenter-html:8080"));
    assert!(
        matches!(other, Err(ScrapeError::Forbidden { .. })),
        "{other:?}"
    );
}

/// The chart's cost-scrape Role and RoleBinding (`charts/kelp`, `karpenter.costScrape.enabled`),
/// rendered without Helm for release `kelp` with `karpenter.namespace` set to the test's
/// namespace: every template expression it uses is replaced by its value, and any other
/// expression fails the test (so a change to the template cannot slip by unrendered).
fn chart_rbac(sa_namespace: &str, sa_name: &str) -> (Vec<Value>, String) {
    let root = env!("CARGO_MANIFEST_DIR");
    let values: Value = serde_norway::from_str(
        &std::fs::read_to_string(format!("{root}/charts/kelp/values.yaml")).unwrap(),
    )
    .unwrap();
    let svc = values["karpenter"]["service"].as_str().unwrap().to_string();
    let port_name = values["karpenter"]["metricsPortName"]
        .as_str()
        .unwrap()
        .to_string();
    let template = std::fs::read_to_string(format!(
        "{root}/charts/kelp/templates/role-karpenter-proxy.yaml"
    ))
    .unwrap();
    let exprs = [
        ("{{ include \"kelp.fullname\" . }}", "kelp".to_string()),
        ("{{ .Values.karpenter.namespace }}", NS.to_string()),
        (
            "{{ .Values.karpenter.service | quote }}",
            format!("{svc:?}"),
        ),
        (
            "{{ printf \"%s:%s\" $.Values.karpenter.service . | quote }}",
            format!("\"{svc}:{port_name}\""),
        ),
        (
            "{{ include \"kelp.serviceAccountName\" . }}",
            sa_name.to_string(),
        ),
        ("{{ .Release.Namespace }}", sa_namespace.to_string()),
        (
            "{{- include \"kelp.labels\" . | nindent 4 }}",
            "app.kubernetes.io/name: kelp".to_string(),
        ),
    ];
    let mut out = String::new();
    for line in template.lines() {
        let t = line.trim();
        let control = ["{{- if ", "{{- with ", "{{- end }}"]
            .iter()
            .any(|p| t.starts_with(p));
        if control {
            continue;
        }
        let mut line = line.to_string();
        for (expr, value) in &exprs {
            line = line.replace(expr, value);
        }
        assert!(!line.contains("{{"), "unrendered template line: {line}");
        out.push_str(&line);
        out.push('\n');
    }
    let docs = serde_norway::Deserializer::from_str(&out)
        .map(|d| Value::deserialize(d).unwrap())
        .filter(|v| !v.is_null())
        .collect();
    (docs, format!("{svc}:{port_name}"))
}

#[test]
fn the_charts_role_lets_kelp_scrape() {
    let Some(admin) = env() else { return };
    setup(&admin);
    let sa_name = "kelp-e2e-prices-chart";
    service_account(&admin, sa_name);
    let (sa, _kc) = impersonating(&admin, NS, sa_name);
    let (docs, resource) = chart_rbac(NS, sa_name);
    let kinds: Vec<&str> = docs.iter().filter_map(|d| d["kind"].as_str()).collect();
    assert_eq!(kinds, ["Role", "RoleBinding"]);
    let target = format!("{NS}/{resource}");
    for d in &docs {
        let _ = admin.kubectl(
            &["delete", "-f", "-", "--ignore-not-found"],
            Some(&d.to_string()),
        );
    }
    scrape_until(&sa, &target, "a 403 before the chart's Role", |r| {
        matches!(r, Err(ScrapeError::Forbidden { .. }))
    })
    .unwrap_err();
    for d in &docs {
        admin.apply(&d.to_string());
    }
    let m = scrape_until(
        &sa,
        &target,
        "the scrape to pass with the chart's Role",
        |r| r.is_ok(),
    )
    .unwrap();
    assert!(m.nodepool_cost.contains_key("default"), "{m:?}");
}

#[test]
fn doctor_uses_the_scrape_and_never_fails_for_it() {
    let Some(e) = env() else { return };
    setup(&e);
    let run = |target: &str| {
        std::process::Command::new(env!("CARGO_BIN_EXE_kelp"))
            .env_remove("KUBECONFIG")
            .env("KELP_LOG", "kelp=debug")
            .args(["doctor", "-o", "json", "--kubeconfig", &e.kubeconfig])
            .args(["--karpenter-service", target])
            .output()
            .unwrap()
    };
    let out = run(&format!("{NS}/karpenter:8080"));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(matches!(out.status.code(), Some(0 | 1)), "{stderr}");
    assert!(stderr.contains("read Karpenter's metrics"), "{stderr}");
    let report: Value = serde_json::from_slice(&out.stdout).expect("doctor JSON");
    assert!(report["findings"].is_array());

    // A wrong Service: one warning with its hint, and the report all the same.
    let out = run(&format!("{NS}/no-such-service:8080"));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(matches!(out.status.code(), Some(0 | 1)), "{stderr}");
    let warning = stderr
        .lines()
        .find(|l| l.contains("WARN"))
        .unwrap_or_else(|| panic!("no warning: {stderr}"));
    assert!(
        warning.contains("service not found") && warning.contains("going on without"),
        "{warning}"
    );
    let report: Value = serde_json::from_slice(&out.stdout).expect("doctor JSON");
    assert!(report["findings"].is_array());
}

/// `kelp snapshot --karpenter-service` captures the real controller's `/metrics` text, and
/// `--catalog` embeds a catalogue: the dump reads both back (the metrics' pool cost, the
/// catalogue `kelp catalog --from` shows).
#[test]
fn a_snapshot_captures_the_controllers_metrics_and_a_catalogue() {
    let Some(e) = env() else { return };
    setup(&e);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("snap.json");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_kelp"))
        .env_remove("KUBECONFIG")
        .args(["snapshot", "--kubeconfig", &e.kubeconfig, "-f"])
        .arg(&path)
        .args(["--karpenter-service", &format!("{NS}/karpenter:8080")])
        .args(["--catalog", "tests/fixtures/what-if/aws-catalog.yaml"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let list: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let annotations = &list["metadata"]["annotations"];
    let metrics = annotations["kelp.dev/karpenter-metrics"]
        .as_str()
        .unwrap_or_default();
    assert!(
        metrics.contains("karpenter_nodepools_cost_total"),
        "{annotations:#}"
    );
    assert!(annotations["kelp.dev/instance-type-catalog"].is_string());
    let kelp = |args: &[&str]| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_kelp"))
            .env_remove("KUBECONFIG")
            .args(args)
            .arg("--from")
            .arg(&path)
            .output()
            .unwrap();
        // doctor exits 1 when something critical is found (other suites leave pods pending).
        assert!(
            matches!(out.status.code(), Some(0 | 1)),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice::<Value>(&out.stdout).unwrap()
    };
    let catalog = kelp(&["catalog", "-o", "json"]);
    assert_eq!(catalog["source"], "file");
    assert_eq!(catalog["instanceTypes"].as_array().unwrap().len(), 4);
    assert!(kelp(&["doctor", "-o", "json"])["findings"].is_array());
}
