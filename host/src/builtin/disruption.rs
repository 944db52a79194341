//! PodDisruptionBudgets as kube enforces them: their validation
//! (`pkg/apis/policy/validation`), the `pods/eviction` subresource
//! (`pkg/registry/core/pod/storage/eviction.go`), and the pieces of a budget's status that the
//! eviction and the disruption controller (`controllers::disruption`) share
//! (`k8s.io/component-helpers/apps/poddisruptionbudget`).
//!
//! An eviction is a delete that asks first: a Pod that is running and Ready is deleted only if
//! the one budget that selects it allows a disruption, and that allowance is spent (the
//! budget's `status.disruptionsAllowed` decremented, the Pod recorded in
//! `status.disruptedPods`) in the same compare-and-swap that checks it. The disruption
//! controller recomputes the allowance from the Pods it sees.

use std::time::Duration;

use serde_json::{json, Map, Value};

use crate::builtin::validation::apps::selector_json;
use crate::builtin::validation::field::{json_opt, json_value, struct_json};
use crate::model::{meta, ApiError, Cause, ResourceInfo};
use crate::selector::{label_selector_string, LabelSelector};
use crate::service::{DeleteOptions, ListOptions, Service, Subresource, WriteOptions};

/// How long a Pod named in `status.disruptedPods` is taken as being deleted (kube's
/// `DeletionTimeout`); after it the disruption controller counts it again.
pub const DELETION_TIMEOUT: Duration = Duration::from_secs(120);
/// kube's `MaxDisruptedPodSize`: evictions approved but not yet seen by the controller.
const MAX_DISRUPTED_PODS: usize = 2000;
/// Attempts at a write that lost a race (kube's `EvictionsRetry` has 20 steps).
const RETRIES: usize = 20;

pub const GROUP: &str = "policy";
pub const RESOURCE: &str = "poddisruptionbudgets";
pub const CONDITION: &str = "DisruptionAllowed";
pub const SUFFICIENT_PODS: &str = "SufficientPods";
pub const INSUFFICIENT_PODS: &str = "InsufficientPods";
pub const SYNC_FAILED: &str = "SyncFailed";
const TOO_MANY: &str = "Cannot evict pod as it would violate the pod's disruption budget.";

/// Whether the Pod's `Ready` condition is `True` (kube's `IsPodReady`).
pub fn pod_ready(pod: &Value) -> bool {
    pod.pointer("/status/conditions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .any(|c| c.get("type") == Some(&json!("Ready")) && c.get("status") == Some(&json!("True")))
}

/// The budget's selector, or `None` when it selects nothing: kube matches no Pod with a
/// missing, empty or unparsable selector ("it should match nothing, not everything").
pub fn selector(pdb: &Value) -> Option<LabelSelector> {
    let sel = pdb.pointer("/spec/selector").filter(|s| s.is_object())?;
    let text = label_selector_string(sel);
    if text.is_empty() {
        return None;
    }
    LabelSelector::parse(&text).ok()
}

pub fn int(v: &Value, pointer: &str) -> i64 {
    v.pointer(pointer).and_then(Value::as_i64).unwrap_or(0)
}

/// `meta.SetStatusCondition`: add or change the condition of `type_`; its
/// `lastTransitionTime` moves only when its status does.
pub fn set_condition(
    conditions: &mut Vec<Value>,
    type_: &str,
    status: &str,
    reason: &str,
    message: &str,
    observed_generation: i64,
) {
    let now = meta::now_rfc3339();
    if let Some(c) = conditions
        .iter_mut()
        .find(|c| c.get("type").and_then(Value::as_str) == Some(type_))
    {
        if c.get("status").and_then(Value::as_str) != Some(status) {
            c["status"] = json!(status);
            c["lastTransitionTime"] = json!(now);
        }
        c["reason"] = json!(reason);
        c["message"] = json!(message);
        c["observedGeneration"] = json!(observed_generation);
        return;
    }
    conditions.push(json!({
        "type": type_,
        "status": status,
        "observedGeneration": observed_generation,
        "lastTransitionTime": now,
        "reason": reason,
        "message": message,
    }));
}

/// Set the budget's `DisruptionAllowed` condition in `status` to `value` with `reason` and
/// `message`, at the status's `observedGeneration`.
pub fn set_allowed_condition(
    status: &mut Map<String, Value>,
    value: &str,
    reason: &str,
    message: &str,
) {
    let observed = status
        .get("observedGeneration")
        .and_then(Value::as_i64)
        .unwrap_or(0);
    let mut conditions = status
        .get("conditions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    set_condition(&mut conditions, CONDITION, value, reason, message, observed);
    status.insert("conditions".into(), Value::Array(conditions));
}

/// `UpdateDisruptionAllowedCondition`: `DisruptionAllowed` True (`SufficientPods`) while a
/// disruption is allowed, False (`InsufficientPods`) otherwise.
pub fn update_allowed_condition(status: &mut Map<String, Value>) {
    let allowed = status
        .get("disruptionsAllowed")
        .and_then(Value::as_i64)
        .unwrap_or(0);
    if allowed > 0 {
        set_allowed_condition(status, "True", SUFFICIENT_PODS, "");
    } else {
        set_allowed_condition(status, "False", INSUFFICIENT_PODS, "");
    }
}

/// `ConditionsAreUpToDate`: the condition says what `disruptionsAllowed` says, for the budget's
/// current generation.
pub fn conditions_up_to_date(pdb: &Value) -> bool {
    let Some(cond) = pdb
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .find(|c| c.get("type").and_then(Value::as_str) == Some(CONDITION))
    else {
        return false;
    };
    if int(pdb, "/status/observedGeneration") != int(pdb, "/metadata/generation") {
        return false;
    }
    let (status, reason) = (
        cond.get("status").and_then(Value::as_str),
        cond.get("reason").and_then(Value::as_str),
    );
    if int(pdb, "/status/disruptionsAllowed") > 0 {
        status == Some("True") && reason == Some(SUFFICIENT_PODS)
    } else {
        status == Some("False") && reason == Some(INSUFFICIENT_PODS)
    }
}

/// An `IntOrString` as kube's `intstr.GetScaledValueFromIntOrPercent` reads it: an integer, or
/// a percentage of `total` rounded up (`round_up`) or down. `None`: not a valid percentage.
pub fn scaled_value(v: &Value, total: i64, round_up: bool) -> Option<i64> {
    if let Some(n) = v.as_i64() {
        return Some(n);
    }
    let pct: i64 = v.as_str()?.strip_suffix('%')?.parse().ok()?;
    // Saturating: a stored percentage or a custom resource's replicas may be anything.
    let scaled = pct.saturating_mul(total);
    Some(if round_up {
        scaled.saturating_add(99).div_euclid(100)
    } else {
        scaled.div_euclid(100)
    })
}

/// kube's `ValidatePodDisruptionBudget` (spec) and `ValidatePodDisruptionBudgetStatusUpdate`
/// (status counts), with its field paths and messages.
pub fn validate(obj: &Value, old: Option<&Value>) -> Vec<Cause> {
    let mut causes = Vec::new();
    let spec = obj.get("spec").cloned().unwrap_or(Value::Null);
    let min = spec.get("minAvailable").filter(|v| !v.is_null());
    let max = spec.get("maxUnavailable").filter(|v| !v.is_null());
    if min.is_some() && max.is_some() {
        // kube reports the whole internal `policy.PodDisruptionBudgetSpec`, as its JSON.
        let shown = struct_json(&[
            ("MinAvailable", json_opt(min)),
            (
                "Selector",
                selector_json(spec.get("selector").filter(|s| !s.is_null())),
            ),
            ("MaxUnavailable", json_opt(max)),
            (
                "UnhealthyPodEvictionPolicy",
                json_opt(
                    spec.get("unhealthyPodEvictionPolicy")
                        .filter(|p| !p.is_null()),
                ),
            ),
        ]);
        causes.push(Cause::new(
            "FieldValueInvalid",
            "spec",
            format!("Invalid value: {shown}: minAvailable and maxUnavailable cannot be both set"),
        ));
    }
    for (field, v) in [("minAvailable", min), ("maxUnavailable", max)] {
        if let Some(v) = v {
            int_or_percent(v, &format!("spec.{field}"), &mut causes);
        }
    }
    if let Some(sel) = spec.get("selector").filter(|s| !s.is_null()) {
        // kube's AllowInvalidLabelValueInSelector: a budget stored with an invalid value in an
        // expression (before kube checked them) may still be updated.
        let lenient = old
            .and_then(|o| o.pointer("/spec/selector"))
            .is_some_and(has_invalid_expression_value);
        validate_label_selector(sel, "spec.selector", lenient, &mut causes);
    }
    if let Some(p) = spec
        .get("unhealthyPodEvictionPolicy")
        .filter(|p| !p.is_null())
    {
        let p = p.as_str().unwrap_or_default();
        if !matches!(p, "AlwaysAllow" | "IfHealthyBudget") {
            causes.push(Cause::new(
                "FieldValueNotSupported",
                "spec.unhealthyPodEvictionPolicy",
                format!(
                    "Unsupported value: {}: supported values: \"AlwaysAllow\", \"IfHealthyBudget\"",
                    json_value(&Value::String(p.to_owned()))
                ),
            ));
        }
    }
    for field in [
        "disruptionsAllowed",
        "currentHealthy",
        "desiredHealthy",
        "expectedPods",
    ] {
        let n = int(obj, &format!("/status/{field}"));
        if n < 0 {
            causes.push(Cause::new(
                "FieldValueInvalid",
                &format!("status.{field}"),
                format!("Invalid value: {n}: must be greater than or equal to 0"),
            ));
        }
    }
    causes
}

/// `ValidatePositiveIntOrPercent` and `IsNotMoreThan100Percent`.
fn int_or_percent(v: &Value, field: &str, causes: &mut Vec<Cause>) {
    let invalid = |msg: &str| {
        Cause::new(
            "FieldValueInvalid",
            field,
            // kube reports the `intstr.IntOrString`: its JSON, a number or a string.
            format!("Invalid value: {}: {msg}", json_value(v)),
        )
    };
    match v {
        Value::String(s) => {
            let digits = s.strip_suffix('%').unwrap_or("");
            if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
                causes.push(invalid(
                    "a valid percent string must be a numeric string followed by an ending '%' \
                     (e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')",
                ));
            } else if digits.parse::<u64>().map_or(true, |p| p > 100) {
                causes.push(invalid("must not be greater than 100%"));
            }
        }
        Value::Number(n) => {
            if n.as_i64().is_none_or(|n| n < 0) {
                causes.push(Cause::new(
                    "FieldValueInvalid",
                    field,
                    format!("Invalid value: {n}: must be greater than or equal to 0"),
                ));
            }
        }
        _ => causes.push(invalid("must be an integer or percentage (e.g '5%')")),
    }
}

/// Whether a selector has an expression value that is no label value.
fn has_invalid_expression_value(sel: &Value) -> bool {
    sel.get("matchExpressions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .flat_map(|e| {
            e.get("values")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
        })
        .any(|v| !super::validation::field::label_value(v.as_str().unwrap_or("")).is_empty())
}

/// `ValidateLabelSelector`: `matchLabels` as labels, each expression's key, operator and values
/// (the values as label values unless `allow_invalid_values`, kube's
/// `AllowInvalidLabelValueInSelector`), and the selector as a whole.
pub(crate) fn validate_label_selector(
    sel: &Value,
    field: &str,
    allow_invalid_values: bool,
    causes: &mut Vec<Cause>,
) {
    use super::validation::field as f;
    let before = causes.len();
    f::labels(
        sel.get("matchLabels"),
        &format!("{field}.matchLabels"),
        causes,
    );
    let exprs = sel
        .get("matchExpressions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let mut shape_ok = causes.len() == before;
    for (i, e) in exprs.iter().enumerate() {
        let path = format!("{field}.matchExpressions[{i}]");
        let key = e.get("key").and_then(Value::as_str).unwrap_or("");
        for msg in f::qualified_name(key) {
            shape_ok = false;
            causes.push(f::invalid_str(&format!("{path}.key"), key, &msg));
        }
        for (j, v) in e
            .get("values")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .enumerate()
            .filter(|_| !allow_invalid_values)
        {
            let v = v.as_str().unwrap_or("");
            for msg in f::label_value(v) {
                shape_ok = false;
                causes.push(f::invalid_str(&format!("{path}.values[{j}]"), v, &msg));
            }
        }
        let values = e
            .get("values")
            .and_then(Value::as_array)
            .map_or(0, Vec::len);
        match e.get("operator").and_then(Value::as_str).unwrap_or("") {
            "In" | "NotIn" if values == 0 => {
                shape_ok = false;
                causes.push(Cause::new(
                    "FieldValueRequired",
                    &format!("{path}.values"),
                    "Required value: must be specified when `operator` is 'In' or 'NotIn'",
                ));
            }
            "Exists" | "DoesNotExist" if values > 0 => {
                shape_ok = false;
                causes.push(Cause::new(
                    "FieldValueForbidden",
                    &format!("{path}.values"),
                    "Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
                ));
            }
            "In" | "NotIn" | "Exists" | "DoesNotExist" => {}
            op => {
                shape_ok = false;
                causes.push(Cause::new(
                    "FieldValueInvalid",
                    &format!("{path}.operator"),
                    format!(
                        "Invalid value: {}: not a valid selector operator",
                        json_value(&Value::String(op.to_owned()))
                    ),
                ));
            }
        }
    }
    if shape_ok {
        if let Err(e) = LabelSelector::parse(&label_selector_string(sel)) {
            causes.push(Cause::new(
                "FieldValueInvalid",
                field,
                format!("Invalid value: {e}"),
            ));
        }
    }
}

/// `POST pods/NAME/eviction`: delete the Pod if its disruption budget allows it (kube's
/// `EvictionREST.Create`). `opts` are the Eviction's `deleteOptions` (dry run merged in).
pub async fn evict(
    svc: &Service,
    ns: &str,
    name: &str,
    opts: DeleteOptions,
) -> Result<(), ApiError> {
    let pods = svc
        .registry
        .lookup("", "v1", "pods")
        .ok_or_else(ApiError::path_not_found)?;
    let rv_given = opts
        .precondition_rv
        .as_deref()
        .is_some_and(|r| !r.is_empty());
    // A Pod that is not running, or already going, is deleted without asking any budget.
    let mut pod = None;
    let mut last = None;
    for attempt in 0..RETRIES {
        backoff(attempt).await;
        let current = svc.get(&pods, ns, name)?;
        let v = current.parse().into_owned();
        let phase = v
            .pointer("/status/phase")
            .and_then(Value::as_str)
            .unwrap_or("");
        let deleting = meta::meta_str(current.head(), "deletionTimestamp").is_some();
        if !(matches!(phase, "Succeeded" | "Failed" | "Pending") || deleting) {
            pod = Some((current.rv, v));
            break;
        }
        let mut o = opts.clone();
        // Not racing a Pod that becomes Ready meanwhile: kube pins the version it looked at
        // unless the Pod is terminal or going anyway.
        let terminal = matches!(phase, "Succeeded" | "Failed");
        if !(terminal || deleting || rv_given) {
            o.precondition_rv = Some(current.rv.to_string());
        }
        match delete_with_condition(svc, &pods, ns, name, o).await {
            Err(e) if e.code == 409 && !rv_given => last = Some(e),
            r => return r,
        }
    }
    let Some((pod_rv, pod)) = pod else {
        return Err(last.unwrap_or_else(|| ApiError::conflict("", "pods", name)));
    };
    let pdbs = svc
        .registry
        .lookup(GROUP, "v1", RESOURCE)
        .ok_or_else(ApiError::path_not_found)?;
    let labels = meta::labels(&pod);
    let budgets: Vec<Value> = svc
        .list(&pdbs, Some(ns), &ListOptions::default())
        .await?
        .items
        .iter()
        .map(|o| o.parse().into_owned())
        .filter(|b| selector(b).is_some_and(|s| s.matches_json(labels)))
        .collect();
    if budgets.len() > 1 {
        return Err(ApiError::new(
            500,
            "",
            "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.",
        ));
    }
    let mut pin_version = false;
    let mut budget_name = String::new();
    if let Some(budget) = budgets.into_iter().next() {
        budget_name = meta::name(&budget).to_owned();
        let unhealthy_allowed = !pod_ready(&pod)
            && (budget.pointer("/spec/unhealthyPodEvictionPolicy") == Some(&json!("AlwaysAllow"))
                || (int(&budget, "/status/currentHealthy")
                    >= int(&budget, "/status/desiredHealthy")
                    && int(&budget, "/status/desiredHealthy") > 0));
        if unhealthy_allowed {
            // A Pod that is not Ready does not count as healthy: deleting it spends nothing,
            // as long as it is still the Pod that was looked at.
            pin_version = true;
        } else {
            spend(svc, &pdbs, ns, name, budget, opts.dry_run).await?;
        }
    }
    let mut o = opts;
    if pin_version && !rv_given {
        o.precondition_rv = Some(pod_rv.to_string());
    }
    match delete_with_condition(svc, &pods, ns, name, o).await {
        Err(e) if e.code == 409 && pin_version && !rv_given => Err(still_processing(&budget_name)),
        r => r,
    }
}

/// kube's `checkAndDecrement`, retried while the budget changes under it.
async fn spend(
    svc: &Service,
    pdbs: &ResourceInfo,
    ns: &str,
    pod: &str,
    mut budget: Value,
    dry_run: bool,
) -> Result<(), ApiError> {
    let mut last = None;
    for attempt in 0..RETRIES {
        backoff(attempt).await;
        if attempt > 0 {
            budget = svc.get(pdbs, ns, meta::name(&budget))?.parse().into_owned();
        }
        let name = meta::name(&budget).to_owned();
        if int(&budget, "/status/observedGeneration") < int(&budget, "/metadata/generation") {
            return Err(still_processing(&name));
        }
        let allowed = int(&budget, "/status/disruptionsAllowed");
        let forbidden = |why: &str| {
            ApiError::forbidden(format!(
                "poddisruptionbudget.policy \"{name}\" is forbidden: {why}"
            ))
            .with_details(GROUP, "poddisruptionbudget", &name)
        };
        if allowed < 0 {
            return Err(forbidden("pdb disruptions allowed is negative"));
        }
        let disrupted = budget
            .pointer("/status/disruptedPods")
            .and_then(Value::as_object)
            .map_or(0, Map::len);
        if disrupted > MAX_DISRUPTED_PODS {
            return Err(forbidden(
                "DisruptedPods map too big - too many evictions not confirmed by PDB controller",
            ));
        }
        if allowed == 0 {
            let mut e =
                ApiError::new(429, "TooManyRequests", TOO_MANY).with_causes(vec![Cause::new(
                    "DisruptionBudget",
                    "",
                    format!(
                        "The disruption budget {name} needs {} healthy pods and has {} currently",
                        int(&budget, "/status/desiredHealthy"),
                        int(&budget, "/status/currentHealthy")
                    ),
                )]);
            e.retry_after = None;
            return Err(e);
        }
        if dry_run {
            return Ok(());
        }
        let mut b = budget.clone();
        let Some(status) = b.get_mut("status").and_then(Value::as_object_mut) else {
            return Err(ApiError::internal("the disruption budget has no status"));
        };
        status.insert("disruptionsAllowed".into(), json!(allowed - 1));
        if allowed - 1 == 0 {
            update_allowed_condition(status);
        }
        let map = status.entry("disruptedPods").or_insert_with(|| json!({}));
        if !map.is_object() {
            *map = json!({});
        }
        map[pod] = json!(meta::now_rfc3339());
        match svc
            .update(
                pdbs,
                ns,
                &name,
                b,
                Subresource::Status,
                &WriteOptions::default(),
            )
            .await
        {
            Ok(_) => return Ok(()),
            Err(e) if e.code == 409 => last = Some(e),
            Err(e) => return Err(e),
        }
    }
    // As client-go's `RetryOnConflict`: the last conflict.
    Err(last.unwrap_or_else(|| ApiError::conflict(GROUP, RESOURCE, meta::name(&budget))))
}

/// kube's `EvictionsRetry`: every attempt after the first waits 500 ms, give or take 10%.
async fn backoff(attempt: usize) {
    if attempt == 0 {
        return;
    }
    let jitter = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::from(d.subsec_nanos()) % 50);
    tokio::time::sleep(Duration::from_millis(500 + jitter)).await;
}

/// The 429 for a budget its controller has not caught up with (kube's
/// `createTooManyRequestsError`; clients retry after 10 s).
fn still_processing(budget: &str) -> ApiError {
    let mut e = ApiError::new(429, "TooManyRequests", TOO_MANY).with_causes(vec![Cause::new(
        "DisruptionBudget",
        "",
        format!("The disruption budget {budget} is still being processed by the server."),
    )]);
    e.retry_after = Some(10);
    e
}

/// kube's `addConditionAndDeletePod`: mark the Pod with `DisruptionTarget` (so its owner and
/// any finalizer see why it goes), checking the delete's preconditions against that version,
/// then delete it.
async fn delete_with_condition(
    svc: &Service,
    pods: &ResourceInfo,
    ns: &str,
    name: &str,
    mut opts: DeleteOptions,
) -> Result<(), ApiError> {
    if !opts.dry_run {
        let mut marked = false;
        let mut last = None;
        // As kube's `GuaranteedUpdate`: a lost race is read again at once.
        for _ in 0..RETRIES {
            let current = svc.get(pods, ns, name)?;
            let uid = meta::meta_str(current.head(), "uid").unwrap_or("");
            if let Some(want) = opts.precondition_uid.as_deref().filter(|u| !u.is_empty()) {
                if want != uid {
                    return Err(ApiError::conflict_message(
                        "",
                        "Pod",
                        name,
                        &format!("the UID in the precondition ({want}) does not match the UID in record ({uid}). The object might have been deleted and then recreated"),
                    ));
                }
            }
            if let Some(want) = opts.precondition_rv.as_deref().filter(|r| !r.is_empty()) {
                if want != current.rv.to_string() {
                    return Err(ApiError::conflict_message(
                        "",
                        "Pod",
                        name,
                        &format!("the ResourceVersion in the precondition ({want}) does not match the ResourceVersion in record ({}). The object might have been modified", current.rv),
                    ));
                }
            }
            let mut pod = current.parse().into_owned();
            set_disruption_target(&mut pod);
            match svc
                .update(
                    pods,
                    ns,
                    name,
                    pod,
                    Subresource::Status,
                    &WriteOptions::default(),
                )
                .await
            {
                Ok(w) => {
                    if opts
                        .precondition_rv
                        .as_deref()
                        .is_some_and(|r| !r.is_empty())
                    {
                        opts.precondition_rv = Some(w.object.rv.to_string());
                    }
                    marked = true;
                    break;
                }
                Err(e) if e.code == 409 => last = Some(e),
                Err(e) => return Err(e),
            }
        }
        if !marked {
            return Err(last.unwrap_or_else(|| ApiError::conflict("", "pods", name)));
        }
    }
    svc.delete(pods, ns, name, &opts).await.map(|_| ())
}

/// kube's `UpdatePodCondition` with the eviction's `DisruptionTarget` condition.
fn set_disruption_target(pod: &mut Value) {
    let Some(obj) = pod.as_object_mut() else {
        return;
    };
    let status = obj.entry("status").or_insert_with(|| json!({}));
    if !status.is_object() {
        *status = json!({});
    }
    let conds = &mut status["conditions"];
    if !conds.is_array() {
        *conds = json!([]);
    }
    let Some(list) = conds.as_array_mut() else {
        return;
    };
    let now = meta::now_rfc3339();
    let (reason, message) = ("EvictionByEvictionAPI", "Eviction API: evicting");
    if let Some(c) = list
        .iter_mut()
        .find(|c| c.get("type").and_then(Value::as_str) == Some("DisruptionTarget"))
    {
        if c.get("status").and_then(Value::as_str) != Some("True") {
            c["lastTransitionTime"] = json!(now);
        }
        c["status"] = json!("True");
        c["reason"] = json!(reason);
        c["message"] = json!(message);
        return;
    }
    list.push(json!({
        "type": "DisruptionTarget",
        "status": "True",
        "lastProbeTime": null,
        "lastTransitionTime": now,
        "reason": reason,
        "message": message,
    }));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn messages(obj: Value) -> Vec<String> {
        validate(&obj, None)
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    #[test]
    fn a_budget_stored_with_an_invalid_selector_value_may_still_be_updated() {
        let pdb = json!({"spec": {"minAvailable": 1, "selector": {"matchExpressions": [
            {"key": "app", "operator": "In", "values": ["a,b"]}]}}});
        let created = validate(&pdb, None);
        assert_eq!(
            created.iter().map(ToString::to_string).collect::<Vec<_>>(),
            ["spec.selector.matchExpressions[0].values[0]: Invalid value: \"a,b\": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"]
        );
        assert!(validate(&pdb, Some(&pdb)).is_empty());
        // matchLabels are labels: checked either way.
        let labels = json!({"spec": {"selector": {"matchLabels": {"app": "a,b"}}}});
        assert!(!validate(&labels, Some(&pdb)).is_empty());
    }

    #[test]
    fn budgets_are_validated_as_kube_validates_them() {
        assert!(messages(
            json!({"spec": {"minAvailable": 2, "selector": {"matchLabels": {"app": "web"}}}})
        )
        .is_empty());
        assert!(messages(json!({"spec": {"maxUnavailable": "25%"}})).is_empty());
        assert_eq!(
            messages(json!({"spec": {"minAvailable": 1, "maxUnavailable": 1}})),
            vec!["spec: Invalid value: {\"MinAvailable\":1,\"Selector\":null,\"MaxUnavailable\":1,\"UnhealthyPodEvictionPolicy\":null}: minAvailable and maxUnavailable cannot be both set"]
        );
        assert_eq!(
            messages(json!({"spec": {"minAvailable": "50%", "maxUnavailable": 1,
                "selector": {"matchLabels": {"b": "2", "a": "1"}},
                "unhealthyPodEvictionPolicy": "AlwaysAllow"}})),
            vec!["spec: Invalid value: {\"MinAvailable\":\"50%\",\"Selector\":{\"matchLabels\":{\"a\":\"1\",\"b\":\"2\"}},\"MaxUnavailable\":1,\"UnhealthyPodEvictionPolicy\":\"AlwaysAllow\"}: minAvailable and maxUnavailable cannot be both set"]
        );
        assert_eq!(
            messages(json!({"spec": {"minAvailable": -1}})),
            vec!["spec.minAvailable: Invalid value: -1: must be greater than or equal to 0"]
        );
        assert_eq!(
            messages(json!({"spec": {"maxUnavailable": "50x"}})),
            vec!["spec.maxUnavailable: Invalid value: \"50x\": a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')"]
        );
        assert_eq!(
            messages(json!({"spec": {"minAvailable": "101%"}})),
            vec!["spec.minAvailable: Invalid value: \"101%\": must not be greater than 100%"]
        );
        assert_eq!(
            messages(json!({"spec": {"unhealthyPodEvictionPolicy": "Never"}})),
            vec!["spec.unhealthyPodEvictionPolicy: Unsupported value: \"Never\": supported values: \"AlwaysAllow\", \"IfHealthyBudget\""]
        );
        assert_eq!(
            messages(json!({"spec": {"selector": {"matchExpressions": [{"key": "a", "operator": "In"}, {"key": "b", "operator": "Has"}]}}})),
            vec![
                "spec.selector.matchExpressions[0].values: Required value: must be specified when `operator` is 'In' or 'NotIn'",
                "spec.selector.matchExpressions[1].operator: Invalid value: \"Has\": not a valid selector operator",
            ]
        );
        assert_eq!(
            messages(json!({"spec": {}, "status": {"disruptionsAllowed": -1}})),
            vec![
                "status.disruptionsAllowed: Invalid value: -1: must be greater than or equal to 0"
            ]
        );
    }

    #[test]
    fn percentages_scale_as_intstr_does() {
        assert_eq!(scaled_value(&json!(3), 10, true), Some(3));
        assert_eq!(scaled_value(&json!("50%"), 3, true), Some(2));
        assert_eq!(scaled_value(&json!("50%"), 3, false), Some(1));
        assert_eq!(scaled_value(&json!("100%"), 7, true), Some(7));
        assert_eq!(scaled_value(&json!("0%"), 7, true), Some(0));
        assert_eq!(scaled_value(&json!("x%"), 7, true), None);
    }

    #[test]
    fn empty_or_missing_selectors_select_nothing() {
        assert!(selector(&json!({"spec": {}})).is_none());
        assert!(selector(&json!({"spec": {"selector": {}}})).is_none());
        let s = selector(&json!({"spec": {"selector": {"matchLabels": {"app": "web"}}}}));
        let labels = json!({"app": "web"});
        assert!(s.is_some_and(|s| s.matches_json(labels.as_object())));
    }

    #[test]
    fn the_allowed_condition_follows_the_allowance() {
        let mut status = json!({"disruptionsAllowed": 1, "observedGeneration": 3})
            .as_object()
            .cloned()
            .unwrap_or_default();
        update_allowed_condition(&mut status);
        let pdb = json!({"metadata": {"generation": 3}, "status": status.clone()});
        assert!(conditions_up_to_date(&pdb));
        assert_eq!(pdb["status"]["conditions"][0]["reason"], "SufficientPods");
        let since = pdb["status"]["conditions"][0]["lastTransitionTime"].clone();
        status.insert("disruptionsAllowed".into(), json!(0));
        assert!(!conditions_up_to_date(
            &json!({"metadata": {"generation": 3}, "status": status.clone()})
        ));
        update_allowed_condition(&mut status);
        assert_eq!(status["conditions"][0]["status"], "False");
        assert_eq!(status["conditions"][0]["reason"], "InsufficientPods");
        assert_eq!(status["conditions"].as_array().map(Vec::len), Some(1));
        let _ = since;
    }
}
