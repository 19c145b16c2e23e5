//! Verdicts kept from one pass to the next (`kelp serve`'s incremental pass) and the
//! shapes diagnosis shares with them: Karpenter's parsed FailedScheduling messages and the
//! verdicts a controller's replicas share.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::affinity::{own_zone_terms, reads_pending, ZoneAffinity};
use super::topology::ZoneSpread;
use super::verdict::PoolVerdict;
use super::{pod_terms, PoolSet};
use crate::karpenter::events::{self, MessageFormat, Segment};
use crate::karpenter::requirements::Requirements;
use crate::model::shared::{FastMap, FastSet};
use crate::model::*;

/// Verdicts kept from one pass for the next (`kelp serve`'s incremental pass, see
/// [`crate::analysis::incremental`]), by the per-pass key with the event's text in place
/// of its address. Each entry holds the shared spec, affinity, namespace and labels its
/// key names by address, so no other value can take that address while it is kept.
/// Whoever keeps it empties it when the pools change (their usage, limits, types, the
/// catalogue, or anything global); an entry of a pod that spreads over zones, or that a
/// zone affinity rule reaches, is reused only while the zone counts it was judged with
/// are the same.
#[derive(Default)]
pub struct KeptVerdicts {
    entries: FastMap<KeptKey, Kept>,
    /// Distinct verdicts the last pass took from here, and computed afresh.
    reused: usize,
    computed: usize,
    /// The pass now filling it: what no pass asked for is let go at its end.
    pass: u64,
    /// The model's newest stamp in this pass.
    at: u64,
    /// Karpenter's messages parsed, by their text, with the last pass that read each. They
    /// depend on the text alone, so they outlive a change of the pools.
    parses: FastMap<Arc<str>, (ParsedEvent, u64)>,
}

pub(super) type KeptKey = (usize, usize, Option<Arc<str>>, (usize, usize));

type Alive = (
    Shared<SchedulingSpec>,
    Option<Shared<Affinity>>,
    Option<Shared<str>>,
    StringMap,
);

struct Kept {
    /// The last pass that asked for it.
    pass: u64,
    /// The model's newest stamp ([`crate::model::stamps`]) when its zone counts were last
    /// found the same.
    at: u64,
    _alive: Alive,
    spread: Vec<ZoneSpread>,
    affinity: ZoneAffinity,
    value: SharedVerdicts,
}

impl KeptVerdicts {
    /// How many distinct verdicts the pass that filled it reused and computed.
    pub fn counts(&self) -> (usize, usize) {
        (self.reused, self.computed)
    }

    /// Start a pass on a model whose newest stamp is `at`: its counts start at zero.
    pub fn start_pass(&mut self, at: u64) {
        (self.reused, self.computed) = (0, 0);
        self.pass += 1;
        self.at = at;
    }

    /// The verdicts kept under `key` for `pod` if they still hold, else `compute`d (from
    /// the pod's terms and zone counts) and kept.
    pub(super) fn verdicts(
        &mut self,
        key: KeptKey,
        pod: &Pod,
        pools: &PoolSet,
        compute: impl FnOnce(
            Result<Vec<Requirements>, String>,
            &[ZoneSpread],
            &ZoneAffinity,
        ) -> SharedVerdicts,
    ) -> SharedVerdicts {
        let (pass, at) = (self.pass, self.at);
        // Zone counts only move with a node, a claim or the room of a bound pod in the
        // pod's namespace (the only one its spread counts), or of a bound pod whose
        // anti-affinity may keep it out of a zone; its own zone affinity terms read any
        // namespace's. Until one does, an entry stands without counting them again.
        let st = pools.cluster.stamps();
        let mut moved = st
            .spread(pod.metadata.namespace.as_deref().unwrap_or_default())
            .max(st.guards());
        if own_zone_terms(&pod.spec) {
            moved = moved.max(st.bound());
        }
        if reads_pending(pools, &pod.spec) {
            moved = moved.max(st.pending());
        }
        if let Some(k) = self.entries.get_mut(&key).filter(|k| moved <= k.at) {
            self.reused += 1;
            k.pass = pass;
            return k.value.clone();
        }
        let terms = pod_terms(&pod.spec, pools.provider);
        let spread = ZoneSpread::of(pools, pod);
        let affinity = ZoneAffinity::of(pools, pod);
        if let Some(k) = self
            .entries
            .get_mut(&key)
            .filter(|k| k.spread == spread && k.affinity == affinity)
        {
            self.reused += 1;
            (k.pass, k.at) = (pass, at);
            return k.value.clone();
        }
        self.computed += 1;
        let value = compute(terms, &spread, &affinity);
        let alive = (
            pod.spec.scheduling.clone(),
            pod.spec.affinity.clone(),
            pod.metadata.namespace.clone(),
            pod.metadata.labels.clone(),
        );
        self.entries.insert(
            key,
            Kept {
                pass,
                at,
                _alive: alive,
                spread,
                affinity,
                value: value.clone(),
            },
        );
        value
    }

    /// `message` parsed: as kept, or parsed now and kept.
    pub(super) fn parsed(&mut self, message: &str) -> ParsedEvent {
        let pass = self.pass;
        if let Some((p, at)) = self.parses.get_mut(message) {
            *at = pass;
            return p.clone();
        }
        let p = parse_event(message);
        self.parses.insert(p.2.clone(), (p.clone(), pass));
        p
    }

    /// The same store with every verdict let go and the parsed messages kept (the pools
    /// changed; a message's parse does not depend on them).
    pub fn without_verdicts(self) -> Self {
        KeptVerdicts {
            parses: self.parses,
            ..Default::default()
        }
    }

    /// End a pass: let go of what it did not ask for (pods gone, specs changed, messages
    /// no pending pod's event carries), so what is kept follows the pending pods, not
    /// everything ever pending. A diagnosis kept whole from pass to pass (`kelp serve`'s,
    /// while nothing it read changed) asks for nothing, yet holds its verdicts: the
    /// verdict lists at the addresses in `held` stay too.
    pub fn end_pass(&mut self, held: &FastSet<usize>) {
        let pass = self.pass;
        self.entries
            .retain(|_, k| k.pass == pass || held.contains(&(Arc::as_ptr(&k.value.1) as usize)));
        self.parses.retain(|_, (_, at)| *at == pass);
    }
}

/// A FailedScheduling message parsed, with its one shared copy.
pub(super) fn parse_event(message: &str) -> ParsedEvent {
    let fs = events::parse_failed_scheduling(message);
    (fs.format, Arc::new(fs.segments), Arc::from(message))
}

/// A FailedScheduling message parsed: its format, segments and text.
pub(super) type ParsedEvent = (MessageFormat, Arc<Vec<Segment>>, Arc<str>);

/// Requests as shown, verdicts, and what holds the pod in one line: what replicas share.
pub(super) type SharedVerdicts = (
    Arc<BTreeMap<String, String>>,
    Arc<Vec<Arc<PoolVerdict>>>,
    Arc<str>,
);
