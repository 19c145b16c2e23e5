//! `kelp top` in a real terminal: the binary runs in a detached tmux session of a fixed
//! size on the demo dump, keys are sent with `send-keys`, and the screen is read with
//! `capture-pane`. Waits are bounded polls for text, never sleeps that assume a speed.
//! Skipped (with a message) when tmux is not installed; scripts/test installs it.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

mod common;

const NOW: &str = "2026-11-21T10:00:00Z";
const WAIT: Duration = Duration::from_secs(30);

fn have_tmux() -> bool {
    Command::new("tmux")
        .arg("-V")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// A tmux server of our own (its own socket), killed when dropped.
struct Tmux {
    socket: String,
}

impl Tmux {
    /// Start `command` in a 160x45 session; the shell then prints its exit status and
    /// waits, so the screen after the view ends can be read too.
    fn start(command: &str) -> Tmux {
        Self::start_in(command, &[])
    }

    /// [`Tmux::start`], with `VAR=value` settings for the command.
    fn start_in(command: &str, env: &[&str]) -> Tmux {
        static N: AtomicUsize = AtomicUsize::new(0);
        let socket = format!(
            "kelp-tui-test-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::SeqCst)
        );
        let t = Tmux { socket };
        let script = format!("{command}; echo EXIT=$?; sleep 120");
        t.run(
            &[
                "new-session",
                "-d",
                "-s",
                "top",
                "-x",
                "160",
                "-y",
                "45",
                "env",
                "LANG=C.UTF-8",
            ]
            .into_iter()
            .chain(env.iter().copied())
            .chain(["sh", "-c", &script])
            .collect::<Vec<_>>(),
        );
        t
    }

    fn run(&self, args: &[&str]) -> String {
        let out = Command::new("tmux")
            .args(["-f", "/dev/null", "-L", &self.socket])
            .args(args)
            .output()
            .expect("run tmux");
        assert!(
            out.status.success(),
            "tmux {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    fn keys(&self, keys: &[&str]) {
        for k in keys {
            self.run(&["send-keys", "-t", "top", k]);
        }
    }

    /// Literal text, one key per character.
    fn text(&self, s: &str) {
        self.run(&["send-keys", "-t", "top", "-l", s]);
    }

    fn screen(&self) -> String {
        self.run(&["capture-pane", "-p", "-t", "top"])
    }

    /// Poll the screen until `ok` holds (bounded by [`WAIT`]); the screen it held on.
    fn wait_for(&self, what: &str, ok: impl Fn(&str) -> bool) -> String {
        self.wait_within(what, WAIT, ok)
    }

    fn wait_within(&self, what: &str, bound: Duration, ok: impl Fn(&str) -> bool) -> String {
        let start = Instant::now();
        loop {
            let s = self.screen();
            if ok(&s) {
                return s;
            }
            assert!(
                start.elapsed() < bound,
                "timed out waiting for {what}; the screen:\n{s}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .args(["-L", &self.socket, "kill-server"])
            .output();
    }
}

fn kelp() -> &'static str {
    env!("CARGO_BIN_EXE_kelp")
}

/// The README's flow: `kelp demo --dump > demo.yaml`.
fn demo_dump(dir: &Path) -> PathBuf {
    let out = Command::new(kelp())
        .args(["demo", "--dump"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let path = dir.join("demo.yaml");
    std::fs::write(&path, out.stdout).unwrap();
    path
}

fn metrics_file() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("demo/karpenter-metrics.txt")
}

fn top_command(dump: &Path) -> String {
    format!(
        "'{}' top --from '{}' --metrics-file '{}' --now {NOW}",
        kelp(),
        dump.display(),
        metrics_file().display()
    )
}

/// The same data, in process: what the screen must show.
fn expected() -> kelp::tui::App {
    let snap = kelp::tui::Snapshot::new(kelp::demo::cluster().unwrap(), "dump", kelp::demo::now());
    kelp::tui::App::new(snap, false)
}

#[test]
fn top_shows_the_demo_filters_explains_a_pod_and_quits() {
    if !have_tmux() {
        eprintln!(
            "skipping the kelp top terminal test: tmux is not installed (scripts/test installs it)"
        );
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let dump = demo_dump(dir.path());
    let t = Tmux::start(&top_command(&dump));
    let want = expected();

    // The first frame: the header's total, every pool, the nodes, the pending pods.
    let s = t.wait_for("the first frame", |s| s.contains("Pending pods"));
    let total = kelp::tui::model::money(want.snap.top.total_per_hour);
    assert!(total.starts_with('$'), "{total}");
    assert!(s.contains(&format!("total {total}")), "{s}");
    for pool in ["arm64", "default", "batch", "gpu", "inferentia", "legacy"] {
        assert!(s.contains(pool), "pool {pool} missing:\n{s}");
    }
    assert!(s.contains("NodePools (6)"), "{s}");
    assert!(
        s.contains(&format!("Nodes ({})", want.snap.top.nodes.len())),
        "{s}"
    );
    assert!(s.contains("ml/trainer-0"), "{s}");
    assert!(s.contains("batch/report-builder-29393850-9lr5g"), "{s}");
    // Bars and spot shares are drawn.
    assert!(s.contains('█') && s.contains('%'), "{s}");

    // `/` and text: the filter line shows what is typed; Enter keeps it.
    t.keys(&["/"]);
    t.text("trainer");
    t.wait_for("the filter being typed", |s| s.contains("/trainer"));
    t.keys(&["Enter"]);
    let s = t.wait_for("the filter applied", |s| s.contains("filter: trainer"));
    assert!(s.contains("ml/trainer-0"), "{s}");
    assert!(!s.contains("batch/report-builder"), "{s}");
    assert!(
        s.contains(&format!("Nodes (0 of {})", want.snap.top.nodes.len())),
        "{s}"
    );

    // Tab to the pending pods, Enter: the `why pod` answer in a panel.
    t.keys(&["Tab", "Enter"]);
    // The title and the body are drawn in one frame, but tmux may capture a half-drawn
    // screen: wait for the body's last part too.
    let s = t.wait_for("the why panel", |s| {
        [
            "why pod ml/trainer-0",
            "Pending: unschedulable",
            "What to change",
            "nvidia.com/gpu",
        ]
        .iter()
        .all(|part| s.contains(part))
    });
    assert!(s.contains("Pending: unschedulable"), "{s}");
    assert!(s.contains("What to change"), "{s}");
    assert!(s.contains("did not tolerate taint nvidia.com/gpu"), "{s}");

    // Esc closes it; the filter stays.
    t.keys(&["Escape"]);
    let s = t.wait_for("the panel closed", |s| !s.contains("why pod"));
    assert!(s.contains("filter: trainer"), "{s}");

    // `q` quits with status 0 and gives the terminal back (the alternate screen is gone).
    t.keys(&["q"]);
    let s = t.wait_for("the exit", |s| s.contains("EXIT="));
    assert!(s.contains("EXIT=0"), "{s}");
    assert!(
        !s.contains("NodePools"),
        "the view is still on the screen:\n{s}"
    );
}

#[test]
fn top_sorts_moves_and_explains_a_node() {
    if !have_tmux() {
        eprintln!(
            "skipping the kelp top terminal test: tmux is not installed (scripts/test installs it)"
        );
        return;
    }
    // The dump on stdin (`--from -`): keys then come from the terminal itself.
    let t = Tmux::start(&format!(
        "'{kelp}' demo --dump | '{kelp}' top --from - --metrics-file '{}' --now {NOW}",
        metrics_file().display(),
        kelp = kelp()
    ));
    t.wait_for("the first frame", |s| s.contains("sort karpenter"));

    // `s` cycles the sort: name, then $/hr.
    t.keys(&["s"]);
    t.wait_for("the name sort", |s| s.contains("sort name"));
    t.keys(&["s"]);
    t.wait_for("the cost sort", |s| s.contains("sort $/hr"));

    // The second most expensive node: `j` moves down to it, Enter explains it.
    let mut want = expected();
    want.sort = kelp::tui::Sort::Cost;
    let second = want.nodes()[1].name.clone();
    t.keys(&["j", "Enter"]);
    let s = t.wait_for("the why node panel", |s| s.contains("why node"));
    assert!(s.contains(&format!("why node {second}")), "{s}");
    assert!(s.contains("NodePool"), "{s}");
    t.keys(&["Escape", "q"]);
    let s = t.wait_for("the exit", |s| s.contains("EXIT="));
    assert!(s.contains("EXIT=0"), "{s}");
}

/// Names that carry a newline, an OSC title change, BEL, CR, a bidi override, a C1 CSI or
/// NUL reach the real terminal escaped: the screen shows the escapes as text, and no
/// line starts with the forged one.
#[test]
fn top_prints_hostile_names_escaped() {
    if !have_tmux() {
        eprintln!("skipping: tmux is not installed (scripts/test installs it)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let dump = common::hostile_dump(dir.path());
    let t = Tmux::start(&format!(
        "'{}' top --from '{}' --now {NOW}",
        kelp(),
        dump.display()
    ));
    let s = t.wait_for("the pending pods", |s| {
        s.contains("Pending pods") && s.contains("ml/nul")
    });
    assert!(s.contains("ml/trainer-0\\nFAKE"), "{s}");
    assert!(s.contains("ml/nul\\x00pod"), "{s}");
    assert!(
        !s.lines()
            .any(|l| l.trim_start_matches(['│', '|', ' ']).starts_with("FAKE")),
        "a forged line:\n{s}"
    );
    // The node's name too, once its row is on the screen.
    assert!(s.contains("ip-10-0-1-1\\nFAKE"), "{s}");
    t.keys(&["q"]);
    let s = t.wait_for("the exit", |s| s.contains("EXIT="));
    assert!(s.contains("EXIT=0"), "{s}");
}

#[test]
fn top_without_a_terminal_says_so_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let dump = demo_dump(dir.path());
    let out = Command::new(kelp())
        .args(["top", "--from"])
        .arg(&dump)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("kelp top needs a terminal"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    assert!(out.stdout.is_empty());
}

/// On the testenv's live cluster (skipped without one): the view lists the cluster again
/// every `--refresh`, so a pod created while it runs appears in the pending table.
#[test]
fn top_on_a_live_cluster_shows_a_new_pending_pod() {
    if !have_tmux() {
        eprintln!(
            "skipping the kelp top terminal test: tmux is not installed (scripts/test installs it)"
        );
        return;
    }
    let Some(e) = common::env() else { return };
    let ns = "kelp-top";
    common::namespace(&e, ns);
    e.fresh(ns, &["top-nowhere"]);
    let t = Tmux::start_in(
        &format!("'{}' top --refresh 1", kelp()),
        &[&format!("KUBECONFIG={}", e.kubeconfig)],
    );
    let s = t.wait_for("the first frame", |s| s.contains("NodePools ("));
    assert!(s.contains("context "), "{s}");
    assert!(s.contains("· live"), "{s}");
    // Only this pod, whatever else the testenv has pending.
    t.keys(&["/"]);
    t.text("top-nowhere");
    t.keys(&["Enter"]);
    t.wait_for("the filter", |s| s.contains("filter: top-nowhere"));
    // No NodePool requires this scenario label: the pod stays pending.
    e.apply(&common::pod(
        ns,
        "top-nowhere",
        "kelp-top-nowhere",
        "100m",
        "",
    ));
    t.wait_within("the new pending pod", 3 * common::MINUTES, |s| {
        s.contains("kelp-top/top-nowhere")
    });
    t.keys(&["q"]);
    let s = t.wait_for("the exit", |s| s.contains("EXIT="));
    assert!(s.contains("EXIT=0"), "{s}");
    e.fresh(ns, &["top-nowhere"]);
}
