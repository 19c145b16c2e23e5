//! Watch streams: one reflector per kind that lists (paginated, so consistent), hands the
//! whole list to the model as a reset, then watches from the list's resourceVersion with
//! bookmarks, applying and deleting as events arrive. A 410 Gone (the version expired)
//! relists; any other failure backs off (1 s doubling to 30 s) and resumes. Objects are
//! deserialised straight into the trimmed projections, so nothing untrimmed is kept.

use std::time::Duration;

use futures::TryStreamExt;
use kube::api::{ListParams, WatchParams};
use kube::core::WatchEvent;
use serde::de::DeserializeOwned;
use serde_json::value::RawValue;

use super::live::{Connection, Page, Resource};
use crate::model::event::CoreEvent;
use crate::model::*;

/// A change for the model, per kind: the linkerd-style apply / delete / reset.
#[derive(Debug)]
pub enum Change<T> {
    Apply(T),
    Delete(T),
    /// A full relist: the complete current set.
    Reset(Vec<T>),
}

/// Objects that carry kelp's trimmed metadata.
pub trait Object {
    fn meta(&self) -> &Meta;
}

macro_rules! objects {
    ($($t:ty),*) => { $(impl Object for $t { fn meta(&self) -> &Meta { &self.metadata } })* };
}
objects!(
    NodePool,
    NodeClaim,
    NodeClass,
    Node,
    Pod,
    DaemonSet,
    PodDisruptionBudget,
    CoreEvent
);

/// Why a watch stopped.
#[derive(Debug)]
enum Stop {
    /// The resourceVersion is too old: relist.
    Gone,
    /// Anything else: back off, then resume from the last version.
    Failed(String),
}

async fn list<T: DeserializeOwned>(
    conn: &Connection,
    r: &Resource,
) -> Result<(Vec<T>, String), Stop> {
    let mut items = Vec::new();
    let mut token: Option<String> = None;
    loop {
        let mut lp = ListParams::default().limit(500);
        if let Some(t) = &token {
            lp = lp.continue_token(t);
        }
        let req = kube::core::Request::new(r.path())
            .list(&lp)
            .map_err(|e| Stop::Failed(e.to_string()))?;
        let page: Page<Box<RawValue>> = conn.client.request(req).await.map_err(|e| classify(&e))?;
        items.extend(page.items.iter().filter_map(|raw| decode(r, raw)));
        match page.metadata.continue_ {
            Some(t) if !t.is_empty() => token = Some(t),
            _ => return Ok((items, page.metadata.resource_version.unwrap_or_default())),
        }
    }
}

/// One object into its projection; one kelp cannot read is skipped with a warning rather
/// than stalling its whole kind.
fn decode<T: DeserializeOwned>(r: &Resource, raw: &RawValue) -> Option<T> {
    serde_json::from_str(raw.get())
        .map_err(|e| tracing::warn!(resource = r.plural, error = %e, "skipping an object kelp cannot read"))
        .ok()
}

/// The resourceVersion of an object kelp could not read, so the watch moves past it.
fn version_of(raw: &RawValue) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct Versioned {
        metadata: Meta,
    }
    serde_json::from_str::<Versioned>(raw.get())
        .ok()
        .map(|v| v.metadata.resource_version)
}

fn classify(e: &kube::Error) -> Stop {
    match e {
        kube::Error::Api(s) if s.code == 410 => Stop::Gone,
        other => Stop::Failed(other.to_string()),
    }
}

/// Watch from `version` until the stream ends or fails; returns the last version seen.
async fn watch<T, F>(
    conn: &Connection,
    r: &Resource,
    version: &mut String,
    on: &mut F,
) -> Result<(), Stop>
where
    T: DeserializeOwned + Clone + Object,
    F: FnMut(Change<T>),
{
    let wp = WatchParams::default().timeout(290); // bookmarks are on by default
    let req = kube::core::Request::new(r.path())
        .watch(&wp, version)
        .map_err(|e| Stop::Failed(e.to_string()))?;
    let stream = conn
        .client
        .request_events::<Box<RawValue>>(req)
        .await
        .map_err(|e| classify(&e))?;
    futures::pin_mut!(stream);
    while let Some(event) = stream.try_next().await.map_err(|e| classify(&e))? {
        match event {
            WatchEvent::Added(raw) | WatchEvent::Modified(raw) => match decode::<T>(r, &raw) {
                Some(o) => {
                    *version = o.meta().resource_version.clone();
                    on(Change::Apply(o));
                }
                None => *version = version_of(&raw).unwrap_or_else(|| version.clone()),
            },
            WatchEvent::Deleted(raw) => match decode::<T>(r, &raw) {
                Some(o) => {
                    *version = o.meta().resource_version.clone();
                    on(Change::Delete(o));
                }
                None => *version = version_of(&raw).unwrap_or_else(|| version.clone()),
            },
            WatchEvent::Bookmark(b) => *version = b.metadata.resource_version,
            WatchEvent::Error(s) if s.code == 410 => return Err(Stop::Gone),
            WatchEvent::Error(s) => return Err(Stop::Failed(s.message.clone())),
        }
    }
    Ok(())
}

/// Keep `on` fed with one kind's changes, forever: list, watch, relist on expiry, back
/// off on failure. `listed` is told the outcome of every (re)list: `Ok` after a
/// successful one, the error text after a failed one.
pub async fn reflect<T, F>(
    conn: &Connection,
    r: Resource,
    mut on: F,
    mut listed: impl FnMut(Result<(), &str>),
) where
    T: DeserializeOwned + Clone + Object,
    F: FnMut(Change<T>),
{
    let mut backoff = Duration::from_secs(1);
    'relist: loop {
        let mut version = match list::<T>(conn, &r).await {
            Ok((items, version)) => {
                on(Change::Reset(items));
                listed(Ok(()));
                backoff = Duration::from_secs(1);
                version
            }
            Err(e) => {
                let error = match &e {
                    Stop::Gone => "resource version expired".to_string(),
                    Stop::Failed(s) => s.clone(),
                };
                tracing::warn!(resource = r.plural, %error, "list failed; retrying");
                listed(Err(&error));
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(Duration::from_secs(30));
                continue;
            }
        };
        loop {
            match watch(conn, &r, &mut version, &mut on).await {
                Ok(()) => {
                    // A watch that ends at once (a proxy closing it) must not spin.
                    backoff = Duration::from_secs(1);
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
                Err(Stop::Gone) => {
                    tracing::info!(resource = r.plural, "watch expired (410); relisting");
                    continue 'relist;
                }
                Err(Stop::Failed(e)) => {
                    tracing::warn!(resource = r.plural, error = %e, "watch failed; resuming");
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(Duration::from_secs(30));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unreadable_object_is_skipped_but_its_version_still_counts() {
        let good: Box<RawValue> =
            serde_json::from_str(r#"{"metadata": {"name": "n1", "resourceVersion": "7"}}"#)
                .unwrap();
        let bad: Box<RawValue> = serde_json::from_str(r#"{"metadata": {"name": "n2", "resourceVersion": "8"}, "spec": {"taints": "not a list"}}"#).unwrap();
        let r = super::super::live::NODES;
        assert_eq!(
            decode::<Node>(&r, &good).map(|n| n.metadata.name),
            Some("n1".to_string())
        );
        assert!(decode::<Node>(&r, &bad).is_none());
        assert_eq!(version_of(&bad).as_deref(), Some("8"));
    }
}
