//! Watches cannot bloat or brick the server: a client that stops reading is cut off and its
//! memory freed, `timeoutSeconds` holds even when the client reads nothing, the watch history is
//! bounded by bytes, unread watches of a large object share it rather than hold a copy each, a
//! connection whose client takes no bytes is closed, and writers and other watchers carry on
//! meanwhile.

use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use turtles_tests::{configmap, poll, rv, Http, Server};

const CMS: &str = "/api/v1/namespaces/default/configmaps";
const MIB: u64 = 1024;

/// A watch whose body is never read (until [`read_to_end`]).
fn stalled_watch(http: &Http, query: &str) -> reqwest::blocking::Response {
    let resp = http
        .client
        .get(format!("{}{CMS}?watch=true{query}", http.base))
        .timeout(Duration::from_secs(300))
        .send()
        .expect("watch request");
    assert_eq!(resp.status().as_u16(), 200);
    resp
}

/// Read a watch body to its end: the bytes read, or `Err` if the server did not end it (a read
/// waited `read_timeout`, or the connection failed).
fn read_to_end(
    mut resp: reqwest::blocking::Response,
    read_timeout: Duration,
) -> Result<usize, String> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut buf = vec![0u8; 1 << 16];
        let mut total = 0usize;
        loop {
            match resp.read(&mut buf) {
                Ok(0) => {
                    let _ = tx.send(Ok(total));
                    return;
                }
                Ok(n) => {
                    total += n;
                    let _ = tx.send(Err(total));
                }
                Err(e) => {
                    let _ = tx.send(Err(total));
                    drop(e);
                    return;
                }
            }
        }
    });
    let mut read = 0;
    loop {
        match rx.recv_timeout(read_timeout) {
            Ok(Ok(total)) => return Ok(total),
            Ok(Err(total)) => read = total,
            Err(_) => return Err(format!("no end after {read} bytes")),
        }
    }
}

/// The value of an unlabelled (or fully labelled) metric line `name value`.
fn metric(http: &Http, name: &str) -> Option<f64> {
    let r = http.get("/metrics");
    assert_eq!(r.status, 200);
    r.text()
        .lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.trim().parse().ok())
}

fn list_rv(http: &Http) -> u64 {
    let r = http.get(CMS);
    assert_eq!(r.status, 200, "{}", r.text());
    rv(&r.json())
}

/// Create a ConfigMap with `size` bytes of data; the bytes the server answered with.
fn create_sized(http: &Http, name: &str, size: usize) -> usize {
    let data = "x".repeat(size);
    let r = http.post_json(CMS, &configmap(name, &[], &[("data", &data)]));
    assert_eq!(r.status, 201, "create {name}: {}", r.text());
    r.body.len()
}

/// Create `n` ConfigMaps of `size` bytes from `threads` threads; the bytes answered.
fn create_many(s: &Server, prefix: &str, n: usize, size: usize, threads: usize) -> usize {
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let http = s.http();
                scope.spawn(move || {
                    (t..n)
                        .step_by(threads)
                        .map(|i| create_sized(&http, &format!("{prefix}-{i}"), size))
                        .sum::<usize>()
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("writer thread"))
            .sum()
    })
}

fn mib(kib: u64) -> f64 {
    kib as f64 / 1024.0
}

/// (1) `timeoutSeconds=2` on a watch whose client reads nothing while 12 MiB of events happen:
/// the server ends the watch at the deadline and drops what it had queued, without the client
/// reading a byte. Read afterwards, the stream ends (EOF) having delivered less than was written.
/// (Before: the watch task waited forever to queue its 257th line, so the deadline never fired
/// and the stream never ended.)
#[test]
fn timeout_seconds_ends_a_watch_whose_client_never_reads() {
    // The watch's own cut-offs are what is tested: the connection's write stall deadline
    // ((5) below) must not close it before the client reads what it was sent.
    let s = Server::start_with(&["--no-fsync", "--write-stall-timeout", "600"]).unwrap();
    let http = s.http();
    let from = list_rv(&http);
    let started = Instant::now();
    let w = stalled_watch(&http, &format!("&timeoutSeconds=2&resourceVersion={from}"));
    let written = create_many(&s, "t", 300, 40 * 1024, 4);
    // Closed at the deadline, and nothing queued for it any more: the client has read nothing.
    poll(
        "the stalled watch to be closed",
        Duration::from_secs(30),
        || {
            (metric(&http, "turtles_watches") == Some(0.0)
                && metric(&http, "turtles_watch_queued_bytes") == Some(0.0))
            .then_some(())
        },
    )
    .unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "closed after {:?}",
        started.elapsed()
    );
    assert_eq!(
        metric(&http, "turtles_watch_closed_total{reason=\"timeout\"}"),
        Some(1.0)
    );
    let read = read_to_end(w, Duration::from_secs(20)).expect("the server ended the stream");
    assert!(
        read < written,
        "the client got {read} bytes of the {written} written: the queue was not dropped"
    );
    // The server is fine: a new watch from the same revision replays everything.
    let mut again = http.watch(&format!("{CMS}?watch=true&resourceVersion={from}"));
    for _ in 0..300 {
        again.expect_event("ADDED");
    }
}

/// (2) 200 watches whose clients never read, then 5,000 creates of 4 KiB ConfigMaps (each watch
/// falls 20 MiB behind): peak RSS stays under 300 MiB (measured: 33 MiB before, 182 MiB peak). Queued events share the stored objects
/// instead of copying them, each watch queues at most `--watch-buffer-bytes`, and a watch over
/// that which its client does not drain is closed. (Before: each watch held 256 serialized lines,
/// 200 x 1 MiB of copies, on top of what the connections buffer.)
#[test]
fn stalled_watchers_and_many_creates_keep_memory_bounded() {
    const BOUND_MIB: u64 = 300;
    let s = Server::start_with(&["--no-fsync"]).unwrap();
    let http = s.http();
    let from = list_rv(&http);
    let watchers: Vec<_> = (0..200)
        .map(|_| stalled_watch(&http, &format!("&resourceVersion={from}")))
        .collect();
    let before = s.memory_kib("VmRSS").unwrap();
    let started = Instant::now();
    create_many(&s, "m", 5000, 4 * 1024, 8);
    let took = started.elapsed();
    let peak = s.memory_kib("VmHWM").unwrap();
    eprintln!(
        "RSS before {:.0} MiB, peak {:.0} MiB, now {:.0} MiB; 5000 creates took {took:?}",
        mib(before),
        mib(peak),
        mib(s.memory_kib("VmRSS").unwrap())
    );
    assert!(
        peak < BOUND_MIB * MIB,
        "peak RSS {:.0} MiB is over {BOUND_MIB} MiB",
        mib(peak)
    );
    // The host still serves, and a new watch sees everything.
    let mut w = http.watch(&format!("{CMS}?watch=true&resourceVersion={from}"));
    for _ in 0..5000 {
        w.expect_event("ADDED");
    }
    drop(watchers);
}

/// (3) 150 patches of a 1 MiB ConfigMap with `--watch-history-bytes 16Mi`: the history keeps
/// only the newest old versions that fit, so peak RSS stays under 200 MiB (measured: 106 MiB;
/// before, every version was kept: 150 x 2 copies of 1 MiB). Watches from inside the window resume exactly; older ones
/// get kube's 410 Expired ERROR event.
#[test]
fn big_object_patches_keep_history_bounded_and_resume_works() {
    const BOUND_MIB: u64 = 200;
    let s = Server::start_with(&["--no-fsync", "--watch-history-bytes", "16Mi"]).unwrap();
    let http = s.http();
    create_sized(&http, "big", 1 << 20);
    let mut rvs = Vec::new();
    for i in 0..150 {
        let r = http.patch(
            &format!("{CMS}/big"),
            "application/merge-patch+json",
            &json!({"metadata": {"labels": {"n": i.to_string()}}}),
        );
        assert_eq!(r.status, 200, "patch {i}: {}", r.text());
        rvs.push(rv(&r.json()));
    }
    let peak = s.memory_kib("VmHWM").unwrap();
    eprintln!(
        "peak RSS {:.0} MiB, now {:.0} MiB",
        mib(peak),
        mib(s.memory_kib("VmRSS").unwrap())
    );
    assert!(
        peak < BOUND_MIB * MIB,
        "peak RSS {:.0} MiB is over {BOUND_MIB} MiB",
        mib(peak)
    );
    // Ten patches back (10 MiB of old versions) is inside the 16 MiB window: exact replay.
    let mut w = http.watch(&format!(
        "{CMS}?watch=true&resourceVersion={}&timeoutSeconds=5",
        rvs[139]
    ));
    for want in &rvs[140..] {
        let ev = w.expect_event("MODIFIED");
        assert_eq!(rv(&ev["object"]), *want);
    }
    // The first patches are long gone: 200 and one ERROR event with 410 Expired, as kube.
    let mut w = http.watch(&format!("{CMS}?watch=true&resourceVersion={}", rvs[0]));
    let ev = w.expect_event("ERROR");
    assert_eq!(ev["object"]["code"], 410, "{ev}");
    assert_eq!(ev["object"]["reason"], "Expired", "{ev}");
    assert!(w.next_event().is_none());
    // A list at a revision inside the window still reads the past.
    let r = http.get(&format!(
        "{CMS}?resourceVersion={}&resourceVersionMatch=Exact",
        rvs[145]
    ));
    if r.status == 200 {
        let items = r.json()["items"].clone();
        assert_eq!(
            items[0]["metadata"]["labels"]["n"], "145",
            "{}",
            items[0]["metadata"]
        );
    }
}

/// (4) While 20 watches whose clients read nothing fall 30 MiB behind, a reading watcher gets
/// every event in order and every write answers promptly; the stalled watches are closed for
/// being behind, and read afterwards end (EOF) having delivered less than was written.
#[test]
fn stalled_watchers_do_not_hold_up_writers_or_other_watchers() {
    // The watch's own cut-offs are what is tested: the connection's write stall deadline
    // ((5) below) must not close it before the client reads what it was sent.
    let s = Server::start_with(&["--no-fsync", "--write-stall-timeout", "600"]).unwrap();
    let http = s.http();
    let from = list_rv(&http);
    let mut reader = http.watch(&format!("{CMS}?watch=true&resourceVersion={from}"));
    let stalled: Vec<_> = (0..20)
        .map(|_| stalled_watch(&http, &format!("&resourceVersion={from}")))
        .collect();
    let consumer = std::thread::spawn(move || {
        let mut names = Vec::new();
        while names.len() < 100 {
            let ev: Value = reader.expect_event("ADDED");
            names.push(
                ev["object"]["metadata"]["name"]
                    .as_str()
                    .unwrap_or("")
                    .to_owned(),
            );
        }
        names
    });
    let mut written = 0;
    let mut slowest = Duration::ZERO;
    for i in 0..100 {
        let t = Instant::now();
        written += create_sized(&http, &format!("s-{i:03}"), 300 * 1024);
        slowest = slowest.max(t.elapsed());
    }
    assert!(
        slowest < Duration::from_secs(2),
        "slowest write {slowest:?}"
    );
    let names = consumer.join().expect("reader");
    let want: Vec<String> = (0..100).map(|i| format!("s-{i:03}")).collect();
    assert_eq!(names, want);
    // Every stalled watch is closed for being behind, its queue dropped (the reader is done too).
    poll(
        "the stalled watches to be closed",
        Duration::from_secs(30),
        || {
            (metric(&http, "turtles_watch_closed_total{reason=\"behind\"}") == Some(20.0)
                && metric(&http, "turtles_watches") == Some(0.0)
                && metric(&http, "turtles_watch_queued_bytes") == Some(0.0))
            .then_some(())
        },
    )
    .unwrap();
    for w in stalled {
        let read = read_to_end(w, Duration::from_secs(20)).expect("the server ended the stream");
        assert!(read < written, "{read} of {written} bytes");
    }
}

type Tls = rustls::StreamOwned<rustls::ClientConnection, TcpStream>;

/// Raw TLS connections to the host (trusting its CA, with the admin's token), for clients that
/// stop reading.
struct RawClient {
    config: Arc<rustls::ClientConfig>,
    addr: SocketAddr,
    token: String,
}

impl RawClient {
    fn new(s: &Server) -> Self {
        use rustls::pki_types::pem::PemObject;
        let pem = s.ca_pem.as_deref().expect("the host serves TLS");
        let mut roots = rustls::RootCertStore::empty();
        for cert in rustls::pki_types::CertificateDer::pem_slice_iter(pem.as_bytes()) {
            roots.add(cert.expect("CA PEM")).expect("CA certificate");
        }
        let config = rustls::ClientConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .expect("TLS versions")
        .with_root_certificates(roots)
        .with_no_client_auth();
        let addr = s
            .url
            .trim_start_matches("https://")
            .parse()
            .expect("the host's address");
        RawClient {
            config: Arc::new(config),
            addr,
            token: s.token.clone(),
        }
    }

    /// `GET path` on a new HTTP/1.1 connection that then reads nothing. Its socket has a 4 KiB
    /// receive buffer and a 1 KiB MSS: the host's kernel sizes its send buffer from the peer's
    /// MSS (about 3 MiB per connection on loopback otherwise, enough to take a whole 1 MiB event
    /// and leave nothing waiting in the host), so here it takes about 100 KiB.
    fn unread_get(&self, path: &str) -> Tls {
        let sock = socket2::Socket::new(
            socket2::Domain::for_address(self.addr),
            socket2::Type::STREAM,
            None,
        )
        .expect("socket");
        sock.set_recv_buffer_size(4096).expect("SO_RCVBUF");
        sock.set_tcp_mss(1024).expect("TCP_MAXSEG");
        sock.connect(&self.addr.into()).expect("connect");
        let name = rustls::pki_types::ServerName::try_from("127.0.0.1").expect("server name");
        let conn = rustls::ClientConnection::new(self.config.clone(), name).expect("TLS client");
        let mut tls = rustls::StreamOwned::new(conn, TcpStream::from(sock));
        while tls.conn.is_handshaking() {
            tls.conn.complete_io(&mut tls.sock).expect("TLS handshake");
        }
        write!(
            tls,
            "GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {}\r\n\r\n",
            self.token
        )
        .expect("request");
        tls.flush().expect("request");
        tls
    }
}

/// Whether the server has closed `tls`: what it sent is read until EOF or a reset, for at most
/// `deadline`.
fn closed_by_server(tls: &mut Tls, deadline: Duration) -> bool {
    let start = Instant::now();
    tls.sock
        .set_read_timeout(Some(Duration::from_millis(100)))
        .expect("read timeout");
    let mut buf = vec![0u8; 64 * 1024];
    while start.elapsed() < deadline {
        match tls.read(&mut buf) {
            Ok(0) => return true,
            Ok(_) => {}
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
            // A reset, or the end of the TCP stream without TLS's close_notify.
            Err(_) => return true,
        }
    }
    false
}

fn open_fds(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .map(|d| d.count())
        .unwrap_or(usize::MAX)
}

/// (5) 200 watches over TLS whose clients never read (4 KiB receive buffers), of a namespace
/// holding a 1 MiB ConfigMap that is then modified. Each connection is stuck in the 1 MiB ADDED
/// event with the MODIFIED one queued behind it, and the host's RSS grows by far less than one
/// copy per watch: the event's object is the stored JSON itself, shared by every watch (before,
/// each connection held its own copy of the 1 MiB line, 200 MiB here by that count; the review
/// that found it measured 1.07 MB per watch). With
/// `--write-stall-timeout 15` every one of those connections is closed by the server about 15 s
/// after its socket stopped taking bytes (the host's descriptors go back to what they were, and
/// each client reads to an EOF or reset), while a watch whose client reads, idle all that time,
/// stays open and gets the next event.
#[test]
fn unread_watches_share_the_object_and_stalled_connections_are_closed() {
    const WATCHES: usize = 200;
    const STALL_SECS: u64 = 15;
    const BOUND_MIB: u64 = 80;
    let stall = STALL_SECS.to_string();
    let s = Server::start_with(&["--no-fsync", "--write-stall-timeout", stall.as_str()]).unwrap();
    let http = s.http();
    create_sized(&http, "big", 1 << 20);
    let pid = s.pid().expect("the host's pid");
    let mut reader = http.watch_with_timeout(
        &format!("{CMS}?watch=true&resourceVersion={}", list_rv(&http)),
        Duration::from_secs(120),
    );
    let raw = RawClient::new(&s);
    let fds_before = open_fds(pid);
    let before = s.memory_kib("VmRSS").unwrap();
    // The peak from here on (writing 5 to clear_refs resets VmHWM to the current RSS; the start
    // may have peaked higher than anything below).
    let peak_reset = std::fs::write(format!("/proc/{pid}/clear_refs"), "5").is_ok();
    let path = format!("{CMS}?watch=1");
    let mut unread: Vec<Tls> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..4)
            .map(|t| {
                let (raw, path) = (&raw, &path);
                scope.spawn(move || {
                    (t..WATCHES)
                        .step_by(4)
                        .map(|_| raw.unread_get(path))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().expect("opener thread"))
            .collect()
    });
    let opened = Instant::now();
    // A new 1 MiB version, for every watch.
    let r = http.patch(
        &format!("{CMS}/big"),
        "application/merge-patch+json",
        &json!({"metadata": {"labels": {"v": "2"}}}),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let ev = reader.expect_event("MODIFIED");
    assert_eq!(ev["object"]["metadata"]["name"], "big");
    // Every unread watch is stuck in its ADDED event and has the MODIFIED one queued.
    poll(
        "every unread watch to have the new version queued",
        Duration::from_secs(STALL_SECS),
        || {
            (metric(&http, "turtles_watches") == Some((WATCHES + 1) as f64)
                && metric(&http, "turtles_watch_queued_bytes")
                    .is_some_and(|q| q >= (WATCHES << 20) as f64))
            .then_some(())
        },
    )
    .unwrap();
    let held = s.memory_kib("VmRSS").unwrap();
    let peak = s.memory_kib("VmHWM").unwrap();
    eprintln!(
        "RSS before {:.0} MiB, with {WATCHES} unread watches {:.0} MiB (peak {:.0} MiB); {} host fds, {} before",
        mib(before),
        mib(held),
        mib(peak),
        open_fds(pid),
        fds_before
    );
    let measured = [
        ("RSS", Some(held)),
        ("peak RSS", peak_reset.then_some(peak)),
    ];
    for (what, kib) in measured.into_iter().filter_map(|(w, k)| Some((w, k?))) {
        assert!(
            kib.saturating_sub(before) < BOUND_MIB * MIB,
            "{what} grew by {:.0} MiB with {WATCHES} unread watches (bound {BOUND_MIB} MiB)",
            mib(kib.saturating_sub(before))
        );
    }
    // The server closes every stalled connection: its descriptors are gone, and so are the
    // watches (but the reader's).
    poll(
        "the stalled connections to be closed",
        Duration::from_secs(STALL_SECS + 30),
        || {
            (open_fds(pid) <= fds_before + 8 && metric(&http, "turtles_watches") == Some(1.0))
                .then_some(())
        },
    )
    .unwrap();
    let took = opened.elapsed();
    eprintln!(
        "closed {took:?} after the last was opened; RSS now {:.0} MiB",
        mib(s.memory_kib("VmRSS").unwrap())
    );
    let deadline = Instant::now() + Duration::from_secs(60);
    for (i, tls) in unread.iter_mut().enumerate() {
        let left = deadline.saturating_duration_since(Instant::now());
        assert!(
            closed_by_server(tls, left),
            "unread watch {i}: the server did not close its connection"
        );
    }
    // The reading watch, idle all this time with nothing to write, is still open.
    create_sized(&http, "after", 10);
    let ev = reader.expect_event("ADDED");
    assert_eq!(ev["object"]["metadata"]["name"], "after");
}
