//! The source flags every analysing command shares, and turning them into a model.

use std::path::PathBuf;

use anyhow::Context as _;
use chrono::{DateTime, Utc};
use clap::Args;

use crate::model::Cluster;
use crate::source::{self, live};

#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Source (a live cluster by default)")]
pub struct SourceArgs {
    /// Read a dump instead of a cluster: a file, a folder (recursive *.yaml|*.yml|*.json) or - for stdin. Repeatable.
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
}

/// A loaded model and the clock to judge it by.
pub struct Loaded {
    pub cluster: Cluster,
    pub now: DateTime<Utc>,
    /// `dump` or the context name.
    pub origin: String,
}

pub fn parse_time(s: &str) -> crate::Result<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(s)
        .map(|t| t.with_timezone(&Utc))
        .map_err(|_| crate::Error::BadTime(s.to_string()))
}

impl SourceArgs {
    pub fn load(&self) -> anyhow::Result<Loaded> {
        let fixed_now = self.now.as_deref().map(parse_time).transpose()?;
        let (mut cluster, origin) = if self.from.is_empty() {
            let target = live::Target {
                kubeconfig: self.kubeconfig.clone(),
                context: self.context.clone(),
            };
            super::block_on(async {
                let conn = live::connect(&target).await?;
                let c = live::load(&conn).await?;
                Ok::<_, crate::Error>((c, format!("context {}", conn.context)))
            })??
        } else {
            let mut c = Cluster::default();
            let notes = source::load_paths(&self.from, &mut c)?;
            for line in notes.lines() {
                eprintln!("{line}");
            }
            (c, "dump".to_string())
        };
        if let Some(path) = &self.metrics_file {
            cluster.metrics = Some(source::metrics::read(path).context("--metrics-file")?);
        }
        let now = fixed_now.or(cluster.captured_at).unwrap_or_else(Utc::now);
        Ok(Loaded {
            cluster,
            now,
            origin,
        })
    }
}
