//! Private keys of the types cert-manager supports: RSA (2048-8192 bits), ECDSA P-256 and P-384,
//! Ed25519; read from PKCS#1, SEC1 or PKCS#8 PEM, written as PKCS#1/SEC1 or PKCS#8, and made to
//! sign X.509 structures through the `x509-cert` builders (which only need the traits below).

use der::asn1::BitString;
use der::{Any, Decode};
use p256::pkcs8::{DecodePrivateKey, DecodePublicKey, EncodePrivateKey, EncodePublicKey};
use rsa::pkcs1::{DecodeRsaPrivateKey, EncodeRsaPrivateKey};
use rsa::signature::{Keypair, SignatureEncoding, Signer, Verifier};
use sha2::Digest;
use spki::{
    AlgorithmIdentifierOwned, DynSignatureAlgorithmIdentifier, ObjectIdentifier,
    SignatureBitStringEncoding, SubjectPublicKeyInfoOwned,
};

use crate::{ctx, Error, Result};

const SHA256_WITH_RSA: ObjectIdentifier = const_oid::db::rfc5912::SHA_256_WITH_RSA_ENCRYPTION;
const SHA384_WITH_RSA: ObjectIdentifier = const_oid::db::rfc5912::SHA_384_WITH_RSA_ENCRYPTION;
const SHA512_WITH_RSA: ObjectIdentifier = const_oid::db::rfc5912::SHA_512_WITH_RSA_ENCRYPTION;
const ECDSA_SHA256: ObjectIdentifier = const_oid::db::rfc5912::ECDSA_WITH_SHA_256;
const ECDSA_SHA384: ObjectIdentifier = const_oid::db::rfc5912::ECDSA_WITH_SHA_384;
const ECDSA_SHA512: ObjectIdentifier = const_oid::db::rfc5912::ECDSA_WITH_SHA_512;
const ED25519: ObjectIdentifier = const_oid::db::rfc8410::ID_ED_25519;

/// The key a Certificate asks for (`spec.privateKey.algorithm` and `size`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyAlgorithm {
    /// RSA of this many bits.
    Rsa(usize),
    EcdsaP256,
    EcdsaP384,
    Ed25519,
}

impl KeyAlgorithm {
    /// From cert-manager's `algorithm` (RSA, ECDSA, Ed25519; default RSA) and `size` (RSA:
    /// 2048, 3072 or 4096, default 2048; ECDSA: 256 or 384, default 256; Ed25519: ignored).
    pub fn from_spec(algorithm: Option<&str>, size: Option<u64>) -> Result<Self> {
        match (algorithm.unwrap_or("RSA"), size) {
            ("RSA", None) => Ok(KeyAlgorithm::Rsa(2048)),
            ("RSA", Some(n @ (2048 | 3072 | 4096))) => Ok(KeyAlgorithm::Rsa(n as usize)),
            ("RSA", Some(n)) => fail!("RSA key size {n} is not supported (2048, 3072 or 4096)"),
            ("ECDSA", None | Some(256)) => Ok(KeyAlgorithm::EcdsaP256),
            ("ECDSA", Some(384)) => Ok(KeyAlgorithm::EcdsaP384),
            ("ECDSA", Some(n)) => fail!("ECDSA key size {n} is not supported (256 or 384)"),
            ("Ed25519", _) => Ok(KeyAlgorithm::Ed25519),
            (other, _) => {
                fail!("private key algorithm {other:?} is not supported (RSA, ECDSA or Ed25519)")
            }
        }
    }
}

impl std::fmt::Display for KeyAlgorithm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            KeyAlgorithm::Rsa(bits) => write!(f, "RSA {bits}"),
            KeyAlgorithm::EcdsaP256 => f.write_str("ECDSA P-256"),
            KeyAlgorithm::EcdsaP384 => f.write_str("ECDSA P-384"),
            KeyAlgorithm::Ed25519 => f.write_str("Ed25519"),
        }
    }
}

/// How a private key is written (`spec.privateKey.encoding`): PKCS1 (cert-manager's default)
/// writes RSA keys as PKCS#1 and ECDSA keys as SEC1; Ed25519 keys are always PKCS#8.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyEncoding {
    Pkcs1,
    Pkcs8,
}

impl KeyEncoding {
    pub fn from_spec(encoding: Option<&str>) -> Result<Self> {
        match encoding.unwrap_or("PKCS1") {
            "PKCS1" => Ok(KeyEncoding::Pkcs1),
            "PKCS8" => Ok(KeyEncoding::Pkcs8),
            other => fail!("private key encoding {other:?} is not supported (PKCS1 or PKCS8)"),
        }
    }
}

/// A private key of any supported type.
#[derive(Clone)]
pub enum PrivateKey {
    Rsa(Box<rsa::RsaPrivateKey>),
    P256(p256::ecdsa::SigningKey),
    P384(p384::ecdsa::SigningKey),
    Ed25519(Box<ed25519_dalek::SigningKey>),
}

impl PrivateKey {
    /// A fresh key from the host's secure random source.
    pub fn generate(algorithm: KeyAlgorithm) -> Result<Self> {
        let rng = &mut rand_core::OsRng;
        Ok(match algorithm {
            KeyAlgorithm::Rsa(bits) => PrivateKey::Rsa(Box::new(
                rsa::RsaPrivateKey::new(rng, bits).map_err(ctx("generating an RSA key"))?,
            )),
            KeyAlgorithm::EcdsaP256 => PrivateKey::P256(p256::ecdsa::SigningKey::random(rng)),
            KeyAlgorithm::EcdsaP384 => PrivateKey::P384(p384::ecdsa::SigningKey::random(rng)),
            KeyAlgorithm::Ed25519 => {
                PrivateKey::Ed25519(Box::new(ed25519_dalek::SigningKey::generate(rng)))
            }
        })
    }

    /// A key from PEM: PKCS#8 (`PRIVATE KEY`: RSA, ECDSA P-256/P-384, Ed25519), PKCS#1
    /// (`RSA PRIVATE KEY`) or SEC1 (`EC PRIVATE KEY`: P-256, P-384).
    pub fn from_pem(pem: &str) -> Result<Self> {
        let pem = pem.trim();
        let label = pem
            .lines()
            .next()
            .and_then(|l| l.strip_prefix("-----BEGIN "))
            .and_then(|l| l.strip_suffix("-----"))
            .unwrap_or("");
        match label {
            "RSA PRIVATE KEY" => rsa::RsaPrivateKey::from_pkcs1_pem(pem)
                .map(|k| PrivateKey::Rsa(Box::new(k)))
                .map_err(ctx("reading the PKCS#1 RSA private key")),
            "EC PRIVATE KEY" => {
                if let Ok(k) = p256::SecretKey::from_sec1_pem(pem) {
                    return Ok(PrivateKey::P256(k.into()));
                }
                p384::SecretKey::from_sec1_pem(pem)
                    .map(|k| PrivateKey::P384(k.into()))
                    .map_err(|_| Error("the EC private key is not on curve P-256 or P-384".into()))
            }
            "PRIVATE KEY" => {
                if let Ok(k) = rsa::RsaPrivateKey::from_pkcs8_pem(pem) {
                    return Ok(PrivateKey::Rsa(Box::new(k)));
                }
                if let Ok(k) = p256::ecdsa::SigningKey::from_pkcs8_pem(pem) {
                    return Ok(PrivateKey::P256(k));
                }
                if let Ok(k) = p384::ecdsa::SigningKey::from_pkcs8_pem(pem) {
                    return Ok(PrivateKey::P384(k));
                }
                if let Ok(k) = ed25519_dalek::SigningKey::from_pkcs8_pem(pem) {
                    return Ok(PrivateKey::Ed25519(Box::new(k)));
                }
                fail!("the PKCS#8 private key is not RSA, ECDSA P-256/P-384 or Ed25519")
            }
            "ENCRYPTED PRIVATE KEY" => fail!("the private key is encrypted (give it unencrypted)"),
            "" => fail!("the private key is not PEM"),
            other => fail!("a PEM {other:?} is not a supported private key (PKCS#1 RSA PRIVATE KEY, SEC1 EC PRIVATE KEY or PKCS#8 PRIVATE KEY)"),
        }
    }

    /// The key as PEM in this encoding.
    pub fn to_pem(&self, encoding: KeyEncoding) -> Result<String> {
        let lf = der::pem::LineEnding::LF;
        let pem = match (self, encoding) {
            (PrivateKey::Rsa(k), KeyEncoding::Pkcs1) => k
                .to_pkcs1_pem(lf)
                .map(|p| p.to_string())
                .map_err(|e| e.to_string()),
            (PrivateKey::P256(k), KeyEncoding::Pkcs1) => sec1_pem::<p256::NistP256>(
                &k.to_bytes(),
                k.verifying_key().to_encoded_point(false).as_bytes(),
            ),
            (PrivateKey::P384(k), KeyEncoding::Pkcs1) => sec1_pem::<p384::NistP384>(
                &k.to_bytes(),
                k.verifying_key().to_encoded_point(false).as_bytes(),
            ),
            (PrivateKey::Rsa(k), _) => k
                .to_pkcs8_pem(lf)
                .map(|p| p.to_string())
                .map_err(|e| e.to_string()),
            (PrivateKey::P256(k), _) => k
                .to_pkcs8_pem(lf)
                .map(|p| p.to_string())
                .map_err(|e| e.to_string()),
            (PrivateKey::P384(k), _) => k
                .to_pkcs8_pem(lf)
                .map(|p| p.to_string())
                .map_err(|e| e.to_string()),
            (PrivateKey::Ed25519(k), _) => ed25519_pem(&k.to_bytes()),
        };
        pem.map_err(|e| Error(format!("encoding the private key: {e}")))
    }

    pub fn algorithm(&self) -> KeyAlgorithm {
        match self {
            PrivateKey::Rsa(k) => {
                KeyAlgorithm::Rsa(rsa::traits::PublicKeyParts::size(k.as_ref()) * 8)
            }
            PrivateKey::P256(_) => KeyAlgorithm::EcdsaP256,
            PrivateKey::P384(_) => KeyAlgorithm::EcdsaP384,
            PrivateKey::Ed25519(_) => KeyAlgorithm::Ed25519,
        }
    }

    /// The public key as a SubjectPublicKeyInfo.
    pub fn spki(&self) -> Result<SubjectPublicKeyInfoOwned> {
        let der = match self {
            PrivateKey::Rsa(k) => k.to_public_key().to_public_key_der(),
            PrivateKey::P256(k) => k.verifying_key().to_public_key_der(),
            PrivateKey::P384(k) => k.verifying_key().to_public_key_der(),
            PrivateKey::Ed25519(k) => k.verifying_key().to_public_key_der(),
        }
        .map_err(ctx("encoding the public key"))?;
        SubjectPublicKeyInfoOwned::from_der(der.as_bytes()).map_err(ctx("encoding the public key"))
    }

    /// The signature algorithm this key signs with, as Go's crypto/x509 (and so cert-manager)
    /// picks it: SHA-256 with RSA, ECDSA with SHA-256 (P-256) or SHA-384 (P-384), Ed25519.
    fn signature_algorithm(&self) -> AlgorithmIdentifierOwned {
        match self {
            PrivateKey::Rsa(_) => AlgorithmIdentifierOwned {
                oid: SHA256_WITH_RSA,
                parameters: Some(Any::null()),
            },
            PrivateKey::P256(_) => AlgorithmIdentifierOwned {
                oid: ECDSA_SHA256,
                parameters: None,
            },
            PrivateKey::P384(_) => AlgorithmIdentifierOwned {
                oid: ECDSA_SHA384,
                parameters: None,
            },
            PrivateKey::Ed25519(_) => AlgorithmIdentifierOwned {
                oid: ED25519,
                parameters: None,
            },
        }
    }

    fn sign_bytes(&self, msg: &[u8]) -> std::result::Result<Vec<u8>, rsa::signature::Error> {
        Ok(match self {
            PrivateKey::Rsa(k) => {
                rsa::pkcs1v15::SigningKey::<sha2::Sha256>::new(k.as_ref().clone())
                    .try_sign(msg)?
                    .to_vec()
            }
            PrivateKey::P256(k) => {
                let sig: p256::ecdsa::DerSignature = k.try_sign(msg)?;
                sig.to_vec()
            }
            PrivateKey::P384(k) => {
                let sig: p384::ecdsa::DerSignature = k.try_sign(msg)?;
                sig.to_vec()
            }
            PrivateKey::Ed25519(k) => k.try_sign(msg)?.to_vec(),
        })
    }
}

/// A SEC1 `EC PRIVATE KEY` PEM that names its curve (as OpenSSL writes and needs it).
fn sec1_pem<C: const_oid::AssociatedOid>(
    secret: &[u8],
    public: &[u8],
) -> std::result::Result<String, String> {
    let key = sec1::EcPrivateKey {
        private_key: secret,
        parameters: Some(sec1::EcParameters::NamedCurve(C::OID)),
        public_key: Some(public),
    };
    let der = der::Encode::to_der(&key).map_err(|e| e.to_string())?;
    der::pem::encode_string("EC PRIVATE KEY", der::pem::LineEnding::LF, &der)
        .map_err(|e| e.to_string())
}

/// An Ed25519 key as PKCS#8 v1 (RFC 8410, without the public key: OpenSSL reads no other).
fn ed25519_pem(secret: &[u8; 32]) -> std::result::Result<String, String> {
    let inner =
        der::Encode::to_der(&der::asn1::OctetStringRef::new(secret).map_err(|e| e.to_string())?)
            .map_err(|e| e.to_string())?;
    let info = p256::pkcs8::PrivateKeyInfo {
        algorithm: spki::AlgorithmIdentifierRef {
            oid: ED25519,
            parameters: None,
        },
        private_key: &inner,
        public_key: None,
    };
    let der = der::Encode::to_der(&info).map_err(|e| e.to_string())?;
    der::pem::encode_string("PRIVATE KEY", der::pem::LineEnding::LF, &der)
        .map_err(|e| e.to_string())
}

/// Whether two SubjectPublicKeyInfos are the same key (algorithm and key bits; the encoding of
/// absent parameters varies between tools).
pub fn same_key(a: &SubjectPublicKeyInfoOwned, b: &SubjectPublicKeyInfoOwned) -> bool {
    a.algorithm.oid == b.algorithm.oid && a.subject_public_key == b.subject_public_key
}

/// Verifies `signature` over `msg` by the key in `spki` with the signature algorithm `alg`
/// (RSA PKCS#1 v1.5 with SHA-256/384/512, ECDSA P-256/P-384 with SHA-256/384/512, Ed25519).
pub fn verify(
    spki: &SubjectPublicKeyInfoOwned,
    alg: &ObjectIdentifier,
    msg: &[u8],
    signature: &[u8],
) -> Result<()> {
    let der = der::Encode::to_der(spki).map_err(ctx("encoding the public key"))?;
    let bad = |e: rsa::signature::Error| Error(format!("the signature does not verify: {e}"));
    let ecdsa_digest = |alg: &ObjectIdentifier| -> Result<Vec<u8>> {
        Ok(match *alg {
            ECDSA_SHA256 => sha2::Sha256::digest(msg).to_vec(),
            ECDSA_SHA384 => sha2::Sha384::digest(msg).to_vec(),
            ECDSA_SHA512 => sha2::Sha512::digest(msg).to_vec(),
            other => return fail!("signature algorithm {other} does not fit an ECDSA key"),
        })
    };
    use p256::ecdsa::signature::hazmat::PrehashVerifier;
    if let Ok(key) = rsa::RsaPublicKey::from_public_key_der(&der) {
        let sig = rsa::pkcs1v15::Signature::try_from(signature).map_err(bad)?;
        return match *alg {
            SHA256_WITH_RSA => rsa::pkcs1v15::VerifyingKey::<sha2::Sha256>::new(key).verify(msg, &sig),
            SHA384_WITH_RSA => rsa::pkcs1v15::VerifyingKey::<sha2::Sha384>::new(key).verify(msg, &sig),
            SHA512_WITH_RSA => rsa::pkcs1v15::VerifyingKey::<sha2::Sha512>::new(key).verify(msg, &sig),
            other => return fail!("signature algorithm {other} is not supported for an RSA key (want sha256/384/512WithRSAEncryption)"),
        }
        .map_err(bad);
    }
    if let Ok(key) = p256::ecdsa::VerifyingKey::from_public_key_der(&der) {
        let sig = p256::ecdsa::DerSignature::try_from(signature).map_err(bad)?;
        let sig = p256::ecdsa::Signature::try_from(sig).map_err(bad)?;
        return key.verify_prehash(&ecdsa_digest(alg)?, &sig).map_err(bad);
    }
    if let Ok(key) = p384::ecdsa::VerifyingKey::from_public_key_der(&der) {
        let sig = p384::ecdsa::DerSignature::try_from(signature).map_err(bad)?;
        let sig = p384::ecdsa::Signature::try_from(sig).map_err(bad)?;
        return key.verify_prehash(&ecdsa_digest(alg)?, &sig).map_err(bad);
    }
    if let Ok(key) = ed25519_dalek::VerifyingKey::from_public_key_der(&der) {
        if *alg != ED25519 {
            return fail!("signature algorithm {alg} does not fit an Ed25519 key");
        }
        let sig = ed25519_dalek::Signature::from_slice(signature).map_err(bad)?;
        return key.verify(msg, &sig).map_err(bad);
    }
    fail!(
        "public key algorithm {} is not supported (RSA, ECDSA P-256/P-384, Ed25519)",
        spki.algorithm.oid
    )
}

// ---------------------------------------------------------------------------------------------
// What the x509-cert builders need of a signer.

/// The public half, for `Keypair` (`None`: it could not be encoded, which fails the build).
#[derive(Clone)]
pub struct PublicKey(Option<SubjectPublicKeyInfoOwned>);

impl EncodePublicKey for PublicKey {
    fn to_public_key_der(&self) -> spki::Result<der::Document> {
        let spki = self.0.as_ref().ok_or(spki::Error::KeyMalformed)?;
        Ok(der::Document::encode_msg(spki)?)
    }
}

impl Keypair for PrivateKey {
    type VerifyingKey = PublicKey;

    fn verifying_key(&self) -> PublicKey {
        PublicKey(self.spki().ok())
    }
}

impl DynSignatureAlgorithmIdentifier for PrivateKey {
    fn signature_algorithm_identifier(&self) -> spki::Result<AlgorithmIdentifierOwned> {
        Ok(self.signature_algorithm())
    }
}

/// A signature in the form X.509 carries it (DER for ECDSA, raw bytes otherwise).
pub struct Signature(Vec<u8>);

impl SignatureBitStringEncoding for Signature {
    fn to_bitstring(&self) -> der::Result<BitString> {
        BitString::new(0, self.0.clone())
    }
}

impl Signer<Signature> for PrivateKey {
    fn try_sign(&self, msg: &[u8]) -> std::result::Result<Signature, rsa::signature::Error> {
        self.sign_bytes(msg).map(Signature)
    }
}

// ---------------------------------------------------------------------------------------------
// RSA key generation in slices.
//
// Finding two 1024-bit primes (RSA 2048) takes a few hundred milliseconds to a few seconds in a
// guest, 2048-bit ones (RSA 4096) several seconds: longer than the host lets one reconcile run.
// So the search runs for a bounded time per call and keeps its state in the instance (which the
// host keeps between calls) until both primes are found.

use rsa::BigUint;
use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Miller-Rabin rounds with random bases a prime candidate must pass: FIPS 186-4 table C.2
/// asks 5 (1024-bit) or 4 (1536-bit and up) for random candidates; we do 10.
const MR_ROUNDS: usize = 10;
const E: u32 = 65_537;
/// Small primes for trial division before any Miller-Rabin round.
const SMALL_PRIMES: [u32; 24] = [
    3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41, 43, 47, 53, 59, 61, 67, 71, 73, 79, 83, 89, 97,
];

/// RSA prime searches under way, by the caller's id.
static SEARCHES: Mutex<BTreeMap<String, RsaSearch>> = Mutex::new(BTreeMap::new());

struct RsaSearch {
    bits: usize,
    primes: Vec<BigUint>,
    /// The candidate under test and the rounds it has passed.
    candidate: Option<(BigUint, usize)>,
}

fn random_bits(bits: usize) -> BigUint {
    let mut bytes = vec![0u8; bits.div_ceil(8)];
    rand_core::RngCore::fill_bytes(&mut rand_core::OsRng, &mut bytes);
    let extra = bytes.len() * 8 - bits;
    bytes[0] &= 0xff >> extra;
    BigUint::from_bytes_be(&bytes)
}

/// An odd candidate of exactly `bits` bits with the top two set (so that p*q has all its bits).
fn candidate(bits: usize) -> BigUint {
    let mut bytes = random_bits(bits).to_bytes_be();
    bytes.resize(bits.div_ceil(8), 0);
    let top = (bits - 1) % 8; // bit index of the top bit within the first byte
    bytes[0] |= 1 << top;
    if top > 0 {
        bytes[0] |= 1 << (top - 1);
    } else if bytes.len() > 1 {
        bytes[1] |= 0x80;
    }
    let last = bytes.len() - 1;
    bytes[last] |= 1;
    BigUint::from_bytes_be(&bytes)
}

fn small_factor_or_bad_e(n: &BigUint) -> bool {
    let zero = BigUint::from(0u32);
    SMALL_PRIMES.iter().any(|p| n % BigUint::from(*p) == zero)
        || (n - BigUint::from(1u32)) % BigUint::from(E) == zero
}

/// One Miller-Rabin round with a random base.
fn miller_rabin_round(n: &BigUint) -> bool {
    let one = BigUint::from(1u32);
    let n1 = n - &one;
    let mut d = n1.clone();
    let mut s = 0;
    while (&d % BigUint::from(2u32)) == BigUint::from(0u32) {
        d >>= 1;
        s += 1;
    }
    let base = random_bits(n.bits() - 1) + BigUint::from(2u32);
    let mut x = base.modpow(&d, n);
    if x == one || x == n1 {
        return true;
    }
    for _ in 1..s {
        x = x.modpow(&BigUint::from(2u32), n);
        if x == n1 {
            return true;
        }
    }
    false
}

impl RsaSearch {
    /// Searches until `deadline`; the key once both primes are found.
    fn step(&mut self, deadline: Instant) -> Result<Option<PrivateKey>> {
        while self.primes.len() < 2 {
            if Instant::now() >= deadline {
                return Ok(None);
            }
            let (n, passed) = match self.candidate.take() {
                Some(c) => c,
                None => {
                    let n = candidate(self.bits / 2);
                    if small_factor_or_bad_e(&n) || self.primes.contains(&n) {
                        continue;
                    }
                    (n, 0)
                }
            };
            if !miller_rabin_round(&n) {
                continue;
            }
            if passed + 1 < MR_ROUNDS {
                self.candidate = Some((n, passed + 1));
            } else {
                self.primes.push(n);
            }
        }
        let (p, q) = (self.primes[0].clone(), self.primes[1].clone());
        let key = rsa::RsaPrivateKey::from_p_q(p, q, BigUint::from(E))
            .map_err(ctx("assembling the RSA key"))?;
        if rsa::traits::PublicKeyParts::n(&key).bits() != self.bits {
            // Cannot happen with the top two bits set; start over rather than hand out a short key.
            self.primes.clear();
            return Ok(None);
        }
        Ok(Some(PrivateKey::Rsa(Box::new(key))))
    }
}

impl PrivateKey {
    /// A fresh key, generated for at most about `budget` in this call: `None` means "call again
    /// with the same `id`" (RSA keys take longer than one call may run; the search goes on
    /// where it stopped). ECDSA and Ed25519 keys come at once.
    pub fn generate_within(
        id: &str,
        algorithm: KeyAlgorithm,
        budget: Duration,
    ) -> Result<Option<Self>> {
        let KeyAlgorithm::Rsa(bits) = algorithm else {
            return Self::generate(algorithm).map(Some);
        };
        let deadline = Instant::now() + budget;
        let mut searches = SEARCHES.lock().unwrap_or_else(|e| e.into_inner());
        let search = searches.entry(format!("{id}/{bits}")).or_insert(RsaSearch {
            bits,
            primes: Vec::new(),
            candidate: None,
        });
        let key = search.step(deadline)?;
        if key.is_some() {
            searches.remove(&format!("{id}/{bits}"));
        }
        Ok(key)
    }
}
