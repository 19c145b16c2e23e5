//! `kelp demo`: the doctor report of a bundled, realistic cluster dump.

use std::process::ExitCode;

use super::output::Format;
use crate::{analysis, demo};

#[derive(Debug, clap::Args)]
#[command(
    after_help = "The demo cluster runs Karpenter v1.14 on AWS, evaluated at 2026-11-21T10:00:00Z.
Try `kelp why pod ml/trainer-0 --from <(kelp demo --dump)` to dig into one object."
)]
pub struct Args {
    /// Output format
    #[arg(short, long, value_enum, default_value_t = Format::Table)]
    pub output: Format,
    /// Print the bundled dump itself (YAML) instead of the report
    #[arg(long)]
    pub dump: bool,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    if args.dump {
        print!("{}", demo::CLUSTER);
        return Ok(ExitCode::SUCCESS);
    }
    let cluster = demo::cluster()?;
    let report = analysis::analyze(&cluster, demo::now());
    super::doctor::print(&report, "bundled demo", args.output)?;
    Ok(ExitCode::SUCCESS)
}
