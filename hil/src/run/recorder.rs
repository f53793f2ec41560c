//! The one recorder every scenario kind runs with ([`Recorder`]), and what the kinds' own
//! recorders share: a CSV file written off the real-time path, the loop's timing figures
//! ([`LoopTimes`]: step cost, compute, round trip, wake-up latency), latency histograms read in
//! µs, and trajectories decimated for the plots.
//!
//! A [`Recorder`] keeps what every run has (the timing, the ticks, the newest state) and hands
//! each state and command to its kind's [`KindRecorder`], which measures only what that kind
//! judges (an arm's balls, a walk's steps, a push's capture point); at the end both make one
//! [`Run`]: the kind's outcome inside the figures every run reports.
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
use super::session::LoopController;

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

/// What one scenario kind measures of a run, fed by the [`Recorder`] it sits in: the recorder
/// keeps the timing, the ticks and the newest state, the kind its own judge, series and rows.
/// Runs off the real-time path, like the recorder.
pub trait KindRecorder<C: LoopController>: Send {
    /// What the kind keeps of a run.
    type Outcome;
    /// Note an accepted state frame and its `state` (decoded once, by the driver:
    /// [`LoopController::state_of`]); `previous` is the state noted before (`None` before the
    /// first).
    fn state(&mut self, frame: &StateFrame, state: &C::State, previous: Option<&C::State>);
    /// Note one tick's command; `last` is the newest state noted (the one it answers).
    fn tick(&mut self, command: &C::Command, last: Option<&C::State>);
    /// Close the kind's record; `last` is the newest state noted.
    fn finish(self, last: Option<&C::State>) -> Self::Outcome;
}

/// The record of one controller's run against one plant, the same for every kind: both drivers
/// feed it states, commands, round trips and wake-ups; it notes the timing figures, counts the
/// ticks and keeps the newest state, and hands states and commands to its kind's
/// [`KindRecorder`]. [`Recorder::finish`] closes both into a [`Run`].
#[derive(Debug)]
pub struct Recorder<C: LoopController, K> {
    kind: K,
    times: LoopTimes,
    ticks: u64,
    last: Option<C::State>,
}

impl<C: LoopController, K: KindRecorder<C>> Recorder<C, K> {
    /// A recorder around `kind`, before the run's first state.
    pub fn new(kind: K) -> Self {
        Self {
            kind,
            times: LoopTimes::default(),
            ticks: 0,
            last: None,
        }
    }

    /// The kind's recorder (its figures so far).
    pub fn kind(&self) -> &K {
        &self.kind
    }

    /// Note an accepted state frame whose state the caller decoded
    /// ([`LoopController::state_of`]): it becomes the newest state.
    pub fn admitted(&mut self, frame: &StateFrame, state: C::State) {
        self.times.frame(frame);
        self.kind.state(frame, &state, self.last.as_ref());
        self.last = Some(state);
    }

    /// Note an accepted state frame, decoding its state here; returns it (`None`: a frame the
    /// controller cannot use, which is timed but does not become the newest state).
    pub fn state(&mut self, frame: &StateFrame) -> Option<C::State> {
        let Some(state) = C::state_of(frame) else {
            self.times.frame(frame);
            return None;
        };
        self.admitted(frame, state);
        Some(state)
    }

    /// Note one tick's command, and its compute time when measured on this thread.
    pub fn tick(&mut self, command: &C::Command, compute: Option<Duration>) {
        self.ticks += 1;
        self.kind.tick(command, self.last.as_ref());
        self.times.compute(compute);
    }

    /// Note one round trip (torque sent → the state it drove received).
    pub fn round_trip(&mut self, d: Duration) {
        self.times.round_trip(d);
    }

    /// Note one control-thread tick's wake-up latency (real time).
    pub fn thread_tick(&mut self, wake_latency_ns: u64) {
        self.times.wake(wake_latency_ns);
    }

    /// The newest state noted.
    pub fn last_state(&self) -> Option<C::State> {
        self.last
    }

    /// Close the record: the loop's figures into `timing` and `faults` (the driver's own and the
    /// session's end already in them), `wall` the run's wall time.
    pub fn finish(self, mut timing: Timing, mut faults: Faults, wall: Duration) -> Run<K::Outcome> {
        // Real time: the control thread's own summaries (every tick) are already in `timing`.
        let (plant_step_us, latency) = self.times.close(&mut timing, &mut faults);
        Run {
            kind: self.kind.finish(self.last.as_ref()),
            ticks: self.ticks,
            simulated_s: self.last.map_or(0.0, |s| {
                use super::session::LoopState as _;
                s.sim_time_s()
            }),
            plant_step_us,
            timing,
            faults,
            latency,
            wall_s: wall.as_secs_f64(),
        }
    }
}

/// One controller's run as every kind reports it: what its kind measured (`kind`) inside the
/// figures every run has.
#[derive(Debug, Clone)]
pub struct Run<O> {
    /// What the kind's recorder measured.
    pub kind: O,
    /// Ticks answered (the safe state's included).
    pub ticks: u64,
    /// Simulated time of the newest state, s (0 without one).
    pub simulated_s: f64,
    /// The plant's step cost, µs (its own measurement, from the state frames).
    pub plant_step_us: Option<Percentiles>,
    /// The loop's timing figures.
    pub timing: Timing,
    /// The run's faults.
    pub faults: Faults,
    /// The latency histogram for the plots: the wake-up latency in real time, the round trip in
    /// lockstep.
    pub latency: LatencyHistogram,
    /// Wall time of the run, s.
    pub wall_s: f64,
}

impl<O> Run<O> {
    /// A run of nothing but `kind`: no tick, no state, no timing, no fault.
    #[cfg(test)]
    pub fn bare(kind: O) -> Self {
        Self {
            kind,
            ticks: 0,
            simulated_s: 0.0,
            plant_step_us: None,
            timing: Timing::default(),
            faults: Faults::default(),
            latency: LatencyHistogram::default(),
            wall_s: 0.0,
        }
    }
}

impl<A, B> Run<(A, B)> {
    /// The run of a kind whose recorder hands something on (`B`, e.g. the CSV writer the next
    /// controller's run continues): the run of `A`, and the `B`.
    pub fn split(self) -> (Run<A>, B) {
        let (kind, handed_on) = self.kind;
        let run = Run {
            kind,
            ticks: self.ticks,
            simulated_s: self.simulated_s,
            plant_step_us: self.plant_step_us,
            timing: self.timing,
            faults: self.faults,
            latency: self.latency,
            wall_s: self.wall_s,
        };
        (run, handed_on)
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

    /// A controller of one joint whose state is the joint's position, for the recorder's tests.
    #[derive(Debug, Clone, Copy, Default)]
    struct OneJoint {
        step: u64,
        time_s: f64,
        q: f64,
    }

    impl super::super::session::LoopState for OneJoint {
        fn step(&self) -> u64 {
            self.step
        }
        fn sim_time_s(&self) -> f64 {
            self.time_s
        }
    }

    #[derive(Debug, Clone, Copy)]
    struct Torque(u64, [f64; 1]);

    impl super::super::session::LoopCommand for Torque {
        fn step(&self) -> u64 {
            self.0
        }
        fn is_safe(&self) -> bool {
            false
        }
        fn torques(&self) -> &[f64] {
            &self.1
        }
    }

    #[derive(Debug, Clone)]
    struct Hold;

    impl LoopController for Hold {
        type State = OneJoint;
        type Command = Torque;
        fn state_of(frame: &StateFrame) -> Option<OneJoint> {
            frame.joints.first().map(|j| OneJoint {
                step: frame.step,
                time_s: frame.sim_time_s,
                q: j.position_rad,
            })
        }
        fn tick(&mut self, s: OneJoint) -> Torque {
            Torque(s.step, [-s.q])
        }
        fn safe(&self, s: OneJoint) -> Torque {
            Torque(s.step, [0.0])
        }
    }

    /// What the kind saw: (position, the previous position) per state, the position each tick
    /// answered, and the newest position at the end.
    #[derive(Debug, Default)]
    struct Seen {
        states: Vec<(f64, Option<f64>)>,
        ticks: Vec<Option<f64>>,
    }

    impl KindRecorder<Hold> for Seen {
        type Outcome = (Self, Option<f64>);
        fn state(&mut self, _frame: &StateFrame, s: &OneJoint, previous: Option<&OneJoint>) {
            self.states.push((s.q, previous.map(|p| p.q)));
        }
        fn tick(&mut self, _command: &Torque, last: Option<&OneJoint>) {
            self.ticks.push(last.map(|s| s.q));
        }
        fn finish(self, last: Option<&OneJoint>) -> Self::Outcome {
            (self, last.map(|s| s.q))
        }
    }

    #[test]
    fn the_recorder_keeps_what_every_run_has_and_hands_the_kind_its_states() {
        use control_core::frames::JointState;
        let frame = |step: u64, q: Option<f64>| {
            let mut f = StateFrame::new(step + 1, step, step as f64 * 0.01);
            f.step_cost_ns = 1_000 * (step + 1);
            if let Some(q) = q {
                let _ = f.push_joint(JointState {
                    position_rad: q,
                    velocity_rad_s: 0.0,
                });
            }
            f
        };
        let mut r = Recorder::new(Seen::default());
        assert!(r.last_state().is_none());
        let mut hold = Hold;
        for (step, q) in [(1, Some(0.5)), (2, None), (3, Some(0.25))] {
            if let Some(s) = r.state(&frame(step, q)) {
                let cmd = hold.tick(s);
                r.tick(&cmd, Some(Duration::from_micros(3)));
            }
        }
        // A frame without a joint is timed but is not a state: the newest stays the last usable.
        assert_eq!(r.last_state().map(|s| s.q), Some(0.25));
        assert_eq!(r.kind().states, [(0.5, None), (0.25, Some(0.5))]);
        r.round_trip(Duration::from_micros(40));
        let run = r.finish(
            Timing::default(),
            Faults::default(),
            Duration::from_millis(5),
        );
        let (seen, last) = run.kind;
        assert_eq!(seen.ticks, [Some(0.5), Some(0.25)]);
        assert_eq!(last, Some(0.25));
        assert_eq!(run.ticks, 2);
        assert!((run.simulated_s - 0.03).abs() < 1e-12);
        assert!((run.wall_s - 0.005).abs() < 1e-12);
        assert_eq!(run.plant_step_us.map(|p| p.count), Some(3));
        assert_eq!(run.timing.compute_us.map(|p| p.count), Some(2));
        assert_eq!(run.timing.round_trip_us.map(|p| p.count), Some(1));
        // Lockstep: the plotted latency is the round trip.
        assert_eq!(run.latency.count(), 1);
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
