//! `kelp snapshot`: one consistent dump of everything kelp reads, as a `v1/List`.

use std::path::PathBuf;
use std::process::ExitCode;

use chrono::{SecondsFormat, Utc};

use crate::source::dump::snapshot_list;
use crate::source::live;

#[derive(Debug, clap::Args)]
#[command(after_help = "\
Examples:
  kelp snapshot -f cluster.json
      the current context, to a file
  kelp snapshot --context prod -f prod.yaml
      YAML when the file name ends in .yaml/.yml (or with -o yaml)
  kelp snapshot -o yaml > cluster.yaml
      to stdout
  kelp doctor --from cluster.json
      analyse it later, at its capture time

  kelp snapshot --karpenter-service karpenter/karpenter:8080 -f cluster.json
      with Karpenter's /metrics (prices, and the AWS provider's instance types)
  kelp snapshot --catalog catalog.yaml -f cluster.json
      with an instance-type catalogue, so the dump judges instance types as live
  kelp snapshot --history /var/lib/kelp -f cluster.json
      with the last day of the history `kelp serve --state-dir` kept, so a support dump
      says what Karpenter did before (`kelp why --from cluster.json` shows it)

The dump holds NodePools, NodeClaims, node classes, Nodes, Pods, DaemonSets, PDBs,
Karpenter's events and its CRDs; managedFields and last-applied annotations are
removed. Never Secrets. Karpenter's /metrics text and a catalogue, when given, ride in the
List's annotations (kelp.dev/karpenter-metrics, kelp.dev/instance-type-catalog).")]
pub struct Args {
    /// Where to write the dump (- or none: stdout)
    #[arg(short, long, value_name = "FILE")]
    pub file: Option<PathBuf>,
    /// Format: json or yaml (default: from the file name, else json). `-o FILE` still
    /// works, as --file, with a note
    #[arg(short, long, value_name = "json|yaml")]
    pub output: Option<String>,
    /// Kubeconfig file (default: $KUBECONFIG, ~/.kube/config, then the in-cluster config)
    #[arg(long, value_name = "PATH")]
    pub kubeconfig: Option<PathBuf>,
    /// Kubeconfig context to use (default: the current context)
    #[arg(long, value_name = "NAME")]
    pub context: Option<String>,
    /// Also capture Karpenter's /metrics from this Service through the API server's
    /// service proxy (needs get on services/proxy); a failure is a warning
    #[arg(long, value_name = "NS/SVC:PORT")]
    pub karpenter_service: Option<crate::source::controller::ScrapeTarget>,
    /// Embed this instance-type catalogue (kelp's own file or a kwok instance-types file)
    #[arg(long, value_name = "FILE")]
    pub catalog: Option<PathBuf>,
    /// Embed the history `kelp serve --state-dir DIR` keeps there (the newest rows of
    /// --history-since, at most 5,000 and 1.9 MB)
    #[arg(long, value_name = "DIR")]
    pub history: Option<PathBuf>,
    /// How far back the embedded history goes: a Go duration (90m, 24h) or days (7d)
    #[arg(long, value_name = "DURATION", default_value = "24h", value_parser = crate::history::age, requires = "history")]
    pub history_since: chrono::Duration,
}

/// Rows of history a dump carries at most, and the most its annotation may take: under the
/// 2 MiB a string may take when a dump is streamed back in (from stdin or gzip).
const HISTORY_ROWS: usize = 5_000;
const HISTORY_BYTES: usize = 1_900_000;

/// The newest of `rows` (oldest first) that fit a dump's annotation, as JSON: at most
/// [`HISTORY_ROWS`], and the oldest go first until the text is under [`HISTORY_BYTES`].
fn fit_history(rows: &mut Vec<crate::history::Record>) -> serde_json::Result<String> {
    let skip = rows.len().saturating_sub(HISTORY_ROWS);
    rows.drain(..skip);
    let mut text = serde_json::to_string(&rows)?;
    while text.len() > HISTORY_BYTES && !rows.is_empty() {
        rows.drain(..rows.len().div_ceil(4));
        text = serde_json::to_string(&rows)?;
    }
    Ok(text)
}

/// Where to write and whether as YAML, from `--file` and `-o`.
fn destination(args: &Args) -> anyhow::Result<(Option<PathBuf>, bool)> {
    let mut file = args.file.clone().filter(|f| f.as_os_str() != "-");
    let format = match args.output.as_deref() {
        None => None,
        Some("json") => Some(false),
        Some("yaml" | "yml") => Some(true),
        Some(path) if args.file.is_none() => {
            eprintln!(
                "note: `kelp snapshot -o FILE` is deprecated: use `-f {}` (-o is the format: json or yaml)",
                super::output::clean(path)
            );
            file = Some(PathBuf::from(path)).filter(|f| f.as_os_str() != "-");
            None
        }
        Some(other) => anyhow::bail!(
            "-o {}: the format is json or yaml (the file is --file)",
            super::output::clean(other)
        ),
    };
    let by_name = file
        .as_ref()
        .is_some_and(|f| matches!(f.extension().and_then(|e| e.to_str()), Some("yaml" | "yml")));
    Ok((file, format.unwrap_or(by_name)))
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let (file, yaml) = destination(&args)?;
    if let Some(context) = &args.context {
        super::source::check_context(args.kubeconfig.as_deref(), context)?;
    }
    let target = live::Target {
        kubeconfig: args.kubeconfig,
        context: args.context,
    };
    let history = match &args.history {
        None => None,
        Some(dir) => {
            let since = Utc::now() - args.history_since;
            let mut rows = crate::history::store::read(
                dir,
                &crate::history::Ask::Cluster,
                Some(since),
                1_000_000,
            )
            .map_err(|e| anyhow::anyhow!("--history: {e}"))?;
            Some(fit_history(&mut rows)?)
        }
    };
    let catalog = args
        .catalog
        .as_deref()
        .map(crate::source::catalog::read)
        .transpose()
        .map_err(|e| anyhow::anyhow!("--catalog: {e}"))?;
    let scrape = args.karpenter_service.clone();
    let (items, metrics) = super::block_on(async {
        let conn = live::connect(&target).await?;
        let metrics = async {
            let t = scrape.as_ref()?;
            let r = crate::source::controller::scrape_text(
                &conn,
                t,
                crate::source::controller::DEFAULT_TIMEOUT,
            )
            .await;
            match r {
                Ok((_, text)) => Some(text),
                Err(e) => {
                    eprintln!("warning: Karpenter's metrics from {t} are not in the snapshot: {e}");
                    None
                }
            }
        };
        let (items, metrics) = futures::future::join(live::snapshot_items(&conn), metrics).await;
        Ok::<_, crate::Error>((items?, metrics))
    })??;
    let now = Utc::now();
    let captured = now.to_rfc3339_opts(SecondsFormat::Secs, true);
    let count = items.len();
    let mut list = snapshot_list(items, now);
    let annotations = &mut list["metadata"]["annotations"];
    if let Some(text) = metrics {
        annotations[crate::source::dump::KARPENTER_METRICS] = text.into();
    }
    if let Some(c) = catalog {
        annotations[crate::source::dump::CATALOG] = serde_json::to_string(&c)?.into();
    }
    if let Some(h) = history {
        annotations[crate::source::dump::HISTORY] = h.into();
    }
    let text = if yaml {
        serde_norway::to_string(&list)?
    } else {
        serde_json::to_string(&list)? + "\n"
    };
    match file {
        None => super::output::emit(&text, super::output::Style::plain())?,
        Some(path) => {
            std::fs::write(&path, text).map_err(|source| crate::Error::Write {
                path: path.clone(),
                source,
            })?;
            eprintln!(
                "wrote {count} objects to {} (captured {captured})",
                path.display()
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_history_a_dump_carries_is_the_newest_that_fits() {
        let row = |i: usize| {
            let mut r = crate::history::Record::new(
                format!("e/{i}"),
                Utc::now(),
                crate::history::Kind::Event,
                "Evicted",
                crate::history::Subject {
                    kind: "Pod".into(),
                    namespace: Some("ns".into()),
                    name: format!("p{i}"),
                },
            );
            r.message = "x".repeat(1000);
            r
        };
        let mut rows: Vec<_> = (0..6000).map(row).collect();
        let text = fit_history(&mut rows).unwrap();
        assert!(text.len() <= HISTORY_BYTES, "{}", text.len());
        assert!(!rows.is_empty() && rows.len() < HISTORY_ROWS);
        assert_eq!(rows.last().unwrap().object.name, "p5999", "the newest stay");
        let mut few: Vec<_> = (0..10).map(row).collect();
        fit_history(&mut few).unwrap();
        assert_eq!(few.len(), 10);
    }
    use clap::Parser;

    #[derive(Parser)]
    struct T {
        #[command(flatten)]
        a: Args,
    }

    fn dest(argv: &[&str]) -> anyhow::Result<(Option<PathBuf>, bool)> {
        let t = T::try_parse_from(std::iter::once("snapshot").chain(argv.iter().copied()))?;
        destination(&t.a)
    }

    #[test]
    fn file_and_format_are_separate_flags_and_o_file_still_works() {
        assert_eq!(dest(&[]).unwrap(), (None, false));
        assert_eq!(dest(&["-o", "yaml"]).unwrap(), (None, true));
        assert_eq!(
            dest(&["-f", "c.yaml"]).unwrap(),
            (Some("c.yaml".into()), true)
        );
        assert_eq!(
            dest(&["-f", "c.yaml", "-o", "json"]).unwrap(),
            (Some("c.yaml".into()), false)
        );
        // The old spelling: a path after -o is the file.
        assert_eq!(
            dest(&["-o", "old.json"]).unwrap(),
            (Some("old.json".into()), false)
        );
        assert_eq!(dest(&["-o", "-"]).unwrap(), (None, false));
        assert!(dest(&["-f", "x.json", "-o", "xml"]).is_err());
    }
}
