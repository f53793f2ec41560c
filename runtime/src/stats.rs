//! Per-tick timing records, exact run totals, and latency summaries in constant memory.
//!
//! On the control thread, every tick: [`TickCounters::add`] keeps exact totals, and
//! [`TickStats::record`] adds the tick's wake-up latency and compute time to two
//! [`LatencyHistogram`]s that were allocated (and every page written) before the loop started. So
//! the summaries of a run of any length cover every one of its ticks, in fixed memory (two
//! histograms of [`LatencyHistogram::MEMORY_BYTES`] each). The per-tick [`TickRecord`]s are not
//! kept here: [`crate::PeriodicBuilder::telemetry`] streams them to a consumer (see
//! [`crate::telemetry`]), which may keep, plot or write them as it likes.
//!
//! Off the control thread, before or after the run: [`LatencyHistogram::new`] allocates, and
//! [`LatencyHistogram::summary`] / [`LatencyHistogram::buckets_ns`] build their answers with
//! allocations.
//!
//! Must never, on the control thread ([`TickCounters::add`], [`TickStats::record`],
//! [`LatencyHistogram::record`]): allocate, block, make a syscall, or panic.

use hdrhistogram::Histogram;
use serde::Serialize;

/// What happened in one tick, as recorded on the control thread (and sent as telemetry).
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

/// Exact run totals, kept on the control thread.
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
    /// The longest run of consecutive ticks without a fresh state (the plant's longest
    /// silence as the control thread saw it, in ticks run; skipped releases are not counted).
    /// The watchdog trips exactly when this reaches its window.
    pub longest_stale_ticks: u64,
    /// Outputs that found the outgoing queue full and were dropped.
    pub outputs_dropped: u64,
    /// Tick records handed to the telemetry channel (0 without one).
    pub telemetry_sent: u64,
    /// Tick records the telemetry channel refused because it was full or its receiver was gone:
    /// the consumer never saw them (the summaries still include them). With a telemetry channel,
    /// `telemetry_sent + telemetry_dropped == ticks`.
    pub telemetry_dropped: u64,
}

impl TickCounters {
    /// Adds one tick's record to the totals (saturating, never panics). Telemetry, the watchdog
    /// and output counts are kept by the loop itself.
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

/// A duration histogram in fixed memory that records without allocating: `hdrhistogram` over
/// 0 ns..=[`Self::MAX_NS`] at 3 significant digits, no auto-resize, plus exact count, min, max
/// and sum.
///
/// A value above [`Self::MAX_NS`] is never dropped: it is counted ([`Self::above_range`],
/// [`LatencySummary::above_range`]), enters the percentiles as [`Self::MAX_NS`], and stays exact in
/// min, max and mean.
#[derive(Clone, Debug)]
pub struct LatencyHistogram {
    hist: Histogram<u64>,
    count: u64,
    min_ns: u64,
    max_ns: u64,
    sum_ns: u128,
    above_range: u64,
}

impl LatencyHistogram {
    /// Largest value the percentiles resolve: 1000 s. Larger ones are recorded as this value and
    /// counted.
    pub const MAX_NS: u64 = 1_000_000_000_000;
    /// Memory held by one histogram's buckets (u64 counts).
    pub const MEMORY_BYTES: usize = 30 * 1024 * 8 + 1024 * 8;

    /// An empty histogram. Allocates its buckets and writes every one now, so that
    /// [`record`](Self::record) never allocates nor touches a fresh page. Off the real-time path.
    pub fn new() -> Self {
        // Constant, valid bounds (low ≥ 1, high ≥ 2·low, 3 significant digits ≤ 5): cannot fail.
        let mut hist = Histogram::<u64>::new_with_bounds(1, Self::MAX_NS, 3)
            .expect("constant histogram bounds are valid");
        // `new_with_bounds` zero-allocates (the pages may not exist yet); writing every count
        // faults them all in now.
        hist.clear();
        Self {
            hist,
            count: 0,
            min_ns: u64::MAX,
            max_ns: 0,
            sum_ns: 0,
            above_range: 0,
        }
    }

    /// Records one duration. Never allocates, blocks or panics (all arithmetic saturates).
    #[inline]
    pub fn record(&mut self, ns: u64) {
        self.count = self.count.saturating_add(1);
        self.sum_ns = self.sum_ns.saturating_add(u128::from(ns));
        self.min_ns = self.min_ns.min(ns);
        self.max_ns = self.max_ns.max(ns);
        let v = if ns > Self::MAX_NS {
            self.above_range = self.above_range.saturating_add(1);
            Self::MAX_NS
        } else {
            ns
        };
        // In range and no auto-resize: `record` neither allocates nor fails (it would return an
        // error, not panic, if it did).
        let _ = self.hist.record(v);
    }

    /// Values recorded.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// Values above [`Self::MAX_NS`] (recorded as [`Self::MAX_NS`] in the percentiles).
    pub fn above_range(&self) -> u64 {
        self.above_range
    }

    /// Smallest value recorded, ns (`None` if empty).
    pub fn min_ns(&self) -> Option<u64> {
        (self.count > 0).then_some(self.min_ns)
    }

    /// Largest value recorded, ns (`None` if empty).
    pub fn max_ns(&self) -> Option<u64> {
        (self.count > 0).then_some(self.max_ns)
    }

    /// Exact mean, ns (0 if empty).
    pub fn mean_ns(&self) -> f64 {
        if self.count == 0 {
            0.0
        } else {
            self.sum_ns as f64 / self.count as f64
        }
    }

    /// min/p50/p99/p99.9/max/mean in µs (see [`LatencySummary`] for the definitions).
    pub fn summary(&self) -> LatencySummary {
        if self.count == 0 {
            return LatencySummary::default();
        }
        let h = &self.hist;
        let q = |q: f64| ns_to_us(h.lowest_equivalent(h.value_at_quantile(q)));
        LatencySummary {
            count: self.count,
            min: ns_to_us(self.min_ns),
            p50: q(0.50),
            p99: q(0.99),
            p999: q(0.999),
            max: ns_to_us(self.max_ns),
            mean: self.mean_ns() / 1_000.0,
            above_range: self.above_range,
        }
    }

    /// Counts in linear buckets of `width_ns` (at least 1): `(lower edge ns, count)` for
    /// `buckets` buckets (at least 1), the last one also holding everything above it. Each value
    /// is placed by the lower edge of its histogram bucket, so a value up to 0.1 % above a
    /// bucket edge may be counted in the bucket below (values under 2048 ns are exact). Allocates.
    pub fn buckets_ns(&self, width_ns: u64, buckets: usize) -> Vec<(u64, u64)> {
        let width = width_ns.max(1);
        let buckets = buckets.max(1);
        let mut counts = vec![0_u64; buckets];
        for v in self.hist.iter_recorded() {
            let lo = self.hist.lowest_equivalent(v.value_iterated_to());
            let i = usize::try_from(lo / width).unwrap_or(usize::MAX);
            if let Some(c) = counts.get_mut(i.min(buckets - 1)) {
                *c = c.saturating_add(v.count_at_value());
            }
        }
        (0_u64..)
            .map(|i| i.saturating_mul(width))
            .zip(counts)
            .collect()
    }
}

impl Default for LatencyHistogram {
    fn default() -> Self {
        Self::new()
    }
}

/// The two summaries the control thread keeps over every tick of a run: wake-up latency and
/// compute time. Built before the loop (allocates), updated by [`record`](Self::record) each tick
/// (never allocates).
#[derive(Clone, Debug, Default)]
pub struct TickStats {
    /// Wake-up latency (wake − `t_k`), ns.
    pub wake_latency: LatencyHistogram,
    /// Compute time (end of tick − wake), ns.
    pub compute: LatencyHistogram,
}

impl TickStats {
    /// Empty histograms, allocated and pre-faulted now.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds one tick. Never allocates, blocks or panics.
    #[inline]
    pub fn record(&mut self, r: &TickRecord) {
        self.wake_latency.record(r.wake_latency_ns);
        self.compute.record(r.compute_ns);
    }
}

/// min/p50/p99/p99.9/max/mean of a set of durations, in µs.
///
/// min, max and mean are exact. Percentiles use the nearest-rank definition (the smallest
/// recorded value with at least q of all values at or below it) through `hdrhistogram` at 3
/// significant digits, reported as the lower edge of the histogram bucket: exact below 2048 ns and
/// for any value that is a multiple of its bucket width, otherwise at most 0.1 % below the true
/// value. Values above [`LatencyHistogram::MAX_NS`] (1000 s) enter the percentiles as that value
/// and are counted in `above_range`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct LatencySummary {
    /// Number of values summarized (for a run's report: every tick).
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
    /// Mean, µs.
    pub mean: f64,
    /// Values above [`LatencyHistogram::MAX_NS`], recorded as that value in the percentiles.
    pub above_range: u64,
}

impl LatencySummary {
    /// Summarizes durations given in ns. Off the RT path: allocates a histogram.
    pub fn from_ns(values: impl IntoIterator<Item = u64>) -> Self {
        let mut h = LatencyHistogram::new();
        for v in values {
            h.record(v);
        }
        h.summary()
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
        assert_eq!(s.mean, 512.512); // exact mean 500.5·1024 ns
        assert_eq!(s.above_range, 0);
    }

    #[test]
    fn summary_of_small_values_is_exact_and_of_nothing_is_zero() {
        let s = LatencySummary::from_ns([0, 5, 5, 7, 2047]);
        assert_eq!((s.min, s.p50, s.max), (0.0, 0.005, 2.047));
        assert_eq!(LatencySummary::from_ns([]), LatencySummary::default());
    }

    #[test]
    fn values_beyond_the_range_are_counted_clamped_in_percentiles_and_exact_in_max() {
        let huge = LatencyHistogram::MAX_NS * 3;
        let mut h = LatencyHistogram::new();
        for _ in 0..998 {
            h.record(1_000);
        }
        h.record(huge);
        h.record(u64::MAX);
        let s = h.summary();
        assert_eq!((s.count, s.above_range), (1000, 2));
        assert_eq!(s.p50, 1.0);
        // The 999th value is one of the clamped ones: at the top of the range, not lost.
        let top = LatencyHistogram::MAX_NS as f64 / 1e3;
        assert!(s.p999 <= top && s.p999 >= top * 0.999, "{}", s.p999);
        assert_eq!(s.max, u64::MAX as f64 / 1e3);
        assert_eq!((h.min_ns(), h.max_ns()), (Some(1_000), Some(u64::MAX)));
    }

    #[test]
    fn memory_is_fixed_whatever_is_recorded() {
        let h = LatencyHistogram::new();
        // The documented footprint is the histogram's real one (u64 counts).
        assert_eq!(h.hist.distinct_values() * 8, LatencyHistogram::MEMORY_BYTES);
        let mut g = h.clone();
        for k in 0..100_000_u64 {
            g.record(k.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 20);
        }
        assert_eq!(g.hist.distinct_values(), h.hist.distinct_values());
        assert_eq!(g.count(), 100_000);
    }

    #[test]
    fn linear_buckets_count_every_value_and_catch_the_tail() {
        let mut h = LatencyHistogram::new();
        for ns in [1_500, 1_700, 9_000, 256_000] {
            h.record(ns);
        }
        let b = h.buckets_ns(1_000, 4);
        assert_eq!(b, [(0, 0), (1_000, 2), (2_000, 0), (3_000, 2)]);
        let b = h.buckets_ns(5_000, 60);
        assert_eq!(b.iter().map(|&(_, c)| c).sum::<u64>(), 4);
        assert_eq!(b[51], (255_000, 1));
        assert_eq!(LatencyHistogram::new().buckets_ns(0, 0), [(0, 0)]);
    }

    #[test]
    fn tick_stats_record_both_durations() {
        let mut s = TickStats::new();
        s.record(&TickRecord {
            wake_latency_ns: 3_000,
            compute_ns: 700,
            ..TickRecord::default()
        });
        assert_eq!(s.wake_latency.max_ns(), Some(3_000));
        assert_eq!(s.compute.summary().p50, 0.7);
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
