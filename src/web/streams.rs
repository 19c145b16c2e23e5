//! The live-update streams' own limits, apart from the listener's connection cap: a stream
//! holds its connection for as long as a page is open, so streams alone must never fill
//! the connections ordinary requests need.
//!
//! - **A cap in all, and one per client** (peer address): a stream past either is refused
//!   at once with 503, `Retry-After` and `Connection: close`, so its connection is given
//!   back as soon as the answer is written. The page then falls back to reconnecting
//!   later (see `static/kelp.js`).
//! - **A lifetime**: a stream ends after [`StreamLimits::lifetime`], and the browser's
//!   `EventSource` opens a new one (after the `retry:` the stream sent), which passes the
//!   caps again. A stream nobody reads is not kept past it either.
//!
//! A slot is a [`Permit`] held by the stream itself: it is given back when the stream is
//! dropped, however its connection ended.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// What the live-update streams may take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StreamLimits {
    /// Streams open at once, from every client.
    pub total: usize,
    /// Streams open at once from one peer address.
    pub per_client: usize,
    /// How long one stream lasts before the browser is asked to open another.
    pub lifetime: Duration,
    /// What a refused client is told to wait (`Retry-After`).
    pub retry_after: Duration,
}

impl StreamLimits {
    /// The dashboard's: a quarter of its 512 connections at most, 32 tabs per client
    /// address (everyone behind one proxy or `kubectl port-forward` shares an address),
    /// streams renewed every 10 minutes.
    pub const DASHBOARD: StreamLimits = StreamLimits {
        total: 128,
        per_client: 32,
        lifetime: Duration::from_secs(600),
        retry_after: Duration::from_secs(15),
    };
}

impl Default for StreamLimits {
    fn default() -> Self {
        StreamLimits::DASHBOARD
    }
}

/// Why a stream was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Full {
    /// [`StreamLimits::total`] streams are open.
    Total,
    /// [`StreamLimits::per_client`] streams are open from this address.
    Client,
}

#[derive(Debug, Default)]
struct Open {
    total: usize,
    by_peer: HashMap<Option<IpAddr>, usize>,
    /// When a refusal was last logged.
    warned: Option<Instant>,
}

/// The open streams, counted in all and per peer.
#[derive(Debug, Clone, Default)]
pub struct Streams {
    limits: StreamLimits,
    open: Arc<Mutex<Open>>,
}

impl Streams {
    pub fn new(limits: StreamLimits) -> Self {
        Streams {
            limits,
            open: Arc::default(),
        }
    }

    pub fn limits(&self) -> StreamLimits {
        self.limits
    }

    /// A slot for a stream from `peer` (None: a caller with no address, such as a test
    /// calling the router, counted as one client), or why there is none.
    pub fn admit(&self, peer: Option<IpAddr>) -> Result<Permit, Full> {
        let mut open = self.open.lock().unwrap_or_else(|p| p.into_inner());
        if open.total >= self.limits.total {
            return Err(Full::Total);
        }
        let mine = open.by_peer.entry(peer).or_default();
        if *mine >= self.limits.per_client {
            return Err(Full::Client);
        }
        *mine += 1;
        open.total += 1;
        Ok(Permit {
            peer,
            open: self.open.clone(),
        })
    }

    /// Whether a refusal should be logged now: once a minute at most, so a client
    /// hammering the cap cannot flood the log.
    pub fn warn_now(&self) -> bool {
        let mut open = self.open.lock().unwrap_or_else(|p| p.into_inner());
        let now = Instant::now();
        if open
            .warned
            .is_some_and(|w| now.duration_since(w) < Duration::from_secs(60))
        {
            return false;
        }
        open.warned = Some(now);
        true
    }
}

/// One open stream's slot, given back on drop.
#[derive(Debug)]
pub struct Permit {
    peer: Option<IpAddr>,
    open: Arc<Mutex<Open>>,
}

impl Drop for Permit {
    fn drop(&mut self) {
        let mut open = self.open.lock().unwrap_or_else(|p| p.into_inner());
        open.total = open.total.saturating_sub(1);
        if let Some(n) = open.by_peer.get_mut(&self.peer) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                open.by_peer.remove(&self.peer);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Streams open (in all, and from `peer`).
    fn open(s: &Streams, peer: Option<IpAddr>) -> (usize, usize) {
        let open = s.open.lock().unwrap();
        (open.total, open.by_peer.get(&peer).copied().unwrap_or(0))
    }

    fn limits(total: usize, per_client: usize) -> StreamLimits {
        StreamLimits {
            total,
            per_client,
            ..StreamLimits::DASHBOARD
        }
    }

    #[test]
    fn a_client_past_its_share_is_refused_while_others_still_get_slots() {
        let s = Streams::new(limits(4, 2));
        let a: Option<IpAddr> = Some([10, 0, 0, 1].into());
        let b: Option<IpAddr> = Some([10, 0, 0, 2].into());
        let a1 = s.admit(a).unwrap();
        let _a2 = s.admit(a).unwrap();
        assert_eq!(s.admit(a).unwrap_err(), Full::Client);
        let _b1 = s.admit(b).unwrap();
        assert_eq!(open(&s, a), (3, 2));
        drop(a1);
        assert_eq!(open(&s, a), (2, 1));
        let _a3 = s.admit(a).unwrap();
        let _b2 = s.admit(b).unwrap();
        assert_eq!(s.admit(None).unwrap_err(), Full::Total);
    }

    #[test]
    fn every_slot_comes_back_and_no_peer_entry_is_left_behind() {
        let s = Streams::new(limits(3, 3));
        let permits: Vec<_> = (0..3).map(|_| s.admit(None).unwrap()).collect();
        assert_eq!(s.admit(Some([1, 1, 1, 1].into())).unwrap_err(), Full::Total);
        drop(permits);
        assert_eq!(open(&s, None), (0, 0));
        assert!(s.open.lock().unwrap().by_peer.is_empty());
    }
}
