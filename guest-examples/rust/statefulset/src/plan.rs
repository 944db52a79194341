//! What one sync of a StatefulSet does, as kube-controller-manager's StatefulSet controller
//! (kube 1.34, `pkg/controller/statefulset`) decides it: pure functions over JSON, so that the
//! whole algorithm is tested natively. `lib.rs` reads the caches, calls [`plan`] and carries out
//! the actions it returns, in order.
//!
//! - Pods are `SET-N` with ordinals from `spec.ordinals.start`, labelled with their name, index
//!   and revision, owned by the set, `hostname`/`subdomain` set, and one volume per
//!   `volumeClaimTemplate` naming the claim `TEMPLATE-SET-N` (created before the Pod).
//! - `OrderedReady` (the default) creates one Pod per sync in ordinal order and waits for each to
//!   be Running, Ready (and available for `minReadySeconds`); scales down from the highest ordinal,
//!   one at a time. `Parallel` creates and deletes without waiting.
//! - Rolling updates delete outdated Pods from the highest ordinal down to `partition`, one at a
//!   time, waiting for the replacement; `OnDelete` leaves them to the user.
//! - Revisions are ControllerRevisions whose data is `{"spec":{"template":{…,"$patch":"replace"}}}`
//!   (what `kubectl rollout undo` patches back), named `SET-HASH` with kube's hash.

use std::collections::BTreeMap;

use turtles_controller::serde_json::{self, Map};
use turtles_controller::workload::{self, available, running_and_ready};
pub use turtles_controller::workload::{
    go_json, parse_rfc3339, revision_template, sort_revisions, UpdateRevision, HASH_LABEL,
};
use turtles_controller::{json, meta, Value};

/// `statefulset.kubernetes.io/pod-name`.
pub const POD_NAME_LABEL: &str = "statefulset.kubernetes.io/pod-name";
/// `apps.kubernetes.io/pod-index`.
pub const POD_INDEX_LABEL: &str = "apps.kubernetes.io/pod-index";
/// `controller-revision-hash`: the name of the revision a Pod was made from.
pub const REVISION_LABEL: &str = "controller-revision-hash";

// ---------------------------------------------------------------------------------------------
// Small readers

fn str_at<'a>(v: &'a Value, pointer: &str) -> &'a str {
    v.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

fn int_at(v: &Value, pointer: &str) -> Option<i64> {
    v.pointer(pointer).and_then(Value::as_i64)
}

/// `spec.replicas` (default 1).
pub fn replicas(set: &Value) -> i64 {
    int_at(set, "/spec/replicas").unwrap_or(1).max(0)
}

/// `spec.ordinals.start` (default 0).
pub fn start_ordinal(set: &Value) -> i64 {
    int_at(set, "/spec/ordinals/start").unwrap_or(0).max(0)
}

fn min_ready_seconds(set: &Value) -> i64 {
    int_at(set, "/spec/minReadySeconds").unwrap_or(0).max(0)
}

/// Whether the set creates and deletes Pods one at a time (`OrderedReady`, the default).
pub fn monotonic(set: &Value) -> bool {
    str_at(set, "/spec/podManagementPolicy") != "Parallel"
}

/// `spec.updateStrategy.type` (default `RollingUpdate`).
pub fn update_strategy(set: &Value) -> &str {
    match str_at(set, "/spec/updateStrategy/type") {
        "" => "RollingUpdate",
        t => t,
    }
}

/// `spec.updateStrategy.rollingUpdate.partition`, when a `rollingUpdate` is given (kube
/// defaults it to 0 only then).
fn partition(set: &Value) -> Option<i64> {
    let ru = set.pointer("/spec/updateStrategy/rollingUpdate")?;
    if ru.is_null() {
        return None;
    }
    Some(int_at(ru, "/partition").unwrap_or(0).max(0))
}

/// The uid of an object.
pub fn uid(obj: &Value) -> &str {
    str_at(obj, "/metadata/uid")
}

// ---------------------------------------------------------------------------------------------
// Names and ordinals

/// `SET-ORDINAL` (kube's `getPodName`).
pub fn pod_name(set_name: &str, ordinal: i64) -> String {
    format!("{set_name}-{ordinal}")
}

/// The parent name and ordinal of a Pod name (`(.*)-([0-9]+)$`), as kube's
/// `getParentNameAndOrdinal`; `None` when the name has no such suffix.
pub fn parent_and_ordinal(name: &str) -> Option<(&str, i64)> {
    let (parent, digits) = name.rsplit_once('-')?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    // kube parses with strconv.ParseInt(.., 10, 32): a longer number is no ordinal.
    let ordinal: i32 = digits.parse().ok()?;
    Some((parent, i64::from(ordinal)))
}

/// Whether a Pod of this name is the set's: `SET-N`, exactly as the set names its Pods (so not
/// `SET-01`), as kube's `isMemberOf` with `identityMatches`.
pub fn is_member(name: &str, set_name: &str) -> bool {
    parent_and_ordinal(name)
        .is_some_and(|(parent, ordinal)| parent == set_name && name == pod_name(set_name, ordinal))
}

/// `TEMPLATE-SET-ORDINAL` (kube's `getPersistentVolumeClaimName`).
pub fn claim_name(template: &str, set_name: &str, ordinal: i64) -> String {
    format!("{template}-{set_name}-{ordinal}")
}

// ---------------------------------------------------------------------------------------------
// Revisions

/// The controller reference to `set`.
pub fn controller_ref(set: &Value) -> Value {
    workload::controller_ref(set, "apps/v1", "StatefulSet")
}

/// A new ControllerRevision of `set` (kube's `newRevision`).
pub fn new_revision(set: &Value, revision: i64, collision_count: i64) -> Value {
    workload::new_revision(
        set,
        "apps/v1",
        "StatefulSet",
        HASH_LABEL,
        revision,
        collision_count,
    )
}

/// kube's `getStatefulSetRevisions`' choice of the update revision.
pub fn choose_update_revision(
    set: &Value,
    revisions: &[Value],
    collision_count: i64,
) -> UpdateRevision {
    let candidate = new_revision(
        set,
        workload::next_revision_number(revisions),
        collision_count,
    );
    workload::choose_update_revision(candidate, revisions)
}

/// kube's `EqualRevision`.
pub fn equal_revision(a: &Value, b: &Value) -> bool {
    workload::equal_revision(a, b)
}

/// The revisions to delete (kube's `truncateHistory`): the oldest of those no Pod uses and that
/// are neither current nor update, beyond `revisionHistoryLimit` (default 10).
pub fn history_to_delete<'a>(
    set: &Value,
    revisions: &'a [Value],
    pods: &[Value],
    current: &str,
    update: &str,
) -> Vec<&'a Value> {
    let limit = int_at(set, "/spec/revisionHistoryLimit").unwrap_or(10);
    workload::history_to_delete(limit, revisions, |r| {
        let name = str_at(r, "/metadata/name");
        name == current
            || name == update
            || pods
                .iter()
                .any(|p| meta::label(p, REVISION_LABEL) == Some(name))
    })
}

// ---------------------------------------------------------------------------------------------
// Pods and claims

fn claim_templates(set: &Value) -> &[Value] {
    set.pointer("/spec/volumeClaimTemplates")
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

/// The claims of the Pod of `ordinal` (kube's `getPersistentVolumeClaims`), by template name:
/// the template named `TEMPLATE-SET-N`, its labels with the selector's `matchLabels` over them.
pub fn claims(set: &Value, ordinal: i64) -> Vec<(String, Value)> {
    let set_name = str_at(set, "/metadata/name");
    let match_labels = set
        .pointer("/spec/selector/matchLabels")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    claim_templates(set)
        .iter()
        .map(|t| {
            let template_name = str_at(t, "/metadata/name").to_owned();
            let mut claim = t.clone();
            let mut labels = t
                .pointer("/metadata/labels")
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default();
            labels.extend(match_labels.clone());
            let metadata = claim
                .as_object_mut()
                .map(|c| c.entry("metadata").or_insert_with(|| json!({})));
            if let Some(m) = metadata.and_then(Value::as_object_mut) {
                m.insert(
                    "name".into(),
                    json!(claim_name(&template_name, set_name, ordinal)),
                );
                m.insert(
                    "namespace".into(),
                    json!(str_at(set, "/metadata/namespace")),
                );
                m.insert("labels".into(), Value::Object(labels));
                for k in [
                    "resourceVersion",
                    "uid",
                    "creationTimestamp",
                    "generateName",
                ] {
                    m.remove(k);
                }
            }
            if let Some(c) = claim.as_object_mut() {
                c.insert("apiVersion".into(), json!("v1"));
                c.insert("kind".into(), json!("PersistentVolumeClaim"));
                c.remove("status");
            }
            (template_name, claim)
        })
        .collect()
}

/// Sets the claim volumes of `pod` (kube's `updateStorage`): one `persistentVolumeClaim` volume
/// per template, first, replacing any template volume of that name.
fn set_storage(set: &Value, pod: &mut Value, ordinal: i64) {
    let claims = claims(set, ordinal);
    let mut volumes: Vec<Value> = claims
        .iter()
        .map(|(template, claim)| {
            json!({"name": template, "persistentVolumeClaim": {
                "claimName": str_at(claim, "/metadata/name"),
            }})
        })
        .collect();
    let existing = pod
        .pointer("/spec/volumes")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    volumes.extend(existing.into_iter().filter(|v| {
        let name = str_at(v, "/name");
        !claims.iter().any(|(t, _)| t == name)
    }));
    if volumes.is_empty() {
        return;
    }
    if let Some(spec) = pod.get_mut("spec").and_then(Value::as_object_mut) {
        spec.insert("volumes".into(), Value::Array(volumes));
    }
}

/// Whether `pod` has the claim volumes of its set (kube's `storageMatches`).
pub fn storage_matches(set: &Value, pod: &Value, ordinal: i64) -> bool {
    let volumes = pod.pointer("/spec/volumes").and_then(Value::as_array);
    claims(set, ordinal).iter().all(|(template, claim)| {
        volumes.is_some_and(|vs| {
            vs.iter().any(|v| {
                str_at(v, "/name") == template
                    && str_at(v, "/persistentVolumeClaim/claimName")
                        == str_at(claim, "/metadata/name")
            })
        })
    })
}

/// Whether `pod`'s identity is its set's (kube's `identityMatches`).
pub fn identity_matches(set: &Value, pod: &Value) -> bool {
    let name = str_at(pod, "/metadata/name");
    let set_name = str_at(set, "/metadata/name");
    is_member(name, set_name)
        && str_at(pod, "/metadata/namespace") == str_at(set, "/metadata/namespace")
        && meta::label(pod, POD_NAME_LABEL) == Some(name)
}

fn set_identity_labels(pod: &mut Value, name: &str, ordinal: i64) {
    let Some(m) = pod.get_mut("metadata").and_then(Value::as_object_mut) else {
        return;
    };
    let labels = m.entry("labels").or_insert_with(|| json!({}));
    if !labels.is_object() {
        *labels = json!({});
    }
    if let Some(l) = labels.as_object_mut() {
        l.insert(POD_NAME_LABEL.into(), json!(name));
        l.insert(POD_INDEX_LABEL.into(), json!(ordinal.to_string()));
    }
}

/// `pod` with its identity and storage repaired (kube's `updateIdentity` + `updateStorage`):
/// what an update of a Pod that drifted writes.
pub fn repaired(set: &Value, pod: &Value, ordinal: i64) -> Value {
    let mut pod = pod.clone();
    let name = str_at(&pod, "/metadata/name").to_owned();
    set_identity_labels(&mut pod, &name, ordinal);
    set_storage(set, &mut pod, ordinal);
    pod
}

/// The Pod of `ordinal`, from `template` (the revision's), labelled with `revision` (kube's
/// `newStatefulSetPod` with `GetPodFromTemplate`, `initIdentity` and `updateStorage`).
pub fn new_pod(set: &Value, template: &Value, revision: &str, ordinal: i64) -> Value {
    let set_name = str_at(set, "/metadata/name");
    let name = pod_name(set_name, ordinal);
    let mut metadata = Map::new();
    metadata.insert("name".into(), json!(name));
    metadata.insert("generateName".into(), json!(format!("{set_name}-")));
    metadata.insert(
        "namespace".into(),
        json!(str_at(set, "/metadata/namespace")),
    );
    let mut labels = template
        .pointer("/metadata/labels")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    labels.insert(REVISION_LABEL.into(), json!(revision));
    metadata.insert("labels".into(), Value::Object(labels));
    for k in ["annotations", "finalizers"] {
        if let Some(v) = template.pointer(&format!("/metadata/{k}")) {
            if !v.is_null() {
                metadata.insert(k.into(), v.clone());
            }
        }
    }
    metadata.insert("ownerReferences".into(), json!([controller_ref(set)]));
    let mut spec = template.get("spec").cloned().unwrap_or_else(|| json!({}));
    if let Some(s) = spec.as_object_mut() {
        s.insert("hostname".into(), json!(name));
        let service = str_at(set, "/spec/serviceName");
        if !service.is_empty() {
            s.insert("subdomain".into(), json!(service));
        }
    }
    let mut pod = json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": metadata,
        "spec": spec,
    });
    set_identity_labels(&mut pod, &name, ordinal);
    set_storage(set, &mut pod, ordinal);
    pod
}

// ---------------------------------------------------------------------------------------------
// Pod state

fn phase(pod: &Value) -> &str {
    str_at(pod, "/status/phase")
}

fn terminating(pod: &Value) -> bool {
    meta::is_deleting(pod)
}

/// kube's `isUnavailable`: not Running, Ready, alive and available for `minReadySeconds`.
fn unavailable(pod: &Value, min_ready: i64, now: i64) -> bool {
    terminating(pod) || available(pod, min_ready, now).is_err()
}

// ---------------------------------------------------------------------------------------------
// Claims' owners (persistentVolumeClaimRetentionPolicy)

fn retention(set: &Value) -> (bool, bool) {
    let p = |k: &str| {
        str_at(
            set,
            &format!("/spec/persistentVolumeClaimRetentionPolicy/{k}"),
        )
    };
    (p("whenDeleted") == "Delete", p("whenScaled") == "Delete")
}

fn is_ref_to(r: &Value, api_version: &str, kind: &str, name: &str) -> bool {
    r["apiVersion"] == api_version && r["kind"] == kind && r["name"] == name
}

/// The owner references a claim should have (kube's `updateClaimOwnerRefForSetAndPod`), or
/// `None` when they are right as they are or must be left alone (a stale reference, or
/// another controller's claim).
pub fn claim_owners(set: &Value, pod: &Value, claim: &Value, in_range: bool) -> Option<Value> {
    let (when_deleted, when_scaled) = retention(set);
    let set_name = str_at(set, "/metadata/name");
    let pod_name = str_at(pod, "/metadata/name");
    let refs = claim
        .pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let ours = |r: &Value| {
        is_ref_to(r, "apps/v1", "StatefulSet", set_name) || is_ref_to(r, "v1", "Pod", pod_name)
    };
    // A reference to an earlier object of the same name: leave the claim to the collector.
    let stale = refs.iter().any(|r| {
        (is_ref_to(r, "apps/v1", "StatefulSet", set_name) && r["uid"] != uid(set))
            || (is_ref_to(r, "v1", "Pod", pod_name) && !uid(pod).is_empty() && r["uid"] != uid(pod))
    });
    if stale {
        return None;
    }
    let foreign_controller = refs.iter().any(|r| r["controller"] == true && !ours(r));
    let mut want: Vec<Value> = refs.iter().filter(|r| !ours(r)).cloned().collect();
    if !foreign_controller {
        if when_deleted && (in_range || !when_scaled) {
            want.push(controller_ref(set));
        }
        if when_scaled && !in_range && !uid(pod).is_empty() {
            want.push(json!({
                "apiVersion": "v1", "kind": "Pod", "name": pod_name, "uid": uid(pod),
                "controller": true, "blockOwnerDeletion": true,
            }));
        }
    }
    let same = want.len() == refs.len() && want.iter().all(|w| refs.contains(w));
    (!same).then_some(Value::Array(want))
}

// ---------------------------------------------------------------------------------------------
// The sync

/// The most Pods a `Parallel` sync creates; the rest follow a second later.
pub const MAX_CREATES_PER_SYNC: usize = 250;

/// One thing a sync does, in the order returned.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// Create the claims that do not exist yet, then the Pod (kube's `CreateStatefulPod`).
    CreatePod { pod: Value, claims: Vec<Value> },
    /// Create the claims of a Pending Pod that are missing.
    CreateClaims { pod: String, claims: Vec<Value> },
    /// Set a claim's owner references (the retention policy).
    SetClaimOwners { claim: String, owners: Value },
    /// Update a Pod whose identity or storage drifted (kube's `UpdateStatefulPod`).
    UpdatePod { pod: Value },
    /// Delete a Pod (failed, finished, condemned or outdated), for its uid.
    DeletePod { name: String, uid: String },
    /// The Pod cannot be made yet (kube's `FailedCreate`): why.
    Refused { pod: String, why: String },
}

/// What [`plan`] needs: the set, its Pods (controlled by it, parent name the set's), the claims
/// the cache has (by name), the current and update revisions' names and templates, and the
/// time.
pub struct Input<'a> {
    pub set: &'a Value,
    pub pods: &'a [Value],
    pub claims: &'a BTreeMap<String, Value>,
    pub current_revision: &'a str,
    pub current_template: &'a Value,
    pub update_revision: &'a str,
    pub update_template: &'a Value,
    pub now: i64,
}

/// The result of [`plan`]: the actions, the status to write, and when to look again (a Pod
/// waiting out `minReadySeconds`).
#[derive(Debug)]
pub struct Plan {
    pub actions: Vec<Action>,
    pub status: Status,
    pub requeue_after_secs: Option<i64>,
}

/// The counts of `status` (kube's `computeReplicaStatus`).
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Status {
    pub replicas: i64,
    pub ready_replicas: i64,
    pub available_replicas: i64,
    pub current_replicas: i64,
    pub updated_replicas: i64,
    pub current_revision: String,
    pub update_revision: String,
}

impl Status {
    /// The status object, with the observed generation and collision count.
    pub fn to_json(&self, generation: i64, collision_count: i64) -> Value {
        json!({
            "observedGeneration": generation,
            "replicas": self.replicas,
            "readyReplicas": self.ready_replicas,
            "currentReplicas": self.current_replicas,
            "updatedReplicas": self.updated_replicas,
            "currentRevision": self.current_revision,
            "updateRevision": self.update_revision,
            "collisionCount": collision_count,
            "availableReplicas": self.available_replicas,
        })
    }

    /// Whether a stored status differs from this one in what kube compares before writing.
    pub fn differs_from(&self, stored: &Value, generation: i64) -> bool {
        let n = |k: &str| stored[k].as_i64().unwrap_or(0);
        let s = |k: &str| stored[k].as_str().unwrap_or("");
        generation > n("observedGeneration")
            || n("replicas") != self.replicas
            || n("readyReplicas") != self.ready_replicas
            || n("availableReplicas") != self.available_replicas
            || n("currentReplicas") != self.current_replicas
            || n("updatedReplicas") != self.updated_replicas
            || s("currentRevision") != self.current_revision
            || s("updateRevision") != self.update_revision
    }
}

fn status_of(input: &Input, pods: &[&Value]) -> Status {
    let min_ready = min_ready_seconds(input.set);
    let mut st = Status {
        current_revision: input.current_revision.to_owned(),
        update_revision: input.update_revision.to_owned(),
        ..Status::default()
    };
    for pod in pods {
        if phase(pod).is_empty() {
            continue;
        }
        st.replicas += 1;
        if running_and_ready(pod) {
            st.ready_replicas += 1;
            if available(pod, min_ready, input.now).is_ok() {
                st.available_replicas += 1;
            }
        }
        if !terminating(pod) {
            match meta::label(pod, REVISION_LABEL) {
                Some(r) if r == input.current_revision => st.current_replicas += 1,
                _ => {}
            }
            match meta::label(pod, REVISION_LABEL) {
                Some(r) if r == input.update_revision => st.updated_replicas += 1,
                _ => {}
            }
        }
    }
    st
}

/// kube's `completeRollingUpdate`: once every replica is updated and ready, the update
/// revision becomes the current one.
fn complete_rolling_update(set: &Value, st: &mut Status) {
    let want = replicas(set);
    if update_strategy(set) == "RollingUpdate"
        && st.updated_replicas == want
        && st.ready_replicas == want
        && st.replicas == want
    {
        st.current_replicas = st.updated_replicas;
        st.current_revision = st.update_revision.clone();
    }
}

/// One sync of the set (kube's `updateStatefulSet`).
pub fn plan(input: &Input) -> Plan {
    let set = input.set;
    let start = start_ordinal(set);
    let want = replicas(set);
    let min_ready = min_ready_seconds(set);
    let now = input.now;
    let monotonic = monotonic(set);

    // Replicas by index (ordinal - start; absent: missing), and the condemned, highest ordinal
    // first. A map, not a vector of `replicas` slots: `replicas` may be two billion while the
    // Pods are few, and every loop below stops at the first missing replica (or after
    // MAX_CREATES_PER_SYNC of them).
    let mut slots: BTreeMap<i64, &Value> = BTreeMap::new();
    let mut condemned: Vec<(i64, &Value)> = Vec::new();
    for pod in input.pods {
        let Some((_, ordinal)) = parent_and_ordinal(str_at(pod, "/metadata/name")) else {
            continue;
        };
        if (start..start + want).contains(&ordinal) {
            slots.insert(ordinal - start, pod);
        } else {
            condemned.push((ordinal, pod));
        }
    }
    condemned.sort_by_key(|c| std::cmp::Reverse(c.0));
    let counted: Vec<&Value> = slots
        .values()
        .copied()
        .chain(condemned.iter().map(|(_, p)| *p))
        .collect();
    let mut status = status_of(input, &counted);
    let mut actions = Vec::new();
    let mut requeue: Option<i64> = None;
    let mut wait = |secs: i64| requeue = Some(requeue.map_or(secs, |r: i64| r.min(secs)));

    let first_unavailable: Option<&str> = slots
        .values()
        .chain(condemned.iter().rev().map(|(_, p)| p))
        .find(|p| unavailable(p, min_ready, now))
        .map(|p| str_at(p, "/metadata/name"));

    let finish = |mut status: Status, actions: Vec<Action>, requeue: Option<i64>| {
        complete_rolling_update(set, &mut status);
        Plan {
            actions,
            status,
            requeue_after_secs: requeue,
        }
    };
    if meta::is_deleting(set) {
        return finish(status, actions, requeue);
    }

    // The replicas, in ordinal order.
    let mut blocked = false;
    let mut creates = 0;
    for i in 0..want {
        let ordinal = start + i;
        match slots.get(&i) {
            None => {
                // kube's newVersionedStatefulSetPod: below the partition (or below the current
                // replicas, without a rollingUpdate) a new Pod is of the current revision.
                let current = match partition(set) {
                    Some(p) => ordinal < start + p,
                    None => {
                        update_strategy(set) == "RollingUpdate"
                            && ordinal < start + status.current_replicas
                    }
                };
                let (template, revision) = if current {
                    (input.current_template, input.current_revision)
                } else {
                    (input.update_template, input.update_revision)
                };
                let pod = new_pod(set, template, revision, ordinal);
                // kube's PodClaimIsStale and `pvc NAME is being deleted`: this replica waits
                // (in Parallel, only this one), and the set is looked at again shortly, since
                // the claim's own events may reach no set.
                if claim_stale(set, input.claims, &pod, ordinal) {
                    wait(2);
                    if monotonic {
                        blocked = true;
                        break;
                    }
                    continue;
                }
                if let Some(claim) = deleting_claim(set, input.claims, ordinal) {
                    actions.push(Action::Refused {
                        pod: str_at(&pod, "/metadata/name").to_owned(),
                        why: format!("pvc {claim} is being deleted"),
                    });
                    wait(2);
                    if monotonic {
                        blocked = true;
                        break;
                    }
                    continue;
                }
                let claims = missing_claims(set, input.claims, &pod, ordinal);
                actions.push(Action::CreatePod { pod, claims });
                creates += 1;
                if monotonic {
                    blocked = true;
                    break;
                }
                if creates == MAX_CREATES_PER_SYNC {
                    wait(1);
                    blocked = true;
                    break;
                }
            }
            Some(pod) => {
                let name = str_at(pod, "/metadata/name");
                if matches!(phase(pod), "Failed" | "Succeeded") {
                    if !terminating(pod) {
                        actions.push(Action::DeletePod {
                            name: name.to_owned(),
                            uid: uid(pod).to_owned(),
                        });
                    }
                    if monotonic {
                        blocked = true;
                        break;
                    }
                    continue;
                }
                if phase(pod) == "Pending" {
                    let claims = missing_claims(set, input.claims, pod, ordinal);
                    if !claims.is_empty() {
                        actions.push(Action::CreateClaims {
                            pod: name.to_owned(),
                            claims,
                        });
                    }
                }
                if monotonic {
                    if terminating(pod) || !running_and_ready(pod) {
                        blocked = true;
                        break;
                    }
                    if let Err(left) = available(pod, min_ready, now) {
                        wait(left);
                        blocked = true;
                        break;
                    }
                }
                if !identity_matches(set, pod) || !storage_matches(set, pod, ordinal) {
                    actions.push(Action::UpdatePod {
                        pod: repaired(set, pod, ordinal),
                    });
                }
                fix_claims(set, input.claims, pod, ordinal, true, &mut actions);
            }
        }
    }
    if blocked {
        return finish(status, actions, requeue);
    }

    // Scale down: highest ordinal first.
    for (ordinal, pod) in &condemned {
        fix_claims(set, input.claims, pod, *ordinal, false, &mut actions);
    }
    for (_, pod) in &condemned {
        let name = str_at(pod, "/metadata/name");
        if terminating(pod) {
            if monotonic {
                return finish(status, actions, requeue);
            }
            continue;
        }
        if monotonic && unavailable(pod, min_ready, now) && first_unavailable != Some(name) {
            return finish(status, actions, requeue);
        }
        actions.push(Action::DeletePod {
            name: name.to_owned(),
            uid: uid(pod).to_owned(),
        });
        if monotonic {
            return finish(status, actions, requeue);
        }
    }

    // Rolling update: highest ordinal down to the partition, one at a time.
    if update_strategy(set) == "RollingUpdate" {
        let min = partition(set).unwrap_or(0);
        for i in (min.max(0)..want).rev() {
            // A replica missing here is being created (kube's placeholder): unavailable, so the
            // update waits for it.
            let Some(pod) = slots.get(&i).copied() else {
                break;
            };
            if meta::label(pod, REVISION_LABEL) != Some(input.update_revision) && !terminating(pod)
            {
                actions.push(Action::DeletePod {
                    name: str_at(pod, "/metadata/name").to_owned(),
                    uid: uid(pod).to_owned(),
                });
                status.current_replicas -= 1;
                break;
            }
            if unavailable(pod, min_ready, now) {
                if let Err(left) = available(pod, min_ready, now) {
                    if left > 0 {
                        wait(left);
                    }
                }
                break;
            }
        }
    }
    finish(status, actions, requeue)
}

/// kube's `PodClaimIsStale`: with `whenScaled: Delete`, a claim still owned by an earlier Pod of
/// this name waits for the garbage collector before the Pod is made again.
fn claim_stale(set: &Value, cached: &BTreeMap<String, Value>, pod: &Value, ordinal: i64) -> bool {
    if !retention(set).1 {
        return false;
    }
    let pod_name = str_at(pod, "/metadata/name");
    claims(set, ordinal).iter().any(|(_, c)| {
        cached
            .get(str_at(c, "/metadata/name"))
            .and_then(|claim| claim.pointer("/metadata/ownerReferences"))
            .and_then(Value::as_array)
            .is_some_and(|refs| {
                refs.iter()
                    .any(|r| is_ref_to(r, "v1", "Pod", pod_name) && r["uid"] != uid(pod))
            })
    })
}

/// A claim of the Pod of `ordinal` that is being deleted: the Pod waits for it to go.
fn deleting_claim(set: &Value, cached: &BTreeMap<String, Value>, ordinal: i64) -> Option<String> {
    claims(set, ordinal).into_iter().find_map(|(_, c)| {
        let name = str_at(&c, "/metadata/name");
        cached
            .get(name)
            .filter(|claim| meta::is_deleting(claim))
            .map(|_| name.to_owned())
    })
}

/// The claims of the Pod of `ordinal` the cache does not have, with their owners as the
/// retention policy wants them at creation.
fn missing_claims(
    set: &Value,
    cached: &BTreeMap<String, Value>,
    pod: &Value,
    ordinal: i64,
) -> Vec<Value> {
    claims(set, ordinal)
        .into_iter()
        .filter(|(_, c)| !cached.contains_key(str_at(c, "/metadata/name")))
        .map(|(_, mut c)| {
            if let Some(owners) = claim_owners(set, pod, &c, true) {
                if owners.as_array().is_some_and(|a| !a.is_empty()) {
                    c["metadata"]["ownerReferences"] = owners;
                }
            }
            c
        })
        .collect()
}

/// Owner-reference fixes of the existing claims of a Pod.
fn fix_claims(
    set: &Value,
    cached: &BTreeMap<String, Value>,
    pod: &Value,
    ordinal: i64,
    in_range: bool,
    actions: &mut Vec<Action>,
) {
    for (_, c) in claims(set, ordinal) {
        let name = str_at(&c, "/metadata/name");
        let Some(claim) = cached.get(name) else {
            continue;
        };
        if meta::is_deleting(claim) {
            continue;
        }
        if let Some(owners) = claim_owners(set, pod, claim, in_range) {
            actions.push(Action::SetClaimOwners {
                claim: name.to_owned(),
                owners,
            });
        }
    }
}

/// A revision's JSON with a new `.revision` number, for a rollback.
pub fn with_revision_number(revision: &Value, number: i64) -> Value {
    let mut r = revision.clone();
    r["revision"] = json!(number);
    r
}

/// Parses a JSON string; `Value::Null` when it is not JSON.
pub fn parse(bytes: &[u8]) -> Value {
    serde_json::from_slice(bytes).unwrap_or(Value::Null)
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: i64 = 1_800_000_000;

    fn set(extra: Value) -> Value {
        let mut s = json!({
            "apiVersion": "apps/v1", "kind": "StatefulSet",
            "metadata": {"name": "web", "namespace": "ns", "uid": "set-uid", "generation": 1},
            "spec": {
                "replicas": 3,
                "serviceName": "nginx",
                "selector": {"matchLabels": {"app": "web"}},
                "template": {
                    "metadata": {"labels": {"app": "web"}},
                    "spec": {"containers": [{"name": "c", "image": "nginx:1"}]},
                },
                "volumeClaimTemplates": [{
                    "metadata": {"name": "data"},
                    "spec": {"accessModes": ["ReadWriteOnce"],
                             "resources": {"requests": {"storage": "1Gi"}}},
                }],
                "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"partition": 0}},
            },
        });
        merge(&mut s, extra);
        s
    }

    fn merge(into: &mut Value, patch: Value) {
        match (into, patch) {
            (Value::Object(a), Value::Object(b)) => {
                for (k, v) in b {
                    if v.is_null() {
                        a.remove(&k);
                    } else {
                        merge(a.entry(k).or_insert(Value::Null), v);
                    }
                }
            }
            (slot, v) => *slot = v,
        }
    }

    /// A Pod of `set` at `ordinal`, of revision `rev`, in `phase` (Running ones Ready since
    /// `ready_since`).
    fn pod(set: &Value, ordinal: i64, rev: &str, phase: &str) -> Value {
        let template = set["spec"]["template"].clone();
        let mut p = new_pod(set, &template, rev, ordinal);
        p["metadata"]["uid"] = json!(format!("uid-{ordinal}"));
        p["status"] = json!({"phase": phase});
        if phase == "Running" {
            p["status"]["conditions"] = json!([{
                "type": "Ready", "status": "True", "lastTransitionTime": "2020-01-01T00:00:00Z",
            }]);
        }
        p
    }

    fn run(set: &Value, pods: &[Value]) -> Plan {
        run_revs(set, pods, "web-a", "web-a")
    }

    fn run_revs(set: &Value, pods: &[Value], current: &str, update: &str) -> Plan {
        let template = set["spec"]["template"].clone();
        let claims = BTreeMap::new();
        plan(&Input {
            set,
            pods,
            claims: &claims,
            current_revision: current,
            current_template: &template,
            update_revision: update,
            update_template: &template,
            now: NOW,
        })
    }

    fn created(p: &Plan) -> Vec<String> {
        p.actions
            .iter()
            .filter_map(|a| match a {
                Action::CreatePod { pod, .. } => Some(str_at(pod, "/metadata/name").to_owned()),
                _ => None,
            })
            .collect()
    }

    fn deleted(p: &Plan) -> Vec<String> {
        p.actions
            .iter()
            .filter_map(|a| match a {
                Action::DeletePod { name, .. } => Some(name.clone()),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn ordinals_parse_as_kube_parses_them() {
        assert_eq!(parent_and_ordinal("web-0"), Some(("web", 0)));
        assert_eq!(parent_and_ordinal("my-web-12"), Some(("my-web", 12)));
        assert_eq!(parent_and_ordinal("web"), None);
        assert_eq!(parent_and_ordinal("web-"), None);
        assert_eq!(parent_and_ordinal("web-1a"), None);
        assert_eq!(parent_and_ordinal("web-99999999999"), None);
    }

    #[test]
    fn a_pod_has_its_identity_storage_and_owner() {
        let s = set(
            json!({"spec": {"template": {"metadata": {"annotations": {"a": "b"}},
            "spec": {"volumes": [{"name": "data", "emptyDir": {}}, {"name": "x", "emptyDir": {}}]}}}}),
        );
        let p = new_pod(&s, &s["spec"]["template"], "web-abc", 2);
        assert_eq!(p["metadata"]["name"], "web-2");
        assert_eq!(p["metadata"]["generateName"], "web-");
        assert_eq!(
            p["metadata"]["labels"],
            json!({"app": "web",
            "controller-revision-hash": "web-abc",
            "statefulset.kubernetes.io/pod-name": "web-2",
            "apps.kubernetes.io/pod-index": "2"})
        );
        assert_eq!(p["metadata"]["annotations"], json!({"a": "b"}));
        assert_eq!(p["metadata"]["ownerReferences"][0]["uid"], "set-uid");
        assert_eq!(p["metadata"]["ownerReferences"][0]["controller"], true);
        assert_eq!(p["spec"]["hostname"], "web-2");
        assert_eq!(p["spec"]["subdomain"], "nginx");
        assert_eq!(
            p["spec"]["volumes"],
            json!([
                {"name": "data", "persistentVolumeClaim": {"claimName": "data-web-2"}},
                {"name": "x", "emptyDir": {}},
            ])
        );
        assert!(identity_matches(&s, &p) && storage_matches(&s, &p, 2));
        let (_, claim) = &claims(&s, 2)[0];
        assert_eq!(claim["metadata"]["name"], "data-web-2");
        assert_eq!(claim["metadata"]["labels"], json!({"app": "web"}));
        assert_eq!(claim["spec"]["accessModes"], json!(["ReadWriteOnce"]));
        // A Pod whose label drifted is repaired.
        let mut drifted = p.clone();
        drifted["metadata"]["labels"][POD_NAME_LABEL] = json!("other");
        drifted["spec"]["volumes"] = json!([]);
        assert!(!identity_matches(&s, &drifted));
        let fixed = repaired(&s, &drifted, 2);
        assert!(identity_matches(&s, &fixed) && storage_matches(&s, &fixed, 2));
    }

    #[test]
    fn ordered_ready_creates_one_pod_at_a_time_and_waits_for_it() {
        let s = set(json!({}));
        let p = run(&s, &[]);
        assert_eq!(created(&p), ["web-0"]);
        match &p.actions[0] {
            Action::CreatePod { claims, .. } => {
                assert_eq!(claims[0]["metadata"]["name"], "data-web-0")
            }
            a => panic!("{a:?}"),
        }
        // web-0 Pending: nothing more.
        let p = run(&s, &[pod(&s, 0, "web-a", "Pending")]);
        assert!(created(&p).is_empty(), "{:?}", p.actions);
        assert_eq!(p.status.replicas, 1);
        assert_eq!(p.status.ready_replicas, 0);
        // Running and Ready: the next one.
        let p = run(&s, &[pod(&s, 0, "web-a", "Running")]);
        assert_eq!(created(&p), ["web-1"]);
        // A terminating web-0 blocks too.
        let mut going = pod(&s, 0, "web-a", "Running");
        going["metadata"]["deletionTimestamp"] = json!("2020-01-01T00:00:00Z");
        assert!(run(&s, &[going]).actions.is_empty());
    }

    #[test]
    fn parallel_creates_every_missing_pod_at_once() {
        let s = set(json!({"spec": {"podManagementPolicy": "Parallel"}}));
        let p = run(&s, &[pod(&s, 1, "web-a", "Pending")]);
        assert_eq!(created(&p), ["web-0", "web-2"]);
    }

    #[test]
    fn two_billion_replicas_cost_what_the_pods_cost() {
        let s = set(json!({"spec": {"replicas": i32::MAX, "podManagementPolicy": "Parallel"}}));
        let p = run(&s, &[pod(&s, 0, "web-a", "Running")]);
        assert_eq!(created(&p).len(), MAX_CREATES_PER_SYNC);
        assert_eq!(created(&p)[0], "web-1");
        assert_eq!(p.requeue_after_secs, Some(1));
        let ordered = set(json!({"spec": {"replicas": i32::MAX}}));
        assert_eq!(
            created(&run(&ordered, &[pod(&s, 0, "web-a", "Running")])),
            ["web-1"]
        );
        // A rolling update stops at the first replica still to be made.
        let p = run_revs(&s, &[pod(&s, 0, "web-a", "Running")], "web-a", "web-b");
        assert!(deleted(&p).is_empty());
    }

    #[test]
    fn a_claim_being_deleted_or_stale_holds_back_only_its_own_pod() {
        let mut cached = BTreeMap::new();
        cached.insert(
            "data-web-1".to_owned(),
            json!({"metadata": {"name": "data-web-1", "deletionTimestamp": "2020-01-01T00:00:00Z"}}),
        );
        let s = set(json!({}));
        let template = s["spec"]["template"].clone();
        let input = |set: &'static Value, pods: &'static [Value]| Input {
            set,
            pods,
            claims: Box::leak(Box::new(cached.clone())),
            current_revision: "web-a",
            current_template: Box::leak(Box::new(template.clone())),
            update_revision: "web-a",
            update_template: Box::leak(Box::new(template.clone())),
            now: NOW,
        };
        let ordered: &'static Value = Box::leak(Box::new(s.clone()));
        let pods: &'static [Value] =
            Box::leak(vec![pod(&s, 0, "web-a", "Running")].into_boxed_slice());
        let p = plan(&input(ordered, pods));
        assert!(created(&p).is_empty());
        assert!(p
            .actions
            .iter()
            .any(|a| matches!(a, Action::Refused { pod, why }
            if pod == "web-1" && why == "pvc data-web-1 is being deleted")));
        assert_eq!(p.requeue_after_secs, Some(2));
        let parallel: &'static Value = Box::leak(Box::new(set(
            json!({"spec": {"podManagementPolicy": "Parallel"}}),
        )));
        let p = plan(&input(parallel, &[]));
        assert_eq!(created(&p), ["web-0", "web-2"]);
    }

    #[test]
    fn only_pods_named_as_the_set_names_them_are_its() {
        assert!(is_member("web-1", "web"));
        assert!(!is_member("web-01", "web"));
        assert!(!is_member("web-1", "we"));
        assert!(!is_member("webx-1", "web"));
    }

    #[test]
    fn failed_pods_are_deleted_to_be_made_again() {
        let s = set(json!({}));
        let p = run(&s, &[pod(&s, 0, "web-a", "Failed")]);
        assert_eq!(deleted(&p), ["web-0"]);
        assert!(created(&p).is_empty());
    }

    #[test]
    fn scale_down_goes_from_the_highest_ordinal_one_at_a_time() {
        let s = set(json!({"spec": {"replicas": 1}}));
        let pods: Vec<Value> = (0..3).map(|i| pod(&s, i, "web-a", "Running")).collect();
        let p = run(&s, &pods);
        assert_eq!(deleted(&p), ["web-2"]);
        // Waiting while web-2 terminates.
        let mut going = pods.clone();
        going[2]["metadata"]["deletionTimestamp"] = json!("2020-01-01T00:00:00Z");
        assert!(deleted(&run(&s, &going)).is_empty());
        // An unready replica in range blocks the scale-down.
        let mut unready = pods.clone();
        unready[0]["status"]["conditions"][0]["status"] = json!("False");
        assert!(deleted(&run(&s, &unready)).is_empty());
        // Parallel deletes them all.
        let par = set(json!({"spec": {"replicas": 1, "podManagementPolicy": "Parallel"}}));
        assert_eq!(deleted(&run(&par, &pods)), ["web-2", "web-1"]);
        // Terminating ones still count in status.replicas.
        assert_eq!(run(&s, &going).status.replicas, 3);
    }

    #[test]
    fn a_rolling_update_replaces_from_the_highest_ordinal_down_to_the_partition() {
        let s = set(json!({}));
        let old: Vec<Value> = (0..3).map(|i| pod(&s, i, "web-a", "Running")).collect();
        let p = run_revs(&s, &old, "web-a", "web-b");
        assert_eq!(deleted(&p), ["web-2"]);
        assert_eq!(p.status.current_replicas, 2);
        assert_eq!(p.status.updated_replicas, 0);
        // web-2 recreated at the new revision but not ready yet: wait.
        let mut mid = old.clone();
        mid[2] = pod(&s, 2, "web-b", "Pending");
        let p = run_revs(&s, &mid, "web-a", "web-b");
        assert!(
            deleted(&p).is_empty() && created(&p).is_empty(),
            "{:?}",
            p.actions
        );
        // Ready: web-1 next.
        mid[2] = pod(&s, 2, "web-b", "Running");
        assert_eq!(deleted(&run_revs(&s, &mid, "web-a", "web-b")), ["web-1"]);
        // With partition 2, only web-2 is updated.
        let part = set(json!({"spec": {"updateStrategy": {"rollingUpdate": {"partition": 2}}}}));
        assert!(deleted(&run_revs(&part, &mid, "web-a", "web-b")).is_empty());
        // OnDelete: never.
        let ondelete =
            set(json!({"spec": {"updateStrategy": {"type": "OnDelete", "rollingUpdate": null}}}));
        assert!(deleted(&run_revs(&ondelete, &old, "web-a", "web-b")).is_empty());
        // All updated and ready: the update revision becomes the current one.
        let new: Vec<Value> = (0..3).map(|i| pod(&s, i, "web-b", "Running")).collect();
        let p = run_revs(&s, &new, "web-a", "web-b");
        assert_eq!(p.status.current_revision, "web-b");
        assert_eq!(p.status.current_replicas, 3);
    }

    #[test]
    fn new_pods_below_the_partition_are_of_the_current_revision() {
        let s = set(
            json!({"spec": {"updateStrategy": {"rollingUpdate": {"partition": 2}},
            "podManagementPolicy": "Parallel"}}),
        );
        let p = run_revs(&s, &[], "web-a", "web-b");
        let revs: Vec<String> = p
            .actions
            .iter()
            .filter_map(|a| match a {
                Action::CreatePod { pod, .. } => {
                    meta::label(pod, REVISION_LABEL).map(str::to_owned)
                }
                _ => None,
            })
            .collect();
        assert_eq!(revs, ["web-a", "web-a", "web-b"]);
    }

    #[test]
    fn min_ready_seconds_holds_the_next_pod_and_the_available_count() {
        let s = set(json!({"spec": {"minReadySeconds": 30}}));
        let mut p0 = pod(&s, 0, "web-a", "Running");
        p0["status"]["conditions"][0]["lastTransitionTime"] = json!("2027-01-15T08:00:00Z");
        let now = parse_rfc3339("2027-01-15T08:00:10Z").unwrap();
        let template = s["spec"]["template"].clone();
        let claims = BTreeMap::new();
        let input = |pods: &'static [Value]| Input {
            set: &s,
            pods,
            claims: &claims,
            current_revision: "web-a",
            current_template: &template,
            update_revision: "web-a",
            update_template: &template,
            now,
        };
        let pods: &'static [Value] = Box::leak(vec![p0].into_boxed_slice());
        let p = plan(&input(pods));
        assert!(p.actions.is_empty());
        assert_eq!(p.requeue_after_secs, Some(21));
        assert_eq!(
            (p.status.ready_replicas, p.status.available_replicas),
            (1, 0)
        );
    }

    #[test]
    fn the_update_revision_is_the_newest_an_older_one_bumped_or_new() {
        let s = set(json!({}));
        let r1 = new_revision(&s, 1, 0);
        let other = set(json!({"spec": {"template": {"metadata": {"labels": {"v": "2"}}}}}));
        let r2 = new_revision(&other, 2, 0);
        assert_eq!(
            choose_update_revision(&s, std::slice::from_ref(&r1), 0),
            UpdateRevision::Newest(0)
        );
        assert_eq!(
            choose_update_revision(&s, &[r1.clone(), r2.clone()], 0),
            UpdateRevision::Bump(0, 3)
        );
        match choose_update_revision(&other, std::slice::from_ref(&r1), 0) {
            UpdateRevision::Create(c) => {
                assert_eq!(c["revision"], 2);
                assert_eq!(c["metadata"]["labels"]["v"], "2");
                assert_eq!(revision_template(&c), other["spec"]["template"]);
            }
            u => panic!("{u:?}"),
        }
        // History: revisions no Pod uses beyond the limit, oldest first.
        let lim = set(json!({"spec": {"revisionHistoryLimit": 1}}));
        let revs: Vec<Value> = (1..=4)
            .map(|i| {
                let mut r = new_revision(&lim, i, 0);
                r["metadata"]["name"] = json!(format!("web-{i}"));
                r
            })
            .collect();
        let pods = [pod(&lim, 0, "web-2", "Running")];
        let gone: Vec<&str> = history_to_delete(&lim, &revs, &pods, "web-4", "web-4")
            .into_iter()
            .map(|r| str_at(r, "/metadata/name"))
            .collect();
        assert_eq!(gone, ["web-1"]);
    }

    #[test]
    fn claims_are_owned_as_the_retention_policy_says() {
        let policy = |deleted: &str, scaled: &str| {
            set(json!({"spec": {"persistentVolumeClaimRetentionPolicy":
                {"whenDeleted": deleted, "whenScaled": scaled}}}))
        };
        let claim = json!({"metadata": {"name": "data-web-0"}});
        let kinds = |owners: Option<Value>| -> Vec<String> {
            owners
                .and_then(|o| o.as_array().cloned())
                .unwrap_or_default()
                .iter()
                .map(|r| r["kind"].as_str().unwrap_or_default().to_owned())
                .collect()
        };
        let s = policy("Retain", "Retain");
        assert_eq!(
            claim_owners(&s, &pod(&s, 0, "r", "Running"), &claim, true),
            None
        );
        let s = policy("Delete", "Retain");
        let p = pod(&s, 0, "r", "Running");
        assert_eq!(kinds(claim_owners(&s, &p, &claim, true)), ["StatefulSet"]);
        assert_eq!(kinds(claim_owners(&s, &p, &claim, false)), ["StatefulSet"]);
        let s = policy("Retain", "Delete");
        assert_eq!(claim_owners(&s, &p, &claim, true), None);
        assert_eq!(kinds(claim_owners(&s, &p, &claim, false)), ["Pod"]);
        let s = policy("Delete", "Delete");
        let owned = json!({"metadata": {"name": "data-web-0",
            "ownerReferences": [controller_ref(&s)]}});
        assert_eq!(claim_owners(&s, &p, &owned, true), None);
        assert_eq!(kinds(claim_owners(&s, &p, &owned, false)), ["Pod"]);
        // Another controller's claim is left without ours.
        let foreign = json!({"metadata": {"name": "data-web-0", "ownerReferences": [
            {"apiVersion": "v1", "kind": "Other", "name": "x", "uid": "u", "controller": true}]}});
        assert_eq!(claim_owners(&s, &p, &foreign, true), None);
        // A reference to an earlier Pod of the name: left to the garbage collector.
        let stale_ref = json!({"metadata": {"name": "data-web-0", "ownerReferences": [
            {"apiVersion": "v1", "kind": "Pod", "name": "web-0", "uid": "old", "controller": true}]}});
        assert_eq!(claim_owners(&s, &p, &stale_ref, false), None);
        // ... and holds back a new web-0.
        let mut cached = BTreeMap::new();
        cached.insert("data-web-0".to_owned(), stale_ref);
        let fresh = new_pod(&s, &s["spec"]["template"], "r", 0);
        assert!(claim_stale(&s, &cached, &fresh, 0));
        // The claim of the Pod that exists now is not stale.
        let mut current = fresh.clone();
        current["metadata"]["uid"] = json!("old");
        assert!(!claim_stale(&s, &cached, &current, 0));
        current["metadata"]["uid"] = json!("new");
        assert!(claim_stale(&s, &cached, &current, 0));
    }
}
