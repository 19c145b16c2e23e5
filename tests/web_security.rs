//! The dashboard's defences: the Host allowlist (DNS rebinding), masked secrets in the
//! pane, live reads only of modelled objects, names that need encoding, the token's
//! redirect, cookie and bearer scheme (in process); and the listener's timeouts, cap and
//! shutdown (on a real socket).

use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::{Request, Response, StatusCode};
use http_body_util::Full;
use kelp::listener::{self, Limits};
use kelp::model::Cluster;
use kelp::serve::loaded;
use kelp::source::live::Connection;
use kelp::web::Board;
use kelp::web::{self, Hosts, Site, StreamLimits};
use scraper::{Html, Selector};

mod common;
use common::web::*;

const PAGE: &str = "/clusters/test/karpenter";

async fn get_host(app: &axum::Router, uri: &str, host: &str) -> Got {
    send(
        app,
        Request::get(uri)
            .header("host", host)
            .body(Body::empty())
            .unwrap(),
    )
    .await
}

// ------------------------------------------------------------------ 1. DNS rebinding

#[tokio::test]
async fn only_allowed_hosts_are_answered() {
    let app = site(demo());
    for host in [
        "evil.example",
        "evil.example:8081",
        "127.0.0.1.evil.example",
    ] {
        for uri in [PAGE, "/api/v1/clusters", "/static/kelp.js", "/"] {
            let r = get_host(&app, uri, host).await;
            assert_eq!(r.status, StatusCode::MISDIRECTED_REQUEST, "{host} {uri}");
            assert_eq!(r.body.lines().count(), 1, "{}", r.body);
            assert!(r.body.contains("--allowed-host"), "{}", r.body);
            assert!(!r.body.contains("nodepools"), "no dashboard data");
        }
    }
    for host in [
        "127.0.0.1:8081",
        "localhost:9000",
        "localhost",
        "[::1]:8081",
    ] {
        assert_eq!(
            get_host(&app, PAGE, host).await.status,
            StatusCode::OK,
            "{host}"
        );
    }
    // An absolute URI's authority is the host the request names (RFC 9112 3.2.2).
    let r = send(
        &app,
        Request::get("http://evil.example/clusters/test/karpenter")
            .header("host", "127.0.0.1")
            .body(Body::empty())
            .unwrap(),
    )
    .await;
    assert_eq!(r.status, StatusCode::MISDIRECTED_REQUEST);
}

#[tokio::test]
async fn two_host_headers_are_a_bad_request_whatever_they_say() {
    let app = site(demo());
    for (a, b) in [
        ("127.0.0.1", "127.0.0.1"),
        ("127.0.0.1", "evil.example"),
        ("evil.example", "localhost"),
    ] {
        let r = send(
            &app,
            Request::get("/api/v1/clusters")
                .header("host", a)
                .header("host", b)
                .body(Body::empty())
                .unwrap(),
        )
        .await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST, "{a} {b}");
        assert_eq!(r.body.lines().count(), 1, "{}", r.body);
        assert!(!r.body.contains("clusters"), "no dashboard data");
    }
}

#[tokio::test]
async fn allowed_hosts_and_a_token_on_all_addresses() {
    let shared = loaded("test", demo(), kelp::demo::now()).1;
    let bound = "0.0.0.0:8081".parse().unwrap();
    // --allowed-host adds a name; others stay out.
    let app = site_with(
        vec![shared.clone()],
        None,
        Hosts::new(bound, &["kelp.example.com".into()], false),
        false,
    );
    assert_eq!(
        get_host(&app, PAGE, "kelp.example.com").await.status,
        StatusCode::OK
    );
    assert_eq!(
        get_host(&app, PAGE, "10.1.2.3:8081").await.status,
        StatusCode::OK
    );
    assert_eq!(
        get_host(&app, PAGE, "evil.example").await.status,
        StatusCode::MISDIRECTED_REQUEST
    );
    // All addresses, a token, no --allowed-host: any name, but the token is required.
    let app = site_with(vec![shared], Some("t"), Hosts::new(bound, &[], true), false);
    assert_eq!(
        get_host(&app, PAGE, "kelp.kelp.svc").await.status,
        StatusCode::UNAUTHORIZED
    );
    let r = send(
        &app,
        Request::get(PAGE)
            .header("host", "kelp.kelp.svc")
            .header("authorization", "Bearer t")
            .body(Body::empty())
            .unwrap(),
    )
    .await;
    assert_eq!(r.status, StatusCode::OK);
}

// ------------------------------------------------------------------ a fake API server

/// A kube client whose API server is this closure: it counts the requests and answers
/// each with `object` (or 404).
fn fake_api(object: Option<serde_json::Value>) -> (Arc<Connection>, Arc<Mutex<Vec<String>>>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s2 = seen.clone();
    let svc = tower::service_fn(move |req: Request<kube::client::Body>| {
        s2.lock().unwrap().push(req.uri().path().to_string());
        let (status, body) = match &object {
            Some(o) => (200, serde_json::to_vec(o).unwrap()),
            None => (404, b"{}".to_vec()),
        };
        async move {
            Ok::<_, std::convert::Infallible>(
                Response::builder()
                    .status(status)
                    .header("content-type", "application/json")
                    .body(Full::new(Bytes::from(body)))
                    .unwrap(),
            )
        }
    });
    let client = kube::Client::new(svc, "default");
    let conn = Connection {
        client: client.clone(),
        watch_client: client.clone(),
        client_no_retry: client,
        server: "https://fake".into(),
        context: "fake".into(),
    };
    (Arc::new(conn), seen)
}

const POD: &str = r#"
apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Pod
  metadata: {name: api, namespace: shop, uid: u1, creationTimestamp: "2026-11-21T09:00:00Z"}
  spec:
    nodeName: n1
    containers: [{name: a, image: x}]
  status: {phase: Running}
"#;

fn live_pod() -> serde_json::Value {
    serde_json::json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "api", "namespace": "shop", "uid": "u1",
            "managedFields": [{"manager": "kubectl"}],
            "annotations": {
                "kubectl.kubernetes.io/last-applied-configuration":
                    "{\"spec\":{\"containers\":[{\"env\":[{\"name\":\"DB_PASSWORD\",\"value\":\"hunter2\"}]}]}}"
            }
        },
        "spec": {
            "nodeName": "n1",
            "containers": [{
                "name": "a", "image": "x",
                "env": [{"name": "DB_PASSWORD", "value": "hunter2"}]
            }],
            "initContainers": [{"name": "i", "image": "x", "env": [{"name": "K", "value": "hunter2"}]}]
        },
        "status": {"phase": "Running"}
    })
}

// ------------------------------------------------------------------ 2. masked secrets

#[tokio::test]
async fn the_yaml_tab_masks_env_values_and_last_applied() {
    let shared = loaded("test", load(POD), kelp::demo::now()).1;
    let (conn, seen) = fake_api(Some(live_pod()));
    shared.set_client(conn.client.clone());
    let app = site_with(vec![shared], None, Hosts::loopback(), false);
    let r = get(&app, &format!("{PAGE}/pane?sel=Pod/shop/api&tab=yaml")).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(*seen.lock().unwrap(), ["/api/v1/namespaces/shop/pods/api"]);
    let h = Html::parse_fragment(&r.body);
    let yaml: String = h
        .select(&Selector::parse(".tab-body[data-tab='yaml'] pre").unwrap())
        .flat_map(|e| e.text())
        .collect();
    assert!(
        yaml.contains("DB_PASSWORD"),
        "the live object is shown: {yaml}"
    );
    assert!(!r.body.contains("hunter2"), "{yaml}");
    assert!(yaml.contains("<masked: 7 chars>"), "{yaml}");
    assert!(!yaml.contains("managedFields"));
    let note: String = h
        .select(&Selector::parse(".tab-body[data-tab='yaml'] .masked").unwrap())
        .flat_map(|e| e.text())
        .collect();
    assert!(
        note.contains("masked") && note.contains("env values"),
        "{note}"
    );
}

// ------------------------------------------------------------------ 7. modelled objects only

#[tokio::test]
async fn the_pane_asks_the_api_server_only_for_modelled_objects() {
    let shared = loaded("test", load(POD), kelp::demo::now()).1;
    let (conn, seen) = fake_api(Some(live_pod()));
    shared.set_client(conn.client.clone());
    let app = site_with(vec![shared], None, Hosts::loopback(), false);
    for sel in [
        "Pod/kube-system/coredns",
        "Pod/shop/other",
        "Node/n1",
        "NodeClaim/x",
        "NodePool/..x",
    ] {
        let r = get(&app, &format!("{PAGE}/pane?sel={sel}&tab=yaml")).await;
        assert_eq!(r.status, StatusCode::NOT_FOUND, "{sel}: {}", r.body);
        let r = get(&app, &format!("{PAGE}?sel={sel}&tab=yaml")).await;
        assert_eq!(r.status, StatusCode::OK, "{sel}: the page, without a pane");
    }
    assert!(
        seen.lock().unwrap().is_empty(),
        "asked the API server for {:?}",
        seen.lock().unwrap()
    );
    assert_eq!(
        get(&app, &format!("{PAGE}/pane?sel=Pod/shop/api"))
            .await
            .status,
        StatusCode::OK
    );
    assert_eq!(seen.lock().unwrap().len(), 1);
}

// ------------------------------------------------------------------ 8. unusual names

fn enc(s: &str) -> String {
    form_urlencoded::byte_serialize(s.as_bytes()).collect()
}

#[tokio::test]
async fn names_with_any_characters_open_the_pane() {
    // The API server takes only DNS-1123 names for these kinds, but a dump can hold any.
    let (ns, name, pool) = ("team_a", "Web+1 café?&#", "Pool+gpu");
    let yaml = format!(
        r#"
apiVersion: v1
kind: List
items:
- apiVersion: karpenter.sh/v1
  kind: NodePool
  metadata: {{name: "{pool}", uid: np1}}
  spec:
    template:
      spec:
        nodeClassRef: {{group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}}
        requirements: [{{key: kubernetes.io/arch, operator: In, values: [amd64]}}]
  status:
    conditions: [{{type: Ready, status: "True"}}]
- apiVersion: v1
  kind: Pod
  metadata: {{name: "{name}", namespace: "{ns}", uid: u1, creationTimestamp: "2026-11-21T09:00:00Z"}}
  spec:
    containers: [{{name: a, image: x, resources: {{requests: {{cpu: "1"}}}}}}]
  status:
    phase: Pending
    conditions: [{{type: PodScheduled, status: "False", reason: Unschedulable}}]
"#
    );
    let app = site(load(&yaml));
    // The page carries the selection keys as they are; the script encodes them.
    let page = get(&app, PAGE).await;
    let h = Html::parse_document(&page.body);
    let key = format!("Pod/{ns}/{name}");
    let rows: Vec<_> = h
        .select(&Selector::parse("#pending tr.row-select").unwrap())
        .filter_map(|r| r.value().attr("data-select"))
        .collect();
    assert_eq!(rows, [key.as_str()]);
    // As the script asks for it (encodeURIComponent) and as a URL's ?sel= carries it.
    for q in [
        enc(&key),
        key.replace('/', "%2F")
            .replace(' ', "%20")
            .replace('+', "%2B")
            .replace('?', "%3F")
            .replace('&', "%26")
            .replace('#', "%23"),
    ] {
        let r = get(&app, &format!("{PAGE}/pane?sel={q}&tab=describe")).await;
        assert_eq!(r.status, StatusCode::OK, "{q}: {}", r.body);
        let title: String = Html::parse_fragment(&r.body)
            .select(&Selector::parse(".pane-head .obj").unwrap())
            .flat_map(|e| e.text())
            .collect();
        assert_eq!(title, format!("{ns}/{name}"));
    }
    let r = get(
        &app,
        &format!("{PAGE}?sel={}", enc(&format!("NodePool/{pool}"))),
    )
    .await;
    assert!(
        r.body.contains("class=\"pane-head\""),
        "the page renders the pane"
    );
    // The pending row's lazy verdicts, by path segments.
    let r = get(
        &app,
        &format!(
            "{PAGE}/pending/{}/{}",
            web::urlencode(ns),
            web::urlencode(name)
        ),
    )
    .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    // What is not a name is a 400 that says why.
    for (sel, why) in [
        ("Node/..", "not a name"),
        ("Node/a%2Fb", "NAME"),
        ("Node/a%25b", "'%'"),
        ("Node/a%0Ab", "no Kubernetes object name"),
        ("Secret/x", "not a kind"),
    ] {
        let r = get(&app, &format!("{PAGE}/pane?sel={sel}")).await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST, "{sel}");
        assert!(
            r.body.starts_with("kelp: sel: ") && r.body.contains(why),
            "{sel}: {}",
            r.body
        );
        assert_eq!(r.body.lines().count(), 1, "{}", r.body);
    }
}

#[tokio::test]
async fn a_context_name_with_a_slash_links_to_its_page() {
    let name = "arn:aws:eks:us-west-2:1:cluster/prod";
    let app = web::router(Arc::new(Site {
        clusters: vec![
            loaded(name, demo(), kelp::demo::now()).1,
            loaded("b", Cluster::default(), kelp::demo::now()).1,
        ],
        auth_token: None,
        hosts: Hosts::loopback(),
        secure_cookie: false,
        streams: kelp::web::Streams::default(),
    }));
    let page = get(&app, "/clusters/b/karpenter").await;
    let h = Html::parse_document(&page.body);
    let hrefs: Vec<String> = h
        .select(&Selector::parse("nav.clusters a").unwrap())
        .filter_map(|a| a.value().attr("href").map(str::to_string))
        .collect();
    assert_eq!(hrefs.len(), 2);
    for href in hrefs {
        assert_eq!(get(&app, &href).await.status, StatusCode::OK, "{href}");
    }
}

// ------------------------------------------------------------------ 4, 5, 6: the token

#[tokio::test]
async fn the_token_redirect_stays_on_this_site() {
    let shared = loaded("test", demo(), kelp::demo::now()).1;
    let app = site_with(vec![shared], Some("T"), Hosts::loopback(), false);
    for (uri, to) in [
        ("//evil.example/x?token=T", "/evil.example/x"),
        ("///evil.example/x?token=T&a=1", "/evil.example/x?a=1"),
        ("/%2F%2Fevil.example?token=T", "/%2F%2Fevil.example"),
    ] {
        let r = get(&app, uri).await;
        assert_eq!(r.status, StatusCode::SEE_OTHER, "{uri}");
        let location = r.headers["location"].to_str().unwrap();
        assert_eq!(location, to, "{uri}");
        assert!(!location.starts_with("//") && !location.starts_with("/\\"));
    }
}

#[tokio::test]
async fn the_cookie_is_secure_behind_tls() {
    let shared = loaded("test", demo(), kelp::demo::now()).1;
    let cookie = |app: axum::Router, proto: Option<&'static str>| async move {
        let mut req = Request::get(format!("{PAGE}?token=T"));
        if let Some(p) = proto {
            req = req.header("x-forwarded-proto", p);
        }
        let r = send(&app, req.body(Body::empty()).unwrap()).await;
        assert_eq!(r.status, StatusCode::SEE_OTHER);
        r.headers["set-cookie"].to_str().unwrap().to_string()
    };
    let plain = site_with(vec![shared.clone()], Some("T"), Hosts::loopback(), false);
    let c = cookie(plain.clone(), None).await;
    assert!(
        c.contains("HttpOnly") && c.contains("SameSite=Strict"),
        "{c}"
    );
    assert!(
        !c.contains("Secure"),
        "plain HTTP: a Secure cookie would never come back: {c}"
    );
    assert!(cookie(plain.clone(), Some("https"))
        .await
        .contains("Secure"));
    assert!(!cookie(plain, Some("http")).await.contains("Secure"));
    let secure = site_with(vec![shared], Some("T"), Hosts::loopback(), true);
    assert!(cookie(secure, None).await.contains("; Secure"));
}

#[tokio::test]
async fn the_bearer_scheme_is_case_insensitive() {
    let shared = loaded("test", demo(), kelp::demo::now()).1;
    let app = site_with(vec![shared], Some("s3cret"), Hosts::loopback(), false);
    for (v, ok) in [
        ("Bearer s3cret", true),
        ("bearer s3cret", true),
        ("BEARER s3cret", true),
        ("bearer s3cre", false),
        ("Basic s3cret", false),
        ("bearers3cret", false),
    ] {
        let r = send(
            &app,
            Request::get(PAGE)
                .header("authorization", v)
                .body(Body::empty())
                .unwrap(),
        )
        .await;
        let want = if ok {
            StatusCode::OK
        } else {
            StatusCode::UNAUTHORIZED
        };
        assert_eq!(r.status, want, "{v}");
    }
    // Two cookies of that name (another path's left over): the right one counts.
    let r = send(
        &app,
        Request::get(PAGE)
            .header("cookie", "kelp_token=old; other=1; kelp_token=s3cret")
            .body(Body::empty())
            .unwrap(),
    )
    .await;
    assert_eq!(r.status, StatusCode::OK);
}

// ------------------------------------------------------------------ 3. the listener
// The clients are plain blocking sockets on their own threads; the server runs on the
// test's runtime.

const SHORT: Limits = Limits {
    header_read_timeout: Duration::from_secs(1),
    max_connections: 4,
    write_timeout: Duration::from_secs(1),
    drain: Duration::from_secs(1),
};

/// Far beyond the 1 s timeout, for a busy machine.
const BOUND: Duration = Duration::from_secs(15);

struct Server {
    addr: std::net::SocketAddr,
    shared: Arc<Board>,
    stop: tokio::sync::oneshot::Sender<()>,
    task: tokio::task::JoinHandle<std::io::Result<()>>,
}

async fn start(limits: Limits) -> Server {
    start_with(limits, StreamLimits::DASHBOARD).await
}

async fn start_with(limits: Limits, streams: StreamLimits) -> Server {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let shared = loaded("test", demo(), kelp::demo::now()).1;
    let app = web::router(Arc::new(Site {
        clusters: vec![shared.clone()],
        auth_token: None,
        hosts: Hosts::new(addr, &[], false),
        secure_cookie: false,
        streams: kelp::web::Streams::new(streams),
    }));
    serve_app(listener, app, limits, shared).await
}

async fn serve_app(
    listener: tokio::net::TcpListener,
    app: axum::Router,
    limits: Limits,
    shared: Arc<Board>,
) -> Server {
    let addr = listener.local_addr().unwrap();
    let (stop, rx) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(listener::serve(listener, app, limits, async {
        let _ = rx.await;
    }));
    Server {
        addr,
        shared,
        stop,
        task,
    }
}

fn connect(addr: std::net::SocketAddr) -> TcpStream {
    let s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(BOUND)).unwrap();
    s
}

/// Read until the peer closes (or resets) and return what came; None when it is still
/// open after `BOUND`.
fn closed(s: &mut TcpStream) -> Option<String> {
    let mut all = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match s.read(&mut buf) {
            Ok(0) => return Some(String::from_utf8_lossy(&all).into_owned()),
            Ok(n) => all.extend_from_slice(&buf[..n]),
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                return None
            }
            Err(_) => return Some(String::from_utf8_lossy(&all).into_owned()),
        }
    }
}

/// One request on `s`, and its status and body (by Content-Length).
fn request(s: &mut TcpStream, path: &str) -> (u16, String) {
    write!(s, "GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n").unwrap();
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        assert_eq!(s.read(&mut byte).unwrap(), 1, "closed mid-head");
        head.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&head).into_owned();
    let status: u16 = head[9..12].parse().unwrap();
    let len: usize = head
        .lines()
        .find_map(|l| {
            l.to_ascii_lowercase()
                .strip_prefix("content-length:")
                .map(|v| v.trim().parse().unwrap())
        })
        .unwrap_or(0);
    let mut body = vec![0u8; len];
    s.read_exact(&mut body).unwrap();
    (status, String::from_utf8_lossy(&body).into_owned())
}

async fn blocking<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    tokio::task::spawn_blocking(f).await.unwrap()
}

#[tokio::test]
async fn idle_and_slow_connections_are_closed_while_others_are_served() {
    let srv = start(SHORT).await;
    let addr = srv.addr;
    blocking(move || {
        let mut idle = connect(addr);
        let mut slow = connect(addr);
        slow.write_all(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
            .unwrap();
        // A normal request is answered while they hold their connections.
        let mut ok = connect(addr);
        let (status, body) = request(&mut ok, "/api/v1/clusters");
        assert_eq!(status, 200, "{body}");
        assert!(body.contains("\"test\""), "{body}");
        // Each is closed by the server: nothing sent, a head never finished, and a
        // keep-alive connection left idle after its response.
        assert!(
            closed(&mut idle).is_some(),
            "an idle connection stayed open"
        );
        let got = closed(&mut slow).expect("a slow head stayed open");
        assert!(got.is_empty() || got.starts_with("HTTP/1.1 408"), "{got}");
        assert!(
            closed(&mut ok).is_some(),
            "an idle keep-alive connection stayed open"
        );
    })
    .await;
}

#[tokio::test]
async fn connections_past_the_cap_wait_for_a_slot() {
    let srv = start(Limits {
        max_connections: 2,
        ..SHORT
    })
    .await;
    let addr = srv.addr;
    blocking(move || {
        let _a = connect(addr);
        let _b = connect(addr);
        std::thread::sleep(Duration::from_millis(100));
        // The third waits in the accept queue: no answer while both slots are held...
        let mut c = connect(addr);
        c.write_all(b"GET /api/v1/clusters HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            .unwrap();
        c.set_read_timeout(Some(Duration::from_millis(400)))
            .unwrap();
        let mut buf = [0u8; 12];
        let early = c.peek(&mut buf);
        assert!(
            early.is_err(),
            "answered past the cap: {:?}",
            String::from_utf8_lossy(&buf)
        );
        // ...and is served once the idle ones time out.
        c.set_read_timeout(Some(BOUND)).unwrap();
        c.read_exact(&mut buf).expect("served once a slot freed");
        assert_eq!(&buf, b"HTTP/1.1 200");
    })
    .await;
}

#[tokio::test]
async fn live_updates_outlast_the_timeout_and_shutdown_does_not_wait_for_them() {
    let srv = start(SHORT).await;
    let (addr, shared) = (srv.addr, srv.shared.clone());
    let mut s = blocking(move || {
        let mut s = connect(addr);
        write!(s, "GET {PAGE}/events HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n").unwrap();
        let mut got = String::new();
        let mut buf = [0u8; 4096];
        while !got.contains("event: update") {
            let n = s.read(&mut buf).expect("the first event");
            assert!(n > 0, "closed: {got}");
            got.push_str(&String::from_utf8_lossy(&buf[..n]));
        }
        assert!(got.starts_with("HTTP/1.1 200"), "{got}");
        // Well past the header timeout, the stream still carries the next pass.
        std::thread::sleep(Duration::from_millis(2500));
        shared.touch();
        let n = s.read(&mut buf).expect("the next event");
        let next = String::from_utf8_lossy(&buf[..n]);
        assert!(next.contains("event: update"), "{next}");
        s
    })
    .await;
    // Shutdown closes it after the drain time instead of waiting for the page to close.
    srv.stop.send(()).unwrap();
    tokio::time::timeout(BOUND, srv.task)
        .await
        .expect("still serving a stream after shutdown")
        .unwrap()
        .unwrap();
    assert!(
        blocking(move || closed(&mut s)).await.is_some(),
        "the stream stayed open"
    );
}

/// Open the live-update stream on a new connection and read its answer's head and first
/// bytes: the status, and what came.
fn open_stream(addr: std::net::SocketAddr) -> (TcpStream, u16, String) {
    let mut s = connect(addr);
    write!(s, "GET {PAGE}/events HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n").unwrap();
    let mut got = String::new();
    let mut buf = [0u8; 4096];
    while !(got.contains("event: update") || got.contains("\r\n\r\nkelp:")) {
        let n = s.read(&mut buf).expect("an answer");
        assert!(n > 0, "closed: {got}");
        got.push_str(&String::from_utf8_lossy(&buf[..n]));
    }
    let status = got[9..12].parse().unwrap();
    (s, status, got)
}

#[tokio::test]
async fn streams_past_their_cap_are_refused_at_once_and_requests_still_get_slots() {
    // Six connections in all; streams may take three, two of them from one client.
    let srv = start_with(
        Limits {
            max_connections: 6,
            ..SHORT
        },
        StreamLimits {
            total: 3,
            per_client: 2,
            ..StreamLimits::DASHBOARD
        },
    )
    .await;
    let addr = srv.addr;
    blocking(move || {
        let (_a, status, first) = open_stream(addr);
        assert_eq!(status, 200, "{first}");
        assert!(
            first.contains("retry: 15000"),
            "the browser is told when to come back: {first}"
        );
        let (_b, status, _) = open_stream(addr);
        assert_eq!(status, 200);
        // Every further stream from this client is refused with 503 at once, told when to
        // try again, and its connection closed: it holds no slot.
        for _ in 0..20 {
            let (mut s, status, got) = open_stream(addr);
            assert_eq!(status, 503, "{got}");
            let head = got.to_ascii_lowercase();
            assert!(head.contains("retry-after: 15"), "{got}");
            assert!(head.contains("connection: close"), "{got}");
            assert!(got.contains("from your address"), "{got}");
            assert!(
                closed(&mut s).is_some(),
                "a refused stream kept its connection"
            );
        }
        // Ordinary requests are answered throughout, on fresh connections.
        for _ in 0..5 {
            let mut ok = connect(addr);
            let (status, body) = request(&mut ok, "/api/v1/clusters");
            assert_eq!(status, 200, "{body}");
        }
    })
    .await;
}

#[tokio::test]
async fn a_stream_slot_comes_back_when_its_client_goes() {
    let srv = start_with(
        SHORT,
        StreamLimits {
            total: 1,
            per_client: 1,
            ..StreamLimits::DASHBOARD
        },
    )
    .await;
    let (addr, shared) = (srv.addr, srv.shared.clone());
    blocking(move || {
        let (a, status, _) = open_stream(addr);
        assert_eq!(status, 200);
        let (_, status, got) = open_stream(addr);
        assert_eq!(status, 503, "{got}");
        assert!(got.contains("live-update streams are open"), "{got}");
        drop(a);
        // The server sees the close when it next writes (a pass, here, or a keep-alive);
        // until then the slot is still held, so ask again for a while.
        let deadline = std::time::Instant::now() + BOUND;
        loop {
            shared.touch();
            let (_s, status, _) = open_stream(addr);
            if status == 200 {
                break;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "the slot never came back"
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    })
    .await;
}

#[tokio::test]
async fn a_stream_ends_at_its_lifetime_for_the_browser_to_open_another() {
    let srv = start_with(
        SHORT,
        StreamLimits {
            lifetime: Duration::from_secs(2),
            ..StreamLimits::DASHBOARD
        },
    )
    .await;
    let addr = srv.addr;
    blocking(move || {
        let (mut s, status, _) = open_stream(addr);
        assert_eq!(status, 200);
        // The chunked body ends (its last chunk), and the idle connection is then closed.
        let rest = closed(&mut s).expect("the stream outlived its lifetime");
        assert!(rest.ends_with("0\r\n\r\n"), "{rest:?}");
        let (_s, status, _) = open_stream(addr);
        assert_eq!(status, 200, "a new stream after the old one ended");
    })
    .await;
}

#[tokio::test]
async fn a_client_that_stops_reading_is_dropped_after_the_write_timeout() {
    // An answer without end, to a client that never reads: once the socket buffers are
    // full no byte moves, and the connection must go (hyper has no write timeout).
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let app = axum::Router::new().route(
        "/forever",
        axum::routing::get(|| async {
            let chunk = Bytes::from(vec![b'x'; 64 * 1024]);
            Body::from_stream(futures::stream::repeat_with(move || {
                Ok::<_, std::convert::Infallible>(chunk.clone())
            }))
        }),
    );
    let shared = loaded("test", demo(), kelp::demo::now()).1;
    let srv = serve_app(
        listener,
        app,
        Limits {
            max_connections: 1,
            ..SHORT
        },
        shared,
    )
    .await;
    let addr = srv.addr;
    blocking(move || {
        let mut stuck = connect(addr);
        write!(stuck, "GET /forever HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n").unwrap();
        // Its one slot is free again once the stuck client is dropped: a second client's
        // request is answered (the route is unknown here: 404).
        let mut next = connect(addr);
        write!(next, "GET /x HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n").unwrap();
        let mut buf = [0u8; 12];
        next.read_exact(&mut buf)
            .expect("the stuck client still holds the only slot");
        assert_eq!(&buf, b"HTTP/1.1 404");
        // And the stuck one finds its connection gone once it reads what was buffered.
        let mut sink = vec![0u8; 1 << 20];
        let mut total = 0usize;
        loop {
            match stuck.read(&mut sink) {
                Ok(0) | Err(_) => break,
                Ok(n) => total += n,
            }
            assert!(total < 1 << 30, "the answer never stopped");
        }
    })
    .await;
}
