//! Certificate signing requests and the certificates a signer issues for them, as kube-apiserver
//! reads `spec.request` (`ParseCSR` and `CheckSignature`) and kube-controller-manager's
//! `csrsigning` controller issues a certificate (`pkg/controller/certificates/authority`).
//!
//! The certificate is written here as DER by hand rather than through rcgen, whose subject is a
//! map (one value per attribute type): a client certificate's groups are several `O` values,
//! and kube copies the requested subject whole. So the issued certificate carries the request's
//! subject and public key byte for byte; everything else comes from the CSR object, as in kube:
//! key usages from `spec.usages`, the lifetime from the signer (capped by
//! `spec.expirationSeconds`), and of the requested extensions only the subject alternative names
//! (DNS names, email addresses, IP addresses and URIs).

use std::path::{Path, PathBuf};
use std::time::Duration;

use rcgen::{KeyPair, SigningKey};

use super::der::{contents, element, whole_name};
use x509_parser::prelude::{FromDer, GeneralName, ParsedExtension, X509Certificate};

#[derive(Debug, thiserror::Error)]
pub enum SignerError {
    #[error("reading {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}: {why}")]
    Authority { path: PathBuf, why: String },
    /// kube's `unrecognized usage values: %q`.
    #[error("unrecognized usage values: {0}")]
    Usage(String),
    #[error("the signer has expired: NotAfter={0}")]
    Expired(String),
    #[error("signing: {0}")]
    Sign(String),
}

pub type Result<T, E = SignerError> = std::result::Result<T, E>;

/// The one PEM block of `spec.request`, decoded and with its signature checked: kube's
/// `ParseCSR` followed by `CheckSignature`. The error is the message kube's validation puts
/// after `spec.request: Invalid value: ...:`.
pub fn parse_request(pem_bytes: &[u8]) -> std::result::Result<Request, String> {
    const WRONG_BLOCK: &str = "PEM block type must be CERTIFICATE REQUEST";
    let der = match pem::parse(pem_bytes) {
        Ok(block) if block.tag() == "CERTIFICATE REQUEST" => block.into_contents(),
        _ => return Err(WRONG_BLOCK.into()),
    };
    const MALFORMED: &str = "x509: malformed certificate request";
    // The subject and the public key, as exact DER elements read by their own headers: these
    // bytes go into the certificate as they are, so they must be whole elements (x509-parser
    // stops at the first entry of a Name it cannot read and its `raw` then ends early, under a
    // header that still claims the whole length).
    let (subject, spki) = strict_parts(&der).ok_or(MALFORMED)?;
    let req = Request { der, subject, spki };
    {
        let csr = req.parsed()?;
        let info = &csr.certification_request_info;
        if info.subject.as_raw() != req.subject.as_slice()
            || info.subject_pki.raw != req.spki.as_slice()
            || !whole_name(&info.subject)
        {
            return Err(MALFORMED.into());
        }
        // Go reads only 4- and 16-byte IP addresses.
        for ext in csr.requested_extensions().into_iter().flatten() {
            if let ParsedExtension::SubjectAlternativeName(san) = ext {
                for name in &san.general_names {
                    if let GeneralName::IPAddress(b) = name {
                        if b.len() != 4 && b.len() != 16 {
                            return Err(format!(
                                "x509: cannot parse IP address of length {}",
                                b.len()
                            ));
                        }
                    }
                }
            }
        }
        csr.verify_signature().map_err(|_| {
            match csr.certification_request_info.subject_pki.parsed() {
                Ok(x509_parser::public_key::PublicKey::RSA(_)) => "crypto/rsa: verification error",
                Ok(x509_parser::public_key::PublicKey::EC(_)) => "x509: ECDSA verification failure",
                _ => "x509: signature verification failure",
            }
            .to_owned()
        })?;
    }
    Ok(req)
}

/// A parsed, signature-checked certification request (PKCS #10).
#[derive(Debug, Clone)]
pub struct Request {
    der: Vec<u8>,
    /// The subject Name and the SubjectPublicKeyInfo, each one whole DER element.
    subject: Vec<u8>,
    spki: Vec<u8>,
}

/// The subject and SubjectPublicKeyInfo elements of a CertificationRequest, read strictly:
/// `SEQUENCE { SEQUENCE { INTEGER, Name, SPKI, [0] ... }, ... }` with nothing after it.
fn strict_parts(der: &[u8]) -> Option<(Vec<u8>, Vec<u8>)> {
    let (csr, rest) = element(der)?;
    if !rest.is_empty() || csr[0] != 0x30 {
        return None;
    }
    let (info, _) = element(contents(csr))?;
    if info[0] != 0x30 {
        return None;
    }
    let (version, rest) = element(contents(info))?;
    let (subject, rest) = element(rest)?;
    let (spki, _) = element(rest)?;
    // SubjectPublicKeyInfo: exactly an AlgorithmIdentifier and a BIT STRING.
    let (alg, key) = element(contents(spki))?;
    let (bits, after) = element(key)?;
    let shaped = alg[0] == 0x30 && bits[0] == 0x03 && after.is_empty();
    (version[0] == 0x02 && subject[0] == 0x30 && spki[0] == 0x30 && shaped)
        .then(|| (subject.to_vec(), spki.to_vec()))
}

type Csr<'a> = x509_parser::certification_request::X509CertificationRequest<'a>;

/// The subject alternative names kube's signer copies.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct AltNames {
    pub dns: Vec<String>,
    pub email: Vec<String>,
    pub ip: Vec<Vec<u8>>,
    pub uri: Vec<String>,
}

impl AltNames {
    fn is_empty(&self) -> bool {
        self.dns.is_empty() && self.email.is_empty() && self.ip.is_empty() && self.uri.is_empty()
    }
}

impl Request {
    fn parsed(&self) -> std::result::Result<Csr<'_>, String> {
        match Csr::from_der(&self.der) {
            Ok(([], csr)) => Ok(csr),
            Ok(_) => Err("x509: trailing data after certificate request".into()),
            Err(_) => Err("x509: malformed certificate request".into()),
        }
    }

    /// The subject's organizations (a client certificate's groups), in order.
    pub fn organizations(&self) -> Vec<String> {
        self.parsed()
            .map(|c| {
                c.certification_request_info
                    .subject
                    .iter_organization()
                    .filter_map(|a| a.as_str().ok().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The subject's common name (the last one, as Go's `pkix.Name` keeps).
    pub fn common_name(&self) -> Option<String> {
        let csr = self.parsed().ok()?;
        let cn = csr
            .certification_request_info
            .subject
            .iter_common_name()
            .filter_map(|a| a.as_str().ok().map(str::to_owned))
            .last();
        cn
    }

    /// The requested subject alternative names kube copies into the certificate.
    pub fn alt_names(&self) -> AltNames {
        let mut out = AltNames::default();
        let Ok(csr) = self.parsed() else {
            return out;
        };
        let Some(exts) = csr.requested_extensions() else {
            return out;
        };
        for ext in exts {
            let ParsedExtension::SubjectAlternativeName(san) = ext else {
                continue;
            };
            for name in &san.general_names {
                match name {
                    GeneralName::DNSName(s) => out.dns.push((*s).to_owned()),
                    GeneralName::RFC822Name(s) => out.email.push((*s).to_owned()),
                    GeneralName::URI(s) => out.uri.push((*s).to_owned()),
                    GeneralName::IPAddress(b) => out.ip.push(b.to_vec()),
                    _ => {}
                }
            }
        }
        out
    }
}

/// kube's key usages (`certificates.KeyUsage`): the bit of the X.509 key usage extension, or the
/// extended key usage, each names. `None`: not a usage kube knows.
fn usage(name: &str) -> Option<Usage> {
    use Usage::{Ext, Key};
    Some(match name {
        "signing" | "digital signature" => Key(0),
        "content commitment" => Key(1),
        "key encipherment" => Key(2),
        "data encipherment" => Key(3),
        "key agreement" => Key(4),
        "cert sign" => Key(5),
        "crl sign" => Key(6),
        "encipher only" => Key(7),
        "decipher only" => Key(8),
        "any" => Ext(0),
        "server auth" => Ext(1),
        "client auth" => Ext(2),
        "code signing" => Ext(3),
        "email protection" | "s/mime" => Ext(4),
        "ipsec end system" => Ext(5),
        "ipsec tunnel" => Ext(6),
        "ipsec user" => Ext(7),
        "timestamping" => Ext(8),
        "ocsp signing" => Ext(9),
        "microsoft sgc" => Ext(10),
        "netscape sgc" => Ext(11),
        _ => return None,
    })
}

#[derive(Clone, Copy)]
enum Usage {
    /// A bit of the key usage extension (0 = digitalSignature).
    Key(u8),
    /// Go's `x509.ExtKeyUsage` order, which the extension is sorted by.
    Ext(u8),
}

/// The extended key usages' OIDs (DER contents), in Go's `x509.ExtKeyUsage` order.
const EXT_KEY_USAGE_OIDS: [&[u8]; 12] = [
    &[0x55, 0x1d, 0x25, 0x00],
    &[0x2b, 0x06, 0x01, 0x05, 0x05, 0x07, 0x03, 0x01],
    &[0x2b, 0x06, 0x01, 0x05, 0x05, 0x07, 0x03, 0x02],
    &[0x2b, 0x06, 0x01, 0x05, 0x05, 0x07, 0x03, 0x03],
    &[0x2b, 0x06, 0x01, 0x05, 0x05, 0x07, 0x03, 0x04],
    &[0x2b, 0x06, 0x01, 0x05, 0x05, 0x07, 0x03, 0x05],
    &[0x2b, 0x06, 0x01, 0x05, 0x05, 0x07, 0x03, 0x06],
    &[0x2b, 0x06, 0x01, 0x05, 0x05, 0x07, 0x03, 0x07],
    &[0x2b, 0x06, 0x01, 0x05, 0x05, 0x07, 0x03, 0x08],
    &[0x2b, 0x06, 0x01, 0x05, 0x05, 0x07, 0x03, 0x09],
    &[0x2b, 0x06, 0x01, 0x04, 0x01, 0x82, 0x37, 0x0a, 0x03, 0x03],
    &[0x60, 0x86, 0x48, 0x01, 0x86, 0xf8, 0x42, 0x04, 0x01],
];
const OID_KEY_USAGE: &[u8] = &[0x55, 0x1d, 0x0f];
const OID_EXT_KEY_USAGE: &[u8] = &[0x55, 0x1d, 0x25];
const OID_BASIC_CONSTRAINTS: &[u8] = &[0x55, 0x1d, 0x13];
const OID_AUTHORITY_KEY_ID: &[u8] = &[0x55, 0x1d, 0x23];
const OID_SUBJECT_ALT_NAME: &[u8] = &[0x55, 0x1d, 0x11];

/// The key usage bits and extended key usages `usages` name (kube's `keyUsagesFromStrings`).
fn key_usages(usages: &[String]) -> Result<(u16, Vec<u8>)> {
    let mut bits = 0u16;
    let mut ext = Vec::new();
    let mut unknown = Vec::new();
    for u in usages {
        match usage(u) {
            Some(Usage::Key(b)) => bits |= 1 << b,
            Some(Usage::Ext(e)) => ext.push(e),
            None => unknown.push(u.clone()),
        }
    }
    if !unknown.is_empty() {
        // Go's %q of a []string: ["a" "b"].
        let quoted: Vec<String> = unknown.iter().map(|u| format!("{u:?}")).collect();
        return Err(SignerError::Usage(format!("[{}]", quoted.join(" "))));
    }
    ext.sort_unstable();
    ext.dedup();
    Ok((bits, ext))
}

/// A CA that signs: the host's generated CA (`DATA/pki/ca.{crt,key}`).
pub struct Authority {
    key: KeyPair,
    /// The CA certificate's subject, the issued certificates' issuer (DER).
    subject: Vec<u8>,
    /// The CA's subject key identifier (the issued certificates' authority key identifier).
    key_id: Option<Vec<u8>>,
    /// The CA certificate's own end of validity (Unix seconds): nothing issued outlives it.
    not_after: i64,
    /// The signature AlgorithmIdentifier of the CA's key (DER).
    algorithm: &'static [u8],
    /// The CA's SubjectPublicKeyInfo (DER), to check each signature it makes.
    ca_spki: Vec<u8>,
}

impl std::fmt::Debug for Authority {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Authority")
            .field("not_after", &self.not_after)
            .finish_non_exhaustive()
    }
}

/// An issued certificate's request: what the CSR object says besides the request itself.
pub struct Issue<'a> {
    pub request: &'a Request,
    pub usages: &'a [String],
    /// The signer's lifetime for this certificate (kube's `duration(certTTL, expirationSeconds)`).
    pub ttl: Duration,
    /// Now, as Unix seconds.
    pub now: i64,
}

/// kube's signing policy: backdate 5 minutes; a lifetime of 8 hours or more also ends 5 minutes
/// early (so it is as long as asked, counted from the backdated start).
const BACKDATE: i64 = 5 * 60;
const SHORT: i64 = 8 * 3600;

impl Authority {
    /// Load the CA certificate and key (PEM).
    pub fn load(cert: &Path, key: &Path) -> Result<Self> {
        let read = |path: &Path| {
            std::fs::read_to_string(path).map_err(|source| SignerError::Read {
                path: path.to_owned(),
                source,
            })
        };
        let bad = |path: &Path, why: String| SignerError::Authority {
            path: path.to_owned(),
            why,
        };
        let key_pem = read(key)?;
        let key_pair = KeyPair::from_pem(&key_pem).map_err(|e| bad(key, e.to_string()))?;
        let cert_pem = read(cert)?;
        let block = pem::parse(cert_pem.as_bytes()).map_err(|e| bad(cert, e.to_string()))?;
        let (_, ca) =
            X509Certificate::from_der(block.contents()).map_err(|e| bad(cert, e.to_string()))?;
        let key_id = ca
            .extensions()
            .iter()
            .find_map(|e| match e.parsed_extension() {
                ParsedExtension::SubjectKeyIdentifier(id) => Some(id.0.to_vec()),
                _ => None,
            });
        let algorithm = algorithm_identifier(&key_pair)
            .ok_or_else(|| bad(key, "a key of an algorithm this signer does not use".into()))?;
        // The key must be the certificate's (kube refuses a mismatched pair at start).
        if key_pair.public_key_raw() != ca.public_key().subject_public_key.data.as_ref() {
            return Err(bad(key, format!("not the key of {}", cert.display())));
        }
        Ok(Self {
            ca_spki: ca.tbs_certificate.subject_pki.raw.to_vec(),
            subject: ca.tbs_certificate.subject.as_raw().to_vec(),
            key_id,
            not_after: ca.validity().not_after.timestamp(),
            algorithm,
            key: key_pair,
        })
    }

    /// Issue a certificate for `issue` (PEM, the certificate alone, as kube's signer writes
    /// `status.certificate`).
    pub fn sign(&self, issue: &Issue<'_>) -> Result<String> {
        let (bits, ext) = key_usages(issue.usages)?;
        let csr = issue.request.parsed().map_err(SignerError::Sign)?;
        let info = &csr.certification_request_info;
        let ttl = i64::try_from(issue.ttl.as_secs()).unwrap_or(i64::MAX / 2);
        let now = issue.now;
        if now > self.not_after {
            return Err(SignerError::Expired(rfc3339(self.not_after)));
        }
        let not_before = now - BACKDATE;
        let mut not_after = if ttl < SHORT {
            now.saturating_add(ttl)
        } else {
            now.saturating_add(ttl) - BACKDATE
        };
        not_after = not_after.min(self.not_after);

        let mut extensions = Vec::new();
        if bits != 0 {
            extensions.push(extension(OID_KEY_USAGE, true, &bit_string_of_flags(bits)));
        }
        if !ext.is_empty() {
            let oids: Vec<u8> = ext
                .iter()
                .flat_map(|e| tlv(0x06, EXT_KEY_USAGE_OIDS[usize::from(*e)]))
                .collect();
            extensions.push(extension(OID_EXT_KEY_USAGE, false, &tlv(0x30, &oids)));
        }
        // Basic constraints: not a CA.
        extensions.push(extension(OID_BASIC_CONSTRAINTS, true, &tlv(0x30, &[])));
        if let Some(id) = &self.key_id {
            extensions.push(extension(
                OID_AUTHORITY_KEY_ID,
                false,
                &tlv(0x30, &tlv(0x80, id)),
            ));
        }
        let alt = issue.request.alt_names();
        if !alt.is_empty() {
            // Go's order: DNS names, email addresses, IP addresses, URIs.
            let mut names = Vec::new();
            for d in &alt.dns {
                names.extend(tlv(0x82, d.as_bytes()));
            }
            for e in &alt.email {
                names.extend(tlv(0x81, e.as_bytes()));
            }
            for ip in &alt.ip {
                names.extend(tlv(0x87, ip));
            }
            for u in &alt.uri {
                names.extend(tlv(0x86, u.as_bytes()));
            }
            // Critical when the subject is empty (RFC 5280 4.2.1.6), as Go marks it.
            let empty_subject = info.subject.iter().next().is_none();
            extensions.push(extension(
                OID_SUBJECT_ALT_NAME,
                empty_subject,
                &tlv(0x30, &names),
            ));
        }

        let mut tbs = Vec::new();
        tbs.extend(tlv(0xa0, &tlv(0x02, &[2])));
        tbs.extend(tlv(0x02, &serial()?));
        tbs.extend_from_slice(self.algorithm);
        tbs.extend_from_slice(&self.subject);
        let validity = [time(not_before), time(not_after)].concat();
        tbs.extend(tlv(0x30, &validity));
        tbs.extend_from_slice(&issue.request.subject);
        tbs.extend_from_slice(&issue.request.spki);
        tbs.extend(tlv(0xa3, &tlv(0x30, &extensions.concat())));
        let tbs = tlv(0x30, &tbs);

        let signature = self
            .key
            .sign(&tbs)
            .map_err(|e| SignerError::Sign(e.to_string()))?;
        let mut bits = vec![0u8];
        bits.extend(signature);
        let cert = tlv(
            0x30,
            &[tbs, self.algorithm.to_vec(), tlv(0x03, &bits)].concat(),
        );
        // What was written reads back as written: the request's subject and key, whole.
        let ca_key = x509_parser::x509::SubjectPublicKeyInfo::from_der(&self.ca_spki)
            .ok()
            .map(|(_, k)| k);
        let read = X509Certificate::from_der(&cert).ok().filter(|(rest, c)| {
            rest.is_empty()
                && c.tbs_certificate.subject.as_raw() == issue.request.subject.as_slice()
                && c.tbs_certificate.subject_pki.raw == issue.request.spki.as_slice()
                && c.verify_signature(ca_key.as_ref()).is_ok()
        });
        let der = rustls::pki_types::CertificateDer::from(cert.as_slice());
        if read.is_none() || webpki::EndEntityCert::try_from(&der).is_err() {
            return Err(SignerError::Sign(
                "the certificate does not read back".into(),
            ));
        }
        Ok(pem::encode(&pem::Pem::new("CERTIFICATE", cert)))
    }
}

/// The signature AlgorithmIdentifier (DER) for what `key` signs with.
fn algorithm_identifier(key: &KeyPair) -> Option<&'static [u8]> {
    let alg = key.algorithm();
    if alg == &rcgen::PKCS_ECDSA_P256_SHA256 {
        // ecdsa-with-SHA256
        Some(&[
            0x30, 0x0a, 0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x04, 0x03, 0x02,
        ])
    } else if alg == &rcgen::PKCS_ECDSA_P384_SHA384 {
        // ecdsa-with-SHA384
        Some(&[
            0x30, 0x0a, 0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x04, 0x03, 0x03,
        ])
    } else if alg == &rcgen::PKCS_ED25519 {
        Some(&[0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70])
    } else if alg == &rcgen::PKCS_RSA_SHA256 {
        // sha256WithRSAEncryption, NULL parameters
        Some(&[
            0x30, 0x0d, 0x06, 0x09, 0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x0b, 0x05,
            0x00,
        ])
    } else {
        None
    }
}

/// A DER TLV.
fn tlv(tag: u8, contents: &[u8]) -> Vec<u8> {
    let mut out = vec![tag];
    let n = contents.len();
    if n < 0x80 {
        out.push(n as u8);
    } else {
        let len = n.to_be_bytes();
        let skip = len.iter().take_while(|b| **b == 0).count();
        out.push(0x80 | (len.len() - skip) as u8);
        out.extend_from_slice(&len[skip..]);
    }
    out.extend_from_slice(contents);
    out
}

fn extension(oid: &[u8], critical: bool, value: &[u8]) -> Vec<u8> {
    let mut body = tlv(0x06, oid);
    if critical {
        body.extend(tlv(0x01, &[0xff]));
    }
    body.extend(tlv(0x04, value));
    tlv(0x30, &body)
}

/// The key usage BIT STRING: bit 0 (digitalSignature) is the first byte's high bit; trailing
/// zero bits are left out, as DER wants.
fn bit_string_of_flags(bits: u16) -> Vec<u8> {
    let n = 16 - bits.leading_zeros() as usize; // bits used
    let bytes = n.div_ceil(8);
    let mut out = vec![(bytes * 8 - n) as u8];
    for i in 0..bytes {
        let mut b = 0u8;
        for j in 0..8 {
            let bit = i * 8 + j;
            if bit < 16 && bits & (1 << bit) != 0 {
                b |= 0x80 >> j;
            }
        }
        out.push(b);
    }
    tlv(0x03, &out)
}

/// A random positive 128-bit serial number (kube: `rand.Int(rand.Reader, 2^128)`), as the
/// contents of a DER INTEGER.
fn serial() -> Result<Vec<u8>> {
    use ring::rand::SecureRandom;
    let mut raw = [0u8; 16];
    ring::rand::SystemRandom::new()
        .fill(&mut raw)
        .map_err(|_| SignerError::Sign("no randomness for a serial number".into()))?;
    raw[0] &= 0x7f;
    raw[0] |= 0x01 << 6; // never zero, never a leading zero byte
    Ok(raw.to_vec())
}

/// An X.509 time: UTCTime through 2049, GeneralizedTime after (RFC 5280 4.1.2.5).
fn time(unix: i64) -> Vec<u8> {
    let t = chrono::DateTime::from_timestamp(unix, 0).unwrap_or_default();
    use chrono::Datelike;
    if (1950..2050).contains(&t.year()) {
        tlv(0x17, t.format("%y%m%d%H%M%SZ").to_string().as_bytes())
    } else {
        tlv(0x18, t.format("%Y%m%d%H%M%SZ").to_string().as_bytes())
    }
}

fn rfc3339(unix: i64) -> String {
    chrono::DateTime::from_timestamp(unix, 0)
        .unwrap_or_default()
        .format("%Y-%m-%d %H:%M:%S +0000 UTC")
        .to_string()
}

/// A certification request (PEM) for `key`, of `subject_der` (a Name) and asking for these
/// alternative names (GeneralNames' DER, may be empty), signed with the key.
fn request_pem(key: &KeyPair, subject_der: &[u8], names: &[u8]) -> Result<String> {
    let mut attrs = Vec::new();
    if !names.is_empty() {
        let ext = extension(OID_SUBJECT_ALT_NAME, false, &tlv(0x30, names));
        // extensionRequest attribute: OID 1.2.840.113549.1.9.14, SET { SEQ { ext } }
        let attr = [
            tlv(
                0x06,
                &[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x09, 0x0e],
            ),
            tlv(0x31, &tlv(0x30, &ext)),
        ]
        .concat();
        attrs = tlv(0x30, &attr);
    }
    let info = tlv(
        0x30,
        &[
            tlv(0x02, &[0]),
            subject_der.to_vec(),
            rcgen::PublicKeyData::subject_public_key_info(key),
            tlv(0xa0, &attrs),
        ]
        .concat(),
    );
    let sig = key
        .sign(&info)
        .map_err(|e| SignerError::Sign(e.to_string()))?;
    let mut bits = vec![0u8];
    bits.extend(sig);
    let alg = algorithm_identifier(key).ok_or_else(|| {
        SignerError::Sign("a key of an algorithm this signer does not use".into())
    })?;
    let der = tlv(0x30, &[info, alg.to_vec(), tlv(0x03, &bits)].concat());
    Ok(pem::encode(&pem::Pem::new("CERTIFICATE REQUEST", der)))
}

/// A Name of `orgs` (each an `O`) and then `cn` (the `CN`), as kubeadm writes a client
/// certificate's subject: the user and groups kube's x509 authenticator reads.
pub fn client_subject(cn: &str, orgs: &[String]) -> Vec<u8> {
    const CN: &[u8] = &[0x55, 0x04, 0x03];
    const O: &[u8] = &[0x55, 0x04, 0x0a];
    let rdn = |oid: &[u8], v: &str| {
        tlv(
            0x31,
            &tlv(0x30, &[tlv(0x06, oid), tlv(0x0c, v.as_bytes())].concat()),
        )
    };
    let mut rdns: Vec<u8> = orgs.iter().flat_map(|o| rdn(O, o)).collect();
    rdns.extend(rdn(CN, cn));
    tlv(0x30, &rdns)
}

/// A request for a client certificate of `key` (signed by it), read back as [`parse_request`]
/// reads any: `turtles kubeconfig --client-cert` issues from it without a CSR object.
pub fn client_request(key: &KeyPair, cn: &str, orgs: &[String]) -> Result<Request> {
    let pem = request_pem(key, &client_subject(cn, orgs), &[])?;
    parse_request(pem.as_bytes()).map_err(SignerError::Sign)
}

/// Requests for tests, written as DER by hand (rcgen's subject keeps one value per type).
#[cfg(test)]
pub(crate) mod testing {
    use super::*;

    /// A CSR with CN `alice` and two organizations, written with openssl-free DER: rcgen keeps
    /// one value per attribute type, so the subject is built by hand.
    pub fn request(key: &KeyPair, subject_der: &[u8], san_dns: &[&str]) -> String {
        let names: Vec<u8> = san_dns
            .iter()
            .flat_map(|d| tlv(0x82, d.as_bytes()))
            .collect();
        request_names(key, subject_der, &names)
    }

    /// A CSR asking for these alternative names (GeneralNames' DER).
    pub fn request_names(key: &KeyPair, subject_der: &[u8], names: &[u8]) -> String {
        request_pem(key, subject_der, names).unwrap()
    }

    pub fn name(attrs: &[(&[u8], &str)]) -> Vec<u8> {
        let rdns: Vec<u8> = attrs
            .iter()
            .flat_map(|(oid, v)| {
                tlv(
                    0x31,
                    &tlv(0x30, &[tlv(0x06, oid), tlv(0x0c, v.as_bytes())].concat()),
                )
            })
            .collect();
        tlv(0x30, &rdns)
    }
    pub const CN: &[u8] = &[0x55, 0x04, 0x03];
    pub const O: &[u8] = &[0x55, 0x04, 0x0a];
}

#[cfg(test)]
mod tests {
    use super::testing::{name, request, CN, O};
    use super::*;
    use rcgen::{CertificateParams, DistinguishedName, DnType};

    fn ca(dir: &Path) -> (PathBuf, PathBuf) {
        let key = KeyPair::generate().unwrap();
        let mut p = CertificateParams::new(Vec::<String>::new()).unwrap();
        let mut dn = DistinguishedName::new();
        dn.push(DnType::CommonName, "test-ca");
        p.distinguished_name = dn;
        p.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        let cert = p.self_signed(&key).unwrap();
        let (c, k) = (dir.join("ca.crt"), dir.join("ca.key"));
        std::fs::write(&c, cert.pem()).unwrap();
        std::fs::write(&k, key.serialize_pem()).unwrap();
        (c, k)
    }

    #[test]
    fn a_request_is_read_and_its_signature_checked() {
        let key = KeyPair::generate().unwrap();
        let subject = name(&[(O, "dev"), (O, "ops"), (CN, "alice")]);
        let pem = request(&key, &subject, &["a.example"]);
        let req = parse_request(pem.as_bytes()).unwrap();
        assert_eq!(req.organizations(), ["dev", "ops"]);
        assert_eq!(req.common_name().as_deref(), Some("alice"));
        assert_eq!(req.alt_names().dns, ["a.example"]);

        // Not PEM, or another block type.
        assert_eq!(
            parse_request(b"hello").unwrap_err(),
            "PEM block type must be CERTIFICATE REQUEST"
        );
        let cert = pem.replace("CERTIFICATE REQUEST", "CERTIFICATE");
        assert_eq!(
            parse_request(cert.as_bytes()).unwrap_err(),
            "PEM block type must be CERTIFICATE REQUEST"
        );
        // A signature over other bytes: the subject changed after signing.
        let block = pem::parse(pem.as_bytes()).unwrap();
        let mut der = block.contents().to_vec();
        let at = der.windows(5).position(|w| w == b"alice").unwrap();
        der[at] = b'b';
        let forged = pem::encode(&pem::Pem::new("CERTIFICATE REQUEST", der));
        assert_eq!(
            parse_request(forged.as_bytes()).unwrap_err(),
            "x509: ECDSA verification failure"
        );
        // Garbage inside a well-formed PEM block.
        let junk = pem::encode(&pem::Pem::new("CERTIFICATE REQUEST", vec![1, 2, 3]));
        assert_eq!(
            parse_request(junk.as_bytes()).unwrap_err(),
            "x509: malformed certificate request"
        );
    }

    #[test]
    fn an_issued_certificate_carries_the_subject_key_usages_and_names_and_verifies() {
        let dir = std::env::temp_dir().join(format!("turtles-signer-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&dir).unwrap();
        let (c, k) = ca(&dir);
        let authority = Authority::load(&c, &k).unwrap();
        let key = KeyPair::generate().unwrap();
        let subject = name(&[(O, "dev"), (O, "ops"), (CN, "alice")]);
        let req = parse_request(request(&key, &subject, &["a.example"]).as_bytes()).unwrap();
        let now = 1_800_000_000;
        let usages = vec!["client auth".to_owned(), "digital signature".to_owned()];
        let pem = authority
            .sign(&Issue {
                request: &req,
                usages: &usages,
                ttl: Duration::from_secs(3600),
                now,
            })
            .unwrap();
        let block = pem::parse(pem.as_bytes()).unwrap();
        assert_eq!(block.tag(), "CERTIFICATE");
        let (rest, cert) = X509Certificate::from_der(block.contents()).unwrap();
        assert!(rest.is_empty());
        assert_eq!(cert.tbs_certificate.subject.as_raw(), subject.as_slice());
        assert_eq!(cert.version(), x509_parser::x509::X509Version::V3);
        // Backdated 5 minutes; an hour (< 8 h) ends an hour from now.
        assert_eq!(cert.validity().not_before.timestamp(), now - 300);
        assert_eq!(cert.validity().not_after.timestamp(), now + 3600);
        let ku = cert.key_usage().unwrap().unwrap().value;
        assert!(ku.digital_signature() && !ku.key_encipherment());
        let eku = cert.extended_key_usage().unwrap().unwrap().value;
        assert!(eku.client_auth && !eku.server_auth);
        let bc = cert.basic_constraints().unwrap().unwrap().value;
        assert!(!bc.ca);
        let san = cert.subject_alternative_name().unwrap().unwrap().value;
        assert_eq!(san.general_names, [GeneralName::DNSName("a.example")]);
        // Signed by the CA.
        let ca_pem = std::fs::read_to_string(&c).unwrap();
        let ca_block = pem::parse(ca_pem.as_bytes()).unwrap();
        let (_, ca_cert) = X509Certificate::from_der(ca_block.contents()).unwrap();
        cert.verify_signature(Some(ca_cert.public_key())).unwrap();
        assert_eq!(cert.issuer(), ca_cert.subject());

        // A year (>= 8 h) ends 5 minutes early; never past the CA's own end.
        let year = Duration::from_secs(365 * 24 * 3600);
        let pem = authority
            .sign(&Issue {
                request: &req,
                usages: &usages,
                ttl: year,
                now,
            })
            .unwrap();
        let block = pem::parse(pem.as_bytes()).unwrap();
        let (_, cert) = X509Certificate::from_der(block.contents()).unwrap();
        assert_eq!(
            cert.validity().not_after.timestamp(),
            now + 365 * 24 * 3600 - 300
        );
        let late = authority.not_after - 60;
        let pem = authority
            .sign(&Issue {
                request: &req,
                usages: &usages,
                ttl: year,
                now: late,
            })
            .unwrap();
        let block = pem::parse(pem.as_bytes()).unwrap();
        let (_, cert) = X509Certificate::from_der(block.contents()).unwrap();
        assert_eq!(cert.validity().not_after.timestamp(), authority.not_after);

        // A key that is not the certificate's is refused when loaded.
        let stray = dir.join("stray.key");
        std::fs::write(&stray, KeyPair::generate().unwrap().serialize_pem()).unwrap();
        let err = Authority::load(&c, &stray).unwrap_err().to_string();
        assert!(err.contains("not the key of"), "{err}");

        // Unknown usages are refused with kube's message.
        let bad = vec!["client auth".to_owned(), "flying".to_owned()];
        let err = authority
            .sign(&Issue {
                request: &req,
                usages: &bad,
                ttl: year,
                now,
            })
            .unwrap_err();
        assert_eq!(err.to_string(), "unrecognized usage values: [\"flying\"]");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_request_whose_subject_or_names_do_not_read_whole_is_refused() {
        let key = KeyPair::generate().unwrap();
        // CN=mallory, then an empty entry (x509-parser stops there), then more entries whose
        // bytes would otherwise have been copied under the header's length.
        let cn = tlv(
            0x31,
            &tlv(0x30, &[tlv(0x06, CN), tlv(0x0c, b"mallory")].concat()),
        );
        let masters = tlv(
            0x31,
            &tlv(0x30, &[tlv(0x06, O), tlv(0x0c, b"system:masters")].concat()),
        );
        let subject = tlv(0x30, &[cn.clone(), tlv(0x31, &[]), masters].concat());
        let pem = testing::request(&key, &subject, &[]);
        assert_eq!(
            parse_request(pem.as_bytes()).unwrap_err(),
            "x509: malformed certificate request"
        );
        // An IP address of 5 bytes.
        let pem = testing::request_names(&key, &name(&[(CN, "a")]), &tlv(0x87, &[1, 2, 3, 4, 5]));
        assert_eq!(
            parse_request(pem.as_bytes()).unwrap_err(),
            "x509: cannot parse IP address of length 5"
        );
        // Trailing bytes after the request.
        let pem = testing::request(&key, &name(&[(CN, "a")]), &[]);
        let mut der = pem::parse(pem.as_bytes()).unwrap().into_contents();
        der.push(0);
        let trailing = pem::encode(&pem::Pem::new("CERTIFICATE REQUEST", der));
        assert_eq!(
            parse_request(trailing.as_bytes()).unwrap_err(),
            "x509: malformed certificate request"
        );
        // The strict reader on its own: lengths past the end, lengths not in their shortest
        // form, and a whole element.
        assert!(element(&[0x30, 0x05, 0x00]).is_none());
        assert!(element(&[0x30, 0x84, 0xff, 0xff, 0xff, 0xff]).is_none());
        assert!(element(&[0x04, 0x81, 0x01, 0x00]).is_none());
        assert!(element(&[0x04, 0x82, 0x00, 0x01, 0x00]).is_none());
        assert!(element(&[0x04, 0x80]).is_none());
        // A subject whose CN value's length is in the long form though short: refused.
        let long_cn = tlv(
            0x30,
            &tlv(
                0x31,
                &tlv(
                    0x30,
                    &[tlv(0x06, CN), vec![0x0c, 0x81, 0x01, b'a']].concat(),
                ),
            ),
        );
        let pem = testing::request(&key, &long_cn, &[]);
        assert_eq!(
            parse_request(pem.as_bytes()).unwrap_err(),
            "x509: malformed certificate request"
        );
        assert_eq!(
            element(&[0x30, 0x00, 0x01]),
            Some((&[0x30, 0x00][..], &[0x01][..]))
        );
    }

    #[test]
    fn der_helpers_encode_lengths_and_bits_minimally() {
        assert_eq!(tlv(0x04, &[1, 2]), [0x04, 2, 1, 2]);
        let long = tlv(0x04, &[0; 200]);
        assert_eq!(&long[..3], &[0x04, 0x81, 200]);
        let longer = tlv(0x04, &[0; 300]);
        assert_eq!(&longer[..4], &[0x04, 0x82, 0x01, 0x2c]);
        // digitalSignature + keyEncipherment: 0xa0 with 5 unused bits.
        assert_eq!(bit_string_of_flags(0b101), [0x03, 0x02, 0x05, 0xa0]);
        // decipherOnly (bit 8) spills into a second byte.
        assert_eq!(bit_string_of_flags(1 << 8), [0x03, 0x03, 0x07, 0x00, 0x80]);
        assert_eq!(time(0), tlv(0x17, b"700101000000Z"));
        assert_eq!(time(2_600_000_000), tlv(0x18, b"20520522141320Z"));
    }
}
