//! Watch streams over raw HTTP and through `kubectl get -w`.

use std::time::{Duration, Instant};

use serde_json::{json, Value};
use turtles_tests::{configmap, rv, Http, Server};

const CMS: &str = "/api/v1/namespaces/default/configmaps";
/// The same, without the namespace's own `kube-root-ca.crt` (the host's root CA publisher keeps
/// one in every namespace): for tests that expect only their own objects.
const OWN: &str = "fieldSelector=metadata.name%21%3Dkube-root-ca.crt";

fn create(http: &Http, body: &Value) -> Value {
    let r = http.post_json(CMS, body);
    assert_eq!(r.status, 201, "create: {}", r.text());
    r.json()
}

fn merge_patch(http: &Http, name: &str, patch: Value) -> Value {
    let r = http.patch(
        &format!("{CMS}/{name}"),
        "application/merge-patch+json",
        &patch,
    );
    assert_eq!(r.status, 200, "patch: {}", r.text());
    r.json()
}

fn list_rv(http: &Http) -> u64 {
    let r = http.get(CMS);
    assert_eq!(r.status, 200, "{}", r.text());
    rv(&r.json())
}

fn name(ev: &Value) -> &str {
    ev["object"]["metadata"]["name"].as_str().unwrap_or("")
}

#[test]
fn watch_from_list_sees_added_modified_deleted() {
    let s = Server::start().unwrap();
    let http = s.http();
    let from = list_rv(&http);
    let mut w = http.watch(&format!("{CMS}?watch=true&resourceVersion={from}"));
    assert_eq!(w.status, 200);

    create(&http, &configmap("w", &[], &[("k", "1")]));
    merge_patch(&http, "w", json!({"data": {"k": "2"}}));
    let r = http.delete(&format!("{CMS}/w"));
    assert_eq!(r.status, 200, "{}", r.text());

    let added = w.expect_event("ADDED");
    let modified = w.expect_event("MODIFIED");
    let deleted = w.expect_event("DELETED");
    for ev in [&added, &modified, &deleted] {
        assert_eq!(name(ev), "w");
        assert_eq!(ev["object"]["kind"], "ConfigMap");
    }
    assert_eq!(added["object"]["data"]["k"], "1");
    assert_eq!(modified["object"]["data"]["k"], "2");
    let rvs = [
        rv(&added["object"]),
        rv(&modified["object"]),
        rv(&deleted["object"]),
    ];
    assert!(
        from < rvs[0] && rvs[0] < rvs[1] && rvs[1] < rvs[2],
        "{from} {rvs:?}"
    );
}

#[test]
fn watch_from_a_past_revision_replays_history() {
    let s = Server::start().unwrap();
    let http = s.http();
    let from = list_rv(&http);
    create(&http, &configmap("early", &[], &[]));
    merge_patch(&http, "early", json!({"data": {"k": "v"}}));
    // Opened after the writes: they come from history, in order.
    let mut w = http.watch(&format!("{CMS}?watch=true&resourceVersion={from}"));
    assert_eq!(name(&w.expect_event("ADDED")), "early");
    assert_eq!(name(&w.expect_event("MODIFIED")), "early");
    create(&http, &configmap("late", &[], &[]));
    assert_eq!(name(&w.expect_event("ADDED")), "late");
}

#[test]
fn watch_without_resource_version_starts_with_current_state() {
    let s = Server::start().unwrap();
    let http = s.http();
    create(&http, &configmap("a", &[], &[]));
    create(&http, &configmap("b", &[], &[]));
    let mut w = http.watch(&format!("{CMS}?watch=true&{OWN}"));
    let mut initial = vec![
        name(&w.expect_event("ADDED")).to_owned(),
        name(&w.expect_event("ADDED")).to_owned(),
    ];
    initial.sort();
    assert_eq!(initial, ["a", "b"]);
    // Then live events, with nothing repeated in between.
    create(&http, &configmap("c", &[], &[]));
    assert_eq!(name(&w.expect_event("ADDED")), "c");
}

#[test]
fn label_selector_watch_follows_matching() {
    let s = Server::start().unwrap();
    let http = s.http();
    let from = list_rv(&http);
    let mut w = http.watch(&format!(
        "{CMS}?watch=true&labelSelector=app%3Dweb&resourceVersion={from}"
    ));
    create(&http, &configmap("other", &[("app", "db")], &[]));
    create(&http, &configmap("sel", &[], &[]));
    merge_patch(
        &http,
        "sel",
        json!({"metadata": {"labels": {"app": "web"}}}),
    );
    merge_patch(&http, "sel", json!({"data": {"k": "v"}}));
    merge_patch(
        &http,
        "sel",
        json!({"metadata": {"labels": {"app": "api"}}}),
    );
    merge_patch(&http, "other", json!({"data": {"k": "v"}}));
    create(&http, &configmap("end", &[("app", "web")], &[]));

    let ev = w.expect_event("ADDED");
    assert_eq!(name(&ev), "sel");
    assert_eq!(ev["object"]["metadata"]["labels"]["app"], "web");
    let ev = w.expect_event("MODIFIED");
    assert_eq!(name(&ev), "sel");
    assert_eq!(ev["object"]["data"]["k"], "v");
    let ev = w.expect_event("DELETED");
    assert_eq!(name(&ev), "sel");
    // The object itself was not deleted, it stopped matching.
    assert_eq!(http.get(&format!("{CMS}/sel")).status, 200);
    assert_eq!(name(&w.expect_event("ADDED")), "end");
}

#[test]
fn too_old_resource_version_is_expired() {
    let s = Server::start_with(&["--watch-history", "5"]).unwrap();
    // The revisions counted below are this test's writes only.
    s.wait_settled(Duration::from_secs(60)).unwrap();
    let http = s.http();
    for i in 0..12 {
        create(&http, &configmap(&format!("c{i}"), &[], &[]));
    }
    let mut w = http.watch_with_timeout(
        &format!("{CMS}?watch=true&resourceVersion=1"),
        Duration::from_secs(20),
    );
    assert_eq!(w.status, 200);
    let ev = w.expect_event("ERROR");
    let st = &ev["object"];
    assert_eq!(st["kind"], "Status", "{ev}");
    assert_eq!(st["code"], 410, "{ev}");
    assert_eq!(st["reason"], "Expired", "{ev}");
    assert_eq!(
        w.try_next_event().unwrap(),
        None,
        "the stream ends after the error"
    );
    // A recent revision is still within the window.
    let recent = list_rv(&http) - 2;
    let mut w = http.watch(&format!("{CMS}?watch=true&resourceVersion={recent}"));
    let ev = w.expect_event("ADDED");
    assert_eq!(rv(&ev["object"]), recent + 1);
}

#[test]
fn watch_list_sends_initial_events_then_bookmark() {
    let s = Server::start().unwrap();
    let http = s.http();
    let mut last = 0;
    for n in ["x", "y", "z"] {
        last = rv(&create(&http, &configmap(n, &[], &[])));
    }
    let mut w = http.watch(&format!(
        "{CMS}?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&{OWN}"
    ));
    assert_eq!(w.status, 200);
    let mut initial: Vec<String> = (0..3)
        .map(|_| name(&w.expect_event("ADDED")).to_owned())
        .collect();
    initial.sort();
    assert_eq!(initial, ["x", "y", "z"]);
    let bm = w.expect_event("BOOKMARK");
    assert_eq!(
        bm["object"]["metadata"]["annotations"]["k8s.io/initial-events-end"], "true",
        "{bm}"
    );
    // The revision the initial events are consistent with: at least the last create's, at
    // most what a list sees after (the host's own controllers write meanwhile).
    let at = rv(&bm["object"]);
    assert!(at >= last && at <= list_rv(&http), "{bm}");
    let created = create(&http, &configmap("live", &[], &[]));
    let ev = w.expect_event("ADDED");
    assert_eq!(name(&ev), "live");
    assert_eq!(rv(&ev["object"]), rv(&created));
    assert!(rv(&created) > at);
}

#[test]
fn watch_list_requires_its_parameters() {
    let s = Server::start().unwrap();
    let r = s
        .http()
        .get(&format!("{CMS}?watch=true&sendInitialEvents=true"));
    assert_eq!(r.status, 422, "{}", r.text());
    assert_eq!(
        r.json()["message"],
        "ListOptions.meta.k8s.io \"\" is invalid: resourceVersionMatch: Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan"
    );
    let r = s
        .http()
        .get(&format!("{CMS}?watch=true&resourceVersionMatch=Exact"));
    assert_eq!(
        r.json()["message"],
        "ListOptions.meta.k8s.io \"\" is invalid: [resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided, resourceVersionMatch: Unsupported value: \"Exact\": supported values: \"NotOlderThan\"]"
    );
    // Bookmarks are not required (kube leaves out only the closing bookmark without them).
    create(&s.http(), &configmap("only", &[], &[]));
    let mut w = s.http().watch(&format!(
        "{CMS}?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&{OWN}"
    ));
    assert_eq!(w.status, 200);
    assert_eq!(name(&w.expect_event("ADDED")), "only");
    create(&s.http(), &configmap("next", &[], &[]));
    assert_eq!(
        name(&w.expect_event("ADDED")),
        "next",
        "no bookmark between"
    );
}

/// List options are checked as kube's `ValidateListOptions` checks them: one 422 with every
/// problem; a `continue` token may come with `resourceVersion=0` (ignored) but no other.
#[test]
fn list_options_are_validated_as_kube_does() {
    let s = Server::start().unwrap();
    let http = s.http();
    for n in ["a", "b", "c"] {
        create(&http, &configmap(n, &[], &[]));
    }
    let page = http.get(&format!("{CMS}?limit=1"));
    let token = page.json()["metadata"]["continue"]
        .as_str()
        .expect("a continue token")
        .to_owned();
    let r = http.get(&format!(
        "{CMS}?limit=1&continue={token}&resourceVersionMatch=NotOlderThan"
    ));
    assert_eq!(r.status, 422, "{}", r.text());
    assert_eq!(
        r.json()["message"],
        "ListOptions.meta.k8s.io \"\" is invalid: [resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided, resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden when continue is provided]"
    );
    let r = http.get(&format!("{CMS}?limit=1&continue={token}&resourceVersion=0"));
    assert_eq!(r.status, 200, "{}", r.text());
    let r = http.get(&format!("{CMS}?limit=1&continue={token}&resourceVersion=5"));
    assert_eq!(r.status, 400, "{}", r.text());
    let r = http.get(&format!(
        "{CMS}?resourceVersion=0&resourceVersionMatch=Exact"
    ));
    assert_eq!(
        r.json()["message"],
        "ListOptions.meta.k8s.io \"\" is invalid: resourceVersionMatch: Forbidden: resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\""
    );
    let r = http.get(&format!("{CMS}?sendInitialEvents=true"));
    assert_eq!(r.status, 422, "{}", r.text());
}

/// A watch from a revision the store has not reached starts at once and stays quiet until the
/// store gets there (kube's cacher); with the initial events asked for, kube waits a while and
/// then answers with one ERROR event (504, `ResourceVersionTooLarge`).
#[test]
fn a_watch_from_a_future_revision() {
    let s = Server::start().unwrap();
    let http = s.http();
    let far = list_rv(&http) + 1_000_000;
    let mut w = http.watch(&format!(
        "{CMS}?watch=true&resourceVersion={far}&timeoutSeconds=2"
    ));
    assert_eq!(w.status, 200);
    create(&http, &configmap("before-it", &[], &[]));
    assert_eq!(
        w.next_event(),
        None,
        "nothing at or before the revision asked for"
    );
    let mut w = http.watch(&format!(
        "{CMS}?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&resourceVersion={far}"
    ));
    assert_eq!(w.status, 200);
    let ev = w.expect_event("ERROR");
    assert_eq!(ev["object"]["code"], 504, "{ev}");
    assert_eq!(ev["object"]["reason"], "Timeout", "{ev}");
    assert!(
        ev["object"]["message"]
            .as_str()
            .unwrap_or_default()
            .starts_with(&format!(
                "Timeout: Too large resource version: {far}, current: "
            )),
        "{ev}"
    );
    assert_eq!(
        ev["object"]["details"]["causes"][0]["reason"], "ResourceVersionTooLarge",
        "{ev}"
    );
}

/// kube's deprecated `/watch/` paths still work: a collection, or one name (as
/// `fieldSelector=metadata.name=NAME`); GET only.
#[test]
fn legacy_watch_paths() {
    let s = Server::start().unwrap();
    let http = s.http();
    let mut one = http.watch("/api/v1/watch/namespaces/default/configmaps/x?timeoutSeconds=30");
    assert_eq!(one.status, 200);
    let mut all = http.watch(&format!(
        "/api/v1/watch/configmaps?resourceVersion={}&watch=false",
        list_rv(&http)
    ));
    assert_eq!(all.status, 200);
    create(&http, &configmap("y", &[], &[]));
    create(&http, &configmap("x", &[], &[]));
    assert_eq!(name(&one.expect_event("ADDED")), "x", "only x");
    assert_eq!(name(&all.expect_event("ADDED")), "y");
    assert_eq!(name(&all.expect_event("ADDED")), "x");
    let r =
        http.get("/api/v1/watch/namespaces/default/configmaps/x?fieldSelector=metadata.name%3Dz");
    assert_eq!(r.status, 400, "{}", r.text());
    assert_eq!(
        r.json()["message"],
        "fieldSelector metadata.name doesn't match requested name"
    );
    let r = http.post_json(
        "/api/v1/watch/namespaces/default/configmaps",
        &configmap("p", &[], &[]),
    );
    assert_eq!(r.status, 405, "{}", r.text());
    // A namespaced kind has no cluster-wide single-name form.
    assert_eq!(http.get("/apis/apps/v1/watch/deployments/web").status, 404);
}

#[test]
fn timeout_seconds_ends_the_stream() {
    let s = Server::start().unwrap();
    let http = s.http();
    let started = Instant::now();
    let mut w = http.watch_with_timeout(
        &format!("{CMS}?watch=true&timeoutSeconds=1&{OWN}"),
        Duration::from_secs(15),
    );
    assert_eq!(w.status, 200);
    // No objects, no bookmarks: the server's end of stream is the only thing to read.
    assert_eq!(w.try_next_event().unwrap(), None);
    assert!(started.elapsed() >= Duration::from_millis(900));
}

#[test]
fn kubectl_get_watch_sees_new_objects() {
    let s = Server::start().unwrap();
    let http = s.http();
    create(&http, &configmap("before", &[], &[]));
    let kubectl = s.kubectl_stream(&[
        "get",
        "cm",
        "-w",
        "--output-watch-events",
        "-o",
        "json",
        "--field-selector=metadata.name!=kube-root-ca.crt",
    ]);
    let first = kubectl
        .next(Duration::from_secs(30))
        .expect("kubectl printed the initial list");
    assert_eq!(first["type"], "ADDED", "{first}");
    assert_eq!(name(&first), "before");
    // kubectl has listed; it watches from the list's resourceVersion, so this arrives by watch.
    create(&http, &configmap("after", &[("a", "b")], &[]));
    let ev = kubectl
        .next(Duration::from_secs(30))
        .expect("kubectl printed the new object");
    assert_eq!(ev["type"], "ADDED", "{ev}");
    assert_eq!(name(&ev), "after");
    assert_eq!(ev["object"]["metadata"]["labels"]["a"], "b");
    merge_patch(&http, "after", json!({"data": {"k": "v"}}));
    let ev = kubectl
        .next(Duration::from_secs(30))
        .expect("kubectl printed the change");
    assert_eq!(ev["type"], "MODIFIED", "{ev}");
    assert_eq!(ev["object"]["data"]["k"], "v");
}

#[test]
fn bookmarks_arrive_periodically() {
    let s = Server::start_with(&["--bookmark-interval", "1"]).unwrap();
    let http = s.http();
    let from = list_rv(&http);
    let mut w = http.watch_with_timeout(
        &format!("{CMS}?watch=true&allowWatchBookmarks=true&resourceVersion={from}"),
        Duration::from_secs(10),
    );
    let bm = w.expect_event("BOOKMARK");
    assert_eq!(bm["object"]["kind"], "ConfigMap");
    assert!(rv(&bm["object"]) >= from, "{bm}");
    assert!(bm["object"]["metadata"]
        .get("annotations")
        .is_none_or(|a| a.get("k8s.io/initial-events-end").is_none()));
    // The next bookmark carries the revision of events sent since (a tick may come first).
    let created = create(&http, &configmap("c", &[], &[]));
    let ev = loop {
        let ev = w.next_event().expect("stream open");
        if ev["type"] != "BOOKMARK" {
            break ev;
        }
    };
    assert_eq!(ev["type"], "ADDED", "{ev}");
    assert_eq!(name(&ev), "c");
    let bm = w.expect_event("BOOKMARK");
    // At least the event's revision (the store's own when nothing else of the kind came).
    assert!(rv(&bm["object"]) >= rv(&created), "{bm}");
}

/// A metadata-only watch (client-go's metadata informers, controller-runtime's `OnlyMetadata`)
/// gets its bookmarks as `PartialObjectMetadata` too, as kube converts every event object: a
/// `kind: ConfigMap` bookmark is what such a client cannot decode. `True` is a true parameter.
#[test]
fn metadata_watches_get_partial_object_metadata_bookmarks() {
    let s = Server::start_with(&["--bookmark-interval", "1"]).unwrap();
    let http = s.http();
    create(&http, &configmap("m", &[], &[]));
    let mut w = http.watch_with_accept(
        &format!("{CMS}?watch=1&sendInitialEvents=True&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=True&{OWN}"),
        "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1",
    );
    assert_eq!(w.status, 200);
    let ev = w.expect_event("ADDED");
    assert_eq!(ev["object"]["kind"], "PartialObjectMetadata", "{ev}");
    let end = w.expect_event("BOOKMARK");
    assert_eq!(end["object"]["kind"], "PartialObjectMetadata", "{end}");
    assert_eq!(end["object"]["apiVersion"], "meta.k8s.io/v1", "{end}");
    assert_eq!(
        end["object"]["metadata"]["annotations"]["k8s.io/initial-events-end"], "true",
        "{end}"
    );
    let tick = w.expect_event("BOOKMARK");
    assert_eq!(tick["object"]["kind"], "PartialObjectMetadata", "{tick}");
}

/// A Table watch's bookmarks are one-row Tables, as kube converts every event object: the
/// first line of the stream, bookmark or not, has the column definitions and later ones
/// `null`; the initial-events-end bookmark keeps its `PartialObjectMetadata` row object even
/// with `includeObject=None`.
#[test]
fn table_watches_get_table_bookmarks() {
    let s = Server::start_with(&["--bookmark-interval", "1"]).unwrap();
    let http = s.http();
    let mut w = http.watch_with_accept(
        &format!("{CMS}?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&includeObject=None&{OWN}"),
        "application/json;as=Table;g=meta.k8s.io;v=v1",
    );
    assert_eq!(w.status, 200);
    let end = w.expect_event("BOOKMARK");
    assert_eq!(end["object"]["kind"], "Table", "{end}");
    assert!(
        end["object"]["columnDefinitions"]
            .as_array()
            .is_some_and(|c| !c.is_empty()),
        "{end}"
    );
    let row = &end["object"]["rows"][0]["object"];
    assert_eq!(row["kind"], "PartialObjectMetadata", "{end}");
    assert_eq!(
        row["metadata"]["annotations"]["k8s.io/initial-events-end"], "true",
        "{end}"
    );
    assert!(row["metadata"].get("creationTimestamp").is_none(), "{end}");
    let tick = w.expect_event("BOOKMARK");
    assert_eq!(tick["object"]["kind"], "Table", "{tick}");
    assert!(tick["object"]["columnDefinitions"].is_null(), "{tick}");
    assert!(tick["object"]["rows"][0].get("object").is_none(), "{tick}");
}

/// The bookmarks of a watch on a quiet resource move with the store (kube's cacher moves them
/// on etcd's progress notifications), so a client resuming from its last bookmark stays within
/// the history however much else was written meanwhile, instead of a 410 and a relist.
#[test]
fn a_quiet_resources_bookmarks_follow_the_store() {
    let s = Server::start_with(&["--bookmark-interval", "1", "--watch-history", "16"]).unwrap();
    s.wait_settled(Duration::from_secs(20)).unwrap();
    let http = s.http();
    let secrets = "/api/v1/namespaces/default/secrets";
    let r = http.get(secrets);
    let from = rv(&r.json());
    let mut w = http.watch_with_timeout(
        &format!("{secrets}?watch=true&allowWatchBookmarks=true&resourceVersion={from}"),
        Duration::from_secs(10),
    );
    let mut last = 0;
    for i in 0..40 {
        last = rv(&create(&http, &configmap(&format!("busy-{i}"), &[], &[])));
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    let at = loop {
        assert!(Instant::now() < deadline, "no bookmark at or past {last}");
        let bm = w.expect_event("BOOKMARK");
        if rv(&bm["object"]) >= last {
            break rv(&bm["object"]);
        }
    };
    // Resuming there is within the history (40 writes went past a 16-event window).
    let mut again = http.watch_with_timeout(
        &format!("{secrets}?watch=true&allowWatchBookmarks=true&resourceVersion={at}"),
        Duration::from_secs(10),
    );
    let ev = again.next_event().expect("stream open");
    assert_eq!(ev["type"], "BOOKMARK", "{ev}");
}

/// A list or watch of one name (`fieldSelector=metadata.name=X`, what `kubectl get cm x -w`
/// sends) is authorized as that name, so a Role with `resourceNames` allows it (kube's
/// RequestInfoFactory); other names stay refused.
#[test]
fn a_watch_of_one_name_is_authorized_by_resource_names() {
    let s = Server::start().unwrap();
    create(&s.http(), &configmap("mine", &[], &[]));
    create(&s.http(), &configmap("theirs", &[], &[]));
    s.kubectl_ok(&[
        "create",
        "role",
        "one-cm",
        "--verb=get,list,watch",
        "--resource=configmaps",
        "--resource-name=mine",
    ]);
    s.kubectl_ok(&[
        "create",
        "rolebinding",
        "one-cm",
        "--role=one-cm",
        "--user=narrow",
    ]);
    let (kubeconfig, token) = s.mint("narrow", &[]).unwrap();
    let http = s.http_with_token(Some(&token));
    let r = http.get(&format!("{CMS}?fieldSelector=metadata.name%3Dmine"));
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["items"][0]["metadata"]["name"], "mine");
    let mut w = http.watch(&format!("{CMS}?watch=1&fieldSelector=metadata.name%3Dmine"));
    assert_eq!(w.status, 200);
    assert_eq!(name(&w.expect_event("ADDED")), "mine");
    assert_eq!(
        http.get(&format!("{CMS}?fieldSelector=metadata.name%3Dtheirs"))
            .status,
        403
    );
    assert_eq!(http.get(CMS).status, 403);
    let out = s.kubectl_with(&kubeconfig, &["get", "configmap", "mine", "-o", "name"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn watches_end_when_the_server_stops() {
    let mut s = Server::start().unwrap();
    let http = s.http();
    let mut w =
        http.watch_with_timeout(&format!("{CMS}?watch=true&{OWN}"), Duration::from_secs(20));
    assert_eq!(w.status, 200);
    let status = s.stop().unwrap();
    assert!(status.success(), "{status:?}\n{}", s.log());
    assert_eq!(
        w.try_next_event().unwrap(),
        None,
        "the stream ended cleanly"
    );
}
