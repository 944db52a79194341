//! The sled engine: objects under `o\0<resource>\0<namespace>\0<name>`, the revision counter
//! under `m\0rv`, all in one tree so a batch of writes and its counter commit atomically. A
//! commit is sled's `apply_batch`, then sled's flush, then `fdatasync` of sled's log file.
//!
//! Beside sled's files in the store's directory, `sled.hwm` is the high-water mark (with fsync
//! on; [`super::high_water`], as the wal engine's `wal.hwm`): a revision every write up to which
//! was acknowledged, rewritten at most once a second after a commit and at a stop. sled answers
//! some damage to its files (a flipped byte in the middle of its log) by silently recovering an
//! older state; a store whose revision counter comes back below the mark is missing
//! acknowledged writes, and refuses to start until `sled.hwm` is deleted. A data dir from before
//! the mark (sled's files, no `sled.hwm`) starts as it is and gets one.
//!
//! The rest of the store (the in-memory index, the one writer thread, group commit, events) is
//! [`super::local`]'s, shared with the [`super::wal`] engine.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::high_water::{self, HighWater, Mark};
use super::local::{Change, Disk, LocalStore};
use super::{Result, StoreError};

pub use super::local::StoreOptions;

/// The store on sled (`turtles serve --store sled`, the default).
pub type SledStore = LocalStore<SledDisk>;

const RV_KEY: &[u8] = b"m\0rv";
/// The high-water mark's file (see the module docs and [`super::high_water`]).
const HWM_FILE: &str = "sled.hwm";
/// The high-water mark's file, and how the refusal at open names what lost writes.
const HIGH_WATER: Mark = Mark {
    file: HWM_FILE,
    holder: "the store's sled database",
    short: "sled",
    damage: "damage to its files, from which sled recovers an older state without a word",
};
const SLED_CACHE_BYTES: u64 = 32 * 1024 * 1024;

/// How long [`open_db`] waits for sled's lock on the data dir. A store shut down in this process
/// releases it only when sled's own background threads have let go of the database, a moment
/// after the last handle is dropped; another process holding it is reported once this is over.
const LOCK_WAIT: Duration = Duration::from_secs(5);

fn open_db(dir: &Path) -> Result<sled::Db> {
    let deadline = std::time::Instant::now() + LOCK_WAIT;
    loop {
        // sled panics on some damage to its files ("tried to serialize Uninitialized", a byte
        // flipped in the middle of its log): that is a store that cannot open, not a crash.
        let opened = std::panic::catch_unwind(|| {
            sled::Config::new()
                .path(dir)
                .mode(sled::Mode::HighThroughput)
                // Reads are served from the in-memory index; sled's page cache only helps writes.
                .cache_capacity(SLED_CACHE_BYTES)
                .flush_every_ms(None)
                .open()
        })
        .map_err(|panic| {
            let why = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "a panic".to_string());
            StoreError::Unavailable(format!(
                "sled could not open its files in {} ({why}): they are damaged; restore them from a backup, or move them away to start with an empty store",
                dir.display()
            ))
        })?;
        match opened {
            Err(sled::Error::Io(e)) if is_lock_busy(&e) => {
                if std::time::Instant::now() >= deadline {
                    return Err(StoreError::Unavailable(format!(
                        "the data dir {} is in use by another process (or another store in this one): {e}",
                        dir.display()
                    )));
                }
                std::thread::sleep(Duration::from_millis(10));
            }
            other => return Ok(other?),
        }
    }
}

/// sled's answer when another handle holds the exclusive lock on its files.
fn is_lock_busy(e: &std::io::Error) -> bool {
    e.kind() == std::io::ErrorKind::Other && e.to_string().starts_with("could not acquire lock")
}

fn read_rv(db: &sled::Db) -> Result<u64> {
    Ok(match db.get(RV_KEY)? {
        Some(v) => {
            let mut b = [0u8; 8];
            if v.len() == 8 {
                b.copy_from_slice(&v);
            }
            u64::from_be_bytes(b)
        }
        None => 0,
    })
}

fn sled_log_path(dir: &Path) -> PathBuf {
    dir.join("db")
}

/// Whether `dir` holds a sled store (its `conf` and `db` files).
pub fn holds_sled(dir: &Path) -> bool {
    dir.join("conf").exists() && sled_log_path(dir).exists()
}

/// The writer's handle on sled, and sled's log file for `fdatasync`.
pub struct SledDisk {
    /// `None` between a failed write and a successful reopen.
    db: Option<sled::Db>,
    log: Option<File>,
    dir: PathBuf,
    fsync: bool,
    /// The last revision durably committed (never lowered: see `recover`).
    rv: u64,
    /// The high-water mark (with fsync on).
    high_water: Option<HighWater>,
}

impl SledDisk {
    fn log_file(&self) -> Result<Option<File>> {
        Ok(if self.fsync {
            Some(File::open(sled_log_path(&self.dir))?)
        } else {
            None
        })
    }
}

impl Disk for SledDisk {
    fn open(opts: &StoreOptions, each: &mut dyn FnMut(&[u8], bytes::Bytes)) -> Result<(Self, u64)> {
        std::fs::create_dir_all(&opts.dir)?;
        if super::wal::holds_wal(&opts.dir) {
            return Err(StoreError::Unavailable(format!(
                "the data dir {} holds a store of the wal engine: start with --store wal",
                opts.dir.display()
            )));
        }
        let db = open_db(&opts.dir)?;
        let rv = read_rv(&db)?;
        // Every write up to the high-water mark was acknowledged: a counter below it is sled
        // back at an older state (no crash does that; damage does). Checked and rewritten under
        // sled's lock on the directory. Without fsync nothing is promised, and the mark is
        // dropped rather than kept stale.
        let high_water = high_water::start(&opts.dir, &HIGH_WATER, opts.fsync, rv)?;
        for entry in db.scan_prefix(b"o\0") {
            let (k, v) = entry?;
            each(&k, bytes::Bytes::from(v.to_vec()));
        }
        let mut disk = SledDisk {
            db: Some(db),
            log: None,
            dir: opts.dir.clone(),
            fsync: opts.fsync,
            rv,
            high_water,
        };
        disk.log = disk.log_file()?;
        Ok((disk, rv))
    }

    fn commit(&mut self, changes: &[Change], rv: u64) -> Result<()> {
        let mut batch = sled::Batch::default();
        for c in changes {
            match &c.json {
                Some(json) => batch.insert(c.key.as_slice(), json.as_ref()),
                None => batch.remove(c.key.as_slice()),
            }
        }
        batch.insert(RV_KEY, &rv.to_be_bytes());
        let db = self.db.as_ref().ok_or(StoreError::Closed)?;
        db.apply_batch(batch)?;
        db.flush()?;
        if let Some(f) = &self.log {
            f.sync_data()?;
        }
        self.rv = rv;
        if let Some(hw) = &mut self.high_water {
            hw.committed(rv);
        }
        Ok(())
    }

    /// Reopen sled (it refuses everything once a write failed) and check that a write reaches
    /// the disk again. sled commits a batch atomically, so the failed one is either wholly on
    /// disk or not at all. The revision kept for the high-water mark only goes up (the failed
    /// batch landed): a sled that came back with less than was committed must not lower it.
    fn recover(&mut self) -> Result<u64> {
        // sled holds a lock on its files: the old handle must be gone before the new one opens.
        // Dropped on a thread of its own: sled's drop flushes, and after a failed write that
        // flush can wait for ever (seen after a full disk with large values), which would take
        // the writer with it and leave every later write unanswered. Until it is gone the
        // reopen fails on the lock, and writes keep getting 503.
        if let Some(old) = self.db.take() {
            let dropped = std::thread::Builder::new()
                .name("sled-close".into())
                .spawn(move || drop(old));
            if let Err(e) = dropped {
                tracing::error!(error = %e, "the failed sled handle could not be closed");
            }
        }
        let db = open_db(&self.dir)?;
        let disk_rv = read_rv(&db)?;
        // A write that must reach the disk: the revision counter, rewritten.
        db.insert(RV_KEY, &disk_rv.to_be_bytes())?;
        db.flush()?;
        let log = self.log_file()?;
        if let Some(f) = &log {
            f.sync_data()?;
        }
        self.db = Some(db);
        self.log = log;
        self.rv = self.rv.max(disk_rv);
        Ok(disk_rv)
    }

    fn close(&mut self) -> Result<()> {
        if let Some(db) = &self.db {
            db.flush()?;
        }
        // Every commit up to `rv` was durable when it returned.
        if let Some(hw) = &mut self.high_water {
            hw.stopped(self.rv)?;
        }
        Ok(())
    }
}

/// A store in a fresh temporary directory (no fsync) for unit tests elsewhere, and that
/// directory (the caller removes it).
#[cfg(test)]
pub fn temp_store(label: &str) -> (std::sync::Arc<dyn super::Store>, PathBuf) {
    let dir = std::env::temp_dir().join(format!(
        "turtles-{label}-{}-{}",
        std::process::id(),
        uuid::Uuid::new_v4()
    ));
    let store = SledStore::open(StoreOptions {
        fsync: false,
        ..StoreOptions::in_dir(dir.clone())
    })
    .expect("a store in a temporary directory");
    (std::sync::Arc::new(store), dir)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::ObjectKey;
    use crate::store::{Precondition, Store, WriteOp};
    use serde_json::json;

    fn temp_dir(tag: &str) -> PathBuf {
        crate::store::testing::temp_dir(&format!("sled-{tag}"))
    }

    fn opts(dir: &Path) -> StoreOptions {
        StoreOptions {
            watch_history: 100,
            ..StoreOptions::in_dir(dir.to_path_buf())
        }
    }

    fn put(name: &str) -> WriteOp {
        WriteOp::Put {
            key: ObjectKey::new("configmaps", "default", name),
            value: json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "default"}, "data": {"k": name}}),
            precondition: Precondition::MustNotExist,
        }
    }

    /// The `data.k` of a configmap (its own name, as [`put`] writes it).
    fn data(store: &SledStore, name: &str) -> Option<String> {
        let obj = store.get(&ObjectKey::new("configmaps", "default", name))?;
        Some(obj.value()["data"]["k"].as_str()?.to_string())
    }

    /// sled back at an older state than it acknowledged (as after a flipped byte in its log):
    /// here the mark is moved ahead of it instead. The store refuses to open, naming both
    /// revisions; once `sled.hwm` is deleted it opens with what it has, and a new mark.
    #[tokio::test]
    async fn a_store_below_its_high_water_mark_refuses_to_open_until_the_mark_is_deleted() {
        let dir = temp_dir("hwm-lost");
        let names = ["o0", "o1", "o2", "o3", "o4"];
        let store = SledStore::open(opts(&dir)).unwrap();
        for name in names {
            store.write(put(name)).await.unwrap();
        }
        store.shutdown().unwrap();
        drop(store);
        assert_eq!(high_water::read(&dir, HWM_FILE), Some(5));

        HighWater::open(&dir, HWM_FILE, 300).unwrap();
        let Err(err) = SledStore::open(opts(&dir)) else {
            panic!("a store below its high-water mark opened");
        };
        assert!(
            matches!(&err, StoreError::Unavailable(m) if m.contains("ends at revision 5, but writes up to revision 300 were acknowledged (sled.hwm)") && m.contains("delete sled.hwm")),
            "{err}"
        );
        assert_eq!(
            high_water::read(&dir, HWM_FILE),
            Some(300),
            "a refused start leaves the mark as it was"
        );

        std::fs::remove_file(dir.join(HWM_FILE)).unwrap();
        let store = SledStore::open(opts(&dir)).unwrap();
        assert_eq!(store.revision(), 5);
        for name in names {
            assert_eq!(data(&store, name).as_deref(), Some(name));
        }
        assert_eq!(high_water::read(&dir, HWM_FILE), Some(5), "a new mark");
        assert_eq!(store.write(put("o5")).await.unwrap().rv, 6);
        store.shutdown().unwrap();
        drop(store);
        assert_eq!(high_water::read(&dir, HWM_FILE), Some(6));
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// Real damage, as the crash review made it: a byte flipped in sled's log file. sled
    /// recovers what comes before it and would serve that silently (216 of 300 acknowledged
    /// writes lost, in the review), or panics while it opens (at some offsets). Either way the
    /// store must not start short: the mark's refusal or sled's own error, as an error, passes;
    /// serving fewer writes than were acknowledged, or a panic, does not.
    #[tokio::test]
    async fn a_flipped_byte_in_sleds_log_is_never_served_silently() {
        let dir = temp_dir("hwm-flip");
        let store = SledStore::open(opts(&dir)).unwrap();
        for i in 0..300 {
            store.write(put(&format!("o{i}"))).await.unwrap();
        }
        store.shutdown().unwrap();
        drop(store);
        assert_eq!(high_water::read(&dir, HWM_FILE), Some(300));

        let mut refused = 0;
        for percent in [20, 35, 45, 50, 55, 75] {
            let copy = temp_dir(&format!("hwm-flip-{percent}"));
            for entry in std::fs::read_dir(&dir).unwrap() {
                let path = entry.unwrap().path();
                if path.is_file() {
                    std::fs::copy(&path, copy.join(path.file_name().unwrap())).unwrap();
                }
            }
            let db = copy.join("db");
            let mut bytes = std::fs::read(&db).unwrap();
            let at = bytes.len() * percent / 100;
            bytes[at] ^= 0xff;
            std::fs::write(&db, &bytes).unwrap();

            match SledStore::open(opts(&copy)) {
                Err(e) => {
                    refused += 1;
                    let e = e.to_string();
                    assert!(
                        e.contains("sled could not open")
                            || (e.contains("revision 300") && e.contains("delete sled.hwm")),
                        "{percent}%: {e}"
                    );
                }
                Ok(store) => {
                    assert_eq!(
                        store.revision(),
                        300,
                        "{percent}%: acknowledged writes lost"
                    );
                    for i in 0..300 {
                        let name = format!("o{i}");
                        assert_eq!(data(&store, &name).as_deref(), Some(name.as_str()));
                    }
                    store.shutdown().unwrap();
                }
            }
            let _ = std::fs::remove_dir_all(&copy);
        }
        assert!(refused > 0, "no flip was noticed at all");
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// The mark follows the store: written at open, at most once a second under writes, at the
    /// last revision after a stop; a data dir from before the mark gets one; without fsync there
    /// is none.
    #[tokio::test]
    async fn the_high_water_mark_follows_the_store_across_stops() {
        let dir = temp_dir("hwm-stops");
        let store = SledStore::open(opts(&dir)).unwrap();
        assert_eq!(high_water::read(&dir, HWM_FILE), Some(0), "a new store");
        for name in ["o0", "o1", "o2"] {
            store.write(put(name)).await.unwrap();
        }
        store.shutdown().unwrap();
        drop(store);
        assert_eq!(high_water::read(&dir, HWM_FILE), Some(3));

        let store = SledStore::open(opts(&dir)).unwrap();
        assert_eq!(store.revision(), 3);
        assert_eq!(store.write(put("o3")).await.unwrap().rv, 4);
        // Under writes the mark follows, at most a second behind: written by a commit, before
        // it is acknowledged. Polled with a write every 50 ms, to a deadline.
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        let mut rv = 4;
        while high_water::read(&dir, HWM_FILE) != Some(rv) {
            assert!(
                std::time::Instant::now() < deadline,
                "the mark did not follow the writes"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
            rv = store.write(put(&format!("o{rv}"))).await.unwrap().rv;
        }
        rv = store.write(put("last")).await.unwrap().rv;
        store.shutdown().unwrap();
        drop(store);
        assert_eq!(high_water::read(&dir, HWM_FILE), Some(rv), "after a stop");

        // A data dir made before the mark: sled's files and no `sled.hwm`.
        std::fs::remove_file(dir.join(HWM_FILE)).unwrap();
        let store = SledStore::open(opts(&dir)).unwrap();
        assert_eq!(store.revision(), rv);
        assert_eq!(data(&store, "last").as_deref(), Some("last"));
        assert_eq!(high_water::read(&dir, HWM_FILE), Some(rv), "it gets one");
        store.shutdown().unwrap();
        drop(store);

        let store = SledStore::open(StoreOptions {
            fsync: false,
            ..opts(&dir)
        })
        .unwrap();
        assert_eq!(store.revision(), rv);
        assert!(!dir.join(HWM_FILE).exists(), "no mark without fsync");
        store.write(put("nofsync")).await.unwrap();
        store.shutdown().unwrap();
        drop(store);
        assert!(!dir.join(HWM_FILE).exists(), "no mark without fsync");

        let store = SledStore::open(opts(&dir)).unwrap();
        assert_eq!(store.revision(), rv + 1);
        assert_eq!(high_water::read(&dir, HWM_FILE), Some(rv + 1));
        store.shutdown().unwrap();
        drop(store);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
