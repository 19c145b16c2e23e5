//! The findings contract ([docs/findings.md](../docs/findings.md), and
//! docs/report.schema.json for the JSON) as types: codes, severities,
//! the object a finding is about, and the report `kelp doctor -o json` prints.

use std::fmt;

use chrono::{DateTime, SecondsFormat, Utc};
use serde::{Serialize, Serializer};

use crate::model::ObjectKind;

/// How bad a finding is. Ordered: `Info < Warning < Critical`.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    serde::Deserialize,
    clap::ValueEnum,
)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Info,
    Warning,
    Critical,
}

impl Severity {
    /// Its name, as the report and the page write it.
    pub const fn as_str(self) -> &'static str {
        match self {
            Severity::Info => "info",
            Severity::Warning => "warning",
            Severity::Critical => "critical",
        }
    }
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

macro_rules! codes {
    ($($variant:ident => $s:literal, $meaning:literal;)*) => {
        /// Stable finding codes. Add freely; never rename.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum Code { $($variant),* }
        impl Code {
            pub const ALL: &'static [Code] = &[$(Code::$variant),*];
            pub fn as_str(self) -> &'static str { match self { $(Code::$variant => $s),* } }
            pub fn parse(s: &str) -> Option<Code> { match s { $($s => Some(Code::$variant),)* _ => None } }
            /// What the finding says, in one line (docs/findings.md lists them).
            pub fn meaning(self) -> &'static str { match self { $(Code::$variant => $meaning),* } }
        }
    };
}

codes! {
    PodUnschedulable => "pod-unschedulable", "a pod waits for a node: each NodePool's verdict on it, and why";
    PodNominatedNotBound => "pod-nominated-not-bound", "Karpenter nominated a pod to a NodeClaim, and it is still not bound to that node";
    NoNodepoolReady => "no-nodepool-ready", "Karpenter is installed but no NodePool is Ready, so it provisions nothing";
    NodepoolNotReady => "nodepool-not-ready", "a NodePool is not Ready, so Karpenter launches nothing from it; with its node class's failing condition";
    NodepoolLimitsExhausted => "nodepool-limits-exhausted", "a NodePool's limits leave less than any instance type it admits";
    NodepoolLimitsNear => "nodepool-limits-near", "a NodePool's usage is near one of its limits";
    NodepoolNoInstanceTypes => "nodepool-no-instance-types", "no instance type meets a NodePool's requirements with an available offering";
    NodepoolRegistrationUnhealthy => "nodepool-registration-unhealthy", "most of a NodePool's recent NodeClaims failed to register (NodeRegistrationHealthy is False)";
    NodeclaimLaunchFailed => "nodeclaim-launch-failed", "the cloud provider refused to launch a NodeClaim";
    NodeclaimNotRegistered => "nodeclaim-not-registered", "a launched NodeClaim's node has not joined the cluster in time";
    NodeclaimNotInitialized => "nodeclaim-not-initialized", "a registered node has not become Ready, or kept a startup taint, in time";
    NodeNotReady => "node-not-ready", "a node Karpenter manages is not Ready";
    InsufficientCapacity => "insufficient-capacity", "offerings the cloud has no capacity for, from Karpenter's events and the provider's metrics";
    DaemonsetPodPending => "daemonset-pod-pending", "a DaemonSet pod cannot fit on a node Karpenter launched";
    NodeclaimDrifted => "nodeclaim-drifted", "a NodeClaim is Drifted, with what its reason means and whether Karpenter can replace it";
    DisruptionBlocked => "disruption-blocked", "something holds a node Karpenter wants to disrupt: a do-not-disrupt pod or node, a PDB, a budget";
    BudgetBlocking => "budget-blocking", "a NodePool's disruption budgets allow none now while nodes wait to be disrupted";
    EmptyNodeNotReaped => "empty-node-not-reaped", "a node with only DaemonSet pods stays well past its pool's consolidateAfter";
    NodeExpiredNotReplaced => "node-expired-not-replaced", "a node past its expireAfter is still there, and what holds its drain";
    ConsolidationBlocked => "consolidation-blocked", "a node Karpenter could consolidate, and why it does not";
    NodeRepairBlocked => "node-repair-blocked", "node repair stops: more of a pool's nodes are unhealthy than its breaker allows";
    SpotInterruption => "spot-interruption", "spot interruptions of a NodePool's nodes in the last 24 hours";
    DaemonsetNodepoolMismatch => "daemonset-nodepool-mismatch", "a DaemonSet's pods run on a pool's nodes that its scheduling terms exclude, so Karpenter leaves them out of the pool's overhead";
    KarpenterNotInstalled => "karpenter-not-installed", "Karpenter's CRDs or controller are missing";
    KarpenterApiOutdated => "karpenter-api-outdated", "Karpenter's CRDs do not serve the karpenter.sh/v1 API kelp reads (a release before v1.0)";
    KarpenterOnManagedNode => "karpenter-on-managed-node", "Karpenter's controller runs on a node it manages itself";
    KarpenterVersionUntested => "karpenter-version-untested", "the Karpenter release is outside the window kelp is tested against";
    HistoryNotKept => "history-not-kept", "kelp serve cannot write its history";
}

impl fmt::Display for Code {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for Code {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

/// The object a finding is about; `namespace` is omitted for cluster-scoped kinds.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct ObjectRef {
    pub kind: ObjectKind,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    pub name: String,
}

impl ObjectRef {
    pub fn cluster(kind: ObjectKind, name: &str) -> Self {
        ObjectRef {
            kind,
            namespace: None,
            name: name.into(),
        }
    }
    pub fn namespaced(kind: ObjectKind, namespace: &str, name: &str) -> Self {
        ObjectRef {
            kind,
            namespace: Some(namespace.into()),
            name: name.into(),
        }
    }
    /// From trimmed metadata.
    pub fn of(kind: ObjectKind, meta: &crate::model::Meta) -> Self {
        ObjectRef {
            kind,
            namespace: meta.namespace.as_deref().map(str::to_string),
            name: meta.name.clone(),
        }
    }
}

impl fmt::Display for ObjectRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.namespace {
            Some(ns) => write!(f, "{}/{}/{}", self.kind, ns, self.name),
            None => write!(f, "{}/{}", self.kind, self.name),
        }
    }
}

/// Serialize times as `2026-11-21T10:00:00Z`.
pub fn rfc3339<S: Serializer>(t: &DateTime<Utc>, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&t.to_rfc3339_opts(SecondsFormat::Secs, true))
}

fn rfc3339_opt<S: Serializer>(t: &Option<DateTime<Utc>>, s: S) -> Result<S::Ok, S::Error> {
    match t {
        Some(t) => rfc3339(t, s),
        None => s.serialize_none(),
    }
}

/// A finding's `details`: any serialisable value, shared rather than copied, and only
/// turned into JSON when the report is written (a pending pod's per-pool breakdown is
/// large, and most passes, e.g. a metrics scrape, never print it).
#[derive(Clone)]
pub struct Details(std::sync::Arc<dyn DetailValue>);

/// A details value: serialisable, and readable as its own type (the metrics read a pending
/// pod's diagnosis without turning it into JSON).
trait DetailValue: Send + Sync {
    fn erased(&self) -> &dyn erased_serde::Serialize;
    fn as_any(&self) -> &dyn std::any::Any;
}

impl<T: Serialize + Send + Sync + 'static> DetailValue for T {
    fn erased(&self) -> &dyn erased_serde::Serialize {
        self
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

impl Details {
    pub fn new<T: Serialize + Send + Sync + 'static>(value: T) -> Self {
        Details(std::sync::Arc::new(value))
    }
    pub fn shared<T: Serialize + Send + Sync + 'static>(value: std::sync::Arc<T>) -> Self {
        Details(value)
    }
    /// No details: an empty JSON object, one value shared by every finding without any
    /// (most are given theirs at once, so none is allocated only to be dropped).
    pub fn empty() -> Self {
        static EMPTY: std::sync::LazyLock<Details> = std::sync::LazyLock::new(|| {
            Details::new(serde_json::Value::Object(Default::default()))
        });
        EMPTY.clone()
    }
    /// The details as a JSON value.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::to_value(self).unwrap_or_default()
    }
    /// The details as the type they were attached as, if they are a `T`.
    pub fn downcast_ref<T: 'static>(&self) -> Option<&T> {
        self.0.as_any().downcast_ref::<T>()
    }
}

impl Serialize for Details {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        erased_serde::serialize(self.0.erased(), s)
    }
}

impl fmt::Debug for Details {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.to_json())
    }
}

/// One finding.
#[derive(Debug, Clone, Serialize)]
pub struct Finding {
    pub code: Code,
    pub severity: Severity,
    pub object: ObjectRef,
    pub nodepool: Option<String>,
    pub message: String,
    #[serde(serialize_with = "rfc3339_opt")]
    pub since: Option<DateTime<Utc>>,
    pub details: Details,
}

impl Finding {
    pub fn new(
        code: Code,
        severity: Severity,
        object: ObjectRef,
        message: impl Into<String>,
    ) -> Self {
        Finding {
            code,
            severity,
            object,
            nodepool: None,
            message: message.into(),
            since: None,
            details: Details::empty(),
        }
    }
    pub fn pool(mut self, pool: Option<&str>) -> Self {
        self.nodepool = pool.map(str::to_string);
        self
    }
    pub fn since(mut self, t: Option<DateTime<Utc>>) -> Self {
        self.since = t;
        self
    }
    /// Attach typed details; they must serialize to a JSON object.
    pub fn details<T: Serialize + Send + Sync + 'static>(mut self, d: T) -> Self {
        self.details = Details::new(d);
        self
    }
    /// Attach details shared with another view (no copy).
    pub fn shared_details<T: Serialize + Send + Sync + 'static>(
        mut self,
        d: std::sync::Arc<T>,
    ) -> Self {
        self.details = Details::shared(d);
        self
    }
}

/// What kelp knows of the Karpenter install.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct KarpenterInfo {
    pub installed: bool,
    pub api_versions: Vec<String>,
    /// The release the controller runs, as far as the cluster says (None: it says nothing).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version: Option<crate::karpenter::version::Detected>,
}

/// The whole `kelp doctor` report.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    #[serde(serialize_with = "rfc3339")]
    pub generated_at: DateTime<Utc>,
    pub karpenter: KarpenterInfo,
    /// Shared: a serve pass hands on the findings of objects that did not change (their
    /// words included) from the pass before (the analysis's kept findings).
    pub findings: Vec<std::sync::Arc<Finding>>,
}

impl Report {
    /// The worst severity present.
    pub fn worst(&self) -> Option<Severity> {
        self.findings.iter().map(|f| f.severity).max()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_round_trip_and_are_unique() {
        let mut seen = std::collections::BTreeSet::new();
        for c in Code::ALL {
            assert_eq!(Code::parse(c.as_str()), Some(*c));
            assert!(seen.insert(c.as_str()));
        }
    }

    #[test]
    fn the_contract_lists_every_code_and_no_other() {
        // docs/report.schema.json names the codes in the finding's `code` enum.
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/report.schema.json");
        let schema: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        let mut listed: Vec<&str> = schema["$defs"]["finding"]["properties"]["code"]["enum"]
            .as_array()
            .expect("the schema's finding code enum")
            .iter()
            .map(|c| c.as_str().unwrap())
            .collect();
        let mut codes: Vec<&str> = Code::ALL.iter().map(|c| c.as_str()).collect();
        listed.sort_unstable();
        codes.sort_unstable();
        assert_eq!(listed, codes, "docs/report.schema.json against Code::ALL");
    }

    #[test]
    fn finding_json_follows_the_contract() {
        let t = DateTime::parse_from_rfc3339("2026-11-21T09:46:00Z")
            .unwrap()
            .with_timezone(&Utc);
        let f = Finding::new(
            Code::PodUnschedulable,
            Severity::Critical,
            ObjectRef::namespaced(ObjectKind::Pod, "ml", "trainer-0"),
            "m",
        )
        .since(Some(t));
        let v = serde_json::to_value(&f).unwrap();
        assert_eq!(
            v,
            serde_json::json!({"code": "pod-unschedulable", "severity": "critical",
                "object": {"kind": "Pod", "namespace": "ml", "name": "trainer-0"},
                "nodepool": null, "message": "m", "since": "2026-11-21T09:46:00Z", "details": {}})
        );
        let node = serde_json::to_value(ObjectRef::cluster(ObjectKind::Node, "n1")).unwrap();
        assert_eq!(node, serde_json::json!({"kind": "Node", "name": "n1"}));
    }
}
