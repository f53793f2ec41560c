//! What a run records and what it writes: per-controller samples and plant events in,
//! `report.json`, `trajectory.csv` and the outcome table out. Runs off the real-time path.

use std::io::Write;
use std::path::Path;

use serde::Serialize;

use super::scenario::Target;

/// One control tick as recorded (plant state the tick saw, and what it commanded).
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Sample {
    /// Plant step the state belongs to.
    pub step: u64,
    /// Simulated time of the state, s.
    pub t_s: f64,
    /// Joint angle measured by the plant, rad.
    pub angle_rad: f64,
    /// Joint velocity measured by the plant, rad/s.
    pub velocity_rad_s: f64,
    /// Torque commanded, N·m.
    pub torque_nm: f64,
    /// Stiffness in use, N·m/rad.
    pub stiffness_nm_per_rad: f64,
    /// Damping in use, N·m·s/rad.
    pub damping_nms_per_rad: f64,
    /// Servo status (short name).
    pub status: &'static str,
    /// Whether the torque limit cut the torque.
    pub torque_limited: bool,
}

/// What a ball did, as the plant reported it.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct BallOutcome {
    /// First contact with the arm, s.
    pub contact_s: Option<f64>,
    /// Crossing of the arm's plane, s.
    pub crossed_s: Option<f64>,
}

impl BallOutcome {
    /// Blocked: the plant reported a contact with the arm before the ball passed the plane.
    pub fn blocked(&self) -> bool {
        match (self.contact_s, self.crossed_s) {
            (Some(c), Some(x)) => c <= x,
            (Some(_), None) => true,
            _ => false,
        }
    }
}

/// Everything recorded for one controller's plant run.
#[derive(Debug, Clone, Default)]
pub struct ControllerRun {
    /// "analytic", "fixed_gain" or "static_timing".
    pub name: &'static str,
    /// One per control tick.
    pub samples: Vec<Sample>,
    /// One per target ball, by ball id.
    pub balls: Vec<BallOutcome>,
    /// Simulated times of contacts between a weight and the arm, s.
    pub weight_contacts_s: Vec<f64>,
    /// Faults of this run.
    pub faults: Faults,
    /// Timing of this run.
    pub timing: Timing,
    /// Ticks per status name.
    pub status_counts: Vec<(&'static str, u64)>,
    /// Ticks where the torque limit acted.
    pub torque_limited_ticks: u64,
    /// Plant step cost, µs (from the state frames).
    pub plant_step_us: Percentiles,
    /// Wall-clock duration of the run, s.
    pub wall_s: f64,
}

/// Fault counters of one run.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Faults {
    /// Frames rejected (bad checksum, version, stale or repeated sequence, non-finite…).
    pub rejected_frames: u64,
    /// Rejections by reason.
    pub rejected_by_reason: Vec<(String, u64)>,
    /// Times the watchdog found no fresh state within its window.
    pub watchdog_trips: u64,
    /// Whether the controller ended in its safe state.
    pub safe_state: bool,
    /// Whether the plant process died or hung.
    pub plant_lost: bool,
    /// What happened to the plant, when it was lost.
    pub plant_lost_reason: Option<String>,
    /// Simulated time at which the plant was lost, s.
    pub plant_lost_at_s: Option<f64>,
}

/// min/p50/p99/max of a sample set (µs or whatever the field names).
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
    pub count: usize,
}

impl Percentiles {
    /// Nearest-rank percentiles of `values` (sorted here).
    pub fn of(values: &mut [f64]) -> Self {
        if values.is_empty() {
            return Self::default();
        }
        values.sort_by(f64::total_cmp);
        let n = values.len();
        let rank = |p: f64| {
            let i = ((p * n as f64).ceil() as usize).clamp(1, n) - 1;
            values[i]
        };
        Self {
            min: values[0],
            p50: rank(0.5),
            p99: rank(0.99),
            p999: rank(0.999),
            max: values[n - 1],
            count: n,
        }
    }
}

/// Timing of a run. In lockstep there is no wall-clock schedule: the wake-up fields are `None`.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Timing {
    /// Control-thread wake-up latency, µs (real-time mode).
    pub wake_latency_us: Option<Percentiles>,
    /// Tick compute time, µs.
    pub compute_us: Option<Percentiles>,
    /// Ticks that finished after their deadline (real-time mode).
    pub deadline_misses: Option<u64>,
    /// Releases skipped after overruns (real-time mode).
    pub skipped_releases: Option<u64>,
    /// Controller publishes torques for step k → plant applies them → state of step k+1
    /// reaches the controller, µs.
    pub round_trip_us: Percentiles,
    /// Whether the control thread ran SCHED_FIFO (real-time mode).
    pub sched_fifo: Option<bool>,
    /// Plant steps driven by torques computed from an older state than the one the step
    /// started from (real time: the torque came too late for its step, or none came).
    pub stale_torque_steps: Option<u64>,
    /// What the real-time setup could not do (SCHED_FIFO refused, mlockall failed, …), said
    /// once here rather than silently.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    /// Wake latencies in µs, for the histogram (not serialised).
    #[serde(skip)]
    pub wake_latencies_us: Vec<f64>,
    /// Round trips in µs, for the histogram (not serialised).
    #[serde(skip)]
    pub round_trip_samples_us: Vec<f64>,
}

/// Per-target outcome.
#[derive(Debug, Clone, Serialize)]
pub struct ControllerOutcome {
    /// Controller name.
    pub name: &'static str,
    /// Number of targets.
    pub targets: usize,
    /// Balls blocked.
    pub blocked: usize,
    /// Per target: blocked or not.
    pub blocked_per_target: Vec<bool>,
    /// Per target |θ(t_d) − θ_d|, rad, measured by the plant at the target instant.
    pub arrival_error_rad: Vec<f64>,
    /// The largest of them.
    pub max_arrival_error_rad: f64,
    /// Ticks per servo status.
    pub status_counts: std::collections::BTreeMap<&'static str, u64>,
    /// Ticks where the torque limit acted.
    pub torque_limited_ticks: u64,
    /// Contacts that began between a weight and the arm (a bouncing weight counts each time).
    pub weight_hits: usize,
    /// Timing of this controller's run.
    pub timing: Timing,
    /// Faults of this controller's run.
    pub faults: Faults,
    /// Plant step cost, µs.
    pub plant_step_us: Percentiles,
    /// Wall-clock seconds the run took.
    pub wall_s: f64,
}

impl ControllerRun {
    /// The plant's angle at `t_s`: the state sample whose time is nearest.
    pub fn angle_at(&self, t_s: f64) -> Option<f64> {
        self.samples
            .iter()
            .min_by(|a, b| (a.t_s - t_s).abs().total_cmp(&(b.t_s - t_s).abs()))
            .map(|s| s.angle_rad)
    }

    /// Outcome against `targets`.
    pub fn outcome(&self, targets: &[Target]) -> ControllerOutcome {
        let arrival_error_rad: Vec<f64> = targets
            .iter()
            .map(|t| {
                self.angle_at(t.time_s)
                    .map_or(f64::INFINITY, |a| (a - t.angle_rad).abs())
            })
            .collect();
        let blocked_per_target: Vec<bool> = (0..targets.len())
            .map(|i| self.balls.get(i).is_some_and(BallOutcome::blocked))
            .collect();
        ControllerOutcome {
            name: self.name,
            targets: targets.len(),
            blocked: blocked_per_target.iter().filter(|b| **b).count(),
            blocked_per_target,
            max_arrival_error_rad: arrival_error_rad.iter().copied().fold(0.0, f64::max),
            arrival_error_rad,
            status_counts: self.status_counts.iter().copied().collect(),
            torque_limited_ticks: self.torque_limited_ticks,
            weight_hits: self.weight_contacts_s.len(),
            timing: self.timing.clone(),
            faults: self.faults.clone(),
            plant_step_us: self.plant_step_us,
            wall_s: self.wall_s,
        }
    }
}

/// `report.json`.
#[derive(Debug, Serialize)]
pub struct Report {
    /// Scenario name.
    pub scenario: String,
    /// The file it came from.
    pub scenario_file: String,
    /// "lockstep" or "realtime".
    pub mode: &'static str,
    /// Control rate, Hz.
    pub control_rate_hz: f64,
    /// Physics step, s.
    pub physics_dt_s: f64,
    /// Seed.
    pub seed: u64,
    /// Whether the weights were dropped.
    pub weights: bool,
    /// Targets (instant, pose).
    pub target_list: Vec<(f64, f64)>,
    /// One per controller.
    pub controllers: Vec<ControllerOutcome>,
    /// Timing over the whole run: the analytic controller's (the one the product ships).
    pub timing: Timing,
    /// Faults over the whole run (any controller).
    pub faults: Faults,
}

/// Write `trajectory.csv`: one row per tick and controller.
pub fn write_trajectory_csv(path: &Path, runs: &[ControllerRun]) -> std::io::Result<()> {
    let mut out = std::io::BufWriter::new(std::fs::File::create(path)?);
    writeln!(
        out,
        "controller,step,t_s,angle_rad,velocity_rad_s,torque_nm,stiffness_nm_per_rad,damping_nms_per_rad,status,torque_limited"
    )?;
    for run in runs {
        for s in &run.samples {
            // `{:?}` prints the shortest representation that round-trips: bit-exact CSV.
            writeln!(
                out,
                "{},{},{:?},{:?},{:?},{:?},{:?},{:?},{},{}",
                run.name,
                s.step,
                s.t_s,
                s.angle_rad,
                s.velocity_rad_s,
                s.torque_nm,
                s.stiffness_nm_per_rad,
                s.damping_nms_per_rad,
                s.status,
                u8::from(s.torque_limited)
            )?;
        }
    }
    out.flush()
}

/// The outcome table printed at the end of a run.
pub fn summary_table(report: &Report) -> String {
    let mut s = String::new();
    s.push_str(&format!(
        "scenario {} ({}), {} mode, control {} Hz, physics dt {} s, weights {}\n",
        report.scenario,
        report.scenario_file,
        report.mode,
        report.control_rate_hz,
        report.physics_dt_s,
        if report.weights { "on" } else { "off" }
    ));
    s.push_str(&format!(
        "{:<14} {:>8}  {:<34} {:>10} {:>16}\n",
        "controller", "blocked", "arrival error per target (rad)", "max (rad)", "weight contacts"
    ));
    for c in &report.controllers {
        let errors: Vec<String> = c
            .arrival_error_rad
            .iter()
            .zip(&c.blocked_per_target)
            .map(|(e, b)| format!("{e:.4}{}", if *b { "" } else { "✗" }))
            .collect();
        s.push_str(&format!(
            "{:<14} {:>5}/{:<2}  {:<34} {:>10.2e} {:>16}\n",
            c.name,
            c.blocked,
            c.targets,
            errors.join(" "),
            c.max_arrival_error_rad,
            c.weight_hits
        ));
    }
    let t = &report.timing;
    s.push_str(&format!(
        "round trip µs p50 {:.1} p99 {:.1} max {:.1}",
        t.round_trip_us.p50, t.round_trip_us.p99, t.round_trip_us.max
    ));
    if let Some(w) = &t.wake_latency_us {
        s.push_str(&format!(
            "; wake latency µs p50 {:.1} p99 {:.1} max {:.1}; deadline misses {}; plant steps on stale torques {}; SCHED_FIFO {}",
            w.p50,
            w.p99,
            w.max,
            t.deadline_misses.unwrap_or(0),
            t.stale_torque_steps.unwrap_or(0),
            t.sched_fifo.unwrap_or(false)
        ));
    }
    s.push('\n');
    let f = &report.faults;
    s.push_str(&format!(
        "faults: rejected frames {}, watchdog trips {}, safe state {}, plant lost {}\n",
        f.rejected_frames, f.watchdog_trips, f.safe_state, f.plant_lost
    ));
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_use_nearest_rank() {
        let mut v: Vec<f64> = (1..=1000).map(f64::from).collect();
        let p = Percentiles::of(&mut v);
        assert_eq!(
            (p.min, p.p50, p.p99, p.p999, p.max),
            (1.0, 500.0, 990.0, 999.0, 1000.0)
        );
        assert_eq!(Percentiles::of(&mut []).count, 0);
    }

    #[test]
    fn a_ball_is_blocked_only_by_a_contact_before_its_crossing() {
        let b = |c, x| BallOutcome {
            contact_s: c,
            crossed_s: x,
        };
        assert!(b(Some(1.0), Some(1.1)).blocked());
        assert!(b(Some(1.0), None).blocked());
        assert!(!b(Some(1.2), Some(1.1)).blocked());
        assert!(!b(None, Some(1.1)).blocked());
    }

    #[test]
    fn arrival_error_is_read_at_the_target_instant() {
        let sample = |t_s, angle_rad| Sample {
            step: 0,
            t_s,
            angle_rad,
            velocity_rad_s: 0.0,
            torque_nm: 0.0,
            stiffness_nm_per_rad: 0.0,
            damping_nms_per_rad: 0.0,
            status: "tracking",
            torque_limited: false,
        };
        let run = ControllerRun {
            name: "analytic",
            samples: vec![sample(0.995, 0.40), sample(1.0, 0.49), sample(1.005, 0.6)],
            balls: vec![BallOutcome {
                contact_s: Some(0.97),
                crossed_s: Some(1.0),
            }],
            ..ControllerRun::default()
        };
        let o = run.outcome(&[Target {
            time_s: 1.0,
            angle_rad: 0.5,
        }]);
        assert!((o.arrival_error_rad[0] - 0.01).abs() < 1e-12);
        assert_eq!(o.blocked, 1);
    }
}
