//! Writes served off the async workers. The runtime has one worker per core, and every request's
//! future runs on them: a write whose CPU takes milliseconds (decoding, patching, defaults,
//! validation and field management of a large object, or server-side apply's field sets) holds
//! a worker that long, and a few at once stop the server answering anyone (eight tiny merge
//! patches of 737 KB Deployments took an administrator's GETs from 6 ms to 3.2 s on two cores).
//!
//! Such a write's cost grows with the larger of its body and the object it changes, so both are
//! looked at before the work starts: the body's size as the request knows it, and the stored
//! object's, read from the store's in-memory index (a hash lookup: no parse). A write is served
//! on a blocking-pool thread when
//! - its body is over [`HEAVY_BYTES`], or of unknown size (streamed);
//! - the object its path names (the object itself, or the one its subresource changes: `status`,
//!   `scale`, `binding`, `eviction`, ...) is stored with more than [`HEAVY_BYTES`] of JSON
//!   (update, patch, delete: each parses the stored object at least once);
//! - it is a server-side apply whose body or stored object is over [`APPLY_BYTES`] (its field
//!   sets cost several times a patch of the same size: two applies of 5,000 env entries, a body
//!   under 256 KiB, took GETs to 1.8 s);
//! - it is a `deletecollection` (each object of the collection is deleted as one DELETE would).
//!
//! A hop to the pool costs some 10-20 µs; the writes sent there cost milliseconds. At most
//! [`MAX_OFF_WORKERS`] run there at once (one thread each): a flood of them, or clients that hang
//! up mid-write (the write runs to its end; the client's in-flight slot is gone), cannot grow the
//! blocking pool beyond that. The others wait for a turn on the workers (a cheap future), within
//! the request's deadline. Small writes stay on the workers, where they cost least: every write
//! (or every apply) could go off them, but the turns are bounded and shared, and small writes,
//! a controller's small applies among them, would then queue behind a tenant's heavy ones.
//!
//! The turns are shared as the in-flight limits' slots are (`inflight.rs`): one [`Flow`] (who
//! sent the request, as authenticated; a namespace's ServiceAccounts together; each Wasm
//! controller) runs at most half of them, [`Offload::share`]. Its next heavy write waits until
//! one of its own ends (or its deadline passes: the same 504), while other flows' writes still
//! find turns, so a tenant's heavy writes cannot hold every turn and make another tenant's or
//! a controller's miss its deadline. `system:masters` (as the request acts) is exempt from the
//! share, not from the bound: it waits for a turn like anyone.
//!
//! Reads that render large stored objects take the same turns ([`Turns`], with the [`Heavy`]
//! reasons of a read): a list's chunk written as Table rows, `PartialObjectMetadata` or YAML
//! that parses more than [`HEAVY_BYTES`] of objects (`handlers.rs`, `ListBody`), and a watch
//! event of an object over [`HEAVY_BYTES`] written as a Table or `PartialObjectMetadata`
//! (`watch.rs`). Their output is small (a Table row of a 1.3 MB ConfigMap is a few dozen bytes),
//! so the socket never pushes back and nothing else makes the body yield: on the workers, one
//! Table LIST of 300 such ConfigMaps held a worker for 4.7 s, parsing each of them (some 15 ms
//! apiece). Off them, the parse holds up only its own request. They are taken after the handler
//! returns (the body is written as the client reads), one turn per chunk or event.

use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use tokio::sync::{Notify, Semaphore};

use super::inflight::Flow;
use crate::model::ApiError;

/// A write whose body or stored object is bigger than this is served off the workers (a tiny
/// merge patch of a 64 KiB Deployment is of the order of a millisecond of CPU in a release
/// build, some fifty times what the hop costs: estimates, not measurements).
pub const HEAVY_BYTES: u64 = 64 << 10;

/// A server-side apply whose body or stored object is bigger than this is served off the
/// workers: a quarter of [`HEAVY_BYTES`], for its field sets (an apply of a list of 500 env
/// entries, 16 KiB, is of the order of what a 64 KiB patch costs; an estimate).
pub const APPLY_BYTES: u64 = HEAVY_BYTES / 4;

/// At most this many writes run off the workers at once, each on a thread of tokio's blocking
/// pool (whose own bound, 512 threads, is never approached by writes).
pub const MAX_OFF_WORKERS: usize = 16;

/// Why work runs off the workers: a heavy write (the `reason` label of
/// `turtles_api_writes_off_workers_total`) or a read's rendering of large stored objects (that
/// of `turtles_api_reads_off_workers_total`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Heavy {
    /// Its body is over [`HEAVY_BYTES`] or of unknown size.
    Body,
    /// The object it changes is stored with more than [`HEAVY_BYTES`].
    Stored,
    /// A server-side apply whose body or stored object is over [`APPLY_BYTES`].
    Apply,
    /// A `deletecollection`.
    Collection,
    /// A chunk of a list written as Table rows that parses more than [`HEAVY_BYTES`] of stored
    /// objects.
    ListTable,
    /// A chunk of a list written as `PartialObjectMetadata` that parses more than
    /// [`HEAVY_BYTES`] of stored objects.
    ListMetadata,
    /// A chunk of a list written as YAML that parses more than [`HEAVY_BYTES`] of stored
    /// objects.
    ListYaml,
    /// A watch event of an object over [`HEAVY_BYTES`] written as a Table.
    WatchTable,
    /// A watch event of an object over [`HEAVY_BYTES`] written as `PartialObjectMetadata`.
    WatchMetadata,
    /// One object over [`HEAVY_BYTES`] read as a Table, `PartialObjectMetadata` or YAML, or
    /// converted to the version asked for.
    Get,
}

impl Heavy {
    const ALL: [Heavy; 10] = [
        Heavy::Body,
        Heavy::Stored,
        Heavy::Apply,
        Heavy::Collection,
        Heavy::ListTable,
        Heavy::ListMetadata,
        Heavy::ListYaml,
        Heavy::WatchTable,
        Heavy::WatchMetadata,
        Heavy::Get,
    ];

    fn label(self) -> &'static str {
        match self {
            Heavy::Body => "body",
            Heavy::Stored => "stored",
            Heavy::Apply => "apply",
            Heavy::Collection => "collection",
            Heavy::ListTable => "list_table",
            Heavy::ListMetadata => "list_metadata",
            Heavy::ListYaml => "list_yaml",
            Heavy::WatchTable => "watch_table",
            Heavy::WatchMetadata => "watch_metadata",
            Heavy::Get => "get",
        }
    }

    /// A read's rendering (counted in `turtles_api_reads_off_workers_total`), not a write.
    fn is_read(self) -> bool {
        !matches!(
            self,
            Heavy::Body | Heavy::Stored | Heavy::Apply | Heavy::Collection
        )
    }
}

/// Marks a request (in its extensions) whose handler already runs off the workers: it need not
/// be detached to run to its end (a blocking-pool thread runs it to its end whatever the client
/// does), and what it spawns would land back on the workers.
#[derive(Debug, Clone, Copy)]
pub struct OffWorkers;

#[derive(Debug, thiserror::Error)]
pub enum OffloadError {
    /// The request's deadline passed while it waited for a turn.
    #[error("the request's deadline passed while it waited for a thread")]
    DeadlinePassed,
    /// The work's thread panicked or was cancelled (the runtime shutting down).
    #[error("the thread off the workers failed: {0}")]
    Thread(String),
}

impl From<OffloadError> for ApiError {
    fn from(e: OffloadError) -> Self {
        match e {
            // kube's timeout filter's answer.
            OffloadError::DeadlinePassed => ApiError::deadline_passed(),
            OffloadError::Thread(_) => ApiError::internal(e.to_string()),
        }
    }
}

/// The turns off the workers and their metrics.
pub struct Offload {
    turns: Arc<Semaphore>,
    /// How many turns one flow may hold or wait for at once: half of them.
    share: usize,
    /// The turns each flow holds or waits for now, and a signal each time one is given back.
    shares: Arc<Shares>,
    /// Writes (and reads' renderings) running off the workers now.
    running: Arc<AtomicUsize>,
    /// Writes (and reads' renderings) waiting for a turn now.
    waiting: Arc<AtomicUsize>,
    /// Work run off the workers, by [`Heavy`] (in the order of [`Heavy::ALL`]).
    total: [AtomicU64; 10],
}

impl Default for Offload {
    fn default() -> Self {
        Self::new(MAX_OFF_WORKERS)
    }
}

/// Decrements a gauge when dropped.
struct Counted(Arc<AtomicUsize>);

impl Counted {
    fn new(gauge: &Arc<AtomicUsize>) -> Self {
        gauge.fetch_add(1, Ordering::AcqRel);
        Counted(gauge.clone())
    }
}

impl Drop for Counted {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// The turns each flow holds (or queues for) now, and a signal each time one is given back.
#[derive(Default)]
struct Shares {
    held: Mutex<HashMap<Flow, usize>>,
    freed: Notify,
}

impl Shares {
    /// One more of `flow`'s, if it holds fewer than `share`.
    fn try_take(self: &Arc<Self>, flow: &Flow, share: usize) -> Option<FlowTurn> {
        let mut held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        let n = held.entry(flow.clone()).or_default();
        if *n >= share {
            return None;
        }
        *n += 1;
        Some(FlowTurn {
            shares: self.clone(),
            flow: flow.clone(),
        })
    }

    /// One of `flow`'s, once it holds fewer than `share` (as long as the caller waits).
    async fn take(self: &Arc<Self>, flow: &Flow, share: usize) -> FlowTurn {
        loop {
            // Registered before the check, so a turn given back in between is not missed.
            let mut freed = std::pin::pin!(self.freed.notified());
            freed.as_mut().enable();
            if let Some(t) = self.try_take(flow, share) {
                return t;
            }
            freed.await;
        }
    }

    #[cfg(test)]
    fn held(&self, flow: &Flow) -> usize {
        let held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        held.get(flow).copied().unwrap_or(0)
    }
}

/// One of a flow's share of the turns, given back when dropped.
struct FlowTurn {
    shares: Arc<Shares>,
    flow: Flow,
}

impl Drop for FlowTurn {
    fn drop(&mut self) {
        {
            let mut held = self.shares.held.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(n) = held.get_mut(&self.flow) {
                *n = n.saturating_sub(1);
                if *n == 0 {
                    held.remove(&self.flow);
                }
            }
        }
        // Every flow waiting at its share looks again (a few at most: the in-flight limits
        // bound the writes that can wait).
        self.shares.freed.notify_waiters();
    }
}

impl Offload {
    pub fn new(turns: usize) -> Self {
        let turns = turns.max(1);
        Self {
            turns: Arc::new(Semaphore::new(turns)),
            share: turns.div_ceil(2),
            shares: Default::default(),
            running: Default::default(),
            waiting: Default::default(),
            total: Default::default(),
        }
    }

    /// Runs `fut` on a blocking-pool thread of its own once a turn is free (waiting no later
    /// than `deadline`), and waits for it there, so that its CPU holds up only itself and the
    /// caller's future stays what it was (a guest's call deadline still fires; the work then
    /// finishes on its own, keeping its turn). The thread drives `fut` with the runtime's
    /// `Handle::block_on`: its timers, I/O and `block_in_place` (CEL) work as on a worker, but
    /// what it spawns runs on the workers. On a current-thread runtime (unit tests), as is.
    ///
    /// `flow` is whose share of the turns it takes (`None`: none, for `system:masters` or a
    /// request not authenticated): while that flow holds [`Offload::share`] turns, it waits for
    /// one of them to be given back before it queues for a turn.
    pub async fn run<T: Send + 'static>(
        &self,
        why: Heavy,
        flow: Option<&Flow>,
        deadline: Option<tokio::time::Instant>,
        fut: impl Future<Output = T> + Send + 'static,
    ) -> Result<T, OffloadError> {
        let handle = match tokio::runtime::Handle::try_current() {
            Ok(h) if h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => h,
            _ => {
                self.count(why);
                return Ok(fut.await);
            }
        };
        let (share, turn) = {
            let _waiting = Counted::new(&self.waiting);
            let acquire = async {
                // The flow's share first, then a turn: a flow at its share does not stand in
                // the turns' queue ahead of other flows.
                let share = match flow {
                    Some(f) => Some(self.shares.take(f, self.share).await),
                    None => None,
                };
                let turn = self.turns.clone().acquire_owned().await;
                (share, turn)
            };
            let (share, turn) = match deadline {
                Some(d) => tokio::time::timeout_at(d, acquire)
                    .await
                    .map_err(|_| OffloadError::DeadlinePassed)?,
                None => acquire.await,
            };
            (
                share,
                turn.map_err(|e| OffloadError::Thread(e.to_string()))?,
            )
        };
        self.count(why);
        let running = self.running.clone();
        tokio::task::spawn_blocking(move || {
            let _turn = turn;
            let _share = share;
            let _running = Counted::new(&running);
            handle.block_on(fut)
        })
        .await
        .map_err(|e| OffloadError::Thread(e.to_string()))
    }

    /// The most turns one flow holds or waits for at once: half of them (rounded up).
    pub fn share(&self) -> usize {
        self.share
    }

    fn count(&self, why: Heavy) {
        if let Some(i) = Heavy::ALL.iter().position(|h| *h == why) {
            self.total[i].fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Writes run off the workers so far, for `why`.
    pub fn total(&self, why: Heavy) -> u64 {
        Heavy::ALL
            .iter()
            .position(|h| *h == why)
            .map_or(0, |i| self.total[i].load(Ordering::Relaxed))
    }

    /// `turtles_api_writes_off_workers_total{reason}`,
    /// `turtles_api_reads_off_workers_total{reason}`, `turtles_api_writes_off_workers` (running)
    /// and `turtles_api_writes_off_workers_waiting` (the gauges count the reads' renderings too:
    /// they take the same turns).
    pub fn render(&self, out: &mut String) {
        out.push_str("# HELP turtles_api_writes_off_workers_total Writes served on a blocking thread rather than the async workers, by why: a big body, a big stored object, a server-side apply, a deletecollection.\n# TYPE turtles_api_writes_off_workers_total counter\n");
        for why in Heavy::ALL.into_iter().filter(|h| !h.is_read()) {
            out.push_str(&format!(
                "turtles_api_writes_off_workers_total{{reason=\"{}\"}} {}\n",
                why.label(),
                self.total(why)
            ));
        }
        out.push_str("# HELP turtles_api_reads_off_workers_total List chunks and watch events that parse large stored objects, rendered on a blocking thread rather than the async workers, by what they are rendered as.\n# TYPE turtles_api_reads_off_workers_total counter\n");
        for why in Heavy::ALL.into_iter().filter(|h| h.is_read()) {
            out.push_str(&format!(
                "turtles_api_reads_off_workers_total{{reason=\"{}\"}} {}\n",
                why.label(),
                self.total(why)
            ));
        }
        out.push_str(&format!(
            "# HELP turtles_api_writes_off_workers Writes, and reads' renderings of large objects, running on a blocking thread now.\n# TYPE turtles_api_writes_off_workers gauge\nturtles_api_writes_off_workers {}\n# HELP turtles_api_writes_off_workers_waiting Writes, and reads' renderings of large objects, waiting for a blocking thread now.\n# TYPE turtles_api_writes_off_workers_waiting gauge\nturtles_api_writes_off_workers_waiting {}\n",
            self.running.load(Ordering::Acquire),
            self.waiting.load(Ordering::Acquire),
        ));
    }
}

/// A request's way to the turns for what it renders after its handler has returned (a list's
/// body, a watch's events, written as the client reads): the turns, whose share it takes
/// (`None`: none, as for [`Offload::run`]) and until when it waits for one (a watch: no
/// deadline). Cloned into the body.
#[derive(Clone)]
pub struct Turns {
    pub offload: Arc<Offload>,
    pub flow: Option<Flow>,
    pub deadline: Option<tokio::time::Instant>,
}

impl Turns {
    /// Runs `work` on a blocking-pool thread once a turn is free, as [`Offload::run`] runs a
    /// write (on a current-thread runtime, here).
    pub async fn run<T: Send + 'static>(
        &self,
        why: Heavy,
        work: impl FnOnce() -> T + Send + 'static,
    ) -> Result<T, OffloadError> {
        self.offload
            .run(
                why,
                self.flow.as_ref(),
                self.deadline,
                async move { work() },
            )
            .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// Polls `cond` every millisecond until it holds, failing after 10 s.
    async fn until(what: &str, cond: impl Fn() -> bool) {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        while !cond() {
            assert!(tokio::time::Instant::now() < deadline, "never: {what}");
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }

    /// The work runs on another thread than the caller's worker, at most `turns` at once; the
    /// others wait for a turn, no later than their deadline.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn writes_run_on_their_own_threads_a_bounded_number_at_once() {
        let off = Arc::new(Offload::new(2));
        let worker = std::thread::current().id();
        let ran_on = off
            .run(Heavy::Stored, None, None, async {
                std::thread::current().id()
            })
            .await
            .expect("ran");
        assert_ne!(ran_on, worker, "off the caller's worker");
        assert_eq!(off.total(Heavy::Stored), 1);

        // Two turns held by writes that wait for a signal.
        let (go, gate) = tokio::sync::watch::channel(false);
        let mut held = Vec::new();
        for _ in 0..2 {
            let (off, mut gate) = (off.clone(), gate.clone());
            held.push(tokio::spawn(async move {
                off.run(Heavy::Apply, None, None, async move {
                    let _ = gate.wait_for(|open| *open).await;
                })
                .await
            }));
        }
        until("the two run", || off.running.load(Ordering::Acquire) == 2).await;
        // A third waits; past its deadline it is kube's timeout.
        let soon = tokio::time::Instant::now() + Duration::from_millis(50);
        let e = off
            .run(Heavy::Body, None, Some(soon), async {})
            .await
            .expect_err("no turn");
        assert!(matches!(e, OffloadError::DeadlinePassed));
        assert_eq!(ApiError::from(e).code, 504);
        assert_eq!(off.total(Heavy::Body), 0, "what never ran is not counted");
        let third = {
            let off = off.clone();
            tokio::spawn(async move { off.run(Heavy::Body, None, None, async { 3 }).await })
        };
        until("the third waits", || {
            off.waiting.load(Ordering::Acquire) == 1
        })
        .await;
        assert_eq!(off.running.load(Ordering::Acquire), 2);
        go.send(true).expect("open the gate");
        for h in held {
            h.await.expect("joined").expect("ran");
        }
        assert_eq!(third.await.expect("joined").expect("ran"), 3);
        let mut out = String::new();
        off.render(&mut out);
        assert!(out.contains("turtles_api_writes_off_workers_total{reason=\"apply\"} 2"));
        assert!(out.contains("turtles_api_writes_off_workers_total{reason=\"body\"} 1"));
        assert!(out.contains("turtles_api_writes_off_workers 0\n"));
        assert!(out.contains("turtles_api_writes_off_workers_waiting 0\n"));
    }

    /// A read's rendering goes off the caller's worker through its request's [`Turns`], and is
    /// counted in the reads' family, not the writes'.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn reads_take_the_same_turns_and_are_counted_apart() {
        let off = Arc::new(Offload::new(2));
        let turns = Turns {
            offload: off.clone(),
            flow: Some(Flow::User("tenant".into())),
            deadline: None,
        };
        let caller = std::thread::current().id();
        let ran_on = turns
            .run(Heavy::ListTable, || std::thread::current().id())
            .await
            .expect("ran");
        assert_ne!(ran_on, caller, "off the caller's thread");
        assert_eq!(off.total(Heavy::ListTable), 1);
        assert_eq!(off.shares.held(&Flow::User("tenant".into())), 0);
        let mut out = String::new();
        off.render(&mut out);
        assert!(
            out.contains("turtles_api_reads_off_workers_total{reason=\"list_table\"} 1\n"),
            "{out}"
        );
        for reason in [
            "list_metadata",
            "list_yaml",
            "watch_table",
            "watch_metadata",
        ] {
            assert!(
                out.contains(&format!(
                    "turtles_api_reads_off_workers_total{{reason=\"{reason}\"}} 0\n"
                )),
                "{out}"
            );
        }
        assert!(
            !out.contains("turtles_api_writes_off_workers_total{reason=\"list_table\""),
            "{out}"
        );
        assert!(out.contains("turtles_api_writes_off_workers_total{reason=\"body\"} 0\n"));
    }

    /// One flow runs at most half the turns: its next write waits, though turns are free, until
    /// one of its own ends (and no later than its deadline), while another flow's writes run.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn one_flow_runs_at_most_half_the_turns() {
        let off = Arc::new(Offload::new(16));
        assert_eq!(off.share(), 8);
        let a = Flow::ServiceAccounts("tenant".into());
        let b = Flow::User("bob".into());
        // A runs 8 writes, each until its own signal.
        let mut ends = Vec::new();
        let mut held = Vec::new();
        for _ in 0..8 {
            let (end, ended) = tokio::sync::oneshot::channel::<()>();
            ends.push(end);
            let (off, a) = (off.clone(), a.clone());
            held.push(tokio::spawn(async move {
                off.run(Heavy::Stored, Some(&a), None, async move {
                    let _ = ended.await;
                })
                .await
            }));
        }
        until("A's eight run", || off.running.load(Ordering::Acquire) == 8).await;
        // A 9th of A's gets no turn though 8 are free: past its deadline, kube's 504.
        let soon = tokio::time::Instant::now() + Duration::from_millis(50);
        let e = off
            .run(Heavy::Body, Some(&a), Some(soon), async {})
            .await
            .expect_err("over A's share");
        assert!(matches!(e, OffloadError::DeadlinePassed));
        assert_eq!(ApiError::from(e).code, 504);
        assert_eq!(off.shares.held(&a), 8, "what never ran holds no share");
        // Another 9th waits; B's writes run meanwhile.
        let ninth = {
            let (off, a) = (off.clone(), a.clone());
            tokio::spawn(async move { off.run(Heavy::Body, Some(&a), None, async { 9 }).await })
        };
        until("A's 9th waits", || off.waiting.load(Ordering::Acquire) == 1).await;
        let patient = tokio::time::Instant::now() + Duration::from_secs(10);
        for _ in 0..3 {
            let ran = off
                .run(Heavy::Body, Some(&b), Some(patient), async { "b" })
                .await
                .expect("B finds a turn while A is at its share");
            assert_eq!(ran, "b");
        }
        assert!(!ninth.is_finished(), "A's 9th still waits for one of A's");
        assert_eq!(off.running.load(Ordering::Acquire), 8);
        // One of A's ends: the 9th runs.
        ends.pop().expect("an end").send(()).expect("ended");
        let ninth = tokio::time::timeout(Duration::from_secs(10), ninth)
            .await
            .expect("A's 9th ran once one of A's ended")
            .expect("joined")
            .expect("ran");
        assert_eq!(ninth, 9);
        for end in ends {
            end.send(()).expect("ended");
        }
        for h in held {
            h.await.expect("joined").expect("ran");
        }
        assert_eq!(off.shares.held(&a), 0, "shares go with the writes");
        assert!(off.shares.held.lock().expect("not poisoned").is_empty());
    }

    /// A write whose caller goes away runs to its end, keeping its turn until then.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn an_abandoned_write_finishes_and_keeps_its_turn() {
        let off = Arc::new(Offload::new(1));
        let (go, mut gate) = tokio::sync::watch::channel(false);
        let (done_tx, done) = tokio::sync::oneshot::channel::<()>();
        let caller = {
            let off = off.clone();
            tokio::spawn(async move {
                off.run(Heavy::Stored, None, None, async move {
                    let _ = gate.wait_for(|open| *open).await;
                    let _ = done_tx.send(());
                })
                .await
            })
        };
        until("the write runs", || {
            off.running.load(Ordering::Acquire) == 1
        })
        .await;
        caller.abort();
        let _ = caller.await;
        // Its turn is still taken.
        let soon = tokio::time::Instant::now() + Duration::from_millis(50);
        assert!(off
            .run(Heavy::Body, None, Some(soon), async {})
            .await
            .is_err());
        go.send(true).expect("open the gate");
        tokio::time::timeout(Duration::from_secs(10), done)
            .await
            .expect("the abandoned write finished")
            .expect("sent");
        off.run(Heavy::Body, None, None, async {})
            .await
            .expect("the turn is back");
    }
}
