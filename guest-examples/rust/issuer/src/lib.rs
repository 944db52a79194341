//! `issuer`: signs cert-manager-shaped `CertificateRequest`s with a CA or SelfSigned `Issuer` or
//! `ClusterIssuer`.
//!
//! For a CertificateRequest whose `spec.issuerRef` names an `Issuer` in its namespace or a
//! `ClusterIssuer` (group `cert-manager.io`; other groups and kinds are other issuers' business),
//! it verifies the CSR's signature and issues a certificate as the request's `duration`,
//! `isCA` and `usages` say:
//! - `ca`: signed with the CA key pair in the `kubernetes.io/tls` Secret `spec.ca.secretName`
//!   (the Issuer's namespace, or [`pki::CLUSTER_RESOURCE_NAMESPACE`] for a ClusterIssuer), never
//!   valid past the CA; the chain (leaf, CA) goes to `status.certificate`, the CA to `status.ca`.
//! - `selfSigned`: signed with the request's own private key, read from the Secret named by the
//!   request's annotation `cert-manager.io/private-key-secret-name`; `status.ca` is the
//!   certificate itself.
//!
//! A request it cannot sign gets `Ready=False` with reason `Failed` (a bad CSR or spec: final) or
//! `Pending` (the issuer or its Secret is missing or unusable: retried).

use turtles_controller::{
    api, export, info, json, meta, warn, ApiError, Controller, Gvr, Object, ObjectKey, Outcome,
    Permission, Registration, Value, Watch,
};

use pki::{IssuerKind, IssuerRef, GROUP};

const REQUESTS: Gvr<'static> = Gvr::new(GROUP, "v1", "certificaterequests");

/// How soon to look again when the issuer or its Secret is not there (or not usable) yet.
const PENDING_RETRY_MS: u32 = 5_000;
/// The annotation naming the Secret with the private key (SelfSigned issuers sign with it).
const PRIVATE_KEY_ANNOTATION: &str = "cert-manager.io/private-key-secret-name";

struct Issuer;

impl Controller for Issuer {
    fn register() -> Registration {
        Registration::new(Watch::of(REQUESTS))
            .permission(Permission::group(
                GROUP,
                &["certificaterequests/status"],
                &["patch"],
            ))
            .permission(Permission::group(
                GROUP,
                &["issuers", "clusterissuers"],
                &["get"],
            ))
            .permission(Permission::core(&["secrets"], &["get"]))
    }

    fn reconcile(key: ObjectKey, object: Option<Object>) -> Outcome {
        let Some(request) = object else {
            return Outcome::Done;
        };
        if meta::is_deleting(&request) || is_finished(&request) {
            return Outcome::Done;
        }
        let Some(issuer_ref) = IssuerRef::of(&request["spec"]["issuerRef"]) else {
            return Outcome::Done; // another issuer's request
        };
        let result = match sign(&key, &request, &issuer_ref) {
            Ok(chain_and_ca) => issued(&key, &request, &issuer_ref, chain_and_ca),
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
                let time = json!({ "failureTime": pki::rfc3339(pki::unix_now()) });
                set_status(
                    &key,
                    &request,
                    Some(time),
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
    /// The issuer or its Secret is missing or unusable for now: retried a bit later.
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

/// What the request asks of the certificate besides the CSR.
fn template(request: &Value) -> Result<pki::Template, Problem> {
    let spec = &request["spec"];
    let duration_secs = match spec["duration"].as_str() {
        Some(d) => {
            pki::parse_duration(d).map_err(|e| Problem::Failed(format!("spec.duration: {e}")))?
        }
        None => pki::DEFAULT_DURATION_SECS,
    };
    let usages = pki::strings(&spec["usages"]);
    Ok(pki::Template {
        duration_secs,
        is_ca: spec["isCA"] == true,
        usages,
    })
}

/// Sign the request's CSR as its issuer says: the PEM chain and the CA's PEM.
fn sign(
    key: &ObjectKey,
    request: &Value,
    issuer_ref: &IssuerRef,
) -> Result<(String, String), Problem> {
    let ns = key.namespace.as_str();
    let what = issuer_ref.describe();
    let issuer = get(&issuer_ref.path(ns), &what)?;
    let csr = pki::b64_field(request, "/spec/request")
        .ok_or_else(|| Problem::Failed("spec.request is not base64 PEM".into()))?;
    let csr = pki::parse_csr(&csr).map_err(|e| Problem::Failed(e.0))?;
    let template = template(request)?;
    let cannot = |e: pki::Error| Problem::Failed(format!("cannot issue: {e}"));
    let (chain, ca) = if issuer["spec"]["selfSigned"].is_object() {
        let Some(secret_name) =
            meta::annotation(request, PRIVATE_KEY_ANNOTATION).filter(|s| !s.is_empty())
        else {
            return Err(Problem::Failed(format!(
                "annotation {PRIVATE_KEY_ANNOTATION} missing or empty: {what} is SelfSigned and signs with the request's own private key"
            )));
        };
        let secret = get(
            &Gvr::SECRETS.object_path(ns, secret_name),
            &format!("private key Secret {secret_name}"),
        )?;
        let pem = pki::b64_field(&secret, "/data/tls.key")
            .ok_or_else(|| Problem::Pending(format!("Secret {secret_name} has no tls.key")))?;
        let private_key = pki::PrivateKey::from_pem(&pem)
            .map_err(|e| Problem::Pending(format!("Secret {secret_name}: {e}")))?;
        let cert = pki::self_sign(&csr, &template, &private_key).map_err(cannot)?;
        let pem = pki::cert_pem(&cert).map_err(|e| Problem::Failed(e.0))?;
        (pem.clone(), pem)
    } else {
        let secret_ns = match issuer_ref.kind {
            IssuerKind::Issuer => ns,
            IssuerKind::ClusterIssuer => pki::CLUSTER_RESOURCE_NAMESPACE,
        };
        let ca = pki::load_ca(&issuer, secret_ns).map_err(|e| match e {
            pki::CaError::Api(e) => Problem::Api(e),
            other => Problem::Pending(format!("{what}: {other}")),
        })?;
        let leaf = ca.issue(&csr, &template).map_err(cannot)?;
        let leaf = pki::cert_pem(&leaf).map_err(|e| Problem::Failed(e.0))?;
        (format!("{leaf}{}", ca.cert_pem()), ca.cert_pem().to_owned())
    };
    info!("{}: issued a certificate with {what}", key.display());
    Ok((chain, ca))
}

fn issued(
    key: &ObjectKey,
    request: &Value,
    issuer_ref: &IssuerRef,
    (chain, ca): (String, String),
) -> Result<Outcome, ApiError> {
    let fields =
        json!({ "certificate": pki::b64(chain.as_bytes()), "ca": pki::b64(ca.as_bytes()) });
    let message = format!(
        "Certificate fetched from issuer successfully ({})",
        issuer_ref.describe()
    );
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
