//! The workload story end to end, with the real kubectl and real guests in three languages: a
//! Deployment (the `deployment` controller, Python) becomes a ReplicaSet (the `replicaset`
//! controller, JavaScript) becomes Pods that a fake kubelet (the `node` controller, C) binds and
//! runs; `kubectl expose` gives them a Service whose EndpointSlice and Endpoints (the
//! `endpointslice` controller, Rust) follow the Pods as they scale; the garbage collector removes
//! them with their Deployment. Plus hot reload of Python and JavaScript controllers.

use std::sync::mpsc;
use std::time::Duration;

use serde_json::{json, Value};
use turtles_tests::{guest, poll, Server};

/// Python and JavaScript components take seconds to compile on a cold cache.
/// A cold compile of the Python and JavaScript components (several MiB each, compiled in
/// parallel with the other tests' on a 2-core machine) took up to ~200 s in CI: the deadline
/// bounds a hang, not the compile's speed (that is `cargo xtask bench`'s business).
const LOAD_DEADLINE: Duration = Duration::from_secs(600);
const DEADLINE: Duration = Duration::from_secs(60);

fn wait_running(s: &Server, names: &[&str]) {
    s.wait_controllers_running(names, LOAD_DEADLINE)
        .unwrap_or_else(|e| {
            panic!(
                "{e}\n{}\n{}",
                s.kubectl_ok(&["get", "controllers", "-o", "wide"]),
                s.log()
            )
        });
}

fn pods(s: &Server) -> Vec<Value> {
    s.kubectl_json(&["get", "pods", "-l", "app=web"])["items"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

/// Waits until the Service `web` has exactly one EndpointSlice whose endpoints are `ips`
/// (sorted), and returns it.
fn wait_endpoints(s: &Server, ips: &[String]) -> Value {
    poll("web's EndpointSlice to list the pods", DEADLINE, || {
        let slices = s.kubectl_json(&[
            "get",
            "endpointslices",
            "-l",
            "kubernetes.io/service-name=web",
        ]);
        let items = slices["items"].as_array()?;
        if items.len() != 1 {
            return None;
        }
        let mut got: Vec<String> = items[0]["endpoints"]
            .as_array()
            .map(|eps| {
                eps.iter()
                    .filter_map(|e| e["addresses"][0].as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default();
        got.sort();
        (got == ips).then(|| items[0].clone())
    })
    .unwrap_or_else(|e| {
        panic!(
            "{e}\n{}\n{}",
            s.kubectl_ok(&["get", "endpointslices", "-o", "yaml"]),
            s.kubectl_ok(&["get", "pods", "-o", "wide"])
        )
    })
}

fn controller_ref(obj: &Value) -> Value {
    obj["metadata"]["ownerReferences"]
        .as_array()
        .and_then(|a| a.iter().find(|r| r["controller"] == true).cloned())
        .unwrap_or(Value::Null)
}

fn running(p: &Value) -> bool {
    p["status"]["phase"] == "Running"
        && p["status"]["podIP"]
            .as_str()
            .is_some_and(|ip| !ip.is_empty())
        && p["metadata"]["deletionTimestamp"].is_null()
}

#[test]
fn a_deployment_runs_through_controllers_in_python_javascript_and_c() {
    let s = Server::start_with_controllers(&[]).unwrap();
    for name in ["deployment", "replicaset", "node", "endpointslice"] {
        s.drop_controller(name, &guest(name)).unwrap();
    }
    wait_running(
        &s,
        &[
            "deployment",
            "replicaset",
            "node",
            "endpointslice",
            "garbage-collector",
            "namespace-controller",
        ],
    );
    let table = s.kubectl_ok(&["get", "controllers"]);
    for line in table.lines().skip(1) {
        assert!(line.contains("Running"), "{table}");
    }

    // Every pod event from here on, read on a thread.
    let (tx, rx) = mpsc::channel::<Value>();
    let http = s.http();
    std::thread::spawn(move || {
        let mut w = http.watch_with_timeout(
            "/api/v1/namespaces/default/pods?watch=true",
            Duration::from_secs(600),
        );
        while let Ok(Some(ev)) = w.try_next_event() {
            if tx.send(ev).is_err() {
                return;
            }
        }
    });

    // And what a user sees: `kubectl get pods -w` (server-side Table rows on the watch).
    let kubectl_watch = s.kubectl_lines(&["get", "pods", "-w", "--output-watch-events"]);
    s.kubectl_ok(&[
        "create",
        "deployment",
        "web",
        "--image=nginx:1.27",
        "--replicas=3",
    ]);
    let out = s.kubectl_ok(&["rollout", "status", "deployment/web", "--timeout=120s"]);
    assert!(out.contains("successfully rolled out"), "{out}");

    // Three Pods Running with IPs on the node, owned by the ReplicaSet owned by the Deployment.
    let ps = poll("three running pods", DEADLINE, || {
        let ps = pods(&s);
        (ps.len() == 3 && ps.iter().all(running)).then_some(ps)
    })
    .unwrap_or_else(|e| panic!("{e}\n{}", s.kubectl_ok(&["get", "pods", "-o", "wide"])));
    let deploy = s.kubectl_json(&["get", "deployment", "web"]);
    let rss = s.kubectl_json(&["get", "replicasets"])["items"]
        .as_array()
        .cloned()
        .unwrap();
    assert_eq!(rss.len(), 1, "{rss:?}");
    let rs = &rss[0];
    assert_eq!(controller_ref(rs)["kind"], "Deployment");
    assert_eq!(controller_ref(rs)["uid"], deploy["metadata"]["uid"]);
    assert!(rs["metadata"]["labels"]["pod-template-hash"].is_string());
    let mut ips = Vec::new();
    for p in &ps {
        assert_eq!(controller_ref(p)["kind"], "ReplicaSet");
        assert_eq!(controller_ref(p)["uid"], rs["metadata"]["uid"]);
        assert_eq!(p["spec"]["nodeName"], "turtle-node-1");
        let ready = p["status"]["conditions"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["type"] == "Ready" && c["status"] == "True");
        assert!(ready, "{p}");
        ips.push(p["status"]["podIP"].as_str().unwrap().to_owned());
    }
    ips.sort();
    ips.dedup();
    assert_eq!(ips.len(), 3, "pod IPs must be distinct: {ips:?}");
    let node = s.kubectl_json(&["get", "node", "turtle-node-1"]);
    let node_ready = node["status"]["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .any(|c| c["type"] == "Ready" && c["status"] == "True");
    assert!(node_ready, "{node}");
    assert_eq!(deploy["status"]["readyReplicas"], 3, "{deploy}");
    assert_eq!(deploy["status"]["availableReplicas"], 3);
    assert_eq!(deploy["status"]["updatedReplicas"], 3);
    assert_eq!(
        deploy["status"]["observedGeneration"],
        deploy["metadata"]["generation"]
    );
    let wide = s.kubectl_ok(&["get", "deployment", "web"]);
    assert!(wide.contains("3/3"), "{wide}");
    // The controller's events, found by kubectl describe through field selectors.
    let described = s.kubectl_ok(&["describe", "deployment", "web"]);
    assert!(
        described.contains("ScalingReplicaSet") && described.contains("from 0 to 3"),
        "{described}"
    );
    // Each controller's writes are managed by it: with no `fieldManager`, kube names the
    // manager after the client's user agent, which the host sets to the controller's name.
    let managers = |kind: &str| -> Vec<String> {
        let list = s.kubectl_json(&["get", kind, "--show-managed-fields", "-o", "json"]);
        let mut names: Vec<String> = list["items"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|o| {
                o["metadata"]["managedFields"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default()
            })
            .filter_map(|m| m["manager"].as_str().map(str::to_owned))
            .collect();
        names.sort();
        names.dedup();
        names
    };
    assert_eq!(managers("replicasets"), ["deployment", "replicaset"]);

    // A new image, then `kubectl rollout undo`: the first ReplicaSet comes back as revision 3
    // and remembers it was 1 (kube's revision-history), which `rollout history` lists.
    s.kubectl_ok(&["set", "image", "deployment/web", "nginx=nginx:1.28"]);
    let out = s.kubectl_ok(&["rollout", "status", "deployment/web", "--timeout=120s"]);
    assert!(out.contains("successfully rolled out"), "{out}");
    s.kubectl_ok(&["rollout", "undo", "deployment/web"]);
    let first = poll("the first ReplicaSet to be revision 3", DEADLINE, || {
        let rss = s.kubectl_json(&["get", "replicasets"]);
        rss["items"]
            .as_array()?
            .iter()
            .find(|rs| {
                rs["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:1.27"
                    && rs["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "3"
            })
            .cloned()
    })
    .unwrap_or_else(|e| panic!("{e}\n{}", s.kubectl_ok(&["get", "rs", "-o", "yaml"])));
    assert_eq!(
        first["metadata"]["annotations"]["deployment.kubernetes.io/revision-history"], "1",
        "{first}"
    );
    let out = s.kubectl_ok(&["rollout", "status", "deployment/web", "--timeout=120s"]);
    assert!(out.contains("successfully rolled out"), "{out}");
    let history = s.kubectl_ok(&["rollout", "history", "deployment/web"]);
    let revisions: Vec<&str> = history
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|w| w.chars().all(|c| c.is_ascii_digit()))
        .collect();
    assert_eq!(revisions, ["2", "3"], "{history}");
    // The Pods now: the undo replaced them.
    let mut ips: Vec<String> = poll("three running pods after the undo", DEADLINE, || {
        let ps = pods(&s);
        (ps.len() == 3 && ps.iter().all(running)).then_some(ps)
    })
    .unwrap_or_else(|e| panic!("{e}\n{}", s.kubectl_ok(&["get", "pods", "-o", "wide"])))
    .iter()
    .map(|p| p["status"]["podIP"].as_str().unwrap().to_owned())
    .collect();
    ips.sort();
    assert!(
        managers("pods").contains(&"replicaset".to_owned()),
        "{:?}",
        managers("pods")
    );

    // Expose it: the endpointslice controller (Rust) fills the Service's EndpointSlice and
    // Endpoints with the three Pods, as kube-controller-manager does.
    s.kubectl_ok(&[
        "expose",
        "deployment",
        "web",
        "--port=80",
        "--target-port=8080",
    ]);
    let service = s.kubectl_json(&["get", "service", "web"]);
    let slice = wait_endpoints(&s, &ips);
    assert_eq!(slice["addressType"], "IPv4");
    assert_eq!(
        slice["ports"],
        json!([{"name": "", "protocol": "TCP", "port": 8080}])
    );
    assert_eq!(
        slice["metadata"]["labels"]["endpointslice.kubernetes.io/managed-by"],
        "endpointslice-controller.k8s.io"
    );
    assert!(slice["metadata"]["name"]
        .as_str()
        .unwrap()
        .starts_with("web-"));
    assert_eq!(controller_ref(&slice)["uid"], service["metadata"]["uid"]);
    for ep in slice["endpoints"].as_array().unwrap() {
        assert_eq!(
            ep["conditions"],
            json!({"ready": true, "serving": true, "terminating": false}),
            "{slice}"
        );
        assert_eq!(ep["targetRef"]["kind"], "Pod");
        assert_eq!(ep["nodeName"], "turtle-node-1");
    }
    let endpoints = s.kubectl_json(&["get", "endpoints", "web"]);
    let mut addrs: Vec<String> = endpoints["subsets"][0]["addresses"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["ip"].as_str().unwrap().to_owned())
        .collect();
    addrs.sort();
    assert_eq!(addrs, ips, "{endpoints}");
    assert_eq!(
        endpoints["subsets"][0]["ports"],
        json!([{"port": 8080, "protocol": "TCP"}])
    );
    let described = s.kubectl_ok(&["describe", "service", "web"]);
    assert!(
        described.contains(&format!("{}:8080", ips[0])),
        "{described}"
    );

    // Scale to one: one Pod left, and one endpoint.
    s.kubectl_ok(&["scale", "deployment", "web", "--replicas=1"]);
    let left = poll("one pod left", DEADLINE, || {
        let ps = pods(&s);
        (ps.len() == 1 && running(&ps[0]))
            .then(|| ps[0]["status"]["podIP"].as_str().unwrap().to_owned())
    })
    .unwrap_or_else(|e| panic!("{e}\n{}", s.kubectl_ok(&["get", "pods", "-o", "wide"])));
    let out = s.kubectl_ok(&["rollout", "status", "deployment/web", "--timeout=60s"]);
    assert!(out.contains("successfully rolled out"), "{out}");
    wait_endpoints(&s, &[left]);
    // And back up to two: the new Pod joins once it runs.
    s.kubectl_ok(&["scale", "deployment", "web", "--replicas=2"]);
    let two = poll("two running pods", DEADLINE, || {
        let ps = pods(&s);
        let mut ips: Vec<String> = ps
            .iter()
            .filter(|p| running(p))
            .map(|p| p["status"]["podIP"].as_str().unwrap().to_owned())
            .collect();
        ips.sort();
        (ips.len() == 2).then_some(ips)
    })
    .unwrap();
    wait_endpoints(&s, &two);

    // Delete the Deployment: the garbage collector removes its ReplicaSet and Pods.
    s.kubectl_ok(&["delete", "deployment", "web"]);
    poll("replicasets and pods to be collected", DEADLINE, || {
        let rss = s.kubectl_json(&["get", "replicasets"]);
        let ps = s.kubectl_json(&["get", "pods"]);
        (rss["items"].as_array()?.is_empty() && ps["items"].as_array()?.is_empty()).then_some(())
    })
    .unwrap_or_else(|e| panic!("{e}\n{}", s.kubectl_ok(&["get", "rs,pods"])));
    // No Pods: an empty slice; the Service deleted: its slice (owner reference) and its
    // Endpoints (the controller) go.
    let empty = wait_endpoints(&s, &[]);
    // That slice stays, as kube's controller keeps its one placeholder: reconciles of the
    // Service (touched twice here) find it as they want it. (The server leaves its empty
    // `endpoints` and `ports` out; a controller that wanted `[]` there made a new slice and
    // deleted the old one on every reconcile, forever.)
    let reconciles = || -> u64 {
        s.http()
            .get("/metrics")
            .text()
            .lines()
            .find_map(|l| {
                l.strip_prefix("turtles_controller_reconciles_total{controller=\"endpointslice\"} ")
            })
            .and_then(|n| n.parse().ok())
            .unwrap_or(0)
    };
    let before = reconciles();
    for i in 0..2 {
        s.kubectl_ok(&[
            "annotate",
            "service",
            "web",
            &format!("touch={i}"),
            "--overwrite",
        ]);
    }
    poll(
        "the endpointslice controller to reconcile web again",
        DEADLINE,
        || (reconciles() >= before + 2).then_some(()),
    )
    .unwrap();
    let slices = s.kubectl_json(&[
        "get",
        "endpointslices",
        "-l",
        "kubernetes.io/service-name=web",
    ]);
    let items = slices["items"].as_array().unwrap();
    assert_eq!(items.len(), 1, "{slices}");
    assert_eq!(
        items[0]["metadata"]["name"], empty["metadata"]["name"],
        "{slices}"
    );
    assert_eq!(
        items[0]["metadata"]["resourceVersion"], empty["metadata"]["resourceVersion"],
        "{slices}"
    );
    s.kubectl_ok(&["delete", "service", "web"]);
    poll("the slice and Endpoints of web to go", DEADLINE, || {
        let slices = s.kubectl_json(&[
            "get",
            "endpointslices",
            "-l",
            "kubernetes.io/service-name=web",
        ]);
        let eps = s.kubectl(&["get", "endpoints", "web"]);
        (slices["items"].as_array()?.is_empty() && !eps.status.success()).then_some(())
    })
    .unwrap_or_else(|e| {
        panic!(
            "{e}\n{}",
            s.kubectl_ok(&["get", "endpointslices,endpoints"])
        )
    });

    // The pod watch saw each Pod added Pending, run, and deleted.
    let mut by_pod: std::collections::HashMap<String, Vec<(String, String)>> = Default::default();
    let deleted_all = poll("the watch to show every deletion", DEADLINE, || {
        while let Ok(ev) = rx.try_recv() {
            let name = ev["object"]["metadata"]["name"]
                .as_str()
                .unwrap_or("")
                .to_owned();
            let phase = ev["object"]["status"]["phase"]
                .as_str()
                .unwrap_or("")
                .to_owned();
            by_pod
                .entry(name)
                .or_default()
                .push((ev["type"].as_str().unwrap_or("").to_owned(), phase));
        }
        (by_pod.len() >= 3
            && by_pod
                .values()
                .all(|evs| evs.last().is_some_and(|e| e.0 == "DELETED")))
        .then(|| by_pod.clone())
    })
    .unwrap();
    let mut lines: Vec<String> = Vec::new();
    poll(
        "kubectl get pods -w to show the lifecycle",
        DEADLINE,
        || {
            lines.extend(kubectl_watch.drain());
            let has = |event: &str, status: &str| {
                lines
                    .iter()
                    .any(|l| l.starts_with(event) && l.contains(" web-") && l.contains(status))
            };
            (has("ADDED", "Pending")
                && has("MODIFIED", "ContainerCreating")
                && has("MODIFIED", "Running")
                && has("DELETED", ""))
            .then_some(())
        },
    )
    .unwrap_or_else(|e| panic!("{e}\n{}", lines.join("\n")));
    assert!(lines[0].starts_with("EVENT"), "{}", lines.join("\n"));
    for (pod, evs) in &deleted_all {
        assert_eq!(evs[0], ("ADDED".into(), "Pending".into()), "{pod}: {evs:?}");
        assert!(
            evs.iter().any(|(t, p)| t == "MODIFIED" && p == "Running"),
            "{pod}: {evs:?}"
        );
        assert_eq!(evs.last().unwrap().0, "DELETED", "{pod}: {evs:?}");
    }
}

fn greet(s: &Server, name: &str) {
    let r = s.http().post_json(
        "/api/v1/namespaces/default/configmaps",
        &json!({"metadata": {"name": name, "labels": {"turtles.dev/greet": "true"}}}),
    );
    assert_eq!(r.status, 201, "{}", r.text());
}

fn wait_greeting(s: &Server, name: &str, want: &str) {
    poll(&format!("{name} greeted {want:?}"), LOAD_DEADLINE, || {
        let cm = s
            .http()
            .get(&format!("/api/v1/namespaces/default/configmaps/{name}"))
            .json();
        (cm["metadata"]["annotations"]["turtles.dev/greeting"] == want).then_some(())
    })
    .unwrap_or_else(|e| panic!("{e}\n{}", s.log()));
}

/// Swap a new build of a controller in under the same file name and see its new behaviour,
/// without restarting the host.
fn hot_reload(lang: &str, v1: &str, v2: &str) {
    let s = Server::start_with_controllers(&[]).unwrap();
    let name = format!("{lang}-greeter");
    s.drop_controller(&name, &guest(v1)).unwrap();
    wait_running(&s, &[&name]);
    greet(&s, "first");
    let hello = if lang == "py" { "python" } else { "javascript" };
    wait_greeting(&s, "first", &format!("hello from {hello}, first"));
    let before = s.kubectl_json(&["get", "controller", &name]);
    s.drop_controller(&name, &guest(v2)).unwrap();
    poll("the new build to be Running", LOAD_DEADLINE, || {
        let c = s.kubectl_json(&["get", "controller", &name]);
        (c["status"]["sha256"] != before["status"]["sha256"] && c["status"]["phase"] == "Running")
            .then_some(())
    })
    .unwrap_or_else(|e| panic!("{e}\n{}", s.log()));
    greet(&s, "second");
    wait_greeting(&s, "second", &format!("hi from {hello}, second"));
}

#[test]
fn python_controller_hot_reloads() {
    hot_reload("py", "py-greeter", "py-greeter-v2");
}

#[test]
fn javascript_controller_hot_reloads() {
    hot_reload("js", "js-greeter", "js-greeter-v2");
}

/// The C node runs a Pod with requests (Burstable: the QoS class set at create stays, as kube
/// refuses changing it) and reports a container added by `kubectl debug` running.
#[test]
fn kubectl_debug_on_a_running_pod_starts_its_ephemeral_container() {
    let s = Server::start_with_controllers(&[]).unwrap();
    s.drop_controller("node", &guest("node")).unwrap();
    wait_running(&s, &["node"]);
    s.kubectl_ok(&[
        "run",
        "app",
        "--image=nginx:1.27",
        "--overrides",
        r#"{"spec":{"containers":[{"name":"app","image":"nginx:1.27","resources":{"requests":{"cpu":"100m"}}}]}}"#,
    ]);
    let pod = poll("the Pod to run", DEADLINE, || {
        let p = s.kubectl_json(&["get", "pod", "app", "-o", "json"]);
        running(&p).then_some(p)
    })
    .unwrap();
    assert_eq!(pod["status"]["qosClass"], "Burstable", "{pod}");
    s.kubectl_ok(&["debug", "app", "--image=busybox:1.36", "--container=dbg"]);
    let pod = poll("the ephemeral container to run", DEADLINE, || {
        let p = s.kubectl_json(&["get", "pod", "app", "-o", "json"]);
        let st = &p["status"]["ephemeralContainerStatuses"][0];
        (st["name"] == "dbg" && st["state"]["running"].is_object()).then_some(p)
    })
    .unwrap();
    assert_eq!(pod["status"]["qosClass"], "Burstable", "{pod}");
    // A status write may not change the class.
    let r = s.http().patch(
        "/api/v1/namespaces/default/pods/app/status",
        "application/merge-patch+json",
        &json!({"status": {"qosClass": "BestEffort"}}),
    );
    let st = turtles_tests::assert_status(&r, 422, "Invalid");
    assert!(
        st["message"]
            .as_str()
            .unwrap()
            .contains("status.qosClass: Invalid value: \"BestEffort\": field is immutable"),
        "{st}"
    );
}

/// `kubectl delete deploy --cascade=orphan`, then the same Deployment again: the Python
/// Deployment controller adopts the orphaned ReplicaSet (kube's `ClaimReplicaSets`), so the same
/// two Pods run on with no second ReplicaSet and no hash collision. And a Pod's sidecar (an init
/// container of `restartPolicy: Always`) runs on beside its containers (the C fake kubelet):
/// `kubectl get pod` counts it ready. And a ReplicationController runs its Pods.
#[test]
fn an_orphaned_replicaset_is_adopted_again_and_sidecars_run() {
    let s = Server::start_with_controllers(&[]).unwrap();
    for name in ["deployment", "replicaset", "node", "replicationcontroller"] {
        s.drop_controller(name, &guest(name)).unwrap();
    }
    wait_running(
        &s,
        &["deployment", "replicaset", "node", "replicationcontroller"],
    );
    s.kubectl_ok(&[
        "create",
        "deployment",
        "web",
        "--image=nginx:1.27",
        "--replicas=2",
    ]);
    let out = s.kubectl_ok(&["rollout", "status", "deployment/web", "--timeout=120s"]);
    assert!(out.contains("successfully rolled out"), "{out}");
    let rss = |s: &Server| {
        s.kubectl_json(&["get", "rs", "-l", "app=web"])["items"]
            .as_array()
            .cloned()
            .unwrap_or_default()
    };
    let names = |v: &[Value]| -> Vec<String> {
        let mut n: Vec<String> = v
            .iter()
            .map(|o| o["metadata"]["name"].as_str().unwrap_or("").to_owned())
            .collect();
        n.sort();
        n
    };
    let before_rs = names(&rss(&s));
    let before_pods = names(&pods(&s));
    assert_eq!((before_rs.len(), before_pods.len()), (1, 2));

    s.kubectl_ok(&["delete", "deployment", "web", "--cascade=orphan"]);
    poll("the ReplicaSet to be orphaned", DEADLINE, || {
        let r = rss(&s);
        (r.len() == 1 && r[0]["metadata"].get("ownerReferences").is_none()).then_some(())
    })
    .unwrap();
    s.kubectl_ok(&[
        "create",
        "deployment",
        "web",
        "--image=nginx:1.27",
        "--replicas=2",
    ]);
    let d = s.kubectl_json(&["get", "deployment", "web"]);
    let uid = d["metadata"]["uid"].as_str().unwrap().to_owned();
    let out = s.kubectl_ok(&["rollout", "status", "deployment/web", "--timeout=120s"]);
    assert!(out.contains("successfully rolled out"), "{out}");
    let adopted = poll("the ReplicaSet to be adopted", DEADLINE, || {
        let r = rss(&s);
        (r.len() == 1 && controller_ref(&r[0])["uid"] == uid.as_str()).then_some(r)
    })
    .unwrap();
    assert_eq!(names(&adopted), before_rs);
    assert_eq!(names(&pods(&s)), before_pods);
    let d = s.kubectl_json(&["get", "deployment", "web"]);
    assert!(d["status"].get("collisionCount").is_none(), "{d}");

    s.kubectl_apply(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: meshed}\nspec:\n  initContainers:\n  - {name: setup, image: busybox}\n  - {name: proxy, image: envoy, restartPolicy: Always}\n  containers:\n  - {name: app, image: nginx}\n",
    );
    let line = poll("the meshed Pod to run", DEADLINE, || {
        let out = s.kubectl_ok(&["get", "pod", "meshed", "--no-headers"]);
        out.contains("Running").then_some(out)
    })
    .unwrap();
    assert!(line.contains(" 2/2 "), "{line}");
    let p = s.kubectl_json(&["get", "pod", "meshed"]);
    let sidecar = &p["status"]["initContainerStatuses"][1];
    assert!(sidecar["state"]["running"].is_object(), "{p}");
    // An old manifest's ReplicationController (the JavaScript ReplicaSet controller's code, run
    // for ReplicationControllers): its Pods run and `kubectl get rc` counts them ready.
    s.kubectl_apply(
        "apiVersion: v1\nkind: ReplicationController\nmetadata: {name: redis}\nspec:\n  replicas: 2\n  template:\n    metadata: {labels: {app: redis}}\n    spec:\n      containers: [{name: redis, image: redis}]\n",
    );
    let rc = poll(
        "the ReplicationController's Pods to be ready",
        DEADLINE,
        || {
            let rc = s.kubectl_json(&["get", "rc", "redis"]);
            (rc["status"]["readyReplicas"] == 2).then_some(rc)
        },
    )
    .unwrap();
    assert_eq!(rc["spec"]["selector"], json!({"app": "redis"}), "{rc}");
    let redis = s.kubectl_json(&["get", "pods", "-l", "app=redis"]);
    let items = redis["items"].as_array().unwrap();
    assert_eq!(items.len(), 2, "{redis}");
    assert!(
        items
            .iter()
            .all(|p| controller_ref(p)["kind"] == "ReplicationController" && running(p)),
        "{redis}"
    );
    assert_eq!(sidecar["started"], true, "{p}");
    // As a 1.34 kubelet reports it (PodObservedGenerationTracking).
    assert_eq!(p["status"]["observedGeneration"], 1, "{p}");
    assert!(
        p["status"]["conditions"]
            .as_array()
            .unwrap()
            .iter()
            .all(|c| c["observedGeneration"] == 1),
        "{p}"
    );
}
