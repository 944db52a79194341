//! Persistent volumes end to end, with the real kubectl and real guests: the `persistentvolume`
//! binder and the `hostpath-provisioner` (Rust) as kube's PV controller and an external
//! provisioner, the fake kubelet (`node`, C) as the scheduler's VolumeBinding plugin, and the
//! host's own storage admission (DefaultStorageClass, StorageObjectInUseProtection) and
//! protection controllers.

use std::time::Duration;

use serde_json::{json, Value};
use turtles_tests::{guest, poll, Server};

/// A cold compile of the components (in parallel with other tests on 2 cores): bounds a hang.
const LOAD_DEADLINE: Duration = Duration::from_secs(600);
const DEADLINE: Duration = Duration::from_secs(90);

const MANIFEST: &str = include_str!("../../guest-examples/manifests/web.yaml");

fn load(s: &Server, names: &[&str]) {
    for name in names {
        s.drop_controller(name, &guest(name)).unwrap();
    }
    s.wait_controllers_running(names, LOAD_DEADLINE).unwrap();
}

fn get(s: &Server, what: &str, name: &str) -> Option<Value> {
    let out = s.kubectl(&["get", what, name, "-o", "json"]);
    out.status
        .success()
        .then(|| serde_json::from_slice(&out.stdout).unwrap())
}

fn phase(v: &Value) -> &str {
    v["status"]["phase"].as_str().unwrap_or("")
}

fn wait_phase(s: &Server, what: &str, name: &str, want: &str) -> Value {
    poll(&format!("{what} {name} {want}"), DEADLINE, || {
        get(s, what, name).filter(|v| phase(v) == want)
    })
    .unwrap_or_else(|e| {
        eprintln!("{}", s.log());
        panic!(
            "{e}\n{}\n{}",
            s.kubectl_ok(&["describe", what, name]),
            s.kubectl_ok(&["get", "pods,pvc,pv,storageclass", "-o", "yaml"]),
        )
    })
}

fn wait_gone(s: &Server, what: &str, name: &str) {
    poll(&format!("{what} {name} gone"), DEADLINE, || {
        get(s, what, name).is_none().then_some(())
    })
    .unwrap_or_else(|e| panic!("{e}\n{}", s.kubectl_ok(&["get", what, "-o", "yaml"])));
}

fn pod_message(s: &Server, name: &str) -> String {
    pod_message_in(s, "default", name)
}

fn claim_yaml(name: &str, class: Option<&str>, size: &str) -> String {
    let class = class.map_or(String::new(), |c| format!("  storageClassName: \"{c}\"\n"));
    format!(
        "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {{name: {name}}}\nspec:\n{class}  accessModes: [ReadWriteOnce]\n  resources: {{requests: {{storage: {size}}}}}\n"
    )
}

fn pod_yaml(name: &str, claim: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Pod\nmetadata: {{name: {name}}}\nspec:\n  terminationGracePeriodSeconds: 1\n  containers: [{{name: c, image: busybox, volumeMounts: [{{name: data, mountPath: /data}}]}}]\n  volumes: [{{name: data, persistentVolumeClaim: {{claimName: {claim}}}}}]\n"
    )
}

#[test]
fn a_stateful_sets_claims_are_provisioned_bound_protected_and_reclaimed() {
    let s = Server::start_with_controllers(&[]).unwrap();
    load(
        &s,
        &[
            "persistentvolume",
            "hostpath-provisioner",
            "node",
            "statefulset",
        ],
    );
    // The provisioner made kind's default class.
    let class = poll("the default StorageClass", DEADLINE, || {
        get(&s, "storageclass", "standard")
    })
    .unwrap();
    assert_eq!(class["provisioner"], "turtles.dev/host-path");
    assert_eq!(class["volumeBindingMode"], "WaitForFirstConsumer");
    assert!(s
        .kubectl_ok(&["get", "storageclass"])
        .contains("standard (default)"));

    s.kubectl_apply(MANIFEST);
    let status = s.kubectl_ok(&["rollout", "status", "statefulset/web", "--timeout=120s"]);
    assert!(status.contains("3 new pods have been updated"), "{status}");
    for n in 0..3 {
        let name = format!("www-web-{n}");
        let claim = wait_phase(&s, "pvc", &name, "Bound");
        // The default class from admission, the protection finalizer, the scheduler's node.
        assert_eq!(claim["spec"]["storageClassName"], "standard", "{claim}");
        assert_eq!(
            claim["metadata"]["finalizers"],
            json!(["kubernetes.io/pvc-protection"])
        );
        let ann = &claim["metadata"]["annotations"];
        assert_eq!(ann["volume.kubernetes.io/selected-node"], "turtle-node-1");
        assert_eq!(
            ann["volume.kubernetes.io/storage-provisioner"],
            "turtles.dev/host-path"
        );
        assert_eq!(ann["pv.kubernetes.io/bind-completed"], "yes");
        assert_eq!(ann["pv.kubernetes.io/bound-by-controller"], "yes");
        assert_eq!(claim["status"]["capacity"]["storage"], "1Gi");
        assert_eq!(claim["status"]["accessModes"], json!(["ReadWriteOnce"]));
        // The volume: made for this claim, pinned to the node, Bound.
        let pv_name = format!("pvc-{}", claim["metadata"]["uid"].as_str().unwrap());
        assert_eq!(claim["spec"]["volumeName"], pv_name.as_str());
        let pv = wait_phase(&s, "pv", &pv_name, "Bound");
        assert_eq!(pv["spec"]["claimRef"]["name"], name.as_str());
        assert_eq!(pv["spec"]["claimRef"]["uid"], claim["metadata"]["uid"]);
        assert_eq!(pv["spec"]["persistentVolumeReclaimPolicy"], "Delete");
        assert_eq!(
            pv["metadata"]["annotations"]["pv.kubernetes.io/provisioned-by"],
            "turtles.dev/host-path"
        );
        // Pre-bound by its provisioner: not marked as bound by the controller (kube's rule).
        assert!(pv["metadata"]["annotations"]
            .get("pv.kubernetes.io/bound-by-controller")
            .is_none());
        assert_eq!(
            pv["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"][0]["matchExpressions"][0]
                ["values"],
            json!(["turtle-node-1"])
        );
        assert_eq!(
            pv["metadata"]["finalizers"],
            json!(["kubernetes.io/pv-protection"])
        );
        assert!(pv["status"]["lastPhaseTransitionTime"].is_string(), "{pv}");
    }
    let described = s.kubectl_ok(&["describe", "pvc", "www-web-0"]);
    for text in [
        "ExternalProvisioning",
        "Waiting for a volume to be created either by the external provisioner 'turtles.dev/host-path'",
        "External provisioner is provisioning volume for claim \"default/www-web-0\"",
        "ProvisioningSucceeded",
    ] {
        assert!(described.contains(text), "{text}: {described}");
    }
    let volumes = s.kubectl_ok(&["get", "pv"]);
    assert!(
        volumes.contains("default/www-web-2") && volumes.contains("Bound"),
        "{volumes}"
    );

    // A claim a Pod uses is kept while it runs: www-web-2 (web-2 runs) is deleted first, then a
    // claim nothing uses; once the second is gone, the first is still there, terminating.
    s.kubectl_apply(&claim_yaml("spare", Some(""), "1Gi"));
    s.kubectl_ok(&["delete", "pvc", "www-web-2", "--wait=false"]);
    s.kubectl_ok(&["delete", "pvc", "spare", "--wait=false"]);
    wait_gone(&s, "pvc", "spare");
    let held = get(&s, "pvc", "www-web-2").expect("www-web-2 is kept while web-2 uses it");
    assert!(held["metadata"]["deletionTimestamp"].is_string(), "{held}");
    let pv2 = held["spec"]["volumeName"].as_str().unwrap().to_owned();
    // A new Pod naming it is not scheduled.
    s.kubectl_apply(&pod_yaml("late", "www-web-2"));
    poll("late's scheduling message", DEADLINE, || {
        pod_message(&s, "late")
            .contains("is being deleted")
            .then_some(())
    })
    .unwrap();
    assert_eq!(
        pod_message(&s, "late"),
        "0/1 nodes are available: persistentvolumeclaim \"www-web-2\" is being deleted. preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling."
    );
    s.kubectl_ok(&["delete", "pod", "late", "--wait=false"]);
    // Scaled down, web-2 goes; then its claim, then (Released, policy Delete) its volume.
    s.kubectl_ok(&["scale", "statefulset", "web", "--replicas=2"]);
    wait_gone(&s, "pvc", "www-web-2");
    wait_gone(&s, "pv", &pv2);

    // A volume being deleted stays while it is Bound.
    let pv0 = get(&s, "pvc", "www-web-0").unwrap()["spec"]["volumeName"]
        .as_str()
        .unwrap()
        .to_owned();
    s.kubectl_ok(&["delete", "pv", &pv0, "--wait=false"]);
    let pv = get(&s, "pv", &pv0).expect("a Bound volume is kept");
    assert!(pv["metadata"]["deletionTimestamp"].is_string());
    assert_eq!(phase(&pv), "Bound");
}

#[test]
fn claims_bind_static_volumes_and_wait_for_a_default_class_made_later() {
    // No provisioner yet: the order users follow when they install one after their app.
    let s = Server::start_with_controllers(&[]).unwrap();
    load(&s, &["persistentvolume", "node"]);

    // A static volume (no class) and a claim of no class: bound at once, the smallest that fits.
    for (name, size) in [("big", "50Gi"), ("small", "5Gi")] {
        s.kubectl_apply(
            &format!("apiVersion: v1\nkind: PersistentVolume\nmetadata: {{name: {name}}}\nspec:\n  capacity: {{storage: {size}}}\n  accessModes: [ReadWriteOnce]\n  storageClassName: \"\"\n  hostPath: {{path: /tmp/{name}}}\n"),
        );
    }
    s.kubectl_apply(&claim_yaml("static", Some(""), "1Gi"));
    let claim = wait_phase(&s, "pvc", "static", "Bound");
    assert_eq!(claim["spec"]["volumeName"], "small");
    assert_eq!(claim["status"]["capacity"]["storage"], "5Gi");
    let pv = wait_phase(&s, "pv", "small", "Bound");
    assert_eq!(
        pv["metadata"]["annotations"]["pv.kubernetes.io/bound-by-controller"],
        "yes"
    );
    assert_eq!(pv["spec"]["persistentVolumeReclaimPolicy"], "Retain");
    assert_eq!(phase(&get(&s, "pv", "big").unwrap()), "Available");
    s.kubectl_apply(&pod_yaml("user", "static"));
    wait_phase(&s, "pod", "user", "Running");
    // Released when its claim goes, and kept (Retain).
    s.kubectl_ok(&["delete", "pod", "user"]);
    s.kubectl_ok(&["delete", "pvc", "static"]);
    let pv = wait_phase(&s, "pv", "small", "Released");
    assert_eq!(pv["spec"]["claimRef"]["name"], "static");

    // A claim naming no class, while there is no default class: it may bind only a volume of
    // no class (as kube), and none is that large.
    s.kubectl_apply(&claim_yaml("later", None, "100Gi"));
    let claim = get(&s, "pvc", "later").unwrap();
    assert!(claim["spec"].get("storageClassName").is_none(), "{claim}");
    s.kubectl_apply(&pod_yaml("waiter", "later"));
    poll("the waiter unscheduled", DEADLINE, || {
        (pod_message(&s, "waiter")
            == "0/1 nodes are available: pod has unbound immediate PersistentVolumeClaims. preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling.")
            .then_some(())
    })
    .unwrap_or_else(|e| panic!("{e}: {}", pod_message(&s, "waiter")));
    poll("FailedBinding", DEADLINE, || {
        s.kubectl_ok(&["describe", "pvc", "later"])
            .contains("no persistent volumes available for this claim and no storage class is set")
            .then_some(())
    })
    .unwrap();
    // A claim of a class that does not exist.
    s.kubectl_apply(&claim_yaml("nope", Some("nope"), "1Gi"));
    poll("ProvisioningFailed", DEADLINE, || {
        s.kubectl_ok(&["describe", "pvc", "nope"])
            .contains("storageclass.storage.k8s.io \"nope\" not found")
            .then_some(())
    })
    .unwrap();

    // The provisioner arrives with its default class: the claim gets it (kube's retroactive
    // default), a volume is made on the waiter's node, and the waiter runs.
    load(&s, &["hostpath-provisioner"]);
    let claim = wait_phase(&s, "pvc", "later", "Bound");
    assert_eq!(claim["spec"]["storageClassName"], "standard");
    wait_phase(&s, "pod", "waiter", "Running");
    // The class made for a newcomer is not made again over an administrator's choice: a claim
    // created now gets the default class from admission.
    s.kubectl_apply(&claim_yaml("fresh", None, "1Gi"));
    assert_eq!(
        get(&s, "pvc", "fresh").unwrap()["spec"]["storageClassName"],
        "standard"
    );
}

#[test]
fn ephemeral_volumes_get_claims_within_the_namespace_quota() {
    let s = Server::start_with_controllers(&[]).unwrap();
    load(&s, &["persistentvolume", "hostpath-provisioner", "node"]);
    poll("the default StorageClass", DEADLINE, || {
        get(&s, "storageclass", "standard")
    })
    .unwrap();
    s.kubectl_ok(&["create", "namespace", "q"]);
    s.kubectl_ok(&[
        "create",
        "quota",
        "claims",
        "-n",
        "q",
        "--hard=persistentvolumeclaims=1",
    ]);
    let template = "{ephemeral: {volumeClaimTemplate: {metadata: {labels: {team: a}}, spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}}}}";
    let pod = format!(
        "apiVersion: v1\nkind: Pod\nmetadata: {{name: two, namespace: q}}\nspec:\n  terminationGracePeriodSeconds: 1\n  containers: [{{name: c, image: busybox}}]\n  volumes:\n  - {{name: a, {t}\n  - {{name: b, {t}\n",
        t = &template[1..]
    );
    s.kubectl_apply(&pod);
    // The controller makes the claims as a client of the API: the quota lets one through.
    let waiting = "0/1 nodes are available: waiting for ephemeral volume controller to create the persistentvolumeclaim \"two-b\". preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling.";
    poll("two waiting for two-b", DEADLINE, || {
        let msg = pod_message_in(&s, "q", "two");
        (msg == waiting).then_some(())
    })
    .unwrap_or_else(|e| panic!("{e}: {}", pod_message_in(&s, "q", "two")));
    let a = s.kubectl_json(&["get", "pvc", "two-a", "-n", "q"]);
    assert_eq!(a["metadata"]["labels"]["team"], "a");
    assert_eq!(a["metadata"]["ownerReferences"][0]["kind"], "Pod");
    assert_eq!(a["metadata"]["ownerReferences"][0]["name"], "two");
    assert!(!s
        .kubectl(&["get", "pvc", "two-b", "-n", "q"])
        .status
        .success());
    poll("FailedBinding on the Pod", DEADLINE, || {
        s.kubectl_ok(&["describe", "pod", "two", "-n", "q"])
            .contains("ephemeral volume b: create PVC two-b:")
            .then_some(())
    })
    .unwrap_or_else(|e| {
        panic!(
            "{e}\n{}",
            s.kubectl_ok(&["describe", "pod", "two", "-n", "q"])
        )
    });
    // More room: the second claim, both volumes, and the Pod runs.
    s.kubectl_ok(&[
        "patch",
        "quota",
        "claims",
        "-n",
        "q",
        "--type=merge",
        "-p",
        r#"{"spec":{"hard":{"persistentvolumeclaims":"2"}}}"#,
    ]);
    poll("two Running", DEADLINE, || {
        let out = s.kubectl(&["get", "pod", "two", "-n", "q", "-o", "json"]);
        let p: Value = serde_json::from_slice(&out.stdout).ok()?;
        (phase(&p) == "Running").then_some(())
    })
    .unwrap_or_else(|e| {
        panic!(
            "{e}\n{}",
            s.kubectl_ok(&["describe", "pod", "two", "-n", "q"])
        )
    });
    let volumes: Vec<String> = ["two-a", "two-b"]
        .iter()
        .map(|c| {
            let claim = s.kubectl_json(&["get", "pvc", c, "-n", "q"]);
            assert_eq!(phase(&claim), "Bound", "{claim}");
            claim["spec"]["volumeName"].as_str().unwrap().to_owned()
        })
        .collect();
    // The Pod goes: its claims with it (owner references), then their volumes.
    s.kubectl_ok(&["delete", "pod", "two", "-n", "q"]);
    for v in &volumes {
        wait_gone(&s, "pv", v);
    }
    let left = s.kubectl_json(&["get", "pvc", "-n", "q"]);
    assert_eq!(left["items"], json!([]), "{left}");
}

fn pod_message_in(s: &Server, ns: &str, name: &str) -> String {
    let out = s.kubectl(&["get", "pod", name, "-n", ns, "-o", "json"]);
    serde_json::from_slice::<Value>(&out.stdout)
        .ok()
        .and_then(|p| {
            p["status"]["conditions"]
                .as_array()?
                .iter()
                .find(|c| c["type"] == "PodScheduled")?["message"]
                .as_str()
                .map(str::to_owned)
        })
        .unwrap_or_default()
}

#[test]
fn local_volumes_are_bound_on_the_node_the_scheduler_picks() {
    let s = Server::start_with_controllers(&[]).unwrap();
    load(&s, &["persistentvolume", "node"]);
    // kube's local-storage pattern: a class with no provisioner that waits for the first
    // consumer, and volumes an administrator made on nodes.
    s.kubectl_apply(
        "apiVersion: storage.k8s.io/v1\nkind: StorageClass\nmetadata: {name: local}\nprovisioner: kubernetes.io/no-provisioner\nvolumeBindingMode: WaitForFirstConsumer\n",
    );
    for (name, size, node) in [
        ("local-big", "100Gi", "turtle-node-1"),
        ("local-small", "10Gi", "turtle-node-1"),
        ("local-elsewhere", "10Gi", "node-2"),
    ] {
        s.kubectl_apply(
            &format!("apiVersion: v1\nkind: PersistentVolume\nmetadata: {{name: {name}}}\nspec:\n  capacity: {{storage: {size}}}\n  accessModes: [ReadWriteOnce]\n  storageClassName: local\n  local: {{path: /mnt/disks/{name}}}\n  nodeAffinity: {{required: {{nodeSelectorTerms: [{{matchExpressions: [{{key: kubernetes.io/hostname, operator: In, values: [{node}]}}]}}]}}}}\n"),
        );
    }
    s.kubectl_apply(&claim_yaml("data", Some("local"), "5Gi"));
    // No consumer yet: the claim waits, and says so.
    poll("WaitForFirstConsumer", DEADLINE, || {
        s.kubectl_ok(&["describe", "pvc", "data"])
            .contains("waiting for first consumer to be created before binding")
            .then_some(())
    })
    .unwrap();
    assert_eq!(phase(&get(&s, "pvc", "data").unwrap()), "Pending");
    // The first Pod: the scheduler picks the smallest volume on its node, the binder binds.
    s.kubectl_apply(&pod_yaml("db", "data"));
    wait_phase(&s, "pod", "db", "Running");
    let claim = wait_phase(&s, "pvc", "data", "Bound");
    assert_eq!(claim["spec"]["volumeName"], "local-small", "{claim}");
    let pv = wait_phase(&s, "pv", "local-small", "Bound");
    assert_eq!(
        pv["metadata"]["annotations"]["pv.kubernetes.io/bound-by-controller"],
        "yes"
    );
    assert_eq!(phase(&get(&s, "pv", "local-big").unwrap()), "Available");
    // A claim no volume here fits keeps its Pod out, with the scheduler's reason.
    s.kubectl_apply(&claim_yaml("huge", Some("local"), "500Gi"));
    s.kubectl_apply(&pod_yaml("big-db", "huge"));
    poll("big-db unschedulable", DEADLINE, || {
        (pod_message(&s, "big-db")
            == "0/1 nodes are available: 1 node(s) didn't find available persistent volumes to bind. preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling.")
            .then_some(())
    })
    .unwrap_or_else(|e| panic!("{e}: {}", pod_message(&s, "big-db")));
    // An administrator adds a volume that fits: the waiting Pod gets it.
    s.kubectl_apply(
        "apiVersion: v1\nkind: PersistentVolume\nmetadata: {name: local-huge}\nspec:\n  capacity: {storage: 1Ti}\n  accessModes: [ReadWriteOnce]\n  storageClassName: local\n  local: {path: /mnt/disks/huge}\n  nodeAffinity: {required: {nodeSelectorTerms: [{matchExpressions: [{key: kubernetes.io/hostname, operator: In, values: [turtle-node-1]}]}]}}\n",
    );
    wait_phase(&s, "pod", "big-db", "Running");
    assert_eq!(
        get(&s, "pvc", "huge").unwrap()["spec"]["volumeName"],
        "local-huge"
    );
}

#[test]
fn a_claim_grows_when_its_class_allows_expansion() {
    let s = Server::start_with_controllers(&[]).unwrap();
    load(&s, &["persistentvolume", "hostpath-provisioner"]);
    for (name, expand) in [("expandable", true), ("rigid", false)] {
        s.kubectl_apply(
            &format!("apiVersion: storage.k8s.io/v1\nkind: StorageClass\nmetadata: {{name: {name}}}\nprovisioner: turtles.dev/host-path\nallowVolumeExpansion: {expand}\n"),
        );
    }
    // Classes that bind at once: provisioned with no Pod (and no node).
    s.kubectl_apply(&claim_yaml("grow", Some("expandable"), "1Gi"));
    s.kubectl_apply(&claim_yaml("fixed", Some("rigid"), "1Gi"));
    let claim = wait_phase(&s, "pvc", "grow", "Bound");
    let pv = claim["spec"]["volumeName"].as_str().unwrap().to_owned();
    wait_phase(&s, "pvc", "fixed", "Bound");

    // Grown: the volume, then the claim's capacity, as kube's external resizer writes them.
    s.kubectl_ok(&[
        "patch",
        "pvc",
        "grow",
        "--type=merge",
        "-p",
        r#"{"spec":{"resources":{"requests":{"storage":"2Gi"}}}}"#,
    ]);
    let grown = poll("grow at 2Gi", DEADLINE, || {
        let c = get(&s, "pvc", "grow")?;
        (c["status"]["capacity"]["storage"] == "2Gi").then_some(c)
    })
    .unwrap_or_else(|e| panic!("{e}\n{}", s.kubectl_ok(&["describe", "pvc", "grow"])));
    assert_eq!(
        grown["status"]["allocatedResources"]["storage"], "2Gi",
        "{grown}"
    );
    assert!(
        grown["status"].get("allocatedResourceStatuses").is_none(),
        "{grown}"
    );
    assert!(grown["status"].get("conditions").is_none(), "{grown}");
    assert_eq!(
        grown["metadata"]["annotations"]["volume.kubernetes.io/node-expansion-not-required"],
        "true"
    );
    assert_eq!(
        get(&s, "pv", &pv).unwrap()["spec"]["capacity"]["storage"],
        "2Gi"
    );
    let described = s.kubectl_ok(&["describe", "pvc", "grow"]);
    for text in [
        format!("External resizer is resizing volume {pv}"),
        "Resize volume succeeded".to_owned(),
    ] {
        assert!(described.contains(&text), "{text}: {described}");
    }

    // A class that does not allow it: refused, as kube-apiserver refuses it.
    let out = s.kubectl(&[
        "patch",
        "pvc",
        "fixed",
        "--type=merge",
        "-p",
        r#"{"spec":{"resources":{"requests":{"storage":"2Gi"}}}}"#,
    ]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("persistentvolumeclaims \"fixed\" is forbidden: only dynamically provisioned pvc can be resized and the storageclass that provisions the pvc must support resize"),
        "{err}"
    );
}
