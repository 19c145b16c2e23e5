//! Watch streams: one reflector per kind that lists (paginated, so consistent), hands the
//! whole list to the model as a reset, then watches from the list's resourceVersion with
//! bookmarks, applying and deleting as events arrive. A 410 Gone (the version expired)
//! relists; any other failure backs off (250 ms doubling to 2 s, jittered) and resumes.
//! Each watch asks the API server to end it after [`WATCH_SECONDS`], under the watch
//! client's read timeout, so a healthy quiet watch ends cleanly and is resumed, while a
//! silent connection (a blackhole) is dropped by that timeout within seconds. Every
//! list, watch start, event and clean end is reported as progress, so the caller can
//! tell a healthy kind from one that has been failing. Objects are deserialised straight
//! into the trimmed projections, so nothing untrimmed is kept.

use std::time::Duration;

use futures::TryStreamExt;
use kube::api::WatchParams;
use kube::core::WatchEvent;
use serde::de::DeserializeOwned;
use serde_json::value::RawValue;

use super::kinds::Resource;
pub use super::kinds::{Change, Object};
use super::live::{paged, Connection};
use crate::model::*;

/// How long the API server keeps one watch open before ending it cleanly; the watch
/// client's read timeout ([`super::live::WATCH_READ_TIMEOUT`]) is a little longer.
pub const WATCH_SECONDS: u32 = 8;
/// The first wait after a failure; it doubles up to [`MAX_BACKOFF`].
const FIRST_BACKOFF: Duration = Duration::from_millis(250);
/// The longest wait between tries: an API server that is back is seen within it.
pub const MAX_BACKOFF: Duration = Duration::from_secs(2);

/// What a reflector tells its caller besides the changes.
#[derive(Debug)]
pub enum Progress<'a> {
    /// A full (re)list arrived.
    Listed,
    /// The watch is alive: it started, delivered something, or ended cleanly.
    Watching,
    /// A list or watch failed, with the API server's or the client's words.
    Failed(&'a Failure),
}

/// A failed list or watch, with the HTTP status when the API server gave one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    pub status: Option<u16>,
    pub message: String,
}

impl Failure {
    /// Forbidden (403) or unauthorised (401): a permission, not an outage.
    pub fn is_forbidden(&self) -> bool {
        matches!(self.status, Some(401 | 403))
    }

    /// Gone (410): the resourceVersion expired; only a relist resumes.
    pub fn is_gone(&self) -> bool {
        self.status == Some(410)
    }

    /// A failure without an HTTP status (the request never got an answer).
    fn local(message: impl Into<String>) -> Self {
        Failure {
            status: None,
            message: message.into(),
        }
    }

    /// A refusal the API server sent as a `Status` (an HTTP error, or a watch's ERROR event).
    fn from_status(s: &kube::core::Status) -> Self {
        Failure {
            status: Some(s.code),
            message: s.message.clone(),
        }
    }

    /// A failed request: the status code when the API server answered.
    fn from_kube(e: &kube::Error) -> Self {
        match e {
            kube::Error::Api(s) => Failure {
                status: Some(s.code),
                message: e.to_string(),
            },
            kube::Error::BuildRequest(e) => Failure::local(e.to_string()),
            other => Failure::local(other.to_string()),
        }
    }
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

/// Why a watch stopped.
#[derive(Debug)]
enum Stop {
    /// The resourceVersion is too old: relist.
    Gone,
    /// Anything else: back off, then resume from the last version.
    Failed(Failure),
}

impl From<Failure> for Stop {
    fn from(f: Failure) -> Self {
        if f.is_gone() {
            Stop::Gone
        } else {
            Stop::Failed(f)
        }
    }
}

fn classify(e: &kube::Error) -> Stop {
    Failure::from_kube(e).into()
}

/// The whole list (objects kelp cannot read are skipped) and its resourceVersion.
async fn list<T: DeserializeOwned>(
    conn: &Connection,
    r: &Resource,
) -> Result<(Vec<T>, String), Stop> {
    let mut items = Vec::new();
    let version = paged(&conn.client, r, |raw: Box<RawValue>| {
        items.extend(decode(r, &raw))
    })
    .await
    .map_err(|e| classify(&e))?;
    Ok((items, version))
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

/// The next wait: doubled up to [`MAX_BACKOFF`], and jittered by up to a quarter so that
/// every kind does not retry in the same instant.
fn next_backoff(backoff: Duration) -> Duration {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let doubled = (backoff * 2).min(MAX_BACKOFF);
    doubled - doubled.mul_f64(f64::from(nanos % 1000) / 4000.0)
}

/// Watch from `version` until the stream ends or fails; returns the last version seen.
async fn watch<T, F>(
    conn: &Connection,
    r: &Resource,
    version: &mut String,
    on: &mut F,
    progress: &mut impl FnMut(Progress<'_>),
) -> Result<(), Stop>
where
    T: DeserializeOwned + Clone + Object,
    F: FnMut(Change<T>),
{
    let wp = WatchParams::default().timeout(WATCH_SECONDS); // bookmarks are on by default
    let req = kube::core::Request::new(r.path())
        .watch(&wp, version)
        .map_err(|e| Stop::Failed(Failure::local(e.to_string())))?;
    let stream = conn
        .watch_client
        .request_events::<Box<RawValue>>(req)
        .await
        .map_err(|e| classify(&e))?;
    progress(Progress::Watching);
    futures::pin_mut!(stream);
    while let Some(event) = stream.try_next().await.map_err(|e| classify(&e))? {
        progress(Progress::Watching);
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
            WatchEvent::Error(s) => return Err(Failure::from_status(&s).into()),
        }
    }
    Ok(())
}

/// Keep `on` fed with one kind's changes, forever: list, watch, relist on expiry, back
/// off on failure. `progress` hears of every list, every sign of a live watch and every
/// failure (see [`Progress`]).
pub async fn reflect<T, F>(
    conn: &Connection,
    r: Resource,
    mut on: F,
    mut progress: impl FnMut(Progress<'_>),
) where
    T: DeserializeOwned + Clone + Object,
    F: FnMut(Change<T>),
{
    let mut backoff = FIRST_BACKOFF;
    'relist: loop {
        let mut version = match list::<T>(conn, &r).await {
            Ok((items, version)) => {
                on(Change::Reset(items));
                progress(Progress::Listed);
                backoff = FIRST_BACKOFF;
                version
            }
            Err(e) => {
                let failure = match e {
                    Stop::Gone => Failure {
                        status: Some(410),
                        message: "resource version expired".to_string(),
                    },
                    Stop::Failed(f) => f,
                };
                tracing::warn!(resource = r.plural, error = %failure, "list failed; retrying");
                progress(Progress::Failed(&failure));
                tokio::time::sleep(backoff).await;
                backoff = next_backoff(backoff);
                continue;
            }
        };
        loop {
            match watch(conn, &r, &mut version, &mut on, &mut progress).await {
                Ok(()) => {
                    // The API server ended it after WATCH_SECONDS: resume at once. One that
                    // ends at once (a proxy closing it) must not spin.
                    progress(Progress::Watching);
                    backoff = FIRST_BACKOFF;
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                Err(Stop::Gone) => {
                    tracing::info!(resource = r.plural, "watch expired (410); relisting");
                    continue 'relist;
                }
                Err(Stop::Failed(failure)) => {
                    tracing::warn!(resource = r.plural, error = %failure, "watch failed; resuming");
                    progress(Progress::Failed(&failure));
                    tokio::time::sleep(backoff).await;
                    backoff = next_backoff(backoff);
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

    /// A server that answers a watch's headers and then goes silent, as a blackholed
    /// connection does: the watch fails by the watch client's read timeout instead of
    /// hanging, and every request names kelp in its User-Agent.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_silent_watch_is_dropped_and_requests_name_kelp() {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let (head_tx, mut head_rx) = tokio::sync::mpsc::unbounded_channel::<String>();
        tokio::spawn(async move {
            while let Ok((mut s, _)) = listener.accept().await {
                let tx = head_tx.clone();
                tokio::spawn(async move {
                    let mut buf = vec![0u8; 4096];
                    let n = s.read(&mut buf).await.unwrap_or(0);
                    let _ = tx.send(String::from_utf8_lossy(&buf[..n]).into_owned());
                    let _ = s
                        .write_all(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n")
                        .await;
                    // Silence, with the connection held open.
                    tokio::time::sleep(Duration::from_secs(600)).await;
                    drop(s);
                });
            }
        });
        let conn = super::super::live::tests::connect_to_port(port).await;
        let r = super::super::live::NODES;
        let mut version = "1".to_string();
        let mut progress = Vec::new();
        let outcome = tokio::time::timeout(
            Duration::from_secs(60),
            watch::<Node, _>(&conn, &r, &mut version, &mut |_| {}, &mut |p| {
                progress.push(format!("{p:?}"))
            }),
        )
        .await
        .expect("a silent watch must fail by the read timeout, not hang");
        assert!(matches!(outcome, Err(Stop::Failed(_))), "{outcome:?}");
        assert_eq!(progress, ["Watching"], "the headers arrived, then nothing");
        let head = head_rx.recv().await.unwrap();
        assert!(head.contains("timeoutSeconds=8"), "{head}");
        let agent = head
            .lines()
            .find(|l| l.to_ascii_lowercase().starts_with("user-agent:"))
            .unwrap_or_default();
        assert!(agent.contains(super::super::live::USER_AGENT), "{head}");
    }

    #[test]
    fn failures_are_told_apart_by_status_code() {
        let api = |code: u16, message: &str| {
            kube::Error::Api(
                kube::core::Status::failure(message, "Reason")
                    .with_code(code)
                    .boxed(),
            )
        };
        assert!(matches!(classify(&api(410, "too old")), Stop::Gone));
        // The words do not matter, the code does.
        let Stop::Failed(f) = classify(&api(403, "no")) else {
            panic!("a 403 is not a relist")
        };
        assert!(f.is_forbidden() && !f.is_gone());
        let Stop::Failed(f) = classify(&api(500, "forbidden")) else {
            panic!("a 500 is not a relist")
        };
        assert!(!f.is_forbidden());
        assert_eq!(f.status, Some(500));
        let watch_error = kube::core::Status::failure("expired", "Expired").with_code(410);
        assert!(matches!(
            Stop::from(Failure::from_status(&watch_error)),
            Stop::Gone
        ));
        let local = Failure::from_kube(&kube::Error::LinesCodecMaxLineLengthExceeded);
        assert_eq!(local.status, None);
    }

    #[test]
    fn backoff_doubles_to_a_short_cap_with_jitter() {
        let mut b = FIRST_BACKOFF;
        let mut seen = vec![];
        for _ in 0..8 {
            b = next_backoff(b);
            seen.push(b);
        }
        assert!(seen
            .iter()
            .all(|b| *b <= MAX_BACKOFF && *b >= MAX_BACKOFF / 16));
        assert!(*seen.last().unwrap() >= MAX_BACKOFF * 3 / 4, "{seen:?}");
        // A healthy quiet watch ends (server side) before the client's read timeout fires.
        assert!(
            Duration::from_secs(u64::from(WATCH_SECONDS)) + Duration::from_secs(1)
                < super::super::live::WATCH_READ_TIMEOUT
        );
    }
}
