//! ResourceQuota end to end, with the real binary and the real kubectl: the resourcequota
//! controller keeps each quota's `status.used`, and an API write that would take a namespace
//! over a quota is refused with kube's message — object counts, `count/<resource>.<group>`,
//! node ports, and Pods' requests and limits — for a tenant holding `edit` there as for anyone.

use std::time::Duration;

use serde_json::{json, Value};
use turtles_tests::{poll, Reply, Server};

const NS: &str = "team";

fn quota(s: &Server, name: &str, hard: Value) {
    let q = json!({"apiVersion": "v1", "kind": "ResourceQuota",
        "metadata": {"name": name}, "spec": {"hard": hard}});
    let r = s
        .http()
        .post_json(&format!("/api/v1/namespaces/{NS}/resourcequotas"), &q);
    assert_eq!(r.status, 201, "{}", r.text());
}

/// Wait until the quota's `status.used` is `want` (and `status.hard` its spec).
fn wait_used(s: &Server, name: &str, want: Value) -> Value {
    poll(
        &format!("{name}'s usage {want}"),
        Duration::from_secs(10),
        || {
            let q = s
                .http()
                .get(&format!("/api/v1/namespaces/{NS}/resourcequotas/{name}"))
                .json();
            (q["status"]["used"] == want && q["status"]["hard"] == q["spec"]["hard"]).then_some(q)
        },
    )
    .unwrap_or_else(|e| {
        let q = s
            .http()
            .get(&format!("/api/v1/namespaces/{NS}/resourcequotas/{name}"))
            .json();
        panic!("{e}: last {}", q["status"])
    })
}

fn refused(r: &Reply, message: &str) {
    assert_eq!(r.status, 403, "{}", r.text());
    assert_eq!(r.json()["message"], message, "{}", r.text());
}

fn pod(name: &str, resources: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
        "spec": {"containers": [{"name": "c", "image": "nginx", "resources": resources}]}})
}

#[test]
fn object_counts_hold_on_what_is_stored() {
    let s = Server::start().unwrap();
    s.kubectl_ok(&["create", "namespace", NS]);
    let (_, token) = s.mint("ed", &[]).unwrap();
    s.kubectl_ok(&[
        "-n",
        NS,
        "create",
        "rolebinding",
        "ed",
        "--clusterrole=edit",
        "--user=ed",
    ]);
    let ed = s.http_with_token(Some(&token));
    quota(
        &s,
        "objects",
        json!({"configmaps": "3", "count/deployments.apps": "1", "services.nodeports": "1"}),
    );
    // The namespace's kube-root-ca.crt counts.
    wait_used(
        &s,
        "objects",
        json!({"configmaps": "1", "count/deployments.apps": "0", "services.nodeports": "0"}),
    );
    let cms = format!("/api/v1/namespaces/{NS}/configmaps");
    for n in ["a", "b"] {
        let r = ed.post_json(&cms, &json!({"metadata": {"name": n}}));
        assert_eq!(r.status, 201, "{}", r.text());
    }
    let r = ed.post_json(&cms, &json!({"metadata": {"name": "c"}}));
    refused(
        &r,
        "configmaps \"c\" is forbidden: exceeded quota: objects, requested: configmaps=1, used: configmaps=3, limited: configmaps=3",
    );
    // A dry run is refused the same way, and one that fits charges nothing.
    let r = ed.post_json(
        &format!("{cms}?dryRun=All"),
        &json!({"metadata": {"name": "c"}}),
    );
    assert_eq!(r.status, 403, "{}", r.text());
    // Deleting one gives its room back once the controller recounts.
    assert_eq!(ed.delete(&format!("{cms}/a")).status, 200);
    wait_used(
        &s,
        "objects",
        json!({"configmaps": "2", "count/deployments.apps": "0", "services.nodeports": "0"}),
    );
    let r = ed.post_json(
        &format!("{cms}?dryRun=All"),
        &json!({"metadata": {"name": "c"}}),
    );
    assert_eq!(r.status, 201, "{}", r.text());
    let r = ed.post_json(&cms, &json!({"metadata": {"name": "c"}}));
    assert_eq!(r.status, 201, "{}", r.text());

    // count/<resource>.<group>, with kubectl.
    let out = s.kubectl_with(
        &s.data_dir.join("ed.kubeconfig"),
        &["-n", NS, "create", "deployment", "one", "--image=nginx"],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = s.kubectl_with(
        &s.data_dir.join("ed.kubeconfig"),
        &["-n", NS, "create", "deployment", "two", "--image=nginx"],
    );
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains(
            "deployments.apps \"two\" is forbidden: exceeded quota: objects, requested: count/deployments.apps=1, used: count/deployments.apps=1, limited: count/deployments.apps=1"
        ),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // Node ports: on create, and on an update that turns a Service into a NodePort one.
    let svcs = format!("/api/v1/namespaces/{NS}/services");
    let two_ports = json!([{"name": "a", "port": 80}, {"name": "b", "port": 81}]);
    let r = ed.post_json(
        &svcs,
        &json!({"metadata": {"name": "np"}, "spec": {"type": "NodePort", "ports": two_ports}}),
    );
    refused(
        &r,
        "services \"np\" is forbidden: exceeded quota: objects, requested: services.nodeports=2, used: services.nodeports=0, limited: services.nodeports=1",
    );
    let r = ed.post_json(
        &svcs,
        &json!({"metadata": {"name": "web"}, "spec": {"ports": two_ports}}),
    );
    assert_eq!(r.status, 201, "{}", r.text());
    let r = ed.patch(
        &format!("{svcs}/web"),
        "application/merge-patch+json",
        &json!({"spec": {"type": "NodePort"}}),
    );
    refused(
        &r,
        "services \"web\" is forbidden: exceeded quota: objects, requested: services.nodeports=2, used: services.nodeports=0, limited: services.nodeports=1",
    );
    // kubectl shows the usage as kube's printer does.
    let out = s.kubectl_ok(&["-n", NS, "get", "quota", "objects", "--no-headers"]);
    assert!(
        out.contains("configmaps: 3/3") && out.contains("count/deployments.apps: 1/1"),
        "{out}"
    );
}

#[test]
fn pods_must_say_what_they_use_and_fit_in_it() {
    let s = Server::start().unwrap();
    s.kubectl_ok(&["create", "namespace", NS]);
    quota(
        &s,
        "compute",
        json!({"pods": "5", "requests.cpu": "1", "limits.memory": "1Gi"}),
    );
    wait_used(
        &s,
        "compute",
        json!({"pods": "0", "requests.cpu": "0", "limits.memory": "0"}),
    );
    let pods = format!("/api/v1/namespaces/{NS}/pods");
    let http = s.http();
    let r = http.post_json(&pods, &pod("bare", json!({})));
    refused(
        &r,
        "pods \"bare\" is forbidden: failed quota: compute: must specify limits.memory for: c; requests.cpu for: c",
    );
    let sized = json!({"requests": {"cpu": "600m"}, "limits": {"memory": "512Mi"}});
    let r = http.post_json(&pods, &pod("first", sized.clone()));
    assert_eq!(r.status, 201, "{}", r.text());
    let q = wait_used(
        &s,
        "compute",
        json!({"pods": "1", "requests.cpu": "600m", "limits.memory": "512Mi"}),
    );
    assert_eq!(q["status"]["hard"]["limits.memory"], "1Gi");
    let r = http.post_json(&pods, &pod("second", sized.clone()));
    refused(
        &r,
        "pods \"second\" is forbidden: exceeded quota: compute, requested: requests.cpu=600m, used: requests.cpu=600m, limited: requests.cpu=1",
    );
    // A Pod that has finished uses nothing.
    let r = http.patch(
        &format!("{pods}/first/status"),
        "application/merge-patch+json",
        &json!({"status": {"phase": "Succeeded"}}),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    wait_used(
        &s,
        "compute",
        json!({"pods": "0", "requests.cpu": "0", "limits.memory": "0"}),
    );
    let r = http.post_json(&pods, &pod("second", sized));
    assert_eq!(r.status, 201, "{}", r.text());
    wait_used(
        &s,
        "compute",
        json!({"pods": "1", "requests.cpu": "600m", "limits.memory": "512Mi"}),
    );
}
