//! The runtime: one watched cluster's live state. It keeps the model current (edits are
//! applied by one applier thread, the only writer, which publishes the model's
//! [`Tally`](crate::model::Tally) as each change lands), re-runs the analysis on change
//! (at once after a quiet spell, about four times a second while changes keep coming:
//! [`pace`]) and on a clock tick, folds each pass into the metrics, logs findings as they
//! appear and resolve, and hands each typed pass to whoever subscribed (the dashboard). It
//! knows nothing of HTTP or of the views.
//!
//! Nothing here blocks the async workers: watch tasks hand their edits to the applier
//! thread, analysis passes run on the blocking pool, and readers take the model off the
//! workers with a deadline. [`feed`] starts the sources (watches, a followed dump, the
//! demo), [`prices`] scrapes Karpenter's metrics, [`health`] tracks watch progress and the
//! analysis heartbeat, [`log`] writes the appeared/resolved lines.

pub mod feed;
pub mod health;
pub mod log;
pub mod pace;
pub mod prices;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use chrono::Utc;
use tokio::sync::Notify;

use crate::analysis::{self, Pass};
use crate::findings::Report;
use crate::metrics::{self, LatestReport};
use crate::model::tally::{self, LiveTally};
use crate::model::*;
use crate::source::controller::PriceProblem;
use crate::source::kinds::{self, Change};
use crate::source::live::{Connection, Resource};
use crate::source::status::Stale;

pub use feed::{start, Input};

/// Time-based findings (pending for more than 5 minutes, budgets...) change with the clock.
pub const TICK: Duration = Duration::from_secs(15);

/// What a pass's subscribers get besides the model and the pass: the sources' state.
#[derive(Debug, Clone, Default)]
pub struct Status {
    /// Why prices are missing, when the controller scrape failed.
    pub price_problem: Option<PriceProblem>,
    /// A Karpenter kind kelp may not list (RBAC), with the API server's words.
    pub forbidden: Option<String>,
    /// Kinds whose watches have made no progress for a while.
    pub stale: Option<Stale>,
    /// The clock stands still: a dump's capture time.
    pub fixed_clock: bool,
}

/// Called after every analysis pass, on the blocking pool, with the model still read-locked.
pub type PassHook = Box<dyn Fn(&Cluster, &Arc<Pass>, &Status) + Send + Sync>;

/// Everything the tasks of one cluster share. Fields are private: the sources feed it
/// through [`Shared::update`], readers go through the getters.
pub struct Shared {
    /// The kubeconfig context (or the dump's name): `{cluster}` in the dashboard's URLs.
    name: String,
    /// The connection, for reads made on demand (a pane's full yaml).
    conn: std::sync::OnceLock<Arc<Connection>>,
    price_problem: RwLock<Option<PriceProblem>>,
    forbidden: RwLock<Option<String>>,
    /// Log findings as they appear and resolve (not for the demo).
    log_findings: AtomicBool,
    /// The model. Only the applier thread writes it (see [`Shared::update`]); passes
    /// read it on the blocking pool, the dashboard through [`Shared::model`] with a deadline.
    cluster: Arc<RwLock<Cluster>>,
    /// Edits for the applier thread, and how many of them it has not applied yet.
    edits: std::sync::mpsc::Sender<Edit>,
    queued: Arc<AtomicUsize>,
    /// The model's counts, published by the applier as each change lands.
    tally: LiveTally,
    latest: LatestReport,
    changed: Arc<Notify>,
    /// Watch progress per kind and the analysis heartbeat.
    health: health::Health,
    /// Kinds whose first list has arrived, of `kinds` expected.
    synced: AtomicUsize,
    kinds: AtomicUsize,
    analysed: AtomicBool,
    /// When the last analysis pass finished (monotonic), to tell a stalled one.
    last_pass: std::sync::Mutex<Option<std::time::Instant>>,
    /// A fixed clock for a dump (its capture time); the wall clock when watching.
    clock: RwLock<Option<chrono::DateTime<Utc>>>,
    /// The seed operator's metrics, folded from each analysis pass.
    seed: metrics::seed::SeedMetrics,
    /// Who gets each pass (the dashboard, which builds a page from it while watched).
    hooks: RwLock<Vec<PassHook>>,
    /// An instance-type catalogue given to serve (`--catalog`): it wins over one a dump
    /// carries, on every re-read.
    catalog: std::sync::OnceLock<Arc<crate::model::Catalog>>,
    /// What the previous pass computed, for the next to reuse (passes run one at a time).
    engine: std::sync::Mutex<analysis::incremental::Incremental>,
}

/// A change to the model, applied on the applier thread; returns whether it changed anything.
type Edit = Box<dyn FnOnce(&mut Cluster) -> bool + Send>;

/// The applier: takes the write lock (blocking only itself while a pass reads), applies
/// every queued edit in one go, then, if any of them changed the model (a node's heartbeat
/// does not), publishes its tally and wakes the analysis. Ends when the cluster's state is
/// dropped.
fn spawn_applier(
    name: &str,
    cluster: Arc<RwLock<Cluster>>,
    changed: Arc<Notify>,
    live: LiveTally,
    queued: Arc<AtomicUsize>,
) -> std::sync::mpsc::Sender<Edit> {
    let (tx, rx) = std::sync::mpsc::channel::<Edit>();
    let spawned = std::thread::Builder::new()
        .name(format!("kelp-model-{name}"))
        .spawn(move || {
            while let Ok(first) = rx.recv() {
                let mut c = cluster.write().unwrap_or_else(|e| e.into_inner());
                let mut any = false;
                let mut apply = |edit: Edit| {
                    // One bad edit must not end the applier: the model itself is still whole.
                    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| edit(&mut c))) {
                        Ok(changed) => any |= changed,
                        Err(_) => tracing::error!("a model update panicked; it was skipped"),
                    }
                    queued.fetch_sub(1, Ordering::SeqCst);
                };
                apply(first);
                while let Ok(next) = rx.try_recv() {
                    apply(next);
                }
                if any {
                    tally::publish(&live, &c);
                }
                drop(c);
                if any {
                    changed.notify_one();
                }
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
        let live = tally::live(&Cluster::default());
        let queued = Arc::new(AtomicUsize::new(0));
        let edits = spawn_applier(
            name,
            cluster.clone(),
            changed.clone(),
            live.clone(),
            queued.clone(),
        );
        Arc::new(Shared {
            name: name.to_string(),
            conn: std::sync::OnceLock::new(),
            price_problem: RwLock::new(None),
            forbidden: RwLock::new(None),
            log_findings: AtomicBool::new(true),
            cluster,
            edits,
            queued,
            tally: live,
            latest: Arc::default(),
            changed,
            health: health::Health::default(),
            synced: AtomicUsize::new(0),
            kinds: AtomicUsize::new(usize::MAX),
            analysed: AtomicBool::new(false),
            last_pass: std::sync::Mutex::new(None),
            clock: RwLock::new(None),
            seed: metrics::seed::SeedMetrics::new(series_ttl),
            catalog: std::sync::OnceLock::new(),
            hooks: RwLock::new(Vec::new()),
            engine: Default::default(),
        })
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// The model, for a reader that brings its own deadline (the dashboard).
    pub fn model(&self) -> Arc<RwLock<Cluster>> {
        self.cluster.clone()
    }

    /// The model's counts as of the last change applied (no pass waited for).
    pub fn tally(&self) -> LiveTally {
        self.tally.clone()
    }

    /// The latest report, as `/metrics` reads it.
    pub fn latest(&self) -> LatestReport {
        self.latest.clone()
    }

    pub fn seed(&self) -> &metrics::seed::SeedMetrics {
        &self.seed
    }

    pub fn health(&self) -> &health::Health {
        &self.health
    }

    /// The live connection (none for a dump or the demo).
    pub fn connection(&self) -> Option<&Arc<Connection>> {
        self.conn.get()
    }

    pub fn forbidden(&self) -> Option<String> {
        self.forbidden.read().ok().and_then(|f| f.clone())
    }

    /// Record (or clear) a Karpenter kind kelp may not list; the next pass shows it.
    pub fn set_forbidden(&self, f: Option<String>) {
        if let Ok(mut w) = self.forbidden.write() {
            *w = f;
        }
    }

    /// Record (or clear) why prices are missing; the next pass shows it.
    pub fn set_price_problem(&self, p: Option<PriceProblem>) {
        if let Ok(mut w) = self.price_problem.write() {
            *w = p;
        }
    }

    /// Hand every later pass to `hook`.
    pub fn on_pass(&self, hook: PassHook) {
        if let Ok(mut h) = self.hooks.write() {
            h.push(hook);
        }
    }

    /// The sources' state now, as a pass's subscribers see it.
    pub fn status(&self) -> Status {
        Status {
            price_problem: self.price_problem.read().ok().and_then(|p| p.clone()),
            forbidden: self.forbidden(),
            stale: self.health.stale(),
            fixed_clock: self.clock.read().ok().is_some_and(|c| c.is_some()),
        }
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

    /// One analysis pass (CPU work, blocking): the report, the metrics, and every
    /// subscriber's share. Returns the report for the caller to log and publish.
    /// The analysis reuses what the previous pass computed where nothing it read has
    /// changed ([`analysis::incremental`]).
    pub fn pass(&self, now: chrono::DateTime<Utc>) -> Arc<Report> {
        self.pass_with(now, true)
    }

    /// As [`Shared::pass`], with the analysis computed afresh (tests, benchmarks).
    pub fn pass_full(&self, now: chrono::DateTime<Utc>) -> Arc<Report> {
        self.pass_with(now, false)
    }

    fn pass_with(&self, now: chrono::DateTime<Utc>, reuse: bool) -> Arc<Report> {
        let cluster = self.cluster.read().unwrap_or_else(|e| e.into_inner());
        let pass = if reuse {
            let mut engine = self.engine.lock().unwrap_or_else(|e| e.into_inner());
            let pass = analysis::run_incremental(&cluster, now, &mut engine);
            let s = engine.stats();
            tracing::debug!(
                nodes_reused = s.reused,
                nodes_computed = s.computed,
                pods_reused = s.pods_reused,
                pods_computed = s.pods_computed,
                verdicts_reused = s.verdicts_reused,
                verdicts_computed = s.verdicts_computed,
                "incremental pass"
            );
            Arc::new(pass)
        } else {
            Arc::new(analysis::run(&cluster, now))
        };
        self.seed.update(&pass, &cluster, now);
        let hooks = self.hooks.read().unwrap_or_else(|e| e.into_inner());
        if !hooks.is_empty() {
            let status = self.status();
            for hook in hooks.iter() {
                hook(&cluster, &pass, &status);
            }
        }
        pass.report.clone()
    }

    /// Put an already loaded model in place and run one pass at once, so the report and
    /// every subscriber's share are there (tests, one-off views).
    pub fn load(&self, c: Cluster, now: chrono::DateTime<Utc>) {
        tally::publish(&self.tally, &c);
        *self.cluster.write().unwrap_or_else(|e| e.into_inner()) = c;
        self.kinds.store(0, Ordering::SeqCst);
        let report = self.pass(now);
        if let Ok(mut l) = self.latest.write() {
            *l = Some(report);
        }
    }

    /// Judge instance types from this catalogue from now on, whatever the model carries.
    pub fn set_catalog(&self, catalog: Arc<crate::model::Catalog>) {
        let _ = self.catalog.set(catalog.clone());
        self.update(move |c| c.catalog = Some(catalog));
    }

    /// The catalogue given to serve, if any.
    pub fn given_catalog(&self) -> Option<Arc<crate::model::Catalog>> {
        self.catalog.get().cloned()
    }

    /// Queue an edit of the model for the applier thread; never blocks. The analysis
    /// is woken once it is applied. For an edit that may write any part of the model (a
    /// public field the change stamps cannot see): every cached result is recomputed.
    pub fn update(&self, f: impl FnOnce(&mut Cluster) + Send + 'static) {
        self.update_if(move |c| {
            f(c);
            c.touch_all();
            true
        })
    }

    /// As [`Shared::update`], for an edit that says whether it changed the model: one
    /// that did not (a watch's update of nothing kelp keeps) wakes no analysis.
    pub fn update_if(&self, f: impl FnOnce(&mut Cluster) -> bool + Send + 'static) {
        self.queued.fetch_add(1, Ordering::SeqCst);
        if self.edits.send(Box::new(f)).is_err() {
            self.queued.fetch_sub(1, Ordering::SeqCst);
            tracing::error!("the model's applier thread is gone; an update was lost");
        }
    }

    /// Feed one watched change of kind `r` into the model ([`kinds::feed`], on the applier
    /// thread). An update the model already holds as kept (a node's heartbeat, a
    /// resourceVersion alone) is dropped here, on the watch's own task, when nothing is
    /// queued for the applier and no edit holds the model: it costs its decode and one
    /// comparison, and wakes nothing. (Each object's changes come from its kind's one watch,
    /// in order, so with nothing queued the model holds the watch's previous word on it.)
    pub fn feed<T: kinds::Kind>(&self, r: Resource, change: Change<T>) {
        let change = match change {
            Change::Apply(mut o) => {
                kinds::prepare(&mut o, &r);
                if self.queued.load(Ordering::SeqCst) == 0 {
                    if let Ok(c) = self.cluster.try_read() {
                        if o.unchanged(&c) {
                            return;
                        }
                    }
                }
                Change::Apply(o)
            }
            other => other,
        };
        self.update_if(move |c| kinds::feed(c, &r, change));
    }
}

pub(crate) async fn analyse_forever(shared: Arc<Shared>) {
    let mut first = true;
    // When a change's pass may run.
    let mut pacer = pace::Pacer::default();
    loop {
        shared.health.turn();
        let (changed, waited) = tokio::select! {
            _ = shared.changed.notified() => {
                let wait = pacer.wait(std::time::Instant::now());
                tokio::time::sleep(wait).await;
                (true, wait)
            }
            _ = tokio::time::sleep(TICK) => (false, Duration::ZERO),
        };
        // Wait for every kind's first list, except one kelp may not read at all: then the
        // dashboard says which permission is missing (and /readyz stays unready).
        let forbidden = shared.forbidden().is_some();
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
        let start = std::time::Instant::now();
        pacer.spend(start);
        shared.health.pass_begins();
        let outcome = tokio::task::spawn_blocking(move || s2.pass(now)).await;
        shared.health.pass_ends();
        // Where a change's time to the dashboard goes: `KELP_LOG=kelp=debug` shows it.
        tracing::debug!(
            changed,
            waited_ms = waited.as_secs_f64() * 1e3,
            pass_ms = start.elapsed().as_secs_f64() * 1e3,
            "analysis pass (with the metrics and the dashboard's page)"
        );
        let Ok(report) = outcome else {
            tracing::error!("the analysis failed; keeping the previous report");
            continue;
        };
        let before = shared.latest.read().ok().and_then(|r| r.clone());
        if shared.log_findings.load(Ordering::Relaxed) {
            log::log_changes(before.as_deref(), &report);
        }
        if let Ok(mut l) = shared.latest.write() {
            *l = Some(report);
        }
        shared.analysed.store(true, Ordering::SeqCst);
        if let Ok(mut t) = shared.last_pass.lock() {
            *t = Some(std::time::Instant::now());
        }
    }
}

/// Check liveness now and then, so a stuck pass is logged even when nobody probes.
pub(crate) async fn watchdog(shared: Arc<Shared>) {
    loop {
        tokio::time::sleep(Duration::from_secs(5)).await;
        shared.health.watch();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether the analysis is woken within a short while.
    async fn woken(shared: &Shared) -> bool {
        tokio::time::timeout(Duration::from_millis(300), shared.changed.notified())
            .await
            .is_ok()
    }

    #[tokio::test]
    async fn the_tally_is_published_as_an_edit_lands_with_no_pass() {
        let shared = Shared::new("t", Duration::from_secs(60));
        let (pool, n1) = (
            crate::testing::nodepool("a"),
            crate::testing::node("n1").pool("a"),
        );
        let c = crate::testing::cluster([&pool, &n1]);
        assert_eq!(tally::latest(&shared.tally()).nodes, 0);
        shared.update_if(move |m| {
            *m = c;
            true
        });
        // No analysis runs in this test: only the applier publishes.
        let mut seen = None;
        for _ in 0..200 {
            let t = tally::latest(&shared.tally());
            if t.nodes == 1 {
                seen = Some(t);
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let seen = seen.expect("the tally was never published");
        assert_eq!(seen.pool_nodes, vec![("a".to_string(), 1)]);
        assert!(shared.latest.read().unwrap().is_none(), "a pass ran");
        // An edit that changed nothing publishes nothing.
        let before = shared.tally();
        let before = tally::latest(&before);
        shared.update_if(|_| false);
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(Arc::ptr_eq(&before, &tally::latest(&shared.tally())));
    }

    /// Wait until the applier has applied everything queued.
    async fn applied(shared: &Shared) {
        for _ in 0..500 {
            if shared.queued.load(Ordering::SeqCst) == 0 {
                return;
            }
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        panic!("the applier never caught up");
    }

    #[tokio::test]
    async fn a_heartbeat_is_dropped_on_the_watch_and_wakes_nothing() {
        use crate::testing::node;
        let shared = Shared::new("t", Duration::from_secs(60));
        let n1 = node("n1").pool("a").ready();
        shared.feed::<Node>(kinds::NODES, Change::Apply(n1.decode()));
        assert!(woken(&shared).await, "a new node woke no pass");
        applied(&shared).await;
        // The same node at a new resourceVersion, with a heartbeat kelp does not keep.
        let beat = n1
            .clone()
            .set(&["metadata", "resourceVersion"], serde_json::json!("99"));
        shared.feed::<Node>(kinds::NODES, Change::Apply(beat.decode()));
        assert_eq!(
            shared.queued.load(Ordering::SeqCst),
            0,
            "handed to the applier"
        );
        assert!(!woken(&shared).await, "a heartbeat woke a pass");
        // A real change goes through.
        let relabelled = n1.clone().label("team", "x");
        shared.feed::<Node>(kinds::NODES, Change::Apply(relabelled.decode()));
        assert!(woken(&shared).await, "a label change woke no pass");
        applied(&shared).await;
        let m = shared.model();
        let c = m.read().unwrap();
        assert_eq!(
            c.nodes["n1"]
                .metadata
                .labels
                .get("team")
                .map(String::as_str),
            Some("x")
        );
    }

    #[tokio::test]
    async fn an_update_back_to_what_the_model_holds_is_not_dropped_behind_a_queued_one() {
        use crate::testing::node;
        let shared = Shared::new("t", Duration::from_secs(60));
        let n1 = node("n1").pool("a");
        shared.feed::<Node>(kinds::NODES, Change::Apply(n1.decode()));
        applied(&shared).await;
        // An edit handed to the applier and not applied yet (it may be the watch's own
        // change of this node): an update equal to what the model holds now is no heartbeat
        // then, and must follow it rather than be dropped.
        // (The test reads the model meanwhile, so the applier holds what it is handed.)
        let model = shared.model();
        let reading = model.read().unwrap();
        shared.queued.fetch_add(1, Ordering::SeqCst);
        shared.feed::<Node>(kinds::NODES, Change::Apply(n1.decode()));
        assert_eq!(
            shared.queued.load(Ordering::SeqCst),
            2,
            "dropped behind a queued edit"
        );
        shared.queued.fetch_sub(1, Ordering::SeqCst);
        drop(reading);
        applied(&shared).await;
    }

    #[tokio::test]
    async fn only_an_edit_that_changed_the_model_wakes_the_analysis() {
        let shared = Shared::new("t", Duration::from_secs(60));
        shared.update_if(|_| false);
        shared.update_if(|_| false);
        assert!(!woken(&shared).await, "a heartbeat woke a pass");
        shared.update_if(|_| false);
        shared.update_if(|c| {
            c.captured_at = None;
            true
        });
        assert!(woken(&shared).await, "a change woke no pass");
        shared.update(|_| {});
        assert!(woken(&shared).await, "an unconditional update woke no pass");
    }
}
