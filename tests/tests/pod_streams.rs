//! A Pod's `log`, `exec`, `attach` and `portforward` with the real kubectl: kube's checks and
//! messages, an empty log for a container that runs (turtles' kubelet runs no process), a
//! followed log held open while the container runs and ended when it stops, and exec refused
//! with a message saying why.

use std::io::BufRead;
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::Value;
use turtles_tests::{guest, poll, Server};

const LOAD_DEADLINE: Duration = Duration::from_secs(600);
const DEADLINE: Duration = Duration::from_secs(90);
const PODS: &str = "/api/v1/namespaces/default/pods";

fn phase(s: &Server, name: &str) -> Value {
    s.kubectl_json(&["get", "pod", name])["status"]["phase"].clone()
}

fn stderr_of(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn pod_logs_exec_and_port_forward_answer_as_kube_does() {
    let s = Server::start_with_controllers(&[]).unwrap();
    s.drop_controller("node", &guest("node")).unwrap();
    s.wait_controllers_running(&["node"], LOAD_DEADLINE)
        .unwrap();

    // Discovery lists the kubelet's subresources as kube does.
    let core = s.http().get("/api/v1").json();
    for (name, kind) in [
        ("pods/log", "Pod"),
        ("pods/exec", "PodExecOptions"),
        ("pods/attach", "PodAttachOptions"),
        ("pods/portforward", "PodPortForwardOptions"),
    ] {
        assert!(
            core["resources"]
                .as_array()
                .unwrap()
                .iter()
                .any(|r| r["name"] == name && r["kind"] == kind),
            "{name} in {core}"
        );
    }

    s.kubectl_apply(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: two}\nspec:\n  terminationGracePeriodSeconds: 1\n  initContainers: [{name: setup, image: busybox}]\n  containers: [{name: app, image: nginx}, {name: sidecar, image: busybox}]\n",
    );
    poll("two Running", DEADLINE, || {
        (phase(&s, "two") == "Running").then_some(())
    })
    .unwrap();

    // kubectl picks the first container and says so; the log is empty: nothing ran.
    let out = s.kubectl(&["logs", "two"]);
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert!(out.stdout.is_empty());
    assert!(
        stderr_of(&out).contains("Defaulted container \"app\" out of: app, sidecar, setup (init)"),
        "{}",
        stderr_of(&out)
    );
    assert!(s.kubectl(&["logs", "two", "-c", "setup"]).status.success());
    let r = s.http().get(&format!("{PODS}/two/log?container=sidecar"));
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.headers["content-type"], "text/plain");

    // The API server's own checks, with kube's codes and messages.
    let r = s.http().get(&format!("{PODS}/two/log"));
    assert_eq!(r.status, 400, "{}", r.text());
    assert_eq!(
        r.json()["message"],
        "a container name must be specified for pod two, choose one of: [setup app sidecar]"
    );
    let r = s.http().get(&format!("{PODS}/two/log?container=nope"));
    assert_eq!(
        (r.status, r.json()["message"].clone()),
        (400, "container nope is not valid for pod two".into())
    );
    let r = s
        .http()
        .get(&format!("{PODS}/two/log?container=app&tailLines=-1"));
    assert_eq!(r.status, 422, "{}", r.text());
    assert_eq!(
        r.json()["message"],
        "PodLogOptions \"two\" is invalid: tailLines: Invalid value: -1: must be greater than or equal to 0"
    );
    let r = s.http().get(&format!("{PODS}/missing/log"));
    assert_eq!(
        (r.status, r.json()["message"].clone()),
        (404, "pods \"missing\" not found".into())
    );
    let out = s.kubectl(&["logs", "two", "-c", "app", "--previous"]);
    assert!(
        stderr_of(&out).contains(
            "Error from server (BadRequest): previous terminated container \"app\" in pod \"two\" not found"
        ),
        "{}",
        stderr_of(&out)
    );

    // A Pod no kubelet has posted: the kubelet's "not available". A Pod on no Node: no content.
    let created = s.http().post_json(
        "/api/v1/nodes",
        &serde_json::json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "quiet"}}),
    );
    assert_eq!(created.status, 201, "{}", created.text());
    s.kubectl_apply(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: elsewhere}\nspec:\n  nodeName: quiet\n  containers: [{name: c, image: busybox}]\n",
    );
    let out = s.kubectl(&["logs", "elsewhere"]);
    assert!(
        stderr_of(&out).contains(
            "Error from server (BadRequest): container \"c\" in pod \"elsewhere\" is not available"
        ),
        "{}",
        stderr_of(&out)
    );
    // A Pod bound to a Node that does not exist: kube's 404 for the Node.
    s.kubectl_apply(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: ghostly}\nspec:\n  nodeName: ghost\n  containers: [{name: c, image: busybox}]\n",
    );
    let out = s.kubectl(&["logs", "ghostly"]);
    assert!(
        stderr_of(&out).contains("Error from server (NotFound): nodes \"ghost\" not found"),
        "{}",
        stderr_of(&out)
    );
    s.kubectl_apply(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: nowhere}\nspec:\n  nodeSelector: {no: such-node}\n  containers: [{name: c, image: busybox}]\n",
    );
    let r = s.http().get(&format!("{PODS}/nowhere/log"));
    assert_eq!(r.status, 204, "{}", r.text());
    let out = s.kubectl(&["logs", "nowhere"]);
    assert!(
        out.status.success() && out.stdout.is_empty(),
        "{}",
        stderr_of(&out)
    );

    // exec, attach, port-forward: kube's checks, then the kubelet says there is no process.
    let out = s.kubectl(&["exec", "two", "-c", "app", "--", "ls"]);
    assert!(!out.status.success());
    assert!(
        stderr_of(&out).contains("unable to exec in container \"app\" in pod \"two\": turtles' kubelet simulates containers and runs no process"),
        "{}",
        stderr_of(&out)
    );
    let out = s.kubectl(&["exec", "nowhere", "--", "ls"]);
    assert!(
        stderr_of(&out).contains("pod nowhere does not have a host assigned"),
        "{}",
        stderr_of(&out)
    );
    let out = s.kubectl(&["exec", "two", "-c", "nope", "--", "ls"]);
    assert!(
        stderr_of(&out).contains("container nope is not valid for pod two"),
        "{}",
        stderr_of(&out)
    );
    let r = s.http().request(
        "POST",
        &format!("{PODS}/two/exec?container=app&command=ls&stdout=true"),
        None,
        None,
    );
    assert_eq!(
        (r.status, r.json()["message"].clone()),
        (400, "Upgrade request required".into())
    );
    let out = s.kubectl(&["port-forward", "pod/two", "18080:80"]);
    assert!(!out.status.success());
    assert!(
        stderr_of(&out).contains("runs no process to connect to"),
        "{}",
        stderr_of(&out)
    );

    // Followed, the log stays open while the container runs and ends when it stops.
    let mut follow = Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(&s.kubeconfig)
        .args(["logs", "-f", "two", "-c", "app", "-v=6"])
        .env("KUBECACHEDIR", s.data_dir.join("kubecache"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let stderr = follow.stderr.take().unwrap();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stderr).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    poll("the followed log answered", DEADLINE, || {
        rx.try_iter()
            .any(|l| l.contains("/pods/two/log?") && l.contains("200 OK"))
            .then_some(())
    })
    .unwrap();
    // Some round trips later it is still open: the container still runs.
    for _ in 0..3 {
        assert_eq!(phase(&s, "two"), "Running");
    }
    assert!(
        follow.try_wait().unwrap().is_none(),
        "the follow ended early"
    );
    s.kubectl_ok(&["delete", "pod", "two", "--wait=false"]);
    let status = poll("the follow ended with the container", DEADLINE, || {
        follow.try_wait().unwrap()
    })
    .unwrap();
    assert!(status.success(), "{status:?}");

    // A finished container's log, followed, ends at once.
    s.kubectl_apply(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: done}\nspec:\n  restartPolicy: Never\n  containers: [{name: c, image: busybox}]\n",
    );
    poll("done Succeeded", DEADLINE, || {
        (phase(&s, "done") == "Succeeded").then_some(())
    })
    .unwrap();
    let out = s.kubectl(&["logs", "-f", "done"]);
    assert!(out.status.success(), "{}", stderr_of(&out));
    let out = s.kubectl(&["exec", "done", "--", "ls"]);
    assert!(
        stderr_of(&out).contains("cannot exec into a container in a completed pod"),
        "{}",
        stderr_of(&out)
    );
}
