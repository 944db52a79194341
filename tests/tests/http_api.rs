//! Raw HTTP: exact status codes, Status bodies and list/update semantics.

use std::time::{Duration, Instant};

use serde_json::{json, Value};
use turtles_tests::{assert_status, configmap, item_names, poll, rv, Http, Server};

const CMS: &str = "/api/v1/namespaces/default/configmaps";
const PODS: &str = "/api/v1/namespaces/default/pods";

fn create(http: &Http, collection: &str, body: &Value) -> Value {
    let r = http.post_json(collection, body);
    assert_eq!(r.status, 201, "create: {}", r.text());
    r.json()
}

fn get(http: &Http, path: &str) -> Value {
    let r = http.get(path);
    assert_eq!(r.status, 200, "GET {path}: {}", r.text());
    r.json()
}

/// Bodies kube cannot decode into the endpoint's type, refused in kube's words: JSON cut short
/// (Go's syntax error and the first 30 bytes), another kind (no conversion to a ConfigMap),
/// a version the scheme does not have; nothing is stored.
#[test]
fn malformed_json_is_bad_request() {
    let s = Server::start().unwrap();
    let http = s.http();
    let post =
        |body: &[u8]| http.request("POST", CMS, Some("application/json"), Some(body.to_vec()));
    let r = post(br#"{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"#);
    assert_status(&r, 400, "BadRequest");
    for (body, message) in [
        (
            &br#"{"apiVersion":"v1","kind":"ConfigMap","#[..],
            r#"the object provided is unrecognized (must be of type ConfigMap): couldn't get version/kind; json parse error: unexpected end of JSON input ({"apiVersion":"v1","kind":"Con ...)"#,
        ),
        (
            &br#"{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s"}}"#[..],
            r#"Secret in version "v1" cannot be handled as a ConfigMap: converting (v1.Secret) to (core.ConfigMap): unknown conversion"#,
        ),
        (
            &br#"{"apiVersion":"v2","kind":"ConfigMap","metadata":{"name":"s"}}"#[..],
            r#"ConfigMap in version "v2" cannot be handled as a ConfigMap: no kind "ConfigMap" is registered for version "v2" in scheme "pkg/api/legacyscheme/scheme.go:30""#,
        ),
        (
            &b"nope"[..],
            "the object provided is unrecognized (must be of type ConfigMap): couldn't get version/kind; json parse error: invalid character 'o' in literal null (expecting 'u') (6e6f7065)",
        ),
    ] {
        let r = post(body);
        assert_status(&r, 400, "BadRequest");
        assert_eq!(r.json()["message"], message, "{}", r.text());
    }
    assert_status(&http.get(&format!("{CMS}/s")), 404, "NotFound");
    // An update's body the same way, before the object is looked for.
    let r = http.request(
        "PUT",
        &format!("{CMS}/s"),
        Some("application/json"),
        Some(b"{\"metadata\": [}".to_vec()),
    );
    assert_status(&r, 400, "BadRequest");
    assert_eq!(
        r.json()["message"],
        "the object provided is unrecognized (must be of type ConfigMap): couldn't get version/kind; json parse error: invalid character '}' looking for beginning of value ({\"metadata\": [})"
    );
    // The same kind in another registered version decodes, and its version is refused.
    let r = http.post_json(
        "/apis/autoscaling/v2/namespaces/default/horizontalpodautoscalers",
        &json!({"apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler",
                "metadata": {"name": "h"}}),
    );
    assert_status(&r, 400, "BadRequest");
    assert_eq!(
        r.json()["message"],
        "the API version in the data (autoscaling/v1) does not match the expected API version (autoscaling/v2)"
    );
}

#[test]
fn oversized_body_is_rejected() {
    let s = Server::start().unwrap();
    let big = "x".repeat(3 * 1024 * 1024 + 1024);
    let r = s
        .http()
        .post_json(CMS, &configmap("big", &[], &[("blob", &big)]));
    assert_status(&r, 413, "RequestEntityTooLarge");
    assert_eq!(s.http().get(&format!("{CMS}/big")).status, 404);
    // Just under the body limit is read, but an object that large is not stored (etcd's limit):
    // an Event, whose message no validation bounds (a ConfigMap's data is limited to 1 MiB by
    // kube's validation first).
    let events = "/api/v1/namespaces/default/events";
    let event = |name: &str, message: &str| {
        serde_json::json!({"metadata": {"name": name},
            "involvedObject": {"kind": "Pod", "namespace": "default", "name": "p"},
            "message": message})
    };
    let body_fits = "x".repeat(3 * 1024 * 1024 - 4096);
    let r = s.http().post_json(events, &event("body-fits", &body_fits));
    let st = assert_status(&r, 413, "RequestEntityTooLarge");
    assert!(
        st["message"].as_str().unwrap().contains("limit is 1572864"),
        "{st}"
    );
    // Just under the object limit is stored.
    let fits = "x".repeat(1536 * 1024 - 4096);
    let r = s.http().post_json(events, &event("fits", &fits));
    assert_eq!(r.status, 201, "{}", r.text());
}

#[test]
fn invalid_name_is_unprocessable() {
    let s = Server::start().unwrap();
    let r = s.http().post_json(CMS, &configmap("Bad_Name", &[], &[]));
    let st = assert_status(&r, 422, "Invalid");
    assert_eq!(st["details"]["causes"][0]["field"], "metadata.name", "{st}");
    assert_eq!(st["details"]["name"], "Bad_Name");
    assert_eq!(st["details"]["kind"], "ConfigMap");
}

#[test]
fn missing_object_is_not_found() {
    let s = Server::start().unwrap();
    let r = s.http().get(&format!("{CMS}/nope"));
    let st = assert_status(&r, 404, "NotFound");
    assert_eq!(st["message"], r#"configmaps "nope" not found"#);
    assert_eq!(st["details"]["name"], "nope");
    assert_eq!(st["details"]["kind"], "configmaps");
}

#[test]
fn unsupported_media_types() {
    let s = Server::start().unwrap();
    let http = s.http();
    let body = configmap("m", &[], &[("a", "b")]).to_string().into_bytes();
    let r = http.request("POST", CMS, Some("text/plain"), Some(body));
    assert_status(&r, 415, "UnsupportedMediaType");
    assert_eq!(http.get(&format!("{CMS}/m")).status, 404);

    create(&http, CMS, &configmap("m", &[], &[("a", "b")]));
    let r = http.patch(
        &format!("{CMS}/m"),
        "application/x-unknown-patch",
        &json!({"data": {"a": "c"}}),
    );
    assert_status(&r, 415, "UnsupportedMediaType");
    assert_eq!(get(&http, &format!("{CMS}/m"))["data"]["a"], "b");
}

#[test]
fn create_in_missing_namespace() {
    let s = Server::start().unwrap();
    let r = s.http().post_json(
        "/api/v1/namespaces/ghost/configmaps",
        &configmap("x", &[], &[]),
    );
    let st = assert_status(&r, 404, "NotFound");
    assert_eq!(st["message"], r#"namespaces "ghost" not found"#);
}

#[test]
fn dry_run_create_returns_object_but_stores_nothing() {
    let s = Server::start().unwrap();
    let http = s.http();
    let r = http.post_json(
        &format!("{CMS}?dryRun=All"),
        &configmap("dry", &[], &[("a", "b")]),
    );
    assert_eq!(r.status, 201, "{}", r.text());
    let obj = r.json();
    assert_eq!(obj["metadata"]["name"], "dry");
    assert_eq!(obj["data"]["a"], "b");
    assert!(obj["metadata"]["uid"].is_string(), "{obj}");
    assert_status(&http.get(&format!("{CMS}/dry")), 404, "NotFound");
    assert!(item_names(&get(&http, CMS)).is_empty());
    // A bad dryRun value is refused, not ignored: kube's 422 on the options, every value
    // listed.
    let r = http.post_json(
        &format!("{CMS}?dryRun=All&dryRun=Some"),
        &configmap("dry", &[], &[]),
    );
    let st = assert_status(&r, 422, "Invalid");
    assert_eq!(
        st["message"],
        r#"CreateOptions.meta.k8s.io "" is invalid: dryRun: Unsupported value: ["All","Some"]: supported values: "All""#
    );
    assert_eq!(st["details"]["kind"], "CreateOptions", "{st}");
    assert!(item_names(&get(&http, CMS)).is_empty());
    // A DELETE whose body's dryRun is bogus deletes nothing.
    create(&http, CMS, &configmap("kept", &[], &[]));
    let r = http.request(
        "DELETE",
        &format!("{CMS}/kept"),
        Some("application/json"),
        Some(br#"{"kind":"DeleteOptions","apiVersion":"v1","dryRun":["bogus"]}"#.to_vec()),
    );
    let st = assert_status(&r, 422, "Invalid");
    assert_eq!(
        st["message"],
        r#"DeleteOptions.meta.k8s.io "" is invalid: dryRun: Unsupported value: ["bogus"]: supported values: "All""#
    );
    assert_eq!(item_names(&get(&http, CMS)), ["kept"]);
}

#[test]
fn chunked_list_reads_one_snapshot() {
    let s = Server::start().unwrap();
    let http = s.http();
    for i in 1..=5 {
        create(&http, CMS, &configmap(&format!("c{i}"), &[], &[]));
    }
    let mut names = Vec::new();
    let mut rvs = Vec::new();
    let mut path = format!("{CMS}?limit=2");
    let mut pages = 0;
    loop {
        let page = get(&http, &path);
        pages += 1;
        assert!(item_names(&page).len() <= 2, "{page}");
        names.extend(item_names(&page));
        rvs.push(rv(&page));
        if pages == 1 {
            // (`kube-root-ca.crt`, the namespace's own, is one of them.)
            assert_eq!(page["metadata"]["remainingItemCount"], 4, "{page}");
            // A write between pages: it sorts into a later page, but is newer than the list.
            create(&http, CMS, &configmap("c3a", &[], &[]));
        }
        // Counted in the first page's snapshot: the write in between is not in it.
        if pages == 2 {
            assert_eq!(page["metadata"]["remainingItemCount"], 2, "{page}");
        }
        if pages == 3 {
            assert!(page["metadata"]["remainingItemCount"].is_null(), "{page}");
        }
        match page["metadata"]["continue"].as_str() {
            Some(token) if !token.is_empty() => {
                path = format!("{CMS}?limit=2&continue={token}");
            }
            _ => break,
        }
        assert!(pages < 10, "too many pages");
    }
    assert_eq!(pages, 3);
    assert_eq!(names, ["c1", "c2", "c3", "c4", "c5"]);
    assert!(rvs.iter().all(|r| *r == rvs[0]), "{rvs:?}");
    // A fresh list sees the new object.
    assert_eq!(
        item_names(&get(&http, CMS)),
        ["c1", "c2", "c3", "c3a", "c4", "c5"]
    );
    // A continue token with a resourceVersion is refused.
    let first = get(&http, &format!("{CMS}?limit=2"));
    let token = first["metadata"]["continue"].as_str().unwrap();
    let r = http.get(&format!("{CMS}?limit=2&continue={token}&resourceVersion=1"));
    assert_status(&r, 400, "BadRequest");
}

#[test]
fn generate_name_adds_a_suffix() {
    let s = Server::start().unwrap();
    let http = s.http();
    let body =
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"generateName": "gen-"}});
    let a = create(&http, CMS, &body);
    let b = create(&http, CMS, &body);
    let (na, nb) = (
        a["metadata"]["name"].as_str().unwrap(),
        b["metadata"]["name"].as_str().unwrap(),
    );
    assert!(na.starts_with("gen-") && na.len() > 4, "{na}");
    assert!(nb.starts_with("gen-") && nb.len() > 4, "{nb}");
    assert_ne!(na, nb);
    assert_eq!(a["metadata"]["generateName"], "gen-");
    get(&http, &format!("{CMS}/{na}"));
    // The prefix is checked as kube checks it, before the name made from it.
    let r = http.post_json(
        CMS,
        &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"generateName": "Gen-"}}),
    );
    assert_eq!(r.status, 422, "{}", r.text());
    let causes = r.json()["details"]["causes"].clone();
    assert_eq!(causes[0]["field"], "metadata.generateName", "{causes}");
    assert_eq!(causes[1]["field"], "metadata.name", "{causes}");
    // An IPAddress cannot generate its name (it must be an address).
    let r = http.post_json(
        "/apis/networking.k8s.io/v1/ipaddresses",
        &json!({"apiVersion": "networking.k8s.io/v1", "kind": "IPAddress",
            "metadata": {"generateName": "10.0.0."},
            "spec": {"parentRef": {"resource": "services", "namespace": "default", "name": "x"}}}),
    );
    assert_eq!(r.status, 422, "{}", r.text());
    let body = r.json();
    let message = body["message"].as_str().unwrap_or_default();
    assert!(
        message.contains(
            "metadata.generateName: Invalid value: \"10.0.0.\": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"
        ),
        "{message}"
    );
}

#[test]
fn put_with_stale_resource_version_conflicts() {
    let s = Server::start().unwrap();
    let http = s.http();
    let old = create(&http, CMS, &configmap("u", &[], &[("k", "1")]));
    let mut next = old.clone();
    next["data"]["k"] = "2".into();
    let r = http.put_json(&format!("{CMS}/u"), &next);
    assert_eq!(r.status, 200, "{}", r.text());
    assert!(rv(&r.json()) > rv(&old));

    let mut stale = old.clone();
    stale["data"]["k"] = "3".into();
    let r = http.put_json(&format!("{CMS}/u"), &stale);
    let st = assert_status(&r, 409, "Conflict");
    assert!(
        st["message"]
            .as_str()
            .unwrap()
            .contains("the object has been modified"),
        "{st}"
    );
    assert_eq!(get(&http, &format!("{CMS}/u"))["data"]["k"], "2");
}

#[test]
fn no_op_put_keeps_resource_version_and_emits_nothing() {
    let s = Server::start().unwrap();
    // The revisions compared below are this test's writes only.
    s.wait_settled(std::time::Duration::from_secs(60)).unwrap();
    let http = s.http();
    let obj = create(&http, CMS, &configmap("same", &[("a", "b")], &[("k", "v")]));
    let mut w = http.watch(&format!("{CMS}?watch=true&resourceVersion={}", rv(&obj)));
    assert_eq!(w.status, 200);

    let r = http.put_json(&format!("{CMS}/same"), &obj);
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(rv(&r.json()), rv(&obj));
    assert_eq!(
        r.json(),
        obj,
        "a no-op PUT returns the stored object unchanged"
    );
    assert_eq!(get(&http, &format!("{CMS}/same")), obj);

    // Events are ordered: if the no-op had written, its MODIFIED would come before this ADDED.
    create(&http, CMS, &configmap("marker", &[], &[]));
    let ev = w.expect_event("ADDED");
    assert_eq!(ev["object"]["metadata"]["name"], "marker");
    assert_eq!(rv(&ev["object"]), rv(&obj) + 1);
}

#[test]
fn every_list_has_resource_version_and_items() {
    let s = Server::start().unwrap();
    let http = s.http();
    create(
        &http,
        "/api/v1/namespaces",
        &json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "empty"}}),
    );
    let mut group_versions = vec!["/api/v1".to_owned()];
    for g in get(&http, "/apis")["groups"].as_array().unwrap() {
        for v in g["versions"].as_array().unwrap() {
            group_versions.push(format!("/apis/{}", v["groupVersion"].as_str().unwrap()));
        }
    }
    let mut checked = 0;
    for gv in group_versions {
        for r in get(&http, &gv)["resources"].as_array().unwrap() {
            let name = r["name"].as_str().unwrap();
            let listable = r["verbs"]
                .as_array()
                .is_some_and(|v| v.iter().any(|v| v == "list"));
            if name.contains('/') || !listable {
                continue;
            }
            let path = if r["namespaced"] == true {
                format!("{gv}/namespaces/empty/{name}")
            } else {
                format!("{gv}/{name}")
            };
            let list = get(&http, &path);
            assert_eq!(
                list["kind"],
                format!("{}List", r["kind"].as_str().unwrap()),
                "{path}"
            );
            // Computed when read, as in kube: no revision.
            if name == "componentstatuses" {
                assert_eq!(list["metadata"], json!({}), "{path}");
            } else {
                assert!(rv(&list) > 0, "{path}: {list}");
            }
            let items = list["items"]
                .as_array()
                .unwrap_or_else(|| panic!("{path}: items is not an array: {list}"));
            // A new namespace holds only its `default` ServiceAccount and `kube-root-ca.crt`.
            if r["namespaced"] == true && name != "serviceaccounts" {
                assert!(
                    items
                        .iter()
                        .all(|i| i["metadata"]["name"] == turtles_tests::ROOT_CA),
                    "{path}: {list}"
                );
            }
            checked += 1;
        }
    }
    assert!(checked >= 5, "only {checked} resources discovered");
    // And with a selector that matches nothing.
    let list = get(&http, &format!("{CMS}?labelSelector=nothing%3Dhere"));
    assert_eq!(list["items"], json!([]));
    assert!(rv(&list) > 0);
}

#[test]
fn version_is_semver() {
    let s = Server::start().unwrap();
    let v = get(&s.http(), "/version");
    let git = v["gitVersion"].as_str().unwrap();
    assert!(git.starts_with("v1."), "{git}");
    // vMAJOR.MINOR.PATCH[-pre][+build]
    let core = git[1..].split('+').next().unwrap();
    let core = core.split('-').next().unwrap();
    let parts: Vec<&str> = core.split('.').collect();
    assert_eq!(parts.len(), 3, "{git}");
    for p in &parts {
        assert!(
            !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()),
            "{git}"
        );
    }
    assert_eq!(v["major"], parts[0]);
    assert_eq!(v["minor"], parts[1]);
}

#[test]
fn discovery_lists_configmaps() {
    let s = Server::start().unwrap();
    let http = s.http();
    let api = get(&http, "/api");
    assert_eq!(api["kind"], "APIVersions");
    assert!(api["versions"].as_array().unwrap().contains(&json!("v1")));

    let apis = get(&http, "/apis");
    assert_eq!(apis["kind"], "APIGroupList");
    let groups = apis["groups"].as_array().unwrap();
    assert!(
        groups.iter().any(|g| g["name"] == "coordination.k8s.io"),
        "{apis}"
    );
    for g in groups {
        let pref = g["preferredVersion"]["groupVersion"].as_str().unwrap();
        let list = get(&http, &format!("/apis/{pref}"));
        assert_eq!(list["groupVersion"], pref);
    }

    let v1 = get(&http, "/api/v1");
    assert_eq!(v1["kind"], "APIResourceList");
    assert_eq!(v1["groupVersion"], "v1");
    let cm = v1["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "configmaps")
        .unwrap_or_else(|| panic!("no configmaps in {v1}"));
    assert_eq!(cm["kind"], "ConfigMap");
    assert_eq!(cm["namespaced"], true);
    assert_eq!(cm["shortNames"], json!(["cm"]));
    for verb in [
        "create", "delete", "get", "list", "patch", "update", "watch",
    ] {
        assert!(
            cm["verbs"].as_array().unwrap().contains(&json!(verb)),
            "{cm}"
        );
    }
    assert!(v1["resources"]
        .as_array()
        .unwrap()
        .iter()
        .any(|r| r["name"] == "pods/status"));
    assert_status(&http.get("/apis/nope.example.com"), 404, "NotFound");
}

fn pod(name: &str) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": {"app": "p"}},
        "spec": {"containers": [{"name": "c", "image": "img:1"}]},
    })
}

#[test]
fn pods_are_bound_through_the_binding_subresource_only() {
    let s = Server::start().unwrap();
    let http = s.http();
    create(&http, PODS, &pod("b"));
    // spec.nodeName cannot be set by an update: a Pod's spec is immutable but for images.
    let r = http.patch(
        &format!("{PODS}/b"),
        "application/merge-patch+json",
        &json!({"spec": {"nodeName": "n1"}}),
    );
    let st = assert_status(&r, 422, "Invalid");
    assert_eq!(st["details"]["causes"][0]["field"], "spec");
    assert!(st["message"]
        .as_str()
        .unwrap()
        .contains("pod updates may not change fields"));
    let binding = json!({"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "b"},
                         "target": {"apiVersion": "v1", "kind": "Node", "name": "n1"}});
    let r = http.post_json(&format!("{PODS}/b/binding"), &binding);
    assert_eq!(r.status, 201, "{}", r.text());
    assert_eq!(r.json()["status"], "Success");
    let bound = get(&http, &format!("{PODS}/b"));
    assert_eq!(bound["spec"]["nodeName"], "n1");
    let scheduled = bound["status"]["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .any(|c| c["type"] == "PodScheduled" && c["status"] == "True");
    assert!(scheduled, "{bound}");
    // Once only.
    let again = http.post_json(&format!("{PODS}/b/binding"), &binding);
    let st = assert_status(&again, 409, "Conflict");
    assert!(st["message"]
        .as_str()
        .unwrap()
        .contains("is already assigned to node \"n1\""));
    // Only POST, only to a Node, only for pods.
    assert_status(
        &http.get(&format!("{PODS}/b/binding")),
        405,
        "MethodNotAllowed",
    );
    create(&http, PODS, &pod("c"));
    let mut to_svc = binding.clone();
    to_svc["metadata"]["name"] = json!("c");
    to_svc["target"]["kind"] = json!("Service");
    assert_status(
        &http.post_json(&format!("{PODS}/c/binding"), &to_svc),
        422,
        "Invalid",
    );
    assert_status(
        &http.post_json("/api/v1/namespaces/default/configmaps/x/binding", &binding),
        404,
        "NotFound",
    );
    // kubectl sees the subresource in discovery.
    let list = get(&http, "/api/v1");
    assert!(list["resources"]
        .as_array()
        .unwrap()
        .iter()
        .any(|r| r["name"] == "pods/binding" && r["kind"] == "Binding"));
    // The legacy collection `bindings` binds the Pod its Binding names, the same way.
    create(&http, PODS, &pod("d"));
    let mut legacy = binding.clone();
    legacy["metadata"]["name"] = json!("d");
    legacy["target"]["name"] = json!("n2");
    let r = http.post_json("/api/v1/namespaces/default/bindings", &legacy);
    assert_eq!(r.status, 201, "{}", r.text());
    assert_eq!(get(&http, &format!("{PODS}/d"))["spec"]["nodeName"], "n2");
    let again = http.post_json("/api/v1/namespaces/default/bindings", &legacy);
    assert_status(&again, 409, "Conflict");
    // A dry run binds nothing; a Binding for another namespace is refused.
    create(&http, PODS, &pod("e"));
    let mut dry = binding.clone();
    dry["metadata"]["name"] = json!("e");
    let r = http.post_json(&format!("{PODS}/e/binding?dryRun=All"), &dry);
    assert_eq!(r.status, 201, "{}", r.text());
    assert!(get(&http, &format!("{PODS}/e"))["spec"]["nodeName"].is_null());
    dry["metadata"]["namespace"] = json!("elsewhere");
    assert_status(
        &http.post_json(&format!("{PODS}/e/binding"), &dry),
        400,
        "BadRequest",
    );
    assert_status(
        &http.get("/api/v1/namespaces/default/bindings"),
        405,
        "MethodNotAllowed",
    );
    assert!(list["resources"]
        .as_array()
        .unwrap()
        .iter()
        .any(|r| r["name"] == "bindings" && r["verbs"] == json!(["create"])));
}

#[test]
fn status_subresource_separates_spec_and_status() {
    let s = Server::start().unwrap();
    let http = s.http();
    let p = create(&http, PODS, &pod("p"));
    assert_eq!(p["status"]["phase"], "Pending");
    let path = format!("{PODS}/p");

    // Main endpoint: status changes are ignored, the rest applies.
    let mut main = p.clone();
    main["status"]["phase"] = "Running".into();
    main["spec"]["containers"][0]["image"] = "img:2".into();
    let r = http.put_json(&path, &main);
    assert_eq!(r.status, 200, "{}", r.text());
    let after = get(&http, &path);
    assert_eq!(after["status"]["phase"], "Pending");
    assert_eq!(after["spec"]["containers"][0]["image"], "img:2");

    // PUT /status: status applies, spec does not; a Pod's labels do (kube's
    // `podStatusStrategy` keeps the request's metadata but its owner references).
    let mut st = after.clone();
    st["status"]["phase"] = "Running".into();
    st["spec"]["containers"][0]["image"] = "img:3".into();
    st["metadata"]["labels"]["app"] = "changed".into();
    let r = http.put_json(&format!("{path}/status"), &st);
    assert_eq!(r.status, 200, "{}", r.text());
    let after = get(&http, &path);
    assert_eq!(after["status"]["phase"], "Running");
    assert_eq!(after["spec"]["containers"][0]["image"], "img:2");
    assert_eq!(after["metadata"]["labels"]["app"], "changed");

    // PATCH /status: likewise.
    let r = http.patch(
        &format!("{path}/status"),
        "application/merge-patch+json",
        &json!({"status": {"phase": "Succeeded"}, "metadata": {"labels": {"app": "x"}}, "spec": {"nodeName": "n1"}}),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let after = get(&http, &path);
    assert_eq!(after["status"]["phase"], "Succeeded");
    assert_eq!(after["metadata"]["labels"]["app"], "x");
    assert!(after["spec"].get("nodeName").is_none(), "{after}");

    // Resources without a status subresource have no /status endpoint.
    create(&http, CMS, &configmap("c", &[], &[]));
    assert_eq!(http.get(&format!("{CMS}/c/status")).status, 404);
}

#[test]
fn generation_tracks_spec_changes_only() {
    let s = Server::start().unwrap();
    let http = s.http();
    let p = create(&http, PODS, &pod("g"));
    let path = format!("{PODS}/g");
    assert_eq!(p["metadata"]["generation"], 1);

    let r = http.patch(
        &path,
        "application/merge-patch+json",
        &json!({"metadata": {"labels": {"extra": "yes"}}}),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let after = r.json();
    assert_eq!(after["metadata"]["generation"], 1, "labels are not spec");
    assert!(rv(&after) > rv(&p));

    let mut changed = after.clone();
    changed["spec"]["containers"][0]["image"] = "img:2".into();
    let r = http.put_json(&path, &changed);
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["metadata"]["generation"], 2);

    let r = http.patch(
        &path,
        "application/strategic-merge-patch+json",
        &json!({"spec": {"containers": [{"name": "c", "image": "img:3"}]}}),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["metadata"]["generation"], 3);

    let r = http.patch(
        &format!("{path}/status"),
        "application/merge-patch+json",
        &json!({"status": {"phase": "Running"}}),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["metadata"]["generation"], 3, "status is not spec");
}

#[test]
fn exact_resource_version_reads_the_past() {
    let s = Server::start().unwrap();
    let http = s.http();
    let v1 = create(&http, CMS, &configmap("h", &[], &[("k", "old")]));
    let r = http.patch(
        &format!("{CMS}/h"),
        "application/merge-patch+json",
        &json!({"data": {"k": "new"}}),
    );
    assert_eq!(r.status, 200);
    create(&http, CMS, &configmap("later", &[], &[]));

    let old = get(
        &http,
        &format!(
            "{CMS}?resourceVersion={}&resourceVersionMatch=Exact",
            rv(&v1)
        ),
    );
    assert_eq!(rv(&old), rv(&v1));
    assert_eq!(item_names(&old), ["h"]);
    assert_eq!(old["items"][0]["data"]["k"], "old");
    assert_eq!(rv(&old["items"][0]), rv(&v1));

    let now = get(&http, CMS);
    assert_eq!(item_names(&now), ["h", "later"]);
    assert_eq!(now["items"][0]["data"]["k"], "new");
}

#[test]
fn list_at_future_resource_version_times_out() {
    let s = Server::start().unwrap();
    let http = s.http();
    let current = rv(&get(&http, CMS));
    let started = Instant::now();
    let r = http.get(&format!("{CMS}?resourceVersion={}", current + 1000));
    assert_status(&r, 504, "Timeout");
    assert!(
        started.elapsed() >= Duration::from_secs(1),
        "answered without waiting: {:?}",
        started.elapsed()
    );
}

#[test]
fn kinds_have_their_own_field_selectors() {
    let s = Server::start().unwrap();
    let http = s.http();
    create(&http, PODS, &pod("a"));
    create(&http, PODS, &pod("b"));
    let binding = json!({"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "a"},
                         "target": {"kind": "Node", "name": "n1"}});
    assert_eq!(
        http.post_json(&format!("{PODS}/a/binding"), &binding)
            .status,
        201
    );
    let names = |path: &str| -> Vec<String> {
        get(&http, path)["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|o| o["metadata"]["name"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(
        names(&format!("{PODS}?fieldSelector=spec.nodeName%3Dn1")),
        ["a"]
    );
    // A missing field compares as its zero value, as in kube.
    assert_eq!(
        names(&format!("{PODS}?fieldSelector=spec.nodeName%3D")),
        ["b"]
    );
    assert_eq!(
        names(&format!(
            "{PODS}?fieldSelector=status.phase%3DPending,spec.nodeName!%3Dn1"
        )),
        ["b"]
    );
    // Events by the object they are about (what kubectl describe asks for).
    let ev = |name: &str, about: &str| {
        json!({"apiVersion": "v1", "kind": "Event", "metadata": {"name": name},
               "involvedObject": {"kind": "Pod", "name": about, "namespace": "default"},
               "reason": "Scheduled", "type": "Normal", "source": {"component": "test"}})
    };
    let events = "/api/v1/namespaces/default/events";
    create(&http, events, &ev("e1", "a"));
    create(&http, events, &ev("e2", "b"));
    assert_eq!(
        names(&format!(
            "{events}?fieldSelector=involvedObject.name%3Da,involvedObject.kind%3DPod,source%3Dtest"
        )),
        ["e1"]
    );
    // The same Events through events.k8s.io, by its names (`regarding.*`, as kube maps them).
    let events_v1 = "/apis/events.k8s.io/v1/namespaces/default/events";
    assert_eq!(
        names(&format!(
            "{events_v1}?fieldSelector=regarding.name%3Db,regarding.kind%3DPod,type%3DNormal"
        )),
        ["e2"]
    );
    let r = http.get(&format!(
        "{events_v1}?fieldSelector=involvedObject.name%3Db"
    ));
    let st = assert_status(&r, 400, "BadRequest");
    assert_eq!(
        st["message"],
        "field label not supported: involvedObject.name"
    );
    // Other kinds keep only metadata.name and metadata.namespace.
    let r = http.get("/api/v1/namespaces/default/configmaps?fieldSelector=spec.nodeName%3Dn1");
    let st = assert_status(&r, 400, "BadRequest");
    assert_eq!(
        st["message"],
        r#""spec.nodeName" is not a known field selector: only "metadata.name", "metadata.namespace""#
    );
    // Kinds with a conversion of their own word it as kube's conversions do.
    let r = http.get("/api/v1/namespaces/default/pods?fieldSelector=spec.foo%3Dx");
    let st = assert_status(&r, 400, "BadRequest");
    assert_eq!(st["message"], "field label not supported: spec.foo");
    // kubectl uses them too.
    let out = s.kubectl_ok(&[
        "get",
        "pods",
        "--field-selector",
        "spec.nodeName=n1",
        "-o",
        "name",
    ]);
    assert_eq!(out.trim(), "pod/a");
}

/// kube's `AllowUnconditionalUpdate` and `AllowCreateOnUpdate`, per kind: a Lease must be
/// updated at a resourceVersion (422 naming the resource, as kube's store does) and is created
/// by a PUT to a name that does not exist (201), for a user allowed `create` too; a ConfigMap is
/// updated without one and a PUT to a missing one is 404.
#[test]
fn puts_follow_each_kinds_update_and_create_rules() {
    let s = Server::start().unwrap();
    let http = s.http();
    let leases = "/apis/coordination.k8s.io/v1/namespaces/default/leases";
    let lease = |name: &str| {
        json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
               "metadata": {"name": name}, "spec": {"holderIdentity": "a"}})
    };
    // Created by a PUT: 201, a real create (uid, resourceVersion).
    let r = http.put_json(&format!("{leases}/l1"), &lease("l1"));
    assert_eq!(r.status, 201, "{}", r.text());
    let created = r.json();
    assert!(created["metadata"]["uid"].is_string());
    assert!(rv(&created) > 0);
    // Updated without a resourceVersion: refused as kube refuses it.
    let r = http.put_json(&format!("{leases}/l1"), &lease("l1"));
    let st = assert_status(&r, 422, "Invalid");
    assert_eq!(
        st["message"],
        "leases.coordination.k8s.io \"l1\" is invalid: metadata.resourceVersion: Invalid value: 0: must be specified for an update"
    );
    assert_eq!(st["details"]["kind"], "leases");
    // With it: 200.
    let mut next = lease("l1");
    next["metadata"]["resourceVersion"] = created["metadata"]["resourceVersion"].clone();
    next["spec"]["holderIdentity"] = json!("b");
    let r = http.put_json(&format!("{leases}/l1"), &next);
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["spec"]["holderIdentity"], "b");

    // A ConfigMap: unconditional updates, no create on update.
    let r = http.put_json(&format!("{CMS}/absent"), &configmap("absent", &[], &[]));
    assert_status(&r, 404, "NotFound");
    create(&http, CMS, &configmap("c1", &[], &[("a", "1")]));
    let r = http.put_json(&format!("{CMS}/c1"), &configmap("c1", &[], &[("a", "2")]));
    assert_eq!(r.status, 200, "{}", r.text());

    // A user who may update and patch Leases but not create them gets 403 where a PUT or an
    // apply would create one (kube checks `create` too), and may still update.
    s.kubectl_ok(&[
        "create",
        "role",
        "lease-updater",
        "--verb=get,update,patch",
        "--resource=leases.coordination.k8s.io",
    ]);
    s.kubectl_ok(&[
        "create",
        "rolebinding",
        "lease-updater",
        "--role=lease-updater",
        "--user=updater",
    ]);
    let (_, token) = s.mint("updater", &[]).unwrap();
    let as_updater = s.http_with_token(Some(&token));
    let r = as_updater.put_json(&format!("{leases}/l2"), &lease("l2"));
    let st = assert_status(&r, 403, "Forbidden");
    assert!(
        st["message"]
            .as_str()
            .unwrap()
            .starts_with("leases.coordination.k8s.io \"l2\" is forbidden"),
        "{st}"
    );
    let r = as_updater.request(
        "PATCH",
        &format!("{leases}/l2?fieldManager=updater"),
        Some("application/apply-patch+yaml"),
        Some(lease("l2").to_string().into_bytes()),
    );
    assert_status(&r, 403, "Forbidden");
    assert_status(&http.get(&format!("{leases}/l2")), 404, "NotFound");
    let mut next = get(&http, &format!("{leases}/l1"));
    next["spec"]["holderIdentity"] = json!("c");
    let r = as_updater.put_json(&format!("{leases}/l1"), &next);
    assert_eq!(r.status, 200, "{}", r.text());
}

/// A patch's precondition is the patched object's resourceVersion, as kube's patcher takes it:
/// a merge patch naming a stale one, or a JSON patch replacing it with one, is 409; one that
/// empties it is unconditional.
#[test]
fn a_patched_resource_version_is_the_precondition() {
    let s = Server::start().unwrap();
    let http = s.http();
    let cm = create(&http, CMS, &configmap("p", &[], &[("a", "1")]));
    let path = format!("{CMS}/p");
    let stale = cm["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_owned();
    let r = http.patch(
        &path,
        "application/merge-patch+json",
        &json!({"data": {"a": "2"}}),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let r = http.patch(
        &path,
        "application/merge-patch+json",
        &json!({"metadata": {"resourceVersion": stale}, "data": {"a": "3"}}),
    );
    assert_status(&r, 409, "Conflict");
    let r = http.patch(
        &path,
        "application/json-patch+json",
        &json!([{"op": "replace", "path": "/metadata/resourceVersion", "value": stale},
                {"op": "replace", "path": "/data/a", "value": "4"}]),
    );
    assert_status(&r, 409, "Conflict");
    assert_eq!(get(&http, &path)["data"]["a"], "2");
    let r = http.patch(
        &path,
        "application/merge-patch+json",
        &json!({"metadata": {"resourceVersion": ""}, "data": {"a": "5"}}),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["data"]["a"], "5");
}

/// kube's table conversion refuses an `includeObject` it does not know.
#[test]
fn an_unknown_include_object_is_refused() {
    let s = Server::start().unwrap();
    let http = s.http();
    create(&http, CMS, &configmap("t", &[], &[]));
    let table = "application/json;as=Table;v=v1;g=meta.k8s.io";
    let r = http.request_with_accept(&format!("{CMS}?includeObject=Bogus"), table);
    let st = assert_status(&r, 400, "BadRequest");
    assert_eq!(st["message"], "unrecognized includeObject value: \"Bogus\"");
    let r = http.request_with_accept(&format!("{CMS}?includeObject=Object"), table);
    assert_eq!(r.status, 200, "{}", r.text());
}

/// Discovery as kube serves it: the root paths with or without a trailing slash (the clients
/// generated from kube's OpenAPI, Python's, send it), kube's storage version hashes, and no
/// collection delete of namespaces.
#[test]
fn discovery_details_as_kube() {
    let s = Server::start().unwrap();
    let http = s.http();
    for path in ["/version/", "/api/", "/apis/"] {
        assert_eq!(http.get(path).status, 200, "{path}");
    }
    let core = http.get("/api/v1").json();
    let entry = |name: &str| {
        core["resources"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["name"] == name)
            .cloned()
            .unwrap()
    };
    assert_eq!(entry("configmaps")["storageVersionHash"], "qFsyl6wFWjQ=");
    assert_eq!(entry("pods")["storageVersionHash"], "xPOwRZ+Yhw8=");
    let hpa_v1 = http.get("/apis/autoscaling/v1").json();
    assert_eq!(
        hpa_v1["resources"][0]["storageVersionHash"], "qwQve8ut294=",
        "stored as autoscaling/v2: {hpa_v1}"
    );
    let verbs = entry("namespaces")["verbs"].clone();
    assert!(
        !verbs
            .as_array()
            .unwrap()
            .contains(&json!("deletecollection")),
        "{verbs}"
    );
    let r = http.delete("/api/v1/namespaces?dryRun=All");
    assert_eq!(r.status, 405, "{}", r.text());
    // Controllers are read only; /version as kube 1.34's.
    let ours = http.get("/apis/turtles.dev/v1").json();
    assert_eq!(
        ours["resources"][0]["verbs"],
        json!(["get", "list", "watch"]),
        "{ours}"
    );
    let v = http.get("/version").json();
    assert_eq!(v["emulationMinor"], "34", "{v}");
    assert_eq!(v["minCompatibilityMinor"], "33", "{v}");
    assert!(!v["platform"].as_str().unwrap().contains("x86_64"), "{v}");
}

/// A list is written as the client reads it, and keeps its in-flight slot until written (as
/// kube holds the seat while its handler writes): a client that does not read cannot pile up
/// lists beyond the limit.
#[test]
fn an_unread_list_keeps_its_slot() {
    let s = Server::start().unwrap();
    let http = s.http();
    let big = "x".repeat(1_000_000);
    for i in 0..40 {
        let r = http.post_json(
            "/api/v1/namespaces/default/configmaps",
            &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": format!("big{i}")},
                "data": {"k": big}}),
        );
        assert_eq!(r.status, 201, "{}", r.text());
    }
    let reading = |n: usize| {
        let m = http.get("/metrics").text();
        m.contains(&format!(
            "turtles_api_inflight_requests{{request_kind=\"readOnly\"}} {n}\n"
        ))
    };
    // The metrics request counts itself.
    assert!(reading(1));
    let unread = http
        .client
        .get(format!(
            "{}/api/v1/namespaces/default/configmaps",
            http.base
        ))
        .send()
        .unwrap();
    assert_eq!(unread.status().as_u16(), 200);
    assert!(reading(2), "the unread list holds its slot");
    drop(unread);
    poll("the slot back", Duration::from_secs(20), || {
        reading(1).then_some(())
    })
    .unwrap();
}

/// Events expire after `--event-ttl` without a write (kube-apiserver's lease on each Event),
/// whichever API group wrote them; other kinds stay.
#[test]
fn events_expire_after_their_ttl() {
    let s = Server::start_with(&["--event-ttl", "1"]).unwrap();
    let http = s.http();
    let core = json!({"apiVersion": "v1", "kind": "Event", "metadata": {"name": "old"},
        "involvedObject": {"kind": "Pod", "name": "p", "namespace": "default"},
        "reason": "Scheduled", "type": "Normal"});
    let r = http.post_json("/api/v1/namespaces/default/events", &core);
    assert_eq!(r.status, 201, "{}", r.text());
    let v1 = json!({"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": "new"},
        "eventTime": "2026-01-01T00:00:00.000000Z", "reportingController": "x/y",
        "reportingInstance": "i", "action": "Schedule", "reason": "Scheduled", "type": "Normal",
        "regarding": {"kind": "Pod", "name": "p", "namespace": "default"}});
    let r = http.post_json("/apis/events.k8s.io/v1/namespaces/default/events", &v1);
    assert_eq!(r.status, 201, "{}", r.text());
    create(&http, CMS, &configmap("stays", &[], &[]));
    poll("the events expire", Duration::from_secs(20), || {
        let left = http.get("/api/v1/namespaces/default/events").json();
        left["items"].as_array()?.is_empty().then_some(())
    })
    .unwrap();
    assert_eq!(http.get(&format!("{CMS}/stays")).status, 200);
}

/// The health endpoints as kube's: named checks, `?verbose`, `?exclude=`, and each check at its
/// own path.
#[test]
fn health_endpoints_list_named_checks_as_kube_does() {
    let s = Server::start().unwrap();
    let http = s.http();
    poll("ready", Duration::from_secs(30), || {
        (http.get("/readyz").status == 200).then_some(())
    })
    .unwrap();
    let lists: [(&str, &[&str]); 3] = [
        ("healthz", &["ping", "log", "etcd"]),
        ("livez", &["ping", "log", "etcd"]),
        (
            "readyz",
            &[
                "ping",
                "log",
                "etcd",
                "storage",
                "wasm-admission-policies-synced",
                "shutdown",
            ],
        ),
    ];
    for (name, checks) in lists {
        let path = format!("/{name}");
        let r = http.get(&path);
        assert_eq!((r.status, r.text()), (200, "ok".to_owned()));
        assert_eq!(r.headers["content-type"], "text/plain; charset=utf-8");
        assert_eq!(r.headers["x-content-type-options"], "nosniff");
        let r = http.get(&format!("{path}?verbose"));
        let mut want: String = checks.iter().map(|c| format!("[+]{c} ok\n")).collect();
        want.push_str(&format!("{name} check passed\n"));
        assert_eq!((r.status, r.text()), (200, want));
        let r = http.get(&format!(
            "{path}?verbose=false&exclude=ping&exclude=nope&exclude=a%22b"
        ));
        let text = r.text();
        assert_eq!(r.status, 200, "{text}");
        assert!(
            text.starts_with("[+]ping excluded: ok\n[+]log ok\n"),
            "{text}"
        );
        assert!(
            text.ends_with(&format!(
                "warn: some health checks cannot be excluded: no matches for \"a\\\"b\",\"nope\"\n{name} check passed\n"
            )),
            "{text}"
        );
        for c in checks {
            let r = http.get(&format!("{path}/{c}"));
            assert_eq!((r.status, r.text()), (200, "ok".to_owned()), "{path}/{c}");
        }
        assert_eq!(http.get(&format!("{path}/nope")).status, 404);
    }
    assert_eq!(http.get("/livez/storage").status, 404);
    let anon = s.http_with_token(None);
    assert_eq!(anon.get("/livez?verbose").status, 200);
}

/// A body may be YAML (`Content-Type: application/yaml`), as kube's serializers take it.
#[test]
fn yaml_bodies_are_taken() {
    let s = Server::start().unwrap();
    let http = s.http();
    let post = |body: &str| {
        http.client
            .post(format!("{}{CMS}", http.base))
            .header("Content-Type", "application/yaml")
            .body(body.to_owned())
            .send()
            .unwrap()
    };
    let r =
        post("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: from-yaml\ndata:\n  n: \"1\"\n");
    assert_eq!(r.status().as_u16(), 201);
    let stored = http.get(&format!("{CMS}/from-yaml")).json();
    assert_eq!(stored["data"]["n"], "1", "{stored}");
    let r = post("- not\n- a mapping\n");
    assert_eq!(r.status().as_u16(), 400);
    let r = post("a: &x [1,2]\nb: *x\nc: [");
    assert_eq!(r.status().as_u16(), 400);
}

/// kube's answer to a continue token older than the history: 410 Expired, with a fresh token in
/// the Status's `metadata.continue` that goes on from the same key at the latest revision (what
/// the message tells the client to use).
#[test]
fn an_expired_continue_carries_a_fresh_token() {
    let s = Server::start_with(&["--watch-history", "5"]).unwrap();
    let http = s.http();
    let cms = "/api/v1/namespaces/default/configmaps";
    for name in ["a", "b", "c"] {
        create(
            &http,
            cms,
            &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}}),
        );
    }
    let first = get(&http, &format!("{cms}?limit=1"));
    let token = first["metadata"]["continue"].as_str().unwrap().to_owned();
    for i in 0..10 {
        create(
            &http,
            cms,
            &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": format!("z{i}")}}),
        );
    }
    let r = http.get(&format!("{cms}?limit=1&continue={token}"));
    let st = assert_status(&r, 410, "Expired");
    let fresh = st["metadata"]["continue"]
        .as_str()
        .unwrap_or_else(|| panic!("no fresh token: {st}"))
        .to_owned();
    let next = get(&http, &format!("{cms}?limit=100&continue={fresh}"));
    let names: Vec<&str> = next["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|i| i["metadata"]["name"].as_str())
        .collect();
    assert_eq!(names.first().copied(), Some("b"), "{next}");
    assert!(names.contains(&"z9"), "{next}");
}

/// Go's server decodes the request path before kube reads it (`req.URL.Path`): a name a client
/// percent-encodes (the Python client escapes `:`, client-go spaces and non-ASCII) is that name,
/// read, deleted and reported decoded; an escape Go cannot decode is a 400.
#[test]
fn percent_encoded_names_are_read_decoded() {
    let s = Server::start().unwrap();
    let http = s.http();
    let roles = "/apis/rbac.authorization.k8s.io/v1/clusterroles";
    let role = get(&http, &format!("{roles}/system%3Anode"));
    assert_eq!(role["metadata"]["name"], "system:node");
    create(&http, CMS, &configmap("rv", &[], &[]));
    assert_eq!(get(&http, &format!("{CMS}/r%76"))["metadata"]["name"], "rv");
    for (name, escaped) in [("weird role", "weird%20role"), ("rôle", "r%C3%B4le")] {
        create(
            &http,
            roles,
            &json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                    "metadata": {"name": name}, "rules": []}),
        );
        let path = format!("{roles}/{escaped}");
        assert_eq!(get(&http, &path)["metadata"]["name"], name);
        let r = http.delete(&path);
        assert_eq!(r.status, 200, "DELETE {path}: {}", r.text());
        let st = assert_status(&http.get(&path), 404, "NotFound");
        assert_eq!(
            st["message"],
            format!("clusterroles.rbac.authorization.k8s.io \"{name}\" not found")
        );
        assert_eq!(st["details"]["name"], name);
    }
    let st = assert_status(&http.get(&format!("{CMS}/%zz")), 400, "BadRequest");
    assert_eq!(st["message"], "invalid URL escape \"%zz\"");
}

/// Go decodes a `null` in a `map[string]string` as `""` (the element's zero value), so kube
/// stores `""`: `-l a=` selects the object, and a Deployment whose selector and template both
/// say `v: null` is created.
#[test]
fn null_string_map_values_are_stored_empty() {
    let s = Server::start().unwrap();
    let http = s.http();
    let cm = create(
        &http,
        CMS,
        &json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "nulls", "labels": {"a": null}, "annotations": {"n": null}},
                "data": {"k": null}}),
    );
    assert_eq!(cm["metadata"]["labels"], json!({"a": ""}), "{cm}");
    assert_eq!(cm["metadata"]["annotations"], json!({"n": ""}), "{cm}");
    assert_eq!(cm["data"], json!({"k": ""}), "{cm}");
    let list = get(&http, &format!("{CMS}?labelSelector=a%3D"));
    assert_eq!(item_names(&list), ["nulls"]);
    let dep = create(
        &http,
        "/apis/apps/v1/namespaces/default/deployments",
        &json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "nulls"},
                "spec": {"selector": {"matchLabels": {"app": "nulls", "v": null}},
                         "template": {"metadata": {"labels": {"app": "nulls", "v": null}},
                                      "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}}),
    );
    assert_eq!(
        dep["spec"]["selector"]["matchLabels"],
        json!({"app": "nulls", "v": ""})
    );
}

/// `metav1.Time` and `MicroTime` fields are read as kube reads them (Go's `time.Parse` with
/// RFC 3339, or with exactly six fraction digits for a `MicroTime`) and written back as kube
/// writes them: in UTC, whole seconds for a `Time`, six digits for a `MicroTime`. A bad one is
/// kube's 400 and nothing is stored, `metadata.managedFields[].time` of any kind included, so
/// typed clients (`kubectl describe`) keep reading every object of the kind.
#[test]
fn time_fields_are_parsed_and_written_as_kube_writes_them() {
    let s = Server::start().unwrap();
    let http = s.http();
    let micro = "\"2006-01-02T15:04:05.000000Z07:00\"";
    let rfc3339 = "\"2006-01-02T15:04:05Z07:00\"";
    let leases = "/apis/coordination.k8s.io/v1/namespaces/default/leases";
    let lease = |name: &str, renew: &str| {
        json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
               "metadata": {"name": name}, "spec": {"holderIdentity": "a", "renewTime": renew}})
    };
    let created = create(
        &http,
        leases,
        &lease("t1", "2026-12-06T21:00:00.123456+02:00"),
    );
    assert_eq!(created["spec"]["renewTime"], "2026-12-06T19:00:00.123456Z");
    for (renew, rest, elem) in [
        ("garbage", "garbage", "2006"),
        ("2026-12-06T21:00:00Z", "Z", ".000000"),
        ("2026-12-06T21:00:00.5Z", ".5Z", ".000000"),
        ("2026-12-06T21:00:00.123456789Z", "789Z", "Z07:00"),
    ] {
        let r = http.post_json(leases, &lease("t2", renew));
        let st = assert_status(&r, 400, "BadRequest");
        assert_eq!(
            st["message"],
            format!(
                "Lease in version \"v1\" cannot be handled as a Lease: parsing time \"{renew}\" as {micro}: cannot parse \"{rest}\" as \"{elem}\""
            )
        );
    }
    assert_status(&http.get(&format!("{leases}/t2")), 404, "NotFound");

    // A core Event's `Time`s: whole seconds in UTC; a bad one refused.
    let events = "/api/v1/namespaces/default/events";
    let event = |name: &str, first: &str| {
        json!({"apiVersion": "v1", "kind": "Event", "metadata": {"name": name},
               "involvedObject": {"kind": "ConfigMap", "name": "c", "namespace": "default"},
               "reason": "R", "message": "m", "type": "Normal",
               "firstTimestamp": first, "lastTimestamp": "2026-12-06T10:00:01.987654Z"})
    };
    let ev = create(&http, events, &event("e1", "2026-12-06T10:00:00.5+01:00"));
    assert_eq!(ev["firstTimestamp"], "2026-12-06T09:00:00Z", "{ev}");
    assert_eq!(ev["lastTimestamp"], "2026-12-06T10:00:01Z", "{ev}");
    let st = assert_status(
        &http.post_json(events, &event("e2", "garbage")),
        400,
        "BadRequest",
    );
    assert_eq!(
        st["message"],
        format!(
            "Event in version \"v1\" cannot be handled as a Event: parsing time \"garbage\" as {rfc3339}: cannot parse \"garbage\" as \"2006\""
        )
    );
    // An events.k8s.io Event's `eventTime` is a `MicroTime`.
    let v1_events = "/apis/events.k8s.io/v1/namespaces/default/events";
    let v1_event = |name: &str, at: &str| {
        json!({"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": name},
               "eventTime": at, "reportingController": "x/y", "reportingInstance": "i",
               "action": "Do", "reason": "R", "type": "Normal",
               "regarding": {"kind": "ConfigMap", "name": "c", "namespace": "default"}})
    };
    let ev = create(
        &http,
        v1_events,
        &v1_event("e3", "2026-12-06T10:00:00.500000+01:00"),
    );
    assert_eq!(ev["eventTime"], "2026-12-06T09:00:00.500000Z", "{ev}");
    let st = assert_status(
        &http.post_json(v1_events, &v1_event("e4", "2026-12-06T10:00:00Z")),
        400,
        "BadRequest",
    );
    assert_eq!(
        st["message"],
        format!(
            "Event in version \"v1\" cannot be handled as a Event: parsing time \"2026-12-06T10:00:00Z\" as {micro}: cannot parse \"Z\" as \".000000\""
        )
    );

    // `managedFields` a PUT carries (as the Python client's read-modify-replace sends them):
    // read as kube reads them, on any kind.
    create(&http, CMS, &configmap("mfpoison", &[], &[("a", "b")]));
    let mut cm = get(&http, &format!("{CMS}/mfpoison"));
    let entry = |time: &str| {
        json!([{"manager": "m", "operation": "Update", "apiVersion": "v1", "time": time,
                "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {"f:a": {}}}}])
    };
    cm["metadata"]["managedFields"] = entry("garbage");
    let st = assert_status(
        &http.put_json(&format!("{CMS}/mfpoison"), &cm),
        400,
        "BadRequest",
    );
    assert_eq!(
        st["message"],
        format!(
            "ConfigMap in version \"v1\" cannot be handled as a ConfigMap: parsing time \"garbage\" as {rfc3339}: cannot parse \"garbage\" as \"2006\""
        )
    );
    cm["metadata"]["managedFields"] = entry("2026-12-06T22:02:18+00:00");
    let r = http.put_json(&format!("{CMS}/mfpoison"), &cm);
    assert_eq!(r.status, 200, "{}", r.text());
    let got = get(&http, &format!("{CMS}/mfpoison"));
    assert_eq!(
        got["metadata"]["managedFields"][0]["time"], "2026-12-06T22:02:18Z",
        "{got}"
    );
    // kubectl's typed decoding reads them all.
    s.kubectl_ok(&["describe", "configmap", "mfpoison"]);
    s.kubectl_ok(&["describe", "lease", "t1"]);
    s.kubectl_ok(&["get", "events"]);
}

/// A get at a `resourceVersion` the store has not reached waits for it as a list does, then
/// answers kube's 504 (`Too large resource version`, `Retry-After: 1`); at one it has, the
/// object. Its `resourceVersionMatch` is ignored, as kube's `GetOptions` has none.
#[test]
fn a_get_at_a_future_resource_version_times_out() {
    let s = Server::start().unwrap();
    let http = s.http();
    let created = create(&http, CMS, &configmap("future", &[], &[]));
    let at = rv(&created);
    let far = at + 1_000_000;
    let start = Instant::now();
    let r = http.get(&format!("{CMS}/future?resourceVersion={far}"));
    let st = assert_status(&r, 504, "Timeout");
    assert!(
        start.elapsed() >= Duration::from_secs(2),
        "answered after {:?}",
        start.elapsed()
    );
    let message = st["message"].as_str().unwrap();
    assert!(
        message.starts_with(&format!(
            "Timeout: Too large resource version: {far}, current: "
        )),
        "{st}"
    );
    assert_eq!(
        st["details"]["causes"][0]["reason"], "ResourceVersionTooLarge",
        "{st}"
    );
    assert_eq!(st["details"]["retryAfterSeconds"], 1, "{st}");
    assert_eq!(
        r.headers.get("retry-after").and_then(|v| v.to_str().ok()),
        Some("1")
    );
    for query in [
        format!("resourceVersion={at}"),
        "resourceVersion=0".to_owned(),
        format!("resourceVersion={at}&resourceVersionMatch=Exact"),
        "resourceVersionMatch=Bogus".to_owned(),
    ] {
        let o = get(&http, &format!("{CMS}/future?{query}"));
        assert_eq!(o["metadata"]["name"], "future", "{query}");
    }
    // Not a uint64: kube's versioner error, a 500 without a reason.
    let r = http.get(&format!("{CMS}/future?resourceVersion=abc"));
    assert_eq!(r.status, 500, "{}", r.text());
    let st = r.json();
    assert_eq!(
        st["message"],
        "resourceVersion: Invalid value: \"abc\": strconv.ParseUint: parsing \"abc\": invalid syntax"
    );
    assert!(st.get("reason").is_none(), "{st}");
}

/// kube's content negotiation: a PartialObjectMetadataList of one object, or a
/// PartialObjectMetadata of a list, is a 406; Tables and metadata are written in the
/// `meta.k8s.io` version asked for, `v1beta1` included.
#[test]
fn mismatched_metadata_requests_are_not_acceptable() {
    let s = Server::start().unwrap();
    let http = s.http();
    create(&http, CMS, &configmap("meta", &[], &[]));
    let as_ = |kind: &str, v: &str| format!("application/json;as={kind};g=meta.k8s.io;v={v}");
    let r = http.request_with_accept(
        &format!("{CMS}/meta"),
        &as_("PartialObjectMetadataList", "v1"),
    );
    let st = assert_status(&r, 406, "NotAcceptable");
    assert_eq!(
        st["message"],
        "you requested PartialObjectMetadataList, but the requested object is not a list (*core.ConfigMap)"
    );
    let r = http.request_with_accept(CMS, &as_("PartialObjectMetadata", "v1"));
    let st = assert_status(&r, 406, "NotAcceptable");
    assert_eq!(
        st["message"],
        "you requested PartialObjectMetadata, but the requested object is a list (*core.ConfigMapList)"
    );
    let v1beta1 = "meta.k8s.io/v1beta1";
    let t = http
        .request_with_accept(&format!("{CMS}/meta"), &as_("Table", "v1beta1"))
        .json();
    assert_eq!(
        (&t["kind"], &t["apiVersion"]),
        (&json!("Table"), &json!(v1beta1))
    );
    assert_eq!(t["rows"][0]["object"]["apiVersion"], v1beta1, "{t}");
    let t = http
        .request_with_accept(CMS, &as_("Table", "v1beta1"))
        .json();
    assert_eq!(t["apiVersion"], v1beta1, "{t}");
    assert!(!t["rows"].as_array().unwrap().is_empty(), "{t}");
    for row in t["rows"].as_array().unwrap() {
        assert_eq!(row["object"]["apiVersion"], v1beta1, "{t}");
    }
    let l = http
        .request_with_accept(CMS, &as_("PartialObjectMetadataList", "v1beta1"))
        .json();
    assert_eq!(l["apiVersion"], v1beta1, "{l}");
    assert_eq!(l["items"][0]["apiVersion"], v1beta1, "{l}");
}

/// kube's output negotiation beyond JSON: `Accept: application/yaml` answers a get, a list and
/// a Table as kube's YAML serializer writes them (sigs.k8s.io/yaml over go-yaml v2: keys
/// sorted, strings quoted only where they would read back as another type), which read back as
/// the JSON answer's object; an error is a YAML `Status`; a watch is kube's 406 naming the
/// streaming types (YAML has no stream serializer), itself written as YAML; `q` orders the
/// alternatives (goautoneg); an `Accept` nothing fits is kube's 406, written as `WriteRawJSON`
/// writes it (indented).
#[test]
fn yaml_and_q_values_are_negotiated_as_kube_does() {
    let s = Server::start().unwrap();
    let http = s.http();
    create(
        &http,
        CMS,
        &configmap(
            "yaml",
            &[("app", "web")],
            &[("count", "1"), ("flag", "true"), ("multi", "a\nb\n")],
        ),
    );
    let one = format!("{CMS}/yaml");
    let content_type = |r: &turtles_tests::Reply| {
        r.headers
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_owned()
    };
    let from_yaml = |text: &str| -> Value {
        serde_yaml::from_str(text).unwrap_or_else(|e| panic!("not YAML ({e}):\n{text}"))
    };

    // One object: YAML that reads back as the JSON get's object.
    let json = get(&http, &one);
    let r = http.request_with_accept(&one, "application/yaml");
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(content_type(&r), "application/yaml");
    let text = r.text();
    assert!(text.starts_with("apiVersion: v1\ndata:\n"), "{text}");
    assert!(
        text.contains("\n  count: \"1\"\n  flag: \"true\"\n  multi: |\n    a\n    b\nkind: ConfigMap\nmetadata:\n"),
        "{text}"
    );
    assert_eq!(from_yaml(&text), json);

    // A list, and a Table of it.
    let r = http.request_with_accept(CMS, "application/yaml");
    assert_eq!(
        (r.status, content_type(&r).as_str()),
        (200, "application/yaml")
    );
    let list = from_yaml(&r.text());
    assert_eq!(list["kind"], "ConfigMapList", "{list}");
    let item = list["items"]
        .as_array()
        .and_then(|items| items.iter().find(|i| i["metadata"]["name"] == "yaml"))
        .unwrap_or_else(|| panic!("no item: {list}"));
    assert_eq!(*item, json);
    let r = http.request_with_accept(CMS, "application/yaml;as=Table;g=meta.k8s.io;v=v1");
    assert_eq!(
        (r.status, content_type(&r).as_str()),
        (200, "application/yaml")
    );
    let table = from_yaml(&r.text());
    assert_eq!(
        (&table["kind"], &table["apiVersion"]),
        (&json!("Table"), &json!("meta.k8s.io/v1"))
    );

    // A 404 is a YAML Status.
    let r = http.request_with_accept(&format!("{CMS}/missing"), "application/yaml");
    assert_eq!(r.status, 404, "{}", r.text());
    assert_eq!(content_type(&r), "application/yaml");
    assert_eq!(
        r.text(),
        "apiVersion: v1\ncode: 404\ndetails:\n  kind: configmaps\n  name: missing\nkind: Status\nmessage: configmaps \"missing\" not found\nmetadata: {}\nreason: NotFound\nstatus: Failure\n"
    );

    // A watch: YAML has no stream serializer, kube's 406 (in YAML, as the error is negotiated).
    let r = http.request_with_accept(&format!("{CMS}?watch=true"), "application/yaml");
    assert_eq!(r.status, 406, "{}", r.text());
    assert_eq!(content_type(&r), "application/yaml");
    let st = from_yaml(&r.text());
    assert_eq!(
        (&st["kind"], &st["reason"]),
        (&json!("Status"), &json!("NotAcceptable"))
    );
    assert_eq!(
        st["message"],
        "only the following media types are accepted: application/json;stream=watch, application/vnd.kubernetes.protobuf;stream=watch"
    );
    // The first alternative that fits decides: YAML before JSON is still a 406 for a watch.
    let r = http.request_with_accept(
        &format!("{CMS}?watch=true"),
        "application/yaml, application/json",
    );
    assert_eq!(r.status, 406, "{}", r.text());

    // q-values: the higher q wins, whatever the order.
    let r = http.request_with_accept(&one, "application/json;q=0.5, application/yaml");
    assert_eq!(
        (r.status, content_type(&r).as_str()),
        (200, "application/yaml")
    );
    let r = http.request_with_accept(&one, "application/yaml;q=0.5, application/json");
    assert_eq!(
        (r.status, content_type(&r).as_str()),
        (200, "application/json")
    );
    assert_eq!(r.json(), json);
    // q=0 is last, not refused (goautoneg only sorts).
    let r = http.request_with_accept(&one, "text/html, application/yaml;q=0");
    assert_eq!(
        (r.status, content_type(&r).as_str()),
        (200, "application/yaml")
    );

    // Nothing fits: 406, the Status indented (kube's `WriteRawJSON`).
    let r = http.request_with_accept(&one, "text/html");
    assert_eq!(r.status, 406, "{}", r.text());
    assert_eq!(content_type(&r), "application/json");
    assert!(
        r.text().starts_with("{\n  \"kind\": \"Status\",\n"),
        "{}",
        r.text()
    );
    let st = r.json();
    assert_eq!(st["reason"], "NotAcceptable");
    assert_eq!(
        st["message"],
        "only the following media types are accepted: application/json, application/yaml, application/vnd.kubernetes.protobuf"
    );
    // ... before a write is made.
    let r = http
        .client
        .post(format!("{}{CMS}", http.base))
        .header("Accept", "text/html")
        .header("Content-Type", "application/json")
        .body(serde_json::to_vec(&configmap("refused", &[], &[])).unwrap())
        .send()
        .unwrap();
    assert_eq!(r.status().as_u16(), 406);
    assert_eq!(http.get(&format!("{CMS}/refused")).status, 404);
}

/// kube's `WithCacheControl`: every answer is `Cache-Control: no-cache, private` unless its
/// handler set one (a get, a list, a 404, an unauthenticated 401); aggregated discovery is
/// `public`, with an `ETag` that an `If-None-Match` of it turns into a bodiless 304
/// (`ServeHTTPWithETag`).
#[test]
fn cache_control_and_discovery_etags_are_kubes() {
    let s = Server::start().unwrap();
    let http = s.http();
    create(&http, CMS, &configmap("cached", &[], &[("a", "b")]));
    for path in [
        format!("{CMS}/cached"),
        CMS.to_owned(),
        format!("{CMS}/missing"),
        "/version".to_owned(),
        "/apis".to_owned(),
    ] {
        let r = http.get(&path);
        assert_eq!(
            r.headers.get("cache-control").and_then(|v| v.to_str().ok()),
            Some("no-cache, private"),
            "{path}: {:?}",
            r.headers
        );
    }
    let r = s.http_with_token(None).get(CMS);
    assert_eq!(r.status, 401, "{}", r.text());
    assert_eq!(r.headers["cache-control"], "no-cache, private");

    let aggregated = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";
    for path in ["/api", "/apis"] {
        let r = http.request_with_accept(path, aggregated);
        assert_eq!(r.status, 200, "{path}: {}", r.text());
        assert_eq!(r.headers["cache-control"], "public", "{path}");
        assert_eq!(r.headers["vary"], "Accept", "{path}");
        let etag = r.headers["etag"].to_str().unwrap().to_owned();
        // A quoted SHA-512 in upper-case hex.
        assert_eq!(etag.len(), 130, "{etag}");
        assert!(etag.starts_with('"') && etag.ends_with('"'), "{etag}");
        assert!(
            etag[1..129]
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'A'..=b'F').contains(&b)),
            "{etag}"
        );
        let again = http.request_with_accept(path, aggregated);
        assert_eq!(again.headers["etag"], etag.as_str(), "{path}");
        let cached = |tag: &str| {
            http.client
                .get(format!("{}{path}", http.base))
                .header("Accept", aggregated)
                .header("If-None-Match", tag)
                .send()
                .unwrap()
        };
        let hit = cached(&etag);
        assert_eq!(hit.status().as_u16(), 304, "{path}");
        assert_eq!(hit.headers()["etag"], etag.as_str());
        assert_eq!(hit.headers()["cache-control"], "public");
        assert!(hit.bytes().unwrap().is_empty());
        let miss = cached("\"stale\"");
        assert_eq!(miss.status().as_u16(), 200, "{path}");
        assert_eq!(miss.headers()["etag"], etag.as_str());
    }
}

/// A JSON patch as kube's patcher applies it (json-patch v4, `jsonPatcher.applyJSPatch`): an
/// operation that does not apply, however it fails (no `path` or `from`, an unknown `op`, a
/// failed `test`, a `remove` of nothing), is kube's generic 422, which does not say why; one
/// without `value` puts `null` there (a ConfigMap's `""`), and a `replace` of a key the map
/// lacks adds it; operations that are no objects, or whose `path` is no string, are a 400 in
/// Go's words before any is applied. Nothing refused is stored.
#[test]
fn json_patch_failures_are_answered_as_kube_answers_them() {
    let s = Server::start().unwrap();
    let http = s.http();
    create(&http, CMS, &configmap("jp", &[], &[("a", "1")]));
    let path = format!("{CMS}/jp");
    let patch = |query: &str, ops: Value| {
        http.patch(
            &format!("{path}{query}"),
            "application/json-patch+json",
            &ops,
        )
    };
    for ops in [
        json!([{"op": "add", "value": 1}]),
        json!([{"op": "replace", "path": "/data/a", "value": "2"}, {"op": "remove"}]),
        json!([{"op": "move", "path": "/data/b"}]),
        json!([{"op": "bogus", "path": "/data/a"}]),
        json!([{"op": "test", "path": "/data/a", "value": "9"}]),
        json!([{"op": "remove", "path": "/data/nope"}]),
    ] {
        let r = patch("", ops.clone());
        let st = assert_status(&r, 422, "Invalid");
        assert_eq!(
            st["message"], "the server rejected our request due to an error in our request",
            "{ops}"
        );
        assert_eq!(st["details"], json!({}), "{ops}");
    }
    assert_eq!(get(&http, &path)["data"], json!({"a": "1"}));
    for (query, ops, message) in [
        (
            "",
            json!([1]),
            "error decoding patch: json: cannot unmarshal number into Go value of type handlers.jsonPatchOp",
        ),
        (
            "",
            json!([{"op": "add", "path": 5, "value": "x"}]),
            "error decoding patch: json: cannot unmarshal number into Go struct field jsonPatchOp.path of type string",
        ),
        (
            "?fieldValidation=Ignore",
            json!({"op": "add", "path": "/data/b", "value": "x"}),
            "json: cannot unmarshal object into Go value of type jsonpatch.Patch",
        ),
    ] {
        let r = patch(query, ops.clone());
        let st = assert_status(&r, 400, "BadRequest");
        assert_eq!(st["message"], message, "{ops}");
    }
    assert_eq!(get(&http, &path)["data"], json!({"a": "1"}));
    let r = patch(
        "",
        json!([{"op": "add", "path": "/data/b"},
               {"op": "replace", "path": "/data/c", "value": "3"}]),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["data"], json!({"a": "1", "b": "", "c": "3"}));
}

/// Continue tokens are kube's (`storage.EncodeContinue`): base64url of
/// `{"v":"meta.k8s.io/v1","rv":N,"start":KEY}`, `KEY` the last key returned and a NUL,
/// relative to the list's prefix (the name in a namespace's list or a cluster-scoped one,
/// `NS/NAME` across namespaces); the pages of each are the list at the first page's revision;
/// a token kube cannot honour is its 400 in its words (`storage.DecodeContinue`).
#[test]
fn continue_tokens_are_kubes() {
    use base64::Engine;
    let s = Server::start().unwrap();
    let http = s.http();
    for name in ["a", "b", "c"] {
        create(&http, CMS, &configmap(name, &[], &[]));
    }
    let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let first = get(&http, &format!("{CMS}?limit=1"));
    let token = first["metadata"]["continue"].as_str().unwrap().to_owned();
    let decoded: Value = serde_json::from_slice(&b64.decode(&token).unwrap()).unwrap();
    // (With turtles' count of what follows, which kube's decoder does not look at.)
    assert_eq!(decoded["v"], "meta.k8s.io/v1");
    assert_eq!(decoded["rv"], rv(&first));
    assert_eq!(decoded["start"], "a\u{0}");
    let key = |item: &Value| {
        format!(
            "{}/{}",
            item["metadata"]["namespace"].as_str().unwrap_or(""),
            item["metadata"]["name"].as_str().unwrap_or("")
        )
    };
    for (list, prefix) in [
        (CMS, "default/"),
        ("/api/v1/configmaps", ""),
        ("/api/v1/namespaces", "/"),
    ] {
        let page = get(&http, &format!("{list}?limit=1"));
        let at = rv(&page);
        let whole = get(
            &http,
            &format!("{list}?resourceVersion={at}&resourceVersionMatch=Exact"),
        );
        let want: Vec<String> = whole["items"].as_array().unwrap().iter().map(key).collect();
        let mut keys = Vec::new();
        let mut page = page;
        loop {
            assert_eq!(rv(&page), at, "{list}");
            let items = page["items"].as_array().unwrap();
            keys.extend(items.iter().map(key));
            let Some(token) = page["metadata"]["continue"]
                .as_str()
                .filter(|t| !t.is_empty())
            else {
                break;
            };
            let decoded: Value = serde_json::from_slice(&b64.decode(token).unwrap()).unwrap();
            let last = keys.last().unwrap();
            assert_eq!(
                decoded["start"],
                format!("{}\u{0}", last.strip_prefix(prefix).unwrap()),
                "{list}"
            );
            assert!(keys.len() <= want.len(), "{list}: {keys:?}");
            page = get(&http, &format!("{list}?limit=1&continue={token}"));
        }
        assert_eq!(keys, want, "{list}");
    }
    let now = rv(&get(&http, CMS));
    let forged = |token: Value| b64.encode(token.to_string());
    for (token, why) in [
        ("a*b".to_owned(), "illegal base64 data at input byte 1"),
        (
            forged(json!({"v": "meta.k8s.io/v2", "rv": now, "start": "a"})),
            "server does not recognize this encoded version meta.k8s.io/v2",
        ),
        (
            forged(json!({"v": "meta.k8s.io/v1", "rv": 0, "start": "a"})),
            "incorrect encoded start resourceVersion (version meta.k8s.io/v1)",
        ),
        (
            forged(json!({"v": "meta.k8s.io/v1", "rv": now, "start": ""})),
            "encoded start key empty (version meta.k8s.io/v1)",
        ),
        (
            forged(json!({"v": "meta.k8s.io/v1", "rv": now, "start": "../kube-system/x"})),
            "../kube-system/x",
        ),
        (
            forged(json!({"v": "meta.k8s.io/v1", "rv": "1", "start": "a"})),
            "json: cannot unmarshal string into Go struct field continueToken.rv of type int64",
        ),
    ] {
        let r = http.get(&format!("{CMS}?limit=1&continue={token}"));
        let st = assert_status(&r, 400, "BadRequest");
        assert_eq!(
            st["message"],
            format!("invalid continue token: continue key is not valid: {why}"),
            "{token}"
        );
    }
}

/// A `resourceVersion` kube's versioner cannot parse (`strconv.ParseUint`): a list's is its
/// storage's 400 (`ValidateListOptions`: `invalid resource version: ...`), a get's and a
/// watch's the storage error as it is, which kube answers as a 500 without a reason; and a
/// `resourceVersionMatch` without a `resourceVersion` is `ValidateListOptions`' 422.
#[test]
fn unparsable_resource_versions_are_answered_as_kube_answers_them() {
    let s = Server::start().unwrap();
    let http = s.http();
    create(&http, CMS, &configmap("rv", &[], &[]));
    let invalid = r#"resourceVersion: Invalid value: "abc": strconv.ParseUint: parsing "abc": invalid syntax"#;
    let r = http.get(&format!("{CMS}?resourceVersion=abc"));
    let st = assert_status(&r, 400, "BadRequest");
    assert_eq!(
        st["message"],
        format!("invalid resource version: {invalid}")
    );
    let r = http.get(&format!(
        "{CMS}?resourceVersion=abc&resourceVersionMatch=NotOlderThan&limit=1"
    ));
    let st = assert_status(&r, 400, "BadRequest");
    assert_eq!(
        st["message"],
        format!("invalid resource version: {invalid}")
    );
    for path in [
        format!("{CMS}/rv?resourceVersion=abc"),
        format!("{CMS}?watch=true&resourceVersion=abc"),
        "/api/v1/watch/namespaces/default/configmaps/rv?resourceVersion=abc".to_owned(),
    ] {
        let r = http.get(&path);
        assert_eq!(r.status, 500, "{path}: {}", r.text());
        let st = r.json();
        assert_eq!(
            (&st["kind"], &st["code"]),
            (&json!("Status"), &json!(500)),
            "{st}"
        );
        assert_eq!(st["message"], invalid, "{path}");
        assert!(st.get("reason").is_none(), "{st}");
    }
    let r = http.get(&format!("{CMS}?resourceVersionMatch=NotOlderThan"));
    let st = assert_status(&r, 422, "Invalid");
    assert_eq!(
        st["message"],
        "ListOptions.meta.k8s.io \"\" is invalid: resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided"
    );
}

/// kube lays its JSON out for people (`json.MarshalIndent`, two spaces) when asked with
/// `?pretty=true`, or when the client is curl, Wget or a browser and does not say otherwise;
/// `/version` always; a watch never.
#[test]
fn json_is_indented_for_people_as_kube_indents_it() {
    let s = Server::start().unwrap();
    let http = s.http();
    create(
        &http,
        "/api/v1/namespaces/default/configmaps",
        &json!({"metadata": {"name": "p"}, "data": {"k": "v"}}),
    );
    let get = |path: &str, agent: Option<&str>| {
        let mut rb = http.client.get(format!("{}{}", http.base, path));
        if let Some(a) = agent {
            rb = rb.header("User-Agent", a);
        }
        let r = rb.send().unwrap();
        String::from_utf8(r.bytes().unwrap().to_vec()).unwrap()
    };
    let curl = Some("curl/8.5.0");
    let path = "/api/v1/namespaces/default/configmaps/p";
    let compact = get(path, None);
    assert!(
        compact.starts_with("{\"") && !compact.trim_end().contains('\n'),
        "{compact}"
    );
    let indented =
        serde_json::to_string_pretty(&serde_json::from_str::<Value>(&compact).unwrap()).unwrap();
    assert_eq!(get(&format!("{path}?pretty=true"), None), indented);
    assert_eq!(get(path, curl), indented);
    assert_eq!(get(path, Some("Mozilla/5.0 (X11; Linux x86_64)")), indented);
    assert_eq!(get(&format!("{path}?pretty=false"), curl), compact);
    // A list, and an error's Status.
    let list = get("/api/v1/namespaces/default/configmaps?limit=1", curl);
    assert!(
        list.starts_with("{\n  \"kind\": \"ConfigMapList\",\n  \"apiVersion\": \"v1\",\n"),
        "{list}"
    );
    serde_json::from_str::<Value>(&list).unwrap();
    let missing = get("/api/v1/namespaces/default/configmaps/nope", curl);
    assert!(
        missing.starts_with("{\n  \"kind\": \"Status\",\n"),
        "{missing}"
    );
    assert!(missing.ends_with("\n  \"code\": 404\n}"), "{missing}");
    // `/version` is written indented for everyone.
    let version = get("/version", None);
    assert!(version.starts_with("{\n  \"major\": \"1\",\n"), "{version}");
    // A watch is a stream of compact events, one a line, whoever reads it.
    let events = get(
        "/api/v1/namespaces/default/configmaps?watch=true&timeoutSeconds=1",
        curl,
    );
    let first = events.lines().next().unwrap_or_default();
    assert!(
        first.starts_with("{\"type\":\"ADDED\",\"object\":{"),
        "{events}"
    );
}
