//! The high-water mark of a local engine ([`super::wal`]'s `wal.hwm`, [`super::sled_store`]'s
//! `sled.hwm`): a revision every write up to which was acknowledged, kept in a small file in the
//! store's directory beside the engine's own files.
//!
//! The file is `rv: u64le, crc32: u32le` of the rv, rewritten in place (and synced) at most once
//! a second after a commit ([`HighWater::committed`]) and at a stop ([`HighWater::stopped`]), and
//! only with fsync on: without it nothing is promised, and a mark left by an earlier run is
//! deleted rather than kept stale. A mark that is missing or not whole (a crc that does not
//! match) is no mark.
//!
//! At open ([`start`]) an engine that recovered a lower revision than the mark is missing
//! acknowledged writes. No crash does that (a commit is durable before it is acknowledged, and
//! the mark is written after it); damage does: a log file cut short or zeroed, a segment
//! deleted, a flipped byte from which sled silently recovers an older state. The store refuses
//! to start, with a message naming both revisions; deleting the mark's file starts it anyway
//! with what is left (and a new mark at that revision).
//!
//! The cost is one more `fdatasync` a second at most, under writes, and one at a stop.

use std::fs::{File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::time::{Duration, Instant};

use super::{Result, StoreError};

/// The most often the high-water mark is rewritten.
const EVERY: Duration = Duration::from_secs(1);

/// An engine's mark: its file, and the words of the refusal at open
/// (`{holder} in {dir} ends at revision ..., {short} has lost them ({damage}) ...`).
pub(super) struct Mark {
    /// The mark's file in the store's directory (`wal.hwm`, `sled.hwm`).
    pub file: &'static str,
    /// What holds the engine's writes: "the store's log".
    pub holder: &'static str,
    /// The same, short: "the log".
    pub short: &'static str,
    /// How it can have lost acknowledged writes: "a file cut short, zeroed or deleted".
    pub damage: &'static str,
}

/// The revision in `dir`'s mark file `file`, if the file is there and whole.
pub(super) fn read(dir: &Path, file: &str) -> Option<u64> {
    let b = std::fs::read(dir.join(file)).ok()?;
    let rv: [u8; 8] = b.get(..8)?.try_into().ok()?;
    let crc: [u8; 4] = b.get(8..12)?.try_into().ok()?;
    (crc32fast::hash(&rv) == u32::from_le_bytes(crc)).then(|| u64::from_le_bytes(rv))
}

/// At open, once the engine knows the revision `rv` it recovered (and holds the directory's
/// lock). With fsync on: refuse a store that holds less than the mark says was acknowledged,
/// else write the mark at `rv` and hand it back to be kept up to date. With fsync off: delete
/// the mark, and `None`.
pub(super) fn start(dir: &Path, mark: &Mark, fsync: bool, rv: u64) -> Result<Option<HighWater>> {
    if !fsync {
        return match std::fs::remove_file(dir.join(mark.file)) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e.into()),
            _ => Ok(None),
        };
    }
    if let Some(hwm) = read(dir, mark.file).filter(|h| *h > rv) {
        return Err(StoreError::Unavailable(format!(
            "{holder} in {dir} ends at revision {rv}, but writes up to revision {hwm} were acknowledged ({file}): {short} has lost them ({damage}); refusing to start rather than serve a history with a hole in it. To start anyway, with what is left, delete {file}",
            holder = mark.holder,
            dir = dir.display(),
            file = mark.file,
            short = mark.short,
            damage = mark.damage,
        )));
    }
    Ok(Some(HighWater::open(dir, mark.file, rv)?))
}

/// The high-water mark, kept up to date by the store's writer.
pub(super) struct HighWater {
    file: File,
    written: Instant,
    rv: u64,
}

impl HighWater {
    /// Open (or create) `dir`'s mark file `file`, write `rv` to it and make it durable, name
    /// included.
    pub(super) fn open(dir: &Path, file: &str, rv: u64) -> std::io::Result<Self> {
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .read(true)
            .write(true)
            .open(dir.join(file))?;
        let mut hw = Self {
            file,
            written: Instant::now(),
            rv: 0,
        };
        hw.write(rv)?;
        File::open(dir)?.sync_all()?;
        Ok(hw)
    }

    fn write(&mut self, rv: u64) -> std::io::Result<()> {
        let mut b = [0u8; 12];
        b[..8].copy_from_slice(&rv.to_le_bytes());
        b[8..].copy_from_slice(&crc32fast::hash(&rv.to_le_bytes()).to_le_bytes());
        self.file.write_all_at(&b, 0)?;
        self.file.sync_data()?;
        self.rv = rv;
        self.written = Instant::now();
        Ok(())
    }

    /// After a durable commit of revisions up to `rv`: rewritten if the last write is a second
    /// old. A failure is logged, not returned: the commit stands, and the mark only lags.
    pub(super) fn committed(&mut self, rv: u64) {
        if rv > self.rv && self.written.elapsed() >= EVERY {
            if let Err(e) = self.write(rv) {
                tracing::warn!(error = %e, "the store's high-water mark could not be written");
            }
        }
    }

    /// At a stop, everything up to `rv` durable: the mark is rewritten at `rv` (never lowered).
    pub(super) fn stopped(&mut self, rv: u64) -> std::io::Result<()> {
        self.write(rv.max(self.rv))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MARK: Mark = Mark {
        file: "test.hwm",
        holder: "the store's test file",
        short: "the test",
        damage: "a test",
    };

    #[test]
    fn a_mark_reads_back_and_a_damaged_one_is_no_mark() {
        let dir = crate::store::testing::temp_dir("hwm");
        assert_eq!(read(&dir, MARK.file), None);
        let mut hw = start(&dir, &MARK, true, 7).unwrap().unwrap();
        assert_eq!(read(&dir, MARK.file), Some(7));
        hw.stopped(9).unwrap();
        assert_eq!(read(&dir, MARK.file), Some(9));
        hw.stopped(3).unwrap();
        assert_eq!(
            read(&dir, MARK.file),
            Some(9),
            "a stop never lowers the mark"
        );
        drop(hw);
        let mut b = std::fs::read(dir.join(MARK.file)).unwrap();
        b[0] ^= 1;
        std::fs::write(dir.join(MARK.file), &b).unwrap();
        assert_eq!(read(&dir, MARK.file), None);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_store_below_its_mark_is_refused_and_without_fsync_the_mark_goes() {
        let dir = crate::store::testing::temp_dir("hwm");
        HighWater::open(&dir, MARK.file, 300).unwrap();
        let Err(err) = start(&dir, &MARK, true, 84) else {
            panic!("a store below its mark started");
        };
        assert!(
            matches!(&err, StoreError::Unavailable(m) if m.contains("ends at revision 84, but writes up to revision 300 were acknowledged (test.hwm): the test has lost them (a test)") && m.ends_with("delete test.hwm")),
            "{err}"
        );
        assert!(start(&dir, &MARK, true, 300).unwrap().is_some());
        assert!(start(&dir, &MARK, false, 0).unwrap().is_none());
        assert!(!dir.join(MARK.file).exists());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
