//! The dashboard's audit log: one structured line per read (alone in its process, so
//! the log capture sees every callsite).

use std::sync::Arc;

use axum::body::Body;
use axum::http::Request;
use kelp::serve::loaded;

mod common;
use common::web::*;

const PAGE: &str = "/clusters/test/karpenter";

#[tokio::test]
async fn every_read_is_audited() {
    use std::io::Write;
    #[derive(Clone, Default)]
    struct Buf(Arc<std::sync::Mutex<Vec<u8>>>);
    impl Write for Buf {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let buf = Buf::default();
    let b2 = buf.clone();
    let subscriber = tracing_subscriber::fmt()
        .json()
        .with_writer(move || b2.clone())
        .finish();
    let _guard = tracing::subscriber::set_default(subscriber);
    let app = site_of(vec![loaded("test", demo(), now()).1], Some("t"));
    let ok = Request::get(PAGE)
        .header("authorization", "Bearer t")
        .body(Body::empty())
        .unwrap();
    send(&app, ok).await;
    get(&app, PAGE).await;
    let logs = String::from_utf8(buf.0.lock().unwrap().clone()).unwrap();
    let lines: Vec<serde_json::Value> = logs
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .filter(|v: &serde_json::Value| v["target"] == "audit")
        .collect();
    assert_eq!(lines.len(), 2, "{logs}");
    assert_eq!(lines[0]["fields"]["event"], "karpenter_read");
    assert_eq!(lines[0]["fields"]["op"], "ok");
    assert_eq!(lines[1]["fields"]["op"], "unauthorized");
}

/// `kelp` with `args`, its stdout and stderr piped, and the dashboard's `host:port` from the
/// line it prints first.
fn spawn_dashboard(args: &[&str]) -> (std::process::Child, String) {
    use std::io::BufRead;
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_kelp"))
        .args(args)
        .env_remove("KELP_LOG")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let hostport = line
        .trim()
        .trim_start_matches("kelp: dashboard at ")
        .trim_start_matches("http://")
        .split('/')
        .next()
        .unwrap()
        .to_string();
    (child, hostport)
}

/// One GET over its own connection; asserts a 200.
fn get_ok(hostport: &str, path: &str) {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(hostport).unwrap();
    s.set_read_timeout(Some(std::time::Duration::from_secs(10)))
        .unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {hostport}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut answer = String::new();
    let _ = s.read_to_string(&mut answer);
    assert!(answer.starts_with("HTTP/1.1 200"), "{path}: {answer}");
}

/// All a child wrote to stderr, once it has stopped.
fn stderr_of(child: &mut std::process::Child) -> String {
    use std::io::Read;
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    err
}

/// `kelp demo` serves the same dashboard, and writes the same audit lines as serve.
#[test]
fn the_demo_writes_audit_lines() {
    let (mut child, hostport) = spawn_dashboard(&["demo", "--dashboard-addr", "127.0.0.1:0"]);
    get_ok(&hostport, "/api/v1/clusters/demo/karpenter");
    std::thread::sleep(std::time::Duration::from_millis(300));
    let _ = child.kill();
    let err = stderr_of(&mut child);
    let _ = child.wait();
    assert!(
        err.lines()
            .any(|l| l.contains("karpenter_read") && l.contains("/api/v1/clusters/demo/karpenter")),
        "{err}"
    );
}

/// serve writes its log lines from a thread of its own, so a read never waits on stderr;
/// none is dropped: every read's line is written by the time serve has stopped on SIGTERM,
/// however quickly the stop follows the reads.
#[test]
fn serve_writes_every_audit_line_before_it_stops() {
    let dump = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/real/karpenter-v1.14.1/cluster.json"
    );
    let (mut child, hostport) = spawn_dashboard(&[
        "serve",
        "--from",
        dump,
        "--no-cost-scrape",
        "--dashboard-addr",
        "127.0.0.1:0",
        "--metrics-addr",
        "127.0.0.1:0",
    ]);
    const READS: usize = 200;
    for _ in 0..READS {
        get_ok(&hostport, "/api/v1/clusters");
    }
    let term = std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(term.success());
    let err = stderr_of(&mut child);
    let status = child.wait().unwrap();
    assert!(status.success(), "{status}: {err}");
    let audited = err
        .lines()
        .filter(|l| l.contains("karpenter_read") && l.contains("/api/v1/clusters\""))
        .count();
    assert_eq!(audited, READS, "{err}");
}
