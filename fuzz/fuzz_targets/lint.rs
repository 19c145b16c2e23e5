//! `kelp lint` on one manifest (src/lint: the positional YAML/JSON reader, the checks,
//! inline suppressions and the SARIF rendering); the same text is also tried as a
//! `.kelp.yaml` config.
#![no_main]

use std::path::Path;

use kelp::lint::{self, Config, Input};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    kelp_fuzz::catch_stack_overflow();
    let inputs = [Input::from_bytes("fuzz.yaml", data.to_vec())];
    let report = lint::lint(&inputs, &Config::default());
    for r in &report.results {
        assert!(r.line >= 1, "result without a line: {r:?}");
    }
    let _ = serde_json::to_string(&lint::sarif::log(&report.results));

    if let Ok(config) = Config::parse(&inputs[0].text, Path::new(".kelp.yaml")) {
        let _ = lint::lint(&inputs, &config);
    }
});
