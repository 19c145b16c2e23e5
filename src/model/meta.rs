//! Object metadata as kelp keeps it: identity, times, labels, owners, and only the
//! Karpenter annotations (everything else, like last-applied-configuration, is dropped
//! while parsing, so it never takes memory).

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Deserializer, Serialize};

use super::memo::null_default;
use super::shared::{no_entries, no_items, Shared};

/// Labels or annotations; the replicas of one workload share one copy.
pub type StringMap = Shared<BTreeMap<String, String>>;

/// Trimmed `metadata` of any object.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Meta {
    #[serde(default, deserialize_with = "null_default")]
    pub name: String,
    /// A shared string: thousands of objects name each namespace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<Shared<str>>,
    #[serde(
        default,
        deserialize_with = "null_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub uid: String,
    /// Where a watch resumes from. Read as a watch event arrives; the model's copy of a
    /// Pod, Node or NodeClaim leaves it empty (nothing reads it there).
    #[serde(
        default,
        deserialize_with = "null_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub resource_version: String,
    #[serde(
        default,
        deserialize_with = "timestamp",
        skip_serializing_if = "Option::is_none"
    )]
    pub creation_timestamp: Option<DateTime<Utc>>,
    #[serde(
        default,
        deserialize_with = "timestamp",
        skip_serializing_if = "Option::is_none"
    )]
    pub deletion_timestamp: Option<DateTime<Utc>>,
    #[serde(
        default,
        deserialize_with = "super::memo::read",
        skip_serializing_if = "no_entries"
    )]
    pub labels: StringMap,
    #[serde(
        default,
        deserialize_with = "karpenter_annotations",
        skip_serializing_if = "no_entries"
    )]
    pub annotations: StringMap,
    #[serde(
        default,
        deserialize_with = "super::memo::read",
        skip_serializing_if = "no_items"
    )]
    pub owner_references: Shared<Vec<OwnerRef>>,
}

/// An owner reference, reduced to what joins need.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct OwnerRef {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub api_version: String,
    #[serde(default)]
    pub kind: String,
    #[serde(default)]
    pub name: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub uid: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub controller: Option<bool>,
}

impl Meta {
    pub fn label(&self, key: &str) -> Option<&str> {
        self.labels.get(key).map(String::as_str)
    }
    pub fn annotation(&self, key: &str) -> Option<&str> {
        self.annotations.get(key).map(String::as_str)
    }
    /// Whether an owner is the built-in `kind` (`DaemonSet`, `StatefulSet`, `Node`, ...):
    /// its kind and, as Karpenter checks (v1.14.1 `pod.IsOwnedBy`), its group version, so
    /// an OpenKruise `apps.kruise.io` DaemonSet is not one. An owner without an apiVersion
    /// (a hand-written manifest; the API server requires one) is taken at its kind.
    pub fn owned_by(&self, kind: &str) -> bool {
        let builtin = match kind {
            "Node" | "ReplicationController" => "v1",
            "Job" | "CronJob" => "batch/v1",
            _ => "apps/v1",
        };
        self.owner_references
            .iter()
            .any(|o| o.kind == kind && (o.api_version.is_empty() || o.api_version == builtin))
    }
    /// `namespace/name`, or `name` for cluster-scoped objects.
    /// Its (namespace, name): how the model keys namespaced objects.
    pub fn obj_key(&self) -> (String, String) {
        (
            self.namespace.as_deref().unwrap_or_default().to_string(),
            self.name.clone(),
        )
    }

    pub fn key(&self) -> String {
        match &self.namespace {
            Some(ns) => format!("{ns}/{}", self.name),
            None => self.name.clone(),
        }
    }
}

/// Annotation prefixes kelp keeps; all others are dropped at parse time.
const KEPT_ANNOTATION_PREFIXES: &[&str] = &["karpenter.sh/", "karpenter.k8s.aws/", "kelp.dev/"];

/// A pod's deletion cost: part of its eviction cost, which decides whether Karpenter counts
/// its node as empty. Kept beside the prefixes above.
pub const POD_DELETION_COST: &str = "controller.kubernetes.io/pod-deletion-cost";

fn karpenter_annotations<'de, D: Deserializer<'de>>(d: D) -> Result<StringMap, D::Error> {
    let all: Option<BTreeMap<String, String>> = Option::deserialize(d)?;
    Ok(Shared::new(
        all.unwrap_or_default()
            .into_iter()
            .filter(|(k, _)| {
                k == POD_DELETION_COST || KEPT_ANNOTATION_PREFIXES.iter().any(|p| k.starts_with(p))
            })
            .collect(),
    ))
}

/// An optional timestamp (RFC 3339), read as chrono reads it, with a fast path for the
/// forms the API server writes (`2026-11-21T10:00:00Z`, and with a fraction of a second
/// before the `Z`): a dump holds several per object, and chrono's general parser was a
/// twentieth of reading one. Anything else, and its errors, are chrono's own.
pub fn timestamp<'de, D: Deserializer<'de>>(d: D) -> Result<Option<DateTime<Utc>>, D::Error> {
    struct Stamp;
    impl<'de> serde::de::Visitor<'de> for Stamp {
        type Value = Option<DateTime<Utc>>;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("an RFC 3339 timestamp")
        }
        fn visit_none<E>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_unit<E>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
            d.deserialize_str(self)
        }
        fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<Self::Value, E> {
            if let Some(t) = utc_stamp(s.as_bytes()) {
                return Ok(Some(t));
            }
            s.parse::<DateTime<chrono::FixedOffset>>()
                .map(|t| Some(t.with_timezone(&Utc)))
                .map_err(E::custom)
        }
    }
    d.deserialize_option(Stamp)
}

/// `YYYY-MM-DDTHH:MM:SS[.fraction]Z`, or None for any other text (chrono then reads it).
fn utc_stamp(b: &[u8]) -> Option<DateTime<Utc>> {
    fn num(b: &[u8]) -> Option<u32> {
        b.iter().try_fold(0u32, |n, c| {
            c.is_ascii_digit().then(|| n * 10 + u32::from(c - b'0'))
        })
    }
    if b.len() < 20 || b[b.len() - 1] != b'Z' {
        return None;
    }
    let seps = [(4, b'-'), (7, b'-'), (10, b'T'), (13, b':'), (16, b':')];
    if seps.iter().any(|&(i, c)| b[i] != c) {
        return None;
    }
    let nanos = match &b[19..b.len() - 1] {
        [] => 0,
        [b'.', digits @ ..] if (1..=9).contains(&digits.len()) => {
            num(digits)? * 10u32.pow(9 - digits.len() as u32)
        }
        _ => return None,
    };
    let date =
        chrono::NaiveDate::from_ymd_opt(num(&b[0..4])? as i32, num(&b[5..7])?, num(&b[8..10])?)?;
    let time = chrono::NaiveTime::from_hms_nano_opt(
        num(&b[11..13])?,
        num(&b[14..16])?,
        num(&b[17..19])?,
        nanos,
    )?;
    Some(date.and_time(time).and_utc())
}

/// A status condition, as every kind here writes it.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Condition {
    /// Type and status are a few words that every object repeats: shared strings.
    #[serde(rename = "type", default)]
    pub type_: Shared<str>,
    #[serde(default)]
    pub status: Shared<str>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    #[serde(
        default,
        deserialize_with = "timestamp",
        skip_serializing_if = "Option::is_none"
    )]
    pub last_transition_time: Option<DateTime<Utc>>,
}

impl super::shared::Compact for OwnerRef {
    fn compact(&mut self) {}
}

impl super::shared::Fingerprint for Vec<OwnerRef> {
    fn fingerprint(&self, h: &mut super::shared::DefaultHasher) {
        std::hash::Hash::hash(self, h)
    }
}

impl super::shared::Compact for Condition {
    fn compact(&mut self) {}
}

impl Condition {
    pub fn is_true(&self) -> bool {
        self.status == "True"
    }
}

/// Look a condition up by type.
pub fn condition<'a>(conditions: &'a [Condition], type_: &str) -> Option<&'a Condition> {
    conditions.iter().find(|c| c.type_ == type_)
}

/// The first condition of each of `types`, in one walk over `conditions` (as
/// [`condition`] for each).
pub fn conditions_of<'a, const N: usize>(
    conditions: &'a [Condition],
    types: [&str; N],
) -> [Option<&'a Condition>; N] {
    let mut found = [None; N];
    for c in conditions {
        if let Some(i) = types.iter().position(|t| c.type_ == *t) {
            found[i].get_or_insert(c);
        }
    }
    found
}

/// True when the condition exists with status True.
pub fn is_true(conditions: &[Condition], type_: &str) -> bool {
    condition(conditions, type_).is_some_and(Condition::is_true)
}

#[cfg(test)]
mod condition_tests {
    use super::*;

    /// The fast path reads what chrono reads, and leaves chrono whatever it does not.
    #[test]
    fn a_timestamp_reads_as_chrono_reads_it() {
        let texts = [
            "2026-11-21T10:00:00Z",
            "2026-11-21T10:00:00.5Z",
            "2026-11-21T10:00:00.000123Z",
            "2026-11-21T10:00:00.123456789Z",
            "2026-11-21T10:00:00.1234567891Z",
            "2026-11-21T10:00:00+02:00",
            "2026-11-21t10:00:00z",
            "2026-11-21 10:00:00Z",
            "2024-02-29T23:59:59Z",
            "2026-02-29T00:00:00Z",
            "2026-11-21T24:00:00Z",
            "2026-11-21T10:00:60Z",
            "2026-13-01T00:00:00Z",
            "2026-11-21T10:00:00.Z",
            "2026-11-21T10:00:0xZ",
            "+2026-11-21T10:00:00Z",
            "",
        ];
        for text in texts {
            let json = serde_json::Value::String(text.into());
            let ours = timestamp(&json).map_err(|e| e.to_string());
            let chrono = Option::<DateTime<Utc>>::deserialize(&json).map_err(|e| e.to_string());
            assert_eq!(ours, chrono, "{text:?}");
        }
        assert!(
            utc_stamp(b"2026-11-21T10:00:00.5Z").is_some(),
            "the fast path runs"
        );
        assert_eq!(timestamp(&serde_json::Value::Null).unwrap(), None);
    }

    #[test]
    fn conditions_of_finds_each_first_in_one_walk() {
        let conds: Vec<Condition> = serde_json::from_str(
            r#"[{"type":"Launched","status":"True"},{"type":"Ready","status":"False"},
                {"type":"Launched","status":"False"},{"type":"Initialized","status":"Unknown"}]"#,
        )
        .unwrap();
        let [launched, registered, initialized] =
            conditions_of(&conds, ["Launched", "Registered", "Initialized"]);
        assert_eq!(launched.map(|c| &*c.status), Some("True"), "the first one");
        assert!(registered.is_none());
        assert_eq!(initialized.map(|c| &*c.status), Some("Unknown"));
        for t in ["Launched", "Registered", "Initialized", "Ready"] {
            let [one] = conditions_of(&conds, [t]);
            assert_eq!(
                one.map(|c| c as *const Condition),
                condition(&conds, t).map(|c| c as *const Condition)
            );
        }
    }
}
