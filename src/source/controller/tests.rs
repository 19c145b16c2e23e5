use super::*;
use serde::Deserialize;

fn t(s: &str) -> ScrapeTarget {
    s.parse().unwrap()
}

#[test]
fn targets_parse() {
    assert_eq!(t(DEFAULT_TARGET), ScrapeTarget::default());
    assert_eq!(
        t(" kube-system/karpenter:http-metrics "),
        ScrapeTarget {
            namespace: "kube-system".into(),
            service: "karpenter".into(),
            port: Port::Name("http-metrics".into()),
        }
    );
    let d = ScrapeTarget::default();
    assert_eq!(d.to_string(), DEFAULT_TARGET);
    assert_eq!(
        d.path(),
        "/api/v1/namespaces/karpenter/services/karpenter:8080/proxy/metrics"
    );
    assert_eq!(d.resource_name(), "karpenter:8080");
    assert_eq!(t("0ns/a1:65535").port, Port::Number(65535));
}

#[test]
fn bad_targets_say_what_is_wrong() {
    for (input, says) in [
        ("", "no NAMESPACE/"),
        ("karpenter", "no NAMESPACE/"),
        ("karpenter:8080", "no NAMESPACE/"),
        ("karpenter/karpenter", "no :PORT"),
        ("/karpenter:8080", "namespace: empty"),
        ("karpenter/:8080", "service: empty"),
        ("karpenter/karpenter:", "port: empty"),
        (
            "Karpenter/karpenter:8080",
            "namespace: \"Karpenter\" has 'K'",
        ),
        ("kar_penter/karpenter:8080", "has '_'"),
        ("-k/karpenter:8080", "must start and end"),
        ("k/1karpenter:8080", "must start with a letter"),
        ("k/karpenter-:8080", "must start and end"),
        ("k/a/b:8080", "has '/'"),
        ("k/karpenter:0", "not a port number"),
        ("k/karpenter:65536", "not a port number"),
        ("k/karpenter:99999999999999999999", "not a port number"),
        ("k/karpenter:8080:9", "neither a number nor a port name"),
        ("k/karpenter:http--metrics", "neither"),
        ("k/karpenter:-http", "neither"),
        ("k/karpenter:a-very-long-port-name", "neither"),
        ("k/karpenter:HTTP", "neither"),
    ] {
        let e = input.parse::<ScrapeTarget>().unwrap_err();
        let text = e.to_string();
        assert!(text.contains(says), "{input:?}: {text}");
        assert!(text.contains("expected NAMESPACE/SERVICE:PORT"), "{text}");
    }
    let long = format!("{}/karpenter:8080", "a".repeat(64));
    assert!(long
        .parse::<ScrapeTarget>()
        .unwrap_err()
        .problem
        .contains("longer than 63"));
}

fn status(code: u16, reason: &str, message: &str) -> String {
    serde_json::json!({"kind": "Status", "apiVersion": "v1", "metadata": {},
            "status": "Failure", "message": message, "reason": reason, "code": code})
    .to_string()
}

const FORBIDDEN: &str = "services \"karpenter:8080\" is forbidden: User \"system:serviceaccount:kelp:kelp\" cannot get resource \"services/proxy\" in API group \"\" in the namespace \"karpenter\"";

#[test]
fn api_server_answers_are_classified() {
    let cases = [
        (403, "Forbidden", FORBIDDEN, "forbidden"),
        (
            404,
            "NotFound",
            "services \"karpenter\" not found",
            "not-found",
        ),
        (
            503,
            "ServiceUnavailable",
            "no service port 9999 found for service \"karpenter\"",
            "port-not-found",
        ),
        (
            503,
            "ServiceUnavailable",
            "no endpoints available for service \"karpenter:http-metrics\"",
            "no-endpoints",
        ),
        (
            503,
            "ServiceUnavailable",
            "error trying to reach service: dial tcp 10.0.0.1:8080: connect: connection refused",
            "unreachable",
        ),
        (
            504,
            "Timeout",
            "Timeout: request did not complete within 1m0s",
            "unreachable",
        ),
        (401, "Unauthorized", "Unauthorized", "other"),
        (
            400,
            "BadRequest",
            "invalid service request \"a:b:c:d\"",
            "other",
        ),
    ];
    for (code, reason, message, kind) in cases {
        let e = classify(code, &status(code, reason, message));
        assert_eq!(e.kind(), kind, "{code} {message}: {e:?}");
        assert!(e.to_string().contains(message), "{e}");
    }
    // The API server's message is kept whole.
    assert_eq!(
        classify(403, &status(403, "Forbidden", FORBIDDEN)),
        ScrapeError::Forbidden {
            message: FORBIDDEN.into()
        }
    );
    // A Status without a message still says something.
    let e = classify(404, r#"{"kind":"Status","reason":"NotFound","code":404}"#);
    assert_eq!(e.to_string(), "service not found: NotFound");
}

#[test]
fn endpoint_answers_are_not_mistaken_for_the_api_server() {
    // Passed through by the proxy: Karpenter's mux, or a kube-rbac-proxy in front of it.
    let e = classify(404, "404 page not found\n");
    assert_eq!(
        e,
        ScrapeError::Endpoint {
            code: 404,
            message: "404 page not found".into()
        }
    );
    assert_eq!(
        classify(403, "Forbidden (user=x, verb=get)").kind(),
        "endpoint-error"
    );
    // JSON that is not a Status is the endpoint's, too.
    assert_eq!(classify(403, r#"{"error":"no"}"#).kind(), "endpoint-error");
    assert_eq!(
        classify(500, "").to_string(),
        "the metrics endpoint answered 500: (empty body)"
    );
    let long = classify(502, &"é".repeat(500)).to_string();
    assert!(
        long.ends_with("...") && long.chars().count() < 260,
        "{long}"
    );
}

#[test]
fn hints_name_the_target_and_the_fix() {
    let target = t("kube-system/karpenter:http-metrics");
    let hint = |e: ScrapeError| e.hint(&target);
    let msg = || "m".to_string();
    let forbidden = hint(ScrapeError::Forbidden { message: msg() });
    assert!(
        forbidden.contains("services/proxy")
            && forbidden.contains("karpenter:http-metrics")
            && forbidden.contains("namespace kube-system"),
        "{forbidden}"
    );
    let not_found = hint(ScrapeError::NotFound { message: msg() });
    assert!(
        not_found.contains("no Service karpenter in namespace kube-system")
            && not_found.contains("--karpenter-service"),
        "{not_found}"
    );
    assert!(hint(ScrapeError::PortNotFound { message: msg() }).contains("has no port http-metrics"));
    assert!(hint(ScrapeError::NoEndpoints { message: msg() }).contains("controller is running"));
    assert!(hint(ScrapeError::Timeout {
        after: Duration::from_secs(15)
    })
    .contains("within 15s"));
    assert!(hint(ScrapeError::Unreachable { message: msg() }).contains("could not connect"));
    assert!(hint(ScrapeError::Endpoint {
        code: 404,
        message: msg()
    })
    .contains("metrics port"));
    assert!(hint(ScrapeError::Other {
        code: Some(400),
        message: msg()
    })
    .contains("kube-system/karpenter:http-metrics"));
    assert!(hint(ScrapeError::Unparseable { message: msg() })
        .contains("not with Karpenter's Prometheus metrics"));
    for e in [
        ScrapeError::Forbidden { message: msg() },
        ScrapeError::Timeout {
            after: Duration::from_millis(1500),
        },
    ] {
        assert!(!hint(e.clone()).contains('\n'), "{e:?}");
    }
    assert_eq!(
        ScrapeError::Timeout {
            after: Duration::from_millis(1500)
        }
        .to_string(),
        "no answer within 1.5s"
    );
}

fn docs(yaml: &str) -> Vec<serde_json::Value> {
    serde_norway::Deserializer::from_str(yaml)
        .map(|d| serde_json::Value::deserialize(d).unwrap())
        .collect()
}

#[test]
fn rbac_yaml_grants_exactly_the_proxy_get() {
    let target = t("karpenter/karpenter:8080");
    let yaml = rbac_yaml(&target, "kelp", "kelp-sa");
    let d = docs(&yaml);
    assert_eq!(d.len(), 2, "{yaml}");
    let (role, binding) = (&d[0], &d[1]);
    assert_eq!(role["apiVersion"], "rbac.authorization.k8s.io/v1");
    assert_eq!(role["kind"], "Role");
    assert_eq!(role["metadata"]["namespace"], "karpenter");
    assert_eq!(role["metadata"]["name"], ROLE_NAME);
    let rules = role["rules"].as_array().unwrap();
    assert_eq!(rules.len(), 1);
    assert_eq!(rules[0]["apiGroups"], serde_json::json!([""]));
    assert_eq!(rules[0]["resources"], serde_json::json!(["services/proxy"]));
    assert_eq!(rules[0]["verbs"], serde_json::json!(["get"]));
    assert_eq!(
        rules[0]["resourceNames"],
        serde_json::json!(["karpenter", "karpenter:8080"])
    );
    assert_eq!(binding["kind"], "RoleBinding");
    assert_eq!(binding["metadata"]["namespace"], "karpenter");
    assert_eq!(
        binding["roleRef"],
        serde_json::json!({"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": ROLE_NAME})
    );
    assert_eq!(
        binding["subjects"],
        serde_json::json!([{"kind": "ServiceAccount", "name": "kelp-sa", "namespace": "kelp"}])
    );
    // Odd input stays data, never YAML structure.
    let odd = rbac_yaml(
        &target,
        "a\"b",
        "x\n- kind: User\n  name: admin\u{2028}\u{85}",
    );
    let d = docs(&odd);
    assert_eq!(d[1]["subjects"].as_array().unwrap().len(), 1);
    assert_eq!(d[1]["subjects"][0]["namespace"], "a\"b");
    assert_eq!(
        d[1]["subjects"][0]["name"],
        "x\n- kind: User\n  name: admin\u{2028}\u{85}"
    );
}

#[test]
fn a_403_names_whom_to_bind() {
    let target = t("karpenter/karpenter:8080");
    let e = ScrapeError::Forbidden {
        message: FORBIDDEN.into(),
    };
    assert_eq!(e.forbidden_user(), Some("system:serviceaccount:kelp:kelp"));
    let d = docs(&e.rbac_yaml(&target).unwrap());
    assert_eq!(
        d[1]["subjects"],
        serde_json::json!([{"kind": "ServiceAccount", "name": "kelp", "namespace": "kelp"}])
    );
    let human = ScrapeError::Forbidden {
            message: "services \"karpenter:8080\" is forbidden: User \"jane@example.com\" cannot get resource \"services/proxy\"".into(),
        };
    let d = docs(&human.rbac_yaml(&target).unwrap());
    assert_eq!(
        d[1]["subjects"],
        serde_json::json!([{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "jane@example.com"}])
    );
    for e in [
        ScrapeError::Forbidden {
            message: "forbidden".into(),
        },
        ScrapeError::Forbidden {
            message: "User \"unterminated".into(),
        },
        ScrapeError::NotFound {
            message: FORBIDDEN.into(),
        },
    ] {
        assert_eq!(e.rbac_yaml(&target), None, "{e:?}");
    }
    assert_eq!(service_account("system:serviceaccount:ns:"), None);
    assert_eq!(
        service_account("system:serviceaccount:ns:n"),
        Some(("ns", "n"))
    );
}

#[test]
fn bodies_parse_or_say_why_not() {
    let target = ScrapeTarget::default();
    let m = parse_body(
            &target,
            b"# TYPE karpenter_nodepools_cost_total gauge\nkarpenter_nodepools_cost_total{nodepool=\"default\"} 0.5\n",
        )
        .unwrap();
    assert_eq!(m.nodepool_cost["default"], 0.5);
    for (body, says) in [
        (&b""[..], "empty"),
        (b"  \n", "empty"),
        (b"\xff\xfe", "not UTF-8"),
        (b"<html><body>hello</body></html>", "no samples"),
        (b"go_goroutines 12\n", "without one karpenter_ series"),
    ] {
        let e = parse_body(&target, body).unwrap_err();
        assert_eq!(e.kind(), "unparseable");
        assert!(e.to_string().contains(says), "{e}");
    }
}

#[test]
fn the_cache_keeps_the_last_good_read_and_the_last_error() {
    let start = Instant::now();
    let at = |s: u64| start + Duration::from_secs(s);
    let mut c = PriceCache::new(ScrapeTarget::default(), Duration::from_secs(60));
    assert!(c.due(at(0)));
    assert_eq!(c.status(at(0)).state, "pending");
    c.begin(at(0));
    assert!(!c.due(at(59)));
    assert!(c.due(at(60)));
    let mut m = ControllerMetrics::default();
    m.nodepool_cost.insert("default".into(), 1.0);
    c.record(at(1), Ok(m.clone()));
    assert_eq!(c.metrics(), Some(&m));
    assert_eq!(c.fetched_at(), Some(at(1)));
    let s = c.status(at(31));
    assert_eq!(
        (s.state, s.age_seconds, s.error_kind),
        ("ok", Some(30), None)
    );

    c.begin(at(60));
    c.record(
        at(61),
        Err(ScrapeError::Forbidden {
            message: FORBIDDEN.into(),
        }),
    );
    // The prices stay, marked stale, with what went wrong and how to fix it.
    assert_eq!(c.metrics(), Some(&m));
    let s = c.status(at(61));
    assert_eq!(s.state, "stale");
    assert_eq!(s.age_seconds, Some(60));
    assert_eq!(s.error_kind, Some("forbidden"));
    assert!(s.hint.unwrap().contains("services/proxy"));
    assert!(s.rbac_yaml.unwrap().contains("kind: RoleBinding"));
    assert!(!c.due(at(100)) && c.due(at(120)));

    c.record(at(121), Ok(ControllerMetrics::default()));
    assert_eq!(c.last_error(), None);
    assert_eq!(c.status(at(121)).state, "ok");

    // Never a good read: `error`, no age.
    let mut never = PriceCache::new(ScrapeTarget::default(), Duration::from_secs(60));
    never.record(
        at(5),
        Err(ScrapeError::Timeout {
            after: DEFAULT_TIMEOUT,
        }),
    );
    let s = never.status(at(6));
    assert_eq!(
        (s.state, s.age_seconds, s.rbac_yaml.as_deref()),
        ("error", None, None)
    );
    assert!(!never.due(at(64)) && never.due(at(65)));
    // Serialises for the page's API.
    let v = serde_json::to_value(&s).unwrap();
    assert_eq!(v["error_kind"], "timeout");
}

/// A client for `http://127.0.0.1:PORT` (no TLS, no credentials).
fn conn(port: u16) -> Connection {
    let url: http::Uri = format!("http://127.0.0.1:{port}").parse().unwrap();
    let mut config = kube::Config::new(url);
    let client = kube::Client::try_from(config.clone()).unwrap();
    config.default_retry = false;
    Connection {
        watch_client: client.clone(),
        client,
        client_no_retry: kube::Client::try_from(config).unwrap(),
        server: format!("http://127.0.0.1:{port}"),
        context: "test".into(),
    }
}

/// An HTTP server that answers one request with `response` (after `delay`) and hands
/// back the request's head.
fn answer_once(response: String, delay: Duration) -> (u16, std::thread::JoinHandle<String>) {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let handle = std::thread::spawn(move || {
        let (mut s, _) = listener.accept().unwrap();
        let mut head = Vec::new();
        let mut buf = [0u8; 1024];
        while !head.windows(4).any(|w| w == b"\r\n\r\n") {
            let n = s.read(&mut buf).unwrap();
            if n == 0 {
                break;
            }
            head.extend_from_slice(&buf[..n]);
        }
        std::thread::sleep(delay);
        let _ = s.write_all(response.as_bytes());
        String::from_utf8_lossy(&head).to_string()
    });
    (port, handle)
}

fn http(code: u16, content_type: &str, body: &str) -> String {
    format!(
            "HTTP/1.1 {code} X\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )
}

#[tokio::test]
async fn a_scrape_gets_the_proxy_path_and_parses() {
    let body = "# TYPE karpenter_nodepools_cost_total gauge\nkarpenter_nodepools_cost_total{nodepool=\"a\"} 2.5\n";
    let (port, server) = answer_once(http(200, "text/plain", body), Duration::ZERO);
    let target = t("kube-system/karpenter:http-metrics");
    let m = scrape(&conn(port), &target, DEFAULT_TIMEOUT).await.unwrap();
    assert_eq!(m.nodepool_cost["a"], 2.5);
    let head = server.join().unwrap();
    assert!(
            head.starts_with("GET /api/v1/namespaces/kube-system/services/karpenter:http-metrics/proxy/metrics HTTP/1.1\r\n"),
            "{head}"
        );
    assert!(head.to_lowercase().contains("accept: text/plain"), "{head}");
}

#[tokio::test]
async fn scrape_failures_are_classified() {
    let target = ScrapeTarget::default();
    let forbidden = status(403, "Forbidden", FORBIDDEN);
    let (port, _) = answer_once(http(403, "application/json", &forbidden), Duration::ZERO);
    let e = scrape(&conn(port), &target, DEFAULT_TIMEOUT)
        .await
        .unwrap_err();
    assert_eq!(
        e,
        ScrapeError::Forbidden {
            message: FORBIDDEN.into()
        }
    );

    // A 503 is the proxy's answer, not overload: not retried (the server answers once;
    // a retry would meet a closed port).
    let no_endpoints = status(
        503,
        "ServiceUnavailable",
        "no endpoints available for service \"karpenter\"",
    );
    let (port, _) = answer_once(http(503, "application/json", &no_endpoints), Duration::ZERO);
    let e = scrape(&conn(port), &target, DEFAULT_TIMEOUT)
        .await
        .unwrap_err();
    assert_eq!(e.kind(), "no-endpoints", "{e}");

    let (port, _) = answer_once(
        http(404, "text/plain", "404 page not found\n"),
        Duration::ZERO,
    );
    let e = scrape(&conn(port), &target, DEFAULT_TIMEOUT)
        .await
        .unwrap_err();
    assert_eq!(e.kind(), "endpoint-error");

    let (port, _) = answer_once(http(200, "text/html", "<html>hi</html>"), Duration::ZERO);
    let e = scrape(&conn(port), &target, DEFAULT_TIMEOUT)
        .await
        .unwrap_err();
    assert_eq!(e.kind(), "unparseable");

    let (port, _) = answer_once(http(200, "text/plain", ""), Duration::from_secs(3));
    let e = scrape(&conn(port), &target, Duration::from_millis(300))
        .await
        .unwrap_err();
    assert_eq!(
        e,
        ScrapeError::Timeout {
            after: Duration::from_millis(300)
        }
    );

    // Nothing listens: the API server itself is unreachable.
    let free = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = free.local_addr().unwrap().port();
    drop(free);
    let e = scrape(&conn(port), &target, DEFAULT_TIMEOUT)
        .await
        .unwrap_err();
    assert_eq!(e.kind(), "unreachable", "{e}");
    assert!(e.to_string().contains(&format!("127.0.0.1:{port}")), "{e}");
}

/// A scrape whose answer never ends (a proxy or endpoint gone wrong) stops at the cap:
/// one error, not memory without end.
#[tokio::test]
async fn an_endless_answer_stops_at_the_cap() {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        let (mut s, _) = listener.accept().unwrap();
        let mut buf = [0u8; 4096];
        let _ = s.read(&mut buf);
        let _ = s
            .write_all(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\n");
        let line = "# HELP x y\n".repeat(6000);
        while s.write_all(line.as_bytes()).is_ok() {}
    });
    let e = scrape(&conn(port), &ScrapeTarget::default(), DEFAULT_TIMEOUT)
        .await
        .unwrap_err();
    assert_eq!(
        e,
        ScrapeError::Unparseable {
            message: "the response is larger than 64 MiB".into()
        }
    );
}

#[tokio::test]
async fn a_target_that_could_steer_the_path_is_never_requested() {
    for (namespace, service, port) in [
        ("..", "secrets", Port::Number(80)),
        ("kube-system", "karpenter/../../secrets", Port::Number(80)),
        (
            "kube-system",
            "karpenter",
            Port::Name("x/../../../secrets".into()),
        ),
        (" kube-system", "karpenter", Port::Number(80)),
    ] {
        let target = ScrapeTarget {
            namespace: namespace.into(),
            service: service.into(),
            port,
        };
        // Port 1 on loopback: a request would fail as unreachable, not as refused.
        let e = scrape(&conn(1), &target, DEFAULT_TIMEOUT)
            .await
            .unwrap_err();
        assert!(
            matches!(&e, ScrapeError::Other { code: None, message } if message.contains("refusing")),
            "{target:?}: {e:?}"
        );
    }
}
