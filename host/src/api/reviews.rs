//! Access reviews, answered from the same authorizer that guards every request:
//! SelfSubjectAccessReview, SubjectAccessReview and LocalSubjectAccessReview (`kubectl auth
//! can-i`; the local one asks within one namespace, as a namespace admin may), SelfSubjectRulesReview
//! (`kubectl auth can-i --list`) and SelfSubjectReview (`kubectl auth whoami`). Nothing is stored.

use axum::http::StatusCode;
use axum::response::Response;
use serde_json::{json, Value};

use super::AppState;
use crate::auth::{Attributes, Decision, UserInfo};
use crate::model::{ApiError, ResourceInfo};

fn s(v: &Value, ptr: &str) -> String {
    v.pointer(ptr)
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned()
}

fn attributes(spec: &Value) -> Result<Attributes, ApiError> {
    if let Some(r) = spec.get("resourceAttributes") {
        return Ok(Attributes {
            verb: s(r, "/verb"),
            resource_request: true,
            api_group: s(r, "/group"),
            resource: s(r, "/resource"),
            subresource: s(r, "/subresource"),
            namespace: s(r, "/namespace"),
            name: s(r, "/name"),
            path: String::new(),
        });
    }
    if let Some(n) = spec.get("nonResourceAttributes") {
        return Ok(Attributes {
            verb: s(n, "/verb"),
            resource_request: false,
            api_group: String::new(),
            resource: String::new(),
            subresource: String::new(),
            namespace: String::new(),
            name: String::new(),
            path: s(n, "/path"),
        });
    }
    Err(ApiError::invalid(
        "authorization.k8s.io",
        "SelfSubjectAccessReview",
        "",
        vec![crate::model::Cause::new(
            "FieldValueRequired",
            "spec.resourceAttributes",
            "Required value: exactly one of nonResourceAttributes or resourceAttributes must be specified",
        )],
    ))
}

/// kube's checks of a LocalSubjectAccessReview: a namespace in the URL, `metadata.namespace`
/// that (set from the URL when empty), and a question about that namespace only.
fn local_review(out: &mut Value, spec: &Value, namespace: &str) -> Result<(), ApiError> {
    if namespace.is_empty() {
        return Err(ApiError::bad_request(
            "namespace is required on this type: ",
        ));
    }
    let given = s(out, "/metadata/namespace");
    if !given.is_empty() && given != namespace {
        return Err(ApiError::bad_request(
            "the namespace of the provided object does not match the namespace sent on the request",
        ));
    }
    out["metadata"]["namespace"] = json!(namespace);
    let mut causes = Vec::new();
    if let Some(r) = spec.get("resourceAttributes").filter(|r| !r.is_null()) {
        let asked = s(r, "/namespace");
        if asked != namespace {
            causes.push(crate::model::Cause::new(
                "FieldValueInvalid",
                "spec.resourceAttributes.namespace",
                format!(
                    "Invalid value: {}: must match metadata.namespace",
                    crate::auth::rbac::go_quote(&asked)
                ),
            ));
        }
    }
    if spec
        .get("nonResourceAttributes")
        .is_some_and(|n| !n.is_null())
    {
        causes.push(crate::model::Cause::new(
            "FieldValueInvalid",
            "spec.nonResourceAttributes",
            "Invalid value: \"object\": disallowed on this kind of request",
        ));
    }
    if causes.is_empty() {
        Ok(())
    } else {
        Err(ApiError::invalid(
            "authorization.k8s.io",
            "LocalSubjectAccessReview",
            "",
            causes,
        ))
    }
}

fn access_status(state: &AppState, user: &UserInfo, attrs: &Attributes) -> Value {
    decision_status(state.authz.authorize(user, attrs))
}

/// A review's `status`: kube's `SubjectAccessReviewStatus`, whose `reason` is `omitempty` (a
/// `system:masters` allow has none).
fn decision_status(decision: Decision) -> Value {
    let (allowed, reason) = match decision {
        Decision::Allow { reason } => (true, reason),
        Decision::Deny { reason } => (false, reason),
    };
    let mut st = json!({"allowed": allowed});
    if !reason.is_empty() {
        st["reason"] = json!(reason);
    }
    st
}

/// Answer a review POST by the authenticated `user` (`namespace`: the URL's, for the
/// namespaced LocalSubjectAccessReview).
pub fn handle(
    state: &AppState,
    ri: &ResourceInfo,
    namespace: Option<&str>,
    user: &UserInfo,
    body: Value,
    media: super::negotiation::Media,
) -> Result<Response, ApiError> {
    let mut out = body;
    if !out.is_object() {
        return Err(ApiError::bad_request(
            "the request body must be a JSON object",
        ));
    }
    out["apiVersion"] = json!(ri.api_version());
    out["kind"] = json!(ri.kind);
    if out.get("metadata").is_none_or(|m| !m.is_object()) {
        out["metadata"] = json!({});
    }
    out["metadata"]["creationTimestamp"] = Value::Null;
    let spec = out.get("spec").cloned().unwrap_or_else(|| json!({}));
    let status = match ri.resource.as_str() {
        "selfsubjectaccessreviews" => access_status(state, user, &attributes(&spec)?),
        "subjectaccessreviews" | "localsubjectaccessreviews" => {
            if ri.resource == "localsubjectaccessreviews" {
                local_review(&mut out, &spec, namespace.unwrap_or(""))?;
            }
            if s(&spec, "/user").is_empty()
                && spec
                    .get("groups")
                    .and_then(Value::as_array)
                    .is_none_or(Vec::is_empty)
            {
                return Err(ApiError::invalid(
                    "authorization.k8s.io",
                    &ri.kind,
                    "",
                    vec![crate::model::Cause::new(
                        "FieldValueInvalid",
                        "spec.user",
                        "Invalid value: \"\": at least one of user or group must be specified",
                    )],
                ));
            }
            let mut groups: Vec<String> = spec
                .get("groups")
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(|g| g.as_str().map(str::to_owned))
                        .collect()
                })
                .unwrap_or_default();
            let name = s(&spec, "/user");
            if !name.is_empty() && !groups.iter().any(|g| g == crate::auth::AUTHENTICATED) {
                groups.push(crate::auth::AUTHENTICATED.into());
            }
            let subject = UserInfo {
                name,
                uid: s(&spec, "/uid"),
                groups,
                extra: spec
                    .get("extra")
                    .and_then(|e| serde_json::from_value(e.clone()).ok())
                    .unwrap_or_default(),
            };
            access_status(state, &subject, &attributes(&spec)?)
        }
        "selfsubjectrulesreviews" => {
            let ns = s(&spec, "/namespace");
            let (resource_rules, non_resource_rules, incomplete) = state.authz.rules_for(user, &ns);
            json!({"resourceRules": resource_rules, "nonResourceRules": non_resource_rules, "incomplete": incomplete})
        }
        "selfsubjectreviews" => {
            json!({"userInfo": user.to_json()})
        }
        "tokenreviews" => {
            // Whether the token authenticates here, and as whom (kube's TokenReview).
            // `spec.audiences` (default: the API server's) must meet the token's audiences;
            // `status.audiences` is where they meet (kube's tokenreview REST storage).
            let token = s(&spec, "/token");
            let asked: Vec<String> = spec
                .get("audiences")
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(|x| x.as_str().map(str::to_owned))
                        .collect()
                })
                .filter(|a: &Vec<String>| !a.is_empty())
                .unwrap_or_else(|| vec![crate::auth::serviceaccount::ISSUER.to_owned()]);
            match state.authn.authenticate_for(&token, &asked) {
                Some((u, auds)) => json!({"authenticated": true, "user": u.to_json(),
                                          "audiences": auds}),
                None => json!({"user": {}}),
            }
        }
        _ => return Err(ApiError::path_not_found()),
    };
    out["status"] = status;
    Ok(super::handlers::value_response(
        media,
        StatusCode::CREATED,
        &out,
    ))
}

#[cfg(test)]
mod tests {
    use super::{decision_status, Decision};
    use serde_json::json;

    /// An empty reason is left out, allowed or denied (kube's `reason,omitempty`).
    #[test]
    fn an_empty_reason_is_omitted() {
        let allow = |r: &str| Decision::Allow {
            reason: r.to_owned(),
        };
        let deny = |r: &str| Decision::Deny {
            reason: r.to_owned(),
        };
        assert_eq!(decision_status(allow("")), json!({"allowed": true}));
        assert_eq!(
            decision_status(allow("RBAC: x")),
            json!({"allowed": true, "reason": "RBAC: x"})
        );
        assert_eq!(decision_status(deny("")), json!({"allowed": false}));
        assert_eq!(
            decision_status(deny("no")),
            json!({"allowed": false, "reason": "no"})
        );
    }
}
