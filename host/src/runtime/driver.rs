//! The one controller driver every controller runs on, built-in or Wasm (kube-runtime's
//! `Controller` loop): workers take keys from the [`WorkQueue`], reconcile them, and hand the
//! queue the reconcile's [`Action`] (done, requeue after a delay, retry with backoff, give up);
//! one [`Stats`] counts what happened, and the same fields go to every `Controller` object's
//! status and to `/metrics`.
//!
//! What feeds the queue is the informer ([`crate::informer`]: watcher + reflector over the
//! store); what a reconcile does is the controller's business ([`Reconciler`]).

use std::future::Future;
use std::hash::Hash;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::FutureExt;
use serde_json::{json, Map, Value};

use super::queue::{Action, WorkQueue};

/// What one reconcile came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    pub action: Action,
    /// Why it failed (with [`Action::Retry`] or [`Action::GiveUp`]).
    pub error: Option<String>,
    /// The failure was a fault of the guest (trap, deadline, memory limit), not an error it
    /// returned.
    pub trap: bool,
}

impl Outcome {
    pub fn done() -> Self {
        Self::from(Action::Done)
    }

    pub fn failed(action: Action, error: String, trap: bool) -> Self {
        Self {
            action,
            error: Some(error),
            trap,
        }
    }
}

impl From<Action> for Outcome {
    fn from(action: Action) -> Self {
        Self {
            action,
            error: None,
            trap: false,
        }
    }
}

/// One worker's reconcile of a key. A worker owns its reconciler, so state that must not be
/// shared (a guest instance) lives here.
pub trait Reconciler<K>: Send {
    fn reconcile(&mut self, key: &K) -> impl Future<Output = Outcome> + Send;
}

/// Counters of one controller, shown in its status and in `/metrics`.
#[derive(Default)]
pub struct Stats {
    pub reconciles: AtomicU64,
    pub errors: AtomicU64,
    pub traps: AtomicU64,
    /// Linear memory of the most recently used guest instance, in bytes (Wasm controllers).
    pub instance_memory: AtomicU64,
    pub latency: crate::metrics::Histogram,
    /// Of each reconcile of a Wasm controller, the call into the guest alone (arguments lowered,
    /// the guest's code, the result lifted); the rest of `latency` is the host's preparation.
    pub guest_call: crate::metrics::Histogram,
    last_error: Mutex<Option<(String, String)>>,
}

impl Stats {
    /// Remember `message` as the controller's last error (now).
    pub fn set_last_error(&self, message: String) {
        if let Ok(mut g) = self.last_error.lock() {
            *g = Some((message, crate::model::meta::now_rfc3339()));
        }
    }

    pub fn clear_last_error(&self) {
        if let Ok(mut g) = self.last_error.lock() {
            *g = None;
        }
    }

    pub fn last_error(&self) -> Option<(String, String)> {
        self.last_error.lock().ok().and_then(|g| g.clone())
    }

    /// Count one reconcile of `key` that took `elapsed` and came to `outcome`.
    fn record(&self, key: &impl KeyText, elapsed: Duration, outcome: &Outcome) {
        self.reconciles.fetch_add(1, Ordering::Relaxed);
        self.latency.observe(elapsed);
        if let Some(e) = &outcome.error {
            self.errors.fetch_add(1, Ordering::Relaxed);
            if outcome.trap {
                self.traps.fetch_add(1, Ordering::Relaxed);
            }
            self.set_last_error(format!("{}: {e}", key.text()));
        }
    }

    /// The status fields every controller shows: counters, queue depth and the last error.
    pub fn status_fields(&self, queue_depth: usize) -> Map<String, Value> {
        let mut m = Map::new();
        m.insert(
            "reconciles".into(),
            json!(self.reconciles.load(Ordering::Relaxed)),
        );
        m.insert("errors".into(), json!(self.errors.load(Ordering::Relaxed)));
        m.insert("traps".into(), json!(self.traps.load(Ordering::Relaxed)));
        m.insert("queueDepth".into(), json!(queue_depth));
        if let Some((msg, at)) = self.last_error() {
            m.insert("lastError".into(), json!({"message": msg, "time": at}));
        }
        m
    }
}

/// One controller as `/metrics` shows it: its name, counters and current queue depth.
pub struct Metered {
    pub name: String,
    pub stats: Arc<Stats>,
    pub queue_depth: usize,
}

/// A controller's [`Metered`] as of now (built-in controllers register one with the API).
pub type MetricsSource = Arc<dyn Fn() -> Metered + Send + Sync>;

/// The `turtles_controller_*` families for these controllers, built-in and Wasm alike, each
/// family one group with its `# HELP` and `# TYPE` (the text format wants a family's samples
/// together), every sample labelled with its `controller`.
pub fn render_metrics(out: &mut String, controllers: &[Metered]) {
    use std::fmt::Write;
    type Get = fn(&Metered) -> u64;
    let families: [(&str, &str, &str, Get); 5] = [
        ("reconciles_total", "counter", "Reconcile calls.", |m| {
            m.stats.reconciles.load(Ordering::Relaxed)
        }),
        (
            "errors_total",
            "counter",
            "Reconciles that failed (an error returned, or a fault).",
            |m| m.stats.errors.load(Ordering::Relaxed),
        ),
        (
            "traps_total",
            "counter",
            "Reconciles a guest fault ended (trap, deadline, memory limit).",
            |m| m.stats.traps.load(Ordering::Relaxed),
        ),
        ("queue_depth", "gauge", "Keys waiting in the work queue.", |m| {
            m.queue_depth as u64
        }),
        (
            "instance_memory_bytes",
            "gauge",
            "Linear memory of the controller's most recently used instance (0: not a Wasm controller).",
            |m| m.stats.instance_memory.load(Ordering::Relaxed),
        ),
    ];
    if controllers.is_empty() {
        return;
    }
    for (metric, kind, help, get) in families {
        let _ = writeln!(out, "# HELP turtles_controller_{metric} {help}");
        let _ = writeln!(out, "# TYPE turtles_controller_{metric} {kind}");
        for m in controllers {
            let _ = writeln!(
                out,
                "turtles_controller_{metric}{{controller=\"{}\"}} {}",
                m.name,
                get(m)
            );
        }
    }
    let name = "turtles_controller_reconcile_duration_seconds";
    let _ = writeln!(out, "# HELP {name} Time one reconcile took.");
    let _ = writeln!(out, "# TYPE {name} histogram");
    for m in controllers {
        m.stats
            .latency
            .render(out, name, &format!("controller=\"{}\"", m.name));
    }
    let name = "turtles_controller_guest_call_duration_seconds";
    let _ = writeln!(
        out,
        "# HELP {name} Of one reconcile of a Wasm controller, the call into the guest alone."
    );
    let _ = writeln!(out, "# TYPE {name} histogram");
    for m in controllers {
        m.stats
            .guest_call
            .render(out, name, &format!("controller=\"{}\"", m.name));
    }
}

/// One worker: reconcile keys of `queue` with `reconciler` until the queue shuts down, with
/// kube's queue discipline (a key is never reconciled twice at once; failures back off).
///
/// Keys are taken only while this host leads the controllers (`leading`, see `leader.rs`); on a
/// standby host they wait in the queue (deduplicated) until it takes over.
pub async fn worker<K, R>(
    queue: Arc<WorkQueue<K>>,
    stats: Arc<Stats>,
    name: &str,
    mut leading: tokio::sync::watch::Receiver<bool>,
    mut reconciler: R,
) where
    K: Clone + Eq + Hash + Send + Sync + std::fmt::Debug + KeyText + 'static,
    R: Reconciler<K>,
{
    loop {
        if leading.wait_for(|l| *l).await.is_err() {
            return;
        }
        let Some(key) = queue.next().await else {
            return;
        };
        if !*leading.borrow() {
            // Lost the lead while waiting for this key: leave it for whoever leads.
            queue.add(key.clone());
            queue.done(&key);
            continue;
        }
        let started = Instant::now();
        let interrupted = Interrupted {
            queue: &queue,
            key: Some(&key),
        };
        // A panic in a reconcile (a bug, on input some tenant wrote) fails that key, retried
        // with backoff like any error; it does not take the worker down with it.
        let outcome = std::panic::AssertUnwindSafe(reconciler.reconcile(&key))
            .catch_unwind()
            .await
            .unwrap_or_else(|panic| {
                let why = panic
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| panic.downcast_ref::<String>().cloned())
                    .unwrap_or_default();
                tracing::error!(controller = name, key = %key.text(), panic = %why, "reconcile panicked");
                Outcome::failed(Action::Retry, format!("reconcile panicked: {why}"), false)
            });
        let took = started.elapsed();
        interrupted.disarm();
        stats.record(&key, took, &outcome);
        if let Some(e) = &outcome.error {
            tracing::debug!(controller = name, key = %key.text(), error = %e, "reconcile failed");
        }
        queue.finish(&key, outcome.action);
    }
}

/// A reconcile in progress. If the worker is stopped before it ends (a reload or a change of
/// worker settings aborts the task), the key is released and queued again, so the workers that
/// follow reconcile it; without this it stayed active and was never reconciled again.
struct Interrupted<'a, K: Clone + Eq + Hash + Send + 'static> {
    queue: &'a Arc<WorkQueue<K>>,
    key: Option<&'a K>,
}

impl<K: Clone + Eq + Hash + Send + 'static> Interrupted<'_, K> {
    fn disarm(mut self) {
        self.key = None;
    }
}

impl<K: Clone + Eq + Hash + Send + 'static> Drop for Interrupted<'_, K> {
    fn drop(&mut self) {
        if let Some(key) = self.key.take() {
            self.queue.add(key.clone());
            self.queue.done(key);
        }
    }
}

/// How a key reads in an error message.
pub trait KeyText {
    fn text(&self) -> String;
}

impl KeyText for (String, String) {
    fn text(&self) -> String {
        if self.0.is_empty() {
            self.1.clone()
        } else {
            format!("{}/{}", self.0, self.1)
        }
    }
}

impl KeyText for String {
    fn text(&self) -> String {
        self.clone()
    }
}

/// Keep the `Controller` object `name` current: `status()` written now and once a second
/// (nothing is written when it is unchanged) until `shutdown`.
pub async fn publish_every(
    service: Arc<crate::service::Service>,
    name: &'static str,
    status: impl Fn() -> Value + Send + 'static,
    mut shutdown: tokio::sync::watch::Receiver<bool>,
) {
    loop {
        super::controller::write_status(&service, name, status()).await;
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_secs(1)) => {}
            _ = shutdown.changed() => return,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Fails `k` once, then succeeds; requeues `r` once.
    struct Script {
        seen: Arc<Mutex<Vec<String>>>,
    }

    impl Reconciler<String> for Script {
        async fn reconcile(&mut self, key: &String) -> Outcome {
            let n = {
                let mut s = self.seen.lock().unwrap();
                s.push(key.clone());
                s.iter().filter(|k| *k == key).count()
            };
            match (key.as_str(), n) {
                ("k", 1) => Outcome::failed(Action::Retry, "boom".into(), true),
                ("r", 1) => Action::RequeueAfter(Duration::from_millis(100)).into(),
                ("t", _) => Outcome::failed(Action::GiveUp, "no".into(), false),
                _ => Outcome::done(),
            }
        }
    }

    /// Never finishes reconciling `stuck`; tells when it started.
    struct Stuck {
        started: Arc<tokio::sync::Notify>,
    }

    impl Reconciler<String> for Stuck {
        async fn reconcile(&mut self, _key: &String) -> Outcome {
            self.started.notify_one();
            std::future::pending().await
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_standby_worker_takes_keys_only_while_it_leads() {
        let q = WorkQueue::new();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let (lead, leading) = tokio::sync::watch::channel(false);
        let w = tokio::spawn(worker(
            q.clone(),
            Arc::new(Stats::default()),
            "t",
            leading,
            Script { seen: seen.clone() },
        ));
        q.add("a".to_owned());
        tokio::time::sleep(Duration::from_secs(5)).await;
        assert!(
            seen.lock().unwrap().is_empty(),
            "a standby reconciles nothing"
        );
        lead.send_replace(true);
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        while seen.lock().unwrap().is_empty() && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert_eq!(*seen.lock().unwrap(), ["a"]);
        // Lost again: later keys wait in the queue.
        lead.send_replace(false);
        tokio::time::sleep(Duration::from_millis(10)).await;
        q.add("b".to_owned());
        tokio::time::sleep(Duration::from_secs(5)).await;
        assert_eq!(*seen.lock().unwrap(), ["a"]);
        assert_eq!(q.len(), 1, "b still queued");
        w.abort();
    }

    #[tokio::test]
    async fn a_worker_stopped_mid_reconcile_gives_the_key_back() {
        let q = WorkQueue::new();
        let started = Arc::new(tokio::sync::Notify::new());
        let w = tokio::spawn(worker(
            q.clone(),
            Arc::new(Stats::default()),
            "t",
            crate::leader::Leadership::always().receiver(),
            Stuck {
                started: started.clone(),
            },
        ));
        q.add("stuck".to_owned());
        started.notified().await;
        w.abort();
        assert!(w.await.unwrap_err().is_cancelled());
        let next = tokio::time::timeout(Duration::from_secs(10), q.next()).await;
        assert_eq!(next.ok().flatten().as_deref(), Some("stuck"));
    }

    #[tokio::test(start_paused = true)]
    async fn the_worker_follows_each_outcome_and_counts_it() {
        let q = WorkQueue::new();
        let stats = Arc::new(Stats::default());
        let seen = Arc::new(Mutex::new(Vec::new()));
        let w = tokio::spawn(worker(
            q.clone(),
            stats.clone(),
            "t",
            crate::leader::Leadership::always().receiver(),
            Script { seen: seen.clone() },
        ));
        for k in ["k", "r", "t"] {
            q.add(k.to_owned());
        }
        let count = |k: &str| seen.lock().unwrap().iter().filter(|x| *x == k).count();
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        while (count("k") < 2 || count("r") < 2) && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert_eq!((count("k"), count("r"), count("t")), (2, 2, 1));
        assert_eq!(stats.reconciles.load(Ordering::Relaxed), 5);
        assert_eq!(stats.errors.load(Ordering::Relaxed), 2);
        assert_eq!(stats.traps.load(Ordering::Relaxed), 1);
        assert_eq!(
            q.failures(&"k".to_owned()),
            0,
            "the success forgot the failure"
        );
        let f = stats.status_fields(q.len());
        assert_eq!(f["reconciles"], 5);
        assert_eq!(f["lastError"]["message"], "t: no");
        let mut m = String::new();
        render_metrics(
            &mut m,
            &[
                Metered {
                    name: "t".into(),
                    stats: stats.clone(),
                    queue_depth: 0,
                },
                Metered {
                    name: "u".into(),
                    stats: Arc::default(),
                    queue_depth: 3,
                },
            ],
        );
        assert!(
            m.contains("turtles_controller_errors_total{controller=\"t\"} 2"),
            "{m}"
        );
        // Each family is one group, with its HELP and TYPE once.
        let lines: Vec<&str> = m.lines().collect();
        let at = |l: &str| {
            lines
                .iter()
                .position(|x| *x == l)
                .unwrap_or_else(|| panic!("{l} in {m}"))
        };
        assert_eq!(
            at("turtles_controller_queue_depth{controller=\"u\"} 3"),
            at("turtles_controller_queue_depth{controller=\"t\"} 0") + 1
        );
        assert_eq!(
            m.matches("# TYPE turtles_controller_reconciles_total counter")
                .count(),
            1
        );
        assert!(m.contains("# TYPE turtles_controller_reconcile_duration_seconds histogram"));
        assert!(
            m.contains("turtles_controller_reconcile_duration_seconds_count{controller=\"t\"} 5")
        );
        q.shutdown();
        w.await.unwrap();
    }
}
