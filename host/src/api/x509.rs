//! kube's x509 request authenticator. The TLS handshake asks for a client certificate and proves
//! the client holds its key (`auth::tls`); here, once per connection, the certificate's chain is
//! verified against the client CA (`--client-ca-file`, or the generated CA). A certificate that
//! verifies authenticates every request of its connection: the subject's common name is the user,
//! its organizations are the groups, and the certificate's SHA-256 is the credential id, as kube's
//! `CommonNameUserConversion` makes them. One that does not authenticates nobody (the request's
//! token, if any, decides; else 401), as in kube. The chain's validity is checked again on each
//! request (a connection may outlive it).

use std::sync::Arc;
use std::task::{Context, Poll};

use axum::http::Request;
use futures::future::BoxFuture;
use sha2::Digest;

use rustls::pki_types::{CertificateDer, UnixTime};

use crate::auth::tls::ClientCertVerifier;
use crate::auth::UserInfo;

/// The identity a connection's client certificate carries, in its requests' extensions.
#[derive(Debug, Clone)]
pub struct ClientCert(Arc<Identity>);

#[derive(Debug)]
struct Identity {
    user: UserInfo,
    /// The certificate's validity, in seconds since the epoch.
    not_before: i64,
    not_after: i64,
}

impl ClientCert {
    /// The user of a verified chain (DER, the leaf first); `None` when the leaf has no common
    /// name (kube then tries the request's other credentials) or cannot be read.
    pub fn from_chain(chain: &[&[u8]]) -> Option<Self> {
        let (&der, rest) = chain.split_first()?;
        let (_, cert) = x509_parser::parse_x509_certificate(der).ok()?;
        let subject = cert.subject();
        let name = subject.iter_common_name().next()?.as_str().ok()?;
        if name.is_empty() {
            return None;
        }
        let groups = subject
            .iter_organization()
            .filter_map(|o| o.as_str().ok())
            .map(str::to_owned)
            .collect::<Vec<_>>();
        let id = format!("X509SHA256={}", hex(&sha2::Sha256::digest(der)));
        let mut user = crate::auth::tokens::user_with_group_list(name, "", groups);
        user.extra.insert(CREDENTIAL_ID.to_owned(), vec![id]);
        // The chain is valid while every certificate in it is.
        let (mut not_before, mut not_after) = (
            cert.validity().not_before.timestamp(),
            cert.validity().not_after.timestamp(),
        );
        for der in rest {
            let (_, c) = x509_parser::parse_x509_certificate(der).ok()?;
            not_before = not_before.max(c.validity().not_before.timestamp());
            not_after = not_after.min(c.validity().not_after.timestamp());
        }
        Some(Self(Arc::new(Identity {
            user,
            not_before,
            not_after,
        })))
    }

    /// The user, while the certificate is valid.
    pub fn user(&self) -> Option<UserInfo> {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs() as i64);
        (self.0.not_before <= now && now <= self.0.not_after).then(|| self.0.user.clone())
    }
}

/// kube's `user.CredentialIDKey`.
const CREDENTIAL_ID: &str = "authentication.kubernetes.io/credential-id";

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Wraps the TLS acceptor: after the handshake, the client certificate (if any) is verified once
/// and its user handed to every request of the connection.
#[derive(Clone)]
pub struct PeerAcceptor<A> {
    inner: A,
    verifier: Option<Arc<dyn ClientCertVerifier>>,
}

impl<A> PeerAcceptor<A> {
    /// `verifier`: the client CA's (none: no client certificate is looked at).
    pub fn new(inner: A, verifier: Option<Arc<dyn ClientCertVerifier>>) -> Self {
        Self { inner, verifier }
    }
}

impl<A, I, S, IO> axum_server::accept::Accept<I, S> for PeerAcceptor<A>
where
    A: axum_server::accept::Accept<I, S, Stream = tokio_rustls::server::TlsStream<IO>>,
    A::Future: Send + 'static,
    A::Service: Send + 'static,
    IO: Send + 'static,
{
    type Stream = tokio_rustls::server::TlsStream<IO>;
    type Service = WithClientCert<A::Service>;
    type Future = BoxFuture<'static, std::io::Result<(Self::Stream, Self::Service)>>;

    fn accept(&self, stream: I, service: S) -> Self::Future {
        let accepted = self.inner.accept(stream, service);
        let verifier = self.verifier.clone();
        Box::pin(async move {
            let (tls, inner) = accepted.await?;
            let cert = match (&verifier, tls.get_ref().1.peer_certificates()) {
                (Some(v), Some(chain)) => verified(v.as_ref(), chain),
                _ => None,
            };
            Ok((tls, WithClientCert { inner, cert }))
        })
    }
}

/// The identity of `chain` (the leaf first) if it verifies against the client CA now.
fn verified(verifier: &dyn ClientCertVerifier, chain: &[CertificateDer<'_>]) -> Option<ClientCert> {
    let (leaf, intermediates) = chain.split_first()?;
    match verifier.verify_client_cert(leaf, intermediates, UnixTime::now()) {
        Ok(_) => ClientCert::from_chain(&chain.iter().map(|c| c.as_ref()).collect::<Vec<_>>()),
        Err(e) => {
            tracing::debug!(error = %e, "client certificate not verified");
            None
        }
    }
}

/// A connection's service: puts its [`ClientCert`] in each request's extensions.
#[derive(Clone)]
pub struct WithClientCert<S> {
    inner: S,
    cert: Option<ClientCert>,
}

impl<S, B> tower::Service<Request<B>> for WithClientCert<S>
where
    S: tower::Service<Request<B>>,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = S::Future;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut req: Request<B>) -> Self::Future {
        if let Some(cert) = &self.cert {
            req.extensions_mut().insert(cert.clone());
        }
        self.inner.call(req)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rcgen::{CertificateParams, DistinguishedName, DnType, KeyPair};

    fn cert(cn: &str, org: Option<&str>, expired: bool) -> Vec<u8> {
        let mut p = CertificateParams::new(Vec::<String>::new()).unwrap();
        let mut dn = DistinguishedName::new();
        if !cn.is_empty() {
            dn.push(DnType::CommonName, cn);
        }
        if let Some(o) = org {
            dn.push(DnType::OrganizationName, o);
        }
        p.distinguished_name = dn;
        if expired {
            p.not_after = rcgen::date_time_ymd(2001, 1, 1);
        }
        let key = KeyPair::generate().unwrap();
        p.self_signed(&key).unwrap().der().to_vec()
    }

    #[test]
    fn common_name_is_the_user_and_organizations_the_groups() {
        let der = cert("alice", Some("dev"), false);
        let c = ClientCert::from_chain(&[&der]).unwrap();
        let user = c.user().unwrap();
        assert_eq!(user.name, "alice");
        assert_eq!(user.uid, "");
        assert_eq!(user.groups, ["dev", "system:authenticated"]);
        let id = &user.extra[CREDENTIAL_ID];
        assert_eq!(
            id,
            &[format!("X509SHA256={}", hex(&sha2::Sha256::digest(&der)))]
        );
        assert_eq!(id[0].len(), "X509SHA256=".len() + 64);
    }

    #[test]
    fn no_common_name_and_expired_certificates_authenticate_nobody() {
        assert!(ClientCert::from_chain(&[&cert("", Some("dev"), false)]).is_none());
        let expired = ClientCert::from_chain(&[&cert("bob", None, true)]).unwrap();
        assert!(expired.user().is_none());
        // A leaf valid today behind an expired intermediate: the chain is not.
        let chain = ClientCert::from_chain(&[&cert("bob", None, false), &cert("ca", None, true)]);
        assert!(chain.unwrap().user().is_none());
        assert!(ClientCert::from_chain(&[b"not a certificate"]).is_none());
        assert!(ClientCert::from_chain(&[]).is_none());
    }
}
