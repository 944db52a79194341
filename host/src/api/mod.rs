//! The HTTP face of the server: routing, content negotiation, discovery, Tables and watch
//! streams. Only this module knows HTTP; every request ends in the [`Service`].

mod access;
mod body;
mod components;
pub mod connections;
mod discovery;
mod error;
mod gosort;
pub(crate) mod handlers;
pub mod inflight;
pub(crate) mod negotiation;
pub mod offload;
pub(crate) mod openapi;
mod openapi_pb;
pub mod pod_streams;
pub(crate) mod pretty;
mod printers;
pub mod protobuf;
pub mod request_info;
mod reviews;
mod table;
pub(crate) mod watch;
pub mod x509;
pub(crate) mod yaml;

use std::sync::Arc;
use std::time::Duration;

use axum::extract::Request;
use axum::middleware::{self, Next};
use axum::response::Response;
use axum::routing::get;
use axum::Router;

use crate::model::Registry;
use crate::service::Service;

/// Largest request body accepted (kube's limit is 3 MiB).
pub const MAX_BODY: usize = 3 * 1024 * 1024;

/// Knobs of the HTTP layer.
#[derive(Debug, Clone)]
pub struct ApiOptions {
    /// How often a watch that allows bookmarks gets one.
    pub bookmark_interval: Duration,
    /// Bytes of events one watch may have queued for its client (see `watch`).
    pub watch_buffer_bytes: usize,
    /// How long a client may take none of what it is sent (`--write-stall-timeout`, 30 s): a
    /// connection whose socket accepts no bytes for this long while it has some to write is
    /// closed (`connections`), and a watch whose client takes no event for this long while
    /// events wait is closed (`watch`; this one also covers an HTTP/2 stream that gets no
    /// window while its connection is fine). Go's `http2.Server.WriteByteTimeout`.
    pub write_stall_timeout: Duration,
    /// How long a request body may take to arrive (kube's `--request-timeout`, 60 s): past it
    /// the request is answered 504 Timeout. Also the longest deadline of a request that is not
    /// long-running (`access::RequestDeadline`), which `?timeout=` may shorten.
    pub request_body_timeout: Duration,
    /// kube's `--max-requests-inflight`: read-only requests served at once (0: no limit).
    pub max_requests_inflight: usize,
    /// kube's `--max-mutating-requests-inflight`: mutating requests served at once (0: no limit).
    pub max_mutating_requests_inflight: usize,
}

impl Default for ApiOptions {
    fn default() -> Self {
        Self {
            bookmark_interval: Duration::from_secs(30),
            watch_buffer_bytes: watch::DEFAULT_BUFFER_BYTES,
            write_stall_timeout: connections::DEFAULT_WRITE_STALL,
            request_body_timeout: Duration::from_secs(60),
            max_requests_inflight: 400,
            max_mutating_requests_inflight: 200,
        }
    }
}

/// Shared by every handler.
pub struct AppState {
    pub service: Arc<Service>,
    pub authn: Arc<crate::auth::Authenticator>,
    pub authz: Arc<crate::auth::Authorizer>,
    pub crds: Arc<crate::crd::controller::CrdController>,
    pub registry: Arc<Registry>,
    pub options: ApiOptions,
    /// The in-flight limits built from `options`.
    pub inflight: inflight::InFlightLimits,
    /// The writes served off the async workers (`offload::MAX_OFF_WORKERS` at once), and the
    /// reads' renderings of large objects (shared with the bodies that render after their
    /// handler has returned: `offload::Turns`).
    pub offload: Arc<offload::Offload>,
    /// Watch events' Tables and `PartialObjectMetadata` rendered by one watch and reused by the
    /// others that show the same object the same way (`watch::SharedEvents`).
    pub watch_events: Arc<watch::SharedEvents>,
    /// Flips to `true` when the server shuts down: open watches end.
    pub shutdown: tokio::sync::watch::Receiver<bool>,
    pub metrics: crate::metrics::ApiMetrics,
    /// The controllers folder, once the runtime is up.
    pub controllers: std::sync::OnceLock<Arc<crate::runtime::folder::Folder>>,
    /// The built-in controllers' metrics (garbage collector, namespace, service account).
    pub builtin_controllers: Vec<crate::runtime::driver::MetricsSource>,
    /// The followed Pod logs open, per user (bounded).
    pub log_follows: Arc<pod_streams::Follows>,
    /// The watch streams open, per user (bounded: `watch::MAX_WATCHES_PER_USER`).
    pub watches: Arc<pod_streams::Follows>,
    /// The aggregation layer: APIServices and their extension servers.
    pub aggregator: Arc<crate::aggregator::Aggregator>,
    /// The front proxies trusted to name the user in headers (`--requestheader-*`), if any.
    pub requestheader: Option<Arc<x509::RequestHeader>>,
}

/// The whole API as a router, so tests can drive it without a socket.
pub fn router(state: Arc<AppState>) -> Router {
    Router::new()
        // kube answers these with or without a trailing slash (go-restful routes; the clients
        // generated from its OpenAPI, Python's among them, send the slash).
        .route("/version", get(discovery::version))
        .route("/version/", get(discovery::version))
        .route(
            "/.well-known/openid-configuration",
            get(discovery::openid_configuration),
        )
        .route("/openid/v1/jwks", get(discovery::jwks))
        // kube's health endpoints, each check also on its own (`/livez/ping`); a name that is
        // no check is answered 404 there, `poststarthook/...` included.
        .route("/healthz", get(discovery::healthz))
        .route("/healthz/{*check}", get(discovery::healthz_check))
        .route("/livez", get(discovery::livez))
        .route("/livez/{*check}", get(discovery::livez_check))
        .route("/readyz", get(discovery::readyz))
        .route("/readyz/{*check}", get(discovery::readyz_check))
        .route("/api", get(discovery::core_versions))
        .route("/api/", get(discovery::core_versions))
        .route("/apis", get(discovery::group_list))
        .route("/apis/", get(discovery::group_list))
        .route("/openapi/v2", get(discovery::openapi_v2))
        .route("/openapi/v3", get(discovery::openapi_v3_root))
        .route("/openapi/v3/{*path}", get(discovery::openapi_v3_doc))
        .route("/metrics", get(metrics))
        .fallback(handlers::dispatch)
        .layer(middleware::from_fn_with_state(
            state.clone(),
            access::authenticate_and_authorize,
        ))
        .layer(middleware::from_fn(negotiate_errors))
        .layer(middleware::from_fn(pretty::pretty_print))
        .layer(middleware::from_fn_with_state(state.clone(), trace_request))
        .layer(middleware::from_fn(cache_control))
        .with_state(state)
}

/// kube's `WithCacheControl` filter (`endpoints/filters/cachecontrol.go`), outside its
/// authentication: every answer, a 401 or 403 included, is `Cache-Control: no-cache, private`
/// unless its handler set its own (aggregated discovery's `public`, a watch's).
async fn cache_control(req: Request, next: Next) -> Response {
    let mut resp = next.run(req).await;
    if !resp
        .headers()
        .contains_key(axum::http::header::CACHE_CONTROL)
    {
        resp.headers_mut().insert(
            axum::http::header::CACHE_CONTROL,
            axum::http::HeaderValue::from_static("no-cache, private"),
        );
    }
    resp
}

/// kube's `ErrorNegotiated`: every error `Status` (the authentication and authorization
/// filters' included) in the media type the request's `Accept` negotiates (`error.rs`).
async fn negotiate_errors(req: Request, next: Next) -> Response {
    let accept = handlers::accept_header(req.headers()).into_owned();
    let resp = next.run(req).await;
    error::negotiate_error(resp, &accept)
}

/// Prometheus text: API requests and every loaded controller.
async fn metrics(axum::extract::State(state): axum::extract::State<Arc<AppState>>) -> Response {
    let mut out = String::new();
    state.metrics.render(&mut out);
    state.inflight.render(&mut out);
    state.offload.render(&mut out);
    crate::pace::render(&mut out);
    let health = state.service.store.health();
    out.push_str(&format!(
        "# HELP turtles_store_quarantined_objects Stored objects that could not be read at start-up and were set aside.\n# TYPE turtles_store_quarantined_objects gauge\nturtles_store_quarantined_objects {}\n# HELP turtles_store_writable Whether the store accepts writes (0 while the disk fails).\n# TYPE turtles_store_writable gauge\nturtles_store_writable {}\n",
        health.quarantined,
        u8::from(health.unavailable.is_none())
    ));
    state.service.store.render_metrics(&mut out);
    if let Some(folder) = state.controllers.get() {
        out.push_str(&format!(
            "# HELP turtles_component_compiles_total Components compiled (identical bytes share one compile).\n# TYPE turtles_component_compiles_total counter\nturtles_component_compiles_total {}\n# HELP turtles_component_tier_ups_total Components compiled optimized in the background after starting on baseline code.\n# TYPE turtles_component_tier_ups_total counter\nturtles_component_tier_ups_total {}\n",
            folder.compiles(),
            folder.tier_ups()
        ));
    }
    // Every controller, built-in or Wasm, in the same families.
    let mut controllers: Vec<crate::runtime::driver::Metered> =
        state.builtin_controllers.iter().map(|m| m()).collect();
    if let Some(folder) = state.controllers.get() {
        controllers.extend(folder.metered().await);
    }
    crate::runtime::driver::render_metrics(&mut out, &controllers);
    let mut resp = Response::new(axum::body::Body::from(out));
    resp.headers_mut().insert(
        axum::http::header::CONTENT_TYPE,
        axum::http::HeaderValue::from_static("text/plain; version=0.0.4"),
    );
    resp
}

/// One `tracing` span per request, with method, path, status and latency.
async fn trace_request(
    axum::extract::State(state): axum::extract::State<Arc<AppState>>,
    req: Request,
    next: Next,
) -> Response {
    let method = req.method().as_str().to_owned();
    use tracing::Instrument;
    let span = tracing::info_span!(
        "request",
        method = %req.method(),
        path = %req.uri().path(),
        status = tracing::field::Empty,
    );
    let start = std::time::Instant::now();
    let resp = next.run(req).instrument(span.clone()).await;
    span.record("status", resp.status().as_u16());
    state
        .metrics
        .observe(&method, resp.status().as_u16(), start.elapsed());
    tracing::debug!(parent: &span, elapsed_us = start.elapsed().as_micros() as u64, "served");
    resp
}
