//! Discovery (`/api`, `/apis`, `/api/v1`, `/apis/G/V`), `/version`, health, OpenAPI.

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use serde_json::{json, Value};

use super::error::json_response;
use super::AppState;
use crate::model::{ApiError, ResourceInfo};

/// The Kubernetes API level this server speaks, as semver with our own build metadata.
pub const KUBE_MAJOR: &str = "1";
pub const KUBE_MINOR: &str = "34";

pub async fn version() -> Response {
    // Go's names for the architecture, as kube's `platform` reports it.
    let arch = match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        "x86" => "386",
        "powerpc64" => "ppc64le",
        other => other,
    };
    // kube 1.34's `version.Info`, in its field order: it emulates itself and is compatible
    // with the minor before.
    let previous = KUBE_MINOR
        .parse::<u32>()
        .map(|m| m.saturating_sub(1).to_string())
        .unwrap_or_default();
    let body = json!({
        "major": KUBE_MAJOR,
        "minor": KUBE_MINOR,
        "emulationMajor": KUBE_MAJOR,
        "emulationMinor": KUBE_MINOR,
        "minCompatibilityMajor": KUBE_MAJOR,
        "minCompatibilityMinor": previous,
        "gitVersion": format!("v{KUBE_MAJOR}.{KUBE_MINOR}.0+turtles.{}", env!("CARGO_PKG_VERSION")),
        "gitCommit": "",
        "gitTreeState": "clean",
        "buildDate": "1970-01-01T00:00:00Z",
        "goVersion": "n/a (rust)",
        "compiler": "rustc",
        "platform": format!("{}/{arch}", std::env::consts::OS),
    });
    json_response(StatusCode::OK, body.to_string())
}

/// The three health endpoints, each a list of named checks, as kube-apiserver's
/// `healthz.InstallPathHandler` serves them: `/healthz` and `/livez` with kube's `ping`, `log`
/// and `etcd` (the store: failing while it refuses writes), `/readyz` with those, the store's
/// and the admission policies' readiness and `shutdown`. kube's post-start hooks have no
/// counterpart here and are not listed.
#[derive(Debug, Clone, Copy)]
enum HealthEndpoint {
    Healthz,
    Livez,
    Readyz,
}

impl HealthEndpoint {
    /// The word of `<name> check passed`, the path without its slash.
    fn name(self) -> &'static str {
        match self {
            HealthEndpoint::Healthz => "healthz",
            HealthEndpoint::Livez => "livez",
            HealthEndpoint::Readyz => "readyz",
        }
    }

    /// The checks, in the order they are listed.
    fn checks(self) -> &'static [&'static str] {
        match self {
            HealthEndpoint::Healthz | HealthEndpoint::Livez => &["ping", "log", "etcd"],
            HealthEndpoint::Readyz => &[
                "ping",
                "log",
                "etcd",
                "storage",
                "wasm-admission-policies-synced",
                "shutdown",
            ],
        }
    }
}

/// One check, by name: `Err` with the reason it fails (for the log and the per-check path).
/// `ping` always passes; `log` too (tracing never blocks a caller as klog could).
fn run_check(state: &AppState, name: &str) -> Result<(), String> {
    match name {
        // kube's `etcd` check is its storage backend's health: here the store's, whichever it
        // is, failing while it refuses writes (a full disk, etcd unreachable).
        "etcd" | "storage" => match state.service.store.health().unavailable {
            None => Ok(()),
            Some(why) => Err(why),
        },
        // The admission policies in the controllers folder at start-up have had their first
        // load.
        "wasm-admission-policies-synced" => {
            if state.service.admission.wasm.synced() {
                Ok(())
            } else {
                Err("the admission policies of the controllers folder are not loaded yet".into())
            }
        }
        // kube's words (`healthz.NewShutdownHealthz`).
        "shutdown" => {
            if *state.shutdown.borrow() {
                Err("process is shutting down".into())
            } else {
                Ok(())
            }
        }
        _ => Ok(()),
    }
}

/// Go's `url.ParseQuery`, as kube's `r.URL.Query()` reads a query: `&`-separated pairs, each
/// name and value unescaped (`+` a space); a pair with a `;` or a malformed `%` escape is
/// skipped, as Go skips it.
fn go_query(query: Option<&str>) -> Vec<(String, String)> {
    let well_escaped = |s: &str| {
        s.split('%')
            .skip(1)
            .all(|rest| rest.len() >= 2 && rest.as_bytes()[..2].iter().all(u8::is_ascii_hexdigit))
    };
    query
        .unwrap_or("")
        .split('&')
        .filter(|pair| !pair.is_empty() && !pair.contains(';') && well_escaped(pair))
        .filter_map(|pair| form_urlencoded::parse(pair.as_bytes()).next())
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect()
}

/// A plain-text health answer with the headers kube sets: `text/plain; charset=utf-8`, and
/// `X-Content-Type-Options: nosniff` where kube sets it (its root handlers and Go's
/// `http.Error`; not a passing per-check path, whose type Go sniffs).
fn health_text(code: StatusCode, body: String, nosniff: bool) -> Response {
    let mut resp = (code, body).into_response();
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    if nosniff {
        resp.headers_mut().insert(
            header::X_CONTENT_TYPE_OPTIONS,
            HeaderValue::from_static("nosniff"),
        );
    }
    resp
}

/// kube's `handleRootHealth`: every check not excluded (`?exclude=NAME`, repeatable) is run and
/// listed, `[+]NAME ok`, `[-]NAME failed: reason withheld` (the endpoint is open to anyone; the
/// log has the reason) or `[+]NAME excluded: ok`, then a warning naming the excluded names that
/// match no check. Any failure: 500 with that listing and `<name> check failed` (always
/// verbose). Else `ok`, or with `?verbose` (any value) the listing and `<name> check passed`.
fn health(state: &AppState, which: HealthEndpoint, query: Option<&str>) -> Response {
    use std::fmt::Write as _;
    let query = go_query(query);
    let excluded: std::collections::BTreeSet<&str> = query
        .iter()
        .filter(|(k, _)| k == "exclude")
        .map(|(_, v)| v.as_str())
        .collect();
    let verbose = query.iter().any(|(k, _)| k == "verbose");
    let mut unmatched = excluded.clone();
    let mut listing = String::new();
    let mut failed: Vec<(&str, String)> = Vec::new();
    for &name in which.checks() {
        if excluded.contains(name) {
            unmatched.remove(name);
            let _ = writeln!(listing, "[+]{name} excluded: ok");
            continue;
        }
        match run_check(state, name) {
            Ok(()) => {
                let _ = writeln!(listing, "[+]{name} ok");
            }
            Err(why) => {
                let _ = writeln!(listing, "[-]{name} failed: reason withheld");
                failed.push((name, why));
            }
        }
    }
    if !unmatched.is_empty() {
        // Sorted, as Go's `sets.String.List()` gives them.
        let names: Vec<String> = unmatched
            .iter()
            .map(|n| crate::auth::rbac::go_quote(n))
            .collect();
        let _ = writeln!(
            listing,
            "warn: some health checks cannot be excluded: no matches for {}",
            names.join(",")
        );
    }
    let endpoint = which.name();
    if !failed.is_empty() {
        let reasons: Vec<String> = failed
            .iter()
            .map(|(name, why)| format!("[-]{name} failed: {why}"))
            .collect();
        tracing::debug!(endpoint, failed = %reasons.join("; "), "health check failed");
        // Go's `http.Error`, which ends the text with a newline.
        return health_text(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("{listing}{endpoint} check failed\n"),
            true,
        );
    }
    let body = if verbose {
        format!("{listing}{endpoint} check passed\n")
    } else {
        "ok".to_owned()
    };
    health_text(StatusCode::OK, body, true)
}

/// kube's `adaptCheckToHandler`: `PATH/NAME` runs that one check, `ok`, or 500 with
/// `internal server error: <reason>` (these paths are not open to anyone: RBAC's
/// `system:monitoring` grants them). A name that is not one of the endpoint's checks: 404.
fn health_check(state: &AppState, which: HealthEndpoint, name: &str) -> Response {
    if !which.checks().contains(&name) {
        return ApiError::path_not_found().into_response();
    }
    match run_check(state, name) {
        Ok(()) => health_text(StatusCode::OK, "ok".to_owned(), false),
        Err(why) => health_text(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("internal server error: {why}\n"),
            true,
        ),
    }
}

pub async fn healthz(State(state): State<Arc<AppState>>, uri: Uri) -> Response {
    health(&state, HealthEndpoint::Healthz, uri.query())
}

pub async fn livez(State(state): State<Arc<AppState>>, uri: Uri) -> Response {
    health(&state, HealthEndpoint::Livez, uri.query())
}

pub async fn readyz(State(state): State<Arc<AppState>>, uri: Uri) -> Response {
    health(&state, HealthEndpoint::Readyz, uri.query())
}

pub async fn healthz_check(
    State(state): State<Arc<AppState>>,
    Path(name): Path<String>,
) -> Response {
    health_check(&state, HealthEndpoint::Healthz, &name)
}

pub async fn livez_check(State(state): State<Arc<AppState>>, Path(name): Path<String>) -> Response {
    health_check(&state, HealthEndpoint::Livez, &name)
}

pub async fn readyz_check(
    State(state): State<Arc<AppState>>,
    Path(name): Path<String>,
) -> Response {
    health_check(&state, HealthEndpoint::Readyz, &name)
}

/// The service account issuer's documents (`auth::serviceaccount`), with the content types kube
/// serves them with.
fn issuer_document(
    state: &AppState,
    content_type: &'static str,
    doc: impl Fn(&crate::auth::serviceaccount::TokenIssuer) -> Value,
) -> Response {
    match state.authn.service_accounts() {
        Some(issuer) => (
            StatusCode::OK,
            [(header::CONTENT_TYPE, HeaderValue::from_static(content_type))],
            doc(issuer).to_string(),
        )
            .into_response(),
        None => ApiError::path_not_found().into_response(),
    }
}

pub async fn openid_configuration(State(state): State<Arc<AppState>>) -> Response {
    issuer_document(&state, "application/json", |i| i.openid_configuration())
}

pub async fn jwks(State(state): State<Arc<AppState>>) -> Response {
    issuer_document(&state, "application/jwk-set+json", |i| i.jwks())
}

/// Media type of aggregated discovery (v2), which clients ask for first.
const AGGREGATED: &str = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";

fn wants_aggregated(headers: &HeaderMap) -> bool {
    headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .and_then(|a| a.split(',').next())
        .is_some_and(|first| {
            let params: Vec<&str> = first.split(';').map(str::trim).collect();
            params.contains(&"g=apidiscovery.k8s.io")
                && params.contains(&"v=v2")
                && params.contains(&"as=APIGroupDiscoveryList")
        })
}

/// One group's entry in an `APIGroupDiscoveryList`.
fn aggregated_group(state: &AppState, group: &str, versions: &[String]) -> Value {
    let versions: Vec<Value> = versions
        .iter()
        .map(|v| {
            let resources: Vec<Value> = state
                .registry
                .in_group_version(group, v)
                .iter()
                .map(|r| {
                    let kind = json!({"group": r.group, "version": r.version, "kind": r.kind});
                    let mut subs = Vec::new();
                    if r.status_subresource {
                        subs.push(json!({"subresource": "status", "responseKind": kind, "verbs": ["get", "patch", "update"]}));
                    }
                    if crate::builtin::csr::is_csrs(r) {
                        subs.push(json!({"subresource": "approval", "responseKind": kind, "verbs": ["get", "patch", "update"]}));
                    }
                    if r.group.is_empty() && r.resource == "namespaces" {
                        subs.push(json!({"subresource": "finalize", "responseKind": kind, "verbs": ["update"]}));
                    }
                    if r.group.is_empty() && r.resource == "pods" {
                        let core = |k: &str| json!({"group": "", "version": "v1", "kind": k});
                        subs.push(json!({"subresource": "attach", "responseKind": core("PodAttachOptions"), "verbs": ["create", "get"]}));
                        subs.push(json!({"subresource": "binding", "responseKind": core("Binding"), "verbs": ["create"]}));
                        subs.push(json!({"subresource": "ephemeralcontainers", "responseKind": kind, "verbs": ["get", "patch", "update"]}));
                        subs.push(json!({"subresource": "eviction", "responseKind": {"group": "policy", "version": "v1", "kind": "Eviction"}, "verbs": ["create"]}));
                        subs.push(json!({"subresource": "exec", "responseKind": core("PodExecOptions"), "verbs": ["create", "get"]}));
                        subs.push(json!({"subresource": "log", "responseKind": kind, "verbs": ["get"]}));
                        subs.push(json!({"subresource": "portforward", "responseKind": core("PodPortForwardOptions"), "verbs": ["create", "get"]}));
                        subs.push(json!({"subresource": "resize", "responseKind": kind, "verbs": ["get", "patch", "update"]}));
                    }
                    if r.group.is_empty() && r.resource == "serviceaccounts" {
                        subs.push(json!({"subresource": "token", "responseKind": {"group": "authentication.k8s.io", "version": "v1", "kind": "TokenRequest"}, "verbs": ["create"]}));
                    }
                    if r.is_controllers() {
                        subs.push(json!({"subresource": "log", "responseKind": kind, "verbs": ["get"]}));
                    }
                    if r.scale.is_some() {
                        subs.push(json!({"subresource": "scale", "responseKind": {"group": "autoscaling", "version": "v1", "kind": "Scale"}, "verbs": ["get", "patch", "update"]}));
                    }
                    let mut e = json!({
                        "resource": r.resource,
                        "responseKind": kind,
                        "scope": if r.namespaced() { "Namespaced" } else { "Cluster" },
                        "singularResource": r.singular,
                        "verbs": r.verbs(),
                    });
                    if !r.short_names.is_empty() {
                        e["shortNames"] = json!(r.short_names);
                    }
                    if !r.categories.is_empty() {
                        e["categories"] = json!(r.categories);
                    }
                    if !subs.is_empty() {
                        e["subresources"] = json!(subs);
                    }
                    e
                })
                .collect();
            json!({"version": v, "resources": resources, "freshness": "Current"})
        })
        .collect();
    let mut metadata = json!({"creationTimestamp": null});
    if !group.is_empty() {
        metadata["name"] = json!(group);
    }
    json!({"metadata": metadata, "versions": versions})
}

/// Aggregated discovery as kube's `ServeHTTPWithETag` (`discovery/aggregated/etag.go`) serves
/// it: an `ETag` of the quoted upper-case hex SHA-512 of the document, `Vary: Accept`,
/// `Cache-Control: public`, and a bodiless 304 when `If-None-Match` is exactly that tag.
fn aggregated_response(items: Vec<Value>, request: &HeaderMap) -> Response {
    use sha2::Digest as _;
    let body = json!({"kind": "APIGroupDiscoveryList", "apiVersion": "apidiscovery.k8s.io/v2", "metadata": {}, "items": items}).to_string();
    let sum = sha2::Sha512::digest(body.as_bytes());
    let mut etag = String::with_capacity(2 + 2 * sum.len());
    etag.push('"');
    for b in sum.iter() {
        etag.push_str(&format!("{b:02X}"));
    }
    etag.push('"');
    let not_modified = request
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        == Some(etag.as_str());
    let mut resp = if not_modified {
        let mut r = Response::new(axum::body::Body::empty());
        *r.status_mut() = StatusCode::NOT_MODIFIED;
        r
    } else {
        let mut r = json_response(StatusCode::OK, body);
        r.headers_mut()
            .insert(header::CONTENT_TYPE, HeaderValue::from_static(AGGREGATED));
        r
    };
    if let Ok(v) = HeaderValue::from_str(&etag) {
        resp.headers_mut().insert(header::ETAG, v);
    }
    resp.headers_mut()
        .insert(header::VARY, HeaderValue::from_static("Accept"));
    resp.headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("public"));
    resp
}

pub async fn core_versions(State(state): State<Arc<AppState>>, headers: HeaderMap) -> Response {
    if wants_aggregated(&headers) {
        return aggregated_response(
            vec![aggregated_group(&state, "", &["v1".to_owned()])],
            &headers,
        );
    }
    let body = json!({
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": ""}],
    });
    json_response(StatusCode::OK, body.to_string())
}

/// The named groups in kube's discovery order, each with its versions in order: the groups
/// this host serves and those of remote APIServices (`aggregator::ordered`).
fn ordered_groups(state: &AppState, aggregated: bool) -> Vec<Vec<crate::aggregator::Listed>> {
    let local: Vec<(String, String)> = state
        .registry
        .groups()
        .into_iter()
        .flat_map(|(g, vs)| vs.into_iter().map(move |v| (g.clone(), v)))
        .collect();
    crate::aggregator::ordered(&local, Some(&state.aggregator), aggregated)
}

/// One version's entry in aggregated discovery: a remote one's as its server last described
/// it, or `Stale` while that could not be fetched.
fn aggregated_version(state: &AppState, listed: &crate::aggregator::Listed) -> Value {
    if listed.remote {
        return match state.aggregator.discovery(&listed.name) {
            Some(resources) => {
                json!({"version": listed.version, "resources": resources.as_ref(), "freshness": "Current"})
            }
            None => json!({"version": listed.version, "freshness": "Stale"}),
        };
    }
    aggregated_group(state, &listed.group, std::slice::from_ref(&listed.version))["versions"][0]
        .clone()
}

pub async fn group_list(State(state): State<Arc<AppState>>, headers: HeaderMap) -> Response {
    let aggregated = wants_aggregated(&headers);
    let groups = ordered_groups(&state, aggregated);
    if aggregated {
        let items = groups
            .iter()
            .map(|vs| {
                let versions: Vec<Value> =
                    vs.iter().map(|l| aggregated_version(&state, l)).collect();
                json!({"metadata": {"name": vs[0].group, "creationTimestamp": null}, "versions": versions})
            })
            .collect();
        return aggregated_response(items, &headers);
    }
    let groups: Vec<Value> = groups.iter().map(|vs| api_group(vs)).collect();
    let body = json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups});
    json_response(StatusCode::OK, body.to_string())
}

/// An `APIGroup`: its versions in order, the first preferred.
fn api_group(versions: &[crate::aggregator::Listed]) -> Value {
    let name = versions.first().map(|l| l.group.as_str()).unwrap_or("");
    let vs: Vec<Value> = versions
        .iter()
        .map(|l| json!({"groupVersion": format!("{name}/{}", l.version), "version": l.version}))
        .collect();
    let preferred = vs.first().cloned().unwrap_or(Value::Null);
    json!({"name": name, "versions": vs, "preferredVersion": preferred})
}

/// kube's `StorageVersionHash`: base64 of the first 8 bytes of the SHA-256 of the storage
/// version's `group/version/kind` (a version converted on the way in and out is stored as the
/// resource's other version; a custom resource in its CRD's storage version).
fn storage_version_hash(state: &AppState, r: &ResourceInfo) -> String {
    use base64::Engine as _;
    use sha2::Digest as _;
    let stored = match (&r.custom, r.conversion) {
        (Some(c), _) => format!("{}/{}/{}", r.group, c.storage_version, r.kind),
        (None, Some(_)) => state
            .registry
            .snapshot()
            .iter()
            .find(|o| o.conversion.is_none() && o.group_resource() == r.group_resource())
            .map(|o| format!("{}/{}/{}", o.group, o.version, o.kind))
            .unwrap_or_else(|| format!("{}/{}/{}", r.group, r.version, r.kind)),
        (None, None) => format!("{}/{}/{}", r.group, r.version, r.kind),
    };
    let sum = sha2::Sha256::digest(stored.as_bytes());
    base64::engine::general_purpose::STANDARD.encode(&sum[..8])
}

fn resource_entry(state: &AppState, r: &ResourceInfo) -> Value {
    let mut e = json!({
        "name": r.resource,
        "singularName": r.singular,
        "namespaced": r.namespaced(),
        "kind": r.kind,
        "verbs": r.verbs(),
    });
    // Only a resource with storage has one (kube's `StorageVersionProvider`): not the reviews,
    // not ComponentStatuses.
    if r.stored() {
        e["storageVersionHash"] = json!(storage_version_hash(state, r));
    }
    if !r.short_names.is_empty() {
        e["shortNames"] = json!(r.short_names);
    }
    if !r.categories.is_empty() {
        e["categories"] = json!(r.categories);
    }
    e
}

/// `APIResourceList` for one group/version, or 404.
pub fn resource_list(state: &AppState, group: &str, version: &str) -> Result<Response, ApiError> {
    let resources = state.registry.in_group_version(group, version);
    if resources.is_empty() {
        return Err(ApiError::path_not_found());
    }
    let mut list = Vec::new();
    for r in &resources {
        list.push(resource_entry(state, r));
        if r.status_subresource {
            list.push(json!({
                "name": format!("{}/status", r.resource),
                "singularName": "",
                "namespaced": r.namespaced(),
                "kind": r.kind,
                "verbs": ["get", "patch", "update"],
            }));
        }
        if r.group.is_empty() && r.resource == "namespaces" {
            list.push(json!({
                "name": "namespaces/finalize",
                "singularName": "",
                "namespaced": false,
                "kind": "Namespace",
                "verbs": ["update"],
            }));
        }
        if crate::builtin::csr::is_csrs(r) {
            list.push(json!({
                "name": format!("{}/approval", r.resource),
                "singularName": "",
                "namespaced": false,
                "kind": r.kind,
                "verbs": ["get", "patch", "update"],
            }));
        }
        if r.group.is_empty() && r.resource == "pods" {
            // The kubelet's subresources (`pod_streams.rs`).
            let stream = |name: &str, kind: &str, verbs: &[&str]| json!({"name": name, "singularName": "", "namespaced": true, "kind": kind, "verbs": verbs});
            list.push(stream(
                "pods/attach",
                "PodAttachOptions",
                &["create", "get"],
            ));
            list.push(json!({
                "name": "pods/binding",
                "singularName": "",
                "namespaced": true,
                "kind": "Binding",
                "verbs": ["create"],
            }));
            list.push(json!({
                "name": "pods/ephemeralcontainers",
                "singularName": "",
                "namespaced": true,
                "kind": "Pod",
                "verbs": ["get", "patch", "update"],
            }));
            // kubectl drain looks for this entry (group and version included) before it evicts
            // instead of deleting.
            list.push(json!({
                "name": "pods/eviction",
                "singularName": "",
                "namespaced": true,
                "group": "policy",
                "version": "v1",
                "kind": "Eviction",
                "verbs": ["create"],
            }));
            list.push(stream("pods/exec", "PodExecOptions", &["create", "get"]));
            list.push(stream("pods/log", "Pod", &["get"]));
            list.push(stream(
                "pods/portforward",
                "PodPortForwardOptions",
                &["create", "get"],
            ));
            list.push(stream("pods/resize", "Pod", &["get", "patch", "update"]));
        }
        if r.group.is_empty() && r.resource == "serviceaccounts" {
            list.push(json!({
                "name": "serviceaccounts/token",
                "singularName": "",
                "namespaced": true,
                "group": "authentication.k8s.io",
                "version": "v1",
                "kind": "TokenRequest",
                "verbs": ["create"],
            }));
        }
        if r.is_controllers() {
            list.push(json!({
                "name": "controllers/log",
                "singularName": "",
                "namespaced": false,
                "kind": r.kind,
                "verbs": ["get"],
            }));
        }
        if r.scale.is_some() {
            list.push(json!({
                "name": format!("{}/scale", r.resource),
                "singularName": "",
                "namespaced": r.namespaced(),
                "group": "autoscaling",
                "version": "v1",
                "kind": "Scale",
                "verbs": ["get", "patch", "update"],
            }));
        }
    }
    let gv = if group.is_empty() {
        version.to_owned()
    } else {
        format!("{group}/{version}")
    };
    let body = json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": list});
    Ok(json_response(StatusCode::OK, body.to_string()))
}

/// A named group's `APIGroup` (`/apis/G`).
pub fn group(state: &AppState, group: &str) -> Result<Response, ApiError> {
    let groups = ordered_groups(state, false);
    let versions = groups
        .iter()
        .find(|vs| vs[0].group == group)
        .ok_or_else(ApiError::path_not_found)?;
    let mut body = json!({"kind": "APIGroup", "apiVersion": "v1"});
    if let (Some(b), Value::Object(g)) = (body.as_object_mut(), api_group(versions)) {
        b.extend(g);
    }
    Ok(json_response(StatusCode::OK, body.to_string()))
}

/// The media type of gnostic's protobuf encoding of OpenAPI v2, what client-go's
/// `OpenAPISchema` asks for, and the dotted form kube-openapi answers with (Go's
/// `mime.ParseMediaType` rejects the `@`) and also accepts.
const OPENAPI_V2_PROTOBUF: &str = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf";
const OPENAPI_V2_PROTOBUF_DOTTED: &str =
    "application/com.github.proto-openapi.spec.v2.v1.0+protobuf";

/// OpenAPI v2 (swagger): JSON, or gnostic's protobuf for a client that asks for it (client-go;
/// kubectl validates a `kind: List` with it). The first acceptable type in `Accept` wins; a
/// request that accepts neither gets a bare 406, as kube-openapi answers.
pub async fn openapi_v2(
    State(state): State<Arc<AppState>>,
    headers: axum::http::HeaderMap,
) -> Response {
    let accept = headers
        .get(axum::http::header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    // Clauses by `q`, highest first (a stable sort keeps the header's order among equals), as
    // kube-openapi's `goautoneg.ParseAccept` orders them; `q=0` is never acceptable.
    let mut clauses: Vec<(f32, &str)> = accept
        .split(',')
        .map(|a| {
            let mut parts = a.split(';');
            let media = parts.next().unwrap_or("").trim();
            let q = parts
                .filter_map(|p| p.trim().strip_prefix("q="))
                .find_map(|q| q.trim().parse::<f32>().ok())
                .unwrap_or(1.0);
            (q, media)
        })
        .filter(|(q, _)| *q > 0.0)
        .collect();
    clauses.sort_by(|a, b| b.0.total_cmp(&a.0));
    let chosen = clauses.iter().find_map(|(_, a)| {
        if *a == "application/json" || *a == "*/*" || *a == "application/*" {
            Some(false)
        } else if *a == OPENAPI_V2_PROTOBUF || *a == OPENAPI_V2_PROTOBUF_DOTTED {
            Some(true)
        } else {
            None
        }
    });
    let mut r = match (accept.trim().is_empty(), chosen) {
        (true, _) | (false, Some(false)) => {
            json_response(StatusCode::OK, super::openapi::document_v2_bytes(&state))
        }
        (false, Some(true)) => {
            let mut r = Response::new(axum::body::Body::from(
                super::openapi::document_v2_protobuf(&state),
            ));
            r.headers_mut().insert(
                axum::http::header::CONTENT_TYPE,
                axum::http::HeaderValue::from_static(OPENAPI_V2_PROTOBUF_DOTTED),
            );
            r
        }
        // kube-openapi answers a bare 406.
        (false, None) => StatusCode::NOT_ACCEPTABLE.into_response(),
    };
    r.headers_mut().insert(
        axum::http::header::VARY,
        axum::http::HeaderValue::from_static("Accept"),
    );
    r
}

/// OpenAPI v3 index: one document per group-version, addressed with a content hash.
pub async fn openapi_v3_root(State(state): State<Arc<AppState>>) -> Response {
    let mut paths = serde_json::Map::new();
    let mut gvs: Vec<(String, String)> = vec![(String::new(), "v1".into())];
    for (g, vs) in state.registry.groups() {
        for v in vs {
            gvs.push((g.clone(), v));
        }
    }
    for (g, v) in gvs {
        let doc = super::openapi::document(&state, &g, &v);
        let key = if g.is_empty() {
            format!("api/{v}")
        } else {
            format!("apis/{g}/{v}")
        };
        paths.insert(
            key.clone(),
            json!({"serverRelativeURL": format!("/openapi/v3/{key}?hash={}", doc.hash)}),
        );
    }
    // Extension servers' group versions, as their servers described them.
    for (g, v, doc) in state.aggregator.openapi_documents() {
        let key = format!("apis/{g}/{v}");
        if !paths.contains_key(&key) {
            paths.insert(
                key.clone(),
                json!({"serverRelativeURL": format!("/openapi/v3/{key}?hash={}", doc.hash)}),
            );
        }
    }
    json_response(StatusCode::OK, json!({"paths": paths}).to_string())
}

pub async fn openapi_v3_doc(
    State(state): State<Arc<AppState>>,
    axum::extract::Path(path): axum::extract::Path<String>,
) -> Response {
    let parts: Vec<&str> = path.split('/').collect();
    let (g, v) = match parts.as_slice() {
        ["api", v] => ("", *v),
        ["apis", g, v] => (*g, *v),
        _ => return ApiError::path_not_found().into_response(),
    };
    let core_v1 = g.is_empty() && v == "v1";
    if !core_v1 && !state.registry.has_group_version(g, v) {
        return match state.aggregator.openapi_document(g, v) {
            Some(doc) => json_response(StatusCode::OK, doc.json.clone()),
            None => ApiError::path_not_found().into_response(),
        };
    }
    let doc = super::openapi::document(&state, g, v);
    json_response(StatusCode::OK, doc.json.clone())
}
