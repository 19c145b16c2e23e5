//! The `--metrics-file` reader (src/source/metrics.rs: Prometheus text exposition, read a
//! line at a time under its caps, raw bytes and all), and what a parsed scrape feeds: prices and offerings in the analysis and the dashboard.
#![no_main]

use std::sync::{LazyLock, Mutex};

use kelp::model::Cluster;
use libfuzzer_sys::fuzz_target;

/// The small dump, loaded once; each input swaps its own scrape in.
static SMALL: LazyLock<Mutex<Cluster>> = LazyLock::new(|| Mutex::new(kelp_fuzz::small()));

fuzz_target!(|data: &[u8]| {
    kelp_fuzz::catch_stack_overflow();
    let Ok(metrics) = kelp::source::metrics::parse_reader("fuzz.txt", data) else {
        return;
    };
    let mut c = SMALL.lock().unwrap_or_else(|e| e.into_inner());
    c.metrics = Some(metrics);
    kelp_fuzz::analyse_and_render(&c, kelp_fuzz::fixed_now());
    c.metrics = None;
});
