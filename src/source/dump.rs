//! Dumps as `kubectl get ... -o yaml|json` writes them: a `v1/List`, a multi-document
//! YAML stream, JSON objects (one or several), or folders of such files, or stdin (`-`).
//!
//! JSON is parsed straight into the trimmed projections (each item is borrowed from the
//! input, its kind peeked, then deserialised once into its projection), so a large dump
//! costs little more memory than the file itself. YAML goes through a generic value first.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use serde::de::{DeserializeOwned, Deserializer};
use serde::Deserialize;
use serde_json::value::RawValue;

use crate::error::{Error, Result};
use crate::karpenter::labels::{AWS_GROUP, GROUP, KWOK_GROUP};
use crate::model::event::{CoreEvent, EventsV1Event};
use crate::model::*;

/// The annotation on a `kelp snapshot` List that records when it was captured.
pub const CAPTURED_AT: &str = "kelp.dev/captured-at";

/// The annotation on a kelp dump's List that carries a Karpenter controller's `/metrics`
/// text (prices, offering availability), as `kelp demo --dump` writes it.
pub const KARPENTER_METRICS: &str = "kelp.dev/karpenter-metrics";

/// Apply a kelp List's annotations (capture time, controller metrics) to the model.
fn list_annotations(
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
    Ok(())
}

/// A `v1/List` of `items` as `kelp snapshot` writes it, stamped with its capture time.
pub fn snapshot_list(
    items: Vec<serde_json::Value>,
    captured_at: DateTime<Utc>,
) -> serde_json::Value {
    let at = captured_at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    serde_json::json!({
        "apiVersion": "v1",
        "kind": "List",
        "metadata": {"annotations": {CAPTURED_AT: at}},
        "items": items,
    })
}

/// What loading skipped, to tell the user once (never an error).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct LoadNotes {
    /// Kinds kelp does not read, with counts.
    pub skipped: BTreeMap<String, usize>,
    /// Objects loaded.
    pub loaded: usize,
}

impl LoadNotes {
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

/// Load files and folders (recursively: `*.yaml`, `*.yml`, `*.json`); `-` reads stdin.
pub fn load_paths(paths: &[PathBuf], cluster: &mut Cluster) -> Result<LoadNotes> {
    let mut notes = LoadNotes::default();
    for path in paths {
        if path.as_os_str() == "-" {
            let mut text = String::new();
            std::io::stdin()
                .read_to_string(&mut text)
                .map_err(|source| Error::Read {
                    path: path.clone(),
                    source,
                })?;
            load_into("<stdin>", &text, cluster, &mut notes)?;
            continue;
        }
        for file in manifest_files(path).map_err(|(path, source)| Error::Read { path, source })? {
            load_file(&file, cluster, &mut notes)?;
        }
    }
    cluster.compact();
    Ok(notes)
}

fn read_error(path: &Path) -> impl Fn(std::io::Error) -> Error + '_ {
    move |source| Error::Read {
        path: path.to_path_buf(),
        source,
    }
}

/// Load one file: JSON is streamed (memory holds the model and one item at a time, never
/// the whole file); YAML is read whole.
fn load_file(path: &Path, cluster: &mut Cluster, notes: &mut LoadNotes) -> Result<()> {
    use std::io::BufRead;
    let name = path.display().to_string();
    let file = std::fs::File::open(path).map_err(read_error(path))?;
    let mut reader = std::io::BufReader::with_capacity(1 << 20, file);
    let json = loop {
        let buf = reader.fill_buf().map_err(read_error(path))?;
        match buf.iter().position(|b| !b.is_ascii_whitespace()) {
            Some(i) => {
                let first = buf[i];
                reader.consume(i);
                break matches!(first, b'{' | b'[');
            }
            None if buf.is_empty() => break false,
            None => {
                let n = buf.len();
                reader.consume(n);
            }
        }
    };
    if !json {
        let text = std::fs::read_to_string(path).map_err(read_error(path))?;
        return load_into(&name, &text, cluster, notes);
    }
    let before = notes.loaded + notes.skipped.values().sum::<usize>();
    if let Err(streamed) = stream_json(&name, reader, cluster, notes) {
        // Errors are rare: parse the whole text again for the exact line and message.
        let text = std::fs::read_to_string(path).map_err(read_error(path))?;
        load_json(
            &name,
            &text,
            &mut Cluster::default(),
            &mut LoadNotes::default(),
        )?;
        return Err(streamed);
    }
    if notes.loaded + notes.skipped.values().sum::<usize>() == before {
        return Err(Error::Empty { path: name });
    }
    Ok(())
}

/// Stream JSON values (one or many, objects or arrays) from a reader.
fn stream_json<R: std::io::Read>(
    name: &str,
    reader: R,
    cluster: &mut Cluster,
    notes: &mut LoadNotes,
) -> Result<()> {
    use serde::de::DeserializeSeed;
    let mut de = serde_json::Deserializer::from_reader(reader);
    let mut failure = None;
    while de.end().is_err() {
        let seed = Stream {
            name,
            cluster,
            notes,
            failure: &mut failure,
        };
        if let Err(e) = seed.deserialize(&mut de) {
            return Err(failure.take().unwrap_or_else(|| Error::Parse {
                path: name.to_string(),
                message: format!("line {}, column {}: {e}", e.line(), e.column()),
            }));
        }
    }
    Ok(())
}

/// A top-level JSON value, visited without holding it whole: a List's items are
/// ingested as they arrive.
struct Stream<'a> {
    name: &'a str,
    cluster: &'a mut Cluster,
    notes: &'a mut LoadNotes,
    failure: &'a mut Option<Error>,
}

impl Stream<'_> {
    fn item<E: serde::de::Error>(&mut self, raw: &RawValue) -> Result<(), E> {
        load_json_value(self.name, raw.get(), raw, self.cluster, self.notes).map_err(|e| {
            let msg = e.to_string();
            *self.failure = Some(e);
            E::custom(msg)
        })
    }
}

impl<'de> serde::de::DeserializeSeed<'de> for Stream<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> serde::de::Visitor<'de> for Stream<'_> {
    type Value = ();
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a Kubernetes object, a List, or an array of objects")
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(mut self, mut seq: A) -> Result<(), A::Error> {
        while let Some(raw) = seq.next_element::<Box<RawValue>>()? {
            self.item(&raw)?;
        }
        Ok(())
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(mut self, mut map: A) -> Result<(), A::Error> {
        let mut fields: Vec<(String, Box<RawValue>)> = Vec::new();
        let mut listed = false;
        while let Some(key) = map.next_key::<String>()? {
            if key == "items" {
                listed = true;
                map.next_value_seed(Items(&mut self))?;
            } else {
                fields.push((key, map.next_value()?));
            }
        }
        if listed {
            let meta = fields
                .iter()
                .find(|(k, _)| k == "metadata")
                .and_then(|(_, v)| serde_json::from_str::<ListMeta>(v.get()).ok());
            let annotations = meta.and_then(|m| m.annotations).unwrap_or_default();
            return list_annotations(self.name, |k| annotations.get(k).cloned(), self.cluster)
                .map_err(|e| {
                    let msg = e.to_string();
                    *self.failure = Some(e);
                    serde::de::Error::custom(msg)
                });
        }
        // A single object: put it back together and load it as usual.
        let body: Vec<String> = fields
            .iter()
            .map(|(k, v)| format!("{}:{}", serde_json::Value::from(k.as_str()), v.get()))
            .collect();
        let text = format!("{{{}}}", body.join(","));
        let raw: Box<RawValue> = serde_json::from_str(&text).map_err(serde::de::Error::custom)?;
        self.item(&raw)
    }
}

/// The `items` of a List, ingested one by one.
struct Items<'s, 'a>(&'s mut Stream<'a>);

impl<'de> serde::de::DeserializeSeed<'de> for Items<'_, '_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> serde::de::Visitor<'de> for Items<'_, '_> {
    type Value = ();
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a list of Kubernetes objects")
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while let Some(raw) = seq.next_element::<Box<RawValue>>()? {
            self.0.item(&raw)?;
        }
        Ok(())
    }
    fn visit_unit<E: serde::de::Error>(self) -> Result<(), E> {
        Ok(())
    }
}

/// Load one document set from text; `name` labels errors.
pub fn load_str(name: &str, text: &str, cluster: &mut Cluster) -> Result<LoadNotes> {
    let mut notes = LoadNotes::default();
    load_into(name, text, cluster, &mut notes)?;
    cluster.compact();
    Ok(notes)
}

/// Tag an I/O error with the path it came from.
fn at(p: &Path) -> impl FnOnce(std::io::Error) -> (PathBuf, std::io::Error) + '_ {
    move |e| (p.to_path_buf(), e)
}

/// `path` itself, or the `*.yaml`, `*.yml` and `*.json` files below it (recursively,
/// sorted). An error carries the path that could not be read, for the caller's own error.
pub(crate) fn manifest_files(
    path: &Path,
) -> std::result::Result<Vec<PathBuf>, (PathBuf, std::io::Error)> {
    if !std::fs::metadata(path).map_err(at(path))?.is_dir() {
        return Ok(vec![path.to_path_buf()]);
    }
    let mut out = Vec::new();
    let mut stack = vec![path.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).map_err(at(&dir))? {
            let p = entry.map_err(at(&dir))?.path();
            if p.is_dir() {
                stack.push(p);
            } else if matches!(
                p.extension().and_then(|e| e.to_str()),
                Some("yaml" | "yml" | "json")
            ) {
                out.push(p);
            }
        }
    }
    out.sort();
    Ok(out)
}

fn load_into(name: &str, text: &str, cluster: &mut Cluster, notes: &mut LoadNotes) -> Result<()> {
    let before = notes.loaded + notes.skipped.values().sum::<usize>();
    let first = text.trim_start().chars().next();
    if matches!(first, Some('{' | '[')) {
        load_json(name, text, cluster, notes)?;
    } else {
        load_yaml(name, text, cluster, notes)?;
    }
    if notes.loaded + notes.skipped.values().sum::<usize>() == before {
        return Err(Error::Empty {
            path: name.to_string(),
        });
    }
    Ok(())
}

// ------------------------------------------------------------------ JSON

#[derive(Deserialize)]
struct Peek<'a> {
    #[serde(default)]
    kind: String,
    #[serde(default, rename = "apiVersion")]
    api_version: String,
    #[serde(borrow, default)]
    items: Option<Vec<&'a RawValue>>,
    #[serde(default)]
    metadata: Option<ListMeta>,
}

#[derive(Deserialize, Default)]
struct ListMeta {
    #[serde(default)]
    annotations: Option<BTreeMap<String, String>>,
}

/// 1-based line of a byte offset.
fn line_of(text: &str, offset: usize) -> usize {
    text.as_bytes()[..offset.min(text.len())]
        .iter()
        .filter(|b| **b == b'\n')
        .count()
        + 1
}

/// Byte offset of a borrowed sub-slice within `text`.
fn offset_in(text: &str, part: &str) -> usize {
    (part.as_ptr() as usize).saturating_sub(text.as_ptr() as usize)
}

fn load_json(name: &str, text: &str, cluster: &mut Cluster, notes: &mut LoadNotes) -> Result<()> {
    let perr = |line: usize, col: usize, e: &dyn std::fmt::Display| Error::Parse {
        path: name.to_string(),
        message: format!("line {line}, column {col}: {e}"),
    };
    for top in serde_json::Deserializer::from_str(text).into_iter::<&RawValue>() {
        let top = top.map_err(|e| perr(e.line(), e.column(), &e))?;
        load_json_value(name, text, top, cluster, notes)?;
    }
    Ok(())
}

fn load_json_value(
    name: &str,
    text: &str,
    raw: &RawValue,
    cluster: &mut Cluster,
    notes: &mut LoadNotes,
) -> Result<()> {
    let at = offset_in(text, raw.get());
    let located = |e: serde_json::Error| Error::Parse {
        path: name.to_string(),
        message: format!(
            "line {}: {e}",
            line_of(text, at) + e.line().saturating_sub(1)
        ),
    };
    if raw.get().starts_with('[') {
        let items: Vec<&RawValue> = serde_json::from_str(raw.get()).map_err(located)?;
        for item in items {
            load_json_value(name, text, item, cluster, notes)?;
        }
        return Ok(());
    }
    let peek: Peek = serde_json::from_str(raw.get()).map_err(located)?;
    if let Some(items) = peek.items.filter(|_| peek.kind.ends_with("List")) {
        let annotations = peek
            .metadata
            .and_then(|m| m.annotations)
            .unwrap_or_default();
        list_annotations(name, |k| annotations.get(k).cloned(), cluster)?;
        for item in items {
            load_json_value(name, text, item, cluster, notes)?;
        }
        return Ok(());
    }
    let mut de = serde_json::Deserializer::from_str(raw.get());
    ingest(cluster, notes, &peek.api_version, &peek.kind, &mut de).map_err(|e| {
        let line = line_of(text, at) + e.line().saturating_sub(1);
        Error::Parse {
            path: name.to_string(),
            message: format!("line {line}: {} {e}", peek.kind),
        }
    })
}

// ------------------------------------------------------------------ YAML

fn load_yaml(name: &str, text: &str, cluster: &mut Cluster, notes: &mut LoadNotes) -> Result<()> {
    for (i, doc) in serde_norway::Deserializer::from_str(text).enumerate() {
        let value = serde_json::Value::deserialize(doc).map_err(|e| Error::Parse {
            path: name.to_string(),
            message: match e.location() {
                Some(l) => format!("line {}, column {}: {e}", l.line(), l.column()),
                None => e.to_string(),
            },
        })?;
        load_value(name, i + 1, value, cluster, notes)?;
    }
    Ok(())
}

fn load_value(
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
        let annotations = value
            .get("metadata")
            .and_then(|m| m.get("annotations"))
            .cloned();
        let get = |k: &str| {
            annotations
                .as_ref()
                .and_then(|a| a.get(k))
                .and_then(|v| v.as_str())
                .map(str::to_string)
        };
        list_annotations(name, get, cluster)?;
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

fn parse<'de, T: DeserializeOwned, D: Deserializer<'de>>(d: D) -> Result<T, D::Error> {
    T::deserialize(d)
}

/// Route one object to its projection by apiVersion and kind.
fn ingest<'de, D: Deserializer<'de>>(
    c: &mut Cluster,
    notes: &mut LoadNotes,
    api_version: &str,
    kind: &str,
    d: D,
) -> Result<(), D::Error> {
    let group = api_version.rsplit_once('/').map(|(g, _)| g).unwrap_or("");
    let karpenter_group = matches!(group, GROUP | AWS_GROUP | KWOK_GROUP);
    if karpenter_group {
        c.api.served.insert(api_version.to_string());
    }
    let is_v1 = api_version == "karpenter.sh/v1";
    match kind {
        "NodePool" if is_v1 => c.apply_nodepool(parse(d)?),
        "NodeClaim" if is_v1 => c.apply_nodeclaim(parse(d)?),
        "EC2NodeClass" | "KWOKNodeClass" if karpenter_group && !api_version.ends_with("beta1") => {
            let mut nc: NodeClass = parse(d)?;
            nc.kind = kind.to_string();
            nc.group = group.to_string();
            c.apply_nodeclass(nc);
        }
        "NodePool" | "NodeClaim" | "EC2NodeClass" | "Provisioner" | "Machine"
        | "AWSNodeTemplate"
            if karpenter_group =>
        {
            #[derive(Deserialize)]
            struct Named {
                #[serde(default)]
                metadata: Meta,
            }
            let n: Named = parse(d)?;
            c.api
                .legacy_objects
                .push(format!("{api_version} {kind} {}", n.metadata.name));
        }
        "Node" if api_version == "v1" => c.apply_node(parse(d)?),
        "Pod" if api_version == "v1" => c.apply_pod(parse(d)?),
        "DaemonSet" if group == "apps" => c.apply_daemonset(parse(d)?),
        "PodDisruptionBudget" if group == "policy" => c.apply_pdb(parse(d)?),
        "Event" if api_version == "v1" => {
            c.apply_event(parse::<CoreEvent, _>(d)?.into());
        }
        "Event" if group == "events.k8s.io" => {
            c.apply_event(parse::<EventsV1Event, _>(d)?.into());
        }
        "CustomResourceDefinition" => {
            let crd: Crd = parse(d)?;
            if matches!(crd.spec.group.as_str(), GROUP | AWS_GROUP | KWOK_GROUP) {
                c.api.authoritative = true;
                for v in crd.spec.versions.iter().filter(|v| v.served) {
                    c.api
                        .served
                        .insert(format!("{}/{}", crd.spec.group, v.name));
                }
            }
            c.apply_crd(crd);
        }
        _ => {
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
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const POD_YAML: &str = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: web-1\n  namespace: shop\n  annotations:\n    kubectl.kubernetes.io/last-applied-configuration: '{}'\n    karpenter.sh/do-not-disrupt: \"true\"\nspec:\n  nodeName: n1\n  containers: [{name: app, resources: {requests: {cpu: 250m}}}]\n";

    #[test]
    fn yaml_documents_json_lists_and_json_streams_load_the_same_pod() {
        let yaml =
            format!("{POD_YAML}---\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {{name: x}}\n");
        let mut a = Cluster::default();
        let notes = load_str("a.yaml", &yaml, &mut a).unwrap();
        assert_eq!(notes.loaded, 1);
        assert_eq!(notes.skipped.get("ConfigMap"), Some(&1));

        let pod: serde_json::Value = serde_norway::from_str(POD_YAML).unwrap();
        let list = serde_json::json!({"apiVersion": "v1", "kind": "List", "items": [pod.clone()]});
        let mut b = Cluster::default();
        load_str("b.json", &list.to_string(), &mut b).unwrap();
        let mut c = Cluster::default();
        load_str("c.json", &format!("{pod}\n{pod}"), &mut c).unwrap();
        for cl in [&a, &b, &c] {
            let p = &cl.pods[&("shop".to_string(), "web-1".to_string())];
            assert_eq!(
                p.metadata.annotations.len(),
                1,
                "only karpenter annotations are kept"
            );
            assert_eq!(cl.pods_on("n1").count(), 1);
        }
    }

    #[test]
    fn errors_name_the_file_and_line() {
        let mut c = Cluster::default();
        let e = load_str("bad.json", "{\"apiVersion\":\"v1\",\"kind\":\"List\",\"items\":[\n{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":3}}]}", &mut c).unwrap_err();
        let msg = e.to_string();
        assert!(msg.starts_with("bad.json: line 2"), "{msg}");
        let e = load_str("bad.yaml", "kind: Pod\n  nope: [\n", &mut c).unwrap_err();
        assert!(e.to_string().starts_with("bad.yaml: line"), "{e}");
        let e = load_str("empty.yaml", "# nothing\n", &mut c).unwrap_err();
        assert!(e.to_string().contains("no Kubernetes objects"), "{e}");
    }

    #[test]
    fn streamed_files_load_like_text_and_keep_exact_error_lines() {
        let dir = tempfile::tempdir().unwrap();
        let pod: serde_json::Value = serde_norway::from_str(POD_YAML).unwrap();
        let list = serde_json::json!({"apiVersion": "v1", "kind": "List", "items": [pod.clone(), {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}}],
            "metadata": {"annotations": {CAPTURED_AT: "2026-11-21T10:00:00Z"}}});
        let cases = [
            ("list.json", serde_json::to_string_pretty(&list).unwrap()),
            ("stream.json", format!("  \n{pod}\n{pod}")),
            (
                "array.json",
                serde_json::Value::Array(vec![pod.clone()]).to_string(),
            ),
            ("single.json", pod.to_string()),
        ];
        for (file, text) in cases {
            let path = dir.path().join(file);
            std::fs::write(&path, &text).unwrap();
            let (mut streamed, mut whole) = (Cluster::default(), Cluster::default());
            load_paths(&[path], &mut streamed).unwrap();
            load_str(file, &text, &mut whole).unwrap();
            assert_eq!(streamed.counts(), whole.counts(), "{file}");
            assert_eq!(streamed.captured_at, whole.captured_at, "{file}");
            assert_eq!(streamed.pods_on("n1").count(), 1, "{file}");
        }
        let bad = dir.path().join("bad.json");
        std::fs::write(&bad, "{\"kind\": \"List\", \"apiVersion\": \"v1\", \"items\": [\n\n{\"apiVersion\": \"v1\", \"kind\": \"Pod\", \"metadata\": {\"name\": 3}}]}").unwrap();
        let e = load_paths(&[bad], &mut Cluster::default())
            .unwrap_err()
            .to_string();
        assert!(e.contains("bad.json: line 3"), "{e}");
        let empty = dir.path().join("empty.json");
        std::fs::write(
            &empty,
            "{\"apiVersion\": \"v1\", \"kind\": \"List\", \"items\": null}",
        )
        .unwrap();
        assert!(load_paths(&[empty], &mut Cluster::default())
            .unwrap_err()
            .to_string()
            .contains("no Kubernetes objects"));
    }

    #[test]
    fn pods_keep_only_what_the_analysis_reads() {
        let mut c = Cluster::default();
        load_str("p.yaml", "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: n}\nspec:\n  containers:\n  - name: a\n    image: x\n    resources: {requests: {cpu: 100m}, limits: {cpu: 200m, memory: 1Gi}}\nstatus:\n  conditions:\n  - {type: Ready, status: 'False'}\n  - {type: PodScheduled, status: 'False', reason: Unschedulable}\n", &mut c).unwrap();
        let p = &c.pods[&("n".to_string(), "p".to_string())];
        let r = &p.spec.containers[0].resources.requests;
        assert_eq!(
            (r["cpu"].0.as_str(), r["memory"].0.as_str()),
            ("100m", "1Gi"),
            "a missing request comes from the limit"
        );
        assert_eq!(p.status.conditions.len(), 1);
        assert_eq!(p.status.conditions[0].type_, "PodScheduled");
    }

    #[test]
    fn legacy_karpenter_objects_are_recorded_not_loaded() {
        let mut c = Cluster::default();
        load_str("old.yaml", "apiVersion: karpenter.sh/v1beta1\nkind: NodePool\nmetadata: {name: default}\nspec: {}\n", &mut c).unwrap();
        assert!(c.nodepools.is_empty());
        assert_eq!(
            c.api.legacy_objects,
            vec!["karpenter.sh/v1beta1 NodePool default".to_string()]
        );
        assert!(c.api.served.contains("karpenter.sh/v1beta1"));
    }

    #[test]
    fn snapshot_capture_time_is_read_from_the_list() {
        let mut c = Cluster::default();
        let list = serde_json::json!({"apiVersion": "v1", "kind": "List",
            "metadata": {"annotations": {CAPTURED_AT: "2026-11-21T10:00:00Z"}},
            "items": [{"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}}]});
        load_str("s.json", &list.to_string(), &mut c).unwrap();
        assert_eq!(
            c.captured_at.unwrap().to_rfc3339(),
            "2026-11-21T10:00:00+00:00"
        );
    }
}
