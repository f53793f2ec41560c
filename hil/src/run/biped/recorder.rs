//! Records one walking controller's run: the walk's judge ([`WalkJudge`]: fall, distance,
//! speed, steps), the COM speed for the plot, poses for the animation
//! (at most [`POSE_RATE_HZ`] per second) and `trajectory.csv` streamed row by row. Off the
//! real-time path: the walk's [`KindRecorder`] inside the shared
//! [`crate::run::recorder::Recorder`] (the lockstep driver's thread or the real-time recorder thread).

use std::path::Path;

use control_core::frames::StateFrame;
use serde::Serialize;
use sim_host::biped::{BODIES, JOINTS};
use sim_host::walk::{BipedReading, WalkJudge, WalkSummary};

use super::super::recorder::{CsvFile, Decimated, KindRecorder, Run};
use super::super::report::Percentiles;
use super::controller::{WalkController, WalkState, WalkTick};

/// Poses kept for the animation, per simulated second.
pub const POSE_RATE_HZ: f64 = 50.0;

/// `trajectory.csv` of a walk scenario, shared by its controllers one after the other.
#[derive(Debug)]
pub struct WalkCsv(CsvFile);

impl WalkCsv {
    /// Create the file and write its header.
    pub fn create(path: &Path) -> std::io::Result<Self> {
        let header = "controller,step,t_s,state,safe,refused,com_x_m,com_y_m,com_vx_m_s,torso_y_m,torso_pitch_rad,\
                      foot_l_fx_n,foot_l_fy_n,foot_r_fx_n,foot_r_fy_n,\
                      tau_l_hip_nm,tau_l_knee_nm,tau_l_ankle_nm,tau_r_hip_nm,tau_r_knee_nm,tau_r_ankle_nm,\
                      swing_hip_target_rad,limited";
        Ok(Self(CsvFile::create(path, header)?))
    }

    fn row(&mut self, controller: &str, r: &BipedReading, c: &WalkTick) {
        let t = &c.torques_nm;
        let f = &r.foot_force_n;
        self.0.line(format_args!(
            "{controller},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}",
            c.step,
            c.time_s,
            c.state,
            u8::from(c.safe),
            u8::from(c.refused),
            r.com_m[0],
            r.com_m[1],
            r.com_velocity_m_s[0],
            r.torso_com_m()[1],
            r.walker.torso_pitch_rad,
            f[0][0],
            f[0][1],
            f[1][0],
            f[1][1],
            t[0],
            t[1],
            t[2],
            t[3],
            t[4],
            t[5],
            c.swing_hip_target_rad,
            c.limited
        ));
    }

    /// Flush and close; the first write error, if any.
    pub fn finish(self) -> std::io::Result<()> {
        self.0.finish()
    }
}

/// One pose for the animation and the replay: every body's centre of mass and pitch, the whole
/// COM, the feet's forces, the joints' torques.
#[derive(Debug, Clone, Copy)]
pub struct PoseSample {
    /// Time, s.
    pub time_s: f64,
    /// Every body's centre (x, y, m) and pitch (rad), body order.
    pub bodies: [([f64; 2], f64); BODIES],
    /// The whole COM, m.
    pub com_m: [f64; 2],
    /// The ground's force on each foot, [left, right], (x, y), N.
    pub foot_force_n: [[f64; 2]; 2],
    /// The joints' torques of the tick before (the ones the plant applied over the step that
    /// led here), joint order, N·m.
    pub torques_nm: [f64; JOINTS],
}

/// What the walk's recorder measured of one controller's run (inside the [`Run`] every kind's
/// run is).
#[derive(Debug)]
pub struct WalkRun {
    /// Controller name.
    pub name: &'static str,
    /// The judge's summary.
    pub summary: WalkSummary,
    /// The COM's forward speed against time (decimated), m/s.
    pub speed: Vec<(f64, f64)>,
    /// Poses for the animation.
    pub poses: Vec<PoseSample>,
}

/// Per-controller outcome in `report.json`.
#[derive(Debug, Clone, Serialize)]
pub struct WalkOutcome {
    /// Controller name.
    pub name: &'static str,
    /// Whether it fell: torso centre below the fall height, or a body other than a foot
    /// touching the ground.
    pub fell: bool,
    /// When, s.
    pub fell_at_s: Option<f64>,
    /// The whole body's COM x at the end (or at the fall) minus at the start, m.
    pub distance_m: f64,
    /// `distance_m` over the time walked, m/s.
    pub mean_speed_mps: f64,
    /// Stance changes before the fall.
    pub steps: u32,
    /// Time walked (to the end or the fall), s.
    pub time_walked_s: f64,
    /// Lowest torso centre of mass, m.
    pub lowest_torso_m: f64,
    /// Torques the controller's limit cut (joint-ticks).
    pub limited_torques: u64,
    /// Ticks whose input the controller refused (zero torque sent).
    pub refused_ticks: u64,
    /// The gains used, per role: (kp N·m/rad, kd N·m·s/rad, clamped by the period rule).
    pub gains: Vec<RoleGainsOut>,
    /// Ticks sent.
    pub ticks: u64,
    /// The plant's step cost, µs.
    pub plant_step_us: Option<Percentiles>,
    /// The controller's tick compute time, µs.
    pub tick_us: Option<Percentiles>,
    /// Wall time of the run, s.
    pub wall_s: f64,
    /// Simulated time over wall time.
    pub times_real_time: f64,
}

/// One role's gains in the report.
#[derive(Debug, Clone, Serialize)]
pub struct RoleGainsOut {
    /// The role.
    pub role: &'static str,
    /// kp, N·m/rad.
    pub kp: f64,
    /// kd, N·m·s/rad.
    pub kd: f64,
    /// Whether the period's stability rule moved the design pair.
    pub clamped: bool,
}

impl Run<WalkRun> {
    /// The report's entry, with the gains used.
    pub fn outcome(&self, gains: &control_core::simbicon::RoleGains) -> WalkOutcome {
        let s = &self.kind.summary;
        let g = |role: &'static str, p: &control_core::simbicon::PdGains| RoleGainsOut {
            role,
            kp: p.stiffness_nm_per_rad,
            kd: p.damping_nms_per_rad,
            clamped: p.clamped,
        };
        WalkOutcome {
            name: self.kind.name,
            fell: s.fell,
            fell_at_s: s.fell_at_s,
            distance_m: s.distance_m,
            mean_speed_mps: s.mean_speed_mps,
            steps: s.steps,
            time_walked_s: s.time_s,
            lowest_torso_m: s.lowest_torso_m,
            limited_torques: s.limited_torques,
            refused_ticks: s.refused_ticks,
            gains: vec![
                g("torso", &gains.torso),
                g("swing_hip", &gains.swing_hip),
                g("swing_knee", &gains.swing_knee),
                g("swing_ankle", &gains.swing_ankle),
                g("stance_knee", &gains.stance_knee),
                g("stance_ankle", &gains.stance_ankle),
            ],
            ticks: self.ticks,
            plant_step_us: self.plant_step_us,
            tick_us: self.timing.compute_us,
            wall_s: self.wall_s,
            times_real_time: if self.wall_s > 0.0 {
                self.simulated_s / self.wall_s
            } else {
                0.0
            },
        }
    }
}

/// The recorder of one walking run.
pub struct WalkRecorder {
    name: &'static str,
    judge: WalkJudge,
    csv: Option<WalkCsv>,
    keep_poses: bool,
    poses: Vec<PoseSample>,
    next_pose_s: f64,
    speed: Decimated,
    limited: u64,
    last_reading: Option<BipedReading>,
    /// The last tick's torques, for the next pose kept.
    last_torques_nm: [f64; JOINTS],
}

impl WalkRecorder {
    /// A recorder for controller `name`, writing rows into `csv` if given and keeping poses for
    /// the animation when `keep_poses`.
    pub fn new(name: &'static str, csv: Option<WalkCsv>, keep_poses: bool) -> Self {
        Self {
            name,
            judge: WalkJudge::new(),
            csv,
            keep_poses,
            poses: Vec::new(),
            next_pose_s: 0.0,
            speed: Decimated::default(),
            limited: 0,
            last_reading: None,
            last_torques_nm: [0.0; JOINTS],
        }
    }
}

impl KindRecorder<WalkController> for WalkRecorder {
    type Outcome = (WalkRun, Option<WalkCsv>);

    fn state(&mut self, _frame: &StateFrame, state: &WalkState, _previous: Option<&WalkState>) {
        if state.shape.is_some() {
            return;
        }
        let r = state.reading;
        self.judge.state(&r);
        self.speed.push(state.sim_time_s, r.com_velocity_m_s[0]);
        if self.keep_poses && state.sim_time_s >= self.next_pose_s {
            self.next_pose_s = state.sim_time_s + 1.0 / POSE_RATE_HZ - 1e-9;
            self.poses.push(PoseSample {
                time_s: state.sim_time_s,
                bodies: r.bodies,
                com_m: r.com_m,
                foot_force_n: r.foot_force_n,
                torques_nm: self.last_torques_nm,
            });
        }
        self.last_reading = Some(r);
    }

    fn tick(&mut self, command: &WalkTick, _last: Option<&WalkState>) {
        self.last_torques_nm = command.torques_nm;
        if command.refused {
            self.judge.refused();
        }
        self.limited += u64::from(command.limited);
        if !command.safe {
            self.judge.transition(command.state, command.transitioned);
        }
        if let (Some(csv), Some(r)) = (&mut self.csv, &self.last_reading) {
            csv.row(self.name, r, command);
        }
    }

    fn finish(self, _last: Option<&WalkState>) -> Self::Outcome {
        let run = WalkRun {
            name: self.name,
            summary: self.judge.finish(self.limited),
            speed: self.speed.points,
            poses: self.poses,
        };
        (run, self.csv)
    }
}
