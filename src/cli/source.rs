//! The source flags every analysing command shares, and turning them into a model.

use std::path::PathBuf;
use std::sync::atomic::Ordering::Relaxed;

use anyhow::Context as _;
use chrono::{DateTime, Utc};
use clap::Args;

use super::output;
use crate::model::Cluster;
use crate::source::controller::{self, ScrapeTarget};
use crate::source::{self, live};

#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Source (a live cluster by default)")]
pub struct SourceArgs {
    /// Read a dump instead of a cluster: a file, a folder (recursive *.yaml|*.yml|*.json, and the same gzipped: *.json.gz) or - for stdin (gzip too). Repeatable. JSON is read at any size; YAML is parsed whole, up to 32 MiB a file.
    #[arg(long, value_name = "PATH", conflicts_with_all = ["kubeconfig", "context"], global = true)]
    pub from: Vec<PathBuf>,
    /// Kubeconfig file (default: $KUBECONFIG, ~/.kube/config, then the in-cluster config)
    #[arg(long, value_name = "PATH", global = true)]
    pub kubeconfig: Option<PathBuf>,
    /// Kubeconfig context to use (default: the current context)
    #[arg(long, value_name = "NAME", global = true)]
    pub context: Option<String>,
    /// Evaluate at this time (RFC 3339) instead of now; a kelp snapshot defaults to its capture time
    #[arg(long, value_name = "TIME", global = true)]
    pub now: Option<String>,
    /// A Karpenter controller /metrics text exposition (prices, offering availability)
    #[arg(long, value_name = "PATH", global = true)]
    pub metrics_file: Option<PathBuf>,
    /// An instance-type catalogue: kelp's own (`kelp catalog -o yaml` writes one) or a kwok provider instance-types JSON file. Without one, kelp reads the types from Karpenter's metrics (AWS), or uses the kwok provider's built-in types on a kwok cluster; with none of these, instance types are "unknown"
    #[arg(long, value_name = "PATH", global = true)]
    pub catalog: Option<PathBuf>,
    /// Also read Karpenter's /metrics (prices, offering availability) from this Service through the API server's service proxy (needs get on services/proxy); a failure is logged and the run goes on. Unused with --metrics-file.
    #[arg(
        long,
        value_name = "NS/SVC:PORT",
        conflicts_with = "from",
        global = true
    )]
    pub karpenter_service: Option<ScrapeTarget>,
}

/// The metrics of a `--karpenter-service` scrape; a failure is one warning (with its hint),
/// never the run's failure.
fn scraped_metrics(
    target: &ScrapeTarget,
    result: Result<crate::model::ControllerMetrics, controller::ScrapeError>,
) -> Option<crate::model::ControllerMetrics> {
    match result {
        Ok(m) => {
            tracing::debug!(
                service = %target,
                offerings = m.offerings.len(),
                nodepools = m.nodepool_cost.len(),
                "read Karpenter's metrics"
            );
            Some(m)
        }
        Err(e) => {
            tracing::warn!(
                "--karpenter-service {target}: {e}; going on without Karpenter's metrics ({})",
                e.hint(target)
            );
            None
        }
    }
}

/// One line for what a dump held that kelp does not read (`-v` shows it):
/// `note: skipped 17 Deployment, 3 StatefulSet objects (kinds kelp does not read)`.
pub fn skipped_summary(skipped: &std::collections::BTreeMap<String, usize>) -> Option<String> {
    if skipped.is_empty() {
        return None;
    }
    let kinds: Vec<String> = skipped.iter().map(|(k, n)| format!("{n} {k}")).collect();
    let total: usize = skipped.values().sum();
    let secrets = if skipped.contains_key("Secret") {
        "; kelp never reads Secrets"
    } else {
        ""
    };
    Some(format!(
        "note: skipped {} object{} (kinds kelp does not read{secrets})",
        kinds.join(", "),
        if total == 1 { "" } else { "s" }
    ))
}

/// A `--context` the kubeconfig does not have is one line that lists those it has.
/// (When the kubeconfig cannot be read here, connecting reports that instead.)
pub fn check_context(kubeconfig: Option<&std::path::Path>, context: &str) -> anyhow::Result<()> {
    let kc = match kubeconfig {
        Some(path) => kube::config::Kubeconfig::read_from(path),
        None => kube::config::Kubeconfig::read(),
    };
    let Ok(kc) = kc else {
        return Ok(());
    };
    if kc.contexts.iter().any(|c| c.name == context) {
        return Ok(());
    }
    let names: Vec<String> = kc
        .contexts
        .iter()
        .map(|c| output::clean(&c.name).into_owned())
        .collect();
    anyhow::bail!(
        "no context {:?} in the kubeconfig; its contexts: {}",
        output::clean(context),
        if names.is_empty() {
            "none".to_string()
        } else {
            names.join(", ")
        }
    )
}

/// What kelp is doing, on stderr while it works (a spinner with the phase and objects
/// read), only when stderr is a terminal; cleared when done or dropped.
pub struct Progress(Option<indicatif::ProgressBar>);

/// Set by commands that own the terminal (`kelp top`): a spinner would draw over them.
pub static NO_PROGRESS: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

impl Progress {
    pub fn start(message: String) -> Self {
        if NO_PROGRESS.load(std::sync::atomic::Ordering::Relaxed)
            || !std::io::IsTerminal::is_terminal(&std::io::stderr())
        {
            return Progress(None);
        }
        let bar = indicatif::ProgressBar::new_spinner();
        if let Ok(style) = indicatif::ProgressStyle::with_template("{spinner} {msg} ({elapsed})") {
            bar.set_style(style);
        }
        bar.set_message(message.clone());
        bar.enable_steady_tick(std::time::Duration::from_millis(120));
        // While reading, count the objects as they stream in; a phase() ends the count.
        let (ticker, start) = (bar.clone(), crate::source::dump::OBJECTS_READ.load(Relaxed));
        std::thread::spawn(move || {
            while !ticker.is_finished() && ticker.message().starts_with(&message) {
                let n = crate::source::dump::OBJECTS_READ.load(Relaxed) - start;
                ticker.set_message(reading(&message, n));
                std::thread::sleep(std::time::Duration::from_millis(100));
            }
        });
        Progress(Some(bar))
    }
    pub fn phase(&self, message: String) {
        if let Some(bar) = &self.0 {
            bar.set_message(message);
            bar.tick();
        }
    }
    pub fn finish(&self) {
        if let Some(bar) = &self.0 {
            bar.finish_and_clear();
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.finish();
    }
}

/// The reading phase's message with the objects read so far.
pub fn reading(message: &str, objects: usize) -> String {
    if objects == 0 {
        message.to_string()
    } else {
        format!("{message}: {objects} objects read")
    }
}

/// A loaded model and the clock to judge it by.
pub struct Loaded {
    /// Still spinning: the caller says when the analysis is done.
    pub progress: Progress,
    pub cluster: Cluster,
    pub now: DateTime<Utc>,
    /// `dump` or the context name.
    pub origin: String,
}

pub fn parse_time(s: &str) -> crate::Result<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(s)
        .map(|t| t.with_timezone(&Utc))
        .ok()
        .filter(|t| crate::analysis::plausible_clock(*t))
        .ok_or_else(|| crate::Error::BadTime(s.to_string()))
}

impl SourceArgs {
    pub fn load(&self) -> anyhow::Result<Loaded> {
        let fixed_now = self.now.as_deref().map(parse_time).transpose()?;
        let progress = Progress::start(if self.from.is_empty() {
            "reading the cluster".to_string()
        } else {
            format!(
                "reading {}",
                self.from
                    .iter()
                    .map(|p| output::clean(&p.display().to_string()).into_owned())
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        });
        let (mut cluster, origin) = if self.from.is_empty() {
            if let Some(context) = &self.context {
                check_context(self.kubeconfig.as_deref(), context)?;
            }
            let target = live::Target {
                kubeconfig: self.kubeconfig.clone(),
                context: self.context.clone(),
            };
            let scrape_target = self
                .karpenter_service
                .as_ref()
                .filter(|_| self.metrics_file.is_none());
            super::block_on(async {
                let conn = live::connect(&target).await?;
                // The scrape runs beside the lists, so it adds no time unless it is the
                // slower of the two; a failed list returns at once.
                let scrape = async {
                    match scrape_target {
                        Some(t) => {
                            Some(controller::scrape(&conn, t, controller::DEFAULT_TIMEOUT).await)
                        }
                        None => None,
                    }
                };
                let (mut c, scraped) =
                    futures::future::try_join(live::load(&conn), async { Ok(scrape.await) })
                        .await?;
                if let (Some(t), Some(result)) = (scrape_target, scraped) {
                    c.metrics = scraped_metrics(t, result);
                }
                Ok::<_, crate::Error>((c, format!("context {}", conn.context)))
            })??
        } else {
            let mut c = Cluster::default();
            let notes = source::load_paths(&self.from, &mut c)?;
            for line in notes.invalid_lines() {
                eprintln!("{}", crate::explain::text::clean(&line));
            }
            if super::verbose() {
                if let Some(line) = skipped_summary(&notes.skipped) {
                    eprintln!("{line}");
                }
            }
            (c, "dump".to_string())
        };
        if let Some(path) = &self.metrics_file {
            cluster.metrics = Some(source::metrics::read(path).context("--metrics-file")?);
        }
        if let Some(path) = &self.catalog {
            cluster.catalog = Some(source::catalog::read(path).context("--catalog")?.into());
        }
        if let Some(at) = cluster
            .captured_at
            .filter(|t| !crate::analysis::plausible_clock(*t))
        {
            eprintln!("note: ignoring the dump's capture time {at} (not a plausible clock); evaluating at the wall clock, or pass --now");
            cluster.captured_at = None;
        }
        let now = fixed_now.or(cluster.captured_at).unwrap_or_else(Utc::now);
        progress.phase(format!(
            "read {} pods, {} nodes, {} NodeClaims; analysing",
            cluster.pods.len(),
            cluster.nodes.len(),
            cluster.nodeclaims.len()
        ));
        Ok(Loaded {
            progress,
            cluster,
            now,
            origin,
        })
    }
}

#[cfg(test)]
mod progress_tests {
    #[test]
    fn reading_counts_objects_as_a_dump_loads() {
        assert_eq!(super::reading("reading d.yaml", 0), "reading d.yaml");
        assert_eq!(
            super::reading("reading d.yaml", 12),
            "reading d.yaml: 12 objects read"
        );
        let before = crate::source::dump::OBJECTS_READ.load(std::sync::atomic::Ordering::Relaxed);
        let mut c = crate::model::Cluster::default();
        crate::source::load_str(
            "t.yaml",
            "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\n---\napiVersion: v1\nkind: Node\nmetadata: {name: n2}\n",
            &mut c,
        )
        .unwrap();
        let after = crate::source::dump::OBJECTS_READ.load(std::sync::atomic::Ordering::Relaxed);
        assert!(after >= before + 2, "{before} -> {after}");
    }
}
