//! Time sources for the periodic thread.
//!
//! The scheduling logic ([`crate::periodic`], [`crate::schedule`]) only ever asks a [`Clock`] for
//! "now" and to "sleep until"; it never touches the OS clock itself. [`MonotonicClock`] is the real
//! one (`CLOCK_MONOTONIC`, absolute `clock_nanosleep`); [`ManualClock`] advances only when told, so
//! release times, overrun skipping and statistics are unit-tested without sleeping.
//!
//! Must never: allocate, block on anything but the requested sleep, or panic. Time is integer
//! nanoseconds (`u64`, ~584 years of range); arithmetic saturates instead of wrapping.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// A monotonic time source that can sleep until an absolute instant.
pub trait Clock {
    /// Current time in nanoseconds on this clock's monotonic timeline.
    fn now_ns(&mut self) -> u64;
    /// Sleeps until `release_ns` on this clock's timeline (returns at once if it has passed).
    fn sleep_until_ns(&mut self, release_ns: u64);
}

/// The OS clock: `CLOCK_MONOTONIC`, read through the vDSO, slept on with
/// `clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME)` so wake-ups never accumulate drift.
#[derive(Clone, Copy, Debug, Default)]
pub struct MonotonicClock;

impl MonotonicClock {
    /// `CLOCK_MONOTONIC` now, in nanoseconds.
    pub fn now() -> u64 {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: `ts` is a valid, writable timespec; CLOCK_MONOTONIC always exists on Linux, so the
        // call cannot fail and only writes `ts`.
        unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
        timespec_to_ns(&ts)
    }
}

fn timespec_to_ns(ts: &libc::timespec) -> u64 {
    let secs = u64::try_from(ts.tv_sec).unwrap_or(0);
    let nanos = u64::try_from(ts.tv_nsec).unwrap_or(0);
    secs.saturating_mul(1_000_000_000).saturating_add(nanos)
}

fn ns_to_timespec(ns: u64) -> libc::timespec {
    libc::timespec {
        tv_sec: libc::time_t::try_from(ns / 1_000_000_000).unwrap_or(libc::time_t::MAX),
        // < 1e9, always fits a c_long.
        tv_nsec: libc::c_long::try_from(ns % 1_000_000_000).unwrap_or(0),
    }
}

impl Clock for MonotonicClock {
    fn now_ns(&mut self) -> u64 {
        Self::now()
    }

    fn sleep_until_ns(&mut self, release_ns: u64) {
        let ts = ns_to_timespec(release_ns);
        loop {
            // SAFETY: `ts` is a valid timespec that outlives the call; with TIMER_ABSTIME the
            // remaining-time pointer is unused, so passing null is allowed.
            let rc = unsafe {
                libc::clock_nanosleep(
                    libc::CLOCK_MONOTONIC,
                    libc::TIMER_ABSTIME,
                    &ts,
                    std::ptr::null_mut(),
                )
            };
            // Interrupted by a signal: sleep again to the same absolute instant. Any other error
            // (EINVAL cannot happen for a normalised timespec) returns rather than spinning.
            if rc != libc::EINTR {
                return;
            }
        }
    }
}

/// A clock that moves only when told: for tests of the scheduling logic, no sleeping.
///
/// Clones share one timeline, so a test controller can hold a clone and advance time to model its
/// compute time while the loop holds another. `sleep_until_ns(t)` jumps to `max(now, t)` plus the
/// configured wake delay (the model of wake-up latency).
#[derive(Clone, Debug, Default)]
pub struct ManualClock {
    now: Arc<AtomicU64>,
    wake_delay: Arc<AtomicU64>,
}

impl ManualClock {
    /// A clock at `start_ns` with zero wake delay.
    pub fn new(start_ns: u64) -> Self {
        Self {
            now: Arc::new(AtomicU64::new(start_ns)),
            wake_delay: Arc::new(AtomicU64::new(0)),
        }
    }

    /// Current time (same as [`Clock::now_ns`], without needing `&mut`).
    pub fn get_ns(&self) -> u64 {
        self.now.load(Ordering::SeqCst)
    }

    /// Moves time forward by `dt_ns`.
    pub fn advance_ns(&self, dt_ns: u64) {
        // fetch_update never fails with a closure that always returns Some.
        let _ = self
            .now
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |t| {
                Some(t.saturating_add(dt_ns))
            });
    }

    /// Sets how late every following sleep wakes (models wake-up latency).
    pub fn set_wake_delay_ns(&self, delay_ns: u64) {
        self.wake_delay.store(delay_ns, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now_ns(&mut self) -> u64 {
        self.get_ns()
    }

    fn sleep_until_ns(&mut self, release_ns: u64) {
        let delay = self.wake_delay.load(Ordering::SeqCst);
        let _ = self
            .now
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |t| {
                Some(t.max(release_ns).saturating_add(delay))
            });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manual_clock_sleeps_to_release_plus_delay_and_never_goes_back() {
        let mut c = ManualClock::new(100);
        c.set_wake_delay_ns(7);
        c.sleep_until_ns(1_000);
        assert_eq!(c.now_ns(), 1_007);
        c.sleep_until_ns(500); // already passed: returns at once (plus the wake delay)
        assert_eq!(c.now_ns(), 1_014);
        let other = c.clone();
        other.advance_ns(6);
        assert_eq!(c.now_ns(), 1_020);
    }

    #[test]
    fn monotonic_clock_is_monotonic_and_timespec_round_trips() {
        let a = MonotonicClock::now();
        let b = MonotonicClock::now();
        assert!(b >= a);
        let ns = 12_345_678_901_234;
        assert_eq!(timespec_to_ns(&ns_to_timespec(ns)), ns);
    }
}
