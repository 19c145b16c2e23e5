//! The benches' generated cluster dumps: `bench/gen-dump.py` (20 NodePools, seed 1), made
//! once into `$KELP_BENCH_DIR` (default /tmp/kelp-bench) and reused.

use std::path::PathBuf;

/// The dump of `nodes` nodes, `pods` pods and `events` events, generated if missing.
pub fn generated(nodes: usize, pods: usize, events: usize) -> PathBuf {
    let dir = PathBuf::from(std::env::var("KELP_BENCH_DIR").unwrap_or("/tmp/kelp-bench".into()));
    let file = dir.join(format!("dump-n{nodes}-p{pods}-e{events}-np20-s1.json"));
    if !file.exists() {
        std::fs::create_dir_all(&dir).expect("bench dir");
        let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("bench/gen-dump.py");
        let ok = std::process::Command::new("python3")
            .arg(script)
            .args(["--nodes", &nodes.to_string(), "--pods", &pods.to_string()])
            .args([
                "--events",
                &events.to_string(),
                "--nodepools",
                "20",
                "--seed",
                "1",
            ])
            .arg("-o")
            .arg(&file)
            .status()
            .expect("python3 runs bench/gen-dump.py")
            .success();
        assert!(ok, "bench/gen-dump.py failed");
    }
    file
}

/// The dump of this many nodes, pods and events, or of the sizes `KELP_BENCH_NODES`,
/// `KELP_BENCH_PODS` and `KELP_BENCH_EVENTS` ask; with its pod count.
#[allow(dead_code)] // each bench includes this file; not all size their dump this way
pub fn sized(nodes: usize, pods: usize, events: usize) -> (PathBuf, usize) {
    let env = |name: &str, default: usize| {
        std::env::var(name)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(default)
    };
    let pods = env("KELP_BENCH_PODS", pods);
    let file = generated(
        env("KELP_BENCH_NODES", nodes),
        pods,
        env("KELP_BENCH_EVENTS", events),
    );
    (file, pods)
}
