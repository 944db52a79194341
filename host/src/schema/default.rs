//! Defaulting (`apiextensions-apiserver/pkg/apiserver/schema/defaulting`).

use serde_json::Value;

use super::node::{AdditionalProperties, Node};

fn is_non_nullable_null(x: &Value, s: Option<&Node>) -> bool {
    x.is_null() && s.is_some_and(|s| !s.nullable)
}

/// `PruneNonNullableNullsWithoutDefaults`: drops `null`s that are neither nullable nor defaulted.
pub(crate) fn prune_non_nullable_nulls(x: &mut Value, s: Option<&Node>) {
    match x {
        Value::Object(m) => {
            let keys: Vec<String> = m.keys().cloned().collect();
            for k in keys {
                let schema = s.and_then(|s| s.prop(&k).or_else(|| s.additional_schema()));
                let remove = m.get(&k).is_some_and(|v| {
                    v.is_null() && schema.is_some_and(|sc| !sc.nullable && sc.default.is_none())
                });
                if remove {
                    m.remove(&k);
                } else if let Some(v) = m.get_mut(&k) {
                    prune_non_nullable_nulls(v, schema);
                }
            }
        }
        Value::Array(a) => {
            let items = s.and_then(|s| s.items.as_deref());
            for v in a.iter_mut() {
                prune_non_nullable_nulls(v, items);
            }
        }
        _ => {}
    }
}

/// `Default`: fills in defaults top-down.
pub(crate) fn default(x: &mut Value, s: Option<&Node>) {
    let Some(s) = s else {
        return;
    };
    match x {
        Value::Object(m) => {
            for (k, prop) in &s.properties {
                let Some(d) = &prop.default else {
                    continue;
                };
                let missing = match m.get(k) {
                    None => true,
                    Some(v) => is_non_nullable_null(v, Some(prop)),
                };
                if missing {
                    m.insert(k.clone(), d.clone());
                }
            }
            for (k, v) in m.iter_mut() {
                if let Some(p) = s.prop(k) {
                    default(v, Some(p));
                } else if let Some(ap) = &s.additional_properties {
                    let ap = match ap {
                        AdditionalProperties::Schema(n) => Some(n.as_ref()),
                        AdditionalProperties::Bool(_) => None,
                    };
                    if let Some(ap) = ap {
                        if is_non_nullable_null(v, Some(ap)) {
                            *v = ap.default.clone().unwrap_or(Value::Null);
                        }
                    }
                    default(v, ap);
                }
            }
        }
        Value::Array(a) => {
            let items = s.items.as_deref();
            for v in a.iter_mut() {
                if let Some(it) = items {
                    if is_non_nullable_null(v, Some(it)) {
                        *v = it.default.clone().unwrap_or(Value::Null);
                    }
                }
                default(v, items);
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

    fn apply(schema: Value, mut obj: Value) -> Value {
        let n = node(schema);
        prune_non_nullable_nulls(&mut obj, Some(&n));
        default(&mut obj, Some(&n));
        obj
    }

    #[test]
    fn nested_defaults_top_down() {
        let s = json!({"type": "object", "properties": {"spec": {"type": "object", "default": {},
            "properties": {"replicas": {"type": "integer", "default": 1},
                "strategy": {"type": "object", "default": {"type": "Rolling"},
                    "properties": {"type": {"type": "string"}, "max": {"type": "integer", "default": 25}}}}}}});
        assert_eq!(
            apply(s.clone(), json!({})),
            json!({"spec": {"replicas": 1, "strategy": {"type": "Rolling", "max": 25}}})
        );
        assert_eq!(
            apply(s, json!({"spec": {"replicas": 3}})),
            json!({"spec": {"replicas": 3, "strategy": {"type": "Rolling", "max": 25}}})
        );
    }

    #[test]
    fn arrays_and_maps() {
        let s = json!({"type": "object", "properties": {
            "ports": {"type": "array", "items": {"type": "object", "properties": {
                "protocol": {"type": "string", "default": "TCP"}, "port": {"type": "integer"}}}},
            "m": {"type": "object", "additionalProperties": {"type": "object", "properties": {
                "enabled": {"type": "boolean", "default": true}}}}}});
        assert_eq!(
            apply(
                s,
                json!({"ports": [{"port": 80}, {"port": 53, "protocol": "UDP"}], "m": {"a": {}}})
            ),
            json!({"ports": [{"port": 80, "protocol": "TCP"}, {"port": 53, "protocol": "UDP"}],
                "m": {"a": {"enabled": true}}})
        );
    }

    #[test]
    fn nulls() {
        let s = json!({"type": "object", "properties": {
            "nullable": {"type": "string", "nullable": true, "default": "d"},
            "defaulted": {"type": "string", "default": "d"},
            "plain": {"type": "string"},
            "items": {"type": "array", "items": {"type": "string", "default": "x"}}}});
        assert_eq!(
            apply(
                s,
                json!({"nullable": null, "defaulted": null, "plain": null, "items": [null, "a"]})
            ),
            json!({"nullable": null, "defaulted": "d", "items": ["x", "a"]})
        );
    }
}
