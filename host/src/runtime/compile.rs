//! Compiling components in the background: bounded parallelism, small components never queued
//! behind big ones, identical bytes compiled once, and two tiers of code.
//!
//! Why this exists: wasmtime compiles a component's functions in parallel on rayon's *global*
//! pool. Dropping many components at once put every compile's work into that one pool, where a
//! 100 KiB Rust component's jobs waited behind the thousands of functions of the 12-19 MiB Python
//! and JavaScript ones: every controller became `Running` only when the last big compile ended.
//!
//! So compiles run in lanes, each with its own rayon pool (wasmtime's parallel compilation runs
//! inside `ThreadPool::install`, so its jobs stay in the lane's pool) and its own bounded number
//! of compiles at a time, taken smallest first:
//! - the *small* lane (below [`SMALL_BYTES`]): as many compiles at once as there are cores;
//! - the *big* lane: half as many (at least one), so each big compile gets the lane's threads
//!   and finishes as early as it can instead of all of them finishing together at the end; its
//!   threads run at a lower CPU priority (nice 10), so small compiles, reconciles and API
//!   requests go first when the cores are busy;
//! - the *optimize* lane: one compile at a time at the lowest priority (nice 19), for the second
//!   tier below.
//!
//! **Two tiers, as a JIT has them.** Cranelift's optimizing compile is what a component should
//! run on, but it costs seconds of CPU for a 2 MiB Rust component and tens of seconds for a
//! Python or JavaScript one. Winch, wasmtime's single-pass baseline compiler, compiles the same
//! component 3-7 times faster into slower code. So a component nobody compiled before is first
//! compiled by Winch ([`Tier::Baseline`]) and runs on that at once, while the optimize lane
//! compiles it with Cranelift in the background; whoever runs it swaps to the optimized code
//! when it is there ([`Code`]). A component whose optimized code is already in wasmtime's disk
//! cache (a marker file per content hash says so) skips the baseline. A component Winch cannot
//! compile (a proposal it lacks) is compiled by Cranelift in its own lane instead.
//!
//! Identical bytes share one [`Artifact`] (sha256 → compiled code of both tiers) for as long as
//! any loaded component uses it; a second load of the same bytes, concurrent or later, waits for
//! or reuses the first compile.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock, Weak};
use std::time::{Duration, Instant};

use wasmtime::component::Component;
use wasmtime::Engine;

use super::{Result, RuntimeError};

/// Components at least this large compile in the big lane.
pub const SMALL_BYTES: usize = 4 << 20;
/// The big lane's threads run at this niceness: a 40 s compile yields the CPU to small compiles,
/// reconciles and API requests.
const BIG_NICE: i32 = 10;
/// The optimize lane's: code that already runs is made faster only with CPU nobody else wants.
const OPTIMIZE_NICE: i32 = 19;

/// Which compiler made a component's code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tier {
    /// Winch: compiled fast, runs slower.
    Baseline,
    /// Cranelift: what a component runs on once it is there.
    Optimized,
}

impl Tier {
    pub fn as_str(self) -> &'static str {
        match self {
            Tier::Baseline => "Baseline",
            Tier::Optimized => "Optimized",
        }
    }
}

/// A component compiled by one tier, and how long that took.
#[derive(Clone)]
pub struct Compiled {
    pub component: Component,
    pub tier: Tier,
    pub took: Duration,
}

type Outcome = Result<Compiled, String>;

/// One compiled component, shared by everything loaded from the same bytes.
pub struct Artifact {
    pub sha256: String,
    /// The first code that can run (baseline, or optimized when that was cheap), or why the
    /// component does not compile. A baseline is let go once the optimized code is in (its
    /// memory is freed when the last instance of it goes).
    first: tokio::sync::OnceCell<Result<Mutex<Option<Compiled>>, String>>,
    /// The optimized code once compiled (`Some(Err)`: it never will be).
    optimized: tokio::sync::watch::Sender<Option<Outcome>>,
}

impl Artifact {
    /// The optimized code if it is compiled by now.
    fn optimized_now(&self) -> Option<Compiled> {
        self.optimized
            .borrow()
            .as_ref()
            .and_then(|r| r.as_ref().ok())
            .cloned()
    }

    /// Let the baseline code go if the optimized code is in: nothing new is made from it (every
    /// [`Code`] swaps, and later loads get the optimized code).
    fn forget_baseline(&self) {
        if self.optimized_now().is_none() {
            return;
        }
        if let Some(Ok(slot)) = self.first.get() {
            let mut kept = slot.lock().unwrap_or_else(|p| p.into_inner());
            if kept.as_ref().is_some_and(|c| c.tier == Tier::Baseline) {
                *kept = None;
            }
        }
    }

    /// Whether the artifact still keeps baseline code.
    #[cfg(test)]
    fn keeps_baseline(&self) -> bool {
        matches!(self.first.get(), Some(Ok(slot)) if slot
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .as_ref()
            .is_some_and(|c| c.tier == Tier::Baseline))
    }

    /// The optimized code, once the optimize lane has it (at once if it is there already);
    /// `None` if it failed to compile.
    pub async fn optimized(&self) -> Option<Compiled> {
        let mut rx = self.optimized.subscribe();
        let done = rx.wait_for(Option::is_some).await.ok()?;
        done.as_ref().and_then(|r| r.as_ref().ok()).cloned()
    }
}

/// The code a loaded component runs, swapped in place from baseline to optimized: whoever makes
/// instances asks for it each time and replaces an instance of an older [`Code::version`].
pub struct Code {
    current: RwLock<Compiled>,
    version: AtomicU64,
}

impl Code {
    pub fn new(compiled: Compiled) -> Arc<Self> {
        Arc::new(Self {
            current: RwLock::new(compiled),
            version: AtomicU64::new(0),
        })
    }

    /// The code to instantiate now, with its version.
    pub fn get(&self) -> (u64, Component) {
        let c = self.current.read().unwrap_or_else(|p| p.into_inner());
        (self.version.load(Ordering::Acquire), c.component.clone())
    }

    /// Bumped at each swap: an instance made from an older version is replaced.
    pub fn version(&self) -> u64 {
        self.version.load(Ordering::Acquire)
    }

    pub fn tier(&self) -> Tier {
        self.current.read().unwrap_or_else(|p| p.into_inner()).tier
    }

    /// Swap to `compiled` (the optimized code of the same bytes).
    fn swap(&self, compiled: Compiled) {
        let mut c = self.current.write().unwrap_or_else(|p| p.into_inner());
        *c = compiled;
        self.version.fetch_add(1, Ordering::AcqRel);
    }

    /// Runs `code` on the optimized code of `artifact` once it is compiled; returns whether it
    /// swapped (not when the code was optimized already, the compile failed, or `code` went).
    /// Holds the artifact only weakly while it waits: an artifact nobody loads any more is
    /// dropped, and its queued optimize compile skipped.
    pub async fn tier_up(code: Weak<Code>, artifact: Arc<Artifact>) -> Option<Duration> {
        if code.upgrade()?.tier() == Tier::Optimized {
            return None;
        }
        let mut rx = artifact.optimized.subscribe();
        let weak = Arc::downgrade(&artifact);
        drop(artifact);
        let optimized = {
            let done = rx.wait_for(Option::is_some).await.ok()?;
            done.as_ref().and_then(|r| r.as_ref().ok()).cloned()?
        };
        let took = optimized.took;
        code.upgrade()?.swap(optimized);
        if let Some(a) = weak.upgrade() {
            a.forget_baseline();
        }
        Some(took)
    }
}

type Reply = tokio::sync::oneshot::Sender<Outcome>;

/// A compile waiting for its lane, ordered by size (then arrival).
struct Job {
    size: usize,
    seq: u64,
    tier: Tier,
    bytes: Arc<Vec<u8>>,
    /// Whom the compile is for: skipped if nobody holds it any more (a background compile).
    for_artifact: Option<Weak<Artifact>>,
    reply: Reply,
}

impl PartialEq for Job {
    fn eq(&self, other: &Self) -> bool {
        (self.size, self.seq) == (other.size, other.seq)
    }
}
impl Eq for Job {}
impl PartialOrd for Job {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Job {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (self.size, self.seq).cmp(&(other.size, other.seq))
    }
}

#[derive(Default)]
struct LaneState {
    /// Compile threads running (at most the lane's `slots`).
    running: usize,
    waiting: BinaryHeap<Reverse<Job>>,
}

struct Lane {
    name: &'static str,
    pool: rayon::ThreadPool,
    slots: usize,
    state: Mutex<LaneState>,
}

/// Lower the calling thread's CPU priority (Linux: `nice` is per thread).
fn lower_priority(nice: i32) {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: plain system calls on the calling thread's own id; no memory is shared.
        let r = unsafe {
            let tid = libc::gettid();
            libc::setpriority(libc::PRIO_PROCESS, tid as libc::id_t, nice)
        };
        if r != 0 {
            tracing::debug!(error = %std::io::Error::last_os_error(), "compile thread priority unchanged");
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = nice;
}

impl Lane {
    /// A lane whose pool has `threads` threads at niceness `nice`, running `slots` compiles at
    /// once.
    fn new(name: &'static str, threads: usize, slots: usize, nice: i32) -> Result<Self> {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .thread_name(move |i| format!("wasm-compile-{name}-{i}"))
            .start_handler(move |_| lower_priority(nice))
            .build()
            .map_err(|e| RuntimeError::Engine(e.to_string()))?;
        Ok(Self {
            name,
            pool,
            slots: slots.max(1),
            state: Mutex::new(LaneState::default()),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, LaneState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// The engines of the two tiers (one `Store` and `Linker` per engine: an instance runs on the
/// engine that compiled its component).
#[derive(Clone)]
pub struct Engines {
    pub optimizing: Engine,
    /// `None`: every component is compiled optimized at once.
    pub baseline: Option<Engine>,
}

impl Engines {
    fn get(&self, tier: Tier) -> &Engine {
        match (tier, &self.baseline) {
            (Tier::Baseline, Some(e)) => e,
            _ => &self.optimizing,
        }
    }
}

const SMALL: usize = 0;
const BIG: usize = 1;
const OPTIMIZE: usize = 2;

/// The compile lanes and the shared artifacts.
pub struct Compiler {
    engines: Engines,
    lanes: [Arc<Lane>; 3],
    artifacts: Mutex<HashMap<String, Weak<Artifact>>>,
    seq: AtomicU64,
    /// Components compiled (the first tier of each; wasmtime's disk cache hits included;
    /// shared artifacts not).
    compiles: AtomicU64,
    /// Optimized compiles done in the background after a baseline one.
    tier_ups: Arc<AtomicU64>,
    /// Where a file per content hash says wasmtime's disk cache holds its optimized code.
    markers: Option<PathBuf>,
}

impl Compiler {
    /// `markers`: a folder next to wasmtime's disk cache (none: always start with a baseline).
    pub fn new(engines: Engines, markers: Option<PathBuf>) -> Result<Self> {
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
        if let Some(dir) = &markers {
            std::fs::create_dir_all(dir).map_err(|source| RuntimeError::Read {
                path: dir.clone(),
                source,
            })?;
        }
        Ok(Self {
            engines,
            lanes: [
                Arc::new(Lane::new("small", cores, cores, 0)?),
                Arc::new(Lane::new("big", cores, cores / 2, BIG_NICE)?),
                Arc::new(Lane::new("optimize", cores, 1, OPTIMIZE_NICE)?),
            ],
            artifacts: Mutex::new(HashMap::new()),
            seq: AtomicU64::new(0),
            compiles: AtomicU64::new(0),
            tier_ups: Arc::new(AtomicU64::new(0)),
            markers,
        })
    }

    /// Components compiled so far (the first tier of each).
    pub fn compiles(&self) -> u64 {
        self.compiles.load(Ordering::Relaxed)
    }

    /// Optimized compiles done in the background after a baseline one.
    pub fn tier_ups(&self) -> u64 {
        self.tier_ups.load(Ordering::Relaxed)
    }

    /// The artifact of `bytes` with the first code that runs: compiled in its lane unless
    /// identical bytes were compiled (or are being compiled) already. When that code is the
    /// baseline, the optimized compile is under way: [`Code::tier_up`] swaps to it.
    pub async fn compile(&self, bytes: Vec<u8>) -> Result<(Arc<Artifact>, Compiled)> {
        let bytes = Arc::new(bytes);
        let hashed = bytes.clone();
        // Hashing 20 MiB is no work for an async thread either.
        let sha = tokio::task::spawn_blocking(move || super::sha256_hex(&hashed))
            .await
            .map_err(|e| RuntimeError::Compile(e.to_string()))?;
        let artifact = self.artifact(sha);
        let first = artifact
            .first
            .get_or_init(|| async {
                self.first_compile(&artifact, bytes)
                    .await
                    .map(|c| Mutex::new(Some(c)))
            })
            .await;
        let slot = match first {
            Ok(slot) => slot,
            Err(e) => return Err(RuntimeError::Compile(e.clone())),
        };
        // The optimized code, if it is there by now (a later load of the same bytes); else the
        // baseline (let go only once the optimized code is in: look again).
        let kept = slot.lock().unwrap_or_else(|p| p.into_inner()).clone();
        let compiled = match artifact.optimized_now() {
            Some(optimized) => {
                artifact.forget_baseline();
                Some(optimized)
            }
            None => kept.or_else(|| artifact.optimized_now()),
        };
        match compiled {
            Some(c) => Ok((artifact, c)),
            None => Err(RuntimeError::Compile(
                "the compiled code went away".to_owned(),
            )),
        }
    }

    /// The artifact of `bytes` with its optimized code (waiting for it if a baseline runs).
    pub async fn compile_optimized(&self, bytes: Vec<u8>) -> Result<(Arc<Artifact>, Compiled)> {
        let (artifact, compiled) = self.compile(bytes).await?;
        if compiled.tier == Tier::Optimized {
            return Ok((artifact, compiled));
        }
        match artifact.optimized().await {
            Some(c) => Ok((artifact, c)),
            None => Err(RuntimeError::Compile(
                "the optimized compile failed".to_owned(),
            )),
        }
    }

    async fn first_compile(&self, artifact: &Arc<Artifact>, bytes: Arc<Vec<u8>>) -> Outcome {
        self.compiles.fetch_add(1, Ordering::Relaxed);
        let lane = if bytes.len() >= SMALL_BYTES {
            BIG
        } else {
            SMALL
        };
        let marker = self.marker(&artifact.sha256);
        let cached = marker.as_ref().is_some_and(|m| m.exists());
        if self.engines.baseline.is_some() && !cached {
            match self.run(lane, Tier::Baseline, bytes.clone()).await {
                Ok(c) => {
                    self.optimize_later(artifact, bytes);
                    return Ok(c);
                }
                Err(e) => tracing::info!(
                    sha256 = %artifact.sha256,
                    error = %e,
                    "the baseline compiler cannot compile this component: compiling it optimized"
                ),
            }
        }
        let r = self.run(lane, Tier::Optimized, bytes).await;
        if r.is_ok() {
            write_marker(marker);
        }
        artifact.optimized.send_replace(Some(r.clone()));
        r
    }

    /// Compile `bytes` optimized in the optimize lane; the artifact's waiters get it.
    fn optimize_later(&self, artifact: &Arc<Artifact>, bytes: Arc<Vec<u8>>) {
        let (reply, rx) = tokio::sync::oneshot::channel();
        self.submit(
            OPTIMIZE,
            Tier::Optimized,
            bytes,
            Some(Arc::downgrade(artifact)),
            reply,
        );
        let weak = Arc::downgrade(artifact);
        let (marker, tier_ups) = (self.marker(&artifact.sha256), self.tier_ups.clone());
        tokio::spawn(async move {
            let r = rx
                .await
                .unwrap_or_else(|_| Err("not compiled: nothing uses the component".into()));
            match &r {
                Ok(_) => {
                    tier_ups.fetch_add(1, Ordering::Relaxed);
                    write_marker(marker);
                }
                Err(e) => {
                    tracing::warn!(error = %e, "the optimized compile failed: the component stays on baseline code")
                }
            }
            if let Some(a) = weak.upgrade() {
                a.optimized.send_replace(Some(r));
                a.forget_baseline();
            }
        });
    }

    /// The marker of `sha`'s optimized code, for this build of the optimizing engine (its
    /// compatibility hash: wasmtime's version and settings, as its cache key has them).
    fn marker(&self, sha: &str) -> Option<PathBuf> {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        self.engines
            .optimizing
            .precompile_compatibility_hash()
            .hash(&mut h);
        self.markers
            .as_ref()
            .map(|d| d.join(format!("{sha}-{:016x}", h.finish())))
    }

    async fn run(&self, lane: usize, tier: Tier, bytes: Arc<Vec<u8>>) -> Outcome {
        let (reply, rx) = tokio::sync::oneshot::channel();
        self.submit(lane, tier, bytes, None, reply);
        rx.await
            .unwrap_or_else(|_| Err("the compile thread went away".into()))
    }

    /// The shared artifact for a content hash (forgetting those nobody uses any more).
    fn artifact(&self, sha: String) -> Arc<Artifact> {
        let mut map = self.artifacts.lock().unwrap_or_else(|p| p.into_inner());
        map.retain(|_, w| w.strong_count() > 0);
        if let Some(a) = map.get(&sha).and_then(Weak::upgrade) {
            return a;
        }
        let a = Arc::new(Artifact {
            sha256: sha.clone(),
            first: tokio::sync::OnceCell::new(),
            optimized: tokio::sync::watch::Sender::new(None),
        });
        map.insert(sha, Arc::downgrade(&a));
        a
    }

    fn submit(
        &self,
        lane: usize,
        tier: Tier,
        bytes: Arc<Vec<u8>>,
        for_artifact: Option<Weak<Artifact>>,
        reply: Reply,
    ) {
        let lane = &self.lanes[lane];
        let job = Job {
            size: bytes.len(),
            seq: self.seq.fetch_add(1, Ordering::Relaxed),
            tier,
            bytes,
            for_artifact,
            reply,
        };
        let start_thread = {
            let mut st = lane.lock();
            st.waiting.push(Reverse(job));
            let start = st.running < lane.slots;
            if start {
                st.running += 1;
            }
            start
        };
        if start_thread {
            let (lane, engines) = (lane.clone(), self.engines.clone());
            let spawned = std::thread::Builder::new()
                .name(format!("wasm-compile-{}", lane.name))
                .spawn({
                    let lane = lane.clone();
                    move || drain(&lane, &engines)
                });
            if let Err(e) = spawned {
                tracing::error!(lane = lane.name, error = %e, "cannot start a compile thread");
                // Fail what waits rather than leave it waiting for a thread that never comes.
                let mut st = lane.lock();
                st.running -= 1;
                if st.running == 0 {
                    for Reverse(job) in st.waiting.drain() {
                        let _ = job.reply.send(Err(format!("no compile thread: {e}")));
                    }
                }
            }
        }
    }
}

/// Say that wasmtime's disk cache holds the optimized code (best effort: without the marker the
/// next start only begins with a baseline again).
fn write_marker(marker: Option<PathBuf>) {
    if let Some(m) = marker {
        if let Err(e) = std::fs::write(&m, b"") {
            tracing::debug!(path = %m.display(), error = %e, "optimized-code marker not written");
        }
    }
}

/// A lane's compile thread: the smallest waiting compile first, until none is left.
fn drain(lane: &Lane, engines: &Engines) {
    loop {
        let job = {
            let mut st = lane.lock();
            match st.waiting.pop() {
                Some(Reverse(job)) => job,
                None => {
                    st.running -= 1;
                    return;
                }
            }
        };
        let unused = job
            .for_artifact
            .as_ref()
            .is_some_and(|a| a.strong_count() == 0);
        if job.reply.is_closed() || unused {
            continue; // nobody waits for it any more (the load was cancelled, or unloaded)
        }
        let started = Instant::now();
        let engine = engines.get(job.tier);
        let r = lane
            .pool
            .install(|| {
                // A compiler panic fails this compile, not the lane (its thread would be gone
                // with `running` still counting it).
                std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    Component::from_binary(engine, &job.bytes)
                }))
                .unwrap_or_else(|_| Err(wasmtime::format_err!("the compiler panicked")))
            })
            .map(|component| Compiled {
                component,
                tier: job.tier,
                took: started.elapsed(),
            })
            .map_err(|e| format!("{e:#}"));
        tracing::debug!(
            lane = lane.name,
            tier = job.tier.as_str(),
            bytes = job.size,
            ms = started.elapsed().as_millis() as u64,
            ok = r.is_ok(),
            "compiled"
        );
        let _ = job.reply.send(r);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The smallest component that compiles: an empty component.
    const EMPTY: &[u8] = b"\0asm\x0d\0\x01\0";

    fn engines(baseline: bool) -> Engines {
        let mut config = wasmtime::Config::new();
        config.wasm_component_model(true);
        let optimizing = Engine::new(&config).unwrap();
        let baseline = baseline.then(|| {
            config.strategy(wasmtime::Strategy::Winch);
            config.wasm_tail_call(false);
            Engine::new(&config).unwrap()
        });
        Engines {
            optimizing,
            baseline,
        }
    }

    fn compiler() -> Compiler {
        Compiler::new(engines(false), None).unwrap()
    }

    #[tokio::test]
    async fn identical_bytes_compile_once_and_share_the_artifact() {
        let c = compiler();
        let (a, b) = tokio::join!(c.compile(EMPTY.to_vec()), c.compile(EMPTY.to_vec()));
        let (a, b) = (a.unwrap(), b.unwrap());
        assert!(Arc::ptr_eq(&a.0, &b.0));
        assert_eq!(c.compiles(), 1);
        // Later, while the first is still in use: shared too.
        let again = c.compile(EMPTY.to_vec()).await.unwrap();
        assert!(Arc::ptr_eq(&a.0, &again.0));
        assert_eq!(c.compiles(), 1);
        // Once nobody holds it, identical bytes compile again.
        drop((a, b, again));
        c.compile(EMPTY.to_vec()).await.unwrap();
        assert_eq!(c.compiles(), 2);
    }

    #[tokio::test]
    async fn bad_bytes_fail_with_a_compile_error() {
        for baseline in [false, true] {
            let c = Compiler::new(engines(baseline), None).unwrap();
            let e = c.compile(b"not wasm".to_vec()).await.err().unwrap();
            assert!(matches!(e, RuntimeError::Compile(_)), "{e}");
        }
    }

    /// A new component runs on baseline code first and is swapped to optimized code in place;
    /// once the optimized code is in the disk cache, the next start skips the baseline.
    #[tokio::test]
    async fn baseline_first_then_optimized_swapped_in_and_remembered() {
        let dir = std::env::temp_dir().join(format!(
            "turtles-compile-markers-{}-{}",
            std::process::id(),
            line!()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        let c = Compiler::new(engines(true), Some(dir.clone())).unwrap();
        let (artifact, first) = c.compile(EMPTY.to_vec()).await.unwrap();
        assert_eq!(first.tier, Tier::Baseline);
        assert!(Engine::same(
            first.component.engine(),
            c.engines.baseline.as_ref().unwrap()
        ));
        let code = Code::new(first);
        let (v0, _) = code.get();
        let swapped = Code::tier_up(Arc::downgrade(&code), artifact.clone()).await;
        assert!(swapped.is_some());
        // Swapped: the baseline code is not kept for later loads.
        assert!(!artifact.keeps_baseline());
        assert_eq!(code.tier(), Tier::Optimized);
        assert!(code.version() > v0);
        assert!(Engine::same(code.get().1.engine(), &c.engines.optimizing));
        assert_eq!((c.compiles(), c.tier_ups()), (1, 1));
        // Optimized already: nothing to swap.
        assert!(Code::tier_up(Arc::downgrade(&code), artifact.clone())
            .await
            .is_none());
        assert!(c.marker(&artifact.sha256).unwrap().exists());
        // A later load of the same bytes, while the artifact lives: its optimized code at once.
        let (shared, later) = c.compile(EMPTY.to_vec()).await.unwrap();
        assert!(Arc::ptr_eq(&shared, &artifact));
        assert_eq!(later.tier, Tier::Optimized);
        // A new start (the marker is there): optimized at once, no tier-up.
        let c2 = Compiler::new(engines(true), Some(dir.clone())).unwrap();
        let (_, again) = c2.compile(EMPTY.to_vec()).await.unwrap();
        assert_eq!(again.tier, Tier::Optimized);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn jobs_are_taken_smallest_first() {
        let job = |size, seq| {
            let (reply, _rx) = tokio::sync::oneshot::channel();
            Reverse(Job {
                size,
                seq,
                tier: Tier::Optimized,
                bytes: Arc::new(Vec::new()),
                for_artifact: None,
                reply,
            })
        };
        let mut heap: BinaryHeap<_> = [job(5, 0), job(1, 1), job(5, 2), job(3, 3)].into();
        let order: Vec<(usize, u64)> = std::iter::from_fn(|| heap.pop())
            .map(|Reverse(j)| (j.size, j.seq))
            .collect();
        assert_eq!(order, vec![(1, 1), (3, 3), (5, 0), (5, 2)]);
    }
}
