//! The pending pods' diagnoses kept whole from one pass to the next: a pod that did not
//! change, whose events did not change and whose verdicts still hold is not looked up
//! and diagnosed again; only how long it has waited is brought to the pass's instant.
//!
//! A kept diagnosis holds while:
//! - the model's journal ([`crate::model::stamps::Stamps::since`]) reaches back to the
//!   pass that kept it and names neither the pod (while unbound: come, changed) nor the
//!   events about an object of its name; nothing global changed;
//! - the verdicts it shares were judged with the same pools, usage and catalogue (the
//!   token [`super::Incremental::take_verdicts`] keeps them by);
//! - for a pod that spreads over zones, no node, claim or bound pod of its namespace moved
//!   the zone counts ([`crate::model::stamps::Stamps::spread`]); for a pod with zone
//!   affinity terms of its own, no node, claim or bound pod at all moved
//!   ([`crate::model::stamps::Stamps::bound`]); for every pod, no bound pod whose
//!   anti-affinity may keep it out of a zone came, changed or went
//!   ([`crate::model::stamps::Stamps::guards`]); for a pod with zone terms of its own,
//!   or while some pending pod has zone anti-affinity, no unbound pod came, changed or
//!   went ([`crate::model::stamps::Stamps::pending`]);
//! - for a pod a nomination holds back, the nomination still counts at the pass's instant
//!   (it counts for [`NOMINATION_HOLDS`] after it was seen).
//!
//! Pods are walked in the model's order, the kept ones beside them, so the result is in
//! the order a full pass gives.

use std::sync::Arc;

use chrono::{DateTime, Utc};

use crate::analysis::provisioning::affinity::{own_zone_terms, reads_pending};
use crate::analysis::provisioning::diagnosis::spreads_over_zones;
use crate::analysis::provisioning::pending::{provisionable, NOMINATION_HOLDS};
use crate::analysis::provisioning::PoolSet;
use crate::analysis::provisioning::{diagnose_cached, DiagnosisCache, PodDiagnosis, PodEvents};
use crate::model::shared::FastSet;
use crate::model::stamps::Touched;
use crate::model::*;

/// The last pass's pending pods: the model's newest stamp, the verdicts' token and the
/// instant it was at, and every pod it looked at, in the model's order.
pub(super) struct KeptPending {
    at: u64,
    token: (u64, u64),
    now: DateTime<Utc>,
    pods: Vec<KeptPod>,
}

impl KeptPending {
    /// The addresses of the verdict lists the kept diagnoses hold.
    pub(super) fn verdict_lists(&self) -> FastSet<usize> {
        self.pods
            .iter()
            .filter_map(|k| k.diagnosis.as_ref())
            .map(|d| Arc::as_ptr(&d.nodepools) as usize)
            .collect()
    }
}

/// One unbound pod that [`provisionable`] lets through.
struct KeptPod {
    namespace: String,
    name: String,
    /// None while a nomination since its last failure holds it back.
    diagnosis: Option<Arc<PodDiagnosis>>,
    /// The last instant that nomination holds it back.
    held_until: Option<DateTime<Utc>>,
    /// Its verdicts read the zone counts of its namespace.
    zonal: bool,
    /// Its own zone affinity terms read the bound pods of any namespace.
    affine: bool,
    /// Its verdicts read the other pending pods (its own zone terms, or some pending pod's
    /// zone anti-affinity, when it was diagnosed).
    batch: bool,
}

/// What changed since the kept pass, by name: unbound pods, and objects whose events did.
#[derive(Default)]
struct Changed<'c> {
    pods: FastSet<(&'c str, &'c str)>,
    events: FastSet<&'c str>,
}

impl<'c> Changed<'c> {
    /// None when the journal no longer reaches back to `at`, or something global changed.
    fn since(c: &'c Cluster, at: u64) -> Option<Self> {
        let mut changed = Changed::default();
        for t in c.stamps().since(at)? {
            match t {
                Touched::Unbound(ns, name) => {
                    changed.pods.insert((ns.as_str(), name.as_str()));
                }
                Touched::Events(about) => {
                    changed.events.insert(about.as_str());
                }
                Touched::Node(_) | Touched::Claim(_) | Touched::Pool(_) | Touched::Pdbs(_) => {}
            }
        }
        Some(changed)
    }
}

/// Every pod Karpenter has to place, diagnosed as
/// [`crate::analysis::provisioning::unschedulable_pods`] and
/// [`diagnose_cached`] do, reusing what `kept` holds where it still does. Returns the
/// diagnoses, in the model's order, what to keep for the next pass, and how many pods
/// were reused and diagnosed.
pub(super) fn diagnose<'c>(
    c: &'c Cluster,
    now: DateTime<Utc>,
    pools: &PoolSet,
    token: (u64, u64),
    kept: Option<KeptPending>,
    cache: &mut DiagnosisCache<'c>,
) -> (Vec<Arc<PodDiagnosis>>, KeptPending, (usize, usize)) {
    let st = c.stamps();
    let usable = kept
        .filter(|k| k.token == token && k.now <= now)
        .and_then(|k| Some((Changed::since(c, k.at)?, k)));
    let (changed, at, then, old) = match usable {
        Some((changed, k)) => (changed, k.at, k.now, k.pods),
        None => (Changed::default(), 0, now, Vec::new()),
    };
    let mut old = old.into_iter().peekable();
    let (mut reused, mut computed) = (0, 0);
    let mut pending = Vec::new();
    let mut pods = Vec::new();
    for p in c.unbound_pods().filter(|p| provisionable(p)) {
        let ns = p.metadata.namespace.as_deref().unwrap_or_default();
        let name = p.metadata.name.as_str();
        while old
            .next_if(|k| (k.namespace.as_str(), k.name.as_str()) < (ns, name))
            .is_some()
        {}
        let prior = old.next_if(|k| k.namespace == ns && k.name == name);
        // Its verdicts read the other pending pods now.
        let batch = reads_pending(pools, &p.spec);
        let holds = |k: &KeptPod| {
            !changed.pods.contains(&(ns, name))
                && !changed.events.contains(name)
                && (!k.zonal || st.spread(ns) <= at)
                && (!k.affine || st.bound() <= at)
                && st.guards() <= at
                && (!(k.batch || batch) || st.pending() <= at)
                && k.held_until.is_none_or(|t| now <= t)
        };
        let entry = match prior {
            Some(mut k) if holds(&k) => {
                reused += 1;
                if then != now {
                    k.diagnosis = k.diagnosis.map(|d| d.at(now));
                }
                k
            }
            prior => {
                computed += 1;
                let events = PodEvents::of(c, p);
                let held = events.nominated_since_failure(now);
                let (namespace, name) = match prior {
                    Some(k) => (k.namespace, k.name),
                    None => (ns.to_string(), name.to_string()),
                };
                KeptPod {
                    namespace,
                    name,
                    diagnosis: held
                        .is_none()
                        .then(|| Arc::new(diagnose_cached(pools, p, events, now, cache))),
                    // Past the calendar's end it holds for good.
                    held_until: held.and_then(|t| t.checked_add_signed(NOMINATION_HOLDS)),
                    zonal: spreads_over_zones(p),
                    affine: own_zone_terms(&p.spec),
                    batch,
                }
            }
        };
        pending.extend(entry.diagnosis.clone());
        pods.push(entry);
    }
    let kept = KeptPending {
        at: st.last(),
        token,
        now,
        pods,
    };
    (pending, kept, (reused, computed))
}
