//! The kelp binary as a user meets it: exit codes, bad input, `-o json` against the
//! contract's schema, and the snapshot format round trip.

use assert_cmd::Command;
use predicates::prelude::*;
use serde_json::Value;

mod common;

const SMALL: &str = "tests/data/small.yaml";
const NOW: &str = "2026-11-21T10:00:00Z";

fn kelp() -> Command {
    let mut c = Command::cargo_bin("kelp").unwrap();
    c.env_remove("KUBECONFIG").env("NO_COLOR", "1");
    c
}

fn doctor_json(args: &[&str]) -> (Value, i32) {
    let out = kelp()
        .arg("doctor")
        .args(args)
        .args(["-o", "json"])
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&out.stdout)));
    (v, out.status.code().unwrap())
}

fn schema() -> jsonschema::Validator {
    let s: Value =
        serde_json::from_str(&std::fs::read_to_string("docs/report.schema.json").unwrap()).unwrap();
    jsonschema::validator_for(&s).unwrap()
}

fn codes(report: &Value) -> Vec<String> {
    report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["code"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn doctor_json_follows_the_contract_and_exits_1_on_critical() {
    let (report, code) = doctor_json(&["--from", SMALL, "--now", NOW]);
    let errors: Vec<String> = schema()
        .iter_errors(&report)
        .map(|e| format!("{e} at {}", e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "{errors:#?}");
    assert_eq!(code, 1);
    assert_eq!(report["generatedAt"], NOW);
    assert_eq!(report["karpenter"]["installed"], true);
    let c = codes(&report);
    for want in [
        "pod-unschedulable",
        "nodepool-limits-exhausted",
        "nodeclaim-drifted",
        "disruption-blocked",
    ] {
        assert!(c.contains(&want.to_string()), "{want} missing from {c:?}");
    }
    let pod = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["code"] == "pod-unschedulable")
        .unwrap();
    assert_eq!(pod["severity"], "critical");
    assert_eq!(pod["since"], "2026-11-21T09:46:00Z");
    assert_eq!(pod["details"]["pendingFor"], "14m");
    // Karpenter's order: weight 10 (gpu) before weight 0 (default).
    assert_eq!(pod["details"]["nodepools"][0]["name"], "gpu");
    assert_eq!(
        pod["details"]["nodepools"][0]["reasons"][0]["category"],
        "taints"
    );
    assert_eq!(
        pod["details"]["nodepools"][1]["reasons"][0]["category"],
        "limits"
    );
    let blocked = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["code"] == "disruption-blocked")
        .unwrap();
    assert_eq!(
        blocked["details"]["blockers"][0]["kind"],
        "do-not-disrupt-node"
    );
}

#[test]
fn a_kubeconfig_in_the_environment_does_not_clash_with_from() {
    kelp()
        .env("KUBECONFIG", "/nonexistent/a:/nonexistent/b")
        .args([
            "doctor",
            "--from",
            SMALL,
            "--now",
            NOW,
            "--fail-on",
            "never",
        ])
        .assert()
        .code(0);
}

#[test]
fn fail_on_sets_the_threshold() {
    kelp()
        .args([
            "doctor",
            "--from",
            SMALL,
            "--now",
            NOW,
            "--fail-on",
            "never",
        ])
        .assert()
        .code(0);
    kelp()
        .args(["doctor", "--from", SMALL, "--now", NOW, "--fail-on", "info"])
        .assert()
        .code(1);
    // Pending only 3 minutes: warning, not critical.
    kelp()
        .args(["doctor", "--from", SMALL, "--now", "2026-11-21T09:49:00Z"])
        .assert()
        .code(1);
}

#[test]
fn yaml_output_is_the_same_report() {
    let json = kelp()
        .args(["doctor", "--from", SMALL, "--now", NOW, "-o", "json"])
        .output()
        .unwrap();
    let yaml = kelp()
        .args(["doctor", "--from", SMALL, "--now", NOW, "-o", "yaml"])
        .output()
        .unwrap();
    let a: Value = serde_json::from_slice(&json.stdout).unwrap();
    let b: Value = serde_norway::from_slice(&yaml.stdout).unwrap();
    assert_eq!(a, b);
}

#[test]
fn the_table_groups_by_severity_without_colour_when_piped() {
    kelp()
        .args(["doctor", "--from", SMALL, "--now", NOW])
        .assert()
        .code(1)
        .stdout(predicate::str::starts_with("CRITICAL ("))
        .stdout(predicate::str::contains("\x1b[").not())
        .stderr(predicate::str::contains("note:").not());
}

fn one_line_error(args: &[&str], needle: &str) {
    let out = kelp().args(args).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{args:?}");
    let all = String::from_utf8_lossy(&out.stderr);
    let err: String = all
        .lines()
        .filter(|l| !l.starts_with("note: "))
        .collect::<Vec<_>>()
        .join("\n");
    assert_eq!(err.lines().count(), 1, "one line expected: {all}");
    assert!(err.starts_with("error: ") && err.contains(needle), "{err}");
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn bad_input_is_one_clear_line_and_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let bad_yaml = dir.path().join("bad.yaml");
    std::fs::write(
        &bad_yaml,
        "apiVersion: v1\nkind: Pod\nmetadata: [unclosed\n",
    )
    .unwrap();
    let bad_json = dir.path().join("bad.json");
    std::fs::write(&bad_json, "{\"apiVersion\": \"v1\", \"kind\": \"List\", \"items\": [\n{\"kind\": \"Pod\", \"apiVersion\": \"v1\", \"spec\": 7}]}").unwrap();
    let empty = dir.path().join("empty.yaml");
    std::fs::write(&empty, "# nothing here\n").unwrap();
    one_line_error(
        &["doctor", "--from", "does/not/exist.yaml"],
        "cannot read does/not/exist.yaml",
    );
    one_line_error(
        &["doctor", "--from", bad_yaml.to_str().unwrap()],
        "bad.yaml: line",
    );
    one_line_error(
        &["doctor", "--from", bad_json.to_str().unwrap()],
        "bad.json: line 2",
    );
    one_line_error(
        &["doctor", "--from", empty.to_str().unwrap()],
        "no Kubernetes objects",
    );
    one_line_error(
        &["doctor", "--from", SMALL, "--now", "yesterday"],
        "not an RFC 3339 time",
    );
    one_line_error(
        &[
            "doctor",
            "--from",
            SMALL,
            "--metrics-file",
            bad_yaml.to_str().unwrap(),
        ],
        "--metrics-file",
    );
    one_line_error(
        &["why", "pod", "ml/nope", "--from", SMALL],
        "pod ml/nope not found",
    );
    one_line_error(
        &["why", "node", "nope", "--from", SMALL],
        "node nope not found",
    );
}

#[test]
fn unknown_kinds_are_a_note_not_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("cm.yaml");
    std::fs::write(&f, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n---\napiVersion: v1\nkind: Secret\nmetadata: {name: s}\n").unwrap();
    let out = kelp()
        .args(["doctor", "-v", "--from", f.to_str().unwrap(), "-o", "json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("note: skipped 1 ConfigMap, 1 Secret objects (kinds kelp does not read; kelp never reads Secrets)"),
        "{err}"
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(codes(&v), ["karpenter-not-installed"]);
}

#[test]
fn an_unreachable_cluster_is_one_line_and_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let kc = dir.path().join("kubeconfig");
    std::fs::write(
        &kc,
        "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {server: 'https://127.0.0.1:9'}\ncontexts:\n- name: ctx\n  context: {cluster: c, user: u}\ncurrent-context: ctx\nusers:\n- name: u\n  user: {token: t}\n",
    )
    .unwrap();
    one_line_error(
        &["doctor", "--kubeconfig", kc.to_str().unwrap()],
        "cannot reach the cluster at https://127.0.0.1:9",
    );
    one_line_error(
        &[
            "doctor",
            "--kubeconfig",
            dir.path().join("missing").to_str().unwrap(),
        ],
        "cannot load the kubeconfig",
    );
    one_line_error(
        &[
            "doctor",
            "--kubeconfig",
            kc.to_str().unwrap(),
            "--context",
            "nope",
        ],
        "no context \"nope\" in the kubeconfig; its contexts: ctx",
    );
}

#[test]
fn a_snapshot_list_reads_back_to_the_same_findings_at_its_capture_time() {
    let text = std::fs::read_to_string(SMALL).unwrap();
    let items: Vec<Value> = serde_norway::Deserializer::from_str(&text)
        .map(|d| serde::Deserialize::deserialize(d).unwrap())
        .collect();
    let at = chrono::DateTime::parse_from_rfc3339(NOW)
        .unwrap()
        .with_timezone(&chrono::Utc);
    let list = kelp::source::dump::snapshot_list(items, at);
    let dir = tempfile::tempdir().unwrap();
    let snap = dir.path().join("snap.json");
    std::fs::write(&snap, serde_json::to_string(&list).unwrap()).unwrap();
    let (from_yaml, _) = doctor_json(&["--from", SMALL, "--now", NOW]);
    let (from_snapshot, _) = doctor_json(&["--from", snap.to_str().unwrap()]);
    assert_eq!(from_yaml, from_snapshot);
}

#[test]
fn why_pod_shows_every_pool_in_order_with_evidence_and_advice() {
    kelp()
        .args(["why", "pod", "ml/trainer-0", "--from", SMALL, "--now", NOW])
        .assert()
        .success()
        .stdout(predicate::str::is_match(r"(?s)gpu\s+10\s+rejected\s+taints: did not tolerate taint nvidia.com/gpu=true:NoSchedule.*default\s+0\s+rejected\s+limits").unwrap())
        .stdout(predicate::str::contains("v1.5+ format"))
        .stdout(predicate::str::contains("add a toleration for nvidia.com/gpu=true:NoSchedule"));
    let out = kelp()
        .args([
            "why",
            "pod",
            "trainer-0",
            "-n",
            "ml",
            "--from",
            SMALL,
            "--now",
            NOW,
            "-o",
            "json",
        ])
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["diagnosis"]["nodepools"][1]["eventAgrees"], true);
}

#[test]
fn why_node_lists_blockers_and_how_to_unblock() {
    kelp()
        .args(["why", "node", "ip-10-0-1-1", "--from", SMALL, "--now", NOW])
        .assert()
        .success()
        .stdout(predicate::str::contains("Drifted         yes (AMIDrift)"))
        .stdout(predicate::str::contains("do-not-disrupt-node"))
        .stdout(predicate::str::contains(
            "kubectl annotate node ip-10-0-1-1 karpenter.sh/do-not-disrupt-",
        ));
    // The NodeClaim's name finds its node too.
    kelp()
        .args(["why", "node", "gpu-abcde", "--from", SMALL, "--now", NOW])
        .assert()
        .success()
        .stdout(predicate::str::contains("Node ip-10-0-1-1"));
}

#[test]
fn help_teaches_by_example() {
    kelp()
        .arg("--help")
        .assert()
        .success()
        .stdout(predicate::str::contains("kelp why pod ml/trainer-0"));
    kelp()
        .args(["doctor", "--help"])
        .assert()
        .success()
        .stdout(predicate::str::contains("Exit status: 0"));
}

/// Run `kelp` with these args until its stderr has a line containing `needle` (or 30 s).
fn stderr_until(args: &[&str], needle: &str) -> String {
    use std::io::{BufRead, BufReader};
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_kelp"))
        .args(args)
        .env_remove("KELP_AUTH_TOKEN")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let stderr = child.stderr.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let mut seen = String::new();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while let Ok(line) =
        rx.recv_timeout(deadline.saturating_duration_since(std::time::Instant::now()))
    {
        seen.push_str(&line);
        seen.push('\n');
        if line.contains(needle) {
            break;
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    seen
}

#[test]
fn a_dashboard_beyond_loopback_without_a_token_is_warned_about() {
    let dump = tempfile::NamedTempFile::with_suffix(".yaml").unwrap();
    std::fs::write(dump.path(), kelp::demo::CLUSTER).unwrap();
    let path = dump.path().to_str().unwrap();
    let base = ["serve", "--from", path, "--metrics-addr", "127.0.0.1:0"];
    let open = [&base[..], &["--dashboard-addr", "0.0.0.0:0"]].concat();
    let err = stderr_until(&open, "without --auth-token");
    assert!(
        err.contains("WARN") && err.contains("without --auth-token"),
        "{err}"
    );
    // On loopback, or with a token, no warning.
    let closed = [&base[..], &["--dashboard-addr", "127.0.0.1:0"]].concat();
    let err = stderr_until(&closed, "serving the dashboard");
    assert!(err.contains("serving the dashboard"), "{err}");
    assert!(!err.contains("without --auth-token"), "{err}");
}

/// Start `cmd` (a `kelp serve`) with its log piped, and wait (30 s at most) for the first
/// log line that contains `needle`. The log keeps being read after it: a closed pipe
/// would end serve (quiet on a closed pipe).
fn serve_until(
    cmd: &mut std::process::Command,
    needle: &'static str,
) -> (std::process::Child, String) {
    use std::io::{BufRead, BufReader};
    let mut child = cmd
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = BufReader::new(child.stderr.take().unwrap());
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in stderr.lines().map_while(Result::ok) {
            if line.contains(needle) {
                let _ = tx.send(line);
            }
        }
    });
    let line = rx
        .recv_timeout(std::time::Duration::from_secs(30))
        .unwrap_or_else(|_| panic!("serve never logged {needle:?}"));
    (child, line)
}

/// One `GET path` to `addr` with `headers` (whole lines) added, on a connection of its
/// own: the whole response.
fn http_get(addr: &str, path: &str, headers: &str) -> String {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: localhost\r\n{headers}Connection: close\r\n\r\n"
    )
    .unwrap();
    let mut body = String::new();
    s.read_to_string(&mut body).unwrap();
    body
}

/// `kelp serve`'s log (text and JSON) names hostile objects escaped: no line of it starts
/// with the forged one, and no control character reaches the terminal.
#[test]
fn serve_logs_hostile_names_escaped() {
    use std::io::{BufRead, BufReader};
    let dir = tempfile::tempdir().unwrap();
    let dump = common::hostile_dump(dir.path());
    for format in ["text", "json"] {
        let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_kelp"))
            .args(["serve", "--no-dashboard", "--metrics-addr", "127.0.0.1:0"])
            .args(["--log-format", format, "--from"])
            .arg(&dump)
            .env_remove("KELP_LOG")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let stderr = BufReader::new(child.stderr.take().unwrap());
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut log = String::new();
            for line in stderr.split(b'\n').map_while(Result::ok) {
                log.push_str(&String::from_utf8_lossy(&line));
                log.push('\n');
                if log.contains("nul") && log.contains("FAKE") {
                    let _ = tx.send(log.clone());
                }
            }
        });
        let log = rx
            .recv_timeout(std::time::Duration::from_secs(30))
            .expect("the findings naming both hostile pods were logged");
        let _ = child.kill();
        let _ = child.wait();
        for bad in ['\u{1b}', '\u{7}', '\r', '\u{202e}', '\u{9b}', '\0'] {
            assert!(!log.contains(bad), "{format}: {bad:?} in {log:?}");
        }
        assert!(
            !log.lines().any(|l| l.starts_with("FAKE")),
            "{format}: {log}"
        );
    }
}

/// `--metrics-auth-token`: `/metrics` answers only the bearer of the token; the kubelet's
/// probes need none.
#[test]
fn metrics_behind_a_token_answer_only_its_bearer() {
    let dump = tempfile::NamedTempFile::with_suffix(".yaml").unwrap();
    std::fs::write(dump.path(), kelp::demo::CLUSTER).unwrap();
    let (mut child, line) = serve_until(
        std::process::Command::new(env!("CARGO_BIN_EXE_kelp"))
            .args([
                "serve",
                "--no-dashboard",
                "--metrics-addr",
                "127.0.0.1:0",
                "--from",
            ])
            .arg(dump.path())
            .env("KELP_METRICS_AUTH_TOKEN", "s3cret"),
        "serving /metrics",
    );
    let addr = line
        .split("addr=")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or_else(|| panic!("{line}"))
        .to_string();
    assert!(line.contains("auth=true"), "{line}");
    let get = |path: &str, auth: Option<&str>| {
        let auth = auth
            .map(|a| format!("Authorization: {a}\r\n"))
            .unwrap_or_default();
        http_get(&addr, path, &auth)
    };
    // Ready (its first pass done, no token asked), then the series are there.
    let mut readyz = String::new();
    for _ in 0..100 {
        readyz = get("/readyz", None);
        if readyz.starts_with("HTTP/1.1 200") {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let mut answers = Vec::new();
    for auth in [
        None,
        Some("Bearer wrong"),
        Some("Basic s3cret"),
        Some("bearer s3cret"),
    ] {
        answers.push(get("/metrics", auth));
    }
    let _ = child.kill();
    let _ = child.wait();
    for refused in &answers[..3] {
        assert!(refused.starts_with("HTTP/1.1 401"), "{refused}");
        assert!(
            refused
                .to_ascii_lowercase()
                .contains("www-authenticate: bearer"),
            "{refused}"
        );
        assert!(!refused.contains("karpenter_helper_"), "{refused}");
    }
    assert!(answers[3].starts_with("HTTP/1.1 200"), "{}", answers[3]);
    assert!(answers[3].contains("karpenter_helper_"), "{}", answers[3]);
    assert!(readyz.starts_with("HTTP/1.1 200"), "{readyz}");
}

/// An Event anyone may create, carrying an OSC title change, a screen clear, a bell and
/// a newline that would forge a line: `why pod` prints it escaped, never raw.
#[test]
fn event_text_cannot_drive_the_terminal_or_forge_lines() {
    let small = std::fs::read_to_string(SMALL).unwrap();
    let hostile: String = small
        .lines()
        .map(|l| {
            if l.starts_with("message: 'Failed to schedule pod, did not tolerate taint") {
                let rest = l.trim_start_matches("message: '").trim_end_matches('\'');
                format!("message: \"\\e]0;pwned\\a\\e[2J\\nerror: forged line\\r{rest}\"\n")
            } else {
                format!("{l}\n")
            }
        })
        .collect();
    assert_ne!(hostile, small);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("hostile.yaml");
    std::fs::write(&path, hostile).unwrap();
    for color in [false, true] {
        let mut cmd = kelp();
        if color {
            // Colour forced on the way a terminal would have it; only kelp's own
            // colour codes may pass.
            cmd.env_remove("NO_COLOR");
        }
        let out = cmd
            .args(["why", "pod", "ml/trainer-0", "--now", NOW, "--from"])
            .arg(&path)
            .output()
            .unwrap();
        let text = String::from_utf8(out.stdout).unwrap();
        assert!(!text.contains('\u{7}') && !text.contains('\r'), "{text:?}");
        assert!(
            !text.contains("\u{1b}]") && !text.contains("\u{1b}[2J"),
            "{text:?}"
        );
        assert!(
            text.contains("\\x1b]0;pwned\\x07\\x1b[2J\\nerror: forged line\\rFailed"),
            "{text}"
        );
        assert!(
            !text.lines().any(|l| l.starts_with("error: forged")),
            "{text}"
        );
    }
}

/// `kelp ... | head -1`: a reader that goes away ends kelp quietly (status 0, nothing on
/// stderr), for every command that prints a lot.
#[test]
fn a_closed_stdout_pipe_ends_kelp_quietly() {
    use std::io::Read;
    use std::process::{Command as Std, Stdio};
    let bin = assert_cmd::cargo::cargo_bin("kelp");
    // Each prints more than a pipe holds (64 KiB), so the write after the hang-up fails.
    let dir = tempfile::tempdir().unwrap();
    let dump = dir.path().join("pending.yaml");
    let pods: String = (0..1500)
        .map(|i| {
            format!(
                "---\napiVersion: v1\nkind: Pod\nmetadata: {{name: web-{i}, namespace: shop, uid: p{i}, \
                 creationTimestamp: \"2026-11-21T09:00:00Z\"}}\nspec: {{containers: [{{name: c, \
                 resources: {{requests: {{cpu: \"1\"}}}}}}]}}\nstatus: {{phase: Pending, conditions: \
                 [{{type: PodScheduled, status: \"False\", reason: Unschedulable}}]}}\n"
            )
        })
        .collect();
    std::fs::write(&dump, std::fs::read_to_string(SMALL).unwrap() + &pods).unwrap();
    let dump = dump.to_str().unwrap();
    for args in [
        vec!["demo", "--dump"],
        // The table of a big report is a summary and the worst 50 (small enough to fit
        // the pipe's buffer): exit by the findings, so only the closed pipe is at stake.
        vec!["doctor", "--from", dump, "--now", NOW, "--fail-on", "never"],
        vec!["doctor", "--from", dump, "--now", NOW, "-o", "wide"],
        vec!["doctor", "--from", dump, "--now", NOW, "-o", "yaml"],
        vec!["doctor", "--from", dump, "--now", NOW, "-o", "json"],
        vec![
            "why",
            "pod",
            "shop/web-1",
            "--from",
            dump,
            "--now",
            NOW,
            "-o",
            "json",
        ],
    ] {
        let mut child = Std::new(&bin)
            .args(&args)
            .env("NO_COLOR", "1")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // Read one byte, then hang up, like `head -c1`.
        let mut out = child.stdout.take().unwrap();
        let mut first = [0u8; 1];
        out.read_exact(&mut first).unwrap();
        drop(out);
        let mut err = String::new();
        child
            .stderr
            .take()
            .unwrap()
            .read_to_string(&mut err)
            .unwrap();
        let status = child.wait().unwrap();
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        assert!(
            err.trim().is_empty() || err.starts_with("note:"),
            "{args:?}: {err}"
        );
        assert!(
            matches!(status.code(), Some(0) | Some(141)) || status.code().is_none(),
            "{args:?}: {status:?} {err}"
        );
    }
}

/// `kelp serve --catalog`: the dashboard's answer for a pending pod carries the launch the
/// catalogue predicts (an AWS pool, which has no catalogue of its own here).
#[test]
fn serve_judges_instance_types_from_a_catalogue_file() {
    let dump = tempfile::NamedTempFile::with_suffix(".yaml").unwrap();
    std::fs::write(
        dump.path(),
        std::fs::read_to_string("tests/fixtures/lint/what-if/pools.yaml").unwrap()
            + "---\n"
            + &std::fs::read_to_string("tests/fixtures/lint/what-if/pod.yaml").unwrap(),
    )
    .unwrap();
    let (mut child, line) = serve_until(
        std::process::Command::new(env!("CARGO_BIN_EXE_kelp"))
            .args(["serve", "--from"])
            .arg(dump.path())
            .args(["--catalog", "tests/fixtures/what-if/aws-catalog.yaml"])
            .args([
                "--metrics-addr",
                "127.0.0.1:0",
                "--dashboard-addr",
                "127.0.0.1:0",
            ])
            .env_remove("KELP_AUTH_TOKEN"),
        "serving the dashboard",
    );
    let addr = line
        .split("http://")
        .nth(1)
        .and_then(|rest| rest.split('/').next())
        .map(str::to_string)
        .expect("serve said where the dashboard is");
    let get = |path: &str| http_get(&addr, path, "");
    let clusters = get("/api/v1/clusters");
    let name = clusters
        .split("\"name\":\"")
        .nth(1)
        .and_then(|r| r.split('"').next())
        .unwrap_or_else(|| panic!("{addr}: {clusters:?}"))
        .to_string();
    let mut why = String::new();
    for _ in 0..50 {
        why = get(&format!("/api/v1/clusters/{name}/pods/ml/trainer-0/why"));
        if why.contains("m5.2xlarge") {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let _ = child.kill();
    let _ = child.wait();
    assert!(why.contains("\"instanceType\":\"m5.2xlarge\""), "{why}");
}

/// A dump that carries a catalogue (`kelp snapshot --catalog` writes it into the List's
/// `kelp.dev/instance-type-catalog` annotation) judges instance types as live did.
#[test]
fn a_dump_with_an_embedded_catalogue_judges_instance_types() {
    let mut items: Vec<serde_json::Value> = Vec::new();
    for f in [
        "tests/fixtures/lint/what-if/pools.yaml",
        "tests/fixtures/lint/what-if/pod.yaml",
    ] {
        let text = std::fs::read_to_string(f).unwrap();
        for doc in serde_norway::Deserializer::from_str(&text) {
            let v: serde_json::Value = serde::Deserialize::deserialize(doc).unwrap();
            if v.is_object() {
                items.push(v);
            }
        }
    }
    let catalog = std::fs::read_to_string("tests/fixtures/what-if/aws-catalog.yaml").unwrap();
    let catalog: serde_json::Value = serde_norway::from_str(&catalog).unwrap();
    let list = serde_json::json!({
        "apiVersion": "v1",
        "kind": "List",
        "metadata": {"annotations": {
            "kelp.dev/captured-at": "2026-11-21T10:00:00Z",
            "kelp.dev/instance-type-catalog": catalog.to_string(),
        }},
        "items": items,
    });
    let dump = tempfile::NamedTempFile::with_suffix(".json").unwrap();
    std::fs::write(dump.path(), list.to_string()).unwrap();
    let run = |path: &std::path::Path| {
        let out = kelp()
            .args(["why", "pod", "ml/trainer-0", "-o", "json", "--from"])
            .arg(path)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice::<serde_json::Value>(&out.stdout).unwrap()
    };
    let why = run(dump.path());
    let general = why["diagnosis"]["nodepools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["name"] == "general")
        .unwrap()
        .clone();
    assert_eq!(
        general["launch"]["cheapest"][0]["instanceType"], "m5.2xlarge",
        "{general:#}"
    );
    assert_eq!(general["launch"]["catalog"], "file");
    // Without the annotation, the same dump has no catalogue (AWS pools, no metrics).
    let mut bare = list.clone();
    bare["metadata"]["annotations"]
        .as_object_mut()
        .unwrap()
        .remove("kelp.dev/instance-type-catalog");
    std::fs::write(dump.path(), bare.to_string()).unwrap();
    let why = run(dump.path());
    assert!(why.to_string().contains("\"launch\"") == false, "{why:#}");
}

/// Names (a Pod's, a Node's) carrying a newline, ESC, an OSC title, BEL, CR, a bidi
/// override, a C1 control and NUL, as a dump may hold them: every text view prints them
/// escaped, so no line is forged at column 0 and no control byte reaches the terminal.
/// (NUL cannot be passed in an argument to `why`: it is in another pod's name, which
/// `doctor` lists.)
#[test]
fn hostile_names_render_escaped_in_every_text_view() {
    use common::{HOSTILE_ESCAPED as ESCAPED, HOSTILE_NUL_POD_ESCAPED, HOSTILE_RAW as RAW};
    let dir = tempfile::tempdir().unwrap();
    let path = common::hostile_dump(dir.path());
    let pod_arg = format!("ml/trainer-0{RAW}");
    let node_arg = format!("ip-10-0-1-1{RAW}");
    let runs: Vec<(Vec<&str>, bool)> = vec![
        (vec!["doctor"], true),
        (vec!["doctor", "-o", "wide"], true),
        (vec!["why", "pod", &pod_arg], true),
        (vec!["why", "node", &node_arg], true),
        (vec!["why", "pod", "ml/nope\u{1b}]0;t\u{7}\nFAKE: x"], false),
        (vec!["why", "node", "nope\u{1b}]0;t\u{7}\nFAKE: x"], false),
    ];
    for (args, found) in runs {
        for color in [false, true] {
            let mut cmd = kelp();
            if color {
                cmd.env_remove("NO_COLOR");
            }
            let out = cmd
                .args(&args)
                .args(["--now", NOW, "--from"])
                .arg(&path)
                .output()
                .unwrap();
            let text =
                String::from_utf8(out.stdout).unwrap() + &String::from_utf8(out.stderr).unwrap();
            for bad in ['\u{7}', '\r', '\u{202e}', '\u{9b}', '\0'] {
                assert!(!text.contains(bad), "{args:?}: {bad:?} in {text:?}");
            }
            if args[0] == "doctor" {
                assert!(text.contains(HOSTILE_NUL_POD_ESCAPED), "{args:?}: {text}");
            }
            assert!(!text.contains("\u{1b}]"), "{args:?}: {text:?}");
            assert!(
                !text.lines().any(|l| l.starts_with("FAKE")),
                "{args:?}: a forged line in {text}"
            );
            if found {
                assert!(text.contains(ESCAPED), "{args:?}: {text}");
            } else {
                assert!(
                    text.contains("\\x1b]0;t\\x07\\nFAKE: x not found"),
                    "{args:?}: {text}"
                );
            }
        }
    }
}

/// `why nodepool`: the rollout and the budget calendar, on the real capture.
#[test]
fn why_nodepool_tells_the_rollout_and_the_budgets() {
    let capture = "tests/fixtures/real/karpenter-v1.15.0/cluster.json";
    let out = kelp()
        .args([
            "why",
            "nodepool",
            "cap-drift",
            "--from",
            capture,
            "-o",
            "json",
        ])
        .output()
        .unwrap();
    assert!(out.status.success());
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["nodes"], 6);
    assert_eq!(v["upToDate"], 1);
    assert_eq!(v["drifted"], 5);
    assert_eq!(v["blocked"], 5);
    let reasons: Vec<&str> = v["calendar"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k["reason"].as_str().unwrap())
        .collect();
    assert_eq!(reasons, ["Underutilized", "Empty", "Drifted"]);
    let text = kelp()
        .args(["why", "nodepool", "cap-drift", "--from", capture])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let text = String::from_utf8_lossy(&text);
    assert!(
        text.contains("6 node(s): 1 up to date, 5 drifted"),
        "{text}"
    );
    assert!(text.contains("held by blockers of their own"), "{text}");
    assert!(text.contains("Budgets (UTC, the next 7 days):"), "{text}");
    kelp()
        .args(["why", "nodepool", "nope", "--from", capture])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("NodePool nope not found"));
}
