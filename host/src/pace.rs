//! Cooperative pacing of long synchronous scans on the async workers.
//!
//! A list's or a watch's filter may judge every object of a namespace against a selector of
//! thousands of terms, or a watch's start may judge a whole snapshot: work that is the
//! request's own but would otherwise hold one of the few async workers for seconds, stalling
//! every other request on it (a tenant's `?labelSelector=` of 3,000 terms over its 4,000 objects
//! did). A [`Pacer`] is ticked once per object judged and gives the worker back whenever the
//! scan has run for [`SLICE`] since it last did, so other tasks run in between and the scan
//! itself goes on. kube gets the same from Go's preemptive scheduler.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Every pacer's yields, for `/metrics` (`turtles_api_scan_yields_total`).
static YIELDS: AtomicU64 = AtomicU64::new(0);

/// How long a scan runs before it gives the worker back.
pub const SLICE: Duration = Duration::from_millis(1);
/// Ticks between looks at the clock.
const EVERY: u32 = 16;

#[derive(Debug)]
pub struct Pacer {
    since: Instant,
    ticks: u32,
    yields: u64,
}

impl Default for Pacer {
    fn default() -> Self {
        Self::new()
    }
}

impl Pacer {
    pub fn new() -> Self {
        Self {
            since: Instant::now(),
            ticks: 0,
            yields: 0,
        }
    }

    /// One unit of work done: yields to the runtime if the scan has held the worker for a
    /// [`SLICE`]. Cancel-safe (nothing is held across the yield).
    pub async fn tick(&mut self) {
        self.ticks = self.ticks.wrapping_add(1);
        if !self.ticks.is_multiple_of(EVERY) || self.since.elapsed() < SLICE {
            return;
        }
        self.yields += 1;
        YIELDS.fetch_add(1, Ordering::Relaxed);
        tokio::task::yield_now().await;
        self.since = Instant::now();
    }

    /// Restarts the slice (after an await that gave the worker back anyway).
    pub fn rested(&mut self) {
        self.since = Instant::now();
    }

    /// How many times the scan gave the worker back.
    pub fn yields(&self) -> u64 {
        self.yields
    }
}

/// `turtles_api_scan_yields_total`: how often a list's or a watch's long scan gave its worker
/// back.
pub fn render(out: &mut String) {
    out.push_str(&format!(
        "# HELP turtles_api_scan_yields_total Times a long scan (a list's or a watch's selector over many objects) gave its async worker back to other requests.\n# TYPE turtles_api_scan_yields_total counter\nturtles_api_scan_yields_total {}\n",
        YIELDS.load(Ordering::Relaxed)
    ));
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A scan that takes several slices gives the worker back: another task on a
    /// single-threaded runtime runs while it goes on.
    #[tokio::test(flavor = "current_thread")]
    async fn a_long_scan_lets_other_tasks_run() {
        let flag = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let seen = flag.clone();
        let other = tokio::spawn(async move {
            seen.store(true, std::sync::atomic::Ordering::SeqCst);
        });
        let mut pacer = Pacer::new();
        let start = Instant::now();
        let mut saw_other_during_scan = false;
        while start.elapsed() < SLICE * 5 {
            std::hint::black_box(0u64.wrapping_add(1));
            pacer.tick().await;
            if flag.load(std::sync::atomic::Ordering::SeqCst) {
                saw_other_during_scan = true;
            }
        }
        assert!(saw_other_during_scan);
        assert!(pacer.yields() >= 1);
        other.await.unwrap();
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_short_scan_never_yields() {
        let mut pacer = Pacer::new();
        for _ in 0..100 {
            pacer.tick().await;
        }
        assert_eq!(pacer.yields(), 0);
    }
}
