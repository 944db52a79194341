//! kube's validation of Pod specs and pod templates (`pkg/apis/core/validation`:
//! `ValidatePodSpec`, `ValidatePodTemplateSpec` and everything they call), and of the two core
//! kinds that are little more than a pod template: ReplicationControllers
//! (`ValidateReplicationController`, its update and its status update) and PodTemplates
//! (`ValidatePodTemplate` and its update), as kube 1.34 has them, with kube's field paths and
//! messages (kube's quirks in paths included: they are what clients see).
//!
//! The input has kube's defaults applied. A field kube always defaults is nevertheless accepted
//! when it is absent or empty, and checked as its default: kube's defaulting never leaves it
//! empty, so this changes nothing for a defaulted object, and it keeps turtles from refusing
//! what kube accepts where turtles' defaulting is thinner than kube's (probe thresholds,
//! `httpGet.path`/`scheme`, `fieldRef.apiVersion`, a volume without a source (an `emptyDir`),
//! `imagePullPolicy` of ephemeral containers, ...).
//!
//! Feature gates are those of kube 1.34's defaults: `RelaxedEnvironmentVariableValidation`,
//! `RelaxedDNSSearchValidation`, `PodLifecycleSleepActionAllowZero` (GA, on),
//! `PodLevelResources`, `InPlacePodVerticalScaling`, `SELinuxChangePolicy`,
//! `MatchLabelKeysInPodTopologySpreadSelectorMerge` (beta, on) are on; alpha gates are off.
//! What kube checks from annotations (seccomp, AppArmor, tolerations, deletion cost) is left to
//! the metadata validation, as the objects' own metadata is.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::OnceLock;

use regex::Regex;
use serde_json::Value;

use super::field::{
    child, dns1123_subdomain, duplicate, forbidden, go_value, index, invalid, invalid_str,
    is_dns1123_label, items, key, label_value, not_supported, quoted, required, str_of, too_long,
    Go, GoField,
};
use crate::model::status::Cause;

/// kube's `IsNegativeErrorMsg`.
const NEGATIVE: &str = "must be greater than or equal to 0";
/// kube's `isNotPositiveErrorMsg`.
const NOT_POSITIVE: &str = "must be greater than zero";
/// kube's `fileModeErrorMsg`.
const FILE_MODE: &str = "must be a number between 0 and 0777 (octal), both inclusive";
/// `IsValidUserID` / `IsValidGroupID`.
const ID_RANGE: &str = "must be between 0 and 2147483647, inclusive";
const PORT_RANGE: &str = "must be between 1 and 65535, inclusive";
const ONE_VOLUME_TYPE: &str = "may not specify more than 1 volume type";
const ONE_HANDLER_TYPE: &str = "may not specify more than 1 handler type";
const CONFLICTING_PATHS: &str = "conflicting duplicate paths";

/// What kube's `PodValidationOptions` carry that turtles needs: whether the spec is a Pod's
/// (not a template's), the Pod's name (for generic ephemeral volumes), and the ratchets kube
/// computes from the stored object (`GetValidationOptionsFromPodSpecAndMeta`) so that a value
/// stored before a check existed may stay on update.
#[derive(Debug, Clone, Default)]
pub struct PodOpts {
    /// `ResourceIsPod`.
    pub resource_is_pod: bool,
    /// The Pod's `metadata.name` (none for templates).
    pub pod_name: Option<String>,
    pub allow_invalid_label_value_in_selector: bool,
    pub allow_invalid_label_value_in_required_node_affinity: bool,
    pub allow_invalid_topology_spread_constraint_label_selector: bool,
    pub old_pod_violates_match_label_keys_validation: bool,
    pub allow_non_local_projected_token_path: bool,
    pub allow_namespaced_sysctls_for_host_net_and_host_ipc: bool,
    pub allow_indivisible_huge_pages_values: bool,
}

// ---- entry points ----

/// kube's `ValidateReplicationController` / `ValidateReplicationControllerUpdate` and
/// `ValidatePodTemplate` / `ValidatePodTemplateUpdate` (metadata is validated elsewhere).
pub fn validate(resource: &str, obj: &Value, old: Option<&Value>) -> Vec<Cause> {
    match resource {
        "replicationcontrollers" => replication_controller(obj, old),
        "podtemplates" => pod_template_object(obj, old),
        _ => Vec::new(),
    }
}

/// kube's `ValidateReplicationControllerStatusUpdate` (status fields only).
pub fn validate_status(resource: &str, obj: &Value, _old: &Value) -> Vec<Cause> {
    let mut out = Vec::new();
    if resource == "replicationcontrollers" {
        rc_status(
            obj.get("status").unwrap_or(&Value::Null),
            "status",
            &mut out,
        );
    }
    out
}

/// kube's `ValidatePodSpec` for a spec in a template (no ratchets: a create).
#[cfg(test)]
fn pod_spec(spec: &Value, path: &str, out: &mut Vec<Cause>) {
    pod_spec_with(spec, path, &PodOpts::default(), out);
}

/// kube's `validatePodMetadataAndSpec` for a Pod, less its metadata and annotations:
/// `ValidatePodSpec` as a Pod's (`ResourceIsPod`, its name for ephemeral volumes; ratchets from
/// `old`, the stored Pod, on update), then the Pod-only checks. What `ValidatePodUpdate` and the
/// `ephemeralcontainers` subresource run before their own rules.
pub fn pod(pod: &Value, old: Option<&Value>) -> Vec<Cause> {
    let mut opts = pod_opts(old.and_then(|o| o.get("spec")));
    opts.resource_is_pod = true;
    opts.pod_name = pod
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .filter(|n| !n.is_empty())
        .map(str::to_owned);
    let null = Value::Null;
    let spec = pod.get("spec").unwrap_or(&null);
    let mut out = Vec::new();
    pod_spec_with(spec, "spec", &opts, &mut out);
    if str_of(spec, "serviceAccountName").is_empty() {
        for (vi, v) in items(spec, "volumes").iter().enumerate() {
            let Some(projected) = set(v, "projected") else {
                continue;
            };
            let path = child(&index("spec.volumes", vi), "projected");
            for (si, s) in items(projected, "sources").iter().enumerate() {
                if set(s, "serviceAccountToken").is_some() {
                    out.push(forbidden(
                        &child(&index(&child(&path, "sources"), si), "serviceAccountToken"),
                        "must not be specified when serviceAccountName is not set",
                    ));
                }
            }
        }
    }
    for field in ["containers", "initContainers"] {
        let path = child("spec", field);
        for (i, c) in items(spec, field).iter().enumerate() {
            image_whitespace(c, &index(&path, i), &mut out);
        }
    }
    out
}

/// kube's `ValidatePodCreate`, less metadata and annotations: [`pod`], then no ephemeral
/// containers on create and no `nodeName` while scheduling gates remain.
pub fn pod_create(p: &Value) -> Vec<Cause> {
    let mut out = pod(p, None);
    let null = Value::Null;
    let spec = p.get("spec").unwrap_or(&null);
    if !items(spec, "ephemeralContainers").is_empty() {
        out.push(forbidden(
            "spec.ephemeralContainers",
            "cannot be set on create",
        ));
    }
    if !str_of(spec, "nodeName").is_empty() && !items(spec, "schedulingGates").is_empty() {
        out.push(forbidden(
            "spec.nodeName",
            "cannot be set until all schedulingGates have been cleared",
        ));
    }
    out
}

/// kube's `GetValidationOptionsFromPodSpecAndMeta`: the ratchets an update gets from the stored
/// spec `old_spec` (none on create).
pub fn pod_opts(old_spec: Option<&Value>) -> PodOpts {
    let mut o = PodOpts::default();
    let Some(old) = old_spec.filter(|s| s.is_object()) else {
        return o;
    };
    o.allow_indivisible_huge_pages_values = uses_indivisible_huge_pages(old);
    o.allow_invalid_label_value_in_selector = has_invalid_affinity_selector(old);
    o.allow_invalid_label_value_in_required_node_affinity = old
        .pointer("/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution")
        .is_some_and(|r| {
            items(r, "nodeSelectorTerms").iter().any(|t| {
                items(t, "matchExpressions").iter().any(|e| {
                    items(e, "values")
                        .iter()
                        .any(|v| !label_value(v.as_str().unwrap_or("")).is_empty())
                })
            })
        });
    let constraints = items(old, "topologySpreadConstraints");
    o.allow_invalid_topology_spread_constraint_label_selector = constraints.iter().any(|c| {
        let mut errs = Vec::new();
        label_selector(set(c, "labelSelector"), false, "", &mut errs);
        !errs.is_empty()
    });
    o.old_pod_violates_match_label_keys_validation = constraints.iter().any(|c| {
        let mut errs = Vec::new();
        let keys = strs(c, "matchLabelKeys");
        match_and_mismatch_label_keys("", &keys, &[], set(c, "labelSelector"), &mut errs);
        !errs.is_empty()
    });
    o.allow_non_local_projected_token_path = items(old, "volumes").iter().any(|v| {
        set(v, "projected").is_some_and(|p| {
            items(p, "sources").iter().any(|s| {
                set(s, "serviceAccountToken").is_some_and(|t| {
                    let mut errs = Vec::new();
                    local_non_reserved_path(str_of(t, "path"), "", &mut errs);
                    !errs.is_empty()
                })
            })
        })
    });
    let sc = old.get("securityContext").unwrap_or(&Value::Null);
    o.allow_namespaced_sysctls_for_host_net_and_host_ipc = items(sc, "sysctls")
        .iter()
        .any(|s| host_sysctl_conflict(str_of(s, "name"), old).is_some());
    o
}

// ---- ReplicationControllers and PodTemplates ----

/// kube's `ValidateReplicationController` on create; on update the strategy runs it and then
/// `ValidateReplicationControllerUpdate`, which validates the same spec again, so each spec
/// cause is listed twice, as kube lists it (kube's message shows it once: its `ToAggregate`
/// drops repeated messages).
fn replication_controller(obj: &Value, old: Option<&Value>) -> Vec<Cause> {
    let null = Value::Null;
    let spec = obj.get("spec").unwrap_or(&null);
    let opts = pod_opts(old.and_then(|o| o.pointer("/spec/template/spec")));
    let mut out = Vec::new();
    rc_spec(spec, "spec", &opts, &mut out);
    if old.is_some() {
        rc_spec(spec, "spec", &opts, &mut out);
    }
    out
}

/// kube's `ValidateReplicationControllerSpec` and `ValidatePodTemplateSpecForRC`.
fn rc_spec(spec: &Value, path: &str, opts: &PodOpts, out: &mut Vec<Cause>) {
    if let Some(n) = int(spec, "minReadySeconds").filter(|n| *n < 0) {
        out.push(inv(&child(path, "minReadySeconds"), n, NEGATIVE));
    }
    let selector: Vec<(&str, &str)> = spec
        .get("selector")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .map(|(k, v)| (k.as_str(), v.as_str().unwrap_or("")))
        .collect();
    if selector.is_empty() {
        out.push(required(&child(path, "selector"), ""));
    }
    // `replicas` is defaulted to 1 when absent.
    if let Some(n) = int(spec, "replicas").filter(|n| *n < 0) {
        out.push(inv(&child(path, "replicas"), n, NEGATIVE));
    }
    let tpath = child(path, "template");
    let Some(template) = set(spec, "template") else {
        out.push(required(&tpath, ""));
        return;
    };
    let labels = template.pointer("/metadata/labels");
    if !selector.is_empty() {
        let matched = selector.iter().all(|(k, v)| {
            labels
                .and_then(|l| l.get(*k))
                .and_then(Value::as_str)
                .is_some_and(|l| l == *v)
        });
        if !matched {
            out.push(invalid_raw(
                &child(&child(&tpath, "metadata"), "labels"),
                &go_json(labels.unwrap_or(&Value::Null)),
                "`selector` does not match template `labels`",
            ));
        }
    }
    pod_template_with(template, opts, &tpath, out);
    let null = Value::Null;
    let tspec = template.get("spec").unwrap_or(&null);
    let sp = child(&tpath, "spec");
    let restart = default_str(str_of(tspec, "restartPolicy"), "Always");
    if restart != "Always" {
        out.push(ns(&child(&sp, "restartPolicy"), restart, &["Always"]));
    }
    if set(tspec, "activeDeadlineSeconds").is_some() {
        out.push(forbidden(
            &child(&sp, "activeDeadlineSeconds"),
            "activeDeadlineSeconds in ReplicationController is not Supported",
        ));
    }
}

/// kube's `ValidateReplicationControllerStatus`.
fn rc_status(status: &Value, path: &str, out: &mut Vec<Cause>) {
    let get = |f: &str| int(status, f).unwrap_or(0);
    for f in [
        "replicas",
        "fullyLabeledReplicas",
        "readyReplicas",
        "availableReplicas",
        "observedGeneration",
    ] {
        if get(f) < 0 {
            out.push(inv(&child(path, f), get(f), NEGATIVE));
        }
    }
    let msg = "cannot be greater than status.replicas";
    let replicas = get("replicas");
    for f in ["fullyLabeledReplicas", "readyReplicas", "availableReplicas"] {
        if get(f) > replicas {
            out.push(inv(&child(path, f), get(f), msg));
        }
    }
    if get("availableReplicas") > get("readyReplicas") {
        out.push(inv(
            &child(path, "availableReplicas"),
            get("availableReplicas"),
            "cannot be greater than readyReplicas",
        ));
    }
}

/// kube's `ValidatePodTemplate` / `ValidatePodTemplateUpdate`: the `template` as a
/// `ValidatePodTemplateSpec`, with the ratchets of the stored template on update.
fn pod_template_object(obj: &Value, old: Option<&Value>) -> Vec<Cause> {
    let null = Value::Null;
    let template = obj.get("template").unwrap_or(&null);
    let opts = pod_opts(old.and_then(|o| o.pointer("/template/spec")));
    let mut out = Vec::new();
    pod_template_with(template, &opts, "template", &mut out);
    out
}

/// kube's `ValidatePodTemplateSpec`: labels (at `<path>.labels`, as kube reports them), the
/// spec, and no ephemeral containers.
pub fn pod_template_with(template: &Value, opts: &PodOpts, path: &str, out: &mut Vec<Cause>) {
    validate_labels(
        template.pointer("/metadata/labels"),
        &child(path, "labels"),
        out,
    );
    let null = Value::Null;
    // An absent spec is a zero PodSpec (defaulted): it has no containers.
    let spec = template.get("spec").unwrap_or(&null);
    let spec_path = child(path, "spec");
    pod_spec_with(spec, &spec_path, opts, out);
    if !items(spec, "ephemeralContainers").is_empty() {
        out.push(forbidden(
            &child(&spec_path, "ephemeralContainers"),
            "ephemeral containers not allowed in pod template",
        ));
    }
}

// ---- the pod spec ----

/// What the container checks need from the pod spec.
struct Ctx<'a> {
    /// The volumes that validated, by name (kube's `vols`).
    vols: HashMap<&'a str, &'a Value>,
    /// The names of `spec.resourceClaims`.
    claims: Vec<&'a str>,
    /// `terminationGracePeriodSeconds` (defaulted to 30).
    grace: Option<i64>,
    opts: &'a PodOpts,
    /// `restartPolicy` (defaulted to `Always`).
    restart: &'a str,
    /// `hostUsers` (absent is true).
    host_users: bool,
    /// A Pod's host-network ports get `hostPort = containerPort` (kube's `SetDefaults_Pod`).
    host_network_pod: bool,
}

/// kube's `ValidatePodSpec`, with `opts` (see [`PodOpts`]).
pub fn pod_spec_with(spec: &Value, path: &str, opts: &PodOpts, out: &mut Vec<Cause>) {
    // `terminationGracePeriodSeconds` is defaulted (30), so kube's `Required` never fires.
    let grace = match spec.get("terminationGracePeriodSeconds") {
        None | Some(Value::Null) => Some(30),
        Some(v) => v.as_i64(),
    };
    let host_network = flag(spec, "hostNetwork");
    let vols = volumes(spec, &child(path, "volumes"), opts, out);
    let claims: Vec<&str> = items(spec, "resourceClaims")
        .iter()
        .map(|c| str_of(c, "name"))
        .filter(|n| !n.is_empty())
        .collect();
    pod_resource_claims(
        items(spec, "resourceClaims"),
        &child(path, "resourceClaims"),
        out,
    );
    let ctx = Ctx {
        vols,
        claims,
        grace,
        opts,
        restart: default_str(str_of(spec, "restartPolicy"), "Always"),
        host_users: spec.get("hostUsers").and_then(Value::as_bool) != Some(false),
        host_network_pod: host_network && opts.resource_is_pod,
    };
    containers(spec, &child(path, "containers"), &ctx, out);
    init_containers(spec, &child(path, "initContainers"), &ctx, out);
    ephemeral_containers(spec, &child(path, "ephemeralContainers"), &ctx, out);
    if let Some(res) = set(spec, "resources") {
        pod_resources(spec, res, &child(path, "resources"), &ctx, out);
    }
    host_network_deps(spec, path, &ctx, out);
    let restart = str_of(spec, "restartPolicy");
    if !restart.is_empty() && !["Always", "OnFailure", "Never"].contains(&restart) {
        out.push(ns(
            &child(path, "restartPolicy"),
            restart,
            &["Always", "OnFailure", "Never"],
        ));
    }
    let dns = str_of(spec, "dnsPolicy");
    let dns_policies = ["ClusterFirstWithHostNet", "ClusterFirst", "Default", "None"];
    if !dns.is_empty() && !dns_policies.contains(&dns) {
        out.push(ns(&child(path, "dnsPolicy"), dns, &dns_policies));
    }
    validate_labels(spec.get("nodeSelector"), &child(path, "nodeSelector"), out);
    pod_security_context(spec, path, opts, out);
    for (i, s) in items(spec, "imagePullSecrets").iter().enumerate() {
        if s.as_object()
            .is_some_and(|m| m.iter().any(|(k, v)| k != "name" && !v.is_null()))
        {
            out.push(invalid_raw(
                &index(&child(path, "imagePullSecrets"), i),
                &go_struct(Some(s), &[("Name", "name", Go::Str)]),
                "only name may be set",
            ));
        }
    }
    if let Some(a) = set(spec, "affinity") {
        affinity(a, &child(path, "affinity"), opts, out);
    }
    dns_config(spec, &child(path, "dnsConfig"), out);
    for (i, g) in items(spec, "readinessGates").iter().enumerate() {
        let t = str_of(g, "conditionType");
        let p = child(&index(&child(path, "readinessGates"), i), "conditionType");
        for m in qualified_name(t) {
            out.push(invalid_str(&p, t, &m));
        }
    }
    let mut gates = HashSet::new();
    for (i, g) in items(spec, "schedulingGates").iter().enumerate() {
        let name = str_of(g, "name");
        let p = index(&child(path, "schedulingGates"), i);
        for m in qualified_name(name) {
            out.push(invalid_str(&p, name, &m));
        }
        if !gates.insert(name) {
            out.push(duplicate(&p, &Value::from(name)));
        }
    }
    topology_spread_constraints(spec, &child(path, "topologySpreadConstraints"), opts, out);
    windows_host_process(spec, path, out);
    if spec.get("hostUsers").and_then(Value::as_bool) == Some(false) {
        let msg = "when `pod.Spec.HostUsers` is false";
        if host_network {
            out.push(forbidden(&child(path, "hostNetwork"), msg));
        }
        // kube names these two fields as its internal type does.
        if flag(spec, "hostPID") {
            out.push(forbidden(&child(path, "HostPID"), msg));
        }
        if flag(spec, "hostIPC") {
            out.push(forbidden(&child(path, "HostIPC"), msg));
        }
    }
    for (field, value) in [
        ("serviceAccountName", str_of(spec, "serviceAccountName")),
        ("nodeName", str_of(spec, "nodeName")),
    ] {
        if !value.is_empty() {
            for m in dns1123_subdomain(value) {
                out.push(invalid_str(&child(path, field), value, &m));
            }
        }
    }
    if let Some(v) = set(spec, "activeDeadlineSeconds") {
        let n = v.as_i64().unwrap_or(0);
        if !(1..=i64::from(i32::MAX)).contains(&n) {
            out.push(inv(
                &child(path, "activeDeadlineSeconds"),
                n,
                "must be between 1 and 2147483647, inclusive",
            ));
        }
    }
    for field in ["hostname", "subdomain"] {
        let v = str_of(spec, field);
        if !v.is_empty() {
            dns_label(v, &child(path, field), out);
        }
    }
    tolerations(items(spec, "tolerations"), &child(path, "tolerations"), out);
    for (i, h) in items(spec, "hostAliases").iter().enumerate() {
        let hp = index(&child(path, "hostAliases"), i);
        legacy_ip(str_of(h, "ip"), &child(&hp, "ip"), out);
        for (j, name) in strs(h, "hostnames").into_iter().enumerate() {
            for m in dns1123_subdomain(name) {
                out.push(invalid_str(&index(&child(&hp, "hostnames"), j), name, &m));
            }
        }
    }
    let pc = str_of(spec, "priorityClassName");
    if !pc.is_empty() {
        for m in dns1123_subdomain(pc) {
            out.push(invalid_str(&child(path, "priorityClassName"), pc, &m));
        }
    }
    if let Some(rc) = set(spec, "runtimeClassName") {
        let rc = rc.as_str().unwrap_or("");
        for m in dns1123_subdomain(rc) {
            out.push(invalid_str(&child(path, "runtimeClassName"), rc, &m));
        }
    }
    if let Some(pp) = set(spec, "preemptionPolicy") {
        let pp = pp.as_str().unwrap_or("");
        let p = child(path, "preemptionPolicy");
        match pp {
            "PreemptLowerPriority" | "Never" => {}
            "" => out.push(required(&p, "")),
            _ => out.push(ns(&p, pp, &["PreemptLowerPriority", "Never"])),
        }
    }
    if let Some(o) = set(spec, "overhead") {
        // kube's `validateOverhead`: the overhead as the `limits` of resource requirements.
        let mut limits = serde_json::Map::new();
        limits.insert("limits".to_owned(), o.clone());
        let requirements = Value::Object(limits);
        resource_requirements(
            Some(&requirements),
            NameKind::Container,
            &[],
            &child(path, "overhead"),
            opts,
            out,
        );
    }
    if let Some(os) = set(spec, "os") {
        let p = child(path, "os");
        let name = str_of(os, "name");
        if name.is_empty() {
            out.push(required(&child(&p, "name"), "cannot be empty"));
        } else if name == "linux" {
            linux_only(spec, path, out);
        } else if name == "windows" {
            windows_only(spec, path, out);
        } else {
            out.push(ns(&p, name, &["linux", "windows"]));
        }
    }
}

/// kube's `validatePodResourceClaims`.
fn pod_resource_claims(claims: &[Value], path: &str, out: &mut Vec<Cause>) {
    let mut names = HashSet::new();
    for (i, c) in claims.iter().enumerate() {
        let p = index(path, i);
        let name = str_of(c, "name");
        if name.is_empty() {
            out.push(required(&child(&p, "name"), ""));
        } else if names.contains(name) {
            out.push(duplicate(&child(&p, "name"), &Value::from(name)));
        } else {
            dns_label(name, &child(&p, "name"), out);
            names.insert(name);
        }
        let claim = set(c, "resourceClaimName");
        let template = set(c, "resourceClaimTemplateName");
        // kube prints its internal `PodResourceClaim` struct (Go field names).
        let shown = || {
            format!(
                "{{\"Name\":{},\"ResourceClaimName\":{},\"ResourceClaimTemplateName\":{}}}",
                go_json(&Value::from(name)),
                json_or_null(claim),
                json_or_null(template),
            )
        };
        if claim.is_some() && template.is_some() {
            out.push(invalid_raw(
                &p,
                &shown(),
                "at most one of `resourceClaimName` or `resourceClaimTemplateName` may be specified",
            ));
        }
        if claim.is_none() && template.is_none() {
            out.push(invalid_raw(
                &p,
                &shown(),
                "must specify one of: `resourceClaimName`, `resourceClaimTemplateName`",
            ));
        }
        for (field, v) in [
            ("resourceClaimName", claim),
            ("resourceClaimTemplateName", template),
        ] {
            if let Some(v) = v {
                let v = v.as_str().unwrap_or("");
                for m in dns1123_subdomain(v) {
                    out.push(invalid_str(&child(&p, field), v, &m));
                }
            }
        }
    }
}

/// kube's `validatePodHostNetworkDeps`: with `hostNetwork`, a container's `hostPort` is its
/// `containerPort` (a template may leave it 0: a Pod gets it defaulted).
fn host_network_deps(spec: &Value, path: &str, ctx: &Ctx, out: &mut Vec<Cause>) {
    if !flag(spec, "hostNetwork") {
        return;
    }
    let cpath = child(path, "containers");
    for (i, c) in items(spec, "containers").iter().enumerate() {
        let ppath = child(&index(&cpath, i), "ports");
        for (j, port) in items(c, "ports").iter().enumerate() {
            let container_port = int(port, "containerPort").unwrap_or(0);
            let host_port = host_port(port, ctx);
            if (ctx.opts.resource_is_pod || host_port != 0) && host_port != container_port {
                out.push(inv(
                    &child(&index(&ppath, j), "hostPort"),
                    host_port,
                    "must match `containerPort` when `hostNetwork` is true",
                ));
            }
        }
    }
}

/// A port's `hostPort`, with kube's Pod default under `hostNetwork`.
fn host_port(port: &Value, ctx: &Ctx) -> i64 {
    match int(port, "hostPort").unwrap_or(0) {
        0 if ctx.host_network_pod => int(port, "containerPort").unwrap_or(0),
        hp => hp,
    }
}

// ---- volumes ----

/// The volume sources in kube's order: the JSON field, and the name kube's "more than 1 volume
/// type" error gives it (kube misspells two).
const VOLUME_SOURCES: &[(&str, &str)] = &[
    ("emptyDir", "emptyDir"),
    ("hostPath", "hostPath"),
    ("gitRepo", "gitRepo"),
    ("gcePersistentDisk", "gcePersistentDisk"),
    ("awsElasticBlockStore", "awsElasticBlockStore"),
    ("secret", "secret"),
    ("nfs", "nfs"),
    ("iscsi", "iscsi"),
    ("glusterfs", "glusterfs"),
    ("flocker", "flocker"),
    ("persistentVolumeClaim", "persistentVolumeClaim"),
    ("rbd", "rbd"),
    ("cinder", "cinder"),
    ("cephfs", "cephFS"),
    ("quobyte", "quobyte"),
    ("downwardAPI", "downwarAPI"),
    ("fc", "fc"),
    ("flexVolume", "flexVolume"),
    ("configMap", "configMap"),
    ("azureFile", "azureFile"),
    ("vsphereVolume", "vsphereVolume"),
    ("photonPersistentDisk", "photonPersistentDisk"),
    ("portworxVolume", "portworxVolume"),
    ("azureDisk", "azureDisk"),
    ("storageos", "storageos"),
    ("projected", "projected"),
    ("scaleIO", "scaleIO"),
    ("csi", "csi"),
    ("ephemeral", "ephemeral"),
    ("image", "image"),
];

/// kube's `ValidateVolumes`: the volumes that validated, by name.
fn volumes<'a>(
    spec: &'a Value,
    path: &str,
    opts: &PodOpts,
    out: &mut Vec<Cause>,
) -> HashMap<&'a str, &'a Value> {
    let list = items(spec, "volumes");
    let mut created = HashSet::new();
    if let Some(pod) = opts.pod_name.as_deref().filter(|n| !n.is_empty()) {
        for v in list {
            if set(v, "ephemeral").is_some() {
                created.insert(format!("{pod}-{}", str_of(v, "name")));
            }
        }
    }
    let mut names = HashSet::new();
    let mut vols = HashMap::new();
    for (i, v) in list.iter().enumerate() {
        let p = index(path, i);
        let name = str_of(v, "name");
        let name_path = child(&p, "name");
        let mut el = Vec::new();
        volume_source(v, &p, name, opts, &mut el);
        if name.is_empty() {
            el.push(required(&name_path, ""));
        } else {
            dns_label(name, &name_path, &mut el);
        }
        if names.contains(name) {
            el.push(duplicate(&name_path, &Value::from(name)));
        }
        if el.is_empty() {
            names.insert(name);
            vols.insert(name, v);
        } else {
            out.extend(el);
        }
        if let Some(claim) = set(v, "persistentVolumeClaim") {
            let c = str_of(claim, "claimName");
            if created.contains(c) {
                out.push(invalid_str(
                    &child(&child(&p, "persistentVolumeClaim"), "claimName"),
                    c,
                    "must not reference a PVC that gets created for an ephemeral volume",
                ));
            }
        }
    }
    vols
}

/// kube's `validateVolumeSource`. A volume without a source is an `emptyDir` after kube's
/// defaults (`SetDefaults_Volume`), so kube's "must specify a volume type" never shows.
fn volume_source(v: &Value, path: &str, name: &str, opts: &PodOpts, out: &mut Vec<Cause>) {
    let mut count = 0;
    for &(field, shown) in VOLUME_SOURCES {
        let Some(src) = set(v, field) else {
            continue;
        };
        if count > 0 {
            out.push(forbidden(&child(path, shown), ONE_VOLUME_TYPE));
        } else {
            count += 1;
            source(field, src, path, name, opts, out);
        }
        if field == "iscsi"
            && set(src, "initiatorName").is_some()
            && name.len() + 1 + str_of(src, "targetPortal").len() > 64
        {
            out.push(invalid_str(
                &child(path, "name"),
                name,
                "Total length of <volume name>:<iscsi.targetPortal> must be under 64 characters if iscsi.initiatorName is specified.",
            ));
        }
    }
}

/// Required when the string field is empty.
fn require_str(v: &Value, field: &str, path: &str, out: &mut Vec<Cause>) {
    if str_of(v, field).is_empty() {
        out.push(required(&child(path, field), ""));
    }
}

/// A file mode (`defaultMode`, `mode`) in 0..=0777.
fn file_mode(v: &Value, field: &str, path: &str, out: &mut Vec<Cause>) {
    if let Some(m) = int(v, field).filter(|m| !(0..=0o777).contains(m)) {
        out.push(inv(&child(path, field), m, FILE_MODE));
    }
}

/// One volume source's own checks (`validate<Kind>VolumeSource`), `path` being the volume's.
fn source(field: &str, src: &Value, path: &str, vol: &str, opts: &PodOpts, out: &mut Vec<Cause>) {
    let p = child(path, field);
    match field {
        "emptyDir" if src.get("sizeLimit").is_some_and(|q| nano(q) < 0) => {
            out.push(forbidden(
                &child(&p, "sizeLimit"),
                "SizeLimit field must be a valid resource quantity",
            ));
        }
        "hostPath" => {
            let hp = str_of(src, "path");
            if hp.is_empty() {
                out.push(required(&child(&p, "path"), ""));
                return;
            }
            no_backsteps(hp, &child(&p, "path"), out);
            let types = [
                "",
                "BlockDevice",
                "CharDevice",
                "Directory",
                "DirectoryOrCreate",
                "File",
                "FileOrCreate",
                "Socket",
            ];
            if let Some(t) = src.get("type").and_then(Value::as_str) {
                if !types.contains(&t) {
                    out.push(ns(&child(&p, "type"), t, &types));
                }
            }
        }
        "gitRepo" => {
            require_str(src, "repository", &p, out);
            local_descending_path(str_of(src, "directory"), &child(&p, "directory"), out);
        }
        "gcePersistentDisk" | "awsElasticBlockStore" => {
            // kube validates the GCE disk under the name `persistentDisk`.
            let p = if field == "gcePersistentDisk" {
                child(path, "persistentDisk")
            } else {
                p
            };
            let id = if field == "gcePersistentDisk" {
                "pdName"
            } else {
                "volumeID"
            };
            require_str(src, id, &p, out);
            if let Some(n) = int(src, "partition").filter(|n| !(0..=255).contains(n)) {
                out.push(inv(
                    &child(&p, "partition"),
                    n,
                    "must be between 1 and 255, inclusive",
                ));
            }
        }
        "secret" | "configMap" => {
            require_str(
                src,
                if field == "secret" {
                    "secretName"
                } else {
                    "name"
                },
                &p,
                out,
            );
            file_mode(src, "defaultMode", &p, out);
            for (i, kp) in items(src, "items").iter().enumerate() {
                key_to_path(kp, &index(&child(&p, "items"), i), out);
            }
        }
        "nfs" => {
            require_str(src, "server", &p, out);
            require_str(src, "path", &p, out);
            let np = str_of(src, "path");
            if !np.starts_with('/') {
                out.push(invalid_str(
                    &child(&p, "path"),
                    np,
                    "must be an absolute path",
                ));
            }
        }
        "iscsi" => iscsi(src, &p, out),
        "glusterfs" => {
            require_str(src, "endpoints", &p, out);
            require_str(src, "path", &p, out);
        }
        "flocker" => {
            let (name, uuid) = (str_of(src, "datasetName"), str_of(src, "datasetUUID"));
            if name.is_empty() && uuid.is_empty() {
                out.push(required(
                    &p,
                    "one of datasetName and datasetUUID is required",
                ));
            }
            if !name.is_empty() && !uuid.is_empty() {
                out.push(invalid_str(
                    &p,
                    "resource",
                    "datasetName and datasetUUID can not be specified simultaneously",
                ));
            }
            if name.contains('/') {
                out.push(invalid_str(
                    &child(&p, "datasetName"),
                    name,
                    "must not contain '/'",
                ));
            }
        }
        "persistentVolumeClaim" => require_str(src, "claimName", &p, out),
        "rbd" => {
            if items(src, "monitors").is_empty() {
                out.push(required(&child(&p, "monitors"), ""));
            }
            require_str(src, "image", &p, out);
        }
        "cinder" => {
            require_str(src, "volumeID", &p, out);
            if let Some(r) = set(src, "secretRef") {
                require_str(r, "name", &child(&p, "secretRef"), out);
            }
        }
        "cephfs" if items(src, "monitors").is_empty() => {
            out.push(required(&child(&p, "monitors"), ""));
        }
        "quobyte" => quobyte(src, &p, out),
        "downwardAPI" => {
            file_mode(src, "defaultMode", &p, out);
            // kube checks each item against the volume's path, not the item's.
            for f in items(src, "items") {
                downward_api_file(f, &p, out);
            }
        }
        "fc" => {
            let wwns = items(src, "targetWWNs");
            let wwids = items(src, "wwids");
            if wwns.is_empty() && wwids.is_empty() {
                out.push(required(
                    &child(&p, "targetWWNs"),
                    "must specify either targetWWNs or wwids, but not both",
                ));
            }
            if !wwns.is_empty() && !wwids.is_empty() {
                out.push(invalid_raw(
                    &child(&p, "targetWWNs"),
                    &go_json(src.get("targetWWNs").unwrap_or(&Value::Null)),
                    "targetWWNs and wwids can not be specified simultaneously",
                ));
            }
            if !wwns.is_empty() {
                match int(src, "lun") {
                    None => out.push(required(
                        &child(&p, "lun"),
                        "lun is required if targetWWNs is specified",
                    )),
                    Some(l) if !(0..=255).contains(&l) => out.push(inv(
                        &child(&p, "lun"),
                        l,
                        "must be between 0 and 255, inclusive",
                    )),
                    Some(_) => {}
                }
            }
        }
        "flexVolume" => {
            require_str(src, "driver", &p, out);
            let options = src.get("options").and_then(Value::as_object);
            for k in options.into_iter().flat_map(|m| m.keys()) {
                let namespace = k.split_once('/').map_or(k.as_str(), |(ns, _)| ns);
                let normalized = format!(".{}", namespace.to_lowercase());
                if normalized.ends_with(".kubernetes.io") || normalized.ends_with(".k8s.io") {
                    out.push(invalid_str(
                        &key(&child(&p, "options"), k),
                        k,
                        "kubernetes.io and k8s.io namespaces are reserved",
                    ));
                }
            }
        }
        "azureFile" => {
            require_str(src, "secretName", &p, out);
            require_str(src, "shareName", &p, out);
        }
        "vsphereVolume" => require_str(src, "volumePath", &p, out),
        "photonPersistentDisk" => require_str(src, "pdID", &p, out),
        "portworxVolume" => require_str(src, "volumeID", &p, out),
        "azureDisk" => azure_disk(src, &p, out),
        "storageos" => {
            let name = str_of(src, "volumeName");
            if name.is_empty() {
                out.push(required(&child(&p, "volumeName"), ""));
            } else {
                dns_label(name, &child(&p, "volumeName"), out);
            }
            let vns = str_of(src, "volumeNamespace");
            if !vns.is_empty() {
                dns_label(vns, &child(&p, "volumeNamespace"), out);
            }
            if let Some(r) = set(src, "secretRef") {
                require_str(r, "name", &child(&p, "secretRef"), out);
            }
        }
        "projected" => projected(src, &p, opts, out),
        "scaleIO" => {
            require_str(src, "gateway", &p, out);
            require_str(src, "system", &p, out);
            require_str(src, "volumeName", &p, out);
        }
        "csi" => {
            let driver = str_of(src, "driver");
            let dp = child(&p, "driver");
            if driver.is_empty() {
                out.push(required(&dp, ""));
            }
            if driver.len() > 63 {
                out.push(too_long(&dp, 63));
            }
            for m in dns1123_subdomain(&driver.to_lowercase()) {
                out.push(invalid_str(&dp, driver, &m));
            }
            if let Some(r) = set(src, "nodePublishSecretRef") {
                let name = str_of(r, "name");
                if name.is_empty() {
                    out.push(required(
                        &child(&child(&p, "nodePublishSecretRef"), "name"),
                        "",
                    ));
                } else {
                    // kube reports a bad secret name at `csi.name`.
                    for m in dns1123_subdomain(name) {
                        out.push(invalid_str(&child(&p, "name"), name, &m));
                    }
                }
            }
        }
        "ephemeral" => {
            match set(src, "volumeClaimTemplate") {
                None => out.push(required(&child(&p, "volumeClaimTemplate"), "")),
                Some(t) => pvc_template(t, &child(&p, "volumeClaimTemplate"), out),
            }
            if let Some(pod) = opts.pod_name.as_deref().filter(|n| !n.is_empty()) {
                if !vol.is_empty() {
                    let pvc = format!("{pod}-{vol}");
                    for m in dns1123_subdomain(&pvc) {
                        out.push(invalid_str(
                            &child(path, "name"),
                            vol,
                            &format!("PVC name {}: {m}", quoted(&pvc)),
                        ));
                    }
                }
            }
        }
        "image" => {
            if opts.resource_is_pod && str_of(src, "reference").is_empty() {
                out.push(required(&child(&p, "reference"), ""));
            }
            pull_policy(str_of(src, "pullPolicy"), &child(&p, "pullPolicy"), out);
        }
        _ => {}
    }
}

/// kube's `validateKeyToPath`.
fn key_to_path(kp: &Value, path: &str, out: &mut Vec<Cause>) {
    require_str(kp, "key", path, out);
    require_str(kp, "path", path, out);
    local_non_reserved_path(str_of(kp, "path"), &child(path, "path"), out);
    file_mode(kp, "mode", path, out);
}

/// An iSCSI name kube's checks know: it starts with `iqn`, `eui` or `naa`.
pub(crate) fn iscsi_known(s: &str) -> bool {
    s.starts_with("iqn") || s.starts_with("eui") || s.starts_with("naa")
}

/// An iSCSI name in the format of its prefix (kube's `iscsiInitiator{Iqn,Eui,Naa}Regex`; an
/// unknown prefix is not checked here). Go's `\d` and `\s` are ASCII; the regex crate's
/// matching is linear in the name.
pub(crate) fn iscsi_format_ok(s: &str) -> bool {
    static IQN: OnceLock<Option<Regex>> = OnceLock::new();
    static EUI: OnceLock<Option<Regex>> = OnceLock::new();
    static NAA: OnceLock<Option<Regex>> = OnceLock::new();
    if s.starts_with("iqn") {
        matches(
            &IQN,
            r"iqn\.[0-9]{4}-[0-9]{2}\.([-.[:alnum:]]+)(:[^,;*&$|\t\n\f\r ]+)$",
            s,
        )
    } else if s.starts_with("eui") {
        matches(&EUI, r"^eui.[[:alnum:]]{16}$", s)
    } else if s.starts_with("naa") {
        matches(&NAA, r"^naa.[[:alnum:]]{32}$", s)
    } else {
        true
    }
}

/// The `initiatorName` check kube's volume and persistent volume iSCSI sources share.
pub(crate) fn iscsi_initiator(init: &str, p: &str, out: &mut Vec<Cause>) {
    let ip = child(p, "initiatorname");
    if !iscsi_known(init) {
        out.push(invalid_str(
            &ip,
            init,
            "must be valid format starting with iqn, eui, or naa",
        ));
    }
    if !iscsi_format_ok(init) {
        out.push(invalid_str(&ip, init, "must be valid format"));
    }
}

/// kube's `validateISCSIVolumeSource`.
fn iscsi(src: &Value, p: &str, out: &mut Vec<Cause>) {
    require_str(src, "targetPortal", p, out);
    let iqn = str_of(src, "iqn");
    let ip = child(p, "iqn");
    if iqn.is_empty() {
        out.push(required(&ip, ""));
    } else if !iscsi_known(iqn) {
        out.push(invalid_str(
            &ip,
            iqn,
            "must be valid format starting with iqn, eui, or naa",
        ));
    } else if !iscsi_format_ok(iqn) {
        out.push(invalid_str(&ip, iqn, "must be valid format"));
    }
    let lun = int(src, "lun").unwrap_or(0);
    if !(0..=255).contains(&lun) {
        out.push(inv(
            &child(p, "lun"),
            lun,
            "must be between 0 and 255, inclusive",
        ));
    }
    if (flag(src, "chapAuthDiscovery") || flag(src, "chapAuthSession"))
        && set(src, "secretRef").is_none()
    {
        out.push(required(&child(p, "secretRef"), ""));
    }
    if let Some(init) = src.get("initiatorName").and_then(Value::as_str) {
        iscsi_initiator(init, p, out);
    }
}

/// kube's `validateQuobyteVolumeSource`.
fn quobyte(src: &Value, p: &str, out: &mut Vec<Cause>) {
    let msg = "must be a host:port pair or multiple pairs separated by commas";
    let registry = str_of(src, "registry");
    if registry.is_empty() {
        out.push(required(&child(p, "registry"), msg));
    } else if str_of(src, "tenant").len() >= 65 {
        out.push(required(
            &child(p, "tenant"),
            "must be a UUID and may not exceed a length of 64 characters",
        ));
    } else {
        for pair in registry.split(',') {
            if !split_host_port_ok(pair) {
                out.push(invalid_str(&child(p, "registry"), registry, msg));
            }
        }
    }
    require_str(src, "volume", p, out);
}

/// Whether Go's `net.SplitHostPort` accepts `s`.
fn split_host_port_ok(s: &str) -> bool {
    let b = s.as_bytes();
    let Some(i) = s.rfind(':') else {
        return false;
    };
    let (j, k) = if b.first() == Some(&b'[') {
        let Some(end) = s.find(']') else {
            return false;
        };
        if end + 1 != i {
            return false;
        }
        (1, end + 1)
    } else {
        if s.get(..i).is_some_and(|h| h.contains(':')) {
            return false;
        }
        (0, 0)
    };
    !s.get(j..).is_some_and(|r| r.contains('[')) && !s.get(k..).is_some_and(|r| r.contains(']'))
}

/// kube's `validateAzureDisk` (`kind` is defaulted to `Shared`, `cachingMode` to `ReadWrite`).
fn azure_disk(src: &Value, p: &str, out: &mut Vec<Cause>) {
    require_str(src, "diskName", p, out);
    require_str(src, "diskURI", p, out);
    if let Some(c) = src.get("cachingMode").and_then(Value::as_str) {
        if !["None", "ReadOnly", "ReadWrite"].contains(&c) {
            out.push(ns(
                &child(p, "cachingMode"),
                c,
                &["None", "ReadOnly", "ReadWrite"],
            ));
        }
    }
    let kind = src.get("kind").and_then(Value::as_str).unwrap_or("Shared");
    if !["Dedicated", "Managed", "Shared"].contains(&kind) {
        out.push(ns(
            &child(p, "kind"),
            kind,
            &["Dedicated", "Managed", "Shared"],
        ));
    }
    let uri = str_of(src, "diskURI");
    if kind == "Managed" && !uri.starts_with("/subscriptions/") {
        out.push(ns(
            &child(p, "diskURI"),
            uri,
            &["/subscriptions/{sub-id}/resourcegroups/{group-name}/providers/microsoft.compute/disks/{disk-id}"],
        ));
    }
    if kind != "Managed" && !uri.starts_with("https://") {
        out.push(ns(
            &child(p, "diskURI"),
            uri,
            &["https://{account-name}.blob.core.windows.net/{container-name}/{disk-name}.vhd"],
        ));
    }
}

/// kube's `validateDownwardAPIVolumeFile`.
fn downward_api_file(file: &Value, p: &str, out: &mut Vec<Cause>) {
    require_str(file, "path", p, out);
    local_non_reserved_path(str_of(file, "path"), &child(p, "path"), out);
    if let Some(fr) = set(file, "fieldRef") {
        object_field_selector(fr, VOLUME_FIELD_PATHS, &child(p, "fieldRef"), out);
        if set(file, "resourceFieldRef").is_some() {
            out.push(invalid_str(
                p,
                "resource",
                "fieldRef and resourceFieldRef can not be specified simultaneously",
            ));
        }
    } else if let Some(rf) = set(file, "resourceFieldRef") {
        resource_field_selector(rf, &child(p, "resourceFieldRef"), true, out);
    } else {
        out.push(required(
            p,
            "one of fieldRef and resourceFieldRef is required",
        ));
    }
    file_mode(file, "mode", p, out);
}

/// kube's `validateProjectedVolumeSource` and `validateProjectionSources`.
fn projected(src: &Value, p: &str, opts: &PodOpts, out: &mut Vec<Cause>) {
    file_mode(src, "defaultMode", p, out);
    let mut paths: HashSet<&str> = HashSet::new();
    for (i, s) in items(src, "sources").iter().enumerate() {
        let sp = index(&child(p, "sources"), i);
        let mut count = 0;
        for kind in ["secret", "configMap"] {
            let Some(ks) = set(s, kind) else {
                continue;
            };
            count += 1;
            let kp = child(&sp, kind);
            require_str(ks, "name", &kp, out);
            for (j, item) in items(ks, "items").iter().enumerate() {
                key_to_path(item, &index(&child(&kp, "items"), j), out);
                let path = str_of(item, "path");
                if !path.is_empty() && !paths.insert(path) {
                    out.push(invalid_str(p, str_of(ks, "name"), CONFLICTING_PATHS));
                }
            }
        }
        if let Some(d) = set(s, "downwardAPI") {
            count += 1;
            let dp = child(&sp, "downwardAPI");
            for f in items(d, "items") {
                downward_api_file(f, &dp, out);
                let path = str_of(f, "path");
                if !path.is_empty() && !paths.insert(path) {
                    out.push(invalid_str(p, path, CONFLICTING_PATHS));
                }
            }
        }
        if let Some(t) = set(s, "serviceAccountToken") {
            count += 1;
            let tp = child(&sp, "serviceAccountToken");
            // Defaulted to an hour.
            let exp = int(t, "expirationSeconds").unwrap_or(3600);
            if exp < 600 {
                out.push(inv(
                    &child(&tp, "expirationSeconds"),
                    exp,
                    "may not specify a duration less than 10 minutes",
                ));
            }
            if exp > 1 << 32 {
                out.push(inv(
                    &child(&tp, "expirationSeconds"),
                    exp,
                    "may not specify a duration larger than 2^32 seconds",
                ));
            }
            let path = str_of(t, "path");
            // kube reports the token's path at the projection's `path`.
            if path.is_empty() {
                out.push(required(&child(p, "path"), ""));
            } else if !opts.allow_non_local_projected_token_path {
                local_non_reserved_path(path, &child(p, "path"), out);
            }
        }
        if let Some(b) = set(s, "clusterTrustBundle") {
            count += 1;
            cluster_trust_bundle(b, &child(&sp, "clusterTrustBundle"), out);
            let path = str_of(b, "path");
            if !paths.insert(path) {
                out.push(invalid_str(p, path, CONFLICTING_PATHS));
            }
        }
        if count > 1 {
            out.push(forbidden(
                &sp,
                "may not specify more than 1 volume type per source",
            ));
        }
    }
}

/// The `clusterTrustBundle` projection's checks. The bundle's name and signer name formats
/// (kube's `ValidateClusterTrustBundleName`, `ValidateSignerName`) are not checked.
fn cluster_trust_bundle(b: &Value, p: &str, out: &mut Vec<Cause>) {
    let name = set(b, "name");
    let signer = set(b, "signerName");
    match (name, signer) {
        (Some(_), Some(_)) => {
            // kube prints its internal `ClusterTrustBundleProjection` (Go field names).
            let field = |f: &str| json_or_null(set(b, f));
            out.push(invalid_raw(
                p,
                &format!(
                    "{{\"Name\":{},\"SignerName\":{},\"LabelSelector\":{},\"Optional\":{},\"Path\":{}}}",
                    field("name"),
                    field("signerName"),
                    super::apps::selector_json(set(b, "labelSelector")),
                    field("optional"),
                    go_json(&Value::from(str_of(b, "path"))),
                ),
                "only one of name and signerName may be used",
            ));
        }
        (Some(n), None) => {
            if n.as_str().unwrap_or("").is_empty() {
                out.push(required(&child(p, "name"), "must be a valid object name"));
            }
            if let Some(sel) = set(b, "labelSelector") {
                out.push(invalid_raw(
                    &child(p, "labelSelector"),
                    &super::apps::selector_json(Some(sel)),
                    "labelSelector must be unset if name is specified",
                ));
            }
        }
        (None, Some(s)) => {
            if s.as_str().unwrap_or("").is_empty() {
                out.push(required(
                    &child(p, "signerName"),
                    "must be a valid signer name",
                ));
            }
            label_selector(
                set(b, "labelSelector"),
                false,
                &child(p, "labelSelector"),
                out,
            );
        }
        (None, None) => out.push(required(p, "either name or signerName must be specified")),
    }
    require_str(b, "path", p, out);
    local_non_reserved_path(str_of(b, "path"), &child(p, "path"), out);
}

/// kube's `ValidatePersistentVolumeClaimTemplate` of a generic ephemeral volume: its metadata
/// (`ValidateTemplateObjectMeta`: labels, no field but labels and annotations) and spec.
fn pvc_template(t: &Value, p: &str, out: &mut Vec<Cause>) {
    let mp = child(p, "metadata");
    let meta = t.get("metadata").unwrap_or(&Value::Null);
    validate_labels(meta.get("labels"), &child(&mp, "labels"), out);
    crate::model::workloads::template_annotations(
        meta.get("annotations"),
        &child(&mp, "annotations"),
        out,
    );
    // `ObjectMeta`'s other fields in kube's order, named as kube lower-cases its Go names.
    for (field, shown) in [
        ("name", "name"),
        ("generateName", "generateName"),
        ("namespace", "namespace"),
        ("selfLink", "selfLink"),
        ("uid", "uID"),
        ("resourceVersion", "resourceVersion"),
        ("generation", "generation"),
        ("creationTimestamp", "creationTimestamp"),
        ("deletionTimestamp", "deletionTimestamp"),
        ("deletionGracePeriodSeconds", "deletionGracePeriodSeconds"),
        ("ownerReferences", "ownerReferences"),
        ("finalizers", "finalizers"),
        ("managedFields", "managedFields"),
    ] {
        let is_set = match meta.get(field) {
            None | Some(Value::Null) => false,
            Some(Value::String(s)) => !s.is_empty(),
            Some(Value::Number(n)) => n.as_f64() != Some(0.0),
            Some(_) => true,
        };
        if is_set {
            out.push(forbidden(&child(&mp, shown), "cannot be set"));
        }
    }
    pvc_spec(
        t.get("spec").unwrap_or(&Value::Null),
        &child(p, "spec"),
        out,
    );
}

/// kube's `ValidatePersistentVolumeClaimSpec` (as for a claim template: no ratchets).
fn pvc_spec(spec: &Value, p: &str, out: &mut Vec<Cause>) {
    let modes = items(spec, "accessModes");
    let mp = child(p, "accessModes");
    if modes.is_empty() {
        out.push(required(&mp, "at least 1 access mode is required"));
    }
    if let Some(sel) = set(spec, "selector") {
        label_selector(Some(sel), false, &child(p, "selector"), out);
    }
    let supported = [
        "ReadOnlyMany",
        "ReadWriteMany",
        "ReadWriteOnce",
        "ReadWriteOncePod",
    ];
    let (mut once_pod, mut other) = (false, false);
    for m in modes {
        let m = m.as_str().unwrap_or("");
        if !supported.contains(&m) {
            out.push(ns(&mp, m, &supported));
        }
        if m == "ReadWriteOncePod" {
            once_pod = true;
        } else if supported.contains(&m) {
            other = true;
        }
    }
    if once_pod && other {
        out.push(forbidden(
            &mp,
            "may not use ReadWriteOncePod with other access modes",
        ));
    }
    let sp = key(&child(p, "resources"), "storage");
    match spec.pointer("/resources/requests/storage") {
        None => out.push(required(&sp, "")),
        Some(q) if nano(q) <= 0 => out.push(invalid_str(&sp, &canon(q), NOT_POSITIVE)),
        Some(q) => quantity_value("storage", q, &sp, out),
    }
    for field in ["storageClassName", "volumeAttributesClassName"] {
        let v = str_of(spec, field);
        if !v.is_empty() {
            for m in dns1123_subdomain(v) {
                out.push(invalid_str(&child(p, field), v, &m));
            }
        }
    }
    let mode = str_of(spec, "volumeMode");
    if !mode.is_empty() && mode != "Block" && mode != "Filesystem" {
        out.push(ns(&child(p, "volumeMode"), mode, &["Block", "Filesystem"]));
    }
    let ds = set(spec, "dataSource");
    let dsr = set(spec, "dataSourceRef");
    if let Some(ds) = ds {
        data_source(ds, &child(p, "dataSource"), out);
    }
    if let Some(r) = dsr {
        data_source(r, &child(p, "dataSourceRef"), out);
        let namespace = str_of(r, "namespace");
        if !namespace.is_empty() {
            dns_label(
                namespace,
                &child(&child(p, "dataSourceRef"), "namespace"),
                out,
            );
        }
    }
    // kube prints a `*field.Path` here, which marshals to `{}`.
    match (ds, dsr) {
        (Some(_), Some(r)) if !str_of(r, "namespace").is_empty() => out.push(invalid_raw(
            p,
            "{}",
            "may not be specified when dataSourceRef.namespace is specified",
        )),
        (Some(d), Some(r))
            if str_of(r, "namespace").is_empty()
                && (d.get("apiGroup") != r.get("apiGroup")
                    || str_of(d, "kind") != str_of(r, "kind")
                    || str_of(d, "name") != str_of(r, "name")) =>
        {
            out.push(invalid_raw(p, "{}", "must match dataSourceRef"))
        }
        _ => {}
    }
}

/// kube's `validateDataSource` / `validateDataSourceRef` (but the namespace).
fn data_source(ds: &Value, p: &str, out: &mut Vec<Cause>) {
    require_str(ds, "name", p, out);
    require_str(ds, "kind", p, out);
    let group = str_of(ds, "apiGroup");
    let kind = str_of(ds, "kind");
    if group.is_empty() && kind != "PersistentVolumeClaim" {
        out.push(invalid_str(
            p,
            kind,
            "must be 'PersistentVolumeClaim' when referencing the default apiGroup",
        ));
    }
    if !group.is_empty() {
        for m in dns1123_subdomain(group) {
            out.push(invalid_str(&child(p, "apiGroup"), group, &m));
        }
    }
}

// ---- containers ----

/// kube's `validateContainers`: the regular containers.
fn containers(spec: &Value, path: &str, ctx: &Ctx, out: &mut Vec<Cause>) {
    let list = items(spec, "containers");
    if list.is_empty() {
        out.push(required(path, ""));
        return;
    }
    let mut names = HashSet::new();
    for (i, c) in list.iter().enumerate() {
        let p = index(path, i);
        container_common(c, &p, ctx, out);
        let name = str_of(c, "name");
        if !names.insert(name) {
            out.push(duplicate(&child(&p, "name"), &Value::from(name)));
        }
        lifecycle_and_probes(c, &p, ctx, out);
        if set(c, "restartPolicy").is_some() {
            out.push(forbidden(
                &child(&p, "restartPolicy"),
                "may not be set for non-init containers",
            ));
        }
    }
    host_port_conflicts(list, path, ctx, out);
}

/// kube's `validateInitContainers`: names unique with the regular containers' too, sidecars
/// (`restartPolicy: Always`) may have probes and a lifecycle, other init containers may not.
fn init_containers(spec: &Value, path: &str, ctx: &Ctx, out: &mut Vec<Cause>) {
    let mut names: HashSet<&str> = items(spec, "containers")
        .iter()
        .map(|c| str_of(c, "name"))
        .collect();
    for (i, c) in items(spec, "initContainers").iter().enumerate() {
        let p = index(path, i);
        container_common(c, &p, ctx, out);
        let mut sidecar = false;
        if let Some(rp) = c.get("restartPolicy").and_then(Value::as_str) {
            if rp != "Always" {
                out.push(ns(&child(&p, "restartPolicy"), rp, &["Always"]));
            }
            sidecar = rp == "Always";
        }
        let name = str_of(c, "name");
        if names.contains(name) {
            out.push(duplicate(&child(&p, "name"), &Value::from(name)));
        } else if !name.is_empty() {
            names.insert(name);
        }
        // Init containers run one at a time: each is checked alone (and kube reports it as the
        // list's first).
        host_port_conflicts(std::slice::from_ref(c), path, ctx, out);
        if sidecar {
            lifecycle_and_probes(c, &p, ctx, out);
        } else {
            for field in [
                "lifecycle",
                "livenessProbe",
                "readinessProbe",
                "startupProbe",
            ] {
                if set(c, field).is_some() {
                    out.push(forbidden(
                        &child(&p, field),
                        "may not be set for init containers without restartPolicy=Always",
                    ));
                }
            }
        }
    }
}

/// kube's `validateEphemeralContainers`.
fn ephemeral_containers(spec: &Value, path: &str, ctx: &Ctx, out: &mut Vec<Cause>) {
    let list = items(spec, "ephemeralContainers");
    if list.is_empty() {
        return;
    }
    let others: HashSet<&str> = ["containers", "initContainers"]
        .iter()
        .flat_map(|f| items(spec, f))
        .map(|c| str_of(c, "name"))
        .collect();
    let mut names = others.clone();
    for (i, c) in list.iter().enumerate() {
        let p = index(path, i);
        container_common(c, &p, ctx, out);
        image_whitespace(c, &p, out);
        let name = str_of(c, "name");
        if !names.insert(name) {
            out.push(duplicate(&child(&p, "name"), &Value::from(name)));
        }
        let target = str_of(c, "targetContainerName");
        if !target.is_empty() && !others.contains(target) {
            out.push(not_found(&child(&p, "targetContainerName"), target));
        }
        // The fields kube's `allowedEphemeralContainerFields` leaves out, in its struct's order.
        for field in [
            "ports",
            "resources",
            "resizePolicy",
            "restartPolicy",
            "livenessProbe",
            "readinessProbe",
            "startupProbe",
            "lifecycle",
        ] {
            let is_set = match set(c, field) {
                None => false,
                // An empty `resources` is the zero value.
                Some(Value::Object(m)) if field == "resources" => m.values().any(|v| !v.is_null()),
                Some(_) => true,
            };
            if is_set {
                out.push(forbidden(
                    &child(&p, field),
                    "cannot be set for an Ephemeral Container",
                ));
            }
        }
        for (j, m) in items(c, "volumeMounts").iter().enumerate() {
            let mp = index(&child(&p, "volumeMounts"), j);
            for field in ["subPath", "subPathExpr"] {
                if !str_of(m, field).is_empty() {
                    out.push(forbidden(
                        &child(&mp, field),
                        "cannot be set for an Ephemeral Container",
                    ));
                }
            }
        }
    }
}

/// kube's `validateContainerOnlyForPod`.
fn image_whitespace(c: &Value, p: &str, out: &mut Vec<Cause>) {
    let image = str_of(c, "image");
    if image.trim() != image {
        out.push(invalid_str(
            &child(p, "image"),
            image,
            "must not have leading or trailing whitespace",
        ));
    }
}

/// kube's `validateContainerCommon`: what every kind of container is checked for.
fn container_common(c: &Value, p: &str, ctx: &Ctx, out: &mut Vec<Cause>) {
    let name = str_of(c, "name");
    let np = child(p, "name");
    if name.is_empty() {
        out.push(required(&np, ""));
    } else {
        dns_label(name, &np, out);
    }
    // kube keeps a whitespace-only image here (a template's placeholder); a Pod's is refused by
    // `image_whitespace`.
    if str_of(c, "image").is_empty() {
        out.push(required(&child(p, "image"), ""));
    }
    let tmp = str_of(c, "terminationMessagePolicy");
    if !tmp.is_empty() && tmp != "File" && tmp != "FallbackToLogsOnError" {
        out.push(ns(
            &child(p, "terminationMessagePolicy"),
            tmp,
            &["File", "FallbackToLogsOnError"],
        ));
    }
    let mounts: HashMap<&str, &str> = items(c, "volumeMounts")
        .iter()
        .map(|m| (str_of(m, "name"), str_of(m, "mountPath")))
        .collect();
    let devices: HashMap<&str, &str> = items(c, "volumeDevices")
        .iter()
        .map(|d| (str_of(d, "name"), str_of(d, "devicePath")))
        .collect();
    container_ports(items(c, "ports"), &child(p, "ports"), ctx, out);
    env(items(c, "env"), &child(p, "env"), out);
    env_from(items(c, "envFrom"), &child(p, "envFrom"), out);
    volume_mounts(c, &devices, ctx, &child(p, "volumeMounts"), out);
    volume_devices(
        items(c, "volumeDevices"),
        &mounts,
        ctx,
        &child(p, "volumeDevices"),
        out,
    );
    pull_policy(
        str_of(c, "imagePullPolicy"),
        &child(p, "imagePullPolicy"),
        out,
    );
    resource_requirements(
        c.get("resources"),
        NameKind::Container,
        &ctx.claims,
        &child(p, "resources"),
        ctx.opts,
        out,
    );
    resize_policy(
        items(c, "resizePolicy"),
        &child(p, "resizePolicy"),
        ctx.restart,
        out,
    );
    if let Some(sc) = set(c, "securityContext") {
        security_context(sc, &child(p, "securityContext"), ctx.host_users, out);
    }
}

/// kube's `validatePullPolicy` (empty is defaulted).
fn pull_policy(policy: &str, p: &str, out: &mut Vec<Cause>) {
    if !policy.is_empty() && !["Always", "IfNotPresent", "Never"].contains(&policy) {
        out.push(ns(p, policy, &["Always", "IfNotPresent", "Never"]));
    }
}

/// kube's `validateContainerPorts`.
fn container_ports(ports: &[Value], path: &str, ctx: &Ctx, out: &mut Vec<Cause>) {
    let mut names = HashSet::new();
    for (i, port) in ports.iter().enumerate() {
        let p = index(path, i);
        let name = str_of(port, "name");
        if !name.is_empty() {
            let msgs = port_name(name);
            if !msgs.is_empty() {
                for m in msgs {
                    out.push(invalid_str(&child(&p, "name"), name, &m));
                }
            } else if !names.insert(name) {
                out.push(duplicate(&child(&p, "name"), &Value::from(name)));
            }
        }
        let container_port = int(port, "containerPort").unwrap_or(0);
        if container_port == 0 {
            out.push(required(&child(&p, "containerPort"), ""));
        } else if !(1..=65535).contains(&container_port) {
            out.push(inv(&child(&p, "containerPort"), container_port, PORT_RANGE));
        }
        let host_port = host_port(port, ctx);
        if host_port != 0 && !(1..=65535).contains(&host_port) {
            out.push(inv(&child(&p, "hostPort"), host_port, PORT_RANGE));
        }
        let protocol = str_of(port, "protocol");
        if !protocol.is_empty() && !["TCP", "UDP", "SCTP"].contains(&protocol) {
            out.push(ns(
                &child(&p, "protocol"),
                protocol,
                &["SCTP", "TCP", "UDP"],
            ));
        }
    }
}

/// kube's `checkHostPortConflicts`: a host port (protocol, IP, port) used once.
fn host_port_conflicts(list: &[Value], path: &str, ctx: &Ctx, out: &mut Vec<Cause>) {
    let mut seen = HashSet::new();
    for (ci, c) in list.iter().enumerate() {
        let pp = child(&index(path, ci), "ports");
        for (pi, port) in items(c, "ports").iter().enumerate() {
            let hp = host_port(port, ctx);
            if hp == 0 {
                continue;
            }
            let used = format!(
                "{}/{}/{hp}",
                default_str(str_of(port, "protocol"), "TCP"),
                str_of(port, "hostIP")
            );
            if seen.contains(&used) {
                out.push(duplicate(
                    &child(&index(&pp, pi), "hostPort"),
                    &Value::from(used),
                ));
            } else {
                seen.insert(used);
            }
        }
    }
}

/// kube's `ValidateEnv` (with `RelaxedEnvironmentVariableValidation`, on in 1.34: any printable
/// ASCII but `=`).
fn env(vars: &[Value], path: &str, out: &mut Vec<Cause>) {
    for (i, ev) in vars.iter().enumerate() {
        let p = index(path, i);
        let name = str_of(ev, "name");
        if name.is_empty() {
            out.push(required(&child(&p, "name"), ""));
        } else {
            for m in relaxed_env_var_name(name) {
                out.push(invalid_str(&child(&p, "name"), name, &m));
            }
        }
        env_value_from(ev, &child(&p, "valueFrom"), out);
    }
}

/// kube's `IsRelaxedEnvVarName`.
fn relaxed_env_var_name(s: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if s.is_empty() {
        errs.push("environment variable name must be non-empty".to_owned());
    }
    if s.chars().any(|c| !(' '..='~').contains(&c) || c == '=') {
        errs.push(
            "a valid environment variable name must consist only of printable ASCII characters other than '='"
                .to_owned(),
        );
    }
    errs
}

/// kube's `validateEnvVarValueFrom`.
fn env_value_from(ev: &Value, p: &str, out: &mut Vec<Cause>) {
    let Some(from) = set(ev, "valueFrom") else {
        return;
    };
    let mut count = 0;
    if let Some(f) = set(from, "fieldRef") {
        count += 1;
        object_field_selector(f, ENV_FIELD_PATHS, &child(p, "fieldRef"), out);
    }
    if let Some(r) = set(from, "resourceFieldRef") {
        count += 1;
        resource_field_selector(r, &child(p, "resourceFieldRef"), false, out);
    }
    for kind in ["configMapKeyRef", "secretKeyRef"] {
        if let Some(s) = set(from, kind) {
            count += 1;
            key_selector(s, &child(p, kind), out);
        }
    }
    if count == 0 {
        out.push(invalid_str(
            p,
            "",
            "must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef` or `secretKeyRef`",
        ));
    } else if !str_of(ev, "value").is_empty() {
        out.push(invalid_str(
            p,
            "",
            "may not be specified when `value` is not empty",
        ));
    } else if count > 1 {
        out.push(invalid_str(
            p,
            "",
            "may not have more than one field specified at a time",
        ));
    }
}

/// The env `fieldRef` paths kube knows (`validEnvDownwardAPIFieldPathExpressions`), sorted.
const ENV_FIELD_PATHS: &[&str] = &[
    "metadata.name",
    "metadata.namespace",
    "metadata.uid",
    "spec.nodeName",
    "spec.serviceAccountName",
    "status.hostIP",
    "status.hostIPs",
    "status.podIP",
    "status.podIPs",
];

/// The volume `fieldRef` paths kube knows (`validVolumeDownwardAPIFieldPathExpressions`).
const VOLUME_FIELD_PATHS: &[&str] = &[
    "metadata.annotations",
    "metadata.labels",
    "metadata.name",
    "metadata.namespace",
    "metadata.uid",
];

/// The `resourceFieldRef` resources (`validContainerResourceFieldPathExpressions`), sorted.
const RESOURCE_FIELD_PATHS: &[&str] = &[
    "limits.cpu",
    "limits.ephemeral-storage",
    "limits.memory",
    "requests.cpu",
    "requests.ephemeral-storage",
    "requests.memory",
];

/// kube's `validateObjectFieldSelector` (`apiVersion` is defaulted to `v1`).
fn object_field_selector(fs: &Value, paths: &[&str], p: &str, out: &mut Vec<Cause>) {
    let api_version = default_str(str_of(fs, "apiVersion"), "v1");
    let field_path = str_of(fs, "fieldPath");
    if field_path.is_empty() {
        out.push(required(&child(p, "fieldPath"), ""));
        return;
    }
    let internal = match convert_downward_api_field_label(api_version, field_path) {
        Ok(internal) => internal,
        Err(e) => {
            out.push(invalid_str(
                &child(p, "fieldPath"),
                field_path,
                &format!("error converting fieldPath: {e}"),
            ));
            return;
        }
    };
    if let Some((path, subscript)) = split_subscripted_path(internal) {
        match path {
            "metadata.annotations" => {
                let lower = subscript.to_lowercase();
                for m in qualified_name(&lower) {
                    out.push(invalid_str(p, &lower, &m));
                }
            }
            "metadata.labels" => {
                for m in qualified_name(subscript) {
                    out.push(invalid_str(p, subscript, &m));
                }
            }
            _ => out.push(invalid_str(p, path, "does not support subscript")),
        }
    } else if !paths.contains(&internal) {
        out.push(ns(&child(p, "fieldPath"), internal, paths));
    }
}

/// kube's `ConvertDownwardAPIFieldLabel` (pods).
fn convert_downward_api_field_label<'a>(version: &str, label: &'a str) -> Result<&'a str, String> {
    if version != "v1" {
        return Err(format!("unsupported pod version: {version}"));
    }
    if let Some((path, _)) = split_subscripted_path(label) {
        return match path {
            "metadata.annotations" | "metadata.labels" => Ok(label),
            _ => Err(format!("field label does not support subscript: {label}")),
        };
    }
    match label {
        "metadata.annotations"
        | "metadata.labels"
        | "metadata.name"
        | "metadata.namespace"
        | "metadata.uid"
        | "spec.nodeName"
        | "spec.restartPolicy"
        | "spec.serviceAccountName"
        | "spec.schedulerName"
        | "status.phase"
        | "status.hostIP"
        | "status.hostIPs"
        | "status.podIP"
        | "status.podIPs" => Ok(label),
        // Old v1 clients' name of `spec.nodeName`.
        "spec.host" => Ok("spec.nodeName"),
        _ => Err(format!("field label not supported: {label}")),
    }
}

/// kube's `fieldpath.SplitMaybeSubscriptedPath`: `metadata.labels['x']` is
/// (`metadata.labels`, `x`).
fn split_subscripted_path(s: &str) -> Option<(&str, &str)> {
    let inner = s.strip_suffix("']")?;
    let (path, subscript) = inner.split_once("['")?;
    (!path.is_empty()).then_some((path, subscript))
}

/// kube's `validateContainerResourceFieldSelector` (`volume`: a downward API volume's, which
/// needs a container name).
fn resource_field_selector(fs: &Value, p: &str, volume: bool, out: &mut Vec<Cause>) {
    let resource = str_of(fs, "resource");
    if volume && str_of(fs, "containerName").is_empty() {
        out.push(required(&child(p, "containerName"), ""));
    } else if resource.is_empty() {
        out.push(required(&child(p, "resource"), ""));
    } else if !RESOURCE_FIELD_PATHS.contains(&resource)
        && !resource.starts_with("limits.hugepages-")
        && !resource.starts_with("requests.hugepages-")
    {
        out.push(ns(&child(p, "resource"), resource, RESOURCE_FIELD_PATHS));
    }
    // kube's `validateContainerResourceDivisor`.
    let Some(divisor) = set(fs, "divisor").filter(|d| nano(d) != 0) else {
        return;
    };
    let d = canon(divisor);
    let sizes = [
        "1", "1k", "1M", "1G", "1T", "1P", "1E", "1Ki", "1Mi", "1Gi", "1Ti", "1Pi", "1Ei",
    ];
    let sizes_msg = "only divisor's values 1, 1k, 1M, 1G, 1T, 1P, 1E, 1Ki, 1Mi, 1Gi, 1Ti, 1Pi, 1Ei are supported with the";
    let dp = child(p, "divisor");
    match resource {
        "limits.cpu" | "requests.cpu" if d != "1m" && d != "1" => out.push(invalid_str(
            &dp,
            resource,
            "only divisor's values 1m and 1 are supported with the cpu resource",
        )),
        "limits.memory" | "requests.memory" if !sizes.contains(&d.as_str()) => out.push(
            invalid_str(&dp, resource, &format!("{sizes_msg} memory resource")),
        ),
        "limits.ephemeral-storage" | "requests.ephemeral-storage"
            if !sizes.contains(&d.as_str()) =>
        {
            out.push(invalid_str(
                &dp,
                resource,
                &format!("{sizes_msg} local ephemeral storage resource"),
            ))
        }
        _ => {}
    }
    if (resource.starts_with("requests.hugepages-") || resource.starts_with("limits.hugepages-"))
        && !sizes.contains(&d.as_str())
    {
        out.push(invalid_str(
            &dp,
            resource,
            &format!("{sizes_msg} hugepages resource"),
        ));
    }
}

/// kube's `validateConfigMapKeySelector` / `validateSecretKeySelector`.
fn key_selector(s: &Value, p: &str, out: &mut Vec<Cause>) {
    let name = str_of(s, "name");
    for m in dns1123_subdomain(name) {
        out.push(invalid_str(&child(p, "name"), name, &m));
    }
    let k = str_of(s, "key");
    if k.is_empty() {
        out.push(required(&child(p, "key"), ""));
    } else {
        for m in config_map_key(k) {
            out.push(invalid_str(&child(p, "key"), k, &m));
        }
    }
}

/// kube's `ValidateEnvFrom`.
fn env_from(list: &[Value], path: &str, out: &mut Vec<Cause>) {
    for (i, ev) in list.iter().enumerate() {
        let p = index(path, i);
        let prefix = str_of(ev, "prefix");
        if !prefix.is_empty() {
            for m in relaxed_env_var_name(prefix) {
                out.push(invalid_str(&child(&p, "prefix"), prefix, &m));
            }
        }
        let mut count = 0;
        for kind in ["configMapRef", "secretRef"] {
            let Some(r) = set(ev, kind) else {
                continue;
            };
            count += 1;
            let np = child(&child(&p, kind), "name");
            let name = str_of(r, "name");
            if name.is_empty() {
                out.push(required(&np, ""));
            } else {
                // A name that may get a suffix (kube's `prefix` names): a trailing dash is
                // masked as kube's `maskTrailingDash` does.
                let masked = match name.strip_suffix('-') {
                    Some(rest) if name.len() > 1 => {
                        format!(
                            "{}a",
                            rest.get(..rest.len().saturating_sub(1)).unwrap_or("")
                        )
                    }
                    _ => name.to_owned(),
                };
                for m in dns1123_subdomain(&masked) {
                    out.push(invalid_str(&np, name, &m));
                }
            }
        }
        // kube reports these at the list, not the entry.
        if count == 0 {
            out.push(invalid_str(
                path,
                "",
                "must specify one of: `configMapRef` or `secretRef`",
            ));
        } else if count > 1 {
            out.push(invalid_str(
                path,
                "",
                "may not have more than one field specified at a time",
            ));
        }
    }
}

/// kube's `ValidateVolumeMounts`.
fn volume_mounts(
    c: &Value,
    devices: &HashMap<&str, &str>,
    ctx: &Ctx,
    path: &str,
    out: &mut Vec<Cause>,
) {
    let device_paths: HashSet<&str> = devices.values().copied().collect();
    let privileged = c
        .pointer("/securityContext/privileged")
        .and_then(Value::as_bool)
        == Some(true);
    let mut mount_paths = HashSet::new();
    for (i, m) in items(c, "volumeMounts").iter().enumerate() {
        let p = index(path, i);
        let name = str_of(m, "name");
        let mount_path = str_of(m, "mountPath");
        if name.is_empty() {
            out.push(required(&child(&p, "name"), ""));
        }
        if !ctx.vols.contains_key(name) {
            out.push(not_found(&child(&p, "name"), name));
        }
        if mount_path.is_empty() {
            out.push(required(&child(&p, "mountPath"), ""));
        }
        if !mount_paths.insert(mount_path) {
            out.push(invalid_str(
                &child(&p, "mountPath"),
                mount_path,
                "must be unique",
            ));
        }
        if devices.contains_key(name) {
            out.push(invalid_str(
                &child(&p, "name"),
                name,
                "must not already exist in volumeDevices",
            ));
        }
        if device_paths.contains(mount_path) {
            out.push(invalid_str(
                &child(&p, "mountPath"),
                mount_path,
                "must not already exist as a path in volumeDevices",
            ));
        }
        let sub_path = str_of(m, "subPath");
        let sub_path_expr = str_of(m, "subPathExpr");
        if ctx
            .vols
            .get(name)
            .is_some_and(|v| set(v, "image").is_some())
        {
            if !sub_path.is_empty() {
                out.push(invalid_str(
                    &child(&p, "subPath"),
                    sub_path,
                    "not allowed in image volume sources",
                ));
            }
            if !sub_path_expr.is_empty() {
                out.push(invalid_str(
                    &child(&p, "subPathExpr"),
                    sub_path_expr,
                    "not allowed in image volume sources",
                ));
            }
        }
        // kube checks the paths of these three against the list's path, not the mount's.
        if !sub_path.is_empty() {
            local_descending_path(sub_path, &child(path, "subPath"), out);
        }
        if !sub_path_expr.is_empty() {
            if !sub_path.is_empty() {
                out.push(invalid_str(
                    &child(&p, "subPathExpr"),
                    sub_path_expr,
                    "subPathExpr and subPath are mutually exclusive",
                ));
            }
            local_descending_path(sub_path_expr, &child(path, "subPathExpr"), out);
        }
        let propagation = m.get("mountPropagation").and_then(Value::as_str);
        if let Some(prop) = propagation {
            let pp = child(path, "mountPropagation");
            let supported = ["Bidirectional", "HostToContainer", "None"];
            if !supported.contains(&prop) {
                out.push(ns(&pp, prop, &supported));
            }
            if prop == "Bidirectional" && !privileged {
                out.push(forbidden(
                    &pp,
                    "Bidirectional mount propagation is available only to privileged containers",
                ));
            }
        }
        if let Some(rro) = m.get("recursiveReadOnly").and_then(Value::as_str) {
            let rp = child(path, "recursiveReadOnly");
            match rro {
                "Disabled" => {}
                "Enabled" | "IfPossible" => {
                    if !flag(m, "readOnly") {
                        out.push(forbidden(
                            &rp,
                            "may only be specified when readOnly is true",
                        ));
                    }
                    if propagation.is_some_and(|p| p != "None") {
                        out.push(forbidden(
                            &rp,
                            "may only be specified when mountPropagation is None or not specified",
                        ));
                    }
                }
                _ => out.push(ns(&rp, rro, &["Disabled", "Enabled", "IfPossible"])),
            }
        }
    }
}

/// kube's `ValidateVolumeDevices`.
fn volume_devices(
    list: &[Value],
    mounts: &HashMap<&str, &str>,
    ctx: &Ctx,
    path: &str,
    out: &mut Vec<Cause>,
) {
    let mount_paths: HashSet<&str> = mounts.values().copied().collect();
    let mut paths = HashSet::new();
    let mut names = HashSet::new();
    for (i, d) in list.iter().enumerate() {
        let p = index(path, i);
        let name = str_of(d, "name");
        let device_path = str_of(d, "devicePath");
        let volume = ctx.vols.get(name);
        let is_claim = volume.is_some_and(|v| {
            set(v, "persistentVolumeClaim").is_some() || set(v, "ephemeral").is_some()
        });
        if name.is_empty() {
            out.push(required(&child(&p, "name"), ""));
        }
        if names.contains(name) {
            out.push(invalid_str(&child(&p, "name"), name, "must be unique"));
        }
        if volume.is_some() && !is_claim {
            out.push(invalid_str(
                &child(&p, "name"),
                name,
                "can only use volume source type of PersistentVolumeClaim or Ephemeral for block mode",
            ));
        }
        if volume.is_none() {
            out.push(not_found(&child(&p, "name"), name));
        }
        if device_path.is_empty() {
            out.push(required(&child(&p, "devicePath"), ""));
        }
        if paths.contains(device_path) {
            out.push(invalid_str(
                &child(&p, "devicePath"),
                device_path,
                "must be unique",
            ));
        }
        if !device_path.is_empty() && has_backsteps(device_path) {
            out.push(invalid_str(
                &child(&p, "devicePath"),
                device_path,
                "can not contain backsteps ('..')",
            ));
        } else {
            paths.insert(device_path);
        }
        if mounts.contains_key(name) {
            out.push(invalid_str(
                &child(&p, "name"),
                name,
                "must not already exist in volumeMounts",
            ));
        }
        if mount_paths.contains(device_path) {
            out.push(invalid_str(
                &child(&p, "devicePath"),
                device_path,
                "must not already exist as a path in volumeMounts",
            ));
        }
        if !name.is_empty() {
            names.insert(name);
        }
    }
}

/// kube's `validateResizePolicy`.
fn resize_policy(list: &[Value], p: &str, restart: &str, out: &mut Vec<Cause>) {
    let mut seen = HashSet::new();
    for (i, rp) in list.iter().enumerate() {
        let name = str_of(rp, "resourceName");
        if !seen.insert(name) {
            out.push(duplicate(&index(p, i), &Value::from(name)));
        }
        match name {
            "cpu" | "memory" => {}
            "" => out.push(required(p, "")),
            _ => out.push(ns(p, name, &["cpu", "memory"])),
        }
        let policy = str_of(rp, "restartPolicy");
        match policy {
            "NotRequired" | "RestartContainer" => {}
            "" => out.push(required(p, "")),
            _ => out.push(ns(p, policy, &["NotRequired", "RestartContainer"])),
        }
        if restart == "Never" && policy != "NotRequired" {
            out.push(invalid_str(
                p,
                policy,
                "must be 'NotRequired' when `restartPolicy` is 'Never'",
            ));
        }
    }
}

// ---- probes and lifecycle handlers ----

/// The lifecycle and probes of a regular container or sidecar (kube's `validateLifecycle`,
/// `validateLivenessProbe`, `validateReadinessProbe`, `validateStartupProbe`).
fn lifecycle_and_probes(c: &Value, p: &str, ctx: &Ctx, out: &mut Vec<Cause>) {
    if let Some(l) = set(c, "lifecycle") {
        let lp = child(p, "lifecycle");
        for hook in ["postStart", "preStop"] {
            if let Some(h) = set(l, hook) {
                handler(h, true, ctx.grace, &child(&lp, hook), out);
            }
        }
    }
    for kind in ["livenessProbe", "readinessProbe", "startupProbe"] {
        let Some(pr) = set(c, kind) else {
            continue;
        };
        let pp = child(p, kind);
        probe(pr, ctx.grace, &pp, out);
        if kind == "readinessProbe" {
            if let Some(t) = set(pr, "terminationGracePeriodSeconds") {
                out.push(invalid(
                    &child(&pp, "terminationGracePeriodSeconds"),
                    t,
                    "must not be set for readinessProbes",
                ));
            }
        } else {
            // Defaulted to 1 when 0.
            let threshold = int(pr, "successThreshold").filter(|n| *n != 0).unwrap_or(1);
            if threshold != 1 {
                out.push(inv(&child(&pp, "successThreshold"), threshold, "must be 1"));
            }
        }
    }
}

/// kube's `validateProbe` (the thresholds are defaulted when 0, so only negatives fail).
fn probe(pr: &Value, grace: Option<i64>, p: &str, out: &mut Vec<Cause>) {
    handler(pr, false, grace, p, out);
    for field in [
        "initialDelaySeconds",
        "timeoutSeconds",
        "periodSeconds",
        "successThreshold",
        "failureThreshold",
    ] {
        if let Some(n) = int(pr, field).filter(|n| *n < 0) {
            out.push(inv(&child(p, field), n, NEGATIVE));
        }
    }
    if let Some(t) = int(pr, "terminationGracePeriodSeconds").filter(|t| *t <= 0) {
        out.push(inv(
            &child(p, "terminationGracePeriodSeconds"),
            t,
            "must be greater than 0",
        ));
    }
}

/// kube's `validateHandler`: exactly one action (a probe's may be `grpc`, a lifecycle hook's
/// `sleep`).
fn handler(h: &Value, lifecycle: bool, grace: Option<i64>, p: &str, out: &mut Vec<Cause>) {
    let kinds: &[&str] = if lifecycle {
        &["exec", "httpGet", "tcpSocket", "sleep"]
    } else {
        &["exec", "httpGet", "tcpSocket", "grpc"]
    };
    let mut count = 0;
    for &kind in kinds {
        let Some(action) = set(h, kind) else {
            continue;
        };
        let ap = child(p, kind);
        if count > 0 {
            out.push(forbidden(&ap, ONE_HANDLER_TYPE));
            continue;
        }
        count += 1;
        match kind {
            "exec" if items(action, "command").is_empty() => {
                out.push(required(&child(&ap, "command"), ""));
            }
            "httpGet" => {
                // `path` is defaulted to `/`, `scheme` to `HTTP`.
                port_num_or_name(action.get("port"), &child(&ap, "port"), out);
                let scheme = str_of(action, "scheme");
                if !scheme.is_empty() && scheme != "HTTP" && scheme != "HTTPS" {
                    out.push(ns(&child(&ap, "scheme"), scheme, &["HTTP", "HTTPS"]));
                }
                for header in items(action, "httpHeaders") {
                    let name = str_of(header, "name");
                    let valid = !name.is_empty()
                        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-');
                    if !valid {
                        out.push(invalid_str(
                            &child(&ap, "httpHeaders"),
                            name,
                            "a valid HTTP header must consist of alphanumeric characters or '-' (e.g. 'X-Header-Name', regex used for validation is '[-A-Za-z0-9]+')",
                        ));
                    }
                }
            }
            "tcpSocket" => port_num_or_name(action.get("port"), &child(&ap, "port"), out),
            "grpc" => {
                let port = int(action, "port").unwrap_or(0);
                if !(1..=65535).contains(&port) {
                    out.push(inv(&child(&ap, "port"), port, PORT_RANGE));
                }
            }
            "sleep" => {
                // `PodLifecycleSleepActionAllowZero` is on in 1.34.
                let seconds = int(action, "seconds").unwrap_or(0);
                if let Some(g) = grace.filter(|g| !(0..=*g).contains(&seconds)) {
                    out.push(inv(
                        &ap,
                        seconds,
                        &format!(
                            "must be non-negative and less than terminationGracePeriodSeconds ({g})"
                        ),
                    ));
                }
            }
            _ => {}
        }
    }
    if count == 0 {
        out.push(required(p, "must specify a handler type"));
    }
}

/// kube's `ValidatePortNumOrName` of an int-or-string port (absent is the int 0).
fn port_num_or_name(port: Option<&Value>, p: &str, out: &mut Vec<Cause>) {
    match port {
        Some(Value::String(s)) => {
            for m in port_name(s) {
                out.push(invalid_str(p, s, &m));
            }
        }
        other => {
            let n = other.and_then(Value::as_i64).unwrap_or(0);
            if !(1..=65535).contains(&n) {
                out.push(inv(p, n, PORT_RANGE));
            }
        }
    }
}

// ---- resources ----

/// Which resource names a requirement takes: a container's or the pod's (`spec.resources`).
#[derive(Clone, Copy, PartialEq, Eq)]
enum NameKind {
    Container,
    Pod,
}

/// kube's `validateResourceRequirements` (`ValidateContainerResourceRequirements`,
/// `validatePodResourceRequirements`): names, quantities, requests within limits, limits for the
/// resources that cannot be overcommitted, and the claims.
fn resource_requirements(
    req: Option<&Value>,
    kind: NameKind,
    claims: &[&str],
    path: &str,
    opts: &PodOpts,
    out: &mut Vec<Cause>,
) {
    let lim_path = child(path, "limits");
    let req_path = child(path, "requests");
    let map = |which: &str| req.and_then(|r| r.get(which)).and_then(Value::as_object);
    let (limits, requests) = (map("limits"), map("requests"));
    let (mut lim_cpu_mem, mut req_cpu_mem, mut lim_huge, mut req_huge) =
        (false, false, false, false);
    for (name, q) in limits.into_iter().flatten() {
        let p = key(&lim_path, name);
        resource_name(kind, name, &p, out);
        quantity_value(name, q, &p, out);
        if name.starts_with("hugepages-") {
            lim_huge = true;
            huge_page_value(name, q, opts, &p, out);
        }
        lim_cpu_mem |= name == "cpu" || name == "memory";
    }
    for (name, q) in requests.into_iter().flatten() {
        let p = key(&req_path, name);
        resource_name(kind, name, &p, out);
        quantity_value(name, q, &p, out);
        match limits.and_then(|l| l.get(name)) {
            Some(l) => {
                let (qn, ln) = (nano(q), nano(l));
                if qn != ln && !overcommit_allowed(name) {
                    out.push(invalid_str(
                        &req_path,
                        &canon(q),
                        &format!("must be equal to {name} limit of {}", canon(l)),
                    ));
                } else if qn > ln {
                    out.push(invalid_str(
                        &req_path,
                        &canon(q),
                        &format!("must be less than or equal to {name} limit of {}", canon(l)),
                    ));
                }
            }
            None if !overcommit_allowed(name) => out.push(required(
                &lim_path,
                "Limit must be set for non overcommitable resources",
            )),
            None => {}
        }
        if name.starts_with("hugepages-") {
            req_huge = true;
            huge_page_value(name, q, opts, &p, out);
        }
        req_cpu_mem |= name == "cpu" || name == "memory";
    }
    if !lim_cpu_mem && !req_cpu_mem && (req_huge || lim_huge) {
        out.push(forbidden(path, "HugePages require cpu or memory"));
    }
    let claim_refs = req.map_or(&[][..], |r| items(r, "claims"));
    resource_claim_names(claim_refs, claims, &child(path, "claims"), out);
}

/// kube's `validateResourceClaimNames`: each claim a name of `spec.resourceClaims`, once.
fn resource_claim_names(list: &[Value], pod_claims: &[&str], path: &str, out: &mut Vec<Cause>) {
    // Sets, not kube's slices: a long hostile list costs linear time, not quadratic.
    let mut names: HashSet<String> = HashSet::new();
    // How many `name/request` keys each claim name has had.
    let mut requested: HashMap<String, usize> = HashMap::new();
    let known: HashSet<&str> = pod_claims.iter().copied().collect();
    let mut detail: Option<String> = None;
    for (i, c) in list.iter().enumerate() {
        let p = index(path, i);
        let name = str_of(c, "name");
        if name.is_empty() {
            out.push(required(&p, ""));
            continue;
        }
        if names.contains(name) {
            out.push(duplicate(&p, &Value::from(name)));
        } else {
            let request = str_of(c, "request");
            let mut k = name.to_owned();
            if !request.is_empty() {
                dns_label(request, &child(&p, "request"), out);
                k = format!("{name}/{request}");
            }
            if names.contains(&k) {
                out.push(duplicate(&p, &Value::from(k.clone())));
            } else if request.is_empty() {
                for _ in 0..requested.get(name).copied().unwrap_or(0) {
                    out.push(duplicate(&p, &Value::from(name)));
                }
            }
            if !request.is_empty() {
                *requested.entry(name.to_owned()).or_default() += 1;
            }
            names.insert(k);
        }
        if !known.contains(name) {
            let detail = detail.get_or_insert_with(|| {
                let mut sorted: Vec<&str> = known.iter().copied().collect();
                sorted.sort_unstable();
                if sorted.is_empty() {
                    " which is empty".to_owned()
                } else {
                    format!(": {}", sorted.join(", "))
                }
            });
            out.push(Cause::new(
                "FieldValueNotFound",
                &p,
                format!(
                    "Not found: {}: must be one of the names in pod.spec.resourceClaims{detail}",
                    quoted(name)
                ),
            ));
        }
    }
}

/// kube's `validateContainerResourceName` / `validatePodResourceName`.
fn resource_name(kind: NameKind, name: &str, p: &str, out: &mut Vec<Cause>) {
    // kube's `validateResourceName`.
    let mut errs: Vec<Cause> = qualified_name(name)
        .iter()
        .map(|m| invalid_str(p, name, m))
        .collect();
    if errs.is_empty() && !name.contains('/') && !standard_resource(name) {
        errs.push(invalid_str(
            p,
            name,
            "must be a standard resource type or fully qualified",
        ));
    }
    match kind {
        NameKind::Pod => {
            if errs.is_empty()
                && !matches!(name, "cpu" | "memory")
                && !name.starts_with("hugepages-")
            {
                errs.push(ns(p, name, &["cpu", "memory"]));
            }
        }
        NameKind::Container => {
            if !name.contains('/') {
                let container = matches!(name, "cpu" | "memory" | "ephemeral-storage")
                    || name.starts_with("hugepages-");
                if !container {
                    errs.push(invalid_str(
                        p,
                        name,
                        "must be a standard resource for containers",
                    ));
                }
            } else if !native_resource(name) && !extended_resource(name) {
                errs.push(invalid_str(
                    p,
                    name,
                    "doesn't follow extended resource name standard",
                ));
            }
        }
    }
    out.extend(errs);
}

/// kube's `helper.IsStandardResourceName`.
fn standard_resource(name: &str) -> bool {
    const STANDARD: &[&str] = &[
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
    STANDARD.contains(&name)
        || name.starts_with("hugepages-")
        || name.starts_with("requests.hugepages-")
}

/// kube's `helper.IsNativeResource`: unprefixed or in `kubernetes.io/`.
fn native_resource(name: &str) -> bool {
    !name.contains('/') || name.contains("kubernetes.io/")
}

/// kube's `helper.IsExtendedResourceName`.
fn extended_resource(name: &str) -> bool {
    !native_resource(name)
        && !name.starts_with("requests.")
        && qualified_name(&format!("requests.{name}")).is_empty()
}

/// kube's `helper.IsOvercommitAllowed`.
fn overcommit_allowed(name: &str) -> bool {
    native_resource(name) && !name.starts_with("hugepages-")
}

/// kube's `ValidateResourceQuantityValue`: not negative, whole for counted resources.
fn quantity_value(name: &str, q: &Value, p: &str, out: &mut Vec<Cause>) {
    let n = nano(q);
    if n < 0 {
        out.push(invalid_str(p, &canon(q), NEGATIVE));
    }
    const INTEGER: &[&str] = &[
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
    if INTEGER.contains(&name) || extended_resource(name) {
        // `MilliValue` rounds up.
        let milli = n.div_euclid(1_000_000) + i128::from(n.rem_euclid(1_000_000) != 0);
        if milli % 1000 != 0 {
            out.push(invalid_str(p, &canon(q), "must be an integer"));
        }
    }
}

/// kube's `validateResourceQuantityHugePageValue`: a whole number of pages.
fn huge_page_value(name: &str, q: &Value, opts: &PodOpts, p: &str, out: &mut Vec<Cause>) {
    if opts.allow_indivisible_huge_pages_values || huge_pages_divisible(name, q) {
        return;
    }
    let shown = canon(q);
    out.push(invalid_str(
        p,
        &shown,
        &format!("{shown} is not positive integer multiple of {name}"),
    ));
}

/// kube's `helper.IsHugePageResourceValueDivisible`.
fn huge_pages_divisible(name: &str, q: &Value) -> bool {
    const NANO: i128 = 1_000_000_000;
    let Some(size) = name
        .strip_prefix("hugepages-")
        .and_then(|s| crate::builtin::quantity::nano_value(s).ok())
        .map(|(n, _)| n)
    else {
        return false;
    };
    if size <= 0 || size % NANO != 0 {
        return false;
    }
    // `Value` rounds up.
    let n = nano(q);
    let value = n.div_euclid(NANO) + i128::from(n.rem_euclid(NANO) != 0);
    value % (size / NANO) == 0
}

/// kube's `validatePodResources` (`PodLevelResources`, beta and on in 1.34): `spec.resources`.
fn pod_resources(spec: &Value, res: &Value, p: &str, ctx: &Ctx, out: &mut Vec<Cause>) {
    if set(res, "claims").is_some() {
        out.push(forbidden(
            &child(p, "claims"),
            "claims cannot be set for Resources at pod-level",
        ));
    }
    resource_requirements(Some(res), NameKind::Pod, &ctx.claims, p, ctx.opts, out);
    // kube's `validatePodResourceConsistency`: the pod's requests at least what its containers
    // request together (`AggregateContainerRequests`), no container's limit above the pod's.
    let pod_requests = res.get("requests").and_then(Value::as_object);
    let binary = binary_quantities(spec);
    for (name, total) in aggregate_container_requests(spec) {
        // A resource the pod does not request is not compared.
        let Some(pod_request) = pod_requests.and_then(|r| r.get(&name)) else {
            continue;
        };
        if total > nano(pod_request) {
            out.push(invalid_str(
                &key(&child(p, "requests"), &name),
                &canon(pod_request),
                &format!(
                    "must be greater than or equal to aggregate container requests of {}",
                    crate::builtin::quantity::from_nano(total, binary.contains(name.as_str()))
                ),
            ));
        }
    }
    let pod_limits = res.get("limits").and_then(Value::as_object);
    for (i, c) in items(spec, "containers").iter().enumerate() {
        let limits = c.pointer("/resources/limits").and_then(Value::as_object);
        for (name, limit) in limits.into_iter().flatten() {
            let Some(pod_limit) = pod_limits.and_then(|l| l.get(name)) else {
                continue;
            };
            if nano(limit) > nano(pod_limit) {
                // kube's path: `<resources>.containers[i][name].limits`.
                out.push(invalid_str(
                    &child(&key(&index(&child(p, "containers"), i), name), "limits"),
                    &canon(limit),
                    &format!(
                        "must be less than or equal to pod limits of {}",
                        canon(pod_limit)
                    ),
                ));
            }
        }
    }
}

/// The resources the containers request with a binary suffix (how their sum prints).
fn binary_quantities(spec: &Value) -> HashSet<&str> {
    let mut out = HashSet::new();
    for f in ["containers", "initContainers"] {
        for c in items(spec, f) {
            let requests = c.pointer("/resources/requests").and_then(Value::as_object);
            for (name, q) in requests.into_iter().flatten() {
                let binary =
                    crate::builtin::quantity::nano_value(&qstr(q)).is_ok_and(|(_, binary)| binary);
                if binary {
                    out.insert(name.as_str());
                }
            }
        }
    }
    out
}

/// kube's `AggregateContainerRequests`: the regular containers and sidecars together, or the
/// largest init container (with the sidecars started before it), whichever is more.
fn aggregate_container_requests(spec: &Value) -> BTreeMap<String, i128> {
    fn requests(c: &Value) -> BTreeMap<String, i128> {
        c.pointer("/resources/requests")
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
            .map(|(k, q)| (k.clone(), nano(q)))
            .collect()
    }
    fn add(to: &mut BTreeMap<String, i128>, from: &BTreeMap<String, i128>) {
        for (k, v) in from {
            let e = to.entry(k.clone()).or_insert(0);
            *e = e.saturating_add(*v);
        }
    }
    fn max(to: &mut BTreeMap<String, i128>, from: &BTreeMap<String, i128>) {
        for (k, v) in from {
            let e = to.entry(k.clone()).or_insert(*v);
            if *v > *e {
                *e = *v;
            }
        }
    }
    let mut total = BTreeMap::new();
    for c in items(spec, "containers") {
        add(&mut total, &requests(c));
    }
    let mut sidecars = BTreeMap::new();
    let mut init = BTreeMap::new();
    for c in items(spec, "initContainers") {
        let own = requests(c);
        let at_start = if str_of(c, "restartPolicy") == "Always" {
            add(&mut total, &own);
            add(&mut sidecars, &own);
            sidecars.clone()
        } else {
            let mut sum = own;
            add(&mut sum, &sidecars);
            sum
        };
        max(&mut init, &at_start);
    }
    max(&mut total, &init);
    total
}

// ---- security contexts ----

/// kube's `validatePodSpecSecurityContext` (kube keeps `hostPID`, `hostIPC`, `hostNetwork` and
/// `shareProcessNamespace` in its internal pod security context; the paths are the v1 ones).
fn pod_security_context(spec: &Value, path: &str, opts: &PodOpts, out: &mut Vec<Cause>) {
    let sc = spec.get("securityContext").unwrap_or(&Value::Null);
    let p = child(path, "securityContext");
    for field in ["fsGroup", "runAsUser", "runAsGroup"] {
        if let Some(id) = int(sc, field).filter(|id| !valid_id(*id)) {
            out.push(inv(&child(&p, field), id, ID_RANGE));
        }
    }
    for (g, gid) in items(sc, "supplementalGroups").iter().enumerate() {
        let gid = gid.as_i64().unwrap_or(0);
        if !valid_id(gid) {
            out.push(inv(
                &index(&child(&p, "supplementalGroups"), g),
                gid,
                ID_RANGE,
            ));
        }
    }
    if spec.get("shareProcessNamespace").and_then(Value::as_bool) == Some(true)
        && flag(spec, "hostPID")
    {
        out.push(invalid(
            &child(&p, "shareProcessNamespace"),
            &Value::Bool(true),
            "ShareProcessNamespace and HostPID cannot both be enabled",
        ));
    }
    let sysctls = items(sc, "sysctls");
    let mut names = HashSet::new();
    for (i, s) in sysctls.iter().enumerate() {
        let np = child(&index(&child(&p, "sysctls"), i), "name");
        let name = str_of(s, "name");
        if name.is_empty() {
            out.push(required(&np, ""));
        } else if !valid_sysctl_name(name) {
            out.push(invalid_str(
                &np,
                name,
                r"must have at most 253 characters and match regex ^([a-z0-9]([-_a-z0-9]*[a-z0-9])?[\./])*[a-z0-9]([-_a-z0-9]*[a-z0-9])?$",
            ));
        } else if names.contains(name) {
            out.push(duplicate(&np, &Value::from(name)));
        }
        if !opts.allow_namespaced_sysctls_for_host_net_and_host_ipc {
            if let Some(msg) = host_sysctl_conflict(name, spec) {
                out.push(invalid_str(&np, name, msg));
            }
        }
        names.insert(name);
    }
    one_of(
        sc,
        "fsGroupChangePolicy",
        &["Always", "OnRootMismatch"],
        &p,
        out,
    );
    seccomp_profile(set(sc, "seccompProfile"), &child(&p, "seccompProfile"), out);
    windows_options(set(sc, "windowsOptions"), &child(&p, "windowsOptions"), out);
    app_armor_profile(
        set(sc, "appArmorProfile"),
        &child(&p, "appArmorProfile"),
        out,
    );
    one_of(
        sc,
        "supplementalGroupsPolicy",
        &["Merge", "Strict"],
        &p,
        out,
    );
    one_of(
        sc,
        "seLinuxChangePolicy",
        &["MountOption", "Recursive"],
        &p,
        out,
    );
}

/// An enumerated string field, when set, one of `supported`.
fn one_of(v: &Value, field: &str, supported: &[&str], path: &str, out: &mut Vec<Cause>) {
    if let Some(s) = v.get(field).and_then(Value::as_str) {
        if !supported.contains(&s) {
            out.push(ns(&child(path, field), s, supported));
        }
    }
}

/// `IsValidUserID` / `IsValidGroupID`.
fn valid_id(id: i64) -> bool {
    (0..=i64::from(i32::MAX)).contains(&id)
}

/// kube's `IsValidSysctlName`.
fn valid_sysctl_name(name: &str) -> bool {
    static SYSCTL: OnceLock<Option<Regex>> = OnceLock::new();
    name.len() <= 253
        && matches(
            &SYSCTL,
            r"^([a-z0-9]([-_a-z0-9]*[a-z0-9])?[\./])*[a-z0-9]([-_a-z0-9]*[a-z0-9])?$",
            name,
        )
}

/// kube's `ValidateHostSysctl`: a namespaced sysctl of a namespace the Pod shares with the host.
fn host_sysctl_conflict(name: &str, spec: &Value) -> Option<&'static str> {
    // kube's `utilsysctl.NormalizeName`: `net/ipv4/ip_forward` is `net.ipv4.ip_forward`.
    let normalized: String = match name.find(['.', '/']) {
        Some(i) if name.as_bytes().get(i) == Some(&b'/') => name
            .chars()
            .map(|c| match c {
                '.' => '/',
                '/' => '.',
                c => c,
            })
            .collect(),
        _ => name.to_owned(),
    };
    let ipc = [
        "kernel.sem",
        "kernel.shmall",
        "kernel.shmmax",
        "kernel.shmmni",
        "kernel.shm_rmid_forced",
        "kernel.msgmax",
        "kernel.msgmnb",
        "kernel.msgmni",
    ]
    .contains(&normalized.as_str())
        || normalized.starts_with("fs.mqueue.");
    if flag(spec, "hostNetwork") && normalized.starts_with("net.") {
        Some("may not be specified when 'hostNetwork' is true")
    } else if flag(spec, "hostIPC") && ipc {
        Some("may not be specified when 'hostIPC' is true")
    } else {
        None
    }
}

/// kube's `ValidateSecurityContext` of a container. kube refuses `privileged` only when the
/// API server runs without `--allow-privileged`; clusters run with it, and so does turtles.
fn security_context(sc: &Value, p: &str, host_users: bool, out: &mut Vec<Cause>) {
    for field in ["runAsUser", "runAsGroup"] {
        if let Some(id) = int(sc, field).filter(|id| !valid_id(*id)) {
            out.push(inv(&child(p, field), id, ID_RANGE));
        }
    }
    if let Some(pm) = sc.get("procMount").and_then(Value::as_str) {
        if pm != "Default" && pm != "Unmasked" {
            out.push(ns(&child(p, "procMount"), pm, &["Default", "Unmasked"]));
        }
        if host_users && pm == "Unmasked" {
            out.push(invalid_str(
                &child(p, "procMount"),
                pm,
                "`hostUsers` must be false to use `Unmasked`",
            ));
        }
    }
    seccomp_profile(set(sc, "seccompProfile"), &child(p, "seccompProfile"), out);
    if sc.get("allowPrivilegeEscalation").and_then(Value::as_bool) == Some(false) {
        if sc.get("privileged").and_then(Value::as_bool) == Some(true) {
            out.push(invalid_raw(
                p,
                &go_struct(Some(sc), SECURITY_CONTEXT),
                "cannot set `allowPrivilegeEscalation` to false and `privileged` to true",
            ));
        }
        // kube reports each CAP_SYS_ADMIN entry with the same message; one cause says it (a
        // long list repeating it would otherwise repeat the whole context per entry).
        let adds = sc.pointer("/capabilities/add").and_then(Value::as_array);
        if adds
            .into_iter()
            .flatten()
            .any(|cap| cap.as_str() == Some("CAP_SYS_ADMIN"))
        {
            out.push(invalid_raw(
                p,
                &go_struct(Some(sc), SECURITY_CONTEXT),
                "cannot set `allowPrivilegeEscalation` to false and `capabilities.Add` CAP_SYS_ADMIN",
            ));
        }
    }
    windows_options(set(sc, "windowsOptions"), &child(p, "windowsOptions"), out);
    app_armor_profile(
        set(sc, "appArmorProfile"),
        &child(p, "appArmorProfile"),
        out,
    );
}

/// kube's internal `SecurityContext`, which it prints whole in two errors: (Go name, v1 name).
const SECURITY_CONTEXT: &[GoField<'static>] = &[
    (
        "Capabilities",
        "capabilities",
        Go::Ptr(&[("Add", "add", Go::Nil), ("Drop", "drop", Go::Nil)]),
    ),
    ("Privileged", "privileged", Go::Nil),
    (
        "SELinuxOptions",
        "seLinuxOptions",
        Go::Ptr(&[
            ("User", "user", Go::Str),
            ("Role", "role", Go::Str),
            ("Type", "type", Go::Str),
            ("Level", "level", Go::Str),
        ]),
    ),
    (
        "WindowsOptions",
        "windowsOptions",
        Go::Ptr(&[
            ("GMSACredentialSpecName", "gmsaCredentialSpecName", Go::Nil),
            ("GMSACredentialSpec", "gmsaCredentialSpec", Go::Nil),
            ("RunAsUserName", "runAsUserName", Go::Nil),
            ("HostProcess", "hostProcess", Go::Nil),
        ]),
    ),
    ("RunAsUser", "runAsUser", Go::Nil),
    ("RunAsGroup", "runAsGroup", Go::Nil),
    ("RunAsNonRoot", "runAsNonRoot", Go::Nil),
    ("ReadOnlyRootFilesystem", "readOnlyRootFilesystem", Go::Nil),
    (
        "AllowPrivilegeEscalation",
        "allowPrivilegeEscalation",
        Go::Nil,
    ),
    ("ProcMount", "procMount", Go::Nil),
    (
        "SeccompProfile",
        "seccompProfile",
        Go::Ptr(&[
            ("Type", "type", Go::Str),
            ("LocalhostProfile", "localhostProfile", Go::Nil),
        ]),
    ),
    (
        "AppArmorProfile",
        "appArmorProfile",
        Go::Ptr(&[
            ("Type", "type", Go::Str),
            ("LocalhostProfile", "localhostProfile", Go::Nil),
        ]),
    ),
];

/// The JSON Go's `json.Marshal` makes of kube's internal (untagged) struct for `v` (a pointer:
/// `null` when unset).
fn go_struct(v: Option<&Value>, fields: &[GoField<'_>]) -> String {
    match v.filter(|v| !v.is_null()) {
        None => "null".to_owned(),
        Some(v) => go_value(&super::field::go_struct(Some(v), fields)),
    }
}

/// kube's `validateSeccompProfileField`.
fn seccomp_profile(sp: Option<&Value>, p: &str, out: &mut Vec<Cause>) {
    let Some(sp) = sp else {
        return;
    };
    let t = str_of(sp, "type");
    let supported = ["Localhost", "RuntimeDefault", "Unconfined"];
    if t.is_empty() {
        out.push(required(
            &child(p, "type"),
            "type is required when seccompProfile is set",
        ));
    } else if !supported.contains(&t) {
        out.push(ns(&child(p, "type"), t, &supported));
    }
    let lp = child(p, "localhostProfile");
    match sp.get("localhostProfile").and_then(Value::as_str) {
        None if t == "Localhost" => {
            out.push(required(&lp, "must be set when seccomp type is Localhost"))
        }
        Some(profile) if t == "Localhost" => local_descending_path(profile, &lp, out),
        Some(_) => out.push(invalid_raw(
            &lp,
            &go_struct(
                Some(sp),
                &[
                    ("Type", "type", Go::Str),
                    ("LocalhostProfile", "localhostProfile", Go::Nil),
                ],
            ),
            "can only be set when seccomp type is Localhost",
        )),
        None => {}
    }
}

/// kube's `ValidateAppArmorProfileField`.
fn app_armor_profile(profile: Option<&Value>, p: &str, out: &mut Vec<Cause>) {
    let Some(profile) = profile else {
        return;
    };
    let lp = child(p, "localhostProfile");
    let local = profile.get("localhostProfile").and_then(Value::as_str);
    match str_of(profile, "type") {
        "Localhost" => match local {
            None => out.push(required(&lp, "must be set when AppArmor type is Localhost")),
            Some(l) => {
                if l.trim() != l {
                    out.push(invalid_str(&lp, l, "must not be padded with whitespace"));
                } else if l.is_empty() {
                    out.push(required(&lp, "must be set when AppArmor type is Localhost"));
                }
                if l.len() > 4095 {
                    out.push(too_long(&lp, 4095));
                }
            }
        },
        "RuntimeDefault" | "Unconfined" => {
            if let Some(l) = local {
                out.push(invalid_str(
                    &lp,
                    l,
                    "can only be set when AppArmor type is Localhost",
                ));
            }
        }
        "" => out.push(required(
            &child(p, "type"),
            "type is required when appArmorProfile is set",
        )),
        t => out.push(ns(
            &child(p, "type"),
            t,
            &["Localhost", "RuntimeDefault", "Unconfined"],
        )),
    }
}

/// kube's `validateWindowsSecurityContextOptions`.
fn windows_options(w: Option<&Value>, p: &str, out: &mut Vec<Cause>) {
    let Some(w) = w else {
        return;
    };
    if let Some(name) = w.get("gmsaCredentialSpecName").and_then(Value::as_str) {
        for m in dns1123_subdomain(name) {
            out.push(invalid_str(&child(p, "gmsaCredentialSpecName"), name, &m));
        }
    }
    if let Some(spec) = w.get("gmsaCredentialSpec").and_then(Value::as_str) {
        let sp = child(p, "gmsaCredentialSpec");
        if spec.is_empty() {
            out.push(invalid_str(
                &sp,
                spec,
                "gmsaCredentialSpec cannot be an empty string",
            ));
        } else if spec.len() > 64 * 1024 {
            out.push(invalid_str(
                &sp,
                spec,
                "gmsaCredentialSpec size must be under 64 KiB",
            ));
        }
    }
    let Some(user) = w.get("runAsUserName").and_then(Value::as_str) else {
        return;
    };
    let up = child(p, "runAsUserName");
    let mut fail = |msg: &str| out.push(invalid_str(&up, user, msg));
    if user.is_empty() {
        fail("runAsUserName cannot be an empty string");
        return;
    }
    if user.chars().any(|c| c.is_ascii_control()) {
        fail("runAsUserName cannot contain control characters");
        return;
    }
    let parts: Vec<&str> = user.split('\\').collect();
    let (domain, name) = match parts.as_slice() {
        [name] => (None, *name),
        [domain, name] => (Some(*domain), *name),
        _ => {
            fail("runAsUserName cannot contain more than one backslash");
            return;
        }
    };
    static NETBIOS: OnceLock<Option<Regex>> = OnceLock::new();
    static DNS: OnceLock<Option<Regex>> = OnceLock::new();
    static BAD_CHARS: OnceLock<Option<Regex>> = OnceLock::new();
    static DOTS_SPACES: OnceLock<Option<Regex>> = OnceLock::new();
    if domain.unwrap_or("").len() >= 256 {
        fail("runAsUserName's Domain length must be under 256 characters");
    }
    if let Some(d) = domain {
        let netbios = matches(&NETBIOS, r#"^[^\\/:\*\?"<>|\.][^\\/:\*\?"<>|]{0,14}$"#, d);
        let dns = matches(
            &DNS,
            r"^[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?(?:\.[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?)*$",
            d,
        );
        if !netbios && !dns {
            fail("runAsUserName's Domain doesn't match the NetBios nor the DNS format");
        }
    }
    if name.is_empty() {
        fail("runAsUserName's User cannot be empty");
    } else if name.len() > 104 {
        fail("runAsUserName's User length must not be longer than 104 characters");
    }
    if matches(&DOTS_SPACES, r"^[\. ]+$", name) {
        fail("runAsUserName's User cannot contain only periods or spaces");
    }
    if matches(&BAD_CHARS, r#"["/\\:;|=,\+\*\?<>@\[\]]"#, name) {
        fail(r#"runAsUserName's User cannot contain the following characters: "/\:;|=,+*?<>@[]"#);
    }
}

/// kube's `validateWindowsHostProcessPod`.
fn windows_host_process(spec: &Value, path: &str, out: &mut Vec<Cause>) {
    let pod = spec
        .pointer("/securityContext/windowsOptions/hostProcess")
        .and_then(Value::as_bool);
    let (mut all, mut host_process) = (0, 0);
    for field in ["initContainers", "containers", "ephemeralContainers"] {
        for (i, c) in items(spec, field).iter().enumerate() {
            all += 1;
            let own = c
                .pointer("/securityContext/windowsOptions/hostProcess")
                .and_then(Value::as_bool);
            if let (Some(p), Some(o)) = (pod, own) {
                if p != o {
                    let cp = index(&child(path, field), i);
                    out.push(invalid(
                        &format!("{cp}.securityContext.windowsOptions.hostProcess"),
                        &Value::Bool(o),
                        &format!("pod hostProcess value must be identical if both are specified, was {p}"),
                    ));
                }
            }
            if own == Some(true) || (own.is_none() && pod == Some(true)) {
                host_process += 1;
            }
        }
    }
    if host_process > 0 {
        if host_process != all {
            out.push(invalid_str(
                path,
                "",
                "If pod contains any hostProcess containers then all containers must be HostProcess containers",
            ));
        }
        if !flag(spec, "hostNetwork") {
            out.push(invalid(
                &child(path, "hostNetwork"),
                &Value::Bool(false),
                "hostNetwork must be true if pod contains any hostProcess containers",
            ));
        }
    }
}

/// Every container of the spec, kube's `VisitContainersWithPath` order, with its path.
fn all_containers<'a>(spec: &'a Value, path: &str) -> Vec<(String, &'a Value)> {
    ["initContainers", "containers", "ephemeralContainers"]
        .iter()
        .flat_map(|f| {
            let fp = child(path, f);
            items(spec, f)
                .iter()
                .enumerate()
                .map(move |(i, c)| (index(&fp, i), c))
        })
        .collect()
}

/// kube's `validateLinux`: no Windows options in a Linux pod.
fn linux_only(spec: &Value, path: &str, out: &mut Vec<Cause>) {
    let msg = "windows options cannot be set for a linux pod";
    if spec
        .pointer("/securityContext/windowsOptions")
        .is_some_and(|w| !w.is_null())
    {
        out.push(forbidden(
            &format!("{path}.securityContext.windowsOptions"),
            msg,
        ));
    }
    for (cp, c) in all_containers(spec, path) {
        if c.pointer("/securityContext/windowsOptions")
            .is_some_and(|w| !w.is_null())
        {
            out.push(forbidden(
                &format!("{cp}.securityContext.windowsOptions"),
                msg,
            ));
        }
    }
}

/// kube's `validateWindows`: none of the Linux-only fields in a Windows pod.
fn windows_only(spec: &Value, path: &str, out: &mut Vec<Cause>) {
    let msg = "cannot be set for a windows pod";
    let sc = spec.get("securityContext").unwrap_or(&Value::Null);
    let scp = child(path, "securityContext");
    let in_sc = |f: &str| set(sc, f).is_some();
    let checks = [
        (in_sc("appArmorProfile"), child(&scp, "appArmorProfile")),
        (in_sc("seLinuxOptions"), child(&scp, "seLinuxOptions")),
        (set(spec, "hostUsers").is_some(), child(path, "hostUsers")),
        (flag(spec, "hostPID"), child(path, "hostPID")),
        (flag(spec, "hostIPC"), child(path, "hostIPC")),
        (in_sc("seccompProfile"), child(&scp, "seccompProfile")),
        (in_sc("fsGroup"), child(&scp, "fsGroup")),
        (
            in_sc("fsGroupChangePolicy"),
            child(&scp, "fsGroupChangePolicy"),
        ),
        (!items(sc, "sysctls").is_empty(), child(&scp, "sysctls")),
        (
            set(spec, "shareProcessNamespace").is_some(),
            child(path, "shareProcessNamespace"),
        ),
        (in_sc("runAsUser"), child(&scp, "runAsUser")),
        (in_sc("runAsGroup"), child(&scp, "runAsGroup")),
        (
            in_sc("supplementalGroups"),
            child(&scp, "supplementalGroups"),
        ),
        (
            in_sc("supplementalGroupsPolicy"),
            child(&scp, "supplementalGroupsPolicy"),
        ),
        (
            in_sc("seLinuxChangePolicy"),
            child(&scp, "seLinuxChangePolicy"),
        ),
    ];
    for (bad, p) in checks {
        if bad {
            out.push(forbidden(&p, msg));
        }
    }
    for (cp, c) in all_containers(spec, path) {
        let Some(csc) = set(c, "securityContext") else {
            continue;
        };
        for field in [
            "appArmorProfile",
            "seLinuxOptions",
            "seccompProfile",
            "capabilities",
            "readOnlyRootFilesystem",
            "privileged",
            "allowPrivilegeEscalation",
            "procMount",
            "runAsUser",
            "runAsGroup",
        ] {
            if set(csc, field).is_some() {
                out.push(forbidden(&format!("{cp}.securityContext.{field}"), msg));
            }
        }
    }
}

// ---- scheduling ----

/// kube's `validateAffinity`.
fn affinity(a: &Value, path: &str, opts: &PodOpts, out: &mut Vec<Cause>) {
    if let Some(na) = set(a, "nodeAffinity") {
        let p = child(path, "nodeAffinity");
        if let Some(req) = set(na, "requiredDuringSchedulingIgnoredDuringExecution") {
            let tp = child(
                &child(&p, "requiredDuringSchedulingIgnoredDuringExecution"),
                "nodeSelectorTerms",
            );
            let terms = items(req, "nodeSelectorTerms");
            if terms.is_empty() {
                out.push(required(&tp, "must have at least one node selector term"));
            }
            for (i, t) in terms.iter().enumerate() {
                node_selector_term(
                    t,
                    opts.allow_invalid_label_value_in_required_node_affinity,
                    &index(&tp, i),
                    out,
                );
            }
        }
        let pp = child(&p, "preferredDuringSchedulingIgnoredDuringExecution");
        for (i, t) in items(na, "preferredDuringSchedulingIgnoredDuringExecution")
            .iter()
            .enumerate()
        {
            let ip = index(&pp, i);
            weight(t, &ip, out);
            // Preferred terms always allow invalid label values.
            let null = Value::Null;
            node_selector_term(
                t.get("preference").unwrap_or(&null),
                true,
                &child(&ip, "preference"),
                out,
            );
        }
    }
    for kind in ["podAffinity", "podAntiAffinity"] {
        let Some(pa) = set(a, kind) else {
            continue;
        };
        let p = child(path, kind);
        let rp = child(&p, "requiredDuringSchedulingIgnoredDuringExecution");
        for (i, t) in items(pa, "requiredDuringSchedulingIgnoredDuringExecution")
            .iter()
            .enumerate()
        {
            pod_affinity_term(
                t,
                opts.allow_invalid_label_value_in_selector,
                &index(&rp, i),
                out,
            );
        }
        let pp = child(&p, "preferredDuringSchedulingIgnoredDuringExecution");
        for (i, t) in items(pa, "preferredDuringSchedulingIgnoredDuringExecution")
            .iter()
            .enumerate()
        {
            let ip = index(&pp, i);
            weight(t, &ip, out);
            let null = Value::Null;
            pod_affinity_term(
                t.get("podAffinityTerm").unwrap_or(&null),
                opts.allow_invalid_label_value_in_selector,
                &child(&ip, "podAffinityTerm"),
                out,
            );
        }
    }
}

/// A preferred term's weight: 1..=100.
fn weight(t: &Value, p: &str, out: &mut Vec<Cause>) {
    let w = int(t, "weight").unwrap_or(0);
    if !(1..=100).contains(&w) {
        out.push(inv(&child(p, "weight"), w, "must be in the range 1-100"));
    }
}

/// kube's `ValidateNodeSelectorTerm`.
fn node_selector_term(term: &Value, allow_invalid_values: bool, p: &str, out: &mut Vec<Cause>) {
    for (j, rq) in items(term, "matchExpressions").iter().enumerate() {
        let rp = index(&child(p, "matchExpressions"), j);
        let values = items(rq, "values");
        let op = str_of(rq, "operator");
        match op {
            "In" | "NotIn" if values.is_empty() => out.push(required(
                &child(&rp, "values"),
                "must be specified when `operator` is 'In' or 'NotIn'",
            )),
            "Exists" | "DoesNotExist" if !values.is_empty() => out.push(forbidden(
                &child(&rp, "values"),
                "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
            )),
            "Gt" | "Lt" if values.len() != 1 => out.push(required(
                &child(&rp, "values"),
                "must be specified single value when `operator` is 'Lt' or 'Gt'",
            )),
            "In" | "NotIn" | "Exists" | "DoesNotExist" | "Gt" | "Lt" => {}
            _ => out.push(invalid_str(
                &child(&rp, "operator"),
                op,
                "not a valid selector operator",
            )),
        }
        label_name(str_of(rq, "key"), &child(&rp, "key"), out);
        if !allow_invalid_values {
            for (k, v) in values.iter().enumerate() {
                let v = v.as_str().unwrap_or("");
                for m in label_value(v) {
                    out.push(invalid_str(&index(&child(&rp, "values"), k), v, &m));
                }
            }
        }
    }
    for (j, rq) in items(term, "matchFields").iter().enumerate() {
        let rp = index(&child(p, "matchFields"), j);
        let values = items(rq, "values");
        let op = str_of(rq, "operator");
        match op {
            "In" | "NotIn" if values.len() != 1 => out.push(required(
                &child(&rp, "values"),
                "must be only one value when `operator` is 'In' or 'NotIn' for node field selector",
            )),
            "In" | "NotIn" => {}
            _ => out.push(invalid_str(
                &child(&rp, "operator"),
                op,
                "not a valid selector operator",
            )),
        }
        let k = str_of(rq, "key");
        if k == "metadata.name" {
            for (i, v) in values.iter().enumerate() {
                let v = v.as_str().unwrap_or("");
                for m in dns1123_subdomain(v) {
                    out.push(invalid_str(&index(&child(&rp, "values"), i), v, &m));
                }
            }
        } else {
            out.push(invalid_str(
                &child(&rp, "key"),
                k,
                "not a valid field selector key",
            ));
        }
    }
}

/// kube's `validatePodAffinityTerm`.
fn pod_affinity_term(t: &Value, allow_invalid_values: bool, p: &str, out: &mut Vec<Cause>) {
    label_selector(
        set(t, "labelSelector"),
        allow_invalid_values,
        &child(p, "labelSelector"),
        out,
    );
    label_selector(
        set(t, "namespaceSelector"),
        allow_invalid_values,
        &child(p, "namespaceSelector"),
        out,
    );
    for name in strs(t, "namespaces") {
        // kube reports these at `namespace`.
        dns_label(name, &child(p, "namespace"), out);
    }
    match_and_mismatch_label_keys(
        p,
        &strs(t, "matchLabelKeys"),
        &strs(t, "mismatchLabelKeys"),
        set(t, "labelSelector"),
        out,
    );
    let topology_key = str_of(t, "topologyKey");
    if topology_key.is_empty() {
        out.push(required(&child(p, "topologyKey"), "can not be empty"));
    }
    label_name(topology_key, &child(p, "topologyKey"), out);
}

/// kube's `ValidateMatchLabelKeysAndMismatchLabelKeys`.
fn match_and_mismatch_label_keys(
    p: &str,
    match_keys: &[&str],
    mismatch_keys: &[&str],
    selector: Option<&Value>,
    out: &mut Vec<Cause>,
) {
    label_keys(&child(p, "matchLabelKeys"), match_keys, selector, out);
    label_keys(&child(p, "mismatchLabelKeys"), mismatch_keys, selector, out);
    if let Some(sel) = selector {
        let positions: HashMap<&str, usize> = match_keys
            .iter()
            .enumerate()
            .map(|(i, k)| (*k, i))
            .collect();
        let mut seen: HashSet<&str> = sel
            .get("matchLabels")
            .and_then(Value::as_object)
            .into_iter()
            .flat_map(|m| m.keys())
            .map(String::as_str)
            .collect();
        for e in items(sel, "matchExpressions") {
            let k = str_of(e, "key");
            if let Some(i) = positions.get(k) {
                if seen.contains(k) {
                    // kube's path: the term's, indexed.
                    out.push(invalid_str(
                        &index(p, *i),
                        k,
                        "exists in both matchLabelKeys and labelSelector",
                    ));
                }
            }
            seen.insert(k);
        }
    }
    let mismatch: HashSet<&str> = mismatch_keys.iter().copied().collect();
    for (i, k) in match_keys.iter().enumerate() {
        if mismatch.contains(k) {
            out.push(invalid_str(
                &index(&child(p, "matchLabelKeys"), i),
                k,
                "exists in both matchLabelKeys and mismatchLabelKeys",
            ));
        }
    }
}

/// kube's `validateLabelKeys`.
fn label_keys(p: &str, keys: &[&str], selector: Option<&Value>, out: &mut Vec<Cause>) {
    if keys.is_empty() {
        return;
    }
    if selector.is_none() {
        out.push(forbidden(
            p,
            "must not be specified when labelSelector is not set",
        ));
        return;
    }
    for (i, k) in keys.iter().enumerate() {
        label_name(k, &index(p, i), out);
    }
}

/// kube's `validateTopologySpreadConstraints`. With `MatchLabelKeysInPodTopologySpread` and
/// its `SelectorMerge` (on in 1.34), `matchLabelKeys` are checked as pod affinity's are.
fn topology_spread_constraints(spec: &Value, path: &str, opts: &PodOpts, out: &mut Vec<Cause>) {
    let list = items(spec, "topologySpreadConstraints");
    // Whether a later constraint repeats each one's {topologyKey, whenUnsatisfiable}: one
    // backward pass over a set, not kube's scan of the rest per constraint.
    let mut seen: HashSet<(&str, &str)> = HashSet::new();
    let mut repeated_later = vec![false; list.len()];
    for (i, c) in list.iter().enumerate().rev() {
        let tuple = (str_of(c, "topologyKey"), str_of(c, "whenUnsatisfiable"));
        repeated_later[i] = !seen.insert(tuple);
    }
    for (i, c) in list.iter().enumerate() {
        let p = index(path, i);
        let skew = int(c, "maxSkew").unwrap_or(0);
        if skew <= 0 {
            out.push(inv(&child(&p, "maxSkew"), skew, NOT_POSITIVE));
        }
        let topology_key = str_of(c, "topologyKey");
        if topology_key.is_empty() {
            out.push(required(&child(&p, "topologyKey"), "can not be empty"));
        }
        let when = str_of(c, "whenUnsatisfiable");
        let actions = ["DoNotSchedule", "ScheduleAnyway"];
        if !actions.contains(&when) {
            out.push(ns(&child(&p, "whenUnsatisfiable"), when, &actions));
        }
        let repeated = repeated_later.get(i).copied().unwrap_or(false);
        if repeated {
            out.push(duplicate(
                &child(&p, "{topologyKey, whenUnsatisfiable}"),
                &Value::from(format!("{{{topology_key}, {when}}}")),
            ));
        }
        if let Some(md) = set(c, "minDomains") {
            let n = md.as_i64().unwrap_or(0);
            if n <= 0 {
                out.push(inv(&child(&p, "minDomains"), n, NOT_POSITIVE));
            }
            if when != "DoNotSchedule" {
                out.push(inv(
                    &child(&p, "minDomains"),
                    n,
                    &format!(
                        "can only use minDomains if whenUnsatisfiable=DoNotSchedule, not {when}"
                    ),
                ));
            }
        }
        for field in ["nodeAffinityPolicy", "nodeTaintsPolicy"] {
            if let Some(v) = c.get(field).and_then(Value::as_str) {
                if v != "Honor" && v != "Ignore" {
                    out.push(ns(&child(&p, field), v, &["Honor", "Ignore"]));
                }
            }
        }
        if !opts.old_pod_violates_match_label_keys_validation {
            match_and_mismatch_label_keys(
                &p,
                &strs(c, "matchLabelKeys"),
                &[],
                set(c, "labelSelector"),
                out,
            );
        }
        if !opts.allow_invalid_topology_spread_constraint_label_selector {
            label_selector(
                set(c, "labelSelector"),
                false,
                &child(&p, "labelSelector"),
                out,
            );
        }
    }
}

/// kube's `ValidateTolerations`.
fn tolerations(list: &[Value], path: &str, out: &mut Vec<Cause>) {
    for (i, t) in list.iter().enumerate() {
        let p = index(path, i);
        let k = str_of(t, "key");
        if !k.is_empty() {
            label_name(k, &child(&p, "key"), out);
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
            _ => out.push(ns(&child(&p, "operator"), op, &["Equal", "Exists"])),
        }
        let effects = ["NoSchedule", "PreferNoSchedule", "NoExecute"];
        if !effect.is_empty() && !effects.contains(&effect) {
            out.push(ns(&child(&p, "effect"), effect, &effects));
        }
    }
}

/// kube's `validatePodDNSConfig` (`dnsPolicy` is defaulted to `ClusterFirst`; the relaxed
/// search check of `RelaxedDNSSearchValidation`, GA in 1.34).
fn dns_config(spec: &Value, p: &str, out: &mut Vec<Cause>) {
    let config = set(spec, "dnsConfig");
    if str_of(spec, "dnsPolicy") == "None" {
        match config {
            None => {
                out.push(required(
                    p,
                    "must provide `dnsConfig` when `dnsPolicy` is None",
                ));
                return;
            }
            Some(c) if items(c, "nameservers").is_empty() => {
                out.push(required(
                    &child(p, "nameservers"),
                    "must provide at least one DNS nameserver when `dnsPolicy` is None",
                ));
                return;
            }
            Some(_) => {}
        }
    }
    let Some(config) = config else {
        return;
    };
    let np = child(p, "nameservers");
    let nameservers = items(config, "nameservers");
    if nameservers.len() > 3 {
        out.push(invalid_raw(
            &np,
            &go_json(config.get("nameservers").unwrap_or(&Value::Null)),
            "must not have more than 3 nameservers",
        ));
    }
    for (i, server) in nameservers.iter().enumerate() {
        legacy_ip(server.as_str().unwrap_or(""), &index(&np, i), out);
    }
    let sp = child(p, "searches");
    let searches = strs(config, "searches");
    let shown = || go_json(config.get("searches").unwrap_or(&Value::Null));
    if searches.len() > 32 {
        out.push(invalid_raw(
            &sp,
            &shown(),
            "must not have more than 32 search paths",
        ));
    }
    if searches.join(" ").len() > 2048 {
        out.push(invalid_raw(
            &sp,
            &shown(),
            "must not have more than 2048 characters (including spaces) in the search list",
        ));
    }
    for (i, search) in searches.into_iter().enumerate() {
        if search != "." {
            let trimmed = search.strip_suffix('.').unwrap_or(search);
            for m in dns1123_subdomain_with_underscore(trimmed) {
                out.push(invalid_str(&index(&sp, i), trimmed, &m));
            }
        }
    }
    for (i, o) in items(config, "options").iter().enumerate() {
        if str_of(o, "name").is_empty() {
            out.push(required(
                &index(&child(p, "options"), i),
                "must not be empty",
            ));
        }
    }
}

// ---- formats and small helpers ----

/// The field `field` when present and not `null`.
fn set<'a>(v: &'a Value, field: &str) -> Option<&'a Value> {
    v.get(field).filter(|f| !f.is_null())
}

/// The integer at `v[field]`.
fn int(v: &Value, field: &str) -> Option<i64> {
    v.get(field).and_then(Value::as_i64)
}

/// The boolean at `v[field]`, false when absent.
fn flag(v: &Value, field: &str) -> bool {
    v.get(field).and_then(Value::as_bool) == Some(true)
}

/// The strings of the array at `v[field]`.
fn strs<'a>(v: &'a Value, field: &str) -> Vec<&'a str> {
    items(v, field)
        .iter()
        .map(|s| s.as_str().unwrap_or(""))
        .collect()
}

/// `s`, or `default` when empty (a defaulted string field).
fn default_str<'a>(s: &'a str, default: &'a str) -> &'a str {
    if s.is_empty() {
        default
    } else {
        s
    }
}

/// `field.Invalid` of an integer.
fn inv(path: &str, n: i64, detail: &str) -> Cause {
    invalid(path, &Value::from(n), detail)
}

/// `field.Invalid` with a value already rendered.
fn invalid_raw(path: &str, shown: &str, detail: &str) -> Cause {
    Cause::new(
        "FieldValueInvalid",
        path,
        format!("Invalid value: {shown}: {detail}"),
    )
}

/// `field.NotSupported` of a string.
fn ns(path: &str, value: &str, supported: &[&str]) -> Cause {
    not_supported(path, &Value::from(value), supported)
}

/// `field.NotFound`: `Not found: VALUE`.
fn not_found(path: &str, value: &str) -> Cause {
    Cause::new(
        "FieldValueNotFound",
        path,
        format!("Not found: {}", quoted(value)),
    )
}

/// A value as Go's `json.Marshal` writes it: object keys sorted.
fn go_json(v: &Value) -> String {
    super::field::json_value(v)
}

/// Go's JSON of an optional value (`null` when unset).
fn json_or_null(v: Option<&Value>) -> String {
    v.map_or_else(|| "null".to_owned(), go_json)
}

/// Whether the (lazily compiled) regex matches; a pattern that does not compile matches nothing.
fn matches(cell: &'static OnceLock<Option<Regex>>, pattern: &str, s: &str) -> bool {
    cell.get_or_init(|| Regex::new(pattern).ok())
        .as_ref()
        .is_some_and(|r| r.is_match(s))
}

/// A quantity as written (a string, or a bare number).
fn qstr(q: &Value) -> String {
    match q {
        Value::String(s) => s.clone(),
        Value::Number(n) => n.to_string(),
        _ => String::new(),
    }
}

/// A quantity's value in nano units (0 when it is not one: decoding refused those).
fn nano(q: &Value) -> i128 {
    crate::builtin::quantity::nano_value(&qstr(q)).map_or(0, |(n, _)| n)
}

/// A quantity as kube prints it (`Quantity.String`, the canonical form).
fn canon(q: &Value) -> String {
    let s = qstr(q);
    let canonical = crate::builtin::quantity::canonical(&s);
    canonical.unwrap_or(s)
}

/// kube's `ValidateDNS1123Label` (apimachinery 1.34's `IsDNS1123Label`, which says when a
/// name fails only for its dots).
fn dns_label(value: &str, path: &str, out: &mut Vec<Cause>) {
    if value.len() > 63 {
        out.push(invalid_str(
            path,
            value,
            "must be no more than 63 characters",
        ));
    }
    if !is_dns1123_label(value) {
        let subdomain = !value.is_empty() && value.split('.').all(is_dns1123_label);
        let msg = if subdomain {
            "must not contain dots"
        } else {
            crate::model::meta::DNS1123_LABEL_MSG
        };
        out.push(invalid_str(path, value, msg));
    }
}

/// `IsDNS1123SubdomainWithUnderscore` (the relaxed DNS search check).
fn dns1123_subdomain_with_underscore(s: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if s.len() > 253 {
        errs.push("must be no more than 253 characters".to_owned());
    }
    let label_ok = |l: &str| {
        let l = l.strip_prefix('_').unwrap_or(l);
        let alnum = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit();
        l.chars().next().is_some_and(alnum)
            && l.chars().last().is_some_and(alnum)
            && l.chars().all(|c| alnum(c) || c == '-' || c == '_')
    };
    if !s.split('.').all(label_ok) {
        errs.push("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '_', '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '_?[a-z0-9]([-_a-z0-9]*[a-z0-9])?(\\._?[a-z0-9]([-_a-z0-9]*[a-z0-9])?)*')".to_owned());
    }
    errs
}

const QUALIFIED_NAME_MSG: &str = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";

/// apimachinery 1.34's `IsQualifiedName` (an empty name part fails both its checks).
fn qualified_name(s: &str) -> Vec<String> {
    let mut errs = Vec::new();
    let parts: Vec<&str> = s.split('/').collect();
    let name = match parts.as_slice() {
        [name] => *name,
        [prefix, name] => {
            if prefix.is_empty() {
                errs.push("prefix part must be non-empty".to_owned());
            } else {
                errs.extend(
                    dns1123_subdomain(prefix)
                        .into_iter()
                        .map(|m| format!("prefix part {m}")),
                );
            }
            *name
        }
        _ => {
            return vec![format!(
                "a qualified name {QUALIFIED_NAME_MSG} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
            )]
        }
    };
    if name.is_empty() {
        errs.push("name part must be non-empty".to_owned());
    } else if name.len() > 63 {
        errs.push("name part must be no more than 63 characters".to_owned());
    }
    let alnum = |c: char| c.is_ascii_alphanumeric();
    let valid = name.chars().next().is_some_and(alnum)
        && name.chars().last().is_some_and(alnum)
        && name
            .chars()
            .all(|c| alnum(c) || c == '-' || c == '_' || c == '.');
    if !valid {
        errs.push(format!("name part {QUALIFIED_NAME_MSG}"));
    }
    errs
}

/// kube's `ValidateLabelName`.
fn label_name(name: &str, path: &str, out: &mut Vec<Cause>) {
    for m in qualified_name(name) {
        out.push(invalid_str(path, name, &m));
    }
}

/// apimachinery 1.34's `ValidateLabels`: key and value errors both at `path` (no key).
fn validate_labels(map: Option<&Value>, path: &str, out: &mut Vec<Cause>) {
    for (k, v) in map.and_then(Value::as_object).into_iter().flatten() {
        label_name(k, path, out);
        let v = v.as_str().unwrap_or("");
        for m in label_value(v) {
            out.push(invalid_str(path, v, &m));
        }
    }
}

/// apimachinery's `ValidateLabelSelector` (`allow_invalid_values`: its
/// `AllowInvalidLabelValueInSelector`).
pub(crate) fn label_selector(
    sel: Option<&Value>,
    allow_invalid_values: bool,
    path: &str,
    out: &mut Vec<Cause>,
) {
    let Some(sel) = sel.filter(|s| !s.is_null()) else {
        return;
    };
    validate_labels(sel.get("matchLabels"), &child(path, "matchLabels"), out);
    for (i, e) in items(sel, "matchExpressions").iter().enumerate() {
        let p = index(&child(path, "matchExpressions"), i);
        let values = items(e, "values");
        let op = str_of(e, "operator");
        match op {
            "In" | "NotIn" if values.is_empty() => out.push(required(
                &child(&p, "values"),
                "must be specified when `operator` is 'In' or 'NotIn'",
            )),
            "Exists" | "DoesNotExist" if !values.is_empty() => out.push(forbidden(
                &child(&p, "values"),
                "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
            )),
            "In" | "NotIn" | "Exists" | "DoesNotExist" => {}
            _ => out.push(invalid_str(
                &child(&p, "operator"),
                op,
                "not a valid selector operator",
            )),
        }
        label_name(str_of(e, "key"), &child(&p, "key"), out);
        if !allow_invalid_values {
            for (j, v) in values.iter().enumerate() {
                let v = v.as_str().unwrap_or("");
                for m in label_value(v) {
                    out.push(invalid_str(&index(&child(&p, "values"), j), v, &m));
                }
            }
        }
    }
}

/// `IsConfigMapKey`.
fn config_map_key(k: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if k.len() > 253 {
        errs.push("must be no more than 253 characters".to_owned());
    }
    if k.is_empty()
        || !k
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
    {
        errs.push("a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')".to_owned());
    }
    match k {
        "." => errs.push("must not be '.'".to_owned()),
        ".." => errs.push("must not be '..'".to_owned()),
        _ if k.starts_with("..") => errs.push("must not start with '..'".to_owned()),
        _ => {}
    }
    errs
}

/// apimachinery 1.34's `IsValidPortName`, its messages in its order.
fn port_name(s: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if s.len() > 15 {
        errs.push("must be no more than 15 characters".to_owned());
    }
    if s.is_empty()
        || !s
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
    {
        errs.push(
            "must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)".to_owned(),
        );
    }
    if !s.bytes().any(|b| b.is_ascii_lowercase()) {
        errs.push("must contain at least one letter (a-z)".to_owned());
    }
    if s.contains("--") {
        errs.push("must not contain consecutive hyphens".to_owned());
    }
    if s.starts_with('-') || s.ends_with('-') {
        errs.push("must not begin or end with a hyphen".to_owned());
    }
    errs
}

/// Core's `IsValidIPForLegacyField` with `StrictIPCIDRValidation` off (1.34's default): what
/// kube's lenient parser takes (leading zeros, IPv4-mapped and non-canonical forms included).
fn legacy_ip(value: &str, path: &str, out: &mut Vec<Cause>) {
    if super::goip::parse_ip16(value).is_none() {
        out.push(invalid_str(
            path,
            value,
            "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)",
        ));
    }
}

/// kube's `validateLocalDescendingPath`: relative, no `..`.
fn local_descending_path(s: &str, path: &str, out: &mut Vec<Cause>) {
    if s.starts_with('/') {
        out.push(invalid_str(path, s, "must be a relative path"));
    }
    no_backsteps(s, path, out);
}

/// kube's `validatePathNoBacksteps`.
fn no_backsteps(s: &str, path: &str, out: &mut Vec<Cause>) {
    if has_backsteps(s) {
        out.push(invalid_str(path, s, "must not contain '..'"));
    }
}

fn has_backsteps(s: &str) -> bool {
    s.split('/').any(|part| part == "..")
}

/// kube's `ValidateLocalNonReservedPath`.
fn local_non_reserved_path(s: &str, path: &str, out: &mut Vec<Cause>) {
    local_descending_path(s, path, out);
    if s.starts_with("..") && !s.starts_with("../") {
        out.push(invalid_str(path, s, "must not start with '..'"));
    }
}

/// Whether a spec's containers use huge pages that are not whole pages (kube's
/// `usesIndivisibleHugePagesValues`, a ratchet).
fn uses_indivisible_huge_pages(spec: &Value) -> bool {
    let indivisible = |map: Option<&Value>| {
        map.and_then(Value::as_object)
            .into_iter()
            .flatten()
            .any(|(name, q)| name.starts_with("hugepages-") && !huge_pages_divisible(name, q))
    };
    all_containers(spec, "").iter().any(|(_, c)| {
        indivisible(c.pointer("/resources/limits")) || indivisible(c.pointer("/resources/requests"))
    }) || indivisible(spec.get("overhead"))
}

/// kube's `hasInvalidLabelValueInAffinitySelector` (a ratchet): a pod (anti-)affinity term of
/// the stored spec whose selectors do not validate.
fn has_invalid_affinity_selector(spec: &Value) -> bool {
    let bad = |t: &Value| {
        let mut errs = Vec::new();
        label_selector(set(t, "labelSelector"), false, "", &mut errs);
        label_selector(set(t, "namespaceSelector"), false, "", &mut errs);
        !errs.is_empty()
    };
    ["podAffinity", "podAntiAffinity"].iter().any(|kind| {
        spec.pointer(&format!("/affinity/{kind}")).is_some_and(|a| {
            items(a, "requiredDuringSchedulingIgnoredDuringExecution")
                .iter()
                .any(bad)
                || items(a, "preferredDuringSchedulingIgnoredDuringExecution")
                    .iter()
                    .any(|w| w.get("podAffinityTerm").is_some_and(bad))
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn msgs(causes: &[Cause]) -> Vec<String> {
        causes.iter().map(ToString::to_string).collect()
    }

    fn check(spec: Value) -> Vec<String> {
        let mut out = Vec::new();
        pod_spec(&spec, "spec", &mut out);
        msgs(&out)
    }

    const LABEL_MSG: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";
    const LABEL_VALUE_MSG: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";

    #[test]
    fn a_full_valid_spec_passes() {
        let spec = json!({
            "containers": [{
                "name": "app", "image": "nginx:1.27",
                "ports": [{"name": "http", "containerPort": 80, "protocol": "TCP"}],
                "env": [{"name": "MY.VAR-1", "value": "x"},
                        {"name": "POD", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
                        {"name": "CPU", "valueFrom": {"resourceFieldRef": {"resource": "limits.cpu", "divisor": "1m"}}}],
                "envFrom": [{"configMapRef": {"name": "cfg"}, "prefix": "CFG_"}],
                "volumeMounts": [{"name": "data", "mountPath": "/data"},
                                 {"name": "cfg", "mountPath": "/cfg", "readOnly": true, "recursiveReadOnly": "IfPossible"}],
                "livenessProbe": {"httpGet": {"port": "http"}},
                "lifecycle": {"preStop": {"sleep": {"seconds": 5}}},
                "resources": {"limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "500m"}},
                "securityContext": {"runAsUser": 1000, "allowPrivilegeEscalation": false}
            }],
            "initContainers": [{"name": "sidecar", "image": "proxy", "restartPolicy": "Always",
                                "readinessProbe": {"exec": {"command": ["true"]}}}],
            "volumes": [{"name": "data", "emptyDir": {"sizeLimit": "1Gi"}},
                        {"name": "cfg", "configMap": {"name": "cfg", "defaultMode": 420,
                                                      "items": [{"key": "a", "path": "a.txt"}]}},
                        {"name": "empty"},
                        {"name": "proj", "projected": {"sources": [
                            {"serviceAccountToken": {"path": "token", "expirationSeconds": 3600}},
                            {"downwardAPI": {"items": [{"path": "labels", "fieldRef": {"fieldPath": "metadata.labels"}}]}}]}}],
            "tolerations": [{"key": "k", "operator": "Exists", "effect": "NoSchedule"},
                            {"operator": "Exists"}],
            "nodeSelector": {"kubernetes.io/os": "linux"},
            "affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": "kubernetes.io/hostname"}]},
                "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                    {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}]}}},
            "topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule",
                                           "labelSelector": {"matchLabels": {"app": "web"}}}],
            "securityContext": {"runAsUser": 1000, "fsGroup": 2000,
                                "sysctls": [{"name": "net.ipv4.ip_local_port_range", "value": "1024 65535"}]},
            "dnsPolicy": "None",
            "dnsConfig": {"nameservers": ["10.0.0.10"], "searches": ["svc.cluster.local", "_tcp.example."]},
            "restartPolicy": "Always", "terminationGracePeriodSeconds": 30,
            "activeDeadlineSeconds": 60, "hostname": "web-0", "subdomain": "web",
            "serviceAccountName": "default", "priorityClassName": "high",
            "overhead": {"cpu": "100m"}, "os": {"name": "linux"}
        });
        assert_eq!(check(spec), Vec::<String>::new());
    }

    #[test]
    fn container_names_are_labels_unique_across_kinds() {
        let spec = json!({
            "containers": [{"name": "App_1", "image": "x"}, {"name": "web", "image": ""},
                           {"name": "my.app", "image": "x"}],
            "initContainers": [{"name": "web", "image": "y"}]
        });
        assert_eq!(
            check(spec),
            vec![
                format!("spec.containers[0].name: Invalid value: \"App_1\": {LABEL_MSG}"),
                "spec.containers[1].image: Required value".to_owned(),
                "spec.containers[2].name: Invalid value: \"my.app\": must not contain dots"
                    .to_owned(),
                "spec.initContainers[0].name: Duplicate value: \"web\"".to_owned(),
            ]
        );
        assert_eq!(check(json!({})), vec!["spec.containers: Required value"]);
    }

    #[test]
    fn ports_env_and_env_from() {
        let spec = json!({"containers": [{
            "name": "c", "image": "i",
            "ports": [{"containerPort": 0, "name": "HTTP"},
                      {"containerPort": 80, "hostPort": 70000, "protocol": "ICMP", "name": "web"},
                      {"containerPort": 81, "name": "web"}],
            "env": [{"name": "A=B"},
                    {"name": "X", "value": "v", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}},
                    {"name": "Y", "valueFrom": {}},
                    {"name": "Z", "valueFrom": {"fieldRef": {"fieldPath": "status.phase"}}}],
            "envFrom": [{"prefix": "P_"}]
        }]});
        assert_eq!(
            check(spec),
            vec![
                "spec.containers[0].ports[0].name: Invalid value: \"HTTP\": must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)",
                "spec.containers[0].ports[0].name: Invalid value: \"HTTP\": must contain at least one letter (a-z)",
                "spec.containers[0].ports[0].containerPort: Required value",
                "spec.containers[0].ports[1].hostPort: Invalid value: 70000: must be between 1 and 65535, inclusive",
                "spec.containers[0].ports[1].protocol: Unsupported value: \"ICMP\": supported values: \"SCTP\", \"TCP\", \"UDP\"",
                "spec.containers[0].ports[2].name: Duplicate value: \"web\"",
                "spec.containers[0].env[0].name: Invalid value: \"A=B\": a valid environment variable name must consist only of printable ASCII characters other than '='",
                "spec.containers[0].env[1].valueFrom: Invalid value: \"\": may not be specified when `value` is not empty",
                "spec.containers[0].env[2].valueFrom: Invalid value: \"\": must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef` or `secretKeyRef`",
                "spec.containers[0].env[3].valueFrom.fieldRef.fieldPath: Unsupported value: \"status.phase\": supported values: \"metadata.name\", \"metadata.namespace\", \"metadata.uid\", \"spec.nodeName\", \"spec.serviceAccountName\", \"status.hostIP\", \"status.hostIPs\", \"status.podIP\", \"status.podIPs\"",
                "spec.containers[0].envFrom: Invalid value: \"\": must specify one of: `configMapRef` or `secretRef`",
            ]
        );
    }

    #[test]
    fn volumes_and_mounts() {
        let spec = json!({
            "volumes": [{"name": "a", "emptyDir": {}, "hostPath": {"path": "/x"}},
                        {"name": "a", "secret": {"secretName": "s", "defaultMode": 512}},
                        {"name": "c", "configMap": {"name": "", "items": [{"key": "k", "path": "../x"}]}},
                        {"name": "d", "persistentVolumeClaim": {"claimName": "claim"}}],
            "containers": [{"name": "c", "image": "i",
                            "volumeMounts": [{"name": "a", "mountPath": "/a"},
                                             {"name": "zz", "mountPath": "/a", "subPath": "/abs"}],
                            "volumeDevices": [{"name": "d", "devicePath": "/dev/x"}]}]
        });
        assert_eq!(
            check(spec),
            vec![
                "spec.volumes[0].hostPath: Forbidden: may not specify more than 1 volume type",
                "spec.volumes[1].secret.defaultMode: Invalid value: 512: must be a number between 0 and 0777 (octal), both inclusive",
                "spec.volumes[2].configMap.name: Required value",
                "spec.volumes[2].configMap.items[0].path: Invalid value: \"../x\": must not contain '..'",
                "spec.containers[0].volumeMounts[0].name: Not found: \"a\"",
                "spec.containers[0].volumeMounts[1].name: Not found: \"zz\"",
                "spec.containers[0].volumeMounts[1].mountPath: Invalid value: \"/a\": must be unique",
                "spec.containers[0].volumeMounts.subPath: Invalid value: \"/abs\": must be a relative path",
            ]
        );
        let spec = json!({
            "volumes": [{"name": "h", "hostPath": {"path": "/x", "type": "Dir"}},
                        {"name": "Bad"}],
            "containers": [{"name": "c", "image": "i"}]
        });
        assert_eq!(
            check(spec),
            vec![
                "spec.volumes[0].hostPath.type: Unsupported value: \"Dir\": supported values: \"\", \"BlockDevice\", \"CharDevice\", \"Directory\", \"DirectoryOrCreate\", \"File\", \"FileOrCreate\", \"Socket\"".to_owned(),
                format!("spec.volumes[1].name: Invalid value: \"Bad\": {LABEL_MSG}"),
            ]
        );
    }

    #[test]
    fn probes_lifecycle_and_sidecars() {
        let spec = json!({
            "terminationGracePeriodSeconds": 30,
            "containers": [{"name": "c", "image": "i",
                "livenessProbe": {"exec": {"command": ["x"]}, "tcpSocket": {"port": 80},
                                  "successThreshold": 2, "periodSeconds": -1},
                "readinessProbe": {"grpc": {"port": 0}, "terminationGracePeriodSeconds": 5},
                "lifecycle": {"preStop": {"sleep": {"seconds": 40}}},
                "restartPolicy": "Always"}],
            "initContainers": [{"name": "i", "image": "i", "livenessProbe": {"exec": {"command": ["x"]}}},
                               {"name": "s", "image": "i", "restartPolicy": "OnFailure"}]
        });
        assert_eq!(
            check(spec),
            vec![
                "spec.containers[0].lifecycle.preStop.sleep: Invalid value: 40: must be non-negative and less than terminationGracePeriodSeconds (30)",
                "spec.containers[0].livenessProbe.tcpSocket: Forbidden: may not specify more than 1 handler type",
                "spec.containers[0].livenessProbe.periodSeconds: Invalid value: -1: must be greater than or equal to 0",
                "spec.containers[0].livenessProbe.successThreshold: Invalid value: 2: must be 1",
                "spec.containers[0].readinessProbe.grpc.port: Invalid value: 0: must be between 1 and 65535, inclusive",
                "spec.containers[0].readinessProbe.terminationGracePeriodSeconds: Invalid value: 5: must not be set for readinessProbes",
                "spec.containers[0].restartPolicy: Forbidden: may not be set for non-init containers",
                "spec.initContainers[0].livenessProbe: Forbidden: may not be set for init containers without restartPolicy=Always",
                "spec.initContainers[1].restartPolicy: Unsupported value: \"OnFailure\": supported values: \"Always\"",
            ]
        );
    }

    #[test]
    fn scheduling_fields() {
        let spec = json!({
            "containers": [{"name": "c", "image": "i"}],
            "dnsPolicy": "None",
            "affinity": {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchExpressions": [{"key": "app", "operator": "In"}]}}]}},
            "topologySpreadConstraints": [
                {"maxSkew": 0, "topologyKey": "zone", "whenUnsatisfiable": "Maybe"},
                {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "Maybe"}],
            "tolerations": [{"operator": "Equal", "value": "x"},
                            {"key": "k", "operator": "Exists", "value": "v", "effect": "NoSchedule",
                             "tolerationSeconds": 10}]
        });
        let term = "spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0]";
        assert_eq!(
            check(spec),
            vec![
                format!("{term}.labelSelector.matchExpressions[0].values: Required value: must be specified when `operator` is 'In' or 'NotIn'"),
                format!("{term}.topologyKey: Required value: can not be empty"),
                format!("{term}.topologyKey: Invalid value: \"\": name part must be non-empty"),
                format!("{term}.topologyKey: Invalid value: \"\": name part {QUALIFIED_NAME_MSG}"),
                "spec.dnsConfig: Required value: must provide `dnsConfig` when `dnsPolicy` is None".to_owned(),
                "spec.topologySpreadConstraints[0].maxSkew: Invalid value: 0: must be greater than zero".to_owned(),
                "spec.topologySpreadConstraints[0].whenUnsatisfiable: Unsupported value: \"Maybe\": supported values: \"DoNotSchedule\", \"ScheduleAnyway\"".to_owned(),
                "spec.topologySpreadConstraints[0].{topologyKey, whenUnsatisfiable}: Duplicate value: \"{zone, Maybe}\"".to_owned(),
                "spec.topologySpreadConstraints[1].whenUnsatisfiable: Unsupported value: \"Maybe\": supported values: \"DoNotSchedule\", \"ScheduleAnyway\"".to_owned(),
                "spec.tolerations[0].operator: Invalid value: \"Equal\": operator must be Exists when `key` is empty, which means \"match all values and all keys\"".to_owned(),
                "spec.tolerations[1].effect: Invalid value: \"NoSchedule\": effect must be 'NoExecute' when `tolerationSeconds` is set".to_owned(),
                "spec.tolerations[1].operator: Invalid value: \"v\": value must be empty when `operator` is 'Exists'".to_owned(),
            ]
        );
    }

    #[test]
    fn resources_and_overhead() {
        let spec = json!({
            "containers": [{"name": "c", "image": "i", "resources": {
                "limits": {"cpu": "1", "example.com/gpu": "1"},
                "requests": {"cpu": "2", "example.com/gpu": "2", "foo": "1"}}}],
            "overhead": {"cpu": "-1"}
        });
        assert_eq!(
            check(spec),
            vec![
                "spec.containers[0].resources.requests: Invalid value: \"2\": must be less than or equal to cpu limit of 1",
                "spec.containers[0].resources.requests: Invalid value: \"2\": must be equal to example.com/gpu limit of 1",
                "spec.containers[0].resources.requests[foo]: Invalid value: \"foo\": must be a standard resource type or fully qualified",
                "spec.containers[0].resources.requests[foo]: Invalid value: \"foo\": must be a standard resource for containers",
                "spec.overhead.limits[cpu]: Invalid value: \"-1\": must be greater than or equal to 0",
            ]
        );
    }

    fn rc(replicas: i64, labels: Value) -> Value {
        json!({"spec": {"replicas": replicas, "selector": {"app": "web"}, "template": {
            "metadata": {"labels": labels},
            "spec": {"containers": [{"name": "c", "image": "i"}], "restartPolicy": "Always"}}}})
    }

    #[test]
    fn replication_controllers() {
        let good = rc(2, json!({"app": "web"}));
        assert!(validate("replicationcontrollers", &good, None).is_empty());
        assert!(validate("replicationcontrollers", &good, Some(&good)).is_empty());
        let mut bad = rc(-1, json!({"app": "other"}));
        bad["spec"]["template"]["spec"]["restartPolicy"] = json!("Never");
        bad["spec"]["template"]["spec"]["activeDeadlineSeconds"] = json!(5);
        let want = [
            "spec.replicas: Invalid value: -1: must be greater than or equal to 0",
            "spec.template.metadata.labels: Invalid value: {\"app\":\"other\"}: `selector` does not match template `labels`",
            "spec.template.spec.restartPolicy: Unsupported value: \"Never\": supported values: \"Always\"",
            "spec.template.spec.activeDeadlineSeconds: Forbidden: activeDeadlineSeconds in ReplicationController is not Supported",
        ];
        assert_eq!(msgs(&validate("replicationcontrollers", &bad, None)), want);
        // An update validates the spec twice, as kube's strategy does.
        let twice: Vec<&str> = want.iter().chain(want.iter()).copied().collect();
        assert_eq!(
            msgs(&validate("replicationcontrollers", &bad, Some(&good))),
            twice
        );
        let no_selector =
            json!({"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "i"}]}}}});
        assert_eq!(
            msgs(&validate("replicationcontrollers", &no_selector, None)),
            vec!["spec.selector: Required value"]
        );
        let no_template = json!({"spec": {"selector": {"a": "b"}}});
        assert_eq!(
            msgs(&validate("replicationcontrollers", &no_template, None)),
            vec!["spec.template: Required value"]
        );
        let status = json!({"status": {"replicas": 1, "readyReplicas": 2, "availableReplicas": 3}});
        assert_eq!(
            msgs(&validate_status("replicationcontrollers", &status, &good)),
            vec![
                "status.readyReplicas: Invalid value: 2: cannot be greater than status.replicas",
                "status.availableReplicas: Invalid value: 3: cannot be greater than status.replicas",
                "status.availableReplicas: Invalid value: 3: cannot be greater than readyReplicas",
            ]
        );
        assert!(validate("services", &bad, None).is_empty());
    }

    #[test]
    fn pod_templates_and_ratchets() {
        let t = json!({"template": {"metadata": {"labels": {"a": "b c"}}, "spec": {
            "containers": [{"name": "c", "image": "i"}],
            "ephemeralContainers": [{"name": "e", "image": "i"}]}}});
        assert_eq!(
            msgs(&validate("podtemplates", &t, None)),
            vec![
                format!("template.labels: Invalid value: \"b c\": {LABEL_VALUE_MSG}"),
                "template.spec.ephemeralContainers: Forbidden: ephemeral containers not allowed in pod template".to_owned(),
            ]
        );
        assert_eq!(
            msgs(&validate("podtemplates", &json!({}), None)),
            vec!["template.spec.containers: Required value"]
        );
        // A selector value kube refuses now stays writable when it was stored before.
        let stored = json!({"template": {"spec": {
            "containers": [{"name": "c", "image": "i"}],
            "affinity": {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{
                "topologyKey": "zone",
                "labelSelector": {"matchExpressions": [{"key": "app", "operator": "In", "values": ["a b"]}]}}]}}}}});
        assert_eq!(
            msgs(&validate("podtemplates", &stored, None)),
            vec![format!("template.spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].labelSelector.matchExpressions[0].values[0]: Invalid value: \"a b\": {LABEL_VALUE_MSG}")]
        );
        let mut updated = stored.clone();
        updated["template"]["metadata"] = json!({"labels": {"x": "y"}});
        assert!(validate("podtemplates", &updated, Some(&stored)).is_empty());
    }

    #[test]
    fn pods_get_the_pod_only_checks() {
        let p = json!({"metadata": {"name": "p"}, "spec": {
            "containers": [{"name": "c", "image": " nginx", "ports": [{"containerPort": 80, "hostPort": 81}]}],
            "hostNetwork": true, "nodeName": "n1", "schedulingGates": [{"name": "g"}],
            "volumes": [{"name": "t", "projected": {"sources": [{"serviceAccountToken": {"path": "token"}}]}}]}});
        assert_eq!(
            msgs(&pod_create(&p)),
            vec![
                "spec.containers[0].ports[0].hostPort: Invalid value: 81: must match `containerPort` when `hostNetwork` is true",
                "spec.volumes[0].projected.sources[0].serviceAccountToken: Forbidden: must not be specified when serviceAccountName is not set",
                "spec.containers[0].image: Invalid value: \" nginx\": must not have leading or trailing whitespace",
                "spec.nodeName: Forbidden: cannot be set until all schedulingGates have been cleared",
            ]
        );
        // What turtles' own tests expected of `validate_pod_spec` still holds.
        let fields: Vec<String> =
            pod_create(&json!({"spec": {"containers": [{"name": "a"}, {"image": "x"}]}}))
                .into_iter()
                .map(|c| c.field)
                .collect();
        assert_eq!(
            fields,
            ["spec.containers[0].image", "spec.containers[1].name"]
        );
        // A host-network Pod's unset host port is its container port (kube's default).
        let ok = json!({"spec": {"hostNetwork": true,
            "containers": [{"name": "c", "image": "i", "ports": [{"containerPort": 80}]}]}});
        assert!(pod_create(&ok).is_empty());
    }

    #[test]
    fn odd_shapes_do_not_panic() {
        let shapes = [
            json!(null),
            json!({"containers": "x", "volumes": [1, null, {"name": 5}], "tolerations": {}}),
            json!({"containers": [null, 3, {"name": [], "ports": [null], "env": [7]}],
                   "initContainers": [{"restartPolicy": 1}], "affinity": [], "dnsConfig": 1,
                   "securityContext": {"sysctls": [null]}, "overhead": {"cpu": []},
                   "topologySpreadConstraints": [null], "os": {"name": 1}}),
            json!({"containers": [{"name": "c", "image": "i", "resources": {"requests": {"hugepages-x": "1"}}}],
                   "resources": {"requests": {"cpu": "1"}}, "dnsPolicy": "None",
                   "dnsConfig": {"nameservers": ["::ffff:1.2.3.4", "010.0.0.1", "2001:DB8::1", "x"]},
                   "volumes": [{"name": "q", "quobyte": {"registry": "[::1]:7861,a:b:c,[x"}}]}),
        ];
        for s in shapes {
            let mut out = Vec::new();
            pod_spec(&s, "spec", &mut out);
            let wrapped = json!({"spec": s.clone()});
            let _ = pod_create(&wrapped);
            let _ = validate("replicationcontrollers", &wrapped, Some(&wrapped));
            let _ = validate("podtemplates", &json!({"template": wrapped}), None);
        }
    }
}
