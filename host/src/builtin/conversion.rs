//! Built-in kinds served in one group-version and stored in another, as kube stores
//! `events.k8s.io/v1` Events as the core `v1` Events they are: both APIs see the same objects.
//! A [`Conversion`] names the stored resource and converts each way; the service applies it on
//! every write (`to_storage`) and read (`from_storage`), watches included.

use serde_json::{Map, Value};

/// How a served version maps to the stored one.
#[derive(Debug)]
pub struct Conversion {
    /// The stored resource's key prefix (`events`: core Events).
    pub stored_group_resource: &'static str,
    /// The stored objects' `apiVersion`.
    pub stored_api_version: &'static str,
    /// Served shape -> stored shape (`apiVersion` is set by the caller).
    pub to_storage: fn(&mut Map<String, Value>),
    /// Stored shape -> served shape (`apiVersion` is set by the caller).
    pub from_storage: fn(&mut Map<String, Value>),
}

/// `events.k8s.io/v1` Event fields and the core `v1` Event fields they are stored as (kube's
/// `Convert_v1_Event_To_core_Event`); the rest (`metadata`, `reason`, `type`, `action`,
/// `related`, `reportingInstance`, `eventTime`, `series`) have the same names.
const EVENT_FIELDS: &[(&str, &str)] = &[
    ("regarding", "involvedObject"),
    ("note", "message"),
    ("reportingController", "reportingComponent"),
    ("deprecatedSource", "source"),
    ("deprecatedFirstTimestamp", "firstTimestamp"),
    ("deprecatedLastTimestamp", "lastTimestamp"),
    ("deprecatedCount", "count"),
];

fn rename(obj: &mut Map<String, Value>, pairs: impl Iterator<Item = (&'static str, &'static str)>) {
    for (from, to) in pairs {
        if let Some(v) = obj.remove(from) {
            obj.insert(to.to_owned(), v);
        }
    }
}

pub static EVENTS_V1: Conversion = Conversion {
    stored_group_resource: "events",
    stored_api_version: "v1",
    to_storage: |o| rename(o, EVENT_FIELDS.iter().copied()),
    from_storage: |o| {
        rename(o, EVENT_FIELDS.iter().map(|(a, b)| (*b, *a)));
        drop_omitted_zeros(o, "io.k8s.api.events.v1.Event");
    },
};

/// The zero scalars Go's `omitempty` leaves out of `definition`'s JSON, where the stored
/// kind's JSON has them (a core Event's `reportingInstance: ""` is no events.k8s.io field).
fn drop_omitted_zeros(o: &mut Map<String, Value>, definition: &str) {
    o.retain(|field, v| {
        let zero = match v {
            Value::String(s) => s.is_empty(),
            Value::Number(n) => n.as_f64() == Some(0.0),
            Value::Bool(b) => !*b,
            _ => false,
        };
        !(zero && super::omitempty::omits(definition, field))
    });
}

/// Annotations that carry what autoscaling/v1 has no field for, so a round trip through v1 loses
/// nothing (kube's `autoscaling.alpha.kubernetes.io/*`).
const HPA_METRICS: &str = "autoscaling.alpha.kubernetes.io/metrics";
const HPA_BEHAVIOR: &str = "autoscaling.alpha.kubernetes.io/behavior";
const HPA_CONDITIONS: &str = "autoscaling.alpha.kubernetes.io/conditions";
const HPA_CURRENT_METRICS: &str = "autoscaling.alpha.kubernetes.io/current-metrics";

fn is_cpu_utilization(m: &Value) -> bool {
    m.get("type").and_then(Value::as_str) == Some("Resource")
        && m.pointer("/resource/name").and_then(Value::as_str) == Some("cpu")
        && m.pointer("/resource/target/type").and_then(Value::as_str) == Some("Utilization")
}

fn annotations(obj: &mut Map<String, Value>) -> Option<&mut Map<String, Value>> {
    let meta = obj
        .entry("metadata")
        .or_insert_with(|| Value::Object(Map::new()));
    let ann = meta
        .as_object_mut()?
        .entry("annotations")
        .or_insert_with(|| Value::Object(Map::new()));
    ann.as_object_mut()
}

fn take_annotation(obj: &mut Map<String, Value>, key: &str) -> Option<Value> {
    let ann = obj
        .get_mut("metadata")?
        .get_mut("annotations")?
        .as_object_mut()?;
    let text = ann.remove(key)?;
    if ann.is_empty() {
        if let Some(m) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
            m.remove("annotations");
        }
    }
    serde_json::from_str(text.as_str()?).ok()
}

fn put_annotation(obj: &mut Map<String, Value>, key: &str, value: &Value) {
    if let Some(ann) = annotations(obj) {
        ann.insert(key.to_owned(), Value::String(value.to_string()));
    }
}

/// autoscaling/v1 -> the stored autoscaling/v2 (kube's `Convert_v1_HorizontalPodAutoscaler_To_autoscaling_HorizontalPodAutoscaler`).
fn hpa_v1_to_v2(o: &mut Map<String, Value>) {
    let extra_metrics = take_annotation(o, HPA_METRICS);
    let behavior = take_annotation(o, HPA_BEHAVIOR);
    let conditions = take_annotation(o, HPA_CONDITIONS);
    let current = take_annotation(o, HPA_CURRENT_METRICS);
    if let Some(spec) = o.get_mut("spec").and_then(Value::as_object_mut) {
        let mut metrics = Vec::new();
        if let Some(target) = spec.remove("targetCPUUtilizationPercentage") {
            metrics.push(
                serde_json::json!({"type": "Resource", "resource": {"name": "cpu",
                "target": {"type": "Utilization", "averageUtilization": target}}}),
            );
        }
        if let Some(Value::Array(more)) = extra_metrics {
            metrics.extend(more);
        }
        if !metrics.is_empty() {
            spec.insert("metrics".into(), Value::Array(metrics));
        }
        if let Some(b) = behavior {
            spec.insert("behavior".into(), b);
        }
    }
    if let Some(status) = o.get_mut("status").and_then(Value::as_object_mut) {
        let mut current_metrics = Vec::new();
        if let Some(cpu) = status.remove("currentCPUUtilizationPercentage") {
            current_metrics.push(
                serde_json::json!({"type": "Resource", "resource": {"name": "cpu",
                "current": {"averageUtilization": cpu}}}),
            );
        }
        if let Some(Value::Array(more)) = current {
            current_metrics.extend(more);
        }
        if !current_metrics.is_empty() {
            status.insert("currentMetrics".into(), Value::Array(current_metrics));
        }
        if let Some(c) = conditions {
            status.insert("conditions".into(), c);
        }
        // v2's `currentReplicas` has `omitempty` (v1's has not): kube's v2 drops a zero.
        if status.get("currentReplicas").and_then(Value::as_i64) == Some(0) {
            status.shift_remove("currentReplicas");
        }
    }
}

/// The stored autoscaling/v2 -> autoscaling/v1: the CPU utilization target becomes
/// `targetCPUUtilizationPercentage`, everything else an annotation.
fn hpa_v2_to_v1(o: &mut Map<String, Value>) {
    let mut extra = Vec::new();
    let mut behavior = None;
    if let Some(spec) = o.get_mut("spec").and_then(Value::as_object_mut) {
        if let Some(Value::Array(metrics)) = spec.remove("metrics") {
            for m in metrics {
                match m.pointer("/resource/target/averageUtilization") {
                    Some(t)
                        if is_cpu_utilization(&m)
                            && !spec.contains_key("targetCPUUtilizationPercentage") =>
                    {
                        spec.insert("targetCPUUtilizationPercentage".into(), t.clone());
                    }
                    _ => extra.push(m),
                }
            }
        }
        behavior = spec.remove("behavior");
    }
    let mut conditions = None;
    let mut current_extra = Vec::new();
    if let Some(status) = o.get_mut("status").and_then(Value::as_object_mut) {
        if let Some(Value::Array(metrics)) = status.remove("currentMetrics") {
            for m in metrics {
                let cpu = m.get("type").and_then(Value::as_str) == Some("Resource")
                    && m.pointer("/resource/name").and_then(Value::as_str) == Some("cpu");
                match m.pointer("/resource/current/averageUtilization") {
                    Some(u) if cpu && !status.contains_key("currentCPUUtilizationPercentage") => {
                        status.insert("currentCPUUtilizationPercentage".into(), u.clone());
                    }
                    _ => current_extra.push(m),
                }
            }
        }
        conditions = status.remove("conditions");
    }
    // v1's `currentReplicas` and `desiredReplicas` have no `omitempty`: kube writes them at
    // zero (`builtin::zero`), in a status it always writes.
    let status = o
        .entry("status")
        .or_insert_with(|| Value::Object(Map::new()));
    if let Some(status) = status.as_object_mut() {
        for field in ["currentReplicas", "desiredReplicas"] {
            status.entry(field).or_insert(Value::from(0));
        }
    }
    if !extra.is_empty() {
        put_annotation(o, HPA_METRICS, &Value::Array(extra));
    }
    if let Some(b) = behavior {
        put_annotation(o, HPA_BEHAVIOR, &b);
    }
    if let Some(c) = conditions {
        put_annotation(o, HPA_CONDITIONS, &c);
    }
    if !current_extra.is_empty() {
        put_annotation(o, HPA_CURRENT_METRICS, &Value::Array(current_extra));
    }
}

pub static HPA_V1: Conversion = Conversion {
    stored_group_resource: "horizontalpodautoscalers.autoscaling",
    stored_api_version: "autoscaling/v2",
    to_storage: hpa_v1_to_v2,
    from_storage: hpa_v2_to_v1,
};

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn events_convert_both_ways() {
        let served = json!({"regarding": {"kind": "Pod", "name": "p"}, "note": "hi",
            "reason": "Started", "reportingController": "c", "deprecatedCount": 2});
        let Value::Object(mut m) = served.clone() else {
            unreachable!()
        };
        (EVENTS_V1.to_storage)(&mut m);
        assert_eq!(
            Value::Object(m.clone()),
            json!({"reason": "Started", "involvedObject": {"kind": "Pod", "name": "p"},
                "message": "hi", "reportingComponent": "c", "count": 2})
        );
        (EVENTS_V1.from_storage)(&mut m);
        let Value::Object(want) = served else {
            unreachable!()
        };
        assert_eq!(m.len(), want.len());
        for (k, v) in &want {
            assert_eq!(m.get(k), Some(v), "{k}");
        }
    }

    /// A core Event's empty `reportingInstance` (a field it always writes) is no events.k8s.io
    /// field (`omitempty` there), as kube's conversion and encoding leave it out; a set one stays.
    #[test]
    fn a_core_events_empty_fields_are_not_served_as_events_k8s_io() {
        let stored = json!({"involvedObject": {"kind": "Pod", "name": "p"}, "message": "hi",
            "reportingComponent": "c", "reportingInstance": "", "action": "", "count": 0,
            "source": {}});
        let Value::Object(mut m) = stored else {
            unreachable!()
        };
        (EVENTS_V1.from_storage)(&mut m);
        assert_eq!(
            Value::Object(m),
            json!({"regarding": {"kind": "Pod", "name": "p"}, "note": "hi",
                "reportingController": "c", "deprecatedSource": {}})
        );
    }

    #[test]
    fn hpas_round_trip_through_v1_without_loss() {
        let v2 = json!({"metadata": {"name": "h"}, "spec": {"maxReplicas": 5, "minReplicas": 1,
            "scaleTargetRef": {"kind": "Deployment", "name": "d"},
            "metrics": [
                {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 70}}},
                {"type": "Resource", "resource": {"name": "memory", "target": {"type": "AverageValue", "averageValue": "1Gi"}}}],
            "behavior": {"scaleDown": {"stabilizationWindowSeconds": 60}}},
            "status": {"currentReplicas": 2, "desiredReplicas": 2, "conditions": [{"type": "AbleToScale", "status": "True"}]}});
        let Value::Object(mut m) = v2.clone() else {
            unreachable!()
        };
        (HPA_V1.from_storage)(&mut m);
        assert_eq!(m["spec"]["targetCPUUtilizationPercentage"], 70);
        assert!(m["spec"].get("metrics").is_none());
        assert!(m["metadata"]["annotations"][HPA_METRICS]
            .as_str()
            .unwrap()
            .contains("memory"));
        (HPA_V1.to_storage)(&mut m);
        assert_eq!(Value::Object(m), v2);
    }

    /// v1's status has `currentReplicas` and `desiredReplicas` without `omitempty`, v2's only
    /// `desiredReplicas`: an HPA no controller has written reads `{currentReplicas: 0,
    /// desiredReplicas: 0}` through v1, and a v1 write stores no zero `currentReplicas`.
    #[test]
    fn hpa_zero_replicas_as_each_version_writes_them() {
        let v2 = json!({"metadata": {"name": "h"}, "spec": {"maxReplicas": 5, "minReplicas": 1,
            "scaleTargetRef": {"kind": "Deployment", "name": "d"}},
            "status": {"desiredReplicas": 0}});
        let Value::Object(mut m) = v2.clone() else {
            unreachable!()
        };
        (HPA_V1.from_storage)(&mut m);
        assert_eq!(
            m["status"],
            json!({"desiredReplicas": 0, "currentReplicas": 0})
        );
        (HPA_V1.to_storage)(&mut m);
        assert_eq!(Value::Object(m), v2);
        let Value::Object(mut bare) = json!({"metadata": {"name": "h"}}) else {
            unreachable!()
        };
        (HPA_V1.from_storage)(&mut bare);
        assert_eq!(
            bare["status"],
            json!({"currentReplicas": 0, "desiredReplicas": 0})
        );
    }
}
