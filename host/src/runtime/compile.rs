//! Compiling components in the background: bounded parallelism, small components never queued
//! behind big ones, identical bytes compiled once.
//!
//! Why this exists: wasmtime compiles a component's functions in parallel on rayon's *global*
//! pool. Dropping many components at once put every compile's work into that one pool, where a
//! 100 KiB Rust component's jobs waited behind the thousands of functions of the 12-19 MiB Python
//! and JavaScript ones: every controller became `Running` only when the last big compile ended.
//!
//! So compiles run in two lanes, each with its own rayon pool (wasmtime's parallel compilation
//! runs inside `ThreadPool::install`, so its jobs stay in the lane's pool) and its own bounded
//! number of compiles at a time, taken smallest first:
//! - the *small* lane (below [`SMALL_BYTES`]): as many compiles at once as there are cores;
//! - the *big* lane: half as many (at least one), so each big compile gets the lane's threads
//!   and finishes as early as it can instead of all of them finishing together at the end; its
//!   threads run at a lower CPU priority (nice 10), so small compiles, reconciles and API
//!   requests go first when the cores are busy.
//!
//! Identical bytes share one [`Artifact`] (sha256 → compiled `Component`) for as long as any
//! loaded controller uses it; a second load of the same bytes, concurrent or later, waits for
//! or reuses the first compile.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use wasmtime::component::Component;
use wasmtime::Engine;

use super::{Result, RuntimeError};

/// Components at least this large compile in the big lane.
pub const SMALL_BYTES: usize = 4 << 20;
/// The big lane's threads run at this niceness: a 40 s compile yields the CPU to small compiles,
/// reconciles and API requests.
const BIG_NICE: i32 = 10;

/// One compiled component, shared by every controller loaded from the same bytes.
pub struct Artifact {
    pub sha256: String,
    /// The component, or why it did not compile, and how long the compile took.
    compiled: tokio::sync::OnceCell<Result<(Component, Duration), String>>,
}

type Reply = tokio::sync::oneshot::Sender<Result<(Component, Duration), String>>;

/// A compile waiting for its lane, ordered by size (then arrival).
struct Job {
    size: usize,
    seq: u64,
    bytes: Arc<Vec<u8>>,
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

/// The compile lanes and the shared artifacts.
pub struct Compiler {
    engine: Engine,
    lanes: [Arc<Lane>; 2],
    artifacts: Mutex<HashMap<String, Weak<Artifact>>>,
    seq: AtomicU64,
    /// Compiles performed (wasmtime's disk cache hits included; shared artifacts not).
    compiles: Arc<AtomicU64>,
}

impl Compiler {
    pub fn new(engine: Engine) -> Result<Self> {
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
        Ok(Self {
            engine,
            lanes: [
                Arc::new(Lane::new("small", cores, cores, 0)?),
                Arc::new(Lane::new("big", cores, cores / 2, BIG_NICE)?),
            ],
            artifacts: Mutex::new(HashMap::new()),
            seq: AtomicU64::new(0),
            compiles: Arc::new(AtomicU64::new(0)),
        })
    }

    /// Compiles performed so far.
    pub fn compiles(&self) -> u64 {
        self.compiles.load(Ordering::Relaxed)
    }

    /// The artifact of `bytes`, compiled in its lane unless identical bytes were compiled (or
    /// are being compiled) already. Returns it with the component and the compile's duration.
    pub async fn compile(&self, bytes: Vec<u8>) -> Result<(Arc<Artifact>, Component, Duration)> {
        let bytes = Arc::new(bytes);
        let hashed = bytes.clone();
        // Hashing 20 MiB is no work for an async thread either.
        let sha = tokio::task::spawn_blocking(move || super::sha256_hex(&hashed))
            .await
            .map_err(|e| RuntimeError::Compile(e.to_string()))?;
        let artifact = self.artifact(sha);
        let result = artifact
            .compiled
            .get_or_init(|| async {
                let (reply, rx) = tokio::sync::oneshot::channel();
                self.submit(bytes, reply);
                rx.await
                    .unwrap_or_else(|_| Err("the compile thread went away".into()))
            })
            .await
            .clone();
        match result {
            Ok((component, took)) => Ok((artifact, component, took)),
            Err(e) => Err(RuntimeError::Compile(e)),
        }
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
            compiled: tokio::sync::OnceCell::new(),
        });
        map.insert(sha, Arc::downgrade(&a));
        a
    }

    fn submit(&self, bytes: Arc<Vec<u8>>, reply: Reply) {
        let lane = &self.lanes[usize::from(bytes.len() >= SMALL_BYTES)];
        let job = Job {
            size: bytes.len(),
            seq: self.seq.fetch_add(1, Ordering::Relaxed),
            bytes,
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
            let (lane, engine, compiles) =
                (lane.clone(), self.engine.clone(), self.compiles.clone());
            let spawned = std::thread::Builder::new()
                .name(format!("wasm-compile-{}", lane.name))
                .spawn({
                    let lane = lane.clone();
                    move || drain(&lane, &engine, &compiles)
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

/// A lane's compile thread: the smallest waiting compile first, until none is left.
fn drain(lane: &Lane, engine: &Engine, compiles: &AtomicU64) {
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
        if job.reply.is_closed() {
            continue; // nobody waits for it any more (the load was cancelled)
        }
        let started = Instant::now();
        let r = lane
            .pool
            .install(|| Component::from_binary(engine, &job.bytes))
            .map(|c| (c, started.elapsed()))
            .map_err(|e| format!("{e:#}"));
        compiles.fetch_add(1, Ordering::Relaxed);
        tracing::debug!(
            lane = lane.name,
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

    fn compiler() -> Compiler {
        let mut config = wasmtime::Config::new();
        config.wasm_component_model(true);
        Compiler::new(Engine::new(&config).unwrap()).unwrap()
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
        let c = compiler();
        let e = c.compile(b"not wasm".to_vec()).await.err().unwrap();
        assert!(matches!(e, RuntimeError::Compile(_)), "{e}");
    }

    #[test]
    fn jobs_are_taken_smallest_first() {
        let job = |size, seq| {
            let (reply, _rx) = tokio::sync::oneshot::channel();
            Reverse(Job {
                size,
                seq,
                bytes: Arc::new(Vec::new()),
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
