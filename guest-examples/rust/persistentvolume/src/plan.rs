//! The PersistentVolume controller's decisions, as pure functions of the claim, the volumes and
//! the classes (kube's `pv_controller.go`, `index.go` and `component-helpers/storage/volume`).

use turtles_controller::quantity::milli_value;
use turtles_controller::{json, meta, Value};

pub const ANN_BIND_COMPLETED: &str = "pv.kubernetes.io/bind-completed";
pub const ANN_BOUND_BY_CONTROLLER: &str = "pv.kubernetes.io/bound-by-controller";
pub const ANN_SELECTED_NODE: &str = "volume.kubernetes.io/selected-node";
pub const ANN_STORAGE_PROVISIONER: &str = "volume.kubernetes.io/storage-provisioner";
pub const ANN_BETA_STORAGE_PROVISIONER: &str = "volume.beta.kubernetes.io/storage-provisioner";
pub const ANN_DYNAMICALLY_PROVISIONED: &str = "pv.kubernetes.io/provisioned-by";
pub const ANN_BETA_STORAGE_CLASS: &str = "volume.beta.kubernetes.io/storage-class";
pub const DEFAULT_CLASS_ANNOTATIONS: [&str; 2] = [
    "storageclass.kubernetes.io/is-default-class",
    "storageclass.beta.kubernetes.io/is-default-class",
];

pub fn str_at<'a>(v: &'a Value, pointer: &str) -> &'a str {
    v.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

pub fn has_annotation(obj: &Value, key: &str) -> bool {
    obj.pointer("/metadata/annotations")
        .and_then(|a| a.get(key))
        .is_some()
}

/// kube's `GetPersistentVolumeClaimClass`: the beta annotation first, then the field.
pub fn claim_class(claim: &Value) -> &str {
    if let Some(c) = meta::annotation(claim, ANN_BETA_STORAGE_CLASS) {
        return c;
    }
    str_at(claim, "/spec/storageClassName")
}

/// kube's `GetPersistentVolumeClass`.
pub fn volume_class(volume: &Value) -> &str {
    if let Some(c) = meta::annotation(volume, ANN_BETA_STORAGE_CLASS) {
        return c;
    }
    str_at(volume, "/spec/storageClassName")
}

/// Whether a claim names no class at all (neither the field nor the beta annotation): the
/// retroactive default class is for these.
pub fn claim_class_unset(claim: &Value) -> bool {
    claim
        .pointer("/spec/storageClassName")
        .is_none_or(Value::is_null)
        && !has_annotation(claim, ANN_BETA_STORAGE_CLASS)
}

/// kube's `GetDefaultClass`: the newest class marked default, then the first by name.
pub fn default_class(classes: &[Value]) -> Option<&Value> {
    classes
        .iter()
        .filter(|c| {
            DEFAULT_CLASS_ANNOTATIONS
                .iter()
                .any(|a| meta::annotation(c, a) == Some("true"))
        })
        .min_by(|a, b| {
            str_at(b, "/metadata/creationTimestamp")
                .cmp(str_at(a, "/metadata/creationTimestamp"))
                .then_with(|| meta::name(a).cmp(&meta::name(b)))
        })
}

/// kube's `IsVolumeBoundToClaim`: the claimRef names the claim (and its uid, when it has one).
pub fn bound_to_claim(volume: &Value, claim: &Value) -> bool {
    let Some(r) = volume.pointer("/spec/claimRef").filter(|r| r.is_object()) else {
        return false;
    };
    if str_at(r, "/name") != meta::name(claim).unwrap_or("")
        || str_at(r, "/namespace") != meta::namespace(claim).unwrap_or("")
    {
        return false;
    }
    let uid = str_at(r, "/uid");
    uid.is_empty() || uid == str_at(claim, "/metadata/uid")
}

pub fn claim_ref(volume: &Value) -> Option<&Value> {
    volume.pointer("/spec/claimRef").filter(|r| r.is_object())
}

fn storage(v: &Value, pointer: &str) -> i128 {
    milli_value(str_at(v, pointer)).unwrap_or(0)
}

pub fn requested(claim: &Value) -> i128 {
    storage(claim, "/spec/resources/requests/storage")
}

pub fn capacity(volume: &Value) -> i128 {
    storage(volume, "/spec/capacity/storage")
}

fn modes(v: &Value, pointer: &str) -> Vec<String> {
    v.pointer(pointer)
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

/// kube's `CheckAccessModes`: the volume offers every mode the claim asks for.
pub fn access_modes_fit(claim: &Value, volume: &Value) -> bool {
    let offered = modes(volume, "/spec/accessModes");
    modes(claim, "/spec/accessModes")
        .iter()
        .all(|m| offered.contains(m))
}

/// kube's `CheckVolumeModeMismatches` (an unset mode is `Filesystem`).
pub fn volume_mode_mismatch(claim: &Value, volume: &Value) -> bool {
    fn mode(v: &Value) -> &str {
        match str_at(v, "/spec/volumeMode") {
            "" => "Filesystem",
            m => m,
        }
    }
    mode(claim) != mode(volume)
}

/// kube's `checkVolumeSatisfyClaim`, for a claim that names its volume: why they do not fit.
pub fn satisfies(volume: &Value, claim: &Value) -> Result<(), String> {
    if meta::is_deleting(volume) {
        return Err(format!(
            "the volume is marked for deletion \"{}\"",
            meta::name(volume).unwrap_or("")
        ));
    }
    if capacity(volume) < requested(claim) {
        return Err("requested PV is too small".into());
    }
    if volume_class(volume) != claim_class(claim) {
        return Err("storageClassName does not match".into());
    }
    if volume_mode_mismatch(claim, volume) {
        return Err("incompatible volumeMode".into());
    }
    if !access_modes_fit(claim, volume) {
        return Err("incompatible accessMode".into());
    }
    Ok(())
}

/// kube's `findBestMatchForClaim` (`index.findByClaim` over `FindMatchingVolume`): the volumes
/// are looked at by access-mode sets, the sets with the fewest modes first; in the first set
/// with a fit, a volume pre-bound to the claim wins, else the smallest Available one of the
/// claim's class, labels matching its selector. With `delay_binding` (WaitForFirstConsumer)
/// only a pre-bound volume is taken: the scheduler binds the others.
pub fn best_match<'a>(
    claim: &Value,
    volumes: &'a [Value],
    delay_binding: bool,
) -> Option<&'a Value> {
    let wanted = modes(claim, "/spec/accessModes");
    // The distinct mode sets that offer every wanted mode, fewest modes first.
    let mut sets: Vec<Vec<String>> = Vec::new();
    for v in volumes {
        let mut m = modes(v, "/spec/accessModes");
        m.sort();
        m.dedup();
        if wanted.iter().all(|w| m.contains(w)) && !sets.contains(&m) {
            sets.push(m);
        }
    }
    sets.sort_by(|a, b| a.len().cmp(&b.len()).then_with(|| a.cmp(b)));
    let requested = requested(claim);
    let class = claim_class(claim);
    let selector = claim.pointer("/spec/selector").filter(|s| s.is_object());
    for set in &sets {
        let mut smallest: Option<&Value> = None;
        for volume in volumes {
            let mut m = modes(volume, "/spec/accessModes");
            m.sort();
            m.dedup();
            if &m != set {
                continue;
            }
            if claim_ref(volume).is_some() && !bound_to_claim(volume, claim) {
                continue;
            }
            if capacity(volume) < requested
                || volume_mode_mismatch(claim, volume)
                || meta::is_deleting(volume)
            {
                continue;
            }
            if bound_to_claim(volume, claim) {
                return Some(volume);
            }
            if delay_binding {
                continue;
            }
            if str_at(volume, "/status/phase") != "Available" {
                continue;
            }
            if let Some(sel) = selector {
                let labels = volume
                    .pointer("/metadata/labels")
                    .cloned()
                    .unwrap_or_else(|| json!({}));
                if !meta::selector_matches(sel, &labels) {
                    continue;
                }
            }
            if volume_class(volume) != class {
                continue;
            }
            if smallest.is_none_or(|s| capacity(s) > capacity(volume)) {
                smallest = Some(volume);
            }
        }
        if smallest.is_some() {
            return smallest;
        }
    }
    None
}

/// kube's `GetBindVolumeToClaim`: the volume with its claimRef to `claim` (and
/// `bound-by-controller` when this controller made the link), or `None` if it already is.
pub fn volume_bound_to(volume: &Value, claim: &Value) -> Option<Value> {
    let set_by_controller = !bound_to_claim(volume, claim);
    let mut v = volume.clone();
    let mut dirty = false;
    let r = claim_ref(volume);
    let same = r.is_some_and(|r| {
        str_at(r, "/name") == meta::name(claim).unwrap_or("")
            && str_at(r, "/namespace") == meta::namespace(claim).unwrap_or("")
            && str_at(r, "/uid") == str_at(claim, "/metadata/uid")
    });
    if !same {
        v["spec"]["claimRef"] = json!({
            "kind": "PersistentVolumeClaim",
            "namespace": meta::namespace(claim).unwrap_or(""),
            "name": meta::name(claim).unwrap_or(""),
            "uid": str_at(claim, "/metadata/uid"),
            "apiVersion": "v1",
            "resourceVersion": str_at(claim, "/metadata/resourceVersion"),
        });
        dirty = true;
    }
    if set_by_controller && !has_annotation(&v, ANN_BOUND_BY_CONTROLLER) {
        set_annotation(&mut v, ANN_BOUND_BY_CONTROLLER, "yes");
        dirty = true;
    }
    dirty.then_some(v)
}

/// kube's `getBindClaimToVolume`: the claim naming the volume, `bind-completed` (and
/// `bound-by-controller` when this controller chose the volume), or `None` if it already is.
pub fn claim_bound_to(claim: &Value, volume: &Value) -> Option<Value> {
    let name = meta::name(volume).unwrap_or("");
    let mut c = claim.clone();
    let mut dirty = false;
    if str_at(claim, "/spec/volumeName") != name {
        c["spec"]["volumeName"] = json!(name);
        if !has_annotation(&c, ANN_BOUND_BY_CONTROLLER) {
            set_annotation(&mut c, ANN_BOUND_BY_CONTROLLER, "yes");
        }
        dirty = true;
    }
    if !has_annotation(&c, ANN_BIND_COMPLETED) {
        set_annotation(&mut c, ANN_BIND_COMPLETED, "yes");
        dirty = true;
    }
    dirty.then_some(c)
}

/// kube's `updateClaimStatus`: the status for `phase` (capacity and access modes from the
/// volume, or none without one), or `None` when nothing changes.
pub fn claim_status(claim: &Value, phase: &str, volume: Option<&Value>) -> Option<Value> {
    let mut status = claim.get("status").cloned().unwrap_or_else(|| json!({}));
    if !status.is_object() {
        status = json!({});
    }
    let mut dirty = false;
    let phase_changes = str_at(claim, "/status/phase") != phase;
    if phase_changes {
        status["phase"] = json!(phase);
        dirty = true;
    }
    let s = status.as_object_mut()?;
    match volume {
        None => {
            for f in ["accessModes", "capacity"] {
                if s.remove(f).is_some() {
                    dirty = true;
                }
            }
        }
        Some(volume) => {
            let modes = volume
                .pointer("/spec/accessModes")
                .cloned()
                .unwrap_or(Value::Null);
            if s.get("accessModes").unwrap_or(&Value::Null) != &modes {
                if modes.is_null() {
                    s.remove("accessModes");
                } else {
                    s.insert("accessModes".into(), modes);
                }
                dirty = true;
            }
            // The capacity only as the claim becomes Bound (a difference afterwards can be on
            // purpose: a filesystem smaller than its block device).
            if phase_changes {
                let have = claim
                    .pointer("/status/capacity/storage")
                    .and_then(Value::as_str);
                let cap = volume.pointer("/spec/capacity").cloned();
                let differs = match (
                    have,
                    cap.as_ref()
                        .and_then(|c| c.get("storage"))
                        .and_then(Value::as_str),
                ) {
                    (Some(h), Some(v)) => milli_value(h) != milli_value(v),
                    _ => true,
                };
                if differs {
                    if let Some(c) = cap {
                        s.insert("capacity".into(), c);
                        dirty = true;
                    }
                }
            }
        }
    }
    dirty.then_some(status)
}

/// kube's `unbindVolume`: a link this controller made goes; a user's pre-binding keeps its name
/// and loses only the uid.
pub fn unbound_volume(volume: &Value) -> Value {
    let mut v = volume.clone();
    if has_annotation(volume, ANN_BOUND_BY_CONTROLLER) {
        if let Some(spec) = v.get_mut("spec").and_then(Value::as_object_mut) {
            spec.remove("claimRef");
        }
        if let Some(a) = v
            .pointer_mut("/metadata/annotations")
            .and_then(Value::as_object_mut)
        {
            a.remove(ANN_BOUND_BY_CONTROLLER);
        }
    } else if let Some(r) = v
        .pointer_mut("/spec/claimRef")
        .and_then(Value::as_object_mut)
    {
        r.insert("uid".into(), json!(""));
    }
    v
}

pub fn set_annotation(obj: &mut Value, key: &str, value: &str) {
    if !obj["metadata"].is_object() {
        obj["metadata"] = json!({});
    }
    let m = &mut obj["metadata"];
    if !m["annotations"].is_object() {
        m["annotations"] = json!({});
    }
    m["annotations"][key] = json!(value);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pv(name: &str, size: &str, modes: &[&str], class: &str, phase: &str) -> Value {
        json!({"metadata": {"name": name, "labels": {"tier": "fast"}},
            "spec": {"capacity": {"storage": size}, "accessModes": modes, "storageClassName": class},
            "status": {"phase": phase}})
    }

    fn pvc(size: &str, modes: &[&str], class: &str) -> Value {
        json!({"metadata": {"name": "data", "namespace": "ns", "uid": "c-1", "resourceVersion": "5"},
            "spec": {"accessModes": modes, "storageClassName": class,
                "resources": {"requests": {"storage": size}}}})
    }

    #[test]
    fn the_smallest_fitting_available_volume_of_the_class_wins() {
        let claim = pvc("1Gi", &["ReadWriteOnce"], "");
        let volumes = vec![
            pv("big", "10Gi", &["ReadWriteOnce"], "", "Available"),
            pv("small", "2Gi", &["ReadWriteOnce"], "", "Available"),
            pv("tiny", "500Mi", &["ReadWriteOnce"], "", "Available"),
            pv(
                "other-class",
                "1Gi",
                &["ReadWriteOnce"],
                "fast",
                "Available",
            ),
            pv("released", "1Gi", &["ReadWriteOnce"], "", "Released"),
        ];
        let m = best_match(&claim, &volumes, false).unwrap();
        assert_eq!(meta::name(m), Some("small"));
        // Waiting for the first consumer: not bound by this controller.
        assert!(best_match(&claim, &volumes, true).is_none());
        // A class the claim asks for.
        let fast = pvc("1Gi", &["ReadWriteOnce"], "fast");
        assert_eq!(
            meta::name(best_match(&fast, &volumes, false).unwrap()),
            Some("other-class")
        );
    }

    #[test]
    fn fewer_access_modes_win_over_size_and_prebinding_wins_over_all() {
        let claim = pvc("1Gi", &["ReadWriteOnce"], "");
        let volumes = vec![
            pv(
                "rwo-rwx-small",
                "1Gi",
                &["ReadWriteOnce", "ReadWriteMany"],
                "",
                "Available",
            ),
            pv("rwo-big", "5Gi", &["ReadWriteOnce"], "", "Available"),
            pv("rox", "1Gi", &["ReadOnlyMany"], "", "Available"),
        ];
        assert_eq!(
            meta::name(best_match(&claim, &volumes, false).unwrap()),
            Some("rwo-big")
        );
        let mut pre = pv("pre", "20Gi", &["ReadWriteOnce"], "other", "Available");
        pre["spec"]["claimRef"] = json!({"namespace": "ns", "name": "data"});
        let mut with_pre = volumes.clone();
        with_pre.push(pre);
        assert_eq!(
            meta::name(best_match(&claim, &with_pre, true).unwrap()),
            Some("pre")
        );
        // Claimed by another claim: never.
        let mut taken = pv("taken", "1Gi", &["ReadWriteOnce"], "", "Available");
        taken["spec"]["claimRef"] = json!({"namespace": "ns", "name": "other"});
        assert!(best_match(&claim, &[taken], false).is_none());
    }

    #[test]
    fn selectors_and_volume_modes_filter() {
        let mut claim = pvc("1Gi", &["ReadWriteOnce"], "");
        claim["spec"]["selector"] = json!({"matchLabels": {"tier": "slow"}});
        let volumes = vec![pv("fast", "1Gi", &["ReadWriteOnce"], "", "Available")];
        assert!(best_match(&claim, &volumes, false).is_none());
        let mut block = pvc("1Gi", &["ReadWriteOnce"], "");
        block["spec"]["volumeMode"] = json!("Block");
        assert!(best_match(&block, &volumes, false).is_none());
        assert_eq!(
            satisfies(&volumes[0], &block),
            Err("incompatible volumeMode".into())
        );
        let big = pvc("2Gi", &["ReadWriteOnce"], "");
        assert_eq!(
            satisfies(&volumes[0], &big),
            Err("requested PV is too small".into())
        );
    }

    #[test]
    fn binding_sets_the_links_and_annotations_once() {
        let claim = pvc("1Gi", &["ReadWriteOnce"], "");
        let volume = pv("v", "2Gi", &["ReadWriteOnce"], "", "Available");
        let v = volume_bound_to(&volume, &claim).unwrap();
        assert_eq!(v["spec"]["claimRef"]["uid"], "c-1");
        assert_eq!(v["metadata"]["annotations"][ANN_BOUND_BY_CONTROLLER], "yes");
        assert!(volume_bound_to(&v, &claim).is_none());
        let c = claim_bound_to(&claim, &v).unwrap();
        assert_eq!(c["spec"]["volumeName"], "v");
        assert_eq!(c["metadata"]["annotations"][ANN_BIND_COMPLETED], "yes");
        assert_eq!(c["metadata"]["annotations"][ANN_BOUND_BY_CONTROLLER], "yes");
        assert!(claim_bound_to(&c, &v).is_none());
        // A volume pre-bound by its provisioner (claimRef with the uid): no bound-by-controller.
        let mut pre = volume.clone();
        pre["spec"]["claimRef"] = json!({"namespace": "ns", "name": "data", "uid": "c-1"});
        assert!(volume_bound_to(&pre, &claim).is_none());
        let status = claim_status(&c, "Bound", Some(&v)).unwrap();
        assert_eq!(
            status,
            json!({"phase": "Bound", "accessModes": ["ReadWriteOnce"], "capacity": {"storage": "2Gi"}})
        );
        let mut bound = c.clone();
        bound["status"] = status;
        assert!(claim_status(&bound, "Bound", Some(&v)).is_none());
        assert_eq!(
            claim_status(&bound, "Lost", None),
            Some(json!({"phase": "Lost"}))
        );
    }

    #[test]
    fn unbinding_keeps_a_users_prebinding() {
        let mut v = pv("v", "1Gi", &["ReadWriteOnce"], "", "Bound");
        v["spec"]["claimRef"] = json!({"namespace": "ns", "name": "data", "uid": "c-1"});
        let user = unbound_volume(&v);
        assert_eq!(
            user["spec"]["claimRef"],
            json!({"namespace": "ns", "name": "data", "uid": ""})
        );
        set_annotation(&mut v, ANN_BOUND_BY_CONTROLLER, "yes");
        let ours = unbound_volume(&v);
        assert!(ours["spec"].get("claimRef").is_none());
        assert!(!has_annotation(&ours, ANN_BOUND_BY_CONTROLLER));
    }

    #[test]
    fn the_newest_default_class_is_the_default() {
        let classes = vec![
            json!({"metadata": {"name": "a", "creationTimestamp": "2026-01-01T00:00:00Z",
                "annotations": {DEFAULT_CLASS_ANNOTATIONS[0]: "true"}}}),
            json!({"metadata": {"name": "b", "creationTimestamp": "2026-02-01T00:00:00Z",
                "annotations": {DEFAULT_CLASS_ANNOTATIONS[1]: "true"}}}),
            json!({"metadata": {"name": "c", "creationTimestamp": "2026-03-01T00:00:00Z"}}),
        ];
        assert_eq!(meta::name(default_class(&classes).unwrap()), Some("b"));
        assert!(claim_class_unset(&json!({"spec": {}})));
        assert!(!claim_class_unset(
            &json!({"spec": {"storageClassName": ""}})
        ));
    }
}
