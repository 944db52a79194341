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
use crate::model::{meta, ResourceInfo};
use crate::selector::{label_selector_string, LabelSelector};
use crate::service::{ListOptions, Service, Subresource};
use crate::store::StoredObject;

pub const IDENTITY: super::Identity = super::Identity {
    name: "disruption-controller",
    description: "Keeps each PodDisruptionBudget's status: the healthy Pods it selects, how many it needs, and the disruptions pods/eviction may allow.",
    workers: 2,
};
const PODS: &str = "pods";

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
}

impl DisruptionController {
    pub fn new(service: Arc<Service>) -> Arc<Self> {
        Arc::new(Self {
            base: super::Base::new(service),
            budgets: Mutex::default(),
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
    async fn sync(&self, pdbs: &ResourceInfo, ns: &str, budget: &Value) -> Reconciled {
        let svc = &self.base.service;
        let pods_ri = svc
            .registry
            .lookup("", "v1", PODS)
            .ok_or_else(|| ControllerError::UnknownKind("pods".into()))?;
        let pods: Vec<Value> = match counted(budget).map_err(ControllerError::Disruption)? {
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
                svc.list(&pods_ri, Some(ns), &opts)
                    .await?
                    .items
                    .iter()
                    .map(|p| p.parse().into_owned())
                    .collect()
            }
        };
        let (expected, desired) = self.expected_pods(budget, &pods).await?;
        let now = chrono::Utc::now();
        let timeout = chrono::Duration::from_std(pdb::DELETION_TIMEOUT).unwrap_or_default();
        // Evictions recorded but not yet seen as deletions, until they time out.
        let recorded = budget
            .pointer("/status/disruptedPods")
            .and_then(Value::as_object);
        let mut disrupted = BTreeMap::new();
        let mut recheck: Option<chrono::DateTime<chrono::Utc>> = None;
        for p in &pods {
            if meta::meta_str(p, "deletionTimestamp").is_some() {
                continue;
            }
            let Some(at) = recorded.and_then(|r| r.get(meta::name(p))) else {
                continue;
            };
            let when = at
                .as_str()
                .and_then(|s| chrono::DateTime::parse_from_rfc3339(s).ok())
                .map(|t| t.with_timezone(&chrono::Utc));
            let Some(when) = when else { continue };
            let expected_deletion = when + timeout;
            if expected_deletion < now {
                continue;
            }
            recheck = Some(recheck.map_or(expected_deletion, |r| r.min(expected_deletion)));
            disrupted.insert(meta::name(p).to_owned(), at.clone());
        }
        let healthy = pods
            .iter()
            .filter(|p| meta::meta_str(*p, "deletionTimestamp").is_none())
            .filter(|p| !disrupted.contains_key(meta::name(*p)))
            .filter(|p| pdb::pod_ready(p))
            .count() as i64;
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

    /// kube's `getExpectedPodCount`: (expected Pods, desired healthy Pods).
    async fn expected_pods(
        &self,
        budget: &Value,
        pods: &[Value],
    ) -> Result<(i64, i64), ControllerError> {
        let spec = budget.get("spec");
        let field = |f: &str| spec.and_then(|s| s.get(f)).filter(|v| !v.is_null());
        if let Some(max) = field("maxUnavailable") {
            let expected = self.expected_scale(pods).await?;
            let max = pdb::scaled_value(max, expected, true)
                .ok_or_else(|| invalid_int_or_percent(max))?;
            return Ok((expected, expected.saturating_sub(max).max(0)));
        }
        match field("minAvailable") {
            Some(Value::Number(n)) => Ok((pods.len() as i64, n.as_i64().unwrap_or(0))),
            Some(min) => {
                let expected = self.expected_scale(pods).await?;
                let min = pdb::scaled_value(min, expected, true)
                    .ok_or_else(|| invalid_int_or_percent(min))?;
                Ok((expected, min))
            }
            None => Ok((0, 0)),
        }
    }

    /// kube's `getExpectedScale`: the replicas the selected Pods' controllers want, each
    /// controller counted once. Pods without a controller are left out (kube warns of them).
    async fn expected_scale(&self, pods: &[Value]) -> Result<i64, ControllerError> {
        let mut scales: HashMap<String, i64> = HashMap::new();
        for p in pods {
            let Some(owner) = controller_of(p) else {
                continue;
            };
            let uid = owner.get("uid").and_then(Value::as_str).unwrap_or("");
            if scales.contains_key(uid) {
                continue;
            }
            let ns = meta::namespace(p);
            match self.controller_scale(ns, owner).await? {
                Some((uid, replicas)) => {
                    scales.insert(uid, replicas);
                }
                None => {
                    return Err(ControllerError::Disruption(format!(
                        "found no controllers for pod \"{}\"",
                        meta::name(p)
                    )))
                }
            }
        }
        Ok(scales.values().fold(0i64, |a, b| a.saturating_add(*b)))
    }

    /// The (uid, replicas) of the controller `owner` names, if it is there with that uid: a
    /// ReplicaSet's Deployment when it has one, else any kind with a `scale` subresource.
    async fn controller_scale(
        &self,
        ns: &str,
        owner: &Value,
    ) -> Result<Option<(String, i64)>, ControllerError> {
        let svc = &self.base.service;
        let s = |f: &str| owner.get(f).and_then(Value::as_str).unwrap_or("");
        let (api_version, kind, name, uid) = (s("apiVersion"), s("kind"), s("name"), s("uid"));
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
        let v = obj.parse();
        // A ReplicaSet a Deployment controls counts as its Deployment (kube's
        // `getPodDeployment`).
        if matches!(group, "apps" | "extensions") && kind == "ReplicaSet" {
            if let Some(dep) = controller_of(&v).filter(|d| {
                d.get("kind").and_then(Value::as_str) == Some("Deployment")
                    && d.get("apiVersion")
                        .and_then(Value::as_str)
                        .is_some_and(|a| a.starts_with("apps/") || a.starts_with("extensions/"))
            }) {
                if let Some(deployments) = svc.registry.lookup("apps", "v1", "deployments") {
                    let dep_name = dep.get("name").and_then(Value::as_str).unwrap_or("");
                    let dep_uid = dep.get("uid").and_then(Value::as_str).unwrap_or("");
                    if let Ok(d) = svc.get(&deployments, ns, dep_name) {
                        if super::uid(d.head()) == dep_uid {
                            let replicas = int(&d.parse(), "/spec/replicas");
                            return Ok(Some((dep_uid.to_owned(), replicas)));
                        }
                    }
                }
            }
        }
        let pointer = scale.spec_replicas_path.replace('.', "/");
        Ok(Some((uid.to_owned(), int(&v, &pointer))))
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
fn controller_of(obj: &Value) -> Option<&Value> {
    obj.pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)?
        .iter()
        .find(|r| r.get("controller").and_then(Value::as_bool) == Some(true))
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
                || prev.is_none_or(|p| p.parse().pointer(&path) != obj.parse().pointer(&path));
            if changed {
                self.queue_where(&ns, |b| b.scaled);
            }
            return;
        }
        if !(ri.group.is_empty() && ri.resource == PODS) {
            return;
        }
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
