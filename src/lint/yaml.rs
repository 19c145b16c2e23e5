//! Manifests as a tree that remembers where each key and value sits: `saphyr`'s marked
//! loader parses the YAML (JSON is read as YAML's flow style), and kelp keeps a small
//! owned copy with the 1-based line of every node and every mapping key, so a lint result
//! can point at the offending field rather than at the document. The parser is driven
//! event by event under kelp's depth limit ([`limits::yaml_events`]), so no input nests
//! deeper than [`limits::MAX_DEPTH`] in any tree here (every walk of them recurses).

use saphyr::{MarkedYaml, Scalar, YamlData, YamlLoader};
use saphyr_parser::SpannedEventReceiver;

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

/// Every document in `text` (a YAML stream, or JSON), with positions.
pub fn parse(text: &str) -> Result<Vec<Node>, ParseError> {
    let mut loader = YamlLoader::<MarkedYaml>::default();
    limits::yaml_events(text, |event, span| {
        loader.on_event(event, span);
        loader.error().map_or(Ok(()), |e| Err(YamlStop::scan(e)))
    })
    .map_err(|stop| match stop {
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
    Ok(loader
        .into_documents()
        .into_iter()
        .map(|d| convert(&d))
        .collect())
}

fn convert(y: &MarkedYaml) -> Node {
    let line = y.span.start.line().max(1);
    let value = match &y.data {
        YamlData::Value(s) => scalar(s),
        YamlData::Representation(s, _, _) => Value::Str(s.to_string()),
        YamlData::Sequence(items) => Value::Seq(items.iter().map(convert).collect()),
        YamlData::Mapping(map) => Value::Map(
            map.iter()
                .map(|(k, v)| Entry {
                    key: key_text(k),
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

fn scalar(s: &Scalar) -> Value {
    match s {
        Scalar::Null => Value::Null,
        Scalar::Boolean(b) => Value::Bool(*b),
        Scalar::Integer(i) => Value::Int(*i),
        Scalar::FloatingPoint(f) => Value::Float(f.into_inner()),
        Scalar::String(s) => Value::Str(s.to_string()),
    }
}

fn key_text(k: &MarkedYaml) -> String {
    match convert(k).value {
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
