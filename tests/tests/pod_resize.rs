//! In-place Pod resize with the real kubectl (`kubectl patch --subresource resize`): only the
//! containers' cpu and memory change, with kube 1.34's rules and messages, the generation moves,
//! and the fake kubelet reports the new resources and the observed generation.

use std::time::Duration;

use serde_json::Value;
use turtles_tests::{guest, poll, Server};

const LOAD_DEADLINE: Duration = Duration::from_secs(600);
const DEADLINE: Duration = Duration::from_secs(60);

const POD: &str = r#"
apiVersion: v1
kind: Pod
metadata: {name: app}
spec:
  containers:
  - name: c
    image: nginx
    resources:
      requests: {cpu: 100m, memory: 64Mi}
      limits: {cpu: 200m, memory: 128Mi}
"#;

fn resize(s: &Server, patch: &str) -> std::process::Output {
    s.kubectl(&[
        "patch",
        "pod",
        "app",
        "--subresource",
        "resize",
        "--patch",
        patch,
    ])
}

fn stderr_of(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn a_pod_is_resized_in_place_with_kubes_rules() {
    let s = Server::start_with_controllers(&[]).unwrap();
    s.drop_controller("node", &guest("node")).unwrap();
    s.wait_controllers_running(&["node"], LOAD_DEADLINE)
        .unwrap();
    // A quota on cpu requests: the Pod's 100m fits, and a resize is charged for what it adds.
    s.kubectl_apply(
        "apiVersion: v1\nkind: ResourceQuota\nmetadata: {name: cpu}\nspec: {hard: {requests.cpu: 160m}}\n",
    );
    poll("the quota's status", DEADLINE, || {
        s.kubectl_json(&["get", "resourcequota", "cpu"])["status"]["hard"]
            .is_object()
            .then_some(())
    })
    .unwrap();
    // A LimitRange: cpu limits up to 300m.
    s.kubectl_apply(
        "apiVersion: v1\nkind: LimitRange\nmetadata: {name: cap}\nspec: {limits: [{type: Container, max: {cpu: 300m}}]}\n",
    );
    s.kubectl_apply(POD);
    let pod = poll("app Running", DEADLINE, || {
        let pod = s.kubectl_json(&["get", "pod", "app"]);
        (pod["status"]["phase"] == "Running").then_some(pod)
    })
    .unwrap();
    // The kubelet reports what the containers run with, as kube 1.34's does.
    let status = &pod["status"]["containerStatuses"][0];
    assert_eq!(status["resources"]["requests"]["cpu"], "100m", "{pod}");
    assert_eq!(status["allocatedResources"]["memory"], "64Mi", "{pod}");
    let generation = pod["metadata"]["generation"].as_i64().unwrap();

    // Discovery lists the subresource.
    let core = s.http().get("/api/v1").json();
    assert!(core["resources"]
        .as_array()
        .unwrap()
        .iter()
        .any(|r| r["name"] == "pods/resize" && r["kind"] == "Pod"));

    // A plain update may not change resources.
    let out = s.kubectl(&[
        "patch",
        "pod",
        "app",
        "--patch",
        r#"{"spec":{"containers":[{"name":"c","resources":{"requests":{"cpu":"150m"}}}]}}"#,
    ]);
    assert!(
        stderr_of(&out).contains("pod updates may not change fields other than"),
        "{}",
        stderr_of(&out)
    );

    // kube's rules for a resize.
    for (patch, want) in [
        (
            r#"{"spec":{"containers":[{"name":"c","resources":{"limits":{"memory":"100Mi"}}}]}}"#,
            "spec.containers[0].resources.limits[memory]: Forbidden: memory limits cannot be decreased unless resizePolicy is RestartContainer",
        ),
        (
            r#"{"spec":{"containers":[{"name":"c","resources":{"requests":{"ephemeral-storage":"1Gi"}}}]}}"#,
            "spec: Forbidden: only cpu and memory resources are mutable",
        ),
        (
            r#"{"spec":{"containers":[{"name":"c","resources":{"limits":{"cpu":null}}}]}}"#,
            "spec.containers[0].resources.limits: Forbidden: resource limits cannot be removed",
        ),
        (
            r#"{"spec":{"containers":[{"name":"c","resources":{"limits":{"cpu":"400m"}}}]}}"#,
            "maximum cpu usage per Container is 300m, but limit is 400m",
        ),
        (
            r#"{"spec":{"containers":[{"name":"c","resources":{"requests":{"cpu":"200m"}}}]}}"#,
            "exceeded quota: cpu, requested: requests.cpu=100m, used: requests.cpu=100m, limited: requests.cpu=160m",
        ),
        (
            r#"{"spec":{"containers":[{"name":"c","resources":{"requests":{"cpu":"200m","memory":"128Mi"}}}]}}"#,
            "Pod QOS Class may not change as a result of resizing",
        ),
    ] {
        let out = resize(&s, patch);
        assert!(!out.status.success(), "{patch}");
        assert!(stderr_of(&out).contains(want), "{}", stderr_of(&out));
    }

    // Accepted: the cpu request grows; anything else in the request (an image) is dropped.
    let out = resize(
        &s,
        r#"{"spec":{"containers":[{"name":"c","image":"httpd","resources":{"requests":{"cpu":"150m"}}}]}}"#,
    );
    assert!(out.status.success(), "{}", stderr_of(&out));
    let pod = poll("the kubelet applies the resize", DEADLINE, || {
        let pod = s.kubectl_json(&["get", "pod", "app"]);
        (pod["status"]["containerStatuses"][0]["resources"]["requests"]["cpu"] == "150m")
            .then_some(pod)
    })
    .unwrap();
    let c = &pod["spec"]["containers"][0];
    assert_eq!(c["resources"]["requests"]["cpu"], "150m");
    assert_eq!(c["image"], "nginx", "only resources change through resize");
    assert_eq!(pod["metadata"]["generation"], generation + 1);
    assert_eq!(
        pod["status"]["observedGeneration"],
        Value::from(generation + 1)
    );
    assert_eq!(
        pod["status"]["containerStatuses"][0]["allocatedResources"]["cpu"],
        "150m"
    );

    // Not part of edit (as in kube): a namespace editor may not resize.
    let (kubeconfig, _) = s.mint("ed", &[]).unwrap();
    s.kubectl_ok(&[
        "create",
        "rolebinding",
        "ed-edit",
        "--clusterrole=edit",
        "--user=ed",
    ]);
    let out = s.kubectl_with(
        &kubeconfig,
        &[
            "patch",
            "pod",
            "app",
            "--subresource",
            "resize",
            "--patch",
            r#"{"spec":{"containers":[{"name":"c","resources":{"requests":{"cpu":"120m"}}}]}}"#,
        ],
    );
    assert!(
        // kubectl reads the subresource first: the GET is refused.
        stderr_of(&out).contains("User \"ed\" cannot get resource \"pods/resize\""),
        "{}",
        stderr_of(&out)
    );
}
