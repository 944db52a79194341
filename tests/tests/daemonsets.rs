//! DaemonSets end to end, with the real kubectl and real guests: the `daemonset` controller
//! (Rust) makes one Pod per node that should run it, pinned by node affinity; the fake kubelet
//! (`node`, C) binds and runs the Pods meant for its node only. A second Node without a kubelet
//! shows the placement rules; `kubectl set image`, `rollout status`, `rollout history` and
//! `rollout undo` drive a rolling update.

use std::time::Duration;

use serde_json::{json, Value};
use turtles_tests::{guest, poll, Server};

const LOAD_DEADLINE: Duration = Duration::from_secs(600);
const DEADLINE: Duration = Duration::from_secs(90);

/// The example DaemonSet, as the README has users create it.
const MANIFEST: &str = include_str!("../../guest-examples/manifests/agent.yaml");

fn agent_pods(s: &Server) -> Vec<Value> {
    s.kubectl_json(&["get", "pods", "-l", "app=agent"])["items"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

fn status(s: &Server) -> Value {
    s.kubectl_json(&["get", "daemonset", "agent"])["status"].clone()
}

fn wait_status(s: &Server, what: &str, f: impl Fn(&Value) -> bool) -> Value {
    poll(what, DEADLINE, || {
        let st = status(s);
        f(&st).then_some(st)
    })
    .unwrap_or_else(|e| {
        panic!(
            "{e}\n{}\n{}",
            s.kubectl_ok(&["get", "daemonset", "agent", "-o", "yaml"]),
            s.kubectl_ok(&["get", "pods", "-o", "wide"])
        )
    })
}

fn image(pod: &Value) -> &str {
    pod["spec"]["containers"][0]["image"]
        .as_str()
        .unwrap_or_default()
}

#[test]
fn a_daemon_set_runs_one_pod_per_fitting_node_and_rolls_out() {
    let s = Server::start_with_controllers(&[]).unwrap();
    for name in ["daemonset", "node"] {
        s.drop_controller(name, &guest(name)).unwrap();
    }
    s.wait_controllers_running(&["daemonset", "node"], LOAD_DEADLINE)
        .unwrap_or_else(|e| panic!("{e}\n{}", s.log()));
    poll("the fake node", DEADLINE, || {
        s.kubectl(&["get", "node", "turtle-node-1"])
            .status
            .success()
            .then_some(())
    })
    .unwrap();

    let events = s.record_events("/api/v1/namespaces/default/pods?watch=true");
    let out = s.kubectl_stdin(&["apply", "-f", "-"], MANIFEST);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rolled = s.kubectl_ok(&["rollout", "status", "daemonset/agent", "--timeout=90s"]);
    assert!(
        rolled.contains("\"agent\" successfully rolled out"),
        "{rolled}"
    );

    // One Pod, on the node, pinned there, with kube's labels and tolerations.
    let ds = s.kubectl_json(&["get", "daemonset", "agent"]);
    assert_eq!(
        ds["metadata"]["annotations"]["deprecated.daemonset.template.generation"],
        "1"
    );
    let st = &ds["status"];
    assert_eq!(
        (
            &st["desiredNumberScheduled"],
            &st["currentNumberScheduled"],
            &st["numberReady"],
            &st["numberAvailable"],
            &st["updatedNumberScheduled"],
            &st["numberMisscheduled"]
        ),
        (
            &json!(1),
            &json!(1),
            &json!(1),
            &json!(1),
            &json!(1),
            &json!(0)
        ),
        "{ds}"
    );
    let pods = agent_pods(&s);
    assert_eq!(pods.len(), 1);
    let pod = &pods[0];
    assert_eq!(pod["spec"]["nodeName"], "turtle-node-1");
    assert!(pod["metadata"]["name"]
        .as_str()
        .unwrap()
        .starts_with("agent-"));
    assert_eq!(pod["metadata"]["labels"]["pod-template-generation"], "1");
    let first_hash = pod["metadata"]["labels"]["controller-revision-hash"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(
        pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"],
        json!({"nodeSelectorTerms": [{"matchFields": [
            {"key": "metadata.name", "operator": "In", "values": ["turtle-node-1"]}]}]})
    );
    let tolerations: Vec<&str> = pod["spec"]["tolerations"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["key"].as_str())
        .collect();
    for key in [
        "node.kubernetes.io/not-ready",
        "node.kubernetes.io/unreachable",
        "node.kubernetes.io/disk-pressure",
        "node.kubernetes.io/memory-pressure",
        "node.kubernetes.io/pid-pressure",
        "node.kubernetes.io/unschedulable",
    ] {
        assert!(tolerations.contains(&key), "{key} in {tolerations:?}");
    }

    // Two more nodes at once, without a kubelet: the set makes a Pod for each, which the fake
    // kubelet of turtle-node-1 does not take (their affinity names the other nodes).
    for n in ["turtle-node-2", "turtle-node-3"] {
        s.kubectl_stdin(
            &["create", "-f", "-"],
            &json!({"apiVersion": "v1", "kind": "Node",
                "metadata": {"name": n, "labels": {"kubernetes.io/hostname": n}}})
            .to_string(),
        );
    }
    wait_status(&s, "three desired, one ready", |st| {
        st["desiredNumberScheduled"] == 3
            && st["currentNumberScheduled"] == 3
            && st["numberReady"] == 1
    });
    let waiting = poll("the other nodes' pods unschedulable here", DEADLINE, || {
        let waiting: Vec<Value> = agent_pods(&s)
            .into_iter()
            .filter(|p| {
                p["spec"]["nodeName"].is_null()
                    && p["status"]["conditions"].as_array().is_some_and(|cs| {
                        cs.iter()
                            .any(|c| c["type"] == "PodScheduled" && c["reason"] == "Unschedulable")
                    })
            })
            .collect();
        (waiting.len() == 2).then_some(waiting)
    })
    .unwrap_or_else(|e| panic!("{e}\n{}", s.kubectl_ok(&["get", "pods", "-o", "yaml"])));
    let mut targets: Vec<&str> = waiting
        .iter()
        .filter_map(|p| {
            p["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
                ["nodeSelectorTerms"][0]["matchFields"][0]["values"][0]
                .as_str()
        })
        .collect();
    targets.sort();
    assert_eq!(targets, ["turtle-node-2", "turtle-node-3"]);
    // A NoExecute taint there: those nodes no longer run the Pod, which is deleted.
    for n in ["turtle-node-2", "turtle-node-3"] {
        s.kubectl_ok(&["taint", "node", n, "dedicated=db:NoExecute"]);
    }
    wait_status(&s, "one desired again", |st| {
        st["desiredNumberScheduled"] == 1 && st["numberMisscheduled"] == 0
    });
    poll("the other nodes' pods gone", DEADLINE, || {
        (agent_pods(&s).len() == 1).then_some(())
    })
    .unwrap_or_else(|e| panic!("{e}\n{}", s.kubectl_ok(&["get", "pods", "-o", "wide"])));

    // A rolling update: the new template's Pod replaces the old one.
    s.kubectl_ok(&["set", "image", "daemonset/agent", "agent=agent:2"]);
    let rolled = s.kubectl_ok(&["rollout", "status", "daemonset/agent", "--timeout=90s"]);
    assert!(rolled.contains("successfully rolled out"), "{rolled}");
    poll("the pod at agent:2", DEADLINE, || {
        let pods = agent_pods(&s);
        (pods.len() == 1
            && image(&pods[0]) == "agent:2"
            && pods[0]["metadata"]["labels"]["pod-template-generation"] == "2"
            && pods[0]["status"]["phase"] == "Running")
            .then_some(())
    })
    .unwrap_or_else(|e| panic!("{e}\n{}", s.kubectl_ok(&["get", "pods", "-o", "yaml"])));
    assert_eq!(s.rollout_history("daemonset/agent"), [1, 2]);
    let described = s.kubectl_ok(&["describe", "daemonset", "agent"]);
    assert!(
        described.contains("SuccessfulCreate") && described.contains("Deleted pod: agent-"),
        "{described}"
    );

    // Undo: back to agent:1, under the first revision's hash, now the newest revision.
    let out = s.kubectl_ok(&["rollout", "undo", "daemonset/agent"]);
    assert!(out.contains("rolled back"), "{out}");
    poll("the pod back at agent:1", DEADLINE, || {
        let pods = agent_pods(&s);
        (pods.len() == 1
            && image(&pods[0]) == "agent:1"
            && pods[0]["metadata"]["labels"]["controller-revision-hash"] == first_hash.as_str()
            && pods[0]["status"]["phase"] == "Running")
            .then_some(())
    })
    .unwrap_or_else(|e| panic!("{e}\n{}", s.kubectl_ok(&["get", "pods", "-o", "yaml"])));
    assert_eq!(s.rollout_history("daemonset/agent"), [2, 3]);

    // Never two live Pods for one node, at any point of the story (each event replayed).
    let mut live: std::collections::BTreeMap<String, String> = Default::default();
    for ev in events.lock().unwrap().iter() {
        let pod = &ev["object"];
        let name = pod["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        let node = pod["spec"]["nodeName"]
            .as_str()
            .map(str::to_owned)
            .or_else(|| {
                pod["spec"]["affinity"]["nodeAffinity"]
                    ["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"][0]
                    ["matchFields"][0]["values"][0]
                    .as_str()
                    .map(str::to_owned)
            });
        if ev["type"] == "DELETED" || !pod["metadata"]["deletionTimestamp"].is_null() {
            live.remove(&name);
        } else if let Some(node) = node {
            live.insert(name, node.clone());
            let on_node = live.values().filter(|n| **n == node).count();
            assert!(on_node <= 1, "two live pods for {node}: {live:?}");
        }
    }

    // Deleted: its Pods go with it.
    s.kubectl_ok(&["delete", "daemonset", "agent"]);
    poll("the pods gone", DEADLINE, || {
        agent_pods(&s).is_empty().then_some(())
    })
    .unwrap_or_else(|e| panic!("{e}\n{}", s.kubectl_ok(&["get", "pods"])));
}
