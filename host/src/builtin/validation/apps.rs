//! kube 1.34's validation of `apps/v1` Deployments, ReplicaSets and DaemonSets
//! (`pkg/apis/apps/validation`: `ValidateDeployment`, `ValidateDeploymentUpdate`,
//! `ValidateDeploymentStatusUpdate`, and the same for ReplicaSets and DaemonSets, composed as
//! the registry strategies compose them), with kube's field paths, messages and order.
//!
//! Metadata is validated elsewhere. The Pod template is validated by [`pod::pod_template_with`];
//! what is here are the workload's own rules around it. As in `pod.rs`, a field kube always
//! defaults is accepted when absent and checked as its default (a Deployment's strategy, a
//! template's restart policy, ...): kube's defaulting never leaves it empty.
//!
//! The helpers shared with `batch.rs` (kube's value rendering, label selectors, non-negative
//! counts) live here.

use serde_json::{Map, Value};

use super::field::{child, forbidden, label_value, qualified_name, required};
use super::pod::{self, PodOpts};
use crate::model::status::Cause;

static NULL: Value = Value::Null;

/// kube's `IsNegativeErrorMsg`.
pub(crate) const NEGATIVE: &str = "must be greater than or equal to 0";
/// The template's labels are not selected by the selector.
pub(crate) const LABELS_MISMATCH: &str = "`selector` does not match template `labels`";
/// `IsValidPercent`'s message (with kube's two spaces before `or`).
const PERCENT_MSG: &str = "a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')";

// ---- rendering values as kube's field errors do (json.Marshal, apimachinery v0.34) ----

/// Go's `json.Marshal` of a string (HTML characters escaped as Go escapes them).
pub(crate) fn go_str(s: &str) -> String {
    super::field::json_value(&Value::String(s.to_owned()))
}

/// Go's `json.Marshal` of a value decoded into maps and slices: map keys sorted.
pub(crate) fn go_json(v: &Value) -> String {
    super::field::json_value(v)
}

/// `go_json` of an optional value: `null` when unset.
pub(crate) fn opt_json(v: Option<&Value>) -> String {
    super::field::json_opt(v)
}

/// Go's `json.Marshal` of a struct: the fields in declaration order.
pub(crate) use super::field::struct_json;

/// `field.Invalid` with the value already rendered.
pub(crate) fn inv(path: &str, shown: &str, detail: &str) -> Cause {
    Cause::new(
        "FieldValueInvalid",
        path,
        format!("Invalid value: {shown}: {detail}"),
    )
}

/// `field.Invalid` of an integer.
pub(crate) fn inv_n(path: &str, n: i64, detail: &str) -> Cause {
    inv(path, &n.to_string(), detail)
}

/// `field.Invalid(path, field.OmitValueType{}, detail)`: `Invalid value: detail`.
pub(crate) fn inv_omit(path: &str, detail: &str) -> Cause {
    Cause::new(
        "FieldValueInvalid",
        path,
        format!("Invalid value: {detail}"),
    )
}

/// `field.NotSupported` with the value already rendered.
pub(crate) fn not_sup(path: &str, shown: &str, supported: &[&str]) -> Cause {
    let list = supported
        .iter()
        .map(|s| super::cron::go_quote(s))
        .collect::<Vec<_>>()
        .join(", ");
    Cause::new(
        "FieldValueNotSupported",
        path,
        format!("Unsupported value: {shown}: supported values: {list}"),
    )
}

/// `obj[key]` unless absent or null.
pub(crate) fn set<'a>(obj: &'a Value, key: &str) -> Option<&'a Value> {
    obj.get(key).filter(|v| !v.is_null())
}

/// The integer at `obj[key]`, when set.
pub(crate) fn int(obj: &Value, key: &str) -> Option<i64> {
    set(obj, key).and_then(Value::as_i64)
}

/// The string at `obj[key]` (`""` when absent).
pub(crate) fn text<'a>(obj: &'a Value, key: &str) -> &'a str {
    obj.get(key).and_then(Value::as_str).unwrap_or("")
}

/// kube's `ValidateNonnegativeField` of `obj[key]` when it is set.
pub(crate) fn nonneg(obj: &Value, key: &str, path: &str, out: &mut Vec<Cause>) {
    if let Some(n) = int(obj, key).filter(|n| *n < 0) {
        out.push(inv_n(path, n, NEGATIVE));
    }
}

// ---- label selectors (apimachinery `meta/v1/validation`, `LabelSelectorAsSelector`) ----

/// A `metav1.LabelSelector` as `json.Marshal` prints it (`matchLabels`, `matchExpressions`,
/// both omitted when empty).
pub(crate) fn selector_json(sel: Option<&Value>) -> String {
    let Some(sel) = sel.filter(|s| !s.is_null()) else {
        return "null".to_owned();
    };
    let mut fields = Vec::new();
    if let Some(m) = sel
        .get("matchLabels")
        .and_then(Value::as_object)
        .filter(|m| !m.is_empty())
    {
        fields.push(("matchLabels", go_json(&Value::Object(m.clone()))));
    }
    let exprs = super::field::items(sel, "matchExpressions");
    if !exprs.is_empty() {
        let list: Vec<String> = exprs
            .iter()
            .map(|e| {
                let mut f = vec![
                    ("key", go_str(text(e, "key"))),
                    ("operator", go_str(text(e, "operator"))),
                ];
                let values = super::field::items(e, "values");
                if !values.is_empty() {
                    f.push(("values", go_json(&Value::Array(values.to_vec()))));
                }
                struct_json(&f)
            })
            .collect();
        fields.push(("matchExpressions", format!("[{}]", list.join(","))));
    }
    struct_json(&fields)
}

/// kube's `ValidateLabelSelector`: nothing for an unset selector (`pod.rs`' one).
pub(crate) fn validate_label_selector(
    sel: Option<&Value>,
    allow_invalid_values: bool,
    path: &str,
    out: &mut Vec<Cause>,
) {
    pod::label_selector(sel, allow_invalid_values, path, out);
}

/// `metav1.LabelSelectorHasInvalidLabelValue`: a selector value that is no label value.
pub(crate) fn selector_has_invalid_label_value(sel: Option<&Value>) -> bool {
    let Some(sel) = sel.filter(|s| !s.is_null()) else {
        return false;
    };
    let labels = sel
        .get("matchLabels")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .any(|(_, v)| !label_value(v.as_str().unwrap_or("")).is_empty());
    labels
        || super::field::items(sel, "matchExpressions")
            .iter()
            .flat_map(|e| super::field::items(e, "values"))
            .any(|v| !label_value(v.as_str().unwrap_or("")).is_empty())
}

/// Whether a selector has no requirements (`len(matchLabels)+len(matchExpressions) == 0`).
pub(crate) fn selector_is_empty(sel: &Value) -> bool {
    sel.get("matchLabels")
        .and_then(Value::as_object)
        .is_none_or(Map::is_empty)
        && super::field::items(sel, "matchExpressions").is_empty()
}

/// One requirement of a converted selector.
#[derive(Debug, Clone)]
pub(crate) enum Req {
    In(String, Vec<String>),
    NotIn(String, Vec<String>),
    Exists(String),
    DoesNotExist(String),
}

/// The result of `metav1.LabelSelectorAsSelector`.
#[derive(Debug, Clone)]
pub(crate) enum Selector {
    /// `labels.Nothing()`, from an unset selector: matches nothing, and is not empty.
    Nothing,
    /// The requirements (none: `labels.Everything()`).
    Reqs(Vec<Req>),
}

impl Selector {
    /// `Selector.Empty()`.
    pub(crate) fn is_empty(&self) -> bool {
        matches!(self, Selector::Reqs(r) if r.is_empty())
    }

    /// `Selector.Matches(labels.Set(labels))`.
    pub(crate) fn matches(&self, labels: Option<&Map<String, Value>>) -> bool {
        let get = |k: &str| labels.and_then(|l| l.get(k)).and_then(Value::as_str);
        match self {
            Selector::Nothing => false,
            Selector::Reqs(reqs) => reqs.iter().all(|r| match r {
                Req::In(k, vs) => get(k.as_str()).is_some_and(|v| vs.iter().any(|x| x == v)),
                Req::NotIn(k, vs) => get(k.as_str()).is_none_or(|v| !vs.iter().any(|x| x == v)),
                Req::Exists(k) => get(k.as_str()).is_some(),
                Req::DoesNotExist(k) => get(k.as_str()).is_none(),
            }),
        }
    }

    /// Whether the selector matches a set of string pairs.
    pub(crate) fn matches_pairs(&self, pairs: &[(&str, &str)]) -> bool {
        let map: Map<String, Value> = pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), Value::String((*v).to_owned())))
            .collect();
        self.matches(Some(&map))
    }
}

/// `metav1.LabelSelectorAsSelector`: `Err` when a key, value or operator is invalid.
pub(crate) fn as_selector(sel: Option<&Value>) -> Result<Selector, ()> {
    let Some(sel) = sel.filter(|s| !s.is_null()) else {
        return Ok(Selector::Nothing);
    };
    let mut reqs = Vec::new();
    let key_ok = |k: &str| qualified_name(k).is_empty();
    let value_ok = |v: &str| label_value(v).is_empty();
    for (k, v) in sel
        .get("matchLabels")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
    {
        let v = v.as_str().unwrap_or("");
        if !key_ok(k.as_str()) || !value_ok(v) {
            return Err(());
        }
        reqs.push(Req::In(k.clone(), vec![v.to_owned()]));
    }
    for e in super::field::items(sel, "matchExpressions") {
        let key = text(e, "key").to_owned();
        if !key_ok(&key) {
            return Err(());
        }
        let values: Vec<String> = super::field::items(e, "values")
            .iter()
            .map(|v| v.as_str().unwrap_or("").to_owned())
            .collect();
        if !values.iter().all(|v| value_ok(v.as_str())) {
            return Err(());
        }
        let req = match text(e, "operator") {
            "In" | "NotIn" if values.is_empty() => return Err(()),
            "Exists" | "DoesNotExist" if !values.is_empty() => return Err(()),
            "In" => Req::In(key, values),
            "NotIn" => Req::NotIn(key, values),
            "Exists" => Req::Exists(key),
            "DoesNotExist" => Req::DoesNotExist(key),
            _ => return Err(()),
        };
        reqs.push(req);
    }
    Ok(Selector::Reqs(reqs))
}

/// kube's `ValidateImmutableField` of a `*metav1.LabelSelector` (`Semantic.DeepEqual`: an
/// empty map or list is an absent one, an unset selector is not an empty one).
pub(crate) fn immutable_selector(
    new: Option<&Value>,
    old: Option<&Value>,
    path: &str,
    out: &mut Vec<Cause>,
) {
    let norm = |v: Option<&Value>| {
        v.filter(|v| !v.is_null())
            .map(|v| super::field::zero_dropped(v, true))
    };
    if norm(new) != norm(old) {
        out.push(inv(path, &selector_json(new), "field is immutable"));
    }
}

/// The `spec.template.metadata.labels` mismatch, the labels as JSON.
pub(crate) fn labels_mismatch(labels: Option<&Value>, path: &str) -> Cause {
    inv(
        path,
        &opt_json(labels.filter(|l| !l.is_null())),
        LABELS_MISMATCH,
    )
}

/// The pod validation options of an update: kube's `GetValidationOptionsFromPodTemplate` of the
/// stored template (none on create).
pub(crate) fn template_opts(old_template: Option<&Value>) -> PodOpts {
    pod::pod_opts(old_template.and_then(|t| t.get("spec")))
}

// ---- IntOrString (`ValidatePositiveIntOrPercent` and friends) ----

/// Whether a string is a valid percent (`^[0-9]+%$`).
fn is_percent(s: &str) -> bool {
    s.strip_suffix('%')
        .is_some_and(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
}

/// `getPercentValue`.
fn percent_value(v: &Value) -> Option<i64> {
    let s = v.as_str().filter(|s| is_percent(s))?;
    let digits = &s[..s.len() - 1];
    Some(match super::cron::atoi(digits) {
        Ok(n) => n,
        Err(super::cron::AtoiError::Range(n)) => n,
        Err(super::cron::AtoiError::Syntax) => 0,
    })
}

/// `getIntOrPercentValue`: the percent when it is one, else `IntValue()` (a string's `Atoi`,
/// 0 when it does not parse).
fn int_or_percent_value(v: &Value) -> i64 {
    if let Some(p) = percent_value(v) {
        return p;
    }
    match v {
        Value::Number(n) => n.as_i64().unwrap_or(0),
        Value::String(s) => match super::cron::atoi(s) {
            Ok(n) => n,
            Err(super::cron::AtoiError::Range(n)) => n,
            Err(super::cron::AtoiError::Syntax) => 0,
        },
        _ => 0,
    }
}

/// `ValidatePositiveIntOrPercent`.
fn positive_int_or_percent(v: &Value, path: &str, out: &mut Vec<Cause>) {
    match v {
        Value::String(s) => {
            if !is_percent(s) {
                out.push(inv(path, &go_str(s), PERCENT_MSG));
            }
        }
        Value::Number(n) => {
            if let Some(n) = n.as_i64().filter(|n| *n < 0) {
                out.push(inv_n(path, n, NEGATIVE));
            }
        }
        other => out.push(inv(
            path,
            &go_json(other),
            "must be an integer or percentage (e.g '5%%')",
        )),
    }
}

/// `IsNotMoreThan100Percent`.
fn not_more_than_100_percent(v: &Value, path: &str, out: &mut Vec<Cause>) {
    if percent_value(v).is_some_and(|p| p > 100) {
        out.push(inv(path, &go_json(v), "must not be greater than 100%"));
    }
}

/// An IntOrString field, its default when unset.
fn int_or_string(obj: &Value, key: &str, default: Value) -> Value {
    set(obj, key).cloned().unwrap_or(default)
}

/// The internal `IntOrString` of an optional v1 field (the zero value, `0`, when unset).
fn int_or_string_json(obj: Option<&Value>, key: &str) -> String {
    obj.and_then(|o| set(o, key))
        .map_or_else(|| "0".to_owned(), go_json)
}

// ---- Deployment ----

/// kube's `ValidateDeployment` (`old` is `None`) or `ValidateDeploymentUpdate` (the spec, then
/// the selector's immutability). Metadata is validated elsewhere.
pub fn deployment(obj: &Value, old: Option<&Value>) -> Vec<Cause> {
    let spec = obj.get("spec").unwrap_or(&NULL);
    let old_spec = old.map(|o| o.get("spec").unwrap_or(&NULL));
    let opts = template_opts(old_spec.and_then(|s| s.get("template")));
    let mut out = Vec::new();
    deployment_spec(spec, &opts, &mut out);
    if let Some(old_spec) = old_spec {
        immutable_selector(
            set(spec, "selector"),
            set(old_spec, "selector"),
            "spec.selector",
            &mut out,
        );
    }
    out
}

/// kube's `ValidateDeploymentSpec`.
fn deployment_spec(spec: &Value, opts: &PodOpts, out: &mut Vec<Cause>) {
    nonneg(spec, "replicas", "spec.replicas", out);
    let selector = set(spec, "selector");
    replicated_selector(selector, out);
    match as_selector(selector) {
        Err(()) => out.push(inv(
            "spec.selector",
            &selector_json(selector),
            "invalid label selector",
        )),
        Ok(sel) => template_for_replica_set(spec, &sel, opts, out),
    }
    deployment_strategy(spec.get("strategy").unwrap_or(&NULL), out);
    nonneg(spec, "minReadySeconds", "spec.minReadySeconds", out);
    nonneg(
        spec,
        "revisionHistoryLimit",
        "spec.revisionHistoryLimit",
        out,
    );
    // apps/v1 defaults `progressDeadlineSeconds` to 600.
    let pds = int(spec, "progressDeadlineSeconds").unwrap_or(600);
    let path = "spec.progressDeadlineSeconds";
    if pds < 0 {
        out.push(inv_n(path, pds, NEGATIVE));
    }
    if pds <= int(spec, "minReadySeconds").unwrap_or(0) {
        out.push(inv_n(path, pds, "must be greater than minReadySeconds"));
    }
}

/// The selector rules Deployments and ReplicaSets share: required, valid, not empty.
fn replicated_selector(selector: Option<&Value>, out: &mut Vec<Cause>) {
    match selector {
        None => out.push(required("spec.selector", "")),
        Some(sel) => {
            validate_label_selector(Some(sel), false, "spec.selector", out);
            if selector_is_empty(sel) {
                out.push(inv(
                    "spec.selector",
                    &selector_json(Some(sel)),
                    "empty selector is invalid for deployment",
                ));
            }
        }
    }
}

/// kube's `ValidatePodTemplateSpecForReplicaSet` (Deployments and ReplicaSets).
fn template_for_replica_set(spec: &Value, sel: &Selector, opts: &PodOpts, out: &mut Vec<Cause>) {
    let template = spec.get("template").unwrap_or(&NULL);
    let labels = template.pointer("/metadata/labels");
    if !sel.is_empty() && !sel.matches(labels.and_then(Value::as_object)) {
        out.push(labels_mismatch(labels, "spec.template.metadata.labels"));
    }
    pod::pod_template_with(template, opts, "spec.template", out);
    template_restart_and_deadline(template, "ReplicaSet", out);
}

/// The template rules of the apps kinds: restart policy `Always` (the default), no
/// `activeDeadlineSeconds`.
fn template_restart_and_deadline(template: &Value, kind: &str, out: &mut Vec<Cause>) {
    let tspec = template.get("spec").unwrap_or(&NULL);
    let restart = match text(tspec, "restartPolicy") {
        "" => "Always",
        r => r,
    };
    if restart != "Always" {
        out.push(not_sup(
            "spec.template.spec.restartPolicy",
            &go_str(restart),
            &["Always"],
        ));
    }
    if set(tspec, "activeDeadlineSeconds").is_some() {
        out.push(forbidden(
            "spec.template.spec.activeDeadlineSeconds",
            &format!("activeDeadlineSeconds in {kind} is not Supported"),
        ));
    }
}

/// kube's `ValidateDeploymentStrategy` (the type defaults to `RollingUpdate`, its limits to
/// 25%).
fn deployment_strategy(strategy: &Value, out: &mut Vec<Cause>) {
    let ru = set(strategy, "rollingUpdate");
    let path = "spec.strategy.rollingUpdate";
    match text(strategy, "type") {
        "Recreate" => {
            if ru.is_some() {
                out.push(forbidden(
                    path,
                    "may not be specified when strategy `type` is 'Recreate'",
                ));
            }
        }
        "RollingUpdate" | "" => {
            let ru = ru.unwrap_or(&NULL);
            let max_unavailable = int_or_string(ru, "maxUnavailable", Value::from("25%"));
            let max_surge = int_or_string(ru, "maxSurge", Value::from("25%"));
            let mu_path = child(path, "maxUnavailable");
            positive_int_or_percent(&max_unavailable, &mu_path, out);
            positive_int_or_percent(&max_surge, &child(path, "maxSurge"), out);
            if int_or_percent_value(&max_unavailable) == 0 && int_or_percent_value(&max_surge) == 0
            {
                out.push(inv(
                    &mu_path,
                    &go_json(&max_unavailable),
                    "may not be 0 when `maxSurge` is 0",
                ));
            }
            not_more_than_100_percent(&max_unavailable, &mu_path, out);
        }
        other => out.push(unsupported_strategy(
            "spec.strategy",
            other,
            ru,
            &["Recreate", "RollingUpdate"],
        )),
    }
}

/// A Deployment's or DaemonSet's strategy of an unknown type, as kube shows it: the internal
/// struct (`{"Type":...,"RollingUpdate":{"MaxUnavailable":...,"MaxSurge":...}}`).
fn unsupported_strategy(path: &str, ty: &str, ru: Option<&Value>, supported: &[&str]) -> Cause {
    let ru_json = ru.map_or_else(
        || "null".to_owned(),
        |r| {
            struct_json(&[
                (
                    "MaxUnavailable",
                    int_or_string_json(Some(r), "maxUnavailable"),
                ),
                ("MaxSurge", int_or_string_json(Some(r), "maxSurge")),
            ])
        },
    );
    let shown = struct_json(&[("Type", go_str(ty)), ("RollingUpdate", ru_json)]);
    not_sup(path, &shown, supported)
}

/// kube's `ValidateDeploymentStatusUpdate` (status fields only).
pub fn deployment_status(obj: &Value, old: &Value) -> Vec<Cause> {
    let status = obj.get("status").unwrap_or(&NULL);
    let old_status = old.get("status").unwrap_or(&NULL);
    let mut out = Vec::new();
    for f in [
        "observedGeneration",
        "replicas",
        "updatedReplicas",
        "readyReplicas",
        "availableReplicas",
        "unavailableReplicas",
    ] {
        nonneg(status, f, &child("status", f), &mut out);
    }
    terminating_replicas(status, old_status, &mut out);
    nonneg(status, "collisionCount", "status.collisionCount", &mut out);
    let get = |f: &str| int(status, f).unwrap_or(0);
    let replicas = get("replicas");
    for f in ["updatedReplicas", "readyReplicas", "availableReplicas"] {
        if get(f) > replicas {
            out.push(inv_n(
                &child("status", f),
                get(f),
                "cannot be greater than status.replicas",
            ));
        }
    }
    if get("availableReplicas") > get("readyReplicas") {
        out.push(inv_n(
            "status.availableReplicas",
            get("availableReplicas"),
            "cannot be greater than readyReplicas",
        ));
    }
    collision_count_decremented(status, old_status, &mut out);
    out
}

/// `status.terminatingReplicas` (1.33+): kube 1.34 drops the field (its gate is off) unless
/// the stored status has it, so it is checked only then.
fn terminating_replicas(status: &Value, old_status: &Value, out: &mut Vec<Cause>) {
    if set(old_status, "terminatingReplicas").is_some() {
        nonneg(
            status,
            "terminatingReplicas",
            "status.terminatingReplicas",
            out,
        );
    }
}

/// `apivalidation.IsDecremented` of `status.collisionCount`.
fn collision_count_decremented(status: &Value, old_status: &Value, out: &mut Vec<Cause>) {
    if let Some(was) = int(old_status, "collisionCount") {
        let now = int(status, "collisionCount");
        if now.is_none_or(|n| n < was) {
            out.push(inv_n(
                "status.collisionCount",
                now.unwrap_or(0),
                "cannot be decremented",
            ));
        }
    }
}

// ---- ReplicaSet ----

/// kube's ReplicaSet strategy: `ValidateReplicaSet` on create; on update `ValidateReplicaSet`
/// and then `ValidateReplicaSetUpdate`, which validates the spec again (so each spec cause is
/// listed twice, as kube lists it) and then the selector's immutability.
pub fn replica_set(obj: &Value, old: Option<&Value>) -> Vec<Cause> {
    let spec = obj.get("spec").unwrap_or(&NULL);
    let old_spec = old.map(|o| o.get("spec").unwrap_or(&NULL));
    let opts = template_opts(old_spec.and_then(|s| s.get("template")));
    let mut out = Vec::new();
    replica_set_spec(spec, &opts, &mut out);
    if let Some(old_spec) = old_spec {
        replica_set_spec(spec, &opts, &mut out);
        immutable_selector(
            set(spec, "selector"),
            set(old_spec, "selector"),
            "spec.selector",
            &mut out,
        );
    }
    out
}

/// kube's `ValidateReplicaSetSpec`.
fn replica_set_spec(spec: &Value, opts: &PodOpts, out: &mut Vec<Cause>) {
    nonneg(spec, "replicas", "spec.replicas", out);
    nonneg(spec, "minReadySeconds", "spec.minReadySeconds", out);
    let selector = set(spec, "selector");
    replicated_selector(selector, out);
    match as_selector(selector) {
        Err(()) => out.push(inv(
            "spec.selector",
            &selector_json(selector),
            "invalid label selector",
        )),
        Ok(sel) => template_for_replica_set(spec, &sel, opts, out),
    }
}

/// kube's `ValidateReplicaSetStatusUpdate` (status fields only).
pub fn replica_set_status(obj: &Value, old: &Value) -> Vec<Cause> {
    let status = obj.get("status").unwrap_or(&NULL);
    let old_status = old.get("status").unwrap_or(&NULL);
    let mut out = Vec::new();
    for f in [
        "replicas",
        "fullyLabeledReplicas",
        "readyReplicas",
        "availableReplicas",
        "observedGeneration",
    ] {
        nonneg(status, f, &child("status", f), &mut out);
    }
    terminating_replicas(status, old_status, &mut out);
    let get = |f: &str| int(status, f).unwrap_or(0);
    let replicas = get("replicas");
    for f in ["fullyLabeledReplicas", "readyReplicas", "availableReplicas"] {
        if get(f) > replicas {
            out.push(inv_n(
                &child("status", f),
                get(f),
                "cannot be greater than status.replicas",
            ));
        }
    }
    if get("availableReplicas") > get("readyReplicas") {
        out.push(inv_n(
            "status.availableReplicas",
            get("availableReplicas"),
            "cannot be greater than readyReplicas",
        ));
    }
    out
}

// ---- DaemonSet ----

/// kube's DaemonSet strategy: `ValidateDaemonSet` on create; on update `ValidateDaemonSet`
/// and then `ValidateDaemonSetUpdate` (the selector's immutability, then the spec again). A
/// selector value that is no label value is let stay when the stored selector has one.
pub fn daemon_set(obj: &Value, old: Option<&Value>) -> Vec<Cause> {
    let spec = obj.get("spec").unwrap_or(&NULL);
    let old_spec = old.map(|o| o.get("spec").unwrap_or(&NULL));
    let mut opts = template_opts(old_spec.and_then(|s| s.get("template")));
    if old_spec.is_some_and(|s| selector_has_invalid_label_value(set(s, "selector"))) {
        opts.allow_invalid_label_value_in_selector = true;
    }
    let mut out = Vec::new();
    daemon_set_spec(spec, &opts, &mut out);
    if let Some(old_spec) = old_spec {
        immutable_selector(
            set(spec, "selector"),
            set(old_spec, "selector"),
            "spec.selector",
            &mut out,
        );
        // (`ValidateDaemonSetSpecUpdate`'s template generation rules cannot fire: the server
        // sets the generation itself.)
        daemon_set_spec(spec, &opts, &mut out);
    }
    out
}

/// kube's `ValidateDaemonSetSpec`.
fn daemon_set_spec(spec: &Value, opts: &PodOpts, out: &mut Vec<Cause>) {
    let selector = set(spec, "selector");
    validate_label_selector(
        selector,
        opts.allow_invalid_label_value_in_selector,
        "spec.selector",
        out,
    );
    let template = spec.get("template").unwrap_or(&NULL);
    let labels = template.pointer("/metadata/labels");
    if let Ok(sel) = as_selector(selector) {
        if !sel.matches(labels.and_then(Value::as_object)) {
            out.push(labels_mismatch(labels, "spec.template.metadata.labels"));
        }
    }
    if let Some(sel) = selector.filter(|s| selector_is_empty(s)) {
        out.push(inv(
            "spec.selector",
            &selector_json(Some(sel)),
            "empty selector is invalid for daemonset",
        ));
    }
    pod::pod_template_with(template, opts, "spec.template", out);
    template_restart_and_deadline(template, "DaemonSet", out);
    nonneg(spec, "minReadySeconds", "spec.minReadySeconds", out);
    daemon_set_update_strategy(spec.get("updateStrategy").unwrap_or(&NULL), out);
    nonneg(
        spec,
        "revisionHistoryLimit",
        "spec.revisionHistoryLimit",
        out,
    );
}

/// kube's `ValidateDaemonSetUpdateStrategy` (the type defaults to `RollingUpdate`, its limits
/// to 1 unavailable and no surge).
fn daemon_set_update_strategy(strategy: &Value, out: &mut Vec<Cause>) {
    let ru = set(strategy, "rollingUpdate");
    let path = "spec.updateStrategy.rollingUpdate";
    match text(strategy, "type") {
        "OnDelete" => {}
        "RollingUpdate" | "" => {
            let ru = ru.unwrap_or(&NULL);
            let max_unavailable = int_or_string(ru, "maxUnavailable", Value::from(1));
            let max_surge = int_or_string(ru, "maxSurge", Value::from(0));
            let mu_path = child(path, "maxUnavailable");
            let ms_path = child(path, "maxSurge");
            positive_int_or_percent(&max_unavailable, &mu_path, out);
            positive_int_or_percent(&max_surge, &ms_path, out);
            not_more_than_100_percent(&max_unavailable, &mu_path, out);
            not_more_than_100_percent(&max_surge, &ms_path, out);
            let has_unavailable = int_or_percent_value(&max_unavailable) != 0;
            let has_surge = int_or_percent_value(&max_surge) != 0;
            if has_unavailable && has_surge {
                out.push(inv(
                    &ms_path,
                    &go_json(&max_surge),
                    "may not be set when maxUnavailable is non-zero",
                ));
            }
            if !has_unavailable && !has_surge {
                out.push(required(&mu_path, "cannot be 0 when maxSurge is 0"));
            }
        }
        other => out.push(unsupported_strategy(
            "spec.updateStrategy",
            other,
            ru,
            &["RollingUpdate", "OnDelete"],
        )),
    }
}

/// kube's `ValidateDaemonSetStatusUpdate` (status fields only).
pub fn daemon_set_status(obj: &Value, old: &Value) -> Vec<Cause> {
    let status = obj.get("status").unwrap_or(&NULL);
    let old_status = old.get("status").unwrap_or(&NULL);
    let mut out = Vec::new();
    for f in [
        "currentNumberScheduled",
        "numberMisscheduled",
        "desiredNumberScheduled",
        "numberReady",
        "observedGeneration",
        "updatedNumberScheduled",
        "numberAvailable",
        "numberUnavailable",
        "collisionCount",
    ] {
        nonneg(status, f, &child("status", f), &mut out);
    }
    collision_count_decremented(status, old_status, &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn messages(causes: Vec<Cause>) -> Vec<String> {
        causes.iter().map(ToString::to_string).collect()
    }

    fn has(got: &[String], want: &str) {
        assert!(got.iter().any(|g| g == want), "{want}\nnot in {got:#?}");
    }

    fn deploy(extra: Value) -> Value {
        let mut d = json!({
            "metadata": {"name": "web", "namespace": "default"},
            "spec": {
                "replicas": 1,
                "selector": {"matchLabels": {"app": "web"}},
                "strategy": {"type": "RollingUpdate",
                    "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}},
                "revisionHistoryLimit": 10,
                "progressDeadlineSeconds": 600,
                "template": {
                    "metadata": {"labels": {"app": "web"}},
                    "spec": {"restartPolicy": "Always",
                        "containers": [{"name": "c", "image": "nginx"}]},
                },
            },
        });
        if let (Some(spec), Value::Object(extra)) = (d["spec"].as_object_mut(), extra) {
            spec.extend(extra);
        }
        d
    }

    fn daemon(extra: Value) -> Value {
        let mut d = deploy(json!({}));
        let spec = d["spec"].as_object_mut().unwrap();
        for k in ["replicas", "strategy", "progressDeadlineSeconds"] {
            spec.remove(k);
        }
        spec.insert(
            "updateStrategy".into(),
            json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}}),
        );
        if let Value::Object(extra) = extra {
            spec.extend(extra);
        }
        d
    }

    #[test]
    fn a_valid_deployment_passes() {
        assert_eq!(
            messages(deployment(&deploy(json!({})), None)),
            Vec::<String>::new()
        );
        // Defaulted fields may be absent.
        let mut d = deploy(json!({}));
        let spec = d["spec"].as_object_mut().unwrap();
        spec.remove("strategy");
        spec.remove("progressDeadlineSeconds");
        assert!(deployment(&d, None).is_empty());
        assert!(deployment(&d, Some(&d)).is_empty());
    }

    #[test]
    fn deployment_counts_and_limits() {
        let d = deploy(json!({"replicas": -1, "minReadySeconds": -2, "revisionHistoryLimit": -3}));
        let got = messages(deployment(&d, None));
        has(
            &got,
            "spec.replicas: Invalid value: -1: must be greater than or equal to 0",
        );
        has(
            &got,
            "spec.minReadySeconds: Invalid value: -2: must be greater than or equal to 0",
        );
        has(
            &got,
            "spec.revisionHistoryLimit: Invalid value: -3: must be greater than or equal to 0",
        );
        assert!(deployment(&deploy(json!({"revisionHistoryLimit": 0})), None).is_empty());
        let d = deploy(json!({"progressDeadlineSeconds": 10, "minReadySeconds": 10}));
        assert_eq!(
            messages(deployment(&d, None)),
            ["spec.progressDeadlineSeconds: Invalid value: 10: must be greater than minReadySeconds"]
        );
        let d = deploy(json!({"progressDeadlineSeconds": -1}));
        assert_eq!(
            messages(deployment(&d, None)),
            [
                "spec.progressDeadlineSeconds: Invalid value: -1: must be greater than or equal to 0",
                "spec.progressDeadlineSeconds: Invalid value: -1: must be greater than minReadySeconds"
            ]
        );
    }

    #[test]
    fn deployment_rolling_update_limits() {
        let d = deploy(json!({"strategy": {"type": "RollingUpdate",
            "rollingUpdate": {"maxUnavailable": "5", "maxSurge": "120%"}}}));
        assert_eq!(
            messages(deployment(&d, None)),
            [format!(
                "spec.strategy.rollingUpdate.maxUnavailable: Invalid value: \"5\": {PERCENT_MSG}"
            )]
        );
        let d = deploy(json!({"strategy": {"type": "RollingUpdate",
            "rollingUpdate": {"maxUnavailable": "110%", "maxSurge": -1}}}));
        assert_eq!(
            messages(deployment(&d, None)),
            [
                "spec.strategy.rollingUpdate.maxSurge: Invalid value: -1: must be greater than or equal to 0",
                "spec.strategy.rollingUpdate.maxUnavailable: Invalid value: \"110%\": must not be greater than 100%"
            ]
        );
        let d = deploy(json!({"strategy": {"type": "RollingUpdate",
            "rollingUpdate": {"maxUnavailable": 0, "maxSurge": "0%"}}}));
        assert_eq!(
            messages(deployment(&d, None)),
            ["spec.strategy.rollingUpdate.maxUnavailable: Invalid value: 0: may not be 0 when `maxSurge` is 0"]
        );
        let d = deploy(json!({"strategy": {"type": "Recreate", "rollingUpdate": {}}}));
        assert_eq!(
            messages(deployment(&d, None)),
            ["spec.strategy.rollingUpdate: Forbidden: may not be specified when strategy `type` is 'Recreate'"]
        );
        let d = deploy(json!({"strategy": {"type": "Foo"}}));
        assert_eq!(
            messages(deployment(&d, None)),
            ["spec.strategy: Unsupported value: {\"Type\":\"Foo\",\"RollingUpdate\":null}: supported values: \"Recreate\", \"RollingUpdate\""]
        );
    }

    #[test]
    fn deployment_selector_and_template() {
        let d = deploy(json!({"selector": {}}));
        assert_eq!(
            messages(deployment(&d, None)),
            ["spec.selector: Invalid value: {}: empty selector is invalid for deployment"]
        );
        let mut d = deploy(json!({}));
        d["spec"].as_object_mut().unwrap().remove("selector");
        assert_eq!(
            messages(deployment(&d, None)),
            [
                "spec.selector: Required value",
                "spec.template.metadata.labels: Invalid value: {\"app\":\"web\"}: `selector` does not match template `labels`"
            ]
        );
        let mut d = deploy(json!({}));
        d["spec"]["template"]["metadata"]["labels"] = json!({"app": "other"});
        assert_eq!(
            messages(deployment(&d, None)),
            ["spec.template.metadata.labels: Invalid value: {\"app\":\"other\"}: `selector` does not match template `labels`"]
        );
        // A selector that does not convert skips the template altogether.
        let mut d =
            deploy(json!({"selector": {"matchExpressions": [{"key": "app", "operator": "Is"}]}}));
        d["spec"]["template"]["spec"]["restartPolicy"] = json!("Never");
        assert_eq!(
            messages(deployment(&d, None)),
            [
                "spec.selector.matchExpressions[0].operator: Invalid value: \"Is\": not a valid selector operator",
                "spec.selector: Invalid value: {\"matchExpressions\":[{\"key\":\"app\",\"operator\":\"Is\"}]}: invalid label selector"
            ]
        );
        let mut d = deploy(json!({}));
        d["spec"]["template"]["spec"]["restartPolicy"] = json!("OnFailure");
        d["spec"]["template"]["spec"]["activeDeadlineSeconds"] = json!(5);
        let got = messages(deployment(&d, None));
        has(&got, "spec.template.spec.restartPolicy: Unsupported value: \"OnFailure\": supported values: \"Always\"");
        has(&got, "spec.template.spec.activeDeadlineSeconds: Forbidden: activeDeadlineSeconds in ReplicaSet is not Supported");
    }

    #[test]
    fn deployment_selector_is_immutable() {
        let old = deploy(json!({}));
        let mut d = deploy(json!({"selector": {"matchLabels": {"app": "web", "x": "y"}}}));
        d["spec"]["template"]["metadata"]["labels"]["x"] = json!("y");
        assert_eq!(
            messages(deployment(&d, Some(&old))),
            ["spec.selector: Invalid value: {\"matchLabels\":{\"app\":\"web\",\"x\":\"y\"}}: field is immutable"]
        );
        let same =
            deploy(json!({"selector": {"matchLabels": {"app": "web"}, "matchExpressions": []}}));
        assert!(deployment(&same, Some(&old)).is_empty());
    }

    #[test]
    fn deployment_status_rules() {
        let old = json!({"status": {"collisionCount": 2}});
        let new = json!({"status": {"replicas": 1, "updatedReplicas": 2, "readyReplicas": 1,
            "availableReplicas": 2, "observedGeneration": -1, "collisionCount": 1}});
        assert_eq!(
            messages(deployment_status(&new, &old)),
            [
                "status.observedGeneration: Invalid value: -1: must be greater than or equal to 0",
                "status.updatedReplicas: Invalid value: 2: cannot be greater than status.replicas",
                "status.availableReplicas: Invalid value: 2: cannot be greater than status.replicas",
                "status.availableReplicas: Invalid value: 2: cannot be greater than readyReplicas",
                "status.collisionCount: Invalid value: 1: cannot be decremented",
            ]
        );
        // As kube: absent counts are 0, which is "greater than" a negative replicas.
        let new = json!({"status": {"replicas": -1}});
        assert_eq!(
            messages(deployment_status(&new, &json!({}))),
            [
                "status.replicas: Invalid value: -1: must be greater than or equal to 0",
                "status.updatedReplicas: Invalid value: 0: cannot be greater than status.replicas",
                "status.readyReplicas: Invalid value: 0: cannot be greater than status.replicas",
                "status.availableReplicas: Invalid value: 0: cannot be greater than status.replicas",
            ]
        );
    }

    #[test]
    fn replica_sets_validate_their_spec_twice_on_update() {
        let mut rs = deploy(json!({"replicas": -1}));
        let spec = rs["spec"].as_object_mut().unwrap();
        for k in [
            "strategy",
            "progressDeadlineSeconds",
            "revisionHistoryLimit",
        ] {
            spec.remove(k);
        }
        assert_eq!(
            messages(replica_set(&rs, None)),
            ["spec.replicas: Invalid value: -1: must be greater than or equal to 0"]
        );
        assert_eq!(replica_set(&rs, Some(&rs)).len(), 2);
        rs["spec"]["selector"] = json!({});
        assert_eq!(
            messages(replica_set(&rs, None)),
            [
                "spec.replicas: Invalid value: -1: must be greater than or equal to 0",
                "spec.selector: Invalid value: {}: empty selector is invalid for deployment"
            ]
        );
        let status =
            json!({"status": {"replicas": 1, "fullyLabeledReplicas": 2, "observedGeneration": -1}});
        assert_eq!(
            messages(replica_set_status(&status, &json!({}))),
            [
                "status.observedGeneration: Invalid value: -1: must be greater than or equal to 0",
                "status.fullyLabeledReplicas: Invalid value: 2: cannot be greater than status.replicas",
            ]
        );
    }

    #[test]
    fn daemon_set_rules() {
        assert_eq!(
            messages(daemon_set(&daemon(json!({})), None)),
            Vec::<String>::new()
        );
        let d = daemon(json!({"updateStrategy": {"type": "RollingUpdate",
            "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 1}}}));
        assert_eq!(
            messages(daemon_set(&d, None)),
            ["spec.updateStrategy.rollingUpdate.maxSurge: Invalid value: 1: may not be set when maxUnavailable is non-zero"]
        );
        let d = daemon(json!({"updateStrategy": {"type": "RollingUpdate",
            "rollingUpdate": {"maxUnavailable": 0, "maxSurge": "0%"}}}));
        assert_eq!(
            messages(daemon_set(&d, None)),
            ["spec.updateStrategy.rollingUpdate.maxUnavailable: Required value: cannot be 0 when maxSurge is 0"]
        );
        let d = daemon(json!({"updateStrategy": {"type": "Never"}}));
        assert_eq!(
            messages(daemon_set(&d, None)),
            ["spec.updateStrategy: Unsupported value: {\"Type\":\"Never\",\"RollingUpdate\":null}: supported values: \"RollingUpdate\", \"OnDelete\""]
        );
        let d = daemon(json!({"selector": {}}));
        assert_eq!(
            messages(daemon_set(&d, None)),
            ["spec.selector: Invalid value: {}: empty selector is invalid for daemonset"]
        );
        let mut d = daemon(json!({}));
        d["spec"].as_object_mut().unwrap().remove("selector");
        assert_eq!(
            messages(daemon_set(&d, None)),
            ["spec.template.metadata.labels: Invalid value: {\"app\":\"web\"}: `selector` does not match template `labels`"]
        );
        let mut d = daemon(json!({"minReadySeconds": -1}));
        d["spec"]["template"]["spec"]["activeDeadlineSeconds"] = json!(1);
        assert_eq!(
            messages(daemon_set(&d, None)),
            [
                "spec.template.spec.activeDeadlineSeconds: Forbidden: activeDeadlineSeconds in DaemonSet is not Supported",
                "spec.minReadySeconds: Invalid value: -1: must be greater than or equal to 0"
            ]
        );
        let old = daemon(json!({}));
        let mut new = daemon(json!({"selector": {"matchLabels": {"app": "web", "b": "c"}}}));
        new["spec"]["template"]["metadata"]["labels"]["b"] = json!("c");
        assert_eq!(
            messages(daemon_set(&new, Some(&old))),
            ["spec.selector: Invalid value: {\"matchLabels\":{\"app\":\"web\",\"b\":\"c\"}}: field is immutable"]
        );
        let st = json!({"status": {"numberReady": -1, "collisionCount": 0}});
        assert_eq!(
            messages(daemon_set_status(
                &st,
                &json!({"status": {"collisionCount": 3}})
            )),
            [
                "status.numberReady: Invalid value: -1: must be greater than or equal to 0",
                "status.collisionCount: Invalid value: 0: cannot be decremented"
            ]
        );
    }

    #[test]
    fn values_render_as_go_json() {
        assert_eq!(
            go_json(&json!({"b": "<", "a": [1, true]})),
            "{\"a\":[1,true],\"b\":\"\\u003c\"}"
        );
        assert_eq!(selector_json(None), "null");
        assert_eq!(
            selector_json(Some(
                &json!({"matchExpressions": [{"operator": "Exists", "key": "k", "values": []}], "matchLabels": {}})
            )),
            "{\"matchExpressions\":[{\"key\":\"k\",\"operator\":\"Exists\"}]}"
        );
    }
}
