//! TLS material: a CA and a serving certificate generated at first start in `DATA/pki`, or the
//! operator's own certificate, turned into a rustls server configuration (HTTP/2 and HTTP/1.1).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::client::danger::HandshakeSignatureValid;
use rustls::pki_types::CertificateDer;
pub use rustls::server::danger::ClientCertVerifier;

use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    Issuer, KeyPair, KeyUsagePurpose,
};

#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("reading or writing {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("generating certificates: {0}")]
    Generate(#[from] rcgen::Error),
    #[error("{path} holds no usable PEM {what}")]
    Pem { path: PathBuf, what: &'static str },
    #[error("building the TLS configuration: {0}")]
    Rustls(#[from] rustls::Error),
    #[error("the client CA bundle {path}: {why}")]
    ClientCa { path: PathBuf, why: String },
}

pub type Result<T, E = TlsError> = std::result::Result<T, E>;

/// What the server presents and what clients should trust.
pub struct TlsMaterial {
    pub server_config: Arc<rustls::ServerConfig>,
    /// The client CA's verifier, which the x509 authenticator verifies client certificates with
    /// (none: no client certificate is asked for, unless there is a front-proxy CA).
    pub client_verifier: Option<Arc<dyn ClientCertVerifier>>,
    /// `--requestheader-client-ca-file`'s verifier: the front proxies whose `X-Remote-*`
    /// headers name the user.
    pub requestheader_verifier: Option<Arc<dyn ClientCertVerifier>>,
    /// PEM of the certificate(s) a client should trust (our CA, or the operator's certificate).
    pub ca_pem: String,
    /// The CA that issues client certificates for approved CertificateSigningRequests: the
    /// generated CA, when it is also the one client certificates are verified with.
    pub authority: Option<Arc<crate::auth::signer::Authority>>,
}

fn read(path: &Path) -> Result<String> {
    std::fs::read_to_string(path).map_err(|source| TlsError::Io {
        path: path.to_owned(),
        source,
    })
}

fn write_private(path: &Path, contents: &str) -> Result<()> {
    super::write_private(path, contents.as_bytes()).map_err(|source| TlsError::Io {
        path: path.to_owned(),
        source,
    })
}

/// The CA's parameters are fixed, so the stored CA key can sign again after a restart.
fn ca_params() -> Result<CertificateParams> {
    let mut p = CertificateParams::new(Vec::<String>::new())?;
    let mut dn = DistinguishedName::new();
    dn.push(DnType::CommonName, "turtles-ca");
    dn.push(DnType::OrganizationName, "turtles");
    p.distinguished_name = dn;
    p.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    p.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    Ok(p)
}

/// The SANs every generated serving certificate carries, plus the operator's extra ones.
pub fn sans(extra: &[String]) -> Vec<String> {
    let mut v: Vec<String> = ["localhost", "127.0.0.1", "::1"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    for s in extra {
        if !v.contains(s) {
            v.push(s.clone());
        }
    }
    v
}

/// Load or create `dir/ca.{crt,key}` and a serving certificate for `sans`; regenerates the serving
/// certificate when the wanted SANs change. Client certificates are verified against `client_ca`,
/// or against the generated CA when there is none (as kubeadm's clusters use one CA for both).
pub fn generated(
    dir: &Path,
    extra_sans: &[String],
    client_ca: Option<&Path>,
    requestheader_ca: Option<&Path>,
) -> Result<TlsMaterial> {
    std::fs::create_dir_all(dir).map_err(|source| TlsError::Io {
        path: dir.to_owned(),
        source,
    })?;
    let (ca_crt, ca_key) = (dir.join("ca.crt"), dir.join("ca.key"));
    let (srv_crt, srv_key, srv_sans) = (
        dir.join("server.crt"),
        dir.join("server.key"),
        dir.join("server.sans"),
    );
    if !ca_crt.exists() || !ca_key.exists() {
        let key = KeyPair::generate()?;
        let cert = ca_params()?.self_signed(&key)?;
        write_private(&ca_key, &key.serialize_pem())?;
        write_private(&ca_crt, &cert.pem())?;
        let _ = std::fs::remove_file(&srv_crt);
    }
    let wanted = sans(extra_sans).join("\n");
    let current = std::fs::read_to_string(&srv_sans).unwrap_or_default();
    if !srv_crt.exists() || !srv_key.exists() || current != wanted {
        let ca_key_pair = KeyPair::from_pem(&read(&ca_key)?)?;
        let issuer = Issuer::new(ca_params()?, ca_key_pair);
        let key = KeyPair::generate()?;
        let mut p = CertificateParams::new(sans(extra_sans))?;
        p.distinguished_name = DistinguishedName::new();
        p.distinguished_name.push(DnType::CommonName, "turtles");
        p.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        p.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        let cert = p.signed_by(&key, &issuer)?;
        write_private(&srv_key, &key.serialize_pem())?;
        write_private(&srv_crt, &format!("{}{}", cert.pem(), read(&ca_crt)?))?;
        write_private(&srv_sans, &wanted)?;
    }
    let ca_pem = read(&ca_crt)?;
    let client_verifier = Some(client_verifier(client_ca.unwrap_or(&ca_crt), provider())?);
    let (requestheader_verifier, asked) = asked(&client_verifier, requestheader_ca)?;
    let server_config = server_config(&srv_crt, &srv_key, &asked)?;
    let authority = match client_ca {
        Some(_) => None,
        None => match crate::auth::signer::Authority::load(&ca_crt, &ca_key) {
            Ok(a) => Some(Arc::new(a)),
            Err(e) => {
                tracing::warn!(error = %e, "the CSR signer is off: the CA cannot sign");
                None
            }
        },
    };
    Ok(TlsMaterial {
        server_config,
        client_verifier,
        requestheader_verifier,
        ca_pem,
        authority,
    })
}

/// What this host presents to extension API servers when it proxies to them (kube's
/// `--proxy-client-cert-file` and `--requestheader-client-ca-file`, as kubeadm makes them): a
/// front-proxy CA of its own, never the cluster CA, so no client certificate the cluster CA
/// issues (CertificateSigningRequests) can pass for the proxy.
pub struct FrontProxy {
    /// PEM of the CA extension servers verify the proxy's certificate with.
    pub ca_pem: String,
    /// The proxy's client certificate (PEM, `CN=front-proxy-client`) and key.
    pub client_cert_pem: String,
    pub client_key_pem: String,
}

/// The proxy's certificate's common name (kubeadm's), the one name extension servers allow.
pub const FRONT_PROXY_CLIENT: &str = "front-proxy-client";

fn front_proxy_ca_params() -> Result<CertificateParams> {
    let mut p = ca_params()?;
    let mut dn = DistinguishedName::new();
    dn.push(DnType::CommonName, "turtles-front-proxy-ca");
    dn.push(DnType::OrganizationName, "turtles");
    p.distinguished_name = dn;
    Ok(p)
}

/// Load or create `dir/front-proxy-ca.{crt,key}` and `dir/front-proxy-client.{crt,key}`.
pub fn front_proxy(dir: &Path) -> Result<FrontProxy> {
    std::fs::create_dir_all(dir).map_err(|source| TlsError::Io {
        path: dir.to_owned(),
        source,
    })?;
    let (ca_crt, ca_key) = (
        dir.join("front-proxy-ca.crt"),
        dir.join("front-proxy-ca.key"),
    );
    let (cl_crt, cl_key) = (
        dir.join("front-proxy-client.crt"),
        dir.join("front-proxy-client.key"),
    );
    if !ca_crt.exists() || !ca_key.exists() {
        let key = KeyPair::generate()?;
        let cert = front_proxy_ca_params()?.self_signed(&key)?;
        write_private(&ca_key, &key.serialize_pem())?;
        write_private(&ca_crt, &cert.pem())?;
        let _ = std::fs::remove_file(&cl_crt);
    }
    if !cl_crt.exists() || !cl_key.exists() {
        let issuer = Issuer::new(
            front_proxy_ca_params()?,
            KeyPair::from_pem(&read(&ca_key)?)?,
        );
        let key = KeyPair::generate()?;
        let mut p = CertificateParams::new(Vec::<String>::new())?;
        p.distinguished_name = DistinguishedName::new();
        p.distinguished_name
            .push(DnType::CommonName, FRONT_PROXY_CLIENT);
        p.key_usages = vec![
            KeyUsagePurpose::DigitalSignature,
            KeyUsagePurpose::KeyEncipherment,
        ];
        p.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
        let cert = p.signed_by(&key, &issuer)?;
        write_private(&cl_key, &key.serialize_pem())?;
        write_private(&cl_crt, &cert.pem())?;
    }
    Ok(FrontProxy {
        ca_pem: read(&ca_crt)?,
        client_cert_pem: read(&cl_crt)?,
        client_key_pem: read(&cl_key)?,
    })
}

/// The operator's own certificate chain and key; clients are told to trust that chain. Client
/// certificates are accepted only with `client_ca`.
pub fn provided(
    cert: &Path,
    key: &Path,
    client_ca: Option<&Path>,
    requestheader_ca: Option<&Path>,
) -> Result<TlsMaterial> {
    let ca_pem = read(cert)?;
    let client_verifier = client_ca
        .map(|ca| client_verifier(ca, provider()))
        .transpose()?;
    let (requestheader_verifier, asked) = asked(&client_verifier, requestheader_ca)?;
    Ok(TlsMaterial {
        server_config: server_config(cert, key, &asked)?,
        client_verifier,
        requestheader_verifier,
        ca_pem,
        authority: None,
    })
}

/// The front-proxy CA's verifier (if any), and every verifier whose CAs the handshake names.
type Asked = (
    Option<Arc<dyn ClientCertVerifier>>,
    Vec<Arc<dyn ClientCertVerifier>>,
);

fn asked(
    client: &Option<Arc<dyn ClientCertVerifier>>,
    requestheader_ca: Option<&Path>,
) -> Result<Asked> {
    let requestheader = requestheader_ca
        .map(|ca| client_verifier(ca, provider()))
        .transpose()?;
    let all = client.iter().chain(&requestheader).cloned().collect();
    Ok((requestheader, all))
}

/// kube's `--client-ca-file`: the CAs a client certificate must chain to (rustls's WebPKI
/// verifier: the chain, the validity, the client-auth key usage).
pub(crate) fn client_verifier(
    path: &Path,
    provider: Arc<rustls::crypto::CryptoProvider>,
) -> Result<Arc<dyn ClientCertVerifier>> {
    use rustls::pki_types::pem::PemObject;
    let bad = |why: String| TlsError::ClientCa {
        path: path.to_owned(),
        why,
    };
    let mut roots = rustls::RootCertStore::empty();
    let certs = CertificateDer::pem_file_iter(path).map_err(|e| bad(e.to_string()))?;
    for cert in certs {
        roots
            .add(cert.map_err(|e| bad(e.to_string()))?)
            .map_err(|e| bad(e.to_string()))?;
    }
    if roots.is_empty() {
        return Err(bad("no PEM certificate in it".into()));
    }
    rustls::server::WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider)
        .allow_unauthenticated()
        .build()
        .map_err(|e| bad(e.to_string()))
}

/// Go's `tls.RequestClientCert`, as kube-apiserver configures its listener: the handshake asks
/// for a certificate (naming the client CAs) and proves the client holds its key, but accepts
/// any certificate or none. The chain is verified afterwards, by the x509 authenticator
/// (`api::x509`), so a certificate that does not verify gets kube's 401 rather than a failed
/// handshake.
/// The hints name every CA a certificate is verified with later (the client CA and the
/// front-proxy CA), as kube's listener does: a Go client sends only a certificate of a named CA.
#[derive(Debug)]
struct RequestClientCert {
    verifier: Arc<dyn ClientCertVerifier>,
    hints: Vec<rustls::DistinguishedName>,
    algorithms: rustls::crypto::WebPkiSupportedAlgorithms,
}

/// A certificate's SubjectPublicKeyInfo (DER), read leniently (x509-parser, extensions not
/// looked into): webpki's reading of a whole certificate refuses ones kube takes at the
/// handshake (X.509 v1, an unknown critical extension).
fn leaf_spki(cert: &CertificateDer<'_>) -> std::result::Result<Vec<u8>, rustls::Error> {
    use x509_parser::nom::Parser;
    let (_, c) = x509_parser::certificate::X509CertificateParser::new()
        .with_deep_parse_extensions(false)
        .parse(cert.as_ref())
        .map_err(|_| rustls::Error::InvalidCertificate(rustls::CertificateError::BadEncoding))?;
    Ok(c.public_key().raw.to_vec())
}

/// RFC 8446 4.2.3, as rustls reads it: no hash older than SHA-256 (none, MD5, SHA-1, SHA-224)
/// and no anonymous, RSA PKCS#1 or DSA signature in TLS 1.3.
fn allowed_in_tls13(scheme: rustls::SignatureScheme) -> bool {
    let [hash, sign] = u16::from(scheme).to_be_bytes();
    hash > 3 && sign > 2
}

/// Whether `signature` over `message` was made with the private key of `cert`'s public key,
/// under `scheme`: TLS 1.3 uses the scheme's first algorithm, TLS 1.2 tries each algorithm the
/// scheme may mean (as rustls does), and the key's algorithm identifier must fit the algorithm
/// (webpki's raw-key check).
fn signed_by_leaf(
    tls13: bool,
    message: &[u8],
    cert: &CertificateDer<'_>,
    scheme: rustls::SignatureScheme,
    signature: &[u8],
    supported: &rustls::crypto::WebPkiSupportedAlgorithms,
) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
    let unadvertised = || {
        rustls::Error::PeerMisbehaved(
            rustls::PeerMisbehaved::SignedHandshakeWithUnadvertisedSigScheme,
        )
    };
    if tls13 && !allowed_in_tls13(scheme) {
        return Err(unadvertised());
    }
    let algs = supported
        .mapping
        .iter()
        .find(|(s, _)| *s == scheme)
        .map(|(_, algs)| *algs)
        .ok_or_else(unadvertised)?;
    let algs = if tls13 {
        &algs[..algs.len().min(1)]
    } else {
        algs
    };
    let spki = leaf_spki(cert)?;
    let spki = rustls::pki_types::SubjectPublicKeyInfoDer::from(spki.as_slice());
    let key = webpki::RawPublicKeyEntity::try_from(&spki)
        .map_err(|_| rustls::Error::InvalidCertificate(rustls::CertificateError::BadEncoding))?;
    for alg in algs {
        match key.verify_signature(*alg, message, signature) {
            Ok(()) => return Ok(HandshakeSignatureValid::assertion()),
            Err(webpki::Error::UnsupportedSignatureAlgorithmForPublicKeyContext(_)) => continue,
            Err(_) => break,
        }
    }
    Err(rustls::Error::InvalidCertificate(
        rustls::CertificateError::BadSignature,
    ))
}

impl ClientCertVerifier for RequestClientCert {
    fn offer_client_auth(&self) -> bool {
        true
    }

    fn client_auth_mandatory(&self) -> bool {
        false
    }

    fn root_hint_subjects(&self) -> &[rustls::DistinguishedName] {
        &self.hints
    }

    fn verify_client_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _now: rustls::pki_types::UnixTime,
    ) -> Result<rustls::server::danger::ClientCertVerified, rustls::Error> {
        Ok(rustls::server::danger::ClientCertVerified::assertion())
    }

    // The signature is checked against the leaf's key as read leniently: a certificate kube takes
    // at the handshake must reach the authenticator and get its 401 there (or let the request's
    // token decide), not end the connection.
    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        signed_by_leaf(
            false,
            message,
            cert,
            dss.scheme,
            dss.signature(),
            &self.algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        signed_by_leaf(
            true,
            message,
            cert,
            dss.scheme,
            dss.signature(),
            &self.algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.verifier.supported_verify_schemes()
    }
}

pub(crate) fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// The serving configuration; a client certificate is asked for (naming the CAs of `asked`)
/// when there is any.
fn server_config(
    cert: &Path,
    key: &Path,
    asked: &[Arc<dyn ClientCertVerifier>],
) -> Result<Arc<rustls::ServerConfig>> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::PrivateKeyDer;
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(cert)
        .map_err(|_| TlsError::Pem {
            path: cert.to_owned(),
            what: "certificate",
        })?
        .filter_map(|c| c.ok())
        .collect();
    if certs.is_empty() {
        return Err(TlsError::Pem {
            path: cert.to_owned(),
            what: "certificate",
        });
    }
    let key = PrivateKeyDer::from_pem_file(key).map_err(|_| TlsError::Pem {
        path: key.to_owned(),
        what: "private key",
    })?;
    let provider = provider();
    let algorithms = provider.signature_verification_algorithms;
    let builder = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?;
    let builder = match asked.first() {
        Some(v) => {
            let mut hints: Vec<rustls::DistinguishedName> = Vec::new();
            for h in asked.iter().flat_map(|a| a.root_hint_subjects()) {
                if !hints.iter().any(|k| k.as_ref() == h.as_ref()) {
                    hints.push(h.clone());
                }
            }
            builder.with_client_cert_verifier(Arc::new(RequestClientCert {
                verifier: v.clone(),
                hints,
                algorithms,
            }))
        }
        None => builder.with_no_client_auth(),
    };
    let mut cfg = builder.with_single_cert(certs, key)?;
    cfg.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(Arc::new(cfg))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_handshake_signature_must_be_the_leafs_keys() {
        use rcgen::SigningKey;
        use rustls::SignatureScheme as S;
        let supported = provider().signature_verification_algorithms;
        let message = b"the handshake transcript";
        for (alg, scheme) in [
            (&rcgen::PKCS_ECDSA_P256_SHA256, S::ECDSA_NISTP256_SHA256),
            (&rcgen::PKCS_ECDSA_P384_SHA384, S::ECDSA_NISTP384_SHA384),
            (&rcgen::PKCS_ED25519, S::ED25519),
        ] {
            let key = KeyPair::generate_for(alg).unwrap();
            let other = KeyPair::generate_for(alg).unwrap();
            let cert = CertificateParams::new(vec!["x".into()])
                .unwrap()
                .self_signed(&key)
                .unwrap();
            let cert = cert.der();
            let mine = key.sign(message).unwrap();
            let theirs = other.sign(message).unwrap();
            for tls13 in [true, false] {
                let check = |scheme, sig: &[u8], msg: &[u8]| {
                    signed_by_leaf(tls13, msg, cert, scheme, sig, &supported)
                };
                assert!(check(scheme, &mine, message).is_ok(), "{scheme:?} {tls13}");
                assert!(
                    check(scheme, &theirs, message).is_err(),
                    "{scheme:?} {tls13}"
                );
                assert!(check(scheme, &mine, b"another transcript").is_err());
                // A scheme that does not fit the key, or that was never offered.
                assert!(check(S::RSA_PSS_SHA256, &mine, message).is_err());
                assert!(check(S::ECDSA_SHA1_Legacy, &mine, message).is_err());
                assert!(check(S::Unknown(0x9999), &mine, message).is_err());
            }
        }
        assert!(!allowed_in_tls13(S::RSA_PKCS1_SHA256) && !allowed_in_tls13(S::ECDSA_SHA1_Legacy));
        assert!(allowed_in_tls13(S::ED25519) && allowed_in_tls13(S::RSA_PSS_SHA256));
        let not_a_cert = CertificateDer::from(b"junk".to_vec());
        assert!(signed_by_leaf(true, message, &not_a_cert, S::ED25519, b"", &supported).is_err());
    }

    #[test]
    fn generates_once_and_regenerates_on_new_sans() {
        let dir = std::env::temp_dir().join(format!("turtles-pki-{}", uuid::Uuid::new_v4()));
        let a = generated(&dir, &[], None, None).unwrap();
        let ca1 = a.ca_pem.clone();
        let crt1 = std::fs::read_to_string(dir.join("server.crt")).unwrap();
        let b = generated(&dir, &[], None, None).unwrap();
        assert_eq!(b.ca_pem, ca1);
        assert_eq!(
            std::fs::read_to_string(dir.join("server.crt")).unwrap(),
            crt1
        );
        generated(&dir, &["turtles.example".into()], None, None).unwrap();
        assert_ne!(
            std::fs::read_to_string(dir.join("server.crt")).unwrap(),
            crt1
        );
        assert_eq!(std::fs::read_to_string(dir.join("ca.crt")).unwrap(), ca1);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
