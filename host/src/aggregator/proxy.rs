//! Requests for a remote APIService's group version, passed on to its extension server as
//! kube-aggregator's `proxyHandler` does: authorized here first, then sent with the user in
//! `X-Remote-User`/`X-Remote-Uid`/`X-Remote-Group`/`X-Remote-Extra-*` (whatever the client sent
//! under those names, and its `Authorization` and `Impersonate-*` headers, dropped), over TLS
//! with the front-proxy client certificate, the server verified with the APIService's
//! `caBundle` as `NAME.NAMESPACE.svc`. Answers stream back as they come (watches included).
//!
//! The server is reached at a ready endpoint of the Service's EndpointSlices (kube's
//! `--enable-aggregator-routing`): turtles' cluster IPs route nowhere.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use axum::body::Body;
use axum::http::{header, HeaderMap, HeaderName, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use hyper::client::conn::http1;
use hyper_util::rt::TokioIo;
use serde_json::Value;

use super::{AggregatorError, ApiService, ServiceRef};
use crate::admission::hook_client::{error_chain, go_io_error, tls_error, RootsVerifier};
use crate::auth::rbac::UserInfo;
use crate::model::{meta, ObjectKey};
use crate::store::Store;

/// How long a discovery request (`/apis/GROUP/VERSION`) may take (kube's
/// `aggregatedDiscoveryTimeout`), and the availability probe's.
pub const DISCOVERY_TIMEOUT: Duration = Duration::from_secs(5);
/// How long a connection (TCP, TLS, HTTP) to an extension server may take to open.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// How long an extension server may take to answer (its headers) a request that is not
/// discovery: kube's timeout of requests that are not long-running.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(60);
/// How long an `ExternalName` may take to resolve.
const LOOKUP_TIMEOUT: Duration = Duration::from_secs(5);

/// The TLS client that calls extension servers, with the front-proxy certificate.
pub struct Client {
    chain: Vec<rustls::pki_types::CertificateDer<'static>>,
    key: rustls::pki_types::PrivateKeyDer<'static>,
    /// TLS configurations by (CA bundle, skip verification).
    configs: Mutex<HashMap<(String, bool), Arc<rustls::ClientConfig>>>,
}

const MAX_CONFIGS: usize = 64;

impl Client {
    pub fn new(front_proxy: &crate::auth::tls::FrontProxy) -> Result<Self, AggregatorError> {
        use rustls::pki_types::pem::PemObject;
        let chain: Vec<_> = rustls::pki_types::CertificateDer::pem_slice_iter(
            front_proxy.client_cert_pem.as_bytes(),
        )
        .filter_map(Result::ok)
        .collect();
        let key =
            rustls::pki_types::PrivateKeyDer::from_pem_slice(front_proxy.client_key_pem.as_bytes())
                .map_err(|e| AggregatorError::Tls(format!("the front-proxy key: {e}")))?;
        if chain.is_empty() {
            return Err(AggregatorError::Tls(
                "the front-proxy certificate holds no PEM certificate".into(),
            ));
        }
        Ok(Self {
            chain,
            key,
            configs: Mutex::default(),
        })
    }

    fn config(
        &self,
        ca_bundle: &str,
        insecure: bool,
    ) -> Result<Arc<rustls::ClientConfig>, AggregatorError> {
        let key = (ca_bundle.to_owned(), insecure);
        if let Some(c) = self
            .configs
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&key)
        {
            return Ok(c.clone());
        }
        let provider = crate::auth::tls::provider();
        let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .map_err(|e| AggregatorError::Tls(e.to_string()))?
            .dangerous();
        let builder = if insecure {
            builder.with_custom_certificate_verifier(Arc::new(RootsVerifier::any_server(provider)))
        } else {
            let verifier = RootsVerifier::for_bundle(ca_bundle, provider)
                .map_err(|e| AggregatorError::Tls(e.to_string()))?;
            builder.with_custom_certificate_verifier(Arc::new(verifier))
        };
        let mut cfg = builder
            .with_client_auth_cert(self.chain.clone(), self.key.clone_key())
            .map_err(|e| AggregatorError::Tls(e.to_string()))?;
        cfg.alpn_protocols = vec![b"http/1.1".to_vec()];
        let cfg = Arc::new(cfg);
        let mut g = self.configs.lock().unwrap_or_else(PoisonError::into_inner);
        if g.len() >= MAX_CONFIGS {
            g.clear();
        }
        g.insert(key, cfg.clone());
        Ok(cfg)
    }

    /// A new connection to `addr`, verified as `server_name`; its driver runs on its own task
    /// until the answer's body is read or dropped.
    pub async fn connect(
        &self,
        addr: SocketAddr,
        server_name: &str,
        ca_bundle: &str,
        insecure: bool,
    ) -> Result<http1::SendRequest<Body>, AggregatorError> {
        let open = self.open(addr, server_name, ca_bundle, insecure);
        match tokio::time::timeout(CONNECT_TIMEOUT, open).await {
            Ok(r) => r,
            Err(_) => Err(AggregatorError::Call(format!(
                "dial tcp {addr}: i/o timeout"
            ))),
        }
    }

    async fn open(
        &self,
        addr: SocketAddr,
        server_name: &str,
        ca_bundle: &str,
        insecure: bool,
    ) -> Result<http1::SendRequest<Body>, AggregatorError> {
        let cfg = self.config(ca_bundle, insecure)?;
        let tcp = tokio::net::TcpStream::connect(addr).await.map_err(|e| {
            AggregatorError::Call(format!("dial tcp {addr}: connect: {}", go_io_error(&e)))
        })?;
        let _ = tcp.set_nodelay(true);
        let name = rustls::pki_types::ServerName::try_from(server_name.to_owned())
            .map_err(|e| AggregatorError::Tls(format!("server name {server_name:?}: {e}")))?;
        let tls = tokio_rustls::TlsConnector::from(cfg)
            .connect(name, tcp)
            .await
            .map_err(|e| AggregatorError::Call(tls_error(&e)))?;
        let (sender, conn) = http1::handshake(TokioIo::new(tls))
            .await
            .map_err(|e| AggregatorError::Call(error_chain(&e)))?;
        tokio::spawn(async move {
            let _ = conn.await;
        });
        Ok(sender)
    }
}

/// Why a Service's server cannot be reached, as the availability controller reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unresolved {
    ServiceNotFound,
    /// A ClusterIP Service without the APIService's port.
    PortError,
    /// No EndpointSlice of the Service.
    EndpointsNotFound,
    /// No ready endpoint with the port's name.
    MissingEndpoints {
        port_name: String,
    },
    /// An ExternalName that does not resolve.
    Lookup(String),
}

/// A ready endpoint of the Service `svc` names (its port mapped by name), or its ExternalName.
/// `pick` chooses among several ready ones.
pub async fn resolve(
    store: &dyn Store,
    svc: &ServiceRef,
    pick: usize,
) -> Result<SocketAddr, Unresolved> {
    let stored = store
        .get(&ObjectKey::new("services", &svc.namespace, &svc.name))
        .ok_or(Unresolved::ServiceNotFound)?;
    let spec = stored.pick("spec", &["type", "ports", "externalName"]);
    let kind = spec
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("ClusterIP");
    if kind == "ExternalName" {
        let host = spec
            .get("externalName")
            .and_then(Value::as_str)
            .unwrap_or("");
        let looked_up =
            tokio::time::timeout(LOOKUP_TIMEOUT, tokio::net::lookup_host((host, svc.port)))
                .await
                .map_err(|_| Unresolved::Lookup(format!("lookup {host}: i/o timeout")))?;
        let addrs: Vec<SocketAddr> = looked_up
            .map_err(|e| Unresolved::Lookup(format!("lookup {host}: {}", go_io_error(&e))))?
            .collect();
        // IPv4 first (`localhost` names both loopbacks; a server on one machine mostly
        // listens on 127.0.0.1).
        return addrs
            .iter()
            .find(|a| a.is_ipv4())
            .or(addrs.first())
            .copied()
            .ok_or_else(|| Unresolved::Lookup(format!("lookup {host}: no such host")));
    }
    let port = spec
        .get("ports")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .find(|p| p.get("port").and_then(Value::as_u64) == Some(u64::from(svc.port)));
    let port_name = match port {
        Some(p) => p
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned(),
        None if kind == "ClusterIP" => return Err(Unresolved::PortError),
        // kube checks only a ClusterIP Service's port and endpoints; for the others its
        // resolver's error is the discovery check's.
        None => {
            return Err(Unresolved::Lookup(format!(
                "no service port {} found for service {:?}",
                svc.port, svc.name
            )))
        }
    };
    let ready = ready_endpoints(store, &svc.namespace, &svc.name, &port_name);
    match ready {
        Some(r) if !r.is_empty() => Ok(r[pick % r.len()]),
        _ if kind != "ClusterIP" => Err(Unresolved::Lookup(format!(
            "no endpoints available for service {:?}",
            svc.name
        ))),
        None => Err(Unresolved::EndpointsNotFound),
        Some(_) => Err(Unresolved::MissingEndpoints { port_name }),
    }
}

/// The ready addresses of Service `namespace`/`name`'s EndpointSlices (the
/// `kubernetes.io/service-name` label) for the port named `port_name`, as kube's endpoint
/// resolver reads them; None when the Service has no EndpointSlice.
pub fn ready_endpoints(
    store: &dyn Store,
    namespace: &str,
    name: &str,
    port_name: &str,
) -> Option<Vec<SocketAddr>> {
    let slices = store.list("endpointslices.discovery.k8s.io", None).ok()?;
    let mut any = false;
    let mut out = Vec::new();
    // Only the namespace's slices (the snapshot is ordered by `NAMESPACE/NAME`).
    let prefix = format!("{namespace}/");
    let in_namespace = slices
        .items
        .range(prefix.clone()..)
        .take_while(|(k, _)| k.starts_with(&prefix))
        .map(|(_, o)| o);
    for slice in in_namespace {
        let head = slice.head();
        if meta::namespace(head) != namespace
            || meta::Meta::label(head, "kubernetes.io/service-name") != Some(name)
        {
            continue;
        }
        any = true;
        let v = slice.parse();
        let Some(port) = v
            .get("ports")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .find(|p| p.get("name").and_then(Value::as_str).unwrap_or("") == port_name)
            .and_then(|p| p.get("port").and_then(Value::as_u64))
            .and_then(|p| u16::try_from(p).ok())
        else {
            continue;
        };
        for ep in v
            .get("endpoints")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if ep.pointer("/conditions/ready").and_then(Value::as_bool) == Some(false) {
                continue;
            }
            if let Some(ip) = ep
                .get("addresses")
                .and_then(Value::as_array)
                .and_then(|a| a.first())
                .and_then(Value::as_str)
                .and_then(|a| a.parse::<std::net::IpAddr>().ok())
            {
                out.push(SocketAddr::new(ip, port));
            }
        }
    }
    any.then_some(out)
}

/// The name the server's certificate must hold.
pub fn server_name(svc: &ServiceRef) -> String {
    format!("{}.{}.svc", svc.name, svc.namespace)
}

/// kube's `proxyError`: plain text, as Go's `http.Error` writes it.
pub fn text_error(code: StatusCode, text: &str) -> Response {
    (
        code,
        [
            (header::CONTENT_TYPE, "text/plain; charset=utf-8"),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        ],
        format!("{text}\n"),
    )
        .into_response()
}

/// Hop-by-hop headers, never passed on.
const HOP_BY_HOP: &[&str] = &[
    "connection",
    "keep-alive",
    "proxy-authenticate",
    "proxy-authorization",
    "proxy-connection",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
];

/// Whether a client's header stays on the proxied request.
fn passed_on(name: &HeaderName) -> bool {
    let n = name.as_str();
    !(HOP_BY_HOP.contains(&n)
        || n == "host"
        || n == "authorization"
        || n.starts_with("impersonate-")
        || n == "x-remote-user"
        || n == "x-remote-uid"
        || n == "x-remote-group"
        || n.starts_with("x-remote-extra-"))
}

/// client-go's `headerKeyEscape`: every byte that is not an HTTP token character, and `%`,
/// as `%XX`.
pub fn escape_extra_key(key: &str) -> String {
    let mut out = String::with_capacity(key.len());
    for b in key.bytes() {
        let token = b.is_ascii_alphanumeric() || b"!#$&'*+-.^_`|~".contains(&b);
        if token {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The user as the front proxy hands it on (client-go's `SetAuthProxyHeaders`). A name,
/// group or value that cannot be a header value fails it (dropping one would change who the
/// server thinks asks).
pub fn set_user(headers: &mut HeaderMap, user: &UserInfo) -> Result<(), String> {
    let mut add = |name: &str, value: &str| -> Result<(), String> {
        let n = HeaderName::from_bytes(name.as_bytes())
            .map_err(|e| format!("invalid header name {name:?}: {e}"))?;
        let v = HeaderValue::from_str(value)
            .map_err(|e| format!("invalid value for header {name:?}: {e}"))?;
        headers.append(n, v);
        Ok(())
    };
    add("x-remote-user", &user.name)?;
    if !user.uid.is_empty() {
        add("x-remote-uid", &user.uid)?;
    }
    for g in &user.groups {
        add("x-remote-group", g)?;
    }
    for (k, vs) in &user.extra {
        let name = format!("x-remote-extra-{}", escape_extra_key(k));
        for v in vs {
            add(&name, v)?;
        }
    }
    Ok(())
}

/// Serve a request for a remote APIService (already authenticated and authorized): 503
/// `service unavailable` while it is not `Available` or its server cannot be resolved, else
/// passed on.
pub async fn serve(
    aggregator: &super::Aggregator,
    store: &dyn Store,
    api: &ApiService,
    discovery: bool,
    mut req: axum::extract::Request,
) -> Response {
    if !api.available {
        return text_error(StatusCode::SERVICE_UNAVAILABLE, "service unavailable");
    }
    let Some(user) = req
        .extensions()
        .get::<crate::auth::Principal>()
        .map(|p| p.0.clone())
    else {
        return text_error(StatusCode::INTERNAL_SERVER_ERROR, "missing user");
    };
    let Some(svc) = &api.service else {
        return text_error(StatusCode::NOT_FOUND, "");
    };
    // What was authorized is what goes: the decoded path (kube's aggregator sends
    // `location.Path = req.URL.Path`), written as Go writes it, so `%3A` goes as `:` and an
    // encoded `/` as the separator it was authorized as; and no path the server could read
    // otherwise.
    let decoded = match crate::api::request_info::unescape_path(req.uri().path()) {
        Ok(p) => p.into_owned(),
        Err(e) => return e.into_response(),
    };
    if !plain_path(&decoded) {
        return text_error(StatusCode::BAD_REQUEST, "invalid request path");
    }
    let escaped = crate::api::request_info::escape_path(&decoded);
    let target = match req.uri().query() {
        Some(q) => format!("{escaped}?{q}"),
        None => escaped,
    };
    match target.parse::<axum::http::Uri>() {
        Ok(u) => *req.uri_mut() = u,
        Err(_) => return text_error(StatusCode::BAD_REQUEST, "invalid request URI"),
    }
    // A watch holds a connection to the server for as long as it runs: bounded per user.
    let permit = if is_watch(req.uri().query().unwrap_or("")) {
        match aggregator.watches.acquire(&user.name) {
            Ok(p) => Some(p),
            Err(e) => return e.into_response(),
        }
    } else {
        None
    };
    let addr = match resolve(store, svc, aggregator.turn()).await {
        Ok(a) => a,
        Err(why) => {
            tracing::warn!(apiservice = %api.name, reason = ?why, "error resolving {}/{}", svc.namespace, svc.name);
            return text_error(StatusCode::SERVICE_UNAVAILABLE, "service unavailable");
        }
    };
    let resp = forward(&aggregator.client, api, svc, addr, &user, req, discovery).await;
    match permit {
        Some(permit) => resp.map(|body| {
            Body::new(Held {
                body,
                _permit: permit,
            })
        }),
        None => resp,
    }
}

/// A decoded path with no empty, `.` or `..` segment and no `\`: one the server reads as
/// turtles authorized it.
fn plain_path(path: &[u8]) -> bool {
    if path.contains(&b'\\') {
        return false;
    }
    let path = String::from_utf8_lossy(path);
    path.trim_end_matches('/')
        .split('/')
        .skip(1)
        .all(|s| !s.is_empty() && s != "." && s != "..")
}

/// `watch` true in a query (as kube reads a boolean parameter).
fn is_watch(query: &str) -> bool {
    query.split('&').any(|p| match p.split_once('=') {
        Some(("watch", v)) => !(v.eq_ignore_ascii_case("false") || v == "0"),
        None => p == "watch",
        _ => false,
    })
}

/// A body holding a permit until it is dropped (the stream ended or the client left).
struct Held<B> {
    body: B,
    _permit: crate::api::pod_streams::FollowPermit,
}

impl<B: hyper::body::Body + Unpin> hyper::body::Body for Held<B> {
    type Data = B::Data;
    type Error = B::Error;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<hyper::body::Frame<Self::Data>, Self::Error>>> {
        std::pin::Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        self.body.size_hint()
    }
}

/// Pass `req` on to `api`'s server at `addr` for `user`. `discovery`: the request is for the
/// group version's resource list, which gets [`DISCOVERY_TIMEOUT`].
pub async fn forward(
    client: &Client,
    api: &ApiService,
    svc: &ServiceRef,
    addr: SocketAddr,
    user: &UserInfo,
    req: axum::extract::Request,
    discovery: bool,
) -> Response {
    let sender = client
        .connect(
            addr,
            &server_name(svc),
            &api.ca_bundle,
            api.insecure_skip_tls_verify,
        )
        .await;
    let mut sender = match sender {
        Ok(s) => s,
        Err(AggregatorError::Call(e)) => return text_error(StatusCode::SERVICE_UNAVAILABLE, &e),
        Err(e) => return text_error(StatusCode::INTERNAL_SERVER_ERROR, &e.to_string()),
    };
    let (parts, body) = req.into_parts();
    let target = parts
        .uri
        .path_and_query()
        .map_or("/", |p| p.as_str())
        .to_owned();
    let mut out = hyper::Request::new(body);
    *out.method_mut() = parts.method.clone();
    *out.uri_mut() = match target.parse() {
        Ok(u) => u,
        Err(_) => return text_error(StatusCode::BAD_REQUEST, "invalid request URI"),
    };
    let headers = out.headers_mut();
    for (name, value) in &parts.headers {
        if passed_on(name) {
            headers.append(name.clone(), value.clone());
        }
    }
    if let Ok(host) = HeaderValue::from_str(&addr.to_string()) {
        headers.insert(header::HOST, host);
    }
    if let Err(e) = set_user(headers, user) {
        return text_error(StatusCode::INTERNAL_SERVER_ERROR, &e);
    }
    let limit = if discovery {
        DISCOVERY_TIMEOUT
    } else {
        ANSWER_TIMEOUT
    };
    let answer = match tokio::time::timeout(limit, sender.send_request(out)).await {
        Ok(r) => r,
        Err(_) => return text_error(StatusCode::SERVICE_UNAVAILABLE, "context deadline exceeded"),
    };
    let answer = match answer {
        Ok(a) => a,
        Err(e) => return text_error(StatusCode::SERVICE_UNAVAILABLE, &error_chain(&e)),
    };
    // kube's `--aggregator-reject-forwarding-redirect` (on by default).
    if answer.status().is_redirection() && answer.headers().contains_key(header::LOCATION) {
        return text_error(
            StatusCode::BAD_GATEWAY,
            "the backend attempted to redirect this request, which is not permitted",
        );
    }
    let (mut head, incoming) = answer.into_parts();
    let names: Vec<HeaderName> = head
        .headers
        .keys()
        .filter(|n| HOP_BY_HOP.contains(&n.as_str()))
        .cloned()
        .collect();
    for n in names {
        head.headers.remove(n);
    }
    Response::from_parts(head, Body::new(incoming))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_plain_paths_are_passed_on() {
        let plain = |p: &str| {
            let decoded = crate::api::request_info::unescape_path(p).expect("decodes");
            plain_path(&decoded)
        };
        assert!(plain("/apis/metrics.k8s.io/v1beta1"));
        assert!(plain("/apis/metrics.k8s.io/v1beta1/"));
        assert!(plain("/apis/m/v1/namespaces/a/pods/p"));
        // An encoded `/` is a separator once decoded, as turtles authorized it and kube sends it.
        assert!(plain("/apis/m/v1/pods/a%2fb"));
        assert!(plain("/apis/m/v1/pods/system%3Anode"));
        for odd in [
            "/apis/m/v1/namespaces/a/pods/../../b/pods",
            "/apis/m/v1/./pods",
            "/apis/m/v1//pods",
            "/apis/m/v1/pods/%2E%2e",
            "/apis/m/v1/pods/a%2f%2fb",
            "/apis/m/v1/pods/a%5Cb",
        ] {
            assert!(!plain(odd), "{odd}");
        }
    }

    /// kube's aggregator sends the decoded path, which Go's client writes with
    /// `escape(path, encodePath)`.
    #[test]
    fn the_decoded_path_is_passed_on_as_go_writes_it() {
        let sent = |p: &str| {
            let decoded = crate::api::request_info::unescape_path(p).expect("decodes");
            crate::api::request_info::escape_path(&decoded)
        };
        assert_eq!(
            sent("/apis/m/v1/namespaces/a/pods/system%3Anode"),
            "/apis/m/v1/namespaces/a/pods/system:node"
        );
        assert_eq!(
            sent("/apis/m/v1/pods/weird%20role"),
            "/apis/m/v1/pods/weird%20role"
        );
        assert_eq!(
            sent("/apis/m/v1/pods/r%c3%b4le"),
            "/apis/m/v1/pods/r%C3%B4le"
        );
        assert_eq!(sent("/apis/m/v1/pods/a%2Fb"), "/apis/m/v1/pods/a/b");
        assert_eq!(
            sent("/apis/m/v1/pods/a%3Fb%25c%23"),
            "/apis/m/v1/pods/a%3Fb%25c%23"
        );
        assert_eq!(sent("/apis/m/v1/pods/a+b@c"), "/apis/m/v1/pods/a+b@c");
    }

    #[test]
    fn watches_are_told_as_kube_reads_the_parameter() {
        assert!(is_watch("watch=true"));
        assert!(is_watch("limit=1&watch=1"));
        assert!(is_watch("watch"));
        assert!(is_watch("watch="));
        assert!(!is_watch("watch=false"));
        assert!(!is_watch("watch=0"));
        assert!(!is_watch("allowWatchBookmarks=true"));
    }

    #[test]
    fn extra_keys_are_escaped_as_client_go_does() {
        assert_eq!(
            escape_extra_key("authentication.kubernetes.io/pod-name"),
            "authentication.kubernetes.io%2Fpod-name"
        );
        assert_eq!(escape_extra_key("a b%c:d"), "a%20b%25c%3Ad");
    }

    #[test]
    fn the_client_cannot_pass_its_own_identity_on() {
        let mut h = HeaderMap::new();
        for (k, v) in [
            ("authorization", "Bearer secret"),
            ("impersonate-user", "root"),
            ("x-remote-user", "root"),
            ("x-remote-group", "system:masters"),
            ("x-remote-extra-scopes", "all"),
            ("connection", "close"),
            ("accept", "application/json"),
        ] {
            h.append(HeaderName::from_static(k), HeaderValue::from_static(v));
        }
        let kept: Vec<&str> = h
            .keys()
            .filter(|n| passed_on(n))
            .map(|n| n.as_str())
            .collect();
        assert_eq!(kept, vec!["accept"]);
        let mut out = HeaderMap::new();
        let user = UserInfo {
            name: "alice".into(),
            uid: "u-1".into(),
            groups: vec!["dev".into(), "system:authenticated".into()],
            extra: [(
                "authentication.kubernetes.io/pod-name".to_owned(),
                vec!["p".to_owned()],
            )]
            .into_iter()
            .collect(),
        };
        set_user(&mut out, &user).unwrap();
        assert_eq!(out.get("x-remote-user").unwrap(), "alice");
        assert_eq!(out.get("x-remote-uid").unwrap(), "u-1");
        let groups: Vec<_> = out.get_all("x-remote-group").iter().collect();
        assert_eq!(groups, vec!["dev", "system:authenticated"]);
        assert_eq!(
            out.get("x-remote-extra-authentication.kubernetes.io%2Fpod-name")
                .unwrap(),
            "p"
        );
    }
}
