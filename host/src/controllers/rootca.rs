//! kube-controller-manager's `root-ca-cert-publisher`: every namespace has a ConfigMap
//! `kube-root-ca.crt` whose `ca.crt` is the CA bundle that verifies this API server, created when
//! the namespace appears (or at start-up), again when it is deleted, and put back (data and the
//! description annotation) when someone changes it. Pods mount it next to their service account
//! token (the projected `kube-api-access-*` volume); clients in the cluster read it to trust the
//! server.

use std::sync::Arc;

use serde_json::{json, Value};

use super::{terminating, Follower, Observed, Reconciled};
use crate::model::{meta, ResourceInfo};
use crate::service::{Service, Subresource, WriteOptions, NAMESPACES};

pub const IDENTITY: super::Identity = super::Identity {
    name: "root-ca-cert-publisher",
    description: "Keeps the ConfigMap kube-root-ca.crt (the CA bundle that verifies this API server) in every namespace.",
    workers: 2,
};
/// The ConfigMap every namespace gets (kube's `RootCACertConfigMapName`).
pub const CONFIGMAP: &str = "kube-root-ca.crt";
const DESCRIPTION_ANNOTATION: &str = "kubernetes.io/description";
const DESCRIPTION: &str = "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the internal service IP or kubernetes.default.svc. No other usage is guaranteed across distributions of Kubernetes clusters.";
const CONFIGMAPS: &str = "configmaps";

pub struct RootCaPublisher {
    base: super::Base<String>,
    /// The CA bundle (PEM).
    root_ca: Arc<str>,
}

impl RootCaPublisher {
    pub fn new(service: Arc<Service>, root_ca: Arc<str>) -> Arc<Self> {
        Arc::new(Self {
            base: super::Base::new(service),
            root_ca,
        })
    }

    pub fn start(
        self: &Arc<Self>,
        shutdown: tokio::sync::watch::Receiver<bool>,
    ) -> crate::runtime::driver::MetricsSource {
        self.base.start(&IDENTITY, self.clone(), shutdown)
    }

    fn data(&self) -> Value {
        json!({"ca.crt": &*self.root_ca})
    }

    async fn reconcile(&self, ns: &str) -> Reconciled {
        let svc = &self.base.service;
        let Some(ri) = svc.registry.lookup("", "v1", CONFIGMAPS) else {
            return Ok(None);
        };
        let current = match svc.get(&ri, ns, CONFIGMAP) {
            Ok(cm) => cm,
            Err(e) if e.code == 404 => {
                let cm = json!({"apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": CONFIGMAP, "namespace": ns,
                        "annotations": {DESCRIPTION_ANNOTATION: DESCRIPTION}},
                    "data": self.data()});
                return match svc.create(&ri, ns, cm, &WriteOptions::default()).await {
                    Ok(_) => Ok(None),
                    Err(e) if e.code == 409 => Ok(None),
                    // No such namespace, or it is terminating: nothing to publish into.
                    Err(e) if e.code == 404 || !self.active(ns) => Ok(None),
                    Err(e) => Err(e.into()),
                };
            }
            Err(e) => return Err(e.into()),
        };
        let v = current.value();
        let described = v
            .pointer("/metadata/annotations")
            .and_then(|a| a.get(DESCRIPTION_ANNOTATION))
            .and_then(Value::as_str)
            .is_some_and(|d| !d.is_empty());
        if v.get("data") == Some(&self.data()) && described {
            return Ok(None);
        }
        let mut cm = v.clone();
        // kube sets `data` and the annotation, and leaves anything else (`binaryData`) as is.
        if let Some(o) = cm.as_object_mut() {
            o.insert("data".into(), self.data());
        }
        if let Some(m) = cm.get_mut("metadata").and_then(Value::as_object_mut) {
            let a = m.entry("annotations").or_insert_with(|| json!({}));
            if !a.is_object() {
                *a = json!({});
            }
            if let Some(a) = a.as_object_mut() {
                a.insert(DESCRIPTION_ANNOTATION.into(), json!(DESCRIPTION));
            }
        }
        super::write_back(svc, &ri, ns, CONFIGMAP, cm, Subresource::Main).await?;
        Ok(None)
    }

    fn active(&self, ns: &str) -> bool {
        super::namespace_active(&self.base.service, ns)
    }
}

impl super::Reconcile<String> for RootCaPublisher {
    fn reconcile_key(&self, ns: &String) -> impl std::future::Future<Output = Reconciled> + Send {
        self.reconcile(ns)
    }
}

impl Follower for RootCaPublisher {
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
            // kube: every added namespace, and updated ones while Active.
            (NAMESPACES, Observed::Listed | Observed::Added) => {}
            (NAMESPACES, Observed::Modified) if !terminating(v) => {}
            // Its ConfigMap changed or went (one listed at start-up is looked at through its
            // namespace).
            (CONFIGMAPS, Observed::Modified | Observed::Deleted) if meta::name(v) == CONFIGMAP => {
                self.base.queue.add(meta::namespace(v).to_owned());
                return;
            }
            _ => return,
        }
        self.base.queue.add(meta::name(v).to_owned());
    }
}
