//! `issuer`: signs cert-manager-shaped `CertificateRequest`s with a CA `Issuer`.
//!
//! For a CertificateRequest whose `spec.issuerRef` names an `Issuer` (group `cert-manager.io`)
//! in its namespace, it reads the Issuer's CA Secret (`spec.ca.secretName`, a `kubernetes.io/tls`
//! Secret with PEM `tls.crt` and an ECDSA P-256 `tls.key`, PKCS#8 or SEC1), verifies the request's
//! CSR signature, and issues a leaf certificate: random serial, 90 days (never past the CA's own
//! expiry), the CSR's subject and DNS names, key usage digitalSignature + keyEncipherment,
//! extended key usage serverAuth, the CA's key id as authority key id. The chain (leaf, then CA)
//! goes to `status.certificate`, the CA to `status.ca`, both base64 PEM, with `Ready=True`.
//! A request it cannot sign gets `Ready=False` with reason `Failed` (a bad CSR) or `Pending`
//! (the Issuer or its Secret is missing or unusable: retried).

use turtles_controller::{
    api, export, info, json, meta, warn, ApiError, Controller, Gvr, ObjectKey, Outcome, Permission,
    Registration, Value, Watch,
};

use pki::GROUP;

const REQUESTS: Gvr<'static> = Gvr::new(GROUP, "v1", "certificaterequests");
const ISSUERS: Gvr<'static> = Gvr::new(GROUP, "v1", "issuers");

/// Lifetime of an issued certificate.
const DAYS: u32 = 90;
/// How soon to look again when the Issuer or its Secret is not there (or not usable) yet.
const PENDING_RETRY_MS: u32 = 5_000;

struct Issuer;

impl Controller for Issuer {
    fn register() -> Registration {
        Registration::new(Watch::of(REQUESTS))
            .permission(Permission::group(
                GROUP,
                &["certificaterequests/status"],
                &["patch"],
            ))
            .permission(Permission::group(GROUP, &["issuers"], &["get"]))
            .permission(Permission::core(&["secrets"], &["get"]))
    }

    fn reconcile(key: ObjectKey, object: Option<Value>) -> Outcome {
        let Some(request) = object else {
            return Outcome::Done;
        };
        if meta::is_deleting(&request) || is_finished(&request) {
            return Outcome::Done;
        }
        let issuer_ref = &request["spec"]["issuerRef"];
        let kind = issuer_ref["kind"].as_str().unwrap_or("Issuer");
        let group = issuer_ref["group"].as_str().unwrap_or(GROUP);
        if kind != "Issuer" || group != GROUP {
            return Outcome::Done; // another issuer's request
        }
        let issuer = issuer_ref["name"].as_str().unwrap_or("");
        let result = match sign(&key, &request, issuer) {
            Ok(chain_and_ca) => issued(&key, &request, issuer, chain_and_ca),
            Err(Problem::Api(e)) => return e.into(),
            Err(Problem::Pending(why)) => set_status(
                &key,
                &request,
                None,
                ("False", "Pending", &why),
                Outcome::RequeueAfter(PENDING_RETRY_MS),
            ),
            Err(Problem::Failed(why)) => {
                warn!("{}: {why}", key.display());
                set_status(
                    &key,
                    &request,
                    None,
                    ("False", "Failed", &why),
                    Outcome::Done,
                )
            }
        };
        // A failed status write is retried (if the request is gone by then, the retry sees `None`).
        result.unwrap_or_else(Outcome::from)
    }
}

export!(Issuer);

enum Problem {
    /// An API call failed: retried with backoff.
    Api(ApiError),
    /// The Issuer or its CA is missing or unusable for now: retried a bit later.
    Pending(String),
    /// The request itself cannot be signed: final.
    Failed(String),
}

impl From<ApiError> for Problem {
    fn from(e: ApiError) -> Self {
        Problem::Api(e)
    }
}

/// Already issued, or already failed for good.
fn is_finished(request: &Value) -> bool {
    let has_cert = request["status"]["certificate"]
        .as_str()
        .is_some_and(|c| !c.is_empty());
    has_cert
        || pki::condition(request, "Ready")
            .is_some_and(|c| c["status"] == "False" && c["reason"] == "Failed")
}

/// GET an object; a 404 becomes `Pending(what is missing)`.
fn get(path: &str, what: &str) -> Result<Value, Problem> {
    match api::get(path) {
        Ok(v) => Ok(v),
        Err(e) if e.is_not_found() => Err(Problem::Pending(format!("{what} not found"))),
        Err(e) => Err(e.into()),
    }
}

/// Sign the request's CSR with the Issuer's CA: the PEM chain (leaf, CA) and the CA's PEM.
fn sign(key: &ObjectKey, request: &Value, issuer: &str) -> Result<(String, String), Problem> {
    let ns = key.namespace.as_str();
    if issuer.is_empty() {
        return Err(Problem::Failed("spec.issuerRef.name is empty".into()));
    }
    let issuer_obj = get(
        &ISSUERS.object_path(ns, issuer),
        &format!("Issuer {issuer}"),
    )?;
    let Some(secret_name) = issuer_obj["spec"]["ca"]["secretName"]
        .as_str()
        .filter(|s| !s.is_empty())
    else {
        return Err(Problem::Pending(format!(
            "Issuer {issuer} has no spec.ca.secretName (only CA issuers are supported)"
        )));
    };
    let secret = get(
        &Gvr::SECRETS.object_path(ns, secret_name),
        &format!("CA Secret {secret_name} of Issuer {issuer}"),
    )?;
    let field = |name: &str| pki::b64_field(&secret, &format!("/data/{name}"));
    let (Some(ca_crt), Some(ca_key)) = (field("tls.crt"), field("tls.key")) else {
        return Err(Problem::Pending(format!(
            "CA Secret {secret_name} has no tls.crt and tls.key"
        )));
    };
    let ca = pki::Ca::new(&ca_crt, &ca_key)
        .map_err(|e| Problem::Pending(format!("CA Secret {secret_name}: {e}")))?;

    let csr = pki::b64_field(request, "/spec/request")
        .ok_or_else(|| Problem::Failed("spec.request is not base64 PEM".into()))?;
    let csr = pki::parse_csr(&csr).map_err(|e| Problem::Failed(e.0))?;
    let template = pki::Template {
        duration_secs: u64::from(DAYS) * 86_400,
        is_ca: false,
        usages: vec![
            "digital signature".into(),
            "key encipherment".into(),
            "server auth".into(),
        ],
    };
    let leaf = ca
        .issue(&csr, &template)
        .map_err(|e| Problem::Failed(format!("cannot issue: {e}")))?;
    let leaf = pki::cert_pem(&leaf).map_err(|e| Problem::Failed(e.0))?;
    info!(
        "{}: issued a certificate for {} with Issuer {issuer}",
        key.display(),
        csr.names.dns.join(",")
    );
    Ok((format!("{leaf}{}", ca.cert_pem()), ca.cert_pem().to_owned()))
}

fn issued(
    key: &ObjectKey,
    request: &Value,
    issuer: &str,
    (chain, ca): (String, String),
) -> Result<Outcome, ApiError> {
    let fields =
        json!({ "certificate": pki::b64(chain.as_bytes()), "ca": pki::b64(ca.as_bytes()) });
    let message = format!("Certificate fetched from Issuer {issuer}");
    set_status(
        key,
        request,
        Some(fields),
        ("True", "Issued", &message),
        Outcome::Done,
    )
}

/// Merge-patch the request's status (extra fields and the Ready condition) unless nothing
/// would change; then `outcome`.
fn set_status(
    key: &ObjectKey,
    request: &Value,
    fields: Option<Value>,
    (status, reason, message): (&str, &str, &str),
    outcome: Outcome,
) -> Result<Outcome, ApiError> {
    if fields.is_none() && pki::condition_is(request, "Ready", status, reason, message) {
        return Ok(outcome);
    }
    let mut patch = json!({
        "status": { "conditions": pki::with_condition(request, "Ready", status, reason, message) },
    });
    if let Some(Value::Object(fields)) = fields {
        for (k, v) in fields {
            patch["status"][k] = v;
        }
    }
    let path = format!("{}/status", REQUESTS.object_path(&key.namespace, &key.name));
    api::patch_merge(&path, &patch)?;
    Ok(outcome)
}
