//! TypeMeta/ObjectMeta handling for `x-kubernetes-embedded-resource` objects
//! (`apiextensions-apiserver/pkg/apiserver/schema/objectmeta`).
//!
//! The root object's metadata is the host's business (it is validated like any other object's
//! metadata); this module only deals with embedded resources.

use serde_json::{Map, Value};

use super::field::{self, Bad};
use super::node::Node;
use super::Violation;

/// The JSON fields of `metav1.ObjectMeta`; anything else inside embedded metadata is pruned.
pub(crate) const OBJECT_META_FIELDS: &[&str] = &[
    "name",
    "generateName",
    "namespace",
    "selfLink",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "labels",
    "annotations",
    "ownerReferences",
    "finalizers",
    "managedFields",
];

/// The JSON type of a value as Go's `encoding/json` names it in errors.
pub(crate) fn go_type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Whether a metadata field holds a value of the JSON type `metav1.ObjectMeta` expects
/// (`Err` carries Go's `json.Unmarshal` message).
fn check_meta_field(k: &str, v: &Value) -> Result<(), String> {
    let ok = match k {
        "name" | "generateName" | "namespace" | "selfLink" | "uid" | "resourceVersion"
        | "creationTimestamp" | "deletionTimestamp" => v.is_string() || v.is_null(),
        "generation" | "deletionGracePeriodSeconds" => v.is_i64() || v.is_null(),
        "labels" | "annotations" => match v {
            Value::Null => true,
            Value::Object(m) => m.values().all(|x| x.is_string() || x.is_null()),
            _ => false,
        },
        "finalizers" => match v {
            Value::Null => true,
            Value::Array(a) => a.iter().all(|x| x.is_string() || x.is_null()),
            _ => false,
        },
        "ownerReferences" | "managedFields" => matches!(v, Value::Null | Value::Array(_)),
        _ => true,
    };
    if ok {
        Ok(())
    } else {
        let want = match k {
            "generation" | "deletionGracePeriodSeconds" => "int64",
            "labels" | "annotations" => "map[string]string",
            "finalizers" => "[]string",
            "ownerReferences" => "[]v1.OwnerReference",
            "managedFields" => "[]v1.ManagedFieldsEntry",
            "creationTimestamp" | "deletionTimestamp" => "v1.Time",
            _ => "string",
        };
        Err(format!(
            "json: cannot unmarshal {} into Go struct field ObjectMeta.{k} of type {want}",
            go_type_name(v)
        ))
    }
}

/// Decodes embedded metadata like `GetObjectMeta(obj, false)`.
pub(crate) fn get_object_meta(v: &Value) -> Result<&Map<String, Value>, String> {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                check_meta_field(k, x)?;
            }
            Ok(m)
        }
        other => Err(format!(
            "json: cannot unmarshal {} into Go value of type v1.ObjectMeta",
            go_type_name(other)
        )),
    }
}

/// A `null` label or annotation value, or finalizer, made the `""` Go's decoder leaves in a
/// `map[string]string` or `[]string` element: kube reads a custom resource's metadata, and an
/// embedded resource's, into a typed `metav1.ObjectMeta` and writes that back
/// (`GetObjectMeta`, `SetObjectMeta`), so `labels: {a: null}` is stored as `a: ""`.
pub(crate) fn zero_null_strings(meta: &mut Value) {
    let Value::Object(m) = meta else {
        return;
    };
    let empty = |v: &mut Value| {
        if v.is_null() {
            *v = Value::String(String::new());
        }
    };
    for key in ["labels", "annotations"] {
        if let Some(Value::Object(map)) = m.get_mut(key) {
            map.values_mut().for_each(empty);
        }
    }
    if let Some(Value::Array(items)) = m.get_mut("finalizers") {
        items.iter_mut().for_each(empty);
    }
}

/// Removes unknown ObjectMeta fields (and a null `creationTimestamp`) from embedded metadata, as the
/// JSON round trip in kube's `objectmeta.Coerce` does. Returns the removed keys.
pub(crate) fn prune_embedded_metadata(meta: &mut Value) -> Vec<String> {
    let Value::Object(m) = meta else {
        return Vec::new();
    };
    if m.iter().any(|(k, v)| check_meta_field(k, v).is_err()) {
        // kube leaves undecodable metadata alone here; validation reports it.
        return Vec::new();
    }
    let unknown: Vec<String> = m
        .keys()
        .filter(|k| !OBJECT_META_FIELDS.contains(&k.as_str()))
        .cloned()
        .collect();
    for k in &unknown {
        m.remove(k);
    }
    if matches!(m.get("creationTimestamp"), Some(Value::Null)) {
        m.remove("creationTimestamp");
    }
    unknown
}

/// `objectmeta.Validate` (non-root): checks every embedded resource in `data`.
pub(crate) fn validate(path: &str, node: &Node, data: &Value, out: &mut Vec<Violation>) {
    match data {
        Value::Object(m) => {
            if node.embedded_resource {
                validate_embedded(path, m, out);
            }
            for (k, v) in m {
                if let Some(p) = node.prop(k) {
                    validate(&field::child(path, k), p, v, out);
                } else if let Some(ap) = node.additional_schema() {
                    validate(&field::key(path, k), ap, v, out);
                }
            }
        }
        Value::Array(a) => {
            if let Some(items) = &node.items {
                for (i, v) in a.iter().enumerate() {
                    validate(&field::index(path, i), items, v, out);
                }
            }
        }
        _ => {}
    }
}

fn validate_embedded(path: &str, m: &Map<String, Value>, out: &mut Vec<Violation>) {
    if !m.contains_key("apiVersion") {
        out.push(Violation::required(&field::child(path, "apiVersion"), ""));
    }
    if !m.contains_key("kind") {
        out.push(Violation::required(&field::child(path, "kind"), ""));
    }
    for (k, v) in m {
        match k.as_str() {
            "apiVersion" => {
                let p = field::child(path, "apiVersion");
                match v {
                    Value::String(s) if s.is_empty() => {
                        out.push(Violation::invalid(&p, Bad::str(s), "must not be empty"))
                    }
                    Value::String(s) => {
                        if s != "/" && s.matches('/').count() > 1 {
                            out.push(Violation::invalid(
                                &p,
                                Bad::str(s),
                                &format!("unexpected GroupVersion string: {s}"),
                            ));
                        }
                    }
                    other => out.push(Violation::invalid(&p, Bad::of(other), "must be a string")),
                }
            }
            "kind" => {
                let p = field::child(path, "kind");
                match v {
                    Value::String(s) if s.is_empty() => {
                        out.push(Violation::invalid(&p, Bad::str(s), "must not be empty"))
                    }
                    Value::String(s) => {
                        let errs = dns1035_label(&s.to_lowercase());
                        if !errs.is_empty() {
                            out.push(Violation::invalid(
                                &p,
                                Bad::str(s),
                                &format!(
                                    "may have mixed case, but should otherwise match: {}",
                                    errs.join(",")
                                ),
                            ));
                        }
                    }
                    other => out.push(Violation::invalid(&p, Bad::of(other), "must be a string")),
                }
            }
            "metadata" => {
                let p = field::child(path, "metadata");
                match get_object_meta(v) {
                    Err(e) => out.push(Violation::invalid(&p, Bad::of(v), &e)),
                    Ok(meta) => validate_object_meta(&p, meta, out),
                }
            }
            _ => {}
        }
    }
}

/// A subset of `ValidateObjectMeta`: name/generateName path segments, namespace, labels and
/// annotations.
fn validate_object_meta(path: &str, meta: &Map<String, Value>, out: &mut Vec<Violation>) {
    let s = |k: &str| meta.get(k).and_then(Value::as_str).unwrap_or("");
    let generate_name = s("generateName");
    if !generate_name.is_empty() {
        for e in path_segment(generate_name, true) {
            out.push(Violation::invalid(
                &field::child(path, "generateName"),
                Bad::str(generate_name),
                &e,
            ));
        }
    }
    let name = s("name");
    if !name.is_empty() {
        for e in path_segment(name, false) {
            out.push(Violation::invalid(
                &field::child(path, "name"),
                Bad::str(name),
                &e,
            ));
        }
    }
    let ns = s("namespace");
    if !ns.is_empty() {
        for e in dns1123_label(ns) {
            out.push(Violation::invalid(
                &field::child(path, "namespace"),
                Bad::str(ns),
                &e,
            ));
        }
    }
    if let Some(Value::Object(labels)) = meta.get("labels") {
        let lp = field::child(path, "labels");
        for (k, v) in labels {
            for e in qualified_name(k) {
                out.push(Violation::invalid(&lp, Bad::str(k), &e));
            }
            let v = v.as_str().unwrap_or("");
            for e in label_value(v) {
                out.push(Violation::invalid(&lp, Bad::str(v), &e));
            }
        }
    }
    if let Some(Value::Object(ann)) = meta.get("annotations") {
        let ap = field::child(path, "annotations");
        let mut total = 0usize;
        for (k, v) in ann {
            for e in qualified_name(&k.to_lowercase()) {
                out.push(Violation::invalid(&ap, Bad::str(k), &e));
            }
            total += k.len() + v.as_str().map_or(0, str::len);
        }
        if total > 256 * 1024 {
            out.push(Violation::too_long(&ap, 256 * 1024));
        }
    }
}

fn path_segment(name: &str, prefix: bool) -> Vec<String> {
    let mut errs = Vec::new();
    if !prefix && (name == "." || name == "..") {
        errs.push(format!("may not be '{name}'"));
    }
    for bad in ["/", "%"] {
        if name.contains(bad) {
            errs.push(format!("may not contain '{bad}'"));
        }
    }
    errs
}

fn is_alnum_lower(c: char) -> bool {
    c.is_ascii_lowercase() || c.is_ascii_digit()
}

pub(crate) fn dns1035_label(s: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if s.len() > 63 {
        errs.push("must be no more than 63 characters".to_string());
    }
    let ok = s.chars().next().is_some_and(|c| c.is_ascii_lowercase())
        && s.chars().last().is_some_and(is_alnum_lower)
        && s.chars().all(|c| is_alnum_lower(c) || c == '-');
    if !ok {
        errs.push("a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')".to_string());
    }
    errs
}

fn dns1123_label(s: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if s.len() > 63 {
        errs.push("must be no more than 63 characters".to_string());
    }
    if !is_dns1123_label(s) {
        errs.push("a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')".to_string());
    }
    errs
}

fn is_dns1123_label(s: &str) -> bool {
    s.chars().next().is_some_and(is_alnum_lower)
        && s.chars().last().is_some_and(is_alnum_lower)
        && s.chars().all(|c| is_alnum_lower(c) || c == '-')
}

fn is_qualified_name_part(s: &str) -> bool {
    let alnum = |c: char| c.is_ascii_alphanumeric();
    s.chars().next().is_some_and(alnum)
        && s.chars().last().is_some_and(alnum)
        && s.chars()
            .all(|c| alnum(c) || c == '-' || c == '_' || c == '.')
}

const QUALIFIED_NAME_MSG: &str = "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";

pub(crate) fn qualified_name(s: &str) -> Vec<String> {
    let mut errs = Vec::new();
    let parts: Vec<&str> = s.split('/').collect();
    let name = match parts.as_slice() {
        [n] => *n,
        [prefix, n] => {
            if prefix.is_empty() {
                errs.push("prefix part must be non-empty".to_string());
            } else {
                if prefix.len() > 253 {
                    errs.push("prefix part must be no more than 253 characters".to_string());
                }
                if !prefix.split('.').all(is_dns1123_label) {
                    errs.push("prefix part a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')".to_string());
                }
            }
            *n
        }
        _ => {
            errs.push(format!(
                "a qualified name {} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
                &QUALIFIED_NAME_MSG[10..]
            ));
            return errs;
        }
    };
    if name.is_empty() {
        errs.push("name part must be non-empty".to_string());
    } else {
        if name.len() > 63 {
            errs.push("name part must be no more than 63 characters".to_string());
        }
        if !is_qualified_name_part(name) {
            errs.push(QUALIFIED_NAME_MSG.to_string());
        }
    }
    errs
}

pub(crate) fn label_value(s: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if s.len() > 63 {
        errs.push("must be no more than 63 characters".to_string());
    }
    if !s.is_empty() && !is_qualified_name_part(s) {
        errs.push("a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')".to_string());
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn embedded_node() -> Node {
        let mut errs = vec![];
        let n = Node::parse(
            &json!({"type": "object", "properties": {"template": {
                "type": "object", "x-kubernetes-embedded-resource": true,
                "x-kubernetes-preserve-unknown-fields": true}}}),
            "",
            &mut errs,
        );
        assert!(errs.is_empty());
        n
    }

    fn run(data: Value) -> Vec<String> {
        let mut out = vec![];
        validate("spec", &embedded_node(), &data, &mut out);
        out.iter()
            .map(|v| format!("{}|{}", v.field, v.message))
            .collect()
    }

    #[test]
    fn embedded_requires_type_meta() {
        assert!(run(json!({"template": {"apiVersion": "v1", "kind": "Pod"}})).is_empty());
        assert_eq!(
            run(json!({"template": {}})),
            vec![
                "spec.template.apiVersion|Required value",
                "spec.template.kind|Required value"
            ]
        );
        assert_eq!(
            run(json!({"template": {"apiVersion": "a/b/c", "kind": "Pod"}})),
            vec!["spec.template.apiVersion|Invalid value: \"a/b/c\": unexpected GroupVersion string: a/b/c"]
        );
        let r = run(json!({"template": {"apiVersion": "v1", "kind": "Po_d"}}));
        assert_eq!(r.len(), 1);
        assert!(r[0].contains("may have mixed case"));
    }

    #[test]
    fn embedded_metadata() {
        assert!(run(json!({"template": {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "x", "labels": {"app": "a"}}}}))
        .is_empty());
        assert_eq!(
            run(
                json!({"template": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "a/b"}}})
            ),
            vec!["spec.template.metadata.name|Invalid value: \"a/b\": may not contain '/'"]
        );
        assert_eq!(
            run(json!({"template": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": 5}}})),
            vec!["spec.template.metadata|Invalid value: {\"name\":5}: json: cannot unmarshal number into Go struct field ObjectMeta.name of type string"]
        );
        assert_eq!(
            run(json!({"template": {"apiVersion": "v1", "kind": "Pod", "metadata": {"labels": {"a b": "c"}}}})).len(),
            1
        );
    }

    #[test]
    fn prunes_unknown_meta() {
        let mut m = json!({"name": "x", "foo": 1, "creationTimestamp": null});
        assert_eq!(prune_embedded_metadata(&mut m), vec!["foo".to_string()]);
        assert_eq!(m, json!({"name": "x"}));
    }
}
