//! kube-controller-manager's `csrsigning` controller for the two signers whose certificates
//! this host's API accepts: `kubernetes.io/kube-apiserver-client` and
//! `kubernetes.io/kube-apiserver-client-kubelet`. An approved CertificateSigningRequest of
//! either (not denied, not failed, no certificate yet) gets a certificate from the host's CA
//! (`DATA/pki/ca.{crt,key}`) in `status.certificate`; one the signer will not sign (usages, or a
//! kubelet subject) gets kube's `Failed` condition with reason `SignerValidationFailure`. Both go
//! through `/status`, as kube's signer writes them.
//!
//! The signer runs only while the host verifies client certificates with its own CA (no
//! `--client-ca-file`, and TLS on): a certificate it issues is one the host accepts.

use std::sync::Arc;
use std::time::Duration;

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use serde_json::{json, Value};

use super::{Follower, Observed, Reconciled};
use crate::auth::csr::KUBE_APISERVER_CLIENT;
use crate::auth::signer::{parse_request, Authority, Issue, Request};
use crate::builtin::csr;
use crate::model::{meta, ObjectKey, ResourceInfo};
use crate::service::{Service, Subresource};

pub const IDENTITY: super::Identity = super::Identity {
    name: "csrsigning-controller",
    description: "Issues certificates from the host's CA for approved CertificateSigningRequests of kubernetes.io/kube-apiserver-client and kubernetes.io/kube-apiserver-client-kubelet.",
    workers: 1,
};
pub const KUBE_APISERVER_CLIENT_KUBELET: &str = "kubernetes.io/kube-apiserver-client-kubelet";
/// kube-controller-manager's `--cluster-signing-duration` default: a year.
pub const SIGNING_DURATION: Duration = Duration::from_secs(365 * 24 * 3600);

pub struct CsrSigningController {
    base: super::Base<String>,
    authority: Arc<Authority>,
}

/// Whether this controller acts on `csr` now.
fn to_sign(csr: &Value) -> bool {
    matches!(
        csr::signer_name(csr),
        KUBE_APISERVER_CLIENT | KUBE_APISERVER_CLIENT_KUBELET
    ) && csr::approved(csr)
        && !csr::failed(csr)
        && csr::certificate(csr).is_empty()
}

/// kube's `duration(certTTL, expirationSeconds)`: the signer's lifetime, shortened to what the
/// request asks (never under 10 minutes).
fn lifetime(csr: &Value) -> Duration {
    match csr
        .pointer("/spec/expirationSeconds")
        .and_then(Value::as_i64)
    {
        None => SIGNING_DURATION,
        Some(s) => {
            let asked = Duration::from_secs(u64::try_from(s.max(600)).unwrap_or(600));
            asked.min(SIGNING_DURATION)
        }
    }
}

/// kube's `validAPIServerClientUsages`.
fn client_usages(usages: &[String]) -> Result<(), String> {
    for u in usages {
        if !matches!(
            u.as_str(),
            "digital signature" | "key encipherment" | "client auth"
        ) {
            return Err(format!("invalid usage for client certificate: {u}"));
        }
    }
    if !usages.iter().any(|u| u == "client auth") {
        return Err("missing required usage for client certificate: client auth".into());
    }
    Ok(())
}

/// kube's `ValidateKubeletClientCSR`.
fn kubelet_client(req: &Request, usages: &[String]) -> Result<(), String> {
    if req.organizations() != ["system:nodes"] {
        return Err("subject organization is not system:nodes".into());
    }
    let alt = req.alt_names();
    if !alt.dns.is_empty() {
        return Err("DNS subjectAltNames are not allowed".into());
    }
    if !alt.email.is_empty() {
        return Err("Email subjectAltNames are not allowed".into());
    }
    if !alt.ip.is_empty() {
        return Err("IP subjectAltNames are not allowed".into());
    }
    if !alt.uri.is_empty() {
        return Err("URI subjectAltNames are not allowed".into());
    }
    if !req
        .common_name()
        .is_some_and(|cn| cn.starts_with("system:node:"))
    {
        return Err("subject common name does not begin with system:node:".into());
    }
    let mut set: Vec<&str> = usages.iter().map(String::as_str).collect();
    set.sort_unstable();
    set.dedup();
    let full = ["client auth", "digital signature", "key encipherment"];
    let short = ["client auth", "digital signature"];
    if set != full && set != short {
        return Err(format!("usages did not match [{}]", full.join(" ")));
    }
    Ok(())
}

impl CsrSigningController {
    pub fn new(service: Arc<Service>, authority: Arc<Authority>) -> Arc<Self> {
        Arc::new(Self {
            base: super::Base::new(service),
            authority,
        })
    }

    pub fn start(
        self: &Arc<Self>,
        shutdown: tokio::sync::watch::Receiver<bool>,
    ) -> crate::runtime::driver::MetricsSource {
        self.base.start(&IDENTITY, self.clone(), shutdown)
    }

    async fn reconcile(&self, name: &str) -> Reconciled {
        let svc = &self.base.service;
        let Some(ri) = svc.registry.lookup(csr::GROUP, "v1", csr::RESOURCE) else {
            return Ok(None);
        };
        let Some(current) = svc
            .store
            .get(&ObjectKey::new(&ri.group_resource(), "", name))
        else {
            return Ok(None);
        };
        let obj = current.value();
        if !to_sign(obj) {
            return Ok(None);
        }
        let request = parse_request(&csr::request(obj)).map_err(|e| {
            super::ControllerError::Signing(format!("unable to parse csr {name:?}: {e}"))
        })?;
        let usages = csr::usages(obj);
        let verdict = match csr::signer_name(obj) {
            KUBE_APISERVER_CLIENT_KUBELET => kubelet_client(&request, &usages),
            _ => client_usages(&usages),
        };
        let mut v = obj.clone();
        let Some(status) = v
            .as_object_mut()
            .map(|o| o.entry("status").or_insert_with(|| json!({})))
            .and_then(Value::as_object_mut)
        else {
            return Ok(None);
        };
        match verdict {
            Err(why) => {
                let list = status.entry("conditions").or_insert_with(|| json!([]));
                if let Some(l) = list.as_array_mut() {
                    l.push(json!({
                        "type": csr::FAILED,
                        "status": "True",
                        "reason": "SignerValidationFailure",
                        "message": why,
                        "lastUpdateTime": meta::now_rfc3339(),
                    }));
                }
            }
            Ok(()) => {
                let pem = self
                    .authority
                    .sign(&Issue {
                        request: &request,
                        usages: &usages,
                        ttl: lifetime(obj),
                        now: chrono::Utc::now().timestamp(),
                    })
                    .map_err(|e| super::ControllerError::Signing(e.to_string()))?;
                status.insert("certificate".into(), json!(B64.encode(pem)));
            }
        }
        super::write_back(svc, &ri, "", name, v, Subresource::Status).await?;
        Ok(None)
    }
}

impl super::Reconcile<String> for CsrSigningController {
    fn reconcile_key(&self, name: &String) -> impl std::future::Future<Output = Reconciled> + Send {
        self.reconcile(name)
    }
}

impl Follower for CsrSigningController {
    fn observe(
        &self,
        ri: &ResourceInfo,
        obj: &crate::store::StoredObject,
        _prev: Option<&crate::store::StoredObject>,
        how: Observed,
    ) {
        if !csr::is_csrs(ri) || how == Observed::Deleted {
            return;
        }
        if to_sign(obj.value()) {
            self.base.queue.add(meta::name(obj.head()).to_owned());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn client_usages_are_kubes() {
        assert!(client_usages(&s(&["client auth"])).is_ok());
        assert!(client_usages(&s(&[
            "digital signature",
            "key encipherment",
            "client auth"
        ]))
        .is_ok());
        assert_eq!(
            client_usages(&s(&["client auth", "server auth"])).unwrap_err(),
            "invalid usage for client certificate: server auth"
        );
        assert_eq!(
            client_usages(&s(&["digital signature"])).unwrap_err(),
            "missing required usage for client certificate: client auth"
        );
    }

    #[test]
    fn the_lifetime_is_the_signers_shortened_to_what_is_asked() {
        assert_eq!(lifetime(&json!({"spec": {}})), SIGNING_DURATION);
        assert_eq!(
            lifetime(&json!({"spec": {"expirationSeconds": 3600}})),
            Duration::from_secs(3600)
        );
        assert_eq!(
            lifetime(&json!({"spec": {"expirationSeconds": 60}})),
            Duration::from_secs(600)
        );
        assert_eq!(
            lifetime(&json!({"spec": {"expirationSeconds": 10_i64.pow(12)}})),
            SIGNING_DURATION
        );
    }

    #[test]
    fn only_approved_unfailed_unissued_requests_of_these_signers_are_signed() {
        let approved = json!({"spec": {"signerName": KUBE_APISERVER_CLIENT},
            "status": {"conditions": [{"type": "Approved", "status": "True"}]}});
        assert!(to_sign(&approved));
        let mut other = approved.clone();
        other["spec"]["signerName"] = json!("example.com/x");
        assert!(!to_sign(&other));
        let mut denied = approved.clone();
        denied["status"]["conditions"]
            .as_array_mut()
            .unwrap()
            .push(json!({"type": "Denied", "status": "True"}));
        assert!(!to_sign(&denied));
        let mut failed = approved.clone();
        failed["status"]["conditions"]
            .as_array_mut()
            .unwrap()
            .push(json!({"type": "Failed", "status": "True"}));
        assert!(!to_sign(&failed));
        let mut issued = approved.clone();
        issued["status"]["certificate"] = json!(B64.encode("x"));
        assert!(!to_sign(&issued));
        assert!(!to_sign(
            &json!({"spec": {"signerName": KUBE_APISERVER_CLIENT}, "status": {}})
        ));
    }
}
