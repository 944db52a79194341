//! The Pod garbage collector, as kube-controller-manager's `pod-garbage-collector`: it
//! force-deletes (grace period 0) the Pods no kubelet will ever finish, after marking them
//! `Failed`:
//! - Pods bound to a Node that does not exist, once it has been missing for the quarantine
//!   (kube's 40 s; `--orphaned-pod-quarantine`) since the collector found the Pod orphaned
//!   (kube counts it per node name), with the condition `DisruptionTarget` (`DeletionByPodGC`);
//! - terminating Pods that were never scheduled;
//! - terminating Pods on a Node that is not Ready and carries the
//!   `node.kubernetes.io/out-of-service` taint.
//!
//! - the oldest finished Pods (`Succeeded` or `Failed`) beyond `--terminated-pod-gc-threshold`
//!   (12,500; 0 turns it off), evicted ones first, deleted with grace period 0.
//!
//! kube polls every 20 s; this one follows Pod and Node events, and counts finished Pods at most
//! every 20 s (after a Pod finishes).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::{terminating, uid, Follower, Observed, Reconciled};
use crate::model::{meta, ObjectKey, ResourceInfo};
use crate::service::{DeleteOptions, ListOptions, Service, Subresource, WriteOptions};

pub const IDENTITY: super::Identity = super::Identity {
    name: "pod-garbage-collector",
    description: "Force-deletes Pods bound to Nodes that no longer exist, terminating Pods that were never scheduled, and terminating Pods on out-of-service Nodes.",
    workers: 2,
};
/// How long a Node may be missing before its Pods are deleted (kube's `quarantineTime`).
pub const DEFAULT_QUARANTINE: Duration = Duration::from_secs(40);
const PODS: &str = "pods";
const NODES: &str = "nodes";
/// How often finished Pods are counted at most (kube's `gcCheckPeriod`).
const COUNT_PERIOD: Duration = Duration::from_secs(20);
/// The taint that lets terminating Pods of a NotReady node go (kube's `TaintNodeOutOfService`).
const OUT_OF_SERVICE: &str = "node.kubernetes.io/out-of-service";

/// Keys: `(namespace, pod)` for a Pod, `("", node)` for the Pods of a Node (Pods are always
/// namespaced, so the two never meet).
pub struct PodGarbageCollector {
    base: super::Base<(String, String)>,
    quarantine: Duration,
    /// `--terminated-pod-gc-threshold` (0: no limit).
    threshold: usize,
    /// When finished Pods were last counted.
    counted: Mutex<Option<Instant>>,
    /// Pods found bound to a missing node, and since when: at most one entry per stored Pod
    /// (dropped when the Pod goes or its node is there).
    missing: Mutex<HashMap<(String, String), Instant>>,
}

impl PodGarbageCollector {
    pub fn new(service: Arc<Service>, quarantine: Duration, threshold: usize) -> Arc<Self> {
        Arc::new(Self {
            base: super::Base::new(service),
            quarantine,
            threshold,
            counted: Mutex::default(),
            missing: Mutex::default(),
        })
    }

    pub fn start(
        self: &Arc<Self>,
        shutdown: tokio::sync::watch::Receiver<bool>,
    ) -> crate::runtime::driver::MetricsSource {
        self.base.start(&IDENTITY, self.clone(), shutdown)
    }

    fn node(&self, name: &str) -> Option<Arc<crate::store::StoredObject>> {
        self.base
            .service
            .store
            .get(&ObjectKey::new(NODES, "", name))
    }

    async fn reconcile(&self, ns: &str, name: &str) -> Reconciled {
        let Some(pods) = self.base.service.registry.lookup("", "v1", PODS) else {
            return Ok(None);
        };
        if ns.is_empty() && name.is_empty() {
            return self.collect_terminated(&pods).await;
        }
        if ns.is_empty() {
            return self.reconcile_node(&pods, name).await;
        }
        let Ok(current) = self.base.service.get(&pods, ns, name) else {
            return Ok(None);
        };
        let pod = current.parse();
        let node = pod
            .pointer("/spec/nodeName")
            .and_then(Value::as_str)
            .unwrap_or("");
        if node.is_empty() {
            if terminating(&*pod) {
                tracing::info!(pod = %format!("{ns}/{name}"), "deleting unscheduled terminating pod");
                return self.fail_and_delete(&pods, &pod, None).await;
            }
            return Ok(None);
        }
        let key = (ns.to_owned(), name.to_owned());
        match self.node(node) {
            None => {
                let since = self.missing_since(&key);
                let waited = since.elapsed();
                if waited < self.quarantine {
                    return Ok(Some(self.quarantine - waited));
                }
                tracing::info!(pod = %format!("{ns}/{name}"), node, "deleting pod of a node that no longer exists");
                let condition = json!({"type": "DisruptionTarget", "status": "True",
                    "reason": "DeletionByPodGC", "message": "PodGC: node no longer exists"});
                let done = self.fail_and_delete(&pods, &pod, Some(condition)).await;
                if done.is_ok() {
                    self.forget(&key);
                }
                done
            }
            Some(n) if terminating(&*pod) && out_of_service(&n.parse()) => {
                self.forget(&key);
                tracing::info!(pod = %format!("{ns}/{name}"), node, "deleting terminating pod of an out-of-service node");
                self.fail_and_delete(&pods, &pod, None).await
            }
            Some(_) => {
                self.forget(&key);
                Ok(None)
            }
        }
    }

    /// kube's `gcTerminated`: beyond the threshold, the oldest finished Pods go (evicted ones
    /// first), with grace period 0. Counted at most every [`COUNT_PERIOD`].
    async fn collect_terminated(&self, pods: &ResourceInfo) -> Reconciled {
        if self.threshold == 0 {
            return Ok(None);
        }
        {
            let mut counted = self.counted.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(wait) = counted.and_then(|at| COUNT_PERIOD.checked_sub(at.elapsed())) {
                return Ok(Some(wait));
            }
            *counted = Some(Instant::now());
        }
        let Ok(snap) = self.base.service.store.list(&pods.group_resource(), None) else {
            return Ok(None);
        };
        let mut finished: Vec<(bool, String, String, String, String)> = Vec::new();
        for obj in snap.items.values() {
            let status = obj.pick("status", &["phase", "reason"]);
            let phase = status["phase"].as_str().unwrap_or("");
            if phase != "Succeeded" && phase != "Failed" {
                continue;
            }
            let created = obj.pick("metadata", &["creationTimestamp"]);
            let v = obj.head();
            finished.push((
                status["reason"] != "Evicted",
                created["creationTimestamp"]
                    .as_str()
                    .unwrap_or("")
                    .to_owned(),
                meta::namespace(v).to_owned(),
                meta::name(v).to_owned(),
                uid(v).to_owned(),
            ));
        }
        let excess = finished.len().saturating_sub(self.threshold);
        if excess == 0 {
            return Ok(None);
        }
        // kube's `byEvictionAndCreationTimestamp` (then by name, for a stable order).
        finished.sort();
        tracing::info!(
            excess,
            threshold = self.threshold,
            "deleting finished pods beyond the threshold"
        );
        for (_, _, ns, name, pod_uid) in finished.into_iter().take(excess) {
            let opts = DeleteOptions {
                precondition_uid: Some(pod_uid),
                grace_period: Some(0),
                ..Default::default()
            };
            match self.base.service.delete(pods, &ns, &name, &opts).await {
                Ok(_) => {}
                Err(e) if e.code == 404 || e.code == 409 => {}
                Err(e) => return Err(e.into()),
            }
        }
        Ok(None)
    }

    /// A Node gone or out of service: look at each of its Pods.
    async fn reconcile_node(&self, pods: &ResourceInfo, node: &str) -> Reconciled {
        let opts = ListOptions {
            field_selector: Some(format!("spec.nodeName={node}")),
            ..Default::default()
        };
        let list = self.base.service.list(pods, None, &opts).await?;
        for p in &list.items {
            let v = p.head();
            self.base
                .queue
                .add((meta::namespace(v).to_owned(), meta::name(v).to_owned()));
        }
        Ok(None)
    }

    /// kube's `markFailedAndDeletePodWithCondition`: phase `Failed` (with `condition`) unless
    /// the Pod finished, then a delete with grace period 0 for this Pod (its uid).
    async fn fail_and_delete(
        &self,
        pods: &ResourceInfo,
        pod: &Value,
        condition: Option<Value>,
    ) -> Reconciled {
        let (ns, name) = (meta::namespace(pod), meta::name(pod));
        let phase = pod
            .pointer("/status/phase")
            .and_then(Value::as_str)
            .unwrap_or("");
        if phase != "Succeeded" && phase != "Failed" {
            let mut failed = pod.clone();
            if let Some(status) = failed
                .as_object_mut()
                .map(|o| o.entry("status").or_insert_with(|| json!({})))
                .and_then(Value::as_object_mut)
            {
                status.insert("phase".into(), json!("Failed"));
                if let Some(c) = condition {
                    set_condition(status, c);
                }
            }
            match self
                .base
                .service
                .update(
                    pods,
                    ns,
                    name,
                    failed,
                    Subresource::Status,
                    &WriteOptions::default(),
                )
                .await
            {
                Ok(_) => {}
                Err(e) if e.code == 404 => return Ok(None),
                Err(e) => return Err(e.into()),
            }
        }
        let opts = DeleteOptions {
            precondition_uid: Some(uid(pod).to_owned()),
            grace_period: Some(0),
            ..Default::default()
        };
        match self.base.service.delete(pods, ns, name, &opts).await {
            Ok(_) => Ok(None),
            Err(e) if e.code == 404 || e.code == 409 => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    /// Since when the Pod `key` has been found on a missing node (now, the first time).
    fn missing_since(&self, key: &(String, String)) -> Instant {
        let mut missing = self.missing.lock().unwrap_or_else(|e| e.into_inner());
        *missing.entry(key.clone()).or_insert_with(Instant::now)
    }

    fn forget(&self, key: &(String, String)) {
        self.missing
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(key);
    }
}

/// kube's `UpdatePodCondition`: replace the condition of that type, keeping its transition
/// time when its status does not change.
pub(super) fn set_condition(status: &mut serde_json::Map<String, Value>, mut c: Value) {
    let now = meta::now_rfc3339();
    let conditions = status.entry("conditions").or_insert_with(|| json!([]));
    let Some(list) = conditions.as_array_mut() else {
        *conditions = json!([]);
        return set_condition(status, c);
    };
    let same = list.iter().position(|x| x.get("type") == c.get("type"));
    let since = same
        .and_then(|i| list.get(i))
        .filter(|x| x.get("status") == c.get("status"))
        .and_then(|x| x.get("lastTransitionTime").cloned())
        .unwrap_or_else(|| json!(now));
    c["lastTransitionTime"] = since;
    c["lastProbeTime"] = Value::Null;
    match same {
        Some(i) => list[i] = c,
        None => list.push(c),
    }
}

/// Not Ready, and tainted out of service.
fn out_of_service(node: &Value) -> bool {
    let ready = node
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .any(|c| c.get("type") == Some(&json!("Ready")) && c.get("status") == Some(&json!("True")));
    let tainted = node
        .pointer("/spec/taints")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .any(|t| t.get("key") == Some(&json!(OUT_OF_SERVICE)));
    !ready && tainted
}

impl super::Reconcile<(String, String)> for PodGarbageCollector {
    fn reconcile_key(
        &self,
        key: &(String, String),
    ) -> impl std::future::Future<Output = Reconciled> + Send {
        self.reconcile(&key.0, &key.1)
    }
}

impl Follower for PodGarbageCollector {
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
        if ri.resource == NODES {
            // Gone, back (its Pods stop counting as orphans), or out of service: its Pods are
            // looked at again.
            let node = (String::new(), meta::name(v).to_owned());
            if matches!(how, Observed::Deleted | Observed::Added) || out_of_service(&obj.parse()) {
                self.base.queue.add(node);
            }
            return;
        }
        if ri.resource != PODS {
            return;
        }
        if how == Observed::Deleted {
            self.forget(&(meta::namespace(v).to_owned(), meta::name(v).to_owned()));
            return;
        }
        // A Pod finished: the finished ones may be too many (the key ("", "") counts them).
        if self.threshold > 0 {
            let finished = |o: &crate::store::StoredObject| {
                matches!(
                    o.pick("status", &["phase"])["phase"].as_str(),
                    Some("Succeeded" | "Failed")
                )
            };
            if finished(obj) && !prev.is_some_and(finished) {
                self.base.queue.add((String::new(), String::new()));
            }
        }
        // Every Pod event comes here: only `spec.nodeName` is read, not the whole Pod.
        let spec = obj.pick("spec", &["nodeName"]);
        let node = spec.get("nodeName").and_then(Value::as_str).unwrap_or("");
        let orphan = !node.is_empty() && self.node(node).is_none();
        if orphan || terminating(v) {
            self.base
                .queue
                .add((meta::namespace(v).to_owned(), meta::name(v).to_owned()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_not_ready_node_with_the_taint_is_out_of_service() {
        let tainted = json!({"spec": {"taints": [{"key": OUT_OF_SERVICE, "effect": "NoExecute"}]},
            "status": {"conditions": [{"type": "Ready", "status": "False"}]}});
        assert!(out_of_service(&tainted));
        let mut ready = tainted.clone();
        ready["status"]["conditions"][0]["status"] = json!("True");
        assert!(!out_of_service(&ready));
        let untainted = json!({"status": {"conditions": [{"type": "Ready", "status": "Unknown"}]}});
        assert!(!out_of_service(&untainted));
    }

    #[test]
    fn a_condition_keeps_its_transition_time_while_its_status_stays() {
        let mut status = json!({"conditions": [
            {"type": "Ready", "status": "True", "lastTransitionTime": "2026-01-01T00:00:00Z"},
            {"type": "DisruptionTarget", "status": "True", "lastTransitionTime": "2026-01-02T00:00:00Z"}]})
        .as_object()
        .unwrap()
        .clone();
        set_condition(
            &mut status,
            json!({"type": "DisruptionTarget", "status": "True", "reason": "DeletionByPodGC"}),
        );
        let list = status["conditions"].as_array().unwrap();
        assert_eq!(list.len(), 2);
        assert_eq!(list[1]["lastTransitionTime"], "2026-01-02T00:00:00Z");
        assert_eq!(list[1]["reason"], "DeletionByPodGC");
        set_condition(&mut status, json!({"type": "Ready", "status": "False"}));
        assert_ne!(
            status["conditions"][0]["lastTransitionTime"],
            "2026-01-01T00:00:00Z"
        );
    }
}
