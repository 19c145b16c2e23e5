//! Where a dump's objects go, whichever reader met them: each to its kind's projection
//! ([`ingest`]), a kelp List's own annotations to the model ([`list_annotations`]), an
//! object held as a tree ([`load_value`]), and what was skipped and why ([`LoadNotes`]).

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde::de::Deserializer;
use serde::Deserialize;

use super::kinds;
use crate::model::*;
use crate::source::error::{Error, Result};

/// The annotation on a `kelp snapshot` List that records when it was captured.
pub const CAPTURED_AT: &str = "kelp.dev/captured-at";

/// The annotation on a kelp dump's List that carries a Karpenter controller's `/metrics`
/// text (prices, offering availability), as `kelp demo --dump` writes it.
pub const KARPENTER_METRICS: &str = "kelp.dev/karpenter-metrics";

/// The annotation on a kelp dump's List that carries the instance-type catalogue kelp
/// judged with (`kelp snapshot --catalog`), as a catalogue file's JSON.
pub const CATALOG: &str = "kelp.dev/instance-type-catalog";

/// The annotation on a kelp dump's List that carries the history `kelp serve --state-dir`
/// kept (`kelp snapshot --history DIR`): its rows as a JSON array.
pub const HISTORY: &str = "kelp.dev/history";

/// Apply a kelp List's annotations (capture time, controller metrics) to the model.
pub(super) fn list_annotations(
    name: &str,
    get: impl Fn(&str) -> Option<String>,
    cluster: &mut Cluster,
) -> Result<()> {
    if let Some(at) = get(CAPTURED_AT) {
        cluster.captured_at = DateTime::parse_from_rfc3339(&at)
            .ok()
            .map(|t| t.with_timezone(&Utc));
    }
    if let Some(text) = get(KARPENTER_METRICS) {
        cluster.metrics = Some(crate::source::metrics::parse(
            &format!("{name} ({KARPENTER_METRICS})"),
            &text,
        )?);
    }
    if let Some(text) = get(CATALOG) {
        let catalog = crate::source::catalog::parse(&text).map_err(|message| Error::Parse {
            path: format!("{name} ({CATALOG})"),
            message,
        })?;
        cluster.catalog = Some(catalog.into());
    }
    if let Some(text) = get(HISTORY) {
        cluster.history = Some(text.into());
    }
    Ok(())
}

/// What loading skipped, to tell the user once (never an error).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct LoadNotes {
    /// Kinds kelp does not read, with counts.
    pub skipped: BTreeMap<String, usize>,
    /// Objects loaded.
    pub loaded: usize,
    /// Objects skipped because no API server would have stored them: the first few
    /// reasons (each names its object), and how many in all.
    pub invalid: Vec<String>,
    pub invalid_count: usize,
}

/// How many invalid objects are named one by one; the rest are counted.
const INVALID_NAMED: usize = 5;

impl LoadNotes {
    /// Objects met so far, loaded or skipped.
    pub(super) fn seen(&self) -> usize {
        self.loaded + self.skipped.values().sum::<usize>()
    }

    /// One line per invalid object skipped (the first few, then a count), for stderr:
    /// shown whatever the verbosity, as what they would have said is missing.
    pub fn invalid_lines(&self) -> Vec<String> {
        let mut lines: Vec<String> = self
            .invalid
            .iter()
            .map(|why| {
                format!(
                    "warning: skipped {why}: the API server refuses such an object, so this dump was not written by one; kelp does not judge on it"
                )
            })
            .collect();
        if self.invalid_count > self.invalid.len() {
            lines.push(format!(
                "warning: skipped {} more invalid object{}",
                self.invalid_count - self.invalid.len(),
                if self.invalid_count - self.invalid.len() == 1 {
                    ""
                } else {
                    "s"
                }
            ));
        }
        lines
    }

    fn note_invalid(&mut self, why: String) {
        self.invalid_count += 1;
        if self.invalid.len() < INVALID_NAMED {
            self.invalid.push(why);
        }
    }

    /// One line per skipped kind, for stderr.
    pub fn lines(&self) -> Vec<String> {
        self.skipped
            .iter()
            .map(|(kind, n)| {
                let why = if kind == "Secret" {
                    " (kelp never reads Secrets)"
                } else {
                    ""
                };
                format!(
                    "note: skipped {n} {kind} object{}{why}",
                    if *n == 1 { "" } else { "s" }
                )
            })
            .collect()
    }
}

/// Apply a kelp List's annotations from its `metadata`, held as a tree.
pub(super) fn list_metadata(
    name: &str,
    metadata: Option<&serde_json::Value>,
    cluster: &mut Cluster,
) -> Result<()> {
    let annotations = metadata.and_then(|m| m.get("annotations"));
    let get = |k: &str| {
        annotations
            .and_then(|a| a.get(k))
            .and_then(|v| v.as_str())
            .map(str::to_string)
    };
    list_annotations(name, get, cluster)
}

/// Load one object held as a tree (a YAML document or part), a List, or an array of them.
pub(super) fn load_value(
    name: &str,
    doc: usize,
    value: serde_json::Value,
    cluster: &mut Cluster,
    notes: &mut LoadNotes,
) -> Result<()> {
    let err = |kind: &str, e: &dyn std::fmt::Display| Error::Parse {
        path: name.to_string(),
        message: format!("document {doc}: {kind}: {e}"),
    };
    let mut value = match value {
        serde_json::Value::Null => return Ok(()),
        serde_json::Value::Array(items) => {
            for item in items {
                load_value(name, doc, item, cluster, notes)?;
            }
            return Ok(());
        }
        serde_json::Value::Object(map) => map,
        other => {
            return Err(err(
                "document",
                &format!("expected a Kubernetes object, found {other}"),
            ))
        }
    };
    let text = |k: &str, m: &serde_json::Map<String, serde_json::Value>| {
        m.get(k)
            .and_then(|v| v.as_str())
            .unwrap_or_default()
            .to_string()
    };
    let (kind, api_version) = (text("kind", &value), text("apiVersion", &value));
    if kind.ends_with("List") {
        list_metadata(name, value.get("metadata"), cluster)?;
        if let Some(serde_json::Value::Array(items)) = value.remove("items") {
            for item in items {
                load_value(name, doc, item, cluster, notes)?;
            }
        }
        return Ok(());
    }
    ingest(
        cluster,
        notes,
        &api_version,
        &kind,
        serde_json::Value::Object(value),
    )
    .map_err(|e| err(&kind, &e))
}

// ------------------------------------------------------------------ dispatch

/// Decodes one object into its kind's projection and applies it (see [`kinds::with_kind`]),
/// unless no API server would have stored it (then it is noted and skipped).
struct Decode<'c, 'de, D> {
    cluster: &'c mut Cluster,
    notes: &'c mut LoadNotes,
    de: D,
    input: std::marker::PhantomData<&'de ()>,
}

impl<'de, D: Deserializer<'de>> kinds::ForKind for Decode<'_, 'de, D> {
    type Output = Result<(), D::Error>;
    fn run<T: kinds::Kind>(self, r: &kinds::Resource) -> Self::Output {
        let mut o = T::deserialize(self.de)?;
        if let Some(why) = o.invalid() {
            self.notes.note_invalid(why);
            return Ok(());
        }
        o.fix(r);
        o.apply(self.cluster);
        Ok(())
    }
}

/// Route one object to its projection by apiVersion and kind (see [`kinds::in_dump`]).
pub(super) fn ingest<'de, D: Deserializer<'de>>(
    c: &mut Cluster,
    notes: &mut LoadNotes,
    api_version: &str,
    kind: &str,
    d: D,
) -> Result<(), D::Error> {
    let group = api_version.rsplit_once('/').map(|(g, _)| g).unwrap_or("");
    let karpenter_group = kinds::is_karpenter_group(group);
    if karpenter_group {
        c.api.served.insert(api_version.to_string());
    }
    let read = match kinds::in_dump(api_version, kind) {
        Some(r) => kinds::with_kind(
            &r,
            Decode {
                cluster: c,
                notes: &mut *notes,
                de: d,
                input: std::marker::PhantomData,
            },
        ),
        None if karpenter_group && kinds::is_legacy(kind) => {
            #[derive(Deserialize)]
            struct Named {
                #[serde(default)]
                metadata: Meta,
            }
            let n = Named::deserialize(d)?;
            c.api
                .legacy_objects
                .push(format!("{api_version} {kind} {}", n.metadata.name));
            Some(Ok(()))
        }
        None => None,
    };
    match read {
        Some(done) => done?,
        None => {
            let label = if kind.is_empty() {
                "untyped (no kind)".to_string()
            } else {
                kind.to_string()
            };
            *notes.skipped.entry(label).or_default() += 1;
            return Ok(());
        }
    }
    notes.loaded += 1;
    OBJECTS_READ.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    Ok(())
}

/// Objects loaded from dumps by this process so far, for a progress display to read while
/// a large dump streams in (a relaxed counter: one add per object).
pub static OBJECTS_READ: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
