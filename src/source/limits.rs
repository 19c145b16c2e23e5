//! What kelp refuses to read, so that no input can crash it (stack), stall it (time) or
//! take memory out of proportion to its size, whichever command reads it (`--from`,
//! `kelp serve --from`'s reloads, `kelp lint`, `kelp what-if`, `.kelp.yaml`):
//!
//! - **Depth.** Every tree kelp builds or walks (serde's visitors, saphyr's loader, the
//!   lint tree, the dump loader's lists of lists, their drops) recurses once per level, so
//!   nothing nested deeper than [`MAX_DEPTH`] gets past the first look: JSON in memory is
//!   held to it by serde_json's own recursion limit, streamed JSON is followed by a
//!   [`JsonGuard`] as it is read, a chunk ahead of the parser, and YAML on saphyr's
//!   event stream ([`yaml_events`], driven here without recursion) before any tree
//!   exists. Both are linear, which also keeps the YAML scanners' cost per flow level
//!   (quadratic in the nesting) from ever being paid: a deep `[[[...` stops at level 128.
//! - **Size.** YAML (and every file `kelp lint` reads) is parsed whole, through a
//!   generic tree, so one file is at most [`MAX_WHOLE_BYTES`]. A JSON dump may be any
//!   size. Read from a file, it is mapped into memory and parsed in place, its pages let
//!   go behind the parser, so what it holds is bounded by the file itself and what the
//!   model keeps of it. Streamed (stdin, a gzip file), it is read one object at a time,
//!   and one object (an item of a `List` or of an array, or a lone object) is at most
//!   [`MAX_OBJECT_BYTES`] and one string at most [`MAX_STRING_BYTES`].
//!
//! The limits sit well above what real clusters hold (an API server stores no object over
//! about 1.5 MiB by default, a Secret's 1 MiB is 1.4 MiB in base64; the real cluster dump
//! in `tests/fixtures`, CRDs included, nests 21 levels), and [`MAX_DEPTH`] is low enough
//! for the deepest walk to fit a 2 MiB stack (tokio's blocking threads, where `kelp serve`
//! reloads a dump) with room to spare, in debug builds too.

use std::io::Read;

use saphyr_parser::{Event, Parser, ScanError, Span};

/// The deepest nesting of mappings and sequences (JSON objects and arrays) kelp reads:
/// the most serde_json's own recursion limit (128) lets through, which guards JSON parsed
/// in memory.
pub const MAX_DEPTH: usize = 127;
/// The largest file kelp parses whole: any YAML, and every file `kelp lint` reads.
pub const MAX_WHOLE_BYTES: u64 = 32 << 20;
/// The largest single object in a streamed JSON dump.
pub const MAX_OBJECT_BYTES: u64 = 32 << 20;
/// The longest single JSON string (as written, escapes included) in a dump.
pub const MAX_STRING_BYTES: u64 = 2 << 20;
/// The most entries one YAML mapping or sequence inside an object holds (containers, env
/// entries, labels, requirements, tolerations ...): far above anything real (an object the
/// API server stores is at most about 1.5 MiB), and what keeps a small file of tiny entries
/// from growing into gigabytes of tree. A dump's own lists (a `List`'s `items`, a top-level
/// sequence of objects) are not held to it.
pub const MAX_ENTRIES: usize = 10_000;

const MIB: u64 = 1 << 20;

/// An input over one of the limits; renders as one line (the caller adds the file name).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", match self.line() {
    Some(line) => format!("line {line}: {}", self.what()),
    None => self.what(),
})]
pub enum Limit {
    Depth { line: usize },
    String { line: usize },
    Object { line: usize },
    Entries { line: usize },
    YamlSize,
    FileSize,
}

impl Limit {
    /// The line it starts on, where there is one.
    pub fn line(&self) -> Option<usize> {
        match self {
            Limit::Depth { line }
            | Limit::String { line }
            | Limit::Object { line }
            | Limit::Entries { line } => Some(*line),
            Limit::YamlSize | Limit::FileSize => None,
        }
    }

    /// What is over which limit, without the line.
    pub fn what(&self) -> String {
        match self {
            Limit::Depth { .. } => format!("nested deeper than {MAX_DEPTH} levels, the most kelp reads"),
            Limit::String { .. } => format!(
                "a string longer than {} MiB, the longest kelp reads",
                MAX_STRING_BYTES / MIB
            ),
            Limit::Object { .. } => format!(
                "an object larger than {} MiB, the largest kelp reads",
                MAX_OBJECT_BYTES / MIB
            ),
            Limit::Entries { .. } => format!(
                "a mapping or list with more than {MAX_ENTRIES} entries in one object, the most kelp reads"
            ),
            Limit::YamlSize => format!(
                "more than {} MiB of YAML, the most kelp reads from one YAML file (it is parsed whole); write a dump this large as JSON (kubectl get -o json, kelp snapshot -o FILE.json), which kelp streams at any size",
                MAX_WHOLE_BYTES / MIB
            ),
            Limit::FileSize => format!(
                "larger than {} MiB, the most kelp reads from one manifest file (it is parsed whole)",
                MAX_WHOLE_BYTES / MIB
            ),
        }
    }
}

/// At most `max` bytes from `reader`; `None` when there are more. `expected` (a file's
/// size, or 0 for a stream of unknown length) sizes the buffer once, and refuses at once
/// when it is over `max`. A stream's buffer is the whole limit, reserved once: only the
/// pages written are taken, and it never grows by copying (which held the old and the
/// new buffer at once, twice the limit for `/dev/zero`).
pub fn read_at_most(
    reader: impl Read,
    max: u64,
    expected: u64,
) -> std::io::Result<Option<Vec<u8>>> {
    if expected > max {
        return Ok(None);
    }
    let capacity = if expected == 0 { max + 1 } else { expected + 1 };
    let mut bytes = Vec::with_capacity(capacity.min(max + 1) as usize);
    reader.take(max + 1).read_to_end(&mut bytes)?;
    Ok((bytes.len() as u64 <= max).then_some(bytes))
}

// ------------------------------------------------------------------ JSON

/// Follows JSON bytes as they are read, a chunk at a time ahead of the parser, and stops
/// at the first byte over a limit. It knows strings, nesting and lines, and as much of a
/// dump's shape as its reader needs: what is one object (a top-level value; the items of
/// a top-level array; the items of a top-level object's `items` array, i.e. a `List`'s,
/// whose other fields are objects of their own), for the size limit, and the line each
/// limit is crossed on, for its error message.
#[derive(Debug, Clone)]
pub struct JsonGuard {
    /// The line of the next byte.
    line: usize,
    offset: u64,
    depth: usize,
    in_string: bool,
    escaped: bool,
    /// The offset past which the open string is too long.
    string_limit: u64,
    /// The kinds (`{` or `[`) of the containers at depths 1 and 2.
    kinds: [u8; 2],
    /// What the next non-blank byte at depth 2 or less starts.
    want: Want,
    /// While a key at depth 1 is read: how much of `items` it matches so far (none once
    /// it differs).
    key: Option<usize>,
    /// The last key at depth 1 was `items`; the container at depth 2 is that array.
    items_key: bool,
    in_items: bool,
    objects: bool,
    object_depth: usize,
    /// The depth and line where the object being counted opened, and the offset at
    /// which it is too large (`u64::MAX` when none is counted).
    object: Option<(usize, usize)>,
    object_limit: u64,
    failed: Option<Limit>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Want {
    Nothing,
    Value,
    Key,
}

const ITEMS: &[u8] = b"items";

impl JsonGuard {
    /// A guard for a stream whose first byte is on `line`: objects are capped too.
    pub fn stream(line: usize) -> Self {
        JsonGuard {
            line,
            objects: true,
            ..JsonGuard::text()
        }
    }

    /// A guard for text already in memory: depth and string length only.
    pub fn text() -> Self {
        JsonGuard {
            line: 1,
            offset: 0,
            depth: 0,
            in_string: false,
            escaped: false,
            string_limit: 0,
            kinds: [0; 2],
            want: Want::Value,
            key: None,
            items_key: false,
            in_items: false,
            objects: false,
            object_depth: 1,
            object: None,
            object_limit: u64::MAX,
            failed: None,
        }
    }

    /// The limit that stopped the input, once.
    pub fn take_failure(&mut self) -> Option<Limit> {
        self.failed.take()
    }

    /// Follow `bytes`; the first byte over a limit is an error (kept for
    /// [`JsonGuard::take_failure`]).
    pub fn feed(&mut self, bytes: &[u8]) -> Result<(), Limit> {
        let mut i = 0;
        while let Some(&b) = bytes.get(i) {
            // Most bytes are in strings or blanks: pass over runs of them in tight loops.
            let ok = if self.in_string && self.key.is_none() {
                let start = i;
                if std::mem::take(&mut self.escaped) {
                    i += 1;
                }
                loop {
                    i += bytes
                        .get(i..)
                        .unwrap_or_default()
                        .iter()
                        .position(|b| matches!(b, b'"' | b'\\'))
                        .unwrap_or(bytes.len().saturating_sub(i));
                    match bytes.get(i) {
                        Some(b'\\') if i + 1 < bytes.len() => i += 2,
                        Some(b'\\') => {
                            self.escaped = true;
                            i += 1;
                            break;
                        }
                        _ => break,
                    }
                }
                self.offset += (i - start) as u64;
                if self.offset > self.string_limit {
                    self.fail(Limit::String { line: self.line })
                } else if i < bytes.len() {
                    i += 1;
                    self.step(b'"')
                } else {
                    self.offset < self.object_limit || self.fail_object()
                }
            } else if !self.in_string && matches!(b, b' ' | b'\t' | b'\r') {
                let start = i;
                while bytes
                    .get(i)
                    .is_some_and(|b| matches!(b, b' ' | b'\t' | b'\r'))
                {
                    i += 1;
                }
                self.offset += (i - start) as u64;
                self.offset < self.object_limit || self.fail_object()
            } else {
                i += 1;
                self.step(b)
            };
            if !ok {
                return Err(self.failed.clone().expect("a failure"));
            }
        }
        Ok(())
    }

    #[inline]
    fn step(&mut self, b: u8) -> bool {
        self.offset += 1;
        if self.in_string {
            if self.escaped {
                self.escaped = false;
            } else if b == b'"' {
                self.in_string = false;
                if let Some(n) = self.key.take() {
                    self.items_key = n == ITEMS.len();
                }
            } else if b == b'\\' {
                self.escaped = true;
                self.key = None;
            } else if let Some(n) = self.key {
                self.key = (ITEMS.get(n) == Some(&b)).then_some(n + 1);
            }
            if self.in_string && self.offset > self.string_limit {
                return self.fail(Limit::String { line: self.line });
            }
        } else if !matches!(b, b' ' | b'\t' | b'\r') && !self.structure(b) {
            return false;
        }
        self.offset < self.object_limit || self.fail_object()
    }

    fn structure(&mut self, b: u8) -> bool {
        if b == b'\n' {
            self.line += 1;
            return true;
        }
        match std::mem::replace(&mut self.want, Want::Nothing) {
            Want::Key if b == b'"' && self.depth == 1 => {
                self.key = Some(0);
                self.items_key = false;
            }
            _ => {}
        }
        match b {
            b'"' => {
                self.in_string = true;
                self.string_limit = self.offset + MAX_STRING_BYTES;
            }
            b'[' | b'{' => return self.open(b),
            b']' | b'}' => self.close(),
            b':' if self.in_object() => self.want = Want::Value,
            b',' if self.in_object() => self.want = Want::Key,
            b',' if (1..=2).contains(&self.depth) => self.want = Want::Value,
            _ => {}
        }
        true
    }

    fn in_object(&self) -> bool {
        (1..=2).contains(&self.depth) && self.kinds[self.depth - 1] == b'{'
    }

    fn open(&mut self, b: u8) -> bool {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return self.fail(Limit::Depth { line: self.line });
        }
        if self.depth <= 2 {
            self.kinds[self.depth - 1] = b;
            self.want = if b == b'[' { Want::Value } else { Want::Key };
        }
        if self.depth == 1 {
            self.items_key = false;
            self.object_depth = if b == b'[' { 2 } else { 1 };
        } else if self.depth == 2 && b == b'[' && self.kinds[0] == b'{' && self.items_key {
            // A List's items: each is an object; the List as a whole is not.
            self.in_items = true;
            self.object_depth = 3;
            self.uncount();
        }
        if self.objects && self.depth == self.object_depth {
            self.object = Some((self.depth, self.line));
            self.object_limit = self.offset + MAX_OBJECT_BYTES;
        }
        true
    }

    fn close(&mut self) {
        if self.object.is_some_and(|(d, _)| d == self.depth) {
            self.uncount();
        }
        if self.depth == 2 && self.in_items {
            self.in_items = false;
            self.object_depth = 2;
        }
        self.depth = self.depth.saturating_sub(1);
        if self.depth == 0 {
            self.object_depth = 1;
            self.want = Want::Value;
        }
    }

    fn uncount(&mut self) {
        self.object = None;
        self.object_limit = u64::MAX;
    }

    #[cold]
    fn fail_object(&mut self) -> bool {
        let line = self.object.map_or(self.line, |(_, line)| line);
        self.fail(Limit::Object { line })
    }

    #[cold]
    fn fail(&mut self, limit: Limit) -> bool {
        self.failed = Some(limit);
        false
    }
}

// ------------------------------------------------------------------ YAML

/// Why a YAML walk stopped.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum YamlStop {
    /// Over [`MAX_DEPTH`] or [`MAX_ENTRIES`].
    #[error("{0}")]
    Limit(Limit),
    /// Not YAML: the parser's (or the caller's) message, at a 1-based line.
    #[error("line {line}: {message}")]
    Syntax { line: usize, message: String },
    /// A mapping names one key twice (kubectl refuses it; which value would win is the
    /// reader's guess).
    #[error("line {line}: mapping key {key:?} is given twice (first on line {first})")]
    Duplicate {
        line: usize,
        key: String,
        first: usize,
    },
}

impl YamlStop {
    pub fn scan(e: &ScanError) -> Self {
        YamlStop::Syntax {
            line: e.marker().line().max(1),
            message: e.info().to_string(),
        }
    }
}

/// Feed the YAML events of `text` (documents, collections, scalars, in order) to `each`,
/// refusing the first collection nested deeper than [`MAX_DEPTH`], holding more than
/// [`MAX_ENTRIES`] entries inside one object, or naming a mapping key twice. The parser is
/// driven here, one event at a time without recursion, and stops at the first error, so
/// the work is linear in the input and bounded by the limits. Where the parser stops on a
/// syntax error, a cruder count of flow brackets (one that can only over-count) looks at
/// the whole text, so that a deep `[[[...` is reported as what it is and never reaches
/// another parser that reads past that error.
pub fn yaml_events<'a>(
    text: &'a str,
    mut each: impl FnMut(Event<'a>, Span) -> Result<(), YamlStop>,
) -> Result<(), YamlStop> {
    let mut open: Vec<Frame> = Vec::new();
    for event in Parser::new_from_str(text) {
        let (event, span) = match event {
            Ok(e) => e,
            Err(e) => {
                flow_depth(text).map_err(YamlStop::Limit)?;
                return Err(YamlStop::scan(&e));
            }
        };
        let line = span.start.line().max(1);
        match &event {
            Event::SequenceStart(..) | Event::MappingStart(..) => {
                let map = matches!(event, Event::MappingStart(..));
                let frame = match open.last_mut() {
                    Some(parent) => parent.child(None, line)?.nested(map),
                    None => Frame::root(map),
                };
                open.push(frame);
                if open.len() > MAX_DEPTH {
                    return Err(YamlStop::Limit(Limit::Depth { line }));
                }
            }
            Event::SequenceEnd | Event::MappingEnd => {
                open.pop();
            }
            Event::Scalar(value, ..) => {
                if let Some(parent) = open.last_mut() {
                    parent.child(Some(value), line)?;
                }
            }
            Event::Alias(_) => {
                if let Some(parent) = open.last_mut() {
                    parent.child(None, line)?;
                }
            }
            _ => {}
        }
        each(event, span)?;
    }
    Ok(())
}

/// One open YAML collection, as [`yaml_events`] follows it.
#[derive(Debug)]
struct Frame {
    map: bool,
    /// Nodes met directly in it: a mapping's keys and values alternate.
    children: usize,
    /// A dump's own list (the document's top-level sequence, or a `List`'s `items`, at
    /// any depth of Lists in such lists), which holds any number of objects.
    dump_list: bool,
    /// A mapping that is an object of a dump (the document, or an item of a dump list).
    object: bool,
    /// The key of the value that comes next was `items`.
    items_next: bool,
    /// A mapping's scalar keys so far, with their lines.
    keys: std::collections::HashMap<String, usize>,
}

impl Frame {
    fn root(map: bool) -> Frame {
        Frame {
            map,
            children: 0,
            dump_list: !map,
            object: map,
            items_next: false,
            keys: Default::default(),
        }
    }

    /// The frame of a collection that starts as the next child of this one.
    fn nested(&self, map: bool) -> Frame {
        let value_of_items = self.map && self.object && self.items_next;
        Frame {
            map,
            children: 0,
            dump_list: !map && value_of_items,
            object: map && self.dump_list,
            items_next: false,
            keys: Default::default(),
        }
    }

    /// Count the next node in it (`key`: a scalar's text), refusing one entry too many
    /// and a key given twice.
    fn child(&mut self, scalar: Option<&str>, line: usize) -> Result<&mut Self, YamlStop> {
        self.children += 1;
        let entries = if self.map {
            self.children.div_ceil(2)
        } else {
            self.children
        };
        if entries > MAX_ENTRIES && !self.dump_list {
            return Err(YamlStop::Limit(Limit::Entries { line }));
        }
        let is_key = self.map && self.children % 2 == 1;
        if is_key {
            self.items_next = scalar == Some("items");
            // `<<` (a merge key) may repeat; a key that is not a scalar is not compared.
            if let Some(key) = scalar.filter(|k| *k != "<<") {
                if let Some(first) = self.keys.insert(key.to_string(), line) {
                    return Err(YamlStop::Duplicate {
                        line,
                        key: key.to_string(),
                        first,
                    });
                }
            }
        }
        Ok(self)
    }
}

/// What must hold before another YAML parser (serde_norway) sees `text`: at most
/// [`MAX_WHOLE_BYTES`], no deeper than [`MAX_DEPTH`], no more than [`MAX_ENTRIES`] in a
/// collection of one object, and no key given twice in a mapping. Syntax errors are left
/// to that parser, with its own messages.
pub fn check_yaml(text: &str) -> Result<(), YamlStop> {
    if text.len() as u64 > MAX_WHOLE_BYTES {
        return Err(YamlStop::Limit(Limit::YamlSize));
    }
    match yaml_events(text, |_, _| Ok(())) {
        Err(YamlStop::Syntax { .. }) | Ok(()) => Ok(()),
        Err(stop) => Err(stop),
    }
}

/// Flow brackets (`[`, `{`) outside quoted scalars and comments, less the closing ones.
/// Brackets inside plain or block scalars are counted too: the count is never lower than
/// the real flow depth.
fn flow_depth(text: &str) -> Result<(), Limit> {
    let (mut depth, mut line) = (0usize, 1usize);
    let mut quote: Option<u8> = None;
    let (mut escaped, mut comment) = (false, false);
    let mut prev = b'\n';
    for &b in text.as_bytes() {
        if b == b'\n' {
            line += 1;
            comment = false;
        }
        if comment {
        } else if let Some(q) = quote {
            if q == b'"' && escaped {
                escaped = false;
            } else if q == b'"' && b == b'\\' {
                escaped = true;
            } else if b == q {
                quote = None;
            }
        } else {
            let starts = prev.is_ascii_whitespace() || matches!(prev, b'[' | b'{' | b',' | b':');
            match b {
                b'#' if prev.is_ascii_whitespace() => comment = true,
                b'"' | b'\'' if starts => quote = Some(b),
                b'[' | b'{' => {
                    depth += 1;
                    if depth > MAX_DEPTH {
                        return Err(Limit::Depth { line });
                    }
                }
                b']' | b'}' => depth = depth.saturating_sub(1),
                _ => {}
            }
        }
        prev = b;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nested(open: &str, close: &str, n: usize) -> String {
        format!("{}{}", open.repeat(n), close.repeat(n))
    }

    #[test]
    fn json_depth_strings_and_objects_are_bounded_where_they_cross_the_line() {
        let mut g = JsonGuard::stream(1);
        assert_eq!(g.feed(nested("[", "]", MAX_DEPTH).as_bytes()), Ok(()));
        let mut g = JsonGuard::stream(1);
        let text = format!("\n\n{}", nested("[", "]", MAX_DEPTH + 1));
        assert_eq!(g.feed(text.as_bytes()), Err(Limit::Depth { line: 3 }));
        assert_eq!(g.take_failure(), Some(Limit::Depth { line: 3 }));

        let long = format!("\"{}\"", "x".repeat(MAX_STRING_BYTES as usize + 1));
        let mut g = JsonGuard::stream(1);
        assert_eq!(
            g.feed(format!("[\n{long}]").as_bytes()),
            Err(Limit::String { line: 2 })
        );
        let ok = format!("\"{}\\\"\"", "x".repeat(MAX_STRING_BYTES as usize - 2));
        assert_eq!(
            JsonGuard::text().feed(ok.as_bytes()),
            Ok(()),
            "an escaped quote does not end it"
        );

        // Brackets and newlines inside strings are text.
        let mut g = JsonGuard::stream(1);
        let text = format!("[\"{}\\\\\", \"\\\"]\"]\n", "[".repeat(500));
        assert_eq!(g.feed(text.as_bytes()), Ok(()));
        assert_eq!((g.depth, g.line), (0, 2));
    }

    #[test]
    fn a_lists_items_are_objects_of_their_own_and_the_list_is_not() {
        let item = format!("{{\"a\": \"{}\"}}", "x".repeat(1 << 20));
        let items = vec![item.as_str(); (MAX_OBJECT_BYTES / MIB) as usize + 1].join(",");
        for list in [
            format!("{{\"kind\": \"List\", \"items\": [{items}], \"metadata\": {{}}}}\n"),
            format!("[{items}]\n{{\"items\": [{items}]}}"),
        ] {
            assert_eq!(JsonGuard::stream(1).feed(list.as_bytes()), Ok(()));
        }
        // The same bytes as one object are too large, wherever they sit.
        for (one, line) in [
            (format!("\n{{\"itemz\": [{items}]}}"), 2),
            (format!("{{\"items\": 1, \"x\": [{items}]}}"), 1),
            (format!("{{\"it\\u0065ms\": [{items}]}}"), 1),
            (format!("[1,\n{{\"items\": {{\"items\": [{items}]}}}}]"), 2),
        ] {
            let got = JsonGuard::stream(1).feed(one.as_bytes());
            assert_eq!(got, Err(Limit::Object { line }), "{}", &one[..20]);
            // Text already in memory is not capped.
            assert_eq!(JsonGuard::text().feed(one.as_bytes()), Ok(()));
        }
    }

    #[test]
    fn the_guard_ends_in_the_same_state_whatever_the_chunks() {
        let text = "{\"apiVersion\": \"v1\",\n\"items\": [\n {\"a\": [1,\n2]},\n \"b\"\n],\n\"kind\":\n\"List\"}\n\n[{\"x\": {}}, 3,\n[]]";
        let text = format!("{text}\n{{\"a\\\"\\\\\": \"\\\"{}\\\"\"}}", "[".repeat(50));
        for chunk in 1..9 {
            let mut g = JsonGuard::stream(10);
            for part in text.as_bytes().chunks(chunk) {
                g.feed(part).unwrap();
            }
            assert_eq!(
                (g.depth, g.in_string, g.line),
                (0, false, 21),
                "chunks of {chunk}"
            );
        }
        // A string over the limit is found on its line, however the bytes arrive.
        let long = format!("[\n\n\"{}\"]", "x".repeat(MAX_STRING_BYTES as usize + 1));
        for chunk in [1 << 10, 1 << 16, 1 << 20] {
            let mut g = JsonGuard::stream(1);
            let got = long
                .as_bytes()
                .chunks(chunk)
                .try_for_each(|part| g.feed(part));
            assert_eq!(got, Err(Limit::String { line: 3 }), "chunks of {chunk}");
        }
    }

    #[test]
    fn yaml_depth_is_exact_for_block_and_flow_and_linear() {
        let block = |n: usize| "- ".repeat(n) + "x\n";
        assert_eq!(yaml_events(&block(MAX_DEPTH), |_, _| Ok(())), Ok(()));
        assert_eq!(
            yaml_events(&format!("a: 1\n---\n{}", block(MAX_DEPTH + 1)), |_, _| Ok(
                ()
            )),
            Err(YamlStop::Limit(Limit::Depth { line: 3 }))
        );
        let indented: String = (0..MAX_DEPTH + 1)
            .map(|i| format!("{}k{i}:\n", " ".repeat(i)))
            .collect();
        assert_eq!(
            check_yaml(&indented),
            Err(YamlStop::Limit(Limit::Depth {
                line: MAX_DEPTH + 1
            }))
        );
        // 200,000 levels: refused at level 128, in well under a second.
        let deep = format!("a: {}\n", nested("[", "]", 200_000));
        let t = std::time::Instant::now();
        assert_eq!(
            check_yaml(&deep),
            Err(YamlStop::Limit(Limit::Depth { line: 1 }))
        );
        assert!(t.elapsed() < std::time::Duration::from_secs(5));
    }

    #[test]
    fn yaml_that_saphyr_rejects_still_has_its_flow_depth_counted() {
        // A tab where saphyr wants none stops its walk; the brackets after it still count.
        let bad = "a:\n\t- b\n";
        assert!(matches!(
            yaml_events(bad, |_, _| Ok(())),
            Err(YamlStop::Syntax { line: 2, .. })
        ));
        assert_eq!(
            check_yaml(bad),
            Ok(()),
            "syntax is for the other parser to report"
        );
        let text = format!("{bad}c: {}\n", nested("[", "]", MAX_DEPTH + 1));
        assert_eq!(
            yaml_events(&text, |_, _| Ok(())),
            Err(YamlStop::Limit(Limit::Depth { line: 3 }))
        );
        assert_eq!(
            check_yaml(&text),
            Err(YamlStop::Limit(Limit::Depth { line: 3 }))
        );
        // Quoted brackets and comments are not counted.
        let quoted = format!(
            "a: \"{0}\"\nb: '{0}'\n# {0}\nc: d # {0}\ne: it's {{ok}}\n",
            "[".repeat(MAX_DEPTH + 1)
        );
        assert_eq!(flow_depth(&quoted), Ok(()));
        assert_eq!(
            check_yaml("x".repeat(MAX_WHOLE_BYTES as usize + 1).as_str()),
            Err(YamlStop::Limit(Limit::YamlSize))
        );
    }

    #[test]
    fn a_collection_inside_an_object_holds_at_most_max_entries_and_a_dumps_lists_any() {
        let containers =
            |n: usize| -> String { (0..n).map(|i| format!("    - name: c{i}\n")).collect() };
        let pod = |n: usize| format!("kind: Pod\nspec:\n  containers:\n{}", containers(n));
        assert_eq!(check_yaml(&pod(MAX_ENTRIES)), Ok(()));
        // The entry past the cap, on its own line (3 lines of head, one per container).
        assert_eq!(
            check_yaml(&pod(MAX_ENTRIES + 5)),
            Err(YamlStop::Limit(Limit::Entries {
                line: MAX_ENTRIES + 4
            }))
        );
        // A mapping's entries are its keys, flow style alike.
        let labels: Vec<String> = (0..=MAX_ENTRIES).map(|i| format!("k{i}: v")).collect();
        let text = format!("metadata:\n  labels: {{{}}}\n", labels.join(", "));
        assert!(matches!(
            check_yaml(&text),
            Err(YamlStop::Limit(Limit::Entries { line: 2 }))
        ));
        // A List's items, a top-level sequence, and Lists inside it: any number.
        let item = "- {kind: Pod, metadata: {name: p}}\n";
        let many = item.repeat(MAX_ENTRIES + 1);
        let indented = many.replace("- {", "  - {");
        for text in [
            many.clone(),
            format!("kind: List\nitems:\n{indented}"),
            format!("- kind: List\n  items:\n{}", many.replace("- {", "  - {")),
        ] {
            assert_eq!(check_yaml(&text), Ok(()), "{}", &text[..40]);
        }
        // ...but `items` below the top of an object is an object's own field.
        let nested = format!("kind: X\nspec:\n  items:\n{indented}");
        assert!(matches!(
            check_yaml(&nested),
            Err(YamlStop::Limit(Limit::Entries { .. }))
        ));
    }

    #[test]
    fn a_key_given_twice_is_refused_with_both_lines() {
        let text =
            "apiVersion: v1\nkind: Pod\nmetadata:\n  name: a\n  labels: {x: '1'}\n  name: b\n";
        assert_eq!(
            check_yaml(text),
            Err(YamlStop::Duplicate {
                line: 6,
                key: "name".into(),
                first: 4
            })
        );
        assert_eq!(
            check_yaml(text).unwrap_err().to_string(),
            "line 6: mapping key \"name\" is given twice (first on line 4)"
        );
        // Quoted or not, it is one key; the same key in two mappings, or two documents,
        // is not a repeat; nor is `<<` (merge keys).
        assert!(check_yaml("a: 1\n'a': 2\n").is_err());
        assert_eq!(check_yaml("a: {x: 1}\nb: {x: 1}\n---\na: 2\n"), Ok(()));
        assert_eq!(check_yaml("b: &m {x: 1}\nc:\n  <<: *m\n  <<: *m\n"), Ok(()));
        // Values may repeat, and so may items of a list.
        assert_eq!(check_yaml("a: x\nb: x\nc: [x, x]\n"), Ok(()));
    }

    #[test]
    fn reads_stop_one_byte_past_the_limit() {
        assert_eq!(
            read_at_most(&b"abc"[..], 3, 0).unwrap(),
            Some(b"abc".to_vec())
        );
        assert_eq!(read_at_most(&b"abcd"[..], 3, 0).unwrap(), None);
        assert_eq!(read_at_most(&b"ab"[..], 3, 4).unwrap(), None, "by its size");
    }
}
