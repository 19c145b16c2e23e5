//! A dump (src/source/dump.rs `load_str`: JSON or YAML, a `v1/List`, several documents)
//! into the model, then the analysis and the dashboard's page, at a fixed clock (the
//! dump's own `kelp.dev/captured-at` when it has one, as `--from` does). JSON is also
//! loaded from a file, as `--from FILE.json` streams it.
#![no_main]

use std::path::PathBuf;
use std::sync::LazyLock;

use kelp::model::Cluster;
use libfuzzer_sys::fuzz_target;

/// One scratch file per fuzzing process, for the streamed JSON path.
static SCRATCH: LazyLock<PathBuf> = LazyLock::new(|| {
    std::env::temp_dir().join(format!("kelp-fuzz-dump-{}.json", std::process::id()))
});

fuzz_target!(|data: &[u8]| {
    kelp_fuzz::catch_stack_overflow();
    let text = String::from_utf8_lossy(data);
    if text.trim_start().starts_with(['{', '[']) {
        std::fs::write(&*SCRATCH, data).expect("the scratch file is writable");
        let _ = kelp::source::load_paths(&[SCRATCH.clone()], &mut Cluster::default());
        let _ = std::fs::remove_file(&*SCRATCH);
    }
    let mut c = Cluster::default();
    if kelp::source::load_str("fuzz.yaml", &text, &mut c).is_err() {
        return;
    }
    let now = c.captured_at.unwrap_or_else(kelp_fuzz::fixed_now);
    kelp_fuzz::analyse_and_render(&c, now);
});
