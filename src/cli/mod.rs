//! The command line: one file per subcommand. Each parses its flags, asks a source for a
//! model, runs the analysis and renders. Errors become one line on stderr and exit 2.

pub mod catalog;
pub mod completion;
pub mod demo;
pub mod doctor;
pub mod generate;
pub mod history;
pub mod lint;
pub mod output;
pub mod serve;
pub mod snapshot;
pub mod source;
pub mod top;
pub mod what_if;
pub mod why;

use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};
use tracing_subscriber::fmt::writer::BoxMakeWriter;

const ABOUT: &str = "kelp explains what Karpenter is doing and why: pending pods, NodePools, NodeClaims, drift and disruption.";

const AFTER_HELP: &str = "\
Examples:
  kelp demo
      see kelp work on a bundled cluster, no cluster needed
  kelp doctor
      diagnose the cluster of your current kubectl context
  kelp doctor --context prod -o json
      the same, for another context, as JSON
  kelp why pod ml/trainer-0
      why is this pod pending? every NodePool's verdict
  kelp why node ip-10-0-1-23.ec2.internal
      why isn't Karpenter replacing this node?
  kelp snapshot -f cluster.json
      capture what kelp reads, to analyse offline or share
  kelp doctor --from cluster.json
      analyse a dump (kubectl get -o yaml|json output works too)
  kelp lint manifests/ -o sarif > kelp.sarif
      check NodePool/EC2NodeClass manifests offline, for CI
  kelp what-if --pod web.yaml --nodepools karpenter/
      would this workload fit these NodePools? (offline)
  kelp catalog -o yaml > catalog.yaml
      the instance types kelp judges with, as a file for --catalog

kelp only reads (get/list) and never reads Secrets.";

#[derive(Debug, Parser)]
#[command(name = "kelp", version, about = ABOUT, after_help = AFTER_HELP, propagate_version = true)]
pub struct Cli {
    /// Say more on stderr (e.g. which kinds a dump held that kelp does not read)
    #[arg(short, long, global = true)]
    pub verbose: bool,
    #[command(subcommand)]
    pub command: Command,
}

/// `-v/--verbose` was given.
static VERBOSE: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Whether `-v/--verbose` was given.
pub fn verbose() -> bool {
    VERBOSE.load(std::sync::atomic::Ordering::Relaxed)
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Diagnose Karpenter: every finding, worst first
    Doctor(doctor::Args),
    /// Explain one pod (why pending) or one node (why not disrupted)
    Why(why::Args),
    /// Write a dump of everything kelp reads, for `--from` later
    Snapshot(snapshot::Args),
    /// The dashboard (or the report) of a bundled, realistic cluster: no cluster needed
    Demo(demo::Args),
    /// Check NodePool and EC2NodeClass manifests offline (text, JSON or SARIF)
    Lint(lint::Args),
    /// Would this pod fit these NodePool manifests? Each pool's verdict, offline
    WhatIf(what_if::Args),
    /// Watch clusters: findings as Prometheus metrics and logs, and the live dashboard
    Serve(serve::Args),
    /// The instance-type catalogue kelp judges with (types, allocatable, offerings), or write one for --catalog
    Catalog(catalog::Args),
    /// Print monitoring configuration: Prometheus alerts or a Grafana dashboard
    Generate(generate::Args),
    /// A live terminal view: pools, nodes and pending pods with usage, $/hr and verdicts
    Top(top::Args),
    /// What Karpenter did and kelp found, as `serve --state-dir` kept it (per node, pod, pool)
    History(history::Args),
    /// Print a shell completion script (bash, zsh, fish)
    Completion(completion::Args),
}

/// How kelp was invoked: `kubectl kelp` when run as the kubectl plugin (a binary, copy or
/// symlink named `kubectl-kelp`), else `kelp`.
pub fn bin_name() -> &'static str {
    let invoked = std::env::args_os()
        .next()
        .map(std::path::PathBuf::from)
        .and_then(|p| p.file_stem().map(|s| s.to_string_lossy().into_owned()))
        .unwrap_or_default();
    if invoked.starts_with("kubectl-kelp") {
        "kubectl kelp"
    } else {
        "kelp"
    }
}

/// Parse the command line, naming kelp as it was invoked in help and usage.
fn parse() -> Cli {
    let name = bin_name();
    let mut cmd = Cli::command().bin_name(name).display_name(name);
    if name != "kelp" {
        cmd = cmd.after_help(AFTER_HELP.replace("  kelp ", "  kubectl kelp "));
    }
    let matches = cmd.get_matches();
    Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit())
}

/// Parse arguments, run, and map the outcome to an exit status.
pub fn main() -> ExitCode {
    let cli = parse();
    VERBOSE.store(cli.verbose, std::sync::atomic::Ordering::Relaxed);
    let logs = match &cli.command {
        Command::Serve(a) => init_logging(a.log_format, "info", Writer::Background),
        // The demo's dashboard writes the same audit lines as serve's.
        Command::Demo(a) if a.output.is_none() && !a.dump => {
            init_logging(LogFormat::Text, "kelp=warn,audit=info", Writer::Background)
        }
        _ => init_logging(LogFormat::Text, "kelp=warn", Writer::Direct),
    };
    if !matches!(
        cli.command,
        Command::Serve(_) | Command::Top(_) | Command::Demo(_)
    ) {
        crate::heap::one_shot();
    }
    let result = match cli.command {
        Command::Doctor(a) => doctor::run(a),
        Command::Why(a) => why::run(a),
        Command::Snapshot(a) => snapshot::run(a),
        Command::Demo(a) => demo::run(a),
        Command::Lint(a) => lint::run(a),
        Command::WhatIf(a) => what_if::run(a),
        Command::Serve(a) => serve::run(a),
        Command::Generate(a) => generate::run(a),
        Command::Top(a) => top::run(a),
        Command::Catalog(a) => catalog::run(a),
        Command::History(a) => history::run(a),
        Command::Completion(a) => completion::run(a),
    };
    // Every log line is out before the outcome's.
    drop(logs);
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {}", one_line(&e));
            ExitCode::from(2)
        }
    }
}

/// An error and its causes on one line.
fn one_line(e: &anyhow::Error) -> String {
    let mut parts: Vec<String> = Vec::new();
    for cause in e.chain() {
        let s = cause.to_string();
        if !parts.iter().any(|p| p.contains(&s)) {
            parts.push(s);
        }
    }
    parts.join(": ").replace('\n', " ")
}

/// Log line format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    Text,
    Json,
}

/// Logs go to stderr; `KELP_LOG` (an EnvFilter, e.g. `kelp=debug`) overrides the level.
/// Who writes log lines to stderr.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Writer {
    /// The thread that logs, as it logs: one-shot commands, whose few lines interleave
    /// with what they print.
    Direct,
    /// One thread of its own, fed in order: a dashboard writes an audit line per read, and
    /// a request should not wait on stderr (a container runtime's pipe). Nothing is
    /// dropped: a full queue (128,000 lines) makes the logger wait; the guard that is
    /// returned writes what is queued when dropped.
    Background,
}

fn init_logging(
    format: LogFormat,
    default: &str,
    writer: Writer,
) -> Option<tracing_appender::non_blocking::WorkerGuard> {
    let filter = tracing_subscriber::EnvFilter::try_from_env("KELP_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr())
        && std::env::var_os("NO_COLOR").is_none();
    // JSON lines also escape what JSON lets through raw (C1 and bidi controls).
    let json = format == LogFormat::Json;
    let (to, guard) = match writer {
        Writer::Direct if json => (
            BoxMakeWriter::new(|| crate::explain::text::JsonEscaped(std::io::stderr())),
            None,
        ),
        Writer::Direct => (BoxMakeWriter::new(std::io::stderr), None),
        Writer::Background => {
            let (to, guard) = tracing_appender::non_blocking::NonBlockingBuilder::default()
                .lossy(false)
                .thread_name("kelp-log")
                .finish(std::io::stderr());
            let to = if json {
                BoxMakeWriter::new(move || crate::explain::text::JsonEscaped(to.clone()))
            } else {
                BoxMakeWriter::new(to)
            };
            (to, Some(guard))
        }
    };
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(to)
        .with_ansi(ansi);
    let _ = match format {
        // Every field is escaped (output::clean): a finding's message or an API error
        // that carries a newline or an escape code cannot forge a line or drive a terminal.
        LogFormat::Text => builder.fmt_fields(text_fields()).try_init(),
        LogFormat::Json => builder.json().flatten_event(true).try_init(),
    };
    guard
}

pub use crate::explain::text::text_fields;

/// A current-thread runtime for one-shot commands that talk to a cluster.
pub(crate) fn block_on<F: std::future::Future>(f: F) -> anyhow::Result<F::Output> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    Ok(rt.block_on(f))
}
