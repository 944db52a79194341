//! kube's `field.ErrorList` constructors and the format checks of
//! `k8s.io/apimachinery/pkg/util/validation`, shared by the per-kind validators.
//!
//! Each constructor renders its message as kube's `field.Error.ErrorBody` does: `Required
//! value`, `Invalid value: "x": detail`, `Unsupported value: "x": supported values: "a", "b"`,
//! `Forbidden: detail`, `Duplicate value: "x"`, `Too long: ...`, `Too many: ...`.

use serde_json::Value;

use crate::model::status::Cause;

/// How kube prints a bad value: strings quoted as Go's `%q`, numbers and booleans bare, other
/// values as JSON.
pub fn go_value(v: &Value) -> String {
    v.to_string()
}

/// Go's `%q` of a string.
pub fn quoted(s: &str) -> String {
    Value::String(s.to_owned()).to_string()
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
    let list = supported
        .iter()
        .map(|s| quoted(s))
        .collect::<Vec<_>>()
        .join(", ");
    let msg = if supported.is_empty() {
        format!("Unsupported value: {}", go_value(value))
    } else {
        format!(
            "Unsupported value: {}: supported values: {list}",
            go_value(value)
        )
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

/// `field.TooLong`: `Too long: may not be more than N bytes`.
pub fn too_long(path: &str, max: usize) -> Cause {
    Cause::new(
        "FieldValueTooLong",
        path,
        format!("Too long: may not be more than {max} bytes"),
    )
}

/// `field.TooMany`: `Too many: N: must have at most M items`.
pub fn too_many(path: &str, actual: usize, max: usize) -> Cause {
    Cause::new(
        "FieldValueTooMany",
        path,
        format!("Too many: {actual}: must have at most {max} items"),
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
