//! The recorder: turns what a run produced (accepted plant states, the controller's tick records,
//! round trips, the control thread's timing records) into the report's figures, streams one CSV
//! row per tick to `trajectory.csv`, and keeps a decimated trajectory for the plot.
//!
//! Memory stays bounded whatever the run's length: figures are histograms (`runtime`'s, fixed
//! range) and running counts, the plotted trajectory is decimated to at most
//! [`MAX_PLOT_POINTS`] points, and per-tick rows go straight to the CSV writer. It never runs on
//! the control thread: in real time the I/O threads hand it records over a bounded channel that
//! never blocks them (a full channel drops the record and counts it).

use std::fs::File;
use std::io::{BufWriter, Write};
use std::time::Duration;

use control_core::frames::{Event, StateFrame};
use control_core::servo::ServoStatus;

use super::controller::{ArmCommand, ArmState, ArmTick};
use super::report::{BallOutcome, ControllerRun, Faults, Percentiles, Timing};
use super::scenario::Target;
use super::session::{LoopController, LoopRecorder};

/// Most points of one controller's trajectory kept for the angle plot.
pub const MAX_PLOT_POINTS: usize = 4096;
/// Most weight-contact instants kept for the plot (all are counted).
pub const MAX_CONTACT_TIMES: usize = 1024;

/// Short names of servo statuses, for the CSV and the counts.
pub fn status_name(record: &ArmTick) -> &'static str {
    if record.safe {
        return "safe";
    }
    match record.output.status {
        ServoStatus::Idle => "idle",
        ServoStatus::Tracking => "tracking",
        ServoStatus::GainClamped => "gain_clamped",
        ServoStatus::Infeasible(_) => "infeasible",
        ServoStatus::Holding => "holding",
        ServoStatus::BadState => "bad_state",
        ServoStatus::Saturated(_) => "saturated",
        _ => "other",
    }
}

/// The CSV header of `trajectory.csv`.
pub const CSV_HEADER: &str = "controller,step,t_s,angle_rad,velocity_rad_s,torque_nm,stiffness_nm_per_rad,damping_nms_per_rad,status,torque_limited";

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

/// `trajectory.csv`, written row by row as ticks are recorded (shared by the controllers of a
/// run, one after the other).
#[derive(Debug)]
pub struct TrajectoryCsv(CsvFile);

impl TrajectoryCsv {
    /// Create the file and write its header.
    pub fn create(path: &std::path::Path) -> std::io::Result<Self> {
        CsvFile::create(path, CSV_HEADER).map(Self)
    }

    fn row(&mut self, controller: &str, r: &ArmTick) {
        let s = &r.state;
        let o = &r.output;
        // `{:?}` prints the shortest representation that round-trips: bit-exact CSV.
        self.0.line(format_args!(
            "{controller},{},{:?},{:?},{:?},{:?},{:?},{:?},{},{}",
            s.step,
            s.sim_time_s,
            s.joint.position_rad,
            s.joint.velocity_rad_s,
            o.torque_nm,
            o.stiffness_nm_per_rad,
            o.damping_nms_per_rad,
            status_name(r),
            u8::from(o.torque_limited)
        ));
    }

    /// Flush; the first write error, if any, is returned here.
    pub fn finish(self) -> std::io::Result<()> {
        self.0.finish()
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

/// What a scene's body id names, for the ball-blocking scene (balls first, then weights).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Body {
    Ball(usize),
    Weight,
}

/// Records one controller's run.
#[derive(Debug)]
pub struct Recorder {
    name: &'static str,
    balls: Vec<BallOutcome>,
    targets: Vec<Target>,
    /// Per target: (|t − t_d|, angle) of the state nearest its instant, once reached.
    arrivals: Vec<Option<(f64, f64)>>,
    next_target: usize,
    previous_state: Option<ArmState>,
    half_state_period_s: f64,
    weight_contacts: u64,
    weight_contacts_s: Vec<f64>,
    status_counts: Vec<(&'static str, u64)>,
    torque_limited_ticks: u64,
    max_damping_nms_per_rad: f64,
    ticks: u64,
    step_cost: LatencyHistogram,
    round_trip: LatencyHistogram,
    compute: LatencyHistogram,
    wake: LatencyHistogram,
    trajectory: Decimated,
    /// The newest state seen.
    pub last_state: Option<ArmState>,
    /// The newest accepted state frame's plant-side counts (rejected, over the limit).
    plant_counts: (u32, u32),
    csv: Option<TrajectoryCsv>,
}

impl Recorder {
    /// A recorder for controller `name`; one ball per target; `csv` receives the tick rows.
    pub fn new(
        name: &'static str,
        targets: &[Target],
        state_period_s: f64,
        csv: Option<TrajectoryCsv>,
    ) -> Self {
        Self {
            name,
            balls: vec![BallOutcome::default(); targets.len()],
            targets: targets.to_vec(),
            arrivals: vec![None; targets.len()],
            next_target: 0,
            previous_state: None,
            half_state_period_s: 0.5 * state_period_s,
            weight_contacts: 0,
            weight_contacts_s: Vec::new(),
            status_counts: Vec::new(),
            torque_limited_ticks: 0,
            max_damping_nms_per_rad: 0.0,
            ticks: 0,
            step_cost: LatencyHistogram::default(),
            round_trip: LatencyHistogram::default(),
            compute: LatencyHistogram::default(),
            wake: LatencyHistogram::default(),
            trajectory: Decimated::default(),
            last_state: None,
            plant_counts: (0, 0),
            csv,
        }
    }

    fn body(&self, id: u16) -> Body {
        let i = usize::from(id);
        if i < self.balls.len() {
            Body::Ball(i)
        } else {
            Body::Weight
        }
    }

    /// Note the events, the step cost and the joint state of an accepted state frame; returns
    /// the arm's state (`None` for a frame without a joint).
    pub fn state(&mut self, frame: &StateFrame) -> Option<ArmState> {
        let t = frame.sim_time_s;
        for event in &frame.events {
            match *event {
                Event::ContactBegan { body } => match self.body(body.0) {
                    Body::Ball(i) => {
                        if let Some(b) = self.balls.get_mut(i) {
                            b.contact_s = Some(b.contact_s.map_or(t, |c| c.min(t)));
                        }
                    }
                    Body::Weight => {
                        self.weight_contacts += 1;
                        if self.weight_contacts_s.len() < MAX_CONTACT_TIMES {
                            self.weight_contacts_s.push(t);
                        }
                    }
                },
                Event::PlaneCrossed { body } => {
                    if let Body::Ball(i) = self.body(body.0)
                        && let Some(b) = self.balls.get_mut(i)
                    {
                        b.crossed_s.get_or_insert(t);
                    }
                }
                _ => {}
            }
        }
        if frame.step > 0 {
            self.step_cost.record(frame.step_cost_ns);
        }
        self.plant_counts = (frame.plant_rejected_frames, frame.plant_over_limit_frames);
        let state = ArmState::of(frame)?;
        self.arrival(state);
        self.trajectory.push(t, state.joint.position_rad);
        self.last_state = Some(state);
        Some(state)
    }

    /// The arrival error is read from the state nearest each target's instant, once the plant
    /// has reached it (a state within half a state period of it, or past it).
    fn arrival(&mut self, state: ArmState) {
        let t = state.sim_time_s;
        while let Some(target) = self.targets.get(self.next_target) {
            if t + self.half_state_period_s < target.time_s {
                break;
            }
            let mut best = (
                (t - target.time_s).abs(),
                (state.joint.position_rad - target.angle_rad).abs(),
            );
            if let Some(p) = self.previous_state {
                let d = (p.sim_time_s - target.time_s).abs();
                if d < best.0 {
                    best = (d, (p.joint.position_rad - target.angle_rad).abs());
                }
            }
            if let Some(slot) = self.arrivals.get_mut(self.next_target) {
                *slot = Some(best);
            }
            self.next_target += 1;
        }
        self.previous_state = Some(state);
    }

    /// Note one tick.
    pub fn tick(&mut self, record: &ArmTick, compute: Option<Duration>) {
        self.ticks += 1;
        if record.output.torque_limited {
            self.torque_limited_ticks += 1;
        }
        self.max_damping_nms_per_rad = self
            .max_damping_nms_per_rad
            .max(record.output.damping_nms_per_rad);
        let name = status_name(record);
        match self.status_counts.iter_mut().find(|(s, _)| *s == name) {
            Some((_, n)) => *n += 1,
            None => self.status_counts.push((name, 1)),
        }
        if let Some(c) = compute {
            self.compute.record_duration(c);
        }
        if let Some(csv) = &mut self.csv {
            csv.row(self.name, record);
        }
    }

    /// Note one round trip.
    pub fn round_trip(&mut self, d: Duration) {
        self.round_trip.record_duration(d);
    }

    /// Close the record: figures, faults. Returns the run and the CSV writer for the next one.
    fn close(
        self,
        mut timing: Timing,
        mut faults: Faults,
        wall: Duration,
    ) -> (ControllerRun, Option<TrajectoryCsv>) {
        timing.round_trip_us = self.round_trip.percentiles_us();
        // Real time: the control thread's own summaries (every tick) are already in `timing`.
        if timing.compute_us.is_none() {
            timing.compute_us = self.compute.percentiles_us();
        }
        faults.plant_rejected_frames = u64::from(self.plant_counts.0);
        faults.plant_over_limit_frames = u64::from(self.plant_counts.1);
        let run = ControllerRun {
            name: self.name,
            balls: self.balls,
            arrival_error_rad: self.arrivals.iter().map(|a| a.map(|(_, e)| e)).collect(),
            weight_contacts: self.weight_contacts,
            weight_contacts_s: self.weight_contacts_s,
            faults,
            timing,
            status_counts: self.status_counts,
            torque_limited_ticks: self.torque_limited_ticks,
            max_damping_nms_per_rad: self.max_damping_nms_per_rad,
            ticks: self.ticks,
            plant_step_us: self.step_cost.percentiles_us(),
            wall_s: wall.as_secs_f64(),
            trajectory: self.trajectory.points,
            latency: if self.wake.count() == 0 {
                self.round_trip
            } else {
                self.wake
            },
            firmware: None,
        };
        (run, self.csv)
    }
}

impl<C: LoopController<State = ArmState, Command = ArmCommand>> LoopRecorder<C> for Recorder {
    type Finished = (ControllerRun, Option<TrajectoryCsv>);

    fn state(&mut self, frame: &StateFrame) -> Option<ArmState> {
        Self::state(self, frame)
    }

    fn tick(&mut self, command: &ArmCommand, compute: Option<Duration>) {
        Self::tick(self, &command.record, compute);
    }

    fn round_trip(&mut self, d: Duration) {
        Self::round_trip(self, d);
    }

    fn thread_tick(&mut self, wake_latency_ns: u64) {
        self.wake.record(wake_latency_ns);
    }

    fn last_state(&self) -> Option<ArmState> {
        self.last_state
    }

    fn finish(self, timing: Timing, faults: Faults, wall: Duration) -> Self::Finished {
        self.close(timing, faults, wall)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use control_core::frames::JointState;

    fn frame(step: u64, t: f64, angle: f64) -> StateFrame {
        let mut f = StateFrame::new(step + 1, step, t);
        let _ = f.push_joint(JointState {
            position_rad: angle,
            velocity_rad_s: 0.0,
        });
        f
    }

    #[test]
    fn arrival_error_is_read_at_the_target_instant_and_unreached_targets_stay_unknown() {
        let targets = [
            Target {
                time_s: 1.0,
                angle_rad: 0.5,
            },
            Target {
                time_s: 2.0,
                angle_rad: 0.0,
            },
        ];
        let mut r = Recorder::new("analytic", &targets, 0.005, None);
        for (k, (t, a)) in [(0.995, 0.40), (1.0, 0.49), (1.005, 0.6)]
            .into_iter()
            .enumerate()
        {
            r.state(&frame(k as u64, t, a));
        }
        let (run, _) = r.close(Timing::default(), Faults::default(), Duration::ZERO);
        assert!((run.arrival_error_rad[0].unwrap_or(f64::NAN) - 0.01).abs() < 1e-12);
        assert_eq!(run.arrival_error_rad[1], None, "t = 2 s was never reached");
    }

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
