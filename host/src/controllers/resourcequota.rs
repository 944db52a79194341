//! kube-controller-manager's `resourcequota` controller: each ResourceQuota's status is its
//! `spec.hard` and what is stored in its namespace uses of it (`quota::recount`), written when
//! the quota changes, when an object of a kind it counts comes or goes (or, for Pods, Services
//! and PersistentVolumeClaims, changes), and every five minutes (kube's full resync). The write
//! path raises `status.used` as it admits objects (`quota::admit`); this controller is what
//! brings it back down when objects go, and what corrects a charge whose write then failed.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Map, Value};

use super::{Follower, Observed, Reconciled};
use crate::model::{meta, ResourceInfo};
use crate::quota::{kinds_for, recount, RESOURCE};
use crate::service::{ListOptions, Service, Subresource};
use crate::store::StoredObject;

pub const IDENTITY: super::Identity = super::Identity {
    name: "resourcequota-controller",
    description: "Keeps each ResourceQuota's status: its hard limits and what the objects of its namespace use of them.",
    workers: 2,
};
/// kube's `--resource-quota-sync-period` default.
const RESYNC: Duration = Duration::from_secs(300);

/// Quotas by namespace, then name, with the kinds (group, resource) they count.
type Index = HashMap<String, HashMap<String, Vec<(String, String)>>>;

pub struct ResourceQuotaController {
    base: super::Base<(String, String)>,
    quotas: Mutex<Index>,
}

fn counted_kinds(quota: &Value) -> Vec<(String, String)> {
    let mut kinds: Vec<(String, String)> = quota
        .pointer("/spec/hard")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .flat_map(|(r, _)| kinds_for(r))
        .collect();
    kinds.sort();
    kinds.dedup();
    kinds
}

impl ResourceQuotaController {
    pub fn new(service: Arc<Service>) -> Arc<Self> {
        Arc::new(Self {
            base: super::Base::new(service),
            quotas: Mutex::default(),
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
        let Some(quotas) = svc.registry.lookup("", "v1", RESOURCE) else {
            return Ok(None);
        };
        let quota = match svc.get(&quotas, ns, name) {
            Ok(q) => q.parse().into_owned(),
            Err(e) if e.code == 404 => return Ok(None),
            Err(e) => return Err(e.into()),
        };
        let hard = quota
            .pointer("/spec/hard")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        // No write charges this namespace's quotas while they are recounted.
        let _lock = crate::quota::namespace_lock(ns).lock_owned().await;
        let mut objects: Vec<(Arc<ResourceInfo>, Value)> = Vec::new();
        for (group, resource) in counted_kinds(&quota) {
            let gr = if group.is_empty() {
                resource.clone()
            } else {
                format!("{resource}.{group}")
            };
            // A kind not served (yet): nothing of it is stored.
            let Some(ri) = super::stored_resource(svc, &gr) else {
                continue;
            };
            let list = svc.list(&ri, Some(ns), &ListOptions::default()).await?;
            for o in &list.items {
                objects.push((ri.clone(), o.parse().into_owned()));
            }
        }
        let used = recount(&quota, &hard, objects.iter().map(|(ri, o)| (&**ri, o)));
        let mut status = Map::new();
        status.insert("hard".into(), Value::Object(hard));
        status.insert("used".into(), Value::Object(used));
        let status = Value::Object(status);
        if quota.get("status") == Some(&status) {
            return Ok(Some(RESYNC));
        }
        let mut q = quota;
        if let Some(o) = q.as_object_mut() {
            o.insert("status".into(), status);
        }
        super::write_back(svc, &quotas, ns, name, q, Subresource::Status).await?;
        Ok(Some(RESYNC))
    }

    fn queue_counting(&self, ns: &str, group: &str, resource: &str) {
        let index = self.quotas.lock().unwrap_or_else(|e| e.into_inner());
        let Some(quotas) = index.get(ns) else {
            return;
        };
        for (name, kinds) in quotas {
            if kinds.iter().any(|(g, r)| g == group && r == resource) {
                self.base.queue.add((ns.to_owned(), name.clone()));
            }
        }
    }
}

impl ResourceQuotaController {
    fn counts_in(&self, ns: &str) -> bool {
        self.quotas
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .contains_key(ns)
    }
}

/// What of a Pod, Service or claim its usage can depend on: a change elsewhere (a label) is
/// not recounted.
fn counted_part(v: &Value) -> [Option<&Value>; 4] {
    [
        v.get("spec"),
        v.pointer("/status/phase"),
        v.pointer("/metadata/deletionTimestamp"),
        v.pointer("/status/capacity"),
    ]
}

impl super::Reconcile<(String, String)> for ResourceQuotaController {
    fn reconcile_key(
        &self,
        key: &(String, String),
    ) -> impl std::future::Future<Output = Reconciled> + Send {
        self.reconcile(&key.0, &key.1)
    }
}

impl Follower for ResourceQuotaController {
    fn observe(
        &self,
        ri: &ResourceInfo,
        obj: &StoredObject,
        prev: Option<&StoredObject>,
        how: Observed,
    ) {
        if !ri.namespaced() {
            return;
        }
        let head = obj.head();
        let ns = meta::namespace(head).to_owned();
        if ri.group.is_empty() && ri.resource == RESOURCE {
            let name = meta::name(head).to_owned();
            let mut index = self.quotas.lock().unwrap_or_else(|e| e.into_inner());
            if how == Observed::Deleted {
                if let Some(q) = index.get_mut(&ns) {
                    q.remove(&name);
                    if q.is_empty() {
                        index.remove(&ns);
                    }
                }
            } else {
                let kinds = counted_kinds(&obj.parse());
                index
                    .entry(ns.clone())
                    .or_default()
                    .insert(name.clone(), kinds);
            }
            drop(index);
            // A quota is looked at when its limits change, not when a write charges it (kube's
            // controller the same).
            let limits_changed = match (prev, how) {
                (_, Observed::Deleted) => false,
                (Some(p), Observed::Modified) => {
                    let v = obj.parse();
                    let before = p.parse();
                    ["/spec/hard", "/spec/scopes", "/spec/scopeSelector"]
                        .iter()
                        .any(|f| before.pointer(f) != v.pointer(f))
                        || v.pointer("/status/hard") != v.pointer("/spec/hard")
                }
                _ => true,
            };
            if limits_changed {
                self.base.queue.add((ns.clone(), name));
            }
            // Quotas that count quotas: only when one comes or goes (a charge, a Modified, would
            // otherwise recount every quota of the namespace on every write).
            if matches!(how, Observed::Added | Observed::Deleted) {
                self.queue_counting(&ns, &ri.group, &ri.resource);
            }
            return;
        }
        // Listed objects are counted by the first sync of their quotas.
        let changes_usage = match how {
            Observed::Listed => false,
            Observed::Added | Observed::Deleted => true,
            Observed::Modified => {
                ri.group.is_empty()
                    && matches!(
                        ri.resource.as_str(),
                        "pods" | "services" | "persistentvolumeclaims"
                    )
                    && self.counts_in(&ns)
                    && prev.is_none_or(|p| counted_part(&p.parse()) != counted_part(&obj.parse()))
            }
        };
        if changes_usage {
            self.queue_counting(&ns, &ri.group, &ri.resource);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn quotas_count_the_kinds_their_hard_resources_name() {
        let q = json!({"spec": {"hard": {"pods": "2", "requests.cpu": "1", "count/deployments.apps": "1",
            "services.nodeports": "0", "count/widgets.example.com": "3", "nonsense": "1"}}});
        assert_eq!(
            counted_kinds(&q),
            vec![
                ("".to_owned(), "pods".to_owned()),
                ("".to_owned(), "services".to_owned()),
                ("apps".to_owned(), "deployments".to_owned()),
                ("example.com".to_owned(), "widgets".to_owned()),
            ]
        );
    }
}
