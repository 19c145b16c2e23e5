//! Events, normalised from both core/v1 and events.k8s.io/v1 into one shape. Only
//! events kelp can use are kept: those Karpenter writes, and the kube-scheduler's
//! FailedScheduling (evidence beside Karpenter's own).

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::memo::null_default;
use super::meta::Meta;
use crate::karpenter::events::Reason;

/// The component name Karpenter's event recorder uses.
pub const KARPENTER: &str = "karpenter";

#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Event {
    /// The event's own identity (uid, or namespace/name when a dump has no uid).
    pub id: String,
    pub regarding: ObjectRef,
    pub reason: String,
    pub message: String,
    #[serde(rename = "type")]
    pub type_: String,
    /// The reporting component: `karpenter`, `default-scheduler`, ...
    pub source: String,
    pub first_seen: Option<DateTime<Utc>>,
    pub last_seen: Option<DateTime<Utc>>,
    pub count: i32,
}

impl Event {
    pub fn from_karpenter(&self) -> bool {
        self.source == KARPENTER
    }
    /// Whether kelp keeps this event at all.
    pub fn is_relevant(&self) -> bool {
        self.from_karpenter() || self.is(Reason::FailedScheduling)
    }
    /// Whether its reason is `r`.
    pub fn is(&self, r: Reason) -> bool {
        self.reason == r
    }
    /// Whether its reason is one of `rs`.
    pub fn is_any(&self, rs: &[Reason]) -> bool {
        rs.iter().any(|r| self.reason == *r)
    }
    /// Whether it is about an object of this kind.
    pub fn about(&self, kind: super::ObjectKind) -> bool {
        self.regarding.kind == kind.as_str()
    }
    /// The time the event was last seen, falling back to its first sighting.
    pub fn seen(&self) -> Option<DateTime<Utc>> {
        self.last_seen.or(self.first_seen)
    }
}

/// A reference to the object an event is about.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ObjectRef {
    #[serde(default)]
    pub kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    #[serde(default)]
    pub name: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub uid: String,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Source {
    #[serde(default)]
    component: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Series {
    #[serde(default)]
    count: Option<i32>,
    #[serde(default, deserialize_with = "super::meta::timestamp")]
    last_observed_time: Option<DateTime<Utc>>,
}

/// core/v1 Event.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CoreEvent {
    #[serde(default)]
    pub(crate) metadata: Meta,
    #[serde(default)]
    involved_object: ObjectRef,
    #[serde(default, deserialize_with = "null_default")]
    reason: String,
    #[serde(default, deserialize_with = "null_default")]
    message: String,
    #[serde(default, rename = "type", deserialize_with = "null_default")]
    type_: String,
    #[serde(default)]
    source: Option<Source>,
    #[serde(default)]
    reporting_component: Option<String>,
    #[serde(default, deserialize_with = "super::meta::timestamp")]
    first_timestamp: Option<DateTime<Utc>>,
    #[serde(default, deserialize_with = "super::meta::timestamp")]
    last_timestamp: Option<DateTime<Utc>>,
    #[serde(default, deserialize_with = "super::meta::timestamp")]
    event_time: Option<DateTime<Utc>>,
    #[serde(default)]
    count: Option<i32>,
    #[serde(default)]
    series: Option<Series>,
}

/// events.k8s.io/v1 Event.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EventsV1Event {
    #[serde(default)]
    pub(crate) metadata: Meta,
    #[serde(default)]
    regarding: ObjectRef,
    #[serde(default, deserialize_with = "null_default")]
    reason: String,
    #[serde(default, deserialize_with = "null_default")]
    note: String,
    #[serde(default, rename = "type", deserialize_with = "null_default")]
    type_: String,
    #[serde(default)]
    reporting_controller: Option<String>,
    #[serde(default)]
    deprecated_source: Option<Source>,
    #[serde(default, deserialize_with = "super::meta::timestamp")]
    event_time: Option<DateTime<Utc>>,
    #[serde(default, deserialize_with = "super::meta::timestamp")]
    deprecated_first_timestamp: Option<DateTime<Utc>>,
    #[serde(default, deserialize_with = "super::meta::timestamp")]
    deprecated_last_timestamp: Option<DateTime<Utc>>,
    #[serde(default)]
    deprecated_count: Option<i32>,
    #[serde(default)]
    series: Option<Series>,
}

fn id(meta: &Meta) -> String {
    if meta.uid.is_empty() {
        meta.key()
    } else {
        meta.uid.clone()
    }
}

fn nonempty(s: Option<String>) -> Option<String> {
    s.filter(|s| !s.is_empty())
}

impl CoreEvent {
    /// The normalised event, leaving this one as it is.
    pub fn clone_event(&self) -> Event {
        Event {
            id: id(&self.metadata),
            regarding: self.involved_object.clone(),
            ..Event::default()
        }
    }
}

impl EventsV1Event {
    /// The id of the normalised event.
    pub fn id(&self) -> String {
        id(&self.metadata)
    }
}

impl From<CoreEvent> for Event {
    fn from(e: CoreEvent) -> Self {
        let (series_count, series_last) = e
            .series
            .map(|s| (s.count, s.last_observed_time))
            .unwrap_or_default();
        let first = e
            .first_timestamp
            .or(e.event_time)
            .or(e.metadata.creation_timestamp);
        Event {
            id: id(&e.metadata),
            regarding: e.involved_object,
            reason: e.reason,
            message: e.message,
            type_: e.type_,
            source: nonempty(e.source.and_then(|s| s.component))
                .or(nonempty(e.reporting_component))
                .unwrap_or_default(),
            first_seen: first,
            last_seen: series_last.or(e.last_timestamp).or(first),
            count: series_count.or(e.count).unwrap_or(1),
        }
    }
}

impl From<EventsV1Event> for Event {
    fn from(e: EventsV1Event) -> Self {
        let (series_count, series_last) = e
            .series
            .map(|s| (s.count, s.last_observed_time))
            .unwrap_or_default();
        let first = e
            .deprecated_first_timestamp
            .or(e.event_time)
            .or(e.metadata.creation_timestamp);
        Event {
            id: id(&e.metadata),
            regarding: e.regarding,
            reason: e.reason,
            message: e.note,
            type_: e.type_,
            source: nonempty(e.deprecated_source.and_then(|s| s.component))
                .or(nonempty(e.reporting_controller))
                .unwrap_or_default(),
            first_seen: first,
            last_seen: series_last.or(e.deprecated_last_timestamp).or(first),
            count: series_count.or(e.deprecated_count).unwrap_or(1),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn core_and_events_v1_normalise_to_the_same_event() {
        let core: CoreEvent = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "trainer-0.1", "namespace": "ml", "uid": "e1"},
            "involvedObject": {"kind": "Pod", "namespace": "ml", "name": "trainer-0", "uid": "p1"},
            "reason": "FailedScheduling", "message": "Failed to schedule pod, x", "type": "Warning",
            "source": {"component": "karpenter"},
            "firstTimestamp": "2026-11-21T09:46:00Z", "lastTimestamp": "2026-11-21T09:58:00Z", "count": 4
        }))
        .unwrap();
        let v1: EventsV1Event = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "trainer-0.1", "namespace": "ml", "uid": "e1"},
            "regarding": {"kind": "Pod", "namespace": "ml", "name": "trainer-0", "uid": "p1"},
            "reason": "FailedScheduling", "note": "Failed to schedule pod, x", "type": "Warning",
            "reportingController": "karpenter",
            "deprecatedFirstTimestamp": "2026-11-21T09:46:00Z", "deprecatedLastTimestamp": "2026-11-21T09:58:00Z",
            "deprecatedCount": 4
        }))
        .unwrap();
        let (a, b) = (Event::from(core), Event::from(v1));
        assert_eq!(a, b);
        assert!(a.from_karpenter() && a.is_relevant());
        assert_eq!(a.count, 4);
        assert_eq!(a.seen().unwrap().to_rfc3339(), "2026-11-21T09:58:00+00:00");
    }

    #[test]
    fn series_and_event_time_stand_in_for_missing_timestamps() {
        let e: CoreEvent = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "n.1", "namespace": "default"},
            "involvedObject": {"kind": "Node", "name": "n"},
            "reason": "DisruptionBlocked", "message": "m", "type": "Normal",
            "reportingComponent": "karpenter", "eventTime": "2026-11-21T09:00:00.000000Z",
            "series": {"count": 7, "lastObservedTime": "2026-11-21T09:59:00.000000Z"},
            "lastTimestamp": null, "firstTimestamp": null
        }))
        .unwrap();
        let e = Event::from(e);
        assert_eq!(e.id, "default/n.1");
        assert_eq!(e.source, "karpenter");
        assert_eq!(e.count, 7);
        assert_eq!(
            e.last_seen.unwrap().to_rfc3339(),
            "2026-11-21T09:59:00+00:00"
        );
    }
}
