//! What a Service's EndpointSlices and Endpoints should hold, from the Service and its Pods:
//! pure functions over JSON, as kube's `k8s.io/endpointslice` and endpoints controller compute
//! them (`podToEndpoint`, `getEndpointPorts`, `findPort`, `ShouldPodBeInEndpoints`,
//! `addEndpointSubset` + `RepackSubsets`).

use std::collections::BTreeMap;

use turtles_controller::serde_json::Map;
use turtles_controller::{json, Value};

/// The `managed-by` value of kube's EndpointSlice controller: slices it (and this controller)
/// own carry it in `endpointslice.kubernetes.io/managed-by`.
pub const MANAGED_BY: &str = "endpointslice-controller.k8s.io";
/// `kubernetes.io/service-name`: the Service a slice belongs to.
pub const LABEL_SERVICE_NAME: &str = "kubernetes.io/service-name";
/// `endpointslice.kubernetes.io/managed-by`.
pub const LABEL_MANAGED_BY: &str = "endpointslice.kubernetes.io/managed-by";
/// `service.kubernetes.io/headless`: set (to "") on the slices and Endpoints of a headless Service.
pub const LABEL_HEADLESS: &str = "service.kubernetes.io/headless";
/// kube's limit of endpoints per slice (`--max-endpoints-per-slice` default).
pub const MAX_ENDPOINTS_PER_SLICE: usize = 100;
/// kube's limit of addresses in one Endpoints object; more are truncated and the object annotated.
pub const MAX_ENDPOINTS_CAPACITY: usize = 1000;
/// `endpoints.kubernetes.io/over-capacity`.
pub const ANNOTATION_OVER_CAPACITY: &str = "endpoints.kubernetes.io/over-capacity";

/// The Service's `spec.selector`, or `None` for a Service without one (its endpoints are
/// managed by someone else, as for the `kubernetes` Service).
pub fn selector(service: &Value) -> Option<&Map<String, Value>> {
    service.pointer("/spec/selector").and_then(Value::as_object)
}

/// Whether `pod`'s labels match an equality-based Service selector (every pair present).
pub fn selects(selector: &Map<String, Value>, pod: &Value) -> bool {
    let labels = pod.pointer("/metadata/labels");
    selector
        .iter()
        .all(|(k, v)| labels.and_then(|l| l.get(k)) == Some(v))
}

/// Whether the Service has a cluster IP (kube's `isServiceIPSet`): not headless.
pub fn has_cluster_ip(service: &Value) -> bool {
    let ip = str_at(service, "/spec/clusterIP");
    !ip.is_empty() && ip != "None"
}

fn str_at<'a>(v: &'a Value, pointer: &str) -> &'a str {
    v.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

/// kube's `IsPodReady`: the `Ready` condition is `True`.
pub fn pod_ready(pod: &Value) -> bool {
    pod.pointer("/status/conditions")
        .and_then(Value::as_array)
        .is_some_and(|cs| {
            cs.iter()
                .any(|c| c["type"] == "Ready" && c["status"] == "True")
        })
}

fn terminating(pod: &Value) -> bool {
    pod.pointer("/metadata/deletionTimestamp")
        .is_some_and(|v| !v.is_null())
}

/// kube's `ShouldPodBeInEndpoints`: not Succeeded/Failed, has an IP, and not terminating unless
/// terminating pods are wanted.
pub fn pod_in_endpoints(pod: &Value, include_terminating: bool) -> bool {
    let phase = str_at(pod, "/status/phase");
    if phase == "Succeeded" || phase == "Failed" {
        return false;
    }
    if pod_ips(pod).is_empty() {
        return false;
    }
    include_terminating || !terminating(pod)
}

/// The Pod's IPv4 addresses (`status.podIPs`, else `status.podIP`): turtles is a single-stack
/// IPv4 cluster, so every slice has `addressType: IPv4`.
pub fn pod_ips(pod: &Value) -> Vec<String> {
    let mut ips: Vec<String> = pod
        .pointer("/status/podIPs")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|p| p["ip"].as_str())
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default();
    if ips.is_empty() {
        let ip = str_at(pod, "/status/podIP");
        if !ip.is_empty() {
            ips.push(ip.to_owned());
        }
    }
    ips.retain(|ip| !ip.contains(':'));
    ips
}

fn target_ref(pod: &Value) -> Value {
    json!({
        "kind": "Pod",
        "namespace": str_at(pod, "/metadata/namespace"),
        "name": str_at(pod, "/metadata/name"),
        "uid": str_at(pod, "/metadata/uid"),
    })
}

/// kube's `ShouldSetHostname`: the Pod names itself (`spec.hostname`) under this Service
/// (`spec.subdomain`).
fn hostname<'a>(pod: &'a Value, service: &Value) -> Option<&'a str> {
    let host = str_at(pod, "/spec/hostname");
    (!host.is_empty()
        && str_at(pod, "/spec/subdomain") == str_at(service, "/metadata/name")
        && str_at(pod, "/metadata/namespace") == str_at(service, "/metadata/namespace"))
    .then_some(host)
}

/// kube's `findPort`: a numeric `targetPort` as is; a named one looked up in the Pod's containers
/// (and restartable init containers) by name and protocol.
fn find_port(pod: &Value, service_port: &Value) -> Option<i64> {
    let protocol = service_port["protocol"].as_str().unwrap_or("TCP");
    match &service_port["targetPort"] {
        Value::Number(n) => n.as_i64(),
        Value::String(name) => {
            if let Ok(n) = name.parse::<i64>() {
                return Some(n);
            }
            let named = |containers: Option<&Vec<Value>>, sidecars_only: bool| {
                containers.into_iter().flatten().find_map(|c| {
                    if sidecars_only && c["restartPolicy"] != "Always" {
                        return None;
                    }
                    c["ports"].as_array().into_iter().flatten().find_map(|p| {
                        (p["name"] == name.as_str()
                            && p["protocol"].as_str().unwrap_or("TCP") == protocol)
                            .then(|| p["containerPort"].as_i64())
                            .flatten()
                    })
                })
            };
            named(
                pod.pointer("/spec/containers").and_then(Value::as_array),
                false,
            )
            .or_else(|| {
                named(
                    pod.pointer("/spec/initContainers")
                        .and_then(Value::as_array),
                    true,
                )
            })
        }
        // No targetPort (kube defaults it to the port).
        _ => service_port["port"].as_i64(),
    }
}

fn service_ports(service: &Value) -> &[Value] {
    service
        .pointer("/spec/ports")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[])
}

/// kube's `getEndpointPorts`: one slice port per Service port the Pod resolves.
fn slice_ports(service: &Value, pod: &Value) -> Vec<Value> {
    service_ports(service)
        .iter()
        .filter_map(|sp| {
            let port = find_port(pod, sp)?;
            let mut p = json!({
                "name": sp["name"].as_str().unwrap_or(""),
                "protocol": sp["protocol"].as_str().unwrap_or("TCP"),
                "port": port,
            });
            if let Some(app) = sp.get("appProtocol").filter(|a| a.is_string()) {
                p["appProtocol"] = app.clone();
            }
            Some(p)
        })
        .collect()
}

/// kube's `podToEndpoint` for addressType IPv4.
fn endpoint(pod: &Value, service: &Value) -> Value {
    let serving = pod_ready(pod);
    let terminating = terminating(pod);
    let publish = service
        .pointer("/spec/publishNotReadyAddresses")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let ready = publish || (serving && !terminating);
    let mut ep = json!({
        "addresses": pod_ips(pod),
        "conditions": { "ready": ready, "serving": serving, "terminating": terminating },
    });
    if let Some(h) = hostname(pod, service) {
        ep["hostname"] = json!(h);
    }
    ep["targetRef"] = target_ref(pod);
    let node = str_at(pod, "/spec/nodeName");
    if !node.is_empty() {
        ep["nodeName"] = json!(node);
    }
    ep
}

/// One desired EndpointSlice: its ports and endpoints (at most [`MAX_ENDPOINTS_PER_SLICE`]).
#[derive(Clone, Debug, PartialEq)]
pub struct SliceContent {
    pub ports: Vec<Value>,
    pub endpoints: Vec<Value>,
}

/// The slices a Service should have: its Pods' endpoints grouped by the ports they resolve
/// (Pods that name ports differently land in different slices, as in kube), each group in
/// chunks of [`MAX_ENDPOINTS_PER_SLICE`], endpoints ordered by Pod name. Terminating Pods stay,
/// with `terminating: true` (kube's slices include them).
pub fn slices(service: &Value, pods: &[Value]) -> Vec<SliceContent> {
    let Some(sel) = selector(service) else {
        return Vec::new();
    };
    let headless_no_ports = service_ports(service).is_empty();
    let mut pods: Vec<&Value> = pods
        .iter()
        .filter(|p| selects(sel, p) && pod_in_endpoints(p, true))
        .collect();
    pods.sort_by(|a, b| str_at(a, "/metadata/name").cmp(str_at(b, "/metadata/name")));
    // Group by the serialized port list (BTreeMap: a stable order of slices).
    let mut groups: BTreeMap<String, SliceContent> = BTreeMap::new();
    for pod in pods {
        let ports = slice_ports(service, pod);
        if ports.is_empty() && !headless_no_ports {
            continue; // the Pod resolves none of the Service's ports
        }
        let key = Value::Array(ports.clone()).to_string();
        groups
            .entry(key)
            .or_insert_with(|| SliceContent {
                ports,
                endpoints: Vec::new(),
            })
            .endpoints
            .push(endpoint(pod, service));
    }
    let mut out = Vec::new();
    for (_, group) in groups {
        for chunk in group.endpoints.chunks(MAX_ENDPOINTS_PER_SLICE) {
            out.push(SliceContent {
                ports: group.ports.clone(),
                endpoints: chunk.to_vec(),
            });
        }
    }
    out
}

/// The labels of a Service's slices (kube's `setEndpointSliceLabels`): the Service's own labels
/// minus the reserved ones, plus the headless marker, the service name and `managed-by`.
pub fn slice_labels(service: &Value) -> Value {
    let mut labels = Map::new();
    if let Some(own) = service
        .pointer("/metadata/labels")
        .and_then(Value::as_object)
    {
        for (k, v) in own {
            if k != LABEL_SERVICE_NAME && k != LABEL_MANAGED_BY && k != LABEL_HEADLESS {
                labels.insert(k.clone(), v.clone());
            }
        }
    }
    if !has_cluster_ip(service) {
        labels.insert(LABEL_HEADLESS.into(), json!(""));
    }
    labels.insert(
        LABEL_SERVICE_NAME.into(),
        json!(str_at(service, "/metadata/name")),
    );
    labels.insert(LABEL_MANAGED_BY.into(), json!(MANAGED_BY));
    Value::Object(labels)
}

/// The labels of a Service's Endpoints (kube's endpoints controller): the Service's labels, with
/// the headless marker added for a headless Service and removed otherwise.
pub fn endpoints_labels(service: &Value) -> Value {
    let mut labels = service
        .pointer("/metadata/labels")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    if has_cluster_ip(service) {
        labels.remove(LABEL_HEADLESS);
    } else {
        labels.insert(LABEL_HEADLESS.into(), json!(""));
    }
    Value::Object(labels)
}

/// The `subsets` of a Service's (legacy core/v1) Endpoints, as kube's endpoints controller
/// builds them: one address per Pod (ready or not ready), grouped into subsets by identical
/// port lists, addresses ordered by IP; truncated to [`MAX_ENDPOINTS_CAPACITY`] addresses
/// (ready ones first), in which case the second value is true.
pub fn subsets(service: &Value, pods: &[Value]) -> (Vec<Value>, bool) {
    let Some(sel) = selector(service) else {
        return (Vec::new(), false);
    };
    let publish = service
        .pointer("/spec/publishNotReadyAddresses")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let sps = service_ports(service);
    let no_ports = sps.is_empty();
    let headless = !has_cluster_ip(service);
    // kube pairs each address with each Service port it resolves, then repacks the pairs into
    // subsets of addresses sharing one set of ports. The same, without the pairs: each Pod's
    // set of ports is a compact signature (the Service ports' indices and the numbers they
    // resolve to), the addresses grouped by it; each distinct set's ports are written once.
    // (A pair per Pod and port took 300,000 JSON values for 60 Pods behind 5,000 ports.)
    let mut by_ports: BTreeMap<Vec<(usize, i64)>, (Vec<Value>, Vec<Value>)> = BTreeMap::new();
    for pod in pods
        .iter()
        .filter(|p| selects(sel, p) && pod_in_endpoints(p, publish))
    {
        let Some(ip) = pod_ips(pod).into_iter().next() else {
            continue;
        };
        let signature: Vec<(usize, i64)> = sps
            .iter()
            .enumerate()
            .filter_map(|(i, sp)| find_port(pod, sp).map(|port| (i, port)))
            .collect();
        // Only a headless Service may have no ports; its addresses need none. A Pod resolving
        // none of a Service's ports is in no subset.
        if signature.is_empty() && !(no_ports && headless) {
            continue;
        }
        let mut address = json!({ "ip": ip });
        if let Some(h) = hostname(pod, service) {
            address["hostname"] = json!(h);
        }
        let node = str_at(pod, "/spec/nodeName");
        if !node.is_empty() {
            address["nodeName"] = json!(node);
        }
        address["targetRef"] = target_ref(pod);
        let ready = publish || pod_ready(pod);
        let group = by_ports.entry(signature).or_default();
        if ready {
            group.0.push(address);
        } else {
            group.1.push(address);
        }
    }
    let port_json = |i: usize, port: i64| {
        let sp = &sps[i];
        let mut p = json!({ "port": port, "protocol": sp["protocol"].as_str().unwrap_or("TCP") });
        if let Some(name) = sp["name"].as_str().filter(|n| !n.is_empty()) {
            p = json!({ "name": name, "port": port, "protocol": p["protocol"] });
        }
        if let Some(app) = sp.get("appProtocol").filter(|a| a.is_string()) {
            p["appProtocol"] = app.clone();
        }
        p
    };
    // Subsets in the order of their ports' JSON, as before; each set's ports sorted so.
    let mut repacked: BTreeMap<String, (Vec<Value>, Vec<Value>, Vec<Value>)> = BTreeMap::new();
    for (signature, (ready, not_ready)) in by_ports {
        let mut ports: Vec<Value> = signature
            .iter()
            .map(|&(i, port)| port_json(i, port))
            .collect();
        ports.sort_by_cached_key(|p| p.to_string());
        let key = Value::Array(ports.clone()).to_string();
        let group = repacked
            .entry(key)
            .or_insert_with(|| (ports, Vec::new(), Vec::new()));
        group.1.extend(ready);
        group.2.extend(not_ready);
    }
    let mut total = 0usize;
    let mut out = Vec::new();
    let by_ip = |a: &Value, b: &Value| {
        a["ip"].as_str().cmp(&b["ip"].as_str()).then_with(|| {
            a["targetRef"]["uid"]
                .as_str()
                .cmp(&b["targetRef"]["uid"].as_str())
        })
    };
    for (_, (ports, mut ready, mut not_ready)) in repacked {
        ready.sort_by(by_ip);
        not_ready.sort_by(by_ip);
        total += ready.len() + not_ready.len();
        let mut subset = Map::new();
        if !ready.is_empty() {
            subset.insert("addresses".into(), Value::Array(ready));
        }
        if !not_ready.is_empty() {
            subset.insert("notReadyAddresses".into(), Value::Array(not_ready));
        }
        if !ports.is_empty() {
            subset.insert("ports".into(), Value::Array(ports));
        }
        out.push(Value::Object(subset));
    }
    let over = total > MAX_ENDPOINTS_CAPACITY;
    if over {
        truncate(&mut out);
    }
    (out, over)
}

/// kube's `truncateEndpoints`, simplified to keep the first addresses: at most
/// [`MAX_ENDPOINTS_CAPACITY`] in all, ready addresses before not-ready ones.
fn truncate(subsets: &mut [Value]) {
    let mut budget = MAX_ENDPOINTS_CAPACITY;
    for field in ["addresses", "notReadyAddresses"] {
        for s in subsets.iter_mut() {
            if let Some(list) = s.get_mut(field).and_then(Value::as_array_mut) {
                list.truncate(budget);
                budget -= list.len();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn service(selector: Value, ports: Value) -> Value {
        json!({
            "metadata": {"name": "web", "namespace": "default", "uid": "s1", "labels": {"app": "web"}},
            "spec": {"selector": selector, "ports": ports, "clusterIP": "10.96.0.10"},
        })
    }

    fn pod(name: &str, ip: &str, ready: bool, labels: Value) -> Value {
        json!({
            "metadata": {"name": name, "namespace": "default", "uid": format!("u-{name}"), "labels": labels},
            "spec": {"nodeName": "n1", "containers": [{"name": "c", "ports": [{"name": "http", "containerPort": 8080, "protocol": "TCP"}]}]},
            "status": {"phase": "Running", "podIP": ip, "podIPs": [{"ip": ip}],
                       "conditions": [{"type": "Ready", "status": if ready {"True"} else {"False"}}]},
        })
    }

    #[test]
    fn ready_and_not_ready_pods_become_endpoints_with_kube_conditions() {
        let svc = service(
            json!({"app": "web"}),
            json!([{"port": 80, "targetPort": 8080, "protocol": "TCP"}]),
        );
        let pods = [
            pod("b", "10.244.0.3", false, json!({"app": "web"})),
            pod("a", "10.244.0.2", true, json!({"app": "web"})),
            pod("c", "10.244.0.4", true, json!({"app": "db"})),
        ];
        let s = slices(&svc, &pods);
        assert_eq!(s.len(), 1);
        assert_eq!(
            s[0].ports,
            vec![json!({"name": "", "protocol": "TCP", "port": 8080})]
        );
        assert_eq!(s[0].endpoints.len(), 2);
        assert_eq!(
            s[0].endpoints[0],
            json!({
                "addresses": ["10.244.0.2"],
                "conditions": {"ready": true, "serving": true, "terminating": false},
                "targetRef": {"kind": "Pod", "namespace": "default", "name": "a", "uid": "u-a"},
                "nodeName": "n1",
            })
        );
        assert_eq!(s[0].endpoints[1]["conditions"]["ready"], false);

        let (subsets, over) = subsets(&svc, &pods);
        assert!(!over);
        assert_eq!(subsets.len(), 1);
        assert_eq!(subsets[0]["addresses"][0]["ip"], "10.244.0.2");
        assert_eq!(subsets[0]["notReadyAddresses"][0]["ip"], "10.244.0.3");
        assert_eq!(
            subsets[0]["ports"],
            json!([{"port": 8080, "protocol": "TCP"}])
        );
    }

    #[test]
    fn named_target_ports_resolve_per_pod_and_unresolved_pods_are_left_out() {
        let svc = service(
            json!({"app": "web"}),
            json!([{"name": "h", "port": 80, "targetPort": "http", "protocol": "TCP"}]),
        );
        let mut other = pod("b", "10.244.0.3", true, json!({"app": "web"}));
        other["spec"]["containers"][0]["ports"][0]["containerPort"] = json!(9090);
        let mut none = pod("c", "10.244.0.4", true, json!({"app": "web"}));
        none["spec"]["containers"][0]["ports"] = json!([]);
        let pods = [
            pod("a", "10.244.0.2", true, json!({"app": "web"})),
            other,
            none,
        ];
        let s = slices(&svc, &pods);
        assert_eq!(s.len(), 2, "{s:?}");
        let ports: Vec<i64> = s
            .iter()
            .map(|s| s.ports[0]["port"].as_i64().unwrap())
            .collect();
        assert!(ports.contains(&8080) && ports.contains(&9090), "{ports:?}");
        assert!(s.iter().all(|s| s.endpoints.len() == 1));
    }

    #[test]
    fn a_service_of_many_ports_is_one_subset_per_port_set() {
        let ports: Vec<Value> = (0..5000)
            .map(|i| json!({"name": format!("p{i}"), "port": 1000 + i, "targetPort": 1000 + i, "protocol": "TCP"}))
            .collect();
        let svc = service(json!({"app": "web"}), Value::Array(ports));
        let pods: Vec<Value> = (0..60)
            .map(|i| {
                pod(
                    &format!("p{i}"),
                    &format!("10.244.1.{i}"),
                    true,
                    json!({"app": "web"}),
                )
            })
            .collect();
        let (subsets, over) = subsets(&svc, &pods);
        assert!(!over);
        assert_eq!(subsets.len(), 1);
        assert_eq!(subsets[0]["addresses"].as_array().unwrap().len(), 60);
        assert_eq!(subsets[0]["ports"].as_array().unwrap().len(), 5000);
        assert_eq!(
            subsets[0]["ports"][0],
            json!({"name": "p0", "port": 1000, "protocol": "TCP"})
        );
    }

    #[test]
    fn terminating_pods_stay_in_slices_but_not_in_endpoints() {
        let svc = service(
            json!({"app": "web"}),
            json!([{"port": 80, "targetPort": 8080, "protocol": "TCP"}]),
        );
        let mut p = pod("a", "10.244.0.2", true, json!({"app": "web"}));
        p["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
        let s = slices(&svc, std::slice::from_ref(&p));
        assert_eq!(
            s[0].endpoints[0]["conditions"],
            json!({"ready": false, "serving": true, "terminating": true})
        );
        assert!(subsets(&svc, &[p]).0.is_empty());
    }

    #[test]
    fn pods_without_ip_or_finished_are_left_out_and_no_selector_means_none() {
        let svc = service(
            json!({"app": "web"}),
            json!([{"port": 80, "targetPort": 8080, "protocol": "TCP"}]),
        );
        let mut pending = pod("a", "", false, json!({"app": "web"}));
        pending["status"]["podIPs"] = json!([]);
        let mut done = pod("b", "10.244.0.3", false, json!({"app": "web"}));
        done["status"]["phase"] = json!("Succeeded");
        assert!(slices(&svc, &[pending, done]).is_empty());
        let mut selectorless = svc.clone();
        selectorless["spec"]
            .as_object_mut()
            .unwrap()
            .remove("selector");
        let pods = [pod("a", "10.244.0.2", true, json!({"app": "web"}))];
        assert!(slices(&selectorless, &pods).is_empty());
    }

    #[test]
    fn a_slice_holds_at_most_100_endpoints() {
        let svc = service(
            json!({"app": "web"}),
            json!([{"port": 80, "targetPort": 8080, "protocol": "TCP"}]),
        );
        let pods: Vec<Value> = (0..250)
            .map(|i| {
                pod(
                    &format!("p{i:03}"),
                    &format!("10.244.{}.{}", i / 200, i % 200 + 2),
                    true,
                    json!({"app": "web"}),
                )
            })
            .collect();
        let s = slices(&svc, &pods);
        let sizes: Vec<usize> = s.iter().map(|s| s.endpoints.len()).collect();
        assert_eq!(sizes, vec![100, 100, 50]);
    }

    #[test]
    fn labels_follow_the_service_with_kube_reserved_labels() {
        let mut svc = service(json!({"app": "web"}), json!([]));
        svc["metadata"]["labels"][LABEL_MANAGED_BY] = json!("someone");
        assert_eq!(
            slice_labels(&svc),
            json!({"app": "web", LABEL_SERVICE_NAME: "web", LABEL_MANAGED_BY: MANAGED_BY})
        );
        svc["spec"]["clusterIP"] = json!("None");
        assert_eq!(slice_labels(&svc)[LABEL_HEADLESS], "");
        assert_eq!(endpoints_labels(&svc)[LABEL_HEADLESS], "");
    }
}
