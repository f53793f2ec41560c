//! Zero allocations on the control thread once its loop runs: a counting global allocator with a
//! per-thread counter, around thousands of ticks of the real control-core arrival servo
//! ([`runtime::synthetic::ServoOnPlant`]), fed through the real exchange, including watchdog
//! (safe-output) ticks.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::time::Duration;

use control_core::servo::JointState;
use runtime::synthetic::ServoOnPlant;
use runtime::{Controller, PeriodicBuilder, StateSample, TickInfo, channels};

thread_local! {
    /// Allocations made by this thread (const-initialised, no destructor: using it never
    /// allocates).
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
}

struct CountingAllocator;

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

#[global_allocator]
static GLOBAL: CountingAllocator = CountingAllocator;

fn allocations_on_this_thread() -> u64 {
    ALLOCATIONS.with(Cell::get)
}

/// Wraps a controller and records how many allocations the control thread made from the start
/// of its first tick to the start of its latest one: whole loop iterations, runtime included.
struct AllocationProbe<C> {
    inner: C,
    at_first_tick: Option<u64>,
    since_first_tick: u64,
}

impl<C> AllocationProbe<C> {
    fn probe(&mut self) {
        let now = allocations_on_this_thread();
        match self.at_first_tick {
            None => self.at_first_tick = Some(now),
            Some(first) => self.since_first_tick = now - first,
        }
    }
}

impl<C: Controller> Controller for AllocationProbe<C> {
    type State = C::State;
    type Output = C::Output;
    fn tick(&mut self, tick: &TickInfo, state: Option<StateSample<C::State>>) -> C::Output {
        self.probe();
        self.inner.tick(tick, state)
    }
    fn safe_output(&mut self, tick: &TickInfo, last: Option<StateSample<C::State>>) -> C::Output {
        self.probe();
        self.inner.safe_output(tick, last)
    }
}

#[test]
fn control_thread_never_allocates_after_start() {
    const TICKS: u64 = 5_000;
    const FEED_UNTIL: u64 = 3_500;
    let rate_hz = 2_000.0;
    let probe = AllocationProbe {
        inner: ServoOnPlant::new(1.0 / rate_hz).expect("valid servo config"),
        at_first_tick: None,
        since_first_tick: 0,
    };
    let (mut io, ctl) = channels::<JointState, f64>(256);
    let rt = PeriodicBuilder::from_rate_hz(rate_hz)
        .expect("valid rate")
        .priority(80)
        .watchdog_ticks(10)
        .max_ticks(TICKS)
        .log_capacity(1_000) // smaller than the run: the ring wraps, and must not allocate
        .spawn(probe, ctl)
        .expect("control thread starts");
    // The I/O side: a moving joint, one state per torque received, until FEED_UNTIL.
    let mut received = 0_u64;
    while !rt.is_finished() || !io.outputs.is_abandoned() {
        let Some(out) = io.outputs.recv_timeout(Duration::from_millis(50)) else {
            if rt.is_finished() {
                break;
            }
            continue;
        };
        received += 1;
        if out.release_index < FEED_UNTIL {
            let t = out.release_index as f64 / rate_hz;
            io.states.publish(JointState {
                position_rad: 0.3 * (2.0 * t).sin(),
                velocity_rad_s: 0.6 * (2.0 * t).cos(),
            });
        }
    }
    let outcome = rt.join().expect("control thread ends cleanly");
    let probe = outcome.controller;
    let counts = probe.inner.counts();
    eprintln!(
        "ticks {} received {received} servo {counts:?}",
        outcome.report.counters.ticks
    );
    assert_eq!(outcome.report.counters.ticks, TICKS);
    assert!(probe.at_first_tick.is_some());
    assert!(
        counts.external_states > 1_000,
        "the exchange was exercised: {counts:?}"
    );
    assert!(
        counts.safe_outputs > 0,
        "the safe path was exercised: {counts:?}"
    );
    assert!(counts.plans > 0);
    assert_eq!(outcome.log.overwritten(), TICKS - 1_000);
    assert_eq!(
        probe.since_first_tick, 0,
        "the control thread allocated {} times after its first tick",
        probe.since_first_tick
    );
}
