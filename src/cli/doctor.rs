//! `kelp doctor`: every finding, worst first.

use std::process::ExitCode;

use clap::ValueEnum;

use super::output::{self, Format, Style};
use super::source::SourceArgs;
use crate::analysis;
use crate::findings::{Report, Severity};
use crate::model::ObjectKind;

#[derive(Debug, clap::Args)]
#[command(after_help = "\
Examples:
  kelp doctor                                  the current kubectl context
  kelp doctor --context prod --fail-on warning
      exit 1 on any warning or worse (for CI and cron)
  kelp doctor --from dump/ -o json
      a folder of `kubectl get -o yaml` output, as JSON
  kelp doctor --from snap.json --now 2026-11-21T10:00:00Z

  kelp doctor --code pod-unschedulable -n ml
      only pending pods in namespace ml
  kelp doctor --nodepool gpu -o name
      Kind/namespace/name of each finding about NodePool gpu
  kelp doctor -l app=web
      findings about pods labelled app=web

Filters (--code, --nodepool, -n, -l) apply to the report, its summary and the exit status.
Namespaces: all by default (-A says so explicitly); -n keeps findings about objects in NS.
Above 50 findings the table starts with counts by code and NodePool, then the worst 50.

Exit status: 0 nothing at or above --fail-on, 1 something is, 2 kelp could not run.")]
pub struct Args {
    #[command(flatten)]
    pub source: SourceArgs,
    /// Output format
    #[arg(short, long, value_enum, default_value_t = Format::Table)]
    pub output: Format,
    /// Exit 1 when a finding is at or above this severity
    #[arg(long, value_enum, default_value_t = FailOn::Critical)]
    pub fail_on: FailOn,
    #[command(flatten)]
    pub filter: Filter,
}

/// Which findings to show.
#[derive(Debug, Clone, Default, clap::Args)]
#[command(next_help_heading = "Filters")]
pub struct Filter {
    /// Only findings with this code (repeat for several), e.g. pod-unschedulable
    #[arg(long, value_name = "CODE")]
    pub code: Vec<String>,
    /// Only findings about this NodePool (repeat for several)
    #[arg(long, value_name = "NAME")]
    pub nodepool: Vec<String>,
    /// Only findings about objects in this namespace
    #[arg(short, long, value_name = "NS", conflicts_with = "all_namespaces")]
    pub namespace: Option<String>,
    /// Every namespace (the default)
    #[arg(short = 'A', long)]
    pub all_namespaces: bool,
    /// Only findings about pods whose labels match this selector (k=v, k!=v, k, !k, k in (a,b), k notin (a,b))
    #[arg(short = 'l', long, value_name = "SELECTOR")]
    pub selector: Option<String>,
}

/// One term of a label selector.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Term {
    In(String, Vec<String>),
    NotIn(String, Vec<String>),
    Exists(String),
    NotExists(String),
}

/// Parse a kubectl label selector (`app=web,tier!=db,env in (a,b),!legacy`).
fn parse_selector(s: &str) -> anyhow::Result<Vec<Term>> {
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0i32, 0usize);
    for (i, c) in s.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&s[start..]);
    let bad = || anyhow::anyhow!("-l {:?}: not a label selector", output::clean(s));
    let list = |v: &str| -> anyhow::Result<Vec<String>> {
        let inner = v
            .trim()
            .strip_prefix('(')
            .and_then(|v| v.strip_suffix(')'))
            .ok_or_else(bad)?;
        Ok(inner.split(',').map(|x| x.trim().to_string()).collect())
    };
    let key = |k: &str| -> anyhow::Result<String> {
        let k = k.trim();
        if k.is_empty() || k.contains(char::is_whitespace) {
            return Err(bad());
        }
        Ok(k.to_string())
    };
    parts
        .into_iter()
        .map(|p| {
            let p = p.trim();
            if let Some((k, v)) = p.split_once("!=") {
                Ok(Term::NotIn(key(k)?, vec![v.trim().to_string()]))
            } else if let Some((k, v)) = p.split_once("==").or_else(|| p.split_once('=')) {
                Ok(Term::In(key(k)?, vec![v.trim().to_string()]))
            } else if let Some((k, v)) = p.split_once(" notin ") {
                Ok(Term::NotIn(key(k)?, list(v)?))
            } else if let Some((k, v)) = p.split_once(" in ") {
                Ok(Term::In(key(k)?, list(v)?))
            } else if let Some(k) = p.strip_prefix('!') {
                Ok(Term::NotExists(key(k)?))
            } else {
                Ok(Term::Exists(key(p)?))
            }
        })
        .collect()
}

fn selects(terms: &[Term], labels: &std::collections::BTreeMap<String, String>) -> bool {
    terms.iter().all(|t| match t {
        Term::In(k, v) => labels.get(k).is_some_and(|l| v.contains(l)),
        Term::NotIn(k, v) => labels.get(k).is_none_or(|l| !v.contains(l)),
        Term::Exists(k) => labels.contains_key(k),
        Term::NotExists(k) => !labels.contains_key(k),
    })
}

impl Filter {
    /// Keep only the findings the filters select. An unknown `--code` is an error that
    /// lists the codes there are.
    pub fn apply(
        &self,
        report: &mut Report,
        cluster: &crate::model::Cluster,
    ) -> anyhow::Result<()> {
        for c in &self.code {
            if !crate::findings::Code::ALL.iter().any(|k| k.as_str() == c) {
                let all: Vec<&str> = crate::findings::Code::ALL
                    .iter()
                    .map(|k| k.as_str())
                    .collect();
                anyhow::bail!(
                    "--code {:?}: no such code; codes: {}",
                    output::clean(c),
                    all.join(", ")
                );
            }
        }
        let selector = self.selector.as_deref().map(parse_selector).transpose()?;
        report.findings.retain(|f| {
            (self.code.is_empty() || self.code.iter().any(|c| c == f.code.as_str()))
                && (self.nodepool.is_empty()
                    || f.nodepool
                        .as_ref()
                        .is_some_and(|p| self.nodepool.contains(p))
                    || (f.object.kind == ObjectKind::NodePool
                        && self.nodepool.contains(&f.object.name)))
                && self
                    .namespace
                    .as_ref()
                    .is_none_or(|ns| f.object.namespace.as_ref() == Some(ns))
                && selector.as_ref().is_none_or(|terms| {
                    f.object.kind == ObjectKind::Pod
                        && cluster
                            .pods
                            .get(&(
                                f.object.namespace.clone().unwrap_or_default(),
                                f.object.name.clone(),
                            ))
                            .is_some_and(|p| selects(terms, &p.metadata.labels))
                })
        });
        Ok(())
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum FailOn {
    Critical,
    Warning,
    Info,
    /// Always exit 0 when kelp ran
    Never,
}

impl FailOn {
    pub fn threshold(self) -> Option<Severity> {
        match self {
            FailOn::Critical => Some(Severity::Critical),
            FailOn::Warning => Some(Severity::Warning),
            FailOn::Info => Some(Severity::Info),
            FailOn::Never => None,
        }
    }
}

/// Exit status for a report.
pub fn exit_for(report: &Report, fail_on: FailOn) -> ExitCode {
    match (fail_on.threshold(), report.worst()) {
        (Some(t), Some(w)) if w >= t => ExitCode::from(1),
        _ => ExitCode::SUCCESS,
    }
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let loaded = args.source.load()?;
    let mut report = analysis::analyze(&loaded.cluster, loaded.now);
    args.filter.apply(&mut report, &loaded.cluster)?;
    loaded.progress.finish();
    print(&report, &loaded.origin, args.output)?;
    let code = exit_for(&report, args.fail_on);
    // The process ends here: freeing a large model object by object would only cost time
    // (a tenth of a run on a large dump); the OS takes the memory back whole.
    std::mem::forget(loaded);
    Ok(code)
}

pub fn print(report: &Report, origin: &str, format: Format) -> anyhow::Result<()> {
    let style = Style::detect();
    let text = match format {
        Format::Table => output::report_table(report, origin, style),
        Format::Wide => output::report_wide(report, style),
        Format::Name => output::report_names(report),
        f => output::structured(f, report)?,
    };
    output::emit(&text, style)?;
    Ok(())
}
