//! The runtime's health: each watched kind's progress (readiness and the dashboard's "stale
//! since") and the analysis watchdog (liveness). Time is monotonic; the wall-clock time a
//! kind started failing is kept only to be shown.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};

use crate::source::status::{Stale, StaleKind};
use crate::source::watch::Progress;

/// A kind with no successful list or watch progress for this long makes serve unready
/// and its page stale. Healthy watches report progress at least every
/// [`crate::source::watch::WATCH_SECONDS`].
pub const STALE_AFTER: Duration = Duration::from_secs(30);

/// An analysis pass running longer than this, or an analysis loop silent for this long
/// past its tick, fails `/livez` (the largest benchmarked pass takes about 3 s).
pub const LIVENESS_DEADLINE: Duration = Duration::from_secs(120);

#[derive(Debug, Default)]
struct KindState {
    last_progress: Option<Instant>,
    /// When failures began (monotonic, wall clock) and the latest error.
    failing: Option<(Instant, DateTime<Utc>, String)>,
}

/// Per-kind progress and the analysis heartbeat, shared by the watch tasks, the analysis
/// loop and the health endpoints. Every lock here is held for a few instructions.
#[derive(Debug)]
pub struct Health {
    kinds: Mutex<BTreeMap<&'static str, KindState>>,
    /// When the running pass began, if one is running.
    pass_started: Mutex<Option<Instant>>,
    /// The analysis loop's last turn.
    loop_turn: Mutex<Instant>,
    /// Set once the watchdog has logged a failure, so it logs once per episode.
    tripped: std::sync::atomic::AtomicBool,
}

impl Default for Health {
    fn default() -> Self {
        Health {
            kinds: Mutex::default(),
            pass_started: Mutex::default(),
            loop_turn: Mutex::new(Instant::now()),
            tripped: Default::default(),
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Health {
    /// A reflector's report for `kind`.
    pub fn progress(&self, kind: &'static str, p: &Progress<'_>) {
        self.progress_at(kind, p, Instant::now(), Utc::now());
    }

    fn progress_at(&self, kind: &'static str, p: &Progress<'_>, at: Instant, wall: DateTime<Utc>) {
        let mut kinds = lock(&self.kinds);
        let state = kinds.entry(kind).or_default();
        match p {
            Progress::Listed | Progress::Watching => {
                if let Some((since, _, _)) = state.failing.take() {
                    tracing::info!(kind, after = ?at.saturating_duration_since(since), "watch recovered");
                }
                state.last_progress = Some(at);
            }
            Progress::Failed(f) => match &mut state.failing {
                Some((_, _, error)) => *error = f.message.clone(),
                None => state.failing = Some((at, wall, f.message.clone())),
            },
        }
    }

    /// The kinds with no progress for [`STALE_AFTER`], or None when all are current. A
    /// kind that never listed is not stale here: readiness waits for its first list.
    pub fn stale(&self) -> Option<Stale> {
        self.stale_at(Instant::now(), Utc::now())
    }

    fn stale_at(&self, now: Instant, wall: DateTime<Utc>) -> Option<Stale> {
        let kinds = lock(&self.kinds);
        let mut since: Option<DateTime<Utc>> = None;
        let mut out = Vec::new();
        for (kind, s) in kinds.iter() {
            let Some(last) = s.last_progress else {
                continue;
            };
            let quiet = now.saturating_duration_since(last);
            if quiet < STALE_AFTER {
                continue;
            }
            let last_wall = wall - chrono::Duration::from_std(quiet).unwrap_or_default();
            let began = s
                .failing
                .as_ref()
                .map_or(last_wall, |(_, w, _)| (*w).min(last_wall));
            since = Some(since.map_or(began, |s| s.min(began)));
            out.push(StaleKind {
                kind: kind.to_string(),
                error: s.failing.as_ref().map(|(_, _, e)| e.clone()),
            });
        }
        since.map(|since| Stale { since, kinds: out })
    }

    /// The analysis loop turned (it waits at most a tick between turns).
    pub fn turn(&self) {
        *lock(&self.loop_turn) = Instant::now();
    }

    pub fn pass_begins(&self) {
        *lock(&self.pass_started) = Some(Instant::now());
    }

    pub fn pass_ends(&self) {
        *lock(&self.pass_started) = None;
        self.turn();
    }

    /// Alive: no pass has run past [`LIVENESS_DEADLINE`] and the loop keeps turning.
    pub fn live(&self) -> Result<(), String> {
        self.live_at(Instant::now())
    }

    fn live_at(&self, now: Instant) -> Result<(), String> {
        if let Some(started) = *lock(&self.pass_started) {
            let running = now.saturating_duration_since(started);
            if running > LIVENESS_DEADLINE {
                return Err(format!(
                    "an analysis pass has been running for {}s (deadline {}s)",
                    running.as_secs(),
                    LIVENESS_DEADLINE.as_secs()
                ));
            }
            return Ok(());
        }
        let quiet = now.saturating_duration_since(*lock(&self.loop_turn));
        if quiet > LIVENESS_DEADLINE + super::TICK * 2 {
            return Err(format!(
                "the analysis loop has not turned for {}s",
                quiet.as_secs()
            ));
        }
        Ok(())
    }

    /// Log once when liveness fails and once when it recovers.
    pub fn watch(&self) {
        let state = self.live();
        let was = self
            .tripped
            .swap(state.is_err(), std::sync::atomic::Ordering::SeqCst);
        match (was, state) {
            (false, Err(e)) => tracing::error!(error = %e, "watchdog: /livez now fails"),
            (true, Ok(())) => tracing::info!("watchdog: the analysis is moving again; /livez ok"),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::watch::Failure;

    fn failure(m: &str) -> Failure {
        Failure {
            status: None,
            message: m.into(),
        }
    }

    #[test]
    fn a_kind_is_stale_after_its_progress_stops_and_fresh_again_on_progress() {
        let h = Health::default();
        let t0 = Instant::now();
        let w0 = Utc::now();
        h.progress_at("Pod", &Progress::Listed, t0, w0);
        h.progress_at("Node", &Progress::Watching, t0, w0);
        assert_eq!(h.stale_at(t0 + Duration::from_secs(20), w0), None);
        // Pods fail from t0+5s; nodes keep watching.
        let f = failure("connection refused");
        h.progress_at(
            "Pod",
            &Progress::Failed(&f),
            t0 + Duration::from_secs(5),
            w0,
        );
        h.progress_at(
            "Node",
            &Progress::Watching,
            t0 + Duration::from_secs(25),
            w0,
        );
        let at = t0 + STALE_AFTER + Duration::from_secs(1);
        let stale = h.stale_at(at, w0 + chrono::Duration::seconds(31)).unwrap();
        assert_eq!(stale.kinds.len(), 1);
        assert_eq!(stale.kinds[0].kind, "Pod");
        assert_eq!(stale.kinds[0].error.as_deref(), Some("connection refused"));
        assert!(
            stale.line().contains("Pod: connection refused"),
            "{}",
            stale.line()
        );
        // The pod watch resumes.
        h.progress_at("Pod", &Progress::Watching, at, w0);
        assert_eq!(h.stale_at(at + Duration::from_secs(1), w0), None);
    }

    #[test]
    fn a_kind_that_never_listed_is_left_to_readiness() {
        let h = Health::default();
        let t0 = Instant::now();
        h.progress_at(
            "Pod",
            &Progress::Failed(&failure("forbidden")),
            t0,
            Utc::now(),
        );
        assert_eq!(h.stale_at(t0 + Duration::from_secs(600), Utc::now()), None);
    }

    #[test]
    fn liveness_fails_for_a_pass_past_its_deadline_and_a_silent_loop() {
        let h = Health::default();
        let t0 = Instant::now();
        assert!(h.live_at(t0).is_ok());
        h.pass_begins();
        assert!(h.live_at(t0 + Duration::from_secs(10)).is_ok());
        let late = h.live_at(Instant::now() + LIVENESS_DEADLINE + Duration::from_secs(1));
        assert!(late.unwrap_err().contains("analysis pass"));
        h.pass_ends();
        assert!(h.live_at(Instant::now() + Duration::from_secs(30)).is_ok());
        let silent = h.live_at(Instant::now() + LIVENESS_DEADLINE + super::super::TICK * 3);
        assert!(silent.unwrap_err().contains("not turned"));
    }
}
