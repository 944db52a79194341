//! An HTTPS admission (or CRD conversion) webhook on loopback, for the tests and the bench: its
//! own CA, a serving certificate for 127.0.0.1, a thread per connection answering
//! AdmissionReviews or ConversionReviews with a handler (by request path, without the query),
//! keeping connections alive as a real webhook server does. The request targets (path and
//! query) it was called at are kept.

use std::collections::BTreeSet;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::Result;
use base64::Engine;
use serde_json::{json, Value};

/// Answers one AdmissionReview: (request path without its query, `request`) -> `response` (its
/// `uid` is set).
pub type Handler = fn(&str, &Value) -> Value;

pub struct Webhook {
    pub url: String,
    /// The CA's PEM, base64 (a `caBundle`).
    pub ca_bundle: String,
    /// The CA's PEM.
    pub ca_pem: String,
    /// AdmissionReviews answered so far.
    pub calls: Arc<AtomicUsize>,
    /// The distinct request targets (`/path?query`) called so far (at most [`MAX_TARGETS`]).
    pub targets: Arc<Mutex<BTreeSet<String>>>,
}

/// The most distinct request targets a webhook keeps.
pub const MAX_TARGETS: usize = 1000;

impl Webhook {
    /// Whether the webhook was called at this target (`/path?query`).
    pub fn called_at(&self, target: &str) -> bool {
        self.targets
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .contains(target)
    }
}

/// A webhook serving a certificate for 127.0.0.1 issued by its own CA.
pub fn start(handler: Handler) -> Result<Webhook> {
    start_with(handler, false)
}

/// A webhook serving a self-signed certificate marked as a CA (what `openssl req -x509` makes),
/// which is its own `caBundle`.
pub fn start_self_signed(handler: Handler) -> Result<Webhook> {
    start_with(handler, true)
}

fn start_with(handler: Handler, self_signed: bool) -> Result<Webhook> {
    use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair};
    let ca_key = KeyPair::generate()?;
    let mut ca_params = CertificateParams::new(if self_signed {
        vec!["127.0.0.1".to_string()]
    } else {
        Vec::new()
    })?;
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca_cert = ca_params.self_signed(&ca_key)?;
    let (cert, key) = if self_signed {
        (ca_cert.clone(), ca_key)
    } else {
        let issuer = Issuer::new(ca_params, ca_key);
        let key = KeyPair::generate()?;
        let cert =
            CertificateParams::new(vec!["127.0.0.1".to_string()])?.signed_by(&key, &issuer)?;
        (cert, key)
    };
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let cfg = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_no_client_auth()
        .with_single_cert(
            vec![cert.der().clone()],
            rustls::pki_types::PrivateKeyDer::try_from(key.serialize_der())
                .map_err(anyhow::Error::msg)?,
        )?;
    let cfg = Arc::new(cfg);
    let listener = TcpListener::bind("127.0.0.1:0")?;
    let port = listener.local_addr()?.port();
    let calls = Arc::new(AtomicUsize::new(0));
    let targets = Arc::new(Mutex::new(BTreeSet::new()));
    let (counter, seen) = (calls.clone(), targets.clone());
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(conn) = conn else { continue };
            let (cfg, counter, seen) = (cfg.clone(), counter.clone(), seen.clone());
            std::thread::spawn(move || {
                let _ = serve(conn, cfg, handler, &counter, &seen);
            });
        }
    });
    Ok(Webhook {
        url: format!("https://127.0.0.1:{port}"),
        ca_bundle: base64::engine::general_purpose::STANDARD.encode(ca_cert.pem()),
        ca_pem: ca_cert.pem(),
        calls,
        targets,
    })
}

/// Answer requests on one connection until the client closes it.
fn serve(
    conn: TcpStream,
    cfg: Arc<rustls::ServerConfig>,
    handler: Handler,
    calls: &AtomicUsize,
    targets: &Mutex<BTreeSet<String>>,
) -> std::io::Result<()> {
    conn.set_read_timeout(Some(Duration::from_secs(60)))?;
    conn.set_nodelay(true)?;
    let tls = rustls::ServerConnection::new(cfg).map_err(std::io::Error::other)?;
    let mut stream = rustls::StreamOwned::new(tls, conn);
    let mut buf: Vec<u8> = Vec::new();
    loop {
        let Some((head, body)) = read_request(&mut stream, &mut buf)? else {
            return Ok(());
        };
        let target = head.split_whitespace().nth(1).unwrap_or("/").to_owned();
        let path = target.split('?').next().unwrap_or("/");
        let review: Value = serde_json::from_slice(&body).unwrap_or_default();
        {
            let mut seen = targets
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if seen.len() < MAX_TARGETS {
                seen.insert(target.clone());
            }
        }
        calls.fetch_add(1, Ordering::SeqCst);
        let mut response = handler(path, &review["request"]);
        response["uid"] = review["request"]["uid"].clone();
        // The review's own kind and version (an AdmissionReview or a ConversionReview).
        let or = |v: &Value, d: &str| v.as_str().unwrap_or(d).to_owned();
        let body = json!({"apiVersion": or(&review["apiVersion"], "admission.k8s.io/v1"),
                          "kind": or(&review["kind"], "AdmissionReview"),
                          "response": response})
        .to_string();
        let out = format!(
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        );
        stream.write_all(out.as_bytes())?;
        stream.flush()?;
    }
}

/// Read one HTTP/1.1 request from `stream` (`buf` keeps what was read past it): its head as
/// text and its body (`Content-Length` bytes). None when the client closed the connection.
pub fn read_request(
    stream: &mut impl Read,
    buf: &mut Vec<u8>,
) -> std::io::Result<Option<(String, Vec<u8>)>> {
    let mut chunk = [0u8; 16 * 1024];
    let (head_end, length) = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..i]).to_lowercase();
            let length = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .and_then(|v| v.trim().parse::<usize>().ok())
                .unwrap_or(0);
            break (i + 4, length);
        }
        if buf.len() > 1 << 20 {
            return Ok(None);
        }
        let n = stream.read(&mut chunk)?;
        if n == 0 {
            return Ok(None);
        }
        buf.extend_from_slice(&chunk[..n]);
    };
    while buf.len() < head_end + length {
        let n = stream.read(&mut chunk)?;
        if n == 0 {
            return Ok(None);
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    let head = String::from_utf8_lossy(&buf[..head_end]).to_string();
    let body = buf[head_end..head_end + length].to_vec();
    buf.drain(..head_end + length);
    Ok(Some((head, body)))
}
