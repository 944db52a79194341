//! CRD conversion webhooks (kube's apiextensions-apiserver `conversion/webhook_converter.go`):
//! a custom resource whose CRD has `spec.conversion.strategy: Webhook` is converted between its
//! stored version and the version a client reads or writes by POSTing a `ConversionReview` to
//! the CRD's webhook (`clientConfig.url`, or a `service` resolved to a ready endpoint, trusting
//! `caBundle`), one review for every object of a read, list or watch event.
//!
//! The answer is checked as kube checks it: the request's `uid`, `result.status: Success`, one
//! converted object per object sent, each of the desired `apiVersion` and the same `kind`; of a
//! converted object's metadata only `labels` and `annotations` are taken (kube's
//! `restoreObjectMeta`), the rest stays as stored.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use serde_json::{json, Value};

use crate::admission::hook_client::{HookClient, HookClientError};
use crate::model::{ApiError, Cause};
use crate::store::Store;

/// kube's webhook converter gives a webhook 30 s.
const TIMEOUT: Duration = Duration::from_secs(30);
/// Largest ConversionReview answer read (a list's worth of objects).
const MAX_RESPONSE_BYTES: usize = 64 * 1024 * 1024;
/// The most objects sent in one ConversionReview (a longer list is sent in several).
pub const REVIEW_CHUNK: usize = 500;
/// The `conversionReviewVersions` this host speaks, in its order of preference.
pub const REVIEW_VERSIONS: [&str; 2] = ["v1", "v1beta1"];

/// A CRD's `spec.conversion.webhook`.
#[derive(Debug, Clone, PartialEq)]
pub struct Webhook {
    /// `clientConfig`: `url` or `service` (namespace, name, path, port), and `caBundle`.
    pub client_config: Value,
    /// The ConversionReview version to send: the first of the CRD's `conversionReviewVersions`
    /// this host speaks.
    pub review_version: &'static str,
}

impl Webhook {
    /// The webhook of a CRD object, when its conversion strategy is `Webhook`.
    pub fn of(crd: &Value) -> Option<Arc<Webhook>> {
        let conv = crd.pointer("/spec/conversion")?;
        if conv.get("strategy").and_then(Value::as_str) != Some("Webhook") {
            return None;
        }
        let hook = conv.get("webhook")?;
        let wanted: Vec<&str> = hook
            .get("conversionReviewVersions")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        let review_version = wanted
            .iter()
            .find_map(|w| REVIEW_VERSIONS.iter().find(|v| *v == w))
            .copied()?;
        Some(Arc::new(Webhook {
            client_config: hook.get("clientConfig").cloned().unwrap_or(Value::Null),
            review_version,
        }))
    }
}

/// kube's `validateCustomResourceConversion` of a CRD's `spec.conversion` (reported with kube's
/// internal paths: `spec.conversion.webhookClientConfig...`, `spec.conversion.conversionReviewVersions`).
pub fn validate(crd: &Value) -> Vec<Cause> {
    use crate::builtin::validation::field;
    let mut out = Vec::new();
    let Some(conv) = crd.pointer("/spec/conversion") else {
        return out;
    };
    let path = "spec.conversion";
    let strategy = conv.get("strategy").and_then(Value::as_str).unwrap_or("");
    match strategy {
        "" => out.push(field::required("spec.conversion.strategy", "")),
        "None" | "Webhook" => {}
        other => out.push(field::not_supported(
            "spec.conversion.strategy",
            &json!(other),
            &["None", "Webhook"],
        )),
    }
    let hook = conv.get("webhook").filter(|h| !h.is_null());
    let cc = hook
        .and_then(|h| h.get("clientConfig"))
        .filter(|c| !c.is_null());
    let versions: Vec<&Value> = hook
        .and_then(|h| h.get("conversionReviewVersions"))
        .and_then(Value::as_array)
        .map(|a| a.iter().collect())
        .unwrap_or_default();
    let cc_path = format!("{path}.webhookClientConfig");
    let versions_path = format!("{path}.conversionReviewVersions");
    if strategy != "Webhook" {
        if cc.is_some() {
            out.push(field::forbidden(
                &cc_path,
                "should not be set when strategy is not set to Webhook",
            ));
        }
        if !versions.is_empty() {
            out.push(field::forbidden(
                &versions_path,
                "should not be set when strategy is not set to Webhook",
            ));
        }
        return out;
    }
    if crd
        .pointer("/spec/preserveUnknownFields")
        .and_then(Value::as_bool)
        == Some(true)
    {
        out.push(field::invalid(
            "spec.conversion.strategy",
            &json!(strategy),
            "must be None if spec.preserveUnknownFields is true",
        ));
    }
    match cc {
        None => out.push(field::required(
            &cc_path,
            "required when strategy is set to Webhook",
        )),
        Some(cc) => {
            let url = cc.get("url").and_then(Value::as_str);
            let svc = cc.get("service").filter(|s| !s.is_null());
            match (url, svc) {
                (Some(_), Some(_)) | (None, None) => out.push(field::required(
                    &cc_path,
                    "exactly one of url or service is required",
                )),
                (Some(u), None) => webhook_url(&format!("{cc_path}.url"), u, &mut out),
                (None, Some(s)) => webhook_service(&format!("{cc_path}.service"), s, &mut out),
            }
        }
    }
    if versions.is_empty() {
        out.push(field::required(&versions_path, ""));
    } else {
        let mut seen = std::collections::HashSet::new();
        let mut accepted = false;
        for (i, v) in versions.iter().enumerate() {
            let v = v.as_str().unwrap_or("");
            let p = field::index(&versions_path, i);
            if !seen.insert(v) {
                out.push(field::invalid_str(&p, v, "duplicate version"));
                continue;
            }
            for msg in field::dns1035_label(v) {
                out.push(field::invalid_str(&p, v, &msg));
            }
            accepted |= REVIEW_VERSIONS.contains(&v);
        }
        if !accepted {
            let list = Value::Array(versions.iter().map(|v| (*v).clone()).collect());
            out.push(field::invalid(
                &versions_path,
                &list,
                "must include at least one of v1, v1beta1",
            ));
        }
    }
    out
}

/// kube's `webhook.ValidateWebhookURL` with https required.
fn webhook_url(path: &str, url: &str, out: &mut Vec<Cause>) {
    use crate::builtin::validation::field;
    const FORM: &str = "; desired format: https://host[/path]";
    let (scheme, rest) = url.split_once("://").unwrap_or(("", url));
    let (rest, fragment) = rest.split_once('#').unwrap_or((rest, ""));
    let (rest, query) = rest.split_once('?').unwrap_or((rest, ""));
    let authority = rest.split('/').next().unwrap_or("");
    let (user, host) = match authority.rsplit_once('@') {
        Some((u, h)) => (Some(u), h),
        None => (None, authority),
    };
    if scheme != "https" {
        out.push(field::invalid_str(
            path,
            scheme,
            &format!("'https' is the only allowed URL scheme{FORM}"),
        ));
    }
    if host.is_empty() || url.split_once("://").is_none() {
        out.push(field::invalid_str(
            path,
            "",
            &format!("host must be specified{FORM}"),
        ));
    }
    if let Some(u) = user {
        out.push(field::invalid_str(
            path,
            u,
            "user information is not permitted in the URL",
        ));
    }
    if !fragment.is_empty() {
        out.push(field::invalid_str(
            path,
            fragment,
            "fragments are not permitted in the URL",
        ));
    }
    if !query.is_empty() {
        out.push(field::invalid_str(
            path,
            query,
            "query parameters are not permitted in the URL",
        ));
    }
}

/// kube's `webhook.ValidateWebhookService`.
fn webhook_service(path: &str, svc: &Value, out: &mut Vec<Cause>) {
    use crate::builtin::validation::field;
    if field::str_of(svc, "name").is_empty() {
        out.push(field::required(
            &field::child(path, "name"),
            "service name is required",
        ));
    }
    if field::str_of(svc, "namespace").is_empty() {
        out.push(field::required(
            &field::child(path, "namespace"),
            "service namespace is required",
        ));
    }
    let port = svc.get("port").and_then(Value::as_i64).unwrap_or(443);
    let errs = field::port_num(port);
    if !errs.is_empty() {
        out.push(field::invalid(
            &field::child(path, "port"),
            &json!(port),
            &format!("port is not valid: {}", errs.join(", ")),
        ));
    }
    let Some(url_path) = svc.get("path").and_then(Value::as_str) else {
        return;
    };
    let pp = field::child(path, "path");
    if url_path.is_empty() || url_path == "/" {
        return;
    }
    if url_path == "//" {
        out.push(field::invalid_str(
            &pp,
            url_path,
            "segment[0] may not be empty",
        ));
        return;
    }
    if !url_path.starts_with('/') {
        out.push(field::invalid_str(&pp, url_path, "must start with a '/'"));
    }
    let check = url_path.get(1..).unwrap_or("");
    let check = check.strip_suffix('/').unwrap_or(check);
    for (i, step) in check.split('/').enumerate() {
        if step.is_empty() {
            out.push(field::invalid_str(
                &pp,
                url_path,
                &format!("segment[{i}] may not be empty"),
            ));
            continue;
        }
        for failure in field::dns1123_subdomain(step) {
            out.push(field::invalid_str(
                &pp,
                url_path,
                &format!("segment[{i}]: {failure}"),
            ));
        }
    }
}

fn client() -> &'static HookClient {
    static CLIENT: OnceLock<HookClient> = OnceLock::new();
    CLIENT.get_or_init(HookClient::default)
}

/// Convert `objects` (each a whole object, of kind `kind`) to `desired` (`group/version`) with
/// the webhook: the converted objects, in order. `gvk` names the conversion in errors as kube
/// does (`stable.example.com/v2, Kind=CronTab`).
pub async fn convert(
    store: &dyn Store,
    hook: &Webhook,
    desired: &str,
    kind: &str,
    objects: Vec<Value>,
) -> Result<Vec<Value>, ApiError> {
    if objects.is_empty() {
        return Ok(objects);
    }
    // kube names the conversion by what it converts (the stored version): Go's
    // `GroupVersionKind.String()`.
    let gvk = {
        let source = objects
            .first()
            .and_then(|o| o.get("apiVersion"))
            .and_then(Value::as_str)
            .unwrap_or("");
        let (group, version) = source.split_once('/').unwrap_or(("", source));
        format!("{group}/{version}, Kind={kind}")
    };
    // kube answers a conversion's error as a plain error: 500, no reason.
    let error = |message: String| ApiError::new(500, "", message);
    let failed = |why: String| error(format!("conversion webhook for {gvk} failed: {why}"));
    let cc = &hook.client_config;
    let ca = cc.get("caBundle").and_then(Value::as_str).unwrap_or("");
    let (configured, service) =
        crate::admission::webhook::client_target(cc).map_err(|e| failed(e.to_string()))?;
    // As client-go's request names it: kube's webhook client config has a 30 s timeout
    // (`setGlobalDefaults`), which every request carries in its query.
    let url = crate::admission::webhook::call_url(&configured, TIMEOUT.as_secs());
    // kube's service resolver runs as the call dials: its error is the call's.
    let resolve = match service {
        Some(svc) => Some(
            svc.resolve(store)
                .map_err(|e| failed(format!("Post \"{url}\": {e}")))?,
        ),
        None => None,
    };
    let uid = uuid::Uuid::new_v4().to_string();
    let review = json!({
        "kind": "ConversionReview",
        "apiVersion": format!("apiextensions.k8s.io/{}", hook.review_version),
        "request": {"uid": uid, "desiredAPIVersion": desired, "objects": objects},
    });
    let body = serde_json::to_vec(&review).map_err(|e| failed(e.to_string()))?;
    let answer = tokio::time::timeout(
        TIMEOUT,
        client().post(ca, &url, resolve, body, MAX_RESPONSE_BYTES),
    )
    .await
    .map_err(|_| failed(format!("Post \"{url}\": context deadline exceeded")))?
    .map_err(|e| match e {
        HookClientError::Config(m) => failed(m),
        e => failed(e.to_string()),
    })?;
    if !(200..300).contains(&answer.status) {
        return Err(failed(format!(
            "the server responded with the status code {}",
            answer.status
        )));
    }
    let answer: Value = serde_json::from_slice(&answer.body)
        .map_err(|e| failed(format!("unmarshal ConversionReview response: {e}")))?;
    let response = answer
        .get("response")
        .filter(|r| r.is_object())
        .ok_or_else(|| failed("no response provided".into()))?;
    let got_uid = response.get("uid").and_then(Value::as_str).unwrap_or("");
    // kube checks the uid of v1 answers only.
    if hook.review_version == "v1" && got_uid != uid {
        return Err(failed(format!(
            "expected response.uid=\"{uid}\", got \"{got_uid}\""
        )));
    }
    let status = response
        .pointer("/result/status")
        .and_then(Value::as_str)
        .unwrap_or("");
    if status != "Success" {
        let message = response
            .pointer("/result/message")
            .and_then(Value::as_str)
            .unwrap_or("");
        return Err(failed(if message.is_empty() {
            format!("response.result.status was '{status}', not 'Success'")
        } else {
            message.to_owned()
        }));
    }
    let converted = response
        .get("convertedObjects")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    if converted.len() != objects.len() {
        return Err(error(format!(
            "conversion webhook for {gvk} returned {} objects, expected {}",
            converted.len(),
            objects.len()
        )));
    }
    let mut out = Vec::with_capacity(objects.len());
    for (i, (original, c)) in objects.into_iter().zip(converted).enumerate() {
        out.push(
            restore(i, original, c, desired, kind)
                .map_err(|why| error(format!("conversion webhook for {gvk} returned {why}")))?,
        );
    }
    Ok(out)
}

/// One converted object as kube takes it (`validateConvertedObject`, `restoreObjectMeta`):
/// of the desired `apiVersion`, the same `kind`, name, namespace and uid, with the original's
/// metadata but the converted `labels` and `annotations`, validated when they changed. The
/// error is what follows "conversion webhook for GVK returned".
fn restore(
    i: usize,
    original: Value,
    converted: &Value,
    desired: &str,
    kind: &str,
) -> Result<Value, String> {
    let at = format!("invalid converted object at index {i}");
    let Some(c) = converted.as_object() else {
        return Err(format!("{at}: not an object"));
    };
    let api_version = c.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    if api_version != desired {
        return Err(format!(
            "{at}: invalid groupVersion (expected {desired}, received {api_version})"
        ));
    }
    let got_kind = c.get("kind").and_then(Value::as_str).unwrap_or("");
    if got_kind != kind {
        return Err(format!(
            "{at}: invalid kind (expected {kind}, received {got_kind})"
        ));
    }
    let meta_str = |v: &Value, k: &str| {
        v.pointer(&format!("/metadata/{k}"))
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned()
    };
    for (k, what) in [("name", "name"), ("namespace", "namespace"), ("uid", "UID")] {
        let (e, a) = (meta_str(&original, k), meta_str(converted, k));
        if e != a {
            return Err(format!("{at}: must have the same {what}: {e} != {a}"));
        }
    }
    let bad_meta = format!("invalid metadata in object at index {i}");
    let converted_meta = match c.get("metadata") {
        None => return Err(format!("{bad_meta}: missing metadata in converted object")),
        Some(Value::Object(m)) => m.clone(),
        Some(_) => {
            return Err(format!(
                "{bad_meta}: invalid metadata of type {} in converted object",
                crate::schema::objectmeta::go_type_name(&c["metadata"])
            ))
        }
    };
    let mut meta = original
        .get("metadata")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    for field in ["labels", "annotations"] {
        let Some(v) = converted_meta.get(field).filter(|v| !v.is_null()) else {
            meta.remove(field);
            continue;
        };
        let Some(m) = v.as_object() else {
            return Err(format!(
                "{bad_meta}: invalid metadata.{field} of type {} in converted object",
                crate::schema::objectmeta::go_type_name(v)
            ));
        };
        if let Some((k, v)) = m.iter().find(|(_, v)| !v.is_string()) {
            return Err(format!(
                "{bad_meta}: metadata.{field}[{k}] must be a string, but is {} in converted object",
                crate::schema::objectmeta::go_type_name(v)
            ));
        }
        if meta.get(field) != Some(v) {
            let errs = if field == "labels" {
                let mut out = Vec::new();
                crate::builtin::validation::field::labels(Some(v), "metadata.labels", &mut out);
                out
            } else {
                // kube's `ValidateAnnotations` here names the field `metadata.annotation`.
                let whole = json!({"metadata": {"annotations": v}});
                crate::model::meta::validate_common(&whole)
                    .into_iter()
                    .map(|mut c| {
                        c.field =
                            c.field
                                .replacen("metadata.annotations", "metadata.annotation", 1);
                        c
                    })
                    .collect()
            };
            if !errs.is_empty() {
                let msgs: Vec<String> = errs.iter().map(ToString::to_string).collect();
                return Err(format!(
                    "{bad_meta}: {}",
                    if msgs.len() == 1 {
                        msgs.join("")
                    } else {
                        format!("[{}]", msgs.join(", "))
                    }
                ));
            }
        }
        meta.insert(field.into(), v.clone());
    }
    let mut out = c.clone();
    out.insert("metadata".into(), Value::Object(meta));
    Ok(Value::Object(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_webhook_of_a_crd() {
        let crd = json!({"spec": {"conversion": {"strategy": "Webhook", "webhook": {
            "conversionReviewVersions": ["v2", "v1beta1", "v1"],
            "clientConfig": {"url": "https://conv.example.com/convert"}}}}});
        let hook = Webhook::of(&crd).unwrap();
        assert_eq!(hook.review_version, "v1beta1");
        assert_eq!(
            hook.client_config["url"],
            "https://conv.example.com/convert"
        );
        assert!(Webhook::of(&json!({"spec": {"conversion": {"strategy": "None"}}})).is_none());
    }

    #[test]
    fn converted_objects_keep_their_metadata_but_labels_and_annotations() {
        let original = json!({"apiVersion": "x.io/v1", "kind": "W", "metadata": {"name": "a",
            "uid": "u", "resourceVersion": "7", "labels": {"a": "1"}}, "spec": {"size": 1}});
        let converted = json!({"apiVersion": "x.io/v2", "kind": "W", "metadata": {"name": "a",
            "uid": "u", "resourceVersion": "8", "labels": {"b": "2"}, "annotations": {"n": "x"}},
            "spec": {"replicas": 1}});
        let got = restore(0, original.clone(), &converted, "x.io/v2", "W").unwrap();
        assert_eq!(got["metadata"]["name"], "a");
        assert_eq!(got["metadata"]["resourceVersion"], "7");
        assert_eq!(got["metadata"]["labels"], json!({"b": "2"}));
        assert_eq!(got["metadata"]["annotations"], json!({"n": "x"}));
        assert_eq!(got["spec"], json!({"replicas": 1}));
        let e = restore(3, original.clone(), &converted, "x.io/v3", "W").unwrap_err();
        assert_eq!(
            e,
            "invalid converted object at index 3: invalid groupVersion (expected x.io/v3, received x.io/v2)"
        );
        let mut renamed = converted.clone();
        renamed["metadata"]["name"] = json!("b");
        let e = restore(0, original.clone(), &renamed, "x.io/v2", "W").unwrap_err();
        assert_eq!(
            e,
            "invalid converted object at index 0: must have the same name: a != b"
        );
        let mut bare = converted.clone();
        bare.as_object_mut().unwrap().remove("metadata");
        // As kube: the identity check comes first, so a missing `metadata` shows as a new name.
        let e = restore(0, original.clone(), &bare, "x.io/v2", "W").unwrap_err();
        assert!(e.ends_with("must have the same name: a != "), "{e}");
        let mut bad = converted.clone();
        bad["metadata"]["labels"] = json!({"a b": "c"});
        let e = restore(0, original.clone(), &bad, "x.io/v2", "W").unwrap_err();
        assert!(e.contains("metadata.labels: Invalid value: \"a b\""), "{e}");
        let e = restore(
            0,
            original,
            &json!({"apiVersion": "x.io/v2", "kind": "V"}),
            "x.io/v2",
            "W",
        )
        .unwrap_err();
        assert!(e.contains("invalid kind (expected W, received V)"), "{e}");
    }
}
