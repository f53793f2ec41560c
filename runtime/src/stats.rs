//! Per-tick timing records and their summary.
//!
//! On the control thread: [`TickLog::push`] writes one [`TickRecord`] per tick into storage
//! allocated and touched when the log is built (a ring: once full, the oldest records are
//! overwritten and counted), and [`TickCounters`] keeps exact totals over the whole run. Off the
//! control thread, after the run: [`LatencySummary`] turns the kept records into min/p50/p99/p99.9/
//! max in µs with `hdrhistogram`.
//!
//! Must never, on the control thread (`push`, counters): allocate, block, or panic.
//! Summaries allocate and may only run off the real-time path.

use hdrhistogram::Histogram;
use serde::Serialize;

/// What happened in one tick, as recorded on the control thread.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct TickRecord {
    /// Release index k (`t_k = t_0 + k·T`).
    pub release_index: u64,
    /// Actual wake time minus scheduled release `t_k`, ns (0 if the thread woke on time).
    pub wake_latency_ns: u64,
    /// End of tick minus wake, ns (reading the state, the controller, publishing the output).
    pub compute_ns: u64,
    /// The tick finished after `t_k + deadline`.
    pub missed_deadline: bool,
    /// Releases skipped right after this tick because it overran them.
    pub skipped_after: u64,
    /// The watchdog was tripped: the output was the controller's safe output.
    pub safe_output: bool,
}

/// Exact run totals, kept on the control thread (never wrap around like the log).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct TickCounters {
    /// Ticks run.
    pub ticks: u64,
    /// Releases skipped because a tick overran them.
    pub skipped_releases: u64,
    /// Ticks that ended after the next release (each caused ≥ 1 skipped release).
    pub overruns: u64,
    /// Ticks that finished after `t_k + deadline`.
    pub deadline_misses: u64,
    /// Ticks whose output was the controller's safe output (watchdog tripped).
    pub safe_ticks: u64,
    /// Times the watchdog went from normal to tripped.
    pub watchdog_trips: u64,
    /// Release index of the first watchdog trip.
    pub first_watchdog_trip_release: Option<u64>,
    /// Outputs that found the outgoing queue full and were dropped.
    pub outputs_dropped: u64,
}

impl TickCounters {
    /// Adds one tick's record to the totals (saturating, never panics).
    pub fn add(&mut self, r: &TickRecord) {
        self.ticks = self.ticks.saturating_add(1);
        self.skipped_releases = self.skipped_releases.saturating_add(r.skipped_after);
        self.overruns = self.overruns.saturating_add(u64::from(r.skipped_after > 0));
        self.deadline_misses = self
            .deadline_misses
            .saturating_add(u64::from(r.missed_deadline));
        self.safe_ticks = self.safe_ticks.saturating_add(u64::from(r.safe_output));
    }
}

/// Fixed-capacity ring of [`TickRecord`]s, allocated and pre-faulted when built.
#[derive(Clone, Debug)]
pub struct TickLog {
    records: Box<[TickRecord]>,
    written: u64,
}

impl TickLog {
    /// A log keeping the last `capacity` records (at least 1). Allocates and writes every slot now,
    /// so `push` never allocates nor page-faults on fresh memory.
    pub fn with_capacity(capacity: usize) -> Self {
        Self {
            records: vec![TickRecord::default(); capacity.max(1)].into_boxed_slice(),
            written: 0,
        }
    }

    /// Records one tick; once full, overwrites the oldest record. Never allocates or panics.
    pub fn push(&mut self, record: TickRecord) {
        let cap = self.records.len() as u64;
        if cap == 0 {
            return;
        }
        // The remainder is < cap <= usize::MAX, so the conversion is lossless.
        let slot = usize::try_from(self.written % cap).unwrap_or(0);
        if let Some(r) = self.records.get_mut(slot) {
            *r = record;
        }
        self.written = self.written.saturating_add(1);
    }

    /// How many records the log can hold.
    pub fn capacity(&self) -> usize {
        self.records.len()
    }

    /// Records pushed since the log was built (kept or overwritten).
    pub fn written(&self) -> u64 {
        self.written
    }

    /// Records kept (≤ capacity).
    pub fn len(&self) -> usize {
        usize::try_from(self.written).map_or(self.records.len(), |w| w.min(self.records.len()))
    }

    /// No record kept.
    pub fn is_empty(&self) -> bool {
        self.written == 0
    }

    /// Records lost to wrap-around.
    pub fn overwritten(&self) -> u64 {
        self.written.saturating_sub(self.records.len() as u64)
    }

    /// Kept records, oldest first.
    pub fn iter(&self) -> impl Iterator<Item = &TickRecord> + '_ {
        let cap = self.records.len();
        let split = if self.written as u128 > cap as u128 {
            usize::try_from(self.written % cap as u64).unwrap_or(0)
        } else {
            0
        };
        let (newer, older) = self.records.split_at(split);
        older.iter().chain(newer.iter()).take(self.len())
    }

    /// Wake-latency histogram of the kept records: `(lower edge µs, count)` for buckets of
    /// `bucket_us` µs (at least 1), the last bucket holding everything at or above
    /// `buckets · bucket_us`. Runs off the RT path (allocates).
    pub fn wake_latency_histogram(&self, bucket_us: u64, buckets: usize) -> Vec<(u64, u64)> {
        let bucket_ns = bucket_us.max(1).saturating_mul(1_000);
        let buckets = buckets.max(1);
        let mut counts = vec![0_u64; buckets];
        for r in self.iter() {
            let i = usize::try_from(r.wake_latency_ns / bucket_ns).unwrap_or(usize::MAX);
            if let Some(c) = counts.get_mut(i.min(buckets - 1)) {
                *c += 1;
            }
        }
        (0_u64..)
            .map(|i| i.saturating_mul(bucket_us.max(1)))
            .zip(counts)
            .collect()
    }
}

/// min/p50/p99/p99.9/max of a set of durations, in µs.
///
/// min and max are exact. Percentiles use the nearest-rank definition (the smallest recorded value
/// with at least q of all values at or below it) through `hdrhistogram` at 3 significant digits,
/// reported as the lower edge of the histogram bucket: exact below 2048 ns and for any value that
/// is a multiple of its bucket width, otherwise at most 0.1 % below the true value.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct LatencySummary {
    /// Number of values summarized.
    pub count: u64,
    /// Smallest value, µs.
    pub min: f64,
    /// Median, µs.
    pub p50: f64,
    /// 99th percentile, µs.
    pub p99: f64,
    /// 99.9th percentile, µs.
    pub p999: f64,
    /// Largest value, µs.
    pub max: f64,
}

/// Largest value the summary histograms hold: 1000 s; larger values are clamped to it.
const HIST_MAX_NS: u64 = 1_000_000_000_000;

impl LatencySummary {
    /// Summarizes durations given in ns. Off the RT path: allocates a histogram.
    pub fn from_ns(values: impl IntoIterator<Item = u64>) -> Self {
        let Ok(mut h) = Histogram::<u64>::new_with_bounds(1, HIST_MAX_NS, 3) else {
            return Self::default();
        };
        let (mut min, mut max) = (u64::MAX, 0_u64);
        for v in values {
            h.saturating_record(v);
            min = min.min(v);
            max = max.max(v);
        }
        if h.is_empty() {
            return Self::default();
        }
        let q = |q: f64| ns_to_us(h.lowest_equivalent(h.value_at_quantile(q)));
        Self {
            count: h.len(),
            min: ns_to_us(min),
            p50: q(0.50),
            p99: q(0.99),
            p999: q(0.999),
            max: ns_to_us(max),
        }
    }

    /// Wake-up latency summary of the kept records.
    pub fn wake_latency(log: &TickLog) -> Self {
        Self::from_ns(log.iter().map(|r| r.wake_latency_ns))
    }

    /// Compute-time summary of the kept records.
    pub fn compute(log: &TickLog) -> Self {
        Self::from_ns(log.iter().map(|r| r.compute_ns))
    }
}

fn ns_to_us(ns: u64) -> f64 {
    ns as f64 / 1_000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_is_exact_on_synthetic_latencies() {
        // 1000 values k·1024 ns, k = 1..=1000, shuffled: all are multiples of their bucket width.
        let mut values: Vec<u64> = (1..=1000).map(|k| k * 1024).collect();
        values.reverse();
        values.swap(3, 700);
        let s = LatencySummary::from_ns(values);
        assert_eq!(s.count, 1000);
        assert_eq!(s.min, 1.024);
        assert_eq!(s.p50, 500.0 * 1.024); // nearest rank: the 500th value
        assert_eq!(s.p99, 990.0 * 1.024);
        assert_eq!(s.p999, 999.0 * 1.024);
        assert_eq!(s.max, 1000.0 * 1.024);
    }

    #[test]
    fn summary_of_small_values_is_exact_and_of_nothing_is_zero() {
        let s = LatencySummary::from_ns([0, 5, 5, 7, 2047]);
        assert_eq!((s.min, s.p50, s.max), (0.0, 0.005, 2.047));
        assert_eq!(LatencySummary::from_ns([]), LatencySummary::default());
    }

    #[test]
    fn log_is_a_ring_oldest_first_and_counts_what_it_lost() {
        let mut log = TickLog::with_capacity(4);
        for k in 0..6 {
            log.push(TickRecord {
                release_index: k,
                ..TickRecord::default()
            });
        }
        let kept: Vec<u64> = log.iter().map(|r| r.release_index).collect();
        assert_eq!(kept, [2, 3, 4, 5]);
        assert_eq!((log.len(), log.written(), log.overwritten()), (4, 6, 2));
        let mut short = TickLog::with_capacity(10);
        short.push(TickRecord {
            wake_latency_ns: 2_500,
            ..TickRecord::default()
        });
        short.push(TickRecord {
            wake_latency_ns: 99_000,
            ..TickRecord::default()
        });
        assert_eq!(short.iter().count(), 2);
        assert_eq!(
            short.wake_latency_histogram(1, 4),
            [(0, 0), (1, 0), (2, 1), (3, 1)]
        );
    }

    #[test]
    fn counters_add_up() {
        let mut c = TickCounters::default();
        c.add(&TickRecord {
            missed_deadline: true,
            skipped_after: 3,
            ..TickRecord::default()
        });
        c.add(&TickRecord {
            safe_output: true,
            ..TickRecord::default()
        });
        assert_eq!(
            (
                c.ticks,
                c.skipped_releases,
                c.overruns,
                c.deadline_misses,
                c.safe_ticks
            ),
            (2, 3, 1, 1, 1)
        );
    }
}
