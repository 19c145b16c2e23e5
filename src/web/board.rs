//! The dashboard's own state for one cluster: the latest analysis pass and the page built
//! from it (its cache), the version its live updates follow, the model panes are read
//! from, and a client for a pane's full object. Whoever runs the analysis hands it each
//! pass ([`Board::publish`]); the dashboard knows nothing of how passes are made.
//!
//! A page is built only for someone to see it. While the dashboard is watched (a live
//! page is open, or a page or an API answer built from it was asked for within
//! [`WATCHED_FOR`]; the findings and `why` answers read the pass alone), each pass's page
//! is built with the pass, from the model the pass read. Otherwise a pass only replaces
//! the latest one, and the first request that wants its page builds it from the model as
//! it is then (which has moved on only by the edits the next pass is already waiting
//! for); later passes build theirs again while the dashboard stays watched. A `kelp
//! serve` that only feeds Prometheus spends nothing on pages.

use std::sync::{Arc, Mutex, OnceLock, RwLock};
use std::time::{Duration, Instant};

use super::{build_page, Page};
use crate::analysis::Pass;
use crate::model::tally::{self, LiveTally, Tally};
use crate::model::Cluster;
use crate::source::controller::PriceProblem;
use crate::view;

/// Whether the cluster's sources are ready (for `/api/v1/clusters`).
pub type Ready = Box<dyn Fn() -> bool + Send + Sync>;

/// How long after a page (or an API answer built from it) was last asked for the
/// dashboard counts as watched.
pub const WATCHED_FOR: Duration = Duration::from_secs(120);

pub struct Board {
    name: String,
    model: Arc<RwLock<Cluster>>,
    client: OnceLock<kube::Client>,
    /// The model's counts as each change lands (serve): the overview API answers them
    /// between passes.
    tally: OnceLock<LiveTally>,
    /// Where `kelp serve --state-dir` keeps this cluster's history: the pane's History tab.
    history: OnceLock<std::path::PathBuf>,
    latest: RwLock<Option<Published>>,
    /// One page is built at a time: requests that find none wait for the one building.
    building: tokio::sync::Mutex<()>,
    /// When a page was last asked for.
    asked: Mutex<Option<Instant>>,
    version: tokio::sync::watch::Sender<u64>,
    ready: Ready,
}

/// The latest pass, what its page is built with beyond the model, and the page once built.
#[derive(Clone)]
struct Published {
    pass: Arc<Pass>,
    price_problem: Option<PriceProblem>,
    forbidden: Option<String>,
    stale: Option<crate::source::status::Stale>,
    fixed_clock: bool,
    page: Option<Arc<Page>>,
}

impl Published {
    fn inputs<'a>(&self, cluster_name: &'a str) -> view::Inputs<'a> {
        view::Inputs {
            cluster_name,
            price_problem: self.price_problem.clone(),
            forbidden: self.forbidden.clone(),
            stale: self.stale.clone(),
            fixed_clock: self.fixed_clock,
        }
    }
}

impl Board {
    /// A board over `model`, with no page until the first [`Board::publish`].
    pub fn new(name: &str, model: Arc<RwLock<Cluster>>, ready: Ready) -> Arc<Self> {
        Arc::new(Board {
            name: name.to_string(),
            model,
            client: OnceLock::new(),
            tally: OnceLock::new(),
            history: OnceLock::new(),
            latest: RwLock::new(None),
            building: tokio::sync::Mutex::new(()),
            asked: Mutex::new(None),
            version: tokio::sync::watch::channel(0).0,
            ready,
        })
    }

    /// The cluster's name in URLs.
    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn ready(&self) -> bool {
        (self.ready)()
    }

    /// The API client a pane fetches an object's full YAML with (live clusters only).
    pub fn set_client(&self, client: kube::Client) {
        let _ = self.client.set(client);
    }

    pub(super) fn client(&self) -> Option<&kube::Client> {
        self.client.get()
    }

    /// Answer the model's counts from `live`, published as each change lands, rather than
    /// the latest pass's.
    pub fn set_tally(&self, live: LiveTally) {
        let _ = self.tally.set(live);
    }

    /// The model's counts now, when they are published.
    pub(super) fn tally(&self) -> Option<Arc<Tally>> {
        self.tally.get().map(tally::latest)
    }

    /// Show this cluster's history (kept in `dir`) in the pane.
    pub fn set_history_dir(&self, dir: std::path::PathBuf) {
        let _ = self.history.set(dir);
    }

    pub(super) fn history_dir(&self) -> Option<&std::path::Path> {
        self.history.get().map(|p| p.as_path())
    }

    /// The latest pass, once there is one (no page is built for it).
    pub fn pass(&self) -> Option<Arc<Pass>> {
        let latest = self.latest.read().unwrap_or_else(|e| e.into_inner());
        latest.as_ref().map(|l| l.pass.clone())
    }

    /// The page of the latest pass, once there is one: built now (off the async workers)
    /// if the pass came while nobody watched. None before the first pass, or when the
    /// model stays locked past `deadline`. Counts as a look ([`WATCHED_FOR`]).
    pub async fn page(&self, deadline: Duration) -> Option<Arc<Page>> {
        self.look();
        if let Some(page) = self.built() {
            return page;
        }
        let _one = self.building.lock().await;
        let published = {
            let latest = self.latest.read().unwrap_or_else(|e| e.into_inner());
            let l = latest.as_ref()?;
            if let Some(page) = &l.page {
                return Some(page.clone());
            }
            l.clone()
        };
        let name = self.name.clone();
        let page = self
            .read(deadline, move |c| {
                let inputs = published.inputs(&name);
                Arc::new(build_page(c, published.pass.clone(), inputs))
            })
            .await?;
        let mut latest = self.latest.write().unwrap_or_else(|e| e.into_inner());
        if let Some(l) = latest.as_mut().filter(|l| Arc::ptr_eq(&l.pass, &page.pass)) {
            l.page = Some(page.clone());
        }
        Some(page)
    }

    /// The latest page if it is built: Some(None) before the first pass.
    fn built(&self) -> Option<Option<Arc<Page>>> {
        let latest = self.latest.read().unwrap_or_else(|e| e.into_inner());
        match latest.as_ref() {
            None => Some(None),
            Some(l) => l.page.clone().map(Some),
        }
    }

    /// Whether the latest pass's page is built.
    pub fn has_page(&self) -> bool {
        matches!(self.built(), Some(Some(_)))
    }

    /// Someone asked for a page (or what is built from it) now.
    pub fn look(&self) {
        *self.asked.lock().unwrap_or_else(|e| e.into_inner()) = Some(Instant::now());
    }

    /// Whether anyone watches: a live page is open, or a page was asked for within
    /// [`WATCHED_FOR`].
    pub fn watched(&self) -> bool {
        self.version.receiver_count() > 0
            || self
                .asked
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .is_some_and(|t| t.elapsed() < WATCHED_FOR)
    }

    /// Take a pass, and build its page now if anyone watches (CPU work: call it off the
    /// async workers, as the analysis does); then tell the live pages.
    pub fn publish(&self, c: &Cluster, pass: Arc<Pass>, inputs: view::Inputs) {
        let mut published = Published {
            pass,
            price_problem: inputs.price_problem,
            forbidden: inputs.forbidden,
            stale: inputs.stale,
            fixed_clock: inputs.fixed_clock,
            page: None,
        };
        if self.watched() {
            let inputs = published.inputs(inputs.cluster_name);
            published.page = Some(Arc::new(build_page(c, published.pass.clone(), inputs)));
        }
        // The previous pass and page are let go outside the lock.
        let previous = self
            .latest
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .replace(published);
        drop(previous);
        self.touch();
    }

    /// Tell the live pages something changed.
    pub fn touch(&self) {
        self.version.send_modify(|v| *v += 1);
    }

    pub(super) fn subscribe(&self) -> tokio::sync::watch::Receiver<u64> {
        self.version.subscribe()
    }

    /// Run `f` on the model off the async workers; None when the model stays locked past
    /// `deadline` (a long pass with edits queued behind it) or `f` panicked.
    pub(super) async fn read<R: Send + 'static>(
        &self,
        deadline: Duration,
        f: impl FnOnce(&Cluster) -> R + Send + 'static,
    ) -> Option<R> {
        let model = self.model.clone();
        let task = tokio::task::spawn_blocking(move || {
            f(&model.read().unwrap_or_else(|e| e.into_inner()))
        });
        tokio::time::timeout(deadline, task).await.ok()?.ok()
    }
}
