//! Sharing what many objects hold alike, so a big cluster fits in little memory.
//!
//! The pods of one ReplicaSet or DaemonSet carry the same labels, owner, tolerations,
//! affinity and containers; nodes of one instance type the same capacity; NodeClaims of
//! one pool the same requirements. [`Shared`] holds such a part behind a reference count
//! (reading it is like reading the value itself: it derefs, iterates and serialises as the
//! value), and [`Interner`] makes equal parts one allocation. [`super::Cluster`]'s
//! `apply_*` methods intern what they store, so dumps, lists and watch events all share.

use std::collections::HashMap;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::ops::Deref;
use std::sync::Arc;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A value that many objects may share. Reads go through `Deref`; to change one object's
/// copy, use [`Shared::make_mut`] (it copies the value first when others share it).
pub struct Shared<T: ?Sized>(Arc<T>);

impl<T> Shared<T> {
    pub fn new(value: T) -> Self {
        Shared(Arc::new(value))
    }
}

impl<T: ?Sized> Shared<T> {
    /// Whether two handles share one allocation.
    pub fn ptr_eq(a: &Self, b: &Self) -> bool {
        Arc::ptr_eq(&a.0, &b.0)
    }
}

impl<T> Shared<T> {
    /// The value, when this handle is its only one (as it is right after parsing).
    pub fn get_mut(this: &mut Self) -> Option<&mut T> {
        Arc::get_mut(&mut this.0)
    }
}

impl<T: Clone> Shared<T> {
    /// This object's own copy, to change it without touching the others.
    pub fn make_mut(&mut self) -> &mut T {
        Arc::make_mut(&mut self.0)
    }
}

impl<T: ?Sized> Clone for Shared<T> {
    fn clone(&self) -> Self {
        Shared(self.0.clone())
    }
}

impl<T: ?Sized> Deref for Shared<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

impl<T: ?Sized> AsRef<T> for Shared<T> {
    fn as_ref(&self) -> &T {
        &self.0
    }
}

impl<T: ?Sized> std::borrow::Borrow<T> for Shared<T> {
    fn borrow(&self) -> &T {
        &self.0
    }
}

impl<T: Default> Default for Shared<T> {
    fn default() -> Self {
        Shared::new(T::default())
    }
}

impl Default for Shared<str> {
    fn default() -> Self {
        Shared(Arc::from(""))
    }
}

impl<T> From<T> for Shared<T> {
    fn from(value: T) -> Self {
        Shared::new(value)
    }
}

impl From<&str> for Shared<str> {
    fn from(s: &str) -> Self {
        Shared(Arc::from(s))
    }
}

impl From<String> for Shared<str> {
    fn from(s: String) -> Self {
        Shared(Arc::from(s))
    }
}

impl<T: ?Sized + fmt::Debug> fmt::Debug for Shared<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        (**self).fmt(f)
    }
}

impl<T: ?Sized + fmt::Display> fmt::Display for Shared<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        (**self).fmt(f)
    }
}

impl<T: ?Sized + PartialEq> PartialEq for Shared<T> {
    fn eq(&self, other: &Self) -> bool {
        Shared::ptr_eq(self, other) || **self == **other
    }
}

impl<T: ?Sized + Eq> Eq for Shared<T> {}

impl<T: ?Sized + PartialOrd> PartialOrd for Shared<T> {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        (**self).partial_cmp(&**other)
    }
}

impl<T: ?Sized + Ord> Ord for Shared<T> {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (**self).cmp(&**other)
    }
}

impl<T: ?Sized + Hash> Hash for Shared<T> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        (**self).hash(state)
    }
}

impl PartialEq<str> for Shared<str> {
    fn eq(&self, other: &str) -> bool {
        &**self == other
    }
}

impl PartialEq<&str> for Shared<str> {
    fn eq(&self, other: &&str) -> bool {
        &**self == *other
    }
}

impl PartialEq<String> for Shared<str> {
    fn eq(&self, other: &String) -> bool {
        &**self == other.as_str()
    }
}

impl PartialEq<Shared<str>> for str {
    fn eq(&self, other: &Shared<str>) -> bool {
        self == &**other
    }
}

impl PartialEq<Shared<str>> for &str {
    fn eq(&self, other: &Shared<str>) -> bool {
        *self == &**other
    }
}

impl PartialEq<Shared<str>> for String {
    fn eq(&self, other: &Shared<str>) -> bool {
        self.as_str() == &**other
    }
}

impl Shared<str> {
    pub fn as_str(&self) -> &str {
        self
    }
}

impl From<Shared<str>> for String {
    fn from(s: Shared<str>) -> Self {
        s.as_str().to_string()
    }
}

impl From<&Shared<str>> for String {
    fn from(s: &Shared<str>) -> Self {
        s.as_str().to_string()
    }
}

impl<'a, T: ?Sized> IntoIterator for &'a Shared<T>
where
    &'a T: IntoIterator,
{
    type Item = <&'a T as IntoIterator>::Item;
    type IntoIter = <&'a T as IntoIterator>::IntoIter;
    fn into_iter(self) -> Self::IntoIter {
        (&**self).into_iter()
    }
}

impl<T: ?Sized + Serialize> Serialize for Shared<T> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        (**self).serialize(s)
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Shared<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        T::deserialize(d).map(Shared::new)
    }
}

impl<'de> Deserialize<'de> for Shared<str> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        // Straight from the parser's text (no intermediate String).
        struct Text;
        impl serde::de::Visitor<'_> for Text {
            type Value = Shared<str>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_str<E>(self, s: &str) -> Result<Shared<str>, E> {
                Ok(Shared(Arc::from(s)))
            }
        }
        d.deserialize_str(Text)
    }
}

/// For `skip_serializing_if`: a shared map with no entries.
pub(crate) fn no_entries<K, V>(m: &Shared<std::collections::BTreeMap<K, V>>) -> bool {
    m.is_empty()
}

/// For `skip_serializing_if`: a shared list with no items.
pub(crate) fn no_items<T>(v: &Shared<Vec<T>>) -> bool {
    v.is_empty()
}

// ------------------------------------------------------------------ compacting

/// Give back spare capacity before a value is kept for long (serde grows vectors by
/// doubling: a one-element list is allocated for four).
pub trait Compact {
    fn compact(&mut self);
}

impl<T: Compact> Compact for Vec<T> {
    fn compact(&mut self) {
        self.iter_mut().for_each(Compact::compact);
        self.shrink_to_fit();
    }
}

impl<T: Compact> Compact for Option<T> {
    fn compact(&mut self) {
        if let Some(v) = self {
            v.compact()
        }
    }
}

/// A map built one insertion at a time leaves its B-tree nodes about half full; one
/// rebuilt from its sorted entries packs them (a 30-label node: 3 leaves, not 5).
impl<K: Ord, V> Compact for std::collections::BTreeMap<K, V> {
    fn compact(&mut self) {
        // Up to 11 entries fit one leaf anyway.
        if self.len() > 11 {
            *self = std::mem::take(self).into_iter().collect();
        }
    }
}

impl Compact for String {
    fn compact(&mut self) {
        self.shrink_to_fit()
    }
}

/// A shared value is compacted only while this handle is its only one.
impl<T: Compact> Compact for Shared<T> {
    fn compact(&mut self) {
        compact(self)
    }
}

// ------------------------------------------------------------------ interning

/// Makes equal values one shared allocation. Values are found by a hash of their
/// serialised form (k8s-openapi's types have no `Hash`) and confirmed with `==`. Values
/// no object uses any more are dropped as the table grows, so it stays bounded by what
/// the model holds.
pub struct Interner<T> {
    /// By fingerprint; distinct values with one fingerprint (rare) share a bucket.
    buckets: HashMap<u64, Bucket<T>, foldhash::fast::RandomState>,
    /// This table's own seed: equal values must give equal fingerprints within it.
    seed: foldhash::quality::RandomState,
    /// During a bulk load, the addresses of the values held: a value already one of them
    /// (a part a dump's reader handed out shared) needs no fingerprint.
    held: Option<FastSet<usize>>,
    len: usize,
    purge_at: usize,
}

/// Most fingerprints stand for one value: held without a list.
enum Bucket<T> {
    One(Arc<T>),
    Many(Vec<Arc<T>>),
}

impl<T> Bucket<T> {
    fn values(&self) -> &[Arc<T>] {
        match self {
            Bucket::One(v) => std::slice::from_ref(v),
            Bucket::Many(vs) => vs,
        }
    }
    fn push(&mut self, v: Arc<T>) {
        match self {
            Bucket::One(first) => *self = Bucket::Many(vec![first.clone(), v]),
            Bucket::Many(vs) => vs.push(v),
        }
    }
    /// Keep the values something besides the table holds; false when none is left.
    fn retain_used(&mut self) -> bool {
        match self {
            Bucket::One(v) => Arc::strong_count(v) > 1,
            Bucket::Many(vs) => {
                vs.retain(|v| Arc::strong_count(v) > 1);
                match vs.len() {
                    0 => false,
                    1 => {
                        *self = Bucket::One(vs[0].clone());
                        true
                    }
                    _ => true,
                }
            }
        }
    }
}

impl<T> Default for Interner<T> {
    fn default() -> Self {
        Interner {
            buckets: HashMap::default(),
            seed: Default::default(),
            held: None,
            len: 0,
            purge_at: MIN_PURGE,
        }
    }
}

/// The table is swept for unused values whenever it has doubled since the last sweep.
const MIN_PURGE: usize = 1024;

impl<T> fmt::Debug for Interner<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Interner({} values)", self.len)
    }
}

/// Feeds serialised bytes straight into a hasher (no buffer).
struct HashWriter<'h, H>(&'h mut H);

impl<H: Hasher> std::io::Write for HashWriter<'_, H> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.write(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// How the interner finds a value's bucket: equal values must give equal fingerprints.
pub trait Fingerprint {
    fn fingerprint(&self, h: &mut DefaultHasher);
}

/// A fast hasher, seeded at random per table (so no input can pick its collisions).
pub type DefaultHasher = foldhash::quality::FoldHasher<'static>;

/// A hash map for the model's indexes and the analysis' per-pass tables: foldhash,
/// seeded per map, instead of SipHash (names of API objects are short; SipHash was a
/// tenth of an incremental pass's time at 5,000 nodes).
pub type FastMap<K, V> = HashMap<K, V, foldhash::fast::RandomState>;

/// A set of [`FastMap`]'s kind.
pub type FastSet<K> = std::collections::HashSet<K, foldhash::fast::RandomState>;

/// The fingerprint of a value's JSON form, for types without `Hash` (k8s-openapi's).
pub fn serde_fingerprint<T: Serialize + ?Sized>(value: &T, h: &mut DefaultHasher) {
    // Serialising into a hasher cannot fail for these types; were it to, the value would
    // simply get a poorer fingerprint and still be compared with `==`.
    let _ = serde_json::to_writer(HashWriter(h), value);
}

/// The fingerprint of a shared part that is itself interned: its address (equal interned
/// values are one allocation).
pub fn address_fingerprint<T: ?Sized>(value: &Shared<T>, h: &mut DefaultHasher) {
    (Arc::as_ptr(&value.0) as *const () as usize).hash(h);
}

impl Fingerprint for std::collections::BTreeMap<String, String> {
    fn fingerprint(&self, h: &mut DefaultHasher) {
        self.hash(h)
    }
}

/// Give back a new value's spare capacity before it is kept (only when nothing else holds
/// it yet, as right after parsing).
fn compact<T: Compact>(value: &mut Shared<T>) {
    if let Some(own) = Arc::get_mut(&mut value.0) {
        own.compact();
    }
}

impl<T: Compact + Fingerprint + PartialEq> Interner<T> {
    /// Point `value` at the shared copy of an equal value, keeping it as that copy when it
    /// is the first.
    pub fn intern(&mut self, value: &mut Shared<T>) {
        let address = Arc::as_ptr(&value.0) as usize;
        if self.held.as_ref().is_some_and(|h| h.contains(&address)) {
            return;
        }
        let mut h = std::hash::BuildHasher::build_hasher(&self.seed);
        value.fingerprint(&mut h);
        let fingerprint = h.finish();
        if let Some(bucket) = self.buckets.get_mut(&fingerprint) {
            if let Some(known) = bucket.values().iter().find(|k| ***k == **value) {
                value.0 = known.clone();
                return;
            }
            compact(value);
            bucket.push(value.0.clone());
        } else {
            compact(value);
            self.buckets
                .insert(fingerprint, Bucket::One(value.0.clone()));
        }
        if let Some(held) = &mut self.held {
            held.insert(address);
        }
        self.len += 1;
        if self.len >= self.purge_at {
            self.purge();
        }
    }

    /// Drop the values only this table still holds.
    pub fn purge(&mut self) {
        self.buckets.retain(|_, b| b.retain_used());
        self.buckets.shrink_to_fit();
        if self.held.is_some() {
            self.held = Some(self.held_addresses());
        }
        self.len = self.buckets.values().map(|b| b.values().len()).sum();
        self.purge_at = (self.len * 2).max(MIN_PURGE);
    }

    /// Know the values held by address from now on (a bulk load begins), or no longer
    /// (it ended: the set would only cost memory).
    pub fn by_address(&mut self, on: bool) {
        self.held = on.then(|| self.held_addresses());
    }

    fn held_addresses(&self) -> FastSet<usize> {
        (self.buckets.values())
            .flat_map(|b| b.values())
            .map(|v| Arc::as_ptr(v) as usize)
            .collect()
    }

    /// Distinct values held.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

/// Interned strings (node names, phases, namespaces).
#[derive(Default)]
pub struct Strings {
    set: std::collections::HashSet<Arc<str>, foldhash::fast::RandomState>,
    purge_at: usize,
}

impl fmt::Debug for Strings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Strings({} values)", self.set.len())
    }
}

impl Strings {
    /// The shared copy of `s`.
    pub fn get(&mut self, s: &str) -> Shared<str> {
        match self.set.get(s) {
            Some(known) => Shared(known.clone()),
            None => {
                let new = Shared(Arc::from(s));
                self.keep(&new);
                new
            }
        }
    }

    /// Point `s` at the shared copy of its text (it becomes that copy when it is the first).
    pub fn intern(&mut self, s: &mut Shared<str>) {
        match self.set.get(&**s) {
            Some(known) if Arc::ptr_eq(known, &s.0) => {}
            Some(known) => s.0 = known.clone(),
            None => self.keep(s),
        }
    }

    fn keep(&mut self, s: &Shared<str>) {
        self.set.insert(s.0.clone());
        if self.set.len() >= self.purge_at.max(MIN_PURGE) {
            self.purge();
        }
    }

    /// Drop the strings only this table still holds.
    pub fn purge(&mut self) {
        self.set.retain(|v| Arc::strong_count(v) > 1);
        self.set.shrink_to_fit();
        self.purge_at = self.set.len() * 2;
    }
}

/// A value worked out from the rest of its struct on first use, and kept with it. It is
/// no part of the struct's equality or serialized form, and a clone starts empty: the
/// clone may be changed, and must work the value out again.
pub struct Memo<T>(std::sync::OnceLock<T>);

impl<T> Memo<T> {
    pub fn get_or_init(&self, f: impl FnOnce() -> T) -> &T {
        self.0.get_or_init(f)
    }
}

impl<T> Default for Memo<T> {
    fn default() -> Self {
        Memo(std::sync::OnceLock::new())
    }
}

impl<T> Clone for Memo<T> {
    fn clone(&self) -> Self {
        Memo::default()
    }
}

impl<T> PartialEq for Memo<T> {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl<T> std::fmt::Debug for Memo<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Memo")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_memo_is_kept_but_not_compared_nor_cloned() {
        let m: Memo<u32> = Memo::default();
        assert_eq!(*m.get_or_init(|| 7), 7);
        assert_eq!(*m.get_or_init(|| 8), 7, "worked out once");
        assert!(m == Memo::default(), "no part of equality");
        assert_eq!(
            *m.clone().get_or_init(|| 9),
            9,
            "a clone works it out again"
        );
    }
    use std::collections::BTreeMap;

    #[test]
    fn equal_values_share_one_allocation_and_read_like_the_value() {
        let mut pool: Interner<BTreeMap<String, String>> = Interner::default();
        let labels = || BTreeMap::from([("app".to_string(), "web".to_string())]);
        let (mut a, mut b) = (Shared::new(labels()), Shared::new(labels()));
        assert!(!Shared::ptr_eq(&a, &b));
        pool.intern(&mut a);
        pool.intern(&mut b);
        assert!(Shared::ptr_eq(&a, &b));
        assert_eq!(a.get("app").map(String::as_str), Some("web"));
        assert_eq!((&a).into_iter().count(), 1);
        assert_eq!(serde_json::to_string(&a).unwrap(), r#"{"app":"web"}"#);
        let back: Shared<BTreeMap<String, String>> =
            serde_json::from_str(r#"{"app":"web"}"#).unwrap();
        assert_eq!(back, a);
        // Changing one object's copy leaves the other alone.
        b.make_mut().insert("tier".into(), "1".into());
        assert_eq!(a.len(), 1);
        assert_eq!(b.len(), 2);
    }

    #[test]
    fn by_address_a_held_value_stays_and_an_equal_one_still_joins_it() {
        let mut pool: Interner<BTreeMap<String, String>> = Interner::default();
        let labels = |v: &str| BTreeMap::from([("app".to_string(), v.to_string())]);
        let mut first = Shared::new(labels("web"));
        pool.intern(&mut first);
        pool.by_address(true);
        // A value held before and one interned since are both known by address.
        let mut again = first.clone();
        let mut other = Shared::new(labels("db"));
        pool.intern(&mut again);
        pool.intern(&mut other);
        let mut other_again = other.clone();
        pool.intern(&mut other_again);
        assert!(Shared::ptr_eq(&first, &again) && Shared::ptr_eq(&other, &other_again));
        // An equal value elsewhere is found by its fingerprint, as without the addresses.
        let mut copy = Shared::new(labels("db"));
        pool.intern(&mut copy);
        assert!(Shared::ptr_eq(&copy, &other));
        pool.by_address(false);
        let mut copy = Shared::new(labels("web"));
        pool.intern(&mut copy);
        assert!(Shared::ptr_eq(&copy, &first));
        assert_eq!(pool.len(), 2);
    }

    #[test]
    fn values_nobody_uses_are_dropped_as_the_table_grows() {
        let mut pool: Interner<BTreeMap<String, String>> = Interner::default();
        let map = |v: &str| BTreeMap::from([(v.to_string(), String::new())]);
        let mut kept = Shared::new(map("kept"));
        pool.intern(&mut kept);
        for i in 0..3 * MIN_PURGE {
            let mut v = Shared::new(map(&i.to_string()));
            pool.intern(&mut v);
        }
        assert!(pool.len() < 2 * MIN_PURGE, "{}", pool.len());
        let mut again = Shared::new(map("kept"));
        pool.intern(&mut again);
        assert!(Shared::ptr_eq(&kept, &again));
    }

    #[test]
    fn strings_are_shared_and_compare_with_str() {
        let mut s = Strings::default();
        let a = s.get("ip-10-0-0-1");
        let mut b: Shared<str> = "ip-10-0-0-1".into();
        s.intern(&mut b);
        assert!(Shared::ptr_eq(&a, &b));
        let owned = String::from("ip-10-0-0-1");
        assert!(a == "ip-10-0-0-1");
        assert!(a == *"ip-10-0-0-1");
        assert!(a == owned);
        assert!(owned == a);
        assert_eq!(a.to_string(), "ip-10-0-0-1");
        let v: Shared<str> = serde_json::from_str(r#""Running""#).unwrap();
        assert_eq!(v.as_str(), "Running");
    }
}
