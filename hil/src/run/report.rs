//! What every kind's report shares: the header each `report.json` opens with
//! ([`ReportHeader`]), fault counters ([`Faults`], [`SafeState`]), timing ([`Timing`],
//! [`Percentiles`]). Figures that have no samples are `null` in JSON, never a zero or an error.
//! Runs off the real-time path.

use serde::Serialize;

/// The safe state, as sent and as the plant acknowledged it.
#[derive(Debug, Clone, Default, Serialize)]
pub struct SafeState {
    /// The plant step the safe-state torque frame answered (sent after that step's state).
    pub sent_at_step: u64,
    /// Simulated time of that step, s.
    pub sent_at_s: f64,
    /// The step of the newest state hil accepted, which the damping torque was computed from
    /// (earlier than `sent_at_step` when the plant's later states were refused).
    pub computed_from_step: u64,
    /// Sequence number of the torque frame flagged SAFE_STATE.
    pub torque_frame_sequence: u64,
    /// The damping-only torque sent, N·m (the first joint's).
    pub torque_nm: f64,
    /// The damping-only torque sent to every joint, root first, N·m.
    pub torques_nm: Vec<f64>,
    /// Whether the send succeeded (a dead plant's socket refuses it).
    pub delivered_to_socket: bool,
    /// Whether a later state frame from the plant named it as the torque that drove its step.
    pub applied_by_plant: bool,
}

/// Fault counters of one run.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Faults {
    /// State frames the harness rejected (bad checksum, version, length, stale or repeated
    /// sequence, non-finite…).
    pub rejected_frames: u64,
    /// Those rejections by reason.
    pub rejected_by_reason: Vec<(String, u64)>,
    /// Torque frames the plant rejected (its own count, from its newest state frame).
    pub plant_rejected_frames: u64,
    /// Of those, frames refused for a torque beyond the scene's limit.
    pub plant_over_limit_frames: u64,
    /// Times the watchdog found no fresh state within its window.
    pub watchdog_trips: u64,
    /// Tick records the I/O threads could not hand to the recorder (channel full): missing from
    /// trajectory.csv and the figures.
    pub records_dropped: u64,
    /// The safe state, when the controller entered it.
    pub safe_state: Option<SafeState>,
    /// Whether the plant process died, hung or sent nothing usable.
    pub plant_lost: bool,
    /// What happened to the plant, when it was lost.
    pub plant_lost_reason: Option<String>,
    /// Simulated time of the last accepted state before the plant was lost, s.
    pub plant_lost_at_s: Option<f64>,
    /// The first state frame hil's clock refused (out of order, wrong time, implausible…), in
    /// words; the counts are in `rejected_by_reason` under `state_*`.
    pub first_rejected_state: Option<String>,
    /// How the plant process ended when that was not a clean exit after its last state (it
    /// exited with an error, or lingered and was killed): the run's results are whole, the
    /// plant's ending is reported here.
    pub plant_exit: Option<String>,
}

impl Faults {
    /// The faults of a run of several controllers: counts summed, the last safe state and the
    /// lost plant kept.
    pub fn sum<'a>(runs: impl IntoIterator<Item = &'a Self>) -> Self {
        let mut faults = Self::default();
        for f in runs {
            faults.rejected_frames += f.rejected_frames;
            faults.plant_rejected_frames += f.plant_rejected_frames;
            faults.plant_over_limit_frames += f.plant_over_limit_frames;
            faults.watchdog_trips += f.watchdog_trips;
            faults.records_dropped += f.records_dropped;
            faults
                .rejected_by_reason
                .extend(f.rejected_by_reason.iter().cloned());
            if f.safe_state.is_some() {
                faults.safe_state.clone_from(&f.safe_state);
            }
            if faults.first_rejected_state.is_none() {
                faults
                    .first_rejected_state
                    .clone_from(&f.first_rejected_state);
            }
            if f.plant_exit.is_some() {
                faults.plant_exit.clone_from(&f.plant_exit);
            }
            if f.plant_lost {
                faults.plant_lost = true;
                faults.plant_lost_reason.clone_from(&f.plant_lost_reason);
                faults.plant_lost_at_s = f.plant_lost_at_s;
            }
        }
        faults
    }
}

/// min/p50/p99/p99.9/max of a sample set (µs), from a histogram at 3 significant digits (min
/// and max exact).
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct Percentiles {
    /// Smallest.
    pub min: f64,
    /// Median.
    pub p50: f64,
    /// 99th percentile.
    pub p99: f64,
    /// 99.9th percentile.
    pub p999: f64,
    /// Largest.
    pub max: f64,
    /// How many samples.
    pub count: u64,
    /// Samples beyond the histogram's range (`runtime::LatencyHistogram::MAX_NS`, 1000 s),
    /// counted at its top.
    pub saturated: u64,
}

/// Timing of a run. In lockstep there is no wall-clock schedule: the wake-up fields are `null`.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Timing {
    /// Whether this was a real-time run.
    #[serde(skip)]
    pub realtime: bool,
    /// The period at which fresh states reached the controller, s: the gains are clamped for it.
    pub state_period_s: f64,
    /// The control period, s.
    pub control_period_s: f64,
    /// Control-thread wake-up latency, µs (real time).
    pub wake_latency_us: Option<Percentiles>,
    /// Tick compute time, µs.
    pub compute_us: Option<Percentiles>,
    /// Ticks that finished after their deadline (real time).
    pub deadline_misses: Option<u64>,
    /// Releases skipped after overruns (real time).
    pub skipped_releases: Option<u64>,
    /// Controller publishes torques for step k → plant applies them → state of step k+1
    /// reaches the controller, µs.
    pub round_trip_us: Option<Percentiles>,
    /// Whether the control thread ran SCHED_FIFO (real time).
    pub sched_fifo: Option<bool>,
    /// Real time: the control thread's watchdog window, ticks without a fresh state before the
    /// safe state (`--watchdog-states` state periods in control ticks).
    pub watchdog_ticks: Option<u64>,
    /// Real time: the longest run of ticks without a fresh state (the plant's longest silence as
    /// the control thread saw it). The watchdog trips when this reaches `watchdog_ticks`.
    pub longest_stale_ticks: Option<u64>,
    /// Plant steps driven by torques computed from an older state than the one the step
    /// started from (real time: the torque came too late for its step, or none came), the
    /// steps before the first torque arrived included.
    pub stale_torque_steps: Option<u64>,
    /// Real time: plant steps taken before any torque had arrived (the plant runs on the wall
    /// clock from its first state; these steps are driven by zero torques). Part of
    /// `stale_torque_steps`.
    pub steps_before_first_torque: Option<u64>,
    /// What the real-time setup could not do (SCHED_FIFO refused, mlockall failed, …); also
    /// printed when the run starts.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

/// What every kind's `report.json` opens with (flattened into it): whether the run is complete
/// and why not, the scenario, its kind and the mode; the control rate, the timing and the
/// faults.
#[derive(Debug, Clone, Serialize)]
pub struct ReportHeader {
    /// Whether every run ran to the scene's end. A run cut short (plant lost, SIGINT, SIGTERM)
    /// says `false` and why in `incomplete_reason`.
    pub complete: bool,
    /// Why the run is incomplete.
    pub incomplete_reason: Option<String>,
    /// Scenario name.
    pub scenario: String,
    /// The file it came from.
    pub scenario_file: String,
    /// The scenario's kind, as a file writes it (`"ball_blocking"` for the arm, whose files may
    /// leave it out).
    pub kind: &'static str,
    /// `"lockstep"` or `"realtime"`.
    pub mode: &'static str,
    /// Control rate, Hz; left out where the runs have rates of their own (`walk3d`: each
    /// run's `control_rate_hz`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub control_rate_hz: Option<f64>,
    /// The first run's timing (`ball_blocking`: the analytic controller's run, or the first).
    pub timing: Timing,
    /// Every run's faults, summed.
    pub faults: Faults,
}

impl ReportHeader {
    /// A header: complete unless `cut` says what was running when the run was cut short, and
    /// why (`incomplete_reason`: "plant lost: … while running the arrival controller").
    pub fn new(
        cut: Option<(String, &super::session::Cut)>,
        scenario: &str,
        scenario_file: &str,
        kind: &'static str,
        mode: sim_host::Mode,
    ) -> Self {
        let incomplete_reason =
            cut.map(|(what, c)| format!("{} while running {what}", c.describe()));
        Self {
            complete: incomplete_reason.is_none(),
            incomplete_reason,
            scenario: scenario.to_owned(),
            scenario_file: scenario_file.to_owned(),
            kind,
            mode: mode.name(),
            control_rate_hz: None,
            timing: Timing::default(),
            faults: Faults::default(),
        }
    }

    /// The header with the runs' control rate (none where each run has its own), timing and
    /// faults.
    pub fn with_runs(self, control_rate_hz: Option<f64>, timing: Timing, faults: Faults) -> Self {
        Self {
            control_rate_hz,
            timing,
            faults,
            ..self
        }
    }
}

impl From<&runtime::LatencySummary> for Percentiles {
    fn from(s: &runtime::LatencySummary) -> Self {
        Self {
            min: s.min,
            p50: s.p50,
            p99: s.p99,
            p999: s.p999,
            max: s.max,
            count: s.count,
            saturated: s.above_range,
        }
    }
}
