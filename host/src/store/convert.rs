//! `turtles convert --to wal`: move a data dir's store from the sled engine to the wal engine,
//! offline, keeping every object's bytes and the revision counter.
//!
//! Every stored object (including ones that cannot be parsed, which the host sets aside at
//! start) is read from sled and written into a new directory beside the store as one wal
//! snapshot at sled's revision, which is then opened as a wal store to check that it gives back
//! as many objects at the same revision. Only then do the two directories trade places, in one
//! atomic `renameat2(RENAME_EXCHANGE)`: a crash before it leaves the sled store in place, a crash
//! after it leaves the wal store in place (and the sled store in `store.wal-new`, where a crash
//! before the last rename leaves it). sled stays open, holding its lock, until the swap is done,
//! so no host can start on the sled store meanwhile. The sled store is kept beside the new one
//! (`store.sled`) until its owner deletes it.

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use bytes::Bytes;

use super::local::{Disk, StoreOptions};
use super::sled_store::{holds_sled, SledDisk};
use super::wal::{self, WalDisk};
use super::StoreError;

#[derive(Debug, thiserror::Error)]
pub enum ConvertError {
    #[error("{0} does not hold a store of the sled engine: nothing to convert")]
    NotSled(PathBuf),
    #[error("{0} already exists (an earlier conversion's sled store?): move it away first")]
    BackupExists(PathBuf),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("{what}: {source}")]
    Io {
        what: String,
        source: std::io::Error,
    },
    #[error("the converted store reads back {got} objects at revision {got_rv}, not {want} at {want_rv}; the sled store is unchanged")]
    Mismatch {
        want: usize,
        want_rv: u64,
        got: usize,
        got_rv: u64,
    },
}

/// What a conversion did.
#[derive(Debug)]
pub struct Converted {
    pub objects: usize,
    pub revision: u64,
    /// Where the sled store now is.
    pub kept: PathBuf,
}

fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> ConvertError {
    let what = what.into();
    move |source| ConvertError::Io { what, source }
}

/// Convert the sled store in `data_dir/store` to the wal engine (the host must be stopped: the
/// store's own lock refuses a running one).
pub fn sled_to_wal(data_dir: &Path) -> Result<Converted, ConvertError> {
    let store = data_dir.join("store");
    if !holds_sled(&store) {
        return Err(ConvertError::NotSled(store));
    }
    let kept = data_dir.join("store.sled");
    if kept.exists() {
        return Err(ConvertError::BackupExists(kept));
    }
    let mut objects: Vec<(Vec<u8>, Bytes)> = Vec::new();
    // Open until the directories have traded places: its lock keeps a host from starting on the
    // sled store meanwhile (and writing what the swap would then hide). Its files follow the
    // rename.
    let (mut sled, revision) =
        SledDisk::open(&StoreOptions::in_dir(store.clone()), &mut |k, v| {
            objects.push((k.to_vec(), v))
        })?;
    // A directory of ours left by a conversion that stopped before the exchange.
    let fresh = data_dir.join("store.wal-new");
    if fresh.exists() {
        std::fs::remove_dir_all(&fresh).map_err(io(format!("removing {}", fresh.display())))?;
    }
    std::fs::create_dir_all(&fresh).map_err(io(format!("creating {}", fresh.display())))?;
    wal::write_raw_snapshot(&fresh, revision, &objects)
        .map_err(io(format!("writing the snapshot in {}", fresh.display())))?;
    let mut read = 0usize;
    let (mut check, got_rv) =
        WalDisk::open(&StoreOptions::in_dir(fresh.clone()), &mut |_, _| read += 1)?;
    check.close()?;
    drop(check);
    if read != objects.len() || got_rv != revision {
        return Err(ConvertError::Mismatch {
            want: objects.len(),
            want_rv: revision,
            got: read,
            got_rv,
        });
    }
    // The new directory's entry is durable before it trades places.
    sync_dir(data_dir).map_err(io(format!("syncing {}", data_dir.display())))?;
    exchange(&store, &fresh).map_err(io(format!(
        "exchanging {} and {}",
        store.display(),
        fresh.display()
    )))?;
    // Done: the wal store is in place. What follows only names the sled store and cannot undo
    // that, so its failures are told, not returned.
    let kept = match std::fs::rename(&fresh, &kept) {
        Ok(()) => kept,
        Err(e) => {
            tracing::warn!(error = %e, from = %fresh.display(), to = %kept.display(), "the sled store could not be renamed: it stays where it is");
            fresh
        }
    };
    if let Err(e) = sync_dir(data_dir) {
        tracing::warn!(error = %e, dir = %data_dir.display(), "syncing the data dir after the conversion");
    }
    if let Err(e) = sled.close() {
        tracing::warn!(error = %e, "closing the sled store after the conversion");
    }
    Ok(Converted {
        objects: objects.len(),
        revision,
        kept,
    })
}

fn sync_dir(dir: &Path) -> std::io::Result<()> {
    std::fs::File::open(dir)?.sync_all()
}

/// Swap two directories atomically (both must exist).
fn exchange(a: &Path, b: &Path) -> std::io::Result<()> {
    let c = |p: &Path| CString::new(p.as_os_str().as_bytes()).map_err(std::io::Error::other);
    let (a, b) = (c(a)?, c(b)?);
    // SAFETY: both paths are NUL-terminated strings that outlive the call; AT_FDCWD resolves
    // them as given (absolute or relative to the working directory).
    let r = unsafe {
        libc::renameat2(
            libc::AT_FDCWD,
            a.as_ptr(),
            libc::AT_FDCWD,
            b.as_ptr(),
            libc::RENAME_EXCHANGE,
        )
    };
    if r == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}
