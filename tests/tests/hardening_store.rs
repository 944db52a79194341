//! Hardening of what is stored: the attacks of a tenant holding `edit` in one namespace against
//! the store (objects too deep to read back, patches that multiply nesting or size, objects
//! beyond etcd's size limit), an unreadable object on disk, and a full disk. The real binary,
//! real files on disk (the wal engine, and sled), real kubectl.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use serde_json::{json, Value};
use turtles_tests::{assert_status, poll, Http, Server};

const JSON_PATCH: &str = "application/json-patch+json";
const MERGE_PATCH: &str = "application/merge-patch+json";
const THINGS: &str = "/apis/example.com/v1/namespaces/tenant/things";

/// A namespace `tenant` where user `mallory` holds the built-in `edit` role, a CRD whose objects
/// keep any fields, and mallory's HTTP client.
fn tenant(s: &Server) -> Http {
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
    let crd = json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "things.example.com"},
        "spec": {
            "group": "example.com",
            "names": {"kind": "Thing", "plural": "things"},
            "scope": "Namespaced",
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object",
                    "x-kubernetes-preserve-unknown-fields": true}}}]
        }
    });
    let r = s.http().post_json(
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
        &crd,
    );
    assert_eq!(r.status, 201, "{}", r.text());
    // `edit` covers custom resources only through aggregation; grant the CRD's kind too.
    s.kubectl_ok(&[
        "create",
        "role",
        "things",
        "--verb=*",
        "--resource=things.example.com",
        "-n",
        "tenant",
    ]);
    s.kubectl_ok(&[
        "create",
        "rolebinding",
        "mallory-things",
        "--role=things",
        "--user=mallory",
        "-n",
        "tenant",
    ]);
    let (_kc, token) = s.mint("mallory", &[]).unwrap();
    s.http_with_token(Some(&token))
}

/// `levels` nested arrays around a string.
fn nested(levels: usize) -> Value {
    let mut v = json!("leaf");
    for _ in 0..levels {
        v = Value::Array(vec![v]);
    }
    v
}

fn thing(name: &str, spec: Value) -> Value {
    json!({"apiVersion": "example.com/v1", "kind": "Thing",
           "metadata": {"name": name}, "spec": spec})
}

#[test]
fn patches_cannot_build_objects_too_deep_or_too_big_and_nothing_bricks_the_store() {
    let mut s = Server::start().unwrap();
    s.keep_data();
    let mallory = tenant(&s);
    let r = mallory.post_json(THINGS, &thing("t", json!({"a": {"b": 1}})));
    assert_eq!(r.status, 201, "{}", r.text());
    let before = mallory.get(&format!("{THINGS}/t")).json();

    // Copies that nest the object in itself, one level more each time (doubling it each time
    // once crashed the whole process).
    let mut ops = vec![];
    for _ in 0..200 {
        ops.push(json!({"op": "copy", "from": "/spec/a", "path": "/spec/a/b"}));
    }
    let r = mallory.patch(&format!("{THINGS}/t"), JSON_PATCH, &json!(ops));
    let st = assert_status(&r, 422, "Invalid");
    assert!(
        st["message"].as_str().unwrap().contains("nested deeper"),
        "{st}"
    );

    // Copies that double the size each time: once an OOM kill from a 600-byte patch.
    let mut ops = vec![json!({"op": "add", "path": "/spec/s", "value": "x".repeat(512)})];
    for i in 0..40 {
        ops.push(json!({"op": "copy", "from": "/spec", "path": format!("/spec/c{i}")}));
    }
    // Refused as kube refuses any JSON patch that does not apply: its generic 422, which does
    // not say why (`jsonPatcher.applyJSPatch`).
    let r = mallory.patch(&format!("{THINGS}/t"), JSON_PATCH, &json!(ops));
    let st = assert_status(&r, 422, "Invalid");
    assert_eq!(
        st["message"], "the server rejected our request due to an error in our request",
        "{st}"
    );
    assert_eq!(st["details"], json!({}), "{st}");

    // Two values each as deep as a body may be, one added inside the other: once stored, and the
    // store then refused to start.
    let r = mallory.patch(
        &format!("{THINGS}/t"),
        JSON_PATCH,
        &json!([{"op": "add", "path": "/spec/deep", "value": nested(120)}]),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let deep_path = format!("/spec/deep{}", "/0".repeat(119));
    let r = mallory.patch(
        &format!("{THINGS}/t"),
        JSON_PATCH,
        &json!([{"op": "add", "path": deep_path, "value": nested(120)}]),
    );
    assert_status(&r, 422, "Invalid");

    // kube's cap on the number of operations.
    let ops: Vec<Value> = (0..10_001)
        .map(|_| json!({"op": "test", "path": "/kind", "value": "Thing"}))
        .collect();
    let r = mallory.patch(&format!("{THINGS}/t"), JSON_PATCH, &json!(ops));
    let st = assert_status(&r, 413, "RequestEntityTooLarge");
    assert_eq!(
        st["message"],
        "Request entity too large: The allowed maximum operations in a JSON patch is 10000, got 10001"
    );

    // Nothing of the refused patches was stored.
    let now = mallory.get(&format!("{THINGS}/t")).json();
    assert_eq!(now["spec"]["a"], before["spec"]["a"]);
    assert!(now["spec"].get("s").is_none(), "{now}");

    // The deepest object a body may carry is stored and read back after a restart.
    let deepest = thing("deepest", nested(125));
    let r = mallory.post_json(THINGS, &deepest);
    assert_eq!(r.status, 201, "{}", r.text());
    s.restart().unwrap();
    let mallory = s.http_with_token(Some(&s.mint("mallory", &[]).unwrap().1));
    let got = mallory.get(&format!("{THINGS}/deepest"));
    assert_eq!(got.status, 200, "{}", got.text());
    assert_eq!(got.json()["spec"], deepest["spec"]);
    assert_eq!(mallory.get(&format!("{THINGS}/t")).status, 200);
}

#[test]
fn objects_beyond_the_size_limit_are_refused_with_413_on_every_path() {
    let s = Server::start().unwrap();
    let mallory = tenant(&s);
    // A ConfigMap over kube's 1 MiB of data is invalid before it reaches the store, as in kube.
    let cms = "/api/v1/namespaces/tenant/configmaps";
    let big = "y".repeat(2 << 20);
    let r = mallory.post_json(
        cms,
        &json!({"metadata": {"name": "big"}, "data": {"k": big}}),
    );
    let st = assert_status(&r, 422, "Invalid");
    assert_eq!(
        st["message"],
        "ConfigMap \"big\" is invalid: []: Too long: may not be more than 1048576 bytes"
    );
    // kube's `field.NewPath("")`.
    assert_eq!(st["details"]["causes"][0]["field"], "[]", "{st}");
    assert_eq!(mallory.get(&format!("{cms}/big")).status, 404);

    // What no kind's validation bounds, the store does: 2 MiB in a custom resource (under the
    // 3 MiB body limit, over the 1.5 MiB an object may have).
    let r = mallory.post_json(THINGS, &thing("big", json!({"k": big})));
    let st = assert_status(&r, 413, "RequestEntityTooLarge");
    assert!(
        st["message"].as_str().unwrap().contains("limit is 1572864"),
        "{st}"
    );
    assert_eq!(mallory.get(&format!("{THINGS}/big")).status, 404);

    // Grown by patches, 1 MiB at a time, it stops at the limit.
    let r = mallory.post_json(THINGS, &thing("grow", json!({"a": "z".repeat(1 << 20)})));
    assert_eq!(r.status, 201, "{}", r.text());
    let r = mallory.patch(
        &format!("{THINGS}/grow"),
        MERGE_PATCH,
        &json!({"spec": {"b": "z".repeat(1 << 20)}}),
    );
    assert_status(&r, 413, "RequestEntityTooLarge");
    let r = mallory.patch(
        &format!("{THINGS}/grow"),
        JSON_PATCH,
        &json!([{"op": "copy", "from": "/spec/a", "path": "/spec/c"}]),
    );
    assert_status(&r, 413, "RequestEntityTooLarge");
    let got = mallory.get(&format!("{THINGS}/grow")).json();
    assert_eq!(got["spec"].as_object().unwrap().len(), 1, "nothing grew");

    // kubectl shows the refusal.
    let file = s.data_dir.join("big.txt");
    std::fs::write(&file, "q".repeat(2 << 20)).unwrap();
    let from = format!("--from-file=k={}", file.display());
    let out = s.kubectl(&["-n", "tenant", "create", "configmap", "big2", &from]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("Too long: may not be more than 1048576 bytes"),
        "{err}"
    );
}

/// Put raw bytes under an object's key in a stopped host's sled store.
fn plant_sled(data_dir: &Path, resource: &str, ns: &str, name: &str, raw: &[u8]) {
    let db = sled::open(data_dir.join("store")).unwrap();
    db.insert(format!("o\0{resource}\0{ns}\0{name}").as_bytes(), raw)
        .unwrap();
    db.flush().unwrap();
}

/// Put raw bytes under an object's key in a stopped host's wal store: one more frame at the end
/// of its last log segment, in the format `host/src/store/wal.rs` documents (`len, crc32`, then
/// the first revision, the count and the change), with the revision after the log's last one.
fn plant_wal(data_dir: &Path, resource: &str, ns: &str, name: &str, raw: &[u8]) {
    use std::io::Write;
    let dir = data_dir.join("store");
    let mut segments: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            let n = p.file_name().unwrap().to_string_lossy();
            n.starts_with("wal-") && n.ends_with(".log")
        })
        .collect();
    segments.sort();
    let last = segments.pop().expect("a log segment");
    let bytes = std::fs::read(&last).unwrap();
    let le64 = |b: &[u8]| u64::from_le_bytes(b[..8].try_into().unwrap());
    let le32 = |b: &[u8]| u32::from_le_bytes(b[..4].try_into().unwrap());
    // The segment's first revision, then each frame's last.
    let mut rv = le64(&bytes[8..16]) - 1;
    let mut at = 16;
    while at + 8 <= bytes.len() && le32(&bytes[at..]) != 0 {
        let n = le32(&bytes[at..]) as usize;
        let payload = &bytes[at + 8..at + 8 + n];
        rv = le64(payload) + u64::from(le32(&payload[8..])) - 1;
        at += 8 + n;
    }
    let key = format!("o\0{resource}\0{ns}\0{name}");
    let mut payload = Vec::new();
    payload.extend_from_slice(&(rv + 1).to_le_bytes());
    payload.extend_from_slice(&1u32.to_le_bytes());
    payload.push(1);
    payload.extend_from_slice(&(key.len() as u32).to_le_bytes());
    payload.extend_from_slice(key.as_bytes());
    payload.extend_from_slice(&(raw.len() as u32).to_le_bytes());
    payload.extend_from_slice(raw);
    let mut frame = Vec::new();
    frame.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    frame.extend_from_slice(&crc32fast::hash(&payload).to_le_bytes());
    frame.extend_from_slice(&payload);
    let mut f = std::fs::OpenOptions::new().write(true).open(&last).unwrap();
    f.set_len(at as u64).unwrap();
    std::io::Seek::seek(&mut f, std::io::SeekFrom::Start(at as u64)).unwrap();
    f.write_all(&frame).unwrap();
    f.sync_all().unwrap();
}

#[test]
fn an_unreadable_stored_object_is_set_aside_and_the_rest_is_served() {
    unreadable_objects(&[], plant_wal);
}

#[test]
fn an_unreadable_stored_object_is_set_aside_and_the_rest_is_served_on_sled() {
    unreadable_objects(&["--store", "sled"], plant_sled);
}

type Plant = fn(&Path, &str, &str, &str, &[u8]);

fn unreadable_objects(args: &[&str], plant: Plant) {
    let mut s = Server::start_with(args).unwrap();
    s.kubectl_ok(&["create", "configmap", "good", "--from-literal=a=b"]);
    s.stop().unwrap();
    // A value nested deeper than the parser reads, and one that is not JSON at all.
    let too_deep = format!("{}1{}", "[".repeat(300), "]".repeat(300));
    plant(
        &s.data_dir,
        "configmaps",
        "default",
        "deep",
        too_deep.as_bytes(),
    );
    plant(
        &s.data_dir,
        "configmaps",
        "default",
        "torn",
        b"{\"metadata\": {\"na",
    );
    s.restart().unwrap();

    let names = s.kubectl_ok(&["get", "configmaps", "-o", "name"]);
    assert!(names.contains("configmap/good"), "{names}");
    assert!(
        !names.contains("deep") && !names.contains("torn"),
        "{names}"
    );
    // Set aside where docs/security.md says, byte for byte.
    let q = s.data_dir.join("quarantine");
    let saved = std::fs::read(q.join("configmaps_default_deep.json")).unwrap();
    assert_eq!(saved, too_deep.as_bytes());
    assert!(q.join("configmaps_default_torn.json").exists());
    let metrics = s.http().get("/metrics").text();
    assert!(
        metrics.contains("turtles_store_quarantined_objects 2"),
        "{metrics}"
    );
    assert!(s.log().contains("set aside"), "{}", s.log());
    // Writes go on; the name of a set-aside object can be used again.
    s.kubectl_ok(&["create", "configmap", "deep", "--from-literal=x=y"]);
    assert_eq!(
        s.kubectl_json(&["get", "configmap", "deep"])["data"]["x"],
        "y"
    );
}

/// A tmpfs of `mib` MiB mounted at a fresh directory, unmounted on drop.
struct SmallDisk {
    dir: PathBuf,
}

impl SmallDisk {
    fn mount(mib: usize) -> Self {
        let dir =
            std::env::temp_dir().join(format!("turtles-small-disk-{}", turtles_tests::uuid_like()));
        std::fs::create_dir_all(&dir).unwrap();
        let ok = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={mib}m"), "tmpfs"])
            .arg(&dir)
            .status()
            .unwrap();
        assert!(
            ok.success(),
            "mounting a tmpfs needs root (CI runs as root)"
        );
        Self { dir }
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.dir).status();
        let _ = std::fs::remove_dir(&self.dir);
    }
}

/// Fill the filesystem of `dir` with a file until writing fails.
fn fill(dir: &Path) -> PathBuf {
    use std::io::Write;
    let path = dir.join("filler");
    let mut f = std::fs::File::create(&path).unwrap();
    let chunk = vec![0u8; 64 * 1024];
    while f.write_all(&chunk).is_ok() {}
    let _ = f.sync_all();
    path
}

#[test]
fn a_full_disk_refuses_writes_clearly_and_they_resume_once_space_is_back() {
    full_disk(&[]);
}

#[test]
fn a_full_disk_refuses_writes_clearly_and_they_resume_once_space_is_back_on_sled() {
    full_disk(&["--store", "sled"]);
}

fn full_disk(args: &[&str]) {
    let disk = SmallDisk::mount(48);
    let data = disk.dir.join("data");
    let mut s = Server::start_in(data.clone(), args).unwrap();
    let http = s.http();
    let cms = "/api/v1/namespaces/default/configmaps";
    let cm =
        |i: usize| json!({"metadata": {"name": format!("cm{i}")}, "data": {"v": "p".repeat(4096)}});
    let mut acknowledged = vec![];
    for i in 0..20 {
        assert_eq!(http.post_json(cms, &cm(i)).status, 201);
        acknowledged.push(i);
    }
    let filler = fill(&disk.dir);

    // Writes fail with a clear Status while the disk is full; reads go on.
    let mut i = acknowledged.len();
    let refused = poll(
        "a write refused for the full disk",
        Duration::from_secs(60),
        || {
            let r = http.post_json(cms, &cm(i));
            if r.status == 201 {
                acknowledged.push(i);
                i += 1;
                return None;
            }
            Some(r)
        },
    )
    .unwrap();
    let st = assert_status(&refused, 503, "ServiceUnavailable");
    assert!(
        st["message"]
            .as_str()
            .unwrap()
            .contains("storage is unavailable"),
        "{st}"
    );
    assert!(refused.headers.contains_key("retry-after"));
    let r = http.post_json(cms, &cm(i + 1));
    assert_status(&r, 503, "ServiceUnavailable");
    let ready = http.get("/readyz");
    assert_eq!(ready.status, 500, "{}", ready.text());
    assert!(
        ready.text().contains("[-]storage failed"),
        "{}",
        ready.text()
    );
    // kube's health checks name the store `etcd`: /healthz fails with it, and says which.
    let h = http.get("/healthz");
    assert_eq!(h.status, 500, "{}", h.text());
    assert_eq!(
        h.text(),
        "[+]ping ok\n[+]log ok\n[-]etcd failed: reason withheld\nhealthz check failed\n"
    );
    assert_eq!(http.get("/livez?exclude=etcd").status, 200);
    let e = http.get("/healthz/etcd");
    assert_eq!(e.status, 500);
    assert!(
        e.text().starts_with("internal server error: "),
        "{}",
        e.text()
    );
    assert_eq!(http.get(&format!("{cms}/cm0")).status, 200);

    // Space is back: writes resume by themselves.
    std::fs::remove_file(&filler).unwrap();
    poll("writes to resume", Duration::from_secs(30), || {
        (http.post_json(cms, &cm(10_000)).status == 201).then_some(())
    })
    .unwrap();
    assert_eq!(http.get("/readyz").status, 200);
    assert_eq!(http.get("/healthz").status, 200);
    let log = s.log();
    assert!(
        log.contains("refusing writes until the disk recovers"),
        "{log}"
    );
    assert!(log.contains("writes resume"), "{log}");

    acknowledged.push(10_000);

    // Full again: SIGTERM still exits cleanly, and no acknowledged write is lost on disk.
    let filler = fill(&disk.dir);
    let mut i = 20_000;
    poll("a write refused again", Duration::from_secs(60), || {
        let r = http.post_json(cms, &cm(i));
        if r.status == 201 {
            acknowledged.push(i);
            i += 1;
            return None;
        }
        (r.status == 503).then_some(())
    })
    .unwrap();
    let status = s.stop().unwrap();
    assert!(status.success(), "{status:?}\n{}", s.log());
    std::fs::remove_file(&filler).unwrap();
    if let Err(e) = s.restart() {
        panic!("{e:#}\n{}", s.log());
    }
    let http = s.http();
    for i in &acknowledged {
        assert_eq!(http.get(&format!("{cms}/cm{i}")).status, 200, "cm{i}");
    }
    drop(s);
}
