//! Every input the fuzzers once crashed on (`fuzz/regressions/TARGET/`), replayed through
//! what its target calls, on every `cargo test`: the known bugs stay fixed without
//! cargo-fuzz or its instrumented build. `scripts/fuzz` replays them too, then fuzzes.

use std::path::{Path, PathBuf};

use chrono::{TimeZone, Utc};
use kelp::karpenter::budgets::{self, Budget, DisruptionReason};
use kelp::lint::{self, Config, Input};
use kelp::model::Cluster;

fn inputs(target: &str) -> Vec<(PathBuf, Vec<u8>)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fuzz/regressions")
        .join(target);
    let mut out: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|f| f.unwrap().path())
        .map(|p| {
            let data = std::fs::read(&p).unwrap();
            (p, data)
        })
        .collect();
    out.sort();
    assert!(!out.is_empty(), "no regressions for {target}");
    out
}

/// A thread with the stack a fuzz target runs on (the main thread's 8 MiB), as deep
/// input is what the stack-overflow regressions are about.
fn on_big_stack(f: impl FnOnce() + Send + 'static) {
    std::thread::Builder::new()
        .stack_size(8 << 20)
        .spawn(f)
        .unwrap()
        .join()
        .unwrap();
}

#[test]
fn dump_page_regressions_load_or_fail_cleanly_and_analyse() {
    on_big_stack(|| {
        for (path, data) in inputs("dump_page") {
            let text = String::from_utf8_lossy(&data);
            let mut c = Cluster::default();
            if kelp::source::load_str("fuzz.yaml", &text, &mut c).is_ok() {
                let now = Utc.with_ymd_and_hms(2026, 11, 21, 10, 0, 0).unwrap();
                let pass = kelp::analysis::run(&c, now);
                serde_json::to_string(&*pass.report)
                    .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            }
        }
    });
}

#[test]
fn lint_regressions_give_results_with_lines() {
    on_big_stack(|| {
        for (path, data) in inputs("lint") {
            let inputs = [Input::from_bytes("fuzz.yaml", data)];
            let report = lint::lint(&inputs, &Config::default());
            for r in &report.results {
                assert!(r.line >= 1, "{}: {r:?}", path.display());
            }
        }
    });
}

#[test]
fn value_regressions_fail_closed() {
    let now = Utc.with_ymd_and_hms(2026, 11, 21, 21, 42, 58).unwrap();
    for (path, data) in inputs("values") {
        let text = String::from_utf8_lossy(&data);
        let mut lines = text.splitn(3, '\n');
        let budget = Budget {
            schedule: lines.next().map(str::to_string),
            duration: lines.next().map(str::to_string),
            nodes: lines.next().unwrap_or("10%").to_string(),
            reasons: Some(vec!["Drifted".to_string()]),
        };
        let _ = budgets::is_active(&budget, now);
        let allowed =
            budgets::allowed_disruptions(Some(&[budget]), DisruptionReason::Drifted, now, 10, 3);
        assert!(
            allowed.error.is_none() || allowed.allowed == 0,
            "{}: an unreadable budget must allow nothing",
            path.display()
        );
    }
}
