//! The check kube makes of an applied configuration before anything else of an apply
//! (`structuredMergeManager.Apply`: `ObjectToTyped(patchObj)`): structured-merge-diff's
//! `TypedValue.Validate` against the kind's schema as kube-openapi's `schemaconv` converts it.
//! A field the schema does not declare (`.spec.bogus: field not declared in schema`), a value
//! of the wrong type (`.data.a: expected string, got ...`), a list item without its keys or
//! a key twice are refused, whatever `fieldValidation` says; the caller answers kube's 500
//! `failed to create typed patch object (...)`.
//!
//! The conversion, as `schemaconv` does it:
//! - `type: object` is a map, `array` a list, `integer`/`number` numeric, `boolean` boolean,
//!   `string` a string (with `format` `byte` or none; any other format, `int-or-string` and
//!   `date-time` included, is an untyped scalar); no `type` is all three (the value decides).
//! - A map's fields are its `properties`; other keys take `additionalProperties`' type, or
//!   any value when it is `true`, when there are no properties, or below
//!   `x-kubernetes-preserve-unknown-fields` (which reaches every inline descendant, not a
//!   `$ref`'s definition); else they are not declared.
//! - `Quantity` is an untyped scalar and `RawExtension` anything, by definition name.
//! - A CRD's root and its embedded resources declare `apiVersion`, `kind` (strings) and
//!   `metadata` (ObjectMeta), as apiextensions' OpenAPI builder adds them.
//!
//! The walk is structured-merge-diff's: `null` is valid anywhere; a map's fields are visited in
//! order and the first undeclared one ends that map (Go visits a map in random order, so kube
//! names one of several undeclared fields, not always the same; here the first in the
//! document); a list item whose path element cannot be made ends that list (`element 2: ...`);
//! a key seen twice is reported and its item still checked.

use serde_json::{Map, Value};

use super::fieldpath::Pe;
use super::typed::{self, ListKind, Ty, Typer};
use super::ApplyError;

const QUANTITY: &str = "io.k8s.apimachinery.pkg.api.resource.Quantity";
const RAW_EXTENSION: &str = "io.k8s.apimachinery.pkg.runtime.RawExtension";
const OBJECT_META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta";
/// At most this many errors are reported (kube reports all; a configuration of a hundred
/// thousand wrong list items would make a message of megabytes).
const MAX_ERRORS: usize = 1000;

/// A type as structured-merge-diff resolves it.
#[derive(Clone, Copy)]
enum Vt<'a> {
    /// `__untyped_atomic_`, `__untyped_deduced_`, or no schema: any value.
    Any,
    Scalar(Scalar),
    /// A schema node. `preserve`: it is below (or has) `x-kubernetes-preserve-unknown-fields`;
    /// `type_meta`: kube's builder declares `apiVersion`, `kind` and `metadata` on it.
    Node {
        s: &'a Value,
        preserve: bool,
        type_meta: bool,
    },
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Scalar {
    Numeric,
    String,
    Boolean,
    Untyped,
}

/// A map type: the node its fields come from.
#[derive(Clone, Copy)]
struct MapT<'a> {
    s: &'a Value,
    preserve: bool,
    type_meta: bool,
}

/// structured-merge-diff's `Atom`: what a node may be.
struct Atom<'a> {
    scalar: Option<Scalar>,
    list: Option<&'a Value>,
    map: Option<MapT<'a>>,
    preserve: bool,
}

/// The type of a property, `additionalProperties` or `items` schema: a `$ref` is a named type
/// (converted on its own, so `preserve` does not reach it), anything else is inline.
fn child(p: &Value, preserve: bool) -> Vt<'_> {
    let reference = p.get("$ref").or_else(|| {
        // A `$ref` alone in an `allOf` (OpenAPI v3's way of giving a reference a default).
        match p.get("allOf").and_then(Value::as_array).map(Vec::as_slice) {
            Some([one]) => one.get("$ref"),
            _ => None,
        }
    });
    match reference.and_then(Value::as_str) {
        Some(r) => named(r.rsplit('/').next().unwrap_or(r)),
        None => Vt::Node {
            s: p,
            preserve,
            type_meta: false,
        },
    }
}

fn named(name: &str) -> Vt<'static> {
    match name {
        QUANTITY => Vt::Scalar(Scalar::Untyped),
        RAW_EXTENSION => Vt::Any,
        _ => match crate::builtin::definitions::get().get(name) {
            Some(s) => Vt::Node {
                s,
                preserve: false,
                type_meta: false,
            },
            None => Vt::Any,
        },
    }
}

fn atom<'a>(s: &'a Value, preserve: bool, type_meta: bool) -> Atom<'a> {
    let flag = |k: &str| s.get(k).and_then(Value::as_bool) == Some(true);
    let preserve = preserve || flag("x-kubernetes-preserve-unknown-fields");
    let map = MapT {
        s,
        preserve,
        type_meta: type_meta || flag("x-kubernetes-embedded-resource"),
    };
    let (scalar, list, map) = match s.get("type").and_then(Value::as_str).unwrap_or("") {
        "" => (Some(Scalar::Untyped), Some(s), Some(map)),
        "object" => (None, None, Some(map)),
        "array" => (None, Some(s), None),
        "integer" | "number" => (Some(Scalar::Numeric), None, None),
        "boolean" => (Some(Scalar::Boolean), None, None),
        "string" => match s.get("format").and_then(Value::as_str).unwrap_or("") {
            "" | "byte" => (Some(Scalar::String), None, None),
            _ => (Some(Scalar::Untyped), None, None),
        },
        _ => (Some(Scalar::Untyped), None, None),
    };
    Atom {
        scalar,
        list,
        map,
        preserve,
    }
}

/// The type of the field `name` of a map, `None` if it is not declared.
fn field<'a>(m: MapT<'a>, name: &str) -> Option<Vt<'a>> {
    if m.type_meta {
        match name {
            "apiVersion" | "kind" => return Some(Vt::Scalar(Scalar::String)),
            "metadata" => return Some(named(OBJECT_META)),
            _ => {}
        }
    }
    let props = m.s.get("properties").and_then(Value::as_object);
    if let Some(p) = props.and_then(|p| p.get(name)) {
        return Some(child(p, m.preserve));
    }
    match m.s.get("additionalProperties") {
        None => {
            let no_properties = props.is_none_or(Map::is_empty) && !m.type_meta;
            (m.preserve || no_properties).then_some(Vt::Any)
        }
        Some(Value::Bool(allowed)) => allowed.then_some(Vt::Any),
        Some(a) if a.is_object() => Some(child(a, m.preserve)),
        Some(_) => Some(Vt::Any),
    }
}

struct Walk {
    builtin: bool,
    path: Vec<Pe>,
    /// Each error's path (as structured-merge-diff prints it) and message.
    errors: Vec<(String, String)>,
}

impl Walk {
    fn error(&mut self, message: String) {
        if self.errors.len() < MAX_ERRORS {
            let path = self.path.iter().map(|pe| pe.display_with(true)).collect();
            self.errors.push((path, message));
        }
    }

    fn full(&self) -> bool {
        self.errors.len() >= MAX_ERRORS
    }

    fn value(&mut self, t: Vt<'_>, v: &Value) {
        if v.is_null() || self.full() {
            return;
        }
        let a = match t {
            Vt::Any => return,
            Vt::Scalar(k) => Atom {
                scalar: Some(k),
                list: None,
                map: None,
                preserve: false,
            },
            Vt::Node {
                s,
                preserve,
                type_meta,
            } => atom(s, preserve, type_meta),
        };
        // structured-merge-diff's `deduceAtom`: the part of the atom the value is, if the atom
        // has it; else the whole atom, which fails below.
        let (scalar, list, map) = match v {
            Value::Number(_) | Value::String(_) | Value::Bool(_) if a.scalar.is_some() => {
                (a.scalar, None, None)
            }
            Value::Array(_) if a.list.is_some() => (None, a.list, None),
            Value::Object(_) if a.map.is_some() => (None, None, a.map),
            _ => (a.scalar, a.list, a.map),
        };
        if let Some(m) = map {
            match v {
                Value::Object(o) => self.map(m, o),
                _ => self.error(format!("expected map, got {}", go_v(v))),
            }
        } else if let Some(k) = scalar {
            if let Some(e) = scalar_error(k, v) {
                self.error(e);
            }
        } else if let Some(s) = list {
            match v {
                Value::Array(items) => self.list(s, a.preserve, items),
                _ => self.error(format!("expected list, got {}", go_v(v))),
            }
        }
    }

    fn map(&mut self, m: MapT<'_>, o: &Map<String, Value>) {
        for (k, v) in o {
            self.path.push(Pe::Field(k.clone()));
            match field(m, k) {
                Some(t) => self.value(t, v),
                None => {
                    self.error("field not declared in schema".to_owned());
                    self.path.pop();
                    return;
                }
            }
            self.path.pop();
        }
    }

    fn list(&mut self, s: &Value, preserve: bool, items: &[Value]) {
        let item_type = match s.get("items") {
            Some(i) if i.is_object() => child(i, preserve),
            _ => Vt::Any,
        };
        let kind = typed::list_kind(s);
        let mut seen = std::collections::BTreeSet::new();
        for (i, item) in items.iter().enumerate() {
            if self.full() {
                return;
            }
            let pe = match &kind {
                None => Pe::Index(i as i64),
                Some(kind) => {
                    let pe = match key_pe(kind, s, item, self.builtin) {
                        Ok(pe) => pe,
                        Err(e) => {
                            self.error(format!("element {i}: {e}"));
                            return;
                        }
                    };
                    if !seen.insert(pe.clone()) {
                        self.error(format!(
                            "duplicate entries for key {}",
                            pe.display_with(true)
                        ));
                    }
                    pe
                }
            };
            self.path.push(pe);
            self.value(item_type, item);
            self.path.pop();
        }
    }
}

/// structured-merge-diff's `listItemToPathElement`, with `getAssociativeKeyDefault`'s refusal
/// of a keyed list whose items are not maps (only reached when a key field is missing).
fn key_pe(kind: &ListKind, s: &Value, item: &Value, builtin: bool) -> Result<Pe, String> {
    if let (ListKind::Map(keys), Value::Object(o)) = (kind, item) {
        let missing = keys.iter().find(|k| !o.contains_key(&k.name));
        let items_are_maps = match s.get("items") {
            Some(i) if i.is_object() => match child(i, false) {
                Vt::Node { s, .. } => atom(s, false, false).map.is_some(),
                Vt::Any => true,
                Vt::Scalar(_) => false,
            },
            _ => true,
        };
        if let (Some(k), false) = (missing, items_are_maps) {
            return Err(format!(
                "couldn't find default value for {}: associative list may not have non-map types",
                k.name
            ));
        }
    }
    typed::item_pe(kind, item, builtin).map_err(|e| e.to_string())
}

fn scalar_error(k: Scalar, v: &Value) -> Option<String> {
    let ok = match k {
        Scalar::Numeric => v.is_number(),
        Scalar::String => v.is_string(),
        Scalar::Boolean => v.is_boolean(),
        Scalar::Untyped => v.is_number() || v.is_string() || v.is_boolean(),
    };
    if ok {
        return None;
    }
    Some(match k {
        Scalar::Numeric => format!("expected numeric (int or float), got {}", go_type(v)),
        Scalar::String => format!("expected string, got {}", go_sharp_v(v)),
        Scalar::Boolean => format!("expected boolean, got {}", go_v(v)),
        Scalar::Untyped => format!("expected any scalar, got {}", go_v(v)),
    })
}

/// Go's `%T` of a decoded JSON value (`float64` for every number: kube decodes an applied
/// configuration without `UseNumber`).
fn go_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "<nil>",
        Value::Bool(_) => "bool",
        Value::Number(_) => "float64",
        Value::String(_) => "string",
        Value::Array(_) => "[]interface {}",
        Value::Object(_) => "map[string]interface {}",
    }
}

fn float(n: &serde_json::Number) -> String {
    crate::schema::field::go_format_float(n.as_f64().unwrap_or(f64::NAN))
}

/// Go's `%v` of structured-merge-diff's `*valueUnstructured` holding `v`: `&{...}`.
fn go_v(v: &Value) -> String {
    fn inner(v: &Value, out: &mut String) {
        match v {
            Value::Null => out.push_str("<nil>"),
            Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            Value::Number(n) => out.push_str(&float(n)),
            Value::String(s) => out.push_str(s),
            Value::Array(items) => {
                out.push('[');
                for (i, x) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(' ');
                    }
                    inner(x, out);
                }
                out.push(']');
            }
            Value::Object(m) => {
                // fmt prints a map's keys sorted.
                let mut keys: Vec<&String> = m.keys().collect();
                keys.sort();
                out.push_str("map[");
                for (i, k) in keys.into_iter().enumerate() {
                    if i > 0 {
                        out.push(' ');
                    }
                    out.push_str(k);
                    out.push(':');
                    if let Some(x) = m.get(k) {
                        inner(x, out);
                    }
                }
                out.push(']');
            }
        }
    }
    let mut out = String::from("&{");
    inner(v, &mut out);
    out.push('}');
    out
}

/// Go's `%#v` of structured-merge-diff's `*valueUnstructured` holding `v`:
/// `&value.valueUnstructured{Value:...}`.
fn go_sharp_v(v: &Value) -> String {
    fn inner(v: &Value, out: &mut String) {
        match v {
            Value::Null => out.push_str("interface {}(nil)"),
            Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            Value::Number(n) => out.push_str(&float(n)),
            Value::String(s) => out.push_str(&crate::schema::field::go_quote(s)),
            Value::Array(items) => {
                out.push_str("[]interface {}{");
                for (i, x) in items.iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    inner(x, out);
                }
                out.push('}');
            }
            Value::Object(m) => {
                let mut keys: Vec<&String> = m.keys().collect();
                keys.sort();
                out.push_str("map[string]interface {}{");
                for (i, k) in keys.into_iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    out.push_str(&crate::schema::field::go_quote(k));
                    out.push(':');
                    if let Some(x) = m.get(k) {
                        inner(x, out);
                    }
                }
                out.push('}');
            }
        }
    }
    let mut out = String::from("&value.valueUnstructured{Value:");
    inner(v, &mut out);
    out.push('}');
    out
}

/// structured-merge-diff's `ValidationErrors.Error()`: one error as `PATH: MESSAGE` (or the
/// message alone at the root), several as `errors:` and one indented line each.
fn join(errors: &[(String, String)]) -> String {
    let one = |(path, message): &(String, String)| {
        if path.is_empty() {
            message.clone()
        } else {
            format!("{path}: {message}")
        }
    };
    match errors {
        [e] => one(e),
        _ => {
            let mut out = String::from("errors:");
            for e in errors {
                out.push_str("\n  ");
                out.push_str(&one(e));
            }
            out
        }
    }
}

/// Validate an applied configuration against `t`'s schema, as kube does before an apply.
pub fn validate(t: &Typer<'_>, config: &Value) -> Result<(), ApplyError> {
    let root = match t.root {
        Ty::Deduced => return Ok(()),
        Ty::Root(s) => Vt::Node {
            s,
            preserve: false,
            // A CRD's schema gets them from kube's builder; a built-in definition has them.
            type_meta: !t.builtin,
        },
        Ty::Schema(s) => Vt::Node {
            s,
            preserve: false,
            type_meta: false,
        },
    };
    let mut w = Walk {
        builtin: t.builtin,
        path: Vec::new(),
        errors: Vec::new(),
    };
    w.value(root, config);
    if w.errors.is_empty() {
        Ok(())
    } else {
        Err(ApplyError::Typed(join(&w.errors)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn builtin(group: &str, version: &str, kind: &str) -> Typer<'static> {
        let defs = crate::builtin::definitions::get();
        let name = defs.name_of(group, version, kind).unwrap();
        Typer {
            root: Ty::Root(defs.get(name).unwrap()),
            builtin: true,
        }
    }

    fn err(t: &Typer<'_>, v: Value) -> String {
        match validate(t, &v) {
            Err(e) => e.to_string(),
            Ok(()) => panic!("{v} was accepted"),
        }
    }

    #[test]
    fn unknown_fields_of_built_in_kinds_are_named_by_their_path() {
        let cm = builtin("", "v1", "ConfigMap");
        assert!(validate(
            &cm,
            &json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "x", "labels": {"a": "b"}, "creationTimestamp": null},
                "data": {"a": "1"}, "binaryData": null, "immutable": false})
        )
        .is_ok());
        assert_eq!(
            err(
                &cm,
                json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"},
                    "data": {"a": "1"}, "bogus": 1})
            ),
            ".bogus: field not declared in schema"
        );
        assert_eq!(
            err(
                &cm,
                json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x", "nope": {}}})
            ),
            ".metadata.nope: field not declared in schema"
        );
        // Two maps with an undeclared field each: both reported, joined as kube joins them.
        let d = builtin("apps", "v1", "Deployment");
        assert_eq!(
            err(
                &d,
                json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
                    "spec": {"replicas": 1, "bogus": true, "template": {"spec": {"containers": [
                        {"name": "a", "image": "x", "wrong": 1},
                        {"name": "b", "ports": [{"containerPort": 80, "extra": "y"}]}]}}},
                    "status": {"other": 1}})
            ),
            "errors:\n  .spec.bogus: field not declared in schema\n  \
             .status.other: field not declared in schema"
        );
        assert_eq!(
            err(
                &d,
                json!({"spec": {"template": {"spec": {"containers": [
                        {"name": "a", "image": "x", "wrong": 1},
                        {"name": "b", "ports": [{"containerPort": 80, "extra": "y"}]}]}}}})
            ),
            "errors:\n  .spec.template.spec.containers[name=\"a\"].wrong: field not declared in schema\n  \
             .spec.template.spec.containers[name=\"b\"].ports[containerPort=80,protocol=\"TCP\"].extra: field not declared in schema"
        );
        // The first undeclared field of a map ends that map: what follows is not looked at.
        assert_eq!(
            err(&cm, json!({"zz": 1, "data": {"a": 1}})),
            ".zz: field not declared in schema"
        );
    }

    #[test]
    fn values_of_the_wrong_type_are_described_as_go_prints_them() {
        let cm = builtin("", "v1", "ConfigMap");
        assert_eq!(
            err(&cm, json!({"data": {"a": 1, "b": "x", "c": {"k": [1.5, "s", null]}}})),
            "errors:\n  .data.a: expected string, got &value.valueUnstructured{Value:1}\n  \
             .data.c: expected string, got &value.valueUnstructured{Value:map[string]interface {}{\"k\":[]interface {}{1.5, \"s\", interface {}(nil)}}}"
        );
        assert_eq!(
            err(&cm, json!({"immutable": "yes"})),
            ".immutable: expected boolean, got &{yes}"
        );
        assert_eq!(
            err(&cm, json!({"data": ["a", 2000000]})),
            ".data: expected map, got &{[a 2e+06]}"
        );
        let d = builtin("apps", "v1", "Deployment");
        assert_eq!(
            err(&d, json!({"spec": {"replicas": "2"}})),
            ".spec.replicas: expected numeric (int or float), got string"
        );
        assert_eq!(
            err(
                &d,
                json!({"spec": {"template": {"spec": {"containers": {"name": "a"}}}}})
            ),
            ".spec.template.spec.containers: expected list, got &{map[name:a]}"
        );
        // Atomic lists are indexed.
        assert_eq!(
            err(
                &d,
                json!({"spec": {"template": {"spec": {"containers": [{"name": "a", "args": ["x", 1]}]}}}})
            ),
            ".spec.template.spec.containers[name=\"a\"].args[1]: expected string, got &value.valueUnstructured{Value:1}"
        );
        // Quantities, int-or-strings and times are untyped scalars; a map is not a scalar.
        let pod = builtin("", "v1", "Pod");
        assert!(validate(
            &pod,
            &json!({"metadata": {"creationTimestamp": "2024-01-01T00:00:00Z"},
                "spec": {"containers": [{"name": "a", "resources": {"limits": {"cpu": 1, "memory": "1Gi"}},
                    "livenessProbe": {"httpGet": {"port": 8080}}}]}})
        )
        .is_ok());
        assert_eq!(
            err(
                &pod,
                json!({"spec": {"containers": [{"name": "a", "resources": {"limits": {"cpu": {"a": 1}}}}]}})
            ),
            ".spec.containers[name=\"a\"].resources.limits.cpu: expected any scalar, got &{map[a:1]}"
        );
        // null is valid anywhere.
        assert!(validate(
            &pod,
            &json!({"spec": {"containers": null, "nodeName": null}})
        )
        .is_ok());
    }

    #[test]
    fn list_items_without_keys_or_with_a_key_twice_are_refused() {
        let d = builtin("apps", "v1", "Deployment");
        assert_eq!(
            err(
                &d,
                json!({"spec": {"template": {"spec": {"containers": [{"image": "x"}, {"name": 1}]}}}})
            ),
            ".spec.template.spec.containers: element 0: associative list with keys has an element that omits all key fields [\"name\"] (and doesn't have default values for any key fields)"
        );
        assert_eq!(
            err(
                &d,
                json!({"spec": {"template": {"spec": {"containers": [
                    {"name": "a"}, {"name": "a", "bogus": 1}, "x"]}}}})
            ),
            "errors:\n  .spec.template.spec.containers: duplicate entries for key [name=\"a\"]\n  \
             .spec.template.spec.containers[name=\"a\"].bogus: field not declared in schema\n  \
             .spec.template.spec.containers: element 2: associative list with keys may not have non-map elements"
        );
        // A port without its protocol has kube's default in its key.
        assert_eq!(
            err(
                &d,
                json!({"spec": {"template": {"spec": {"containers": [{"name": "a", "ports": [
                    {"containerPort": 80}, {"containerPort": 80, "protocol": "TCP"}]}]}}}})
            ),
            ".spec.template.spec.containers[name=\"a\"].ports: duplicate entries for key [containerPort=80,protocol=\"TCP\"]"
        );
        // A set of scalars: a map or null in it is refused.
        let pod = builtin("", "v1", "Pod");
        let set = |items: Value| json!({"metadata": {"finalizers": items}});
        assert!(validate(&pod, &set(json!(["a", "b"]))).is_ok());
        assert_eq!(
            err(&pod, set(json!(["a", "a"]))),
            ".metadata.finalizers: duplicate entries for key [=\"a\"]"
        );
        assert_eq!(
            err(&pod, set(json!(["a", null]))),
            ".metadata.finalizers: element 1: associative list without keys has an element that's an explicit null"
        );
    }

    fn crd() -> Value {
        json!({"type": "object", "properties": {
            "spec": {"type": "object", "properties": {
                "size": {"type": "integer"},
                "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true,
                    "properties": {"known": {"type": "string"},
                        "nested": {"type": "object", "properties": {"x": {"type": "string"}}}}},
                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                "opaque": {"type": "object"},
                "port": {"x-kubernetes-int-or-string": true},
                "embedded": {"type": "object", "x-kubernetes-embedded-resource": true,
                    "properties": {"spec": {"type": "object"}}},
                "items": {"type": "array", "x-kubernetes-list-type": "map",
                    "x-kubernetes-list-map-keys": ["name", "zone"],
                    "items": {"type": "object", "properties": {
                        "name": {"type": "string"}, "zone": {"type": "string", "default": "a"},
                        "value": {"type": "string"}}}}}},
            "status": {"type": "object", "properties": {"ready": {"type": "boolean"}}}}})
    }

    #[test]
    fn custom_resources_follow_their_structural_schema() {
        let schema = crd();
        let t = Typer {
            root: Ty::Root(&schema),
            builtin: false,
        };
        let ok = json!({"apiVersion": "example.com/v1", "kind": "Widget",
            "metadata": {"name": "w", "labels": {"a": "b"}},
            "spec": {"size": 3, "free": {"anything": {"deep": [1, {"x": 2}]}, "known": "k",
                    "nested": {"x": "y", "extra": 1}},
                "labels": {"k": "v"}, "opaque": {"any": {"thing": 1}}, "port": "http",
                "embedded": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
                    "spec": {"whatever": 1}},
                "items": [{"name": "a"}, {"name": "a", "zone": "b"}, {"zone": "c"}]},
            "status": {"ready": true}});
        validate(&t, &ok).unwrap();
        assert_eq!(
            err(&t, json!({"spec": {"size": 1, "bogus": 1}})),
            ".spec.bogus: field not declared in schema"
        );
        assert_eq!(
            err(
                &t,
                json!({"spec": {"embedded": {"metadata": {"name": "p", "bogus": 1}}}})
            ),
            ".spec.embedded.metadata.bogus: field not declared in schema"
        );
        assert_eq!(
            err(&t, json!({"spec": {"embedded": {"status": {}}}})),
            ".spec.embedded.status: field not declared in schema"
        );
        assert_eq!(
            err(
                &t,
                json!({"metadata": {"bogus": 1}, "spec": {"labels": {"k": 1}}})
            ),
            "errors:\n  .metadata.bogus: field not declared in schema\n  \
             .spec.labels.k: expected string, got &value.valueUnstructured{Value:1}"
        );
        // The zone's default completes a key: `{name: a}` is `{name: a, zone: a}`.
        assert_eq!(
            err(
                &t,
                json!({"spec": {"items": [{"name": "a"}, {"name": "a", "zone": "a", "bogus": 1}]}})
            ),
            "errors:\n  .spec.items: duplicate entries for key [name=\"a\",zone=\"a\"]\n  \
             .spec.items[name=\"a\",zone=\"a\"].bogus: field not declared in schema"
        );
        assert_eq!(
            err(&t, json!({"status": {"ready": "yes", "x": 1}})),
            "errors:\n  .status.ready: expected boolean, got &{yes}\n  \
             .status.x: field not declared in schema"
        );
        // A schema preserving unknown fields at its root takes anything but what it declares
        // wrongly.
        let free = json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true,
            "properties": {"spec": {"type": "object", "properties": {"n": {"type": "integer"}}}}});
        let t = Typer {
            root: Ty::Root(&free),
            builtin: false,
        };
        validate(&t, &json!({"spec": {"n": 1, "m": 2}, "other": {"a": [1]}})).unwrap();
        assert_eq!(
            err(&t, json!({"spec": {"n": "1"}})),
            ".spec.n: expected numeric (int or float), got string"
        );
        // No schema: anything.
        let t = Typer {
            root: Ty::Deduced,
            builtin: false,
        };
        validate(&t, &json!({"spec": {"n": 1}, "x": [{"y": null}]})).unwrap();
    }

    #[test]
    fn errors_are_bounded() {
        let cm = builtin("", "v1", "ConfigMap");
        let data: Map<String, Value> = (0..5000).map(|i| (format!("k{i}"), json!(i))).collect();
        let e = err(&cm, json!({"data": data}));
        assert_eq!(e.lines().count(), MAX_ERRORS + 1);
    }
}
