//! `daemonset`: runs `apps/v1` DaemonSets as kube-controller-manager's DaemonSet controller does
//! (kube 1.34): one Pod on every node that should run it (node selector, required node
//! affinity, taints and tolerations), pinned to its node by node affinity; failed Pods replaced
//! with a per-node back-off; rolling updates with `maxUnavailable` or `maxSurge` (or `OnDelete`);
//! ControllerRevisions for `kubectl rollout history` and `kubectl rollout undo`; the status
//! `kubectl rollout status` reads. The decisions are in [`plan`]; this file reads the caches,
//! keeps the revisions and carries the plan out through the API.
//!
//! Watches: DaemonSets (the primary), the Pods and ControllerRevisions they control (mapped to
//! their DaemonSet), and Nodes (a node's key, cluster-scoped, syncs every DaemonSet: a new node,
//! a label or a taint changes where the Pods belong).

pub mod plan;

use std::collections::BTreeMap;
use std::sync::Mutex;

use turtles_controller::workload::{self, UpdateRevision};
use turtles_controller::{
    api, events, export, json, meta, ApiError, Controller, Gvr, Object, ObjectKey, Outcome,
    Permission, Registration, Value, Watch,
};

use plan::Action;

const SETS: Gvr<'static> = Gvr::new("apps", "v1", "daemonsets");
const PODS: Gvr<'static> = Gvr::core("pods");
const NODES: Gvr<'static> = Gvr::core("nodes");
const REVISIONS: Gvr<'static> = Gvr::new("apps", "v1", "controllerrevisions");

/// How many times a revision name is re-hashed after colliding with another revision's.
const MAX_COLLISIONS: i64 = 16;

/// kube's expectations: the Pods this controller created or deleted, per set uid, that the
/// informer cache has not shown yet (a create by name once the cache has the Pod, a delete once
/// the cache no longer has it or shows it terminating), with when they were written. Until the
/// cache has caught up, a sync writes nothing (the cache would make it create a second Pod
/// for a node); entries older than EXPECTATION_TTL_SECS are given up, as kube's do after 5 min.
/// Per set uid: Pod name -> (a create, when written).
type Expected = BTreeMap<String, BTreeMap<String, (bool, i64)>>;
static EXPECTED: Mutex<Expected> = Mutex::new(BTreeMap::new());
const EXPECTATION_TTL_SECS: i64 = 30;

fn expect(ds: &Value, pod: &str, created: bool) {
    let mut all = EXPECTED.lock().unwrap_or_else(|e| e.into_inner());
    all.entry(uid(ds).to_owned())
        .or_default()
        .insert(pod.to_owned(), (created, workload::unix_now()));
}

/// Whether the cache shows everything this controller wrote for the set (forgetting what it
/// shows); `false`: wait.
fn expectations_met(ds: &Value, namespace: &str) -> bool {
    let mut all = EXPECTED.lock().unwrap_or_else(|e| e.into_inner());
    let now = workload::unix_now();
    // Sets whose writes are all old (gone, or long caught up with) are forgotten.
    all.retain(|_, pods| pods.values().any(|(_, at)| now - at < EXPECTATION_TTL_SECS));
    let Some(pods) = all.get_mut(uid(ds)) else {
        return true;
    };
    pods.retain(|name, (created, at)| {
        if now - *at >= EXPECTATION_TTL_SECS {
            return false;
        }
        let cached = turtles_controller::cache::get(PODS, namespace, name);
        if *created {
            cached.is_none()
        } else {
            cached.is_some_and(|p| !meta::is_deleting(&p))
        }
    });
    pods.is_empty()
}

/// The failed-Pod back-off per `UID/GENERATION/NODE` (kube's `failedPodsBackoff`: 1 s doubling
/// to 15 min): the time the next delete is allowed, and the current delay.
static BACKOFF: Mutex<BTreeMap<String, (i64, i64)>> = Mutex::new(BTreeMap::new());
const BACKOFF_MAX_SECS: i64 = 900;

struct DaemonSetController;

impl Controller for DaemonSetController {
    fn register() -> Registration {
        Registration::new(Watch::of(SETS))
            .watch(Watch::of(PODS).owned_by("apps", "DaemonSet"))
            .watch(Watch::of(REVISIONS).owned_by("apps", "DaemonSet"))
            .watch(Watch::of(NODES))
            .permission(Permission::group(
                "apps",
                &["daemonsets/status"],
                &["get", "update", "patch"],
            ))
            .permission(Permission::group("apps", &["daemonsets"], &["get"]))
            .permission(Permission::core(
                &["pods"],
                &["create", "get", "update", "patch", "delete"],
            ))
            .permission(Permission::group(
                "apps",
                &["controllerrevisions"],
                &["create", "get", "update", "patch", "delete"],
            ))
            .permission(Permission::core(&["events"], &["create", "patch"]))
            // One at a time: a node's key and a set's key may sync the same set, and two syncs
            // at once would each give a node its Pod.
            .max_concurrent_reconciles(1)
            .resync_seconds(300)
    }

    fn reconcile(key: ObjectKey, ds: Option<Object>) -> Outcome {
        let result = if key.namespace.is_empty() {
            // A node changed: the sets whose Pods it no longer has right are synced (checked
            // for this node alone, cheaply; the others are left to their own events).
            let node = turtles_controller::cache::get(NODES, "", &key.name);
            let mut all = Ok(None);
            for ds in turtles_controller::cache::list(SETS, None) {
                if node.as_ref().is_none_or(|n| misplaced(&ds, n)) {
                    all = merge(all, sync(&ds));
                }
            }
            all
        } else {
            match ds {
                Some(ds) => sync(&ds),
                None => Ok(None),
            }
        };
        match result {
            Ok(Some(secs)) => Outcome::RequeueAfter(secs.clamp(1, 3600) as u32 * 1000),
            Ok(None) => Outcome::Done,
            Err(e) => e.into(),
        }
    }
}

export!(DaemonSetController);

/// Whether `node` runs the set's Pod when it should not, or lacks it when it should.
fn misplaced(ds: &Value, node: &Value) -> bool {
    let (run, keep) = plan::should_run(ds, node);
    let node_name = meta::name(node).unwrap_or_default();
    let namespace = meta::namespace(ds).unwrap_or_default();
    let has = turtles_controller::cache::list(PODS, Some(namespace))
        .iter()
        .any(|p| controlled_by(p, ds) && plan::target_node(p) == Some(node_name));
    (run && !has) || (!keep && has)
}

/// The more urgent of two sync results: an error, else the sooner requeue.
fn merge(
    a: Result<Option<i64>, ApiError>,
    b: Result<Option<i64>, ApiError>,
) -> Result<Option<i64>, ApiError> {
    match (a, b) {
        (Err(e), _) | (_, Err(e)) => Err(e),
        (Ok(Some(x)), Ok(Some(y))) => Ok(Some(x.min(y))),
        (Ok(x), Ok(y)) => Ok(x.or(y)),
    }
}

fn str_at<'a>(v: &'a Value, pointer: &str) -> &'a str {
    v.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

fn uid(obj: &Value) -> &str {
    str_at(obj, "/metadata/uid")
}

fn controller_of(obj: &Value) -> Option<&Value> {
    obj.pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)?
        .iter()
        .find(|r| r["controller"] == true)
}

fn controlled_by(obj: &Value, ds: &Value) -> bool {
    controller_of(obj).is_some_and(|r| r["uid"] == uid(ds))
}

/// Records an event about the set (best effort, as kube's recorder).
fn event(ds: &Value, warning: bool, reason: &str, note: &str) {
    events::best_effort(ds, warning, reason, note);
}

/// One sync (kube's `syncDaemonSet`). `Ok(Some(secs))`: look again in that many seconds.
fn sync(ds: &Value) -> Result<Option<i64>, ApiError> {
    let namespace = meta::namespace(ds).unwrap_or_default();
    let name = meta::name(ds).unwrap_or_default();
    let selector = ds.pointer("/spec/selector").cloned().unwrap_or(Value::Null);
    if selector.as_object().is_some_and(|s| {
        s.values().all(|v| {
            v.is_null()
                || v.as_object().is_some_and(|o| o.is_empty())
                || v.as_array().is_some_and(|a| a.is_empty())
        })
    }) {
        event(
            ds,
            true,
            "SelectingAll",
            "This daemon set is selecting all pods. A non-empty selector is required.",
        );
        return Ok(None);
    }
    if meta::is_deleting(ds) {
        return Ok(None);
    }
    let nodes = turtles_controller::cache::list(NODES, None);
    let mut recheck = workload::AdoptionCheck::new(ds, SETS.object_path(namespace, name));
    let pods = claim(PODS, ds, namespace, &selector, &mut recheck)?;
    let mut revisions = claim(REVISIONS, ds, namespace, &selector, &mut recheck)?;
    workload::sort_revisions(&mut revisions);
    let stored_collisions = ds["status"]["collisionCount"].as_i64().unwrap_or(0);
    let (current, collisions) = current_revision(ds, namespace, &revisions, stored_collisions)?;
    let hash = meta::label(&current, plan::HASH_LABEL)
        .unwrap_or_else(|| workload::revision_name_hash(&current))
        .to_owned();

    if !expectations_met(ds, namespace) {
        // The Pods' own events bring the next sync; this is the fallback.
        return Ok(Some(1));
    }
    let now = workload::unix_now();
    let in_backoff = |key: &str| {
        let backoff = BACKOFF.lock().unwrap_or_else(|e| e.into_inner());
        backoff
            .get(key)
            .and_then(|(until, _)| (*until > now).then_some(*until - now))
    };
    let planned = plan::plan(&plan::Input {
        ds,
        nodes: &nodes,
        pods: &pods,
        hash: &hash,
        now,
        in_backoff: &in_backoff,
    });
    let mut result: Result<Option<i64>, ApiError> = Ok(planned.requeue_after_secs);
    for action in &planned.actions {
        match carry_out(ds, namespace, action) {
            Ok(Some(secs)) => result = merge(result, Ok(Some(secs))),
            Ok(None) => {}
            Err(e) => {
                result = Err(e);
                break;
            }
        }
    }

    // The history, kept to revisionHistoryLimit (kube's cleanupHistory).
    let limit = ds["spec"]["revisionHistoryLimit"].as_i64().unwrap_or(10);
    let current_name = meta::name(&current).unwrap_or_default();
    let live = |r: &Value| {
        meta::name(r) == Some(current_name)
            || pods.iter().any(|p| {
                meta::label(p, plan::HASH_LABEL)
                    == Some(
                        meta::label(r, plan::HASH_LABEL)
                            .unwrap_or_else(|| workload::revision_name_hash(r)),
                    )
            })
    };
    for old in workload::history_to_delete(limit, &revisions, live) {
        let path = REVISIONS.object_path(namespace, meta::name(old).unwrap_or_default());
        match api::delete(&path) {
            Ok(_) => {}
            Err(e) if e.is_not_found() => {}
            Err(e) => result = merge(result, Err(e)),
        }
    }

    // The status.
    let generation = ds["metadata"]["generation"].as_i64().unwrap_or(0);
    let collisions = collisions.max(stored_collisions);
    if planned.status.differs_from(&ds["status"], generation) || collisions != stored_collisions {
        let mut status = planned.status.to_json(generation);
        if collisions > 0 || ds["status"]["collisionCount"].is_i64() {
            status["collisionCount"] = json!(collisions);
        }
        let path = format!("{}/status", SETS.object_path(namespace, name));
        match api::patch_merge(&path, &json!({"status": status})) {
            Ok(_) => {}
            Err(e) if e.is_not_found() => return Ok(None),
            Err(e) => result = merge(result, Err(e)),
        }
    }
    result
}

/// The Pods (or revisions) of the set's namespace it controls, after adopting orphans that
/// match its selector and releasing those that no longer do (kube's `ClaimPods`).
fn claim(
    gvr: Gvr<'static>,
    ds: &Value,
    namespace: &str,
    selector: &Value,
    recheck: &mut workload::AdoptionCheck,
) -> Result<Vec<Value>, ApiError> {
    let mut out = Vec::new();
    for obj in turtles_controller::cache::list(gvr, Some(namespace)) {
        let matches = meta::selector_matches(selector, &obj["metadata"]["labels"]);
        let path = gvr.object_path(namespace, meta::name(&obj).unwrap_or_default());
        if controlled_by(&obj, ds) {
            if matches {
                out.push(obj);
            } else if !meta::is_deleting(&obj) {
                let refs: Vec<Value> = obj["metadata"]["ownerReferences"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter(|r| r["uid"] != uid(ds))
                    .cloned()
                    .collect();
                match workload::set_owner_references(&path, &obj, refs) {
                    Ok(_) => {}
                    Err(e) if e.is_not_found() || e.is_conflict() => {}
                    Err(e) => return Err(e),
                }
            }
        } else if controller_of(&obj).is_none()
            && matches
            && !meta::is_deleting(&obj)
            && recheck.may_adopt()?
        {
            let mut refs = obj["metadata"]["ownerReferences"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            refs.push(workload::controller_ref(ds, "apps/v1", "DaemonSet"));
            match workload::set_owner_references(&path, &obj, refs) {
                Ok(adopted) => out.push(adopted),
                Err(e) if e.is_not_found() || e.is_conflict() => {}
                Err(e) => return Err(e),
            }
        }
    }
    Ok(out)
}

/// kube's `constructHistory`: the revision holding the current template (made, or an older one
/// renumbered to be the newest after a rollback), with the collision count to store.
fn current_revision(
    ds: &Value,
    namespace: &str,
    revisions: &[Value],
    mut collisions: i64,
) -> Result<(Value, i64), ApiError> {
    let next = workload::next_revision_number(revisions);
    loop {
        let candidate = workload::new_revision(
            ds,
            "apps/v1",
            "DaemonSet",
            plan::HASH_LABEL,
            next,
            collisions,
        );
        match workload::choose_update_revision(candidate, revisions) {
            UpdateRevision::Newest(i) => return Ok((revisions[i].clone(), collisions)),
            UpdateRevision::Bump(i, number) => {
                let name = meta::name(&revisions[i]).unwrap_or_default();
                let bumped = api::patch_merge(
                    &REVISIONS.object_path(namespace, name),
                    &json!({"revision": number}),
                )?;
                return Ok((bumped, collisions));
            }
            UpdateRevision::Create(candidate) => {
                match api::create(&REVISIONS.path(namespace), &candidate) {
                    Ok(created) => return Ok((created, collisions)),
                    Err(e) if e.is_conflict() => {
                        let name = meta::name(&candidate).unwrap_or_default();
                        let existing = api::get(&REVISIONS.object_path(namespace, name))?;
                        if workload::equal_revision(&existing, &candidate)
                            && controlled_by(&existing, ds)
                        {
                            return Ok((existing, collisions));
                        }
                        collisions += 1;
                        if collisions
                            > MAX_COLLISIONS + ds["status"]["collisionCount"].as_i64().unwrap_or(0)
                        {
                            return Err(ApiError {
                                code: 409,
                                reason: "Conflict".into(),
                                message: format!(
                                    "revision name {name} collides {collisions} times"
                                ),
                            });
                        }
                    }
                    Err(e) => return Err(e),
                }
            }
        }
    }
}

/// Carries out one action, with kube's events. `Ok(Some(secs))`: a failed Pod whose node is
/// backing off; look again then.
fn carry_out(ds: &Value, namespace: &str, action: &Action) -> Result<Option<i64>, ApiError> {
    match action {
        Action::Create { pod, .. } => match api::create(&PODS.path(namespace), pod) {
            Ok(created) => {
                let name = meta::name(&created).unwrap_or_default();
                expect(ds, name, true);
                event(
                    ds,
                    false,
                    "SuccessfulCreate",
                    &format!("Created pod: {name}"),
                );
                Ok(None)
            }
            // kube ignores a namespace being deleted: the set goes with it.
            Err(e) if e.message.contains("because it is being terminated") => Ok(None),
            Err(e) => {
                event(
                    ds,
                    true,
                    "FailedCreate",
                    &format!("Error creating: {}", e.message),
                );
                Err(e)
            }
        },
        Action::Delete { pod, uid } => delete(ds, namespace, pod, uid).map(|()| None),
        Action::DeleteSucceeded { pod, uid, node } => {
            event(
                ds,
                false,
                "SucceededDaemonPod",
                &format!("Found succeeded daemon pod {namespace}/{pod} on node {node}, will try to delete it"),
            );
            delete(ds, namespace, pod, uid).map(|()| None)
        }
        Action::DeleteFailed {
            pod,
            uid,
            node,
            backoff_key,
        } => {
            let now = workload::unix_now();
            {
                let mut backoff = BACKOFF.lock().unwrap_or_else(|e| e.into_inner());
                // Entries idle for twice the longest delay are forgotten.
                backoff.retain(|_, (until, _)| *until + 2 * BACKOFF_MAX_SECS > now);
                let entry = backoff.entry(backoff_key.clone()).or_insert((0, 0));
                let delay = if entry.1 == 0 {
                    1
                } else {
                    (entry.1 * 2).min(BACKOFF_MAX_SECS)
                };
                *entry = (now + delay, delay);
            }
            event(
                ds,
                true,
                "FailedDaemonPod",
                &format!(
                    "Found failed daemon pod {namespace}/{pod} on node {node}, will try to kill it"
                ),
            );
            delete(ds, namespace, pod, uid).map(|()| None)
        }
    }
}

fn delete(ds: &Value, namespace: &str, pod: &str, uid: &str) -> Result<(), ApiError> {
    let options =
        json!({"apiVersion": "v1", "kind": "DeleteOptions", "preconditions": {"uid": uid}});
    match api::request(
        "DELETE",
        &PODS.object_path(namespace, pod),
        "application/json",
        Some(&options),
    ) {
        Ok(_) => {
            expect(ds, pod, false);
            event(
                ds,
                false,
                "SuccessfulDelete",
                &format!("Deleted pod: {pod}"),
            );
            Ok(())
        }
        Err(e) if e.is_not_found() || e.is_conflict() => Ok(()),
        Err(e) => {
            event(
                ds,
                true,
                "FailedDelete",
                &format!("Error deleting: {}", e.message),
            );
            Err(e)
        }
    }
}
