//! CustomResourceDefinitions: validating a CRD object, deriving the resources it serves, and
//! deciding whether its names are accepted. Pure functions; `controller` applies them.

pub mod controller;
pub mod conversion;

use std::sync::Arc;

use serde_json::{json, Value};

use crate::model::registry::{CustomResource, PrinterColumn, ScaleSubresource};
use crate::model::{Cause, ResourceInfo, Scope};
use crate::schema::Schema;

pub const GROUP: &str = "apiextensions.k8s.io";
pub const RESOURCE: &str = "customresourcedefinitions";
/// The finalizer that holds a CRD until its instances are gone.
pub const CLEANUP_FINALIZER: &str = "customresourcecleanup.apiextensions.k8s.io";

fn s<'a>(v: &'a Value, ptr: &str) -> &'a str {
    v.pointer(ptr).and_then(Value::as_str).unwrap_or("")
}

fn is_dns_label(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.len() <= 63
        && b.iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
        && b[0] != b'-'
        && b[b.len() - 1] != b'-'
}

/// Fill in what kube's defaulting fills in: singular, listKind, conversion strategy.
pub fn apply_defaults(crd: &mut Value) {
    let Some(spec) = crd.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    if let Some(names) = spec.get_mut("names").and_then(Value::as_object_mut) {
        let kind = names
            .get("kind")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned();
        if names
            .get("singular")
            .and_then(Value::as_str)
            .is_none_or(str::is_empty)
        {
            names.insert("singular".into(), json!(kind.to_lowercase()));
        }
        if names
            .get("listKind")
            .and_then(Value::as_str)
            .is_none_or(str::is_empty)
            && !kind.is_empty()
        {
            names.insert("listKind".into(), json!(format!("{kind}List")));
        }
    }
    let conv = spec
        .entry("conversion")
        .or_insert_with(|| json!({"strategy": "None"}));
    // kube's `SetDefaults_ServiceReference`: a webhook service's port is 443.
    if let Some(svc) = conv
        .pointer_mut("/webhook/clientConfig/service")
        .and_then(Value::as_object_mut)
    {
        svc.entry("port").or_insert(json!(443));
    }
}

/// kube's `KubeAPIApprovedAnnotation`.
pub const API_APPROVED: &str = "api-approved.kubernetes.io";

/// kube's `IsProtectedCommunityGroup`: `k8s.io` and `kubernetes.io` and their subdomains.
pub fn is_protected_group(group: &str) -> bool {
    group == "k8s.io"
        || group.ends_with(".k8s.io")
        || group == "kubernetes.io"
        || group.ends_with(".kubernetes.io")
}

/// kube's `APIApprovalState` of a protected group's CRD.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ApprovalState {
    Missing,
    /// A reason starting with `unapproved`.
    Bypassed,
    /// A URL (with scheme and host).
    Approved,
    Invalid,
}

/// kube's `GetAPIApprovalState`: the state of the CRD's annotation, with kube's reason.
pub fn approval_state(crd: &Value) -> (ApprovalState, String) {
    let value = crd
        .pointer("/metadata/annotations")
        .and_then(|a| a.get(API_APPROVED))
        .and_then(Value::as_str)
        .unwrap_or("");
    // Go's url.ParseRequestURI with a scheme and a host: `scheme://host...`, no spaces.
    let is_url = value.split_once("://").is_some_and(|(scheme, rest)| {
        scheme
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic())
            && scheme
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
            && rest
                .split(['/', '?', '#'])
                .next()
                .is_some_and(|host| !host.is_empty())
            && !value.chars().any(|c| c.is_whitespace() || c.is_control())
    });
    if value.is_empty() {
        (
            ApprovalState::Missing,
            format!("protected groups must have approval annotation \"{API_APPROVED}\", see https://github.com/kubernetes/enhancements/pull/1111"),
        )
    } else if value.starts_with("unapproved") {
        (
            ApprovalState::Bypassed,
            format!("not approved: \"{value}\""),
        )
    } else if is_url {
        (ApprovalState::Approved, format!("approved in {value}"))
    } else {
        (
            ApprovalState::Invalid,
            format!("protected groups must have approval annotation \"{API_APPROVED}\" with either a URL or a reason starting with \"unapproved\", see https://github.com/kubernetes/enhancements/pull/1111"),
        )
    }
}

/// kube's `validateAPIApproval`: a CRD of a protected group needs the approval annotation (a
/// URL, or a reason starting with `unapproved`), unless an update leaves its state as it was.
pub fn validate_api_approval(crd: &Value, old: Option<&Value>) -> Vec<Cause> {
    if !is_protected_group(s(crd, "/spec/group")) {
        return Vec::new();
    }
    let (state, reason) = approval_state(crd);
    if old.is_some_and(|o| approval_state(o).0 == state) {
        return Vec::new();
    }
    let field = format!("metadata.annotations[{API_APPROVED}]");
    match state {
        ApprovalState::Approved | ApprovalState::Bypassed => Vec::new(),
        ApprovalState::Missing => vec![Cause::new(
            "FieldValueRequired",
            &field,
            format!("Required value: {reason}"),
        )],
        ApprovalState::Invalid => {
            let value = crd
                .pointer("/metadata/annotations")
                .and_then(|a| a.get(API_APPROVED))
                .and_then(Value::as_str)
                .unwrap_or("");
            vec![Cause::new(
                "FieldValueInvalid",
                &field,
                format!("Invalid value: \"{value}\": {reason}"),
            )]
        }
    }
}

/// kube's `validateCustomResourceDefinitionUpdate` beyond what [`validate`] checks of any CRD:
/// `spec.scope` and `spec.names.kind` are immutable once the CRD is Established (they decide
/// how instances are stored; the group and plural are the name's), and every version in
/// `status.storedVersions` stays in `spec.versions`
/// (`ValidateCustomResourceDefinitionStoredVersions`).
pub fn validate_update(crd: &Value, old: &Value) -> Vec<Cause> {
    let mut causes = Vec::new();
    let established = old
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .any(|c| s(c, "/type") == "Established" && s(c, "/status") == "True");
    if established {
        for (ptr, field) in [
            ("/spec/scope", "spec.scope"),
            ("/spec/names/kind", "spec.names.kind"),
        ] {
            if s(crd, ptr) != s(old, ptr) {
                causes.push(Cause::new(
                    "FieldValueInvalid",
                    field,
                    format!(
                        "Invalid value: {}: field is immutable",
                        crate::auth::rbac::go_quote(s(crd, ptr))
                    ),
                ));
            }
        }
    }
    let stored: Vec<&str> = crd
        .pointer("/status/storedVersions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    let versions = crd
        .pointer("/spec/versions")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    // kube's PrepareForUpdate adds the storage version to storedVersions first (turtles' CRD
    // controller writes it after), so only a removed version can be missing.
    for (i, v) in stored.iter().enumerate() {
        if !versions.iter().any(|x| s(x, "/name") == *v) {
            causes.push(Cause::new(
                "FieldValueInvalid",
                &format!("status.storedVersions[{i}]"),
                format!(
                    "Invalid value: \"{v}\": missing from spec.versions; {v} was previously a storage version, and must remain in spec.versions until a storage migration ensures no data remains persisted in {v} and removes {v} from status.storedVersions"
                ),
            ));
        }
    }
    causes
}

/// kube's `validateDeprecationWarning`: what is wrong with a version's `deprecationWarning`
/// (set, not `null`), given whether the version is `deprecated`.
fn deprecation_warning_errors(deprecated: bool, warning: &str) -> Vec<String> {
    if !deprecated {
        return vec!["can only be set for deprecated versions".into()];
    }
    let mut errors = Vec::new();
    // Go's `len`: bytes.
    if warning.len() > 256 {
        errors.push("must be <= 256 characters long".into());
    }
    if warning.is_empty() {
        errors.push("must not be an empty string".into());
    }
    // The first character Go's `unicode.IsPrint` refuses (a control character is one), at its
    // byte offset as Go's `range` counts.
    if let Some(i) = first_non_printable(warning) {
        errors.push(format!(
            "must only contain printable UTF-8 characters; non-printable character found at index {i}"
        ));
    }
    errors
}

/// The byte offset of the first character of `s` that Go's `unicode.IsPrint` refuses: anything
/// but a letter, mark, number, punctuation or symbol (categories L, M, N, P, S) or the ASCII
/// space.
fn first_non_printable(s: &str) -> Option<usize> {
    static NON_PRINTABLE: std::sync::OnceLock<Option<regex::Regex>> = std::sync::OnceLock::new();
    let re = NON_PRINTABLE
        .get_or_init(|| regex::Regex::new(r"[^\p{L}\p{M}\p{N}\p{P}\p{S} ]").ok())
        .as_ref();
    match re {
        Some(re) => re.find(s).map(|m| m.start()),
        // Not reached (the pattern is fixed); controls and other whitespace are the usual cases.
        None => s
            .char_indices()
            .find(|&(_, c)| c != ' ' && (c.is_control() || c.is_whitespace()))
            .map(|(i, _)| i),
    }
}

/// Validate a CRD object the way kube's apiextensions validation does; every problem is one cause.
pub fn validate(crd: &Value) -> Vec<Cause> {
    let mut causes = Vec::new();
    let mut bad =
        |reason: &str, field: &str, msg: String| causes.push(Cause::new(reason, field, msg));
    let name = crate::model::meta::name(crd);
    let group = s(crd, "/spec/group");
    let plural = s(crd, "/spec/names/plural");
    if group.is_empty() {
        bad("FieldValueRequired", "spec.group", "Required value".into());
    } else if !group.contains('.') {
        bad(
            "FieldValueInvalid",
            "spec.group",
            format!("Invalid value: \"{group}\": should be a domain with at least one dot"),
        );
    }
    if !plural.is_empty() && !group.is_empty() && name != format!("{plural}.{group}") {
        bad(
            "FieldValueInvalid",
            "metadata.name",
            format!("Invalid value: \"{name}\": must be spec.names.plural+\".\"+spec.group"),
        );
    }
    for (field, value, required) in [
        ("spec.names.plural", plural, true),
        ("spec.names.singular", s(crd, "/spec/names/singular"), false),
    ] {
        if value.is_empty() {
            if required {
                bad("FieldValueRequired", field, "Required value".into());
            }
        } else if !is_dns_label(value) {
            bad(
                "FieldValueInvalid",
                field,
                format!("Invalid value: \"{value}\": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character"),
            );
        }
    }
    let kind = s(crd, "/spec/names/kind");
    if kind.is_empty() {
        bad(
            "FieldValueRequired",
            "spec.names.kind",
            "Required value".into(),
        );
    } else if !kind.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
        || !kind.chars().all(|c| c.is_ascii_alphanumeric())
    {
        bad(
            "FieldValueInvalid",
            "spec.names.kind",
            format!("Invalid value: \"{kind}\": may have mixed case, but should otherwise match: [a-z]([-a-z0-9]*[a-z0-9])?"),
        );
    }
    if let Some(shorts) = crd
        .pointer("/spec/names/shortNames")
        .and_then(Value::as_array)
    {
        for (i, sn) in shorts.iter().enumerate() {
            let v = sn.as_str().unwrap_or("");
            if !is_dns_label(v) {
                bad(
                    "FieldValueInvalid",
                    &format!("spec.names.shortNames[{i}]"),
                    format!("Invalid value: \"{v}\": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-'"),
                );
            }
        }
    }
    match s(crd, "/spec/scope") {
        "Namespaced" | "Cluster" => {}
        "" => bad("FieldValueRequired", "spec.scope", "Required value".into()),
        other => bad(
            "FieldValueNotSupported",
            "spec.scope",
            format!(
                "Unsupported value: \"{other}\": supported values: \"Cluster\", \"Namespaced\""
            ),
        ),
    }
    for c in conversion::validate(crd) {
        bad(&c.reason, &c.field, c.message);
    }
    let versions = crd
        .pointer("/spec/versions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    if versions.is_empty() {
        bad(
            "FieldValueRequired",
            "spec.versions",
            "Required value: must have exactly one version marked as storage version".into(),
        );
    }
    let storage = versions
        .iter()
        .filter(|v| v.get("storage") == Some(&Value::Bool(true)))
        .count();
    if !versions.is_empty() && storage != 1 {
        bad(
            "FieldValueInvalid",
            "spec.versions",
            format!("Invalid value: []apiextensions.CustomResourceDefinitionVersion{{...}}: must have exactly one version marked as storage version (found {storage})"),
        );
    }
    let mut seen = Vec::new();
    for (i, v) in versions.iter().enumerate() {
        let vf = format!("spec.versions[{i}]");
        let vname = s(v, "/name");
        if !is_dns_label(vname) {
            bad(
                "FieldValueInvalid",
                &format!("{vf}.name"),
                format!("Invalid value: \"{vname}\": must be a DNS label"),
            );
        }
        if seen.contains(&vname) {
            bad(
                "FieldValueDuplicate",
                &format!("{vf}.name"),
                format!("Duplicate value: \"{vname}\""),
            );
        }
        seen.push(vname);
        if let Some(w) = v.get("deprecationWarning").and_then(Value::as_str) {
            for msg in
                deprecation_warning_errors(v.get("deprecated") == Some(&Value::Bool(true)), w)
            {
                bad(
                    "FieldValueInvalid",
                    &format!("{vf}.deprecationWarning"),
                    format!("Invalid value: {}: {msg}", crate::auth::rbac::go_quote(w)),
                );
            }
        }
        match v.pointer("/schema/openAPIV3Schema") {
            None => bad(
                "FieldValueRequired",
                &format!("{vf}.schema.openAPIV3Schema"),
                "Required value: schemas are required".into(),
            ),
            Some(schema) => {
                if let Err(violations) =
                    Schema::from_crd_schema(schema, &format!("{vf}.schema.openAPIV3Schema"))
                {
                    for viol in violations {
                        causes_push(&mut bad, viol);
                    }
                }
            }
        }
        if let Some(scale) = v.pointer("/subresources/scale") {
            let spec_path = s(scale, "/specReplicasPath");
            let status_path = s(scale, "/statusReplicasPath");
            if !spec_path.starts_with(".spec.") {
                bad(
                    "FieldValueInvalid",
                    &format!("{vf}.subresources.scale.specReplicasPath"),
                    format!("Invalid value: \"{spec_path}\": should be a json path under .spec"),
                );
            }
            if !status_path.starts_with(".status.") {
                bad(
                    "FieldValueInvalid",
                    &format!("{vf}.subresources.scale.statusReplicasPath"),
                    format!(
                        "Invalid value: \"{status_path}\": should be a json path under .status"
                    ),
                );
            }
        }
        if let Some(cols) = v.get("additionalPrinterColumns").and_then(Value::as_array) {
            for (j, c) in cols.iter().enumerate() {
                let cf = format!("{vf}.additionalPrinterColumns[{j}]");
                if s(c, "/name").is_empty() {
                    bad(
                        "FieldValueRequired",
                        &format!("{cf}.name"),
                        "Required value".into(),
                    );
                }
                match s(c, "/type") {
                    "integer" | "number" | "boolean" | "string" | "date" => {}
                    other => bad(
                        "FieldValueNotSupported",
                        &format!("{cf}.type"),
                        format!("Unsupported value: \"{other}\": supported values: \"boolean\", \"date\", \"integer\", \"number\", \"string\""),
                    ),
                }
                if !s(c, "/jsonPath").starts_with('.') {
                    bad(
                        "FieldValueInvalid",
                        &format!("{cf}.jsonPath"),
                        "Invalid value: must be a simple json path starting with .".into(),
                    );
                }
            }
        }
    }
    causes
}

fn causes_push(bad: &mut impl FnMut(&str, &str, String), v: crate::schema::Violation) {
    bad(&v.reason, &v.field, v.message);
}

/// The conflicting-names verdict of the naming controller.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NameConflict {
    pub reason: &'static str,
    pub message: String,
}

/// Check `crd`'s names against the accepted names of the other CRDs in the same group.
pub fn check_names(crd: &Value, others: &[&Value]) -> Result<(), NameConflict> {
    let group = s(crd, "/spec/group");
    let names = crd.pointer("/spec/names").cloned().unwrap_or(Value::Null);
    let plural = s(&names, "/plural");
    let singular = s(&names, "/singular");
    let kind = s(&names, "/kind");
    let list_kind = s(&names, "/listKind");
    let shorts: Vec<&str> = names
        .get("shortNames")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    for other in others {
        if s(other, "/spec/group") != group {
            continue;
        }
        let Some(acc) = other.pointer("/status/acceptedNames") else {
            continue;
        };
        let o_plural = s(acc, "/plural");
        let o_singular = s(acc, "/singular");
        let o_shorts: Vec<&str> = acc
            .get("shortNames")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let resource_names: Vec<&str> = [o_plural, o_singular]
            .into_iter()
            .chain(o_shorts.iter().copied())
            .filter(|n| !n.is_empty())
            .collect();
        if resource_names.contains(&plural) {
            return Err(NameConflict {
                reason: "PluralConflict",
                message: format!("\"{plural}\" is already in use"),
            });
        }
        if !singular.is_empty() && resource_names.contains(&singular) {
            return Err(NameConflict {
                reason: "SingularConflict",
                message: format!("\"{singular}\" is already in use"),
            });
        }
        for sn in &shorts {
            if resource_names.contains(sn) {
                return Err(NameConflict {
                    reason: "ShortNamesConflict",
                    message: format!("\"{sn}\" is already in use"),
                });
            }
        }
        let kinds = [s(acc, "/kind"), s(acc, "/listKind")];
        if kinds.contains(&kind) {
            return Err(NameConflict {
                reason: "KindConflict",
                message: format!("\"{kind}\" is already in use"),
            });
        }
        if kinds.contains(&list_kind) {
            return Err(NameConflict {
                reason: "ListKindConflict",
                message: format!("\"{list_kind}\" is already in use"),
            });
        }
    }
    Ok(())
}

/// Parse a printer column's JSONPath subset: `.a.b`, `.a[0].b`, `.a[?(@.k=="v")].b`.
pub fn eval_json_path(obj: &Value, path: &str) -> Option<Value> {
    let mut cur = vec![obj.clone()];
    let mut rest = path.trim();
    rest = rest
        .strip_prefix('{')
        .and_then(|r| r.strip_suffix('}'))
        .unwrap_or(rest);
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix('.') {
            let end = r.find(['.', '[']).unwrap_or(r.len());
            let field = &r[..end];
            rest = &r[end..];
            if field.is_empty() {
                continue;
            }
            cur = cur.iter().filter_map(|v| v.get(field).cloned()).collect();
        } else {
            let r = rest.strip_prefix('[')?;
            let end = r.find(']')?;
            let inner = &r[..end];
            rest = &r[end + 1..];
            if let Some(filter) = inner.strip_prefix("?(@.").and_then(|f| f.strip_suffix(')')) {
                let (k, v) = filter.split_once("==")?;
                let want = v.trim().trim_matches(|c| c == '"' || c == '\'');
                let key = k.trim();
                cur = cur
                    .iter()
                    .filter_map(Value::as_array)
                    .flatten()
                    .filter(|e| e.get(key).and_then(Value::as_str) == Some(want))
                    .cloned()
                    .collect();
            } else if inner == "*" {
                cur = cur
                    .iter()
                    .filter_map(Value::as_array)
                    .flatten()
                    .cloned()
                    .collect();
            } else {
                let idx: usize = inner.parse().ok()?;
                cur = cur
                    .iter()
                    .filter_map(|v| v.as_array().and_then(|a| a.get(idx)).cloned())
                    .collect();
            }
        }
    }
    match cur.len() {
        0 => None,
        1 => cur.pop(),
        _ => Some(Value::Array(cur)),
    }
}

/// kube's `defaultDeprecationWarning` (`customresource_handler.go`) for the deprecated
/// `version` of `crd`: `GROUP/VERSION KIND is deprecated`, and `; use GROUP/NEWER KIND` naming
/// the first, in kube's version order (`CompareKubeAwareVersionStrings`: GA, then beta, then
/// alpha, higher numbers first), of the served versions that are not deprecated and come
/// before `version` in that order.
pub fn deprecation_warning(crd: &Value, version: &str) -> String {
    let group = s(crd, "/spec/group");
    let kind = s(crd, "/spec/names/kind");
    let mut msg = format!("{group}/{version} {kind} is deprecated");
    let newest = crd
        .pointer("/spec/versions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|v| {
            // Served as `resources` serves them.
            v.get("served") != Some(&Value::Bool(false))
                && v.get("deprecated") != Some(&Value::Bool(true))
        })
        .map(|v| s(v, "/name"))
        .filter(|name| {
            crate::aggregator::compare_versions(version, name) == std::cmp::Ordering::Less
        })
        .max_by(|a, b| crate::aggregator::compare_versions(a, b));
    if let Some(newest) = newest {
        msg.push_str(&format!("; use {group}/{newest} {kind}"));
    }
    msg
}

/// The resources a CRD serves: one per served version.
pub fn resources(crd: &Value) -> Vec<Arc<ResourceInfo>> {
    let name = crate::model::meta::name(crd).to_owned();
    let group = s(crd, "/spec/group").to_owned();
    let names = crd.pointer("/spec/names").cloned().unwrap_or(Value::Null);
    let kind = s(&names, "/kind").to_owned();
    let versions = crd
        .pointer("/spec/versions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let storage_version = versions
        .iter()
        .find(|v| v.get("storage") == Some(&Value::Bool(true)))
        .map(|v| s(v, "/name").to_owned())
        .unwrap_or_default();
    let webhook = conversion::Webhook::of(crd);
    let strs = |key: &str| -> Vec<String> {
        names
            .get(key)
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|v| v.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default()
    };
    // Every version's schema, the unserved ones' included: objects stored in any of them are
    // read through it.
    let schemas: Arc<std::collections::BTreeMap<String, Arc<Schema>>> = Arc::new(
        versions
            .iter()
            .filter_map(|v| {
                let schema = v
                    .pointer("/schema/openAPIV3Schema")
                    .and_then(|sch| Schema::from_crd_schema(sch, "").ok())?;
                Some((s(v, "/name").to_owned(), Arc::new(schema)))
            })
            .collect(),
    );
    versions
        .iter()
        .filter(|v| v.get("served") != Some(&Value::Bool(false)))
        .map(|v| {
            let source = v.pointer("/schema/openAPIV3Schema");
            let schema = schemas.get(s(v, "/name")).cloned();
            let warning = (v.get("deprecated") == Some(&Value::Bool(true))).then(|| {
                match v.get("deprecationWarning").and_then(Value::as_str) {
                    Some(w) => w.to_owned(),
                    None => deprecation_warning(crd, s(v, "/name")),
                }
            });
            let schema_hash = {
                use std::hash::{Hash, Hasher};
                let mut h = std::collections::hash_map::DefaultHasher::new();
                source.map(Value::to_string).hash(&mut h);
                h.finish()
            };
            let printer_columns = v
                .get("additionalPrinterColumns")
                .and_then(Value::as_array)
                .map(|cols| {
                    cols.iter()
                        .map(|c| PrinterColumn {
                            name: s(c, "/name").to_owned(),
                            kind: s(c, "/type").to_owned(),
                            format: s(c, "/format").to_owned(),
                            description: s(c, "/description").to_owned(),
                            priority: c.get("priority").and_then(Value::as_u64).unwrap_or(0) as u8,
                            json_path: s(c, "/jsonPath").to_owned(),
                        })
                        .collect()
                })
                .unwrap_or_default();
            let selectable_fields = v
                .get("selectableFields")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .map(|f| s(f, "/jsonPath").trim_start_matches('.').to_owned())
                .collect();
            let scale = v.pointer("/subresources/scale").map(|sc| ScaleSubresource {
                spec_replicas_path: s(sc, "/specReplicasPath").to_owned(),
                status_replicas_path: s(sc, "/statusReplicasPath").to_owned(),
                label_selector_path: sc
                    .get("labelSelectorPath")
                    .and_then(Value::as_str)
                    .map(str::to_owned),
            });
            Arc::new(ResourceInfo {
                group: group.clone(),
                version: s(v, "/name").to_owned(),
                resource: s(&names, "/plural").to_owned(),
                singular: s(&names, "/singular").to_owned(),
                kind: kind.clone(),
                list_kind: s(&names, "/listKind").to_owned(),
                scope: if s(crd, "/spec/scope") == "Cluster" {
                    Scope::Cluster
                } else {
                    Scope::Namespaced
                },
                short_names: strs("shortNames"),
                categories: strs("categories"),
                status_subresource: v.pointer("/subresources/status").is_some(),
                scale,
                name_rule: crate::model::registry::NameRule::DnsSubdomain,
                generation: true,
                delete_returns_object: false,
                unconditional_update: false,
                create_on_update: false,
                conversion: None,
                custom: Some(Arc::new(CustomResource {
                    crd_name: name.clone(),
                    storage_version: storage_version.clone(),
                    schema,
                    schemas: schemas.clone(),
                    deprecation_warning: warning,
                    printer_columns,
                    selectable_fields,
                    webhook: webhook.clone(),
                    schema_rv: crd
                        .pointer("/metadata/resourceVersion")
                        .and_then(Value::as_str)
                        .and_then(|r| r.parse().ok())
                        .unwrap_or(u64::MAX),
                    schema_hash,
                })),
                create_only: false,
                computed: false,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn protected_groups_need_the_approval_annotation() {
        let crd = |group: &str, approval: Option<&str>| {
            let mut c =
                json!({"metadata": {"name": format!("xs.{group}")}, "spec": {"group": group}});
            if let Some(a) = approval {
                c["metadata"]["annotations"] = json!({API_APPROVED: a});
            }
            c
        };
        assert!(validate_api_approval(&crd("example.com", None), None).is_empty());
        assert!(validate_api_approval(&crd("x.x-k8s.io", None), None).is_empty());
        let missing = validate_api_approval(&crd("metrics.k8s.io", None), None);
        assert_eq!(
            missing[0].to_string(),
            "metadata.annotations[api-approved.kubernetes.io]: Required value: protected groups must have approval annotation \"api-approved.kubernetes.io\", see https://github.com/kubernetes/enhancements/pull/1111"
        );
        let bad = validate_api_approval(&crd("k8s.io", Some("maybe")), None);
        assert_eq!(bad[0].reason, "FieldValueInvalid");
        for ok in [
            "unapproved, testing",
            "https://github.com/kubernetes/enhancements/pull/1111",
        ] {
            assert!(validate_api_approval(&crd("storage.k8s.io", Some(ok)), None).is_empty());
        }
        // An update that leaves the state as it was is not refused (a CRD made before the check).
        let old = crd("metrics.k8s.io", None);
        assert!(validate_api_approval(&crd("metrics.k8s.io", None), Some(&old)).is_empty());
        assert_eq!(
            approval_state(&crd("metrics.k8s.io", Some("unapproved"))),
            (
                ApprovalState::Bypassed,
                "not approved: \"unapproved\"".to_owned()
            )
        );
    }

    /// Objects are read through the slow path (pruned, defaulted) only if stored before their
    /// version's schema last changed, not before any write to the CRD.
    #[test]
    fn a_schema_keeps_the_revision_it_changed_at() {
        let crd = |rv: &str, max: u64| {
            json!({
                "metadata": {"name": "widgets.example.com", "resourceVersion": rv},
                "spec": {"group": "example.com", "scope": "Namespaced",
                    "names": {"plural": "widgets", "kind": "Widget"},
                    "versions": [{"name": "v1", "served": true, "storage": true,
                        "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                            "size": {"type": "integer", "maximum": max}}}}}]}
            })
        };
        let registry = crate::model::registry::Registry::default();
        let schema_rv = || {
            registry.custom_resources("widgets.example.com")[0]
                .custom
                .as_ref()
                .map(|c| c.schema_rv)
        };
        registry.set_custom("widgets.example.com", resources(&crd("5", 3)));
        assert_eq!(schema_rv(), Some(5));
        // A label or a status write: the same schema.
        registry.set_custom("widgets.example.com", resources(&crd("9", 3)));
        assert_eq!(schema_rv(), Some(5));
        registry.set_custom("widgets.example.com", resources(&crd("12", 4)));
        assert_eq!(schema_rv(), Some(12));
        // Gone and back: everything stored before it may predate it.
        registry.remove_custom("widgets.example.com");
        registry.set_custom("widgets.example.com", resources(&crd("20", 4)));
        assert_eq!(schema_rv(), Some(20));
    }

    /// kube's `defaultDeprecationWarning`: the newest served version that is not deprecated and
    /// comes before the deprecated one in kube's order (GA, beta, alpha; higher numbers first),
    /// if there is one.
    #[test]
    fn deprecated_versions_get_kubes_default_warning() {
        let crd = |versions: Value| {
            json!({"metadata": {"name": "widgets.example.com"},
                "spec": {"group": "example.com", "scope": "Namespaced",
                    "names": {"plural": "widgets", "kind": "Widget"}, "versions": versions}})
        };
        let v = |name: &str, served: bool, deprecated: bool| json!({"name": name, "served": served, "storage": false, "deprecated": deprecated});
        let c = crd(json!([
            v("v1alpha1", true, true),
            v("v1beta2", true, false),
            v("v1", true, false),
            v("v1beta1", true, true),
            v("v2", false, false),
            v("v3", true, true)
        ]));
        // GA before beta: v1, not v1beta2; v2 is not served, v3 is deprecated.
        assert_eq!(
            deprecation_warning(&c, "v1alpha1"),
            "example.com/v1alpha1 Widget is deprecated; use example.com/v1 Widget"
        );
        assert_eq!(
            deprecation_warning(&c, "v1beta1"),
            "example.com/v1beta1 Widget is deprecated; use example.com/v1 Widget"
        );
        // Nothing after v3 is served and not deprecated.
        assert_eq!(
            deprecation_warning(&c, "v3"),
            "example.com/v3 Widget is deprecated"
        );
        // Within a stage, the higher number: v1beta2 over v1beta1; a GA v2 beats any beta.
        let c = crd(json!([
            v("v1alpha1", true, true),
            v("v1beta1", true, false),
            v("v1beta2", true, false)
        ]));
        assert_eq!(
            deprecation_warning(&c, "v1alpha1"),
            "example.com/v1alpha1 Widget is deprecated; use example.com/v1beta2 Widget"
        );
        let c = crd(json!([v("v2beta1", true, true), v("v1", true, false)]));
        assert_eq!(
            deprecation_warning(&c, "v2beta1"),
            "example.com/v2beta1 Widget is deprecated; use example.com/v1 Widget"
        );
        // Only versions before it: a deprecated v2 does not send anyone back to v1.
        let c = crd(json!([v("v2", true, true), v("v1", true, false)]));
        assert_eq!(
            deprecation_warning(&c, "v2"),
            "example.com/v2 Widget is deprecated"
        );
        // Names that are not kube-like come after those that are, alphabetically.
        let c = crd(json!([v("foo", true, true), v("bar", true, false)]));
        assert_eq!(
            deprecation_warning(&c, "foo"),
            "example.com/foo Widget is deprecated; use example.com/bar Widget"
        );

        // Served: the version's own text, else the default; none for the others.
        let mut c = crd(json!([
            v("v1alpha1", true, true),
            v("v1beta1", true, true),
            v("v1", true, false)
        ]));
        c["spec"]["versions"][1]["deprecationWarning"] = json!("going away");
        let warnings: Vec<(String, Option<String>)> = resources(&c)
            .iter()
            .map(|r| {
                (
                    r.version.clone(),
                    r.custom
                        .as_ref()
                        .and_then(|cr| cr.deprecation_warning.clone()),
                )
            })
            .collect();
        assert_eq!(
            warnings,
            vec![
                (
                    "v1alpha1".to_owned(),
                    Some(
                        "example.com/v1alpha1 Widget is deprecated; use example.com/v1 Widget"
                            .to_owned()
                    )
                ),
                ("v1beta1".to_owned(), Some("going away".to_owned())),
                ("v1".to_owned(), None),
            ]
        );
    }

    /// kube's `validateDeprecationWarning`, with its messages.
    #[test]
    fn deprecation_warnings_are_validated_as_kube_does() {
        assert_eq!(
            deprecation_warning_errors(false, "x"),
            ["can only be set for deprecated versions"]
        );
        assert_eq!(
            deprecation_warning_errors(true, ""),
            ["must not be an empty string"]
        );
        assert!(deprecation_warning_errors(true, "use v2 – déjà vu ✓ \"now\"").is_empty());
        assert!(deprecation_warning_errors(true, &"x".repeat(256)).is_empty());
        assert_eq!(
            deprecation_warning_errors(true, &"x".repeat(257)),
            ["must be <= 256 characters long"]
        );
        // Go's `len` counts bytes: 129 two-byte characters are too many.
        assert_eq!(
            deprecation_warning_errors(true, &"é".repeat(129)),
            ["must be <= 256 characters long"]
        );
        // The first non-printable character only, at its byte offset.
        assert_eq!(
            deprecation_warning_errors(true, "ab\tc\n"),
            ["must only contain printable UTF-8 characters; non-printable character found at index 2"]
        );
        // A no-break space and a zero-width space are not printable to Go either.
        assert_eq!(
            deprecation_warning_errors(true, "é\u{a0}"),
            ["must only contain printable UTF-8 characters; non-printable character found at index 2"]
        );
        assert_eq!(
            deprecation_warning_errors(true, "a\u{200b}"),
            ["must only contain printable UTF-8 characters; non-printable character found at index 1"]
        );

        // In a CRD: one cause per problem, under the version's path, the value quoted as Go
        // quotes it.
        let crd = json!({"metadata": {"name": "widgets.example.com"},
            "spec": {"group": "example.com", "scope": "Namespaced",
                "names": {"plural": "widgets", "singular": "widget", "kind": "Widget",
                    "listKind": "WidgetList"},
                "versions": [
                    {"name": "v1", "served": true, "storage": true,
                     "deprecationWarning": "not \"yet\"",
                     "schema": {"openAPIV3Schema": {"type": "object"}}},
                    {"name": "v1beta1", "served": true, "storage": false, "deprecated": true,
                     "deprecationWarning": "",
                     "schema": {"openAPIV3Schema": {"type": "object"}}}]}});
        let causes: Vec<String> = validate(&crd)
            .into_iter()
            .filter(|c| c.field.ends_with("deprecationWarning"))
            .map(|c| format!("{}: {}", c.field, c.message))
            .collect();
        assert_eq!(
            causes,
            [
                "spec.versions[0].deprecationWarning: Invalid value: \"not \\\"yet\\\"\": can only be set for deprecated versions",
                "spec.versions[1].deprecationWarning: Invalid value: \"\": must not be an empty string",
            ]
        );
    }

    #[test]
    fn json_path_subset() {
        let o = json!({"spec": {"a": [1, 2]}, "status": {"conditions": [
            {"type": "Other", "status": "False"}, {"type": "Ready", "status": "True"}]}});
        assert_eq!(eval_json_path(&o, ".spec.a[1]"), Some(json!(2)));
        assert_eq!(
            eval_json_path(&o, r#".status.conditions[?(@.type=="Ready")].status"#),
            Some(json!("True"))
        );
        assert_eq!(eval_json_path(&o, ".spec.missing"), None);
    }

    #[test]
    fn names_conflict_within_a_group() {
        let accepted = json!({"spec": {"group": "x.io"}, "status": {"acceptedNames": {
            "plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList", "shortNames": ["wd"]}}});
        let clash = json!({"spec": {"group": "x.io", "names": {
            "plural": "gadgets", "singular": "gadget", "kind": "Gadget", "listKind": "GadgetList", "shortNames": ["wd"]}}});
        assert_eq!(
            check_names(&clash, &[&accepted]).unwrap_err().reason,
            "ShortNamesConflict"
        );
        let other_group = json!({"spec": {"group": "y.io", "names": {
            "plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"}}});
        assert!(check_names(&other_group, &[&accepted]).is_ok());
    }
}
