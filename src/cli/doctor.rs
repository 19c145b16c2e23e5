//! `kelp doctor`: every finding, worst first.

use std::process::ExitCode;

use clap::ValueEnum;

use super::output::{self, Format, Style};
use super::source::SourceArgs;
use crate::analysis;
use crate::findings::{Report, Severity};

#[derive(Debug, clap::Args)]
#[command(after_help = "\
Examples:
  kelp doctor                                  the current kubectl context
  kelp doctor --context prod --fail-on warning
      exit 1 on any warning or worse (for CI and cron)
  kelp doctor --from dump/ -o json
      a folder of `kubectl get -o yaml` output, as JSON
  kelp doctor --from snap.json --now 2026-11-21T10:00:00Z

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
    let report = analysis::analyze(&loaded.cluster, loaded.now);
    print(&report, &loaded.origin, args.output)?;
    Ok(exit_for(&report, args.fail_on))
}

pub fn print(report: &Report, origin: &str, format: Format) -> anyhow::Result<()> {
    let style = Style::detect();
    let text = match format {
        Format::Table => output::report_table(report, origin, style),
        f => output::structured(f, report)?,
    };
    output::emit(&text, style)?;
    Ok(())
}
