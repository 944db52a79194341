//! X.509 and cert-manager-shaped helpers shared by the `certificate` and `issuer` example
//! controllers: ECDSA P-256 keys, CSRs, leaf certificates signed by a CA, PEM/base64, and status
//! conditions. Pure Rust (RustCrypto), so it builds for `wasm32-wasip2`; randomness comes from
//! the WASI random interface the host provides.

use std::str::FromStr;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use const_oid::db::{rfc5280, rfc5912};
use der::asn1::{Ia5String, OctetString};
use der::referenced::OwnedToRef;
use der::{Decode, DecodePem, Encode, EncodePem};
use p256::ecdsa::signature::Verifier;
use p256::ecdsa::{DerSignature, SigningKey, VerifyingKey};
use p256::pkcs8::{DecodePrivateKey, EncodePrivateKey, EncodePublicKey, LineEnding};
use sha1::Digest;
use spki::SubjectPublicKeyInfoOwned;
use turtles_controller::{json, Value};
use x509_cert::builder::{Builder, CertificateBuilder, Profile, RequestBuilder};
use x509_cert::ext::pkix::name::GeneralName;
use x509_cert::ext::pkix::{
    AuthorityKeyIdentifier, BasicConstraints, ExtendedKeyUsage, KeyUsage, KeyUsages,
    SubjectAltName, SubjectKeyIdentifier,
};
use x509_cert::name::Name;
use x509_cert::request::{CertReq, ExtensionReq};
use x509_cert::serial_number::SerialNumber;
use x509_cert::time::{Time, Validity};
use x509_cert::Certificate;

pub use p256::ecdsa::SigningKey as PrivateKey;

/// The API group of the cert-manager-shaped kinds.
pub const GROUP: &str = "cert-manager.io";

/// What went wrong, as a message for a condition or an outcome.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error(pub String);

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Error {}

/// `Err(Error(format!(..)))`.
macro_rules! fail {
    ($($arg:tt)*) => { Err(Error(format!($($arg)*))) };
}

type Result<T> = std::result::Result<T, Error>;

fn ctx<E: std::fmt::Display>(what: &str) -> impl FnOnce(E) -> Error + '_ {
    move |e| Error(format!("{what}: {e}"))
}

// ---------------------------------------------------------------------------------------------
// base64 (Kubernetes Secret data, spec.request, status.certificate) and time

/// Standard base64 with padding.
pub fn b64(bytes: &[u8]) -> String {
    use base64ct::Encoding;
    base64ct::Base64::encode_string(bytes)
}

/// Decodes standard base64, ignoring line breaks and spaces.
pub fn unb64(text: &str) -> Result<Vec<u8>> {
    use base64ct::Encoding;
    let compact: String = text.chars().filter(|c| !c.is_ascii_whitespace()).collect();
    base64ct::Base64::decode_vec(&compact).map_err(ctx("invalid base64"))
}

/// A base64 field of an object (e.g. `/data/tls.crt`) decoded as UTF-8 text.
pub fn b64_field(obj: &Value, pointer: &str) -> Option<String> {
    let text = obj.pointer(pointer)?.as_str()?;
    String::from_utf8(unb64(text).ok()?).ok()
}

/// Seconds since the Unix epoch.
pub fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// An RFC 3339 UTC timestamp (`2024-01-02T03:04:05Z`) for Unix seconds.
pub fn rfc3339(unix_secs: u64) -> String {
    der::DateTime::from_unix_duration(Duration::from_secs(unix_secs))
        .map_or_else(|_| "1970-01-01T00:00:00Z".into(), |t| t.to_string())
}

// ---------------------------------------------------------------------------------------------
// Keys

/// A fresh ECDSA P-256 key from the host's secure random source.
pub fn generate_key() -> PrivateKey {
    SigningKey::random(&mut rand_core::OsRng)
}

/// The key as PKCS#8 PEM (`BEGIN PRIVATE KEY`).
pub fn key_pem(key: &PrivateKey) -> Result<String> {
    key.to_pkcs8_pem(LineEnding::LF)
        .map(|pem| pem.to_string())
        .map_err(ctx("encoding the private key"))
}

/// An ECDSA P-256 private key from PEM: PKCS#8 (`BEGIN PRIVATE KEY`) or SEC1
/// (`BEGIN EC PRIVATE KEY`).
pub fn parse_key(pem: &str) -> Result<PrivateKey> {
    if let Ok(key) = SigningKey::from_pkcs8_pem(pem) {
        return Ok(key);
    }
    match p256::SecretKey::from_sec1_pem(pem) {
        Ok(secret) => Ok(secret.into()),
        Err(_) => fail!("the private key is not an ECDSA P-256 key in PKCS#8 or SEC1 PEM (RSA is not supported)"),
    }
}

fn spki_of(key: &VerifyingKey) -> Result<SubjectPublicKeyInfoOwned> {
    let der = key
        .to_public_key_der()
        .map_err(ctx("encoding the public key"))?;
    SubjectPublicKeyInfoOwned::from_der(der.as_bytes()).map_err(ctx("encoding the public key"))
}

/// The private key's public key as a SubjectPublicKeyInfo.
pub fn public_key_spki(key: &PrivateKey) -> Result<SubjectPublicKeyInfoOwned> {
    spki_of(key.verifying_key())
}

/// Whether the certificate certifies this private key's public key.
pub fn key_matches(cert: &Certificate, key: &PrivateKey) -> bool {
    spki_of(key.verifying_key())
        .is_ok_and(|spki| spki == cert.tbs_certificate.subject_public_key_info)
}

// ---------------------------------------------------------------------------------------------
// Certificate signing requests

/// A CSR (PEM) signed by `key`, with subject `CN=<first name>` and the DNS names as SANs.
pub fn csr_pem(key: &PrivateKey, dns_names: &[String]) -> Result<String> {
    let Some(first) = dns_names.first() else {
        return fail!("no DNS names");
    };
    let subject = subject_cn(first)?;
    let mut builder =
        RequestBuilder::new(subject, key).map_err(ctx("building the certificate request"))?;
    builder
        .add_extension(&san(dns_names)?)
        .map_err(ctx("adding subjectAltName"))?;
    let req = builder
        .build::<DerSignature>()
        .map_err(ctx("signing the certificate request"))?;
    req.to_pem(LineEnding::LF)
        .map_err(ctx("encoding the certificate request"))
}

fn subject_cn(cn: &str) -> Result<Name> {
    if cn.contains([',', '+', '=', '\\', '"', '<', '>', ';']) {
        return fail!("{cn:?} cannot be a common name here");
    }
    Name::from_str(&format!("CN={cn}")).map_err(ctx("building the subject"))
}

fn san(dns_names: &[String]) -> Result<SubjectAltName> {
    let names = dns_names
        .iter()
        .map(|n| {
            Ia5String::new(n)
                .map(GeneralName::DnsName)
                .map_err(ctx("DNS name"))
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(SubjectAltName(names))
}

/// A parsed CSR whose signature has been verified.
#[derive(Clone, Debug)]
pub struct Csr {
    /// The requested subject.
    pub subject: Name,
    /// The key to certify.
    pub public_key: SubjectPublicKeyInfoOwned,
    /// DNS names from the extension request's subjectAltName.
    pub dns_names: Vec<String>,
}

/// Parses a PEM CSR, checks it is ECDSA P-256 with SHA-256, and verifies its signature.
pub fn parse_csr(pem: &str) -> Result<Csr> {
    let req = CertReq::from_pem(pem.trim().as_bytes()).map_err(ctx("parsing the CSR"))?;
    if req.algorithm.oid != rfc5912::ECDSA_WITH_SHA_256 {
        return fail!(
            "CSR signature algorithm {} is not supported (want ecdsa-with-SHA256)",
            req.algorithm.oid
        );
    }
    let key = VerifyingKey::try_from(req.info.public_key.owned_to_ref())
        .map_err(ctx("the CSR's public key is not ECDSA P-256"))?;
    let sig = req
        .signature
        .as_bytes()
        .ok_or_else(|| Error("malformed CSR signature".into()))
        .and_then(|b| DerSignature::from_bytes(b).map_err(ctx("malformed CSR signature")))?;
    let info = req.info.to_der().map_err(ctx("encoding the CSR info"))?;
    key.verify(&info, &sig)
        .map_err(ctx("the CSR's signature does not verify"))?;
    let mut dns_names = Vec::new();
    for attr in req.info.attributes.iter() {
        if attr.oid != const_oid::db::rfc5912::ID_EXTENSION_REQ {
            continue;
        }
        for value in attr.values.iter() {
            let exts: ExtensionReq = value
                .decode_as()
                .map_err(ctx("parsing the CSR's extension request"))?;
            for ext in exts.0.iter() {
                if ext.extn_id == rfc5280::ID_CE_SUBJECT_ALT_NAME {
                    dns_names.extend(san_dns_names(ext.extn_value.as_bytes())?);
                }
            }
        }
    }
    Ok(Csr {
        subject: req.info.subject,
        public_key: req.info.public_key,
        dns_names,
    })
}

fn san_dns_names(der: &[u8]) -> Result<Vec<String>> {
    let san = SubjectAltName::from_der(der).map_err(ctx("parsing subjectAltName"))?;
    Ok(san
        .0
        .into_iter()
        .filter_map(|n| match n {
            GeneralName::DnsName(d) => Some(d.to_string()),
            _ => None,
        })
        .collect())
}

// ---------------------------------------------------------------------------------------------
// Certificates

/// Every certificate in a PEM bundle, in order.
pub fn parse_chain(pem: &str) -> Result<Vec<Certificate>> {
    let certs = Certificate::load_pem_chain(pem.as_bytes()).map_err(ctx("parsing certificates"))?;
    if certs.is_empty() {
        return fail!("no certificate in the PEM");
    }
    Ok(certs)
}

/// A certificate as PEM.
pub fn cert_pem(cert: &Certificate) -> Result<String> {
    cert.to_pem(LineEnding::LF)
        .map_err(ctx("encoding the certificate"))
}

/// The DNS names of the certificate's subjectAltName.
pub fn dns_names(cert: &Certificate) -> Vec<String> {
    cert.tbs_certificate
        .extensions
        .iter()
        .flatten()
        .filter(|e| e.extn_id == rfc5280::ID_CE_SUBJECT_ALT_NAME)
        .filter_map(|e| san_dns_names(e.extn_value.as_bytes()).ok())
        .flatten()
        .collect()
}

/// notBefore and notAfter as Unix seconds.
pub fn validity(cert: &Certificate) -> (u64, u64) {
    let v = &cert.tbs_certificate.validity;
    (
        v.not_before.to_unix_duration().as_secs(),
        v.not_after.to_unix_duration().as_secs(),
    )
}

fn subject_key_id(cert: &Certificate) -> Option<Vec<u8>> {
    let ext = cert
        .tbs_certificate
        .extensions
        .iter()
        .flatten()
        .find(|e| e.extn_id == rfc5280::ID_CE_SUBJECT_KEY_IDENTIFIER)?;
    let ski = SubjectKeyIdentifier::from_der(ext.extn_value.as_bytes()).ok()?;
    Some(ski.0.as_bytes().to_vec())
}

/// RFC 5280 method 1: SHA-1 of the subjectPublicKey bits (what OpenSSL uses too).
fn key_id(spki: &SubjectPublicKeyInfoOwned) -> Vec<u8> {
    sha1::Sha1::digest(spki.subject_public_key.raw_bytes()).to_vec()
}

/// A CA: its certificate and private key, checked to belong together.
pub struct Ca {
    cert: Certificate,
    key: PrivateKey,
    pem: String,
}

impl Ca {
    /// From the PEM certificate (the first one in the bundle) and PEM private key.
    pub fn new(cert_pem: &str, key_pem: &str) -> Result<Self> {
        let cert = parse_chain(cert_pem)?.remove(0);
        let key = parse_key(key_pem)?;
        if !key_matches(&cert, &key) {
            return fail!("the CA certificate and private key do not match");
        }
        if validity(&cert).1 <= unix_now() + 3600 {
            return fail!("the CA certificate has expired (or expires within the hour)");
        }
        let pem = self::cert_pem(&cert)?;
        Ok(Ca { cert, key, pem })
    }

    /// The CA certificate as PEM.
    pub fn cert_pem(&self) -> &str {
        &self.pem
    }

    /// A leaf certificate for a verified CSR: random serial, `days` of validity (backdated five
    /// minutes for clock skew, never past the CA's own notAfter), the CSR's subject and DNS names,
    /// key usage digitalSignature + keyEncipherment, extended key usage serverAuth, and the CA's
    /// key id as the authority key id.
    pub fn issue(&self, csr: &Csr, days: u32) -> Result<Certificate> {
        if csr.dns_names.is_empty() {
            return fail!("the CSR requests no DNS names");
        }
        let now = SystemTime::now();
        let (_, ca_not_after) = validity(&self.cert);
        let mut not_after = now + Duration::from_secs(u64::from(days) * 86_400);
        let ca_end = UNIX_EPOCH + Duration::from_secs(ca_not_after);
        if not_after > ca_end {
            not_after = ca_end;
        }
        let validity = Validity {
            not_before: Time::try_from(now - Duration::from_secs(300)).map_err(ctx("notBefore"))?,
            not_after: Time::try_from(not_after).map_err(ctx("notAfter"))?,
        };
        let mut serial = [0u8; 16];
        rand_core::RngCore::fill_bytes(&mut rand_core::OsRng, &mut serial);
        serial[0] &= 0x7f; // positive
        serial[0] |= 0x40; // and 16 bytes long
        let serial = SerialNumber::new(&serial).map_err(ctx("serial number"))?;
        let profile = Profile::Manual {
            issuer: Some(self.cert.tbs_certificate.subject.clone()),
        };
        let mut builder = CertificateBuilder::new(
            profile,
            serial,
            validity,
            csr.subject.clone(),
            csr.public_key.clone(),
            &self.key,
        )
        .map_err(ctx("building the certificate"))?;
        let aki = subject_key_id(&self.cert)
            .unwrap_or_else(|| key_id(&self.cert.tbs_certificate.subject_public_key_info));
        let octets = |b: Vec<u8>| OctetString::new(b).map_err(ctx("key identifier"));
        let ski = SubjectKeyIdentifier(octets(key_id(&csr.public_key))?);
        let aki = AuthorityKeyIdentifier {
            key_identifier: Some(octets(aki)?),
            authority_cert_issuer: None,
            authority_cert_serial_number: None,
        };
        let basic = BasicConstraints {
            ca: false,
            path_len_constraint: None,
        };
        let usage = KeyUsage(KeyUsages::DigitalSignature | KeyUsages::KeyEncipherment);
        let eku = ExtendedKeyUsage(vec![rfc5280::ID_KP_SERVER_AUTH]);
        let san = san(&csr.dns_names)?;
        let added = builder
            .add_extension(&basic)
            .and_then(|_| builder.add_extension(&usage))
            .and_then(|_| builder.add_extension(&eku))
            .and_then(|_| builder.add_extension(&ski))
            .and_then(|_| builder.add_extension(&aki))
            .and_then(|_| builder.add_extension(&san));
        added.map_err(ctx("adding extensions"))?;
        builder
            .build::<DerSignature>()
            .map_err(ctx("signing the certificate"))
    }
}

// ---------------------------------------------------------------------------------------------
// Objects

/// A controller owner reference to `owner` (apiVersion, kind, name, uid, controller,
/// blockOwnerDeletion).
pub fn owner_reference(owner: &Value) -> Value {
    json!([{
        "apiVersion": owner["apiVersion"],
        "kind": owner["kind"],
        "name": owner["metadata"]["name"],
        "uid": owner["metadata"]["uid"],
        "controller": true,
        "blockOwnerDeletion": true,
    }])
}

/// Whether `obj` has a controller owner reference to exactly `owner` (same uid).
pub fn is_owned_by(obj: &Value, owner: &Value) -> bool {
    obj.pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)
        .is_some_and(|refs| {
            refs.iter().any(|r| {
                r["controller"] == true
                    && r["uid"] == owner["metadata"]["uid"]
                    && r["kind"] == owner["kind"]
            })
        })
}

/// The condition of this type in `status.conditions`, if any.
pub fn condition<'a>(obj: &'a Value, type_: &str) -> Option<&'a Value> {
    obj.pointer("/status/conditions")
        .and_then(Value::as_array)?
        .iter()
        .find(|c| c["type"] == type_)
}

/// Whether the condition of this type has exactly this status, reason and message.
pub fn condition_is(obj: &Value, type_: &str, status: &str, reason: &str, message: &str) -> bool {
    condition(obj, type_)
        .is_some_and(|c| c["status"] == status && c["reason"] == reason && c["message"] == message)
}

/// `status.conditions` with the condition of type `type_` set (others kept); its
/// lastTransitionTime changes only when its status does.
pub fn with_condition(
    obj: &Value,
    type_: &str,
    status: &str,
    reason: &str,
    message: &str,
) -> Value {
    let mut conditions: Vec<Value> = obj
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let since = condition(obj, type_)
        .filter(|c| c["status"] == status)
        .and_then(|c| c["lastTransitionTime"].as_str())
        .map_or_else(|| rfc3339(unix_now()), str::to_owned);
    let new = json!({
        "type": type_,
        "status": status,
        "reason": reason,
        "message": message,
        "lastTransitionTime": since,
    });
    match conditions.iter_mut().find(|c| c["type"] == type_) {
        Some(c) => *c = new,
        None => conditions.push(new),
    }
    Value::Array(conditions)
}
