//! The sled engine: objects under `o\0<resource>\0<namespace>\0<name>`, the revision counter
//! under `m\0rv`, all in one tree so a batch of writes and its counter commit atomically. A
//! commit is sled's `apply_batch`, then sled's flush, then `fdatasync` of sled's log file.
//!
//! The rest of the store (the in-memory index, the one writer thread, group commit, events) is
//! [`super::local`]'s, shared with the [`super::wal`] engine.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::local::{Change, Disk, LocalStore};
use super::{Result, StoreError};

pub use super::local::StoreOptions;

/// The store on sled (`turtles serve --store sled`, the default).
pub type SledStore = LocalStore<SledDisk>;

const RV_KEY: &[u8] = b"m\0rv";
const SLED_CACHE_BYTES: u64 = 32 * 1024 * 1024;

/// How long [`open_db`] waits for sled's lock on the data dir. A store shut down in this process
/// releases it only when sled's own background threads have let go of the database, a moment
/// after the last handle is dropped; another process holding it is reported once this is over.
const LOCK_WAIT: Duration = Duration::from_secs(5);

fn open_db(dir: &Path) -> Result<sled::Db> {
    let deadline = std::time::Instant::now() + LOCK_WAIT;
    loop {
        let opened = sled::Config::new()
            .path(dir)
            .mode(sled::Mode::HighThroughput)
            // Reads are served from the in-memory index; sled's page cache only helps writes.
            .cache_capacity(SLED_CACHE_BYTES)
            .flush_every_ms(None)
            .open();
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
        for entry in db.scan_prefix(b"o\0") {
            let (k, v) = entry?;
            each(&k, bytes::Bytes::from(v.to_vec()));
        }
        let mut disk = SledDisk {
            db: Some(db),
            log: None,
            dir: opts.dir.clone(),
            fsync: opts.fsync,
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
        Ok(())
    }

    /// Reopen sled (it refuses everything once a write failed) and check that a write reaches
    /// the disk again. sled commits a batch atomically, so the failed one is either wholly on
    /// disk or not at all.
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
        Ok(disk_rv)
    }

    fn close(&mut self) -> Result<()> {
        if let Some(db) = &self.db {
            db.flush()?;
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
