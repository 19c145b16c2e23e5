//! `kelp generate`: monitoring configuration built from kelp's metric definitions.

use std::process::ExitCode;

use super::output::{emit, Style};
use crate::metrics::generate;

#[derive(Debug, clap::Args)]
#[command(after_help = "\
Examples:
  kelp generate alerts > kelp-rules.yaml
      a PrometheusRule (monitoring.coreos.com/v1)
  kelp generate grafana > kelp-dashboard.json   a Grafana dashboard

Both are built from the same metric definitions kelp serves at /metrics. See docs/metrics.md.")]
pub struct Args {
    #[command(subcommand)]
    pub what: What,
}

#[derive(Debug, clap::Subcommand)]
pub enum What {
    /// Print a PrometheusRule with kelp's alerts (YAML)
    Alerts,
    /// Print a Grafana dashboard for kelp's metrics (JSON)
    Grafana,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    match args.what {
        What::Alerts => emit(&generate::alerts_yaml(), Style::plain())?,
        What::Grafana => emit(&(generate::grafana_json() + "\n"), Style::plain())?,
    }
    Ok(ExitCode::SUCCESS)
}
