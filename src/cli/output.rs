//! Rendering: `-o table|json|yaml`, colour only on a terminal (and never with NO_COLOR).

use std::io::IsTerminal;

use serde::Serialize;

use crate::findings::{Report, Severity};

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Default)]
pub enum Format {
    /// Human-readable, grouped by severity
    #[default]
    Table,
    /// The findings contract, as JSON
    Json,
    /// The same as YAML
    Yaml,
    /// One line per finding with every column (severity, code, object, nodepool, since, message)
    Wide,
    /// One Kind/namespace/name per finding (for xargs and scripts)
    Name,
}

/// `-o` for `why` and `what-if`: an answer, not a findings report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Default)]
pub enum AnswerFormat {
    /// Human-readable: each NodePool's verdict as a table
    #[default]
    Table,
    /// The whole answer as JSON
    Json,
    /// The whole answer as YAML
    Yaml,
}

impl From<AnswerFormat> for Format {
    fn from(f: AnswerFormat) -> Self {
        match f {
            AnswerFormat::Table => Format::Table,
            AnswerFormat::Json => Format::Json,
            AnswerFormat::Yaml => Format::Yaml,
        }
    }
}

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
fn sgr_len(s: &str) -> Option<usize> {
    let body = s.strip_prefix("\x1b[")?;
    let digits = body
        .bytes()
        .take_while(|b| b.is_ascii_digit() || *b == b';')
        .count();
    (body.as_bytes().get(digits) == Some(&b'm')).then_some(2 + digits + 1)
}

/// Write rendered text to stdout, terminal-safe (see [`terminal_safe`]). A reader that
/// went away (`kelp ... | head`) ends kelp quietly with status 0, as kubectl and ripgrep
/// do, instead of a panic.
pub fn emit(text: &str, style: Style) -> std::io::Result<()> {
    use std::io::Write;
    let safe = terminal_safe(text, style.color);
    let mut out = std::io::stdout().lock();
    match out.write_all(safe.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => std::process::exit(0),
        other => other,
    }
}

/// Serialise as JSON or YAML (the table form is each command's own).
pub fn structured<T: Serialize>(format: Format, value: &T) -> anyhow::Result<String> {
    Ok(match format {
        Format::Yaml => serde_norway::to_string(value)?,
        _ => serde_json::to_string_pretty(value)? + "\n",
    })
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

/// Above this many findings the table starts with counts by code and NodePool and shows
/// only the first (worst) this many.
pub const SUMMARY_ABOVE: usize = 50;

/// `code 12, other 3` for the summary, most first.
fn counts<'a>(items: impl Iterator<Item = &'a str>) -> String {
    let mut by: std::collections::BTreeMap<&str, usize> = Default::default();
    for i in items {
        *by.entry(i).or_default() += 1;
    }
    let mut v: Vec<(&str, usize)> = by.into_iter().collect();
    v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    v.iter()
        .map(|(k, n)| format!("{} {n}", clean(k)))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The doctor table: findings grouped by severity, worst first, then a summary line. A
/// big report starts with counts by code and NodePool and shows the worst
/// [`SUMMARY_ABOVE`] findings, then how to see the rest.
pub fn report_table(report: &Report, origin: &str, style: Style) -> String {
    let mut out = String::new();
    let total = report.findings.len();
    let shown: Vec<&crate::findings::Finding> =
        report.findings.iter().take(SUMMARY_ABOVE).collect();
    if total > SUMMARY_ABOVE {
        out.push_str(&style.bold(&format!("SUMMARY ({total} findings)")));
        out.push('\n');
        out.push_str(&format!(
            "  by code:     {}\n",
            counts(report.findings.iter().map(|f| f.code.as_str()))
        ));
        out.push_str(&format!(
            "  by nodepool: {}\n\n",
            counts(
                report
                    .findings
                    .iter()
                    .map(|f| f.nodepool.as_deref().unwrap_or("(none)"))
            )
        ));
    }
    for sev in [Severity::Critical, Severity::Warning, Severity::Info] {
        let group: Vec<_> = shown
            .iter()
            .copied()
            .filter(|f| f.severity == sev)
            .collect();
        if group.is_empty() {
            continue;
        }
        let title = format!("{} ({})", sev.to_string().to_uppercase(), group.len());
        out.push_str(&style.severity(sev, &style.bold(&title)));
        out.push('\n');
        let code_w = group
            .iter()
            .map(|f| display_width(f.code.as_str()))
            .max()
            .unwrap_or(0);
        for f in group {
            let pool = f
                .nodepool
                .as_deref()
                .map(|p| format!("  nodepool={p}"))
                .unwrap_or_default();
            out.push_str(&format!(
                "  {}  {}{}\n",
                style.severity(sev, &pad(f.code.as_str(), code_w)),
                style.bold(&f.object.to_string()),
                style.dim(&pool)
            ));
            out.push_str(&format!("  {:code_w$}  {}\n", "", clean(&f.message)));
        }
        out.push('\n');
    }
    if total > SUMMARY_ABOVE {
        out.push_str(&style.bold(&format!(
            "{} more: use --code / --nodepool / -o json\n\n",
            total - SUMMARY_ABOVE
        )));
    }
    let count = |s| report.findings.iter().filter(|f| f.severity == s).count();
    if report.findings.is_empty() {
        out.push_str("No findings: Karpenter looks healthy.\n");
    }
    out.push_str(&style.dim(&format!(
            "{} critical, {} warning, {} info · {} · Karpenter {} · evaluated at {}\n",
            count(Severity::Critical),
            count(Severity::Warning),
            count(Severity::Info),
            origin,
            if report.karpenter.api_versions.is_empty() {
                "not found".to_string()
            } else {
                report.karpenter.api_versions.join(", ")
            },
            report
                .generated_at
                .to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
        )));
    out
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

/// `-o name`: `Kind/namespace/name` (or `Kind/name`) per finding.
pub fn report_names(report: &Report) -> String {
    let mut out = String::new();
    for f in &report.findings {
        let o = &f.object;
        let line = match &o.namespace {
            Some(ns) => format!("{}/{ns}/{}", o.kind, o.name),
            None => format!("{}/{}", o.kind, o.name),
        };
        out.push_str(&clean(&line));
        out.push('\n');
    }
    out
}

/// `-o wide`: one line per finding, every column.
pub fn report_wide(report: &Report, style: Style) -> String {
    let mut rows = vec![vec![
        "SEVERITY".to_string(),
        "CODE".into(),
        "OBJECT".into(),
        "NODEPOOL".into(),
        "SINCE".into(),
        "MESSAGE".into(),
    ]];
    for f in &report.findings {
        rows.push(vec![
            style.severity(f.severity, &f.severity.to_string()),
            f.code.as_str().to_string(),
            clean(&f.object.to_string()).into_owned(),
            clean(f.nodepool.as_deref().unwrap_or("-")).into_owned(),
            f.since
                .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true))
                .unwrap_or_else(|| "-".into()),
            clean(&f.message).into_owned(),
        ]);
    }
    columns(&rows)
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
    use crate::analysis::provisioning::Verdict;
    let mut table = vec![vec![
        "NODEPOOL".to_string(),
        "WEIGHT".into(),
        "VERDICT".into(),
        "WHY".into(),
    ]];
    for (v, weight) in rows {
        let why = if v.reasons.is_empty() {
            match v.verdict {
                Verdict::Compatible => {
                    "passes readiness, limits, taints and requirements".to_string()
                }
                _ => String::new(),
            }
        } else {
            let mut r: Vec<String> = v
                .reasons
                .iter()
                .map(|r| format!("{}: {}", serde_name(r.category), clean(&r.message)))
                .collect();
            if v.source == "event" {
                r.push("(from Karpenter's event)".into());
            }
            r.join("; ")
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cluster_text_cannot_drive_the_terminal_or_forge_lines() {
        let hostile = "ok\x1b]0;pwned\x07\x1b[2J\nerror: forged\r\u{202e}cba\u{9b}";
        let c = clean(hostile);
        assert!(!c.chars().any(|c| c.is_control()), "{c:?}");
        assert_eq!(
            c,
            "ok\\x1b]0;pwned\\x07\\x1b[2J\\nerror: forged\\r\\u{202e}cba\\x9b"
        );
        assert!(matches!(
            clean("plain ünïcode"),
            std::borrow::Cow::Borrowed(_)
        ));
    }

    /// `s` without colour codes.
    fn strip(s: &str) -> String {
        let mut out = String::new();
        let mut rest = s;
        while let Some(c) = rest.chars().next() {
            if let Some(n) = sgr_len(rest) {
                rest = &rest[n..];
                continue;
            }
            out.push(c);
            rest = &rest[c.len_utf8()..];
        }
        out
    }

    #[test]
    fn coloured_and_wide_cells_keep_columns_aligned() {
        use crate::analysis::provisioning::{PoolVerdict, Verdict};
        let style = Style { color: true };
        let verdict = |name: &str, v| PoolVerdict {
            name: name.into(),
            verdict: v,
            reasons: Vec::new(),
            source: "kelp",
            event_agrees: None,
        };
        let rows = [
            (verdict("gpu", Verdict::Rejected), 10),
            (verdict("général-池", Verdict::Compatible), 0),
            (verdict("x", Verdict::Unknown), 100),
        ];
        let table = verdict_table(rows.iter().map(|(v, w)| (v, *w)), style);
        assert!(table.contains("\x1b["), "coloured: {table:?}");
        let plain = strip(&table);
        let lines: Vec<&str> = plain.lines().collect();
        assert_eq!(lines.len(), 4, "{plain}");
        // Each column starts at the same display column on every line.
        let starts = |line: &str| -> Vec<usize> {
            let mut cols = Vec::new();
            let mut col = 0;
            let mut prev_space = 0;
            for c in line.chars() {
                if c == ' ' {
                    prev_space += 1;
                } else {
                    if prev_space >= 2 || col == 0 {
                        cols.push(col);
                    }
                    prev_space = 0;
                }
                col += unicode_width::UnicodeWidthChar::width(c).unwrap_or(0);
            }
            cols
        };
        let header = starts(lines[0]);
        assert_eq!(header.len(), 4, "{:?}", lines[0]);
        for l in &lines[1..] {
            assert_eq!(starts(l)[..3], header[..3], "{plain}");
        }
        assert_eq!(display_width("\x1b[1;31mab\x1b[0m池"), 4);
        assert_eq!(pad("\x1b[1mab\x1b[0m", 4), "\x1b[1mab\x1b[0m  ");
    }

    #[test]
    fn only_kelps_own_colour_codes_reach_stdout() {
        let style = Style { color: true };
        let text = format!("{}\tx\n{}", style.bold("T"), "e\x1b]8;;http://x\x07\x1b[H");
        let safe = terminal_safe(&text, true);
        assert_eq!(safe, "\x1b[1mT\x1b[0m\tx\ne\\x1b]8;;http://x\\x07\\x1b[H");
        // Without colour, no escape sequence at all passes.
        assert_eq!(terminal_safe("\x1b[1mT", false), "\\x1b[1mT");
    }
}
