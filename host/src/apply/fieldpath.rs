//! Field sets as structured-merge-diff keeps them (`fieldpath.Set`): a tree of path elements
//! (`f:name`, `k:{"name":"x"}`, `v:"value"`, `i:0`) whose nodes may be members themselves, with
//! kube's `FieldsV1` encoding and kube's ordering of elements.

use std::cmp::Ordering;
use std::collections::BTreeMap;

use serde_json::{Map, Value};

use super::ApplyError;
use crate::model::limits;

/// One step of a path.
#[derive(Debug, Clone, PartialEq)]
pub enum Pe {
    /// A struct field or map key: `f:name`.
    Field(String),
    /// An item of a map list, by its key fields sorted by name: `k:{"name":"x"}`.
    Key(Vec<(String, Value)>),
    /// An item of a set list, by value: `v:"x"`.
    Value(Value),
    /// An item of a list by position: `i:0` (never produced here; read back when found).
    Index(i64),
}

impl Eq for Pe {}

impl Ord for Pe {
    /// structured-merge-diff's `PathElement.Compare`: fields, then keys, values, indexes.
    fn cmp(&self, other: &Self) -> Ordering {
        fn rank(p: &Pe) -> u8 {
            match p {
                Pe::Field(_) => 0,
                Pe::Key(_) => 1,
                Pe::Value(_) => 2,
                Pe::Index(_) => 3,
            }
        }
        match (self, other) {
            (Pe::Field(a), Pe::Field(b)) => a.cmp(b),
            (Pe::Key(a), Pe::Key(b)) => a.len().cmp(&b.len()).then_with(|| {
                for ((an, av), (bn, bv)) in a.iter().zip(b) {
                    let c = an.cmp(bn).then_with(|| compare_values(av, bv));
                    if c != Ordering::Equal {
                        return c;
                    }
                }
                Ordering::Equal
            }),
            (Pe::Value(a), Pe::Value(b)) => compare_values(a, b),
            (Pe::Index(a), Pe::Index(b)) => a.cmp(b),
            _ => rank(self).cmp(&rank(other)),
        }
    }
}

impl PartialOrd for Pe {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// structured-merge-diff's `value.Compare`: numbers < strings < booleans < lists < maps < null.
pub fn compare_values(a: &Value, b: &Value) -> Ordering {
    fn rank(v: &Value) -> u8 {
        match v {
            Value::Number(_) => 0,
            Value::String(_) => 1,
            Value::Bool(_) => 2,
            Value::Array(_) => 3,
            Value::Object(_) => 4,
            Value::Null => 5,
        }
    }
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => match (x.as_i64(), y.as_i64()) {
            (Some(i), Some(j)) => i.cmp(&j),
            _ => {
                let (f, g) = (x.as_f64().unwrap_or(0.0), y.as_f64().unwrap_or(0.0));
                f.partial_cmp(&g).unwrap_or(Ordering::Equal)
            }
        },
        (Value::String(x), Value::String(y)) => x.cmp(y),
        (Value::Bool(x), Value::Bool(y)) => x.cmp(y),
        (Value::Array(x), Value::Array(y)) => {
            for (i, j) in x.iter().zip(y) {
                let c = compare_values(i, j);
                if c != Ordering::Equal {
                    return c;
                }
            }
            x.len().cmp(&y.len())
        }
        (Value::Object(x), Value::Object(y)) => {
            let mut xs: Vec<_> = x.iter().collect();
            let mut ys: Vec<_> = y.iter().collect();
            xs.sort_by(|p, q| p.0.cmp(q.0));
            ys.sort_by(|p, q| p.0.cmp(q.0));
            for ((kx, vx), (ky, vy)) in xs.iter().zip(&ys) {
                let c = kx.cmp(ky).then_with(|| compare_values(vx, vy));
                if c != Ordering::Equal {
                    return c;
                }
            }
            xs.len().cmp(&ys.len())
        }
        _ => rank(a).cmp(&rank(b)),
    }
}

impl Pe {
    /// The `FieldsV1` key: `f:name`, `k:{...}`, `v:...`, `i:N`.
    pub fn encode(&self) -> String {
        match self {
            Pe::Field(n) => {
                let mut k = String::with_capacity(2 + n.len());
                k.push_str("f:");
                k.push_str(n);
                k
            }
            Pe::Key(fields) => {
                let mut m = Map::new();
                for (n, v) in fields {
                    m.insert(n.clone(), v.clone());
                }
                format!("k:{}", Value::Object(m))
            }
            Pe::Value(v) => format!("v:{v}"),
            Pe::Index(i) => format!("i:{i}"),
        }
    }

    fn decode(s: &str) -> Result<Pe, ApplyError> {
        let bad = || ApplyError::ManagedFields(format!("unknown path element {s:?}"));
        let (kind, rest) = s.split_once(':').ok_or_else(bad)?;
        match kind {
            "f" => Ok(Pe::Field(rest.to_owned())),
            "k" => match serde_json::from_str::<Value>(rest) {
                Ok(Value::Object(m)) => {
                    let mut fields: Vec<(String, Value)> = m.into_iter().collect();
                    fields.sort_by(|a, b| a.0.cmp(&b.0));
                    Ok(Pe::Key(fields))
                }
                _ => Err(bad()),
            },
            "v" => serde_json::from_str(rest).map(Pe::Value).map_err(|_| bad()),
            "i" => rest.parse().map(Pe::Index).map_err(|_| bad()),
            _ => Err(bad()),
        }
    }

    /// As structured-merge-diff prints a path element in a conflict: `.name`,
    /// `[name="x",port=80]`, `[="x"]`, `[0]`.
    pub fn display(&self) -> String {
        self.display_with(false)
    }

    /// [`Pe::display`]; with `floats`, numbers are printed as the Go `float64`s kube decodes an
    /// applied configuration's numbers into (`1e+06`).
    pub fn display_with(&self, floats: bool) -> String {
        match self {
            Pe::Field(n) => format!(".{n}"),
            Pe::Key(fields) => {
                let parts: Vec<String> = fields
                    .iter()
                    .map(|(n, v)| format!("{n}={}", value_string(v, floats)))
                    .collect();
                format!("[{}]", parts.join(","))
            }
            Pe::Value(v) => format!("[={}]", value_string(v, floats)),
            Pe::Index(i) => format!("[{i}]"),
        }
    }
}

/// structured-merge-diff's `value.ToString`: strings as Go's `%q`, numbers and booleans as
/// `%v`, lists as `[a,b]`, maps as their `k=v` run together (in Go's map order, which varies;
/// here the object's).
fn value_string(v: &Value, floats: bool) -> String {
    match v {
        Value::Null => "null".to_owned(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => match (floats, n.as_i64()) {
            (false, Some(i)) => i.to_string(),
            _ => crate::schema::field::go_format_float(n.as_f64().unwrap_or(f64::NAN)),
        },
        Value::String(s) => crate::schema::field::go_quote(s),
        Value::Array(items) => {
            let parts: Vec<String> = items.iter().map(|x| value_string(x, floats)).collect();
            format!("[{}]", parts.join(","))
        }
        Value::Object(m) => m
            .iter()
            .map(|(k, x)| format!("{k}={}", value_string(x, floats)))
            .collect(),
    }
}

/// A path: the elements from the root.
pub type Path = Vec<Pe>;

pub fn path_string(p: &[Pe]) -> String {
    p.iter().map(Pe::display).collect()
}

/// A set of paths. Each node knows whether it is a member itself and its children.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Set {
    nodes: BTreeMap<Pe, Node>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Node {
    member: bool,
    children: Set,
}

impl Node {
    fn is_empty(&self) -> bool {
        !self.member && self.children.is_empty()
    }
}

impl Set {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    pub fn insert(&mut self, path: &[Pe]) {
        let Some((first, rest)) = path.split_first() else {
            return;
        };
        // Most inserts walk through nodes that exist (a walk adds every field under the same
        // parents): look up before cloning the element.
        if !self.nodes.contains_key(first) {
            self.nodes.insert(first.clone(), Node::default());
        }
        let Some(node) = self.nodes.get_mut(first) else {
            return;
        };
        if rest.is_empty() {
            node.member = true;
        } else {
            node.children.insert(rest);
        }
    }

    pub fn has(&self, path: &[Pe]) -> bool {
        let Some((first, rest)) = path.split_first() else {
            return false;
        };
        match self.nodes.get(first) {
            Some(n) if rest.is_empty() => n.member,
            Some(n) => n.children.has(rest),
            None => false,
        }
    }

    /// The paths below `pe` (structured-merge-diff's `WithPrefix`), relative to it.
    pub fn child(&self, pe: &Pe) -> Option<&Set> {
        self.nodes
            .get(pe)
            .map(|n| &n.children)
            .filter(|c| !c.is_empty())
    }

    /// Whether `pe` itself is a member.
    pub fn has_member(&self, pe: &Pe) -> bool {
        self.nodes.get(pe).is_some_and(|n| n.member)
    }

    pub fn union(&self, other: &Set) -> Set {
        let mut out = self.clone();
        out.union_in(other);
        out
    }

    pub fn union_in(&mut self, other: &Set) {
        for (pe, n) in &other.nodes {
            let mine = self.nodes.entry(pe.clone()).or_default();
            mine.member |= n.member;
            mine.children.union_in(&n.children);
        }
    }

    pub fn difference(&self, other: &Set) -> Set {
        let mut out = Set::new();
        for (pe, n) in &self.nodes {
            let node = match other.nodes.get(pe) {
                None => n.clone(),
                Some(o) => Node {
                    member: n.member && !o.member,
                    children: n.children.difference(&o.children),
                },
            };
            if !node.is_empty() {
                out.nodes.insert(pe.clone(), node);
            }
        }
        out
    }

    pub fn intersection(&self, other: &Set) -> Set {
        let mut out = Set::new();
        for (pe, n) in &self.nodes {
            if let Some(o) = other.nodes.get(pe) {
                let node = Node {
                    member: n.member && o.member,
                    children: n.children.intersection(&o.children),
                };
                if !node.is_empty() {
                    out.nodes.insert(pe.clone(), node);
                }
            }
        }
        out
    }

    /// Keeps only what lies under the top-level field `name` (or drops it, `keep == false`).
    pub fn filter_top(mut self, name: &str, keep: bool) -> Set {
        let pe = Pe::Field(name.to_owned());
        self.nodes.retain(|p, _| (*p == pe) == keep);
        self
    }

    /// Keeps only what lies under the top-level fields `keep` accepts.
    pub fn keep_top(mut self, keep: impl Fn(&Pe) -> bool) -> Set {
        self.nodes.retain(|p, _| keep(p));
        self
    }

    /// Removes a path and everything under it, as kube's reset-field filters drop a reset
    /// field's whole subtree.
    pub fn remove_tree(&mut self, path: &[Pe]) {
        let Some((first, rest)) = path.split_first() else {
            return;
        };
        if rest.is_empty() {
            self.nodes.remove(first);
            return;
        }
        if let Some(n) = self.nodes.get_mut(first) {
            n.children.remove_tree(rest);
            if n.is_empty() {
                self.nodes.remove(first);
            }
        }
    }

    /// Removes paths (members only; children stay), as structured-merge-diff's stripping of
    /// server-owned metadata does.
    pub fn remove_member(&mut self, path: &[Pe]) {
        let Some((first, rest)) = path.split_first() else {
            return;
        };
        if let Some(n) = self.nodes.get_mut(first) {
            if rest.is_empty() {
                n.member = false;
            } else {
                n.children.remove_member(rest);
            }
            if n.is_empty() {
                self.nodes.remove(first);
            }
        }
    }

    /// Every member path, in structured-merge-diff's iteration order (a level's members first,
    /// then its children's), at most `limit` of them.
    pub fn paths(&self, limit: usize) -> Vec<Path> {
        let mut out = Vec::new();
        let mut prefix = Vec::new();
        self.collect(&mut prefix, &mut out, limit);
        out
    }

    fn collect(&self, prefix: &mut Path, out: &mut Vec<Path>, limit: usize) {
        for (pe, n) in &self.nodes {
            if out.len() >= limit {
                return;
            }
            if n.member {
                let mut p = prefix.clone();
                p.push(pe.clone());
                out.push(p);
            }
        }
        for (pe, n) in &self.nodes {
            if !n.children.is_empty() {
                prefix.push(pe.clone());
                n.children.collect(prefix, out, limit);
                prefix.pop();
            }
        }
    }

    /// The `FieldsV1` JSON: `{"f:a":{},"f:b":{".":{},"f:c":{}}}`.
    pub fn to_fields_v1(&self) -> Value {
        let mut m = Map::new();
        for (pe, n) in &self.nodes {
            m.insert(pe.encode(), n.to_json());
        }
        Value::Object(m)
    }

    /// Reads a `FieldsV1` value (already bounded in depth as part of a stored object).
    pub fn from_fields_v1(v: &Value) -> Result<Set, ApplyError> {
        let Value::Object(m) = v else {
            return Err(ApplyError::ManagedFields(
                "FieldsV1 must be an object".into(),
            ));
        };
        let mut out = Set::new();
        for (k, child) in m {
            if k == "." {
                continue;
            }
            let pe = Pe::decode(k)?;
            let Value::Object(cm) = child else {
                return Err(ApplyError::ManagedFields(format!(
                    "the value of {k:?} must be an object"
                )));
            };
            let node = Node {
                member: cm.is_empty() || cm.contains_key("."),
                children: Set::from_fields_v1(child)?,
            };
            out.nodes.insert(pe, node);
        }
        Ok(out)
    }

    /// structured-merge-diff's `EnsureNamedFieldsAreMembers`: every node that `named` says is
    /// a struct's field (given its path) becomes a member.
    pub fn ensure_named(&self, named: &dyn Fn(&[Pe]) -> bool) -> Set {
        let mut out = self.clone();
        let mut prefix = Vec::new();
        out.mark_named(&mut prefix, named);
        out
    }

    fn mark_named(&mut self, prefix: &mut Path, named: &dyn Fn(&[Pe]) -> bool) {
        for (pe, n) in self.nodes.iter_mut() {
            prefix.push(pe.clone());
            if !n.member && matches!(pe, Pe::Field(_)) && named(prefix) {
                n.member = true;
            }
            n.children.mark_named(prefix, named);
            prefix.pop();
        }
    }

    /// The number of nodes, to bound work driven by stored sets.
    pub fn size(&self) -> usize {
        self.nodes.values().map(|n| 1 + n.children.size()).sum()
    }
}

impl Node {
    fn to_json(&self) -> Value {
        let mut m = Map::new();
        if self.member && !self.children.is_empty() {
            m.insert(".".into(), Value::Object(Map::new()));
        }
        for (pe, n) in &self.children.nodes {
            m.insert(pe.encode(), n.to_json());
        }
        Value::Object(m)
    }
}

/// Depth bound for sets read from clients: as deep as an object may be.
pub fn within_depth(v: &Value) -> bool {
    limits::depth(v, limits::MAX_DEPTH).is_some()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn f(n: &str) -> Pe {
        Pe::Field(n.into())
    }

    #[test]
    fn fields_v1_round_trips_with_dot_for_members_that_have_children() {
        let mut s = Set::new();
        s.insert(&[f("spec"), f("replicas")]);
        let item = Pe::Key(vec![("name".into(), json!("nginx"))]);
        s.insert(&[f("spec"), f("containers"), item.clone()]);
        s.insert(&[f("spec"), f("containers"), item.clone(), f("image")]);
        let v = s.to_fields_v1();
        assert_eq!(
            v.to_string(),
            r#"{"f:spec":{"f:containers":{"k:{\"name\":\"nginx\"}":{".":{},"f:image":{}}},"f:replicas":{}}}"#
        );
        assert_eq!(Set::from_fields_v1(&v).unwrap(), s);
        assert_eq!(
            path_string(&[f("spec"), f("containers"), item, f("image")]),
            r#".spec.containers[name="nginx"].image"#
        );
    }

    #[test]
    fn set_algebra_is_structural() {
        let mut a = Set::new();
        a.insert(&[f("a"), f("b")]);
        a.insert(&[f("a")]);
        let mut b = Set::new();
        b.insert(&[f("a")]);
        let d = a.difference(&b);
        assert!(d.has(&[f("a"), f("b")]));
        assert!(!d.has(&[f("a")]));
        assert!(a.intersection(&b).has(&[f("a")]));
        assert!(!a.intersection(&b).has(&[f("a"), f("b")]));
    }

    #[test]
    fn keys_and_values_order_as_kube_orders_them() {
        let k1 = Pe::Key(vec![("a".into(), json!(1))]);
        let k2 = Pe::Key(vec![("a".into(), json!(1)), ("b".into(), json!("x"))]);
        assert!(f("z") < k1);
        assert!(k1 < k2);
        assert!(Pe::Value(json!(5)) < Pe::Value(json!("a")));
    }
}
