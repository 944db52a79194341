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
use std::sync::{Arc, Mutex, PoisonError};
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
/// How long a connection is kept idle (Go's `http.Transport` default `IdleConnTimeout`).
const IDLE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(90);

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
    /// Idle connections with the time each went idle.
    idle: Mutex<HashMap<Endpoint, Vec<(std::time::Instant, Conn)>>>,
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
        let in_go_words = |f: Failure| match f {
            Failure::Unsent => HookClientError::Call(format!("Post \"{url}\": EOF")),
            Failure::Other(HookClientError::Call(m)) => {
                HookClientError::Call(format!("Post \"{url}\": {m}"))
            }
            Failure::Other(e) => e,
        };
        // A kept connection the server closed while it was idle, noticed only as the request
        // was to be written: the request was never sent, so it is sent once more on a new
        // connection (as Go's transport does). A request that was written is never sent twice.
        if let Some(conn) = self.checkout(&endpoint) {
            match exchange(conn, request()?, limit).await {
                Ok((answer, conn)) => {
                    if let Some(conn) = conn {
                        self.checkin(endpoint, conn);
                    }
                    return Ok(answer);
                }
                Err(Failure::Unsent) => {}
                Err(f) => return Err(in_go_words(f)),
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
            Err(f) => Err(in_go_words(f)),
        }
    }

    /// An idle connection to `endpoint` that is still open.
    fn checkout(&self, endpoint: &Endpoint) -> Option<Conn> {
        loop {
            // Taken out under the lock, looked at outside it.
            let (since, mut c) = {
                let mut idle = self.idle.lock().unwrap_or_else(PoisonError::into_inner);
                idle.get_mut(endpoint)?.pop()?
            };
            if since.elapsed() > IDLE_TIMEOUT || c.sender.is_closed() {
                continue;
            }
            // Polled once without a task: a connection whose peer has gone is done now.
            let mut cx = Context::from_waker(std::task::Waker::noop());
            if c.conn.as_mut().poll(&mut cx).is_ready() {
                continue;
            }
            return Some(c);
        }
    }

    fn checkin(&self, endpoint: Endpoint, conn: Conn) {
        if conn.sender.is_closed() {
            return;
        }
        let mut idle = self.idle.lock().unwrap_or_else(PoisonError::into_inner);
        // Connections idle too long go (closing them) whenever any is put back.
        for list in idle.values_mut() {
            list.retain(|(since, _)| since.elapsed() <= IDLE_TIMEOUT);
        }
        idle.retain(|_, list| !list.is_empty());
        if idle.len() >= MAX_ENDPOINTS && !idle.contains_key(&endpoint) {
            idle.clear();
        }
        let list = idle.entry(endpoint).or_default();
        if list.len() < IDLE_PER_ENDPOINT {
            list.push((std::time::Instant::now(), conn));
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
            .map_err(|e| HookClientError::Call(format!("Post \"{url}\": {}", tls_error(&e))))?;
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
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let verifier = RootsVerifier::for_bundle(ca_bundle, provider.clone())?;
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
pub(crate) struct RootsVerifier {
    /// Any server certificate is accepted (`insecureSkipTLSVerify`); the handshake's signature
    /// is still checked.
    skip: bool,
    inner: Option<Arc<rustls::client::WebPkiServerVerifier>>,
    anchors: Vec<rustls::pki_types::CertificateDer<'static>>,
    provider: Arc<rustls::crypto::CryptoProvider>,
}

impl RootsVerifier {
    /// Trusting a `caBundle` (base64 of PEM, as stored in webhook configurations and
    /// APIServices); an empty one trusts no server.
    pub(crate) fn for_bundle(
        ca_bundle: &str,
        provider: Arc<rustls::crypto::CryptoProvider>,
    ) -> Result<Self, HookClientError> {
        let bad = |e: &dyn std::fmt::Display| HookClientError::Config(format!("caBundle: {e}"));
        let mut roots = rustls::RootCertStore::empty();
        let mut anchors = Vec::new();
        if !ca_bundle.is_empty() {
            use rustls::pki_types::pem::PemObject;
            let pem = base64::engine::general_purpose::STANDARD
                .decode(ca_bundle)
                .map_err(|e| bad(&e))?;
            for cert in rustls::pki_types::CertificateDer::pem_slice_iter(&pem) {
                let cert = cert.map_err(|e| bad(&e))?;
                roots.add(cert.clone()).map_err(|e| bad(&e))?;
                anchors.push(cert);
            }
        }
        Self::new(roots, anchors, provider)
    }

    /// Trusting any server (`insecureSkipTLSVerify`, and kube's availability probe).
    pub(crate) fn any_server(provider: Arc<rustls::crypto::CryptoProvider>) -> Self {
        Self {
            skip: true,
            inner: None,
            anchors: Vec::new(),
            provider,
        }
    }

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
            skip: false,
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
        if self.skip {
            return Ok(rustls::client::danger::ServerCertVerified::assertion());
        }
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
        // Go also requires the extended key usage, when present, to allow serving.
        let (_, cert) = x509_parser::parse_x509_certificate(end_entity.as_ref()).map_err(|_| {
            rustls::Error::InvalidCertificate(rustls::CertificateError::BadEncoding)
        })?;
        let serves = match cert.extended_key_usage() {
            Ok(Some(eku)) => eku.value.any || eku.value.server_auth,
            Ok(None) => true,
            Err(_) => false,
        };
        if !serves {
            return Err(rustls::Error::InvalidCertificate(
                rustls::CertificateError::InvalidPurpose,
            ));
        }
        let t = now.as_secs() as i64;
        let validity = cert.validity();
        if t < validity.not_before.timestamp() || validity.not_after.timestamp() < t {
            return Err(rustls::Error::InvalidCertificate(
                rustls::CertificateError::Expired,
            ));
        }
        Ok(rustls::client::danger::ServerCertVerified::assertion())
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
    /// The request was never written: the connection had ended (a kept connection closed by its
    /// server while idle).
    Unsent,
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
            // hyper's "canceled": the request was not written.
            Poll::Ready(Err(e)) if e.is_canceled() => Poll::Ready(Err(Failure::Unsent)),
            Poll::Ready(Err(e)) if e.is_incomplete_message() => {
                Poll::Ready(Err(Failure::Other(HookClientError::Call("EOF".into()))))
            }
            Poll::Ready(Err(e)) => Poll::Ready(Err(Failure::Other(call_error(&e)))),
            // The connection ended without answering: whether it took the request is unknown.
            Poll::Pending if done => {
                Poll::Ready(Err(Failure::Other(HookClientError::Call("EOF".into()))))
            }
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

/// A failed TLS handshake as Go words the common cases.
pub(crate) fn tls_error(e: &std::io::Error) -> String {
    let inner = e.get_ref().and_then(|i| i.downcast_ref::<rustls::Error>());
    match inner {
        Some(rustls::Error::InvalidCertificate(rustls::CertificateError::UnknownIssuer)) => {
            "tls: failed to verify certificate: x509: certificate signed by unknown authority"
                .into()
        }
        Some(rustls::Error::InvalidCertificate(rustls::CertificateError::Expired)) => {
            "tls: failed to verify certificate: x509: certificate has expired or is not yet valid"
                .into()
        }
        Some(rustls::Error::InvalidCertificate(
            rustls::CertificateError::NotValidForName
            | rustls::CertificateError::NotValidForNameContext { .. },
        )) => {
            "tls: failed to verify certificate: x509: certificate is not valid for this name".into()
        }
        _ => format!("tls: {}", error_chain(e)),
    }
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
pub(crate) fn go_io_error(e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::ConnectionRefused => "connection refused".into(),
        std::io::ErrorKind::ConnectionReset => "connection reset by peer".into(),
        std::io::ErrorKind::TimedOut => "i/o timeout".into(),
        _ => e.to_string(),
    }
}
