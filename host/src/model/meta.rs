//! Helpers over `metadata` of JSON objects, and kube's name and label validation.

use serde_json::{Map, Value};

use super::registry::NameRule;
use super::Cause;

/// `metadata` of an object, if it is a JSON object.
pub fn metadata(obj: &Value) -> Option<&Map<String, Value>> {
    obj.get("metadata").and_then(Value::as_object)
}

/// `metadata`, created if missing (the object itself must be a JSON object).
pub fn metadata_mut(obj: &mut Value) -> Option<&mut Map<String, Value>> {
    let map = obj.as_object_mut()?;
    let m = map
        .entry("metadata")
        .or_insert_with(|| Value::Object(Map::new()));
    if !m.is_object() {
        *m = Value::Object(Map::new());
    }
    m.as_object_mut()
}

/// What the every-object paths read of an object's metadata: a whole object ([`Value`]) and a
/// stored version's head (`store::Head`) both answer it, so a helper written once serves both.
pub trait Meta {
    /// A string field of `metadata` (`None` if absent or not a string). A head keeps only
    /// `name`, `namespace`, `uid` and `deletionTimestamp`.
    fn meta_str(&self, field: &str) -> Option<&str>;
    /// A label's value (`None` if absent or not a string).
    fn label(&self, key: &str) -> Option<&str>;
    /// `metadata.finalizers` (its strings).
    fn finalizer_names(&self) -> Vec<&str>;
    /// `metadata.ownerReferences` (its objects).
    fn owner_references(&self) -> Vec<OwnerRefView<'_>>;
}

/// One entry of `metadata.ownerReferences` (absent strings read as "").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OwnerRefView<'a> {
    pub api_version: &'a str,
    pub kind: &'a str,
    pub name: &'a str,
    pub uid: &'a str,
    pub controller: bool,
    pub block_owner_deletion: bool,
}

impl Meta for Value {
    fn meta_str(&self, field: &str) -> Option<&str> {
        metadata(self)?.get(field)?.as_str()
    }

    fn label(&self, key: &str) -> Option<&str> {
        labels(self)?.get(key)?.as_str()
    }

    fn finalizer_names(&self) -> Vec<&str> {
        metadata(self)
            .and_then(|m| m.get("finalizers"))
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default()
    }

    fn owner_references(&self) -> Vec<OwnerRefView<'_>> {
        metadata(self)
            .and_then(|m| m.get("ownerReferences"))
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_object)
                    .map(|r| {
                        let s = |k: &str| r.get(k).and_then(Value::as_str).unwrap_or("");
                        let b = |k: &str| r.get(k) == Some(&Value::Bool(true));
                        OwnerRefView {
                            api_version: s("apiVersion"),
                            kind: s("kind"),
                            name: s("name"),
                            uid: s("uid"),
                            controller: b("controller"),
                            block_owner_deletion: b("blockOwnerDeletion"),
                        }
                    })
                    .collect()
            })
            .unwrap_or_default()
    }
}

pub fn meta_str<'a>(obj: &'a impl Meta, field: &str) -> Option<&'a str> {
    obj.meta_str(field)
}

pub fn name(obj: &impl Meta) -> &str {
    obj.meta_str("name").unwrap_or("")
}

pub fn namespace(obj: &impl Meta) -> &str {
    obj.meta_str("namespace").unwrap_or("")
}

pub fn finalizers(obj: &impl Meta) -> Vec<String> {
    obj.finalizer_names()
        .into_iter()
        .map(str::to_owned)
        .collect()
}

pub fn labels(obj: &Value) -> Option<&Map<String, Value>> {
    metadata(obj)?.get("labels")?.as_object()
}

/// RFC 3339 with seconds, UTC, as kube writes `metav1.Time`.
pub fn now_rfc3339() -> String {
    // Formatted once per second per thread: every write stamps times (creation, managed
    // fields), and chrono's formatter costs a few microseconds each time.
    thread_local! {
        static LAST: std::cell::RefCell<(i64, String)> = const { std::cell::RefCell::new((i64::MIN, String::new())) };
    }
    let now = chrono::Utc::now();
    let secs = now.timestamp();
    LAST.with(|last| {
        let mut last = last.borrow_mut();
        if last.0 != secs {
            *last = (secs, now.format("%Y-%m-%dT%H:%M:%SZ").to_string());
        }
        last.1.clone()
    })
}

#[cfg(test)]
thread_local! {
    /// Suffixes [`random_suffix`] hands out before random ones: a test's way to make a
    /// generated name collide.
    pub static NEXT_SUFFIXES: std::cell::RefCell<std::collections::VecDeque<String>> =
        Default::default();
}

/// Random suffix for generateName, from kube's alphabet (no vowels, no confusable digits).
pub fn random_suffix() -> String {
    use rand::Rng;
    #[cfg(test)]
    if let Some(s) = NEXT_SUFFIXES.with(|q| q.borrow_mut().pop_front()) {
        return s;
    }
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    let mut rng = rand::rng();
    (0..5)
        .map(|_| ALPHABET[rng.random_range(0..ALPHABET.len())] as char)
        .collect()
}

pub const DNS1123_SUBDOMAIN_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
pub const DNS1123_LABEL_MSG: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";

pub fn is_dns_label(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.len() <= 63
        && b.iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
        && b[0] != b'-'
        && b[b.len() - 1] != b'-'
}

/// kube's `IsDNS1123Subdomain`: at most 253 characters of dot-separated RFC 1123 labels (the
/// regex puts no limit on one label's length).
pub fn is_dns_subdomain(s: &str) -> bool {
    s.len() <= 253
        && s.split('.').all(|l| {
            let b = l.as_bytes();
            !b.is_empty()
                && b.iter()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
                && b[0] != b'-'
                && b[b.len() - 1] != b'-'
        })
}

/// Validate `metadata.name`; returns the 422 causes (empty when valid).
pub fn validate_name(name: &str, rule: NameRule) -> Vec<Cause> {
    if name.is_empty() {
        return vec![Cause::new(
            "FieldValueRequired",
            "metadata.name",
            "Required value: name or generateName is required",
        )];
    }
    check_name("metadata.name", name, name, rule)
}

/// Validate a non-empty `metadata.generateName` as kube's name functions do with `prefix`
/// set: a trailing `-` is allowed where names are DNS names, a path segment may be `.`, and
/// an IPAddress cannot generate names at all (its names must be addresses).
pub fn validate_generate_name(prefix: &str, rule: NameRule) -> Vec<Cause> {
    if prefix.is_empty() {
        return Vec::new();
    }
    let masked = match (rule, prefix.strip_suffix('-')) {
        (NameRule::DnsLabel | NameRule::DnsSubdomain, Some(head)) => format!("{head}a"),
        _ => prefix.to_owned(),
    };
    let rule = match rule {
        NameRule::PathSegment if prefix == "." || prefix == ".." => return Vec::new(),
        r => r,
    };
    check_name("metadata.generateName", prefix, &masked, rule)
}

/// The causes of `shown` (checked as `name`) breaking `rule`, at `field`.
fn check_name(field: &str, shown: &str, name: &str, rule: NameRule) -> Vec<Cause> {
    let dns_label = rule == NameRule::DnsLabel;
    if rule == NameRule::Ip {
        return crate::builtin::validation::goip::ip_strict(name)
            .into_iter()
            .map(|why| {
                Cause::new(
                    "FieldValueInvalid",
                    field,
                    format!("Invalid value: \"{shown}\": {why}"),
                )
            })
            .collect();
    }
    if rule == NameRule::PathSegment {
        let bad = if name == "." || name == ".." {
            Some(format!("may not be '{shown}'"))
        } else if name.contains('/') {
            Some("may not contain '/'".to_owned())
        } else if name.contains('%') {
            Some("may not contain '%'".to_owned())
        } else {
            None
        };
        return bad
            .map(|why| {
                vec![Cause::new(
                    "FieldValueInvalid",
                    field,
                    format!("Invalid value: \"{shown}\": {why}"),
                )]
            })
            .unwrap_or_default();
    }
    let ok = if dns_label {
        is_dns_label(name)
    } else {
        is_dns_subdomain(name)
    };
    if ok {
        return Vec::new();
    }
    let why = if dns_label {
        if name.len() > 63 {
            "must be no more than 63 characters".to_owned()
        } else {
            DNS1123_LABEL_MSG.to_owned()
        }
    } else if name.len() > 253 {
        "must be no more than 253 characters".to_owned()
    } else {
        DNS1123_SUBDOMAIN_MSG.to_owned()
    };
    vec![Cause::new(
        "FieldValueInvalid",
        field,
        format!("Invalid value: \"{shown}\": {why}"),
    )]
}

fn is_qualified_name_part(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.len() <= 63
        && b[0].is_ascii_alphanumeric()
        && b[b.len() - 1].is_ascii_alphanumeric()
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
}

/// A label or annotation key: `[prefix/]name`.
pub(crate) fn is_qualified_name(key: &str) -> bool {
    match key.split_once('/') {
        Some((prefix, name)) => is_dns_subdomain(prefix) && is_qualified_name_part(name),
        None => is_qualified_name_part(key),
    }
}

/// Validate the metadata fields every object shares (labels, annotations, finalizers types).
pub fn validate_common(obj: &Value) -> Vec<Cause> {
    let mut causes = Vec::new();
    let Some(meta) = metadata(obj) else {
        return causes;
    };
    if let Some(labels) = meta.get("labels") {
        match labels.as_object() {
            Some(map) => {
                // kube's `ValidateLabels`: `IsQualifiedName` and `IsValidLabelValue`, each
                // failure in its own words (prefix, length, characters).
                let quote = crate::auth::rbac::go_quote;
                for (k, v) in map {
                    for e in crate::schema::objectmeta::qualified_name(k) {
                        causes.push(Cause::new(
                            "FieldValueInvalid",
                            "metadata.labels",
                            format!("Invalid value: {}: {e}", quote(k)),
                        ));
                    }
                    match v.as_str() {
                        Some(s) => {
                            for e in crate::schema::objectmeta::label_value(s) {
                                causes.push(Cause::new(
                                    "FieldValueInvalid",
                                    "metadata.labels",
                                    format!("Invalid value: {}: {e}", quote(s)),
                                ));
                            }
                        }
                        None if v.is_null() => {}
                        None => causes.push(Cause::new(
                            "FieldValueTypeInvalid",
                            &format!("metadata.labels.{k}"),
                            "Invalid value: label values must be strings",
                        )),
                    }
                }
            }
            None if labels.is_null() => {}
            None => causes.push(Cause::new(
                "FieldValueTypeInvalid",
                "metadata.labels",
                "Invalid value: must be an object of strings",
            )),
        }
    }
    if let Some(ann) = meta.get("annotations") {
        match ann.as_object() {
            Some(map) => {
                let mut total = 0usize;
                for (k, v) in map {
                    total += k.len() + v.as_str().map(str::len).unwrap_or(0);
                    // kube's `ValidateAnnotations`: the key lowercased, as a qualified name.
                    for e in crate::schema::objectmeta::qualified_name(&k.to_lowercase()) {
                        causes.push(Cause::new(
                            "FieldValueInvalid",
                            "metadata.annotations",
                            format!("Invalid value: {}: {e}", crate::auth::rbac::go_quote(k)),
                        ));
                    }
                    if !(v.is_string() || v.is_null()) {
                        causes.push(Cause::new(
                            "FieldValueTypeInvalid",
                            &format!("metadata.annotations.{k}"),
                            "Invalid value: annotation values must be strings",
                        ));
                    }
                }
                if total > 256 * 1024 {
                    causes.push(Cause::new(
                        "FieldValueTooLong",
                        "metadata.annotations",
                        "Too long: must have at most 262144 bytes",
                    ));
                }
            }
            None if ann.is_null() => {}
            None => causes.push(Cause::new(
                "FieldValueTypeInvalid",
                "metadata.annotations",
                "Invalid value: must be an object of strings",
            )),
        }
    }
    if let Some(refs) = meta.get("ownerReferences") {
        causes.extend(validate_owner_references(refs));
    }
    if let Some(entries) = meta.get("managedFields").and_then(Value::as_array) {
        causes.extend(validate_managed_fields(entries));
    }
    if let Some(f) = meta.get("finalizers") {
        let ok = f.is_null()
            || f.as_array()
                .is_some_and(|a| a.iter().all(|v| v.as_str().is_some_and(is_qualified_name)));
        if !ok {
            causes.push(Cause::new(
                "FieldValueInvalid",
                "metadata.finalizers",
                "Invalid value: finalizers must be a list of qualified names",
            ));
        }
    }
    causes
}

/// An entry of `metadata.ownerReferences` as kube decodes it into `metav1.OwnerReference`
/// (absent or null strings read as "", absent or null booleans as unset).
struct OwnerRef<'a> {
    api_version: &'a str,
    kind: &'a str,
    name: &'a str,
    uid: &'a str,
    controller: Option<bool>,
    block_owner_deletion: Option<bool>,
}

impl<'a> OwnerRef<'a> {
    /// The entry as a typed decode reads it: `None` when it would not decode (not an object,
    /// or a field of the wrong JSON type). A null entry decodes as the zero reference.
    fn decode(v: &'a Value) -> Option<Self> {
        let m = match v {
            Value::Object(m) => m,
            Value::Null => {
                return Some(Self {
                    api_version: "",
                    kind: "",
                    name: "",
                    uid: "",
                    controller: None,
                    block_owner_deletion: None,
                })
            }
            _ => return None,
        };
        let s = |k: &str| match m.get(k) {
            None | Some(Value::Null) => Some(""),
            Some(Value::String(s)) => Some(s.as_str()),
            Some(_) => None,
        };
        let b = |k: &str| match m.get(k) {
            None | Some(Value::Null) => Some(None),
            Some(Value::Bool(b)) => Some(Some(*b)),
            Some(_) => None,
        };
        Some(Self {
            api_version: s("apiVersion")?,
            kind: s("kind")?,
            name: s("name")?,
            uid: s("uid")?,
            controller: b("controller")?,
            block_owner_deletion: b("blockOwnerDeletion")?,
        })
    }

    /// Go's `json.Marshal` of the struct: fields in declaration order, the `*bool`s omitted
    /// when unset.
    fn go_json(&self) -> String {
        use crate::builtin::validation::apps::go_str;
        let mut out = format!(
            "{{\"apiVersion\":{},\"kind\":{},\"name\":{},\"uid\":{}",
            go_str(self.api_version),
            go_str(self.kind),
            go_str(self.name),
            go_str(self.uid)
        );
        if let Some(c) = self.controller {
            out.push_str(&format!(",\"controller\":{c}"));
        }
        if let Some(b) = self.block_owner_deletion {
            out.push_str(&format!(",\"blockOwnerDeletion\":{b}"));
        }
        out.push('}');
        out
    }
}

/// kube's `ValidateManagedFields` limits on what a client may send: a manager of at most 128
/// bytes, printable, and a subresource of at most 256 (the operation and fields type are the
/// field manager's to check).
fn validate_managed_fields(entries: &[Value]) -> Vec<Cause> {
    const MAX_SUBRESOURCE: usize = 256;
    let max_manager = crate::apply::MAX_MANAGER_LENGTH;
    let mut causes = Vec::new();
    for (i, e) in entries.iter().enumerate() {
        let path = format!("metadata.managedFields[{i}]");
        let manager = e.get("manager").and_then(Value::as_str).unwrap_or("");
        if manager.len() > max_manager {
            causes.push(Cause::new(
                "FieldValueTooLong",
                &format!("{path}.manager"),
                format!("Too long: may not be more than {max_manager} bytes"),
            ));
        }
        if manager.chars().any(char::is_control) {
            causes.push(Cause::new(
                "FieldValueInvalid",
                &format!("{path}.manager"),
                format!(
                    "Invalid value: {}: must only contain printable characters",
                    crate::auth::rbac::go_quote(manager)
                ),
            ));
        }
        let sub = e.get("subresource").and_then(Value::as_str).unwrap_or("");
        if sub.len() > MAX_SUBRESOURCE {
            causes.push(Cause::new(
                "FieldValueTooLong",
                &format!("{path}.subresource"),
                format!("Too long: may not be more than {MAX_SUBRESOURCE} bytes"),
            ));
        }
    }
    causes
}

/// `schema.ParseGroupVersion`: `(group, version)`, or `None` for more than one `/`.
fn parse_group_version(gv: &str) -> Option<(&str, &str)> {
    if gv.is_empty() || gv == "/" {
        return Some(("", ""));
    }
    match gv.matches('/').count() {
        0 => Some(("", gv)),
        1 => gv.split_once('/'),
        _ => None,
    }
}

/// kube's `ValidateOwnerReferences` (apimachinery v0.34): every reference is reported at
/// `metadata.ownerReferences` itself (no index), and at most one may be the controller.
/// References that would not decode are left to decoding: then nothing is reported here.
fn validate_owner_references(refs: &Value) -> Vec<Cause> {
    const PATH: &str = "metadata.ownerReferences";
    let mut causes = Vec::new();
    let Some(items) = refs.as_array() else {
        return causes;
    };
    let Some(refs) = items
        .iter()
        .map(OwnerRef::decode)
        .collect::<Option<Vec<_>>>()
    else {
        return causes;
    };
    let quote = crate::auth::rbac::go_quote;
    let mut first_controller: Option<String> = None;
    const MAX_EXTRA_CONTROLLERS: usize = 16;
    let mut extra_controllers = 0;
    let mut all_refs: Option<String> = None;
    for r in &refs {
        // `schema.FromAPIVersionAndKind`: an unparsable apiVersion gives no group or version.
        let (group, version) = parse_group_version(r.api_version).unwrap_or(("", ""));
        if version.is_empty() {
            causes.push(Cause::new(
                "FieldValueInvalid",
                &format!("{PATH}.apiVersion"),
                format!(
                    "Invalid value: {}: version must not be empty",
                    quote(r.api_version)
                ),
            ));
        }
        for (field, value) in [("kind", r.kind), ("name", r.name), ("uid", r.uid)] {
            if value.is_empty() {
                causes.push(Cause::new(
                    "FieldValueInvalid",
                    &format!("{PATH}.{field}"),
                    "Invalid value: \"\": must not be empty",
                ));
            }
        }
        // `BannedOwners`: only the core group's v1 Event.
        if group.is_empty() && version == "v1" && r.kind == "Event" {
            causes.push(Cause::new(
                "FieldValueInvalid",
                PATH,
                format!(
                    "Invalid value: {}: {group}/{version}, Kind={} is disallowed from being an owner",
                    r.go_json(),
                    r.kind
                ),
            ));
        }
        if r.controller == Some(true) {
            let current = format!("{}/{}", r.kind, r.name);
            match &first_controller {
                // kube reports every further controller, each with the whole list: past a
                // few, a list of thousands would make a quadratic answer.
                Some(_) if extra_controllers >= MAX_EXTRA_CONTROLLERS => {}
                Some(first) => {
                    extra_controllers += 1;
                    let all = all_refs.get_or_insert_with(|| {
                        let all: Vec<String> = refs.iter().map(OwnerRef::go_json).collect();
                        all.join(",")
                    });
                    causes.push(Cause::new(
                        "FieldValueInvalid",
                        PATH,
                        format!(
                            "Invalid value: [{all}]: Only one reference can have Controller set to true. Found \"true\" in references for {first} and {current}"
                        ),
                    ));
                }
                None => first_controller = Some(current),
            }
        }
    }
    causes
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn now_is_rfc3339_seconds_utc_and_current() {
        for _ in 0..3 {
            let s = now_rfc3339();
            assert_eq!(s.len(), 20, "{s}");
            assert!(s.ends_with('Z'), "{s}");
            let t = chrono::DateTime::parse_from_rfc3339(&s).unwrap();
            let age = chrono::Utc::now().timestamp() - t.timestamp();
            assert!((0..=1).contains(&age), "{s} is {age} s old");
        }
    }

    #[test]
    fn names() {
        use NameRule::*;
        assert!(validate_name("my-cm.v1", DnsSubdomain).is_empty());
        assert!(!validate_name("Bad_Name", DnsSubdomain).is_empty());
        assert!(!validate_name("a.b", DnsLabel).is_empty());
        assert!(validate_name("abc-1", DnsLabel).is_empty());
        assert_eq!(
            validate_name("", DnsSubdomain)[0].reason,
            "FieldValueRequired"
        );
        assert!(!validate_name(&"a".repeat(254), DnsSubdomain).is_empty());
        assert!(validate_name("system:discovery", PathSegment).is_empty());
        assert!(!validate_name("a/b", PathSegment).is_empty());
        assert!(validate_name("2001:db8::1", Ip).is_empty());
        assert_eq!(
            validate_name("2001:DB8::1", Ip)[0].message,
            "Invalid value: \"2001:DB8::1\": must be in canonical form (\"2001:db8::1\")"
        );
    }

    #[test]
    fn labels_and_annotations() {
        let ok = json!({"metadata": {"labels": {"app.kubernetes.io/name": "x", "e": ""}, "annotations": {"a/b": "anything goes"}}});
        assert!(validate_common(&ok).is_empty());
        let bad = json!({"metadata": {"labels": {"-x": "y", "k": "bad value"}}});
        assert_eq!(validate_common(&bad).len(), 2);
    }

    /// `(field, message)` of the causes `validate_common` reports for these owner references.
    fn owner_causes(refs: Value) -> Vec<(String, String)> {
        validate_common(&json!({"metadata": {"ownerReferences": refs}}))
            .into_iter()
            .map(|c| {
                assert_eq!(c.reason, "FieldValueInvalid");
                (c.field, c.message)
            })
            .collect()
    }

    fn pair(field: &str, message: &str) -> (String, String) {
        (field.to_owned(), message.to_owned())
    }

    #[test]
    fn owner_reference_valid() {
        let one = json!([{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-5d4c",
            "uid": "0b6c7a34-1f2e-4c1d-9c55-6a9e1b2f3c4d", "controller": true, "blockOwnerDeletion": true}]);
        assert_eq!(owner_causes(one), Vec::<(String, String)>::new());
        // One controller among several references is fine.
        let two = json!([
            {"apiVersion": "v1", "kind": "ConfigMap", "name": "a", "uid": "1", "controller": false},
            {"apiVersion": "apps/v1", "kind": "Deployment", "name": "b", "uid": "2", "controller": true},
        ]);
        assert_eq!(owner_causes(two), Vec::<(String, String)>::new());
        assert_eq!(owner_causes(json!([])), Vec::<(String, String)>::new());
        assert_eq!(owner_causes(Value::Null), Vec::<(String, String)>::new());
    }

    #[test]
    fn owner_reference_two_controllers() {
        let refs = json!([
            {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "a", "uid": "1", "controller": true},
            {"apiVersion": "apps/v1", "kind": "Deployment", "name": "b", "uid": "2", "controller": true, "blockOwnerDeletion": false},
        ]);
        assert_eq!(
            owner_causes(refs),
            vec![pair(
                "metadata.ownerReferences",
                r#"Invalid value: [{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"a","uid":"1","controller":true},{"apiVersion":"apps/v1","kind":"Deployment","name":"b","uid":"2","controller":true,"blockOwnerDeletion":false}]: Only one reference can have Controller set to true. Found "true" in references for ReplicaSet/a and Deployment/b"#
            )]
        );
        // A third controller is compared with the first again.
        let three = json!([
            {"apiVersion": "v1", "kind": "A", "name": "a", "uid": "1", "controller": true},
            {"apiVersion": "v1", "kind": "B", "name": "b", "uid": "2", "controller": true},
            {"apiVersion": "v1", "kind": "C", "name": "c", "uid": "3", "controller": true},
        ]);
        let causes = owner_causes(three);
        assert_eq!(causes.len(), 2);
        assert!(
            causes[0].1.ends_with("references for A/a and B/b"),
            "{causes:?}"
        );
        assert!(
            causes[1].1.ends_with("references for A/a and C/c"),
            "{causes:?}"
        );
    }

    #[test]
    fn owner_reference_empty_fields() {
        let refs = json!([{"apiVersion": "v1", "kind": "ConfigMap", "name": "a", "uid": ""}]);
        assert_eq!(
            owner_causes(refs),
            vec![pair(
                "metadata.ownerReferences.uid",
                r#"Invalid value: "": must not be empty"#
            )]
        );
        let refs = json!([{"apiVersion": "", "kind": "", "name": "", "uid": "u"}]);
        assert_eq!(
            owner_causes(refs),
            vec![
                pair(
                    "metadata.ownerReferences.apiVersion",
                    r#"Invalid value: "": version must not be empty"#
                ),
                pair(
                    "metadata.ownerReferences.kind",
                    r#"Invalid value: "": must not be empty"#
                ),
                pair(
                    "metadata.ownerReferences.name",
                    r#"Invalid value: "": must not be empty"#
                ),
            ]
        );
        // Absent fields read as empty, and a null entry is the zero reference.
        assert_eq!(owner_causes(json!([{}])).len(), 4);
        assert_eq!(owner_causes(json!([null])).len(), 4);
        // `group/` has no version either.
        let refs = json!([{"apiVersion": "apps/", "kind": "K", "name": "n", "uid": "u"}]);
        assert_eq!(
            owner_causes(refs),
            vec![pair(
                "metadata.ownerReferences.apiVersion",
                r#"Invalid value: "apps/": version must not be empty"#
            )]
        );
    }

    #[test]
    fn owner_reference_unparsable_api_version() {
        let refs = json!([{"apiVersion": "///", "kind": "K", "name": "n", "uid": "u"}]);
        assert_eq!(
            owner_causes(refs),
            vec![pair(
                "metadata.ownerReferences.apiVersion",
                r#"Invalid value: "///": version must not be empty"#
            )]
        );
        let refs = json!([{"apiVersion": "a/b/v1", "kind": "K", "name": "n", "uid": "u"}]);
        assert_eq!(owner_causes(refs).len(), 1);
    }

    #[test]
    fn owner_reference_banned_event() {
        let refs = json!([{"apiVersion": "v1", "kind": "Event", "name": "e", "uid": "u"}]);
        assert_eq!(
            owner_causes(refs),
            vec![pair(
                "metadata.ownerReferences",
                r#"Invalid value: {"apiVersion":"v1","kind":"Event","name":"e","uid":"u"}: /v1, Kind=Event is disallowed from being an owner"#
            )]
        );
        // `/v1` parses to the same group and version.
        let refs = json!([{"apiVersion": "/v1", "kind": "Event", "name": "e", "uid": "u"}]);
        assert_eq!(owner_causes(refs).len(), 1);
        // The events.k8s.io Event is an allowed owner.
        let refs =
            json!([{"apiVersion": "events.k8s.io/v1", "kind": "Event", "name": "e", "uid": "u"}]);
        assert_eq!(owner_causes(refs), Vec::<(String, String)>::new());
    }

    #[test]
    fn owner_reference_undecodable_is_left_to_decoding() {
        assert_eq!(
            owner_causes(json!([{"uid": 5}])),
            Vec::<(String, String)>::new()
        );
        assert_eq!(
            owner_causes(json!([{"uid": ""}, "x"])),
            Vec::<(String, String)>::new()
        );
        assert_eq!(
            owner_causes(json!({"uid": ""})),
            Vec::<(String, String)>::new()
        );
    }

    #[test]
    fn owner_reference_values_are_escaped_as_go_does() {
        let refs = json!([{"apiVersion": "v1", "kind": "Event", "name": "a<b", "uid": "u"}]);
        assert_eq!(
            owner_causes(refs)[0].1,
            r#"Invalid value: {"apiVersion":"v1","kind":"Event","name":"a\u003cb","uid":"u"}: /v1, Kind=Event is disallowed from being an owner"#
        );
    }

    #[test]
    fn suffix_uses_kube_alphabet() {
        let s = random_suffix();
        assert_eq!(s.len(), 5);
        assert!(s.chars().all(|c| "bcdfghjklmnpqrstvwxz2456789".contains(c)));
    }
}

#[cfg(test)]
mod managed_fields_tests {
    use super::*;
    use serde_json::json;

    /// kube's `IsQualifiedName` and `IsValidLabelValue` words, failure by failure.
    #[test]
    fn label_errors_say_what_is_wrong_as_kube() {
        let long = "a".repeat(64);
        let obj = json!({"metadata": {"name": "x", "labels": {
            "Bad_Prefix/x": "1", "ok": "bad value", "a/b/c": "1", "k": long}}});
        let messages: Vec<String> = validate_common(&obj)
            .into_iter()
            .map(|c| c.message)
            .collect();
        assert!(
            messages.iter().any(|m| m.starts_with(
                "Invalid value: \"Bad_Prefix/x\": prefix part a lowercase RFC 1123 subdomain"
            )),
            "{messages:?}"
        );
        assert!(
            messages.iter().any(|m| m.starts_with(
                "Invalid value: \"bad value\": a valid label must be an empty string"
            ) && m.contains("regex used for validation")),
            "{messages:?}"
        );
        assert!(
            messages
                .iter()
                .any(|m| m.contains("a qualified name must consist of")
                    && m.contains("with an optional DNS subdomain prefix and '/'")),
            "{messages:?}"
        );
        assert!(
            messages
                .iter()
                .any(|m| m.ends_with(": must be no more than 63 characters")),
            "{messages:?}"
        );
    }

    #[test]
    fn managed_fields_limits_are_kube_s() {
        let obj = |manager: &str, sub: &str| {
            json!({"metadata": {"name": "x", "managedFields": [
                {"manager": "ok", "operation": "Update"},
                {"manager": manager, "operation": "Update", "subresource": sub}]}})
        };
        assert!(validate_common(&obj("kubectl", "status")).is_empty());
        let causes = validate_common(&obj(&"m".repeat(129), &"s".repeat(257)));
        let fields: Vec<&str> = causes.iter().map(|c| c.field.as_str()).collect();
        assert_eq!(
            fields,
            [
                "metadata.managedFields[1].manager",
                "metadata.managedFields[1].subresource"
            ]
        );
        assert_eq!(
            causes[0].message,
            "Too long: may not be more than 128 bytes"
        );
        let causes = validate_common(&obj("a\u{7}b", ""));
        assert_eq!(
            causes[0].message,
            "Invalid value: \"a\\ab\": must only contain printable characters"
        );
    }
}
