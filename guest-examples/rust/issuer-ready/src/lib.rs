//! `issuer-ready`: keeps the `Ready` condition of cert-manager-shaped `Issuer`s and
//! `ClusterIssuer`s, as cert-manager's issuers controllers do.
//!
//! A `selfSigned` issuer is always ready (reason `IsReady`). A `ca` issuer is ready when its
//! Secret (`spec.ca.secretName`, in the Issuer's namespace, or in
//! [`pki::CLUSTER_RESOURCE_NAMESPACE`] for a ClusterIssuer) holds a CA certificate and its
//! private key, which match and have not expired (`KeyPairVerified`); otherwise `Ready=False`
//! with reason `ErrGetKeyPair` (no such Secret) or `ErrInvalidKeyPair` (anything else), and a
//! message saying what is wrong. Issuers own nothing whose events could bring it back, so it
//! looks again every few seconds while not ready, and every minute when ready.
//!
//! ClusterIssuers are a second watch mapped to their own key: a key with no namespace is a
//! ClusterIssuer (Issuers always have one).

use turtles_controller::{
    api, cache, export, json, meta, ApiError, Controller, Gvr, Object, ObjectKey, Outcome,
    Permission, Registration, Value, Watch,
};

use pki::{CaError, CLUSTER_ISSUERS, GROUP, ISSUERS};

/// How soon to look again at an issuer that is not ready, and at one that is.
const NOT_READY_RECHECK_MS: u32 = 5_000;
const READY_RECHECK_MS: u32 = 60_000;

struct IssuerReady;

impl Controller for IssuerReady {
    fn register() -> Registration {
        Registration::new(Watch::of(ISSUERS))
            .watch(Watch::of(CLUSTER_ISSUERS))
            .permission(Permission::group(
                GROUP,
                &["issuers/status", "clusterissuers/status"],
                &["patch"],
            ))
            .permission(Permission::core(&["secrets"], &["get"]))
    }

    fn reconcile(key: ObjectKey, object: Option<Object>) -> Outcome {
        let (gvr, secret_ns, issuer) = if key.namespace.is_empty() {
            let issuer = cache::get(CLUSTER_ISSUERS, "", &key.name);
            (CLUSTER_ISSUERS, pki::CLUSTER_RESOURCE_NAMESPACE, issuer)
        } else {
            (
                ISSUERS,
                key.namespace.as_str(),
                object.map(Object::into_value),
            )
        };
        let Some(issuer) = issuer else {
            return Outcome::Done;
        };
        if meta::is_deleting(&issuer) {
            return Outcome::Done;
        }
        let (status, reason, message) = if issuer["spec"]["selfSigned"].is_object() {
            ("True", "IsReady", String::new())
        } else {
            match pki::load_ca(&issuer, secret_ns) {
                Ok(_) => ("True", "KeyPairVerified", "Signing CA verified".to_owned()),
                Err(CaError::Api(e)) => return e.into(),
                Err(CaError::GetKeyPair(m)) => ("False", "ErrGetKeyPair", m),
                Err(CaError::InvalidKeyPair(m)) => ("False", "ErrInvalidKeyPair", m),
            }
        };
        let recheck = if status == "True" {
            READY_RECHECK_MS
        } else {
            NOT_READY_RECHECK_MS
        };
        match set_ready(gvr, &key, &issuer, status, reason, &message) {
            Ok(()) => Outcome::RequeueAfter(recheck),
            Err(e) => e.into(),
        }
    }
}

export!(IssuerReady);

fn set_ready(
    gvr: Gvr<'_>,
    key: &ObjectKey,
    issuer: &Value,
    status: &str,
    reason: &str,
    message: &str,
) -> Result<(), ApiError> {
    if pki::condition_is(issuer, "Ready", status, reason, message) {
        return Ok(());
    }
    let patch = json!({
        "status": { "conditions": pki::with_condition(issuer, "Ready", status, reason, message) },
    });
    let path = format!("{}/status", gvr.object_path(&key.namespace, &key.name));
    api::patch_merge(&path, &patch).map(|_| ())
}
