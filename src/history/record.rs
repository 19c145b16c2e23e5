//! One row of kelp's history: something Karpenter did or decided, or kelp found, about
//! one object, at one time; what makes it one row (its key), so that a later sighting of
//! the same thing (an event's later count, an episode's end) updates it in place.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// What a row is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// A step of a NodeClaim's life: created, launched, registered, initialized, drifted,
    /// disrupting, deleting, deleted.
    NodeClaim,
    /// One of Karpenter's events (its decisions, refusals, launch failures, evictions),
    /// deduplicated as Karpenter writes it: a later count updates the row.
    Event,
    /// One of kelp's own findings, from when it appeared to when it resolved.
    Finding,
    /// A pod's wait for a node, from when it was first seen pending to when it was bound.
    Pod,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::NodeClaim => "nodeclaim",
            Kind::Event => "event",
            Kind::Finding => "finding",
            Kind::Pod => "pod",
        }
    }

    pub fn parse(s: &str) -> Option<Kind> {
        [Kind::NodeClaim, Kind::Event, Kind::Finding, Kind::Pod]
            .into_iter()
            .find(|k| k.as_str() == s)
    }
}

/// The object a row is about, as Kubernetes names it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Subject {
    pub kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    pub name: String,
}

/// One row.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Record {
    /// What makes it one row: the same key again updates it (never shown).
    #[serde(skip)]
    pub key: String,
    /// When it happened, or began.
    pub at: DateTime<Utc>,
    /// When it ended (an episode, a finding) or was last seen (an event), where it has.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub until: Option<DateTime<Utc>>,
    pub kind: Kind,
    /// The step, the event's reason, `appeared`, `pending`.
    pub what: String,
    pub object: Subject,
    /// The node, NodeClaim and NodePool it concerns, where known: what `kelp history node`
    /// and its siblings look rows up by.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nodeclaim: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nodepool: Option<String>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
    /// What else is known: an instance type, zone, capacity type and price at launch, an
    /// event's count, a finding's code and severity, a disruption's reason.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub details: BTreeMap<String, String>,
}

impl Record {
    pub fn new(key: String, at: DateTime<Utc>, kind: Kind, what: &str, object: Subject) -> Self {
        Record {
            key,
            at,
            until: None,
            kind,
            what: what.to_string(),
            object,
            node: None,
            nodeclaim: None,
            nodepool: None,
            message: String::new(),
            details: BTreeMap::new(),
        }
    }

    pub fn detail(mut self, key: &str, value: impl Into<String>) -> Self {
        let value = value.into();
        if !value.is_empty() {
            self.details.insert(key.to_string(), value);
        }
        self
    }

    /// One line, for a terminal: `2026-12-07T10:00:00Z  NodeClaim/x  launched  ...`.
    pub fn line(&self) -> String {
        let object = match &self.object.namespace {
            Some(ns) => format!("{}/{}/{}", self.object.kind, ns, self.object.name),
            None => format!("{}/{}", self.object.kind, self.object.name),
        };
        let mut out = format!(
            "{}  {}  {}",
            self.at.format("%Y-%m-%dT%H:%M:%SZ"),
            object,
            self.what
        );
        if let Some(until) = self.until.filter(|u| *u != self.at) {
            out.push_str(&format!(" (until {})", until.format("%Y-%m-%dT%H:%M:%SZ")));
        }
        // A finding's code and object are its `what` and object already.
        let shown =
            |k: &&String| !(self.kind == Kind::Finding && matches!(k.as_str(), "code" | "object"));
        if self.details.keys().any(|k| shown(&k)) {
            let details: Vec<String> = self
                .details
                .iter()
                .filter(|(k, _)| shown(k))
                .map(|(k, v)| format!("{k}={v}"))
                .collect();
            out.push_str(&format!("  [{}]", details.join(" ")));
        }
        if !self.message.is_empty() {
            out.push_str(&format!(": {}", self.message));
        }
        out
    }
}

/// A stable 64-bit hash (FNV-1a) of a text, for a key.
pub fn fnv(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}
