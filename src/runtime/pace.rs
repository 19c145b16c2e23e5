//! When a change's analysis pass runs: at once after a quiet spell, and no more than
//! [`PASSES_PER_SECOND`] on average while changes keep coming. A token bucket: a pass
//! spends a token, tokens come back at [`PASSES_PER_SECOND`] up to [`BURST`]. So a lone
//! change, and the few that follow it closely (a pod's creation, then the scheduler's
//! verdict on it a few milliseconds later), are each analysed within [`GATHER`]; a stream of
//! changes is gathered into four passes a second.

use std::time::{Duration, Instant};

/// How many passes woken by changes run a second, on average, while changes keep coming.
pub const PASSES_PER_SECOND: f64 = 4.0;
/// How many passes may run back to back after a quiet spell.
pub const BURST: f64 = 3.0;
/// How long a change waits for the rest of its burst (one watch event's neighbours, a
/// relist) before its pass, when a pass may run at once.
pub const GATHER: Duration = Duration::from_millis(10);

/// The passes' token bucket.
#[derive(Debug, Clone)]
pub struct Pacer {
    tokens: f64,
    at: Option<Instant>,
}

impl Default for Pacer {
    fn default() -> Self {
        Pacer {
            tokens: BURST,
            at: None,
        }
    }
}

impl Pacer {
    fn refill(&mut self, now: Instant) {
        if let Some(at) = self.at {
            let back = now.saturating_duration_since(at).as_secs_f64() * PASSES_PER_SECOND;
            self.tokens = (self.tokens + back).min(BURST);
        }
        self.at = Some(now);
    }

    /// How long a change that lands `now` waits for its pass.
    pub fn wait(&mut self, now: Instant) -> Duration {
        self.refill(now);
        let short = (1.0 - self.tokens).max(0.0) / PASSES_PER_SECOND;
        Duration::from_secs_f64(short).max(GATHER)
    }

    /// A pass begins `now` (a change's or the clock's).
    pub fn spend(&mut self, now: Instant) {
        self.refill(now);
        self.tokens -= 1.0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn a_few_close_changes_are_analysed_at_once_and_a_stream_four_times_a_second() {
        let mut p = Pacer::default();
        let t0 = Instant::now();
        // A pod created, the scheduler's verdict, a third change: each at once.
        for i in 0..3 {
            let at = t0 + ms(20 * i);
            assert_eq!(p.wait(at), GATHER, "change {i}");
            p.spend(at + GATHER);
        }
        // The fourth, close behind, waits for a token: about a quarter of a second.
        let at = t0 + ms(60);
        let wait = p.wait(at);
        assert!(wait > ms(150) && wait <= ms(250), "{wait:?}");
        // A stream: one pass per quarter second.
        let mut at = at + wait;
        p.spend(at);
        for _ in 0..8 {
            at += ms(10);
            let wait = p.wait(at);
            assert!(wait >= ms(230) && wait <= ms(250), "{wait:?}");
            at += wait;
            p.spend(at);
        }
        // After a quiet second, at once again.
        assert_eq!(p.wait(at + Duration::from_secs(1)), GATHER);
    }
}
