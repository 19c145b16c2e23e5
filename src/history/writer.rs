//! The history's writer: one thread that owns the store. A pass hands it its rows over a
//! bounded channel and never waits: when the writer is behind, the batch is dropped and
//! counted (and said once a minute), never queued without bound. The thread writes each
//! batch in one transaction, logs each row as one structured line (so a fleet's log stack
//! holds its history too), and prunes by age and size every ten minutes, off the passes.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, SyncSender, TrySendError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use chrono::Utc;

use super::record::Record;
use super::recorder::Recorder;
use super::store::{MovedAside, Store, StoreError};

/// Where and how long to keep it (`kelp serve --state-dir`, `--history-retention`,
/// `--history-max-size`, `--history-strict`).
#[derive(Debug, Clone)]
pub struct Settings {
    pub dir: PathBuf,
    pub retention: chrono::Duration,
    pub max_bytes: u64,
    /// Fail rather than move an unreadable file aside and start afresh.
    pub strict: bool,
    /// The cluster's name, on every log line.
    pub cluster: String,
}

/// Batches waiting for the writer, at most.
const QUEUE: usize = 64;
/// How often old rows are pruned.
const PRUNE_EVERY: Duration = Duration::from_secs(600);

/// What serve keeps of the writer: the way in, and what went wrong.
pub struct History {
    tx: SyncSender<Vec<Record>>,
    shared: Arc<Shared>,
}

#[derive(Default)]
struct Shared {
    dropped: AtomicU64,
    written: AtomicU64,
    /// The last write's failure, while writes fail.
    problem: Mutex<Option<String>>,
    last_drop_said: Mutex<Option<Instant>>,
}

impl History {
    /// Open the store (taking its lock), carry on from what it holds, and start the writer.
    /// Returns the recorder the passes feed, and what was moved aside, if anything.
    pub fn start(s: Settings) -> Result<(History, Recorder, Option<MovedAside>), StoreError> {
        let (store, moved) = Store::open(&s.dir, s.strict)?;
        let (h, recorder) = Self::with_store(store, s)?;
        Ok((h, recorder, moved))
    }

    fn with_store(store: Store, s: Settings) -> Result<(History, Recorder), StoreError> {
        let recorder = Recorder::resume(store.open_rows()?, store.live_claims()?);
        let (tx, rx) = std::sync::mpsc::sync_channel(QUEUE);
        let shared = Arc::new(Shared::default());
        let sh = shared.clone();
        std::thread::Builder::new()
            .name("kelp-history".into())
            .spawn(move || write_loop(store, rx, &sh, &s))
            .map_err(|source| StoreError::Io {
                path: PathBuf::from("kelp-history thread"),
                source,
            })?;
        Ok((History { tx, shared }, recorder))
    }

    /// A history that cannot be kept at all (its directory could not be opened): it writes
    /// nothing and says `why` for as long as it lives.
    pub fn unavailable(why: String) -> History {
        let (tx, _) = std::sync::mpsc::sync_channel(1);
        let shared = Arc::new(Shared::default());
        *shared.problem.lock().unwrap_or_else(|e| e.into_inner()) = Some(why);
        History { tx, shared }
    }

    /// Hand a pass's rows to the writer without waiting.
    pub fn record(&self, batch: Vec<Record>) {
        if batch.is_empty() {
            return;
        }
        match self.tx.try_send(batch) {
            Ok(()) => {}
            Err(TrySendError::Full(b)) => {
                let n = self
                    .shared
                    .dropped
                    .fetch_add(b.len() as u64, Ordering::Relaxed);
                let mut said = self
                    .shared
                    .last_drop_said
                    .lock()
                    .unwrap_or_else(|e| e.into_inner());
                if said.is_none_or(|t| t.elapsed() > Duration::from_secs(60)) {
                    *said = Some(Instant::now());
                    tracing::warn!(
                        dropped = n + b.len() as u64,
                        "history: the writer is behind; rows dropped so far"
                    );
                }
            }
            Err(TrySendError::Disconnected(b)) => {
                self.shared
                    .dropped
                    .fetch_add(b.len() as u64, Ordering::Relaxed);
                if self.problem().is_none() {
                    self.set_problem("the history writer has stopped".into());
                }
            }
        }
    }

    /// Why history is not being kept right now, if it is not.
    pub fn problem(&self) -> Option<String> {
        self.shared
            .problem
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    fn set_problem(&self, why: String) {
        *self
            .shared
            .problem
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = Some(why);
    }

    /// Rows written and dropped so far.
    pub fn counts(&self) -> (u64, u64) {
        (
            self.shared.written.load(Ordering::Relaxed),
            self.shared.dropped.load(Ordering::Relaxed),
        )
    }
}

fn write_loop(mut store: Store, rx: Receiver<Vec<Record>>, sh: &Shared, s: &Settings) {
    let mut last_prune: Option<Instant> = None;
    loop {
        if last_prune.is_none_or(|t| t.elapsed() >= PRUNE_EVERY) {
            last_prune = Some(Instant::now());
            match store.prune(Utc::now() - s.retention, s.max_bytes) {
                Ok(0) => {}
                Ok(n) => tracing::info!(rows = n, "history: pruned"),
                Err(e) => tracing::warn!("history: pruning failed: {e}"),
            }
        }
        let first = match rx.recv_timeout(PRUNE_EVERY) {
            Ok(b) => b,
            Err(RecvTimeoutError::Timeout) => continue,
            Err(RecvTimeoutError::Disconnected) => return,
        };
        let mut batch = first;
        while let Ok(more) = rx.try_recv() {
            batch.extend(more);
        }
        match store.write(&batch) {
            Ok(()) => {
                sh.written.fetch_add(batch.len() as u64, Ordering::Relaxed);
                let mut p = sh.problem.lock().unwrap_or_else(|e| e.into_inner());
                if p.take().is_some() {
                    tracing::info!("history: writing again");
                }
                drop(p);
                for r in &batch {
                    log_row(&s.cluster, r);
                }
            }
            Err(e) => {
                let why = e.to_string();
                let mut p = sh.problem.lock().unwrap_or_else(|e| e.into_inner());
                if p.as_deref() != Some(why.as_str()) {
                    tracing::error!("history: {why}; {} rows not kept", batch.len());
                }
                *p = Some(why);
                sh.dropped.fetch_add(batch.len() as u64, Ordering::Relaxed);
            }
        }
    }
}

/// One structured line per row (target `kelp::history`).
fn log_row(cluster: &str, r: &Record) {
    let details = serde_json::to_string(&r.details).unwrap_or_default();
    tracing::info!(
        target: "kelp::history",
        cluster,
        at = %r.at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        until = %r.until.map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)).unwrap_or_default(),
        kind = r.kind.as_str(),
        what = r.what.as_str(),
        object_kind = r.object.kind.as_str(),
        namespace = r.object.namespace.as_deref().unwrap_or(""),
        name = r.object.name.as_str(),
        node = r.node.as_deref().unwrap_or(""),
        nodeclaim = r.nodeclaim.as_deref().unwrap_or(""),
        nodepool = r.nodepool.as_deref().unwrap_or(""),
        details = details.as_str(),
        message = r.message.as_str(),
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::{Kind, Subject};

    fn rows(n: usize, tag: &str) -> Vec<Record> {
        (0..n)
            .map(|i| {
                let mut r = Record::new(
                    format!("{tag}/{i}"),
                    Utc::now(),
                    Kind::Event,
                    "Evicted",
                    Subject {
                        kind: "Pod".into(),
                        namespace: Some("ns".into()),
                        name: format!("p{i}"),
                    },
                );
                r.message = "x".repeat(2000);
                r
            })
            .collect()
    }

    fn settings(dir: &std::path::Path) -> Settings {
        Settings {
            dir: dir.to_path_buf(),
            retention: chrono::Duration::days(14),
            max_bytes: u64::MAX,
            strict: false,
            cluster: "test".into(),
        }
    }

    fn until(what: &str, mut f: impl FnMut() -> bool) {
        let deadline = Instant::now() + Duration::from_secs(20);
        while !f() {
            assert!(Instant::now() < deadline, "never: {what}");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    #[test]
    fn a_full_disk_is_said_and_counted_and_writing_resumes_when_there_is_room() {
        let dir = tempfile::tempdir().unwrap();
        let (store, _) = Store::open(dir.path(), false).unwrap();
        // SQLite's own cap on the file's pages: past it every write fails as on a full disk.
        store.cap_pages(40);
        let (h, _) = History::with_store(store, settings(dir.path())).unwrap();
        h.record(rows(10, "a"));
        until("the first rows written", || h.counts().0 == 10);
        assert!(h.problem().is_none());
        h.record(rows(400, "b"));
        until("the full disk said", || h.problem().is_some());
        assert!(h.problem().unwrap().contains("full"), "{:?}", h.problem());
        assert_eq!(h.counts(), (10, 400));
        // The passes never wait on it: a burst past the queue is dropped, not queued.
        for i in 0..(QUEUE * 4) {
            h.record(rows(1, &format!("c{i}")));
        }
        assert!(h.counts().1 >= 400);
    }
}
