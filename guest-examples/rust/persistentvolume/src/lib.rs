//! `persistentvolume`: kube-controller-manager's PersistentVolume controller (the "binder",
//! `pkg/controller/volume/persistentvolume`, kube 1.34), which binds PersistentVolumeClaims to
//! PersistentVolumes and keeps both phases:
//!
//! - **Claims:** a claim without a volume gets the best fitting `Available` volume (its class,
//!   access modes, size, volume mode and selector; the fewest access modes first, then the
//!   smallest), or one pre-bound to it. With none, a claim of a class that has a provisioner asks
//!   for one (the annotations `volume.kubernetes.io/storage-provisioner` and its beta form, the
//!   Event `ExternalProvisioning`); a class that waits for the first consumer
//!   (`WaitForFirstConsumer`) waits until the scheduler picks a node
//!   (`volume.kubernetes.io/selected-node`; the Event `WaitForFirstConsumer` or
//!   `WaitForPodScheduled`); a claim of no class gets `FailedBinding`. A claim naming no class at
//!   all gets the default StorageClass once there is one (kube's retroactive default). A claim
//!   naming its volume (`spec.volumeName`) is bound to it if they fit (`VolumeMismatch`
//!   otherwise). A bound claim whose volume is gone or taken is `Lost` (`ClaimLost`,
//!   `ClaimMisbound`).
//! - **Binding** is kube's four writes: the volume's `claimRef` (and
//!   `pv.kubernetes.io/bound-by-controller`), its phase `Bound`, the claim's `volumeName` with
//!   `pv.kubernetes.io/bind-completed`, then its status (`Bound`, capacity, access modes).
//! - **Volumes:** one with no claim is `Available`; one whose claim is gone is `Released`, then
//!   kept (`Retain`), left to its provisioner to delete (`Delete`), or `Failed` (`Recycle`: no
//!   recycler here). One this controller bound to a claim that took another volume is unbound.
//!
//! Watches: claims (the primary; kube's 15 s resync), volumes and StorageClasses (cluster-scoped:
//! the key `("", NAME)` syncs the volume of that name, or the waiting claims of that class), and
//! Pods, cached only (the Pods that wait for a claim, for the Event).

pub mod plan;

use turtles_controller::{
    api, events, export, json, meta, ApiError, Controller, Gvr, Object, ObjectKey, Outcome,
    Permission, Registration, Value, Watch,
};

use plan::{
    claim_class, claim_ref, has_annotation, str_at, ANN_BETA_STORAGE_PROVISIONER,
    ANN_BOUND_BY_CONTROLLER, ANN_DYNAMICALLY_PROVISIONED, ANN_SELECTED_NODE,
    ANN_STORAGE_PROVISIONER,
};

const CLAIMS: Gvr<'static> = Gvr::core("persistentvolumeclaims");
const VOLUMES: Gvr<'static> = Gvr::core("persistentvolumes");
const CLASSES: Gvr<'static> = Gvr::new("storage.k8s.io", "v1", "storageclasses");
const PODS: Gvr<'static> = Gvr::core("pods");

struct PersistentVolumeController;

impl Controller for PersistentVolumeController {
    fn register() -> Registration {
        Registration::new(Watch::of(CLAIMS))
            .watch(Watch::of(VOLUMES))
            .watch(Watch::of(CLASSES))
            // Cached for the Pods waiting on a claim; no Pod is owned by a claim, so no Pod
            // event starts a sync (kube's controller reads Pods from an index, too).
            .watch(Watch::of(PODS).owned_by("", "PersistentVolumeClaim"))
            .permission(Permission::core(
                &["persistentvolumes"],
                &["get", "list", "watch", "update", "patch"],
            ))
            .permission(Permission::core(
                &["persistentvolumes/status"],
                &["update", "patch"],
            ))
            .permission(Permission::core(
                &["persistentvolumeclaims"],
                &["get", "list", "watch", "update", "patch"],
            ))
            .permission(Permission::core(
                &["persistentvolumeclaims/status"],
                &["update", "patch"],
            ))
            .permission(Permission::group(
                "storage.k8s.io",
                &["storageclasses"],
                &["get", "list", "watch"],
            ))
            .permission(Permission::core(&["pods"], &["get", "list", "watch"]))
            .permission(Permission::core(&["events"], &["create", "patch"]))
            // kube's --pvclaimbinder-sync-period.
            .resync_seconds(15)
    }

    fn reconcile(key: ObjectKey, claim: Option<Object>) -> Outcome {
        forget_volumes();
        let result = if key.namespace.is_empty() {
            sync_cluster_key(&key.name)
        } else {
            // kube enqueues a deleted claim's volume: it is Released now. A claim deleted and
            // made again under its name may reach this key once, as the new claim: the old
            // one's volumes (another uid) are looked at too.
            let uid = claim
                .as_ref()
                .map(|c| str_at(c, "/metadata/uid").to_owned())
                .unwrap_or_default();
            let stale: Vec<Value> = volumes_of_claim(&key.namespace, &key.name)
                .into_iter()
                .filter(|v| claim_ref(v).is_some_and(|r| str_at(r, "/uid") != uid))
                .collect();
            let mut result = each(stale, sync_volume);
            if let Some(claim) = claim {
                result = result.and(sync_claim(claim.into_value()));
            }
            result
        };
        match result {
            Ok(()) => Outcome::Done,
            Err(e) => e.into(),
        }
    }
}

export!(PersistentVolumeController);

fn record(obj: &Value, warning: bool, reason: &str, note: &str) {
    events::best_effort(obj, warning, reason, note);
}

/// `f` on every item, carrying on past a failure (one object's error must not hold back the
/// others); the first error.
fn each(items: Vec<Value>, f: impl Fn(Value) -> Result<(), ApiError>) -> Result<(), ApiError> {
    let mut first = Ok(());
    for item in items {
        if let Err(e) = f(item) {
            turtles_controller::warn!("{e}");
            if first.is_ok() {
                first = Err(e);
            }
        }
    }
    first
}

thread_local! {
    /// The volumes as this reconcile last listed them: a fan-out over many waiting claims lists
    /// (and parses) them once, not once per claim. Forgotten at each reconcile's start and after
    /// each write of a volume.
    static SEEN: std::cell::RefCell<Option<std::rc::Rc<Vec<Value>>>> = const { std::cell::RefCell::new(None) };
}

fn volumes() -> std::rc::Rc<Vec<Value>> {
    SEEN.with(|seen| {
        seen.borrow_mut()
            .get_or_insert_with(|| std::rc::Rc::new(turtles_controller::cache::list(VOLUMES, None)))
            .clone()
    })
}

fn forget_volumes() {
    SEEN.with(|seen| *seen.borrow_mut() = None);
}

/// A write of a volume: the volumes are listed again after it.
fn write_volume(path: &str, volume: &Value) -> Result<Value, ApiError> {
    forget_volumes();
    api::update(path, volume)
}

fn volumes_of_claim(namespace: &str, name: &str) -> Vec<Value> {
    volumes()
        .iter()
        .filter(|v| {
            claim_ref(v)
                .is_some_and(|r| str_at(r, "/namespace") == namespace && str_at(r, "/name") == name)
        })
        .cloned()
        .collect()
}

/// A cluster-scoped key: the volume of that name, or the claims it concerns when it is gone, or
/// the waiting claims of a class of that name (a class made or changed may be what they wait
/// for).
fn sync_cluster_key(name: &str) -> Result<(), ApiError> {
    let mut result = match turtles_controller::cache::get(VOLUMES, "", name) {
        Some(volume) => sync_volume(volume),
        // kube enqueues a deleted volume's claim: it is Lost now.
        None => each(
            turtles_controller::cache::list(CLAIMS, None)
                .into_iter()
                .filter(|c| str_at(c, "/spec/volumeName") == name)
                .collect(),
            sync_claim,
        ),
    };
    if let Some(class) = turtles_controller::cache::get(CLASSES, "", name) {
        let default = plan::default_class(&turtles_controller::cache::list(CLASSES, None))
            .is_some_and(|d| meta::name(d) == Some(name));
        let waiting: Vec<Value> = turtles_controller::cache::list(CLAIMS, None)
            .into_iter()
            .filter(|c| {
                str_at(c, "/spec/volumeName").is_empty()
                    && !has_annotation(c, plan::ANN_BIND_COMPLETED)
                    && (claim_class(c) == meta::name(&class).unwrap_or("")
                        || (default && plan::claim_class_unset(c)))
            })
            .collect();
        result = result.and(each(waiting, sync_claim));
    }
    result
}

fn claim_path(claim: &Value) -> String {
    CLAIMS.object_path(
        meta::namespace(claim).unwrap_or(""),
        meta::name(claim).unwrap_or(""),
    )
}

fn volume_path(volume: &Value) -> String {
    VOLUMES.object_path("", meta::name(volume).unwrap_or(""))
}

/// kube's `syncClaim`.
fn sync_claim(claim: Value) -> Result<(), ApiError> {
    if has_annotation(&claim, plan::ANN_BIND_COMPLETED) {
        sync_bound_claim(claim)
    } else {
        sync_unbound_claim(claim)
    }
}

/// kube's `IsDelayBindingMode`: the claim's class waits for the first consumer.
fn delay_binding(claim: &Value) -> bool {
    let class = claim_class(claim);
    !class.is_empty()
        && turtles_controller::cache::get(CLASSES, "", class)
            .is_some_and(|c| str_at(&c, "/volumeBindingMode") == "WaitForFirstConsumer")
}

fn sync_unbound_claim(claim: Value) -> Result<(), ApiError> {
    let wanted = str_at(&claim, "/spec/volumeName").to_owned();
    if wanted.is_empty() {
        let delayed = delay_binding(&claim);
        let all = volumes();
        if let Some(volume) = plan::best_match(&claim, &all, delayed) {
            return bind(volume.clone(), claim);
        }
        if assign_default_class(&claim)? {
            return Ok(());
        }
        if delayed && !has_annotation(&claim, ANN_SELECTED_NODE) {
            wait_for_consumer(&claim);
        } else if !claim_class(&claim).is_empty() {
            // Pending already: kube leaves the status alone on this path.
            return provision(claim);
        } else {
            record(
                &claim,
                false,
                "FailedBinding",
                "no persistent volumes available for this claim and no storage class is set",
            );
        }
        update_claim_status(&claim, "Pending", None)?;
        return Ok(());
    }
    // The user asked for this volume.
    let Some(volume) = turtles_controller::cache::get(VOLUMES, "", &wanted) else {
        update_claim_status(&claim, "Pending", None)?;
        return Ok(());
    };
    if claim_ref(&volume).is_none() {
        if let Err(why) = plan::satisfies(&volume, &claim) {
            record(
                &claim,
                true,
                "VolumeMismatch",
                &format!("Cannot bind to requested volume \"{wanted}\": {why}"),
            );
            update_claim_status(&claim, "Pending", None)?;
            return Ok(());
        }
        return bind(volume, claim);
    }
    if plan::bound_to_claim(&volume, &claim) {
        return bind(volume, claim);
    }
    record(
        &claim,
        true,
        "FailedBinding",
        &format!("volume \"{wanted}\" already bound to a different claim."),
    );
    if !has_annotation(&claim, ANN_BOUND_BY_CONTROLLER) {
        update_claim_status(&claim, "Pending", None)?;
    }
    Ok(())
}

/// kube's `emitEventForUnboundDelayBindingClaim`.
fn wait_for_consumer(claim: &Value) {
    let name = meta::name(claim).unwrap_or("");
    let namespace = meta::namespace(claim).unwrap_or("");
    let mut waiting: Vec<String> = turtles_controller::cache::list(PODS, Some(namespace))
        .into_iter()
        .filter(|p| {
            str_at(p, "/spec/nodeName").is_empty()
                && !pod_terminated(p)
                && pod_claims(p).iter().any(|c| c == name)
        })
        .map(|p| meta::name(&p).unwrap_or("").to_owned())
        .collect();
    waiting.sort();
    let (reason, note) = match waiting.as_slice() {
        [] => (
            "WaitForFirstConsumer",
            "waiting for first consumer to be created before binding".to_owned(),
        ),
        [one] => (
            "WaitForPodScheduled",
            format!("waiting for pod {one} to be scheduled"),
        ),
        many => (
            "WaitForPodScheduled",
            format!("waiting for pods {} to be scheduled", many.join(",")),
        ),
    };
    record(claim, false, reason, &note);
}

/// kube's `IsPodTerminated`: finished, or being deleted with every container stopped.
fn pod_terminated(pod: &Value) -> bool {
    if matches!(str_at(pod, "/status/phase"), "Succeeded" | "Failed") {
        return true;
    }
    meta::is_deleting(pod)
        && pod
            .pointer("/status/containerStatuses")
            .and_then(Value::as_array)
            .is_some_and(|s| s.iter().all(|c| c.pointer("/state/terminated").is_some()))
}

/// The claims a Pod's volumes name (an ephemeral volume's is `POD-VOLUME`).
fn pod_claims(pod: &Value) -> Vec<String> {
    let pod_name = meta::name(pod).unwrap_or("");
    pod.pointer("/spec/volumes")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|v| {
            if let Some(c) = v
                .pointer("/persistentVolumeClaim/claimName")
                .and_then(Value::as_str)
            {
                return Some(c.to_owned());
            }
            v.get("ephemeral").filter(|e| e.is_object())?;
            Some(format!("{pod_name}-{}", v.get("name")?.as_str()?))
        })
        .collect()
}

/// kube's retroactive default class: a claim naming no class at all gets the default one.
fn assign_default_class(claim: &Value) -> Result<bool, ApiError> {
    if !plan::claim_class_unset(claim) {
        return Ok(false);
    }
    let classes = turtles_controller::cache::list(CLASSES, None);
    let Some(class) = plan::default_class(&classes) else {
        return Ok(false);
    };
    let mut updated = claim.clone();
    updated["spec"]["storageClassName"] = json!(meta::name(class).unwrap_or(""));
    api::update(&claim_path(claim), &updated)?;
    Ok(true)
}

/// kube's `provisionClaim` for an external provisioner: the claim asks for it and waits.
fn provision(claim: Value) -> Result<(), ApiError> {
    let class_name = claim_class(&claim).to_owned();
    let Some(class) = turtles_controller::cache::get(CLASSES, "", &class_name) else {
        record(
            &claim,
            true,
            "ProvisioningFailed",
            &format!("storageclass.storage.k8s.io \"{class_name}\" not found"),
        );
        return Ok(());
    };
    let provisioner = str_at(&class, "/provisioner").to_owned();
    if provisioner.is_empty() || provisioner.starts_with("kubernetes.io/") {
        record(
            &claim,
            true,
            "ProvisioningFailed",
            &format!("no volume plugin matched name: {provisioner}"),
        );
        return Ok(());
    }
    let mut claim = claim;
    if meta::annotation(&claim, ANN_STORAGE_PROVISIONER) != Some(provisioner.as_str()) {
        let mut updated = claim.clone();
        plan::set_annotation(&mut updated, ANN_BETA_STORAGE_PROVISIONER, &provisioner);
        plan::set_annotation(&mut updated, ANN_STORAGE_PROVISIONER, &provisioner);
        claim = match api::update(&claim_path(&claim), &updated) {
            Ok(c) => c,
            Err(e) => {
                record(
                    &claim,
                    true,
                    "ProvisioningFailed",
                    &format!("Error saving claim: {}", e.message),
                );
                return Err(e);
            }
        };
    }
    record(
        &claim,
        false,
        "ExternalProvisioning",
        &format!("Waiting for a volume to be created either by the external provisioner '{provisioner}' or manually by the system administrator. If volume creation is delayed, please verify that the provisioner is running and correctly registered."),
    );
    Ok(())
}

fn sync_bound_claim(claim: Value) -> Result<(), ApiError> {
    let name = str_at(&claim, "/spec/volumeName").to_owned();
    if name.is_empty() {
        return lose(
            &claim,
            "ClaimLost",
            "Bound claim has lost reference to PersistentVolume. Data on the volume is lost!",
        );
    }
    let Some(volume) = turtles_controller::cache::get(VOLUMES, "", &name) else {
        return lose(
            &claim,
            "ClaimLost",
            "Bound claim has lost its PersistentVolume. Data on the volume is lost!",
        );
    };
    match claim_ref(&volume) {
        None => bind(volume, claim),
        Some(r) if str_at(r, "/uid") == str_at(&claim, "/metadata/uid") => bind(volume, claim),
        Some(_) => lose(
            &claim,
            "ClaimMisbound",
            "Two claims are bound to the same volume, this one is bound incorrectly",
        ),
    }
}

/// kube's `updateClaimStatusWithEvent(Lost)`: the event once, as the claim becomes Lost.
fn lose(claim: &Value, reason: &str, note: &str) -> Result<(), ApiError> {
    if str_at(claim, "/status/phase") == "Lost" {
        return Ok(());
    }
    update_claim_status(claim, "Lost", None)?;
    record(claim, true, reason, note);
    Ok(())
}

/// kube's `bind`: the volume's link, its phase, the claim's link, its status.
fn bind(volume: Value, claim: Value) -> Result<(), ApiError> {
    let volume = match plan::volume_bound_to(&volume, &claim) {
        Some(v) => write_volume(&volume_path(&volume), &v)?,
        None => volume,
    };
    let volume = update_volume_phase(volume, "Bound", "")?;
    let claim = match plan::claim_bound_to(&claim, &volume) {
        Some(c) => api::update(&claim_path(&claim), &c)?,
        None => claim,
    };
    update_claim_status(&claim, "Bound", Some(&volume))?;
    turtles_controller::info!(
        "bound claim {}/{} to volume {}",
        meta::namespace(&claim).unwrap_or(""),
        meta::name(&claim).unwrap_or(""),
        meta::name(&volume).unwrap_or("")
    );
    Ok(())
}

fn update_claim_status(claim: &Value, phase: &str, volume: Option<&Value>) -> Result<(), ApiError> {
    let Some(status) = plan::claim_status(claim, phase, volume) else {
        return Ok(());
    };
    let mut c = claim.clone();
    c["status"] = status;
    api::update(&format!("{}/status", claim_path(claim)), &c)?;
    Ok(())
}

/// kube's `updateVolumePhase`: the phase and its message, when the phase changes.
fn update_volume_phase(volume: Value, phase: &str, message: &str) -> Result<Value, ApiError> {
    if str_at(&volume, "/status/phase") == phase {
        return Ok(volume);
    }
    let mut v = volume.clone();
    if !v["status"].is_object() {
        v["status"] = json!({});
    }
    v["status"]["phase"] = json!(phase);
    if message.is_empty() {
        if let Some(s) = v["status"].as_object_mut() {
            s.remove("message");
        }
    } else {
        v["status"]["message"] = json!(message);
    }
    write_volume(&format!("{}/status", volume_path(&volume)), &v)
}

/// kube's `syncVolume`.
fn sync_volume(volume: Value) -> Result<(), ApiError> {
    let Some(r) = claim_ref(&volume).cloned() else {
        update_volume_phase(volume, "Available", "")?;
        return Ok(());
    };
    if str_at(&r, "/uid").is_empty() {
        // Pre-bound by a user to a claim not bound yet: the claim's sync binds them.
        update_volume_phase(volume, "Available", "")?;
        return Ok(());
    }
    let (namespace, name) = (str_at(&r, "/namespace"), str_at(&r, "/name"));
    let mut claim = turtles_controller::cache::get(CLAIMS, namespace, name);
    let phase = str_at(&volume, "/status/phase").to_owned();
    let settled = matches!(phase.as_str(), "Released" | "Failed");
    if claim.is_none() && !settled {
        // Not cached yet (a claim made a moment ago)? Ask the API server before releasing.
        claim = match api::get(&CLAIMS.object_path(namespace, name)) {
            Ok(c) => Some(c),
            Err(e) if e.is_not_found() => None,
            Err(e) => return Err(e),
        };
    }
    let claim = claim.filter(|c| str_at(c, "/metadata/uid") == str_at(&r, "/uid"));
    let Some(claim) = claim else {
        let volume = if settled {
            volume
        } else {
            update_volume_phase(volume, "Released", "")?
        };
        return reclaim(volume);
    };
    let bound_to = str_at(&claim, "/spec/volumeName");
    let volume_name = meta::name(&volume).unwrap_or("").to_owned();
    if bound_to.is_empty() {
        if plan::volume_mode_mismatch(&claim, &volume) {
            record(
                &volume,
                true,
                "VolumeMismatch",
                &format!("Cannot bind PersistentVolume to requested PersistentVolumeClaim \"{name}\" due to incompatible volumeMode."),
            );
            record(
                &claim,
                true,
                "VolumeMismatch",
                &format!("Cannot bind PersistentVolume \"{volume_name}\" to requested PersistentVolumeClaim due to incompatible volumeMode."),
            );
            return Ok(());
        }
        // The claim's sync binds them (a provisioned volume arrives this way).
        return sync_claim(claim);
    }
    if bound_to == volume_name {
        update_volume_phase(volume, "Bound", "")?;
        return Ok(());
    }
    // The claim took another volume.
    let provisioned = has_annotation(&volume, ANN_DYNAMICALLY_PROVISIONED);
    let delete = str_at(&volume, "/spec/persistentVolumeReclaimPolicy") == "Delete";
    if provisioned && delete {
        if !settled {
            let volume = update_volume_phase(volume, "Released", "")?;
            return reclaim(volume);
        }
        return Ok(());
    }
    let unbound = plan::unbound_volume(&volume);
    let unbound = write_volume(&volume_path(&volume), &unbound)?;
    update_volume_phase(unbound, "Available", "")?;
    Ok(())
}

/// kube's `reclaimVolume` for a released volume.
fn reclaim(volume: Value) -> Result<(), ApiError> {
    match str_at(&volume, "/spec/persistentVolumeReclaimPolicy") {
        // Kept for an administrator; a provisioner deletes its own (kube waits for it too).
        "Retain" | "Delete" => Ok(()),
        "Recycle" => fail_volume(
            volume,
            "VolumeFailedRecycle",
            "No recycler plugin found for the volume!",
        ),
        _ => fail_volume(
            volume,
            "VolumeUnknownReclaimPolicy",
            "Volume has unrecognized PersistentVolumeReclaimPolicy",
        ),
    }
}

/// kube's `updateVolumePhaseWithEvent(Failed)`: the event once, as the volume fails.
fn fail_volume(volume: Value, reason: &str, note: &str) -> Result<(), ApiError> {
    if str_at(&volume, "/status/phase") == "Failed" {
        return Ok(());
    }
    let volume = update_volume_phase(volume, "Failed", note)?;
    record(&volume, true, reason, note);
    Ok(())
}
