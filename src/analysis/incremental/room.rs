//! The room as serve's incremental pass compares it from pass to pass: its inputs beyond
//! the bound pods (when each node settles, and whether it does yet), where each node stood
//! in its order at the last comparison, and which nodes moved since, for the kept plans
//! to be checked against ([`super::Incremental`]). While the nodes are the same ones, only
//! the nodes changed since are read; the room is built whole only when a plan reads it.

use std::collections::BTreeSet;
use std::sync::Arc;

use chrono::{DateTime, Utc};

use super::super::disruption::NodeInputs;
use super::super::fit;
use super::Incremental;
use crate::model::*;

/// The room's inputs beyond the bound pods: the nodes and claims stamp, when each
/// schedulable node settles, and whether each is still settling now.
pub(super) type RoomToken = (u64, Arc<fit::Settling>, Vec<bool>);

/// The room as a pass found it: where each node stands in its order (its free CPU as a
/// target, None when it is none), the guarded nodes, and the bound, newest and zones (nodes
/// and claims) stamps it was found at.
pub(super) struct RoomSeen {
    bound: u64,
    at: u64,
    zones: u64,
    /// Every node's name in the model's order, shared from pass to pass while no node or
    /// claim changed (the nodes are the same).
    names: Arc<Vec<String>>,
    /// In the order of `names`.
    places: Vec<Option<f64>>,
    guarded: BTreeSet<String>,
}

/// The most moved nodes a pass checks kept plans against ([`Incremental::room_moves`]).
const MOVED_KEPT: usize = 256;

/// A node whose room changed since the room was last compared: its place in the order
/// (its free CPU) before and now, None when it is no target.
pub(super) struct Moved {
    name: String,
    was: Option<f64>,
    is: Option<f64>,
}

impl Moved {
    /// Whether a plan that read the room as far as `reach` may read otherwise now.
    pub(super) fn within(&self, reach: &fit::Reach) -> bool {
        reach.covers(self.was.map(|c| (c, self.name.as_str())))
            || reach.covers(self.is.map(|c| (c, self.name.as_str())))
    }
}

impl Incremental {
    /// Note the room's inputs beyond the bound pods at `now`: when each node settles (worked
    /// out again only when a node, a claim or a pool changed) and whether each still does.
    /// Any change of them counts as the room's change.
    pub(super) fn note_room(&mut self, c: &Cluster, now: DateTime<Utc>) {
        let stamps = (c.stamps().zones(), c.stamps().pools());
        // When nodes settle changes with a node, a claim or a pool's consolidateAfter:
        // not otherwise worked out again. Whether each settles yet follows the clock.
        if self.settling.as_ref().is_none_or(|(at, _)| *at != stamps) {
            self.settling = Some((stamps, Arc::new(fit::settling(c))));
        }
        let settles = &self.settling.as_ref().expect("worked out above").1;
        let now_settling: Vec<bool> = settles
            .iter()
            .map(|t| t.flatten().is_some_and(|t| now < t))
            .collect();
        self.settled.clear();
        let inputs_same = self.room.0.as_ref().is_some_and(|(bound, at, _)| {
            *bound == stamps.0 && (Arc::ptr_eq(at, settles) || at == settles)
        });
        match &self.room.0 {
            Some((_, _, yet)) if inputs_same => {
                // Only the clock moved: the nodes that settled since stand where they
                // stood in the order, now open to pods; told as moved in place.
                self.settled = yet
                    .iter()
                    .zip(&now_settling)
                    .enumerate()
                    .filter(|(_, (was, is))| was != is)
                    .map(|(i, _)| i)
                    .collect();
                if !self.settled.is_empty() {
                    self.room.0 = Some((stamps.0, settles.clone(), now_settling));
                }
            }
            _ => {
                self.room = (
                    Some((stamps.0, settles.clone(), now_settling)),
                    self.room.1 + 1,
                );
            }
        }
    }

    /// The nodes whose room may have changed since the room was last compared (their
    /// stamp is newer: a pod bound there, gone, or changed), each with its place in the
    /// order before and now. A change no place
    /// tells instead counts as the room's change ([`Incremental::room`]): a target that
    /// came or went, a change on a node whose pods guard a domain with their anti-affinity.
    ///
    /// The nodes that settled since ([`Incremental::note_room`]) are among them, moved in
    /// place; where the room as last compared cannot place them, they count as the room's
    /// change.
    pub(super) fn room_moves(&mut self, c: &Cluster, inputs: &NodeInputs) -> Vec<Moved> {
        let mut moved = self.bound_moves(c, inputs);
        if self.settled.is_empty() {
            return moved;
        }
        let st = c.stamps();
        let seen = self
            .seen
            .as_ref()
            .filter(|s| s.bound == st.bound() && s.zones == st.zones());
        let settled: Option<Vec<Moved>> = seen
            .filter(|_| moved.len() + self.settled.len() <= MOVED_KEPT)
            .and_then(|seen| {
                self.settled
                    .iter()
                    .map(|&i| {
                        let place = *seen.places.get(i)?;
                        Some(Moved {
                            name: seen.names.get(i)?.clone(),
                            was: place,
                            is: place,
                        })
                    })
                    .collect()
            });
        match settled {
            Some(settled) => {
                moved.extend(settled);
                moved
            }
            None => {
                self.room.1 += 1;
                Vec::new()
            }
        }
    }

    /// The nodes whose room moved since the last comparison as their bound pods tell it.
    fn bound_moves(&mut self, c: &Cluster, inputs: &NodeInputs) -> Vec<Moved> {
        let st = c.stamps();
        if self.seen.as_ref().is_some_and(|s| s.bound == st.bound()) {
            return Vec::new();
        }
        // While the nodes are the same ones, from the last comparison and the few nodes
        // the journal names since; else from the room, built now.
        let told = self
            .seen
            .as_ref()
            .filter(|was| was.zones == st.zones())
            .and_then(|was| seen_since(was, c, inputs));
        let now_seen = match told {
            Some(seen) => seen,
            None => {
                let Some(room) = inputs.built_room() else {
                    return Vec::new();
                };
                let names = match &self.seen {
                    Some(seen) if seen.zones == st.zones() => seen.names.clone(),
                    _ => Arc::new(c.nodes.keys().cloned().collect()),
                };
                debug_assert_eq!(names.len(), c.nodes.len(), "a node came or went unstamped");
                RoomSeen {
                    bound: st.bound(),
                    at: st.last(),
                    zones: st.zones(),
                    names,
                    places: room.places_in_node_order().to_vec(),
                    guarded: room.guarded().map(str::to_string).collect(),
                }
            }
        };
        let before = self.seen.replace(now_seen);
        let now_seen = self.seen.as_ref().expect("set above");
        let mut moved = Vec::new();
        let told = before.is_some_and(|was| {
            let targets = |places: &[Option<f64>]| places.iter().flatten().count();
            if targets(&was.places) != targets(&now_seen.places) || was.guarded != now_seen.guarded
            {
                return false;
            }
            // The nodes changed since (by place in `names`), from the journal where it
            // reaches: no node's stamp is looked up by name.
            let changed: Option<Vec<usize>> = st.nodes_since(was.at).map(|touched| {
                let mut at: Vec<usize> = touched
                    .filter_map(|n| now_seen.names.binary_search_by(|x| x.as_str().cmp(n)).ok())
                    .collect();
                at.sort_unstable();
                at
            });
            let same_nodes = Arc::ptr_eq(&was.names, &now_seen.names);
            let mut prior = was.names.iter().zip(&was.places).peekable();
            now_seen
                .names
                .iter()
                .zip(&now_seen.places)
                .enumerate()
                .all(|(i, (name, &now))| {
                    let before = if same_nodes {
                        was.places[i]
                    } else {
                        // Both in name order: the nodes gone since are passed over.
                        while prior
                            .peek()
                            .is_some_and(|(n, _)| n.as_str() < name.as_str())
                        {
                            prior.next();
                        }
                        match prior.peek() {
                            Some((n, &p)) if *n == name => p,
                            _ => None,
                        }
                    };
                    if before.is_some() != now.is_some() {
                        return false;
                    }
                    let same = before.map(|c| c.to_bits()) == now.map(|c| c.to_bits());
                    let newer = match &changed {
                        Some(at) => at.binary_search(&i).is_ok(),
                        None => st.node(name) > was.at,
                    };
                    if same && !newer {
                        return true;
                    }
                    if was.guarded.contains(name) {
                        return false;
                    }
                    moved.push(Moved {
                        name: name.clone(),
                        was: before,
                        is: now,
                    });
                    true
                })
        });
        // Past a few hundred moved nodes, checking every plan against each costs more than
        // judging them again.
        if told && moved.len() <= MOVED_KEPT {
            moved
        } else {
            self.room.1 += 1;
            Vec::new()
        }
    }
}

/// The room as it stands now, from `was` (the last comparison, over the same nodes) and the
/// nodes the journal names since, each read alone ([`NodeInputs::place_of`]): what the room
/// built whole would say, without building it. None when the journal does not reach back,
/// names a node the model does not hold, or where each node settles is not known.
fn seen_since(was: &RoomSeen, c: &Cluster, inputs: &NodeInputs) -> Option<RoomSeen> {
    let st = c.stamps();
    let mut places = was.places.clone();
    let mut guarded = was.guarded.clone();
    for name in st.nodes_since(was.at)? {
        let i = was.names.binary_search_by(|x| x.as_str().cmp(name)).ok()?;
        let (place, guards) = inputs.place_of(c.nodes.get(name)?, i)?;
        places[i] = place;
        if guards {
            guarded.insert(name.to_string());
        } else {
            guarded.remove(name);
        }
    }
    Some(RoomSeen {
        bound: st.bound(),
        at: st.last(),
        zones: st.zones(),
        names: was.names.clone(),
        places,
        guarded,
    })
}
