//! Storage: the [`Store`] trait and its sled backend.
//!
//! The model is etcd's: one global revision (our `resourceVersion`) that every committed write
//! advances by exactly one, assigned atomically with the write; reads of the latest state or of a
//! recent past revision; and an ordered stream of change events that a watcher can resume from any
//! revision still in the history window. A second backend on etcd would map revisions 1:1.

pub mod convert;
pub mod etcd_store;
mod head;
mod high_water;
mod index;
mod lean;
pub mod local;
pub mod sled_store;
pub mod wal;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use bytes::Bytes;
use serde_json::Value;
use tokio::sync::broadcast;

use crate::model::{EventType, ObjectKey};

pub use head::{Head, OwnerRef};
pub use sled_store::{SledStore, StoreOptions};
pub use wal::WalStore;

/// One stored version of an object: its serialized JSON (with `metadata.resourceVersion` set to
/// `rv`) and a small parsed *head* (see [`HEAD_FIELDS`]): what reads, watches and the
/// every-object paths (selectors, the garbage collector's owner index, informers) need. The full
/// parsed tree is not kept with every object: it costs ~10 times the JSON, and a million objects
/// would need gigabytes for it. [`StoredObject::value`] parses it on first use and keeps it (for
/// the one object a request reads, or the small internal kinds); [`StoredObject::parse`] parses
/// without keeping.
#[derive(Debug)]
pub struct StoredObject {
    pub rv: u64,
    pub json: Bytes,
    /// `apiVersion` and the [`HEAD_METADATA`] fields of `metadata`, as stored.
    head: Head,
    /// What is made on first use, boxed (most versions never have any of it, and an empty box is
    /// one word where the empty parts are 15).
    lazy: std::sync::OnceLock<Box<Lazy>>,
}

/// The parts of a [`StoredObject`] made on first use.
#[derive(Debug, Default)]
struct Lazy {
    /// The whole object (see [`StoredObject::value`]); boxed, as the lean JSON is made for
    /// many objects that are never parsed whole.
    parsed: std::sync::OnceLock<Box<Value>>,
    /// `json` without `metadata.managedFields` (what a controller's reconcile is handed; see
    /// [`StoredObject::lean_json`]).
    lean: std::sync::OnceLock<Bytes>,
    /// The values of the kind's selectable fields, and which set they are (see
    /// [`StoredObject::field_values`]).
    fields: std::sync::OnceLock<(u64, Box<[Box<str>]>)>,
}

/// Top-level fields a [`StoredObject`]'s head keeps (`apiVersion`: the version a custom resource
/// is stored in).
pub const HEAD_FIELDS: &[&str] = &["apiVersion"];
/// Fields of `metadata` a [`StoredObject`]'s head keeps: what list and watch filters, owner
/// references, finalization and informers' keys read on every object. Not `annotations` or
/// `managedFields` (the large ones), nor `resourceVersion` (the version's `rv`). Every field
/// kept is paid for by every object in memory: add one only for an every-object reader.
pub const HEAD_METADATA: &[&str] = match READ_METADATA.split_last() {
    Some((_, head)) => head,
    None => &[],
};

/// What the head reader takes from `metadata`: [`HEAD_METADATA`], then `resourceVersion` (read
/// for the version's `rv`, not kept).
const READ_METADATA: &[&str] = &[
    "name",
    "namespace",
    "uid",
    "labels",
    "ownerReferences",
    "finalizers",
    "deletionTimestamp",
    "resourceVersion",
];

impl StoredObject {
    /// Build from a value whose `metadata.resourceVersion` is (or will be treated as) `rv`.
    pub fn new(rv: u64, mut value: Value) -> Result<Self> {
        if let Some(meta) = crate::model::meta::metadata_mut(&mut value) {
            meta.insert("resourceVersion".into(), Value::String(rv.to_string()));
        }
        let json = Bytes::from(serde_json::to_vec(&value).map_err(StoreError::Encode)?);
        Ok(Self::from_parts(rv, &value, json))
    }

    /// An object that was never stored (a dry run): its `resourceVersion` is left as given.
    pub fn unstored(value: Value) -> Result<Self> {
        let json = Bytes::from(serde_json::to_vec(&value).map_err(StoreError::Encode)?);
        Ok(Self::from_parts(0, &value, json))
    }

    /// From a value and its serialized form (which must be the same object). The value is not
    /// kept: only its head.
    pub fn from_parts(rv: u64, value: &Value, json: Bytes) -> Self {
        Self::from_head(rv, head_of(value), json)
    }

    fn from_head(rv: u64, head: Head, json: Bytes) -> Self {
        Self {
            rv,
            json,
            head,
            lazy: std::sync::OnceLock::new(),
        }
    }

    /// From stored bytes alone (a load at start-up, an etcd read): only the head is parsed, and
    /// `rv` is the object's own `metadata.resourceVersion` (0 if it has none). Fails when the
    /// bytes are not a JSON object.
    pub fn from_json(json: Bytes) -> Result<Self> {
        let (head, rv) = match read_head(&json) {
            Some(read) => read,
            None => {
                // Not an object, or `metadata` is not one: parse it whole, for the error or
                // for the head a parsed object gives.
                let value: Value = serde_json::from_slice(&json).map_err(StoreError::Decode)?;
                if !value.is_object() {
                    return Err(StoreError::Decode(serde::de::Error::custom(
                        "not a JSON object",
                    )));
                }
                (head_of(&value), rv_of(&value))
            }
        };
        Ok(Self::from_head(rv, head, json))
    }

    /// `apiVersion` and the [`HEAD_METADATA`] fields: enough for the `model::meta`
    /// helpers that read names, labels, owners and finalizers, without parsing the object.
    pub fn head(&self) -> &Head {
        &self.head
    }

    /// The whole object, parsed on first use and kept with this version. Every-object paths use
    /// [`StoredObject::head`] or [`StoredObject::parse`] instead, so a large store does not end
    /// up holding a tree per object.
    pub fn value(&self) -> &Value {
        self.lazy().parsed.get_or_init(|| Box::new(self.decode()))
    }

    /// The whole object: the kept tree if there is one, else parsed now and not kept.
    pub fn parse(&self) -> std::borrow::Cow<'_, Value> {
        match self.parsed() {
            Some(v) => std::borrow::Cow::Borrowed(v),
            None => std::borrow::Cow::Owned(self.decode()),
        }
    }

    /// One object of the stored object's top level, with only `keys` of it (`spec` and
    /// `["nodeName"]`, say): read from the kept tree if there is one, else from the JSON without
    /// building anything else. Null when absent.
    pub fn pick(&self, field: &str, keys: &[&str]) -> Value {
        use serde::de::DeserializeSeed;
        if let Some(v) = self.parsed() {
            let Some(m) = v.get(field).and_then(Value::as_object) else {
                return Value::Null;
            };
            let picked: serde_json::Map<String, Value> = m
                .iter()
                .filter(|(k, _)| keys.contains(&k.as_str()))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            return Value::Object(picked);
        }
        let mut de = serde_json::Deserializer::from_slice(&self.json);
        // The bytes were checked when they were stored or read: what is skipped is not checked
        // again (the scan is the cost of a pick).
        Pick {
            keys: &[],
            nested: Some((field, keys)),
            check: false,
        }
        .deserialize(&mut de)
        .ok()
        .and_then(|mut top| top.remove(field))
        .unwrap_or(Value::Null)
    }

    fn decode(&self) -> Value {
        // The bytes were written by this process or checked when read from the backend.
        serde_json::from_slice(&self.json).unwrap_or_else(|e| {
            tracing::error!(error = %e, "stored object does not parse");
            Value::Null
        })
    }

    /// The JSON without `metadata.managedFields`: what informers hand controllers (kube's
    /// controller-manager strips managedFields from its informers' caches the same way; a
    /// reconcile parses half the bytes). Made once per stored version, shared by every reader.
    pub fn lean_json(&self) -> &Bytes {
        self.lazy().lean.get_or_init(|| self.make_lean())
    }

    /// The values of a kind's selectable fields beyond name and namespace (`set` says which
    /// fields, `compute` reads them from the whole object), made once per stored version and
    /// shared by every list and watch that selects on them, as kube's watch cache keeps each
    /// object's fields: a field selector parses an object once, not once per request and
    /// watcher. A request naming another set (a custom resource whose selectable fields
    /// changed) computes its own, not kept.
    pub fn field_values(
        &self,
        set: u64,
        compute: impl Fn(&Value) -> Box<[Box<str>]>,
    ) -> std::borrow::Cow<'_, [Box<str>]> {
        let (id, values) = self
            .lazy()
            .fields
            .get_or_init(|| (set, compute(&self.parse())));
        if *id == set {
            std::borrow::Cow::Borrowed(values)
        } else {
            std::borrow::Cow::Owned(compute(&self.parse()).into_vec())
        }
    }

    fn lazy(&self) -> &Lazy {
        self.lazy.get_or_init(Box::default)
    }

    /// The kept tree, if one was made.
    fn parsed(&self) -> Option<&Value> {
        self.lazy.get()?.parsed.get().map(|v| &**v)
    }

    fn make_lean(&self) -> Bytes {
        match lean::managed_fields(&self.json) {
            lean::Cut::None => self.json.clone(),
            lean::Cut::Range(cut) => {
                if let (Some(before), Some(after)) =
                    (self.json.get(..cut.start), self.json.get(cut.end..))
                {
                    let mut out = Vec::with_capacity(before.len() + after.len());
                    out.extend_from_slice(before);
                    out.extend_from_slice(after);
                    return Bytes::from(out);
                }
                self.make_lean_parsed()
            }
            lean::Cut::Unsure => self.make_lean_parsed(),
        }
    }

    /// The lean JSON by parsing and serializing again without the entry.
    fn make_lean_parsed(&self) -> Bytes {
        let value = self.parse();
        let value = &*value;
        let has_managed = value
            .get("metadata")
            .and_then(|m| m.get("managedFields"))
            .is_some();
        if !has_managed {
            return self.json.clone();
        }
        serde_json::to_vec(&WithoutManagedFields(value))
            .map(Bytes::from)
            .unwrap_or_else(|_| self.json.clone())
    }
}

/// The head of a parsed object (see [`StoredObject::head`]).
fn head_of(value: &Value) -> Head {
    Head::of(value)
}

/// An object's own `metadata.resourceVersion` as a number (0 if it has none).
fn rv_of(value: &Value) -> u64 {
    crate::model::meta::meta_str(value, "resourceVersion")
        .and_then(|s| s.parse().ok())
        .unwrap_or(0)
}

/// The head and the object's own revision read straight from JSON, skipping everything else
/// without building it; `None` when the JSON is not an object whose `metadata` (if any) is an
/// object.
fn read_head(json: &[u8]) -> Option<(Head, u64)> {
    use serde::de::DeserializeSeed;
    let mut de = serde_json::Deserializer::from_slice(json);
    let head = Pick {
        keys: HEAD_FIELDS,
        nested: Some(("metadata", READ_METADATA)),
        check: true,
    }
    .deserialize(&mut de)
    .ok()?;
    de.end().ok()?;
    let head = Value::Object(head);
    Some((Head::of(&head), rv_of(&head)))
}

/// Deserializes a JSON object keeping only `keys` (and `nested`'s object, itself picked);
/// everything else is skipped unparsed.
struct Pick<'a> {
    keys: &'a [&'a str],
    nested: Option<(&'a str, &'a [&'a str])>,
    /// Whether what is skipped is checked as a whole parse would (bytes not read before).
    check: bool,
}

impl<'de> serde::de::DeserializeSeed<'de> for Pick<'_> {
    type Value = serde_json::Map<String, Value>;

    fn deserialize<D: serde::Deserializer<'de>>(
        self,
        d: D,
    ) -> std::result::Result<Self::Value, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> serde::de::Visitor<'de> for Pick<'_> {
    type Value = serde_json::Map<String, Value>;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(
        self,
        mut map: A,
    ) -> std::result::Result<Self::Value, A::Error> {
        let mut out = serde_json::Map::new();
        // A key given twice: the last one wins, as when the whole object is parsed.
        while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
            match self.nested {
                Some((name, keys)) if key == name => {
                    let inner = map.next_value_seed(Pick {
                        keys,
                        nested: None,
                        check: self.check,
                    })?;
                    out.insert(key.into_owned(), Value::Object(inner));
                }
                _ if self.keys.contains(&&*key) => {
                    out.insert(key.into_owned(), map.next_value::<Value>()?);
                }
                _ if self.check => map.next_value_seed(Skip)?,
                _ => {
                    map.next_value::<serde::de::IgnoredAny>()?;
                }
            }
        }
        Ok(out)
    }
}

/// Reads one JSON value and keeps nothing, checking it as parsing it whole would (UTF-8,
/// escapes, numbers, nesting depth): bytes that would not parse are not served. (serde's
/// `IgnoredAny` lets serde_json skip strings without checking them.)
struct Skip;

impl<'de> serde::de::DeserializeSeed<'de> for Skip {
    type Value = ();

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> std::result::Result<(), D::Error> {
        d.deserialize_any(Skip)
    }
}

impl<'de> serde::de::Visitor<'de> for Skip {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> std::result::Result<(), E> {
        Ok(())
    }

    fn visit_i64<E>(self, _: i64) -> std::result::Result<(), E> {
        Ok(())
    }

    fn visit_u64<E>(self, _: u64) -> std::result::Result<(), E> {
        Ok(())
    }

    fn visit_f64<E>(self, _: f64) -> std::result::Result<(), E> {
        Ok(())
    }

    fn visit_str<E>(self, _: &str) -> std::result::Result<(), E> {
        Ok(())
    }

    fn visit_unit<E>(self) -> std::result::Result<(), E> {
        Ok(())
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(
        self,
        mut seq: A,
    ) -> std::result::Result<(), A::Error> {
        while seq.next_element_seed(Skip)?.is_some() {}
        Ok(())
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(
        self,
        mut map: A,
    ) -> std::result::Result<(), A::Error> {
        while map.next_key_seed(Skip)?.is_some() {
            map.next_value_seed(Skip)?;
        }
        Ok(())
    }
}

/// A put's object checked for nesting (before anything recursive walks it) and serialized on the
/// writing task ([`Prepared`]); `None` for a delete. [`Store::write`] starts here.
pub fn prepare(op: &mut WriteOp) -> Result<Option<Prepared>> {
    match op {
        WriteOp::Put { value, .. } => {
            check_depth(value)?;
            Prepared::new(std::mem::take(value)).map(Some)
        }
        WriteOp::Delete { .. } => Ok(None),
    }
}

/// A put's object is checked for nesting before anything recursive walks it.
fn check_depth(value: &Value) -> Result<()> {
    if crate::model::limits::within_depth(value) {
        Ok(())
    } else {
        Err(StoreError::TooDeep(crate::model::limits::MAX_DEPTH))
    }
}

/// An object serialized before its revision is known: the JSON with `metadata.resourceVersion`
/// an empty string whose digits go in at `slot`. Writers prepare their object on their own task,
/// so the store's single writer thread only splices the revision in (no clone, no serialization
/// of whole objects on the one thread every write goes through).
#[derive(Debug)]
pub struct Prepared {
    /// The object's head (see [`StoredObject::head`]).
    head: Head,
    json: Vec<u8>,
    /// Where the revision's digits go; `None` when the value has no metadata object (it is
    /// serialized again once the revision is known, as [`StoredObject::new`] does, from
    /// `whole`).
    slot: Option<usize>,
    whole: Option<Value>,
}

impl Prepared {
    /// Serialize `value` with an empty `metadata.resourceVersion`, in the field order
    /// [`StoredObject::new`] gives it (an existing key keeps its place, a new one goes last).
    pub fn new(mut value: Value) -> Result<Self> {
        match Self::with_slot(&mut value)? {
            Some(p) => Ok(p),
            None => Self::whole(value),
        }
    }

    /// As [`Prepared::new`], leaving `value` with the caller (with its empty
    /// `metadata.resourceVersion`): what a create that may be retried under another name keeps.
    pub fn of(value: &mut Value) -> Result<Self> {
        match Self::with_slot(value)? {
            Some(p) => Ok(p),
            None => Self::whole(value.clone()),
        }
    }

    /// `None` when `value` has no metadata object.
    fn with_slot(value: &mut Value) -> Result<Option<Self>> {
        let Some(meta) = crate::model::meta::metadata_mut(value) else {
            return Ok(None);
        };
        meta.insert("resourceVersion".into(), Value::String(String::new()));
        let mut json = Vec::with_capacity(256);
        let slot = write_with_rv_slot(&mut json, value)?;
        Ok(Some(Self {
            head: head_of(value),
            json,
            slot: Some(slot),
            whole: None,
        }))
    }

    fn whole(value: Value) -> Result<Self> {
        let json = serde_json::to_vec(&value).map_err(StoreError::Encode)?;
        Ok(Self {
            head: head_of(&value),
            json,
            slot: None,
            whole: Some(value),
        })
    }

    /// The serialized object with `metadata.resourceVersion` an empty string: what a backend
    /// that learns the revision only from its own commit keeps (etcd).
    pub fn unversioned_json(&self) -> &[u8] {
        &self.json
    }

    /// Bytes of the serialized object without its revision.
    pub fn len(&self) -> usize {
        self.json.len()
    }

    pub fn is_empty(&self) -> bool {
        self.json.is_empty()
    }

    /// The stored object at revision `rv`.
    pub fn stored(self, rv: u64) -> Result<StoredObject> {
        let slot = match (self.slot, self.whole) {
            (Some(slot), None) => slot,
            (_, whole) => return StoredObject::new(rv, whole.unwrap_or_default()),
        };
        let head = self.head;
        let digits = rv.to_string();
        let mut json = Vec::with_capacity(self.json.len() + digits.len());
        json.extend_from_slice(&self.json[..slot]);
        json.extend_from_slice(digits.as_bytes());
        json.extend_from_slice(&self.json[slot..]);
        Ok(StoredObject::from_head(rv, head, Bytes::from(json)))
    }
}

/// Write `value` (an object whose `metadata` is an object holding `resourceVersion: ""`) as
/// compact JSON, exactly as `serde_json::to_vec` would; returns the offset just inside the quotes
/// of `metadata.resourceVersion`.
fn write_with_rv_slot(out: &mut Vec<u8>, value: &Value) -> Result<usize> {
    let Value::Object(top) = value else {
        return Err(StoreError::Encode(serde::ser::Error::custom(
            "not an object",
        )));
    };
    /// `,"key":` (no comma before the first entry).
    fn key(out: &mut Vec<u8>, first: bool, k: &str) -> Result<()> {
        if !first {
            out.push(b',');
        }
        serde_json::to_writer(&mut *out, k).map_err(StoreError::Encode)?;
        out.push(b':');
        Ok(())
    }
    let mut slot = None;
    out.push(b'{');
    for (i, (k, v)) in top.iter().enumerate() {
        key(out, i == 0, k)?;
        match v {
            Value::Object(meta) if k == "metadata" => {
                out.push(b'{');
                for (j, (mk, mv)) in meta.iter().enumerate() {
                    key(out, j == 0, mk)?;
                    if mk == "resourceVersion" {
                        out.push(b'"');
                        slot = Some(out.len());
                        out.push(b'"');
                    } else {
                        serde_json::to_writer(&mut *out, mv).map_err(StoreError::Encode)?;
                    }
                }
                out.push(b'}');
            }
            _ => serde_json::to_writer(&mut *out, v).map_err(StoreError::Encode)?,
        }
    }
    out.push(b'}');
    slot.ok_or_else(|| {
        StoreError::Encode(serde::ser::Error::custom(
            "metadata.resourceVersion missing",
        ))
    })
}

/// Serializes an object as is, except `metadata.managedFields`.
struct WithoutManagedFields<'a>(&'a Value);

impl serde::Serialize for WithoutManagedFields<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let Value::Object(top) = self.0 else {
            return self.0.serialize(s);
        };
        let mut map = s.serialize_map(Some(top.len()))?;
        for (k, v) in top {
            match v {
                Value::Object(meta) if k == "metadata" => {
                    map.serialize_entry(k, &MetadataWithout(meta))?;
                }
                _ => map.serialize_entry(k, v)?,
            }
        }
        map.end()
    }
}

struct MetadataWithout<'a>(&'a serde_json::Map<String, Value>);

impl serde::Serialize for MetadataWithout<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = s.serialize_map(None)?;
        for (k, v) in self.0.iter().filter(|(k, _)| *k != "managedFields") {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }
}

/// A committed change, in revision order. `prev` is the state before it (none for a create).
#[derive(Debug, Clone)]
pub struct Event {
    pub rv: u64,
    pub kind: EventType,
    pub key: ObjectKey,
    /// The object after the change; for a delete, the last state stamped with the delete's rv.
    pub object: Arc<StoredObject>,
    pub prev: Option<Arc<StoredObject>>,
}

/// What must hold for a write to commit; checked atomically with the write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Precondition {
    /// Create: the key must be free.
    MustNotExist,
    /// Update or delete of exactly this revision of the object.
    ResourceVersion(u64),
    /// Update or delete of whatever is there (the object must exist).
    Exists,
}

#[derive(Debug, Clone)]
pub enum WriteOp {
    Put {
        key: ObjectKey,
        value: Value,
        precondition: Precondition,
    },
    Delete {
        key: ObjectKey,
        precondition: Precondition,
    },
}

impl WriteOp {
    pub fn key(&self) -> &ObjectKey {
        match self {
            WriteOp::Put { key, .. } | WriteOp::Delete { key, .. } => key,
        }
    }
}

/// A consistent view of one resource's objects at one revision, keyed `namespace/name`.
#[derive(Debug, Clone)]
pub struct Snapshot {
    pub rv: u64,
    pub items: imbl::OrdMap<String, Arc<StoredObject>>,
}

/// Where a watch starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WatchFrom {
    /// The current state as a snapshot, then every change after it.
    Now,
    /// Every change after this revision.
    After(u64),
}

/// A started watch: the snapshot (for [`WatchFrom::Now`]) or the backlog of events after the
/// requested revision, then the live feed. Live events at or below `rv` must be skipped.
pub struct WatchStart {
    pub rv: u64,
    pub snapshot: Option<Snapshot>,
    pub backlog: Vec<Arc<Event>>,
    pub live: broadcast::Receiver<Arc<Event>>,
    /// The revision of the resource's latest event sent to `live` (one counter per resource for
    /// the store's life): a watcher that has applied every event up to it is current.
    pub published: Arc<std::sync::atomic::AtomicU64>,
}

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("object already exists")]
    AlreadyExists,
    #[error("object not found")]
    NotFound,
    #[error("object has been modified (current resourceVersion {current})")]
    Conflict { current: u64 },
    /// The revision is older than the kept history (`oldest` is the oldest one still served).
    #[error("too old resource version: {requested} ({oldest})")]
    TooOld { requested: u64, oldest: u64 },
    #[error("storage i/o failed: {0}")]
    Io(#[from] sled::Error),
    #[error("file i/o failed: {0}")]
    File(#[from] std::io::Error),
    #[error("stored object is corrupt: {0}")]
    Decode(serde_json::Error),
    #[error("object cannot be encoded: {0}")]
    Encode(serde_json::Error),
    #[error("the store is shut down")]
    Closed,
    #[error("the store failed earlier and refuses writes: {0}")]
    Poisoned(String),
    /// The disk failed a write (it is full, say): writes are refused until it works again.
    #[error("storage is unavailable: {0}")]
    Unavailable(String),
    /// The object's JSON is larger than the store keeps.
    #[error("object is {size} bytes, larger than the limit of {limit}")]
    TooLarge { size: usize, limit: usize },
    /// The object nests deeper than [`crate::model::limits::MAX_DEPTH`].
    #[error("object nests deeper than {0} levels")]
    TooDeep(usize),
}

pub type Result<T, E = StoreError> = std::result::Result<T, E>;
pub type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send + 'static>>;

/// What [`Store::create`] resolves to: the stored object, or why not and the object back.
pub type Created = std::result::Result<Arc<StoredObject>, (StoreError, Value)>;

/// The storage contract the API layer is written against.
pub trait Store: Send + Sync + 'static {
    /// The latest committed revision.
    fn revision(&self) -> u64;

    /// The largest object stored, in bytes of its JSON ([`StoreError::TooLarge`] beyond): a
    /// write may be refused before the work of storing it.
    fn max_object_bytes(&self) -> usize {
        crate::model::limits::DEFAULT_MAX_OBJECT_BYTES
    }

    /// The latest committed state of one object.
    fn get(&self, key: &ObjectKey) -> Option<Arc<StoredObject>>;

    /// One resource's objects at the latest revision, or at exactly `at` if that is still within
    /// the history window ([`StoreError::TooOld`] otherwise).
    fn list(&self, resource: &str, at: Option<u64>) -> Result<Snapshot>;

    /// Commit one write. Resolves once the write is durable (see `docs/architecture.md` for the
    /// exact guarantee) and visible to readers and watchers; returns the stored object (for a
    /// delete: the last state stamped with the delete's revision).
    fn write(&self, mut op: WriteOp) -> BoxFuture<Result<Arc<StoredObject>>> {
        match prepare(&mut op) {
            Ok(prepared) => self.write_prepared(op, prepared),
            Err(e) => Box::pin(std::future::ready(Err(e))),
        }
    }

    /// [`Store::write`] once [`prepare`] has checked and serialized a put's object (`prepared`;
    /// `None` for a delete). The op's own value is no longer read.
    fn write_prepared(
        &self,
        op: WriteOp,
        prepared: Option<Prepared>,
    ) -> BoxFuture<Result<Arc<StoredObject>>>;

    /// Create `value` at `key` (a put that must not find the key taken); when refused, the
    /// object comes back with the error, so that a create under a generated name can retry
    /// under another one without having kept a copy.
    fn create(&self, key: ObjectKey, mut value: Value) -> BoxFuture<Created> {
        let prepared = match check_depth(&value).and_then(|()| Prepared::of(&mut value)) {
            Ok(p) => p,
            Err(e) => return Box::pin(std::future::ready(Err((e, value)))),
        };
        let op = WriteOp::Put {
            key,
            value: Value::Null,
            precondition: Precondition::MustNotExist,
        };
        let written = self.write_prepared(op, Some(prepared));
        Box::pin(async move { written.await.map_err(|e| (e, value)) })
    }

    /// Start watching one resource.
    fn watch(&self, resource: &str, from: WatchFrom) -> Result<WatchStart>;

    /// Start watching one namespace of a resource (`None`: all of it): the live feed carries
    /// only that namespace's events, so its watchers are not woken by every write of the kind.
    fn watch_in(
        &self,
        resource: &str,
        namespace: Option<&str>,
        from: WatchFrom,
    ) -> Result<WatchStart> {
        let _ = namespace;
        self.watch(resource, from)
    }

    /// Resolves `true` once the latest revision is at least `rv`, `false` after `timeout`.
    fn wait_for_revision(&self, rv: u64, timeout: std::time::Duration) -> BoxFuture<bool>;

    /// Resolves once this store's view holds every write committed before the call: what a
    /// consistent read (`resourceVersion` unset) waits for. A store that is the only writer of
    /// its data is always caught up; a view kept from a shared database (etcd) may lag it.
    fn sync(&self) -> BoxFuture<Result<()>> {
        Box::pin(std::future::ready(Ok(())))
    }

    /// Stop accepting writes, commit what was accepted, flush, and release the files.
    fn shutdown(&self) -> Result<()>;

    /// Whether writes work, and what was set aside at start-up.
    fn health(&self) -> Health;

    /// Append the store's own metrics (Prometheus text) to `out`.
    fn render_metrics(&self, _out: &mut String) {}
}

/// What `/readyz` and `/metrics` report about the store.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Health {
    /// Why writes are refused right now (the disk failed a write and has not recovered yet).
    pub unavailable: Option<String>,
    /// Stored objects that could not be read at start-up and were set aside (not served).
    pub quarantined: usize,
}

/// What the engines' tests share.
#[cfg(test)]
pub(crate) mod testing {
    use std::path::PathBuf;

    /// A new, empty directory under the system's temp dir, `turtles-<tag>-<pid>-<uuid>`.
    pub(crate) fn temp_dir(tag: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "turtles-{tag}-{}-{}",
            std::process::id(),
            uuid::Uuid::new_v4()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::meta::Meta;
    use serde_json::json;

    #[test]
    fn selectable_field_values_are_made_once_per_version() {
        let obj = StoredObject::new(
            7,
            serde_json::json!({"metadata": {"name": "p"}, "spec": {"nodeName": "n1"}}),
        )
        .unwrap();
        let calls = std::sync::atomic::AtomicUsize::new(0);
        let compute = |v: &Value| -> Box<[Box<str>]> {
            calls.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            Box::new([v["spec"]["nodeName"].as_str().unwrap_or("").into()])
        };
        for _ in 0..3 {
            assert_eq!(&*obj.field_values(1, compute)[0], "n1");
        }
        assert_eq!(calls.load(std::sync::atomic::Ordering::SeqCst), 1);
        // Another set of fields: made for the asker, the kept one stays.
        assert_eq!(&*obj.field_values(2, compute)[0], "n1");
        assert_eq!(&*obj.field_values(1, compute)[0], "n1");
        assert_eq!(calls.load(std::sync::atomic::Ordering::SeqCst), 2);
        // Nothing else is kept: the object is not held parsed.
        assert!(obj.parsed().is_none());
    }

    #[test]
    fn a_pick_reads_the_same_from_bytes_and_from_the_tree() {
        let raw = r#"{"metadata":{"name":"p"},"spec":{"containers":[{"name":"c"}],"nodeName":"n1"},"status":{"nodeName":"no"}}"#;
        let fresh = || StoredObject::from_json(Bytes::from(raw.as_bytes().to_vec())).unwrap();
        let obj = fresh();
        assert_eq!(obj.pick("spec", &["nodeName"]), json!({"nodeName": "n1"}));
        assert_eq!(obj.pick("spec", &["absent"]), json!({}));
        assert_eq!(obj.pick("nothing", &["nodeName"]), Value::Null);
        let kept = fresh();
        kept.value();
        assert_eq!(kept.pick("spec", &["nodeName"]), json!({"nodeName": "n1"}));
        assert_eq!(kept.pick("nothing", &["nodeName"]), Value::Null);
    }

    #[test]
    fn the_head_read_from_bytes_is_the_head_of_the_parsed_object() {
        let cases: &[&str] = &[
            r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"n","uid":"u","resourceVersion":"7","labels":{"x":"1"},"annotations":{"big":"..."},"managedFields":[{"manager":"m"}]},"data":{"k":"v"}}"#,
            // owners, finalizers, deletion; escaped keys and values; metadata not first.
            r#"{"data":{"metadata":{"name":"not me"}},"metadata":{"ownerReferences":[{"uid":"o","kind":"K","name":"p"}],"finalizers":["f"],"deletionTimestamp":"2026-01-01T00:00:00Z","na\u006de":"esc\"aped"},"kind":"K"}"#,
            // a key given twice: the last one wins, in metadata and at the top.
            r#"{"kind":"A","kind":"B","metadata":{"name":"first","name":"second"}}"#,
            r#"{"metadata":{"name":"gone"},"metadata":{"namespace":"kept"}}"#,
            // metadata that is not an object: no metadata in the head.
            r#"{"kind":"K","metadata":"nope"}"#,
            r#"{"kind":"K","metadata":null}"#,
            r#"{"kind":"K"}"#,
            // nulls are kept as given.
            r#"{"metadata":{"name":null,"labels":null,"deletionTimestamp":null}}"#,
        ];
        for (i, raw) in cases.iter().enumerate() {
            let parsed: Value = serde_json::from_slice(raw.as_bytes()).unwrap();
            let obj = StoredObject::from_json(Bytes::from(raw.as_bytes().to_vec())).unwrap();
            assert_eq!(obj.head(), &head_of(&parsed), "case {i}");
            assert_eq!(obj.value(), &parsed, "case {i}");
        }
        let obj = StoredObject::from_json(Bytes::from_static(CASE0)).unwrap();
        assert_eq!(obj.rv, 7, "the revision is the object's own");
        assert_eq!(
            obj.head(),
            &Head::of(
                &json!({"apiVersion": "v1", "metadata": {"name": "a", "namespace": "n", "uid": "u", "labels": {"x": "1"}}})
            ),
            "no kind, resourceVersion, annotations, managedFields or data in the head"
        );
        assert!(
            obj.parsed().is_none(),
            "reading the head parses nothing more"
        );
        assert!(matches!(obj.parse(), std::borrow::Cow::Owned(_)));
        assert!(obj.parsed().is_none(), "parse() keeps nothing");
        for bad in [&b"[1]"[..], b"\"s\"", b"{", b"{\"metadata\":{} } x"] {
            assert!(StoredObject::from_json(Bytes::from(bad.to_vec())).is_err());
        }
        // What parsing the whole object refuses is refused in the parts the head skips too.
        let deep = format!("{{\"data\":{}1{}}}", "[".repeat(200), "]".repeat(200));
        for bad in [
            &b"{\"metadata\":{\"name\":\"a\"},\"data\":{\"k\":\"\\ud800\"}}"[..],
            b"{\"metadata\":{\"name\":\"a\"},\"data\":{\"k\":\"\xff\"}}",
            b"{\"metadata\":{\"annotations\":{\"\xff\":\"\"}}}",
            b"{\"spec\":{\"n\":1e400}}",
            deep.as_bytes(),
        ] {
            let what = String::from_utf8_lossy(bad);
            assert!(serde_json::from_slice::<Value>(bad).is_err(), "{what}");
            assert!(
                StoredObject::from_json(Bytes::from(bad.to_vec())).is_err(),
                "{what}"
            );
        }
    }

    const CASE0: &[u8] = br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"n","uid":"u","resourceVersion":"7","labels":{"x":"1"},"annotations":{"big":"..."},"managedFields":[{"manager":"m"}]},"data":{"k":"v"}}"#;

    #[test]
    fn stored_versions_keep_no_parsed_tree_until_one_is_read_whole() {
        let p = Prepared::new(json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "labels": {"l": "v"}, "managedFields": [{"manager": "m"}]}, "data": {"k": "v"}})).unwrap();
        let obj = p.stored(42).unwrap();
        assert!(obj.parsed().is_none());
        assert_eq!(obj.rv, 42);
        assert_eq!(obj.parse()["metadata"]["resourceVersion"], "42");
        assert_eq!(obj.head().label("l"), Some("v"));
        assert_eq!(
            obj.lean_json().as_ref(),
            br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","labels":{"l":"v"},"resourceVersion":"42"},"data":{"k":"v"}}"#
        );
        assert!(
            obj.parsed().is_none(),
            "the lean copy is made without keeping the tree"
        );
        assert_eq!(obj.value()["data"]["k"], "v");
        assert!(obj.parsed().is_some());
    }

    #[test]
    fn prepared_objects_store_exactly_what_a_stored_object_serializes() {
        let cases = [
            // resourceVersion absent: it goes last in metadata.
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "namespace": "n"}, "data": {"k": "v"}}),
            // present: it keeps its place, whatever it held.
            json!({"metadata": {"resourceVersion": "99", "name": "b", "labels": {"resourceVersion": "x"}}, "kind": "K"}),
            // metadata not first; keys and strings that need escaping; nested metadata elsewhere.
            json!({"kind": "K\"\n\u{0}", "spec": {"metadata": {"resourceVersion": ""}}, "metadata": {"name": "c\"", "annotations": {"a\u{1}": "é\\"}}, "z": [1, 2.5, null, true, {"metadata": {}}]}),
            // no metadata object: serialized once the revision is known.
            json!({"kind": "K"}),
            json!({"kind": "K", "metadata": "not an object"}),
        ];
        for (i, v) in cases.into_iter().enumerate() {
            for rv in [1, 42, 1_000_000_007, u64::MAX] {
                let want = StoredObject::new(rv, v.clone()).unwrap();
                let got = Prepared::new(v.clone()).unwrap().stored(rv).unwrap();
                assert_eq!(
                    std::str::from_utf8(&got.json).unwrap(),
                    std::str::from_utf8(&want.json).unwrap(),
                    "case {i} at {rv}"
                );
                assert_eq!(got.value(), want.value(), "case {i}");
                assert_eq!(got.rv, rv);
                let reparsed: Value = serde_json::from_slice(&got.json).unwrap();
                assert_eq!(&reparsed, got.value(), "case {i}: bytes and value agree");
            }
        }
    }

    #[test]
    fn lean_json_leaves_out_managed_fields_and_nothing_else() {
        let v = json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "a", "namespace": "n", "labels": {"x": "y"},
                         "managedFields": [{"manager": "kubectl", "operation": "Update"}]},
            "data": {"k": "v"},
        });
        let o = StoredObject::new(7, v).unwrap();
        let lean: Value = serde_json::from_slice(o.lean_json()).unwrap();
        let mut want = o.value().clone();
        want["metadata"]
            .as_object_mut()
            .unwrap()
            .remove("managedFields");
        assert_eq!(lean, want);
        assert_eq!(lean["metadata"]["resourceVersion"], "7");
        // Made once: the same bytes every time.
        assert_eq!(o.lean_json().as_ptr(), o.lean_json().as_ptr());

        // Without managed fields the stored bytes are handed out as they are.
        let plain = StoredObject::new(8, json!({"metadata": {"name": "b"}})).unwrap();
        assert_eq!(plain.lean_json().as_ptr(), plain.json.as_ptr());
    }
}
