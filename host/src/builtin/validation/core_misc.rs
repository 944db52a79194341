//! kube's validation (1.34) of Events (core `v1` and `events.k8s.io/v1`:
//! `pkg/apis/core/validation/events.go`), ServiceAccounts and LimitRanges
//! (`pkg/apis/core/validation`), ControllerRevisions (`pkg/apis/apps/validation`) and
//! RuntimeClasses (`pkg/apis/node/validation`), run as their registry strategies run it on create
//! and update, with kube's field paths and messages. None of these kinds has a `/status`.
//!
//! **Events.** kube converts an Event to its internal `core.Event` and validates that, leniently
//! for a write through core `v1` (`legacyValidateEvent` only) and strictly for one through
//! `events.k8s.io/v1`. turtles validates the object in the version the client wrote (the old
//! object too, in that version), so each version's JSON names are read as the internal field:
//! `regarding` / `involvedObject`, `note` / `message`, `reportingController` /
//! `reportingComponent`, `deprecatedSource` / `source`, `deprecatedFirstTimestamp` /
//! `firstTimestamp`, `deprecatedLastTimestamp` / `lastTimestamp`, `deprecatedCount` / `count`.
//! The paths are kube's, which name the internal fields whatever the version
//! (`involvedObject.namespace`, `message`, `reportingController`, `source`, `count`...).
//!
//! **Bad values** render as kube 1.34's `field.Error` renders them (`field.rs`): strings quoted;
//! numbers bare; everything else as `json.Marshal` prints it: a `resource.Quantity` as its
//! quoted canonical text (`"500m"`), a `metav1.Time` as `"2026-12-01T00:00:00Z"` and a
//! `MicroTime` as `"2026-12-01T00:00:01.500000Z"` (both `null` when zero), kube's internal
//! structs as the JSON of their Go field names (`{"Kind":"Pod","Namespace":"",...}`), a nil
//! pointer as `null`. Where kube iterates a Go map (resource lists) the order is random there;
//! it is the sorted key order here.

use std::collections::{BTreeSet, HashSet};

use serde_json::{json, Map, Value};

use super::field::{
    child, dns1123_label, dns1123_subdomain, duplicate, forbidden, go_value, index, invalid,
    invalid_shown, invalid_str, items, json_value, key, label_value, labels, not_supported,
    qualified_name, required, str_of,
};
use super::misc::{is_extended_resource, is_integer_resource, is_native_resource, resource_name};
use crate::builtin::quantity::{canonical, nano_value};
use crate::model::status::Cause;

const EVENTS: &str = "events.k8s.io";
const APPS: &str = "apps";
const NODE: &str = "node.k8s.io";

const IMMUTABLE: &str = "field is immutable";

static NULL: Value = Value::Null;

/// Causes for a create (`old` None) or an update of the main resource (`old` the stored object,
/// in the version of the request) of the kinds this module knows; empty for any other.
pub fn validate(group: &str, resource: &str, obj: &Value, old: Option<&Value>) -> Vec<Cause> {
    match (group, resource) {
        ("", "events") => event(obj, old, &CORE_EVENT),
        (EVENTS, "events") => event(obj, old, &EVENTS_V1_EVENT),
        ("", "serviceaccounts") => service_account(obj, old),
        ("", "limitranges") => limit_range(obj),
        (APPS, "controllerrevisions") => controller_revision(obj, old),
        (NODE, "runtimeclasses") => runtime_class(obj, old),
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

/// A map's entries in key order.
fn entries(v: Option<&Value>) -> Vec<(&String, &Value)> {
    let mut e: Vec<(&String, &Value)> = v
        .and_then(Value::as_object)
        .map(|m| m.iter().collect())
        .unwrap_or_default();
    e.sort_by(|a, b| a.0.cmp(b.0));
    e
}

/// The value under `k` of sorted `entries` (a binary search: a long list is no quadratic work).
fn find<'a>(list: &[(&String, &'a Value)], k: &str) -> Option<&'a Value> {
    list.binary_search_by(|(n, _)| n.as_str().cmp(k))
        .ok()
        .and_then(|i| list.get(i))
        .map(|(_, v)| *v)
}

/// `field.Invalid` of a `resource.Quantity`, which kube prints as its JSON: the canonical text,
/// quoted (`text` is that text).
fn invalid_quantity(path: &str, text: &str, detail: &str) -> Cause {
    invalid_shown(path, &json_value(&Value::String(text.to_owned())), detail)
}

/// `ValidateImmutableField` of a string.
fn immutable_str(path: &str, new: &str, old: &str, out: &mut Vec<Cause>) {
    if new != old {
        out.push(invalid_str(path, new, IMMUTABLE));
    }
}

/// The JSON `json.Marshal` makes of kube's internal (untagged) struct: the Go field names in
/// declaration order, each the string at the JSON field (`""` when unset).
fn go_struct_of_strings(v: Option<&Value>, fields: &[(&str, &str)]) -> Value {
    let mut m = Map::new();
    for (go, json) in fields {
        let s = v.map_or("", |v| str_of(v, json));
        m.insert((*go).to_owned(), Value::String(s.to_owned()));
    }
    Value::Object(m)
}

// ---- quantities ----

/// A parsed quantity: its value in nano units and its canonical text (`Quantity.String()`).
struct Q {
    nano: i128,
    text: String,
}

/// The quantity at `v` (a string, or a number as kube's decoding accepts), `None` when it is
/// none (decoding refused those).
fn quantity(v: &Value) -> Option<Q> {
    let s = match v {
        Value::String(s) => s.clone(),
        Value::Number(n) => n.to_string(),
        _ => return None,
    };
    let (nano, _) = nano_value(&s).ok()?;
    let text = canonical(&s).unwrap_or(s);
    Some(Q { nano, text })
}

/// `n / d` rounded up, as kube's `Quantity.Value()` / `MilliValue()` scale.
fn ceil_div(n: i128, d: i128) -> i128 {
    n.div_euclid(d) + i128::from(n.rem_euclid(d) != 0)
}

const NANO: i128 = 1_000_000_000;
const MICRO_OF_NANO: i128 = 1_000_000;

// ---- resource names (pkg/apis/core/helper) ----

/// `helper.IsHugePageResourceName`.
fn is_huge_page(name: &str) -> bool {
    name.starts_with("hugepages-")
}

/// `helper.IsStandardContainerResourceName`.
fn is_standard_container_resource(name: &str) -> bool {
    matches!(name, "cpu" | "memory" | "ephemeral-storage") || is_huge_page(name)
}

/// `helper.IsOvercommitAllowed`.
fn is_overcommit_allowed(name: &str) -> bool {
    is_native_resource(name) && !is_huge_page(name)
}

/// kube's `validateContainerResourceName`.
fn container_resource_name(name: &str, path: &str, out: &mut Vec<Cause>) {
    resource_name(name, path, out);
    if !name.contains('/') {
        if !is_standard_container_resource(name) {
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

/// kube's `ValidateResourceQuantityValue`: not negative (kube passes `value.String()`: quoted),
/// and whole for integer resources (kube passes the Quantity: bare).
fn resource_quantity_value(name: &str, v: &Value, path: &str, out: &mut Vec<Cause>) {
    let Some(q) = quantity(v) else {
        return;
    };
    if q.nano < 0 {
        out.push(invalid_str(
            path,
            &q.text,
            "must be greater than or equal to 0",
        ));
    }
    if is_integer_resource(name) && ceil_div(q.nano, MICRO_OF_NANO) % 1000 != 0 {
        out.push(invalid_quantity(path, &q.text, "must be an integer"));
    }
}

/// `helper.IsHugePageResourceValueDivisible`: a whole number of pages of the name's size.
fn huge_pages_divisible(name: &str, v: &Value) -> bool {
    let Some(size) = name
        .strip_prefix("hugepages-")
        .and_then(|s| nano_value(s).ok())
        .map(|(n, _)| n)
    else {
        return false;
    };
    if size <= 0 || size % NANO != 0 {
        return false;
    }
    let Some(q) = quantity(v) else {
        return false;
    };
    ceil_div(q.nano, NANO) % (size / NANO) == 0
}

// ---------------------------------------------------------------------------
// Events (pkg/apis/core/validation/events.go)
// ---------------------------------------------------------------------------

const REPORTING_INSTANCE_LENGTH_LIMIT: usize = 128;
const ACTION_LENGTH_LIMIT: usize = 128;
const REASON_LENGTH_LIMIT: usize = 128;
const NOTE_LENGTH_LIMIT: usize = 1024;

/// The JSON names, in one version, of the internal `core.Event` fields the versions name
/// differently, and whether that version is validated strictly.
struct EventVersion {
    strict: bool,
    involved: &'static str,
    message: &'static str,
    reporting_controller: &'static str,
    source: &'static str,
    first: &'static str,
    last: &'static str,
    count: &'static str,
}

/// Core `v1`: kube's lenient path (`requestVersion == v1`).
static CORE_EVENT: EventVersion = EventVersion {
    strict: false,
    involved: "involvedObject",
    message: "message",
    reporting_controller: "reportingComponent",
    source: "source",
    first: "firstTimestamp",
    last: "lastTimestamp",
    count: "count",
};

/// `events.k8s.io/v1`: kube's strict path.
static EVENTS_V1_EVENT: EventVersion = EventVersion {
    strict: true,
    involved: "regarding",
    message: "note",
    reporting_controller: "reportingController",
    source: "deprecatedSource",
    first: "deprecatedFirstTimestamp",
    last: "deprecatedLastTimestamp",
    count: "deprecatedCount",
};

/// An Event's internal (`core.Event`) fields, read from the JSON of its version.
struct Ev<'a> {
    namespace: &'a str,
    involved: Option<&'a Value>,
    reason: &'a str,
    message: &'a str,
    source: Option<&'a Value>,
    first: Option<&'a Value>,
    last: Option<&'a Value>,
    count: i64,
    type_: &'a str,
    event_time: Option<&'a Value>,
    series: Option<&'a Value>,
    action: &'a str,
    related: Option<&'a Value>,
    reporting_controller: &'a str,
    reporting_instance: &'a str,
}

impl<'a> Ev<'a> {
    fn read(obj: &'a Value, v: &EventVersion) -> Self {
        Ev {
            namespace: obj
                .pointer("/metadata/namespace")
                .and_then(Value::as_str)
                .unwrap_or(""),
            involved: set(obj, v.involved),
            reason: str_of(obj, "reason"),
            message: str_of(obj, v.message),
            source: set(obj, v.source),
            first: time(obj, v.first),
            last: time(obj, v.last),
            count: obj.get(v.count).and_then(Value::as_i64).unwrap_or(0),
            type_: str_of(obj, "type"),
            event_time: time(obj, "eventTime"),
            series: set(obj, "series"),
            action: str_of(obj, "action"),
            related: set(obj, "related"),
            reporting_controller: str_of(obj, v.reporting_controller),
            reporting_instance: str_of(obj, "reportingInstance"),
        }
    }
}

/// kube's `ValidateEventCreate` / `ValidateEventUpdate` (`ValidateObjectMeta` /
/// `ValidateObjectMetaUpdate` of the strict path are left to the metadata checks).
fn event(obj: &Value, old: Option<&Value>, version: &EventVersion) -> Vec<Cause> {
    let mut out = Vec::new();
    let e = Ev::read(obj, version);
    legacy_event(&e, &mut out);
    if !version.strict {
        // "No further validation for backwards compatibility."
        return out;
    }
    match old {
        None => v1_event_create(&e, &mut out),
        Some(old) => v1_event_update(&e, &Ev::read(old, version), &mut out),
    }
    out
}

/// kube's `legacyValidateEvent`, which every Event passes whatever its version.
fn legacy_event(e: &Ev, out: &mut Vec<Cause>) {
    const MISMATCH: &str = "does not match event.namespace";
    const NS_PATH: &str = "involvedObject.namespace";
    let involved_ns = e.involved.map_or("", |o| str_of(o, "namespace"));
    if e.event_time.is_none() {
        // An "old" Event: its namespace and its object's agree ("default" is allowed for a
        // cluster-scoped object, for old clients).
        if involved_ns.is_empty() {
            if !e.namespace.is_empty() && e.namespace != "default" {
                out.push(invalid_str(NS_PATH, involved_ns, MISMATCH));
            }
        } else if e.namespace != involved_ns {
            out.push(invalid_str(NS_PATH, involved_ns, MISMATCH));
        }
    } else {
        if involved_ns.is_empty() && e.namespace != "default" && e.namespace != "kube-system" {
            out.push(invalid_str(NS_PATH, involved_ns, MISMATCH));
        }
        let rc = e.reporting_controller;
        if rc.is_empty() {
            out.push(required("reportingController", ""));
        }
        for msg in qualified_name(rc) {
            out.push(invalid_str("reportingController", rc, &msg));
        }
        let too_long = |n: usize| format!("can have at most {n} characters");
        if e.reporting_instance.is_empty() {
            out.push(required("reportingInstance", ""));
        }
        if e.reporting_instance.len() > REPORTING_INSTANCE_LENGTH_LIMIT {
            out.push(invalid_str(
                "reportingInstance",
                "",
                &too_long(REPORTING_INSTANCE_LENGTH_LIMIT),
            ));
        }
        if e.action.is_empty() {
            out.push(required("action", ""));
        }
        if e.action.len() > ACTION_LENGTH_LIMIT {
            out.push(invalid_str("action", "", &too_long(ACTION_LENGTH_LIMIT)));
        }
        if e.reason.is_empty() {
            out.push(required("reason", ""));
        }
        if e.reason.len() > REASON_LENGTH_LIMIT {
            out.push(invalid_str("reason", "", &too_long(REASON_LENGTH_LIMIT)));
        }
        if e.message.len() > NOTE_LENGTH_LIMIT {
            out.push(invalid_str("message", "", &too_long(NOTE_LENGTH_LIMIT)));
        }
    }
    for msg in dns1123_subdomain(e.namespace) {
        out.push(invalid_str("namespace", e.namespace, &msg));
    }
}

/// The strict part of kube's `ValidateEventCreate` (events.k8s.io/v1 and newer).
fn v1_event_create(e: &Ev, out: &mut Vec<Cause>) {
    const UNSET: &str = "needs to be unset";
    v1_event_series(e, out);
    if e.event_time.is_none() {
        out.push(required("eventTime", ""));
    }
    if e.type_ != "Normal" && e.type_ != "Warning" {
        out.push(invalid_str(
            "type",
            "",
            &format!("has invalid value: {}", e.type_),
        ));
    }
    if e.first.is_some() {
        out.push(invalid_str("firstTimestamp", "", UNSET));
    }
    if e.last.is_some() {
        out.push(invalid_str("lastTimestamp", "", UNSET));
    }
    if e.count != 0 {
        out.push(invalid_str("count", "", UNSET));
    }
    let source = |f: &str| e.source.map_or("", |s| str_of(s, f));
    if !source("component").is_empty() || !source("host").is_empty() {
        out.push(invalid_str("source", "", UNSET));
    }
}

/// kube's `validateV1EventSeries`.
fn v1_event_series(e: &Ev, out: &mut Vec<Cause>) {
    let Some(series) = e.series else {
        return;
    };
    if series.get("count").and_then(Value::as_i64).unwrap_or(0) < 2 {
        out.push(invalid_str("series.count", "", "should be at least 2"));
    }
    if time(series, "lastObservedTime").is_none() {
        out.push(required("series.lastObservedTime", ""));
    }
}

/// The strict part of kube's `ValidateEventUpdate`: a changed series is valid, and nothing else
/// changes (kube checks `reason` twice, so a changed reason is reported twice).
fn v1_event_update(e: &Ev, o: &Ev, out: &mut Vec<Cause>) {
    if series_key(e.series) != series_key(o.series) {
        v1_event_series(e, out);
    }
    let (new_ref, old_ref) = (object_reference(e.involved), object_reference(o.involved));
    if new_ref != old_ref {
        out.push(invalid("involvedObject", &new_ref, IMMUTABLE));
    }
    immutable_str("reason", e.reason, o.reason, out);
    immutable_str("message", e.message, o.message, out);
    let (new_src, old_src) = (event_source(e.source), event_source(o.source));
    if new_src != old_src {
        out.push(invalid("source", &new_src, IMMUTABLE));
    }
    immutable_time("firstTimestamp", e.first, o.first, false, out);
    immutable_time("lastTimestamp", e.last, o.last, false, out);
    if e.count != o.count {
        out.push(invalid("count", &json!(e.count), IMMUTABLE));
    }
    immutable_str("reason", e.reason, o.reason, out);
    immutable_str("type", e.type_, o.type_, out);
    immutable_time("eventTime", e.event_time, o.event_time, true, out);
    immutable_str("action", e.action, o.action, out);
    // `related` is a pointer: unset differs from an empty reference, and prints as `null`.
    let (new_rel, old_rel) = (
        e.related.map(|r| object_reference(Some(r))),
        o.related.map(|r| object_reference(Some(r))),
    );
    if new_rel != old_rel {
        out.push(match &new_rel {
            Some(r) => invalid("related", r, IMMUTABLE),
            None => invalid_shown("related", "null", IMMUTABLE),
        });
    }
    immutable_str(
        "reportingController",
        e.reporting_controller,
        o.reporting_controller,
        out,
    );
    immutable_str(
        "reportingInstance",
        e.reporting_instance,
        o.reporting_instance,
        out,
    );
}

/// The internal `core.ObjectReference` (as its JSON with Go field names).
fn object_reference(v: Option<&Value>) -> Value {
    go_struct_of_strings(
        v,
        &[
            ("Kind", "kind"),
            ("Namespace", "namespace"),
            ("Name", "name"),
            ("UID", "uid"),
            ("APIVersion", "apiVersion"),
            ("ResourceVersion", "resourceVersion"),
            ("FieldPath", "fieldPath"),
        ],
    )
}

/// The internal `core.EventSource` (as its JSON with Go field names).
fn event_source(v: Option<&Value>) -> Value {
    go_struct_of_strings(v, &[("Component", "component"), ("Host", "host")])
}

// ---- times (metav1.Time, metav1.MicroTime) ----

/// A time field that is set (not absent, `null` or empty: Go's zero time).
fn time<'a>(v: &'a Value, name: &str) -> Option<&'a Value> {
    set(v, name).filter(|t| t.as_str() != Some(""))
}

/// An RFC 3339 time in UTC.
fn parse_time(s: &str) -> Option<chrono::DateTime<chrono::Utc>> {
    chrono::DateTime::parse_from_rfc3339(s)
        .ok()
        .map(|d| d.with_timezone(&chrono::Utc))
}

/// Go's zero time, 0001-01-01T00:00:00Z, in Unix seconds.
const GO_ZERO_UNIX: i64 = -62_135_596_800;

/// A time as `apiequality.Semantic` compares them (the instant; unset is the zero time), with
/// text that is no time compared as written.
fn time_key(v: Option<&Value>) -> Option<Result<chrono::DateTime<chrono::Utc>, String>> {
    let t = v?;
    let s = t.as_str().unwrap_or("");
    match parse_time(s) {
        Some(dt) if dt.timestamp() == GO_ZERO_UNIX && dt.timestamp_subsec_nanos() == 0 => None,
        Some(dt) => Some(Ok(dt)),
        None => Some(Err(s.to_owned())),
    }
}

/// How kube prints a `metav1.Time` (`micro` false: RFC 3339 in UTC, whole seconds) or a
/// `metav1.MicroTime` (`micro`: six digits of fraction) as a bad value: its `MarshalJSON`,
/// `null` for the zero time.
fn time_json(v: Option<&Value>, micro: bool) -> String {
    match time_key(v) {
        None => "null".to_owned(),
        // Text that is no time (the decoder refuses it before) printed as it is.
        Some(Err(text)) => json_value(&Value::String(text)),
        Some(Ok(dt)) => {
            let text = if micro {
                dt.format("%Y-%m-%dT%H:%M:%S%.6fZ").to_string()
            } else {
                dt.format("%Y-%m-%dT%H:%M:%SZ").to_string()
            };
            json_value(&Value::String(text))
        }
    }
}

/// `ValidateImmutableField` of a `metav1.Time` (`micro` false) or `MicroTime` (`micro`).
fn immutable_time(
    path: &str,
    new: Option<&Value>,
    old: Option<&Value>,
    micro: bool,
    out: &mut Vec<Cause>,
) {
    if time_key(new) != time_key(old) {
        out.push(invalid_shown(path, &time_json(new, micro), IMMUTABLE));
    }
}

/// A series as `reflect.DeepEqual` compares it: unset, or its count and last observed time.
#[allow(clippy::type_complexity)]
fn series_key(
    s: Option<&Value>,
) -> Option<(i64, Option<Result<chrono::DateTime<chrono::Utc>, String>>)> {
    let s = s?;
    Some((
        s.get("count").and_then(Value::as_i64).unwrap_or(0),
        time_key(time(s, "lastObservedTime")),
    ))
}

// ---------------------------------------------------------------------------
// ServiceAccounts
// ---------------------------------------------------------------------------

/// kube's `ValidateServiceAccount` / `ValidateServiceAccountUpdate`: its metadata only (checked
/// elsewhere); kube does not validate `secrets` or `imagePullSecrets`.
fn service_account(_obj: &Value, _old: Option<&Value>) -> Vec<Cause> {
    Vec::new()
}

// ---------------------------------------------------------------------------
// LimitRanges
// ---------------------------------------------------------------------------

/// kube's `ValidateLimitRange` (its strategy runs it on create and on update alike; the
/// defaults `SetDefaults_LimitRangeItem` sets are in place). The admission checks of Pods and
/// claims against the ranges are `crate::limitrange`'s.
fn limit_range(obj: &Value) -> Vec<Cause> {
    let mut out = Vec::new();
    let spec = obj.get("spec").unwrap_or(&NULL);
    let mut types: HashSet<&str> = HashSet::new();
    for (i, limit) in items(spec, "limits").iter().enumerate() {
        limit_range_item(limit, &index("spec.limits", i), &mut types, &mut out);
    }
    out
}

/// One item of `spec.limits` (kube's loop body).
fn limit_range_item<'a>(
    limit: &'a Value,
    p: &str,
    types: &mut HashSet<&'a str>,
    out: &mut Vec<Cause>,
) {
    let ty = str_of(limit, "type");
    let type_path = child(p, "type");
    limit_type_name(ty, &type_path, out);
    if !types.insert(ty) {
        out.push(duplicate(&type_path, &Value::from(ty)));
    }
    let container = matches!(ty, "Pod" | "Container");
    let mut keys: BTreeSet<&str> = BTreeSet::new();
    let mut names = |field: &str, list: &[(&'a String, &'a Value)], out: &mut Vec<Cause>| {
        for &(k, _) in list {
            limit_resource_name(container, k, &key(&child(p, field), k), out);
            keys.insert(k.as_str());
        }
    };
    let max = entries(limit.get("max"));
    let min = entries(limit.get("min"));
    names("max", &max, out);
    names("min", &min, out);
    let mut default = entries(limit.get("default"));
    let mut default_request = entries(limit.get("defaultRequest"));
    if ty == "Pod" {
        const POD: &str = "may not be specified when `type` is 'Pod'";
        if !default.is_empty() {
            out.push(forbidden(&child(p, "default"), POD));
        }
        if !default_request.is_empty() {
            out.push(forbidden(&child(p, "defaultRequest"), POD));
        }
        default.clear();
        default_request.clear();
    } else {
        names("default", &default, out);
        names("defaultRequest", &default_request, out);
    }
    if ty == "PersistentVolumeClaim"
        && find(&min, "storage").is_none()
        && find(&max, "storage").is_none()
    {
        out.push(required(
            &child(p, "limits"),
            "either minimum or maximum storage value is required, but neither was provided",
        ));
    }
    let ratios = entries(limit.get("maxLimitRequestRatio"));
    names("maxLimitRequestRatio", &ratios, out);

    for k in keys {
        let q = |list: &[(&String, &Value)]| find(list, k).and_then(quantity);
        let (min_q, max_q) = (q(&min), q(&max));
        let (def_q, req_q, ratio_q) = (q(&default), q(&default_request), q(&ratios));
        let at = |field: &str| key(&child(p, field), k);
        if let (Some(mn), Some(mx)) = (&min_q, &max_q) {
            if mn.nano > mx.nano {
                out.push(invalid_quantity(
                    &at("min"),
                    &mn.text,
                    &format!(
                        "min value {} is greater than max value {}",
                        mn.text, mx.text
                    ),
                ));
            }
        }
        if let (Some(rq), Some(mn)) = (&req_q, &min_q) {
            if mn.nano > rq.nano {
                out.push(invalid_quantity(
                    &at("defaultRequest"),
                    &rq.text,
                    &format!(
                        "min value {} is greater than default request value {}",
                        mn.text, rq.text
                    ),
                ));
            }
        }
        if let (Some(rq), Some(mx)) = (&req_q, &max_q) {
            if rq.nano > mx.nano {
                out.push(invalid_quantity(
                    &at("defaultRequest"),
                    &rq.text,
                    &format!(
                        "default request value {} is greater than max value {}",
                        rq.text, mx.text
                    ),
                ));
            }
        }
        if let (Some(rq), Some(df)) = (&req_q, &def_q) {
            if rq.nano > df.nano {
                out.push(invalid_quantity(
                    &at("defaultRequest"),
                    &rq.text,
                    &format!(
                        "default request value {} is greater than default limit value {}",
                        rq.text, df.text
                    ),
                ));
            }
        }
        if let (Some(df), Some(mn)) = (&def_q, &min_q) {
            // kube reports the min as the bad value here.
            if mn.nano > df.nano {
                out.push(invalid_quantity(
                    &at("default"),
                    &mn.text,
                    &format!(
                        "min value {} is greater than default value {}",
                        mn.text, df.text
                    ),
                ));
            }
        }
        if let (Some(df), Some(mx)) = (&def_q, &max_q) {
            // kube reports the max as the bad value here.
            if df.nano > mx.nano {
                out.push(invalid_quantity(
                    &at("default"),
                    &mx.text,
                    &format!(
                        "default value {} is greater than max value {}",
                        df.text, mx.text
                    ),
                ));
            }
        }
        if let Some(r) = &ratio_q {
            if r.nano < NANO {
                out.push(invalid_quantity(
                    &at("maxLimitRequestRatio"),
                    &r.text,
                    &format!("ratio {} is less than 1", r.text),
                ));
            }
        }
        if let (Some(r), Some(mn), Some(mx)) = (&ratio_q, &min_q, &max_q) {
            if let Some(limit) = ratio_exceeds(r, mn, mx) {
                out.push(invalid_quantity(
                    &at("maxLimitRequestRatio"),
                    &r.text,
                    &format!(
                        "ratio {} is greater than max/min = {}",
                        r.text,
                        go_float(limit)
                    ),
                ));
            }
        }
        if let (Some(df), Some(rq)) = (&def_q, &req_q) {
            if !is_overcommit_allowed(k) && df.nano != rq.nano {
                out.push(invalid_quantity(
                    &at("defaultRequest"),
                    &rq.text,
                    &format!(
                        "default value {} must equal to defaultRequest value {} in {k}",
                        df.text, rq.text
                    ),
                ));
            }
        }
    }
}

/// kube's `maxLimitRequestRatio` against `max/min`: in milli units unless a value is too large
/// for them (`resource.MaxMilliValue`); `Some(max/min)` when the ratio exceeds it.
fn ratio_exceeds(r: &Q, mn: &Q, mx: &Q) -> Option<f64> {
    const MAX_MILLI_VALUE: i128 = (i64::MAX / 1000) as i128;
    let (rv, mnv, mxv) = (
        ceil_div(r.nano, NANO),
        ceil_div(mn.nano, NANO),
        ceil_div(mx.nano, NANO),
    );
    let (ratio, lo, hi) = if rv < MAX_MILLI_VALUE && mnv < MAX_MILLI_VALUE && mxv < MAX_MILLI_VALUE
    {
        (
            ceil_div(r.nano, MICRO_OF_NANO) as f64 / 1000.0,
            ceil_div(mn.nano, MICRO_OF_NANO),
            ceil_div(mx.nano, MICRO_OF_NANO),
        )
    } else {
        (rv as f64, mnv, mxv)
    };
    let limit = hi as f64 / lo as f64;
    (ratio > limit).then_some(limit)
}

/// Go's `%f` of a float64.
fn go_float(f: f64) -> String {
    if f.is_nan() {
        "NaN".to_owned()
    } else if f.is_infinite() && f.is_sign_positive() {
        "+Inf".to_owned()
    } else if f.is_infinite() {
        "-Inf".to_owned()
    } else {
        format!("{f:.6}")
    }
}

/// kube's `validateLimitRangeTypeName`.
fn limit_type_name(ty: &str, path: &str, out: &mut Vec<Cause>) {
    let errs = qualified_name(ty);
    if !errs.is_empty() {
        for msg in errs {
            out.push(invalid_str(path, ty, &msg));
        }
        return;
    }
    if !ty.contains('/') && !matches!(ty, "Pod" | "Container" | "PersistentVolumeClaim") {
        out.push(invalid_str(
            path,
            ty,
            "must be a standard limit type or fully qualified",
        ));
    }
}

/// kube's `validateLimitRangeResourceName`: container resource names for `Pod` and
/// `Container` items, any resource name for the others.
fn limit_resource_name(container: bool, name: &str, path: &str, out: &mut Vec<Cause>) {
    if container {
        container_resource_name(name, path, out);
    } else {
        resource_name(name, path, out);
    }
}

// ---------------------------------------------------------------------------
// ControllerRevisions (pkg/apis/apps/validation)
// ---------------------------------------------------------------------------

/// kube's `ValidateControllerRevisionCreate` / `ValidateControllerRevisionUpdate`: a revision
/// is not negative; `data` is a JSON object when created (only then: a stored revision whose
/// data is not stays writable) and never changes.
fn controller_revision(obj: &Value, old: Option<&Value>) -> Vec<Cause> {
    let mut out = Vec::new();
    if let Some(r) = obj.get("revision").and_then(Value::as_i64) {
        if r < 0 {
            out.push(invalid(
                "revision",
                &json!(r),
                "must be greater than or equal to 0",
            ));
        }
    }
    let data = set(obj, "data");
    match old {
        None => match data {
            None => out.push(required("data", "data is mandatory")),
            Some(Value::Object(_)) => {}
            Some(_) => out.push(required("data", "data must be a valid JSON object")),
        },
        Some(old) => {
            // kube compares the raw bytes and prints the data (a `runtime.Unknown` holding
            // them) as `json.Marshal` does: the bytes as sent, compacted, keys in their order;
            // this compares the JSON values and prints the new data's JSON in its key order.
            let was = set(old, "data");
            if data != was {
                let printed = data.map_or_else(|| "null".to_owned(), go_value);
                out.push(invalid_shown("data", &printed, IMMUTABLE));
            }
        }
    }
    out
}

// ---------------------------------------------------------------------------
// RuntimeClasses (pkg/apis/node/validation)
// ---------------------------------------------------------------------------

/// kube's `ValidateRuntimeClass`, and on update (as its strategy runs them) that followed by
/// `ValidateRuntimeClassUpdate`: `handler` never changes.
fn runtime_class(obj: &Value, old: Option<&Value>) -> Vec<Cause> {
    let mut out = Vec::new();
    let handler = str_of(obj, "handler");
    for msg in dns1123_label(handler) {
        out.push(invalid_str("handler", handler, &msg));
    }
    if let Some(overhead) = set(obj, "overhead") {
        runtime_class_overhead(overhead.get("podFixed"), "overhead", &mut out);
    }
    if let Some(s) = set(obj, "scheduling") {
        if let Some(sel) = set(s, "nodeSelector") {
            labels(Some(sel), "scheduling.nodeSelector", &mut out);
        }
        runtime_class_tolerations(items(s, "tolerations"), "scheduling.tolerations", &mut out);
    }
    if let Some(old) = old {
        immutable_str("handler", handler, str_of(old, "handler"), &mut out);
    }
    out
}

/// kube's `validateOverhead`: `ValidateContainerResourceRequirements` of requirements whose
/// limits are `podFixed` (so kube's paths say `limits`: `overhead.limits[cpu]`).
fn runtime_class_overhead(pod_fixed: Option<&Value>, path: &str, out: &mut Vec<Cause>) {
    let lim_path = child(path, "limits");
    let (mut cpu_or_memory, mut huge_pages) = (false, false);
    for (name, q) in entries(pod_fixed) {
        let p = key(&lim_path, name);
        container_resource_name(name, &p, out);
        resource_quantity_value(name, q, &p, out);
        if is_huge_page(name) {
            huge_pages = true;
            // `validateResourceQuantityHugePageValue` (kube passes `quantity.String()`).
            if !huge_pages_divisible(name, q) {
                let shown = quantity(q).map_or_else(String::new, |q| q.text);
                out.push(invalid_str(
                    &p,
                    &shown,
                    &format!("{shown} is not positive integer multiple of {name}"),
                ));
            }
        }
        cpu_or_memory |= name == "cpu" || name == "memory";
    }
    if !cpu_or_memory && huge_pages {
        out.push(forbidden(path, "HugePages require cpu or memory"));
    }
}

/// The node validation's `validateTolerations`: core's `ValidateTolerations`, then each
/// toleration unique by key, operator, value and effect.
fn runtime_class_tolerations(list: &[Value], path: &str, out: &mut Vec<Cause>) {
    tolerations(list, path, out);
    let mut seen: HashSet<(&str, &str, &str, &str)> = HashSet::new();
    for (i, t) in list.iter().enumerate() {
        let list_key = (
            str_of(t, "key"),
            str_of(t, "operator"),
            str_of(t, "value"),
            str_of(t, "effect"),
        );
        if !seen.insert(list_key) {
            // kube reports the internal `core.Toleration`: its JSON, Go field names in order.
            let mut m = Map::new();
            m.insert("Key".into(), Value::from(list_key.0));
            m.insert("Operator".into(), Value::from(list_key.1));
            m.insert("Value".into(), Value::from(list_key.2));
            m.insert("Effect".into(), Value::from(list_key.3));
            m.insert(
                "TolerationSeconds".into(),
                set(t, "tolerationSeconds").cloned().unwrap_or(Value::Null),
            );
            out.push(duplicate(&index(path, i), &Value::Object(m)));
        }
    }
}

/// kube's `ValidateTolerations`.
fn tolerations(list: &[Value], path: &str, out: &mut Vec<Cause>) {
    for (i, t) in list.iter().enumerate() {
        let p = index(path, i);
        let k = str_of(t, "key");
        if !k.is_empty() {
            // `ValidateLabelName`.
            for msg in qualified_name(k) {
                out.push(invalid_str(&child(&p, "key"), k, &msg));
            }
        }
        let op = str_of(t, "operator");
        if k.is_empty() && op != "Exists" {
            out.push(invalid_str(
                &child(&p, "operator"),
                op,
                "operator must be Exists when `key` is empty, which means \"match all values and all keys\"",
            ));
        }
        let effect = str_of(t, "effect");
        if set(t, "tolerationSeconds").is_some() && effect != "NoExecute" {
            out.push(invalid_str(
                &child(&p, "effect"),
                effect,
                "effect must be 'NoExecute' when `tolerationSeconds` is set",
            ));
        }
        let value = str_of(t, "value");
        match op {
            "Equal" | "" => {
                let errs = label_value(value);
                if !errs.is_empty() {
                    out.push(invalid_str(&child(&p, "operator"), value, &errs.join(";")));
                }
            }
            "Exists" => {
                if !value.is_empty() {
                    out.push(invalid_str(
                        &child(&p, "operator"),
                        value,
                        "value must be empty when `operator` is 'Exists'",
                    ));
                }
            }
            _ => out.push(not_supported(
                &child(&p, "operator"),
                &Value::from(op),
                &["Equal", "Exists"],
            )),
        }
        let effects = ["NoSchedule", "PreferNoSchedule", "NoExecute"];
        if !effect.is_empty() && !effects.contains(&effect) {
            out.push(not_supported(
                &child(&p, "effect"),
                &Value::from(effect),
                &effects,
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn messages(causes: &[Cause]) -> Vec<String> {
        causes.iter().map(ToString::to_string).collect()
    }

    const QUALIFIED: &str = "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";

    // ---- events ----

    #[test]
    fn core_events_are_checked_leniently() {
        // What turtles' `record-event` writes (a namespaced object's Event, then a bump).
        let recorded = json!({"apiVersion": "v1", "kind": "Event",
            "metadata": {"name": "web.0123456789abcdef", "namespace": "shop"},
            "involvedObject": {"kind": "Pod", "name": "web", "apiVersion": "v1", "namespace": "shop", "uid": "u1"},
            "reason": "Started", "message": "hi", "source": {"component": "ctl"},
            "firstTimestamp": "2026-01-01T00:00:00Z", "lastTimestamp": "2026-01-01T00:00:00Z",
            "count": 1, "type": "Normal", "reportingComponent": "ctl", "reportingInstance": ""});
        assert!(validate("", "events", &recorded, None).is_empty());
        let mut bumped = recorded.clone();
        bumped["count"] = json!(2);
        bumped["lastTimestamp"] = json!("2026-01-01T00:01:00Z");
        bumped["message"] = json!("changed");
        assert!(validate("", "events", &bumped, Some(&recorded)).is_empty());
        // A cluster-scoped object's Event goes to "default".
        let node = json!({"metadata": {"name": "n.1", "namespace": "default"},
            "involvedObject": {"kind": "Node", "name": "n"}, "reason": "R"});
        assert!(validate("", "events", &node, None).is_empty());

        let mismatch = json!({"metadata": {"name": "e", "namespace": "foo"},
            "involvedObject": {"kind": "Pod", "name": "p", "namespace": "bar"}});
        assert_eq!(
            messages(&validate("", "events", &mismatch, None)),
            ["involvedObject.namespace: Invalid value: \"bar\": does not match event.namespace"]
        );
        let cluster_scoped = json!({"metadata": {"name": "e", "namespace": "walk"},
            "involvedObject": {"kind": "Pod", "name": "p"}});
        assert_eq!(
            messages(&validate(
                "",
                "events",
                &cluster_scoped,
                Some(&cluster_scoped)
            )),
            ["involvedObject.namespace: Invalid value: \"\": does not match event.namespace"]
        );
    }

    #[test]
    fn core_events_with_an_event_time_need_the_new_fields() {
        let e = json!({"metadata": {"name": "e", "namespace": "foo"},
            "involvedObject": {"kind": "Pod", "name": "p"},
            "eventTime": "2026-01-01T00:00:00.000000Z", "reportingComponent": "my-contr@ller",
            "reportingInstance": "i".repeat(129), "message": "m".repeat(1025)});
        assert_eq!(
            messages(&validate("", "events", &e, None)),
            [
                "involvedObject.namespace: Invalid value: \"\": does not match event.namespace"
                    .to_owned(),
                format!("reportingController: Invalid value: \"my-contr@ller\": {QUALIFIED}"),
                "reportingInstance: Invalid value: \"\": can have at most 128 characters"
                    .to_owned(),
                "action: Required value".to_owned(),
                "reason: Required value".to_owned(),
                "message: Invalid value: \"\": can have at most 1024 characters".to_owned(),
            ]
        );
        // In kube-system, an object without a namespace is fine.
        let ok = json!({"metadata": {"name": "e", "namespace": "kube-system"},
            "involvedObject": {"kind": "Node", "name": "n"},
            "eventTime": "2026-01-01T00:00:00.000000Z", "reportingComponent": "k8s.io/kubelet",
            "reportingInstance": "n1", "action": "Do", "reason": "Because"});
        assert!(validate("", "events", &ok, None).is_empty());
    }

    fn new_style() -> Value {
        json!({"apiVersion": "events.k8s.io/v1", "kind": "Event",
            "metadata": {"name": "e1", "namespace": "default"},
            "regarding": {"kind": "Pod", "name": "p", "namespace": "default"},
            "note": "pulled", "reason": "Pulled", "type": "Normal", "action": "Pull",
            "reportingController": "example.com/kubelet", "reportingInstance": "n1",
            "eventTime": "2026-12-01T00:00:00.000000Z"})
    }

    #[test]
    fn events_k8s_io_creates_are_strict() {
        assert!(validate(EVENTS, "events", &new_style(), None).is_empty());
        let e = json!({"metadata": {"name": "e", "namespace": "walk"},
            "regarding": {"kind": "Pod", "name": "p"}, "reason": "R", "deprecatedCount": 3,
            "deprecatedSource": {"host": "h"},
            "deprecatedFirstTimestamp": "2026-01-01T00:00:00Z", "series": {"count": 1}});
        assert_eq!(
            messages(&validate(EVENTS, "events", &e, None)),
            [
                "involvedObject.namespace: Invalid value: \"\": does not match event.namespace",
                "series.count: Invalid value: \"\": should be at least 2",
                "series.lastObservedTime: Required value",
                "eventTime: Required value",
                "type: Invalid value: \"\": has invalid value: ",
                "firstTimestamp: Invalid value: \"\": needs to be unset",
                "count: Invalid value: \"\": needs to be unset",
                "source: Invalid value: \"\": needs to be unset",
            ]
        );
        // The same body through core v1 is the lenient path (its names are not core's anyway).
        let core = json!({"metadata": {"name": "e", "namespace": "default"},
            "involvedObject": {"kind": "Pod", "name": "p", "namespace": "default"},
            "count": 3, "source": {"host": "h"}});
        assert!(validate("", "events", &core, None).is_empty());
    }

    #[test]
    fn events_k8s_io_updates_change_nothing_but_metadata_and_series() {
        let old = new_style();
        let mut same = old.clone();
        same["metadata"]["labels"] = json!({"a": "b"});
        // The same instant written another way.
        same["eventTime"] = json!("2026-12-01T00:00:00Z");
        assert!(validate(EVENTS, "events", &same, Some(&old)).is_empty());

        let mut changed = old.clone();
        changed["note"] = json!("patched");
        changed["eventTime"] = json!("2026-12-01T00:00:01.5Z");
        changed["deprecatedCount"] = json!(2);
        changed["regarding"]["name"] = json!("q");
        changed["related"] = json!({"kind": "Pod", "name": "r"});
        changed["deprecatedFirstTimestamp"] = json!("2026-01-01T00:00:00Z");
        assert_eq!(
            messages(&validate(EVENTS, "events", &changed, Some(&old))),
            [
                "involvedObject: Invalid value: {\"Kind\":\"Pod\",\"Namespace\":\"default\",\"Name\":\"q\",\"UID\":\"\",\"APIVersion\":\"\",\"ResourceVersion\":\"\",\"FieldPath\":\"\"}: field is immutable",
                "message: Invalid value: \"patched\": field is immutable",
                "firstTimestamp: Invalid value: \"2026-01-01T00:00:00Z\": field is immutable",
                "count: Invalid value: 2: field is immutable",
                "eventTime: Invalid value: \"2026-12-01T00:00:01.500000Z\": field is immutable",
                "related: Invalid value: {\"Kind\":\"Pod\",\"Namespace\":\"\",\"Name\":\"r\",\"UID\":\"\",\"APIVersion\":\"\",\"ResourceVersion\":\"\",\"FieldPath\":\"\"}: field is immutable",
            ]
        );

        // kube checks the reason twice; a removed `related` prints as "null"; a changed series
        // is validated.
        let mut old2 = old.clone();
        old2["related"] = json!({"kind": "Pod", "name": "r"});
        let mut new2 = old.clone();
        new2["reason"] = json!("Other");
        new2["series"] = json!({"count": 1, "lastObservedTime": "2026-12-01T00:00:00.000000Z"});
        assert_eq!(
            messages(&validate(EVENTS, "events", &new2, Some(&old2))),
            [
                "series.count: Invalid value: \"\": should be at least 2",
                "reason: Invalid value: \"Other\": field is immutable",
                "reason: Invalid value: \"Other\": field is immutable",
                "related: Invalid value: null: field is immutable",
            ]
        );
        // A core Event's note changed through events.k8s.io: kube refuses it.
        let core_made = json!({"metadata": {"name": "e2", "namespace": "default"},
            "regarding": {"kind": "Pod", "name": "q"}, "note": "old style", "reason": "Created",
            "deprecatedCount": 3});
        let mut patched = core_made.clone();
        patched["note"] = json!("patched");
        assert_eq!(
            messages(&validate(EVENTS, "events", &patched, Some(&core_made))),
            ["message: Invalid value: \"patched\": field is immutable"]
        );
        // A lastTimestamp removed: the zero `metav1.Time` prints as `null`.
        let mut with_last = core_made.clone();
        with_last["deprecatedLastTimestamp"] = json!("2026-01-01T00:00:00Z");
        assert_eq!(
            messages(&validate(EVENTS, "events", &core_made, Some(&with_last))),
            ["lastTimestamp: Invalid value: null: field is immutable"]
        );
    }

    // ---- service accounts ----

    #[test]
    fn service_accounts_have_nothing_beyond_metadata() {
        let sa = json!({"metadata": {"name": "sa"}, "secrets": [{"name": "Not Valid"}],
            "imagePullSecrets": [{"name": "x_y"}]});
        assert!(validate("", "serviceaccounts", &sa, None).is_empty());
    }

    // ---- limit ranges ----

    #[test]
    fn limit_ranges_order_their_values() {
        let ok = json!({"spec": {"limits": [
            {"type": "Container", "max": {"cpu": "1", "memory": "1Gi"}, "min": {"cpu": "100m"},
             "default": {"cpu": "500m", "memory": "1Gi"}, "defaultRequest": {"cpu": "200m", "memory": "1Gi"},
             "maxLimitRequestRatio": {"cpu": "2"}},
            {"type": "Pod", "max": {"cpu": "2"}},
            {"type": "PersistentVolumeClaim", "min": {"storage": "1Gi"}},
            {"type": "example.com/thing", "max": {"example.com/widgets": "3"}}]}});
        assert!(validate("", "limitranges", &ok, None).is_empty());

        let bad = json!({"spec": {"limits": [
            {"type": "Container", "min": {"cpu": "2"}, "max": {"cpu": "1"}, "default": {"cpu": "3"},
             "defaultRequest": {"cpu": "500m"}, "maxLimitRequestRatio": {"cpu": "500m"}},
            {"type": "Pod", "min": {"foo": "1"}, "default": {"cpu": "1"}},
            {"type": "Container"},
            {"type": "Foo"},
            {"type": "PersistentVolumeClaim", "max": {"cpu": "1"}}]}});
        assert_eq!(
            messages(&validate("", "limitranges", &bad, Some(&bad))),
            [
                "spec.limits[0].min[cpu]: Invalid value: \"2\": min value 2 is greater than max value 1",
                "spec.limits[0].defaultRequest[cpu]: Invalid value: \"500m\": min value 2 is greater than default request value 500m",
                "spec.limits[0].default[cpu]: Invalid value: \"1\": default value 3 is greater than max value 1",
                "spec.limits[0].maxLimitRequestRatio[cpu]: Invalid value: \"500m\": ratio 500m is less than 1",
                "spec.limits[1].min[foo]: Invalid value: \"foo\": must be a standard resource type or fully qualified",
                "spec.limits[1].min[foo]: Invalid value: \"foo\": must be a standard resource for containers",
                "spec.limits[1].default: Forbidden: may not be specified when `type` is 'Pod'",
                "spec.limits[2].type: Duplicate value: \"Container\"",
                "spec.limits[3].type: Invalid value: \"Foo\": must be a standard limit type or fully qualified",
                "spec.limits[4].limits: Required value: either minimum or maximum storage value is required, but neither was provided",
            ]
        );
    }

    #[test]
    fn limit_range_ratios_and_unovercommittable_defaults() {
        let lr = json!({"spec": {"limits": [
            {"type": "Container", "min": {"cpu": "1"}, "max": {"cpu": "4"},
             "maxLimitRequestRatio": {"cpu": "10"},
             "default": {"hugepages-2Mi": "4Mi"}, "defaultRequest": {"hugepages-2Mi": "2Mi"}}]}});
        assert_eq!(
            messages(&validate("", "limitranges", &lr, None)),
            [
                "spec.limits[0].maxLimitRequestRatio[cpu]: Invalid value: \"10\": ratio 10 is greater than max/min = 4.000000",
                "spec.limits[0].defaultRequest[hugepages-2Mi]: Invalid value: \"2Mi\": default value 4Mi must equal to defaultRequest value 2Mi in hugepages-2Mi",
            ]
        );
        assert_eq!(go_float(f64::INFINITY), "+Inf");
        assert_eq!(go_float(2.5), "2.500000");
    }

    // ---- controller revisions ----

    #[test]
    fn controller_revisions_hold_object_data_that_never_changes() {
        let ok = json!({"metadata": {"name": "r"}, "data": {"spec": {"a": 1}}, "revision": 1});
        assert!(validate(APPS, "controllerrevisions", &ok, None).is_empty());
        let missing = json!({"metadata": {"name": "r"}, "revision": -1});
        assert_eq!(
            messages(&validate(APPS, "controllerrevisions", &missing, None)),
            [
                "revision: Invalid value: -1: must be greater than or equal to 0",
                "data: Required value: data is mandatory",
            ]
        );
        let array = json!({"metadata": {"name": "r"}, "data": [1], "revision": 0});
        assert_eq!(
            messages(&validate(APPS, "controllerrevisions", &array, None)),
            ["data: Required value: data must be a valid JSON object"]
        );
        // Update: the revision may change, the data may not; a stored non-object stays writable.
        let mut bumped = ok.clone();
        bumped["revision"] = json!(2);
        assert!(validate(APPS, "controllerrevisions", &bumped, Some(&ok)).is_empty());
        assert!(validate(APPS, "controllerrevisions", &array, Some(&array)).is_empty());
        let mut changed = ok.clone();
        changed["data"] = json!({"spec": {"a": 2}});
        assert_eq!(
            messages(&validate(APPS, "controllerrevisions", &changed, Some(&ok))),
            ["data: Invalid value: {\"spec\":{\"a\":2}}: field is immutable"]
        );
    }

    // ---- runtime classes ----

    #[test]
    fn runtime_classes_check_handler_overhead_and_scheduling() {
        let ok = json!({"metadata": {"name": "rc"}, "handler": "runc",
            "overhead": {"podFixed": {"cpu": "100m", "memory": "10Mi", "hugepages-2Mi": "4Mi"}},
            "scheduling": {"nodeSelector": {"a": "b"},
                "tolerations": [{"key": "k", "operator": "Exists", "effect": "NoSchedule"},
                                {"key": "k", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 5}]}});
        assert!(validate(NODE, "runtimeclasses", &ok, None).is_empty());
        assert!(validate(NODE, "runtimeclasses", &ok, Some(&ok)).is_empty());

        let bad = json!({"metadata": {"name": "rc"}, "handler": "run.c",
            "overhead": {"podFixed": {"pods": "500m", "hugepages-2Mi": "3Mi", "foo": "1"}},
            "scheduling": {"nodeSelector": {"a b": "c"}, "tolerations": [
                {"key": "k", "operator": "Equal", "value": "v", "effect": "NoSchedule"},
                {"key": "k", "operator": "Equal", "value": "v", "effect": "NoSchedule"},
                {"operator": "Equal", "value": "x"},
                {"key": "k2", "operator": "Exists", "value": "v", "effect": "Bad", "tolerationSeconds": 5}]}});
        let mut was = ok.clone();
        was["handler"] = json!("crun");
        assert_eq!(
            messages(&validate(NODE, "runtimeclasses", &bad, Some(&was))),
            [
                "handler: Invalid value: \"run.c\": must not contain dots".to_owned(),
                "overhead.limits[foo]: Invalid value: \"foo\": must be a standard resource type or fully qualified".to_owned(),
                "overhead.limits[foo]: Invalid value: \"foo\": must be a standard resource for containers".to_owned(),
                "overhead.limits[hugepages-2Mi]: Invalid value: \"3Mi\": 3Mi is not positive integer multiple of hugepages-2Mi".to_owned(),
                "overhead.limits[pods]: Invalid value: \"pods\": must be a standard resource for containers".to_owned(),
                "overhead.limits[pods]: Invalid value: \"500m\": must be an integer".to_owned(),
                "overhead: Forbidden: HugePages require cpu or memory".to_owned(),
                format!("scheduling.nodeSelector: Invalid value: \"a b\": {QUALIFIED}"),
                "scheduling.tolerations[2].operator: Invalid value: \"Equal\": operator must be Exists when `key` is empty, which means \"match all values and all keys\"".to_owned(),
                "scheduling.tolerations[3].effect: Invalid value: \"Bad\": effect must be 'NoExecute' when `tolerationSeconds` is set".to_owned(),
                "scheduling.tolerations[3].operator: Invalid value: \"v\": value must be empty when `operator` is 'Exists'".to_owned(),
                "scheduling.tolerations[3].effect: Unsupported value: \"Bad\": supported values: \"NoSchedule\", \"PreferNoSchedule\", \"NoExecute\"".to_owned(),
                "scheduling.tolerations[1]: Duplicate value: {\"Key\":\"k\",\"Operator\":\"Equal\",\"Value\":\"v\",\"Effect\":\"NoSchedule\",\"TolerationSeconds\":null}".to_owned(),
                "handler: Invalid value: \"run.c\": field is immutable".to_owned(),
            ]
        );
    }

    #[test]
    fn other_kinds_are_untouched() {
        let any = json!({"metadata": {"name": "x"}});
        assert!(validate("", "pods", &any, None).is_empty());
    }
}
