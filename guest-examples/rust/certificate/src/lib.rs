//! `certificate`: keeps each cert-manager-shaped `Certificate` backed by a valid TLS Secret.
//!
//! For a Certificate it checks the Secret named `spec.secretName`; if that holds a certificate
//! that parses, covers every `spec.dnsNames` entry, matches its key and is not due for renewal,
//! the Certificate is `Ready=True`. Otherwise it makes sure an ECDSA P-256 private key exists in
//! the Secret `<cert>-key`, asks for a certificate with the CertificateRequest `<cert>-1` (a CSR
//! with CN = the first DNS name and every DNS name as a SAN, and the Certificate's issuerRef),
//! and, once an issuer has put the signed chain in the request's `status.certificate`, writes
//! the `kubernetes.io/tls` Secret and sets `Ready=True` (reason `Issued`). Everything it
//! creates is owned by the Certificate (a controller owner reference with its uid), so those
//! objects' changes reconcile it. It never signs anything itself: issuers do, through the API.

use turtles_controller::{
    api, cache, export, info, json, meta, warn, ApiError, Controller, Gvr, ObjectKey, Outcome,
    Permission, Registration, Value, Watch,
};

use pki::{Error, KeyAlgorithm, KeyEncoding, Names, PrivateKey, GROUP};

const CERTIFICATES: Gvr<'static> = Gvr::new(GROUP, "v1", "certificates");
const REQUESTS: Gvr<'static> = Gvr::new(GROUP, "v1", "certificaterequests");

/// Re-check a valid certificate at least this often (for renewal), in milliseconds.
const RECHECK_MS: u64 = 3_600_000;

struct CertificateController;

impl Controller for CertificateController {
    fn register() -> Registration {
        Registration::new(Watch::of(CERTIFICATES))
            .watch(Watch::of(Gvr::SECRETS).owned_by(GROUP, "Certificate"))
            .watch(Watch::of(REQUESTS).owned_by(GROUP, "Certificate"))
            // Reads come from the informer cache; these are the writes it makes.
            .permission(Permission::group(
                GROUP,
                &["certificates/status"],
                &["patch"],
            ))
            .permission(Permission::group(
                GROUP,
                &["certificaterequests"],
                &["create", "delete"],
            ))
            .permission(Permission::core(&["secrets"], &["create", "patch"]))
    }

    fn reconcile(key: ObjectKey, object: Option<Value>) -> Outcome {
        let Some(cert) = object else {
            return Outcome::Done; // gone: what it owned is the garbage collector's
        };
        if meta::is_deleting(&cert) {
            return Outcome::Done;
        }
        match reconcile(&key, &cert) {
            Ok(outcome) => outcome,
            // Retried with backoff (if the Certificate is gone by then, the retry sees `None`).
            Err(Failure::Api(e)) => e.into(),
            Err(Failure::Terminal(e)) => {
                warn!("{}: {e}", key.display());
                match set_ready(&key, &cert, "False", "Failed", &e.0, None) {
                    Ok(()) => Outcome::TerminalError(e.0),
                    Err(e) => e.into(),
                }
            }
        }
    }
}

export!(CertificateController);

enum Failure {
    /// An API call failed: retried with backoff.
    Api(ApiError),
    /// Nothing a retry can fix: reported as Ready=False/Failed until the Certificate changes.
    Terminal(Error),
}

impl From<ApiError> for Failure {
    fn from(e: ApiError) -> Self {
        Failure::Api(e)
    }
}

impl From<Error> for Failure {
    fn from(e: Error) -> Self {
        Failure::Terminal(e)
    }
}

type Result<T> = std::result::Result<T, Failure>;

fn terminal<T>(message: String) -> Result<T> {
    Err(Failure::Terminal(Error(message)))
}

/// What the Certificate asks for.
struct Wanted {
    secret_name: String,
    dns_names: Vec<String>,
    issuer_ref: Value,
}

fn wanted(cert: &Value) -> Result<Wanted> {
    let spec = &cert["spec"];
    let Some(secret_name) = spec["secretName"].as_str().filter(|s| !s.is_empty()) else {
        return terminal("spec.secretName is empty".into());
    };
    let mut dns_names = pki::strings(&spec["dnsNames"]);
    if dns_names.is_empty() {
        if let Some(cn) = spec["commonName"].as_str().filter(|s| !s.is_empty()) {
            dns_names.push(cn.to_owned());
        }
    }
    if dns_names.is_empty() {
        return terminal("spec.dnsNames is empty".into());
    }
    if !spec["issuerRef"]["name"].is_string() {
        return terminal("spec.issuerRef.name is missing".into());
    }
    Ok(Wanted {
        secret_name: secret_name.to_owned(),
        dns_names,
        issuer_ref: spec["issuerRef"].clone(),
    })
}

fn reconcile(key: &ObjectKey, cert: &Value) -> Result<Outcome> {
    let ns = key.namespace.as_str();
    let want = wanted(cert)?;

    // 1. The Secret already holds a good certificate: Ready.
    let secret = cache::get(Gvr::SECRETS, ns, &want.secret_name);
    let stale = match secret.as_ref().map(|s| check_secret(s, &want.dns_names)) {
        Some(Ok(valid)) => {
            if pki::condition(cert, "Ready").is_some_and(|c| c["status"] == "True") {
                return Ok(recheck(valid));
            }
            let message = "Certificate is up to date and has not expired";
            set_ready(key, cert, "True", "Ready", message, Some(valid.not_after))?;
            return Ok(recheck(valid));
        }
        Some(Err(why)) => Some(why),
        None => None,
    };

    // 2. The private key, kept in a Secret of its own (never in the request).
    let Some(private_key) = private_key(key, cert)? else {
        return Ok(Outcome::Done); // just created: its event reconciles again
    };

    // 3. The request: create it, replace it if it no longer fits, or collect its certificate.
    let req_name = format!("{}-1", key.name);
    let request = cache::get(REQUESTS, ns, &req_name);
    let Some(request) = request else {
        let names = Names {
            dns: want.dns_names.clone(),
            ..Names::default()
        };
        let csr = pki::csr_pem(
            &private_key,
            want.dns_names.first().map(String::as_str),
            &names,
        )?;
        let body = json!({
            "apiVersion": format!("{GROUP}/v1"),
            "kind": "CertificateRequest",
            "metadata": {
                "name": req_name,
                "namespace": ns,
                "ownerReferences": pki::owner_reference(cert),
                "annotations": {
                    "cert-manager.io/certificate-name": key.name,
                    "cert-manager.io/private-key-secret-name": format!("{}-key", key.name),
                },
            },
            "spec": {
                "request": pki::b64(csr.as_bytes()),
                "issuerRef": want.issuer_ref,
                "duration": cert["spec"]["duration"].as_str().unwrap_or("2160h"),
                "isCA": cert["spec"]["isCA"] == true,
                "usages": cert["spec"]["usages"].as_array().cloned().unwrap_or_default(),
            },
        });
        match api::create(&REQUESTS.path(ns), &body) {
            Ok(_) => {}
            Err(e) if e.is_conflict() => return Ok(Outcome::RequeueAfter(200)),
            Err(e) => return Err(e.into()),
        }
        let why = stale.unwrap_or_else(|| format!("Secret {} does not exist", want.secret_name));
        info!(
            "{}: {why}: created CertificateRequest {req_name}",
            key.display()
        );
        set_ready(key, cert, "False", "Issuing", &waiting(&req_name), None)?;
        return Ok(Outcome::Done);
    };
    if !pki::is_owned_by(&request, cert) {
        return replace_foreign(key, cert, &request, &req_name);
    }
    if let Some(why) = outdated(&request, &want, &private_key) {
        info!(
            "{}: CertificateRequest {req_name} {why}: replacing it",
            key.display()
        );
        delete(&REQUESTS.object_path(ns, &req_name))?;
        let message = format!("Re-issuing: CertificateRequest {req_name} {why}");
        set_ready(key, cert, "False", "Issuing", &message, None)?;
        return Ok(Outcome::Done); // the deletion's event reconciles again
    }
    let Some(chain) = pki::b64_field(&request, "/status/certificate").filter(|c| !c.is_empty())
    else {
        if let Some(c) = pki::condition(&request, "Ready")
            .filter(|c| c["status"] == "False" && c["reason"] == "Failed")
        {
            let message = format!(
                "CertificateRequest {req_name} failed: {}",
                c["message"].as_str().unwrap_or("")
            );
            set_ready(key, cert, "False", "Failed", &message, None)?;
            return Ok(Outcome::Done);
        }
        set_ready(key, cert, "False", "Issuing", &waiting(&req_name), None)?;
        return Ok(Outcome::Done);
    };

    // 4. Issued: check what came back, then store it.
    let key_pem = private_key.to_pem(KeyEncoding::Pkcs8)?;
    let valid = match check_pair(&chain, &key_pem, &want.dns_names) {
        Ok(valid) => valid,
        Err(Check::Renew(why)) => {
            // An old issuance (expired or due for renewal): ask again.
            info!(
                "{}: CertificateRequest {req_name}'s certificate {why}: renewing",
                key.display()
            );
            delete(&REQUESTS.object_path(ns, &req_name))?;
            return Ok(Outcome::Done);
        }
        Err(Check::Invalid(why)) => {
            return terminal(format!(
                "the certificate issued for CertificateRequest {req_name} is unusable: {why}"
            ))
        }
    };
    let ca = pki::b64_field(&request, "/status/ca").unwrap_or_default();
    write_secret(key, cert, &want, secret.as_ref(), &chain, &key_pem, &ca)?;
    info!(
        "{}: stored the issued certificate in Secret {}",
        key.display(),
        want.secret_name
    );
    let issuer = want.issuer_ref["name"].as_str().unwrap_or("");
    let message = format!(
        "Certificate issued by {issuer} and stored in Secret {}",
        want.secret_name
    );
    set_ready(key, cert, "True", "Issued", &message, Some(valid.not_after))?;
    Ok(recheck(valid))
}

fn waiting(req_name: &str) -> String {
    format!("Waiting for CertificateRequest {req_name} to be issued")
}

/// Reconcile again when the certificate is due for renewal (at most an hour from now).
fn recheck(valid: Valid) -> Outcome {
    let ms = valid
        .renew_at
        .saturating_sub(pki::unix_now())
        .saturating_mul(1000)
        .clamp(1000, RECHECK_MS);
    Outcome::RequeueAfter(ms as u32)
}

/// A usable certificate's notAfter and when to renew it (Unix seconds).
#[derive(Clone, Copy)]
struct Valid {
    not_after: u64,
    renew_at: u64,
}

/// The `<cert>-key` Secret's private key, or `None` after creating it with a new one.
fn private_key(key: &ObjectKey, cert: &Value) -> Result<Option<PrivateKey>> {
    let name = format!("{}-key", key.name);
    if let Some(secret) = cache::get(Gvr::SECRETS, &key.namespace, &name) {
        if !pki::is_owned_by(&secret, cert) {
            return terminal(format!(
                "Secret {name} exists and is not owned by this Certificate"
            ));
        }
        let pem = pki::b64_field(&secret, "/data/tls.key").unwrap_or_default();
        return Ok(Some(PrivateKey::from_pem(&pem)?));
    }
    let pem = PrivateKey::generate(KeyAlgorithm::EcdsaP256)?.to_pem(KeyEncoding::Pkcs8)?;
    let body = json!({
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": name,
            "namespace": key.namespace,
            "ownerReferences": pki::owner_reference(cert),
            "annotations": { "cert-manager.io/certificate-name": key.name },
        },
        "type": "Opaque",
        "data": { "tls.key": pki::b64(pem.as_bytes()) },
    });
    match api::create(&Gvr::SECRETS.path(&key.namespace), &body) {
        Ok(_) => Ok(None),
        Err(e) if e.is_conflict() => Ok(None), // someone was faster: its event brings us back
        Err(e) => Err(e.into()),
    }
}

/// A request named like ours that this Certificate does not own: left over from an earlier
/// Certificate of the same name (delete it), or someone else's (give up).
fn replace_foreign(
    key: &ObjectKey,
    cert: &Value,
    request: &Value,
    req_name: &str,
) -> Result<Outcome> {
    let ours_before = request
        .pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .any(|r| r["kind"] == "Certificate" && r["name"] == cert["metadata"]["name"]);
    if !ours_before {
        return terminal(format!(
            "CertificateRequest {req_name} exists and is not owned by this Certificate"
        ));
    }
    info!(
        "{}: deleting CertificateRequest {req_name} of an earlier Certificate",
        key.display()
    );
    delete(&REQUESTS.object_path(&key.namespace, req_name))?;
    Ok(Outcome::RequeueAfter(200))
}

fn delete(path: &str) -> Result<()> {
    match api::delete(path) {
        Ok(_) => Ok(()),
        Err(e) if e.is_not_found() => Ok(()),
        Err(e) => Err(e.into()),
    }
}

/// Why an existing request no longer fits the Certificate, if it does not.
fn outdated(request: &Value, want: &Wanted, private_key: &PrivateKey) -> Option<String> {
    let same_issuer = ["name", "kind", "group"].iter().all(|f| {
        let a = &request["spec"]["issuerRef"][f];
        let b = &want.issuer_ref[f];
        a == b || a.is_null() || b.is_null()
    });
    if !same_issuer {
        return Some("names another issuer".into());
    }
    let csr = pki::b64_field(request, "/spec/request").unwrap_or_default();
    let Ok(csr) = pki::parse_csr(&csr) else {
        return Some("has an unreadable CSR".into());
    };
    if !same_names(&csr.names.dns, &want.dns_names) {
        return Some("asks for other DNS names".into());
    }
    if !private_key
        .spki()
        .is_ok_and(|ours| pki::same_key(&ours, &csr.public_key))
    {
        return Some("is for another private key".into());
    }
    None
}

fn same_names(a: &[String], b: &[String]) -> bool {
    let mut a: Vec<&String> = a.iter().collect();
    let mut b: Vec<&String> = b.iter().collect();
    a.sort();
    a.dedup();
    b.sort();
    b.dedup();
    a == b
}

enum Check {
    /// Expired or due for renewal.
    Renew(String),
    /// Not the certificate asked for.
    Invalid(String),
}

impl std::fmt::Display for Check {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Check::Renew(s) | Check::Invalid(s) => f.write_str(s),
        }
    }
}

/// The Secret's certificate is usable: its notAfter, or why not.
fn check_secret(secret: &Value, dns_names: &[String]) -> std::result::Result<Valid, String> {
    let crt = pki::b64_field(secret, "/data/tls.crt")
        .ok_or_else(|| format!("Secret {} has no tls.crt", meta::name(secret).unwrap_or("")))?;
    let key = pki::b64_field(secret, "/data/tls.key").unwrap_or_default();
    check_pair(&crt, &key, dns_names).map_err(|e| {
        format!(
            "the certificate in Secret {} {e}",
            meta::name(secret).unwrap_or("")
        )
    })
}

/// A PEM chain and key are usable: the leaf parses, matches the key, covers every DNS name
/// and is within its validity, before the last third of its lifetime (renewal).
fn check_pair(
    chain: &str,
    key_pem: &str,
    dns_names: &[String],
) -> std::result::Result<Valid, Check> {
    let leaf = pki::parse_chain(chain)
        .map_err(|e| Check::Invalid(format!("is not readable ({e})")))?
        .remove(0);
    let key = PrivateKey::from_pem(key_pem)
        .map_err(|e| Check::Invalid(format!("has no usable key ({e})")))?;
    if !pki::key_matches(&leaf, &key) {
        return Err(Check::Invalid("does not match its private key".into()));
    }
    let names = pki::names(&leaf).dns;
    if let Some(missing) = dns_names.iter().find(|n| !names.contains(n)) {
        return Err(Check::Invalid(format!("does not cover {missing}")));
    }
    let (not_before, not_after) = pki::validity(&leaf);
    let now = pki::unix_now();
    if now >= not_after {
        return Err(Check::Renew("has expired".into()));
    }
    let renew_at = not_after - (not_after.saturating_sub(not_before)) / 3;
    if now >= renew_at {
        return Err(Check::Renew("is due for renewal".into()));
    }
    Ok(Valid {
        not_after,
        renew_at,
    })
}

/// Create or update the `kubernetes.io/tls` Secret named by spec.secretName.
fn write_secret(
    key: &ObjectKey,
    cert: &Value,
    want: &Wanted,
    existing: Option<&Value>,
    chain: &str,
    key_pem: &str,
    ca: &str,
) -> Result<()> {
    let mut data = json!({
        "tls.crt": pki::b64(chain.as_bytes()),
        "tls.key": pki::b64(key_pem.as_bytes()),
    });
    if !ca.is_empty() {
        data["ca.crt"] = json!(pki::b64(ca.as_bytes()));
    }
    let annotations = json!({
        "cert-manager.io/certificate-name": key.name,
        "cert-manager.io/issuer-name": want.issuer_ref["name"],
        "cert-manager.io/issuer-kind": want.issuer_ref["kind"],
        "cert-manager.io/issuer-group": want.issuer_ref["group"],
    });
    let ns = key.namespace.as_str();
    if existing.is_some() {
        let patch = json!({ "metadata": { "annotations": annotations }, "data": data });
        api::patch_merge(&Gvr::SECRETS.object_path(ns, &want.secret_name), &patch)?;
        return Ok(());
    }
    let body = json!({
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": want.secret_name,
            "namespace": ns,
            "ownerReferences": pki::owner_reference(cert),
            "annotations": annotations,
        },
        "type": "kubernetes.io/tls",
        "data": data,
    });
    api::create(&Gvr::SECRETS.path(ns), &body)?;
    Ok(())
}

/// Set the Ready condition (and notAfter) through the status subresource, unless it already
/// says exactly that.
fn set_ready(
    key: &ObjectKey,
    cert: &Value,
    status: &str,
    reason: &str,
    message: &str,
    not_after: Option<u64>,
) -> std::result::Result<(), ApiError> {
    if pki::condition_is(cert, "Ready", status, reason, message) {
        return Ok(());
    }
    let mut patch = json!({
        "status": { "conditions": pki::with_condition(cert, "Ready", status, reason, message) },
    });
    if let Some(t) = not_after {
        patch["status"]["notAfter"] = json!(pki::rfc3339(t));
    }
    let path = format!(
        "{}/status",
        CERTIFICATES.object_path(&key.namespace, &key.name)
    );
    api::patch_merge(&path, &patch).map(|_| ())
}
