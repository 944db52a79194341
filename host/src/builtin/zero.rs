//! The zero-valued fields kube always writes. kube answers with its Go types encoded by
//! `encoding/json`, which writes a struct field that is not a pointer even with `omitempty`
//! (`omitempty` does not apply to structs) and every field without `omitempty` at its zero
//! value. So a Deployment that no controller has written yet answers `"status": {}`, a
//! ReplicaSet `"status": {"replicas": 0}`, a Node `status.daemonEndpoints.kubeletEndpoint.Port:
//! 0`. The published definitions do not tell pointers from structs nor `omitempty` (their
//! `required` lists also leave out fields marked `+optional` without `omitempty`), so this table
//! lists them per kind, from the json tags of kube 1.34's types (`k8s.io/api` v0.34.0,
//! `staging/src/k8s.io/api/<group>/<version>/types.go`; APIServices:
//! `staging/src/k8s.io/kube-aggregator/pkg/apis/apiregistration/v1/types.go`; of them only
//! `metav1.ObjectMeta.creationTimestamp` is `omitzero` in 1.34, so an embedded template's
//! empty `metadata` is `{}`: [`fill_template_metadata`]).
//!
//! What is listed: non-pointer structs and zero scalars that a valid object can have at their
//! zero value, in the Go structs' field order (so `spec: {}` only where an empty spec is valid).
//! What is not: fields Go writes as `null` (nil slices, maps and pointers without `omitempty`),
//! which turtles omits
//! as its decoder does (clients read both alike); fields validation requires to be set (a
//! Deployment's `spec.template`, an Ingress's `spec`, an HPA's `spec.maxReplicas`), which a
//! stored object always has, so listing them would change nothing but what validation sees of
//! an invalid write; CRDs and turtles' own kinds.
//!
//! [`fill`] adds what an object lacks (recursively: a Node's `nodeInfo` that names only its
//! `kubeletVersion` gets the other nine strings). The service applies it with kube's defaults,
//! after decoding, on every write (create, update, patch, apply, `/status`) and to the stored
//! object an update starts from, so stored objects have these fields and reads, lists and
//! watches show them; `apply::typed::zero_object`, what a create's managed fields are computed
//! against, has them too, so a create owns none of them (as kube's `runtime.New()` of the kind
//! has them). `status` of a kind with a status subresource is never in a main write's managed
//! fields anyway.

use std::sync::OnceLock;

use serde_json::{Map, Value};

/// `(group, version, kind, the zero-valued fields as JSON)`.
const ZERO_FIELDS: &[(&str, &str, &str, &str)] = &[
    // core/v1
    ("", "v1", "Namespace", r#"{"spec": {}, "status": {}}"#),
    (
        "",
        "v1",
        "Node",
        // NodeStatus.DaemonEndpoints (NodeDaemonEndpoints.KubeletEndpoint, DaemonEndpoint.Port
        // `json:"Port"`) and NodeStatus.NodeInfo (NodeSystemInfo: ten strings without
        // `omitempty`; `swap` is a pointer).
        r#"{"spec": {}, "status": {
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 0}},
            "nodeInfo": {"machineID": "", "systemUUID": "", "bootID": "", "kernelVersion": "",
                "osImage": "", "containerRuntimeVersion": "", "kubeletVersion": "",
                "kubeProxyVersion": "", "operatingSystem": "", "architecture": ""}}}"#,
    ),
    ("", "v1", "Pod", r#"{"status": {}}"#),
    (
        "",
        "v1",
        "Service",
        r#"{"spec": {}, "status": {"loadBalancer": {}}}"#,
    ),
    ("", "v1", "PersistentVolumeClaim", r#"{"status": {}}"#),
    ("", "v1", "PersistentVolume", r#"{"status": {}}"#),
    // Event.Source (an EventSource, its fields `omitempty`), ReportingController
    // (`json:"reportingComponent"`) and ReportingInstance; `eventTime` (a zero MicroTime) is
    // Go's `null`, left out as above.
    (
        "",
        "v1",
        "Event",
        r#"{"source": {}, "reportingComponent": "", "reportingInstance": ""}"#,
    ),
    (
        "",
        "v1",
        "ReplicationController",
        r#"{"status": {"replicas": 0}}"#,
    ),
    ("", "v1", "ResourceQuota", r#"{"spec": {}, "status": {}}"#),
    // apps/v1
    ("apps", "v1", "Deployment", r#"{"status": {}}"#),
    ("apps", "v1", "ReplicaSet", r#"{"status": {"replicas": 0}}"#),
    (
        "apps",
        "v1",
        "StatefulSet",
        // StatefulSetSpec.ServiceName `json:"serviceName"` (`+optional` since 1.33, still
        // without `omitempty`).
        r#"{"spec": {"serviceName": ""}, "status": {"replicas": 0, "availableReplicas": 0}}"#,
    ),
    (
        "apps",
        "v1",
        "DaemonSet",
        r#"{"status": {"currentNumberScheduled": 0, "numberMisscheduled": 0,
            "desiredNumberScheduled": 0, "numberReady": 0}}"#,
    ),
    ("apps", "v1", "ControllerRevision", r#"{"revision": 0}"#),
    // batch/v1
    ("batch", "v1", "Job", r#"{"status": {}}"#),
    ("batch", "v1", "CronJob", r#"{"status": {}}"#),
    // autoscaling: v2's `currentReplicas` has `omitempty`, v1's does not (v1 is converted from
    // the stored v2 by `conversion::HPA_V1`, which keeps this so).
    (
        "autoscaling",
        "v2",
        "HorizontalPodAutoscaler",
        r#"{"status": {"desiredReplicas": 0}}"#,
    ),
    (
        "autoscaling",
        "v1",
        "HorizontalPodAutoscaler",
        r#"{"status": {"currentReplicas": 0, "desiredReplicas": 0}}"#,
    ),
    // policy/v1
    (
        "policy",
        "v1",
        "PodDisruptionBudget",
        r#"{"spec": {}, "status": {"disruptionsAllowed": 0, "currentHealthy": 0,
            "desiredHealthy": 0, "expectedPods": 0}}"#,
    ),
    // networking.k8s.io/v1
    (
        "networking.k8s.io",
        "v1",
        "Ingress",
        r#"{"status": {"loadBalancer": {}}}"#,
    ),
    (
        "networking.k8s.io",
        "v1",
        "NetworkPolicy",
        // NetworkPolicySpec.PodSelector is a `metav1.LabelSelector`, not a pointer.
        r#"{"spec": {"podSelector": {}}}"#,
    ),
    (
        "networking.k8s.io",
        "v1",
        "ServiceCIDR",
        r#"{"status": {}}"#,
    ),
    // storage.k8s.io/v1: VolumeAttachmentStatus.Attached `json:"attached"`.
    (
        "storage.k8s.io",
        "v1",
        "VolumeAttachment",
        r#"{"status": {"attached": false}}"#,
    ),
    // scheduling.k8s.io/v1: PriorityClass.Value `json:"value"`.
    (
        "scheduling.k8s.io",
        "v1",
        "PriorityClass",
        r#"{"value": 0}"#,
    ),
    ("coordination.k8s.io", "v1", "Lease", r#"{"spec": {}}"#),
    (
        "certificates.k8s.io",
        "v1",
        "CertificateSigningRequest",
        r#"{"status": {}}"#,
    ),
    (
        "admissionregistration.k8s.io",
        "v1",
        "ValidatingAdmissionPolicy",
        r#"{"status": {}}"#,
    ),
    (
        "apiregistration.k8s.io",
        "v1",
        "APIService",
        r#"{"status": {}}"#,
    ),
    (
        "flowcontrol.apiserver.k8s.io",
        "v1",
        "FlowSchema",
        r#"{"status": {}}"#,
    ),
    (
        "flowcontrol.apiserver.k8s.io",
        "v1",
        "PriorityLevelConfiguration",
        r#"{"status": {}}"#,
    ),
    // resource.k8s.io/v1: DeviceClaim (`spec.devices`) is a struct.
    ("resource.k8s.io", "v1", "DeviceClass", r#"{"spec": {}}"#),
    (
        "resource.k8s.io",
        "v1",
        "ResourceClaim",
        r#"{"spec": {"devices": {}}, "status": {}}"#,
    ),
    (
        "resource.k8s.io",
        "v1",
        "ResourceClaimTemplate",
        r#"{"spec": {"spec": {"devices": {}}}}"#,
    ),
];

/// An entry of [`ZERO_FIELDS`], parsed.
type Entry = (&'static str, &'static str, &'static str, Map<String, Value>);

/// [`ZERO_FIELDS`], parsed once.
fn table() -> &'static [Entry] {
    static TABLE: OnceLock<Vec<Entry>> = OnceLock::new();
    TABLE.get_or_init(|| {
        ZERO_FIELDS
            .iter()
            .map(|(g, v, k, text)| {
                // Every entry is an object (a test checks it); a broken one counts as empty.
                let fields = match serde_json::from_str::<Value>(text) {
                    Ok(Value::Object(m)) => m,
                    _ => Map::new(),
                };
                (*g, *v, *k, fields)
            })
            .collect()
    })
}

/// The zero-valued fields kube writes for every object of the built-in kind `group/version,
/// Kind=kind`, if it has any.
pub fn fields(group: &str, version: &str, kind: &str) -> Option<&'static Map<String, Value>> {
    table()
        .iter()
        .find(|(g, v, k, _)| *g == group && *v == version && *k == kind)
        .map(|(_, _, _, fields)| fields)
}

/// Give `obj`, of the built-in kind `group/version, Kind=kind`, the zero-valued fields it lacks
/// (absent or `null`, as Go's decoder leaves a `null` field at its zero value), inside the
/// objects it has too. A field of another type than its zero value's is left for validation.
pub fn fill(group: &str, version: &str, kind: &str, obj: &mut Value) {
    fill_template_metadata(group, kind, obj);
    let (Some(zero), Some(map)) = (fields(group, version, kind), obj.as_object_mut()) else {
        return;
    };
    fill_map(map, zero);
}

/// Where a kind embeds an object template (JSON pointers; `*` is every item of a list).
const TEMPLATES: &[(&str, &str, &[&str])] = &[
    ("", "ReplicationController", &["/spec/template"]),
    ("", "PodTemplate", &["/template"]),
    ("apps", "Deployment", &["/spec/template"]),
    ("apps", "ReplicaSet", &["/spec/template"]),
    ("apps", "DaemonSet", &["/spec/template"]),
    (
        "apps",
        "StatefulSet",
        &["/spec/template", "/spec/volumeClaimTemplates/*"],
    ),
    ("batch", "Job", &["/spec/template"]),
    (
        "batch",
        "CronJob",
        &["/spec/jobTemplate", "/spec/jobTemplate/spec/template"],
    ),
    ("resource.k8s.io", "ResourceClaimTemplate", &["/spec"]),
];

/// A template's `metadata` (an embedded `metav1.ObjectMeta`, a struct Go always writes) is
/// `{}` when empty: since apimachinery 0.34 its zero `creationTimestamp` is `omitzero`, so kube
/// 1.34 answers `metadata: {}` where 1.33 answered `metadata: {creationTimestamp: null}`. Only
/// inside a template the object has (a missing template is validation's to report).
fn fill_template_metadata(group: &str, kind: &str, obj: &mut Value) {
    let Some((_, _, paths)) = TEMPLATES.iter().find(|(g, k, _)| *g == group && *k == kind) else {
        return;
    };
    for path in *paths {
        let (list, item) = match path.strip_suffix("/*") {
            Some(list) => (Some(list), None),
            None => (None, Some(*path)),
        };
        let mut give = |t: &mut Value| {
            if let Some(t) = t.as_object_mut() {
                if t.get("metadata").is_none_or(Value::is_null) {
                    t.insert("metadata".into(), Value::Object(Map::new()));
                }
            }
        };
        if let Some(t) = item.and_then(|p| obj.pointer_mut(p)) {
            give(t);
        }
        if let Some(items) = list
            .and_then(|p| obj.pointer_mut(p))
            .and_then(Value::as_array_mut)
        {
            items.iter_mut().for_each(&mut give);
        }
    }
}

fn fill_map(map: &mut Map<String, Value>, zero: &Map<String, Value>) {
    for (key, z) in zero {
        if map.get(key).is_none_or(Value::is_null) {
            map.insert(key.clone(), z.clone());
        } else if let (Some(Value::Object(inner)), Value::Object(z)) = (map.get_mut(key), z) {
            fill_map(inner, z);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_entry_is_an_object_of_a_served_kind_and_known_fields() {
        let defs = crate::builtin::definitions::get();
        for (group, version, kind, text) in ZERO_FIELDS {
            let parsed: Value = serde_json::from_str(text).unwrap();
            assert!(parsed.is_object(), "{group}/{version} {kind}");
            assert!(
                crate::builtin::RESOURCES
                    .iter()
                    .any(|b| b.group == *group && b.version == *version && b.kind == *kind),
                "{group}/{version} {kind} is not served"
            );
            // Each top-level field is one the kind's definition has.
            let name = defs.name_of(group, version, kind).unwrap();
            let def = defs.get(name).unwrap();
            for field in parsed.as_object().unwrap().keys() {
                assert!(
                    def["properties"].get(field).is_some(),
                    "{kind} has no field {field}"
                );
            }
        }
    }

    #[test]
    fn fills_what_is_missing_and_keeps_what_is_set() {
        let mut rs = json!({"metadata": {"name": "r"}, "spec": {"replicas": 2}});
        fill("apps", "v1", "ReplicaSet", &mut rs);
        assert_eq!(rs["status"], json!({"replicas": 0}));
        let mut rs = json!({"status": {"replicas": 3, "readyReplicas": 1}});
        fill("apps", "v1", "ReplicaSet", &mut rs);
        assert_eq!(rs["status"], json!({"replicas": 3, "readyReplicas": 1}));
        let mut d = json!({"status": null});
        fill("apps", "v1", "Deployment", &mut d);
        assert_eq!(d["status"], json!({}));
        let mut node = json!({"status": {"nodeInfo": {"kubeletVersion": "v1.34.0"}}});
        fill("", "v1", "Node", &mut node);
        assert_eq!(node["spec"], json!({}));
        assert_eq!(
            node["status"]["daemonEndpoints"],
            json!({"kubeletEndpoint": {"Port": 0}})
        );
        let info = node["status"]["nodeInfo"].as_object().unwrap();
        assert_eq!(info.len(), 10);
        assert_eq!(info["kubeletVersion"], "v1.34.0");
        assert!(info
            .iter()
            .all(|(k, v)| k == "kubeletVersion" || v.as_str() == Some("")));
        // Kinds without zero fields, and values of the wrong type, are left alone.
        let mut cm = json!({"data": {}});
        fill("", "v1", "ConfigMap", &mut cm);
        assert_eq!(cm, json!({"data": {}}));
        let mut bad = json!({"status": "x"});
        fill("apps", "v1", "ReplicaSet", &mut bad);
        assert_eq!(bad["status"], "x");
    }
}
