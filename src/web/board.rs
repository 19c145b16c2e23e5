//! The dashboard's own state for one cluster: the page built from each analysis pass
//! (its cache), the version its live updates follow, the model panes are read from, and
//! a client for a pane's full object. Whoever runs the analysis hands it each pass
//! ([`Board::publish`]); the dashboard knows nothing of how passes are made.

use std::sync::{Arc, OnceLock, RwLock};
use std::time::Duration;

use super::{build_page, view, Page};
use crate::analysis::Pass;
use crate::model::Cluster;

/// Whether the cluster's sources are ready (for `/api/v1/clusters`).
pub type Ready = Box<dyn Fn() -> bool + Send + Sync>;

pub struct Board {
    name: String,
    model: Arc<RwLock<Cluster>>,
    client: OnceLock<kube::Client>,
    page: RwLock<Option<Arc<Page>>>,
    version: tokio::sync::watch::Sender<u64>,
    ready: Ready,
}

impl Board {
    /// A board over `model`, with no page until the first [`Board::publish`].
    pub fn new(name: &str, model: Arc<RwLock<Cluster>>, ready: Ready) -> Arc<Self> {
        Arc::new(Board {
            name: name.to_string(),
            model,
            client: OnceLock::new(),
            page: RwLock::new(None),
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

    /// The page of the latest pass, once there is one.
    pub fn page(&self) -> Option<Arc<Page>> {
        self.page.read().ok().and_then(|p| p.clone())
    }

    /// Build the page of a pass and tell the live pages (CPU work: call it off the async
    /// workers, as the analysis does).
    pub fn publish(&self, c: &Cluster, pass: Arc<Pass>, inputs: view::Inputs) {
        let page = Arc::new(build_page(c, pass, inputs));
        if let Ok(mut p) = self.page.write() {
            *p = Some(page);
        }
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
