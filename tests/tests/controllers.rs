//! WebAssembly controllers end to end: real components built from guest-examples/rust, dropped
//! into the controllers folder of the real binary, observed through kubectl and raw HTTP.

use std::time::Duration;

use serde_json::{json, Value};
use turtles_tests::{guest, poll, Server};

const CMS: &str = "/api/v1/namespaces/default/configmaps";

fn controller(s: &Server, name: &str) -> Option<Value> {
    let r = s
        .http()
        .get(&format!("/apis/turtles.dev/v1/controllers/{name}"));
    (r.status == 200).then(|| r.json())
}

fn wait_phase(s: &Server, name: &str, phase: &str) -> Value {
    poll(
        &format!("controller {name} to be {phase}"),
        Duration::from_secs(60),
        || controller(s, name).filter(|c| c["status"]["phase"] == phase),
    )
    .unwrap_or_else(|e| panic!("{e}\n{}", s.log()))
}

fn create_cm(s: &Server, name: &str, labels: Value) {
    let r = s.http().post_json(
        CMS,
        &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "labels": labels}, "data": {"k": "v"}}),
    );
    assert_eq!(r.status, 201, "{}", r.text());
}

fn annotation(s: &Server, cm: &str, key: &str) -> Option<String> {
    let v = s.http().get(&format!("{CMS}/{cm}")).json();
    v["metadata"]["annotations"][key]
        .as_str()
        .map(str::to_owned)
}

fn wait_annotation(s: &Server, cm: &str, key: &str, want: &str) {
    poll(
        &format!("{cm} annotated {key}={want}"),
        Duration::from_secs(30),
        || (annotation(s, cm, key).as_deref() == Some(want)).then_some(()),
    )
    .unwrap_or_else(|e| panic!("{e}\n{}", s.log()));
}

#[test]
fn dropped_controller_reconciles_as_its_own_least_privileged_user() {
    let s = Server::start_with_controllers(&[]).unwrap();
    create_cm(&s, "before", json!({"turtles.dev/greet": "true"}));
    s.drop_controller("labeler", &guest("labeler")).unwrap();
    let c = wait_phase(&s, "labeler", "Running");
    assert_eq!(c["status"]["user"], "system:controller:labeler");
    assert_eq!(c["status"]["sha256"].as_str().map(str::len), Some(64));
    // Objects that existed before the controller, and new ones.
    wait_annotation(&s, "before", "turtles.dev/greeting", "hello, before");
    create_cm(&s, "after", json!({"turtles.dev/greet": "true"}));
    wait_annotation(&s, "after", "turtles.dev/greeting", "hello, after");
    // Not selected: untouched.
    create_cm(&s, "other", json!({"app": "x"}));
    // The declared permissions became a ClusterRole bound to the controller's user.
    let role = s.kubectl_json(&["get", "clusterrole", "system:controller:labeler"]);
    let rules = role["rules"].as_array().unwrap();
    assert!(
        rules
            .iter()
            .any(|r| r["resources"] == json!(["configmaps"])),
        "{role}"
    );
    let out = s.kubectl_ok(&[
        "auth",
        "can-i",
        "patch",
        "configmaps",
        "--as",
        "system:controller:labeler",
    ]);
    assert_eq!(out.trim(), "yes");
    let no = s.kubectl(&[
        "auth",
        "can-i",
        "create",
        "secrets",
        "--as",
        "system:controller:labeler",
    ]);
    assert_eq!(String::from_utf8_lossy(&no.stdout).trim(), "no");
    // kubectl shows it.
    let table = s.kubectl_ok(&["get", "controllers"]);
    assert!(
        table.contains("PHASE") && table.contains("labeler") && table.contains("Running"),
        "{table}"
    );
    // Prometheus metrics for the API and the controller.
    let metrics = s.http().get("/metrics").text();
    assert!(
        metrics.contains("turtles_api_requests_total{method=\"POST\",code=\"201\"}"),
        "{metrics}"
    );
    let reconciles: u64 = metrics
        .lines()
        .find_map(|l| {
            l.strip_prefix("turtles_controller_reconciles_total{controller=\"labeler\"} ")
        })
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    assert!(reconciles >= 2, "{metrics}");
    assert!(metrics.contains(
        "turtles_controller_reconcile_duration_seconds_bucket{controller=\"labeler\",le=\"+Inf\"}"
    ));
    // Read-only to clients.
    let r = s.http().delete("/apis/turtles.dev/v1/controllers/labeler");
    assert_eq!(r.status, 405, "{}", r.text());
    assert_eq!(annotation(&s, "other", "turtles.dev/greeting"), None);
}

#[test]
fn replacing_the_file_swaps_in_place_and_removing_it_unloads() {
    let s = Server::start_with_controllers(&[]).unwrap();
    s.drop_controller("labeler", &guest("labeler")).unwrap();
    let v1 = wait_phase(&s, "labeler", "Running");
    create_cm(&s, "one", json!({"turtles.dev/greet": "true"}));
    wait_annotation(&s, "one", "turtles.dev/greeting", "hello, one");
    let url = s.url.clone();
    // Queue work, then swap right away: nothing queued is lost across the swap.
    for i in 0..40 {
        create_cm(
            &s,
            &format!("queued-{i}"),
            json!({"turtles.dev/greet": "true"}),
        );
    }
    s.drop_controller("labeler", &guest("labeler-v2")).unwrap();
    poll(
        "the new version to be running",
        Duration::from_secs(60),
        || {
            controller(&s, "labeler").filter(|c| {
                c["status"]["sha256"] != v1["status"]["sha256"] && c["status"]["phase"] == "Running"
            })
        },
    )
    .unwrap();
    create_cm(&s, "two", json!({"turtles.dev/greet": "true"}));
    wait_annotation(&s, "two", "turtles.dev/greeting", "hello again, two");
    for i in 0..40 {
        let name = format!("queued-{i}");
        poll(
            &format!("{name} greeted by either version"),
            Duration::from_secs(30),
            || annotation(&s, &name, "turtles.dev/greeting").filter(|g| g.ends_with(&name)),
        )
        .unwrap();
    }
    assert_eq!(s.url, url, "the host did not restart");
    // A corrupt file fails alone; the others keep running.
    s.drop_controller("broken", b"\0asm this is not a component")
        .unwrap();
    let broken = wait_phase(&s, "broken", "Failed");
    let err = broken["status"]["lastError"]["message"]
        .as_str()
        .unwrap_or("");
    assert!(err.contains("compil"), "{broken}");
    create_cm(&s, "three", json!({"turtles.dev/greet": "true"}));
    wait_annotation(&s, "three", "turtles.dev/greeting", "hello again, three");
    // A replacement that fails to compile keeps the old version serving.
    s.drop_controller("labeler", b"garbage").unwrap();
    poll(
        "the failed reload to be reported",
        Duration::from_secs(30),
        || {
            controller(&s, "labeler").filter(|c| {
                c["status"]["lastError"]["message"]
                    .as_str()
                    .is_some_and(|m| m.contains("reload failed"))
            })
        },
    )
    .unwrap();
    assert_eq!(
        controller(&s, "labeler").unwrap()["status"]["phase"],
        "Running"
    );
    create_cm(&s, "four", json!({"turtles.dev/greet": "true"}));
    wait_annotation(&s, "four", "turtles.dev/greeting", "hello again, four");
    // Removing the file unloads it, with its identity.
    std::fs::remove_file(s.controllers_dir().join("labeler.wasm")).unwrap();
    poll("labeler to be unloaded", Duration::from_secs(30), || {
        controller(&s, "labeler").is_none().then_some(())
    })
    .unwrap();
    assert_eq!(
        s.http()
            .get("/apis/rbac.authorization.k8s.io/v1/clusterroles/system:controller:labeler")
            .status,
        404
    );
}

#[test]
fn faulty_guests_are_contained_and_reported() {
    let s = Server::start_with_controllers(&[
        "--reconcile-deadline-ms",
        "300",
        "--controller-memory-mb",
        "64",
    ])
    .unwrap();
    for g in ["labeler", "looper", "trapper", "hog", "trespasser"] {
        s.drop_controller(g, &guest(g)).unwrap();
    }
    for g in ["labeler", "looper", "trapper", "hog", "trespasser"] {
        wait_phase(&s, g, "Running");
    }
    for g in ["looper", "trapper", "hog", "trespasser"] {
        create_cm(&s, &format!("cm-{g}"), json!({"turtles.dev/test": g}));
    }
    let expect = [
        ("looper", "deadline"),
        ("trapper", "trap"),
        ("hog", "memory"),
    ];
    for (g, word) in expect {
        let c = poll(
            &format!("{g} to report a fault"),
            Duration::from_secs(60),
            || controller(&s, g).filter(|c| c["status"]["traps"].as_u64().unwrap_or(0) >= 1),
        )
        .unwrap_or_else(|e| panic!("{e}\n{}", s.log()));
        let msg = c["status"]["lastError"]["message"]
            .as_str()
            .unwrap_or("")
            .to_lowercase();
        assert!(msg.contains(word), "{g}: {c}");
        assert_eq!(
            c["status"]["phase"], "Running",
            "a faulty reconcile does not unload: {c}"
        );
    }
    // A trap's whole error (its Wasm backtrace, many lines) is logged once a minute at most;
    // the retries' failures are logged by their first line (a tenant whose objects made a
    // guest trap on every reconcile had the log grow 5 KB a second).
    poll("hog to fail three times", Duration::from_secs(60), || {
        controller(&s, "hog").filter(|c| c["status"]["traps"].as_u64().unwrap_or(0) >= 3)
    })
    .unwrap();
    let log = s.log();
    let lines: Vec<&str> = log.lines().collect();
    let failures: Vec<usize> = (0..lines.len())
        .filter(|&i| lines[i].contains("reconcile failed") && lines[i].contains("cm-hog"))
        .collect();
    let whole = failures
        .iter()
        .filter(|&&i| lines.get(i + 1).is_some_and(|l| l.starts_with("    0:")))
        .count();
    assert!(failures.len() >= 3, "{log}");
    assert_eq!(whole, 1, "{log}");
    // The panic's message is in the failure (its status and logs), and every failure is in the
    // controller's own log, as controller-runtime logs its "Reconciler error"s.
    let trapper = controller(&s, "trapper").unwrap();
    let last = trapper["status"]["lastError"]["message"]
        .as_str()
        .unwrap_or("");
    assert!(last.contains("(panicked at "), "{trapper}");
    let own = s
        .http()
        .get("/apis/turtles.dev/v1/controllers/trapper/log")
        .text();
    assert!(
        own.lines()
            .filter(|l| l
                .contains("ERROR reconcile default/cm-trapper failed: the guest failed: trap: "))
            .count()
            >= 3,
        "{own}"
    );
    // Calls outside the declared permissions are refused like any client's.
    wait_annotation(&s, "cm-trespasser", "turtles.dev/attempt", "403");
    // A watch, however its parameter is spelled, is refused rather than left to hold the call.
    wait_annotation(&s, "cm-trespasser", "turtles.dev/watch-attempt", "400");
    assert_eq!(
        s.http().get("/api/v1/namespaces/default/secrets").json()["items"],
        json!([])
    );
    // Meanwhile the well-behaved controller keeps working.
    create_cm(&s, "fine", json!({"turtles.dev/greet": "true"}));
    wait_annotation(&s, "fine", "turtles.dev/greeting", "hello, fine");
    // And the host is healthy.
    assert_eq!(s.http().get("/readyz").status, 200);
}

#[test]
fn a_controller_removed_while_the_host_is_down_is_forgotten_at_start() {
    let mut s = Server::start_with_controllers(&[]).unwrap();
    s.drop_controller("labeler", &guest("labeler")).unwrap();
    s.drop_controller("labeler-v2", &guest("labeler-v2"))
        .unwrap();
    wait_phase(&s, "labeler", "Running");
    wait_phase(&s, "labeler-v2", "Running");
    s.stop().unwrap();
    std::fs::remove_file(s.controllers_dir().join("labeler-v2.wasm")).unwrap();
    s.restart().unwrap();
    wait_phase(&s, "labeler", "Running");
    // Its Controller object, ClusterRole and binding are gone; the built-in controllers stay.
    poll(
        "labeler-v2 to be forgotten",
        Duration::from_secs(30),
        || controller(&s, "labeler-v2").is_none().then_some(()),
    )
    .unwrap();
    let role = s
        .http()
        .get("/apis/rbac.authorization.k8s.io/v1/clusterroles/system:controller:labeler-v2");
    assert_eq!(role.status, 404);
    assert!(controller(&s, "garbage-collector").is_some());
}

/// Every controller's phase, by name.
fn phases(s: &Server) -> std::collections::BTreeMap<String, String> {
    let list = s.http().get("/apis/turtles.dev/v1/controllers").json();
    list["items"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| {
            Some((
                c["metadata"]["name"].as_str()?.to_owned(),
                c["status"]["phase"].as_str()?.to_owned(),
            ))
        })
        .collect()
}

/// Issue 12: loading never waits for another controller. All 16 example components dropped at
/// once on a fresh data dir (nothing in the compile cache): every Rust and C controller is
/// `Running` while Python and JavaScript ones still compile, and the big ones become `Running`
/// one by one as their own compile ends, not all together after the last.
#[test]
fn each_component_runs_as_soon_as_its_own_compile_is_done() {
    const SMALL: &[&str] = &[
        "labeler",
        "labeler-v2",
        "looper",
        "trapper",
        "hog",
        "trespasser",
        "certificate",
        "issuer",
        "node",
        "c-greeter",
    ];
    const BIG: &[&str] = &[
        "deployment",
        "py-greeter",
        "py-greeter-v2",
        "replicaset",
        "js-greeter",
        "js-greeter-v2",
    ];
    let s = Server::start_with_controllers_cold(&[]).unwrap();
    // Write every file first, then rename them all: one drop.
    let dir = s.controllers_dir();
    for name in SMALL.iter().chain(BIG) {
        std::fs::write(dir.join(format!(".{name}.wasm.tmp")), guest(name)).unwrap();
    }
    for name in SMALL.iter().chain(BIG) {
        std::fs::rename(
            dir.join(format!(".{name}.wasm.tmp")),
            dir.join(format!("{name}.wasm")),
        )
        .unwrap();
    }
    let dropped = std::time::Instant::now();
    let running = |p: &std::collections::BTreeMap<String, String>, n: &str| {
        p.get(n).map(String::as_str) == Some("Running")
    };
    let at_small = poll(
        "every Rust and C controller Running",
        Duration::from_secs(120),
        || {
            let p = phases(&s);
            SMALL.iter().all(|n| running(&p, n)).then_some(p)
        },
    )
    .unwrap_or_else(|e| panic!("{e}\n{}", s.log()));
    let small_took = dropped.elapsed();
    let compiling: Vec<&&str> = BIG.iter().filter(|n| !running(&at_small, n)).collect();
    eprintln!(
        "all Rust and C controllers Running {small_took:?} after the drop; still compiling: {compiling:?}"
    );
    assert!(
        !compiling.is_empty(),
        "the Rust and C controllers became Running only when every Python and JavaScript one had: {at_small:?}"
    );
    // The big ones do not wait for each other either: the first one is Running while another
    // still compiles.
    let at_big = poll(
        "a Python or JavaScript controller Running",
        Duration::from_secs(600),
        || {
            let p = phases(&s);
            BIG.iter().any(|n| running(&p, n)).then_some(p)
        },
    )
    .unwrap_or_else(|e| panic!("{e}\n{}", s.log()));
    eprintln!(
        "first Python/JavaScript controller Running {:?} after the drop: {at_big:?}",
        dropped.elapsed()
    );
    assert!(
        BIG.iter().any(|n| !running(&at_big, n)),
        "every Python and JavaScript controller became Running at once: {at_big:?}"
    );
}

fn metric(s: &Server, name: &str) -> Option<u64> {
    let m = s.http().get("/metrics").text();
    m.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' '))
        .and_then(|v| v.trim().parse::<u64>().ok())
}

/// Two tiers of code: a component new to the host is `Running` on baseline (Winch) code, swaps
/// to its optimized (Cranelift) code when the background compile is done and goes on
/// reconciling on it; identical bytes loaded afterwards start on the optimized code; with
/// `--baseline-compile=false` a component starts optimized.
#[test]
fn a_new_component_starts_on_baseline_code_and_swaps_to_optimized_in_place() {
    let s = Server::start_with_controllers_cold(&[]).unwrap();
    let greet = || json!({"turtles.dev/greet": "true"});
    s.drop_controller("labeler", &guest("labeler")).unwrap();
    wait_phase(&s, "labeler", "Running");
    create_cm(&s, "before", greet());
    wait_annotation(&s, "before", "turtles.dev/greeting", "hello, before");
    let optimized = poll(
        "the labeler on optimized code",
        // Its compile runs at nice 19: slow while other tests keep the cores busy.
        Duration::from_secs(600),
        || controller(&s, "labeler").filter(|c| c["status"]["codeTier"] == "Optimized"),
    )
    .unwrap_or_else(|e| panic!("{e}\n{}", s.log()));
    // It got there by a swap (the baseline ran first): one compile, one tier-up.
    assert_eq!(metric(&s, "turtles_component_compiles_total"), Some(1));
    assert_eq!(metric(&s, "turtles_component_tier_ups_total"), Some(1));
    assert_eq!(optimized["status"]["phase"], "Running");
    // The same controller goes on, on the new code (the queue and informers were kept).
    create_cm(&s, "after", greet());
    wait_annotation(&s, "after", "turtles.dev/greeting", "hello, after");
    let after = controller(&s, "labeler").unwrap();
    assert_eq!(after["status"]["codeTier"], "Optimized");
    assert!(after["status"].get("lastError").is_none(), "{after}");
    // Identical bytes under another name: the shared artifact's optimized code from the start.
    s.drop_controller("twin", &guest("labeler")).unwrap();
    let twin = wait_phase(&s, "twin", "Running");
    assert_eq!(twin["status"]["codeTier"], "Optimized", "{twin}");
    assert_eq!(metric(&s, "turtles_component_compiles_total"), Some(1));

    // Without the baseline tier: optimized at once, no tier-up.
    let s = Server::start_with_controllers_cold(&["--baseline-compile=false"]).unwrap();
    s.drop_controller("labeler", &guest("labeler")).unwrap();
    let c = wait_phase(&s, "labeler", "Running");
    assert_eq!(c["status"]["codeTier"], "Optimized", "{c}");
    create_cm(&s, "plain", greet());
    wait_annotation(&s, "plain", "turtles.dev/greeting", "hello, plain");
    assert_eq!(metric(&s, "turtles_component_tier_ups_total"), Some(0));
}

/// Identical bytes under two names: both controllers run on one compiled artifact.
#[test]
fn identical_components_share_one_compile() {
    let s = Server::start_with_controllers(&[]).unwrap();
    let compiles = || {
        let m = s.http().get("/metrics").text();
        m.lines()
            .find_map(|l| l.strip_prefix("turtles_component_compiles_total "))
            .and_then(|v| v.trim().parse::<u64>().ok())
    };
    assert_eq!(compiles(), Some(0));
    let bytes = guest("labeler");
    s.drop_controller("twin-a", &bytes).unwrap();
    s.drop_controller("twin-b", &bytes).unwrap();
    let a = wait_phase(&s, "twin-a", "Running");
    let b = wait_phase(&s, "twin-b", "Running");
    assert_eq!(a["status"]["sha256"], b["status"]["sha256"]);
    assert_eq!(compiles(), Some(1));
    // A third copy later, while the others still use the artifact: no compile either.
    s.drop_controller("twin-c", &bytes).unwrap();
    wait_phase(&s, "twin-c", "Running");
    assert_eq!(compiles(), Some(1));
    // Different bytes do compile.
    s.drop_controller("other", &guest("labeler-v2")).unwrap();
    wait_phase(&s, "other", "Running");
    assert_eq!(compiles(), Some(2));
}

/// `turtles:controller@0.2.0` next to 0.1.0 on one server: a 0.1.0 component (wit-bindgen on
/// `wit/0.1.0`, no SDK) and a 0.2.0 one of the same controller both reconcile; the `announcer`
/// (0.2.0) acts as a ServiceAccount: named in its status, said missing until it exists, refused
/// until a RoleBinding grants the account, then it applies its initial key's ConfigMap (no
/// watched change names it) and records an Event that `kubectl describe` shows, counted again
/// on a repeat rather than duplicated.
#[test]
fn wit_0_1_0_and_0_2_0_components_load_side_by_side_and_0_2_0_acts_as_a_service_account() {
    let s = Server::start_with_controllers(&[]).unwrap();
    s.drop_controller("labeler", &guest("labeler")).unwrap();
    s.drop_controller("labeler-v01", &guest("labeler-v01"))
        .unwrap();
    let new = wait_phase(&s, "labeler", "Running");
    let old = wait_phase(&s, "labeler-v01", "Running");
    assert_eq!(new["status"]["wit"], "turtles:controller@0.2.0");
    assert_eq!(old["status"]["wit"], "turtles:controller@0.1.0");
    assert_eq!(old["status"]["user"], "system:controller:labeler-v01");
    // The C node controller registers its Node from its initial key: no pod exists.
    s.drop_controller("node", &guest("node")).unwrap();
    let node = wait_phase(&s, "node", "Running");
    assert_eq!(node["status"]["wit"], "turtles:controller@0.2.0");
    poll(
        "the Node registered with no pod",
        Duration::from_secs(30),
        || (s.http().get("/api/v1/nodes/turtle-node-1").status == 200).then_some(()),
    )
    .unwrap_or_else(|e| panic!("{e}\n{}", s.log()));
    assert_eq!(
        s.http().get("/api/v1/pods").json()["items"],
        json!([]),
        "no pod was needed"
    );
    let described = poll("the RegisteredNode event", Duration::from_secs(30), || {
        let d = s.kubectl_ok(&["describe", "node", "turtle-node-1"]);
        d.contains("RegisteredNode").then_some(d)
    })
    .unwrap_or_else(|e| panic!("{e}\n{}", s.log()));
    assert!(
        described.contains("Registered Node turtle-node-1 in Controller"),
        "{described}"
    );
    create_cm(&s, "greet-new", json!({"turtles.dev/greet": "true"}));
    create_cm(&s, "greet-old", json!({"turtles.dev/greet-v01": "true"}));
    wait_annotation(&s, "greet-new", "turtles.dev/greeting", "hello, greet-new");
    wait_annotation(&s, "greet-old", "turtles.dev/greeting", "hello, greet-old");

    // The ServiceAccount does not exist yet: the status says so, and nothing runs as it.
    s.drop_controller("announcer", &guest("announcer")).unwrap();
    let c = poll(
        "the announcer's status to name its missing ServiceAccount",
        Duration::from_secs(30),
        || {
            controller(&s, "announcer").filter(|c| {
                c["status"]["conditions"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .any(|k| k["type"] == "ServiceAccount" && k["status"] == "False")
            })
        },
    )
    .unwrap_or_else(|e| panic!("{e}\n{}", s.log()));
    let cond = c["status"]["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|k| k["type"] == "ServiceAccount")
        .unwrap()
        .clone();
    assert_eq!(cond["reason"], "NotFound");
    assert!(
        cond["message"]
            .as_str()
            .unwrap()
            .contains("serviceaccount \"announcer\" not found in namespace \"default\""),
        "{cond}"
    );
    assert_ne!(c["status"]["phase"], "Running");

    // The account, allowed to list and watch ConfigMaps (its informer): it runs as the account.
    s.kubectl_ok(&["create", "serviceaccount", "announcer"]);
    s.kubectl_ok(&[
        "create",
        "clusterrole",
        "announcer-read",
        "--verb=list,watch",
        "--resource=configmaps",
    ]);
    s.kubectl_ok(&[
        "create",
        "clusterrolebinding",
        "announcer-read",
        "--clusterrole=announcer-read",
        "--serviceaccount=default:announcer",
    ]);
    let c = wait_phase(&s, "announcer", "Running");
    assert_eq!(
        c["status"]["user"],
        "system:serviceaccount:default:announcer"
    );
    assert_eq!(
        c["status"]["serviceAccount"],
        json!({"namespace": "default", "name": "announcer"})
    );
    // The host granted nothing to the controller user, nor to the account.
    let crb = s
        .http()
        .get("/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/system:controller:announcer");
    assert_eq!(crb.status, 404);
    // The initial key reconciles at once and is refused: the account may not patch.
    let c = poll(
        "the announcer refused as its ServiceAccount",
        Duration::from_secs(30),
        || {
            controller(&s, "announcer").filter(|c| {
                c["status"]["lastError"]["message"]
                    .as_str()
                    .is_some_and(|e| {
                        e.contains("system:serviceaccount:default:announcer")
                            && e.contains("cannot patch resource \"configmaps\"")
                    })
            })
        },
    )
    .unwrap_or_else(|e| panic!("{e}\n{:?}\n{}", controller(&s, "announcer"), s.log()));
    assert!(
        s.http().get(&format!("{CMS}/announcer-ready")).status == 404,
        "{c}"
    );

    // A RoleBinding grants the account what it needs in `default`: it succeeds.
    s.kubectl_ok(&[
        "create",
        "role",
        "announcer",
        "--verb=get,patch,create",
        "--resource=configmaps,events",
    ]);
    s.kubectl_ok(&[
        "create",
        "rolebinding",
        "announcer",
        "--role=announcer",
        "--serviceaccount=default:announcer",
    ]);
    let ready = poll(
        "the initial key's ConfigMap applied",
        Duration::from_secs(60),
        || {
            let r = s.http().get(&format!("{CMS}/announcer-ready"));
            (r.status == 200).then(|| r.json())
        },
    )
    .unwrap_or_else(|e| panic!("{e}\n{}", s.log()));
    assert_eq!(ready["data"]["ready"], "true");
    assert_eq!(
        ready["metadata"]["managedFields"][0]["manager"], "announcer",
        "{ready}"
    );
    assert_eq!(ready["metadata"]["managedFields"][0]["operation"], "Apply");

    // An Event, as the account, shown by kubectl describe.
    create_cm(&s, "news", json!({"turtles.dev/announce": "true"}));
    wait_annotation(&s, "news", "turtles.dev/announced", "true");
    let events = poll("the Announced event", Duration::from_secs(30), || {
        let v = s.kubectl_json(&[
            "get",
            "events",
            "--field-selector",
            "involvedObject.name=news",
            "-o",
            "json",
        ]);
        let items = v["items"].as_array().cloned().unwrap_or_default();
        (!items.is_empty()).then_some(items)
    })
    .unwrap_or_else(|e| panic!("{e}\n{}", s.log()));
    let ev = &events[0];
    assert_eq!(ev["reason"], "Announced");
    assert_eq!(ev["type"], "Normal");
    assert_eq!(ev["message"], "announced default/news");
    assert_eq!(ev["involvedObject"]["kind"], "ConfigMap");
    assert_eq!(ev["source"]["component"], "announcer");
    assert_eq!(ev["count"], 1);
    let described = s.kubectl_ok(&["describe", "configmap", "news"]);
    assert!(
        described.contains("Announced") && described.contains("announced default/news"),
        "{described}"
    );
    // The same event again (the annotation removed, so it announces again): counted, not added.
    let r = s.http().request(
        "PATCH",
        &format!("{CMS}/news"),
        Some("application/merge-patch+json"),
        Some(
            json!({"metadata": {"annotations": {"turtles.dev/announced": null}}})
                .to_string()
                .into_bytes(),
        ),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    poll("the event counted twice", Duration::from_secs(30), || {
        let v = s.kubectl_json(&[
            "get",
            "events",
            "--field-selector",
            "involvedObject.name=news",
            "-o",
            "json",
        ]);
        let items = v["items"].as_array().cloned().unwrap_or_default();
        (items.len() == 1 && items[0]["count"] == 2).then_some(())
    })
    .unwrap_or_else(|e| panic!("{e}\n{}", s.log()));
}

/// A controller whose primary watch has a label selector and whose secondary watch maps Secrets
/// to their owning ConfigMap: a Secret owned by a ConfigMap outside the selector does not
/// reconcile that ConfigMap (it would get no object, exactly as if the ConfigMap were deleted:
/// an operator cleaning up on "gone" would remove what a live object owns). kube-runtime calls
/// no reconciler for an object its reflector does not have. A ConfigMap that leaves the selector
/// does reconcile with no object, as one deleted does.
#[test]
fn an_owner_outside_the_primary_watch_is_not_reconciled_as_gone() {
    let s = Server::start_with_controllers(&[]).unwrap();
    s.drop_controller("keeper", &guest("keeper")).unwrap();
    wait_phase(&s, "keeper", "Running");
    let log = || {
        s.http()
            .get("/apis/turtles.dev/v1/controllers/keeper/log")
            .text()
    };
    let count = |text: &str, what: &str| text.lines().filter(|l| l.contains(what)).count();
    let secret = |name: &str, owner: &Value| {
        let r = s.http().post_json(
            "/api/v1/namespaces/default/secrets",
            &json!({"metadata": {"name": name, "ownerReferences": [{
                "apiVersion": "v1", "kind": "ConfigMap", "name": owner["metadata"]["name"],
                "uid": owner["metadata"]["uid"], "controller": true}]}}),
        );
        assert_eq!(r.status, 201, "{}", r.text());
    };
    create_cm(&s, "outside", json!({}));
    create_cm(&s, "inside", json!({"turtles.dev/test": "keeper"}));
    let outside = s.http().get(&format!("{CMS}/outside")).json();
    let inside = s.http().get(&format!("{CMS}/inside")).json();
    poll("keeper to see inside", Duration::from_secs(30), || {
        (count(&log(), "sees default/inside") >= 1).then_some(())
    })
    .unwrap();
    // The outside ConfigMap's Secret, changed twice; then the inside one's Secret (one worker:
    // its key is reconciled after the outside one's would have been).
    secret("outside-secret", &outside);
    for v in ["a", "b"] {
        let r = s.http().patch(
            "/api/v1/namespaces/default/secrets/outside-secret",
            "application/merge-patch+json",
            &json!({"metadata": {"labels": {"v": v}}}),
        );
        assert_eq!(r.status, 200, "{}", r.text());
    }
    secret("inside-secret", &inside);
    poll(
        "keeper to see inside again",
        Duration::from_secs(30),
        || (count(&log(), "sees default/inside") >= 2).then_some(()),
    )
    .unwrap();
    let text = log();
    assert_eq!(count(&text, "default/outside"), 0, "{text}");
    // Leaving the selector is leaving the controller's view: no object.
    let r = s.http().patch(
        &format!("{CMS}/inside"),
        "application/merge-patch+json",
        &json!({"metadata": {"labels": {"turtles.dev/test": null}}}),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    poll("keeper to see inside go", Duration::from_secs(30), || {
        (count(&log(), "gone default/inside") >= 1).then_some(())
    })
    .unwrap();
}
