//! Values seen through a schema, as structured-merge-diff sees them: which maps are granular
//! structs or maps and which are atomic, which lists are atomic, sets or maps keyed by fields,
//! and the walks over values that field management needs (the field set of a value, the
//! comparison of two values, merge, removal).
//!
//! The schema is kube's OpenAPI: the embedded definitions for built-in kinds (`$ref`s resolved),
//! a CRD's structural schema for custom resources. As kube's OpenAPI → structured-merge-diff
//! conversion does, a list is atomic unless `x-kubernetes-list-type` says otherwise or (for the
//! built-in definitions) `x-kubernetes-patch-strategy: merge` makes it a map keyed by
//! `x-kubernetes-patch-merge-key` (a set without one); a value without a schema is "deduced":
//! maps granular, lists atomic.

use serde_json::{Map, Value};

use super::fieldpath::{Path, Pe, Set};
use super::ApplyError;

const OBJECT_META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta";
/// `$ref` hops followed before giving up (definitions never chain far).
const MAX_REF_HOPS: usize = 16;

#[derive(Debug, Clone, Copy)]
pub enum Ty<'a> {
    /// A schema node (an OpenAPI schema object).
    Schema(&'a Value),
    /// The root of an object: its schema, with `apiVersion`, `kind` and ObjectMeta `metadata`.
    Root(&'a Value),
    /// No schema: the value's own shape.
    Deduced,
}

pub(super) enum ListKind {
    Set,
    /// Keyed by these fields, each with the default its schema declares (structured-merge-diff
    /// fills a missing key field with it).
    Map(Vec<KeyField>),
}

/// A key field of a map list.
pub(super) struct KeyField {
    pub name: String,
    pub default: Option<Value>,
}

enum Shape<'a> {
    Leaf,
    Map(Ty<'a>),
    List(Ty<'a>, ListKind),
}

fn resolve(mut s: &Value) -> &Value {
    let defs = crate::builtin::definitions::get();
    for _ in 0..MAX_REF_HOPS {
        match defs.resolve(s) {
            Some((_, d)) => s = d,
            None => break,
        }
    }
    s
}

/// A schema node's type, its `$ref`s followed once here (a walk looks at a node several times).
fn schema(s: &Value) -> Ty<'_> {
    Ty::Schema(resolve(s))
}

/// The schema of a type: `Ty::Schema` holds a resolved node (made by [`schema`]), a root is a
/// definition or a CRD's schema (which has no `$ref`s).
fn schema_of(ty: Ty<'_>) -> Option<&Value> {
    match ty {
        Ty::Schema(s) | Ty::Root(s) => Some(s),
        Ty::Deduced => None,
    }
}

fn shape<'a>(ty: Ty<'a>, v: &Value) -> Shape<'a> {
    let Some(s) = schema_of(ty) else {
        return match v {
            Value::Object(_) => Shape::Map(Ty::Deduced),
            _ => Shape::Leaf,
        };
    };
    if s.get("x-kubernetes-int-or-string").and_then(Value::as_bool) == Some(true) {
        return Shape::Leaf;
    }
    let typ = s.get("type").and_then(Value::as_str);
    match v {
        Value::Object(_) if matches!(typ, None | Some("object")) => {
            if s.get("x-kubernetes-map-type").and_then(Value::as_str) == Some("atomic") {
                Shape::Leaf
            } else {
                Shape::Map(match ty {
                    Ty::Root(r) => Ty::Root(r),
                    _ => Ty::Schema(s),
                })
            }
        }
        Value::Array(_) if matches!(typ, None | Some("array")) => {
            let items = match s.get("items") {
                Some(i) if i.is_object() => schema(i),
                _ => Ty::Deduced,
            };
            match list_kind(s) {
                Some(k) => Shape::List(items, k),
                None => Shape::Leaf,
            }
        }
        _ => Shape::Leaf,
    }
}

/// kube's `getListElementRelationship` (kube-openapi `schemaconv`): `None` is atomic.
pub(super) fn list_kind(s: &Value) -> Option<ListKind> {
    let keys = |names: Vec<&str>| -> ListKind {
        // A key field's default is its property's `default` in the items' schema.
        let items = s.get("items").map(resolve);
        let props = items.and_then(|i| i.get("properties"));
        ListKind::Map(
            names
                .into_iter()
                .map(|n| KeyField {
                    name: n.to_owned(),
                    default: props
                        .and_then(|p| p.get(n))
                        .and_then(|p| p.get("default"))
                        .cloned(),
                })
                .collect(),
        )
    };
    match s.get("x-kubernetes-list-type").and_then(Value::as_str) {
        Some("set") => return Some(ListKind::Set),
        Some("map") => {
            let names: Vec<&str> = s
                .get("x-kubernetes-list-map-keys")
                .and_then(Value::as_array)
                .map(|a| a.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            return Some(keys(names));
        }
        Some(_) => return None,
        None => {}
    }
    match s.get("x-kubernetes-patch-strategy").and_then(Value::as_str) {
        Some("merge") | Some("merge,retainKeys") => {
            match s
                .get("x-kubernetes-patch-merge-key")
                .and_then(Value::as_str)
            {
                Some(k) => Some(keys(vec![k])),
                None => Some(ListKind::Set),
            }
        }
        _ => None,
    }
}

/// The type of a field of a map or struct, and whether it is a declared struct field.
fn field<'a>(ty: Ty<'a>, name: &str) -> (Ty<'a>, bool) {
    let Some(s) = schema_of(ty) else {
        return (Ty::Deduced, false);
    };
    if let Ty::Root(_) = ty {
        match name {
            "metadata" => {
                if let Some(m) = crate::builtin::definitions::get().get(OBJECT_META) {
                    return (schema(m), true);
                }
            }
            "apiVersion" | "kind" => return (Ty::Deduced, true),
            _ => {}
        }
    }
    if let Some(p) = s.get("properties").and_then(|p| p.get(name)) {
        return (schema(p), true);
    }
    match s.get("additionalProperties") {
        Some(a) if a.is_object() => (schema(a), false),
        _ => (Ty::Deduced, false),
    }
}

/// The path element of a list item, or structured-merge-diff's complaint about it
/// (`listItemToPathElement`). A key field the item lacks is filled with its default (kube's
/// built-in definitions declare `protocol`'s, `TCP`, which the embedded v2 definitions lack) or
/// left out of the key; an item with none of them is refused.
pub(super) fn item_pe(kind: &ListKind, item: &Value, builtin: bool) -> Result<Pe, ApplyError> {
    match kind {
        ListKind::Set => match item {
            Value::Object(_) => Err(ApplyError::Typed(
                "associative list without keys has an element that's a map type".into(),
            )),
            Value::Array(_) => Err(ApplyError::Typed(
                "not supported: associative list with lists as elements".into(),
            )),
            Value::Null => Err(ApplyError::Typed(
                "associative list without keys has an element that's an explicit null".into(),
            )),
            v => Ok(Pe::Value(v.clone())),
        },
        ListKind::Map(keys) => {
            let Value::Object(m) = item else {
                return Err(ApplyError::Typed(if item.is_null() {
                    "associative list with keys may not have a null element".into()
                } else {
                    "associative list with keys may not have non-map elements".into()
                }));
            };
            let mut fields = Vec::with_capacity(keys.len());
            for k in keys {
                match (m.get(&k.name), &k.default) {
                    (Some(v), _) => fields.push((k.name.clone(), v.clone())),
                    (None, Some(d)) => fields.push((k.name.clone(), d.clone())),
                    (None, None) if builtin && k.name == "protocol" => {
                        fields.push((k.name.clone(), "TCP".into()))
                    }
                    (None, None) => {}
                }
            }
            if !keys.is_empty() && fields.is_empty() {
                let names: Vec<String> = keys
                    .iter()
                    .map(|k| crate::schema::field::go_quote(&k.name))
                    .collect();
                return Err(ApplyError::Typed(format!(
                    "associative list with keys has an element that omits all key fields [{}] (and doesn't have default values for any key fields)",
                    names.join(" ")
                )));
            }
            fields.sort_by(|a, b| a.0.cmp(&b.0));
            Ok(Pe::Key(fields))
        }
    }
}

/// The walks, for one object: built-in (patch-strategy rules, key defaults) or custom.
#[derive(Debug, Clone, Copy)]
pub struct Typer<'a> {
    pub root: Ty<'a>,
    pub builtin: bool,
}

/// Items of a list by path element, the first of duplicates kept (kube allows duplicates in
/// stored objects).
fn index_items<'v>(
    kind: &ListKind,
    list: &'v [Value],
    builtin: bool,
) -> Result<Vec<(Pe, &'v Value)>, ApplyError> {
    let mut out: Vec<(Pe, &Value)> = Vec::with_capacity(list.len());
    let mut seen = std::collections::BTreeSet::new();
    for item in list {
        let pe = item_pe(kind, item, builtin)?;
        if seen.insert(pe.clone()) {
            out.push((pe, item));
        }
    }
    Ok(out)
}

/// Items of a list by path element, duplicates included.
fn all_items<'v>(
    kind: &ListKind,
    list: &'v [Value],
    builtin: bool,
) -> Result<Vec<(Pe, &'v Value)>, ApplyError> {
    list.iter()
        .map(|item| Ok((item_pe(kind, item, builtin)?, item)))
        .collect()
}

/// What changed between two values: structured-merge-diff's `Comparison`.
#[derive(Debug, Default)]
pub struct Comparison {
    pub added: Set,
    pub modified: Set,
    pub removed: Set,
}

impl<'a> Typer<'a> {
    /// Whether the last element of `path` is a declared field of a struct.
    pub fn is_named(&self, path: &[Pe]) -> bool {
        let mut ty = self.root;
        for (i, pe) in path.iter().enumerate() {
            let last = i + 1 == path.len();
            match pe {
                Pe::Field(k) => {
                    let (ft, declared) = field(ty, k);
                    if last {
                        return declared;
                    }
                    ty = ft;
                }
                _ => {
                    if last {
                        return false;
                    }
                    ty = match schema_of(ty).and_then(|s| s.get("items")) {
                        Some(i) if i.is_object() => schema(i),
                        _ => Ty::Deduced,
                    };
                }
            }
        }
        false
    }

    /// [`Set::ensure_named`] with this schema.
    pub fn named(&self, set: &Set) -> Set {
        set.ensure_named(&|p| self.is_named(p))
    }

    /// structured-merge-diff's `ToFieldSet`: the leaves, list items, map entries (not struct
    /// fields), and null or empty-map fields of a value.
    pub fn to_set(&self, v: &Value) -> Result<Set, ApplyError> {
        let mut out = Set::new();
        let mut path = Vec::new();
        self.walk_set(self.root, v, &mut path, &mut out)?;
        Ok(out)
    }

    fn walk_set(
        &self,
        ty: Ty<'a>,
        v: &Value,
        path: &mut Path,
        out: &mut Set,
    ) -> Result<(), ApplyError> {
        match shape(ty, v) {
            Shape::Leaf => {
                if !path.is_empty() {
                    out.insert(path);
                }
            }
            Shape::Map(mt) => {
                let Value::Object(m) = v else { return Ok(()) };
                for (k, val) in m {
                    let (ft, declared) = field(mt, k);
                    path.push(Pe::Field(k.clone()));
                    self.walk_set(ft, val, path, out)?;
                    let empty = val.is_null() || val.as_object().is_some_and(Map::is_empty);
                    if empty || !declared {
                        out.insert(path);
                    }
                    path.pop();
                }
            }
            Shape::List(et, kind) => {
                let Value::Array(items) = v else {
                    return Ok(());
                };
                for item in items {
                    let pe = item_pe(&kind, item, self.builtin)
                        .map_err(|e| e.at(&super::fieldpath::path_string(path)))?;
                    path.push(pe);
                    self.walk_set(et, item, path, out)?;
                    out.insert(path);
                    path.pop();
                }
            }
        }
        Ok(())
    }

    /// structured-merge-diff's `Compare`: leaves added, modified or removed, and maps or list
    /// items that appear or disappear as a whole.
    pub fn compare(&self, lhs: &Value, rhs: &Value) -> Result<Comparison, ApplyError> {
        let mut c = Comparison::default();
        let mut path = Vec::new();
        self.walk_compare(self.root, Some(lhs), Some(rhs), &mut path, &mut c)?;
        Ok(c)
    }

    fn walk_compare(
        &self,
        ty: Ty<'a>,
        lhs: Option<&Value>,
        rhs: Option<&Value>,
        path: &mut Path,
        c: &mut Comparison,
    ) -> Result<(), ApplyError> {
        let leaf = |c: &mut Comparison, path: &Path| {
            if path.is_empty() {
                return;
            }
            match (lhs, rhs) {
                (None, Some(_)) => c.added.insert(path),
                (Some(_), None) => c.removed.insert(path),
                (Some(l), Some(r)) if l != r => c.modified.insert(path),
                _ => {}
            }
        };
        let sl = lhs.map(|v| shape(ty, v));
        let sr = rhs.map(|v| shape(ty, v));
        let is_empty = |v: Option<&Value>| match v {
            None => true,
            Some(Value::Object(m)) => m.is_empty(),
            Some(Value::Array(a)) => a.is_empty(),
            _ => false,
        };
        match (&sl, &sr) {
            (Some(Shape::Map(mt)), None | Some(Shape::Map(_))) | (None, Some(Shape::Map(mt))) => {
                if is_empty(lhs) && is_empty(rhs) {
                    leaf(c, path);
                    return Ok(());
                }
                let mt = *mt;
                let empty = Map::new();
                let lm = lhs.and_then(Value::as_object).unwrap_or(&empty);
                let rm = rhs.and_then(Value::as_object).unwrap_or(&empty);
                for (k, lv) in lm {
                    let (ft, _) = field(mt, k);
                    path.push(Pe::Field(k.clone()));
                    self.walk_compare(ft, Some(lv), rm.get(k), path, c)?;
                    path.pop();
                }
                for (k, rv) in rm {
                    if lm.contains_key(k) {
                        continue;
                    }
                    let (ft, _) = field(mt, k);
                    path.push(Pe::Field(k.clone()));
                    self.walk_compare(ft, None, Some(rv), path, c)?;
                    path.pop();
                }
            }
            (Some(Shape::List(et, kind)), None | Some(Shape::List(..)))
            | (None, Some(Shape::List(et, kind))) => {
                if is_empty(lhs) && is_empty(rhs) {
                    leaf(c, path);
                    return Ok(());
                }
                let empty = Vec::new();
                let ll = lhs.and_then(Value::as_array).unwrap_or(&empty);
                let rl = rhs.and_then(Value::as_array).unwrap_or(&empty);
                let li = index_items(kind, ll, self.builtin)?;
                let ri = index_items(kind, rl, self.builtin)?;
                let rmap: std::collections::BTreeMap<&Pe, &Value> =
                    ri.iter().map(|(p, v)| (p, *v)).collect();
                let lmap: std::collections::BTreeMap<&Pe, &Value> =
                    li.iter().map(|(p, v)| (p, *v)).collect();
                for (pe, lv) in &li {
                    path.push(pe.clone());
                    self.walk_compare(*et, Some(lv), rmap.get(pe).copied(), path, c)?;
                    path.pop();
                }
                for (pe, rv) in &ri {
                    if lmap.contains_key(pe) {
                        continue;
                    }
                    path.push(pe.clone());
                    self.walk_compare(*et, None, Some(rv), path, c)?;
                    path.pop();
                }
            }
            _ => {
                leaf(c, path);
                return Ok(());
            }
        }
        if !path.is_empty() {
            if lhs.is_none() {
                c.added.insert(path);
            } else if rhs.is_none() {
                c.removed.insert(path);
            }
        }
        Ok(())
    }

    /// structured-merge-diff's `Merge`: `rhs` (an applied configuration) over `lhs` (the live
    /// object), granular maps and associative lists merged, everything else replaced.
    pub fn merge(&self, lhs: &Value, rhs: &Value) -> Result<Value, ApplyError> {
        self.walk_merge(self.root, lhs, rhs)
    }

    fn walk_merge(&self, ty: Ty<'a>, lhs: &Value, rhs: &Value) -> Result<Value, ApplyError> {
        match (shape(ty, lhs), shape(ty, rhs)) {
            (Shape::Map(mt), Shape::Map(_)) => {
                let (Value::Object(lm), Value::Object(rm)) = (lhs, rhs) else {
                    return Ok(rhs.clone());
                };
                let mut out = lm.clone();
                for (k, rv) in rm {
                    let merged = match lm.get(k) {
                        Some(lv) => self.walk_merge(field(mt, k).0, lv, rv)?,
                        None => rv.clone(),
                    };
                    out.insert(k.clone(), merged);
                }
                Ok(Value::Object(out))
            }
            (Shape::List(et, kind), Shape::List(..)) => {
                let (Value::Array(ll), Value::Array(rl)) = (lhs, rhs) else {
                    return Ok(rhs.clone());
                };
                // Every live item, duplicates too: one the configuration does not name stays
                // as it is; duplicates of one it names become the one merged item
                // (structured-merge-diff indexes the live side allowing duplicates).
                let li = all_items(&kind, ll, self.builtin)?;
                let ri = index_items(&kind, rl, self.builtin)?;
                let rmap: std::collections::BTreeMap<&Pe, &Value> =
                    ri.iter().map(|(p, v)| (p, *v)).collect();
                let mut lmap: std::collections::BTreeMap<&Pe, &Value> = Default::default();
                for (p, v) in &li {
                    lmap.entry(p).or_insert(*v);
                }
                // structured-merge-diff's order: the applied items in their order, live-only
                // items kept where they were relative to them.
                let mut out = Vec::with_capacity(li.len() + ri.len());
                let mut done = std::collections::BTreeSet::new();
                let (mut i, mut j) = (0, 0);
                while i < li.len() || j < ri.len() {
                    if i < li.len() && done.contains(&li[i].0) {
                        i += 1;
                        continue;
                    }
                    if i < li.len() && !rmap.contains_key(&li[i].0) {
                        out.push(li[i].1.clone());
                        i += 1;
                        continue;
                    }
                    if j < ri.len() {
                        let (pe, rv) = &ri[j];
                        let v = match lmap.get(pe) {
                            Some(lv) => self.walk_merge(et, lv, rv)?,
                            None => (*rv).clone(),
                        };
                        out.push(v);
                        done.insert(pe.clone());
                        j += 1;
                        continue;
                    }
                    i += 1;
                }
                Ok(Value::Array(out))
            }
            _ => Ok(rhs.clone()),
        }
    }

    /// kube's `findAtomics` (MutatingAdmissionPolicy's `ApplyConfiguration`): the paths
    /// (`.spec.selector`, `.spec.list[0]`) of the atomic maps, structs and lists in `v`,
    /// following declared fields only.
    pub fn atomics(&self, v: &Value) -> Vec<String> {
        let mut out = Vec::new();
        let mut stack = vec![(self.root, v, String::new())];
        while let Some((ty, v, path)) = stack.pop() {
            let Some(s) = schema_of(ty) else { continue };
            if s.get("x-kubernetes-int-or-string").and_then(Value::as_bool) == Some(true) {
                continue;
            }
            let typ = s.get("type").and_then(Value::as_str);
            match v {
                Value::Object(m) if matches!(typ, None | Some("object")) => {
                    if s.get("x-kubernetes-map-type").and_then(Value::as_str) == Some("atomic") {
                        out.push(path.clone());
                    }
                    let ty = match ty {
                        Ty::Root(r) => Ty::Root(r),
                        _ => Ty::Schema(s),
                    };
                    for (k, x) in m.iter().rev() {
                        if let (ft, true) = field(ty, k) {
                            stack.push((ft, x, format!("{path}.{k}")));
                        }
                    }
                }
                Value::Array(items) if matches!(typ, None | Some("array")) => {
                    if list_kind(s).is_none() {
                        out.push(path.clone());
                    }
                    if let Some(it) = s.get("items").filter(|i| i.is_object()) {
                        for (i, x) in items.iter().enumerate().rev() {
                            stack.push((schema(it), x, format!("{path}[{i}]")));
                        }
                    }
                }
                _ => {}
            }
        }
        out
    }

    /// structured-merge-diff's `RemoveItems`: the value without the members of `set` (a member
    /// goes with everything below it); `None` when nothing is left of a map or list.
    pub fn remove(&self, v: &Value, set: &Set) -> Result<Option<Value>, ApplyError> {
        self.walk_remove(self.root, v, set)
    }

    fn walk_remove(&self, ty: Ty<'a>, v: &Value, set: &Set) -> Result<Option<Value>, ApplyError> {
        match shape(ty, v) {
            Shape::Map(mt) => {
                let Value::Object(m) = v else {
                    return Ok(Some(v.clone()));
                };
                if m.is_empty() {
                    return Ok(Some(v.clone()));
                }
                let mut out = Map::new();
                for (k, val) in m {
                    let pe = Pe::Field(k.clone());
                    if set.has_member(&pe) {
                        continue;
                    }
                    match set.child(&pe) {
                        Some(sub) => {
                            if let Some(kept) = self.walk_remove(field(mt, k).0, val, sub)? {
                                out.insert(k.clone(), kept);
                            }
                        }
                        None => {
                            out.insert(k.clone(), val.clone());
                        }
                    }
                }
                Ok((!out.is_empty()).then_some(Value::Object(out)))
            }
            Shape::List(et, kind) => {
                let Value::Array(items) = v else {
                    return Ok(Some(v.clone()));
                };
                if items.is_empty() {
                    return Ok(Some(v.clone()));
                }
                let mut out = Vec::with_capacity(items.len());
                for item in items {
                    let pe = item_pe(&kind, item, self.builtin)?;
                    if set.has_member(&pe) {
                        continue;
                    }
                    match set.child(&pe) {
                        Some(sub) => {
                            if let Some(kept) = self.walk_remove(et, item, sub)? {
                                out.push(kept);
                            }
                        }
                        None => out.push(item.clone()),
                    }
                }
                Ok((!out.is_empty()).then_some(Value::Array(out)))
            }
            Shape::Leaf => Ok(Some(v.clone())),
        }
    }
}

/// The zero value kube compares a created object against (`runtime.New()` of the kind, as
/// unstructured): built-in kinds have their non-pointer struct fields present and empty; we
/// know these by name (metadata, spec, status, pod templates, update strategies), which covers
/// the built-in kinds' shapes, and the zero-valued fields kube writes for the kind
/// (`builtin::zero`: a ReplicaSet's `status.replicas: 0`, a PriorityClass's `value: 0`), which
/// the service gives every stored object, so a create does not own them. Custom resources start
/// empty.
pub fn zero_object(t: &Typer<'_>) -> Value {
    const STRUCT_FIELDS: &[&str] = &[
        "metadata",
        "spec",
        "status",
        "template",
        "strategy",
        "updateStrategy",
        "jobTemplate",
    ];
    fn build(ty: Ty<'_>, depth: usize) -> Value {
        let mut out = Map::new();
        if depth > 6 {
            return Value::Object(out);
        }
        let Some(s) = schema_of(ty) else {
            return Value::Object(out);
        };
        if let Some(props) = s.get("properties").and_then(Value::as_object) {
            for name in STRUCT_FIELDS {
                if let Some(p) = props.get(*name) {
                    let r = resolve(p);
                    if p.get("$ref").is_some() && r.get("properties").is_some() {
                        out.insert((*name).into(), build(schema(p), depth + 1));
                    }
                }
            }
        }
        Value::Object(out)
    }
    if !t.builtin {
        return Value::Object(Map::new());
    }
    let mut zero = build(t.root, 0);
    if let Ty::Root(def) = t.root {
        let gvk = def
            .get("x-kubernetes-group-version-kind")
            .and_then(|l| l.get(0));
        if let Some(gvk) = gvk {
            let group = gvk.get("group").and_then(Value::as_str).unwrap_or("");
            let version = gvk.get("version").and_then(Value::as_str).unwrap_or("");
            let kind = gvk.get("kind").and_then(Value::as_str).unwrap_or("");
            crate::builtin::zero::fill(group, version, kind, &mut zero);
        }
    }
    zero
}

/// [`zero_object`], built once per built-in kind (every create compares against it). A
/// built-in root is one of the embedded definitions, which live as long as the process, so its
/// address names it; the cache holds one small value per built-in kind at most.
pub fn zero(t: &Typer<'_>) -> std::borrow::Cow<'static, Value> {
    use std::borrow::Cow;
    use std::collections::HashMap;
    use std::sync::{Mutex, OnceLock};
    static ZEROS: OnceLock<Mutex<HashMap<usize, &'static Value>>> = OnceLock::new();
    let (true, Ty::Root(root)) = (t.builtin, t.root) else {
        return Cow::Owned(zero_object(t));
    };
    let key = std::ptr::from_ref(root) as usize;
    let zeros = ZEROS.get_or_init(Default::default);
    if let Some(z) = zeros.lock().ok().and_then(|m| m.get(&key).copied()) {
        return Cow::Borrowed(z);
    }
    let built = zero_object(t);
    match zeros.lock() {
        Ok(mut m) => Cow::Borrowed(*m.entry(key).or_insert_with(|| Box::leak(Box::new(built)))),
        Err(_) => Cow::Owned(built),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn deployment() -> Typer<'static> {
        let defs = crate::builtin::definitions::get();
        let name = defs.name_of("apps", "v1", "Deployment").unwrap();
        Typer {
            root: Ty::Root(defs.get(name).unwrap()),
            builtin: true,
        }
    }

    #[test]
    fn field_set_of_a_deployment_is_what_kube_records() {
        let t = deployment();
        let d = json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "d", "labels": {"app": "x"}},
            "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "x"}},
                "template": {"metadata": {"labels": {"app": "x"}},
                    "spec": {"containers": [{"name": "c", "image": "nginx",
                        "ports": [{"containerPort": 80}]}]}}}});
        let s = t.to_set(&d).unwrap();
        assert_eq!(
            s.to_fields_v1().to_string(),
            concat!(
                r#"{"f:apiVersion":{},"f:kind":{},"f:metadata":{"f:labels":{"f:app":{}},"f:name":{}},"#,
                r#""f:spec":{"f:replicas":{},"f:selector":{},"f:template":{"f:metadata":{"f:labels":{"f:app":{}}},"#,
                r#""f:spec":{"f:containers":{"k:{\"name\":\"c\"}":{".":{},"f:image":{},"f:name":{},"#,
                r#""f:ports":{"k:{\"containerPort\":80,\"protocol\":\"TCP\"}":{".":{},"f:containerPort":{}}}}}}}}}"#
            )
        );
    }

    #[test]
    fn merge_keeps_other_list_items_and_removal_drops_owned_ones() {
        let t = deployment();
        let live = json!({"spec": {"template": {"spec": {"containers": [
            {"name": "a", "image": "1"}, {"name": "b", "image": "2"}]}}}});
        let config = json!({"spec": {"template": {"spec": {"containers": [
            {"name": "c", "image": "3"}, {"name": "a", "image": "4"}]}}}});
        let m = t.merge(&live, &config).unwrap();
        let names: Vec<_> = m["spec"]["template"]["spec"]["containers"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| format!("{}{}", c["name"], c["image"]))
            .collect();
        assert_eq!(names, [r#""c""3""#, r#""a""4""#, r#""b""2""#]);
        let mut drop = Set::new();
        drop.insert(&[
            Pe::Field("spec".into()),
            Pe::Field("template".into()),
            Pe::Field("spec".into()),
            Pe::Field("containers".into()),
            Pe::Key(vec![("name".into(), json!("b"))]),
        ]);
        let r = t.remove(&m, &drop).unwrap().unwrap();
        assert_eq!(
            r["spec"]["template"]["spec"]["containers"]
                .as_array()
                .unwrap()
                .len(),
            2
        );
    }

    /// kube's zero object of a kind has the fields its Go types always write (a create that
    /// leaves them at zero owns none of them).
    #[test]
    fn the_zero_object_has_the_kinds_zero_fields() {
        let defs = crate::builtin::definitions::get();
        let typer = |group: &str, kind: &str| Typer {
            root: Ty::Root(defs.get(defs.name_of(group, "v1", kind).unwrap()).unwrap()),
            builtin: true,
        };
        let rs = zero_object(&typer("apps", "ReplicaSet"));
        assert_eq!(rs["status"], json!({"replicas": 0}));
        let sts = zero_object(&typer("apps", "StatefulSet"));
        assert_eq!(sts["spec"]["serviceName"], "");
        assert_eq!(sts["spec"]["updateStrategy"], json!({}));
        let pc = zero_object(&typer("scheduling.k8s.io", "PriorityClass"));
        assert_eq!(pc["value"], 0);
    }

    #[test]
    fn compare_marks_new_maps_and_items_as_added() {
        let t = deployment();
        let zero = zero_object(&t);
        assert_eq!(
            zero,
            json!({"metadata": {}, "spec": {"strategy": {}, "template": {"metadata": {}, "spec": {}}}, "status": {}})
        );
        let new = json!({"metadata": {"labels": {"a": "b"}},
            "spec": {"strategy": {"rollingUpdate": {"maxSurge": 1}}}});
        let c = t.compare(&zero, &new).unwrap();
        assert_eq!(
            c.added.to_fields_v1().to_string(),
            r#"{"f:metadata":{"f:labels":{".":{},"f:a":{}}},"f:spec":{"f:strategy":{"f:rollingUpdate":{".":{},"f:maxSurge":{}}}}}"#
        );
    }
}
