//! Issue 20's load generator (`BENCH_ONLY=load`): durable `generateName` ConfigMap creates (what
//! the wrk comparison with kube-apiserver sent) over 8 and 64 connections, HTTP/1.1 keep-alive and
//! HTTP/2, each connection with one request in flight. Per row: creates/s, latency p50/p99, and the
//! CPU time per create of the server and of this client (from `/proc/PID/stat`), so a figure says
//! whose CPU bounded it. With 4 or more cores the server runs on the first half of them and the
//! client on the other half (`taskset`); on fewer they share the cores, and the row says so.
//!
//! HTTP/1.1 uses hyper's client connections directly and HTTP/2 the h2 crate, the body serialized
//! once, as wrk sends a fixed request: on two shared cores every µs of the client's CPU is taken
//! from the server. reqwest's own layers (its pool, redirects, header handling) cost this client
//! 24 µs per create at 64 connections (see `docs/benchmarks.md`, session 26), and hyper's HTTP/2
//! client a task per request (session 27).

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use serde_json::json;

use crate::{client, create_ns, median, percentile, Host, CREDENTIALS};

/// A `generateName` ConfigMap of ~300 bytes.
fn generated() -> serde_json::Value {
    json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"generateName": "load-", "labels": {"app": "bench", "tier": "load"}},
        "data": {"key": "value-0123456789", "other": "a somewhat longer value to make ~300 bytes of JSON"},
    })
}

/// User plus system CPU time of a process so far (`/proc/PID/stat` counts in USER_HZ, 100/s).
fn cpu_time(pid: u32) -> Result<Duration> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))?;
    // The command name may hold spaces: the fields that follow start after its ')'.
    let rest = stat
        .rsplit_once(')')
        .map(|(_, r)| r)
        .context("malformed /proc stat")?;
    let f: Vec<&str> = rest.split_whitespace().collect();
    // After ')': state is field 3 of the man page, utime 14, stime 15.
    let ticks = |i: usize| -> Result<u64> {
        f.get(i - 3)
            .context("short /proc stat")?
            .parse::<u64>()
            .context("/proc stat field")
    };
    Ok(Duration::from_millis((ticks(14)? + ticks(15)?) * 10))
}

/// One side of a client connection, either protocol.
enum Sender {
    H1(hyper::client::conn::http1::SendRequest<Full<Bytes>>),
    /// The h2 crate itself: hyper's HTTP/2 client spawns a task per request to send its body,
    /// which cost this client ~40 µs of CPU per create, twice its HTTP/1.1 cost.
    H2(h2::client::SendRequest<Bytes>),
}

/// One connection to the host under test (HTTP/1.1 keep-alive, or HTTP/2 by ALPN `h2` only).
struct Conn {
    send: Sender,
    /// The absolute URI for HTTP/2; for HTTP/1.1 the path, with `host` in its header.
    uri: String,
    host: String,
    auth: String,
}

impl Conn {
    async fn connect(url: &str, path: &str, h2: bool) -> Result<Self> {
        let (ca, token) = CREDENTIALS
            .lock()
            .ok()
            .and_then(|c| c.clone())
            .context("no host credentials")?;
        let mut roots = rustls::RootCertStore::empty();
        if let Some(pem) = ca {
            use rustls::pki_types::pem::PemObject;
            for cert in rustls::pki_types::CertificateDer::pem_slice_iter(pem.as_bytes()) {
                roots.add(cert?)?;
            }
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut cfg = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()?
            .with_root_certificates(roots)
            .with_no_client_auth();
        cfg.alpn_protocols = vec![if h2 {
            b"h2".to_vec()
        } else {
            b"http/1.1".to_vec()
        }];
        let hostport = url.strip_prefix("https://").context("an https URL")?;
        let host = hostport.rsplit_once(':').map_or(hostport, |(h, _)| h);
        let name = rustls::pki_types::ServerName::try_from(host.to_owned())?;
        let tcp = tokio::net::TcpStream::connect(hostport).await?;
        tcp.set_nodelay(true)?;
        let tls = tokio_rustls::TlsConnector::from(Arc::new(cfg))
            .connect(name, tcp)
            .await?;
        let send = if h2 {
            if tls.get_ref().1.alpn_protocol() != Some(b"h2") {
                bail!("the server did not choose HTTP/2");
            }
            let (send, conn) = h2::client::handshake(tls).await?;
            tokio::spawn(conn);
            Sender::H2(send)
        } else {
            let io = hyper_util::rt::TokioIo::new(tls);
            let (send, conn) = hyper::client::conn::http1::handshake(io).await?;
            tokio::spawn(conn);
            Sender::H1(send)
        };
        Ok(Self {
            send,
            uri: if h2 {
                format!("{url}{path}")
            } else {
                path.to_owned()
            },
            host: hostport.to_owned(),
            auth: format!("Bearer {token}"),
        })
    }

    /// POST `body`; the status once the whole answer is read.
    async fn post(&mut self, body: Bytes) -> Result<u16> {
        let req = hyper::Request::post(&self.uri)
            .header("authorization", &self.auth)
            .header("content-type", "application/json");
        match &mut self.send {
            Sender::H1(s) => {
                let req = req
                    .header(hyper::header::HOST, &self.host)
                    .body(Full::new(body))?;
                s.ready().await?;
                let resp = s.send_request(req).await?;
                let code = resp.status().as_u16();
                resp.into_body().collect().await?;
                Ok(code)
            }
            Sender::H2(s) => {
                std::future::poll_fn(|cx| s.poll_ready(cx)).await?;
                let (resp, mut stream) = s.send_request(req.body(())?, false)?;
                stream.send_data(body, true)?;
                let resp = resp.await?;
                let code = resp.status().as_u16();
                let mut body = resp.into_body();
                while let Some(chunk) = body.data().await {
                    let chunk = chunk?;
                    let _ = body.flow_control().release_capacity(chunk.len());
                }
                Ok(code)
            }
        }
    }
}

/// `total` creates over `conns` connections, opened first (TLS handshakes are not creates);
/// (creates/s, sorted latencies).
async fn drive(url: &str, conns: usize, total: usize, h2: bool) -> Result<(f64, Vec<Duration>)> {
    let path = "/api/v1/namespaces/load/configmaps";
    let body = Bytes::from(generated().to_string());
    let mut opened = Vec::new();
    for _ in 0..conns {
        opened.push(Conn::connect(url, path, h2).await?);
    }
    let start = Instant::now();
    let mut tasks = Vec::new();
    for c in 0..conns {
        let n = (c..total).step_by(conns).count();
        let body = body.clone();
        let mut conn = opened.pop().context("a connection per task")?;
        tasks.push(tokio::spawn(async move {
            let mut lat = Vec::with_capacity(n);
            for _ in 0..n {
                let t = Instant::now();
                let code = conn.post(body.clone()).await?;
                if code != 201 {
                    bail!("a create answered {code}");
                }
                lat.push(t.elapsed());
            }
            Ok::<_, anyhow::Error>(lat)
        }));
    }
    let mut lat = Vec::with_capacity(total);
    for t in tasks {
        lat.extend(t.await??);
    }
    let rate = total as f64 / start.elapsed().as_secs_f64();
    lat.sort_unstable();
    Ok((rate, lat))
}

/// The host's durable commits and the writes they carried so far (`/metrics`): their ratio over
/// a round is the group commit's batch.
async fn commits(url: &str) -> Result<(f64, f64)> {
    let text = client()
        .get(format!("{url}/metrics"))
        .send()
        .await?
        .text()
        .await?;
    let value = |name: &str| -> Result<f64> {
        text.lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(' '))
            .and_then(|v| v.trim().parse().ok())
            .with_context(|| format!("{name} not in /metrics"))
    };
    Ok((
        value("turtles_store_commits_total")?,
        value("turtles_store_committed_writes_total")?,
    ))
}

/// Pin this process (every thread) to `cpus` with `taskset`, when there are cores to split.
fn pin_self(cpus: &str) -> Result<()> {
    let ok = std::process::Command::new("taskset")
        .args(["-a", "-p", "-c", cpus, &std::process::id().to_string()])
        .stdout(std::process::Stdio::null())
        .status()?
        .success();
    if !ok {
        bail!("taskset failed");
    }
    Ok(())
}

pub async fn load(rows: &mut Vec<(String, String)>, total: usize, rounds: usize) -> Result<()> {
    let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
    let split = cores >= 4;
    let placement = if split {
        let half = cores / 2;
        pin_self(&format!("{half}-{}", cores - 1))?;
        format!(
            "server on cores 0-{}, client on {half}-{}",
            half - 1,
            cores - 1
        )
    } else {
        format!("server and client share the {cores} cores")
    };
    // The local store engines side by side, alternating round by round (`BENCH_LOAD_STORES`).
    let stores: Vec<String> = std::env::var("BENCH_LOAD_STORES")
        .unwrap_or_else(|_| "sled,wal".into())
        .split(',')
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect();
    // One row alone, for a profile: `BENCH_LOAD_ROWS=h2x8` (or `h1x64`, comma-separated).
    let wanted = std::env::var("BENCH_LOAD_ROWS").unwrap_or_default();
    for h2 in [false, true] {
        for conns in [8usize, 64] {
            let row = format!("{}x{conns}", if h2 { "h2" } else { "h1" });
            if !wanted.is_empty() && !wanted.split(',').any(|w| w.trim() == row) {
                continue;
            }
            #[derive(Default)]
            struct Figures {
                rate: Vec<f64>,
                p50: Vec<f64>,
                p99: Vec<f64>,
                server: Vec<f64>,
                mine: Vec<f64>,
                batch: Vec<f64>,
            }
            let mut figures: Vec<Figures> = stores.iter().map(|_| Figures::default()).collect();
            for _ in 0..rounds {
                for (store, f) in stores.iter().zip(figures.iter_mut()) {
                    let pin = split.then(|| format!("0-{}", cores / 2 - 1));
                    let (h, _) = Host::start_pinned(&["--store", store], pin.as_deref()).await?;
                    create_ns(&client(), &h.url, "load").await?;
                    let c0 = commits(&h.url).await?;
                    let (s0, m0) = (cpu_time(h.pid())?, cpu_time(std::process::id())?);
                    let (r, lat) = drive(&h.url, conns, total, h2).await?;
                    let (s1, m1) = (cpu_time(h.pid())?, cpu_time(std::process::id())?);
                    let c1 = commits(&h.url).await?;
                    f.batch.push((c1.1 - c0.1) / (c1.0 - c0.0).max(1.0));
                    f.rate.push(r);
                    f.p50.push(percentile(&lat, 0.5).as_secs_f64() * 1e3);
                    f.p99.push(percentile(&lat, 0.99).as_secs_f64() * 1e3);
                    f.server.push((s1 - s0).as_secs_f64() * 1e6 / total as f64);
                    f.mine.push((m1 - m0).as_secs_f64() * 1e6 / total as f64);
                    eprintln!(
                        "load --store {store} {} x{conns}: {r:.0} creates/s, server {:.0} µs/create",
                        if h2 { "HTTP/2" } else { "HTTP/1.1" },
                        f.server.last().copied().unwrap_or_default()
                    );
                }
            }
            for (store, f) in stores.iter().zip(figures) {
                rows.push((
                    format!(
                        "load: durable generateName ConfigMap creates, --store {store}, {} x {conns} connections, {total} per round, median of {rounds} ({placement})",
                        if h2 { "HTTP/2" } else { "HTTP/1.1 keep-alive" },
                    ),
                    format!(
                        "{:.0}/s, p50 {:.2} ms / p99 {:.2} ms; CPU per create: server {:.0} µs, bench client {:.0} µs; {:.1} writes per durable commit",
                        median(f.rate),
                        median(f.p50),
                        median(f.p99),
                        median(f.server),
                        median(f.mine),
                        median(f.batch)
                    ),
                ));
            }
        }
    }
    Ok(())
}
