//! The host's memory allocator: mimalloc, with each thread counting the bytes it holds (what it
//! allocated minus what it freed), so work that runs on one thread — a CEL evaluation — can be
//! bounded in the memory it takes, which a loop over a tenant's data could otherwise grow
//! without limit. The binary installs it (`main.rs`); without it (the library's unit tests)
//! [`held`] stays 0 and such bounds never trip.

use std::alloc::{GlobalAlloc, Layout};
use std::cell::Cell;

/// mimalloc, counting per thread.
pub struct Counting;

thread_local! {
    /// Bytes this thread allocated minus bytes it freed (negative when it frees what others
    /// allocated).
    static HELD: Cell<i64> = const { Cell::new(0) };
}

fn add(bytes: usize, sign: i64) {
    let n = i64::try_from(bytes).unwrap_or(i64::MAX);
    // `try_with`: nothing to count while the thread's locals are being torn down.
    let _ = HELD.try_with(|h| h.set(h.get().wrapping_add(n.wrapping_mul(sign))));
}

/// What this thread holds now, in bytes, relative to an arbitrary zero: compare two readings.
pub fn held() -> i64 {
    HELD.try_with(Cell::get).unwrap_or(0)
}

// SAFETY: every call is passed on unchanged to mimalloc, which upholds `GlobalAlloc`'s
// contract; the counting touches only a thread-local `Cell` (const-initialized, no destructor,
// so it never allocates).
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        add(layout.size(), 1);
        // SAFETY: the caller's layout, as `GlobalAlloc::alloc` requires.
        unsafe { mimalloc::MiMalloc.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        add(layout.size(), 1);
        // SAFETY: as `alloc`.
        unsafe { mimalloc::MiMalloc.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        add(layout.size(), -1);
        // SAFETY: `ptr` was allocated by this allocator with `layout`, as the caller promises.
        unsafe { mimalloc::MiMalloc.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        add(new_size, 1);
        add(layout.size(), -1);
        // SAFETY: as `GlobalAlloc::realloc` requires, passed on.
        unsafe { mimalloc::MiMalloc.realloc(ptr, layout, new_size) }
    }
}
