//! kube's validation (1.34) of the admission configuration kinds
//! (`pkg/apis/admissionregistration/validation`: Validating/MutatingWebhookConfigurations,
//! ValidatingAdmissionPolicies and their bindings), of API Priority and Fairness
//! (`pkg/apis/flowcontrol/validation`: FlowSchemas, PriorityLevelConfigurations) and of
//! APIServices (`kube-aggregator/pkg/apis/apiregistration/validation`), run as their registry
//! strategies run it on create, update and status update, with kube's field paths and messages.
//!
//! Bad values render as kube 1.34's `field.Error` renders them (`field.rs`): strings quoted,
//! numbers and booleans bare, anything else as its JSON: lists as they are, kube's internal
//! structs with their Go field names in declaration order. One difference: the whole spec of a
//! mandatory FlowSchema or priority level that differs from the fixed one is printed as the JSON
//! sent (kube prints the defaulted internal struct).
//!
//! Defaults: where kube's v1 defaulting always fills a field in (a policy's `failurePolicy`,
//! `matchPolicy` and selectors of `matchConstraints`/`matchResources`, a FlowSchema's
//! `matchingPrecedence`, a priority level's shares and queuing parameters, an APIService's
//! service port), an absent field reads as kube's default, so the outcome is kube's whether or
//! not the default was applied before (turtles does not default flowcontrol or apiregistration
//! objects).
//!
//! CEL: expressions are compiled with the compiler turtles evaluates them with
//! ([`Expression::compile`]: syntax, kube's size and nesting limits, unknown functions; a
//! `messageExpression` may not name `authorizer`, as in `admission::policy`); they are not
//! type-checked (undeclared variables, result types), which needs `admission::typecheck`. An
//! expression the stored object already had is not compiled again on update (kube compiles it
//! with its more permissive "stored expressions" environment).

use std::collections::{HashMap, HashSet};

use base64::Engine;
use serde_json::{json, Value};

use super::field::{
    child, dns1035_label, dns1123_label, dns1123_subdomain, duplicate, forbidden, go_struct, index,
    invalid, invalid_str, items, not_supported, port_num, qualified_name, quoted, required, str_of,
    too_long, too_many, Go,
};
use super::misc::label_selector;
use crate::builtin::defaults;
use crate::model::status::Cause;
use crate::schema::expr::{run_on_big_stack, Expression};

const ADMISSION: &str = "admissionregistration.k8s.io";
const FLOWCONTROL: &str = "flowcontrol.apiserver.k8s.io";
const APIREGISTRATION: &str = "apiregistration.k8s.io";

/// Causes for a create (`old` None) or an update of the main resource (`old` the stored object)
/// of the kinds this module knows; empty for any other.
pub fn validate(group: &str, resource: &str, obj: &Value, old: Option<&Value>) -> Vec<Cause> {
    match (group, resource) {
        (ADMISSION, "validatingwebhookconfigurations") => webhook_configuration(obj, old, false),
        (ADMISSION, "mutatingwebhookconfigurations") => webhook_configuration(obj, old, true),
        (ADMISSION, "validatingadmissionpolicies") => policy(obj, old),
        (ADMISSION, "validatingadmissionpolicybindings") => policy_binding(obj),
        (ADMISSION, "mutatingadmissionpolicies") => mutating_policy(obj, old),
        (ADMISSION, "mutatingadmissionpolicybindings") => mutating_policy_binding(obj),
        (FLOWCONTROL, "flowschemas") => flow_schema(obj),
        (FLOWCONTROL, "prioritylevelconfigurations") => priority_level(obj),
        (APIREGISTRATION, "apiservices") => api_service(obj),
        _ => Vec::new(),
    }
}

/// Causes for an update through `/status` of the kinds this module knows; empty for any other.
pub fn validate_status(group: &str, resource: &str, obj: &Value, old: &Value) -> Vec<Cause> {
    let _ = old;
    let mut out = Vec::new();
    let status = obj.get("status").unwrap_or(&NULL);
    match (group, resource) {
        (ADMISSION, "validatingadmissionpolicies") => policy_status(status, &mut out),
        (FLOWCONTROL, "flowschemas" | "prioritylevelconfigurations") => {
            flowcontrol_status(status, "status", &mut out)
        }
        (APIREGISTRATION, "apiservices") => api_service_status(status, &mut out),
        _ => {}
    }
    out
}

// ---------------------------------------------------------------------------
// Shared helpers
// ---------------------------------------------------------------------------

static NULL: Value = Value::Null;

/// The field `name` of `v` unless absent or `null` (a Go pointer that is set).
fn set<'a>(v: &'a Value, name: &str) -> Option<&'a Value> {
    v.get(name).filter(|x| !x.is_null())
}

/// The integer at `v[name]`, `None` when absent or not an integer.
fn int(v: &Value, name: &str) -> Option<i64> {
    v.get(name).and_then(Value::as_i64)
}

/// The strings of the list at `v[name]` (non-strings as `""`).
fn strings(v: &Value, name: &str) -> Vec<String> {
    items(v, name)
        .iter()
        .map(|s| s.as_str().unwrap_or("").to_owned())
        .collect()
}

/// A list of strings as the bad value of a cause.
fn list_value(list: &[String]) -> Value {
    Value::Array(list.iter().map(|s| Value::String(s.clone())).collect())
}

fn spec_of(obj: &Value) -> &Value {
    obj.get("spec").unwrap_or(&NULL)
}

fn name_of(obj: &Value) -> &str {
    obj.pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("")
}

fn has_wildcard(list: &[String]) -> bool {
    list.iter().any(|s| s == "*")
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

/// Whether the strict `ValidateLabelSelector` finds anything in `sel`.
fn selector_invalid(sel: &Value) -> bool {
    let mut errs = Vec::new();
    label_selector(sel, "", false, &mut errs);
    !errs.is_empty()
}

/// metav1's `ValidateConditions` (and `ValidateCondition` of each).
fn conditions(list: &[Value], path: &str, out: &mut Vec<Cause>) {
    const REASON_MSG: &str = "a condition reason must start with alphabetic character, optionally followed by a string of alphanumeric characters or '_,:', and must end with an alphanumeric character or '_' (e.g. 'my_name',  or 'MY_NAME',  or 'MyName',  or 'ReasonA,ReasonB',  or 'ReasonA:ReasonB', regex used for validation is '[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?')";
    let mut seen = HashSet::new();
    for (i, c) in list.iter().enumerate() {
        let p = index(path, i);
        let t = str_of(c, "type");
        if !seen.insert(t) {
            out.push(duplicate(&child(&p, "type"), &json!(t)));
        }
        for m in qualified_name(t) {
            out.push(invalid_str(&child(&p, "type"), t, &m));
        }
        let status = str_of(c, "status");
        if !matches!(status, "True" | "False" | "Unknown") {
            out.push(not_supported(
                &child(&p, "status"),
                &json!(status),
                &["False", "True", "Unknown"],
            ));
        }
        if let Some(g) = int(c, "observedGeneration").filter(|g| *g < 0) {
            out.push(invalid(
                &child(&p, "observedGeneration"),
                &json!(g),
                "must be greater than or equal to zero",
            ));
        }
        if set(c, "lastTransitionTime").is_none_or(|t| t.as_str() == Some("")) {
            out.push(required(&child(&p, "lastTransitionTime"), "must be set"));
        }
        let reason = str_of(c, "reason");
        if reason.is_empty() {
            out.push(required(&child(&p, "reason"), "must be set"));
        } else {
            let b = reason.as_bytes();
            let inner = |c: &u8| c.is_ascii_alphanumeric() || matches!(c, b'_' | b',' | b':');
            let ok = b[0].is_ascii_alphabetic()
                && b.iter().all(inner)
                && b.last()
                    .is_some_and(|c| c.is_ascii_alphanumeric() || *c == b'_');
            if !ok {
                out.push(invalid_str(&child(&p, "reason"), reason, REASON_MSG));
            }
            if reason.len() > 1024 {
                out.push(too_long(&child(&p, "reason"), 1024));
            }
        }
        if str_of(c, "message").len() > 32 * 1024 {
            out.push(too_long(&child(&p, "message"), 32 * 1024));
        }
    }
}

// ---- CEL ----

/// What compiling each expression of one object gave, by source: `Err` with kube's detail
/// (`compilation failed: ...`) when it does not compile, `Ok(true)` when it names `authorizer`.
#[derive(Default)]
struct Cel(HashMap<String, Result<bool, String>>);

impl Cel {
    /// Compile `sources` (all on one thread with a big stack: the parser recurses). If that
    /// thread cannot run, nothing is reported.
    fn compile(sources: Vec<String>) -> Self {
        Self::compile_with(sources, false)
    }

    /// [`Cel::compile`] with kube's mutation types (`Object{...}`, `JSONPatch{...}`), as
    /// MutatingAdmissionPolicies are compiled.
    fn compile_mutation(sources: Vec<String>) -> Self {
        Self::compile_with(sources, true)
    }

    fn compile_with(sources: Vec<String>, mutation: bool) -> Self {
        let mut seen = HashSet::new();
        let uniq: Vec<String> = sources
            .into_iter()
            .filter(|s| !s.trim().is_empty() && seen.insert(s.clone()))
            .collect();
        if uniq.is_empty() {
            return Self::default();
        }
        let compiled = run_on_big_stack(move || {
            uniq.into_iter()
                .map(|src| {
                    let compiled = if mutation {
                        Expression::compile_mutation(&src)
                    } else {
                        Expression::compile(&src)
                    };
                    let r = compiled
                        .map(|e| {
                            e.references("authorizer")
                                || e.references(crate::schema::cel_authz::REQUEST_RESOURCE)
                        })
                        .map_err(|e| format!("compilation failed: {e}"));
                    (src, r)
                })
                .collect::<HashMap<String, Result<bool, String>>>()
        });
        Self(compiled.unwrap_or_default())
    }

    /// Why `src` does not compile (`None` when it does, or was not compiled).
    fn error(&self, src: &str) -> Option<&str> {
        match self.0.get(src) {
            Some(Err(e)) => Some(e.as_str()),
            _ => None,
        }
    }

    fn names_authorizer(&self, src: &str) -> bool {
        matches!(self.0.get(src), Some(Ok(true)))
    }
}

/// A match condition as compared on update: (name, expression).
fn condition_pairs(v: &Value) -> Vec<(&str, &str)> {
    items(v, "matchConditions")
        .iter()
        .map(|c| (str_of(c, "name"), str_of(c, "expression")))
        .collect()
}

/// kube's `validateMatchConditions` (with `validateMatchCondition` of each); `stored`: the
/// expressions of the stored object (kube's `preexistingExpressions.matchConditionExpressions`).
fn match_conditions(
    conds: &[Value],
    path: &str,
    stored: &HashSet<String>,
    cel: &Cel,
    out: &mut Vec<Cause>,
) {
    if conds.len() > 64 {
        out.push(too_many(path, conds.len(), 64));
    }
    let mut names = HashSet::new();
    for (i, c) in conds.iter().enumerate() {
        let p = index(path, i);
        let expr = str_of(c, "expression").trim();
        if expr.is_empty() {
            out.push(required(&child(&p, "expression"), ""));
        } else if !stored.contains(expr) {
            if let Some(e) = cel.error(expr) {
                out.push(invalid_str(&child(&p, "expression"), expr, e));
            }
        }
        let name = str_of(c, "name");
        if name.is_empty() {
            out.push(required(&child(&p, "name"), ""));
        } else {
            for m in qualified_name(name) {
                out.push(invalid_str(&child(&p, "name"), name, &m));
            }
        }
        if !name.is_empty() && !names.insert(name) {
            out.push(duplicate(&child(&p, "name"), &json!(name)));
        }
    }
}

// ---- rules ----

const OPERATIONS: &[&str] = &["*", "CONNECT", "CREATE", "DELETE", "UPDATE"];
const SCOPES: &[&str] = &["*", "Cluster", "Namespaced"];
const FAILURE_POLICIES: &[&str] = &["Fail", "Ignore"];
const MATCH_POLICIES: &[&str] = &["Equivalent", "Exact"];

/// kube's `validateRuleWithOperations` (resources may name subresources).
fn rule_with_operations(r: &Value, path: &str, out: &mut Vec<Cause>) {
    let ops = strings(r, "operations");
    let ops_path = child(path, "operations");
    if ops.is_empty() {
        out.push(required(&ops_path, ""));
    }
    if ops.len() > 1 && has_wildcard(&ops) {
        out.push(invalid(
            &ops_path,
            &list_value(&ops),
            "if '*' is present, must not specify other operations",
        ));
    }
    for (i, op) in ops.iter().enumerate() {
        if !OPERATIONS.contains(&op.as_str()) {
            out.push(not_supported(&index(&ops_path, i), &json!(op), OPERATIONS));
        }
    }
    rule(r, path, out);
}

/// kube's `validateRule` with `allowSubResource`.
fn rule(r: &Value, path: &str, out: &mut Vec<Cause>) {
    let groups = strings(r, "apiGroups");
    let groups_path = child(path, "apiGroups");
    if groups.is_empty() {
        out.push(required(&groups_path, ""));
    }
    if groups.len() > 1 && has_wildcard(&groups) {
        out.push(invalid(
            &groups_path,
            &list_value(&groups),
            "if '*' is present, must not specify other API groups",
        ));
    }
    let versions = strings(r, "apiVersions");
    let versions_path = child(path, "apiVersions");
    if versions.is_empty() {
        out.push(required(&versions_path, ""));
    }
    if versions.len() > 1 && has_wildcard(&versions) {
        out.push(invalid(
            &versions_path,
            &list_value(&versions),
            "if '*' is present, must not specify other API versions",
        ));
    }
    for (i, v) in versions.iter().enumerate() {
        if v.is_empty() {
            out.push(required(&index(&versions_path, i), ""));
        }
    }
    resources(&strings(r, "resources"), &child(path, "resources"), out);
    if let Some(scope) = set(r, "scope") {
        if !SCOPES.contains(&scope.as_str().unwrap_or("")) {
            out.push(not_supported(&child(path, "scope"), scope, SCOPES));
        }
    }
}

/// kube's `validateResources`: `resource`, `resource/subresource` and their wildcards.
fn resources(list: &[String], path: &str, out: &mut Vec<Cause>) {
    if list.is_empty() {
        out.push(required(path, ""));
    }
    // x/*
    let mut with_wildcard_sub: HashSet<&str> = HashSet::new();
    // */x
    let mut sub_with_wildcard_res: HashSet<&str> = HashSet::new();
    let mut double_wildcard = false;
    let mut single_wildcard = false;
    let mut without_sub = false;
    for (i, rs) in list.iter().enumerate() {
        if rs.is_empty() {
            out.push(required(&index(path, i), ""));
            continue;
        }
        if rs == "*/*" {
            double_wildcard = true;
        }
        if rs == "*" {
            single_wildcard = true;
        }
        let Some((res, sub)) = rs.split_once('/') else {
            // As kube: the last resource without a subresource decides.
            without_sub = rs != "*";
            continue;
        };
        if with_wildcard_sub.contains(res) {
            out.push(invalid_str(
                &index(path, i),
                rs,
                &format!("if '{res}/*' is present, must not specify {rs}"),
            ));
        }
        if sub_with_wildcard_res.contains(sub) {
            out.push(invalid_str(
                &index(path, i),
                rs,
                &format!("if '*/{sub}' is present, must not specify {rs}"),
            ));
        }
        if sub == "*" {
            with_wildcard_sub.insert(res);
        }
        if res == "*" {
            sub_with_wildcard_res.insert(sub);
        }
    }
    if list.len() > 1 && double_wildcard {
        out.push(invalid(
            path,
            &list_value(list),
            "if '*/*' is present, must not specify other resources",
        ));
    }
    if single_wildcard && without_sub {
        out.push(invalid(
            path,
            &list_value(list),
            "if '*' is present, must not specify other resources without subresources",
        ));
    }
}

// ---------------------------------------------------------------------------
// Validating/MutatingWebhookConfiguration
// ---------------------------------------------------------------------------

const ACCEPTED_REVIEW_VERSIONS: &[&str] = &["v1", "v1beta1"];
const SIDE_EFFECTS: &[&str] = &["None", "NoneOnDryRun", "Some", "Unknown"];
const NO_SIDE_EFFECTS: &[&str] = &["None", "NoneOnDryRun"];
const REINVOCATION_POLICIES: &[&str] = &["IfNeeded", "Never"];

/// kube's `validationOptions` of the webhook configurations.
struct HookOptions {
    ignore_match_conditions: bool,
    require_no_side_effects: bool,
    require_recognized_review_version: bool,
    require_unique_names: bool,
    allow_invalid_label_values: bool,
    /// The match condition expressions of the stored object.
    stored_conditions: HashSet<String>,
}

impl HookOptions {
    /// The options of `ValidateValidating/MutatingWebhookConfiguration`.
    fn create() -> Self {
        Self {
            ignore_match_conditions: false,
            require_no_side_effects: true,
            require_recognized_review_version: true,
            require_unique_names: true,
            allow_invalid_label_values: false,
            stored_conditions: HashSet::new(),
        }
    }

    /// The options of `ValidateValidating/MutatingWebhookConfigurationUpdate`, from the stored
    /// webhooks: each rule the stored object already broke is let pass.
    fn update(hooks: &[Value], old: &[Value]) -> Self {
        let mut names = HashSet::new();
        Self {
            // kube's `ignoreValidating/MutatingWebhookMatchConditions`.
            ignore_match_conditions: hooks.len() == old.len()
                && hooks
                    .iter()
                    .zip(old)
                    .all(|(n, o)| condition_pairs(n) == condition_pairs(o)),
            // kube's `validating/mutatingHasNoSideEffects`.
            require_no_side_effects: old.iter().all(|h| {
                let se = set(h, "sideEffects").and_then(Value::as_str).unwrap_or("");
                NO_SIDE_EFFECTS.contains(&se)
            }),
            // kube's `validating/mutatingHasAcceptedAdmissionReviewVersions`.
            require_recognized_review_version: old.iter().all(|h| {
                let v = strings(h, "admissionReviewVersions");
                v.is_empty()
                    || v.iter()
                        .any(|v| ACCEPTED_REVIEW_VERSIONS.contains(&v.as_str()))
            }),
            // kube's `validating/mutatingHasUniqueWebhookNames`.
            require_unique_names: old.iter().all(|h| names.insert(str_of(h, "name"))),
            // kube's `validating/mutatingWebhookHasInvalidLabelValueInSelector`.
            allow_invalid_label_values: old.iter().any(|h| {
                ["namespaceSelector", "objectSelector"]
                    .iter()
                    .any(|s| set(h, s).is_some_and(selector_invalid))
            }),
            stored_conditions: old
                .iter()
                .flat_map(|h| items(h, "matchConditions"))
                .map(|c| str_of(c, "expression").to_owned())
                .collect(),
        }
    }
}

/// kube's `validateValidatingWebhookConfiguration` / `validateMutatingWebhookConfiguration`
/// (create: `ValidateXWebhookConfiguration`; update: `ValidateXWebhookConfigurationUpdate`).
fn webhook_configuration(obj: &Value, old: Option<&Value>, mutating: bool) -> Vec<Cause> {
    let hooks = items(obj, "webhooks");
    let opts = match old {
        None => HookOptions::create(),
        Some(old) => HookOptions::update(hooks, items(old, "webhooks")),
    };
    let cel = if opts.ignore_match_conditions {
        Cel::default()
    } else {
        Cel::compile(
            hooks
                .iter()
                .flat_map(|h| items(h, "matchConditions"))
                .map(|c| str_of(c, "expression").trim().to_owned())
                .filter(|s| !opts.stored_conditions.contains(s))
                .collect(),
        )
    };
    let mut out = Vec::new();
    let mut names = HashSet::new();
    for (i, hook) in hooks.iter().enumerate() {
        let p = index("webhooks", i);
        webhook(hook, &p, mutating, &opts, &cel, &mut out);
        admission_review_versions(
            hook,
            opts.require_recognized_review_version,
            &child(&p, "admissionReviewVersions"),
            &mut out,
        );
        let name = str_of(hook, "name");
        if opts.require_unique_names && !name.is_empty() && !names.insert(name) {
            out.push(duplicate(&child(&p, "name"), &json!(name)));
        }
    }
    out
}

/// kube's `validateValidatingWebhook` / `validateMutatingWebhook` (`mutating` adds
/// `reinvocationPolicy`).
fn webhook(
    hook: &Value,
    path: &str,
    mutating: bool,
    opts: &HookOptions,
    cel: &Cel,
    out: &mut Vec<Cause>,
) {
    fully_qualified_name(str_of(hook, "name"), &child(path, "name"), out);
    for (i, r) in items(hook, "rules").iter().enumerate() {
        rule_with_operations(r, &index(&child(path, "rules"), i), out);
    }
    if let Some(fp) = set(hook, "failurePolicy") {
        if !FAILURE_POLICIES.contains(&fp.as_str().unwrap_or("")) {
            out.push(not_supported(
                &child(path, "failurePolicy"),
                fp,
                FAILURE_POLICIES,
            ));
        }
    }
    if let Some(mp) = set(hook, "matchPolicy") {
        if !MATCH_POLICIES.contains(&mp.as_str().unwrap_or("")) {
            out.push(not_supported(
                &child(path, "matchPolicy"),
                mp,
                MATCH_POLICIES,
            ));
        }
    }
    let allowed = if opts.require_no_side_effects {
        NO_SIDE_EFFECTS
    } else {
        SIDE_EFFECTS
    };
    match set(hook, "sideEffects") {
        None => out.push(required(
            &child(path, "sideEffects"),
            &format!("must specify one of {}", allowed.join(", ")),
        )),
        Some(se) if !allowed.contains(&se.as_str().unwrap_or("")) => {
            out.push(not_supported(&child(path, "sideEffects"), se, allowed));
        }
        Some(_) => {}
    }
    if let Some(t) = int(hook, "timeoutSeconds").filter(|t| !(1..=30).contains(t)) {
        out.push(invalid(
            &child(path, "timeoutSeconds"),
            &json!(t),
            "the timeout value must be between 1 and 30 seconds",
        ));
    }
    for s in ["namespaceSelector", "objectSelector"] {
        if let Some(sel) = set(hook, s) {
            label_selector(sel, &child(path, s), opts.allow_invalid_label_values, out);
        }
    }
    if mutating {
        if let Some(rp) = set(hook, "reinvocationPolicy") {
            if !REINVOCATION_POLICIES.contains(&rp.as_str().unwrap_or("")) {
                out.push(not_supported(
                    &child(path, "reinvocationPolicy"),
                    rp,
                    REINVOCATION_POLICIES,
                ));
            }
        }
    }
    let cc = hook.get("clientConfig").unwrap_or(&NULL);
    let cc_path = child(path, "clientConfig");
    match (set(cc, "url"), set(cc, "service")) {
        (Some(url), None) => webhook_url(url.as_str().unwrap_or(""), &child(&cc_path, "url"), out),
        (None, Some(svc)) => webhook_service(svc, &child(&cc_path, "service"), out),
        _ => out.push(required(
            &cc_path,
            "exactly one of url or service is required",
        )),
    }
    if !opts.ignore_match_conditions {
        match_conditions(
            items(hook, "matchConditions"),
            &child(path, "matchConditions"),
            &opts.stored_conditions,
            cel,
            out,
        );
    }
}

/// apimachinery's `IsFullyQualifiedName`.
fn fully_qualified_name(name: &str, path: &str, out: &mut Vec<Cause>) {
    if name.is_empty() {
        out.push(required(path, ""));
        return;
    }
    let errs = dns1123_subdomain(name);
    if !errs.is_empty() {
        out.push(invalid_str(path, name, &errs.join(",")));
        return;
    }
    if name.split('.').count() < 3 {
        out.push(invalid_str(
            path,
            name,
            "should be a domain with at least three segments separated by dots",
        ));
    }
}

/// kube's `validateAdmissionReviewVersions`.
fn admission_review_versions(
    hook: &Value,
    require_recognized: bool,
    path: &str,
    out: &mut Vec<Cause>,
) {
    let versions = strings(hook, "admissionReviewVersions");
    let accepted = ACCEPTED_REVIEW_VERSIONS.join(", ");
    if versions.is_empty() {
        out.push(required(path, &format!("must specify one of {accepted}")));
        return;
    }
    let mut seen = HashSet::new();
    let mut has_accepted = false;
    for (i, v) in versions.iter().enumerate() {
        if !seen.insert(v.as_str()) {
            out.push(invalid_str(&index(path, i), v, "duplicate version"));
            continue;
        }
        for m in dns1035_label(v) {
            out.push(invalid_str(&index(path, i), v, &m));
        }
        has_accepted |= ACCEPTED_REVIEW_VERSIONS.contains(&v.as_str());
    }
    if require_recognized && !has_accepted {
        out.push(invalid(
            path,
            &list_value(&versions),
            &format!("must include at least one of {accepted}"),
        ));
    }
}

/// apiserver's `webhook.ValidateWebhookURL` with `forceHttps`.
fn webhook_url(url: &str, path: &str, out: &mut Vec<Cause>) {
    const FORM: &str = "; desired format: https://host[/path]";
    match go_url_parse(url) {
        Err(e) => out.push(required(
            path,
            &format!("url must be a valid URL: {e}{FORM}"),
        )),
        Ok(u) => {
            if u.scheme != "https" {
                out.push(invalid_str(
                    path,
                    &u.scheme,
                    &format!("'https' is the only allowed URL scheme{FORM}"),
                ));
            }
            if u.host.is_empty() {
                out.push(invalid_str(
                    path,
                    &u.host,
                    &format!("host must be provided{FORM}"),
                ));
            }
            if let Some(user) = &u.user {
                out.push(invalid_str(
                    path,
                    user,
                    "user information is not permitted in the URL",
                ));
            }
            if !u.fragment.is_empty() {
                out.push(invalid_str(
                    path,
                    &u.fragment,
                    "fragments are not permitted in the URL",
                ));
            }
            if !u.raw_query.is_empty() {
                out.push(invalid_str(
                    path,
                    &u.raw_query,
                    "query parameters are not permitted in the URL",
                ));
            }
        }
    }
}

/// apiserver's `webhook.ValidateWebhookService` (the port defaults to 443).
fn webhook_service(svc: &Value, path: &str, out: &mut Vec<Cause>) {
    if str_of(svc, "name").is_empty() {
        out.push(required(&child(path, "name"), "service name is required"));
    }
    if str_of(svc, "namespace").is_empty() {
        out.push(required(
            &child(path, "namespace"),
            "service namespace is required",
        ));
    }
    let port = int(svc, "port").unwrap_or(443);
    let errs = port_num(port);
    if !errs.is_empty() {
        out.push(invalid(
            &child(path, "port"),
            &json!(port),
            &format!("port is not valid: {}", errs.join(", ")),
        ));
    }
    let Some(url_path) = set(svc, "path").and_then(Value::as_str) else {
        return;
    };
    if url_path == "/" || url_path.is_empty() {
        return;
    }
    let pp = child(path, "path");
    if url_path == "//" {
        out.push(invalid_str(&pp, url_path, "segment[0] may not be empty"));
        return;
    }
    if !url_path.starts_with('/') {
        out.push(invalid_str(&pp, url_path, "must start with a '/'"));
    }
    // As kube: the first byte is dropped whatever it is, then one trailing '/'.
    let mut check =
        String::from_utf8_lossy(url_path.as_bytes().get(1..).unwrap_or(&[])).into_owned();
    if check.ends_with('/') {
        check.pop();
    }
    // kube reports every bad segment, each cause carrying the whole path; turtles the first
    // `MAX_BAD_SEGMENTS` (a long path of bad segments would cost its length squared).
    const MAX_BAD_SEGMENTS: usize = 8;
    let mut bad = 0;
    for (i, step) in check.split('/').enumerate() {
        if bad == MAX_BAD_SEGMENTS {
            return;
        }
        if step.is_empty() {
            bad += 1;
            out.push(invalid_str(
                &pp,
                url_path,
                &format!("segment[{i}] may not be empty"),
            ));
            continue;
        }
        let failures = dns1123_subdomain(step);
        if !failures.is_empty() {
            bad += 1;
        }
        for f in failures {
            out.push(invalid_str(&pp, url_path, &format!("segment[{i}]: {f}")));
        }
    }
}

// ---- Go's net/url.Parse, as far as ValidateWebhookURL reads it ----

/// The parts of a parsed URL `ValidateWebhookURL` looks at.
#[derive(Default)]
struct GoUrl {
    scheme: String,
    host: String,
    /// `User.String()` when the URL has user information.
    user: Option<String>,
    fragment: String,
    raw_query: String,
}

#[derive(Clone, Copy, PartialEq)]
enum Escape {
    Host,
    Path,
    UserPassword,
    Fragment,
}

/// Go's `url.Parse`; the error as Go prints it (`parse "URL": reason`).
fn go_url_parse(raw: &str) -> Result<GoUrl, String> {
    let (u, frag) = match raw.split_once('#') {
        Some((u, f)) => (u, f),
        None => (raw, ""),
    };
    let mut url = go_url_parse_main(u).map_err(|e| format!("parse {}: {e}", quoted(u)))?;
    if !frag.is_empty() {
        let f =
            unescape(frag, Escape::Fragment).map_err(|e| format!("parse {}: {e}", quoted(raw)))?;
        url.fragment = String::from_utf8_lossy(&f).into_owned();
    }
    Ok(url)
}

fn go_url_parse_main(raw: &str) -> Result<GoUrl, String> {
    if raw.bytes().any(|b| b < 0x20 || b == 0x7f) {
        return Err("net/url: invalid control character in URL".to_owned());
    }
    let mut url = GoUrl::default();
    if raw == "*" {
        return Ok(url);
    }
    let (scheme, mut rest) = go_url_scheme(raw)?;
    url.scheme = scheme.to_ascii_lowercase();
    if rest.ends_with('?') && rest.matches('?').count() == 1 {
        rest = &rest[..rest.len() - 1];
    } else if let Some((r, q)) = rest.split_once('?') {
        rest = r;
        url.raw_query = q.to_owned();
    }
    if !rest.starts_with('/') {
        if !url.scheme.is_empty() {
            // An opaque URL (`https:host`): no host.
            return Ok(url);
        }
        if rest.split('/').next().unwrap_or("").contains(':') {
            return Err("first path segment in URL cannot contain colon".to_owned());
        }
    }
    if (!url.scheme.is_empty() || !rest.starts_with("///")) && rest.starts_with("//") {
        let after = &rest[2..];
        let (authority, path) = match after.find('/') {
            Some(i) => (&after[..i], &after[i..]),
            None => (after, ""),
        };
        let at = authority.rfind('@');
        url.host = go_url_host(match at {
            Some(i) => &authority[i + 1..],
            None => authority,
        })?;
        if let Some(i) = at {
            url.user = Some(go_url_userinfo(&authority[..i])?);
        }
        rest = path;
    }
    unescape(rest, Escape::Path)?;
    Ok(url)
}

/// Go's `getScheme`.
fn go_url_scheme(raw: &str) -> Result<(&str, &str), String> {
    for (i, c) in raw.bytes().enumerate() {
        match c {
            b'a'..=b'z' | b'A'..=b'Z' => {}
            b'0'..=b'9' | b'+' | b'-' | b'.' => {
                if i == 0 {
                    return Ok(("", raw));
                }
            }
            b':' => {
                if i == 0 {
                    return Err("missing protocol scheme".to_owned());
                }
                return Ok((&raw[..i], &raw[i + 1..]));
            }
            _ => return Ok(("", raw)),
        }
    }
    Ok(("", raw))
}

/// Go's `parseHost` (an IPv6 zone is unescaped as the rest of the host).
fn go_url_host(host: &str) -> Result<String, String> {
    let port_ok = |p: &str| {
        p.is_empty() || (p.starts_with(':') && p[1..].bytes().all(|b| b.is_ascii_digit()))
    };
    let colon_port = if host.starts_with('[') {
        let Some(i) = host.rfind(']') else {
            return Err("missing ']' in host".to_owned());
        };
        &host[i + 1..]
    } else {
        host.rfind(':').map_or("", |i| &host[i..])
    };
    if !port_ok(colon_port) {
        return Err(format!("invalid port {} after host", quoted(colon_port)));
    }
    let b = unescape(host, Escape::Host)?;
    Ok(String::from_utf8_lossy(&b).into_owned())
}

/// Go's userinfo parse, then `Userinfo.String()`.
fn go_url_userinfo(userinfo: &str) -> Result<String, String> {
    let valid = userinfo.chars().all(|c| {
        c.is_ascii_alphanumeric()
            || matches!(
                c,
                '-' | '.'
                    | '_'
                    | ':'
                    | '~'
                    | '!'
                    | '$'
                    | '&'
                    | '\''
                    | '('
                    | ')'
                    | '*'
                    | '+'
                    | ','
                    | ';'
                    | '='
                    | '%'
                    | '@'
            )
    });
    if !valid {
        return Err("net/url: invalid userinfo".to_owned());
    }
    let escape = |b: &[u8]| -> String {
        let mut s = String::new();
        for &c in b {
            let keep = c.is_ascii_alphanumeric()
                || matches!(
                    c,
                    b'-' | b'_' | b'.' | b'~' | b'$' | b'&' | b'+' | b',' | b';' | b'='
                );
            if keep {
                s.push(c as char);
            } else {
                s.push_str(&format!("%{c:02X}"));
            }
        }
        s
    };
    Ok(match userinfo.split_once(':') {
        None => escape(unescape(userinfo, Escape::UserPassword)?.as_slice()),
        Some((user, password)) => format!(
            "{}:{}",
            escape(unescape(user, Escape::UserPassword)?.as_slice()),
            escape(unescape(password, Escape::UserPassword)?.as_slice())
        ),
    })
}

/// Go's `unescape`: `%XX` decoded; a bad escape, or a character a host may not have, refused.
fn unescape(s: &str, mode: Escape) -> Result<Vec<u8>, String> {
    let b = s.as_bytes();
    let hex = |c: u8| (c as char).to_digit(16).map(|d| d as u8);
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let digits = (
                b.get(i + 1).copied().and_then(hex),
                b.get(i + 2).copied().and_then(hex),
            );
            let (Some(hi), Some(lo)) = digits else {
                let end = (i + 3).min(b.len());
                return Err(format!(
                    "invalid URL escape {}",
                    quoted(&String::from_utf8_lossy(&b[i..end]))
                ));
            };
            if mode == Escape::Host && hi < 8 && &b[i..i + 3] != b"%25" {
                return Err(format!(
                    "invalid URL escape {}",
                    quoted(&String::from_utf8_lossy(&b[i..i + 3]))
                ));
            }
            out.push(hi << 4 | lo);
            i += 3;
            continue;
        }
        let c = b[i];
        if mode == Escape::Host && c < 0x80 && !host_char(c) {
            return Err(format!(
                "invalid character {} in host name",
                quoted(&(c as char).to_string())
            ));
        }
        out.push(c);
        i += 1;
    }
    Ok(out)
}

/// The ASCII characters Go's `shouldEscape` lets a host have unescaped.
fn host_char(c: u8) -> bool {
    c.is_ascii_alphanumeric()
        || matches!(
            c,
            b'!' | b'$'
                | b'&'
                | b'\''
                | b'('
                | b')'
                | b'*'
                | b'+'
                | b','
                | b';'
                | b'='
                | b':'
                | b'['
                | b']'
                | b'<'
                | b'>'
                | b'"'
                | b'-'
                | b'_'
                | b'.'
                | b'~'
        )
}

// ---------------------------------------------------------------------------
// ValidatingAdmissionPolicy and ValidatingAdmissionPolicyBinding
// ---------------------------------------------------------------------------

const VALIDATION_REASONS: &[&str] = &["Forbidden", "Invalid", "RequestEntityTooLarge"];
const VALIDATION_ACTIONS: &[&str] = &["Audit", "Deny", "Warn"];
/// kube's `maxAuditAnnotations` and `maxAuditAnnotationValueExpressionLength`.
const MAX_AUDIT_ANNOTATIONS: usize = 20;
const MAX_AUDIT_VALUE_EXPRESSION_BYTES: usize = 5 * 1024;

/// kube's `preexistingExpressions` of a stored policy.
#[derive(Default)]
struct Stored {
    conditions: HashSet<String>,
    validations: HashSet<String>,
    messages: HashSet<String>,
    audit_values: HashSet<String>,
}

impl Stored {
    /// kube's `findValidatingPolicyPreexistingExpressions`.
    fn of_policy(spec: &Value) -> Self {
        let collect = |list: &str, field: &str| -> HashSet<String> {
            items(spec, list)
                .iter()
                .map(|x| str_of(x, field).to_owned())
                .collect()
        };
        let mut messages = collect("validations", "messageExpression");
        messages.remove("");
        Self {
            conditions: collect("matchConditions", "expression"),
            validations: collect("validations", "expression"),
            messages,
            audit_values: collect("auditAnnotations", "valueExpression"),
        }
    }
}

/// A policy's `paramKind` as compared on update.
fn param_kind_key(spec: &Value) -> Option<(&str, &str)> {
    set(spec, "paramKind").map(|k| (str_of(k, "apiVersion"), str_of(k, "kind")))
}

/// What an update of a policy (validating or mutating) skips and keeps: its match conditions
/// are not checked again when they and `paramKind` are unchanged, and the expressions already
/// stored are not compiled again.
fn update_options(spec: &Value, old: Option<&Value>) -> (bool, Stored) {
    match old {
        None => (false, Stored::default()),
        Some(old) => {
            let old_spec = spec_of(old);
            (
                param_kind_key(spec) == param_kind_key(old_spec)
                    && condition_pairs(spec) == condition_pairs(old_spec),
                Stored::of_policy(old_spec),
            )
        }
    }
}

/// A policy's `failurePolicy`, `paramKind` and `matchConstraints` (with at least one resource
/// rule), checked alike for validating and mutating policies.
fn policy_constraints(spec: &Value, out: &mut Vec<Cause>) {
    if let Some(fp) = set(spec, "failurePolicy") {
        if !FAILURE_POLICIES.contains(&fp.as_str().unwrap_or("")) {
            out.push(not_supported("spec.failurePolicy", fp, FAILURE_POLICIES));
        }
    }
    if let Some(pk) = set(spec, "paramKind") {
        param_kind(pk, "spec.paramKind", out);
    }
    match set(spec, "matchConstraints") {
        None => out.push(required("spec.matchConstraints", "")),
        Some(mc) => {
            match_resources(Some(mc), "spec.matchConstraints", out);
            if items(mc, "resourceRules").is_empty() {
                out.push(required("spec.matchConstraints.resourceRules", ""));
            }
        }
    }
}

/// kube's `validateValidatingAdmissionPolicy` (create: `ValidateValidatingAdmissionPolicy`;
/// update: `ValidateValidatingAdmissionPolicyUpdate`, whose options skip the match conditions
/// when they and `paramKind` are unchanged).
fn policy(obj: &Value, old: Option<&Value>) -> Vec<Cause> {
    let spec = spec_of(obj);
    let (ignore_conditions, stored) = update_options(spec, old);
    let cel = Cel::compile(policy_sources(spec, ignore_conditions, &stored));
    let mut out = Vec::new();
    policy_spec(
        name_of(obj),
        spec,
        ignore_conditions,
        &stored,
        &cel,
        &mut out,
    );
    out
}

/// The expressions of a policy that are compiled (those not already stored), each as kube
/// compiles it.
fn policy_sources(spec: &Value, ignore_conditions: bool, stored: &Stored) -> Vec<String> {
    let mut out = Vec::new();
    if !ignore_conditions {
        for c in items(spec, "matchConditions") {
            let e = str_of(c, "expression").trim();
            if !stored.conditions.contains(e) {
                out.push(e.to_owned());
            }
        }
    }
    for v in items(spec, "variables") {
        let e = str_of(v, "expression");
        if !stored.validations.contains(e) {
            out.push(e.to_owned());
        }
    }
    for v in items(spec, "validations") {
        let e = str_of(v, "expression");
        if !stored.validations.contains(e) {
            out.push(e.to_owned());
        }
        let m = str_of(v, "messageExpression");
        if !stored.messages.contains(m) {
            out.push(m.to_owned());
        }
    }
    for a in items(spec, "auditAnnotations") {
        let raw = str_of(a, "valueExpression");
        let e = raw.trim();
        if e.len() <= MAX_AUDIT_VALUE_EXPRESSION_BYTES && !stored.audit_values.contains(raw) {
            out.push(e.to_owned());
        }
    }
    out
}

/// kube's `validateMutatingAdmissionPolicy` (create) and `...Update` (whose options skip the
/// match conditions when they and `paramKind` are unchanged). `failurePolicy` and the selectors
/// and `matchPolicy` of `matchConstraints` read as their defaults when absent.
fn mutating_policy(obj: &Value, old: Option<&Value>) -> Vec<Cause> {
    let spec = spec_of(obj);
    let (ignore_conditions, stored) = update_options(spec, old);
    // What kube compiles: match conditions, variables and the mutations' expressions (kube
    // looks a JSONPatch expression up among the stored apply configurations, so one that is
    // stored is compiled again).
    let stored_apply: HashSet<String> = old
        .map(|o| {
            items(spec_of(o), "mutations")
                .iter()
                .map(|m| mutation_expression(m, "applyConfiguration").to_owned())
                .collect()
        })
        .unwrap_or_default();
    let mut sources = policy_sources(spec, ignore_conditions, &stored);
    for m in items(spec, "mutations") {
        for body in ["applyConfiguration", "jsonPatch"] {
            let e = mutation_expression(m, body);
            if !stored_apply.contains(e) || body == "jsonPatch" {
                sources.push(e.trim().to_owned());
            }
        }
    }
    let cel = Cel::compile_mutation(sources);
    let mut out = Vec::new();
    policy_constraints(spec, &mut out);
    if let Some(mc) = set(spec, "matchConstraints") {
        mutating_operations(mc, "spec.matchConstraints", &mut out);
    }
    if !ignore_conditions {
        match_conditions(
            items(spec, "matchConditions"),
            "spec.matchConditions",
            &stored.conditions,
            &cel,
            &mut out,
        );
    }
    // kube never counts a mutating policy's variables as stored.
    let none = Stored::default();
    for (i, v) in items(spec, "variables").iter().enumerate() {
        variable(v, &index("spec.variables", i), &none, &cel, &mut out);
    }
    let mutations = items(spec, "mutations");
    if mutations.is_empty() {
        out.push(required(
            "spec.mutations",
            "mutations must contain at least one item",
        ));
    }
    for (i, m) in mutations.iter().enumerate() {
        mutation(
            m,
            &index("spec.mutations", i),
            &stored_apply,
            &cel,
            &mut out,
        );
    }
    // kube 1.34's v1beta1 requires it; turtles serves v1 and reads it absent as `Never`.
    let reinvocation = str_of(spec, "reinvocationPolicy");
    if !reinvocation.is_empty() && !matches!(reinvocation, "IfNeeded" | "Never") {
        out.push(not_supported(
            "spec.reinvocationPolicy",
            &json!(reinvocation),
            &["IfNeeded", "Never"],
        ));
    }
    out
}

/// The expression of a mutation's `applyConfiguration` or `jsonPatch` (empty when absent).
fn mutation_expression<'a>(m: &'a Value, body: &str) -> &'a str {
    set(m, body).map_or("", |b| str_of(b, "expression"))
}

/// kube: a mutating policy (or binding) may not match DELETE (reported at `operations`, one per
/// rule that names it).
fn mutating_operations(mr: &Value, path: &str, out: &mut Vec<Cause>) {
    let p = format!("{path}.resourceRules.operations");
    for r in items(mr, "resourceRules") {
        for op in strings(r, "operations") {
            if !matches!(op.as_str(), "*" | "CONNECT" | "CREATE" | "UPDATE") {
                out.push(not_supported(
                    &p,
                    &json!(op),
                    &["*", "CONNECT", "CREATE", "UPDATE"],
                ));
            }
        }
    }
}

/// kube's `validateMutation`.
fn mutation(
    m: &Value,
    path: &str,
    stored_apply: &HashSet<String>,
    cel: &Cel,
    out: &mut Vec<Cause>,
) {
    let patch_type = str_of(m, "patchType");
    let pt_path = child(path, "patchType");
    let (want, other) = match patch_type {
        "" => {
            out.push(required(&pt_path, ""));
            return;
        }
        "JSONPatch" => ("jsonPatch", "applyConfiguration"),
        "ApplyConfiguration" => ("applyConfiguration", "jsonPatch"),
        _ => {
            out.push(not_supported(
                &pt_path,
                &json!(patch_type),
                &["ApplyConfiguration", "JSONPatch"],
            ));
            return;
        }
    };
    match set(m, want) {
        None => out.push(required(
            &child(path, want),
            &format!("must be specified when patchType is {patch_type}"),
        )),
        Some(body) => {
            let expr = str_of(body, "expression");
            let ep = child(&child(path, want), "expression");
            let trimmed = expr.trim();
            if trimmed.is_empty() {
                out.push(required(&ep, ""));
            } else if want == "jsonPatch" || !stored_apply.contains(expr) {
                if let Some(e) = cel.error(trimmed) {
                    out.push(invalid_str(&ep, trimmed, e));
                }
            }
        }
    }
    if set(m, other).is_some() {
        out.push(invalid_str(
            &child(path, other),
            &format!("{{{other}}}"),
            &format!("must not be specified when patchType is {patch_type}"),
        ));
    }
}

/// kube's `validateMutatingAdmissionPolicyBinding`: the validating binding's checks but for
/// `validationActions`, and no DELETE.
fn mutating_policy_binding(obj: &Value) -> Vec<Cause> {
    let spec = spec_of(obj);
    let mut out = binding_policy_and_params(spec);
    if let Some(mr) = set(spec, "matchResources") {
        match_resources(Some(mr), "spec.matchResources", &mut out);
        mutating_operations(mr, "spec.matchResources", &mut out);
    }
    out
}

/// kube's `validateValidatingAdmissionPolicySpec` (`failurePolicy` and the selectors and
/// `matchPolicy` of `matchConstraints` read as their v1 defaults when absent).
fn policy_spec(
    name: &str,
    spec: &Value,
    ignore_conditions: bool,
    stored: &Stored,
    cel: &Cel,
    out: &mut Vec<Cause>,
) {
    policy_constraints(spec, out);
    if !ignore_conditions {
        match_conditions(
            items(spec, "matchConditions"),
            "spec.matchConditions",
            &stored.conditions,
            cel,
            out,
        );
    }
    for (i, v) in items(spec, "variables").iter().enumerate() {
        variable(v, &index("spec.variables", i), stored, cel, out);
    }
    let validations = items(spec, "validations");
    let audits = items(spec, "auditAnnotations");
    if validations.is_empty() && audits.is_empty() {
        let msg = "validations or auditAnnotations must contain at least one item";
        out.push(required("spec.validations", msg));
        out.push(required("spec.auditAnnotations", msg));
        return;
    }
    for (i, v) in validations.iter().enumerate() {
        validation(v, &index("spec.validations", i), stored, cel, out);
    }
    if set(spec, "auditAnnotations").is_some() {
        if audits.len() > MAX_AUDIT_ANNOTATIONS {
            // kube reports the `[]admissionregistration.AuditAnnotation`.
            let shown: Vec<Value> = audits
                .iter()
                .map(|a| {
                    go_struct(
                        Some(a),
                        &[
                            ("Key", "key", Go::Str),
                            ("ValueExpression", "valueExpression", Go::Str),
                        ],
                    )
                })
                .collect();
            out.push(invalid(
                "spec.auditAnnotations",
                &Value::Array(shown),
                &format!("must not have more than {MAX_AUDIT_ANNOTATIONS} auditAnnotations"),
            ));
        }
        let mut keys = HashSet::new();
        for (i, a) in audits.iter().enumerate() {
            let p = index("spec.auditAnnotations", i);
            audit_annotation(name, a, &p, stored, cel, out);
            let key = str_of(a, "key");
            if !keys.insert(key) {
                out.push(duplicate(&child(&p, "key"), &json!(key)));
            }
        }
    }
}

/// kube's `validateParamKind`.
fn param_kind(pk: &Value, path: &str, out: &mut Vec<Cause>) {
    let av = str_of(pk, "apiVersion");
    let av_path = child(path, "apiVersion");
    if av.is_empty() {
        out.push(required(&av_path, ""));
    } else {
        // kube's `parseGroupVersion`.
        let gv = if av == "/" {
            Ok(("", ""))
        } else {
            match av.matches('/').count() {
                0 => Ok(("", av)),
                1 => Ok(av.split_once('/').unwrap_or(("", av))),
                _ => Err(format!("unexpected GroupVersion string: {av}")),
            }
        };
        match gv {
            Err(e) => out.push(invalid_str(&av_path, av, &e)),
            Ok((group, version)) => {
                if !group.is_empty() {
                    let errs = dns1123_subdomain(group);
                    if !errs.is_empty() {
                        out.push(invalid_str(&av_path, group, &errs.join(",")));
                    }
                }
                if version.is_empty() {
                    out.push(invalid_str(&av_path, av, "version must be specified"));
                } else {
                    let errs = dns1035_label(version);
                    if !errs.is_empty() {
                        out.push(invalid_str(&av_path, version, &errs.join(",")));
                    }
                }
            }
        }
    }
    let kind = str_of(pk, "kind");
    if kind.is_empty() {
        out.push(required(&child(path, "kind"), ""));
    } else {
        let errs = dns1035_label(&kind.to_lowercase());
        if !errs.is_empty() {
            out.push(invalid_str(
                &child(path, "kind"),
                kind,
                &format!(
                    "may have mixed case, but should otherwise match: {}",
                    errs.join(",")
                ),
            ));
        }
    }
}

/// kube's `validateMatchResources` (`matchPolicy` and the selectors read as their v1 defaults
/// when absent: kube's defaulting always sets them).
fn match_resources(mc: Option<&Value>, path: &str, out: &mut Vec<Cause>) {
    let Some(mc) = mc else {
        return;
    };
    if let Some(mp) = set(mc, "matchPolicy") {
        if !MATCH_POLICIES.contains(&mp.as_str().unwrap_or("")) {
            out.push(not_supported(
                &child(path, "matchPolicy"),
                mp,
                MATCH_POLICIES,
            ));
        }
    }
    for s in ["namespaceSelector", "objectSelector"] {
        if let Some(sel) = set(mc, s) {
            label_selector(sel, &child(path, s), false, out);
        }
    }
    for list in ["resourceRules", "excludeResourceRules"] {
        for (i, r) in items(mc, list).iter().enumerate() {
            named_rule_with_operations(r, &index(&child(path, list), i), out);
        }
    }
}

/// kube's `validateNamedRuleWithOperations`.
fn named_rule_with_operations(r: &Value, path: &str, out: &mut Vec<Cause>) {
    let names_path = child(path, "resourceNames");
    let mut names = HashSet::new();
    for (i, n) in items(r, "resourceNames").iter().enumerate() {
        let n = n.as_str().unwrap_or("");
        for m in path_segment_name(n) {
            out.push(invalid_str(&index(&names_path, i), n, &m));
        }
        if !names.insert(n) {
            out.push(duplicate(&index(&names_path, i), &json!(n)));
        }
    }
    rule_with_operations(r, path, out);
}

/// CEL's identifiers (`[_a-zA-Z][_a-zA-Z0-9]*`) that are not reserved (kube's
/// `isCELIdentifier`).
fn is_cel_identifier(name: &str) -> bool {
    const RESERVED: &[&str] = &[
        "true",
        "false",
        "null",
        "in",
        "as",
        "break",
        "const",
        "continue",
        "else",
        "for",
        "function",
        "if",
        "import",
        "let",
        "loop",
        "package",
        "namespace",
        "return",
        "var",
        "void",
        "while",
    ];
    let b = name.as_bytes();
    !b.is_empty()
        && (b[0].is_ascii_alphabetic() || b[0] == b'_')
        && b.iter().all(|c| c.is_ascii_alphanumeric() || *c == b'_')
        && !RESERVED.contains(&name)
}

/// kube's `validateVariable`.
fn variable(v: &Value, path: &str, stored: &Stored, cel: &Cel, out: &mut Vec<Cause>) {
    let name = str_of(v, "name");
    if name.trim().is_empty() {
        out.push(required(&child(path, "name"), "name is not specified"));
    } else if !is_cel_identifier(name) {
        out.push(invalid_str(
            &child(path, "name"),
            name,
            "name is not a valid CEL identifier",
        ));
    }
    let expr = str_of(v, "expression");
    if expr.trim().is_empty() {
        out.push(required(
            &child(path, "expression"),
            "expression is not specified",
        ));
    } else if !stored.validations.contains(expr) {
        if let Some(e) = cel.error(expr) {
            out.push(invalid_str(&child(path, "expression"), expr, e));
        }
    }
}

/// kube's `validateValidation`.
fn validation(v: &Value, path: &str, stored: &Stored, cel: &Cel, out: &mut Vec<Cause>) {
    let expr = str_of(v, "expression");
    if expr.trim().is_empty() {
        out.push(required(
            &child(path, "expression"),
            "expression is not specified",
        ));
    } else if !stored.validations.contains(expr) {
        if let Some(e) = cel.error(expr) {
            out.push(invalid_str(&child(path, "expression"), expr, e));
        }
    }
    let me = str_of(v, "messageExpression");
    let me_path = child(path, "messageExpression");
    if !me.is_empty() && me.trim().is_empty() {
        out.push(invalid_str(&me_path, me, "must be non-empty if specified"));
    } else if !me.trim().is_empty() && !stored.messages.contains(me) {
        if let Some(e) = cel.error(me) {
            out.push(invalid_str(&me_path, me, e));
        } else if cel.names_authorizer(me) {
            // A message expression has no `authorizer` (as `admission::policy` compiles it).
            out.push(invalid_str(
                &me_path,
                me,
                "compilation failed: ERROR: <input>: undeclared reference to 'authorizer' (in container '')",
            ));
        }
    }
    let msg = str_of(v, "message");
    let trimmed = msg.trim();
    if !msg.is_empty() && trimmed.is_empty() {
        out.push(invalid_str(
            &child(path, "message"),
            msg,
            "message must be non-empty if specified",
        ));
    } else if trimmed.contains(['\n', '\r']) {
        out.push(invalid_str(
            &child(path, "message"),
            msg,
            "message must not contain line breaks",
        ));
    }
    if let Some(reason) = set(v, "reason") {
        if !VALIDATION_REASONS.contains(&reason.as_str().unwrap_or("")) {
            out.push(not_supported(
                &child(path, "reason"),
                reason,
                VALIDATION_REASONS,
            ));
        }
    }
}

/// kube's `validateAuditAnnotation`.
fn audit_annotation(
    policy_name: &str,
    a: &Value,
    path: &str,
    stored: &Stored,
    cel: &Cel,
    out: &mut Vec<Cause>,
) {
    let key = str_of(a, "key");
    let key_path = child(path, "key");
    if policy_name.is_empty() {
        out.push(invalid_str(
            &key_path,
            key,
            "requires metadata.name be non-empty",
        ));
    } else {
        let full = format!("{policy_name}/{key}");
        for m in qualified_name(&full) {
            out.push(invalid_str(&key_path, &full, &m));
        }
    }
    let raw = str_of(a, "valueExpression");
    let expr = raw.trim();
    let value_path = child(path, "valueExpression");
    if expr.is_empty() {
        out.push(required(&value_path, "valueExpression is not specified"));
    } else if expr.len() > MAX_AUDIT_VALUE_EXPRESSION_BYTES {
        out.push(required(
            &value_path,
            &format!("must not exceed {MAX_AUDIT_VALUE_EXPRESSION_BYTES} bytes in length"),
        ));
    } else if !stored.audit_values.contains(raw) {
        if let Some(e) = cel.error(expr) {
            out.push(invalid_str(&value_path, raw, e));
        }
    }
}

/// kube's `ValidateValidatingAdmissionPolicyStatusUpdate` (`validateValidatingAdmissionPolicyStatus`):
/// the type-checking warnings and the conditions. A warning's `fieldRef` is not parsed as a
/// JSONPath here.
fn policy_status(status: &Value, out: &mut Vec<Cause>) {
    if let Some(tc) = set(status, "typeChecking") {
        for (i, w) in items(tc, "expressionWarnings").iter().enumerate() {
            let p = index("status.typeChecking.expressionWarnings", i);
            if str_of(w, "warning").is_empty() {
                out.push(required(&child(&p, "warning"), ""));
            }
            if str_of(w, "fieldRef").trim().is_empty() {
                out.push(required(&child(&p, "fieldRef"), ""));
            }
        }
    }
    conditions(items(status, "conditions"), "status.conditions", out);
}

/// kube's `validateValidatingAdmissionPolicyBinding` (create and update alike).
fn policy_binding(obj: &Value) -> Vec<Cause> {
    let spec = spec_of(obj);
    let mut out = binding_policy_and_params(spec);
    // kube's path has this spelling.
    match_resources(set(spec, "matchResources"), "spec.matchResouces", &mut out);
    validation_actions(
        &strings(spec, "validationActions"),
        "spec.validationActions",
        &mut out,
    );
    out
}

/// A binding's `policyName` (required, a DNS subdomain) and `paramRef`, checked alike for
/// validating and mutating policies.
fn binding_policy_and_params(spec: &Value) -> Vec<Cause> {
    let mut out = Vec::new();
    let policy_name = str_of(spec, "policyName");
    if policy_name.is_empty() {
        out.push(required("spec.policyName", ""));
    } else {
        for m in dns1123_subdomain(policy_name) {
            out.push(invalid_str("spec.policyName", policy_name, &m));
        }
    }
    if let Some(pr) = set(spec, "paramRef") {
        param_ref(pr, "spec.paramRef", &mut out);
    }
    out
}

/// kube's `validateParamRef`.
fn param_ref(pr: &Value, path: &str, out: &mut Vec<Cause>) {
    const EXCLUSIVE: &str = "name and selector are mutually exclusive";
    let name = str_of(pr, "name");
    let selector = set(pr, "selector");
    if !name.is_empty() {
        for m in path_segment_name(name) {
            out.push(invalid_str(&child(path, "name"), name, &m));
        }
        if selector.is_some() {
            out.push(forbidden(&child(path, "name"), EXCLUSIVE));
        }
    }
    if let Some(sel) = selector {
        label_selector(sel, &child(path, "selector"), false, out);
        if !name.is_empty() {
            out.push(forbidden(&child(path, "selector"), EXCLUSIVE));
        }
    }
    if name.is_empty() && selector.is_none() {
        out.push(required(path, "one of name or selector must be specified"));
    }
    let action = str_of(pr, "parameterNotFoundAction");
    let action_path = child(path, "parameterNotFoundAction");
    if action.is_empty() {
        out.push(required(&action_path, ""));
    } else if !matches!(action, "Deny" | "Allow") {
        out.push(not_supported(
            &action_path,
            &json!(action),
            &["Deny", "Allow"],
        ));
    }
}

/// kube's `validateValidationActions`.
fn validation_actions(actions: &[String], path: &str, out: &mut Vec<Cause>) {
    let mut seen = HashSet::new();
    for (i, a) in actions.iter().enumerate() {
        if !VALIDATION_ACTIONS.contains(&a.as_str()) {
            out.push(not_supported(
                &index(path, i),
                &json!(a),
                VALIDATION_ACTIONS,
            ));
        }
        if !seen.insert(a.as_str()) {
            out.push(duplicate(&index(path, i), &json!(a)));
        }
    }
    if seen.contains("Deny") && seen.contains("Warn") {
        out.push(invalid(
            path,
            &list_value(actions),
            "must not contain both Deny and Warn (repeating the same validation failure information in the API response and headers serves no purpose)",
        ));
    }
    if seen.is_empty() {
        out.push(required(path, "at least one validation action is required"));
    }
}

// ---------------------------------------------------------------------------
// FlowSchema and PriorityLevelConfiguration (pkg/apis/flowcontrol/validation)
// ---------------------------------------------------------------------------

const VERBS: &[&str] = &[
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "proxy",
    "update",
    "watch",
];
/// kube's `FlowSchemaMaxMatchingPrecedence`.
const MAX_MATCHING_PRECEDENCE: i64 = 10000;
const MAX_QUEUES: i64 = 10_000_000;
/// shufflesharding's `MaxHashBits`.
const MAX_HASH_BITS: f64 = 60.0;
const NS_ERR_INTRO: &str = "each member of this list must be '*' or a DNS-1123 label; ";
/// v1beta3's `PriorityLevelPreserveZeroConcurrencySharesKey`.
const PRESERVE_ZERO_SHARES: &str = "flowcontrol.k8s.io/v1beta3-preserve-zero-concurrency-shares";

/// A FlowSchema's `matchingPrecedence` (v1 defaults an absent or zero value to 1000; the write
/// path has applied `builtin::defaults` already, this is for a spec validated as it is).
fn matching_precedence(spec: &Value) -> i64 {
    int(spec, "matchingPrecedence")
        .filter(|v| *v != 0)
        .unwrap_or(defaults::DEFAULT_MATCHING_PRECEDENCE)
}

/// kube's `ValidateFlowSchema` (create; `ValidateFlowSchemaUpdate` is the same): the spec, the
/// mandatory objects' fixed specs, the status.
fn flow_schema(obj: &Value) -> Vec<Cause> {
    let name = name_of(obj);
    let spec = spec_of(obj);
    let mut out = Vec::new();
    flow_schema_spec(name, spec, &mut out);
    if let Some(fixed) = mandatory_flow_schema(name) {
        if flow_schema_canonical(spec) != flow_schema_canonical(&fixed) {
            // kube prints the defaulted internal spec; here the JSON sent (see above).
            out.push(invalid(
                "spec",
                obj.get("spec").unwrap_or(&json!({})),
                &format!("spec of '{name}' must equal the fixed value"),
            ));
        }
    }
    flowcontrol_status(obj.get("status").unwrap_or(&NULL), "status", &mut out);
    out
}

/// kube's `ValidateFlowSchemaSpec`.
fn flow_schema_spec(name: &str, spec: &Value, out: &mut Vec<Cause>) {
    let mp = matching_precedence(spec);
    let mp_path = "spec.matchingPrecedence";
    if mp <= 0 {
        out.push(invalid(mp_path, &json!(mp), "must be a positive value"));
    }
    if mp > MAX_MATCHING_PRECEDENCE {
        out.push(invalid(
            mp_path,
            &json!(mp),
            &format!("must not be greater than {MAX_MATCHING_PRECEDENCE}"),
        ));
    }
    if mp == 1 && name != "exempt" {
        out.push(invalid(
            mp_path,
            &json!(mp),
            "only the schema named 'exempt' may have matchingPrecedence 1",
        ));
    }
    if let Some(dm) = set(spec, "distinguisherMethod") {
        if !matches!(str_of(dm, "type"), "ByNamespace" | "ByUser") {
            // kube reports the whole `*flowcontrol.FlowDistinguisherMethod`.
            out.push(not_supported(
                "spec.distinguisherMethod.type",
                &go_struct(Some(dm), &[("Type", "type", Go::Str)]),
                &["ByNamespace", "ByUser"],
            ));
        }
    }
    let plc = str_of(
        spec.get("priorityLevelConfiguration").unwrap_or(&NULL),
        "name",
    );
    let plc_path = "spec.priorityLevelConfiguration.name";
    if plc.is_empty() {
        out.push(required(plc_path, "must reference a priority level"));
    } else {
        for m in dns1123_subdomain(plc) {
            out.push(invalid_str(plc_path, plc, &m));
        }
    }
    for (i, r) in items(spec, "rules").iter().enumerate() {
        policy_rules_with_subjects(r, &index("spec.rules", i), out);
    }
}

/// kube's `ValidateFlowSchemaPolicyRulesWithSubjects`.
fn policy_rules_with_subjects(r: &Value, path: &str, out: &mut Vec<Cause>) {
    let subjects = items(r, "subjects");
    if subjects.is_empty() {
        out.push(required(
            &child(path, "subjects"),
            "subjects must contain at least one value",
        ));
    }
    for (i, s) in subjects.iter().enumerate() {
        subject(s, &index(&child(path, "subjects"), i), out);
    }
    let resource_rules = items(r, "resourceRules");
    let non_resource_rules = items(r, "nonResourceRules");
    if resource_rules.is_empty() && non_resource_rules.is_empty() {
        out.push(required(
            path,
            "at least one of resourceRules and nonResourceRules has to be non-empty",
        ));
    }
    for (i, rr) in resource_rules.iter().enumerate() {
        resource_policy_rule(rr, &index(&child(path, "resourceRules"), i), out);
    }
    for (i, nr) in non_resource_rules.iter().enumerate() {
        non_resource_policy_rule(nr, &index(&child(path, "nonResourceRules"), i), out);
    }
}

/// kube's `ValidateFlowSchemaSubject` (with `ValidateServiceAccountSubject`,
/// `ValidateUserSubject`, `ValidateGroupSubject`).
fn subject(s: &Value, path: &str, out: &mut Vec<Cause>) {
    const NOT_USER: &str = "user is forbidden when subject kind is not 'User'";
    const NOT_GROUP: &str = "group is forbidden when subject kind is not 'Group'";
    const NOT_SA: &str = "serviceAccount is forbidden when subject kind is not 'ServiceAccount'";
    let kind = str_of(s, "kind");
    let named = |field: &str, what: &str, out: &mut Vec<Cause>| match set(s, field) {
        None => out.push(required(
            &child(path, field),
            &format!("{what} is required when subject kind is '{}'", kind),
        )),
        Some(x) => {
            if str_of(x, "name").is_empty() {
                out.push(required(&child(&child(path, field), "name"), ""));
            }
        }
    };
    match kind {
        "ServiceAccount" => {
            let p = child(path, "serviceAccount");
            match set(s, "serviceAccount") {
                None => out.push(required(
                    &p,
                    "serviceAccount is required when subject kind is 'ServiceAccount'",
                )),
                Some(sa) => {
                    let name = str_of(sa, "name");
                    if name.is_empty() {
                        out.push(required(&child(&p, "name"), ""));
                    } else if name != "*" {
                        for m in dns1123_subdomain(name) {
                            out.push(invalid_str(&child(&p, "name"), name, &m));
                        }
                    }
                    let ns = str_of(sa, "namespace");
                    if ns.is_empty() {
                        out.push(required(
                            &child(&p, "namespace"),
                            "must specify namespace for service account",
                        ));
                    } else {
                        for m in dns1123_label(ns) {
                            out.push(invalid_str(&child(&p, "namespace"), ns, &m));
                        }
                    }
                }
            }
            if set(s, "user").is_some() {
                out.push(forbidden(&child(path, "user"), NOT_USER));
            }
            if set(s, "group").is_some() {
                out.push(forbidden(&child(path, "group"), NOT_GROUP));
            }
        }
        "User" => {
            named("user", "user", out);
            if set(s, "serviceAccount").is_some() {
                out.push(forbidden(&child(path, "serviceAccount"), NOT_SA));
            }
            if set(s, "group").is_some() {
                out.push(forbidden(&child(path, "group"), NOT_GROUP));
            }
        }
        "Group" => {
            named("group", "group", out);
            if set(s, "serviceAccount").is_some() {
                out.push(forbidden(&child(path, "serviceAccount"), NOT_SA));
            }
            if set(s, "user").is_some() {
                out.push(forbidden(&child(path, "user"), NOT_USER));
            }
        }
        _ => out.push(not_supported(
            &child(path, "kind"),
            &json!(kind),
            &["Group", "ServiceAccount", "User"],
        )),
    }
}

/// The verbs check shared by kube's resource and non-resource policy rules.
fn policy_verbs(r: &Value, path: &str, out: &mut Vec<Cause>) {
    let verbs = strings(r, "verbs");
    let p = child(path, "verbs");
    if verbs.is_empty() {
        out.push(required(&p, "verbs must contain at least one value"));
    } else if has_wildcard(&verbs) {
        if verbs.len() > 1 {
            out.push(invalid(
                &p,
                &list_value(&verbs),
                "if '*' is present, must not specify other verbs",
            ));
        }
    } else if !verbs.iter().all(|v| VERBS.contains(&v.as_str())) {
        out.push(not_supported(&p, &list_value(&verbs), VERBS));
    }
}

/// kube's `ValidateFlowSchemaNonResourcePolicyRule`.
fn non_resource_policy_rule(r: &Value, path: &str, out: &mut Vec<Cause>) {
    policy_verbs(r, path, out);
    let urls = strings(r, "nonResourceURLs");
    let p = child(path, "nonResourceURLs");
    if urls.is_empty() {
        out.push(required(
            &p,
            "nonResourceURLs must contain at least one value",
        ));
    } else if has_wildcard(&urls) {
        if urls.len() > 1 {
            out.push(invalid(
                &p,
                &list_value(&urls),
                "if '*' is present, must not specify other non-resource URLs",
            ));
        }
    } else {
        for (i, u) in urls.iter().enumerate() {
            if let Some(why) = non_resource_url_path(u) {
                out.push(invalid_str(&index(&p, i), u, why));
            }
        }
    }
}

/// kube's `ValidateNonResourceURLPath`: why `path` is not one.
fn non_resource_url_path(path: &str) -> Option<&'static str> {
    if path.is_empty() {
        return Some("must not be empty");
    }
    if path == "/" {
        return None;
    }
    if !path.starts_with('/') {
        return Some("must start with slash");
    }
    if path.contains(' ') {
        return Some("must not contain white-space");
    }
    if path.contains("//") {
        return Some("must not contain double slash");
    }
    let wildcards = path.matches('*').count();
    if wildcards > 1 || (wildcards == 1 && !path.ends_with("/*")) {
        return Some("wildcard can only do suffix matching");
    }
    None
}

/// kube's `ValidateFlowSchemaResourcePolicyRule`.
fn resource_policy_rule(r: &Value, path: &str, out: &mut Vec<Cause>) {
    policy_verbs(r, path, out);
    let groups = strings(r, "apiGroups");
    let gp = child(path, "apiGroups");
    if groups.is_empty() {
        out.push(required(
            &gp,
            "resource rules must supply at least one api group",
        ));
    } else if groups.len() > 1 && has_wildcard(&groups) {
        out.push(invalid(
            &gp,
            &list_value(&groups),
            "if '*' is present, must not specify other api groups",
        ));
    }
    let res = strings(r, "resources");
    let rp = child(path, "resources");
    if res.is_empty() {
        out.push(required(
            &rp,
            "resource rules must supply at least one resource",
        ));
    } else if res.len() > 1 && has_wildcard(&res) {
        out.push(invalid(
            &rp,
            &list_value(&res),
            "if '*' is present, must not specify other resources",
        ));
    }
    let namespaces = strings(r, "namespaces");
    let np = child(path, "namespaces");
    let cluster_scope = r
        .get("clusterScope")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    if namespaces.is_empty() && !cluster_scope {
        out.push(required(
            &np,
            "resource rules that are not cluster scoped must supply at least one namespace",
        ));
    } else if has_wildcard(&namespaces) {
        if namespaces.len() > 1 {
            out.push(invalid(
                &np,
                &list_value(&namespaces),
                "if '*' is present, must not specify other namespaces",
            ));
        }
    } else {
        for (i, ns) in namespaces.iter().enumerate() {
            for m in dns1123_label(ns) {
                out.push(invalid_str(
                    &index(&np, i),
                    ns,
                    &format!("{NS_ERR_INTRO}{m}"),
                ));
            }
        }
    }
}

/// kube's `ValidateFlowSchemaStatus` / `ValidatePriorityLevelConfigurationStatus` (the
/// status-update validation of both kinds is this alone).
fn flowcontrol_status(status: &Value, path: &str, out: &mut Vec<Cause>) {
    let mut seen = HashSet::new();
    for (i, c) in items(status, "conditions").iter().enumerate() {
        let p = index(&child(path, "conditions"), i);
        let t = str_of(c, "type");
        if !seen.insert(t) {
            out.push(duplicate(&child(&p, "type"), &json!(t)));
        }
        if t.is_empty() {
            out.push(required(&child(&p, "type"), "must not be empty"));
        }
    }
}

/// The everything-matching rules of the mandatory FlowSchemas, for `subjects`.
fn mandatory_rules(subjects: Value) -> Value {
    json!([{
        "subjects": subjects,
        "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"],
                           "clusterScope": true, "namespaces": ["*"]}],
        "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}],
    }])
}

/// The spec of kube's mandatory FlowSchema `name` (`internalbootstrap.MandatoryFlowSchemas`).
fn mandatory_flow_schema(name: &str) -> Option<Value> {
    let group = |g: &str| json!({"kind": "Group", "group": {"name": g}});
    match name {
        "exempt" => Some(json!({
            "matchingPrecedence": 1,
            "priorityLevelConfiguration": {"name": "exempt"},
            "rules": mandatory_rules(json!([group("system:masters")])),
        })),
        "catch-all" => Some(json!({
            "matchingPrecedence": 10000,
            "priorityLevelConfiguration": {"name": "catch-all"},
            "distinguisherMethod": {"type": "ByUser"},
            "rules": mandatory_rules(json!([
                group("system:unauthenticated"),
                group("system:authenticated")
            ])),
        })),
        _ => None,
    }
}

/// A FlowSchema spec as kube's `Semantic.DeepEqual` compares the internal one: v1's defaults
/// applied (`builtin::defaults::flow_schema_spec`, what every write applies), absent and empty
/// lists alike, unset pointers `null`. Also what the APF bootstrap ensurer compares
/// (`builtin::flowcontrol_bootstrap`, kube's `flowSchemaSpecEqual`).
pub(crate) fn flow_schema_canonical(spec: &Value) -> Value {
    let mut spec = spec.clone();
    defaults::flow_schema_spec(&mut spec);
    let spec = &spec;
    let list = |v: &Value, f: &str| list_value(&strings(v, f));
    let named = |v: &Value, f: &str| set(v, f).map(|x| json!({"name": str_of(x, "name")}));
    let rules: Vec<Value> = items(spec, "rules")
        .iter()
        .map(|r| {
            json!({
                "subjects": items(r, "subjects").iter().map(|s| json!({
                    "kind": str_of(s, "kind"),
                    "user": named(s, "user"),
                    "group": named(s, "group"),
                    "serviceAccount": set(s, "serviceAccount").map(|a| json!({
                        "namespace": str_of(a, "namespace"), "name": str_of(a, "name")})),
                })).collect::<Vec<_>>(),
                "resourceRules": items(r, "resourceRules").iter().map(|x| json!({
                    "verbs": list(x, "verbs"),
                    "apiGroups": list(x, "apiGroups"),
                    "resources": list(x, "resources"),
                    "clusterScope": x.get("clusterScope").and_then(Value::as_bool).unwrap_or(false),
                    "namespaces": list(x, "namespaces"),
                })).collect::<Vec<_>>(),
                "nonResourceRules": items(r, "nonResourceRules").iter().map(|x| json!({
                    "verbs": list(x, "verbs"),
                    "nonResourceURLs": list(x, "nonResourceURLs"),
                })).collect::<Vec<_>>(),
            })
        })
        .collect();
    json!({
        "matchingPrecedence": int(spec, "matchingPrecedence"),
        "priorityLevelConfiguration": str_of(spec.get("priorityLevelConfiguration").unwrap_or(&NULL), "name"),
        "distinguisherMethod": set(spec, "distinguisherMethod").map(|d| str_of(d, "type").to_owned()),
        "rules": rules,
    })
}

/// A PriorityLevelConfiguration spec with v1's defaults applied
/// (`builtin::defaults::priority_level_spec`, what every write applies: absent shares 30 for a
/// limited level and 0 for the exempt one, absent `lendablePercent` 0, absent or zero queuing
/// parameters 64, 8, 50), unset pointers `null`: what kube's `Semantic.DeepEqual` compares in
/// the APF bootstrap ensurer (`plcSpecEqualish`, which defaults the expected spec; the stored one
/// was defaulted when written, or as it is read).
pub(crate) fn priority_level_canonical(spec: &Value) -> Value {
    let mut spec = spec.clone();
    defaults::priority_level_spec(&mut spec);
    let spec = &spec;
    let queuing = |q: &Value| {
        json!({
            "queues": int(q, "queues"),
            "handSize": int(q, "handSize"),
            "queueLengthLimit": int(q, "queueLengthLimit"),
        })
    };
    json!({
        "type": str_of(spec, "type"),
        "limited": set(spec, "limited").map(|l| {
            let lr = l.get("limitResponse").unwrap_or(&NULL);
            json!({
                "nominalConcurrencyShares": int(l, "nominalConcurrencyShares"),
                "limitResponse": {
                    "type": str_of(lr, "type"),
                    "queuing": set(lr, "queuing").map(queuing),
                },
                "lendablePercent": int(l, "lendablePercent"),
                "borrowingLimitPercent": int(l, "borrowingLimitPercent"),
            })
        }),
        "exempt": set(spec, "exempt").map(|e| json!({
            "nominalConcurrencyShares": int(e, "nominalConcurrencyShares"),
            "lendablePercent": int(e, "lendablePercent"),
        })),
    })
}

/// kube's `ValidatePriorityLevelConfiguration` as the strategy runs it on create and update
/// (`AllowZeroLimitedNominalConcurrencyShares`; v1 field names): the round-trip annotation, the
/// spec, the mandatory objects' fixed specs, the status.
fn priority_level(obj: &Value) -> Vec<Cause> {
    let name = name_of(obj);
    let spec = spec_of(obj);
    let mut out = Vec::new();
    if obj
        .pointer("/metadata/annotations")
        .and_then(Value::as_object)
        .is_some_and(|a| a.contains_key(PRESERVE_ZERO_SHARES))
    {
        out.push(forbidden(
            "metadata.annotations",
            &format!("annotation '{PRESERVE_ZERO_SHARES}' is forbidden"),
        ));
    }
    priority_level_spec(name, spec, &mut out);
    mandatory_priority_level(name, obj, &mut out);
    flowcontrol_status(obj.get("status").unwrap_or(&NULL), "status", &mut out);
    out
}

/// kube's `ValidatePriorityLevelConfigurationSpec`.
fn priority_level_spec(name: &str, spec: &Value, out: &mut Vec<Cause>) {
    let t = str_of(spec, "type");
    if (name == "exempt") != (t == "Exempt") {
        out.push(invalid_str(
            "spec.type",
            t,
            "type must be 'Exempt' if and only if name is 'exempt'",
        ));
    }
    match t {
        "Exempt" => {
            if set(spec, "limited").is_some() {
                out.push(forbidden(
                    "spec.limited",
                    "must be nil if the type is not Limited",
                ));
            }
            if let Some(e) = set(spec, "exempt") {
                exempt_priority_level(e, "spec.exempt", out);
            }
        }
        "Limited" => {
            if set(spec, "exempt").is_some() {
                out.push(forbidden(
                    "spec.exempt",
                    "must be nil if the type is Limited",
                ));
            }
            match set(spec, "limited") {
                None => out.push(required(
                    "spec.limited",
                    "must not be empty when type is Limited",
                )),
                Some(l) => limited_priority_level(l, "spec.limited", out),
            }
        }
        _ => out.push(not_supported(
            "spec.type",
            &json!(t),
            &["Exempt", "Limited"],
        )),
    }
}

/// A limited level's `nominalConcurrencyShares` (v1 defaults an absent value to 30; the write
/// path has applied `builtin::defaults` already, this is for a spec validated as it is).
fn nominal_shares(l: &Value) -> i64 {
    int(l, "nominalConcurrencyShares").unwrap_or(defaults::DEFAULT_NOMINAL_SHARES)
}

/// kube's `ValidateLimitedPriorityLevelConfiguration` (zero shares allowed).
fn limited_priority_level(l: &Value, path: &str, out: &mut Vec<Cause>) {
    let shares = nominal_shares(l);
    if shares < 0 {
        out.push(invalid(
            &child(path, "nominalConcurrencyShares"),
            &json!(shares),
            "must be a non-negative integer",
        ));
    }
    limit_response(
        l.get("limitResponse").unwrap_or(&NULL),
        &child(path, "limitResponse"),
        out,
    );
    if let Some(p) = int(l, "lendablePercent").filter(|p| !(0..=100).contains(p)) {
        out.push(invalid(
            &child(path, "lendablePercent"),
            &json!(p),
            "must be between 0 and 100, inclusive",
        ));
    }
    if let Some(p) = int(l, "borrowingLimitPercent").filter(|p| *p < 0) {
        out.push(invalid(
            &child(path, "borrowingLimitPercent"),
            &json!(p),
            "if specified, must be a non-negative integer",
        ));
    }
}

/// kube's `ValidateExemptPriorityLevelConfiguration`.
fn exempt_priority_level(e: &Value, path: &str, out: &mut Vec<Cause>) {
    if let Some(n) = int(e, "nominalConcurrencyShares").filter(|n| *n < 0) {
        out.push(invalid(
            &child(path, "nominalConcurrencyShares"),
            &json!(n),
            "must be a non-negative integer",
        ));
    }
    if let Some(p) = int(e, "lendablePercent").filter(|p| !(0..=100).contains(p)) {
        out.push(invalid(
            &child(path, "lendablePercent"),
            &json!(p),
            "must be between 0 and 100, inclusive",
        ));
    }
}

/// kube's `ValidateLimitResponse`.
fn limit_response(lr: &Value, path: &str, out: &mut Vec<Cause>) {
    let t = str_of(lr, "type");
    let queuing = set(lr, "queuing");
    match t {
        "Reject" => {
            if queuing.is_some() {
                out.push(forbidden(
                    &child(path, "queuing"),
                    "must be nil if limited.limitResponse.type is not Limited",
                ));
            }
        }
        "Queue" => match queuing {
            None => out.push(required(
                &child(path, "queuing"),
                "must not be empty if limited.limitResponse.type is Limited",
            )),
            Some(q) => queuing_configuration(q, &child(path, "queuing"), out),
        },
        _ => out.push(not_supported(
            &child(path, "type"),
            &json!(t),
            &["Queue", "Reject"],
        )),
    }
}

/// kube's `ValidatePriorityLevelQueuingConfiguration` (v1 defaults an absent or zero
/// `queues`, `handSize`, `queueLengthLimit` to 64, 8, 50).
fn queuing_configuration(q: &Value, path: &str, out: &mut Vec<Cause>) {
    let get = |f: &str, default: i64| int(q, f).filter(|v| *v != 0).unwrap_or(default);
    let queue_length = get("queueLengthLimit", defaults::DEFAULT_QUEUE_LENGTH_LIMIT);
    let queues = get("queues", defaults::DEFAULT_QUEUES);
    let hand = get("handSize", defaults::DEFAULT_HAND_SIZE);
    if queue_length <= 0 {
        out.push(invalid(
            &child(path, "queueLengthLimit"),
            &json!(queue_length),
            "must be positive",
        ));
    }
    if queues <= 0 {
        out.push(invalid(
            &child(path, "queues"),
            &json!(queues),
            "must be positive",
        ));
    } else if queues > MAX_QUEUES {
        out.push(invalid(
            &child(path, "queues"),
            &json!(queues),
            &format!("must not be greater than {MAX_QUEUES}"),
        ));
    }
    let hand_path = child(path, "handSize");
    if hand <= 0 {
        out.push(invalid(&hand_path, &json!(hand), "must be positive"));
    } else if hand > queues {
        out.push(invalid(
            &hand_path,
            &json!(hand),
            &format!("should not be greater than queues ({queues})"),
        ));
    } else if ((queues as f64).log2() * hand as f64).ceil() > MAX_HASH_BITS {
        // shufflesharding's `RequiredEntropyBits`.
        out.push(invalid(
            &hand_path,
            &json!(hand),
            &format!(
                "required entropy bits of deckSize {queues} and handSize {hand} should not be greater than 60"
            ),
        ));
    }
}

/// kube's `ValidateIfMandatoryPriorityLevelConfigurationObject`: `catch-all` must have its
/// fixed spec; `exempt` too, but for `spec.exempt`.
fn mandatory_priority_level(name: &str, obj: &Value, out: &mut Vec<Cause>) {
    let spec = spec_of(obj);
    let ok = match name {
        "exempt" => str_of(spec, "type") == "Exempt" && set(spec, "limited").is_none(),
        "catch-all" => {
            str_of(spec, "type") == "Limited"
                && set(spec, "exempt").is_none()
                && set(spec, "limited").is_some_and(|l| {
                    let lr = l.get("limitResponse").unwrap_or(&NULL);
                    nominal_shares(l) == 5
                        && int(l, "lendablePercent").unwrap_or(0) == 0
                        && set(l, "borrowingLimitPercent").is_none()
                        && str_of(lr, "type") == "Reject"
                        && set(lr, "queuing").is_none()
                })
        }
        _ => return,
    };
    if !ok {
        let msg = if name == "exempt" {
            "spec of 'exempt' except the 'spec.exempt' field must equal the fixed value".to_owned()
        } else {
            format!("spec of '{name}' must equal the fixed value")
        };
        // kube prints the defaulted internal spec; here the JSON sent (see above).
        out.push(invalid("spec", obj.get("spec").unwrap_or(&json!({})), &msg));
    }
}

// ---------------------------------------------------------------------------
// APIService (kube-aggregator/pkg/apis/apiregistration/validation)
// ---------------------------------------------------------------------------

/// The length in bytes of a `caBundle` (base64 in JSON).
fn ca_bundle_len(spec: &Value) -> usize {
    let s = str_of(spec, "caBundle");
    base64::engine::general_purpose::STANDARD
        .decode(s)
        .map_or(s.len() / 4 * 3, |b| b.len())
}

/// kube's `ValidateAPIService` (create; `ValidateAPIServiceUpdate` adds only the metadata
/// checks done elsewhere): the name is `version.group` (kube's name rule, run here only when the
/// name is a valid path segment), group and version, priorities, a local APIService has no
/// `caBundle` or `insecureSkipTLSVerify`, a service its namespace, name and port.
fn api_service(obj: &Value) -> Vec<Cause> {
    let spec = spec_of(obj);
    let group = str_of(spec, "group");
    let version = str_of(spec, "version");
    let mut out = Vec::new();
    let name = name_of(obj);
    let required_name = format!("{version}.{group}");
    if !name.is_empty() && path_segment_name(name).is_empty() && name != required_name {
        out.push(invalid_str(
            "metadata.name",
            name,
            &format!(
                "must be `spec.version+\".\"+spec.group`: {}",
                quoted(&required_name)
            ),
        ));
    }
    if group.is_empty() && version != "v1" {
        out.push(required(
            "spec.group",
            "only v1 may have an empty group and it better be legacy kube",
        ));
    }
    if !group.is_empty() {
        for m in dns1123_subdomain(group) {
            out.push(invalid_str("spec.group", group, &m));
        }
    }
    for m in dns1035_label(version) {
        out.push(invalid_str("spec.version", version, &m));
    }
    let gpm = int(spec, "groupPriorityMinimum").unwrap_or(0);
    if gpm <= 0 || gpm > 20000 {
        out.push(invalid(
            "spec.groupPriorityMinimum",
            &json!(gpm),
            "must be positive and less than 20000",
        ));
    }
    let vp = int(spec, "versionPriority").unwrap_or(0);
    if vp <= 0 || vp > 1000 {
        out.push(invalid(
            "spec.versionPriority",
            &json!(vp),
            "must be positive and less than 1000",
        ));
    }
    let ca_len = ca_bundle_len(spec);
    let insecure = spec
        .get("insecureSkipTLSVerify")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let Some(svc) = set(spec, "service") else {
        if ca_len != 0 {
            out.push(invalid(
                "spec.caBundle",
                &json!(format!("{ca_len} bytes")),
                "local APIServices may not have a caBundle",
            ));
        }
        if insecure {
            out.push(invalid(
                "spec.insecureSkipTLSVerify",
                &json!(true),
                "local APIServices may not have insecureSkipTLSVerify",
            ));
        }
        return out;
    };
    if str_of(svc, "namespace").is_empty() {
        out.push(required("spec.service.namespace", ""));
    }
    if str_of(svc, "name").is_empty() {
        out.push(required("spec.service.name", ""));
    }
    // v1 defaults the port to 443.
    let port = int(svc, "port").unwrap_or(443);
    let errs = port_num(port);
    if !errs.is_empty() {
        out.push(invalid(
            "spec.service.port",
            &json!(port),
            &format!("port is not valid: {}", errs.join(", ")),
        ));
    }
    if insecure && ca_len > 0 {
        out.push(invalid(
            "spec.insecureSkipTLSVerify",
            &json!(true),
            "may not be true if caBundle is present",
        ));
    }
    out
}

/// kube's `ValidateAPIServiceStatus` (of `ValidateAPIServiceStatusUpdate`).
fn api_service_status(status: &Value, out: &mut Vec<Cause>) {
    for (i, c) in items(status, "conditions").iter().enumerate() {
        let s = str_of(c, "status");
        if !matches!(s, "True" | "False" | "Unknown") {
            out.push(not_supported(
                &child(&index("status.conditions", i), "status"),
                &json!(s),
                &["True", "False", "Unknown"],
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::meta::{DNS1123_LABEL_MSG, DNS1123_SUBDOMAIN_MSG};

    fn msgs(causes: &[Cause]) -> Vec<String> {
        causes.iter().map(ToString::to_string).collect()
    }

    const DNS1035_MSG: &str = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')";

    // ---- webhook configurations ----

    fn good_hook() -> Value {
        json!({"name": "deny.example.com",
            "clientConfig": {"url": "https://hooks.example.com:8443/validate"},
            "rules": [{"operations": ["CREATE", "UPDATE"], "apiGroups": [""], "apiVersions": ["v1"],
                       "resources": ["pods", "pods/status"], "scope": "*"}],
            "failurePolicy": "Fail", "matchPolicy": "Equivalent",
            "namespaceSelector": {"matchExpressions": [{"key": "env", "operator": "In", "values": ["prod"]}]},
            "objectSelector": {"matchLabels": {"a": "b"}},
            "sideEffects": "None", "timeoutSeconds": 10, "admissionReviewVersions": ["v1", "v1beta1"],
            "matchConditions": [{"name": "not-system",
                "expression": "!request.userInfo.username.startsWith('system:')"}]})
    }

    fn config(hooks: Vec<Value>) -> Value {
        json!({"apiVersion": "admissionregistration.k8s.io/v1",
               "kind": "ValidatingWebhookConfiguration", "metadata": {"name": "c"}, "webhooks": hooks})
    }

    fn vwc(obj: &Value, old: Option<&Value>) -> Vec<String> {
        msgs(&validate(
            ADMISSION,
            "validatingwebhookconfigurations",
            obj,
            old,
        ))
    }

    #[test]
    fn a_valid_webhook_configuration_passes() {
        let mut svc = good_hook();
        svc["name"] = json!("svc.example.com");
        svc["clientConfig"] = json!({"service": {"namespace": "ns", "name": "hook",
            "path": "/validate/pods", "port": 8443}});
        assert!(vwc(&config(vec![good_hook(), svc]), None).is_empty());
        let mut m = good_hook();
        m["reinvocationPolicy"] = json!("IfNeeded");
        assert!(validate(
            ADMISSION,
            "mutatingwebhookconfigurations",
            &config(vec![m]),
            None
        )
        .is_empty());
    }

    #[test]
    fn webhook_fields_as_kube_checks_them() {
        let hook = json!({"name": "hook", "clientConfig": {},
            "rules": [{"operations": ["PATCH"], "apiGroups": [], "apiVersions": ["v1"],
                       "resources": ["pods/*", "pods/log", "*"]}],
            "failurePolicy": "Maybe", "sideEffects": "Unknown", "timeoutSeconds": 31,
            "objectSelector": {"matchLabels": {"a": "b c"}},
            "admissionReviewVersions": ["v2", "v2"]});
        let label_msg = crate::schema::objectmeta::label_value("b c").remove(0);
        assert_eq!(
            vwc(&config(vec![hook]), None),
            vec![
                "webhooks[0].name: Invalid value: \"hook\": should be a domain with at least three segments separated by dots".to_owned(),
                "webhooks[0].rules[0].operations[0]: Unsupported value: \"PATCH\": supported values: \"*\", \"CONNECT\", \"CREATE\", \"DELETE\", \"UPDATE\"".to_owned(),
                "webhooks[0].rules[0].apiGroups: Required value".to_owned(),
                "webhooks[0].rules[0].resources[1]: Invalid value: \"pods/log\": if 'pods/*' is present, must not specify pods/log".to_owned(),
                "webhooks[0].failurePolicy: Unsupported value: \"Maybe\": supported values: \"Fail\", \"Ignore\"".to_owned(),
                "webhooks[0].sideEffects: Unsupported value: \"Unknown\": supported values: \"None\", \"NoneOnDryRun\"".to_owned(),
                "webhooks[0].timeoutSeconds: Invalid value: 31: the timeout value must be between 1 and 30 seconds".to_owned(),
                format!("webhooks[0].objectSelector.matchLabels: Invalid value: \"b c\": {label_msg}"),
                "webhooks[0].clientConfig: Required value: exactly one of url or service is required".to_owned(),
                "webhooks[0].admissionReviewVersions[1]: Invalid value: \"v2\": duplicate version".to_owned(),
                "webhooks[0].admissionReviewVersions: Invalid value: [\"v2\",\"v2\"]: must include at least one of v1, v1beta1".to_owned(),
            ]
        );
    }

    #[test]
    fn webhook_names_side_effects_versions_and_reinvocation() {
        let mut a = good_hook();
        a["matchConditions"] = json!([]);
        let mut bare = json!({"name": "bare.example.com",
            "clientConfig": {"url": "https://h.example.com"}});
        bare["rules"] = json!([{"operations": ["*"], "apiGroups": ["*"], "apiVersions": ["*"],
            "resources": ["*/*", "pods"], "scope": "Global"}]);
        assert_eq!(
            vwc(&config(vec![a.clone(), a.clone(), bare]), None),
            vec![
                "webhooks[1].name: Duplicate value: \"deny.example.com\"",
                "webhooks[2].rules[0].resources: Invalid value: [\"*/*\",\"pods\"]: if '*/*' is present, must not specify other resources",
                "webhooks[2].rules[0].scope: Unsupported value: \"Global\": supported values: \"*\", \"Cluster\", \"Namespaced\"",
                "webhooks[2].sideEffects: Required value: must specify one of None, NoneOnDryRun",
                "webhooks[2].admissionReviewVersions: Required value: must specify one of v1, v1beta1",
            ]
        );
        a["reinvocationPolicy"] = json!("Sometimes");
        assert_eq!(
            msgs(&validate(ADMISSION, "mutatingwebhookconfigurations", &config(vec![a]), None)),
            vec!["webhooks[0].reinvocationPolicy: Unsupported value: \"Sometimes\": supported values: \"IfNeeded\", \"Never\""]
        );
    }

    #[test]
    fn webhook_urls_and_services() {
        let with_cc = |cc: Value| {
            let mut h = good_hook();
            h["clientConfig"] = cc;
            config(vec![h])
        };
        let form = "; desired format: https://host[/path]";
        assert_eq!(
            vwc(&with_cc(json!({"url": "http://user:pw@example.com/p?x=1#frag"})), None),
            vec![
                format!("webhooks[0].clientConfig.url: Invalid value: \"http\": 'https' is the only allowed URL scheme{form}"),
                "webhooks[0].clientConfig.url: Invalid value: \"user:pw\": user information is not permitted in the URL".to_owned(),
                "webhooks[0].clientConfig.url: Invalid value: \"frag\": fragments are not permitted in the URL".to_owned(),
                "webhooks[0].clientConfig.url: Invalid value: \"x=1\": query parameters are not permitted in the URL".to_owned(),
            ]
        );
        assert_eq!(
            vwc(&with_cc(json!({"url": "https:// bad"})), None),
            vec![format!("webhooks[0].clientConfig.url: Required value: url must be a valid URL: parse \"https:// bad\": invalid character \" \" in host name{form}")]
        );
        assert_eq!(
            vwc(&with_cc(json!({"url": "https://h.example.com:80x/"})), None),
            vec![format!("webhooks[0].clientConfig.url: Required value: url must be a valid URL: parse \"https://h.example.com:80x/\": invalid port \":80x\" after host{form}")]
        );
        assert_eq!(
            vwc(&with_cc(json!({"url": "/relative"})), None),
            vec![
                format!("webhooks[0].clientConfig.url: Invalid value: \"\": 'https' is the only allowed URL scheme{form}"),
                format!("webhooks[0].clientConfig.url: Invalid value: \"\": host must be provided{form}"),
            ]
        );
        assert_eq!(
            vwc(&with_cc(json!({"url": "https://a", "service": {"namespace": "n", "name": "s"}})), None),
            vec!["webhooks[0].clientConfig: Required value: exactly one of url or service is required"]
        );
        assert_eq!(
            vwc(&with_cc(json!({"service": {"namespace": "", "name": "", "port": 0, "path": "foo//Bar/"}})), None),
            vec![
                "webhooks[0].clientConfig.service.name: Required value: service name is required".to_owned(),
                "webhooks[0].clientConfig.service.namespace: Required value: service namespace is required".to_owned(),
                "webhooks[0].clientConfig.service.port: Invalid value: 0: port is not valid: must be between 1 and 65535, inclusive".to_owned(),
                "webhooks[0].clientConfig.service.path: Invalid value: \"foo//Bar/\": must start with a '/'".to_owned(),
                "webhooks[0].clientConfig.service.path: Invalid value: \"foo//Bar/\": segment[1] may not be empty".to_owned(),
                format!("webhooks[0].clientConfig.service.path: Invalid value: \"foo//Bar/\": segment[2]: {DNS1123_SUBDOMAIN_MSG}"),
            ]
        );
        // No port: v1's default 443.
        assert!(vwc(
            &with_cc(json!({"service": {"namespace": "n", "name": "s"}})),
            None
        )
        .is_empty());
    }

    #[test]
    fn webhook_match_conditions() {
        let mut h = good_hook();
        h["matchConditions"] = json!([
            {"name": "bad name!", "expression": "true"},
            {"name": "", "expression": "  "},
            {"name": "c", "expression": "this is not ( CEL"},
            {"name": "c", "expression": "false"},
        ]);
        let name_msg = crate::schema::objectmeta::qualified_name("bad name!").remove(0);
        let got = vwc(&config(vec![h.clone()]), None);
        assert_eq!(got.len(), 5, "{got:?}");
        assert_eq!(
            got[0],
            format!(
                "webhooks[0].matchConditions[0].name: Invalid value: \"bad name!\": {name_msg}"
            )
        );
        assert_eq!(
            got[1],
            "webhooks[0].matchConditions[1].expression: Required value"
        );
        assert_eq!(
            got[2],
            "webhooks[0].matchConditions[1].name: Required value"
        );
        assert!(
            got[3].starts_with("webhooks[0].matchConditions[2].expression: Invalid value: \"this is not ( CEL\": compilation failed: ERROR: <input>:"),
            "{}", got[3]
        );
        assert_eq!(
            got[4],
            "webhooks[0].matchConditions[3].name: Duplicate value: \"c\""
        );
        // Unchanged on update: not validated again.
        let stored = config(vec![h.clone()]);
        assert!(vwc(&stored, Some(&stored)).is_empty());
        // Changed: validated, but an expression already stored is not compiled again.
        h["matchConditions"][1] = json!({"name": "d", "expression": "true"});
        assert_eq!(
            vwc(&config(vec![h]), Some(&stored)),
            vec![
                format!(
                    "webhooks[0].matchConditions[0].name: Invalid value: \"bad name!\": {name_msg}"
                ),
                "webhooks[0].matchConditions[3].name: Duplicate value: \"c\"".to_owned(),
            ]
        );
        let mut many = good_hook();
        many["matchConditions"] = Value::Array(
            (0..65)
                .map(|i| json!({"name": format!("c{i}"), "expression": "true"}))
                .collect(),
        );
        assert_eq!(
            vwc(&config(vec![many]), None),
            vec!["webhooks[0].matchConditions: Too many: 65: must have at most 64 items"]
        );
    }

    #[test]
    fn webhook_updates_keep_what_was_stored() {
        let mut h = good_hook();
        h["sideEffects"] = json!("Unknown");
        h["admissionReviewVersions"] = json!(["v0"]);
        h["namespaceSelector"] =
            json!({"matchExpressions": [{"key": "k", "operator": "In", "values": ["bad value"]}]});
        let stored = config(vec![h.clone(), h.clone()]);
        // On create all of it is refused.
        assert_eq!(vwc(&stored, None).len(), 7, "{:?}", vwc(&stored, None));
        // Stored so (before these checks existed), it may be updated as it is.
        let mut new = stored.clone();
        new["webhooks"][0]["timeoutSeconds"] = json!(5);
        assert!(
            vwc(&new, Some(&stored)).is_empty(),
            "{:?}",
            vwc(&new, Some(&stored))
        );
        // A stored object that kept the rules keeps them.
        let clean = config(vec![good_hook()]);
        let mut worse = clean.clone();
        worse["webhooks"][0]["sideEffects"] = json!("Some");
        assert_eq!(
            vwc(&worse, Some(&clean)),
            vec!["webhooks[0].sideEffects: Unsupported value: \"Some\": supported values: \"None\", \"NoneOnDryRun\""]
        );
    }

    // ---- ValidatingAdmissionPolicy ----

    fn vap(spec: Value) -> Value {
        json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
               "metadata": {"name": "p"}, "spec": spec})
    }

    fn vap_msgs(obj: &Value, old: Option<&Value>) -> Vec<String> {
        msgs(&validate(
            ADMISSION,
            "validatingadmissionpolicies",
            obj,
            old,
        ))
    }

    fn rules() -> Value {
        json!({"resourceRules": [{"apiGroups": ["apps"], "apiVersions": ["v1"],
               "operations": ["CREATE", "UPDATE"], "resources": ["deployments"]}]})
    }

    #[test]
    fn mutating_policies_as_kube_checks_them() {
        let good = json!({"metadata": {"name": "add-label"}, "spec": {
            "matchConstraints": {"resourceRules": [{"apiGroups": ["apps"], "apiVersions": ["v1"],
                "operations": ["CREATE"], "resources": ["deployments"]}]},
            "mutations": [{"patchType": "ApplyConfiguration", "applyConfiguration": {
                "expression": "Object{metadata: Object.metadata{labels: {\"a\": \"b\"}}}"}}],
            "reinvocationPolicy": "Never"}});
        assert_eq!(
            msgs(&validate(
                ADMISSION,
                "mutatingadmissionpolicies",
                &good,
                None
            )),
            Vec::<String>::new()
        );
        let bad = json!({"metadata": {"name": "p"}, "spec": {
            "failurePolicy": "Sometimes",
            "matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                "operations": ["DELETE"], "resources": ["pods"]}]},
            "mutations": [
                {"patchType": "JSONPatch", "applyConfiguration": {"expression": "Object{}"}},
                {"patchType": "Merge"},
                {"patchType": "JSONPatch", "jsonPatch": {"expression": "[JSONPatch{op: \"add\","}}]}});
        let got = msgs(&validate(
            ADMISSION,
            "mutatingadmissionpolicies",
            &bad,
            None,
        ));
        assert_eq!(got[0], "spec.failurePolicy: Unsupported value: \"Sometimes\": supported values: \"Fail\", \"Ignore\"");
        assert_eq!(got[1], "spec.matchConstraints.resourceRules.operations: Unsupported value: \"DELETE\": supported values: \"*\", \"CONNECT\", \"CREATE\", \"UPDATE\"");
        assert_eq!(got[2], "spec.mutations[0].jsonPatch: Required value: must be specified when patchType is JSONPatch");
        assert_eq!(got[3], "spec.mutations[0].applyConfiguration: Invalid value: \"{applyConfiguration}\": must not be specified when patchType is JSONPatch");
        assert_eq!(got[4], "spec.mutations[1].patchType: Unsupported value: \"Merge\": supported values: \"ApplyConfiguration\", \"JSONPatch\"");
        assert!(got[5].starts_with("spec.mutations[2].jsonPatch.expression: Invalid value: \"[JSONPatch{op: \\\"add\\\",\": compilation failed"), "{}", got[5]);
        assert_eq!(got.len(), 6, "{got:?}");
        let binding = json!({"spec": {"policyName": "p", "paramRef": {"name": "x"},
            "matchResources": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                "operations": ["DELETE"], "resources": ["pods"]}]}}});
        assert_eq!(
            msgs(&validate(ADMISSION, "mutatingadmissionpolicybindings", &binding, None)),
            [
                "spec.paramRef.parameterNotFoundAction: Required value",
                "spec.matchResources.resourceRules.operations: Unsupported value: \"DELETE\": supported values: \"*\", \"CONNECT\", \"CREATE\", \"UPDATE\"",
            ]
        );
    }

    #[test]
    fn a_valid_policy_passes() {
        let p = vap(json!({"failurePolicy": "Fail",
            "paramKind": {"apiVersion": "v1", "kind": "ConfigMap"},
            "matchConstraints": rules(),
            "matchConditions": [{"name": "labelled", "expression": "has(object.metadata.labels)"}],
            "variables": [{"name": "limit", "expression": "int(params.data.maxReplicas)"}],
            "validations": [{"expression": "object.spec.replicas <= variables.limit",
                "messageExpression": "'too many: ' + string(object.spec.replicas)",
                "message": "too many", "reason": "Invalid"}],
            "auditAnnotations": [{"key": "high-replicas", "valueExpression": "'x'"}]}));
        assert!(vap_msgs(&p, None).is_empty(), "{:?}", vap_msgs(&p, None));
        // No spec at all (failurePolicy is defaulted by kube).
        assert_eq!(
            vap_msgs(&json!({"metadata": {"name": "p"}}), None),
            vec![
                "spec.matchConstraints: Required value",
                "spec.validations: Required value: validations or auditAnnotations must contain at least one item",
                "spec.auditAnnotations: Required value: validations or auditAnnotations must contain at least one item",
            ]
        );
    }

    #[test]
    fn policy_fields_as_kube_checks_them() {
        let p = vap(json!({"failurePolicy": "Sometimes",
            "paramKind": {"apiVersion": "a/b/c", "kind": "Config_Map"},
            "matchConstraints": {"resourceRules": [],
                "namespaceSelector": {"matchExpressions": [{"key": "k", "operator": "In"}]}},
            "matchConditions": [{"name": "", "expression": " "}],
            "variables": [{"name": "1x", "expression": ""}],
            "validations": [{"expression": "true", "message": "a\nb", "reason": "Teapot",
                             "messageExpression": "  "}],
            "auditAnnotations": [{"key": "k", "valueExpression": "'v'"},
                                 {"key": "k", "valueExpression": ""}]}));
        assert_eq!(
            vap_msgs(&p, None),
            vec![
                "spec.failurePolicy: Unsupported value: \"Sometimes\": supported values: \"Fail\", \"Ignore\"".to_owned(),
                "spec.paramKind.apiVersion: Invalid value: \"a/b/c\": unexpected GroupVersion string: a/b/c".to_owned(),
                format!("spec.paramKind.kind: Invalid value: \"Config_Map\": may have mixed case, but should otherwise match: {DNS1035_MSG}"),
                "spec.matchConstraints.namespaceSelector.matchExpressions[0].values: Required value: must be specified when `operator` is 'In' or 'NotIn'".to_owned(),
                "spec.matchConstraints.resourceRules: Required value".to_owned(),
                "spec.matchConditions[0].expression: Required value".to_owned(),
                "spec.matchConditions[0].name: Required value".to_owned(),
                "spec.variables[0].name: Invalid value: \"1x\": name is not a valid CEL identifier".to_owned(),
                "spec.variables[0].expression: Required value: expression is not specified".to_owned(),
                "spec.validations[0].messageExpression: Invalid value: \"  \": must be non-empty if specified".to_owned(),
                "spec.validations[0].message: Invalid value: \"a\\nb\": message must not contain line breaks".to_owned(),
                "spec.validations[0].reason: Unsupported value: \"Teapot\": supported values: \"Forbidden\", \"Invalid\", \"RequestEntityTooLarge\"".to_owned(),
                "spec.auditAnnotations[1].valueExpression: Required value: valueExpression is not specified".to_owned(),
                "spec.auditAnnotations[1].key: Duplicate value: \"k\"".to_owned(),
            ]
        );
        let pk = |av: &str| {
            let mut errs = Vec::new();
            param_kind(
                &json!({"apiVersion": av, "kind": "Thing"}),
                "spec.paramKind",
                &mut errs,
            );
            msgs(&errs)
        };
        assert!(pk("example.com/v1").is_empty());
        assert_eq!(
            pk("apps/"),
            vec!["spec.paramKind.apiVersion: Invalid value: \"apps/\": version must be specified"]
        );
        assert_eq!(
            pk("Apps/v1"),
            vec![format!(
                "spec.paramKind.apiVersion: Invalid value: \"Apps\": {DNS1123_SUBDOMAIN_MSG}"
            )]
        );
    }

    #[test]
    fn policy_expressions_compile_with_turtles_compiler() {
        let p = vap(json!({"matchConstraints": rules(), "validations": [
            {"expression": "this is not ( CEL"},
            {"expression": "true", "messageExpression": "authorizer.group('').resource('pods').check('get').reason()"}]}));
        let got = vap_msgs(&p, None);
        assert_eq!(got.len(), 2, "{got:?}");
        assert!(got[0].starts_with("spec.validations[0].expression: Invalid value: \"this is not ( CEL\": compilation failed: ERROR: <input>:"), "{}", got[0]);
        assert_eq!(got[1], "spec.validations[1].messageExpression: Invalid value: \"authorizer.group('').resource('pods').check('get').reason()\": compilation failed: ERROR: <input>: undeclared reference to 'authorizer' (in container '')");
        // Stored so, the policy may be updated (as kube compiles stored expressions leniently).
        let mut changed = p.clone();
        changed["spec"]["failurePolicy"] = json!("Ignore");
        assert!(vap_msgs(&changed, Some(&p)).is_empty());
        // An audit annotation's key is the policy's name and the key.
        let bad_key = vap(json!({"matchConstraints": rules(),
            "auditAnnotations": [{"key": "a b", "valueExpression": "'x'"}]}));
        let key_msg = crate::schema::objectmeta::qualified_name("p/a b").remove(0);
        assert_eq!(
            vap_msgs(&bad_key, None),
            vec![format!(
                "spec.auditAnnotations[0].key: Invalid value: \"p/a b\": {key_msg}"
            )]
        );
    }

    #[test]
    fn policy_match_conditions_are_skipped_when_unchanged() {
        let stored = vap(json!({"matchConstraints": rules(),
            "matchConditions": [{"name": "Bad Name", "expression": "true"}],
            "validations": [{"expression": "true"}]}));
        assert_eq!(vap_msgs(&stored, None).len(), 1);
        let mut new = stored.clone();
        new["spec"]["validations"][0]["message"] = json!("changed");
        assert!(vap_msgs(&new, Some(&stored)).is_empty());
        // A new paramKind validates them again.
        new["spec"]["paramKind"] = json!({"apiVersion": "v1", "kind": "ConfigMap"});
        assert_eq!(vap_msgs(&new, Some(&stored)).len(), 1);
    }

    #[test]
    fn policy_status() {
        let obj = json!({"status": {
            "typeChecking": {"expressionWarnings": [{"fieldRef": " ", "warning": ""},
                {"fieldRef": "spec.validations[0].expression", "warning": "w"}]},
            "conditions": [{"type": "Ready", "status": "Yes", "reason": "", "observedGeneration": -1},
                {"type": "Ready", "status": "True", "reason": "1bad", "lastTransitionTime": "2024-01-01T00:00:00Z"}]}});
        assert_eq!(
            msgs(&validate_status(ADMISSION, "validatingadmissionpolicies", &obj, &json!({}))),
            vec![
                "status.typeChecking.expressionWarnings[0].warning: Required value",
                "status.typeChecking.expressionWarnings[0].fieldRef: Required value",
                "status.conditions[0].status: Unsupported value: \"Yes\": supported values: \"False\", \"True\", \"Unknown\"",
                "status.conditions[0].observedGeneration: Invalid value: -1: must be greater than or equal to zero",
                "status.conditions[0].lastTransitionTime: Required value: must be set",
                "status.conditions[0].reason: Required value: must be set",
                "status.conditions[1].type: Duplicate value: \"Ready\"",
                "status.conditions[1].reason: Invalid value: \"1bad\": a condition reason must start with alphabetic character, optionally followed by a string of alphanumeric characters or '_,:', and must end with an alphanumeric character or '_' (e.g. 'my_name',  or 'MY_NAME',  or 'MyName',  or 'ReasonA,ReasonB',  or 'ReasonA:ReasonB', regex used for validation is '[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?')",
            ]
        );
        // What turtles' status controller writes passes.
        let written = json!({"status": {"observedGeneration": 1, "typeChecking": {}}});
        assert!(validate_status(
            ADMISSION,
            "validatingadmissionpolicies",
            &written,
            &json!({})
        )
        .is_empty());
    }

    // ---- ValidatingAdmissionPolicyBinding ----

    fn binding_msgs(spec: Value) -> Vec<String> {
        let b = json!({"metadata": {"name": "b"}, "spec": spec});
        msgs(&validate(
            ADMISSION,
            "validatingadmissionpolicybindings",
            &b,
            None,
        ))
    }

    #[test]
    fn bindings() {
        assert!(binding_msgs(
            json!({"policyName": "p", "validationActions": ["Deny", "Audit"],
            "paramRef": {"name": "cfg", "parameterNotFoundAction": "Allow"},
            "matchResources": {"namespaceSelector": {"matchLabels": {"env": "prod"}}}})
        )
        .is_empty());
        assert_eq!(
            binding_msgs(json!({})),
            vec![
                "spec.policyName: Required value",
                "spec.validationActions: Required value: at least one validation action is required",
            ]
        );
        assert_eq!(
            binding_msgs(json!({"policyName": "P_",
                "paramRef": {"name": "a/b", "selector": {}, "parameterNotFoundAction": "Maybe"},
                "matchResources": {"matchPolicy": "Fuzzy", "resourceRules": [{
                    "operations": ["CREATE", "*"], "apiGroups": ["*", "apps"], "apiVersions": [""],
                    "resources": ["deployments"], "resourceNames": ["a", "a"]}]},
                "validationActions": ["Deny", "Warn", "Deny", "Block"]})),
            vec![
                format!("spec.policyName: Invalid value: \"P_\": {DNS1123_SUBDOMAIN_MSG}"),
                "spec.paramRef.name: Invalid value: \"a/b\": may not contain '/'".to_owned(),
                "spec.paramRef.name: Forbidden: name and selector are mutually exclusive".to_owned(),
                "spec.paramRef.selector: Forbidden: name and selector are mutually exclusive".to_owned(),
                "spec.paramRef.parameterNotFoundAction: Unsupported value: \"Maybe\": supported values: \"Deny\", \"Allow\"".to_owned(),
                "spec.matchResouces.matchPolicy: Unsupported value: \"Fuzzy\": supported values: \"Equivalent\", \"Exact\"".to_owned(),
                "spec.matchResouces.resourceRules[0].resourceNames[1]: Duplicate value: \"a\"".to_owned(),
                "spec.matchResouces.resourceRules[0].operations: Invalid value: [\"CREATE\",\"*\"]: if '*' is present, must not specify other operations".to_owned(),
                "spec.matchResouces.resourceRules[0].apiGroups: Invalid value: [\"*\",\"apps\"]: if '*' is present, must not specify other API groups".to_owned(),
                "spec.matchResouces.resourceRules[0].apiVersions[0]: Required value".to_owned(),
                "spec.validationActions[2]: Duplicate value: \"Deny\"".to_owned(),
                "spec.validationActions[3]: Unsupported value: \"Block\": supported values: \"Audit\", \"Deny\", \"Warn\"".to_owned(),
                "spec.validationActions: Invalid value: [\"Deny\",\"Warn\",\"Deny\",\"Block\"]: must not contain both Deny and Warn (repeating the same validation failure information in the API response and headers serves no purpose)".to_owned(),
            ]
        );
        assert_eq!(
            binding_msgs(json!({"policyName": "p", "validationActions": ["Deny"], "paramRef": {}})),
            vec![
                "spec.paramRef: Required value: one of name or selector must be specified",
                "spec.paramRef.parameterNotFoundAction: Required value",
            ]
        );
    }

    // ---- FlowSchema ----

    fn fs(name: &str, spec: Value) -> Value {
        json!({"apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "FlowSchema",
               "metadata": {"name": name}, "spec": spec})
    }

    fn fs_msgs(obj: &Value) -> Vec<String> {
        msgs(&validate(FLOWCONTROL, "flowschemas", obj, None))
    }

    #[test]
    fn flow_schemas() {
        let ok = fs(
            "mine",
            json!({"priorityLevelConfiguration": {"name": "global-default"},
            "matchingPrecedence": 500, "distinguisherMethod": {"type": "ByUser"},
            "rules": [{"subjects": [{"kind": "Group", "group": {"name": "system:authenticated"}},
                                    {"kind": "ServiceAccount", "serviceAccount": {"namespace": "kube-system", "name": "*"}}],
                "resourceRules": [{"verbs": ["get", "list"], "apiGroups": [""], "resources": ["pods"], "namespaces": ["*"]}],
                "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["/healthz/*", "/"]}]}]}),
        );
        assert!(fs_msgs(&ok).is_empty(), "{:?}", fs_msgs(&ok));
        // No matchingPrecedence: v1's default 1000.
        assert!(fs_msgs(&fs(
            "d",
            json!({"priorityLevelConfiguration": {"name": "x"}})
        ))
        .is_empty());
        let bad = fs(
            "mine",
            json!({"matchingPrecedence": 1, "distinguisherMethod": {"type": "ByPod"},
            "priorityLevelConfiguration": {},
            "rules": [{"subjects": [{"kind": "ServiceAccount", "user": {"name": "u"}}, {"kind": "Robot"},
                                    {"kind": "User", "user": {}}],
                "resourceRules": [{"verbs": ["get", "fly"], "apiGroups": [], "resources": ["*", "pods"], "namespaces": ["-x"]}],
                "nonResourceRules": [{"verbs": ["*", "get"], "nonResourceURLs": ["healthz", "/a/*/b"]}]},
                {"subjects": []}]}),
        );
        assert_eq!(
            fs_msgs(&bad),
            vec![
                "spec.matchingPrecedence: Invalid value: 1: only the schema named 'exempt' may have matchingPrecedence 1".to_owned(),
                "spec.distinguisherMethod.type: Unsupported value: {\"Type\":\"ByPod\"}: supported values: \"ByNamespace\", \"ByUser\"".to_owned(),
                "spec.priorityLevelConfiguration.name: Required value: must reference a priority level".to_owned(),
                "spec.rules[0].subjects[0].serviceAccount: Required value: serviceAccount is required when subject kind is 'ServiceAccount'".to_owned(),
                "spec.rules[0].subjects[0].user: Forbidden: user is forbidden when subject kind is not 'User'".to_owned(),
                "spec.rules[0].subjects[1].kind: Unsupported value: \"Robot\": supported values: \"Group\", \"ServiceAccount\", \"User\"".to_owned(),
                "spec.rules[0].subjects[2].user.name: Required value".to_owned(),
                "spec.rules[0].resourceRules[0].verbs: Unsupported value: [\"get\",\"fly\"]: supported values: \"create\", \"delete\", \"deletecollection\", \"get\", \"list\", \"patch\", \"proxy\", \"update\", \"watch\"".to_owned(),
                "spec.rules[0].resourceRules[0].apiGroups: Required value: resource rules must supply at least one api group".to_owned(),
                "spec.rules[0].resourceRules[0].resources: Invalid value: [\"*\",\"pods\"]: if '*' is present, must not specify other resources".to_owned(),
                format!("spec.rules[0].resourceRules[0].namespaces[0]: Invalid value: \"-x\": each member of this list must be '*' or a DNS-1123 label; {DNS1123_LABEL_MSG}"),
                "spec.rules[0].nonResourceRules[0].verbs: Invalid value: [\"*\",\"get\"]: if '*' is present, must not specify other verbs".to_owned(),
                "spec.rules[0].nonResourceRules[0].nonResourceURLs[0]: Invalid value: \"healthz\": must start with slash".to_owned(),
                "spec.rules[0].nonResourceRules[0].nonResourceURLs[1]: Invalid value: \"/a/*/b\": wildcard can only do suffix matching".to_owned(),
                "spec.rules[1].subjects: Required value: subjects must contain at least one value".to_owned(),
                "spec.rules[1]: Required value: at least one of resourceRules and nonResourceRules has to be non-empty".to_owned(),
            ]
        );
        assert_eq!(
            fs_msgs(&fs(
                "x",
                json!({"matchingPrecedence": 10001, "priorityLevelConfiguration": {"name": "p"}})
            )),
            vec!["spec.matchingPrecedence: Invalid value: 10001: must not be greater than 10000"]
        );
    }

    #[test]
    fn mandatory_flow_schemas_keep_their_spec() {
        let all = json!([{"subjects": [{"kind": "Group", "group": {"name": "system:masters"}}],
            "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"],
                               "clusterScope": true, "namespaces": ["*"]}],
            "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}]}]);
        let exempt = fs(
            "exempt",
            json!({"matchingPrecedence": 1,
            "priorityLevelConfiguration": {"name": "exempt"}, "rules": all}),
        );
        assert!(fs_msgs(&exempt).is_empty(), "{:?}", fs_msgs(&exempt));
        let changed = fs(
            "exempt",
            json!({"matchingPrecedence": 2,
            "priorityLevelConfiguration": {"name": "exempt"}, "rules": all}),
        );
        let got = fs_msgs(&changed);
        assert_eq!(got.len(), 1);
        assert!(
            got[0].starts_with("spec: Invalid value: {\"matchingPrecedence\":2,"),
            "{}",
            got[0]
        );
        assert!(
            got[0].ends_with(": spec of 'exempt' must equal the fixed value"),
            "{}",
            got[0]
        );
        // Statuses.
        let st = json!({"status": {"conditions": [{"type": "Dangling"}, {"type": "Dangling"}, {"type": ""}]}});
        assert_eq!(
            msgs(&validate_status(
                FLOWCONTROL,
                "flowschemas",
                &st,
                &json!({})
            )),
            vec![
                "status.conditions[1].type: Duplicate value: \"Dangling\"",
                "status.conditions[2].type: Required value: must not be empty",
            ]
        );
    }

    // ---- PriorityLevelConfiguration ----

    fn plc(name: &str, spec: Value) -> Value {
        json!({"apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "PriorityLevelConfiguration",
               "metadata": {"name": name}, "spec": spec})
    }

    fn plc_msgs(obj: &Value) -> Vec<String> {
        msgs(&validate(
            FLOWCONTROL,
            "prioritylevelconfigurations",
            obj,
            None,
        ))
    }

    #[test]
    fn priority_levels() {
        let ok = plc(
            "p",
            json!({"type": "Limited", "limited": {"nominalConcurrencyShares": 30,
            "lendablePercent": 0, "limitResponse": {"type": "Queue",
                "queuing": {"queues": 64, "handSize": 8, "queueLengthLimit": 50}}}}),
        );
        assert!(plc_msgs(&ok).is_empty());
        // Defaults: shares 30, queues 64, handSize 8, queueLengthLimit 50; zero shares allowed.
        assert!(plc_msgs(&plc(
            "p",
            json!({"type": "Limited",
            "limited": {"limitResponse": {"type": "Queue", "queuing": {}}}})
        ))
        .is_empty());
        assert!(plc_msgs(&plc(
            "p",
            json!({"type": "Limited",
            "limited": {"nominalConcurrencyShares": 0, "limitResponse": {"type": "Reject"}}})
        ))
        .is_empty());
        assert_eq!(
            plc_msgs(&plc("p", json!({"type": "Limited", "exempt": {},
                "limited": {"nominalConcurrencyShares": -1, "lendablePercent": 101, "borrowingLimitPercent": -1,
                    "limitResponse": {"type": "Queue",
                        "queuing": {"queues": 128, "handSize": 10, "queueLengthLimit": -1}}}}))),
            vec![
                "spec.exempt: Forbidden: must be nil if the type is Limited",
                "spec.limited.nominalConcurrencyShares: Invalid value: -1: must be a non-negative integer",
                "spec.limited.limitResponse.queuing.queueLengthLimit: Invalid value: -1: must be positive",
                "spec.limited.limitResponse.queuing.handSize: Invalid value: 10: required entropy bits of deckSize 128 and handSize 10 should not be greater than 60",
                "spec.limited.lendablePercent: Invalid value: 101: must be between 0 and 100, inclusive",
                "spec.limited.borrowingLimitPercent: Invalid value: -1: if specified, must be a non-negative integer",
            ]
        );
        assert_eq!(
            plc_msgs(&plc("p", json!({"type": "Limited", "limited": {"limitResponse": {"type": "Queue",
                "queuing": {"queues": 20000000, "handSize": 30000000}}}}))),
            vec![
                "spec.limited.limitResponse.queuing.queues: Invalid value: 20000000: must not be greater than 10000000",
                "spec.limited.limitResponse.queuing.handSize: Invalid value: 30000000: should not be greater than queues (20000000)",
            ]
        );
        assert_eq!(
            plc_msgs(&plc("p", json!({"type": "Limited", "limited": {"limitResponse": {"type": "Reject",
                "queuing": {}}}}))),
            vec!["spec.limited.limitResponse.queuing: Forbidden: must be nil if limited.limitResponse.type is not Limited"]
        );
        assert_eq!(
            plc_msgs(&plc("p", json!({"type": "Limited", "limited": {"limitResponse": {"type": "Queue"}}}))),
            vec!["spec.limited.limitResponse.queuing: Required value: must not be empty if limited.limitResponse.type is Limited"]
        );
        assert_eq!(
            plc_msgs(&plc("p", json!({"type": "Bogus"}))),
            vec!["spec.type: Unsupported value: \"Bogus\": supported values: \"Exempt\", \"Limited\""]
        );
        assert_eq!(
            plc_msgs(&plc("p", json!({"type": "Limited"}))),
            vec!["spec.limited: Required value: must not be empty when type is Limited"]
        );
        let mut annotated = plc(
            "p",
            json!({"type": "Limited", "limited": {"limitResponse": {"type": "Reject"}}}),
        );
        annotated["metadata"]["annotations"] =
            json!({"flowcontrol.k8s.io/v1beta3-preserve-zero-concurrency-shares": ""});
        assert_eq!(
            plc_msgs(&annotated),
            vec!["metadata.annotations: Forbidden: annotation 'flowcontrol.k8s.io/v1beta3-preserve-zero-concurrency-shares' is forbidden"]
        );
    }

    /// What the bootstrap ensurer and the mandatory objects' checks compare is the spec with the
    /// defaults every write applies (`builtin::defaults`): a sparse spec equals its defaulted
    /// form, a limited level's explicit zero shares do not equal absent ones.
    #[test]
    fn canonical_specs_are_the_written_defaults() {
        let sparse = json!({"type": "Limited", "limited": {"limitResponse": {"type": "Queue",
            "queuing": {"handSize": 0}}}});
        let mut written = json!({"spec": sparse.clone()});
        defaults::apply(
            FLOWCONTROL,
            "prioritylevelconfigurations",
            &mut written,
            true,
        );
        assert_eq!(
            written["spec"]["limited"]["limitResponse"]["queuing"]["handSize"],
            8
        );
        assert_eq!(
            priority_level_canonical(&sparse),
            priority_level_canonical(&written["spec"])
        );
        let zero = json!({"type": "Limited", "limited": {"nominalConcurrencyShares": 0,
            "limitResponse": {"type": "Queue", "queuing": {}}}});
        assert_ne!(
            priority_level_canonical(&zero),
            priority_level_canonical(&sparse)
        );
        assert_eq!(
            priority_level_canonical(&zero)["limited"]["nominalConcurrencyShares"],
            0
        );
        assert_eq!(
            priority_level_canonical(&json!({"type": "Exempt", "exempt": {}}))["exempt"],
            json!({"nominalConcurrencyShares": 0, "lendablePercent": 0})
        );
        let fs = json!({"priorityLevelConfiguration": {"name": "p"}});
        let mut written = json!({"spec": fs.clone()});
        defaults::apply(FLOWCONTROL, "flowschemas", &mut written, true);
        assert_eq!(written["spec"]["matchingPrecedence"], 1000);
        assert_eq!(
            flow_schema_canonical(&fs),
            flow_schema_canonical(&written["spec"])
        );
        assert_eq!(flow_schema_canonical(&fs)["matchingPrecedence"], 1000);
    }

    #[test]
    fn mandatory_priority_levels() {
        // `exempt`: only `spec.exempt` may change.
        assert!(plc_msgs(&plc(
            "exempt",
            json!({"type": "Exempt",
            "exempt": {"nominalConcurrencyShares": 10, "lendablePercent": 10}})
        ))
        .is_empty());
        assert_eq!(
            plc_msgs(&plc("exempt", json!({"type": "Exempt",
                "exempt": {"nominalConcurrencyShares": -1, "lendablePercent": -1}}))),
            vec![
                "spec.exempt.nominalConcurrencyShares: Invalid value: -1: must be a non-negative integer",
                "spec.exempt.lendablePercent: Invalid value: -1: must be between 0 and 100, inclusive",
            ]
        );
        assert_eq!(
            plc_msgs(&plc("exempt", json!({"type": "Limited",
                "limited": {"nominalConcurrencyShares": 42, "limitResponse": {"type": "Reject"}}}))),
            vec![
                "spec.type: Invalid value: \"Limited\": type must be 'Exempt' if and only if name is 'exempt'",
                "spec: Invalid value: {\"type\":\"Limited\",\"limited\":{\"nominalConcurrencyShares\":42,\"limitResponse\":{\"type\":\"Reject\"}}}: spec of 'exempt' except the 'spec.exempt' field must equal the fixed value",
            ]
        );
        assert_eq!(
            plc_msgs(&plc("p", json!({"type": "Exempt"}))),
            vec!["spec.type: Invalid value: \"Exempt\": type must be 'Exempt' if and only if name is 'exempt'"]
        );
        // `catch-all`: its fixed spec.
        assert!(plc_msgs(&plc("catch-all", json!({"type": "Limited", "limited": {
            "nominalConcurrencyShares": 5, "lendablePercent": 0, "limitResponse": {"type": "Reject"}}}))).is_empty());
        assert_eq!(
            plc_msgs(&plc("catch-all", json!({"type": "Limited", "limited": {
                "limitResponse": {"type": "Reject"}}}))),
            vec!["spec: Invalid value: {\"type\":\"Limited\",\"limited\":{\"limitResponse\":{\"type\":\"Reject\"}}}: spec of 'catch-all' must equal the fixed value"]
        );
    }

    // ---- APIService ----

    fn apisvc(name: &str, spec: Value) -> Value {
        json!({"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
               "metadata": {"name": name}, "spec": spec})
    }

    fn apisvc_msgs(obj: &Value) -> Vec<String> {
        msgs(&validate(APIREGISTRATION, "apiservices", obj, None))
    }

    #[test]
    fn api_services() {
        assert!(apisvc_msgs(&apisvc(
            "v1beta1.metrics.k8s.io",
            json!({"group": "metrics.k8s.io",
            "version": "v1beta1", "groupPriorityMinimum": 100, "versionPriority": 100,
            "service": {"namespace": "kube-system", "name": "metrics-server"}, "caBundle": "AAAA"})
        ))
        .is_empty());
        assert!(apisvc_msgs(&apisvc(
            "v1.apps",
            json!({"group": "apps", "version": "v1",
            "groupPriorityMinimum": 17800, "versionPriority": 15})
        ))
        .is_empty());
        assert!(apisvc_msgs(&apisvc(
            "v1.",
            json!({"version": "v1",
            "groupPriorityMinimum": 18000, "versionPriority": 1})
        ))
        .is_empty());
        assert_eq!(
            apisvc_msgs(&apisvc("wrong", json!({"group": "Metrics", "version": "V1",
                "groupPriorityMinimum": 0, "versionPriority": 1001, "caBundle": "AAAA",
                "insecureSkipTLSVerify": true}))),
            vec![
                "metadata.name: Invalid value: \"wrong\": must be `spec.version+\".\"+spec.group`: \"V1.Metrics\"".to_owned(),
                format!("spec.group: Invalid value: \"Metrics\": {DNS1123_SUBDOMAIN_MSG}"),
                format!("spec.version: Invalid value: \"V1\": {DNS1035_MSG}"),
                "spec.groupPriorityMinimum: Invalid value: 0: must be positive and less than 20000".to_owned(),
                "spec.versionPriority: Invalid value: 1001: must be positive and less than 1000".to_owned(),
                "spec.caBundle: Invalid value: \"3 bytes\": local APIServices may not have a caBundle".to_owned(),
                "spec.insecureSkipTLSVerify: Invalid value: true: local APIServices may not have insecureSkipTLSVerify".to_owned(),
            ]
        );
        assert_eq!(
            apisvc_msgs(&apisvc("v1.x", json!({"version": "v1", "group": "x",
                "groupPriorityMinimum": 1, "versionPriority": 1, "caBundle": "AAAA",
                "insecureSkipTLSVerify": true, "service": {"port": 70000}}))),
            vec![
                "spec.service.namespace: Required value",
                "spec.service.name: Required value",
                "spec.service.port: Invalid value: 70000: port is not valid: must be between 1 and 65535, inclusive",
                "spec.insecureSkipTLSVerify: Invalid value: true: may not be true if caBundle is present",
            ]
        );
        assert_eq!(
            apisvc_msgs(&apisvc("v2.x", json!({"version": "v2",
                "groupPriorityMinimum": 1, "versionPriority": 1}))),
            vec![
                "metadata.name: Invalid value: \"v2.x\": must be `spec.version+\".\"+spec.group`: \"v2.\"",
                "spec.group: Required value: only v1 may have an empty group and it better be legacy kube",
            ]
        );
        let st = json!({"status": {"conditions": [{"type": "Available", "status": "Maybe"},
                                                  {"type": "Available", "status": "True"}]}});
        assert_eq!(
            msgs(&validate_status(APIREGISTRATION, "apiservices", &st, &json!({}))),
            vec!["status.conditions[0].status: Unsupported value: \"Maybe\": supported values: \"True\", \"False\", \"Unknown\""]
        );
    }

    #[test]
    fn other_kinds_are_not_validated_here() {
        assert!(validate("", "pods", &json!({}), None).is_empty());
        assert!(validate_status(
            ADMISSION,
            "validatingwebhookconfigurations",
            &json!({}),
            &json!({})
        )
        .is_empty());
    }
}
