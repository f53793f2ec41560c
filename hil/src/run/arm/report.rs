//! What a `ball_blocking` run reports: the per-controller record the
//! [`Recorder`](crate::run::recorder::Recorder) closes, `report.json`, and the outcome table printed
//! at the end. Figures that have no samples are `null` in JSON and `n/a` in the table, never a
//! zero or an error. Runs off the real-time path.

use serde::Serialize;

use crate::run::recorder::Run;
use crate::run::report::{Faults, Percentiles, ReportHeader, Timing};

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

/// What the arm's recorder measured of one controller's plant run (bounded: figures, not
/// samples), inside the [`Run`] every kind's run is.
#[derive(Debug, Clone, Default)]
pub struct ArmRun {
    /// "analytic", "fixed_gain" or "static_timing".
    pub name: &'static str,
    /// One per target ball, by ball id.
    pub balls: Vec<BallOutcome>,
    /// Per target |θ(t_d) − θ_d|, rad, from the plant's state at the target instant; `None`
    /// when the run ended before it.
    pub arrival_error_rad: Vec<Option<f64>>,
    /// Contacts that began between a weight and the arm.
    pub weight_contacts: u64,
    /// Their instants, s (the first [`MAX_CONTACT_TIMES`](super::recorder::MAX_CONTACT_TIMES)).
    pub weight_contacts_s: Vec<f64>,
    /// Ticks per status name.
    pub status_counts: Vec<(&'static str, u64)>,
    /// Ticks where the torque limit acted.
    pub torque_limited_ticks: u64,
    /// The largest damping any tick used, N·m·s/rad.
    pub max_damping_nms_per_rad: f64,
    /// (t, θ) decimated for the plot.
    pub trajectory: Vec<(f64, f64)>,
    /// The controller ran as firmware: what it answered and cost.
    pub firmware: Option<super::firmware::FirmwareReport>,
}

/// Per-controller outcome in `report.json`.
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
    /// Per target |θ(t_d) − θ_d|, rad, measured by the plant at the target instant; `null` for
    /// a target the run did not reach.
    pub arrival_error_rad: Vec<Option<f64>>,
    /// The largest of them; `null` when no target was reached.
    pub max_arrival_error_rad: Option<f64>,
    /// Ticks per servo status.
    pub status_counts: std::collections::BTreeMap<&'static str, u64>,
    /// Control ticks recorded.
    pub ticks: u64,
    /// Ticks where the torque limit acted.
    pub torque_limited_ticks: u64,
    /// The largest damping any tick used, N·m·s/rad.
    pub max_damping_nms_per_rad: f64,
    /// The most the servo may use at the state period (stable limit × margin), N·m·s/rad.
    pub damping_limit_nms_per_rad: f64,
    /// Contacts that began between a weight and the arm (a bouncing weight counts each time).
    pub weight_hits: u64,
    /// Timing of this controller's run.
    pub timing: Timing,
    /// Faults of this controller's run.
    pub faults: Faults,
    /// Plant step cost, µs.
    pub plant_step_us: Option<Percentiles>,
    /// Wall-clock seconds the run took.
    pub wall_s: f64,
    /// With `--controller-in firmware`: the firmware's answers, their agreement with the host
    /// controller and their cost.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub firmware: Option<super::firmware::FirmwareReport>,
}

impl Run<ArmRun> {
    /// Outcome against `targets` targets, with the servo's damping limit.
    pub fn outcome(&self, targets: usize, damping_limit_nms_per_rad: f64) -> ControllerOutcome {
        let arm = &self.kind;
        let blocked_per_target: Vec<bool> = (0..targets)
            .map(|i| arm.balls.get(i).is_some_and(BallOutcome::blocked))
            .collect();
        ControllerOutcome {
            name: arm.name,
            targets,
            blocked: blocked_per_target.iter().filter(|b| **b).count(),
            blocked_per_target,
            max_arrival_error_rad: arm
                .arrival_error_rad
                .iter()
                .flatten()
                .copied()
                .reduce(f64::max),
            arrival_error_rad: arm.arrival_error_rad.clone(),
            status_counts: arm.status_counts.iter().copied().collect(),
            ticks: self.ticks,
            torque_limited_ticks: arm.torque_limited_ticks,
            max_damping_nms_per_rad: arm.max_damping_nms_per_rad,
            damping_limit_nms_per_rad,
            weight_hits: arm.weight_contacts,
            timing: self.timing.clone(),
            faults: self.faults.clone(),
            plant_step_us: self.plant_step_us,
            wall_s: self.wall_s,
            firmware: arm.firmware.clone(),
        }
    }
}

/// `report.json` of the ball-blocking arm.
#[derive(Debug, Serialize)]
pub struct Report {
    /// Completeness, scenario, kind and mode.
    #[serde(flatten)]
    pub header: ReportHeader,
    /// Physics step, s.
    pub physics_dt_s: f64,
    /// Seed.
    pub seed: u64,
    /// Whether the weights were dropped.
    pub weights: bool,
    /// Targets (instant, pose).
    pub target_list: Vec<(f64, f64)>,
    /// One per controller that ran.
    pub controllers: Vec<ControllerOutcome>,
}

fn or_na(v: Option<f64>, f: impl Fn(f64) -> String) -> String {
    v.map_or_else(|| "n/a".to_owned(), f)
}

/// The outcome table printed at the end of a run.
pub fn summary_table(report: &Report) -> String {
    let mut s = String::new();
    s.push_str(&format!(
        "scenario {} ({}), {} mode, control {} Hz, physics dt {} s, weights {}{}\n",
        report.header.scenario,
        report.header.scenario_file,
        report.header.mode,
        report.header.control_rate_hz.unwrap_or_default(),
        report.physics_dt_s,
        if report.weights { "on" } else { "off" },
        if report.header.complete {
            ""
        } else {
            " — INCOMPLETE"
        }
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
            .map(|(e, b)| {
                format!(
                    "{}{}",
                    or_na(*e, |e| format!("{e:.4}")),
                    if *b { "" } else { "✗" }
                )
            })
            .collect();
        s.push_str(&format!(
            "{:<14} {:>5}/{:<2}  {:<34} {:>10} {:>16}\n",
            c.name,
            c.blocked,
            c.targets,
            errors.join(" "),
            or_na(c.max_arrival_error_rad, |e| format!("{e:.2e}")),
            c.weight_hits
        ));
    }
    let t = &report.header.timing;
    let p = |x: &Option<Percentiles>| match x {
        Some(p) => format!("p50 {:.1} p99 {:.1} max {:.1}", p.p50, p.p99, p.max),
        None => "n/a (no samples)".to_owned(),
    };
    s.push_str(&format!("round trip µs {}", p(&t.round_trip_us)));
    if t.realtime {
        s.push_str(&format!(
            "; wake latency µs {}; deadline misses {}; plant steps on stale torques {}; SCHED_FIFO {}",
            p(&t.wake_latency_us),
            t.deadline_misses.unwrap_or(0),
            t.stale_torque_steps.unwrap_or(0),
            t.sched_fifo.unwrap_or(false)
        ));
    }
    s.push('\n');
    let f = &report.header.faults;
    s.push_str(&format!(
        "faults: rejected state frames {}, torque frames rejected by the plant {} ({} over the limit), watchdog trips {}, records dropped {}, safe state {}, plant lost {}\n",
        f.rejected_frames,
        f.plant_rejected_frames,
        f.plant_over_limit_frames,
        f.watchdog_trips,
        f.records_dropped,
        match &f.safe_state {
            Some(s) => format!(
                "sent at t = {:.3} s (step {}), applied by the plant: {}",
                s.sent_at_s,
                s.sent_at_step,
                if s.applied_by_plant { "yes" } else { "no" }
            ),
            None => "no".to_owned(),
        },
        f.plant_lost
    ));
    s
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn unreached_targets_are_null_and_not_part_of_the_maximum() {
        let run = Run::bare(ArmRun {
            name: "analytic",
            arrival_error_rad: vec![Some(0.01), None],
            ..ArmRun::default()
        });
        let o = run.outcome(2, 1.0);
        assert_eq!(o.max_arrival_error_rad, Some(0.01));
        let json = serde_json::to_value(&o).unwrap_or_default();
        assert!(json["arrival_error_rad"][1].is_null());
        let none = Run::bare(ArmRun::default()).outcome(1, 1.0);
        assert!(serde_json::to_value(&none).unwrap_or_default()["max_arrival_error_rad"].is_null());
    }
}
