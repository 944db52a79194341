//! Prometheus text metrics: API requests by method and code with a latency histogram, and per
//! controller reconciles, errors, traps, queue depth and a reconcile latency histogram.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

/// Upper bounds of the latency buckets, in seconds: from 1 µs (a no-op reconcile of a warm
/// instance is a few µs) to 5 s.
pub const BUCKETS: [f64; 18] = [
    0.000001, 0.0000025, 0.000005, 0.00001, 0.000025, 0.00005, 0.0001, 0.00025, 0.0005, 0.001,
    0.0025, 0.005, 0.01, 0.05, 0.1, 0.5, 1.0, 5.0,
];

/// A fixed-bucket histogram of durations.
#[derive(Default)]
pub struct Histogram {
    /// Observations per bucket (not cumulative: one increment per observation; the
    /// exposition sums them).
    counts: [AtomicU64; BUCKETS.len()],
    count: AtomicU64,
    /// Sum in nanoseconds (a µs sum would round a 3 µs call to 2 or 3).
    sum_ns: AtomicU64,
}

impl Histogram {
    pub fn observe(&self, d: Duration) {
        let secs = d.as_secs_f64();
        if let Some(i) = BUCKETS.iter().position(|le| secs <= *le) {
            self.counts[i].fetch_add(1, Ordering::Relaxed);
        }
        self.count.fetch_add(1, Ordering::Relaxed);
        self.sum_ns.fetch_add(
            u64::try_from(d.as_nanos()).unwrap_or(u64::MAX),
            Ordering::Relaxed,
        );
    }

    /// Append this histogram in Prometheus text format.
    pub fn render(&self, out: &mut String, name: &str, labels: &str) {
        let sep = if labels.is_empty() { "" } else { "," };
        let mut cumulative = 0;
        for (i, le) in BUCKETS.iter().enumerate() {
            cumulative += self.counts[i].load(Ordering::Relaxed);
            let _ = writeln!(
                out,
                "{name}_bucket{{{labels}{sep}le=\"{le}\"}} {cumulative}"
            );
        }
        let count = self.count.load(Ordering::Relaxed);
        let _ = writeln!(out, "{name}_bucket{{{labels}{sep}le=\"+Inf\"}} {count}");
        let _ = writeln!(
            out,
            "{name}_sum{{{labels}}} {}",
            self.sum_ns.load(Ordering::Relaxed) as f64 / 1e9
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_cumulative_and_the_sum_keeps_nanoseconds() {
        let h = Histogram::default();
        h.observe(Duration::from_nanos(3_200));
        h.observe(Duration::from_nanos(4_000));
        h.observe(Duration::from_millis(2));
        h.observe(Duration::from_secs(60));
        let mut out = String::new();
        h.render(&mut out, "x", "c=\"a\"");
        let value = |le: &str| {
            out.lines()
                .find_map(|l| l.strip_prefix(&format!("x_bucket{{c=\"a\",le=\"{le}\"}} ")))
                .unwrap_or_else(|| panic!("{le} in {out}"))
                .to_owned()
        };
        assert_eq!(value("0.0000025"), "0");
        assert_eq!(value("0.000005"), "2");
        assert_eq!(value("0.0025"), "3");
        assert_eq!(value("5"), "3");
        assert_eq!(value("+Inf"), "4");
        let sum: f64 = out
            .lines()
            .find_map(|l| l.strip_prefix("x_sum{c=\"a\"} "))
            .and_then(|v| v.parse().ok())
            .unwrap_or_default();
        assert!((sum - 60.002_007_2).abs() < 1e-9, "{out}");
        assert!(out.contains("x_count{c=\"a\"} 4\n"), "{out}");
    }
}
