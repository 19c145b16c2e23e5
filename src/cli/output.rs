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

/// The doctor table: findings grouped by severity, worst first, then a summary line.
pub fn report_table(report: &Report, origin: &str, style: Style) -> String {
    let mut out = String::new();
    for sev in [Severity::Critical, Severity::Warning, Severity::Info] {
        let group: Vec<_> = report
            .findings
            .iter()
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
            .map(|f| f.code.as_str().len())
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
                style.severity(sev, &format!("{:<code_w$}", f.code.as_str())),
                style.bold(&f.object.to_string()),
                style.dim(&pool)
            ));
            out.push_str(&format!("  {:code_w$}  {}\n", "", f.message));
        }
        out.push('\n');
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

/// Fixed-width columns for small tables.
pub fn columns(rows: &[Vec<String>]) -> String {
    let n = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..n)
        .map(|i| {
            rows.iter()
                .filter_map(|r| r.get(i))
                .map(|c| c.chars().count())
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
                    format!("{c:<w$}", w = widths[i])
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
                .map(|r| format!("{}: {}", serde_name(r.category), r.message))
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
