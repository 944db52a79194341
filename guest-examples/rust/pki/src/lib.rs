//! X.509 and cert-manager-shaped helpers shared by the `certificate` and `issuer` example
//! controllers: RSA, ECDSA and Ed25519 keys, CSRs, certificates signed by a CA or self-signed,
//! PEM/base64, Go durations, and status conditions. Pure Rust (RustCrypto), so it builds for `wasm32-wasip2`; randomness comes from
//! the WASI random interface the host provides.

use std::net::IpAddr;
use std::str::FromStr;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use const_oid::db::rfc5280;
use der::asn1::{Ia5String, OctetString};
use der::{Decode, DecodePem, Encode, EncodePem};
use p256::pkcs8::LineEnding;
use sha1::Digest;
use spki::SubjectPublicKeyInfoOwned;
use turtles_controller::{json, ApiError, Gvr, Value};
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

/// `Err(Error(format!(..)))`.
macro_rules! fail {
    ($($arg:tt)*) => { Err(Error(format!($($arg)*))) };
}

mod keys;

pub use keys::{same_key, KeyAlgorithm, KeyEncoding, PrivateKey};

/// The API group of the cert-manager-shaped kinds.
pub const GROUP: &str = "cert-manager.io";

/// Where a ClusterIssuer's Secrets live: cert-manager's "cluster resource namespace", which
/// is the namespace cert-manager runs in, `cert-manager` in a default installation.
pub const CLUSTER_RESOURCE_NAMESPACE: &str = "cert-manager";

/// A certificate's lifetime when nothing says otherwise (cert-manager's 90 days).
pub const DEFAULT_DURATION_SECS: u64 = 90 * 86_400;

/// The two kinds of issuer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IssuerKind {
    Issuer,
    ClusterIssuer,
}

/// A Certificate's or CertificateRequest's `issuerRef` naming one of our issuers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IssuerRef {
    pub name: String,
    pub kind: IssuerKind,
}

impl IssuerRef {
    /// An `issuerRef` of group `cert-manager.io` (the default) and kind `Issuer` (the default)
    /// or `ClusterIssuer`; `None` for another group's or kind's issuer.
    pub fn of(issuer_ref: &Value) -> Option<Self> {
        if issuer_ref["group"]
            .as_str()
            .is_some_and(|g| !g.is_empty() && g != GROUP)
        {
            return None;
        }
        let kind = match issuer_ref["kind"].as_str().unwrap_or("") {
            "" | "Issuer" => IssuerKind::Issuer,
            "ClusterIssuer" => IssuerKind::ClusterIssuer,
            _ => return None,
        };
        Some(IssuerRef {
            name: issuer_ref["name"].as_str().unwrap_or("").to_owned(),
            kind,
        })
    }

    /// The issuer's API path (an Issuer in `namespace`, or the ClusterIssuer).
    pub fn path(&self, namespace: &str) -> String {
        match self.kind {
            IssuerKind::Issuer => ISSUERS.object_path(namespace, &self.name),
            IssuerKind::ClusterIssuer => CLUSTER_ISSUERS.object_path("", &self.name),
        }
    }

    /// `Issuer NAME` or `ClusterIssuer NAME`.
    pub fn describe(&self) -> String {
        format!("{} {}", self.kind_name(), self.name)
    }

    pub fn kind_name(&self) -> &'static str {
        match self.kind {
            IssuerKind::Issuer => "Issuer",
            IssuerKind::ClusterIssuer => "ClusterIssuer",
        }
    }
}

pub const ISSUERS: Gvr<'static> = Gvr::new(GROUP, "v1", "issuers");
pub const CLUSTER_ISSUERS: Gvr<'static> = Gvr::new(GROUP, "v1", "clusterissuers");

/// Why a CA issuer's key pair cannot be used.
#[derive(Debug)]
pub enum CaError {
    /// Reading the Secret failed: retry.
    Api(ApiError),
    /// The Secret is missing (cert-manager's reason `ErrGetKeyPair`).
    GetKeyPair(String),
    /// The Secret does not hold a usable CA (`ErrInvalidKeyPair`).
    InvalidKeyPair(String),
}

impl std::fmt::Display for CaError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CaError::Api(e) => write!(f, "reading the CA Secret: {e:?}"),
            CaError::GetKeyPair(m) | CaError::InvalidKeyPair(m) => f.write_str(m),
        }
    }
}

/// Loads the CA of a `ca` issuer from its Secret in `namespace` (the Issuer's own, or
/// [`CLUSTER_RESOURCE_NAMESPACE`] for a ClusterIssuer).
pub fn load_ca(issuer: &Value, namespace: &str) -> std::result::Result<Ca, CaError> {
    let Some(secret_name) = issuer["spec"]["ca"]["secretName"]
        .as_str()
        .filter(|s| !s.is_empty())
    else {
        return Err(CaError::InvalidKeyPair(
            "the issuer has neither spec.ca.secretName nor spec.selfSigned".into(),
        ));
    };
    let secret = match turtles_controller::api::get(&Gvr::SECRETS.object_path(namespace, secret_name)) {
        Ok(s) => s,
        Err(e) if e.is_not_found() => {
            return Err(CaError::GetKeyPair(format!(
                "Error getting keypair for CA issuer: secret \"{secret_name}\" not found in namespace {namespace}"
            )))
        }
        Err(e) => return Err(CaError::Api(e)),
    };
    let field = |name: &str| b64_field(&secret, &format!("/data/{name}"));
    let (Some(crt), Some(key)) = (field("tls.crt"), field("tls.key")) else {
        return Err(CaError::InvalidKeyPair(format!(
            "Error getting keypair for CA issuer: secret \"{secret_name}\" has no tls.crt and tls.key"
        )));
    };
    Ca::new(&crt, &key).map_err(|e| {
        CaError::InvalidKeyPair(format!(
            "Error getting keypair for CA issuer: secret \"{secret_name}\": {e}"
        ))
    })
}

/// What went wrong, as a message for a condition or an outcome.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error(pub String);

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Error {}

pub(crate) type Result<T> = std::result::Result<T, Error>;

pub(crate) fn ctx<E: std::fmt::Display>(what: &str) -> impl FnOnce(E) -> Error + '_ {
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

/// The strings of a JSON array field (none when it is missing or not an array).
pub fn strings(list: &Value) -> Vec<String> {
    list.as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(str::to_owned)
        .collect()
}

/// Seconds since the Unix epoch.
pub fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// Unix seconds of an RFC 3339 UTC timestamp as [`rfc3339`] writes it.
pub fn parse_rfc3339(text: &str) -> Option<u64> {
    text.parse::<der::DateTime>()
        .ok()
        .map(|t| t.unix_duration().as_secs())
}

/// An RFC 3339 UTC timestamp (`2024-01-02T03:04:05Z`) for Unix seconds.
pub fn rfc3339(unix_secs: u64) -> String {
    der::DateTime::from_unix_duration(Duration::from_secs(unix_secs))
        .map_or_else(|_| "1970-01-01T00:00:00Z".into(), |t| t.to_string())
}

/// Parses a Go duration as cert-manager's `duration` and `renewBefore` take it (`2160h`,
/// `1h30m`, `90s`, `1.5h`): whole seconds, at least one.
pub fn parse_duration(text: &str) -> Result<u64> {
    let bad = || {
        Error(format!(
            "{text:?} is not a duration (like 2160h, 1h30m or 90s)"
        ))
    };
    let mut rest = text.trim();
    if rest.is_empty() {
        return Err(bad());
    }
    let mut total = 0f64;
    while !rest.is_empty() {
        let num_len = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .ok_or_else(bad)?;
        let value: f64 = rest[..num_len].parse().map_err(|_| bad())?;
        rest = &rest[num_len..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let scale = match &rest[..unit_len] {
            "h" => 3600.0,
            "m" => 60.0,
            "s" => 1.0,
            "ms" => 1e-3,
            "us" | "µs" => 1e-6,
            "ns" => 1e-9,
            _ => return Err(bad()),
        };
        total += value * scale;
        rest = &rest[unit_len..];
    }
    if !(1.0..=3.2e9).contains(&total) {
        return fail!("duration {text:?} is out of range (one second to a century)");
    }
    Ok(total.round() as u64)
}

// ---------------------------------------------------------------------------------------------
// Names

/// The subject alternative names of a certificate or request, of the kinds cert-manager
/// supports.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Names {
    pub dns: Vec<String>,
    pub ips: Vec<IpAddr>,
    pub uris: Vec<String>,
    pub emails: Vec<String>,
}

impl Names {
    pub fn is_empty(&self) -> bool {
        self.dns.is_empty() && self.ips.is_empty() && self.uris.is_empty() && self.emails.is_empty()
    }

    /// Sorted and without duplicates, for comparisons.
    pub fn normalized(&self) -> Names {
        fn norm<T: Ord + Clone>(v: &[T]) -> Vec<T> {
            let mut v = v.to_vec();
            v.sort();
            v.dedup();
            v
        }
        Names {
            dns: norm(&self.dns),
            ips: norm(&self.ips),
            uris: norm(&self.uris),
            emails: norm(&self.emails),
        }
    }

    fn to_san(&self) -> Result<SubjectAltName> {
        let ia5 = |s: &String| Ia5String::new(s).map_err(|_| Error(format!("{s:?} is not ASCII")));
        let mut names = Vec::new();
        for n in &self.dns {
            names.push(GeneralName::DnsName(ia5(n)?));
        }
        for ip in &self.ips {
            let bytes = match ip {
                IpAddr::V4(a) => a.octets().to_vec(),
                IpAddr::V6(a) => a.octets().to_vec(),
            };
            names.push(GeneralName::IpAddress(
                OctetString::new(bytes).map_err(ctx("IP address"))?,
            ));
        }
        for u in &self.uris {
            names.push(GeneralName::UniformResourceIdentifier(ia5(u)?));
        }
        for e in &self.emails {
            names.push(GeneralName::Rfc822Name(ia5(e)?));
        }
        Ok(SubjectAltName(names))
    }

    fn from_san_der(der: &[u8]) -> Result<Names> {
        let san = SubjectAltName::from_der(der).map_err(ctx("parsing subjectAltName"))?;
        let mut names = Names::default();
        for n in san.0 {
            match n {
                GeneralName::DnsName(d) => names.dns.push(d.to_string()),
                GeneralName::UniformResourceIdentifier(u) => names.uris.push(u.to_string()),
                GeneralName::Rfc822Name(e) => names.emails.push(e.to_string()),
                GeneralName::IpAddress(o) => match o.as_bytes().len() {
                    4 => names.ips.push(IpAddr::from(
                        <[u8; 4]>::try_from(o.as_bytes()).unwrap_or_default(),
                    )),
                    16 => names.ips.push(IpAddr::from(
                        <[u8; 16]>::try_from(o.as_bytes()).unwrap_or_default(),
                    )),
                    _ => {}
                },
                _ => {}
            }
        }
        Ok(names)
    }
}

/// A subject with only a common name, or the empty subject.
fn subject(common_name: Option<&str>) -> Result<Name> {
    let Some(cn) = common_name.filter(|c| !c.is_empty()) else {
        return Ok(Name::default());
    };
    if cn.contains([',', '+', '=', '\\', '"', '<', '>', ';']) {
        return fail!("{cn:?} cannot be a common name here");
    }
    Name::from_str(&format!("CN={cn}")).map_err(ctx("building the subject"))
}

/// The common name of a subject, if it has one.
pub fn common_name(name: &Name) -> Option<String> {
    name.0
        .iter()
        .flat_map(|rdn| rdn.0.iter())
        .find(|atv| atv.oid == const_oid::db::rfc4519::CN)
        .and_then(|atv| {
            der::asn1::Utf8StringRef::try_from(&atv.value)
                .map(|s| s.to_string())
                .or_else(|_| {
                    der::asn1::PrintableStringRef::try_from(&atv.value).map(|s| s.to_string())
                })
                .ok()
        })
}

fn extension_names(exts: &[x509_cert::ext::Extension]) -> Result<Names> {
    match exts
        .iter()
        .find(|e| e.extn_id == rfc5280::ID_CE_SUBJECT_ALT_NAME)
    {
        Some(e) => Names::from_san_der(e.extn_value.as_bytes()),
        None => Ok(Names::default()),
    }
}

// ---------------------------------------------------------------------------------------------
// Certificate signing requests

/// A CSR (PEM) signed by `key`, with subject `CN=<common name>` (or empty) and the names as
/// subjectAltName.
pub fn csr_pem(key: &PrivateKey, common_name: Option<&str>, names: &Names) -> Result<String> {
    if names.is_empty() && common_name.is_none_or(str::is_empty) {
        return fail!(
            "at least one of commonName, dnsNames, ipAddresses, uris or emailAddresses must be set"
        );
    }
    let mut builder = RequestBuilder::new(subject(common_name)?, key)
        .map_err(ctx("building the certificate request"))?;
    if !names.is_empty() {
        builder
            .add_extension(&names.to_san()?)
            .map_err(ctx("adding subjectAltName"))?;
    }
    let req = builder
        .build::<keys::Signature>()
        .map_err(ctx("signing the certificate request"))?;
    req.to_pem(LineEnding::LF)
        .map_err(ctx("encoding the certificate request"))
}

/// A parsed CSR whose signature has been verified.
#[derive(Clone, Debug)]
pub struct Csr {
    /// The requested subject.
    pub subject: Name,
    /// The key to certify.
    pub public_key: SubjectPublicKeyInfoOwned,
    /// The names of the extension request's subjectAltName.
    pub names: Names,
}

/// Parses a PEM CSR and verifies its signature (RSA, ECDSA P-256/P-384 or Ed25519).
pub fn parse_csr(pem: &str) -> Result<Csr> {
    let req = CertReq::from_pem(pem.trim().as_bytes()).map_err(ctx("parsing the CSR"))?;
    let sig = req
        .signature
        .as_bytes()
        .ok_or_else(|| Error("malformed CSR signature".into()))?;
    let info = req.info.to_der().map_err(ctx("encoding the CSR info"))?;
    keys::verify(&req.info.public_key, &req.algorithm.oid, &info, sig)
        .map_err(|e| Error(format!("the CSR: {e}")))?;
    let mut names = Names::default();
    for attr in req.info.attributes.iter() {
        if attr.oid != const_oid::db::rfc5912::ID_EXTENSION_REQ {
            continue;
        }
        for value in attr.values.iter() {
            let exts: ExtensionReq = value
                .decode_as()
                .map_err(ctx("parsing the CSR's extension request"))?;
            let more = extension_names(&exts.0)?;
            names.dns.extend(more.dns);
            names.ips.extend(more.ips);
            names.uris.extend(more.uris);
            names.emails.extend(more.emails);
        }
    }
    Ok(Csr {
        subject: req.info.subject,
        public_key: req.info.public_key,
        names,
    })
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

/// The names of the certificate's subjectAltName.
pub fn names(cert: &Certificate) -> Names {
    extension_names(
        cert.tbs_certificate
            .extensions
            .as_deref()
            .unwrap_or_default(),
    )
    .unwrap_or_default()
}

/// Whether the certificate says it is a CA (basicConstraints CA:TRUE).
pub fn is_ca(cert: &Certificate) -> bool {
    cert.tbs_certificate
        .extensions
        .iter()
        .flatten()
        .find(|e| e.extn_id == rfc5280::ID_CE_BASIC_CONSTRAINTS)
        .and_then(|e| BasicConstraints::from_der(e.extn_value.as_bytes()).ok())
        .is_some_and(|b| b.ca)
}

/// notBefore and notAfter as Unix seconds.
pub fn validity(cert: &Certificate) -> (u64, u64) {
    let v = &cert.tbs_certificate.validity;
    (
        v.not_before.to_unix_duration().as_secs(),
        v.not_after.to_unix_duration().as_secs(),
    )
}

/// Whether the certificate certifies this private key's public key.
pub fn key_matches(cert: &Certificate, key: &PrivateKey) -> bool {
    key.spki()
        .is_ok_and(|spki| keys::same_key(&spki, &cert.tbs_certificate.subject_public_key_info))
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

/// What a CertificateRequest asks of the issued certificate besides the CSR (cert-manager's
/// `spec.duration`, `spec.isCA` and `spec.usages`).
#[derive(Clone, Debug)]
pub struct Template {
    pub duration_secs: u64,
    pub is_ca: bool,
    pub usages: Vec<String>,
}

/// The extended key usage extension, never critical (RFC 5280 leaves it to the issuer; Go and
/// so cert-manager mark it non-critical, and so do we).
struct Eku(ExtendedKeyUsage);

impl const_oid::AssociatedOid for Eku {
    const OID: const_oid::ObjectIdentifier = rfc5280::ID_CE_EXT_KEY_USAGE;
}

impl der::Encode for Eku {
    fn encoded_len(&self) -> der::Result<der::Length> {
        self.0.encoded_len()
    }
    fn encode(&self, writer: &mut impl der::Writer) -> der::Result<()> {
        self.0.encode(writer)
    }
}

impl x509_cert::ext::AsExtension for Eku {
    fn critical(&self, _: &Name, _: &[x509_cert::ext::Extension]) -> bool {
        false
    }
}

/// Key usage flags and extended key usages of cert-manager's `usages` (default: digital
/// signature and key encipherment); `isCA` adds cert sign.
fn usages(template: &Template) -> Result<(KeyUsage, Vec<const_oid::ObjectIdentifier>)> {
    use const_oid::db::rfc5280 as o;
    let default = [
        "digital signature".to_owned(),
        "key encipherment".to_owned(),
    ];
    let wanted = if template.usages.is_empty() {
        &default[..]
    } else {
        &template.usages[..]
    };
    let mut ku = x509_cert::der::flagset::FlagSet::<KeyUsages>::default();
    let mut eku = Vec::new();
    for u in wanted {
        match u.as_str() {
            "signing" | "digital signature" => ku |= KeyUsages::DigitalSignature,
            "content commitment" => ku |= KeyUsages::NonRepudiation,
            "key encipherment" => ku |= KeyUsages::KeyEncipherment,
            "key agreement" => ku |= KeyUsages::KeyAgreement,
            "data encipherment" => ku |= KeyUsages::DataEncipherment,
            "cert sign" => ku |= KeyUsages::KeyCertSign,
            "crl sign" => ku |= KeyUsages::CRLSign,
            "encipher only" => ku |= KeyUsages::EncipherOnly,
            "decipher only" => ku |= KeyUsages::DecipherOnly,
            "any" => eku.push(o::ANY_EXTENDED_KEY_USAGE),
            "server auth" => eku.push(o::ID_KP_SERVER_AUTH),
            "client auth" => eku.push(o::ID_KP_CLIENT_AUTH),
            "code signing" => eku.push(o::ID_KP_CODE_SIGNING),
            "email protection" | "s/mime" => eku.push(o::ID_KP_EMAIL_PROTECTION),
            "timestamping" => eku.push(o::ID_KP_TIME_STAMPING),
            "ocsp signing" => eku.push(o::ID_KP_OCSP_SIGNING),
            other => return fail!("usage {other:?} is not supported"),
        }
    }
    if template.is_ca {
        ku |= KeyUsages::KeyCertSign;
    }
    eku.dedup();
    Ok((KeyUsage(ku), eku))
}

/// Signs a certificate for `csr` as `template` says, issued by `issuer` (its subject and key
/// id; `None`: self-signed) with `key`, valid from now for the template's duration but never
/// past `not_after_cap`.
fn sign_certificate(
    csr: &Csr,
    template: &Template,
    issuer: Option<&Certificate>,
    key: &PrivateKey,
    not_after_cap: Option<u64>,
) -> Result<Certificate> {
    if csr.names.is_empty() && common_name(&csr.subject).is_none() {
        return fail!("the CSR requests no names");
    }
    let now = unix_now();
    let mut not_after = now + template.duration_secs;
    if let Some(cap) = not_after_cap {
        not_after = not_after.min(cap);
    }
    let time = |t: u64, what: &str| {
        Time::try_from(UNIX_EPOCH + Duration::from_secs(t))
            .map_err(|e| Error(format!("{what}: {e}")))
    };
    let validity = Validity {
        not_before: time(now, "notBefore")?,
        not_after: time(not_after, "notAfter")?,
    };
    let mut serial = [0u8; 16];
    rand_core::RngCore::fill_bytes(&mut rand_core::OsRng, &mut serial);
    serial[0] &= 0x7f; // positive
    serial[0] |= 0x40; // and 16 bytes long
    let serial = SerialNumber::new(&serial).map_err(ctx("serial number"))?;
    let profile = Profile::Manual {
        issuer: Some(issuer.map_or_else(
            || csr.subject.clone(),
            |c| c.tbs_certificate.subject.clone(),
        )),
    };
    let mut builder = CertificateBuilder::new(
        profile,
        serial,
        validity,
        csr.subject.clone(),
        csr.public_key.clone(),
        key,
    )
    .map_err(ctx("building the certificate"))?;
    let own_id = key_id(&csr.public_key);
    let aki = match issuer {
        Some(ca) => subject_key_id(ca)
            .unwrap_or_else(|| key_id(&ca.tbs_certificate.subject_public_key_info)),
        None => own_id.clone(),
    };
    let octets = |b: Vec<u8>| OctetString::new(b).map_err(ctx("key identifier"));
    let (ku, eku) = usages(template)?;
    builder
        .add_extension(&BasicConstraints {
            ca: template.is_ca,
            path_len_constraint: None,
        })
        .and_then(|_| builder.add_extension(&ku))
        .map_err(ctx("adding extensions"))?;
    if !eku.is_empty() {
        builder
            .add_extension(&Eku(ExtendedKeyUsage(eku)))
            .map_err(ctx("adding extendedKeyUsage"))?;
    }
    builder
        .add_extension(&SubjectKeyIdentifier(octets(own_id)?))
        .map_err(ctx("adding subjectKeyIdentifier"))?;
    if issuer.is_some() {
        builder
            .add_extension(&AuthorityKeyIdentifier {
                key_identifier: Some(octets(aki)?),
                authority_cert_issuer: None,
                authority_cert_serial_number: None,
            })
            .map_err(ctx("adding authorityKeyIdentifier"))?;
    }
    if !csr.names.is_empty() {
        builder
            .add_extension(&csr.names.to_san()?)
            .map_err(ctx("adding subjectAltName"))?;
    }
    builder
        .build::<keys::Signature>()
        .map_err(ctx("signing the certificate"))
}

/// A self-signed certificate for `csr`, signed by `key`, which must be the CSR's own key (what
/// cert-manager's SelfSigned issuer does).
pub fn self_sign(csr: &Csr, template: &Template, key: &PrivateKey) -> Result<Certificate> {
    if !key
        .spki()
        .is_ok_and(|k| keys::same_key(&k, &csr.public_key))
    {
        return fail!("the private key does not match the CSR's public key");
    }
    sign_certificate(csr, template, None, key, None)
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
        let key = PrivateKey::from_pem(key_pem)?;
        if !key_matches(&cert, &key) {
            return fail!("the CA certificate and private key do not match");
        }
        if validity(&cert).1 <= unix_now() {
            return fail!("the CA certificate has expired");
        }
        let pem = self::cert_pem(&cert)?;
        Ok(Ca { cert, key, pem })
    }

    /// The CA certificate as PEM.
    pub fn cert_pem(&self) -> &str {
        &self.pem
    }

    /// A certificate for a verified CSR as the template says: random serial, valid from now for
    /// the template's duration (never past the CA's own notAfter), the CSR's subject and names,
    /// key usages as asked (default digital signature + key encipherment; EKU non-critical),
    /// the CA's key id as the authority key id.
    pub fn issue(&self, csr: &Csr, template: &Template) -> Result<Certificate> {
        let cap = validity(&self.cert).1;
        sign_certificate(csr, template, Some(&self.cert), &self.key, Some(cap))
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
    let mut conditions = conditions(obj);
    set_condition(&mut conditions, type_, status, reason, message);
    Value::Array(conditions)
}

/// A copy of the object's `status.conditions`.
pub fn conditions(obj: &Value) -> Vec<Value> {
    obj.pointer("/status/conditions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

/// Sets the condition of type `type_` in `conditions` (others kept); its lastTransitionTime
/// changes only when its status does.
pub fn set_condition(
    conditions: &mut Vec<Value>,
    type_: &str,
    status: &str,
    reason: &str,
    message: &str,
) {
    let old = conditions.iter().position(|c| c["type"] == type_);
    let since = old
        .map(|i| &conditions[i])
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
    match old {
        Some(i) => conditions[i] = new,
        None => conditions.push(new),
    }
}
