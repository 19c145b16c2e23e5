//! The house rules, checked on the source itself: a room imports only the rooms [`ALLOWED`]
//! lists for it, which are on the floors below it; the floors form no cycle; and no file
//! carries more than about 800 lines of non-test code.
//!
//! Data flows one way (sources → model → analysis → views). The floors, bottom up:
//! Karpenter's rules (`karpenter`), the HTTP listeners (`listener`) and the allocator
//! (`heap`); the `model`; the
//! `findings` contract; the sources (`source`, which fill the model) beside the `analysis`
//! (which reads it), neither importing the other; the demo dump (`demo`, through the
//! sources); the views: `explain` over the analysis, `lint`, `metrics` and `web` over the
//! analysis and the sources (the web also over `explain`), `tui` over the web's view model;
//! the process (`runtime`, then `serve`); and the entry points ([`TOP`]), which may import
//! anything. A room missing from the table fails the check. Some pairs are pinned apart by
//! tests of their own, whatever the table says: the web never imports `cli` or `serve`; the
//! analysis never imports `source`, `web` or `metrics`.
//!
//! A room is a top-level module of `src/` (`src/analysis/**` is `analysis`); `error.rs`
//! belongs to the sources, whose errors it names. An import is any path that names a room
//! from the crate root: `crate::room`, each head of a group (`crate::{cli, web::x}`), and
//! `super::room` from a room's top-level file (`super::super::room` one folder down, and so
//! on). Test modules are not checked: a test may load a fixture through the sources.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Each room and the rooms it may import; every room but the entry points is listed.
const ALLOWED: &[(&str, &[&str])] = &[
    ("karpenter", &[]),
    ("listener", &[]),
    ("heap", &[]),
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
            "history",
            "analysis",
            "source",
            "model",
            "karpenter",
            "findings",
        ],
    ),
    ("history", &["analysis", "model", "karpenter", "findings"]),
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
        &[
            "runtime", "web", "metrics", "history", "listener", "source", "model",
        ],
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

/// A file's non-test code: none for a `tests.rs`, a module of tests its parent declares
/// under `#[cfg(test)]` ([`test_files_are_declared_as_tests`] holds them to that).
fn code_of(file: &Path, text: &str) -> String {
    if file.file_name().is_some_and(|n| n == "tests.rs") {
        String::new()
    } else {
        non_test(text).to_string()
    }
}

/// The module file that declares `dir/tests.rs`: `dir.rs` or `dir/mod.rs`.
fn parent_of_tests(file: &Path) -> PathBuf {
    let dir = file.parent().unwrap();
    let beside = dir.with_extension("rs");
    if beside.exists() {
        beside
    } else {
        dir.join("mod.rs")
    }
}

#[test]
fn test_files_are_declared_as_tests() {
    let mut all = Vec::new();
    files(&src(), &mut all);
    let loose: Vec<String> = all
        .iter()
        .filter(|f| f.file_name().is_some_and(|n| n == "tests.rs"))
        .filter(|f| {
            let parent = std::fs::read_to_string(parent_of_tests(f)).unwrap_or_default();
            !parent.contains("#[cfg(test)]\nmod tests;")
        })
        .map(|f| f.display().to_string())
        .collect();
    assert!(
        loose.is_empty(),
        "tests.rs files whose parent does not declare `#[cfg(test)] mod tests;`: {loose:?}"
    );
}

/// How deep a file's module is below the crate root: `src/web/mod.rs` and `src/findings.rs`
/// are 1 (their `super` is the crate root), `src/web/view/capacity.rs` is 3.
fn depth(file: &Path) -> usize {
    let rel = file.strip_prefix(src()).unwrap();
    let n = rel.components().count();
    if rel.file_name().is_some_and(|f| f == "mod.rs") {
        n - 1
    } else {
        n
    }
}

/// The rooms a piece of code names from the crate root: `crate::room`, the heads of a group
/// `crate::{a, b::c}`, and, for code `depth` modules down, `super::room` with `depth` supers.
fn imports(code: &str, depth: usize) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut rest = code;
    while let Some(i) = rest.find("crate::") {
        rest = &rest[i + "crate::".len()..];
        heads(rest, &mut out);
    }
    let mut at = 0;
    while let Some(i) = code[at..].find("super::") {
        let start = at + i;
        at = start + "super::".len();
        // Only the first `super` of a chain (`super::super::x`), and not `xsuper::`.
        let before = &code[..start];
        if before.ends_with("::") || before.ends_with(|c: char| c.is_alphanumeric() || c == '_') {
            continue;
        }
        let mut supers = 1;
        let mut rest = &code[at..];
        while let Some(r) = rest.strip_prefix("super::") {
            supers += 1;
            rest = r;
        }
        if supers == depth {
            heads(rest, &mut out);
        }
    }
    out
}

/// The first name of the path at the start of `rest`, or of each path in the group there.
fn heads(rest: &str, out: &mut BTreeSet<String>) {
    let rest = rest.trim_start();
    let Some(group) = rest.strip_prefix('{') else {
        add(rest, out);
        return;
    };
    let mut nested = 0;
    let mut entry = true;
    for (i, ch) in group.char_indices() {
        match ch {
            '{' => nested += 1,
            '}' if nested == 0 => break,
            '}' => nested -= 1,
            ',' if nested == 0 => entry = true,
            c if entry && !c.is_whitespace() => {
                entry = false;
                add(&group[i..], out);
            }
            _ => {}
        }
    }
}

fn add(path: &str, out: &mut BTreeSet<String>) {
    let name: String = path
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
        .collect();
    // The crate root re-exports the sources' error type.
    let name = match name.as_str() {
        "error" | "Error" | "Result" => "source".to_string(),
        _ => name,
    };
    if !name.is_empty() && name != "self" {
        out.insert(name);
    }
}

/// Every non-test file of `src/` with its room and the rooms it imports.
fn all_imports() -> Vec<(PathBuf, String, BTreeSet<String>)> {
    let mut all = Vec::new();
    files(&src(), &mut all);
    all.sort();
    all.into_iter()
        .map(|f| {
            let text = std::fs::read_to_string(&f).unwrap();
            let to = imports(&code_of(&f, &text), depth(&f));
            let from = room(&f);
            (f, from, to)
        })
        .collect()
}

/// Where a room imports each of `never`, whatever [`ALLOWED`] says.
fn pinned_apart(from: &str, never: &[&str]) -> Vec<String> {
    let rooms = all_imports();
    let files: Vec<_> = rooms.iter().filter(|(_, r, _)| r == from).collect();
    assert!(!files.is_empty(), "no files in room {from}");
    assert!(
        files.iter().any(|(_, _, to)| to.contains("model")),
        "the import reader sees nothing {from} imports"
    );
    files
        .iter()
        .flat_map(|(f, _, to)| {
            never
                .iter()
                .filter(|n| to.contains(**n))
                .map(move |n| format!("{} ({from}) imports crate::{n}", f.display()))
        })
        .collect()
}

#[test]
fn no_room_imports_a_room_above_it() {
    let allowed: BTreeMap<&str, &[&str]> = ALLOWED.iter().copied().collect();
    let mut wrong = Vec::new();
    for (f, from, imported) in all_imports() {
        if TOP.contains(&from.as_str()) {
            continue;
        }
        let may = allowed
            .get(from.as_str())
            .unwrap_or_else(|| panic!("room {from} ({}) is not in ALLOWED", f.display()));
        for to in imported {
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
            let n = code_of(f, &std::fs::read_to_string(f).unwrap())
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
fn the_web_never_imports_cli_or_serve() {
    let wrong = pinned_apart("web", &["cli", "serve"]);
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn the_analysis_never_imports_the_sources_the_web_or_metrics() {
    let wrong = pinned_apart("analysis", &["source", "web", "metrics"]);
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn the_import_reader_sees_what_it_must() {
    let set =
        |names: &[&str]| -> BTreeSet<String> { names.iter().map(|s| s.to_string()).collect() };
    let code = "use crate::analysis::Pass;\nfn f() { crate::web::view::x(); }\n#[cfg(test)]\nmod tests { use crate::cli::x; }";
    assert_eq!(imports(non_test(code), 2), set(&["analysis", "web"]));
    // Groups, nested groups, `self`, and the crate root's error type.
    let code = "use crate::{\n    cli,\n    web::{view::{a, b}, pane},\n    self, Result,\n};";
    assert_eq!(imports(code, 2), set(&["cli", "web", "source"]));
    // `super::` reaches the crate root from a room's top-level file only, or with as many
    // supers as the file is deep.
    let code =
        "use super::serve::x;\nuse super::{cli, model::Cluster};\nuse super::super::metrics;";
    assert_eq!(imports(code, 1), set(&["serve", "cli", "model"]));
    assert_eq!(imports(code, 2), set(&["metrics"]));
    assert_eq!(imports("use super::super::super::{web};", 3), set(&["web"]));
    assert!(imports(
        "pub(super) fn f() {} use super::Context; use self::super::x;",
        2
    )
    .is_empty());
    // And each file's depth.
    assert_eq!(depth(&src().join("web/mod.rs")), 1);
    assert_eq!(depth(&src().join("findings.rs")), 1);
    assert_eq!(depth(&src().join("web/view/capacity.rs")), 3);
}
