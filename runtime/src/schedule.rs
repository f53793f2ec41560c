//! Release times, deadline-miss detection and overrun skipping: pure arithmetic, no OS.
//!
//! Release k is at `t_k = t_0 + k·T` in integer nanoseconds, computed from `k` every time (never
//! by adding `T` to the previous release), so releases cannot drift however long the run. A tick
//! that ends after its successor's release has overrun: the releases already passed are skipped
//! and counted, and the next tick is released at the first release not yet passed (no burst of
//! catch-up ticks).
//!
//! Must never: allocate, block, or panic (all arithmetic saturates).

use serde::Serialize;

/// What the periodic thread does when a tick ends after the next release has passed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub enum OverrunPolicy {
    /// Skip the releases already passed, count them, and go on with the next one not yet passed.
    #[default]
    Skip,
    /// End the run at the first overrun (the report says [`crate::StopReason::Overrun`]).
    Stop,
}

/// Where the next tick is released after an overrun check.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NextRelease {
    /// Index k of the next release to run.
    pub index: u64,
    /// Releases that had already passed and are skipped (0 when there was no overrun).
    pub skipped: u64,
}

/// The fixed grid of releases `t_k = t_0 + k·T` and their deadlines `t_k + D`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReleaseSchedule {
    t0_ns: u64,
    period_ns: u64,
    deadline_ns: u64,
}

impl ReleaseSchedule {
    /// A grid starting at `t0_ns` with period `period_ns` (raised to 1 if 0) and relative deadline
    /// `deadline_ns`.
    pub fn new(t0_ns: u64, period_ns: u64, deadline_ns: u64) -> Self {
        Self {
            t0_ns,
            period_ns: period_ns.max(1),
            deadline_ns,
        }
    }

    /// First release `t_0`, ns.
    pub fn t0_ns(&self) -> u64 {
        self.t0_ns
    }

    /// Period `T`, ns.
    pub fn period_ns(&self) -> u64 {
        self.period_ns
    }

    /// Release time of tick `k`: `t_0 + k·T`, ns.
    pub fn release_ns(&self, k: u64) -> u64 {
        self.t0_ns.saturating_add(k.saturating_mul(self.period_ns))
    }

    /// Absolute deadline of tick `k`: `t_k + D`, ns.
    pub fn deadline_of(&self, k: u64) -> u64 {
        self.release_ns(k).saturating_add(self.deadline_ns)
    }

    /// Whether tick `k`, finishing at `end_ns`, missed its deadline (finished after `t_k + D`).
    pub fn missed_deadline(&self, k: u64, end_ns: u64) -> bool {
        end_ns > self.deadline_of(k)
    }

    /// The release to run after tick `k` finished at `end_ns`: `k + 1` if it has not passed yet
    /// (a release exactly at `end_ns` counts as not passed), else the first release at or after
    /// `end_ns`, with the passed ones counted as skipped.
    pub fn next_after(&self, k: u64, end_ns: u64) -> NextRelease {
        let next = k.saturating_add(1);
        if end_ns <= self.release_ns(next) {
            return NextRelease {
                index: next,
                skipped: 0,
            };
        }
        // end_ns > t_{k+1} >= t_0, so the subtraction is exact; the first release >= end_ns.
        let index = (end_ns - self.t0_ns).div_ceil(self.period_ns);
        NextRelease {
            index,
            skipped: index.saturating_sub(next),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overrun_of_three_and_a_half_periods_skips_exactly_three() {
        let s = ReleaseSchedule::new(1_000, 1_000_000, 1_000_000);
        let k = 41;
        let end = s.release_ns(k) + 3_500_000;
        assert_eq!(
            s.next_after(k, end),
            NextRelease {
                index: 45,
                skipped: 3
            }
        );
        assert!(s.missed_deadline(k, end));
    }

    #[test]
    fn ending_exactly_on_a_release_runs_it() {
        let s = ReleaseSchedule::new(0, 10, 10);
        assert_eq!(
            s.next_after(0, 10),
            NextRelease {
                index: 1,
                skipped: 0
            }
        );
        assert!(!s.missed_deadline(0, 10));
        assert!(s.missed_deadline(0, 11));
        assert_eq!(
            s.next_after(0, 30),
            NextRelease {
                index: 3,
                skipped: 2
            }
        );
        assert_eq!(
            s.next_after(0, 31),
            NextRelease {
                index: 4,
                skipped: 3
            }
        );
    }

    #[test]
    fn deadline_shorter_than_period_is_a_miss_without_overrun() {
        let s = ReleaseSchedule::new(0, 1_000, 400);
        assert!(s.missed_deadline(3, 3_401));
        assert_eq!(s.next_after(3, 3_401).skipped, 0);
    }

    #[test]
    fn arithmetic_saturates_instead_of_panicking() {
        let s = ReleaseSchedule::new(u64::MAX - 5, u64::MAX, u64::MAX);
        assert_eq!(s.release_ns(u64::MAX), u64::MAX);
        assert!(!s.missed_deadline(3, u64::MAX));
        let n = s.next_after(u64::MAX, u64::MAX);
        assert_eq!(n.index, u64::MAX);
        let z = ReleaseSchedule::new(0, 0, 0);
        assert_eq!(z.period_ns(), 1);
    }
}
