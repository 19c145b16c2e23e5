//! `kelp serve`: the read-only in-cluster watcher.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use super::LogFormat;
use crate::serve::{self, Input, Options};
use crate::source::live::Target;

#[derive(Debug, clap::Args)]
#[command(after_help = "\
Examples:
  kelp serve                                    in a pod: the in-cluster config, metrics on :8080
  kelp serve --context prod --metrics-addr 127.0.0.1:9090
  kelp serve --from snapshot.json               serve the findings of a dump
  curl -s localhost:8080/metrics | grep karpenter_helper_findings

Endpoints: /metrics (OpenMetrics), /livez, /readyz (ready after the first full sync).
Each finding that appears or resolves is logged once (warn for critical and warning, info otherwise).")]
pub struct Args {
    /// Serve a dump instead of watching a cluster (files, folders, or - for stdin)
    #[arg(long, value_name = "PATH", conflicts_with_all = ["kubeconfig", "context"])]
    pub from: Vec<PathBuf>,
    /// Kubeconfig file (default: the in-cluster config, then $KUBECONFIG and ~/.kube/config)
    #[arg(long, value_name = "PATH")]
    pub kubeconfig: Option<PathBuf>,
    /// Kubeconfig context to use
    #[arg(long, value_name = "NAME")]
    pub context: Option<String>,
    /// Where to serve /metrics, /livez and /readyz
    #[arg(long, value_name = "ADDR", default_value = "0.0.0.0:8080")]
    pub metrics_addr: SocketAddr,
    /// Drop the series of objects gone for this long (Go duration: 30m, 1h, 2h30m)
    #[arg(long, value_name = "DURATION", default_value = "1h", value_parser = parse_ttl)]
    pub series_ttl: std::time::Duration,
    /// Log line format
    #[arg(long, value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let input = if args.from.is_empty() {
        Input::Live(Target {
            kubeconfig: args.kubeconfig,
            context: args.context,
        })
    } else {
        Input::Dump(args.from)
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    rt.block_on(serve::run(Options {
        input,
        metrics_addr: args.metrics_addr,
        series_ttl: args.series_ttl,
    }))?;
    Ok(ExitCode::SUCCESS)
}

fn parse_ttl(s: &str) -> Result<std::time::Duration, String> {
    crate::karpenter::duration::parse_go_duration(s)?
        .to_std()
        .map_err(|_| format!("{s}: must not be negative"))
}
