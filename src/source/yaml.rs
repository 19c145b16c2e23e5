//! YAML dumps, cut into their objects before any of it is parsed into a tree, so that
//! memory holds the text and one object's tree at a time, never a tree of the whole file
//! (a `kubectl get -o yaml` List is one document: parsed whole, its events and its tree
//! took about 19 times the file).
//!
//! One walk over saphyr's events (the one that holds the input to [`limits`]) finds each
//! document's objects: the items of a top-level sequence, or of a top-level `List`'s
//! `items` (with the List's `kind` and `metadata` beside them), or else the document's
//! one object ([`plan`]). Each is then parsed alone by the same parser as before
//! (serde_norway), from its own text with its first line indented as in the file, so
//! every scalar reads as it did and an error's column is the file's (its line is moved
//! by the part's first line).
//!
//! What cannot be cut so is parsed whole, as before: a file with aliases (an anchor may be
//! defined in another object), directives, a tag or anchor on an object itself, an item
//! that is not a mapping, a top-level scalar, or anything the walk finds malformed (the
//! whole parse then reports it in its own words).

use saphyr_parser::{Event, Marker, Span};
use serde::Deserialize;

use super::ingest::{list_metadata, load_value, LoadNotes};
use super::limits::{self, Limit, YamlStop};
use crate::model::Cluster;
use crate::source::error::{Error, Result};

pub(super) fn load(
    name: &str,
    text: &str,
    cluster: &mut Cluster,
    notes: &mut LoadNotes,
) -> Result<()> {
    // Size, depth, entries and repeated keys first: serde_norway gathers a document's
    // events before it stops at 128 levels, and its scanner's cost grows with the square
    // of the flow nesting. The same walk cuts the file into its objects.
    let plan = plan(text).map_err(|stop| match stop {
        limits::YamlStop::Limit(limit) => Error::Limit {
            path: name.to_string(),
            limit,
        },
        other => Error::Parse {
            path: name.to_string(),
            message: other.to_string(),
        },
    })?;
    let docs = match plan {
        Plan::Parts(docs) => docs,
        Plan::Whole => return load_whole(name, text, cluster, notes),
    };
    // One object's tree at a time: parsed from its own text, loaded, dropped.
    let parse = |part: &Part| -> Result<serde_json::Value> {
        let own = part.text(text);
        serde_json::Value::deserialize(serde_norway::Deserializer::from_str(&own)).map_err(|e| {
            // Where the walk and serde_norway disagree on the syntax, the whole parse
            // says what it says of the file.
            match yaml_error_whole(name, text) {
                Some(whole) => whole,
                None => yaml_error(name, &e, part.line - 1),
            }
        })
    };
    for (i, doc) in docs.iter().enumerate() {
        match doc {
            Doc::Empty => {}
            Doc::Seq(items) => {
                for item in items {
                    load_value(name, i + 1, parse(item)?, cluster, notes)?;
                }
            }
            Doc::Map {
                kind: Some(kind),
                metadata,
                items,
                ..
            } if kind.ends_with("List") => {
                let metadata = metadata.as_ref().map(&parse).transpose()?;
                list_metadata(name, metadata.as_ref(), cluster)?;
                for item in items {
                    load_value(name, i + 1, parse(item)?, cluster, notes)?;
                }
            }
            Doc::Map { whole, .. } => load_value(name, i + 1, parse(whole)?, cluster, notes)?,
        }
    }
    Ok(())
}

/// A YAML file as one tree a document (what [`plan`] cannot cut into objects).
fn load_whole(name: &str, text: &str, cluster: &mut Cluster, notes: &mut LoadNotes) -> Result<()> {
    for (i, doc) in serde_norway::Deserializer::from_str(text).enumerate() {
        let value = serde_json::Value::deserialize(doc).map_err(|e| yaml_error(name, &e, 0))?;
        load_value(name, i + 1, value, cluster, notes)?;
    }
    Ok(())
}

/// The first error serde_norway finds in the whole of `text`, if any (no tree is built).
fn yaml_error_whole(name: &str, text: &str) -> Option<Error> {
    serde_norway::Deserializer::from_str(text).find_map(|doc| {
        serde::de::IgnoredAny::deserialize(doc)
            .err()
            .map(|e| yaml_error(name, &e, 0))
    })
}

/// serde_norway's error as one line naming the file, with its line moved down by
/// `lines_before` (for a part cut out of the file).
fn yaml_error(name: &str, e: &serde_norway::Error, lines_before: usize) -> Error {
    Error::Parse {
        path: name.to_string(),
        message: match e.location() {
            Some(l) => {
                // serde_norway's message ends with the location: say it once.
                let at = format!(" at line {} column {}", l.line(), l.column());
                let text = e.to_string();
                let text = text.strip_suffix(&at).unwrap_or(&text);
                format!(
                    "line {}, column {}: {text}",
                    l.line() + lines_before,
                    l.column()
                )
            }
            None => e.to_string(),
        },
    }
}

/// A stretch of the text: one object (or a List's metadata), as byte offsets, with the
/// line and the column (in characters) its first byte is at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Part {
    pub start: usize,
    pub end: usize,
    pub line: usize,
    pub col: usize,
}

impl Part {
    /// Its text as a document of its own: the first line indented as in the file, so the
    /// lines below it keep their place.
    pub fn text(&self, all: &str) -> String {
        let body = &all[self.start..self.end];
        let mut s = String::with_capacity(self.col + body.len());
        s.extend(std::iter::repeat_n(' ', self.col));
        s.push_str(body);
        s
    }
}

/// One document of the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Doc {
    /// Nothing (an empty document, or null).
    Empty,
    /// A top-level sequence: its items.
    Seq(Vec<Part>),
    /// A top-level mapping: the whole of it, its `kind` when it is a plain string, and,
    /// for a List, its `metadata` and the items of its `items` sequence.
    Map {
        whole: Part,
        kind: Option<String>,
        metadata: Option<Part>,
        items: Vec<Part>,
    },
}

/// How a file is read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Plan {
    /// Object by object.
    Parts(Vec<Doc>),
    /// Whole, as one tree a document (see the module's header for when).
    Whole,
}

/// The plan for `text`, after holding it to [`limits`] (size, depth, entries, keys given
/// twice): a limit is an error, a syntax error is left to the whole parse.
pub fn plan(text: &str) -> Result<Plan, YamlStop> {
    if text.len() as u64 > limits::MAX_WHOLE_BYTES {
        return Err(YamlStop::Limit(Limit::YamlSize));
    }
    let directives = text.lines().any(|l| l.starts_with('%'));
    let mut walk = Walk::new(text);
    match limits::yaml_events(text, |event, span| {
        walk.on(&event, span);
        Ok(())
    }) {
        Ok(()) => {}
        Err(YamlStop::Syntax { .. }) => return Ok(Plan::Whole),
        Err(stop) => return Err(stop),
    }
    Ok(if walk.whole || directives {
        Plan::Whole
    } else {
        Plan::Parts(walk.docs)
    })
}

/// Character indices (saphyr's) to byte offsets, for indices met in increasing order.
#[derive(Default)]
struct Offsets<'a> {
    text: &'a str,
    ascii: bool,
    chars: usize,
    bytes: usize,
}

impl Offsets<'_> {
    fn byte(&mut self, index: usize) -> usize {
        if self.ascii {
            return index.min(self.text.len());
        }
        if index < self.chars {
            (self.chars, self.bytes) = (0, 0);
        }
        let rest = &self.text[self.bytes..];
        match rest.char_indices().nth(index - self.chars) {
            Some((b, _)) => {
                self.bytes += b;
                self.chars = index;
            }
            None => {
                self.chars += rest.chars().count();
                self.bytes = self.text.len();
            }
        }
        self.bytes
    }
}

/// What the walk is inside of, at the document's top.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum Top {
    #[default]
    None,
    Seq,
    Map,
}

/// The walk: what lasts across documents (the offsets, the documents found, whether the
/// file must be read whole), then one document's state, which [`Walk::begin`] resets.
#[derive(Default)]
struct Walk<'a> {
    offsets: Offsets<'a>,
    docs: Vec<Doc>,
    whole: bool,
    /// Open collections.
    depth: usize,
    top: Top,
    top_start: Option<Marker>,
    /// Nodes met directly in the top mapping (keys and values alternate).
    top_children: usize,
    last_key: Option<String>,
    kind: Option<String>,
    metadata: Option<Part>,
    metadata_start: Option<Marker>,
    /// The depth at which the items sit (1 in a top-level sequence, 2 in `items`).
    items_depth: Option<usize>,
    items: Vec<Part>,
    item_start: Option<Marker>,
    /// This document's entry is in `docs`.
    pushed: bool,
}

impl<'a> Walk<'a> {
    fn new(text: &'a str) -> Self {
        Walk {
            offsets: Offsets {
                text,
                ascii: text.is_ascii(),
                chars: 0,
                bytes: 0,
            },
            ..Walk::default()
        }
    }

    fn part(&mut self, start: Marker, end: Marker) -> Part {
        let (from, to) = (
            self.offsets.byte(start.index()),
            self.offsets.byte(end.index()),
        );
        Part {
            start: from,
            end: to.max(from),
            line: start.line().max(1),
            col: start.col(),
        }
    }

    fn on(&mut self, event: &Event, span: Span) {
        if self.whole {
            return;
        }
        match event {
            Event::DocumentStart(_) => self.begin(),
            Event::DocumentEnd => self.end(),
            Event::Alias(_) => self.whole = true,
            Event::Scalar(value, style, anchor, tag) => {
                self.node(span, false, *anchor != 0 || tag.is_some());
                if self.depth == 0 {
                    // A top-level scalar: only an empty one (null) is read here.
                    let null = *style == saphyr_parser::ScalarStyle::Plain
                        && matches!(value.as_ref(), "" | "~" | "null" | "Null" | "NULL");
                    if !null {
                        self.whole = true;
                    }
                } else if self.depth == 1 && self.top == Top::Map && self.top_children % 2 == 1 {
                    self.last_key = Some(value.to_string());
                } else if self.depth == 1
                    && self.top == Top::Map
                    && self.last_key.as_deref() == Some("kind")
                    && tag.is_none()
                {
                    self.kind = Some(value.to_string());
                }
            }
            Event::SequenceStart(anchor, tag) | Event::MappingStart(anchor, tag) => {
                let map = matches!(event, Event::MappingStart(..));
                let marked = *anchor != 0 || tag.is_some();
                self.node(span, map, marked);
                if self.depth == 0 {
                    self.top = if map { Top::Map } else { Top::Seq };
                    self.top_start = Some(span.start);
                    if marked {
                        self.whole = true;
                    }
                    if !map {
                        self.items_depth = Some(1);
                    }
                } else if self.depth == 1 && self.top == Top::Map && self.top_children % 2 == 1 {
                    // A key that is a collection names none of the fields read here.
                    self.last_key = None;
                } else if self.depth == 1 && self.top == Top::Map {
                    match self.last_key.as_deref() {
                        Some("items") if !map => self.items_depth = Some(2),
                        Some("metadata") if map => self.metadata_start = Some(span.start),
                        _ => {}
                    }
                }
                self.depth += 1;
            }
            Event::SequenceEnd | Event::MappingEnd => {
                self.depth = self.depth.saturating_sub(1);
                if self.items_depth == Some(self.depth) {
                    if let Some(start) = self.item_start.take() {
                        let p = self.part(start, span.end);
                        self.items.push(p);
                    }
                }
                if self.depth == 1 && self.top == Top::Map {
                    if let Some(start) = self.metadata_start.take() {
                        self.metadata = Some(self.part(start, span.end));
                    }
                }
                if self.items_depth == Some(self.depth + 1) && self.depth + 1 == 2 {
                    // The `items` sequence itself ended.
                    self.items_depth = None;
                }
                if self.depth == 0 {
                    if let (Top::Map, Some(start)) = (self.top, self.top_start) {
                        let whole = self.part(start, span.end);
                        self.docs.push(Doc::Map {
                            whole,
                            kind: self.kind.take(),
                            metadata: self.metadata.take(),
                            items: std::mem::take(&mut self.items),
                        });
                    } else {
                        self.docs.push(Doc::Seq(std::mem::take(&mut self.items)));
                    }
                    self.pushed = true;
                    self.top = Top::None;
                }
            }
            _ => {}
        }
    }

    /// A node starts (a scalar, or a collection that is about to open).
    fn node(&mut self, span: Span, map: bool, marked: bool) {
        if self.depth == 1 && self.top == Top::Map {
            self.top_children += 1;
        }
        if self.items_depth == Some(self.depth) {
            if map && !marked {
                self.item_start = Some(span.start);
            } else {
                // An item that is not a plain mapping: read the file whole, as before.
                self.whole = true;
            }
        }
    }

    /// A new document: its state starts afresh, what lasts across documents is kept.
    fn begin(&mut self) {
        *self = Walk {
            offsets: std::mem::take(&mut self.offsets),
            docs: std::mem::take(&mut self.docs),
            whole: self.whole,
            ..Walk::default()
        };
    }

    fn end(&mut self) {
        if !self.pushed {
            self.docs.push(Doc::Empty);
            self.pushed = true;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parts(text: &str) -> Vec<Doc> {
        match plan(text).unwrap() {
            Plan::Parts(d) => d,
            Plan::Whole => panic!("read whole: {text}"),
        }
    }

    fn texts(text: &str, ps: &[Part]) -> Vec<String> {
        ps.iter().map(|p| p.text(text)).collect()
    }

    #[test]
    fn a_lists_items_its_kind_and_metadata_are_cut_out_in_order() {
        let text = "apiVersion: v1\nitems:\n- apiVersion: v1\n  kind: Pod\n  spec: {a: [1]}\n\n# c\n- {kind: X,\n   b: 2}\nkind: List\nmetadata:\n  annotations: {x: \"y\"}\n";
        let docs = parts(text);
        assert_eq!(docs.len(), 1);
        let Doc::Map {
            whole,
            kind,
            metadata,
            items,
        } = &docs[0]
        else {
            panic!("{docs:?}")
        };
        assert_eq!(kind.as_deref(), Some("List"));
        assert_eq!((whole.start, whole.line, whole.col), (0, 1, 0));
        assert_eq!(
            texts(text, items),
            [
                "  apiVersion: v1\n  kind: Pod\n  spec: {a: [1]}\n\n# c\n",
                "  {kind: X,\n   b: 2}"
            ]
        );
        assert_eq!((items[1].line, items[1].col), (8, 2));
        assert_eq!(
            metadata.as_ref().unwrap().text(text),
            "  annotations: {x: \"y\"}\n"
        );
    }

    #[test]
    fn documents_sequences_and_empty_documents_each_get_their_own() {
        let text = "---\n- a: 1\n  b: |\n    text\n- {c: 2}\n---\n---\nkind: Pod\nmetadata: {name: é}\nspec: {items: [1]}\n";
        let docs = parts(text);
        assert_eq!(docs.len(), 3, "{docs:?}");
        let Doc::Seq(items) = &docs[0] else {
            panic!("{docs:?}")
        };
        assert_eq!(
            texts(text, items),
            ["  a: 1\n  b: |\n    text\n", "  {c: 2}"]
        );
        assert_eq!(docs[1], Doc::Empty);
        let Doc::Map { whole, kind, .. } = &docs[2] else {
            panic!("{docs:?}")
        };
        assert_eq!(kind.as_deref(), Some("Pod"));
        assert_eq!(
            whole.text(text),
            "kind: Pod\nmetadata: {name: é}\nspec: {items: [1]}\n"
        );
        // Past a multi-byte character, offsets are bytes.
        let text = "a: é\n---\nb: ü\n";
        let docs = parts(text);
        let Doc::Map { whole, .. } = &docs[1] else {
            panic!("{docs:?}")
        };
        assert_eq!(whole.text(text), "b: ü\n");
    }

    #[test]
    fn what_cannot_be_cut_is_read_whole() {
        for text in [
            "a: &x {b: 1}\nc: *x\n",
            "- &x {b: 1}\n- {c: 2}\n",
            "- !!map {b: 1}\n",
            "- 1\n- {a: 1}\n",
            "kind: List\nitems:\n- [1]\n",
            "kind: Thing\nitems: [1]\n",
            "just a scalar\n",
            "%YAML 1.1\n---\na: 1\n",
            "kind: List\n? [x]\n: 1\nitems:\n- [1]\n",
            "a: [1\n",
        ] {
            assert_eq!(plan(text), Ok(Plan::Whole), "{text}");
        }
        // A key that is a collection is no field's name: `kind` is not taken from after it.
        let docs = parts("kind: Pod\n? [x]\n: List\n");
        assert!(
            matches!(&docs[0], Doc::Map { kind: Some(k), .. } if k == "Pod"),
            "{docs:?}"
        );
        // The limits still hold.
        assert!(matches!(
            plan("a: 1\na: 2\n"),
            Err(YamlStop::Duplicate { .. })
        ));
    }
}
