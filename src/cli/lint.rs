//! `kelp lint PATH...`: offline checks of Karpenter manifests for GitOps CI, as text,
//! JSON or SARIF, with `--explain RULE` for the why, the fix and examples.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::ValueEnum;

use super::doctor::FailOn;
use super::output::{self, Style};
use crate::findings::Severity;
use crate::karpenter::version::{self, Release, Window};
use crate::lint::{self, rules, Config};

#[derive(Debug, clap::Args)]
#[command(after_help = "\
Examples:
  kelp lint manifests/
      every *.yaml|*.yml|*.json under manifests/
  kustomize build overlays/prod | kelp lint -
      what kustomize renders, from stdin
  kelp lint manifests/ -o sarif > kelp.sarif
      for GitHub code scanning (upload-sarif)
  kelp lint pools.yaml --fail-on warning
      exit 1 on any warning or worse (CI gate)
  kelp lint --explain spot-too-few-families
      why a rule exists, how to fix it, examples
  kelp lint --list-rules                        every rule with its severity
  kelp lint pools/ --karpenter-version v1.14.3
      that release's CRDs and rules (default: the newest kelp knows)

Suppress one result with a comment on its line or right above it:
  consolidateAfter: 1m   # kelp:ignore consolidate-after-too-short
Or with .kelp.yaml in the current directory (or --config FILE):
  karpenterVersion: v1.14.3
  rules: {missing-min-values: warning, ami-alias-latest: off}
  ignore: [{paths: [\"envs/dev/**\"], rules: [nodepool-missing-limits]}]

Each file is parsed whole: at most 32 MiB, nested at most 100 levels deep (a deeper file is
its parse-error result).

Exit status: 0 nothing at or above --fail-on, 1 something is, 2 kelp could not run.")]
pub struct Args {
    /// Manifests: files, folders (recursive *.yaml|*.yml|*.json) or - for stdin
    #[arg(value_name = "PATH", required_unless_present_any = ["explain", "list_rules"])]
    pub paths: Vec<PathBuf>,
    /// Output format
    #[arg(short, long, value_enum, default_value_t = LintFormat::Text)]
    pub output: LintFormat,
    /// Exit 1 when a result is at or above this severity
    #[arg(long, value_enum, default_value_t = FailOn::Critical)]
    pub fail_on: FailOn,
    /// Configuration file (default: .kelp.yaml in the current directory, if any)
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// The Karpenter release the manifests are for, e.g. v1.14.3 or 1.14: rules that
    /// changed between releases follow it (wins over karpenterVersion in .kelp.yaml;
    /// default: the newest release kelp knows)
    #[arg(long, value_name = "VERSION")]
    pub karpenter_version: Option<Release>,
    /// Print a rule's why, its fix and a bad and a good example, then exit
    #[arg(long, value_name = "RULE", conflicts_with = "list_rules")]
    pub explain: Option<String>,
    /// List every rule with its default severity, then exit
    #[arg(long)]
    pub list_rules: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub enum LintFormat {
    /// `file:line: severity rule: message`, one result a line
    #[default]
    Text,
    /// `{"results": [{"rule", "severity", "file", "line", "message"}]}`
    Json,
    /// SARIF 2.1.0, for code-scanning upload
    Sarif,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    if let Some(id) = &args.explain {
        let Some(rule) = rules::rule(id) else {
            anyhow::bail!("unknown rule {id:?}; rules: {}", rules::ids().join(", "));
        };
        output::emit(&rules::explain(rule), Style::detect())?;
        return Ok(ExitCode::SUCCESS);
    }
    if args.list_rules {
        let w = rules::ids().iter().map(|i| i.len()).max().unwrap_or(0);
        let list: String = rules::RULES
            .iter()
            .map(|r| {
                format!(
                    "{:<w$}  {:<8}  {}\n",
                    r.id,
                    r.severity.to_string(),
                    r.summary
                )
            })
            .collect();
        output::emit(&list, Style::detect())?;
        return Ok(ExitCode::SUCCESS);
    }
    let mut config = Config::discover(args.config.as_deref())?;
    if let Some(v) = args.karpenter_version {
        config.karpenter_version = Some(v);
    }
    let target = config.target();
    if target.window() != Window::Supported {
        eprintln!(
            "kelp lint: Karpenter {target} is outside the releases kelp is tested against ({} to {}): rules that changed across releases are read as {}'s",
            version::OLDEST.minor_name(),
            version::NEWEST.minor_name(),
            if target.window() == Window::Older { version::OLDEST.minor_name() } else { version::NEWEST.minor_name() },
        );
    }
    let inputs = lint::read_inputs(&args.paths)?;
    let report = lint::lint(&inputs, &config);
    let style = Style::detect();
    let rendered = match args.output {
        LintFormat::Text => text(&report, style),
        LintFormat::Json => serde_json::to_string_pretty(&report)? + "\n",
        LintFormat::Sarif => {
            serde_json::to_string_pretty(&lint::sarif::log(&report.results))? + "\n"
        }
    };
    output::emit(&rendered, style)?;
    eprintln!(
        "kelp lint: {} file{}, {} Karpenter object{} or workload{}: {} critical, {} warning, {} info (rules of Karpenter {})",
        report.files,
        plural(report.files),
        report.objects,
        plural(report.objects),
        plural(report.objects),
        report.count(Severity::Critical),
        report.count(Severity::Warning),
        report.count(Severity::Info),
        report.karpenter_version,
    );
    Ok(match (args.fail_on.threshold(), report.worst()) {
        (Some(t), Some(w)) if w >= t => ExitCode::from(1),
        _ => ExitCode::SUCCESS,
    })
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

/// `file:line: severity rule: message`, one result a line.
pub fn text(report: &lint::Report, style: Style) -> String {
    report
        .results
        .iter()
        .map(|r| {
            format!(
                "{}:{}: {} {}: {}\n",
                r.file,
                r.line,
                style.severity(r.severity, &r.severity.to_string()),
                style.bold(&r.rule),
                output::clean(&r.message)
            )
        })
        .collect()
}
