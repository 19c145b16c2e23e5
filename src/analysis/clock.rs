//! The clock an analysis reads, and when its answer next changes. A time threshold asked
//! through [`Clock`] (has `t` come? is `t` within `d` of now?) notes the instant its answer
//! flips; a result computed with it is therefore the same at any later instant before
//! [`Clock::next_change`], unless its inputs change. That is what lets `kelp serve` reuse
//! a node's disruption state from one pass to the next, and still see a threshold pass
//! with no watch event at all. A countdown's words (`4m12s`) change more often than the
//! answer they are part of: their changes are noted apart ([`Clock::next_words_change`]),
//! for a reader to write the words again rather than work the answer out again.

use std::cell::Cell;

use chrono::{DateTime, Duration, Utc};

#[derive(Debug)]
pub struct Clock {
    now: DateTime<Utc>,
    next: Cell<Option<DateTime<Utc>>>,
    /// The first instant a countdown's words read so far change.
    words: Cell<Option<DateTime<Utc>>>,
}

impl Clock {
    pub fn at(now: DateTime<Utc>) -> Self {
        Clock {
            now,
            next: Cell::new(None),
            words: Cell::new(None),
        }
    }

    /// The instant itself: for an answer that is then noted with [`Clock::changes_at`]
    /// or [`Clock::volatile`], or one that does not depend on it.
    pub fn now(&self) -> DateTime<Utc> {
        self.now
    }

    /// Whether `t` has come (now ≥ t).
    pub fn reached(&self, t: DateTime<Utc>) -> bool {
        let yes = self.now >= t;
        if !yes {
            self.changes_at(t);
        }
        yes
    }

    /// Whether `t` is at most `d` before now (now - t ≤ d).
    pub fn within(&self, t: DateTime<Utc>, d: Duration) -> bool {
        let yes = self.now - t <= d;
        if yes {
            self.changes_at(t + d + Duration::nanoseconds(1));
        }
        yes
    }

    /// The answer may change at `t`.
    pub fn changes_at(&self, t: DateTime<Utc>) {
        self.note(&self.next, t);
    }

    /// Keep `t` in `first` if it is after now and before what `first` holds.
    fn note(&self, first: &Cell<Option<DateTime<Utc>>>, t: DateTime<Utc>) {
        if t > self.now && first.get().is_none_or(|n| t < n) {
            first.set(Some(t));
        }
    }

    /// The answer changes with every reading of the clock.
    pub fn volatile(&self) {
        self.next.set(Some(self.now));
    }

    /// How long until `at` (after now), in kelp's words for a duration, noting the
    /// instant those words next change ([`Clock::next_words_change`]): they show two units
    /// (`4m12s`, `2h5m`, `3d4h`), so they change each second below an hour, each minute
    /// below a day, each hour beyond; below a second (milliseconds) at every reading (noted
    /// as a change of the answer).
    pub fn countdown(&self, at: DateTime<Utc>) -> String {
        let left = at - self.now;
        let secs = left.num_seconds();
        if secs <= 0 {
            self.volatile();
        } else {
            let step = match secs {
                1..3_600 => 1,
                3_600..86_400 => 60,
                _ => 3_600,
            };
            // The words stand while the whole seconds left, in steps, stand.
            let t = at - Duration::seconds(secs / step * step) + Duration::nanoseconds(1);
            self.note(&self.words, t);
        }
        super::ago(at, self.now)
    }

    /// The first instant the answers read so far may differ; None if never.
    pub fn next_change(&self) -> Option<DateTime<Utc>> {
        self.next.get()
    }

    /// The first instant the words of a countdown read so far change; None if never.
    pub fn next_words_change(&self) -> Option<DateTime<Utc>> {
        self.words.get()
    }

    /// Start noting afresh (for the next result), returning what was noted.
    pub fn take(&self) -> Option<DateTime<Utc>> {
        self.next.take()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thresholds_note_when_they_flip() {
        let t0 = DateTime::parse_from_rfc3339("2026-11-21T10:00:00Z")
            .unwrap()
            .to_utc();
        let c = Clock::at(t0);
        assert!(c.reached(t0));
        assert_eq!(
            c.next_change(),
            None,
            "a threshold already passed never flips back"
        );
        assert!(!c.reached(t0 + Duration::minutes(5)));
        assert_eq!(c.next_change(), Some(t0 + Duration::minutes(5)));
        assert!(c.within(t0 - Duration::seconds(10), Duration::seconds(20)));
        assert_eq!(
            c.next_change(),
            Some(t0 + Duration::seconds(10) + Duration::nanoseconds(1))
        );
        assert!(!c.within(t0 - Duration::hours(2), Duration::hours(1)));
        assert_eq!(
            c.take(),
            Some(t0 + Duration::seconds(10) + Duration::nanoseconds(1))
        );
        assert_eq!(c.next_change(), None);
        c.volatile();
        assert_eq!(c.next_change(), Some(t0));
    }

    #[test]
    fn a_countdown_notes_when_its_words_change() {
        let t0 = DateTime::parse_from_rfc3339("2026-11-21T10:00:00Z")
            .unwrap()
            .to_utc();
        // The words, when they next change, and when the answer does.
        let words = |now: DateTime<Utc>, at| {
            let c = Clock::at(now);
            (c.countdown(at), c.next_words_change(), c.next_change())
        };
        let ns = Duration::nanoseconds;
        let at = t0 + Duration::seconds(252) + Duration::milliseconds(300);
        let (w, next, answer) = words(t0, at);
        assert_eq!(w, "4m12s");
        assert_eq!(answer, None, "the words alone change");
        let next = next.unwrap();
        assert_eq!(next, t0 + Duration::milliseconds(300) + ns(1));
        // The same words up to that instant, others from it.
        assert_eq!(words(next - ns(1), at).0, "4m12s");
        assert_eq!(words(next, at).0, "4m11s");
        // Hours and minutes: the next minute.
        let at = t0 + Duration::minutes(125) + Duration::seconds(7);
        let (w, next, _) = words(t0, at);
        assert_eq!(w, "2h5m");
        assert_eq!(next, Some(t0 + Duration::seconds(7) + ns(1)));
        assert_eq!(words(next.unwrap(), at).0, "2h4m");
        // Under a second: milliseconds, new at every reading (the answer's change).
        let at = t0 + Duration::milliseconds(400);
        assert_eq!(words(t0, at), ("400ms".to_string(), None, Some(t0)));
    }
}
