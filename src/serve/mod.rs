//! `kelp serve`: keeps the model current from watch streams (or a dump), re-runs the
//! analysis on change (debounced) and on a clock tick, logs each finding as it appears
//! and resolves, and serves `/metrics`, `/livez` and `/readyz`.
//!
//! Nothing here blocks the async workers: watch tasks hand their edits to one applier
//! thread per cluster (it alone takes the model's write lock), analysis passes run on
//! the blocking pool, and handlers that read the model do so off the workers with a
//! deadline. [`health`] tracks each kind's watch progress and the analysis heartbeat.

pub mod health;

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

/// Where `serve` reads a cluster from.
pub enum Input {
    Live(live::Target),
    /// Files re-read when they change (a dump that is rewritten shows up live).
    Dump(Vec<PathBuf>),
    /// The bundled demo cluster.
    Demo,
}

pub struct Options {
    /// One or more clusters; the first one's findings are served at `/metrics`.
    pub inputs: Vec<Input>,
    /// Where `/metrics`, `/livez` and `/readyz` are served (none: not at all).
    pub metrics_addr: Option<SocketAddr>,
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
    /// How long the series of objects that no longer exist are kept.
    pub series_ttl: Duration,
}

/// Everything the tasks of one cluster share.
pub struct Shared {
    /// The kubeconfig context (or the dump's name): `{cluster}` in the dashboard's URLs.
    pub name: String,
    /// What the dashboard shows, built by each analysis pass.
    pub page: RwLock<Option<Arc<crate::web::Page>>>,
    /// Bumped after each pass; the dashboard's live updates follow it.
    pub version: tokio::sync::watch::Sender<u64>,
    /// The connection, for reads the dashboard makes on demand (a pane's full yaml).
    pub conn: std::sync::OnceLock<Arc<Connection>>,
    /// Why prices are missing, when the controller scrape failed.
    pub price_problem: RwLock<Option<crate::web::view::PriceProblem>>,
    /// A Karpenter kind kelp may not list (RBAC), with the API server's words.
    pub forbidden: RwLock<Option<String>>,
    /// Log findings as they appear and resolve (not for the demo).
    pub log_findings: AtomicBool,
    /// Build the dashboard's view each pass (off with --no-dashboard: nobody reads it).
    pub build_page: AtomicBool,
    /// The model. Only the applier thread writes it (see [`Shared::update`]); passes
    /// read it on the blocking pool, handlers through [`Shared::read`].
    pub cluster: Arc<RwLock<Cluster>>,
    /// Edits for the applier thread.
    edits: std::sync::mpsc::Sender<Edit>,
    pub latest: LatestReport,
    pub changed: Arc<Notify>,
    /// Watch progress per kind and the analysis heartbeat.
    pub health: health::Health,
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

/// A change to the model, applied on the applier thread.
type Edit = Box<dyn FnOnce(&mut Cluster) + Send>;

/// The applier: takes the write lock (blocking only itself while a pass reads), applies
/// every queued edit in one go, then wakes the analysis. Ends when the cluster's state is
/// dropped.
fn spawn_applier(
    name: &str,
    cluster: Arc<RwLock<Cluster>>,
    changed: Arc<Notify>,
) -> std::sync::mpsc::Sender<Edit> {
    let (tx, rx) = std::sync::mpsc::channel::<Edit>();
    let spawned = std::thread::Builder::new()
        .name(format!("kelp-model-{name}"))
        .spawn(move || {
            while let Ok(first) = rx.recv() {
                let mut c = cluster.write().unwrap_or_else(|e| e.into_inner());
                let mut apply = |edit: Edit| {
                    // One bad edit must not end the applier: the model itself is still whole.
                    if std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| edit(&mut c)))
                        .is_err()
                    {
                        tracing::error!("a model update panicked; it was skipped");
                    }
                };
                apply(first);
                while let Ok(next) = rx.try_recv() {
                    apply(next);
                }
                drop(c);
                changed.notify_one();
            }
        });
    if let Err(e) = spawned {
        tracing::error!(error = %e, "cannot start the model's applier thread");
    }
    tx
}

impl Shared {
    pub fn new(name: &str, series_ttl: Duration) -> Arc<Self> {
        let cluster = Arc::new(RwLock::new(Cluster::default()));
        let changed = Arc::new(Notify::new());
        let edits = spawn_applier(name, cluster.clone(), changed.clone());
        Arc::new(Shared {
            name: name.to_string(),
            page: RwLock::new(None),
            version: tokio::sync::watch::channel(0).0,
            conn: std::sync::OnceLock::new(),
            price_problem: RwLock::new(None),
            forbidden: RwLock::new(None),
            log_findings: AtomicBool::new(true),
            build_page: AtomicBool::new(true),
            cluster,
            edits,
            latest: Arc::default(),
            changed,
            health: health::Health::default(),
            synced: AtomicUsize::new(0),
            kinds: AtomicUsize::new(usize::MAX),
            analysed: AtomicBool::new(false),
            last_pass: std::sync::Mutex::new(None),
            clock: RwLock::new(None),
            seed: metrics::seed::SeedMetrics::new(series_ttl),
        })
    }

    /// Ready once every watched kind has listed and the first analysis ran, and for as
    /// long as passes keep coming (a stalled analysis would serve a frozen report) and
    /// every kind's watch keeps making progress (an outage would serve an old model).
    pub fn ready(&self) -> bool {
        self.not_ready().is_none()
    }

    /// Why not ready, in one line; None when ready.
    pub fn not_ready(&self) -> Option<String> {
        if self.synced.load(Ordering::SeqCst) < self.kinds.load(Ordering::SeqCst) {
            return Some("waiting for the first full sync".into());
        }
        if !self.analysed.load(Ordering::SeqCst) {
            return Some("waiting for the first analysis".into());
        }
        let fresh = self
            .last_pass
            .lock()
            .map(|t| t.is_some_and(|t| t.elapsed() < TICK * 4))
            .unwrap_or(false);
        if !fresh {
            return Some("the analysis has not run for a minute".into());
        }
        self.health.stale().map(|s| s.line())
    }

    /// Run `f` on the model off the async workers; None when the model stays locked past
    /// `deadline` (a long pass with edits queued behind it) or `f` panicked.
    pub async fn read<R: Send + 'static>(
        self: &Arc<Self>,
        deadline: Duration,
        f: impl FnOnce(&Cluster) -> R + Send + 'static,
    ) -> Option<R> {
        let cluster = self.cluster.clone();
        let task = tokio::task::spawn_blocking(move || {
            f(&cluster.read().unwrap_or_else(|e| e.into_inner()))
        });
        tokio::time::timeout(deadline, task).await.ok()?.ok()
    }

    /// One analysis pass (CPU work, blocking): the report, the seed metrics and the
    /// dashboard's page. Returns the report for the caller to log and publish.
    pub fn pass(&self, now: chrono::DateTime<Utc>) -> Arc<Report> {
        let cluster = self.cluster.read().unwrap_or_else(|e| e.into_inner());
        let (report, pending) = analysis::analyze_with_pending(&cluster, now);
        self.seed.update(&report, &cluster, now);
        let report = Arc::new(report);
        if !self.build_page.load(Ordering::Relaxed) {
            return report;
        }
        let page = crate::web::build_page(
            &cluster,
            crate::web::view::Inputs {
                cluster_name: &self.name,
                report: &report,
                pending: &pending,
                now,
                price_problem: self.price_problem.read().ok().and_then(|p| p.clone()),
                forbidden: self.forbidden.read().ok().and_then(|f| f.clone()),
                stale: self.health.stale(),
            },
            report.clone(),
        );
        if let Ok(mut p) = self.page.write() {
            *p = Some(Arc::new(page));
        }
        report
    }

    /// A cluster state for a model that is already loaded (tests, one-off views): one
    /// pass is run at once, so the page and report are there.
    pub fn loaded(name: &str, c: Cluster, now: chrono::DateTime<Utc>) -> Arc<Self> {
        let shared = Shared::new(name, metrics::seed::DEFAULT_SERIES_TTL);
        *shared.cluster.write().unwrap_or_else(|e| e.into_inner()) = c;
        shared.kinds.store(0, Ordering::SeqCst);
        let report = shared.pass(now);
        if let Ok(mut l) = shared.latest.write() {
            *l = Some(report);
        }
        shared
    }

    /// Queue an edit of the model for the applier thread; never blocks. The analysis
    /// is woken once it is applied.
    pub fn update(&self, f: impl FnOnce(&mut Cluster) + Send + 'static) {
        if self.edits.send(Box::new(f)).is_err() {
            tracing::error!("the model's applier thread is gone; an update was lost");
        }
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
    use crate::source::watch::Progress;
    let (shared, conn) = (shared.clone(), conn.clone());
    tokio::spawn(async move {
        let s2 = shared.clone();
        let mut first = true;
        let karpenter = r.group.starts_with("karpenter.");
        reflect::<T, _>(
            &conn,
            r,
            |mut change: Change<T>| {
                match &mut change {
                    Change::Apply(o) | Change::Delete(o) => fix(o, &r),
                    Change::Reset(items) => items.iter_mut().for_each(|o| fix(o, &r)),
                }
                shared.update(move |c| feed(c, &r, change));
            },
            move |progress| {
                s2.health.progress(r.kind, &progress);
                match progress {
                    Progress::Watching => {}
                    Progress::Listed => {
                        if std::mem::take(&mut first) {
                            s2.synced.fetch_add(1, Ordering::SeqCst);
                        }
                        if karpenter {
                            if let Ok(mut f) = s2.forbidden.write() {
                                if f.as_deref().is_some_and(|f| f.contains(r.plural)) {
                                    *f = None;
                                }
                            }
                        }
                    }
                    Progress::Failed(e) if karpenter && e.is_forbidden() => {
                        if let Ok(mut f) = s2.forbidden.write() {
                            *f = Some(format!(
                                "list and watch {}.{} are forbidden ({e})",
                                r.plural, r.group
                            ));
                        }
                        s2.changed.notify_one();
                    }
                    Progress::Failed(_) => {}
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
    let api = first.clone();
    shared.update(move |c| c.api = api);
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
                shared.update(move |c| c.api = api);
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
    let mut first = true;
    loop {
        shared.health.turn();
        let changed = tokio::select! {
            _ = shared.changed.notified() => { tokio::time::sleep(DEBOUNCE).await; true }
            _ = tokio::time::sleep(TICK) => false,
        };
        // Wait for every kind's first list, except one kelp may not read at all: then the
        // dashboard says which permission is missing (and /readyz stays unready).
        let forbidden = shared.forbidden.read().ok().is_some_and(|f| f.is_some());
        if shared.synced.load(Ordering::SeqCst) < shared.kinds.load(Ordering::SeqCst) && !forbidden
        {
            continue;
        }
        // A dump's clock stands still: with no change, another pass would find the same.
        let fixed_clock = shared.clock.read().ok().is_some_and(|c| c.is_some());
        if fixed_clock && !changed && !first {
            if let Ok(mut t) = shared.last_pass.lock() {
                *t = Some(std::time::Instant::now());
            }
            continue;
        }
        first = false;
        let now = shared
            .clock
            .read()
            .ok()
            .and_then(|c| *c)
            .unwrap_or_else(Utc::now);
        // The analysis is CPU work: off the async workers, so scrapes and watches go on.
        let s2 = shared.clone();
        shared.health.pass_begins();
        let outcome = tokio::task::spawn_blocking(move || s2.pass(now)).await;
        shared.health.pass_ends();
        let Ok(report) = outcome else {
            tracing::error!("the analysis failed; keeping the previous report");
            continue;
        };
        let before = shared.latest.read().ok().and_then(|r| r.clone());
        if shared.log_findings.load(Ordering::Relaxed) {
            log_changes(before.as_deref(), &report);
        }
        if let Ok(mut l) = shared.latest.write() {
            *l = Some(report);
        }
        shared.analysed.store(true, Ordering::SeqCst);
        shared.version.send_modify(|v| *v += 1);
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
    match h.shared.not_ready() {
        None => (StatusCode::OK, "ok\n".to_string()),
        Some(why) => (StatusCode::SERVICE_UNAVAILABLE, format!("{why}\n")),
    }
}

/// Alive while the analysis keeps moving (see [`health::Health::live`]).
async fn livez(State(h): State<Arc<Http>>) -> impl IntoResponse {
    match h.shared.health.live() {
        Ok(()) => (StatusCode::OK, "ok\n".to_string()),
        Err(why) => (StatusCode::SERVICE_UNAVAILABLE, format!("{why}\n")),
    }
}

/// Check liveness now and then, so a stuck pass is logged even when nobody probes.
async fn watchdog(shared: Arc<Shared>) {
    loop {
        tokio::time::sleep(Duration::from_secs(5)).await;
        shared.health.watch();
    }
}

/// The metrics and health router.
pub fn router(shared: Arc<Shared>) -> Router {
    let registry = metrics::registry_with(shared.latest.clone(), &shared.seed);
    Router::new()
        .route("/metrics", get(metrics_handler))
        .route("/livez", get(livez))
        .route("/readyz", get(readyz))
        .with_state(Arc::new(Http { shared, registry }))
}

/// A dump's name in URLs: the first file's stem.
fn dump_name(paths: &[PathBuf]) -> String {
    paths
        .first()
        .and_then(|p| p.file_stem())
        .map(|s| s.to_string_lossy().into_owned())
        .filter(|s| !s.is_empty() && s != "-")
        .unwrap_or_else(|| "dump".into())
}

fn load_dump(paths: &[PathBuf]) -> anyhow::Result<Cluster> {
    let mut c = Cluster::default();
    crate::source::load_paths(paths, &mut c)?;
    Ok(c)
}

fn set_model(shared: &Shared, c: Cluster) {
    if let Ok(mut clock) = shared.clock.write() {
        *clock = c.captured_at.filter(|t| analysis::plausible_clock(*t));
    }
    shared.update(move |m| *m = c);
}

fn mtimes(paths: &[PathBuf]) -> Vec<Option<std::time::SystemTime>> {
    paths
        .iter()
        .map(|p| std::fs::metadata(p).and_then(|m| m.modified()).ok())
        .collect()
}

/// Re-read a dump when one of its files changes, so `serve --from` follows a file that
/// is rewritten. A file that does not parse keeps the previous model (and says why).
async fn follow_dump(shared: Arc<Shared>, paths: Vec<PathBuf>) {
    if paths.iter().any(|p| p.as_os_str() == "-") {
        return;
    }
    let mut seen = mtimes(&paths);
    loop {
        tokio::time::sleep(Duration::from_millis(500)).await;
        let now = mtimes(&paths);
        if now == seen {
            continue;
        }
        seen = now;
        let p2 = paths.clone();
        match tokio::task::spawn_blocking(move || load_dump(&p2)).await {
            Ok(Ok(c)) => {
                tracing::info!(paths = ?paths, "dump changed; reloaded");
                set_model(&shared, c);
            }
            Ok(Err(e)) => {
                tracing::warn!(error = %e, "dump changed but cannot be read; keeping the previous one")
            }
            Err(_) => {}
        }
    }
}

/// How often Karpenter's metrics are scraped for prices and offering availability.
pub const PRICE_INTERVAL: Duration = Duration::from_secs(60);

/// The dashboard's words for a scrape failure.
pub fn price_problem(
    e: &crate::source::controller::ScrapeError,
    target: &crate::source::controller::ScrapeTarget,
) -> crate::web::view::PriceProblem {
    use crate::source::controller::ScrapeError as E;
    use crate::web::view::PriceProblem as P;
    let message = format!("{e} ({})", e.hint(target));
    match e {
        E::Forbidden { .. } => P::Forbidden {
            rbac: e
                .rbac_yaml(target)
                .unwrap_or_else(|| crate::source::controller::rbac_yaml(target, "kelp", "kelp")),
            message,
        },
        E::Timeout { .. } => P::Timeout { message },
        E::NotFound { .. } | E::PortNotFound { .. } => P::NotFound { message },
        _ => P::Other { message },
    }
}

/// Scrape Karpenter's metrics now and then; the model gets the last good ones, the
/// dashboard the cause of a failure.
async fn scrape_prices(
    shared: Arc<Shared>,
    conn: Arc<Connection>,
    target: crate::source::controller::ScrapeTarget,
) {
    let mut cache = crate::source::controller::PriceCache::new(target.clone(), PRICE_INTERVAL);
    loop {
        if cache.refresh(&conn, std::time::Instant::now()).await {
            let problem = cache.last_error().map(|e| price_problem(e, &target));
            match &problem {
                Some(p) => {
                    tracing::info!(service = %target, problem = p.message(), "no prices from Karpenter's metrics")
                }
                None => tracing::debug!(service = %target, "Karpenter's metrics scraped"),
            }
            if let Ok(mut p) = shared.price_problem.write() {
                *p = problem;
            }
            let metrics = cache.metrics().cloned();
            shared.update(move |c| c.metrics = metrics);
        }
        tokio::time::sleep(Duration::from_secs(5)).await;
    }
}

/// Start one cluster's sources and analysis; returns its shared state.
async fn start(
    input: Input,
    series_ttl: Duration,
    karpenter_service: Option<&crate::source::controller::ScrapeTarget>,
    dashboard: bool,
) -> anyhow::Result<Arc<Shared>> {
    let shared = match input {
        Input::Dump(paths) => {
            let shared = Shared::new(&dump_name(&paths), series_ttl);
            set_model(&shared, load_dump(&paths)?);
            shared.kinds.store(0, Ordering::SeqCst);
            tokio::spawn(follow_dump(shared.clone(), paths));
            shared
        }
        Input::Demo => {
            let shared = Shared::new("demo", series_ttl);
            shared.log_findings.store(false, Ordering::Relaxed);
            let mut c = crate::demo::cluster()?;
            c.captured_at = Some(crate::demo::now());
            set_model(&shared, c);
            shared.kinds.store(0, Ordering::SeqCst);
            shared
        }
        Input::Live(target) => {
            let conn = Arc::new(live::connect(&target).await?);
            // Fail fast, with one clear line, when the cluster cannot be read at all.
            let api = live::discover(&conn).await?;
            tracing::info!(server = %conn.server, context = %conn.context, "watching");
            let shared = Shared::new(&conn.context, series_ttl);
            let _ = shared.conn.set(conn.clone());
            if let Some(t) = karpenter_service {
                tokio::spawn(scrape_prices(shared.clone(), conn.clone(), t.clone()));
            }
            tokio::spawn(watch_cluster(shared.clone(), conn, api));
            shared
        }
    };
    shared.build_page.store(dashboard, Ordering::Relaxed);
    tokio::spawn(analyse_forever(shared.clone()));
    tokio::spawn(watchdog(shared.clone()));
    Ok(shared)
}

async fn listen(addr: SocketAddr, what: &str) -> anyhow::Result<tokio::net::TcpListener> {
    tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|e| anyhow::anyhow!("cannot listen on {addr} for {what}: {e}"))
}

/// Run until interrupted.
pub async fn run(opts: Options) -> anyhow::Result<()> {
    let mut clusters: Vec<Arc<Shared>> = Vec::new();
    for input in opts.inputs {
        let shared = start(
            input,
            opts.series_ttl,
            opts.karpenter_service.as_ref(),
            opts.dashboard_addr.is_some(),
        )
        .await?;
        if clusters.iter().any(|c| c.name == shared.name) {
            anyhow::bail!("cluster {:?} is given twice", shared.name);
        }
        clusters.push(shared);
    }
    let Some(first) = clusters.first().cloned() else {
        anyhow::bail!("nothing to serve");
    };
    let mut tasks = tokio::task::JoinSet::new();
    if let Some(addr) = opts.metrics_addr {
        let listener = listen(addr, "/metrics").await?;
        tracing::info!(%addr, cluster = %first.name, "serving /metrics, /livez, /readyz");
        // No Host check here: Prometheus and the kubelet reach it by pod IP, and it shows
        // only what /metrics exports anyway.
        tasks.spawn(async move {
            let limits = crate::listener::Limits::METRICS;
            crate::listener::serve(listener, router(first), limits, shutdown()).await
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
            crate::web::urlencode(&clusters[0].name)
        );
        let bound = listener.local_addr().unwrap_or(addr);
        let site = Arc::new(crate::web::Site {
            clusters,
            hosts: crate::web::Hosts::new(bound, &opts.allowed_hosts, opts.auth_token.is_some()),
            auth_token: opts.auth_token,
            secure_cookie: opts.secure_cookie,
        });
        // Say where it is once it has something to show (the first pass has run).
        let first = site.clusters[0].clone();
        tasks.spawn(async move {
            let limits = crate::listener::Limits::DASHBOARD;
            crate::listener::serve(listener, crate::web::router(site), limits, shutdown()).await
        });
        tokio::spawn(async move {
            for _ in 0..1200 {
                if first.page.read().ok().is_some_and(|p| p.is_some()) {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::findings::{Code, ObjectRef};

    /// A MakeWriter into a shared buffer.
    #[derive(Clone, Default)]
    struct Buf(Arc<std::sync::Mutex<Vec<u8>>>);
    impl std::io::Write for Buf {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_finding_cannot_forge_a_text_log_line() {
        let buf = Buf::default();
        let b2 = buf.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_writer(move || b2.clone())
            .with_ansi(false)
            .fmt_fields(crate::cli::text_fields())
            .finish();
        let report = Report {
            generated_at: Utc::now(),
            karpenter: crate::findings::KarpenterInfo {
                installed: true,
                api_versions: vec![],
            },
            findings: vec![Finding::new(
                Code::PodUnschedulable,
                Severity::Warning,
                ObjectRef::namespaced("Pod", "ml", "web\n2026-01-01T00:00:00Z ERROR forged"),
                "pending \x1b]0;title\x07 for\nERROR forged too",
            )],
        };
        tracing::subscriber::with_default(subscriber, || log_changes(None, &report));
        let text = String::from_utf8(buf.0.lock().unwrap().clone()).unwrap();
        assert_eq!(text.lines().count(), 1, "{text}");
        assert!(
            !text.contains('\u{1b}') && !text.contains('\u{7}'),
            "{text:?}"
        );
        assert!(text.contains("for\\nERROR forged too"), "{text}");
    }
}
