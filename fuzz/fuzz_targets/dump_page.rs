//! A dump (src/source/dump.rs `load_str`: JSON or YAML, a `v1/List`, several documents)
//! into the model, then the analysis and the dashboard's page, at a fixed clock (the
//! dump's own `kelp.dev/captured-at` when it has one, as `--from` does). JSON is also
//! loaded from a file, as `--from FILE.json` streams it; and from text with every part
//! parsed as it comes, which must load the same objects or fail with the same error as the
//! parts replicas share read once per distinct text (src/model/memo.rs).
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
    let once = kelp::source::load_str("fuzz.yaml", &text, &mut c);
    // The parts replicas share, read once per distinct text, load as parsed each time:
    // the same objects, or the same error (line and column included).
    let mut each = Cluster::default();
    let parsed = kelp::source::load_str_parsing_each_part("fuzz.yaml", &text, &mut each);
    match (&once, &parsed) {
        (Ok(a), Ok(b)) => {
            assert_eq!(a, b);
            assert!(c.pods == each.pods, "the pods differ");
            assert!(c.nodes == each.nodes, "the nodes differ");
            assert!(c.nodeclaims == each.nodeclaims, "the claims differ");
        }
        (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string()),
        _ => panic!("read once: {once:?}; parsed each: {parsed:?}"),
    }
    if once.is_err() {
        return;
    }
    let now = c.captured_at.unwrap_or_else(kelp_fuzz::fixed_now);
    kelp_fuzz::analyse_and_render(&c, now);
});
