//! The async workers under a tenant's heavy writes and reads, against the real binary: a write
//! whose CPU grows with a large stored object (a tiny patch of a 700 KB Deployment), a
//! server-side apply or a deletecollection is served off the workers (counted in
//! `turtles_api_writes_off_workers_total{reason}`), so other clients' requests are answered
//! meanwhile; small writes stay on the workers. A Table or metadata-only LIST of big objects,
//! and a Table watch's event of one, parse them off the workers too (counted in
//! `turtles_api_reads_off_workers_total{reason}`).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use turtles_tests::{configmap, poll, Http, Server};

const MERGE_PATCH: &str = "application/merge-patch+json";
const APPLY_PATCH: &str = "application/apply-patch+yaml";
const DEPLOYMENTS: &str = "/apis/apps/v1/namespaces/tenant/deployments";
const CONFIGMAPS: &str = "/api/v1/namespaces/tenant/configmaps";

/// A Deployment whose one container has `env` variables: 8,000 make it about 700 KB stored
/// (the env list, and as much again in its managed fields).
fn deployment(name: &str, env: usize) -> Value {
    let env: Vec<Value> = (0..env)
        .map(|i| json!({"name": format!("E{i:06}"), "value": "v"}))
        .collect();
    json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "replicas": 0,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "c", "image": "x", "env": env}]}
            }
        }
    })
}

/// `turtles_api_writes_off_workers_total` by reason.
fn off_workers(s: &Server) -> HashMap<String, u64> {
    let text = s.http().get("/metrics").text();
    let found: HashMap<String, u64> = text
        .lines()
        .filter_map(|l| l.strip_prefix("turtles_api_writes_off_workers_total{reason=\""))
        .filter_map(|l| {
            let (reason, value) = l.split_once("\"} ")?;
            Some((reason.to_owned(), value.trim().parse().ok()?))
        })
        .collect();
    for reason in ["body", "stored", "apply", "collection"] {
        assert!(found.contains_key(reason), "no {reason} count in {text}");
    }
    found
}

/// Sets the flag when dropped: the patch loops stop even when the test fails early.
struct StopOnDrop<'a>(&'a AtomicBool);

impl Drop for StopOnDrop<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Release);
    }
}

/// Namespace `tenant`, where user `mallory` holds `edit`, and mallory's client.
fn tenant_with_edit(s: &Server) -> Http {
    s.kubectl_ok(&["create", "namespace", "tenant"]);
    s.kubectl_ok(&[
        "create",
        "rolebinding",
        "mallory-edit",
        "--clusterrole=edit",
        "--user=mallory",
        "-n",
        "tenant",
    ]);
    let (_, token) = s.mint("mallory", &[]).unwrap();
    s.http_with_token(Some(&token))
}

/// A tenant (`edit` in `tenant`) patches four 700 KB Deployments with tiny merge patches from
/// four loops: every one of those patches is served off the async workers (an exact count, not a
/// timing), and the admin's GETs stay fast meanwhile (on two cores they took 500 ms and more
/// when the patches ran on the workers). Small writes, a small server-side apply among them,
/// stay on the workers; a bigger apply, a deletecollection and the DELETE of a big object go
/// off them.
#[test]
fn tiny_writes_to_big_objects_are_served_off_the_workers() {
    const LOOPS: usize = 4;
    let s = Server::start().unwrap();
    let mallory = tenant_with_edit(&s);

    // The big objects, created at once (their 240 KB bodies are big writes themselves).
    let before = off_workers(&s);
    std::thread::scope(|sc| {
        for k in 0..LOOPS {
            let mallory = &mallory;
            sc.spawn(move || {
                let r = mallory.post_json(DEPLOYMENTS, &deployment(&format!("big{k}"), 8000));
                assert_eq!(r.status, 201, "{}", r.text());
            });
        }
    });
    for k in 0..LOOPS {
        let r = s.http().get(&format!("{DEPLOYMENTS}/big{k}"));
        assert_eq!(r.status, 200);
        assert!(r.body.len() > 256 << 10, "big{k} is {} bytes", r.body.len());
    }
    let created = off_workers(&s);
    assert!(
        created["body"] >= before["body"] + LOOPS as u64,
        "{before:?} -> {created:?}"
    );

    // A small object's writes stay on the workers.
    let r = mallory.post_json(CONFIGMAPS, &configmap("small", &[], &[("a", "b")]));
    assert_eq!(r.status, 201, "{}", r.text());
    let r = mallory.patch(
        &format!("{CONFIGMAPS}/small"),
        MERGE_PATCH,
        &json!({"metadata": {"labels": {"x": "1"}}}),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(off_workers(&s), created, "small writes ran off the workers");

    // Four loops of tiny patches to the big objects; the admin's GETs measured while every
    // loop runs.
    let admin = s.http();
    assert_eq!(admin.get("/api/v1/namespaces/default").status, 200);
    let stop = AtomicBool::new(false);
    let failed = AtomicBool::new(false);
    let patched: Vec<AtomicU64> = (0..LOOPS).map(|_| AtomicU64::new(0)).collect();
    let latencies = std::thread::scope(|sc| {
        let _stop = StopOnDrop(&stop);
        for k in 0..LOOPS {
            let (mallory, stop, failed, patched) = (&mallory, &stop, &failed, &patched);
            sc.spawn(move || {
                let path = format!("{DEPLOYMENTS}/big{k}");
                let mut i = 0u64;
                while !stop.load(Ordering::Acquire) {
                    let r = mallory.patch(
                        &path,
                        MERGE_PATCH,
                        &json!({"metadata": {"labels": {"x": i.to_string()}}}),
                    );
                    if r.status != 200 {
                        eprintln!("patch of big{k}: {} {}", r.status, r.text());
                        failed.store(true, Ordering::Release);
                        return;
                    }
                    patched[k].fetch_add(1, Ordering::AcqRel);
                    i += 1;
                }
            });
        }
        poll(
            "every loop to have had a patch served",
            Duration::from_secs(180),
            || {
                (failed.load(Ordering::Acquire)
                    || patched.iter().all(|p| p.load(Ordering::Acquire) >= 1))
                .then_some(())
            },
        )
        .unwrap();
        let mut latencies = Vec::new();
        for _ in 0..25 {
            let start = Instant::now();
            let r = admin.get("/api/v1/namespaces/default");
            latencies.push(start.elapsed());
            assert_eq!(r.status, 200);
        }
        latencies
    });
    assert!(!failed.load(Ordering::Acquire), "a patch failed");
    let total: u64 = patched.iter().map(|p| p.load(Ordering::Acquire)).sum();
    let after = off_workers(&s);
    assert_eq!(
        after["stored"] - created["stored"],
        total,
        "every tiny patch of a big object ran off the workers ({created:?} -> {after:?})"
    );
    assert_eq!(
        after["body"], created["body"],
        "the patches' bodies are small"
    );
    let mut sorted = latencies.clone();
    sorted.sort();
    let p50 = sorted[sorted.len() / 2];
    eprintln!(
        "{total} tiny patches of {LOOPS} big Deployments; admin GET p50 {p50:?}, max {:?}",
        sorted[sorted.len() - 1]
    );
    // Generous (a debug build on a busy machine): the GETs waited behind the patches for
    // 500 ms and more when those ran on the workers.
    assert!(
        p50 < Duration::from_millis(250),
        "admin GETs waited: {latencies:?}"
    );

    // A small server-side apply stays on the workers; one of 32 KiB (over a quarter of the
    // other writes' bound: field sets cost more) goes off them.
    let apply = |name: &str, value: &str| {
        mallory.request(
            "PATCH",
            &format!("{CONFIGMAPS}/{name}?fieldManager=test"),
            Some(APPLY_PATCH),
            Some(
                json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name},
                       "data": {"a": value}})
                .to_string()
                .into_bytes(),
            ),
        )
    };
    let r = apply("applied", "b");
    assert_eq!(r.status, 201, "{}", r.text());
    assert_eq!(off_workers(&s), after, "a small apply ran off the workers");
    let r = apply("applied-big", &"x".repeat(32 << 10));
    assert_eq!(r.status, 201, "{}", r.text());
    // A deletecollection goes off the workers, and so does the DELETE of a big object (it
    // parses the object for admission).
    let r = mallory.request(
        "DELETE",
        &format!("{CONFIGMAPS}?labelSelector=x%3D1"),
        None,
        None,
    );
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(mallory.get(&format!("{CONFIGMAPS}/small")).status, 404);
    let r = mallory.delete(&format!("{DEPLOYMENTS}/big0"));
    assert_eq!(r.status, 200, "{}", r.text());
    let end = off_workers(&s);
    assert_eq!(end["apply"], after["apply"] + 1, "{after:?} -> {end:?}");
    assert_eq!(end["collection"], after["collection"] + 1);
    assert_eq!(end["stored"], after["stored"] + 1);
    assert_eq!(end["body"], after["body"]);
}

/// `turtles_api_reads_off_workers_total` by reason.
fn reads_off_workers(s: &Server) -> HashMap<String, u64> {
    let text = s.http().get("/metrics").text();
    let found: HashMap<String, u64> = text
        .lines()
        .filter_map(|l| l.strip_prefix("turtles_api_reads_off_workers_total{reason=\""))
        .filter_map(|l| {
            let (reason, value) = l.split_once("\"} ")?;
            Some((reason.to_owned(), value.trim().parse().ok()?))
        })
        .collect();
    for reason in [
        "list_table",
        "list_metadata",
        "list_yaml",
        "watch_table",
        "watch_metadata",
        "get",
    ] {
        assert!(found.contains_key(reason), "no {reason} count in {text}");
    }
    found
}

/// A ConfigMap labelled `dense=1` with `keys` keys of 80-byte values: 10,000 make about 900 KB
/// as sent (under kube's 1 MiB of data), over 1 MB stored with its managed fields.
fn dense_configmap(name: &str, keys: usize) -> Value {
    let data: serde_json::Map<String, Value> = (0..keys)
        .map(|i| (format!("k{i:05}"), Value::String("v".repeat(80))))
        .collect();
    json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "labels": {"dense": "1"}},
        "data": data,
    })
}

/// A tenant's Table LISTs of 40 ConfigMaps of 900 KB (`includeObject=None`: a few bytes a row,
/// so the socket never pushes back) parse each object off the workers: a big object is a chunk
/// of its own, and every such chunk is counted (an exact count, not a timing), as is each of a
/// metadata-only LIST and a Table watch's event. The lists are whole, and an administrator's
/// GET is answered while three of them run (on the workers, two of them kept such a GET waiting
/// for 12 s).
#[test]
fn table_lists_of_big_objects_are_rendered_off_the_workers() {
    const OBJECTS: usize = 40;
    const LISTS: usize = 3;
    const TABLE: &str = "application/json;as=Table;v=v1;g=meta.k8s.io";
    const METADATA: &str = "application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io";
    let s = Server::start().unwrap();
    let mallory = tenant_with_edit(&s);
    std::thread::scope(|sc| {
        for k in 0..4 {
            let mallory = &mallory;
            sc.spawn(move || {
                for i in (k..OBJECTS).step_by(4) {
                    let r = mallory.post_json(
                        CONFIGMAPS,
                        &dense_configmap(&format!("dense{i:02}"), 10_000),
                    );
                    assert_eq!(r.status, 201, "{}", r.text());
                }
            });
        }
    });
    let r = s.http().get(&format!("{CONFIGMAPS}/dense00"));
    assert_eq!(r.status, 200);
    assert!(
        r.body.len() > 800 << 10,
        "dense00 is {} bytes",
        r.body.len()
    );

    let selected = format!("{CONFIGMAPS}?labelSelector=dense%3D1");
    let before = reads_off_workers(&s);
    let admin = s.http();
    let (lists, light) = std::thread::scope(|sc| {
        let lists: Vec<_> = (0..LISTS)
            .map(|_| {
                let (mallory, selected) = (&mallory, &selected);
                sc.spawn(move || {
                    mallory.request_with_accept(&format!("{selected}&includeObject=None"), TABLE)
                })
            })
            .collect();
        let start = Instant::now();
        let light = admin.get("/api/v1/namespaces/default");
        eprintln!(
            "an admin GET beside {LISTS} Table LISTs: {:?}",
            start.elapsed()
        );
        let lists: Vec<_> = lists
            .into_iter()
            .map(|h| h.join().expect("a list"))
            .collect();
        (lists, light)
    });
    assert_eq!(light.status, 200, "{}", light.text());
    for r in &lists {
        assert_eq!(r.status, 200, "{}", r.text());
        let t = r.json();
        assert_eq!(t["kind"], "Table");
        let rows = t["rows"].as_array().expect("rows");
        assert_eq!(rows.len(), OBJECTS);
        assert_eq!(rows[0]["cells"][0], "dense00");
        assert!(rows.iter().all(|r| r.get("object").is_none()));
    }
    let after = reads_off_workers(&s);
    assert_eq!(
        after["list_table"] - before["list_table"],
        (LISTS * OBJECTS) as u64,
        "every big object's chunk of every list ({before:?} -> {after:?})"
    );

    // A metadata-only list of them: each object's chunk too.
    let r = mallory.request_with_accept(&selected, METADATA);
    assert_eq!(r.status, 200, "{}", r.text());
    let l = r.json();
    assert_eq!(l["kind"], "PartialObjectMetadataList");
    assert_eq!(l["items"].as_array().map(Vec::len), Some(OBJECTS));
    let metadata = reads_off_workers(&s);
    assert_eq!(
        metadata["list_metadata"] - after["list_metadata"],
        OBJECTS as u64
    );

    // A Table watch from the list's revision: a label patch of one of them is one event,
    // rendered off the workers once.
    let rv = lists[0].json()["metadata"]["resourceVersion"]
        .as_str()
        .expect("a revision")
        .to_owned();
    let mut w = mallory.watch_with_accept(
        &format!("{selected}&watch=1&resourceVersion={rv}&includeObject=None"),
        TABLE,
    );
    assert_eq!(w.status, 200);
    let r = mallory.patch(
        &format!("{CONFIGMAPS}/dense07"),
        MERGE_PATCH,
        &json!({"metadata": {"labels": {"x": "1"}}}),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let ev = w.expect_event("MODIFIED");
    assert_eq!(ev["object"]["kind"], "Table", "{ev}");
    assert_eq!(ev["object"]["rows"][0]["cells"][0], "dense07", "{ev}");
    let end = reads_off_workers(&s);
    assert_eq!(
        end["watch_table"] - metadata["watch_table"],
        1,
        "{metadata:?} -> {end:?}"
    );
    assert_eq!(end["list_yaml"], before["list_yaml"]);

    // One of them read alone as a Table, as metadata and as YAML: each parse off the workers,
    // once; read as stored JSON, or a small object as a Table, none.
    let one = format!("{CONFIGMAPS}/dense03");
    for (accept, kind) in [
        (TABLE, "Table"),
        (
            "application/json;as=PartialObjectMetadata;v=v1;g=meta.k8s.io",
            "PartialObjectMetadata",
        ),
    ] {
        let r = mallory.request_with_accept(&one, accept);
        assert_eq!(r.status, 200, "{}", r.text());
        assert_eq!(r.json()["kind"], kind);
    }
    let r = mallory.request_with_accept(&one, "application/yaml");
    assert_eq!(r.status, 200, "{}", r.text());
    assert!(
        r.text().starts_with("apiVersion: v1\n"),
        "{}",
        &r.text()[..80]
    );
    let r = mallory.get(&one);
    assert_eq!(r.status, 200);
    let r = mallory.post_json(CONFIGMAPS, &configmap("small", &[], &[("k", "v")]));
    assert_eq!(r.status, 201, "{}", r.text());
    let r = mallory.request_with_accept(&format!("{CONFIGMAPS}/small"), TABLE);
    assert_eq!(r.json()["kind"], "Table");
    let gets = reads_off_workers(&s);
    assert_eq!(gets["get"] - end["get"], 3, "{end:?} -> {gets:?}");
}

/// Executable mappings of process `pid` that are anonymous (no file behind them) and at least
/// 2 MiB: `(bytes, AnonHugePages bytes)` each.
fn anonymous_code(pid: u32) -> Vec<(u64, u64)> {
    let smaps = std::fs::read_to_string(format!("/proc/{pid}/smaps")).expect("smaps");
    let mut out = Vec::new();
    let mut current: Option<(u64, u64)> = None;
    for line in smaps.lines() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let header = fields.first().is_some_and(|r| {
            r.contains('-') && r.chars().all(|c| c.is_ascii_hexdigit() || c == '-')
        });
        if header {
            out.extend(current.take());
            let (a, b) = fields[0].split_once('-').expect("range");
            let len = u64::from_str_radix(b, 16).unwrap() - u64::from_str_radix(a, 16).unwrap();
            // perms, offset, dev, inode, no path: an anonymous mapping.
            if fields[1].starts_with("r-x")
                && fields[4] == "0"
                && fields.len() == 5
                && len >= 2 << 20
            {
                current = Some((len, 0));
            }
        } else if let (Some(c), Some(v)) = (current.as_mut(), line.strip_prefix("AnonHugePages:")) {
            c.1 = v
                .trim()
                .trim_end_matches("kB")
                .trim()
                .parse::<u64>()
                .unwrap()
                * 1024;
        }
    }
    out.extend(current);
    out
}

/// `turtles serve` copies its code onto transparent huge pages at start (an anonymous executable
/// mapping of whole 2 MiB pages, backed by huge pages where the kernel allows them), and still
/// serves; `--code-huge-pages=false` leaves its code on the file.
#[test]
fn the_hosts_code_is_on_huge_pages_unless_turned_off() {
    let s = Server::start().unwrap();
    let moved = anonymous_code(s.pid().unwrap());
    assert_eq!(moved.len(), 1, "one anonymous code mapping: {moved:?}");
    let (bytes, huge) = moved[0];
    assert_eq!(bytes % (2 << 20), 0, "whole 2 MiB pages: {bytes}");
    let thp =
        std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled").unwrap_or_default();
    if thp.contains("[never]") {
        eprintln!("transparent huge pages are off on this machine: {huge} bytes huge");
    } else {
        assert!(huge >= bytes / 2, "mostly on huge pages: {huge} of {bytes}");
    }
    let log = std::fs::read_to_string(s.data_dir.join("turtles.log")).unwrap();
    assert!(log.contains("the host's code is on huge pages"), "{log}");
    let r = s.http().get("/api/v1/namespaces/default/configmaps");
    assert_eq!(r.status, 200, "{}", r.text());

    let off = Server::start_with(&["--code-huge-pages=false"]).unwrap();
    assert_eq!(anonymous_code(off.pid().unwrap()), vec![]);
    let r = off.http().get("/api/v1/namespaces/default/configmaps");
    assert_eq!(r.status, 200, "{}", r.text());
}

/// `turtles_api_scan_yields_total`.
fn scan_yields(s: &Server) -> u64 {
    let text = s.http().get("/metrics").text();
    text.lines()
        .find_map(|l| l.strip_prefix("turtles_api_scan_yields_total "))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no turtles_api_scan_yields_total in {text}"))
}

/// A tenant's LIST and watch with a label selector of 3,000 terms over its 1,200 objects of 100
/// labels each: judging them is the request's own work, done on the async workers but given
/// back every millisecond (counted in `turtles_api_scan_yields_total`: a count, not a timing),
/// and the answers are whole. (On two cores two such LISTs in loops held the workers for
/// seconds at a time, stalling every other client.)
#[test]
fn long_label_selectors_give_the_workers_back() {
    const OBJECTS: usize = 1200;
    let s = Server::start().unwrap();
    let mallory = tenant_with_edit(&s);
    for i in 0..OBJECTS {
        let labels: serde_json::Map<String, Value> = (0..100)
            .map(|l| (format!("l{l:03}"), json!(format!("v{}", (i + l) % 7))))
            .chain([("name".to_owned(), json!(format!("cm-{i:04}")))])
            .collect();
        let r = mallory.post_json(
            CONFIGMAPS,
            &json!({"metadata": {"name": format!("cm-{i:04}"), "labels": labels}}),
        );
        assert_eq!(r.status, 201, "{}", r.text());
    }
    // 3,000 terms no object fails: every object is judged against every term.
    let terms: Vec<String> = (0..3000).map(|i| format!("k{i}!=v")).collect();
    let selector = terms.join(",");
    let before = scan_yields(&s);
    let r = mallory.get(&format!("{CONFIGMAPS}?labelSelector={selector}"));
    assert_eq!(r.status, 200, "{}", r.text());
    // (and the namespace's `kube-root-ca.crt`)
    assert_eq!(r.json()["items"].as_array().unwrap().len(), OBJECTS + 1);
    let after_list = scan_yields(&s);
    assert!(after_list > before, "{before} -> {after_list}");
    // The same terms and one that picks a single object, on a watch that starts with the
    // objects' states (judged when the watch gets to them, paced the same way).
    let mut w = mallory.watch(&format!(
        "{CONFIGMAPS}?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&labelSelector={selector},name=cm-0777,l001=v{}",
        (777 + 1) % 7
    ));
    let added = w.expect_event("ADDED");
    assert_eq!(added["object"]["metadata"]["name"], "cm-0777", "{added}");
    let end = w.expect_event("BOOKMARK");
    assert_eq!(
        end["object"]["metadata"]["annotations"]["k8s.io/initial-events-end"], "true",
        "{end}"
    );
    let after_watch = scan_yields(&s);
    assert!(after_watch > after_list, "{after_list} -> {after_watch}");
}
