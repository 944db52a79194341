//! kube-controller-manager's `disruption` controller: keeps each PodDisruptionBudget's status —
//! how many of the Pods it selects are healthy (Ready, not being deleted, not just evicted),
//! how many must be, and so how many disruptions `pods/eviction` may allow now
//! (`builtin::disruption`).
//!
//! A budget is looked at again when it changes, when a Pod it selects (before or after the
//! change) comes, changes or goes, and when an eviction it recorded in `status.disruptedPods`
//! is older than kube's two-minute deletion timeout. A `minAvailable` count compares with the
//! Pods selected; a percentage, or `maxUnavailable`, with the replicas their controllers want
//! (a Deployment through its ReplicaSet, or any kind with a `scale` subresource). A budget
//! whose status cannot be computed gets `disruptionsAllowed: 0` and a `SyncFailed` condition,
//! so evictions stop rather than guess.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Map, Value};

use super::{ControllerError, Follower, Observed, Reconciled};
use crate::builtin::disruption::{self as pdb, int, GROUP, RESOURCE};
use crate::model::meta::{self, Meta, OwnerRefView};
use crate::model::ResourceInfo;
use crate::selector::{label_selector_string, LabelSelector};
use crate::service::{ListOptions, Service, Subresource};
use crate::store::StoredObject;

pub const IDENTITY: super::Identity = super::Identity {
    name: "disruption-controller",
    description: "Keeps each PodDisruptionBudget's status: the healthy Pods it selects, how many it needs, and the disruptions pods/eviction may allow.",
    workers: 2,
};
const PODS: &str = "pods";

/// A sync yields its worker once it has scanned about this many bytes of stored JSON (a
/// millisecond or so): a budget over thousands of Pods, or over large ones, does not keep a
/// worker from the requests waiting for it. kube's controller runs on threads of its own.
const YIELD_BYTES: usize = 256 << 10;
/// What a Pod costs that is looked at only through its head, or whose readiness is
/// remembered (a few hash lookups), in the [`Pacer`]'s bytes.
const HEAD_COST: usize = 64;
/// At most this many Pod versions' readiness is remembered ([`Readiness`]); past it all is
/// forgotten (and found again by the next syncs), so that nothing a missed deletion leaves
/// grows without bound. Some 100 bytes each.
const MAX_REMEMBERED: usize = 1 << 18;

/// What the index keeps of a budget.
struct Indexed {
    /// The Pods it counts (`None`: none).
    selector: Option<LabelSelector>,
    /// Its numbers depend on the scale of the Pods' controllers (a percentage or
    /// `maxUnavailable`).
    scaled: bool,
}

/// Budgets by namespace, then name.
type Index = HashMap<String, HashMap<String, Indexed>>;

/// The Pods a budget's status counts, as kube's `getPodsForPdb` selects them: none without a
/// selector, every Pod of the namespace with an empty one (unlike an eviction, which matches
/// nothing then); `Err` for one that does not parse.
fn counted(budget: &Value) -> Result<Option<LabelSelector>, String> {
    match budget.pointer("/spec/selector").filter(|s| !s.is_null()) {
        None => Ok(None),
        Some(sel) => LabelSelector::parse(&label_selector_string(sel))
            .map(Some)
            .map_err(|e| e.to_string()),
    }
}

fn scaled(budget: &Value) -> bool {
    let spec = budget.get("spec");
    let field = |f: &str| spec.and_then(|s| s.get(f)).filter(|v| !v.is_null());
    field("maxUnavailable").is_some() || field("minAvailable").is_some_and(Value::is_string)
}

pub struct DisruptionController {
    base: super::Base<(String, String)>,
    budgets: Mutex<Index>,
    readiness: Mutex<Readiness>,
}

/// Whether each Pod version a sync looked at is Ready, by namespace, name and resourceVersion.
/// A change to one Pod syncs every budget that selects it, and each sync counts all of their
/// Pods: without it, 600 budgets over the same 600 Pods would scan 360,000 Pods' JSON for one
/// label patch. A version's readiness never changes, so an entry is right for as long as its
/// resourceVersion is the Pod's; a Pod's deletion forgets it.
#[derive(Default)]
struct Readiness {
    pods: HashMap<String, HashMap<String, (u64, bool)>>,
    len: usize,
}

impl Readiness {
    fn get(&self, ns: &str, name: &str, rv: u64) -> Option<bool> {
        self.pods
            .get(ns)?
            .get(name)
            .filter(|(at, _)| *at == rv)
            .map(|(_, ready)| *ready)
    }

    fn put(&mut self, ns: &str, name: &str, rv: u64, ready: bool) {
        // A version read from bytes without a resourceVersion says nothing of its revision.
        if rv == 0 {
            return;
        }
        if self.len >= MAX_REMEMBERED {
            *self = Self::default();
        }
        let names = self.pods.entry(ns.to_owned()).or_default();
        if names.insert(name.to_owned(), (rv, ready)).is_none() {
            self.len += 1;
        }
    }

    fn forget(&mut self, ns: &str, name: &str) {
        let Some(names) = self.pods.get_mut(ns) else {
            return;
        };
        if names.remove(name).is_some() {
            self.len = self.len.saturating_sub(1);
        }
        if names.is_empty() {
            self.pods.remove(ns);
        }
    }
}

/// Counts the work of a sync, and yields its worker every [`YIELD_BYTES`] of it.
#[derive(Default)]
struct Pacer {
    since_yield: usize,
}

impl Pacer {
    async fn spent(&mut self, bytes: usize) {
        self.since_yield = self.since_yield.saturating_add(bytes);
        if self.since_yield >= YIELD_BYTES {
            self.since_yield = 0;
            tokio::task::yield_now().await;
        }
    }
}

impl DisruptionController {
    pub fn new(service: Arc<Service>) -> Arc<Self> {
        Arc::new(Self {
            base: super::Base::new(service),
            budgets: Mutex::default(),
            readiness: Mutex::default(),
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
        let Some(pdbs) = svc.registry.lookup(GROUP, "v1", RESOURCE) else {
            return Ok(None);
        };
        let budget = match svc.get(&pdbs, ns, name) {
            Ok(b) => b.parse().into_owned(),
            Err(e) if e.code == 404 => return Ok(None),
            Err(e) => return Err(e.into()),
        };
        match self.sync(&pdbs, ns, &budget).await {
            Ok(recheck) => Ok(recheck),
            // A lost race (an eviction spent the allowance meanwhile) is read again, without
            // the fail-safe (as kube's `sync`).
            Err(ControllerError::Api(e)) if e.code == 409 => Err(ControllerError::Api(e)),
            Err(e) => {
                // kube's `failSafe`: no disruption while the status cannot be known.
                let mut b = budget;
                let Some(status) = status_of(&mut b) else {
                    return Err(e);
                };
                status.insert("disruptionsAllowed".into(), json!(0));
                pdb::set_allowed_condition(status, "False", pdb::SYNC_FAILED, &e.to_string());
                super::write_back(svc, &pdbs, ns, name, b, Subresource::Status).await?;
                Err(e)
            }
        }
    }

    /// kube's `trySync`: the status from the Pods the budget selects now.
    ///
    /// No Pod is parsed whole (a Pod can be a megabyte of JSON, and a tenant's Pod change
    /// syncs every budget that selects it): the Pods are selected by the labels of their heads,
    /// whose names, deletion marks and owner references are read there too; only
    /// `status.conditions` is picked from the stored JSON, once per Pod version
    /// ([`Readiness`]). Counts are kept as it goes, and it yields its worker now and then
    /// ([`Pacer`]).
    async fn sync(&self, pdbs: &ResourceInfo, ns: &str, budget: &Value) -> Reconciled {
        let svc = &self.base.service;
        let pods_ri = svc
            .registry
            .lookup("", "v1", PODS)
            .ok_or_else(|| ControllerError::UnknownKind("pods".into()))?;
        let pods: Vec<Arc<StoredObject>> =
            match counted(budget).map_err(ControllerError::Disruption)? {
                None => Vec::new(),
                Some(_) => {
                    let sel = budget
                        .pointer("/spec/selector")
                        .map(label_selector_string)
                        .unwrap_or_default();
                    let opts = ListOptions {
                        label_selector: Some(sel),
                        ..ListOptions::default()
                    };
                    // Pointers to the stored versions (matched on their heads): nothing parsed.
                    svc.list(&pods_ri, Some(ns), &opts).await?.items
                }
            };
        let mut pacer = Pacer::default();
        let (expected, desired) = self.expected_pods(budget, &pods, &mut pacer).await?;
        let now = chrono::Utc::now();
        let timeout = chrono::Duration::from_std(pdb::DELETION_TIMEOUT).unwrap_or_default();
        // Evictions recorded but not yet seen as deletions, until they time out.
        let recorded = budget
            .pointer("/status/disruptedPods")
            .and_then(Value::as_object);
        let mut disrupted = BTreeMap::new();
        let mut recheck: Option<chrono::DateTime<chrono::Utc>> = None;
        // kube's `buildDisruptedPodMap` and `countHealthyPods` in one pass: a Pod being deleted
        // is neither; one recorded within the timeout is disrupted and not healthy; any other
        // counts when Ready.
        let mut healthy = 0i64;
        for p in &pods {
            let head = p.head();
            if meta::meta_str(head, "deletionTimestamp").is_some() {
                pacer.spent(HEAD_COST).await;
                continue;
            }
            let name = meta::name(head);
            if let Some(at) = recorded.and_then(|r| r.get(name)) {
                let when = at
                    .as_str()
                    .and_then(|s| chrono::DateTime::parse_from_rfc3339(s).ok())
                    .map(|t| t.with_timezone(&chrono::Utc));
                if let Some(when) = when {
                    let expected_deletion = when + timeout;
                    if expected_deletion >= now {
                        recheck =
                            Some(recheck.map_or(expected_deletion, |r| r.min(expected_deletion)));
                        disrupted.insert(name.to_owned(), at.clone());
                        pacer.spent(HEAD_COST).await;
                        continue;
                    }
                }
            }
            let (ready, cost) = self.ready(ns, p);
            if ready {
                healthy += 1;
            }
            pacer.spent(cost).await;
        }
        let allowed = if expected <= 0 {
            0
        } else {
            healthy.saturating_sub(desired).max(0)
        };
        let generation = int(budget, "/metadata/generation");
        let unchanged = int(budget, "/status/currentHealthy") == healthy
            && int(budget, "/status/desiredHealthy") == desired
            && int(budget, "/status/expectedPods") == expected
            && int(budget, "/status/disruptionsAllowed") == allowed
            && same_disrupted(budget.pointer("/status/disruptedPods"), &disrupted)
            && int(budget, "/status/observedGeneration") == generation
            && pdb::conditions_up_to_date(budget);
        let after =
            recheck.map(|r| (r - now).to_std().unwrap_or_default() + Duration::from_millis(10));
        if unchanged {
            return Ok(after);
        }
        let mut b = budget.clone();
        let conditions = b
            .pointer("/status/conditions")
            .cloned()
            .unwrap_or_else(|| json!([]));
        // kube's field order for PodDisruptionBudgetStatus.
        let mut status = Map::new();
        status.insert("observedGeneration".into(), json!(generation));
        if !disrupted.is_empty() {
            status.insert("disruptedPods".into(), json!(disrupted));
        }
        status.insert("disruptionsAllowed".into(), json!(allowed));
        status.insert("currentHealthy".into(), json!(healthy));
        status.insert("desiredHealthy".into(), json!(desired));
        status.insert("expectedPods".into(), json!(expected));
        status.insert("conditions".into(), conditions);
        pdb::update_allowed_condition(&mut status);
        if let Some(o) = b.as_object_mut() {
            o.insert("status".into(), Value::Object(status));
        }
        let name = meta::name(budget).to_owned();
        super::write_back(svc, pdbs, ns, &name, b, Subresource::Status).await?;
        Ok(after)
    }

    /// Whether `pod` (of namespace `ns`) is Ready, and what finding out cost (for the
    /// [`Pacer`]): remembered for its version, else picked from its JSON and remembered.
    fn ready(&self, ns: &str, pod: &StoredObject) -> (bool, usize) {
        let name = meta::name(pod.head());
        let known = self
            .readiness
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(ns, name, pod.rv);
        if let Some(ready) = known {
            return (ready, HEAD_COST);
        }
        // Picked without the lock: the other worker's syncs need not wait for the scan.
        let ready = ready_of(pod);
        self.readiness
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .put(ns, name, pod.rv, ready);
        (ready, pod.json.len())
    }

    /// kube's `getExpectedPodCount`: (expected Pods, desired healthy Pods).
    async fn expected_pods(
        &self,
        budget: &Value,
        pods: &[Arc<StoredObject>],
        pacer: &mut Pacer,
    ) -> Result<(i64, i64), ControllerError> {
        let spec = budget.get("spec");
        let field = |f: &str| spec.and_then(|s| s.get(f)).filter(|v| !v.is_null());
        if let Some(max) = field("maxUnavailable") {
            let expected = self.expected_scale(pods, pacer).await?;
            let max = pdb::scaled_value(max, expected, true)
                .ok_or_else(|| invalid_int_or_percent(max))?;
            return Ok((expected, expected.saturating_sub(max).max(0)));
        }
        match field("minAvailable") {
            Some(Value::Number(n)) => Ok((pods.len() as i64, n.as_i64().unwrap_or(0))),
            Some(min) => {
                let expected = self.expected_scale(pods, pacer).await?;
                let min = pdb::scaled_value(min, expected, true)
                    .ok_or_else(|| invalid_int_or_percent(min))?;
                Ok((expected, min))
            }
            None => Ok((0, 0)),
        }
    }

    /// kube's `getExpectedScale`: the replicas the selected Pods' controllers want, each
    /// controller counted once. Pods without a controller are left out (kube warns of them).
    /// The Pods' owner references are read from their heads.
    async fn expected_scale(
        &self,
        pods: &[Arc<StoredObject>],
        pacer: &mut Pacer,
    ) -> Result<i64, ControllerError> {
        let mut scales: HashMap<String, i64> = HashMap::new();
        for p in pods {
            pacer.spent(HEAD_COST).await;
            let head = p.head();
            let Some(owner) = controller_of(head) else {
                continue;
            };
            if scales.contains_key(owner.uid) {
                continue;
            }
            let ns = meta::namespace(head);
            match self.controller_scale(ns, &owner, pacer).await? {
                Some((uid, replicas)) => {
                    scales.insert(uid, replicas);
                }
                None => {
                    return Err(ControllerError::Disruption(format!(
                        "found no controllers for pod \"{}\"",
                        meta::name(head)
                    )))
                }
            }
        }
        Ok(scales.values().fold(0i64, |a, b| a.saturating_add(*b)))
    }

    /// The (uid, replicas) of the controller `owner` names, if it is there with that uid: a
    /// ReplicaSet's Deployment when it has one, else any kind with a `scale` subresource. Read
    /// from the controllers' heads and a pick of their replicas (a template can be large).
    async fn controller_scale(
        &self,
        ns: &str,
        owner: &OwnerRefView<'_>,
        pacer: &mut Pacer,
    ) -> Result<Option<(String, i64)>, ControllerError> {
        let svc = &self.base.service;
        let (api_version, kind, name, uid) = (owner.api_version, owner.kind, owner.name, owner.uid);
        let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
        let Some(ri) = svc.registry.lookup_kind(group, version, kind) else {
            return Err(ControllerError::Disruption(format!(
                "no matches for kind \"{kind}\" in version \"{api_version}\""
            )));
        };
        let Some(scale) = &ri.scale else {
            return Err(ControllerError::Disruption(format!(
                "{} does not implement the scale subresource",
                if ri.group.is_empty() {
                    ri.resource.clone()
                } else {
                    format!("{}.{}", ri.resource, ri.group)
                }
            )));
        };
        let obj = match svc.get(&ri, ns, name) {
            Ok(o) => o,
            Err(e) if e.code == 404 => return Ok(None),
            Err(e) => return Err(e.into()),
        };
        if super::uid(obj.head()) != uid {
            return Ok(None);
        }
        pacer.spent(obj.json.len()).await;
        // A ReplicaSet a Deployment controls counts as its Deployment (kube's
        // `getPodDeployment`).
        if matches!(group, "apps" | "extensions") && kind == "ReplicaSet" {
            if let Some(dep) = controller_of(obj.head()).filter(|d| {
                d.kind == "Deployment"
                    && (d.api_version.starts_with("apps/")
                        || d.api_version.starts_with("extensions/"))
            }) {
                if let Some(deployments) = svc.registry.lookup("apps", "v1", "deployments") {
                    if let Ok(d) = svc.get(&deployments, ns, dep.name) {
                        if super::uid(d.head()) == dep.uid {
                            pacer.spent(d.json.len()).await;
                            let replicas = int_at(&d, "/spec/replicas");
                            return Ok(Some((dep.uid.to_owned(), replicas)));
                        }
                    }
                }
            }
        }
        let pointer = scale.spec_replicas_path.replace('.', "/");
        Ok(Some((uid.to_owned(), int_at(&obj, &pointer))))
    }

    /// Queue every budget in `ns` whose selector matches `labels`.
    fn queue_matching<'a>(&self, ns: &str, labels: impl Fn(&str) -> Option<&'a str> + Copy) {
        self.queue_where(ns, |b| {
            b.selector.as_ref().is_some_and(|s| s.matches(labels))
        });
    }

    fn queue_where(&self, ns: &str, pick: impl Fn(&Indexed) -> bool) {
        let index = self.budgets.lock().unwrap_or_else(|e| e.into_inner());
        let Some(budgets) = index.get(ns) else {
            return;
        };
        for (name, b) in budgets {
            if pick(b) {
                self.base.queue.add((ns.to_owned(), name.clone()));
            }
        }
    }
}

fn invalid_int_or_percent(v: &Value) -> ControllerError {
    ControllerError::Disruption(format!("invalid value for IntOrString: invalid value {v}"))
}

/// `status` of a budget, made an object if it is not one.
fn status_of(b: &mut Value) -> Option<&mut Map<String, Value>> {
    let s = b
        .as_object_mut()?
        .entry("status")
        .or_insert_with(|| json!({}));
    if !s.is_object() {
        *s = json!({});
    }
    s.as_object_mut()
}

/// The owner reference with `controller: true`.
fn controller_of(head: &crate::store::Head) -> Option<OwnerRefView<'_>> {
    head.owner_references().into_iter().find(|r| r.controller)
}

/// Whether a Pod is Ready (kube's `IsPodReady`), from its `status.conditions` alone: a pick
/// scans the rest of the Pod's JSON (its spec, its managed fields) without building it.
fn ready_of(pod: &StoredObject) -> bool {
    let mut only_status = Map::new();
    only_status.insert("status".into(), pod.pick("status", &["conditions"]));
    pdb::pod_ready(&Value::Object(only_status))
}

/// The value at `pointer` (a JSON pointer such as `/spec/replicas`, a `scale`'s
/// `specReplicasPath`) in `obj`: picked from its top-level field when the pointer is two or
/// more levels deep and has no escapes, so that a controller's replicas are read without
/// parsing its Pod template; else from the whole object.
fn value_at(obj: &StoredObject, pointer: &str) -> Option<Value> {
    let split = pointer
        .strip_prefix('/')
        .and_then(|p| p.split_once('/'))
        .filter(|_| !pointer.contains('~'));
    match split {
        Some((field, rest)) => {
            let key = rest.split('/').next().unwrap_or(rest);
            obj.pick(field, &[key])
                .pointer(&format!("/{rest}"))
                .cloned()
        }
        None => obj.parse().pointer(pointer).cloned(),
    }
}

/// [`value_at`] as an integer, 0 if it is not one (as [`int`]).
fn int_at(obj: &StoredObject, pointer: &str) -> i64 {
    value_at(obj, pointer).and_then(|v| v.as_i64()).unwrap_or(0)
}

fn same_disrupted(stored: Option<&Value>, now: &BTreeMap<String, Value>) -> bool {
    match stored.and_then(Value::as_object) {
        None => now.is_empty(),
        Some(m) => m.len() == now.len() && m.iter().all(|(k, v)| now.get(k) == Some(v)),
    }
}

impl super::Reconcile<(String, String)> for DisruptionController {
    fn reconcile_key(
        &self,
        key: &(String, String),
    ) -> impl std::future::Future<Output = Reconciled> + Send {
        self.reconcile(&key.0, &key.1)
    }
}

impl Follower for DisruptionController {
    fn observe(
        &self,
        ri: &ResourceInfo,
        obj: &StoredObject,
        prev: Option<&StoredObject>,
        how: Observed,
    ) {
        let head = obj.head();
        let ns = meta::namespace(head).to_owned();
        if ri.group == GROUP && ri.resource == RESOURCE {
            let name = meta::name(head).to_owned();
            let mut index = self.budgets.lock().unwrap_or_else(|e| e.into_inner());
            if how == Observed::Deleted {
                if let Some(b) = index.get_mut(&ns) {
                    b.remove(&name);
                    if b.is_empty() {
                        index.remove(&ns);
                    }
                }
                return;
            }
            let v = obj.parse();
            let entry = Indexed {
                selector: counted(&v).ok().flatten(),
                scaled: scaled(&v),
            };
            index
                .entry(ns.clone())
                .or_default()
                .insert(name.clone(), entry);
            drop(index);
            self.base.queue.add((ns, name));
            return;
        }
        if how == Observed::Listed {
            // Budgets listed at start are queued themselves.
            return;
        }
        if let Some(scale) = &ri.scale {
            // A controller's scale changed, came or went: the budgets that count scales (kube's
            // controller learns of it only through the Pods its ReplicaSet controller changes;
            // turtles runs that one only as an example guest).
            let any = self
                .budgets
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .get(&ns)
                .is_some_and(|b| b.values().any(|b| b.scaled));
            if !any {
                return;
            }
            let path = scale.spec_replicas_path.replace('.', "/");
            let changed = how == Observed::Deleted
                || prev.is_none_or(|p| value_at(p, &path) != value_at(obj, &path));
            if changed {
                self.queue_where(&ns, |b| b.scaled);
            }
            return;
        }
        if !(ri.group.is_empty() && ri.resource == PODS) {
            return;
        }
        if how == Observed::Deleted {
            self.readiness
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .forget(&ns, meta::name(head));
        }
        // The labels are collected once per event; each budget's selector then looks them up
        // (no Pod is parsed here, and none per budget).
        let labels = |h: &crate::store::Head| {
            h.labels()
                .map(|(k, v)| (k.to_owned(), v.to_owned()))
                .collect::<HashMap<_, _>>()
        };
        let now = labels(head);
        self.queue_matching(&ns, |k| now.get(k).map(String::as_str));
        if let Some(p) = prev {
            let before = labels(p.head());
            if before != now {
                self.queue_matching(&ns, |k| before.get(k).map(String::as_str));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::ObjectKey;
    use crate::service::WriteOptions;
    use crate::store::{Precondition, WriteOp};

    const NS: &str = "default";

    async fn service(tag: &str) -> (Arc<Service>, std::path::PathBuf) {
        let (store, dir) = crate::store::sled_store::temp_store(tag);
        let svc = Arc::new(Service::new(
            store,
            Arc::new(crate::model::Registry::with_builtins()),
        ));
        svc.bootstrap().await.unwrap();
        (svc, dir)
    }

    /// Store `value` as it is (no admission, defaults or validation: a Pod's status, deletion
    /// mark and owners as written here).
    async fn put(svc: &Service, resource: &str, value: Value) -> Arc<StoredObject> {
        let key = ObjectKey::new(resource, meta::namespace(&value), meta::name(&value));
        let precondition = if svc.store.get(&key).is_some() {
            Precondition::Exists
        } else {
            Precondition::MustNotExist
        };
        svc.store
            .write(WriteOp::Put {
                key,
                value,
                precondition,
            })
            .await
            .unwrap()
    }

    /// A Pod labelled `app`, with a Ready condition when `ready` is given.
    fn pod(name: &str, app: &str, ready: Option<bool>) -> Value {
        let mut p = json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": NS, "uid": format!("uid-{name}"),
                "labels": {"app": app}},
            "spec": {"containers": [{"name": "c", "image": "nginx"}]}});
        if let Some(ready) = ready {
            p["status"] = json!({"phase": "Running", "conditions": [
                {"type": "PodScheduled", "status": "True"},
                {"type": "Ready", "status": if ready { "True" } else { "False" }}]});
        }
        p
    }

    async fn budget(svc: &Service, name: &str, spec: Value) {
        let pdbs = svc.registry.lookup(GROUP, "v1", RESOURCE).unwrap();
        let b = json!({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
            "metadata": {"name": name}, "spec": spec});
        svc.create(&pdbs, NS, b, &WriteOptions::default())
            .await
            .unwrap();
    }

    fn status(svc: &Service, name: &str) -> Value {
        let pdbs = svc.registry.lookup(GROUP, "v1", RESOURCE).unwrap();
        svc.get(&pdbs, NS, name).unwrap().value()["status"].clone()
    }

    /// (expectedPods, desiredHealthy, currentHealthy, disruptionsAllowed).
    fn counts(status: &Value) -> (i64, i64, i64, i64) {
        (
            int(status, "/expectedPods"),
            int(status, "/desiredHealthy"),
            int(status, "/currentHealthy"),
            int(status, "/disruptionsAllowed"),
        )
    }

    fn allowed_condition(status: &Value) -> (String, String) {
        let c = status["conditions"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|c| c["type"] == pdb::CONDITION)
            .cloned()
            .unwrap_or(Value::Null);
        (
            c["status"].as_str().unwrap_or("").to_owned(),
            c["reason"].as_str().unwrap_or("").to_owned(),
        )
    }

    /// The counts kube's controller gives (and this one gave when it parsed every Pod whole):
    /// Pods being deleted, recorded as evicted within the timeout, not Ready or without a
    /// status are not healthy; an eviction recorded past the timeout is dropped; a percentage
    /// and `maxUnavailable` count the replicas of the Pods' ReplicaSet's Deployment, read from
    /// heads and picks. A sync that finds nothing to change writes nothing.
    #[tokio::test]
    async fn a_budget_counts_its_pods_as_kube_does() {
        let (svc, dir) = service("pdb-counts").await;
        let ctl = DisruptionController::new(svc.clone());
        let deployments = svc.registry.lookup("apps", "v1", "deployments").unwrap();
        let replicasets = svc.registry.lookup("apps", "v1", "replicasets").unwrap();
        put(
            &svc,
            &deployments.group_resource(),
            json!({"apiVersion": "apps/v1", "kind": "Deployment",
                "metadata": {"name": "web", "namespace": NS, "uid": "dep-uid"},
                "spec": {"replicas": 5}}),
        )
        .await;
        put(
            &svc,
            &replicasets.group_resource(),
            json!({"apiVersion": "apps/v1", "kind": "ReplicaSet",
                "metadata": {"name": "web-1", "namespace": NS, "uid": "rs-uid",
                    "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment",
                        "name": "web", "uid": "dep-uid", "controller": true}]},
                "spec": {"replicas": 3}}),
        )
        .await;
        let owned = |mut p: Value| {
            p["metadata"]["ownerReferences"] = json!([{"apiVersion": "apps/v1",
                "kind": "ReplicaSet", "name": "web-1", "uid": "rs-uid", "controller": true}]);
            p
        };
        let mut going = pod("going", "web", Some(true));
        going["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
        for p in [
            pod("ready", "web", Some(true)),
            pod("unready", "web", Some(false)),
            going,
            pod("evicted", "web", Some(true)),
            pod("new", "web", None),
            pod("evicted-long-ago", "web", Some(true)),
        ] {
            put(&svc, PODS, owned(p)).await;
        }
        put(&svc, PODS, pod("other", "other", Some(true))).await;

        budget(
            &svc,
            "web",
            json!({"minAvailable": 1, "selector": {"matchLabels": {"app": "web"}}}),
        )
        .await;
        budget(
            &svc,
            "web-max",
            json!({"maxUnavailable": 1, "selector": {"matchLabels": {"app": "web"}}}),
        )
        .await;
        budget(
            &svc,
            "web-pct",
            json!({"minAvailable": "40%", "selector": {"matchLabels": {"app": "web"}}}),
        )
        .await;
        // Two evictions recorded in `web`: one now, one past kube's two-minute timeout.
        let pdbs = svc.registry.lookup(GROUP, "v1", RESOURCE).unwrap();
        let at =
            |t: chrono::DateTime<chrono::Utc>| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
        let now = at(chrono::Utc::now());
        let long_ago = at(chrono::Utc::now() - chrono::Duration::seconds(600));
        let mut web = svc.get(&pdbs, NS, "web").unwrap().value().clone();
        web["status"]["disruptedPods"] = json!({"evicted": now, "evicted-long-ago": long_ago});
        svc.update(
            &pdbs,
            NS,
            "web",
            web,
            Subresource::Status,
            &WriteOptions::default(),
        )
        .await
        .unwrap();

        let recheck = ctl.reconcile(NS, "web").await.unwrap();
        assert!(recheck.is_some(), "the recorded eviction times out later");
        let st = status(&svc, "web");
        // Selected: six Pods; healthy: `ready` and `evicted-long-ago`.
        assert_eq!(counts(&st), (6, 1, 2, 1), "{st}");
        assert_eq!(st["disruptedPods"], json!({"evicted": now}), "{st}");
        assert_eq!(st["observedGeneration"], 1, "{st}");
        assert_eq!(
            allowed_condition(&st),
            ("True".into(), pdb::SUFFICIENT_PODS.into())
        );

        // The Deployment's 5 replicas; healthy: `ready`, `evicted` (not recorded here) and
        // `evicted-long-ago`.
        assert_eq!(ctl.reconcile(NS, "web-max").await.unwrap(), None);
        let st = status(&svc, "web-max");
        assert_eq!(counts(&st), (5, 4, 3, 0), "{st}");
        assert_eq!(
            allowed_condition(&st),
            ("False".into(), pdb::INSUFFICIENT_PODS.into())
        );
        // 40% of 5, rounded up.
        ctl.reconcile(NS, "web-pct").await.unwrap();
        assert_eq!(counts(&status(&svc, "web-pct")), (5, 2, 3, 1));

        let before = svc.store.revision();
        for name in ["web", "web-max", "web-pct"] {
            ctl.reconcile(NS, name).await.unwrap();
        }
        assert_eq!(
            svc.store.revision(),
            before,
            "nothing to change, nothing written"
        );

        // A Pod whose controller is not there with its uid: the fail-safe.
        let mut stray = owned(pod("stray", "web", Some(true)));
        stray["metadata"]["ownerReferences"][0]["uid"] = json!("not-rs-uid");
        put(&svc, PODS, stray).await;
        assert!(ctl.reconcile(NS, "web-max").await.is_err());
        let st = status(&svc, "web-max");
        assert_eq!(st["disruptionsAllowed"], 0, "{st}");
        assert_eq!(
            allowed_condition(&st),
            ("False".into(), pdb::SYNC_FAILED.into())
        );
        drop(ctl);
        drop(svc);
        let _ = std::fs::remove_dir_all(dir);
    }

    /// A Pod of 20,000 env entries is counted from its head and a pick of its conditions, its
    /// readiness remembered for its version: a new version is looked at again, and a deletion
    /// forgets it.
    #[tokio::test]
    async fn a_huge_pod_is_counted_from_its_conditions() {
        let (svc, dir) = service("pdb-huge").await;
        let ctl = DisruptionController::new(svc.clone());
        let env: Vec<Value> = (0..20_000)
            .map(|i| json!({"name": format!("VAR_{i:05}"), "value": "some value or other"}))
            .collect();
        let mut big = pod("big", "big", Some(true));
        big["spec"]["containers"][0]["env"] = Value::Array(env);
        let stored = put(&svc, PODS, big.clone()).await;
        assert!(stored.json.len() > 500 << 10, "{}", stored.json.len());
        put(&svc, PODS, pod("small", "big", Some(false))).await;
        budget(
            &svc,
            "big",
            json!({"minAvailable": 1, "selector": {"matchLabels": {"app": "big"}}}),
        )
        .await;

        ctl.reconcile(NS, "big").await.unwrap();
        assert_eq!(counts(&status(&svc, "big")), (2, 1, 1, 0));
        let remembered = |rv: u64| ctl.readiness.lock().unwrap().get(NS, "big", rv);
        assert_eq!(remembered(stored.rv), Some(true));

        // Not Ready any more: a new version, whose readiness is read again.
        big["status"]["conditions"][1]["status"] = json!("False");
        let stored = put(&svc, PODS, big).await;
        assert_eq!(remembered(stored.rv), None);
        ctl.reconcile(NS, "big").await.unwrap();
        assert_eq!(counts(&status(&svc, "big")), (2, 1, 0, 0));
        assert_eq!(remembered(stored.rv), Some(false));

        let pods = svc.registry.lookup("", "v1", PODS).unwrap();
        ctl.observe(&pods, &stored, None, Observed::Deleted);
        assert_eq!(remembered(stored.rv), None);
        drop(ctl);
        drop(svc);
        let _ = std::fs::remove_dir_all(dir);
    }

    /// A pick reads what a parse of the whole object reads, at any depth of a replicas path.
    #[test]
    fn a_value_is_picked_as_a_pointer_reads_it() {
        let v = json!({"spec": {"replicas": 3, "nested": {"replicas": 4},
                "template": {"spec": {"containers": [{"name": "c"}]}}},
            "replicas": 5, "status": "not an object"});
        // As given: no `metadata.resourceVersion` added.
        let obj = StoredObject::unstored(v.clone()).unwrap();
        for pointer in [
            "/spec/replicas",
            "/spec/nested/replicas",
            "/spec/absent",
            "/spec/nested/absent",
            "/replicas",
            "/status/replicas",
            "/absent/replicas",
            "",
            "spec/replicas",
        ] {
            assert_eq!(
                value_at(&obj, pointer),
                v.pointer(pointer).cloned(),
                "{pointer}"
            );
        }
        assert_eq!(int_at(&obj, "/spec/replicas"), 3);
        assert_eq!(int_at(&obj, "/spec/nested/replicas"), 4);
    }
}
