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

/// When a request that is not long-running must be answered, kept in its extensions (kube's
/// request context deadline, set by `WithRequestDeadline`): the admission webhooks its write
/// calls get no more than what is left of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RequestDeadline(pub tokio::time::Instant);

/// kube's `WithRequestDeadline`: the `timeout` query parameter (a Go duration) when it is above
/// zero and below `limit` (kube's `--request-timeout`), else `limit`, counted from when the
/// request `arrived`. A value Go cannot parse is a 400.
pub(crate) fn request_deadline(
    timeout: Option<&str>,
    limit: std::time::Duration,
    arrived: tokio::time::Instant,
) -> Result<tokio::time::Instant, ApiError> {
    let asked = match timeout.filter(|t| !t.is_empty()) {
        None => None,
        Some(t) => Some(
            crate::builtin::validation::go_parse_duration(t).map_err(|e| {
                ApiError::bad_request(format!(
                    "invalid timeout specified in the request URL - {e}"
                ))
            })?,
        ),
    };
    let timeout = match asked {
        Some(ns) if ns > 0 && u128::try_from(ns).is_ok_and(|ns| ns < limit.as_nanos()) => {
            std::time::Duration::from_nanos(ns.unsigned_abs())
        }
        _ => limit,
    };
    Ok(arrived + timeout)
}

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

/// What is asked to impersonate one thing: the verb `impersonate` on `resource` (of
/// `api_group`, in `namespace`, its `subresource`) named `name`.
fn impersonation_attrs(
    api_group: &str,
    resource: &str,
    subresource: &str,
    namespace: &str,
    name: &str,
) -> Attributes {
    Attributes {
        verb: "impersonate".into(),
        resource_request: true,
        api_group: api_group.into(),
        resource: resource.into(),
        subresource: subresource.into(),
        namespace: namespace.into(),
        name: name.into(),
        path: String::new(),
    }
}

/// kube's `serviceaccount.SplitUsername`: `system:serviceaccount:NS:NAME` with a valid
/// namespace and name, else not a service account.
pub(crate) fn service_account_of(username: &str) -> Option<(&str, &str)> {
    let rest = username.strip_prefix(crate::auth::rbac::SERVICE_ACCOUNT_USERNAME_PREFIX)?;
    let (ns, name) = rest.split_once(':')?;
    (!name.contains(':')
        && crate::model::meta::is_dns_label(ns)
        && crate::model::meta::is_dns_subdomain(name))
    .then_some((ns, name))
}

const IMPERSONATE_EXTRA: &str = "impersonate-extra-";

/// kube's impersonation filter: `Impersonate-User` (a service account's
/// `system:serviceaccount:NS:NAME` is asked as that ServiceAccount, and gets its groups unless
/// groups are given), `Impersonate-Group`, `Impersonate-Uid` and `Impersonate-Extra-KEY`, each
/// authorized (`impersonate` on `users`, `serviceaccounts`, `groups`,
/// `authentication.k8s.io` `uids` and `userextras/KEY`); `system:authenticated` added unless the
/// user is `system:anonymous` (then `system:unauthenticated`).
fn impersonate(
    state: &AppState,
    user: UserInfo,
    headers: &HeaderMap,
) -> Result<UserInfo, ApiError> {
    // Values as the bytes they are (UTF-8, as Go's clients send them): a header that is there
    // is never taken as absent.
    let utf8 = |v: &axum::http::HeaderValue| {
        std::str::from_utf8(v.as_bytes())
            .map(str::to_owned)
            .map_err(|_| ApiError::bad_request("invalid impersonation header: not UTF-8"))
    };
    let text = |name: &str| -> Result<Option<String>, ApiError> {
        match headers.get(name) {
            Some(v) => Ok(Some(utf8(v)?).filter(|s| !s.is_empty())),
            None => Ok(None),
        }
    };
    let groups: Vec<String> = headers
        .get_all("impersonate-group")
        .iter()
        .map(utf8)
        .collect::<Result<_, _>>()?;
    let mut extra: std::collections::BTreeMap<String, Vec<String>> = Default::default();
    for (name, value) in headers {
        let Some(key) = name.as_str().strip_prefix(IMPERSONATE_EXTRA) else {
            continue;
        };
        let key = crate::auth::unescape_extra_key(key);
        extra.entry(key).or_default().push(utf8(value)?);
    }
    let uid = text("impersonate-uid")?;
    let uid = uid.as_deref();
    let target = text("impersonate-user")?;
    let Some(target) = target.as_deref() else {
        if !groups.is_empty() || !extra.is_empty() || uid.is_some() {
            // kube's words: the requests as Go prints its `[]ObjectReference` (`%v`), groups,
            // then extras (sorted here; Go's map order is random), then the uid. kube 1.35's
            // code, 400; 1.34 answered the same text as a plain-text 500.
            let reference = |kind: &str, name: &str, api_version: &str, field: &str| {
                format!("{{{kind}  {name}  {api_version}  {field}}}")
            };
            let mut asked: Vec<String> = groups
                .iter()
                .map(|g| format!("{{Group  {g}    }}"))
                .collect();
            for (key, values) in &extra {
                for v in values {
                    asked.push(reference("UserExtra", v, "authentication.k8s.io/v1", key));
                }
            }
            if let Some(u) = uid {
                asked.push(reference("UID", u, "authentication.k8s.io/v1", ""));
            }
            return Err(ApiError::bad_request(format!(
                "requested [{}] without impersonating a user",
                asked.join(" ")
            )));
        }
        return Ok(user);
    };
    // kube: groups are given when the header is there at all.
    let specified = headers.contains_key("impersonate-group");
    let mut checks = Vec::new();
    let mut as_groups = groups.clone();
    match service_account_of(target) {
        Some((ns, name)) => {
            checks.push(impersonation_attrs("", "serviceaccounts", "", ns, name));
            if !specified {
                as_groups = vec![
                    "system:serviceaccounts".to_owned(),
                    format!("system:serviceaccounts:{ns}"),
                ];
            }
        }
        None => checks.push(impersonation_attrs("", "users", "", "", target)),
    }
    checks.extend(
        groups
            .iter()
            .map(|g| impersonation_attrs("", "groups", "", "", g)),
    );
    for (key, values) in &extra {
        for v in values {
            checks.push(impersonation_attrs(
                "authentication.k8s.io",
                "userextras",
                key,
                "",
                v,
            ));
        }
    }
    if let Some(uid) = uid {
        checks.push(impersonation_attrs(
            "authentication.k8s.io",
            "uids",
            "",
            "",
            uid,
        ));
    }
    for attrs in &checks {
        if let Decision::Deny { .. } = state.authz.authorize(&user, attrs) {
            return Err(forbidden(&user, attrs));
        }
    }
    const UNAUTHENTICATED: &str = "system:unauthenticated";
    if target == "system:anonymous" {
        if !as_groups.iter().any(|g| g == UNAUTHENTICATED) {
            as_groups.push(UNAUTHENTICATED.into());
        }
    } else if !as_groups
        .iter()
        .any(|g| g == AUTHENTICATED || g == UNAUTHENTICATED)
    {
        as_groups.push(AUTHENTICATED.into());
    }
    Ok(UserInfo {
        name: target.to_owned(),
        uid: uid.unwrap_or("").to_owned(),
        groups: as_groups,
        extra,
    })
}

pub async fn authenticate_and_authorize(
    State(state): State<Arc<AppState>>,
    mut req: Request,
    next: Next,
) -> Response {
    // The one parse of this request: everything after reads this value. A path Go's server
    // cannot decode (`%zz`) is answered 400 before anything else, as Go's server answers it.
    let arrived = tokio::time::Instant::now();
    let info = match RequestInfo::parse(req.method(), req.uri()) {
        Ok(info) => Arc::new(info),
        Err(e) => return e.into_response(),
    };
    req.extensions_mut().insert(info.clone());
    // kube sets the deadline before it authenticates: a malformed `timeout` is a 400 to anyone.
    if !info.is_long_running() {
        let timeout = info.query.get("timeout").map(String::as_str);
        match request_deadline(timeout, state.options.request_body_timeout, arrived) {
            Ok(deadline) => {
                req.extensions_mut().insert(RequestDeadline(deadline));
            }
            Err(e) => return e.into_response(),
        }
    }
    if OPEN.contains(&info.path.trim_end_matches('/')) {
        return next.run(req).await;
    }
    // kube's order: a front proxy's headers, a verified client certificate, then the bearer
    // token.
    let cert = req.extensions().get::<super::x509::ClientCert>().cloned();
    let proxied = cert.as_ref().and_then(|c| c.proxied_user(req.headers()));
    let cert_user = match (&proxied, cert) {
        (None, Some(c)) => c.user().await,
        _ => None,
    };
    let user = proxied
        .or(cert_user)
        .or_else(|| bearer(req.headers()).and_then(|t| state.authn.authenticate(t)));
    let Some(user) = user else {
        return unauthorized().into_response();
    };
    // The headers that name a user are not passed on (to an extension server, say).
    if let Some(rh) = &state.requestheader {
        let names: Vec<_> = req
            .headers()
            .keys()
            .filter(|h| rh.names_user(h.as_str()))
            .cloned()
            .collect();
        for n in names {
            req.headers_mut().remove(n);
        }
    }
    // The connection carried a valid credential: it no longer counts as unauthenticated.
    if let Some(conn) = req.extensions().get::<ConnectionGate>() {
        conn.authenticated();
    }
    // Whose share of the in-flight limits the request takes: who sent it (its credential's
    // user, or the host's controller that made it), never whom it impersonates.
    let flow = super::inflight::Flow::of(
        &user,
        req.extensions().get::<super::inflight::ControllerCall>(),
    );
    let user = match impersonate(&state, user, req.headers()) {
        Ok(u) => u,
        Err(e) => return e.into_response(),
    };
    // As in kube, the in-flight limits apply after authentication and impersonation, before
    // authorization (`system:masters` is exempt as the request acts). The slot is taken before
    // the body is read, as kube's filter takes it: a body that dribbles in holds it for at most
    // `--request-body-timeout`.
    let slot = match state.inflight.admit(&info, &user, &flow) {
        Ok(slot) => slot,
        Err(e) => return e.into_response(),
    };
    let attrs = info.attributes();
    if let Decision::Deny { .. } = state.authz.authorize(&user, &attrs) {
        tracing::debug!(user = %user.name, verb = %attrs.verb, resource = %attrs.resource, "forbidden");
        return forbidden(&user, &attrs).into_response();
    }
    // Whose share the handlers' own bounded resources take (the turns off the workers).
    req.extensions_mut()
        .insert(super::inflight::Sender::new(flow, &user));
    req.extensions_mut().insert(Principal(user));
    let resp = next.run(req).await;
    // A streamed list keeps its slot until its body is written (or dropped), as kube holds the
    // seat while its handler writes, so the lists waiting on clients are as many as the limit
    // allows; but no longer than the deadline, so a client that stops reading cannot keep it.
    // Every other response is complete here: its slot goes now.
    match slot {
        Some(slot)
            if resp
                .extensions()
                .get::<super::inflight::HoldsSlot>()
                .is_some() =>
        {
            let slot = Arc::new(std::sync::Mutex::new(Some(slot)));
            let (done, written) = tokio::sync::oneshot::channel::<()>();
            let held = slot.clone();
            tokio::spawn(async move {
                tokio::select! {
                    _ = tokio::time::sleep(super::inflight::SLOT_DEADLINE) => {
                        held.lock().unwrap_or_else(|e| e.into_inner()).take();
                    }
                    _ = written => {}
                }
            });
            resp.map(|body| {
                axum::body::Body::new(http_body_util::BodyExt::map_frame(body, move |frame| {
                    let _ = (&slot, &done);
                    frame
                }))
            })
        }
        _ => resp,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn service_account_names_are_split_as_kube_splits_them() {
        assert_eq!(
            service_account_of("system:serviceaccount:ci:deployer"),
            Some(("ci", "deployer"))
        );
        assert_eq!(service_account_of("system:serviceaccount:ci"), None);
        assert_eq!(service_account_of("system:serviceaccount:ci:a:b"), None);
        assert_eq!(service_account_of("system:serviceaccount:Bad:x"), None);
        assert_eq!(service_account_of("alice"), None);
    }

    #[test]
    fn extra_keys_are_unescaped() {
        assert_eq!(
            crate::auth::unescape_extra_key("authentication.kubernetes.io%2fpod-name"),
            "authentication.kubernetes.io/pod-name"
        );
        assert_eq!(crate::auth::unescape_extra_key("scopes"), "scopes");
        // kube keeps a key that does not decode as it is (Go's hex has no sign).
        assert_eq!(crate::auth::unescape_extra_key("bad%zz"), "bad%zz");
        assert_eq!(crate::auth::unescape_extra_key("bad%2"), "bad%2");
        assert_eq!(crate::auth::unescape_extra_key("a%+f"), "a%+f");
    }

    /// kube's `WithRequestDeadline`: `?timeout=` when above zero and below the maximum, else the
    /// maximum (zero, negative or too large included); a malformed one is Go's parse error.
    #[test]
    fn the_request_deadline_is_kubes() {
        let limit = std::time::Duration::from_secs(60);
        let arrived = tokio::time::Instant::now();
        let after = |t: Option<&str>| {
            request_deadline(t, limit, arrived).map(|d| d.duration_since(arrived))
        };
        let secs = std::time::Duration::from_secs;
        assert_eq!(after(None).unwrap(), limit);
        assert_eq!(after(Some("")).unwrap(), limit);
        assert_eq!(after(Some("2s")).unwrap(), secs(2));
        assert_eq!(
            after(Some("1.5s")).unwrap(),
            std::time::Duration::from_millis(1500)
        );
        assert_eq!(after(Some("59s")).unwrap(), secs(59));
        for unbounded in ["0", "0s", "-5s", "60s", "1m", "2h"] {
            assert_eq!(after(Some(unbounded)).unwrap(), limit, "{unbounded}");
        }
        for (bad, message) in [
            ("abc", "time: invalid duration \"abc\""),
            ("10", "time: missing unit in duration \"10\""),
            ("3d", "time: unknown unit \"d\" in duration \"3d\""),
        ] {
            let e = after(Some(bad)).unwrap_err();
            assert_eq!(e.code, 400);
            assert_eq!(e.reason, "BadRequest");
            assert_eq!(
                e.message,
                format!("invalid timeout specified in the request URL - {message}")
            );
        }
    }
}
