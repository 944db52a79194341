//! kube's validation (kube 1.34) of Services, Endpoints and EndpointSlices, with kube's field
//! paths, messages and order of causes: `ValidateServiceCreate` / `ValidateServiceUpdate` /
//! `ValidateServiceStatusUpdate` and `ValidateEndpointsCreate` / `ValidateEndpointsUpdate`
//! (`pkg/apis/core/validation`), `ValidateEndpointSliceCreate` / `ValidateEndpointSliceUpdate`
//! (`pkg/apis/discovery/validation`).
//!
//! **Services and allocation.** kube-apiserver validates a Service only after its registry
//! (`pkg/registry/core/service/storage`, `BeginCreate` / `BeginUpdate` before the strategy's
//! `Validate`) has prepared it: `patchAllocatedValues` (an update that leaves out the cluster
//! IPs, node ports or health check node port keeps the stored ones), `normalizeClusterIPs`
//! (`clusterIP` alone becomes `clusterIPs: [clusterIP]`), the allocation (whose
//! `initIPFamilyFields` first runs `ValidateServiceClusterIPsRelatedFields` and answers with
//! those errors alone) and the strategy's `dropTypeDependentFields` (a type change drops what the
//! new type no longer needs when the client left it as stored). turtles validates *before* its
//! allocator (`crate::allocator`, run after admission in `Service::create` / `update`), so
//! `kube_view` applies those steps to a copy of the spec and validates that copy. What this
//! assumes about allocation:
//! - not yet happened: an empty `clusterIP` / `clusterIPs`, absent `ipFamilies` /
//!   `ipFamilyPolicy`, `nodePort: 0` and, for a LoadBalancer with `externalTrafficPolicy: Local`,
//!   `healthCheckNodePort: 0` are accepted (kube's `healthCheckNodePort: Required value` can only
//!   fire after allocation, so it is not reported);
//! - done before (update): the stored values an update leaves out are patched in first, so the
//!   immutability of `clusterIPs`, `ipFamilies` and `healthCheckNodePort` compares what kube
//!   compares.
//!
//! Left to the allocator, which makes these checks with kube's message: a `nodePort` on a
//! ClusterIP Service (`Forbidden: may not be used when ...`; reported there alone, after the
//! other causes are fixed, where kube lists it with them), the range and conflicts of requested
//! IPs and ports, and the single-stack refusals. Reported here although the allocator has a
//! copy: "first value must match" (part of the allocator's pre-validation in kube; without it an
//! update naming another primary IP in `clusterIPs` alone would get the later "may not change
//! once set") and `spec.clusterIPs[i]`'s "may not change once set" (the allocator answers an
//! update that changes only `clusterIP` with "first value must match", kube with this).
//!
//! **Defaults this relies on** (kube's `SetDefaults_Service` / `SetDefaults_EndpointPort`):
//! three kube checks can only fire when a default is missing, so they are not reported, and
//! turtles' `builtin::defaults` lacks those defaults: `sessionAffinityConfig` with
//! `sessionAffinity: None` (kube drops it: `Forbidden: must not be set when session affinity is
//! None`), `externalTrafficPolicy` of a ClusterIP Service with `externalIPs` (kube defaults it to
//! `Cluster`: `Required value`), and `status.loadBalancer.ingress[i].ipMode` of a LoadBalancer
//! (kube defaults it to `VIP`: "Required value: must be specified when `ip` is set").
//!
//! **IPs and CIDRs** are kube's "legacy" fields, checked as `IsValidIPForLegacyField` /
//! `IsValidCIDRForLegacyField` do with the `StrictIPCIDRValidation` gate off (1.34's default): by
//! kube's sloppy parser (Go 1.16's `net.ParseIP` / `ParseCIDR`, ported below), which takes IPv4
//! octets with leading zeros. With the gate off kube ratchets nothing, so neither does this.
//!
//! Values kube prints through `json.Marshal` (apimachinery 0.34: the `[]string` of the cluster
//! IPs, a `*string`, the `core.ServicePort` key of a duplicate port) are printed as its JSON:
//! `["10.96.0.5"]`, `null` for a nil slice or pointer, `{"Name":"",...}`.

use std::collections::{HashMap, HashSet};

use serde_json::{json, Value};

use super::field::{
    child, dns1123_label, dns1123_subdomain, duplicate, forbidden, immutable, index, invalid,
    invalid_json, invalid_shown, invalid_str, items, json_opt, json_value, label_value,
    not_supported, port_num, qualified_name, required, str_of, struct_json, too_many,
};
use super::goip::{is_ipv6_string, parse_cidr_sloppy, parse_ip16, to4_16};
use crate::model::status::Cause;

/// The group of EndpointSlices.
pub const DISCOVERY_GROUP: &str = "discovery.k8s.io";

static NULL: Value = Value::Null;

const IP_MSG: &str = "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)";
const CIDR_MSG: &str = "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)";
/// `supportedPortProtocols`, in `sets.List` order.
const PROTOCOLS: [&str; 3] = ["SCTP", "TCP", "UDP"];
const SESSION_AFFINITIES: [&str; 2] = ["ClientIP", "None"];
const SERVICE_TYPES: [&str; 4] = ["ClusterIP", "ExternalName", "LoadBalancer", "NodePort"];
const TRAFFIC_POLICIES: [&str; 2] = ["Cluster", "Local"];
const IP_FAMILIES: [&str; 2] = ["IPv4", "IPv6"];
const IP_FAMILY_POLICIES: [&str; 3] = ["PreferDualStack", "RequireDualStack", "SingleStack"];
/// The `trafficDistribution` values with `PreferSameTrafficDistribution` on (beta, on by default
/// in 1.34), in kube's order.
const TRAFFIC_DISTRIBUTIONS: [&str; 3] = ["PreferClose", "PreferSameZone", "PreferSameNode"];
const LB_IP_MODES: [&str; 2] = ["Proxy", "VIP"];
const ADDRESS_TYPES: [&str; 3] = ["FQDN", "IPv4", "IPv6"];
/// `core.MaxClientIPServiceAffinitySeconds`.
const MAX_AFFINITY_SECONDS: i64 = 86400;
const ANNOTATION_SOURCE_RANGES: &str = "service.beta.kubernetes.io/load-balancer-source-ranges";
const ANNOTATION_TOPOLOGY_MODE: &str = "service.kubernetes.io/topology-mode";
const ANNOTATION_TOPOLOGY_HINTS: &str = "service.kubernetes.io/topology-aware-hints";
const MAX_ENDPOINTS: usize = 1000;
const MAX_ADDRESSES: usize = 100;
const MAX_SLICE_PORTS: usize = 20000;
const MAX_ZONE_HINTS: usize = 8;
const MAX_NODE_HINTS: usize = 8;

/// A create (`old` None) or an update (`old` the stored object) of `group`/`resource`: kube's
/// `ValidateServiceCreate` / `ValidateServiceUpdate`, `ValidateEndpointsCreate` /
/// `ValidateEndpointsUpdate`, `ValidateEndpointSliceCreate` / `ValidateEndpointSliceUpdate`.
pub fn validate(group: &str, resource: &str, obj: &Value, old: Option<&Value>) -> Vec<Cause> {
    match (group, resource) {
        ("", "services") => service(obj, old),
        ("", "endpoints") => endpoints(obj),
        (DISCOVERY_GROUP, "endpointslices") => endpoint_slice(obj, old),
        _ => Vec::new(),
    }
}

/// An update through `/status`: kube's `ValidateServiceStatusUpdate` (Endpoints and
/// EndpointSlices have no status subresource).
pub fn validate_status(group: &str, resource: &str, obj: &Value, old: &Value) -> Vec<Cause> {
    match (group, resource) {
        ("", "services") => service_status(obj, old),
        _ => Vec::new(),
    }
}

// ---- JSON access ----

/// `v.spec`, or null.
fn spec_of(v: &Value) -> &Value {
    v.get("spec").filter(|s| s.is_object()).unwrap_or(&NULL)
}

/// The string at `v[name]` (a Go `*string` that is set), `None` when absent or null.
fn string<'a>(v: &'a Value, name: &str) -> Option<&'a str> {
    v.get(name).and_then(Value::as_str)
}

/// The integer at `v[name]`, 0 when absent (Go's zero value).
fn int(v: &Value, name: &str) -> i64 {
    v.get(name).and_then(Value::as_i64).unwrap_or(0)
}

/// Whether `v[name]` is set (a Go pointer that is not nil).
fn is_set(v: &Value, name: &str) -> bool {
    v.get(name).is_some_and(|x| !x.is_null())
}

/// The string array at `v[name]` (non-strings as `""`), empty when absent.
fn strings(v: &Value, name: &str) -> Vec<String> {
    items(v, name)
        .iter()
        .map(|x| x.as_str().unwrap_or("").to_owned())
        .collect()
}

/// One `Invalid value: "value": msg` per message.
fn invalid_each(path: &str, value: &str, msgs: Vec<String>, out: &mut Vec<Cause>) {
    for msg in msgs {
        out.push(invalid_str(path, value, &msg));
    }
}

/// The JSON of a Go slice or pointer at `v[name]`, as kube's field errors print it: `null`
/// when absent (nil).
fn json_at(v: &Value, name: &str) -> String {
    json_opt(v.get(name).filter(|x| !x.is_null()))
}

/// A port's `protocol`: required, one of TCP, UDP, SCTP.
fn protocol(port: &Value, path: &str, out: &mut Vec<Cause>) {
    let p = child(path, "protocol");
    match string(port, "protocol").unwrap_or("") {
        "" => out.push(required(&p, "")),
        proto if !PROTOCOLS.contains(&proto) => {
            out.push(not_supported(&p, &json!(proto), &PROTOCOLS));
        }
        _ => {}
    }
}

/// Core's `IsValidIPForLegacyField` with `StrictIPCIDRValidation` off.
fn legacy_ip(path: &str, value: &str, out: &mut Vec<Cause>) {
    if parse_ip16(value).is_none() {
        out.push(invalid_str(path, value, IP_MSG));
    }
}

/// `ValidateNonSpecialIP` / `ValidateEndpointIP` (the same checks): not unspecified, loopback,
/// link-local or link-local multicast.
fn non_special_ip(value: &str, path: &str, out: &mut Vec<Cause>) {
    let Some(ip) = parse_ip16(value) else {
        out.push(invalid_str(path, value, "must be a valid IP address"));
        return;
    };
    let v4 = to4_16(&ip);
    let unspecified = match v4 {
        Some(b) => b == [0, 0, 0, 0],
        None => ip.iter().all(|&b| b == 0),
    };
    let loopback = match v4 {
        Some(b) => b[0] == 127,
        None => ip.iter().take(15).all(|&b| b == 0) && ip[15] == 1,
    };
    let link_local = match v4 {
        Some(b) => b[0] == 169 && b[1] == 254,
        None => ip[0] == 0xFE && ip[1] & 0xC0 == 0x80,
    };
    let link_local_multicast = match v4 {
        Some(b) => b[0] == 224 && b[1] == 0 && b[2] == 0,
        None => ip[0] == 0xFF && ip[1] & 0x0F == 0x02,
    };
    if unspecified {
        out.push(invalid_str(
            path,
            value,
            &format!("may not be unspecified ({value})"),
        ));
    }
    if loopback {
        out.push(invalid_str(
            path,
            value,
            "may not be in the loopback range (127.0.0.0/8, ::1/128)",
        ));
    }
    if link_local {
        out.push(invalid_str(
            path,
            value,
            "may not be in the link-local range (169.254.0.0/16, fe80::/10)",
        ));
    }
    if link_local_multicast {
        out.push(invalid_str(
            path,
            value,
            "may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)",
        ));
    }
}

// ---- Service: the object kube validates ----

fn service_type(spec: &Value) -> &str {
    str_of(spec, "type")
}

/// `needsClusterIP`: every type but ExternalName.
fn needs_cluster_ip(spec: &Value) -> bool {
    service_type(spec) != "ExternalName"
}

/// `needsNodePort`: NodePort and LoadBalancer.
fn needs_node_port(spec: &Value) -> bool {
    matches!(service_type(spec), "NodePort" | "LoadBalancer")
}

/// `apiservice.NeedsHealthCheck`: a LoadBalancer with `externalTrafficPolicy: Local`.
fn needs_health_check(spec: &Value) -> bool {
    service_type(spec) == "LoadBalancer" && str_of(spec, "externalTrafficPolicy") == "Local"
}

/// `apiservice.ExternallyAccessible`: NodePort, LoadBalancer, or ClusterIP with external IPs.
fn externally_accessible(spec: &Value) -> bool {
    match service_type(spec) {
        "NodePort" | "LoadBalancer" => true,
        "ClusterIP" => !items(spec, "externalIPs").is_empty(),
        _ => false,
    }
}

/// `isHeadlessService`: `clusterIPs` is exactly `["None"]`.
fn is_headless(spec: &Value) -> bool {
    let ips = items(spec, "clusterIPs");
    ips.len() == 1 && ips.first().and_then(Value::as_str) == Some("None")
}

/// The node ports set on the ports of `spec`.
fn node_ports(spec: &Value) -> HashSet<i64> {
    items(spec, "ports")
        .iter()
        .map(|p| int(p, "nodePort"))
        .filter(|&n| n != 0)
        .collect()
}

/// Set `spec[name]` (an object) to `value`.
fn set(spec: &mut Value, name: &str, value: Value) {
    if let Some(m) = spec.as_object_mut() {
        m.insert(name.to_owned(), value);
    }
}

/// Remove `spec[name]`.
fn unset(spec: &mut Value, name: &str) {
    if let Some(m) = spec.as_object_mut() {
        m.remove(name);
    }
}

/// The spec kube validates: the request's, after the registry's `patchAllocatedValues` and
/// `normalizeClusterIPs` and the strategy's `dropTypeDependentFields` (update), or
/// `normalizeClusterIPs` (create). Nothing allocated is filled in.
fn kube_view(obj: &Value, old: Option<&Value>) -> Value {
    let mut spec = match spec_of(obj) {
        Value::Object(m) => Value::Object(m.clone()),
        _ => json!({}),
    };
    match old {
        None => normalize_created(&mut spec),
        Some(old) => {
            let old = old_view(old);
            patch_allocated_values(&mut spec, &old);
            normalize_updated(&mut spec, &old);
            drop_type_dependent_fields(&mut spec, &old);
        }
    }
    spec
}

/// The stored spec as kube's `defaultOnReadService` presents it (`clusterIPs` from `clusterIP`
/// for an object stored before the plural field).
fn old_view(old: &Value) -> Value {
    let mut spec = match spec_of(old) {
        Value::Object(m) => Value::Object(m.clone()),
        _ => json!({}),
    };
    normalize_created(&mut spec);
    spec
}

/// `normalizeClusterIPs` of a create: `clusterIP` alone sets `clusterIPs` (a client setting only
/// the plural must set both).
fn normalize_created(spec: &mut Value) {
    let ip = str_of(spec, "clusterIP").to_owned();
    if !ip.is_empty() && items(spec, "clusterIPs").is_empty() {
        set(spec, "clusterIPs", json!([ip]));
    }
}

/// `patchAllocatedValues`: the cluster IPs, node ports (by port name, unless another port took
/// them) and health check node port an update leaves out are the stored ones.
fn patch_allocated_values(new: &mut Value, old: &Value) {
    if needs_cluster_ip(old) && needs_cluster_ip(new) {
        if str_of(new, "clusterIP").is_empty() {
            if let Some(ip) = string(old, "clusterIP").filter(|s| !s.is_empty()) {
                set(new, "clusterIP", json!(ip));
            }
        }
        if items(new, "clusterIPs").is_empty() && !items(old, "clusterIPs").is_empty() {
            set(
                new,
                "clusterIPs",
                Value::Array(items(old, "clusterIPs").to_vec()),
            );
        }
    }
    if needs_node_port(old) && needs_node_port(new) {
        let new_ports = node_ports(new);
        let used: HashSet<i64> = node_ports(old).intersection(&new_ports).copied().collect();
        let mut by_name: HashMap<String, i64> = HashMap::new();
        for p in items(old, "ports") {
            by_name.insert(str_of(p, "name").to_owned(), int(p, "nodePort"));
        }
        if let Some(ports) = new.get_mut("ports").and_then(Value::as_array_mut) {
            for p in ports.iter_mut() {
                if int(p, "nodePort") != 0 {
                    continue;
                }
                let old_val = by_name.get(str_of(p, "name")).copied().unwrap_or(0);
                if old_val != 0 && !used.contains(&old_val) {
                    set(p, "nodePort", json!(old_val));
                }
            }
        }
    }
    if needs_health_check(old) && needs_health_check(new) && int(new, "healthCheckNodePort") == 0 {
        let hc = int(old, "healthCheckNodePort");
        if hc != 0 {
            set(new, "healthCheckNodePort", json!(hc));
        }
    }
}

/// `normalizeClusterIPs` of an update: `clusterIPs` left out with `clusterIP` as stored keeps
/// the stored list; a `clusterIP` cleared with `clusterIPs` as stored clears both; a `clusterIP`
/// changed with `clusterIPs` as stored becomes the whole list (validation then refuses it).
fn normalize_updated(new: &mut Value, old: &Value) {
    let old_ip = str_of(old, "clusterIP").to_owned();
    let old_ips = strings(old, "clusterIPs");
    if !old_ips.is_empty()
        && items(new, "clusterIPs").is_empty()
        && str_of(new, "clusterIP") == old_ip
    {
        set(
            new,
            "clusterIPs",
            Value::Array(items(old, "clusterIPs").to_vec()),
        );
    }
    let new_ip = str_of(new, "clusterIP").to_owned();
    if old_ip != new_ip {
        // The registry's `sameClusterIPs` compares the lists only.
        let same_list = strings(new, "clusterIPs") == old_ips;
        if !old_ip.is_empty() && new_ip.is_empty() {
            if same_list {
                unset(new, "clusterIPs");
            }
        } else if same_list {
            set(new, "clusterIPs", json!([new_ip]));
        }
    }
}

/// The strategy's `dropTypeDependentFields`: on a change of type, what the new type does not
/// need is dropped when the client left it as stored.
fn drop_type_dependent_fields(new: &mut Value, old: &Value) {
    let view: &Value = &*new;
    let same_str = |name: &str| string(old, name) == string(view, name);
    let leaves_cluster_ip = needs_cluster_ip(old) && !needs_cluster_ip(view);
    let drop_ips = leaves_cluster_ip
        && same_str("clusterIP")
        && strings(old, "clusterIPs") == strings(view, "clusterIPs");
    let drop_families =
        leaves_cluster_ip && strings(old, "ipFamilies") == strings(view, "ipFamilies");
    let drop_policy = leaves_cluster_ip && same_str("ipFamilyPolicy");
    // `sameNodePorts`: no node port the stored object did not have.
    let drop_node_ports = needs_node_port(old)
        && !needs_node_port(view)
        && node_ports(view).is_subset(&node_ports(old));
    let drop_health_check = needs_health_check(old)
        && !needs_health_check(view)
        && int(old, "healthCheckNodePort") == int(view, "healthCheckNodePort");
    let leaves_lb = service_type(old) == "LoadBalancer" && service_type(view) != "LoadBalancer";
    let allocate = |v: &Value| {
        v.get("allocateLoadBalancerNodePorts")
            .and_then(Value::as_bool)
    };
    let drop_allocate = leaves_lb && allocate(old).is_some() && allocate(old) == allocate(view);
    let drop_class = leaves_lb && same_str("loadBalancerClass");
    let drop_policy_external = externally_accessible(old)
        && !externally_accessible(view)
        && str_of(old, "externalTrafficPolicy") == str_of(view, "externalTrafficPolicy");

    if drop_ips {
        unset(new, "clusterIP");
        unset(new, "clusterIPs");
    }
    if drop_families {
        unset(new, "ipFamilies");
    }
    if drop_policy {
        unset(new, "ipFamilyPolicy");
    }
    if drop_node_ports {
        if let Some(ports) = new.get_mut("ports").and_then(Value::as_array_mut) {
            for p in ports.iter_mut() {
                unset(p, "nodePort");
            }
        }
    }
    if drop_health_check {
        unset(new, "healthCheckNodePort");
    }
    if drop_allocate {
        unset(new, "allocateLoadBalancerNodePorts");
    }
    if drop_class {
        unset(new, "loadBalancerClass");
    }
    if drop_policy_external {
        unset(new, "externalTrafficPolicy");
    }
}

// ---- Service ----

/// `ValidateServiceCreate` (`ValidateService`) and `ValidateServiceUpdate`, on `kube_view`;
/// with `ValidateServiceClusterIPsRelatedFields` errors those alone, as kube's allocator answers
/// them before validation runs.
fn service(obj: &Value, old: Option<&Value>) -> Vec<Cause> {
    let spec = kube_view(obj, old);
    let related = cluster_ips_related_fields(&spec);
    if !related.is_empty() {
        return related;
    }
    let mut out = Vec::new();
    if let Some(old) = old {
        let old = old_view(old);
        upgrade_downgrade_cluster_ips(&old, &spec, &mut out);
        upgrade_downgrade_ip_families(&old, &spec, &mut out);
        load_balancer_class(Some(&old), &spec, &mut out);
        external_traffic_fields_update(&old, &spec, &mut out);
    }
    service_spec(obj, &spec, &mut out);
    out
}

/// `ValidateService` (metadata aside) of the prepared `spec`; `obj` gives the annotations.
fn service_spec(obj: &Value, spec: &Value, out: &mut Vec<Cause>) {
    let annotations = obj
        .pointer("/metadata/annotations")
        .filter(|a| a.is_object())
        .unwrap_or(&NULL);
    if let (Some(mode), Some(hints)) = (
        string(annotations, ANNOTATION_TOPOLOGY_MODE),
        string(annotations, ANNOTATION_TOPOLOGY_HINTS),
    ) {
        if mode != hints {
            out.push(invalid_str(
                &format!("metadata.annotations[{ANNOTATION_TOPOLOGY_MODE}]"),
                mode,
                &format!(
                    "must match annotations[{ANNOTATION_TOPOLOGY_HINTS}] when both are specified"
                ),
            ));
        }
    }
    let ty = service_type(spec);
    let headless = is_headless(spec);
    let ports = items(spec, "ports");
    if ports.is_empty() && !headless && ty != "ExternalName" {
        out.push(required("spec.ports", ""));
    }
    match ty {
        "LoadBalancer" | "NodePort" if headless => out.push(invalid_str(
            "spec.clusterIPs[0]",
            "None",
            &format!("may not be set to 'None' for {ty} services"),
        )),
        "ExternalName" => {
            if !items(spec, "clusterIPs").is_empty() {
                out.push(forbidden(
                    "spec.clusterIPs",
                    "may not be set for ExternalName services",
                ));
            }
            if !items(spec, "ipFamilies").is_empty() {
                out.push(forbidden(
                    "spec.ipFamilies",
                    "may not be set for ExternalName services",
                ));
            }
            if is_set(spec, "ipFamilyPolicy") {
                out.push(forbidden(
                    "spec.ipFamilyPolicy",
                    "may not be set for ExternalName services",
                ));
            }
            // A trailing dot marks the CNAME fully qualified.
            let name = str_of(spec, "externalName");
            let cname = name.strip_suffix('.').unwrap_or(name);
            if cname.is_empty() {
                out.push(required("spec.externalName", ""));
            } else {
                invalid_each("spec.externalName", cname, dns1123_subdomain(cname), out);
            }
        }
        _ => {}
    }

    let mut names = HashSet::new();
    for (i, p) in ports.iter().enumerate() {
        service_port(p, ports.len() > 1, &mut names, &index("spec.ports", i), out);
    }

    if is_set(spec, "selector") {
        crate::builtin::validation::field::labels(spec.get("selector"), "spec.selector", out);
    }

    let affinity = str_of(spec, "sessionAffinity");
    if affinity.is_empty() {
        out.push(required("spec.sessionAffinity", ""));
    } else if !SESSION_AFFINITIES.contains(&affinity) {
        out.push(not_supported(
            "spec.sessionAffinity",
            &json!(affinity),
            &SESSION_AFFINITIES,
        ));
    }
    if affinity == "ClientIP" {
        client_ip_affinity_config(spec.get("sessionAffinityConfig"), out);
    }
    // With `None`, kube forbids `sessionAffinityConfig`; its `SetDefaults_Service` drops the
    // config first, so that never fires (see the module documentation).

    // `ValidateServiceClusterIPsRelatedFields` ran first in `service`, and found nothing.

    for (i, ip) in items(spec, "externalIPs").iter().enumerate() {
        let ip = ip.as_str().unwrap_or("");
        let p = index("spec.externalIPs", i);
        if parse_ip16(ip).is_none() {
            out.push(invalid_str(&p, ip, IP_MSG));
        } else {
            non_special_ip(ip, &p, out);
        }
    }

    if ty.is_empty() {
        out.push(required("spec.type", ""));
    } else if !SERVICE_TYPES.contains(&ty) {
        out.push(not_supported("spec.type", &json!(ty), &SERVICE_TYPES));
    }

    // `nodePort` on a ClusterIP Service: the allocator's (see the module documentation).

    let mut seen_node_ports = HashSet::new();
    for (i, p) in ports.iter().enumerate() {
        let np = int(p, "nodePort");
        if np == 0 {
            continue;
        }
        if !seen_node_ports.insert((str_of(p, "protocol").to_owned(), np)) {
            out.push(duplicate(
                &child(&index("spec.ports", i), "nodePort"),
                &json!(np),
            ));
        }
    }

    let mut seen_ports = HashSet::new();
    for (i, p) in ports.iter().enumerate() {
        let proto = str_of(p, "protocol");
        let port = int(p, "port");
        if !seen_ports.insert((proto.to_owned(), port)) {
            // kube reports the `core.ServicePort{Protocol, Port}` key: the JSON of the internal
            // struct (its Go field names; `TargetPort` an `intstr.IntOrString` of 0).
            let key = struct_json(&[
                ("Name", json_value(&json!(""))),
                ("Protocol", json_value(&json!(proto))),
                ("AppProtocol", "null".to_owned()),
                ("Port", port.to_string()),
                ("TargetPort", "0".to_owned()),
                ("NodePort", "0".to_owned()),
            ]);
            out.push(Cause::new(
                "FieldValueDuplicate",
                &index("spec.ports", i),
                format!("Duplicate value: {key}"),
            ));
        }
    }

    source_ranges(annotations, spec, out);

    if is_set(spec, "allocateLoadBalancerNodePorts") && ty != "LoadBalancer" {
        out.push(forbidden(
            "spec.allocateLoadBalancerNodePorts",
            "may only be used when `type` is 'LoadBalancer'",
        ));
    }
    if ty == "LoadBalancer" && !is_set(spec, "allocateLoadBalancerNodePorts") {
        // kube's path, without `spec`.
        out.push(required("allocateLoadBalancerNodePorts", ""));
    }

    load_balancer_class(None, spec, out);
    external_traffic_policy(spec, out);

    match spec.get("internalTrafficPolicy").filter(|v| !v.is_null()) {
        None => {
            if matches!(ty, "NodePort" | "LoadBalancer" | "ClusterIP") {
                out.push(required("spec.internalTrafficPolicy", ""));
            }
        }
        Some(v) => {
            let policy = v.as_str().unwrap_or("");
            if !TRAFFIC_POLICIES.contains(&policy) {
                out.push(not_supported(
                    "spec.internalTrafficPolicy",
                    &json!(policy),
                    &TRAFFIC_POLICIES,
                ));
            }
        }
    }

    if let Some(v) = spec.get("trafficDistribution").filter(|v| !v.is_null()) {
        let td = v.as_str().unwrap_or("");
        if !TRAFFIC_DISTRIBUTIONS.contains(&td) {
            out.push(not_supported(
                "spec.trafficDistribution",
                &json!(td),
                &TRAFFIC_DISTRIBUTIONS,
            ));
        }
    }
}

/// `validateServicePort`: name (required when there are several ports, a DNS-1123 label,
/// unique), port number, protocol, target port, app protocol.
fn service_port(
    p: &Value,
    require_name: bool,
    names: &mut HashSet<String>,
    path: &str,
    out: &mut Vec<Cause>,
) {
    let name = str_of(p, "name");
    let name_path = child(path, "name");
    if require_name && name.is_empty() {
        out.push(required(&name_path, ""));
    } else if !name.is_empty() {
        invalid_each(&name_path, name, dns1123_label(name), out);
        if !names.insert(name.to_owned()) {
            out.push(duplicate(&name_path, &json!(name)));
        }
    }
    let port = int(p, "port");
    for msg in port_num(port) {
        out.push(invalid(&child(path, "port"), &json!(port), &msg));
    }
    protocol(p, path, out);
    port_num_or_name(p.get("targetPort"), &child(path, "targetPort"), out);
    if let Some(app) = string(p, "appProtocol") {
        invalid_each(&child(path, "appProtocol"), app, qualified_name(app), out);
    }
}

/// `ValidatePortNumOrName` of an int-or-string (absent: Go's zero value, the number 0).
fn port_num_or_name(v: Option<&Value>, path: &str, out: &mut Vec<Cause>) {
    match v {
        Some(Value::String(s)) => invalid_each(
            path,
            s,
            crate::builtin::validation::field::port_name(s),
            out,
        ),
        other => {
            let n = other.and_then(Value::as_i64).unwrap_or(0);
            for msg in port_num(n) {
                out.push(invalid(path, &json!(n), &msg));
            }
        }
    }
}

/// `validateClientIPAffinityConfig`: `clientIP.timeoutSeconds` set, in (0, 86400].
fn client_ip_affinity_config(config: Option<&Value>, out: &mut Vec<Cause>) {
    let detail = "when session affinity type is ClientIP";
    let path = "spec.sessionAffinityConfig";
    let Some(config) = config.filter(|c| c.is_object()) else {
        out.push(required(path, detail));
        return;
    };
    let ip_path = child(path, "clientIP");
    let Some(client_ip) = config.get("clientIP").filter(|c| c.is_object()) else {
        out.push(required(&ip_path, detail));
        return;
    };
    let timeout_path = child(&ip_path, "timeoutSeconds");
    let Some(timeout) = client_ip.get("timeoutSeconds").and_then(Value::as_i64) else {
        out.push(required(&timeout_path, detail));
        return;
    };
    if timeout <= 0 || timeout > MAX_AFFINITY_SECONDS {
        out.push(invalid(
            &timeout_path,
            &json!(timeout),
            &format!("must be greater than 0 and less than {MAX_AFFINITY_SECONDS}"),
        ));
    }
}

/// `spec.loadBalancerSourceRanges` (kube's path `spec.LoadBalancerSourceRanges`), else the
/// `service.beta.kubernetes.io/load-balancer-source-ranges` annotation: LoadBalancer only,
/// CIDRs (space-padded values allowed).
fn source_ranges(annotations: &Value, spec: &Value, out: &mut Vec<Cause>) {
    let lb = service_type(spec) == "LoadBalancer";
    let only_lb = "may only be used when `type` is 'LoadBalancer'";
    let ranges = items(spec, "loadBalancerSourceRanges");
    if !ranges.is_empty() {
        let path = "spec.LoadBalancerSourceRanges";
        if !lb {
            out.push(forbidden(path, only_lb));
        }
        for (i, r) in ranges.iter().enumerate() {
            let value = r.as_str().unwrap_or("").trim();
            if parse_cidr_sloppy(value).is_none() {
                out.push(invalid_str(&index(path, i), value, CIDR_MSG));
            }
        }
    } else if let Some(val) = string(annotations, ANNOTATION_SOURCE_RANGES) {
        let path = format!("metadata.annotations[{ANNOTATION_SOURCE_RANGES}]");
        if !lb {
            out.push(forbidden(&path, only_lb));
        }
        let val = val.trim();
        if !val.is_empty() {
            for value in val.split(',').map(str::trim) {
                if parse_cidr_sloppy(value).is_none() {
                    out.push(invalid_str(&path, value, CIDR_MSG));
                }
            }
        }
    }
}

/// `validateLoadBalancerClassField`: on update of a LoadBalancer that stays one, unchanged; a
/// qualified name on a LoadBalancer, forbidden on other types. (kube runs it twice on update,
/// with the old object and again inside `ValidateService`, so a bad name is reported twice.)
fn load_balancer_class(old: Option<&Value>, spec: &Value, out: &mut Vec<Cause>) {
    let path = "spec.loadBalancerClass";
    let class = spec.get("loadBalancerClass").filter(|v| !v.is_null());
    let lb = service_type(spec) == "LoadBalancer";
    if let Some(old) = old {
        let old_class = old.get("loadBalancerClass").filter(|v| !v.is_null());
        if service_type(old) == "LoadBalancer" && lb && old_class != class {
            out.push(invalid_json(path, class, "may not change once set"));
        }
    }
    if lb {
        if let Some(c) = class {
            let c = c.as_str().unwrap_or("");
            invalid_each(path, c, qualified_name(c), out);
        }
    } else if class.is_some() {
        out.push(forbidden(
            path,
            "may only be used when `type` is 'LoadBalancer'",
        ));
    }
}

/// `validateServiceExternalTrafficPolicy`: the policy only on externally-accessible Services,
/// `healthCheckNodePort` only on LoadBalancers with `Local`. Not reported (see the module
/// documentation): a missing policy (defaulted by kube) and a missing `healthCheckNodePort`
/// (allocated after validation).
fn external_traffic_policy(spec: &Value, out: &mut Vec<Cause>) {
    let path = "spec.externalTrafficPolicy";
    let policy = str_of(spec, "externalTrafficPolicy");
    if !externally_accessible(spec) {
        if !policy.is_empty() {
            out.push(invalid_str(
                path,
                policy,
                "may only be set for externally-accessible services",
            ));
        }
    } else if !policy.is_empty() && !TRAFFIC_POLICIES.contains(&policy) {
        out.push(not_supported(path, &json!(policy), &TRAFFIC_POLICIES));
    }
    let hc_path = "spec.healthCheckNodePort";
    let hc = int(spec, "healthCheckNodePort");
    if !needs_health_check(spec) {
        if hc != 0 {
            out.push(invalid(
                hc_path,
                &json!(hc),
                "may only be set when `type` is 'LoadBalancer' and `externalTrafficPolicy` is 'Local'",
            ));
        }
    } else if hc != 0 {
        for msg in port_num(hc) {
            out.push(invalid(hc_path, &json!(hc), &msg));
        }
    }
}

/// `validateServiceExternalTrafficFieldsUpdate`: a health check node port is kept while needed.
fn external_traffic_fields_update(old: &Value, new: &Value, out: &mut Vec<Cause>) {
    if needs_health_check(old)
        && needs_health_check(new)
        && int(new, "healthCheckNodePort") != int(old, "healthCheckNodePort")
    {
        out.push(forbidden("spec.healthCheckNodePort", "field is immutable"));
    }
}

/// `ValidateServiceClusterIPsRelatedFields` (not for ExternalName): `clusterIP` and
/// `clusterIPs` in step, supported and distinct families, a supported policy, valid IPs (`None`
/// first and alone), at most one per family, each matching its family.
fn cluster_ips_related_fields(spec: &Value) -> Vec<Cause> {
    let mut out = Vec::new();
    if service_type(spec) == "ExternalName" {
        return out;
    }
    let ips_path = "spec.clusterIPs";
    let ip = str_of(spec, "clusterIP");
    let ips = strings(spec, "clusterIPs");
    let ips_go = json_at(spec, "clusterIPs");
    if !ip.is_empty() {
        match ips.first() {
            None => out.push(required(ips_path, "")),
            Some(first) if first != ip => out.push(invalid_shown(
                ips_path,
                &ips_go,
                "first value must match `clusterIP`",
            )),
            Some(_) => {}
        }
    } else if !ips.is_empty() {
        out.push(invalid_shown(
            ips_path,
            &ips_go,
            "must be empty when `clusterIP` is not specified",
        ));
    }

    let families = strings(spec, "ipFamilies");
    let mut seen = HashSet::new();
    for (i, f) in families.iter().enumerate() {
        let p = index("spec.ipFamilies", i);
        if !IP_FAMILIES.contains(&f.as_str()) {
            out.push(not_supported(&p, &json!(f), &IP_FAMILIES));
        }
        if !seen.insert(f.as_str()) {
            out.push(duplicate(&p, &json!(f)));
        }
    }

    if let Some(policy) = spec.get("ipFamilyPolicy").filter(|v| !v.is_null()) {
        let policy = policy.as_str().unwrap_or("");
        if !IP_FAMILY_POLICIES.contains(&policy) {
            out.push(not_supported(
                "spec.ipFamilyPolicy",
                &json!(policy),
                &IP_FAMILY_POLICIES,
            ));
        }
    }

    let mut bad_ips = false;
    for (i, c) in ips.iter().enumerate() {
        if i == 0 && c == "None" {
            if ips.len() > 1 {
                bad_ips = true;
                out.push(invalid_shown(
                    ips_path,
                    &ips_go,
                    "'None' must be the first and only value",
                ));
            }
            continue;
        }
        if parse_ip16(c).is_none() {
            bad_ips = true;
            out.push(invalid_str(&index(ips_path, i), c, IP_MSG));
        }
    }
    if ips.len() > 2 {
        out.push(invalid_shown(
            ips_path,
            &ips_go,
            "may only hold up to 2 values",
        ));
    }
    if bad_ips {
        return out;
    }

    if ips.len() > 1 {
        // `IsDualStackIPStrings`: both families present.
        let v6: Vec<bool> = ips.iter().map(|c| is_ipv6_string(c)).collect();
        if !(v6.contains(&true) && v6.contains(&false)) {
            out.push(invalid_shown(
                ips_path,
                &ips_go,
                "may specify no more than one IP for each IP family",
            ));
        }
    }

    if !is_headless(spec) && !ips.is_empty() && !families.is_empty() {
        for (i, (c, family)) in ips.iter().zip(&families).enumerate() {
            let v6 = is_ipv6_string(c);
            if family == "IPv4" && v6 {
                out.push(invalid_str(
                    &index(ips_path, i),
                    c,
                    &format!("expected an IPv4 value as indicated by `ipFamilies[{i}]`"),
                ));
            }
            if family == "IPv6" && !v6 {
                out.push(invalid_str(
                    &index(ips_path, i),
                    c,
                    &format!("expected an IPv6 value as indicated by `ipFamilies[{i}]`"),
                ));
            }
        }
    }
    out
}

/// `validateUpgradeDowngradeClusterIPs`: the cluster IPs may gain or lose a secondary, never
/// change (unless the Service is or becomes an ExternalName, or stays headless); releasing the
/// secondary needs `ipFamilyPolicy: SingleStack`.
fn upgrade_downgrade_cluster_ips(old: &Value, new: &Value, out: &mut Vec<Cause>) {
    if service_type(new) == "ExternalName" || service_type(old) == "ExternalName" {
        return;
    }
    if is_headless(old) && is_headless(new) {
        return;
    }
    let (o, n) = (strings(old, "clusterIPs"), strings(new, "clusterIPs"));
    let n_go = json_at(new, "clusterIPs");
    let unchanged = "may not change once set";
    if o.len() == n.len() {
        for (i, (a, b)) in o.iter().zip(&n).enumerate() {
            if a != b {
                out.push(invalid_shown(
                    &index("spec.clusterIPs", i),
                    &n_go,
                    unchanged,
                ));
            }
        }
    } else if o.len() > n.len() {
        if n.is_empty() {
            out.push(invalid_shown(
                "spec.clusterIPs[0]",
                &n_go,
                "primary clusterIP can not be unset",
            ));
        }
        if let (Some(a), Some(b)) = (o.first(), n.first()) {
            if a != b {
                out.push(invalid_shown("spec.clusterIPs[0]", &n_go, unchanged));
            }
        }
        if n.len() == 1 && string(new, "ipFamilyPolicy") != Some("SingleStack") {
            out.push(invalid_json(
                "spec.ipFamilyPolicy",
                new.get("ipFamilyPolicy"),
                "must be set to 'SingleStack' when releasing the secondary clusterIP",
            ));
        }
    } else if let (Some(a), Some(b)) = (o.first(), n.first()) {
        if a != b {
            out.push(invalid_shown("spec.clusterIPs[0]", &n_go, unchanged));
        }
    }
}

/// `validateUpgradeDowngradeIPFamilies`: as the cluster IPs, for `ipFamilies` (kube reports
/// every change at `ipFamilies[0]`, and some with the cluster IPs as the value).
fn upgrade_downgrade_ip_families(old: &Value, new: &Value, out: &mut Vec<Cause>) {
    if service_type(new) == "ExternalName" || service_type(old) == "ExternalName" {
        return;
    }
    if is_headless(old) != is_headless(new) || is_headless(new) {
        return;
    }
    let (o, n) = (strings(old, "ipFamilies"), strings(new, "ipFamilies"));
    let path = "spec.ipFamilies[0]";
    let n_go = json_at(new, "ipFamilies");
    let ips_go = json_at(new, "clusterIPs");
    let unchanged = "may not change once set";
    if o.len() == n.len() {
        for (a, b) in o.iter().zip(&n) {
            if a != b {
                out.push(invalid_shown(path, &n_go, unchanged));
            }
        }
    } else if o.len() > n.len() {
        if items(new, "clusterIPs").is_empty() {
            out.push(invalid_shown(
                path,
                &n_go,
                "primary ipFamily can not be unset",
            ));
        }
        if let (Some(a), Some(b)) = (o.first(), n.first()) {
            if a != b {
                out.push(invalid_shown(path, &ips_go, unchanged));
            }
        }
        if n.len() == 1 && string(new, "ipFamilyPolicy") != Some("SingleStack") {
            out.push(invalid_json(
                "spec.ipFamilyPolicy",
                new.get("ipFamilyPolicy"),
                "must be set to 'SingleStack' when releasing the secondary ipFamily",
            ));
        }
    } else if let (Some(a), Some(b)) = (o.first(), n.first()) {
        if a != b {
            out.push(invalid_shown(path, &ips_go, unchanged));
        }
    }
}

/// `ValidateServiceStatusUpdate`, i.e. `ValidateLoadBalancerStatus` with the stored spec (the
/// status strategy keeps it): ingress only on LoadBalancers (`AllowServiceLBStatusOnNonLB` is
/// off), each ingress's IP, `ipMode` (only with an IP; VIP or Proxy) and hostname (a DNS name,
/// not an IP). A missing `ipMode` is not reported (see the module documentation).
fn service_status(obj: &Value, old: &Value) -> Vec<Cause> {
    let mut out = Vec::new();
    let spec = spec_of(old);
    let lb = obj.pointer("/status/loadBalancer").unwrap_or(&NULL);
    let ingress = items(lb, "ingress");
    let path = "status.loadBalancer.ingress";
    if service_type(spec) != "LoadBalancer" && !ingress.is_empty() {
        out.push(forbidden(
            path,
            "may only be used when `spec.type` is 'LoadBalancer'",
        ));
        return out;
    }
    for (i, ing) in ingress.iter().enumerate() {
        let p = index(path, i);
        let ip = str_of(ing, "ip");
        if !ip.is_empty() {
            legacy_ip(&child(&p, "ip"), ip, &mut out);
        }
        if let Some(mode) = ing.get("ipMode").filter(|v| !v.is_null()) {
            let mode_path = child(&p, "ipMode");
            if ip.is_empty() {
                out.push(forbidden(
                    &mode_path,
                    "may not be specified when `ip` is not set",
                ));
            } else if !LB_IP_MODES.contains(&mode.as_str().unwrap_or("")) {
                out.push(not_supported(&mode_path, mode, &LB_IP_MODES));
            }
        }
        let host = str_of(ing, "hostname");
        if !host.is_empty() {
            let hp = child(&p, "hostname");
            invalid_each(&hp, host, dns1123_subdomain(host), &mut out);
            if parse_ip16(host).is_some() {
                out.push(invalid_str(
                    &hp,
                    host,
                    "must be a DNS name, not an IP address",
                ));
            }
        }
    }
    out
}

// ---- Endpoints ----

/// `ValidateEndpoints` (create and update alike): each subset has addresses, each address a
/// valid, non-special IP, hostname and node name, each port a name (when several), number and
/// protocol.
fn endpoints(obj: &Value) -> Vec<Cause> {
    let mut out = Vec::new();
    for (i, subset) in items(obj, "subsets").iter().enumerate() {
        let p = index("subsets", i);
        let ready = items(subset, "addresses");
        let not_ready = items(subset, "notReadyAddresses");
        if ready.is_empty() && not_ready.is_empty() {
            out.push(required(
                &p,
                "must specify `addresses` or `notReadyAddresses`",
            ));
        }
        for (j, a) in ready.iter().enumerate() {
            endpoint_address(a, &index(&child(&p, "addresses"), j), &mut out);
        }
        for (j, a) in not_ready.iter().enumerate() {
            endpoint_address(a, &index(&child(&p, "notReadyAddresses"), j), &mut out);
        }
        let ports = items(subset, "ports");
        for (j, port) in ports.iter().enumerate() {
            endpoint_port(
                port,
                ports.len() > 1,
                &index(&child(&p, "ports"), j),
                &mut out,
            );
        }
    }
    out
}

/// `validateEndpointAddress`.
fn endpoint_address(a: &Value, path: &str, out: &mut Vec<Cause>) {
    let ip = str_of(a, "ip");
    let ip_path = child(path, "ip");
    legacy_ip(&ip_path, ip, out);
    let host = str_of(a, "hostname");
    if !host.is_empty() {
        invalid_each(&child(path, "hostname"), host, dns1123_label(host), out);
    }
    if let Some(node) = string(a, "nodeName") {
        invalid_each(&child(path, "nodeName"), node, dns1123_subdomain(node), out);
    }
    non_special_ip(ip, &ip_path, out);
}

/// `validateEndpointPort`.
fn endpoint_port(port: &Value, require_name: bool, path: &str, out: &mut Vec<Cause>) {
    let name = str_of(port, "name");
    let name_path = child(path, "name");
    if require_name && name.is_empty() {
        out.push(required(&name_path, ""));
    } else if !name.is_empty() {
        invalid_each(&name_path, name, dns1123_label(name), out);
    }
    let n = int(port, "port");
    for msg in port_num(n) {
        out.push(invalid(&child(path, "port"), &json!(n), &msg));
    }
    protocol(port, path, out);
    if let Some(app) = string(port, "appProtocol") {
        invalid_each(&child(path, "appProtocol"), app, qualified_name(app), out);
    }
}

// ---- EndpointSlices ----

/// `ValidateEndpointSlice`, and on update `ValidateEndpointSliceUpdate` (`addressType` is
/// immutable). `deprecatedTopology` is not checked: kube's strategy drops it from every v1
/// write before validation (`dropTopologyOnV1`).
fn endpoint_slice(obj: &Value, old: Option<&Value>) -> Vec<Cause> {
    let mut out = Vec::new();
    let address_type = str_of(obj, "addressType");
    if address_type.is_empty() {
        out.push(required("addressType", ""));
    } else if !ADDRESS_TYPES.contains(&address_type) {
        out.push(not_supported(
            "addressType",
            &json!(address_type),
            &ADDRESS_TYPES,
        ));
    }
    slice_endpoints(items(obj, "endpoints"), address_type, &mut out);
    slice_ports(items(obj, "ports"), &mut out);
    if let Some(old) = old {
        immutable(
            obj.get("addressType"),
            old.get("addressType"),
            "addressType",
            &mut out,
        );
    }
    out
}

/// The discovery `validateEndpoints`: at most 1000 endpoints, each with 1 to 100 addresses of
/// the slice's type, a node name, a hostname and hints.
fn slice_endpoints(endpoints: &[Value], address_type: &str, out: &mut Vec<Cause>) {
    if endpoints.len() > MAX_ENDPOINTS {
        out.push(too_many("endpoints", endpoints.len(), MAX_ENDPOINTS));
        return;
    }
    for (i, ep) in endpoints.iter().enumerate() {
        let p = index("endpoints", i);
        let addresses_path = child(&p, "addresses");
        let addresses = items(ep, "addresses");
        if addresses.is_empty() {
            out.push(required(&addresses_path, "must contain at least 1 address"));
        } else if addresses.len() > MAX_ADDRESSES {
            out.push(too_many(&addresses_path, addresses.len(), MAX_ADDRESSES));
        }
        for (j, a) in addresses.iter().enumerate() {
            let a = a.as_str().unwrap_or("");
            let ap = index(&addresses_path, j);
            match address_type {
                "IPv4" | "IPv6" => slice_ip(a, address_type == "IPv6", &ap, out),
                "FQDN" => fully_qualified_domain_name(a, &ap, out),
                _ => {}
            }
        }
        if let Some(node) = string(ep, "nodeName") {
            invalid_each(&child(&p, "nodeName"), node, dns1123_subdomain(node), out);
        }
        if let Some(host) = string(ep, "hostname") {
            invalid_each(&child(&p, "hostname"), host, dns1123_label(host), out);
        }
        if let Some(hints) = ep.get("hints").filter(|h| h.is_object()) {
            endpoint_hints(hints, &child(&p, "hints"), out);
        }
    }
}

/// An address of an IPv4 or IPv6 slice: a (legacy) IP of the slice's family, not special.
fn slice_ip(value: &str, want_v6: bool, path: &str, out: &mut Vec<Cause>) {
    let Some(ip) = parse_ip16(value) else {
        out.push(invalid_str(path, value, IP_MSG));
        return;
    };
    let v6 = to4_16(&ip).is_none();
    if want_v6 && !v6 {
        out.push(invalid_str(path, value, "must be an IPv6 address"));
    } else if !want_v6 && v6 {
        out.push(invalid_str(path, value, "must be an IPv4 address"));
    }
    non_special_ip(value, path, out);
}

/// `IsFullyQualifiedDomainName` (a trailing dot allowed): a DNS subdomain of two labels or more.
fn fully_qualified_domain_name(value: &str, path: &str, out: &mut Vec<Cause>) {
    if value.is_empty() {
        out.push(required(path, ""));
        return;
    }
    let name = value.strip_suffix('.').unwrap_or(value);
    let errs = dns1123_subdomain(name);
    if !errs.is_empty() {
        out.push(invalid_str(path, name, &errs.join(",")));
        return;
    }
    let labels: Vec<&str> = name.split('.').collect();
    if labels.len() < 2 {
        out.push(invalid_str(
            path,
            name,
            "should be a domain with at least two segments separated by dots",
        ));
        return;
    }
    for label in labels {
        let errs = dns1123_label(label);
        if !errs.is_empty() {
            out.push(invalid_str(path, label, &errs.join(",")));
            return;
        }
    }
}

/// `validateHints`: at most 8 distinct zone hints (label values), then at most 8 distinct node
/// hints (node names; `PreferSameTrafficDistribution`, on by default in 1.34).
fn endpoint_hints(hints: &Value, path: &str, out: &mut Vec<Cause>) {
    let zones = items(hints, "forZones");
    let zones_path = child(path, "forZones");
    if zones.len() > MAX_ZONE_HINTS {
        out.push(too_many(&zones_path, zones.len(), MAX_ZONE_HINTS));
        return;
    }
    let mut seen = HashSet::new();
    for (i, z) in zones.iter().enumerate() {
        let zp = child(&index(&zones_path, i), "name");
        let name = str_of(z, "name");
        if !seen.insert(name) {
            out.push(duplicate(&zp, &json!(name)));
        }
        invalid_each(&zp, name, label_value(name), out);
    }
    let nodes = items(hints, "forNodes");
    let nodes_path = child(path, "forNodes");
    if nodes.len() > MAX_NODE_HINTS {
        out.push(too_many(&nodes_path, nodes.len(), MAX_NODE_HINTS));
        return;
    }
    let mut seen = HashSet::new();
    for (i, n) in nodes.iter().enumerate() {
        let np = child(&index(&nodes_path, i), "name");
        let name = str_of(n, "name");
        if !seen.insert(name) {
            out.push(duplicate(&np, &json!(name)));
        }
        invalid_each(&np, name, dns1123_subdomain(name), out);
    }
}

/// The discovery `validatePorts`: at most 20000 ports with distinct names (`""` included),
/// each a DNS-1123 label when set, a protocol and an app protocol.
fn slice_ports(ports: &[Value], out: &mut Vec<Cause>) {
    if ports.len() > MAX_SLICE_PORTS {
        out.push(too_many("ports", ports.len(), MAX_SLICE_PORTS));
        return;
    }
    let mut names = HashSet::new();
    for (i, port) in ports.iter().enumerate() {
        let p = index("ports", i);
        let name_path = child(&p, "name");
        // A missing name is kube's default, "".
        let name = str_of(port, "name");
        if !name.is_empty() {
            invalid_each(&name_path, name, dns1123_label(name), out);
        }
        if !names.insert(name) {
            out.push(duplicate(&name_path, &json!(name)));
        }
        match string(port, "protocol") {
            None => out.push(required(&child(&p, "protocol"), "")),
            Some(proto) if !PROTOCOLS.contains(&proto) => out.push(not_supported(
                &child(&p, "protocol"),
                &json!(proto),
                &PROTOCOLS,
            )),
            Some(_) => {}
        }
        if let Some(app) = string(port, "appProtocol") {
            invalid_each(&child(&p, "appProtocol"), app, qualified_name(app), out);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    fn msgs(causes: &[Cause]) -> Vec<String> {
        causes.iter().map(ToString::to_string).collect()
    }

    /// A defaulted Service (`SetDefaults_Service`) with `spec` merged over the defaults.
    fn svc(spec: Value) -> Value {
        let mut s = json!({"type": "ClusterIP", "sessionAffinity": "None",
                           "internalTrafficPolicy": "Cluster",
                           "ports": [{"port": 80, "protocol": "TCP", "targetPort": 8080}]});
        if let (Some(base), Some(extra)) = (s.as_object_mut(), spec.as_object()) {
            for (k, v) in extra {
                if v.is_null() {
                    base.remove(k);
                } else {
                    base.insert(k.clone(), v.clone());
                }
            }
        }
        json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"}, "spec": s})
    }

    fn create(spec: Value) -> Vec<String> {
        msgs(&validate("", "services", &svc(spec), None))
    }

    fn update(old: &Value, new: &Value) -> Vec<String> {
        msgs(&validate("", "services", new, Some(old)))
    }

    /// A stored (allocated) ClusterIP Service.
    fn stored(spec: Value) -> Value {
        let mut s = svc(spec);
        s["spec"]["clusterIP"] = json!("10.96.0.10");
        s["spec"]["clusterIPs"] = json!(["10.96.0.10"]);
        s["spec"]["ipFamilies"] = json!(["IPv4"]);
        s["spec"]["ipFamilyPolicy"] = json!("SingleStack");
        s
    }

    #[test]
    fn valid_services_pass() {
        assert!(create(json!({})).is_empty());
        // Headless: no ports needed.
        assert!(create(json!({"clusterIP": "None", "ports": null})).is_empty());
        // kube's sloppy parser takes leading zeros.
        assert!(create(json!({"clusterIP": "010.096.000.010"})).is_empty());
        assert!(create(
            json!({"type": "ExternalName", "externalName": "db.example.com.",
                              "internalTrafficPolicy": null, "ports": null})
        )
        .is_empty());
        assert!(create(json!({"type": "NodePort", "externalTrafficPolicy": "Cluster",
            "ports": [{"name": "a", "port": 53, "protocol": "TCP", "targetPort": "dns", "nodePort": 30053},
                      {"name": "b", "port": 53, "protocol": "UDP", "targetPort": "dns", "nodePort": 30053}]}))
        .is_empty());
        // A Local LoadBalancer before allocation: no health check node port yet.
        assert!(create(json!({"type": "LoadBalancer", "externalTrafficPolicy": "Local",
                              "allocateLoadBalancerNodePorts": true, "loadBalancerClass": "example.com/lb",
                              "loadBalancerSourceRanges": [" 10.0.0.0/8 "]}))
        .is_empty());
        assert!(create(json!({"sessionAffinity": "ClientIP",
            "sessionAffinityConfig": {"clientIP": {"timeoutSeconds": 10800}},
            "trafficDistribution": "PreferSameNode", "selector": {"app": "web"}}))
        .is_empty());
        // A ClusterIP Service with external IPs and no policy (kube defaults it to Cluster).
        assert!(create(json!({"externalIPs": ["192.0.2.1"]})).is_empty());
    }

    #[test]
    fn ports() {
        assert_eq!(
            create(json!({"ports": null})),
            ["spec.ports: Required value"]
        );
        assert_eq!(
            create(
                json!({"ports": [{"port": 80, "protocol": "TCP", "targetPort": 80},
                                    {"port": 81, "protocol": "TCP", "targetPort": 81}]})
            ),
            [
                "spec.ports[0].name: Required value",
                "spec.ports[1].name: Required value"
            ]
        );
        assert_eq!(
            create(json!({"ports": [
                {"name": "Web", "port": 0, "protocol": "HTTP", "targetPort": "Http", "appProtocol": "a b"},
                {"name": "x", "port": 80, "protocol": "TCP", "targetPort": 70000}]})),
            [
                "spec.ports[0].name: Invalid value: \"Web\": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
                "spec.ports[0].port: Invalid value: 0: must be between 1 and 65535, inclusive",
                "spec.ports[0].protocol: Unsupported value: \"HTTP\": supported values: \"SCTP\", \"TCP\", \"UDP\"",
                "spec.ports[0].targetPort: Invalid value: \"Http\": must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)",
                "spec.ports[0].appProtocol: Invalid value: \"a b\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
                "spec.ports[1].targetPort: Invalid value: 70000: must be between 1 and 65535, inclusive"
            ]
        );
        assert_eq!(
            create(json!({"type": "NodePort", "externalTrafficPolicy": "Cluster", "ports": [
                {"name": "a", "port": 80, "protocol": "TCP", "targetPort": 80, "nodePort": 30001},
                {"name": "a", "port": 80, "protocol": "TCP", "targetPort": 80, "nodePort": 30001}]})),
            [
                "spec.ports[1].name: Duplicate value: \"a\"",
                "spec.ports[1].nodePort: Duplicate value: 30001",
                "spec.ports[1]: Duplicate value: {\"Name\":\"\",\"Protocol\":\"TCP\",\"AppProtocol\":null,\"Port\":80,\"TargetPort\":0,\"NodePort\":0}"
            ]
        );
    }

    #[test]
    fn types_and_external_names() {
        assert_eq!(
            create(json!({"type": "ExternalName", "internalTrafficPolicy": null, "ports": null})),
            ["spec.externalName: Required value"]
        );
        assert_eq!(
            create(json!({"type": "ExternalName", "externalName": "Bad_Name",
                          "clusterIP": "10.96.0.9", "ipFamilyPolicy": "SingleStack"})),
            [
                "spec.clusterIPs: Forbidden: may not be set for ExternalName services",
                "spec.ipFamilyPolicy: Forbidden: may not be set for ExternalName services",
                "spec.externalName: Invalid value: \"Bad_Name\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
            ]
        );
        assert_eq!(
            create(json!({"type": "NodePort", "clusterIP": "None", "externalTrafficPolicy": "Cluster"})),
            ["spec.clusterIPs[0]: Invalid value: \"None\": may not be set to 'None' for NodePort services"]
        );
        assert_eq!(
            create(json!({"type": "Weird", "sessionAffinity": "Sticky", "internalTrafficPolicy": "Nearest"})),
            [
                "spec.sessionAffinity: Unsupported value: \"Sticky\": supported values: \"ClientIP\", \"None\"",
                "spec.type: Unsupported value: \"Weird\": supported values: \"ClusterIP\", \"ExternalName\", \"LoadBalancer\", \"NodePort\"",
                "spec.internalTrafficPolicy: Unsupported value: \"Nearest\": supported values: \"Cluster\", \"Local\""
            ]
        );
        assert_eq!(
            create(json!({"internalTrafficPolicy": null, "trafficDistribution": "Nearby"})),
            [
                "spec.internalTrafficPolicy: Required value",
                "spec.trafficDistribution: Unsupported value: \"Nearby\": supported values: \"PreferClose\", \"PreferSameZone\", \"PreferSameNode\""
            ]
        );
    }

    #[test]
    fn affinity_selector_and_external_ips() {
        assert_eq!(
            create(json!({"sessionAffinity": "ClientIP",
                          "sessionAffinityConfig": {"clientIP": {"timeoutSeconds": 0}}})),
            ["spec.sessionAffinityConfig.clientIP.timeoutSeconds: Invalid value: 0: must be greater than 0 and less than 86400"]
        );
        assert_eq!(
            create(json!({"sessionAffinity": "ClientIP"})),
            ["spec.sessionAffinityConfig: Required value: when session affinity type is ClientIP"]
        );
        assert_eq!(
            create(json!({"selector": {"app": "a b"}})),
            ["spec.selector: Invalid value: \"a b\": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"]
        );
        assert_eq!(
            create(json!({"externalIPs": ["127.0.0.1", "0.0.0.0", "10.1.1", "fe80::1"],
                          "externalTrafficPolicy": "Cluster"})),
            [
                "spec.externalIPs[0]: Invalid value: \"127.0.0.1\": may not be in the loopback range (127.0.0.0/8, ::1/128)",
                "spec.externalIPs[1]: Invalid value: \"0.0.0.0\": may not be unspecified (0.0.0.0)",
                "spec.externalIPs[2]: Invalid value: \"10.1.1\": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)",
                "spec.externalIPs[3]: Invalid value: \"fe80::1\": may not be in the link-local range (169.254.0.0/16, fe80::/10)"
            ]
        );
    }

    #[test]
    fn load_balancer_fields() {
        assert_eq!(
            create(json!({"loadBalancerSourceRanges": ["10.0.0.0/33"],
                          "allocateLoadBalancerNodePorts": true, "loadBalancerClass": "x/y"})),
            [
                "spec.LoadBalancerSourceRanges: Forbidden: may only be used when `type` is 'LoadBalancer'",
                "spec.LoadBalancerSourceRanges[0]: Invalid value: \"10.0.0.0/33\": must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)",
                "spec.allocateLoadBalancerNodePorts: Forbidden: may only be used when `type` is 'LoadBalancer'",
                "spec.loadBalancerClass: Forbidden: may only be used when `type` is 'LoadBalancer'"
            ]
        );
        assert_eq!(
            create(json!({"type": "LoadBalancer", "externalTrafficPolicy": "Cluster", "clusterIP": "None"})),
            [
                "spec.clusterIPs[0]: Invalid value: \"None\": may not be set to 'None' for LoadBalancer services",
                "allocateLoadBalancerNodePorts: Required value"
            ]
        );
        let mut with_annotation = svc(json!({}));
        with_annotation["metadata"]["annotations"] = json!({
            "service.beta.kubernetes.io/load-balancer-source-ranges": "10.0.0.0/8, nope",
            "service.kubernetes.io/topology-mode": "Auto",
            "service.kubernetes.io/topology-aware-hints": "Disabled"});
        assert_eq!(
            msgs(&validate("", "services", &with_annotation, None)),
            [
                "metadata.annotations[service.kubernetes.io/topology-mode]: Invalid value: \"Auto\": must match annotations[service.kubernetes.io/topology-aware-hints] when both are specified",
                "metadata.annotations[service.beta.kubernetes.io/load-balancer-source-ranges]: Forbidden: may only be used when `type` is 'LoadBalancer'",
                "metadata.annotations[service.beta.kubernetes.io/load-balancer-source-ranges]: Invalid value: \"nope\": must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)"
            ]
        );
    }

    #[test]
    fn traffic_policies_and_health_check_ports() {
        assert_eq!(
            create(json!({"externalTrafficPolicy": "Cluster"})),
            ["spec.externalTrafficPolicy: Invalid value: \"Cluster\": may only be set for externally-accessible services"]
        );
        assert_eq!(
            create(json!({"type": "NodePort", "externalTrafficPolicy": "Global", "healthCheckNodePort": 30100})),
            [
                "spec.externalTrafficPolicy: Unsupported value: \"Global\": supported values: \"Cluster\", \"Local\"",
                "spec.healthCheckNodePort: Invalid value: 30100: may only be set when `type` is 'LoadBalancer' and `externalTrafficPolicy` is 'Local'"
            ]
        );
        assert_eq!(
            create(json!({"type": "LoadBalancer", "externalTrafficPolicy": "Local",
                          "allocateLoadBalancerNodePorts": true, "healthCheckNodePort": 70000})),
            ["spec.healthCheckNodePort: Invalid value: 70000: must be between 1 and 65535, inclusive"]
        );
    }

    #[test]
    fn cluster_ip_fields_are_checked_first_and_alone() {
        // As kube's allocator: these errors only, not the missing ports.
        assert_eq!(
            create(json!({"ports": null, "ipFamilies": ["IPv5", "IPv4", "IPv4"], "ipFamilyPolicy": "Single"})),
            [
                "spec.ipFamilies[0]: Unsupported value: \"IPv5\": supported values: \"IPv4\", \"IPv6\"",
                "spec.ipFamilies[2]: Duplicate value: \"IPv4\"",
                "spec.ipFamilyPolicy: Unsupported value: \"Single\": supported values: \"PreferDualStack\", \"RequireDualStack\", \"SingleStack\""
            ]
        );
        assert_eq!(
            create(json!({"clusterIPs": ["10.96.0.5"]})),
            ["spec.clusterIPs: Invalid value: [\"10.96.0.5\"]: must be empty when `clusterIP` is not specified"]
        );
        assert_eq!(
            create(json!({"clusterIP": "10.96.0.5", "clusterIPs": ["10.96.0.6"]})),
            ["spec.clusterIPs: Invalid value: [\"10.96.0.6\"]: first value must match `clusterIP`"]
        );
        assert_eq!(
            create(json!({"clusterIP": "10.0.0.256"})),
            ["spec.clusterIPs[0]: Invalid value: \"10.0.0.256\": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"]
        );
        assert_eq!(
            create(json!({"clusterIP": "10.96.0.5", "clusterIPs": ["10.96.0.5", "10.96.0.6"],
                          "ipFamilies": ["IPv6"]})),
            [
                "spec.clusterIPs: Invalid value: [\"10.96.0.5\",\"10.96.0.6\"]: may specify no more than one IP for each IP family",
                "spec.clusterIPs[0]: Invalid value: \"10.96.0.5\": expected an IPv6 value as indicated by `ipFamilies[0]`"
            ]
        );
        assert_eq!(
            create(json!({"clusterIP": "None", "clusterIPs": ["None", "10.96.0.6"]})),
            ["spec.clusterIPs: Invalid value: [\"None\",\"10.96.0.6\"]: 'None' must be the first and only value"]
        );
    }

    #[test]
    fn values_render_as_json_like_kube_1_34() {
        // A released primary: the nil `[]string` prints as `null`, the nil `*IPFamilyPolicy`
        // too (1.33 printed `[]string(nil)` and `"null"`).
        let old = json!({"clusterIP": "10.96.0.5", "clusterIPs": ["10.96.0.5", "fd00::5"],
            "ipFamilies": ["IPv4", "IPv6"], "ipFamilyPolicy": "PreferDualStack"});
        let mut out = Vec::new();
        upgrade_downgrade_cluster_ips(&old, &json!({"clusterIP": "10.96.0.5"}), &mut out);
        let got: Vec<String> = out.iter().map(ToString::to_string).collect();
        assert_eq!(
            got,
            ["spec.clusterIPs[0]: Invalid value: null: primary clusterIP can not be unset"]
        );
        let mut out = Vec::new();
        let new = json!({"clusterIP": "10.96.0.6", "clusterIPs": ["10.96.0.6"],
            "ipFamilies": ["IPv4"]});
        upgrade_downgrade_cluster_ips(&old, &new, &mut out);
        upgrade_downgrade_ip_families(&old, &new, &mut out);
        let got: Vec<String> = out.iter().map(ToString::to_string).collect();
        assert_eq!(
            got,
            [
                "spec.clusterIPs[0]: Invalid value: [\"10.96.0.6\"]: may not change once set",
                "spec.ipFamilyPolicy: Invalid value: null: must be set to 'SingleStack' when releasing the secondary clusterIP",
                "spec.ipFamilyPolicy: Invalid value: null: must be set to 'SingleStack' when releasing the secondary ipFamily",
            ]
        );
        let mut out = Vec::new();
        let new = json!({"clusterIP": "10.96.0.5", "clusterIPs": ["10.96.0.5"],
            "ipFamilies": ["IPv6"], "ipFamilyPolicy": "PreferDualStack"});
        upgrade_downgrade_ip_families(&old, &new, &mut out);
        let got: Vec<String> = out.iter().map(ToString::to_string).collect();
        assert_eq!(
            got,
            [
                "spec.ipFamilies[0]: Invalid value: [\"10.96.0.5\"]: may not change once set",
                "spec.ipFamilyPolicy: Invalid value: \"PreferDualStack\": must be set to 'SingleStack' when releasing the secondary ipFamily",
            ]
        );
    }

    #[test]
    fn updates_keep_allocated_values_and_immutable_ips() {
        let old = stored(json!({}));
        // A PUT of the manifest as first applied: the allocated values are kept.
        assert!(update(&old, &svc(json!({}))).is_empty());
        assert!(update(&old, &old).is_empty());
        // `kubectl edit` of `clusterIP` alone.
        let mut edited = old.clone();
        edited["spec"]["clusterIP"] = json!("10.96.0.99");
        assert_eq!(
            update(&old, &edited),
            ["spec.clusterIPs[0]: Invalid value: [\"10.96.0.99\"]: may not change once set"]
        );
        // Both fields changed.
        edited["spec"]["clusterIPs"] = json!(["10.96.0.99"]);
        assert_eq!(
            update(&old, &edited),
            ["spec.clusterIPs[0]: Invalid value: [\"10.96.0.99\"]: may not change once set"]
        );
        // The families may not change.
        let mut v6 = old.clone();
        v6["spec"]["ipFamilies"] = json!(["IPv6"]);
        assert_eq!(
            update(&old, &v6),
            [
                "spec.clusterIPs[0]: Invalid value: \"10.96.0.10\": expected an IPv6 value as indicated by `ipFamilies[0]`"
            ]
        );
    }

    #[test]
    fn type_changes_drop_what_the_new_type_does_not_need() {
        let old = stored(json!({}));
        // To ExternalName with the stored IPs and families left in: dropped, as kube does.
        let mut ext = old.clone();
        ext["spec"]["type"] = json!("ExternalName");
        ext["spec"]["externalName"] = json!("db.example.com");
        assert!(update(&old, &ext).is_empty());
        // ... but not when the client changed them.
        ext["spec"]["clusterIPs"] = json!(["10.96.0.11"]);
        assert_eq!(
            update(&old, &ext),
            ["spec.clusterIPs: Forbidden: may not be set for ExternalName services"]
        );
        // And back: a new IP is allocated later.
        let mut back = svc(json!({}));
        back["spec"]["type"] = json!("ClusterIP");
        let stored_ext = svc(
            json!({"type": "ExternalName", "externalName": "db.example.com",
                                    "ports": null, "internalTrafficPolicy": null}),
        );
        assert!(update(&stored_ext, &back).is_empty());
        // NodePort -> ClusterIP with the node ports and the policy left in.
        let np = stored(
            json!({"type": "NodePort", "externalTrafficPolicy": "Cluster",
            "ports": [{"port": 80, "protocol": "TCP", "targetPort": 80, "nodePort": 30080}]}),
        );
        let mut cip = np.clone();
        cip["spec"]["type"] = json!("ClusterIP");
        assert!(update(&np, &cip).is_empty());
        // ... with a new node port: kube keeps it and refuses it (here: the allocator).
        cip["spec"]["ports"][0]["nodePort"] = json!(30081);
        cip["spec"]["externalTrafficPolicy"] = json!("Local");
        assert_eq!(
            update(&np, &cip),
            ["spec.externalTrafficPolicy: Invalid value: \"Local\": may only be set for externally-accessible services"]
        );
    }

    #[test]
    fn load_balancer_updates() {
        let old = stored(
            json!({"type": "LoadBalancer", "externalTrafficPolicy": "Local",
            "allocateLoadBalancerNodePorts": true, "loadBalancerClass": "a.io/x",
            "healthCheckNodePort": 30200,
            "ports": [{"port": 80, "protocol": "TCP", "targetPort": 80, "nodePort": 30080}]}),
        );
        // Node ports and the health check port left out: kept.
        let mut same = old.clone();
        same["spec"]["ports"][0]
            .as_object_mut()
            .unwrap()
            .remove("nodePort");
        same["spec"]
            .as_object_mut()
            .unwrap()
            .remove("healthCheckNodePort");
        assert!(update(&old, &same).is_empty());
        let mut changed = old.clone();
        changed["spec"]["loadBalancerClass"] = json!("b.io/x");
        changed["spec"]["healthCheckNodePort"] = json!(30201);
        assert_eq!(
            update(&old, &changed),
            [
                "spec.loadBalancerClass: Invalid value: \"b.io/x\": may not change once set",
                "spec.healthCheckNodePort: Forbidden: field is immutable"
            ]
        );
        // To ClusterIP: the class, the policy, the health check port and allocation flag go.
        let mut cip = old.clone();
        cip["spec"]["type"] = json!("ClusterIP");
        assert!(update(&old, &cip).is_empty());
    }

    #[test]
    fn status_updates() {
        let lb = stored(
            json!({"type": "LoadBalancer", "externalTrafficPolicy": "Cluster",
                               "allocateLoadBalancerNodePorts": true}),
        );
        let with = |ingress: Value| {
            let mut s = lb.clone();
            s["status"] = json!({"loadBalancer": {"ingress": ingress}});
            s
        };
        let status = |old: &Value, new: &Value| msgs(&validate_status("", "services", new, old));
        assert!(status(
            &lb,
            &with(json!([{"ip": "192.0.2.1", "ipMode": "VIP"},
                                          {"hostname": "lb.example.com"}]))
        )
        .is_empty());
        // No ipMode with an IP: kube defaults it to VIP.
        assert!(status(&lb, &with(json!([{"ip": "192.0.2.1"}]))).is_empty());
        assert_eq!(
            status(&lb, &with(json!([{"ip": "300.0.0.1", "ipMode": "Tunnel"},
                                     {"ipMode": "VIP", "hostname": "192.0.2.9"}]))),
            [
                "status.loadBalancer.ingress[0].ip: Invalid value: \"300.0.0.1\": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)",
                "status.loadBalancer.ingress[0].ipMode: Unsupported value: \"Tunnel\": supported values: \"Proxy\", \"VIP\"",
                "status.loadBalancer.ingress[1].ipMode: Forbidden: may not be specified when `ip` is not set",
                "status.loadBalancer.ingress[1].hostname: Invalid value: \"192.0.2.9\": must be a DNS name, not an IP address"
            ]
        );
        let cip = stored(json!({}));
        let mut s = cip.clone();
        s["status"] = json!({"loadBalancer": {"ingress": [{"ip": "192.0.2.1"}]}});
        assert_eq!(
            status(&cip, &s),
            ["status.loadBalancer.ingress: Forbidden: may only be used when `spec.type` is 'LoadBalancer'"]
        );
        assert!(validate_status("", "endpoints", &s, &cip).is_empty());
    }

    fn ep(subsets: Value) -> Vec<String> {
        msgs(&validate(
            "",
            "endpoints",
            &json!({"metadata": {"name": "e"}, "subsets": subsets}),
            None,
        ))
    }

    #[test]
    fn endpoints() {
        assert!(ep(json!([{"addresses": [{"ip": "10.244.0.5", "hostname": "web-0", "nodeName": "node-1"}],
                           "notReadyAddresses": [{"ip": "fd00::5"}],
                           "ports": [{"name": "http", "port": 80, "protocol": "TCP"},
                                     {"name": "dns", "port": 53, "protocol": "UDP", "appProtocol": "dns"}]}]))
        .is_empty());
        // A headless Service's endpoints need no port.
        assert!(ep(json!([{"addresses": [{"ip": "10.244.0.5"}]}])).is_empty());
        assert_eq!(
            ep(json!([{"ports": [{"port": 80, "protocol": "TCP"}]}])),
            ["subsets[0]: Required value: must specify `addresses` or `notReadyAddresses`"]
        );
        assert_eq!(
            ep(json!([{"addresses": [{"ip": "10.244.0"}, {"ip": "127.0.0.1", "hostname": "A"}],
                       "ports": [{"port": 0, "protocol": "ICMP"}, {"name": "b", "port": 81, "protocol": "TCP"}]}])),
            [
                "subsets[0].addresses[0].ip: Invalid value: \"10.244.0\": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)",
                "subsets[0].addresses[0].ip: Invalid value: \"10.244.0\": must be a valid IP address",
                "subsets[0].addresses[1].hostname: Invalid value: \"A\": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
                "subsets[0].addresses[1].ip: Invalid value: \"127.0.0.1\": may not be in the loopback range (127.0.0.0/8, ::1/128)",
                "subsets[0].ports[0].name: Required value",
                "subsets[0].ports[0].port: Invalid value: 0: must be between 1 and 65535, inclusive",
                "subsets[0].ports[0].protocol: Unsupported value: \"ICMP\": supported values: \"SCTP\", \"TCP\", \"UDP\""
            ]
        );
    }

    fn slice(body: Value) -> Value {
        let mut s = json!({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
                           "metadata": {"name": "s-abc"}, "addressType": "IPv4",
                           "endpoints": [{"addresses": ["10.244.0.5"], "conditions": {"ready": true}}],
                           "ports": [{"name": "http", "port": 80, "protocol": "TCP"}]});
        if let (Some(base), Some(extra)) = (s.as_object_mut(), body.as_object()) {
            for (k, v) in extra {
                base.insert(k.clone(), v.clone());
            }
        }
        s
    }

    fn slice_msgs(body: Value) -> Vec<String> {
        msgs(&validate(
            DISCOVERY_GROUP,
            "endpointslices",
            &slice(body),
            None,
        ))
    }

    #[test]
    fn endpoint_slices() {
        assert!(slice_msgs(json!({})).is_empty());
        assert!(slice_msgs(json!({"endpoints": [], "ports": []})).is_empty());
        assert!(slice_msgs(
            json!({"addressType": "FQDN", "endpoints": [{"addresses": ["db.example.com."]}]})
        )
        .is_empty());
        assert_eq!(
            slice_msgs(json!({"addressType": ""})),
            ["addressType: Required value"]
        );
        assert_eq!(
            slice_msgs(json!({"addressType": "IP"})),
            ["addressType: Unsupported value: \"IP\": supported values: \"FQDN\", \"IPv4\", \"IPv6\""]
        );
        assert_eq!(
            slice_msgs(json!({"endpoints": [
                {"addresses": ["fd00::1", "169.254.1.1", "1.2.3"], "nodeName": "Node_1", "hostname": "h.x",
                 "hints": {"forZones": [{"name": "a"}, {"name": "a"}], "forNodes": [{"name": "n1"}]}},
                {"addresses": []}]})),
            [
                "endpoints[0].addresses[0]: Invalid value: \"fd00::1\": must be an IPv4 address",
                "endpoints[0].addresses[1]: Invalid value: \"169.254.1.1\": may not be in the link-local range (169.254.0.0/16, fe80::/10)",
                "endpoints[0].addresses[2]: Invalid value: \"1.2.3\": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)",
                "endpoints[0].nodeName: Invalid value: \"Node_1\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
                "endpoints[0].hostname: Invalid value: \"h.x\": must not contain dots",
                "endpoints[0].hints.forZones[1].name: Duplicate value: \"a\"",
                "endpoints[1].addresses: Required value: must contain at least 1 address"
            ]
        );
        assert_eq!(
            slice_msgs(json!({"addressType": "FQDN", "endpoints": [{"addresses": ["localhost"]}]})),
            ["endpoints[0].addresses[0]: Invalid value: \"localhost\": should be a domain with at least two segments separated by dots"]
        );
        let many: Vec<Value> = (0..1001)
            .map(|_| json!({"addresses": ["10.0.0.1"]}))
            .collect();
        assert_eq!(
            slice_msgs(json!({"endpoints": many})),
            ["endpoints: Too many: 1001: must have at most 1000 items"]
        );
        assert_eq!(
            slice_msgs(json!({"ports": [{"port": 80, "protocol": "TCP"}, {"port": 81},
                                        {"name": "Web", "port": 82, "protocol": "QUIC", "appProtocol": "-x"}]})),
            [
                "ports[1].name: Duplicate value: \"\"",
                "ports[1].protocol: Required value",
                "ports[2].name: Invalid value: \"Web\": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
                "ports[2].protocol: Unsupported value: \"QUIC\": supported values: \"SCTP\", \"TCP\", \"UDP\"",
                "ports[2].appProtocol: Invalid value: \"-x\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
            ]
        );
        let old = slice(json!({}));
        let v6 = slice(json!({"addressType": "IPv6", "endpoints": [{"addresses": ["fd00::5"]}]}));
        assert_eq!(
            msgs(&validate(
                DISCOVERY_GROUP,
                "endpointslices",
                &v6,
                Some(&old)
            )),
            ["addressType: Invalid value: \"IPv6\": field is immutable"]
        );
        assert!(validate(DISCOVERY_GROUP, "endpointslices", &old, Some(&old)).is_empty());
    }

    /// What turtles writes for the `kubernetes` Service (after kube's defaults) passes, for a
    /// host advertising a routable address; a loopback one (a listen address of 0.0.0.0 or
    /// 127.0.0.1) is refused in the Endpoints and the EndpointSlice, as kube refuses it.
    #[test]
    fn the_kubernetes_service_objects() {
        use crate::builtin::kubernetes_service::{objects, only};
        let check = |listen: &str| -> Vec<String> {
            let hosts = only(listen.parse().unwrap());
            let mut out = Vec::new();
            for mut obj in objects(6443, &hosts, std::net::Ipv4Addr::new(10, 96, 0, 1)) {
                let (group, resource) = match obj["kind"].as_str() {
                    Some("Service") => ("", "services"),
                    Some("Endpoints") => ("", "endpoints"),
                    _ => (DISCOVERY_GROUP, "endpointslices"),
                };
                crate::builtin::defaults::apply(group, resource, &mut obj, true);
                out.extend(msgs(&validate(group, resource, &obj, None)));
            }
            out
        };
        assert!(check("192.0.2.10:6443").is_empty());
        assert!(check("[2001:db8::10]:6443").is_empty());
        assert_eq!(
            check("0.0.0.0:6443"),
            [
                "subsets[0].addresses[0].ip: Invalid value: \"127.0.0.1\": may not be in the loopback range (127.0.0.0/8, ::1/128)",
                "endpoints[0].addresses[0]: Invalid value: \"127.0.0.1\": may not be in the loopback range (127.0.0.0/8, ::1/128)"
            ]
        );
    }

    /// The shape the example EndpointSlice controller (`guest-examples/rust/endpointslice`)
    /// writes passes.
    #[test]
    fn the_example_controller_objects() {
        let s = json!({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
            "metadata": {"generateName": "web-", "labels": {"kubernetes.io/service-name": "web"}},
            "addressType": "IPv4",
            "endpoints": [{"addresses": ["10.244.0.5"],
                           "conditions": {"ready": true, "serving": true, "terminating": false},
                           "hostname": "web-0", "nodeName": "node-1",
                           "targetRef": {"kind": "Pod", "namespace": "default", "name": "web-0", "uid": "u"}}],
            "ports": [{"name": "", "protocol": "TCP", "port": 8080}]});
        assert!(validate(DISCOVERY_GROUP, "endpointslices", &s, None).is_empty());
        let e = json!({"apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": "web"},
            "subsets": [{"addresses": [{"ip": "10.244.0.5", "hostname": "web-0", "nodeName": "node-1",
                                         "targetRef": {"kind": "Pod", "name": "web-0"}}],
                         "notReadyAddresses": [{"ip": "10.244.0.6"}],
                         "ports": [{"port": 8080, "protocol": "TCP"}]}]});
        assert!(validate("", "endpoints", &e, None).is_empty());
    }

    #[test]
    fn sloppy_ips_and_cidrs() {
        assert!(parse_ip16("010.001.002.003").is_some());
        assert!(parse_ip16("::ffff:1.2.3.4").is_some_and(|ip| to4_16(&ip).is_some()));
        assert!(parse_ip16("2001:db8::1").is_some_and(|ip| to4_16(&ip).is_none()));
        for bad in [
            "",
            "1.2.3",
            "1.2.3.4.5",
            "256.1.1.1",
            "::1::",
            "fe80::1%eth0",
            "None",
            "1:2:3:4:5:6:7:8:9",
        ] {
            assert!(parse_ip16(bad).is_none(), "{bad}");
        }
        assert!(
            parse_cidr_sloppy("10.0.0.0/008").is_some()
                && parse_cidr_sloppy("2001:db8::/64").is_some()
        );
        assert!(
            parse_cidr_sloppy("10.0.0.0/33").is_none()
                && parse_cidr_sloppy("10.0.0.0").is_none()
                && parse_cidr_sloppy("10.0.0.0/").is_none()
        );
        assert_eq!(
            crate::builtin::validation::field::port_name("1--2").len(),
            2
        );
    }

    #[test]
    fn other_kinds_and_shapes_are_safe() {
        assert!(validate("apps", "services", &json!({}), None).is_empty());
        for v in [
            json!(null),
            json!([]),
            json!("x"),
            json!({"spec": 5}),
            json!({"spec": {"ports": [1, null, "x"]}}),
        ] {
            let _ = validate("", "services", &v, Some(&v));
            let _ = validate("", "endpoints", &v, None);
            let _ = validate(DISCOVERY_GROUP, "endpointslices", &v, Some(&v));
            let _ = validate_status("", "services", &v, &v);
        }
    }
}
