//! Instance-type catalogue files (src/source/catalog.rs: kelp's own `InstanceTypeCatalog`
//! in JSON or YAML, or a kwok provider instance-types list), and what a parsed catalogue
//! feeds: every pool's instance-type verdicts, the predicted launch, limits and
//! consolidation's replacement pricing, in the analysis and the dashboard.
#![no_main]

use std::sync::{Arc, LazyLock, Mutex};

use kelp::model::Cluster;
use libfuzzer_sys::fuzz_target;

/// The small dump, loaded once; each input swaps its own catalogue in.
static SMALL: LazyLock<Mutex<Cluster>> = LazyLock::new(|| Mutex::new(kelp_fuzz::small()));

fuzz_target!(|data: &[u8]| {
    kelp_fuzz::catch_stack_overflow();
    let text = String::from_utf8_lossy(data);
    let Ok(catalog) = kelp::source::catalog::parse(&text) else {
        return;
    };
    let mut c = SMALL.lock().unwrap_or_else(|e| e.into_inner());
    c.catalog = Some(Arc::new(catalog));
    kelp_fuzz::analyse_and_render(&c, kelp_fuzz::fixed_now());
    c.catalog = None;
});
