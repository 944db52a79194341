//! Prometheus text metrics: API requests by method and code with a latency histogram, and per
//! controller reconciles, errors, traps, queue depth and a reconcile latency histogram.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

/// Upper bounds of the latency buckets, in seconds.
pub const BUCKETS: &[f64] = &[0.0001, 0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1.0, 5.0];

/// A fixed-bucket histogram of durations.
#[derive(Default)]
pub struct Histogram {
    counts: [AtomicU64; 10],
    count: AtomicU64,
    sum_us: AtomicU64,
}

impl Histogram {
    pub fn observe(&self, d: Duration) {
        let secs = d.as_secs_f64();
        for (i, le) in BUCKETS.iter().enumerate() {
            if secs <= *le {
                self.counts[i].fetch_add(1, Ordering::Relaxed);
            }
        }
        self.count.fetch_add(1, Ordering::Relaxed);
        self.sum_us
            .fetch_add(d.as_micros() as u64, Ordering::Relaxed);
    }

    /// Append this histogram in Prometheus text format.
    pub fn render(&self, out: &mut String, name: &str, labels: &str) {
        let sep = if labels.is_empty() { "" } else { "," };
        for (i, le) in BUCKETS.iter().enumerate() {
            let _ = writeln!(
                out,
                "{name}_bucket{{{labels}{sep}le=\"{le}\"}} {}",
                self.counts[i].load(Ordering::Relaxed)
            );
        }
        let count = self.count.load(Ordering::Relaxed);
        let _ = writeln!(out, "{name}_bucket{{{labels}{sep}le=\"+Inf\"}} {count}");
        let _ = writeln!(
            out,
            "{name}_sum{{{labels}}} {}",
            self.sum_us.load(Ordering::Relaxed) as f64 / 1e6
        );
        let _ = writeln!(out, "{name}_count{{{labels}}} {count}");
    }
}

/// Watch streams: how many are open, the bytes of events queued for their clients, and how
/// many the server closed and why.
#[derive(Default)]
pub struct WatchMetrics {
    open: AtomicU64,
    queued_bytes: std::sync::atomic::AtomicI64,
    closed: Mutex<BTreeMap<&'static str, u64>>,
}

impl WatchMetrics {
    pub fn opened(&self) {
        self.open.fetch_add(1, Ordering::Relaxed);
    }

    /// A watch ended; `reason` is set when the server ended it (timeout, client behind...).
    pub fn closed(&self, reason: Option<&'static str>) {
        self.open.fetch_sub(1, Ordering::Relaxed);
        if let Some(r) = reason {
            if let Ok(mut c) = self.closed.lock() {
                *c.entry(r).or_default() += 1;
            }
        }
    }

    /// Bytes queued (positive) or taken/dropped (negative).
    pub fn queued(&self, delta: i64) {
        self.queued_bytes.fetch_add(delta, Ordering::Relaxed);
    }

    pub fn render(&self, out: &mut String) {
        out.push_str("# HELP turtles_watches Open watch streams.\n# TYPE turtles_watches gauge\n");
        let _ = writeln!(out, "turtles_watches {}", self.open.load(Ordering::Relaxed));
        out.push_str("# HELP turtles_watch_queued_bytes Serialized bytes of events queued for watch clients.\n# TYPE turtles_watch_queued_bytes gauge\n");
        let _ = writeln!(
            out,
            "turtles_watch_queued_bytes {}",
            self.queued_bytes.load(Ordering::Relaxed).max(0)
        );
        out.push_str("# HELP turtles_watch_closed_total Watches the server ended, by reason.\n# TYPE turtles_watch_closed_total counter\n");
        if let Ok(c) = self.closed.lock() {
            for (r, n) in c.iter() {
                let _ = writeln!(out, "turtles_watch_closed_total{{reason=\"{r}\"}} {n}");
            }
        }
    }
}

/// API request metrics.
#[derive(Default)]
pub struct ApiMetrics {
    requests: Mutex<BTreeMap<(String, u16), u64>>,
    latency: Histogram,
    pub watches: std::sync::Arc<WatchMetrics>,
}

impl ApiMetrics {
    pub fn observe(&self, method: &str, code: u16, d: Duration) {
        if let Ok(mut r) = self.requests.lock() {
            *r.entry((method.to_owned(), code)).or_default() += 1;
        }
        self.latency.observe(d);
    }

    pub fn render(&self, out: &mut String) {
        out.push_str("# HELP turtles_api_requests_total API requests by method and status code.\n");
        out.push_str("# TYPE turtles_api_requests_total counter\n");
        if let Ok(r) = self.requests.lock() {
            for ((m, c), n) in r.iter() {
                let _ = writeln!(
                    out,
                    "turtles_api_requests_total{{method=\"{m}\",code=\"{c}\"}} {n}"
                );
            }
        }
        out.push_str("# HELP turtles_api_request_duration_seconds Time to the response head.\n");
        out.push_str("# TYPE turtles_api_request_duration_seconds histogram\n");
        self.latency
            .render(out, "turtles_api_request_duration_seconds", "");
        self.watches.render(out);
    }
}
