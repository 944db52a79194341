//! The Kubernetes `Status` error: every failure a client sees is one of these.

use serde_json::{json, Value};

/// One field-level reason inside a 422 Invalid (or a 409 conflict), as kube reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cause {
    /// `FieldValueRequired`, `FieldValueInvalid`, `FieldValueNotSupported`, ...
    pub reason: String,
    pub message: String,
    pub field: String,
}

impl Cause {
    pub fn new(reason: &str, field: &str, message: impl Into<String>) -> Self {
        Self {
            reason: reason.to_owned(),
            field: field.to_owned(),
            message: message.into(),
        }
    }
}

/// `field: message` (the message alone when no field), as kube joins them into a Status.
impl std::fmt::Display for Cause {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.field.is_empty() {
            f.write_str(&self.message)
        } else {
            write!(f, "{}: {}", self.field, self.message)
        }
    }
}

/// An error answered to a client as a `Status` object with kube's code, reason and message.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{code} {reason}: {message}")]
pub struct ApiError {
    pub code: u16,
    pub reason: &'static str,
    pub message: String,
    /// Populates `details` when set: (group, kind, name).
    pub details: Option<Box<Details>>,
    pub causes: Vec<Cause>,
    /// Seconds for a `Retry-After` header (429, 504).
    pub retry_after: Option<u32>,
    /// A continue token for the Status's `metadata.continue` (an expired list continuation's
    /// fresh one, as kube's storage hands it out).
    pub continue_token: Option<String>,
    /// A `Status` someone else gave, answered as given (an admission webhook's denial, which
    /// kube passes through): when set, [`ApiError::to_status`] writes its fields with this
    /// error's `message`, in place of `reason`, `details`, `causes` and `retry_after` above.
    pub passed: Option<Box<PassedStatus>>,
    /// Answered as kube's timeout filter (`WithTimeoutForNonLongRunningRequests`) writes its 504
    /// once a request's deadline has passed: the bare `metav1.Status` (no `kind`, no
    /// `apiVersion`) with no content type of its own, so Go's server sniffs one
    /// (`text/plain; charset=utf-8`). See [`ApiError::deadline_passed`].
    pub timeout_filter: bool,
}

/// What a `Status` given by someone else carries beyond its message, kept as given: kube's
/// `webhookerrors.ToStatusErr` returns an admission webhook's own `result` with only its message
/// prefixed (and a code under 400, or an empty or `Success` status, put right).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PassedStatus {
    /// `metadata`: the `ListMeta` fields given (`selfLink`, `resourceVersion`, `continue`,
    /// `remainingItemCount`).
    pub metadata: serde_json::Map<String, Value>,
    /// `status`: `Failure`, or the other value given (kube writes it as it is).
    pub status: String,
    /// `reason`: any text (kube's `StatusReason` is a string; none when empty).
    pub reason: String,
    /// `details`: the `StatusDetails` fields given, when `details` was given.
    pub details: Option<Value>,
    /// `code` in the body: the one given, at least 400. The answer's HTTP status is
    /// [`ApiError::code`] (500 for a code Go's `WriteHeader` refuses: `api/error.rs`).
    pub code: i64,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Details {
    pub group: String,
    /// The resource (plural) for most errors, the Kind for Invalid, as kube does.
    pub kind: String,
    pub name: String,
    pub uid: Option<String>,
}

/// The most causes a 422 reports, and the most bytes of them (see [`ApiError::invalid`]).
pub const MAX_CAUSES: usize = 1000;
pub const MAX_CAUSE_BYTES: usize = 1 << 20;

impl ApiError {
    pub fn new(code: u16, reason: &'static str, message: impl Into<String>) -> Self {
        Self {
            code,
            reason,
            message: message.into(),
            details: None,
            causes: Vec::new(),
            retry_after: None,
            continue_token: None,
            passed: None,
            timeout_filter: false,
        }
    }

    pub fn with_details(mut self, group: &str, kind: &str, name: &str) -> Self {
        self.details = Some(Box::new(Details {
            group: group.to_owned(),
            kind: kind.to_owned(),
            name: name.to_owned(),
            uid: None,
        }));
        self
    }

    pub fn with_causes(mut self, causes: Vec<Cause>) -> Self {
        self.causes = causes;
        self
    }

    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(400, "BadRequest", message)
    }

    /// `configmaps "foo" not found`
    pub fn not_found(group: &str, resource: &str, name: &str) -> Self {
        let message = if group.is_empty() {
            format!("{resource} \"{name}\" not found")
        } else {
            format!("{resource}.{group} \"{name}\" not found")
        };
        Self::new(404, "NotFound", message).with_details(group, resource, name)
    }

    /// A path that names no resource at all: kube's `NewGenericServerResponse(404)`, whose
    /// `details` is present and empty (`"details":{}`); kubectl reads `details.name` of such a
    /// 404 (`kubectl debug` without the `ephemeralcontainers` subresource) and crashes on none.
    pub fn path_not_found() -> Self {
        let mut e = Self::new(
            404,
            "NotFound",
            "the server could not find the requested resource",
        );
        e.details = Some(Box::default());
        e
    }

    /// kube's `NewGenericServerResponse(http.StatusUnprocessableEntity, "", GroupResource{},
    /// "", serverMessage, 0, false)`: its fixed message (the server's words go nowhere: no
    /// causes when the response is not unexpected), reason `Invalid`, and `details` present
    /// and empty (`"details":{}`), as kube answers a JSON patch that does not apply.
    pub fn unprocessable() -> Self {
        let mut e = Self::new(
            422,
            "Invalid",
            "the server rejected our request due to an error in our request",
        );
        e.details = Some(Box::default());
        e
    }

    pub fn already_exists(group: &str, resource: &str, name: &str) -> Self {
        let gr = qualified(group, resource);
        Self::new(
            409,
            "AlreadyExists",
            format!("{gr} \"{name}\" already exists"),
        )
        .with_details(group, resource, name)
    }

    /// kube's optimistic-concurrency failure.
    pub fn conflict(group: &str, resource: &str, name: &str) -> Self {
        let gr = qualified(group, resource);
        Self::new(
            409,
            "Conflict",
            format!(
                "Operation cannot be fulfilled on {gr} \"{name}\": the object has been modified; \
                 please apply your changes to the latest version and try again"
            ),
        )
        .with_details(group, resource, name)
    }

    pub fn conflict_message(group: &str, resource: &str, name: &str, why: &str) -> Self {
        let gr = qualified(group, resource);
        Self::new(
            409,
            "Conflict",
            format!("Operation cannot be fulfilled on {gr} \"{name}\": {why}"),
        )
        .with_details(group, resource, name)
    }

    /// 422 with one cause per violation: `ConfigMap "x" is invalid: [a, b]`. At most
    /// [`MAX_CAUSES`] causes, and [`MAX_CAUSE_BYTES`] of them, are reported (kube reports all:
    /// a 3 MB Service of a million empty ports made a 1 GB answer here); past them, one more
    /// cause says how many were left out.
    pub fn invalid(group: &str, kind: &str, name: &str, mut causes: Vec<Cause>) -> Self {
        let mut bytes = 0usize;
        let kept = causes
            .iter()
            .take(MAX_CAUSES)
            .take_while(|c| {
                bytes = bytes.saturating_add(c.field.len() + c.message.len());
                bytes <= MAX_CAUSE_BYTES
            })
            .count()
            .max(1);
        if causes.len() > kept {
            let left = causes.len() - kept;
            causes.truncate(kept);
            causes.push(Cause::new(
                "",
                "",
                format!("{left} more errors were left out"),
            ));
        }
        // kube's `ToAggregate` drops repeated messages (the causes keep every one).
        let mut parts: Vec<String> = Vec::with_capacity(causes.len());
        let mut seen = std::collections::HashSet::with_capacity(causes.len());
        for c in &causes {
            let m = c.to_string();
            if seen.insert(m.clone()) {
                parts.push(m);
            }
        }
        let joined = if parts.len() == 1 {
            parts[0].clone()
        } else {
            format!("[{}]", parts.join(", "))
        };
        // kube's `NewInvalid` names the kind with its group (`Deployment.apps`); kubectl
        // prints `details.kind` instead.
        let qualified = if group.is_empty() {
            kind.to_owned()
        } else {
            format!("{kind}.{group}")
        };
        let mut e = Self::new(
            422,
            "Invalid",
            format!("{qualified} \"{name}\" is invalid: {joined}"),
        )
        .with_details(group, kind, name);
        e.causes = causes;
        e
    }

    pub fn method_not_allowed(message: impl Into<String>) -> Self {
        Self::new(405, "MethodNotAllowed", message)
    }

    pub fn forbidden(message: impl Into<String>) -> Self {
        Self::new(403, "Forbidden", message)
    }

    /// `too old resource version: 12 (345)`
    pub fn expired(message: impl Into<String>) -> Self {
        Self::new(410, "Expired", message)
    }

    pub fn too_large(message: impl Into<String>) -> Self {
        Self::new(413, "RequestEntityTooLarge", message)
    }

    pub fn unsupported_media_type(message: impl Into<String>) -> Self {
        Self::new(415, "UnsupportedMediaType", message)
    }

    pub fn not_acceptable(message: impl Into<String>) -> Self {
        Self::new(406, "NotAcceptable", message)
    }

    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(500, "InternalError", message)
    }

    pub fn timeout(message: impl Into<String>) -> Self {
        let mut e = Self::new(504, "Timeout", message);
        e.retry_after = Some(1);
        e
    }

    /// What the client of a request whose deadline (`?timeout=`, at most `--request-timeout`)
    /// has passed is answered: kube's timeout filter's
    /// `NewTimeoutError("request did not complete within the allotted timeout", 0)`, 504 with
    /// empty `details` and no `Retry-After`, written as that filter writes it
    /// ([`ApiError::timeout_filter`]).
    pub fn deadline_passed() -> Self {
        let mut e = Self::new(
            504,
            "Timeout",
            "Timeout: request did not complete within the allotted timeout",
        );
        e.details = Some(Box::default());
        e.timeout_filter = true;
        e
    }

    pub fn too_many_requests(message: impl Into<String>) -> Self {
        let mut e = Self::new(429, "TooManyRequests", message);
        e.retry_after = Some(1);
        e
    }

    /// The `Status` object as kube serializes it: fields in the order of kube's `Status` and
    /// `StatusDetails` structs.
    pub fn to_status(&self) -> Value {
        if let Some(p) = &self.passed {
            return self.passed_status(p);
        }
        let mut status = serde_json::Map::new();
        if !self.timeout_filter {
            status.insert("kind".into(), "Status".into());
            status.insert("apiVersion".into(), "v1".into());
        }
        let metadata = match &self.continue_token {
            Some(t) => json!({"continue": t}),
            None => json!({}),
        };
        status.insert("metadata".into(), metadata);
        status.insert("status".into(), "Failure".into());
        status.insert("message".into(), self.message.clone().into());
        // kube omits an empty reason (the eviction's 500 has none).
        if !self.reason.is_empty() {
            status.insert("reason".into(), self.reason.into());
        }
        if self.details.is_some() || !self.causes.is_empty() || self.retry_after.is_some() {
            let mut details = serde_json::Map::new();
            if let Some(d) = &self.details {
                if !d.name.is_empty() {
                    details.insert("name".into(), d.name.clone().into());
                }
                if !d.group.is_empty() {
                    details.insert("group".into(), d.group.clone().into());
                }
                if !d.kind.is_empty() {
                    details.insert("kind".into(), d.kind.clone().into());
                }
                if let Some(uid) = &d.uid {
                    details.insert("uid".into(), uid.clone().into());
                }
            }
            if !self.causes.is_empty() {
                let causes: Vec<Value> = self
                    .causes
                    .iter()
                    .map(|c| {
                        // `reason` and `field` are omitted when empty, as kube's `StatusCause`
                        // omits them.
                        let mut m = serde_json::Map::new();
                        if !c.reason.is_empty() {
                            m.insert("reason".into(), json!(c.reason));
                        }
                        m.insert("message".into(), json!(c.message));
                        if !c.field.is_empty() {
                            m.insert("field".into(), json!(c.field));
                        }
                        Value::Object(m)
                    })
                    .collect();
                details.insert("causes".into(), causes.into());
            }
            if let Some(s) = self.retry_after {
                details.insert("retryAfterSeconds".into(), s.into());
            }
            status.insert("details".into(), Value::Object(details));
        }
        status.insert("code".into(), self.code.into());
        Value::Object(status)
    }
}

impl ApiError {
    /// A passed-through `Status` as kube writes it: `metav1.Status`'s fields in its order, each
    /// left out when empty as its `omitempty` does (`metadata` is always there).
    fn passed_status(&self, p: &PassedStatus) -> Value {
        let mut status = serde_json::Map::new();
        status.insert("kind".into(), "Status".into());
        status.insert("apiVersion".into(), "v1".into());
        status.insert("metadata".into(), Value::Object(p.metadata.clone()));
        if !p.status.is_empty() {
            status.insert("status".into(), p.status.clone().into());
        }
        if !self.message.is_empty() {
            status.insert("message".into(), self.message.clone().into());
        }
        if !p.reason.is_empty() {
            status.insert("reason".into(), p.reason.clone().into());
        }
        if let Some(d) = &p.details {
            status.insert("details".into(), d.clone());
        }
        if p.code != 0 {
            status.insert("code".into(), p.code.into());
        }
        Value::Object(status)
    }
}

fn qualified(group: &str, resource: &str) -> String {
    if group.is_empty() {
        resource.to_owned()
    } else {
        format!("{resource}.{group}")
    }
}

/// A `Status` of success, as DELETE answers when the object is gone.
pub fn success_status(group: &str, kind_plural: &str, name: &str, uid: &str) -> Value {
    let mut details = serde_json::Map::new();
    details.insert("name".into(), name.into());
    if !group.is_empty() {
        details.insert("group".into(), group.into());
    }
    details.insert("kind".into(), kind_plural.into());
    details.insert("uid".into(), uid.into());
    json!({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "details": details,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn invalid_reports_a_bounded_number_of_causes() {
        let many: Vec<Cause> = (0..5000)
            .map(|i| {
                Cause::new(
                    "FieldValueRequired",
                    &format!("spec.ports[{i}].name"),
                    "Required value",
                )
            })
            .collect();
        let e = ApiError::invalid("", "Service", "s", many);
        assert_eq!(e.causes.len(), MAX_CAUSES + 1);
        assert_eq!(
            e.causes[MAX_CAUSES].message,
            "4000 more errors were left out"
        );
        assert!(
            e.message.ends_with(", 4000 more errors were left out]"),
            "{}",
            &e.message[e.message.len() - 80..]
        );
        // Long causes are bounded by their bytes too.
        let long: Vec<Cause> = (0..100)
            .map(|_| Cause::new("FieldValueInvalid", "x", "v".repeat(100_000)))
            .collect();
        let e = ApiError::invalid("", "ConfigMap", "c", long);
        assert_eq!(e.causes.len(), 11);
        assert_eq!(e.causes[10].message, "90 more errors were left out");
    }

    #[test]
    fn path_not_found_has_empty_details_as_kube() {
        let s = ApiError::path_not_found().to_status();
        assert_eq!(s["details"], json!({}));
        assert_eq!(
            s["message"],
            "the server could not find the requested resource"
        );
    }

    #[test]
    fn not_found_message_matches_kube() {
        let e = ApiError::not_found("", "configmaps", "x");
        assert_eq!(e.message, "configmaps \"x\" not found");
        let s = e.to_status();
        assert_eq!(s["code"], 404);
        assert_eq!(s["reason"], "NotFound");
        assert_eq!(s["details"]["kind"], "configmaps");
        let e = ApiError::not_found("coordination.k8s.io", "leases", "l");
        assert_eq!(e.message, "leases.coordination.k8s.io \"l\" not found");
    }

    #[test]
    fn invalid_lists_every_cause() {
        let e = ApiError::invalid(
            "",
            "ConfigMap",
            "x",
            vec![
                Cause::new("FieldValueRequired", "a", "Required value"),
                Cause::new("FieldValueInvalid", "b", "Invalid value"),
            ],
        );
        assert_eq!(
            e.message,
            "ConfigMap \"x\" is invalid: [a: Required value, b: Invalid value]"
        );
        assert_eq!(
            e.to_status()["details"]["causes"].as_array().map(Vec::len),
            Some(2)
        );
    }

    /// kube's timeout filter writes `NewTimeoutError(msg, 0)`'s bare `metav1.Status`: no type
    /// meta, `details: {}` (a zero `retryAfterSeconds` is left out), field order as Go's.
    #[test]
    fn the_timeout_filters_status_is_bare() {
        let e = ApiError::deadline_passed();
        assert_eq!(e.code, 504);
        assert_eq!(e.retry_after, None);
        assert_eq!(
            e.to_status().to_string(),
            r#"{"metadata":{},"status":"Failure","message":"Timeout: request did not complete within the allotted timeout","reason":"Timeout","details":{},"code":504}"#
        );
    }
}
