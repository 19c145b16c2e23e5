//! `kelp serve`: the read-only in-cluster watcher.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use super::LogFormat;
use crate::serve::{self, Input, Options};
use crate::source::live::Target;

/// Where the dashboard listens and the names it answers to: `serve`'s and `demo`'s.
#[derive(Debug, clap::Args)]
pub struct DashboardArgs {
    /// Where to serve the dashboard (keep it on loopback, or set serve's --auth-token)
    #[arg(
        long = "dashboard-addr",
        alias = "addr",
        value_name = "ADDR",
        default_value = "127.0.0.1:8081"
    )]
    pub dashboard_addr: SocketAddr,
    /// Also answer browsers that reach the dashboard by this name (repeat, or comma-separate)
    ///
    /// To defeat DNS rebinding, the dashboard answers only requests whose Host header is
    /// localhost, a loopback address or the address it is bound to (any port), and 421 to
    /// any other. List here the names you open it by: an Ingress or proxy host
    /// (kelp.example.com), a Service name (kelp.kelp.svc:8081); with a port, only that
    /// port. Bound to 0.0.0.0 or [::], any IP address is answered too, and, when
    /// serve's --auth-token is set and no --allowed-host is given, any name (the token keeps
    /// rebinding pages out). /metrics, /livez and /readyz have no Host check (Prometheus
    /// and the kubelet reach them by pod IP).
    #[arg(
        long = "allowed-host",
        value_name = "HOST[:PORT]",
        env = "KELP_ALLOWED_HOSTS",
        value_delimiter = ',',
        value_parser = crate::web::guard::parse_allowed_host
    )]
    pub allowed_host: Vec<String>,
}

#[derive(Debug, clap::Args)]
#[command(after_help = "\
Examples:
  kelp serve
      in a pod: in-cluster config, /metrics on 0.0.0.0:8080 (else 127.0.0.1)
  kelp serve --context prod
      then open http://127.0.0.1:8081
  kelp serve --context prod --context staging
      one process, two clusters, a switcher in the page
  kelp serve --from snapshot.json
      a dump (re-read when the file changes)
  curl -s localhost:8080/metrics | grep karpenter_helper_findings

Endpoints: /metrics (OpenMetrics), /livez, /readyz (ready after the first full sync) on
--metrics-addr, for the first cluster. The dashboard, its JSON API (/api/v1/...) and its
OpenAPI document (/api/openapi.yaml) on --dashboard-addr. Each finding that appears or
resolves is logged once (warn for critical and warning, info otherwise); each dashboard
read writes one audit line (target audit, event karpenter_read).

Both listeners close a connection whose request head takes more than 10 s, that stays idle
10 s between requests, or whose client reads nothing for 30 s while kelp writes, and serve
at most 512 (dashboard) and 256 (metrics) connections at once. The dashboard's live-update
streams take at most 128 of them, 32 per client address (past that: 503 with Retry-After,
and the page tries again later), and each lasts 10 minutes before the browser renews it.")]
pub struct Args {
    /// Serve a dump instead of watching a cluster (files, folders, or - for stdin)
    #[arg(long, value_name = "PATH", conflicts_with_all = ["kubeconfig", "context"])]
    pub from: Vec<PathBuf>,
    /// Kubeconfig file (default: the in-cluster config, then $KUBECONFIG and ~/.kube/config)
    #[arg(long, value_name = "PATH")]
    pub kubeconfig: Option<PathBuf>,
    /// Kubeconfig context to watch; repeat to watch several clusters (default: the current one)
    #[arg(long, value_name = "NAME")]
    pub context: Vec<String>,
    /// Where to serve /metrics, /livez and /readyz [default: 0.0.0.0:8080 in a pod,
    /// 127.0.0.1:8080 elsewhere]
    ///
    /// In a pod (KUBERNETES_SERVICE_HOST is set) Prometheus and the kubelet reach kelp by
    /// its pod IP, so it listens on every address; on a laptop /metrics names your pods,
    /// nodes and namespaces, so it stays on loopback unless you say otherwise.
    #[arg(long, value_name = "ADDR")]
    pub metrics_addr: Option<SocketAddr>,
    /// Require this bearer token for /metrics (Authorization: Bearer TOKEN); /livez and
    /// /readyz stay open for the kubelet's probes
    #[arg(
        long,
        value_name = "TOKEN",
        env = "KELP_METRICS_AUTH_TOKEN",
        hide_env_values = true
    )]
    pub metrics_auth_token: Option<String>,
    #[command(flatten)]
    pub dashboard: DashboardArgs,
    /// Karpenter's Service, scraped through the API server for prices (needs get on services/proxy)
    #[arg(long, value_name = "NS/SVC:PORT", default_value = crate::source::controller::DEFAULT_TARGET)]
    pub karpenter_service: crate::source::controller::ScrapeTarget,
    /// Do not scrape Karpenter's metrics (prices then come from node labels, if any)
    #[arg(long)]
    pub no_cost_scrape: bool,
    /// An instance-type catalogue (kelp's own file or a kwok instance-types file) for every
    /// cluster; without one, the AWS provider's metrics or, on kwok, its built-in types
    #[arg(long, value_name = "FILE")]
    pub catalog: Option<PathBuf>,
    /// Do not serve the dashboard
    #[arg(long)]
    pub no_dashboard: bool,
    /// Require this token for the dashboard (Authorization: Bearer, or ?token= once)
    #[arg(
        long,
        value_name = "TOKEN",
        env = "KELP_AUTH_TOKEN",
        hide_env_values = true
    )]
    pub auth_token: Option<String>,
    /// Mark the token cookie Secure, so browsers send it over HTTPS only
    ///
    /// kelp serves plain HTTP: set this when the dashboard is reached through a proxy that
    /// terminates TLS. Without it the cookie is still Secure when the proxy sends
    /// X-Forwarded-Proto: https (a forged header can only make the sender's own cookie
    /// stricter).
    #[arg(long)]
    pub secure_cookie: bool,
    /// Drop the series of objects gone for this long (Go duration: 30m, 1h, 2h30m)
    #[arg(long, value_name = "DURATION", default_value = "1h", value_parser = parse_ttl)]
    pub series_ttl: std::time::Duration,
    /// Keep a history of what Karpenter did and what kelp found in this directory, across
    /// restarts (default: none; `kelp history` reads it)
    ///
    /// One SQLite file (history.sqlite3, WAL) and a lock file: a second serve on the same
    /// directory refuses to start. With several --context, each cluster gets a
    /// sub-directory named after it. In a pod, mount a PersistentVolumeClaim here.
    #[arg(long, value_name = "DIR", env = "KELP_STATE_DIR")]
    pub state_dir: Option<PathBuf>,
    /// How long history rows are kept: a Go duration (336h) or days (14d)
    #[arg(long, value_name = "DURATION", default_value = "14d", value_parser = crate::history::age)]
    pub history_retention: chrono::Duration,
    /// The most disk the history may take (a quantity: 512Mi, 1Gi); the oldest rows go first
    #[arg(long, value_name = "SIZE", default_value = "1Gi", value_parser = parse_size)]
    pub history_max_size: u64,
    /// Stop if the history file cannot be read, instead of moving it aside (kept, renamed
    /// history.sqlite3.unreadable-TIME) and starting a fresh one
    #[arg(long)]
    pub history_strict: bool,
    /// Log line format
    #[arg(long, value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    for context in &args.context {
        super::source::check_context(args.kubeconfig.as_deref(), context)?;
    }
    let inputs = if !args.from.is_empty() {
        vec![Input::Dump(args.from)]
    } else if args.context.is_empty() {
        vec![Input::Live(Target {
            kubeconfig: args.kubeconfig,
            context: None,
        })]
    } else {
        args.context
            .into_iter()
            .map(|c| {
                Input::Live(Target {
                    kubeconfig: args.kubeconfig.clone(),
                    context: Some(c),
                })
            })
            .collect()
    };
    let auth_token = args.auth_token.filter(|t| !t.is_empty());
    let catalog = args
        .catalog
        .as_deref()
        .map(crate::source::catalog::read)
        .transpose()
        .map_err(|e| anyhow::anyhow!("--catalog: {e}"))?
        .map(std::sync::Arc::new);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    rt.block_on(serve::run(Options {
        inputs,
        metrics_addr: Some(args.metrics_addr.unwrap_or_else(|| {
            default_metrics_addr(
                std::env::var_os("KUBERNETES_SERVICE_HOST").is_some_and(|h| !h.is_empty()),
            )
        })),
        metrics_auth_token: args.metrics_auth_token.filter(|t| !t.is_empty()),
        dashboard_addr: (!args.no_dashboard).then_some(args.dashboard.dashboard_addr),
        auth_token,
        allowed_hosts: args.dashboard.allowed_host,
        secure_cookie: args.secure_cookie,
        karpenter_service: (!args.no_cost_scrape).then_some(args.karpenter_service),
        series_ttl: args.series_ttl,
        catalog,
        history: args.state_dir.map(|dir| serve::HistoryOptions {
            dir,
            retention: args.history_retention,
            max_bytes: args.history_max_size,
            strict: args.history_strict,
        }),
    }))?;
    Ok(ExitCode::SUCCESS)
}

/// Every address in a pod (Prometheus scrapes the pod IP), loopback anywhere else.
fn default_metrics_addr(in_pod: bool) -> SocketAddr {
    SocketAddr::from((if in_pod { [0, 0, 0, 0] } else { [127, 0, 0, 1] }, 8080))
}

fn parse_size(s: &str) -> Result<u64, String> {
    let v = crate::karpenter::resources::quantity_value(s).map_err(|e| format!("{s}: {e}"))?;
    if !(v >= 1.0 && v < u64::MAX as f64) {
        return Err(format!("{s}: must be at least 1 byte"));
    }
    Ok(v as u64)
}

fn parse_ttl(s: &str) -> Result<std::time::Duration, String> {
    crate::karpenter::duration::parse_go_duration(s)?
        .to_std()
        .map_err(|_| format!("{s}: must not be negative"))
}

#[cfg(test)]
mod tests {
    #[test]
    fn metrics_listen_on_every_address_only_in_a_pod() {
        assert_eq!(
            super::default_metrics_addr(true).to_string(),
            "0.0.0.0:8080"
        );
        assert_eq!(
            super::default_metrics_addr(false).to_string(),
            "127.0.0.1:8080"
        );
    }
}
