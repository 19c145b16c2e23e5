//! The house rules, checked on the source itself: data flows one way (sources → model →
//! analysis → views), so a room imports only the rooms below it; the floors form no
//! cycle; and no file carries more than about 800 lines of non-test code.
//!
//! A room is a top-level module of `src/` (`src/analysis/**` is `analysis`); `error.rs`
//! belongs to the sources, whose errors it names. Test modules are not checked: a test may
//! load a fixture through the sources.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Each room and the rooms it may import. Anything not listed may import nothing.
const ALLOWED: &[(&str, &[&str])] = &[
    ("karpenter", &[]),
    ("listener", &[]),
    ("model", &["karpenter"]),
    ("findings", &["model", "karpenter"]),
    ("source", &["model", "karpenter", "findings"]),
    ("demo", &["source", "model"]),
    ("analysis", &["model", "karpenter", "findings"]),
    ("explain", &["analysis", "model", "karpenter", "findings"]),
    (
        "lint",
        &["analysis", "source", "model", "karpenter", "findings"],
    ),
    (
        "metrics",
        &["analysis", "source", "model", "karpenter", "findings"],
    ),
    (
        "web",
        &[
            "explain",
            "analysis",
            "source",
            "model",
            "karpenter",
            "findings",
        ],
    ),
    (
        "tui",
        &[
            "web",
            "explain",
            "analysis",
            "model",
            "karpenter",
            "findings",
        ],
    ),
    (
        "runtime",
        &[
            "metrics",
            "analysis",
            "source",
            "demo",
            "model",
            "karpenter",
            "findings",
        ],
    ),
    (
        "serve",
        &["runtime", "web", "metrics", "listener", "source", "model"],
    ),
];

/// Rooms that may import anything: the entry points.
const TOP: &[&str] = &["cli", "main", "lib", "bin"];

/// Non-test lines a file may have.
const MAX_LINES: usize = 800;

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

fn room(file: &Path) -> String {
    let rel = file.strip_prefix(src()).unwrap();
    let first = rel
        .components()
        .next()
        .unwrap()
        .as_os_str()
        .to_string_lossy();
    let name = first.trim_end_matches(".rs").to_string();
    if name == "error" {
        "source".into()
    } else {
        name
    }
}

/// The code before the first `#[cfg(test)]` item: tests come last in every file.
fn non_test(text: &str) -> &str {
    match text.find("\n#[cfg(test)]") {
        Some(i) => &text[..i],
        None => text,
    }
}

/// The rooms a piece of code names as `crate::room`.
fn imports(code: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut rest = code;
    while let Some(i) = rest.find("crate::") {
        rest = &rest[i + "crate::".len()..];
        let name: String = rest
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        // The crate root re-exports the sources' error type.
        let name = match name.as_str() {
            "error" | "Error" | "Result" => "source".to_string(),
            _ => name,
        };
        if !name.is_empty() {
            out.insert(name);
        }
    }
    out
}

#[test]
fn no_room_imports_a_room_above_it() {
    let allowed: BTreeMap<&str, &[&str]> = ALLOWED.iter().copied().collect();
    let mut all = Vec::new();
    files(&src(), &mut all);
    let mut wrong = Vec::new();
    for f in &all {
        let from = room(f);
        if TOP.contains(&from.as_str()) {
            continue;
        }
        let may = allowed
            .get(from.as_str())
            .unwrap_or_else(|| panic!("room {from} ({}) is not in ALLOWED", f.display()));
        let text = std::fs::read_to_string(f).unwrap();
        for to in imports(non_test(&text)) {
            if to != from && !may.contains(&to.as_str()) {
                wrong.push(format!("{} ({from}) imports crate::{to}", f.display()));
            }
        }
    }
    assert!(wrong.is_empty(), "backward arrows:\n{}", wrong.join("\n"));
}

#[test]
fn the_floors_form_no_cycle() {
    // Depth-first: a room on the current path met again is a cycle.
    let allowed: BTreeMap<&str, &[&str]> = ALLOWED.iter().copied().collect();
    fn visit<'a>(
        r: &'a str,
        g: &BTreeMap<&'a str, &'a [&'a str]>,
        path: &mut Vec<&'a str>,
        done: &mut BTreeSet<&'a str>,
    ) {
        assert!(!path.contains(&r), "cycle: {path:?} -> {r}");
        if done.contains(r) {
            return;
        }
        path.push(r);
        for next in g.get(r).copied().unwrap_or_default() {
            visit(next, g, path, done);
        }
        path.pop();
        done.insert(r);
    }
    let mut done = BTreeSet::new();
    for r in allowed.keys() {
        visit(r, &allowed, &mut Vec::new(), &mut done);
    }
    // And the checker itself catches one.
    let looped: BTreeMap<&str, &[&str]> = [("a", &["b"][..]), ("b", &["a"][..])].into();
    let caught =
        std::panic::catch_unwind(|| visit("a", &looped, &mut Vec::new(), &mut BTreeSet::new()));
    assert!(caught.is_err());
}

#[test]
fn no_file_is_over_the_line_limit() {
    let mut all = Vec::new();
    files(&src(), &mut all);
    let mut long: Vec<String> = all
        .iter()
        .filter_map(|f| {
            let n = non_test(&std::fs::read_to_string(f).unwrap())
                .lines()
                .count();
            (n > MAX_LINES).then(|| format!("{} has {n} lines of non-test code", f.display()))
        })
        .collect();
    long.sort();
    assert!(
        long.is_empty(),
        "over {MAX_LINES} lines:\n{}",
        long.join("\n")
    );
}

#[test]
fn the_import_reader_sees_what_it_must() {
    let code = "use crate::analysis::Pass;\nfn f() { crate::web::view::x(); }\n#[cfg(test)]\nmod tests { use crate::cli::x; }";
    let seen = imports(non_test(code));
    assert_eq!(
        seen,
        ["analysis", "web"].into_iter().map(String::from).collect()
    );
}
