//! The SIMBICON controller (`control_core::simbicon`) on the biped plant ([`crate::biped`]), in
//! process: the readout mapping [`walker_state`] and a lockstep run ([`run_walk`]) that ticks the
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

use control_core::simbicon::{Simbicon, SimbiconConfig, SimbiconError, WalkerState};

use crate::biped::{BipedPlant, BipedScene, BipedState, TORSO};
use crate::scene::SceneError;

/// Index of the left thigh in body order.
const LEFT_THIGH: usize = 1;
/// Index of the right thigh in body order.
const RIGHT_THIGH: usize = 4;
/// Index of the left ankle in joint order.
const LEFT_ANKLE: usize = 2;
/// Index of the right ankle in joint order.
const RIGHT_ANKLE: usize = 5;

/// The walker fell when the torso's centre of mass is below this, m (standing: 1.18 m; a
/// walking SIMBICON torso stays above about 1.1 m).
pub const FALL_TORSO_HEIGHT_M: f64 = 0.8;

/// What SIMBICON reads of a plant state: every field is the plant's, in the same frame and
/// signs; d for each foot is x_COM − x_ankle (the ankle joint's position on the foot).
pub fn walker_state(s: &BipedState) -> WalkerState {
    let com_x = s.com_m[0];
    WalkerState {
        time_s: s.time_s,
        torso_pitch_rad: s.bodies[TORSO].pitch_rad,
        torso_rate_rad_s: s.bodies[TORSO].angular_velocity_rad_s,
        joint_angle_rad: s.joints.map(|j| j.angle_rad),
        joint_rate_rad_s: s.joints.map(|j| j.rate_rad_s),
        thigh_pitch_rad: [
            s.bodies[LEFT_THIGH].pitch_rad,
            s.bodies[RIGHT_THIGH].pitch_rad,
        ],
        thigh_rate_rad_s: [
            s.bodies[LEFT_THIGH].angular_velocity_rad_s,
            s.bodies[RIGHT_THIGH].angular_velocity_rad_s,
        ],
        com_ahead_of_ankle_m: [
            com_x - s.joints[LEFT_ANKLE].position_m[0],
            com_x - s.joints[RIGHT_ANKLE].position_m[0],
        ],
        com_velocity_m_s: s.com_velocity_m_s[0],
        foot_contact: [s.feet[0].touching, s.feet[1].touching],
    }
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
    /// Stance changes (controller transitions 1→2 and 3→0).
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

/// Runs `scene` to its end (or to the fall, when `stop_at_fall`) under a controller built from
/// `config`, one tick per physics step, calling `each` with every state and its command.
pub fn run_walk(
    scene: &BipedScene,
    config: SimbiconConfig,
    stop_at_fall: bool,
    mut each: impl FnMut(&BipedState, Option<&control_core::simbicon::WalkCommand>),
) -> Result<WalkSummary, WalkError> {
    let mut plant = BipedPlant::new(scene).map_err(WalkError::Scene)?;
    let mut walker = Simbicon::new(config).map_err(WalkError::Controller)?;
    let start_x = plant.state().com_m[0];
    let mut out = WalkSummary {
        lowest_torso_m: f64::INFINITY,
        ..WalkSummary::default()
    };
    let mut s = *plant.state();
    loop {
        out.lowest_torso_m = out.lowest_torso_m.min(s.root.com_m[1]);
        if !out.fell && (s.non_foot_ground_contact || s.root.com_m[1] < FALL_TORSO_HEIGHT_M) {
            out.fell = true;
            out.fell_at_s = Some(s.time_s);
            out.distance_m = s.com_m[0] - start_x;
            out.time_s = s.time_s;
            if stop_at_fall {
                break;
            }
        }
        if plant.is_finished() {
            break;
        }
        let (torques, command) = match walker.tick(&walker_state(&s)) {
            Ok(c) => {
                if c.transitioned && matches!(c.state, 0 | 2) {
                    out.steps += 1;
                }
                (c.torques_nm, Some(c))
            }
            Err(_) => {
                out.refused_ticks += 1;
                ([0.0; 6], None)
            }
        };
        each(&s, command.as_ref());
        // The controller never returns a torque beyond its limit, which is the plant's.
        s = match plant.step(&torques) {
            Ok(next) => next,
            Err(_) => {
                out.refused_ticks += 1;
                plant.step(&[0.0; 6]).unwrap_or(s)
            }
        };
    }
    if !out.fell {
        out.distance_m = s.com_m[0] - start_x;
        out.time_s = s.time_s;
    }
    out.mean_speed_mps = if out.time_s > 0.0 {
        out.distance_m / out.time_s
    } else {
        0.0
    };
    out.limited_torques = walker.limited_total();
    Ok(out)
}
