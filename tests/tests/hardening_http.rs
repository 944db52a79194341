//! The HTTP layer under hostile or heavy use, against the real binary: slow headers and bodies
//! are cut off, a flood of unauthenticated connections stays bounded and does not lock anyone
//! out, the in-flight limits answer 429 like kube, and a request is authorized as exactly what
//! it is served as.

use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;
use turtles_tests::{configmap, poll, Server};

type Tls = rustls::StreamOwned<rustls::ClientConnection, TcpStream>;

fn addr(s: &Server) -> String {
    s.url
        .trim_start_matches("https://")
        .trim_start_matches("http://")
        .to_owned()
}

/// A raw TLS connection to the host, trusting its CA.
fn tls_connect(s: &Server) -> Tls {
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
    let name = rustls::pki_types::ServerName::try_from("127.0.0.1").expect("server name");
    let conn = rustls::ClientConnection::new(Arc::new(config), name).expect("TLS client");
    let sock = TcpStream::connect(addr(s)).expect("connect");
    let mut tls = rustls::StreamOwned::new(conn, sock);
    // Complete the handshake now.
    while tls.conn.is_handshaking() {
        tls.conn.complete_io(&mut tls.sock).expect("TLS handshake");
    }
    tls
}

/// What one read with a short timeout saw.
enum Read1 {
    Nothing,
    Data(Vec<u8>),
    Closed,
}

fn read_once(tls: &mut Tls, wait: Duration) -> Read1 {
    tls.sock.set_read_timeout(Some(wait)).expect("read timeout");
    let mut buf = [0u8; 16 * 1024];
    match tls.read(&mut buf) {
        Ok(0) => Read1::Closed,
        Ok(n) => Read1::Data(buf[..n].to_vec()),
        Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => Read1::Nothing,
        Err(_) => Read1::Closed,
    }
}

/// Everything the server sends until it closes the connection (or `deadline` passes).
fn read_until_closed(tls: &mut Tls, deadline: Duration) -> (Vec<u8>, bool) {
    let start = Instant::now();
    let mut got = Vec::new();
    while start.elapsed() < deadline {
        match read_once(tls, Duration::from_millis(100)) {
            Read1::Nothing => {}
            Read1::Data(d) => got.extend(d),
            Read1::Closed => return (got, true),
        }
    }
    (got, false)
}

/// The JSON body of a raw HTTP/1.1 response.
fn response_json(raw: &[u8]) -> Value {
    let text = String::from_utf8_lossy(raw);
    let body = text.split_once("\r\n\r\n").map(|(_, b)| b).unwrap_or("");
    // Unchunk if need be: a Status is small, one chunk.
    let body = if text
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        body.split("\r\n").nth(1).unwrap_or("")
    } else {
        body
    };
    serde_json::from_str(body).unwrap_or_else(|e| panic!("response body is not JSON ({e}): {text}"))
}

fn open_fds(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .map(|d| d.count())
        .unwrap_or(usize::MAX)
}

/// A slowloris client dribbling its request head is cut off after the header timeout, one
/// stalling in its body gets kube's 504 Timeout, a silent connection is closed after the idle
/// timeout, and everyone else is served meanwhile; a watch outlives all three.
#[test]
fn slow_clients_are_cut_off_while_others_are_served() {
    let s = Server::start_with(&[
        "--header-read-timeout=2",
        "--request-body-timeout=2",
        "--idle-timeout=2",
    ])
    .unwrap();
    let http = s.http();

    // A watch opened first: it must outlive every timeout below.
    let list = http.get("/api/v1/namespaces/default/configmaps");
    assert_eq!(list.status, 200, "{}", list.text());
    let rv = list.json()["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_owned();
    let mut watch = http.watch(&format!(
        "/api/v1/namespaces/default/configmaps?watch=true&resourceVersion={rv}"
    ));
    assert_eq!(watch.status, 200);

    // Slow headers: one byte every 200 ms, never finishing the head.
    let mut slow = tls_connect(&s);
    slow.write_all(b"GET /api/v1/namespaces HTTP/1.1\r\nHost: turtles\r\n")
        .unwrap();
    let start = Instant::now();
    let mut served_meanwhile = false;
    let cut_after = loop {
        assert!(
            start.elapsed() < Duration::from_secs(15),
            "a dribbling request head was never cut off"
        );
        if slow.write_all(b"x").and_then(|_| slow.flush()).is_err() {
            break start.elapsed();
        }
        match read_once(&mut slow, Duration::from_millis(200)) {
            Read1::Nothing => {}
            Read1::Data(_) | Read1::Closed => break start.elapsed(),
        }
        if !served_meanwhile && start.elapsed() > Duration::from_secs(1) {
            // Others are served while the slow client dribbles.
            assert_eq!(http.get("/api/v1/namespaces").status, 200);
            assert!(s
                .kubectl_ok(&["get", "ns", "-o", "name"])
                .contains("namespace/default"));
            served_meanwhile = true;
        }
    };
    assert!(served_meanwhile);
    assert!(
        cut_after >= Duration::from_millis(1500),
        "cut off too early: {cut_after:?}"
    );
    eprintln!("slow request head cut off after {cut_after:?} (header timeout 2 s)");
    // The connection is gone for good.
    let (_, closed) = read_until_closed(&mut slow, Duration::from_secs(5));
    assert!(closed, "the slow connection stays open");

    // Slow body: the head is complete (and authenticated), the body never comes.
    let mut slow = tls_connect(&s);
    let head = format!(
        "POST /api/v1/namespaces/default/configmaps HTTP/1.1\r\nHost: turtles\r\nAuthorization: Bearer {}\r\nContent-Type: application/json\r\nContent-Length: 200\r\n\r\n{{\"apiVersion\":",
        s.token
    );
    slow.write_all(head.as_bytes()).unwrap();
    slow.flush().unwrap();
    let start = Instant::now();
    let (raw, _) = read_until_closed(&mut slow, Duration::from_secs(15));
    let took = start.elapsed();
    let text = String::from_utf8_lossy(&raw).into_owned();
    assert!(text.starts_with("HTTP/1.1 504"), "{text:?} after {took:?}");
    assert!(
        text.to_ascii_lowercase().contains("retry-after: 1"),
        "{text}"
    );
    let status = response_json(&raw);
    assert_eq!(status["kind"], "Status");
    assert_eq!(status["reason"], "Timeout");
    assert_eq!(status["code"], 504);
    assert_eq!(
        status["message"],
        "Timeout: request did not complete within 2s"
    );
    eprintln!("stalled body answered 504 after {took:?} (body timeout 2 s)");

    // A connection that completes the TLS handshake and then says nothing (hyper's protocol
    // detection has no timer of its own) is closed by the idle timeout.
    let mut silent = tls_connect(&s);
    let start = Instant::now();
    let (_, closed) = read_until_closed(&mut silent, Duration::from_secs(15));
    let took = start.elapsed();
    assert!(closed, "a silent connection stays open");
    assert!(
        took >= Duration::from_millis(1500),
        "closed too early: {took:?}"
    );
    eprintln!("silent connection closed after {took:?} (idle timeout 2 s)");

    // The watch saw > 6 s of silence and is still live.
    assert!(
        http.post_json(
            "/api/v1/namespaces/default/configmaps",
            &configmap("after-the-stall", &[], &[])
        )
        .status
            == 201
    );
    let ev = watch.expect_event("ADDED");
    assert_eq!(ev["object"]["metadata"]["name"], "after-the-stall");
}

/// 1,500 connections that never send a byte: the host keeps at most
/// `--max-unauthenticated-connections` (1,024 by default) of them open, its file descriptors
/// stay bounded, and an authenticated kubectl is served at once.
#[test]
fn unauthenticated_connection_flood_is_bounded() {
    // Handshakes that never start would otherwise be dropped after the handshake timeout;
    // make it long so only the connection cap bounds them here.
    let s = Server::start_with(&["--tls-handshake-timeout=120"]).unwrap();
    let pid = s.pid().unwrap();
    assert_eq!(s.http().get("/api/v1/namespaces").status, 200);
    let baseline = open_fds(pid);
    const FLOOD: usize = 1500;
    const CAP: usize = 1024;
    let mut flood = Vec::with_capacity(FLOOD);
    for _ in 0..FLOOD {
        let c = TcpStream::connect(addr(&s)).expect("connect");
        c.set_nonblocking(true).expect("nonblocking");
        flood.push(c);
    }
    // The host has accepted every connection (each evicting the oldest once at the cap).
    let bound = baseline + CAP + 16;
    let mut peak = 0;
    poll(
        "the host to accept the flood and close all but the cap",
        Duration::from_secs(20),
        || {
            // (Accepted connections are counted before they evict the oldest: the count may
            // overshoot for a moment.)
            let n = open_fds(pid);
            peak = peak.max(n);
            // Every connection beyond the cap was closed by the host.
            let closed = flood
                .iter()
                .filter(|c| {
                    let mut b = [0u8; 1];
                    let mut r: &TcpStream = c;
                    match r.read(&mut b) {
                        Ok(0) => true,
                        Ok(_) => false,
                        Err(e) => e.kind() != ErrorKind::WouldBlock,
                    }
                })
                .count();
            (closed >= FLOOD - CAP && n <= bound).then_some(closed)
        },
    )
    .unwrap();
    // An authenticated client is served while the flood holds its connections.
    let start = Instant::now();
    let out = s.kubectl_ok(&["get", "ns", "-o", "name"]);
    let kubectl_took = start.elapsed();
    assert!(out.contains("namespace/default"), "{out}");
    assert_eq!(s.http().get("/api/v1/namespaces").status, 200);
    let after = open_fds(pid);
    assert!(after <= bound, "{after} open fds, bound {bound}");
    eprintln!(
        "flood of {FLOOD}: host fds baseline {baseline}, peak {peak}, after kubectl {after} \
         (bound {bound}); kubectl served in {kubectl_took:?}"
    );
    drop(flood);
}

/// With tiny in-flight limits, requests beyond them get 429 with Retry-After and kube's
/// Status; watches are not counted, and system:masters is served over the limit.
#[test]
fn in_flight_limits_answer_429_and_skip_watches() {
    let s = Server::start_with(&[
        "--max-requests-inflight=1",
        "--max-mutating-requests-inflight=1",
        "--request-body-timeout=60",
    ])
    .unwrap();
    let (_, token) = s.mint("bob", &[]).unwrap();
    s.kubectl_ok(&[
        "create",
        "clusterrolebinding",
        "bob-admin",
        "--clusterrole=cluster-admin",
        "--user=bob",
    ]);
    let bob = s.http_with_token(Some(&token));
    let cms = "/api/v1/namespaces/default/configmaps";

    // A watch held open by bob takes no slot.
    let rv = bob.get(cms).json()["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_owned();
    let mut watch = bob.watch(&format!("{cms}?watch=true&resourceVersion={rv}"));
    assert_eq!(watch.status, 200);

    // Bob's write that never finishes its body holds the one mutating slot. (Should it collide
    // with one of the dry-run writes below and be refused itself, it is sent again.)
    let slow_write = || {
        let mut slow = tls_connect(&s);
        let head = format!(
            "POST {cms} HTTP/1.1\r\nHost: turtles\r\nAuthorization: Bearer {token}\r\nContent-Type: application/json\r\nContent-Length: 500\r\n\r\n{{"
        );
        slow.write_all(head.as_bytes()).unwrap();
        slow.flush().unwrap();
        slow
    };
    let mut slow = slow_write();
    let refused = poll(
        "a write over the limit to be refused",
        Duration::from_secs(10),
        || {
            if let Read1::Data(_) | Read1::Closed = read_once(&mut slow, Duration::from_millis(1)) {
                slow = slow_write();
            }
            let r = bob.post_json(&format!("{cms}?dryRun=All"), &configmap("over", &[], &[]));
            (r.status == 429).then_some(r)
        },
    )
    .unwrap();
    assert_eq!(
        refused
            .headers
            .get("retry-after")
            .and_then(|v| v.to_str().ok()),
        Some("1")
    );
    let status = refused.json();
    assert_eq!(status["kind"], "Status");
    assert_eq!(status["reason"], "TooManyRequests");
    assert_eq!(status["code"], 429);
    assert_eq!(
        status["message"],
        "Too many requests, please try again later."
    );
    // Reads have their own limit; the admin (system:masters) writes over the limit.
    assert_eq!(bob.get(cms).status, 200);
    assert_eq!(
        s.http()
            .post_json(cms, &configmap("by-admin", &[], &[]))
            .status,
        201
    );
    let ev = watch.expect_event("ADDED");
    assert_eq!(ev["object"]["metadata"]["name"], "by-admin");

    // A read that waits (a resourceVersion from the future: up to 3 s, then 504) holds the one
    // read-only slot; bob's other reads are refused meanwhile, his open watch notwithstanding.
    let slow_read = {
        let bob = s.http_with_token(Some(&token));
        std::thread::spawn(move || loop {
            // Retried if it collides with one of the reads below.
            let status = bob
                .get("/api/v1/namespaces/default/configmaps?resourceVersion=999999999")
                .status;
            if status != 429 {
                return status;
            }
        })
    };
    let refused = poll(
        "a read over the limit to be refused",
        Duration::from_secs(10),
        || {
            let r = bob.get(cms);
            (r.status == 429).then_some(r)
        },
    )
    .unwrap();
    assert_eq!(refused.json()["reason"], "TooManyRequests");
    assert_eq!(slow_read.join().unwrap(), 504);
    // A new watch is served while the write slot is still held.
    let mut watch2 = bob.watch(&format!("{cms}?watch=true&resourceVersion=0"));
    assert_eq!(watch2.status, 200);
    watch2.expect_event("ADDED");

    // The slow write gives up: its slot is free again.
    drop(slow);
    poll("the write slot to be free", Duration::from_secs(10), || {
        let r = bob.post_json(cms, &configmap("after", &[], &[]));
        (r.status == 201).then_some(())
    })
    .unwrap();
}

/// The `Status` of a raw HTTP/1.1 answer, once it has arrived whole.
fn status_of(raw: &[u8]) -> Option<Value> {
    let text = String::from_utf8_lossy(raw);
    let (head, body) = text.split_once("\r\n\r\n")?;
    let body = if head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        body.split("\r\n").nth(1)?
    } else {
        body
    };
    serde_json::from_str(body).ok()
}

/// The mutating requests being served now, from `/metrics` (read as the admin: a read).
fn mutating_in_flight(s: &Server) -> u64 {
    let m = s.http().get("/metrics").text();
    m.lines()
        .find_map(|l| l.strip_prefix("turtles_api_inflight_requests{request_kind=\"mutating\"} "))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no mutating in-flight gauge in {m}"))
}

/// A tenant's share of the in-flight limits is who sends the requests, not whom they
/// impersonate, and all of one namespace's ServiceAccounts are one flow: slow uploads under
/// made-up impersonated names (which `edit` may impersonate in its namespace, existing or not)
/// hold at most half the mutating slots, the excess gets 429 at once, and so does a token of
/// another account of the namespace, while another namespace's client still creates objects.
#[test]
fn made_up_impersonated_names_do_not_multiply_a_tenants_share() {
    // 6 mutating slots: one flow holds at most 3.
    let s = Server::start_with(&[
        "--max-mutating-requests-inflight=6",
        "--request-body-timeout=60",
    ])
    .unwrap();
    for ns in ["tenant", "neighbour"] {
        s.kubectl_ok(&["create", "namespace", ns]);
    }
    for (ns, sa) in [
        ("tenant", "editor"),
        ("tenant", "minted"),
        ("neighbour", "app"),
    ] {
        s.kubectl_ok(&["create", "serviceaccount", sa, "-n", ns]);
        s.kubectl_ok(&[
            "create",
            "rolebinding",
            &format!("{sa}-edit"),
            "--clusterrole=edit",
            &format!("--serviceaccount={ns}:{sa}"),
            "-n",
            ns,
        ]);
    }
    let token = |ns: &str, sa: &str| {
        s.kubectl_ok(&["create", "token", sa, "-n", ns])
            .trim()
            .to_owned()
    };
    let (editor, minted, app) = (
        token("tenant", "editor"),
        token("tenant", "minted"),
        token("neighbour", "app"),
    );

    // Six uploads that never finish, each impersonating an account that does not exist.
    let slow = |n: usize| {
        let mut c = tls_connect(&s);
        let head = format!(
            "POST /apis/authorization.k8s.io/v1/selfsubjectaccessreviews HTTP/1.1\r\nHost: turtles\r\nAuthorization: Bearer {editor}\r\nImpersonate-User: system:serviceaccount:tenant:x{n}\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{{"
        );
        c.write_all(head.as_bytes()).unwrap();
        c.flush().unwrap();
        c
    };
    let mut uploads: Vec<(Tls, Vec<u8>)> = (0..6).map(|n| (slow(n), Vec::new())).collect();
    // Half are refused at once (each answer read whole: the connection stays open, hyper
    // waiting to drain the body); the others wait for their bodies, holding their slots.
    fn refused(uploads: &[(Tls, Vec<u8>)]) -> usize {
        uploads
            .iter()
            .filter(|(_, got)| got.starts_with(b"HTTP/1.1 429") && status_of(got).is_some())
            .count()
    }
    poll(
        "the uploads beyond the tenant's share to be refused",
        Duration::from_secs(20),
        || {
            for (c, got) in uploads.iter_mut() {
                if let Read1::Data(d) = read_once(c, Duration::from_millis(1)) {
                    got.extend(d);
                }
            }
            (refused(&uploads) >= 3).then_some(())
        },
    )
    .unwrap();
    poll(
        "three uploads to hold mutating slots",
        Duration::from_secs(20),
        || (mutating_in_flight(&s) == 3).then_some(()),
    )
    .unwrap();
    for (c, got) in uploads.iter_mut() {
        if let Read1::Data(d) = read_once(c, Duration::from_millis(50)) {
            got.extend(d);
        }
    }
    assert_eq!(refused(&uploads), 3, "exactly the excess is refused");
    for (_, got) in uploads.iter().filter(|(_, got)| !got.is_empty()) {
        let status = status_of(got).expect("a whole answer");
        assert_eq!(status["reason"], "TooManyRequests", "{status}");
    }
    assert_eq!(
        uploads.iter().filter(|(_, got)| got.is_empty()).count(),
        3,
        "the others are waiting for their bodies"
    );

    // The tenant's own requests, and a token of another of its accounts, share that share.
    let cm = configmap("c", &[], &[]);
    let cms = "/api/v1/namespaces/tenant/configmaps";
    let r = s.http_with_token(Some(&editor)).post_json(cms, &cm);
    assert_eq!(r.status, 429, "{}", r.text());
    let r = s.http_with_token(Some(&minted)).post_json(cms, &cm);
    assert_eq!(r.status, 429, "{}", r.text());
    // Another namespace's client is served.
    let r = s
        .http_with_token(Some(&app))
        .post_json("/api/v1/namespaces/neighbour/configmaps", &cm);
    assert_eq!(r.status, 201, "{}", r.text());

    // The uploads give up: the tenant is served again.
    drop(uploads);
    let minted = s.http_with_token(Some(&minted));
    poll(
        "the tenant's slots to be free",
        Duration::from_secs(20),
        || {
            let r = minted.post_json(cms, &cm);
            (r.status == 201).then_some(())
        },
    )
    .unwrap();
}

/// `?watch=true&watch=false`: kube reads the first value. Authorization and serving agree: a
/// user allowed only to watch gets a watch (never a list), one allowed only to list gets 403;
/// `?watch=false&watch=true` is a list for both.
#[test]
fn repeated_watch_parameter_is_authorized_as_served() {
    let s = Server::start().unwrap();
    s.kubectl_ok(&[
        "-n",
        "default",
        "create",
        "configmap",
        "cm1",
        "--from-literal=a=b",
    ]);
    for (role, verb) in [("watch-only", "watch"), ("list-only", "list")] {
        s.kubectl_ok(&[
            "-n",
            "default",
            "create",
            "role",
            role,
            &format!("--verb={verb}"),
            "--resource=configmaps",
        ]);
    }
    let (_, wanda) = s.mint("wanda", &[]).unwrap();
    let (_, lisa) = s.mint("lisa", &[]).unwrap();
    s.kubectl_ok(&[
        "-n",
        "default",
        "create",
        "rolebinding",
        "wanda",
        "--role=watch-only",
        "--user=wanda",
    ]);
    s.kubectl_ok(&[
        "-n",
        "default",
        "create",
        "rolebinding",
        "lisa",
        "--role=list-only",
        "--user=lisa",
    ]);
    let wanda = s.http_with_token(Some(&wanda));
    let lisa = s.http_with_token(Some(&lisa));
    let cms = "/api/v1/namespaces/default/configmaps";
    let watch_first = format!("{cms}?watch=true&watch=false");
    let list_first = format!("{cms}?watch=false&watch=true");

    // Watch first: a watch stream for the watcher, not a list.
    let mut w = wanda.watch_with_timeout(&watch_first, Duration::from_secs(20));
    assert_eq!(w.status, 200);
    let ev = w.next_event().expect("an event");
    assert_eq!(ev["type"], "ADDED", "served as a list: {ev}");
    assert_eq!(ev["object"]["metadata"]["name"], "cm1");
    // ... and 403 for the lister, who may not watch.
    let r = lisa.get(&watch_first);
    assert_eq!(r.status, 403, "{}", r.text());
    assert!(r.text().contains("cannot watch resource"), "{}", r.text());

    // List first: a list for the lister, 403 for the watcher.
    let r = lisa.get(&list_first);
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["kind"], "ConfigMapList");
    let r = wanda.get(&list_first);
    assert_eq!(r.status, 403, "{}", r.text());
    assert!(r.text().contains("cannot list resource"), "{}", r.text());

    // kube's reading of the value: anything but false/0 is a watch.
    assert_eq!(lisa.get(&format!("{cms}?watch=0")).status, 200);
    assert_eq!(lisa.get(&format!("{cms}?watch=FALSE")).status, 200);
    assert_eq!(lisa.get(&format!("{cms}?watch=yes")).status, 403);
    let mut w = wanda.watch_with_timeout(&format!("{cms}?watch=yes"), Duration::from_secs(20));
    assert_eq!(w.status, 200);
    assert_eq!(w.next_event().expect("an event")["type"], "ADDED");
}
