//! Incremental analysis for `kelp serve`: a pass that recomputes only what a change
//! touched, and reuses the rest of the previous pass: each node's disruption state, and
//! the pending pods' per-pool verdicts.
//!
//! A node's state is reused when none of what it read has changed:
//! - the model's change stamps ([`crate::model::stamps`]) of the node (its pods
//!   included), its NodeClaim, the events about either, and the PDBs of its pods'
//!   namespaces; its own NodePool; nothing global (classes, DaemonSets, catalogue,
//!   metrics);
//! - which NodeClaim it resolves to, and the pod it is nominated for;
//! - its pool's budget counts and what the budgets allow now (they follow schedules);
//!   the counts themselves are kept while no node or NodeClaim changed;
//! - if it looked for room on other nodes: how far into the room's order it looked
//!   ([`fit::Reach`]: up to the last node it tried, or every node when a pod found no
//!   place or counted its peers on every node with its own anti-affinity or spread). A
//!   bound pod's change that moves a node's room (not its phase between Pending and
//!   Running, nor its annotations) re-judges the plans whose reach covers where that node
//!   stood before or stands now, found by comparing the room with the last pass's. Any
//!   node or claim's change, a target come or gone, a change on a node whose pods guard a
//!   domain with required anti-affinity, or a change of when nodes settle (their pool's
//!   consolidateAfter) or which still are, re-judges every plan that read the room;
//! - if it priced a replacement: every pool (its spec and usage) and the instance-type
//!   catalogue (the AWS one takes a type's memory, or a type kelp has no facts of whole,
//!   from a node of that type, so a node's coming or going can change it);
//! - the clock has not reached the first instant its answer changes with time alone
//!   ([`super::clock::Clock`]).
//!
//! A pass asks this of each node only where a change may have touched it: the model's
//! journal of changes by name ([`crate::model::stamps::Stamps::since`]) names the nodes
//! changed since the last pass (a node, a pod bound to it, the events about it or its
//! NodeClaim); any other node keeps its state while the clock and what the whole pass
//! shares (the room, the usage) allow. A change of a NodeClaim, a pool, PDBs or anything
//! global, the nominations or a pool's budgets, or more changes than the journal keeps,
//! has every node asked.
//!
//! Its age is written afresh when its text changes. The room is built from each node's
//! share (free resources, whether a pod there keeps others out), kept while the node and
//! its pods are unchanged
//! ([`super::fit::RoomCache`]). The verdicts of pending pods (per distinct spec, affinity,
//! event and peers, as one pass already shares them) are kept while nothing global, no
//! pool (its spec or usage) and not the catalogue changed; one of a pod that spreads over
//! zones, while the zone counts it was judged with are the same; the index those counts
//! come from ([`SpreadIndex`]) is kept while no node, claim or bound pod's room changed,
//! and while only pods changed, it is brought up to date, when a pass needs it, on the
//! nodes they are or were bound to.
//! Kept answers assume the clock only moves on: a pass at an earlier instant than the
//! last starts over ([`Incremental::begin`]).
//! The incremental pass equals the full one at every step: `tests/incremental.rs` checks
//! it on random sequences of changes and clock moves.

use std::collections::BTreeMap;
use std::sync::Arc;

use chrono::{DateTime, Utc};

use super::clock::Clock;
use super::disruption::{self, NodeDisruption, NodeInputs, PoolBudgets};
use super::engine::Engine;
use super::hold::{Hold, KeptHolds};
use super::provisioning::affinity_index::Guards;
use super::provisioning::spread_index::{KeptSpread, SpreadIndex};
use super::provisioning::{DiagnosisCache, KeptVerdicts, PodDiagnosis, PoolSet, PoolUsage};
use super::{ago, fit, KeptFindings};
use crate::findings::{Finding, ObjectRef};
use crate::karpenter::resources::Resources;
use crate::model::shared::{FastMap, FastSet};
use crate::model::stamps::Touched;
use crate::model::*;
use room::{Moved, RoomSeen, RoomToken};

mod pending;
mod room;

/// What the last pass computed, with what each answer read.
#[derive(Default)]
pub struct Incremental {
    epoch: u64,
    /// The latest instant a pass was at: what is kept assumes the clock only moves on.
    latest: Option<DateTime<Utc>>,
    /// Passes over the nodes so far: what tells an entry whose node is gone.
    pass: u64,
    nodes: FastMap<String, Entry>,
    /// The model's newest stamp at the last pass over the nodes, and the nominations it
    /// found: what tells the nodes a change may have touched from the ones it did not.
    checked: Option<(u64, disruption::Nominations)>,
    /// Per pool: its budget counts and allowances at the last pass, and how many times
    /// they changed.
    budgets: FastMap<String, (Option<PoolBudgets>, u64)>,
    /// The room's inputs at the last pass (the nodes and claims stamp, when each node
    /// settles and whether it does yet), and how many times the room changed in a way
    /// not told by where its nodes stand ([`Incremental::room_moves`]).
    room: (Option<RoomToken>, u64),
    /// The room as the last pass that compared it found it.
    seen: Option<RoomSeen>,
    /// The nodes (by place in the model's order) that left their pool's consolidateAfter
    /// since the last pass, when nothing else of the room's inputs changed: moved in
    /// place, for the kept plans to be checked against ([`Incremental::room_moves`]).
    settled: Vec<usize>,
    /// When each node settles, as last worked out ([`fit::settling`]), at which zones
    /// (nodes and claims) and pools stamps.
    settling: Option<((u64, u64), Arc<fit::Settling>)>,
    /// What a pool's verdict reads beyond the pools' own specs at the last pass (each
    /// pool's usage, its instance-type problem, the catalogue), and how many times it
    /// changed.
    usage: (Option<UsageToken>, u64),
    /// The pending pods' verdicts, with the pools' stamp and the usage's change count
    /// they were judged at.
    verdicts: ((u64, u64), KeptVerdicts),
    /// The pending pods' diagnoses, whole.
    pending: Option<pending::KeptPending>,
    /// The DaemonSet-pool mismatches, with the stamps they were found at (anything global,
    /// the nodes, the pools, the DaemonSets' pods).
    daemonset_mismatch: Option<([u64; 3], Vec<Finding>)>,
    /// The pending pods' holds by verdict list.
    holds: KeptHolds,
    /// Each node's share of the free room, for the next room built.
    room_cache: fit::RoomCache,
    /// Each pool's budget node counts (total, unavailable), with the zones stamp (any node
    /// or claim) they were counted at.
    budget_counts: (u64, FastMap<String, (usize, usize)>),
    /// Every pool's usage, with the zones (nodes and claims) and pools stamps it was
    /// counted at.
    usages: Option<((u64, u64), BTreeMap<String, PoolUsage>)>,
    /// The catalogue, with the zones (nodes and claims) and pools stamps it was resolved
    /// at: the AWS one reads the metrics and the classes (global), the pools' classes, and
    /// the nodes of each type; nothing a pod's change moves.
    catalog: Option<((u64, u64), Option<Arc<Catalog>>)>,
    /// The bound pods as zone spread counts them, with the stamps it is up to date with.
    spread: Option<(SpreadAt, Arc<SpreadIndex>)>,
    /// The bound pods whose anti-affinity may keep a pending pod out of a zone, with the
    /// guards' stamp they were found at.
    guards: Option<(u64, Arc<Guards>)>,
    /// The last pass's findings written from one shared answer, for the next pass to
    /// hand on where that answer is kept ([`KeptFindings`]).
    findings: KeptFindings,
    stats: Stats,
}

/// The model's stamps a kept [`SpreadIndex`] is up to date with: the bound pods and
/// nodes (reused as it is), the nodes and claims (brought up to date while only pods
/// changed), and the last change of all (whose nodes are newer).
#[derive(Clone, Copy)]
struct SpreadAt {
    bound: u64,
    zones: u64,
    last: u64,
}

/// What the last pass reused and computed: node states, and distinct pending-pod
/// verdicts (replicas share one).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats {
    pub reused: usize,
    pub computed: usize,
    /// Pending pods whose diagnosis was kept whole, and diagnosed afresh.
    pub pods_reused: usize,
    pub pods_computed: usize,
    pub verdicts_reused: usize,
    pub verdicts_computed: usize,
}

/// What the pools are judged with beyond their specs. The catalogue can change without
/// a global stamp: the AWS one takes a type's labels and allocatable from a node of it.
struct UsageToken {
    pools: Vec<(String, Resources, Option<String>)>,
    catalog: Option<Arc<Catalog>>,
}

impl PartialEq for UsageToken {
    fn eq(&self, other: &Self) -> bool {
        self.pools == other.pools
            && match (&self.catalog, &other.catalog) {
                (Some(a), Some(b)) => Arc::ptr_eq(a, b) || a == b,
                (a, b) => a.is_none() && b.is_none(),
            }
    }
}

struct Entry {
    /// Shared with the passes it was handed to, as is the node's name.
    state: Arc<NodeDisruption>,
    name: Arc<str>,
    /// The model's newest stamp when it was computed.
    stamp: u64,
    /// The first instant its answer may change with time alone.
    until: Option<DateTime<Utc>>,
    /// The first instant its consolidation's countdown reads otherwise (written again then,
    /// the answer kept).
    words_until: Option<DateTime<Utc>>,
    claim: Option<String>,
    namespaces: Vec<String>,
    nominated: Option<ObjectRef>,
    budgets: u64,
    /// The room's change count and how far into its order it read, where it did; the
    /// usage's change count, where it read it.
    room: Option<(u64, fit::Reach)>,
    usage: Option<u64>,
    /// The last pass that found its node.
    seen: u64,
    /// The first instant its age reads otherwise (the clock only moves on:
    /// [`Incremental::begin`]).
    age_until: Option<DateTime<Utc>>,
}

/// The first instant after `now` at which [`ago`]`(now, t)` reads otherwise: it shows
/// the two largest units, so seconds below an hour, minutes below a day, hours beyond.
/// None below a second (milliseconds show) and for a `t` in the future.
fn age_until(now: DateTime<Utc>, t: DateTime<Utc>) -> Option<DateTime<Utc>> {
    let secs = (now - t).num_seconds();
    let unit = match secs {
        ..1 => return None,
        1..3600 => 1,
        3600..86_400 => 60,
        _ => 3600,
    };
    Some(t + chrono::Duration::seconds((secs / unit + 1) * unit))
}

/// A Karpenter node as this pass finds it: what a kept entry of it is checked against.
#[derive(Clone, Copy)]
struct NodeNow<'a> {
    c: &'a Cluster,
    node: &'a Node,
    pool: Option<&'a str>,
    claim: Option<&'a NodeClaim>,
    now: DateTime<Utc>,
    nominated: &'a Option<ObjectRef>,
    /// The change count of its pool's budgets.
    budgets: u64,
}

impl Incremental {
    /// The last pass's findings a pass may hand on.
    pub fn kept_findings(&self) -> &KeptFindings {
        &self.findings
    }

    /// Keep a pass's findings for the next.
    pub fn keep_findings(&mut self, report: &crate::findings::Report) {
        self.findings = KeptFindings::of(report);
    }

    /// What the last pass reused and computed.
    pub fn stats(&self) -> Stats {
        let (verdicts_reused, verdicts_computed) = self.verdicts.1.counts();
        Stats {
            verdicts_reused,
            verdicts_computed,
            ..self.stats
        }
    }

    /// The pending pods' verdicts kept from the last pass, for this pass's diagnoses to
    /// reuse: none when anything global, a pool, the pools' usage or the catalogue changed
    /// since.
    fn take_verdicts(&mut self, c: &Cluster, pools: &PoolSet) -> KeptVerdicts {
        self.start(c);
        self.note_usage(Some(pools));
        let token = (c.stamps().pools(), self.usage.1);
        if self.verdicts.0 != token {
            let stale = std::mem::take(&mut self.verdicts.1);
            self.verdicts = (token, stale.without_verdicts());
        }
        let mut kept = std::mem::take(&mut self.verdicts.1);
        kept.start_pass(c.stamps().last());
        kept
    }

    /// What this pass's diagnoses leave for the next: the verdicts it asked for.
    fn keep_verdicts(&mut self, mut kept: KeptVerdicts, held: &FastSet<usize>) {
        kept.end_pass(held);
        self.verdicts.1 = kept;
    }

    /// Keep the guards this pass found (if it looked), for the next.
    fn keep_guards(&mut self, c: &Cluster, guards: Option<Arc<Guards>>) {
        if let Some(g) = guards {
            self.guards = Some((c.stamps().guards(), g));
        }
    }

    /// Keep the zone-spread index this pass built, reused or brought up to date. A pass
    /// that needed none leaves the one kept before, while it can still be brought up to
    /// date.
    fn keep_spread_index(&mut self, c: &Cluster, index: Option<Arc<SpreadIndex>>) {
        let st = c.stamps();
        match index {
            Some(i) => {
                let at = SpreadAt {
                    bound: st.bound(),
                    zones: st.zones(),
                    last: st.last(),
                };
                self.spread = Some((at, i));
            }
            None => {
                if self
                    .spread
                    .as_ref()
                    .is_some_and(|(at, _)| at.zones != st.zones())
                {
                    self.spread = None;
                }
            }
        }
    }

    /// Start a pass at `now`: a clock that stepped back (kept answers hold only until
    /// some later instant, not before the one they were worked out at) starts over.
    pub fn begin(&mut self, now: DateTime<Utc>) {
        if self.latest.is_some_and(|t| now < t) {
            *self = Incremental::default();
        }
        self.latest = Some(now);
    }

    /// Forget everything when the model is another one.
    fn start(&mut self, c: &Cluster) {
        let epoch = c.stamps().epoch();
        if epoch != self.epoch {
            *self = Incremental {
                epoch,
                latest: self.latest,
                ..Default::default()
            };
        }
    }

    /// Whether entry `e` still holds for the node as it is now (`at`), given the room's
    /// change count and the nodes that moved in it, and the usage's change count now.
    fn current(e: &Entry, (room, moved, usage): (u64, &[Moved], u64), at: &NodeNow) -> bool {
        let NodeNow {
            c,
            node: n,
            pool,
            claim,
            now,
            nominated,
            budgets,
        } = *at;
        let st = c.stamps();
        let name = &n.metadata.name;
        let claim_name = claim.map(|cl| cl.metadata.name.as_str());
        // Its own pool, or every pool where it priced a replacement.
        let pools = match (e.usage, pool) {
            (Some(_), _) => st.pools(),
            (None, Some(pool)) => st.pool(pool),
            (None, None) => st.global(),
        };
        pools <= e.stamp
            && st.node(name) <= e.stamp
            && st.events(name) <= e.stamp
            && e.claim.as_deref() == claim_name
            && claim_name.is_none_or(|cl| st.claim(cl) <= e.stamp && st.events(cl) <= e.stamp)
            && e.namespaces.iter().all(|ns| st.pdbs(ns) <= e.stamp)
            && e.nominated == *nominated
            && e.budgets == budgets
            && Self::still_shared(e, now, (room, moved, usage))
    }

    /// Whether entry `e` still holds as to the clock and what the whole pass shares: the
    /// room's change count and the nodes that moved in it, and the usage's change count.
    fn still_shared(
        e: &Entry,
        now: DateTime<Utc>,
        (room, moved, usage): (u64, &[Moved], u64),
    ) -> bool {
        e.until.is_none_or(|t| now < t)
            && e.room
                .as_ref()
                .is_none_or(|(r, reach)| *r == room && !moved.iter().any(|m| m.within(reach)))
            && e.usage.is_none_or(|u| u == usage)
    }

    /// A kept entry's state handed to this pass, its age and its consolidation's countdown
    /// written afresh when their text changes (the same state while it reads the same).
    fn reuse(entry: &mut Entry, pass: u64, now: DateTime<Utc>) -> Arc<NodeDisruption> {
        entry.seen = pass;
        if entry.words_until.is_some_and(|until| now >= until) {
            let clock = Clock::at(now);
            if let Some(message) = entry.state.consolidation.recount(&clock) {
                Arc::make_mut(&mut entry.state).consolidation.message = message;
            }
            // Below a second its words change at every reading (the answer's change).
            entry.words_until = clock.next_words_change().or(clock.next_change());
        }
        if entry.age_until.is_none_or(|until| now >= until) {
            let age = entry.state.created.map(|t| ago(now, t));
            if entry.state.age != age {
                Arc::make_mut(&mut entry.state).age = age;
            }
            entry.age_until = entry.state.created.and_then(|t| age_until(now, t));
        }
        entry.state.clone()
    }

    /// The nodes a change may have touched since the last pass over them, as the
    /// model's journal of changes tells it: a node itself or a pod bound to it, the events
    /// about it or its NodeClaim. None when every node is to be asked: the first pass, a
    /// change of a NodeClaim, a pool, PDBs or anything global, the journal not reaching
    /// back that far, different nominations, or a pool's budgets.
    fn touched_nodes<'c>(
        &self,
        c: &'c Cluster,
        nominations: &disruption::Nominations,
        budgets_moved: bool,
    ) -> Option<FastSet<&'c str>> {
        let (at, last) = self.checked.as_ref()?;
        if budgets_moved || last != nominations {
            return None;
        }
        let mut touched = FastSet::default();
        // Which node reads a claim's events: the claim each entry resolved, as `current`
        // compares it; made only if a claim's events changed.
        let mut readers: Option<FastMap<&str, &str>> = None;
        for t in c.stamps().since(*at)? {
            match t {
                Touched::Node(name) => {
                    if let Some((name, _)) = c.nodes.get_key_value(name) {
                        touched.insert(name.as_str());
                    }
                }
                Touched::Events(about) => {
                    if let Some((name, _)) = c.nodes.get_key_value(about) {
                        touched.insert(name.as_str());
                    }
                    if !c.nodeclaims.contains_key(about) {
                        continue;
                    }
                    let readers = readers.get_or_insert_with(|| {
                        self.nodes
                            .iter()
                            .filter_map(|(node, e)| Some((e.claim.as_deref()?, node.as_str())))
                            .collect()
                    });
                    let node = readers.get(about.as_str());
                    if let Some((name, _)) = node.and_then(|n| c.nodes.get_key_value(*n)) {
                        touched.insert(name.as_str());
                    }
                }
                Touched::Claim(_) | Touched::Pool(_) | Touched::Pdbs(_) => return None,
                // A pending pod reaches the nodes through the nominations, compared above.
                Touched::Unbound(..) => {}
            }
        }
        Some(touched)
    }

    /// Each pool's budget counts and what its budgets allow now, for every reason; says
    /// whether any pool's changed.
    fn note_budgets(&mut self, budgets: &BTreeMap<String, PoolBudgets>) -> bool {
        let mut moved = false;
        for (name, b) in budgets {
            let slot = self.budgets.entry(name.clone()).or_default();
            if slot.0.as_ref() != Some(b) {
                *slot = (Some(b.clone()), slot.1 + 1);
                moved = true;
            }
        }
        moved
    }

    fn note_usage(&mut self, pools: Option<&PoolSet>) {
        let token = pools.map(|ps| UsageToken {
            pools: ps
                .ordered
                .iter()
                .map(|p| {
                    (
                        p.name.to_string(),
                        p.usage.clone(),
                        p.no_instance_types.clone(),
                    )
                })
                .collect(),
            catalog: ps.catalog.clone(),
        });
        if self.usage.0 != token {
            self.usage = (token, self.usage.1 + 1);
        }
    }
}

impl Engine for Incremental {
    /// Every pod Karpenter has to place, diagnosed, as a full pass gives them: a pod's
    /// diagnosis kept whole while nothing it read changed ([`pending`]), else diagnosed
    /// with the verdicts kept where they hold.
    fn pending(
        &mut self,
        c: &Cluster,
        now: DateTime<Utc>,
        pools: &PoolSet,
    ) -> Vec<Arc<PodDiagnosis>> {
        let mut cache = DiagnosisCache::with_kept(self.take_verdicts(c, pools));
        let (diagnoses, kept, (reused, computed)) = pending::diagnose(
            c,
            now,
            pools,
            self.verdicts.0,
            self.pending.take(),
            &mut cache,
        );
        let held = kept.verdict_lists();
        self.pending = Some(kept);
        (self.stats.pods_reused, self.stats.pods_computed) = (reused, computed);
        if let Some(verdicts) = cache.into_kept() {
            self.keep_verdicts(verdicts, &held);
        }
        diagnoses
    }

    /// What holds each pending pod ([`super::hold::holds`]): a verdict list's hold kept
    /// while a pending pod still has that list. A change of the pools has every verdict
    /// list judged again (new lists), so a kept hold never outlives the pools it read.
    fn holds(&mut self, c: &Cluster, pending: &[Arc<PodDiagnosis>]) -> Vec<Arc<Hold>> {
        self.start(c);
        super::hold::holds_with(c, pending, &mut self.holds)
    }

    /// [`super::placement::daemonset_mismatch`], kept while no node, pool or DaemonSet pod
    /// changed (nor anything global: the DaemonSets themselves).
    fn daemonset_mismatch(
        &mut self,
        c: &Cluster,
        usages: &BTreeMap<String, PoolUsage>,
    ) -> Vec<Finding> {
        self.start(c);
        let st = c.stamps();
        let token = [st.zones(), st.pools(), st.daemon_pods()];
        match &self.daemonset_mismatch {
            Some((at, found)) if *at == token => found.clone(),
            _ => {
                let found = super::placement::daemonset_mismatch(c, usages);
                self.daemonset_mismatch = Some((token, found.clone()));
                found
            }
        }
    }

    /// The zone-spread index an earlier pass built: as it is while the bound pods and
    /// nodes it counts are unchanged, and to be brought up to date (the nodes with a newer
    /// stamp counted again) while only pods changed.
    fn spread_index(&mut self, c: &Cluster) -> Option<KeptSpread> {
        self.start(c);
        let (at, index) = self.spread.as_ref()?;
        let st = c.stamps();
        if at.bound == st.bound() {
            Some(KeptSpread::Current(index.clone()))
        } else if at.zones == st.zones() {
            Some(KeptSpread::Since(index.clone(), at.last))
        } else {
            None
        }
    }

    /// The catalogue, as [`super::catalog::resolve`], kept while nothing global, no pool,
    /// node or NodeClaim changed (it reads nothing else): the same `Arc`, so what was judged
    /// with it is seen to hold at a pointer's comparison.
    fn catalog(&mut self, c: &Cluster) -> Option<Arc<Catalog>> {
        self.start(c);
        let at = (c.stamps().zones(), c.stamps().pools());
        match &self.catalog {
            Some((kept_at, catalog)) if *kept_at == at => catalog.clone(),
            _ => {
                let catalog = super::catalog::resolve(c, super::provisioning::cluster_provider(c));
                self.catalog = Some((at, catalog.clone()));
                catalog
            }
        }
    }

    /// Every pool's usage, as [`super::provisioning::pool_usages`], kept while no pool, node or
    /// NodeClaim changed (it reads nothing else).
    fn pool_usages(&mut self, c: &Cluster) -> BTreeMap<String, PoolUsage> {
        self.start(c);
        let at = (c.stamps().zones(), c.stamps().pools());
        match &self.usages {
            Some((kept_at, usages)) if *kept_at == at => usages.clone(),
            _ => {
                let usages = super::provisioning::pool_usages(c);
                self.usages = Some((at, usages.clone()));
                usages
            }
        }
    }

    /// Every pool's budgets at `now`, as [`disruption::pool_budgets`], with the node
    /// counts kept while no node or NodeClaim changed (they read nothing else).
    fn pool_budgets(&mut self, c: &Cluster, now: DateTime<Utc>) -> BTreeMap<String, PoolBudgets> {
        self.start(c);
        let zones = c.stamps().zones();
        if self.budget_counts.0 != zones {
            self.budget_counts = (zones, FastMap::default());
        }
        let kept = &mut self.budget_counts.1;
        kept.retain(|pool, _| c.nodepools.contains_key(pool));
        disruption::pool_budgets_with(c, now, |pool| {
            *kept
                .entry(pool.to_string())
                .or_insert_with(|| disruption::budget_counts(c, pool))
        })
    }

    /// The bound pods whose anti-affinity may keep a pending pod out of a zone, as the last
    /// pass found them, while none came, changed or went and none's node moved zone.
    fn guards(&mut self, c: &Cluster) -> Option<Arc<Guards>> {
        self.start(c);
        let (at, guards) = self.guards.as_ref()?;
        (*at == c.stamps().guards()).then(|| guards.clone())
    }

    /// The disruption state of every Karpenter node, as [`disruption::node_states`]
    /// computes it, recomputing only the nodes whose inputs changed.
    fn node_states(
        &mut self,
        c: &Cluster,
        now: DateTime<Utc>,
        pools: &PoolSet,
        budgets: &BTreeMap<String, PoolBudgets>,
    ) -> disruption::NodeStates {
        self.start(c);
        let stamps = c.stamps();
        let budgets_moved = self.note_budgets(budgets);
        self.note_room(c, now);
        let settling = self.settling.as_ref().map(|(_, s)| s.clone());
        let inputs = NodeInputs::with_budgets(c, now, budgets)
            .with_pools(Some(pools))
            .with_room_cache(std::mem::take(&mut self.room_cache), settling);
        let moved = self.room_moves(c, &inputs);
        self.note_usage(Some(pools));
        // Sorted as the nodes are, and walked beside them: no node's name is hashed.
        let touched = self
            .touched_nodes(c, inputs.nominations(), budgets_moved)
            .map(|t| {
                let mut t: Vec<&str> = t.into_iter().collect();
                t.sort_unstable();
                t
            });
        let mut next_touched = 0;
        let mut stats = Stats::default();
        // In node order, so the map is built in one sweep rather than node by node.
        let mut out = Vec::new();
        self.pass += 1;
        for n in c.nodes.values() {
            let name = &n.metadata.name;
            let untouched = touched.as_ref().is_some_and(|t| {
                while t.get(next_touched).is_some_and(|&n| n < name.as_str()) {
                    next_touched += 1;
                }
                t.get(next_touched) != Some(&name.as_str())
            });
            if untouched {
                // Untouched since the last pass: its pool, claim, nomination and stamps
                // are as it found them, so is whether it is a Karpenter node; what the
                // whole pass shares (the room, the usage) and the clock are left to ask.
                let Some(entry) = self.nodes.get_mut(name) else {
                    continue;
                };
                if Self::still_shared(entry, now, (self.room.1, &moved, self.usage.1)) {
                    stats.reused += 1;
                    out.push((entry.name.clone(), Self::reuse(entry, self.pass, now)));
                    continue;
                }
            }
            let pool = n.pool();
            let claim = c.nodeclaim_for_node(n);
            // Both read once here, for what follows too.
            if !disruption::karpenter_node_with(pool, claim) {
                continue;
            }
            let nominated = inputs.nominated(n, claim);
            let budgets = pool.and_then(|p| self.budgets.get(p)).map_or(0, |b| b.1);
            let prior = self.nodes.get_mut(name);
            // The name the passes share: the entry's while the node has one.
            let shared: Arc<str> = prior
                .as_ref()
                .map_or_else(|| Arc::from(name.as_str()), |e| e.name.clone());
            let kept = prior.filter(|e| {
                Self::current(
                    e,
                    (self.room.1, &moved, self.usage.1),
                    &NodeNow {
                        c,
                        node: n,
                        pool,
                        claim,
                        now,
                        nominated: &nominated,
                        budgets,
                    },
                )
            });
            let state = if let Some(entry) = kept {
                stats.reused += 1;
                Self::reuse(entry, self.pass, now)
            } else {
                stats.computed += 1;
                let clock = Clock::at(now);
                inputs.take_asked();
                inputs.take_reach();
                let state = disruption::node_disruption_at(c, n, &clock, &inputs);
                let (room, usage) = inputs.take_asked();
                let reach = inputs.take_reach();
                let mut namespaces: Vec<String> = c
                    .pods_on(name)
                    .filter_map(|p| p.metadata.namespace.as_deref().map(str::to_string))
                    .collect();
                namespaces.dedup();
                let state = Arc::new(state);
                self.nodes.insert(
                    name.clone(),
                    Entry {
                        state: state.clone(),
                        name: shared.clone(),
                        stamp: stamps.last(),
                        until: clock.next_change(),
                        words_until: clock.next_words_change(),
                        claim: claim.map(|cl| cl.metadata.name.clone()),
                        namespaces,
                        nominated,
                        budgets,
                        room: room.then(|| (self.room.1, reach)),
                        usage: usage.then_some(self.usage.1),
                        seen: self.pass,
                        age_until: state.created.and_then(|t| age_until(now, t)),
                    },
                );
                state
            };
            out.push((shared, state));
        }
        let pass = self.pass;
        self.nodes.retain(|_, e| e.seen == pass);
        self.checked = Some((stamps.last(), inputs.nominations().clone()));
        self.room_cache = inputs.into_room_cache();
        (self.stats.reused, self.stats.computed) = (stats.reused, stats.computed);
        // The pools' indexes this pass built, for the next.
        self.keep_spread_index(c, pools.built_spread_index());
        self.keep_guards(c, pools.built_guards());
        out.into_iter().collect()
    }
}
