//! Pruning of unknown fields (`apiextensions-apiserver/pkg/apiserver/schema/pruning`), including
//! the ObjectMeta coercion kube applies to embedded resources.

use serde_json::Value;

use super::field;
use super::node::{AdditionalProperties, Node};
use super::objectmeta;

const META_FIELDS: &[&str] = &["apiVersion", "kind", "metadata"];

fn is_meta(k: &str) -> bool {
    META_FIELDS.contains(&k)
}

/// `PruneWithOptions(obj, s, isResourceRoot=true, TrackUnknownFieldPaths=true)`: returns the
/// sorted paths of the removed fields. The metadata of the root and of embedded resources is also
/// coerced as kube's decoder of custom resources coerces it (`coerce_metadata`: its `null`
/// strings made `""`).
pub(crate) fn prune(root: &Node, obj: &mut Value) -> Vec<String> {
    let mut out = Vec::new();
    prune_value(obj, Some(root), true, "", &mut out, true);
    out.sort();
    out
}

/// `PruneWithOptions` for an arbitrary node; `resource_root` treats the node like an embedded
/// resource (its `apiVersion`, `kind` and `metadata` are kept). Pruning alone: `null` strings in
/// metadata stay (kube's check that a default has no unknown fields prunes, and compares).
pub(crate) fn prune_node(node: &Node, obj: &mut Value, resource_root: bool) -> Vec<String> {
    let mut out = Vec::new();
    prune_value(obj, Some(node), resource_root, "", &mut out, false);
    out.sort();
    out
}

fn additional(s: &Node) -> Option<Option<&Node>> {
    match &s.additional_properties {
        None => None,
        Some(AdditionalProperties::Bool(_)) => Some(None),
        Some(AdditionalProperties::Schema(ap)) => Some(Some(ap)),
    }
}

/// Embedded (non-root) resources get unknown ObjectMeta fields removed; with `zero`, the root's
/// and theirs get a `null` label, annotation or finalizer made `""`, as kube's round trip of
/// both through the typed ObjectMeta leaves it (not reported: nothing is dropped).
fn coerce_metadata(v: &mut Value, path: &str, root: bool, out: &mut Vec<String>, zero: bool) {
    if zero {
        objectmeta::zero_null_strings(v);
    }
    if root {
        return;
    }
    let meta_path = field::child(path, "metadata");
    for k in objectmeta::prune_embedded_metadata(v) {
        out.push(field::child(&meta_path, &k));
    }
}

fn prune_value(
    x: &mut Value,
    s: Option<&Node>,
    root: bool,
    path: &str,
    out: &mut Vec<String>,
    zero: bool,
) {
    if let Some(s) = s {
        if s.preserves_unknown() {
            skip_prune(x, s, root, path, out, zero);
            return;
        }
    }
    match x {
        Value::Object(m) => {
            let Some(s) = s else {
                let keys: Vec<String> = m.keys().cloned().collect();
                for k in keys {
                    out.push(field::child(path, &k));
                }
                m.clear();
                return;
            };
            let embedded = root || s.embedded_resource;
            let keys: Vec<String> = m.keys().cloned().collect();
            for k in keys {
                if embedded && is_meta(&k) {
                    if k == "metadata" {
                        if let Some(v) = m.get_mut(&k) {
                            coerce_metadata(v, path, root, out, zero);
                        }
                    }
                    continue;
                }
                if let Some(p) = s.prop(&k) {
                    if let Some(v) = m.get_mut(&k) {
                        prune_value(v, Some(p), false, &field::child(path, &k), out, zero);
                    }
                } else if let Some(ap) = additional(s) {
                    if let Some(v) = m.get_mut(&k) {
                        prune_value(v, ap, false, &field::child(path, &k), out, zero);
                    }
                } else {
                    if !is_meta(&k) || !path.is_empty() {
                        out.push(field::child(path, &k));
                    }
                    m.remove(&k);
                }
            }
        }
        Value::Array(a) => {
            let items = s.and_then(|s| s.items.as_deref());
            for (i, v) in a.iter_mut().enumerate() {
                prune_value(v, items, false, &field::index(path, i), out, zero);
            }
        }
        _ => {}
    }
}

fn skip_prune(x: &mut Value, s: &Node, root: bool, path: &str, out: &mut Vec<String>, zero: bool) {
    match x {
        Value::Object(m) => {
            let embedded = root || s.embedded_resource;
            for (k, v) in m.iter_mut() {
                if embedded && is_meta(k) {
                    if k == "metadata" {
                        coerce_metadata(v, path, root, out, zero);
                    }
                    continue;
                }
                if let Some(p) = s.prop(k) {
                    prune_value(v, Some(p), false, &field::child(path, k), out, zero);
                } else if let Some(ap) = additional(s) {
                    prune_value(v, ap, false, &field::child(path, k), out, zero);
                }
            }
        }
        Value::Array(a) => {
            if let Some(items) = s.items.as_deref() {
                for (i, v) in a.iter_mut().enumerate() {
                    skip_prune(v, items, false, &field::index(path, i), out, zero);
                }
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn node(v: Value) -> Node {
        let mut errs = vec![];
        let n = Node::parse(&v, "", &mut errs);
        assert!(errs.is_empty(), "{errs:?}");
        n
    }

    #[test]
    fn nested_unknown_fields() {
        let n = node(
            json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
            "a": {"type": "string"},
            "list": {"type": "array", "items": {"type": "object", "properties": {"k": {"type": "string"}}}}}}}}),
        );
        let mut obj = json!({"apiVersion": "v1", "kind": "K", "metadata": {"name": "x", "whatever": 1},
            "spec": {"a": "1", "b": 2, "list": [{"k": "v", "z": 1}]}, "status": {}});
        let pruned = prune(&n, &mut obj);
        assert_eq!(pruned, vec!["spec.b", "spec.list[0].z", "status"]);
        assert_eq!(
            obj,
            json!({"apiVersion": "v1", "kind": "K", "metadata": {"name": "x", "whatever": 1},
                "spec": {"a": "1", "list": [{"k": "v"}]}})
        );
    }

    #[test]
    fn preserve_unknown_fields() {
        let n = node(
            json!({"type": "object", "properties": {"spec": {"type": "object",
            "x-kubernetes-preserve-unknown-fields": true,
            "properties": {"typed": {"type": "object", "properties": {"a": {"type": "string"}}}}}}}),
        );
        let mut obj = json!({"spec": {"free": {"x": 1}, "typed": {"a": "1", "b": 2}}});
        assert_eq!(prune(&n, &mut obj), vec!["spec.typed.b"]);
        assert_eq!(
            obj,
            json!({"spec": {"free": {"x": 1}, "typed": {"a": "1"}}})
        );
    }

    #[test]
    fn embedded_resources() {
        let n = node(
            json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
            "template": {"type": "object", "x-kubernetes-embedded-resource": true,
                "properties": {"spec": {"type": "object", "properties": {"a": {"type": "string"}}}}}}}}}),
        );
        let mut obj = json!({"spec": {"template": {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p", "bogus": true}, "spec": {"a": "x", "b": "y"}, "extra": 1}}});
        assert_eq!(
            prune(&n, &mut obj),
            vec![
                "spec.template.extra",
                "spec.template.metadata.bogus",
                "spec.template.spec.b"
            ]
        );
        assert_eq!(
            obj,
            json!({"spec": {"template": {"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": "p"}, "spec": {"a": "x"}}}})
        );
    }

    /// kube reads a custom resource's metadata (the root's, an embedded resource's) into a typed
    /// ObjectMeta and writes it back: a `null` label, annotation or finalizer is `""`. Elsewhere
    /// a custom resource is unstructured and keeps its `null`s.
    #[test]
    fn null_metadata_strings_are_empty_and_other_nulls_kept() {
        let n = node(
            json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
            "labels": {"type": "object", "nullable": true,
                       "additionalProperties": {"type": "string", "nullable": true}},
            "template": {"type": "object", "x-kubernetes-embedded-resource": true}}}}}),
        );
        let mut obj = json!({"apiVersion": "example.com/v1", "kind": "W",
            "metadata": {"name": "w", "labels": {"a": null, "b": "x"}, "annotations": {"n": null},
                         "finalizers": [null, "f"]},
            "spec": {"labels": {"a": null},
                     "template": {"apiVersion": "v1", "kind": "Pod",
                                  "metadata": {"labels": {"t": null}}}}});
        // Pruning alone (the check of a CRD's defaults) leaves them.
        let mut copy = obj.clone();
        assert!(prune_node(&n, &mut copy, true).is_empty());
        assert_eq!(copy, obj);
        assert!(prune(&n, &mut obj).is_empty());
        assert_eq!(
            obj,
            json!({"apiVersion": "example.com/v1", "kind": "W",
                "metadata": {"name": "w", "labels": {"a": "", "b": "x"}, "annotations": {"n": ""},
                             "finalizers": ["", "f"]},
                "spec": {"labels": {"a": null},
                         "template": {"apiVersion": "v1", "kind": "Pod",
                                      "metadata": {"labels": {"t": ""}}}}})
        );
    }

    #[test]
    fn additional_properties() {
        let n = node(
            json!({"type": "object", "properties": {"labels": {"type": "object",
            "additionalProperties": {"type": "object", "properties": {"v": {"type": "string"}}}}}}),
        );
        let mut obj = json!({"labels": {"a": {"v": "1", "w": 2}}});
        assert_eq!(prune(&n, &mut obj), vec!["labels.a.w"]);
        let n = node(
            json!({"type": "object", "properties": {"m": {"type": "object", "additionalProperties": true}}}),
        );
        let mut obj = json!({"m": {"a": 1, "b": {"c": 1}}});
        assert_eq!(prune(&n, &mut obj), vec!["m.b.c"]);
    }
}
