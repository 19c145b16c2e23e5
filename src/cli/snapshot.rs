//! `kelp snapshot`: one consistent dump of everything kelp reads, as a `v1/List`.

use std::path::PathBuf;
use std::process::ExitCode;

use chrono::{SecondsFormat, Utc};

use crate::source::dump::snapshot_list;
use crate::source::live;

#[derive(Debug, clap::Args)]
#[command(after_help = "\
Examples:
  kelp snapshot -o cluster.json                 the current context
  kelp snapshot --context prod -o prod.yaml     YAML when the file name ends in .yaml/.yml
  kelp doctor --from cluster.json               analyse it later, at its capture time

The dump holds NodePools, NodeClaims, node classes, Nodes, Pods, DaemonSets, PDBs, Karpenter's
events and its CRDs; managedFields and last-applied annotations are removed. Never Secrets.")]
pub struct Args {
    /// Where to write the dump (- for stdout)
    #[arg(short, long, value_name = "FILE")]
    pub output: PathBuf,
    /// Kubeconfig file (default: $KUBECONFIG, ~/.kube/config, then the in-cluster config)
    #[arg(long, value_name = "PATH")]
    pub kubeconfig: Option<PathBuf>,
    /// Kubeconfig context to use (default: the current context)
    #[arg(long, value_name = "NAME")]
    pub context: Option<String>,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let target = live::Target {
        kubeconfig: args.kubeconfig,
        context: args.context,
    };
    let items = super::block_on(async {
        let conn = live::connect(&target).await?;
        live::snapshot_items(&conn).await
    })??;
    let now = Utc::now();
    let captured = now.to_rfc3339_opts(SecondsFormat::Secs, true);
    let count = items.len();
    let list = snapshot_list(items, now);
    let yaml = matches!(
        args.output.extension().and_then(|e| e.to_str()),
        Some("yaml" | "yml")
    );
    let text = if yaml {
        serde_norway::to_string(&list)?
    } else {
        serde_json::to_string(&list)? + "\n"
    };
    if args.output.as_os_str() == "-" {
        super::output::emit(&text, super::output::Style::plain())?;
    } else {
        std::fs::write(&args.output, text).map_err(|source| crate::Error::Write {
            path: args.output.clone(),
            source,
        })?;
        eprintln!(
            "wrote {count} objects to {} (captured {captured})",
            args.output.display()
        );
    }
    Ok(ExitCode::SUCCESS)
}
