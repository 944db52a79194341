//! Services of type LoadBalancer with kube's service controller (`service-controller`, Rust):
//! the finalizer, kube's Events, an ingress of the eligible Nodes' addresses that follows the
//! Nodes, `loadBalancerClass` left to others, and the cleanup when a Service leaves the type or
//! goes.

use std::time::Duration;

use serde_json::{json, Value};
use turtles_tests::{guest, poll, Server};

const LOAD_DEADLINE: Duration = Duration::from_secs(600);
const DEADLINE: Duration = Duration::from_secs(60);
const FINALIZER: &str = "service.kubernetes.io/load-balancer-cleanup";

fn service(name: &str, extra: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Service\nmetadata: {{name: {name}}}\nspec:\n  type: LoadBalancer\n  selector: {{app: web}}\n  ports: [{{port: 80}}]\n{extra}"
    )
}

fn ingress_ips(svc: &Value) -> Vec<String> {
    svc["status"]["loadBalancer"]["ingress"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|i| i["ip"].as_str().map(str::to_owned))
        .collect()
}

fn reasons(s: &Server, name: &str) -> Vec<String> {
    let list = s.kubectl_json(&[
        "get",
        "events",
        "--field-selector",
        &format!("involvedObject.kind=Service,involvedObject.name={name}"),
    ]);
    list["items"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|e| e["reason"].as_str().unwrap_or("").to_owned())
        .collect()
}

fn wait_ingress(s: &Server, name: &str, want: &[&str]) -> Value {
    poll(&format!("{name}'s ingress {want:?}"), DEADLINE, || {
        let svc = s.kubectl_json(&["get", "service", name]);
        (ingress_ips(&svc) == want).then_some(svc)
    })
    .unwrap()
}

#[test]
fn load_balancers_get_the_nodes_addresses_and_are_cleaned_up() {
    let s = Server::start_with_controllers(&[]).unwrap();
    for name in ["node", "service-controller"] {
        s.drop_controller(name, &guest(name)).unwrap();
    }
    s.wait_controllers_running(&["node", "service-controller"], LOAD_DEADLINE)
        .unwrap();
    poll("the kubelet's Node", DEADLINE, || {
        s.kubectl(&["get", "node", "turtle-node-1"])
            .status
            .success()
            .then_some(())
    })
    .unwrap();

    s.kubectl_apply(&service("web", ""));
    let svc = wait_ingress(&s, "web", &["10.0.0.1"]);
    assert_eq!(svc["metadata"]["finalizers"], json!([FINALIZER]));
    assert_eq!(svc["status"]["loadBalancer"]["ingress"][0]["ipMode"], "VIP");
    assert!(svc["spec"]["ports"][0]["nodePort"].is_u64(), "{svc}");
    let table = s.kubectl_ok(&["get", "service", "web"]);
    assert!(table.contains("10.0.0.1"), "{table}");
    poll(
        "EnsuringLoadBalancer and EnsuredLoadBalancer",
        DEADLINE,
        || {
            let r = reasons(&s, "web");
            (r.contains(&"EnsuringLoadBalancer".to_owned())
                && r.contains(&"EnsuredLoadBalancer".to_owned()))
            .then_some(())
        },
    )
    .unwrap();

    // Another Node: the load balancer follows; excluded by kube's label, it leaves it.
    let created = s.http().post_json(
        "/api/v1/nodes",
        &json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "edge"},
            "status": {"addresses": [{"type": "InternalIP", "address": "10.0.0.2"}]}}),
    );
    assert_eq!(created.status, 201, "{}", created.text());
    wait_ingress(&s, "web", &["10.0.0.1", "10.0.0.2"]);
    poll("UpdatedLoadBalancer", DEADLINE, || {
        reasons(&s, "web")
            .contains(&"UpdatedLoadBalancer".to_owned())
            .then_some(())
    })
    .unwrap();
    s.kubectl_ok(&[
        "label",
        "node",
        "edge",
        "node.kubernetes.io/exclude-from-external-load-balancers=",
    ]);
    wait_ingress(&s, "web", &["10.0.0.1"]);

    // Another implementation's class: left alone (no finalizer, no ingress).
    s.kubectl_apply(&service("other", "  loadBalancerClass: example.com/lb\n"));
    s.kubectl_apply(&service("probe", ""));
    wait_ingress(&s, "probe", &["10.0.0.1"]);
    let other = s.kubectl_json(&["get", "service", "other"]);
    assert!(ingress_ips(&other).is_empty(), "{other}");
    assert!(other["metadata"]["finalizers"].is_null(), "{other}");

    // No longer a LoadBalancer: the finalizer goes and so does the ingress.
    s.kubectl_ok(&[
        "patch",
        "service",
        "web",
        "-p",
        r#"{"spec":{"type":"ClusterIP"}}"#,
    ]);
    let svc = poll("web cleaned up", DEADLINE, || {
        let svc = s.kubectl_json(&["get", "service", "web"]);
        svc["metadata"]["finalizers"].is_null().then_some(svc)
    })
    .unwrap();
    assert!(ingress_ips(&svc).is_empty(), "{svc}");
    // kube's dropTypeDependentFields: what only a LoadBalancer uses goes with the type.
    assert!(
        svc["spec"]["allocateLoadBalancerNodePorts"].is_null(),
        "{svc}"
    );
    assert!(svc["spec"]["ports"][0]["nodePort"].is_null(), "{svc}");
    poll("DeletedLoadBalancer", DEADLINE, || {
        reasons(&s, "web")
            .contains(&"DeletedLoadBalancer".to_owned())
            .then_some(())
    })
    .unwrap();

    // Deleted: the finalizer lets it go once the load balancer is gone.
    s.kubectl_ok(&["delete", "service", "probe", "--wait=true", "--timeout=60s"]);
    assert!(!s.kubectl(&["get", "service", "probe"]).status.success());
    assert!(reasons(&s, "probe").contains(&"DeletingLoadBalancer".to_owned()));
}
