//! `horizontal-pod-autoscaler`: kube-controller-manager's HorizontalPodAutoscaler controller
//! (`pkg/controller/podautoscaler`, kube 1.34), for `autoscaling/v2` (and v1, which the API
//! converts).
//!
//! Every 15 s (kube's `--horizontal-pod-autoscaler-sync-period`) each HPA:
//! - reads its target's `scale` subresource (the kind found through discovery, as kube's REST
//!   mapper does); on failure `FailedGetScale` (Event and `AbleToScale` False);
//! - a target scaled to 0 disables autoscaling (`ScalingActive` False `ScalingDisabled`); one
//!   above `maxReplicas` or below `minReplicas` is brought within them at once, metrics or not;
//! - otherwise computes a replica count from its metrics. `Resource` and `ContainerResource`
//!   metrics come from `metrics.k8s.io/v1beta1` PodMetrics, with kube's replica calculator
//!   (ready, unready and missing Pods, the 10% tolerance, the CPU initialization period); `Pods`
//!   and `Object` metrics need `custom.metrics.k8s.io`, `External` ones
//!   `external.metrics.k8s.io`. turtles serves none of these groups itself, so, as in a kube
//!   cluster without metrics-server, the HPA reports kube's `FailedGetResourceMetric` (and so on)
//!   and `FailedComputeMetricsReplicas`; whoever serves `pods` in `metrics.k8s.io` (a CRD of
//!   PodMetrics, say) makes resource metrics work;
//! - normalizes the recommendation as kube does: without `behavior`, a 5-minute scale-down
//!   stabilization and a scale-up of at most max(2x, 4); with it, both stabilization windows and
//!   the scaling policies (`Pods`, `Percent`, `selectPolicy`);
//! - writes the new `scale` (`SuccessfulRescale`, or `FailedRescale`), then the status
//!   (`currentReplicas`, `desiredReplicas`, `currentMetrics`, `lastScaleTime`, the conditions
//!   `AbleToScale`, `ScalingActive`, `ScalingLimited`), only when it changed.
//!
//! The recommendations and scale events are kept in memory, as kube's controller keeps them (a
//! reload starts them over, as a kube-controller-manager restart does).

pub mod plan;

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};

use turtles_controller::workload::{format_rfc3339, parse_rfc3339, unix_now};
use turtles_controller::{
    api, events, export, json, meta, quantity, Controller, Gvr, Object, ObjectKey, Outcome,
    Permission, Registration, Value, Watch,
};

use plan::{Memory, Normalized, PodInfo, PodMetric, Rules, Target};

const HPAS: Gvr<'static> = Gvr::new("autoscaling", "v2", "horizontalpodautoscalers");
/// kube's `--horizontal-pod-autoscaler-sync-period`.
const SYNC_SECONDS: u32 = 15;

struct HorizontalPodAutoscaler;

impl Controller for HorizontalPodAutoscaler {
    fn register() -> Registration {
        Registration::new(Watch::of(HPAS))
            .resync_seconds(SYNC_SECONDS)
            .permission(Permission::group(
                "autoscaling",
                &["horizontalpodautoscalers"],
                &["get", "list", "watch"],
            ))
            .permission(Permission::group(
                "autoscaling",
                &["horizontalpodautoscalers/status"],
                &["update"],
            ))
            // kube's system:controller:horizontal-pod-autoscaler: any kind's scale.
            .permission(Permission::new(&["*"], &["*/scale"], &["get", "update"]))
            .permission(Permission::core(&["pods"], &["list"]))
            .permission(Permission::group("metrics.k8s.io", &["pods"], &["list"]))
            .permission(Permission::group(
                "external.metrics.k8s.io",
                &["*"],
                &["list"],
            ))
            .permission(Permission::core(&["events"], &["create", "patch"]))
            // One worker: the recommendations, scale events and sync times live in the
            // instance's memory, and each worker has an instance of its own.
            .max_concurrent_reconciles(1)
    }

    fn reconcile(key: ObjectKey, hpa: Option<Object>) -> Outcome {
        let Some(hpa) = hpa else {
            MEMORY.with(|m| m.borrow_mut().remove(&(key.namespace, key.name)));
            return Outcome::Done;
        };
        // At most one sync per sync period (kube's fixed-interval queue: a change, its own
        // status writes included, waits for the period too). The first is at once.
        let id = (key.namespace.clone(), key.name.clone());
        let now = unix_now_millis();
        let last = MEMORY.with(|m| m.borrow().get(&id).and_then(|mem| mem.last_sync));
        if let Some(wait) = last
            .map(|at| at + i64::from(SYNC_SECONDS) * 1000 - now)
            .filter(|w| *w > 0)
        {
            return Outcome::RequeueAfter(u32::try_from(wait).unwrap_or(u32::MAX));
        }
        MEMORY.with(|m| m.borrow_mut().entry(id).or_default().last_sync = Some(now));
        // Every HPA is synced again after the sync period, success or not; an error is only
        // logged, as kube's is.
        if let Err(e) = sync(hpa.value()) {
            turtles_controller::warn!("{}/{}: {e}", key.namespace, key.name);
        }
        Outcome::Done
    }
}

export!(HorizontalPodAutoscaler);

thread_local! {
    /// What kube's controller keeps per HPA: recommendations and scale events.
    static MEMORY: RefCell<HashMap<(String, String), Memory>> = RefCell::new(HashMap::new());
    /// Scale target kinds resolved through discovery: (apiVersion, kind) -> (resource, when in
    /// Unix seconds); forgotten after [`MAPPING_SECONDS`], as kube's REST mapper is reset.
    static MAPPINGS: RefCell<HashMap<(String, String), (String, i64)>> = RefCell::new(HashMap::new());
    /// This sync's lists (Pods and PodMetrics by selector): the metrics of one HPA share them.
    static LISTS: RefCell<HashMap<String, Result<Value, turtles_controller::ApiError>>> = RefCell::new(HashMap::new());
}

/// Milliseconds since the Unix epoch.
fn unix_now_millis() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

fn str_at<'a>(v: &'a Value, pointer: &str) -> &'a str {
    v.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

fn record(hpa: &Value, warning: bool, reason: &str, note: &str) {
    events::best_effort(hpa, warning, reason, note);
}

/// A collection's path for an apiVersion (`v1` is the core group).
fn group_version_path(api_version: &str) -> String {
    if api_version.contains('/') {
        format!("/apis/{api_version}")
    } else {
        format!("/api/{api_version}")
    }
}

/// How long a kind's resource is remembered (kube resets its discovery mapper every 30 s).
const MAPPING_SECONDS: i64 = 30;

/// The resource of a kind, as kube's REST mapper finds it (from discovery). The error is
/// kube's (the Event's and the condition's text).
fn resource_for(api_version: &str, kind: &str) -> Result<String, String> {
    let key = (api_version.to_owned(), kind.to_owned());
    let now = unix_now();
    if let Some((found, at)) = MAPPINGS.with(|m| m.borrow().get(&key).cloned()) {
        if now - at < MAPPING_SECONDS {
            return Ok(found);
        }
    }
    let parts: Vec<&str> = api_version.split('/').collect();
    let group = match parts.as_slice() {
        [_] => "",
        [g, _] => g,
        _ => return Err(format!("unexpected GroupVersion string: {api_version}")),
    };
    let no_match = || format!("no matches for kind {kind:?} in group {group:?}");
    let list = api::get(&group_version_path(api_version)).map_err(|e| {
        if e.is_not_found() {
            no_match()
        } else {
            e.message
        }
    })?;
    let resource = list["resources"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|r| r["kind"] == kind && !str_at(r, "/name").contains('/'))
        .map(|r| str_at(r, "/name").to_owned())
        .ok_or_else(no_match)?;
    MAPPINGS.with(|m| m.borrow_mut().insert(key, (resource.clone(), now)));
    Ok(resource)
}

/// The target's `scale` path, and the Scale.
fn read_scale(hpa: &Value, namespace: &str) -> Result<(String, Value), String> {
    let target = &hpa["spec"]["scaleTargetRef"];
    let (api_version, kind, name) = (
        str_at(target, "/apiVersion"),
        str_at(target, "/kind"),
        str_at(target, "/name"),
    );
    let resource = resource_for(api_version, kind)?;
    let path = format!(
        "{}/namespaces/{namespace}/{resource}/{name}/scale",
        group_version_path(api_version)
    );
    let scale = api::get(&path).map_err(|e| e.message)?;
    Ok((path, scale))
}

/// The status without what kube's semantic comparison ignores (nulls, empty lists).
fn comparable(status: &Value) -> Value {
    match status {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(_, v)| !v.is_null() && v.as_array().is_none_or(|a| !a.is_empty()))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// kube's `updateStatusIfNeeded`: the HPA's status written only when it changed.
fn write_status(hpa: &Value, original: &Value, status: Value) -> Result<(), String> {
    if comparable(original) == comparable(&status) {
        return Ok(());
    }
    let mut updated = hpa.clone();
    updated["status"] = status;
    let path = format!(
        "{}/status",
        HPAS.object_path(
            str_at(hpa, "/metadata/namespace"),
            str_at(hpa, "/metadata/name")
        )
    );
    api::update(&path, &updated).map(|_| ()).map_err(|e| {
        record(hpa, true, "FailedUpdateStatus", &e.message);
        format!(
            "failed to update status for {}: {}",
            str_at(hpa, "/metadata/name"),
            e.message
        )
    })
}

fn sync(hpa: &Value) -> Result<(), String> {
    LISTS.with(|l| l.borrow_mut().clear());
    let namespace = str_at(hpa, "/metadata/namespace").to_owned();
    let name = str_at(hpa, "/metadata/name").to_owned();
    let key = (namespace.clone(), name.clone());
    let original = hpa.get("status").cloned().unwrap_or_else(|| json!({}));
    let mut status = original.clone();
    let now_secs = unix_now();
    let now = format_rfc3339(now_secs);
    let target = &hpa["spec"]["scaleTargetRef"];
    let reference = format!(
        "{}/{namespace}/{}",
        str_at(target, "/kind"),
        str_at(target, "/name")
    );

    let (scale_path, mut scale) = match read_scale(hpa, &namespace) {
        Ok(found) => found,
        Err(e) => {
            record(hpa, true, "FailedGetScale", &e);
            plan::set_condition(
                &mut status,
                "AbleToScale",
                "False",
                "FailedGetScale",
                &format!("the HPA controller was unable to get the target's current scale: {e}"),
                &now,
            );
            write_status(hpa, &original, status)?;
            return Err(format!(
                "failed to query scale subresource for {reference}: {e}"
            ));
        }
    };
    plan::set_condition(
        &mut status,
        "AbleToScale",
        "True",
        "SucceededGetScale",
        "the HPA controller was able to get the target's current scale",
        &now,
    );
    let current = scale["spec"]["replicas"].as_i64().unwrap_or(0);
    let min = hpa["spec"]["minReplicas"].as_i64().unwrap_or(1);
    let max = hpa["spec"]["maxReplicas"].as_i64().unwrap_or(0);
    MEMORY.with(|m| {
        plan::record_initial(
            m.borrow_mut().entry(key.clone()).or_default(),
            current,
            now_secs,
        )
    });

    let mut metric_statuses = None;
    let (desired, rescale, reason) = if current == 0 && min != 0 {
        plan::set_condition(
            &mut status,
            "ScalingActive",
            "False",
            "ScalingDisabled",
            "scaling is disabled since the replica count of the target is zero",
            &now,
        );
        (0, false, String::new())
    } else if current > max {
        (
            max,
            true,
            "Current number of replicas above Spec.MaxReplicas".to_owned(),
        )
    } else if current < min {
        (
            min,
            true,
            "Current number of replicas below Spec.MinReplicas".to_owned(),
        )
    } else {
        let computed = compute_replicas_for_metrics(
            hpa,
            &scale,
            &namespace,
            current,
            &mut status,
            &now,
            now_secs,
        );
        match computed {
            Err((statuses, e)) => {
                // kube's setCurrentReplicasAndMetricsInStatus: the desired count kept.
                let kept = status["desiredReplicas"].as_i64().unwrap_or(0);
                plan::set_status(&mut status, current, kept, statuses, false, &now);
                write_status(hpa, &original, status)?;
                record(hpa, true, "FailedComputeMetricsReplicas", &e);
                return Err(format!(
                    "failed to compute desired number of replicas based on listed metrics for {reference}: {e}"
                ));
            }
            Ok((proposal, metric, statuses)) => {
                metric_statuses = Some(statuses);
                // kube names the reason from the metrics' proposal, before normalization.
                let reason = if proposal > current {
                    format!("{metric} above target")
                } else {
                    "All metrics below target".to_owned()
                };
                let n = normalize(hpa, &key, current, proposal, min, max, now_secs);
                plan::set_condition(&mut status, "AbleToScale", "True", n.able.0, n.able.1, &now);
                plan::set_condition(
                    &mut status,
                    "ScalingLimited",
                    n.limited.0,
                    n.limited.1,
                    n.limited.2,
                    &now,
                );
                (n.replicas, n.replicas != current, reason)
            }
        }
    };

    let desired = if rescale {
        scale["spec"]["replicas"] = json!(desired);
        if let Err(e) = api::update(&scale_path, &scale) {
            record(
                hpa,
                true,
                "FailedRescale",
                &format!(
                    "New size: {desired}; reason: {reason}; error: {}",
                    e.message
                ),
            );
            plan::set_condition(
                &mut status,
                "AbleToScale",
                "False",
                "FailedUpdateScale",
                &format!(
                    "the HPA controller was unable to update the target scale: {}",
                    e.message
                ),
                &now,
            );
            let kept = status["desiredReplicas"].as_i64().unwrap_or(0);
            plan::set_status(&mut status, current, kept, metric_statuses, false, &now);
            write_status(hpa, &original, status)?;
            return Err(format!("failed to rescale {reference}: {}", e.message));
        }
        plan::set_condition(
            &mut status,
            "AbleToScale",
            "True",
            "SucceededRescale",
            &format!("the HPA controller was able to update the target scale to {desired}"),
            &now,
        );
        record(
            hpa,
            false,
            "SuccessfulRescale",
            &format!("New size: {desired}; reason: {reason}"),
        );
        if let Some((up, down)) = behavior_rules(hpa) {
            MEMORY.with(|m| {
                let mut m = m.borrow_mut();
                let mem = m.entry(key.clone()).or_default();
                plan::store_scale_event(mem, &up, &down, current, desired, now_secs);
            });
        }
        desired
    } else {
        current
    };
    plan::set_status(
        &mut status,
        current,
        desired,
        metric_statuses,
        rescale,
        &now,
    );
    write_status(hpa, &original, status)
}

/// The scale-up and scale-down rules of an HPA with `behavior`.
fn behavior_rules(hpa: &Value) -> Option<(Rules, Rules)> {
    let behavior = hpa["spec"].get("behavior").filter(|b| b.is_object())?;
    Some((
        Rules::from(&behavior["scaleUp"], 0),
        Rules::from(
            &behavior["scaleDown"],
            plan::DOWNSCALE_STABILIZATION_SECONDS,
        ),
    ))
}

fn normalize(
    hpa: &Value,
    key: &(String, String),
    current: i64,
    proposal: i64,
    min: i64,
    max: i64,
    now: i64,
) -> Normalized {
    let rules = behavior_rules(hpa);
    MEMORY.with(|m| {
        let mut m = m.borrow_mut();
        let mem = m.entry(key.clone()).or_default();
        match &rules {
            Some((up, down)) => {
                plan::normalize_with_behavior(mem, up, down, current, proposal, min, max, now)
            }
            None => plan::normalize(mem, current, proposal, min, max, now),
        }
    })
}

/// kube's `computeReplicasForMetrics`: the largest proposal of the metrics that could be
/// computed; the metrics' statuses; or, when none could (or a scale-down with one missing), the
/// first error.
#[allow(clippy::type_complexity)]
fn compute_replicas_for_metrics(
    hpa: &Value,
    scale: &Value,
    namespace: &str,
    current: i64,
    status: &mut Value,
    now: &str,
    now_secs: i64,
) -> Result<(i64, String, Vec<Value>), (Option<Vec<Value>>, String)> {
    let selector = str_at(scale, "/status/selector").to_owned();
    if selector.is_empty() {
        record(hpa, true, "SelectorRequired", "selector is required");
        plan::set_condition(
            status,
            "ScalingActive",
            "False",
            "InvalidSelector",
            "the HPA target's scale is missing a selector",
            now,
        );
        return Err((None, "selector is required".into()));
    }
    // kube's validateAndParseSelector: a selector that parses, and Pods no other HPA selects.
    let invalid = |status: &mut Value, why: String, reason: &str| {
        record(hpa, true, reason, &why);
        plan::set_condition(status, "ScalingActive", "False", reason, &why, now);
        Err((None, why))
    };
    let parsed = match meta::parse_selector(&selector) {
        Ok(p) => p,
        Err(e) => {
            let why = format!(
                "couldn't convert selector into a corresponding internal selector object: {e}"
            );
            return invalid(status, why, "InvalidSelector");
        }
    };
    let key = (
        namespace.to_owned(),
        str_at(hpa, "/metadata/name").to_owned(),
    );
    let others: Vec<((String, String), Value)> = MEMORY.with(|m| {
        let mut m = m.borrow_mut();
        m.entry(key.clone()).or_default().selector = Some(parsed.clone());
        m.iter()
            .filter(|(k, _)| k.0 == namespace && **k != key)
            .filter_map(|(k, mem)| mem.selector.clone().map(|s| (k.clone(), s)))
            .collect()
    });
    if !others.is_empty() {
        let escaped = turtles_controller::query_escape(&selector);
        let pods = cached_get(&format!(
            "/api/v1/namespaces/{namespace}/pods?labelSelector={escaped}"
        ))
        .map_err(|e| (None, e.message))?;
        let mut selecting: Vec<String> = vec![format!("{}/{}", key.0, key.1)];
        for pod in pods["items"].as_array().into_iter().flatten() {
            let labels = &pod["metadata"]["labels"];
            for (k, sel) in &others {
                let name = format!("{}/{}", k.0, k.1);
                if meta::selector_matches(sel, labels) && !selecting.contains(&name) {
                    selecting.push(name);
                }
            }
        }
        if selecting.len() > 1 {
            selecting.sort();
            let why = format!(
                "pods by selector {selector} are controlled by multiple HPAs: [{}]",
                selecting.join(" ")
            );
            return invalid(status, why, "AmbiguousSelector");
        }
    }
    let specs: Vec<Value> = hpa["spec"]["metrics"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let mut statuses = vec![json!({"type": ""}); specs.len()];
    let mut best: Option<(i64, String)> = None;
    let mut invalid = 0;
    let mut first_error: Option<(String, (String, String))> = None;
    for (i, spec) in specs.iter().enumerate() {
        match compute_metric(hpa, spec, namespace, &selector, current, now_secs) {
            Ok((replicas, metric, metric_status)) => {
                statuses[i] = metric_status;
                if best.as_ref().is_none_or(|(r, _)| *r == 0 || replicas > *r) {
                    best = Some((replicas, metric));
                }
            }
            Err((reason, e)) => {
                if invalid == 0 {
                    let message =
                        format!("the HPA was unable to compute the replica count: {}", e.1);
                    first_error = Some((e.0, (reason, message)));
                }
                invalid += 1;
            }
        }
    }
    let proposal = best.as_ref().map_or(0, |(r, _)| *r);
    if let Some((error, (reason, message))) = &first_error {
        if invalid >= specs.len() || proposal < current {
            plan::set_condition(status, "ScalingActive", "False", reason, message, now);
            return Err((
                Some(statuses),
                format!(
                    "invalid metrics ({invalid} invalid out of {}), first error is: {error}",
                    specs.len()
                ),
            ));
        }
    }
    let (replicas, metric) = best.unwrap_or((current, String::new()));
    plan::set_condition(
        status,
        "ScalingActive",
        "True",
        "ValidMetricFound",
        &format!("the HPA was able to successfully calculate a replica count from {metric}"),
        now,
    );
    Ok((replicas, metric, statuses))
}

/// One metric's proposal, its name for the rescale reason and its status; or its condition's
/// reason with (the error for the totals, the error for the condition).
#[allow(clippy::type_complexity)]
fn compute_metric(
    hpa: &Value,
    spec: &Value,
    namespace: &str,
    selector: &str,
    current: i64,
    now: i64,
) -> Result<(i64, String, Value), (String, (String, String))> {
    let ty = str_at(spec, "/type");
    // What fails records its Event (kube's getUnableComputeReplicaCountCondition).
    let fail = |reason: &str, outer: String, inner: String| {
        record(hpa, true, reason, &inner);
        (reason.to_owned(), (outer, inner))
    };
    match ty {
        "Resource" | "ContainerResource" => {
            let source = if ty == "Resource" {
                &spec["resource"]
            } else {
                &spec["containerResource"]
            };
            let resource = str_at(source, "/name");
            let container = if ty == "ContainerResource" {
                Some(str_at(source, "/container"))
            } else {
                None
            };
            let reason = if ty == "Resource" {
                "FailedGetResourceMetric"
            } else {
                "FailedGetContainerResourceMetric"
            };
            let result = resource_metric(
                source, resource, container, namespace, selector, current, now,
            );
            match result {
                Ok(found) => Ok(found),
                Err(inner) => {
                    let outer = match container {
                        None => format!("failed to get {resource} resource metric value: {inner}"),
                        Some(c) => format!("failed to get {c} container metric value: {inner}"),
                    };
                    Err(fail(reason, outer, inner))
                }
            }
        }
        "Pods" => {
            let name = str_at(spec, "/pods/metric/name");
            let inner = format!(
                "unable to get metric {name}: unable to fetch metrics from custom metrics API: no custom metrics API (custom.metrics.k8s.io) registered"
            );
            Err(fail(
                "FailedGetPodsMetric",
                format!("failed to get pods metric value: {inner}"),
                inner,
            ))
        }
        "Object" => {
            let name = str_at(spec, "/object/metric/name");
            let inner = format!(
                "unable to get metric {name}: {} on {} {}/unable to fetch metrics from custom metrics API: no custom metrics API (custom.metrics.k8s.io) registered",
                str_at(spec, "/object/describedObject/kind"),
                namespace,
                str_at(spec, "/object/describedObject/name")
            );
            let outer = if str_at(spec, "/object/target/type") == "AverageValue" {
                format!("failed to get object metric value: failed to get {name} object metric: {inner}")
            } else {
                format!("failed to get object metric value: {inner}")
            };
            Err(fail("FailedGetObjectMetric", outer, inner))
        }
        "External" => {
            let name = str_at(spec, "/external/metric/name");
            let path =
                format!("/apis/external.metrics.k8s.io/v1beta1/namespaces/{namespace}/{name}");
            let why = match api::get(&path) {
                Err(e) if e.is_not_found() => format!(
                    "the server could not find the requested resource (get {name}.external.metrics.k8s.io)"
                ),
                Err(e) => e.message,
                Ok(_) => "external metrics are not computed by this controller".to_owned(),
            };
            // kube prints the selector with Go's `%+v` (`nil` when there is none).
            let selector = match spec.pointer("/external/metric/selector") {
                None | Some(Value::Null) => "nil".to_owned(),
                Some(sel) => format!("&LabelSelector{sel}"),
            };
            let inner = format!(
                "unable to get external metric {namespace}/{name}/{selector}: unable to fetch metrics from external metrics API: {why}"
            );
            let outer = if str_at(spec, "/external/target/type") == "AverageValue" {
                format!("failed to get {name} external metric value: failed to get {name} external metric: {inner}")
            } else {
                format!("failed to get {name} external metric value: failed to get external metric {name}: {inner}")
            };
            Err(fail("FailedGetExternalMetric", outer, inner))
        }
        other => {
            let inner = format!("unknown metric source type {other:?}");
            Err(fail(
                "InvalidMetricSourceType",
                format!("unknown metric source type {other:?}"),
                inner,
            ))
        }
    }
}

/// A list read once per sync (the metrics of one HPA share their Pods and PodMetrics).
fn cached_get(path: &str) -> Result<Value, turtles_controller::ApiError> {
    if let Some(found) = LISTS.with(|l| l.borrow().get(path).cloned()) {
        return found;
    }
    let got = api::get(path);
    LISTS.with(|l| l.borrow_mut().insert(path.to_owned(), got.clone()));
    got
}

/// An untrusted milli-value (a PodMetrics' usage, a request, a target) kept where the
/// arithmetic cannot overflow: 0 to 10^15.
fn clamp_milli(v: i128) -> i64 {
    v.clamp(0, 1_000_000_000_000_000) as i64
}

/// A milli-value as kube prints a `DecimalSI` quantity.
fn format_milli(milli: i64) -> String {
    if milli % 1000 != 0 {
        return format!("{milli}m");
    }
    let mut n = milli / 1000;
    for suffix in ["", "k", "M", "G", "T", "P"] {
        if n % 1000 != 0 || n == 0 {
            return format!("{n}{suffix}");
        }
        n /= 1000;
    }
    format!("{n}E")
}

/// A resource (or one container's) metric from `metrics.k8s.io`: the proposal, the metric's
/// name and status, or the error (kube's chain from `GetResourceMetric` up).
fn resource_metric(
    source: &Value,
    resource: &str,
    container: Option<&str>,
    namespace: &str,
    selector: &str,
    current: i64,
    now: i64,
) -> Result<(i64, String, Value), String> {
    let target = &source["target"];
    // As kube: by the field that is set (validation allows either with either type).
    let (goal, what) = match target["averageUtilization"].as_i64() {
        Some(t) => (Target::Utilization(t.clamp(0, 1_000_000)), "utilization"),
        None => {
            let v = quantity::milli_value(str_at(target, "/averageValue")).unwrap_or(0);
            (Target::AverageValue(clamp_milli(v)), "usage")
        }
    };
    let outer = format!("failed to get {resource} {what}: ");
    let (Target::Utilization(t) | Target::AverageValue(t)) = goal;
    if t <= 0 {
        return Err(format!("{outer}the target must be greater than 0"));
    }
    let fetch = format!("{outer}unable to get metrics for resource {resource}: ");
    let escaped = turtles_controller::query_escape(selector);
    let metrics_path =
        format!("/apis/metrics.k8s.io/v1beta1/namespaces/{namespace}/pods?labelSelector={escaped}");
    let list = cached_get(&metrics_path).map_err(|e| {
        let why = if e.is_not_found() {
            "the server could not find the requested resource (get pods.metrics.k8s.io)".to_owned()
        } else {
            e.message
        };
        format!(
            "{}unable to fetch metrics from resource metrics API: {why}",
            fetch
        )
    })?;
    let items = list["items"].as_array().cloned().unwrap_or_default();
    if items.is_empty() {
        return Err(format!(
            "{}no metrics returned from resource metrics API",
            fetch
        ));
    }
    let mut metrics = BTreeMap::new();
    for item in &items {
        let window = str_at(item, "/window")
            .trim_end_matches('s')
            .parse::<f64>()
            .map_or(0, |s| s as i64);
        let timestamp = parse_rfc3339(str_at(item, "/timestamp")).unwrap_or(0);
        let containers = item["containers"].as_array().map_or(&[][..], |v| v);
        let usage = |c: &Value| quantity::milli_value(str_at(c, &format!("/usage/{resource}")));
        let value = match container {
            // Every container's usage; a Pod missing one counts as a Pod without a metric.
            None if containers.is_empty() => None,
            None => containers
                .iter()
                .map(|c| usage(c).map(clamp_milli))
                .sum::<Option<i64>>(),
            Some(name) => match containers.iter().find(|c| c["name"] == name) {
                Some(c) => usage(c).map(clamp_milli),
                None => {
                    return Err(format!(
                        "{}failed to get container metrics: container {name} not present in metrics for pod {}/{}",
                        fetch,
                        str_at(item, "/metadata/namespace"),
                        str_at(item, "/metadata/name")
                    ))
                }
            },
        };
        if let Some(sum) = value {
            metrics.insert(
                str_at(item, "/metadata/name").to_owned(),
                PodMetric {
                    value: sum,
                    timestamp,
                    window,
                },
            );
        }
    }
    let pods_path = format!("/api/v1/namespaces/{namespace}/pods?labelSelector={escaped}");
    let pods = cached_get(&pods_path).map_err(|e| {
        format!(
            "{outer}unable to get pods while calculating replica count: {}",
            e.message
        )
    })?;
    let pods: Vec<PodInfo> = pods["items"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|p| pod_info(p, resource, container))
        .collect();
    let proposal = plan::resource_replicas(current, goal, resource, &pods, metrics, now)
        .map_err(|e| format!("{outer}{e}"))?;
    let (metric_name, current_value) = match (goal, container) {
        (Target::Utilization(_), None) => (
            format!("{resource} resource utilization (percentage of request)"),
            json!({"averageUtilization": proposal.utilization, "averageValue": format_milli(proposal.average)}),
        ),
        (Target::Utilization(_), Some(_)) => (
            format!("{resource} container resource utilization (percentage of request)"),
            json!({"averageUtilization": proposal.utilization, "averageValue": format_milli(proposal.average)}),
        ),
        (Target::AverageValue(_), _) => (
            format!("{resource} resource"),
            json!({"averageValue": format_milli(proposal.average)}),
        ),
    };
    let status = match container {
        None => {
            json!({"type": "Resource", "resource": {"name": resource, "current": current_value}})
        }
        Some(c) => json!({"type": "ContainerResource",
            "containerResource": {"name": resource, "container": c, "current": current_value}}),
    };
    Ok((proposal.replicas, metric_name, status))
}

/// A Pod as the replica calculator needs it: its request of the resource (kube's
/// `calculateRequests`: every container's, or the one named), its readiness and start.
fn pod_info(pod: &Value, resource: &str, container: Option<&str>) -> PodInfo {
    let name = str_at(pod, "/metadata/name").to_owned();
    // Pod-level requests when set (and no container is named).
    if container.is_none() {
        if let Some(v) = pod
            .pointer(&format!("/spec/resources/requests/{resource}"))
            .and_then(Value::as_str)
            .and_then(quantity::milli_value)
        {
            return pod_info_with(pod, name, Ok(clamp_milli(v)));
        }
        if pod
            .pointer("/spec/resources/requests")
            .is_some_and(|r| r.as_object().is_some_and(|o| !o.is_empty()))
        {
            let why = format!("missing pod-level request for {resource} in Pod {name}");
            return pod_info_with(pod, name, Err(why));
        }
    }
    let mut request = Ok(0i64);
    // The containers and the sidecars (init containers that keep running).
    let sidecars = pod["spec"]["initContainers"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|c| c["restartPolicy"] == "Always");
    for c in pod["spec"]["containers"]
        .as_array()
        .into_iter()
        .flatten()
        .chain(sidecars)
    {
        if container.is_some_and(|n| c["name"] != n) {
            continue;
        }
        let asked = quantity::milli_value(str_at(c, &format!("/resources/requests/{resource}")));
        request = match (request, asked) {
            (Ok(sum), Some(v)) => Ok(sum.saturating_add(clamp_milli(v))),
            (Ok(_), None) => Err(format!(
                "missing request for {resource} in container {} of Pod {name}",
                str_at(c, "/name")
            )),
            (e, _) => e,
        };
    }
    pod_info_with(pod, name, request)
}

fn pod_info_with(pod: &Value, name: String, request: Result<i64, String>) -> PodInfo {
    let ready = pod["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|c| c["type"] == "Ready")
        .map(|c| {
            (
                str_at(c, "/status").to_owned(),
                parse_rfc3339(str_at(c, "/lastTransitionTime")).unwrap_or(0),
            )
        });
    PodInfo {
        deleting: pod["metadata"]
            .get("deletionTimestamp")
            .is_some_and(|t| !t.is_null()),
        phase: str_at(pod, "/status/phase").to_owned(),
        ready,
        start_time: parse_rfc3339(str_at(pod, "/status/startTime")),
        request,
        name,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantities_print_as_kube_prints_them() {
        assert_eq!(format_milli(90), "90m");
        assert_eq!(format_milli(1000), "1");
        assert_eq!(format_milli(1500), "1500m");
        assert_eq!(format_milli(100_000_000_000), "100M");
        assert_eq!(format_milli(104_857_600_000), "104857600");
        assert_eq!(format_milli(0), "0");
    }

    #[test]
    fn a_pod_without_a_request_is_named() {
        let pod = json!({"metadata": {"name": "p"}, "spec": {"containers": [
            {"name": "a", "resources": {"requests": {"cpu": "100m"}}}, {"name": "b"}]},
            "status": {"phase": "Running"}});
        assert_eq!(
            pod_info(&pod, "cpu", None).request,
            Err("missing request for cpu in container b of Pod p".to_owned())
        );
        assert_eq!(pod_info(&pod, "cpu", Some("a")).request, Ok(100));
    }
}
