//! kube's x509 request authenticator. The TLS handshake asks for a client certificate and proves
//! the client holds its key (`auth::tls`); here the chain is verified against the client CA
//! (`--client-ca-file`, or the generated CA) at the connection's first request. A certificate
//! that verifies authenticates every request of its connection: the subject's (last) common name
//! is the user, its organizations are the groups, its `1.3.6.1.4.1.57683.2` attribute the uid,
//! and the certificate's SHA-256 the credential id, as kube 1.34's `CommonNameUserConversion`
//! makes them. One that does not authenticates nobody (the request's token, if any, decides;
//! else 401), as in kube. The leaf's validity is checked on each request (a connection may
//! outlive it), and a chain that did not verify is tried again at most once a second (a
//! certificate not valid yet when the connection opened becomes valid on it).

use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use axum::http::Request;
use futures::future::BoxFuture;
use sha2::Digest;

use rustls::pki_types::{CertificateDer, UnixTime};

use crate::auth::tls::ClientCertVerifier;
use crate::auth::tokens::hex;
use crate::auth::{UserInfo, CREDENTIAL_ID};

/// How often a chain that did not verify is tried again.
const RETRY: Duration = Duration::from_secs(1);
/// How long a verification stands before the chain is verified again (an intermediate may expire
/// before the leaf).
const REVERIFY: Duration = Duration::from_secs(60);
/// The most certificates a client may present (a longer chain is not looked at).
const MAX_CHAIN: usize = 10;

/// A connection's client certificate chain, in its requests' extensions.
#[derive(Debug, Clone)]
pub struct ClientCert(Arc<Presented>);

#[derive(Debug)]
struct Presented {
    chain: Vec<CertificateDer<'static>>,
    verifier: Arc<dyn ClientCertVerifier>,
    /// Async: the requests of an HTTP/2 connection wait for the one that verifies, without
    /// holding a worker thread.
    state: tokio::sync::Mutex<State>,
}

#[derive(Debug)]
enum State {
    /// Not verified yet (the first request verifies).
    Fresh,
    Verified(Identity, Instant),
    /// It did not verify; tried again after [`RETRY`].
    Refused(Instant),
    /// It verified and names nobody (no common name, a bad uid): for good.
    Nobody,
}

#[derive(Debug, Clone)]
struct Identity {
    user: UserInfo,
    /// The leaf's validity, in seconds since the epoch.
    not_before: i64,
    not_after: i64,
}

impl Identity {
    fn user_now(&self) -> Option<UserInfo> {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs() as i64);
        (self.not_before <= now && now <= self.not_after).then(|| self.user.clone())
    }
}

impl ClientCert {
    fn new(chain: Vec<CertificateDer<'static>>, verifier: Arc<dyn ClientCertVerifier>) -> Self {
        Self(Arc::new(Presented {
            chain,
            verifier,
            state: tokio::sync::Mutex::new(State::Fresh),
        }))
    }

    /// The user the certificate names, if its chain verifies.
    pub async fn user(&self) -> Option<UserInfo> {
        let p = &self.0;
        let mut state = p.state.lock().await;
        match &*state {
            State::Nobody => return None,
            State::Verified(id, at) if at.elapsed() < REVERIFY => return id.user_now(),
            State::Refused(at) if at.elapsed() < RETRY => return None,
            _ => {}
        }
        let (leaf, intermediates) = p.chain.split_first()?;
        *state = match p
            .verifier
            .verify_client_cert(leaf, intermediates, UnixTime::now())
        {
            Ok(_) => match identity(leaf.as_ref()) {
                Some(id) => State::Verified(id, Instant::now()),
                None => State::Nobody,
            },
            Err(e) => {
                tracing::debug!(error = %e, "client certificate not verified");
                State::Refused(Instant::now())
            }
        };
        match &*state {
            State::Verified(id, _) => id.user_now(),
            _ => None,
        }
    }
}

/// kube's user of a verified leaf certificate (DER); `None` when it names nobody (no common
/// name; a uid attribute that is empty or repeated), so that kube tries the request's other
/// credentials.
fn identity(der: &[u8]) -> Option<Identity> {
    let (_, cert) = x509_parser::parse_x509_certificate(der).ok()?;
    let subject = cert.subject();
    // x509-parser stops at a name entry it cannot read (an empty set, say) where Go goes on: a
    // subject not read to its end could name someone else to Go than to us. Refused.
    if !crate::auth::der::whole_name(subject) {
        return None;
    }
    // Go's pkix.Name keeps the last of repeated attributes.
    let name = subject.iter_common_name().last()?.as_str().ok()?;
    if name.is_empty() {
        return None;
    }
    let uid_oid = x509_parser::der_parser::oid::Oid::from(&[1, 3, 6, 1, 4, 1, 57683, 2]).ok()?;
    let uids = subject
        .iter_by_oid(&uid_oid)
        .map(|a| a.as_str().ok())
        .collect::<Option<Vec<_>>>()?;
    let uid = match uids.as_slice() {
        [] => "",
        [uid] if !uid.is_empty() => uid,
        _ => return None,
    };
    let groups = subject
        .iter_organization()
        .filter_map(|o| o.as_str().ok())
        .map(str::to_owned)
        .collect::<Vec<_>>();
    let id = format!("X509SHA256={}", hex(&sha2::Sha256::digest(der)));
    let mut user = crate::auth::tokens::user_with_group_list(name, uid, groups);
    user.extra.insert(CREDENTIAL_ID.to_owned(), vec![id]);
    Some(Identity {
        user,
        not_before: cert.validity().not_before.timestamp(),
        not_after: cert.validity().not_after.timestamp(),
    })
}

/// Wraps the TLS acceptor: after the handshake, the client certificate chain (if any) is handed
/// to every request of the connection.
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
            let cert = match (verifier, tls.get_ref().1.peer_certificates()) {
                (Some(v), Some(chain)) if !chain.is_empty() && chain.len() <= MAX_CHAIN => Some(
                    ClientCert::new(chain.iter().map(|c| c.clone().into_owned()).collect(), v),
                ),
                _ => None,
            };
            Ok((tls, WithClientCert { inner, cert }))
        })
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
    use rcgen::{
        CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer,
        KeyPair,
    };

    /// kube's uid attribute.
    fn uid_type() -> DnType {
        DnType::CustomDnType(vec![1, 3, 6, 1, 4, 1, 57683, 2])
    }

    fn self_signed(dn: &[(DnType, &str)]) -> Vec<u8> {
        let mut p = CertificateParams::new(Vec::<String>::new()).unwrap();
        let mut name = DistinguishedName::new();
        for (t, v) in dn {
            name.push(t.clone(), *v);
        }
        p.distinguished_name = name;
        let key = KeyPair::generate().unwrap();
        p.self_signed(&key).unwrap().der().to_vec()
    }

    #[test]
    fn common_name_is_the_user_and_organizations_the_groups() {
        let der = self_signed(&[
            (DnType::CommonName, "alice"),
            (DnType::OrganizationName, "dev"),
        ]);
        let user = identity(&der).unwrap().user;
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
    fn the_last_common_name_and_one_uid_as_go_reads_them() {
        // Two CN attributes (rcgen keeps one per type: the second under its OID): Go's
        // pkix.Name keeps the last.
        let two = self_signed(&[
            (DnType::CommonName, "alice"),
            (DnType::CustomDnType(vec![2, 5, 4, 3]), "admin"),
        ]);
        assert_eq!(identity(&two).unwrap().user.name, "admin");
        let with_uid = self_signed(&[(DnType::CommonName, "bob"), (uid_type(), "u-42")]);
        assert_eq!(identity(&with_uid).unwrap().user.uid, "u-42");
        // An empty uid names nobody, as does no common name.
        assert!(identity(&self_signed(&[
            (DnType::CommonName, "bob"),
            (uid_type(), "")
        ]))
        .is_none());
        assert!(identity(&self_signed(&[(DnType::OrganizationName, "dev")])).is_none());
        assert!(identity(b"not a certificate").is_none());
    }

    /// A CA, its verifier (as `--client-ca-file` makes it) and a certificate it signed.
    fn signed(usage: ExtendedKeyUsagePurpose) -> (Arc<dyn ClientCertVerifier>, Vec<u8>) {
        let ca_key = KeyPair::generate().unwrap();
        let mut ca = CertificateParams::new(Vec::<String>::new()).unwrap();
        ca.distinguished_name.push(DnType::CommonName, "test-ca");
        ca.is_ca = IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        let ca_pem = ca.self_signed(&ca_key).unwrap().pem();
        let dir = std::env::temp_dir().join(format!("turtles-x509-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("ca.crt"), ca_pem).unwrap();
        let verifier =
            crate::auth::tls::client_verifier(&dir.join("ca.crt"), crate::auth::tls::provider())
                .unwrap();
        let _ = std::fs::remove_dir_all(&dir);
        let issuer = Issuer::new(ca, ca_key);
        let mut p = CertificateParams::new(Vec::<String>::new()).unwrap();
        p.distinguished_name.push(DnType::CommonName, "carol");
        p.extended_key_usages = vec![usage];
        let key = KeyPair::generate().unwrap();
        (verifier, p.signed_by(&key, &issuer).unwrap().der().to_vec())
    }

    #[tokio::test]
    async fn a_chain_is_verified_at_the_first_request_and_refusals_are_remembered() {
        let (verifier, leaf) = signed(ExtendedKeyUsagePurpose::ClientAuth);
        let c = ClientCert::new(vec![CertificateDer::from(leaf.clone())], verifier.clone());
        assert!(matches!(*c.0.state.lock().await, State::Fresh));
        assert_eq!(c.user().await.unwrap().name, "carol");
        assert!(matches!(*c.0.state.lock().await, State::Verified(..)));
        // A server certificate of the same CA (the host's own, say) is no client.
        let (v2, server) = signed(ExtendedKeyUsagePurpose::ServerAuth);
        let s = ClientCert::new(vec![CertificateDer::from(server)], v2);
        assert!(s.user().await.is_none());
        assert!(matches!(*s.0.state.lock().await, State::Refused(_)));
        // Another CA's verifier refuses carol's certificate.
        let (other, _) = signed(ExtendedKeyUsagePurpose::ClientAuth);
        let theirs = ClientCert::new(vec![CertificateDer::from(leaf)], other);
        assert!(theirs.user().await.is_none());
    }

    #[test]
    fn a_subject_read_short_names_nobody() {
        // alice's subject with an empty RDN set spliced in before its common name: x509-parser
        // stops at the empty set, so the CN it would read is not the one Go reads.
        let der = self_signed(&[
            (DnType::OrganizationName, "dev"),
            (DnType::CommonName, "alice"),
        ]);
        assert_eq!(identity(&der).unwrap().user.name, "alice");
        let (_, cert) = x509_parser::parse_x509_certificate(&der).unwrap();
        let name = cert.subject().as_raw();
        // The first entry: a SET, its length in short form.
        assert!(name[2] == 0x31 && name[3] < 0x80);
        let first = 2 + usize::from(name[3]);
        // The Name's header is 2 bytes here (short form); the splice keeps it short.
        assert!(name[1] < 0x7e && name.len() == usize::from(name[1]) + 2);
        let mut spliced = vec![name[0], name[1] + 2];
        spliced.extend_from_slice(&name[2..2 + first]);
        spliced.extend_from_slice(&[0x31, 0x00]);
        spliced.extend_from_slice(&name[2 + first..]);
        assert_eq!(crate::auth::der::rdn_count(&spliced), Some(3));
        assert!(crate::auth::der::whole_name(cert.subject()));
        use x509_parser::prelude::FromDer;
        let (_, short) = x509_parser::x509::X509Name::from_der(&spliced).unwrap();
        assert_eq!(
            short.iter().count(),
            1,
            "x509-parser stops at the empty set"
        );
        assert!(!crate::auth::der::whole_name(&short));
        assert_eq!(crate::auth::der::rdn_count(&[0x30, 0x05, 0x31]), None);
    }
}
