//! JSON dumps, read in one pass straight into the projections.
//!
//! An object's `apiVersion` and `kind` come first in what kubectl and the API server write,
//! so they are read first, and the rest of the object goes to its kind's projection as it
//! is parsed: nothing is held, parsed twice or copied on the way. An object that names its
//! kind only after other fields has those fields held (as a tree) until it does. A `List`'s
//! `items` are taken one at a time, so a List of any size is never held whole.
//!
//! The input is a slice (a file mapped into memory, or text), read with serde_json's slice
//! reader, the fastest it has; or a stream (stdin, a gzip file), read behind a
//! [`super::limits::JsonGuard`]. Errors carry the line and column serde_json saw, which are
//! the input's own in both cases.

use std::borrow::Cow;
use std::fmt;

use serde::de::{
    self, DeserializeSeed, Deserializer, IgnoredAny, IntoDeserializer, MapAccess, SeqAccess,
    Visitor,
};

use super::ingest::{ingest, list_annotations, LoadNotes};
use super::limits::Limit;
use crate::model::Cluster;
use crate::source::error::Error;

/// What a read goes into, and what it learns on the way.
pub(super) struct Ctx<'a> {
    pub name: &'a str,
    pub cluster: &'a mut Cluster,
    pub notes: &'a mut LoadNotes,
    /// An error of kelp's own raised inside the parse (a List's bad metrics annotation),
    /// which wins over the parser's wrapped copy of it.
    pub failure: Option<Error>,
    /// The kind of the object being decoded, to name it in an error.
    pub kind: Option<String>,
    /// Blank lines before the first byte the parser sees, for the lines errors name.
    pub lines_before: usize,
    /// Told, after each object read from a slice, where in the slice it started: what lies
    /// before it will not be read again.
    pub progress: Option<&'a mut dyn FnMut(*const u8)>,
}

impl<'a> Ctx<'a> {
    pub fn new(name: &'a str, cluster: &'a mut Cluster, notes: &'a mut LoadNotes) -> Self {
        Ctx {
            name,
            cluster,
            notes,
            failure: None,
            kind: None,
            lines_before: 0,
            progress: None,
        }
    }

    /// Keep kelp's own error, and hand the parser a copy of its text to unwind with.
    fn fail<E: de::Error>(&mut self, e: Error) -> E {
        let text = e.to_string();
        self.failure = Some(e);
        E::custom(text)
    }

    /// The error a parse ended with, as one line naming the file, line and column.
    pub fn error(&mut self, e: serde_json::Error) -> Error {
        if let Some(e) = self.failure.take() {
            return e;
        }
        let line = e.line() + self.lines_before;
        if e.to_string().starts_with("recursion limit exceeded") {
            return Error::Limit {
                path: self.name.to_string(),
                limit: Limit::Depth { line },
            };
        }
        let text = crate::model::memo::without_position(&e);
        let kind = match self.kind.take() {
            Some(k) if !k.is_empty() => format!("{k}: "),
            _ => String::new(),
        };
        Error::Parse {
            path: self.name.to_string(),
            message: format!("line {line}, column {}: {kind}{text}", e.column()),
        }
    }
}

/// Read every JSON value in the input (objects, Lists, arrays of them) into the model.
pub(super) fn read<'de, R: serde_json::de::Read<'de>>(
    ctx: &mut Ctx,
    de: &mut serde_json::Deserializer<R>,
) -> Result<(), serde_json::Error> {
    loop {
        if de.end().is_ok() {
            return Ok(());
        }
        Value(ctx).deserialize(&mut *de)?;
    }
}

/// One value: an object (a List, or one object) or an array of values.
struct Value<'c, 'a>(&'c mut Ctx<'a>);

impl<'de> DeserializeSeed<'de> for Value<'_, '_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Value<'_, '_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a Kubernetes object, a List, or an array of objects")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while seq.next_element_seed(Value(&mut *self.0))?.is_some() {}
        Ok(())
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<(), A::Error> {
        object(self.0, map)
    }
}

/// A List's `items`: values one at a time, or null.
struct Items<'c, 'a>(&'c mut Ctx<'a>);

impl<'de> DeserializeSeed<'de> for Items<'_, '_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Items<'_, '_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a list of Kubernetes objects")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while seq.next_element_seed(Value(&mut *self.0))?.is_some() {}
        Ok(())
    }
    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        Ok(())
    }
}

/// A string, borrowed from the input where the parser can (no escapes, a slice).
struct Text;

impl<'de> DeserializeSeed<'de> for Text {
    type Value = Cow<'de, str>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for Text {
    type Value = Cow<'de, str>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a string")
    }
    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok(Cow::Borrowed(v))
    }
    fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
        Ok(Cow::Owned(v.to_string()))
    }
    fn visit_string<E>(self, v: String) -> Result<Self::Value, E> {
        Ok(Cow::Owned(v))
    }
}

/// A field read before its object's kind was known, to be handed on with the rest.
enum Held<'de> {
    Text(Cow<'de, str>),
    Tree(serde_json::Value),
}

/// One object: a List (its items read one by one) or an object for a projection.
fn object<'de, A: MapAccess<'de>>(ctx: &mut Ctx, mut map: A) -> Result<(), A::Error> {
    let mut api: Option<Cow<'de, str>> = None;
    let mut kind: Option<Cow<'de, str>> = None;
    let mut held: Vec<(Cow<'de, str>, Held<'de>)> = Vec::new();
    let mut listed = false;
    loop {
        if let (Some(a), Some(k)) = (&api, &kind) {
            if !listed && !k.ends_with("List") {
                let start = matches!(k, Cow::Borrowed(_)).then_some(k.as_ptr());
                dispatch(ctx, a.clone(), k.clone(), held, &mut map)?;
                if let (Some(start), Some(progress)) = (start, ctx.progress.as_mut()) {
                    progress(start);
                }
                return Ok(());
            }
        }
        let Some(key) = map.next_key_seed(Text)? else {
            break;
        };
        match &*key {
            "apiVersion" if api.is_none() => api = Some(map.next_value_seed(Text)?),
            "kind" if kind.is_none() => kind = Some(map.next_value_seed(Text)?),
            "items" => {
                listed = true;
                map.next_value_seed(Items(&mut *ctx))?;
            }
            _ => {
                let value = map.next_value::<serde_json::Value>()?;
                held.push((key, Held::Tree(value)));
            }
        }
    }
    if listed || kind.as_deref().is_some_and(|k| k.ends_with("List")) {
        let annotations = held
            .iter()
            .find(|(k, _)| k == "metadata")
            .and_then(|(_, v)| match v {
                Held::Tree(v) => v.get("annotations"),
                Held::Text(_) => None,
            });
        let get = |k: &str| {
            annotations
                .and_then(|a| a.get(k))
                .and_then(|v| v.as_str())
                .map(str::to_string)
        };
        return list_annotations(ctx.name, get, ctx.cluster).map_err(|e| ctx.fail(e));
    }
    // An object without a kind or an apiVersion: the kind table skips it (and counts it).
    dispatch(
        ctx,
        api.unwrap_or_default(),
        kind.unwrap_or_default(),
        held,
        &mut map,
    )
}

/// Hand an object to its kind's projection: its apiVersion and kind, what was held, then
/// the rest as parsed. Whatever the projection does not read (all of it, for a kind kelp
/// skips) is passed over.
fn dispatch<'de, A: MapAccess<'de>>(
    ctx: &mut Ctx,
    api: Cow<'de, str>,
    kind: Cow<'de, str>,
    held: Vec<(Cow<'de, str>, Held<'de>)>,
    map: &mut A,
) -> Result<(), A::Error> {
    let head = [
        (Cow::Borrowed("apiVersion"), Held::Text(api.clone())),
        (Cow::Borrowed("kind"), Held::Text(kind.clone())),
    ];
    let replay = Replay {
        held: head.into_iter().chain(held),
        value: None,
        rest: &mut *map,
    };
    if let Err(e) = ingest(ctx.cluster, ctx.notes, &api, &kind, replay) {
        ctx.kind = Some(kind.into_owned());
        return Err(e);
    }
    while map.next_key::<IgnoredAny>()?.is_some() {
        map.next_value::<IgnoredAny>()?;
    }
    Ok(())
}

/// An object's fields as a deserializer: the held ones, then the rest of the parser's map.
struct Replay<'m, 'de, A> {
    held: std::iter::Chain<
        std::array::IntoIter<(Cow<'de, str>, Held<'de>), 2>,
        std::vec::IntoIter<(Cow<'de, str>, Held<'de>)>,
    >,
    /// The value of the held field whose key was just handed out.
    value: Option<Held<'de>>,
    rest: &'m mut A,
}

impl<'de, A: MapAccess<'de>> Deserializer<'de> for Replay<'_, 'de, A> {
    type Error = A::Error;
    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, A::Error> {
        visitor.visit_map(self)
    }
    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        option unit unit_struct newtype_struct seq tuple tuple_struct map struct enum
        identifier ignored_any
    }
}

impl<'de, A: MapAccess<'de>> MapAccess<'de> for Replay<'_, 'de, A> {
    type Error = A::Error;
    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, A::Error> {
        match self.held.next() {
            Some((key, value)) => {
                self.value = Some(value);
                seed.deserialize(key.into_deserializer()).map(Some)
            }
            None => self.rest.next_key_seed(seed),
        }
    }
    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, A::Error> {
        match self.value.take() {
            Some(Held::Text(Cow::Borrowed(s))) => {
                seed.deserialize(de::value::BorrowedStrDeserializer::new(s))
            }
            Some(Held::Text(Cow::Owned(s))) => seed.deserialize(s.into_deserializer()),
            Some(Held::Tree(v)) => seed.deserialize(v).map_err(de::Error::custom),
            None => self.rest.next_value_seed(seed),
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::model::Cluster;
    use crate::source::load_str;

    const POD: &str = r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"a","namespace":"n"},"spec":{"nodeName":"n1"}}"#;

    #[test]
    fn any_field_order_loads_the_same_object() {
        let orders = [
            POD.to_string(),
            // The kind last: the fields before it are held, then handed on.
            r#"{"metadata":{"name":"a","namespace":"n"},"spec":{"nodeName":"n1"},"kind":"Pod","apiVersion":"v1"}"#.into(),
            r#"{"kind":"Pod","spec":{"nodeName":"n1"},"apiVersion":"v1","metadata":{"name":"a","namespace":"n"}}"#.into(),
            // kubectl's List: items before kind; a List in a List; an array of objects.
            format!(r#"{{"apiVersion":"v1","items":[{POD}],"kind":"List","metadata":{{}}}}"#),
            format!(r#"{{"kind":"List","items":[{{"kind":"PodList","apiVersion":"v1","items":[{POD}]}}]}}"#),
            format!("[[{POD}]]"),
        ];
        for text in orders {
            let mut c = Cluster::default();
            let notes = load_str("t.json", &text, &mut c).unwrap();
            assert_eq!(notes.loaded, 1, "{text}");
            assert_eq!(c.pods_on("n1").count(), 1, "{text}");
        }
    }

    #[test]
    fn errors_name_the_line_column_and_kind_once() {
        let text = "{\"apiVersion\": \"v1\", \"kind\": \"List\", \"items\": [\n{\"apiVersion\": \"v1\", \"kind\": \"Pod\",\n \"metadata\": {\"name\": 3}}]}";
        let e = load_str("bad.json", text, &mut Cluster::default())
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("bad.json: line 3, column "), "{e}");
        assert!(e.contains(": Pod: invalid type: integer `3`"), "{e}");
        assert_eq!(e.matches("line").count(), 1, "{e}");
        // Not an object where one belongs; a kind that is not a string.
        for bad in ["[1]", r#"{"kind": 3}"#, "{\"kind\": \"Pod\""] {
            let e = load_str("x.json", bad, &mut Cluster::default()).unwrap_err();
            assert!(e.to_string().starts_with("x.json: line 1, column "), "{e}");
        }
    }

    #[test]
    fn a_list_without_a_kind_and_untyped_objects_are_told_apart() {
        let mut c = Cluster::default();
        let notes = load_str(
            "t.json",
            &format!(r#"{{"items":[{POD},{{"metadata":{{}}}}]}}"#),
            &mut c,
        )
        .unwrap();
        assert_eq!(notes.loaded, 1);
        assert_eq!(notes.skipped.get("untyped (no kind)"), Some(&1));
    }
}
