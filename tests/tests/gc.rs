//! The built-in garbage collector and namespace controller, driven with the real kubectl:
//! background, foreground and orphan cascades on ConfigMaps and on a custom resource, owner
//! references kube treats as dangling, namespace deletion with finalizers, and work resuming
//! after a restart.

use std::time::Duration;

use serde_json::{json, Value};
use turtles_tests::{assert_status, poll, Server};

const DEADLINE: Duration = Duration::from_secs(20);
const CMS: &str = "/api/v1/namespaces/default/configmaps";
const WIDGETS: &str = "/apis/example.com/v1/namespaces/default/widgets";

const WIDGET_CRD: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {type: object, x-kubernetes-preserve-unknown-fields: true}
"#;

/// An owner reference to `owner` (any object with apiVersion/kind/metadata).
fn owner_ref(owner: &Value, block: bool) -> Value {
    json!({
        "apiVersion": owner["apiVersion"], "kind": owner["kind"],
        "name": owner["metadata"]["name"], "uid": owner["metadata"]["uid"],
        "blockOwnerDeletion": block,
    })
}

fn create(s: &Server, path: &str, body: Value) -> Value {
    let r = s.http().post_json(path, &body);
    assert_eq!(r.status, 201, "create {path}: {}", r.text());
    r.json()
}

fn cm(s: &Server, name: &str, owners: &[Value], finalizers: &[&str]) -> Value {
    create(
        s,
        CMS,
        json!({"apiVersion": "v1", "kind": "ConfigMap",
               "metadata": {"name": name, "ownerReferences": owners, "finalizers": finalizers}}),
    )
}

fn widget(s: &Server, name: &str, owners: &[Value], finalizers: &[&str]) -> Value {
    create(
        s,
        WIDGETS,
        json!({"apiVersion": "example.com/v1", "kind": "Widget",
               "metadata": {"name": name, "ownerReferences": owners, "finalizers": finalizers},
               "spec": {"size": 1}}),
    )
}

fn install_widgets(s: &Server) {
    let out = s.kubectl_stdin(&["apply", "-f", "-"], WIDGET_CRD);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    s.kubectl_ok(&[
        "wait",
        "--for=condition=Established",
        "crd/widgets.example.com",
    ]);
}

fn exists(s: &Server, path: &str) -> bool {
    s.http().get(path).status == 200
}

fn wait_gone(s: &Server, path: &str) {
    poll(&format!("{path} to be deleted"), DEADLINE, || {
        (!exists(s, path)).then_some(())
    })
    .unwrap();
}

/// Remove every finalizer of an object, with kubectl (`ns` "" for the default namespace).
fn unfinalize(s: &Server, ns: &str, kind: &str, name: &str) {
    let ns = if ns.is_empty() { "default" } else { ns };
    s.kubectl_ok(&[
        "-n",
        ns,
        "patch",
        kind,
        name,
        "--type=json",
        "-p",
        r#"[{"op":"remove","path":"/metadata/finalizers"}]"#,
    ]);
}

#[test]
fn background_cascade_deletes_dependents_whose_owners_are_all_gone() {
    let s = Server::start().unwrap();
    let owner = cm(&s, "owner", &[], &[]);
    let other = cm(&s, "other-owner", &[], &[]);
    for d in ["dep-1", "dep-2", "dep-3"] {
        cm(&s, d, &[owner_ref(&owner, false)], &[]);
    }
    // Two owners: loses the reference to the deleted one, stays.
    cm(
        &s,
        "shared",
        &[owner_ref(&owner, false), owner_ref(&other, false)],
        &[],
    );
    let out = s.kubectl_ok(&["delete", "configmap", "owner"]);
    assert!(out.contains("deleted"), "{out}");
    for d in ["dep-1", "dep-2", "dep-3"] {
        wait_gone(&s, &format!("{CMS}/{d}"));
    }
    let shared = poll("shared to lose its deleted owner", DEADLINE, || {
        let v = s.kubectl_json(&["get", "configmap", "shared"]);
        (v["metadata"]["ownerReferences"].as_array()?.len() == 1).then_some(v)
    })
    .unwrap();
    assert_eq!(
        shared["metadata"]["ownerReferences"][0]["name"],
        "other-owner"
    );
    assert!(exists(&s, &format!("{CMS}/other-owner")));
    // The collector's work shows on /metrics as a Wasm controller's does.
    let m = metric(
        &s,
        "turtles_controller_reconciles_total",
        "garbage-collector",
    );
    assert!(m >= 5.0, "{m}");
    let m = metric(
        &s,
        "turtles_controller_reconcile_duration_seconds_count",
        "garbage-collector",
    );
    assert!(m >= 5.0, "{m}");
}

/// One sample of a controller's metric on /metrics.
fn metric(s: &Server, name: &str, controller: &str) -> f64 {
    let text = s.http().get("/metrics").text();
    let prefix = format!("{name}{{controller=\"{controller}\"}} ");
    text.lines()
        .find_map(|l| l.strip_prefix(&prefix))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no {prefix} in\n{text}"))
}

#[test]
fn owners_that_never_existed_or_have_another_uid_count_as_gone() {
    let s = Server::start().unwrap();
    let real = cm(&s, "real", &[], &[]);
    let mut wrong_uid = owner_ref(&real, false);
    wrong_uid["uid"] = json!("00000000-0000-0000-0000-000000000000");
    let ghost = json!({"apiVersion": "v1", "kind": "ConfigMap", "name": "ghost",
                       "uid": "11111111-1111-1111-1111-111111111111"});
    cm(&s, "orphan-of-ghost", &[ghost], &[]);
    cm(&s, "orphan-of-wrong-uid", &[wrong_uid], &[]);
    let kept = cm(&s, "child-of-real", &[owner_ref(&real, false)], &[]);
    wait_gone(&s, &format!("{CMS}/orphan-of-ghost"));
    wait_gone(&s, &format!("{CMS}/orphan-of-wrong-uid"));
    // A real owner keeps its dependent.
    let now = s.http().get(&format!("{CMS}/child-of-real")).json();
    assert_eq!(now["metadata"]["uid"], kept["metadata"]["uid"]);
    assert!(exists(&s, &format!("{CMS}/real")));
}

#[test]
fn foreground_owner_waits_for_a_blocking_dependent_with_a_finalizer() {
    let s = Server::start().unwrap();
    let owner = cm(&s, "owner", &[], &[]);
    cm(&s, "quick", &[owner_ref(&owner, true)], &[]);
    cm(
        &s,
        "held",
        &[owner_ref(&owner, true)],
        &["example.com/hold"],
    );
    s.kubectl_ok(&[
        "delete",
        "configmap",
        "owner",
        "--cascade=foreground",
        "--wait=false",
    ]);
    wait_gone(&s, &format!("{CMS}/quick"));
    let held = s.kubectl_json(&["get", "configmap", "held"]);
    assert!(held["metadata"]["deletionTimestamp"].is_string());
    // The owner is still there, marked, waiting on `held`.
    let o = s.kubectl_json(&["get", "configmap", "owner"]);
    assert!(o["metadata"]["deletionTimestamp"].is_string());
    assert_eq!(o["metadata"]["finalizers"], json!(["foregroundDeletion"]));
    unfinalize(&s, "", "configmap", "held");
    wait_gone(&s, &format!("{CMS}/held"));
    wait_gone(&s, &format!("{CMS}/owner"));
}

/// A reference from another namespace names nothing: a dependent in `t1` that names an object
/// of `t2` by its uid (blocking, and held by a finalizer) does not hold up that object's
/// foreground deletion, as in kube (where the owner counts as absent for it).
#[test]
fn a_reference_from_another_namespace_does_not_hold_up_a_foreground_delete() {
    let s = Server::start().unwrap();
    s.kubectl_ok(&["create", "namespace", "t1"]);
    s.kubectl_ok(&["create", "namespace", "t2"]);
    let victim = create(
        &s,
        "/api/v1/namespaces/t2/configmaps",
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "victim"}}),
    );
    create(
        &s,
        "/api/v1/namespaces/t1/configmaps",
        json!({"apiVersion": "v1", "kind": "ConfigMap",
               "metadata": {"name": "leech", "ownerReferences": [owner_ref(&victim, true)],
                            "finalizers": ["example.com/hold"]}}),
    );
    s.kubectl_ok(&[
        "-n",
        "t2",
        "delete",
        "configmap",
        "victim",
        "--cascade=foreground",
        "--wait=false",
    ]);
    wait_gone(&s, "/api/v1/namespaces/t2/configmaps/victim");
    unfinalize(&s, "t1", "configmap", "leech");
}

/// An ownerReference cycle (A owns B, B owns A, both blocking): a foreground delete of A
/// finishes, as kube's collector finishes it, by making B's references non-blocking before B's
/// own foreground deletion; without that each waits on the other for ever.
#[test]
fn a_foreground_delete_of_an_owner_reference_cycle_finishes() {
    let s = Server::start().unwrap();
    let a = cm(&s, "cycle-a", &[], &[]);
    let b = cm(&s, "cycle-b", &[owner_ref(&a, true)], &[]);
    let patch = json!({"metadata": {"ownerReferences": [owner_ref(&b, true)]}});
    let r = s.http().patch(
        &format!("{CMS}/cycle-a"),
        "application/merge-patch+json",
        &patch,
    );
    assert_eq!(r.status, 200, "{}", r.text());
    s.kubectl_ok(&[
        "delete",
        "configmap",
        "cycle-a",
        "--cascade=foreground",
        "--wait=false",
    ]);
    wait_gone(&s, &format!("{CMS}/cycle-a"));
    wait_gone(&s, &format!("{CMS}/cycle-b"));
}

#[test]
fn orphan_cascade_keeps_dependents_without_the_reference() {
    let s = Server::start().unwrap();
    let owner = cm(&s, "owner", &[], &[]);
    let other = cm(&s, "other", &[], &[]);
    cm(&s, "kid", &[owner_ref(&owner, true)], &[]);
    cm(
        &s,
        "twin",
        &[owner_ref(&owner, true), owner_ref(&other, false)],
        &[],
    );
    s.kubectl_ok(&["delete", "configmap", "owner", "--cascade=orphan"]);
    wait_gone(&s, &format!("{CMS}/owner"));
    let kid = s.kubectl_json(&["get", "configmap", "kid"]);
    assert!(kid["metadata"].get("ownerReferences").is_none(), "{kid}");
    let twin = s.kubectl_json(&["get", "configmap", "twin"]);
    assert_eq!(
        twin["metadata"]["ownerReferences"],
        json!([owner_ref(&other, false)])
    );
}

#[test]
fn cascades_follow_custom_resources() {
    let s = Server::start().unwrap();
    install_widgets(&s);
    // Background: a widget owns a ConfigMap and another widget.
    let parent = widget(&s, "parent", &[], &[]);
    cm(&s, "parent-config", &[owner_ref(&parent, true)], &[]);
    widget(&s, "child", &[owner_ref(&parent, true)], &[]);
    s.kubectl_ok(&["delete", "widget", "parent"]);
    wait_gone(&s, &format!("{CMS}/parent-config"));
    wait_gone(&s, &format!("{WIDGETS}/child"));

    // Foreground: the owner waits for a held custom-resource dependent.
    let boss = widget(&s, "boss", &[], &[]);
    widget(
        &s,
        "worker",
        &[owner_ref(&boss, true)],
        &["example.com/hold"],
    );
    s.kubectl_ok(&[
        "delete",
        "widget",
        "boss",
        "--cascade=foreground",
        "--wait=false",
    ]);
    let worker = poll("worker to be terminating", DEADLINE, || {
        let w = s.kubectl_json(&["get", "widget", "worker"]);
        w["metadata"]["deletionTimestamp"].is_string().then_some(w)
    })
    .unwrap();
    assert!(exists(&s, &format!("{WIDGETS}/boss")));
    // Marked for deletion, each moved to its next generation (kube's `markAsDeleting`), so
    // controllers that watch generations see it.
    assert_eq!(worker["metadata"]["generation"], 2, "{worker}");
    let b = s.kubectl_json(&["get", "widget", "boss"]);
    assert_eq!(b["metadata"]["generation"], 2, "{b}");
    unfinalize(&s, "", "widget", "worker");
    wait_gone(&s, &format!("{WIDGETS}/worker"));
    wait_gone(&s, &format!("{WIDGETS}/boss"));

    // Orphan: a ConfigMap owned by a widget survives it.
    let keeper = widget(&s, "keeper", &[], &[]);
    cm(&s, "survivor", &[owner_ref(&keeper, true)], &[]);
    s.kubectl_ok(&["delete", "widget", "keeper", "--cascade=orphan"]);
    wait_gone(&s, &format!("{WIDGETS}/keeper"));
    let survivor = s.kubectl_json(&["get", "configmap", "survivor"]);
    assert!(survivor["metadata"].get("ownerReferences").is_none());
}

/// Owners and dependents stored in a version their CRD no longer stores: the collector changes
/// them through their served version, not by writing their old version back.
#[test]
fn cascades_follow_custom_resources_stored_in_an_older_version() {
    let s = Server::start().unwrap();
    install_widgets(&s);
    let boss = widget(&s, "boss", &[], &[]);
    widget(&s, "worker", &[owner_ref(&boss, true)], &[]);
    let keeper = widget(&s, "keeper", &[], &[]);
    widget(&s, "survivor", &[owner_ref(&keeper, true)], &[]);
    // v2 becomes the storage version; the widgets stay stored as v1.
    let v2 = WIDGET_CRD.replace(
        "    storage: true\n",
        "    storage: false\n",
    ) + "  - name: v2\n    served: true\n    storage: true\n    schema:\n      openAPIV3Schema:\n        type: object\n        properties:\n          spec: {type: object, x-kubernetes-preserve-unknown-fields: true}\n";
    let out = s.kubectl_stdin(&["apply", "-f", "-"], &v2);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Foreground: the collector deletes the worker, then takes its finalizer off the boss.
    s.kubectl_ok(&[
        "delete",
        "widget",
        "boss",
        "--cascade=foreground",
        "--wait=false",
    ]);
    wait_gone(&s, &format!("{WIDGETS}/worker"));
    wait_gone(&s, &format!("{WIDGETS}/boss"));
    // Orphan: the survivor loses its owner reference.
    s.kubectl_ok(&["delete", "widget", "keeper", "--cascade=orphan"]);
    wait_gone(&s, &format!("{WIDGETS}/keeper"));
    let survivor = poll("the survivor to be orphaned", DEADLINE, || {
        let w = s.http().get(&format!("{WIDGETS}/survivor")).json();
        w["metadata"].get("ownerReferences").is_none().then_some(w)
    })
    .unwrap();
    assert_eq!(survivor["spec"]["size"], 1);
}

fn condition(ns: &Value, kind: &str) -> Value {
    ns["status"]["conditions"]
        .as_array()
        .and_then(|a| a.iter().find(|c| c["type"] == kind).cloned())
        .unwrap_or(Value::Null)
}

/// `kubectl delete -f` of a manifest holding a Namespace and its contents: kubectl deletes the
/// Namespace first, then each object in it, which are still there to delete (the namespace
/// controller leaves a deleted namespace alone for kube's 5 s before it empties it), so every
/// object is reported deleted and kubectl succeeds; then the namespace goes.
#[test]
fn kubectl_delete_of_a_manifest_with_its_namespace_succeeds() {
    let s = Server::start().unwrap();
    let manifest = "apiVersion: v1\nkind: Namespace\nmetadata: {name: app}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: one, namespace: app}\n---\napiVersion: v1\nkind: Secret\nmetadata: {name: two, namespace: app}\n---\napiVersion: v1\nkind: ServiceAccount\nmetadata: {name: three, namespace: app}\n";
    s.kubectl_apply(manifest);
    let out = s.kubectl_stdin(&["delete", "-f", "-", "--wait=false"], manifest);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for what in [
        "namespace \"app\" deleted",
        "configmap \"one\" deleted",
        "secret \"two\" deleted",
        "serviceaccount \"three\" deleted",
    ] {
        assert!(stdout.contains(what), "{what}: {stdout}");
    }
    wait_gone(&s, "/api/v1/namespaces/app");
}

#[test]
fn namespace_deletion_empties_it_waits_for_finalizers_then_removes_it() {
    let s = Server::start().unwrap();
    install_widgets(&s);
    s.kubectl_ok(&["create", "namespace", "doomed"]);
    let active = s.kubectl_json(&["get", "namespace", "doomed"]);
    assert_eq!(active["status"]["phase"], "Active");
    assert_eq!(active["spec"]["finalizers"], json!(["kubernetes"]));
    s.kubectl_ok(&["-n", "doomed", "create", "configmap", "a"]);
    s.kubectl_ok(&["-n", "doomed", "create", "configmap", "b"]);
    let w = s.http().post_json(
        "/apis/example.com/v1/namespaces/doomed/widgets",
        &json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}}),
    );
    assert_eq!(w.status, 201, "{}", w.text());
    let held = s.http().post_json(
        "/api/v1/namespaces/doomed/configmaps",
        &json!({"metadata": {"name": "held", "finalizers": ["example.com/hold"]}}),
    );
    assert_eq!(held.status, 201);

    s.kubectl_ok(&["delete", "namespace", "doomed", "--wait=false"]);
    let ns = s.kubectl_json(&["get", "namespace", "doomed"]);
    assert_eq!(ns["status"]["phase"], "Terminating");
    assert!(ns["metadata"]["deletionTimestamp"].is_string());

    // New content is refused with kube's cause.
    let r = s.http().post_json(
        "/api/v1/namespaces/doomed/configmaps",
        &json!({"metadata": {"name": "late"}}),
    );
    let status = assert_status(&r, 403, "Forbidden");
    assert_eq!(
        status["details"]["causes"][0]["reason"],
        "NamespaceTerminating"
    );
    let out = s.kubectl(&["-n", "doomed", "create", "configmap", "late"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("is being terminated"));

    // Everything without a finalizer goes; the held object stays and is reported.
    wait_gone(&s, "/api/v1/namespaces/doomed/configmaps/a");
    wait_gone(&s, "/api/v1/namespaces/doomed/configmaps/b");
    wait_gone(&s, "/apis/example.com/v1/namespaces/doomed/widgets/w");
    let ns = poll("the finalizer to be reported", DEADLINE, || {
        let ns = s.kubectl_json(&["get", "namespace", "doomed"]);
        (condition(&ns, "NamespaceFinalizersRemaining")["status"] == "True").then_some(ns)
    })
    .unwrap();
    let msg = condition(&ns, "NamespaceFinalizersRemaining")["message"].clone();
    assert!(
        msg.as_str()
            .unwrap()
            .contains("example.com/hold in 1 resource instances"),
        "{msg}"
    );
    assert_eq!(
        condition(&ns, "NamespaceContentRemaining")["status"],
        "True"
    );
    assert!(exists(&s, "/api/v1/namespaces/doomed"));

    unfinalize(&s, "doomed", "configmap", "held");
    wait_gone(&s, "/api/v1/namespaces/doomed");
    // Gone for good: recreating it gives a fresh, Active namespace.
    s.kubectl_ok(&["create", "namespace", "doomed"]);
    let again = s.kubectl_json(&["get", "namespace", "doomed"]);
    assert_eq!(again["status"]["phase"], "Active");
    // Both controllers' work shows on /metrics, in the families the Wasm controllers use.
    for c in ["namespace-controller", "serviceaccount-controller"] {
        let m = metric(&s, "turtles_controller_reconciles_total", c);
        assert!(m >= 1.0, "{c}: {m}");
        metric(&s, "turtles_controller_errors_total", c);
        metric(&s, "turtles_controller_queue_depth", c);
    }
    let text = s.http().get("/metrics").text();
    assert_eq!(
        text.matches("# TYPE turtles_controller_reconciles_total counter")
            .count(),
        1,
        "{text}"
    );
}

#[test]
fn a_stuck_namespace_is_finalized_through_its_finalize_subresource() {
    let s = Server::start().unwrap();
    s.kubectl_ok(&["create", "namespace", "stuck"]);
    let held = s.http().post_json(
        "/api/v1/namespaces/stuck/configmaps",
        &json!({"metadata": {"name": "held", "finalizers": ["example.com/hold"]}}),
    );
    assert_eq!(held.status, 201, "{}", held.text());
    s.kubectl_ok(&["delete", "namespace", "stuck", "--wait=false"]);
    poll("the finalizer to be reported", DEADLINE, || {
        let ns = s.kubectl_json(&["get", "namespace", "stuck"]);
        (condition(&ns, "NamespaceFinalizersRemaining")["status"] == "True").then_some(())
    })
    .unwrap();
    // An update does not change `spec.finalizers` (kube's strategy keeps them).
    s.kubectl_ok(&[
        "patch",
        "namespace",
        "stuck",
        "--type=merge",
        "-p",
        r#"{"spec":{"finalizers":[]},"metadata":{"labels":{"patched":"yes"}}}"#,
    ]);
    let ns = s.kubectl_json(&["get", "namespace", "stuck"]);
    assert_eq!(ns["spec"]["finalizers"], json!(["kubernetes"]));
    assert_eq!(ns["metadata"]["labels"]["patched"], "yes");
    // Names are checked at create too (the field unindexed, as kube reports it there).
    let r = s.http().post_json(
        "/api/v1/namespaces",
        &json!({"metadata": {"name": "odd"}, "spec": {"finalizers": ["Bad Name"]}}),
    );
    let st = assert_status(&r, 422, "Invalid");
    assert_eq!(st["details"]["causes"][0]["field"], "spec.finalizers");
    // `finalize` is written only, and checks the names.
    let http = s.http();
    let path = "/api/v1/namespaces/stuck/finalize";
    assert_eq!(http.get(path).status, 405);
    let r = http.patch(path, "application/merge-patch+json", &json!({}));
    assert_eq!(r.status, 405, "{}", r.text());
    let mut bad = ns.clone();
    bad["spec"]["finalizers"] = json!(["kubernetes", "custom"]);
    let r = http.put_json(path, &bad);
    let st = assert_status(&r, 422, "Invalid");
    assert_eq!(
        st["details"]["causes"][0]["message"],
        "Invalid value: \"custom\": name is neither a standard finalizer name nor is it fully qualified"
    );
    // What operators do with a namespace stuck on content they gave up on: replace its
    // finalizers through `finalize`. With none left it goes at once.
    let mut done = ns.clone();
    done["spec"]["finalizers"] = json!([]);
    let file = s.data_dir.join("finalize.json");
    std::fs::write(&file, done.to_string()).unwrap();
    let out = s.kubectl_ok(&["replace", "--raw", path, "-f", file.to_str().unwrap()]);
    let answered: Value = serde_json::from_str(&out).unwrap();
    // The answer is the namespace as it was last stored, as kube's delete-on-update answers.
    assert_eq!(answered["kind"], "Namespace");
    assert_eq!(answered["metadata"]["name"], "stuck");
    assert!(!exists(&s, "/api/v1/namespaces/stuck"));
    let core = http.get("/api/v1").json();
    let entry = core["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "namespaces/finalize")
        .cloned()
        .expect("namespaces/finalize in discovery");
    assert_eq!(entry["verbs"], json!(["update"]));
}

#[test]
fn initial_namespaces_cannot_be_deleted() {
    let s = Server::start().unwrap();
    for ns in ["default", "kube-system", "kube-public"] {
        let out = s.kubectl(&["delete", "namespace", ns, "--wait=false"]);
        assert!(!out.status.success());
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(err.contains("this namespace may not be deleted"), "{err}");
        let v = s.kubectl_json(&["get", "namespace", ns]);
        assert_eq!(v["status"]["phase"], "Active");
        assert!(v["metadata"].get("deletionTimestamp").is_none());
    }
}

#[test]
fn built_in_controllers_are_listed_and_resume_after_a_restart() {
    let mut s = Server::start().unwrap();
    let out = poll("the built-in controllers to be listed", DEADLINE, || {
        let out = s.kubectl_ok(&["get", "controllers"]);
        (out.contains("garbage-collector") && out.contains("namespace-controller")).then_some(out)
    })
    .unwrap();
    for line in out.lines().skip(1) {
        assert!(line.contains("Running"), "{out}");
    }
    // Work in progress: a foreground owner held by a finalizer, a namespace held likewise.
    let owner = cm(&s, "owner", &[], &[]);
    cm(
        &s,
        "held",
        &[owner_ref(&owner, true)],
        &["example.com/hold"],
    );
    s.kubectl_ok(&["create", "namespace", "later"]);
    let held = s.http().post_json(
        "/api/v1/namespaces/later/configmaps",
        &json!({"metadata": {"name": "held", "finalizers": ["example.com/hold"]}}),
    );
    assert_eq!(held.status, 201);
    s.kubectl_ok(&[
        "delete",
        "configmap",
        "owner",
        "--cascade=foreground",
        "--wait=false",
    ]);
    s.kubectl_ok(&["delete", "namespace", "later", "--wait=false"]);
    poll("held to be terminating", DEADLINE, || {
        let v = s.http().get(&format!("{CMS}/held")).json();
        v["metadata"]["deletionTimestamp"].is_string().then_some(())
    })
    .unwrap();
    poll("the namespace content to be marked", DEADLINE, || {
        let v = s
            .http()
            .get("/api/v1/namespaces/later/configmaps/held")
            .json();
        v["metadata"]["deletionTimestamp"].is_string().then_some(())
    })
    .unwrap();
    s.restart().unwrap();
    // After the restart the controllers pick the work up again.
    unfinalize(&s, "", "configmap", "held");
    unfinalize(&s, "later", "configmap", "held");
    wait_gone(&s, &format!("{CMS}/owner"));
    wait_gone(&s, "/api/v1/namespaces/later");
}

/// kube's `ValidateDeleteOptions`: an unknown propagation policy, or one beside the deprecated
/// `orphanDependents`, is a 422 on DeleteOptions (in the body or the query).
#[test]
fn invalid_delete_options_are_kubes_422() {
    let s = Server::start().unwrap();
    cm(&s, "kept", &[], &[]);
    let http = s.http();
    let path = format!("{CMS}/kept");
    let r = http.request(
        "DELETE",
        &path,
        Some("application/json"),
        Some(br#"{"propagationPolicy":"Bogus"}"#.to_vec()),
    );
    assert_eq!(r.status, 422, "{}", r.text());
    assert_eq!(
        r.json()["message"],
        "DeleteOptions.meta.k8s.io \"\" is invalid: propagationPolicy: Unsupported value: \"Bogus\": supported values: \"Foreground\", \"Background\", \"Orphan\", \"nil\""
    );
    let r = http.request(
        "DELETE",
        &path,
        Some("application/json"),
        Some(br#"{"propagationPolicy":"Orphan","orphanDependents":true}"#.to_vec()),
    );
    assert_eq!(r.status, 422, "{}", r.text());
    assert_eq!(
        r.json()["message"],
        "DeleteOptions.meta.k8s.io \"\" is invalid: propagationPolicy: Invalid value: \"Orphan\": orphanDependents and deletionPropagation cannot be both set"
    );
    let r = http.delete(&format!("{path}?propagationPolicy=Nope"));
    assert_eq!(r.status, 422, "{}", r.text());
    // A UID precondition that fails is kube's 409, with its message.
    let r = http.request(
        "DELETE",
        &path,
        Some("application/json"),
        Some(br#"{"preconditions":{"uid":"nope"}}"#.to_vec()),
    );
    assert_eq!(r.status, 409, "{}", r.text());
    let message = r.json()["message"].as_str().unwrap_or("").to_owned();
    assert!(
        message.starts_with(
            "Operation cannot be fulfilled on configmaps \"kept\": Precondition failed: UID in precondition: nope, UID in object meta: "
        ),
        "{message}"
    );
    assert!(exists(&s, &path), "nothing was deleted");
}
