//! ResourceQuota as kube enforces it (`plugin/pkg/admission/resourcequota`,
//! `pkg/quota/v1/evaluator/core`): what an object uses of each quota resource, and the check an
//! API write passes before it is stored — the usage it adds must fit every quota of its
//! namespace, whose `status.used` is raised by the same amount (a write conditional on the
//! quota's resourceVersion) before the object is written. The resourcequota controller
//! (`controllers::resourcequota`) recounts `status.used` from what is stored.
//!
//! Usage is kept in nano units (`builtin::quantity`), counts included (one object is 10^9).

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::{json, Map, Value};

use crate::builtin::quantity::{from_nano, nano_value};
use crate::model::{meta, ApiError, ResourceInfo};
use crate::service::{Service, Subresource, WriteOptions};
use crate::store::StoredObject;

pub const RESOURCE: &str = "resourcequotas";
const ONE: i128 = 1_000_000_000;
/// Attempts at charging quotas whose status changed meanwhile.
const RETRIES: usize = 10;

/// The resources kube's pod evaluator requires every container to ask for explicitly when a
/// quota limits them (`validationSet`).
const EXPLICIT: &[&str] = &[
    "cpu",
    "memory",
    "requests.cpu",
    "requests.memory",
    "limits.cpu",
    "limits.memory",
];

/// The object-count resources kube names without `count/`.
const LEGACY_COUNTS: &[(&str, &str)] = &[
    ("pods", "pods"),
    ("services", "services"),
    ("replicationcontrollers", "replicationcontrollers"),
    ("resourcequotas", "resourcequotas"),
    ("secrets", "secrets"),
    ("configmaps", "configmaps"),
    ("persistentvolumeclaims", "persistentvolumeclaims"),
];

/// The stored kinds (group, resource) whose objects can use the quota resource `name`.
pub fn kinds_for(name: &str) -> Vec<(String, String)> {
    if let Some(rest) = name.strip_prefix("count/") {
        let (resource, group) = rest.split_once('.').unwrap_or((rest, ""));
        return vec![(group.to_owned(), resource.to_owned())];
    }
    if let Some((_, r)) = LEGACY_COUNTS.iter().find(|(n, _)| *n == name) {
        return vec![(String::new(), (*r).to_owned())];
    }
    match name {
        "services.nodeports" | "services.loadbalancers" => {
            vec![(String::new(), "services".to_owned())]
        }
        "requests.storage" => vec![(String::new(), "persistentvolumeclaims".to_owned())],
        _ if pod_resource(name).is_some() => vec![(String::new(), "pods".to_owned())],
        _ => Vec::new(),
    }
}

/// A pod compute resource: (`requests` or `limits`, the container resource).
fn pod_resource(name: &str) -> Option<(&'static str, &str)> {
    match name {
        "cpu" | "memory" | "ephemeral-storage" => Some(("requests", name)),
        _ => name
            .strip_prefix("requests.")
            .map(|r| ("requests", r))
            .or_else(|| name.strip_prefix("limits.").map(|r| ("limits", r)))
            .filter(|(_, r)| !r.is_empty() && *r != "storage"),
    }
}

/// kube's `QuotaV1Pod`: a Pod counts until it ends, or until its deletion is overdue (past its
/// `deletionTimestamp` plus its grace period again: stuck terminating, say on a lost node).
fn pod_counts(pod: &Value) -> bool {
    let phase = pod
        .pointer("/status/phase")
        .and_then(Value::as_str)
        .unwrap_or("");
    if matches!(phase, "Succeeded" | "Failed") {
        return false;
    }
    let at = meta::meta_str(pod, "deletionTimestamp")
        .and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok());
    let grace = pod
        .pointer("/metadata/deletionGracePeriodSeconds")
        .and_then(Value::as_i64);
    match (at, grace) {
        (Some(at), Some(grace)) => {
            chrono::Utc::now()
                <= crate::builtin::graceful::shift(at.with_timezone(&chrono::Utc), grace)
        }
        _ => true,
    }
}

/// A quantity an object uses: never negative (validation refuses negative requests; one stored
/// before would otherwise credit its namespace).
fn quantity(v: Option<&Value>) -> i128 {
    v.and_then(Value::as_str).map_or(0, amount).max(0)
}

/// A quantity's value in nano units (0 if it does not parse: validation keeps those out).
fn amount(s: &str) -> i128 {
    nano_value(s).map_or(0, |(n, _)| n)
}

/// kube's pod request (or limit) of one resource: the containers' sum, or the largest init
/// container's when that is more, plus the Pod's overhead.
fn pod_amount(pod: &Value, which: &str, resource: &str) -> i128 {
    let of = |c: &Value| {
        quantity(
            c.get("resources")
                .and_then(|r| r.get(which))
                .and_then(|m| m.get(resource)),
        )
    };
    let list = |f: &str| {
        pod.pointer(&format!("/spec/{f}"))
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    };
    // kube's `PodRequests`: sidecars (init containers with `restartPolicy: Always`) run beside
    // the containers and add up; each other init container needs its own amount on top of the
    // sidecars started before it.
    let mut sum = list("containers")
        .iter()
        .map(of)
        .fold(0i128, i128::saturating_add);
    let (mut sidecars, mut init) = (0i128, 0i128);
    for c in list("initContainers") {
        let n = of(&c);
        if c.get("restartPolicy").and_then(Value::as_str) == Some("Always") {
            sum = sum.saturating_add(n);
            sidecars = sidecars.saturating_add(n);
            init = init.max(sidecars);
        } else {
            init = init.max(n.saturating_add(sidecars));
        }
    }
    let overhead = quantity(pod.pointer("/spec/overhead").and_then(|o| o.get(resource)));
    sum.max(init).saturating_add(overhead)
}

/// What `obj` (of `ri`) uses of the quota resource `name`; `None` when its kind does not use it.
pub fn usage(ri: &ResourceInfo, obj: &Value, name: &str) -> Option<i128> {
    let kinds = kinds_for(name);
    if !kinds
        .iter()
        .any(|(g, r)| *g == ri.group && *r == ri.resource)
    {
        return None;
    }
    // `count/pods` counts every stored Pod; `pods` and the compute resources only those that
    // have not ended (kube's pod evaluator).
    if name.starts_with("count/") {
        return Some(ONE);
    }
    let is_pod = ri.group.is_empty() && ri.resource == "pods";
    if is_pod && !pod_counts(obj) {
        return Some(0);
    }
    if LEGACY_COUNTS.iter().any(|(n, _)| *n == name) {
        return Some(ONE);
    }
    let spec = obj.get("spec");
    let s = |f: &str| {
        spec.and_then(|s| s.get(f))
            .and_then(Value::as_str)
            .unwrap_or("")
    };
    match name {
        "services.loadbalancers" => Some(if s("type") == "LoadBalancer" { ONE } else { 0 }),
        "services.nodeports" => {
            let ports: Vec<&Value> = spec
                .and_then(|s| s.get("ports"))
                .and_then(Value::as_array)
                .map(|a| a.iter().collect())
                .unwrap_or_default();
            // kube's `portsWithNodePorts`: every port of a NodePort Service, and of a
            // LoadBalancer one that allocates them; otherwise the ports that name one.
            let counted = match s("type") {
                "NodePort" => ports.len(),
                "LoadBalancer"
                    if spec.and_then(|s| s.get("allocateLoadBalancerNodePorts"))
                        != Some(&json!(false)) =>
                {
                    ports.len()
                }
                "LoadBalancer" => ports
                    .iter()
                    .filter(|p| {
                        p.get("nodePort")
                            .and_then(Value::as_i64)
                            .is_some_and(|n| n != 0)
                    })
                    .count(),
                _ => 0,
            };
            Some(counted as i128 * ONE)
        }
        "requests.storage" => Some(quantity(obj.pointer("/spec/resources/requests/storage"))),
        _ => pod_resource(name).map(|(which, r)| pod_amount(obj, which, r)),
    }
}

/// Whether the quota `q` counts `obj` (of `ri`): one without scopes counts everything; a scoped
/// one (kube's `scopes` and `scopeSelector`) only Pods in its scopes: `Terminating` (with
/// `activeDeadlineSeconds`), `NotTerminating`, `BestEffort`, `NotBestEffort` and
/// `PriorityClass` (`In`, `NotIn`, `Exists`, `DoesNotExist` on `priorityClassName`).
/// `CrossNamespacePodAffinity` matches no Pod here (turtles has no affinity to look at yet).
pub fn matches(q: &Value, ri: &ResourceInfo, obj: &Value) -> bool {
    let mut scopes: Vec<(String, String, Vec<String>)> = q
        .pointer("/spec/scopes")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(|s| (s.to_owned(), "Exists".to_owned(), Vec::new()))
        .collect();
    for e in q
        .pointer("/spec/scopeSelector/matchExpressions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let s = |f: &str| e.get(f).and_then(Value::as_str).unwrap_or("").to_owned();
        let values = e
            .get("values")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default();
        scopes.push((s("scopeName"), s("operator"), values));
    }
    if scopes.is_empty() {
        return true;
    }
    if !(ri.group.is_empty() && ri.resource == "pods") {
        return false;
    }
    let spec = obj.get("spec");
    let best_effort = crate::model::workloads::qos_class(spec) == "BestEffort";
    let terminating = spec
        .and_then(|s| s.get("activeDeadlineSeconds"))
        .is_some_and(|v| v.as_i64().is_some_and(|n| n >= 0));
    let class = spec
        .and_then(|s| s.get("priorityClassName"))
        .and_then(Value::as_str)
        .filter(|c| !c.is_empty());
    scopes.iter().all(|(scope, op, values)| {
        let exists = op == "Exists";
        let yes = match scope.as_str() {
            "Terminating" => terminating,
            "NotTerminating" => !terminating,
            "BestEffort" => best_effort,
            "NotBestEffort" => !best_effort,
            "PriorityClass" => {
                return match op.as_str() {
                    "In" => class.is_some_and(|c| values.iter().any(|v| v == c)),
                    "NotIn" => !class.is_some_and(|c| values.iter().any(|v| v == c)),
                    "Exists" => class.is_some(),
                    "DoesNotExist" => class.is_none(),
                    _ => false,
                }
            }
            _ => false,
        };
        if exists || op == "In" {
            yes
        } else {
            !yes
        }
    })
}

/// kube's pod evaluator `Constraints`: with cpu or memory limited, every container says how
/// much. `Err`: kube's `must specify ...` text.
fn pod_constraints(pod: &Value, limited: &[String]) -> Result<(), String> {
    let required: Vec<&String> = limited
        .iter()
        .filter(|r| EXPLICIT.contains(&r.as_str()))
        .collect();
    if required.is_empty() {
        return Ok(());
    }
    let mut missing: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for list in ["containers", "initContainers"] {
        for c in pod
            .pointer(&format!("/spec/{list}"))
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let cname = c.get("name").and_then(Value::as_str).unwrap_or("");
            for r in &required {
                let Some((which, res)) = pod_resource(r) else {
                    continue;
                };
                let has = c
                    .get("resources")
                    .and_then(|x| x.get(which))
                    .and_then(|m| m.get(res))
                    .is_some();
                if !has {
                    missing
                        .entry(r.as_str())
                        .or_default()
                        .push(cname.to_owned());
                }
            }
        }
    }
    if missing.is_empty() {
        return Ok(());
    }
    let parts: Vec<String> = missing
        .into_iter()
        .map(|(r, mut names)| {
            names.sort();
            names.dedup();
            format!("{r} for: {}", names.join(","))
        })
        .collect();
    Err(format!("must specify {}", parts.join("; ")))
}

fn quantities(q: &Value, field: &str) -> BTreeMap<String, String> {
    q.pointer(field)
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| v.as_str().map(|s| (k.clone(), s.to_owned())))
                .collect()
        })
        .unwrap_or_default()
}

fn is_binary(q: &str) -> bool {
    nano_value(q).is_ok_and(|(_, b)| b)
}

/// kube's `prettyPrint`: `name=quantity` in name order, joined by commas.
fn pretty(list: &BTreeMap<String, String>) -> String {
    list.iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(",")
}

/// The quota check of an API write of `new` (replacing `old` on update) in namespace `ns`: every
/// quota there must have room for what it adds, and (not on a dry run) each quota's
/// `status.used` is raised by it. `name`: the object's, for kube's `forbidden` message.
pub async fn admit(
    svc: &Service,
    ri: &ResourceInfo,
    ns: &str,
    old: Option<&Value>,
    new: &Value,
    dry_run: bool,
) -> Result<Option<Charged>, ApiError> {
    charge(svc, ri, ns, old, new, dry_run, false).await
}

/// [`admit`], and with `resize` a Pod's `resize` too: kube's pod evaluator charges what a
/// resize adds.
#[allow(clippy::too_many_arguments)]
pub async fn charge(
    svc: &Service,
    ri: &ResourceInfo,
    ns: &str,
    old: Option<&Value>,
    new: &Value,
    dry_run: bool,
    resize: bool,
) -> Result<Option<Charged>, ApiError> {
    if ns.is_empty() || !ri.namespaced() {
        return Ok(None);
    }
    let Some(quotas_ri) = svc.registry.lookup("", "v1", RESOURCE) else {
        return Ok(None);
    };
    let forbidden = |why: String| {
        let gr = if ri.group.is_empty() {
            ri.resource.clone()
        } else {
            format!("{}.{}", ri.resource, ri.group)
        };
        ApiError::forbidden(format!("{gr} \"{}\" is forbidden: {why}", meta::name(new)))
            .with_details(&ri.group, &ri.resource, meta::name(new))
    };
    // kube's quota evaluator updates one namespace's quotas one request at a time; here a lock
    // per namespace does it (held only where the namespace has quotas), so concurrent creates
    // queue instead of conflicting.
    if quotas_in(svc, ns).is_empty() {
        return Ok(None);
    }
    // Object counts and Pods are charged on create only (kube's evaluators); Services (node
    // ports, load balancers) and claims (storage) on updates too.
    if old.is_some()
        && !resize
        && !(ri.group.is_empty()
            && matches!(ri.resource.as_str(), "services" | "persistentvolumeclaims"))
    {
        return Ok(None);
    }
    // Held by the caller until the object is stored, so the controller never recounts between
    // a charge and the object it is for.
    let held = Charged(namespace_lock(ns).lock_owned().await);
    // Quotas charged already (a later one conflicted): not charged twice on the retry.
    let mut charged: Vec<String> = Vec::new();
    let mut last_conflict = None;
    for attempt in 0..RETRIES {
        if attempt > 0 {
            tokio::time::sleep(std::time::Duration::from_millis(10 * attempt as u64)).await;
        }
        let quotas = quotas_in(svc, ns);
        let mut charges: Vec<(Value, BTreeMap<String, String>)> = Vec::new();
        for q in &quotas {
            let q = q.parse().into_owned();
            let qname = meta::name(&q).to_owned();
            if charged.contains(&qname) || !matches(&q, ri, new) {
                continue;
            }
            let hard = quantities(&q, "/status/hard");
            let used = quantities(&q, "/status/used");
            let limited: Vec<String> = hard
                .keys()
                .filter(|r| usage(ri, new, r).is_some())
                .cloned()
                .collect();
            if limited.is_empty() {
                continue;
            }
            if ri.group.is_empty() && ri.resource == "pods" && pod_counts(new) {
                pod_constraints(new, &limited)
                    .map_err(|e| forbidden(format!("failed quota: {qname}: {e}")))?;
            }
            if limited.iter().any(|r| !used.contains_key(r)) {
                return Err(forbidden(format!(
                    "status unknown for quota: {qname}, resources: {}",
                    limited.join(",")
                )));
            }
            // What the write adds (an update is charged only for an increase).
            let mut requested = BTreeMap::new();
            let mut new_used = BTreeMap::new();
            let mut exceeded = Vec::new();
            for r in &limited {
                let now = usage(ri, new, r).unwrap_or(0);
                let before = old.and_then(|o| usage(ri, o, r)).unwrap_or(0);
                let delta = now.saturating_sub(before).max(0);
                if delta == 0 {
                    continue;
                }
                let binary = is_binary(&hard[r]);
                let total = used.get(r).map_or(0, |u| amount(u)).saturating_add(delta);
                requested.insert(r.clone(), from_nano(delta, binary));
                new_used.insert(r.clone(), from_nano(total, binary));
                if total > amount(&hard[r]) {
                    exceeded.push(r.clone());
                }
            }
            if requested.is_empty() {
                continue;
            }
            if !exceeded.is_empty() {
                let mask = |m: &BTreeMap<String, String>| -> BTreeMap<String, String> {
                    m.iter()
                        .filter(|(k, _)| exceeded.contains(k))
                        .map(|(k, v)| (k.clone(), v.clone()))
                        .collect()
                };
                return Err(forbidden(format!(
                    "exceeded quota: {qname}, requested: {}, used: {}, limited: {}",
                    pretty(&mask(&requested)),
                    pretty(&mask(&used)),
                    pretty(&mask(&hard))
                )));
            }
            charges.push((q, new_used));
        }
        if dry_run || charges.is_empty() {
            return Ok(Some(held));
        }
        let mut conflicted = false;
        for (mut q, new_used) in charges {
            let qname = meta::name(&q).to_owned();
            let Some(status) = q
                .as_object_mut()
                .and_then(|o| o.get_mut("status"))
                .and_then(Value::as_object_mut)
            else {
                continue;
            };
            let used = status.entry("used").or_insert_with(|| json!({}));
            if !used.is_object() {
                *used = json!({});
            }
            if let Some(u) = used.as_object_mut() {
                for (k, v) in new_used {
                    u.insert(k, Value::String(v));
                }
            }
            // Boxed: this is the write path calling itself (as the host, so without quota).
            let host = WriteOptions::default();
            let write = Box::pin(svc.update(&quotas_ri, ns, &qname, q, Subresource::Status, &host));
            match write.await {
                Ok(_) => charged.push(qname),
                Err(e) if e.code == 409 => {
                    // The controller recounted meanwhile: this quota is checked again.
                    last_conflict = Some(e);
                    conflicted = true;
                    break;
                }
                Err(e) => return Err(e),
            }
        }
        if !conflicted {
            return Ok(Some(held));
        }
    }
    Err(last_conflict.unwrap_or_else(|| ApiError::conflict("", RESOURCE, ns)))
}

/// A namespace's quota charges held for one write: the object is stored before the controller
/// (or another write) looks at the namespace's quotas again.
pub struct Charged(#[allow(dead_code)] tokio::sync::OwnedMutexGuard<()>);

/// The lock of namespace `ns`'s quota charges (kept while anyone holds it); the controller takes
/// it around a recount.
pub(crate) fn namespace_lock(ns: &str) -> std::sync::Arc<tokio::sync::Mutex<()>> {
    use std::collections::HashMap;
    use std::sync::{Arc, Mutex, OnceLock, Weak};
    static LOCKS: OnceLock<Mutex<HashMap<String, Weak<tokio::sync::Mutex<()>>>>> = OnceLock::new();
    let mut map = LOCKS
        .get_or_init(Mutex::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    if let Some(l) = map.get(ns).and_then(Weak::upgrade) {
        return l;
    }
    map.retain(|_, w| w.strong_count() > 0);
    let l = Arc::new(tokio::sync::Mutex::new(()));
    map.insert(ns.to_owned(), Arc::downgrade(&l));
    l
}

/// The quotas of namespace `ns`.
fn quotas_in(svc: &Service, ns: &str) -> Vec<std::sync::Arc<crate::store::StoredObject>> {
    svc.stored_in(RESOURCE, ns)
}

/// A quota's `status.used`, recounted from what is stored one object at a time
/// ([`Tally::add_stored`]) and read with [`Tally::used`]. A recount runs on every add or delete
/// of a kind its quota counts, over every object of that kind in the namespace: no object is
/// parsed whole or kept (a namespace of large ConfigMaps under a `count/configmaps` quota once
/// made each of its tenant's writes cost seconds and the host gigabytes). An object whose usage
/// is a count is not read at all; of a Pod, Service or claim only what [`usage`] and
/// [`matches`] read is ([`counted_fields`]).
pub struct Tally<'q> {
    quota: &'q Value,
    /// Whether the quota has scopes (then a Pod's spec decides whether it counts).
    scoped: bool,
    /// The hard resources some kind uses, in the quota's order: the name, whether the total is
    /// written in binary units (as the hard limit is), and the total in nano units.
    totals: Vec<(&'q str, bool, i128)>,
}

/// A recount yields to other tasks after reading this many bytes of stored JSON: its CPU is
/// spent between other requests' turns on the async workers, not ahead of them (a few hundred
/// microseconds of scanning between yields; an estimate, not measured).
const YIELD_BYTES: usize = 256 << 10;
/// What each object counts towards [`YIELD_BYTES`] besides its bytes: a yield at least every
/// 64 objects, however small.
const YIELD_OBJECT: usize = YIELD_BYTES / 64;

impl<'q> Tally<'q> {
    /// Nothing counted yet of `quota`, whose hard limits are `hard`.
    pub fn new(quota: &'q Value, hard: &'q Map<String, Value>) -> Self {
        let totals = hard
            .iter()
            .filter(|(r, _)| !kinds_for(r.as_str()).is_empty())
            .map(|(r, h)| (r.as_str(), h.as_str().is_some_and(is_binary), 0i128))
            .collect();
        Self {
            quota,
            scoped: scoped(quota),
            totals,
        }
    }

    /// Adds the stored objects `items`, of kind `ri`, reading of each only what its usage
    /// depends on (nothing, when that is a count). Yields now and then: a namespace of many or
    /// large objects does not hold a worker for the whole recount.
    pub async fn add_stored(&mut self, ri: &ResourceInfo, items: &[Arc<StoredObject>]) {
        let shape = match shape_of(ri) {
            Some(shape) if self.reads_fields(ri) => shape,
            _ => {
                self.add_alike(ri, items.len());
                return;
            }
        };
        let mut read = 0usize;
        for obj in items {
            self.add(ri, &project(&obj.json, shape));
            read = read
                .saturating_add(obj.json.len())
                .saturating_add(YIELD_OBJECT);
            if read >= YIELD_BYTES {
                read = 0;
                tokio::task::yield_now().await;
            }
        }
    }

    /// Adds what one object of `ri` uses: `obj` is the object, or as much of it as
    /// [`counted_fields`] reads (the same to [`usage`] and [`matches`]).
    pub fn add(&mut self, ri: &ResourceInfo, obj: &Value) {
        if !matches(self.quota, ri, obj) {
            return;
        }
        for (r, _, total) in &mut self.totals {
            if let Some(n) = usage(ri, obj, r) {
                *total = total.saturating_add(n);
            }
        }
    }

    /// Adds `n` objects of `ri` whose usage reads none of their fields ([`Tally::reads_fields`]
    /// is false): each uses what an empty object does.
    fn add_alike(&mut self, ri: &ResourceInfo, n: usize) {
        let empty = Value::Object(Map::new());
        if n == 0 || !matches(self.quota, ri, &empty) {
            return;
        }
        for (r, _, total) in &mut self.totals {
            if let Some(each) = usage(ri, &empty, r) {
                // Usage is never negative: n saturating additions are one saturating product.
                *total = total.saturating_add(each.saturating_mul(n as i128));
            }
        }
    }

    /// Whether what an object of `ri` uses of this quota depends on its fields. Not for a count
    /// (`count/...`, and the legacy names but `pods`, whose Pods count only until they end), nor
    /// for a kind a scoped quota does not count (only Pods are in scopes).
    fn reads_fields(&self, ri: &ResourceInfo) -> bool {
        let pods = ri.group.is_empty() && ri.resource == "pods";
        if pods && self.scoped {
            return true;
        }
        self.totals.iter().any(|(r, _, _)| {
            kinds_for(r)
                .iter()
                .any(|(g, k)| *g == ri.group && *k == ri.resource)
                && !r.starts_with("count/")
                && (pods || !LEGACY_COUNTS.iter().any(|(n, _)| n == r))
        })
    }

    /// `status.used`: each hard resource some kind uses, in the quota's units.
    pub fn used(self) -> Map<String, Value> {
        self.totals
            .into_iter()
            .map(|(r, binary, n)| (r.to_owned(), Value::String(from_nano(n, binary))))
            .collect()
    }
}

/// Whether a quota has scopes ([`matches`] counts everything for one without).
fn scoped(q: &Value) -> bool {
    let scopes = q.pointer("/spec/scopes").and_then(Value::as_array);
    let exprs = q
        .pointer("/spec/scopeSelector/matchExpressions")
        .and_then(Value::as_array);
    scopes.is_some_and(|s| s.iter().any(Value::is_string)) || exprs.is_some_and(|e| !e.is_empty())
}

/// What of an object [`usage`] and [`matches`] read, as a tree of the fields kept: the rest is
/// skipped in the JSON, unparsed.
#[derive(Debug, Clone, Copy)]
enum Shape {
    /// The value, whole.
    Whole,
    /// An object's named fields, each kept as its shape says.
    Fields(&'static [(&'static str, Shape)]),
    /// An array's items, each kept as the shape says.
    Items(&'static Shape),
}

/// What [`pod_amount`] and `qos_class` (the `BestEffort` scopes) read of a container (not its
/// `env`, `command` or mounts, which can be most of a Pod).
const CONTAINER: Shape =
    Shape::Fields(&[("resources", Shape::Whole), ("restartPolicy", Shape::Whole)]);

/// What [`usage`] ([`pod_counts`], [`pod_amount`]) and [`matches`] read of a Pod.
const POD: Shape = Shape::Fields(&[
    (
        "metadata",
        Shape::Fields(&[
            ("deletionTimestamp", Shape::Whole),
            ("deletionGracePeriodSeconds", Shape::Whole),
        ]),
    ),
    (
        "spec",
        Shape::Fields(&[
            ("containers", Shape::Items(&CONTAINER)),
            ("initContainers", Shape::Items(&CONTAINER)),
            ("overhead", Shape::Whole),
            ("activeDeadlineSeconds", Shape::Whole),
            ("priorityClassName", Shape::Whole),
        ]),
    ),
    ("status", Shape::Fields(&[("phase", Shape::Whole)])),
]);

/// What `services.nodeports` reads of a Service port: that it is one, and its `nodePort`.
const SERVICE_PORT: Shape = Shape::Fields(&[("nodePort", Shape::Whole)]);

/// What [`usage`] reads of a Service.
const SERVICE: Shape = Shape::Fields(&[(
    "spec",
    Shape::Fields(&[
        ("type", Shape::Whole),
        ("ports", Shape::Items(&SERVICE_PORT)),
        ("allocateLoadBalancerNodePorts", Shape::Whole),
    ]),
)]);

/// What [`usage`] reads of a PersistentVolumeClaim.
const CLAIM: Shape = Shape::Fields(&[(
    "spec",
    Shape::Fields(&[(
        "resources",
        Shape::Fields(&[("requests", Shape::Fields(&[("storage", Shape::Whole)]))]),
    )]),
)]);

/// The fields of `ri`'s objects their usage can depend on; `None` for a kind whose usage is
/// always a count.
fn shape_of(ri: &ResourceInfo) -> Option<Shape> {
    if !ri.group.is_empty() {
        return None;
    }
    match ri.resource.as_str() {
        "pods" => Some(POD),
        "services" => Some(SERVICE),
        "persistentvolumeclaims" => Some(CLAIM),
        _ => None,
    }
}

/// What of a stored object of `ri` its quota usage can depend on, read from its JSON without
/// parsing the rest: to [`usage`] and [`matches`] the same as the whole object. `None` for a
/// kind whose usage is a count.
pub fn counted_fields(ri: &ResourceInfo, obj: &StoredObject) -> Option<Value> {
    shape_of(ri).map(|shape| project(&obj.json, shape))
}

/// `json` as `shape` keeps it; null if it does not parse (as the store's whole parse gives).
fn project(json: &[u8], shape: Shape) -> Value {
    use serde::de::DeserializeSeed;
    let mut de = serde_json::Deserializer::from_slice(json);
    Project(shape).deserialize(&mut de).unwrap_or_else(|e| {
        tracing::error!(error = %e, "stored object does not parse");
        Value::Null
    })
}

/// Deserializes one JSON value into what its [`Shape`] keeps. A value of another type than the
/// shape expects (a string where an object was) is kept as null: [`usage`] and [`matches`]
/// look only into objects and arrays, and find nothing in either.
struct Project(Shape);

impl<'de> serde::de::DeserializeSeed<'de> for Project {
    type Value = Value;

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        match self.0 {
            Shape::Whole => <Value as serde::Deserialize>::deserialize(d),
            _ => d.deserialize_any(self),
        }
    }
}

impl<'de> serde::de::Visitor<'de> for Project {
    type Value = Value;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_i64<E>(self, _: i64) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_u64<E>(self, _: u64) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_f64<E>(self, _: f64) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_str<E>(self, _: &str) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let Shape::Items(item) = self.0 else {
            while seq.next_element::<serde::de::IgnoredAny>()?.is_some() {}
            return Ok(Value::Null);
        };
        let mut out = Vec::new();
        while let Some(v) = seq.next_element_seed(Project(*item))? {
            out.push(v);
        }
        Ok(Value::Array(out))
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let Shape::Fields(fields) = self.0 else {
            while map
                .next_entry::<serde::de::IgnoredAny, serde::de::IgnoredAny>()?
                .is_some()
            {}
            return Ok(Value::Null);
        };
        let mut out = Map::new();
        // A key given twice: the last one wins, as when the whole object is parsed.
        while let Some(key) = map.next_key::<String>()? {
            match fields.iter().find(|(name, _)| *name == key) {
                Some((_, shape)) => {
                    let v = map.next_value_seed(Project(*shape))?;
                    out.insert(key, v);
                }
                None => {
                    map.next_value::<serde::de::IgnoredAny>()?;
                }
            }
        }
        Ok(Value::Object(out))
    }
}

/// `status.used` of a quota as it was recounted before [`Tally`]: every object of the kinds its
/// hard resources concern parsed whole. The tests hold [`Tally`] to it.
#[cfg(test)]
pub fn recount<'a>(
    quota: &Value,
    hard: &Map<String, Value>,
    objects: impl Iterator<Item = (&'a ResourceInfo, &'a Value)> + Clone,
) -> Map<String, Value> {
    let objects = objects.filter(move |(ri, o)| matches(quota, ri, o));
    let mut used = Map::new();
    for (r, h) in hard {
        if kinds_for(r).is_empty() {
            continue;
        }
        let binary = h.as_str().is_some_and(is_binary);
        let total = objects
            .clone()
            .filter_map(|(ri, o)| usage(ri, o, r))
            .fold(0i128, i128::saturating_add);
        used.insert(r.clone(), Value::String(from_nano(total, binary)));
    }
    used
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Registry;

    fn ri(group: &str, version: &str, resource: &str) -> std::sync::Arc<ResourceInfo> {
        Registry::with_builtins()
            .lookup(group, version, resource)
            .unwrap_or_else(|| panic!("{resource}"))
    }

    #[test]
    fn pods_use_their_containers_requests_and_count_until_they_end() {
        let pods = ri("", "v1", "pods");
        let pod = json!({"spec": {
            "containers": [
                {"name": "a", "resources": {"requests": {"cpu": "250m", "memory": "64Mi"}, "limits": {"cpu": "1"}}},
                {"name": "b", "resources": {"requests": {"cpu": "250m"}}}],
            "initContainers": [{"name": "i", "resources": {"requests": {"cpu": "2"}}}]},
            "status": {"phase": "Running"}});
        assert_eq!(usage(&pods, &pod, "pods"), Some(ONE));
        assert_eq!(usage(&pods, &pod, "count/pods"), Some(ONE));
        assert_eq!(usage(&pods, &pod, "requests.cpu"), Some(2 * ONE));
        assert_eq!(usage(&pods, &pod, "cpu"), Some(2 * ONE));
        assert_eq!(usage(&pods, &pod, "limits.cpu"), Some(ONE));
        assert_eq!(
            usage(&pods, &pod, "requests.memory"),
            Some(64 * 1024 * 1024 * ONE)
        );
        assert_eq!(usage(&pods, &pod, "configmaps"), None);
        let done = json!({"spec": pod["spec"], "status": {"phase": "Succeeded"}});
        assert_eq!(usage(&pods, &done, "pods"), Some(0));
        // Terminating: charged through its grace period and as long again, then no longer.
        let going = |at: chrono::DateTime<chrono::Utc>, grace: i64| {
            json!({"metadata": {"deletionTimestamp": at.format("%Y-%m-%dT%H:%M:%SZ").to_string(),
                "deletionGracePeriodSeconds": grace}, "spec": pod["spec"], "status": pod["status"]})
        };
        let now = chrono::Utc::now();
        let soon = going(now + chrono::Duration::seconds(30), 30);
        assert_eq!(usage(&pods, &soon, "pods"), Some(ONE));
        let overdue = going(now - chrono::Duration::seconds(31), 30);
        assert_eq!(usage(&pods, &overdue, "pods"), Some(0));
        let held = going(now - chrono::Duration::seconds(5), 0);
        assert_eq!(usage(&pods, &held, "pods"), Some(0));
        assert_eq!(
            pod_constraints(&pod, &["limits.cpu".into(), "requests.memory".into()]),
            Err("must specify limits.cpu for: b,i; requests.memory for: b,i".into())
        );
    }

    #[test]
    fn sidecars_add_up_and_other_init_containers_count_once() {
        let pods = ri("", "v1", "pods");
        let c = |name: &str, cpu: &str, sidecar: bool| {
            let mut c = json!({"name": name, "resources": {"requests": {"cpu": cpu}}});
            if sidecar {
                c["restartPolicy"] = json!("Always");
            }
            c
        };
        let pod = json!({"spec": {
            "containers": [c("app", "1", false)],
            "initContainers": [c("proxy", "500m", true), c("setup", "2", false)]}});
        // Running: app + proxy = 1.5; during setup: proxy + setup = 2.5.
        assert_eq!(usage(&pods, &pod, "requests.cpu"), Some(2_500_000_000));
        let pod = json!({"spec": {
            "containers": [c("app", "1", false)],
            "initContainers": [c("setup", "1", false), c("proxy", "500m", true)]}});
        assert_eq!(usage(&pods, &pod, "requests.cpu"), Some(1_500_000_000));
    }

    #[test]
    fn services_use_node_ports_and_load_balancers() {
        let svcs = ri("", "v1", "services");
        let np = json!({"spec": {"type": "NodePort", "ports": [{"port": 80}, {"port": 443}]}});
        assert_eq!(usage(&svcs, &np, "services.nodeports"), Some(2 * ONE));
        assert_eq!(usage(&svcs, &np, "services.loadbalancers"), Some(0));
        let lb = json!({"spec": {"type": "LoadBalancer", "allocateLoadBalancerNodePorts": false, "ports": [{"port": 80}]}});
        assert_eq!(usage(&svcs, &lb, "services.nodeports"), Some(0));
        assert_eq!(usage(&svcs, &lb, "services.loadbalancers"), Some(ONE));
        let deploys = ri("apps", "v1", "deployments");
        assert_eq!(
            usage(&deploys, &json!({}), "count/deployments.apps"),
            Some(ONE)
        );
        assert_eq!(usage(&deploys, &json!({}), "count/deployments"), None);
    }

    /// What a recount reads of an object ([`counted_fields`]) is, to [`usage`] and [`matches`],
    /// the whole object: for every quota resource and scope, and for fields of unexpected types.
    #[test]
    fn what_a_recount_reads_is_to_usage_what_the_whole_object_is() {
        let (pods, services, claims) = (
            ri("", "v1", "pods"),
            ri("", "v1", "services"),
            ri("", "v1", "persistentvolumeclaims"),
        );
        let now = chrono::Utc::now();
        let at = |t: chrono::DateTime<chrono::Utc>| t.format("%Y-%m-%dT%H:%M:%SZ").to_string();
        let c = |name: &str, requests: Value, limits: Value| {
            json!({"name": name, "image": "i", "env": [{"name": "A", "value": "b"}],
                "resources": {"requests": requests, "limits": limits}})
        };
        let cases = [
            (
                &pods,
                json!({"metadata": {"name": "p", "labels": {"a": "b"}},
                "spec": {"priorityClassName": "high", "nodeName": "n",
                    "containers": [c("a", json!({"cpu": "250m", "memory": "64Mi"}),
                        json!({"cpu": "1", "memory": "128Mi"}))],
                    "initContainers": [c("i", json!({"cpu": "2"}), json!({})),
                        {"name": "s", "restartPolicy": "Always",
                            "resources": {"requests": {"cpu": "100m"}}}],
                    "overhead": {"cpu": "10m", "memory": "1Mi"}},
                "status": {"phase": "Running", "podIP": "10.0.0.1"}}),
            ),
            (&pods, json!({"spec": {"containers": [{"name": "c"}]}})),
            (
                &pods,
                json!({"spec": {"activeDeadlineSeconds": 30,
                    "containers": [c("a", json!({"cpu": "1", "memory": "1Gi"}),
                        json!({"cpu": "1", "memory": "1Gi"}))]},
                "status": {"phase": "Pending"}}),
            ),
            (
                &pods,
                json!({"spec": {"activeDeadlineSeconds": -1,
                    "containers": [c("a", json!({}), json!({"memory": "1Gi"}))]},
                "status": {"phase": "Failed"}}),
            ),
            (
                &pods,
                json!({"metadata": {"deletionTimestamp": at(now - chrono::Duration::seconds(100)),
                    "deletionGracePeriodSeconds": 30},
                "spec": {"containers": [c("a", json!({"cpu": "1"}), json!({}))]}}),
            ),
            (
                &pods,
                json!({"metadata": {"deletionTimestamp": at(now + chrono::Duration::seconds(100)),
                    "deletionGracePeriodSeconds": 30},
                "spec": {"containers": [c("a", json!({"cpu": "1"}), json!({}))]}}),
            ),
            // Fields of unexpected types: nothing found in them, either way.
            (&pods, json!({"spec": "nope", "status": ["Running"]})),
            (
                &pods,
                json!({"metadata": {"deletionTimestamp": 5},
                "spec": {"containers": "x", "initContainers": [1, null, {"resources": "r"},
                    {"resources": {"requests": ["1"]}}], "overhead": 3, "priorityClassName": 7,
                    "activeDeadlineSeconds": "30"},
                "status": {"phase": {"x": 1}}}),
            ),
            (
                &services,
                json!({"spec": {"type": "NodePort", "ports": [{"port": 80}, {"port": 443}]}}),
            ),
            (
                &services,
                json!({"spec": {"type": "LoadBalancer", "allocateLoadBalancerNodePorts": false,
                "ports": [{"port": 80, "nodePort": 30080}, 1, {"nodePort": "x"},
                    {"nodePort": 0}]}}),
            ),
            (
                &services,
                json!({"spec": {"type": "LoadBalancer", "ports": [1, "a", null]}}),
            ),
            (
                &services,
                json!({"spec": {"type": 3, "ports": {"port": 80}}}),
            ),
            (
                &claims,
                json!({"spec": {"accessModes": ["ReadWriteOnce"],
                "resources": {"requests": {"storage": "1Gi"}, "limits": {"storage": "2Gi"}}}}),
            ),
            (
                &claims,
                json!({"spec": {"resources": {"requests": {"storage": 12}}}}),
            ),
            (&claims, json!({"spec": {"resources": []}})),
        ];
        let names = [
            "pods",
            "count/pods",
            "cpu",
            "requests.cpu",
            "limits.cpu",
            "memory",
            "requests.memory",
            "limits.memory",
            "ephemeral-storage",
            "services",
            "services.nodeports",
            "services.loadbalancers",
            "persistentvolumeclaims",
            "requests.storage",
            "count/persistentvolumeclaims",
        ];
        let mut quotas = vec![json!({}), json!({"spec": {"scopes": []}})];
        for scope in [
            "Terminating",
            "NotTerminating",
            "BestEffort",
            "NotBestEffort",
        ] {
            quotas.push(json!({"spec": {"scopes": [scope]}}));
        }
        for (op, values) in [
            ("In", json!(["high"])),
            ("NotIn", json!(["high"])),
            ("Exists", json!([])),
            ("DoesNotExist", json!([])),
        ] {
            quotas.push(json!({"spec": {"scopeSelector": {"matchExpressions": [
                {"scopeName": "PriorityClass", "operator": op, "values": values}]}}}));
        }
        for (i, (kind, obj)) in cases.iter().enumerate() {
            let stored = StoredObject::new(1, obj.clone()).unwrap();
            let whole = stored.parse().into_owned();
            let part = counted_fields(kind, &stored).unwrap();
            assert_ne!(part, whole, "case {i}: not the whole object");
            for name in names {
                assert_eq!(
                    usage(kind, &part, name),
                    usage(kind, &whole, name),
                    "case {i}: {name}"
                );
            }
            for q in &quotas {
                assert_eq!(
                    matches(q, kind, &part),
                    matches(q, kind, &whole),
                    "case {i}: {q}"
                );
            }
        }
        // Of a container, its resources: not its name, image or env.
        let web = StoredObject::new(1, cases[0].1.clone()).unwrap();
        let part = counted_fields(&pods, &web).unwrap();
        assert_eq!(
            part["spec"]["containers"],
            json!([{"resources": {"requests": {"cpu": "250m", "memory": "64Mi"},
                "limits": {"cpu": "1", "memory": "128Mi"}}}])
        );
        assert_eq!(part["metadata"], json!({}));
        assert_eq!(part["status"], json!({"phase": "Running"}));
        let configmaps = ri("", "v1", "configmaps");
        let cm = StoredObject::new(1, json!({"data": {"k": "v"}})).unwrap();
        assert_eq!(
            counted_fields(&configmaps, &cm),
            None,
            "a count reads nothing"
        );
    }

    /// A tally folds stored objects as the whole-parse recount did, counts included.
    #[tokio::test]
    async fn a_tally_of_stored_objects_is_the_recount_of_them_parsed_whole() {
        let pods = ri("", "v1", "pods");
        let configmaps = ri("", "v1", "configmaps");
        let pod = |cpu: &str, deadline: Option<i64>| {
            let mut p = json!({"spec": {"containers": [{"name": "c",
                "resources": {"requests": {"cpu": cpu, "memory": "100Mi"}}}]}});
            if let Some(d) = deadline {
                p["spec"]["activeDeadlineSeconds"] = json!(d);
            }
            StoredObject::new(1, p).map(Arc::new).unwrap()
        };
        let stored_pods: Vec<Arc<StoredObject>> = (0..150)
            .map(|i| pod(&format!("{i}m"), (i % 3 == 0).then_some(60)))
            .collect();
        let stored_maps: Vec<Arc<StoredObject>> = (0..150)
            .map(|i| {
                let data: Map<String, Value> = (0..50)
                    .map(|k| (format!("k{k}"), json!(format!("{i}"))))
                    .collect();
                StoredObject::new(1, json!({"data": data}))
                    .map(Arc::new)
                    .unwrap()
            })
            .collect();
        for q in [
            json!({"spec": {"hard": {"pods": "1k", "count/pods": "1k", "requests.cpu": "100",
                "requests.memory": "100Gi", "configmaps": "1k", "count/configmaps": "1k"}}}),
            json!({"spec": {"scopes": ["Terminating"],
                "hard": {"pods": "1k", "requests.cpu": "100"}}}),
            json!({"spec": {"scopes": ["NotTerminating"],
                "hard": {"pods": "1k", "configmaps": "9"}}}),
        ] {
            let hard = q["spec"]["hard"].as_object().cloned().unwrap();
            let mut tally = Tally::new(&q, &hard);
            tally.add_stored(&pods, &stored_pods).await;
            tally.add_stored(&configmaps, &stored_maps).await;
            let whole: Vec<(&ResourceInfo, Value)> = stored_pods
                .iter()
                .map(|o| (&*pods, o.parse().into_owned()))
                .chain(
                    stored_maps
                        .iter()
                        .map(|o| (&*configmaps, o.parse().into_owned())),
                )
                .collect();
            let want = recount(&q, &hard, whole.iter().map(|(ri, o)| (*ri, o)));
            assert_eq!(tally.used(), want, "{q}");
        }
    }

    #[test]
    fn recounted_usage_keeps_the_quotas_units() {
        let pods = ri("", "v1", "pods");
        let a = json!({"spec": {"containers": [{"name": "a", "resources": {"requests": {"memory": "1Gi", "cpu": "500m"}}}]}});
        let b = json!({"spec": {"containers": [{"name": "b", "resources": {"requests": {"memory": "512Mi", "cpu": "1"}}}]}});
        let hard = json!({"requests.memory": "4Gi", "requests.cpu": "2", "pods": "10", "unknown.thing": "1"});
        let objects = [(&*pods, &a), (&*pods, &b)];
        let used = recount(
            &json!({}),
            hard.as_object().unwrap(),
            objects.iter().copied(),
        );
        assert_eq!(
            Value::Object(used),
            json!({"pods": "2", "requests.cpu": "1500m", "requests.memory": "1536Mi"})
        );
    }
}
