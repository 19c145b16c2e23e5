//! Handing freed heap back to the OS after each analysis pass.
//!
//! A pass builds its result (findings, diagnoses, node states, the dashboard's page) and
//! lets go of the previous one. glibc's allocator keeps what is freed in its heaps (one
//! per thread that allocates: the watch workers, the applier, the blocking pool) and by
//! itself returns only what lies at the top of a heap. The previous pass's memory is
//! scattered through the heaps, so without a trim `kelp serve`'s RSS holds the high
//! water mark of every heap for good. `malloc_trim(0)` gives the free pages of every heap
//! back; pages still partly used stay. Elsewhere (musl, macOS) this does nothing.

/// Return the free pages of the allocator's heaps to the OS (glibc only).
pub fn release_freed() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim has no preconditions: it takes each heap's lock itself and only
    // advises the kernel about pages no allocation holds.
    unsafe {
        libc::malloc_trim(0);
    }
}
