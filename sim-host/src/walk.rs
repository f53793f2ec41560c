//! The SIMBICON controller (`control_core::simbicon`) on the biped plant ([`crate::biped`]), in
//! process: the readout of a state frame [`read_biped_frame`], the judge of a walk
//! ([`WalkJudge`]) and a lockstep run ([`run_walk`]) that ticks the
//! controller on every plant state, holds its torques for one physics step (zero-order hold,
//! control period = physics dt) and measures the walk ([`WalkSummary`]).
//!
//! Both sides use the same frame and signs (y up, +x forward, pitch counter-clockwise about +z,
//! joint angle = child pitch − parent pitch, joint order left hip, knee, ankle, right hip, knee,
//! ankle), so the mapping only picks fields; it is checked against the plant's geometry in
//! `tests/biped_walk.rs`.
//!
//! Must never: let a controller error drive the plant (a tick that refuses its input applies
//! zero torque for that step and is counted), or report a fall that the plant did not show.

use control_core::simbicon::{Simbicon, SimbiconConfig, SimbiconError, WalkCommand, WalkerState};

use control_core::frames::StateFrame;

use crate::biped::{
    BODIES, BipedPlant, BipedScene, JOINTS, LEFT_FOOT, MASSES_KG, RIGHT_FOOT, TORSO,
};
use crate::scene::SceneError;

/// Index of the left thigh in body order.
const LEFT_THIGH: usize = 1;
/// Index of the right thigh in body order.
const RIGHT_THIGH: usize = 4;

/// The walker fell when the torso's centre of mass is below this, m (standing: 1.18 m; a
/// walking SIMBICON torso stays above about 1.1 m).
pub const FALL_TORSO_HEIGHT_M: f64 = 0.8;

/// What a walking controller and its recorder read of one biped state frame: SIMBICON's inputs
/// and what judges and draws the walk. Every value is computed from the frame alone, with the
/// biped's masses and joint anchors ([`crate::biped`]).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct BipedReading {
    /// SIMBICON's inputs.
    pub walker: WalkerState,
    /// The plant step of the frame.
    pub step: u64,
    /// The whole body's centre of mass, x and y, m.
    pub com_m: [f64; 2],
    /// Its velocity, x and y, m/s.
    pub com_velocity_m_s: [f64; 2],
    /// Every body's centre of mass (x, y, m) and pitch (rad), body order.
    pub bodies: [([f64; 2], f64); BODIES],
    /// The ground's force on each foot, [left, right], (tangential x, normal y), N.
    pub foot_force_n: [[f64; 2]; 2],
    /// Whether the ground pushed a body other than a foot during the step (SIMBICON's "fell").
    pub non_foot_ground_contact: bool,
}

impl BipedReading {
    /// The torso's centre of mass, x and y, m.
    pub const fn torso_com_m(&self) -> [f64; 2] {
        self.bodies[TORSO].0
    }

    /// Whether the walker has fallen in this state: torso centre below
    /// [`FALL_TORSO_HEIGHT_M`], or a body other than a foot touching the ground.
    pub fn fallen(&self) -> bool {
        self.non_foot_ground_contact || self.torso_com_m()[1] < FALL_TORSO_HEIGHT_M
    }
}

/// A state frame that is not a biped's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotABiped(pub String);

impl std::fmt::Display for NotABiped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "not a biped state: {}", self.0)
    }
}

impl std::error::Error for NotABiped {}

/// The pitch (rotation about +z) of a unit quaternion (w, x, y, z), rad, in (−π, π]: as the
/// plant computes it.
fn pitch_of(q: [f64; 4]) -> f64 {
    let a = 2.0 * q[3].atan2(q[0]);
    let two_pi = std::f64::consts::TAU;
    let w = a - two_pi * (a / two_pi).round();
    if w <= -std::f64::consts::PI {
        w + two_pi
    } else {
        w
    }
}

/// Reads a biped's state frame ([`crate::biped::BipedPlant::state_frame`]): 6 joints, 7 bodies,
/// the feet's forces as its first two contacts. d for each foot is x_COM − x_ankle, the ankle
/// being the ankle joint's anchor on the foot; a foot touches when the ground's normal force on
/// it is > 0. Refuses a frame of another shape (another plant, or a plant that lies).
pub fn read_biped_frame(frame: &StateFrame) -> Result<BipedReading, NotABiped> {
    if frame.joints.len() != JOINTS || frame.bodies.len() != BODIES {
        return Err(NotABiped(format!(
            "{} joints and {} bodies, a biped has {JOINTS} and {BODIES}",
            frame.joints.len(),
            frame.bodies.len()
        )));
    }
    let mut out = BipedReading {
        step: frame.step,
        ..BipedReading::default()
    };
    let mut total_m = 0.0;
    let (mut mx, mut mv) = ([0.0; 2], [0.0; 2]);
    let mut rates = [0.0; BODIES];
    for (b, body) in frame.bodies.iter().enumerate() {
        let com = [body.com_m[0], body.com_m[1]];
        out.bodies[b] = (com, pitch_of(body.orientation));
        rates[b] = body.angular_velocity_rad_s[2];
        let m = MASSES_KG[b];
        total_m += m;
        for k in 0..2 {
            mx[k] += m * com[k];
            mv[k] += m * body.velocity_m_s[k];
        }
    }
    out.com_m = mx.map(|x| x / total_m);
    out.com_velocity_m_s = mv.map(|x| x / total_m);
    for (k, foot) in [LEFT_FOOT, RIGHT_FOOT].into_iter().enumerate() {
        let Some(c) = frame
            .contacts
            .get(k)
            .filter(|c| usize::from(c.body.0) == foot)
        else {
            return Err(NotABiped(format!(
                "contact {k} is not the ground's force on body {foot} (the {} foot)",
                ["left", "right"][k]
            )));
        };
        out.foot_force_n[k] = [c.force_n[0], c.force_n[1]];
    }
    out.non_foot_ground_contact = frame.contacts.iter().any(|c| {
        let b = usize::from(c.body.0);
        b != LEFT_FOOT && b != RIGHT_FOOT && c.force_n[1] > 0.0
    });
    let ankle_x = |foot: usize| {
        let (com, pitch) = out.bodies[foot];
        let a = crate::biped::ankle_on_foot_m();
        let (s, c) = pitch.sin_cos();
        com[0] + c * a[0] - s * a[1]
    };
    let q = |j: usize| frame.joints[j];
    out.walker = WalkerState {
        time_s: frame.sim_time_s,
        torso_pitch_rad: out.bodies[TORSO].1,
        torso_rate_rad_s: rates[TORSO],
        joint_angle_rad: core::array::from_fn(|j| q(j).position_rad),
        joint_rate_rad_s: core::array::from_fn(|j| q(j).velocity_rad_s),
        thigh_pitch_rad: [out.bodies[LEFT_THIGH].1, out.bodies[RIGHT_THIGH].1],
        thigh_rate_rad_s: [rates[LEFT_THIGH], rates[RIGHT_THIGH]],
        com_ahead_of_ankle_m: [
            out.com_m[0] - ankle_x(LEFT_FOOT),
            out.com_m[0] - ankle_x(RIGHT_FOOT),
        ],
        com_velocity_m_s: out.com_velocity_m_s[0],
        foot_contact: out.foot_force_n.map(|f| f[1] > 0.0),
    };
    Ok(out)
}

/// JSimbicon's start (`Simbicon.java`'s `init`: hip 0.898 m high moving at 0.98 m/s, torso
/// 0.051 rad, left hip 0.298, left knee −0.601, left ankle 0.241, right hip −0.221, right knee
/// −0.217, right ankle 0.360 rad) in `scene`: the pose and the forward velocity. The plant
/// gives every body the same velocity and no rotation, so JSimbicon's joint rates (up to
/// 3.5 rad/s) are not reproduced; the height is the plant's default (lowest point on the
/// ground).
pub fn jsimbicon_start(scene: &mut BipedScene) {
    scene.initial_torso_pitch_rad = 0.051;
    scene.initial_joint_angles_rad = [0.298, -0.601, 0.241, -0.221, -0.217, 0.360];
    scene.initial_forward_velocity_m_s = 0.98;
}

/// What a walk did.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct WalkSummary {
    /// Whether it fell: torso centre below [`FALL_TORSO_HEIGHT_M`], or a body other than a foot
    /// touched the ground.
    pub fell: bool,
    /// When, s (the first state that showed it).
    pub fell_at_s: Option<f64>,
    /// The whole body's COM x at the end (or at the fall) minus at the start, m.
    pub distance_m: f64,
    /// `distance_m` over the time walked (to the end or the fall), m/s.
    pub mean_speed_mps: f64,
    /// Stance changes before the fall (controller transitions 1→2 and 3→0).
    pub steps: u32,
    /// Time walked, s.
    pub time_s: f64,
    /// Ticks whose input the controller refused (zero torque applied).
    pub refused_ticks: u64,
    /// Torques the controller's limit cut.
    pub limited_torques: u64,
    /// Lowest torso centre of mass, m.
    pub lowest_torso_m: f64,
}

/// Why a walk could not run.
#[derive(Debug)]
pub enum WalkError {
    /// The scene.
    Scene(SceneError),
    /// The controller's configuration.
    Controller(SimbiconError),
}

impl std::fmt::Display for WalkError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Scene(e) => write!(f, "{e}"),
            Self::Controller(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for WalkError {}

/// Judges a walk from its readings and commands, whatever runs it (in process, [`run_walk`],
/// or through the plant process and the harness): the fall, the distance, the speed, the
/// steps. One judge per run.
#[derive(Debug, Clone, Copy)]
pub struct WalkJudge {
    start_x: Option<f64>,
    last: Option<BipedReading>,
    out: WalkSummary,
}

impl Default for WalkJudge {
    fn default() -> Self {
        Self::new()
    }
}

impl WalkJudge {
    /// A judge that has seen nothing.
    pub const fn new() -> Self {
        Self {
            start_x: None,
            last: None,
            out: WalkSummary {
                fell: false,
                fell_at_s: None,
                distance_m: 0.0,
                mean_speed_mps: 0.0,
                steps: 0,
                time_s: 0.0,
                refused_ticks: 0,
                limited_torques: 0,
                lowest_torso_m: f64::INFINITY,
            },
        }
    }

    /// Note a state; returns whether the walker fell in it (the first such state only: the
    /// fall's time, distance and time walked are those of this state).
    pub fn state(&mut self, r: &BipedReading) -> bool {
        let start_x = *self.start_x.get_or_insert(r.com_m[0]);
        self.out.lowest_torso_m = self.out.lowest_torso_m.min(r.torso_com_m()[1]);
        self.last = Some(*r);
        if !self.out.fell && r.fallen() {
            self.out.fell = true;
            self.out.fell_at_s = Some(r.walker.time_s);
            self.out.distance_m = r.com_m[0] - start_x;
            self.out.time_s = r.walker.time_s;
            return true;
        }
        false
    }

    /// Note a command: a transition into state 0 or 2 is a step (a stance change).
    pub fn command(&mut self, c: &WalkCommand) {
        self.transition(c.state, c.transitioned);
    }

    /// Note the controller's state after a tick and whether the tick changed it: a transition
    /// into state 0 or 2 before the fall is a step (a fallen walker's flailing is not walking).
    pub const fn transition(&mut self, state: u8, transitioned: bool) {
        if transitioned && matches!(state, 0 | 2) && !self.out.fell {
            self.out.steps += 1;
        }
    }

    /// Note a tick whose input the controller refused (zero torque applied).
    pub const fn refused(&mut self) {
        self.out.refused_ticks += 1;
    }

    /// Whether it has fallen.
    pub const fn fell(&self) -> bool {
        self.out.fell
    }

    /// The summary: distance and time to the newest state (or to the fall);
    /// `limited_torques` is the controller's count.
    pub fn finish(&self, limited_torques: u64) -> WalkSummary {
        let mut out = self.out;
        if !out.fell
            && let (Some(last), Some(start_x)) = (self.last, self.start_x)
        {
            out.distance_m = last.com_m[0] - start_x;
            out.time_s = last.walker.time_s;
        }
        out.mean_speed_mps = if out.time_s > 0.0 {
            out.distance_m / out.time_s
        } else {
            0.0
        };
        if !out.lowest_torso_m.is_finite() {
            out.lowest_torso_m = 0.0;
        }
        out.limited_torques = limited_torques;
        out
    }
}

/// Runs `scene` to its end (or to the fall, when `stop_at_fall`) under a controller built from
/// `config`, one tick per physics step, each tick reading the plant's state frame as the
/// harness does ([`read_biped_frame`]), calling `each` with every reading and its command.
pub fn run_walk(
    scene: &BipedScene,
    config: SimbiconConfig,
    stop_at_fall: bool,
    mut each: impl FnMut(&BipedReading, Option<&WalkCommand>),
) -> Result<WalkSummary, WalkError> {
    let mut plant = BipedPlant::new(scene).map_err(WalkError::Scene)?;
    let mut walker = Simbicon::new(config).map_err(WalkError::Controller)?;
    let mut judge = WalkJudge::new();
    loop {
        // The plant's own frames are a biped's.
        let Ok(r) = read_biped_frame(&plant.state_frame()) else {
            break;
        };
        if judge.state(&r) && stop_at_fall {
            break;
        }
        if plant.clock().is_finished() {
            break;
        }
        let (torques, command) = match walker.tick(&r.walker) {
            Ok(c) => {
                judge.command(&c);
                (c.torques_nm, Some(c))
            }
            Err(_) => {
                judge.refused();
                ([0.0; JOINTS], None)
            }
        };
        each(&r, command.as_ref());
        // The controller never returns a torque beyond its limit, which is the plant's.
        if plant.step(&torques).is_err() {
            judge.refused();
            let _ = plant.step(&[0.0; JOINTS]);
        }
    }
    Ok(judge.finish(walker.limited_total()))
}
