//! The real kubectl against the real server: what users type.

use std::time::Duration;

use serde_json::Value;
use turtles_tests::{item_names, poll, Server};

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn sorted(mut v: Vec<String>) -> Vec<String> {
    v.sort();
    v
}

/// Names from `kubectl get ... -o name` (`configmap/x` -> `x`).
/// The names kubectl lists, sorted, leaving out the namespace's own `kube-root-ca.crt`.
fn names(s: &Server, args: &[&str]) -> Vec<String> {
    let mut a = args.to_vec();
    a.extend(["-o", "name"]);
    sorted(turtles_tests::without_root_ca(
        s.kubectl_ok(&a)
            .lines()
            .filter(|l| !l.is_empty())
            .map(|l| l.rsplit('/').next().unwrap_or(l).to_owned()),
    ))
}

#[test]
fn get_namespaces_shows_initial_ones() {
    let s = Server::start().unwrap();
    let out = s.kubectl_ok(&["get", "ns"]);
    let rows: Vec<&str> = out.lines().collect();
    assert!(rows[0].starts_with("NAME"), "{out}");
    for ns in ["default", "kube-system", "kube-public"] {
        assert!(
            rows.iter()
                .any(|r| r.split_whitespace().next() == Some(ns) && r.contains("Active")),
            "{ns} missing or not Active:\n{out}"
        );
    }
}

#[test]
fn apply_creates_then_patches() {
    let s = Server::start().unwrap();
    let manifest = |v: &str| {
        format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: applied\n  labels:\n    app: a\ndata:\n  k: {v}\n"
        )
    };
    let out = s.kubectl_stdin(&["apply", "-f", "-"], &manifest("one"));
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("created"));
    let first = s.kubectl_json(&["get", "cm", "applied"]);
    assert_eq!(first["data"]["k"], "one");

    let out = s.kubectl_stdin(&["apply", "-f", "-"], &manifest("two"));
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("configured"),
        "second apply patches: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    let second = s.kubectl_json(&["get", "cm", "applied"]);
    assert_eq!(second["data"]["k"], "two");
    assert_eq!(second["metadata"]["labels"]["app"], "a");
    assert_eq!(second["metadata"]["uid"], first["metadata"]["uid"]);
    let last = second["metadata"]["annotations"]
        ["kubectl.kubernetes.io/last-applied-configuration"]
        .as_str()
        .expect("last-applied annotation");
    let last: Value = serde_json::from_str(last).unwrap();
    assert_eq!(last["data"]["k"], "two");
}

#[test]
fn create_configmap_secret_namespace() {
    let s = Server::start().unwrap();
    // kubectl sends built-in kinds as protobuf.
    s.kubectl_ok(&["create", "configmap", "x", "--from-literal=a=b"]);
    let cm = s.kubectl_json(&["get", "cm", "x"]);
    assert_eq!(cm["data"], serde_json::json!({"a": "b"}));
    assert!(cm["metadata"]["uid"]
        .as_str()
        .is_some_and(|u| !u.is_empty()));

    s.kubectl_ok(&["create", "namespace", "team"]);
    let ns = s.kubectl_json(&["get", "ns", "team"]);
    assert_eq!(ns["status"]["phase"], "Active");

    s.kubectl_ok(&[
        "create",
        "secret",
        "generic",
        "creds",
        "-n",
        "team",
        "--from-literal=password=hunter2",
    ]);
    let sec = s.kubectl_json(&["get", "secret", "creds", "-n", "team"]);
    assert_eq!(sec["type"], "Opaque");
    assert_eq!(sec["data"]["password"], "aHVudGVyMg==");
}

#[test]
fn get_all_namespaces_with_labels_uses_table_columns() {
    let s = Server::start().unwrap();
    s.kubectl_ok(&["create", "namespace", "other"]);
    s.kubectl_ok(&["create", "cm", "one", "--from-literal=a=1"]);
    s.kubectl_ok(&["create", "cm", "two", "-n", "other"]);
    s.kubectl_ok(&["label", "cm", "one", "app=web"]);
    let out = s.kubectl_ok(&["get", "cm", "-A", "--show-labels"]);
    let mut lines = out.lines();
    let header: Vec<&str> = lines.next().unwrap().split_whitespace().collect();
    assert_eq!(
        header,
        ["NAMESPACE", "NAME", "DATA", "AGE", "LABELS"],
        "{out}"
    );
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split_whitespace().collect()).collect();
    let one = rows.iter().find(|r| r[1] == "one").expect("row one");
    assert_eq!(one[0], "default");
    assert_eq!(one[2], "1");
    assert_eq!(one[4], "app=web");
    let two = rows.iter().find(|r| r[1] == "two").expect("row two");
    assert_eq!(two[0], "other");
    assert_eq!(two[4], "<none>");
}

#[test]
fn label_and_field_selectors() {
    let s = Server::start().unwrap();
    s.kubectl_ok(&["create", "namespace", "other"]);
    for (name, labels) in [
        ("a1", "app=a env=x"),
        ("a2", "app=a env=z foo=1"),
        ("b1", "app=b env=y"),
        ("n1", ""),
    ] {
        s.kubectl_ok(&["create", "cm", name]);
        if !labels.is_empty() {
            let mut args = vec!["label", "cm", name];
            args.extend(labels.split(' '));
            s.kubectl_ok(&args);
        }
    }
    s.kubectl_ok(&["create", "cm", "o1", "-n", "other"]);

    assert_eq!(names(&s, &["get", "cm", "-l", "app=a"]), ["a1", "a2"]);
    assert_eq!(
        names(&s, &["get", "cm", "-l", "env in (x,y)"]),
        ["a1", "b1"]
    );
    assert_eq!(names(&s, &["get", "cm", "-l", "!foo"]), ["a1", "b1", "n1"]);
    assert_eq!(
        names(&s, &["get", "cm", "-l", "app=a,!foo"]),
        ["a1"],
        "requirements are ANDed"
    );
    assert_eq!(
        names(&s, &["get", "cm", "--field-selector", "metadata.name=b1"]),
        ["b1"]
    );
    assert_eq!(
        names(
            &s,
            &[
                "get",
                "cm",
                "-A",
                "--field-selector",
                "metadata.namespace!=default"
            ]
        ),
        ["o1"]
    );
    let out = s.kubectl(&["get", "cm", "--field-selector", "data.a=1"]);
    assert!(
        !out.status.success(),
        "unsupported field selector is rejected"
    );
}

#[test]
fn patch_strategic_merge_and_json() {
    let s = Server::start().unwrap();
    s.kubectl_ok(&[
        "create",
        "cm",
        "p",
        "--from-literal=a=1",
        "--from-literal=b=2",
    ]);

    s.kubectl_ok(&["patch", "cm", "p", "-p", r#"{"data":{"c":"3"}}"#]);
    let cm = s.kubectl_json(&["get", "cm", "p"]);
    assert_eq!(
        cm["data"],
        serde_json::json!({"a": "1", "b": "2", "c": "3"})
    );

    s.kubectl_ok(&[
        "patch",
        "cm",
        "p",
        "--type",
        "merge",
        "-p",
        r#"{"data":{"a":null,"b":"two"}}"#,
    ]);
    let cm = s.kubectl_json(&["get", "cm", "p"]);
    assert_eq!(cm["data"], serde_json::json!({"b": "two", "c": "3"}));

    s.kubectl_ok(&[
        "patch",
        "cm",
        "p",
        "--type",
        "json",
        "-p",
        r#"[{"op":"replace","path":"/data/c","value":"three"},{"op":"add","path":"/metadata/labels","value":{"patched":"yes"}}]"#,
    ]);
    let cm = s.kubectl_json(&["get", "cm", "p"]);
    assert_eq!(cm["data"], serde_json::json!({"b": "two", "c": "three"}));
    assert_eq!(cm["metadata"]["labels"]["patched"], "yes");

    // A failing JSON patch test op leaves the object alone.
    let out = s.kubectl(&[
        "patch",
        "cm",
        "p",
        "--type",
        "json",
        "-p",
        r#"[{"op":"test","path":"/data/b","value":"nope"},{"op":"remove","path":"/data/b"}]"#,
    ]);
    assert!(!out.status.success());
    assert_eq!(s.kubectl_json(&["get", "cm", "p"])["data"]["b"], "two");
}

#[test]
fn strategic_patch_merges_pod_containers_by_name() {
    let s = Server::start().unwrap();
    let pod = r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web"},
        "spec":{"containers":[{"name":"app","image":"app:1"},{"name":"sidecar","image":"proxy:1","args":["--x"]}]}}"#;
    let out = s.kubectl_stdin(&["create", "-f", "-"], pod);
    assert!(out.status.success(), "{}", stderr(&out));
    s.kubectl_ok(&[
        "patch",
        "pod",
        "web",
        "-p",
        r#"{"spec":{"containers":[{"name":"sidecar","image":"proxy:2"}]}}"#,
    ]);
    let p = s.kubectl_json(&["get", "pod", "web"]);
    let containers = p["spec"]["containers"].as_array().unwrap();
    assert_eq!(containers.len(), 2, "{p}");
    assert_eq!(containers[0]["name"], "app");
    assert_eq!(containers[0]["image"], "app:1");
    assert_eq!(containers[1]["name"], "sidecar");
    assert_eq!(containers[1]["image"], "proxy:2");
    assert_eq!(containers[1]["args"], serde_json::json!(["--x"]));
}

#[test]
fn replace_with_stale_resource_version_conflicts() {
    let s = Server::start().unwrap();
    s.kubectl_ok(&["create", "cm", "r", "--from-literal=k=v1"]);
    let old = s.kubectl_json(&["get", "cm", "r"]);
    s.kubectl_ok(&["patch", "cm", "r", "-p", r#"{"data":{"k":"v2"}}"#]);

    let mut stale = old.clone();
    stale["data"]["k"] = "mine".into();
    let out = s.kubectl_stdin(&["replace", "-f", "-"], &stale.to_string());
    assert!(!out.status.success(), "a stale replace must fail");
    let err = stderr(&out);
    assert!(err.contains("Conflict"), "{err}");
    assert!(
        err.contains(
            "the object has been modified; please apply your changes to the latest version and try again"
        ),
        "{err}"
    );
    assert_eq!(s.kubectl_json(&["get", "cm", "r"])["data"]["k"], "v2");

    // With the current resourceVersion the same replace succeeds.
    let mut fresh = s.kubectl_json(&["get", "cm", "r"]);
    fresh["data"]["k"] = "mine".into();
    let out = s.kubectl_stdin(&["replace", "-f", "-"], &fresh.to_string());
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(s.kubectl_json(&["get", "cm", "r"])["data"]["k"], "mine");
}

#[test]
fn delete_waits_for_finalizers() {
    let s = Server::start().unwrap();
    let cm = r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"held","finalizers":["example.com/hold"]}}"#;
    let out = s.kubectl_stdin(&["create", "-f", "-"], cm);
    assert!(out.status.success(), "{}", stderr(&out));
    s.kubectl_ok(&["delete", "cm", "held", "--wait=false"]);

    let marked = s.kubectl_json(&["get", "cm", "held"]);
    assert!(
        marked["metadata"]["deletionTimestamp"].is_string(),
        "{marked}"
    );
    assert_eq!(
        marked["metadata"]["finalizers"],
        serde_json::json!(["example.com/hold"])
    );

    s.kubectl_ok(&[
        "patch",
        "cm",
        "held",
        "--type",
        "json",
        "-p",
        r#"[{"op":"remove","path":"/metadata/finalizers"}]"#,
    ]);
    poll("held to be gone", Duration::from_secs(10), || {
        let out = s.kubectl(&["get", "cm", "held"]);
        (!out.status.success() && stderr(&out).contains("NotFound")).then_some(())
    })
    .unwrap();
}

#[test]
fn waiting_delete_returns_once_finalizers_are_removed() {
    let s = Server::start().unwrap();
    let cm = r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"held","finalizers":["example.com/hold"]}}"#;
    let out = s.kubectl_stdin(&["create", "-f", "-"], cm);
    assert!(out.status.success(), "{}", stderr(&out));
    let http = s.http();
    std::thread::scope(|scope| {
        // kubectl deletes, then watches the object until it is gone.
        let delete = scope.spawn(|| s.kubectl(&["delete", "cm", "held", "--timeout=60s"]));
        poll(
            "deletionTimestamp to be set",
            Duration::from_secs(30),
            || {
                let obj = http
                    .get("/api/v1/namespaces/default/configmaps/held")
                    .json();
                obj["metadata"]["deletionTimestamp"]
                    .is_string()
                    .then_some(())
            },
        )
        .unwrap();
        assert!(!delete.is_finished(), "kubectl must wait for the finalizer");
        let r = http.patch(
            "/api/v1/namespaces/default/configmaps/held",
            "application/merge-patch+json",
            &serde_json::json!({"metadata": {"finalizers": null}}),
        );
        assert_eq!(r.status, 200, "{}", r.text());
        let out = delete.join().unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
    });
    assert_eq!(
        http.get("/api/v1/namespaces/default/configmaps/held")
            .status,
        404
    );
}

#[test]
fn delete_by_label_selector() {
    let s = Server::start().unwrap();
    for (name, app) in [("x1", "x"), ("x2", "x"), ("y1", "y"), ("z1", "")] {
        s.kubectl_ok(&["create", "cm", name]);
        if !app.is_empty() {
            s.kubectl_ok(&["label", "cm", name, &format!("app={app}")]);
        }
    }
    s.kubectl_ok(&["delete", "cm", "-l", "app=x"]);
    assert_eq!(names(&s, &["get", "cm"]), ["y1", "z1"]);

    // deletecollection: one DELETE on the collection.
    let http = s.http();
    let r = http.delete("/api/v1/namespaces/default/configmaps?labelSelector=app%3Dy");
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(item_names(&r.json()), ["y1"]);
    assert_eq!(names(&s, &["get", "cm"]), ["z1"]);
}

#[test]
fn server_dry_run_stores_nothing() {
    let s = Server::start().unwrap();
    let printed = s.kubectl_json(&[
        "create",
        "cm",
        "dry",
        "--from-literal=a=b",
        "--dry-run=server",
    ]);
    // The server handled it: it filled in what only the server sets.
    assert!(
        printed["metadata"]["uid"]
            .as_str()
            .is_some_and(|u| !u.is_empty()),
        "{printed}"
    );
    assert!(printed["metadata"]["creationTimestamp"].is_string());
    let out = s.kubectl(&["get", "cm", "dry"]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("NotFound"), "{}", stderr(&out));
}

#[test]
fn get_with_chunk_size_pages_through_everything() {
    let s = Server::start().unwrap();
    for i in 1..=5 {
        s.kubectl_ok(&["create", "cm", &format!("c{i}")]);
    }
    let out = s.kubectl(&["get", "cm", "--chunk-size=2", "-o", "name", "-v=6"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let listed: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_owned)
        .collect();
    // (With the namespace's own `kube-root-ca.crt`: six in three pages.)
    assert_eq!(
        listed,
        ["c1", "c2", "c3", "c4", "c5", "kube-root-ca.crt"].map(|n| format!("configmap/{n}"))
    );
    // Three pages of at most two: kubectl followed two continue tokens.
    let log = stderr(&out);
    let pages = log
        .lines()
        .filter(|l| l.contains("GET ") && l.contains("/configmaps?") && l.contains("limit=2"))
        .count();
    let continued = log.lines().filter(|l| l.contains("continue=")).count();
    assert_eq!(pages, 3, "{log}");
    assert_eq!(continued, 2, "{log}");
}

#[test]
fn api_resources_lists_configmaps() {
    let s = Server::start().unwrap();
    let out = s.kubectl_ok(&["api-resources"]);
    let row: Vec<&str> = out
        .lines()
        .find(|l| l.starts_with("configmaps "))
        .unwrap_or_else(|| panic!("no configmaps row:\n{out}"))
        .split_whitespace()
        .collect();
    assert_eq!(row, ["configmaps", "cm", "v1", "true", "ConfigMap"]);
    // And the short name resolves.
    s.kubectl_ok(&["create", "cm", "short"]);
    assert_eq!(names(&s, &["get", "cm"]), ["short"]);
}

/// What `kubectl get -o yaml` writes for several objects is a `kind: List`, and kubectl
/// validates such a file on the client against `/openapi/v2` in gnostic's protobuf (the v3
/// documents have no `List`). Before turtles served that encoding, every `apply` or `create` of a
/// List failed ("the server could not find the requested resource"). Now a backup restores,
/// and a bad item gets kubectl's own validation errors.
#[test]
fn a_list_file_round_trips_and_is_validated_with_openapi_v2() {
    let s = Server::start().unwrap();
    s.kubectl_ok(&["create", "ns", "from"]);
    s.kubectl_ok(&["create", "ns", "to"]);
    for n in ["a", "b", "c"] {
        s.kubectl_ok(&["-n", "from", "create", "cm", n, "--from-literal=k=v"]);
    }
    let backup = s.kubectl_ok(&["-n", "from", "get", "cm", "a", "b", "c", "-o", "yaml"]);
    assert!(backup.contains("kind: List"), "{backup}");
    let restore: String = backup
        .lines()
        .filter(|l| !l.contains("resourceVersion:") && !l.contains("uid:"))
        .map(|l| l.replace("namespace: from", "namespace: to") + "\n")
        .collect();
    let out = s.kubectl_stdin(&["apply", "-f", "-"], &restore);
    assert!(out.status.success(), "{}", stderr(&out));
    let restored = names(&s, &["-n", "to", "get", "cm"]);
    for n in ["a", "b", "c"] {
        assert!(restored.contains(&n.to_owned()), "{restored:?}");
    }
    assert_eq!(
        s.kubectl_json(&["-n", "to", "get", "cm", "b"])["data"]["k"],
        "v"
    );

    let bad = "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: bad, namespace: to}\n  data: not-a-map\n  bogus: 1\n";
    let out = s.kubectl_stdin(&["create", "-f", "-"], bad);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains(r#"unknown field "bogus" in io.k8s.api.core.v1.ConfigMap"#)
            && err.contains(r#"invalid type for io.k8s.api.core.v1.ConfigMap.data: got "string", expected "map""#),
        "{err}"
    );

    // The negotiation, as kube-openapi's: by q, the dotted type in the answer, Vary: Accept,
    // and a bare 406 for what it cannot serve.
    let h = s.http();
    let get = |accept: &str| {
        h.client
            .get(format!("{}/openapi/v2", h.base))
            .header("Accept", accept)
            .send()
            .unwrap()
    };
    let pb = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf";
    for (accept, want) in [
        (
            "application/com.github.proto-openapi.spec.v2@v1.0+protobuf",
            pb,
        ),
        (
            "application/json;q=0.5, application/com.github.proto-openapi.spec.v2@v1.0+protobuf",
            pb,
        ),
        (&format!("{pb};q=0.4, application/json"), "application/json"),
        ("application/json", "application/json"),
    ] {
        let r = get(accept);
        assert_eq!(r.status().as_u16(), 200, "{accept}");
        assert_eq!(r.headers()["content-type"], want, "{accept}");
        assert_eq!(r.headers()["vary"], "Accept");
    }
    assert_eq!(get("text/html").status().as_u16(), 406);
}

/// `kubectl debug` adds an ephemeral container through `pods/ephemeralcontainers`: only
/// additions, only that field, and an unknown subresource is kube's 404 with empty `details`
/// (kubectl reads `details.name` of it and crashed when there were none).
#[test]
fn kubectl_debug_adds_an_ephemeral_container() {
    let s = Server::start().unwrap();
    s.kubectl_ok(&["run", "app", "--image=nginx:1.27", "--labels=run=app"]);
    let out = s.kubectl(&[
        "debug",
        "app",
        "--image=busybox:1.36",
        "--container=dbg",
        "--profile=general",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let pod = s.kubectl_json(&["get", "pod", "app", "-o", "json"]);
    let eph = &pod["spec"]["ephemeralContainers"];
    assert_eq!(eph[0]["name"], "dbg", "{pod}");
    assert_eq!(eph[0]["image"], "busybox:1.36");
    assert_eq!(pod["spec"]["containers"][0]["image"], "nginx:1.27");

    let http = s.http();
    let path = "/api/v1/namespaces/default/pods/app/ephemeralcontainers";
    let got = http.get(path);
    assert_eq!(got.status, 200, "{}", got.text());
    assert_eq!(got.json()["kind"], "Pod");
    // Removing or changing an existing one is refused, as kube refuses it.
    let mut removed = got.json();
    removed["spec"]["ephemeralContainers"] = serde_json::json!([]);
    let r = http.put_json(path, &removed);
    let st = turtles_tests::assert_status(&r, 422, "Invalid");
    assert!(
        st["message"]
            .as_str()
            .unwrap()
            .contains("existing ephemeral containers \"dbg\" may not be removed"),
        "{st}"
    );
    // Other fields of the body are ignored: only the ephemeral containers change.
    let mut other = got.json();
    other["spec"]["containers"][0]["image"] = "nginx:9".into();
    other["metadata"]["labels"]["x"] = "y".into();
    other["spec"]["ephemeralContainers"]
        .as_array_mut()
        .unwrap()
        .push(serde_json::json!({"name": "dbg2", "image": "busybox:1.36"}));
    let r = http.put_json(path, &other);
    assert_eq!(r.status, 200, "{}", r.text());
    let pod = s.kubectl_json(&["get", "pod", "app", "-o", "json"]);
    assert_eq!(pod["spec"]["containers"][0]["image"], "nginx:1.27");
    assert!(pod["metadata"]["labels"].get("x").is_none(), "{pod}");
    assert_eq!(pod["spec"]["ephemeralContainers"][1]["name"], "dbg2");
    // Not through the main resource.
    let out = s.kubectl(&[
        "patch",
        "pod",
        "app",
        "--type=json",
        "-p",
        r#"[{"op":"remove","path":"/spec/ephemeralContainers"}]"#,
    ]);
    assert!(!out.status.success());
    // Discovery lists it, as kubectl debug's fallback checks.
    let list = http.get("/api/v1").json();
    assert!(list["resources"]
        .as_array()
        .unwrap()
        .iter()
        .any(|r| r["name"] == "pods/ephemeralcontainers"));
    // An unknown subresource: kube's generic 404, `details` present and empty.
    let r = http.get("/api/v1/namespaces/default/pods/app/bogus");
    let st = turtles_tests::assert_status(&r, 404, "NotFound");
    assert_eq!(st["details"], serde_json::json!({}), "{st}");
}

/// Kinds kube prints with columns of their own beyond a resource's: a Scale (kube's
/// `scaleColumnDefinitions`), events.k8s.io Events (the core Event printer, from the stored
/// shape), and an autoscaling/v1 HPA (the HPA printer, from the stored v2 shape).
#[test]
fn tables_of_scales_converted_events_and_v1_hpas() {
    let s = Server::start().unwrap();
    s.kubectl_ok(&[
        "create",
        "deployment",
        "web",
        "--image=nginx",
        "--replicas=2",
    ]);
    let out = s.kubectl_ok(&["get", "deploy", "web", "--subresource=scale"]);
    let header: Vec<&str> = out
        .lines()
        .next()
        .unwrap_or("")
        .split_whitespace()
        .collect();
    assert_eq!(header, ["NAME", "DESIRED", "AVAILABLE", "AGE"], "{out}");
    assert!(
        out.lines().nth(1).unwrap_or("").starts_with("web "),
        "{out}"
    );
    let event = serde_json::json!({"apiVersion": "v1", "kind": "Event",
        "metadata": {"name": "e1"}, "involvedObject": {"kind": "Pod", "name": "p"},
        "reason": "Scheduled", "type": "Normal", "message": "hello there"});
    let r = s
        .http()
        .post_json("/api/v1/namespaces/default/events", &event);
    assert_eq!(r.status, 201, "{}", r.text());
    let out = s.kubectl_ok(&["get", "events.v1.events.k8s.io"]);
    let header: Vec<&str> = out
        .lines()
        .next()
        .unwrap_or("")
        .split_whitespace()
        .collect();
    assert_eq!(
        header,
        ["LAST", "SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"],
        "{out}"
    );
    assert!(
        out.contains("pod/p") && out.contains("hello there"),
        "{out}"
    );
    s.kubectl_ok(&[
        "autoscale",
        "deployment",
        "web",
        "--min=2",
        "--max=4",
        "--cpu-percent=50",
    ]);
    let v2 = s.kubectl_ok(&["get", "horizontalpodautoscalers.v2.autoscaling", "web"]);
    let v1 = s.kubectl_ok(&["get", "horizontalpodautoscalers.v1.autoscaling", "web"]);
    let cells = |out: &str| -> Vec<String> {
        out.lines()
            .nth(1)
            .unwrap_or("")
            .split_whitespace()
            .take(5)
            .map(str::to_owned)
            .collect()
    };
    assert_eq!(cells(&v1), cells(&v2), "{v1}\n{v2}");
}

/// kube 1.34 warns on every request about Endpoints (deprecated in 1.33 for EndpointSlices).
#[test]
fn endpoints_are_deprecated_as_in_kube() {
    let s = Server::start().unwrap();
    let out = s.kubectl(&["get", "endpoints", "-A"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains(
            "Warning: v1 Endpoints is deprecated in v1.33+; use discovery.k8s.io/v1 EndpointSlice"
        ),
        "{}",
        stderr(&out)
    );
    let out = s.kubectl(&["get", "endpointslices", "-A"]);
    assert!(!stderr(&out).contains("deprecated"), "{}", stderr(&out));
}

/// `kubectl get componentstatuses` (`cs`): kube's deprecated, read-only, computed resource, with
/// its printer's columns and deprecation warning; `get` and `list` only.
#[test]
fn component_statuses_as_in_kube() {
    let s = Server::start().unwrap();
    let out = s.kubectl(&["get", "cs"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("Warning: v1 ComponentStatus is deprecated in v1.19+"),
        "{}",
        stderr(&out)
    );
    let table = String::from_utf8_lossy(&out.stdout).into_owned();
    let rows: Vec<Vec<&str>> = table
        .lines()
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(rows[0], ["NAME", "STATUS", "MESSAGE", "ERROR"], "{table}");
    assert!(rows.contains(&vec!["etcd-0", "Healthy", "ok"]), "{table}");
    assert!(
        rows.contains(&vec!["controller-manager", "Healthy", "ok"]),
        "{table}"
    );
    let one = s.kubectl_json(&["get", "componentstatus", "etcd-0", "-o", "json"]);
    assert_eq!(
        one["conditions"],
        serde_json::json!([{"type": "Healthy", "status": "True", "message": "ok"}])
    );
    // A field selector picks by name; no part has labels.
    let picked = s.kubectl_ok(&[
        "get",
        "cs",
        "--field-selector=metadata.name=etcd-0",
        "-o",
        "name",
    ]);
    assert_eq!(picked.trim(), "componentstatus/etcd-0");
    let none = s.kubectl(&["get", "cs", "-l", "tier=control-plane"]);
    assert!(
        stderr(&none).contains("No resources found"),
        "{}",
        stderr(&none)
    );
    // kube's answers: an unknown part is a plain 500, writes and watches are 405.
    let http = s.http();
    let r = http.get("/api/v1/componentstatuses/scheduler2");
    assert_eq!(r.status, 500, "{}", r.text());
    assert_eq!(r.json()["message"], "Component not found: scheduler2");
    let r = http.delete("/api/v1/componentstatuses/etcd-0");
    assert_eq!(r.status, 405, "{}", r.text());
    let r = http.get("/api/v1/componentstatuses?watch=true");
    assert_eq!(r.status, 405, "{}", r.text());
    assert_eq!(
        r.json()["message"],
        "watch is not supported on resources of kind \"componentstatuses\""
    );
    let r = http.get("/api/v1/watch/componentstatuses");
    assert_eq!(r.status, 405, "{}", r.text());
    let list = http.get("/api/v1/componentstatuses").json();
    assert_eq!(list["kind"], "ComponentStatusList");
    assert_eq!(list["metadata"], serde_json::json!({}));
    // Discovery: get and list, short name cs, no storage version.
    let discovery = http.get("/api/v1").json();
    let cs = discovery["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "componentstatuses")
        .expect("componentstatuses discovered")
        .clone();
    assert_eq!(
        cs,
        serde_json::json!({"name": "componentstatuses", "singularName": "componentstatus",
            "namespaced": false, "kind": "ComponentStatus", "verbs": ["get", "list"],
            "shortNames": ["cs"]})
    );
}

/// `kubectl patch --type=json` with the array indices kube's json-patch v4 reads: `-1` is the
/// last element (an `add`'s, one past it), `01` is `1`.
#[test]
fn json_patch_indices_count_from_the_end_as_kubes() {
    let s = Server::start().unwrap();
    s.kubectl_ok(&["create", "configmap", "idx"]);
    let patch = |ops: &str| {
        s.kubectl_ok(&["patch", "configmap", "idx", "--type=json", "-p", ops]);
        let cm = s.kubectl_json(&["get", "configmap", "idx", "-o", "json"]);
        cm["metadata"]["finalizers"].clone()
    };
    let set = r#"[{"op":"add","path":"/metadata/finalizers","value":["a/x","a/y","a/z"]}]"#;
    assert_eq!(patch(set), serde_json::json!(["a/x", "a/y", "a/z"]));
    let last_gone = patch(r#"[{"op":"remove","path":"/metadata/finalizers/-1"}]"#);
    assert_eq!(last_gone, serde_json::json!(["a/x", "a/y"]));
    let appended = patch(r#"[{"op":"add","path":"/metadata/finalizers/-1","value":"a/w"}]"#);
    assert_eq!(appended, serde_json::json!(["a/x", "a/y", "a/w"]));
    let replaced = patch(r#"[{"op":"replace","path":"/metadata/finalizers/01","value":"a/v"}]"#);
    assert_eq!(replaced, serde_json::json!(["a/x", "a/v", "a/w"]));
    // Beyond the list: kube's generic 422.
    let out = s.kubectl(&[
        "patch",
        "configmap",
        "idx",
        "--type=json",
        "-p",
        r#"[{"op":"remove","path":"/metadata/finalizers/-4"}]"#,
    ]);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("the server rejected our request due to an error in our request"),
        "{}",
        stderr(&out)
    );
    s.kubectl_ok(&[
        "patch",
        "configmap",
        "idx",
        "--type=json",
        "-p",
        r#"[{"op":"remove","path":"/metadata/finalizers"}]"#,
    ]);
}
