//! The front door of every request: authenticate the bearer token, apply impersonation, and
//! authorize the request's attributes with RBAC. Health and version endpoints stay open.
//! The request is parsed once, here, into a [`RequestInfo`] that every later step reads.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{header, HeaderMap};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::connections::ConnectionGate;
use super::request_info::RequestInfo;
use super::AppState;
use crate::auth::rbac::forbidden_message;
use crate::auth::{Attributes, Decision, Principal, UserInfo, AUTHENTICATED};
use crate::model::ApiError;

/// Paths anyone may read, as kube's `system:public-info-viewer` allows.
const OPEN: &[&str] = &["/healthz", "/livez", "/readyz", "/version"];

fn unauthorized() -> ApiError {
    ApiError::new(401, "Unauthorized", "Unauthorized")
}

/// 403 with kube's message and details.
pub fn forbidden(user: &UserInfo, attrs: &Attributes) -> ApiError {
    let mut e = ApiError::forbidden(forbidden_message(user, attrs));
    if attrs.resource_request {
        e = e.with_details(&attrs.api_group, &attrs.resource, &attrs.name);
    }
    e
}

fn bearer(headers: &HeaderMap) -> Option<&str> {
    let v = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = v.split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then(|| token.trim())
        .filter(|t| !t.is_empty())
}

fn impersonation_attrs(resource: &str, name: &str) -> Attributes {
    Attributes {
        verb: "impersonate".into(),
        resource_request: true,
        api_group: String::new(),
        resource: resource.into(),
        subresource: String::new(),
        namespace: String::new(),
        name: name.into(),
        path: String::new(),
    }
}

/// `Impersonate-User` / `Impersonate-Group`: act as someone else if allowed to impersonate them.
fn impersonate(
    state: &AppState,
    user: UserInfo,
    headers: &HeaderMap,
) -> Result<UserInfo, ApiError> {
    let Some(target) = headers
        .get("impersonate-user")
        .and_then(|v| v.to_str().ok())
        .filter(|s| !s.is_empty())
    else {
        if headers.contains_key("impersonate-group") {
            return Err(ApiError::bad_request(
                "requested impersonation of groups without impersonating a user",
            ));
        }
        return Ok(user);
    };
    let groups: Vec<String> = headers
        .get_all("impersonate-group")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .map(str::to_owned)
        .collect();
    let mut checks = vec![impersonation_attrs("users", target)];
    checks.extend(groups.iter().map(|g| impersonation_attrs("groups", g)));
    for attrs in &checks {
        if let Decision::Deny { .. } = state.authz.authorize(&user, attrs) {
            return Err(forbidden(&user, attrs));
        }
    }
    let mut as_groups = groups;
    if !as_groups.iter().any(|g| g == AUTHENTICATED) {
        as_groups.push(AUTHENTICATED.into());
    }
    Ok(UserInfo {
        name: target.to_owned(),
        uid: String::new(),
        groups: as_groups,
        extra: Default::default(),
    })
}

pub async fn authenticate_and_authorize(
    State(state): State<Arc<AppState>>,
    mut req: Request,
    next: Next,
) -> Response {
    // The one parse of this request: everything after reads this value.
    let info = Arc::new(RequestInfo::parse(req.method(), req.uri()));
    req.extensions_mut().insert(info.clone());
    if OPEN.contains(&info.path.trim_end_matches('/')) {
        return next.run(req).await;
    }
    // kube's order: a verified client certificate first, then the bearer token.
    let cert = req.extensions().get::<super::x509::ClientCert>().cloned();
    let cert_user = match cert {
        Some(c) => c.user().await,
        None => None,
    };
    let user =
        cert_user.or_else(|| bearer(req.headers()).and_then(|t| state.authn.authenticate(t)));
    let Some(user) = user else {
        return unauthorized().into_response();
    };
    // The connection carried a valid credential: it no longer counts as unauthenticated.
    if let Some(conn) = req.extensions().get::<ConnectionGate>() {
        conn.authenticated();
    }
    let user = match impersonate(&state, user, req.headers()) {
        Ok(u) => u,
        Err(e) => return e.into_response(),
    };
    // As in kube, the in-flight limits apply after authentication, before authorization.
    let _slot = match state.inflight.admit(&info, &user) {
        Ok(slot) => slot,
        Err(e) => return e.into_response(),
    };
    let attrs = info.attributes();
    if let Decision::Deny { .. } = state.authz.authorize(&user, &attrs) {
        tracing::debug!(user = %user.name, verb = %attrs.verb, resource = %attrs.resource, "forbidden");
        return forbidden(&user, &attrs).into_response();
    }
    req.extensions_mut().insert(Principal(user));
    next.run(req).await
}
