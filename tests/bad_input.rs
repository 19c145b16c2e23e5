//! Hostile and oversized input, as the binary meets it: nesting deep enough to overflow a
//! stack, YAML whose parsing cost grows with the square of its nesting, strings, objects
//! and files too large to hold. Each is one clear error line naming the file (and the
//! line) and exit status 2 ("could not run"; `kelp lint` reports a file it cannot read as
//! a parse-error result instead, exit 1), never an abort (134), a panic (101) or a hang.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

use assert_cmd::Command;

const DEPTH_ERROR: &str = "nested deeper than 127 levels, the most kelp reads";

fn kelp() -> Command {
    let mut c = Command::cargo_bin("kelp").unwrap();
    c.env_remove("KUBECONFIG")
        .env("NO_COLOR", "1")
        .timeout(Duration::from_secs(60));
    c
}

/// Exit status 2 and exactly one line on stderr, the error, which is returned.
fn one_error(out: &Output) -> String {
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(2), "stderr: {err}");
    assert_eq!(err.lines().count(), 1, "one line: {err}");
    assert!(err.starts_with("error: "), "{err}");
    err.trim_end().to_string()
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

const POOLS: &str = "apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: default}\nspec:\n  template:\n    spec:\n      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}\n      requirements: []\n";
const POD: &str = "apiVersion: v1\nkind: Pod\nmetadata: {name: web, namespace: shop}\nspec:\n  containers: [{name: app, resources: {requests: {cpu: 100m}}}]\n";

#[test]
fn json_nested_20000_deep_is_one_error_not_an_abort() {
    let dir = tempfile::tempdir().unwrap();
    let deep = format!("{}{}", "[".repeat(20_000), "]".repeat(20_000));
    let f = write(dir.path(), "n.json", &deep);
    let out = kelp().args(["doctor", "--from", s(&f)]).output().unwrap();
    let err = one_error(&out);
    assert!(
        err.ends_with(&format!("n.json: line 1: {DEPTH_ERROR}")),
        "{err}"
    );
    // The same from stdin, which is streamed like a file.
    let out = kelp()
        .args(["doctor", "--from", "-"])
        .write_stdin(format!("\n\n{deep}"))
        .output()
        .unwrap();
    assert_eq!(
        one_error(&out),
        format!("error: <stdin>: line 3: {DEPTH_ERROR}")
    );
}

#[test]
fn yaml_nested_20000_deep_is_refused_by_every_reader() {
    let dir = tempfile::tempdir().unwrap();
    let deep = write(dir.path(), "deep.yaml", &("- ".repeat(20_000) + "x\n"));
    let pools = write(dir.path(), "pools.yaml", POOLS);
    let pod = write(dir.path(), "pod.yaml", POD);
    let want = format!("deep.yaml: line 1: {DEPTH_ERROR}");
    for args in [
        vec!["doctor", "--from", s(&deep)],
        vec!["what-if", "--pod", s(&deep), "--nodepools", s(&pools)],
        vec!["what-if", "--pod", s(&pod), "--nodepools", s(&deep)],
    ] {
        let out = kelp().args(&args).output().unwrap();
        let err = one_error(&out);
        assert!(err.ends_with(&want), "{args:?}: {err}");
    }
    // `kelp lint` reports it as the file's parse-error, at its line, and goes on.
    let out = kelp().args(["lint", s(&deep), s(&pools)]).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    let results: Vec<&str> = stdout.lines().filter(|l| l.contains("deep.yaml")).collect();
    assert_eq!(results.len(), 1, "{stdout}");
    assert!(
        results[0].ends_with(&format!(
            "deep.yaml:1: critical parse-error: {DEPTH_ERROR}; kelp checks nothing in this file"
        )),
        "{stdout}"
    );
    assert!(
        stdout.contains("pools.yaml:"),
        "the other file is linted: {stdout}"
    );
}

#[test]
fn indented_yaml_is_refused_at_the_line_it_goes_too_deep() {
    let dir = tempfile::tempdir().unwrap();
    let text: String = (0..180)
        .map(|i| format!("{}k{i}:\n", " ".repeat(i)))
        .collect();
    let f = write(dir.path(), "indented.yaml", &text);
    let out = kelp().args(["doctor", "--from", s(&f)]).output().unwrap();
    assert!(one_error(&out).ends_with(&format!("indented.yaml: line 128: {DEPTH_ERROR}")));
    let out = kelp().args(["lint", s(&f)]).output().unwrap();
    assert!(String::from_utf8_lossy(&out.stdout)
        .starts_with(&format!("{}:128: critical parse-error", s(&f))));
}

#[test]
fn flow_yaml_100000_deep_fails_at_once_not_after_minutes() {
    // serde_norway's scanner costs grow with the square of the flow nesting: this took
    // 4.5 minutes to fail before the depth was checked first.
    let dir = tempfile::tempdir().unwrap();
    let text = format!("a: {}{}\n", "[".repeat(100_000), "]".repeat(100_000));
    let f = write(dir.path(), "flow.yaml", &text);
    let config = write(dir.path(), "kelp.yaml", &format!("rules: {text}"));
    let pools = write(dir.path(), "pools.yaml", POOLS);
    let started = Instant::now();
    let out = kelp().args(["doctor", "--from", s(&f)]).output().unwrap();
    assert!(one_error(&out).ends_with(&format!("flow.yaml: line 1: {DEPTH_ERROR}")));
    let out = kelp()
        .args(["lint", s(&pools), "--config", s(&config)])
        .output()
        .unwrap();
    assert!(one_error(&out).ends_with(&format!("kelp.yaml: line 1: {DEPTH_ERROR}")));
    let out = kelp().args(["lint", s(&f)]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stdout).contains(DEPTH_ERROR));
    // Generous (debug builds on a busy machine), and far below the minutes it took.
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "{:?}",
        started.elapsed()
    );
}

/// A List of one Pod with `annotation` as an annotation's value, on its own line.
fn pod_list(annotation: &str) -> String {
    format!(
        "{{\"apiVersion\": \"v1\", \"kind\": \"List\", \"items\": [\n{{\"apiVersion\": \"v1\", \"kind\": \"Pod\", \"metadata\": {{\"name\": \"p\", \"namespace\": \"d\", \"annotations\": {{\n\"big\": \"{annotation}\"}}}}, \"spec\": {{\"containers\": []}}}}]}}\n"
    )
}

/// `text` gzipped into `dir/name`.
fn write_gzip(dir: &Path, name: &str, text: &str) -> PathBuf {
    use std::io::Write;
    let p = dir.join(name);
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(text.as_bytes()).unwrap();
    std::fs::write(&p, gz.finish().unwrap()).unwrap();
    p
}

/// `kelp doctor` on `text`, streamed three ways (stdin, a gzip file, gzip on stdin) and
/// read from a plain file, which is mapped and parsed in place.
fn doctor_four_ways(text: &str) -> ([Output; 3], Output) {
    let dir = tempfile::tempdir().unwrap();
    let gz = write_gzip(dir.path(), "dump.json.gz", text);
    let plain = write(dir.path(), "dump.json", text);
    let stdin = kelp()
        .args(["doctor", "--from", "-"])
        .write_stdin(text.to_string())
        .output()
        .unwrap();
    let gzip = kelp().args(["doctor", "--from", s(&gz)]).output().unwrap();
    let gzip_stdin = kelp()
        .args(["doctor", "--from", "-"])
        .write_stdin(std::fs::read(&gz).unwrap())
        .output()
        .unwrap();
    let file = kelp()
        .args(["doctor", "--from", s(&plain)])
        .output()
        .unwrap();
    ([stdin, gzip, gzip_stdin], file)
}

/// The run read its input: whatever it found, not exit 2 ("could not run").
fn was_read(out: &Output) {
    assert_ne!(
        out.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Each streamed run failed with exactly `what`, named after where it was read from.
fn refused(streamed: &[Output; 3], what: &str) {
    for (out, name) in streamed.iter().zip(["<stdin>", "dump.json.gz", "<stdin>"]) {
        let e = one_error(out);
        assert!(e.ends_with(&format!("{name}: {what}")), "{e}");
    }
}

#[test]
fn a_streamed_string_over_2_mib_is_refused_and_a_large_secret_sized_one_is_not() {
    let text = pod_list(&"x".repeat(3 << 20));
    let (streamed, file) = doctor_four_ways(&text);
    refused(
        &streamed,
        "line 3: a string longer than 2 MiB, the longest kelp reads",
    );
    // A file is held to its own size: what it holds is read.
    was_read(&file);
    // A Secret's 1 MiB, base64-encoded, is 1.4 MiB: read (and skipped) as before.
    let (streamed, _) = doctor_four_ways(&pod_list(&"x".repeat(1400 << 10)));
    for out in streamed {
        was_read(&out);
    }
}

#[test]
fn a_streamed_object_over_32_mib_is_refused_before_it_is_held() {
    let mib = format!("\"{}\"", "x".repeat(1 << 20));
    let labels: Vec<String> = (0..40).map(|i| format!("\"l{i}\": {mib}")).collect();
    let text = pod_list("a").replace(
        "\"annotations\": {",
        &format!(
            "\"labels\": {{{}}}, \"annotations\": {{",
            labels.join(",\n")
        ),
    );
    let (streamed, file) = doctor_four_ways(&text);
    refused(
        &streamed,
        "line 2: an object larger than 32 MiB, the largest kelp reads",
    );
    was_read(&file);
}

#[test]
fn yaml_over_32_mib_is_refused_with_the_way_out() {
    let dir = tempfile::tempdir().unwrap();
    let line = format!("# {}\n", "x".repeat(1000));
    let text = POOLS.to_string() + &line.repeat(33 * 1024);
    let f = write(dir.path(), "huge.yaml", &text);
    let out = kelp().args(["doctor", "--from", s(&f)]).output().unwrap();
    let err = one_error(&out);
    assert!(
        err.contains("huge.yaml: more than 32 MiB of YAML") && err.contains("as JSON"),
        "{err}"
    );
    let out = kelp().args(["lint", s(&f)]).output().unwrap();
    assert!(one_error(&out).contains("huge.yaml: larger than 32 MiB"));
    let out = kelp()
        .args(["lint", "-"])
        .write_stdin(text.clone())
        .output()
        .unwrap();
    assert!(one_error(&out).contains("-: larger than 32 MiB"));
}

#[test]
fn serve_keeps_running_when_its_dump_is_rewritten_5000_deep() {
    let dir = tempfile::tempdir().unwrap();
    let dump = write(
        dir.path(),
        "f.json",
        &serde_json::to_string(&serde_json::json!({
        "apiVersion": "v1", "kind": "List", "items": [
            {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}}]}))
        .unwrap(),
    );
    let bin = assert_cmd::cargo::cargo_bin("kelp");
    let mut child = std::process::Command::new(bin)
        .args(["serve", "--from", s(&dump), "--metrics-addr", "127.0.0.1:0"])
        .args(["--dashboard-addr", "127.0.0.1:0"])
        .env_remove("KUBECONFIG")
        .env("NO_COLOR", "1")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let wait_for = |needle: &str, seen: &mut String| {
        let deadline = Instant::now() + Duration::from_secs(30);
        while let Ok(line) = rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
            seen.push_str(&line);
            seen.push('\n');
            if line.contains(needle) {
                return true;
            }
        }
        false
    };
    let mut seen = String::new();
    assert!(wait_for("serving the dashboard", &mut seen), "{seen}");
    std::thread::sleep(Duration::from_millis(1200));
    // 10 KB of brackets: enough to overflow the reload's 2 MiB blocking thread before.
    std::fs::write(&dump, format!("{}{}", "[".repeat(5000), "]".repeat(5000))).unwrap();
    let warned = wait_for("cannot be read", &mut seen);
    let alive = child.try_wait().unwrap().is_none();
    let _ = child.kill();
    let _ = child.wait();
    assert!(warned && alive, "alive: {alive}; stderr:\n{seen}");
    assert!(seen.contains(DEPTH_ERROR), "{seen}");
}

/// Starts kelp and writes its peak resident memory (KiB) to a file. A child's `ru_maxrss`
/// starts from its parent's resident memory at the fork (Linux keeps it across `exec`),
/// so kelp is started from this small Python process, not from the large test process.
const MEASURE: &str = "import resource, subprocess, sys\n\
p = subprocess.run(sys.argv[2:])\n\
open(sys.argv[1], 'w').write(str(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss))\n\
sys.exit(p.returncode if p.returncode >= 0 else 128 - p.returncode)\n";

/// Runs kelp to its end (stdin `/dev/zero` or nothing) and returns its output and its peak
/// resident memory in bytes, or `None` for the peak where there is no python3.
fn run_measured(args: &[&str], stdin_zero: bool) -> (Output, Option<u64>) {
    let dir = tempfile::tempdir().unwrap();
    let peak_file = dir.path().join("peak");
    let python = std::process::Command::new("python3")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    let mut cmd = if python {
        let mut c = std::process::Command::new("python3");
        c.args(["-c", MEASURE])
            .arg(&peak_file)
            .arg(env!("CARGO_BIN_EXE_kelp"));
        c
    } else {
        std::process::Command::new(env!("CARGO_BIN_EXE_kelp"))
    };
    let out = cmd
        .args(args)
        .env_remove("KUBECONFIG")
        .env("NO_COLOR", "1")
        .current_dir(std::env::temp_dir())
        .stdin(if stdin_zero {
            Stdio::from(std::fs::File::open("/dev/zero").unwrap())
        } else {
            Stdio::null()
        })
        .output()
        .unwrap();
    let peak = std::fs::read_to_string(&peak_file)
        .ok()
        .and_then(|kb| kb.trim().parse::<u64>().ok())
        .map(|kb| kb * 1024);
    (out, peak)
}

/// Make a FIFO at `path`.
fn mkfifo(path: &Path) {
    let c = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
    // SAFETY: a valid C string.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
}

/// A FIFO that a thread fills with zero bytes for as long as anyone reads it.
fn zero_fifo(dir: &Path, name: &str) -> PathBuf {
    let path = dir.join(name);
    mkfifo(&path);
    let writer = path.clone();
    std::thread::spawn(move || {
        use std::io::Write;
        // Each open is one reader: serve every reader that comes, until the test ends.
        while let Ok(mut f) = std::fs::OpenOptions::new().write(true).open(&writer) {
            let zeros = vec![0u8; 1 << 16];
            while f.write_all(&zeros).is_ok() {}
        }
    });
    path
}

/// Every input kelp reads (a dump from a file, a device, a FIFO or stdin; a manifest for
/// lint and what-if; a catalogue; a metrics file; `.kelp.yaml`) is held to its cap while
/// it is read: endless zeros are one error line, exit 2, well under 100 MB.
#[test]
fn endless_input_on_every_path_is_one_error_line_under_100_mb() {
    let dir = tempfile::tempdir().unwrap();
    let good = write(dir.path(), "good.yaml", &pod_list(""));
    let good = s(&good).to_string();
    let pod = write(
        dir.path(),
        "pod.yaml",
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c, image: i}]}\n",
    );
    let pod = s(&pod).to_string();
    for source in ["/dev/zero", "fifo"] {
        let fifo = |name: &str| -> String {
            if source == "fifo" {
                s(&zero_fifo(dir.path(), name)).to_string()
            } else {
                source.to_string()
            }
        };
        let cases: Vec<(Vec<String>, bool)> = vec![
            (vec!["doctor".into(), "--from".into(), fifo("dump")], false),
            (vec!["doctor".into(), "--from".into(), "-".into()], true),
            (vec!["lint".into(), fifo("manifest")], false),
            (
                vec![
                    "what-if".into(),
                    "--pod".into(),
                    fifo("pod"),
                    "--nodepools".into(),
                    good.clone(),
                ],
                false,
            ),
            (
                vec![
                    "what-if".into(),
                    "--pod".into(),
                    pod.clone(),
                    "--nodepools".into(),
                    fifo("pools"),
                ],
                false,
            ),
            (
                vec![
                    "doctor".into(),
                    "--from".into(),
                    good.clone(),
                    "--catalog".into(),
                    fifo("catalog"),
                ],
                false,
            ),
            (
                vec![
                    "doctor".into(),
                    "--from".into(),
                    good.clone(),
                    "--metrics-file".into(),
                    fifo("metrics"),
                ],
                false,
            ),
            (
                vec![
                    "lint".into(),
                    "--config".into(),
                    fifo("config"),
                    good.clone(),
                ],
                false,
            ),
        ];
        for (args, stdin) in cases {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let (out, peak) = run_measured(&args, stdin);
            let err = one_error(&out);
            assert!(
                err.contains("MiB") || err.contains("KiB"),
                "{source} {args:?}: a cap: {err}"
            );
            match peak {
                Some(peak) => {
                    assert!(peak < 100 << 20, "{source} {args:?}: {} MiB", peak >> 20)
                }
                None => eprintln!("no python3: peak memory not measured"),
            }
        }
    }
}

/// A dump read from a FIFO (`--from <(kubectl get ...)`) cannot seek back after its first
/// bytes are sniffed for gzip: it is streamed as it comes.
#[test]
fn a_dump_from_a_fifo_loads() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("dump");
    mkfifo(&path);
    let text = pod_list("");
    let writer = path.clone();
    std::thread::spawn(move || {
        use std::io::Write;
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .open(writer)
            .unwrap();
        f.write_all(text.as_bytes()).unwrap();
    });
    let out = kelp()
        .args(["doctor", "-o", "json", "--from"])
        .arg(&path)
        .output()
        .unwrap();
    assert!(
        out.status.code() != Some(2),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(report["findings"].is_array(), "{report}");
}

/// A Pod of 560,000 containers (tens of MB of YAML, each entry a few bytes that would
/// grow into a tree node, a parsed container and a projection) is refused at the
/// 10,001st entry by every reader, in one line and within 10x the file's size; a dump's
/// own long list is not.
#[test]
fn an_object_of_half_a_million_containers_is_refused_within_ten_times_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let mut text = String::from(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: huge, namespace: shop}\nspec:\n  containers:\n",
    );
    for i in 0..560_000 {
        text.push_str(&format!(
            "  - name: c{i}\n    image: registry.example/app:1\n"
        ));
    }
    let size = text.len() as u64;
    let pod = write(dir.path(), "huge.yaml", &text);
    let pools = write(dir.path(), "pools.yaml", POOLS);
    let line = "line 20006: a mapping or list with more than 10000 entries in one object";
    for args in [
        vec!["doctor", "--from", s(&pod)],
        vec!["what-if", "--pod", s(&pod), "--nodepools", s(&pools)],
        vec!["lint", s(&pod)],
    ] {
        let (out, peak) = run_measured(&args, false);
        if args[0] == "lint" {
            // lint reports a file it cannot read as a parse-error result, exit 1.
            let text = String::from_utf8_lossy(&out.stdout);
            assert_eq!(out.status.code(), Some(1), "{text}");
            assert!(
                text.contains("parse-error") && text.contains("10000 entries"),
                "{text}"
            );
        } else {
            let err = one_error(&out);
            assert!(err.contains(line), "{args:?}: {err}");
        }
        if let Some(peak) = peak {
            assert!(
                peak < 10 * size,
                "{args:?}: peak {} MiB for a {} MiB file",
                peak >> 20,
                size >> 20
            );
        }
    }
}

/// Pods whose requests an API server refuses (`NaN`, negative) are skipped with one
/// warning line each and never judged; the rest of the dump is.
#[test]
fn pods_with_nan_or_negative_requests_are_skipped_with_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    let bad = |name: &str, cpu: &str| {
        format!("apiVersion: v1\nkind: Pod\nmetadata: {{name: {name}, namespace: shop}}\nspec:\n  containers: [{{name: app, resources: {{requests: {{cpu: '{cpu}'}}}}}}]\nstatus:\n  phase: Pending\n  conditions: [{{type: PodScheduled, status: 'False', reason: Unschedulable}}]\n")
    };
    let good = "apiVersion: v1\nkind: Pod\nmetadata: {name: fine, namespace: shop}\nspec:\n  containers: [{name: app, resources: {requests: {cpu: 100m}}}]\nstatus:\n  phase: Pending\n  conditions: [{type: PodScheduled, status: 'False', reason: Unschedulable}]\n";
    let text = [POOLS, &bad("nan", "NaN"), &bad("neg", "-1"), good].join("---\n");
    let f = write(dir.path(), "d.yaml", &text);
    let out = kelp()
        .args(["doctor", "-o", "json", "--from", s(&f)])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let warnings: Vec<&str> = err
        .lines()
        .filter(|l| l.starts_with("warning: skipped Pod"))
        .collect();
    assert_eq!(warnings.len(), 2, "{err}");
    assert!(
        warnings[0]
            .contains("shop/nan: container \"app\" requests: cpu: \"NaN\" is not a valid quantity")
            && warnings[0].contains("the API server refuses such an object"),
        "{err}"
    );
    assert!(
        warnings[1].contains("shop/neg: container \"app\" requests: cpu: \"-1\" is negative"),
        "{err}"
    );
    assert!(
        stdout.contains("\"fine\""),
        "the valid pod is judged: {stdout}"
    );
    assert!(
        !stdout.contains("\"nan\"") && !stdout.contains("\"neg\""),
        "{stdout}"
    );
    // `why pod` does not know them.
    let out = kelp()
        .args(["why", "pod", "shop/nan", "--from", s(&f)])
        .output()
        .unwrap();
    assert_ne!(out.status.code(), Some(0));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("not found"),
        "{:?}",
        out
    );
}

/// A YAML dump with a key given twice is refused as JSON with one is: which value wins
/// would be the reader's guess (kubectl refuses it too).
#[test]
fn a_yaml_dump_with_a_key_given_twice_is_refused_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let f = write(
        dir.path(),
        "dup.yaml",
        &format!("{POOLS}---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: a\n  namespace: shop\n  name: b\nspec: {{}}\n"),
    );
    let out = kelp().args(["doctor", "--from", s(&f)]).output().unwrap();
    let err = one_error(&out);
    assert!(
        err.contains("dup.yaml: line 15: mapping key \"name\" is given twice (first on line 13)"),
        "{err}"
    );
}
