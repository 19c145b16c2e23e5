//! `kelp lint`: offline checks of NodePool and EC2NodeClass manifests (and the workloads
//! beside them) for GitOps CI. Inputs are files, folders or stdin; each is parsed with
//! positions ([`yaml`]), Karpenter objects and pod-bearing workloads are picked out, the
//! [`checks`] run over all of them together, and each hit becomes a [`LintResult`] with
//! the line of the offending field, after inline `# kelp:ignore RULE` comments and the
//! [`config`] (`.kelp.yaml`) have had their say. [`sarif`] renders results for code
//! scanning; [`rules`] describes every rule.

pub mod catalog;
pub mod checks;
pub mod config;
pub mod rules;
pub mod sarif;
pub mod yaml;

use std::path::{Path, PathBuf};

use serde::Serialize;

pub use config::Config;

use crate::findings::Severity;
use crate::source::limits;

/// What stops `kelp lint` from running at all (a file it cannot parse is a result instead).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A file or folder kelp cannot read: the library's own error for it.
    #[error(transparent)]
    Read(#[from] crate::source::error::Error),
    #[error("{path}: no *.yaml, *.yml or *.json files found")]
    NoFiles { path: PathBuf },
    #[error("{path}: {message}")]
    Config { path: PathBuf, message: String },
    /// A file over kelp's limits (its size: depth is a result like any parse error).
    #[error("{path}: {limit}")]
    Limit {
        path: PathBuf,
        limit: crate::source::limits::Limit,
    },
}

/// `path` cannot be read.
fn unreadable(path: PathBuf, source: std::io::Error) -> Error {
    Error::Read(crate::source::error::Error::Read { path, source })
}

/// At most [`limits::MAX_WHOLE_BYTES`] from `reader`, as an [`Input`] named `name`.
fn read_input(
    name: String,
    path: &Path,
    reader: impl std::io::Read,
    expected: u64,
) -> Result<Input, Error> {
    let bytes = limits::read_at_most(reader, limits::MAX_WHOLE_BYTES, expected)
        .map_err(|source| unreadable(path.to_path_buf(), source))?
        .ok_or_else(|| Error::Limit {
            path: path.to_path_buf(),
            limit: limits::Limit::FileSize,
        })?;
    Ok(Input::from_bytes(name, bytes))
}

/// One input: its name as shown in results, and its text.
#[derive(Debug, Clone)]
pub struct Input {
    pub name: String,
    pub text: String,
    /// Why the bytes are not text (invalid UTF-8), and the line where that starts.
    pub unreadable: Option<(usize, String)>,
}

impl Input {
    pub fn new(name: impl Into<String>, text: impl Into<String>) -> Self {
        Input {
            name: name.into(),
            text: text.into(),
            unreadable: None,
        }
    }

    /// From raw bytes: invalid UTF-8 becomes a parse error rather than a failure to run.
    pub fn from_bytes(name: impl Into<String>, bytes: Vec<u8>) -> Self {
        match String::from_utf8(bytes) {
            Ok(text) => Input::new(name, text),
            Err(e) => {
                let valid = &e.as_bytes()[..e.utf8_error().valid_up_to()];
                let line = valid.iter().filter(|b| **b == b'\n').count() + 1;
                Input {
                    name: name.into(),
                    text: String::from_utf8_lossy(valid).into_owned(),
                    unreadable: Some((line, "the file is not UTF-8 text".into())),
                }
            }
        }
    }
}

/// The name results use for standard input.
pub const STDIN: &str = "<stdin>";

/// Read files and folders (recursively: `*.yaml`, `*.yml`, `*.json`, sorted); `-` reads stdin.
pub fn read_inputs(paths: &[PathBuf]) -> Result<Vec<Input>, Error> {
    let mut out = Vec::new();
    for path in paths {
        if path.as_os_str() == "-" {
            out.push(read_input(STDIN.into(), path, std::io::stdin().lock(), 0)?);
            continue;
        }
        let files = crate::source::dump::manifest_files(path)
            .map_err(|(path, source)| unreadable(path, source))?;
        if files.is_empty() {
            return Err(Error::NoFiles { path: path.clone() });
        }
        for file in files {
            let read = |source| unreadable(file.clone(), source);
            let reader = std::fs::File::open(&file).map_err(read)?;
            let size = reader.metadata().map_err(read)?.len();
            out.push(read_input(file.display().to_string(), &file, reader, size)?);
        }
    }
    Ok(out)
}

/// One lint result: the JSON shape `{"rule", "severity", "file", "line", "message"}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LintResult {
    pub rule: String,
    pub severity: Severity,
    pub file: String,
    pub line: usize,
    pub message: String,
}

/// What one run found.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// The Karpenter release whose CRDs and rules the manifests were checked against.
    #[serde(rename = "karpenterVersion")]
    pub karpenter_version: crate::karpenter::version::Release,
    pub results: Vec<LintResult>,
    /// Files read and Karpenter objects or workloads checked, for the summary line.
    #[serde(skip)]
    pub files: usize,
    #[serde(skip)]
    pub objects: usize,
}

impl Report {
    pub fn worst(&self) -> Option<Severity> {
        self.results.iter().map(|r| r.severity).max()
    }
    pub fn count(&self, s: Severity) -> usize {
        self.results.iter().filter(|r| r.severity == s).count()
    }
}

/// The documents of a `List` (or a JSON array) are linted as objects of their own.
fn flatten<'a>(node: &'a yaml::Node, out: &mut Vec<&'a yaml::Node>) {
    match &node.value {
        yaml::Value::Seq(items) => items.iter().for_each(|i| flatten(i, out)),
        yaml::Value::Map(_) => {
            let is_list = node
                .get("kind")
                .and_then(yaml::Node::as_str)
                .is_some_and(|k| k.ends_with("List"));
            match node.get("items") {
                Some(items) if is_list => items.items().iter().for_each(|i| flatten(i, out)),
                _ => out.push(node),
            }
        }
        _ => {}
    }
}

/// Rule ids a `kelp:ignore` comment on this line names.
fn ignored_on(line: &str) -> Option<Vec<&str>> {
    let comment = &line[line.find('#')?..];
    let rest = &comment[comment.find("kelp:ignore")? + "kelp:ignore".len()..];
    Some(
        rest.split(|c: char| c == ',' || c.is_whitespace())
            .filter(|s| !s.is_empty())
            .collect(),
    )
}

/// Whether `# kelp:ignore RULE` sits on the line, or in the comment lines right above it.
pub fn suppressed(text: &str, line: usize, rule: &str) -> bool {
    let lines: Vec<&str> = text.lines().collect();
    let names = |l: &str| ignored_on(l).is_some_and(|ids| ids.contains(&rule));
    if line == 0 || line > lines.len() {
        return false;
    }
    if names(lines[line - 1]) {
        return true;
    }
    lines[..line - 1]
        .iter()
        .rev()
        .take_while(|l| l.trim_start().starts_with('#'))
        .any(|l| names(l))
}

/// Lint every input together.
pub fn lint(inputs: &[Input], config: &Config) -> Report {
    let mut hits = Vec::new();
    let mut parsed = Vec::new();
    for (i, input) in inputs.iter().enumerate() {
        if let Some((line, why)) = &input.unreadable {
            hits.push(checks::Hit {
                rule: rules::PARSE_ERROR,
                file: i,
                line: *line,
                message: format!("{why}: save it as UTF-8"),
            });
            continue;
        }
        match yaml::parse(&input.text) {
            Ok(docs) => parsed.push((i, docs)),
            Err(e) => hits.push(checks::Hit {
                rule: rules::PARSE_ERROR,
                file: i,
                line: e.line,
                message: if e.over_limit {
                    format!("{}; kelp checks nothing in this file", e.message)
                } else {
                    format!(
                        "not valid YAML or JSON: {}; fix the syntax at this line",
                        e.message
                    )
                },
            }),
        }
    }
    let mut objects = Vec::new();
    for (i, docs) in &parsed {
        let mut nodes = Vec::new();
        for d in docs {
            flatten(d, &mut nodes);
        }
        objects.extend(
            nodes
                .into_iter()
                .filter_map(|n| checks::Obj::new(*i, n))
                .filter(checks::is_relevant),
        );
    }
    let target = config.target();
    hits.extend(checks::run(&objects, &target));
    let mut results: Vec<LintResult> = hits
        .into_iter()
        .filter_map(|h| {
            let input = &inputs[h.file];
            let rule = rules::rule(h.rule)?;
            if suppressed(&input.text, h.line, h.rule) {
                return None;
            }
            let severity = config.severity(h.rule, rule.severity, &input.name)?;
            Some(LintResult {
                rule: h.rule.to_string(),
                severity,
                file: input.name.clone(),
                line: h.line,
                message: h.message,
            })
        })
        .collect();
    results.sort_by(|a, b| {
        (&a.file, a.line, &a.rule, &a.message).cmp(&(&b.file, b.line, &b.rule, &b.message))
    });
    results.dedup();
    Report {
        results,
        karpenter_version: target,
        files: inputs.len(),
        objects: objects.len(),
    }
}

/// Lint text as if it were one file (for tests and embedding).
pub fn lint_str(name: &str, text: &str) -> Report {
    lint(&[Input::new(name, text)], &Config::default())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ignore_comments_on_the_line_or_in_the_comment_block_above() {
        let text = "a: 1 # kelp:ignore r1, r2\n# kelp:ignore r3\n# other words\nb: 2\nc: 3\n";
        assert!(suppressed(text, 1, "r1") && suppressed(text, 1, "r2"));
        assert!(!suppressed(text, 1, "r3"));
        assert!(suppressed(text, 4, "r3"));
        assert!(
            !suppressed(text, 5, "r3"),
            "only the comment lines right above count"
        );
        assert!(!suppressed(text, 99, "r1"));
    }

    #[test]
    fn lists_are_flattened_and_other_kinds_skipped() {
        let text = "apiVersion: v1\nkind: List\nitems:\n- apiVersion: karpenter.sh/v1beta1\n  kind: NodePool\n  metadata: {name: a}\n- apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: b}\n";
        let r = lint_str("l.yaml", text);
        assert_eq!(r.objects, 1);
        assert_eq!(r.results.len(), 1);
        assert_eq!(
            (r.results[0].rule.as_str(), r.results[0].line),
            ("deprecated-api-version", 4)
        );
    }

    #[test]
    fn bytes_that_are_not_text_are_a_parse_error_at_their_line() {
        let input = Input::from_bytes("bin.yaml", b"kind: NodePool\nspec: \xff\xfe\n".to_vec());
        let r = lint(&[input], &Config::default());
        assert_eq!(r.results.len(), 1);
        assert_eq!(
            (r.results[0].rule.as_str(), r.results[0].line),
            ("parse-error", 2)
        );
    }

    #[test]
    fn a_file_that_does_not_parse_is_a_result() {
        let r = lint_str("bad.yaml", "kind: NodePool\nspec:\n  limits: [\n");
        assert_eq!(r.results.len(), 1);
        assert_eq!(r.results[0].rule, "parse-error");
        assert_eq!(r.results[0].severity, Severity::Critical);
        assert!(r.results[0].line >= 3);
    }
}
