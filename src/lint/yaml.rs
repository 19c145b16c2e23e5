//! Manifests as a tree that remembers where each key and value sits: `saphyr`'s parser
//! reads the YAML (JSON is read as YAML's flow style), and kelp builds a small owned tree
//! from its events with the 1-based line of every node and every mapping key, so a lint
//! result can point at the offending field rather than at the document. The parser is driven
//! event by event under kelp's depth limit ([`limits::yaml_events`]), so no input nests
//! deeper than [`limits::MAX_DEPTH`] in any tree here (every walk of them recurses).

use saphyr::Scalar;
use saphyr_parser::{Event, Span};

use crate::source::limits::{self, YamlStop};

/// One node and the line it starts on.
#[derive(Debug, Clone, PartialEq)]
pub struct Node {
    pub line: usize,
    pub value: Value,
}

/// A mapping entry: the key, the line the key is on, and its value.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    pub key: String,
    pub line: usize,
    pub value: Node,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    Seq(Vec<Node>),
    Map(Vec<Entry>),
}

/// A file that does not parse: where, and what the parser said (or which of kelp's
/// limits it is over: then it may well be valid YAML).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    pub line: usize,
    pub message: String,
    pub over_limit: bool,
}

/// Every document in `text` (a YAML stream, or JSON), with positions. The tree is built
/// straight from the parser's events, one node per event, with no tree of the parser's
/// own beside it (saphyr's marked loader held one of its own, about twice the size).
pub fn parse(text: &str) -> Result<Vec<Node>, ParseError> {
    let mut tree = Builder::default();
    limits::yaml_events(text, |event, span| tree.on(event, span)).map_err(|stop| match stop {
        YamlStop::Limit(limit) => ParseError {
            line: limit.line().unwrap_or(1),
            message: limit.what(),
            over_limit: true,
        },
        YamlStop::Syntax { line, message } => ParseError {
            line,
            message,
            over_limit: false,
        },
        YamlStop::Duplicate { line, key, first } => ParseError {
            line,
            message: format!("mapping key {key:?} is given twice (first on line {first})"),
            over_limit: false,
        },
    })?;
    Ok(tree.docs)
}

/// The most nodes aliases may add to a file, in all (saphyr's loader's own budget, which
/// keeps a "billion laughs" of nested aliases from growing without end).
const ALIAS_BUDGET: usize = 100_000;

/// A collection being built: its line, its anchor, and what it holds so far (a mapping's
/// key waits, with its line, for its value).
struct Open {
    line: usize,
    anchor: usize,
    items: Vec<Node>,
    entries: Option<(Vec<Entry>, Option<(String, usize)>)>,
}

/// Builds [`Node`]s from saphyr's events, as its marked loader did: the
/// same scalars (saphyr's own reading of each), lines, empty documents and aliases.
struct Builder {
    open: Vec<Open>,
    docs: Vec<Node>,
    anchors: std::collections::HashMap<usize, Node>,
    budget: usize,
    /// The current document has its node.
    rooted: bool,
}

impl Default for Builder {
    fn default() -> Self {
        Builder {
            open: Vec::new(),
            docs: Vec::new(),
            anchors: Default::default(),
            budget: ALIAS_BUDGET,
            rooted: false,
        }
    }
}

impl Builder {
    fn on(&mut self, event: Event, span: Span) -> Result<(), YamlStop> {
        let line = span.start.line().max(1);
        match event {
            Event::DocumentStart(_) => self.rooted = false,
            Event::DocumentEnd => {
                if !self.rooted {
                    self.docs.push(Node {
                        line,
                        value: Value::Null,
                    });
                }
            }
            Event::SequenceStart(anchor, _) => self.open.push(Open {
                line,
                anchor,
                items: Vec::new(),
                entries: None,
            }),
            Event::MappingStart(anchor, _) => self.open.push(Open {
                line,
                anchor,
                items: Vec::new(),
                entries: Some((Vec::new(), None)),
            }),
            Event::SequenceEnd | Event::MappingEnd => {
                if let Some(o) = self.open.pop() {
                    let value = match o.entries {
                        Some((mut entries, _)) => {
                            entries.shrink_to_fit();
                            Value::Map(entries)
                        }
                        None => {
                            let mut items = o.items;
                            items.shrink_to_fit();
                            Value::Seq(items)
                        }
                    };
                    self.insert(
                        Node {
                            line: o.line,
                            value,
                        },
                        o.anchor,
                    );
                }
            }
            Event::Scalar(v, style, anchor, tag) => {
                let value = Scalar::parse_from_cow_and_metadata(v, style, tag.as_ref())
                    .map_or(Value::Null, |s| scalar(&s));
                self.insert(Node { line, value }, anchor);
            }
            Event::Alias(id) => {
                let node = match self.anchors.get(&id) {
                    Some(n) => {
                        if !within(n, &mut self.budget) {
                            return Err(YamlStop::Syntax {
                                line,
                                message: "alias expansion exceeded the maximum node budget (possible billion-laughs attack)".into(),
                            });
                        }
                        Node {
                            line,
                            value: n.value.clone(),
                        }
                    }
                    None => Node {
                        line,
                        value: Value::Null,
                    },
                };
                self.insert(node, 0);
            }
            Event::Nothing | Event::StreamStart | Event::StreamEnd => {}
        }
        Ok(())
    }

    /// A finished node: into the open collection (a mapping's key or value), or the
    /// document's node; kept by its anchor for the aliases after it.
    fn insert(&mut self, node: Node, anchor: usize) {
        if anchor != 0 {
            self.anchors.insert(anchor, node.clone());
        }
        match self.open.last_mut() {
            None => {
                self.docs.push(node);
                self.rooted = true;
            }
            Some(Open {
                entries: Some((entries, key)),
                ..
            }) => match key.take() {
                None => *key = Some((key_text(node.value), node.line)),
                Some((k, line)) => entries.push(Entry {
                    key: k,
                    line,
                    value: node,
                }),
            },
            Some(o) => o.items.push(node),
        }
    }
}

/// Whether `n`'s nodes fit in what is left of the alias budget (taken from it if so).
fn within(n: &Node, budget: &mut usize) -> bool {
    if *budget == 0 {
        return false;
    }
    *budget -= 1;
    match &n.value {
        Value::Seq(items) => items.iter().all(|i| within(i, budget)),
        Value::Map(entries) => entries.iter().all(|e| {
            if *budget == 0 {
                return false;
            }
            *budget -= 1;
            within(&e.value, budget)
        }),
        _ => true,
    }
}

fn scalar(s: &Scalar) -> Value {
    match s {
        Scalar::Null => Value::Null,
        Scalar::Boolean(b) => Value::Bool(*b),
        Scalar::Integer(i) => Value::Int(*i),
        Scalar::FloatingPoint(f) => Value::Float(f.into_inner()),
        Scalar::String(s) => Value::Str(s.to_string()),
    }
}

fn key_text(k: Value) -> String {
    match k {
        Value::Str(s) => s,
        other => Node {
            line: 0,
            value: other,
        }
        .scalar_text()
        .unwrap_or_default(),
    }
}

impl Node {
    /// The mapping entry for `key`.
    pub fn entry(&self, key: &str) -> Option<&Entry> {
        match &self.value {
            Value::Map(entries) => entries.iter().find(|e| e.key == key),
            _ => None,
        }
    }

    pub fn get(&self, key: &str) -> Option<&Node> {
        self.entry(key).map(|e| &e.value)
    }

    /// Follow a path of mapping keys.
    pub fn at(&self, path: &[&str]) -> Option<&Node> {
        path.iter().try_fold(self, |n, k| n.get(k))
    }

    /// The line of the last key of `path`, when the whole path exists.
    pub fn key_line(&self, path: &[&str]) -> Option<usize> {
        let (last, parent) = path.split_last()?;
        self.at(parent)?.entry(last).map(|e| e.line)
    }

    /// Where to point for something missing at `path`: the line of the deepest key of the
    /// path that exists, else the node's own line.
    pub fn anchor(&self, path: &[&str]) -> usize {
        let mut line = self.line;
        let mut node = self;
        for k in path {
            match node.entry(k) {
                Some(e) => {
                    line = e.line;
                    node = &e.value;
                }
                None => break,
            }
        }
        line
    }

    pub fn as_str(&self) -> Option<&str> {
        match &self.value {
            Value::Str(s) => Some(s),
            _ => None,
        }
    }

    /// A boolean as kubectl and Helm read one: they convert YAML with `sigs.k8s.io/yaml`,
    /// which keeps YAML 1.1's words, so a plain `yes`, `on` or `y` is true and `no`, `off`
    /// or `n` false, where YAML 1.2 (and this parser) reads them as strings. A quoted
    /// `"yes"` reads the same here: the parser does not say how a scalar was written.
    pub fn as_bool_yaml11(&self) -> Option<bool> {
        match &self.value {
            Value::Bool(b) => Some(*b),
            Value::Str(s) => match s.as_str() {
                "y" | "Y" | "yes" | "Yes" | "YES" | "on" | "On" | "ON" => Some(true),
                "n" | "N" | "no" | "No" | "NO" | "off" | "Off" | "OFF" => Some(false),
                _ => None,
            },
            _ => None,
        }
    }

    /// A scalar as text, whatever YAML type it resolved to (`nodes: 0` reads as "0").
    pub fn scalar_text(&self) -> Option<String> {
        match &self.value {
            Value::Str(s) => Some(s.clone()),
            Value::Int(i) => Some(i.to_string()),
            Value::Float(f) => Some(f.to_string()),
            Value::Bool(b) => Some(b.to_string()),
            _ => None,
        }
    }

    pub fn as_i64(&self) -> Option<i64> {
        match &self.value {
            Value::Int(i) => Some(*i),
            Value::Str(s) => s.trim().parse().ok(),
            _ => None,
        }
    }

    pub fn items(&self) -> &[Node] {
        match &self.value {
            Value::Seq(items) => items,
            _ => &[],
        }
    }

    pub fn entries(&self) -> &[Entry] {
        match &self.value {
            Value::Map(entries) => entries,
            _ => &[],
        }
    }

    pub fn is_null(&self) -> bool {
        matches!(self.value, Value::Null)
    }

    /// The value as JSON, to deserialise into kelp's typed projections.
    pub fn to_json(&self) -> serde_json::Value {
        use serde_json::Value as J;
        match &self.value {
            Value::Null => J::Null,
            Value::Bool(b) => J::Bool(*b),
            Value::Int(i) => J::from(*i),
            Value::Float(f) => serde_json::Number::from_f64(*f).map_or(J::Null, J::Number),
            Value::Str(s) => J::String(s.clone()),
            Value::Seq(items) => J::Array(items.iter().map(Node::to_json).collect()),
            Value::Map(entries) => J::Object(
                entries
                    .iter()
                    .map(|e| (e.key.clone(), e.value.to_json()))
                    .collect(),
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The tree as saphyr's own marked loader builds it, converted as kelp did before it
    /// built its tree from the events: the oracle for [`parse`].
    fn by_saphyrs_loader(text: &str) -> Option<Vec<Node>> {
        use saphyr::{MarkedYaml, YamlData, YamlLoader};
        use saphyr_parser::{Parser, SpannedEventReceiver};
        fn convert(y: &MarkedYaml) -> Node {
            let line = y.span.start.line().max(1);
            let value = match &y.data {
                YamlData::Value(s) => scalar(s),
                YamlData::Representation(s, _, _) => Value::Str(s.to_string()),
                YamlData::Sequence(items) => Value::Seq(items.iter().map(convert).collect()),
                YamlData::Mapping(map) => Value::Map(
                    map.iter()
                        .map(|(k, v)| Entry {
                            key: key_text(convert(k).value),
                            line: k.span.start.line().max(1),
                            value: convert(v),
                        })
                        .collect(),
                ),
                YamlData::Tagged(_, inner) => return convert(inner),
                YamlData::Alias(_) | YamlData::BadValue => Value::Null,
            };
            Node { line, value }
        }
        let mut loader = YamlLoader::<MarkedYaml>::default();
        for event in Parser::new_from_str(text) {
            let (event, span) = event.ok()?;
            loader.on_event(event, span);
        }
        if loader.error().is_some() {
            return None;
        }
        Some(loader.into_documents().iter().map(convert).collect())
    }

    #[test]
    fn the_tree_is_the_one_saphyrs_loader_builds_for_every_yaml_in_the_repository() {
        let mut files = Vec::new();
        let mut dirs = vec![std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))];
        while let Some(d) = dirs.pop() {
            for e in std::fs::read_dir(&d).unwrap().flatten() {
                let p = e.path();
                let name = p.file_name().unwrap().to_string_lossy().into_owned();
                if p.is_dir()
                    && !name.starts_with('.')
                    && name != "target"
                    && name != "node_modules"
                {
                    dirs.push(p);
                } else if name.ends_with(".yaml") || name.ends_with(".yml") {
                    files.push(p);
                }
            }
        }
        assert!(files.len() > 150, "{} files", files.len());
        let mut compared = 0;
        for f in &files {
            let text = std::fs::read_to_string(f).unwrap();
            if let (Some(want), Ok(got)) = (by_saphyrs_loader(&text), parse(&text)) {
                assert_eq!(got, want, "{}", f.display());
                compared += 1;
            }
        }
        assert!(compared > 150, "{compared} compared");
        for text in [
            "a: &x {b: [1, 2.5, true, ~, 'q']}\nc: *x\nd: !!str 12\n---\n---\n",
            "- [a, {b: c}]\n- !!int nope\n- \"x\"\n- |\n  block\n",
            "{1: a, [x]: b, null: c}\n",
        ] {
            assert_eq!(parse(text).ok(), by_saphyrs_loader(text), "{text}");
        }
        // Where the loader loses a line (a node under a tag of its own: line 1), the
        // events still have it.
        let docs = parse("a: 1\ne: !custom 3\n").unwrap();
        let e = docs[0].entry("e").unwrap();
        assert_eq!((e.line, e.value.line, e.value.as_i64()), (2, 2, Some(3)));
    }

    #[test]
    fn keys_and_values_know_their_lines_across_documents() {
        let text = "a: 1\n---\n# comment\nkind: NodePool\nspec:\n  limits:\n    cpu: \"100\"\n  list:\n    - x\n    - key: y\n";
        let docs = parse(text).unwrap();
        assert_eq!(docs.len(), 2);
        let d = &docs[1];
        assert_eq!(d.key_line(&["kind"]), Some(4));
        assert_eq!(d.key_line(&["spec", "limits", "cpu"]), Some(7));
        assert_eq!(
            d.at(&["spec", "limits", "cpu"]).unwrap().as_str(),
            Some("100")
        );
        let items = d.at(&["spec", "list"]).unwrap().items();
        assert_eq!((items[0].line, items[1].line), (9, 10));
        assert_eq!(d.anchor(&["spec", "limits", "memory"]), 6);
        assert_eq!(d.anchor(&["status"]), d.line);
    }

    #[test]
    fn json_is_read_with_lines_too() {
        let docs =
            parse("{\n  \"kind\": \"NodePool\",\n  \"spec\": {\"weight\": 10}\n}\n").unwrap();
        assert_eq!(docs[0].key_line(&["spec"]), Some(3));
        assert_eq!(docs[0].at(&["spec", "weight"]).unwrap().as_i64(), Some(10));
    }

    #[test]
    fn depth_is_refused_before_any_tree_and_fits_a_2_mib_stack_at_the_limit() {
        use crate::source::limits::MAX_DEPTH;
        let deep = |n: usize| {
            format!(
                "apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: a}}\nspec:\n  template:\n    spec:\n      containers: [{{name: a, x: {}{}}}]\n",
                "[".repeat(n - 6),
                "]".repeat(n - 6)
            )
        };
        let run = |text: String| {
            std::thread::Builder::new()
                .stack_size(2 << 20)
                .spawn(move || (parse(&text), crate::lint::lint_str("d.yaml", &text).objects))
                .unwrap()
                .join()
                .unwrap()
        };
        let (docs, objects) = run(deep(MAX_DEPTH));
        assert_eq!((docs.unwrap().len(), objects), (1, 1));
        let (e, objects) = run(deep(MAX_DEPTH + 1));
        let e = e.unwrap_err();
        assert_eq!(objects, 0);
        assert_eq!(e.line, 7);
        assert!(e.over_limit);
        assert_eq!(
            e.message,
            format!("nested deeper than {MAX_DEPTH} levels, the most kelp reads")
        );
        let e = parse(&("- ".repeat(20_000) + "x\n")).unwrap_err();
        assert_eq!((e.line, e.over_limit), (1, true));
    }

    #[test]
    fn the_loader_still_says_what_is_wrong() {
        let e = parse("a: 1\nb: 2\na: 3\n").unwrap_err();
        assert_eq!(
            e.message, "mapping key \"a\" is given twice (first on line 1)",
            "{e:?}"
        );
        assert_eq!(e.line, 3);
        assert!(!e.over_limit);
        let bomb: String = std::iter::once("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n".to_string())
            .chain((1..8).map(|i| {
                format!(
                    "a{i}: &a{i} [{}]\n",
                    vec![format!("*a{}", i - 1); 10].join(", ")
                )
            }))
            .collect();
        let e = parse(&bomb).unwrap_err();
        assert!(e.message.contains("alias expansion"), "{e:?}");
        let docs = parse("a: &x {b: 1}\nc: *x\n").unwrap();
        assert_eq!(docs[0].at(&["c", "b"]).and_then(Node::as_i64), Some(1));
    }

    #[test]
    fn errors_carry_a_line() {
        let e = parse("a: 1\nb: [\n  c\nd: 2\n").unwrap_err();
        assert!(e.line >= 2, "{e:?}");
        assert!(!e.message.is_empty());
    }
}
