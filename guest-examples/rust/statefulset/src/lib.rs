//! `statefulset`: runs `apps/v1` StatefulSets as kube-controller-manager's StatefulSet
//! controller does (kube 1.34): stable Pod names `SET-N`, per-Pod claims from
//! `volumeClaimTemplates`, ordered (`OrderedReady`) or `Parallel` Pod management, rolling updates
//! with `partition` (or `OnDelete`), ControllerRevisions for `kubectl rollout history` and
//! `kubectl rollout undo`, `persistentVolumeClaimRetentionPolicy`, and the status
//! `kubectl rollout status` reads. The decisions are in [`plan`]; this file reads the caches,
//! keeps the revisions and carries the plan out through the API.
//!
//! Watches: StatefulSets (the primary), and the Pods, ControllerRevisions and
//! PersistentVolumeClaims they control (mapped to their StatefulSet; every claim is cached, so
//! that claims without an owner are known too).
//!
//! The informer cache can lag behind this controller's own writes; every step tolerates it as
//! kube's controller does: a create that finds the object there (`AlreadyExists`) waits for the
//! next event, a delete of a Pod already going is harmless, and a revision created twice is found
//! equal and reused.

pub mod plan;

use std::collections::BTreeMap;

use turtles_controller::workload;
use turtles_controller::{
    api, events, export, json, meta, ApiError, Controller, Gvr, Object, ObjectKey, Outcome,
    Permission, Registration, Value, Watch,
};

use plan::{Action, UpdateRevision};

const SETS: Gvr<'static> = Gvr::new("apps", "v1", "statefulsets");
const PODS: Gvr<'static> = Gvr::core("pods");
const CLAIMS: Gvr<'static> = Gvr::core("persistentvolumeclaims");
const REVISIONS: Gvr<'static> = Gvr::new("apps", "v1", "controllerrevisions");

/// How many times a revision name is re-hashed after colliding with another revision's.
const MAX_COLLISIONS: i64 = 16;

struct StatefulSetController;

impl Controller for StatefulSetController {
    fn register() -> Registration {
        Registration::new(Watch::of(SETS))
            .watch(Watch::of(PODS).owned_by("apps", "StatefulSet"))
            .watch(Watch::of(REVISIONS).owned_by("apps", "StatefulSet"))
            .watch(Watch::of(CLAIMS).owned_by("apps", "StatefulSet"))
            .permission(Permission::group(
                "apps",
                &["statefulsets/status"],
                &["get", "update", "patch"],
            ))
            .permission(Permission::core(
                &["pods"],
                &["create", "get", "update", "patch", "delete"],
            ))
            .permission(Permission::core(
                &["persistentvolumeclaims"],
                &["create", "get", "update", "patch"],
            ))
            .permission(Permission::group(
                "apps",
                &["controllerrevisions"],
                &["create", "get", "update", "patch", "delete"],
            ))
            .permission(Permission::core(&["events"], &["create", "patch"]))
            .max_concurrent_reconciles(4)
            // A look at every set now and then, as kube's informers resync: what no event brings
            // back (a Pod of a set's name that was not its own, gone since) is caught up with.
            .resync_seconds(300)
    }

    fn reconcile(_key: ObjectKey, set: Option<Object>) -> Outcome {
        let Some(set) = set else {
            // Its Pods, revisions (and claims with whenDeleted: Delete) go with it through
            // their owner references.
            return Outcome::Done;
        };
        match sync(&set) {
            Ok(Some(secs)) => Outcome::RequeueAfter(secs.clamp(1, 3600) as u32 * 1000),
            Ok(None) => Outcome::Done,
            Err(e) => e.into(),
        }
    }
}

export!(StatefulSetController);

fn str_at<'a>(v: &'a Value, pointer: &str) -> &'a str {
    v.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

/// The controller reference of an object, if any.
fn controller_of(obj: &Value) -> Option<&Value> {
    obj.pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)?
        .iter()
        .find(|r| r["controller"] == true)
}

fn controlled_by(obj: &Value, set: &Value) -> bool {
    controller_of(obj).is_some_and(|r| r["uid"] == plan::uid(set))
}

/// One sync: revisions, the plan, its actions, the status and the history. `Ok(Some(secs))`:
/// look again in that many seconds.
fn sync(set: &Value) -> Result<Option<i64>, ApiError> {
    let namespace = meta::namespace(set).unwrap_or_default();
    let name = meta::name(set).unwrap_or_default();
    let selector = set
        .pointer("/spec/selector")
        .cloned()
        .unwrap_or(Value::Null);
    let alive = !meta::is_deleting(set);

    let mut recheck = workload::AdoptionCheck::new(set, SETS.object_path(namespace, name));
    let pods = claim_pods(set, namespace, name, &selector, alive, &mut recheck)?;
    let mut revisions = claim_revisions(set, namespace, &selector, alive, &mut recheck)?;
    plan::sort_revisions(&mut revisions);
    let stored_collisions = set["status"]["collisionCount"].as_i64().unwrap_or(0);
    let (update, collisions) = update_revision(set, namespace, &revisions, stored_collisions)?;
    let update_name = str_at(&update, "/metadata/name").to_owned();
    let current = revisions
        .iter()
        .find(|r| str_at(r, "/metadata/name") == str_at(set, "/status/currentRevision"))
        .cloned()
        .unwrap_or_else(|| update.clone());
    let current_name = str_at(&current, "/metadata/name").to_owned();
    let claims: BTreeMap<String, Value> = turtles_controller::cache::list(CLAIMS, Some(namespace))
        .into_iter()
        .map(|c| (meta::name(&c).unwrap_or_default().to_owned(), c))
        .collect();

    let current_template = plan::revision_template(&current);
    let update_template = plan::revision_template(&update);
    let input = plan::Input {
        set,
        pods: &pods,
        claims: &claims,
        current_revision: &current_name,
        current_template: &current_template,
        update_revision: &update_name,
        update_template: &update_template,
        now: turtles_controller::workload::unix_now(),
    };
    let planned = plan::plan(&input);
    let mut result = Ok(());
    for action in &planned.actions {
        if let Err(e) = carry_out(set, namespace, name, action) {
            result = Err(e);
            break;
        }
    }

    // The status, even after an error (kube writes what it knows).
    let generation = set["metadata"]["generation"].as_i64().unwrap_or(0);
    // The collision count never goes back (the server refuses that), even from a stale cache.
    let collisions = collisions.max(stored_collisions);
    if planned.status.differs_from(&set["status"], generation) || collisions != stored_collisions {
        let status = planned.status.to_json(generation, collisions);
        let path = format!("{}/status", SETS.object_path(namespace, name));
        match api::patch_merge(&path, &json!({"status": status})) {
            Ok(_) => {}
            Err(e) if e.is_not_found() => return Ok(None),
            Err(e) => result = result.and(Err(e)),
        }
    }

    // The history, kept to revisionHistoryLimit.
    for old in plan::history_to_delete(set, &revisions, &pods, &current_name, &update_name) {
        let path = REVISIONS.object_path(namespace, str_at(old, "/metadata/name"));
        match api::delete(&path) {
            Ok(_) => {}
            Err(e) if e.is_not_found() => {}
            Err(e) => result = result.and(Err(e)),
        }
    }
    result?;

    // kube looks again after minReadySeconds while not every replica is available.
    let min_ready = set["spec"]["minReadySeconds"].as_i64().unwrap_or(0);
    let mut requeue = planned.requeue_after_secs;
    if min_ready > 0 && planned.status.available_replicas != plan::replicas(set) {
        requeue = Some(requeue.map_or(min_ready, |r| r.min(min_ready)));
    }
    Ok(requeue)
}

/// The set's Pods: those it controls whose name is `SET-N`, after adopting orphans that match
/// its selector and releasing those that no longer do (kube's `ClaimPods` with `isMemberOf`).
fn claim_pods(
    set: &Value,
    namespace: &str,
    name: &str,
    selector: &Value,
    alive: bool,
    recheck: &mut workload::AdoptionCheck,
) -> Result<Vec<Value>, ApiError> {
    let mut out = Vec::new();
    for pod in turtles_controller::cache::list(PODS, Some(namespace)) {
        let pod_name = meta::name(&pod).unwrap_or_default();
        let member = plan::is_member(pod_name, name);
        let matches = meta::selector_matches(selector, &pod["metadata"]["labels"]);
        let path = PODS.object_path(namespace, pod_name);
        if controlled_by(&pod, set) {
            if matches || !alive {
                if member {
                    out.push(pod);
                }
            } else if !meta::is_deleting(&pod) {
                release(&path, &pod, set)?;
            }
        } else if controller_of(&pod).is_none()
            && member
            && matches
            && alive
            && !meta::is_deleting(&pod)
            && recheck.may_adopt()?
        {
            match adopt(&path, &pod, set) {
                Ok(adopted) => out.push(adopted),
                Err(e) if e.is_not_found() || e.is_conflict() => {}
                Err(e) => return Err(e),
            }
        }
    }
    Ok(out)
}

/// The set's revisions: those it controls that match its selector, after adopting orphans.
fn claim_revisions(
    set: &Value,
    namespace: &str,
    selector: &Value,
    alive: bool,
    recheck: &mut workload::AdoptionCheck,
) -> Result<Vec<Value>, ApiError> {
    let mut out = Vec::new();
    for rev in turtles_controller::cache::list(REVISIONS, Some(namespace)) {
        if !meta::selector_matches(selector, &rev["metadata"]["labels"]) {
            continue;
        }
        if controlled_by(&rev, set) {
            out.push(rev);
        } else if controller_of(&rev).is_none()
            && alive
            && !meta::is_deleting(&rev)
            && recheck.may_adopt()?
        {
            let path = REVISIONS.object_path(namespace, meta::name(&rev).unwrap_or_default());
            match adopt(&path, &rev, set) {
                Ok(adopted) => out.push(adopted),
                Err(e) if e.is_not_found() || e.is_conflict() => {}
                Err(e) => return Err(e),
            }
        }
    }
    Ok(out)
}

/// Adds the set's controller reference (kube's adoption patch, with the object's uid as a
/// precondition).
fn adopt(path: &str, obj: &Value, set: &Value) -> Result<Value, ApiError> {
    let mut refs = obj["metadata"]["ownerReferences"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    refs.push(plan::controller_ref(set));
    workload::set_owner_references(path, obj, refs)
}

/// Removes the set's reference (kube's release patch).
fn release(path: &str, obj: &Value, set: &Value) -> Result<(), ApiError> {
    let refs: Vec<Value> = obj["metadata"]["ownerReferences"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|r| r["uid"] != plan::uid(set))
        .cloned()
        .collect();
    match workload::set_owner_references(path, obj, refs) {
        Ok(_) => Ok(()),
        Err(e) if e.is_not_found() || e.is_conflict() => Ok(()),
        Err(e) => Err(e),
    }
}

/// The update revision (kube's `getStatefulSetRevisions`): the newest revision when it holds
/// the template, an older one that does with its number bumped (a rollback), or a new one; a
/// name taken by a different revision raises the collision count. Returns it with the
/// collision count to store.
fn update_revision(
    set: &Value,
    namespace: &str,
    revisions: &[Value],
    mut collisions: i64,
) -> Result<(Value, i64), ApiError> {
    let path = REVISIONS.path(namespace);
    loop {
        match plan::choose_update_revision(set, revisions, collisions) {
            UpdateRevision::Newest(i) => return Ok((revisions[i].clone(), collisions)),
            UpdateRevision::Bump(i, number) => {
                let name = str_at(&revisions[i], "/metadata/name");
                let bumped = api::patch_merge(
                    &REVISIONS.object_path(namespace, name),
                    &json!({"revision": number}),
                )?;
                return Ok((bumped, collisions));
            }
            UpdateRevision::Create(candidate) => match api::create(&path, &candidate) {
                Ok(created) => return Ok((created, collisions)),
                Err(e) if e.is_conflict() => {
                    let name = str_at(&candidate, "/metadata/name");
                    let existing = api::get(&REVISIONS.object_path(namespace, name))?;
                    if plan::equal_revision(&existing, &candidate) {
                        return Ok((existing, collisions));
                    }
                    collisions += 1;
                    if collisions
                        > MAX_COLLISIONS + set["status"]["collisionCount"].as_i64().unwrap_or(0)
                    {
                        return Err(ApiError {
                            code: 409,
                            reason: "Conflict".into(),
                            message: format!("revision name {name} collides {collisions} times"),
                        });
                    }
                }
                Err(e) => return Err(e),
            },
        }
    }
}

/// Records an event about the set (best effort, as kube's recorder).
fn event(set: &Value, warning: bool, reason: &str, note: &str) {
    events::best_effort(set, warning, reason, note);
}

fn create_claims(
    set: &Value,
    namespace: &str,
    pod: &str,
    claims: &[Value],
) -> Result<(), ApiError> {
    let set_name = meta::name(set).unwrap_or_default();
    for claim in claims {
        let claim_name = meta::name(claim).unwrap_or_default();
        match api::create(&CLAIMS.path(namespace), claim) {
            Ok(_) => event(
                set,
                false,
                "SuccessfulCreate",
                &format!("create Claim {claim_name} Pod {pod} in StatefulSet {set_name} success"),
            ),
            Err(e) if e.is_conflict() => {}
            Err(e) => {
                event(
                    set,
                    true,
                    "FailedCreate",
                    &format!(
                        "create Claim {claim_name} for Pod {pod} in StatefulSet {set_name} failed error: {}",
                        e.message
                    ),
                );
                return Err(e);
            }
        }
    }
    Ok(())
}

/// Whether the Pod of this name in the store (not the cache) is controlled by the set.
fn ours_already(set: &Value, namespace: &str, pod: &str) -> bool {
    api::get(&PODS.object_path(namespace, pod)).is_ok_and(|p| controlled_by(&p, set))
}

/// Carries out one action, with kube's events (`SuccessfulCreate`, `FailedDelete`, ...).
fn carry_out(
    set: &Value,
    namespace: &str,
    set_name: &str,
    action: &Action,
) -> Result<(), ApiError> {
    let pod_event = |verb: &str, pod: &str, result: &Result<(), ApiError>| {
        let title = |v: &str| format!("{}{}", v[..1].to_uppercase(), &v[1..]);
        match result {
            Ok(()) => event(
                set,
                false,
                &format!("Successful{}", title(verb)),
                &format!("{verb} Pod {pod} in StatefulSet {set_name} successful"),
            ),
            Err(e) => event(
                set,
                true,
                &format!("Failed{}", title(verb)),
                &format!(
                    "{verb} Pod {pod} in StatefulSet {set_name} failed error: {}",
                    e.message
                ),
            ),
        }
    };
    match action {
        Action::CreatePod { pod, claims } => {
            let pod_name = meta::name(pod).unwrap_or_default();
            if let Err(e) = create_claims(set, namespace, pod_name, claims) {
                let failed = Err(ApiError {
                    message: format!("failed to create PVC: {}", e.message),
                    ..e.clone()
                });
                pod_event("create", pod_name, &failed);
                return Err(e);
            }
            match api::create(&PODS.path(namespace), pod) {
                Ok(_) => {
                    pod_event("create", pod_name, &Ok(()));
                    Ok(())
                }
                // Made by an earlier sync the cache has not seen yet: fine. Someone else's Pod of
                // that name (one released from the set, say): an error, retried with backoff
                // until it is gone, as kube does.
                Err(e) if e.is_conflict() && ours_already(set, namespace, pod_name) => Ok(()),
                Err(e) => {
                    let failed = Err(e.clone());
                    pod_event("create", pod_name, &failed);
                    Err(e)
                }
            }
        }
        Action::CreateClaims { pod, claims } => create_claims(set, namespace, pod, claims),
        Action::SetClaimOwners { claim, owners } => {
            let Some(cached) = turtles_controller::cache::get(CLAIMS, namespace, claim) else {
                return Ok(());
            };
            let refs = owners.as_array().cloned().unwrap_or_default();
            match workload::set_owner_references(
                &CLAIMS.object_path(namespace, claim),
                &cached,
                refs,
            ) {
                Ok(_) => Ok(()),
                // Gone, or changed since the cache saw it: its event (or the resync) tells.
                Err(e) if e.is_not_found() || e.is_conflict() => Ok(()),
                Err(e) => Err(e),
            }
        }
        Action::Refused { pod, why } => {
            let refused = Err(ApiError {
                code: 409,
                reason: "Conflict".into(),
                message: why.clone(),
            });
            pod_event("create", pod, &refused);
            Ok(())
        }
        Action::UpdatePod { pod } => {
            let pod_name = meta::name(pod).unwrap_or_default();
            let result = api::update(&PODS.object_path(namespace, pod_name), pod).map(|_| ());
            match &result {
                // Changed meanwhile: its event brings the next sync.
                Err(e) if e.is_conflict() || e.is_not_found() => Ok(()),
                _ => {
                    pod_event("update", pod_name, &result);
                    result
                }
            }
        }
        Action::DeletePod { name, uid } => {
            let options = json!({
                "apiVersion": "v1", "kind": "DeleteOptions", "preconditions": {"uid": uid},
            });
            let path = PODS.object_path(namespace, name);
            let result = api::request("DELETE", &path, "application/json", Some(&options));
            match result {
                Ok(_) => {
                    pod_event("delete", name, &Ok(()));
                    Ok(())
                }
                // Gone already, or a new Pod of that name by now.
                Err(e) if e.is_not_found() || e.is_conflict() => Ok(()),
                Err(e) => {
                    pod_event("delete", name, &Err(e.clone()));
                    Err(e)
                }
            }
        }
    }
}
