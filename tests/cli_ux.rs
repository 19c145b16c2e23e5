//! The command line's user experience (issue 12): the demo dump round trip, what-if's
//! unknown answers, quiet notes, help text, the kubectl plugin, completions, aligned
//! colour tables and doctor's filters and summary.

use assert_cmd::Command;
use serde_json::Value;

const SMALL: &str = "tests/data/small.yaml";

fn kelp() -> Command {
    let mut c = Command::cargo_bin("kelp").unwrap();
    c.env_remove("KUBECONFIG").env("NO_COLOR", "1");
    c
}

fn stdout(c: &mut Command) -> (String, String, i32) {
    let out = c.output().unwrap();
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        out.status.code().unwrap_or(-1),
    )
}

#[test]
fn demo_dump_round_trip_gives_the_demo_report() {
    let (dump, _, code) = stdout(kelp().args(["demo", "--dump"]));
    assert_eq!(code, 0);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("demo.yaml");
    std::fs::write(&path, dump).unwrap();
    let (direct, _, _) = stdout(kelp().args(["demo", "-o", "json"]));
    let (offline, err, _) = stdout(kelp().args(["doctor", "-o", "json", "--from"]).arg(&path));
    let direct: Value = serde_json::from_str(&direct).unwrap();
    let offline: Value = serde_json::from_str(&offline).unwrap_or_else(|e| panic!("{e}: {err}"));
    assert_eq!(direct["generatedAt"], "2026-11-21T10:00:00Z");
    assert_eq!(direct["findings"], offline["findings"]);
    assert_eq!(direct["generatedAt"], offline["generatedAt"]);
    assert_eq!(direct["karpenter"], offline["karpenter"]);
}

fn what_if(pod: &str) -> (Value, i32) {
    what_if_with(pod, &[])
}

/// `what-if -o json` of `pod` against the t3/m4 pools, with `extra` flags.
fn what_if_with(pod: &str, extra: &[&str]) -> (Value, i32) {
    let (out, err, code) = stdout(
        kelp()
            .args([
                "what-if",
                "--pod",
                pod,
                "--nodepools",
                "tests/fixtures/what-if/t3-m4-pools.yaml",
                "-o",
                "json",
            ])
            .args(extra),
    );
    (
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}{err}")),
        code,
    )
}

#[test]
fn what_if_never_calls_compatible_what_it_could_not_check() {
    let (v, code) = what_if("tests/fixtures/what-if/exotic-pods.yaml");
    assert_eq!(code, 3, "unknown has its own exit status");
    let pods = v["pods"].as_array().unwrap();
    assert_eq!(pods.len(), 2);
    for (pod, dimension) in [
        (&pods[0], "architecture kubernetes.io/arch In [s390x]"),
        (&pods[1], "extended resource nvidia.com/gpu"),
    ] {
        assert_eq!(pod["answer"], "unknown", "{pod}");
        assert_eq!(pod["first"], Value::Null, "{pod}");
        for pool in pod["nodepools"].as_array().unwrap() {
            assert_eq!(pool["verdict"], "unknown", "{pool}");
            let why = pool["reasons"][0]["message"].as_str().unwrap();
            assert_eq!(
                why,
                format!("cannot tell: no instance-type catalogue ({dimension})")
            );
        }
    }
    // The table says so in words, and never "compatible".
    let (text, _, code) = stdout(kelp().args([
        "what-if",
        "--pod",
        "tests/fixtures/what-if/exotic-pods.yaml",
        "--nodepools",
        "tests/fixtures/what-if/t3-m4-pools.yaml",
    ]));
    assert_eq!(code, 3);
    assert!(!text.contains("compatible"), "{text}");
    assert!(text.contains("Cannot tell"), "{text}");

    // What the pools do settle is still judged; whether a type holds the pod is not.
    let (v, code) = what_if("tests/fixtures/what-if/plain-pod.yaml");
    assert_eq!(code, 3, "{v}");
    assert_eq!(v["pods"][0]["first"], Value::Null);
    assert_eq!(v["pods"][0]["nodepools"][0]["verdict"], "rejected");
    assert_eq!(v["pods"][0]["nodepools"][1]["verdict"], "unknown");
}

#[test]
fn what_if_with_karpenters_metrics_gives_the_exact_answer() {
    let run = |pod: &str| {
        what_if_with(
            pod,
            &[
                "--metrics-file",
                "tests/fixtures/metrics/aws-instance-types.txt",
            ],
        )
    };
    let (v, code) = run("tests/fixtures/what-if/exotic-pods.yaml");
    assert_eq!(code, 1, "neither fits: {v:#}");
    assert_eq!(v["catalog"], "karpenter-metrics");
    let reason = |pod: usize, pool: usize| {
        v["pods"][pod]["nodepools"][pool]["reasons"][0]["message"]
            .as_str()
            .unwrap()
            .split(',')
            .next()
            .unwrap()
            .to_string()
    };
    // t3: every type is amd64 or arm64 (kelp cannot tell which, but not s390x).
    assert_eq!(reason(0, 0), "no instance type met all requirements");
    // The metrics name no m4 type: Karpenter drops the pool.
    assert_eq!(
        reason(0, 1),
        "NodePool requirements filtered out all compatible available instance types"
    );
    // 2 CPUs: t3.medium has 2 vCPUs, less 70m reserved.
    assert_eq!(reason(1, 0), "no instance type has enough resources");
    // The plain pod pins m4, which these metrics do not offer; t3 is not its family.
    let (v, code) = run("tests/fixtures/what-if/plain-pod.yaml");
    assert_eq!(code, 1, "m4 is not in the metrics: {v:#}");
}

#[test]
fn skipped_kinds_are_one_line_and_only_with_verbose() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("demo.yaml");
    std::fs::write(&path, stdout(kelp().args(["demo", "--dump"])).0).unwrap();
    let (_, quiet, _) = stdout(kelp().args(["doctor", "--from"]).arg(&path));
    assert!(!quiet.contains("note:"), "{quiet}");
    let (_, loud, _) = stdout(kelp().args(["doctor", "-v", "--from"]).arg(&path));
    let notes: Vec<&str> = loud.lines().filter(|l| l.starts_with("note:")).collect();
    assert_eq!(
        notes,
        ["note: skipped 2 CronJob, 17 Deployment, 4 Job, 17 ReplicaSet, 3 StatefulSet objects (kinds kelp does not read)"]
    );
}

fn help(args: &[&str], columns: &str) -> String {
    let (out, err, code) = stdout(kelp().args(args).arg("--help").env("COLUMNS", columns));
    assert_eq!(code, 0, "{err}");
    out
}

const COMMANDS: &[&[&str]] = &[
    &[],
    &["doctor"],
    &["why"],
    &["why", "pod"],
    &["snapshot"],
    &["demo"],
    &["lint"],
    &["what-if"],
    &["serve"],
    &["generate"],
    &["completion"],
];

#[test]
fn help_examples_do_not_wrap_at_80_columns() {
    for args in COMMANDS {
        let narrow = help(args, "80");
        let wide = help(args, "250");
        let examples = |s: &str| -> Vec<String> {
            s.lines()
                .skip_while(|l| !l.starts_with("Examples:"))
                .take_while(|l| !l.is_empty())
                .map(str::to_string)
                .collect()
        };
        assert_eq!(examples(&narrow), examples(&wide), "kelp {args:?} --help");
        for l in narrow.lines() {
            assert!(l.chars().count() <= 80, "kelp {args:?} --help: {l:?}");
        }
    }
}

#[test]
fn each_command_documents_its_own_output_formats() {
    for args in [&["why", "pod"][..], &["what-if"]] {
        let h = help(args, "200");
        assert!(h.contains("-o, --output"), "{h}");
        assert!(!h.contains("grouped by severity"), "kelp {args:?}: {h}");
        assert!(!h.contains("findings contract"), "kelp {args:?}: {h}");
    }
    assert!(help(&["doctor"], "200").contains("grouped by severity"));
}

#[test]
fn a_wrong_context_lists_the_contexts_there_are() {
    let dir = tempfile::tempdir().unwrap();
    let kc = dir.path().join("config");
    std::fs::write(
        &kc,
        "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: 'https://127.0.0.1:1'}}]\nusers: [{name: u, user: {}}]\ncontexts:\n- {name: staging, context: {cluster: c, user: u}}\n- {name: prod-eu, context: {cluster: c, user: u}}\ncurrent-context: staging\n",
    )
    .unwrap();
    for cmd in [&["doctor"][..], &["snapshot"], &["why", "pod", "a/b"]] {
        let (_, err, code) = stdout(
            kelp()
                .args(cmd)
                .arg("--kubeconfig")
                .arg(&kc)
                .args(["--context", "prod"]),
        );
        assert_eq!(code, 2, "{cmd:?}: {err}");
        assert_eq!(
            err.trim(),
            "error: no context \"prod\" in the kubeconfig; its contexts: staging, prod-eu",
            "{cmd:?}"
        );
    }
}

#[test]
fn one_name_for_the_dashboard_address() {
    let demo = help(&["demo"], "200");
    assert!(demo.contains("--dashboard-addr <ADDR>"), "{demo}");
    assert!(!demo.contains("--addr"), "{demo}");
    assert!(help(&["serve"], "200").contains("--dashboard-addr <ADDR>"));
    // The old name still parses.
    let (_, err, code) = stdout(kelp().args(["demo", "--addr", "127.0.0.1:0", "--dump"]));
    assert_eq!(code, 0, "{err}");
}

#[test]
fn kubectl_kelp_runs_as_the_kubectl_plugin() {
    let mut plugin = Command::cargo_bin("kubectl-kelp").unwrap();
    plugin.env_remove("KUBECONFIG").env("NO_COLOR", "1");
    let (out, err, code) =
        stdout(plugin.args(["doctor", "--from", SMALL, "--now", "2026-11-21T10:00:00Z"]));
    assert_eq!(code, 1, "critical findings: {err}");
    assert!(out.starts_with("CRITICAL ("), "{out}");
    let mut plugin = Command::cargo_bin("kubectl-kelp").unwrap();
    let (h, _, code) = stdout(plugin.arg("--help"));
    assert_eq!(code, 0);
    assert!(h.contains("Usage: kubectl kelp [OPTIONS] <COMMAND>"), "{h}");
    assert!(h.contains("  kubectl kelp doctor"), "{h}");

    // A symlink named kubectl-kelp to kelp is the plugin too (the argv[0] switch).
    let dir = tempfile::tempdir().unwrap();
    let link = dir.path().join("kubectl-kelp");
    std::os::unix::fs::symlink(assert_cmd::cargo::cargo_bin("kelp"), &link).unwrap();
    let (h, _, _) = stdout(Command::new(&link).args(["doctor", "--help"]));
    assert!(h.contains("Usage: kubectl kelp doctor"), "{h}");
    // And kelp is kelp.
    assert!(help(&[], "200").contains("Usage: kelp [OPTIONS] <COMMAND>"));
}

#[test]
fn completions_generate_for_bash_zsh_and_fish() {
    for shell in ["bash", "zsh", "fish"] {
        let (script, err, code) = stdout(kelp().args(["completion", shell]));
        assert_eq!(code, 0, "{shell}: {err}");
        for sub in ["doctor", "why", "what-if", "snapshot", "completion"] {
            assert!(script.contains(sub), "{shell} completion lacks {sub}");
        }
        assert!(script.contains("--from"), "{shell}");
    }
    let (bash, _, _) = stdout(kelp().args(["completion", "bash"]));
    assert!(bash.contains("complete -F _kelp"), "{bash}");
    let (_, _, code) = stdout(kelp().args(["completion", "tcsh"]));
    assert_eq!(code, 2);
}

/// `s` without SGR colour codes.
fn strip_colour(s: &str) -> String {
    let re = regex::Regex::new("\x1b\\[[0-9;]*m").unwrap();
    re.replace_all(s, "").into_owned()
}

#[test]
fn coloured_tables_align_under_a_pseudo_terminal() {
    if std::process::Command::new("script")
        .arg("--version")
        .output()
        .is_err()
    {
        eprintln!("skipped: no `script` for a pseudo-terminal");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let dump = dir.path().join("demo.yaml");
    std::fs::write(&dump, stdout(kelp().args(["demo", "--dump"])).0).unwrap();
    let bin = assert_cmd::cargo::cargo_bin("kelp");
    let cmd = format!(
        "{} why pod ml/trainer-0 --from {}",
        bin.display(),
        dump.display()
    );
    let out = std::process::Command::new("script")
        .args(["-qc", &cmd, "/dev/null"])
        .env_remove("NO_COLOR")
        .env("TERM", "xterm")
        .output()
        .unwrap();
    let raw = String::from_utf8_lossy(&out.stdout).replace('\r', "");
    assert!(raw.contains("\x1b["), "a terminal gets colour: {raw:?}");
    let plain = strip_colour(&raw);
    let table: Vec<&str> = plain
        .lines()
        .skip_while(|l| !l.starts_with("NODEPOOL"))
        .take_while(|l| !l.is_empty())
        .collect();
    assert!(table.len() > 2, "{plain}");
    let at = |l: &str, word: &str| l.find(word);
    let verdict_col = at(table[0], "VERDICT").unwrap();
    let why_col = at(table[0], "WHY").unwrap();
    for row in &table[1..] {
        let verdict = ["rejected", "compatible", "unknown"]
            .iter()
            .find_map(|w| at(row, w))
            .unwrap_or_else(|| panic!("{row}"));
        assert_eq!(verdict, verdict_col, "{plain}");
        assert_eq!(&row[why_col - 2..why_col], "  ", "{row}");
        assert_ne!(&row[why_col..why_col + 1], " ", "{row}");
    }
}

fn demo_dump(dir: &std::path::Path) -> std::path::PathBuf {
    let path = dir.join("demo.yaml");
    std::fs::write(&path, stdout(kelp().args(["demo", "--dump"])).0).unwrap();
    path
}

fn doctor(from: &std::path::Path, args: &[&str]) -> (Vec<Value>, String, i32) {
    let (out, err, code) = stdout(
        kelp()
            .args(["doctor", "-o", "json", "--from"])
            .arg(from)
            .args(args),
    );
    let v: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}{err}"));
    (v["findings"].as_array().unwrap().clone(), err, code)
}

#[test]
fn doctor_filters_by_code_nodepool_namespace_and_pod_labels() {
    let dir = tempfile::tempdir().unwrap();
    let demo = demo_dump(dir.path());
    let (all, _, _) = doctor(&demo, &[]);
    let (drifted, _, _) = doctor(&demo, &["--code", "nodeclaim-drifted"]);
    assert!(!drifted.is_empty() && drifted.len() < all.len());
    assert!(drifted.iter().all(|f| f["code"] == "nodeclaim-drifted"));
    let (two, _, _) = doctor(
        &demo,
        &["--code", "nodeclaim-drifted", "--code", "pod-unschedulable"],
    );
    assert!(two.len() > drifted.len());

    let (gpu, _, _) = doctor(&demo, &["--nodepool", "gpu"]);
    assert!(!gpu.is_empty() && gpu.len() < all.len());
    assert!(gpu.iter().all(|f| f["nodepool"] == "gpu"
        || f["object"] == serde_json::json!({"kind": "NodePool", "name": "gpu"})));

    let (web, _, _) = doctor(&demo, &["-n", "web"]);
    assert!(!web.is_empty());
    assert!(web.iter().all(|f| f["object"]["namespace"] == "web"));
    let (everything, _, _) = doctor(&demo, &["-A"]);
    assert_eq!(everything, all);

    let (trainer, _, code) = doctor(&demo, &["-l", "app=trainer"]);
    assert_eq!(trainer.len(), 1, "{trainer:?}");
    assert_eq!(trainer[0]["object"]["name"], "trainer-0");
    assert_eq!(code, 1, "its finding is critical");
    let (not_trainer, _, _) = doctor(&demo, &["-l", "app notin (trainer),app"]);
    assert!(not_trainer
        .iter()
        .all(|f| f["object"]["name"] != "trainer-0"));
    assert!(!not_trainer.is_empty());
    let (none, _, code) = doctor(&demo, &["--code", "nodeclaim-drifted", "-n", "nowhere"]);
    assert!(none.is_empty());
    assert_eq!(code, 0, "filters decide the exit status too");

    let (_, err, code) = stdout(
        kelp()
            .args(["doctor", "--code", "nope", "--from"])
            .arg(&demo),
    );
    assert_eq!(code, 2);
    assert!(
        err.contains("codes: ") && err.contains("pod-unschedulable"),
        "{err}"
    );

    // -o name: one Kind/namespace/name per finding; -o wide: one line each.
    let (names, _, _) = stdout(
        kelp()
            .args(["doctor", "-o", "name", "-n", "web", "--from"])
            .arg(&demo),
    );
    let lines: Vec<&str> = names.lines().collect();
    assert_eq!(lines.len(), web.len());
    assert!(
        lines
            .iter()
            .all(|l| l.starts_with("Pod/web/") || l.contains("/web/")),
        "{names}"
    );
    let (wide, _, _) = stdout(kelp().args(["doctor", "-o", "wide", "--from"]).arg(&demo));
    assert!(wide.starts_with("SEVERITY  CODE"), "{wide}");
    assert_eq!(wide.lines().count(), all.len() + 1);
}

#[test]
fn a_big_report_starts_with_a_summary() {
    let dir = tempfile::tempdir().unwrap();
    let demo = std::fs::read_to_string(demo_dump(dir.path())).unwrap();
    let trainer = demo
        .split("\n---\n")
        .find(|d| d.contains("kind: Pod\n") && d.contains("  name: trainer-0\n"))
        .unwrap()
        .to_string();
    let mut big = demo.clone();
    for i in 0..60 {
        big.push_str("\n---\n");
        big.push_str(
            &trainer
                .replace("  name: trainer-0\n", &format!("  name: trainer-x{i}\n"))
                .replace("uid: e2b0b21f", &format!("uid: {i:08}")),
        );
    }
    let path = dir.path().join("big.yaml");
    std::fs::write(&path, big).unwrap();
    let (all, _, _) = doctor(&path, &[]);
    assert!(all.len() > 60, "{}", all.len());
    let (table, _, _) = stdout(kelp().args(["doctor", "--from"]).arg(&path));
    assert!(
        table.starts_with(&format!("SUMMARY ({} findings)\n", all.len())),
        "{table}"
    );
    let by_code = table.lines().nth(1).unwrap();
    assert!(
        by_code.starts_with("  by code:     pod-unschedulable 6"),
        "{by_code}"
    );
    assert!(table.lines().nth(2).unwrap().starts_with("  by nodepool: "));
    assert!(
        table.contains(&format!(
            "{} more: use --code / --nodepool / -o json",
            all.len() - 50
        )),
        "{table}"
    );
    // The worst come first: 50 shown, each a code line and a message line.
    let shown = table
        .lines()
        .filter(|l| l.starts_with("  ") && !l.starts_with("   ") && !l.starts_with("  by "))
        .count();
    assert_eq!(shown, 50, "{table}");
    // A filtered report is small again: no summary.
    let (small, _, _) = stdout(
        kelp()
            .args(["doctor", "--code", "nodeclaim-drifted", "--from"])
            .arg(&path),
    );
    assert!(small.starts_with("INFO ("), "{small}");
}

#[test]
fn progress_shows_on_a_terminal_and_never_in_a_pipe() {
    let dir = tempfile::tempdir().unwrap();
    let demo = demo_dump(dir.path());
    // Piped: stderr carries nothing but notes and errors.
    let (_, err, _) = stdout(kelp().args(["doctor", "--from"]).arg(&demo));
    assert!(
        !err.contains("reading") && !err.contains("analysing"),
        "{err}"
    );
    // On a terminal: the phase and what was read (the spinner is cleared at the end).
    let Some(tty) = doctor_on_a_terminal(&demo, &[]) else {
        return;
    };
    assert!(tty.contains("reading "), "{tty:?}");
}

/// What a terminal shows while `kelp doctor --from DUMP ARGS > /dev/null` runs under a
/// pseudo-terminal (script(1)); None where script is not installed.
fn doctor_on_a_terminal(dump: &std::path::Path, args: &[&str]) -> Option<String> {
    std::process::Command::new("script")
        .arg("--version")
        .output()
        .ok()?;
    let cmd = format!(
        "{} doctor --from {} {} > /dev/null",
        assert_cmd::cargo::cargo_bin("kelp").display(),
        dump.display(),
        args.join(" ")
    );
    let out = std::process::Command::new("script")
        .args(["-qc", &cmd, "/dev/null"])
        .env("TERM", "xterm")
        .output()
        .unwrap();
    Some(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// While a large dump streams in, the spinner counts the objects read so far.
#[test]
fn progress_counts_objects_while_a_big_dump_is_read() {
    let dir = tempfile::tempdir().unwrap();
    let dump = dir.path().join("big.yaml");
    let pods: String = (0..6000)
        .map(|i| {
            format!(
                "---\napiVersion: v1\nkind: Pod\nmetadata: {{name: web-{i}, namespace: shop, uid: p{i}, \
                 labels: {{app: web, tier: front, team: shop}}}}\nspec: {{containers: [{{name: c, image: nginx, \
                 resources: {{requests: {{cpu: 100m, memory: 64Mi}}}}}}]}}\nstatus: {{phase: Running}}\n"
            )
        })
        .collect();
    std::fs::write(&dump, pods).unwrap();
    let Some(tty) = doctor_on_a_terminal(&dump, &["--now", "2026-11-21T10:00:00Z"]) else {
        return;
    };
    assert!(tty.contains("objects read"), "{tty:?}");
}
