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

/// The user `ed`, bound to `edit` in the namespace: its token (its kubeconfig is
/// `DATA/ed.kubeconfig`).
fn tenant(s: &Server) -> String {
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
    token
}

#[test]
fn object_counts_hold_on_what_is_stored() {
    let s = Server::start().unwrap();
    s.kubectl_ok(&["create", "namespace", NS]);
    let token = tenant(&s);
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

#[test]
fn what_pods_say_cannot_get_them_out_of_a_quota() {
    let s = Server::start().unwrap();
    s.kubectl_ok(&["create", "namespace", NS]);
    let token = tenant(&s);
    let ed = s.http_with_token(Some(&token));
    quota(&s, "pods", json!({"pods": "3"}));
    let scoped = |name: &str, hard: Value, scope: &str| {
        let q = json!({"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": name},
            "spec": {"hard": hard, "scopes": [scope]}});
        let r = s
            .http()
            .post_json(&format!("/api/v1/namespaces/{NS}/resourcequotas"), &q);
        assert_eq!(r.status, 201, "{}", r.text());
    };
    scoped("best-effort", json!({"pods": "1"}), "BestEffort");
    scoped("cpu", json!({"requests.cpu": "2"}), "NotBestEffort");
    wait_used(&s, "pods", json!({"pods": "0"}));
    wait_used(&s, "best-effort", json!({"pods": "0"}));
    wait_used(&s, "cpu", json!({"requests.cpu": "0"}));
    let pods = format!("/api/v1/namespaces/{NS}/pods");
    let used = |name: &str| {
        s.http()
            .get(&format!("/api/v1/namespaces/{NS}/resourcequotas/{name}"))
            .json()["status"]["used"]
            .clone()
    };
    // A status sent with the Pod is not kept (it starts Pending, with its QoS class), so a Pod
    // "created finished" is counted like any other, and the charge is there as the create
    // answers. Limits alone: the requests are the limits (kube's Pod defaults).
    let mut finished = pod(
        "finished",
        json!({"limits": {"cpu": "500m", "memory": "64Mi"}}),
    );
    finished["status"] = json!({"phase": "Succeeded"});
    let r = ed.post_json(&pods, &finished);
    assert_eq!(r.status, 201, "{}", r.text());
    let created = r.json();
    assert_eq!(created["status"]["phase"], "Pending");
    assert_eq!(created["status"]["qosClass"], "Guaranteed");
    assert_eq!(
        created["spec"]["containers"][0]["resources"]["requests"]["cpu"],
        "500m"
    );
    assert_eq!(used("pods"), json!({"pods": "1"}));
    assert_eq!(used("cpu"), json!({"requests.cpu": "500m"}));
    assert_eq!(used("best-effort"), json!({"pods": "0"}));
    // Negative requests are refused before they could credit anything.
    let r = ed.post_json(&pods, &pod("negative", json!({"requests": {"cpu": "-1"}})));
    assert_eq!(r.status, 422, "{}", r.text());
    // A scoped quota counts only the Pods in its scope: best-effort Pods need no cpu request
    // (the cpu quota is NotBestEffort), and a second one is one too many for their quota.
    let r = ed.post_json(&pods, &pod("be-1", json!({})));
    assert_eq!(r.status, 201, "{}", r.text());
    assert_eq!(r.json()["status"]["qosClass"], "BestEffort");
    let r = ed.post_json(&pods, &pod("be-2", json!({})));
    refused(
        &r,
        "pods \"be-2\" is forbidden: exceeded quota: best-effort, requested: pods=1, used: pods=1, limited: pods=1",
    );
    // Labelling a Pod is not charged again (kube charges Pods on create only).
    let r = ed.patch(
        &format!("{pods}/be-1"),
        "application/merge-patch+json",
        &json!({"metadata": {"labels": {"x": "y"}}}),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    // Creates at once never share the last unit: of 4 concurrent creates, one fits.
    let handles: Vec<_> = (0..4)
        .map(|i| {
            let ed = s.http_with_token(Some(&token));
            let pods = pods.clone();
            std::thread::spawn(move || {
                ed.post_json(
                    &pods,
                    &pod(&format!("race-{i}"), json!({"requests": {"cpu": "100m"}})),
                )
                .status
            })
        })
        .collect();
    let codes: Vec<u16> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    assert_eq!(codes.iter().filter(|c| **c == 201).count(), 1, "{codes:?}");
    assert!(codes.iter().all(|c| *c == 201 || *c == 403), "{codes:?}");
    assert_eq!(used("pods"), json!({"pods": "3"}));
}

#[test]
fn limit_ranges_default_and_bound_containers() {
    let s = Server::start().unwrap();
    s.kubectl_ok(&["create", "namespace", NS]);
    s.kubectl_stdin(
        &["-n", NS, "apply", "-f", "-"],
        "apiVersion: v1\nkind: LimitRange\nmetadata: {name: limits}\nspec:\n  limits:\n  - type: Container\n    max: {cpu: \"1\", memory: 1Gi}\n    min: {cpu: 50m}\n    default: {memory: 256Mi}\n",
    );
    // Stored as kube defaults it: default from max, defaultRequest from default, then min.
    let lr = s.kubectl_json(&["-n", NS, "get", "limitrange", "limits"]);
    let item = &lr["spec"]["limits"][0];
    assert_eq!(item["default"], json!({"memory": "256Mi", "cpu": "1"}));
    assert_eq!(
        item["defaultRequest"],
        json!({"memory": "256Mi", "cpu": "1"})
    );
    let pods = format!("/api/v1/namespaces/{NS}/pods");
    let http = s.http();
    let r = http.post_json(&pods, &pod("plain", json!({"requests": {"cpu": "100m"}})));
    assert_eq!(r.status, 201, "{}", r.text());
    let p = r.json();
    let res = &p["spec"]["containers"][0]["resources"];
    assert_eq!(res["requests"], json!({"cpu": "100m", "memory": "256Mi"}));
    assert_eq!(res["limits"], json!({"memory": "256Mi", "cpu": "1"}));
    assert_eq!(
        p["metadata"]["annotations"]["kubernetes.io/limit-ranger"],
        "LimitRanger plugin set: memory request for container c; cpu, memory limit for container c"
    );
    // A limit alone is the request (kube's Pod defaults come before LimitRanger's).
    let r = http.post_json(&pods, &pod("limited", json!({"limits": {"cpu": "500m"}})));
    assert_eq!(r.status, 201, "{}", r.text());
    assert_eq!(
        r.json()["spec"]["containers"][0]["resources"]["requests"],
        json!({"cpu": "500m", "memory": "256Mi"})
    );
    // A Pod's deadline may be lowered, not removed.
    let r = http.post_json(
        &pods,
        &json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "deadline"},
            "spec": {"activeDeadlineSeconds": 60,
                "containers": [{"name": "c", "image": "nginx", "resources": {"requests": {"cpu": "100m"}}}]}}),
    );
    assert_eq!(r.status, 201, "{}", r.text());
    let r = http.patch(
        &format!("{pods}/deadline"),
        "application/merge-patch+json",
        &json!({"spec": {"activeDeadlineSeconds": null}}),
    );
    assert_eq!(r.status, 422, "{}", r.text());
    // Claims are held to PersistentVolumeClaim items on create and on update.
    s.kubectl_stdin(
        &["-n", NS, "apply", "-f", "-"],
        "apiVersion: v1\nkind: LimitRange\nmetadata: {name: storage}\nspec:\n  limits:\n  - type: PersistentVolumeClaim\n    max: {storage: 1Gi}\n",
    );
    let pvcs = format!("/api/v1/namespaces/{NS}/persistentvolumeclaims");
    let claim = |size: &str| {
        json!({"metadata": {"name": "data"}, "spec": {"accessModes": ["ReadWriteOnce"],
            "resources": {"requests": {"storage": size}}}})
    };
    refused(
        &http.post_json(&pvcs, &claim("2Gi")),
        "persistentvolumeclaims \"data\" is forbidden: maximum storage usage per PersistentVolumeClaim is 1Gi, but request is 2Gi",
    );
    assert_eq!(http.post_json(&pvcs, &claim("500Mi")).status, 201);
    // Only a bound claim may be resized (kube's claim validation, before admission).
    let r = http.patch(
        &format!("{pvcs}/data"),
        "application/merge-patch+json",
        &json!({"spec": {"resources": {"requests": {"storage": "600Mi"}}}}),
    );
    assert_eq!(r.status, 422, "{}", r.text());
    let r = http.patch(
        &format!("{pvcs}/data/status"),
        "application/merge-patch+json",
        &json!({"status": {"phase": "Bound", "capacity": {"storage": "500Mi"}}}),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let r = http.patch(
        &format!("{pvcs}/data"),
        "application/merge-patch+json",
        &json!({"spec": {"resources": {"requests": {"storage": "2Gi"}}}}),
    );
    assert_eq!(r.status, 403, "{}", r.text());
    let r = http.post_json(
        &pods,
        &pod(
            "big",
            json!({"requests": {"cpu": "10m"}, "limits": {"cpu": "2", "memory": "2Gi"}}),
        ),
    );
    refused(
        &r,
        "pods \"big\" is forbidden: [minimum cpu usage per Container is 50m, but request is 10m, maximum cpu usage per Container is 1, but limit is 2, maximum memory usage per Container is 1Gi, but limit is 2Gi]",
    );
}

#[test]
fn pods_get_their_priority_from_their_class() {
    let s = Server::start().unwrap();
    s.kubectl_ok(&["create", "namespace", NS]);
    let http = s.http();
    // kube's system classes exist from the first start.
    let pc = s.kubectl_json(&["get", "priorityclass", "system-cluster-critical"]);
    assert_eq!(pc["value"], 2000000000);
    // ... and cannot be deleted.
    refused(
        &http.delete("/apis/scheduling.k8s.io/v1/priorityclasses/system-node-critical"),
        "priorityclasses.scheduling.k8s.io \"system-node-critical\" is forbidden: this is a system priority class and cannot be deleted",
    );
    let pods = format!("/api/v1/namespaces/{NS}/pods");
    let mut critical = pod("critical", json!({}));
    critical["spec"]["priorityClassName"] = json!("system-cluster-critical");
    let r = http.post_json(&pods, &critical);
    assert_eq!(r.status, 201, "{}", r.text());
    let p = r.json();
    assert_eq!(p["spec"]["priority"], 2000000000);
    assert_eq!(p["spec"]["preemptionPolicy"], "PreemptLowerPriority");
    // An update that leaves them out keeps them.
    let mut again = p.clone();
    again["spec"].as_object_mut().unwrap().remove("priority");
    again["metadata"]["labels"] = json!({"x": "y"});
    let r = http.put_json(&format!("{pods}/critical"), &again);
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["spec"]["priority"], 2000000000);
    // Without a class: priority 0, until a class is the default.
    let r = http.post_json(&pods, &pod("plain", json!({})));
    assert_eq!(r.json()["spec"]["priority"], 0, "{}", r.text());
    let mut unknown = pod("unknown", json!({}));
    unknown["spec"]["priorityClassName"] = json!("gold");
    refused(
        &http.post_json(&pods, &unknown),
        "pods \"unknown\" is forbidden: no PriorityClass with name gold was found",
    );
    let mut unnamed = pod("", json!({}));
    unnamed["metadata"] = json!({"generateName": "anon-"});
    unnamed["spec"]["priorityClassName"] = json!("gold");
    refused(
        &http.post_json(&pods, &unnamed),
        "pods \"anon-\" is forbidden: no PriorityClass with name gold was found",
    );
    let mut forged = pod("forged", json!({}));
    forged["spec"]["priority"] = json!(5);
    refused(
        &http.post_json(&pods, &forged),
        "pods \"forged\" is forbidden: the integer value of priority (5) must not be provided in pod spec; priority admission controller computed 0 from the given PriorityClass name",
    );
    // Not an int32: the decoder's 400, as kube decodes before admission.
    for (bad, what) in [
        (json!("x"), "string"),
        (json!(2_147_483_648_i64), "number 2147483648"),
    ] {
        forged["spec"]["priority"] = bad;
        let r = http.post_json(&pods, &forged);
        assert_eq!(r.status, 400, "{}", r.text());
        assert_eq!(
            r.json()["message"],
            format!("Pod in version \"v1\" cannot be handled as a Pod: json: cannot unmarshal {what} into Go struct field PodSpec.spec.priority of type int32")
        );
    }
    let classes = "/apis/scheduling.k8s.io/v1/priorityclasses";
    let class = |name: &str, value: i64, default: bool| {
        json!({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
            "metadata": {"name": name}, "value": value, "globalDefault": default})
    };
    assert_eq!(
        http.post_json(classes, &class("silver", 1000, true)).status,
        201
    );
    refused(
        &http.post_json(classes, &class("bronze", 10, true)),
        "priorityclasses.scheduling.k8s.io \"bronze\" is forbidden: PriorityClass silver is already marked as default. Only one default can exist",
    );
    let r = http.post_json(classes, &class("huge", 2000000000, false));
    assert_eq!(r.status, 422, "{}", r.text());
    let r = http.post_json(&pods, &pod("defaulted", json!({})));
    let p = r.json();
    assert_eq!(p["spec"]["priorityClassName"], "silver", "{p}");
    assert_eq!(p["spec"]["priority"], 1000);
}
