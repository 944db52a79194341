//! kube-controller-manager's `validatingadmissionpolicy-status-controller`: each
//! ValidatingAdmissionPolicy whose `metadata.generation` is newer than its
//! `status.observedGeneration` gets its expressions type-checked against the kinds it matches
//! (`admission::type_checking_status`) and the result written to its `status` (`typeChecking`,
//! `observedGeneration`). As in kube, a policy is checked again only when its spec changes.

use std::sync::Arc;

use serde_json::Value;

use super::{Follower, Observed, Reconciled};
use crate::model::{meta, ObjectKey, ResourceInfo};
use crate::service::{Service, Subresource};

pub const IDENTITY: super::Identity = super::Identity {
    name: "validatingadmissionpolicy-status-controller",
    description: "Type-checks the expressions of each ValidatingAdmissionPolicy against the kinds it matches and writes status.typeChecking.",
    workers: 1,
};
const GROUP: &str = "admissionregistration.k8s.io";
const POLICIES: &str = "validatingadmissionpolicies";

pub struct PolicyStatusController {
    base: super::Base<String>,
}

fn stale(policy: &Value) -> bool {
    let generation = policy
        .pointer("/metadata/generation")
        .and_then(Value::as_i64);
    let observed = policy
        .pointer("/status/observedGeneration")
        .and_then(Value::as_i64)
        .unwrap_or(0);
    generation.is_some_and(|g| g > observed)
}

impl PolicyStatusController {
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

    async fn reconcile(&self, name: &str) -> Reconciled {
        let svc = &self.base.service;
        let Some(ri) = svc.registry.lookup(GROUP, "v1", POLICIES) else {
            return Ok(None);
        };
        let Some(current) = svc
            .store
            .get(&ObjectKey::new(&ri.group_resource(), "", name))
        else {
            return Ok(None);
        };
        if !stale(current.value()) {
            return Ok(None);
        }
        let status = {
            let (policy, registry, store) = (
                current.value().clone(),
                svc.registry.clone(),
                svc.store.clone(),
            );
            // The checker recurses over the expressions' trees: on a big stack.
            tokio::task::spawn_blocking(move || {
                crate::schema::expr::run_on_big_stack(move || {
                    crate::admission::type_checking_status(&policy, &registry, store.as_ref())
                })
            })
            .await
            .ok()
            .and_then(Result::ok)
            .unwrap_or(Value::Null)
        };
        if status.is_null() {
            return Ok(None);
        }
        let mut v = current.value().clone();
        if let Some(o) = v.as_object_mut() {
            o.insert("status".into(), status);
        }
        super::write_back(svc, &ri, "", name, v, Subresource::Status).await?;
        Ok(None)
    }
}

impl super::Reconcile<String> for PolicyStatusController {
    fn reconcile_key(&self, name: &String) -> impl std::future::Future<Output = Reconciled> + Send {
        self.reconcile(name)
    }
}

impl Follower for PolicyStatusController {
    fn observe(
        &self,
        ri: &ResourceInfo,
        obj: &crate::store::StoredObject,
        _prev: Option<&crate::store::StoredObject>,
        how: Observed,
    ) {
        if ri.group != GROUP || ri.resource != POLICIES || how == Observed::Deleted {
            return;
        }
        if stale(obj.value()) {
            self.base.queue.add(meta::name(obj.head()).to_owned());
        }
    }
}
