//! `kelp serve`: the process. It starts each cluster's runtime (sources, model, analysis
//! loop), gives the dashboard a board per cluster fed by every pass, and serves
//! `/metrics`, `/livez` and `/readyz` for the first cluster and the dashboard, until a
//! signal ends it.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::IntoResponse;
use axum::routing::get;
use axum::Router;

use crate::history::History;
use crate::metrics;
use crate::model::Cluster;
use crate::runtime::{self, Shared};
use crate::view;
use crate::web::Board;

pub use crate::runtime::Input;

pub struct Options {
    /// One or more clusters; the first one's findings are served at `/metrics`.
    pub inputs: Vec<Input>,
    /// Where `/metrics`, `/livez` and `/readyz` are served (none: not at all).
    pub metrics_addr: Option<SocketAddr>,
    /// Required (as a bearer token) by `/metrics` when set; the probes stay open.
    pub metrics_auth_token: Option<String>,
    /// Where the dashboard is served (none: not at all).
    pub dashboard_addr: Option<SocketAddr>,
    /// Required by the dashboard when set.
    pub auth_token: Option<String>,
    /// `Host` values the dashboard answers beyond loopback and its own address.
    pub allowed_hosts: Vec<String>,
    /// Mark the dashboard's token cookie `Secure` (reached over TLS through a proxy).
    pub secure_cookie: bool,
    /// The Karpenter controller's Service, scraped through the API server for prices
    /// (live clusters only; None: never).
    pub karpenter_service: Option<crate::source::controller::ScrapeTarget>,
    /// An instance-type catalogue for every cluster (`--catalog`).
    pub catalog: Option<Arc<crate::model::Catalog>>,
    /// How long the series of objects that no longer exist are kept.
    pub series_ttl: Duration,
    /// Keep a history on disk (`--state-dir`).
    pub history: Option<HistoryOptions>,
}

/// Where and how long to keep the history (`--state-dir`, `--history-*`).
#[derive(Debug, Clone)]
pub struct HistoryOptions {
    pub dir: std::path::PathBuf,
    pub retention: chrono::Duration,
    pub max_bytes: u64,
    pub strict: bool,
}

/// Keep `shared`'s history in `dir`: every later pass's rows go to the writer thread.
/// A directory that cannot be opened (read-only, a full disk) leaves serve running without
/// history, said by `/readyz` and the `history-not-kept` finding, unless `--history-strict`;
/// a directory another serve holds is always refused.
pub fn keep_history(
    shared: &Arc<Shared>,
    o: &HistoryOptions,
    dir: std::path::PathBuf,
) -> Result<Arc<History>, crate::history::StoreError> {
    let started = History::start(crate::history::Settings {
        dir: dir.clone(),
        retention: o.retention,
        max_bytes: o.max_bytes,
        strict: o.strict,
        cluster: shared.name().to_string(),
    });
    let (h, recorder) = match started {
        Ok((h, recorder, moved)) => {
            if let Some(m) = moved {
                tracing::error!(kept = %m.to.display(), "history: {}; moved it aside and started a fresh store", m.why);
            }
            tracing::info!(dir = %dir.display(), cluster = %shared.name(), "history: kept on disk");
            (Arc::new(h), Some(std::sync::Mutex::new(recorder)))
        }
        Err(e @ crate::history::StoreError::Locked { .. }) => return Err(e),
        Err(e) if o.strict => return Err(e),
        Err(e) => {
            tracing::error!(cluster = %shared.name(), "history: {e}; serving without it (--history-strict refuses instead)");
            let why = format!("{e} (restart serve once the state directory can be written)");
            (Arc::new(History::unavailable(why)), None)
        }
    };
    let (h2, model) = (h.clone(), Arc::downgrade(shared));
    shared.on_pass(Box::new(move |c, pass, _| {
        if let Some(recorder) = &recorder {
            let rows = recorder
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .observe(c, pass);
            h2.record(rows);
        }
        // The writer's trouble (or its end) goes into the model, for the next pass's
        // `history-not-kept` finding.
        let problem = h2.problem();
        if problem != c.history_problem {
            if let Some(s) = model.upgrade() {
                s.update_if(move |c| {
                    let changed = c.history_problem != problem;
                    c.history_problem = problem;
                    changed
                });
            }
        }
    }));
    Ok(h)
}

/// A dashboard board for `shared`: it is handed every later pass (and builds the page
/// while someone watches, see [`Board`]).
pub fn attach(shared: &Arc<Shared>) -> Arc<Board> {
    let s2 = shared.clone();
    let board = Board::new(shared.name(), shared.model(), Box::new(move || s2.ready()));
    if let Some(conn) = shared.connection() {
        board.set_client(conn.client.clone());
    }
    board.set_tally(shared.tally());
    let (b2, name) = (board.clone(), shared.name().to_string());
    shared.on_pass(Box::new(move |c, pass, status| {
        b2.publish(
            c,
            pass.clone(),
            view::Inputs {
                cluster_name: &name,
                price_problem: status.price_problem.clone(),
                forbidden: status.forbidden.clone(),
                stale: status.stale.clone(),
                fixed_clock: status.fixed_clock,
            },
        )
    }));
    board
}

/// A cluster state for a model that is already loaded, with its dashboard board: one
/// pass is run at once, so the report and the page are there (tests, one-off views).
pub fn loaded(
    name: &str,
    c: Cluster,
    now: chrono::DateTime<chrono::Utc>,
) -> (Arc<Shared>, Arc<Board>) {
    let shared = Shared::new(name, metrics::common::DEFAULT_SERIES_TTL);
    let board = attach(&shared);
    shared.load(c, now);
    (shared, board)
}

struct Http {
    shared: Arc<Shared>,
    registry: prometheus_client::registry::Registry,
    /// The first cluster's history, when one is kept: `/readyz` says when it is not.
    history: Option<Arc<History>>,
}

async fn metrics_handler(State(h): State<Arc<Http>>) -> impl IntoResponse {
    match metrics::encode(&h.registry) {
        Ok(body) => (
            [(
                header::CONTENT_TYPE,
                "application/openmetrics-text; version=1.0.0; charset=utf-8",
            )],
            body,
        )
            .into_response(),
        Err(_) => StatusCode::INTERNAL_SERVER_ERROR.into_response(),
    }
}

/// Ready after the first full sync. A history that cannot be written (a full disk) does
/// not make kelp unready (it still serves everything else) but is said in the body.
async fn readyz(State(h): State<Arc<Http>>) -> impl IntoResponse {
    let history = h
        .history
        .as_ref()
        .and_then(|h| h.problem())
        .map(|why| format!("history is not being kept: {why}\n"))
        .unwrap_or_default();
    match h.shared.not_ready() {
        None => (StatusCode::OK, format!("ok\n{history}")),
        Some(why) => (StatusCode::SERVICE_UNAVAILABLE, format!("{why}\n{history}")),
    }
}

/// Alive while the analysis keeps moving (see [`crate::runtime::health::Health::live`]).
async fn livez(State(h): State<Arc<Http>>) -> impl IntoResponse {
    match h.shared.health().live() {
        Ok(()) => (StatusCode::OK, "ok\n".to_string()),
        Err(why) => (StatusCode::SERVICE_UNAVAILABLE, format!("{why}\n")),
    }
}

/// The metrics and health router; `/metrics` behind `token` when one is given.
pub fn router(shared: Arc<Shared>, token: Option<String>) -> Router {
    router_with(shared, token, None)
}

/// As [`router`], with the cluster's history for `/readyz` to report on.
pub fn router_with(
    shared: Arc<Shared>,
    token: Option<String>,
    history: Option<Arc<History>>,
) -> Router {
    let registry = metrics::registry_with(shared.latest(), shared.seed(), shared.tally());
    let metrics = Router::new().route("/metrics", get(metrics_handler));
    let metrics = match token {
        Some(t) => metrics.layer(axum::middleware::from_fn_with_state(
            Arc::new(t),
            metrics_auth,
        )),
        None => metrics,
    };
    metrics
        .route("/livez", get(livez))
        .route("/readyz", get(readyz))
        .with_state(Arc::new(Http {
            shared,
            registry,
            history,
        }))
}

/// `/metrics` only for `Authorization: Bearer <token>` (compared in constant time).
async fn metrics_auth(
    State(token): State<Arc<String>>,
    req: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    use crate::web::guard::{bearer, same};
    match bearer(req.headers()) {
        Some(t) if same(t, &token) => next.run(req).await,
        _ => (
            StatusCode::UNAUTHORIZED,
            [(header::WWW_AUTHENTICATE, "Bearer realm=\"kelp metrics\"")],
            "kelp: /metrics needs Authorization: Bearer <the --metrics-auth-token>\n",
        )
            .into_response(),
    }
}

/// A listener on `addr`, with a deep accept queue; `what` names it in the error.
async fn listen(addr: SocketAddr, what: &str) -> anyhow::Result<tokio::net::TcpListener> {
    let bind = || -> std::io::Result<tokio::net::TcpListener> {
        let socket = if addr.is_ipv4() {
            tokio::net::TcpSocket::new_v4()?
        } else {
            tokio::net::TcpSocket::new_v6()?
        };
        socket.set_reuseaddr(true)?;
        socket.bind(addr)?;
        // A deep accept queue (the kernel caps it at somaxconn): a burst of connections,
        // such as many pages reconnecting at once, waits in it rather than having its
        // SYNs dropped and retried a second or more later.
        socket.listen(LISTEN_BACKLOG)
    };
    bind().map_err(|e| anyhow::anyhow!("cannot listen on {addr} for {what}: {e}"))
}

/// The accept queue asked of the kernel (tokio's default is 1024).
const LISTEN_BACKLOG: u32 = 4096;

/// Run until interrupted.
pub async fn run(opts: Options) -> anyhow::Result<()> {
    let mut clusters: Vec<Arc<Shared>> = Vec::new();
    let mut boards: Vec<Arc<Board>> = Vec::new();
    let mut histories: Vec<Arc<History>> = Vec::new();
    let several = opts.inputs.len() > 1;
    for input in opts.inputs {
        let dashboard = opts.dashboard_addr.is_some();
        let mut board = None;
        let mut history = None;
        let shared = runtime::start(
            input,
            opts.series_ttl,
            opts.karpenter_service.as_ref(),
            |s| {
                if dashboard {
                    board = Some(attach(s));
                }
                if let Some(o) = &opts.history {
                    // Several clusters: one store each, in a folder named after it.
                    let dir = if several {
                        o.dir.join(crate::web::urlencode(s.name()))
                    } else {
                        o.dir.clone()
                    };
                    let kept = keep_history(s, o, dir.clone());
                    // Set even when the store cannot be written: what it holds can still be read.
                    if let (Ok(_), Some(b)) = (&kept, &board) {
                        b.set_history_dir(dir);
                    }
                    history = Some(kept);
                }
            },
        )
        .await?;
        if let Some(h) = history {
            histories.push(h.map_err(|e| anyhow::anyhow!("--state-dir: {e}"))?);
        }
        if let Some(catalog) = opts.catalog.clone() {
            shared.set_catalog(catalog);
        }
        if clusters.iter().any(|c| c.name() == shared.name()) {
            anyhow::bail!("cluster {:?} is given twice", shared.name());
        }
        clusters.push(shared);
        boards.extend(board);
    }
    let Some(first) = clusters.first().cloned() else {
        anyhow::bail!("nothing to serve");
    };
    let mut tasks = tokio::task::JoinSet::new();
    let first_history = histories.first().cloned();
    if let Some(addr) = opts.metrics_addr {
        let listener = listen(addr, "/metrics").await?;
        let addr = listener.local_addr().unwrap_or(addr);
        tracing::info!(%addr, cluster = %first.name(), auth = opts.metrics_auth_token.is_some(), "serving /metrics, /livez, /readyz");
        let token = opts.metrics_auth_token.clone();
        // No Host check here: Prometheus and the kubelet reach it by pod IP, and it shows
        // only what /metrics exports anyway.
        tasks.spawn(async move {
            let limits = crate::listener::Limits::METRICS;
            let router = router_with(first, token, first_history);
            crate::listener::serve(listener, router, limits, shutdown()).await
        });
    }
    if let Some(addr) = opts.dashboard_addr {
        if !addr.ip().is_loopback() && opts.auth_token.is_none() {
            tracing::warn!(%addr, "the dashboard is bound beyond loopback without --auth-token: anyone who can reach it can read it");
        }
        let listener = listen(addr, "the dashboard").await?;
        let url = format!(
            "http://{}/clusters/{}/karpenter",
            listener.local_addr().unwrap_or(addr),
            crate::web::urlencode(clusters[0].name())
        );
        let bound = listener.local_addr().unwrap_or(addr);
        let site = Arc::new(crate::web::Site {
            clusters: boards,
            hosts: crate::web::Hosts::new(bound, &opts.allowed_hosts, opts.auth_token.is_some()),
            auth_token: opts.auth_token,
            secure_cookie: opts.secure_cookie,
            streams: crate::web::Streams::default(),
        });
        // Say where it is once it has something to show (the first pass has run).
        let first = site.clusters[0].clone();
        tasks.spawn(async move {
            let limits = crate::listener::Limits::DASHBOARD;
            crate::listener::serve(listener, crate::web::router(site), limits, shutdown()).await
        });
        tokio::spawn(async move {
            for _ in 0..1200 {
                if first.pass().is_some() {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            tracing::info!(%url, "serving the dashboard");
            println!("kelp: dashboard at {url}");
        });
    }
    while let Some(r) = tasks.join_next().await {
        r??;
    }
    drop(histories);
    Ok(())
}

async fn shutdown() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        if let Ok(mut s) = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        {
            s.recv().await;
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! { _ = ctrl_c => {}, _ = term => {} }
}
