//! The service account controller, as kube-controller-manager's `serviceaccount-controller`:
//! every namespace that is not terminating has a ServiceAccount named `default`, created when
//! the namespace appears (or at start-up, for namespaces listed then) and again whenever it is
//! deleted.

use std::sync::Arc;

use serde_json::json;

use super::{terminating, Follower, Observed, Reconciled};
use crate::model::{meta, ResourceInfo};
use crate::service::{Service, WriteOptions, NAMESPACES};

pub const IDENTITY: super::Identity = super::Identity {
    name: "serviceaccount-controller",
    description: "Creates the default ServiceAccount in every namespace, again if it is deleted.",
    workers: 2,
};
/// The ServiceAccount every namespace gets.
pub const DEFAULT: &str = "default";
const SERVICEACCOUNTS: &str = "serviceaccounts";

pub struct ServiceAccountController {
    base: super::Base<String>,
}

impl ServiceAccountController {
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

    fn active(&self, ns: &str) -> bool {
        super::namespace_active(&self.base.service, ns)
    }

    async fn reconcile(&self, ns: &str) -> Reconciled {
        if !self.active(ns) {
            return Ok(None);
        }
        let Some(ri) = self.base.service.registry.lookup("", "v1", SERVICEACCOUNTS) else {
            return Ok(None);
        };
        if self.base.service.get(&ri, ns, DEFAULT).is_ok() {
            return Ok(None);
        }
        let sa = json!({"apiVersion": "v1", "kind": "ServiceAccount",
                        "metadata": {"name": DEFAULT, "namespace": ns}});
        match self
            .base
            .service
            .create(&ri, ns, sa, &WriteOptions::default())
            .await
        {
            Ok(_) => Ok(None),
            Err(e) if e.code == 409 => Ok(None),
            // The namespace went or started terminating meanwhile: nothing to do.
            Err(_) if !self.active(ns) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }
}

impl super::Reconcile<String> for ServiceAccountController {
    fn reconcile_key(&self, ns: &String) -> impl std::future::Future<Output = Reconciled> + Send {
        self.reconcile(ns)
    }
}

impl Follower for ServiceAccountController {
    fn observe(
        &self,
        ri: &ResourceInfo,
        obj: &crate::store::StoredObject,
        _prev: Option<&crate::store::StoredObject>,
        how: Observed,
    ) {
        let v = obj.head();
        if !ri.group.is_empty() || (how == Observed::Deleted && ri.resource == NAMESPACES) {
            return;
        }
        if ri.resource == NAMESPACES && !terminating(v) {
            self.base.queue.add(meta::name(v).to_owned());
        } else if ri.resource == SERVICEACCOUNTS
            && how == Observed::Deleted
            && meta::name(v) == DEFAULT
        {
            self.base.queue.add(meta::namespace(v).to_owned());
        }
    }
}
