//! kube's `field.ErrorList` constructors and the format checks of
//! `k8s.io/apimachinery/pkg/util/validation`, shared by the per-kind validators.
//!
//! Each constructor renders its message as kube's `field.Error.ErrorBody` does: `Required
//! value`, `Invalid value: "x": detail`, `Unsupported value: "x": supported values: "a", "b"`,
//! `Forbidden: detail`, `Duplicate value: "x"`, `Too long: ...`, `Too many: ...`.
//!
//! **Bad values** are rendered as apimachinery 0.34 renders them (kube 1.34; "Nicer value
//! rendering in API errors"): a value of Go type `string` with `%q`; `int64`, `int32`,
//! `float64`, `float32` and `bool` with `%v`; anything else (`int`, named types such as
//! `core.Protocol`, pointers, slices, maps, structs, `nil`) with `json.Marshal`: `["a","b"]`,
//! `{"k":"v"}` (map keys sorted), `null` for a nil pointer or slice, an internal struct as the
//! JSON of its Go field names in declaration order (internal types have no JSON tags),
//! `resource.Quantity`, `metav1.Time` and `intstr.IntOrString` through their `MarshalJSON`
//! (`"500m"`, `"2026-01-01T00:00:00Z"`, `80` or `"http"`). Kube 1.33 and earlier printed the
//! composite values with `%#v` (`[]string{"a"}`); 1.34 does not.
//!
//! A value is passed to these helpers as JSON. [`go_value`] renders one of the plain Go kinds
//! (a string quoted with `%q`) and prints `null`, arrays and objects as `json.Marshal` does, an
//! object's keys in the order the value has them: a struct built field by field in Go's
//! declaration order (with its Go field names, [`go_struct`]). [`json_value`] is `json.Marshal`
//! of a value kube holds as a map, a slice or a named string type (map keys sorted, a string
//! JSON-escaped: `<`, `>`, `&` as `\u003c`...). [`invalid_shown`] takes a value already rendered.

use serde_json::Value;

use crate::model::status::Cause;

/// How kube prints a bad value of a plain Go kind: a `string` quoted as Go's `%q`, numbers and
/// booleans bare (`%v`); `nil`, slices and structs as `json.Marshal` prints them (an object's
/// keys in the value's order: see the module documentation).
pub fn go_value(v: &Value) -> String {
    match v {
        Value::String(s) => quoted(s),
        Value::Number(n) => match (n.as_i64(), n.as_u64()) {
            (Some(i), _) => i.to_string(),
            (None, Some(u)) => u.to_string(),
            _ => crate::schema::go_format_float(n.as_f64().unwrap_or(f64::NAN)),
        },
        Value::Bool(b) => b.to_string(),
        Value::Null | Value::Array(_) | Value::Object(_) => crate::schema::go_json_in_order(v),
    }
}

/// Go's `json.Marshal` of a value (map keys sorted, `<`, `>`, `&`, U+2028 and U+2029 escaped,
/// Go's float format): how kube prints a bad value of any type but the plain Go kinds.
pub fn json_value(v: &Value) -> String {
    crate::schema::go_json(v)
}

/// [`json_value`] of an optional value: `null` when unset (a nil pointer, slice or map).
pub fn json_opt(v: Option<&Value>) -> String {
    v.map_or_else(|| "null".to_owned(), json_value)
}

/// Go's `json.Marshal` of a struct (kube's internal types have no JSON tags: the keys are the Go
/// field names, every field present, in declaration order); each value already rendered.
pub fn struct_json(fields: &[(&str, String)]) -> String {
    let parts: Vec<String> = fields
        .iter()
        .map(|(k, v)| format!("{}:{v}", json_value(&Value::String((*k).to_owned()))))
        .collect();
    format!("{{{}}}", parts.join(","))
}

/// A field of a Go struct in [`go_struct`]: its Go name, its JSON name, its kind.
pub type GoField<'a> = (&'a str, &'a str, Go<'a>);

/// The kind of a field of a Go struct (see [`go_struct`]), which says what `json.Marshal`
/// prints for it and what it is when unset.
#[derive(Clone, Copy, Debug)]
pub enum Go<'a> {
    /// A string (or a named string type, a `resource.Quantity`): `""` when unset.
    Str,
    /// An integer: `0` when unset.
    Int,
    /// A `bool`: `false` when unset.
    #[cfg_attr(not(test), allow(dead_code))]
    Bool,
    /// A pointer to a scalar, a slice or a map of scalars, an `intstr.IntOrString` pointer, a
    /// `metav1.Time`: its JSON (map keys sorted), `null` when unset.
    Nil,
    /// A struct held by value: its fields, each at its zero value when unset.
    Struct(&'a [GoField<'a>]),
    /// A pointer to a struct: `null` when unset.
    Ptr(&'a [GoField<'a>]),
    /// A slice of structs: `null` when unset.
    List(&'a [GoField<'a>]),
}

/// kube's internal struct for the object `v` holds (its JSON in the API's names), as the value
/// [`go_value`] prints as `json.Marshal` does: the Go field names in declaration order, every
/// field present (internal types have no JSON tags, so no `omitempty`).
pub fn go_struct(v: Option<&Value>, fields: &[GoField<'_>]) -> Value {
    let mut m = serde_json::Map::new();
    for (go, name, kind) in fields {
        let x = v.and_then(|v| v.get(*name)).filter(|x| !x.is_null());
        m.insert((*go).to_owned(), go_field(x, *kind));
    }
    Value::Object(m)
}

fn go_field(x: Option<&Value>, kind: Go<'_>) -> Value {
    match (kind, x) {
        (Go::Str, None) => Value::String(String::new()),
        (Go::Int, None) => Value::from(0),
        (Go::Bool, None) => Value::Bool(false),
        (Go::Nil | Go::Ptr(_) | Go::List(_), None) => Value::Null,
        (Go::Str | Go::Int | Go::Bool | Go::Nil, Some(x)) => sorted(x),
        (Go::Struct(f), x) => go_struct(x, f),
        (Go::Ptr(f), Some(x)) => go_struct(Some(x), f),
        (Go::List(f), Some(x)) => Value::Array(
            x.as_array()
                .map(|a| a.iter().map(|e| go_struct(Some(e), f)).collect())
                .unwrap_or_default(),
        ),
    }
}

/// `v` with every object's keys sorted (a Go map's, as `json.Marshal` writes them).
fn sorted(v: &Value) -> Value {
    match v {
        Value::Object(m) => {
            let mut e: Vec<(&String, &Value)> = m.iter().collect();
            e.sort_by(|a, b| a.0.cmp(b.0));
            Value::Object(e.into_iter().map(|(k, x)| (k.clone(), sorted(x))).collect())
        }
        Value::Array(a) => Value::Array(a.iter().map(sorted).collect()),
        other => other.clone(),
    }
}

/// Go's `%q` of a string.
pub fn quoted(s: &str) -> String {
    crate::auth::rbac::go_quote(s)
}

/// `field.Required`: `Required value` or `Required value: detail`.
pub fn required(path: &str, detail: &str) -> Cause {
    let msg = if detail.is_empty() {
        "Required value".to_owned()
    } else {
        format!("Required value: {detail}")
    };
    Cause::new("FieldValueRequired", path, msg)
}

/// `field.Invalid`: `Invalid value: VALUE: detail`.
pub fn invalid(path: &str, value: &Value, detail: &str) -> Cause {
    Cause::new(
        "FieldValueInvalid",
        path,
        format!("Invalid value: {}: {detail}", go_value(value)),
    )
}

/// `field.Invalid` of a value kube prints through `json.Marshal` (a pointer, a slice, a named
/// string type...): `Invalid value: ["a"]: detail`, `Invalid value: null: detail`.
pub fn invalid_json(path: &str, value: Option<&Value>, detail: &str) -> Cause {
    invalid_shown(path, &json_opt(value), detail)
}

/// `field.Invalid` with the value already rendered as kube renders it.
pub fn invalid_shown(path: &str, shown: &str, detail: &str) -> Cause {
    Cause::new(
        "FieldValueInvalid",
        path,
        format!("Invalid value: {shown}: {detail}"),
    )
}

/// `field.Invalid` of a string value.
pub fn invalid_str(path: &str, value: &str, detail: &str) -> Cause {
    Cause::new(
        "FieldValueInvalid",
        path,
        format!("Invalid value: {}: {detail}", quoted(value)),
    )
}

/// `field.NotSupported`: `Unsupported value: VALUE: supported values: "a", "b"`.
pub fn not_supported(path: &str, value: &Value, supported: &[&str]) -> Cause {
    not_supported_shown(path, &go_value(value), supported)
}

/// `field.NotSupported` with the value already rendered as kube renders it.
pub fn not_supported_shown(path: &str, shown: &str, supported: &[&str]) -> Cause {
    let list = supported
        .iter()
        .map(|s| quoted(s))
        .collect::<Vec<_>>()
        .join(", ");
    let msg = if supported.is_empty() {
        format!("Unsupported value: {shown}")
    } else {
        format!("Unsupported value: {shown}: supported values: {list}")
    };
    Cause::new("FieldValueNotSupported", path, msg)
}

/// `field.Forbidden`: `Forbidden: detail`.
pub fn forbidden(path: &str, detail: &str) -> Cause {
    Cause::new("FieldValueForbidden", path, format!("Forbidden: {detail}"))
}

/// `field.Duplicate`: `Duplicate value: VALUE`.
pub fn duplicate(path: &str, value: &Value) -> Cause {
    Cause::new(
        "FieldValueDuplicate",
        path,
        format!("Duplicate value: {}", go_value(value)),
    )
}

/// `field.TooLong`: `Too long: may not be more than N bytes` (`1 byte`).
pub fn too_long(path: &str, max: usize) -> Cause {
    let unit = if max == 1 { "byte" } else { "bytes" };
    Cause::new(
        "FieldValueTooLong",
        path,
        format!("Too long: may not be more than {max} {unit}"),
    )
}

/// `field.TooMany`: `Too many: N: must have at most M items` (`1 item`).
pub fn too_many(path: &str, actual: usize, max: usize) -> Cause {
    let unit = if max == 1 { "item" } else { "items" };
    Cause::new(
        "FieldValueTooMany",
        path,
        format!("Too many: {actual}: must have at most {max} {unit}"),
    )
}

/// kube's `ValidateImmutableField`: `Invalid value: NEW: field is immutable` when they differ
/// (a missing field and `null` are the same).
pub fn immutable(new: Option<&Value>, old: Option<&Value>, path: &str, out: &mut Vec<Cause>) {
    let norm = |v: Option<&Value>| v.filter(|v| !v.is_null()).cloned();
    let (n, o) = (norm(new), norm(old));
    if n != o {
        out.push(invalid(
            path,
            n.as_ref().unwrap_or(&Value::Null),
            "field is immutable",
        ));
    }
}

/// `path.child` as kube's `field.Path.Child` prints it (`spec.rules[0].host`).
pub fn child(path: &str, name: &str) -> String {
    if path.is_empty() {
        name.to_owned()
    } else {
        format!("{path}.{name}")
    }
}

/// `path[i]`.
pub fn index(path: &str, i: usize) -> String {
    format!("{path}[{i}]")
}

/// `path[key]`, as `field.Path.Key` prints a map key.
pub fn key(path: &str, k: &str) -> String {
    format!("{path}[{k}]")
}

/// The array at `v[name]`, empty when absent or not an array.
pub fn items<'a>(v: &'a Value, name: &str) -> &'a [Value] {
    v.get(name)
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

/// The string at `v[name]`, `""` when absent.
pub fn str_of<'a>(v: &'a Value, name: &str) -> &'a str {
    v.get(name).and_then(Value::as_str).unwrap_or("")
}

// ---- formats (k8s.io/apimachinery/pkg/util/validation) ----

pub const DNS1123_LABEL_MAX: usize = 63;
pub const DNS1123_SUBDOMAIN_MAX: usize = 253;

/// `IsDNS1123Label`: the messages, empty when valid.
pub fn dns1123_label(s: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if s.len() > DNS1123_LABEL_MAX {
        errs.push(format!(
            "must be no more than {DNS1123_LABEL_MAX} characters"
        ));
    }
    if !is_dns1123_label(s) {
        // A valid subdomain (the length already checked) that is no label has dots.
        if !s.is_empty() && s.split('.').all(is_dns1123_label) {
            errs.push("must not contain dots".to_owned());
        } else {
            errs.push(crate::model::meta::DNS1123_LABEL_MSG.to_owned());
        }
    }
    errs
}

/// `IsDNS1123Subdomain`: the messages, empty when valid.
pub fn dns1123_subdomain(s: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if s.len() > DNS1123_SUBDOMAIN_MAX {
        errs.push(format!(
            "must be no more than {DNS1123_SUBDOMAIN_MAX} characters"
        ));
    }
    if !s.split('.').all(is_dns1123_label) {
        errs.push(crate::model::meta::DNS1123_SUBDOMAIN_MSG.to_owned());
    }
    errs
}

/// The regex `[a-z0-9]([-a-z0-9]*[a-z0-9])?` (no length check).
pub fn is_dns1123_label(s: &str) -> bool {
    let alnum = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit();
    s.chars().next().is_some_and(alnum)
        && s.chars().last().is_some_and(alnum)
        && s.chars().all(|c| alnum(c) || c == '-')
}

/// `IsDNS1035Label`.
pub fn dns1035_label(s: &str) -> Vec<String> {
    crate::schema::objectmeta::dns1035_label(s)
}

/// `IsQualifiedName` (label keys, finalizer names, annotation keys...).
pub fn qualified_name(s: &str) -> Vec<String> {
    crate::schema::objectmeta::qualified_name(s)
}

/// `IsValidLabelValue`.
pub fn label_value(s: &str) -> Vec<String> {
    crate::schema::objectmeta::label_value(s)
}

/// `IsWildcardDNS1123Subdomain`: `*.` followed by a DNS-1123 subdomain.
pub fn wildcard_dns1123_subdomain(s: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if s.len() > DNS1123_SUBDOMAIN_MAX {
        errs.push(format!(
            "must be no more than {DNS1123_SUBDOMAIN_MAX} characters"
        ));
    }
    let ok = s
        .strip_prefix("*.")
        .is_some_and(|rest| rest.split('.').all(is_dns1123_label));
    if !ok {
        errs.push("a wildcard DNS-1123 subdomain must start with '*.', followed by a valid DNS subdomain, which must consist of lower case alphanumeric characters, '-' or '.' and end with an alphanumeric character (e.g. '*.example.com', regex used for validation is '\\*\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')".to_owned());
    }
    errs
}

/// `IsValidPortNum`: 1..=65535.
pub fn port_num(port: i64) -> Vec<String> {
    if (1..=65535).contains(&port) {
        Vec::new()
    } else {
        vec!["must be between 1 and 65535, inclusive".to_owned()]
    }
}

/// `IsValidPortName` (an IANA_SVC_NAME), with kube's messages in kube's order.
pub fn port_name(s: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if s.len() > 15 {
        errs.push("must be no more than 15 characters".to_owned());
    }
    if s.is_empty()
        || !s
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
    {
        errs.push(
            "must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)".to_owned(),
        );
    }
    if !s.chars().any(|c| c.is_ascii_lowercase()) {
        errs.push("must contain at least one letter (a-z)".to_owned());
    }
    if s.contains("--") {
        errs.push("must not contain consecutive hyphens".to_owned());
    }
    if s.starts_with('-') || s.ends_with('-') {
        errs.push("must not begin or end with a hyphen".to_owned());
    }
    errs
}

/// `v` with every field at its Go zero value dropped (null, false, 0, "", []; and `{}` when
/// `empty_objects` is set: a map's nil and empty are equal to kube, a pointer struct's are not),
/// so that comparing two results is kube's `apiequality.Semantic.DeepEqual` of typed objects.
pub fn zero_dropped(v: &Value, empty_objects: bool) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .filter_map(|(k, x)| {
                    let n = zero_dropped(x, empty_objects);
                    (!is_go_zero(&n, empty_objects)).then(|| (k.clone(), n))
                })
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(|x| zero_dropped(x, empty_objects)).collect()),
        other => other.clone(),
    }
}

/// Whether `v` is a Go zero value (see [`zero_dropped`]).
pub fn is_go_zero(v: &Value, empty_objects: bool) -> bool {
    match v {
        Value::Null => true,
        Value::Bool(b) => !b,
        Value::String(s) => s.is_empty(),
        Value::Number(n) => n.as_f64() == Some(0.0),
        Value::Array(a) => a.is_empty(),
        Value::Object(m) => empty_objects && m.is_empty(),
    }
}

/// kube's `ValidateLabels`: each key a qualified name, each value a label value, both
/// reported at `path` itself.
pub fn labels(map: Option<&Value>, path: &str, out: &mut Vec<Cause>) {
    let Some(map) = map.and_then(Value::as_object) else {
        return;
    };
    for (k, v) in map {
        for msg in qualified_name(k) {
            out.push(invalid_str(path, k, &msg));
        }
        let v = v.as_str().unwrap_or("");
        for msg in label_value(v) {
            out.push(invalid_str(path, v, &msg));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn messages_render_as_kube_does() {
        assert_eq!(required("spec.x", "").to_string(), "spec.x: Required value");
        assert_eq!(
            invalid("spec.n", &json!(0), "must be greater than 0").to_string(),
            "spec.n: Invalid value: 0: must be greater than 0"
        );
        assert_eq!(
            not_supported("spec.t", &json!("X"), &["A", "B"]).to_string(),
            "spec.t: Unsupported value: \"X\": supported values: \"A\", \"B\""
        );
        assert_eq!(
            duplicate("spec.p[1].name", &json!("a")).to_string(),
            "spec.p[1].name: Duplicate value: \"a\""
        );
        let mut out = Vec::new();
        immutable(Some(&json!("b")), Some(&json!("a")), "spec.s", &mut out);
        immutable(None, Some(&Value::Null), "spec.t", &mut out);
        assert_eq!(out.len(), 1);
        assert_eq!(
            out[0].to_string(),
            "spec.s: Invalid value: \"b\": field is immutable"
        );
    }

    #[test]
    fn values_render_as_kube_1_34_does() {
        // Plain Go kinds: a string with `%q`, numbers and booleans bare.
        assert_eq!(go_value(&json!("a\u{1}<b")), "\"a\\x01<b\"");
        assert_eq!(go_value(&json!(-42)), "-42");
        assert_eq!(go_value(&json!(true)), "true");
        assert_eq!(go_value(&json!(1_000_000.5)), "1.0000005e+06");
        // Slices, maps and nil as `json.Marshal` writes them, not `%#v`.
        assert_eq!(go_value(&json!(["10.96.0.50"])), "[\"10.96.0.50\"]");
        assert_eq!(go_value(&Value::Null), "null");
        assert_eq!(
            json_value(&json!({"b": "2", "a": "x<y"})),
            "{\"a\":\"x\\u003cy\",\"b\":\"2\"}"
        );
        assert_eq!(json_opt(None), "null");
        assert_eq!(
            invalid(
                "spec.clusterIPs[0]",
                &json!(["10.96.0.50"]),
                "may not change once set"
            )
            .to_string(),
            "spec.clusterIPs[0]: Invalid value: [\"10.96.0.50\"]: may not change once set"
        );
        assert_eq!(
            invalid_json("spec.ipFamilyPolicy", None, "must be set").to_string(),
            "spec.ipFamilyPolicy: Invalid value: null: must be set"
        );
        // An internal struct: Go field names in declaration order, zero values for unset
        // fields, nested pointers `null`, maps sorted.
        let taint = go_struct(
            Some(&json!({"effect": "NoSchedule", "key": "k"})),
            &[
                ("Key", "key", Go::Str),
                ("Value", "value", Go::Str),
                ("Effect", "effect", Go::Str),
                ("TimeAdded", "timeAdded", Go::Nil),
            ],
        );
        assert_eq!(
            go_value(&taint),
            "{\"Key\":\"k\",\"Value\":\"\",\"Effect\":\"NoSchedule\",\"TimeAdded\":null}"
        );
        const INNER: &[GoField<'static>] = &[("N", "n", Go::Int), ("On", "on", Go::Bool)];
        let nested = go_struct(
            Some(&json!({"list": [{"n": 2}], "labels": {"z": "1", "a": "2"}})),
            &[
                ("Ptr", "ptr", Go::Ptr(INNER)),
                ("Val", "val", Go::Struct(INNER)),
                ("List", "list", Go::List(INNER)),
                ("Labels", "labels", Go::Nil),
            ],
        );
        assert_eq!(
            go_value(&nested),
            "{\"Ptr\":null,\"Val\":{\"N\":0,\"On\":false},\"List\":[{\"N\":2,\"On\":false}],\"Labels\":{\"a\":\"2\",\"z\":\"1\"}}"
        );
        assert_eq!(
            struct_json(&[("Name", json_value(&json!("")))]),
            "{\"Name\":\"\"}"
        );
        // Singular units since 1.34.
        assert_eq!(
            too_long("f", 1).to_string(),
            "f: Too long: may not be more than 1 byte"
        );
        assert_eq!(
            too_many("f", 2, 1).to_string(),
            "f: Too many: 2: must have at most 1 item"
        );
        assert_eq!(
            not_supported_shown("f", "{\"Type\":\"X\"}", &["A"]).to_string(),
            "f: Unsupported value: {\"Type\":\"X\"}: supported values: \"A\""
        );
    }

    #[test]
    fn formats() {
        assert!(port_name("http").is_empty());
        assert_eq!(port_name("HTTP").len(), 2);
        assert!(port_name("a--b").iter().any(|m| m.contains("consecutive")));
        assert!(port_name("1234")
            .iter()
            .any(|m| m.contains("at least one letter")));
        assert!(port_name("very-long-port-name")
            .iter()
            .any(|m| m.contains("15")));
        assert!(port_num(0).len() == 1 && port_num(65535).is_empty());
        assert!(wildcard_dns1123_subdomain("*.example.com").is_empty());
        assert!(!wildcard_dns1123_subdomain("example.com").is_empty());
        assert!(dns1123_subdomain("a.b-c").is_empty() && !dns1123_subdomain("A").is_empty());
        assert!(dns1123_label("a-b").is_empty() && !dns1123_label("a.b").is_empty());
    }
}
