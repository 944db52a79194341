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
    /// The client CA's (none: the chain authenticates no user itself).
    verifier: Option<Arc<dyn ClientCertVerifier>>,
    /// The front proxies' (`--requestheader-*`), if any.
    front_proxy: Option<Arc<RequestHeader>>,
    /// Whether the chain is a front proxy's, and when that was found.
    proxy_state: std::sync::Mutex<Option<(bool, Instant)>>,
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
    fn new(
        chain: Vec<CertificateDer<'static>>,
        verifier: Option<Arc<dyn ClientCertVerifier>>,
        front_proxy: Option<Arc<RequestHeader>>,
    ) -> Self {
        Self(Arc::new(Presented {
            chain,
            verifier,
            front_proxy,
            proxy_state: std::sync::Mutex::new(None),
            state: tokio::sync::Mutex::new(State::Fresh),
        }))
    }

    /// kube's request-header authenticator: when the chain is a front proxy's (it verifies
    /// against `--requestheader-client-ca-file` and its common name is allowed), the user its
    /// headers name; None otherwise, or when they name nobody (the other credentials decide).
    pub fn proxied_user(&self, headers: &axum::http::HeaderMap) -> Option<UserInfo> {
        let rh = self.0.front_proxy.as_ref()?;
        if !self.is_front_proxy(rh) {
            return None;
        }
        rh.user(headers)
    }

    fn is_front_proxy(&self, rh: &RequestHeader) -> bool {
        let p = &self.0;
        let mut state = p
            .proxy_state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some((ok, at)) = *state {
            let fresh = if ok { REVERIFY } else { RETRY };
            if at.elapsed() < fresh {
                return ok;
            }
        }
        let ok = p.chain.split_first().is_some_and(|(leaf, intermediates)| {
            rh.verifier
                .verify_client_cert(leaf, intermediates, UnixTime::now())
                .is_ok()
                && rh.allows(leaf.as_ref())
        });
        *state = Some((ok, Instant::now()));
        ok
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
        let verifier = p.verifier.as_ref()?;
        *state = match verifier.verify_client_cert(leaf, intermediates, UnixTime::now()) {
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

/// kube's `--requestheader-*`: which front proxies may name the user, and in which headers.
#[derive(Debug)]
pub struct RequestHeader {
    /// Verifies a front proxy's certificate (`--requestheader-client-ca-file`).
    pub verifier: Arc<dyn ClientCertVerifier>,
    /// The common names a front proxy's certificate may have (empty: any).
    pub allowed_names: Vec<String>,
    /// Header names, lower-cased.
    pub username_headers: Vec<String>,
    pub uid_headers: Vec<String>,
    pub group_headers: Vec<String>,
    pub extra_prefixes: Vec<String>,
}

impl RequestHeader {
    /// Whether a verified leaf's common name is allowed.
    fn allows(&self, der: &[u8]) -> bool {
        if self.allowed_names.is_empty() {
            return true;
        }
        let Ok((_, cert)) = x509_parser::parse_x509_certificate(der) else {
            return false;
        };
        let cn = cert
            .subject()
            .iter_common_name()
            .last()
            .and_then(|c| c.as_str().ok());
        cn.is_some_and(|cn| self.allowed_names.iter().any(|a| a == cn))
    }

    /// The user the headers name (kube's `requestheader` authenticator): the first non-empty
    /// value of the username headers, else nobody.
    pub fn user(&self, headers: &axum::http::HeaderMap) -> Option<UserInfo> {
        let first = |names: &[String]| {
            names.iter().find_map(|n| {
                headers
                    .get_all(n.as_str())
                    .iter()
                    .filter_map(|v| std::str::from_utf8(v.as_bytes()).ok())
                    .find(|v| !v.is_empty())
                    .map(str::to_owned)
            })
        };
        let name = first(&self.username_headers)?;
        let uid = first(&self.uid_headers).unwrap_or_default();
        let groups: Vec<String> = self
            .group_headers
            .iter()
            .flat_map(|n| headers.get_all(n.as_str()).iter())
            .filter_map(|v| std::str::from_utf8(v.as_bytes()).ok())
            .map(str::to_owned)
            .collect();
        let mut extra: std::collections::BTreeMap<String, Vec<String>> = Default::default();
        for (header, value) in headers {
            let h = header.as_str();
            let Some(key) = self
                .extra_prefixes
                .iter()
                .find_map(|p| h.strip_prefix(p.as_str()))
            else {
                continue;
            };
            // kube's `newExtra`: lower-cased, then unescaped.
            let key = crate::auth::unescape_extra_key(&key.to_ascii_lowercase());
            if let Ok(v) = std::str::from_utf8(value.as_bytes()) {
                extra.entry(key).or_default().push(v.to_owned());
            }
        }
        // kube's AuthenticatedGroupAdder wraps this authenticator as every other one.
        let mut groups = groups;
        if name != "system:anonymous"
            && !groups
                .iter()
                .any(|g| g == "system:authenticated" || g == "system:unauthenticated")
        {
            groups.push("system:authenticated".to_owned());
        }
        Some(UserInfo {
            name,
            uid,
            groups,
            extra,
        })
    }

    /// Whether a header is one of those that name the user (dropped from every request once
    /// authenticated, as kube does).
    pub fn names_user(&self, header: &str) -> bool {
        self.username_headers
            .iter()
            .chain(&self.uid_headers)
            .chain(&self.group_headers)
            .any(|n| n == header)
            || self
                .extra_prefixes
                .iter()
                .any(|p| header.starts_with(p.as_str()))
    }
}

/// Wraps the TLS acceptor: after the handshake, the client certificate chain (if any) is handed
/// to every request of the connection.
#[derive(Clone)]
pub struct PeerAcceptor<A> {
    inner: A,
    verifier: Option<Arc<dyn ClientCertVerifier>>,
    front_proxy: Option<Arc<RequestHeader>>,
}

impl<A> PeerAcceptor<A> {
    /// `verifier`: the client CA's; `front_proxy`: the front proxies' (with neither, no client
    /// certificate is looked at).
    pub fn new(
        inner: A,
        verifier: Option<Arc<dyn ClientCertVerifier>>,
        front_proxy: Option<Arc<RequestHeader>>,
    ) -> Self {
        Self {
            inner,
            verifier,
            front_proxy,
        }
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
        let front_proxy = self.front_proxy.clone();
        Box::pin(async move {
            let (tls, inner) = accepted.await?;
            let looked_at = verifier.is_some() || front_proxy.is_some();
            let cert = match tls.get_ref().1.peer_certificates() {
                Some(chain) if looked_at && !chain.is_empty() && chain.len() <= MAX_CHAIN => {
                    Some(ClientCert::new(
                        chain.iter().map(|c| c.clone().into_owned()).collect(),
                        verifier,
                        front_proxy,
                    ))
                }
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
        let c = ClientCert::new(
            vec![CertificateDer::from(leaf.clone())],
            Some(verifier.clone()),
            None,
        );
        assert!(matches!(*c.0.state.lock().await, State::Fresh));
        assert_eq!(c.user().await.unwrap().name, "carol");
        assert!(matches!(*c.0.state.lock().await, State::Verified(..)));
        // A server certificate of the same CA (the host's own, say) is no client.
        let (v2, server) = signed(ExtendedKeyUsagePurpose::ServerAuth);
        let s = ClientCert::new(vec![CertificateDer::from(server)], Some(v2), None);
        assert!(s.user().await.is_none());
        assert!(matches!(*s.0.state.lock().await, State::Refused(_)));
        // Another CA's verifier refuses carol's certificate.
        let (other, _) = signed(ExtendedKeyUsagePurpose::ClientAuth);
        let theirs = ClientCert::new(vec![CertificateDer::from(leaf)], Some(other), None);
        assert!(theirs.user().await.is_none());
    }

    #[test]
    fn a_front_proxy_names_the_user_in_its_headers_and_nobody_else_does() {
        // The signed leaf's CN is carol.
        let (verifier, leaf) = signed(ExtendedKeyUsagePurpose::ClientAuth);
        let rh = |allowed: &[&str]| {
            Arc::new(RequestHeader {
                verifier: verifier.clone(),
                allowed_names: allowed.iter().map(|s| s.to_string()).collect(),
                username_headers: vec!["x-remote-user".into()],
                uid_headers: vec!["x-remote-uid".into()],
                group_headers: vec!["x-remote-group".into()],
                extra_prefixes: vec!["x-remote-extra-".into()],
            })
        };
        let mut h = axum::http::HeaderMap::new();
        h.append("x-remote-user", "alice".parse().unwrap());
        h.append("x-remote-uid", "u-1".parse().unwrap());
        h.append("x-remote-group", "dev".parse().unwrap());
        h.append("x-remote-group", "ops".parse().unwrap());
        h.append("x-remote-extra-example.com%2FTeam", "blue".parse().unwrap());
        let proxy = ClientCert::new(
            vec![CertificateDer::from(leaf.clone())],
            None,
            Some(rh(&["carol"])),
        );
        let user = proxy.proxied_user(&h).unwrap();
        assert_eq!(user.name, "alice");
        assert_eq!(user.uid, "u-1");
        // kube's AuthenticatedGroupAdder adds `system:authenticated`.
        assert_eq!(user.groups, ["dev", "ops", "system:authenticated"]);
        assert_eq!(user.extra["example.com/team"], ["blue"]);
        // A CN not allowed, or no certificate of the front-proxy CA: the headers name nobody.
        let other = ClientCert::new(
            vec![CertificateDer::from(leaf.clone())],
            None,
            Some(rh(&["front-proxy-client"])),
        );
        assert!(other.proxied_user(&h).is_none());
        let (_, stranger) = signed(ExtendedKeyUsagePurpose::ClientAuth);
        let stranger = ClientCert::new(vec![CertificateDer::from(stranger)], None, Some(rh(&[])));
        assert!(stranger.proxied_user(&h).is_none());
        // Without a user header, nobody either (the other credentials decide).
        h.remove("x-remote-user");
        assert!(proxy.proxied_user(&h).is_none());
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
