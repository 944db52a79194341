//! kube's validation (1.34) of HorizontalPodAutoscalers (`pkg/apis/autoscaling/validation`),
//! Leases (`pkg/apis/coordination/validation`), Nodes and ResourceQuotas
//! (`pkg/apis/core/validation`) and the RBAC kinds (`pkg/apis/rbac/validation`), run as their
//! registry strategies run it on create, update and status update, with kube's field paths and
//! messages.
//!
//! Bad values render as kube's `field.Error` renders them: strings quoted, numbers bare, anything
//! else (lists, kube's internal structs) as its JSON (internal structs have no JSON tags, so
//! their keys are the Go field names, e.g. `{"Key":"k","Value":"","Effect":"NoSchedule",
//! "TimeAdded":null}`). Where kube iterates a Go map (resource lists, label maps) the order is
//! random there; it is the sorted key order here.

use std::borrow::Cow;
use std::collections::HashSet;

use serde_json::Value;

use super::field::{
    child, dns1123_label, dns1123_subdomain, duplicate, forbidden, go_struct, go_value, index,
    invalid, invalid_str, items, key, label_value, not_supported, qualified_name, required, str_of,
    Go,
};
use crate::builtin::quantity::{canonical, nano_value};
use crate::model::status::Cause;

const AUTOSCALING: &str = "autoscaling";
const COORDINATION: &str = "coordination.k8s.io";
const RBAC: &str = "rbac.authorization.k8s.io";

/// Causes for a create (`old` None) or an update of the main resource (`old` the stored object)
/// of the kinds this module knows; empty for any other.
pub fn validate(group: &str, resource: &str, obj: &Value, old: Option<&Value>) -> Vec<Cause> {
    match (group, resource) {
        (AUTOSCALING, "horizontalpodautoscalers") => hpa(obj, old),
        (COORDINATION, "leases") => lease(obj, old),
        ("", "nodes") => node(obj, old),
        ("", "resourcequotas") => resource_quota(obj, old),
        (RBAC, "roles") => role(obj, old),
        (RBAC, "clusterroles") => cluster_role(obj, old),
        (RBAC, "rolebindings") => binding(obj, old, true),
        (RBAC, "clusterrolebindings") => binding(obj, old, false),
        _ => Vec::new(),
    }
}

/// Causes for an update through `/status` of the kinds this module knows; empty for any other.
pub fn validate_status(group: &str, resource: &str, obj: &Value, old: &Value) -> Vec<Cause> {
    match (group, resource) {
        (AUTOSCALING, "horizontalpodautoscalers") => hpa_status(obj),
        ("", "nodes") => {
            let mut out = Vec::new();
            node_update(obj, old, &mut out);
            out
        }
        ("", "resourcequotas") => quota_status_update(obj),
        _ => Vec::new(),
    }
}

// ---------------------------------------------------------------------------
// Shared helpers
// ---------------------------------------------------------------------------

/// The field `name` of `v` unless absent or `null` (a Go pointer that is set).
fn set<'a>(v: &'a Value, name: &str) -> Option<&'a Value> {
    v.get(name).filter(|x| !x.is_null())
}

/// The integer at `v[name]`, `None` when absent or not an integer.
fn int(v: &Value, name: &str) -> Option<i64> {
    v.get(name).and_then(Value::as_i64)
}

/// The strings of the list at `v[name]` (non-strings as `""`, as Go would have refused them).
fn strings(v: &Value, name: &str) -> Vec<String> {
    items(v, name)
        .iter()
        .map(|s| s.as_str().unwrap_or("").to_owned())
        .collect()
}

/// A map's entries in key order.
fn entries(v: Option<&Value>) -> Vec<(&String, &Value)> {
    let mut e: Vec<(&String, &Value)> = v
        .and_then(Value::as_object)
        .map(|m| m.iter().collect())
        .unwrap_or_default();
    e.sort_by(|a, b| a.0.cmp(b.0));
    e
}

/// The text of a quantity field (kube accepts numbers for quantities).
fn quantity_text(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// A quantity's value in nano units, `None` when it is not a quantity.
fn nano(v: &Value) -> Option<i128> {
    nano_value(&quantity_text(v)?).ok().map(|(n, _)| n)
}

/// A quantity as kube renders it in a message (`Quantity.String()`, or its JSON, which is the
/// same canonical string, quoted).
fn quantity_value(v: &Value) -> Value {
    let s = quantity_text(v).unwrap_or_default();
    Value::String(canonical(&s).unwrap_or(s))
}

/// `path.IsValidPathSegmentName`.
fn path_segment_name(name: &str) -> Vec<String> {
    for bad in [".", ".."] {
        if name == bad {
            return vec![format!("may not be '{bad}'")];
        }
    }
    ["/", "%"]
        .iter()
        .filter(|bad| name.contains(*bad))
        .map(|bad| format!("may not contain '{bad}'"))
        .collect()
}

/// `validation.IsConfigMapKey`.
fn config_map_key(key: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if key.len() > 253 {
        errs.push("must be no more than 253 characters".to_owned());
    }
    if key.is_empty()
        || !key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
    {
        errs.push(
            "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. \
             'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is \
             '[-._a-zA-Z0-9]+')"
                .to_owned(),
        );
    }
    if key == "." {
        errs.push("must not be '.'".to_owned());
    } else if key == ".." {
        errs.push("must not be '..'".to_owned());
    } else if key.starts_with("..") {
        errs.push("must not start with '..'".to_owned());
    }
    errs
}

// ---- resource names (pkg/apis/core/helper) ----

const STANDARD_RESOURCES: &[&str] = &[
    "cpu",
    "memory",
    "ephemeral-storage",
    "requests.cpu",
    "requests.memory",
    "requests.ephemeral-storage",
    "limits.cpu",
    "limits.memory",
    "limits.ephemeral-storage",
    "pods",
    "resourcequotas",
    "services",
    "replicationcontrollers",
    "secrets",
    "configmaps",
    "persistentvolumeclaims",
    "storage",
    "requests.storage",
    "services.nodeports",
    "services.loadbalancers",
];

const STANDARD_QUOTA_RESOURCES: &[&str] = &[
    "cpu",
    "memory",
    "ephemeral-storage",
    "requests.cpu",
    "requests.memory",
    "requests.storage",
    "requests.ephemeral-storage",
    "limits.cpu",
    "limits.memory",
    "limits.ephemeral-storage",
    "pods",
    "resourcequotas",
    "services",
    "replicationcontrollers",
    "secrets",
    "persistentvolumeclaims",
    "configmaps",
    "services.nodeports",
    "services.loadbalancers",
];

const INTEGER_RESOURCES: &[&str] = &[
    "pods",
    "resourcequotas",
    "services",
    "replicationcontrollers",
    "secrets",
    "configmaps",
    "persistentvolumeclaims",
    "services.nodeports",
    "services.loadbalancers",
];

/// `helper.IsQuotaHugePageResourceName`.
fn is_quota_huge_page(name: &str) -> bool {
    name.starts_with("hugepages-") || name.starts_with("requests.hugepages-")
}

/// `helper.IsStandardResourceName`.
fn is_standard_resource(name: &str) -> bool {
    STANDARD_RESOURCES.contains(&name) || is_quota_huge_page(name)
}

/// `helper.IsStandardQuotaResourceName`.
fn is_standard_quota_resource(name: &str) -> bool {
    STANDARD_QUOTA_RESOURCES.contains(&name) || is_quota_huge_page(name)
}

/// `helper.IsNativeResource`: unprefixed, or in a `kubernetes.io/` namespace.
pub(super) fn is_native_resource(name: &str) -> bool {
    !name.contains('/') || name.contains("kubernetes.io/")
}

/// `helper.IsExtendedResourceName`.
pub(super) fn is_extended_resource(name: &str) -> bool {
    !is_native_resource(name)
        && !name.starts_with("requests.")
        && qualified_name(&format!("requests.{name}")).is_empty()
}

/// `helper.IsIntegerResourceName`.
pub(super) fn is_integer_resource(name: &str) -> bool {
    INTEGER_RESOURCES.contains(&name) || is_extended_resource(name)
}

/// kube's `validateResourceName` (core and core/v1 alike): a qualified name, and a standard
/// resource unless prefixed.
pub(super) fn resource_name(name: &str, path: &str, out: &mut Vec<Cause>) {
    let errs = qualified_name(name);
    if !errs.is_empty() {
        for msg in errs {
            out.push(invalid_str(path, name, &msg));
        }
        return;
    }
    if !name.contains('/') && !is_standard_resource(name) {
        out.push(invalid_str(
            path,
            name,
            "must be a standard resource type or fully qualified",
        ));
    }
}

/// kube's `ValidateResourceQuantityValue`: not negative, and whole for integer resources.
fn resource_quantity_value(name: &str, v: &Value, path: &str, out: &mut Vec<Cause>) {
    let Some(n) = nano(v) else {
        return;
    };
    if n < 0 {
        out.push(invalid(
            path,
            &quantity_value(v),
            "must be greater than or equal to 0",
        ));
    }
    if is_integer_resource(name) {
        // `MilliValue()`, rounded away from zero as kube scales.
        let abs = n.unsigned_abs();
        let milli = abs / 1_000_000 + u128::from(abs % 1_000_000 != 0);
        if milli % 1000 != 0 {
            out.push(invalid(path, &quantity_value(v), "must be an integer"));
        }
    }
}

// ---- label selectors (k8s.io/apimachinery/pkg/apis/meta/v1/validation) ----

/// kube's `ValidateLabelSelector` (label keys and values reported at `matchLabels` itself);
/// `allow_invalid_values` is `LabelSelectorValidationOptions.AllowInvalidLabelValueInSelector`.
pub(super) fn label_selector(
    sel: &Value,
    path: &str,
    allow_invalid_values: bool,
    out: &mut Vec<Cause>,
) {
    let labels_path = child(path, "matchLabels");
    for (k, v) in entries(sel.get("matchLabels")) {
        for msg in qualified_name(k) {
            out.push(invalid_str(&labels_path, k, &msg));
        }
        let v = v.as_str().unwrap_or("");
        for msg in label_value(v) {
            out.push(invalid_str(&labels_path, v, &msg));
        }
    }
    let exprs_path = child(path, "matchExpressions");
    for (i, e) in items(sel, "matchExpressions").iter().enumerate() {
        let p = index(&exprs_path, i);
        let values = strings(e, "values");
        let op = str_of(e, "operator");
        match op {
            "In" | "NotIn" => {
                if values.is_empty() {
                    out.push(required(
                        &child(&p, "values"),
                        "must be specified when `operator` is 'In' or 'NotIn'",
                    ));
                }
            }
            "Exists" | "DoesNotExist" => {
                if !values.is_empty() {
                    out.push(forbidden(
                        &child(&p, "values"),
                        "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
                    ));
                }
            }
            _ => out.push(invalid_str(
                &child(&p, "operator"),
                op,
                "not a valid selector operator",
            )),
        }
        let k = str_of(e, "key");
        for msg in qualified_name(k) {
            out.push(invalid_str(&child(&p, "key"), k, &msg));
        }
        if !allow_invalid_values {
            let values_path = child(&p, "values");
            for (j, v) in values.iter().enumerate() {
                for msg in label_value(v) {
                    out.push(invalid_str(&index(&values_path, j), v, &msg));
                }
            }
        }
    }
}

/// Whether `metav1.LabelSelectorAsSelector` fails on `sel`: exactly when the strict
/// `ValidateLabelSelector` finds anything (bad operator, key or value, values where they may
/// not be or none where they must).
fn label_selector_fails(sel: &Value) -> bool {
    let mut errs = Vec::new();
    label_selector(sel, "", false, &mut errs);
    !errs.is_empty()
}

// ---------------------------------------------------------------------------
// HorizontalPodAutoscaler (pkg/apis/autoscaling/validation)
// ---------------------------------------------------------------------------

/// The autoscaling/v2 form kube validates (its internal version): an autoscaling/v1 object is
/// converted first, so causes name v2's fields as kube's do.
fn hpa_v2(obj: &Value) -> Cow<'_, Value> {
    if obj.get("apiVersion").and_then(Value::as_str) != Some("autoscaling/v1") {
        return Cow::Borrowed(obj);
    }
    let mut v = obj.clone();
    if let Some(m) = v.as_object_mut() {
        (crate::builtin::conversion::HPA_V1.to_storage)(m);
    }
    Cow::Owned(v)
}

/// kube's `toleranceInUse`: a scaling rule of the object sets `tolerance`.
fn tolerance_in_use(hpa: &Value) -> bool {
    hpa.pointer("/spec/behavior").is_some_and(|b| {
        ["scaleUp", "scaleDown"]
            .iter()
            .any(|r| b.get(*r).and_then(|r| set(r, "tolerance")).is_some())
    })
}

/// kube's `ValidateHorizontalPodAutoscaler` and `ValidateHorizontalPodAutoscalerUpdate` (the
/// strategy's options: `minReplicas` may be 0 only when the stored object has 0, as
/// `HPAScaleToZero` is off; `tolerance` only when the stored object sets one, as
/// `HPAConfigurableTolerance` is alpha and off in 1.34).
fn hpa(obj: &Value, old: Option<&Value>) -> Vec<Cause> {
    let obj = hpa_v2(obj);
    let old = old.map(hpa_v2);
    let old = old.as_deref();
    let lower = if old
        .and_then(|o| o.pointer("/spec/minReplicas"))
        .and_then(Value::as_i64)
        == Some(0)
    {
        0
    } else {
        1
    };
    let allow_tolerance = old.is_some_and(tolerance_in_use);
    let mut out = Vec::new();
    let spec = obj.get("spec").unwrap_or(&Value::Null);
    hpa_spec(spec, "spec", lower, allow_tolerance, &mut out);
    out
}

/// kube's `ValidateHorizontalPodAutoscalerStatusUpdate`.
fn hpa_status(obj: &Value) -> Vec<Cause> {
    let obj = hpa_v2(obj);
    let mut out = Vec::new();
    for f in ["currentReplicas", "desiredReplicas"] {
        if let Some(n) = obj.pointer(&format!("/status/{f}")).and_then(Value::as_i64) {
            if n < 0 {
                out.push(invalid(
                    &format!("status.{f}"),
                    &Value::from(n),
                    "must be greater than or equal to 0",
                ));
            }
        }
    }
    out
}

/// kube's `validateHorizontalPodAutoscalerSpec`.
fn hpa_spec(spec: &Value, path: &str, lower: i64, allow_tolerance: bool, out: &mut Vec<Cause>) {
    let min = int(spec, "minReplicas");
    let max = int(spec, "maxReplicas").unwrap_or(0);
    if let Some(m) = min.filter(|m| *m < lower) {
        out.push(invalid(
            &child(path, "minReplicas"),
            &Value::from(m),
            &format!("must be greater than or equal to {lower}"),
        ));
    }
    if max < 1 {
        out.push(invalid(
            &child(path, "maxReplicas"),
            &Value::from(max),
            "must be greater than 0",
        ));
    }
    if min.is_some_and(|m| max < m) {
        out.push(invalid(
            &child(path, "maxReplicas"),
            &Value::from(max),
            "must be greater than or equal to `minReplicas`",
        ));
    }
    cross_version_ref(
        spec.get("scaleTargetRef").unwrap_or(&Value::Null),
        &child(path, "scaleTargetRef"),
        out,
    );
    hpa_metrics(spec, &child(path, "metrics"), min, out);
    if let Some(b) = set(spec, "behavior") {
        let bp = child(path, "behavior");
        for dir in ["scaleUp", "scaleDown"] {
            if let Some(rules) = set(b, dir) {
                scaling_rules(rules, &child(&bp, dir), allow_tolerance, out);
            }
        }
    }
}

/// kube's `ValidateCrossVersionObjectReference` (1.34 does not check `apiVersion`).
fn cross_version_ref(r: &Value, path: &str, out: &mut Vec<Cause>) {
    for f in ["kind", "name"] {
        let v = str_of(r, f);
        let p = child(path, f);
        if v.is_empty() {
            out.push(required(&p, ""));
        } else {
            for msg in path_segment_name(v) {
                out.push(invalid_str(&p, v, &msg));
            }
        }
    }
}

/// kube's `validateMetrics`.
fn hpa_metrics(spec: &Value, path: &str, min: Option<i64>, out: &mut Vec<Cause>) {
    let (mut object, mut external) = (false, false);
    for (i, m) in items(spec, "metrics").iter().enumerate() {
        metric_spec(m, &index(path, i), out);
        match str_of(m, "type") {
            "Object" => object = true,
            "External" => external = true,
            _ => {}
        }
    }
    if min == Some(0) && !object && !external {
        out.push(forbidden(
            path,
            "must specify at least one Object or External metric to support scaling to zero replicas",
        ));
    }
}

/// kube's sorted `validMetricSourceTypes`.
const METRIC_TYPES: &[&str] = &[
    "ContainerResource",
    "External",
    "Object",
    "Pods",
    "Resource",
];

/// kube's `validateMetricSpec`: the type, the first source set (only), and no other source.
fn metric_spec(m: &Value, path: &str, out: &mut Vec<Cause>) {
    let ty = str_of(m, "type");
    let type_path = child(path, "type");
    if ty.is_empty() {
        out.push(required(&type_path, "must specify a metric source type"));
    }
    let ty_value = Value::String(ty.to_owned());
    if !METRIC_TYPES.contains(&ty) {
        out.push(not_supported(&type_path, &ty_value, METRIC_TYPES));
    }
    let mut present: Vec<&str> = Vec::new();
    for source in [
        "object",
        "external",
        "pods",
        "resource",
        "containerResource",
    ] {
        let Some(src) = set(m, source) else {
            continue;
        };
        present.push(source);
        if present.len() == 1 {
            let p = child(path, source);
            match source {
                "object" => object_source(src, &p, out),
                "external" => external_source(src, &p, out),
                "pods" => pods_source(src, &p, out),
                "resource" => resource_source(src, &p, out),
                _ => container_resource_source(src, &p, out),
            }
        }
    }
    let expected = match ty {
        "Object" => "object",
        "Pods" => "pods",
        "Resource" => "resource",
        "External" => "external",
        "ContainerResource" => "containerResource",
        _ => {
            out.push(not_supported(&type_path, &ty_value, METRIC_TYPES));
            ""
        }
    };
    if !expected.is_empty() && set(m, expected).is_none() {
        out.push(required(
            &child(path, expected),
            "must populate information for the given metric source",
        ));
    }
    if present.len() != 1 {
        // kube ranges over a set here (random order); sorted here.
        present.sort_unstable();
        for source in present.into_iter().filter(|s| *s != expected) {
            out.push(forbidden(
                &child(path, source),
                "must populate the given metric source only",
            ));
        }
    }
}

/// The target of a metric source, `null` when absent.
fn target(src: &Value) -> &Value {
    src.get("target").unwrap_or(&Value::Null)
}

/// kube's `validateObjectSource`.
fn object_source(src: &Value, path: &str, out: &mut Vec<Cause>) {
    cross_version_ref(
        src.get("describedObject").unwrap_or(&Value::Null),
        &child(path, "describedObject"),
        out,
    );
    metric_identifier(src, path, out);
    let t = target(src);
    let tp = child(path, "target");
    metric_target(t, &tp, out);
    if set(t, "value").is_none() && set(t, "averageValue").is_none() {
        out.push(required(
            &child(&tp, "averageValue"),
            "must set either a target value or averageValue",
        ));
    }
}

/// kube's `validateExternalSource`.
fn external_source(src: &Value, path: &str, out: &mut Vec<Cause>) {
    metric_identifier(src, path, out);
    let t = target(src);
    let tp = child(path, "target");
    metric_target(t, &tp, out);
    let (value, average) = (set(t, "value").is_some(), set(t, "averageValue").is_some());
    if !value && !average {
        out.push(required(
            &child(&tp, "averageValue"),
            "must set either a target value for metric or a per-pod target",
        ));
    }
    if value && average {
        out.push(forbidden(
            &child(&tp, "value"),
            "may not set both a target value for metric and a per-pod target",
        ));
    }
}

/// kube's `validatePodsSource`.
fn pods_source(src: &Value, path: &str, out: &mut Vec<Cause>) {
    metric_identifier(src, path, out);
    let t = target(src);
    let tp = child(path, "target");
    metric_target(t, &tp, out);
    if set(t, "averageValue").is_none() {
        out.push(required(
            &child(&tp, "averageValue"),
            "must specify a positive target averageValue",
        ));
    }
}

/// The checks shared by kube's `validateResourceSource` and `validateContainerResourceSource`
/// after the names: the target, and exactly one of a utilization and an average value.
fn resource_target(src: &Value, path: &str, out: &mut Vec<Cause>) {
    let t = target(src);
    let tp = child(path, "target");
    metric_target(t, &tp, out);
    let (util, average) = (
        set(t, "averageUtilization").is_some(),
        set(t, "averageValue").is_some(),
    );
    if !util && !average {
        out.push(required(
            &child(&tp, "averageUtilization"),
            "must set either a target raw value or a target utilization",
        ));
    }
    if util && average {
        out.push(forbidden(
            &child(&tp, "averageValue"),
            "may not set both a target raw value and a target utilization",
        ));
    }
}

/// kube's `validateResourceSource`.
fn resource_source(src: &Value, path: &str, out: &mut Vec<Cause>) {
    if str_of(src, "name").is_empty() {
        out.push(required(
            &child(path, "name"),
            "must specify a resource name",
        ));
    }
    resource_target(src, path, out);
}

/// kube's `validateContainerResourceSource`.
fn container_resource_source(src: &Value, path: &str, out: &mut Vec<Cause>) {
    let name = str_of(src, "name");
    let name_path = child(path, "name");
    if name.is_empty() {
        out.push(required(&name_path, "must specify a resource name"));
    } else {
        container_resource_name(name, &name_path, out);
    }
    let container = str_of(src, "container");
    let container_path = child(path, "container");
    if container.is_empty() {
        out.push(required(&container_path, "must specify a container"));
    } else {
        for msg in dns1123_label(container) {
            out.push(invalid_str(&container_path, container, &msg));
        }
    }
    resource_target(src, path, out);
}

/// core/v1 validation's `ValidateContainerResourceName`.
fn container_resource_name(name: &str, path: &str, out: &mut Vec<Cause>) {
    resource_name(name, path, out);
    if !name.contains('/') {
        let standard = matches!(name, "cpu" | "memory" | "ephemeral-storage")
            || name.starts_with("hugepages-");
        if !standard {
            out.push(invalid_str(
                path,
                name,
                "must be a standard resource for containers",
            ));
        }
    } else if !is_native_resource(name) && !is_extended_resource(name) {
        out.push(invalid_str(
            path,
            name,
            "doesn't follow extended resource name standard",
        ));
    }
}

/// kube's `validateMetricIdentifier` of `src.metric`.
fn metric_identifier(src: &Value, path: &str, out: &mut Vec<Cause>) {
    let name = src.get("metric").map(|m| str_of(m, "name")).unwrap_or("");
    let p = child(&child(path, "metric"), "name");
    if name.is_empty() {
        out.push(required(&p, "must specify a metric name"));
    } else {
        for msg in path_segment_name(name) {
            out.push(invalid_str(&p, name, &msg));
        }
    }
}

/// kube's `validateMetricTarget`.
fn metric_target(t: &Value, path: &str, out: &mut Vec<Cause>) {
    let ty = str_of(t, "type");
    if ty.is_empty() {
        out.push(required(
            &child(path, "type"),
            "must specify a metric target type",
        ));
    }
    if !matches!(ty, "Utilization" | "Value" | "AverageValue") {
        out.push(invalid_str(
            &child(path, "type"),
            ty,
            "must be either Utilization, Value, or AverageValue",
        ));
    }
    for f in ["value", "averageValue"] {
        if let Some(q) = set(t, f) {
            if nano(q).is_some_and(|n| n <= 0) {
                out.push(invalid(
                    &child(path, f),
                    &quantity_value(q),
                    "must be positive",
                ));
            }
        }
    }
    if let Some(u) = int(t, "averageUtilization").filter(|u| *u < 1) {
        out.push(invalid(
            &child(path, "averageUtilization"),
            &Value::from(u),
            "must be greater than 0",
        ));
    }
}

/// kube's `validateScalingRules`.
fn scaling_rules(rules: &Value, path: &str, allow_tolerance: bool, out: &mut Vec<Cause>) {
    if let Some(w) = int(rules, "stabilizationWindowSeconds") {
        let p = child(path, "stabilizationWindowSeconds");
        if w < 0 {
            out.push(invalid(
                &p,
                &Value::from(w),
                "must be greater than or equal to zero",
            ));
        }
        if w > 3600 {
            out.push(invalid(
                &p,
                &Value::from(w),
                "must be less than or equal to 3600",
            ));
        }
    }
    if let Some(sp) = set(rules, "selectPolicy") {
        let s = sp.as_str().unwrap_or("");
        if !matches!(s, "Disabled" | "Max" | "Min") {
            out.push(not_supported(
                &child(path, "selectPolicy"),
                sp,
                &["Disabled", "Max", "Min"],
            ));
        }
    }
    let policies_path = child(path, "policies");
    let policies = items(rules, "policies");
    if policies.is_empty() {
        out.push(required(&policies_path, "must specify at least one Policy"));
    }
    for (i, p) in policies.iter().enumerate() {
        let pp = index(&policies_path, i);
        let ty = str_of(p, "type");
        if !matches!(ty, "Pods" | "Percent") {
            out.push(not_supported(
                &child(&pp, "type"),
                &Value::String(ty.to_owned()),
                &["Percent", "Pods"],
            ));
        }
        let value = int(p, "value").unwrap_or(0);
        if value <= 0 {
            out.push(invalid(
                &child(&pp, "value"),
                &Value::from(value),
                "must be greater than zero",
            ));
        }
        let period = int(p, "periodSeconds").unwrap_or(0);
        let period_path = child(&pp, "periodSeconds");
        if period <= 0 {
            out.push(invalid(
                &period_path,
                &Value::from(period),
                "must be greater than zero",
            ));
        }
        if period > 1800 {
            out.push(invalid(
                &period_path,
                &Value::from(period),
                "must be less than or equal to 1800",
            ));
        }
    }
    // `tolerance` (HPAConfigurableTolerance, alpha in 1.33 and 1.34, off by default): refused
    // unless the stored object already sets one. NOTE: kube's wording of this refusal is not
    // verified (its tests only check for "not supported"); the negative check is 1.33's.
    if let Some(t) = set(rules, "tolerance") {
        let p = child(path, "tolerance");
        if !allow_tolerance {
            out.push(forbidden(
                &p,
                "tolerance is not supported when the HPAConfigurableTolerance feature gate is not enabled",
            ));
        } else if nano(t).is_some_and(|n| n < 0) {
            out.push(invalid(
                &p,
                &quantity_value(t),
                "must be greater or equal to zero",
            ));
        }
    }
}

// ---------------------------------------------------------------------------
// Lease (pkg/apis/coordination/validation)
// ---------------------------------------------------------------------------

/// kube's `ValidateLease` and `ValidateLeaseUpdate` (the same spec checks). `strategy` and
/// `preferredHolder` need `CoordinatedLeaderElection` (beta, off by default in 1.34): kube's
/// strategy drops them unless the stored Lease has them, so only those kept are checked.
fn lease(obj: &Value, old: Option<&Value>) -> Vec<Cause> {
    let mut out = Vec::new();
    let spec = obj.get("spec").unwrap_or(&Value::Null);
    let old_spec = old.and_then(|o| o.get("spec"));
    if let Some(d) = int(spec, "leaseDurationSeconds").filter(|d| *d <= 0) {
        out.push(invalid(
            "spec.leaseDurationSeconds",
            &Value::from(d),
            "must be greater than 0",
        ));
    }
    if let Some(t) = int(spec, "leaseTransitions").filter(|t| *t < 0) {
        out.push(invalid(
            "spec.leaseTransitions",
            &Value::from(t),
            "must be greater than or equal to 0",
        ));
    }
    let strategy = kept(spec, old_spec, "strategy").and_then(Value::as_str);
    if let Some(s) = strategy {
        coordinated_lease_strategy(s, "spec.strategy", &mut out);
    }
    let holder = kept(spec, old_spec, "preferredHolder")
        .and_then(Value::as_str)
        .unwrap_or("");
    if !holder.is_empty() && strategy.unwrap_or("").is_empty() {
        out.push(forbidden(
            "spec.preferredHolder",
            "may only be specified if `strategy` is defined",
        ));
    }
    out
}

/// The gated Lease field `f` as kube's strategy keeps it: only when the stored Lease has it.
fn kept<'a>(spec: &'a Value, old_spec: Option<&Value>, f: &str) -> Option<&'a Value> {
    old_spec.and_then(|s| set(s, f))?;
    set(spec, f)
}

/// kube's `ValidateCoordinatedLeaseStrategy` (which appends `strategy` to the path it is given:
/// kube reports `spec.strategy.strategy`).
fn coordinated_lease_strategy(strategy: &str, path: &str, out: &mut Vec<Cause>) {
    let p = child(path, "strategy");
    if strategy.split('/').count() == 1 {
        if strategy != "OldestEmulationVersion" {
            out.push(not_supported(
                &p,
                &Value::String(strategy.to_owned()),
                &["OldestEmulationVersion"],
            ));
        }
    } else {
        for msg in qualified_name(strategy) {
            out.push(invalid_str(&p, strategy, &msg));
        }
    }
}

// ---------------------------------------------------------------------------
// Node (pkg/apis/core/validation)
// ---------------------------------------------------------------------------

/// kube's node strategy: `ValidateNode` on create; `ValidateNode` then `ValidateNodeUpdate` on
/// update (so what both check is reported twice, as kube does).
fn node(obj: &Value, old: Option<&Value>) -> Vec<Cause> {
    let mut out = Vec::new();
    node_create(obj, &mut out);
    if let Some(old) = old {
        node_update(obj, old, &mut out);
    }
    out
}

/// The Node's pod CIDRs as kube's internal Node has them: `podCIDRs`, or `podCIDR` alone when
/// `podCIDRs` is empty (kube's v1 conversion).
fn pod_cidrs(node: &Value) -> Vec<String> {
    let spec = node.get("spec").unwrap_or(&Value::Null);
    let list = strings(spec, "podCIDRs");
    if !list.is_empty() {
        return list;
    }
    let one = str_of(spec, "podCIDR");
    if one.is_empty() {
        Vec::new()
    } else {
        vec![one.to_owned()]
    }
}

const CIDR_MSG: &str = "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)";

/// kube's `ValidateNode` (its checks of the legacy taints and preferAvoidPods annotations are
/// left out).
fn node_create(obj: &Value, out: &mut Vec<Cause>) {
    let spec = obj.get("spec").unwrap_or(&Value::Null);
    let taints = items(spec, "taints");
    if !taints.is_empty() {
        // kube reports taints under `metadata` (its path is built from `metadata`).
        node_taints(taints, "metadata.taints", out);
    }
    node_resources(obj, out);
    let cidrs = pod_cidrs(obj);
    if cidrs.is_empty() {
        return;
    }
    let path = "spec.podCIDRs";
    for (i, c) in cidrs.iter().enumerate() {
        if sloppy_cidr(c).is_none() {
            out.push(invalid_str(&index(path, i), c, CIDR_MSG));
        }
    }
    if cidrs.len() > 1 {
        // netutils.IsDualStackCIDRStrings
        let mut families = Vec::new();
        let mut failed = None;
        for (i, c) in cidrs.iter().enumerate() {
            match sloppy_cidr(c) {
                Some(v6) => families.push(v6),
                None => {
                    failed = Some(format!(
                        "invalid CIDR[{i}]: <nil> (invalid CIDR address: {c})"
                    ));
                    break;
                }
            }
        }
        let dual = match failed {
            Some(err) => {
                out.push(Cause::new(
                    "InternalError",
                    path,
                    format!(
                        "Internal error: invalid PodCIDRs. failed to check with dual stack with error:{err}"
                    ),
                ));
                false
            }
            None => families.contains(&true) && families.contains(&false),
        };
        if !dual || cidrs.len() > 2 {
            out.push(invalid(
                path,
                &Value::from(cidrs.clone()),
                "may specify no more than one CIDR for each IP family",
            ));
        }
        let mut seen = HashSet::new();
        for (i, c) in cidrs.iter().enumerate() {
            if !seen.insert(c.as_str()) {
                out.push(duplicate(&index(path, i), &Value::String(c.clone())));
            }
        }
    }
}

/// kube's `ValidateNodeUpdate` (also the whole of a `/status` update's validation). The
/// deprecated `spec.configSource` and `status.config` are checked only when the stored Node has
/// them: kube's strategies drop them otherwise.
fn node_update(obj: &Value, old: &Value, out: &mut Vec<Cause>) {
    node_resources(obj, out);
    let mut seen = HashSet::new();
    for (i, a) in items(obj.get("status").unwrap_or(&Value::Null), "addresses")
        .iter()
        .enumerate()
    {
        let (ty, addr) = (str_of(a, "type"), str_of(a, "address"));
        if !seen.insert((ty, addr)) {
            // The internal core.NodeAddress, as JSON.
            let value = serde_json::json!({"Type": ty, "Address": addr});
            out.push(duplicate(&index("status.addresses", i), &value));
        }
    }
    let old_cidrs = pod_cidrs(old);
    if !old_cidrs.is_empty() {
        let new_cidrs = pod_cidrs(obj);
        let msg = "node updates may not change podCIDR except from \"\" to valid";
        if old_cidrs.len() != new_cidrs.len() {
            out.push(forbidden("spec.podCIDRs", msg));
        } else {
            for (o, n) in old_cidrs.iter().zip(&new_cidrs) {
                if o != n {
                    out.push(forbidden("spec.podCIDRs", msg));
                }
            }
        }
    }
    let spec = obj.get("spec").unwrap_or(&Value::Null);
    let old_spec = old.get("spec").unwrap_or(&Value::Null);
    let old_provider = str_of(old_spec, "providerID");
    if !old_provider.is_empty() && old_provider != str_of(spec, "providerID") {
        out.push(forbidden(
            "spec.providerID",
            "node updates may not change providerID except from \"\" to valid",
        ));
    }
    if set(old_spec, "configSource").is_some() {
        if let Some(source) = set(spec, "configSource") {
            node_config_source(source, "spec.configSource", false, out);
        }
    }
    let old_status = old.get("status").unwrap_or(&Value::Null);
    if set(old_status, "config").is_some() {
        if let Some(config) = obj.get("status").and_then(|s| set(s, "config")) {
            for f in ["assigned", "active", "lastKnownGood"] {
                if let Some(source) = set(config, f) {
                    node_config_source(source, &format!("status.config.{f}"), true, out);
                }
            }
        }
    }
    let taints = items(spec, "taints");
    if !taints.is_empty() {
        node_taints(taints, "metadata.taints", out);
    }
    if str_of(spec, "externalID") != str_of(old_spec, "externalID") {
        out.push(forbidden("spec.externalID", "may not be updated"));
    }
}

/// kube's `ValidateNodeResources`: every capacity and allocatable quantity.
fn node_resources(node: &Value, out: &mut Vec<Cause>) {
    let status = node.get("status");
    for list in ["capacity", "allocatable"] {
        for (k, v) in entries(status.and_then(|s| s.get(list))) {
            resource_quantity_value(k, v, &format!("status.{list}.{k}"), out);
        }
    }
}

/// kube's `validateNodeTaints`.
fn node_taints(taints: &[Value], path: &str, out: &mut Vec<Cause>) {
    let mut seen: HashSet<(&str, &str)> = HashSet::new();
    for (i, t) in taints.iter().enumerate() {
        let p = index(path, i);
        let k = str_of(t, "key");
        for msg in qualified_name(k) {
            out.push(invalid_str(&child(&p, "key"), k, &msg));
        }
        let v = str_of(t, "value");
        let errs = label_value(v);
        if !errs.is_empty() {
            out.push(invalid_str(&child(&p, "value"), v, &errs.join(";")));
        }
        let effect = str_of(t, "effect");
        let effect_path = child(&p, "effect");
        if effect.is_empty() {
            out.push(required(&effect_path, ""));
        } else if !matches!(effect, "NoSchedule" | "PreferNoSchedule" | "NoExecute") {
            out.push(not_supported(
                &effect_path,
                &Value::String(effect.to_owned()),
                &["NoSchedule", "PreferNoSchedule", "NoExecute"],
            ));
        }
        if !seen.insert((effect, k)) {
            // kube reports the internal `core.Taint`: its JSON, Go field names in order.
            let taint = go_struct(
                Some(t),
                &[
                    ("Key", "key", Go::Str),
                    ("Value", "value", Go::Str),
                    ("Effect", "effect", Go::Str),
                    ("TimeAdded", "timeAdded", Go::Nil),
                ],
            );
            out.push(Cause::new(
                "FieldValueDuplicate",
                &p,
                format!(
                    "Duplicate value: {}: taints must be unique by key and effect pair",
                    go_value(&taint)
                ),
            ));
        }
    }
}

/// kube's `validateNodeConfigSourceSpec` (`status` false) and `validateNodeConfigSourceStatus`.
fn node_config_source(source: &Value, path: &str, status: bool, out: &mut Vec<Cause>) {
    let Some(cm) = set(source, "configMap") else {
        // The internal core.NodeConfigSource, as JSON.
        let value = serde_json::json!({"ConfigMap": null});
        out.push(invalid(
            path,
            &value,
            "exactly one reference subfield must be non-nil",
        ));
        return;
    };
    let p = child(path, "configMap");
    if status {
        if str_of(cm, "uid").is_empty() {
            out.push(required(&child(&p, "uid"), "uid must be set in status"));
        }
        if str_of(cm, "resourceVersion").is_empty() {
            out.push(required(
                &child(&p, "resourceVersion"),
                "resourceVersion must be set in status",
            ));
        }
    } else {
        if !str_of(cm, "uid").is_empty() {
            out.push(forbidden(&child(&p, "uid"), "uid must not be set in spec"));
        }
        if !str_of(cm, "resourceVersion").is_empty() {
            out.push(forbidden(
                &child(&p, "resourceVersion"),
                "resourceVersion must not be set in spec",
            ));
        }
    }
    type Check = fn(&str) -> Vec<String>;
    let checks: [(&str, Check); 3] = [
        ("namespace", dns1123_label),
        ("name", dns1123_subdomain),
        ("kubeletConfigKey", config_map_key),
    ];
    for (f, check) in checks {
        let v = str_of(cm, f);
        let fp = child(&p, f);
        if v.is_empty() {
            out.push(required(&fp, &format!("{f} must be set")));
        } else {
            for msg in check(v) {
                out.push(invalid_str(&fp, v, &msg));
            }
        }
    }
}

/// Go's `net.ParseCIDR` as k8s.io/utils/net's `ParseCIDRSloppy` keeps it (IPv4 parts may have
/// leading zeros): `Some(true)` for an IPv6 CIDR, `Some(false)` for IPv4 (IPv4-mapped IPv6
/// included, as `To4` sees them), `None` when it does not parse.
fn sloppy_cidr(s: &str) -> Option<bool> {
    let (addr, bits) = s.split_once('/')?;
    let (v6, max) = if sloppy_ipv4(addr) {
        (false, 32u32)
    } else {
        let a: std::net::Ipv6Addr = addr.parse().ok()?;
        (a.to_ipv4_mapped().is_none(), 128u32)
    };
    if bits.is_empty() || !bits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let n = bits.bytes().try_fold(0u32, |n, b| {
        n.checked_mul(10)?.checked_add(u32::from(b - b'0'))
    })?;
    (n <= max).then_some(v6)
}

/// Four dot-separated decimal parts of at most 255 (leading zeros allowed).
fn sloppy_ipv4(s: &str) -> bool {
    let parts: Vec<&str> = s.split('.').collect();
    parts.len() == 4
        && parts.iter().all(|p| {
            !p.is_empty()
                && p.bytes().all(|b| b.is_ascii_digit())
                && p.bytes()
                    .try_fold(0u32, |n, b| {
                        n.checked_mul(10)?.checked_add(u32::from(b - b'0'))
                    })
                    .is_some_and(|n| n <= 255)
        })
}

// ---------------------------------------------------------------------------
// ResourceQuota (pkg/apis/core/validation)
// ---------------------------------------------------------------------------

/// kube's `ValidateResourceQuota` on create (spec and status) and `ValidateResourceQuotaUpdate`
/// on update (spec, and `scopes` may not change).
fn resource_quota(obj: &Value, old: Option<&Value>) -> Vec<Cause> {
    let mut out = Vec::new();
    let spec = obj.get("spec").unwrap_or(&Value::Null);
    quota_spec(spec, &mut out);
    match old {
        None => quota_status(obj, &mut out),
        Some(old) => {
            if scope_set(obj) != scope_set(old) {
                out.push(invalid(
                    "spec.scopes",
                    spec.get("scopes").unwrap_or(&Value::Null),
                    "field is immutable",
                ));
            }
        }
    }
    out
}

/// A quota's `spec.scopes` as a set.
fn scope_set(quota: &Value) -> HashSet<String> {
    quota
        .get("spec")
        .map(|s| strings(s, "scopes"))
        .unwrap_or_default()
        .into_iter()
        .collect()
}

/// kube's `ValidateResourceQuotaStatusUpdate` (its `resourceVersion` check is left out: kube's
/// store fills the version in before validating, so it never fails there).
fn quota_status_update(obj: &Value) -> Vec<Cause> {
    let mut out = Vec::new();
    quota_status(obj, &mut out);
    out
}

/// kube's `ValidateResourceQuotaStatus`: `status.hard` and `status.used`.
fn quota_status(obj: &Value, out: &mut Vec<Cause>) {
    let status = obj.get("status");
    for list in ["hard", "used"] {
        quota_resources(
            status.and_then(|s| s.get(list)),
            &format!("status.{list}"),
            out,
        );
    }
}

/// Each named quantity of a quota resource list: a quota resource name and a valid quantity.
fn quota_resources(list: Option<&Value>, path: &str, out: &mut Vec<Cause>) {
    for (k, v) in entries(list) {
        let p = key(path, k);
        quota_resource_name(k, &p, out);
        resource_quantity_value(k, v, &p, out);
    }
}

/// kube's `ValidateResourceQuotaResourceName`.
fn quota_resource_name(name: &str, path: &str, out: &mut Vec<Cause>) {
    resource_name(name, path, out);
    if !name.contains('/') && !is_standard_quota_resource(name) {
        out.push(invalid_str(
            path,
            name,
            "must be a standard resource for quota",
        ));
    }
}

/// kube's `ValidateResourceQuotaSpec`.
fn quota_spec(spec: &Value, out: &mut Vec<Cause>) {
    quota_resources(spec.get("hard"), "spec.hard", out);
    let mut hard: Vec<&String> = entries(spec.get("hard"))
        .into_iter()
        .map(|(k, _)| k)
        .collect();
    hard.sort();
    quota_scopes(spec, &hard, out);
    if let Some(sel) = set(spec, "scopeSelector") {
        scope_selector(spec, sel, &hard, out);
    }
}

/// `helper.IsStandardResourceQuotaScope` (`VolumeAttributesClass` is GA in 1.34).
fn is_standard_scope(scope: &str) -> bool {
    matches!(
        scope,
        "Terminating"
            | "NotTerminating"
            | "BestEffort"
            | "NotBestEffort"
            | "PriorityClass"
            | "CrossNamespacePodAffinity"
            | "VolumeAttributesClass"
    )
}

/// `helper.IsResourceQuotaScopeValidForResource`.
fn scope_valid_for(scope: &str, resource: &str) -> bool {
    let pod_count = resource == "pods";
    let pod_compute = matches!(
        resource,
        "cpu" | "memory" | "limits.cpu" | "limits.memory" | "requests.cpu" | "requests.memory"
    );
    match scope {
        "Terminating"
        | "NotTerminating"
        | "NotBestEffort"
        | "PriorityClass"
        | "CrossNamespacePodAffinity" => pod_count || pod_compute,
        "BestEffort" => pod_count,
        "VolumeAttributesClass" => {
            matches!(resource, "persistentvolumeclaims" | "requests.storage")
        }
        _ => true,
    }
}

/// Whether a set of scopes holds both of a conflicting pair, once per pair.
fn conflicting_pairs(scopes: &HashSet<&str>) -> usize {
    [
        ("BestEffort", "NotBestEffort"),
        ("Terminating", "NotTerminating"),
    ]
    .iter()
    .filter(|(a, b)| scopes.contains(a) && scopes.contains(b))
    .count()
}

/// kube's `validateResourceQuotaScopes` (the list itself is the bad value).
fn quota_scopes(spec: &Value, hard: &[&String], out: &mut Vec<Cause>) {
    let scopes = strings(spec, "scopes");
    if scopes.is_empty() {
        return;
    }
    let path = "spec.scopes";
    let value = spec.get("scopes").cloned().unwrap_or(Value::Null);
    let mut seen = HashSet::new();
    // Each cause carries the whole list, so kube's repeats of one (a cause per scope and
    // resource) are made once: a long hostile list would otherwise cost its size squared.
    let (mut unsupported, mut misapplied) = (false, false);
    for scope in &scopes {
        if !unsupported && !is_standard_scope(scope) {
            unsupported = true;
            out.push(invalid(path, &value, "unsupported scope"));
        }
        if !misapplied
            && hard
                .iter()
                .any(|k| is_standard_quota_resource(k) && !scope_valid_for(scope, k))
        {
            misapplied = true;
            out.push(invalid(
                path,
                &value,
                "unsupported scope applied to resource",
            ));
        }
        seen.insert(scope.as_str());
    }
    if conflicting_pairs(&seen) > 0 {
        out.push(invalid(path, &value, "conflicting scopes"));
    }
}

/// kube's `validateScopedResourceSelectorRequirement` (every expression is reported at
/// `matchExpressions`, with no index, as kube does).
fn scope_selector(spec: &Value, sel: &Value, hard: &[&String], out: &mut Vec<Cause>) {
    let path = "spec.scopeSelector.matchExpressions";
    let mut seen = HashSet::new();
    let mut reported_misapplied = false;
    for req in items(sel, "matchExpressions") {
        let scope = str_of(req, "scopeName");
        if !is_standard_scope(scope) {
            out.push(invalid_str(
                &child(path, "scopeName"),
                scope,
                "unsupported scope",
            ));
        }
        let misapplied = hard
            .iter()
            .any(|k| is_standard_quota_resource(k) && !scope_valid_for(scope, k));
        if misapplied && !reported_misapplied {
            // Once: each cause carries the whole selector (see `quota_scopes`).
            reported_misapplied = true;
            out.push(invalid(
                path,
                &scope_selector_value(sel),
                "unsupported scope applied to resource",
            ));
        }
        let op = str_of(req, "operator");
        if matches!(
            scope,
            "BestEffort"
                | "NotBestEffort"
                | "Terminating"
                | "NotTerminating"
                | "CrossNamespacePodAffinity"
        ) && op != "Exists"
        {
            out.push(invalid_str(
                &child(path, "operator"),
                op,
                "must be 'Exists' when scope is any of ResourceQuotaScopeTerminating, ResourceQuotaScopeNotTerminating, ResourceQuotaScopeBestEffort, ResourceQuotaScopeNotBestEffort or ResourceQuotaScopeCrossNamespacePodAffinity",
            ));
        }
        let values = items(req, "values");
        match op {
            "In" | "NotIn" => {
                if values.is_empty() {
                    out.push(required(
                        &child(path, "values"),
                        "must be at least one value when `operator` is 'In' or 'NotIn' for scope selector",
                    ));
                }
            }
            "Exists" | "DoesNotExist" => {
                if !values.is_empty() {
                    out.push(invalid(
                        &child(path, "values"),
                        &Value::Array(values.to_vec()),
                        "must be no value when `operator` is 'Exist' or 'DoesNotExist' for scope selector",
                    ));
                }
            }
            _ => out.push(invalid_str(
                &child(path, "operator"),
                op,
                "not a valid selector operator",
            )),
        }
        seen.insert(scope);
    }
    // kube reports `spec.scopes` (not the selector) as the bad value here.
    let scopes = spec.get("scopes").cloned().unwrap_or(Value::Null);
    for _ in 0..conflicting_pairs(&seen) {
        out.push(invalid(path, &scopes, "conflicting scopes"));
    }
}

/// The internal core.ScopeSelector as JSON (Go field names; unset values `null`).
fn scope_selector_value(sel: &Value) -> Value {
    let exprs: Vec<Value> = items(sel, "matchExpressions")
        .iter()
        .map(|e| {
            let mut m = serde_json::Map::new();
            m.insert(
                "ScopeName".into(),
                Value::String(str_of(e, "scopeName").to_owned()),
            );
            m.insert(
                "Operator".into(),
                Value::String(str_of(e, "operator").to_owned()),
            );
            m.insert(
                "Values".into(),
                set(e, "values").cloned().unwrap_or(Value::Null),
            );
            Value::Object(m)
        })
        .collect();
    let mut m = serde_json::Map::new();
    m.insert(
        "MatchExpressions".into(),
        if set(sel, "matchExpressions").is_some() {
            Value::Array(exprs)
        } else {
            Value::Null
        },
    );
    Value::Object(m)
}

// ---------------------------------------------------------------------------
// RBAC (pkg/apis/rbac/validation)
// ---------------------------------------------------------------------------

/// kube's RBAC strategies validate an update as `ValidateX(new)` followed by
/// `ValidateXUpdate(new, old)`, which runs `ValidateX(new)` again: every cause twice (the
/// roleRef check of the binding updates is `auth::escalation::role_ref_causes`, after these).
fn twice_on_update(mut out: Vec<Cause>, old: Option<&Value>) -> Vec<Cause> {
    if old.is_some() {
        let again = out.clone();
        out.extend(again);
    }
    out
}

/// kube's `ValidatePolicyRule`.
fn policy_rule(rule: &Value, namespaced: bool, path: &str, out: &mut Vec<Cause>) {
    if items(rule, "verbs").is_empty() {
        out.push(required(
            &child(path, "verbs"),
            "verbs must contain at least one value",
        ));
    }
    let urls = items(rule, "nonResourceURLs");
    if !urls.is_empty() {
        let p = child(path, "nonResourceURLs");
        let value = Value::Array(urls.to_vec());
        if namespaced {
            out.push(invalid(
                &p,
                &value,
                "namespaced rules cannot apply to non-resource URLs",
            ));
        }
        if !items(rule, "apiGroups").is_empty()
            || !items(rule, "resources").is_empty()
            || !items(rule, "resourceNames").is_empty()
        {
            out.push(invalid(
                &p,
                &value,
                "rules cannot apply to both regular resources and non-resource URLs",
            ));
        }
        return;
    }
    if items(rule, "apiGroups").is_empty() {
        out.push(required(
            &child(path, "apiGroups"),
            "resource rules must supply at least one api group",
        ));
    }
    if items(rule, "resources").is_empty() {
        out.push(required(
            &child(path, "resources"),
            "resource rules must supply at least one resource",
        ));
    }
}

/// Each of `rules`, as kube's `ValidateRole`/`ValidateClusterRole` loop over them.
fn rules(obj: &Value, namespaced: bool, out: &mut Vec<Cause>) {
    for (i, r) in items(obj, "rules").iter().enumerate() {
        policy_rule(r, namespaced, &index("rules", i), out);
    }
}

/// kube's `ValidateRole` and `ValidateRoleUpdate`.
fn role(obj: &Value, old: Option<&Value>) -> Vec<Cause> {
    let mut out = Vec::new();
    rules(obj, true, &mut out);
    twice_on_update(out, old)
}

/// Whether a ClusterRole's aggregation selectors fail the strict selector validation (kube's
/// strategy then allows invalid label values in them on update).
fn has_invalid_aggregation_selector(role: &Value) -> bool {
    role.get("aggregationRule")
        .map(|ar| items(ar, "clusterRoleSelectors"))
        .unwrap_or(&[])
        .iter()
        .any(label_selector_fails)
}

/// kube's `ValidateClusterRole` and `ValidateClusterRoleUpdate`, with the strategy's
/// `AllowInvalidLabelValueInSelector` when the stored ClusterRole already has one.
fn cluster_role(obj: &Value, old: Option<&Value>) -> Vec<Cause> {
    let mut out = Vec::new();
    rules(obj, false, &mut out);
    let allow = old.is_some_and(has_invalid_aggregation_selector);
    if let Some(ar) = set(obj, "aggregationRule") {
        let path = "aggregationRule.clusterRoleSelectors";
        let selectors = items(ar, "clusterRoleSelectors");
        if selectors.is_empty() {
            out.push(required(
                path,
                "at least one clusterRoleSelector required if aggregationRule is non-nil",
            ));
        }
        for (i, sel) in selectors.iter().enumerate() {
            let p = index(path, i);
            label_selector(sel, &p, allow, &mut out);
            if label_selector_fails(sel) {
                // kube reports the converted selector, nil after the error: `null`.
                out.push(invalid(&p, &Value::Null, "invalid label selector."));
            }
        }
    }
    twice_on_update(out, old)
}

/// kube's `ValidateRoleBinding`/`ValidateClusterRoleBinding` and their updates (`namespaced`
/// for RoleBindings). kube's v1 defaults are applied to what is checked: an empty
/// `roleRef.apiGroup` is RBAC's group, an empty subject `apiGroup` RBAC's group for Users and
/// Groups.
fn binding(obj: &Value, old: Option<&Value>, namespaced: bool) -> Vec<Cause> {
    let mut out = Vec::new();
    let role_ref = obj.get("roleRef").unwrap_or(&Value::Null);
    let group = match str_of(role_ref, "apiGroup") {
        "" => RBAC,
        g => g,
    };
    if group != RBAC {
        out.push(not_supported(
            "roleRef.apiGroup",
            &Value::String(group.to_owned()),
            &[RBAC],
        ));
    }
    let kind = str_of(role_ref, "kind");
    let kinds: &[&str] = if namespaced {
        &["Role", "ClusterRole"]
    } else {
        &["ClusterRole"]
    };
    if !kinds.contains(&kind) {
        out.push(not_supported(
            "roleRef.kind",
            &Value::String(kind.to_owned()),
            kinds,
        ));
    }
    let name = str_of(role_ref, "name");
    if name.is_empty() {
        out.push(required("roleRef.name", ""));
    } else {
        for msg in path_segment_name(name) {
            out.push(invalid_str("roleRef.name", name, &msg));
        }
    }
    for (i, s) in items(obj, "subjects").iter().enumerate() {
        subject(s, namespaced, &index("subjects", i), &mut out);
    }
    twice_on_update(out, old)
}

/// kube's `ValidateRoleBindingSubject`.
fn subject(s: &Value, namespaced: bool, path: &str, out: &mut Vec<Cause>) {
    let name = str_of(s, "name");
    let name_path = child(path, "name");
    if name.is_empty() {
        out.push(required(&name_path, ""));
    }
    let kind = str_of(s, "kind");
    let group = match (str_of(s, "apiGroup"), kind) {
        ("", "User" | "Group") => RBAC,
        (g, _) => g,
    };
    match kind {
        "ServiceAccount" => {
            if !name.is_empty() {
                for msg in dns1123_subdomain(name) {
                    out.push(invalid_str(&name_path, name, &msg));
                }
            }
            if !group.is_empty() {
                out.push(not_supported(
                    &child(path, "apiGroup"),
                    &Value::String(group.to_owned()),
                    &[""],
                ));
            }
            if !namespaced && str_of(s, "namespace").is_empty() {
                out.push(required(&child(path, "namespace"), ""));
            }
        }
        "User" | "Group" => {
            if group != RBAC {
                out.push(not_supported(
                    &child(path, "apiGroup"),
                    &Value::String(group.to_owned()),
                    &[RBAC],
                ));
            }
        }
        _ => out.push(not_supported(
            &child(path, "kind"),
            &Value::String(kind.to_owned()),
            &["ServiceAccount", "User", "Group"],
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn msgs(causes: &[Cause]) -> Vec<String> {
        causes.iter().map(ToString::to_string).collect()
    }

    // ---- HorizontalPodAutoscaler ----

    fn hpa_obj(spec: Value) -> Value {
        json!({"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
               "metadata": {"name": "h", "namespace": "d"}, "spec": spec})
    }

    fn cpu_metric() -> Value {
        json!({"type": "Resource", "resource": {"name": "cpu",
               "target": {"type": "Utilization", "averageUtilization": 80}}})
    }

    #[test]
    fn hpa_valid_and_basic_errors() {
        let ok = hpa_obj(json!({
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
            "minReplicas": 1, "maxReplicas": 5, "metrics": [cpu_metric()],
            "behavior": {"scaleDown": {"stabilizationWindowSeconds": 300, "selectPolicy": "Max",
                "policies": [{"type": "Percent", "value": 100, "periodSeconds": 15}]}}
        }));
        assert!(validate(AUTOSCALING, "horizontalpodautoscalers", &ok, None).is_empty());

        let bad = hpa_obj(json!({"scaleTargetRef": {"kind": "a/b"}, "minReplicas": 0,
                                 "maxReplicas": 0}));
        assert_eq!(
            msgs(&validate(AUTOSCALING, "horizontalpodautoscalers", &bad, None)),
            vec![
                "spec.minReplicas: Invalid value: 0: must be greater than or equal to 1",
                "spec.maxReplicas: Invalid value: 0: must be greater than 0",
                "spec.scaleTargetRef.kind: Invalid value: \"a/b\": may not contain '/'",
                "spec.scaleTargetRef.name: Required value",
                "spec.metrics: Forbidden: must specify at least one Object or External metric to support scaling to zero replicas",
            ]
        );
        let inverted = hpa_obj(json!({"scaleTargetRef": {"kind": "D", "name": "w"},
                                      "minReplicas": 4, "maxReplicas": 2}));
        assert_eq!(
            msgs(&validate(AUTOSCALING, "horizontalpodautoscalers", &inverted, None)),
            vec!["spec.maxReplicas: Invalid value: 2: must be greater than or equal to `minReplicas`"]
        );
    }

    #[test]
    fn hpa_min_replicas_zero_ratchets_on_update() {
        let zero = hpa_obj(json!({"scaleTargetRef": {"kind": "D", "name": "w"},
            "minReplicas": 0, "maxReplicas": 3,
            "metrics": [{"type": "External", "external": {"metric": {"name": "queue"},
                "target": {"type": "AverageValue", "averageValue": "10"}}}]}));
        assert_eq!(
            msgs(&validate(
                AUTOSCALING,
                "horizontalpodautoscalers",
                &zero,
                None
            )),
            vec!["spec.minReplicas: Invalid value: 0: must be greater than or equal to 1"]
        );
        assert!(validate(AUTOSCALING, "horizontalpodautoscalers", &zero, Some(&zero)).is_empty());
    }

    #[test]
    fn hpa_metric_sources() {
        let h = hpa_obj(
            json!({"scaleTargetRef": {"kind": "D", "name": "w"}, "maxReplicas": 3,
            "metrics": [
                {"type": "Foo"},
                {"type": "Resource", "resource": {"name": "", "target": {"type": "Bad"}},
                 "pods": {"metric": {"name": "x"}, "target": {"type": "AverageValue", "averageValue": "1"}}},
                {"type": "ContainerResource", "containerResource": {"name": "foo", "container": "App",
                    "target": {"type": "Utilization", "averageUtilization": 0, "averageValue": "1"}}},
                {"type": "Object", "object": {"describedObject": {"kind": "Service", "name": "s"},
                    "metric": {"name": "a/b"}, "target": {"type": "Value"}}}
            ]}),
        );
        let unsupported = "spec.metrics[0].type: Unsupported value: \"Foo\": supported values: \"ContainerResource\", \"External\", \"Object\", \"Pods\", \"Resource\"";
        assert_eq!(
            msgs(&validate(AUTOSCALING, "horizontalpodautoscalers", &h, None)),
            vec![
                unsupported.to_owned(),
                unsupported.to_owned(),
                // Only the first source set (pods, in kube's order) is validated.
                "spec.metrics[1].pods: Forbidden: must populate the given metric source only".to_owned(),
                "spec.metrics[2].containerResource.name: Invalid value: \"foo\": must be a standard resource type or fully qualified".to_owned(),
                "spec.metrics[2].containerResource.name: Invalid value: \"foo\": must be a standard resource for containers".to_owned(),
                format!(
                    "spec.metrics[2].containerResource.container: Invalid value: \"App\": {}",
                    crate::model::meta::DNS1123_LABEL_MSG
                ),
                "spec.metrics[2].containerResource.target.averageUtilization: Invalid value: 0: must be greater than 0".to_owned(),
                "spec.metrics[2].containerResource.target.averageValue: Forbidden: may not set both a target raw value and a target utilization".to_owned(),
                "spec.metrics[3].object.metric.name: Invalid value: \"a/b\": may not contain '/'".to_owned(),
                "spec.metrics[3].object.target.averageValue: Required value: must set either a target value or averageValue".to_owned(),
            ]
        );
    }

    #[test]
    fn hpa_resource_source_checks_come_first() {
        let h = hpa_obj(
            json!({"scaleTargetRef": {"kind": "D", "name": "w"}, "maxReplicas": 3,
            "metrics": [{"type": "Resource", "resource": {"name": "",
                "target": {"type": "Bad", "averageValue": "0"}}}]}),
        );
        assert_eq!(
            msgs(&validate(AUTOSCALING, "horizontalpodautoscalers", &h, None)),
            vec![
                "spec.metrics[0].resource.name: Required value: must specify a resource name",
                "spec.metrics[0].resource.target.type: Invalid value: \"Bad\": must be either Utilization, Value, or AverageValue",
                "spec.metrics[0].resource.target.averageValue: Invalid value: \"0\": must be positive",
            ]
        );
        let missing = hpa_obj(json!({"scaleTargetRef": {"kind": "D", "name": "w"},
            "maxReplicas": 3, "metrics": [{"type": "Pods"}]}));
        assert_eq!(
            msgs(&validate(AUTOSCALING, "horizontalpodautoscalers", &missing, None)),
            vec!["spec.metrics[0].pods: Required value: must populate information for the given metric source"]
        );
    }

    #[test]
    fn hpa_behavior_and_tolerance() {
        let h = hpa_obj(
            json!({"scaleTargetRef": {"kind": "D", "name": "w"}, "maxReplicas": 3,
            "behavior": {
                "scaleUp": {"stabilizationWindowSeconds": 4000, "selectPolicy": "Most",
                    "policies": [{"type": "Nodes", "value": 0, "periodSeconds": 1801}]},
                "scaleDown": {"policies": [], "tolerance": "0.05"}}}),
        );
        assert_eq!(
            msgs(&validate(AUTOSCALING, "horizontalpodautoscalers", &h, None)),
            vec![
                "spec.behavior.scaleUp.stabilizationWindowSeconds: Invalid value: 4000: must be less than or equal to 3600",
                "spec.behavior.scaleUp.selectPolicy: Unsupported value: \"Most\": supported values: \"Disabled\", \"Max\", \"Min\"",
                "spec.behavior.scaleUp.policies[0].type: Unsupported value: \"Nodes\": supported values: \"Percent\", \"Pods\"",
                "spec.behavior.scaleUp.policies[0].value: Invalid value: 0: must be greater than zero",
                "spec.behavior.scaleUp.policies[0].periodSeconds: Invalid value: 1801: must be less than or equal to 1800",
                "spec.behavior.scaleDown.policies: Required value: must specify at least one Policy",
                "spec.behavior.scaleDown.tolerance: Forbidden: tolerance is not supported when the HPAConfigurableTolerance feature gate is not enabled",
            ]
        );
        // A stored tolerance may stay.
        let with = hpa_obj(
            json!({"scaleTargetRef": {"kind": "D", "name": "w"}, "maxReplicas": 3,
            "behavior": {"scaleDown": {"policies": [{"type": "Pods", "value": 1, "periodSeconds": 60}],
                "tolerance": "50m"}}}),
        );
        assert!(validate(AUTOSCALING, "horizontalpodautoscalers", &with, Some(&with)).is_empty());
    }

    #[test]
    fn hpa_v1_is_validated_as_v2() {
        let v1 = json!({"apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": "h"},
            "spec": {"scaleTargetRef": {"kind": "D", "name": "w"}, "minReplicas": 1,
                     "maxReplicas": 3, "targetCPUUtilizationPercentage": 0}});
        assert_eq!(
            msgs(&validate(AUTOSCALING, "horizontalpodautoscalers", &v1, None)),
            vec!["spec.metrics[0].resource.target.averageUtilization: Invalid value: 0: must be greater than 0"]
        );
    }

    #[test]
    fn hpa_status_update() {
        let h = json!({"apiVersion": "autoscaling/v2", "spec": {},
                       "status": {"currentReplicas": -1, "desiredReplicas": 2}});
        assert_eq!(
            msgs(&validate_status(
                AUTOSCALING,
                "horizontalpodautoscalers",
                &h,
                &h
            )),
            vec!["status.currentReplicas: Invalid value: -1: must be greater than or equal to 0"]
        );
    }

    // ---- Lease ----

    #[test]
    fn lease_spec() {
        let ok = json!({"spec": {"holderIdentity": "a", "leaseDurationSeconds": 15,
                                 "leaseTransitions": 0}});
        assert!(validate(COORDINATION, "leases", &ok, None).is_empty());
        let bad = json!({"spec": {"leaseDurationSeconds": 0, "leaseTransitions": -1,
                                  "strategy": "Foo", "preferredHolder": "b"}});
        // On create strategy and preferredHolder are dropped (gate off): not checked.
        assert_eq!(
            msgs(&validate(COORDINATION, "leases", &bad, None)),
            vec![
                "spec.leaseDurationSeconds: Invalid value: 0: must be greater than 0",
                "spec.leaseTransitions: Invalid value: -1: must be greater than or equal to 0",
            ]
        );
        // Kept when the stored Lease has them.
        let stored =
            json!({"spec": {"strategy": "OldestEmulationVersion", "preferredHolder": "a"}});
        let new = json!({"spec": {"strategy": "Foo", "preferredHolder": "b"}});
        assert_eq!(
            msgs(&validate(COORDINATION, "leases", &new, Some(&stored))),
            vec!["spec.strategy.strategy: Unsupported value: \"Foo\": supported values: \"OldestEmulationVersion\""]
        );
        let holder_only = json!({"spec": {"preferredHolder": "b"}});
        let stored_holder = json!({"spec": {"preferredHolder": "a"}});
        assert_eq!(
            msgs(&validate(
                COORDINATION,
                "leases",
                &holder_only,
                Some(&stored_holder)
            )),
            vec!["spec.preferredHolder: Forbidden: may only be specified if `strategy` is defined"]
        );
    }

    // ---- Node ----

    /// What guest-examples/c/node/node.c creates.
    fn example_node() -> Value {
        json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "turtle-node-1"},
            "spec": {"podCIDR": "10.244.0.0/16", "podCIDRs": ["10.244.0.0/16"]},
            "status": {
                "addresses": [{"type": "InternalIP", "address": "10.0.0.1"},
                              {"type": "Hostname", "address": "turtle-node-1"}],
                "capacity": {"cpu": "32", "memory": "256Gi", "pods": "110", "ephemeral-storage": "1Ti"},
                "allocatable": {"cpu": "32", "memory": "256Gi", "pods": "110", "ephemeral-storage": "1Ti"}}})
    }

    #[test]
    fn example_node_passes() {
        let n = example_node();
        assert!(validate("", "nodes", &n, None).is_empty());
        assert!(validate("", "nodes", &n, Some(&n)).is_empty());
        assert!(validate_status("", "nodes", &n, &n).is_empty());
    }

    #[test]
    fn node_taints_and_cidrs() {
        let n = json!({"spec": {
            "podCIDRs": ["10.0.0.0/24", "10.1.0.0/24", "10.0.0.0/24"],
            "taints": [{"key": "a", "effect": "NoSchedule"}, {"key": "bad key", "value": "v", "effect": "Bad"},
                       {"key": "a", "effect": "NoSchedule"}, {"key": "b"}]}});
        let mut want: Vec<String> = crate::schema::objectmeta::qualified_name("bad key")
            .iter()
            .map(|m| format!("metadata.taints[1].key: Invalid value: \"bad key\": {m}"))
            .collect();
        want.extend(
            [
                "metadata.taints[1].effect: Unsupported value: \"Bad\": supported values: \"NoSchedule\", \"PreferNoSchedule\", \"NoExecute\"",
                "metadata.taints[2]: Duplicate value: {\"Key\":\"a\",\"Value\":\"\",\"Effect\":\"NoSchedule\",\"TimeAdded\":null}: taints must be unique by key and effect pair",
                "metadata.taints[3].effect: Required value",
                "spec.podCIDRs: Invalid value: [\"10.0.0.0/24\",\"10.1.0.0/24\",\"10.0.0.0/24\"]: may specify no more than one CIDR for each IP family",
                "spec.podCIDRs[2]: Duplicate value: \"10.0.0.0/24\"",
            ]
            .map(str::to_owned),
        );
        assert_eq!(msgs(&validate("", "nodes", &n, None)), want);

        let dual = json!({"spec": {"podCIDRs": ["10.0.0.0/24", "fd00::/64"]}});
        assert!(validate("", "nodes", &dual, None).is_empty());
        let broken = json!({"spec": {"podCIDRs": ["10.0.0.0/24", "nope"]}});
        assert_eq!(
            msgs(&validate("", "nodes", &broken, None)),
            vec![
                "spec.podCIDRs[1]: Invalid value: \"nope\": must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)",
                "spec.podCIDRs: Internal error: invalid PodCIDRs. failed to check with dual stack with error:invalid CIDR[1]: <nil> (invalid CIDR address: nope)",
                "spec.podCIDRs: Invalid value: [\"10.0.0.0/24\",\"nope\"]: may specify no more than one CIDR for each IP family",
            ]
        );
        assert_eq!(sloppy_cidr("010.0.0.0/8"), Some(false));
        assert_eq!(sloppy_cidr("10.0.0.0/33"), None);
    }

    #[test]
    fn node_update_immutability_and_status() {
        let old = example_node();
        let mut new = old.clone();
        new["spec"]["podCIDRs"] = json!(["10.245.0.0/16"]);
        new["spec"]["podCIDR"] = json!("10.245.0.0/16");
        new["spec"]["providerID"] = json!("aws:///i-1");
        assert_eq!(
            msgs(&validate("", "nodes", &new, Some(&old))),
            vec!["spec.podCIDRs: Forbidden: node updates may not change podCIDR except from \"\" to valid"]
        );
        let mut stored = old.clone();
        stored["spec"]["providerID"] = json!("aws:///i-0");
        assert_eq!(
            msgs(&validate("", "nodes", &new, Some(&stored))),
            vec![
                "spec.podCIDRs: Forbidden: node updates may not change podCIDR except from \"\" to valid",
                "spec.providerID: Forbidden: node updates may not change providerID except from \"\" to valid",
            ]
        );
        let mut status = old.clone();
        status["status"]["addresses"] = json!([{"type": "InternalIP", "address": "10.0.0.1"},
                                               {"type": "InternalIP", "address": "10.0.0.1"}]);
        status["status"]["capacity"]["pods"] = json!("1500m");
        status["status"]["allocatable"]["cpu"] = json!("-1");
        assert_eq!(
            msgs(&validate_status("", "nodes", &status, &old)),
            vec![
                "status.capacity.pods: Invalid value: \"1500m\": must be an integer",
                "status.allocatable.cpu: Invalid value: \"-1\": must be greater than or equal to 0",
                "status.addresses[1]: Duplicate value: {\"Type\":\"InternalIP\",\"Address\":\"10.0.0.1\"}",
            ]
        );
    }

    // ---- ResourceQuota ----

    #[test]
    fn resource_quota_names_and_quantities() {
        let ok = json!({"spec": {"hard": {"pods": "10", "requests.cpu": "4", "count/deployments.apps": "2",
                                          "requests.nvidia.com/gpu": "1"}}});
        assert!(validate("", "resourcequotas", &ok, None).is_empty());
        let bad = json!({"spec": {"hard": {"foo": "1", "limits.pods": "1", "pods": "1500m",
                                           "cpu": "-1"}}});
        assert_eq!(
            msgs(&validate("", "resourcequotas", &bad, None)),
            vec![
                "spec.hard[cpu]: Invalid value: \"-1\": must be greater than or equal to 0",
                "spec.hard[foo]: Invalid value: \"foo\": must be a standard resource type or fully qualified",
                "spec.hard[foo]: Invalid value: \"foo\": must be a standard resource for quota",
                "spec.hard[limits.pods]: Invalid value: \"limits.pods\": must be a standard resource type or fully qualified",
                "spec.hard[limits.pods]: Invalid value: \"limits.pods\": must be a standard resource for quota",
                "spec.hard[pods]: Invalid value: \"1500m\": must be an integer",
            ]
        );
    }

    #[test]
    fn resource_quota_scopes() {
        let q = json!({"spec": {"hard": {"pods": "1", "memory": "1Gi"},
                                "scopes": ["BestEffort", "NotBestEffort", "Foo"]}});
        let list = "[\"BestEffort\",\"NotBestEffort\",\"Foo\"]";
        assert_eq!(
            msgs(&validate("", "resourcequotas", &q, None)),
            vec![
                format!(
                    "spec.scopes: Invalid value: {list}: unsupported scope applied to resource"
                ),
                format!("spec.scopes: Invalid value: {list}: unsupported scope"),
                format!("spec.scopes: Invalid value: {list}: conflicting scopes"),
            ]
        );
        let sel = json!({"spec": {"hard": {"pods": "1"}, "scopeSelector": {"matchExpressions": [
            {"scopeName": "BestEffort", "operator": "In", "values": ["x"]},
            {"scopeName": "PriorityClass", "operator": "Exists", "values": ["x"]},
            {"scopeName": "PriorityClass", "operator": "In"}]}}});
        assert_eq!(
            msgs(&validate("", "resourcequotas", &sel, None)),
            vec![
                "spec.scopeSelector.matchExpressions.operator: Invalid value: \"In\": must be 'Exists' when scope is any of ResourceQuotaScopeTerminating, ResourceQuotaScopeNotTerminating, ResourceQuotaScopeBestEffort, ResourceQuotaScopeNotBestEffort or ResourceQuotaScopeCrossNamespacePodAffinity",
                "spec.scopeSelector.matchExpressions.values: Invalid value: [\"x\"]: must be no value when `operator` is 'Exist' or 'DoesNotExist' for scope selector",
                "spec.scopeSelector.matchExpressions.values: Required value: must be at least one value when `operator` is 'In' or 'NotIn' for scope selector",
            ]
        );
        let mem = json!({"spec": {"hard": {"memory": "1Gi"}, "scopeSelector": {"matchExpressions": [
            {"scopeName": "BestEffort", "operator": "Exists"}]}}});
        assert_eq!(
            msgs(&validate("", "resourcequotas", &mem, None)),
            vec!["spec.scopeSelector.matchExpressions: Invalid value: {\"MatchExpressions\":[{\"ScopeName\":\"BestEffort\",\"Operator\":\"Exists\",\"Values\":null}]}: unsupported scope applied to resource"]
        );
    }

    #[test]
    fn resource_quota_update_and_status() {
        let old = json!({"spec": {"hard": {"pods": "1"}, "scopes": ["BestEffort"]},
                         "status": {"used": {"foo": "1"}}});
        let new = json!({"spec": {"hard": {"pods": "1"}}, "status": {"used": {"foo": "1"}}});
        // The status is not validated by a main update.
        assert_eq!(
            msgs(&validate("", "resourcequotas", &new, Some(&old))),
            vec!["spec.scopes: Invalid value: null: field is immutable"]
        );
        assert_eq!(
            msgs(&validate_status("", "resourcequotas", &new, &old)),
            vec![
                "status.used[foo]: Invalid value: \"foo\": must be a standard resource type or fully qualified",
                "status.used[foo]: Invalid value: \"foo\": must be a standard resource for quota",
            ]
        );
    }

    // ---- RBAC ----

    #[test]
    fn roles_and_rules() {
        let ok = json!({"rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]});
        assert!(validate(RBAC, "roles", &ok, None).is_empty());
        let bad = json!({"rules": [
            {"nonResourceURLs": ["/healthz"], "resources": ["pods"], "verbs": ["get"]},
            {"resources": []}]});
        let want = vec![
            "rules[0].nonResourceURLs: Invalid value: [\"/healthz\"]: namespaced rules cannot apply to non-resource URLs",
            "rules[0].nonResourceURLs: Invalid value: [\"/healthz\"]: rules cannot apply to both regular resources and non-resource URLs",
            "rules[1].verbs: Required value: verbs must contain at least one value",
            "rules[1].apiGroups: Required value: resource rules must supply at least one api group",
            "rules[1].resources: Required value: resource rules must supply at least one resource",
        ];
        assert_eq!(msgs(&validate(RBAC, "roles", &bad, None)), want);
        // An update reports them twice, as kube's strategy does.
        let twice: Vec<&str> = want.iter().chain(want.iter()).copied().collect();
        assert_eq!(msgs(&validate(RBAC, "roles", &bad, Some(&ok))), twice);
        let urls = json!({"rules": [{"nonResourceURLs": ["/healthz"], "verbs": ["get"]}]});
        assert!(validate(RBAC, "clusterroles", &urls, None).is_empty());
    }

    #[test]
    fn cluster_role_aggregation() {
        let ok = json!({"aggregationRule": {"clusterRoleSelectors": [
            {"matchLabels": {"rbac.example.com/aggregate-to-view": "true"}}]}});
        assert!(validate(RBAC, "clusterroles", &ok, None).is_empty());
        let empty = json!({"aggregationRule": {}});
        assert_eq!(
            msgs(&validate(RBAC, "clusterroles", &empty, None)),
            vec!["aggregationRule.clusterRoleSelectors: Required value: at least one clusterRoleSelector required if aggregationRule is non-nil"]
        );
        let bad = json!({"aggregationRule": {"clusterRoleSelectors": [
            {"matchExpressions": [{"key": "k", "operator": "In", "values": ["a b"]}]}]}});
        let mut want: Vec<String> = crate::schema::objectmeta::label_value("a b")
            .iter()
            .map(|m| format!(
                "aggregationRule.clusterRoleSelectors[0].matchExpressions[0].values[0]: Invalid value: \"a b\": {m}"
            ))
            .collect();
        let selector_err =
            "aggregationRule.clusterRoleSelectors[0]: Invalid value: null: invalid label selector."
                .to_owned();
        want.push(selector_err.clone());
        assert_eq!(msgs(&validate(RBAC, "clusterroles", &bad, None)), want);
        // Stored with the bad value: the value check is relaxed, the conversion still fails.
        assert_eq!(
            msgs(&validate(RBAC, "clusterroles", &bad, Some(&bad))),
            vec![selector_err.clone(), selector_err]
        );
    }

    #[test]
    fn bindings() {
        let ok = json!({"roleRef": {"apiGroup": RBAC, "kind": "Role", "name": "r"},
            "subjects": [{"kind": "User", "name": "alice"},
                         {"kind": "ServiceAccount", "name": "default", "namespace": "d"},
                         {"kind": "Group", "name": "g", "apiGroup": RBAC}]});
        assert!(validate(RBAC, "rolebindings", &ok, None).is_empty());
        assert_eq!(
            msgs(&validate(RBAC, "clusterrolebindings", &ok, None)),
            vec!["roleRef.kind: Unsupported value: \"Role\": supported values: \"ClusterRole\""]
        );
        let bad = json!({"roleRef": {"apiGroup": "x", "kind": "Foo", "name": "a/b"},
            "subjects": [{"kind": "ServiceAccount", "name": "Bad", "apiGroup": "x"},
                         {"kind": "User", "name": "", "apiGroup": "x"},
                         {"kind": "Robot", "name": "r"}]});
        assert_eq!(
            msgs(&validate(RBAC, "clusterrolebindings", &bad, None)),
            vec![
                "roleRef.apiGroup: Unsupported value: \"x\": supported values: \"rbac.authorization.k8s.io\"".to_owned(),
                "roleRef.kind: Unsupported value: \"Foo\": supported values: \"ClusterRole\"".to_owned(),
                "roleRef.name: Invalid value: \"a/b\": may not contain '/'".to_owned(),
                format!(
                    "subjects[0].name: Invalid value: \"Bad\": {}",
                    crate::model::meta::DNS1123_SUBDOMAIN_MSG
                ),
                "subjects[0].apiGroup: Unsupported value: \"x\": supported values: \"\"".to_owned(),
                "subjects[0].namespace: Required value".to_owned(),
                "subjects[1].name: Required value".to_owned(),
                "subjects[1].apiGroup: Unsupported value: \"x\": supported values: \"rbac.authorization.k8s.io\"".to_owned(),
                "subjects[2].kind: Unsupported value: \"Robot\": supported values: \"ServiceAccount\", \"User\", \"Group\"".to_owned(),
            ]
        );
    }

    #[test]
    fn other_kinds_are_not_checked() {
        assert!(validate("", "configmaps", &json!({}), None).is_empty());
        assert!(validate_status("", "pods", &json!({}), &json!({})).is_empty());
        // Wrong shapes never panic.
        for (g, r) in [
            (AUTOSCALING, "horizontalpodautoscalers"),
            (COORDINATION, "leases"),
            ("", "nodes"),
            ("", "resourcequotas"),
            (RBAC, "roles"),
            (RBAC, "clusterroles"),
            (RBAC, "rolebindings"),
            (RBAC, "clusterrolebindings"),
        ] {
            for v in [
                json!(null),
                json!([]),
                json!({"spec": 3, "status": [], "rules": {}}),
                json!({"spec": {"metrics": [1], "behavior": {"scaleUp": 2}, "taints": [3],
                             "hard": {"pods": 7}, "scopes": [1]}}),
            ] {
                let _ = validate(g, r, &v, None);
                let _ = validate(g, r, &v, Some(&v));
                let _ = validate_status(g, r, &v, &v);
            }
        }
    }
}
