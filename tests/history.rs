//! `kelp serve --state-dir` keeps a history that `kelp history` reads, and it survives what
//! a process meets: `kill -9` while it writes (every row readable before the kill is there
//! after, and the store opens cleanly), a second serve on the same directory (refused,
//! naming the first), and a file that is not kelp's (moved aside, kept).

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

const CAPTURE: &str = "tests/fixtures/real/karpenter-v1.15.0/cluster.json";

/// `kelp serve` of the capture, keeping its history in `state`.
fn serve_cmd(state: &Path) -> Command {
    serve_on(state, "127.0.0.1:0")
}

/// As [`serve_cmd`], with `/metrics` on `addr`.
fn serve_on(state: &Path, addr: &str) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_kelp"));
    c.env_remove("KUBECONFIG")
        .args([
            "serve",
            "--no-dashboard",
            "--metrics-addr",
            addr,
            "--from",
            CAPTURE,
        ])
        .arg("--state-dir")
        .arg(state);
    c
}

fn serve(state: &Path) -> Child {
    serve_cmd(state)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

fn history(state: &Path, args: &[&str]) -> (String, String, i32) {
    let out = Command::new(env!("CARGO_BIN_EXE_kelp"))
        .env("NO_COLOR", "1")
        .arg("history")
        .args(args)
        .arg("--state-dir")
        .arg(state)
        .output()
        .unwrap();
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        out.status.code().unwrap_or(-1),
    )
}

/// Every row, by key order of the JSON (the capture is years old to `--since`'s default).
fn rows(state: &Path) -> Vec<Value> {
    let (out, _, code) = history(state, &["--cluster", "--since", "36500d", "-o", "json"]);
    if code != 0 {
        return Vec::new();
    }
    serde_json::from_str::<Vec<Value>>(&out).unwrap_or_default()
}

/// Wait until the history holds rows and two reads a little apart agree.
fn settled(state: &Path) -> Vec<Value> {
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut last = Vec::new();
    while Instant::now() < deadline {
        let now = rows(state);
        if !now.is_empty() && now == last {
            return now;
        }
        last = now;
        std::thread::sleep(Duration::from_millis(700));
    }
    panic!("the history never settled: {} rows", last.len());
}

/// What a serve of the capture keeps in `state`, once it has settled (serve stopped).
fn kept(state: &Path) -> Vec<Value> {
    let mut child = serve(state);
    let all = settled(state);
    child.kill().unwrap();
    child.wait().unwrap();
    all
}

/// A node Karpenter wrote `Unconsolidatable` about, from the rows.
fn left_by_karpenter(all: &[Value]) -> String {
    all.iter()
        .find(|r| r["what"] == "Unconsolidatable" && r["object"]["kind"] == "Node")
        .and_then(|r| r["object"]["name"].as_str())
        .expect("a node Karpenter left")
        .to_string()
}

#[test]
fn the_history_survives_kill_9_and_a_restart_carries_on_without_duplicates() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let mut kept = Vec::new();
    for round in 0..3 {
        let mut child = serve(&state);
        let now = settled(&state);
        assert!(now.len() >= kept.len(), "round {round}: rows went missing");
        for r in &kept {
            assert!(
                now.contains(r) || r["until"].is_null(),
                "round {round}: lost {r}"
            );
        }
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
        let after = rows(&state);
        assert_eq!(after, now, "round {round}: the kill lost or changed rows");
        kept = after;
    }
    // One creation per NodeClaim, however many restarts.
    let created: Vec<&Value> = kept
        .iter()
        .filter(|r| r["kind"] == "nodeclaim" && r["what"] == "created")
        .collect();
    let mut names: Vec<&str> = created
        .iter()
        .filter_map(|r| r["object"]["name"].as_str())
        .collect();
    let total = names.len();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), total, "a claim created twice");
    assert!(total > 0);
    // Each finding is one open row, not one per restart.
    let findings = kept.iter().filter(|r| r["kind"] == "finding").count();
    let open = kept
        .iter()
        .filter(|r| r["kind"] == "finding" && r["until"].is_null())
        .count();
    assert_eq!(findings, open, "a restart closed and reopened findings");
}

#[test]
fn a_second_serve_on_one_state_dir_is_refused_naming_the_first() {
    let dir = tempfile::tempdir().unwrap();
    let mut first = serve(dir.path());
    settled(dir.path());
    let out = serve_cmd(dir.path()).output().unwrap();
    first.kill().unwrap();
    first.wait().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains("in use by another kelp serve")
            && err.contains(&format!("pid {}", first.id())),
        "{err}"
    );
}

#[test]
fn history_answers_per_object_in_every_format_and_says_what_is_missing() {
    let dir = tempfile::tempdir().unwrap();
    let all = kept(dir.path());
    let launched = all
        .iter()
        .find(|r| r["what"] == "launched" && r["node"].is_string())
        .expect("a launched claim with its node");
    let node = launched["node"].as_str().unwrap();
    let (text, _, code) = history(dir.path(), &["node", node, "--since", "36500d"]);
    assert_eq!(code, 0);
    assert!(
        text.lines()
            .any(|l| l.contains("launched") && l.contains("instanceType=")),
        "{text}"
    );
    assert!(
        text.lines()
            .all(|l| l.contains(node) || l.contains("NodeClaim/")),
        "{text}"
    );
    let (yaml, _, _) = history(
        dir.path(),
        &["node", node, "--since", "36500d", "-o", "yaml"],
    );
    assert!(yaml.contains("what: launched"), "{yaml}");
    // A window that holds none of it: said, not an error.
    let (text, _, code) = history(dir.path(), &["node", node, "--since", "1s"]);
    assert_eq!(code, 0);
    assert!(text.starts_with("No history for node"), "{text}");
    // No store: one line, and a failure.
    let (_, err, code) = history(&dir.path().join("nowhere"), &["--cluster"]);
    assert_ne!(code, 0);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("no history in"), "{err}");
}

#[test]
fn why_adds_what_happened_before_and_import_rebuilds_it_from_karpenters_log() {
    let dir = tempfile::tempdir().unwrap();
    let all = kept(dir.path());
    let node = left_by_karpenter(&all);
    let why = |extra: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_kelp"))
            .env("NO_COLOR", "1")
            .args(["why", "node", &node, "--from", CAPTURE])
            .args(extra)
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let state = dir.path().to_str().unwrap();
    let text = why(&["--state-dir", state]);
    let (_, tail) = text
        .split_once("What happened before (kelp history, newest last):")
        .unwrap_or_else(|| panic!("{text}"));
    assert!(
        tail.contains("launched") && tail.contains("Unconsolidatable"),
        "{tail}"
    );
    let json: Value = serde_json::from_str(&why(&["--state-dir", state, "-o", "json"])).unwrap();
    assert!(json["history"]
        .as_array()
        .is_some_and(|h| !h.is_empty() && h.len() <= 20));
    // Without a state dir: the answer as before, no history.
    let plain: Value = serde_json::from_str(&why(&["-o", "json"])).unwrap();
    assert!(plain.get("history").is_none());

    // Karpenter's own log of a consolidation: the deleted claim's whole life, and why.
    let imported = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_kelp"))
        .args([
            "history",
            "import",
            "tests/fixtures/logs/karpenter-v1.15.0-consolidation.log",
        ])
        .arg("--state-dir")
        .arg(imported.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rows = rows(imported.path());
    let decided = rows
        .iter()
        .find(|r| r["what"] == "disruption decided")
        .expect("a disruption");
    assert_eq!(decided["details"]["reason"], "Underutilized");
    let node = decided["node"].as_str().unwrap();
    let (text, _, _) = history(imported.path(), &["node", node, "--since", "36500d"]);
    let whats: Vec<&str> = text
        .lines()
        .filter_map(|l| l.split("  ").nth(2))
        .map(|w| w.split("  [").next().unwrap_or(w))
        .collect();
    assert_eq!(
        whats,
        [
            "created",
            "launched",
            "registered",
            "initialized",
            "disruption decided",
            "deleted"
        ],
        "{text}"
    );
}

/// A dump that carries the history (`kelp snapshot --history` writes it as the List's
/// `kelp.dev/history` annotation): `kelp why --from` shows what happened before from it.
#[test]
fn a_dump_carries_its_history_to_why() {
    let dir = tempfile::tempdir().unwrap();
    let all = kept(dir.path());
    let node = left_by_karpenter(&all);
    let mut dump: Value = serde_json::from_str(&std::fs::read_to_string(CAPTURE).unwrap()).unwrap();
    dump["metadata"]["annotations"]["kelp.dev/history"] =
        Value::String(serde_json::to_string(&all).unwrap());
    let file = dir.path().join("with-history.json");
    std::fs::write(&file, serde_json::to_string(&dump).unwrap()).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_kelp"))
        .env("NO_COLOR", "1")
        .args(["why", "node", &node, "--from"])
        .arg(&file)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let (_, tail) = text
        .split_once("What happened before (kelp history, newest last):")
        .unwrap_or_else(|| panic!("{text}"));
    assert!(
        tail.contains("launched") && tail.contains("Unconsolidatable"),
        "{tail}"
    );
    // The dump without it: no such part.
    let out = Command::new(env!("CARGO_BIN_EXE_kelp"))
        .env("NO_COLOR", "1")
        .args(["why", "node", &node, "--from", CAPTURE])
        .output()
        .unwrap();
    assert!(!String::from_utf8_lossy(&out.stdout).contains("What happened before"));
}

/// `kelp history --server URL` asks a running serve's API and answers as the state
/// directory does; a dashboard behind a token needs it.
#[test]
fn history_reads_a_running_serves_api_as_its_state_dir() {
    use std::io::{BufRead, BufReader};
    let dir = tempfile::tempdir().unwrap();
    let all = kept(dir.path());
    let node = left_by_karpenter(&all);
    let mut child = Command::new(env!("CARGO_BIN_EXE_kelp"))
        .env_remove("KUBECONFIG")
        .args([
            "serve",
            "--metrics-addr",
            "127.0.0.1:0",
            "--dashboard-addr",
            "127.0.0.1:0",
        ])
        .args(["--auth-token", "s3cret", "--from", CAPTURE, "--state-dir"])
        .arg(dir.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let url = line
        .trim()
        .strip_prefix("kelp: dashboard at ")
        .unwrap_or_else(|| panic!("{line}"));
    let server = url.split("/clusters/").next().unwrap().to_string();
    let ask = |extra: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_kelp"))
            .env("NO_COLOR", "1")
            .args(["history", "node", &node, "--since", "36500d"])
            .args(extra)
            .output()
            .unwrap();
        (
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
            out.status.success(),
        )
    };
    let (local, _, ok) = ask(&["--state-dir", dir.path().to_str().unwrap()]);
    assert!(ok && local.contains("Unconsolidatable"), "{local}");
    let (remote, err, ok) = ask(&["--server", &server, "--token", "s3cret"]);
    let (denied, why, refused) = ask(&["--server", &server]);
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(ok, "{err}");
    assert_eq!(remote, local);
    assert!(!refused && denied.is_empty(), "{denied}");
    assert!(why.contains("401"), "{why}");
}

/// GET `path` on a loopback port: the whole response, or empty while nothing answers.
fn get(port: u16, path: &str) -> String {
    use std::io::{Read, Write};
    let Ok(mut s) = std::net::TcpStream::connect(("127.0.0.1", port)) else {
        return String::new();
    };
    let _ = s.set_read_timeout(Some(Duration::from_secs(10)));
    let _ = write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n"
    );
    let mut out = String::new();
    let _ = s.read_to_string(&mut out);
    out
}

/// A state directory that cannot be opened (here a file, which even root cannot write
/// into) leaves serve serving: `/readyz` stays 200 and says history is not being kept,
/// and the `history-not-kept` finding is on `/metrics`. `--history-strict` refuses instead.
#[test]
fn a_state_dir_that_cannot_be_written_is_said_and_serve_keeps_serving() {
    let tmp = tempfile::tempdir().unwrap();
    let state = tmp.path().join("not-a-dir");
    std::fs::write(&state, "a file where the state directory should be").unwrap();
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let mut child = serve_on(&state, &format!("127.0.0.1:{port}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    let (mut ready, mut metrics) = (String::new(), String::new());
    while Instant::now() < deadline {
        ready = get(port, "/readyz");
        metrics = get(port, "/metrics");
        if ready.starts_with("HTTP/1.1 200") && metrics.contains("code=\"history-not-kept\"") {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let alive = child.try_wait().unwrap().is_none();
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(alive, "serve exited");
    assert!(
        ready.starts_with("HTTP/1.1 200") && ready.contains("history is not being kept"),
        "{ready}"
    );
    let line = metrics
        .lines()
        .find(|l| l.starts_with("karpenter_helper_findings{") && l.contains("history-not-kept"))
        .unwrap_or_else(|| panic!("no history-not-kept finding on /metrics:\n{metrics}"));
    assert!(line.contains("severity=\"warning\""), "{line}");
    // The file is the user's: left as it was.
    assert_eq!(
        std::fs::read_to_string(&state).unwrap(),
        "a file where the state directory should be"
    );

    let strict = serve_cmd(&state).arg("--history-strict").output().unwrap();
    let err = String::from_utf8_lossy(&strict.stderr);
    assert!(!strict.status.success(), "{err}");
    assert!(err.contains("--state-dir"), "{err}");
}
