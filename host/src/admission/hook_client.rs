//! The HTTPS client that calls admission webhooks.
//!
//! HTTP/1.1 keep-alive connections are kept idle per endpoint (CA bundle, host, port, address).
//! A call takes one, and the call's own task drives it: it writes the request and reads the
//! answer on the connection itself. No connection task runs beside it, so a call adds no hop
//! between tasks (or threads) to the webhook's own round trip. A general-purpose client (hyper's
//! pooled client under reqwest) spawns a task per connection and hands each request and answer
//! across to it; `docs/benchmarks.md` (admission) has what leaving that out saved.

use std::collections::HashMap;
use std::future::Future;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use base64::Engine;
use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Body;
use hyper::client::conn::http1;
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;

type Io = TokioIo<TlsStream<TcpStream>>;

/// Idle connections kept per endpoint, and endpoints kept at most.
const IDLE_PER_ENDPOINT: usize = 16;
const MAX_ENDPOINTS: usize = 64;

#[derive(Debug, thiserror::Error)]
pub(crate) enum HookClientError {
    /// The configuration cannot be used (bad URL, bad CA bundle).
    #[error("{0}")]
    Config(String),
    /// The call failed; the text reads as Go's `http.Client` error after `failed to call webhook: `.
    #[error("{0}")]
    Call(String),
    /// The answer is larger than the limit.
    #[error("the response is too large")]
    TooLarge,
}

/// One open connection: the handle to send on and the connection it drives.
struct Conn {
    sender: http1::SendRequest<Full<Bytes>>,
    conn: Pin<Box<http1::Connection<Io, Full<Bytes>>>>,
}

/// Where a connection goes: the CA bundle it trusts, the host name it verified, its port and the
/// address it connected to.
#[derive(Clone, PartialEq, Eq, Hash)]
struct Endpoint {
    ca_bundle: String,
    host: String,
    port: u16,
    addr: SocketAddr,
}

#[derive(Default)]
pub(crate) struct HookClient {
    /// TLS configurations by CA bundle.
    tls: Mutex<HashMap<String, Arc<rustls::ClientConfig>>>,
    idle: Mutex<HashMap<Endpoint, Vec<Conn>>>,
}

impl std::fmt::Debug for HookClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HookClient").finish_non_exhaustive()
    }
}

/// An answer: its status code and body.
pub(crate) struct Answer {
    pub status: u16,
    pub body: Vec<u8>,
}

impl HookClient {
    /// POST `body` (JSON) to `url` (https), trusting `ca_bundle` (base64 PEM; empty: no CA, so
    /// no server is trusted) and connecting to `resolve` when given instead of the URL's host.
    /// Reads at most `limit` bytes of answer.
    pub(crate) async fn post(
        &self,
        ca_bundle: &str,
        url: &str,
        resolve: Option<SocketAddr>,
        body: Vec<u8>,
        limit: usize,
    ) -> Result<Answer, HookClientError> {
        let uri: hyper::Uri = url
            .parse()
            .map_err(|e| HookClientError::Config(format!("invalid URL {url:?}: {e}")))?;
        if uri.scheme_str() != Some("https") {
            return Err(HookClientError::Config(format!(
                "invalid URL {url:?}: the scheme must be https"
            )));
        }
        let host = uri
            .host()
            .ok_or_else(|| HookClientError::Config(format!("invalid URL {url:?}: no host")))?
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_owned();
        let port = uri.port_u16().unwrap_or(443);
        let addr = match resolve {
            Some(a) => a,
            None => match host.parse::<IpAddr>() {
                Ok(ip) => SocketAddr::new(ip, port),
                Err(_) => tokio::net::lookup_host((host.as_str(), port))
                    .await
                    .map_err(|e| {
                        HookClientError::Call(format!(
                            "Post \"{url}\": dial tcp: lookup {host}: {e}"
                        ))
                    })?
                    .next()
                    .ok_or_else(|| {
                        HookClientError::Call(format!(
                            "Post \"{url}\": dial tcp: lookup {host}: no such host"
                        ))
                    })?,
            },
        };
        let endpoint = Endpoint {
            ca_bundle: ca_bundle.to_owned(),
            host,
            port,
            addr,
        };
        let authority = uri
            .authority()
            .map(|a| a.as_str().to_owned())
            .unwrap_or_default();
        let path = uri
            .path_and_query()
            .map(|p| p.as_str().to_owned())
            .unwrap_or_else(|| "/".to_owned());
        let body = Bytes::from(body);
        let request = || {
            hyper::Request::post(path.as_str())
                .header(hyper::header::HOST, authority.as_str())
                .header(hyper::header::CONTENT_TYPE, "application/json")
                .header(hyper::header::ACCEPT, "application/json")
                .body(Full::new(body.clone()))
                .map_err(|e| HookClientError::Config(format!("invalid URL {url:?}: {e}")))
        };
        // A kept connection the server closed while idle fails before any answer: the call is
        // made again once, on a new connection (as Go's transport retries on a reused one).
        if let Some(conn) = self.checkout(&endpoint) {
            match exchange(conn, request()?, limit).await {
                Ok((answer, conn)) => {
                    if let Some(conn) = conn {
                        self.checkin(endpoint, conn);
                    }
                    return Ok(answer);
                }
                Err(Failure::Stale) => {}
                Err(Failure::Other(e)) => return Err(e),
            }
        }
        let conn = self.connect(&endpoint, url).await?;
        match exchange(conn, request()?, limit).await {
            Ok((answer, conn)) => {
                if let Some(conn) = conn {
                    self.checkin(endpoint, conn);
                }
                Ok(answer)
            }
            Err(Failure::Stale) => Err(HookClientError::Call(format!("Post \"{url}\": EOF"))),
            Err(Failure::Other(e)) => Err(e),
        }
    }

    /// An idle connection to `endpoint` that is still open.
    fn checkout(&self, endpoint: &Endpoint) -> Option<Conn> {
        let mut idle = self.idle.lock().ok()?;
        let list = idle.get_mut(endpoint)?;
        while let Some(mut c) = list.pop() {
            // Polled once without a task: a connection whose peer has gone is done now.
            let mut cx = Context::from_waker(std::task::Waker::noop());
            if c.sender.is_closed() || c.conn.as_mut().poll(&mut cx).is_ready() {
                continue;
            }
            return Some(c);
        }
        None
    }

    fn checkin(&self, endpoint: Endpoint, conn: Conn) {
        if conn.sender.is_closed() {
            return;
        }
        if let Ok(mut idle) = self.idle.lock() {
            if idle.len() >= MAX_ENDPOINTS && !idle.contains_key(&endpoint) {
                idle.clear();
            }
            let list = idle.entry(endpoint).or_default();
            if list.len() < IDLE_PER_ENDPOINT {
                list.push(conn);
            }
        }
    }

    async fn connect(&self, endpoint: &Endpoint, url: &str) -> Result<Conn, HookClientError> {
        let tls = self.tls_config(&endpoint.ca_bundle)?;
        let dial = |e: std::io::Error| {
            HookClientError::Call(format!(
                "Post \"{url}\": dial tcp {}: connect: {}",
                endpoint.addr,
                go_io_error(&e)
            ))
        };
        let tcp = TcpStream::connect(endpoint.addr).await.map_err(dial)?;
        tcp.set_nodelay(true).map_err(dial)?;
        let name = rustls::pki_types::ServerName::try_from(endpoint.host.clone())
            .map_err(|e| HookClientError::Config(format!("invalid URL {url:?}: {e}")))?;
        let stream = tokio_rustls::TlsConnector::from(tls)
            .connect(name, tcp)
            .await
            .map_err(|e| {
                HookClientError::Call(format!("Post \"{url}\": tls: {}", error_chain(&e)))
            })?;
        let (sender, conn) = http1::handshake(TokioIo::new(stream))
            .await
            .map_err(|e| HookClientError::Call(format!("Post \"{url}\": {}", error_chain(&e))))?;
        Ok(Conn {
            sender,
            conn: Box::pin(conn),
        })
    }

    fn tls_config(&self, ca_bundle: &str) -> Result<Arc<rustls::ClientConfig>, HookClientError> {
        if let Ok(map) = self.tls.lock() {
            if let Some(c) = map.get(ca_bundle) {
                return Ok(c.clone());
            }
        }
        let mut roots = rustls::RootCertStore::empty();
        let mut anchors = Vec::new();
        if !ca_bundle.is_empty() {
            use rustls::pki_types::pem::PemObject;
            let pem = base64::engine::general_purpose::STANDARD
                .decode(ca_bundle)
                .map_err(|e| HookClientError::Config(format!("caBundle: {e}")))?;
            for cert in rustls::pki_types::CertificateDer::pem_slice_iter(&pem) {
                let cert = cert.map_err(|e| HookClientError::Config(format!("caBundle: {e}")))?;
                roots
                    .add(cert.clone())
                    .map_err(|e| HookClientError::Config(format!("caBundle: {e}")))?;
                anchors.push(cert);
            }
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let verifier = RootsVerifier::new(roots, anchors, provider.clone())?;
        let mut cfg = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| HookClientError::Config(format!("webhook client: {e}")))?
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(verifier))
            .with_no_client_auth();
        cfg.alpn_protocols = vec![b"http/1.1".to_vec()];
        let cfg = Arc::new(cfg);
        if let Ok(mut map) = self.tls.lock() {
            if map.len() >= MAX_ENDPOINTS {
                map.clear();
            }
            map.insert(ca_bundle.to_owned(), cfg.clone());
        }
        Ok(cfg)
    }
}

/// The web PKI's verification of the server's certificate, plus what Go's `crypto/x509` (and so
/// kube) also accepts: a server certificate that is itself one of the trusted certificates, even
/// one marked as a CA (`openssl req -x509` makes such certificates, and many webhook setups serve
/// one with itself as the `caBundle`). Its name and validity period are still checked.
#[derive(Debug)]
struct RootsVerifier {
    inner: Option<Arc<rustls::client::WebPkiServerVerifier>>,
    anchors: Vec<rustls::pki_types::CertificateDer<'static>>,
    provider: Arc<rustls::crypto::CryptoProvider>,
}

impl RootsVerifier {
    fn new(
        roots: rustls::RootCertStore,
        anchors: Vec<rustls::pki_types::CertificateDer<'static>>,
        provider: Arc<rustls::crypto::CryptoProvider>,
    ) -> Result<Self, HookClientError> {
        // No CA bundle: no server is trusted (kube would use the system's roots; turtles ships
        // none, see docs/admission.md).
        let inner = if roots.is_empty() {
            None
        } else {
            Some(
                rustls::client::WebPkiServerVerifier::builder_with_provider(
                    Arc::new(roots),
                    provider.clone(),
                )
                .build()
                .map_err(|e| HookClientError::Config(format!("caBundle: {e}")))?,
            )
        };
        Ok(Self {
            inner,
            anchors,
            provider,
        })
    }
}

impl rustls::client::danger::ServerCertVerifier for RootsVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &rustls::pki_types::CertificateDer<'_>,
        intermediates: &[rustls::pki_types::CertificateDer<'_>],
        server_name: &rustls::pki_types::ServerName<'_>,
        ocsp_response: &[u8],
        now: rustls::pki_types::UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        let Some(inner) = &self.inner else {
            return Err(rustls::Error::InvalidCertificate(
                rustls::CertificateError::UnknownIssuer,
            ));
        };
        let err = match inner.verify_server_cert(
            end_entity,
            intermediates,
            server_name,
            ocsp_response,
            now,
        ) {
            Ok(v) => return Ok(v),
            Err(e) => e,
        };
        if !self
            .anchors
            .iter()
            .any(|a| a.as_ref() == end_entity.as_ref())
        {
            return Err(err);
        }
        let parsed = rustls::server::ParsedCertificate::try_from(end_entity)?;
        rustls::client::verify_server_name(&parsed, server_name)?;
        let valid = x509_parser::parse_x509_certificate(end_entity.as_ref())
            .ok()
            .map(|(_, c)| {
                let t = now.as_secs() as i64;
                c.validity().not_before.timestamp() <= t && t <= c.validity().not_after.timestamp()
            });
        match valid {
            Some(true) => Ok(rustls::client::danger::ServerCertVerified::assertion()),
            Some(false) => Err(rustls::Error::InvalidCertificate(
                rustls::CertificateError::Expired,
            )),
            None => Err(rustls::Error::InvalidCertificate(
                rustls::CertificateError::BadEncoding,
            )),
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &rustls::pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &rustls::pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

enum Failure {
    /// The connection ended before any answer came (a kept connection closed by its server).
    Stale,
    Other(HookClientError),
}

/// Send `request` on `conn` and read the whole answer, driving the connection from this task;
/// the connection back if it can carry another request.
async fn exchange(
    conn: Conn,
    request: hyper::Request<Full<Bytes>>,
    limit: usize,
) -> Result<(Answer, Option<Conn>), Failure> {
    let Conn {
        mut sender,
        mut conn,
    } = conn;
    let mut done = false;
    let mut sent = Box::pin(sender.send_request(request));
    let response = std::future::poll_fn(|cx| {
        if !done {
            if let Poll::Ready(r) = conn.as_mut().poll(cx) {
                done = true;
                if let Err(e) = r {
                    if !e.is_incomplete_message() && !e.is_canceled() {
                        return Poll::Ready(Err(Failure::Other(call_error(&e))));
                    }
                }
            }
        }
        match sent.as_mut().poll(cx) {
            Poll::Ready(Ok(r)) => Poll::Ready(Ok(r)),
            Poll::Ready(Err(e)) if e.is_canceled() || e.is_incomplete_message() => {
                Poll::Ready(Err(Failure::Stale))
            }
            Poll::Ready(Err(e)) => Poll::Ready(Err(Failure::Other(call_error(&e)))),
            Poll::Pending if done => Poll::Ready(Err(Failure::Stale)),
            Poll::Pending => Poll::Pending,
        }
    })
    .await?;
    drop(sent);
    let status = response.status().as_u16();
    let mut body = response.into_body();
    let mut bytes = Vec::new();
    std::future::poll_fn(|cx| loop {
        if !done {
            if let Poll::Ready(r) = conn.as_mut().poll(cx) {
                done = true;
                if let Err(e) = r {
                    return Poll::Ready(Err(Failure::Other(call_error(&e))));
                }
            }
        }
        match Pin::new(&mut body).poll_frame(cx) {
            Poll::Ready(Some(Ok(frame))) => {
                if let Some(data) = frame.data_ref() {
                    if bytes.len() + data.len() > limit {
                        return Poll::Ready(Err(Failure::Other(HookClientError::TooLarge)));
                    }
                    bytes.extend_from_slice(data);
                }
            }
            Poll::Ready(Some(Err(e))) => return Poll::Ready(Err(Failure::Other(call_error(&e)))),
            Poll::Ready(None) => return Poll::Ready(Ok(())),
            Poll::Pending if done => {
                return Poll::Ready(Err(Failure::Other(HookClientError::Call(
                    "unexpected EOF".into(),
                ))))
            }
            Poll::Pending => return Poll::Pending,
        }
    })
    .await?;
    let answer = Answer {
        status,
        body: bytes,
    };
    // A connection the server closed after answering is not kept.
    Ok((answer, (!done).then_some(Conn { sender, conn })))
}

fn call_error(e: &hyper::Error) -> HookClientError {
    HookClientError::Call(error_chain(e))
}

/// The error and its sources, as Go wraps them.
pub(crate) fn error_chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut src = e.source();
    let mut n = 0;
    while let Some(x) = src {
        s.push_str(": ");
        s.push_str(&x.to_string());
        src = x.source();
        n += 1;
        if n > 8 {
            break;
        }
    }
    s
}

/// An IO error as Go prints it (`connection refused`, not `Connection refused (os error 111)`).
fn go_io_error(e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::ConnectionRefused => "connection refused".into(),
        std::io::ErrorKind::ConnectionReset => "connection reset by peer".into(),
        std::io::ErrorKind::TimedOut => "i/o timeout".into(),
        _ => e.to_string(),
    }
}
