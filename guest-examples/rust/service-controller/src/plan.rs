//! The pure part of the service controller: which Services want a load balancer, which Nodes
//! may carry one, and the ingress they give.

use turtles_controller::{json, Value};

/// kube's `servicehelper.LoadBalancerCleanupFinalizer`.
pub const FINALIZER: &str = "service.kubernetes.io/load-balancer-cleanup";
/// kube's label that keeps a Node out of external load balancers.
const EXCLUDE_LABEL: &str = "node.kubernetes.io/exclude-from-external-load-balancers";
/// The cluster autoscaler's taint on a Node it is about to remove.
const TO_BE_DELETED_TAINT: &str = "ToBeDeletedByClusterAutoscaler";

fn str_at<'a>(v: &'a Value, pointer: &str) -> &'a str {
    v.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

/// kube's `wantsLoadBalancer`: type `LoadBalancer` and no `loadBalancerClass`.
pub fn wants_load_balancer(svc: &Value) -> bool {
    str_at(svc, "/spec/type") == "LoadBalancer"
        && svc
            .pointer("/spec/loadBalancerClass")
            .is_none_or(Value::is_null)
}

pub fn has_finalizer(svc: &Value) -> bool {
    svc.pointer("/metadata/finalizers")
        .and_then(Value::as_array)
        .is_some_and(|l| l.iter().any(|f| f == FINALIZER))
}

/// kube's `needsCleanup`: the finalizer, and the Service is going or no longer a load balancer.
pub fn needs_cleanup(svc: &Value) -> bool {
    has_finalizer(svc)
        && (svc
            .pointer("/metadata/deletionTimestamp")
            .is_some_and(|t| !t.is_null())
            || str_at(svc, "/spec/type") != "LoadBalancer")
}

/// kube's node predicates for load balancers (1.34): not being deleted, not excluded by label
/// (any value but `false`), not about to be removed by the cluster autoscaler.
pub fn eligible(node: &Value) -> bool {
    let deleting = node
        .pointer("/metadata/deletionTimestamp")
        .is_some_and(|t| !t.is_null());
    let excluded = node
        .pointer("/metadata/labels")
        .and_then(|l| l.get(EXCLUDE_LABEL))
        .is_some_and(|v| v != "false");
    let leaving = node
        .pointer("/spec/taints")
        .and_then(Value::as_array)
        .is_some_and(|ts| ts.iter().any(|t| t["key"] == TO_BE_DELETED_TAINT));
    !deleting && !excluded && !leaving
}

fn addresses<'a>(node: &'a Value, ty: &'a str) -> impl Iterator<Item = &'a str> {
    node.pointer("/status/addresses")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(move |a| a["type"] == ty)
        .filter_map(|a| a["address"].as_str())
}

/// The ingress of a load balancer on these Nodes, as k3s's ServiceLB gives it: the eligible
/// Nodes' ExternalIPs when any has one, else their InternalIPs; sorted, without repeats.
pub fn desired_ingress(nodes: &[Value]) -> Vec<Value> {
    let eligible: Vec<&Value> = nodes.iter().filter(|n| eligible(n)).collect();
    let external = eligible
        .iter()
        .any(|n| addresses(n, "ExternalIP").next().is_some());
    let ty = if external { "ExternalIP" } else { "InternalIP" };
    let mut ips: Vec<&str> = eligible.iter().flat_map(|n| addresses(n, ty)).collect();
    ips.sort_unstable();
    ips.dedup();
    ips.into_iter()
        .map(|ip| json!({"ip": ip, "ipMode": "VIP"}))
        .collect()
}

/// Two ingress lists the same, as kube's `LoadBalancerStatusEqual` compares them (IP,
/// hostname, ipMode and ports of each entry, in order; an unset ipMode is the API's VIP).
pub fn same_ingress(a: &[Value], b: &[Value]) -> bool {
    let key = |v: &Value| {
        (
            str_at(v, "/ip").to_owned(),
            str_at(v, "/hostname").to_owned(),
            match str_at(v, "/ipMode") {
                "" if !str_at(v, "/ip").is_empty() => "VIP".to_owned(),
                m => m.to_owned(),
            },
            v.get("ports").cloned().unwrap_or(Value::Null),
        )
    };
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| key(x) == key(y))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(name: &str, internal: &str, extra: Value) -> Value {
        let mut n = json!({"metadata": {"name": name},
            "status": {"addresses": [{"type": "InternalIP", "address": internal},
                                     {"type": "Hostname", "address": name}]}});
        if let Some(obj) = extra.as_object() {
            for (k, v) in obj {
                n[k.as_str()] = v.clone();
            }
        }
        n
    }

    #[test]
    fn the_ingress_is_the_eligible_nodes_addresses() {
        let nodes = vec![
            node("b", "10.0.0.2", json!({})),
            node("a", "10.0.0.1", json!({})),
            node(
                "x",
                "10.0.0.9",
                json!({"metadata": {"name": "x",
                "labels": {"node.kubernetes.io/exclude-from-external-load-balancers": ""}}}),
            ),
            node(
                "y",
                "10.0.0.8",
                json!({"spec": {"taints": [{"key": "ToBeDeletedByClusterAutoscaler", "effect": "NoSchedule"}]}}),
            ),
        ];
        assert_eq!(
            desired_ingress(&nodes),
            vec![
                json!({"ip": "10.0.0.1", "ipMode": "VIP"}),
                json!({"ip": "10.0.0.2", "ipMode": "VIP"})
            ]
        );
        let mut with_external = nodes.clone();
        with_external[0]["status"]["addresses"]
            .as_array_mut()
            .unwrap()
            .push(json!({"type": "ExternalIP", "address": "203.0.113.7"}));
        assert_eq!(
            desired_ingress(&with_external),
            vec![json!({"ip": "203.0.113.7", "ipMode": "VIP"})]
        );
        assert!(same_ingress(
            &[json!({"ip": "10.0.0.1"})],
            &[json!({"ip": "10.0.0.1", "ipMode": "VIP"})]
        ));
        assert!(!same_ingress(&[], &[json!({"ip": "10.0.0.1"})]));
    }

    #[test]
    fn which_services_are_this_controllers() {
        let lb = json!({"spec": {"type": "LoadBalancer"}});
        assert!(wants_load_balancer(&lb));
        let classed =
            json!({"spec": {"type": "LoadBalancer", "loadBalancerClass": "example.com/lb"}});
        assert!(!wants_load_balancer(&classed));
        let left = json!({"metadata": {"finalizers": [FINALIZER]}, "spec": {"type": "ClusterIP"}});
        assert!(needs_cleanup(&left));
        assert!(!needs_cleanup(&json!({"spec": {"type": "ClusterIP"}})));
    }
}
