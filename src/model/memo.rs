//! Parts of objects read once per distinct text while a dump's JSON is read.
//!
//! The replicas of one workload carry the same containers, tolerations, affinity, spread
//! constraints, node selector, volumes, labels and owner references, byte for byte. Under
//! a [`Scope`] (opened by the dump reader around one JSON input read in place), each such
//! part is first taken as raw text: a text met before gives the value it gave then,
//! shared, so the parse is skipped and the model's interner finds a value it already holds
//! without working out its fingerprint; only a new text is parsed. Outside a scope (a
//! watch event, a stream, a YAML document) parts are read as any other field.
//!
//! A part that fails to read under a scope marks the scope failed ([`Scope::failed`]): its
//! error names where the part ends, not the fault in it, and a part that is not UTF-8 text
//! (a string the projection skips may hold any bytes) could not be taken as text at all,
//! so the reader reads the input again without a scope. A text met before never fails: it
//! read once already.

use std::any::{Any, TypeId};
use std::cell::RefCell;
use std::marker::PhantomData;

use serde::de::{DeserializeOwned, Error as _};
use serde::{Deserialize, Deserializer};
use serde_json::value::RawValue;

use super::shared::{Compact, FastMap};

/// The texts kept per scope, in bytes, at most: past it, new texts are still parsed (and
/// known ones still found), but no longer kept.
const MAX_KEPT: usize = 64 << 20;

/// One scope's tables: per part type, its values by text. The texts are kept end to end in
/// one buffer, not one allocation each: a scope leaves no holes in the heap when it ends.
#[derive(Default)]
struct Tables {
    by_type: FastMap<TypeId, Box<dyn Any>>,
    texts: String,
    hasher: foldhash::fast::RandomState,
    failed: bool,
    hits: usize,
    misses: usize,
}

/// One part type's values, by the hash of their text (chained within a hash).
struct Table<T> {
    first: FastMap<u64, usize>,
    entries: Vec<Entry<T>>,
}

struct Entry<T> {
    /// Where its text is in [`Tables::texts`].
    text: std::ops::Range<usize>,
    value: T,
    /// The entry of the same hash kept before it.
    next: Option<usize>,
}

impl<T> Default for Table<T> {
    fn default() -> Self {
        Table {
            first: FastMap::default(),
            entries: Vec::new(),
        }
    }
}

impl<T> Table<T> {
    fn get(&self, texts: &str, hash: u64, text: &str) -> Option<&T> {
        let mut at = self.first.get(&hash).copied();
        while let Some(i) = at {
            let e = &self.entries[i];
            if texts[e.text.clone()] == *text {
                return Some(&e.value);
            }
            at = e.next;
        }
        None
    }

    fn insert(&mut self, hash: u64, text: std::ops::Range<usize>, value: T) {
        let next = self.first.insert(hash, self.entries.len());
        self.entries.push(Entry { text, value, next });
    }
}

thread_local! {
    static TABLES: RefCell<Option<Tables>> = const { RefCell::new(None) };
}

/// Parts are read once per text on this thread while the scope lives. A scope opened
/// inside another one is the same scope.
pub struct Scope {
    outer: bool,
    /// Bound to the thread its tables live on.
    _thread: PhantomData<*const ()>,
}

/// Open a scope on this thread (see [`Scope`]).
pub fn scope() -> Scope {
    let outer = TABLES.with(|t| {
        let mut t = t.borrow_mut();
        let outer = t.is_some();
        t.get_or_insert_with(Tables::default);
        outer
    });
    Scope {
        outer,
        _thread: PhantomData,
    }
}

impl Scope {
    /// Whether a part failed to read under this scope: the error raised names where the
    /// part ends, not where it went wrong.
    pub fn failed(&self) -> bool {
        TABLES.with(|t| t.borrow().as_ref().is_some_and(|t| t.failed))
    }

    /// Parts found by their text, and parts parsed, so far.
    pub fn counts(&self) -> (usize, usize) {
        TABLES.with(|t| t.borrow().as_ref().map_or((0, 0), |t| (t.hits, t.misses)))
    }
}

impl Drop for Scope {
    fn drop(&mut self) {
        if !self.outer {
            TABLES.with(|t| *t.borrow_mut() = None);
        }
    }
}

/// Treat an explicit `null` like an absent field.
pub fn null_default<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Default + Deserialize<'de>,
{
    Ok(Option::<T>::deserialize(d)?.unwrap_or_default())
}

/// Read a part that may be absent or null (its default then), once per distinct text
/// under a [`Scope`]. For `deserialize_with`.
pub fn read<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: DeserializeOwned + Default + Clone + Compact + 'static,
{
    if !TABLES.with(|t| t.borrow().is_some()) {
        return null_default(d);
    }
    let raw = match <Box<RawValue>>::deserialize(d) {
        Ok(raw) => raw,
        Err(e) => {
            fail();
            return Err(e);
        }
    };
    let text = raw.get();
    let (hash, found) = TABLES.with(|t| {
        let mut t = t.borrow_mut();
        let Some(t) = t.as_mut() else {
            return (0, None);
        };
        let hash = std::hash::BuildHasher::hash_one(&t.hasher, text);
        let value = table::<T>(t).and_then(|table| table.get(&t.texts, hash, text).cloned());
        match value {
            Some(_) => t.hits += 1,
            None => t.misses += 1,
        }
        (hash, value)
    });
    if let Some(value) = found {
        return Ok(value);
    }
    // Packed now, while this is its only handle: the interner, which packs what it keeps,
    // will find it shared with the table.
    let mut value = match serde_json::from_str::<Option<T>>(text) {
        Ok(v) => v.unwrap_or_default(),
        Err(e) => {
            fail();
            return Err(D::Error::custom(without_position(&e)));
        }
    };
    value.compact();
    TABLES.with(|t| {
        let mut t = t.borrow_mut();
        let Some(t) = t.as_mut() else { return };
        if t.texts.len() + text.len() > MAX_KEPT {
            return;
        }
        let at = t.texts.len()..t.texts.len() + text.len();
        t.texts.push_str(text);
        let table = t
            .by_type
            .entry(TypeId::of::<T>())
            .or_insert_with(|| Box::new(Table::<T>::default()));
        if let Some(table) = table.downcast_mut::<Table<T>>() {
            table.insert(hash, at, value.clone());
        }
    });
    Ok(value)
}

/// The values of type `T` by their text, if any was kept.
fn table<T: 'static>(t: &Tables) -> Option<&Table<T>> {
    t.by_type.get(&TypeId::of::<T>())?.downcast_ref()
}

fn fail() {
    TABLES.with(|t| {
        if let Some(t) = t.borrow_mut().as_mut() {
            t.failed = true;
        }
    });
}

/// serde_json's message without the position it appends: the caller names its own (a
/// part's error is raised again where the part ends; the dump reader names file, line
/// and column its own way).
pub fn without_position(e: &serde_json::Error) -> String {
    let text = e.to_string();
    let at = format!(" at line {} column {}", e.line(), e.column());
    text.strip_suffix(&at).unwrap_or(&text).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Default, Clone, PartialEq, Deserialize)]
    struct Part {
        #[serde(default)]
        n: u32,
    }

    impl Compact for Part {
        fn compact(&mut self) {}
    }

    #[derive(Debug, Deserialize)]
    struct Whole {
        #[serde(default, deserialize_with = "read")]
        part: crate::model::Shared<Part>,
    }

    fn whole(text: &str) -> Result<Whole, serde_json::Error> {
        serde_json::from_str(text)
    }

    #[test]
    fn a_text_met_again_gives_the_value_it_gave_and_others_are_parsed() {
        let scope = scope();
        let a = whole(r#"{"part": {"n": 1}}"#).unwrap();
        let b = whole(r#"{"part": {"n": 1}}"#).unwrap();
        // The same value, written another way, is another text.
        let c = whole(r#"{"part": {"n":1}}"#).unwrap();
        let absent = whole("{}").unwrap();
        let null = whole(r#"{"part": null}"#).unwrap();
        assert!(crate::model::Shared::ptr_eq(&a.part, &b.part));
        assert!(!crate::model::Shared::ptr_eq(&a.part, &c.part));
        assert_eq!(*c.part, Part { n: 1 });
        assert_eq!(
            (&*absent.part, &*null.part),
            (&Part::default(), &Part::default())
        );
        assert_eq!(scope.counts(), (1, 3));
        assert!(!scope.failed());
        drop(scope);
        // Without a scope nothing is kept.
        let d = whole(r#"{"part": {"n": 1}}"#).unwrap();
        assert!(!crate::model::Shared::ptr_eq(&a.part, &d.part));
    }

    #[test]
    fn texts_of_one_hash_are_told_apart() {
        let mut table = Table::default();
        let texts = "ab";
        table.insert(7, 0..1, 1);
        table.insert(7, 1..2, 2);
        assert_eq!(table.get(texts, 7, "a"), Some(&1));
        assert_eq!(table.get(texts, 7, "b"), Some(&2));
        assert_eq!(table.get(texts, 7, "c"), None);
        assert_eq!(table.get(texts, 8, "a"), None);
    }

    #[test]
    fn a_part_that_fails_marks_the_scope_and_an_inner_scope_is_the_outer_one() {
        let scope = scope();
        {
            let inner = super::scope();
            assert!(whole(r#"{"part": {"n": 1}}"#).is_ok());
            drop(inner);
        }
        // Still open: the part is found again.
        assert!(whole(r#"{"part": {"n": 1}}"#).is_ok());
        assert_eq!(scope.counts(), (1, 1));
        let e = whole(r#"{"part": {"n": "x"}}"#).unwrap_err().to_string();
        assert!(scope.failed());
        // The part's own position is left out; the whole's parser adds its own.
        assert_eq!(e.matches(" at line ").count(), 1, "{e}");
        assert!(
            e.starts_with("invalid type: string \"x\", expected u32"),
            "{e}"
        );
    }
}
