//! What a pass adds to the history: a pure diff of the model and the pass against what the
//! recorder saw before. NodeClaim steps come from the claim's own conditions and times
//! (so a step is dated when Karpenter took it, however late kelp saw it), Karpenter's
//! events from the model's kept events (a later count updates the row), findings from the
//! report (appeared, then resolved), and pods' waits from the pending pods' diagnoses. A
//! restarted serve carries on from the store's open rows ([`Recorder::resume`]).

use std::collections::{HashMap, HashSet};

use chrono::{DateTime, Utc};

use super::record::{Kind, Record, Subject};
use crate::analysis::provisioning::LAUNCH_ERRORS;
use crate::analysis::Pass;
use crate::karpenter::events::Reason;
use crate::model::*;

/// Karpenter's events that go into the history (not `Nominated`: a pod's wait has a row
/// of its own, and a nomination per pod per pass would drown the rest).
const RECORDED: &[Reason] = &[
    Reason::Unconsolidatable,
    Reason::ConsolidationCandidate,
    Reason::ConsolidationRejected,
    Reason::ConsolidationApproved,
    Reason::DisruptionBlocked,
    Reason::DisruptionLaunching,
    Reason::DisruptionWaitingReadiness,
    Reason::DisruptionTerminating,
    Reason::NodeRepairBlocked,
    Reason::RebootObserved,
    Reason::RebootFailed,
    Reason::Evicted,
    Reason::Disrupted,
    Reason::FailedDraining,
    Reason::TerminationGracePeriodExpiring,
    Reason::SpotInterrupted,
    Reason::SpotRebalanceRecommendation,
    Reason::InstanceStopping,
    Reason::InstanceTerminating,
    Reason::InstanceUnhealthy,
    Reason::TerminatingOnInterruption,
    Reason::CapacityReservationInstanceInterrupted,
    Reason::NoCompatibleInstanceTypes,
];

/// A NodeClaim's conditions that are steps of its life, and the step's name.
const STEPS: &[(&str, &str)] = &[
    ("Launched", "launched"),
    ("Registered", "registered"),
    ("Initialized", "initialized"),
    ("Drifted", "drifted"),
    ("DisruptionReason", "disrupting"),
    ("Rebooting", "rebooting"),
    ("InstanceTerminating", "terminating"),
];

struct ClaimSeen {
    node: Option<String>,
    pool: Option<String>,
    /// When each step was taken, as last seen: a claim whose steps are the same is not
    /// looked at further (no key is built for it).
    times: Times,
    /// The pass that last saw it.
    pass: u64,
    /// The keys of the steps written so far.
    written: HashSet<String>,
}

/// A claim's creation, each of [`STEPS`] where it holds (its transition time), its
/// deletion: in milliseconds.
type Times = [Option<i64>; STEPS.len() + 2];

fn times(cl: &NodeClaim) -> Times {
    let mut t: Times = [None; STEPS.len() + 2];
    t[0] = cl.metadata.creation_timestamp.map(|x| x.timestamp_millis());
    for c in &cl.status.conditions {
        if let Some(i) = STEPS.iter().position(|(ty, _)| c.type_ == *ty) {
            if c.is_true() {
                t[i + 1] = Some(c.last_transition_time.map_or(0, |x| x.timestamp_millis()));
            }
        }
    }
    t[STEPS.len() + 1] = cl.metadata.deletion_timestamp.map(|x| x.timestamp_millis());
    t
}

/// What the history has seen, to write only what changed.
#[derive(Default)]
pub struct Recorder {
    claims: HashMap<String, ClaimSeen>,
    /// Event id -> (count, last seen) written, and the pass that last saw it.
    events: HashMap<String, ((i32, Option<DateTime<Utc>>), u64)>,
    /// Open findings by fingerprint of (code, object, pool): their row, and the pass that
    /// last saw it.
    findings: HashMap<u64, (Record, u64)>,
    /// Pending pods by fingerprint of (namespace, name): their open row, and the pass that
    /// last saw it.
    pending: HashMap<u64, (Record, u64)>,
    /// Claims the store had alive when serve last stopped, not yet seen again.
    unseen: HashMap<String, Record>,

    passes: u64,
}

/// Steps a claim takes once; the others (drift, a disruption, a reboot) can come again and
/// are one row per episode, told apart by when each began.
pub(super) const ONCE: &[&str] = &[
    "created",
    "launched",
    "registered",
    "initialized",
    "deleting",
    "deleted",
];

/// The key of a claim's step. A claim's rows are keyed by its name (unique while it lives,
/// and all Karpenter's log names it by), so that a row imported from the log and one seen
/// live are one row.
pub(super) fn step_key(claim: &str, step: &str, at: DateTime<Utc>) -> String {
    if ONCE.contains(&step) {
        format!("nodeclaim/{claim}/{step}")
    } else {
        format!("nodeclaim/{claim}/{step}/{}", at.timestamp_millis())
    }
}

fn subject(kind: &str, namespace: Option<&str>, name: &str) -> Subject {
    Subject {
        kind: kind.to_string(),
        namespace: namespace.map(str::to_string),
        name: name.to_string(),
    }
}

/// A fingerprint of some texts, to find what was seen without building a key each pass
/// (64 bits: one collision in a cluster's lifetime is not a worry).
fn print(parts: &[&str]) -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = foldhash::fast::FixedState::with_seed(0x6b656c70).build_hasher();
    for p in parts {
        h.write(p.as_bytes());
        h.write_u8(0xff);
    }
    h.finish()
}

fn finding_print(f: &crate::findings::Finding) -> u64 {
    print(&[
        f.code.as_str(),
        f.object.kind.as_str(),
        f.object.namespace.as_deref().unwrap_or_default(),
        &f.object.name,
        f.nodepool.as_deref().unwrap_or_default(),
    ])
}

fn row_finding_print(r: &Record) -> u64 {
    print(&[
        &r.what,
        &r.object.kind,
        r.object.namespace.as_deref().unwrap_or_default(),
        &r.object.name,
        r.nodepool.as_deref().unwrap_or_default(),
    ])
}

impl Recorder {
    /// Carry on from a store's rows still open (findings, pods' waits) and the claims it
    /// had alive: a finding still there keeps its row; one gone, or a claim gone, is closed
    /// at the first pass.
    pub fn resume(open: Vec<Record>, live_claims: Vec<Record>) -> Self {
        let mut r = Recorder::default();
        for row in open {
            match row.kind {
                Kind::Finding => {
                    r.findings.insert(row_finding_print(&row), (row, 0));
                }
                Kind::Pod => {
                    let key = print(&[
                        row.object.namespace.as_deref().unwrap_or_default(),
                        &row.object.name,
                    ]);
                    r.pending.insert(key, (row, 0));
                }
                _ => {}
            }
        }
        for row in live_claims {
            if let Some(id) = row.key.split('/').nth(1) {
                r.unseen.insert(id.to_string(), row);
            }
        }
        r
    }

    /// The rows this pass adds or updates.
    pub fn observe(&mut self, c: &Cluster, pass: &Pass) -> Vec<Record> {
        let mut out = Vec::new();
        self.claims(c, pass, &mut out);
        self.events(c, pass, &mut out);
        self.findings(pass, &mut out);
        self.pods(c, pass, &mut out);
        self.passes += 1;
        out
    }

    fn claims(&mut self, c: &Cluster, pass: &Pass, out: &mut Vec<Record>) {
        let this = self.passes;
        for cl in c.nodeclaims.values() {
            let id = &cl.metadata.name;
            let now = times(cl);
            // Seen before and no step moved (its steps come from these times alone): only
            // note that it is still there, and on which node.
            if let Some(seen) = self.claims.get_mut(id) {
                seen.pass = this;
                if cl.status.node_name.is_some() && seen.node != cl.status.node_name {
                    seen.node = cl.status.node_name.clone();
                }
                if seen.times == now {
                    continue;
                }
            }
            if !self.unseen.is_empty() {
                self.unseen.remove(id);
            }
            let pool = cl.metadata.label(crate::karpenter::labels::NODEPOOL);
            let seen = self.claims.entry(id.clone()).or_insert_with(|| ClaimSeen {
                node: cl.status.node_name.clone(),
                pool: pool.map(str::to_string),
                times: [None; STEPS.len() + 2],
                written: HashSet::new(),
                pass: this,
            });
            seen.times = now;
            let base = |what: &str, at: DateTime<Utc>, key: String| {
                let mut r = Record::new(
                    key,
                    at,
                    Kind::NodeClaim,
                    what,
                    subject("NodeClaim", None, &cl.metadata.name),
                );
                r.nodeclaim = Some(cl.metadata.name.clone());
                r.node = cl.status.node_name.clone();
                r.nodepool = pool.map(str::to_string);
                r
            };
            let mut steps: Vec<Record> = Vec::new();
            if let Some(t) = cl.metadata.creation_timestamp {
                steps.push(base("created", t, format!("nodeclaim/{id}/created")));
            }
            for (condition, step) in STEPS {
                let Some(cond) = crate::model::condition(&cl.status.conditions, condition) else {
                    continue;
                };
                if !cond.is_true() {
                    continue;
                }
                let at = cond.last_transition_time.unwrap_or(pass.now);
                let key = step_key(&id, step, at);
                // The reason, where it says more than the condition's own name.
                let reason = cond.reason.as_deref().filter(|r| r != condition);
                let mut r = base(step, at, key).detail("reason", reason.unwrap_or_default());
                r.message = cond.message.clone().unwrap_or_default();
                if *step == "launched" {
                    r = launched(r, cl, pass);
                }
                steps.push(r);
            }
            if let Some(t) = cl.metadata.deletion_timestamp {
                steps.push(base("deleting", t, format!("nodeclaim/{id}/deleting")));
            }
            for r in steps {
                if seen.written.insert(r.key.clone()) {
                    out.push(r);
                }
            }
        }
        let gone: Vec<String> = self
            .claims
            .iter()
            .filter(|(_, seen)| seen.pass != this)
            .map(|(id, _)| id.clone())
            .collect();
        for id in gone {
            if let Some(seen) = self.claims.remove(&id) {
                let mut r = Record::new(
                    format!("nodeclaim/{id}/deleted"),
                    pass.now,
                    Kind::NodeClaim,
                    "deleted",
                    subject("NodeClaim", None, &id),
                );
                r.nodeclaim = Some(id);
                r.node = seen.node;
                r.nodepool = seen.pool;
                out.push(r);
            }
        }
        // Claims alive when serve last stopped and not there now: gone while no one watched.
        if self.passes == 0 {
            for (id, row) in self.unseen.drain() {
                let mut r = Record::new(
                    format!("nodeclaim/{id}/deleted"),
                    pass.now,
                    Kind::NodeClaim,
                    "deleted",
                    row.object.clone(),
                );
                r.nodeclaim = row.nodeclaim;
                r.node = row.node;
                r.nodepool = row.nodepool;
                r.message =
                    "gone while kelp was not watching: deleted at or before this time".into();
                out.push(r);
            }
        }
    }

    fn events(&mut self, c: &Cluster, pass: &Pass, out: &mut Vec<Record>) {
        let this = self.passes;
        for e in c.events.values() {
            if !e.from_karpenter() || !(e.is_any(RECORDED) || e.is_any(LAUNCH_ERRORS)) {
                continue;
            }
            let now = (e.count, e.last_seen);
            if let Some((was, seen)) = self.events.get_mut(&e.id) {
                *seen = this;
                if *was == now {
                    continue;
                }
                *was = now;
            } else {
                self.events.insert(e.id.clone(), (now, this));
            }
            let Some(at) = e.first_seen.or(e.last_seen) else {
                continue;
            };
            let g = &e.regarding;
            let mut r = Record::new(
                // Karpenter says the same about the same object again and again (a refusal
                // is repeated every few minutes, in a new event once the old expires): one
                // row, from the first sighting to the last.
                format!(
                    "event/{}/{}/{}/{}/{:016x}",
                    g.kind,
                    g.namespace.as_deref().unwrap_or_default(),
                    g.name,
                    e.reason,
                    super::record::fnv(&e.message)
                ),
                at,
                Kind::Event,
                &e.reason,
                subject(&g.kind, g.namespace.as_deref(), &g.name),
            );
            r.until = e.last_seen.filter(|t| *t > at);
            r.message = e.message.clone();
            r = r.detail(
                "count",
                if e.count > 1 {
                    e.count.to_string()
                } else {
                    String::new()
                },
            );
            place(c, &g.kind, g.namespace.as_deref(), &g.name, &mut r);

            if let Some(le) = pass.launch_errors.get(&e.id) {
                r = r
                    .detail("instanceTypes", le.instance_types.join(","))
                    .detail("zones", le.zones.join(","))
                    .detail("capacityType", le.capacity_type.clone().unwrap_or_default())
                    .detail("code", le.code.clone().unwrap_or_default());
            }
            out.push(r);
        }
        self.events.retain(|_, (_, seen)| *seen == this);
    }

    fn findings(&mut self, pass: &Pass, out: &mut Vec<Record>) {
        let this = self.passes;
        for f in &pass.report.findings {
            let key = finding_print(f);
            if let Some((_, seen)) = self.findings.get_mut(&key) {
                *seen = this;
                continue;
            }
            let at = pass.now;
            let object = f.object.to_string();
            let pool = f.nodepool.as_deref().unwrap_or_default();
            let mut r = Record::new(
                format!(
                    "finding/{}/{object}/{pool}/{}",
                    f.code.as_str(),
                    at.timestamp_millis()
                ),
                at,
                Kind::Finding,
                f.code.as_str(),
                subject(
                    f.object.kind.as_str(),
                    f.object.namespace.as_deref(),
                    &f.object.name,
                ),
            )
            .detail("code", f.code.as_str())
            .detail("object", object)
            .detail("severity", f.severity.to_string());
            r.nodepool = f.nodepool.clone();
            r.message = f.message.clone();
            out.push(r.clone());
            self.findings.insert(key, (r, this));
        }
        let resolved: Vec<u64> = self
            .findings
            .iter()
            .filter(|(_, (_, seen))| *seen != this)
            .map(|(k, _)| *k)
            .collect();
        for k in resolved {
            if let Some((mut r, _)) = self.findings.remove(&k) {
                r.until = Some(pass.now);
                out.push(r);
            }
        }
    }

    fn pods(&mut self, c: &Cluster, pass: &Pass, out: &mut Vec<Record>) {
        let this = self.passes;
        for d in &pass.pending {
            let ns = d.pod.namespace.as_deref().unwrap_or_default();
            let key = print(&[ns, &d.pod.name]);
            let summary = d.verdict_summary();
            match self.pending.get_mut(&key) {
                Some((record, seen)) => {
                    *seen = this;
                    if record.message != summary {
                        record.message = summary.to_string();
                        out.push(record.clone());
                    }
                }
                None => {
                    let at = d.since.unwrap_or(pass.now);
                    let mut r = Record::new(
                        format!("pod/{ns}/{}/{}", d.pod.name, at.timestamp_millis()),
                        at,
                        Kind::Pod,
                        "pending",
                        subject("Pod", Some(ns), &d.pod.name),
                    );
                    r.message = summary.to_string();
                    out.push(r.clone());
                    self.pending.insert(key, (r, this));
                }
            }
        }
        let ended: Vec<u64> = self
            .pending
            .iter()
            .filter(|(_, (_, seen))| *seen != this)
            .map(|(k, _)| *k)
            .collect();
        for k in ended {
            let Some((mut record, _)) = self.pending.remove(&k) else {
                continue;
            };
            record.until = Some(pass.now);
            let key = (
                record.object.namespace.clone().unwrap_or_default(),
                record.object.name.clone(),
            );
            match c.pods.get(&key) {
                Some(p) => {
                    if let Some(node) = p.spec.node_name.as_deref() {
                        place(c, "Node", None, node, &mut record);
                        record.details.insert("outcome".into(), "bound".into());
                    } else {
                        record
                            .details
                            .insert("outcome".into(), "no longer waits on Karpenter".into());
                    }
                }
                None => {
                    record.details.insert("outcome".into(), "deleted".into());
                }
            }
            out.push(record);
        }
    }
}

/// The node, NodeClaim and pool an object is on or is, from the model.
fn place(c: &Cluster, kind: &str, namespace: Option<&str>, name: &str, r: &mut Record) {
    let mut node_name = None;
    let node = match kind {
        "Node" => c.nodes.get(name),
        // A pod Karpenter evicted is often gone by the time its event comes: the model
        // remembers where the last deleted pods were.
        "Pod" => {
            let ns = namespace.unwrap_or_default();
            node_name = c
                .pods
                .get(&(ns.to_string(), name.to_string()))
                .and_then(|p| p.spec.node_name.as_deref())
                .or_else(|| c.node_of_gone_pod(ns, name));
            node_name.and_then(|n| c.nodes.get(n))
        }
        "NodeClaim" => {
            let claim = c.nodeclaims.get(name);
            r.nodeclaim = Some(name.to_string());
            if let Some(cl) = claim {
                r.nodepool = cl
                    .metadata
                    .label(crate::karpenter::labels::NODEPOOL)
                    .map(str::to_string);
                r.node = cl.status.node_name.clone();
            }
            return;
        }
        "NodePool" => {
            r.nodepool = Some(name.to_string());
            return;
        }
        _ => None,
    };
    if let Some(n) = node {
        r.node = Some(n.metadata.name.clone());
        r.nodepool = n.pool().map(str::to_string);
        r.nodeclaim = c.nodeclaim_for_node(n).map(|cl| cl.metadata.name.clone());
    } else if kind == "Node" {
        r.node = Some(name.to_string());
    } else if let Some(n) = node_name {
        // The node is gone too: its claim is the one that named it.
        r.node = Some(n.to_string());
        r.nodeclaim = c
            .nodeclaims
            .values()
            .find(|cl| cl.status.node_name.as_deref() == Some(n))
            .map(|cl| cl.metadata.name.clone());
    }
}

/// A launch's type, zone and capacity type from the claim's labels, and its price from the
/// pass's catalogue where it has one.
fn launched(r: Record, cl: &NodeClaim, pass: &Pass) -> Record {
    use crate::karpenter::labels;
    let (t, zone, ct) = (
        cl.metadata.label(labels::INSTANCE_TYPE),
        cl.metadata.label(labels::ZONE),
        cl.metadata.label(labels::CAPACITY_TYPE),
    );
    let price = pass
        .catalog
        .as_ref()
        .zip(t)
        .and_then(|(cat, t)| cat.get(t))
        .and_then(|it| {
            it.offerings
                .iter()
                .find(|o| Some(o.zone.as_str()) == zone && Some(o.capacity_type.as_str()) == ct)?
                .price
        });
    r.detail("instanceType", t.unwrap_or_default())
        .detail("zone", zone.unwrap_or_default())
        .detail("capacityType", ct.unwrap_or_default())
        .detail(
            "pricePerHour",
            price.map(|p| format!("{p:.4}")).unwrap_or_default(),
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn real() -> (Cluster, DateTime<Utc>) {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/real/karpenter-v1.15.0/cluster.json"
        );
        let mut c = Cluster::default();
        crate::source::load_paths(&[path.into()], &mut c).unwrap();
        let now = c.captured_at.expect("the capture's clock");
        (c, now)
    }

    fn of<'a>(rows: &'a [Record], kind: Kind, what: &str) -> Vec<&'a Record> {
        rows.iter()
            .filter(|r| r.kind == kind && r.what == what)
            .collect()
    }

    #[test]
    fn a_pass_writes_each_thing_once_and_then_only_what_changed() {
        let (mut c, now) = real();
        let mut rec = Recorder::default();
        let pass = crate::analysis::run(&c, now);
        let rows = rec.observe(&c, &pass);
        // Every claim's creation, and its launch with the type, zone and capacity type.
        assert_eq!(
            of(&rows, Kind::NodeClaim, "created").len(),
            c.nodeclaims.len()
        );
        let launched = of(&rows, Kind::NodeClaim, "launched");
        assert!(!launched.is_empty());
        for r in &launched {
            for d in ["instanceType", "zone", "capacityType"] {
                assert!(r.details.contains_key(d), "{d}: {r:?}");
            }
            assert!(r.nodepool.is_some() && r.at <= now, "{r:?}");
        }
        // kwok's built-in catalogue prices the launch.
        assert!(launched
            .iter()
            .any(|r| r.details.contains_key("pricePerHour")));
        // Karpenter's decisions, with the node and pool they concern.
        let events: Vec<_> = rows.iter().filter(|r| r.kind == Kind::Event).collect();
        assert!(events
            .iter()
            .any(|r| r.what == "Unconsolidatable" && r.node.is_some()));
        assert!(!events.iter().any(|r| r.what == "Nominated"));
        // Every finding, once.
        assert_eq!(
            rows.iter().filter(|r| r.kind == Kind::Finding).count(),
            pass.report.findings.len()
        );
        // Nothing changed, nothing written.
        let again = crate::analysis::run(&c, now);
        assert!(rec.observe(&c, &again).is_empty());
        // A claim gone: its deletion, with its node and pool.
        let (name, claim) = c
            .nodeclaims
            .iter()
            .find(|(_, cl)| cl.status.node_name.is_some())
            .map(|(n, cl)| (n.clone(), cl.clone()))
            .unwrap();
        c.delete_nodeclaim(&name);
        let later = now + chrono::Duration::minutes(1);
        let pass = crate::analysis::run(&c, later);
        let rows = rec.observe(&c, &pass);
        let deleted = of(&rows, Kind::NodeClaim, "deleted");
        assert_eq!(deleted.len(), 1, "{rows:?}");
        assert_eq!(deleted[0].at, later);
        assert_eq!(deleted[0].node, claim.status.node_name);
        // Findings that went are closed at this pass.
        for r in rows
            .iter()
            .filter(|r| r.kind == Kind::Finding && r.until.is_some())
        {
            assert_eq!(r.until, Some(later));
        }
    }

    #[test]
    fn a_pods_wait_is_one_row_closed_with_where_it_went() {
        let (mut c, now) = real();
        let mut rec = Recorder::default();
        let pass = crate::analysis::run(&c, now);
        let rows = rec.observe(&c, &pass);
        let waits = of(&rows, Kind::Pod, "pending");
        assert_eq!(waits.len(), pass.pending.len());
        let Some(w) = waits.first() else {
            return;
        };
        assert!(!w.message.is_empty() && w.until.is_none());
        // The pod is bound to a node now.
        let key = (w.object.namespace.clone().unwrap(), w.object.name.clone());
        let node = c.nodes.keys().next().unwrap().clone();
        let mut p = c.pods[&key].clone();
        p.spec.node_name = Some(node.as_str().into());
        c.apply_pod(p);
        let later = now + chrono::Duration::seconds(30);
        let rows = rec.observe(&c, &crate::analysis::run(&c, later));
        let closed: Vec<_> = rows
            .iter()
            .filter(|r| r.kind == Kind::Pod && r.object.name == key.1)
            .collect();
        assert_eq!(closed.len(), 1, "{rows:?}");
        assert_eq!(closed[0].until, Some(later));
        assert_eq!(closed[0].node.as_deref(), Some(node.as_str()));
        assert_eq!(closed[0].details["outcome"], "bound");
        assert_eq!(closed[0].key, w.key, "the same row, closed");
    }

    #[test]
    fn an_eviction_seen_after_its_pod_went_is_placed_on_the_node_being_disrupted() {
        let (mut c, now) = real();
        // A claim Karpenter is disrupting, with a pod on its node.
        let (claim, node, pod) = c
            .nodeclaims
            .values()
            .find_map(|cl| {
                let node = cl.status.node_name.clone()?;
                let p = c.pods_on(&node).next()?;
                let key = (
                    p.metadata.namespace.as_deref()?.to_string(),
                    p.metadata.name.clone(),
                );
                Some((cl.clone(), node, key))
            })
            .expect("a claim with a pod");
        let mut disrupting = (*claim).clone();
        disrupting.status.conditions.push(
            serde_json::from_value(serde_json::json!({
                "type": "DisruptionReason", "status": "True", "reason": "Underutilized",
                "lastTransitionTime": now.to_rfc3339(),
            }))
            .unwrap(),
        );
        c.apply_nodeclaim(disrupting);
        let mut rec = Recorder::default();
        let rows = rec.observe(&c, &crate::analysis::run(&c, now));
        let step = of(&rows, Kind::NodeClaim, "disrupting");
        assert_eq!(step.len(), 1);
        assert_eq!(step[0].details["reason"], "Underutilized");
        // The pod goes, then Karpenter's event about it comes.
        c.delete_pod(&pod.0, &pod.1);
        c.apply_event(Event {
            id: "evicted-1".into(),
            regarding: crate::model::event::ObjectRef {
                kind: "Pod".into(),
                namespace: Some(pod.0.clone()),
                name: pod.1.clone(),
                uid: String::new(),
            },
            reason: "Evicted".into(),
            message: "Evicted pod: Underutilized".into(),
            type_: "Normal".into(),
            source: "karpenter".into(),
            first_seen: Some(now),
            last_seen: Some(now),
            count: 1,
        });
        let later = now + chrono::Duration::seconds(5);
        let rows = rec.observe(&c, &crate::analysis::run(&c, later));
        let evicted = of(&rows, Kind::Event, "Evicted");
        assert_eq!(evicted.len(), 1, "{rows:?}");
        assert_eq!(evicted[0].node.as_deref(), Some(node.as_str()));
        assert_eq!(
            evicted[0].nodeclaim.as_deref(),
            Some(claim.metadata.name.as_str())
        );
    }

    #[test]
    fn a_restart_carries_on_from_the_open_rows() {
        let (c, now) = real();
        let mut first = Recorder::default();
        let pass = crate::analysis::run(&c, now);
        let rows = first.observe(&c, &pass);
        let open: Vec<Record> = rows
            .iter()
            .filter(|r| matches!(r.kind, Kind::Finding | Kind::Pod))
            .cloned()
            .collect();
        let mut created: Vec<Record> = of(&rows, Kind::NodeClaim, "created")
            .into_iter()
            .cloned()
            .collect();
        // A claim the store had alive that is not in the cluster any more.
        let mut ghost = created[0].clone();
        ghost.key = "nodeclaim/ghost-uid/created".into();
        ghost.object.name = "ghost".into();
        ghost.nodeclaim = Some("ghost".into());
        created.push(ghost);
        let mut resumed = Recorder::resume(open, created);
        let rows = resumed.observe(&c, &pass);
        // The same findings and waits are not opened again; the ghost is closed.
        assert!(
            !rows
                .iter()
                .any(|r| matches!(r.kind, Kind::Finding | Kind::Pod)),
            "{rows:?}"
        );
        let deleted = of(&rows, Kind::NodeClaim, "deleted");
        assert_eq!(deleted.len(), 1);
        assert_eq!(deleted[0].nodeclaim.as_deref(), Some("ghost"));
        assert!(deleted[0].message.contains("not watching"));
    }
}
