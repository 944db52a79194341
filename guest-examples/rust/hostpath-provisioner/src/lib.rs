//! `hostpath-provisioner`: a dynamic volume provisioner in the shape of kube's external
//! provisioners (`sig-storage-lib-external-provisioner`) and of the local-path provisioner that
//! kind ships. It provisions for StorageClasses whose `provisioner` is `turtles.dev/host-path`:
//!
//! - When the PersistentVolume controller (the `persistentvolume` example) finds no volume for a
//!   claim of such a class, it annotates the claim `volume.kubernetes.io/storage-provisioner:
//!   turtles.dev/host-path`. This controller then creates the PersistentVolume `pvc-UID`:
//!   pre-bound to the claim (`claimRef`), the claim's size, access modes and volume mode, the
//!   class's reclaim policy and mount options, and a `hostPath` directory. A class with
//!   `volumeBindingMode: WaitForFirstConsumer` is provisioned only once the scheduler (the fake
//!   kubelet) has picked a node for the claim's first Pod (`volume.kubernetes.io/selected-node`);
//!   the volume is then pinned to that node by a required node affinity on
//!   `kubernetes.io/hostname`. The binder binds the two.
//! - A volume it provisioned whose claim is gone (phase `Released`) with reclaim policy `Delete`
//!   is deleted.
//! - At start, when the cluster has no default StorageClass, it creates the default class
//!   `standard` (`WaitForFirstConsumer`, `Delete`), as kind does, so that charts whose claims
//!   name no class get volumes.
//!
//! Nothing is written to any disk: the volume is the API object (the fake kubelet mounts
//! nothing).
//!
//! Watches: claims (the primary), and volumes and StorageClasses (cluster-scoped, key
//! `("", name)`).

use std::sync::atomic::{AtomicBool, Ordering};

use turtles_controller::workload;
use turtles_controller::{
    api, events, export, json, meta, Controller, Gvr, Object, ObjectKey, Outcome, Permission,
    Registration, Value, Watch,
};

pub const PROVISIONER: &str = "turtles.dev/host-path";
/// The class made at start when none is the default.
pub const DEFAULT_CLASS: &str = "standard";
/// Where the volumes would live on a node.
pub const BASE_PATH: &str = "/var/lib/turtles/volumes";

const CLAIMS: Gvr<'static> = Gvr::core("persistentvolumeclaims");
const VOLUMES: Gvr<'static> = Gvr::core("persistentvolumes");
const CLASSES: Gvr<'static> = Gvr::new("storage.k8s.io", "v1", "storageclasses");

const ANN_PROVISIONER: &str = "volume.kubernetes.io/storage-provisioner";
const ANN_BETA_PROVISIONER: &str = "volume.beta.kubernetes.io/storage-provisioner";
const ANN_SELECTED_NODE: &str = "volume.kubernetes.io/selected-node";
const ANN_PROVISIONED_BY: &str = "pv.kubernetes.io/provisioned-by";
const DEFAULT_ANNOTATIONS: [&str; 2] = [
    "storageclass.kubernetes.io/is-default-class",
    "storageclass.beta.kubernetes.io/is-default-class",
];

/// Whether this load has looked for a default class yet.
static DEFAULT_CHECKED: AtomicBool = AtomicBool::new(false);

struct HostPathProvisioner;

impl Controller for HostPathProvisioner {
    fn register() -> Registration {
        Registration::new(Watch::of(CLAIMS))
            .watch(Watch::of(VOLUMES))
            .watch(Watch::of(CLASSES))
            .initial_key("", DEFAULT_CLASS)
            .permission(Permission::core(
                &["persistentvolumes"],
                &["get", "list", "watch", "create", "delete", "patch"],
            ))
            .permission(Permission::core(
                &["persistentvolumeclaims"],
                &["get", "list", "watch", "patch"],
            ))
            .permission(Permission::core(
                &["persistentvolumeclaims/status"],
                &["get", "update", "patch"],
            ))
            .permission(Permission::group(
                "storage.k8s.io",
                &["storageclasses"],
                &["get", "list", "watch", "create"],
            ))
            .permission(Permission::core(&["events"], &["create", "patch"]))
            .max_concurrent_reconciles(2)
    }

    fn reconcile(key: ObjectKey, claim: Option<Object>) -> Outcome {
        let result = if key.namespace.is_empty() {
            cluster_key(&key.name)
        } else {
            match claim {
                Some(claim) => provision(&claim).and_then(|()| resize(&claim)),
                None => Ok(()),
            }
        };
        match result {
            Ok(()) => Outcome::Done,
            Err(e) => Outcome::TransientError(e),
        }
    }
}

export!(HostPathProvisioner);

fn str_at<'a>(v: &'a Value, pointer: &str) -> &'a str {
    v.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

fn record(obj: &Value, warning: bool, reason: &str, note: &str) {
    events::best_effort(obj, warning, reason, note);
}

/// A cluster-scoped key: a volume (delete it once released) or a class (the default at start).
fn cluster_key(name: &str) -> Result<(), String> {
    if let Some(volume) = turtles_controller::cache::get(VOLUMES, "", name) {
        reclaim(&volume)?;
    }
    if name == DEFAULT_CLASS && !DEFAULT_CHECKED.swap(true, Ordering::SeqCst) {
        ensure_default_class()?;
    }
    Ok(())
}

/// kind's default: `standard`, made only when no class is the default and none has the name.
fn ensure_default_class() -> Result<(), String> {
    let classes = turtles_controller::cache::list(CLASSES, None);
    let is_default = |c: &Value| {
        DEFAULT_ANNOTATIONS
            .iter()
            .any(|a| meta::annotation(c, a) == Some("true"))
    };
    if classes
        .iter()
        .any(|c| is_default(c) || meta::name(c) == Some(DEFAULT_CLASS))
    {
        return Ok(());
    }
    let class = default_class_object();
    match api::create(&CLASSES.path(""), &class) {
        Ok(_) => {
            turtles_controller::info!("created the default StorageClass {DEFAULT_CLASS}");
            Ok(())
        }
        Err(e) if e.is_conflict() => Ok(()),
        Err(e) => {
            // Let a later load try again.
            DEFAULT_CHECKED.store(false, Ordering::SeqCst);
            Err(format!("creating StorageClass {DEFAULT_CLASS}: {e}"))
        }
    }
}

pub fn default_class_object() -> Value {
    json!({
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {
            "name": DEFAULT_CLASS,
            "annotations": {DEFAULT_ANNOTATIONS[0]: "true"},
        },
        "provisioner": PROVISIONER,
        "reclaimPolicy": "Delete",
        "volumeBindingMode": "WaitForFirstConsumer",
    })
}

/// The library's `shouldProvision`, then the volume.
fn provision(claim: &Value) -> Result<(), String> {
    let Some(class) = ready_to_provision(claim) else {
        return Ok(());
    };
    let name = volume_name(claim);
    if turtles_controller::cache::get(VOLUMES, "", &name).is_some() {
        return Ok(());
    }
    let (namespace, claim_name) = (
        meta::namespace(claim).unwrap_or_default(),
        meta::name(claim).unwrap_or_default(),
    );
    record(
        claim,
        false,
        "Provisioning",
        &format!(
            "External provisioner is provisioning volume for claim \"{namespace}/{claim_name}\""
        ),
    );
    let volume = match new_volume(claim, &class, &name) {
        Ok(v) => v,
        Err(why) => {
            record(
                claim,
                true,
                "ProvisioningFailed",
                &format!(
                    "failed to provision volume with StorageClass \"{}\": {why}",
                    meta::name(&class).unwrap_or_default()
                ),
            );
            return Ok(());
        }
    };
    match api::create(&VOLUMES.path(""), &volume) {
        Ok(_) => {}
        // Made by an earlier call whose volume the cache did not show yet.
        Err(e) if e.is_conflict() => return Ok(()),
        Err(e) => {
            record(
                claim,
                true,
                "ProvisioningFailed",
                &format!(
                    "failed to provision volume with StorageClass \"{}\": {}",
                    meta::name(&class).unwrap_or_default(),
                    e.message
                ),
            );
            return Err(format!("creating PersistentVolume {name}: {e}"));
        }
    }
    record(
        claim,
        false,
        "ProvisioningSucceeded",
        &format!("Successfully provisioned volume {name}"),
    );
    Ok(())
}

/// The claim's class when this provisioner should provision for it now.
pub fn ready_to_provision(claim: &Value) -> Option<Value> {
    if !str_at(claim, "/spec/volumeName").is_empty() || meta::is_deleting(claim) {
        return None;
    }
    let asked = meta::annotation(claim, ANN_PROVISIONER)
        .or_else(|| meta::annotation(claim, ANN_BETA_PROVISIONER));
    if asked != Some(PROVISIONER) {
        return None;
    }
    let class_name = claim_class(claim);
    let class = turtles_controller::cache::get(CLASSES, "", class_name)?;
    if str_at(&class, "/provisioner") != PROVISIONER {
        return None;
    }
    let delayed = str_at(&class, "/volumeBindingMode") == "WaitForFirstConsumer";
    if delayed
        && meta::annotation(claim, ANN_SELECTED_NODE)
            .unwrap_or("")
            .is_empty()
    {
        return None;
    }
    Some(class)
}

/// kube's `GetPersistentVolumeClaimClass`: the beta annotation first, then the field.
fn claim_class(claim: &Value) -> &str {
    meta::annotation(claim, "volume.beta.kubernetes.io/storage-class")
        .unwrap_or_else(|| str_at(claim, "/spec/storageClassName"))
}

/// The library's name for a claim's volume.
pub fn volume_name(claim: &Value) -> String {
    format!("pvc-{}", str_at(claim, "/metadata/uid"))
}

/// The volume for `claim`, as kube's provisioners shape it. Err: why it cannot be made.
pub fn new_volume(claim: &Value, class: &Value, name: &str) -> Result<Value, String> {
    let storage = claim
        .pointer("/spec/resources/requests/storage")
        .cloned()
        .ok_or_else(|| "claim has no storage request".to_owned())?;
    let namespace = meta::namespace(claim).unwrap_or_default();
    let claim_name = meta::name(claim).unwrap_or_default();
    let mut spec = json!({
        "capacity": {"storage": storage},
        "accessModes": claim.pointer("/spec/accessModes").cloned().unwrap_or_else(|| json!(["ReadWriteOnce"])),
        "claimRef": {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "namespace": namespace,
            "name": claim_name,
            "uid": str_at(claim, "/metadata/uid"),
            "resourceVersion": str_at(claim, "/metadata/resourceVersion"),
        },
        "persistentVolumeReclaimPolicy": class.get("reclaimPolicy").and_then(Value::as_str).unwrap_or("Delete"),
        "storageClassName": meta::name(class).unwrap_or_default(),
        "volumeMode": claim.pointer("/spec/volumeMode").and_then(Value::as_str).unwrap_or("Filesystem"),
        "hostPath": {
            "path": format!("{BASE_PATH}/{name}_{namespace}_{claim_name}"),
            "type": "DirectoryOrCreate",
        },
    });
    if let Some(options) = class.get("mountOptions").filter(|o| o.is_array()) {
        spec["mountOptions"] = options.clone();
    }
    if let Some(node) = meta::annotation(claim, ANN_SELECTED_NODE).filter(|n| !n.is_empty()) {
        spec["nodeAffinity"] = json!({"required": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": [node]}]}
        ]}});
    }
    Ok(json!({
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {
            "name": name,
            "annotations": {ANN_PROVISIONED_BY: PROVISIONER},
        },
        "spec": spec,
    }))
}

/// The size a bound claim of one of this provisioner's volumes asks to grow to (kube's
/// external-resizer: the request above the claim's capacity), with the volume.
pub fn resize_wanted(claim: &Value, volume: &Value) -> Option<String> {
    use turtles_controller::quantity::milli_value;
    if str_at(claim, "/status/phase") != "Bound"
        || meta::annotation(volume, ANN_PROVISIONED_BY) != Some(PROVISIONER)
    {
        return None;
    }
    let want = str_at(claim, "/spec/resources/requests/storage");
    let have = claim
        .pointer("/status/capacity/storage")
        .and_then(Value::as_str)
        .unwrap_or("0");
    (milli_value(want)? > milli_value(have)?).then(|| want.to_owned())
}

/// kube's external-resizer for a volume that needs no node expansion: the claim marked
/// `Resizing` (`ControllerResizeInProgress`, `allocatedResources`), the volume's capacity, then
/// the claim's capacity with the resize marks gone (and
/// `volume.kubernetes.io/node-expansion-not-required`); Events `Resizing` and
/// `VolumeResizeSuccessful`. Nothing on a disk changes: the volume is the API object.
fn resize(claim: &Value) -> Result<(), String> {
    let volume_name = str_at(claim, "/spec/volumeName");
    let Some(volume) = turtles_controller::cache::get(VOLUMES, "", volume_name) else {
        return Ok(());
    };
    let Some(size) = resize_wanted(claim, &volume) else {
        return Ok(());
    };
    let (ns, name) = (
        meta::namespace(claim).unwrap_or_default(),
        meta::name(claim).unwrap_or_default(),
    );
    let status_path = format!("{}/status", CLAIMS.object_path(ns, name));
    let err = |what: &str, e: turtles_controller::ApiError| format!("{what} {ns}/{name}: {e}");
    let resize_types = [
        "Resizing",
        "FileSystemResizePending",
        "ControllerResizeError",
        "NodeResizeError",
    ];
    let others = |c: &Value| -> Vec<Value> {
        c.pointer("/status/conditions")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter(|x| !resize_types.iter().any(|t| x["type"] == *t))
            .cloned()
            .collect()
    };
    let mut marked = claim.clone();
    let mut conditions = others(claim);
    conditions.push(json!({"type": "Resizing", "status": "True",
        "lastProbeTime": null,
        "lastTransitionTime": workload::format_rfc3339(workload::unix_now())}));
    marked["status"]["conditions"] = Value::Array(conditions);
    marked["status"]["allocatedResourceStatuses"] =
        json!({"storage": "ControllerResizeInProgress"});
    marked["status"]["allocatedResources"] = json!({"storage": size});
    let marked = api::update(&status_path, &marked).map_err(|e| err("marking the resize of", e))?;
    record(
        claim,
        false,
        "Resizing",
        &format!("External resizer is resizing volume {volume_name}"),
    );
    let patch = json!({"spec": {"capacity": {"storage": size}}});
    api::patch_merge(&VOLUMES.object_path("", volume_name), &patch)
        .map_err(|e| err("resizing the volume of", e))?;
    let mut done = marked.clone();
    let rest = others(&marked);
    if rest.is_empty() {
        if let Some(st) = done["status"].as_object_mut() {
            st.remove("conditions");
        }
    } else {
        done["status"]["conditions"] = Value::Array(rest);
    }
    if let Some(st) = done["status"].as_object_mut() {
        st.remove("allocatedResourceStatuses");
    }
    done["status"]["capacity"]["storage"] = json!(size);
    api::update(&status_path, &done).map_err(|e| err("finishing the resize of", e))?;
    let note = json!({"metadata": {"annotations": {"volume.kubernetes.io/node-expansion-not-required": "true"}}});
    api::patch_merge(&CLAIMS.object_path(ns, name), &note).map_err(|e| err("annotating", e))?;
    record(
        claim,
        false,
        "VolumeResizeSuccessful",
        "Resize volume succeeded",
    );
    Ok(())
}

/// Whether a volume is this provisioner's, released, and to be deleted.
pub fn to_delete(volume: &Value) -> bool {
    meta::annotation(volume, ANN_PROVISIONED_BY) == Some(PROVISIONER)
        && str_at(volume, "/status/phase") == "Released"
        && str_at(volume, "/spec/persistentVolumeReclaimPolicy") == "Delete"
        && !meta::is_deleting(volume)
}

/// A released volume of ours with policy `Delete` goes.
fn reclaim(volume: &Value) -> Result<(), String> {
    if !to_delete(volume) {
        return Ok(());
    }
    let name = meta::name(volume).unwrap_or_default();
    match api::delete(&VOLUMES.object_path("", name)) {
        Ok(_) => {
            turtles_controller::info!("deleted released volume {name}");
            Ok(())
        }
        Err(e) if e.is_not_found() => Ok(()),
        Err(e) => {
            record(volume, true, "VolumeFailedDelete", &e.message);
            Err(format!("deleting PersistentVolume {name}: {e}"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn claim(selected: Option<&str>) -> Value {
        let mut c = json!({"metadata": {"name": "www-web-0", "namespace": "default", "uid": "u-1",
            "resourceVersion": "7", "annotations": {ANN_PROVISIONER: PROVISIONER}},
            "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "standard",
                "resources": {"requests": {"storage": "1Gi"}}}});
        if let Some(n) = selected {
            c["metadata"]["annotations"][ANN_SELECTED_NODE] = json!(n);
        }
        c
    }

    #[test]
    fn a_volume_is_shaped_as_the_claim_and_class_ask() {
        let class = default_class_object();
        let c = claim(Some("turtle-node-1"));
        let name = volume_name(&c);
        assert_eq!(name, "pvc-u-1");
        let v = new_volume(&c, &class, &name).unwrap();
        assert_eq!(v["spec"]["capacity"]["storage"], "1Gi");
        assert_eq!(v["spec"]["claimRef"]["uid"], "u-1");
        assert_eq!(v["spec"]["claimRef"]["name"], "www-web-0");
        assert_eq!(v["spec"]["persistentVolumeReclaimPolicy"], "Delete");
        assert_eq!(v["spec"]["storageClassName"], "standard");
        assert_eq!(v["spec"]["volumeMode"], "Filesystem");
        assert_eq!(
            v["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"][0]["matchExpressions"][0]
                ["values"],
            json!(["turtle-node-1"])
        );
        assert_eq!(
            v["metadata"]["annotations"][ANN_PROVISIONED_BY],
            PROVISIONER
        );
        let mut bare = claim(None);
        bare["spec"]["resources"] = json!({});
        assert!(new_volume(&bare, &class, "x").is_err());
    }

    #[test]
    fn a_bound_claim_asking_for_more_than_it_has_is_resized() {
        let volume = json!({"metadata": {"name": "pvc-1", "annotations": {ANN_PROVISIONED_BY: PROVISIONER}}});
        let mut c = claim(None);
        assert_eq!(resize_wanted(&c, &volume), None); // not bound
        c["status"] = json!({"phase": "Bound", "capacity": {"storage": "1Gi"}});
        assert_eq!(resize_wanted(&c, &volume), None);
        c["spec"]["resources"]["requests"]["storage"] = json!("1536Mi");
        assert_eq!(resize_wanted(&c, &volume), Some("1536Mi".into()));
        let theirs =
            json!({"metadata": {"name": "pvc-1", "annotations": {ANN_PROVISIONED_BY: "x.io/y"}}});
        assert_eq!(resize_wanted(&c, &theirs), None);
    }

    #[test]
    fn only_released_volumes_of_ours_with_delete_go() {
        let mut v = json!({"metadata": {"name": "pvc-1", "annotations": {ANN_PROVISIONED_BY: PROVISIONER}},
            "spec": {"persistentVolumeReclaimPolicy": "Delete"}, "status": {"phase": "Released"}});
        assert!(to_delete(&v));
        v["spec"]["persistentVolumeReclaimPolicy"] = json!("Retain");
        assert!(!to_delete(&v));
        v["spec"]["persistentVolumeReclaimPolicy"] = json!("Delete");
        v["status"]["phase"] = json!("Bound");
        assert!(!to_delete(&v));
        v["status"]["phase"] = json!("Released");
        v["metadata"]["annotations"][ANN_PROVISIONED_BY] = json!("other.io/x");
        assert!(!to_delete(&v));
    }
}
