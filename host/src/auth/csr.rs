//! Who may approve, sign and request what, for CertificateSigningRequests: kube-apiserver's
//! admission plugins `CertificateApproval`, `CertificateSigning` and
//! `CertificateSubjectRestriction` (`plugin/pkg/admission/certificates`).
//!
//! * An update through `/approval` needs the verb `approve` on `signers` in
//!   `certificates.k8s.io`, named by the request's signer (`example.com/my-signer`) or its
//!   domain (`example.com/*`).
//! * An update through `/status` that changes the certificate or the conditions needs `sign`
//!   the same way.
//! * A request for `kubernetes.io/kube-apiserver-client` may not ask for the group
//!   `system:masters`.
//!
//! Refusals are 403 Forbidden with kube's messages. The host's own writes (its signer) carry no
//! guard.

use std::sync::Arc;

use serde_json::Value;

use super::rbac::{go_quote, Attributes, UserInfo};
use super::Authorizer;
use crate::builtin::csr;
use crate::model::{meta, ApiError, ResourceInfo};
use crate::service::{Subresource, WriteGuard};

/// The signer whose client certificates the API server accepts.
pub const KUBE_APISERVER_CLIENT: &str = "kubernetes.io/kube-apiserver-client";

struct CsrGuard {
    authz: Arc<Authorizer>,
    user: Option<UserInfo>,
    sub: Subresource,
}

impl std::fmt::Debug for CsrGuard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CsrGuard")
            .field("user", &self.user)
            .field("sub", &self.sub)
            .finish_non_exhaustive()
    }
}

/// The guard for a write of a CertificateSigningRequest through `sub` (none for other kinds).
pub fn guard(
    authz: &Arc<Authorizer>,
    ri: &ResourceInfo,
    user: Option<UserInfo>,
    sub: Subresource,
) -> Option<Arc<dyn WriteGuard>> {
    csr::is_csrs(ri).then(|| {
        Arc::new(CsrGuard {
            authz: authz.clone(),
            user,
            sub,
        }) as Arc<dyn WriteGuard>
    })
}

/// kube's `IsAuthorizedForSignerName`: `verb` on the signer by name, or on its domain's `/*`.
pub fn authorized_for_signer(
    authz: &Authorizer,
    user: &UserInfo,
    verb: &str,
    signer: &str,
) -> bool {
    let on = |name: &str| {
        let attrs = Attributes::resource(verb, csr::GROUP, "signers", "", name);
        authz.authorize(user, &attrs).is_allowed()
    };
    if on(signer) {
        return true;
    }
    let domain = signer.split('/').next().unwrap_or("");
    on(&format!("{domain}/*"))
}

fn forbidden(ri: &ResourceInfo, name: &str, why: &str) -> ApiError {
    ApiError::forbidden(format!(
        "{}.{} {} is forbidden: {why}",
        ri.resource,
        ri.group,
        go_quote(name)
    ))
    .with_details(&ri.group, &ri.resource, name)
}

impl WriteGuard for CsrGuard {
    /// kube's certificate plugins are validating admission: they see what mutation changed.
    fn after_admission(&self) -> bool {
        true
    }

    fn check(
        &self,
        ri: &ResourceInfo,
        _ns: &str,
        old: Option<&Value>,
        new: &Value,
    ) -> Result<(), ApiError> {
        let Some(user) = &self.user else {
            return Ok(());
        };
        let name = meta::name(new);
        let Some(old) = old else {
            // CertificateSubjectRestriction (create only).
            if csr::signer_name(new) != KUBE_APISERVER_CLIENT {
                return Ok(());
            }
            // (A request that does not parse was refused by validation, 422, before this.)
            return match crate::auth::signer::parse_request(&csr::request(new)) {
                Err(_) => Ok(()),
                Ok(req) if req.organizations().iter().any(|o| o == super::MASTERS) => {
                    Err(forbidden(
                        ri,
                        name,
                        &format!(
                            "use of {KUBE_APISERVER_CLIENT} signer with {} group is not allowed",
                            super::MASTERS
                        ),
                    ))
                }
                Ok(_) => Ok(()),
            };
        };
        let signer = csr::signer_name(old);
        match self.sub {
            Subresource::Approval => {
                if !authorized_for_signer(&self.authz, user, "approve", signer) {
                    return Err(forbidden(
                        ri,
                        name,
                        &format!(
                            "user not permitted to approve requests with signerName {}",
                            go_quote(signer)
                        ),
                    ));
                }
            }
            Subresource::Status => {
                let unchanged = csr::certificate(old) == csr::certificate(new)
                    && old.pointer("/status/conditions") == new.pointer("/status/conditions");
                if !unchanged && !authorized_for_signer(&self.authz, user, "sign", signer) {
                    return Err(forbidden(
                        ri,
                        name,
                        &format!(
                            "user not permitted to sign requests with signerName {}",
                            go_quote(signer)
                        ),
                    ));
                }
            }
            Subresource::Main
            | Subresource::Scale
            | Subresource::Finalize
            | Subresource::EphemeralContainers
            | Subresource::Resize => {}
        }
        Ok(())
    }
}
