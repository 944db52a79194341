//! kube-controller-manager's `resourcequota` controller: each ResourceQuota's status is its
//! `spec.hard` and what is stored in its namespace uses of it (`quota::Tally`), written when
//! the quota changes, when an object of a kind it counts comes or goes (or, for Pods, Services
//! and PersistentVolumeClaims, changes what its usage reads), and every five minutes (kube's
//! full resync). The write path raises `status.used` as it admits objects (`quota::admit`); this
//! controller is what brings it back down when objects go, and what corrects a charge whose
//! write then failed.
//!
//! A recount lists the namespace's objects of each kind the quota counts and folds them into
//! the totals one at a time (`quota::Tally`): counts read nothing of an object, and Pods,
//! Services and claims only the fields their usage depends on, never the whole object. Events
//! are coalesced by the work queue: a burst of creates and deletes queues each quota once (and
//! once more if it comes during a recount), not one recount per event.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Map, Value};

use super::{Follower, Observed, Reconciled};
use crate::model::{meta, ResourceInfo};
use crate::quota::{counted_fields, kinds_for, Tally, RESOURCE};
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
        let mut tally = Tally::new(&quota, &hard);
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
            // Object by object, reading only what usage depends on, yielding now and then.
            tally.add_stored(&ri, &list.items).await;
        }
        let used = tally.used();
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
                    // What usage reads of each version (not a whole parse of both): a change
                    // elsewhere (a label, a Pod's binding) is not recounted.
                    && prev.is_none_or(|p| counted_fields(ri, p) != counted_fields(ri, obj))
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
    use crate::store::{Precondition, Store, WriteOp};
    use serde_json::json;

    const NS: &str = "team";

    /// Stores `obj` as `name` of `resource` (a storage key) in [`NS`], as it is given: no
    /// admission, no quota charge (what the recount finds is what is stored).
    async fn put(store: &Arc<dyn Store>, resource: &str, kind: &str, name: &str, mut obj: Value) {
        let api_version = if resource.ends_with(".apps") {
            "apps/v1"
        } else {
            "v1"
        };
        obj["apiVersion"] = json!(api_version);
        obj["kind"] = json!(kind);
        let meta = obj
            .as_object_mut()
            .unwrap()
            .entry("metadata")
            .or_insert_with(|| json!({}));
        meta["name"] = json!(name);
        meta["namespace"] = json!(NS);
        store
            .write(WriteOp::Put {
                key: crate::model::ObjectKey::new(resource, NS, name),
                value: obj,
                precondition: Precondition::MustNotExist,
            })
            .await
            .unwrap();
    }

    /// `status.used` as the recount made it before it folded objects one at a time: every object
    /// of the kinds the quota counts listed and parsed whole.
    async fn used_by_whole_parse(svc: &Service, quota: &Value) -> Value {
        let hard = quota["spec"]["hard"].as_object().cloned().unwrap();
        let mut objects: Vec<(Arc<ResourceInfo>, Value)> = Vec::new();
        for (group, resource) in counted_kinds(quota) {
            let gr = if group.is_empty() {
                resource.clone()
            } else {
                format!("{resource}.{group}")
            };
            let Some(ri) = super::super::stored_resource(svc, &gr) else {
                continue;
            };
            let list = svc
                .list(&ri, Some(NS), &ListOptions::default())
                .await
                .unwrap();
            for o in &list.items {
                objects.push((ri.clone(), o.parse().into_owned()));
            }
        }
        Value::Object(crate::quota::recount(
            quota,
            &hard,
            objects.iter().map(|(ri, o)| (&**ri, o)),
        ))
    }

    /// The recount reads of each object only what its usage depends on (nothing, for counts),
    /// and writes the `status.used` the whole parse did: Pods with requests, limits, overhead,
    /// init containers and sidecars; ended, terminating and overdue Pods; every scope; node
    /// ports, load balancers and storage; and large ConfigMaps counted by `count/configmaps`.
    #[tokio::test]
    async fn a_recount_reads_only_what_usage_needs_and_counts_as_a_whole_parse_did() {
        let (store, dir) = crate::store::sled_store::temp_store("quota-recount");
        let svc = Arc::new(Service::new(
            store.clone(),
            Arc::new(crate::model::Registry::with_builtins()),
        ));
        svc.bootstrap().await.unwrap();
        store
            .write(WriteOp::Put {
                key: crate::model::ObjectKey::new(crate::service::NAMESPACES, "", NS),
                value: json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}}),
                precondition: Precondition::MustNotExist,
            })
            .await
            .unwrap();

        // Large ConfigMaps (1,000 keys of 100 bytes each), counted and never read.
        let data: Map<String, Value> = (0..1000)
            .map(|i| (format!("key-{i}"), json!("x".repeat(100))))
            .collect();
        for i in 0..20 {
            put(
                &store,
                "configmaps",
                "ConfigMap",
                &format!("big-{i}"),
                json!({"data": data}),
            )
            .await;
        }
        for name in ["s1", "s2"] {
            put(
                &store,
                "secrets",
                "Secret",
                name,
                json!({"data": {"k": "dg=="}}),
            )
            .await;
        }
        for name in ["d1", "d2"] {
            put(
                &store,
                "deployments.apps",
                "Deployment",
                name,
                json!({"spec": {}}),
            )
            .await;
        }

        let now = chrono::Utc::now();
        let at = |t: chrono::DateTime<chrono::Utc>| t.format("%Y-%m-%dT%H:%M:%SZ").to_string();
        let res = |req: Value, lim: Value| json!({"requests": req, "limits": lim});
        // A large env: what a recount must not parse.
        let env: Vec<Value> = (0..2000)
            .map(|i| json!({"name": format!("VAR_{i}"), "value": "y".repeat(50)}))
            .collect();
        let pods = [
            // Burstable, with a sidecar, an init container larger than the rest, and overhead.
            (
                "web",
                json!({
                "spec": {
                    "priorityClassName": "high",
                    "containers": [{"name": "app", "env": env,
                        "resources": res(json!({"cpu": "250m", "memory": "64Mi"}),
                            json!({"cpu": "1", "memory": "128Mi"}))}],
                    "initContainers": [
                        {"name": "setup", "resources": res(json!({"cpu": "2"}), json!({}))},
                        {"name": "proxy", "restartPolicy": "Always",
                            "resources": res(json!({"cpu": "100m", "memory": "32Mi"}), json!({}))}],
                    "overhead": {"cpu": "10m", "memory": "1Mi"}},
                "status": {"phase": "Running"}}),
            ),
            // BestEffort.
            (
                "idle",
                json!({"spec": {"containers": [{"name": "c"}]}, "status": {"phase": "Running"}}),
            ),
            // Terminating (a deadline).
            (
                "batch",
                json!({
                "spec": {"activeDeadlineSeconds": 600, "containers": [{"name": "c",
                    "resources": res(json!({"cpu": "500m", "memory": "256Mi"}),
                        json!({"memory": "512Mi"}))}]},
                "status": {"phase": "Running"}}),
            ),
            // Ended: counted by `count/pods` only.
            (
                "done",
                json!({
                "spec": {"containers": [{"name": "c",
                    "resources": res(json!({"cpu": "1"}), json!({}))}]},
                "status": {"phase": "Succeeded"}}),
            ),
            // Being deleted, overdue: counted by `count/pods` only.
            (
                "gone",
                json!({
                "metadata": {"deletionTimestamp": at(now - chrono::Duration::seconds(120)),
                    "deletionGracePeriodSeconds": 30},
                "spec": {"containers": [{"name": "c"}]},
                "status": {"phase": "Running"}}),
            ),
            // Being deleted, within its grace: still counted.
            (
                "going",
                json!({
                "metadata": {"deletionTimestamp": at(now + chrono::Duration::seconds(600)),
                    "deletionGracePeriodSeconds": 30,
                    "annotations": {"note": "z".repeat(50_000)}},
                "spec": {"containers": [{"name": "c",
                    "resources": res(json!({"cpu": "100m"}), json!({"cpu": "200m"}))}]},
                "status": {"phase": "Running"}}),
            ),
            // No status; limits only (Guaranteed, not BestEffort; no requests).
            (
                "pending",
                json!({
                "spec": {"containers": [{"name": "c",
                    "resources": res(json!({}), json!({"cpu": "1", "memory": "1Gi"}))}]}}),
            ),
        ];
        for (name, pod) in pods {
            put(&store, "pods", "Pod", name, pod).await;
        }
        let services = [
            (
                "np",
                json!({"type": "NodePort", "ports": [{"port": 80}, {"port": 443}]}),
            ),
            (
                "lb",
                json!({"type": "LoadBalancer", "allocateLoadBalancerNodePorts": false,
                "ports": [{"port": 80, "nodePort": 30080}, {"port": 81}]}),
            ),
            (
                "lb2",
                json!({"type": "LoadBalancer",
                "ports": [{"port": 1}, {"port": 2}, {"port": 3}]}),
            ),
            (
                "plain",
                json!({"type": "ClusterIP", "ports": [{"port": 80}]}),
            ),
        ];
        for (name, spec) in services {
            put(&store, "services", "Service", name, json!({"spec": spec})).await;
        }
        for (name, size) in [("data", "1Gi"), ("logs", "500Mi")] {
            put(
                &store,
                "persistentvolumeclaims",
                "PersistentVolumeClaim",
                name,
                json!({"spec": {"accessModes": ["ReadWriteOnce"],
                    "resources": {"requests": {"storage": size}}}}),
            )
            .await;
        }

        let quotas = svc.registry.lookup("", "v1", RESOURCE).unwrap();
        let quota_specs = [
            (
                "objects",
                json!({"hard": {"configmaps": "1000", "count/configmaps": "1000",
                "secrets": "10", "count/secrets": "10", "count/deployments.apps": "10",
                "services": "10", "services.nodeports": "10", "services.loadbalancers": "5",
                "persistentvolumeclaims": "5", "requests.storage": "10Gi"}}),
            ),
            (
                "compute",
                json!({"hard": {"pods": "10", "count/pods": "10", "cpu": "10",
                "requests.cpu": "10", "limits.cpu": "20", "memory": "10Gi",
                "requests.memory": "10Gi", "limits.memory": "20Gi"}}),
            ),
            (
                "terminating",
                json!({"scopes": ["Terminating"],
                "hard": {"pods": "5", "requests.cpu": "5", "limits.memory": "5Gi"}}),
            ),
            (
                "not-terminating",
                json!({"scopes": ["NotTerminating"],
                "hard": {"pods": "5", "count/pods": "5", "requests.cpu": "5"}}),
            ),
            (
                "best-effort",
                json!({"scopes": ["BestEffort"],
                "hard": {"pods": "5", "count/pods": "5"}}),
            ),
            (
                "not-best-effort",
                json!({"scopes": ["NotBestEffort"],
                "hard": {"pods": "5", "requests.memory": "5Gi", "limits.cpu": "5"}}),
            ),
            (
                "high",
                json!({"scopeSelector": {"matchExpressions": [
                    {"scopeName": "PriorityClass", "operator": "In", "values": ["high"]}]},
                "hard": {"pods": "5", "cpu": "5"}}),
            ),
        ];
        let ctl = ResourceQuotaController::new(svc.clone());
        let mut used = HashMap::new();
        for (name, spec) in quota_specs {
            let q = json!({"apiVersion": "v1", "kind": "ResourceQuota",
                "metadata": {"name": name, "namespace": NS}, "spec": spec});
            svc.create(&quotas, NS, q, &crate::service::WriteOptions::default())
                .await
                .unwrap();
            ctl.reconcile(NS, name).await.unwrap();
            let q = svc.get(&quotas, NS, name).unwrap().value().clone();
            assert_eq!(q["status"]["hard"], q["spec"]["hard"], "{name}");
            assert_eq!(
                q["status"]["used"],
                used_by_whole_parse(&svc, &q).await,
                "{name}"
            );
            used.insert(name, q["status"]["used"].clone());
        }
        // A few by hand, so that both are not wrong together.
        let objects = &used["objects"];
        assert_eq!(objects["count/configmaps"], "20");
        assert_eq!(objects["configmaps"], "20");
        assert_eq!(objects["secrets"], "2");
        assert_eq!(objects["count/deployments.apps"], "2");
        assert_eq!(objects["services"], "4");
        assert_eq!(objects["services.nodeports"], "6");
        assert_eq!(objects["services.loadbalancers"], "2");
        assert_eq!(objects["persistentvolumeclaims"], "2");
        assert_eq!(objects["requests.storage"], "1524Mi");
        let compute = &used["compute"];
        assert_eq!(compute["pods"], "5", "not the ended nor the overdue one");
        assert_eq!(compute["count/pods"], "7");
        // web: max(250m + 100m sidecar, 2 init) + 10m overhead; batch 500m; going 100m.
        assert_eq!(compute["requests.cpu"], "2610m");
        assert_eq!(used["terminating"]["pods"], "1");
        assert_eq!(used["not-terminating"]["pods"], "4");
        assert_eq!(used["not-terminating"]["count/pods"], "6");
        assert_eq!(used["best-effort"]["pods"], "1");
        assert_eq!(used["best-effort"]["count/pods"], "2", "idle, and gone");
        assert_eq!(used["not-best-effort"]["pods"], "4");
        assert_eq!(used["high"]["pods"], "1");

        // One ConfigMap gone: the recount gives its unit back.
        store
            .write(WriteOp::Delete {
                key: crate::model::ObjectKey::new("configmaps", NS, "big-0"),
                precondition: Precondition::Exists,
            })
            .await
            .unwrap();
        ctl.reconcile(NS, "objects").await.unwrap();
        let q = svc.get(&quotas, NS, "objects").unwrap().value().clone();
        assert_eq!(q["status"]["used"]["count/configmaps"], "19");
        assert_eq!(q["status"]["used"], used_by_whole_parse(&svc, &q).await);
        let _ = std::fs::remove_dir_all(dir);
    }

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
