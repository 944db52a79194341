//! Wasm admission policies (`turtles:admission@0.1.0`) with the real binary, the real kubectl and
//! components built from `guest-examples/`: the Rust registry policy denies (and reads its
//! allowed registries from a ConfigMap), the Python defaults policy mutates, the JavaScript owner
//! policy denies with its own code and warns; a policy replaced in the folder takes effect
//! with no request failing during the swap; trapping, looping and memory-hungry policies fail
//! closed or open per their failure policy; `--dry-run=server` runs admission without storing;
//! a removed file takes its policy out of the chain.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use turtles_tests::{guest, poll, Server};

fn stderr(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Wait until the `Controller` object of policy `name` says it is running, and return it.
fn running(s: &Server, name: &str) -> Value {
    poll(
        &format!("policy {name} running"),
        Duration::from_secs(120),
        || {
            let out = s.kubectl(&["get", "controller", name, "-o", "json"]);
            let v: Value = serde_json::from_slice(&out.stdout).ok()?;
            (v["status"]["phase"] == "Running").then_some(v)
        },
    )
    .unwrap_or_else(|e| panic!("{e}\n{}", s.log()))
}

/// Wait until the status of policy `name` satisfies `ok`.
fn status_until(s: &Server, name: &str, ok: impl Fn(&Value) -> bool) {
    let mut last = Value::Null;
    let r = poll(&format!("{name}'s status"), Duration::from_secs(10), || {
        let out = s.kubectl(&["get", "controller", name, "-o", "json"]);
        last = serde_json::from_slice(&out.stdout).ok()?;
        ok(&last["status"]).then_some(())
    });
    if let Err(e) = r {
        panic!("{e}: {last}");
    }
}

fn pod(name: &str, images: &[&str]) -> Value {
    let containers: Vec<Value> = images
        .iter()
        .enumerate()
        .map(|(i, image)| json!({"name": format!("c{i}"), "image": image}))
        .collect();
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"containers": containers},
    })
}

fn create(s: &Server, obj: &Value, extra: &[&str]) -> std::process::Output {
    let mut args = vec!["create", "-f", "-"];
    args.extend_from_slice(extra);
    s.kubectl_stdin(&args, &obj.to_string())
}

fn configmap(name: &str, labels: Value, annotations: Value) -> Value {
    json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": "default", "labels": labels,
                     "annotations": annotations},
        "data": {"k": "v"},
    })
}

#[test]
fn wasm_admission_policies() {
    let s = Server::start_with_controllers(&[]).expect("server starts");
    for name in [
        "registry-policy",
        "py-defaults",
        "js-owner-policy",
        "faulty-policy",
        "faulty-policy-open",
        "label-policy",
    ] {
        s.drop_controller(name, &guest(name)).unwrap();
    }
    for name in [
        "registry-policy",
        "py-defaults",
        "js-owner-policy",
        "faulty-policy",
        "faulty-policy-open",
        "label-policy",
    ] {
        let c = running(&s, name);
        assert_eq!(c["status"]["type"], "AdmissionPolicy", "{c}");
        assert_eq!(c["status"]["wit"], "turtles:admission@0.1.0", "{c}");
    }

    registry_policy(&s);
    python_defaults(&s);
    javascript_owner(&s);
    faults(&s);
    dry_run(&s);
    hot_swap(&s);
    unload(&s);
}

/// A policy in the folder when the host starts is in force from the first request: until its
/// first load is done, the writes admission sees wait (and are refused after 10 s with kube's
/// "not yet ready to handle request"); none gets through without it. The Python policy compiles
/// cold here (seconds), so the first request comes long before it is loaded.
#[test]
fn policies_in_force_from_the_first_request() {
    let bytes = guest("py-defaults");
    let s = Server::start_cold_with_folder(&[("py-defaults", &bytes)], &[]).expect("server starts");
    let deadline = Instant::now() + Duration::from_secs(300);
    loop {
        let out = create(&s, &pod("early", &["registry.k8s.io/pause:3.10"]), &[]);
        if out.status.success() {
            break;
        }
        let err = stderr(&out);
        assert!(
            err.contains("pods \"early\" is forbidden: not yet ready to handle request"),
            "{err}"
        );
        assert!(Instant::now() < deadline, "never loaded: {}", s.log());
    }
    let stored = s.kubectl_json(&["get", "pod", "early", "-n", "default"]);
    assert_eq!(
        stored["metadata"]["labels"]["team"], "unassigned",
        "created without the policy: {stored}"
    );
    let ready = s.http().get("/readyz?verbose");
    assert_eq!(ready.status, 200, "{}", ready.text());
    assert!(
        ready
            .text()
            .contains("[+]wasm-admission-policies-synced ok"),
        "{}",
        ready.text()
    );
}

/// The Rust validating policy: images from allowed registries only, never `:latest`; the
/// allowed registries come from a ConfigMap the policy reads from the host's cache.
fn registry_policy(s: &Server) {
    let out = create(s, &pod("latest", &["nginx:latest"]), &[]);
    assert!(!out.status.success(), "a :latest image was admitted");
    let err = stderr(&out);
    assert!(
        err.contains(
            "pods \"latest\" is forbidden: admission policy \"registry-policy\" denied the request"
        ),
        "{err}"
    );
    assert!(err.contains("nginx:latest"), "{err}");
    assert!(err.contains("docker.io"), "{err}");

    // An allowed registry with a pinned tag is admitted (with a warning: no ConfigMap yet).
    let out = create(s, &pod("ok", &["registry.k8s.io/pause:3.10"]), &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains("Warning:"), "{}", stderr(&out));

    // Allow ghcr.io/acme through the ConfigMap: the next request sees it.
    s.kubectl_ok(&["create", "namespace", "turtles-system"]);
    s.kubectl_ok(&[
        "create",
        "configmap",
        "registry-policy",
        "-n",
        "turtles-system",
        "--from-literal=allowedRegistries=registry.k8s.io,ghcr.io/acme",
    ]);
    let out = create(s, &pod("acme", &["ghcr.io/acme/app:1.2.3"]), &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = create(s, &pod("other", &["ghcr.io/other/app:1.2.3"]), &[]);
    assert!(!out.status.success(), "ghcr.io/other was admitted");

    // Pod templates of workloads are checked too.
    let out = s.kubectl(&[
        "create",
        "deployment",
        "web",
        "--image=nginx",
        "-n",
        "default",
    ]);
    assert!(
        !out.status.success(),
        "a Deployment with nginx was admitted"
    );
    assert!(stderr(&out).contains("registry-policy"), "{}", stderr(&out));

    // The status is refreshed every second.
    status_until(s, "registry-policy", |st| {
        st["calls"].as_u64() >= Some(5) && st["denied"].as_u64() >= Some(3)
    });
    let metrics = s.kubectl_ok(&["get", "--raw", "/metrics"]);
    assert!(
        metrics.contains("controller=\"registry-policy\""),
        "no metrics for the policy"
    );
}

/// The Python mutating policy: default requests and a team label from the namespace.
fn python_defaults(s: &Server) {
    s.kubectl_ok(&["create", "namespace", "payments"]);
    s.kubectl_ok(&["label", "namespace", "payments", "team=payments"]);
    let mut p = pod("defaults", &["registry.k8s.io/pause:3.10"]);
    p["metadata"]["namespace"] = json!("payments");
    p["spec"]["containers"][0]["resources"] = json!({"requests": {"cpu": "250m"}});
    let out = create(s, &p, &["-o", "json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains("py-defaults"), "{}", stderr(&out));
    let stored = s.kubectl_json(&["get", "pod", "defaults", "-n", "payments"]);
    assert_eq!(stored["metadata"]["labels"]["team"], "payments", "{stored}");
    let requests = &stored["spec"]["containers"][0]["resources"]["requests"];
    assert_eq!(
        requests["cpu"], "250m",
        "a set request was changed: {stored}"
    );
    assert_eq!(requests["memory"], "128Mi", "{stored}");

    // No team label on the namespace: `unassigned`.
    let out = create(s, &pod("unassigned", &["registry.k8s.io/pause:3.10"]), &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    let stored = s.kubectl_json(&["get", "pod", "unassigned", "-n", "default"]);
    assert_eq!(
        stored["metadata"]["labels"]["team"], "unassigned",
        "{stored}"
    );
    assert_eq!(
        stored["spec"]["containers"][0]["resources"]["requests"]["cpu"], "100m",
        "{stored}"
    );
}

/// The JavaScript validating policy: a required annotation (422 Invalid), a warning.
fn javascript_owner(s: &Server) {
    let sel = json!({"turtles.dev/owner-policy": "on"});
    let out = create(s, &configmap("no-owner", sel.clone(), json!({})), &[]);
    assert!(!out.status.success(), "no owner annotation was admitted");
    let err = stderr(&out);
    assert!(
        err.contains("annotation \"turtles.dev/owner\" is required"),
        "{err}"
    );
    // The policy's own code and reason.
    let r = s.http().post_json(
        "/api/v1/namespaces/default/configmaps",
        &configmap("no-owner", sel.clone(), json!({})),
    );
    let status = r.json();
    assert_eq!(r.status, 422, "{status}");
    assert_eq!(status["reason"], "Invalid", "{status}");
    assert_eq!(
        status["message"],
        "admission policy \"js-owner-policy\" denied the request: annotation \"turtles.dev/owner\" is required"
    );

    let out = create(
        s,
        &configmap("owned", sel, json!({"turtles.dev/owner": "ops"})),
        &[],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("owner \"ops\" is not an email address"),
        "{}",
        stderr(&out)
    );
    // Not selected: not called.
    let out = create(s, &configmap("unselected", json!({}), json!({})), &[]);
    assert!(out.status.success(), "{}", stderr(&out));
}

/// A trap, a loop past the deadline and a memory bomb: refused under `fail`, admitted under
/// `ignore`; the host goes on serving, and so do the policies.
fn faults(s: &Server) {
    for fault in ["trap", "loop", "memory"] {
        let name = format!("fault-{fault}");
        let cm = configmap(&name, json!({"turtles.dev/fault": fault}), json!({}));
        let started = std::time::Instant::now();
        let out = create(s, &cm, &[]);
        assert!(!out.status.success(), "{fault}: admitted under fail");
        let err = stderr(&out);
        assert!(
            err.contains("failed calling admission policy \"faulty-policy\""),
            "{fault}: {err}"
        );
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "{fault}: took {:?}",
            started.elapsed()
        );

        let name = format!("open-{fault}");
        let cm = configmap(&name, json!({"turtles.dev/fault-open": fault}), json!({}));
        let out = create(s, &cm, &[]);
        assert!(
            out.status.success(),
            "{fault} under ignore: {}",
            stderr(&out)
        );
    }
    // Still serving: an unlabelled object passes every policy, a benign label too.
    let cm = configmap("fine", json!({"turtles.dev/fault": "no"}), json!({}));
    let out = create(s, &cm, &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    status_until(s, "faulty-policy", |st| {
        st["failures"].as_u64() >= Some(3) && st["lastError"]["message"].is_string()
    });
}

/// `--dry-run=server`: denials and mutations happen, nothing is stored.
fn dry_run(s: &Server) {
    let out = create(
        s,
        &pod("dry-latest", &["nginx:latest"]),
        &["--dry-run=server"],
    );
    assert!(!out.status.success(), "a dry run skipped validation");
    let out = create(
        s,
        &pod("dry", &["registry.k8s.io/pause:3.10"]),
        &["--dry-run=server", "-o", "json"],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let shown: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(shown["metadata"]["labels"]["team"], "unassigned", "{shown}");
    let got = s.kubectl(&["get", "pod", "dry", "-n", "default"]);
    assert!(!got.status.success(), "the dry run stored the pod");
}

/// label-policy v1 replaced by v2 while creates run: none fails, and v2 takes over.
fn hot_swap(s: &Server) {
    let labels = json!({"turtles.dev/mutate": "yes"});
    let out = create(s, &configmap("swap-0", labels.clone(), json!({})), &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("label-policy: labelled"),
        "{}",
        stderr(&out)
    );
    let got = s.kubectl_json(&["get", "configmap", "swap-0", "-n", "default"]);
    assert_eq!(
        got["metadata"]["labels"]["turtles.dev/mutated-by"],
        "label-policy"
    );

    let stop = Arc::new(AtomicBool::new(false));
    let done = Arc::new(AtomicUsize::new(0));
    let http = s.http();
    let writer = {
        let (stop, done) = (stop.clone(), done.clone());
        std::thread::spawn(move || {
            let mut failures = Vec::new();
            let mut i = 0;
            while !stop.load(Ordering::Relaxed) {
                i += 1;
                let cm = configmap(
                    &format!("during-{i}"),
                    json!({"turtles.dev/mutate": "yes"}),
                    json!({}),
                );
                let r = http.post_json("/api/v1/namespaces/default/configmaps", &cm);
                if r.status != 201 {
                    failures.push(format!("{}: {}", r.status, r.text()));
                }
                done.fetch_add(1, Ordering::Relaxed);
            }
            failures
        })
    };
    poll("creates running", Duration::from_secs(10), || {
        (done.load(Ordering::Relaxed) > 5).then_some(())
    })
    .unwrap();
    // Replace the file (write-then-rename): the new version's label.
    s.drop_controller("label-policy", &guest("label-policy-v2"))
        .unwrap();
    let mut n = 0;
    poll("the new version in force", Duration::from_secs(60), || {
        n += 1;
        let name = format!("swap-{n}");
        let out = create(s, &configmap(&name, labels.clone(), json!({})), &[]);
        assert!(out.status.success(), "{}", stderr(&out));
        let got = s.kubectl_json(&["get", "configmap", &name, "-n", "default"]);
        (got["metadata"]["labels"]["turtles.dev/mutated-by"] == "label-policy-v2").then_some(())
    })
    .unwrap();
    // And a few more under the new version.
    let before = done.load(Ordering::Relaxed);
    poll("creates after the swap", Duration::from_secs(10), || {
        (done.load(Ordering::Relaxed) > before + 5).then_some(())
    })
    .unwrap();
    stop.store(true, Ordering::Relaxed);
    let failures = writer.join().unwrap();
    assert!(
        failures.is_empty(),
        "{} of {} creates failed during the swap: {:?}",
        failures.len(),
        done.load(Ordering::Relaxed),
        &failures[..failures.len().min(3)]
    );
}

/// A removed file takes its policy out of the chain, and its `Controller` object goes.
fn unload(s: &Server) {
    std::fs::remove_file(s.controllers_dir().join("registry-policy.wasm")).unwrap();
    poll("the policy out of force", Duration::from_secs(30), || {
        let out = s.kubectl(&["get", "controller", "registry-policy"]);
        (!out.status.success()).then_some(())
    })
    .unwrap();
    let out = create(s, &pod("after", &["nginx:latest"]), &[]);
    assert!(out.status.success(), "{}", stderr(&out));
}
