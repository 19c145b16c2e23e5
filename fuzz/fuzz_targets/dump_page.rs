//! A dump (src/source/dump.rs `load_str`: JSON or YAML, a `v1/List`, several documents)
//! into the model, then the analysis and the dashboard's page, at a fixed clock (the
//! dump's own `kelp.dev/captured-at` when it has one, as `--from` does).
#![no_main]

use kelp::model::Cluster;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    kelp_fuzz::catch_stack_overflow();
    let text = String::from_utf8_lossy(data);
    let mut c = Cluster::default();
    if kelp::source::load_str("fuzz.yaml", &text, &mut c).is_err() {
        return;
    }
    let now = c.captured_at.unwrap_or_else(kelp_fuzz::fixed_now);
    kelp_fuzz::analyse_and_render(&c, now);
});
