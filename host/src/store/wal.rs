//! The wal engine (`turtles serve --store wal`): a write-ahead log of our own, and snapshots.
//!
//! Every object already lives in memory ([`super::index::Index`]); the disk only has to make it
//! durable and give it back at start. So a commit is one `write` of the batch at the end of the
//! log and one `fdatasync`, with no tree, page cache or IO thread pool in between. The segment
//! grows in zeroed chunks ahead of the frames ([`GROW_BYTES`]), so that the `fdatasync` of a
//! commit writes the data and not the file's size as well; a frame header of zeros is the end
//! of what was written.
//!
//! Files in the store's directory:
//! - `wal-<first revision, 16 hex digits>.log`: a segment of the log. It starts with
//!   [`SEGMENT_MAGIC`] and its first revision, then frames: `len: u32le, crc32: u32le,
//!   payload[len]`, the payload being `first revision: u64le, count: u32le` and `count` changes
//!   (`1, key` for a put with its JSON, `2, key` for a delete; every key and JSON is
//!   `len: u32le, bytes`). A change takes one revision, so a frame holds revisions
//!   `first ..= first + count - 1`. A batch is one frame unless it is very large.
//! - `snap-<revision>.snap`: every object at that revision: [`SNAPSHOT_MAGIC`], the revision,
//!   the count, `key, JSON` pairs, then the crc32 of everything before it and [`SNAPSHOT_END`].
//!   Written as `.tmp`, synced and renamed, so a snapshot under its name is whole.
//! - `wal.lock`: held with `flock` while a store has the directory open.
//! - `wal.hwm`: the high-water mark, a revision every write up to which was acknowledged
//!   ([`super::high_water`], shared with the sled engine's `sled.hwm`): `rv: u64le, crc32:
//!   u32le` of the rv, rewritten (and synced) at most once a second after a commit and at a
//!   stop, with fsync on. A log that replays to less is missing acknowledged writes (a file cut
//!   short or zeroed, a segment deleted): the store refuses to open, until `wal.hwm` is deleted.
//!
//! Once the log has grown past the larger of [`SNAPSHOT_AFTER_BYTES`] and the last snapshot,
//! the writer starts a new segment and a background thread writes a snapshot of the index at
//! that revision (persistent maps: an O(1) clone); when it is durable, the older snapshots and
//! segments are deleted.
//!
//! At start the newest whole snapshot is read and the segments after it are replayed in order.
//! The revisions must follow one another without a gap. A frame cut short or failing its crc at
//! the very end of the last segment (only zeros after it) is a write that never finished (it was
//! never acknowledged): it is cut off. Anywhere else it is damage, and the store refuses to open
//! rather than serve a history with a hole in it. Frames are synced one by one, so a crash can
//! only cut the last.
//!
//! A failed commit (a full disk, say) truncates the segment back to where the batch began, so
//! the batch is not on disk; [`Disk::recover`] truncates again and syncs before writes resume.

use std::fs::{File, OpenOptions};
use std::io::{BufReader, BufWriter, Read, Write};
use std::os::unix::fs::FileExt;
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use bytes::Bytes;

use super::high_water::{self, HighWater, Mark};
use super::local::{Change, Disk, DiskMetrics, LocalStore, ObjectMap, StoreOptions};
use super::{Result, StoreError};

/// The store on the wal engine (`turtles serve --store wal`).
pub type WalStore = LocalStore<WalDisk>;

const SEGMENT_MAGIC: &[u8; 8] = b"TRTLWAL1";
const SNAPSHOT_MAGIC: &[u8; 8] = b"TRTLSNP1";
const SNAPSHOT_END: &[u8; 8] = b"TRTLEND1";
const SEGMENT_HEADER: u64 = 16;
const FRAME_HEADER: usize = 8;
const LOCK_FILE: &str = "wal.lock";
const PUT: u8 = 1;
const DELETE: u8 = 2;
/// A frame's payload stops taking changes past this size (one batch of very large objects
/// becomes several frames; any frame cut short is never acknowledged, see the module docs).
const FRAME_TARGET: usize = 16 << 20;
/// The largest object the engine stores (a frame's lengths are 32-bit).
const MAX_OBJECT_BYTES: usize = 1 << 30;
/// A segment grows by this much at a time, zero-filled.
const GROW_BYTES: u64 = 1 << 20;
/// Log bytes after which a snapshot is written (or after the last snapshot's size, if larger),
/// by default ([`StoreOptions::snapshot_after_bytes`]).
pub const SNAPSHOT_AFTER_BYTES: u64 = 64 << 20;
/// How long after a failed snapshot the next one is tried.
const SNAPSHOT_RETRY: Duration = Duration::from_secs(30);
/// How long [`lock`] waits for the directory's lock (held by a store shutting down in this
/// process, or by another process).
const LOCK_WAIT: Duration = Duration::from_secs(5);

fn segment_name(first: u64) -> String {
    format!("wal-{first:016x}.log")
}

fn snapshot_name(rv: u64) -> String {
    format!("snap-{rv:016x}.snap")
}

/// The revision in a segment's or a snapshot's file name.
fn parse_name(name: &str, prefix: &str, suffix: &str) -> Option<u64> {
    let hex = name.strip_prefix(prefix)?.strip_suffix(suffix)?;
    // Revisions are int64 in kube's API: a larger one is not a name this engine wrote.
    (hex.len() == 16)
        .then(|| u64::from_str_radix(hex, 16).ok())
        .flatten()
        .filter(|rv| *rv <= i64::MAX as u64)
}

/// Segments and snapshots in `dir`, each sorted by revision.
struct Files {
    segments: Vec<(u64, PathBuf)>,
    snapshots: Vec<(u64, PathBuf)>,
    /// Snapshots that were being written when a host stopped.
    unfinished: Vec<PathBuf>,
}

fn list_files(dir: &Path) -> Result<Files> {
    let mut files = Files {
        segments: Vec::new(),
        snapshots: Vec::new(),
        unfinished: Vec::new(),
    };
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        if let Some(first) = parse_name(name, "wal-", ".log") {
            files.segments.push((first, entry.path()));
        } else if let Some(rv) = parse_name(name, "snap-", ".snap") {
            files.snapshots.push((rv, entry.path()));
        } else if name.starts_with("snap-") && name.ends_with(".tmp") {
            files.unfinished.push(entry.path());
        }
    }
    files.segments.sort();
    files.snapshots.sort();
    Ok(files)
}

/// Whether `dir` holds a store of the wal engine.
pub(super) fn holds_wal(dir: &Path) -> bool {
    list_files(dir).is_ok_and(|f| !f.segments.is_empty() || !f.snapshots.is_empty())
}

/// Take the directory's lock, waiting up to [`LOCK_WAIT`] for a holder to let go.
fn lock(dir: &Path) -> Result<File> {
    let file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(dir.join(LOCK_FILE))?;
    let deadline = Instant::now() + LOCK_WAIT;
    loop {
        // SAFETY: flock on a file descriptor this function owns.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0 {
            return Ok(file);
        }
        let e = std::io::Error::last_os_error();
        if e.raw_os_error() != Some(libc::EWOULDBLOCK) || Instant::now() >= deadline {
            return Err(StoreError::Unavailable(format!(
                "the data dir {} is in use by another process (or another store in this one): {e}",
                dir.display()
            )));
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Make the names in `dir` durable (a new segment, a renamed snapshot, deleted files).
fn sync_dir(dir: &Path) -> std::io::Result<()> {
    File::open(dir)?.sync_all()
}

/// The high-water mark's file (see the module docs and [`super::high_water`]).
const HWM_FILE: &str = "wal.hwm";
/// The high-water mark's file, and how the refusal at open names what lost writes.
const HIGH_WATER: Mark = Mark {
    file: HWM_FILE,
    holder: "the store's log",
    short: "the log",
    damage: "a file cut short, zeroed or deleted",
};

fn damaged(path: &Path, at: u64, why: &str) -> StoreError {
    StoreError::Unavailable(format!(
        "the store's log {} is damaged at byte {at}: {why}; refusing to start rather than serve a history with a hole in it",
        path.display()
    ))
}

/// Little-endian reads from a payload.
struct Cursor<'a> {
    buf: &'a [u8],
}

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        if self.buf.len() < n {
            return None;
        }
        let (head, rest) = self.buf.split_at(n);
        self.buf = rest;
        Some(head)
    }
    fn u8(&mut self) -> Option<u8> {
        Some(self.take(1)?[0])
    }
    fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.take(4)?.try_into().ok()?))
    }
    fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }
    fn bytes(&mut self) -> Option<&'a [u8]> {
        let n = self.u32()? as usize;
        self.take(n)
    }
}

fn put_bytes(out: &mut Vec<u8>, b: &[u8]) {
    out.extend_from_slice(&(b.len() as u32).to_le_bytes());
    out.extend_from_slice(b);
}

/// Apply one frame's payload to `objects`; its first revision and count, or `None` if it does
/// not parse.
fn apply_payload(
    payload: &[u8],
    objects: &mut std::collections::HashMap<Vec<u8>, Bytes>,
    after: u64,
) -> Option<(u64, u64)> {
    let mut c = Cursor { buf: payload };
    let first = c.u64()?;
    let count = u64::from(c.u32()?);
    if count == 0 {
        return None;
    }
    let apply = first > after;
    for _ in 0..count {
        let tag = c.u8()?;
        let key = c.bytes()?;
        match tag {
            PUT => {
                let json = c.bytes()?;
                if apply {
                    objects.insert(key.to_vec(), Bytes::copy_from_slice(json));
                }
            }
            DELETE => {
                if apply {
                    objects.remove(key);
                }
            }
            _ => return None,
        }
    }
    c.buf.is_empty().then_some((first, count))
}

/// What replaying one segment found.
enum Replayed {
    /// Every frame was whole; the segment ends at this offset.
    Whole(u64),
    /// A frame at this offset was cut short or failed its check.
    Torn { at: u64, why: String },
}

/// Whether `r` holds only zeros from here to its end (read in chunks).
fn only_zeros(r: &mut impl Read) -> std::io::Result<bool> {
    let mut chunk = vec![0u8; 64 << 10];
    loop {
        let n = r.read(&mut chunk)?;
        if n == 0 {
            return Ok(true);
        }
        if chunk[..n].iter().any(|b| *b != 0) {
            return Ok(false);
        }
    }
}

/// Replay the frames of one segment onto `objects`, skipping revisions up to `*rv` and moving
/// `*rv` on; a gap in the revisions is an error. A frame is judged by its checksum, whatever
/// its length (an earlier run may have stored larger objects than this one allows).
fn replay_segment(
    path: &Path,
    first: u64,
    objects: &mut std::collections::HashMap<Vec<u8>, Bytes>,
    rv: &mut u64,
) -> Result<Replayed> {
    let file = File::open(path)?;
    let len = file.metadata()?.len();
    let mut r = BufReader::with_capacity(1 << 20, file);
    let mut header = [0u8; SEGMENT_HEADER as usize];
    if len < SEGMENT_HEADER || r.read_exact(&mut header).is_err() {
        return Ok(Replayed::Torn {
            at: 0,
            why: "the segment's header is cut short".into(),
        });
    }
    if &header[..8] != SEGMENT_MAGIC || header[8..] != first.to_le_bytes() {
        return Err(damaged(path, 0, "not a segment of this log"));
    }
    let mut at = SEGMENT_HEADER;
    let mut payload = Vec::new();
    loop {
        if at == len {
            return Ok(Replayed::Whole(at));
        }
        let mut fh = [0u8; FRAME_HEADER];
        if len - at < FRAME_HEADER as u64 || r.read_exact(&mut fh).is_err() {
            return Ok(Replayed::Torn {
                at,
                why: "a frame header cut short".into(),
            });
        }
        let n = u32::from_le_bytes([fh[0], fh[1], fh[2], fh[3]]);
        let crc = u32::from_le_bytes([fh[4], fh[5], fh[6], fh[7]]);
        if n == 0 {
            // The end of what was written: the segment grows in zeroed chunks
            // ([`GROW_BYTES`]). Only zeros may follow.
            if crc == 0 && only_zeros(&mut r)? {
                return Ok(Replayed::Whole(at));
            }
            return Ok(Replayed::Torn {
                at,
                why: "an empty frame header before more data".into(),
            });
        }
        if len - at - (FRAME_HEADER as u64) < u64::from(n) {
            return Ok(Replayed::Torn {
                at,
                why: format!("a frame of {n} bytes does not fit"),
            });
        }
        payload.resize(n as usize, 0);
        r.read_exact(&mut payload)?;
        if crc32fast::hash(&payload) != crc {
            return Ok(Replayed::Torn {
                at,
                why: "a frame fails its checksum".into(),
            });
        }
        let parsed = apply_payload(&payload, objects, *rv)
            .and_then(|(first, count)| Some((first, first.checked_add(count - 1)?)));
        let Some((frame_first, last)) = parsed else {
            return Err(damaged(
                path,
                at,
                "a frame with a good checksum does not parse",
            ));
        };
        if last > *rv {
            if Some(frame_first) != rv.checked_add(1) {
                return Err(damaged(
                    path,
                    at,
                    &format!("revisions {frame_first}..={last} follow revision {}", *rv),
                ));
            }
            *rv = last;
        }
        at += FRAME_HEADER as u64 + u64::from(n);
    }
}

/// Whether what follows the last whole frame of the log (at `at`, after revision `rv`) can be
/// a write that never finished: nothing but one frame's bytes and zeros, and no whole frame
/// after them. A crash cuts at most the last frame (frames are synced one by one); more data
/// after a broken frame, or a good frame after it, is damage, and acknowledged writes would be
/// lost by cutting there.
fn check_torn_tail(path: &Path, at: u64, rv: u64, max_frame: u64) -> Result<()> {
    let file = File::open(path)?;
    let len = file.metadata()?.len();
    // The broken frame's own header may say how long it was meant to be (larger than this
    // run's limit allows, if an earlier run allowed larger objects).
    let mut header = [0u8; FRAME_HEADER];
    let declared = match file.read_exact_at(&mut header, at) {
        Ok(()) => u64::from(u32::from_le_bytes([
            header[0], header[1], header[2], header[3],
        ])),
        Err(_) => 0,
    };
    // A running log's file is always a whole number of chunks long (it grows by
    // [`GROW_BYTES`] before frames are written into it), and a stopped or recovered one ends at
    // a whole frame: a frame that runs past the end of a file of any other length was cut off
    // by something else than a crash (the file was truncated), and what it held had been
    // acknowledged.
    let fits = at + FRAME_HEADER as u64 + declared <= len && at + FRAME_HEADER as u64 <= len;
    if !fits && len % GROW_BYTES != 0 {
        return Err(damaged(
            path,
            at,
            &format!(
                "the file ends inside a frame, {len} bytes long, which a crash does not leave (a \
                 running log is a multiple of {GROW_BYTES} bytes): it was cut short, and the \
                 writes after revision {rv} it held are lost"
            ),
        ));
    }
    let max_frame = max_frame.max(declared.min(len - at));
    // The end of the non-zero bytes.
    let mut end = at;
    let mut pos = at;
    let mut chunk = vec![0u8; 1 << 20];
    while pos < len {
        let n = file.read_at(&mut chunk, pos)?;
        if n == 0 {
            break;
        }
        if let Some(last) = chunk[..n].iter().rposition(|b| *b != 0) {
            end = pos + last as u64 + 1;
        }
        pos += n as u64;
    }
    if end - at > max_frame.saturating_add(FRAME_HEADER as u64) {
        return Err(damaged(
            path,
            at,
            &format!(
                "a broken frame with {} more bytes after it than one frame can hold",
                end - at - max_frame.saturating_add(FRAME_HEADER as u64)
            ),
        ));
    }
    let mut window = vec![0u8; (end - at) as usize];
    file.read_exact_at(&mut window, at)?;
    let le32 = |b: &[u8]| u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
    for i in 1..window.len() {
        let Some(h) = window.get(i..i + FRAME_HEADER + 12) else {
            break;
        };
        let n = le32(h) as usize;
        let first = u64::from_le_bytes(h[8..16].try_into().unwrap_or([0; 8]));
        let count = u64::from(le32(&h[16..]));
        let plausible = n >= 12
            && i + FRAME_HEADER + n <= window.len()
            && first > rv
            && first - rv <= 1 << 32
            && (1..=1 << 24).contains(&count);
        if plausible
            && crc32fast::hash(&window[i + FRAME_HEADER..i + FRAME_HEADER + n]) == le32(&h[4..])
        {
            return Err(damaged(
                path,
                at + i as u64,
                &format!("a whole frame (revision {first}) follows a broken one"),
            ));
        }
    }
    Ok(())
}

/// A snapshot's bytes, read in order and checksummed as they go.
struct SnapshotReader {
    r: BufReader<File>,
    hasher: crc32fast::Hasher,
}

impl SnapshotReader {
    fn read(&mut self, n: usize) -> std::result::Result<Vec<u8>, String> {
        let mut b = vec![0u8; n];
        self.r
            .read_exact(&mut b)
            .map_err(|e| format!("cut short: {e}"))?;
        self.hasher.update(&b);
        Ok(b)
    }
    fn u32(&mut self) -> std::result::Result<u32, String> {
        let b = self.read(4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }
    fn u64(&mut self) -> std::result::Result<u64, String> {
        let b = self.read(8)?;
        Ok(u64::from_le_bytes(b.try_into().unwrap_or([0; 8])))
    }
}

/// A snapshot's revision and its objects (raw key, JSON).
type Snapshot = (u64, Vec<(Vec<u8>, Bytes)>);

/// Read a snapshot whole, or say why it cannot be used.
fn read_snapshot(path: &Path) -> std::result::Result<Snapshot, String> {
    let file = File::open(path).map_err(|e| e.to_string())?;
    let len = file.metadata().map_err(|e| e.to_string())?.len();
    let mut r = SnapshotReader {
        r: BufReader::with_capacity(1 << 20, file),
        hasher: crc32fast::Hasher::new(),
    };
    if r.read(8)? != SNAPSHOT_MAGIC {
        return Err("not a snapshot".into());
    }
    let rv = r.u64()?;
    let count = r.u64()?;
    let mut objects = Vec::new();
    let mut at = 24u64;
    for _ in 0..count {
        let mut field = || -> std::result::Result<Vec<u8>, String> {
            let n = r.u32()?;
            at += 4 + u64::from(n);
            if at > len {
                return Err("cut short".into());
            }
            r.read(n as usize)
        };
        let key = field()?;
        let json = field()?;
        objects.push((key, Bytes::from(json)));
    }
    let crc = r.hasher.clone().finalize();
    let tail = r.read(12)?;
    if tail[..4] != crc.to_le_bytes() || &tail[4..] != SNAPSHOT_END {
        return Err("its checksum does not match".into());
    }
    Ok((rv, objects))
}

/// Write every object at `rv` to `dir` as a snapshot; its size.
fn write_snapshot(
    dir: &Path,
    rv: u64,
    objects: &[(String, ObjectMap)],
    unreadable: &[(Vec<u8>, Bytes)],
) -> std::io::Result<u64> {
    let path = dir.join(snapshot_name(rv));
    let tmp = dir.join(format!("{}.tmp", snapshot_name(rv)));
    let written = (|| {
        let file = File::create(&tmp)?;
        let mut w = BufWriter::with_capacity(1 << 20, file);
        let mut hasher = crc32fast::Hasher::new();
        let mut size = 0u64;
        let mut put = |w: &mut BufWriter<File>, b: &[u8]| -> std::io::Result<()> {
            hasher.update(b);
            size += b.len() as u64;
            w.write_all(b)
        };
        let count: u64 =
            objects.iter().map(|(_, m)| m.len() as u64).sum::<u64>() + unreadable.len() as u64;
        put(&mut w, SNAPSHOT_MAGIC)?;
        put(&mut w, &rv.to_le_bytes())?;
        put(&mut w, &count.to_le_bytes())?;
        let mut key = Vec::new();
        for (resource, items) in objects {
            for (item, obj) in items {
                let (ns, name) = item.split_once('/').unwrap_or(("", item));
                key.clear();
                key.extend_from_slice(b"o\0");
                key.extend_from_slice(resource.as_bytes());
                key.push(0);
                key.extend_from_slice(ns.as_bytes());
                key.push(0);
                key.extend_from_slice(name.as_bytes());
                put(&mut w, &(key.len() as u32).to_le_bytes())?;
                put(&mut w, &key)?;
                put(&mut w, &(obj.json.len() as u32).to_le_bytes())?;
                put(&mut w, &obj.json)?;
            }
        }
        for (key, raw) in unreadable {
            put(&mut w, &(key.len() as u32).to_le_bytes())?;
            put(&mut w, key)?;
            put(&mut w, &(raw.len() as u32).to_le_bytes())?;
            put(&mut w, raw)?;
        }
        let crc = hasher.clone().finalize();
        w.write_all(&crc.to_le_bytes())?;
        w.write_all(SNAPSHOT_END)?;
        let file = w.into_inner().map_err(|e| e.into_error())?;
        file.sync_all()?;
        std::fs::rename(&tmp, &path)?;
        sync_dir(dir)?;
        Ok(size + 12)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

/// A snapshot at `rv` of objects given as their stored keys and bytes, in an empty `dir` (`turtles
/// convert`): what a wal store opened there holds.
pub(super) fn write_raw_snapshot(
    dir: &Path,
    rv: u64,
    objects: &[(Vec<u8>, Bytes)],
) -> std::io::Result<u64> {
    write_snapshot(dir, rv, &[], objects)
}

/// Delete the snapshots before `rv` and the segments that hold only revisions up to it: those
/// followed by a segment that starts at or before `rv + 1`. The last segment always stays.
fn delete_before(dir: &Path, rv: u64) -> std::io::Result<()> {
    let files = list_files(dir).map_err(std::io::Error::other)?;
    for (snap_rv, path) in &files.snapshots {
        if *snap_rv < rv {
            std::fs::remove_file(path)?;
        }
    }
    for pair in files.segments.windows(2) {
        let ((_, path), (next, _)) = (&pair[0], &pair[1]);
        if *next <= rv.saturating_add(1) {
            std::fs::remove_file(path)?;
        }
    }
    sync_dir(dir)
}

/// A snapshot being written in the background, and how the last one went.
#[derive(Default)]
struct Snapshots {
    in_flight: AtomicBool,
    /// The last snapshot failed: the next is due once [`SNAPSHOT_RETRY`] has passed, however
    /// little the log has grown since.
    retry: AtomicBool,
    /// Size of the last snapshot written.
    last_size: AtomicU64,
    /// Snapshots written, and those that failed.
    written: AtomicU64,
    failed: AtomicU64,
    /// Log bytes since the last snapshot began (the writer's count, mirrored for metrics).
    log_bytes: AtomicU64,
    failed_at: Mutex<Option<Instant>>,
}

/// The writer's handle on the log.
pub struct WalDisk {
    dir: PathBuf,
    fsync: bool,
    _lock: File,
    segment: File,
    /// Where the next frame goes (the end of what is committed).
    end: u64,
    /// The segment's length: zeros from `end` on ([`WalDisk::grow`]).
    allocated: u64,
    /// The last revision on disk.
    rv: u64,
    /// Log bytes since the last snapshot began.
    since_snapshot: u64,
    snapshot_after: u64,
    buf: Vec<u8>,
    snapshots: Arc<Snapshots>,
    snapshot_thread: Option<JoinHandle<()>>,
    /// Objects that could not be read at start (set aside, not served): snapshots carry them
    /// until their key is written, as the log they came from would have.
    unreadable: Vec<(Vec<u8>, Bytes)>,
    /// The high-water mark (with fsync on).
    high_water: Option<HighWater>,
}

impl DiskMetrics for Snapshots {
    fn render(&self, out: &mut String) {
        use std::fmt::Write;
        let _ = write!(
            out,
            "# HELP turtles_store_wal_log_bytes Bytes of the wal engine's log since its last snapshot began.\n# TYPE turtles_store_wal_log_bytes gauge\nturtles_store_wal_log_bytes {}\n# HELP turtles_store_wal_snapshot_bytes Size of the wal engine's last snapshot.\n# TYPE turtles_store_wal_snapshot_bytes gauge\nturtles_store_wal_snapshot_bytes {}\n# HELP turtles_store_wal_snapshots_total Snapshots the wal engine wrote.\n# TYPE turtles_store_wal_snapshots_total counter\nturtles_store_wal_snapshots_total {}\n# HELP turtles_store_wal_snapshot_failures_total Snapshots the wal engine could not write (the log is kept; retried 30 s later).\n# TYPE turtles_store_wal_snapshot_failures_total counter\nturtles_store_wal_snapshot_failures_total {}\n",
            self.log_bytes.load(Ordering::Relaxed),
            self.last_size.load(Ordering::Relaxed),
            self.written.load(Ordering::Relaxed),
            self.failed.load(Ordering::Relaxed),
        );
    }
}

impl WalDisk {
    /// Start a new segment whose first revision is `first` and make its name durable.
    fn new_segment(dir: &Path, first: u64) -> std::io::Result<File> {
        let path = dir.join(segment_name(first));
        let file = OpenOptions::new()
            .create(true)
            .truncate(true)
            .read(true)
            .write(true)
            .open(&path)?;
        let mut header = Vec::with_capacity(SEGMENT_HEADER as usize);
        header.extend_from_slice(SEGMENT_MAGIC);
        header.extend_from_slice(&first.to_le_bytes());
        let written = file
            .write_all_at(&header, 0)
            .and_then(|()| file.sync_all())
            .and_then(|()| sync_dir(dir));
        if let Err(e) = written {
            // No empty segment left behind (a later start would take it for a torn one).
            drop(file);
            let _ = std::fs::remove_file(&path);
            let _ = sync_dir(dir);
            return Err(e);
        }
        Ok(file)
    }

    /// Extend the segment with zeros past `need`, by [`GROW_BYTES`] at a time. A commit that
    /// writes into blocks already there changes no metadata, so its `fdatasync` is one write of
    /// the data; growing the file also writes the inode, once per chunk instead of every commit.
    fn grow(&mut self, need: u64) -> std::io::Result<()> {
        static ZEROS: [u8; 64 << 10] = [0; 64 << 10];
        let to = need.div_ceil(GROW_BYTES) * GROW_BYTES;
        let mut at = self.allocated;
        while at < to {
            let n = (to - at).min(ZEROS.len() as u64);
            self.segment.write_all_at(&ZEROS[..n as usize], at)?;
            at += n;
        }
        // The new length is durable before a frame is written into it (once per chunk): a
        // power loss in the middle of a commit then leaves a whole number of chunks, which is
        // what tells a torn write from a log cut short (`check_torn_tail`).
        if to > self.allocated && self.fsync {
            self.segment.sync_data()?;
        }
        self.allocated = to;
        Ok(())
    }

    /// Write `changes` as frames from `self.end` on; the bytes written.
    fn append(&mut self, changes: &[Change], rv: u64) -> std::io::Result<u64> {
        let mut next = rv + 1 - changes.len() as u64;
        let mut at = self.end;
        let mut rest = changes;
        while !rest.is_empty() {
            self.buf.clear();
            self.buf.extend_from_slice(&[0u8; FRAME_HEADER]);
            self.buf.extend_from_slice(&next.to_le_bytes());
            self.buf.extend_from_slice(&[0u8; 4]);
            let mut count = 0u32;
            while let Some((c, more)) = rest.split_first() {
                if count > 0 && self.buf.len() >= FRAME_TARGET {
                    break;
                }
                match &c.json {
                    Some(json) => {
                        self.buf.push(PUT);
                        put_bytes(&mut self.buf, &c.key);
                        put_bytes(&mut self.buf, json);
                    }
                    None => {
                        self.buf.push(DELETE);
                        put_bytes(&mut self.buf, &c.key);
                    }
                }
                count += 1;
                rest = more;
            }
            let payload_at = FRAME_HEADER;
            self.buf[payload_at + 8..payload_at + 12].copy_from_slice(&count.to_le_bytes());
            let n = (self.buf.len() - FRAME_HEADER) as u32;
            let crc = crc32fast::hash(&self.buf[FRAME_HEADER..]);
            self.buf[..4].copy_from_slice(&n.to_le_bytes());
            self.buf[4..8].copy_from_slice(&crc.to_le_bytes());
            let need = at + self.buf.len() as u64;
            if need > self.allocated {
                self.grow(need)?;
            }
            self.segment.write_all_at(&self.buf, at)?;
            // Synced frame by frame, so a frame cut short by a crash is always the last one.
            if self.fsync {
                self.segment.sync_data()?;
            }
            at += self.buf.len() as u64;
            next += u64::from(count);
        }
        Ok(at - self.end)
    }
}

impl Disk for WalDisk {
    fn open(opts: &StoreOptions, each: &mut dyn FnMut(&[u8], Bytes)) -> Result<(Self, u64)> {
        let dir = &opts.dir;
        std::fs::create_dir_all(dir)?;
        let lock = lock(dir)?;
        let files = list_files(dir)?;
        for path in &files.unfinished {
            std::fs::remove_file(path)?;
        }
        if files.segments.is_empty()
            && files.snapshots.is_empty()
            && super::sled_store::holds_sled(dir)
        {
            return Err(StoreError::Unavailable(format!(
                "the data dir {} holds a store of the sled engine: start with --store sled",
                dir.display()
            )));
        }
        // The newest whole snapshot.
        let mut objects: std::collections::HashMap<Vec<u8>, Bytes> =
            std::collections::HashMap::new();
        let mut rv = 0;
        let mut snapshot_size = 0;
        for (snap_rv, path) in files.snapshots.iter().rev() {
            match read_snapshot(path) {
                Ok((read_rv, read)) if read_rv == *snap_rv => {
                    rv = read_rv;
                    objects.extend(read);
                    snapshot_size = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
                    break;
                }
                Ok(_) => {
                    tracing::error!(file = %path.display(), "a snapshot names another revision than it holds: not used")
                }
                Err(why) => {
                    tracing::error!(file = %path.display(), error = %why, "a snapshot cannot be read: not used")
                }
            }
        }
        let snapshot_rv = rv;
        if opts.max_object_bytes > MAX_OBJECT_BYTES {
            return Err(StoreError::Unavailable(format!(
                "the wal engine stores objects of up to {MAX_OBJECT_BYTES} bytes; --max-object-bytes {} is larger",
                opts.max_object_bytes
            )));
        }
        let max_frame = (FRAME_TARGET + opts.max_object_bytes) as u64 + (64 << 10);
        // The segments after it, in order; one that ends at or before it is skipped, and so is
        // one that is not the last and never got its header (a rotation that failed).
        let mut segments: Vec<&(u64, PathBuf)> = Vec::new();
        for (i, seg) in files.segments.iter().enumerate() {
            let next = files.segments.get(i + 1);
            if next.is_some_and(|(next, _)| *next <= snapshot_rv.saturating_add(1)) {
                continue;
            }
            if next.is_some() && std::fs::metadata(&seg.1)?.len() < SEGMENT_HEADER {
                tracing::warn!(file = %seg.1.display(), "an empty log segment (a rotation that failed): removed");
                std::fs::remove_file(&seg.1)?;
                continue;
            }
            segments.push(seg);
        }
        let mut since_snapshot = 0;
        let mut tail: Option<(File, u64)> = None;
        for (i, (first, path)) in segments.iter().enumerate() {
            if *first > rv.saturating_add(1) {
                return Err(damaged(
                    path,
                    0,
                    &format!("it starts at revision {first}, the log before it ends at {rv}"),
                ));
            }
            let last_segment = i + 1 == segments.len();
            let end = match replay_segment(path, *first, &mut objects, &mut rv)? {
                Replayed::Whole(end) => end,
                Replayed::Torn { at, why } if last_segment => {
                    // Without fsync the kernel may have written later frames before earlier
                    // ones, so a power loss can leave whole frames after a broken one: they
                    // are cut with it, as `--no-fsync` warns.
                    if opts.fsync {
                        check_torn_tail(path, at, rv, max_frame)?;
                    }
                    let file_len = std::fs::metadata(path)?.len();
                    tracing::warn!(
                        file = %path.display(),
                        at,
                        dropped = file_len - at,
                        reason = %why,
                        "the log ends in a frame that is not whole (a write a crash interrupted, not acknowledged, or damage to the end of the file): cut off"
                    );
                    at
                }
                Replayed::Torn { at, why } => return Err(damaged(path, at, &why)),
            };
            since_snapshot += end;
            if last_segment {
                let file = OpenOptions::new().read(true).write(true).open(path)?;
                if end < SEGMENT_HEADER {
                    // Created, but its header never reached the disk: start it again.
                    drop(file);
                    tail = Some((Self::new_segment(dir, *first)?, SEGMENT_HEADER));
                } else {
                    file.set_len(end)?;
                    file.sync_all()?;
                    tail = Some((file, end));
                }
            }
        }
        let (segment, end) = match tail {
            Some(t) => t,
            None => (
                Self::new_segment(dir, rv.saturating_add(1))?,
                SEGMENT_HEADER,
            ),
        };
        // What a finished snapshot made obsolete but a stop interrupted deleting.
        if snapshot_rv > 0 {
            if let Err(e) = delete_before(dir, snapshot_rv) {
                tracing::warn!(error = %e, "old log files could not be deleted");
            }
        }
        for (key, json) in objects {
            each(&key, json);
        }
        // Every write up to the high-water mark was acknowledged: a log that ends before it
        // lost some (no crash does that; damage does). Without fsync nothing is promised, and
        // the mark is dropped rather than kept stale.
        let high_water = high_water::start(dir, &HIGH_WATER, opts.fsync, rv)?;
        let snapshots = Arc::new(Snapshots::default());
        snapshots.last_size.store(snapshot_size, Ordering::Relaxed);
        snapshots.log_bytes.store(since_snapshot, Ordering::Relaxed);
        Ok((
            WalDisk {
                dir: dir.clone(),
                fsync: opts.fsync,
                _lock: lock,
                segment,
                end,
                allocated: end,
                rv,
                since_snapshot,
                snapshot_after: opts.snapshot_after_bytes,
                buf: Vec::new(),
                snapshots,
                snapshot_thread: None,
                unreadable: Vec::new(),
                high_water,
            },
            rv,
        ))
    }

    fn commit(&mut self, changes: &[Change], rv: u64) -> Result<()> {
        match self.append(changes, rv) {
            Ok(n) => {
                self.end += n;
                self.since_snapshot += n;
                self.snapshots
                    .log_bytes
                    .store(self.since_snapshot, Ordering::Relaxed);
                self.rv = rv;
                if let Some(hw) = &mut self.high_water {
                    hw.committed(rv);
                }
                if !self.unreadable.is_empty() {
                    self.unreadable
                        .retain(|(key, _)| !changes.iter().any(|c| &c.key == key));
                }
                Ok(())
            }
            Err(e) => {
                // Nothing of this batch may stay on disk: it is refused, not acknowledged. (A
                // crash before this cut can leave its first frames, as a write that timed out
                // may have happened.)
                match self
                    .segment
                    .set_len(self.end)
                    .and_then(|()| self.segment.sync_all())
                {
                    Ok(()) => self.allocated = self.end,
                    Err(t) => {
                        tracing::error!(error = %t, "a failed batch could not be cut off the log yet")
                    }
                }
                Err(e.into())
            }
        }
    }

    fn recover(&mut self) -> Result<u64> {
        self.segment.set_len(self.end)?;
        self.allocated = self.end;
        self.segment.sync_all()?;
        Ok(self.rv)
    }

    fn metrics(&self) -> Option<Arc<dyn DiskMetrics>> {
        Some(self.snapshots.clone())
    }

    fn set_aside(&mut self, key: &[u8], raw: Bytes) {
        self.unreadable.push((key.to_vec(), raw));
    }

    fn wants_snapshot(&self) -> bool {
        if self.snapshots.in_flight.load(Ordering::Acquire) {
            return false;
        }
        let failed_recently = self
            .snapshots
            .failed_at
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .is_some_and(|at| at.elapsed() < SNAPSHOT_RETRY);
        let after = self
            .snapshot_after
            .max(self.snapshots.last_size.load(Ordering::Relaxed));
        let due = self.since_snapshot >= after || self.snapshots.retry.load(Ordering::Relaxed);
        !failed_recently && due
    }

    fn snapshot(&mut self, rv: u64, objects: Vec<(String, ObjectMap)>) {
        let failed = |state: &Snapshots| {
            *state.failed_at.lock().unwrap_or_else(|p| p.into_inner()) = Some(Instant::now());
            state.retry.store(true, Ordering::Relaxed);
            state.failed.fetch_add(1, Ordering::Relaxed);
        };
        // The revisions after the snapshot go to a new segment, so the old ones can go whole.
        // The old one is synced first (it is already, unless --no-fsync): the rotation is a
        // barrier, so no later segment is on disk while an earlier one is not.
        let rotated = self
            .segment
            .sync_data()
            .and_then(|()| Self::new_segment(&self.dir, rv.saturating_add(1)));
        match rotated {
            Ok(file) => {
                self.segment = file;
                self.end = SEGMENT_HEADER;
                self.allocated = SEGMENT_HEADER;
                self.since_snapshot = 0;
                self.snapshots.log_bytes.store(0, Ordering::Relaxed);
            }
            Err(e) => {
                tracing::warn!(error = %e, "a new log segment could not be started; the snapshot waits");
                failed(&self.snapshots);
                return;
            }
        }
        if let Some(t) = self.snapshot_thread.take() {
            let _ = t.join();
        }
        self.snapshots.in_flight.store(true, Ordering::Release);
        self.snapshots.retry.store(false, Ordering::Relaxed);
        let state = self.snapshots.clone();
        let dir = self.dir.clone();
        let unreadable = self.unreadable.clone();
        let spawned = std::thread::Builder::new()
            .name("store-snapshot".into())
            .spawn(move || {
                /// Clears `in_flight` however the thread ends; a panic counts as a failure.
                struct Done(Arc<Snapshots>);
                impl Drop for Done {
                    fn drop(&mut self) {
                        if std::thread::panicking() {
                            *self.0.failed_at.lock().unwrap_or_else(|p| p.into_inner()) =
                                Some(Instant::now());
                            self.0.retry.store(true, Ordering::Relaxed);
                            self.0.failed.fetch_add(1, Ordering::Relaxed);
                        }
                        self.0.in_flight.store(false, Ordering::Release);
                    }
                }
                let _done = Done(state.clone());
                let started = Instant::now();
                match write_snapshot(&dir, rv, &objects, &unreadable) {
                    Ok(size) => {
                        state.last_size.store(size, Ordering::Relaxed);
                        state.written.fetch_add(1, Ordering::Relaxed);
                        if let Err(e) = delete_before(&dir, rv) {
                            tracing::warn!(error = %e, "old log files could not be deleted");
                        }
                        tracing::info!(rv, bytes = size, took = ?started.elapsed(), "store snapshot written");
                    }
                    Err(e) => {
                        tracing::warn!(error = %e, rv, "a store snapshot could not be written; the log is kept");
                        failed(&state);
                    }
                }
            });
        match spawned {
            Ok(t) => self.snapshot_thread = Some(t),
            Err(e) => {
                tracing::warn!(error = %e, "the snapshot thread could not start");
                self.snapshots.in_flight.store(false, Ordering::Release);
                failed(&self.snapshots);
            }
        }
    }

    fn close(&mut self) -> Result<()> {
        if let Some(t) = self.snapshot_thread.take() {
            let _ = t.join();
        }
        // A stopped log ends where its last frame does (no zeroed chunk after it).
        self.segment.set_len(self.end)?;
        self.segment.sync_all()?;
        if let Some(hw) = &mut self.high_water {
            hw.stopped(self.rv)?;
        }
        Ok(())
    }
}

impl Drop for WalDisk {
    /// The directory's lock goes with this value: a snapshot still being written finishes first.
    fn drop(&mut self) {
        if let Some(t) = self.snapshot_thread.take() {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::ObjectKey;
    use crate::store::{Precondition, Store, WriteOp};
    use serde_json::json;

    fn temp_dir(tag: &str) -> PathBuf {
        crate::store::testing::temp_dir(&format!("wal-{tag}"))
    }

    fn opts(dir: &Path) -> StoreOptions {
        StoreOptions {
            watch_history: 100,
            ..StoreOptions::in_dir(dir.to_path_buf())
        }
    }

    fn put(name: &str, data: &str) -> WriteOp {
        write(name, data, Precondition::MustNotExist)
    }

    fn update(name: &str, data: &str) -> WriteOp {
        write(name, data, Precondition::Exists)
    }

    fn write(name: &str, data: &str, precondition: Precondition) -> WriteOp {
        WriteOp::Put {
            key: ObjectKey::new("configmaps", "default", name),
            value: json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "default"}, "data": {"k": data}}),
            precondition,
        }
    }

    fn delete(name: &str) -> WriteOp {
        WriteOp::Delete {
            key: ObjectKey::new("configmaps", "default", name),
            precondition: Precondition::Exists,
        }
    }

    fn data(store: &WalStore, name: &str) -> Option<String> {
        let obj = store.get(&ObjectKey::new("configmaps", "default", name))?;
        Some(obj.value()["data"]["k"].as_str()?.to_string())
    }

    fn segments(dir: &Path) -> Vec<(u64, PathBuf)> {
        list_files(dir).unwrap().segments
    }

    /// A store's directory after `puts` (name, data) and a clean stop.
    async fn stopped_after(tag: &str, puts: &[(&str, &str)]) -> PathBuf {
        let dir = temp_dir(tag);
        let store = WalStore::open(opts(&dir)).unwrap();
        for (name, data) in puts {
            store.write(put(name, data)).await.unwrap();
        }
        store.shutdown().unwrap();
        dir
    }

    #[tokio::test]
    async fn a_write_cut_short_at_the_end_of_the_log_is_dropped_and_writes_go_on() {
        let names = ["o0", "o1", "o2", "o3", "o4"];
        let dir = stopped_after("torn", &names.map(|n| (n, "v"))).await;
        // A frame whose write never finished: its header says more than is there, in a file
        // grown by whole chunks as a running log's is (zeros after it).
        let (_, path) = segments(&dir).pop().unwrap();
        let whole = std::fs::metadata(&path).unwrap().len();
        let mut f = OpenOptions::new().append(true).open(&path).unwrap();
        f.write_all(&[200, 0, 0, 0, 1, 2, 3, 4, 9, 9]).unwrap();
        f.set_len(GROW_BYTES).unwrap();
        drop(f);

        let store = WalStore::open(opts(&dir)).unwrap();
        assert_eq!(store.revision(), 5);
        assert_eq!(store.list("configmaps", None).unwrap().items.len(), 5);
        assert_eq!(std::fs::metadata(&path).unwrap().len(), whole, "cut off");
        assert_eq!(store.write(put("o5", "v")).await.unwrap().rv, 6);
        store.shutdown().unwrap();
        drop(store);
        let store = WalStore::open(opts(&dir)).unwrap();
        assert_eq!(store.revision(), 6);
        assert_eq!(data(&store, "o5").as_deref(), Some("v"));
        store.shutdown().unwrap();
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// Acknowledged frames zeroed at the end of the log (so it reads as a log that simply ended
    /// earlier): the high-water mark knows better, and the store refuses to open; without the
    /// mark, it opens with what is left.
    #[tokio::test]
    async fn a_log_that_lost_acknowledged_writes_refuses_to_open() {
        let names = ["o0", "o1", "o2", "o3", "o4"];
        let dir = stopped_after("lost", &names.map(|n| (n, "v"))).await;
        let (_, path) = segments(&dir).pop().unwrap();
        let mut bytes = std::fs::read(&path).unwrap();
        let le32 = |b: &[u8]| u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize;
        let mut at = SEGMENT_HEADER as usize;
        for _ in 0..3 {
            at += FRAME_HEADER + le32(&bytes[at..]);
        }
        bytes[at..].fill(0);
        std::fs::write(&path, &bytes).unwrap();
        let Err(err) = WalStore::open(opts(&dir)) else {
            panic!("a log that lost acknowledged writes opened");
        };
        assert!(
            matches!(&err, StoreError::Unavailable(m) if m.contains("ends at revision 3, but writes up to revision 5 were acknowledged")),
            "{err}"
        );
        std::fs::remove_file(dir.join(HWM_FILE)).unwrap();
        let store = WalStore::open(opts(&dir)).unwrap();
        assert_eq!(store.revision(), 3);
        store.shutdown().unwrap();
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// A log cut short inside a frame, at a length a running log never has: acknowledged
    /// writes are gone, and the store refuses to open rather than serve a shortened history.
    #[tokio::test]
    async fn a_log_cut_short_refuses_to_open() {
        let names = ["o0", "o1", "o2", "o3", "o4"];
        let dir = stopped_after("cut", &names.map(|n| (n, "v"))).await;
        let (_, path) = segments(&dir).pop().unwrap();
        let len = std::fs::metadata(&path).unwrap().len();
        let f = OpenOptions::new().write(true).open(&path).unwrap();
        f.set_len(len - 30).unwrap();
        drop(f);
        let Err(err) = WalStore::open(opts(&dir)) else {
            panic!("a log cut short opened");
        };
        assert!(
            matches!(&err, StoreError::Unavailable(m) if m.contains("it was cut short") && m.contains("after revision 4")),
            "{err}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[tokio::test]
    async fn a_running_stores_files_open_with_every_acknowledged_write() {
        // What a crash leaves: the segment as it is while the store runs, zeroed chunk and all.
        let dir = temp_dir("running");
        let store = WalStore::open(opts(&dir)).unwrap();
        for i in 0..50 {
            store.write(put(&format!("o{i}"), "v")).await.unwrap();
        }
        store.write(delete("o7")).await.unwrap();
        let (first, path) = segments(&dir).pop().unwrap();
        let len = std::fs::metadata(&path).unwrap().len();
        assert_eq!(
            len % GROW_BYTES,
            0,
            "the segment grows in zeroed chunks: {len}"
        );
        let copy = temp_dir("running-copy");
        std::fs::copy(&path, copy.join(segment_name(first))).unwrap();
        store.shutdown().unwrap();
        drop(store);

        let store = WalStore::open(opts(&copy)).unwrap();
        assert_eq!(store.revision(), 51);
        assert_eq!(store.list("configmaps", None).unwrap().items.len(), 49);
        assert_eq!(store.write(put("o7", "again")).await.unwrap().rv, 52);
        store.shutdown().unwrap();
        drop(store);
        let store = WalStore::open(opts(&copy)).unwrap();
        assert_eq!(data(&store, "o7").as_deref(), Some("again"));
        store.shutdown().unwrap();
        let _ = std::fs::remove_dir_all(&dir);
        let _ = std::fs::remove_dir_all(&copy);
    }

    #[tokio::test]
    async fn a_frame_larger_than_this_runs_limit_allows_still_opens() {
        let dir = temp_dir("big-frame");
        let big = StoreOptions {
            max_object_bytes: 32 << 20,
            ..opts(&dir)
        };
        let store = WalStore::open(big).unwrap();
        store
            .write(put("big", &"x".repeat(20 << 20)))
            .await
            .unwrap();
        store.write(put("small", "v")).await.unwrap();
        store.shutdown().unwrap();
        drop(store);
        // Restarted with the default limit (1.5 MiB): the 20 MiB frame is whole, not damage.
        let store = WalStore::open(opts(&dir)).unwrap();
        assert_eq!(store.revision(), 2);
        assert_eq!(data(&store, "big").map(|d| d.len()), Some(20 << 20));
        store.shutdown().unwrap();
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[tokio::test]
    async fn damage_before_the_end_of_the_log_refuses_to_open() {
        let dir = stopped_after("damaged", &[("a", "first"), ("b", "second")]).await;
        // Flip a byte inside the first frame's payload: a later frame follows it.
        let (_, path) = segments(&dir).pop().unwrap();
        let mut bytes = std::fs::read(&path).unwrap();
        let at = SEGMENT_HEADER as usize + FRAME_HEADER + 20;
        bytes[at] ^= 0xff;
        std::fs::write(&path, &bytes).unwrap();
        let Err(err) = WalStore::open(opts(&dir)) else {
            panic!("a damaged log opened");
        };
        assert!(
            matches!(&err, StoreError::Unavailable(m) if m.contains("damaged") && m.contains("a whole frame (revision 2) follows a broken one")),
            "{err}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[tokio::test]
    async fn a_zeroed_frame_header_with_whole_frames_after_it_is_damage_not_a_torn_tail() {
        let dir = stopped_after("zeroed-header", &[("o0", "v"), ("o1", "v"), ("o2", "v")]).await;
        // Zero the second frame's header: cutting the log there would lose revisions 2 and 3.
        let (_, path) = segments(&dir).pop().unwrap();
        let mut bytes = std::fs::read(&path).unwrap();
        let first_len = u32::from_le_bytes(bytes[16..20].try_into().unwrap()) as usize;
        let second = SEGMENT_HEADER as usize + FRAME_HEADER + first_len;
        bytes[second..second + FRAME_HEADER].fill(0);
        std::fs::write(&path, &bytes).unwrap();
        let Err(err) = WalStore::open(opts(&dir)) else {
            panic!("a log with a zeroed frame header in its middle opened");
        };
        assert!(
            matches!(&err, StoreError::Unavailable(m) if m.contains("a whole frame (revision 3) follows a broken one")),
            "{err}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[tokio::test]
    async fn an_empty_segment_from_a_failed_rotation_is_not_damage() {
        let dir = stopped_after("empty-segment", &[("a", "1"), ("b", "2")]).await;
        // A rotation at revision 1 whose header never got written (the writer went on in the
        // old segment), then one at revision 2 that worked.
        std::fs::write(dir.join(segment_name(2)), b"").unwrap();
        WalDisk::new_segment(&dir, 3).unwrap();
        let store = WalStore::open(opts(&dir)).unwrap();
        assert_eq!(store.revision(), 2);
        assert_eq!(store.write(put("c", "3")).await.unwrap().rv, 3);
        store.shutdown().unwrap();
        drop(store);
        assert!(!dir.join(segment_name(2)).exists());
        let store = WalStore::open(opts(&dir)).unwrap();
        assert_eq!(data(&store, "c").as_deref(), Some("3"));
        store.shutdown().unwrap();
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[tokio::test]
    async fn snapshots_keep_an_object_that_could_not_be_read() {
        let root = temp_dir("unreadable");
        let dir = root.join("store");
        let o = StoreOptions {
            snapshot_after_bytes: 4096,
            ..opts(&dir)
        };
        let store = WalStore::open(o.clone()).unwrap();
        store.write(put("a", "1")).await.unwrap();
        store.shutdown().unwrap();
        drop(store);
        // A frame with an object that is not JSON, as a bug or a disk could leave.
        let (_, path) = segments(&dir).pop().unwrap();
        let key = b"o\0configmaps\0default\0broken";
        let mut payload = Vec::new();
        payload.extend_from_slice(&2u64.to_le_bytes());
        payload.extend_from_slice(&1u32.to_le_bytes());
        payload.push(PUT);
        put_bytes(&mut payload, key);
        put_bytes(&mut payload, b"{not json");
        let mut frame = Vec::new();
        frame.extend_from_slice(&(payload.len() as u32).to_le_bytes());
        frame.extend_from_slice(&crc32fast::hash(&payload).to_le_bytes());
        frame.extend_from_slice(&payload);
        let mut f = OpenOptions::new().append(true).open(&path).unwrap();
        f.write_all(&frame).unwrap();
        drop(f);

        let store = WalStore::open(o.clone()).unwrap();
        assert_eq!(store.health().quarantined, 1);
        for round in 0..30 {
            store
                .write(update("a", &format!("r{round}")))
                .await
                .unwrap();
        }
        let deadline = Instant::now() + Duration::from_secs(20);
        while list_files(&dir).unwrap().segments.len() > 1 {
            assert!(Instant::now() < deadline, "no snapshot");
            std::thread::sleep(Duration::from_millis(10));
        }
        store.shutdown().unwrap();
        drop(store);
        let store = WalStore::open(o).unwrap();
        assert_eq!(
            store.health().quarantined,
            1,
            "still on disk, still set aside"
        );
        assert_eq!(data(&store, "a").as_deref(), Some("r29"));
        store.shutdown().unwrap();
        let _ = std::fs::remove_dir_all(&root);
    }

    #[tokio::test]
    async fn snapshots_compact_the_log_and_a_restart_reads_them_back() {
        let dir = temp_dir("snapshot");
        let o = StoreOptions {
            snapshot_after_bytes: 4096,
            ..opts(&dir)
        };
        let store = WalStore::open(o.clone()).unwrap();
        for round in 0..20 {
            for i in 0..10 {
                let (name, data) = (format!("o{i}"), format!("r{round}"));
                let op = if round == 0 {
                    put(&name, &data)
                } else {
                    update(&name, &data)
                };
                store.write(op).await.unwrap();
            }
        }
        store.write(delete("o3")).await.unwrap();
        // The snapshot is written in the background: wait for the old segments to go.
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let files = list_files(&dir).unwrap();
            if !files.snapshots.is_empty() && files.segments.len() <= 2 {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "no snapshot: {:?}",
                files.segments
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        let mut metrics = String::new();
        store.render_metrics(&mut metrics);
        let written: u64 = metrics
            .lines()
            .find_map(|l| l.strip_prefix("turtles_store_wal_snapshots_total "))
            .and_then(|n| n.parse().ok())
            .unwrap();
        assert!(written >= 1, "{metrics}");
        assert!(
            metrics.contains("turtles_store_wal_snapshot_failures_total 0"),
            "{metrics}"
        );
        store.write(put("late", "after")).await.unwrap();
        let rv = store.revision();
        assert_eq!(rv, 202);
        store.shutdown().unwrap();
        drop(store);
        let files = list_files(&dir).unwrap();
        assert!(files.snapshots.len() <= 2, "{:?}", files.snapshots);
        let log: u64 = files
            .segments
            .iter()
            .map(|(_, p)| std::fs::metadata(p).unwrap().len())
            .sum();
        assert!(log < 20 * 4096, "the log was compacted: {log} bytes");

        let store = WalStore::open(o).unwrap();
        assert_eq!(store.revision(), rv);
        assert_eq!(store.list("configmaps", None).unwrap().items.len(), 10);
        assert_eq!(data(&store, "o0").as_deref(), Some("r19"));
        assert_eq!(data(&store, "o3"), None, "the delete survived");
        assert_eq!(data(&store, "late").as_deref(), Some("after"));
        assert_eq!(
            store
                .get(&ObjectKey::new("configmaps", "default", "o9"))
                .unwrap()
                .rv,
            200
        );
        store.shutdown().unwrap();
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[tokio::test]
    async fn a_damaged_snapshot_is_not_used_and_the_log_before_it_is_kept() {
        let dir = stopped_after("bad-snapshot", &[("a", "1"), ("b", "2")]).await;
        // A snapshot that claims revision 2 but fails its checksum (a disk that lied):
        // the store reads the log instead.
        let mut bad = Vec::new();
        bad.extend_from_slice(SNAPSHOT_MAGIC);
        bad.extend_from_slice(&2u64.to_le_bytes());
        bad.extend_from_slice(&0u64.to_le_bytes());
        bad.extend_from_slice(&[0, 0, 0, 0]);
        bad.extend_from_slice(SNAPSHOT_END);
        std::fs::write(dir.join(snapshot_name(2)), &bad).unwrap();
        std::fs::write(dir.join("snap-0000000000000009.snap.tmp"), b"half").unwrap();
        let store = WalStore::open(opts(&dir)).unwrap();
        assert_eq!(store.revision(), 2);
        assert_eq!(data(&store, "b").as_deref(), Some("2"));
        assert!(!dir.join("snap-0000000000000009.snap.tmp").exists());
        store.shutdown().unwrap();
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[tokio::test]
    async fn an_engine_does_not_open_the_other_engines_store() {
        let dir = temp_dir("engines");
        let wal = WalStore::open(opts(&dir)).unwrap();
        wal.write(put("a", "1")).await.unwrap();
        wal.shutdown().unwrap();
        drop(wal);
        let Err(err) = crate::store::SledStore::open(opts(&dir)) else {
            panic!("sled opened a wal store");
        };
        assert!(err.to_string().contains("--store wal"), "{err}");

        let dir2 = temp_dir("engines-sled");
        let sled = crate::store::SledStore::open(opts(&dir2)).unwrap();
        sled.write(put("a", "1")).await.unwrap();
        sled.shutdown().unwrap();
        drop(sled);
        let Err(err) = WalStore::open(opts(&dir2)) else {
            panic!("the wal engine opened a sled store");
        };
        assert!(err.to_string().contains("--store sled"), "{err}");
        let _ = std::fs::remove_dir_all(&dir);
        let _ = std::fs::remove_dir_all(&dir2);
    }
}
