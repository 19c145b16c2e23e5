//! The floor for `bench/doctor-vs-parse.sh`: map a JSON file and parse every byte of it with
//! serde_json into `IgnoredAny` (no tree, no projection), which is what any reader of the
//! dump must at least do. `cargo build --release --example raw_parse`.

use serde::de::IgnoredAny;
use serde::Deserialize;

fn main() {
    let Some(path) = std::env::args_os().nth(1) else {
        eprintln!("usage: raw_parse FILE.json");
        std::process::exit(2);
    };
    let file = std::fs::File::open(&path).unwrap_or_else(|e| {
        eprintln!("raw_parse: {}: {e}", path.to_string_lossy());
        std::process::exit(2)
    });
    // SAFETY: read only, and the benchmark's file is not changed while it runs.
    let map = unsafe { memmap2::Mmap::map(&file) }.unwrap_or_else(|e| {
        eprintln!("raw_parse: {}: {e}", path.to_string_lossy());
        std::process::exit(2)
    });
    let mut de = serde_json::Deserializer::from_slice(&map);
    let mut values = 0usize;
    while de.end().is_err() {
        if let Err(e) = IgnoredAny::deserialize(&mut de) {
            eprintln!("raw_parse: {}: {e}", path.to_string_lossy());
            std::process::exit(1);
        }
        values += 1;
    }
    println!("{values}");
}
