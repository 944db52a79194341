//! End-to-end tests of the public API.

use serde_json::{json, Value};

use super::*;

const P: &str = "spec.versions[0].schema.openAPIV3Schema";

fn schema(v: Value) -> Schema {
    match Schema::from_crd_schema(&v, P) {
        Ok(s) => s,
        Err(e) => panic!("schema rejected: {e:#?}"),
    }
}

fn lines(v: &[Violation]) -> Vec<String> {
    v.iter()
        .map(|v| format!("{}|{}|{}", v.reason, v.field, v.message))
        .collect()
}

fn deployment_like() -> Value {
    json!({
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "required": ["secretName"],
                "properties": {
                    "secretName": {"type": "string", "minLength": 1},
                    "replicas": {"type": "integer", "default": 1, "minimum": 0},
                    "maxReplicas": {"type": "integer", "default": 10},
                    "mode": {"type": "string", "enum": ["a", "b"], "default": "a"},
                    "name": {"type": "string"},
                    "url": {"type": "string"},
                    "items": {"type": "array", "items": {"type": "object", "properties": {
                        "name": {"type": "string"}}}}
                },
                "x-kubernetes-validations": [
                    {"rule": "self.replicas <= self.maxReplicas", "message": "replicas must not exceed maxReplicas"}
                ]
            },
            "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}
        }
    })
}

#[test]
fn full_pipeline() {
    let s = schema(deployment_like());
    let mut obj = json!({
        "apiVersion": "example.com/v1", "kind": "Thing", "metadata": {"name": "t", "uid": "x"},
        "spec": {"secretName": "s", "bogus": true, "items": [{"name": "a", "extra": 1}]},
        "status": {"anything": [1, 2]}
    });
    assert_eq!(s.prune(&mut obj), vec!["spec.bogus", "spec.items[0].extra"]);
    s.apply_defaults(&mut obj);
    assert_eq!(obj["spec"]["replicas"], json!(1));
    assert_eq!(obj["spec"]["maxReplicas"], json!(10));
    assert_eq!(obj["spec"]["mode"], json!("a"));
    assert_eq!(obj["metadata"], json!({"name": "t", "uid": "x"}));
    assert!(s.validate(&obj).is_empty());
    assert!(s.validate_cel(&obj, None).is_empty());
}

#[test]
fn validation_collects_everything() {
    let s = schema(deployment_like());
    let obj = json!({"spec": {"replicas": "many", "mode": "c", "secretName": ""}});
    let v = s.validate(&obj);
    assert_eq!(
        lines(&v),
        vec![
            "FieldValueInvalid|spec.secretName|Invalid value: \"\": spec.secretName in body should be at least 1 chars long",
            "FieldValueTypeInvalid|spec.replicas|Invalid value: \"string\": spec.replicas in body must be of type integer: \"string\"",
            "FieldValueNotSupported|spec.mode|Unsupported value: \"c\": supported values: \"a\", \"b\"",
        ]
    );
    let blocking = blocking_violation(&v).expect("type errors block CEL");
    assert_eq!(blocking.field, "<nil>");
    assert_eq!(
        blocking.message,
        "Invalid value: null: some validation rules were not checked because the object was invalid; correct the existing errors to complete validation"
    );
    let missing = s.validate(&json!({"spec": {}}));
    assert_eq!(
        lines(&missing),
        vec!["FieldValueRequired|spec.secretName|Required value"]
    );
    assert!(blocking_violation(&[]).is_none());
}

#[test]
fn structural_violations_are_reported_with_paths() {
    let err = Schema::from_crd_schema(
        &json!({"type": "object", "properties": {"spec": {"properties": {"a": {"type": "string"}}}}}),
        P,
    )
    .expect_err("not structural");
    assert_eq!(
        lines(&err),
        vec![format!("FieldValueRequired|{P}.properties[spec].type|Required value: must not be empty for specified object fields")]
    );
    let err = Schema::from_crd_schema(&json!({"type": 5}), P).expect_err("decode error");
    assert_eq!(err[0].field, format!("{P}.type"));
}

#[test]
fn cel_rule_with_message() {
    let s = schema(deployment_like());
    let ok = json!({"spec": {"secretName": "s", "replicas": 3, "maxReplicas": 5}});
    assert!(s.validate_cel(&ok, None).is_empty());
    let bad = json!({"spec": {"secretName": "s", "replicas": 6, "maxReplicas": 5}});
    assert_eq!(
        lines(&s.validate_cel(&bad, None)),
        vec!["FieldValueInvalid|spec|Invalid value: \"object\": replicas must not exceed maxReplicas"]
    );
}

#[test]
fn cel_default_message_reason_and_field_path() {
    let s = schema(
        json!({"type": "object", "properties": {"spec": {"type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
        "x-kubernetes-validations": [
            {"rule": "self.a < 10"},
            {"rule": "self.b < 10", "reason": "FieldValueForbidden", "fieldPath": ".b", "message": "b too big"},
            {"rule": "self.a != 5", "reason": "FieldValueRequired", "message": "five"},
            {"rule": "self.a != 6", "reason": "FieldValueDuplicate"}
        ]}}}),
    );
    assert!(s
        .validate_cel(&json!({"spec": {"a": 1, "b": 1}}), None)
        .is_empty());
    assert_eq!(
        lines(&s.validate_cel(&json!({"spec": {"a": 11, "b": 12}}), None)),
        vec![
            "FieldValueInvalid|spec|Invalid value: \"object\": failed rule: self.a < 10",
            "FieldValueForbidden|spec.b|Forbidden: b too big",
        ]
    );
    assert_eq!(
        lines(&s.validate_cel(&json!({"spec": {"a": 5, "b": 1}}), None)),
        vec!["FieldValueRequired|spec|Required value: five"]
    );
    assert_eq!(
        lines(&s.validate_cel(&json!({"spec": {"a": 6, "b": 1}}), None)),
        vec!["FieldValueDuplicate|spec|Duplicate value: \"object\""]
    );
}

#[test]
fn cel_message_expression() {
    let s = schema(
        json!({"type": "object", "properties": {"spec": {"type": "object",
        "properties": {"replicas": {"type": "integer"}},
        "x-kubernetes-validations": [{
            "rule": "self.replicas < 5",
            "message": "static",
            "messageExpression": "'replicas is ' + string(self.replicas) + ', must be below 5'"
        }, {
            "rule": "self.replicas < 7",
            "message": "fallback used",
            "messageExpression": "''"
        }]}}}),
    );
    assert_eq!(
        lines(&s.validate_cel(&json!({"spec": {"replicas": 8}}), None)),
        vec![
            "FieldValueInvalid|spec|Invalid value: \"object\": replicas is 8, must be below 5",
            "FieldValueInvalid|spec|Invalid value: \"object\": fallback used",
        ]
    );
}

#[test]
fn cel_transition_rule() {
    let s = schema(
        json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
        "name": {"type": "string", "x-kubernetes-validations": [{"rule": "self == oldSelf", "message": "immutable"}]},
        "other": {"type": "string"}}}}}),
    );
    let old = json!({"spec": {"name": "a", "other": "x"}});
    // create: transition rules are skipped
    assert!(s.validate_cel(&old, None).is_empty());
    // unchanged
    assert!(s
        .validate_cel(&json!({"spec": {"name": "a", "other": "y"}}), Some(&old))
        .is_empty());
    // changed
    assert_eq!(
        lines(&s.validate_cel(&json!({"spec": {"name": "b"}}), Some(&old))),
        vec!["FieldValueInvalid|spec.name|Invalid value: \"string\": immutable"]
    );
    // the old node is absent: skipped
    assert!(s
        .validate_cel(&json!({"spec": {"name": "b"}}), Some(&json!({"spec": {}})))
        .is_empty());
}

#[test]
fn cel_optional_old_self() {
    let s = schema(
        json!({"type": "object", "properties": {"spec": {"type": "object",
        "properties": {"v": {"type": "integer"}},
        "x-kubernetes-validations": [{
            "rule": "!oldSelf.hasValue() || self.v >= oldSelf.value().v",
            "message": "v may only grow", "optionalOldSelf": true}]}}}),
    );
    assert!(s.validate_cel(&json!({"spec": {"v": 1}}), None).is_empty());
    assert!(s
        .validate_cel(&json!({"spec": {"v": 2}}), Some(&json!({"spec": {"v": 1}})))
        .is_empty());
    assert_eq!(
        lines(&s.validate_cel(&json!({"spec": {"v": 0}}), Some(&json!({"spec": {"v": 1}})))),
        vec!["FieldValueInvalid|spec|Invalid value: \"object\": v may only grow"]
    );
}

#[test]
fn cel_kube_library_functions() {
    let s = schema(
        json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
        "name": {"type": "string"}, "url": {"type": "string"}},
        "x-kubernetes-validations": [
            {"rule": "self.name.lowerAscii() == self.name", "message": "name must be lower case"},
            {"rule": "!has(self.url) || isURL(self.url)", "message": "url must be a URL"}
        ]}}}),
    );
    assert!(s
        .validate_cel(
            &json!({"spec": {"name": "abc", "url": "https://example.com/x"}}),
            None
        )
        .is_empty());
    assert_eq!(
        lines(&s.validate_cel(&json!({"spec": {"name": "ABC", "url": "::nope"}}), None)),
        vec![
            "FieldValueInvalid|spec|Invalid value: \"object\": name must be lower case",
            "FieldValueInvalid|spec|Invalid value: \"object\": url must be a URL",
        ]
    );
}

#[test]
fn cel_runtime_errors() {
    let s = schema(
        json!({"type": "object", "properties": {"spec": {"type": "object",
        "properties": {"a": {"type": "integer"}, "s": {"type": "string"}},
        "x-kubernetes-validations": [{"rule": "self.a > 0"}]}}}),
    );
    assert_eq!(
        lines(&s.validate_cel(&json!({"spec": {"s": "x"}}), None)),
        vec!["FieldValueInvalid|spec|Invalid value: \"object\": no such key: a evaluating rule: self.a > 0"]
    );
}

#[test]
fn cel_rules_in_lists_maps_and_root() {
    let s = schema(json!({"type": "object",
        "x-kubernetes-validations": [{"rule": "self.metadata.name.startsWith('ok')", "message": "bad name"}],
        "properties": {"spec": {"type": "object", "properties": {
            "ports": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                "items": {"type": "object", "required": ["name"], "properties": {
                    "name": {"type": "string"}, "port": {"type": "integer",
                        "x-kubernetes-validations": [{"rule": "self == oldSelf", "message": "port is immutable"}]}},
                    "x-kubernetes-validations": [{"rule": "self.port > 0", "message": "positive"}]}},
            "labels": {"type": "object", "additionalProperties": {"type": "string",
                "x-kubernetes-validations": [{"rule": "self.size() < 5", "message": "short"}]}}}}}}));
    let old = json!({"metadata": {"name": "ok1"}, "spec": {"ports": [{"name": "a", "port": 1}, {"name": "b", "port": 2}]}});
    let new = json!({"metadata": {"name": "nope"}, "spec": {
        "ports": [{"name": "b", "port": 3}, {"name": "a", "port": 1}, {"name": "c", "port": -1}],
        "labels": {"x": "abcdef"}}});
    assert_eq!(
        lines(&s.validate_cel(&new, Some(&old))),
        vec![
            "FieldValueInvalid|<nil>|Invalid value: \"object\": bad name",
            "FieldValueInvalid|spec.ports[0].port|Invalid value: \"integer\": port is immutable",
            "FieldValueInvalid|spec.ports[2]|Invalid value: \"object\": positive",
            "FieldValueInvalid|spec.labels[x]|Invalid value: \"string\": short",
        ]
    );
}

#[test]
fn cel_ratcheting_keeps_unchanged_invalid_values() {
    let s = schema(
        json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
        "a": {"type": "string", "x-kubernetes-validations": [{"rule": "self.size() < 3", "message": "short"}]},
        "b": {"type": "string"}}}}}),
    );
    let old = json!({"spec": {"a": "long", "b": "x"}});
    assert!(s
        .validate_cel(&json!({"spec": {"a": "long", "b": "y"}}), Some(&old))
        .is_empty());
    assert_eq!(
        s.validate_cel(&json!({"spec": {"a": "longer"}}), Some(&old))
            .len(),
        1
    );
}

#[test]
fn cel_cost_limits() {
    let s = schema(
        json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
        "l": {"type": "array", "maxItems": 800, "items": {"type": "integer"}}},
        "x-kubernetes-validations": [{"rule": "self.l.all(x, self.l.all(y, x + y >= 0))"}]}}}),
    );
    let small = json!({"spec": {"l": [1, 2, 3]}});
    assert!(s.validate_cel(&small, None).is_empty());
    let big: Vec<i64> = (0..700).collect();
    let v = s.validate_cel(&json!({"spec": {"l": big}}), None);
    assert_eq!(
        lines(&v),
        vec!["FieldValueInvalid|spec|Invalid value: \"object\": 'operation cancelled: actual cost limit exceeded': no further validation rules will be run due to call cost exceeds limit for rule: self.l.all(x, self.l.all(y, x + y >= 0))"]
    );
}

#[test]
fn cel_compile_errors_at_crd_time() {
    let err = Schema::from_crd_schema(
        &json!({"type": "object", "properties": {"spec": {"type": "object",
            "properties": {"a": {"type": "integer"}},
            "x-kubernetes-validations": [{"rule": "self.nope > 1"}, {"rule": "self.a >"}]}}}),
        P,
    )
    .expect_err("rules do not compile");
    assert_eq!(err.len(), 2, "{err:#?}");
    assert_eq!(
        err[0].field,
        format!("{P}.properties[spec].x-kubernetes-validations[0].rule")
    );
    assert!(err[0].message.contains("undefined field 'nope'"));
    assert!(err[1]
        .message
        .contains("compilation failed: ERROR: <input>:1:"));
}

#[test]
fn at_path_lookups() {
    let s = schema(json!({"type": "object", "properties": {
        "spec": {"type": "object", "properties": {"replicas": {"type": "integer"}}},
        "status": {"type": "object", "properties": {
            "conditions": {"type": "array", "items": {"type": "object", "properties": {"type": {"type": "string"}}}},
            "byName": {"type": "object", "additionalProperties": {"type": "boolean"}}}}}}));
    assert_eq!(
        s.at_path(".spec.replicas"),
        Some(&json!({"type": "integer"}))
    );
    assert_eq!(
        s.at_path("spec.replicas"),
        Some(&json!({"type": "integer"}))
    );
    assert_eq!(
        s.at_path(".status.conditions[?(@.type==\"Ready\")].type"),
        Some(&json!({"type": "string"}))
    );
    assert_eq!(
        s.at_path(".status.conditions[*].type"),
        Some(&json!({"type": "string"}))
    );
    assert_eq!(
        s.at_path(".status.byName['x']"),
        Some(&json!({"type": "boolean"}))
    );
    assert_eq!(
        s.at_path(".status.byName.y"),
        Some(&json!({"type": "boolean"}))
    );
    assert_eq!(s.at_path(".spec.nope"), None);
    assert_eq!(s.at_path(""), Some(s.raw()));
}

#[test]
fn violation_display() {
    let v = Violation {
        reason: "FieldValueRequired".into(),
        field: "spec.x".into(),
        message: "Required value".into(),
    };
    assert_eq!(v.to_string(), "spec.x: Required value");
}

#[test]
fn schema_is_send_and_sync() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Schema>();
    assert_send_sync::<Violation>();
}

#[test]
fn unsupported_functions_are_rejected_at_crd_time() {
    // cel-go features the interpreter lacks fail at CRD time rather than on every object
    let err = Schema::from_crd_schema(
        &json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
            "l": {"type": "array", "maxItems": 10, "items": {"type": "object", "properties": {"n": {"type": "string"}}}}},
            "x-kubernetes-validations": [
                {"rule": "self.l.all(i, e, i >= 0 && e.n != 'x')"},
                {"rule": "self.?l.optMap(v, size(v)).orValue(0) < 5"},
                {"rule": "self.l.exists(e, e.n.lowerAscii() == 'a')"}
            ]}}}),
        P,
    )
    .expect_err("unsupported");
    assert_eq!(err.len(), 2, "{err:#?}");
    assert!(err[0].message.contains("undeclared reference to 'all'"));
    assert!(err[1].message.contains("undeclared reference to 'optMap'"));
}

#[test]
fn embedded_defaults_are_checked() {
    let err = Schema::from_crd_schema(
        &json!({"type": "object", "properties": {"tpl": {"type": "object",
            "x-kubernetes-embedded-resource": true, "x-kubernetes-preserve-unknown-fields": true,
            "default": {"apiVersion": 1, "kind": "Pod"}}}}),
        P,
    )
    .expect_err("bad default");
    assert_eq!(
        lines(&err),
        vec![format!("FieldValueInvalid|{P}.properties[tpl].default.apiVersion|Invalid value: 1: must be a string")]
    );
    let err = Schema::from_crd_schema(
        &json!({"type": "object", "properties": {"tpl": {"type": "object",
            "x-kubernetes-embedded-resource": true, "x-kubernetes-preserve-unknown-fields": true,
            "default": {"kind": "Pod"}}}}),
        P,
    )
    .expect_err("bad default");
    assert_eq!(
        lines(&err),
        vec![format!(
            "FieldValueRequired|{P}.properties[tpl].default.apiVersion|Required value"
        )]
    );
    schema(
        json!({"type": "object", "properties": {"tpl": {"type": "object",
        "x-kubernetes-embedded-resource": true, "x-kubernetes-preserve-unknown-fields": true,
        "default": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "x"}}}}}),
    );
}

#[test]
fn deep_documents_are_handled() {
    let s = schema(json!({"type": "object",
        "x-kubernetes-validations": [{"rule": "has(self.spec)"}],
        "properties": {"spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}));
    let mut deep = json!("leaf");
    for _ in 0..120 {
        deep = json!({"a": [deep]});
    }
    let mut obj = json!({"spec": deep});
    assert!(s.prune(&mut obj).is_empty());
    s.apply_defaults(&mut obj);
    assert!(s.validate(&obj).is_empty());
    assert!(s.validate_cel(&obj, Some(&obj)).is_empty());
}

/// `split` returns at most as many items as its string has characters: a comprehension over it
/// is sized by the string's `maxLength` (kube's library cost estimate), so a bounded DNS-name
/// rule fits the budget, and over a string without one it does not.
#[test]
fn split_is_sized_by_the_strings_max_length() {
    let rule = |max: Option<i64>| {
        let mut host = json!({"type": "string"});
        if let Some(m) = max {
            host["maxLength"] = json!(m);
        }
        json!({"type": "object", "properties": {"spec": {"type": "object",
            "properties": {"host": host},
            "x-kubernetes-validations": [
                {"rule": "self.host.split('.').all(x, x.size() <= 63)"}]}}})
    };
    Schema::from_crd_schema(&rule(Some(253)), P).expect("a bounded string's split fits");
    let err = Schema::from_crd_schema(&rule(None), P).expect_err("an unbounded one does not");
    assert!(err[0].message.contains("exceeds budget"), "{err:#?}");
}
