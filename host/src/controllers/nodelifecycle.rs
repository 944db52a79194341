//! kube-controller-manager's node lifecycle controller and taint eviction controller:
//! - **Heartbeats**: a Node is alive while its kubelet renews its Lease `kube-node-lease/NODE`
//!   or posts a new `lastHeartbeatTime` on its Ready condition, timed by this host's own clock.
//!   After `--node-monitor-grace-period` (kube's 50 s; 10 s more for a Node that never posted a
//!   Ready condition) without one, its Ready, MemoryPressure, DiskPressure and PIDPressure
//!   conditions become `Unknown` (`NodeStatusUnknown`, `Kubelet stopped posting node status.`;
//!   `NodeStatusNeverUpdated`, `Kubelet never posted node status.` for those it never posted),
//!   and the Pods bound to it get `Ready` False.
//! - **Taints** from the Ready condition, as kube's NoSchedule and NoExecute passes keep them:
//!   `node.kubernetes.io/unreachable` (Unknown) or `node.kubernetes.io/not-ready` (False), each
//!   `NoSchedule` and `NoExecute`, with `timeAdded`; the pressure conditions' `NoSchedule`
//!   taints and `node.kubernetes.io/network-unavailable`; `node.kubernetes.io/unschedulable`
//!   while `spec.unschedulable` is set (`kubectl cordon`); each removed when its cause goes.
//! - **Taint eviction**: a Pod on a Node with `NoExecute` taints it does not tolerate is
//!   deleted at once; one that tolerates them for `tolerationSeconds` (every Pod gets 300 s for
//!   `not-ready` and `unreachable` from DefaultTolerationSeconds) is deleted that long after this
//!   controller saw the taints, with the condition `DisruptionTarget` (`DeletionByTaintManager`).
//!
//! When no Node is Ready, the NoExecute taints are left off (kube's "master disruption mode").
//!
//! Events as kube's: `NodeNotReady` on the Node and (a Warning) on each of its Pods,
//! `TaintManagerEviction` on an evicted Pod.
//!
//! Differences from kube: no zones (no eviction rate limits, no partial disruption); the taints
//! are written in one pass.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::{terminating, Follower, Observed, Reconciled};
use crate::model::{meta, ObjectKey, ResourceInfo};
use crate::service::{DeleteOptions, ListOptions, Service, Subresource, WriteOptions};

pub const IDENTITY: super::Identity = super::Identity {
    name: "node-lifecycle-controller",
    description: "Marks Nodes whose kubelet stopped its heartbeats Unknown, their Pods not Ready, and taints Nodes by their Ready condition.",
    workers: 2,
};
pub const EVICTION_IDENTITY: super::Identity = super::Identity {
    name: "taint-eviction-controller",
    description: "Deletes the Pods of Nodes with NoExecute taints they do not tolerate, or once their tolerationSeconds have passed.",
    workers: 2,
};
/// The Events' source, as kube-controller-manager's node lifecycle controller names it.
const COMPONENT: &str = "node-controller";
const NODES: &str = "nodes";
const PODS: &str = "pods";
const LEASE_NAMESPACE: &str = "kube-node-lease";
/// kube's extra time for a Node that never posted a Ready condition (60 s against 50 s).
const STARTUP_EXTRA: Duration = Duration::from_secs(10);
pub const UNREACHABLE: &str = "node.kubernetes.io/unreachable";
pub const NOT_READY: &str = "node.kubernetes.io/not-ready";
const CONDITIONS: [&str; 4] = ["Ready", "MemoryPressure", "DiskPressure", "PIDPressure"];
/// kube's taint of a cordoned Node (`spec.unschedulable`).
const UNSCHEDULABLE: &str = "node.kubernetes.io/unschedulable";
/// The conditions whose status True means a NoSchedule taint.
const PRESSURE_TAINTS: [(&str, &str); 4] = [
    (
        "NetworkUnavailable",
        "node.kubernetes.io/network-unavailable",
    ),
    ("MemoryPressure", "node.kubernetes.io/memory-pressure"),
    ("DiskPressure", "node.kubernetes.io/disk-pressure"),
    ("PIDPressure", "node.kubernetes.io/pid-pressure"),
];

fn condition<'a>(node: &'a Value, ty: &str) -> Option<&'a Value> {
    node.pointer("/status/conditions")
        .and_then(Value::as_array)?
        .iter()
        .find(|c| c["type"] == ty)
}

fn ready_status(node: &Value) -> &str {
    condition(node, "Ready")
        .and_then(|c| c["status"].as_str())
        .unwrap_or("Unknown")
}

/// What the controller last saw of a Node's heartbeats.
struct Health {
    /// When a heartbeat was last seen (this host's clock).
    probe: Instant,
    ready_heartbeat: Option<String>,
    has_ready: bool,
    lease_renew: Option<String>,
}

/// kube's `tryUpdateNodeHealth` on a Node: its conditions `Unknown` (those it never posted
/// added). Whether anything changed.
fn mark_unknown(node: &mut Value, now: &str) -> bool {
    let created = meta::meta_str(&*node, "creationTimestamp")
        .unwrap_or("")
        .to_owned();
    let Some(status) = node
        .as_object_mut()
        .map(|o| o.entry("status").or_insert_with(|| json!({})))
        .and_then(Value::as_object_mut)
    else {
        return false;
    };
    let list = status.entry("conditions").or_insert_with(|| json!([]));
    if !list.is_array() {
        *list = json!([]);
    }
    let Some(list) = list.as_array_mut() else {
        return false;
    };
    let mut changed = false;
    for ty in CONDITIONS {
        match list.iter_mut().find(|c| c["type"] == ty) {
            None => {
                list.push(
                    json!({"type": ty, "status": "Unknown", "lastHeartbeatTime": created,
                    "lastTransitionTime": now, "reason": "NodeStatusNeverUpdated",
                    "message": "Kubelet never posted node status."}),
                );
                changed = true;
            }
            Some(c) if c["status"] != "Unknown" => {
                c["status"] = json!("Unknown");
                c["reason"] = json!("NodeStatusUnknown");
                c["message"] = json!("Kubelet stopped posting node status.");
                c["lastTransitionTime"] = json!(now);
                changed = true;
            }
            Some(_) => {}
        }
    }
    changed
}

/// The taints kube's passes keep for a Node's conditions, and the ones they manage.
fn wanted_taints(node: &Value) -> Vec<(&'static str, &'static str)> {
    // From the conditions the Node has: one that never posted a Ready condition is left
    // untainted until its grace period makes it Unknown.
    let ready = condition(node, "Ready").and_then(|c| c["status"].as_str());
    let mut want = match ready {
        Some("False") => vec![(NOT_READY, "NoSchedule"), (NOT_READY, "NoExecute")],
        Some("True") | None => vec![],
        Some(_) => vec![(UNREACHABLE, "NoSchedule"), (UNREACHABLE, "NoExecute")],
    };
    for (ty, key) in PRESSURE_TAINTS {
        if condition(node, ty).is_some_and(|c| c["status"] == "True") {
            want.push((key, "NoSchedule"));
        }
    }
    if node.pointer("/spec/unschedulable") == Some(&Value::Bool(true)) {
        want.push((UNSCHEDULABLE, "NoSchedule"));
    }
    want
}

fn managed(key: &str, effect: &str) -> bool {
    ((key == UNREACHABLE || key == NOT_READY) && (effect == "NoSchedule" || effect == "NoExecute"))
        || (effect == "NoSchedule"
            && (key == UNSCHEDULABLE || PRESSURE_TAINTS.iter().any(|(_, k)| *k == key)))
}

/// The Node's taints made to agree with its conditions, or `None` when they do. In a full
/// disruption (no Node Ready) the NoExecute ones are left out, as kube's "master disruption
/// mode" does: a cluster whose every kubelet is silent is more likely cut off than dead.
fn retainted(node: &Value, now: &str, full_disruption: bool) -> Option<Vec<Value>> {
    let have: Vec<Value> = node
        .pointer("/spec/taints")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let mut want = wanted_taints(node);
    if full_disruption {
        want.retain(|(_, effect)| *effect != "NoExecute");
    }
    let key_of = |t: &Value| {
        (
            t["key"].as_str().unwrap_or("").to_owned(),
            t["effect"].as_str().unwrap_or("").to_owned(),
        )
    };
    let mut out: Vec<Value> = have
        .iter()
        .filter(|t| {
            let (k, e) = key_of(t);
            !managed(&k, &e) || want.iter().any(|(wk, we)| *wk == k && *we == e)
        })
        .cloned()
        .collect();
    for (k, e) in &want {
        if !out
            .iter()
            .any(|t| key_of(t) == ((*k).to_owned(), (*e).to_owned()))
        {
            out.push(json!({"key": k, "effect": e, "timeAdded": now}));
        }
    }
    (out != have).then_some(out)
}

/// Keys: node names.
pub struct NodeLifecycleController {
    base: super::Base<String>,
    grace: Duration,
    health: Mutex<HashMap<String, Health>>,
    /// Nodes this controller made Unknown whose Pods are still to be marked not Ready.
    unmarked: Mutex<HashSet<String>>,
    /// Whether the last look found no Node Ready (kube's master disruption mode).
    disrupted: std::sync::atomic::AtomicBool,
}

/// kube's label that keeps a Node out of the disruption count.
const EXCLUDE_DISRUPTION: &str = "node.kubernetes.io/exclude-disruption";

impl NodeLifecycleController {
    pub fn new(service: Arc<Service>, grace: Duration) -> Arc<Self> {
        Arc::new(Self {
            base: super::Base::new(service),
            grace,
            health: Mutex::default(),
            unmarked: Mutex::default(),
            disrupted: std::sync::atomic::AtomicBool::new(false),
        })
    }

    pub fn start(
        self: &Arc<Self>,
        shutdown: tokio::sync::watch::Receiver<bool>,
    ) -> crate::runtime::driver::MetricsSource {
        self.base.start(&IDENTITY, self.clone(), shutdown)
    }

    fn health(&self) -> std::sync::MutexGuard<'_, HashMap<String, Health>> {
        self.health.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Since when the Node has had no heartbeat, and whether it ever posted a Ready condition.
    fn last_heartbeat(&self, name: &str) -> (Instant, bool) {
        let mut h = self.health();
        let e = h.entry(name.to_owned()).or_insert_with(|| Health {
            probe: Instant::now(),
            ready_heartbeat: None,
            has_ready: false,
            lease_renew: None,
        });
        (e.probe, e.has_ready)
    }

    async fn reconcile(&self, name: &str) -> Reconciled {
        let svc = &self.base.service;
        let Some(ri) = svc.registry.lookup("", "v1", NODES) else {
            return Ok(None);
        };
        let Ok(current) = svc.get(&ri, "", name) else {
            self.health().remove(name);
            return Ok(None);
        };
        let mut node = current.parse().into_owned();
        let (probe, has_ready) = self.last_heartbeat(name);
        let grace = if has_ready {
            self.grace
        } else {
            self.grace + STARTUP_EXTRA
        };
        let now = meta::now_rfc3339();
        let was_ready = ready_status(&node) == "True";
        let silent = probe.elapsed() > grace;
        if silent && mark_unknown(&mut node, &now) {
            if was_ready {
                self.unmarked_set().insert(name.to_owned());
            }
            let written = svc
                .update(
                    &ri,
                    "",
                    name,
                    node,
                    Subresource::Status,
                    &WriteOptions::default(),
                )
                .await;
            node = match written {
                Ok(w) => w.object.parse().into_owned(),
                Err(e) if e.code == 404 => return Ok(None),
                Err(e) => return Err(e.into()),
            };
            tracing::info!(node = name, "node stopped posting its status: Unknown");
            if was_ready {
                super::events::record(
                    svc,
                    COMPONENT,
                    &node,
                    false,
                    "NodeNotReady",
                    &format!("Node {name} status is now: NodeNotReady"),
                )
                .await;
            }
        }
        if self.unmarked_set().contains(name) {
            // Retried (with backoff) until every Pod is marked.
            self.mark_pods_not_ready(name).await?;
            self.unmarked_set().remove(name);
        }
        let full_disruption = self.full_disruption(name, &node);
        if let Some(taints) = retainted(&node, &now, full_disruption) {
            let mut v = node.clone();
            if let Some(spec) = v
                .as_object_mut()
                .map(|o| o.entry("spec").or_insert_with(|| json!({})))
                .and_then(Value::as_object_mut)
            {
                if taints.is_empty() {
                    spec.remove("taints");
                } else {
                    spec.insert("taints".into(), Value::Array(taints));
                }
            }
            super::write_back(svc, &ri, "", name, v, Subresource::Main).await?;
        }
        // Look again when the grace period would run out.
        Ok((!silent).then(|| grace.saturating_sub(probe.elapsed()) + Duration::from_millis(100)))
    }

    fn unmarked_set(&self) -> std::sync::MutexGuard<'_, HashSet<String>> {
        self.unmarked.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Whether no Node counted is Ready (`node`, as just written, in place of its stored self).
    fn full_disruption(&self, name: &str, node: &Value) -> bool {
        let counted = |n: &Value| {
            n.pointer("/metadata/labels")
                .and_then(|l| l.get(EXCLUDE_DISRUPTION))
                .is_none()
        };
        let mut any = false;
        let mut ready = false;
        for n in self.base.service.stored_in(NODES, "") {
            let parsed = n.parse();
            let v: &Value = if meta::name(&*parsed) == name {
                node
            } else {
                &parsed
            };
            if counted(v) {
                any = true;
                ready |= ready_status(v) == "True";
            }
        }
        let down = any && !ready;
        self.disrupted
            .store(down, std::sync::atomic::Ordering::SeqCst);
        down
    }

    /// kube's `MarkPodsNotReady`: the Pods bound to the Node get `Ready` False (those that have
    /// a Ready condition). Err: some could not be written (the key is retried).
    async fn mark_pods_not_ready(&self, node: &str) -> Result<(), super::ControllerError> {
        let svc = &self.base.service;
        let Some(pods) = svc.registry.lookup("", "v1", PODS) else {
            return Ok(());
        };
        let opts = ListOptions {
            field_selector: Some(format!("spec.nodeName={node}")),
            ..Default::default()
        };
        let list = svc.list(&pods, None, &opts).await?;
        let mut failed = None;
        let now = meta::now_rfc3339();
        for p in &list.items {
            let mut pod = p.parse().into_owned();
            let Some(c) = pod
                .pointer_mut("/status/conditions")
                .and_then(Value::as_array_mut)
                .and_then(|l| l.iter_mut().find(|c| c["type"] == "Ready"))
            else {
                continue;
            };
            if c["status"] == "False" {
                continue;
            }
            c["status"] = json!("False");
            c["lastTransitionTime"] = json!(now);
            let regarding = pod.clone();
            let (ns, name) = (
                meta::namespace(&pod).to_owned(),
                meta::name(&pod).to_owned(),
            );
            match svc
                .update(
                    &pods,
                    &ns,
                    &name,
                    pod,
                    Subresource::Status,
                    &WriteOptions::default(),
                )
                .await
            {
                Ok(_) => {
                    super::events::record(
                        svc,
                        COMPONENT,
                        &regarding,
                        true,
                        "NodeNotReady",
                        "Node is not ready",
                    )
                    .await;
                }
                Err(e) if e.code == 404 => {}
                Err(e) => failed = Some(e),
            }
        }
        failed.map_or(Ok(()), |e| Err(e.into()))
    }
}

impl super::Reconcile<String> for NodeLifecycleController {
    fn reconcile_key(&self, key: &String) -> impl std::future::Future<Output = Reconciled> + Send {
        self.reconcile(key)
    }
}

impl Follower for NodeLifecycleController {
    fn observe(
        &self,
        ri: &ResourceInfo,
        obj: &crate::store::StoredObject,
        prev: Option<&crate::store::StoredObject>,
        how: Observed,
    ) {
        let v = obj.head();
        let name = meta::name(v).to_owned();
        match (ri.group.as_str(), ri.resource.as_str()) {
            ("", NODES) => {
                if how == Observed::Deleted {
                    self.health().remove(&name);
                    return;
                }
                let node = obj.parse();
                let ready = condition(&node, "Ready");
                let heartbeat = ready
                    .and_then(|c| c["lastHeartbeatTime"].as_str())
                    .map(str::to_owned);
                let back = ready.is_some_and(|c| c["status"] == "True")
                    && prev.is_none_or(|p| ready_status(&p.parse()) != "True");
                let mut h = self.health();
                if back
                    && self
                        .disrupted
                        .swap(false, std::sync::atomic::Ordering::SeqCst)
                {
                    // Out of a full disruption: every Node gets its grace period again (as
                    // kube's controller resets its probe times) and its taints looked at.
                    let now = Instant::now();
                    for (n, e) in h.iter_mut() {
                        e.probe = now;
                        self.base.queue.add(n.clone());
                    }
                }
                match h.get_mut(&name) {
                    None => {
                        h.insert(
                            name.clone(),
                            Health {
                                probe: Instant::now(),
                                ready_heartbeat: heartbeat,
                                has_ready: ready.is_some(),
                                lease_renew: None,
                            },
                        );
                    }
                    Some(e) => {
                        if e.has_ready != ready.is_some() || e.ready_heartbeat != heartbeat {
                            e.probe = Instant::now();
                        }
                        e.has_ready = ready.is_some();
                        e.ready_heartbeat = heartbeat;
                    }
                }
            }
            ("coordination.k8s.io", "leases") => {
                if meta::namespace(v) != LEASE_NAMESPACE || how == Observed::Deleted {
                    return;
                }
                let lease = obj.parse();
                let renew = lease
                    .pointer("/spec/renewTime")
                    .and_then(Value::as_str)
                    .map(str::to_owned);
                let mut h = self.health();
                let Some(e) = h.get_mut(&name) else {
                    return;
                };
                // A newer renewal is a heartbeat (RFC 3339 times of one form compare as text).
                if renew.is_some() && renew > e.lease_renew {
                    e.probe = Instant::now();
                    e.lease_renew = renew;
                }
            }
            _ => return,
        }
        self.base.queue.add(name);
    }
}

/// kube's `ToleratesTaint`.
pub fn tolerates(toleration: &Value, taint: &Value) -> bool {
    let effect = toleration["effect"].as_str().unwrap_or("");
    if !effect.is_empty() && Some(effect) != taint["effect"].as_str() {
        return false;
    }
    let key = toleration["key"].as_str().unwrap_or("");
    if !key.is_empty() && Some(key) != taint["key"].as_str() {
        return false;
    }
    match toleration["operator"].as_str().unwrap_or("Equal") {
        "Exists" => true,
        "" | "Equal" => {
            toleration["value"].as_str().unwrap_or("") == taint["value"].as_str().unwrap_or("")
        }
        _ => false,
    }
}

/// kube's `processPodOnNode`: `None` when the Pod tolerates the taints for ever, else how long
/// it may stay (zero: not tolerated, or tolerated for no time).
pub fn eviction_delay(tolerations: &[Value], taints: &[Value]) -> Option<Duration> {
    // kube's `GetMatchingTolerations`: the first toleration of each taint.
    let mut used = Vec::new();
    for taint in taints {
        let Some(first) = tolerations.iter().find(|t| tolerates(t, taint)) else {
            return Some(Duration::ZERO);
        };
        used.push(first);
    }
    let seconds = used
        .iter()
        .filter_map(|t| t.get("tolerationSeconds").and_then(Value::as_i64))
        .min()?;
    Some(Duration::from_secs(seconds.max(0).unsigned_abs()))
}

fn no_execute_taints(node: &Value) -> Vec<Value> {
    node.pointer("/spec/taints")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|t| t["effect"] == "NoExecute")
        .cloned()
        .collect()
}

/// The longest a Pod's countdown waits before it is looked at again.
const MAX_WAIT: Duration = Duration::from_secs(60);

/// Keys: `(namespace, pod)`, or `("", node)` for every Pod of a Node whose NoExecute taints
/// changed.
pub struct TaintEvictionController {
    base: super::Base<(String, String)>,
    /// Nodes with NoExecute taints, and since when this controller has seen those taints (so a
    /// Pod event looks at its Node only when it has some, and a countdown starts no earlier).
    tainted: Mutex<HashMap<String, (Vec<Value>, Instant)>>,
    /// When a Pod was first seen on a tainted Node (its countdown's start).
    since: Mutex<HashMap<(String, String), Instant>>,
}

impl TaintEvictionController {
    pub fn new(service: Arc<Service>) -> Arc<Self> {
        Arc::new(Self {
            base: super::Base::new(service),
            tainted: Mutex::default(),
            since: Mutex::default(),
        })
    }

    pub fn start(
        self: &Arc<Self>,
        shutdown: tokio::sync::watch::Receiver<bool>,
    ) -> crate::runtime::driver::MetricsSource {
        self.base.start(&EVICTION_IDENTITY, self.clone(), shutdown)
    }

    fn since(&self) -> std::sync::MutexGuard<'_, HashMap<(String, String), Instant>> {
        self.since.lock().unwrap_or_else(|e| e.into_inner())
    }

    async fn reconcile(&self, ns: &str, name: &str) -> Reconciled {
        let svc = &self.base.service;
        let Some(pods) = svc.registry.lookup("", "v1", PODS) else {
            return Ok(None);
        };
        if ns.is_empty() {
            let opts = ListOptions {
                field_selector: Some(format!("spec.nodeName={name}")),
                ..Default::default()
            };
            for p in &svc.list(&pods, None, &opts).await?.items {
                let v = p.head();
                self.base
                    .queue
                    .add((meta::namespace(v).to_owned(), meta::name(v).to_owned()));
            }
            return Ok(None);
        }
        let key = (ns.to_owned(), name.to_owned());
        let Ok(current) = svc.get(&pods, ns, name) else {
            self.since().remove(&key);
            return Ok(None);
        };
        let pod = current.parse().into_owned();
        let node_name = pod
            .pointer("/spec/nodeName")
            .and_then(Value::as_str)
            .unwrap_or("");
        let taints = svc
            .store
            .get(&ObjectKey::new(NODES, "", node_name))
            .map(|n| no_execute_taints(&n.parse()))
            .unwrap_or_default();
        let tolerations: Vec<Value> = pod
            .pointer("/spec/tolerations")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let delay = if taints.is_empty() || terminating(&pod) {
            None
        } else {
            eviction_delay(&tolerations, &taints)
        };
        let Some(delay) = delay else {
            self.since().remove(&key);
            return Ok(None);
        };
        let tainted_at = self
            .tainted
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(node_name)
            .map(|(_, at)| *at);
        let started = {
            let mut since = self.since();
            let at = since.entry(key.clone()).or_insert_with(Instant::now);
            // Taints that came (again) after the Pod was first seen restart its countdown.
            if let Some(t) = tainted_at.filter(|t| *t > *at) {
                *at = t;
            }
            *at
        };
        let waited = started.elapsed();
        if waited < delay {
            // Looked at again at least every minute (a toleration of years is no timer).
            return Ok(Some((delay - waited).min(MAX_WAIT)));
        }
        tracing::info!(pod = %format!("{ns}/{name}"), node = node_name, "evicting pod from a NoExecute-tainted node");
        super::events::record(
            svc,
            EVICTION_IDENTITY.name,
            &pod,
            false,
            "TaintManagerEviction",
            &format!("Marking for deletion Pod {ns}/{name}"),
        )
        .await;
        let mut marked = pod.clone();
        if let Some(status) = marked
            .as_object_mut()
            .map(|o| o.entry("status").or_insert_with(|| json!({})))
            .and_then(Value::as_object_mut)
        {
            super::podgc::set_condition(
                status,
                json!({"type": "DisruptionTarget", "status": "True", "reason": "DeletionByTaintManager",
                    "message": "Taint manager: deleting due to NoExecute taint"}),
            );
        }
        match svc
            .update(
                &pods,
                ns,
                name,
                marked,
                Subresource::Status,
                &WriteOptions::default(),
            )
            .await
        {
            Ok(_) => {}
            Err(e) if e.code == 404 => return Ok(None),
            Err(e) => return Err(e.into()),
        }
        let opts = DeleteOptions {
            precondition_uid: Some(super::uid(&pod).to_owned()),
            ..Default::default()
        };
        match svc.delete(&pods, ns, name, &opts).await {
            Ok(_) => {}
            Err(e) if e.code == 404 || e.code == 409 => {}
            Err(e) => return Err(e.into()),
        }
        self.since().remove(&key);
        Ok(None)
    }
}

impl super::Reconcile<(String, String)> for TaintEvictionController {
    fn reconcile_key(
        &self,
        key: &(String, String),
    ) -> impl std::future::Future<Output = Reconciled> + Send {
        self.reconcile(&key.0, &key.1)
    }
}

impl Follower for TaintEvictionController {
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
            NODES => {
                let name = meta::name(v).to_owned();
                let taints = if how == Observed::Deleted {
                    Vec::new()
                } else {
                    no_execute_taints(&obj.parse())
                };
                let before = prev
                    .map(|p| no_execute_taints(&p.parse()))
                    .unwrap_or_default();
                {
                    let mut t = self.tainted.lock().unwrap_or_else(|e| e.into_inner());
                    if taints.is_empty() {
                        t.remove(&name);
                    } else if t.get(&name).is_none_or(|(seen, _)| *seen != taints) {
                        t.insert(name.clone(), (taints.clone(), Instant::now()));
                    }
                }
                if taints != before || (how == Observed::Listed && !taints.is_empty()) {
                    self.base.queue.add((String::new(), name));
                }
            }
            PODS => {
                let key = (meta::namespace(v).to_owned(), meta::name(v).to_owned());
                if how == Observed::Deleted {
                    self.since().remove(&key);
                    return;
                }
                let pod = obj.pick("spec", &["nodeName"]);
                let node = pod["nodeName"].as_str().unwrap_or("");
                let tainted = !node.is_empty()
                    && self
                        .tainted
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .contains_key(node);
                if tainted {
                    self.base.queue.add(key);
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
    fn a_silent_node_goes_unknown_and_is_tainted_unreachable() {
        let mut node = json!({"metadata": {"name": "n", "creationTimestamp": "2026-01-01T00:00:00Z"},
            "spec": {"taints": [{"key": "dedicated", "value": "db", "effect": "NoSchedule"}]},
            "status": {"conditions": [
                {"type": "Ready", "status": "True", "reason": "KubeletReady", "lastHeartbeatTime": "h"}]}});
        assert!(retainted(&node, "t", false).is_none());
        // A Node that never posted a Ready condition: no taint yet.
        let fresh = json!({"metadata": {"name": "m"}});
        assert!(retainted(&fresh, "t", false).is_none());
        assert!(mark_unknown(&mut node, "t1"));
        assert!(!mark_unknown(&mut node, "t2"));
        let ready = condition(&node, "Ready").unwrap();
        assert_eq!(ready["status"], "Unknown");
        assert_eq!(ready["reason"], "NodeStatusUnknown");
        assert_eq!(ready["message"], "Kubelet stopped posting node status.");
        assert_eq!(ready["lastHeartbeatTime"], "h");
        assert_eq!(ready["lastTransitionTime"], "t1");
        let never = condition(&node, "PIDPressure").unwrap();
        assert_eq!(never["reason"], "NodeStatusNeverUpdated");
        // No Node Ready anywhere: no NoExecute taint.
        let calm = retainted(&node, "t3", true).unwrap();
        assert_eq!(calm.len(), 2);
        assert_eq!(calm[1]["effect"], "NoSchedule");
        let taints = retainted(&node, "t3", false).unwrap();
        assert_eq!(taints.len(), 3);
        assert_eq!(
            taints[1],
            json!({"key": UNREACHABLE, "effect": "NoSchedule", "timeAdded": "t3"})
        );
        assert_eq!(taints[2]["effect"], "NoExecute");
        // Ready again: the node's own taint stays, the controller's go.
        node["spec"]["taints"] = Value::Array(taints);
        node["status"]["conditions"][0]["status"] = json!("True");
        let back = retainted(&node, "t4", false).unwrap();
        assert_eq!(
            back,
            vec![json!({"key": "dedicated", "value": "db", "effect": "NoSchedule"})]
        );
    }

    #[test]
    fn a_cordoned_node_is_tainted_unschedulable_until_uncordoned() {
        let mut node = json!({"metadata": {"name": "n"}, "spec": {"unschedulable": true},
            "status": {"conditions": [{"type": "Ready", "status": "True"},
                {"type": "NetworkUnavailable", "status": "True"}]}});
        let taints = retainted(&node, "t", false).unwrap();
        assert_eq!(
            taints,
            vec![
                json!({"key": "node.kubernetes.io/network-unavailable", "effect": "NoSchedule", "timeAdded": "t"}),
                json!({"key": UNSCHEDULABLE, "effect": "NoSchedule", "timeAdded": "t"}),
            ]
        );
        node["spec"]["taints"] = Value::Array(taints);
        assert!(retainted(&node, "t2", false).is_none());
        node["spec"]["unschedulable"] = json!(false);
        node["status"]["conditions"][1]["status"] = json!("False");
        assert_eq!(retainted(&node, "t3", false), Some(vec![]));
    }

    #[test]
    fn eviction_waits_for_the_shortest_toleration() {
        let taints = vec![json!({"key": UNREACHABLE, "effect": "NoExecute"})];
        let default = json!({"key": UNREACHABLE, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300});
        assert_eq!(
            eviction_delay(std::slice::from_ref(&default), &taints),
            Some(Duration::from_secs(300))
        );
        assert_eq!(eviction_delay(&[], &taints), Some(Duration::ZERO));
        let forever = json!({"operator": "Exists"});
        assert_eq!(
            eviction_delay(std::slice::from_ref(&forever), &taints),
            None
        );
        // The first matching toleration counts, as in kube.
        assert_eq!(
            eviction_delay(&[forever.clone(), default.clone()], &taints),
            None
        );
        assert_eq!(
            eviction_delay(&[default, forever], &taints),
            Some(Duration::from_secs(300))
        );
        let other = json!({"key": "x", "operator": "Equal", "value": "y", "effect": "NoExecute"});
        assert!(!tolerates(&other, &taints[0]));
    }
}
