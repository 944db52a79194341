//! Storage: the [`Store`] trait and its sled backend.
//!
//! The model is etcd's: one global revision (our `resourceVersion`) that every committed write
//! advances by exactly one, assigned atomically with the write; reads of the latest state or of a
//! recent past revision; and an ordered stream of change events that a watcher can resume from any
//! revision still in the history window. A second backend on etcd would map revisions 1:1.

pub mod etcd_store;
mod index;
pub mod sled_store;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use bytes::Bytes;
use serde_json::Value;
use tokio::sync::broadcast;

use crate::model::{EventType, ObjectKey};

pub use sled_store::{SledStore, StoreOptions};

/// One stored version of an object: the JSON (with `metadata.resourceVersion` set to `rv`) both
/// parsed and serialized, so reads never re-serialize and filters never re-parse.
#[derive(Debug)]
pub struct StoredObject {
    pub rv: u64,
    pub value: Value,
    pub json: Bytes,
    /// `json` without `metadata.managedFields`, made on first use (what a controller's
    /// reconcile is handed; see [`StoredObject::lean_json`]).
    lean: std::sync::OnceLock<Bytes>,
}

impl StoredObject {
    /// Build from a value whose `metadata.resourceVersion` is (or will be treated as) `rv`.
    pub fn new(rv: u64, mut value: Value) -> Result<Self> {
        if let Some(meta) = crate::model::meta::metadata_mut(&mut value) {
            meta.insert("resourceVersion".into(), Value::String(rv.to_string()));
        }
        let json = Bytes::from(serde_json::to_vec(&value).map_err(StoreError::Encode)?);
        Ok(Self::from_parts(rv, value, json))
    }

    /// An object that was never stored (a dry run): its `resourceVersion` is left as given.
    pub fn unstored(value: Value) -> Result<Self> {
        let json = Bytes::from(serde_json::to_vec(&value).map_err(StoreError::Encode)?);
        Ok(Self::from_parts(0, value, json))
    }

    /// From a value and its serialized form (which must be the same object).
    pub fn from_parts(rv: u64, value: Value, json: Bytes) -> Self {
        Self {
            rv,
            value,
            json,
            lean: std::sync::OnceLock::new(),
        }
    }

    /// The JSON without `metadata.managedFields`: what informers hand controllers (kube's
    /// controller-manager strips managedFields from its informers' caches the same way; a
    /// reconcile parses half the bytes). Made once per stored version, shared by every reader.
    pub fn lean_json(&self) -> &Bytes {
        self.lean.get_or_init(|| {
            let has_managed = self
                .value
                .get("metadata")
                .and_then(|m| m.get("managedFields"))
                .is_some();
            if !has_managed {
                return self.json.clone();
            }
            serde_json::to_vec(&WithoutManagedFields(&self.value))
                .map(Bytes::from)
                .unwrap_or_else(|_| self.json.clone())
        })
    }
}

/// A put's object checked for nesting (before anything recursive walks it) and serialized on the
/// writing task ([`Prepared`]); `None` for a delete. Every backend's `write` starts here.
pub fn prepare(op: &mut WriteOp) -> Result<Option<Prepared>> {
    match op {
        WriteOp::Put { value, .. } => {
            if !crate::model::limits::within_depth(value) {
                return Err(StoreError::TooDeep(crate::model::limits::MAX_DEPTH));
            }
            Prepared::new(std::mem::take(value)).map(Some)
        }
        WriteOp::Delete { .. } => Ok(None),
    }
}

/// An object serialized before its revision is known: the JSON with `metadata.resourceVersion`
/// an empty string whose digits go in at `slot`. Writers prepare their object on their own task,
/// so the store's single writer thread only splices the revision in (no clone, no serialization
/// of whole objects on the one thread every write goes through).
#[derive(Debug)]
pub struct Prepared {
    value: Value,
    json: Vec<u8>,
    /// Where the revision's digits go; `None` when the value has no metadata object (it is
    /// serialized again once the revision is known, as [`StoredObject::new`] does).
    slot: Option<usize>,
}

impl Prepared {
    /// Serialize `value` with an empty `metadata.resourceVersion`, in the field order
    /// [`StoredObject::new`] gives it (an existing key keeps its place, a new one goes last).
    pub fn new(mut value: Value) -> Result<Self> {
        let Some(meta) = crate::model::meta::metadata_mut(&mut value) else {
            let json = serde_json::to_vec(&value).map_err(StoreError::Encode)?;
            return Ok(Self {
                value,
                json,
                slot: None,
            });
        };
        meta.insert("resourceVersion".into(), Value::String(String::new()));
        let mut json = Vec::with_capacity(256);
        let slot = write_with_rv_slot(&mut json, &value)?;
        Ok(Self {
            value,
            json,
            slot: Some(slot),
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

    pub fn value(&self) -> &Value {
        &self.value
    }

    /// The stored object at revision `rv`.
    pub fn stored(self, rv: u64) -> Result<StoredObject> {
        let Some(slot) = self.slot else {
            return StoredObject::new(rv, self.value);
        };
        let mut value = self.value;
        let digits = rv.to_string();
        let mut json = Vec::with_capacity(self.json.len() + digits.len());
        json.extend_from_slice(&self.json[..slot]);
        json.extend_from_slice(digits.as_bytes());
        json.extend_from_slice(&self.json[slot..]);
        if let Some(meta) = crate::model::meta::metadata_mut(&mut value) {
            meta.insert("resourceVersion".into(), Value::String(digits));
        }
        Ok(StoredObject::from_parts(rv, value, Bytes::from(json)))
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

/// The storage contract the API layer is written against.
pub trait Store: Send + Sync + 'static {
    /// The latest committed revision.
    fn revision(&self) -> u64;

    /// The latest committed state of one object.
    fn get(&self, key: &ObjectKey) -> Option<Arc<StoredObject>>;

    /// One resource's objects at the latest revision, or at exactly `at` if that is still within
    /// the history window ([`StoreError::TooOld`] otherwise).
    fn list(&self, resource: &str, at: Option<u64>) -> Result<Snapshot>;

    /// Commit one write. Resolves once the write is durable (see `docs/architecture.md` for the
    /// exact guarantee) and visible to readers and watchers; returns the stored object (for a
    /// delete: the last state stamped with the delete's revision).
    fn write(&self, op: WriteOp) -> BoxFuture<Result<Arc<StoredObject>>>;

    /// Start watching one resource.
    fn watch(&self, resource: &str, from: WatchFrom) -> Result<WatchStart>;

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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

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
                assert_eq!(got.value, want.value, "case {i}");
                assert_eq!(got.rv, rv);
                let reparsed: Value = serde_json::from_slice(&got.json).unwrap();
                assert_eq!(reparsed, got.value, "case {i}: bytes and value agree");
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
        let mut want = o.value.clone();
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
