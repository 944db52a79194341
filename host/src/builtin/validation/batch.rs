//! kube 1.34's validation of `batch/v1` Jobs and CronJobs (`pkg/apis/batch/validation`:
//! `ValidateJob`, `ValidateJobUpdate`, `ValidateJobUpdateStatus`, `ValidateCronJobCreate`,
//! `ValidateCronJobUpdate`, composed as the registry strategies compose them, with 1.34's
//! feature gates and status options), with kube's field paths, messages and order.
//!
//! Metadata is validated elsewhere (but for the CronJob's 52-character name and the Indexed
//! Job's Pod hostnames, which are the kinds' own rules). The Pod template is validated by
//! [`pod::pod_template_with`]. The schedule is parsed by [`cron::parse_standard`].

use std::collections::HashSet;

use serde_json::Value;

use super::apps::{
    as_selector, go_json, go_str, int, inv, inv_n, inv_omit, labels_mismatch, nonneg, not_sup,
    opt_json, selector_has_invalid_label_value, selector_json, set, struct_json, template_opts,
    text, validate_label_selector,
};
use super::cron::{self, go_quote};
use super::field::{
    child, dns1123_label, dns1123_subdomain, duplicate, index, qualified_name, required, too_long,
    too_many,
};
use super::pod::{self, PodOpts};
use crate::model::status::Cause;

static NULL: Value = Value::Null;

const MAX_PARALLELISM_FOR_INDEXED_JOB: i64 = 100_000;
const MAX_FAILED_INDEXES_FOR_INDEXED_JOB: i64 = 100_000;
const COMPLETIONS_SOFT_LIMIT: i64 = 100_000;
const PARALLELISM_LIMIT_FOR_HIGH_COMPLETIONS: i64 = 10_000;
const MAX_FAILED_INDEXES_LIMIT_FOR_HIGH_COMPLETIONS: i64 = 10_000;
const MAX_POD_FAILURE_POLICY_RULES: usize = 20;
const MAX_ON_EXIT_CODES_VALUES: usize = 255;
const MAX_ON_POD_CONDITIONS_PATTERNS: usize = 20;
const MAX_MANAGED_BY_LENGTH: usize = 63;
const MAX_SUCCEEDED_INDEXES_LENGTH: usize = 65536;
const MAX_SUCCESS_POLICY_RULES: usize = 20;

const LEGACY_CONTROLLER_UID: &str = "controller-uid";
const LEGACY_JOB_NAME: &str = "job-name";
const CONTROLLER_UID: &str = "batch.kubernetes.io/controller-uid";
const JOB_NAME: &str = "batch.kubernetes.io/job-name";

/// The options kube's Job strategy computes (`JobValidationOptions`).
struct JobOpts {
    pod: PodOpts,
    /// The template must carry the `batch.kubernetes.io/` selector labels.
    require_prefixed_labels: bool,
    /// A suspended Job that never started may change its template's scheduling directives.
    allow_mutable_scheduling_directives: bool,
}

// ---- Job ----

/// kube's Job strategy: `ValidateJob` on create; on update `ValidateJob` and then
/// `ValidateJobUpdate`, which validates the spec again (so each spec cause is listed twice, as
/// kube lists it) and then what may not change.
pub fn job(obj: &Value, old: Option<&Value>) -> Vec<Cause> {
    let spec = obj.get("spec").unwrap_or(&NULL);
    let old_spec = old.map(|o| o.get("spec").unwrap_or(&NULL));
    let mut opts = JobOpts {
        pod: template_opts(old_spec.and_then(|s| s.get("template"))),
        require_prefixed_labels: true,
        allow_mutable_scheduling_directives: false,
    };
    if let (Some(old), Some(old_spec)) = (old, old_spec) {
        if selector_has_invalid_label_value(set(old_spec, "selector")) {
            opts.pod.allow_invalid_label_value_in_selector = true;
        }
        let labels = old_spec.pointer("/template/metadata/labels");
        let has = |k: &str| labels.and_then(|l| l.get(k)).is_some();
        opts.require_prefixed_labels = has(JOB_NAME) && has(CONTROLLER_UID);
        opts.allow_mutable_scheduling_directives = old_spec.get("suspend")
            == Some(&Value::Bool(true))
            && old.pointer("/status/startTime").is_none_or(Value::is_null);
    }
    let mut out = Vec::new();
    validate_job(obj, &opts, &mut out);
    if let Some(old_spec) = old_spec {
        job_spec_update(spec, old_spec, &opts, &mut out);
    }
    out
}

/// kube's `ValidateJob` (less metadata).
fn validate_job(obj: &Value, opts: &JobOpts, out: &mut Vec<Cause>) {
    let spec = obj.get("spec").unwrap_or(&NULL);
    generated_selector(obj, opts.require_prefixed_labels, out);
    job_spec(spec, "spec", &opts.pod, out);
    if text(spec, "completionMode") == "Indexed" {
        if let Some(completions) = int(spec, "completions").filter(|c| *c > 0) {
            let name = obj
                .pointer("/metadata/name")
                .and_then(Value::as_str)
                .unwrap_or("");
            let host = format!("{name}-{}", completions - 1);
            if !dns1123_label(&host).is_empty() {
                out.push(inv(
                    "metadata.name",
                    &go_quote(name),
                    &format!("will not able to create pod with invalid DNS label: {host}"),
                ));
            }
        }
    }
}

/// kube's `validateGeneratedSelector`: a Job whose selector the server generated keeps it, and
/// its template keeps the labels it selects.
fn generated_selector(obj: &Value, require_prefixed: bool, out: &mut Vec<Cause>) {
    let spec = obj.get("spec").unwrap_or(&NULL);
    if spec.get("manualSelector") == Some(&Value::Bool(true)) {
        return;
    }
    let Some(sel) = set(spec, "selector") else {
        return;
    };
    let uid = obj
        .pointer("/metadata/uid")
        .and_then(Value::as_str)
        .unwrap_or("");
    if uid.is_empty() {
        out.push(required("metadata.uid", ""));
        return;
    }
    let name = obj
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("");
    let labels = spec.pointer("/template/metadata/labels");
    has_label(labels, LEGACY_CONTROLLER_UID, uid, out);
    has_label(labels, LEGACY_JOB_NAME, name, out);
    let mut expected = Vec::new();
    if require_prefixed {
        has_label(labels, CONTROLLER_UID, uid, out);
        has_label(labels, JOB_NAME, name, out);
        expected.push((CONTROLLER_UID, uid));
        expected.push((JOB_NAME, name));
    }
    expected.push((LEGACY_CONTROLLER_UID, uid));
    expected.push((LEGACY_JOB_NAME, name));
    if let Ok(s) = as_selector(Some(sel)) {
        if !s.matches_pairs(&expected) {
            out.push(inv(
                "spec.selector",
                &selector_json(Some(sel)),
                "`selector` not auto-generated",
            ));
        }
    }
}

/// kube's `ValidateHasLabel` of the template's metadata.
fn has_label(labels: Option<&Value>, key: &str, expected: &str, out: &mut Vec<Cause>) {
    let path = format!("spec.template.metadata.labels[{key}]");
    let detail = format!("must be '{expected}'");
    match labels.and_then(|l| l.get(key)) {
        None => out.push(required(&path, &detail)),
        Some(v) if v.as_str() != Some(expected) => out.push(inv(
            &path,
            &opt_json(labels.filter(|l| !l.is_null())),
            &detail,
        )),
        Some(_) => {}
    }
}

/// kube's `ValidateJobSpec`: [`job_spec_common`], then the selector.
fn job_spec(spec: &Value, path: &str, opts: &PodOpts, out: &mut Vec<Cause>) {
    job_spec_common(spec, path, opts, out);
    let selector = set(spec, "selector");
    let sel_path = child(path, "selector");
    match selector {
        None => out.push(required(&sel_path, "")),
        Some(_) => validate_label_selector(
            selector,
            opts.allow_invalid_label_value_in_selector,
            &sel_path,
            out,
        ),
    }
    if let Ok(sel) = as_selector(selector) {
        let labels = spec.pointer("/template/metadata/labels");
        if !sel.matches(labels.and_then(Value::as_object)) {
            out.push(labels_mismatch(
                labels,
                &format!("{path}.template.metadata.labels"),
            ));
        }
    }
}

/// kube's `validateJobSpec` (also a CronJob's job template's).
fn job_spec_common(spec: &Value, p: &str, opts: &PodOpts, out: &mut Vec<Cause>) {
    let path = |f: &str| child(p, f);
    for f in [
        "parallelism",
        "completions",
        "activeDeadlineSeconds",
        "backoffLimit",
        "ttlSecondsAfterFinished",
        "backoffLimitPerIndex",
    ] {
        nonneg(spec, f, &path(f), out);
    }
    let parallelism = int(spec, "parallelism");
    let completions = int(spec, "completions");
    let per_index = int(spec, "backoffLimitPerIndex");
    let max_failed = int(spec, "maxFailedIndexes");
    if set(spec, "maxFailedIndexes").is_some() {
        nonneg(spec, "maxFailedIndexes", &path("maxFailedIndexes"), out);
        if set(spec, "backoffLimitPerIndex").is_none() {
            out.push(required(
                &path("backoffLimitPerIndex"),
                "when maxFailedIndexes is specified",
            ));
        }
    }
    if let Some(managed_by) = set(spec, "managedBy").and_then(Value::as_str) {
        let mp = path("managedBy");
        domain_prefixed_path(managed_by, &mp, out);
        if managed_by.len() > MAX_MANAGED_BY_LENGTH {
            out.push(too_long(&mp, MAX_MANAGED_BY_LENGTH));
        }
    }
    let mode = set(spec, "completionMode").and_then(Value::as_str);
    let indexed = mode == Some("Indexed");
    if let Some(mode) = mode {
        if mode != "NonIndexed" && mode != "Indexed" {
            out.push(not_sup(
                &path("completionMode"),
                &go_str(mode),
                &["NonIndexed", "Indexed"],
            ));
        }
        if indexed {
            if completions.is_none() {
                out.push(required(
                    &path("completions"),
                    "when completion mode is Indexed",
                ));
            }
            if let Some(n) = parallelism.filter(|n| *n > MAX_PARALLELISM_FOR_INDEXED_JOB) {
                out.push(inv_n(
                    &path("parallelism"),
                    n,
                    "must be less than or equal to 100000 when completion mode is Indexed",
                ));
            }
            if let (Some(c), Some(m)) = (completions, max_failed) {
                if m > c {
                    out.push(inv_n(
                        &path("maxFailedIndexes"),
                        m,
                        "must be less than or equal to completions",
                    ));
                }
            }
            if let Some(m) = max_failed.filter(|m| *m > MAX_FAILED_INDEXES_FOR_INDEXED_JOB) {
                out.push(inv_n(
                    &path("maxFailedIndexes"),
                    m,
                    "must be less than or equal to 100000",
                ));
            }
            if completions.is_some_and(|c| c > COMPLETIONS_SOFT_LIMIT) && per_index.is_some() {
                const HIGH: &str = "must be less than or equal to 10000 when completions are above 100000 and used with backoff limit per index";
                if max_failed.is_none() {
                    out.push(required(
                        &path("maxFailedIndexes"),
                        "must be specified when completions is above 100000",
                    ));
                }
                if let Some(n) = parallelism.filter(|n| *n > PARALLELISM_LIMIT_FOR_HIGH_COMPLETIONS)
                {
                    out.push(inv_n(&path("parallelism"), n, HIGH));
                }
                if let Some(m) =
                    max_failed.filter(|m| *m > MAX_FAILED_INDEXES_LIMIT_FOR_HIGH_COMPLETIONS)
                {
                    out.push(inv_n(&path("maxFailedIndexes"), m, HIGH));
                }
            }
        }
    }
    if mode.is_none() || mode == Some("NonIndexed") {
        if let Some(n) = per_index {
            out.push(inv_n(
                &path("backoffLimitPerIndex"),
                n,
                "requires indexed completion mode",
            ));
        }
        if let Some(m) = max_failed {
            out.push(inv_n(
                &path("maxFailedIndexes"),
                m,
                "requires indexed completion mode",
            ));
        }
    }
    let failure_policy = set(spec, "podFailurePolicy");
    if let Some(pfp) = failure_policy {
        pod_failure_policy(spec, pfp, &path("podFailurePolicy"), out);
    }
    if let Some(sp) = set(spec, "successPolicy") {
        if indexed {
            success_policy(sp, completions, &path("successPolicy"), out);
        } else {
            out.push(inv(
                &path("successPolicy"),
                &success_policy_json(sp),
                "requires indexed completion mode",
            ));
        }
    }
    if let Some(prp) = set(spec, "podReplacementPolicy").and_then(Value::as_str) {
        let pp = path("podReplacementPolicy");
        if failure_policy.is_some() && prp != "Failed" {
            out.push(not_sup(&pp, &go_str(prp), &["Failed"]));
        } else if prp != "Failed" && prp != "TerminatingOrFailed" {
            out.push(not_sup(
                &pp,
                &go_str(prp),
                &["Failed", "TerminatingOrFailed"],
            ));
        }
    }
    let template = spec.get("template").unwrap_or(&NULL);
    pod::pod_template_with(template, opts, &path("template"), out);
    let rp_path = format!("{p}.template.spec.restartPolicy");
    let tspec = template.get("spec").unwrap_or(&NULL);
    match text(tspec, "restartPolicy") {
        "" | "Always" => out.push(required(&rp_path, "valid values: \"OnFailure\", \"Never\"")),
        "OnFailure" | "Never" => {
            if failure_policy.is_some() && text(tspec, "restartPolicy") != "Never" {
                out.push(inv(
                    &rp_path,
                    &go_str(text(tspec, "restartPolicy")),
                    "only \"Never\" is supported when podFailurePolicy is specified",
                ));
            }
        }
        rp => out.push(not_sup(&rp_path, &go_str(rp), &["OnFailure", "Never"])),
    }
}

/// `IsDomainPrefixedPath` (a Job's `managedBy`).
fn domain_prefixed_path(v: &str, path: &str, out: &mut Vec<Cause>) {
    if v.is_empty() {
        out.push(required(path, ""));
        return;
    }
    let Some((host, rest)) = v
        .split_once('/')
        .filter(|(h, r)| !h.is_empty() && !r.is_empty())
    else {
        out.push(inv(
            path,
            &go_quote(v),
            "must be a domain-prefixed path (such as \"acme.io/foo\")",
        ));
        return;
    };
    for msg in dns1123_subdomain(host) {
        out.push(inv(path, &go_quote(host), &msg));
    }
    let ok = rest
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "/-._~%!$&'()*+,;=:".contains(c));
    if !ok {
        out.push(inv(
            path,
            &go_quote(rest),
            "Invalid path (regex used for validation is '[A-Za-z0-9/\\-._~%!$&'()*+,;=:]+')",
        ));
    }
}

/// kube's `validatePodFailurePolicy`.
fn pod_failure_policy(spec: &Value, pfp: &Value, p: &str, out: &mut Vec<Cause>) {
    let rules = super::field::items(pfp, "rules");
    let rules_path = child(p, "rules");
    if rules.len() > MAX_POD_FAILURE_POLICY_RULES {
        out.push(too_many(
            &rules_path,
            rules.len(),
            MAX_POD_FAILURE_POLICY_RULES,
        ));
    }
    let tspec = spec.pointer("/template/spec").unwrap_or(&NULL);
    let names: HashSet<&str> = ["containers", "initContainers"]
        .iter()
        .flat_map(|f| super::field::items(tspec, f))
        .map(|c| text(c, "name"))
        .collect();
    let per_index = set(spec, "backoffLimitPerIndex").is_some();
    for (i, rule) in rules.iter().enumerate() {
        let r = index(&rules_path, i);
        let action = text(rule, "action");
        let ap = child(&r, "action");
        const ACTIONS: [&str; 4] = ["Count", "FailIndex", "FailJob", "Ignore"];
        if action.is_empty() {
            out.push(required(
                &ap,
                "valid values: [\"Count\" \"FailIndex\" \"FailJob\" \"Ignore\"]",
            ));
        } else if action == "FailIndex" {
            if !per_index {
                out.push(inv(
                    &ap,
                    &go_str(action),
                    "requires the backoffLimitPerIndex to be set",
                ));
            }
        } else if !ACTIONS.contains(&action) {
            out.push(not_sup(&ap, &go_str(action), &ACTIONS));
        }
        let on_exit = set(rule, "onExitCodes");
        if let Some(e) = on_exit {
            let ep = child(&r, "onExitCodes");
            let op = text(e, "operator");
            if op.is_empty() {
                out.push(required(
                    &child(&ep, "operator"),
                    "valid values: [\"In\" \"NotIn\"]",
                ));
            } else if op != "In" && op != "NotIn" {
                out.push(not_sup(
                    &child(&ep, "operator"),
                    &go_str(op),
                    &["In", "NotIn"],
                ));
            }
            if let Some(name) = set(e, "containerName").and_then(Value::as_str) {
                if !names.contains(name) {
                    out.push(inv(
                        &child(&ep, "containerName"),
                        &go_str(name),
                        "must be one of the container or initContainer names in the pod template",
                    ));
                }
            }
            let vp = child(&ep, "values");
            let values: Vec<i64> = super::field::items(e, "values")
                .iter()
                .map(|v| v.as_i64().unwrap_or(0))
                .collect();
            if values.is_empty() {
                let shown = if e.get("values").is_some_and(Value::is_array) {
                    "[]"
                } else {
                    "null"
                };
                out.push(inv(&vp, shown, "at least one value is required"));
            } else if values.len() > MAX_ON_EXIT_CODES_VALUES {
                out.push(too_many(&vp, values.len(), MAX_ON_EXIT_CODES_VALUES));
            }
            let mut seen = HashSet::new();
            let mut ordered = true;
            for (j, v) in values.iter().enumerate() {
                if op == "In" && *v == 0 {
                    out.push(inv_n(
                        &index(&vp, j),
                        0,
                        "must not be 0 for the In operator",
                    ));
                }
                if !seen.insert(*v) {
                    out.push(duplicate(&index(&vp, j), &Value::from(*v)));
                }
                if j > 0 && values[j - 1] > *v {
                    ordered = false;
                }
            }
            if !ordered {
                let shown = format!(
                    "[{}]",
                    values
                        .iter()
                        .map(i64::to_string)
                        .collect::<Vec<_>>()
                        .join(",")
                );
                out.push(inv(&vp, &shown, "must be ordered"));
            }
        }
        let conditions = super::field::items(rule, "onPodConditions");
        if !conditions.is_empty() {
            let cp = child(&r, "onPodConditions");
            if conditions.len() > MAX_ON_POD_CONDITIONS_PATTERNS {
                out.push(too_many(
                    &cp,
                    conditions.len(),
                    MAX_ON_POD_CONDITIONS_PATTERNS,
                ));
            }
            for (j, c) in conditions.iter().enumerate() {
                let jp = index(&cp, j);
                let ty = text(c, "type");
                for msg in qualified_name(ty) {
                    out.push(inv(&child(&jp, "type"), &go_quote(ty), &msg));
                }
                let status = text(c, "status");
                const STATUSES: [&str; 3] = ["False", "True", "Unknown"];
                if status.is_empty() {
                    out.push(required(
                        &child(&jp, "status"),
                        "valid values: [\"False\" \"True\" \"Unknown\"]",
                    ));
                } else if !STATUSES.contains(&status) {
                    out.push(not_sup(&child(&jp, "status"), &go_str(status), &STATUSES));
                }
            }
        }
        match (on_exit.is_some(), !conditions.is_empty()) {
            (true, true) => out.push(inv_omit(
                &r,
                "specifying both OnExitCodes and OnPodConditions is not supported",
            )),
            (false, false) => out.push(inv_omit(
                &r,
                "specifying one of OnExitCodes and OnPodConditions is required",
            )),
            _ => {}
        }
    }
}

/// kube's `validateSuccessPolicy` (Indexed Jobs).
fn success_policy(sp: &Value, completions: Option<i64>, p: &str, out: &mut Vec<Cause>) {
    let rules = super::field::items(sp, "rules");
    let rules_path = child(p, "rules");
    if rules.is_empty() {
        out.push(required(
            &rules_path,
            "at least one rules must be specified when the successPolicy is specified",
        ));
    }
    if rules.len() > MAX_SUCCESS_POLICY_RULES {
        out.push(too_many(&rules_path, rules.len(), MAX_SUCCESS_POLICY_RULES));
    }
    for (i, rule) in rules.iter().enumerate() {
        let r = index(&rules_path, i);
        let indexes = set(rule, "succeededIndexes").and_then(Value::as_str);
        let count = int(rule, "succeededCount");
        if indexes.is_none() && set(rule, "succeededCount").is_none() {
            out.push(required(
                &r,
                "at least one of succeededCount or succeededIndexes must be specified",
            ));
        }
        let mut total = 0;
        if let Some(s) = indexes {
            let ip = child(&r, "succeededIndexes");
            if s.len() > MAX_SUCCEEDED_INDEXES_LENGTH {
                out.push(too_long(&ip, MAX_SUCCEEDED_INDEXES_LENGTH));
            }
            // (kube dereferences `completions`, which an Indexed Job has once defaulted.)
            if let Some(c) = completions {
                match validate_indexes_format(s, c) {
                    Ok(t) => total = t,
                    Err(e) => out.push(inv(
                        &ip,
                        &go_quote(s),
                        &format!("error parsing succeededIndexes: {e}"),
                    )),
                }
            }
        }
        if let Some(n) = count {
            let cp = child(&r, "succeededCount");
            if n < 0 {
                out.push(inv_n(&cp, n, super::apps::NEGATIVE));
            }
            if let Some(c) = completions.filter(|c| n > *c) {
                out.push(inv_n(
                    &cp,
                    n,
                    &format!(
                        "must be less than or equal to {c} (the number of specified completions)"
                    ),
                ));
            }
            if indexes.is_some() && n > total {
                out.push(inv_n(
                    &cp,
                    n,
                    &format!("must be less than or equal to {total} (the number of indexes in the specified succeededIndexes field)"),
                ));
            }
        }
    }
}

/// kube's `parseIndexInterval`: `x` or `x-y`, below `completions`, increasing.
fn parse_index_interval(s: &str, completions: i64) -> Result<(i64, i64), String> {
    let parts: Vec<&str> = s.split('-').collect();
    if parts.len() > 2 {
        return Err(format!(
            "the fragment {} violates the requirement that an index interval can have at most two parts separated by '-'",
            go_quote(s)
        ));
    }
    let parse = |t: &str| -> Result<i64, String> {
        let n = cron::atoi(t).map_err(|_| {
            format!(
                "cannot convert string to integer for index: {}",
                go_quote(t)
            )
        })?;
        if n >= completions {
            return Err(format!("too large index: {}", go_quote(t)));
        }
        Ok(n)
    };
    let x = parse(parts[0])?;
    let y = match parts.get(1) {
        Some(t) => {
            let y = parse(t)?;
            if x >= y {
                return Err(format!("non-increasing order, previous: {x}, current: {y}"));
            }
            y
        }
        None => x,
    };
    Ok((x, y))
}

/// kube's `validateIndexesFormat`: the number of indexes, or why the list does not parse.
fn validate_indexes_format(s: &str, completions: i64) -> Result<i64, String> {
    if s.is_empty() {
        return Ok(0);
    }
    let mut last: Option<i64> = None;
    let mut total = 0;
    for interval in s.split(',') {
        let (x, y) = parse_index_interval(interval, completions)?;
        if let Some(l) = last.filter(|l| *l >= x) {
            return Err(format!("non-increasing order, previous: {l}, current: {x}"));
        }
        total += y - x + 1;
        last = Some(y);
    }
    Ok(total)
}

/// kube's `validateFailedIndexesNotOverlapCompleted`: the first index in both lists.
fn indexes_overlap(completed: &str, failed: &str, completions: i64) -> Option<i64> {
    if completed.is_empty() || failed.is_empty() {
        return None;
    }
    let c: Vec<&str> = completed.split(',').collect();
    let f: Vec<&str> = failed.split(',').collect();
    let (mut ci, mut fi) = (0, 0);
    let mut cur_c = parse_index_interval(c[0], completions);
    let mut cur_f = parse_index_interval(f[0], completions);
    while ci < c.len() && fi < f.len() {
        let cv = cur_c.as_ref().ok().copied();
        let fv = cur_f.as_ref().ok().copied();
        match (cv, fv) {
            (None, _) => {
                ci += 1;
                if ci < c.len() {
                    cur_c = parse_index_interval(c[ci], completions);
                }
            }
            (_, None) => {
                fi += 1;
                if fi < f.len() {
                    cur_f = parse_index_interval(f[fi], completions);
                }
            }
            (Some((cx, cy)), Some((fx, fy))) => {
                if cx <= fy && fx <= cy {
                    return Some(cx.max(fx));
                } else if cy < fx {
                    ci += 1;
                    if ci < c.len() {
                        cur_c = parse_index_interval(c[ci], completions);
                    }
                } else {
                    fi += 1;
                    if fi < f.len() {
                        cur_f = parse_index_interval(f[fi], completions);
                    }
                }
            }
        }
    }
    None
}

/// An internal struct's JSON of a list field: `null` when unset, else the items rendered.
fn list_json(v: &Value, key: &str, item: impl Fn(&Value) -> String) -> String {
    match v.get(key) {
        Some(Value::Array(a)) => format!("[{}]", a.iter().map(item).collect::<Vec<_>>().join(",")),
        _ => "null".to_owned(),
    }
}

/// The internal `batch.SuccessPolicy` as `json.Marshal` prints it (Go field names).
fn success_policy_json(sp: &Value) -> String {
    struct_json(&[(
        "Rules",
        list_json(sp, "rules", |r| {
            struct_json(&[
                ("SucceededIndexes", opt_json(set(r, "succeededIndexes"))),
                ("SucceededCount", opt_json(set(r, "succeededCount"))),
            ])
        }),
    )])
}

/// The internal `batch.PodFailurePolicy` as `json.Marshal` prints it (Go field names).
fn pod_failure_policy_json(pfp: &Value) -> String {
    struct_json(&[(
        "Rules",
        list_json(pfp, "rules", |r| {
            let on_exit = set(r, "onExitCodes").map_or_else(
                || "null".to_owned(),
                |e| {
                    struct_json(&[
                        ("ContainerName", opt_json(set(e, "containerName"))),
                        ("Operator", go_str(text(e, "operator"))),
                        ("Values", list_json(e, "values", go_json)),
                    ])
                },
            );
            struct_json(&[
                ("Action", go_str(text(r, "action"))),
                ("OnExitCodes", on_exit),
                (
                    "OnPodConditions",
                    list_json(r, "onPodConditions", |c| {
                        struct_json(&[
                            ("Type", go_str(text(c, "type"))),
                            ("Status", go_str(text(c, "status"))),
                        ])
                    }),
                ),
            ])
        }),
    )])
}

/// `ValidateImmutableField` of an optional field (`Semantic.DeepEqual`), the new value shown
/// as `shown`.
fn immutable_field(
    new: Option<&Value>,
    old: Option<&Value>,
    path: &str,
    shown: &str,
    out: &mut Vec<Cause>,
) {
    let norm = |v: Option<&Value>| {
        v.filter(|v| !v.is_null())
            .map(|v| super::field::zero_dropped(v, true))
    };
    if norm(new) != norm(old) {
        out.push(inv(path, shown, "field is immutable"));
    }
}

/// kube's `ValidateJobSpecUpdate` (after `ValidateObjectMetaUpdate`).
fn job_spec_update(spec: &Value, old_spec: &Value, opts: &JobOpts, out: &mut Vec<Cause>) {
    job_spec(spec, "spec", &opts.pod, out);
    // validateCompletions (ElasticIndexedJob is GA).
    let completions = set(spec, "completions");
    let old_completions = set(old_spec, "completions");
    if text(spec, "completionMode") != "Indexed" {
        immutable_field(
            completions,
            old_completions,
            "spec.completions",
            &opt_json(completions),
            out,
        );
    } else if completions != old_completions {
        if let Some(c) = completions.and_then(Value::as_i64) {
            if c != int(spec, "parallelism").unwrap_or(1) {
                out.push(inv_n(
                    "spec.completions",
                    c,
                    "can only be modified in tandem with spec.parallelism",
                ));
            }
        }
    }
    super::apps::immutable_selector(
        set(spec, "selector"),
        set(old_spec, "selector"),
        "spec.selector",
        out,
    );
    let template = set(spec, "template");
    let mut old_template = set(old_spec, "template").cloned().unwrap_or(Value::Null);
    if opts.allow_mutable_scheduling_directives {
        let new_t = template.unwrap_or(&NULL);
        mutable_scheduling_directives(&mut old_template, new_t);
    }
    immutable_field(
        template,
        Some(&old_template),
        "spec.template",
        &opt_json(template),
        out,
    );
    let mode = set(spec, "completionMode");
    immutable_field(
        mode,
        set(old_spec, "completionMode"),
        "spec.completionMode",
        &opt_json(mode),
        out,
    );
    let pfp = set(spec, "podFailurePolicy");
    immutable_field(
        pfp,
        set(old_spec, "podFailurePolicy"),
        "spec.podFailurePolicy",
        &pfp.map_or_else(|| "null".to_owned(), pod_failure_policy_json),
        out,
    );
    let per_index = set(spec, "backoffLimitPerIndex");
    immutable_field(
        per_index,
        set(old_spec, "backoffLimitPerIndex"),
        "spec.backoffLimitPerIndex",
        &opt_json(per_index),
        out,
    );
    let managed_by = set(spec, "managedBy");
    immutable_field(
        managed_by,
        set(old_spec, "managedBy"),
        "spec.managedBy",
        &opt_json(managed_by),
        out,
    );
    let sp = set(spec, "successPolicy");
    immutable_field(
        sp,
        set(old_spec, "successPolicy"),
        "spec.successPolicy",
        &sp.map_or_else(|| "null".to_owned(), success_policy_json),
        out,
    );
}

/// What a suspended Job that never started may change in its template: the old template with
/// the new scheduling directives (node selector, tolerations, scheduling gates, labels,
/// annotations, node affinity).
fn mutable_scheduling_directives(old_t: &mut Value, new_t: &Value) {
    if !old_t.is_object() {
        *old_t = Value::Object(Default::default());
    }
    let copy = |dst: &mut Value, src: &Value, key: &str| {
        let Some(d) = dst.as_object_mut() else { return };
        match src.get(key) {
            Some(v) => {
                d.insert(key.to_owned(), v.clone());
            }
            None => {
                d.remove(key);
            }
        }
    };
    let new_meta = new_t.get("metadata").unwrap_or(&NULL);
    let new_spec = new_t.get("spec").unwrap_or(&NULL);
    if let Some(o) = old_t.as_object_mut() {
        for key in ["metadata", "spec"] {
            if !o.get(key).is_some_and(Value::is_object) {
                o.insert(key.to_owned(), Value::Object(Default::default()));
            }
        }
        if let Some(meta) = o.get_mut("metadata") {
            copy(meta, new_meta, "labels");
            copy(meta, new_meta, "annotations");
        }
        if let Some(spec) = o.get_mut("spec") {
            copy(spec, new_spec, "nodeSelector");
            copy(spec, new_spec, "tolerations");
            copy(spec, new_spec, "schedulingGates");
            let new_affinity = set(new_spec, "affinity");
            match new_affinity {
                Some(na) => {
                    if let Some(s) = spec.as_object_mut() {
                        let a = s
                            .entry("affinity")
                            .or_insert_with(|| Value::Object(Default::default()));
                        if !a.is_object() {
                            *a = Value::Object(Default::default());
                        }
                        copy(a, na, "nodeAffinity");
                    }
                }
                None => {
                    let only_node = set(spec, "affinity").is_some_and(|a| {
                        a.as_object().is_some_and(|m| {
                            m.iter().all(|(k, v)| k == "nodeAffinity" || v.is_null())
                        })
                    });
                    if only_node {
                        if let Some(s) = spec.as_object_mut() {
                            s.remove("affinity");
                        }
                    }
                }
            }
        }
    }
}

// ---- Job status ----

/// Whether the status has a condition of `ty` with status `True`.
fn condition(status: &Value, ty: &str) -> bool {
    super::field::items(status, "conditions")
        .iter()
        .any(|c| text(c, "type") == ty && text(c, "status") == "True")
}

/// kube's `ValidateJobUpdateStatus` (status fields only) with 1.34's status options
/// (`JobManagedBy` on): most checks run only when the fields they look at changed.
pub fn job_status(obj: &Value, old: &Value) -> Vec<Cause> {
    let spec = obj.get("spec").unwrap_or(&NULL);
    let st = obj.get("status").unwrap_or(&NULL);
    let os = old.get("status").unwrap_or(&NULL);
    let mut out = Vec::new();
    let indexed = text(spec, "completionMode") == "Indexed";
    let completions = int(spec, "completions");
    let count = |s: &Value, f: &str| int(s, f).unwrap_or(0);
    let field = |s: &Value, f: &str| set(s, f).cloned();
    let changed = |f: &str| field(st, f) != field(os, f);
    let complete = condition(st, "Complete");
    let failed_cond = condition(st, "Failed");
    let failure_target = condition(st, "FailureTarget");
    let scm = condition(st, "SuccessCriteriaMet");
    let finished = complete || failed_cond;
    let old_finished = condition(os, "Complete") || condition(os, "Failed");
    let cond_changed = |t: &str| condition(st, t) != condition(os, t);
    let finished_changed = finished != old_finished;
    let uncounted = set(st, "uncountedTerminatedPods");
    let uncounted_changed = uncounted.map(|u| super::field::zero_dropped(u, true))
        != set(os, "uncountedTerminatedPods").map(|u| super::field::zero_dropped(u, true));
    let completion_time = set(st, "completionTime");
    let start_time = set(st, "startTime");
    let failed_indexes = set(st, "failedIndexes").and_then(Value::as_str);
    let completed_indexes = text(st, "completedIndexes");
    let per_index = set(spec, "backoffLimitPerIndex").is_some();

    // validateJobStatus
    for f in ["active", "succeeded", "failed", "ready", "terminating"] {
        nonneg(st, f, &child("status", f), &mut out);
    }
    if let Some(u) = uncounted {
        let path = "status.uncountedTerminatedPods";
        let mut seen = HashSet::new();
        for which in ["succeeded", "failed"] {
            for (i, k) in super::field::items(u, which).iter().enumerate() {
                let p = index(&child(path, which), i);
                let k = k.as_str().unwrap_or("");
                if k.is_empty() {
                    out.push(inv(&p, "\"\"", "must not be empty"));
                } else if !seen.insert(k) {
                    out.push(duplicate(&p, &Value::String(k.to_owned())));
                }
            }
        }
    }
    let conditions_path = "status.conditions";
    // RejectCompleteJobWithFailedCondition
    if (cond_changed("Complete") || cond_changed("Failed")) && complete && failed_cond {
        out.push(inv_omit(
            conditions_path,
            "cannot set Complete=True and Failed=true conditions",
        ));
    }
    // RejectCompleteJobWithFailureTargetCondition
    if (cond_changed("Complete") || cond_changed("FailureTarget")) && complete && failure_target {
        out.push(inv_omit(
            conditions_path,
            "cannot set Complete=True and FailureTarget=true conditions",
        ));
    }
    let complete_or_time_changed = cond_changed("Complete") || changed("completionTime");
    // RejectNotCompleteJobWithCompletionTime
    if complete_or_time_changed && !complete {
        if let Some(t) = completion_time {
            out.push(inv(
                "status.completionTime",
                &go_json(t),
                "cannot set completionTime when there is no Complete=True condition",
            ));
        }
    }
    // RejectCompleteJobWithoutCompletionTime
    if complete_or_time_changed && complete && completion_time.is_none() {
        out.push(required(
            "status.completionTime",
            "completionTime is required for Complete jobs",
        ));
    }
    // RejectCompletionTimeBeforeStartTime
    if changed("startTime") || changed("completionTime") {
        if let (Some(c), Some(s)) = (completion_time, start_time) {
            let parse = |v: &Value| {
                v.as_str()
                    .and_then(|s| chrono::DateTime::parse_from_rfc3339(s).ok())
            };
            if let (Some(ct), Some(stt)) = (parse(c), parse(s)) {
                if ct < stt {
                    out.push(inv(
                        "status.completionTime",
                        &go_json(c),
                        "completionTime cannot be set before startTime",
                    ));
                }
            }
        }
    }
    // RejectFailedJobWithoutFailureTarget
    if (cond_changed("Failed") || cond_changed("FailureTarget")) && failed_cond && !failure_target {
        out.push(inv_omit(
            conditions_path,
            "cannot set Failed=True condition without the FailureTarget=true condition",
        ));
    }
    // RejectCompleteJobWithoutSuccessCriteriaMet
    if (cond_changed("Complete") || cond_changed("SuccessCriteriaMet")) && complete && !scm {
        out.push(inv_omit(
            conditions_path,
            "cannot set Complete=True condition without the SuccessCriteriaMet=true condition",
        ));
    }
    // RejectFinishedJobWithActivePods
    if (finished_changed || changed("active")) && finished && count(st, "active") > 0 {
        out.push(inv_n(
            "status.active",
            count(st, "active"),
            "active>0 is invalid for finished job",
        ));
    }
    // RejectFinishedJobWithoutStartTime
    if (finished_changed || changed("startTime")) && finished && start_time.is_none() {
        out.push(required(
            "status.startTime",
            "startTime is required for finished job",
        ));
    }
    // RejectFinishedJobWithUncountedTerminatedPods
    if (finished_changed || uncounted_changed) && finished {
        if let Some(u) = uncounted {
            let n =
                super::field::items(u, "succeeded").len() + super::field::items(u, "failed").len();
            if n > 0 {
                let shown = struct_json(&[
                    ("Succeeded", list_json(u, "succeeded", go_json)),
                    ("Failed", list_json(u, "failed", go_json)),
                ]);
                out.push(inv(
                    "status.uncountedTerminatedPods",
                    &shown,
                    "uncountedTerminatedPods needs to be empty for finished job",
                ));
            }
        }
    }
    // RejectInvalidCompletedIndexes
    if text(st, "completedIndexes") != text(os, "completedIndexes") {
        if let Some(c) = completions {
            if let Err(e) = validate_indexes_format(completed_indexes, c) {
                out.push(inv(
                    "status.completedIndexes",
                    &go_quote(completed_indexes),
                    &format!("error parsing completedIndexes: {e}"),
                ));
            }
        }
    }
    let failed_indexes_changed = changed("failedIndexes");
    // RejectInvalidFailedIndexes
    if failed_indexes_changed && per_index {
        if let (Some(c), Some(fi)) = (completions, failed_indexes) {
            if let Err(e) = validate_indexes_format(fi, c) {
                out.push(inv(
                    "status.failedIndexes",
                    &go_str(fi),
                    &format!("error parsing failedIndexes: {e}"),
                ));
            }
        }
    }
    // RejectCompletedIndexesForNonIndexedJob
    if text(st, "completedIndexes") != text(os, "completedIndexes")
        && !completed_indexes.is_empty()
        && !indexed
    {
        out.push(inv(
            "status.completedIndexes",
            &go_quote(completed_indexes),
            "cannot set non-empty completedIndexes when non-indexed completion mode",
        ));
    }
    // RejectFailedIndexesForNoBackoffLimitPerIndex
    if failed_indexes_changed && !per_index {
        if let Some(fi) = failed_indexes {
            out.push(inv(
                "status.failedIndexes",
                &go_str(fi),
                "cannot set non-null failedIndexes when backoffLimitPerIndex is null",
            ));
        }
    }
    // RejectFailedIndexesOverlappingCompleted
    if failed_indexes_changed || text(st, "completedIndexes") != text(os, "completedIndexes") {
        if let (Some(c), Some(fi)) = (completions, failed_indexes) {
            if let Some(i) = indexes_overlap(completed_indexes, fi, c) {
                out.push(inv(
                    "status.failedIndexes",
                    &go_str(fi),
                    &format!("failedIndexes and completedIndexes overlap at index: {i}"),
                ));
            }
        }
    }
    // RejectFinishedJobWithTerminatingPods
    if (finished_changed || changed("terminating")) && finished {
        if let Some(n) = int(st, "terminating").filter(|n| *n > 0) {
            out.push(inv_n(
                "status.terminating",
                n,
                "terminating>0 is invalid for finished job",
            ));
        }
    }
    // RejectMoreReadyThanActivePods
    if changed("ready") || changed("active") {
        if let Some(r) = int(st, "ready").filter(|r| *r > count(st, "active")) {
            out.push(inv_n(
                "status.ready",
                r,
                "cannot set more ready pods than active",
            ));
        }
    }
    // (AllowForSuccessCriteriaMetInExtendedScope is set: SuccessCriteriaMet may be set on any
    // Job.)
    if scm && failed_cond {
        out.push(inv_omit(
            conditions_path,
            "cannot set SuccessCriteriaMet=True and Failed=true conditions",
        ));
    }
    if scm && failure_target {
        out.push(inv_omit(
            conditions_path,
            "cannot set SuccessCriteriaMet=True and FailureTarget=true conditions",
        ));
    }
    if set(spec, "successPolicy").is_some() && !scm && complete {
        out.push(inv_omit(
            conditions_path,
            "cannot set Complete=True for Job with SuccessPolicy unless SuccessCriteriaMet=True",
        ));
    }

    // ValidateJobStatusUpdate's transitions.
    for t in ["Failed", "Complete", "FailureTarget"] {
        if condition(os, t) && !condition(st, t) {
            out.push(inv_omit(
                conditions_path,
                &format!("cannot disable the terminal {t}=True condition"),
            ));
        }
    }
    if count(st, "failed") < count(os, "failed") {
        out.push(inv_n(
            "status.failed",
            count(st, "failed"),
            "cannot decrease the failed counter",
        ));
    }
    let reject_decreasing_succeeded =
        !indexed || int(spec, "completions") != int(spec, "parallelism");
    if reject_decreasing_succeeded && count(st, "succeeded") < count(os, "succeeded") {
        out.push(inv_n(
            "status.succeeded",
            count(st, "succeeded"),
            "cannot decrease the succeeded counter",
        ));
    }
    if let (Some(now), Some(was)) = (completion_time, set(os, "completionTime")) {
        if now != was {
            out.push(inv(
                "status.completionTime",
                &go_json(now),
                "completionTime cannot be mutated",
            ));
        }
    }
    if set(os, "startTime").is_some()
        && changed("startTime")
        && spec.get("suspend") != Some(&Value::Bool(true))
    {
        out.push(required(
            "status.startTime",
            "startTime cannot be removed for unsuspended job",
        ));
    }
    let old_scm = condition(os, "SuccessCriteriaMet");
    if old_scm && !scm {
        out.push(inv_omit(
            conditions_path,
            "cannot disable the SuccessCriteriaMet=True condition",
        ));
    }
    if condition(os, "Complete") && !old_scm && scm {
        out.push(inv_omit(
            conditions_path,
            "cannot set SuccessCriteriaMet=True for Job already has Complete=true conditions",
        ));
    }
    out
}

// ---- CronJob ----

/// kube's `ValidateCronJobCreate` (`old` is `None`, then the name's 52-character limit) or
/// `ValidateCronJobUpdate`. Metadata is otherwise validated elsewhere.
pub fn cron_job(obj: &Value, old: Option<&Value>) -> Vec<Cause> {
    let spec = obj.get("spec").unwrap_or(&NULL);
    let old_spec = old.map(|o| o.get("spec").unwrap_or(&NULL));
    let opts = template_opts(old_spec.and_then(|s| s.pointer("/jobTemplate/spec/template")));
    let mut out = Vec::new();
    cron_job_spec(spec, old_spec, &opts, &mut out);
    if old.is_none() {
        let name = obj
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or("");
        if name.len() > 52 {
            out.push(inv(
                "metadata.name",
                &go_quote(name),
                "must be no more than 52 characters",
            ));
        }
    }
    out
}

/// kube's `validateCronJobSpec`.
fn cron_job_spec(spec: &Value, old_spec: Option<&Value>, opts: &PodOpts, out: &mut Vec<Cause>) {
    let schedule = text(spec, "schedule");
    let time_zone = set(spec, "timeZone");
    if schedule.is_empty() {
        out.push(required("spec.schedule", ""));
    } else {
        let allow_tz = old_spec.is_some_and(|o| text(o, "schedule").contains("TZ"));
        if let Err(e) = cron::parse_standard(schedule) {
            out.push(inv("spec.schedule", &go_quote(schedule), &e));
        }
        if allow_tz && schedule.contains("TZ") && time_zone.is_some() {
            out.push(inv(
                "spec.schedule",
                &go_quote(schedule),
                "cannot use both timeZone field and TZ or CRON_TZ in schedule",
            ));
        } else if !allow_tz && schedule.contains("TZ") {
            out.push(inv(
                "spec.schedule",
                &go_quote(schedule),
                "cannot use TZ or CRON_TZ in schedule, use timeZone field instead",
            ));
        }
    }
    nonneg(
        spec,
        "startingDeadlineSeconds",
        "spec.startingDeadlineSeconds",
        out,
    );
    if old_spec.is_none_or(|o| set(o, "timeZone") != time_zone) {
        validate_time_zone(time_zone, out);
    }
    // `""` is defaulted to `Allow`.
    let policy = text(spec, "concurrencyPolicy");
    if !matches!(policy, "" | "Allow" | "Forbid" | "Replace") {
        out.push(not_sup(
            "spec.concurrencyPolicy",
            &go_str(policy),
            &["Allow", "Forbid", "Replace"],
        ));
    }
    let jt_spec = spec.pointer("/jobTemplate/spec").unwrap_or(&NULL);
    let jp = "spec.jobTemplate.spec";
    job_spec_common(jt_spec, jp, opts, out);
    if let Some(sel) = set(jt_spec, "selector") {
        out.push(inv(
            &child(jp, "selector"),
            &selector_json(Some(sel)),
            "`selector` will be auto-generated",
        ));
    }
    if jt_spec.get("manualSelector") == Some(&Value::Bool(true)) {
        out.push(not_sup(
            &child(jp, "manualSelector"),
            "true",
            &["nil", "false"],
        ));
    }
    nonneg(
        spec,
        "successfulJobsHistoryLimit",
        "spec.successfulJobsHistoryLimit",
        out,
    );
    nonneg(
        spec,
        "failedJobsHistoryLimit",
        "spec.failedJobsHistoryLimit",
        out,
    );
}

/// kube's `validateTimeZone`.
fn validate_time_zone(tz: Option<&Value>, out: &mut Vec<Cause>) {
    let Some(tz) = tz.and_then(Value::as_str) else {
        return;
    };
    let path = "spec.timeZone";
    let shown = go_str(tz);
    if tz.is_empty() {
        out.push(inv(
            path,
            &shown,
            "timeZone must be nil or non-empty string",
        ));
        return;
    }
    let part_ok = |p: &str| {
        p != "."
            && p != ".."
            && !p.starts_with('-')
            && (1..=14).contains(&p.len())
            && p.chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_' | '+'))
    };
    if !tz.split('/').all(part_ok) {
        out.push(inv(path, &shown, &format!("unknown time zone {tz}")));
        return;
    }
    if tz.eq_ignore_ascii_case("Local") {
        out.push(inv(
            path,
            &shown,
            "timeZone must be an explicit time zone as defined in https://www.iana.org/time-zones",
        ));
    }
    if let Err(e) = cron::load_location(tz) {
        out.push(inv(path, &shown, &e));
    }
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

    /// A Job as kube's defaulting and `PrepareForCreate` leave it.
    fn a_job(extra: Value) -> Value {
        let mut j = json!({
            "metadata": {"name": "pi", "namespace": "default", "uid": "u-1"},
            "spec": {
                "parallelism": 1, "completions": 1, "backoffLimit": 6,
                "completionMode": "NonIndexed", "suspend": false,
                "podReplacementPolicy": "TerminatingOrFailed",
                "selector": {"matchLabels": {"batch.kubernetes.io/controller-uid": "u-1"}},
                "template": {
                    "metadata": {"labels": {
                        "batch.kubernetes.io/controller-uid": "u-1",
                        "batch.kubernetes.io/job-name": "pi",
                        "controller-uid": "u-1", "job-name": "pi"}},
                    "spec": {"restartPolicy": "Never",
                        "containers": [{"name": "pi", "image": "perl"}]},
                },
            },
        });
        if let (Some(spec), Value::Object(extra)) = (j["spec"].as_object_mut(), extra) {
            spec.extend(extra);
        }
        j
    }

    fn a_cron_job(extra: Value) -> Value {
        let mut c = json!({
            "metadata": {"name": "hello", "namespace": "default"},
            "spec": {
                "schedule": "*/5 * * * *",
                "concurrencyPolicy": "Allow",
                "successfulJobsHistoryLimit": 3, "failedJobsHistoryLimit": 1,
                "jobTemplate": {"spec": {"template": {"spec": {"restartPolicy": "OnFailure",
                    "containers": [{"name": "c", "image": "busybox"}]}}}},
            },
        });
        if let (Some(spec), Value::Object(extra)) = (c["spec"].as_object_mut(), extra) {
            spec.extend(extra);
        }
        c
    }

    #[test]
    fn a_valid_job_passes() {
        let j = a_job(json!({}));
        assert_eq!(messages(job(&j, None)), Vec::<String>::new());
        assert_eq!(messages(job(&j, Some(&j))), Vec::<String>::new());
    }

    #[test]
    fn job_counts() {
        let j = a_job(json!({"parallelism": -1, "backoffLimit": -2, "activeDeadlineSeconds": 0}));
        assert_eq!(
            messages(job(&j, None)),
            [
                "spec.parallelism: Invalid value: -1: must be greater than or equal to 0",
                "spec.backoffLimit: Invalid value: -2: must be greater than or equal to 0"
            ]
        );
        // Each spec cause is listed twice on update, as kube lists it.
        assert_eq!(job(&j, Some(&j)).len(), 4);
    }

    #[test]
    fn job_restart_policy_and_selector() {
        let mut j = a_job(json!({}));
        j["spec"]["template"]["spec"]["restartPolicy"] = json!("Always");
        assert_eq!(
            messages(job(&j, None)),
            ["spec.template.spec.restartPolicy: Required value: valid values: \"OnFailure\", \"Never\""]
        );
        j["spec"]["template"]["spec"]["restartPolicy"] = json!("Sometimes");
        has(
            &messages(job(&j, None)),
            "spec.template.spec.restartPolicy: Unsupported value: \"Sometimes\": supported values: \"OnFailure\", \"Never\"",
        );
        let mut j = a_job(json!({"manualSelector": true, "selector": {"matchLabels": {"a": "b"}}}));
        j["spec"]["template"]["metadata"]["labels"] = json!({"a": "c"});
        assert_eq!(
            messages(job(&j, None)),
            ["spec.template.metadata.labels: Invalid value: {\"a\":\"c\"}: `selector` does not match template `labels`"]
        );
        let mut j = a_job(json!({}));
        j["spec"]["template"]["metadata"]["labels"]["job-name"] = json!("other");
        assert_eq!(
            messages(job(&j, None)),
            ["spec.template.metadata.labels[job-name]: Invalid value: {\"batch.kubernetes.io/controller-uid\":\"u-1\",\"batch.kubernetes.io/job-name\":\"pi\",\"controller-uid\":\"u-1\",\"job-name\":\"other\"}: must be 'pi'"]
        );
        let old = a_job(json!({}));
        let new = a_job(
            json!({"selector": {"matchLabels": {"batch.kubernetes.io/controller-uid": "u-1", "controller-uid": "u-1"}}}),
        );
        has(
            &messages(job(&new, Some(&old))),
            "spec.selector: Invalid value: {\"matchLabels\":{\"batch.kubernetes.io/controller-uid\":\"u-1\",\"controller-uid\":\"u-1\"}}: field is immutable",
        );
    }

    #[test]
    fn indexed_jobs() {
        let j =
            a_job(json!({"completionMode": "Indexed", "completions": null, "parallelism": 100001}));
        assert_eq!(
            messages(job(&j, None)),
            [
                "spec.completions: Required value: when completion mode is Indexed",
                "spec.parallelism: Invalid value: 100001: must be less than or equal to 100000 when completion mode is Indexed"
            ]
        );
        let j = a_job(json!({"completionMode": "Fancy"}));
        assert_eq!(
            messages(job(&j, None)),
            ["spec.completionMode: Unsupported value: \"Fancy\": supported values: \"NonIndexed\", \"Indexed\""]
        );
        let j = a_job(json!({"backoffLimitPerIndex": 1, "maxFailedIndexes": 2}));
        assert_eq!(
            messages(job(&j, None)),
            [
                "spec.backoffLimitPerIndex: Invalid value: 1: requires indexed completion mode",
                "spec.maxFailedIndexes: Invalid value: 2: requires indexed completion mode"
            ]
        );
        let j =
            a_job(json!({"completionMode": "Indexed", "completions": 3, "maxFailedIndexes": 4}));
        assert_eq!(
            messages(job(&j, None)),
            [
                "spec.backoffLimitPerIndex: Required value: when maxFailedIndexes is specified",
                "spec.maxFailedIndexes: Invalid value: 4: must be less than or equal to completions"
            ]
        );
        let j = a_job(json!({"completionMode": "Indexed", "completions": 200000,
            "parallelism": 20000, "backoffLimitPerIndex": 1}));
        assert_eq!(
            messages(job(&j, None)),
            [
                "spec.maxFailedIndexes: Required value: must be specified when completions is above 100000",
                "spec.parallelism: Invalid value: 20000: must be less than or equal to 10000 when completions are above 100000 and used with backoff limit per index"
            ]
        );
        let mut j = a_job(json!({"completionMode": "Indexed", "completions": 2}));
        j["metadata"]["name"] = json!("x".repeat(62));
        assert_eq!(
            messages(job(&j, None))
                .iter()
                .filter(|m| m.starts_with("metadata.name"))
                .count(),
            1
        );
        // Completions change only in tandem with parallelism.
        let old = a_job(json!({"completionMode": "Indexed", "completions": 2, "parallelism": 2}));
        let new = a_job(json!({"completionMode": "Indexed", "completions": 3, "parallelism": 2}));
        assert_eq!(
            messages(job(&new, Some(&old))),
            ["spec.completions: Invalid value: 3: can only be modified in tandem with spec.parallelism"]
        );
        let new = a_job(json!({"completionMode": "Indexed", "completions": 3, "parallelism": 3}));
        assert!(job(&new, Some(&old)).is_empty());
        let old = a_job(json!({}));
        let new = a_job(json!({"completions": 2}));
        assert_eq!(
            messages(job(&new, Some(&old))),
            ["spec.completions: Invalid value: 2: field is immutable"]
        );
    }

    #[test]
    fn success_policy_rules() {
        let j = a_job(json!({"successPolicy": {"rules": [{"succeededCount": 1}]}}));
        assert_eq!(
            messages(job(&j, None)),
            ["spec.successPolicy: Invalid value: {\"Rules\":[{\"SucceededIndexes\":null,\"SucceededCount\":1}]}: requires indexed completion mode"]
        );
        let j = a_job(json!({"completionMode": "Indexed", "completions": 5,
            "successPolicy": {"rules": [{}, {"succeededIndexes": "0-2,1", "succeededCount": 6},
                {"succeededIndexes": "1,3", "succeededCount": 3}]}}));
        assert_eq!(
            messages(job(&j, None)),
            [
                "spec.successPolicy.rules[0]: Required value: at least one of succeededCount or succeededIndexes must be specified",
                "spec.successPolicy.rules[1].succeededIndexes: Invalid value: \"0-2,1\": error parsing succeededIndexes: non-increasing order, previous: 2, current: 1",
                "spec.successPolicy.rules[1].succeededCount: Invalid value: 6: must be less than or equal to 5 (the number of specified completions)",
                "spec.successPolicy.rules[1].succeededCount: Invalid value: 6: must be less than or equal to 0 (the number of indexes in the specified succeededIndexes field)",
                "spec.successPolicy.rules[2].succeededCount: Invalid value: 3: must be less than or equal to 2 (the number of indexes in the specified succeededIndexes field)",
            ]
        );
        assert_eq!(validate_indexes_format("0,2-4", 5), Ok(4));
        assert_eq!(
            validate_indexes_format("1-2-3", 5),
            Err("the fragment \"1-2-3\" violates the requirement that an index interval can have at most two parts separated by '-'".to_owned())
        );
        assert_eq!(
            validate_indexes_format("x", 5),
            Err("cannot convert string to integer for index: \"x\"".to_owned())
        );
        assert_eq!(
            validate_indexes_format("5", 5),
            Err("too large index: \"5\"".to_owned())
        );
        assert_eq!(
            validate_indexes_format("3-1", 5),
            Err("non-increasing order, previous: 3, current: 1".to_owned())
        );
    }

    #[test]
    fn pod_failure_policy_rules() {
        let j = a_job(
            json!({"podReplacementPolicy": "Failed", "podFailurePolicy": {"rules": [
                {"action": "FailJob", "onExitCodes": {"operator": "In", "values": [0, 2, 1, 2]}},
                {"action": "", "onPodConditions": [{"type": "DisruptionTarget", "status": "Maybe"}]},
                {"action": "FailIndex", "onExitCodes": {"operator": "Within", "containerName": "nope", "values": []}},
                {"action": "Explode"},
            ]}}),
        );
        assert_eq!(
            messages(job(&j, None)),
            [
                "spec.podFailurePolicy.rules[0].onExitCodes.values[0]: Invalid value: 0: must not be 0 for the In operator",
                "spec.podFailurePolicy.rules[0].onExitCodes.values[3]: Duplicate value: 2",
                "spec.podFailurePolicy.rules[0].onExitCodes.values: Invalid value: [0,2,1,2]: must be ordered",
                "spec.podFailurePolicy.rules[1].action: Required value: valid values: [\"Count\" \"FailIndex\" \"FailJob\" \"Ignore\"]",
                "spec.podFailurePolicy.rules[1].onPodConditions[0].status: Unsupported value: \"Maybe\": supported values: \"False\", \"True\", \"Unknown\"",
                "spec.podFailurePolicy.rules[2].action: Invalid value: \"FailIndex\": requires the backoffLimitPerIndex to be set",
                "spec.podFailurePolicy.rules[2].onExitCodes.operator: Unsupported value: \"Within\": supported values: \"In\", \"NotIn\"",
                "spec.podFailurePolicy.rules[2].onExitCodes.containerName: Invalid value: \"nope\": must be one of the container or initContainer names in the pod template",
                "spec.podFailurePolicy.rules[2].onExitCodes.values: Invalid value: []: at least one value is required",
                "spec.podFailurePolicy.rules[3].action: Unsupported value: \"Explode\": supported values: \"Count\", \"FailIndex\", \"FailJob\", \"Ignore\"",
                "spec.podFailurePolicy.rules[3]: Invalid value: specifying one of OnExitCodes and OnPodConditions is required",
            ]
        );
        let mut j = a_job(json!({"podFailurePolicy": {"rules": [
            {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]}]}}));
        j["spec"]["template"]["spec"]["restartPolicy"] = json!("OnFailure");
        assert_eq!(
            messages(job(&j, None)),
            [
                "spec.podReplacementPolicy: Unsupported value: \"TerminatingOrFailed\": supported values: \"Failed\"",
                "spec.template.spec.restartPolicy: Invalid value: \"OnFailure\": only \"Never\" is supported when podFailurePolicy is specified"
            ]
        );
    }

    #[test]
    fn managed_by() {
        let j = a_job(json!({"managedBy": "kubernetes.io/job-controller"}));
        assert!(job(&j, None).is_empty());
        let j = a_job(json!({"managedBy": "nope"}));
        assert_eq!(
            messages(job(&j, None)),
            ["spec.managedBy: Invalid value: \"nope\": must be a domain-prefixed path (such as \"acme.io/foo\")"]
        );
        let j = a_job(json!({"managedBy": format!("example.com/{}", "a".repeat(60))}));
        assert_eq!(
            messages(job(&j, None)),
            ["spec.managedBy: Too long: may not be more than 63 bytes"]
        );
    }

    #[test]
    fn job_status_rules() {
        let old = a_job(json!({}));
        let mut new = a_job(json!({}));
        new["status"] = json!({"active": 1, "ready": 2, "failed": -1,
            "conditions": [{"type": "Failed", "status": "True"}]});
        assert_eq!(
            messages(job_status(&new, &old)),
            [
                "status.failed: Invalid value: -1: must be greater than or equal to 0",
                "status.conditions: Invalid value: cannot set Failed=True condition without the FailureTarget=true condition",
                "status.active: Invalid value: 1: active>0 is invalid for finished job",
                "status.startTime: Required value: startTime is required for finished job",
                "status.ready: Invalid value: 2: cannot set more ready pods than active",
                "status.failed: Invalid value: -1: cannot decrease the failed counter",
            ]
        );
        let mut old = a_job(json!({}));
        old["status"] = json!({"succeeded": 2, "startTime": "2024-01-01T00:00:00Z",
            "conditions": [{"type": "SuccessCriteriaMet", "status": "True"}, {"type": "Complete", "status": "True"}],
            "completionTime": "2024-01-01T00:01:00Z"});
        let mut new = old.clone();
        new["status"]["succeeded"] = json!(1);
        new["status"]["conditions"] = json!([]);
        new["status"]["completionTime"] = json!("2024-01-01T00:02:00Z");
        assert_eq!(
            messages(job_status(&new, &old)),
            [
                "status.completionTime: Invalid value: \"2024-01-01T00:02:00Z\": cannot set completionTime when there is no Complete=True condition",
                "status.conditions: Invalid value: cannot disable the terminal Complete=True condition",
                "status.succeeded: Invalid value: 1: cannot decrease the succeeded counter",
                "status.completionTime: Invalid value: \"2024-01-01T00:02:00Z\": completionTime cannot be mutated",
                "status.conditions: Invalid value: cannot disable the SuccessCriteriaMet=True condition",
            ]
        );
        let mut new = a_job(json!({}));
        new["status"] =
            json!({"uncountedTerminatedPods": {"succeeded": ["a", ""], "failed": ["a"]}});
        assert_eq!(
            messages(job_status(&new, &a_job(json!({})))),
            [
                "status.uncountedTerminatedPods.succeeded[1]: Invalid value: \"\": must not be empty",
                "status.uncountedTerminatedPods.failed[0]: Duplicate value: \"a\"",
            ]
        );
        let indexed =
            json!({"completionMode": "Indexed", "completions": 4, "backoffLimitPerIndex": 1});
        let old = a_job(indexed.clone());
        let mut new = a_job(indexed);
        new["status"] = json!({"completedIndexes": "0-2", "failedIndexes": "2-3"});
        assert_eq!(
            messages(job_status(&new, &old)),
            ["status.failedIndexes: Invalid value: \"2-3\": failedIndexes and completedIndexes overlap at index: 2"]
        );
    }

    #[test]
    fn cron_job_rules() {
        let c = a_cron_job(json!({}));
        assert_eq!(messages(cron_job(&c, None)), Vec::<String>::new());
        assert_eq!(messages(cron_job(&c, Some(&c))), Vec::<String>::new());
        let c = a_cron_job(json!({"schedule": "61 * * * *"}));
        assert_eq!(
            messages(cron_job(&c, None)),
            ["spec.schedule: Invalid value: \"61 * * * *\": end of range (61) above maximum (59): 61"]
        );
        let c = a_cron_job(json!({"schedule": ""}));
        assert_eq!(
            messages(cron_job(&c, None)),
            ["spec.schedule: Required value"]
        );
        let c = a_cron_job(json!({"schedule": "TZ=UTC 0 * * * *"}));
        assert_eq!(
            messages(cron_job(&c, None)),
            ["spec.schedule: Invalid value: \"TZ=UTC 0 * * * *\": cannot use TZ or CRON_TZ in schedule, use timeZone field instead"]
        );
        // An old schedule with TZ lets it stay, but not with the timeZone field.
        let old = a_cron_job(json!({"schedule": "TZ=UTC 0 * * * *"}));
        assert!(cron_job(&old, Some(&old)).is_empty());
        let new = a_cron_job(json!({"schedule": "TZ=UTC 0 * * * *", "timeZone": "UTC"}));
        assert_eq!(
            messages(cron_job(&new, Some(&old))),
            ["spec.schedule: Invalid value: \"TZ=UTC 0 * * * *\": cannot use both timeZone field and TZ or CRON_TZ in schedule"]
        );
        let c = a_cron_job(json!({"timeZone": ""}));
        assert_eq!(
            messages(cron_job(&c, None)),
            ["spec.timeZone: Invalid value: \"\": timeZone must be nil or non-empty string"]
        );
        let c = a_cron_job(json!({"timeZone": "../etc/passwd"}));
        assert_eq!(
            messages(cron_job(&c, None)),
            ["spec.timeZone: Invalid value: \"../etc/passwd\": unknown time zone ../etc/passwd"]
        );
        let c = a_cron_job(json!({"timeZone": "Local"}));
        assert_eq!(
            messages(cron_job(&c, None)),
            ["spec.timeZone: Invalid value: \"Local\": timeZone must be an explicit time zone as defined in https://www.iana.org/time-zones"]
        );
        assert!(cron_job(&a_cron_job(json!({"timeZone": "UTC"})), None).is_empty());
        if cron::have_zoneinfo() {
            let c = a_cron_job(json!({"timeZone": "Mars/Olympus"}));
            assert_eq!(
                messages(cron_job(&c, None)),
                ["spec.timeZone: Invalid value: \"Mars/Olympus\": unknown time zone Mars/Olympus"]
            );
            // An unchanged zone is not looked up again.
            assert!(cron_job(&c, Some(&c)).is_empty());
        }
        let c = a_cron_job(
            json!({"startingDeadlineSeconds": -1, "concurrencyPolicy": "Sometimes",
            "successfulJobsHistoryLimit": -1, "failedJobsHistoryLimit": -2}),
        );
        assert_eq!(
            messages(cron_job(&c, None)),
            [
                "spec.startingDeadlineSeconds: Invalid value: -1: must be greater than or equal to 0",
                "spec.concurrencyPolicy: Unsupported value: \"Sometimes\": supported values: \"Allow\", \"Forbid\", \"Replace\"",
                "spec.successfulJobsHistoryLimit: Invalid value: -1: must be greater than or equal to 0",
                "spec.failedJobsHistoryLimit: Invalid value: -2: must be greater than or equal to 0",
            ]
        );
        let mut c = a_cron_job(json!({}));
        c["metadata"]["name"] = json!("a".repeat(53));
        assert_eq!(
            messages(cron_job(&c, None)),
            [format!(
                "metadata.name: Invalid value: \"{}\": must be no more than 52 characters",
                "a".repeat(53)
            )]
        );
        assert!(cron_job(&c, Some(&c)).is_empty());
        let mut c = a_cron_job(json!({}));
        c["spec"]["jobTemplate"]["spec"]["manualSelector"] = json!(true);
        c["spec"]["jobTemplate"]["spec"]["selector"] = json!({"matchLabels": {"a": "b"}});
        c["spec"]["jobTemplate"]["spec"]["parallelism"] = json!(-1);
        c["spec"]["jobTemplate"]["spec"]["template"]["spec"]["restartPolicy"] = json!("Always");
        assert_eq!(
            messages(cron_job(&c, None)),
            [
                "spec.jobTemplate.spec.parallelism: Invalid value: -1: must be greater than or equal to 0",
                "spec.jobTemplate.spec.template.spec.restartPolicy: Required value: valid values: \"OnFailure\", \"Never\"",
                "spec.jobTemplate.spec.selector: Invalid value: {\"matchLabels\":{\"a\":\"b\"}}: `selector` will be auto-generated",
                "spec.jobTemplate.spec.manualSelector: Unsupported value: true: supported values: \"nil\", \"false\"",
            ]
        );
    }
}
