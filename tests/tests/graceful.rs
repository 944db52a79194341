//! Graceful deletion of Pods end to end, with the real binary and the real kubectl: a DELETE of
//! a bound Pod marks it (kube's `BeforeDelete` and the Pod strategy's `CheckGracefulDelete`),
//! its kubelet (the example C `node` controller) deletes it with grace period 0, and the pod
//! garbage collector removes the Pods no kubelet will ever finish.

use std::time::Duration;

use chrono::{DateTime, Utc};
use serde_json::{json, Value};
use turtles_tests::{guest, poll, Server};

const PODS: &str = "/api/v1/namespaces/default/pods";
const DEADLINE: Duration = Duration::from_secs(60);

fn node(s: &Server, name: &str, ready: bool, taints: Value) {
    let r = s.http().post_json(
        "/api/v1/nodes",
        &json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name},
            "spec": {"taints": taints}}),
    );
    assert_eq!(r.status, 201, "{}", r.text());
    let status = json!({"status": {"conditions": [{"type": "Ready",
        "status": if ready { "True" } else { "False" }}]}});
    let r = s.http().patch(
        &format!("/api/v1/nodes/{name}/status"),
        "application/merge-patch+json",
        &status,
    );
    assert_eq!(r.status, 200, "{}", r.text());
}

fn pod(s: &Server, name: &str, spec: Value) -> Value {
    let mut spec = spec;
    spec["containers"] = json!([{"name": "c", "image": "nginx"}]);
    let r = s.http().post_json(
        PODS,
        &json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec}),
    );
    assert_eq!(r.status, 201, "{}", r.text());
    r.json()
}

fn delete(s: &Server, name: &str, body: Value) -> turtles_tests::Reply {
    delete_at(s, &format!("{PODS}/{name}"), body)
}

fn delete_at(s: &Server, path: &str, body: Value) -> turtles_tests::Reply {
    s.http().request(
        "DELETE",
        path,
        Some("application/json"),
        Some(body.to_string().into_bytes()),
    )
}

/// A watch of the namespace's Pods from `obj`'s resourceVersion on (`extra`: more query).
fn watch_after(s: &Server, obj: &Value, extra: &str) -> turtles_tests::WatchReader {
    let rv = obj["metadata"]["resourceVersion"].as_str().unwrap();
    s.http()
        .watch(&format!("{PODS}?watch=true&resourceVersion={rv}{extra}"))
}

fn time(v: &Value) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(v.as_str().unwrap_or_else(|| panic!("not a time: {v}")))
        .unwrap()
        .with_timezone(&Utc)
}

fn gone(s: &Server, name: &str) -> bool {
    s.http().get(&format!("{PODS}/{name}")).status == 404
}

#[test]
fn a_bound_pod_is_marked_and_its_grace_period_may_only_shrink() {
    let s = Server::start().unwrap();
    node(&s, "n1", true, json!([]));
    pod(&s, "web", json!({"nodeName": "n1"}));
    let created = s.http().get(&format!("{PODS}/web")).json();
    assert_eq!(created["spec"]["terminationGracePeriodSeconds"], 30);
    let mut w = watch_after(&s, &created, "");

    // kubectl's delete: marked, answered with the Pod, still there (no kubelet here).
    let before = Utc::now();
    let out = s.kubectl_ok(&["delete", "pod", "web", "--wait=false"]);
    assert!(out.contains("pod \"web\" deleted"), "{out}");
    let marked = s.http().get(&format!("{PODS}/web")).json();
    assert_eq!(
        marked["metadata"]["deletionGracePeriodSeconds"], 30,
        "{marked}"
    );
    let at = time(&marked["metadata"]["deletionTimestamp"]);
    let from_now = (at - before).num_seconds();
    assert!((29..=31).contains(&from_now), "{at} vs {before}");
    let ev = w.next_event().unwrap();
    assert_eq!(ev["type"], "MODIFIED", "{ev}");
    assert_eq!(ev["object"]["metadata"]["deletionGracePeriodSeconds"], 30);
    let table = s.kubectl_ok(&["get", "pod", "web"]);
    assert!(table.contains("Terminating"), "{table}");
    // Other writes meanwhile keep it: it waits for its kubelet (kube's ShouldDeleteDuringUpdate).
    s.kubectl_ok(&["label", "pod", "web", "seen=yes"]);
    let labelled = s.http().get(&format!("{PODS}/web")).json();
    assert_eq!(labelled["metadata"]["labels"]["seen"], "yes", "{labelled}");
    assert_eq!(w.next_event().unwrap()["type"], "MODIFIED");
    let marked = labelled;

    // A longer period changes nothing (not even the resourceVersion).
    let r = delete(&s, "web", json!({"gracePeriodSeconds": 60}));
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(
        r.json()["metadata"]["resourceVersion"],
        marked["metadata"]["resourceVersion"]
    );
    // A shorter one moves the deadline back by the difference.
    let r = delete(&s, "web", json!({"gracePeriodSeconds": 5}));
    assert_eq!(r.status, 200, "{}", r.text());
    let shorter = r.json();
    assert_eq!(shorter["metadata"]["deletionGracePeriodSeconds"], 5);
    assert_eq!(
        (at - time(&shorter["metadata"]["deletionTimestamp"])).num_seconds(),
        25
    );
    assert_eq!(w.next_event().unwrap()["type"], "MODIFIED");

    // kubectl's force delete (grace period 0): gone at once.
    let out = s.kubectl_ok(&["delete", "pod", "web", "--grace-period=0", "--force"]);
    assert!(out.contains("force deleted"), "{out}");
    assert!(gone(&s, "web"));
    assert_eq!(w.next_event().unwrap()["type"], "DELETED");

    // Pods no kubelet runs, or that finished, go at once.
    pod(&s, "pending", json!({}));
    assert_eq!(delete(&s, "pending", json!({})).status, 200);
    assert!(gone(&s, "pending"));
    pod(&s, "done", json!({"nodeName": "n1"}));
    let r = s.http().patch(
        &format!("{PODS}/done/status"),
        "application/merge-patch+json",
        &json!({"status": {"phase": "Succeeded"}}),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(delete(&s, "done", json!({})).status, 200);
    assert!(gone(&s, "done"));

    // The period in the query of a DELETE without a body (with one, kube reads the body), and
    // one that is not a number.
    pod(&s, "q", json!({"nodeName": "n1"}));
    let r = s.http().delete(&format!("{PODS}/q?gracePeriodSeconds=7"));
    assert_eq!(r.json()["metadata"]["deletionGracePeriodSeconds"], 7);
    let r = delete(&s, "q", json!({"gracePeriodSeconds": "soon"}));
    assert_eq!(r.status, 400, "{}", r.text());
    assert!(
        r.text().contains("json: cannot unmarshal string into Go struct field DeleteOptions.gracePeriodSeconds of type int64"),
        "{}",
        r.text()
    );
    // Other kinds have no graceful deletion.
    let r = s.http().post_json(
        "/api/v1/namespaces/default/configmaps",
        &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm"}}),
    );
    assert_eq!(r.status, 201);
    let r = delete_at(
        &s,
        "/api/v1/namespaces/default/configmaps/cm",
        json!({"gracePeriodSeconds": 30}),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(
        s.http()
            .get("/api/v1/namespaces/default/configmaps/cm")
            .status,
        404
    );
}

#[test]
fn the_kubelet_finishes_what_a_delete_starts() {
    let s = Server::start_with_controllers(&[]).unwrap();
    s.drop_controller("node", &guest("node")).unwrap();
    poll("the node registered", DEADLINE, || {
        (s.http().get("/api/v1/nodes/turtle-node-1").status == 200).then_some(())
    })
    .unwrap();
    pod(&s, "web", json!({}));
    poll("web Running", DEADLINE, || {
        let p = s.http().get(&format!("{PODS}/web")).json();
        (p["status"]["phase"] == "Running").then_some(())
    })
    .unwrap_or_else(|e| panic!("{e}\n{}", s.log()));
    assert!(
        s.http().get(&format!("{PODS}/web")).json()["metadata"]["finalizers"].is_null(),
        "a kubelet puts no finalizer on its Pods"
    );
    let mut w = watch_after(&s, &s.http().get(&format!("{PODS}/web")).json(), "");
    // kubectl waits until the Pod is gone: the kubelet's delete, not a timeout.
    let out = s.kubectl_ok(&["delete", "pod", "web", "--timeout=60s"]);
    assert!(out.contains("deleted"), "{out}");
    assert!(gone(&s, "web"));
    let marked = w.next_event().unwrap();
    assert_eq!(marked["type"], "MODIFIED", "{marked}");
    assert_eq!(
        marked["object"]["metadata"]["deletionGracePeriodSeconds"],
        30
    );
    let last = w.next_event().unwrap();
    assert_eq!(last["type"], "DELETED", "{last}");
}

#[test]
fn the_pod_gc_removes_pods_no_kubelet_will_finish() {
    let s = Server::start_with(&["--orphaned-pod-quarantine", "1"]).unwrap();
    // Bound to a node that does not exist: Failed (DisruptionTarget), then deleted.
    let p = pod(&s, "orphan", json!({"nodeName": "nowhere"}));
    let mut w = watch_after(&s, &p, "");
    let failed = w.next_event().unwrap();
    assert_eq!(failed["type"], "MODIFIED", "{failed}");
    assert_eq!(failed["object"]["status"]["phase"], "Failed");
    let c = &failed["object"]["status"]["conditions"][0];
    assert_eq!(
        (
            c["type"].as_str(),
            c["reason"].as_str(),
            c["message"].as_str()
        ),
        (
            Some("DisruptionTarget"),
            Some("DeletionByPodGC"),
            Some("PodGC: node no longer exists")
        ),
        "{c}"
    );
    assert_eq!(w.next_event().unwrap()["type"], "DELETED");

    // A node that is deleted: its Pods follow once the quarantine is over.
    node(&s, "n1", true, json!([]));
    pod(&s, "on-n1", json!({"nodeName": "n1"}));
    assert_eq!(s.http().delete("/api/v1/nodes/n1").status, 200);
    poll("on-n1 deleted", DEADLINE, || {
        gone(&s, "on-n1").then_some(())
    })
    .unwrap();

    // Terminating on a node that is down and out of service: deleted, not waited for.
    node(
        &s,
        "down",
        false,
        json!([{"key": "node.kubernetes.io/out-of-service", "effect": "NoExecute"}]),
    );
    node(&s, "quiet", false, json!([]));
    // (It tolerates the taint, so the taint eviction controller leaves it to this test.)
    pod(
        &s,
        "stuck",
        json!({"nodeName": "down", "tolerations": [
            {"key": "node.kubernetes.io/out-of-service", "operator": "Exists", "effect": "NoExecute"}]}),
    );
    pod(&s, "waiting", json!({"nodeName": "quiet"}));
    let r = delete(&s, "stuck", json!({}));
    assert_eq!(r.status, 200);
    let mut w = watch_after(&s, &r.json(), "&fieldSelector=metadata.name%3Dstuck");
    assert_eq!(delete(&s, "waiting", json!({})).status, 200);
    // Marked Failed first (that write does not end the graceful deletion), then deleted.
    let failed = w.next_event().unwrap();
    assert_eq!(failed["type"], "MODIFIED", "{failed}");
    assert_eq!(failed["object"]["status"]["phase"], "Failed", "{failed}");
    assert_eq!(w.next_event().unwrap()["type"], "DELETED");
    assert!(gone(&s, "stuck"));
    // A node that is only NotReady may come back: its Pod waits for its kubelet, as in kube.
    let waiting = s.http().get(&format!("{PODS}/waiting")).json();
    assert!(
        !waiting["metadata"]["deletionTimestamp"].is_null(),
        "{waiting}"
    );

    // Terminating and never scheduled, held by a finalizer: the GC marks it Failed (kube's
    // gcUnscheduledTerminating); it goes when the finalizer does.
    pod(&s, "held", json!({}));
    let r = s.http().patch(
        &format!("{PODS}/held"),
        "application/merge-patch+json",
        &json!({"metadata": {"finalizers": ["example.com/hold"]}}),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(delete(&s, "held", json!({})).status, 200);
    let held = s.http().get(&format!("{PODS}/held")).json();
    assert_eq!(held["metadata"]["deletionGracePeriodSeconds"], 0, "{held}");
    poll("held Failed", DEADLINE, || {
        let p = s.http().get(&format!("{PODS}/held")).json();
        (p["status"]["phase"] == "Failed").then_some(())
    })
    .unwrap();
    let r = s.http().patch(
        &format!("{PODS}/held"),
        "application/merge-patch+json",
        &json!({"metadata": {"finalizers": null}}),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    poll("held deleted", DEADLINE, || gone(&s, "held").then_some(())).unwrap();
}

#[test]
fn the_pod_gc_keeps_at_most_the_threshold_of_finished_pods() {
    let s = Server::start_with(&["--terminated-pod-gc-threshold", "2"]).unwrap();
    for name in ["a", "b", "c", "d", "running"] {
        pod(&s, name, json!({}));
    }
    // Finished: three Succeeded, one Failed by eviction; one still running.
    for (name, phase, reason) in [
        ("a", "Succeeded", ""),
        ("b", "Succeeded", ""),
        ("c", "Succeeded", ""),
        ("d", "Failed", "Evicted"),
        ("running", "Running", ""),
    ] {
        let mut p = s.http().get(&format!("{PODS}/{name}")).json();
        p["status"]["phase"] = json!(phase);
        if !reason.is_empty() {
            p["status"]["reason"] = json!(reason);
        }
        let r = s.http().put_json(&format!("{PODS}/{name}/status"), &p);
        assert_eq!(r.status, 200, "{}", r.text());
    }
    // Two finished ones are kept: the evicted one goes first, then the oldest.
    poll("two finished pods deleted", Duration::from_secs(90), || {
        (gone(&s, "d") && gone(&s, "a")).then_some(())
    })
    .unwrap();
    for name in ["b", "c", "running"] {
        assert!(!gone(&s, name), "{name} was deleted");
    }
}
