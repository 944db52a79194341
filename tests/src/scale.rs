//! Issue 17's scale section (`BENCH_ONLY=scale`, never part of a default run: a million objects
//! take minutes). One durable host on a fresh data dir:
//!
//! - `BENCH_SCALE_OBJECTS` (1,000,000) ConfigMaps of ~300 B across `BENCH_SCALE_NAMESPACES`
//!   (1,000) namespaces, created by 8 clients: creates/s and create latency p50/p99;
//! - the host's RSS and the data dir's size on disk, and both per object;
//! - paged LISTs (`limit=500`): every page of one namespace and every page across all
//!   namespaces, p50/p99 per page and the whole walk;
//! - watch delivery with `BENCH_SCALE_WATCHERS` (1,000) watchers of one namespace;
//! - merge-patch update latency p50/p99 (8 clients, 10,000 updates);
//! - restart to ready (kill, start on the same data dir, `/readyz` 200) and the RSS after it.
//!
//! `BENCH_SCALE_HOST_ARGS` passes extra flags to the host (e.g. `--watch-history 1000`).
//!
//! The latencies are compared with the Kubernetes API call latency SLO (mutating calls p99 ≤ 1 s,
//! list calls p99 ≤ 30 s).

use std::time::{Duration, Instant};

use anyhow::{bail, Result};
use futures::StreamExt;
use serde_json::json;

use crate::{client, configmap, drive, ms, percentile, watch_delivery, Host};

fn env_or(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

/// Bytes the files under `dir` take on disk (allocated blocks, as `du` counts them).
fn disk_bytes(dir: &std::path::Path) -> u64 {
    use std::os::unix::fs::MetadataExt;
    let mut total = 0;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let Ok(m) = e.metadata() else { continue };
            if m.is_dir() {
                stack.push(e.path());
            } else {
                total += m.blocks() * 512;
            }
        }
    }
    total
}

/// Every page of `path` (`limit=500`, following `continue`): the latency of each page, sorted,
/// and the items seen.
async fn paged(url: &str, path: &str) -> Result<(Vec<Duration>, usize)> {
    let http = client();
    let mut pages = Vec::new();
    let mut items = 0;
    let mut token = String::new();
    let mut body: Vec<u8> = Vec::new();
    loop {
        let mut q = format!("{url}{path}?limit=500");
        if !token.is_empty() {
            q.push_str("&continue=");
            q.push_str(&token);
        }
        body.clear();
        let t = Instant::now();
        let resp = http.get(&q).send().await?;
        if resp.status().as_u16() != 200 {
            bail!("list {q}: {}", resp.status());
        }
        let mut stream = resp.bytes_stream();
        while let Some(chunk) = stream.next().await {
            body.extend_from_slice(&chunk?);
        }
        pages.push(t.elapsed());
        let v: serde_json::Value = serde_json::from_slice(&body)?;
        items += v["items"].as_array().map_or(0, Vec::len);
        token = v["metadata"]["continue"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        if token.is_empty() {
            break;
        }
    }
    pages.sort_unstable();
    Ok((pages, items))
}

fn p50_p99(sorted: &[Duration]) -> String {
    format!(
        "{} / {}",
        ms(percentile(sorted, 0.5)),
        ms(percentile(sorted, 0.99))
    )
}

pub async fn scale(rows: &mut Vec<(String, String)>) -> Result<()> {
    let objects = env_or("BENCH_SCALE_OBJECTS", 1_000_000);
    let namespaces = env_or("BENCH_SCALE_NAMESPACES", 1_000).max(1);
    let watchers = env_or("BENCH_SCALE_WATCHERS", 1_000);
    // Extra flags for the host (e.g. `--watch-history 1000`, to see what history costs).
    let host_args = std::env::var("BENCH_SCALE_HOST_ARGS").unwrap_or_default();
    let host_args: Vec<&str> = host_args.split_whitespace().collect();
    let (mut h, _) = Host::start(&host_args).await?;
    let url = h.url.clone();
    let idle_rss = h.rss_mib();

    // Namespaces, then the objects spread over them.
    let ns_url = format!("{url}/api/v1/namespaces");
    drive(8, namespaces, 201, move |http, i| {
        http.post(&ns_url)
            .json(&json!({"apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": format!("scale-{i}")}}))
    })
    .await?;
    let started = Instant::now();
    let base = url.clone();
    let (rate, lat) = drive(8, objects, 201, move |http, i| {
        http.post(format!(
            "{base}/api/v1/namespaces/scale-{}/configmaps",
            i % namespaces
        ))
        .json(&configmap(&format!("cm-{}", i / namespaces)))
    })
    .await?;
    eprintln!(
        "scale: {objects} creates in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    rows.push((
        format!("scale: {objects} ConfigMaps (~300 B) in {namespaces} namespaces, 8 clients, durable: creates/s, create p50 / p99 (SLO: mutating p99 ≤ 1 s)"),
        format!("{rate:.0}/s, {}", p50_p99(&lat)),
    ));
    drop(lat);
    // Let the background work settle (history trimming, sled's flusher) before reading RSS.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let rss = h.rss_mib();
    let disk = disk_bytes(&h.dir) as f64;
    // What one object is as stored (its JSON, as a GET returns it).
    let one = client()
        .get(format!("{url}/api/v1/namespaces/scale-0/configmaps/cm-0"))
        .send()
        .await?
        .bytes()
        .await?
        .len();
    rows.push((
        format!("scale: RSS and disk with {objects} objects (per object); RSS above the idle host per object, against one object's JSON"),
        format!(
            "{rss:.0} MiB ({:.2} KiB), {:.0} MiB on disk ({:.2} KiB); {:.0} B above idle ({idle_rss:.0} MiB) per object, JSON {one} B ({:.1}x)",
            rss * 1024.0 / objects as f64,
            disk / (1 << 20) as f64,
            disk / 1024.0 / objects as f64,
            (rss - idle_rss) * 1048576.0 / objects as f64,
            (rss - idle_rss) * 1048576.0 / objects as f64 / one as f64,
        ),
    ));

    // Paged LISTs.
    let per_ns = objects / namespaces;
    let mut one = Vec::new();
    for _ in 0..20 {
        let (pages, n) = paged(&url, "/api/v1/namespaces/scale-0/configmaps").await?;
        if n < per_ns {
            bail!("scale-0 listed {n} items, expected at least {per_ns}");
        }
        one.extend(pages);
    }
    one.sort_unstable();
    rows.push((
        format!("scale: paged LIST (limit=500) of one namespace ({per_ns} objects), 20 walks: page p50 / p99 (SLO: list p99 ≤ 30 s)"),
        p50_p99(&one),
    ));
    let walk = Instant::now();
    let (all, n) = paged(&url, "/api/v1/configmaps").await?;
    let walk = walk.elapsed();
    if n < objects {
        bail!("the walk across namespaces listed {n} items, expected at least {objects}");
    }
    rows.push((
        format!(
            "scale: paged LIST (limit=500) across all namespaces: {} pages, page p50 / p99; the whole walk",
            all.len()
        ),
        format!("{}; {:.1} s", p50_p99(&all), walk.as_secs_f64()),
    ));

    // Watches.
    let lat = watch_delivery(&url, "scale-1", watchers, 50).await?;
    rows.push((
        format!(
            "scale: watch delivery, {watchers} watchers of one namespace x 50 events: p50 / p99"
        ),
        p50_p99(&lat),
    ));

    // Updates.
    let updates = 10_000.min(objects);
    let base = url.clone();
    let (rate, lat) = drive(8, updates, 200, move |http, i| {
        http.patch(format!(
            "{base}/api/v1/namespaces/scale-{}/configmaps/cm-{}",
            i % namespaces,
            (i / namespaces) % per_ns.max(1)
        ))
        .header("Content-Type", "application/merge-patch+json")
        .body(json!({"data": {"key": format!("updated-{i}")}}).to_string())
    })
    .await?;
    rows.push((
        format!("scale: {updates} merge-patch updates, 8 clients: updates/s, p50 / p99 (SLO: mutating p99 ≤ 1 s)"),
        format!("{rate:.0}/s, {}", p50_p99(&lat)),
    ));

    // Restart on the same data.
    let ready = h.restart().await?;
    tokio::time::sleep(Duration::from_secs(2)).await;
    rows.push((
        format!("scale: restart with {objects} objects: kill -> start -> /readyz 200; RSS after"),
        format!("{:.2} s; {:.0} MiB", ready.as_secs_f64(), h.rss_mib()),
    ));
    Ok(())
}
