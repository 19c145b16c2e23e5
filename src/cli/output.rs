//! Rendering: `-o table|json|yaml`, colour only on a terminal (and never with NO_COLOR).

use serde::Serialize;

pub use crate::explain::text::{
    clean, columns, display_width, pad, requests_line, serde_name, terminal_safe, verdict_table,
    Style,
};
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
    let shown: Vec<&crate::findings::Finding> = report
        .findings
        .iter()
        .take(SUMMARY_ABOVE)
        .map(|f| &**f)
        .collect();
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
                .map(|p| format!("  nodepool={}", clean(p)))
                .unwrap_or_default();
            out.push_str(&format!(
                "  {}  {}{}\n",
                style.severity(sev, &pad(f.code.as_str(), code_w)),
                style.bold(&clean(&f.object.to_string())),
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
            clean(origin),
            karpenter_line(&report.karpenter),
            report
                .generated_at
                .to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
        )));
    out
}

/// The footer's Karpenter: its release and where kelp read it, then the APIs it serves:
/// `v1.15.0 (image), karpenter.sh/v1`.
fn karpenter_line(k: &crate::findings::KarpenterInfo) -> String {
    if k.api_versions.is_empty() && k.version.is_none() {
        return "not found".to_string();
    }
    let version = match &k.version {
        Some(d) => format!("{} ({})", d.version, d.source.as_str()),
        None => "version unknown".to_string(),
    };
    let apis = if k.api_versions.is_empty() {
        String::new()
    } else {
        format!(", {}", k.api_versions.join(", "))
    };
    clean(&format!("{version}{apis}")).into_owned()
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::explain::text::sgr_len;

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
            source: crate::analysis::provisioning::VerdictSource::Kelp,
            event_agrees: None,
            launch: None,
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
