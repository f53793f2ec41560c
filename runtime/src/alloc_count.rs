//! A counting global allocator for allocation tests: it forwards every call to
//! [`std::alloc::System`] unchanged and counts, per thread, the allocations (and reallocations)
//! made. A test binary installs it with
//! `#[global_allocator] static A: runtime::alloc_count::CountingAllocator = runtime::alloc_count::CountingAllocator;`
//! and reads [`allocations_on_this_thread`] around the code under test (on the thread that runs
//! it). Counting touches only a const-initialised thread-local with no destructor, so counting
//! itself never allocates, and never panics (not even while thread-locals are torn down).

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

thread_local! {
    /// Allocations made by this thread.
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
}

/// The allocator: `System`'s, counting per thread.
#[derive(Debug, Clone, Copy, Default)]
pub struct CountingAllocator;

fn count_one() {
    // try_with: never panics, even while thread-locals are being torn down.
    let _ = ALLOCATIONS.try_with(|c| c.set(c.get() + 1));
}

// SAFETY: every method forwards to `System` with the caller's arguments unchanged, so the
// GlobalAlloc contract is System's; counting touches only a thread-local Cell.
unsafe impl GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count_one();
        // SAFETY: forwarded unchanged; the caller upholds `alloc`'s contract.
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        count_one();
        // SAFETY: forwarded unchanged; the caller upholds `alloc_zeroed`'s contract.
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count_one();
        // SAFETY: forwarded unchanged; the caller upholds `realloc`'s contract.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded unchanged; `ptr` came from this allocator, i.e. from System.
        unsafe { System.dealloc(ptr, layout) }
    }
}

/// Allocations this thread has made through [`CountingAllocator`] so far (0 if it is not the
/// global allocator).
pub fn allocations_on_this_thread() -> u64 {
    ALLOCATIONS.with(Cell::get)
}
