//! Karpenter's NodePool hash: the `karpenter.sh/nodepool-hash` annotation it writes on each
//! NodePool and on each NodeClaim it launches, and compares for static drift
//! (`NodePoolDrifted`). kelp computes the same number from the same fields, so a change can
//! be judged before it is applied.
//!
//! Karpenter hashes `spec.template` with `hashstructure/v2` (`FormatV2`, slices as sets,
//! zero values ignored, nil as zero) over its Go types, whose fields are, in order:
//! `ObjectMeta{Labels, Annotations}`, then `Spec{Taints, StartupTaints, NodeClassRef,
//! TerminationGracePeriod, ExpireAfter}` (`Requirements` is tagged `hash:"ignore"`: a
//! requirement change drifts a node only when its labels no longer fit). The hash version
//! is `v3` in every release kelp supports (v1.9 to v1.15), and the template's fields are the
//! same in each.
//!
//! The walk, as the library does it: FNV-1 (64 bit) everywhere; a string is the FNV of its
//! bytes, an integer of its 8 little-endian bytes; a struct starts from its type name and
//! folds in each non-zero field as `finish(h ^ ordered(name, value))`; a map XORs
//! `ordered(key, value)` over its entries and finishes; a slice (as a set) XORs its
//! elements without finishing. "Zero" is Go's: an absent or null field, an empty string, a
//! nil (not an empty) map or slice.

use serde_json::{Map, Value};

use super::duration::parse_go_duration;

/// The annotation holding the hash, on NodePools and NodeClaims.
pub const HASH_ANNOTATION: &str = "karpenter.sh/nodepool-hash";
/// The annotation holding the hash's version; static drift is judged only between equal ones.
pub const HASH_VERSION_ANNOTATION: &str = "karpenter.sh/nodepool-hash-version";
/// The hash version of every release kelp supports.
pub const HASH_VERSION: &str = "v3";

/// Why a template's hash cannot be computed: kelp then says "unknown", never a guess.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Unhashable {
    #[error("{path} is not {want}")]
    Shape { path: String, want: &'static str },
    #[error("{path}: {why}")]
    Duration { path: String, why: String },
    /// A taint's `timeAdded` is hashed as Go's binary time encoding, which kelp does not
    /// reproduce.
    #[error("{path}.timeAdded is set (kelp does not hash taint times)")]
    TaintTime { path: String },
}

/// The hash Karpenter writes in `karpenter.sh/nodepool-hash` for a NodePool whose
/// `spec.template` is `template`, as the API server stores it (defaults applied: see
/// [`with_defaults`] for a manifest).
pub fn template_hash(template: &Value) -> Result<u64, Unhashable> {
    let t = object(template, "spec.template")?;
    let meta = match field(t, "metadata") {
        None => None,
        Some(m) => {
            let m = object(m, "spec.template.metadata")?;
            let labels = string_map(field(m, "labels"), "spec.template.metadata.labels")?;
            let annotations = string_map(
                field(m, "annotations"),
                "spec.template.metadata.annotations",
            )?;
            // A struct whose fields are all zero is zero itself, and left out.
            (labels.is_some() || annotations.is_some()).then(|| {
                structure(
                    "ObjectMeta",
                    &[("Labels", labels), ("Annotations", annotations)],
                )
            })
        }
    };
    let empty = Map::new();
    let spec = match field(t, "spec") {
        None => &empty,
        Some(s) => object(s, "spec.template.spec")?,
    };
    let fields = [
        (
            "Taints",
            taints(field(spec, "taints"), "spec.template.spec.taints")?,
        ),
        (
            "StartupTaints",
            taints(
                field(spec, "startupTaints"),
                "spec.template.spec.startupTaints",
            )?,
        ),
        ("NodeClassRef", node_class_ref(field(spec, "nodeClassRef"))?),
        (
            "TerminationGracePeriod",
            termination_grace_period(field(spec, "terminationGracePeriod"))?,
        ),
        ("ExpireAfter", expire_after(field(spec, "expireAfter"))?),
    ];
    // Go's zero test sees the ignored requirements too: a spec of requirements alone is
    // still hashed (as its type name).
    let spec_is_zero =
        fields.iter().all(|(_, h)| h.is_none()) && field(spec, "requirements").is_none();
    let spec_hash = (!spec_is_zero).then(|| structure("NodeClaimTemplateSpec", &fields));
    Ok(structure(
        "NodeClaimTemplate",
        &[("ObjectMeta", meta), ("Spec", spec_hash)],
    ))
}

/// A NodePool manifest's template as the API server would store it: the CRD's one default
/// inside the template (`expireAfter: 720h`, the same in every supported release) filled in.
pub fn with_defaults(template: &Value) -> Value {
    let mut t = template.clone();
    if let Some(obj) = t.as_object_mut() {
        let spec = obj
            .entry("spec")
            .or_insert_with(|| Value::Object(Map::new()));
        if let Some(spec) = spec.as_object_mut() {
            if field(spec, "expireAfter").is_none() {
                spec.insert("expireAfter".into(), Value::String("720h".into()));
            }
        }
    }
    t
}

/// A field, with JSON `null` as absent (Go's nil).
fn field<'a>(m: &'a Map<String, Value>, key: &str) -> Option<&'a Value> {
    m.get(key).filter(|v| !v.is_null())
}

fn object<'a>(v: &'a Value, path: &str) -> Result<&'a Map<String, Value>, Unhashable> {
    v.as_object().ok_or_else(|| Unhashable::Shape {
        path: path.into(),
        want: "an object",
    })
}

fn text<'a>(v: Option<&'a Value>, path: &str) -> Result<&'a str, Unhashable> {
    match v {
        None => Ok(""),
        Some(Value::String(s)) => Ok(s),
        Some(_) => Err(Unhashable::Shape {
            path: path.into(),
            want: "a string",
        }),
    }
}

/// A string field: zero (left out) when empty.
fn string_field(m: &Map<String, Value>, key: &str, path: &str) -> Result<Option<u64>, Unhashable> {
    let s = text(field(m, key), &format!("{path}.{key}"))?;
    Ok((!s.is_empty()).then(|| fnv1(s.as_bytes())))
}

fn string_map(v: Option<&Value>, path: &str) -> Result<Option<u64>, Unhashable> {
    let Some(v) = v else { return Ok(None) };
    let mut h = 0;
    for (k, val) in object(v, path)? {
        let val = text(Some(val), &format!("{path}.{k}"))?;
        h ^= ordered(fnv1(k.as_bytes()), fnv1(val.as_bytes()));
    }
    Ok(Some(finish(h)))
}

fn taints(v: Option<&Value>, path: &str) -> Result<Option<u64>, Unhashable> {
    let Some(v) = v else { return Ok(None) };
    let list = v.as_array().ok_or_else(|| Unhashable::Shape {
        path: path.into(),
        want: "a list",
    })?;
    let mut h = 0;
    for (i, t) in list.iter().enumerate() {
        let at = format!("{path}[{i}]");
        let t = object(t, &at)?;
        if field(t, "timeAdded").is_some() {
            return Err(Unhashable::TaintTime { path: at });
        }
        h ^= structure(
            "Taint",
            &[
                ("Key", string_field(t, "key", &at)?),
                ("Value", string_field(t, "value", &at)?),
                ("Effect", string_field(t, "effect", &at)?),
            ],
        );
    }
    Ok(Some(h))
}

fn node_class_ref(v: Option<&Value>) -> Result<Option<u64>, Unhashable> {
    let path = "spec.template.spec.nodeClassRef";
    let Some(v) = v else { return Ok(None) };
    let r = object(v, path)?;
    Ok(Some(structure(
        "NodeClassReference",
        &[
            ("Kind", string_field(r, "kind", path)?),
            ("Name", string_field(r, "name", path)?),
            ("Group", string_field(r, "group", path)?),
        ],
    )))
}

fn nanos(v: &Value, path: &str) -> Result<i64, Unhashable> {
    let s = text(Some(v), path)?;
    let d = parse_go_duration(s).map_err(|why| Unhashable::Duration {
        path: path.into(),
        why,
    })?;
    d.num_nanoseconds().ok_or_else(|| Unhashable::Duration {
        path: path.into(),
        why: format!("{s:?} is out of range"),
    })
}

/// `*metav1.Duration`: a set pointer is hashed even at zero (then only its type name).
fn termination_grace_period(v: Option<&Value>) -> Result<Option<u64>, Unhashable> {
    let Some(v) = v else { return Ok(None) };
    let ns = nanos(v, "spec.template.spec.terminationGracePeriod")?;
    Ok(Some(structure(
        "Duration",
        &[("Duration", (ns != 0).then(|| integer(ns)))],
    )))
}

/// `NillableDuration{*time.Duration, Raw}` (Raw ignored): `Never` leaves both nil, a zero
/// struct, left out; any duration is a set pointer, hashed even at zero.
fn expire_after(v: Option<&Value>) -> Result<Option<u64>, Unhashable> {
    let path = "spec.template.spec.expireAfter";
    let Some(v) = v else { return Ok(None) };
    if text(Some(v), path)? == "Never" {
        return Ok(None);
    }
    let ns = nanos(v, path)?;
    Ok(Some(structure(
        "NillableDuration",
        &[("Duration", Some(integer(ns)))],
    )))
}

/// A struct: its type name, then each field that is not zero, in declaration order.
fn structure(name: &str, fields: &[(&str, Option<u64>)]) -> u64 {
    let mut h = fnv1(name.as_bytes());
    for (f, v) in fields {
        if let Some(v) = v {
            h = finish(h ^ ordered(fnv1(f.as_bytes()), *v));
        }
    }
    h
}

fn integer(v: i64) -> u64 {
    fnv1(&v.to_le_bytes())
}

fn ordered(a: u64, b: u64) -> u64 {
    let mut bytes = [0u8; 16];
    bytes[..8].copy_from_slice(&a.to_le_bytes());
    bytes[8..].copy_from_slice(&b.to_le_bytes());
    fnv1(&bytes)
}

fn finish(a: u64) -> u64 {
    fnv1(&a.to_le_bytes())
}

/// FNV-1, 64 bit (Go's `hash/fnv.New64`: multiply, then XOR; not the 1a variant, which is
/// the only one the `fnv` crate offers).
fn fnv1(bytes: &[u8]) -> u64 {
    const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    bytes
        .iter()
        .fold(OFFSET, |h, b| h.wrapping_mul(PRIME) ^ u64::from(*b))
}

#[cfg(test)]
mod tests;
