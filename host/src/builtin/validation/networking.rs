//! kube's validation of the `networking.k8s.io` kinds (`pkg/apis/networking/validation`, kube
//! 1.34): Ingresses (the spec on create and update, `status.loadBalancer` through `/status`),
//! IngressClasses and NetworkPolicies, with kube's field paths and messages.
//!
//! IPs and CIDRs are kube's "legacy" fields, checked as `IsValidIPForLegacyField` /
//! `IsValidCIDRForLegacyField` do with the `StrictIPCIDRValidation` gate off (1.34's default):
//! only what kube's sloppy parser (Go's pre-1.17 `net.ParseIP` / `net.ParseCIDR`, which takes
//! IPv4 octets with leading zeros) refuses is invalid. That parser is ported here, since the
//! strict one of `field::parse_ip` refuses `010.0.0.1`.

use std::collections::HashSet;

use serde_json::{json, Value};

use super::field::{
    child, dns1035_label, dns1123_label, dns1123_subdomain, forbidden, go_struct, immutable, index,
    invalid, invalid_shown, invalid_str, items, json_value, label_value, not_supported, port_num,
    qualified_name, required, str_of, struct_json, too_long, wildcard_dns1123_subdomain, Go,
};
use super::goip::{cidr_family, cidr_strict, is_ip_sloppy, parse_cidr_sloppy};
use crate::model::status::Cause;

static NULL: Value = Value::Null;

const IP_MSG: &str = "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)";
const CIDR_MSG: &str = "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)";
const NOT_IP_MSG: &str = "must be a DNS name, not an IP address";
const ANNOTATION_INGRESS_CLASS: &str = "kubernetes.io/ingress.class";
const MAX_LEN_INGRESS_CLASS_CONTROLLER: usize = 250;
/// `validation.RegexError("Invalid path", httpPathFmt)`.
const HTTP_PATH_MSG: &str =
    "Invalid path (regex used for validation is '[A-Za-z0-9/\\-._~%!$&'()*+,;=:]+')";

/// A create (`old` None) or an update of `resource` (`old` the stored object): kube's
/// `ValidateIngressCreate` / `ValidateIngressUpdate`, `ValidateIngressClass` /
/// `ValidateIngressClassUpdate`, `ValidateNetworkPolicy` / `ValidateNetworkPolicyUpdate`.
pub fn validate(resource: &str, obj: &Value, old: Option<&Value>) -> Vec<Cause> {
    match resource {
        "ingresses" => ingress(obj, old),
        "ingressclasses" => ingress_class(obj, old),
        "networkpolicies" => network_policy(obj, old),
        "ipaddresses" => ip_address(obj, old),
        "servicecidrs" => service_cidr(obj, old),
        _ => Vec::new(),
    }
}

// ---- IPAddress (kube's ValidateIPAddress, ValidateIPAddressUpdate) ----

/// An IPAddress: its name is checked as a strict IP by the name rule; here its `parentRef`
/// (required: `resource` and `name`; `group` a DNS subdomain when set; `resource`, `name` and
/// `namespace` path segments), immutable on update.
fn ip_address(obj: &Value, old: Option<&Value>) -> Vec<Cause> {
    let mut out = Vec::new();
    // kube's ValidateObjectMeta with ValidateIPAddressName comes first: `generateName`, then
    // the name, both as strict addresses (an IPAddress cannot generate its name).
    if let Some(g) = obj
        .pointer("/metadata/generateName")
        .and_then(Value::as_str)
        .filter(|g| !g.is_empty())
    {
        invalid_each(
            "metadata.generateName",
            g,
            super::goip::ip_strict(g),
            &mut out,
        );
    }
    let name = obj
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("");
    if !name.is_empty() {
        invalid_each(
            "metadata.name",
            name,
            super::goip::ip_strict(name),
            &mut out,
        );
    }
    let path = "spec.parentRef";
    match object(spec_of(obj), "parentRef") {
        None => out.push(required(path, "")),
        Some(r) => {
            if let Some(g) = string(r, "group").filter(|g| !g.is_empty()) {
                invalid_each(&child(path, "group"), g, dns1123_subdomain(g), &mut out);
            }
            for name in ["resource", "name"] {
                let p = child(path, name);
                match string(r, name).filter(|v| !v.is_empty()) {
                    None => out.push(required(&p, "")),
                    Some(v) => invalid_each(&p, v, path_segment_name(v), &mut out),
                }
            }
            if let Some(ns) = string(r, "namespace").filter(|v| !v.is_empty()) {
                invalid_each(
                    &child(path, "namespace"),
                    ns,
                    path_segment_name(ns),
                    &mut out,
                );
            }
        }
    }
    if let Some(old) = old {
        // kube reports the internal `*networking.ParentReference`.
        let as_go = |v: &Value| {
            object(spec_of(v), "parentRef").map(|r| {
                go_struct(
                    Some(r),
                    &[
                        ("Group", "group", Go::Str),
                        ("Resource", "resource", Go::Str),
                        ("Namespace", "namespace", Go::Str),
                        ("Name", "name", Go::Str),
                    ],
                )
            })
        };
        immutable(as_go(obj).as_ref(), as_go(old).as_ref(), path, &mut out);
    }
    out
}

// ---- ServiceCIDR (kube's ValidateServiceCIDR, ValidateServiceCIDRUpdate) ----

/// A ServiceCIDR's `spec.cidrs`: one or two strict CIDRs of different families. On update kube
/// checks only the update rules: unchanged, or one CIDR growing to two with the first kept.
fn service_cidr(obj: &Value, old: Option<&Value>) -> Vec<Cause> {
    let cidrs: Vec<&str> = items(spec_of(obj), "cidrs")
        .iter()
        .map(|c| c.as_str().unwrap_or(""))
        .collect();
    let Some(old) = old else {
        return service_cidr_spec(&cidrs);
    };
    let was: Vec<&str> = items(spec_of(old), "cidrs")
        .iter()
        .map(|c| c.as_str().unwrap_or(""))
        .collect();
    let mut out = Vec::new();
    let path = "spec.cidrs";
    if was.len() == cidrs.len() {
        for (i, (new, old)) in cidrs.iter().zip(&was).enumerate() {
            if new != old {
                out.push(invalid_str(&index(path, i), new, "field is immutable"));
            }
        }
    } else if was.len() == 1 && cidrs.len() == 2 {
        if cidrs[0] != was[0] {
            out.push(invalid_str(&index(path, 0), cidrs[0], "field is immutable"));
        }
        out.extend(service_cidr_spec(&cidrs));
    } else {
        out.push(invalid(path, &json!(cidrs), "field is immutable"));
    }
    out
}

fn service_cidr_spec(cidrs: &[&str]) -> Vec<Cause> {
    let path = "spec.cidrs";
    if cidrs.is_empty() {
        return vec![required(path, "at least one CIDR required")];
    }
    if cidrs.len() > 2 {
        // kube reports the `*networking.ServiceCIDRSpec`: the JSON of the internal struct.
        let spec = struct_json(&[("CIDRs", json_value(&json!(cidrs)))]);
        return vec![invalid_shown(path, &spec, "may only hold up to 2 values")];
    }
    let mut out = Vec::new();
    for (i, c) in cidrs.iter().enumerate() {
        invalid_each(&index(path, i), c, cidr_strict(c), &mut out);
    }
    if cidrs.len() == 2 {
        let (a, b) = (cidr_family(cidrs[0]), cidr_family(cidrs[1]));
        if a.is_some() && a == b {
            out.push(invalid(
                path,
                &json!(cidrs),
                "may specify no more than one IP for each IP family, i.e 192.168.0.0/24 and 2001:db8::/64",
            ));
        }
    }
    out
}

/// An update through `/status`: kube's `ValidateIngressStatusUpdate` (the other kinds here have
/// no status subresource).
pub fn validate_status(resource: &str, obj: &Value, old: &Value) -> Vec<Cause> {
    match resource {
        "ingresses" => ingress_status(obj, old),
        _ => Vec::new(),
    }
}

// ---- JSON access ----

/// `v.spec`, or null.
fn spec_of(v: &Value) -> &Value {
    v.get("spec").filter(|s| s.is_object()).unwrap_or(&NULL)
}

/// The object at `v[name]` (a Go pointer that is set), `None` when absent or null.
fn object<'a>(v: &'a Value, name: &str) -> Option<&'a Value> {
    v.get(name).filter(|x| x.is_object())
}

/// The string at `v[name]` (a Go `*string` that is set), `None` when absent or null.
fn string<'a>(v: &'a Value, name: &str) -> Option<&'a str> {
    v.get(name).and_then(Value::as_str)
}

/// The integer at `v[name]`, `None` when absent or null.
fn int(v: &Value, name: &str) -> Option<i64> {
    v.get(name).and_then(Value::as_i64)
}

/// One `Invalid value: "value": msg` per message.
fn invalid_each(path: &str, value: &str, msgs: Vec<String>, out: &mut Vec<Cause>) {
    for msg in msgs {
        out.push(invalid_str(path, value, &msg));
    }
}

// ---- formats not in `field` (or in a different order there) ----

/// `IsValidPathSegmentName` (`content.IsPathSegmentName`).
fn path_segment_name(s: &str) -> Vec<String> {
    for bad in [".", ".."] {
        if s == bad {
            return vec![format!("may not be '{bad}'")];
        }
    }
    ["/", "%"]
        .iter()
        .filter(|bad| s.contains(**bad))
        .map(|bad| format!("may not contain '{bad}'"))
        .collect()
}

/// `IsDomainPrefixedPath` of a non-empty value: a DNS subdomain, `/`, and HTTP path characters.
fn domain_prefixed_path(path: &str, value: &str, out: &mut Vec<Cause>) {
    let Some((host, rest)) = value
        .split_once('/')
        .filter(|(h, r)| !h.is_empty() && !r.is_empty())
    else {
        out.push(invalid_str(
            path,
            value,
            "must be a domain-prefixed path (such as \"acme.io/foo\")",
        ));
        return;
    };
    invalid_each(path, host, dns1123_subdomain(host), out);
    let http_path_byte = |b: u8| b.is_ascii_alphanumeric() || b"/-._~%!$&'()*+,;=:".contains(&b);
    if !rest.bytes().all(http_path_byte) {
        out.push(invalid_str(path, rest, HTTP_PATH_MSG));
    }
}

/// Core's `IsValidIPForLegacyField` with `StrictIPCIDRValidation` off: a value in `allowed`
/// (the stored object's) is not checked again.
fn legacy_ip(path: &str, value: &str, allowed: &HashSet<&str>, out: &mut Vec<Cause>) {
    if !allowed.contains(value) && !is_ip_sloppy(value) {
        out.push(invalid_str(path, value, IP_MSG));
    }
}

/// Core's `IsValidCIDRForLegacyField` with `StrictIPCIDRValidation` off: a value in `allowed`
/// (the stored object's) is not checked again.
fn legacy_cidr(path: &str, value: &str, allowed: &HashSet<String>, out: &mut Vec<Cause>) {
    if !allowed.contains(value) && parse_cidr_sloppy(value).is_none() {
        out.push(invalid_str(path, value, CIDR_MSG));
    }
}

// ---- label selectors (k8s.io/apimachinery/pkg/apis/meta/v1/validation) ----

/// `metav1validation.ValidateLabelSelector` with its `AllowInvalidLabelValueInSelector` option.
/// A `matchLabels` problem is reported at `matchLabels` itself, as kube's `ValidateLabels`
/// does.
fn label_selector(sel: &Value, path: &str, allow_invalid_values: bool, out: &mut Vec<Cause>) {
    let labels_path = child(path, "matchLabels");
    if let Some(labels) = sel.get("matchLabels").and_then(Value::as_object) {
        for (k, v) in labels {
            invalid_each(&labels_path, k, qualified_name(k), out);
            let v = v.as_str().unwrap_or("");
            invalid_each(&labels_path, v, label_value(v), out);
        }
    }
    let exprs_path = child(path, "matchExpressions");
    for (i, e) in items(sel, "matchExpressions").iter().enumerate() {
        let p = index(&exprs_path, i);
        let values = items(e, "values");
        match str_of(e, "operator") {
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
            op => out.push(invalid_str(
                &child(&p, "operator"),
                op,
                "not a valid selector operator",
            )),
        }
        let key = str_of(e, "key");
        invalid_each(&child(&p, "key"), key, qualified_name(key), out);
        if !allow_invalid_values {
            let values_path = child(&p, "values");
            for (j, v) in values.iter().enumerate() {
                let v = v.as_str().unwrap_or("");
                invalid_each(&index(&values_path, j), v, label_value(v), out);
            }
        }
    }
}

// ---- Ingress ----

/// kube's `IngressValidationOptions`.
#[derive(Clone, Copy, Default)]
struct IngressOpts {
    allow_invalid_secret_name: bool,
    allow_invalid_wildcard_host_rule: bool,
    allow_relaxed_service_name: bool,
}

/// `ValidateIngressCreate` (`old` None: the `kubernetes.io/ingress.class` annotation must match
/// `ingressClassName`) and `ValidateIngressUpdate` (options from the stored object).
fn ingress(obj: &Value, old: Option<&Value>) -> Vec<Cause> {
    // `RelaxedServiceNameValidation` is alpha (off) in 1.34: only a stored object relaxes it.
    let opts = old.map_or_else(IngressOpts::default, |o| IngressOpts {
        allow_invalid_secret_name: allow_invalid_secret_name(o),
        allow_invalid_wildcard_host_rule: allow_invalid_wildcard_host_rule(o),
        allow_relaxed_service_name: allow_relaxed_service_name(o),
    });
    let spec = spec_of(obj);
    let mut out = Vec::new();
    ingress_spec(spec, "spec", opts, &mut out);
    if old.is_none() {
        let annotation = obj
            .pointer("/metadata/annotations")
            .and_then(|a| a.get(ANNOTATION_INGRESS_CLASS));
        if let (Some(a), Some(class)) = (annotation, string(spec, "ingressClassName")) {
            let a = a.as_str().unwrap_or("");
            if a != class {
                out.push(invalid_str(
                    &child("annotations", ANNOTATION_INGRESS_CLASS),
                    a,
                    "must match `ingressClassName` when both are specified",
                ));
            }
        }
    }
    out
}

/// `ValidateIngressSpec`.
fn ingress_spec(spec: &Value, path: &str, opts: IngressOpts, out: &mut Vec<Cause>) {
    let rules = items(spec, "rules");
    let default_backend = object(spec, "defaultBackend");
    if rules.is_empty() && default_backend.is_none() {
        // kube reports `spec.Rules`, which it prints as JSON: a nil `[]networking.IngressRule`
        // as `null`, an empty one as `[]`.
        let shown = if spec.get("rules").is_some_and(Value::is_array) {
            "[]"
        } else {
            "null"
        };
        out.push(invalid_shown(
            path,
            shown,
            "either `defaultBackend` or `rules` must be specified",
        ));
    }
    if let Some(backend) = default_backend {
        ingress_backend(backend, &child(path, "defaultBackend"), opts, out);
    }
    if !rules.is_empty() {
        ingress_rules(rules, &child(path, "rules"), opts, out);
    }
    let tls_path = child(path, "tls");
    for (t, tls) in items(spec, "tls").iter().enumerate() {
        let tp = index(&tls_path, t);
        let hosts_path = child(&tp, "hosts");
        for (i, host) in items(tls, "hosts").iter().enumerate() {
            let host = host.as_str().unwrap_or("");
            let msgs = if host.contains('*') {
                wildcard_dns1123_subdomain(host)
            } else {
                dns1123_subdomain(host)
            };
            invalid_each(&index(&hosts_path, i), host, msgs, out);
        }
        if !opts.allow_invalid_secret_name {
            let name = str_of(tls, "secretName");
            invalid_each(&child(&tp, "secretName"), name, tls_secret_name(name), out);
        }
    }
    if let Some(class) = string(spec, "ingressClassName") {
        invalid_each(
            &child(path, "ingressClassName"),
            class,
            dns1123_subdomain(class),
            out,
        );
    }
}

/// `validateTLSSecretName`: an empty name is allowed.
fn tls_secret_name(name: &str) -> Vec<String> {
    if name.is_empty() {
        Vec::new()
    } else {
        dns1123_subdomain(name)
    }
}

/// `validateIngressRules`: each host (a DNS name, wildcards allowed) and rule value.
fn ingress_rules(rules: &[Value], path: &str, opts: IngressOpts, out: &mut Vec<Cause>) {
    for (i, rule) in rules.iter().enumerate() {
        let rp = index(path, i);
        let host = str_of(rule, "host");
        let mut wildcard = false;
        if !host.is_empty() {
            let hp = child(&rp, "host");
            if is_ip_sloppy(host) {
                out.push(invalid_str(&hp, host, NOT_IP_MSG));
            }
            if host.contains('*') {
                invalid_each(&hp, host, wildcard_dns1123_subdomain(host), out);
                wildcard = true;
            } else {
                invalid_each(&hp, host, dns1123_subdomain(host), out);
            }
        }
        if !wildcard || !opts.allow_invalid_wildcard_host_rule {
            ingress_rule_value(rule, &rp, opts, out);
        }
    }
}

/// `validateIngressRuleValue` and `validateHTTPIngressRuleValue`.
fn ingress_rule_value(rule: &Value, path: &str, opts: IngressOpts, out: &mut Vec<Cause>) {
    let Some(http) = object(rule, "http") else {
        return;
    };
    let http_path = child(path, "http");
    let paths = items(http, "paths");
    let paths_path = child(&http_path, "paths");
    if paths.is_empty() {
        out.push(required(&paths_path, ""));
    }
    for (i, p) in paths.iter().enumerate() {
        http_ingress_path(p, &index(&paths_path, i), opts, out);
    }
}

/// `validateHTTPIngressPath`.
fn http_ingress_path(p: &Value, path: &str, opts: IngressOpts, out: &mut Vec<Cause>) {
    let Some(path_type) = string(p, "pathType") else {
        out.push(required(
            &child(path, "pathType"),
            "pathType must be specified",
        ));
        return;
    };
    let value = str_of(p, "path");
    let value_path = child(path, "path");
    match path_type {
        "Exact" | "Prefix" => {
            if !value.starts_with('/') {
                out.push(invalid_str(&value_path, value, "must be an absolute path"));
            }
            if !value.is_empty() {
                for seq in ["//", "/./", "/../", "%2f", "%2F"] {
                    if value.contains(seq) {
                        out.push(invalid_str(
                            &value_path,
                            value,
                            &format!("must not contain '{seq}'"),
                        ));
                    }
                }
                for suffix in ["/..", "/."] {
                    if value.ends_with(suffix) {
                        out.push(invalid_str(
                            &value_path,
                            value,
                            &format!("cannot end with '{suffix}'"),
                        ));
                    }
                }
            }
        }
        "ImplementationSpecific" => {
            if !value.is_empty() && !value.starts_with('/') {
                out.push(invalid_str(&value_path, value, "must be an absolute path"));
            }
        }
        other => out.push(not_supported(
            &child(path, "pathType"),
            &Value::String(other.to_owned()),
            &["Exact", "ImplementationSpecific", "Prefix"],
        )),
    }
    ingress_backend(
        p.get("backend").unwrap_or(&NULL),
        &child(path, "backend"),
        opts,
        out,
    );
}

/// `validateIngressBackend`: exactly one of a resource or a service (name and port) backend.
fn ingress_backend(backend: &Value, path: &str, opts: IngressOpts, out: &mut Vec<Cause>) {
    let resource = object(backend, "resource");
    let service = object(backend, "service");
    match (resource, service) {
        (Some(_), Some(_)) => out.push(invalid_str(
            path,
            "",
            "cannot set both resource and service backends",
        )),
        (Some(resource), None) => {
            typed_local_object_reference(resource, &child(path, "resource"), out);
        }
        (None, Some(service)) => {
            let service_path = child(path, "service");
            let name_path = child(&service_path, "name");
            let name = str_of(service, "name");
            if name.is_empty() {
                out.push(required(&name_path, ""));
            } else {
                // `ValidateServiceName` (a DNS-1035 label), or a DNS-1123 label when relaxed.
                let msgs = if opts.allow_relaxed_service_name {
                    dns1123_label(name)
                } else {
                    dns1035_label(name)
                };
                invalid_each(&name_path, name, msgs, out);
            }
            let port = service.get("port").unwrap_or(&NULL);
            let port_path = child(&service_path, "port");
            let port_name = str_of(port, "name");
            let number = int(port, "number").unwrap_or(0);
            match (!port_name.is_empty(), number != 0) {
                (true, true) => out.push(invalid_str(
                    path,
                    "",
                    "cannot set both port name & port number",
                )),
                (true, false) => invalid_each(
                    &child(&port_path, "name"),
                    port_name,
                    crate::builtin::validation::field::port_name(port_name),
                    out,
                ),
                (false, true) => {
                    let number_path = child(&port_path, "number");
                    for msg in port_num(number) {
                        out.push(invalid(&number_path, &Value::from(number), &msg));
                    }
                }
                (false, false) => out.push(required(path, "port name or number is required")),
            }
        }
        (None, None) => out.push(invalid_str(
            path,
            "",
            "resource or service backend is required",
        )),
    }
}

/// `validateIngressTypedLocalObjectReference`.
fn typed_local_object_reference(r: &Value, path: &str, out: &mut Vec<Cause>) {
    if let Some(group) = string(r, "apiGroup") {
        invalid_each(
            &child(path, "apiGroup"),
            group,
            dns1123_subdomain(group),
            out,
        );
    }
    for field in ["kind", "name"] {
        let value = str_of(r, field);
        let p = child(path, field);
        if value.is_empty() {
            out.push(required(&p, ""));
        } else {
            invalid_each(&p, value, path_segment_name(value), out);
        }
    }
}

/// `allowInvalidSecretName`: the stored object has a TLS secret name kube would refuse now.
fn allow_invalid_secret_name(old: &Value) -> bool {
    items(spec_of(old), "tls")
        .iter()
        .any(|tls| !tls_secret_name(str_of(tls, "secretName")).is_empty())
}

/// `allowInvalidWildcardHostRule`: the stored object has a wildcard-host rule whose value kube
/// would refuse now.
fn allow_invalid_wildcard_host_rule(old: &Value) -> bool {
    items(spec_of(old), "rules").iter().any(|rule| {
        if !str_of(rule, "host").contains('*') {
            return false;
        }
        let mut errs = Vec::new();
        ingress_rule_value(rule, "", IngressOpts::default(), &mut errs);
        !errs.is_empty()
    })
}

/// `allowRelaxedServiceNameValidation` (gate off): the stored object names a backend Service
/// that is a DNS-1123 label but not a DNS-1035 one.
fn allow_relaxed_service_name(old: &Value) -> bool {
    let relaxed = |service: Option<&Value>| {
        service.is_some_and(|s| {
            let name = str_of(s, "name");
            dns1123_label(name).is_empty() && !dns1035_label(name).is_empty()
        })
    };
    let spec = spec_of(old);
    if relaxed(object(spec, "defaultBackend").and_then(|b| object(b, "service"))) {
        return true;
    }
    items(spec, "rules").iter().any(|rule| {
        object(rule, "http").is_some_and(|http| {
            items(http, "paths")
                .iter()
                .any(|p| relaxed(p.get("backend").and_then(|b| object(b, "service"))))
        })
    })
}

/// `ValidateIngressStatusUpdate`, i.e. `ValidateIngressLoadBalancerStatus`: each load balancer
/// ingress's IP (one already stored is not checked again) and hostname (a DNS name, not an IP).
/// kube checks nothing of `ports`.
fn ingress_status(obj: &Value, old: &Value) -> Vec<Cause> {
    let lb_ingress = |v: &Value| -> Vec<Value> {
        items(
            v.pointer("/status/loadBalancer").unwrap_or(&NULL),
            "ingress",
        )
        .to_vec()
    };
    let old_ingress = lb_ingress(old);
    let existing: HashSet<&str> = old_ingress
        .iter()
        .map(|i| str_of(i, "ip"))
        .filter(|ip| !ip.is_empty())
        .collect();
    let mut out = Vec::new();
    for (i, ing) in lb_ingress(obj).iter().enumerate() {
        let p = index("status.loadBalancer.ingress", i);
        let ip = str_of(ing, "ip");
        if !ip.is_empty() {
            legacy_ip(&child(&p, "ip"), ip, &existing, &mut out);
        }
        let host = str_of(ing, "hostname");
        if !host.is_empty() {
            let hp = child(&p, "hostname");
            invalid_each(&hp, host, dns1123_subdomain(host), &mut out);
            if is_ip_sloppy(host) {
                out.push(invalid_str(&hp, host, NOT_IP_MSG));
            }
        }
    }
    out
}

// ---- IngressClass ----

/// `ValidateIngressClass`, and on update `ValidateIngressClassUpdate` (`spec.controller` is
/// immutable, then the new object is validated).
fn ingress_class(obj: &Value, old: Option<&Value>) -> Vec<Cause> {
    let spec = spec_of(obj);
    let controller = str_of(spec, "controller");
    let controller_path = "spec.controller";
    let mut out = Vec::new();
    if let Some(old) = old {
        if controller != str_of(spec_of(old), "controller") {
            out.push(invalid_str(
                controller_path,
                controller,
                "field is immutable",
            ));
        }
    }
    if controller.is_empty() {
        out.push(required(controller_path, ""));
    } else {
        if controller.len() > MAX_LEN_INGRESS_CLASS_CONTROLLER {
            out.push(too_long(controller_path, MAX_LEN_INGRESS_CLASS_CONTROLLER));
        }
        domain_prefixed_path(controller_path, controller, &mut out);
    }
    if let Some(params) = object(spec, "parameters") {
        ingress_class_parameters(params, "spec.parameters", &mut out);
    }
    out
}

/// `validateIngressClassParametersReference`.
fn ingress_class_parameters(params: &Value, path: &str, out: &mut Vec<Cause>) {
    typed_local_object_reference(params, path, out);
    let scope_path = child(path, "scope");
    let Some(scope) = string(params, "scope") else {
        out.push(required(&scope_path, ""));
        return;
    };
    let namespace_path = child(path, "namespace");
    let namespace = string(params, "namespace");
    match scope {
        "Namespace" => match namespace {
            None => out.push(required(
                &namespace_path,
                "`parameters.scope` is set to 'Namespace'",
            )),
            // `ValidateNamespaceName`: a DNS-1123 label.
            Some(ns) => invalid_each(&namespace_path, ns, dns1123_label(ns), out),
        },
        "Cluster" => {
            if namespace.is_some() {
                out.push(forbidden(
                    &namespace_path,
                    "`parameters.scope` is set to 'Cluster'",
                ));
            }
        }
        other => out.push(not_supported(
            &scope_path,
            &Value::String(other.to_owned()),
            &["Cluster", "Namespace"],
        )),
    }
}

// ---- NetworkPolicy ----

/// kube's `NetworkPolicyValidationOptions`.
struct PolicyOpts<'a> {
    allow_invalid_label_value_in_selector: bool,
    allow_cidrs_even_if_invalid: &'a HashSet<String>,
}

/// `ValidateNetworkPolicy` on create; on update what kube's strategy runs: `ValidateNetworkPolicy`
/// and then `ValidateNetworkPolicyUpdate`, each validating the whole spec, so an update's
/// causes come twice (kube's `Status` message lists each once: its `ToAggregate` drops repeated
/// messages). Both passes allow invalid selector values when the stored `spec.podSelector` has
/// any problem (`ValidationOptionsForNetworking`); only the second allows the stored CIDRs, so
/// a stored invalid CIDR is still reported by the first.
fn network_policy(obj: &Value, old: Option<&Value>) -> Vec<Cause> {
    let spec = spec_of(obj);
    let allow_invalid_label_value_in_selector = old.is_some_and(|o| {
        let mut errs = Vec::new();
        label_selector(
            spec_of(o).get("podSelector").unwrap_or(&NULL),
            "",
            false,
            &mut errs,
        );
        !errs.is_empty()
    });
    let mut out = Vec::new();
    let opts = PolicyOpts {
        allow_invalid_label_value_in_selector,
        allow_cidrs_even_if_invalid: &HashSet::new(),
    };
    network_policy_spec(spec, &opts, &mut out);
    if let Some(old) = old {
        let cidrs = stored_cidrs(spec_of(old));
        let opts = PolicyOpts {
            allow_invalid_label_value_in_selector,
            allow_cidrs_even_if_invalid: &cidrs,
        };
        network_policy_spec(spec, &opts, &mut out);
    }
    out
}

/// Every `ipBlock.cidr` and `except` of the stored spec (`ValidateNetworkPolicyUpdate`).
fn stored_cidrs(spec: &Value) -> HashSet<String> {
    let mut cidrs = HashSet::new();
    for (dir, peers) in [("ingress", "from"), ("egress", "to")] {
        for rule in items(spec, dir) {
            for peer in items(rule, peers) {
                if let Some(block) = object(peer, "ipBlock") {
                    cidrs.insert(str_of(block, "cidr").to_owned());
                    cidrs.extend(
                        items(block, "except")
                            .iter()
                            .map(|e| e.as_str().unwrap_or("").to_owned()),
                    );
                }
            }
        }
    }
    cidrs
}

/// `ValidateNetworkPolicySpec`.
fn network_policy_spec(spec: &Value, opts: &PolicyOpts<'_>, out: &mut Vec<Cause>) {
    label_selector(
        spec.get("podSelector").unwrap_or(&NULL),
        "spec.podSelector",
        opts.allow_invalid_label_value_in_selector,
        out,
    );
    for (dir, peers) in [("ingress", "from"), ("egress", "to")] {
        let dir_path = child("spec", dir);
        for (i, rule) in items(spec, dir).iter().enumerate() {
            let rp = index(&dir_path, i);
            let ports_path = child(&rp, "ports");
            for (j, port) in items(rule, "ports").iter().enumerate() {
                network_policy_port(port, &index(&ports_path, j), out);
            }
            let peers_path = child(&rp, peers);
            for (j, peer) in items(rule, peers).iter().enumerate() {
                network_policy_peer(peer, opts, &index(&peers_path, j), out);
            }
        }
    }
    let types = items(spec, "policyTypes");
    let types_path = "spec.policyTypes";
    if types.len() > 2 {
        // kube reports the `[]networking.PolicyType`, which it prints as JSON.
        out.push(invalid_shown(
            types_path,
            &json_value(&Value::Array(types.to_vec())),
            "may not specify more than two policyTypes",
        ));
        return;
    }
    for (i, t) in types.iter().enumerate() {
        let t = t.as_str().unwrap_or("");
        if !matches!(t, "Ingress" | "Egress") {
            out.push(not_supported(
                &index(types_path, i),
                &Value::String(t.to_owned()),
                &["Ingress", "Egress"],
            ));
        }
    }
}

/// `ValidateNetworkPolicyPort`.
fn network_policy_port(port: &Value, path: &str, out: &mut Vec<Cause>) {
    if let Some(protocol) = string(port, "protocol") {
        if !matches!(protocol, "TCP" | "UDP" | "SCTP") {
            out.push(not_supported(
                &child(path, "protocol"),
                &Value::String(protocol.to_owned()),
                &["TCP", "UDP", "SCTP"],
            ));
        }
    }
    let end = int(port, "endPort");
    let end_path = child(path, "endPort");
    let port_path = child(path, "port");
    match port.get("port") {
        Some(Value::Number(n)) => {
            let number = n.as_i64().unwrap_or(0);
            for msg in port_num(number) {
                out.push(invalid(&port_path, &Value::from(number), &msg));
            }
            if let Some(end) = end {
                if end < number {
                    // kube 1.34 shows `port`'s value here, not `endPort`'s.
                    out.push(invalid(
                        &end_path,
                        &Value::from(number),
                        "must be greater than or equal to `port`",
                    ));
                }
                for msg in port_num(end) {
                    out.push(invalid(&end_path, &Value::from(end), &msg));
                }
            }
        }
        Some(Value::String(name)) => {
            if let Some(end) = end {
                out.push(invalid(
                    &end_path,
                    &Value::from(end),
                    "may not be specified when `port` is non-numeric",
                ));
            }
            invalid_each(
                &port_path,
                name,
                crate::builtin::validation::field::port_name(name),
                out,
            );
        }
        _ => {
            if let Some(end) = end {
                out.push(invalid(
                    &end_path,
                    &Value::from(end),
                    "may not be specified when `port` is not specified",
                ));
            }
        }
    }
}

/// `ValidateNetworkPolicyPeer`: one of the selectors (both may be set) or an `ipBlock`.
fn network_policy_peer(peer: &Value, opts: &PolicyOpts<'_>, path: &str, out: &mut Vec<Cause>) {
    let mut peers = 0;
    for name in ["podSelector", "namespaceSelector"] {
        if let Some(sel) = object(peer, name) {
            peers += 1;
            label_selector(
                sel,
                &child(path, name),
                opts.allow_invalid_label_value_in_selector,
                out,
            );
        }
    }
    let block = object(peer, "ipBlock");
    if let Some(block) = block {
        peers += 1;
        ip_block(
            block,
            &child(path, "ipBlock"),
            opts.allow_cidrs_even_if_invalid,
            out,
        );
    }
    if peers == 0 {
        out.push(required(path, "must specify a peer"));
    } else if peers > 1 && block.is_some() {
        out.push(forbidden(
            path,
            "may not specify both ipBlock and another peer",
        ));
    }
}

/// `ValidateIPBlock`: a CIDR, and `except` CIDRs strictly inside it.
fn ip_block(block: &Value, path: &str, allowed: &HashSet<String>, out: &mut Vec<Cause>) {
    let cidr = str_of(block, "cidr");
    let cidr_path = child(path, "cidr");
    if cidr.is_empty() {
        out.push(required(&cidr_path, ""));
        return;
    }
    legacy_cidr(&cidr_path, cidr, allowed, out);
    let Some(net) = parse_cidr_sloppy(cidr) else {
        return;
    };
    let except_path = child(path, "except");
    for (i, except) in items(block, "except").iter().enumerate() {
        let except = except.as_str().unwrap_or("");
        let p = index(&except_path, i);
        legacy_cidr(&p, except, allowed, out);
        let Some(inner) = parse_cidr_sloppy(except) else {
            continue;
        };
        if !net.contains(&inner.ip) || net.ones >= inner.ones {
            out.push(invalid_str(&p, except, "must be a strict subset of `cidr`"));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::meta::DNS1123_SUBDOMAIN_MSG;
    use serde_json::json;

    fn msgs(causes: Vec<Cause>) -> Vec<String> {
        causes.iter().map(ToString::to_string).collect()
    }

    fn create(resource: &str, obj: Value) -> Vec<String> {
        msgs(validate(resource, &obj, None))
    }

    fn update(resource: &str, obj: Value, old: Value) -> Vec<String> {
        msgs(validate(resource, &obj, Some(&old)))
    }

    fn svc_path(path: &str, path_type: &str, backend: Value) -> Value {
        json!({"path": path, "pathType": path_type, "backend": backend})
    }

    #[test]
    fn sloppy_parsing_is_gos() {
        for ok in [
            "1.2.3.4",
            "010.001.0.1",
            "::",
            "1::",
            "::1",
            "1:2:3:4:5:6:7::",
            "1:2:3:4:5:6:7:8",
            "::ffff:1.2.3.4",
            "1:2:3:4:5:6:1.2.3.4",
            "::1.2.3.4",
            "fe80::abc",
        ] {
            assert!(is_ip_sloppy(ok), "{ok}");
        }
        for bad in [
            "",
            "1.2.3",
            "256.1.1.1",
            "1.2.3.4.",
            "1:2:3:4:5:6:7:8:9",
            "1::2::3",
            ":1::",
            "1:2:3:4:5:1.2.3.4",
            "1:2:3:4:5:6:7:8::",
            "fe80::1%eth0",
            "example.com",
            "12345::",
        ] {
            assert!(!is_ip_sloppy(bad), "{bad}");
        }
        assert!(parse_cidr_sloppy("10.0.0.0/08").is_some());
        assert!(parse_cidr_sloppy("010.0.0.1/24").is_some());
        assert!(parse_cidr_sloppy("2001:db8::/64").is_some());
        for bad in [
            "10.0.0.0/33",
            "10.0.0.0",
            "10.0.0.0/",
            "10.0.0.0/8x",
            "::/129",
        ] {
            assert!(parse_cidr_sloppy(bad).is_none(), "{bad}");
        }
        let net = parse_cidr_sloppy("10.0.0.0/8").unwrap();
        assert!(net.contains(&parse_cidr_sloppy("10.1.0.0/16").unwrap().ip));
        assert!(!net.contains(&parse_cidr_sloppy("11.0.0.0/16").unwrap().ip));
        // Go's `To4` makes an IPv4-mapped except comparable with an IPv4 cidr.
        assert!(net.contains(&parse_cidr_sloppy("::ffff:10.1.0.0/112").unwrap().ip));
        let v6 = parse_cidr_sloppy("2001:db8::/32").unwrap();
        assert!(v6.contains(&parse_cidr_sloppy("2001:db8:1::/48").unwrap().ip));
        assert!(!v6.contains(&parse_cidr_sloppy("10.0.0.0/8").unwrap().ip));
    }

    #[test]
    fn valid_ingress() {
        let ing = json!({
            "metadata": {"annotations": {"kubernetes.io/ingress.class": "nginx"}},
            "spec": {
                "ingressClassName": "nginx",
                "defaultBackend": {"resource": {"apiGroup": "k8s.example.com", "kind": "StorageBucket", "name": "static"}},
                "rules": [{"host": "foo.example.com", "http": {"paths": [
                    svc_path("/", "Prefix", json!({"service": {"name": "svc", "port": {"number": 80}}})),
                    svc_path("", "ImplementationSpecific", json!({"service": {"name": "svc", "port": {"name": "http"}}}))
                ]}}, {"host": "*.example.com"}],
                "tls": [{"hosts": ["*.example.com", "foo.example.com"], "secretName": "tls"}, {}]
            }
        });
        assert_eq!(create("ingresses", ing.clone()), Vec::<String>::new());
        assert_eq!(update("ingresses", ing.clone(), ing), Vec::<String>::new());
    }

    #[test]
    fn ingress_needs_rules_or_a_default_backend() {
        assert_eq!(
            create("ingresses", json!({"spec": {}})),
            vec!["spec: Invalid value: null: either `defaultBackend` or `rules` must be specified"]
        );
        assert_eq!(
            create("ingresses", json!({"spec": {"rules": []}})),
            vec!["spec: Invalid value: []: either `defaultBackend` or `rules` must be specified"]
        );
    }

    #[test]
    fn ingress_rules_paths_and_backends() {
        let ing = json!({"spec": {"rules": [{"host": "1.2.3.4", "http": {"paths": [
            svc_path("foo", "Exact", json!({"service": {"name": "svc", "port": {"number": 0}}})),
            svc_path("/a//b/..", "Prefix", json!({"service": {"name": "Svc", "port": {"name": "http", "number": 80}}})),
            svc_path("/x", "Regex", json!({})),
            json!({"path": "/y", "backend": {"service": {"name": "s"}}}),
            json!({"pathType": "ImplementationSpecific", "backend": {
                "resource": {"kind": "K", "name": "n"}, "service": {"name": "s"}}}),
            svc_path("/z", "Prefix", json!({"service": {"name": "", "port": {"number": 70000}}})),
            svc_path("/w", "Prefix", json!({"service": {"name": "s", "port": {"name": "HTTP"}}}))
        ]}}, {"host": "Foo", "http": {"paths": []}}]}});
        let dns1035 = &dns1035_label("Svc")[0];
        let p = "spec.rules[0].http.paths";
        assert_eq!(
            create("ingresses", ing),
            vec![
                "spec.rules[0].host: Invalid value: \"1.2.3.4\": must be a DNS name, not an IP address".to_owned(),
                format!("{p}[0].path: Invalid value: \"foo\": must be an absolute path"),
                format!("{p}[0].backend: Required value: port name or number is required"),
                format!("{p}[1].path: Invalid value: \"/a//b/..\": must not contain '//'"),
                format!("{p}[1].path: Invalid value: \"/a//b/..\": cannot end with '/..'"),
                format!("{p}[1].backend.service.name: Invalid value: \"Svc\": {dns1035}"),
                format!("{p}[1].backend: Invalid value: \"\": cannot set both port name & port number"),
                format!("{p}[2].pathType: Unsupported value: \"Regex\": supported values: \"Exact\", \"ImplementationSpecific\", \"Prefix\""),
                format!("{p}[2].backend: Invalid value: \"\": resource or service backend is required"),
                format!("{p}[3].pathType: Required value: pathType must be specified"),
                format!("{p}[4].backend: Invalid value: \"\": cannot set both resource and service backends"),
                format!("{p}[5].backend.service.name: Required value"),
                format!("{p}[5].backend.service.port.number: Invalid value: 70000: must be between 1 and 65535, inclusive"),
                format!("{p}[6].backend.service.port.name: Invalid value: \"HTTP\": must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)"),
                format!("{p}[6].backend.service.port.name: Invalid value: \"HTTP\": must contain at least one letter (a-z)"),
                format!("spec.rules[1].host: Invalid value: \"Foo\": {DNS1123_SUBDOMAIN_MSG}"),
                "spec.rules[1].http.paths: Required value".to_owned(),
            ]
        );
    }

    #[test]
    fn ingress_tls_class_name_and_annotation() {
        let ing = json!({
            "metadata": {"annotations": {"kubernetes.io/ingress.class": "a"}},
            "spec": {
                "ingressClassName": "B",
                "defaultBackend": {"resource": {"apiGroup": "", "kind": ".", "name": "a/b%"}},
                "tls": [{"hosts": ["*.foo.*", "Bar"], "secretName": "Bad_Secret"}]
            }
        });
        let wildcard = &wildcard_dns1123_subdomain("*.foo.*")[0];
        assert_eq!(
            create("ingresses", ing.clone()),
            vec![
                format!("spec.defaultBackend.resource.apiGroup: Invalid value: \"\": {DNS1123_SUBDOMAIN_MSG}"),
                "spec.defaultBackend.resource.kind: Invalid value: \".\": may not be '.'".to_owned(),
                "spec.defaultBackend.resource.name: Invalid value: \"a/b%\": may not contain '/'".to_owned(),
                "spec.defaultBackend.resource.name: Invalid value: \"a/b%\": may not contain '%'".to_owned(),
                format!("spec.tls[0].hosts[0]: Invalid value: \"*.foo.*\": {wildcard}"),
                format!("spec.tls[0].hosts[1]: Invalid value: \"Bar\": {DNS1123_SUBDOMAIN_MSG}"),
                format!("spec.tls[0].secretName: Invalid value: \"Bad_Secret\": {DNS1123_SUBDOMAIN_MSG}"),
                format!("spec.ingressClassName: Invalid value: \"B\": {DNS1123_SUBDOMAIN_MSG}"),
                "annotations.kubernetes.io/ingress.class: Invalid value: \"a\": must match `ingressClassName` when both are specified".to_owned(),
            ]
        );
        // On update the annotation is not compared, and a stored invalid secret name stays.
        let m = update("ingresses", ing.clone(), ing);
        assert_eq!(m.len(), 7, "{m:?}");
        assert!(!m
            .iter()
            .any(|c| c.contains("secretName") || c.starts_with("annotations")));
        let stored = json!({"spec": {"defaultBackend": {"service": {"name": "s", "port": {"number": 80}}},
                                     "tls": [{"secretName": "ok"}]}});
        let changed = json!({"spec": {"defaultBackend": {"service": {"name": "s", "port": {"number": 80}}},
                                      "tls": [{"secretName": "Not_Ok"}]}});
        assert_eq!(
            update("ingresses", changed, stored),
            vec![format!(
                "spec.tls[0].secretName: Invalid value: \"Not_Ok\": {DNS1123_SUBDOMAIN_MSG}"
            )]
        );
    }

    #[test]
    fn ingress_wildcard_host_rule_ratchet() {
        let bad_rule = |name: &str| {
            json!({"spec": {"rules": [{"host": "*.foo.com", "http": {"paths": [
                svc_path("/", "Prefix", json!({"service": {"name": name, "port": {}}}))]}}]}})
        };
        assert_eq!(
            create("ingresses", bad_rule("s")),
            vec!["spec.rules[0].http.paths[0].backend: Required value: port name or number is required"]
        );
        // The stored object has an invalid wildcard-host rule: such rules are not checked.
        assert_eq!(
            update("ingresses", bad_rule("Other"), bad_rule("s")),
            Vec::<String>::new()
        );
        let good = json!({"spec": {"rules": [{"host": "*.foo.com", "http": {"paths": [
            svc_path("/", "Prefix", json!({"service": {"name": "s", "port": {"number": 80}}}))]}}]}});
        assert_eq!(update("ingresses", bad_rule("s"), good).len(), 1);
    }

    #[test]
    fn ingress_relaxed_service_name_ratchet() {
        let with_name = |name: &str| json!({"spec": {"defaultBackend": {"service": {"name": name, "port": {"number": 80}}}}});
        let dns1035 = &dns1035_label("1svc")[0];
        let expected = vec![format!(
            "spec.defaultBackend.service.name: Invalid value: \"1svc\": {dns1035}"
        )];
        assert_eq!(create("ingresses", with_name("1svc")), expected);
        assert_eq!(
            update("ingresses", with_name("1svc"), with_name("svc")),
            expected
        );
        // A stored DNS-1123 (not DNS-1035) name relaxes the check to a DNS-1123 label.
        assert_eq!(
            update("ingresses", with_name("2svc"), with_name("1svc")),
            Vec::<String>::new()
        );
        let dns1123 = &dns1123_label("Bad")[0];
        assert_eq!(
            update("ingresses", with_name("Bad"), with_name("1svc")),
            vec![format!(
                "spec.defaultBackend.service.name: Invalid value: \"Bad\": {dns1123}"
            )]
        );
    }

    #[test]
    fn ingress_status_load_balancer() {
        let status = |ingress: Value| json!({"status": {"loadBalancer": {"ingress": ingress}}});
        let new = status(json!([
            {"ip": "010.1.2.3", "ports": [{"port": 80, "protocol": "TCP"}]},
            {"ip": "not-an-ip"},
            {"hostname": "1.2.3.4"},
            {"hostname": "Foo"},
            {"ip": "2001:db8::1", "hostname": "lb.example.com"}
        ]));
        assert_eq!(
            msgs(validate_status("ingresses", &new, &json!({}))),
            vec![
                "status.loadBalancer.ingress[1].ip: Invalid value: \"not-an-ip\": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)".to_owned(),
                "status.loadBalancer.ingress[2].hostname: Invalid value: \"1.2.3.4\": must be a DNS name, not an IP address".to_owned(),
                format!("status.loadBalancer.ingress[3].hostname: Invalid value: \"Foo\": {DNS1123_SUBDOMAIN_MSG}"),
            ]
        );
        // An IP already stored is not checked again.
        let old = status(json!([{"ip": "not-an-ip"}]));
        assert_eq!(msgs(validate_status("ingresses", &new, &old)).len(), 2);
        assert!(validate_status("networkpolicies", &new, &old).is_empty());
        assert!(validate_status("ingressclasses", &new, &old).is_empty());
    }

    #[test]
    fn ingress_class_spec() {
        let class = |spec: Value| json!({"spec": spec});
        let ok = class(
            json!({"controller": "example.com/ingress-controller", "parameters": {
            "apiGroup": "k8s.example.com", "kind": "IngressParameters", "name": "external-lb",
            "scope": "Namespace", "namespace": "default"}}),
        );
        assert_eq!(create("ingressclasses", ok.clone()), Vec::<String>::new());
        assert_eq!(
            update("ingressclasses", ok.clone(), ok),
            Vec::<String>::new()
        );
        assert_eq!(
            create("ingressclasses", class(json!({"controller": "nodomain", "parameters": {
                "kind": "", "name": "..", "scope": "Cluster", "namespace": "x"}}))),
            vec![
                "spec.controller: Invalid value: \"nodomain\": must be a domain-prefixed path (such as \"acme.io/foo\")",
                "spec.parameters.kind: Required value",
                "spec.parameters.name: Invalid value: \"..\": may not be '..'",
                "spec.parameters.namespace: Forbidden: `parameters.scope` is set to 'Cluster'",
            ]
        );
        assert_eq!(
            create("ingressclasses", class(json!({"controller": "Example.com/a b"}))),
            vec![
                format!("spec.controller: Invalid value: \"Example.com\": {DNS1123_SUBDOMAIN_MSG}"),
                "spec.controller: Invalid value: \"a b\": Invalid path (regex used for validation is '[A-Za-z0-9/\\-._~%!$&'()*+,;=:]+')".to_owned(),
            ]
        );
        assert_eq!(
            create("ingressclasses", class(json!({}))),
            vec!["spec.controller: Required value"]
        );
        let long = format!("example.com/{}", "a".repeat(250));
        assert_eq!(
            create("ingressclasses", class(json!({"controller": long}))),
            vec!["spec.controller: Too long: may not be more than 250 bytes"]
        );
        let params = |p: Value| class(json!({"controller": "example.com/c", "parameters": p}));
        assert_eq!(
            create("ingressclasses", params(json!({"kind": "K", "name": "n", "scope": "Global"}))),
            vec!["spec.parameters.scope: Unsupported value: \"Global\": supported values: \"Cluster\", \"Namespace\""]
        );
        assert_eq!(
            create("ingressclasses", params(json!({"kind": "K", "name": "n"}))),
            vec!["spec.parameters.scope: Required value"]
        );
        assert_eq!(
            create("ingressclasses", params(json!({"kind": "K", "name": "n", "scope": "Namespace"}))),
            vec!["spec.parameters.namespace: Required value: `parameters.scope` is set to 'Namespace'"]
        );
        let dns1123 = &dns1123_label("Bad.Ns")[0];
        assert_eq!(
            create(
                "ingressclasses",
                params(
                    json!({"kind": "K", "name": "n", "scope": "Namespace", "namespace": "Bad.Ns"})
                )
            ),
            vec![format!(
                "spec.parameters.namespace: Invalid value: \"Bad.Ns\": {dns1123}"
            )]
        );
    }

    #[test]
    fn ingress_class_controller_is_immutable() {
        let old = json!({"spec": {"controller": "example.com/a"}});
        let new = json!({"spec": {"controller": "example.com/b"}});
        assert_eq!(
            update("ingressclasses", new, old.clone()),
            vec!["spec.controller: Invalid value: \"example.com/b\": field is immutable"]
        );
        assert_eq!(
            update("ingressclasses", json!({"spec": {}}), old),
            vec![
                "spec.controller: Invalid value: \"\": field is immutable",
                "spec.controller: Required value"
            ]
        );
    }

    #[test]
    fn valid_network_policy() {
        let np = json!({"spec": {
            "podSelector": {"matchLabels": {"app": "db"}},
            "ingress": [{
                "from": [
                    {"ipBlock": {"cidr": "172.17.0.0/16", "except": ["172.17.1.0/24"]}},
                    {"namespaceSelector": {"matchLabels": {"project": "p"}}, "podSelector": {"matchExpressions": [
                        {"key": "role", "operator": "In", "values": ["frontend"]},
                        {"key": "tier", "operator": "Exists"}]}}
                ],
                "ports": [{"protocol": "TCP", "port": 6379}, {"protocol": "UDP", "port": "dns"},
                          {"protocol": "SCTP", "port": 32000, "endPort": 32768}, {"protocol": "TCP"}]
            }],
            "egress": [{"to": [{"ipBlock": {"cidr": "2001:db8::/32", "except": ["2001:db8:1::/48"]}}]}],
            "policyTypes": ["Ingress", "Egress"]
        }});
        assert_eq!(create("networkpolicies", np.clone()), Vec::<String>::new());
        assert_eq!(
            update("networkpolicies", np.clone(), np),
            Vec::<String>::new()
        );
        assert_eq!(
            create("networkpolicies", json!({"spec": {}})),
            Vec::<String>::new()
        );
    }

    #[test]
    fn network_policy_spec_errors() {
        let np = json!({"spec": {
            "podSelector": {
                "matchLabels": {"app": "bad value"},
                "matchExpressions": [
                    {"key": "k", "operator": "In", "values": ["bad value"]},
                    {"key": "bad key!", "operator": "Foo"},
                    {"key": "k", "operator": "In"},
                    {"key": "k", "operator": "Exists", "values": ["v"]}
                ]
            },
            "ingress": [{
                "ports": [
                    {"protocol": "ICMP", "port": 80, "endPort": 70},
                    {"protocol": "TCP", "port": "http", "endPort": 90},
                    {"protocol": "TCP", "endPort": 90},
                    {"protocol": "TCP", "port": 0},
                    {"protocol": "TCP", "port": ""}
                ],
                "from": [
                    {},
                    {"podSelector": {}, "ipBlock": {"cidr": "10.0.0.0/8",
                        "except": ["10.1.0.0/16", "11.0.0.0/16", "10.0.0.0/8", "bogus"]}},
                    {"ipBlock": {"cidr": ""}},
                    {"ipBlock": {"cidr": "10.0.0.0/33", "except": ["nope"]}}
                ]
            }],
            "egress": [{"to": [{"ipBlock": {"cidr": "010.0.0.0/8"}}]}],
            "policyTypes": ["Ingress", "Egress", "Other"]
        }});
        let label_msg = &label_value("bad value")[0];
        let key_msg = &qualified_name("bad key!")[0];
        let sel = "spec.podSelector";
        let ports = "spec.ingress[0].ports";
        let from = "spec.ingress[0].from";
        let cidr_msg = "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)";
        assert_eq!(
            create("networkpolicies", np),
            vec![
                format!("{sel}.matchLabels: Invalid value: \"bad value\": {label_msg}"),
                format!("{sel}.matchExpressions[0].values[0]: Invalid value: \"bad value\": {label_msg}"),
                format!("{sel}.matchExpressions[1].operator: Invalid value: \"Foo\": not a valid selector operator"),
                format!("{sel}.matchExpressions[1].key: Invalid value: \"bad key!\": {key_msg}"),
                format!("{sel}.matchExpressions[2].values: Required value: must be specified when `operator` is 'In' or 'NotIn'"),
                format!("{sel}.matchExpressions[3].values: Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'"),
                format!("{ports}[0].protocol: Unsupported value: \"ICMP\": supported values: \"TCP\", \"UDP\", \"SCTP\""),
                format!("{ports}[0].endPort: Invalid value: 80: must be greater than or equal to `port`"),
                format!("{ports}[1].endPort: Invalid value: 90: may not be specified when `port` is non-numeric"),
                format!("{ports}[2].endPort: Invalid value: 90: may not be specified when `port` is not specified"),
                format!("{ports}[3].port: Invalid value: 0: must be between 1 and 65535, inclusive"),
                format!("{ports}[4].port: Invalid value: \"\": must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)"),
                format!("{ports}[4].port: Invalid value: \"\": must contain at least one letter (a-z)"),
                format!("{from}[0]: Required value: must specify a peer"),
                format!("{from}[1].ipBlock.except[1]: Invalid value: \"11.0.0.0/16\": must be a strict subset of `cidr`"),
                format!("{from}[1].ipBlock.except[2]: Invalid value: \"10.0.0.0/8\": must be a strict subset of `cidr`"),
                format!("{from}[1].ipBlock.except[3]: Invalid value: \"bogus\": {cidr_msg}"),
                format!("{from}[1]: Forbidden: may not specify both ipBlock and another peer"),
                format!("{from}[2].ipBlock.cidr: Required value"),
                format!("{from}[3].ipBlock.cidr: Invalid value: \"10.0.0.0/33\": {cidr_msg}"),
                "spec.policyTypes: Invalid value: [\"Ingress\",\"Egress\",\"Other\"]: may not specify more than two policyTypes".to_owned(),
            ]
        );
        assert_eq!(
            create("networkpolicies", json!({"spec": {"policyTypes": ["Ingress", "Bogus"]}})),
            vec!["spec.policyTypes[1]: Unsupported value: \"Bogus\": supported values: \"Ingress\", \"Egress\""]
        );
    }

    #[test]
    fn network_policy_update_ratchets_selector_values_and_repeats_causes() {
        let with_values = |pod: &str, peer: &str| {
            json!({"spec": {
                "podSelector": {"matchExpressions": [{"key": "k", "operator": "In", "values": [pod]}]},
                "ingress": [{"from": [{"namespaceSelector": {"matchExpressions": [
                    {"key": "k", "operator": "NotIn", "values": [peer]}]}}]}]
            }})
        };
        let label_msg = &label_value("also bad")[0];
        assert_eq!(
            create("networkpolicies", with_values("ok", "also bad")),
            vec![format!(
                "spec.ingress[0].from[0].namespaceSelector.matchExpressions[0].values[0]: Invalid value: \"also bad\": {label_msg}"
            )]
        );
        // A stored pod selector with an invalid value allows invalid values in every selector.
        assert_eq!(
            update(
                "networkpolicies",
                with_values("bad value", "also bad"),
                with_values("bad value", "ok")
            ),
            Vec::<String>::new()
        );
        // Otherwise kube's two passes report each problem twice.
        let expected = format!(
            "spec.ingress[0].from[0].namespaceSelector.matchExpressions[0].values[0]: Invalid value: \"also bad\": {label_msg}"
        );
        assert_eq!(
            update(
                "networkpolicies",
                with_values("ok", "also bad"),
                with_values("ok", "ok")
            ),
            vec![expected.clone(), expected]
        );
        // A stored invalid CIDR is allowed by the second pass only.
        let block =
            |cidr: &str| json!({"spec": {"egress": [{"to": [{"ipBlock": {"cidr": cidr}}]}]}});
        assert_eq!(
            update("networkpolicies", block("bogus"), block("bogus")),
            vec!["spec.egress[0].to[0].ipBlock.cidr: Invalid value: \"bogus\": must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)"]
        );
    }

    fn messages(causes: Vec<Cause>) -> Vec<String> {
        causes.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn ip_addresses_need_a_parent_that_stays() {
        assert_eq!(
            messages(validate("ipaddresses", &json!({}), None)),
            ["spec.parentRef: Required value"]
        );
        let ip = |r: Value| json!({"spec": {"parentRef": r}});
        assert_eq!(
            messages(validate(
                "ipaddresses",
                &ip(json!({"group": "Bad_Group", "resource": "a/b", "namespace": ".."})),
                None
            )),
            [
                format!(
                    "spec.parentRef.group: Invalid value: \"Bad_Group\": {DNS1123_SUBDOMAIN_MSG}"
                ),
                "spec.parentRef.resource: Invalid value: \"a/b\": may not contain '/'".to_owned(),
                "spec.parentRef.name: Required value".to_owned(),
                "spec.parentRef.namespace: Invalid value: \"..\": may not be '..'".to_owned(),
            ]
        );
        let svc = ip(json!({"resource": "services", "name": "a", "namespace": "d"}));
        assert!(validate("ipaddresses", &svc, None).is_empty());
        let other = ip(json!({"resource": "services", "name": "b", "namespace": "d"}));
        let changed = messages(validate("ipaddresses", &other, Some(&svc)));
        assert_eq!(
            changed,
            ["spec.parentRef: Invalid value: {\"Group\":\"\",\"Resource\":\"services\",\"Namespace\":\"d\",\"Name\":\"b\"}: field is immutable"]
        );
    }

    #[test]
    fn service_cidrs_hold_one_or_two_families_and_only_grow_to_dual_stack() {
        let sc = |c: Value| json!({"spec": {"cidrs": c}});
        assert_eq!(
            messages(validate("servicecidrs", &sc(json!([])), None)),
            ["spec.cidrs: Required value: at least one CIDR required"]
        );
        assert_eq!(
            messages(validate("servicecidrs", &sc(json!(["10.0.0.0/8", "10.1.0.0/16"])), None)),
            ["spec.cidrs: Invalid value: [\"10.0.0.0/8\",\"10.1.0.0/16\"]: may specify no more than one IP for each IP family, i.e 192.168.0.0/24 and 2001:db8::/64"]
        );
        assert_eq!(
            messages(validate(
                "servicecidrs",
                &sc(json!(["10.0.0.0/8", "fd00::/108", "10.1.0.0/16"])),
                None
            )),
            ["spec.cidrs: Invalid value: {\"CIDRs\":[\"10.0.0.0/8\",\"fd00::/108\",\"10.1.0.0/16\"]}: may only hold up to 2 values"]
        );
        assert_eq!(
            messages(validate("servicecidrs", &sc(json!(["10.0.0.1/8"])), None)),
            ["spec.cidrs[0]: Invalid value: \"10.0.0.1/8\": must not have bits set beyond the prefix length"]
        );
        let one = sc(json!(["10.0.0.0/8"]));
        assert!(validate("servicecidrs", &one, None).is_empty());
        assert!(validate(
            "servicecidrs",
            &sc(json!(["10.0.0.0/8", "fd00::/108"])),
            Some(&one)
        )
        .is_empty());
        assert_eq!(
            messages(validate(
                "servicecidrs",
                &sc(json!(["10.2.0.0/16"])),
                Some(&one)
            )),
            ["spec.cidrs[0]: Invalid value: \"10.2.0.0/16\": field is immutable"]
        );
        let two = sc(json!(["10.0.0.0/8", "fd00::/108"]));
        assert_eq!(
            messages(validate("servicecidrs", &one, Some(&two))),
            ["spec.cidrs: Invalid value: [\"10.0.0.0/8\"]: field is immutable"]
        );
    }

    #[test]
    fn other_resources_are_not_validated_here() {
        assert!(validate("ingresses", &json!(null), None).len() == 1);
        assert!(validate("networkpolicies", &json!("junk"), Some(&json!(7))).is_empty());
    }
}
