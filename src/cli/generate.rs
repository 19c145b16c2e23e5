//! `kelp generate`: monitoring configuration built from kelp's metric definitions.

use std::process::ExitCode;

use super::output::{emit, Style};
use crate::metrics::generate::{self, ClusterLabel};

#[derive(Debug, clap::Args)]
#[command(after_help = "\
Examples:
  kelp generate alerts > kelp-rules.yaml
      a PrometheusRule (monitoring.coreos.com/v1)
  kelp generate grafana > kelp-dashboard.json
      a Grafana dashboard
  kelp generate grafana --cluster-label k8s_cluster > kelp-fleet.json
      for a fleet whose Prometheus tells clusters apart by k8s_cluster

Both are built from the same metric definitions kelp serves at /metrics. Every alert is per
cluster and every panel filters on a cluster variable. See docs/metrics.md.")]
pub struct Args {
    #[command(subcommand)]
    pub what: What,
}

#[derive(Debug, clap::Subcommand)]
pub enum What {
    /// Print a PrometheusRule with kelp's alerts, one per cluster (YAML)
    Alerts(Fleet),
    /// Print a Grafana dashboard for kelp's metrics, with a cluster variable (JSON)
    Grafana(Fleet),
}

#[derive(Debug, clap::Args)]
pub struct Fleet {
    /// The label your Prometheus puts on each cluster's series (an external label, or what
    /// federation, Thanos or Mimir add); alerts group by it, panels filter on it. Series
    /// without it (a single cluster) still show and alert
    #[arg(long, value_name = "LABEL", default_value = "cluster")]
    pub cluster_label: ClusterLabel,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    match args.what {
        What::Alerts(f) => emit(&generate::alerts_yaml(&f.cluster_label), Style::plain())?,
        What::Grafana(f) => emit(
            &(generate::grafana_json(&f.cluster_label) + "\n"),
            Style::plain(),
        )?,
    }
    Ok(ExitCode::SUCCESS)
}
