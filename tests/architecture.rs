//! The house rules, checked on the source itself: a room imports only the rooms [`ALLOWED`]
//! lists for it, which are on the floors below it; the floors form no cycle; and no file
//! carries more than about 800 lines of non-test code.
//!
//! Data flows one way (sources → model → analysis → views). The floors, bottom up:
//! Karpenter's rules (`karpenter`), the HTTP listeners (`listener`) and the allocator
//! (`heap`); the `model`; the
//! `findings` contract; the sources (`source`, which fill the model) beside the `analysis`
//! (which reads it), neither importing the other; the demo dump (`demo`, through the
//! sources); the views: `explain` over the analysis, `lint` and `metrics` over the
//! analysis and the sources; `view`, the view model the dashboard and the terminal both
//! read (over `explain` too); `web` and `tui` over it;
//! the process (`runtime`, then `serve`); and the entry points ([`TOP`]), which may import
//! anything. A room missing from the table fails the check. Some pairs are pinned apart by
//! tests of their own, whatever the table says: the web never imports `cli` or `serve`, the
//! terminal never the web, the view model neither; the analysis never imports `source`,
//! `web` or `metrics`. Inside a room, the files and sub-folders of one folder form no cycle.
//!
//! A room is a top-level module of `src/` (`src/analysis/**` is `analysis`); the crate
//! root's `Error` and `Result` are the sources' (`source/error.rs`). An import is any path
//! that names a room from the crate root: `crate::room`, each head of a group (`crate::{cli, web::x}`), and
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
        "view",
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
    (
        "web",
        &[
            "view",
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
            "view",
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
            "runtime", "web", "view", "metrics", "history", "listener", "source", "model",
        ],
    ),
];

/// Rooms that may import anything: the entry points, and the unit tests' builders
/// (`testing`, compiled for tests only).
const TOP: &[&str] = &["cli", "main", "lib", "bin", "testing"];

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
    first.trim_end_matches(".rs").to_string()
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
        "Error" | "Result" => "source".to_string(),
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
    // Nor the terminal the dashboard, nor the view model either of them.
    let wrong = pinned_apart("tui", &["web"]);
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    let wrong = pinned_apart("view", &["web", "tui"]);
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

// Inside a room: the files and sub-folders of one folder form no cycle.
//
// A folder's units are its child modules: each `x.rs` and each sub-folder `x/` (with its
// `x.rs` or `x/mod.rs`). A file of unit `u` that names a sibling unit `v` (`super::v::..`,
// `crate::room::..::v::..`, or an item the folder's module file re-exports from `v`) is an
// arrow u → v. The folder's module file itself is its face: its own items, and its arrows
// into its children, are not counted. Any cycle among one folder's units fails.

/// A module's path below the crate root: `src/analysis/disruption/state.rs` is
/// `[analysis, disruption, state]`, `src/analysis/disruption/mod.rs` `[analysis, disruption]`.
fn module_of(file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(src()).unwrap().with_extension("");
    let mut m: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if m.last()
        .is_some_and(|l| l == "mod" || l == "lib" || l == "main")
    {
        m.pop();
    }
    m
}

/// The paths at the start of `rest`: `a::b::c`, with groups `a::{b, c::{d, e}}` expanded.
fn paths_at(rest: &str) -> Vec<Vec<String>> {
    let mut prefix: Vec<String> = Vec::new();
    let mut s = rest.trim_start();
    loop {
        if let Some(group) = s.strip_prefix('{') {
            let mut out = Vec::new();
            for entry in entries(group) {
                for p in paths_at(entry) {
                    let mut full = prefix.clone();
                    full.extend(p.into_iter().filter(|x| x != "self"));
                    out.push(full);
                }
            }
            return out;
        }
        let name: String = s
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == '*')
            .collect();
        if name.is_empty() {
            break;
        }
        s = &s[name.len()..];
        prefix.push(name);
        match s.strip_prefix("::") {
            Some(r) => s = r.trim_start(),
            None => break,
        }
    }
    if prefix.is_empty() {
        Vec::new()
    } else {
        vec![prefix]
    }
}

/// The top-level entries of a `{..}` group whose opening brace is already consumed.
fn entries(group: &str) -> Vec<&str> {
    let (mut out, mut nested, mut start) = (Vec::new(), 0, 0);
    for (i, ch) in group.char_indices() {
        match ch {
            '{' => nested += 1,
            '}' if nested == 0 => {
                out.push(&group[start..i]);
                return out;
            }
            '}' => nested -= 1,
            ',' if nested == 0 => {
                out.push(&group[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out
}

/// Every absolute module path a piece of code in module `m` names: `crate::..`, `super::..`
/// (as many supers as written) and `self::..`.
fn named_paths(code: &str, m: &[String]) -> Vec<Vec<String>> {
    // A doc link names a module without depending on it: comments are not read.
    let code: String = code
        .lines()
        .map(|l| match l.find("//") {
            Some(i) => &l[..i],
            None => l,
        })
        .collect::<Vec<_>>()
        .join("\n");
    let code = code.as_str();
    let mut out = Vec::new();
    // A folder's module file is the folder itself: `super` and `self` start from there.
    let here: Vec<String> = m.to_vec();
    let bytes = code.as_bytes();
    let mut i = 0;
    while i < code.len() {
        let starts_word = i == 0
            || !(bytes[i - 1].is_ascii_alphanumeric()
                || bytes[i - 1] == b'_'
                || bytes[i - 1] == b':');
        let rest = &code[i..];
        if starts_word {
            if let Some(r) = rest.strip_prefix("crate::") {
                out.extend(paths_at(r));
                i += "crate::".len();
                continue;
            }
            if rest.starts_with("super::") {
                let mut r = rest;
                let mut base = here.clone();
                while let Some(next) = r.strip_prefix("super::") {
                    base.pop();
                    r = next;
                }
                for p in paths_at(r) {
                    let mut full = base.clone();
                    full.extend(p);
                    out.push(full);
                }
                i += rest.len() - r.len();
                continue;
            }
            if let Some(r) = rest.strip_prefix("self::") {
                for p in paths_at(r) {
                    let mut full = here.clone();
                    full.extend(p);
                    out.push(full);
                }
                i += "self::".len();
                continue;
            }
        }
        i += rest.chars().next().map_or(1, char::len_utf8);
    }
    out
}

/// The names a module file makes public at its top level: its own items, and what it
/// re-exports (`pub use x::{a, b}`, `pub use x::*` with x's own public names).
fn public_names(code: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for line in code.lines() {
        let Some(rest) = line
            .strip_prefix("pub ")
            .or_else(|| line.strip_prefix("pub(crate) "))
        else {
            continue;
        };
        let rest = rest
            .trim_start_matches("async ")
            .trim_start_matches("unsafe ");
        for kw in [
            "struct ", "enum ", "fn ", "type ", "trait ", "const ", "static ", "mod ",
        ] {
            if let Some(r) = rest.strip_prefix(kw) {
                let name: String = r
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                out.insert(name);
            }
        }
    }
    out
}

/// What a folder's module file re-exports, by name: the child unit each name comes from.
/// `pub use x::*` takes every public name of x's own module file.
fn reexports(module_file: &str, units: &BTreeMap<String, PathBuf>) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut rest = module_file;
    while let Some(i) = rest.find("use ") {
        let before = &rest[..i];
        let line_start = before.rfind('\n').map_or(0, |n| n + 1);
        let head = before[line_start..].trim();
        rest = &rest[i + "use ".len()..];
        if !(head == "pub" || head.starts_with("pub(")) {
            continue;
        }
        let statement = &rest[..rest.find(';').unwrap_or(rest.len())];
        for p in paths_at(statement) {
            let p: Vec<&String> = p.iter().filter(|x| *x != "self").collect();
            let (Some(first), Some(last)) = (p.first(), p.last()) else {
                continue;
            };
            let Some(file) = units.get(first.as_str()) else {
                continue;
            };
            if last.as_str() == "*" {
                let code = std::fs::read_to_string(file).unwrap_or_default();
                for name in public_names(non_test(&code)) {
                    out.insert(name, first.to_string());
                }
            } else {
                out.insert(last.to_string(), first.to_string());
            }
        }
    }
    out
}

/// A folder's units (child module name → its module file) and its own module file.
fn units_of(folder: &Path) -> (BTreeMap<String, PathBuf>, Option<PathBuf>) {
    let mut units = BTreeMap::new();
    for e in std::fs::read_dir(folder).unwrap() {
        let p = e.unwrap().path();
        let name = p.file_stem().unwrap().to_string_lossy().into_owned();
        if p.is_dir() {
            let file = if p.join("mod.rs").exists() {
                p.join("mod.rs")
            } else {
                p.with_extension("rs")
            };
            units.insert(name, file);
        } else if p.extension().is_some_and(|x| x == "rs")
            && !["mod", "tests", "lib", "main"].contains(&name.as_str())
        {
            units.entry(name).or_insert(p);
        }
    }
    let own = if folder.join("mod.rs").exists() {
        Some(folder.join("mod.rs"))
    } else if folder.with_extension("rs").exists() {
        Some(folder.with_extension("rs"))
    } else {
        None
    };
    (units, own)
}

/// Each folder below a room's top (`src/analysis`, `src/analysis/disruption`, ...) with its
/// arrows between units: (folder, from, to) → the files that make the arrow.
type Arrows = BTreeMap<(String, String, String), BTreeSet<String>>;

fn folder_arrows(
    files: &[(Vec<String>, String)],
    folders: &BTreeMap<Vec<String>, (BTreeMap<String, PathBuf>, BTreeMap<String, String>)>,
) -> Arrows {
    let mut arrows = Arrows::new();
    for (m, code) in files {
        for a in named_paths(code, m) {
            // The first segment where the two paths part: below it, the common folder.
            let Some(i) = (0..m.len().min(a.len())).find(|&i| m[i] != a[i]) else {
                continue;
            };
            let folder = &m[..i];
            if folder.is_empty() {
                continue; // rooms: the floors' rule
            }
            let Some((units, exported)) = folders.get(folder) else {
                continue;
            };
            let from = &m[i];
            let to = if units.contains_key(&a[i]) {
                a[i].clone()
            } else if let Some(u) = exported.get(&a[i]) {
                u.clone()
            } else {
                continue; // the folder's own item
            };
            if &to != from && units.contains_key(from) {
                arrows
                    .entry((folder.join("/"), from.clone(), to))
                    .or_default()
                    .insert(m.join("/"));
            }
        }
    }
    arrows
}

type Folders = BTreeMap<Vec<String>, (BTreeMap<String, PathBuf>, BTreeMap<String, String>)>;

/// Every folder of `src/` below the crate root, with its units and re-exports.
fn folders() -> Folders {
    fn walk(dir: &Path, out: &mut Folders) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                let (units, own) = units_of(&p);
                let code = own
                    .map(|f| std::fs::read_to_string(f).unwrap())
                    .unwrap_or_default();
                let exported = reexports(non_test(&code), &units);
                out.insert(module_of(&p.join("mod.rs")), (units, exported));
                walk(&p, out);
            }
        }
    }
    let mut out = Folders::new();
    walk(&src(), &mut out);
    out
}

/// The cycles among one folder's units: each set of units that reach one another, as
/// `folder/: a, b, c` with the arrows between them and the files that make each.
fn cycles(arrows: &Arrows) -> Vec<String> {
    let mut next: BTreeMap<(&str, &str), BTreeSet<&str>> = BTreeMap::new();
    for (folder, from, to) in arrows.keys() {
        next.entry((folder, from)).or_default().insert(to);
    }
    let reach = |folder: &str, from: &str| -> BTreeSet<String> {
        let mut seen = BTreeSet::new();
        let mut todo = vec![from.to_string()];
        while let Some(u) = todo.pop() {
            for v in next.get(&(folder, u.as_str())).into_iter().flatten() {
                if seen.insert(v.to_string()) {
                    todo.push(v.to_string());
                }
            }
        }
        seen
    };
    let mut out = Vec::new();
    let mut placed: BTreeSet<(String, String)> = BTreeSet::new();
    for (folder, from) in next.keys() {
        if placed.contains(&(folder.to_string(), from.to_string())) {
            continue;
        }
        let mine = reach(folder, from);
        if !mine.contains(*from) {
            continue;
        }
        // The units on a cycle with `from`: those it reaches that reach it back.
        let ring: BTreeSet<String> = mine
            .into_iter()
            .filter(|u| reach(folder, u).contains(*from))
            .collect();
        let mut text = format!(
            "{folder}/: {}",
            ring.iter()
                .map(String::as_str)
                .collect::<Vec<_>>()
                .join(", ")
        );
        for ((f, a, b), by) in arrows {
            if f == folder && ring.contains(a) && ring.contains(b) {
                let by: Vec<&str> = by.iter().map(String::as_str).collect();
                text.push_str(&format!("\n    {a} -> {b}: {}", by.join(", ")));
            }
        }
        for u in &ring {
            placed.insert((folder.to_string(), u.clone()));
        }
        out.push(text);
    }
    out
}

/// Every non-test file of `src/` with its module path and code.
fn modules() -> Vec<(Vec<String>, String)> {
    let mut all = Vec::new();
    files(&src(), &mut all);
    all.sort();
    all.into_iter()
        .map(|f| {
            let text = std::fs::read_to_string(&f).unwrap();
            (module_of(&f), code_of(&f, &text))
        })
        .collect()
}

#[test]
fn the_files_of_a_folder_form_no_cycle() {
    let arrows = folder_arrows(&modules(), &folders());
    // The reader sees arrows at all: the analysis's provisioning reads the model's pods
    // through its own folder's files.
    assert!(
        arrows.keys().any(|(f, _, _)| f == "analysis"),
        "no arrows read in analysis/"
    );
    let found = cycles(&arrows);
    assert!(
        found.is_empty(),
        "cycles between the files of a folder:\n{}",
        found.join("\n")
    );
}

#[test]
fn the_folder_reader_catches_a_cycle() {
    let m = |p: &str| -> Vec<String> { p.split('/').map(str::to_string).collect() };
    let unit = |names: &[&str]| -> BTreeMap<String, PathBuf> {
        names
            .iter()
            .map(|n| (n.to_string(), PathBuf::new()))
            .collect()
    };
    let mut folders = Folders::new();
    folders.insert(
        m("room/inner"),
        (
            unit(&["a", "b", "c", "sub"]),
            [("Thing".to_string(), "c".to_string())].into(),
        ),
    );
    let files = vec![
        (m("room/inner/a"), "use super::b::X;".to_string()),
        // A group, and an item its folder re-exports from c.
        (
            m("room/inner/b"),
            "use crate::room::{inner::{Thing, y}};".to_string(),
        ),
        (
            m("room/inner/c"),
            "fn f() { super::super::inner::a::g() }".to_string(),
        ),
        // A sub-folder's file is its unit's: sub -> a; the folder's own file is not counted.
        (
            m("room/inner/sub/deep"),
            "use super::super::a::Z;".to_string(),
        ),
        (
            m("room/inner"),
            "use self::b::X; use crate::room::inner::a;".to_string(),
        ),
    ];
    let arrows = folder_arrows(&files, &folders);
    let keys: Vec<String> = arrows
        .keys()
        .map(|(f, a, b)| format!("{f}:{a}->{b}"))
        .collect();
    assert_eq!(
        keys,
        [
            "room/inner:a->b",
            "room/inner:b->c",
            "room/inner:c->a",
            "room/inner:sub->a"
        ]
    );
    let found = cycles(&arrows);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        found[0].starts_with("room/inner/: a, b, c\n    a -> b: room/inner/a\n"),
        "{}",
        found[0]
    );
    // Broken at one arrow, there is none.
    let mut two = files.clone();
    two[2].1 = "fn f() {}".to_string();
    assert!(cycles(&folder_arrows(&two, &folders)).is_empty());
    // Paths with groups, and the re-exports of a module file: a name, a group, a glob.
    assert_eq!(
        paths_at("a::{b, c::{d, self}}::x"),
        [m("a/b"), m("a/c/d"), m("a/c")]
    );
    let dir = tempfile::tempdir().unwrap();
    let c = dir.path().join("c.rs");
    std::fs::write(
        &c,
        "pub struct Deep;\npub(crate) fn helper() {}\nfn private() {}\n",
    )
    .unwrap();
    let units: BTreeMap<String, PathBuf> = [
        ("a".to_string(), PathBuf::new()),
        ("b".to_string(), PathBuf::new()),
        ("c".to_string(), c),
    ]
    .into();
    let module = "mod a;\npub use a::One;\npub(crate) use self::b::{Two, three};\npub use c::*;\nuse a::Private;";
    let names: Vec<(String, String)> = reexports(module, &units).into_iter().collect();
    let pair = |n: &str, u: &str| (n.to_string(), u.to_string());
    assert_eq!(
        names,
        [
            pair("Deep", "c"),
            pair("One", "a"),
            pair("Two", "b"),
            pair("helper", "c"),
            pair("three", "b")
        ]
    );
}
