//! A stored version's *head*: the few fields of an object that the every-object paths read (list
//! and watch filters, informers' keys, the garbage collector's owner index, finalization), kept
//! parsed beside the object's JSON.
//!
//! Every object in the store pays for its head, so it is packed: its strings back to back in one
//! allocation, preceded by where each ends, and owner references (which most objects lack) in a
//! second only when there are some. A ConfigMap's head is ~100 bytes where a `serde_json` map of
//! the same fields took ~1.5 KB.

use serde_json::{Map, Value};

use crate::model::meta::{Meta, OwnerRefView};

/// The single-string fields, in their order in [`Head::text`].
const API_VERSION: usize = 0;
const NAME: usize = 1;
const NAMESPACE: usize = 2;
const UID: usize = 3;
const DELETION_TIMESTAMP: usize = 4;
const FIXED: usize = 5;

/// `metadata` fields kept as single strings, with their slot.
const FIXED_METADATA: [(&str, usize); 4] = [
    ("name", NAME),
    ("namespace", NAMESPACE),
    ("uid", UID),
    ("deletionTimestamp", DELETION_TIMESTAMP),
];

/// `apiVersion` and, of `metadata`: `name`, `namespace`, `uid`, `deletionTimestamp`, `labels`,
/// `finalizers` and `ownerReferences` (string values only, as the readers of a whole object
/// take them: a field of another JSON type reads as absent).
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Head {
    /// `[n: u32][n ends: u32]` (little-endian), then `n` strings back to back, each ending at its
    /// end (counted from the first string's start): the fixed fields, then each label's key and
    /// value, then each finalizer.
    data: Box<[u8]>,
    /// Bit `i`: fixed field `i` is present.
    present: u8,
    labels: u32,
    owners: Option<Box<[OwnerRef]>>,
}

/// One entry of `metadata.ownerReferences`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OwnerRef {
    api_version: Box<str>,
    kind: Box<str>,
    name: Box<str>,
    uid: Box<str>,
    controller: bool,
    block_owner_deletion: bool,
}

impl Head {
    /// The head of an object (any JSON; a non-object has an empty head).
    pub fn of(value: &Value) -> Self {
        let Value::Object(obj) = value else {
            return Self::default();
        };
        let mut b = Builder::default();
        b.fixed(API_VERSION, obj.get("apiVersion"));
        let meta = obj.get("metadata").and_then(Value::as_object);
        let field = |k: &str| meta.and_then(|m| m.get(k));
        for (k, slot) in FIXED_METADATA {
            b.fixed(slot, field(k));
        }
        b.finish(
            field("labels").and_then(Value::as_object),
            field("finalizers").and_then(Value::as_array),
            value.owner_references(),
        )
    }

    fn word(&self, i: usize) -> usize {
        let at = 4 * i;
        self.data
            .get(at..at + 4)
            .and_then(|b| b.try_into().ok())
            .map_or(0, |b| u32::from_le_bytes(b) as usize)
    }

    /// How many strings there are.
    fn count(&self) -> usize {
        self.word(0)
    }

    fn span(&self, i: usize) -> &str {
        let text = 4 + 4 * self.count();
        let start = match i {
            0 => 0,
            i => self.word(i),
        };
        let end = self.word(i + 1);
        self.data
            .get(text + start..text + end)
            .and_then(|b| std::str::from_utf8(b).ok())
            .unwrap_or("")
    }

    fn fixed(&self, slot: usize) -> Option<&str> {
        (self.present & (1 << slot) != 0).then(|| self.span(slot))
    }

    /// `apiVersion` ("" if absent).
    pub fn api_version(&self) -> &str {
        self.fixed(API_VERSION).unwrap_or("")
    }

    /// Each label's key and value, by key (so [`Meta::label`] is a binary search: a selector's
    /// lookups cost the log of the labels an object has, not their number).
    pub fn labels(&self) -> impl Iterator<Item = (&str, &str)> {
        (0..self.labels as usize).map(|i| (self.span(FIXED + 2 * i), self.span(FIXED + 2 * i + 1)))
    }

    /// Each finalizer, in order.
    pub fn finalizers(&self) -> impl Iterator<Item = &str> {
        (FIXED + 2 * self.labels as usize..self.count()).map(|i| self.span(i))
    }

    /// Heap bytes this head holds (for tests and estimates).
    pub fn heap_bytes(&self) -> usize {
        self.data.len()
            + self.owners.as_ref().map_or(0, |o| {
                o.len() * std::mem::size_of::<OwnerRef>()
                    + o.iter()
                        .map(|r| r.api_version.len() + r.kind.len() + r.name.len() + r.uid.len())
                        .sum::<usize>()
            })
    }
}

impl std::fmt::Debug for Head {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Head")
            .field("apiVersion", &self.fixed(API_VERSION))
            .field("name", &self.fixed(NAME))
            .field("namespace", &self.fixed(NAMESPACE))
            .field("uid", &self.fixed(UID))
            .field("deletionTimestamp", &self.fixed(DELETION_TIMESTAMP))
            .field("labels", &self.labels().collect::<Vec<_>>())
            .field("finalizers", &self.finalizers().collect::<Vec<_>>())
            .field("ownerReferences", &self.owners)
            .finish()
    }
}

impl Meta for Head {
    fn meta_str(&self, field: &str) -> Option<&str> {
        let slot = FIXED_METADATA.iter().find(|(k, _)| *k == field)?.1;
        self.fixed(slot)
    }

    fn label(&self, key: &str) -> Option<&str> {
        let (mut lo, mut hi) = (0usize, self.labels as usize);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            match self.span(FIXED + 2 * mid).cmp(key) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => return Some(self.span(FIXED + 2 * mid + 1)),
            }
        }
        None
    }

    fn finalizer_names(&self) -> Vec<&str> {
        self.finalizers().collect()
    }

    fn owner_references(&self) -> Vec<OwnerRefView<'_>> {
        self.owners
            .iter()
            .flat_map(|o| o.iter())
            .map(|r| OwnerRefView {
                api_version: &r.api_version,
                kind: &r.kind,
                name: &r.name,
                uid: &r.uid,
                controller: r.controller,
                block_owner_deletion: r.block_owner_deletion,
            })
            .collect()
    }
}

#[derive(Default)]
struct Builder {
    text: String,
    ends: Vec<u32>,
    present: u8,
    /// The fixed fields, filled in by slot.
    fixed: [Option<String>; FIXED],
}

impl Builder {
    fn fixed(&mut self, slot: usize, v: Option<&Value>) {
        if let Some(s) = v.and_then(Value::as_str) {
            self.fixed[slot] = Some(s.to_owned());
            self.present |= 1 << slot;
        }
    }

    fn push(&mut self, s: &str) {
        self.text.push_str(s);
        // Objects are far below 4 GiB (the request body limit); saturate rather than wrap.
        self.ends
            .push(u32::try_from(self.text.len()).unwrap_or(u32::MAX));
    }

    fn finish(
        mut self,
        labels: Option<&Map<String, Value>>,
        finalizers: Option<&Vec<Value>>,
        owners: Vec<OwnerRefView<'_>>,
    ) -> Head {
        let fixed = std::mem::take(&mut self.fixed);
        for s in &fixed {
            self.push(s.as_deref().unwrap_or(""));
        }
        let mut sorted: Vec<(&str, &str)> = labels
            .into_iter()
            .flatten()
            .filter_map(|(k, v)| Some((k.as_str(), v.as_str()?)))
            .collect();
        sorted.sort_unstable_by(|a, b| a.0.cmp(b.0));
        let n_labels = u32::try_from(sorted.len()).unwrap_or(u32::MAX);
        for (k, v) in sorted {
            self.push(k);
            self.push(v);
        }
        for f in finalizers.into_iter().flatten() {
            if let Some(f) = f.as_str() {
                self.push(f);
            }
        }
        let owners: Vec<OwnerRef> = owners
            .into_iter()
            .map(|r| OwnerRef {
                api_version: r.api_version.into(),
                kind: r.kind.into(),
                name: r.name.into(),
                uid: r.uid.into(),
                controller: r.controller,
                block_owner_deletion: r.block_owner_deletion,
            })
            .collect();
        let mut data = Vec::with_capacity(4 + 4 * self.ends.len() + self.text.len());
        let count = u32::try_from(self.ends.len()).unwrap_or(u32::MAX);
        for w in std::iter::once(count).chain(self.ends) {
            data.extend_from_slice(&w.to_le_bytes());
        }
        data.extend_from_slice(self.text.as_bytes());
        Head {
            data: data.into_boxed_slice(),
            present: self.present,
            labels: n_labels,
            owners: (!owners.is_empty()).then(|| owners.into_boxed_slice()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_head_reads_as_the_whole_object_does() {
        let whole = json!({
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "metadata": {
                "name": "web-1",
                "namespace": "prod",
                "uid": "u-1",
                "labels": {"app": "web", "tier": "", "odd": 3},
                "finalizers": ["a/b", 7, "c", "ünïcode/ß"],
                "deletionTimestamp": "2026-01-01T00:00:00Z",
                "ownerReferences": [
                    {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "uid": "d-1",
                     "controller": true, "blockOwnerDeletion": true},
                    "not an object",
                    {"kind": "Thing", "name": "t"}
                ],
                "annotations": {"big": "x"}
            },
            "spec": {"replicas": 3}
        });
        let head = Head::of(&whole);
        for f in ["name", "namespace", "uid", "deletionTimestamp"] {
            assert_eq!(head.meta_str(f), whole.meta_str(f), "{f}");
        }
        assert_eq!(head.api_version(), "apps/v1");
        for k in ["app", "tier", "odd", "none"] {
            assert_eq!(head.label(k), whole.label(k), "{k}");
        }
        assert_eq!(
            head.labels().collect::<Vec<_>>(),
            [("app", "web"), ("tier", "")]
        );
        assert_eq!(head.finalizer_names(), whole.finalizer_names());
        assert_eq!(head.owner_references(), whole.owner_references());
        assert_eq!(head.owner_references().len(), 2);
        assert!(head.owner_references()[0].controller);
        assert!(head.owner_references()[0].block_owner_deletion);

        let bare = Head::of(&json!({"metadata": {"name": ""}}));
        assert_eq!(bare.meta_str("name"), Some(""));
        assert_eq!(bare.meta_str("uid"), None);
        assert_eq!(bare.meta_str("annotations"), None);
        assert_eq!(bare.api_version(), "");
        assert!(bare.finalizer_names().is_empty());
        assert_eq!(Head::of(&json!([1])), Head::default());
        assert_eq!(Head::of(&json!({"metadata": 5})).meta_str("name"), None);
    }

    #[test]
    fn labels_are_kept_by_key_and_found_by_it() {
        let labels: serde_json::Map<String, Value> = (0..500)
            .rev()
            .map(|i| (format!("k{i:04}"), json!(format!("v{i}"))))
            .chain([("".to_owned(), json!("empty key"))])
            .collect();
        let head = Head::of(&json!({"metadata": {"name": "a", "labels": labels}}));
        let keys: Vec<&str> = head.labels().map(|(k, _)| k).collect();
        let mut sorted = keys.clone();
        sorted.sort_unstable();
        assert_eq!(keys, sorted);
        assert_eq!(keys.len(), 501);
        for i in [0, 1, 250, 498, 499] {
            assert_eq!(
                head.label(&format!("k{i:04}")),
                Some(format!("v{i}").as_str())
            );
        }
        assert_eq!(head.label(""), Some("empty key"));
        for missing in ["k", "k0500", "k00000", "z", "a"] {
            assert_eq!(head.label(missing), None, "{missing}");
        }
    }

    #[test]
    fn a_configmaps_head_is_small() {
        let cm = json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "cm-000123", "namespace": "ns-0042",
                         "uid": "0b8f6a4e-2f7c-4d2a-9a51-6f1d2c3b4a5e",
                         "labels": {"app": "bench"}},
            "data": {"k": "v"}
        });
        let head = Head::of(&cm);
        assert!(
            std::mem::size_of::<Head>() <= 56,
            "{}",
            std::mem::size_of::<Head>()
        );
        assert!(head.heap_bytes() <= 100, "{}", head.heap_bytes());
    }
}
