//! A store on the local disk, whatever the engine ([`super::sled_store`] or [`super::wal`]):
//! every object in memory ([`Index`]) and one writer thread that owns every mutation.
//!
//! The writer takes whatever requests are queued (up to [`MAX_BATCH`]), checks each
//! precondition against the latest state (including earlier writes of the same batch), assigns
//! consecutive revisions, hands the batch to the engine's [`Disk::commit`] (atomic and durable
//! when it returns) and only then updates the in-memory index, publishes the events in revision
//! order and acknowledges. Concurrent writers therefore share one flush (group commit); while
//! flushes carry several writes each, the writer waits [`LINGER`] for more before each flush.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::thread::JoinHandle;
use std::time::Duration;

use tokio::sync::{mpsc, oneshot, watch};

use super::index::{HistoryLimit, Index};
use super::{
    BoxFuture, Event, Precondition, Prepared, Result, Snapshot, Store, StoreError, StoredObject,
    WatchFrom, WatchStart, WriteOp,
};
use crate::model::{EventType, ObjectKey};

/// Most writes committed by one flush.
pub const MAX_BATCH: usize = 1024;
/// How long the writer waits for more writes before a flush, once the previous flush carried
/// at least [`LINGER_AFTER`] writes (and only with fsync on). Measured in `docs/benchmarks.md`
/// ("a group commit that waits"): at 64 connections the batches grow from ~5 to ~9 writes and
/// the server's CPU per create drops 2-3 µs; at 8 connections (batches of ~2) nothing changes.
const LINGER: Duration = Duration::from_micros(100);
const LINGER_AFTER: usize = 4;
const QUEUE: usize = 16 * 1024;

#[derive(Debug, Clone)]
pub struct StoreOptions {
    pub dir: PathBuf,
    /// Events kept in memory for watch resume and past-revision reads.
    pub watch_history: usize,
    /// Bytes of old object versions (serialized) that history may keep alive; the oldest events
    /// are dropped beyond this, as beyond `watch_history` events.
    pub watch_history_bytes: usize,
    /// `fdatasync` the engine's log before acknowledging (power-loss durability).
    pub fsync: bool,
    /// Largest object stored, in bytes of its JSON ([`StoreError::TooLarge`] beyond).
    pub max_object_bytes: usize,
    /// The wal engine: log bytes after which a snapshot is written (or the last snapshot's
    /// size, if larger).
    pub snapshot_after_bytes: u64,
}

impl StoreOptions {
    /// The defaults `turtles serve` uses, in `dir`.
    pub fn in_dir(dir: PathBuf) -> Self {
        Self {
            dir,
            watch_history: 200_000,
            watch_history_bytes: 256 << 20,
            fsync: true,
            max_object_bytes: crate::model::limits::DEFAULT_MAX_OBJECT_BYTES,
            snapshot_after_bytes: super::wal::SNAPSHOT_AFTER_BYTES,
        }
    }

    /// Where objects that cannot be read at start-up are copied: `quarantine/` beside the store.
    pub fn quarantine_dir(&self) -> PathBuf {
        self.dir.with_file_name("quarantine")
    }
}

/// How often the writer retries a store whose disk failed a write.
const RECOVERY_INTERVAL: Duration = Duration::from_millis(250);
/// Free space the store's filesystem needs before the disk is tried again after a failed write
/// (sled, reopened on a full disk, can leave a torn file behind that a later start cannot read).
const RECOVERY_FREE_BYTES: u64 = 16 * 1024 * 1024;

/// Bytes an unprivileged process may still write on the filesystem of `dir`.
fn free_bytes(dir: &Path) -> std::io::Result<u64> {
    use std::os::unix::ffi::OsStrExt;
    let path = std::ffi::CString::new(dir.as_os_str().as_bytes())
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))?;
    // SAFETY: `path` is a valid NUL-terminated string and `st` a properly sized out-parameter.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statvfs(path.as_ptr(), &mut st) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    #[allow(clippy::useless_conversion)] // u64 on 64-bit Linux, not everywhere
    Ok(u64::from(st.f_bavail).saturating_mul(u64::from(st.f_frsize)))
}

/// One change of a committed batch, as the disk stores it: the object's key in
/// [`object_key`]'s form and its JSON, or `None` for a delete.
pub struct Change {
    pub key: Vec<u8>,
    pub json: Option<bytes::Bytes>,
}

/// What a local store keeps on disk: the only part that differs between engines. The writer
/// thread owns it; every call comes from that one thread.
pub trait Disk: Send + Sized + 'static {
    /// Open (or create) the disk in `opts.dir`, hand every stored object to `each` (its raw
    /// key and JSON) and say the revision it holds.
    fn open(opts: &StoreOptions, each: &mut dyn FnMut(&[u8], bytes::Bytes)) -> Result<(Self, u64)>;
    /// Make `changes` and the revision `rv` durable, all or nothing.
    fn commit(&mut self, changes: &[Change], rv: u64) -> Result<()>;
    /// After a failed commit: make the disk take writes again and say the revision it holds
    /// (the failed batch's last revision if it landed after all, the one before it if not).
    fn recover(&mut self) -> Result<u64>;
    /// An object handed to `open`'s callback could not be read: it is set aside, not served,
    /// and the engine keeps it on disk as it is.
    fn set_aside(&mut self, _key: &[u8], _raw: bytes::Bytes) {}
    /// Whether the disk would like a snapshot of every object (see [`Disk::snapshot`]).
    fn wants_snapshot(&self) -> bool {
        false
    }
    /// Every object at revision `rv` (an O(1) clone of the index's maps), for a disk that
    /// compacts its log into snapshots.
    fn snapshot(&mut self, _rv: u64, _objects: Vec<(String, ObjectMap)>) {}
    /// Everything acknowledged is on disk: the store is shutting down.
    fn close(&mut self) -> Result<()>;
    /// The engine's own metrics, rendered from any thread (taken once, at open).
    fn metrics(&self) -> Option<Arc<dyn DiskMetrics>> {
        None
    }
}

/// An engine's metrics in the Prometheus text format, beside the store's own.
pub trait DiskMetrics: Send + Sync {
    fn render(&self, out: &mut String);
}

/// One resource's objects by [`ObjectKey::item_key`], as the index keeps them.
pub type ObjectMap = imbl::OrdMap<String, Arc<StoredObject>>;

/// How long a stop waits for the writer thread to finish what was queued and close the engine.
const WRITER_STOP_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

/// A store on the local disk: every object in memory ([`Index`]), one writer thread that
/// commits batches to the disk `D` (group commit), then publishes.
pub struct LocalStore<D: Disk> {
    shared: Arc<Shared>,
    /// [`StoreOptions::max_object_bytes`].
    max_object_bytes: usize,
    disk_metrics: Option<Arc<dyn DiskMetrics>>,
    tx: Mutex<Option<mpsc::Sender<Request>>>,
    writer: Mutex<Option<JoinHandle<()>>>,
    _disk: std::marker::PhantomData<fn() -> D>,
}

/// The key a disk stores an object under: `o\0<resource>\0<namespace>\0<name>`.
pub(super) fn object_key(key: &ObjectKey) -> Vec<u8> {
    let mut k = Vec::with_capacity(4 + key.resource.len() + key.namespace.len() + key.name.len());
    k.extend_from_slice(b"o\0");
    k.extend_from_slice(key.resource.as_bytes());
    k.push(0);
    k.extend_from_slice(key.namespace.as_bytes());
    k.push(0);
    k.extend_from_slice(key.name.as_bytes());
    k
}

pub(super) fn parse_object_key(raw: &[u8]) -> Option<ObjectKey> {
    let rest = raw.strip_prefix(b"o\0")?;
    let s = std::str::from_utf8(rest).ok()?;
    let mut parts = s.splitn(3, '\0');
    Some(ObjectKey::new(parts.next()?, parts.next()?, parts.next()?))
}

struct Request {
    op: WriteOp,
    /// A put's object, serialized by the writing task ([`Prepared`]); taken when planned.
    prepared: Option<Prepared>,
    reply: oneshot::Sender<Result<Arc<StoredObject>>>,
}

struct Shared {
    index: RwLock<Index>,
    rv_tx: watch::Sender<u64>,
    /// Why writes are refused right now (`None` while the disk works).
    unavailable: Mutex<Option<String>>,
    quarantined: usize,
    /// Durable commits (one flush each) and the writes they carried: the batch size is their
    /// ratio (group commit grows it with concurrency).
    commits: AtomicU64,
    committed_writes: AtomicU64,
    /// From taking a batch off the queue to its acknowledgement (plan, the engine's commit,
    /// index, events).
    commit_time: crate::metrics::Histogram,
}

impl Shared {
    fn read(&self) -> RwLockReadGuard<'_, Index> {
        self.index.read().unwrap_or_else(|p| p.into_inner())
    }
    fn write(&self) -> RwLockWriteGuard<'_, Index> {
        self.index.write().unwrap_or_else(|p| p.into_inner())
    }
    fn set_unavailable(&self, why: Option<String>) {
        *self.unavailable.lock().unwrap_or_else(|p| p.into_inner()) = why;
    }
    fn unavailable(&self) -> Option<String> {
        self.unavailable
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }
}

/// Decode one stored object (its head only: see [`StoredObject::head`]), or say why it cannot
/// be served.
fn load_object(
    raw_key: &[u8],
    raw: bytes::Bytes,
) -> std::result::Result<(ObjectKey, StoredObject), String> {
    let key = parse_object_key(raw_key).ok_or("the key is not resource\\0namespace\\0name")?;
    let obj = StoredObject::from_json(raw).map_err(|e| match e {
        StoreError::Decode(e) => e.to_string(),
        e => e.to_string(),
    })?;
    Ok((key, obj))
}

/// Copy an unreadable object to `dir` (named after its key, made safe as a file name) so the
/// operator can inspect or restore it; it stays in the store on disk too, unserved
/// ([`Disk::set_aside`]).
fn quarantine(dir: &Path, raw_key: &[u8], raw: &[u8], why: &str) {
    let name: String = String::from_utf8_lossy(raw_key.strip_prefix(b"o\0").unwrap_or(raw_key))
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_') {
                c
            } else {
                '_'
            }
        })
        .collect();
    let path = dir.join(format!("{name}.json"));
    let saved = std::fs::create_dir_all(dir).and_then(|_| std::fs::write(&path, raw));
    tracing::error!(
        key = %String::from_utf8_lossy(raw_key).replace('\0', "/"),
        error = why,
        copy = %path.display(),
        saved = saved.is_ok(),
        "stored object cannot be read: set aside, not served"
    );
}

impl<D: Disk> LocalStore<D> {
    /// Open (or create) the store in `opts.dir` and load every object into memory. An object that
    /// cannot be read is set aside (see [`quarantine`]); the rest is served.
    pub fn open(opts: StoreOptions) -> Result<Self> {
        let mut objects = Vec::new();
        let mut unreadable = Vec::new();
        let (mut disk, rv) = D::open(&opts, &mut |k, v| match load_object(k, v.clone()) {
            Ok(loaded) => objects.push(loaded),
            Err(why) => {
                quarantine(&opts.quarantine_dir(), k, &v, &why);
                unreadable.push((k.to_vec(), v));
            }
        })?;
        let quarantined = unreadable.len();
        for (key, raw) in unreadable {
            disk.set_aside(&key, raw);
        }
        let disk_metrics = disk.metrics();
        let mut index = Index::new(
            rv,
            HistoryLimit {
                events: opts.watch_history,
                bytes: opts.watch_history_bytes,
            },
        );
        for (key, obj) in objects {
            index.load(&key, Arc::new(obj));
        }
        let (rv_tx, _) = watch::channel(rv);
        let shared = Arc::new(Shared {
            index: RwLock::new(index),
            rv_tx,
            unavailable: Mutex::new(None),
            quarantined,
            commits: AtomicU64::new(0),
            committed_writes: AtomicU64::new(0),
            commit_time: crate::metrics::Histogram::default(),
        });
        let (tx, rx) = mpsc::channel(QUEUE);
        let writer = {
            let shared = shared.clone();
            let dir = opts.dir.clone();
            let limit = opts.max_object_bytes;
            // Without fsync a commit is cheap: no reason to wait for company.
            let linger = opts.fsync;
            std::thread::Builder::new()
                .name("store-writer".into())
                .spawn(move || writer_loop(shared, disk, dir, limit, linger, rx))?
        };
        Ok(Self {
            shared,
            max_object_bytes: opts.max_object_bytes,
            disk_metrics,
            tx: Mutex::new(Some(tx)),
            writer: Mutex::new(Some(writer)),
            _disk: std::marker::PhantomData,
        })
    }
}

/// Make the disk take writes again after a failed commit. `failed` holds the events of the batch
/// that failed: a disk commits a batch atomically, so after recovery it is either wholly on disk
/// or not at all.
fn reopen<D: Disk>(
    disk: &mut D,
    dir: &Path,
    shared: &Shared,
    failed: &mut Vec<Event>,
) -> Result<()> {
    let free = free_bytes(dir)?;
    if free < RECOVERY_FREE_BYTES {
        return Err(StoreError::Unavailable(format!(
            "{free} bytes free on the store's filesystem, waiting for {RECOVERY_FREE_BYTES}"
        )));
    }
    let disk_rv = disk.recover()?;
    let memory_rv = shared.read().rv;
    if disk_rv != memory_rv {
        let landed = failed.last().map(|e| e.rv) == Some(disk_rv);
        if !landed {
            return Err(StoreError::Unavailable(format!(
                "the store on disk is at revision {disk_rv}, the server at {memory_rv}; restart the server"
            )));
        }
        // The failed batch did land: its writers were told it failed, as a write that times
        // out may still have happened; readers and watchers now see it, in order.
        let mut index = shared.write();
        for ev in failed.drain(..) {
            index.apply(ev);
        }
        let rv = index.rv;
        drop(index);
        shared.rv_tx.send_replace(rv);
    }
    failed.clear();
    Ok(())
}

fn writer_loop<D: Disk>(
    shared: Arc<Shared>,
    mut disk: D,
    dir: PathBuf,
    limit: usize,
    linger: bool,
    mut rx: mpsc::Receiver<Request>,
) {
    let mut batch: Vec<Request> = Vec::with_capacity(MAX_BATCH);
    // The events of a batch whose write failed, until the disk is back.
    let mut failed: Vec<Event> = Vec::new();
    // The writer's sleeps end on time (the default timer slack is 50 µs, half the linger).
    // SAFETY: PR_SET_TIMERSLACK only sets this thread's own timer slack; no memory is passed.
    unsafe {
        libc::prctl(libc::PR_SET_TIMERSLACK, 1_000u64, 0u64, 0u64, 0u64);
    }
    // Writes the last commit carried (refused ones do not count).
    let mut last_batch = 0usize;
    loop {
        if let Some(why) = shared.unavailable() {
            // Refuse what is queued, then try the disk again.
            loop {
                match rx.try_recv() {
                    Ok(r) => {
                        let _ = r.reply.send(Err(StoreError::Unavailable(why.clone())));
                    }
                    Err(mpsc::error::TryRecvError::Empty) => break,
                    Err(mpsc::error::TryRecvError::Disconnected) => {
                        if let Err(e) = disk.close() {
                            tracing::error!(error = %e, "the store could not be closed cleanly");
                        }
                        return;
                    }
                }
            }
            match reopen(&mut disk, &dir, &shared, &mut failed) {
                Ok(()) => {
                    tracing::warn!("the disk accepts writes again: writes resume");
                    shared.set_unavailable(None);
                }
                Err(e) => {
                    tracing::debug!(error = %e, "the disk still fails");
                    // Clients are told why now (the first failure may be over: a full disk
                    // with room again, an engine that cannot be reopened).
                    let now = e.to_string();
                    if shared.unavailable().as_deref() != Some(now.as_str()) {
                        tracing::warn!(error = %now, "the store cannot take writes yet");
                        shared.set_unavailable(Some(now));
                    }
                    std::thread::sleep(RECOVERY_INTERVAL);
                }
            }
            continue;
        }
        let Some(first) = rx.blocking_recv() else {
            break;
        };
        batch.push(first);
        take_queued(&mut rx, &mut batch);
        // Under concurrency (the last commit carried several writes) more writes are on their
        // way: wait a little for them, so one flush carries more (Postgres's `commit_delay`
        // with `commit_siblings`). A lone writer never waits.
        if linger && last_batch >= LINGER_AFTER && batch.len() < MAX_BATCH {
            std::thread::sleep(LINGER);
            take_queued(&mut rx, &mut batch);
        }
        match commit_batch(&shared, &mut disk, limit, &mut batch, &mut failed) {
            Ok(committed) => last_batch = committed,
            Err(e) => {
                // The engine or the disk failed (a full disk, say): nothing of this batch was
                // acknowledged or published. Refuse writes until the engine proves the disk works
                // again (see `reopen`).
                let why = e.to_string();
                tracing::error!(error = %why, "store write failed; refusing writes until the disk recovers");
                shared.set_unavailable(Some(why.clone()));
                for r in batch.drain(..) {
                    let _ = r.reply.send(Err(StoreError::Unavailable(why.clone())));
                }
                last_batch = 0;
            }
        }
    }
    if let Err(e) = disk.close() {
        tracing::error!(error = %e, "final flush failed");
    }
}

/// Add what is queued to `batch`, up to [`MAX_BATCH`], without waiting.
fn take_queued(rx: &mut mpsc::Receiver<Request>, batch: &mut Vec<Request>) {
    while batch.len() < MAX_BATCH {
        match rx.try_recv() {
            Ok(r) => batch.push(r),
            Err(_) => break,
        }
    }
}

type Outcome = Result<(Arc<StoredObject>, Option<Event>)>;

/// Plan, commit, publish and answer one batch; the number of writes it committed.
fn commit_batch<D: Disk>(
    shared: &Shared,
    disk: &mut D,
    limit: usize,
    batch: &mut Vec<Request>,
    failed: &mut Vec<Event>,
) -> Result<usize> {
    let started = std::time::Instant::now();
    let mut overlay: HashMap<ObjectKey, Option<Arc<StoredObject>>> = HashMap::new();
    let mut outcomes: Vec<Outcome> = Vec::with_capacity(batch.len());
    let mut changes: Vec<Change> = Vec::with_capacity(batch.len());
    let mut rv = {
        let index = shared.read();
        let mut rv = index.rv;
        for req in batch.iter_mut() {
            let key = req.op.key();
            let current = match overlay.get(key) {
                Some(c) => c.clone(),
                None => index.get(key),
            };
            let outcome = plan(&req.op, req.prepared.take(), current, rv + 1, limit);
            if let Ok((obj, Some(ev))) = &outcome {
                rv += 1;
                match ev.kind {
                    EventType::Deleted => {
                        changes.push(Change {
                            key: object_key(key),
                            json: None,
                        });
                        overlay.insert(key.clone(), None);
                    }
                    _ => {
                        changes.push(Change {
                            key: object_key(key),
                            json: Some(obj.json.clone()),
                        });
                        overlay.insert(key.clone(), Some(obj.clone()));
                    }
                }
            }
            outcomes.push(outcome);
        }
        rv
    };
    if !changes.is_empty() {
        if let Err(e) = disk.commit(&changes, rv) {
            // Keep the batch's events: after recovery it is either on disk or not (atomic).
            failed.clear();
            failed.extend(
                outcomes
                    .iter_mut()
                    .flatten()
                    .filter_map(|(_, ev)| ev.take()),
            );
            return Err(e);
        }
        let mut index = shared.write();
        for (_, ev) in outcomes.iter_mut().flatten() {
            if let Some(ev) = ev.take() {
                index.apply(ev);
            }
        }
        rv = index.rv;
        drop(index);
        shared.rv_tx.send_replace(rv);
        let writes = outcomes.iter().filter(|o| o.is_ok()).count();
        shared.commits.fetch_add(1, Ordering::Relaxed);
        shared
            .committed_writes
            .fetch_add(writes as u64, Ordering::Relaxed);
        shared.commit_time.observe(started.elapsed());
        if disk.wants_snapshot() {
            let objects = shared.read().all_objects();
            disk.snapshot(rv, objects);
        }
    }
    for (req, outcome) in batch.drain(..).zip(outcomes) {
        let _ = req.reply.send(outcome.map(|(obj, _)| obj));
    }
    Ok(changes.len())
}

/// Decide one write against the current state: the stored object and its event, or why not.
fn plan(
    op: &WriteOp,
    prepared: Option<Prepared>,
    current: Option<Arc<StoredObject>>,
    next_rv: u64,
    limit: usize,
) -> Outcome {
    let (key, precondition) = match op {
        WriteOp::Put {
            key, precondition, ..
        }
        | WriteOp::Delete {
            key, precondition, ..
        } => (key, *precondition),
    };
    match (precondition, &current) {
        (Precondition::MustNotExist, Some(_)) => return Err(StoreError::AlreadyExists),
        (Precondition::Exists | Precondition::ResourceVersion(_), None) => {
            return Err(StoreError::NotFound)
        }
        (Precondition::ResourceVersion(want), Some(cur)) if cur.rv != want => {
            return Err(StoreError::Conflict { current: cur.rv })
        }
        _ => {}
    }
    match op {
        WriteOp::Put { .. } => {
            let prepared = prepared.ok_or(StoreError::Closed)?;
            let obj = Arc::new(prepared.stored(next_rv)?);
            if obj.json.len() > limit {
                return Err(StoreError::TooLarge {
                    size: obj.json.len(),
                    limit,
                });
            }
            let kind = if current.is_some() {
                EventType::Modified
            } else {
                EventType::Added
            };
            let ev = Event {
                rv: next_rv,
                kind,
                key: key.clone(),
                object: obj.clone(),
                prev: current,
            };
            Ok((obj, Some(ev)))
        }
        WriteOp::Delete { .. } => {
            let Some(cur) = current else {
                return Err(StoreError::NotFound);
            };
            let obj = Arc::new(StoredObject::new(next_rv, cur.parse().into_owned())?);
            let ev = Event {
                rv: next_rv,
                kind: EventType::Deleted,
                key: key.clone(),
                object: obj.clone(),
                prev: Some(cur),
            };
            Ok((obj, Some(ev)))
        }
    }
}

impl<D: Disk> Store for LocalStore<D> {
    fn max_object_bytes(&self) -> usize {
        self.max_object_bytes
    }

    fn revision(&self) -> u64 {
        self.shared.read().rv
    }

    fn get(&self, key: &ObjectKey) -> Option<Arc<StoredObject>> {
        self.shared.read().get(key)
    }

    fn list(&self, resource: &str, at: Option<u64>) -> Result<Snapshot> {
        self.shared.read().snapshot(resource, at)
    }

    // A put's object is checked and serialized on the writing task (`Store::write`): the writer
    // thread only splices its revision in.
    fn write_prepared(
        &self,
        op: WriteOp,
        prepared: Option<Prepared>,
    ) -> BoxFuture<Result<Arc<StoredObject>>> {
        let tx = self.tx.lock().ok().and_then(|g| g.clone());
        Box::pin(async move {
            let tx = tx.ok_or(StoreError::Closed)?;
            let (reply, rx) = oneshot::channel();
            tx.send(Request {
                op,
                prepared,
                reply,
            })
            .await
            .map_err(|_| StoreError::Closed)?;
            rx.await.map_err(|_| StoreError::Closed)?
        })
    }

    fn watch(&self, resource: &str, from: WatchFrom) -> Result<WatchStart> {
        self.shared.write().watch(resource, from)
    }

    fn watch_in(
        &self,
        resource: &str,
        namespace: Option<&str>,
        from: WatchFrom,
    ) -> Result<WatchStart> {
        self.shared.write().watch_in(resource, namespace, from)
    }

    fn wait_for_revision(&self, rv: u64, timeout: Duration) -> BoxFuture<bool> {
        let mut rx = self.shared.rv_tx.subscribe();
        Box::pin(async move {
            tokio::time::timeout(timeout, rx.wait_for(|cur| *cur >= rv))
                .await
                .is_ok_and(|r| r.is_ok())
        })
    }

    fn shutdown(&self) -> Result<()> {
        // Dropping the sender ends the writer loop once it has committed what was queued.
        if let Ok(mut tx) = self.tx.lock() {
            tx.take();
        }
        let handle = self.writer.lock().ok().and_then(|mut h| h.take());
        if let Some(h) = handle {
            // Bounded: an engine stuck in its own flush (sled after a full disk) must not keep
            // the process from stopping. What was acknowledged is on disk already.
            let deadline = std::time::Instant::now() + WRITER_STOP_TIMEOUT;
            while !h.is_finished() && std::time::Instant::now() < deadline {
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            if !h.is_finished() {
                tracing::error!(
                    "the store's writer did not stop within {}s: stopping without it (every acknowledged write is on disk)",
                    WRITER_STOP_TIMEOUT.as_secs()
                );
            } else if h.join().is_err() {
                tracing::error!("store writer thread panicked");
            }
        }
        Ok(())
    }

    fn render_metrics(&self, out: &mut String) {
        use std::fmt::Write;
        let s = &self.shared;
        let _ = write!(
            out,
            "# HELP turtles_store_commits_total Durable commits of the store (one flush and fsync each).\n# TYPE turtles_store_commits_total counter\nturtles_store_commits_total {}\n# HELP turtles_store_committed_writes_total Writes those commits carried (group commit: several per flush under concurrency).\n# TYPE turtles_store_committed_writes_total counter\nturtles_store_committed_writes_total {}\n# HELP turtles_store_commit_duration_seconds From a batch of writes taken off the queue to its acknowledgement.\n# TYPE turtles_store_commit_duration_seconds histogram\n",
            s.commits.load(Ordering::Relaxed),
            s.committed_writes.load(Ordering::Relaxed),
        );
        s.commit_time
            .render(out, "turtles_store_commit_duration_seconds", "");
        if let Some(m) = &self.disk_metrics {
            m.render(out);
        }
    }

    fn health(&self) -> super::Health {
        super::Health {
            unavailable: self.shared.unavailable(),
            quarantined: self.shared.quarantined,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn temp_dir(tag: &str) -> PathBuf {
        crate::store::testing::temp_dir(&format!("store-{tag}"))
    }

    fn opts(dir: &Path) -> StoreOptions {
        StoreOptions {
            dir: dir.to_path_buf(),
            watch_history: 100,
            watch_history_bytes: 1 << 20,
            fsync: true,
            max_object_bytes: crate::model::limits::DEFAULT_MAX_OBJECT_BYTES,
            snapshot_after_bytes: crate::store::wal::SNAPSHOT_AFTER_BYTES,
        }
    }

    fn put(name: &str, data: &str, precondition: Precondition) -> WriteOp {
        WriteOp::Put {
            key: ObjectKey::new("configmaps", "default", name),
            value: json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "default"}, "data": {"k": data}}),
            precondition,
        }
    }

    async fn preconditions_revisions_and_restart<D: Disk>() {
        let dir = temp_dir("basic");
        let key = ObjectKey::new("configmaps", "default", "a");
        {
            let store = LocalStore::<D>::open(opts(&dir)).unwrap();
            let a = store
                .write(put("a", "1", Precondition::MustNotExist))
                .await
                .unwrap();
            assert_eq!(a.rv, 1);
            assert!(matches!(
                store.write(put("a", "x", Precondition::MustNotExist)).await,
                Err(StoreError::AlreadyExists)
            ));
            assert!(matches!(
                store
                    .write(put("a", "x", Precondition::ResourceVersion(7)))
                    .await,
                Err(StoreError::Conflict { current: 1 })
            ));
            let a2 = store
                .write(put("a", "2", Precondition::ResourceVersion(1)))
                .await
                .unwrap();
            assert_eq!(a2.rv, 2);
            assert_eq!(a2.value()["metadata"]["resourceVersion"], "2");
            store
                .write(put("b", "1", Precondition::MustNotExist))
                .await
                .unwrap();
            let del = store
                .write(WriteOp::Delete {
                    key: ObjectKey::new("configmaps", "default", "b"),
                    precondition: Precondition::Exists,
                })
                .await
                .unwrap();
            assert_eq!(del.rv, 4);
            assert_eq!(store.list("configmaps", None).unwrap().items.len(), 1);
            assert_eq!(store.list("configmaps", Some(3)).unwrap().items.len(), 2);
            store.shutdown().unwrap();
        }
        let store = LocalStore::<D>::open(opts(&dir)).unwrap();
        assert_eq!(
            store.revision(),
            4,
            "revision survives restart, deletes included"
        );
        assert_eq!(store.get(&key).unwrap().value()["data"]["k"], "2");
        let next = store
            .write(put("c", "1", Precondition::MustNotExist))
            .await
            .unwrap();
        assert_eq!(next.rv, 5);
        store.shutdown().unwrap();
        let _ = std::fs::remove_dir_all(&dir);
    }

    async fn a_data_dir_reopens_at_once_after_shutdown_and_refuses_a_second_store<D: Disk>() {
        let dir = temp_dir("reopen");
        // sled's background threads let go of the lock a moment after shutdown: reopening
        // straight away must wait for them, not fail.
        for i in 0..20u64 {
            let store = LocalStore::<D>::open(opts(&dir)).unwrap();
            assert_eq!(store.revision(), i);
            store
                .write(put(&format!("o{i}"), "1", Precondition::MustNotExist))
                .await
                .unwrap();
            store.shutdown().unwrap();
        }
        let held = LocalStore::<D>::open(opts(&dir)).unwrap();
        let Err(err) = LocalStore::<D>::open(opts(&dir)) else {
            panic!("a second store opened a data dir that is in use");
        };
        assert!(
            matches!(&err, StoreError::Unavailable(m) if m.contains("is in use")),
            "{err}"
        );
        held.shutdown().unwrap();
        let _ = std::fs::remove_dir_all(&dir);
    }

    async fn concurrent_writes_get_distinct_ordered_revisions<D: Disk>() {
        let dir = temp_dir("concurrent");
        let store = Arc::new(LocalStore::<D>::open(opts(&dir)).unwrap());
        let mut w = store.watch("configmaps", WatchFrom::After(0)).unwrap();
        let mut tasks = Vec::new();
        for i in 0..200 {
            let store = store.clone();
            tasks.push(tokio::spawn(async move {
                store
                    .write(put(&format!("o{i}"), "v", Precondition::MustNotExist))
                    .await
                    .unwrap()
                    .rv
            }));
        }
        let mut rvs = Vec::new();
        for t in tasks {
            rvs.push(t.await.unwrap());
        }
        rvs.sort_unstable();
        assert_eq!(rvs, (1..=200).collect::<Vec<_>>());
        let mut seen = Vec::new();
        for _ in 0..200 {
            seen.push(w.live.recv().await.unwrap().rv);
        }
        assert_eq!(
            seen,
            (1..=200).collect::<Vec<_>>(),
            "events arrive in revision order"
        );
        store.shutdown().unwrap();
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// A create refused because the key is taken hands its object back; one that succeeds
    /// stores it as `write` would.
    async fn a_refused_create_hands_the_object_back<D: Disk>() {
        let dir = temp_dir("create");
        let store = LocalStore::<D>::open(opts(&dir)).unwrap();
        let key = ObjectKey::new("configmaps", "default", "a");
        let value = |data: &str| json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "namespace": "default"}, "data": {"k": data}});
        let a = store.create(key.clone(), value("1")).await.unwrap();
        assert_eq!(a.rv, 1);
        assert_eq!(a.value()["data"]["k"], "1");
        let Err((StoreError::AlreadyExists, back)) = store.create(key.clone(), value("2")).await
        else {
            panic!("a second create of the key must be refused");
        };
        assert_eq!(back["data"]["k"], "2", "{back}");
        assert_eq!(back["metadata"]["name"], "a", "{back}");
        assert_eq!(store.get(&key).unwrap().value()["data"]["k"], "1");
        assert_eq!(store.revision(), 1);
        store.shutdown().unwrap();
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// Each test above, on each engine.
    macro_rules! on_each_engine {
        ($($test:ident),*) => {
            mod sled {
                $(#[tokio::test]
                async fn $test() {
                    super::$test::<crate::store::sled_store::SledDisk>().await
                })*
            }
            mod wal {
                $(#[tokio::test]
                async fn $test() {
                    super::$test::<crate::store::wal::WalDisk>().await
                })*
            }
        };
    }

    on_each_engine!(
        preconditions_revisions_and_restart,
        a_data_dir_reopens_at_once_after_shutdown_and_refuses_a_second_store,
        concurrent_writes_get_distinct_ordered_revisions,
        a_refused_create_hands_the_object_back
    );
}
