//! Text rendering shared by every view that prints words: escaping of cluster text
//! ([`clean`], [`terminal_safe`]), colour that switches itself off ([`Style`]), display
//! widths and columns, enum names, the per-NodePool verdict table, and the log-field
//! formatter. The CLI, the TUI, the web pane and serve's text logs all render through it.

use std::io::IsTerminal;

use serde::Serialize;

use crate::findings::Severity;

/// `s` safe to print on a terminal or in a text log: control characters (newlines and
/// carriage returns included), C1 controls and bidirectional overrides are written as
/// escapes (`\n`, `\x1b`, `\u{202e}`), so text from the cluster (an Event anyone may
/// create, a name in a dump) can neither move the cursor, retitle the terminal, nor
/// forge a line. Everything else is left as it is.
pub fn clean(s: &str) -> std::borrow::Cow<'_, str> {
    if !s.chars().any(needs_escape) {
        return std::borrow::Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        push_char(&mut out, c);
    }
    std::borrow::Cow::Owned(out)
}

fn needs_escape(c: char) -> bool {
    c.is_control()
        || matches!(c, '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

fn push_char(out: &mut String, c: char) {
    use std::fmt::Write;
    match c {
        '\n' => out.push_str("\\n"),
        '\r' => out.push_str("\\r"),
        '\t' => out.push_str("\\t"),
        c if needs_escape(c) && (c as u32) < 0x100 => {
            let _ = write!(out, "\\x{:02x}", c as u32);
        }
        c if needs_escape(c) => {
            let _ = write!(out, "\\u{{{:x}}}", c as u32);
        }
        c => out.push(c),
    }
}

/// Text rendered by kelp, made safe for stdout: newlines and tabs stay, and with colour
/// on so do kelp's own colour codes (`ESC [ digits m`); every other control character
/// is escaped as [`clean`] does.
pub fn terminal_safe(text: &str, color: bool) -> std::borrow::Cow<'_, str> {
    let keep = |c: char| c == '\n' || c == '\t';
    if !text.chars().any(|c| needs_escape(c) && !keep(c)) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        if c == '\x1b' && color {
            if let Some(sgr) = sgr_len(rest) {
                out.push_str(&rest[..sgr]);
                rest = &rest[sgr..];
                continue;
            }
        }
        if keep(c) {
            out.push(c);
        } else {
            push_char(&mut out, c);
        }
        rest = &rest[c.len_utf8()..];
    }
    std::borrow::Cow::Owned(out)
}

/// The length of a colour code (`ESC [ [0-9;]* m`) at the start of `s`.
pub(crate) fn sgr_len(s: &str) -> Option<usize> {
    let body = s.strip_prefix("\x1b[")?;
    let digits = body
        .bytes()
        .take_while(|b| b.is_ascii_digit() || *b == b';')
        .count();
    (body.as_bytes().get(digits) == Some(&b'm')).then_some(2 + digits + 1)
}

/// ANSI styling that switches itself off when stdout is not a terminal.
#[derive(Debug, Clone, Copy)]
pub struct Style {
    pub color: bool,
}

impl Style {
    /// No colour (for the web pane and files).
    pub fn plain() -> Self {
        Style { color: false }
    }
    pub fn detect() -> Self {
        Style {
            color: std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none(),
        }
    }
    fn paint(&self, code: &str, s: &str) -> String {
        if self.color {
            format!("\x1b[{code}m{s}\x1b[0m")
        } else {
            s.to_string()
        }
    }
    pub fn bold(&self, s: &str) -> String {
        self.paint("1", s)
    }
    pub fn dim(&self, s: &str) -> String {
        self.paint("2", s)
    }
    pub fn severity(&self, sev: Severity, s: &str) -> String {
        match sev {
            Severity::Critical => self.paint("1;31", s),
            Severity::Warning => self.paint("33", s),
            Severity::Info => self.paint("36", s),
        }
    }
}

/// The columns `s` takes on a terminal: kelp's colour codes take none, wide characters
/// (CJK, most emoji) take two, combining marks none.
pub fn display_width(s: &str) -> usize {
    use unicode_width::UnicodeWidthStr;
    let mut width = 0;
    let mut rest = s;
    while !rest.is_empty() {
        if let Some(n) = sgr_len(rest) {
            rest = &rest[n..];
            continue;
        }
        let next = rest
            .char_indices()
            .skip(1)
            .find(|(_, c)| *c == '\x1b')
            .map_or(rest.len(), |(i, _)| i);
        width += rest[..next].width();
        rest = &rest[next..];
    }
    width
}

/// `s` padded with spaces to `width` display columns (see [`display_width`]).
pub fn pad(s: &str, width: usize) -> String {
    let w = display_width(s);
    format!("{s}{}", " ".repeat(width.saturating_sub(w)))
}

/// Fixed-width columns for small tables, measured in display columns, so colour codes
/// and wide characters keep them aligned.
pub fn columns(rows: &[Vec<String>]) -> String {
    let n = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..n)
        .map(|i| {
            rows.iter()
                .filter_map(|r| r.get(i))
                .map(|c| display_width(c))
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for r in rows {
        let cells: Vec<String> = r
            .iter()
            .enumerate()
            .map(|(i, c)| {
                if i + 1 == r.len() {
                    c.clone()
                } else {
                    pad(c, widths[i])
                }
            })
            .collect();
        out.push_str(cells.join("  ").trim_end());
        out.push('\n');
    }
    out
}

/// The name an enum serialises to (`instance-types`, `do-not-disrupt-pod`, ...).
pub fn serde_name<T: Serialize>(v: T) -> String {
    serde_json::to_value(v)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

/// `cpu 4, memory 16Gi`, or `none`.
pub fn requests_line(requests: &std::collections::BTreeMap<String, String>) -> String {
    if requests.is_empty() {
        return "none".into();
    }
    requests
        .iter()
        .map(|(k, v)| format!("{k} {v}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The per-NodePool verdict table `why pod` and `what-if` share: (verdict, weight) rows
/// in Karpenter's order.
pub fn verdict_table<'a>(
    rows: impl IntoIterator<Item = (&'a crate::analysis::provisioning::PoolVerdict, i32)>,
    style: Style,
) -> String {
    use crate::analysis::provisioning::{Verdict, VerdictSource};
    let mut table = vec![vec![
        "NODEPOOL".to_string(),
        "WEIGHT".into(),
        "VERDICT".into(),
        "WHY".into(),
    ]];
    for (v, weight) in rows {
        let why = if v.reasons.is_empty() {
            match (v.verdict, &v.launch) {
                (Verdict::Compatible, Some(l)) => format!(
                    "passes readiness, limits, taints, requirements and instance types: {}",
                    crate::analysis::provisioning::describe_launch(l).unwrap_or_default()
                ),
                (Verdict::Compatible, None) => {
                    "passes readiness, limits, taints and requirements (instance types not checked: no catalogue)".to_string()
                }
                _ => String::new(),
            }
        } else {
            let mut r: Vec<String> = v
                .reasons
                .iter()
                .map(|r| format!("{}: {}", serde_name(r.category), clean(&r.message)))
                .collect();
            if v.source == VerdictSource::Event {
                r.push("(from Karpenter's event)".into());
            }
            r.join("; ")
        };
        let why = if v.event_agrees == Some(false) {
            format!("{why} (Karpenter's event says otherwise)")
        } else {
            why
        };
        let verdict = match v.verdict {
            Verdict::Rejected => style.severity(Severity::Critical, "rejected"),
            Verdict::Compatible => style.severity(Severity::Info, "compatible"),
            Verdict::Unknown => style.severity(Severity::Warning, "unknown"),
        };
        table.push(vec![v.name.clone(), weight.to_string(), verdict, why]);
    }
    columns(&table)
}

/// Text-log fields as `name=value`, the message bare, each escaped by [`clean`].
pub fn text_fields() -> impl for<'w> tracing_subscriber::fmt::FormatFields<'w> + 'static {
    use tracing_subscriber::field::MakeExt;
    tracing_subscriber::fmt::format::debug_fn(|w, field, value| {
        let text = format!("{value:?}");
        let text = clean(&text);
        match field.name() {
            "message" => write!(w, "{text}"),
            name => write!(w, "{name}={text}"),
        }
    })
    .delimited(" ")
}

/// A JSON log writer that also escapes what JSON lets through raw but a terminal reading
/// the log would act on: DEL, C1 controls (U+0080..U+009F, one of which starts a CSI) and
/// the bidi controls (`\u202e`), as `\uXXXX`. Only JSON strings can hold them, where the
/// escape means the same character, so every line stays the same JSON.
pub struct JsonEscaped<W>(pub W);

impl<W: std::io::Write> std::io::Write for JsonEscaped<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match std::str::from_utf8(buf) {
            Ok(s) if s.chars().any(|c| c != '\n' && needs_escape(c)) => {
                use std::fmt::Write as _;
                let mut out = String::with_capacity(s.len() + 16);
                for c in s.chars() {
                    if c != '\n' && needs_escape(c) {
                        let _ = write!(out, "\\u{:04x}", c as u32);
                    } else {
                        out.push(c);
                    }
                }
                self.0.write_all(out.as_bytes())?;
            }
            _ => self.0.write_all(buf)?,
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.0.flush()
    }
}

/// The closing line of a `why` answer: which Karpenter release it was judged against, and
/// where kelp read it.
pub fn karpenter_line(v: Option<&crate::karpenter::version::Detected>) -> String {
    match v {
        Some(d) => format!("Karpenter {}: {}\n", d.version, clean(&d.evidence)),
        None => "Karpenter's release: unknown (no controller pod, build_info metric or NodePool CRD read)\n"
            .to_string(),
    }
}

#[cfg(test)]
mod json_escaped_tests {
    use std::io::Write;

    #[test]
    fn json_lines_keep_their_value_and_lose_their_raw_controls() {
        let line =
            serde_json::json!({"object": "Node/a\nFAKE\u{1b}]0;t\u{7}\r\u{202e}\u{9b}\u{7f}x"})
                .to_string()
                + "\n";
        let mut out = super::JsonEscaped(Vec::new());
        out.write_all(line.as_bytes()).unwrap();
        let got = String::from_utf8(out.0).unwrap();
        assert!(got.ends_with("\\u202e\\u009b\\u007fx\"}\n"), "{got}");
        assert!(
            !got.trim_end()
                .chars()
                .any(|c| c.is_control() || c == '\u{202e}'),
            "{got:?}"
        );
        let back: serde_json::Value = serde_json::from_str(&got).unwrap();
        let want: serde_json::Value = serde_json::from_str(&line).unwrap();
        assert_eq!(back, want);
    }
}
