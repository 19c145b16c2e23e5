//! `kelp serve`: keeps the model current from watch streams (or a dump), re-runs the
//! analysis on change (debounced) and on a clock tick, logs each finding as it appears
//! and resolves, and serves `/metrics`, `/livez` and `/readyz`.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::IntoResponse;
use axum::routing::get;
use axum::Router;
use chrono::Utc;
use tokio::sync::Notify;

use crate::analysis;
use crate::findings::{Finding, Report, Severity};
use crate::metrics::{self, LatestReport};
use crate::model::event::CoreEvent;
use crate::model::*;
use crate::source::live::{self, Connection, Resource};
use crate::source::watch::{reflect, Change, Object};

/// How long changes are gathered before the analysis re-runs.
pub const DEBOUNCE: Duration = Duration::from_millis(250);
/// Time-based findings (pending for more than 5 minutes, budgets...) change with the clock.
pub const TICK: Duration = Duration::from_secs(15);

/// Where `serve` reads the cluster from.
pub enum Input {
    Live(live::Target),
    Dump(Vec<PathBuf>),
}

pub struct Options {
    pub input: Input,
    pub metrics_addr: SocketAddr,
    /// How long the series of objects that no longer exist are kept.
    pub series_ttl: Duration,
}

/// Everything the tasks share.
pub struct Shared {
    pub cluster: RwLock<Cluster>,
    pub latest: LatestReport,
    pub changed: Notify,
    /// Kinds whose first list has arrived, of `kinds` expected.
    pub synced: AtomicUsize,
    pub kinds: AtomicUsize,
    pub analysed: AtomicBool,
    /// When the last analysis pass finished (monotonic), to tell a stalled one.
    pub last_pass: std::sync::Mutex<Option<std::time::Instant>>,
    /// A fixed clock for a dump (its capture time); the wall clock when watching.
    pub clock: RwLock<Option<chrono::DateTime<Utc>>>,
    /// The seed operator's metrics, folded from each analysis pass.
    pub seed: metrics::seed::SeedMetrics,
}

impl Shared {
    fn new(series_ttl: Duration) -> Arc<Self> {
        Arc::new(Shared {
            cluster: RwLock::new(Cluster::default()),
            latest: Arc::default(),
            changed: Notify::new(),
            synced: AtomicUsize::new(0),
            kinds: AtomicUsize::new(usize::MAX),
            analysed: AtomicBool::new(false),
            last_pass: std::sync::Mutex::new(None),
            clock: RwLock::new(None),
            seed: metrics::seed::SeedMetrics::new(series_ttl),
        })
    }

    /// Ready once every watched kind has listed and the first analysis ran.
    /// Ready once every watched kind has listed and the first analysis ran, and for as
    /// long as passes keep coming (a stalled analysis would serve a frozen report).
    pub fn ready(&self) -> bool {
        let fresh = self
            .last_pass
            .lock()
            .map(|t| t.is_some_and(|t| t.elapsed() < TICK * 4))
            .unwrap_or(false);
        self.synced.load(Ordering::SeqCst) >= self.kinds.load(Ordering::SeqCst)
            && self.analysed.load(Ordering::SeqCst)
            && fresh
    }

    fn update(&self, f: impl FnOnce(&mut Cluster)) {
        // A panic elsewhere must not freeze the model: the data itself is still whole.
        f(&mut self.cluster.write().unwrap_or_else(|e| e.into_inner()));
        self.changed.notify_one();
    }
}

// ------------------------------------------------------------------ feeding the model

/// How one kind enters the model.
trait Kind: Object + Sized {
    fn apply(self, c: &mut Cluster);
    fn delete(&self, c: &mut Cluster);
    /// The keys this reflector owns (for NodeClass: only those of its own kind).
    fn keys(c: &Cluster, r: &Resource) -> Vec<(Option<String>, String)>;
    fn delete_key(c: &mut Cluster, ns: Option<&str>, name: &str);
}

macro_rules! cluster_kind {
    ($t:ty, $map:ident, $apply:ident, $del:ident) => {
        impl Kind for $t {
            fn apply(self, c: &mut Cluster) {
                c.$apply(self)
            }
            fn delete(&self, c: &mut Cluster) {
                c.$del(&self.metadata.name)
            }
            fn keys(c: &Cluster, _: &Resource) -> Vec<(Option<String>, String)> {
                c.$map.keys().map(|k| (None, k.clone())).collect()
            }
            fn delete_key(c: &mut Cluster, _: Option<&str>, name: &str) {
                c.$del(name)
            }
        }
    };
    ($t:ty, $map:ident, $apply:ident, $del:ident, namespaced) => {
        impl Kind for $t {
            fn apply(self, c: &mut Cluster) {
                c.$apply(self)
            }
            fn delete(&self, c: &mut Cluster) {
                c.$del(
                    self.metadata.namespace.as_deref().unwrap_or_default(),
                    &self.metadata.name,
                )
            }
            fn keys(c: &Cluster, _: &Resource) -> Vec<(Option<String>, String)> {
                c.$map
                    .keys()
                    .map(|(ns, n)| (Some(ns.clone()), n.clone()))
                    .collect()
            }
            fn delete_key(c: &mut Cluster, ns: Option<&str>, name: &str) {
                c.$del(ns.unwrap_or_default(), name)
            }
        }
    };
}

cluster_kind!(NodePool, nodepools, apply_nodepool, delete_nodepool);
cluster_kind!(NodeClaim, nodeclaims, apply_nodeclaim, delete_nodeclaim);
cluster_kind!(Node, nodes, apply_node, delete_node);
cluster_kind!(Pod, pods, apply_pod, delete_pod, namespaced);
cluster_kind!(
    DaemonSet,
    daemonsets,
    apply_daemonset,
    delete_daemonset,
    namespaced
);
cluster_kind!(PodDisruptionBudget, pdbs, apply_pdb, delete_pdb, namespaced);

impl Kind for NodeClass {
    fn apply(self, c: &mut Cluster) {
        c.apply_nodeclass(self)
    }
    fn delete(&self, c: &mut Cluster) {
        c.delete_nodeclass(&self.kind, &self.metadata.name)
    }
    /// Keys carry the kind in place of a namespace: EC2NodeClass and KWOKNodeClass share names.
    fn keys(c: &Cluster, r: &Resource) -> Vec<(Option<String>, String)> {
        c.nodeclasses
            .keys()
            .filter(|(kind, _)| kind == r.kind)
            .map(|(kind, name)| (Some(kind.clone()), name.clone()))
            .collect()
    }
    fn delete_key(c: &mut Cluster, kind: Option<&str>, name: &str) {
        c.delete_nodeclass(kind.unwrap_or_default(), name)
    }
}

impl Kind for CoreEvent {
    fn apply(self, c: &mut Cluster) {
        c.apply_event(self.into());
    }
    fn delete(&self, c: &mut Cluster) {
        let e: Event = self.clone_event();
        c.delete_event(&e.id);
    }
    fn keys(c: &Cluster, _: &Resource) -> Vec<(Option<String>, String)> {
        c.events.keys().map(|k| (None, k.clone())).collect()
    }
    fn delete_key(c: &mut Cluster, _: Option<&str>, id: &str) {
        c.delete_event(id)
    }
}

/// Feed one change of a kind into the model.
fn feed<T: Kind>(c: &mut Cluster, r: &Resource, change: Change<T>) {
    match change {
        Change::Apply(o) => o.apply(c),
        Change::Delete(o) => o.delete(c),
        Change::Reset(items) => {
            for (ns, name) in T::keys(c, r) {
                T::delete_key(c, ns.as_deref(), &name);
            }
            items.into_iter().for_each(|o| o.apply(c));
        }
    }
}

fn spawn_reflector<T>(
    shared: &Arc<Shared>,
    conn: &Arc<Connection>,
    r: Resource,
    fix: fn(&mut T, &Resource),
) where
    T: Kind + serde::de::DeserializeOwned + Clone + Send + 'static,
{
    let (shared, conn) = (shared.clone(), conn.clone());
    tokio::spawn(async move {
        let s2 = shared.clone();
        let mut first = true;
        reflect::<T, _>(
            &conn,
            r,
            |mut change: Change<T>| {
                match &mut change {
                    Change::Apply(o) | Change::Delete(o) => fix(o, &r),
                    Change::Reset(items) => items.iter_mut().for_each(|o| fix(o, &r)),
                }
                shared.update(|c| feed(c, &r, change));
            },
            move || {
                if std::mem::take(&mut first) {
                    s2.synced.fetch_add(1, Ordering::SeqCst);
                }
            },
        )
        .await
    });
}

fn no_fix<T>(_: &mut T, _: &Resource) {}

fn node_class_fix(o: &mut NodeClass, r: &Resource) {
    o.kind = r.kind.to_string();
    o.group = r.group.to_string();
}

/// Start watching every kind the cluster serves; Karpenter's kinds start when its APIs
/// appear (discovery is polled), without a restart.
async fn watch_cluster(
    shared: Arc<Shared>,
    conn: Arc<Connection>,
    first: crate::model::ApiInfo,
) -> anyhow::Result<()> {
    let mut started: Vec<&'static str> = Vec::new();
    let core = [
        live::NODES,
        live::PODS,
        live::DAEMONSETS,
        live::PDBS,
        live::EVENTS,
    ];
    // Count every kind discovery already shows before any watch starts, so the first
    // analysis never runs on a model that has pods but not yet the NodePools.
    shared
        .kinds
        .store(live::resources_for(&first).len(), Ordering::SeqCst);
    shared.update(|c| c.api = first.clone());
    spawn_reflector::<Node>(&shared, &conn, live::NODES, no_fix);
    spawn_reflector::<Pod>(&shared, &conn, live::PODS, no_fix);
    spawn_reflector::<DaemonSet>(&shared, &conn, live::DAEMONSETS, no_fix);
    spawn_reflector::<PodDisruptionBudget>(&shared, &conn, live::PDBS, no_fix);
    spawn_reflector::<CoreEvent>(&shared, &conn, live::EVENTS, no_fix);
    loop {
        match live::discover(&conn).await {
            Ok(api) => {
                for r in live::resources_for(&api) {
                    if started.contains(&r.kind) || core.iter().any(|k| k.kind == r.kind) {
                        continue;
                    }
                    tracing::info!(resource = r.plural, "Karpenter API found; watching");
                    if !live::resources_for(&first).iter().any(|f| f.kind == r.kind) {
                        shared.kinds.fetch_add(1, Ordering::SeqCst);
                    }
                    match r.kind {
                        "NodePool" => spawn_reflector::<NodePool>(&shared, &conn, r, no_fix),
                        "NodeClaim" => spawn_reflector::<NodeClaim>(&shared, &conn, r, no_fix),
                        _ => spawn_reflector::<NodeClass>(&shared, &conn, r, node_class_fix),
                    }
                    started.push(r.kind);
                }
                shared.update(|c| c.api = api);
            }
            Err(e) => tracing::warn!(error = %e, "discovery failed"),
        }
        tokio::time::sleep(Duration::from_secs(30)).await;
    }
}

// ------------------------------------------------------------------ analysis and logs

type Key = (&'static str, String, Option<String>);

fn key(f: &Finding) -> Key {
    (f.code.as_str(), f.object.to_string(), f.nodepool.clone())
}

/// Log what appeared and what resolved between two reports: one structured line each.
pub fn log_changes(before: Option<&Report>, after: &Report) {
    let old: BTreeMap<Key, &Finding> = before
        .map(|r| r.findings.iter().map(|f| (key(f), f)).collect())
        .unwrap_or_default();
    let new: BTreeMap<Key, &Finding> = after.findings.iter().map(|f| (key(f), f)).collect();
    for (k, f) in &new {
        if !old.contains_key(k) {
            let (code, object, nodepool, message) = (
                f.code.as_str(),
                f.object.to_string(),
                f.nodepool.as_deref().unwrap_or(""),
                f.message.as_str(),
            );
            match f.severity {
                Severity::Critical | Severity::Warning => {
                    tracing::warn!(target: "kelp::findings", event = "appeared", code, severity = %f.severity, object, nodepool, message)
                }
                Severity::Info => {
                    tracing::info!(target: "kelp::findings", event = "appeared", code, severity = %f.severity, object, nodepool, message)
                }
            }
        }
    }
    for (k, f) in &old {
        if !new.contains_key(k) {
            tracing::info!(target: "kelp::findings", event = "resolved", code = f.code.as_str(), severity = %f.severity, object = f.object.to_string(), nodepool = f.nodepool.as_deref().unwrap_or(""));
        }
    }
}

async fn analyse_forever(shared: Arc<Shared>) {
    loop {
        tokio::select! {
            _ = shared.changed.notified() => tokio::time::sleep(DEBOUNCE).await,
            _ = tokio::time::sleep(TICK) => {}
        }
        if shared.synced.load(Ordering::SeqCst) < shared.kinds.load(Ordering::SeqCst) {
            continue;
        }
        let now = shared
            .clock
            .read()
            .ok()
            .and_then(|c| *c)
            .unwrap_or_else(Utc::now);
        // The analysis is CPU work: off the async workers, so scrapes and watches go on.
        let s2 = shared.clone();
        let Ok(report) = tokio::task::spawn_blocking(move || {
            let cluster = s2.cluster.read().unwrap_or_else(|e| e.into_inner());
            let report = analysis::analyze(&cluster, now);
            s2.seed.update(&report, &cluster, now);
            Arc::new(report)
        })
        .await
        else {
            tracing::error!("the analysis failed; keeping the previous report");
            continue;
        };
        let before = shared.latest.read().ok().and_then(|r| r.clone());
        log_changes(before.as_deref(), &report);
        if let Ok(mut l) = shared.latest.write() {
            *l = Some(report);
        }
        shared.analysed.store(true, Ordering::SeqCst);
        if let Ok(mut t) = shared.last_pass.lock() {
            *t = Some(std::time::Instant::now());
        }
    }
}

// ------------------------------------------------------------------ HTTP

struct Http {
    shared: Arc<Shared>,
    registry: prometheus_client::registry::Registry,
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

async fn readyz(State(h): State<Arc<Http>>) -> impl IntoResponse {
    if h.shared.ready() {
        (StatusCode::OK, "ok\n")
    } else {
        (
            StatusCode::SERVICE_UNAVAILABLE,
            "waiting for the first full sync\n",
        )
    }
}

/// The metrics and health router.
pub fn router(shared: Arc<Shared>) -> Router {
    let registry = metrics::registry_with(shared.latest.clone(), &shared.seed);
    Router::new()
        .route("/metrics", get(metrics_handler))
        .route("/livez", get(|| async { "ok\n" }))
        .route("/readyz", get(readyz))
        .with_state(Arc::new(Http { shared, registry }))
}

/// Run until interrupted.
pub async fn run(opts: Options) -> anyhow::Result<()> {
    let shared = Shared::new(opts.series_ttl);
    match opts.input {
        Input::Dump(paths) => {
            let mut c = Cluster::default();
            crate::source::load_paths(&paths, &mut c)?;
            if let Ok(mut clock) = shared.clock.write() {
                *clock = c.captured_at;
            }
            shared.update(|m| *m = c);
            shared.kinds.store(0, Ordering::SeqCst);
        }
        Input::Live(target) => {
            let conn = Arc::new(live::connect(&target).await?);
            // Fail fast, with one clear line, when the cluster cannot be read at all.
            let api = live::discover(&conn).await?;
            tracing::info!(server = %conn.server, context = %conn.context, "watching");
            tokio::spawn(watch_cluster(shared.clone(), conn, api));
        }
    }
    tokio::spawn(analyse_forever(shared.clone()));
    let listener = tokio::net::TcpListener::bind(opts.metrics_addr)
        .await
        .map_err(|e| anyhow::anyhow!("cannot listen on {}: {e}", opts.metrics_addr))?;
    tracing::info!(addr = %opts.metrics_addr, "serving /metrics, /livez, /readyz");
    axum::serve(listener, router(shared))
        .with_graceful_shutdown(shutdown())
        .await?;
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
