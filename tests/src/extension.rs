//! An extension API server on loopback for the aggregation tests: `metrics.k8s.io/v1beta1` as
//! metrics-server serves it (aggregated discovery at `/apis`, the group version's resource list,
//! PodMetrics lists and a watch), over TLS with its own CA and a serving certificate for
//! `NAME.NAMESPACE.svc`, trusting only client certificates of the front-proxy CA it is given
//! (what it reads from `extension-apiserver-authentication`). It records every request it
//! serves: the method, the path and query, the headers.

use std::io::Write;
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU16, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::Result;
use base64::Engine;
use serde_json::{json, Value};

/// One request the server answered.
#[derive(Debug, Clone)]
pub struct Seen {
    pub method: String,
    pub target: String,
    /// Header names lower-cased, in order (repeated headers repeated).
    pub headers: Vec<(String, String)>,
    /// The DER of the client certificate it verified.
    pub client_cert: Vec<u8>,
}

impl Seen {
    pub fn header_values(&self, name: &str) -> Vec<&str> {
        self.headers
            .iter()
            .filter(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
            .collect()
    }
}

pub struct Extension {
    pub port: u16,
    /// The serving CA's PEM, base64 (an APIService's `caBundle`).
    pub ca_bundle: String,
    pub seen: Arc<Mutex<Vec<Seen>>>,
    /// Non-zero: every request is answered with this status.
    pub fail_with: Arc<AtomicU16>,
    /// A watch sends its second event once this is set.
    pub release: Arc<AtomicBool>,
}

impl Extension {
    pub fn requests(&self) -> Vec<Seen> {
        self.seen.lock().map(|g| g.clone()).unwrap_or_default()
    }
}

/// Start it: serving `server_name`, verifying clients with `client_ca_pem`.
pub fn start(server_name: &str, client_ca_pem: &str) -> Result<Extension> {
    use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair};
    let ca_key = KeyPair::generate()?;
    let mut ca_params = CertificateParams::new(Vec::<String>::new())?;
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca_cert = ca_params.self_signed(&ca_key)?;
    let issuer = Issuer::new(ca_params, ca_key);
    let key = KeyPair::generate()?;
    let cert = CertificateParams::new(vec![server_name.to_string()])?.signed_by(&key, &issuer)?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut roots = rustls::RootCertStore::empty();
    {
        use rustls::pki_types::pem::PemObject;
        for c in rustls::pki_types::CertificateDer::pem_slice_iter(client_ca_pem.as_bytes()) {
            roots.add(c?)?;
        }
    }
    let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
        Arc::new(roots),
        provider.clone(),
    )
    .build()?;
    let cfg = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_client_cert_verifier(verifier)
        .with_single_cert(
            vec![cert.der().clone()],
            rustls::pki_types::PrivateKeyDer::try_from(key.serialize_der())
                .map_err(anyhow::Error::msg)?,
        )?;
    let cfg = Arc::new(cfg);
    let listener = TcpListener::bind("127.0.0.1:0")?;
    let port = listener.local_addr()?.port();
    let ext = Extension {
        port,
        ca_bundle: base64::engine::general_purpose::STANDARD.encode(ca_cert.pem()),
        seen: Arc::default(),
        fail_with: Arc::default(),
        release: Arc::default(),
    };
    let (seen, fail, release) = (ext.seen.clone(), ext.fail_with.clone(), ext.release.clone());
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(conn) = conn else { continue };
            let (cfg, seen, fail, release) =
                (cfg.clone(), seen.clone(), fail.clone(), release.clone());
            std::thread::spawn(move || {
                let _ = serve(conn, cfg, &seen, &fail, &release);
            });
        }
    });
    Ok(ext)
}

fn pod_metrics(ns: &str, name: &str) -> Value {
    json!({"metadata": {"name": name, "namespace": ns, "creationTimestamp": "2026-12-01T00:00:00Z"},
           "timestamp": "2026-12-01T00:00:00Z", "window": "10s",
           "containers": [{"name": "main", "usage": {"cpu": "5m", "memory": "10Mi"}}]})
}

/// The answer to one request: status, content type, body (None: a watch).
fn answer(method: &str, path: &str, query: &str) -> (u16, &'static str, Option<String>) {
    const JSON: &str = "application/json";
    let resources = json!([
        {"name": "nodes", "singularName": "", "namespaced": false, "kind": "NodeMetrics", "verbs": ["get", "list"]},
        {"name": "pods", "singularName": "", "namespaced": true, "kind": "PodMetrics", "verbs": ["get", "list"]}
    ]);
    if method != "GET" {
        return (
            405,
            JSON,
            Some(
                json!({"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": 405})
                    .to_string(),
            ),
        );
    }
    let segs: Vec<&str> = path.trim_matches('/').split('/').collect();
    match segs.as_slice() {
        ["apis"] => {
            let kind = |k: &str| json!({"group": "metrics.k8s.io", "version": "v1beta1", "kind": k});
            let doc = json!({"kind": "APIGroupDiscoveryList", "apiVersion": "apidiscovery.k8s.io/v2", "metadata": {},
                "items": [{"metadata": {"name": "metrics.k8s.io", "creationTimestamp": null}, "versions": [{"version": "v1beta1", "freshness": "Current",
                    "resources": [
                        {"resource": "nodes", "responseKind": kind("NodeMetrics"), "scope": "Cluster", "singularResource": "", "verbs": ["get", "list"]},
                        {"resource": "pods", "responseKind": kind("PodMetrics"), "scope": "Namespaced", "singularResource": "", "verbs": ["get", "list"]}]}]}]});
            (200, "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList", Some(doc.to_string()))
        }
        ["openapi", "v3"] => (
            200,
            JSON,
            Some(json!({"paths": {"apis/metrics.k8s.io/v1beta1": {
                "serverRelativeURL": "/openapi/v3/apis/metrics.k8s.io/v1beta1?hash=ABC"}}}).to_string()),
        ),
        ["openapi", "v3", "apis", "metrics.k8s.io", "v1beta1"] => {
            let s = |d: &str| json!({"type": "string", "description": d});
            let gvk = json!({"group": "metrics.k8s.io", "version": "v1beta1", "kind": "PodMetrics"});
            let schema = json!({"$ref": "#/components/schemas/io.k8s.metrics.pkg.apis.metrics.v1beta1.PodMetrics"});
            let op = |action: &str| json!({"get": {"x-kubernetes-action": action, "x-kubernetes-group-version-kind": gvk,
                "responses": {"200": {"description": "OK", "content": {"application/json": {"schema": schema}}}}}});
            let doc = json!({"openapi": "3.0.0", "info": {"title": "metrics-server", "version": "v0.7.2"},
                "paths": {"/apis/metrics.k8s.io/v1beta1/namespaces/{namespace}/pods/{name}": op("get"),
                          "/apis/metrics.k8s.io/v1beta1/namespaces/{namespace}/pods": op("list")},
                "components": {"schemas": {"io.k8s.metrics.pkg.apis.metrics.v1beta1.PodMetrics": {
                    "description": "PodMetrics sets resource usage metrics of a pod.",
                    "type": "object",
                    "properties": {
                        "apiVersion": s("APIVersion defines the versioned schema of this representation of an object."),
                        "kind": s("Kind is a string value representing the REST resource this object represents."),
                        "timestamp": s("The following fields define time interval from which metrics were collected."),
                        "window": s("The length of the interval."),
                        "containers": {"type": "array", "items": {"type": "object"},
                                       "description": "Metrics for all containers are collected within the same time window."}},
                    "x-kubernetes-group-version-kind": [{"group": "metrics.k8s.io", "kind": "PodMetrics", "version": "v1beta1"}]}}}});
            (200, JSON, Some(doc.to_string()))
        }
        ["apis", "metrics.k8s.io", "v1beta1"] => (
            200,
            JSON,
            Some(json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": "metrics.k8s.io/v1beta1", "resources": resources}).to_string()),
        ),
        ["apis", "metrics.k8s.io", "v1beta1", "namespaces", ns, "pods"] => {
            if query.split('&').any(|p| p == "watch=true" || p == "watch=1") {
                return (200, JSON, None);
            }
            (
                200,
                JSON,
                Some(json!({"kind": "PodMetricsList", "apiVersion": "metrics.k8s.io/v1beta1", "metadata": {},
                            "items": [pod_metrics(ns, "busy")]}).to_string()),
            )
        }
        _ => (
            404,
            JSON,
            Some(json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                        "reason": "NotFound", "code": 404, "message": "the server could not find the requested resource"}).to_string()),
        ),
    }
}

fn serve(
    conn: TcpStream,
    cfg: Arc<rustls::ServerConfig>,
    seen: &Mutex<Vec<Seen>>,
    fail: &AtomicU16,
    release: &AtomicBool,
) -> std::io::Result<()> {
    conn.set_read_timeout(Some(Duration::from_secs(60)))?;
    let tls = rustls::ServerConnection::new(cfg).map_err(std::io::Error::other)?;
    let mut stream = rustls::StreamOwned::new(tls, conn);
    let mut buf: Vec<u8> = Vec::new();
    loop {
        let Some((head, _)) = crate::webhook::read_request(&mut stream, &mut buf)? else {
            return Ok(());
        };
        let mut lines = head.lines();
        let mut first = lines.next().unwrap_or("").split_whitespace();
        let method = first.next().unwrap_or("").to_owned();
        let target = first.next().unwrap_or("/").to_owned();
        let headers: Vec<(String, String)> = lines
            .filter_map(|l| l.split_once(':'))
            .map(|(n, v)| (n.trim().to_lowercase(), v.trim().to_owned()))
            .collect();
        let client_cert = stream
            .conn
            .peer_certificates()
            .and_then(|c| c.first())
            .map(|c| c.as_ref().to_vec())
            .unwrap_or_default();
        if let Ok(mut g) = seen.lock() {
            g.push(Seen {
                method: method.clone(),
                target: target.clone(),
                headers,
                client_cert,
            });
        }
        let (path, query) = target.split_once('?').unwrap_or((&target, ""));
        let failing = fail.load(Ordering::SeqCst);
        let (status, ctype, body) = if failing != 0 {
            (failing, "text/plain", Some("failing on purpose".to_owned()))
        } else {
            answer(&method, path, query)
        };
        let Some(body) = body else {
            // A watch: one event now, the second once released, then the end.
            let event = |name: &str| {
                let e = json!({"type": "ADDED", "object": pod_metrics("default", name)})
                    .to_string()
                    + "\n";
                format!("{:x}\r\n{e}\r\n", e.len())
            };
            let head = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n";
            stream.write_all(format!("{head}{}", event("first")).as_bytes())?;
            stream.flush()?;
            let deadline = std::time::Instant::now() + Duration::from_secs(60);
            while !release.load(Ordering::SeqCst) && std::time::Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(10));
            }
            stream.write_all(format!("{}0\r\n\r\n", event("second")).as_bytes())?;
            stream.flush()?;
            continue;
        };
        let out = format!(
            "HTTP/1.1 {status} X\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        );
        stream.write_all(out.as_bytes())?;
        stream.flush()?;
    }
}
