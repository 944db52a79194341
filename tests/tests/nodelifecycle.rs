//! Node heartbeats end to end: the fake kubelet (`node`, C) renews its Lease, the host's node
//! lifecycle controller marks a Node whose kubelet went away `Unknown` and taints it
//! unreachable, and the taint eviction controller deletes the Pods whose tolerations ran out;
//! the kubelet back, the Node is Ready and untainted again.

use std::time::{Duration, Instant};

use serde_json::Value;
use turtles_tests::{guest, poll, Server};

const LOAD_DEADLINE: Duration = Duration::from_secs(600);
const DEADLINE: Duration = Duration::from_secs(90);
/// The grace period the host runs with: more than the kubelet's 10 s renewal, so that a live
/// kubelet keeps its Node.
const GRACE_SECONDS: u64 = 12;
const NODE: &str = "turtle-node-1";
const LEASE: &str = "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/turtle-node-1";

fn ready(node: &Value) -> Value {
    node["status"]["conditions"]
        .as_array()
        .and_then(|l| l.iter().find(|c| c["type"] == "Ready"))
        .cloned()
        .unwrap_or(Value::Null)
}

fn taint_keys(node: &Value) -> Vec<String> {
    node["spec"]["taints"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|t| {
            format!(
                "{}:{}",
                t["key"].as_str().unwrap_or(""),
                t["effect"].as_str().unwrap_or("")
            )
        })
        .collect()
}

fn pod(name: &str, tolerations: &str) -> String {
    format!("apiVersion: v1\nkind: Pod\nmetadata: {{name: {name}}}\nspec:\n  terminationGracePeriodSeconds: 1\n  containers: [{{name: c, image: busybox}}]\n  tolerations: {tolerations}\n")
}

fn running(s: &Server, name: &str) {
    poll(&format!("{name} Running"), DEADLINE, || {
        (s.kubectl_json(&["get", "pod", name])["status"]["phase"] == "Running").then_some(())
    })
    .unwrap();
}

#[test]
fn a_node_without_heartbeats_goes_unknown_its_pods_are_evicted_and_it_comes_back() {
    let grace = GRACE_SECONDS.to_string();
    let s = Server::start_with_controllers(&["--node-monitor-grace-period", &grace]).unwrap();
    s.drop_controller("node", &guest("node")).unwrap();
    s.wait_controllers_running(&["node"], LOAD_DEADLINE)
        .unwrap();
    let started = Instant::now();
    let tolerant = "[{key: node.kubernetes.io/unreachable, operator: Exists, effect: NoExecute, tolerationSeconds: 2}]";
    let forever = "[{key: node.kubernetes.io/unreachable, operator: Exists, effect: NoExecute}]";
    for (name, t) in [("short", tolerant), ("forever", forever)] {
        let out = s.kubectl_stdin(&["apply", "-f", "-"], &pod(name, t));
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    for name in ["short", "forever"] {
        running(&s, name);
    }

    // Alive: its Lease is renewed, and past the grace period the Node is still Ready.
    let lease = poll("the node's Lease", DEADLINE, || {
        let r = s.http().get(LEASE);
        (r.status == 200).then(|| r.json())
    })
    .unwrap();
    assert_eq!(lease["spec"]["holderIdentity"], NODE);
    assert_eq!(lease["spec"]["leaseDurationSeconds"], 40);
    assert_eq!(lease["metadata"]["ownerReferences"][0]["kind"], "Node");
    let first = lease["spec"]["renewTime"].as_str().unwrap().to_owned();
    poll("a renewal after the grace period", DEADLINE, || {
        let now = s.http().get(LEASE).json()["spec"]["renewTime"]
            .as_str()
            .map(str::to_owned)?;
        (now != first && started.elapsed() > Duration::from_secs(GRACE_SECONDS + 1)).then_some(())
    })
    .unwrap();
    let node = s.kubectl_json(&["get", "node", NODE]);
    assert_eq!(ready(&node)["status"], "True", "{node}");
    assert!(taint_keys(&node).is_empty(), "{node}");

    // Cordoned, the Node gets kube's unschedulable taint; uncordoned, it goes.
    s.kubectl_ok(&["cordon", NODE]);
    poll("the unschedulable taint", DEADLINE, || {
        let n = s.kubectl_json(&["get", "node", NODE]);
        (taint_keys(&n) == ["node.kubernetes.io/unschedulable:NoSchedule"]).then_some(())
    })
    .unwrap();
    let described = s.kubectl_ok(&["describe", "node", NODE]);
    assert!(
        described.contains("node.kubernetes.io/unschedulable:NoSchedule"),
        "{described}"
    );
    s.kubectl_ok(&["uncordon", NODE]);
    poll("no taint once uncordoned", DEADLINE, || {
        taint_keys(&s.kubectl_json(&["get", "node", NODE]))
            .is_empty()
            .then_some(())
    })
    .unwrap();

    // The kubelet goes: Unknown after the grace period, tainted unreachable. It is the only
    // Node, so no Node is Ready: as kube's "master disruption mode", nothing is evicted (no
    // NoExecute taint: the cluster is more likely cut off than every node dead).
    std::fs::remove_file(s.controllers_dir().join("node.wasm")).unwrap();
    let node = poll("the node Unknown", DEADLINE, || {
        let n = s.kubectl_json(&["get", "node", NODE]);
        (ready(&n)["status"] == "Unknown" && !taint_keys(&n).is_empty()).then_some(n)
    })
    .unwrap();
    let r = ready(&node);
    assert_eq!(r["reason"], "NodeStatusUnknown");
    assert_eq!(r["message"], "Kubelet stopped posting node status.");
    assert_eq!(
        taint_keys(&node),
        vec!["node.kubernetes.io/unreachable:NoSchedule"]
    );
    assert!(node["spec"]["taints"][0]["timeAdded"].is_string(), "{node}");
    assert!(s.kubectl_ok(&["get", "nodes"]).contains("NotReady"));
    let described = s.kubectl_ok(&["describe", "node", NODE]);
    assert!(
        described.contains("Node turtle-node-1 status is now: NodeNotReady"),
        "{described}"
    );
    // Another Node, alive (the test renews its Lease): now a silent Node is evicted from.
    let created = s.http().post_json(
        "/api/v1/nodes",
        &serde_json::json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "helper"},
            "status": {"conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}]}}),
    );
    assert_eq!(created.status, 201, "{}", created.text());
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let heartbeat = {
        let (http, stop) = (s.http(), stop.clone());
        std::thread::spawn(move || {
            const HELPER: &str =
                "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/helper";
            while !stop.load(std::sync::atomic::Ordering::SeqCst) {
                let now = chrono_like_now();
                let lease = serde_json::json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                    "metadata": {"name": "helper", "namespace": "kube-node-lease"},
                    "spec": {"holderIdentity": "helper", "leaseDurationSeconds": 40, "renewTime": now}});
                let r = http.get(HELPER);
                if r.status == 404 {
                    http.post_json(
                        "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases",
                        &lease,
                    );
                } else {
                    let mut l = r.json();
                    l["spec"]["renewTime"] = serde_json::json!(now);
                    http.put_json(HELPER, &l);
                }
                std::thread::sleep(Duration::from_secs(2)); // a kubelet's renewal period, shortened
            }
        })
    };
    let node = poll("turtle-node-1 tainted NoExecute", DEADLINE, || {
        let n = s.kubectl_json(&["get", "node", NODE]);
        taint_keys(&n)
            .contains(&"node.kubernetes.io/unreachable:NoExecute".to_owned())
            .then_some(n)
    })
    .unwrap();
    assert_eq!(
        taint_keys(&node),
        vec![
            "node.kubernetes.io/unreachable:NoSchedule",
            "node.kubernetes.io/unreachable:NoExecute"
        ]
    );
    // Its Pods are not Ready; the one tolerating the taint for 2 s is evicted, the other stays.
    let evicted = poll("short evicted", DEADLINE, || {
        let p = s.kubectl_json(&["get", "pod", "short"]);
        p["metadata"]["deletionTimestamp"].is_string().then_some(p)
    })
    .unwrap();
    let target = evicted["status"]["conditions"]
        .as_array()
        .and_then(|l| l.iter().find(|c| c["type"] == "DisruptionTarget"))
        .cloned()
        .unwrap_or(Value::Null);
    assert_eq!(target["reason"], "DeletionByTaintManager", "{evicted}");
    assert_eq!(
        target["message"],
        "Taint manager: deleting due to NoExecute taint"
    );
    let events = s.kubectl_ok(&[
        "get",
        "events",
        "--field-selector",
        "involvedObject.name=short",
    ]);
    assert!(
        events.contains("TaintManagerEviction")
            && events.contains("Marking for deletion Pod default/short"),
        "{events}"
    );
    let kept = s.kubectl_json(&["get", "pod", "forever"]);
    assert!(kept["metadata"]["deletionTimestamp"].is_null(), "{kept}");
    let not_ready = kept["status"]["conditions"]
        .as_array()
        .and_then(|l| l.iter().find(|c| c["type"] == "Ready"))
        .cloned()
        .unwrap_or(Value::Null);
    assert_eq!(not_ready["status"], "False", "{kept}");
    assert!(s
        .kubectl_ok(&["describe", "pod", "forever"])
        .contains("Node is not ready"));

    // The kubelet is back: Ready, untainted, and it finishes the evicted Pod.
    s.drop_controller("node", &guest("node")).unwrap();
    poll("the node Ready again", DEADLINE, || {
        let n = s.kubectl_json(&["get", "node", NODE]);
        (ready(&n)["status"] == "True" && taint_keys(&n).is_empty()).then_some(())
    })
    .unwrap_or_else(|e| {
        panic!(
            "{e}: {}",
            s.kubectl_ok(&["get", "node", NODE, "-o", "yaml"])
        )
    });
    poll("short gone", DEADLINE, || {
        (!s.kubectl(&["get", "pod", "short"]).status.success()).then_some(())
    })
    .unwrap();
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    heartbeat.join().unwrap();
}

/// Now as a Lease's MicroTime (RFC 3339 with microseconds, UTC).
fn chrono_like_now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Micros, true)
}
