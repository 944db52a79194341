//! CertificateSigningRequests (`certificates.k8s.io/v1`) as kube-apiserver keeps them:
//! `pkg/registry/certificates/certificates/strategy.go` (who asked, what each of the main
//! resource, `/status` and `/approval` may change) and `pkg/apis/certificates/validation`
//! (the request, usages, signer name, conditions and certificate), with kube's field paths and
//! messages. Who may approve and sign is checked by [`crate::auth::csr`]; the signers live in
//! [`crate::controllers::csrsigning`].

use base64::Engine;
use serde_json::{json, Map, Value};

use crate::auth::rbac::{go_quote, UserInfo};
use crate::model::{meta, Cause, ResourceInfo};
use crate::service::Subresource;

pub const GROUP: &str = "certificates.k8s.io";
pub const RESOURCE: &str = "certificatesigningrequests";
pub const APPROVED: &str = "Approved";
pub const DENIED: &str = "Denied";
pub const FAILED: &str = "Failed";
/// The signer kube refuses new requests for in `certificates.k8s.io/v1`.
pub const LEGACY_SIGNER: &str = "kubernetes.io/legacy-unknown";

/// Every usage kube knows, sorted (the list its `Unsupported value` message gives).
const USAGES: [&str; 23] = [
    "any",
    "cert sign",
    "client auth",
    "code signing",
    "content commitment",
    "crl sign",
    "data encipherment",
    "decipher only",
    "digital signature",
    "email protection",
    "encipher only",
    "ipsec end system",
    "ipsec tunnel",
    "ipsec user",
    "key agreement",
    "key encipherment",
    "microsoft sgc",
    "netscape sgc",
    "ocsp signing",
    "s/mime",
    "server auth",
    "signing",
    "timestamping",
];

pub fn is_csrs(ri: &ResourceInfo) -> bool {
    ri.group == GROUP && ri.resource == RESOURCE
}

/// kube's `PrepareForCreate`: the requester is who created it (whatever the body said), and the
/// request starts with an empty status.
pub fn prepare_create(obj: &mut Value, user: Option<&UserInfo>) {
    let Some(o) = obj.as_object_mut() else {
        return;
    };
    let spec = o.entry("spec").or_insert_with(|| json!({}));
    if let Some(spec) = spec.as_object_mut() {
        for f in ["username", "uid", "groups", "extra"] {
            spec.remove(f);
        }
        if let Some(u) = user {
            if !u.name.is_empty() {
                spec.insert("username".into(), json!(u.name));
            }
            if !u.uid.is_empty() {
                spec.insert("uid".into(), json!(u.uid));
            }
            if !u.groups.is_empty() {
                spec.insert("groups".into(), json!(u.groups));
            }
            if !u.extra.is_empty() {
                spec.insert("extra".into(), json!(u.extra));
            }
        }
    }
    o.insert("status".into(), json!({}));
}

fn conditions(v: &Value) -> &[Value] {
    v.pointer("/status/conditions")
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

fn cond_str<'a>(c: &'a Value, field: &str) -> &'a str {
    c.get(field).and_then(Value::as_str).unwrap_or("")
}

/// kube's `PrepareForUpdate` of each way in, on `new` as [`crate::service::Service`]'s generic
/// update left it (the main resource and `/status` already keep `status`, or everything but
/// it, from `current`).
pub fn prepare_update(sub: Subresource, current: &Value, new: &mut Value) {
    // The spec never changes after create.
    if let (Some(n), Some(spec)) = (new.as_object_mut(), current.get("spec")) {
        n.insert("spec".into(), spec.clone());
    }
    match sub {
        Subresource::Status => {
            // The approval conditions are `/approval`'s: a status update keeps the stored ones
            // (the same number of them, in place; another number fails validation).
            for kind in [APPROVED, DENIED] {
                let old: Vec<Value> = conditions(current)
                    .iter()
                    .filter(|c| cond_str(c, "type") == kind)
                    .cloned()
                    .collect();
                let Some(list) = new
                    .pointer_mut("/status/conditions")
                    .and_then(Value::as_array_mut)
                else {
                    continue;
                };
                let at: Vec<usize> = (0..list.len())
                    .filter(|i| cond_str(&list[*i], "type") == kind)
                    .collect();
                if at.len() == old.len() {
                    for (i, c) in at.into_iter().zip(old) {
                        list[i] = c;
                    }
                }
            }
            populate_timestamps(new, current);
        }
        Subresource::Approval => {
            // Only the conditions come from the request.
            let conds = new.pointer("/status/conditions").cloned();
            let mut status = current.get("status").cloned().unwrap_or_else(|| json!({}));
            if !status.is_object() {
                status = json!({});
            }
            if let Some(s) = status.as_object_mut() {
                match conds {
                    Some(c) => s.insert("conditions".into(), c),
                    None => s.remove("conditions"),
                };
            }
            if let Some(n) = new.as_object_mut() {
                n.insert("status".into(), status);
            }
            populate_timestamps(new, current);
        }
        Subresource::Main
        | Subresource::Scale
        | Subresource::Finalize
        | Subresource::EphemeralContainers
        | Subresource::Resize => {}
    }
}

/// kube's `populateConditionTimestamps`: a condition without `lastUpdateTime` gets now; one
/// without `lastTransitionTime` gets the stored one of a condition with the same type and
/// status, else now.
fn populate_timestamps(new: &mut Value, old: &Value) {
    let now = meta::now_rfc3339();
    // The first stored transition time per (type, status): one pass, not one per condition.
    let mut kept: std::collections::HashMap<(&str, &str), Value> = Default::default();
    for o in conditions(old) {
        if !cond_str(o, "lastTransitionTime").is_empty() {
            kept.entry((cond_str(o, "type"), cond_str(o, "status")))
                .or_insert_with(|| o["lastTransitionTime"].clone());
        }
    }
    let Some(list) = new
        .pointer_mut("/status/conditions")
        .and_then(Value::as_array_mut)
    else {
        return;
    };
    let unset = |c: &Map<String, Value>, f: &str| {
        c.get(f)
            .is_none_or(|v| v.is_null() || v.as_str().is_some_and(str::is_empty))
    };
    for c in list.iter_mut() {
        let Some(m) = c.as_object_mut() else {
            continue;
        };
        if unset(m, "lastUpdateTime") {
            m.insert("lastUpdateTime".into(), json!(now));
        }
        if unset(m, "lastTransitionTime") {
            let ty = m.get("type").and_then(Value::as_str).unwrap_or("");
            let st = m.get("status").and_then(Value::as_str).unwrap_or("");
            let t = kept.get(&(ty, st)).cloned();
            m.insert("lastTransitionTime".into(), t.unwrap_or_else(|| json!(now)));
        }
    }
}

/// The bytes of a `[]byte` field (base64 in JSON); `None` when absent or not base64.
fn bytes_of(v: Option<&Value>) -> Option<Vec<u8>> {
    let s = v?.as_str()?;
    base64::engine::general_purpose::STANDARD.decode(s).ok()
}

/// Approved (an `Approved` condition and no `Denied` one, whatever their status, as kube's
/// `IsCertificateRequestApproved`).
pub fn approved(csr: &Value) -> bool {
    let has = |t: &str| conditions(csr).iter().any(|c| cond_str(c, "type") == t);
    has(APPROVED) && !has(DENIED)
}

/// A `Failed` condition whose status is `True` (or empty), as kube's `HasTrueCondition`.
pub fn failed(csr: &Value) -> bool {
    conditions(csr)
        .iter()
        .any(|c| cond_str(c, "type") == FAILED && matches!(cond_str(c, "status"), "True" | ""))
}

/// The issued certificate's bytes (empty: none yet).
pub fn certificate(csr: &Value) -> Vec<u8> {
    bytes_of(csr.pointer("/status/certificate")).unwrap_or_default()
}

/// The request's PEM bytes.
pub fn request(csr: &Value) -> Vec<u8> {
    bytes_of(csr.pointer("/spec/request")).unwrap_or_default()
}

pub fn usages(csr: &Value) -> Vec<String> {
    csr.pointer("/spec/usages")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|u| u.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

pub fn signer_name(csr: &Value) -> &str {
    csr.pointer("/spec/signerName")
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// What an update may leave as it found it (kube's `getValidationOptions`: a problem the stored
/// object already has is tolerated), and what the way in may change.
#[derive(Default)]
struct Options {
    both_approved_and_denied: bool,
    legacy_signer: bool,
    duplicate_condition_types: bool,
    empty_condition_type: bool,
    unknown_usages: bool,
    duplicate_usages: bool,
    arbitrary_certificate: bool,
    setting_certificate: bool,
    setting_approval_conditions: bool,
}

fn count_of(v: &Value, ty: &str) -> usize {
    conditions(v)
        .iter()
        .filter(|c| cond_str(c, "type") == ty)
        .count()
}

fn has_duplicates<'a>(items: impl Iterator<Item = &'a str>) -> bool {
    let mut seen = std::collections::HashSet::new();
    items.into_iter().any(|i| !seen.insert(i))
}

/// The certificates (decoded) of the new object and the stored one, read once per validation.
struct Certificates {
    new: Vec<u8>,
    old: Vec<u8>,
}

fn options(old: Option<&Value>, sub: Subresource, certs: &Certificates) -> Options {
    let Some(old) = old else {
        return Options::default();
    };
    let types = || conditions(old).iter().map(|c| cond_str(c, "type"));
    let old_usages = usages(old);
    let (new_cert, old_cert) = (&certs.new, &certs.old);
    Options {
        both_approved_and_denied: count_of(old, APPROVED) > 0 && count_of(old, DENIED) > 0,
        legacy_signer: signer_name(old) == LEGACY_SIGNER,
        duplicate_condition_types: has_duplicates(types()),
        empty_condition_type: types().any(str::is_empty),
        unknown_usages: old_usages.iter().any(|u| !USAGES.contains(&u.as_str())),
        duplicate_usages: has_duplicates(old_usages.iter().map(String::as_str)),
        arbitrary_certificate: new_cert == old_cert || certificate_error(old_cert).is_some(),
        setting_certificate: sub == Subresource::Status,
        setting_approval_conditions: sub == Subresource::Approval,
    }
}

/// kube's validation of a create (`old` none) or an update through `sub`.
pub fn validate(obj: &Value, old: Option<&Value>, sub: Subresource) -> Vec<Cause> {
    let certs = Certificates {
        new: certificate(obj),
        old: old.map(certificate).unwrap_or_default(),
    };
    let opts = options(old, sub, &certs);
    let mut causes = Vec::new();
    let invalid = |field: &str, value: &str, why: &str| {
        Cause::new(
            "FieldValueInvalid",
            field,
            format!("Invalid value: {value}: {why}"),
        )
    };
    // spec.request
    let raw = obj.pointer("/spec/request");
    let shown = match raw {
        None | Some(Value::Null) => "null".to_owned(),
        Some(v) => v.to_string(),
    };
    if let Err(why) = crate::auth::signer::parse_request(&request(obj)) {
        causes.push(invalid("spec.request", &shown, &why));
    }
    // spec.usages
    let list = usages(obj);
    if list.is_empty() {
        causes.push(Cause::new(
            "FieldValueRequired",
            "spec.usages",
            "Required value",
        ));
    }
    let mut seen = std::collections::HashSet::new();
    for (i, u) in list.iter().enumerate() {
        let field = format!("spec.usages[{i}]");
        if !opts.unknown_usages && !USAGES.contains(&u.as_str()) {
            let supported: Vec<String> = USAGES.iter().map(|s| go_quote(s)).collect();
            causes.push(Cause::new(
                "FieldValueNotSupported",
                &field,
                format!(
                    "Unsupported value: {}: supported values: {}",
                    go_quote(u),
                    supported.join(", ")
                ),
            ));
        }
        if !opts.duplicate_usages && !seen.insert(u.as_str()) {
            causes.push(Cause::new(
                "FieldValueDuplicate",
                &field,
                format!("Duplicate value: {}", go_quote(u)),
            ));
        }
    }
    // spec.signerName
    let signer = signer_name(obj);
    if !opts.legacy_signer && signer == LEGACY_SIGNER {
        causes.push(invalid(
            "spec.signerName",
            &go_quote(signer),
            "the legacy signerName is not allowed via this API version",
        ));
    } else {
        causes.extend(signer_name_causes(signer));
    }
    // spec.expirationSeconds
    if let Some(s) = obj
        .pointer("/spec/expirationSeconds")
        .and_then(Value::as_i64)
    {
        if s < 600 {
            causes.push(invalid(
                "spec.expirationSeconds",
                &s.to_string(),
                "may not specify a duration less than 600 seconds (10 minutes)",
            ));
        }
    }
    // status.conditions
    let conds = conditions(obj);
    let mut types_seen = std::collections::HashSet::new();
    let (mut has_approved, mut has_denied) = (false, false);
    for (i, c) in conds.iter().enumerate() {
        let ty = cond_str(c, "type");
        let field = |f: &str| format!("status.conditions[{i}].{f}");
        if !opts.empty_condition_type && ty.is_empty() {
            causes.push(Cause::new(
                "FieldValueRequired",
                &field("type"),
                "Required value",
            ));
        }
        let st = cond_str(c, "status");
        let allowed: &[&str] = if matches!(ty, APPROVED | DENIED | FAILED) {
            &["True"]
        } else {
            &["False", "True", "Unknown"]
        };
        if st.is_empty() {
            causes.push(Cause::new(
                "FieldValueRequired",
                &field("status"),
                "Required value",
            ));
        } else if !allowed.contains(&st) {
            let supported: Vec<String> = allowed.iter().map(|s| go_quote(s)).collect();
            causes.push(Cause::new(
                "FieldValueNotSupported",
                &field("status"),
                format!(
                    "Unsupported value: {}: supported values: {}",
                    go_quote(st),
                    supported.join(", ")
                ),
            ));
        }
        if !opts.both_approved_and_denied {
            if ty == APPROVED {
                has_approved = true;
                if has_denied {
                    causes.push(invalid(
                        "status.conditions",
                        &go_quote(ty),
                        "Approved and Denied conditions are mutually exclusive",
                    ));
                }
            }
            if ty == DENIED {
                has_denied = true;
                if has_approved {
                    causes.push(invalid(
                        "status.conditions",
                        &go_quote(ty),
                        "Approved and Denied conditions are mutually exclusive",
                    ));
                }
            }
        }
        if !opts.duplicate_condition_types && !types_seen.insert(ty) {
            causes.push(Cause::new(
                "FieldValueDuplicate",
                &field("type"),
                format!("Duplicate value: {}", go_quote(ty)),
            ));
        }
    }
    // status.certificate
    if !opts.arbitrary_certificate {
        if let Some(why) = certificate_error(&certs.new) {
            causes.push(invalid(
                "status.certificate",
                "\"<certificate data>\"",
                &why,
            ));
        }
    }
    if let Some(old) = old {
        causes.extend(update_causes(obj, old, &opts, &certs));
    }
    causes
}

/// kube's `validateCertificateSigningRequestUpdate` beyond the object's own validation.
fn update_causes(new: &Value, old: &Value, opts: &Options, certs: &Certificates) -> Vec<Cause> {
    let mut causes = Vec::new();
    let forbidden = |field: &str, why: String| {
        Cause::new("FieldValueForbidden", field, format!("Forbidden: {why}"))
    };
    for ty in [APPROVED, DENIED, FAILED] {
        if count_of(new, ty) < count_of(old, ty) {
            causes.push(forbidden(
                "status.conditions",
                format!(
                    "updates may not remove a condition of type {}",
                    go_quote(ty)
                ),
            ));
        }
    }
    if !opts.setting_approval_conditions {
        for ty in [APPROVED, DENIED] {
            let of_type = |c: &&Value| cond_str(c, "type") == ty;
            let n: Vec<&Value> = conditions(new).iter().filter(of_type).collect();
            let o: Vec<&Value> = conditions(old).iter().filter(of_type).collect();
            if n.len() > o.len() {
                causes.push(forbidden(
                    "status.conditions",
                    format!("updates may not add a condition of type {}", go_quote(ty)),
                ));
            } else if n.len() == o.len() && n != o {
                causes.push(forbidden(
                    "status.conditions",
                    format!(
                        "updates may not modify a condition of type {}",
                        go_quote(ty)
                    ),
                ));
            }
        }
    }
    if certs.new != certs.old {
        if !opts.setting_certificate {
            causes.push(forbidden(
                "status.certificate",
                "updates may not set certificate content".into(),
            ));
        } else if !certs.old.is_empty() {
            causes.push(forbidden(
                "status.certificate",
                "updates may not modify existing certificate content".into(),
            ));
        }
    }
    causes
}

/// kube's `validateCertificate`: empty, or PEM `CERTIFICATE` blocks without headers, each
/// holding certificates (a chain is fine; text around the blocks is ignored).
fn certificate_error(bytes: &[u8]) -> Option<String> {
    use x509_parser::prelude::FromDer;
    if bytes.is_empty() {
        return None;
    }
    let blocks = pem::parse_many(bytes).unwrap_or_default();
    if blocks.is_empty() {
        return Some("must contain at least one CERTIFICATE PEM block".into());
    }
    for b in &blocks {
        if b.tag() != "CERTIFICATE" {
            return Some(format!(
                "only CERTIFICATE PEM blocks are allowed, found {}",
                go_quote(b.tag())
            ));
        }
        if b.headers().iter().next().is_some() {
            return Some("no PEM block headers are permitted".into());
        }
        let mut rest = b.contents();
        let mut n = 0;
        while !rest.is_empty() {
            match x509_parser::certificate::X509Certificate::from_der(rest) {
                Ok((r, _)) => {
                    rest = r;
                    n += 1;
                }
                Err(_) => return Some("x509: malformed certificate".into()),
            }
        }
        if n == 0 {
            return Some("found CERTIFICATE PEM block containing 0 certificates".into());
        }
    }
    None
}

/// kube's `ValidateSignerName`.
fn signer_name_causes(name: &str) -> Vec<Cause> {
    let field = "spec.signerName";
    let invalid = |why: String| {
        Cause::new(
            "FieldValueInvalid",
            field,
            format!("Invalid value: {}: {why}", go_quote(name)),
        )
    };
    if name.is_empty() {
        return vec![Cause::new("FieldValueRequired", field, "Required value")];
    }
    let parts: Vec<&str> = name.split('/').collect();
    let [domain, path] = parts.as_slice() else {
        return vec![invalid(
            "must be a fully qualified domain and path of the form 'example.com/signer-name'"
                .into(),
        )];
    };
    let mut causes = Vec::new();
    if domain.len() > 253 {
        causes.push(Cause::new(
            "FieldValueTooLong",
            field,
            "Too long: may not be more than 253 bytes",
        ));
    }
    let labels: Vec<&str> = domain.split('.').collect();
    for l in &labels {
        if let Some(why) = dns1123_label_error(l) {
            causes.push(invalid(format!("validating label {}: {why}", go_quote(l))));
            break;
        }
    }
    if labels.len() < 2 {
        causes.push(invalid(
            "should be a domain with at least two segments separated by dots".into(),
        ));
    }
    for l in path.split('.') {
        if !meta::is_dns_subdomain(l) {
            causes.push(invalid(format!(
                "validating label {}: {}",
                go_quote(l),
                meta::DNS1123_SUBDOMAIN_MSG
            )));
            break;
        }
    }
    // 253 for the domain, 1 for the '/', 317 for the path.
    if name.len() > 571 {
        causes.push(Cause::new(
            "FieldValueTooLong",
            field,
            "Too long: may not be more than 571 bytes",
        ));
    }
    causes
}

fn dns1123_label_error(l: &str) -> Option<String> {
    if l.len() > 63 {
        return Some("must be no more than 63 characters".into());
    }
    (!meta::is_dns_label(l)).then(|| meta::DNS1123_LABEL_MSG.to_owned())
}

#[cfg(test)]
mod tests;
