//! kube-controller-manager's `pvc-protection` and `pv-protection` controllers. The
//! `StorageObjectInUseProtection` admission plugin ([`crate::volume_admission`]) gives every new
//! PersistentVolumeClaim the finalizer `kubernetes.io/pvc-protection` and every new
//! PersistentVolume `kubernetes.io/pv-protection`; these controllers take it off once the object
//! is being deleted and nothing uses it, and put it on objects that lack it (stored before):
//! - a claim is in use while a Pod scheduled to a node names it in a `persistentVolumeClaim`
//!   volume (whatever the Pod's phase: until the Pod is deleted), or owns it as the claim of an
//!   `ephemeral` volume (`POD-VOLUME`) and is not shut down (deleted with grace period 0);
//! - a volume is in use while its phase is `Bound`.
//!
//! The Pods are read from the store, not a cache, so a Pod created a moment ago counts (kube
//! asks the API server when its informer finds none).

use std::sync::Arc;

use serde_json::{json, Value};

use super::{terminating, Follower, Observed, Reconciled};
use crate::model::{meta, ObjectKey, ResourceInfo};
use crate::service::{Service, Subresource};
use crate::volume_admission::{PVC_PROTECTION, PV_PROTECTION};

pub const PVC_IDENTITY: super::Identity = super::Identity {
    name: "pvc-protection",
    description: "Removes the finalizer kubernetes.io/pvc-protection from PersistentVolumeClaims being deleted once no Pod uses them.",
    workers: 2,
};
pub const PV_IDENTITY: super::Identity = super::Identity {
    name: "pv-protection",
    description: "Removes the finalizer kubernetes.io/pv-protection from PersistentVolumes being deleted once they are no longer Bound.",
    workers: 1,
};
const PODS: &str = "pods";
const CLAIMS: &str = "persistentvolumeclaims";
const VOLUMES: &str = "persistentvolumes";

fn has_finalizer(obj: &Value, finalizer: &str) -> bool {
    obj.pointer("/metadata/finalizers")
        .and_then(Value::as_array)
        .is_some_and(|f| f.iter().any(|x| x == finalizer))
}

/// `obj` with `finalizer` added or removed.
fn with_finalizer(obj: &Value, finalizer: &str, present: bool) -> Value {
    let mut v = obj.clone();
    if let Some(m) = v.get_mut("metadata").and_then(Value::as_object_mut) {
        let mut list: Vec<Value> = m
            .get("finalizers")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        list.retain(|f| f != finalizer);
        if present {
            list.push(json!(finalizer));
        }
        m.insert("finalizers".into(), Value::Array(list));
    }
    v
}

/// kube's `podIsShutDown`: deleted with grace period 0 (the kubelet is done with it, or it
/// was force-deleted).
fn shut_down(pod: &Value) -> bool {
    terminating(pod)
        && pod
            .pointer("/metadata/deletionGracePeriodSeconds")
            .and_then(Value::as_i64)
            == Some(0)
}

/// The claims a Pod's volumes name (its ephemeral volumes' `POD-VOLUME` included).
fn claims_of(pod: &Value) -> Vec<String> {
    let pod_name = meta::name(pod);
    pod.pointer("/spec/volumes")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|v| {
            if let Some(c) = v
                .pointer("/persistentVolumeClaim/claimName")
                .and_then(Value::as_str)
            {
                return Some(c.to_owned());
            }
            v.get("ephemeral").filter(|e| e.is_object())?;
            let name = v.get("name").and_then(Value::as_str)?;
            Some(format!("{pod_name}-{name}"))
        })
        .collect()
}

/// kube's `podUsesPVC`: only a scheduled Pod counts (the kubelet sees only those, and it does not
/// start a Pod whose claim is being deleted), whatever its phase: a finished Pod still holds its
/// claims until it is deleted. The claim of an ephemeral volume counts while the Pod owns it and
/// is not shut down.
fn pod_uses(pod: &Value, claim: &Value) -> bool {
    if pod
        .pointer("/spec/nodeName")
        .and_then(Value::as_str)
        .unwrap_or("")
        .is_empty()
    {
        return false;
    }
    let name = meta::name(claim);
    let pod_name = meta::name(pod);
    let claim_owner_is_pod = || {
        claim
            .pointer("/metadata/ownerReferences")
            .and_then(Value::as_array)
            .is_some_and(|refs| {
                refs.iter().any(|r| {
                    r["controller"] == true && r["kind"] == "Pod" && r["uid"] == super::uid(pod)
                })
            })
    };
    pod.pointer("/spec/volumes")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .any(|v| {
            if v.pointer("/persistentVolumeClaim/claimName")
                .and_then(Value::as_str)
                == Some(name)
            {
                return true;
            }
            !shut_down(pod)
                && v.get("ephemeral").is_some_and(Value::is_object)
                && v.get("name")
                    .and_then(Value::as_str)
                    .is_some_and(|vol| format!("{pod_name}-{vol}") == name)
                && claim_owner_is_pod()
        })
}

/// What this controller reads of a Pod (its claims, node and deletion), without parsing the
/// rest of it.
fn pod_view(pod: &crate::store::StoredObject) -> Value {
    json!({
        "metadata": pod.pick(
            "metadata",
            &["name", "namespace", "uid", "deletionTimestamp", "deletionGracePeriodSeconds"],
        ),
        "spec": pod.pick("spec", &["nodeName", "volumes"]),
    })
}

/// The claim protection controller; keys are `(namespace, claim)`.
pub struct ClaimProtection {
    base: super::Base<(String, String)>,
}

impl ClaimProtection {
    pub fn new(service: Arc<Service>) -> Arc<Self> {
        Arc::new(Self {
            base: super::Base::new(service),
        })
    }

    pub fn start(
        self: &Arc<Self>,
        shutdown: tokio::sync::watch::Receiver<bool>,
    ) -> crate::runtime::driver::MetricsSource {
        self.base.start(&PVC_IDENTITY, self.clone(), shutdown)
    }

    async fn reconcile(&self, ns: &str, name: &str) -> Reconciled {
        let svc = &self.base.service;
        let Some(ri) = svc.registry.lookup("", "v1", CLAIMS) else {
            return Ok(None);
        };
        let Ok(current) = svc.get(&ri, ns, name) else {
            return Ok(None);
        };
        let claim = current.parse();
        let has = has_finalizer(&claim, PVC_PROTECTION);
        if terminating(&*claim) {
            if !has {
                return Ok(None);
            }
            // Only what `pod_uses` reads of each Pod (no whole parse), yielding now and then:
            // a namespace of large Pods does not hold a worker.
            let mut used = false;
            for (i, p) in svc.stored_in(PODS, ns).iter().enumerate() {
                if i % 64 == 63 {
                    tokio::task::yield_now().await;
                }
                let spec = p.pick("spec", &["nodeName", "volumes"]);
                if spec["nodeName"].as_str().unwrap_or("").is_empty() {
                    continue;
                }
                let metadata = p.pick(
                    "metadata",
                    &[
                        "name",
                        "uid",
                        "deletionTimestamp",
                        "deletionGracePeriodSeconds",
                    ],
                );
                if pod_uses(&json!({"metadata": metadata, "spec": spec}), &claim) {
                    used = true;
                    break;
                }
            }
            if used {
                tracing::debug!(claim = %format!("{ns}/{name}"), "keeping a claim a pod uses");
                return Ok(None);
            }
            let v = with_finalizer(&claim, PVC_PROTECTION, false);
            super::write_back(svc, &ri, ns, name, v, Subresource::Main).await?;
            return Ok(None);
        }
        if !has {
            let v = with_finalizer(&claim, PVC_PROTECTION, true);
            super::write_back(svc, &ri, ns, name, v, Subresource::Main).await?;
        }
        Ok(None)
    }
}

impl super::Reconcile<(String, String)> for ClaimProtection {
    fn reconcile_key(
        &self,
        key: &(String, String),
    ) -> impl std::future::Future<Output = Reconciled> + Send {
        self.reconcile(&key.0, &key.1)
    }
}

impl Follower for ClaimProtection {
    fn observe(
        &self,
        ri: &ResourceInfo,
        obj: &crate::store::StoredObject,
        prev: Option<&crate::store::StoredObject>,
        how: Observed,
    ) {
        if !ri.group.is_empty() {
            return;
        }
        let v = obj.head();
        match ri.resource.as_str() {
            CLAIMS => {
                if how == Observed::Deleted {
                    return;
                }
                let needs = if terminating(v) {
                    has_finalizer(&obj.parse(), PVC_PROTECTION)
                } else {
                    !has_finalizer(&obj.parse(), PVC_PROTECTION)
                };
                if needs {
                    self.base
                        .queue
                        .add((meta::namespace(v).to_owned(), meta::name(v).to_owned()));
                }
            }
            PODS => {
                // A Pod gone, shut down or unscheduled now: the claims it held being deleted
                // may go.
                let pod = pod_view(obj);
                let scheduled = |p: &Value| {
                    !p.pointer("/spec/nodeName")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .is_empty()
                };
                let released = match how {
                    Observed::Deleted => true,
                    Observed::Modified => prev.is_some_and(|p| {
                        let before = pod_view(p);
                        (shut_down(&pod) && !shut_down(&before))
                            || (!scheduled(&pod) && scheduled(&before))
                    }),
                    _ => false,
                };
                if !released {
                    return;
                }
                let ns = meta::namespace(v);
                let svc = &self.base.service;
                for claim in claims_of(&pod) {
                    let deleting = svc
                        .store
                        .get(&ObjectKey::new(CLAIMS, ns, &claim))
                        .is_some_and(|c| terminating(c.head()));
                    if deleting {
                        self.base.queue.add((ns.to_owned(), claim));
                    }
                }
            }
            _ => {}
        }
    }
}

/// The volume protection controller; keys are volume names.
pub struct VolumeProtection {
    base: super::Base<String>,
}

impl VolumeProtection {
    pub fn new(service: Arc<Service>) -> Arc<Self> {
        Arc::new(Self {
            base: super::Base::new(service),
        })
    }

    pub fn start(
        self: &Arc<Self>,
        shutdown: tokio::sync::watch::Receiver<bool>,
    ) -> crate::runtime::driver::MetricsSource {
        self.base.start(&PV_IDENTITY, self.clone(), shutdown)
    }

    async fn reconcile(&self, name: &str) -> Reconciled {
        let svc = &self.base.service;
        let Some(ri) = svc.registry.lookup("", "v1", VOLUMES) else {
            return Ok(None);
        };
        let Ok(current) = svc.get(&ri, "", name) else {
            return Ok(None);
        };
        let volume = current.parse();
        let has = has_finalizer(&volume, PV_PROTECTION);
        if terminating(&*volume) {
            let bound = volume.pointer("/status/phase").and_then(Value::as_str) == Some("Bound");
            if has && !bound {
                let v = with_finalizer(&volume, PV_PROTECTION, false);
                super::write_back(svc, &ri, "", name, v, Subresource::Main).await?;
            }
            return Ok(None);
        }
        if !has {
            let v = with_finalizer(&volume, PV_PROTECTION, true);
            super::write_back(svc, &ri, "", name, v, Subresource::Main).await?;
        }
        Ok(None)
    }
}

impl super::Reconcile<String> for VolumeProtection {
    fn reconcile_key(&self, key: &String) -> impl std::future::Future<Output = Reconciled> + Send {
        self.reconcile(key)
    }
}

impl Follower for VolumeProtection {
    fn observe(
        &self,
        ri: &ResourceInfo,
        obj: &crate::store::StoredObject,
        _prev: Option<&crate::store::StoredObject>,
        how: Observed,
    ) {
        if !ri.group.is_empty() || ri.resource != VOLUMES || how == Observed::Deleted {
            return;
        }
        let v = obj.parse();
        let has = has_finalizer(&v, PV_PROTECTION);
        let needs = if terminating(&*v) { has } else { !has };
        if needs {
            self.base.queue.add(meta::name(&*v).to_owned());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(volumes: Value, node: &str, phase: &str) -> Value {
        json!({"metadata": {"name": "p", "namespace": "ns", "uid": "u1"},
            "spec": {"nodeName": node, "volumes": volumes}, "status": {"phase": phase}})
    }

    fn claim(name: &str, owner: Option<&str>) -> Value {
        let mut c = json!({"metadata": {"name": name, "namespace": "ns"}});
        if let Some(uid) = owner {
            c["metadata"]["ownerReferences"] = json!([{"apiVersion": "v1", "kind": "Pod", "name": "p", "uid": uid, "controller": true}]);
        }
        c
    }

    #[test]
    fn a_scheduled_running_pod_uses_its_claims() {
        let vols = json!([{"name": "data", "persistentVolumeClaim": {"claimName": "c"}},
            {"name": "scratch", "ephemeral": {"volumeClaimTemplate": {"spec": {}}}}]);
        let running = pod(vols.clone(), "n1", "Running");
        assert!(pod_uses(&running, &claim("c", None)));
        assert!(!pod_uses(&running, &claim("other", None)));
        // An ephemeral volume's claim counts only when the Pod owns it.
        assert!(pod_uses(&running, &claim("p-scratch", Some("u1"))));
        assert!(!pod_uses(&running, &claim("p-scratch", Some("u2"))));
        assert_eq!(claims_of(&running), vec!["c", "p-scratch"]);
        // Not scheduled: not in use. Finished: still in use (kube does not look at the phase).
        assert!(!pod_uses(
            &pod(vols.clone(), "", "Pending"),
            &claim("c", None)
        ));
        assert!(pod_uses(
            &pod(vols.clone(), "n1", "Succeeded"),
            &claim("c", None)
        ));
        // Force-deleted: its ephemeral claim is free, a named claim still counts until it goes.
        let mut forced = pod(vols, "n1", "Running");
        forced["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
        forced["metadata"]["deletionGracePeriodSeconds"] = json!(0);
        assert!(pod_uses(&forced, &claim("c", None)));
        assert!(!pod_uses(&forced, &claim("p-scratch", Some("u1"))));
    }

    #[test]
    fn finalizers_come_and_go_alone() {
        let v = json!({"metadata": {"finalizers": ["a", PVC_PROTECTION, "b"]}});
        let off = with_finalizer(&v, PVC_PROTECTION, false);
        assert_eq!(off["metadata"]["finalizers"], json!(["a", "b"]));
        assert!(!has_finalizer(&off, PVC_PROTECTION));
        let on = with_finalizer(&off, PVC_PROTECTION, true);
        assert!(has_finalizer(&on, PVC_PROTECTION));
    }
}
