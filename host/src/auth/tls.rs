//! TLS material: a CA and a serving certificate generated at first start in `DATA/pki`, or the
//! operator's own certificate, turned into a rustls server configuration (HTTP/2 and HTTP/1.1).

use std::path::{Path, PathBuf};
use std::sync::Arc;

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
}

pub type Result<T, E = TlsError> = std::result::Result<T, E>;

/// What the server presents and what clients should trust.
pub struct TlsMaterial {
    pub server_config: Arc<rustls::ServerConfig>,
    /// PEM of the certificate(s) a client should trust (our CA, or the operator's certificate).
    pub ca_pem: String,
}

fn read(path: &Path) -> Result<String> {
    std::fs::read_to_string(path).map_err(|source| TlsError::Io {
        path: path.to_owned(),
        source,
    })
}

fn write_private(path: &Path, contents: &str) -> Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let io = |source| TlsError::Io {
        path: path.to_owned(),
        source,
    };
    let tmp = path.with_extension("tmp");
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .truncate(true)
        .write(true)
        .mode(0o600)
        .open(&tmp)
        .map_err(io)?;
    f.write_all(contents.as_bytes()).map_err(io)?;
    f.sync_all().map_err(io)?;
    std::fs::rename(&tmp, path).map_err(io)
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
/// certificate when the wanted SANs change.
pub fn generated(dir: &Path, extra_sans: &[String]) -> Result<TlsMaterial> {
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
    let server_config = server_config(&srv_crt, &srv_key)?;
    Ok(TlsMaterial {
        server_config,
        ca_pem,
    })
}

/// The operator's own certificate chain and key; clients are told to trust that chain.
pub fn provided(cert: &Path, key: &Path) -> Result<TlsMaterial> {
    let ca_pem = read(cert)?;
    Ok(TlsMaterial {
        server_config: server_config(cert, key)?,
        ca_pem,
    })
}

fn server_config(cert: &Path, key: &Path) -> Result<Arc<rustls::ServerConfig>> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
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
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut cfg = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_no_client_auth()
        .with_single_cert(certs, key)?;
    cfg.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(Arc::new(cfg))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generates_once_and_regenerates_on_new_sans() {
        let dir = std::env::temp_dir().join(format!("turtles-pki-{}", uuid::Uuid::new_v4()));
        let a = generated(&dir, &[]).unwrap();
        let ca1 = a.ca_pem.clone();
        let crt1 = std::fs::read_to_string(dir.join("server.crt")).unwrap();
        let b = generated(&dir, &[]).unwrap();
        assert_eq!(b.ca_pem, ca1);
        assert_eq!(
            std::fs::read_to_string(dir.join("server.crt")).unwrap(),
            crt1
        );
        generated(&dir, &["turtles.example".into()]).unwrap();
        assert_ne!(
            std::fs::read_to_string(dir.join("server.crt")).unwrap(),
            crt1
        );
        assert_eq!(std::fs::read_to_string(dir.join("ca.crt")).unwrap(), ca1);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
