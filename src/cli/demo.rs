//! `kelp demo`: the dashboard (or the doctor report) of a bundled, realistic cluster dump.

use std::process::ExitCode;

use super::output::Format;
use crate::{analysis, demo, serve};

#[derive(Debug, clap::Args)]
#[command(
    after_help = "The demo cluster runs Karpenter v1.14 on AWS, evaluated at 2026-11-21T10:00:00Z.

Examples:
  kelp demo
      the dashboard at http://127.0.0.1:8081/clusters/demo/karpenter
  kelp demo -o table             the doctor report instead, in the terminal
  kelp demo --dump > demo.yaml
      the bundled dump itself, to try the other commands on:
  kelp why pod ml/trainer-0 --from demo.yaml"
)]
pub struct Args {
    /// Print the doctor report in this format instead of serving the dashboard
    #[arg(short, long, value_enum)]
    pub output: Option<Format>,
    /// Print the bundled dump itself (YAML) instead
    #[arg(long)]
    pub dump: bool,
    #[command(flatten)]
    pub dashboard: super::serve::DashboardArgs,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    if args.dump {
        crate::cli::output::emit(&demo::dump()?, crate::cli::output::Style::plain())?;
        return Ok(ExitCode::SUCCESS);
    }
    if let Some(format) = args.output {
        let cluster = demo::cluster()?;
        let report = analysis::analyze(&cluster, demo::now());
        super::doctor::print(&report, "bundled demo", format)?;
        return Ok(ExitCode::SUCCESS);
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    rt.block_on(serve::run(serve::Options {
        inputs: vec![serve::Input::Demo],
        metrics_addr: None,
        metrics_auth_token: None,
        dashboard_addr: Some(args.dashboard.dashboard_addr),
        auth_token: None,
        allowed_hosts: args.dashboard.allowed_host,
        secure_cookie: false,
        karpenter_service: None,
        series_ttl: crate::metrics::common::DEFAULT_SERIES_TTL,
        history: None,
        catalog: None,
    }))?;
    Ok(ExitCode::SUCCESS)
}
