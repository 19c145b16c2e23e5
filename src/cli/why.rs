//! `kelp why pod NAMESPACE/NAME`, `kelp why node NAME` and `kelp why nodepool NAME`.

use std::process::ExitCode;

use clap::Subcommand;

use super::output::{self, AnswerFormat, Format, Style};
use super::source::SourceArgs;
use crate::analysis::{self, Pass};
use crate::explain;
use crate::model::Cluster;

#[derive(Debug, clap::Args)]
#[command(after_help = "\
Examples:
  kelp why pod ml/trainer-0
      every NodePool's verdict, Karpenter's event, what to change
  kelp why pod trainer-0 -n ml -o json
  kelp why node ip-10-0-1-23.ec2.internal
      drift, expiry, emptiness and every disruption blocker
  kelp why node ip-10-0-1-23.ec2.internal --state-dir /var/lib/kelp
      and what happened before, from the history `kelp serve --state-dir` keeps
  kelp why nodepool default
      its rollout (drifted, replacing, held and why, ETA) and budget calendar")]
pub struct Args {
    #[command(subcommand)]
    pub target: Target,
    #[command(flatten)]
    pub source: SourceArgs,
    /// Output format
    #[arg(short, long, value_enum, default_value_t = AnswerFormat::Table, global = true)]
    pub output: AnswerFormat,
    /// Add what happened before (the last 20 rows of the last 14 days) from the history
    /// `kelp serve --state-dir` keeps there
    #[arg(long, value_name = "DIR", env = "KELP_STATE_DIR", global = true)]
    pub state_dir: Option<std::path::PathBuf>,
}

/// Rows of history `why` adds, at most.
const BEFORE: usize = 20;

/// What happened before, from the history in `dir`, else the one a dump carries (`kelp
/// snapshot --history`); none when there is none (a store that cannot be read is said once).
fn before(
    dir: Option<&std::path::Path>,
    carried: Option<&str>,
    ask: &crate::history::Ask,
) -> Option<Vec<crate::history::Record>> {
    let found = match dir {
        Some(dir) => {
            let since = chrono::Utc::now() - chrono::Duration::days(14);
            crate::history::store::read(dir, ask, Some(since), 100_000).map_err(|e| e.to_string())
        }
        None => serde_json::from_str::<Vec<crate::history::Record>>(carried?)
            .map(|rows| crate::history::store::select(&rows, ask, None))
            .map_err(|e| format!("the dump's history cannot be read: {e}")),
    };
    match found {
        Ok(mut rows) => {
            let skip = rows.len().saturating_sub(BEFORE);
            rows.drain(..skip);
            Some(rows)
        }
        Err(e) => {
            eprintln!("kelp: {e}");
            None
        }
    }
}

/// The answer, with `history` beside it when there is one.
fn with_history<T: serde::Serialize>(
    answer: &T,
    history: Option<&[crate::history::Record]>,
) -> anyhow::Result<serde_json::Value> {
    let mut v = serde_json::to_value(answer)?;
    if let (Some(rows), Some(obj)) = (history, v.as_object_mut()) {
        obj.insert("history".into(), serde_json::to_value(rows)?);
    }
    Ok(v)
}

fn history_text(rows: Option<&[crate::history::Record]>) -> String {
    match rows {
        None => String::new(),
        Some([]) => "\nWhat happened before: nothing in the history of the last 14 days.\n".into(),
        Some(rows) => {
            let mut out = String::from("\nWhat happened before (kelp history, newest last):\n");
            for r in rows {
                out.push_str("  ");
                out.push_str(&r.line());
                out.push('\n');
            }
            out
        }
    }
}

#[derive(Debug, Subcommand)]
pub enum Target {
    /// Why a pod is pending: each NodePool's verdict, in the order Karpenter tries them
    Pod {
        /// NAMESPACE/NAME, or NAME with -n
        name: String,
        /// Namespace (when NAME has none)
        #[arg(short, long)]
        namespace: Option<String>,
    },
    /// Why a node is (not) being disrupted or consolidated: pool, age vs expireAfter, drift,
    /// emptiness, blockers, and the consolidation answer
    ///
    /// The consolidation answer follows Karpenter's own order (already removing it, blockers,
    /// a static pool, consolidateAfter Never, empty, policy WhenEmpty, not Consolidatable yet,
    /// the budget), then Karpenter's own decision where it wrote one (Unconsolidatable,
    /// ConsolidationRejected/Candidate/Approved), else kelp's check of whether the node's pods
    /// fit on the other nodes. With --metrics-file (Karpenter's /metrics), Karpenter's
    /// eligible nodes and its decisions in the node's pool are shown too.
    Node {
        /// Node name (or its NodeClaim's name)
        name: String,
    },
    /// A NodePool's rollout (up to date, drifted, being replaced, what holds the rest, an
    /// ETA) and its budget calendar: what the budgets allow for each reason now and at each
    /// change over the next 7 days (UTC, as Karpenter reads the cron schedules)
    Nodepool {
        /// NodePool name
        name: String,
        /// How long one drift wave takes, for the ETA: a Go duration (the default is what
        /// the real Karpenter took with kwok's instant nodes; a cloud's take minutes)
        #[arg(long, value_name = "DURATION", default_value = "15s", value_parser = crate::cli::what_if::wave_time)]
        wave_time: chrono::Duration,
    },
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let loaded = args.source.load()?;
    let pass = analysis::run(&loaded.cluster, loaded.now);
    loaded.progress.finish();
    let c = &loaded.cluster;
    match args.target {
        Target::Pod { name, namespace } => {
            let (ns, name) = match (name.split_once('/'), namespace) {
                (Some((ns, n)), _) => (ns.to_string(), n.to_string()),
                (None, Some(ns)) => (ns, name),
                (None, None) => ("default".to_string(), name),
            };
            let history = before(
                args.state_dir.as_deref(),
                c.history.as_deref(),
                &crate::history::Ask::Pod(Some(ns.clone()), name.clone()),
            );
            why_pod(c, &pass, &ns, &name, args.output.into(), history.as_deref())
        }
        Target::Node { name } => {
            let history = before(
                args.state_dir.as_deref(),
                c.history.as_deref(),
                &crate::history::Ask::Node(name.clone()),
            );
            why_node(c, &pass, &name, args.output.into(), history.as_deref())
        }
        Target::Nodepool { name, wave_time } => {
            let answer = explain::nodepool_answer(c, &pass, &name, wave_time)?;
            let style = Style::detect();
            let text = match Format::from(args.output) {
                Format::Table => explain::nodepool_text(&answer, style),
                f => output::structured(f, &answer)?,
            };
            output::emit(&text, style)?;
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn why_pod(
    c: &Cluster,
    pass: &Pass,
    ns: &str,
    name: &str,
    format: Format,
    history: Option<&[crate::history::Record]>,
) -> anyhow::Result<ExitCode> {
    let answer = explain::pod_answer(c, pass, ns, name)?;
    if format != Format::Table {
        let text = match history {
            // Its own field order when there is no history to add.
            None => output::structured(format, &answer)?,
            Some(_) => output::structured(format, &with_history(&answer, history)?)?,
        };
        output::emit(&text, Style::detect())?;
        return Ok(ExitCode::SUCCESS);
    }
    let style = Style::detect();
    let text = explain::pod_text(c, pass.now, &answer, style) + &history_text(history);
    output::emit(&text, style)?;
    Ok(ExitCode::SUCCESS)
}

fn why_node(
    c: &Cluster,
    pass: &Pass,
    name: &str,
    format: Format,
    history: Option<&[crate::history::Record]>,
) -> anyhow::Result<ExitCode> {
    let answer = explain::node_answer(c, pass, name)?;
    if format != Format::Table {
        let text = match history {
            // Its own field order when there is no history to add.
            None => output::structured(format, &answer)?,
            Some(_) => output::structured(format, &with_history(&answer, history)?)?,
        };
        output::emit(&text, Style::detect())?;
        return Ok(ExitCode::SUCCESS);
    }
    let style = Style::detect();
    let text = explain::node_text(c, pass.now, &answer, style) + &history_text(history);
    output::emit(&text, style)?;
    Ok(ExitCode::SUCCESS)
}
