//! What survives a restart, a clean stop and a `kill -9`.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};
use turtles_tests::{configmap, poll, rv, Server};

const CMS: &str = "/api/v1/namespaces/default/configmaps";

#[test]
fn restart_keeps_objects_and_revisions_grow() {
    let mut s = Server::start().unwrap();
    // The revisions compared below are the test's own writes' and the host's: its start-up
    // writes (APIServices and their conditions) done first.
    s.wait_settled(Duration::from_secs(60)).unwrap();
    let http = s.http();
    let mut before: BTreeMap<String, Value> = BTreeMap::new();
    for i in 0..5 {
        let r = http.post_json(
            CMS,
            &configmap(&format!("k{i}"), &[("i", "x")], &[("n", "1")]),
        );
        assert_eq!(r.status, 201, "{}", r.text());
        before.insert(format!("k{i}"), r.json());
    }
    // An update and a delete, so the last revision belongs to neither a live create nor an update.
    let r = http.patch(
        &format!("{CMS}/k0"),
        "application/merge-patch+json",
        &json!({"data": {"n": "2"}}),
    );
    assert_eq!(r.status, 200);
    before.insert("k0".into(), r.json());
    let r = http.delete(&format!("{CMS}/k4"));
    assert_eq!(r.status, 200);
    before.remove("k4");
    let last = rv(&http.get(CMS).json());
    // The host's own objects that a restart on another port rewrites (the `kubernetes` Service
    // and its endpoints follow the listen address).
    const HOST_OWNED: [&str; 3] = [
        "/api/v1/namespaces/default/services/kubernetes",
        "/api/v1/namespaces/default/endpoints/kubernetes",
        "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices/kubernetes",
    ];
    let host_rvs: Vec<u64> = HOST_OWNED.iter().map(|p| rv(&http.get(p).json())).collect();

    let status = s.stop().unwrap();
    assert!(status.success(), "clean exit: {status:?}\n{}", s.log());
    s.restart().unwrap();
    let http = s.http();

    let list = http.get(CMS).json();
    // Whatever the host rewrote at start was written after the delete's revision.
    let mut latest = last;
    for (p, before) in HOST_OWNED.iter().zip(host_rvs) {
        let now = rv(&http.get(p).json());
        if now != before {
            assert!(now > last, "{p} rewritten at {now}, not after {last}");
            latest = latest.max(now);
        }
    }
    // The delete's revision survives: the store is at least there. (Other writes of the host
    // at start, besides those tracked above, may have moved it on by the time of the list: a
    // controller's own status, say. A lost delete would leave the store at `last - 1`, and the
    // first rewrite above at `last`.)
    let current = rv(&list);
    assert!(
        current >= latest,
        "the revision survives, the delete included: {current} < {latest}"
    );
    // (Besides the namespace's `kube-root-ca.crt`, the host's own.)
    let items: Vec<&Value> = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["metadata"]["name"] != "kube-root-ca.crt")
        .collect();
    assert_eq!(items.len(), before.len(), "{list}");
    for item in items {
        let name = item["metadata"]["name"].as_str().unwrap();
        assert_eq!(item, &before[name], "{name} survives unchanged");
    }
    // Namespaces are not created twice.
    let ns = http.get("/api/v1/namespaces").json();
    assert_eq!(ns["items"].as_array().unwrap().len(), 4, "{ns}");

    let r = http.post_json(CMS, &configmap("after", &[], &[]));
    assert_eq!(r.status, 201, "{}", r.text());
    assert!(rv(&r.json()) > current, "revisions grow after a restart");
}

#[test]
fn stop_exits_cleanly() {
    let mut s = Server::start().unwrap();
    let r = s.http().post_json(CMS, &configmap("x", &[], &[]));
    assert_eq!(r.status, 201);
    let status = s.stop().unwrap();
    assert!(status.success(), "{status:?}\n{}", s.log());
    assert!(s.log().contains("stopped cleanly"), "{}", s.log());
}

/// Threads creating ConfigMaps as fast as the server takes them, each until it has made `per`
/// or the server stops answering.
struct Writers {
    acked: Arc<Mutex<Vec<(String, u64)>>>,
    /// Answers other than 201 (status and body).
    refused: Arc<Mutex<Vec<(u16, String)>>>,
    count: Arc<AtomicUsize>,
    cut_off: Arc<AtomicBool>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl Writers {
    fn start(s: &Server, threads: usize, per: usize) -> Self {
        let acked: Arc<Mutex<Vec<(String, u64)>>> = Arc::default();
        let refused: Arc<Mutex<Vec<(u16, String)>>> = Arc::default();
        let count = Arc::new(AtomicUsize::new(0));
        let cut_off = Arc::new(AtomicBool::new(false));
        let threads = (0..threads)
            .map(|t| {
                let http = s.http();
                let (acked, refused) = (acked.clone(), refused.clone());
                let (count, cut_off) = (count.clone(), cut_off.clone());
                std::thread::spawn(move || {
                    for i in 0..per {
                        let name = format!("w{t}-{i}");
                        let body =
                            configmap(&name, &[("t", &t.to_string())], &[("i", &i.to_string())]);
                        match http.try_request(
                            "POST",
                            CMS,
                            Some("application/json"),
                            Some(body.to_string().into_bytes()),
                        ) {
                            Ok(r) if r.status == 201 => {
                                acked.lock().unwrap().push((name, rv(&r.json())));
                                count.fetch_add(1, Ordering::Relaxed);
                            }
                            Ok(r) => {
                                refused.lock().unwrap().push((r.status, r.text()));
                                return;
                            }
                            Err(_) => {
                                cut_off.store(true, Ordering::Relaxed);
                                return;
                            }
                        }
                    }
                })
            })
            .collect();
        Writers {
            acked,
            refused,
            count,
            cut_off,
            threads,
        }
    }

    fn wait_for(&self, n: usize) {
        poll(
            &format!("{n} acknowledged creates"),
            Duration::from_secs(60),
            || (self.count.load(Ordering::Relaxed) >= n).then_some(()),
        )
        .unwrap();
    }

    /// Join the threads and collect what they saw.
    fn finish(self) -> Written {
        for t in self.threads {
            t.join().expect("writer thread");
        }
        Written {
            acked: std::mem::take(&mut *self.acked.lock().unwrap()),
            refused: std::mem::take(&mut *self.refused.lock().unwrap()),
            cut_off: self.cut_off.load(Ordering::Relaxed),
        }
    }
}

struct Written {
    /// Names whose create was acknowledged, with the resourceVersion it returned.
    acked: Vec<(String, u64)>,
    /// Answers other than 201: status and body.
    refused: Vec<(u16, String)>,
    /// Some thread lost its connection.
    cut_off: bool,
}

/// Every acknowledged create is there with the revision it was acknowledged with, and the next
/// write gets a higher revision than anything before.
fn assert_all_present(s: &Server, acked: &[(String, u64)]) {
    let http = s.http();
    let mut max_rv = 0;
    for (name, acked_rv) in acked {
        let r = http.get(&format!("{CMS}/{name}"));
        assert_eq!(r.status, 200, "acknowledged {name} was lost: {}", r.text());
        assert_eq!(rv(&r.json()), *acked_rv, "{name}");
        max_rv = max_rv.max(*acked_rv);
    }
    let list = http.get(CMS).json();
    assert!(rv(&list) >= max_rv);
    assert!(list["items"].as_array().unwrap().len() >= acked.len());
    let r = http.post_json(CMS, &configmap("after-restart", &[], &[]));
    assert_eq!(r.status, 201, "{}", r.text());
    assert!(
        rv(&r.json()) > rv(&list),
        "revisions continue upward: {} after {}",
        rv(&r.json()),
        rv(&list)
    );
}

const THREADS: usize = 8;
const PER_THREAD: usize = 5000;
/// About a second of writes at a few thousand creates per second.
const STOP_AFTER: usize = 4000;

/// Creates from [`THREADS`] clients, and `kill -9` of the host once [`STOP_AFTER`] were
/// acknowledged.
fn kill_9_under_load(s: &mut Server) -> Written {
    let writers = Writers::start(s, THREADS, PER_THREAD);
    writers.wait_for(STOP_AFTER);
    s.kill9().unwrap();
    let w = writers.finish();
    assert!(w.refused.is_empty(), "{:?}", w.refused);
    assert!(w.cut_off, "the kill happened while writes were in flight");
    assert!(w.acked.len() >= STOP_AFTER && w.acked.len() < THREADS * PER_THREAD);
    w
}

#[test]
fn acknowledged_writes_survive_kill_9_on_sled() {
    let mut s = Server::start_with(&["--store", "sled"]).unwrap();
    let w = kill_9_under_load(&mut s);
    s.restart().unwrap();
    assert_all_present(&s, &w.acked);
    // And the store is consistent enough to stop cleanly.
    let status = s.stop().unwrap();
    assert!(status.success(), "{status:?}\n{}", s.log());
}

/// `--store wal`: the same kill, with a snapshot threshold small enough that snapshots are
/// written (and old segments deleted) while the creates go on, so the kill can land in the
/// middle of one. After the restart a write and a second restart find the log whole.
#[test]
fn acknowledged_writes_survive_kill_9_on_the_wal_engine() {
    let mut s = Server::start_with(&["--store", "wal", "--wal-snapshot-bytes", "1Mi"]).unwrap();
    let w = kill_9_under_load(&mut s);
    let store = s.data_dir.join("store");
    let names = || -> Vec<String> {
        std::fs::read_dir(&store)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect()
    };
    assert!(
        names().iter().any(|n| n.starts_with("snap-")),
        "a snapshot was written under load: {:?}",
        names()
    );

    s.restart().unwrap();
    // Also writes `after-restart` on the log the kill left.
    assert_all_present(&s, &w.acked);
    let status = s.stop().unwrap();
    assert!(status.success(), "{status:?}\n{}", s.log());
    s.restart().unwrap();
    let http = s.http();
    for (name, acked_rv) in &w.acked {
        let r = http.get(&format!("{CMS}/{name}"));
        assert_eq!(r.status, 200, "{name} lost on the second restart");
        assert_eq!(rv(&r.json()), *acked_rv, "{name}");
    }
    assert_eq!(http.get(&format!("{CMS}/after-restart")).status, 200);
}

/// `--store etcd`: the host and every etcd member killed with SIGKILL while creates are in
/// flight. The host acknowledges a write only once etcd has committed it (on a quorum, each of
/// which fsynced its log), so everything acknowledged is there when etcd and the host come back.
#[test]
fn acknowledged_writes_survive_kill_9_of_the_host_and_every_etcd_member() {
    let mut etcd = turtles_tests::etcd::EtcdCluster::start(3).unwrap();
    let prefix = format!("/turtles-{}/", turtles_tests::uuid_like());
    let mut s = Server::start_with(&[
        "--store",
        "etcd",
        "--etcd-endpoints",
        &etcd.endpoints(),
        "--etcd-prefix",
        &prefix,
    ])
    .unwrap();
    // etcd on this machine takes ~1,000 creates/s: about a second of writes.
    const ETCD_STOP_AFTER: usize = 1000;
    let writers = Writers::start(&s, THREADS, PER_THREAD);
    writers.wait_for(ETCD_STOP_AFTER);
    s.kill9().unwrap();
    for i in 0..etcd.members.len() {
        etcd.kill9(i).unwrap();
    }
    let w = writers.finish();
    assert!(w.refused.is_empty(), "{:?}", w.refused);
    assert!(w.cut_off, "the kill happened while writes were in flight");
    assert!(w.acked.len() >= ETCD_STOP_AFTER && w.acked.len() < THREADS * PER_THREAD);

    etcd.restart_killed().unwrap();
    s.restart().unwrap();
    assert_all_present(&s, &w.acked);
}

#[test]
fn sigterm_under_load_is_clean_and_loses_nothing() {
    let mut s = Server::start().unwrap();
    let writers = Writers::start(&s, THREADS, PER_THREAD);
    writers.wait_for(STOP_AFTER);
    let status = s.stop().unwrap();
    assert!(status.success(), "{status:?}\n{}", s.log());
    let w = writers.finish();
    // Requests that raced the shutdown may be refused, but only as "shutting down".
    for (code, body) in &w.refused {
        assert_eq!(*code, 503, "{body}");
    }
    assert!(w.acked.len() >= STOP_AFTER && w.acked.len() < THREADS * PER_THREAD);

    s.restart().unwrap();
    assert_all_present(&s, &w.acked);
}

#[test]
fn stop_is_not_held_up_by_a_stalled_watcher() {
    let mut s = Server::start().unwrap();
    // A watch client that never reads its body: the server's writes to it back up.
    let http = s.http();
    let stalled = http
        .client
        .get(format!("{}{CMS}?watch=true", s.url))
        .send()
        .unwrap();
    assert_eq!(stalled.status().as_u16(), 200);
    // Far more event data than the socket buffers on both ends hold.
    let blob = "x".repeat(1024 * 1024);
    for i in 0..16 {
        let r = http.post_json(CMS, &configmap(&format!("big{i}"), &[], &[("b", &blob)]));
        assert_eq!(r.status, 201, "{}", r.text());
    }
    // stop() fails if the host has not exited within its deadline.
    let status = s.stop().unwrap();
    assert!(status.success(), "{status:?}\n{}", s.log());
    assert!(
        s.log().contains("stopped cleanly"),
        "the store was flushed after the stalled connection was dropped:\n{}",
        s.log()
    );
    drop(stalled);
    s.restart().unwrap();
    let list = s.http().get(CMS).json();
    let big = list["items"].as_array().unwrap().iter();
    assert_eq!(
        big.filter(|i| i["metadata"]["name"].as_str().unwrap().starts_with("big"))
            .count(),
        16
    );
}

/// A data dir made by an older host (on sled) keeps working when the host is started without
/// `--store`; asking for the wal engine on it is refused clearly instead of serving an empty store.
#[test]
fn a_sled_data_dir_stays_on_sled_unless_told_otherwise() {
    let mut s = Server::start_with(&["--store", "sled"]).unwrap();
    let r = s
        .http()
        .post_json(CMS, &configmap("kept", &[], &[("n", "1")]));
    assert_eq!(r.status, 201, "{}", r.text());
    s.stop().unwrap();
    s.keep_data();
    let dir = s.data_dir.clone();
    drop(s);

    let out = std::process::Command::new(turtles_tests::turtles_bin())
        .args([
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--store",
            "wal",
            "--data-dir",
        ])
        .arg(&dir)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("holds a store of the sled engine: start with --store sled"),
        "{err}"
    );

    let s = Server::start_in(dir, &[]).unwrap();
    assert_eq!(s.http().get(&format!("{CMS}/kept")).status, 200);
    assert!(
        s.log().contains("the data dir holds a sled store"),
        "{}",
        s.log()
    );
}

/// `turtles convert --to wal` moves a stopped host's sled store to the wal engine: every object
/// with its resourceVersion, deletes stay deleted, the revision counter goes on, and the sled
/// store is kept beside it. A running host's store is refused, and so is a second conversion.
#[test]
fn convert_moves_a_sled_store_to_wal_with_its_revisions() {
    let mut s = Server::start_with(&["--store", "sled"]).unwrap();
    let http = s.http();
    for name in ["a", "b", "gone"] {
        let r = http.post_json(CMS, &configmap(name, &[], &[("n", "1")]));
        assert_eq!(r.status, 201, "{}", r.text());
    }
    let mut b = http.get(&format!("{CMS}/b")).json();
    b["data"]["n"] = json!("2");
    assert_eq!(http.put_json(&format!("{CMS}/b"), &b).status, 200);
    assert_eq!(http.delete(&format!("{CMS}/gone")).status, 200);
    let before = http.get(CMS).json();
    let list_rv = rv(&before);
    let convert = |dir: &std::path::Path| {
        std::process::Command::new(turtles_tests::turtles_bin())
            .args(["convert", "--to", "wal", "--data-dir"])
            .arg(dir)
            .output()
            .unwrap()
    };
    let dir = s.data_dir.clone();
    // The host holds its store: the conversion waits for the lock, then gives up.
    let busy = convert(&dir);
    assert!(!busy.status.success());
    let err = String::from_utf8_lossy(&busy.stderr);
    assert!(err.contains("is in use by another process"), "{err}");

    s.stop().unwrap();
    s.keep_data();
    drop(s);
    let done = convert(&dir);
    let err = String::from_utf8_lossy(&done.stderr);
    assert!(done.status.success(), "{err}");
    // The host's own writes at stop (its Lease, the `kubernetes` endpoints) come after the list.
    let converted_rv: u64 = err
        .split_once("at revision ")
        .and_then(|(_, rest)| rest.split_once(" to the wal engine"))
        .and_then(|(n, _)| n.parse().ok())
        .unwrap_or_else(|| panic!("{err}"));
    assert!(converted_rv >= list_rv, "{err}");
    assert!(dir.join("store.sled").is_dir());
    let again = convert(&dir);
    assert!(!again.status.success());
    assert!(
        String::from_utf8_lossy(&again.stderr).contains("does not hold a store of the sled engine"),
        "{}",
        String::from_utf8_lossy(&again.stderr)
    );

    // No --store: the data dir is wal's now.
    let s = Server::start_in(dir, &[]).unwrap();
    assert!(
        !s.log().contains("the data dir holds a sled store"),
        "{}",
        s.log()
    );
    let http = s.http();
    let after = http.get(CMS).json();
    let items = |list: &Value| -> BTreeMap<String, (u64, Value)> {
        list["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|o| {
                let name = o["metadata"]["name"].as_str().unwrap().to_owned();
                (name, (rv(o), o["data"].clone()))
            })
            .collect()
    };
    assert_eq!(items(&after), items(&before));
    assert_eq!(items(&after)["b"].1, json!({"n": "2"}));
    assert_eq!(http.get(&format!("{CMS}/gone")).status, 404);
    let r = http.post_json(CMS, &configmap("c", &[], &[]));
    assert_eq!(r.status, 201, "{}", r.text());
    assert!(rv(&r.json()) > converted_rv, "the revision counter goes on");
}
