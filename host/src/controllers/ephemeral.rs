//! kube-controller-manager's `ephemeral-volume-controller`: a Pod's generic ephemeral volume
//! (`spec.volumes[].ephemeral.volumeClaimTemplate`) gets its PersistentVolumeClaim `POD-VOLUME`,
//! made from the template (its labels, annotations and spec) and owned by the Pod (controller,
//! `blockOwnerDeletion`), so that the garbage collector deletes it with the Pod. The claim is
//! created as kube's controller account, through admission and the namespace's ResourceQuota; a
//! refused create is retried with backoff. A claim of that name that the Pod does not own is left
//! alone (the scheduler then refuses the Pod). Both record kube's Event `FailedBinding` on the
//! Pod.

use std::sync::Arc;

use serde_json::{json, Value};

use super::{terminating, uid, Follower, Observed, Reconciled};
use crate::model::{meta, ObjectKey, ResourceInfo};
use crate::service::{Service, WriteOptions};

pub const IDENTITY: super::Identity = super::Identity {
    name: "ephemeral-volume",
    description: "Creates the PersistentVolumeClaim of every generic ephemeral volume of a Pod, owned by the Pod.",
    workers: 2,
};
const PODS: &str = "pods";
const CLAIMS: &str = "persistentvolumeclaims";

fn ephemeral_volumes(pod: &Value) -> impl Iterator<Item = (&str, &Value)> {
    pod.pointer("/spec/volumes")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|v| {
            let template = v.pointer("/ephemeral/volumeClaimTemplate")?;
            Some((v.get("name")?.as_str()?, template))
        })
}

/// The claim of one ephemeral volume, as kube's `handleVolume` makes it.
fn claim_for(pod: &Value, volume: &str, template: &Value) -> Value {
    let (ns, name) = (meta::namespace(pod), meta::name(pod));
    let mut metadata = json!({
        "name": format!("{name}-{volume}"),
        "namespace": ns,
        "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": name, "uid": uid(pod),
            "controller": true, "blockOwnerDeletion": true}],
    });
    for field in ["labels", "annotations"] {
        if let Some(m) = template
            .pointer(&format!("/metadata/{field}"))
            .filter(|m| m.is_object())
        {
            metadata[field] = m.clone();
        }
    }
    json!({
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": metadata,
        "spec": template.get("spec").cloned().unwrap_or_else(|| json!({})),
    })
}

/// Who the claims are created as: kube's controller service account.
fn identity() -> crate::auth::rbac::UserInfo {
    super::service_account_user("ephemeral-volume-controller")
}

/// Keys are `(namespace, pod)`.
pub struct EphemeralVolumeController {
    base: super::Base<(String, String)>,
}

impl EphemeralVolumeController {
    pub fn new(service: Arc<Service>) -> Arc<Self> {
        Arc::new(Self {
            base: super::Base::new(service),
        })
    }

    pub fn start(
        self: &Arc<Self>,
        shutdown: tokio::sync::watch::Receiver<bool>,
    ) -> crate::runtime::driver::MetricsSource {
        self.base.start(&IDENTITY, self.clone(), shutdown)
    }

    async fn reconcile(&self, ns: &str, name: &str) -> Reconciled {
        let svc = &self.base.service;
        let (Some(pods), Some(claims)) = (
            svc.registry.lookup("", "v1", PODS),
            svc.registry.lookup("", "v1", CLAIMS),
        ) else {
            return Ok(None);
        };
        let Ok(current) = svc.get(&pods, ns, name) else {
            return Ok(None);
        };
        let pod = current.parse();
        if terminating(&*pod) {
            return Ok(None);
        }
        for (volume, template) in ephemeral_volumes(&pod) {
            let claim_name = format!("{name}-{volume}");
            if let Some(existing) = svc.store.get(&ObjectKey::new(CLAIMS, ns, &claim_name)) {
                let owned = existing
                    .parse()
                    .pointer("/metadata/ownerReferences")
                    .and_then(Value::as_array)
                    .is_some_and(|refs| {
                        refs.iter()
                            .any(|r| r["controller"] == true && r["uid"] == uid(&*pod))
                    });
                if !owned {
                    // As kube: the first volume that fails ends the sync (and is retried).
                    let why = format!("PVC {ns}/{claim_name} was not created for pod {ns}/{name} (pod is not owner)");
                    let note = format!("ephemeral volume {volume}: {why}");
                    tracing::warn!(pod = %format!("{ns}/{name}"), volume, "{note}");
                    super::events::record(svc, IDENTITY.name, &pod, true, "FailedBinding", &note)
                        .await;
                    return Err(super::ControllerError::NotOwner(why));
                }
                continue;
            }
            let claim = claim_for(&pod, volume, template);
            // As kube's controller, a client of the API: the claim passes admission and the
            // namespace's quota (a tenant's Pods cannot make claims beyond it).
            let opts = WriteOptions {
                user: Some(identity()),
                ..WriteOptions::default()
            };
            match svc.create(&claims, ns, claim, &opts).await {
                Ok(_) => {}
                // Made meanwhile; its event brings the Pod back.
                Err(e) if e.code == 409 => {}
                // The namespace is going: nothing more to make there.
                Err(_) if !super::namespace_active(svc, ns) => return Ok(None),
                Err(e) => {
                    let note = format!(
                        "ephemeral volume {volume}: create PVC {claim_name}: {}",
                        e.message
                    );
                    tracing::warn!(pod = %format!("{ns}/{name}"), volume, "{note}");
                    super::events::record(svc, IDENTITY.name, &pod, true, "FailedBinding", &note)
                        .await;
                    return Err(e.into());
                }
            }
        }
        Ok(None)
    }
}

impl super::Reconcile<(String, String)> for EphemeralVolumeController {
    fn reconcile_key(
        &self,
        key: &(String, String),
    ) -> impl std::future::Future<Output = Reconciled> + Send {
        self.reconcile(&key.0, &key.1)
    }
}

impl Follower for EphemeralVolumeController {
    fn observe(
        &self,
        ri: &ResourceInfo,
        obj: &crate::store::StoredObject,
        _prev: Option<&crate::store::StoredObject>,
        how: Observed,
    ) {
        if !ri.group.is_empty() {
            return;
        }
        let v = obj.head();
        match (ri.resource.as_str(), how) {
            (PODS, Observed::Deleted) => {}
            (PODS, _) => {
                if terminating(v) {
                    return;
                }
                // Only the volumes, not the whole Pod at each of its changes.
                let pod = json!({"spec": obj.pick("spec", &["volumes"])});
                if ephemeral_volumes(&pod).next().is_some() {
                    self.base
                        .queue
                        .add((meta::namespace(v).to_owned(), meta::name(v).to_owned()));
                }
            }
            // A claim gone: its Pod, if it still runs, gets it back.
            (CLAIMS, Observed::Deleted) => {
                let claim = obj.parse();
                let owner = claim
                    .pointer("/metadata/ownerReferences")
                    .and_then(Value::as_array)
                    .and_then(|refs| {
                        refs.iter()
                            .find(|r| r["controller"] == true && r["kind"] == "Pod")
                    })
                    .and_then(|r| r["name"].as_str());
                if let Some(pod) = owner {
                    self.base
                        .queue
                        .add((meta::namespace(v).to_owned(), pod.to_owned()));
                }
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_ephemeral_claim_is_the_template_owned_by_its_pod() {
        let pod = json!({"metadata": {"name": "web", "namespace": "ns", "uid": "u1"},
            "spec": {"volumes": [
                {"name": "cache", "emptyDir": {}},
                {"name": "scratch", "ephemeral": {"volumeClaimTemplate": {
                    "metadata": {"labels": {"a": "b"}},
                    "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}}}]}});
        let vols: Vec<_> = ephemeral_volumes(&pod).collect();
        assert_eq!(vols.len(), 1);
        let claim = claim_for(&pod, vols[0].0, vols[0].1);
        assert_eq!(claim["metadata"]["name"], "web-scratch");
        assert_eq!(claim["metadata"]["labels"], json!({"a": "b"}));
        assert_eq!(claim["metadata"]["ownerReferences"][0]["uid"], "u1");
        assert_eq!(
            claim["metadata"]["ownerReferences"][0]["blockOwnerDeletion"],
            true
        );
        assert_eq!(claim["spec"]["resources"]["requests"]["storage"], "1Gi");
    }
}
