//! `kelp top`: flags and start-up of the live terminal view ([`crate::tui`]). A live
//! cluster is listed again every `--refresh`; a dump is read once.

use std::io::IsTerminal;
use std::process::ExitCode;
use std::sync::mpsc;
use std::time::Duration;

use super::source::SourceArgs;
use crate::tui::{self, Snapshot};

#[derive(Debug, clap::Args)]
#[command(after_help = "\
Keys:
  /          filter every table by text (Enter keeps it, Esc clears it)
  s          cycle the sort: karpenter, name, $/hr, cpu, memory, age
  Tab        next table (pools, nodes, pending pods)
  ↑↓ or j/k  move (PgUp/PgDn, Home/End)
  Enter      `why` for the node or pod; on a pool, its nodes
  Esc        close the panel
  q          quit

Examples:
  kelp top                          the current context, listed again every 5 s
  kelp top --context prod --karpenter-service karpenter/karpenter:8080
                                    with Karpenter's prices
  kelp demo --dump > demo.yaml
  kelp top --from demo.yaml --metrics-file demo/karpenter-metrics.txt")]
pub struct Args {
    /// Seconds between two lists of a live cluster (a dump is read once)
    #[arg(long, value_name = "SECONDS", default_value_t = 5, value_parser = clap::value_parser!(u64).range(1..=3600))]
    pub refresh: u64,
    #[command(flatten)]
    pub source: SourceArgs,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    // Keys are read from the terminal itself when stdin is a pipe (`--from -`).
    if !std::io::stdout().is_terminal() {
        anyhow::bail!("kelp top needs a terminal (stdout is not one); for text use `kelp doctor`");
    }
    // The view owns the terminal: no spinner on stderr, now or on a refresh.
    super::source::NO_PROGRESS.store(true, std::sync::atomic::Ordering::Relaxed);
    let loaded = args.source.load()?;
    let live = args.source.from.is_empty();
    let snap = Snapshot::new(loaded.cluster, &loaded.origin, loaded.now);
    let updates = live.then(|| {
        let (tx, rx) = mpsc::channel();
        let source = args.source.clone();
        let every = Duration::from_secs(args.refresh);
        std::thread::spawn(move || loop {
            std::thread::sleep(every);
            let next = source
                .load()
                .map(|l| Snapshot::new(l.cluster, &l.origin, l.now))
                .map_err(|e| super::one_line(&e));
            if tx.send(next).is_err() {
                return;
            }
        });
        rx
    });
    tui::run(snap, updates)?;
    Ok(ExitCode::SUCCESS)
}
