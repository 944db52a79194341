//! StatefulSets end to end, with the real kubectl and real guests: the `statefulset` controller
//! (Rust) makes the Pods and claims, the `persistentvolume` binder and `hostpath-provisioner`
//! (Rust) give the claims volumes, the fake kubelet (`node`, C) schedules and runs the Pods. The orders kube
//! guarantees are asserted from a watch of every Pod event: `OrderedReady` creates `web-N` only
//! once `web-N-1` is Running and Ready, scales down and rolls out from the highest ordinal, one
//! Pod at a time; `Parallel` creates every Pod at once. Revisions are what `kubectl rollout
//! history` and `kubectl rollout undo` read and write.

use std::time::Duration;

use serde_json::Value;
use turtles_tests::{guest, poll, Server};

/// A cold compile of the components (in parallel with other tests on 2 cores): bounds a hang.
const LOAD_DEADLINE: Duration = Duration::from_secs(600);
const DEADLINE: Duration = Duration::from_secs(90);

/// kube's StatefulSet example, as the README has users apply it.
const MANIFEST: &str = include_str!("../../guest-examples/manifests/web.yaml");

fn wait_running(s: &Server, names: &[&str]) {
    s.wait_controllers_running(names, LOAD_DEADLINE)
        .unwrap_or_else(|e| panic!("{e}\n{}", s.log()));
}

fn name(ev: &Value) -> &str {
    ev["object"]["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
}

fn running_ready(pod: &Value) -> bool {
    pod["status"]["phase"] == "Running"
        && pod["status"]["conditions"].as_array().is_some_and(|cs| {
            cs.iter()
                .any(|c| c["type"] == "Ready" && c["status"] == "True")
        })
        && pod["metadata"]["deletionTimestamp"].is_null()
}

/// The index of the first event matching `f`.
fn first(events: &[Value], f: impl Fn(&Value) -> bool) -> Option<usize> {
    events.iter().position(f)
}

fn rollout_status(s: &Server) -> String {
    s.kubectl_ok(&["rollout", "status", "statefulset/web", "--timeout=90s"])
}

fn pods_of_web(s: &Server) -> Vec<Value> {
    s.kubectl_json(&["get", "pods", "-l", "app=nginx"])["items"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

fn revision_of(pod: &Value) -> String {
    pod["metadata"]["labels"]["controller-revision-hash"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// Waits until the set's three Pods are Running and Ready at `revision`.
fn wait_all_at(s: &Server, revision: &str) {
    poll("three ready pods at the revision", DEADLINE, || {
        let ps = pods_of_web(s);
        (ps.len() == 3
            && ps
                .iter()
                .all(|p| running_ready(p) && revision_of(p) == revision))
        .then_some(())
    })
    .unwrap_or_else(|e| panic!("{e}\n{}", s.kubectl_ok(&["get", "pods", "-o", "wide"])));
}

#[test]
fn an_ordered_stateful_set_creates_scales_and_rolls_out_one_pod_at_a_time() {
    let s = Server::start_with_controllers(&[]).unwrap();
    let names = [
        "statefulset",
        "node",
        "persistentvolume",
        "hostpath-provisioner",
    ];
    for name in names {
        s.drop_controller(name, &guest(name)).unwrap();
    }
    wait_running(&s, &names);
    let events = s.record_events("/api/v1/namespaces/default/pods?watch=true");

    let out = s.kubectl_stdin(&["apply", "-f", "-"], MANIFEST);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let status = rollout_status(&s);
    assert!(status.contains("3 new pods have been updated"), "{status}");

    // Created in order: web-N only once web-N-1 was seen Running and Ready.
    let evs = events.lock().unwrap().clone();
    for n in 1..3 {
        let added = first(&evs, |e| {
            e["type"] == "ADDED" && name(e) == format!("web-{n}")
        })
        .unwrap_or_else(|| panic!("no ADDED web-{n}: {evs:#?}"));
        let prev_ready = first(&evs, |e| {
            name(e) == format!("web-{}", n - 1) && running_ready(&e["object"])
        })
        .unwrap_or_else(|| panic!("web-{} never ready", n - 1));
        assert!(
            prev_ready < added,
            "web-{n} created before web-{} was ready",
            n - 1
        );
    }

    // Each Pod's identity, storage and owner; its claim exists.
    let set = s.kubectl_json(&["get", "statefulset", "web"]);
    let revision = set["status"]["currentRevision"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(set["status"]["updateRevision"], revision.as_str());
    assert_eq!(set["status"]["readyReplicas"], 3, "{set}");
    assert_eq!(set["status"]["availableReplicas"], 3);
    assert_eq!(
        set["status"]["observedGeneration"],
        set["metadata"]["generation"]
    );
    assert!(revision.starts_with("web-"), "{revision}");
    for n in 0..3 {
        let pod = s.kubectl_json(&["get", "pod", &format!("web-{n}")]);
        let labels = &pod["metadata"]["labels"];
        assert_eq!(
            labels["statefulset.kubernetes.io/pod-name"],
            format!("web-{n}")
        );
        assert_eq!(labels["apps.kubernetes.io/pod-index"], n.to_string());
        assert_eq!(labels["controller-revision-hash"], revision.as_str());
        assert_eq!(pod["spec"]["hostname"], format!("web-{n}"));
        assert_eq!(pod["spec"]["subdomain"], "nginx");
        let owner = &pod["metadata"]["ownerReferences"][0];
        assert_eq!(owner["kind"], "StatefulSet");
        assert_eq!(owner["uid"], set["metadata"]["uid"]);
        let volume = pod["spec"]["volumes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|v| v["name"] == "www")
            .cloned()
            .unwrap_or_else(|| panic!("no www volume: {pod}"));
        assert_eq!(
            volume["persistentVolumeClaim"]["claimName"],
            format!("www-web-{n}")
        );
        let claim = s.kubectl_json(&["get", "pvc", &format!("www-web-{n}")]);
        assert_eq!(claim["metadata"]["labels"]["app"], "nginx");
        assert_eq!(claim["spec"]["resources"]["requests"]["storage"], "1Gi");
        assert!(
            claim["metadata"]["ownerReferences"].is_null(),
            "Retain: {claim}"
        );
        // A Pod runs only once its claims are bound: here to a volume provisioned for it.
        assert_eq!(claim["status"]["phase"], "Bound", "{claim}");
        let uid = claim["metadata"]["uid"].as_str().unwrap();
        assert_eq!(claim["spec"]["volumeName"], format!("pvc-{uid}"));
    }
    let described = s.kubectl_ok(&["describe", "statefulset", "web"]);
    assert!(
        described.contains("create Pod web-2 in StatefulSet web successful")
            && described.contains("create Claim www-web-0 Pod web-0 in StatefulSet web success"),
        "{described}"
    );

    // Scale down to 1: web-2 goes first and is gone before web-1 is touched.
    let mark = events.lock().unwrap().len();
    s.kubectl_ok(&["scale", "statefulset", "web", "--replicas=1"]);
    poll("one pod left", DEADLINE, || {
        (pods_of_web(&s).len() == 1).then_some(())
    })
    .unwrap_or_else(|e| panic!("{e}\n{}", s.kubectl_ok(&["get", "pods"])));
    let evs = events.lock().unwrap()[mark..].to_vec();
    let deleting = |n: &str| {
        first(&evs, |e| {
            name(e) == n && !e["object"]["metadata"]["deletionTimestamp"].is_null()
        })
        .unwrap_or_else(|| panic!("{n} never marked: {evs:#?}"))
    };
    let gone = |n: &str| {
        first(&evs, |e| e["type"] == "DELETED" && name(e) == n).unwrap_or_else(|| panic!("{n}"))
    };
    assert!(
        gone("web-2") < deleting("web-1"),
        "web-1 was deleted before web-2 was gone"
    );
    assert_eq!(pods_of_web(&s)[0]["metadata"]["name"], "web-0");
    // The claims stay (whenScaled: Retain).
    s.kubectl_ok(&["get", "pvc", "www-web-2"]);
    s.kubectl_ok(&["scale", "statefulset", "web", "--replicas=3"]);
    rollout_status(&s);
    wait_all_at(&s, &revision);

    // A rolling update (kubectl rollout restart): from web-2 down to web-0, one at a time.
    let mark = events.lock().unwrap().len();
    s.kubectl_ok(&["rollout", "restart", "statefulset/web"]);
    let status = rollout_status(&s);
    assert!(status.contains("3 new pods have been updated"), "{status}");
    let restarted = s.kubectl_json(&["get", "statefulset", "web"]);
    let new_revision = restarted["status"]["updateRevision"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_ne!(new_revision, revision);
    wait_all_at(&s, &new_revision);
    poll("the update revision current", DEADLINE, || {
        let st = s.kubectl_json(&["get", "statefulset", "web"]);
        (st["status"]["currentRevision"] == new_revision.as_str()).then_some(())
    })
    .unwrap();
    let evs = events.lock().unwrap()[mark..].to_vec();
    let marked = |n: &str| {
        first(&evs, |e| {
            name(e) == n && !e["object"]["metadata"]["deletionTimestamp"].is_null()
        })
        .unwrap_or_else(|| panic!("{n} never replaced: {evs:#?}"))
    };
    let back_ready = |n: &str| {
        first(&evs, |e| {
            name(e) == n && running_ready(&e["object"]) && revision_of(&e["object"]) == new_revision
        })
        .unwrap_or_else(|| panic!("{n} never ready at the new revision"))
    };
    assert!(
        back_ready("web-2") < marked("web-1"),
        "web-1 replaced before web-2 was back"
    );
    assert!(
        back_ready("web-1") < marked("web-0"),
        "web-0 replaced before web-1 was back"
    );

    // History and undo: back to the first template, under its first revision's name.
    assert_eq!(s.rollout_history("statefulset/web"), [1, 2]);
    let out = s.kubectl_ok(&["rollout", "undo", "statefulset/web"]);
    assert!(out.contains("rolled back"), "{out}");
    rollout_status(&s);
    wait_all_at(&s, &revision);
    let undone = s.kubectl_json(&["get", "statefulset", "web"]);
    assert!(
        undone["spec"]["template"]["metadata"]["annotations"]["kubectl.kubernetes.io/restartedAt"]
            .is_null(),
        "{undone}"
    );
    let rev = s.kubectl_json(&["get", "controllerrevision", &revision]);
    assert_eq!(
        rev["revision"], 3,
        "the rolled-back revision is the newest: {rev}"
    );
    assert_eq!(s.rollout_history("statefulset/web"), [2, 3]);

    // A Pod taken out of the set (relabelled, as for debugging) is released; its name is
    // taken, so the set retries until the user deletes it, then makes web-1 again.
    s.kubectl_ok(&["label", "pod", "web-1", "app=debug", "--overwrite"]);
    poll("web-1 released", DEADLINE, || {
        let pod = s.kubectl_json(&["get", "pod", "web-1"]);
        (pod["metadata"]["labels"]["app"] == "debug"
            && pod["metadata"]["ownerReferences"]
                .as_array()
                .is_none_or(|refs| refs.iter().all(|r| r["kind"] != "StatefulSet")))
        .then_some(())
    })
    .unwrap_or_else(|e| {
        panic!(
            "{e}\n{}",
            s.kubectl_ok(&["get", "pod", "web-1", "-o", "yaml"])
        )
    });
    s.kubectl_ok(&["delete", "pod", "web-1", "--wait=true"]);
    wait_all_at(&s, &revision);

    // A partitioned roll out: with partition 2 only web-2 takes the new image; partition 0
    // lets the rest follow.
    s.kubectl_ok(&[
        "patch",
        "statefulset",
        "web",
        "-p",
        r#"{"spec":{"updateStrategy":{"rollingUpdate":{"partition":2}}}}"#,
    ]);
    s.kubectl_ok(&[
        "set",
        "image",
        "statefulset/web",
        "nginx=registry.k8s.io/nginx-slim:0.25",
    ]);
    let status = rollout_status(&s);
    assert!(
        status.contains("partitioned roll out complete: 1 new pods have been updated"),
        "{status}"
    );
    let image_of = |n: u32| {
        s.kubectl_json(&["get", "pod", &format!("web-{n}")])["spec"]["containers"][0]["image"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    };
    poll("web-2 at the new image", DEADLINE, || {
        (image_of(2).ends_with(":0.25")).then_some(())
    })
    .unwrap();
    assert!(image_of(0).ends_with(":0.24") && image_of(1).ends_with(":0.24"));
    let set = s.kubectl_json(&["get", "statefulset", "web"]);
    assert_ne!(
        set["status"]["currentRevision"], set["status"]["updateRevision"],
        "{set}"
    );
    assert_eq!(set["status"]["updatedReplicas"], 1, "{set}");
    s.kubectl_ok(&[
        "patch",
        "statefulset",
        "web",
        "-p",
        r#"{"spec":{"updateStrategy":{"rollingUpdate":{"partition":0}}}}"#,
    ]);
    rollout_status(&s);
    let updated = s.kubectl_json(&["get", "statefulset", "web"])["status"]["updateRevision"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    wait_all_at(&s, &updated);
    assert!((0..3).all(|n| image_of(n).ends_with(":0.25")));

    // Deleted: the Pods go with it (garbage collector), the claims stay (whenDeleted: Retain).
    s.kubectl_ok(&["delete", "statefulset", "web", "--wait=true"]);
    poll("the pods gone", DEADLINE, || {
        pods_of_web(&s).is_empty().then_some(())
    })
    .unwrap_or_else(|e| panic!("{e}\n{}", s.kubectl_ok(&["get", "pods"])));
    let claims = s.kubectl_json(&["get", "pvc"]);
    assert_eq!(claims["items"].as_array().unwrap().len(), 3, "{claims}");
}

#[test]
fn a_parallel_stateful_set_creates_every_pod_at_once_and_its_claims_go_with_it() {
    // No kubelet at first: nothing becomes Ready, so an OrderedReady set stops at web-0 while a
    // Parallel one creates all its Pods.
    let s = Server::start_with_controllers(&[]).unwrap();
    let names = ["statefulset", "persistentvolume", "hostpath-provisioner"];
    for name in names {
        s.drop_controller(name, &guest(name)).unwrap();
    }
    wait_running(&s, &names);
    let set = |name: &str, policy: &str| {
        MANIFEST
            .split("---")
            .nth(1)
            .unwrap()
            .replace("name: web", &format!("name: {name}"))
            .replace("app: nginx", &format!("app: {name}"))
            .replace(
                "  serviceName: nginx",
                &format!(
                    "  serviceName: nginx\n  podManagementPolicy: {policy}\n  persistentVolumeClaimRetentionPolicy: {{whenDeleted: Delete, whenScaled: Delete}}"
                ),
            )
    };
    for (name, policy) in [("ordered", "OrderedReady"), ("parallel", "Parallel")] {
        let out = s.kubectl_stdin(&["apply", "-f", "-"], &set(name, policy));
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let count = |app: &str| {
        s.kubectl_json(&["get", "pods", "-l", &format!("app={app}")])["items"]
            .as_array()
            .map_or(0, Vec::len)
    };
    poll("three parallel pods", DEADLINE, || {
        (count("parallel") == 3).then_some(())
    })
    .unwrap_or_else(|e| panic!("{e}\n{}", s.kubectl_ok(&["get", "pods"])));
    poll("the ordered set's status", DEADLINE, || {
        let st = s.kubectl_json(&["get", "statefulset", "ordered"]);
        (st["status"]["replicas"] == 1 && st["status"]["observedGeneration"] == 1).then_some(())
    })
    .unwrap();
    assert_eq!(count("ordered"), 1, "{}", s.kubectl_ok(&["get", "pods"]));
    let ready = s.kubectl_ok(&["get", "statefulset", "parallel"]);
    assert!(ready.contains("0/3"), "{ready}");

    // whenDeleted: Delete: the claims are owned by the set.
    let set_uid = s.kubectl_json(&["get", "statefulset", "parallel"])["metadata"]["uid"].clone();
    let claim = s.kubectl_json(&["get", "pvc", "www-parallel-0"]);
    assert_eq!(
        claim["metadata"]["ownerReferences"][0]["uid"], set_uid,
        "{claim}"
    );

    // The kubelet arrives: the ordered set completes too.
    s.drop_controller("node", &guest("node")).unwrap();
    poll("three ordered pods", DEADLINE, || {
        (count("ordered") == 3).then_some(())
    })
    .unwrap_or_else(|e| panic!("{e}\n{}", s.kubectl_ok(&["get", "pods"])));

    // An explicit RollingUpdate without rollingUpdate (as many charts write it) has no
    // partition, as in kube: rollout status waits for the revisions instead.
    s.kubectl_ok(&[
        "patch",
        "statefulset",
        "ordered",
        "--type=json",
        "-p",
        r#"[{"op":"remove","path":"/spec/updateStrategy/rollingUpdate"}]"#,
    ]);
    let st = s.kubectl_json(&["get", "statefulset", "ordered"]);
    assert_eq!(
        st["spec"]["updateStrategy"],
        serde_json::json!({"type": "RollingUpdate"})
    );
    let status = s.kubectl_ok(&["rollout", "status", "statefulset/ordered", "--timeout=90s"]);
    assert!(
        status.contains("statefulset rolling update complete 3 pods at revision ordered-"),
        "{status}"
    );

    // whenScaled: Delete: a scaled-down Pod's claim goes with it.
    s.kubectl_ok(&["scale", "statefulset", "parallel", "--replicas=2"]);
    poll("www-parallel-2 gone", DEADLINE, || {
        let claims = s.kubectl_json(&["get", "pvc"]);
        let names: Vec<&str> = claims["items"]
            .as_array()?
            .iter()
            .filter_map(|c| c["metadata"]["name"].as_str())
            .collect();
        (!names.contains(&"www-parallel-2") && names.contains(&"www-parallel-1")).then_some(())
    })
    .unwrap_or_else(|e| panic!("{e}\n{}", s.kubectl_ok(&["get", "pvc,pods"])));

    // Deleting the set deletes its claims through the garbage collector.
    s.kubectl_ok(&["delete", "statefulset", "parallel"]);
    poll("the parallel claims gone", DEADLINE, || {
        let claims = s.kubectl_json(&["get", "pvc"]);
        let left = claims["items"]
            .as_array()?
            .iter()
            .filter(|c| {
                c["metadata"]["name"]
                    .as_str()
                    .is_some_and(|n| n.contains("parallel"))
            })
            .count();
        (left == 0).then_some(())
    })
    .unwrap_or_else(|e| panic!("{e}\n{}", s.kubectl_ok(&["get", "pvc", "-o", "yaml"])));
}
