//! The process's allocator: mimalloc, set to hand memory back to the OS as soon as it is
//! free. The binaries install it (`#[global_allocator]`), as do the benchmarks that measure
//! what serve does; the library's tests keep the system allocator.
//!
//! `kelp serve` runs for weeks while the cluster's objects come and go. Under glibc's
//! allocator its model's long-lived objects ended up scattered through heaps full of what
//! the watch decoding and each analysis pass had freed, and those heaps could not shrink:
//! at 1,000 nodes and 30,000 pods, 30 MB in use held 125 MB of heap, trimmed or not
//! (`bench/live.md`). mimalloc keeps each size class on pages of its own; with arenas
//! committed as they are used and pages purged (decommitted) the moment they are empty,
//! the same serve holds about half the RSS, for less CPU.
//!
//! The settings are mimalloc's defaults for this process, not overrides: its `MIMALLOC_*`
//! environment variables still win.

use std::alloc::{GlobalAlloc, Layout};
use std::sync::atomic::{AtomicBool, Ordering};

/// mimalloc, with the defaults [`configure`] sets before its first allocation.
pub struct Heap;

/// mimalloc's option numbers (`mi_option_e` in mimalloc.h, v3); libmimalloc-sys names only
/// some of them.
const ARENA_EAGER_COMMIT: libmimalloc_sys::mi_option_t = 4;
const PURGE_DECOMMITS: libmimalloc_sys::mi_option_t = 5;
const PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

static CONFIGURED: AtomicBool = AtomicBool::new(false);

/// Set this process's defaults, once, before mimalloc reads its options (at its first
/// allocation, which is the process's first).
fn configure() {
    if CONFIGURED.load(Ordering::Relaxed) || CONFIGURED.swap(true, Ordering::Relaxed) {
        return;
    }
    // SAFETY: these only set the defaults of options mimalloc has not read yet; the
    // process's first allocation happens before any other thread exists.
    unsafe {
        // Commit an arena's memory as it is used, not all at once.
        libmimalloc_sys::mi_option_set_default(ARENA_EAGER_COMMIT, 0);
        // Decommit purged pages (their RSS goes), and purge as soon as a page is empty.
        libmimalloc_sys::mi_option_set_default(PURGE_DECOMMITS, 1);
        libmimalloc_sys::mi_option_set_default(PURGE_DELAY, 0);
    }
}

/// For a command that runs once and exits (`doctor`, `why`, `snapshot`, ...): freed pages
/// are purged after mimalloc's usual delay, not at once. Such a command reads a dump in one
/// go and frees as it goes; handing each empty page back at once and faulting it in again
/// was a tenth of the CPU it spent in the kernel. `MIMALLOC_PURGE_DELAY` still wins.
pub fn one_shot() {
    // mimalloc v3's own default.
    const MIMALLOC_DEFAULT_DELAY_MS: std::ffi::c_long = 1000;
    if std::env::var_os("MIMALLOC_PURGE_DELAY").is_none() {
        // SAFETY: mimalloc's options may be set at any time; it reads them as it purges.
        unsafe { libmimalloc_sys::mi_option_set(PURGE_DELAY, MIMALLOC_DEFAULT_DELAY_MS) };
    }
}

// SAFETY: every call is mimalloc's own, whose GlobalAlloc meets the trait's contract.
unsafe impl GlobalAlloc for Heap {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        configure();
        unsafe { mimalloc::MiMalloc.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        configure();
        unsafe { mimalloc::MiMalloc.alloc_zeroed(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { mimalloc::MiMalloc.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        unsafe { mimalloc::MiMalloc.realloc(ptr, layout, new_size) }
    }
}
