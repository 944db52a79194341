//! kube's validation of built-in kinds that the workload validation (`model::workloads`) does not
//! cover: ConfigMaps and Secrets (`pkg/apis/core/validation`: `ValidateConfigMap`,
//! `ValidateSecret` and their update rules) and PodDisruptionBudgets (`builtin::disruption`),
//! with kube's field paths and messages.

use base64::Engine;
use serde_json::Value;

use crate::model::Cause;

/// kube's `core.MaxSecretSize`: the most data a ConfigMap or Secret holds (1 MiB).
pub const MAX_DATA_BYTES: usize = 1024 * 1024;

const IMMUTABLE_SET: &str = "Forbidden: field is immutable when `immutable` is set";

pub(crate) mod admission;
pub(crate) mod apps;
pub(crate) mod batch;
mod core_misc;
mod cron;
pub(crate) mod field;
pub(crate) mod goip;
mod misc;
mod networking;
pub(crate) mod pod;
mod service;
mod storage;

/// Go's `time.ParseDuration`, in nanoseconds, or Go's error text (also read for a request's
/// `?timeout=`, `api::access`).
pub(crate) use cron::parse_duration as go_parse_duration;

/// kube's `ValidatePodEphemeralContainersUpdate` (the `ephemeralcontainers` subresource): the
/// Pod as a whole must be valid, and ephemeral containers may be added but not removed or
/// changed. kube appends a diff of the change to its message; turtles names the container only.
pub fn ephemeral_containers_update(new: &Value, old: Option<&Value>) -> Vec<Cause> {
    let mut causes = pod::pod(new, old);
    let Some(old) = old else {
        return causes;
    };
    if old
        .pointer("/metadata/annotations/kubernetes.io~1config.mirror")
        .is_some()
    {
        return vec![field::forbidden(
            "",
            "static pods do not support ephemeral containers",
        )];
    }
    let path = "spec.ephemeralContainers";
    let by_name = |pod: &Value| -> Vec<(String, Value)> {
        field::items(
            pod.get("spec").unwrap_or(&Value::Null),
            "ephemeralContainers",
        )
        .iter()
        .map(|c| (field::str_of(c, "name").to_owned(), c.clone()))
        .collect()
    };
    let now: std::collections::HashMap<String, Value> = by_name(new).into_iter().collect();
    for (name, was) in by_name(old) {
        match now.get(&name).map(|c| (&name, c)) {
            None => causes.push(field::forbidden(
                path,
                &format!(
                    "existing ephemeral containers {} may not be removed\n",
                    field::quoted(&name)
                ),
            )),
            Some((_, c)) if *c != was => causes.push(field::forbidden(
                &field::child(path, &name),
                &format!(
                    "existing ephemeral containers {} may not be changed\n",
                    field::quoted(&name)
                ),
            )),
            Some(_) => {}
        }
    }
    causes
}

/// kube 1.34's `ValidatePodResize` (the `resize` subresource; `merge_update` has already kept
/// only the containers' `resources` and `resizePolicy` from the request): the Pod as a whole
/// valid; no pod-level resources, static or Windows Pod; the same QoS class; containers in the
/// same order; no request or limit removed; a memory limit not lowered or added unless the
/// container restarts for it; and nothing but cpu and memory changed.
pub fn pod_resize(new: &Value, old: Option<&Value>) -> Vec<Cause> {
    let mut causes = pod::pod(new, None);
    let Some(old) = old else {
        return causes;
    };
    let spec = |p: &Value| p.get("spec").cloned().unwrap_or(Value::Null);
    let (new_spec, old_spec) = (spec(new), spec(old));
    let pod_level = |s: &Value| {
        s.pointer("/resources/requests")
            .or_else(|| s.pointer("/resources/limits"))
            .is_some_and(|r| r.as_object().is_some_and(|m| !m.is_empty()))
    };
    if pod_level(&old_spec) || pod_level(&new_spec) {
        return vec![field::forbidden(
            "",
            "pods with pod-level resources cannot be resized",
        )];
    }
    if old
        .pointer("/metadata/annotations/kubernetes.io~1config.mirror")
        .is_some()
    {
        return vec![field::forbidden("", "static pods cannot be resized")];
    }
    if old_spec.pointer("/os/name").and_then(Value::as_str) == Some("windows") {
        return vec![field::forbidden("", "windows pods cannot be resized")];
    }
    let old_qos = old
        .pointer("/status/qosClass")
        .and_then(Value::as_str)
        .unwrap_or_else(|| crate::model::workloads::qos_class(Some(&old_spec)));
    if crate::model::workloads::qos_class(Some(&new_spec)) != old_qos {
        let shown = new
            .pointer("/status/qosClass")
            .and_then(Value::as_str)
            .unwrap_or(old_qos);
        causes.push(field::invalid_str(
            "spec",
            shown,
            "Pod QOS Class may not change as a result of resizing",
        ));
    }
    let names = |s: &Value, list: &str| -> Vec<String> {
        field::items(s, list)
            .iter()
            .map(|c| field::str_of(c, "name").to_owned())
            .collect()
    };
    for list in ["containers", "initContainers"] {
        let (now, was) = (names(&new_spec, list), names(&old_spec, list));
        if now.len() != was.len() {
            causes.push(field::forbidden(
                &format!("spec.{list}"),
                "containers may not be added or removed on resize",
            ));
            return causes;
        }
        for (i, (a, b)) in now.iter().zip(&was).enumerate() {
            if a != b {
                causes.push(field::forbidden(
                    &format!("spec.{list}[{i}].name"),
                    "containers may not be renamed or reordered on resize",
                ));
                return causes;
            }
        }
    }
    // validateContainerResize, for the containers and the sidecars.
    for list in ["containers", "initContainers"] {
        let (now, was) = (field::items(&new_spec, list), field::items(&old_spec, list));
        for (i, (c, o)) in now.iter().zip(was).enumerate() {
            let sidecar = list == "initContainers" && field::str_of(o, "restartPolicy") == "Always";
            if list == "initContainers" && !sidecar {
                continue;
            }
            let path = format!("spec.{list}[{i}].resources");
            let res = |x: &Value, which: &str| {
                x.pointer(&format!("/resources/{which}"))
                    .and_then(Value::as_object)
                    .cloned()
                    .unwrap_or_default()
            };
            // kube's `resourcesRemoved`: any resource the container had, gone.
            for which in ["requests", "limits"] {
                let (a, b) = (res(c, which), res(o, which));
                if b.keys().any(|k| !a.contains_key(k)) {
                    causes.push(field::forbidden(
                        &format!("{path}.{which}"),
                        &format!("resource {which} cannot be removed"),
                    ));
                }
            }
            let memory_policy = field::items(c, "resizePolicy")
                .iter()
                .find(|p| field::str_of(p, "resourceName") == "memory")
                .map(|p| field::str_of(p, "restartPolicy").to_owned())
                .unwrap_or_default();
            if memory_policy != "RestartContainer" {
                let amount = |m: &serde_json::Map<String, Value>| {
                    m.get("memory")
                        .and_then(Value::as_str)
                        .and_then(|q| crate::builtin::quantity::nano_value(q).ok())
                        .map(|(n, _)| n)
                };
                let (now_limit, was_limit) = (amount(&res(c, "limits")), amount(&res(o, "limits")));
                let path = format!("{path}.limits[memory]");
                match (now_limit, was_limit) {
                    (Some(a), Some(b)) if a < b => causes.push(field::forbidden(
                        &path,
                        "memory limits cannot be decreased unless resizePolicy is RestartContainer",
                    )),
                    (Some(_), None) => causes.push(field::forbidden(
                        &path,
                        "memory limits cannot be added unless resizePolicy is RestartContainer",
                    )),
                    _ => {}
                }
            }
        }
    }
    // Nothing but cpu and memory may change, and only for the containers and the sidecars.
    // A container's resources without cpu and memory, empty maps left out (adding a requests
    // or limits map of cpu or memory is a resize like any other).
    let rest = |c: &Value| -> Value {
        let mut r = c.get("resources").cloned().unwrap_or(Value::Null);
        if let Some(m) = r.as_object_mut() {
            for which in ["requests", "limits"] {
                if let Some(q) = m.get_mut(which).and_then(Value::as_object_mut) {
                    q.remove("cpu");
                    q.remove("memory");
                }
                if m.get(which)
                    .is_some_and(|q| q.as_object().is_some_and(|o| o.is_empty()))
                {
                    m.remove(which);
                }
            }
        }
        match r {
            Value::Object(m) if m.is_empty() => Value::Null,
            other => other,
        }
    };
    let without_resources = |s: &Value| {
        let mut s = s.clone();
        for list in ["containers", "initContainers"] {
            for c in s
                .get_mut(list)
                .and_then(Value::as_array_mut)
                .into_iter()
                .flatten()
            {
                if let Some(c) = c.as_object_mut() {
                    c.remove("resources");
                }
            }
        }
        s
    };
    let mut changed = false;
    for list in ["containers", "initContainers"] {
        let (now, was) = (field::items(&new_spec, list), field::items(&old_spec, list));
        for (i, (c, o)) in now.iter().zip(was).enumerate() {
            let sidecar = field::str_of(o, "restartPolicy") == "Always";
            let path = format!("spec.{list}[{i}].resources");
            if list == "initContainers" && !sidecar {
                if c.get("resources") != o.get("resources") {
                    causes.push(field::forbidden(
                        &path,
                        "resources for non-sidecar init containers are immutable",
                    ));
                }
            } else if rest(c) != rest(o) {
                if list == "initContainers" {
                    causes.push(field::forbidden(
                        &path,
                        "only cpu and memory resources for sidecar containers are mutable",
                    ));
                } else {
                    changed = true;
                }
            }
        }
    }
    if changed || without_resources(&new_spec) != without_resources(&old_spec) {
        causes.push(field::forbidden(
            "spec",
            "only cpu and memory resources are mutable",
        ));
    }
    causes
}

/// The validation of a write of a built-in kind through `sub`: kube's `ValidateX` on create,
/// `ValidateXUpdate` on update, the status-only `ValidateXStatusUpdate` through `/status` for
/// the kinds that have one, and nothing here for `ephemeralcontainers` (its own rule runs from
/// [`ephemeral_containers_update`]).
pub fn for_write(
    group: &str,
    resource: &str,
    obj: &Value,
    old: Option<&Value>,
    sub: crate::service::Subresource,
) -> Vec<Cause> {
    use crate::service::Subresource;
    match (sub, old) {
        (Subresource::EphemeralContainers | Subresource::Resize, _) => Vec::new(),
        (Subresource::Status, Some(old)) => status_update(group, resource, obj, old)
            .unwrap_or_else(|| crate::model::workloads::validate(group, resource, obj, Some(old))),
        _ => crate::model::workloads::validate(group, resource, obj, old),
    }
}

/// Whether a cause of validating the host's own write may be let pass: the `kubernetes`
/// Service's Endpoints and EndpointSlice advertise a loopback address when the host listens on
/// one (kube-apiserver refuses to advertise one; turtles is often run on loopback only).
pub fn host_may_store(resource: &str, cause: &Cause) -> bool {
    matches!(resource, "endpoints" | "endpointslices")
        && cause.message.contains("may not be in the loopback range")
}

/// The status checks of kube's `ValidateStatefulSetStatus` and
/// `ValidatePodDisruptionBudgetStatus`: counts are non-negative, and a part is no more than its
/// whole (a CronJob's status has no count; Deployments, ReplicaSets, DaemonSets and Jobs are
/// `apps.rs`' and `batch.rs`').
fn status_counts(resource: &str, obj: &Value) -> Vec<Cause> {
    let (counts, bounds): (&[&str], &[(&str, &str, &str)]) = match resource {
        "statefulsets" => (
            &[
                "replicas",
                "readyReplicas",
                "currentReplicas",
                "updatedReplicas",
                "availableReplicas",
                "observedGeneration",
                "collisionCount",
            ],
            &[
                (
                    "readyReplicas",
                    "replicas",
                    "cannot be greater than status.replicas",
                ),
                (
                    "currentReplicas",
                    "replicas",
                    "cannot be greater than status.replicas",
                ),
                (
                    "updatedReplicas",
                    "replicas",
                    "cannot be greater than status.replicas",
                ),
                (
                    "availableReplicas",
                    "replicas",
                    "cannot be greater than status.replicas",
                ),
                (
                    "availableReplicas",
                    "readyReplicas",
                    "cannot be greater than status.readyReplicas",
                ),
            ],
        ),
        "poddisruptionbudgets" => (
            &[
                "disruptionsAllowed",
                "currentHealthy",
                "desiredHealthy",
                "expectedPods",
            ],
            &[],
        ),
        _ => (&[], &[]),
    };
    let Some(status) = obj.get("status") else {
        return Vec::new();
    };
    let n = |k: &str| status.get(k).and_then(Value::as_i64);
    let mut out = Vec::new();
    for k in counts {
        if let Some(v) = n(k).filter(|v| *v < 0) {
            out.push(field::invalid(
                &format!("status.{k}"),
                &Value::from(v),
                "must be greater than or equal to 0",
            ));
        }
    }
    for (part, whole, msg) in bounds {
        if let (Some(p), Some(w)) = (n(part), n(whole)) {
            if p > w {
                out.push(field::invalid(
                    &format!("status.{part}"),
                    &Value::from(p),
                    msg,
                ));
            }
        }
    }
    out
}

/// What kube's strategies change in a write before validating it, beyond defaults: a
/// PersistentVolumeClaim's data sources (`storage::prepare_pvc_spec`), a DaemonSet's template
/// generation, a Lease's coordinated-election fields.
pub fn prepare(group: &str, resource: &str, obj: &mut Value, old: Option<&Value>) {
    match (group, resource) {
        ("", "persistentvolumeclaims") => {
            if let Some(spec) = obj.get_mut("spec") {
                storage::prepare_pvc_spec(spec, old.and_then(|o| o.get("spec")));
            }
        }
        ("apps", "daemonsets") => prepare_daemon_set(obj, old),
        ("coordination.k8s.io", "leases") => {
            // kube 1.34's lease strategy: CoordinatedLeaderElection is off (beta, not on by
            // default), so `strategy` and `preferredHolder` are dropped unless the stored
            // Lease already has them.
            for field in ["strategy", "preferredHolder"] {
                let kept = old.and_then(|o| o.pointer(&format!("/spec/{field}")));
                if kept.is_none_or(Value::is_null) {
                    if let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) {
                        spec.remove(field);
                    }
                }
            }
        }
        ("apps", "statefulsets") => {
            // kube 1.34's dropStatefulSetDisabledFields: MaxUnavailableStatefulSet is off, so
            // `maxUnavailable` is dropped unless the stored set already has it.
            const MAX_UNAVAILABLE: &str = "/spec/updateStrategy/rollingUpdate/maxUnavailable";
            if old.and_then(|o| o.pointer(MAX_UNAVAILABLE)).is_none() {
                if let Some(ru) = obj
                    .pointer_mut("/spec/updateStrategy/rollingUpdate")
                    .and_then(Value::as_object_mut)
                {
                    ru.remove("maxUnavailable");
                }
            }
        }
        _ => {}
    }
}

/// What kube's status strategies change in a `/status` write before validating it: a
/// PersistentVolume's `lastPhaseTransitionTime` is now when its phase changes (unless the
/// writer set a new one), and stays when it does not.
pub fn prepare_status(group: &str, resource: &str, obj: &mut Value, old: Option<&Value>) {
    if (group, resource) != ("", "persistentvolumes") {
        return;
    }
    const AT: &str = "lastPhaseTransitionTime";
    let old_status = old.and_then(|o| o.get("status"));
    let phase = |s: Option<&Value>| s.and_then(|s| s.get("phase")).cloned();
    let old_phase = phase(old_status);
    let old_at = old_status
        .and_then(|s| s.get(AT))
        .filter(|t| !t.is_null())
        .cloned();
    let Some(status) = obj.get_mut("status").and_then(Value::as_object_mut) else {
        return;
    };
    let new_at = status.get(AT).filter(|t| !t.is_null()).cloned();
    if old_phase.as_ref() == status.get("phase") {
        if new_at.is_none() {
            if let Some(at) = old_at {
                status.insert(AT.into(), at);
            }
        }
    } else if new_at.is_none() || new_at == old_at {
        status.insert(AT.into(), Value::from(crate::model::meta::now_rfc3339()));
    }
}

/// `deprecated.daemonset.template.generation`: apps/v1's form of a DaemonSet's
/// `spec.templateGeneration`.
pub const DAEMON_SET_TEMPLATE_GENERATION: &str = "deprecated.daemonset.template.generation";

/// kube's DaemonSet strategy: the template generation is the server's, 1 at create and one more
/// at each update that changes the template (what a client writes there is overwritten, as
/// kube's `PrepareForUpdate` does).
fn prepare_daemon_set(obj: &mut Value, old: Option<&Value>) {
    let generation = match old {
        None => 1,
        Some(old) => {
            // (A set stored before turtles kept the annotation counts as generation 1.)
            let before = old
                .pointer("/metadata/annotations")
                .and_then(|a| a.get(DAEMON_SET_TEMPLATE_GENERATION))
                .and_then(Value::as_str)
                .and_then(|g| g.parse::<i64>().ok())
                .unwrap_or(1);
            // Compared as kube's Semantic.DeepEqual: an empty field is an absent one.
            let template = |v: &Value| {
                v.pointer("/spec/template")
                    .map(crate::model::workloads::semantic)
            };
            let changed = template(old) != template(obj);
            before.saturating_add(i64::from(changed))
        }
    };
    let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) else {
        return;
    };
    let annotations = meta
        .entry("annotations")
        .or_insert_with(|| Value::Object(Default::default()));
    if !annotations.is_object() {
        *annotations = Value::Object(Default::default());
    }
    if let Some(a) = annotations.as_object_mut() {
        a.insert(
            DAEMON_SET_TEMPLATE_GENERATION.into(),
            Value::String(generation.to_string()),
        );
    }
}

/// kube's status-update validation of the kinds whose `/status` writes are validated on
/// their own (`None`: the kind's whole validation runs, as before these existed).
fn status_update(group: &str, resource: &str, obj: &Value, old: &Value) -> Option<Vec<Cause>> {
    match (group, resource) {
        ("networking.k8s.io", _) => Some(networking::validate_status(resource, obj, old)),
        ("autoscaling", _) | ("", "nodes" | "resourcequotas") => {
            Some(misc::validate_status(group, resource, obj, old))
        }
        ("storage.k8s.io", _) | ("", "persistentvolumeclaims" | "persistentvolumes") => {
            Some(storage::validate_status(group, resource, obj, old))
        }
        ("discovery.k8s.io", _) | ("", "services" | "endpoints") => {
            Some(service::validate_status(group, resource, obj, old))
        }
        ("", "pods") => Some(crate::model::workloads::pod_status_update(obj, old)),
        ("admissionregistration.k8s.io", "validatingadmissionpolicies")
        | ("flowcontrol.apiserver.k8s.io", _)
        | ("apiregistration.k8s.io", _) => {
            Some(admission::validate_status(group, resource, obj, old))
        }
        ("apps", "deployments") => Some(apps::deployment_status(obj, old)),
        ("apps", "replicasets") => Some(apps::replica_set_status(obj, old)),
        ("apps", "daemonsets") => Some(apps::daemon_set_status(obj, old)),
        ("batch", "jobs") => Some(batch::job_status(obj, old)),
        ("apps", _) | ("batch", "cronjobs") | ("policy", "poddisruptionbudgets") => {
            Some(status_counts(resource, obj))
        }
        ("", "replicationcontrollers") => Some(pod::validate_status(resource, obj, old)),
        _ => None,
    }
}

/// Causes for the kinds this module knows (`old` is the stored object on update).
pub fn validate(group: &str, resource: &str, obj: &Value, old: Option<&Value>) -> Vec<Cause> {
    match (group, resource) {
        ("", "configmaps") => config_map(obj, old),
        ("", "secrets") => secret(obj, old),
        ("", "namespaces") => namespace_finalizers(obj, old),
        (crate::priority::GROUP, crate::priority::RESOURCE) => crate::priority::validate(obj, old),
        (super::disruption::GROUP, super::disruption::RESOURCE) => {
            super::disruption::validate(obj, old)
        }
        ("networking.k8s.io", _) => networking::validate(resource, obj, old),
        ("storage.k8s.io", _) | ("", "persistentvolumeclaims" | "persistentvolumes") => {
            storage::validate(group, resource, obj, old)
        }
        ("discovery.k8s.io", _) | ("", "services" | "endpoints") => {
            service::validate(group, resource, obj, old)
        }
        ("", "replicationcontrollers" | "podtemplates") => pod::validate(resource, obj, old),
        (
            "admissionregistration.k8s.io"
            | "flowcontrol.apiserver.k8s.io"
            | "apiregistration.k8s.io",
            _,
        ) => admission::validate(group, resource, obj, old),
        ("", "events" | "serviceaccounts" | "limitranges")
        | ("events.k8s.io", "events")
        | ("apps", "controllerrevisions")
        | ("node.k8s.io", "runtimeclasses") => core_misc::validate(group, resource, obj, old),
        ("autoscaling" | "coordination.k8s.io" | "rbac.authorization.k8s.io", _)
        | ("", "nodes" | "resourcequotas") => misc::validate(group, resource, obj, old),
        _ => Vec::new(),
    }
}

/// kube's `validateFinalizerName` of each of a Namespace's `spec.finalizers` (on create, and
/// on `finalize`, the only write that changes them: the field is indexed there, as kube's
/// `ValidateNamespaceFinalizeUpdate` reports it); a write that leaves them as stored is not
/// checked again, so a namespace stored before this check stays writable.
fn namespace_finalizers(obj: &Value, old: Option<&Value>) -> Vec<Cause> {
    let list = |v: &Value| {
        v.pointer("/spec/finalizers")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    };
    let now = list(obj);
    if old.is_some_and(|o| list(o) == now) {
        return Vec::new();
    }
    let mut causes = Vec::new();
    for (i, f) in now.iter().enumerate() {
        let name = f.as_str().unwrap_or_default();
        let field = if old.is_some() {
            format!("spec.finalizers[{i}]")
        } else {
            "spec.finalizers".to_owned()
        };
        for msg in crate::schema::objectmeta::qualified_name(name) {
            causes.push(Cause::new(
                "FieldValueInvalid",
                &field,
                format!("Invalid value: {}: {msg}", quoted(name)),
            ));
        }
        if !name.contains('/') && !matches!(name, "kubernetes" | "orphan" | "foregroundDeletion") {
            causes.push(Cause::new(
                "FieldValueInvalid",
                &field,
                format!(
                    "Invalid value: {}: name is neither a standard finalizer name nor is it fully qualified",
                    quoted(name)
                ),
            ));
        }
    }
    causes
}

/// Go's `%q` of a string, which kube's `Invalid value` messages use.
fn quoted(s: &str) -> String {
    field::quoted(s)
}

/// `validation.IsConfigMapKey`.
fn config_key_errors(key: &str) -> Vec<&'static str> {
    let mut errs = Vec::new();
    if key.len() > 253 {
        errs.push("must be no more than 253 characters");
    }
    if key.is_empty()
        || !key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
    {
        errs.push(
            "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. \
             'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is \
             '[-._a-zA-Z0-9]+')",
        );
    }
    if key == "." {
        errs.push("must not be '.'");
    } else if key == ".." {
        errs.push("must not be '..'");
    } else if key.starts_with("..") {
        errs.push("must not start with '..'");
    }
    errs
}

fn map_of<'a>(obj: &'a Value, field: &str) -> impl Iterator<Item = (&'a String, &'a Value)> {
    obj.get(field)
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
}

fn key_causes(obj: &Value, field: &str, causes: &mut Vec<Cause>) {
    for (key, _) in map_of(obj, field) {
        for msg in config_key_errors(key) {
            causes.push(Cause::new(
                "FieldValueInvalid",
                &format!("{field}[{key}]"),
                format!("Invalid value: {}: {msg}", quoted(key)),
            ));
        }
    }
}

/// The decoded length of a base64 value (what kube counts for `[]byte` fields).
fn decoded_len(v: &Value) -> usize {
    v.as_str()
        .map(|s| {
            base64::engine::general_purpose::STANDARD
                .decode(s)
                .map_or(s.len(), |b| b.len())
        })
        .unwrap_or(0)
}

fn immutable(obj: &Value) -> bool {
    obj.get("immutable").and_then(Value::as_bool) == Some(true)
}

/// `ValidateConfigMap` and `ValidateConfigMapUpdate`.
fn config_map(obj: &Value, old: Option<&Value>) -> Vec<Cause> {
    let mut causes = Vec::new();
    if let Some(old) = old.filter(|o| immutable(o)) {
        if !immutable(obj) {
            causes.push(Cause::new(
                "FieldValueForbidden",
                "immutable",
                IMMUTABLE_SET,
            ));
        }
        for field in ["data", "binaryData"] {
            if obj.get(field) != old.get(field) {
                causes.push(Cause::new("FieldValueForbidden", field, IMMUTABLE_SET));
            }
        }
    }
    key_causes(obj, "data", &mut causes);
    let binary = obj.get("binaryData").and_then(Value::as_object);
    for (key, _) in map_of(obj, "data") {
        if binary.is_some_and(|b| b.contains_key(key)) {
            causes.push(Cause::new(
                "FieldValueInvalid",
                &format!("data[{key}]"),
                format!(
                    "Invalid value: {}: duplicate of key present in binaryData",
                    quoted(key)
                ),
            ));
        }
    }
    key_causes(obj, "binaryData", &mut causes);
    let size: usize = map_of(obj, "data")
        .map(|(_, v)| v.as_str().map_or(0, str::len))
        .sum::<usize>()
        + map_of(obj, "binaryData")
            .map(|(_, v)| decoded_len(v))
            .sum::<usize>();
    if size > MAX_DATA_BYTES {
        // kube's `field.NewPath("")`, which prints as `[]`.
        causes.push(Cause::new(
            "FieldValueTooLong",
            "[]",
            format!("Too long: may not be more than {MAX_DATA_BYTES} bytes"),
        ));
    }
    causes
}

/// `ValidateSecret` and `ValidateSecretUpdate`.
fn secret(obj: &Value, old: Option<&Value>) -> Vec<Cause> {
    let mut causes = Vec::new();
    let ty = obj.get("type").and_then(Value::as_str).unwrap_or("");
    if let Some(old) = old {
        let old_ty = old.get("type").and_then(Value::as_str).unwrap_or("");
        if ty != old_ty {
            causes.push(Cause::new(
                "FieldValueInvalid",
                "type",
                format!("Invalid value: {}: field is immutable", quoted(ty)),
            ));
        }
        if immutable(old) {
            if !immutable(obj) {
                causes.push(Cause::new(
                    "FieldValueForbidden",
                    "immutable",
                    IMMUTABLE_SET,
                ));
            }
            if obj.get("data") != old.get("data") {
                causes.push(Cause::new("FieldValueForbidden", "data", IMMUTABLE_SET));
            }
        }
    }
    key_causes(obj, "data", &mut causes);
    let size: usize = map_of(obj, "data").map(|(_, v)| decoded_len(v)).sum();
    if size > MAX_DATA_BYTES {
        causes.push(Cause::new(
            "FieldValueTooLong",
            "data",
            format!("Too long: may not be more than {MAX_DATA_BYTES} bytes"),
        ));
    }
    let data = obj.get("data").and_then(Value::as_object);
    let has = |k: &str| data.is_some_and(|d| d.contains_key(k));
    let required = |causes: &mut Vec<Cause>, field: String| {
        causes.push(Cause::new("FieldValueRequired", &field, "Required value"));
    };
    let json_key = |causes: &mut Vec<Cause>, key: &str| {
        let Some(v) = data.and_then(|d| d.get(key)) else {
            required(causes, format!("data[{key}]"));
            return;
        };
        let bytes = v
            .as_str()
            .and_then(|s| base64::engine::general_purpose::STANDARD.decode(s).ok())
            .unwrap_or_default();
        // kube: `json.Unmarshal(bytes, &map[string]interface{}{})`, with Go's error text
        // (`null` is taken: it leaves the map nil).
        if let Err(e) = crate::model::gojson::unmarshal_into_map(&bytes) {
            causes.push(Cause::new(
                "FieldValueInvalid",
                &format!("data[{key}]"),
                format!("Invalid value: \"<secret contents redacted>\": {e}"),
            ));
        }
    };
    match ty {
        "kubernetes.io/service-account-token" => {
            let named = obj
                .pointer("/metadata/annotations/kubernetes.io~1service-account.name")
                .and_then(Value::as_str)
                .is_some_and(|n| !n.is_empty());
            if !named {
                required(
                    &mut causes,
                    "metadata.annotations[kubernetes.io/service-account.name]".into(),
                );
            }
        }
        "kubernetes.io/dockercfg" => json_key(&mut causes, ".dockercfg"),
        "kubernetes.io/dockerconfigjson" => json_key(&mut causes, ".dockerconfigjson"),
        "kubernetes.io/basic-auth" if !has("username") && !has("password") => {
            required(&mut causes, "data[username]".into());
            required(&mut causes, "data[password]".into());
        }
        "kubernetes.io/ssh-auth"
            if data
                .and_then(|d| d.get("ssh-privatekey"))
                .is_none_or(|v| decoded_len(v) == 0) =>
        {
            required(&mut causes, "data[ssh-privatekey]".into());
        }
        "kubernetes.io/tls" => {
            for key in ["tls.crt", "tls.key"] {
                if !has(key) {
                    required(&mut causes, format!("data[{key}]"));
                }
            }
        }
        _ => {}
    }
    causes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_leases_coordinated_election_fields_are_dropped_as_kube_134_drops_them() {
        let lease = || {
            json!({"spec": {"holderIdentity": "a", "strategy": "OldestEmulationVersion",
                            "preferredHolder": "b"}})
        };
        let mut created = lease();
        prepare("coordination.k8s.io", "leases", &mut created, None);
        assert_eq!(created["spec"], json!({"holderIdentity": "a"}));
        let mut updated = lease();
        prepare(
            "coordination.k8s.io",
            "leases",
            &mut updated,
            Some(&json!({"spec": {}})),
        );
        assert_eq!(updated["spec"], json!({"holderIdentity": "a"}));
        // A Lease stored with them keeps them.
        let mut kept = lease();
        prepare("coordination.k8s.io", "leases", &mut kept, Some(&lease()));
        assert_eq!(kept, lease());
    }

    #[test]
    fn a_resize_follows_kubes_rules() {
        let pod = |init_cpu: &str, c_res: Value| {
            serde_json::json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "d"},
                "spec": {"initContainers": [{"name": "i", "image": "x",
                    "resources": {"requests": {"cpu": init_cpu}}}],
                    "containers": [{"name": "c", "image": "x", "resources": c_res}]},
                "status": {"qosClass": "Burstable"}})
        };
        let old = pod("100m", serde_json::json!({"requests": {"cpu": "100m"}}));
        let msgs = |new: &Value| -> Vec<String> {
            pod_resize(new, Some(&old))
                .iter()
                .map(|c| c.to_string())
                .collect()
        };
        // A cpu change, and a limits map added where there was none.
        assert!(msgs(&pod(
            "100m",
            serde_json::json!({"requests": {"cpu": "150m"}})
        ))
        .is_empty());
        assert!(msgs(&pod(
            "100m",
            serde_json::json!({"requests": {"cpu": "100m"}, "limits": {"cpu": "300m"}})
        ))
        .is_empty());
        // A regular init container's resources do not change.
        assert_eq!(
            msgs(&pod("200m", serde_json::json!({"requests": {"cpu": "100m"}}))),
            ["spec.initContainers[0].resources: Forbidden: resources for non-sidecar init containers are immutable"]
        );
        // Removing one request.
        let both = pod(
            "100m",
            serde_json::json!({"requests": {"cpu": "100m", "memory": "1Gi"}}),
        );
        let fewer = pod("100m", serde_json::json!({"requests": {"cpu": "100m"}}));
        assert!(pod_resize(&fewer, Some(&both))
            .iter()
            .any(|c| c.to_string() == "spec.containers[0].resources.requests: Forbidden: resource requests cannot be removed"));
    }

    #[test]
    fn a_daemon_set_template_generation_is_the_servers() {
        let ds = |image: &str, annotation: Option<&str>| {
            let mut d = serde_json::json!({"metadata": {"name": "d"},
                "spec": {"template": {"spec": {"containers": [{"name": "c", "image": image}]}}}});
            if let Some(a) = annotation {
                d["metadata"]["annotations"] =
                    serde_json::json!({DAEMON_SET_TEMPLATE_GENERATION: a});
            }
            d
        };
        let generation =
            |d: &Value| d["metadata"]["annotations"][DAEMON_SET_TEMPLATE_GENERATION].clone();
        let mut created = ds("a", Some("7"));
        prepare("apps", "daemonsets", &mut created, None);
        assert_eq!(generation(&created), "1");
        let mut same = ds("a", None);
        prepare("apps", "daemonsets", &mut same, Some(&created));
        assert_eq!(generation(&same), "1");
        let mut changed = ds("b", Some("1"));
        prepare("apps", "daemonsets", &mut changed, Some(&created));
        assert_eq!(generation(&changed), "2");
        // An empty field written where there was none is no change of the template.
        let mut empty = ds("a", None);
        empty["spec"]["template"]["metadata"] = serde_json::json!({"annotations": {}});
        prepare("apps", "daemonsets", &mut empty, Some(&created));
        assert_eq!(generation(&empty), "1");
    }
    use serde_json::json;

    fn messages(causes: &[Cause]) -> Vec<String> {
        causes
            .iter()
            .map(|c| format!("{}: {}", c.field, c.message))
            .collect()
    }

    #[test]
    fn config_map_keys_and_sizes_as_kube_checks_them() {
        let ok = json!({"data": {"a.b_C-1": "x"}, "binaryData": {"bin": "AAE="}});
        assert!(validate("", "configmaps", &ok, None).is_empty());
        let bad =
            json!({"data": {"a b": "x", "..x": "y", "dup": "z"}, "binaryData": {"dup": "AA=="}});
        let m = messages(&validate("", "configmaps", &bad, None));
        assert!(m.contains(&"data[a b]: Invalid value: \"a b\": a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')".to_owned()), "{m:?}");
        assert!(
            m.contains(&"data[..x]: Invalid value: \"..x\": must not start with '..'".to_owned()),
            "{m:?}"
        );
        assert!(
            m.contains(
                &"data[dup]: Invalid value: \"dup\": duplicate of key present in binaryData"
                    .to_owned()
            ),
            "{m:?}"
        );
        let big = json!({"data": {"a": "x".repeat(MAX_DATA_BYTES), "b": "y"}});
        assert_eq!(
            messages(&validate("", "configmaps", &big, None)),
            vec!["[]: Too long: may not be more than 1048576 bytes"]
        );
    }

    #[test]
    fn immutable_config_maps_and_secrets_keep_their_data() {
        let old = json!({"immutable": true, "data": {"a": "1"}});
        let same =
            json!({"immutable": true, "data": {"a": "1"}, "metadata": {"labels": {"x": "y"}}});
        assert!(validate("", "configmaps", &same, Some(&old)).is_empty());
        let changed = json!({"data": {"a": "2"}});
        assert_eq!(
            messages(&validate("", "configmaps", &changed, Some(&old))),
            vec![
                "immutable: Forbidden: field is immutable when `immutable` is set",
                "data: Forbidden: field is immutable when `immutable` is set"
            ]
        );
        let old = json!({"type": "Opaque", "immutable": true, "data": {"a": "MQ=="}});
        let changed =
            json!({"type": "kubernetes.io/tls", "immutable": true, "data": {"a": "Mg=="}});
        assert_eq!(
            messages(&validate("", "secrets", &changed, Some(&old))),
            vec![
                "type: Invalid value: \"kubernetes.io/tls\": field is immutable",
                "data: Forbidden: field is immutable when `immutable` is set",
                "data[tls.crt]: Required value",
                "data[tls.key]: Required value"
            ]
        );
    }

    #[test]
    fn secret_types_require_their_keys() {
        let m = |v: Value| messages(&validate("", "secrets", &v, None));
        assert_eq!(
            m(json!({"type": "kubernetes.io/service-account-token"})),
            vec!["metadata.annotations[kubernetes.io/service-account.name]: Required value"]
        );
        assert_eq!(
            m(json!({"type": "kubernetes.io/basic-auth", "data": {}})),
            vec![
                "data[username]: Required value",
                "data[password]: Required value"
            ]
        );
        assert!(
            m(json!({"type": "kubernetes.io/basic-auth", "data": {"password": ""}})).is_empty()
        );
        // Go's `json.Unmarshal` into a `map[string]interface{}`: its errors word for word, and
        // `null` taken.
        let docker = |ty: &str, key: &str, body: &str| {
            let data = base64::engine::general_purpose::STANDARD.encode(body);
            m(json!({"type": ty, "data": {key: data}}))
        };
        let redacted = |key: &str, e: &str| {
            vec![format!(
                "data[{key}]: Invalid value: \"<secret contents redacted>\": {e}"
            )]
        };
        for (body, e) in [
            (
                "{nope",
                "invalid character 'n' looking for beginning of object key string",
            ),
            (
                "notjson",
                "invalid character 'o' in literal null (expecting 'u')",
            ),
            (
                "[]",
                "json: cannot unmarshal array into Go value of type map[string]interface {}",
            ),
            ("{\"a\":1}x", "invalid character 'x' after top-level value"),
            ("", "unexpected end of JSON input"),
        ] {
            assert_eq!(
                docker("kubernetes.io/dockerconfigjson", ".dockerconfigjson", body),
                redacted(".dockerconfigjson", e),
                "{body:?}"
            );
            assert_eq!(
                docker("kubernetes.io/dockercfg", ".dockercfg", body),
                redacted(".dockercfg", e),
                "{body:?}"
            );
        }
        for body in ["null", "{}", "{\"auths\": {}}"] {
            assert!(
                docker("kubernetes.io/dockerconfigjson", ".dockerconfigjson", body).is_empty(),
                "{body:?}"
            );
        }
        assert!(
            m(json!({"type": "kubernetes.io/ssh-auth", "data": {"ssh-privatekey": ""}}))
                == vec!["data[ssh-privatekey]: Required value"]
        );
        assert!(m(json!({"type": "example.com/custom", "data": {"k": "dg=="}})).is_empty());
    }
}
