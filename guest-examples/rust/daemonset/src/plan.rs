//! What one sync of a DaemonSet does, as kube-controller-manager's DaemonSet controller (kube
//! 1.34, `pkg/controller/daemon`) decides it: pure functions over JSON, tested natively.
//! `lib.rs` reads the caches, calls [`plan`] and carries out the actions.
//!
//! - A node runs the set's Pod when its labels match the template's `nodeSelector` and required
//!   node affinity and it has no `NoSchedule`/`NoExecute` taint the Pod does not tolerate (with
//!   the tolerations kube adds to every daemon Pod). A Pod whose node should no longer run it is
//!   deleted, unless only a `NoSchedule` taint came (it may keep running).
//! - Pods are pinned to their node by a required node affinity on `metadata.name` (the
//!   scheduler binds them), labelled `controller-revision-hash` and `pod-template-generation`.
//! - Rolling updates replace at most `maxUnavailable` available Pods at a time, or with
//!   `maxSurge` start the new Pod first and delete the old one once the new one is available.

use std::collections::BTreeMap;

use turtles_controller::serde_json::Map;
use turtles_controller::workload::{available, pod_ready};
use turtles_controller::{json, meta, Value};

/// `controller-revision-hash`: the hash of the revision a Pod was made from.
pub const HASH_LABEL: &str = "controller-revision-hash";
/// `pod-template-generation`: the set's template generation a Pod was made from.
pub const GENERATION_LABEL: &str = "pod-template-generation";
/// The annotation that holds a DaemonSet's template generation in apps/v1.
pub const TEMPLATE_GENERATION: &str = "deprecated.daemonset.template.generation";
/// kube's `BurstReplicas`: the most Pods created (or deleted) in one sync.
pub const BURST: usize = 250;

fn str_at<'a>(v: &'a Value, pointer: &str) -> &'a str {
    v.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

fn name(obj: &Value) -> &str {
    str_at(obj, "/metadata/name")
}

/// The set's template generation (its annotation), if it parses.
pub fn template_generation(ds: &Value) -> Option<i64> {
    meta::annotation(ds, TEMPLATE_GENERATION).and_then(|g| g.parse().ok())
}

fn min_ready_seconds(ds: &Value) -> i64 {
    ds.pointer("/spec/minReadySeconds")
        .and_then(Value::as_i64)
        .unwrap_or(0)
        .max(0)
}

// ---------------------------------------------------------------------------------------------
// Which nodes run a daemon Pod

/// The tolerations kube adds to every daemon Pod (`AddOrUpdateDaemonPodTolerations`).
fn daemon_tolerations(host_network: bool) -> Vec<Value> {
    let mut t: Vec<Value> = [
        ("node.kubernetes.io/not-ready", "NoExecute"),
        ("node.kubernetes.io/unreachable", "NoExecute"),
        ("node.kubernetes.io/disk-pressure", "NoSchedule"),
        ("node.kubernetes.io/memory-pressure", "NoSchedule"),
        ("node.kubernetes.io/pid-pressure", "NoSchedule"),
        ("node.kubernetes.io/unschedulable", "NoSchedule"),
    ]
    .iter()
    .map(|(k, e)| json!({"key": k, "operator": "Exists", "effect": e}))
    .collect();
    if host_network {
        t.push(json!({"key": "node.kubernetes.io/network-unavailable",
            "operator": "Exists", "effect": "NoSchedule"}));
    }
    t
}

/// A Pod spec's tolerations with the daemon ones added or updated in place (kube's
/// `AddOrUpdateTolerationInPodSpec`: one with the same key, effect, operator and value is
/// replaced).
fn with_daemon_tolerations(spec: &Value) -> Vec<Value> {
    let mut out: Vec<Value> = spec
        .get("tolerations")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let host_network = spec.get("hostNetwork") == Some(&json!(true));
    for t in daemon_tolerations(host_network) {
        let same = |o: &Value| {
            ["key", "effect", "operator", "value"]
                .iter()
                .all(|k| str_at(o, &format!("/{k}")) == str_at(&t, &format!("/{k}")))
        };
        match out.iter_mut().find(|o| same(o)) {
            Some(existing) => *existing = t,
            None => out.push(t),
        }
    }
    out
}

/// kube's `ToleratesTaint` (1.34: `Equal` and `Exists`).
fn tolerates(toleration: &Value, taint: &Value) -> bool {
    let effect = str_at(toleration, "/effect");
    if !effect.is_empty() && effect != str_at(taint, "/effect") {
        return false;
    }
    let key = str_at(toleration, "/key");
    if !key.is_empty() && key != str_at(taint, "/key") {
        return false;
    }
    match str_at(toleration, "/operator") {
        "" | "Equal" => str_at(toleration, "/value") == str_at(taint, "/value"),
        "Exists" => true,
        _ => false,
    }
}

/// A node selector requirement against one value (`None`: absent).
fn requirement_holds(req: &Value, value: Option<&str>) -> bool {
    let values: Vec<&str> = req["values"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    let int = |s: &str| s.parse::<i64>().ok();
    match str_at(req, "/operator") {
        "In" => value.is_some_and(|v| values.contains(&v)),
        "NotIn" => value.is_none_or(|v| !values.contains(&v)),
        "Exists" => value.is_some(),
        "DoesNotExist" => value.is_none(),
        op @ ("Gt" | "Lt") if values.len() == 1 => match (value.and_then(int), int(values[0])) {
            (Some(have), Some(want)) => {
                if op == "Gt" {
                    have > want
                } else {
                    have < want
                }
            }
            _ => false,
        },
        _ => false,
    }
}

/// A node selector term: every expression holds on the node's labels, every field on its name;
/// a term with neither matches nothing.
fn term_matches(term: &Value, node: &Value) -> bool {
    let exprs = term["matchExpressions"].as_array();
    let fields = term["matchFields"].as_array();
    if exprs.is_none_or(Vec::is_empty) && fields.is_none_or(Vec::is_empty) {
        return false;
    }
    let labels = &node["metadata"]["labels"];
    exprs
        .into_iter()
        .flatten()
        .all(|r| requirement_holds(r, labels.get(str_at(r, "/key")).and_then(Value::as_str)))
        && fields.into_iter().flatten().all(|r| {
            str_at(r, "/key") == "metadata.name"
                && r["values"].as_array().is_some_and(|v| v.len() == 1)
                && requirement_holds(r, Some(name(node)))
        })
}

/// kube's `GetRequiredNodeAffinity(pod).Match(node)`: the `nodeSelector` and the required
/// node affinity terms (any one of them).
fn fits_node_affinity(spec: &Value, node: &Value) -> bool {
    let labels = &node["metadata"]["labels"];
    let selector_ok = spec["nodeSelector"]
        .as_object()
        .into_iter()
        .flatten()
        .all(|(k, v)| labels.get(k).and_then(Value::as_str) == v.as_str());
    let required =
        spec.pointer("/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution");
    let affinity_ok = match required.filter(|r| !r.is_null()) {
        None => true,
        Some(r) => r["nodeSelectorTerms"]
            .as_array()
            .is_some_and(|terms| terms.iter().any(|t| term_matches(t, node))),
    };
    selector_ok && affinity_ok
}

/// kube's `NodeShouldRunDaemonPod`: (should run, should continue running).
pub fn should_run(ds: &Value, node: &Value) -> (bool, bool) {
    let spec = ds.pointer("/spec/template/spec").unwrap_or(&Value::Null);
    let pinned = str_at(spec, "/nodeName");
    if !pinned.is_empty() && pinned != name(node) {
        return (false, false);
    }
    if !fits_node_affinity(spec, node) {
        return (false, false);
    }
    let tolerations = with_daemon_tolerations(spec);
    let mut untolerated_no_execute = false;
    let mut untolerated = false;
    for taint in node["spec"]["taints"].as_array().into_iter().flatten() {
        let effect = str_at(taint, "/effect");
        if effect != "NoSchedule" && effect != "NoExecute" {
            continue;
        }
        if !tolerations.iter().any(|t| tolerates(t, taint)) {
            untolerated = true;
            untolerated_no_execute |= effect == "NoExecute";
        }
    }
    if untolerated {
        (false, !untolerated_no_execute)
    } else {
        (true, true)
    }
}

/// The node a daemon Pod is for (kube's `GetTargetNodeName`): its `nodeName`, else the one
/// value of its required `metadata.name` affinity.
pub fn target_node(pod: &Value) -> Option<&str> {
    let bound = str_at(pod, "/spec/nodeName");
    if !bound.is_empty() {
        return Some(bound);
    }
    let terms = pod
        .pointer("/spec/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution/nodeSelectorTerms")?
        .as_array()?;
    terms.iter().find_map(|t| {
        t["matchFields"].as_array()?.iter().find_map(|f| {
            let values = f["values"].as_array()?;
            (f["key"] == "metadata.name" && f["operator"] == "In" && values.len() == 1)
                .then(|| values[0].as_str())
                .flatten()
        })
    })
}

// ---------------------------------------------------------------------------------------------
// Pods

/// The daemon Pod for `node` (kube's `CreatePodTemplate` + `ReplaceDaemonSetPodNodeNameNodeAffinity`
/// + `GetPodFromTemplate`).
pub fn new_pod(ds: &Value, node: &str, hash: &str) -> Value {
    let template = ds.pointer("/spec/template").unwrap_or(&Value::Null);
    let mut metadata = Map::new();
    metadata.insert("generateName".into(), json!(format!("{}-", name(ds))));
    metadata.insert("namespace".into(), json!(str_at(ds, "/metadata/namespace")));
    let mut labels = template
        .pointer("/metadata/labels")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    if !hash.is_empty() {
        labels.insert(HASH_LABEL.into(), json!(hash));
    }
    if let Some(g) = template_generation(ds) {
        labels.insert(GENERATION_LABEL.into(), json!(g.to_string()));
    }
    metadata.insert("labels".into(), Value::Object(labels));
    for k in ["annotations", "finalizers"] {
        if let Some(v) = template
            .pointer(&format!("/metadata/{k}"))
            .filter(|v| !v.is_null())
        {
            metadata.insert(k.into(), v.clone());
        }
    }
    metadata.insert(
        "ownerReferences".into(),
        json!([turtles_controller::workload::controller_ref(
            ds,
            "apps/v1",
            "DaemonSet"
        )]),
    );
    let mut spec = template.get("spec").cloned().unwrap_or_else(|| json!({}));
    let tolerations = with_daemon_tolerations(&spec);
    if let Some(s) = spec.as_object_mut() {
        s.insert("tolerations".into(), Value::Array(tolerations));
        let pin = json!({"nodeSelectorTerms": [{"matchFields": [
            {"key": "metadata.name", "operator": "In", "values": [node]}]}]});
        let affinity = s.entry("affinity").or_insert_with(|| json!({}));
        if !affinity.is_object() {
            *affinity = json!({});
        }
        let node_affinity = affinity
            .as_object_mut()
            .map(|a| a.entry("nodeAffinity").or_insert_with(|| json!({})));
        if let Some(na) = node_affinity {
            if !na.is_object() {
                *na = json!({});
            }
            na["requiredDuringSchedulingIgnoredDuringExecution"] = pin;
        }
    }
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec})
}

/// kube's `IsPodUpdated`: made from this revision (hash) or this template generation.
pub fn updated(pod: &Value, hash: &str, generation: Option<i64>) -> bool {
    (!hash.is_empty() && meta::label(pod, HASH_LABEL) == Some(hash))
        || generation
            .is_some_and(|g| meta::label(pod, GENERATION_LABEL) == Some(g.to_string().as_str()))
}

fn phase(pod: &Value) -> &str {
    str_at(pod, "/status/phase")
}

fn terminal(pod: &Value) -> bool {
    matches!(phase(pod), "Failed" | "Succeeded")
}

/// kube's `podByCreationTimestampAndPhase`: bound first, then older, then by name.
fn sort_pods(pods: &mut [&Value]) {
    pods.sort_by(|a, b| {
        let bound = |p: &Value| str_at(p, "/spec/nodeName").is_empty();
        bound(a)
            .cmp(&bound(b))
            .then_with(|| {
                str_at(a, "/metadata/creationTimestamp")
                    .cmp(str_at(b, "/metadata/creationTimestamp"))
            })
            .then_with(|| name(a).cmp(name(b)))
    });
}

/// `maxUnavailable` or `maxSurge` of `desired`, rounded up (kube's
/// `GetScaledValueFromIntOrPercent(.., true)`).
fn scaled(v: &Value, desired: i64) -> i64 {
    match v {
        Value::Number(n) => n.as_i64().unwrap_or(0).max(0),
        Value::String(s) => match s.strip_suffix('%').and_then(|p| p.parse::<i64>().ok()) {
            Some(p) => (p.max(0) * desired + 99) / 100,
            None => s.parse::<i64>().unwrap_or(0).max(0),
        },
        _ => 0,
    }
}

// ---------------------------------------------------------------------------------------------
// The sync

/// One thing a sync does.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// Create the daemon Pod for this node.
    Create { node: String, pod: Value },
    /// Delete a Pod, for its uid.
    Delete { pod: String, uid: String },
    /// Delete a failed Pod (kube's `FailedDaemonPod`), unless its node is backing off; the key
    /// of the back-off.
    DeleteFailed {
        pod: String,
        uid: String,
        node: String,
        backoff_key: String,
    },
    /// A finished Pod found (kube's `SucceededDaemonPod`), deleted.
    DeleteSucceeded {
        pod: String,
        uid: String,
        node: String,
    },
}

/// What [`plan`] needs.
pub struct Input<'a> {
    pub ds: &'a Value,
    pub nodes: &'a [Value],
    /// The Pods the set controls.
    pub pods: &'a [Value],
    /// The current revision's hash.
    pub hash: &'a str,
    pub now: i64,
    /// Whether a node's failed-Pod back-off (by its key) still runs, and for how many seconds.
    pub in_backoff: &'a dyn Fn(&str) -> Option<i64>,
}

/// The status counts (kube's `updateDaemonSetStatus`).
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Status {
    pub desired: i64,
    pub current: i64,
    pub misscheduled: i64,
    pub ready: i64,
    pub updated: i64,
    pub available: i64,
}

impl Status {
    pub fn to_json(&self, generation: i64) -> Value {
        json!({
            "currentNumberScheduled": self.current,
            "numberMisscheduled": self.misscheduled,
            "desiredNumberScheduled": self.desired,
            "numberReady": self.ready,
            "observedGeneration": generation,
            "updatedNumberScheduled": self.updated,
            "numberAvailable": self.available,
            "numberUnavailable": self.desired - self.available,
        })
    }

    /// Whether the stored status differs (or is for an older generation).
    pub fn differs_from(&self, stored: &Value, generation: i64) -> bool {
        let n = |k: &str| stored[k].as_i64().unwrap_or(0);
        n("observedGeneration") < generation
            || n("desiredNumberScheduled") != self.desired
            || n("currentNumberScheduled") != self.current
            || n("numberMisscheduled") != self.misscheduled
            || n("numberReady") != self.ready
            || n("updatedNumberScheduled") != self.updated
            || n("numberAvailable") != self.available
            || n("numberUnavailable") != self.desired - self.available
    }
}

/// The result of [`plan`].
#[derive(Debug)]
pub struct Plan {
    pub actions: Vec<Action>,
    pub status: Status,
    /// Look again in this many seconds (`minReadySeconds`).
    pub requeue_after_secs: Option<i64>,
}

/// The set's Pods by the node they are for; terminal Pods being deleted are left out (kube's
/// `getNodesToDaemonPods(false)`), Pods for no node too.
fn by_node(pods: &[Value]) -> BTreeMap<&str, Vec<&Value>> {
    let mut out: BTreeMap<&str, Vec<&Value>> = BTreeMap::new();
    for pod in pods {
        if terminal(pod) && meta::is_deleting(pod) {
            continue;
        }
        if let Some(node) = target_node(pod) {
            out.entry(node).or_default().push(pod);
        }
    }
    for list in out.values_mut() {
        sort_pods(list);
    }
    out
}

/// One sync of the set (kube's `manage`, then `rollingUpdate` when `manage` had nothing to do,
/// and the status).
pub fn plan(input: &Input) -> Plan {
    let ds = input.ds;
    let generation = template_generation(ds);
    let min_ready = min_ready_seconds(ds);
    let now = input.now;
    let pods_by_node = by_node(input.pods);
    let mut actions = Vec::new();

    // The status, from the Pods as they are.
    let mut status = Status::default();
    for node in input.nodes {
        let (run, _) = should_run(ds, node);
        let pods = pods_by_node.get(name(node));
        let scheduled = pods.is_some_and(|p| !p.is_empty());
        if run {
            status.desired += 1;
            if let Some(pod) = pods.and_then(|p| p.first()) {
                status.current += 1;
                if pod_ready(pod) {
                    status.ready += 1;
                    if available(pod, min_ready, now).is_ok() {
                        status.available += 1;
                    }
                }
                if updated(pod, input.hash, generation) {
                    status.updated += 1;
                }
            }
        } else if scheduled {
            status.misscheduled += 1;
        }
    }
    // Look again when a Ready Pod becomes available (any Pod, not only each node's first: a
    // surge's new Pod is its node's second).
    let mut requeue: Option<i64> = None;
    if min_ready > 0 {
        for pod in pods_by_node.values().flatten() {
            if let Err(left) = available(pod, min_ready, now) {
                if left > 0 && pod_ready(pod) {
                    requeue = Some(requeue.map_or(left, |r: i64| r.min(left)));
                }
            }
        }
    }
    if meta::is_deleting(ds) {
        return Plan {
            actions,
            status,
            requeue_after_secs: requeue,
        };
    }

    // manage: what each node should have.
    let surge = allows_surge(ds);
    let mut backoff_wait: Option<i64> = None;
    let mut creates: Vec<String> = Vec::new();
    let mut deletes: Vec<&Value> = Vec::new();
    let empty = Vec::new();
    for node in input.nodes {
        let node_name = name(node);
        let (run, keep) = should_run(ds, node);
        let pods = pods_by_node.get(node_name).unwrap_or(&empty);
        if run && pods.is_empty() {
            creates.push(node_name.to_owned());
            continue;
        }
        if !keep {
            deletes.extend(pods.iter().filter(|p| !meta::is_deleting(p)));
            continue;
        }
        let mut running: Vec<&Value> = Vec::new();
        for pod in pods.iter().filter(|p| !meta::is_deleting(p)) {
            match phase(pod) {
                "Failed" => {
                    let backoff_key = format!(
                        "{}/{}/{node_name}",
                        str_at(ds, "/metadata/uid"),
                        ds["status"]["observedGeneration"].as_i64().unwrap_or(0)
                    );
                    // kube: a node backing off keeps its failed Pod for now, and is looked at
                    // again when the back-off ends; that is no work done this sync.
                    match (input.in_backoff)(&backoff_key) {
                        Some(left) => {
                            backoff_wait = Some(backoff_wait.map_or(left, |w: i64| w.min(left)))
                        }
                        None => actions.push(Action::DeleteFailed {
                            pod: name(pod).to_owned(),
                            uid: meta_uid(pod),
                            node: node_name.to_owned(),
                            backoff_key,
                        }),
                    }
                }
                "Succeeded" => actions.push(Action::DeleteSucceeded {
                    pod: name(pod).to_owned(),
                    uid: meta_uid(pod),
                    node: node_name.to_owned(),
                }),
                _ => running.push(pod),
            }
        }
        if !surge {
            deletes.extend(running.iter().skip(1));
            continue;
        }
        if running.is_empty() {
            if run {
                creates.push(node_name.to_owned());
            }
            continue;
        }
        // Surge: keep the oldest new and the oldest old Pod; the old one goes once the new
        // one is available (or when it is not ready anyway).
        let is_new = |p: &&Value| updated(p, input.hash, generation);
        let oldest_new = running.iter().find(|p| is_new(p)).copied();
        let oldest_old = running.iter().find(|p| !is_new(p)).copied();
        for p in &running {
            if Some(*p) != oldest_new && Some(*p) != oldest_old {
                deletes.push(p);
            }
        }
        if let (Some(new), Some(old)) = (oldest_new, oldest_old) {
            if !pod_ready(old) || available(new, min_ready, now).is_ok() {
                deletes.push(old);
            }
        }
    }
    // Pods for a node that does not exist, not bound: nowhere to go.
    let nodes: Vec<&str> = input.nodes.iter().map(name).collect();
    for (node, pods) in &pods_by_node {
        if !nodes.contains(node) {
            deletes.extend(
                pods.iter()
                    .filter(|p| str_at(p, "/spec/nodeName").is_empty() && !meta::is_deleting(p)),
            );
        }
    }
    let managed = !creates.is_empty() || !deletes.is_empty() || !actions.is_empty();
    push_syncs(ds, input.hash, creates, deletes, &mut actions);

    // The rolling update, only when manage had nothing to do (kube: expectations satisfied).
    if !managed && update_strategy_is_rolling(ds) {
        let (creates, deletes) = rolling_update(input, &pods_by_node, surge);
        push_syncs(ds, input.hash, creates, deletes, &mut actions);
    }
    let requeue = match (requeue, backoff_wait) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    };
    Plan {
        actions,
        status,
        requeue_after_secs: requeue,
    }
}

fn meta_uid(obj: &Value) -> String {
    str_at(obj, "/metadata/uid").to_owned()
}

fn push_syncs(
    ds: &Value,
    hash: &str,
    creates: Vec<String>,
    deletes: Vec<&Value>,
    actions: &mut Vec<Action>,
) {
    for node in creates.into_iter().take(BURST) {
        let pod = new_pod(ds, &node, hash);
        actions.push(Action::Create { node, pod });
    }
    for pod in deletes.into_iter().take(BURST) {
        actions.push(Action::Delete {
            pod: name(pod).to_owned(),
            uid: meta_uid(pod),
        });
    }
}

fn update_strategy_is_rolling(ds: &Value) -> bool {
    matches!(
        str_at(ds, "/spec/updateStrategy/type"),
        "" | "RollingUpdate"
    )
}

fn rolling(ds: &Value) -> &Value {
    ds.pointer("/spec/updateStrategy/rollingUpdate")
        .unwrap_or(&Value::Null)
}

/// kube's `AllowsSurge`: a `maxSurge` that is not zero.
fn allows_surge(ds: &Value) -> bool {
    update_strategy_is_rolling(ds) && scaled(&rolling(ds)["maxSurge"], 1) > 0
}

/// kube's `rollingUpdate`: the Pods to create and delete, per node in name order.
fn rolling_update<'a>(
    input: &Input<'a>,
    pods_by_node: &BTreeMap<&'a str, Vec<&'a Value>>,
    surge: bool,
) -> (Vec<String>, Vec<&'a Value>) {
    let ds = input.ds;
    let generation = template_generation(ds);
    let min_ready = min_ready_seconds(ds);
    let now = input.now;
    let runs: Vec<(&Value, bool)> = input
        .nodes
        .iter()
        .map(|n| (n, should_run(ds, n).0))
        .collect();
    let desired = runs.iter().filter(|(_, r)| *r).count() as i64;
    let ru = rolling(ds);
    let mut max_unavailable = scaled(&ru["maxUnavailable"], desired);
    let max_surge = scaled(&ru["maxSurge"], desired);
    if desired > 0 && max_unavailable == 0 && max_surge == 0 {
        max_unavailable = 1;
    }
    let is_available = |p: &Value| available(p, min_ready, now).is_ok();
    // The nodes that should run the Pod, and the others that have Pods.
    let mut nodes: Vec<(&str, bool)> = runs.iter().map(|(n, r)| (name(n), *r)).collect();
    for node in pods_by_node.keys() {
        if !nodes.iter().any(|(n, _)| n == node) {
            nodes.push((node, false));
        }
    }
    let mut creates = Vec::new();
    let mut deletes = Vec::new();
    if !surge {
        let mut unavailable = 0;
        let mut allowed: Vec<&Value> = Vec::new();
        let mut candidates: Vec<&Value> = Vec::new();
        for (node, run) in &nodes {
            let pods = pods_by_node.get(node);
            if !run && pods.is_none() {
                continue;
            }
            let Some((new, old)) = new_and_old(pods, input.hash, generation) else {
                unavailable += 1;
                continue;
            };
            match (new, old) {
                (None, None) | (Some(_), Some(_)) => unavailable += 1,
                (Some(new), None) => {
                    if !is_available(new) {
                        unavailable += 1;
                    }
                }
                (None, Some(old)) => {
                    if !is_available(old) {
                        allowed.push(old);
                        unavailable += 1;
                    } else if unavailable < max_unavailable {
                        candidates.push(old);
                    }
                }
            }
        }
        let room = (max_unavailable - unavailable).max(0) as usize;
        deletes.extend(allowed);
        deletes.extend(candidates.into_iter().take(room));
        return (creates, deletes);
    }
    let mut surging = 0;
    let mut num_available = 0;
    let mut allowed_nodes: Vec<String> = Vec::new();
    let mut candidate_nodes: Vec<String> = Vec::new();
    let mut should_not_run: Vec<&Value> = Vec::new();
    for (node, run) in &nodes {
        let pods = pods_by_node.get(node);
        let Some((new, old)) = new_and_old(pods, input.hash, generation) else {
            surging += 1;
            continue;
        };
        if old.or(new).is_some_and(is_available) {
            num_available += 1;
        }
        match (new, old) {
            (_, None) => {}
            (None, Some(old)) => {
                if !is_available(old) {
                    if *run {
                        allowed_nodes.push((*node).to_owned());
                    } else {
                        deletes.push(old);
                    }
                } else if !run {
                    should_not_run.push(old);
                } else if surging < max_surge {
                    candidate_nodes.push((*node).to_owned());
                }
            }
            (Some(new), Some(old)) => {
                if is_available(new) {
                    deletes.push(old);
                } else {
                    surging += 1;
                }
            }
        }
    }
    let excess = (num_available - desired).max(0) as usize;
    deletes.extend(should_not_run.into_iter().take(excess));
    let room = (max_surge - surging).max(0) as usize;
    creates.extend(allowed_nodes);
    creates.extend(candidate_nodes.into_iter().take(room));
    (creates, deletes)
}

/// kube's `findUpdatedPodsOnNode`: the node's new and old Pod (not being deleted); `None` when
/// it has more than one of either.
fn new_and_old<'a>(
    pods: Option<&Vec<&'a Value>>,
    hash: &str,
    generation: Option<i64>,
) -> Option<(Option<&'a Value>, Option<&'a Value>)> {
    let mut new = None;
    let mut old = None;
    for pod in pods.into_iter().flatten().filter(|p| !meta::is_deleting(p)) {
        let slot = if updated(pod, hash, generation) {
            &mut new
        } else {
            &mut old
        };
        if slot.is_some() {
            return None;
        }
        *slot = Some(*pod);
    }
    Some((new, old))
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: i64 = 1_900_000_000;

    fn ds(extra: Value) -> Value {
        let mut d = json!({
            "apiVersion": "apps/v1", "kind": "DaemonSet",
            "metadata": {"name": "agent", "namespace": "kube-system", "uid": "ds-uid",
                "generation": 1, "annotations": {TEMPLATE_GENERATION: "1"}},
            "spec": {
                "selector": {"matchLabels": {"app": "agent"}},
                "template": {
                    "metadata": {"labels": {"app": "agent"}},
                    "spec": {"containers": [{"name": "c", "image": "agent:1"}]},
                },
                "updateStrategy": {"type": "RollingUpdate",
                    "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}},
            },
        });
        merge(&mut d, extra);
        d
    }

    fn merge(into: &mut Value, patch: Value) {
        match (into, patch) {
            (Value::Object(a), Value::Object(b)) => {
                for (k, v) in b {
                    merge(a.entry(k).or_insert(Value::Null), v);
                }
            }
            (slot, v) => *slot = v,
        }
    }

    fn node(n: &str, labels: Value, taints: Value) -> Value {
        json!({"metadata": {"name": n, "labels": labels}, "spec": {"taints": taints}})
    }

    fn nodes(n: usize) -> Vec<Value> {
        (1..=n)
            .map(|i| node(&format!("n{i}"), json!({}), json!([])))
            .collect()
    }

    fn pod(d: &Value, node: &str, hash: &str, ready: bool) -> Value {
        let mut p = new_pod(d, node, hash);
        p["metadata"]["name"] = json!(format!("agent-{node}-{hash}"));
        p["metadata"]["uid"] = json!(format!("uid-{node}-{hash}"));
        p["metadata"]["creationTimestamp"] = json!("2030-01-01T00:00:00Z");
        p["spec"]["nodeName"] = json!(node);
        p["status"] = json!({"phase": "Running", "conditions": [{"type": "Ready",
            "status": if ready { "True" } else { "False" },
            "lastTransitionTime": "2030-01-01T00:00:00Z"}]});
        p
    }

    /// The set after a template change: the server moved its template generation on.
    fn changed(d: &Value) -> Value {
        let mut d = d.clone();
        d["metadata"]["annotations"][TEMPLATE_GENERATION] = json!("2");
        d
    }

    fn run(d: &Value, nodes: &[Value], pods: &[Value], hash: &str) -> Plan {
        plan(&Input {
            ds: d,
            nodes,
            pods,
            hash,
            now: NOW,
            in_backoff: &|_| None,
        })
    }

    fn created(p: &Plan) -> Vec<String> {
        p.actions
            .iter()
            .filter_map(|a| match a {
                Action::Create { node, .. } => Some(node.clone()),
                _ => None,
            })
            .collect()
    }

    fn deleted(p: &Plan) -> Vec<String> {
        p.actions
            .iter()
            .filter_map(|a| match a {
                Action::Delete { pod, .. } => Some(pod.clone()),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn a_pod_is_pinned_to_its_node_labelled_and_tolerant() {
        let d = ds(json!({"spec": {"template": {"spec": {"tolerations": [
            {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute",
             "tolerationSeconds": 5}]}}}}));
        let p = new_pod(&d, "n1", "abc");
        assert_eq!(p["metadata"]["generateName"], "agent-");
        assert_eq!(
            p["metadata"]["labels"],
            json!({"app": "agent",
            "controller-revision-hash": "abc", "pod-template-generation": "1"})
        );
        assert_eq!(p["metadata"]["ownerReferences"][0]["kind"], "DaemonSet");
        assert_eq!(
            p["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"],
            json!({"nodeSelectorTerms": [{"matchFields": [
                {"key": "metadata.name", "operator": "In", "values": ["n1"]}]}]})
        );
        let tolerations = p["spec"]["tolerations"].as_array().unwrap();
        assert_eq!(tolerations.len(), 6);
        // The user's not-ready toleration is replaced in place (its seconds dropped), as kube.
        assert_eq!(
            tolerations[0],
            json!({"key": "node.kubernetes.io/not-ready",
            "operator": "Exists", "effect": "NoExecute"})
        );
        assert_eq!(target_node(&p), Some("n1"));
        let host = ds(json!({"spec": {"template": {"spec": {"hostNetwork": true}}}}));
        assert_eq!(
            new_pod(&host, "n1", "h")["spec"]["tolerations"]
                .as_array()
                .unwrap()
                .len(),
            7
        );
    }

    #[test]
    fn nodes_run_the_pod_by_selector_affinity_and_taints() {
        let plain = ds(json!({}));
        let gpu = node("g", json!({"gpu": "yes", "n": "5"}), json!([]));
        let other = node("o", json!({}), json!([]));
        assert_eq!(should_run(&plain, &gpu), (true, true));
        let selected =
            ds(json!({"spec": {"template": {"spec": {"nodeSelector": {"gpu": "yes"}}}}}));
        assert_eq!(should_run(&selected, &gpu), (true, true));
        assert_eq!(should_run(&selected, &other), (false, false));
        let gt = ds(
            json!({"spec": {"template": {"spec": {"affinity": {"nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                {"matchExpressions": [{"key": "n", "operator": "Gt", "values": ["3"]}]}]}}}}}}}),
        );
        assert_eq!(should_run(&gt, &gpu), (true, true));
        assert_eq!(should_run(&gt, &other), (false, false));
        // Taints: NoSchedule keeps running Pods, NoExecute does not; tolerations and the daemon
        // tolerations (unschedulable) let them in.
        let no_schedule = node(
            "t",
            json!({}),
            json!([{"key": "k", "value": "v", "effect": "NoSchedule"}]),
        );
        let no_execute = node("x", json!({}), json!([{"key": "k", "effect": "NoExecute"}]));
        let cordoned = node(
            "c",
            json!({}),
            json!([{"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}]),
        );
        assert_eq!(should_run(&plain, &no_schedule), (false, true));
        assert_eq!(should_run(&plain, &no_execute), (false, false));
        assert_eq!(should_run(&plain, &cordoned), (true, true));
        let tolerant = ds(json!({"spec": {"template": {"spec": {"tolerations": [
            {"key": "k", "operator": "Equal", "value": "v", "effect": "NoSchedule"},
            {"operator": "Exists", "effect": "NoExecute"}]}}}}));
        assert_eq!(should_run(&tolerant, &no_schedule), (true, true));
        assert_eq!(should_run(&tolerant, &no_execute), (true, true));
        let pinned = ds(json!({"spec": {"template": {"spec": {"nodeName": "g"}}}}));
        assert_eq!(should_run(&pinned, &other), (false, false));
    }

    #[test]
    fn every_fitting_node_gets_one_pod_and_extra_or_misplaced_ones_go() {
        let d = ds(json!({}));
        let ns = nodes(3);
        let p = run(&d, &ns, &[], "h1");
        assert_eq!(created(&p), ["n1", "n2", "n3"]);
        assert_eq!(p.status.desired, 3);
        assert_eq!(p.status.current, 0);
        // Two Pods on n1: the younger goes. A Pod for a node that is gone, unbound, goes.
        let mut young = pod(&d, "n1", "h1", true);
        young["metadata"]["name"] = json!("young");
        young["metadata"]["creationTimestamp"] = json!("2031-01-01T00:00:00Z");
        let mut lost = pod(&d, "n9", "h1", true);
        lost["spec"]["nodeName"] = json!("");
        let pods = vec![
            pod(&d, "n1", "h1", true),
            young,
            pod(&d, "n2", "h1", true),
            pod(&d, "n3", "h1", false),
            lost,
        ];
        let p = run(&d, &ns, &pods, "h1");
        assert!(created(&p).is_empty());
        assert_eq!(deleted(&p), ["young", "agent-n9-h1"]);
        assert_eq!(
            p.status,
            Status {
                desired: 3,
                current: 3,
                misscheduled: 0,
                ready: 2,
                updated: 3,
                available: 2
            }
        );
        // A NoExecute taint on n2: its Pod goes, and it counts as misscheduled until then.
        let mut tainted = ns.clone();
        tainted[1]["spec"]["taints"] = json!([{"key": "k", "effect": "NoExecute"}]);
        let p = run(&d, &tainted, &pods[..4], "h1");
        assert_eq!(deleted(&p), ["young", "agent-n2-h1"]);
        assert_eq!(p.status.misscheduled, 1);
        assert_eq!(p.status.desired, 2);
    }

    #[test]
    fn failed_and_finished_pods_are_replaced() {
        let d = ds(json!({}));
        let ns = nodes(1);
        let mut failed = pod(&d, "n1", "h1", false);
        failed["status"]["phase"] = json!("Failed");
        let p = run(&d, &ns, &[failed], "h1");
        assert!(
            matches!(&p.actions[0], Action::DeleteFailed { node, backoff_key, .. }
            if node == "n1" && backoff_key == "ds-uid/0/n1")
        );
        // A failed Pod already being deleted no longer counts: the node gets a new one.
        let mut going = pod(&d, "n1", "h1", false);
        going["status"]["phase"] = json!("Failed");
        going["metadata"]["deletionTimestamp"] = json!("2030-01-01T00:00:00Z");
        let p = run(&d, &ns, &[going], "h1");
        assert_eq!(
            created(&p),
            ["n1"],
            "terminal and being deleted: no longer counted"
        );
    }

    #[test]
    fn a_rolling_update_replaces_max_unavailable_pods_at_a_time() {
        let before = ds(json!({}));
        let d = changed(&before);
        let ns = nodes(3);
        let old: Vec<Value> = ["n1", "n2", "n3"]
            .iter()
            .map(|n| pod(&before, n, "h1", true))
            .collect();
        let p = run(&d, &ns, &old, "h2");
        assert_eq!(deleted(&p), ["agent-n1-h1"]);
        assert_eq!(p.status.updated, 0);
        // n1's new Pod not available yet: nothing more.
        let mut mid = old.clone();
        mid[0] = pod(&d, "n1", "h2", false);
        assert!(run(&d, &ns, &mid, "h2").actions.is_empty());
        // Available: the next one.
        mid[0] = pod(&d, "n1", "h2", true);
        assert_eq!(deleted(&run(&d, &ns, &mid, "h2")), ["agent-n2-h1"]);
        // maxUnavailable 2 (of 3, as a percentage rounded up): two at a time; an unavailable
        // old Pod goes anyway.
        let wide = changed(&ds(
            json!({"spec": {"updateStrategy": {"rollingUpdate": {"maxUnavailable": "50%"}}}}),
        ));
        assert_eq!(
            deleted(&run(&wide, &ns, &old, "h2")),
            ["agent-n1-h1", "agent-n2-h1"]
        );
        let mut sick = old.clone();
        sick[2] = pod(&before, "n3", "h1", false);
        assert_eq!(deleted(&run(&d, &ns, &sick, "h2")), ["agent-n3-h1"]);
        // OnDelete: never.
        let on_delete = changed(&ds(
            json!({"spec": {"updateStrategy": {"type": "OnDelete", "rollingUpdate": null}}}),
        ));
        assert!(run(&on_delete, &ns, &old, "h2").actions.is_empty());
        // A Pod of the set's template generation counts as updated, whatever its hash.
        let mut by_gen = pod(&d, "n1", "zzz", true);
        by_gen["metadata"]["labels"][HASH_LABEL] = json!("other");
        assert!(updated(&by_gen, "h2", Some(2)));
        assert!(!updated(&old[0], "h2", Some(2)));
    }

    #[test]
    fn with_max_surge_the_new_pod_starts_before_the_old_one_goes() {
        let before = ds(
            json!({"spec": {"updateStrategy": {"rollingUpdate": {"maxUnavailable": 0, "maxSurge": 1}}}}),
        );
        let d = changed(&before);
        let ns = nodes(2);
        let old: Vec<Value> = ["n1", "n2"]
            .iter()
            .map(|n| pod(&before, n, "h1", true))
            .collect();
        let p = run(&d, &ns, &old, "h2");
        assert_eq!(created(&p), ["n1"]);
        assert!(deleted(&p).is_empty());
        // Both on n1, the new one not ready: wait.
        let mut both = old.clone();
        both.push(pod(&d, "n1", "h2", false));
        assert!(run(&d, &ns, &both, "h2").actions.is_empty());
        // Ready: manage deletes the old one on n1.
        both[2] = pod(&d, "n1", "h2", true);
        assert_eq!(deleted(&run(&d, &ns, &both, "h2")), ["agent-n1-h1"]);
    }

    #[test]
    fn a_node_backing_off_keeps_its_failed_pod_and_the_rollout_goes_on() {
        let before = ds(json!({}));
        let d = changed(&before);
        let ns = nodes(2);
        let mut failed = pod(&before, "n1", "h1", false);
        failed["status"]["phase"] = json!("Failed");
        let pods = [failed, pod(&before, "n2", "h1", true)];
        let p = plan(&Input {
            ds: &d,
            nodes: &ns,
            pods: &pods,
            hash: "h2",
            now: NOW,
            in_backoff: &|key| (key == "ds-uid/0/n1").then_some(7),
        });
        assert!(!p
            .actions
            .iter()
            .any(|a| matches!(a, Action::DeleteFailed { .. })));
        assert_eq!(p.requeue_after_secs, Some(7));
        // The rolling update is not held up: it replaces the failed (unavailable) old Pod, as
        // kube's does.
        assert_eq!(deleted(&p), ["agent-n1-h1"]);
    }

    #[test]
    fn a_surge_pod_waiting_out_min_ready_seconds_brings_the_set_back() {
        let before = ds(
            json!({"spec": {"minReadySeconds": 30, "updateStrategy": {"rollingUpdate":
            {"maxUnavailable": 0, "maxSurge": 1}}}}),
        );
        let d = changed(&before);
        let ns = nodes(1);
        let mut new = pod(&d, "n1", "h2", true);
        new["metadata"]["creationTimestamp"] = json!("2031-01-01T00:00:00Z");
        let t = turtles_controller::workload::parse_rfc3339("2030-01-01T00:00:00Z").unwrap();
        new["status"]["conditions"][0]["lastTransitionTime"] = json!("2030-01-01T00:00:20Z");
        let mut old = pod(&before, "n1", "h1", true);
        old["status"]["conditions"][0]["lastTransitionTime"] = json!("2029-01-01T00:00:00Z");
        let pods = [old, new];
        let p = plan(&Input {
            ds: &d,
            nodes: &ns,
            pods: &pods,
            hash: "h2",
            now: t + 25,
            in_backoff: &|_| None,
        });
        assert!(deleted(&p).is_empty());
        assert_eq!(p.requeue_after_secs, Some(26));
    }

    #[test]
    fn percentages_round_up() {
        assert_eq!(scaled(&json!("25%"), 3), 1);
        assert_eq!(scaled(&json!("50%"), 3), 2);
        assert_eq!(scaled(&json!(2), 3), 2);
        assert_eq!(scaled(&Value::Null, 3), 0);
    }
}
