//! A relist after a 410 forgets the objects deleted while the watcher was cut off, in the
//! garbage collector's owner index and in a Wasm controller's informer alike — with the real
//! binary, a real store on disk and a real Wasm component.
//!
//! How the watchers fall behind: the host runs with a tiny history (`--watch-history 16`) and
//! the test-only knob `--test-hold-watchers-on-signal`: SIGUSR1 makes every in-process watcher
//! stop reading and drop its live feed, exactly as one that lagged behind the feed does;
//! SIGUSR2 lets them resume from the last revision they saw. The test deletes objects and makes
//! more writes than the history keeps while they are held, so the resume gets the store's 410
//! and the watchers relist (the log says so, and the test checks it). A real lag (4,096 events
//! behind the live feed while the consumer is busy) cannot be produced on demand; the knob
//! replaces only that part.

use std::process::Command;
use std::time::Duration;

use serde_json::{json, Value};
use turtles_tests::{guest, poll, Server};

const DEADLINE: Duration = Duration::from_secs(30);
const CMS: &str = "/api/v1/namespaces/default/configmaps";

fn create(s: &Server, body: Value) -> Value {
    let r = s.http().post_json(CMS, &body);
    assert_eq!(r.status, 201, "create: {}", r.text());
    r.json()
}

fn cm(name: &str, owners: Value, finalizers: &[&str], labels: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap",
           "metadata": {"name": name, "ownerReferences": owners, "finalizers": finalizers,
                        "labels": labels}})
}

fn owner_ref(owner: &Value, block: bool) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "name": owner["metadata"]["name"],
           "uid": owner["metadata"]["uid"], "blockOwnerDeletion": block})
}

fn get(s: &Server, name: &str) -> Option<Value> {
    let r = s.http().get(&format!("{CMS}/{name}"));
    (r.status == 200).then(|| r.json())
}

/// Wait until the garbage collector has handled everything written so far: an object owned by
/// a uid that never existed is collected only once the collector's informer reached it.
fn gc_caught_up(s: &Server, name: &str) {
    let dangling = json!([{"apiVersion": "v1", "kind": "ConfigMap", "name": "nobody",
                           "uid": "00000000-0000-0000-0000-000000000000"}]);
    create(s, cm(name, dangling, &[], json!({})));
    poll(&format!("{name} to be collected"), DEADLINE, || {
        get(s, name).is_none().then_some(())
    })
    .unwrap_or_else(|e| panic!("{e}\n{}", s.log()));
}

fn reconciles(s: &Server, controller: &str) -> u64 {
    let text = s.http().get("/metrics").text();
    let prefix = format!("turtles_controller_reconciles_total{{controller=\"{controller}\"}} ");
    text.lines()
        .find_map(|l| l.strip_prefix(&prefix))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or(0)
}

fn signal(s: &Server, sig: &str) {
    let pid = s.pid().expect("running").to_string();
    let ok = Command::new("kill")
        .args([sig, &pid])
        .status()
        .expect("kill");
    assert!(ok.success());
}

fn wait_log(s: &Server, what: &str, count: usize) {
    poll(&format!("{count}x {what:?} in the log"), DEADLINE, || {
        (s.log().matches(what).count() >= count).then_some(())
    })
    .unwrap_or_else(|e| panic!("{e}\n{}", s.log()));
}

/// Wait until the labeler has greeted `name` and reconciled its create (which patches) and its
/// own patch; its reconciles so far.
fn greeted(s: &Server, name: &str) -> u64 {
    let want = format!("hello, {name}");
    poll(
        &format!("{name} to be greeted"),
        Duration::from_secs(60),
        || get(s, name).filter(|c| c["metadata"]["annotations"]["turtles.dev/greeting"] == *want),
    )
    .unwrap_or_else(|e| panic!("{e}\n{}", s.log()));
    poll("the labeler's two reconciles", DEADLINE, || {
        (reconciles(s, "labeler") >= 2).then_some(())
    })
    .unwrap();
    reconciles(s, "labeler")
}

/// Hold every in-process watcher (the test knob).
fn hold(s: &Server) {
    signal(s, "-USR1");
    wait_log(s, "test knob: in-process watchers held", 1);
}

#[test]
fn a_relist_after_410_forgets_what_was_deleted_meanwhile() {
    let s = Server::start_with_controllers(&[
        "--watch-history",
        "16",
        "--test-hold-watchers-on-signal",
    ])
    .unwrap();
    s.drop_controller("labeler", &guest("labeler")).unwrap();
    poll("labeler Running", Duration::from_secs(60), || {
        let r = s.http().get("/apis/turtles.dev/v1/controllers/labeler");
        (r.status == 200 && r.json()["status"]["phase"] == "Running").then_some(())
    })
    .unwrap_or_else(|e| panic!("{e}\n{}", s.log()));

    // The garbage collector: owner <- mid <- leaf. `mid` keeps itself alive with a finalizer of
    // its own, so how the collector deletes it stays visible.
    let owner = create(&s, cm("owner", json!([]), &[], json!({})));
    let mid = create(
        &s,
        cm(
            "mid",
            json!([owner_ref(&owner, true)]),
            &["example.com/hold"],
            json!({}),
        ),
    );
    create(
        &s,
        cm("leaf", json!([owner_ref(&mid, false)]), &[], json!({})),
    );
    gc_caught_up(&s, "sentinel-1");

    // The labeler (a Rust component): one ConfigMap it greets.
    create(
        &s,
        cm(
            "greeted",
            json!([]),
            &[],
            json!({"turtles.dev/greet": "true"}),
        ),
    );
    let before = greeted(&s, "greeted");

    // Hold every in-process watcher, delete, and write past the history.
    hold(&s);
    for name in ["leaf", "greeted"] {
        let r = s.http().delete(&format!("{CMS}/{name}"));
        assert_eq!(r.status, 200, "{}", r.text());
    }
    for i in 0..40 {
        create(&s, cm(&format!("burst-{i}"), json!([]), &[], json!({})));
    }
    assert_eq!(
        reconciles(&s, "labeler"),
        before,
        "a held watcher delivered an event"
    );
    let expired_before = s.log().matches("watch expired (410): relisting").count();
    signal(&s, "-USR2");
    wait_log(&s, "test knob: in-process watchers released", 1);
    // The resume was too old for the history: the watchers relisted.
    wait_log(&s, "watch expired (410): relisting", expired_before + 1);

    // The Wasm controller: the relist did not list `greeted`; forgetting it enqueued its key,
    // and the reconcile ran (with no object: the labeler has nothing to do for it).
    poll("the reconcile of the forgotten ConfigMap", DEADLINE, || {
        (reconciles(&s, "labeler") > before).then_some(())
    })
    .unwrap_or_else(|e| panic!("{e}\n{}", s.log()));
    assert_eq!(reconciles(&s, "labeler"), before + 1);

    // The garbage collector's index forgot `leaf` (a dependent of `mid`): deleting `owner` in
    // the foreground deletes `mid` in the background, as an object without dependents. Had the
    // index kept `leaf`, `mid` would be deleted in the foreground (the `foregroundDeletion`
    // finalizer added next to its own).
    gc_caught_up(&s, "sentinel-2");
    let r = s.http().request(
        "DELETE",
        &format!("{CMS}/owner"),
        Some("application/json"),
        Some(
            json!({"propagationPolicy": "Foreground"})
                .to_string()
                .into_bytes(),
        ),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let mid = poll("mid to be deleted", DEADLINE, || {
        get(&s, "mid").filter(|m| m["metadata"]["deletionTimestamp"].is_string())
    })
    .unwrap_or_else(|e| panic!("{e}\n{}", s.log()));
    assert_eq!(
        mid["metadata"]["finalizers"],
        json!(["example.com/hold"]),
        "{mid}"
    );
}

/// A reconcile's object is never older than what the controller's own reads see (the store):
/// while its informer is behind, the host reads the store instead of the informer's cache.
/// Had it read the cache, a ReplicaSet the garbage collector had just deleted, still cached,
/// next to its Pods already gone, would make the ReplicaSet controller create Pods again.
///
/// The labeler's watchers are held (so its cache keeps the old object), the object is changed
/// to what `labeler-v2` would write, and `labeler-v2` is dropped in: its load reconciles every
/// cached key. From the store it sees its greeting already there and writes nothing; from the
/// held cache it would see `labeler`'s greeting and patch.
#[test]
fn a_reconcile_never_sees_an_object_older_than_the_store() {
    let s = Server::start_with_controllers(&["--test-hold-watchers-on-signal"]).unwrap();
    s.drop_controller("labeler", &guest("labeler")).unwrap();
    create(
        &s,
        cm("x", json!([]), &[], json!({"turtles.dev/greet": "true"})),
    );
    let before = greeted(&s, "x");

    hold(&s);
    let r = s.http().patch(
        &format!("{CMS}/x"),
        "application/merge-patch+json",
        &json!({"metadata": {"annotations": {"turtles.dev/greeting": "hello again, x"}}}),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let rv = r.json()["metadata"]["resourceVersion"].clone();
    assert_eq!(
        reconciles(&s, "labeler"),
        before,
        "a held watcher delivered an event"
    );
    let greeted = s.log().matches("greeted default/x").count();

    s.drop_controller("labeler", &guest("labeler-v2")).unwrap();
    poll("labeler-v2's reconcile of x", DEADLINE, || {
        (reconciles(&s, "labeler") > before).then_some(())
    })
    .unwrap_or_else(|e| panic!("{e}\n{}", s.log()));
    assert_eq!(
        s.log().matches("greeted default/x").count(),
        greeted,
        "labeler-v2 patched x: it saw the cached object, not the store's\n{}",
        s.log()
    );
    assert_eq!(get(&s, "x").unwrap()["metadata"]["resourceVersion"], rv);

    // Released, the informer catches up and the cache serves again.
    signal(&s, "-USR2");
    wait_log(&s, "test knob: in-process watchers released", 1);
    let r = s.http().patch(
        &format!("{CMS}/x"),
        "application/merge-patch+json",
        &json!({"metadata": {"annotations": {"turtles.dev/greeting": null}}}),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    poll("x to be greeted again", DEADLINE, || {
        get(&s, "x")
            .filter(|c| c["metadata"]["annotations"]["turtles.dev/greeting"] == "hello again, x")
    })
    .unwrap_or_else(|e| panic!("{e}\n{}", s.log()));
}
