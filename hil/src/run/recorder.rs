//! What every kind's recorder shares: a CSV file written off the real-time path, the loop's
//! timing figures ([`LoopTimes`]: step cost, compute, round trip, wake-up latency), latency
//! histograms read in µs, and trajectories decimated for the plots.
//!
//! Memory stays bounded whatever the run's length: figures are histograms (`runtime`'s, fixed
//! range) and running counts, plotted trajectories are decimated to at most [`MAX_PLOT_POINTS`]
//! points, and per-tick rows go straight to a CSV writer. A recorder never runs on the control
//! thread: in real time the I/O threads hand it records over a bounded channel that never blocks
//! them (a full channel drops the record and counts it).

use std::fs::File;
use std::io::{BufWriter, Write};
use std::time::Duration;

use control_core::frames::StateFrame;

use super::report::{Faults, Percentiles, Timing};

/// Most points of one controller's trajectory kept for a plot.
pub const MAX_PLOT_POINTS: usize = 4096;

/// A CSV file written line by line off the real-time path: the first write error is kept and
/// returned by [`CsvFile::finish`], later lines are dropped (nothing is written half-way past an
/// error).
#[derive(Debug)]
pub struct CsvFile {
    out: BufWriter<File>,
    error: Option<std::io::Error>,
}

impl CsvFile {
    /// Create the file and write `header`.
    pub fn create(path: &std::path::Path, header: &str) -> std::io::Result<Self> {
        let mut out = BufWriter::new(File::create(path)?);
        writeln!(out, "{header}")?;
        Ok(Self { out, error: None })
    }

    /// Write one line (`args`, then a newline), unless a write failed before.
    pub fn line(&mut self, args: std::fmt::Arguments<'_>) {
        if self.error.is_some() {
            return;
        }
        if let Err(e) = self
            .out
            .write_fmt(args)
            .and_then(|()| self.out.write_all(b"\n"))
        {
            self.error = Some(e);
        }
    }

    /// Flush; the first write error, if any, is returned here.
    pub fn finish(mut self) -> std::io::Result<()> {
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        self.out.flush()
    }
}

pub use runtime::LatencyHistogram;

/// What the reports and plots read of a [`LatencyHistogram`] (the runtime's: one histogram type
/// for the control thread, `hil jitter` and the recorders), in µs.
pub trait LatencyUs {
    /// Record one duration.
    fn record_duration(&mut self, d: Duration);
    /// min/p50/p99/p99.9/max in µs, or `None` for no samples.
    fn percentiles_us(&self) -> Option<Percentiles>;
    /// (bucket lower edge µs, count) over `buckets` equal buckets from 0 to `top_us`, the last
    /// one also holding everything above it.
    fn buckets_us(&self, top_us: f64, buckets: usize) -> Vec<(f64, u64)>;
}

impl LatencyUs for LatencyHistogram {
    fn record_duration(&mut self, d: Duration) {
        self.record(u64::try_from(d.as_nanos()).unwrap_or(u64::MAX));
    }

    fn percentiles_us(&self) -> Option<Percentiles> {
        (self.count() > 0).then(|| Percentiles::from(&self.summary()))
    }

    fn buckets_us(&self, top_us: f64, buckets: usize) -> Vec<(f64, u64)> {
        let width_ns = (top_us * 1e3 / buckets.max(1) as f64).max(1.0) as u64;
        self.buckets_ns(width_ns, buckets)
            .into_iter()
            .map(|(edge, count)| (edge as f64 / 1e3, count))
            .collect()
    }
}

/// What every loop recorder measures whatever its controller: the plant's step cost and its
/// counts of refused torque frames (from the state frames), the tick's compute time, the round
/// trip, and the control thread's wake-up latency (real time).
#[derive(Debug, Clone, Default)]
pub struct LoopTimes {
    step_cost: LatencyHistogram,
    compute: LatencyHistogram,
    round_trip: LatencyHistogram,
    wake: LatencyHistogram,
    plant_counts: (u32, u32),
}

impl LoopTimes {
    /// Note an accepted state frame.
    pub fn frame(&mut self, frame: &StateFrame) {
        self.plant_counts = (frame.plant_rejected_frames, frame.plant_over_limit_frames);
        if frame.step > 0 {
            self.step_cost.record(frame.step_cost_ns);
        }
    }

    /// Note a tick's compute time, when measured on this thread.
    pub fn compute(&mut self, d: Option<Duration>) {
        if let Some(d) = d {
            self.compute.record_duration(d);
        }
    }

    /// Note a round trip.
    pub fn round_trip(&mut self, d: Duration) {
        self.round_trip.record_duration(d);
    }

    /// Note a control-thread wake-up latency.
    pub fn wake(&mut self, ns: u64) {
        self.wake.record(ns);
    }

    /// Close: the round trip and (unless the driver measured it) the compute time into
    /// `timing`, the plant's counts into `faults`; returns the plant's step cost and the
    /// latency to plot (wake-up in real time, the round trip in lockstep).
    pub fn close(
        self,
        timing: &mut Timing,
        faults: &mut Faults,
    ) -> (Option<Percentiles>, LatencyHistogram) {
        timing.round_trip_us = self.round_trip.percentiles_us();
        if timing.compute_us.is_none() {
            timing.compute_us = self.compute.percentiles_us();
        }
        faults.plant_rejected_frames = u64::from(self.plant_counts.0);
        faults.plant_over_limit_frames = u64::from(self.plant_counts.1);
        let latency = if self.wake.count() == 0 {
            self.round_trip
        } else {
            self.wake
        };
        (self.step_cost.percentiles_us(), latency)
    }
}

/// A trajectory decimated to at most [`MAX_PLOT_POINTS`] points (every k-th, k doubling when
/// full).
#[derive(Debug, Clone)]
pub struct Decimated<T = f64> {
    /// (t, value) points kept.
    pub points: Vec<(f64, T)>,
    stride: u64,
    seen: u64,
}

impl<T> Default for Decimated<T> {
    fn default() -> Self {
        Self {
            points: Vec::new(),
            stride: 0,
            seen: 0,
        }
    }
}

impl<T> Decimated<T> {
    /// Offer the point (t, v): kept if it falls on the stride.
    pub fn push(&mut self, t: f64, v: T) {
        let stride = self.stride.max(1);
        if self.seen.is_multiple_of(stride) {
            if self.points.len() >= MAX_PLOT_POINTS {
                let mut keep = false;
                self.points.retain(|_| {
                    keep = !keep;
                    keep
                });
                self.stride = stride * 2;
            }
            if self.seen.is_multiple_of(self.stride.max(1)) {
                self.points.push((t, v));
            }
        }
        self.seen += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_plotted_trajectory_stays_bounded() {
        let mut d = Decimated::default();
        for i in 0..1_000_000u32 {
            d.push(f64::from(i), 0.0);
        }
        assert!(d.points.len() <= MAX_PLOT_POINTS && d.points.len() > MAX_PLOT_POINTS / 4);
        assert!(d.points.windows(2).all(|w| w[0].0 < w[1].0));
    }

    #[test]
    fn an_empty_histogram_has_no_percentiles() {
        assert!(LatencyHistogram::default().percentiles_us().is_none());
        let mut h = LatencyHistogram::default();
        h.record(u64::MAX);
        let p = h.percentiles_us().unwrap_or_default();
        assert_eq!((p.count, p.saturated), (1, 1));
    }
}
