//! `certificate`: keeps each cert-manager-shaped `Certificate` backed by a valid TLS Secret, and
//! renews it.
//!
//! For a Certificate it checks the Secret named `spec.secretName`: if it holds a certificate
//! and key that parse and match, for the names, common name, isCA, key algorithm and issuer the
//! spec asks for, and the renewal time has not come, the Certificate is `Ready=True` (reason
//! `Ready`) with `notBefore`, `notAfter` and `renewalTime` in its status, and the controller
//! asks the host to reconcile it again at the renewal time. Otherwise it issues revision N+1 as
//! cert-manager does: `Issuing=True` with the reason (`DoesNotExist`, `MissingData`,
//! `InvalidKeyPair`, `InvalidCertificate`, `IncorrectIssuer`, `SecretMismatch`, `Expired`,
//! `Renewing`), a private key of `spec.privateKey` in the Secret `<cert>-key` (a new one each
//! revision with `rotationPolicy: Always`, kept with `Never`), and the CertificateRequest
//! `<cert>-<N+1>` (a CSR for the names, and the Certificate's issuerRef, duration, isCA and
//! usages). Once an issuer has signed it, the `kubernetes.io/tls` Secret gets `tls.crt`,
//! `tls.key` (in `spec.privateKey.encoding`), `ca.crt`, cert-manager's annotations and the
//! `secretTemplate`; `status.revision` becomes N+1 and the previous request is deleted.
//! Everything it creates is owned by the Certificate, so those objects' changes (a deleted or
//! edited Secret) reconcile it. It never signs anything itself: issuers do, through the API.

use turtles_controller::{
    api, cache, export, info, json, meta, warn, ApiError, Controller, Gvr, Object, ObjectKey,
    Outcome, Permission, Registration, Value, Watch,
};

use pki::{Error, KeyAlgorithm, KeyEncoding, Names, PrivateKey, GROUP};

const CERTIFICATES: Gvr<'static> = Gvr::new(GROUP, "v1", "certificates");
const REQUESTS: Gvr<'static> = Gvr::new(GROUP, "v1", "certificaterequests");

/// Re-check a valid certificate at least this often, in milliseconds.
const RECHECK_MS: u64 = 3_600_000;
/// How long a failed request stands before it is tried again (cert-manager: one hour).
const RETRY_FAILED_SECS: u64 = 3_600;
/// The revision a `<cert>-key` Secret's key was made for.
const REVISION_ANNOTATION: &str = "cert-manager.io/certificate-revision";

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

    fn reconcile(key: ObjectKey, object: Option<Object>) -> Outcome {
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
                let mut status = StatusPatch::new(&cert);
                status.ready("False", "Failed", &e.0);
                match status.apply(&key) {
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
    common_name: Option<String>,
    names: Names,
    issuer_ref: Value,
    /// `spec.duration` as given (a Go duration, checked).
    duration: String,
    renew_before_secs: Option<u64>,
    is_ca: bool,
    algorithm: KeyAlgorithm,
    encoding: KeyEncoding,
    rotate: bool,
}

fn wanted(cert: &Value) -> Result<Wanted> {
    let spec = &cert["spec"];
    let Some(secret_name) = spec["secretName"].as_str().filter(|s| !s.is_empty()) else {
        return terminal("spec.secretName is empty".into());
    };
    let mut ips = Vec::new();
    for ip in pki::strings(&spec["ipAddresses"]) {
        match ip.parse() {
            Ok(ip) => ips.push(ip),
            Err(_) => return terminal(format!("spec.ipAddresses: {ip:?} is not an IP address")),
        }
    }
    let names = Names {
        dns: pki::strings(&spec["dnsNames"]),
        ips,
        uris: pki::strings(&spec["uris"]),
        emails: pki::strings(&spec["emailAddresses"]),
    };
    let common_name = spec["commonName"]
        .as_str()
        .filter(|s| !s.is_empty())
        .map(str::to_owned);
    if names.is_empty() && common_name.is_none() {
        return terminal(
            "at least one of commonName, dnsNames, ipAddresses, uris or emailAddresses must be set"
                .into(),
        );
    }
    if !spec["issuerRef"]["name"].is_string() {
        return terminal("spec.issuerRef.name is missing".into());
    }
    let duration = |field: &str| -> Result<Option<u64>> {
        match spec[field].as_str() {
            Some(d) => pki::parse_duration(d)
                .map(Some)
                .map_err(|e| Failure::Terminal(Error(format!("spec.{field}: {e}")))),
            None => Ok(None),
        }
    };
    let key = &spec["privateKey"];
    let rotate = match key["rotationPolicy"].as_str().unwrap_or("Always") {
        "Always" => true,
        "Never" => false,
        other => {
            return terminal(format!(
                "spec.privateKey.rotationPolicy {other:?} is not Always or Never"
            ))
        }
    };
    Ok(Wanted {
        secret_name: secret_name.to_owned(),
        common_name,
        names,
        issuer_ref: spec["issuerRef"].clone(),
        duration: match duration("duration")? {
            Some(_) => spec["duration"].as_str().unwrap_or_default().to_owned(),
            None => "2160h".to_owned(),
        },
        renew_before_secs: duration("renewBefore")?,
        is_ca: spec["isCA"] == true,
        algorithm: KeyAlgorithm::from_spec(key["algorithm"].as_str(), key["size"].as_u64())?,
        encoding: KeyEncoding::from_spec(key["encoding"].as_str())?,
        rotate,
    })
}

fn reconcile(key: &ObjectKey, cert: &Value) -> Result<Outcome> {
    let ns = key.namespace.as_str();
    let want = wanted(cert)?;
    let secret = cache::get(Gvr::SECRETS, ns, &want.secret_name);

    // 1. The Secret already holds what is asked for: Ready, until the renewal time.
    // A change of isCA, usages or duration shows in the current revision's request, if that
    // is still there.
    let changed = issued_with_other_spec(key, cert, &want);
    let why = match secret.as_ref().map(|s| check_secret(s, &want)) {
        Some(Ok(_)) if !changed.is_empty() => Issue::new(
            "SecretMismatch",
            format!(
                "Existing issued Secret is not up to date for spec: [{}]",
                changed.join(", ")
            ),
        ),
        Some(Ok(valid)) => {
            let secret = secret.as_ref().unwrap_or(&Value::Null);
            write_secret(key, cert, &want, Some(secret), None)?; // metadata and encoding only
            let mut status = StatusPatch::new(cert);
            status.issued(&valid, None);
            status.apply(key)?;
            return Ok(recheck(valid.renewal));
        }
        Some(Err(why)) => why,
        None => Issue::new(
            "DoesNotExist",
            "Issuing certificate as Secret does not exist",
        ),
    };
    issue(key, cert, &want, secret.as_ref(), why)
}

/// The fields whose values the current revision's request has other than the spec.
fn issued_with_other_spec(key: &ObjectKey, cert: &Value, want: &Wanted) -> Vec<&'static str> {
    let revision = cert["status"]["revision"].as_u64().unwrap_or(0);
    let name = format!("{}-{revision}", key.name);
    cache::get(REQUESTS, &key.namespace, &name)
        .filter(|r| pki::is_owned_by(r, cert))
        .map(|r| changed_fields(&r, cert, want))
        .unwrap_or_default()
}

/// Why a new certificate is needed: cert-manager's reason and message.
struct Issue {
    reason: &'static str,
    message: String,
}

impl Issue {
    fn new(reason: &'static str, message: impl Into<String>) -> Self {
        Issue {
            reason,
            message: message.into(),
        }
    }
}

/// A usable certificate's validity and renewal time (Unix seconds).
#[derive(Clone, Copy)]
struct Valid {
    not_before: u64,
    not_after: u64,
    renewal: u64,
}

/// Reconcile again at the renewal time (at most an hour from now).
fn recheck(renewal: u64) -> Outcome {
    let ms = renewal
        .saturating_sub(pki::unix_now())
        .saturating_mul(1000)
        .clamp(1000, RECHECK_MS);
    Outcome::RequeueAfter(ms as u32)
}

/// cert-manager's renewal time: `renewBefore` before notAfter, or (unset, or not shorter than
/// the lifetime) two thirds into the lifetime.
fn renewal_time(not_before: u64, not_after: u64, renew_before: Option<u64>) -> u64 {
    let lifetime = not_after.saturating_sub(not_before);
    let before = renew_before
        .filter(|b| *b < lifetime)
        .unwrap_or(lifetime / 3);
    not_after - before
}

/// Issue revision N+1: its private key, its request, and once signed, the Secret.
fn issue(
    key: &ObjectKey,
    cert: &Value,
    want: &Wanted,
    secret: Option<&Value>,
    why: Issue,
) -> Result<Outcome> {
    let ns = key.namespace.as_str();
    let revision = cert["status"]["revision"].as_u64().unwrap_or(0) + 1;
    let mut status = StatusPatch::new(cert);
    status.issuing("True", why.reason, &why.message);
    // Ready stays True while the old certificate is merely due for renewal.
    if why.reason != "Renewing" {
        status.ready("False", why.reason, &why.message);
    }

    // 2. The private key for this revision, kept in a Secret of its own (never in the request).
    let private_key = match private_key(key, cert, want, secret, revision)? {
        Key::Ready(k) => k,
        Key::Written => {
            status.apply(key)?;
            return Ok(Outcome::Done); // just written: its event reconciles again
        }
        Key::Generating => {
            status.apply(key)?;
            return Ok(Outcome::RequeueAfter(1)); // the search goes on in the next call
        }
    };

    // 3. The request: create it, replace it if it no longer fits, or collect its certificate.
    let req_name = format!("{}-{revision}", key.name);
    let Some(request) = cache::get(REQUESTS, ns, &req_name) else {
        create_request(key, cert, want, &private_key, &req_name, revision)?;
        info!(
            "{}: {}: created CertificateRequest {req_name}",
            key.display(),
            why.message
        );
        status.apply(key)?;
        return Ok(Outcome::Done);
    };
    if !pki::is_owned_by(&request, cert) {
        return replace_foreign(key, cert, &request, &req_name);
    }
    if let Some(outdated) = outdated(&request, cert, want, &private_key) {
        info!(
            "{}: CertificateRequest {req_name} {outdated}: replacing it",
            key.display()
        );
        delete(&REQUESTS.object_path(ns, &req_name))?;
        status.apply(key)?;
        return Ok(Outcome::Done); // the deletion's event reconciles again
    }
    let Some(chain) = pki::b64_field(&request, "/status/certificate").filter(|c| !c.is_empty())
    else {
        if let Some(c) = pki::condition(&request, "Ready").filter(|c| {
            c["status"] == "False" && (c["reason"] == "Failed" || c["reason"] == "Denied")
        }) {
            return failed(key, cert, &req_name, c, status);
        }
        status.apply(key)?;
        return Ok(Outcome::Done); // the request's events bring us back
    };

    // 4. Issued: check what came back, then store it.
    let key_pem = private_key.to_pem(want.encoding)?;
    let valid = match check_pair(&chain, &key_pem, want) {
        Ok(valid) => valid,
        Err(problem) if problem.reason == "Expired" => {
            info!(
                "{}: CertificateRequest {req_name}'s certificate has expired: asking again",
                key.display()
            );
            delete(&REQUESTS.object_path(ns, &req_name))?;
            return Ok(Outcome::Done);
        }
        Err(problem) => {
            return terminal(format!(
                "the certificate issued for CertificateRequest {req_name} is unusable: {}",
                problem.message
            ))
        }
    };
    let ca = pki::b64_field(&request, "/status/ca").unwrap_or_default();
    write_secret(key, cert, want, secret, Some((&chain, &key_pem, &ca)))?;
    info!(
        "{}: stored revision {revision} in Secret {}",
        key.display(),
        want.secret_name
    );
    status.issued(&valid, Some(revision));
    status.apply(key)?;
    if revision > 1 {
        let previous = format!("{}-{}", key.name, revision - 1);
        delete(&REQUESTS.object_path(ns, &previous))?;
    }
    Ok(recheck(valid.renewal))
}

/// The request failed: say so, and try again with a new request an hour after the failure (or
/// at once when the Certificate changes, which makes the request outdated).
fn failed(
    key: &ObjectKey,
    cert: &Value,
    req_name: &str,
    condition: &Value,
    mut status: StatusPatch,
) -> Result<Outcome> {
    // Recorded already: Issuing says Failed (a new request sets it True again).
    let recorded = pki::condition(cert, "Issuing")
        .is_some_and(|c| c["status"] == "False" && c["reason"] == "Failed");
    let failed_at = cert["status"]["lastFailureTime"]
        .as_str()
        .and_then(pki::parse_rfc3339);
    let now = pki::unix_now();
    let Some(failed_at) = failed_at.filter(|_| recorded) else {
        let message = format!(
            "The certificate request has failed to complete and will be retried: CertificateRequest {req_name}: {}",
            condition["message"].as_str().unwrap_or("")
        );
        warn!("{}: {message}", key.display());
        status.issuing("False", "Failed", &message);
        status.fields["lastFailureTime"] = json!(pki::rfc3339(now));
        let attempts = cert["status"]["failedIssuanceAttempts"]
            .as_u64()
            .unwrap_or(0);
        status.fields["failedIssuanceAttempts"] = json!(attempts + 1);
        status.apply(key)?;
        return Ok(Outcome::RequeueAfter((RETRY_FAILED_SECS * 1000) as u32));
    };
    if now < failed_at + RETRY_FAILED_SECS {
        let wait = (failed_at + RETRY_FAILED_SECS - now) * 1000;
        return Ok(Outcome::RequeueAfter(wait.min(RECHECK_MS) as u32));
    }
    info!(
        "{}: retrying the failed CertificateRequest {req_name}",
        key.display()
    );
    delete(&REQUESTS.object_path(&key.namespace, req_name))?;
    Ok(Outcome::Done)
}

fn create_request(
    key: &ObjectKey,
    cert: &Value,
    want: &Wanted,
    private_key: &PrivateKey,
    req_name: &str,
    revision: u64,
) -> Result<()> {
    let ns = key.namespace.as_str();
    let csr = pki::csr_pem(private_key, want.common_name.as_deref(), &want.names)?;
    let body = json!({
        "apiVersion": format!("{GROUP}/v1"),
        "kind": "CertificateRequest",
        "metadata": {
            "name": req_name,
            "namespace": ns,
            "ownerReferences": pki::owner_reference(cert),
            "annotations": {
                "cert-manager.io/certificate-name": key.name,
                "cert-manager.io/private-key-secret-name": key_secret_name(key),
                REVISION_ANNOTATION: revision.to_string(),
            },
        },
        "spec": {
            "request": pki::b64(csr.as_bytes()),
            "issuerRef": want.issuer_ref,
            "duration": want.duration,
            "isCA": want.is_ca,
            "usages": cert["spec"]["usages"].as_array().cloned().unwrap_or_default(),
        },
    });
    match api::create(&REQUESTS.path(ns), &body) {
        Ok(_) => Ok(()),
        Err(e) if e.is_conflict() => Ok(()), // someone was faster: its event brings us back
        Err(e) => Err(e.into()),
    }
}

fn key_secret_name(key: &ObjectKey) -> String {
    format!("{}-key", key.name)
}

/// Where the private key for a revision stands.
enum Key {
    Ready(PrivateKey),
    /// A new key was written to `<cert>-key`.
    Written,
    /// An RSA key is being generated, a slice per call.
    Generating,
}

/// How long one reconcile may spend generating an RSA key (the host stops a call after 2 s by
/// default).
const KEYGEN_SLICE: std::time::Duration = std::time::Duration::from_millis(500);

/// The private key for `revision`, or what is happening to it. A key is
/// reused when it is of the wanted algorithm and, with `rotationPolicy: Always`, was made for
/// this revision; with `Never`, the key of the current Secret is kept when it fits.
fn private_key(
    key: &ObjectKey,
    cert: &Value,
    want: &Wanted,
    secret: Option<&Value>,
    revision: u64,
) -> Result<Key> {
    let name = key_secret_name(key);
    let existing = cache::get(Gvr::SECRETS, &key.namespace, &name);
    if let Some(s) = &existing {
        if !pki::is_owned_by(s, cert) {
            return terminal(format!(
                "Secret {name} exists and is not owned by this Certificate"
            ));
        }
        let pem = pki::b64_field(s, "/data/tls.key").unwrap_or_default();
        let for_revision = meta::annotation(s, REVISION_ANNOTATION) == Some(&revision.to_string());
        if let Ok(k) = PrivateKey::from_pem(&pem) {
            if k.algorithm() == want.algorithm && (for_revision || !want.rotate) {
                return Ok(Key::Ready(k));
            }
        }
    }
    // With rotationPolicy Never, the key already in use is kept when it fits.
    let current = secret
        .filter(|_| !want.rotate)
        .and_then(|s| pki::b64_field(s, "/data/tls.key"))
        .and_then(|pem| PrivateKey::from_pem(&pem).ok())
        .filter(|k| k.algorithm() == want.algorithm);
    let private_key = match current {
        Some(k) => k,
        None => {
            let id = format!("{}/{revision}", key.display());
            match PrivateKey::generate_within(&id, want.algorithm, KEYGEN_SLICE)? {
                Some(k) => k,
                None => return Ok(Key::Generating),
            }
        }
    };
    let data = json!({ "tls.key": pki::b64(private_key.to_pem(KeyEncoding::Pkcs8)?.as_bytes()) });
    let annotations = json!({
        "cert-manager.io/certificate-name": key.name,
        REVISION_ANNOTATION: revision.to_string(),
    });
    if existing.is_some() {
        let patch = json!({ "metadata": { "annotations": annotations }, "data": data });
        api::patch_merge(&Gvr::SECRETS.object_path(&key.namespace, &name), &patch)?;
        return Ok(Key::Written);
    }
    let body = json!({
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": name,
            "namespace": key.namespace,
            "ownerReferences": pki::owner_reference(cert),
            "annotations": annotations,
        },
        "type": "Opaque",
        "data": data,
    });
    match api::create(&Gvr::SECRETS.path(&key.namespace), &body) {
        Ok(_) => Ok(Key::Written),
        Err(e) if e.is_conflict() => Ok(Key::Written), // someone was faster: its event brings us back
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
fn outdated(
    request: &Value,
    cert: &Value,
    want: &Wanted,
    private_key: &PrivateKey,
) -> Option<String> {
    if !same_issuer(&request["spec"]["issuerRef"], &want.issuer_ref) {
        return Some("names another issuer".into());
    }
    let changed = changed_fields(request, cert, want);
    if !changed.is_empty() {
        return Some(format!("asks for other {}", changed.join(", ")));
    }
    let csr = pki::b64_field(request, "/spec/request").unwrap_or_default();
    let Ok(csr) = pki::parse_csr(&csr) else {
        return Some("has an unreadable CSR".into());
    };
    if csr.names.normalized() != want.names.normalized()
        || pki::common_name(&csr.subject) != want.common_name
    {
        return Some("asks for other names".into());
    }
    if !private_key
        .spki()
        .is_ok_and(|ours| pki::same_key(&ours, &csr.public_key))
    {
        return Some("is for another private key".into());
    }
    None
}

/// The fields of the Certificate that a request (or the issuance it made) has other values of
/// than the Certificate now asks for, besides names and key.
fn changed_fields(request: &Value, cert: &Value, want: &Wanted) -> Vec<&'static str> {
    let spec = &request["spec"];
    let list = |v: &Value| v.as_array().cloned().unwrap_or_default();
    [
        ("spec.isCA", spec["isCA"] != want.is_ca),
        (
            "spec.usages",
            list(&spec["usages"]) != list(&cert["spec"]["usages"]),
        ),
        (
            "spec.duration",
            spec["duration"].as_str() != Some(want.duration.as_str()),
        ),
    ]
    .into_iter()
    .filter_map(|(field, differs)| differs.then_some(field))
    .collect()
}

fn same_issuer(a: &Value, b: &Value) -> bool {
    ["name", "kind", "group"].iter().all(|f| {
        let (a, b) = (&a[f], &b[f]);
        a == b || a.is_null() || b.is_null()
    })
}

/// The Secret holds what the Certificate asks for, not due for renewal: its validity; or why
/// a new certificate is needed.
fn check_secret(secret: &Value, want: &Wanted) -> std::result::Result<Valid, Issue> {
    let Some(crt) = pki::b64_field(secret, "/data/tls.crt").filter(|c| !c.is_empty()) else {
        return Err(Issue::new(
            "MissingData",
            "Issuing certificate as Secret does not contain a certificate",
        ));
    };
    let Some(key) = pki::b64_field(secret, "/data/tls.key").filter(|c| !c.is_empty()) else {
        return Err(Issue::new(
            "MissingData",
            "Issuing certificate as Secret does not contain a private key",
        ));
    };
    let issuer = |f: &str| meta::annotation(secret, &format!("cert-manager.io/issuer-{f}"));
    let issued_by = json!({
        "name": issuer("name"),
        "kind": issuer("kind"),
        "group": issuer("group"),
    });
    if !same_issuer(&issued_by, &want.issuer_ref) {
        return Err(Issue::new(
            "IncorrectIssuer",
            format!(
                "Issuing certificate as Secret was previously issued by {}.{}/{}",
                issuer("kind").unwrap_or("Issuer"),
                issuer("group").unwrap_or(GROUP),
                issuer("name").unwrap_or("")
            ),
        ));
    }
    let valid = check_pair(&crt, &key, want)?;
    if pki::unix_now() >= valid.renewal {
        return Err(Issue::new(
            "Renewing",
            format!(
                "Renewing certificate as renewal was scheduled at {}",
                pki::rfc3339(valid.renewal)
            ),
        ));
    }
    Ok(valid)
}

/// A PEM chain and key fit the Certificate: the leaf parses, matches the key, is for the
/// names, common name, isCA and key algorithm asked for, and has not expired.
fn check_pair(chain: &str, key_pem: &str, want: &Wanted) -> std::result::Result<Valid, Issue> {
    let leaf = match pki::parse_chain(chain) {
        Ok(mut certs) => certs.remove(0),
        Err(e) => {
            return Err(Issue::new(
                "InvalidCertificate",
                format!("Issuing certificate as Secret contains an invalid certificate: {e}"),
            ))
        }
    };
    let key = PrivateKey::from_pem(key_pem).map_err(|e| {
        Issue::new(
            "InvalidKeyPair",
            format!("Issuing certificate as Secret contains invalid private key data: {e}"),
        )
    })?;
    if !pki::key_matches(&leaf, &key) {
        return Err(Issue::new(
            "InvalidKeyPair",
            "Issuing certificate as Secret contains a private key that does not match the certificate",
        ));
    }
    let mut mismatched = Vec::new();
    let names = pki::names(&leaf).normalized();
    let wanted = want.names.normalized();
    for (field, differs) in [
        ("spec.dnsNames", names.dns != wanted.dns),
        ("spec.ipAddresses", names.ips != wanted.ips),
        ("spec.uris", names.uris != wanted.uris),
        ("spec.emailAddresses", names.emails != wanted.emails),
        (
            "spec.commonName",
            pki::common_name(&leaf.tbs_certificate.subject) != want.common_name,
        ),
        ("spec.isCA", pki::is_ca(&leaf) != want.is_ca),
        ("spec.privateKey", key.algorithm() != want.algorithm),
    ] {
        if differs {
            mismatched.push(field);
        }
    }
    if !mismatched.is_empty() {
        return Err(Issue::new(
            "SecretMismatch",
            format!(
                "Existing issued Secret is not up to date for spec: [{}]",
                mismatched.join(", ")
            ),
        ));
    }
    let (not_before, not_after) = pki::validity(&leaf);
    if pki::unix_now() >= not_after {
        return Err(Issue::new(
            "Expired",
            format!("Certificate expired on {}", pki::rfc3339(not_after)),
        ));
    }
    Ok(Valid {
        not_before,
        not_after,
        renewal: renewal_time(not_before, not_after, want.renew_before_secs),
    })
}

/// Create or update the `kubernetes.io/tls` Secret named by spec.secretName: with `issued`
/// (chain, key PEM, CA PEM) its data; always cert-manager's annotations, the secretTemplate
/// and the key in the wanted encoding. Patches only what differs.
fn write_secret(
    key: &ObjectKey,
    cert: &Value,
    want: &Wanted,
    existing: Option<&Value>,
    issued: Option<(&str, &str, &str)>,
) -> Result<()> {
    let spec = &cert["spec"];
    let mut data = turtles_controller::serde_json::Map::new();
    match issued {
        Some((chain, key_pem, ca)) => {
            data.insert("tls.crt".into(), json!(pki::b64(chain.as_bytes())));
            data.insert("tls.key".into(), json!(pki::b64(key_pem.as_bytes())));
            data.insert("ca.crt".into(), json!(pki::b64(ca.as_bytes())));
        }
        None => {
            // Re-encode the key if the wanted encoding changed.
            let pem = existing.and_then(|s| pki::b64_field(s, "/data/tls.key"));
            if let Some(Ok(k)) = pem.as_deref().map(PrivateKey::from_pem) {
                let encoded = k.to_pem(want.encoding)?;
                if Some(encoded.as_str()) != pem.as_deref() {
                    data.insert("tls.key".into(), json!(pki::b64(encoded.as_bytes())));
                }
            }
        }
    }
    let mut annotations = spec["secretTemplate"]["annotations"]
        .as_object()
        .cloned()
        .unwrap_or_default();
    let names = &want.names;
    let join = |v: Vec<String>| v.join(",");
    for (k, v) in [
        ("cert-manager.io/certificate-name", key.name.clone()),
        (
            "cert-manager.io/issuer-name",
            want.issuer_ref["name"].as_str().unwrap_or("").into(),
        ),
        (
            "cert-manager.io/issuer-kind",
            want.issuer_ref["kind"].as_str().unwrap_or("Issuer").into(),
        ),
        (
            "cert-manager.io/issuer-group",
            want.issuer_ref["group"].as_str().unwrap_or(GROUP).into(),
        ),
        (
            "cert-manager.io/common-name",
            want.common_name.clone().unwrap_or_default(),
        ),
        ("cert-manager.io/alt-names", join(names.dns.clone())),
        (
            "cert-manager.io/ip-sans",
            join(names.ips.iter().map(|i| i.to_string()).collect()),
        ),
        ("cert-manager.io/uri-sans", join(names.uris.clone())),
        ("cert-manager.io/email-sans", join(names.emails.clone())),
    ] {
        annotations.insert(k.into(), json!(v));
    }
    let mut labels = spec["secretTemplate"]["labels"]
        .as_object()
        .cloned()
        .unwrap_or_default();
    labels.insert("controller.cert-manager.io/fao".into(), json!("true"));
    let ns = key.namespace.as_str();
    if let Some(existing) = existing {
        let meta_differs =
            |field: &str, want: &turtles_controller::serde_json::Map<String, Value>| {
                want.iter()
                    .any(|(k, v)| existing["metadata"][field].get(k) != Some(v))
            };
        if data.is_empty()
            && !meta_differs("annotations", &annotations)
            && !meta_differs("labels", &labels)
        {
            return Ok(());
        }
        let patch = json!({
            "metadata": { "annotations": annotations, "labels": labels },
            "data": data,
        });
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
            "labels": labels,
        },
        "type": "kubernetes.io/tls",
        "data": data,
    });
    api::create(&Gvr::SECRETS.path(ns), &body)?;
    Ok(())
}

/// The status to write: the Certificate's conditions with changes, and other fields.
struct StatusPatch {
    before: Vec<Value>,
    conditions: Vec<Value>,
    current: Value,
    fields: Value,
    name: String,
    namespace: String,
}

impl StatusPatch {
    fn new(cert: &Value) -> Self {
        let conditions = pki::conditions(cert);
        StatusPatch {
            before: conditions.clone(),
            conditions,
            current: cert["status"].clone(),
            fields: json!({}),
            name: meta::name(cert).unwrap_or("").into(),
            namespace: meta::namespace(cert).unwrap_or("").into(),
        }
    }

    fn ready(&mut self, status: &str, reason: &str, message: &str) {
        pki::set_condition(&mut self.conditions, "Ready", status, reason, message);
    }

    fn issuing(&mut self, status: &str, reason: &str, message: &str) {
        pki::set_condition(&mut self.conditions, "Issuing", status, reason, message);
    }

    /// Ready with the Secret's certificate; the Issuing condition goes.
    fn issued(&mut self, valid: &Valid, revision: Option<u64>) {
        self.ready(
            "True",
            "Ready",
            "Certificate is up to date and has not expired",
        );
        self.conditions.retain(|c| c["type"] != "Issuing");
        self.fields["notBefore"] = json!(pki::rfc3339(valid.not_before));
        self.fields["notAfter"] = json!(pki::rfc3339(valid.not_after));
        self.fields["renewalTime"] = json!(pki::rfc3339(valid.renewal));
        if let Some(r) = revision {
            self.fields["revision"] = json!(r);
            self.fields["lastFailureTime"] = Value::Null;
            self.fields["failedIssuanceAttempts"] = Value::Null;
        }
    }

    /// Merge-patch the status subresource, unless nothing would change.
    fn apply(&self, key: &ObjectKey) -> std::result::Result<(), ApiError> {
        let fields = self.fields.as_object().cloned().unwrap_or_default();
        let same_fields = fields
            .iter()
            .all(|(k, v)| self.current.get(k).unwrap_or(&Value::Null) == v);
        if same_fields && self.conditions == self.before {
            return Ok(());
        }
        let mut patch = json!({ "status": fields });
        patch["status"]["conditions"] = Value::Array(self.conditions.clone());
        let (ns, name) = if self.name.is_empty() {
            (key.namespace.as_str(), key.name.as_str())
        } else {
            (self.namespace.as_str(), self.name.as_str())
        };
        let path = format!("{}/status", CERTIFICATES.object_path(ns, name));
        api::patch_merge(&path, &patch).map(|_| ())
    }
}
