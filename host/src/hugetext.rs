//! The host's own code on transparent huge pages.
//!
//! A reconcile that follows API work on the same cores finds little of its path in the TLB: the
//! host's and wasmtime's code it runs is spread over many 4 KiB pages of a 38 MB text segment, and
//! in a VM every TLB miss is a two-dimensional page walk. [`remap`] copies the 2 MiB-aligned part
//! of the executable's text into anonymous memory backed by transparent huge pages and moves that
//! copy over the original (`mremap` replaces the mapping in one step; the bytes are the same, so
//! code running during the switch, this function's own included, does not notice). Node's
//! `--use-largepages` and Intel's iodlr do the same. Measured in `docs/benchmarks.md`, "The host's
//! code on huge pages".
//!
//! It runs once, at start, before other threads exist. It costs the copied text in resident
//! memory (file-backed text is shared and only what runs is resident). Any failure leaves the
//! original mapping in place; the host runs the same either way.

use std::fmt;

/// Why the text stayed on 4 KiB pages.
#[derive(Debug, thiserror::Error)]
pub enum HugeTextError {
    #[error("not supported on this platform")]
    Unsupported,
    #[error("reading /proc/self/maps: {0}")]
    Maps(#[source] std::io::Error),
    #[error("the executable's text mapping was not found")]
    NotFound,
    #[error("the text segment has no whole 2 MiB page")]
    TooSmall,
    #[error("{call} failed: {source}")]
    Sys {
        call: &'static str,
        #[source]
        source: std::io::Error,
    },
}

/// What [`remap`] moved.
#[derive(Debug, Clone, Copy)]
pub struct Remapped {
    /// Bytes of code moved (whole 2 MiB pages).
    pub bytes: usize,
    /// Of them, how many the kernel backs with huge pages (`AnonHugePages` of the mapping).
    pub huge_bytes: usize,
}

impl fmt::Display for Remapped {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} MiB of code moved, {} MiB on huge pages",
            self.bytes >> 20,
            self.huge_bytes >> 20
        )
    }
}

#[cfg(target_os = "linux")]
const HUGE: usize = 2 << 20;

/// The executable's code mappings: `(start, end, exec)`.
/// The executable is the file whose code holds this function.
#[cfg(target_os = "linux")]
fn file_mappings() -> Result<Vec<(usize, usize, bool)>, HugeTextError> {
    let here = remap as *const () as usize;
    let maps = std::fs::read_to_string("/proc/self/maps").map_err(HugeTextError::Maps)?;
    // start, end, perms, path
    let parsed: Vec<(usize, usize, &str, &str)> = maps
        .lines()
        .filter_map(|line| {
            let mut fields = line.split_whitespace();
            let (a, b) = fields.next()?.split_once('-')?;
            let perms = fields.next()?;
            let path = fields.nth(3)?;
            let a = usize::from_str_radix(a, 16).ok()?;
            let b = usize::from_str_radix(b, 16).ok()?;
            Some((a, b, perms, path))
        })
        .collect();
    let (_, _, _, exe) = parsed
        .iter()
        .find(|(a, b, perms, _)| perms.starts_with("r-x") && (*a..*b).contains(&here))
        .ok_or(HugeTextError::NotFound)?;
    Ok(parsed
        .iter()
        // Code only: the read-only data (another 10 MiB of a release build) gained ~4% of a
        // cold call's time in `cold_entry_cost` for ~10 MiB more resident memory.
        .filter(|(_, _, perms, path)| path == exe && *perms == "r-xp")
        .map(|(a, b, perms, _)| (*a, *b, perms.starts_with("r-x")))
        .collect())
}

/// `/proc/self/smaps`' `AnonHugePages` for the mapping starting at `start`, in bytes.
#[cfg(target_os = "linux")]
fn anon_huge_bytes(start: usize) -> usize {
    let Ok(smaps) = std::fs::read_to_string("/proc/self/smaps") else {
        return 0;
    };
    let mut inside = false;
    for line in smaps.lines() {
        if let Some((range, _)) = line.split_once(' ') {
            if let Some((a, _)) = range.split_once('-') {
                if a.chars().all(|c| c.is_ascii_hexdigit()) && !a.is_empty() {
                    inside = usize::from_str_radix(a, 16).ok() == Some(start);
                    continue;
                }
            }
        }
        if inside {
            if let Some(v) = line.strip_prefix("AnonHugePages:") {
                let kb: usize = v.trim().trim_end_matches("kB").trim().parse().unwrap_or(0);
                return kb * 1024;
            }
        }
    }
    0
}

#[cfg(target_os = "linux")]
fn sys(call: &'static str) -> HugeTextError {
    HugeTextError::Sys {
        call,
        source: std::io::Error::last_os_error(),
    }
}

/// Move the 2 MiB-aligned part of the executable's code onto transparent huge pages. Call it once, before any other thread starts.
#[cfg(target_os = "linux")]
pub fn remap() -> Result<Remapped, HugeTextError> {
    let ranges: Vec<(usize, usize, bool)> = file_mappings()?
        .into_iter()
        .map(|(a, b, exec)| (a.next_multiple_of(HUGE), b & !(HUGE - 1), exec))
        .filter(|(start, end, _)| end > start)
        .collect();
    if !ranges.iter().any(|(_, _, exec)| *exec) {
        return Err(HugeTextError::TooSmall);
    }
    // The allocator may have turned transparent huge pages off for the whole process (mimalloc's
    // `no_thp`, so its own segments stay small): on for the copy, then back as it was. Pages
    // faulted in meanwhile stay huge.
    // SAFETY: prctl with these options reads and writes only the process's THP flag.
    let was_disabled = unsafe { libc::prctl(libc::PR_GET_THP_DISABLE, 0, 0, 0, 0) };
    if was_disabled > 0 {
        // SAFETY: as above.
        unsafe { libc::prctl(libc::PR_SET_THP_DISABLE, 0, 0, 0, 0) };
    }
    let mut moved = Remapped {
        bytes: 0,
        huge_bytes: 0,
    };
    let mut result = Ok(());
    for &(start, end, exec) in &ranges {
        result = copy_over(start, end - start, exec);
        if result.is_err() {
            break;
        }
        moved.bytes += end - start;
    }
    if was_disabled > 0 {
        // SAFETY: as above.
        unsafe { libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0) };
    }
    result?;
    for &(start, _, _) in &ranges {
        moved.huge_bytes += anon_huge_bytes(start);
    }
    Ok(moved)
}

#[cfg(target_os = "linux")]
fn copy_over(start: usize, len: usize, exec: bool) -> Result<(), HugeTextError> {
    use std::ptr;
    // A 2 MiB-aligned anonymous region (so the huge pages move whole when it is moved).
    // SAFETY: a fresh private anonymous mapping; nothing else refers to it.
    let raw = unsafe {
        libc::mmap(
            ptr::null_mut(),
            len + HUGE,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if raw == libc::MAP_FAILED {
        return Err(sys("mmap"));
    }
    let raw = raw as usize;
    let new = raw.next_multiple_of(HUGE);
    // SAFETY: both trims lie inside the mapping made above and outside [new, new + len).
    unsafe {
        if new > raw {
            libc::munmap(raw as *mut libc::c_void, new - raw);
        }
        let tail = raw + len + HUGE - (new + len);
        if tail > 0 {
            libc::munmap((new + len) as *mut libc::c_void, tail);
        }
    }
    let unmap = || {
        // SAFETY: the copy is ours and unused.
        unsafe { libc::munmap(new as *mut libc::c_void, len) };
    };
    // SAFETY: advice on our own mapping.
    if unsafe { libc::madvise(new as *mut libc::c_void, len, libc::MADV_HUGEPAGE) } != 0 {
        let e = sys("madvise");
        unmap();
        return Err(e);
    }
    // SAFETY: [start, start + len) is mapped readable (part of a mapping of the executable found above);
    // [new, new + len) is our fresh writable mapping; they do not overlap.
    unsafe { ptr::copy_nonoverlapping(start as *const u8, new as *mut u8, len) };
    let prot = if exec {
        libc::PROT_READ | libc::PROT_EXEC
    } else {
        libc::PROT_READ
    };
    // SAFETY: our own mapping.
    if unsafe { libc::mprotect(new as *mut libc::c_void, len, prot) } != 0 {
        let e = sys("mprotect");
        unmap();
        return Err(e);
    }
    // SAFETY: replaces the pages at `start` with byte-identical ones in one step; code that
    // runs across the switch (this function's return path included) reads the same instructions.
    let moved = unsafe {
        libc::mremap(
            new as *mut libc::c_void,
            len,
            len,
            libc::MREMAP_MAYMOVE | libc::MREMAP_FIXED,
            start as *mut libc::c_void,
        )
    };
    if moved == libc::MAP_FAILED {
        let e = sys("mremap");
        unmap();
        return Err(e);
    }
    Ok(())
}

#[cfg(not(target_os = "linux"))]
pub fn remap() -> Result<Remapped, HugeTextError> {
    Err(HugeTextError::Unsupported)
}
