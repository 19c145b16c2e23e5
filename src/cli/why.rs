//! `kelp why pod NAMESPACE/NAME` and `kelp why node NAME`.

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
      drift, expiry, emptiness and every disruption blocker")]
pub struct Args {
    #[command(subcommand)]
    pub target: Target,
    #[command(flatten)]
    pub source: SourceArgs,
    /// Output format
    #[arg(short, long, value_enum, default_value_t = AnswerFormat::Table, global = true)]
    pub output: AnswerFormat,
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
            why_pod(c, &pass, &ns, &name, args.output.into())
        }
        Target::Node { name } => why_node(c, &pass, &name, args.output.into()),
    }
}

fn why_pod(
    c: &Cluster,
    pass: &Pass,
    ns: &str,
    name: &str,
    format: Format,
) -> anyhow::Result<ExitCode> {
    let answer = explain::pod_answer(c, pass, ns, name)?;
    if format != Format::Table {
        output::emit(&output::structured(format, &answer)?, Style::detect())?;
        return Ok(ExitCode::SUCCESS);
    }
    let style = Style::detect();
    output::emit(&explain::pod_text(c, pass.now, &answer, style), style)?;
    Ok(ExitCode::SUCCESS)
}

fn why_node(c: &Cluster, pass: &Pass, name: &str, format: Format) -> anyhow::Result<ExitCode> {
    let answer = explain::node_answer(c, pass, name)?;
    if format != Format::Table {
        output::emit(&output::structured(format, &answer)?, Style::detect())?;
        return Ok(ExitCode::SUCCESS);
    }
    let style = Style::detect();
    output::emit(&explain::node_text(c, pass.now, &answer, style), style)?;
    Ok(ExitCode::SUCCESS)
}
