//! SIMBICON in 3D as Cartwheel-3d runs it (Coros, Beaudoin, van de Panne; its `SimBiController`
//! and the "Bip" character's `Walking` controller): a per-tick walking controller for a
//! floating-base humanoid. One state per step whose stance side alternates, joint targets from
//! splines of the step's phase, the swing hip tracked in the character (heading) frame with
//! sagittal and coronal balance feedback from the centre of mass, the pelvis held upright through
//! the hips (the root's PD torque made up by the stance hip and swing hip, split by the feet's
//! share of the weight), and quadratic damping of the pelvis against the stance thigh.
//!
//! Must never allocate, block or panic, whatever the input: the configuration is validated when
//! the controller is built ([`Walk3dError::Config`]); a tick refuses a non-finite input or a
//! quaternion that is not unit ([`Walk3dError::Input`]) and time going backwards
//! ([`Walk3dError::TimeWentBack`]) without touching the state machine; every torque returned is
//! finite and within its joint's effort, and a torque the effort cut is flagged in
//! [`Walk3dCommand::limited`], never silently.
//!
//! # Conventions (this project's humanoid, `models/humanoid15.urdf`)
//! - World: **y up**, the character faces **+x**, its left side towards **−z**. Every body's
//!   frame is parallel to the world's when every joint is at zero (standing in a T).
//! - A joint's torque is a world vector, applied **+τ on its child and −τ on its parent** (the
//!   humanoid plant's torque frame). Cartwheel applies +τ to the parent; every formula here is
//!   written for the child, so the numbers are Cartwheel's and the signs follow.
//! - The **character frame** is the pelvis's heading: the twist of its orientation about the
//!   vertical (Cartwheel's `computeHeading`), with zero angular velocity (as Cartwheel).
//! - **d** = the whole body's centre of mass − the stance foot's centre of mass, **v** = the
//!   centre of mass's velocity, both in the character frame's axes (x forward, y up, z right).
//!
//! # The mapping from Cartwheel's Bip
//! Cartwheel's Bip is y up, faces +z, its left side towards +x: a Cartwheel vector
//! (cx, cy, cz) is (cz, cy, −cx) here (a proper rotation, [`from_cartwheel`]). A rotation about
//! Cartwheel's x (the lateral axis) by θ is a rotation about −z here by θ, about its z (forward)
//! one about +x, about its y one about +y; per-axis torque scales (x, y, z) become (z, y, x).
//! So [`Simbicon3dConfig::cartwheel_bip_walking`] holds `Walking.py`'s knots, gains and feedback
//! coefficients unchanged, with their axes mapped.
//!
//! # What is reproduced, and what is not
//! - Reproduced: the state (0.7 s; it ends on the swing foot's ground force above 20 N once the
//!   phase passes 0.5, or at phase 1), the stance swap, the trajectories (Catmull–Rom splines
//!   over the phase, as Cartwheel evaluates them: tangents from value differences, clamped at
//!   the ends), mirroring per stance, `LinearBalanceFeedback` (no clamps: Cartwheel's are ±1000),
//!   the joint PD (`computePDTorque`: the short-way rotation error, damping towards the frame's
//!   angular velocity, the per-axis scale in the child's axes), the root torque made up by the
//!   hips (`computeHipTorques`), the stance hip's quadratic damping (25, capped at 4 rad/s).
//! - Not reproduced: Cartwheel's torque rate limit (2000 N·m per step; at 200–300 Hz it never
//!   binds below the efforts here) and `blendOutTorques` (torques faded as the pelvis falls below
//!   0.4 m: a fall is the harness's to judge). Cartwheel's `tauMax` of 10 000 N·m is no limit;
//!   here each joint's torque norm is bounded by its URDF effort and a cut is reported.
//! - Inputs beside the state: the desired heading (Cartwheel's `desiredHeading`, the pelvis's
//!   target yaw) and a desired velocity of the centre of mass, which the balance feedback
//!   subtracts from v (Cartwheel's `vTrajX`/`vTrajZ` as constants): the walk is steered
//!   sideways or slowed through SIMBICON's own feedback. The velocity tuning Carensac et al. use
//!   (from their 2015 gait controller: learned per-step offsets) is not reproduced; a simpler
//!   one is here, [`SpeedTuner`]: the desired forward velocity the feedback reads is moved once
//!   per step, in proportion to the last step's speed error, so the walk holds a target speed.

use nalgebra::{Quaternion, UnitQuaternion, Vector3};

use crate::dynamo::{Freedom, JointKind, axis_angle};
use crate::frames::BodyMotion;
/// A side of the body: the planar walker's, one type for both walkers.
pub use crate::simbicon::Side;
use crate::stable_pd::{StablePd, StablePdError, StablePdReport};

/// Most joints the controller drives.
pub const MAX_WALK_JOINTS: usize = 16;
/// Torque values of a walker's command: three per joint (a world torque vector each).
pub const MAX_WALK_TORQUES: usize = 3 * MAX_WALK_JOINTS;
/// Most bodies it reads (the whole body's centre of mass).
pub const MAX_WALK_BODIES: usize = 16;
/// Most knots of one spline.
pub const MAX_KNOTS: usize = 8;
/// Most components (rotations) of one trajectory.
pub const MAX_COMPONENTS: usize = 3;
/// Most trajectories of the walking state.
pub const MAX_TRAJECTORIES: usize = 16;
/// Largest gain accepted (stiffness N·m/rad, damping N·m·s/rad).
pub const MAX_GAIN: f64 = 1e6;
/// A torque cut to its joint's effort is cut to effort·(1 − this): a norm computed again from
/// the components, rounded, stays within the effort.
pub const EFFORT_MARGIN: f64 = 1e-9;
/// Tolerance on a unit quaternion's norm in the input.
pub const UNIT_TOLERANCE: f64 = 1e-5;

/// A vector given in Cartwheel's axes (y up, facing +z, left +x) in this project's axes.
pub const fn from_cartwheel(c: [f64; 3]) -> [f64; 3] {
    [c[2], c[1], -c[0]]
}

/// A spline of the phase: knots (φ, value), φ increasing; evaluated as Cartwheel's
/// `evaluate_catmull_rom` (constant beyond the end knots, Hermite in between with tangents half
/// the difference of the neighbouring values). No knot: 0.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Spline {
    phase: [f64; MAX_KNOTS],
    value: [f64; MAX_KNOTS],
    len: usize,
}

impl Spline {
    /// The spline through `knots`; `None` if there are more than [`MAX_KNOTS`], a value is not
    /// finite, or the phases do not increase strictly.
    pub fn new(knots: &[(f64, f64)]) -> Option<Self> {
        if knots.len() > MAX_KNOTS {
            return None;
        }
        let mut s = Self {
            phase: [0.0; MAX_KNOTS],
            value: [0.0; MAX_KNOTS],
            len: knots.len(),
        };
        for (k, &(p, v)) in knots.iter().enumerate() {
            if !(p.is_finite() && v.is_finite()) || (k > 0 && p <= s.phase[k - 1]) {
                return None;
            }
            s.phase[k] = p;
            s.value[k] = v;
        }
        Some(s)
    }

    /// A constant.
    pub fn constant(value: f64) -> Option<Self> {
        Self::new(&[(0.0, value)])
    }

    /// The value at phase `phi`.
    pub fn at(&self, phi: f64) -> f64 {
        let n = self.len;
        if n == 0 {
            return 0.0;
        }
        let (t, v) = (&self.phase[..n], &self.value[..n]);
        // A NaN phase reads the first knot.
        if phi.is_nan() || phi <= t[0] {
            return v[0];
        }
        if phi >= t[n - 1] {
            return v[n - 1];
        }
        // First knot with a larger phase: 1 ≤ i ≤ n − 1.
        let i = t.iter().position(|&p| p > phi).unwrap_or(n - 1).max(1);
        let s = (phi - t[i - 1]) / (t[i] - t[i - 1]);
        let p0 = if i >= 2 { v[i - 2] } else { v[i - 1] };
        let (p1, p2) = (v[i - 1], v[i]);
        let p3 = if i + 1 < n { v[i + 1] } else { v[i] };
        let (m1, m2) = ((p2 - p0) * 0.5, (p3 - p1) * 0.5);
        let (s2, s3) = (s * s, s * s * s);
        p1 * (2.0 * s3 - 3.0 * s2 + 1.0)
            + m1 * (s3 - 2.0 * s2 + s)
            + p2 * (-2.0 * s3 + 3.0 * s2)
            + m2 * (s3 - s2)
    }
}

/// When a component's angle is negated (Cartwheel's `reverseOnStance`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mirror {
    /// Never.
    Never,
    /// While the left leg is the stance leg.
    OnLeftStance,
    /// While the right leg is the stance leg.
    OnRightStance,
}

impl Mirror {
    const fn negates(self, stance: Side) -> bool {
        matches!(
            (self, stance),
            (Self::OnLeftStance, Side::Left) | (Self::OnRightStance, Side::Right)
        )
    }
}

/// SIMBICON's linear balance feedback on one component: cd·(d·axis) + cv·(v·axis), rad
/// (Cartwheel's `LinearBalanceFeedback`; added after the mirroring).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Feedback {
    /// The direction d and v are read along, character frame (unit).
    pub axis: [f64; 3],
    /// Gain on the centre of mass's offset from the stance foot, rad/m.
    pub cd: f64,
    /// Gain on its velocity, rad/(m/s).
    pub cv: f64,
}

/// One rotation of a trajectory: about `axis` by the spline's angle.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Component {
    /// The rotation axis, in the target's frame (unit).
    pub axis: [f64; 3],
    /// The angle over the phase, rad.
    pub angle: Spline,
    /// When the angle is negated.
    pub mirror: Mirror,
    /// Balance feedback added to the angle.
    pub feedback: Option<Feedback>,
}

/// A joint's part in the gait: which of a side's joints.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Limb {
    /// Hip (ball).
    Hip,
    /// Knee.
    Knee,
    /// Ankle.
    Ankle,
    /// Toe joint.
    Toe,
    /// Shoulder.
    Shoulder,
    /// Elbow.
    Elbow,
}

impl Limb {
    /// A side's limb joints, hip to elbow.
    pub const ALL: [Self; 6] = [
        Self::Hip,
        Self::Knee,
        Self::Ankle,
        Self::Toe,
        Self::Shoulder,
        Self::Elbow,
    ];
}

/// Which joint a trajectory drives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TrajectoryJoint {
    /// The pelvis's world orientation (Cartwheel's "root").
    Root,
    /// The swing side's limb.
    Swing(Limb),
    /// The stance side's limb.
    Stance(Limb),
    /// A joint by index (the waist, the neck).
    Joint(usize),
}

/// A joint's target over the phase: its components composed in order (each applied after the
/// previous: q = R_k ⋯ R_1).
#[derive(Debug, Clone, PartialEq)]
pub struct Trajectory {
    /// The joint.
    pub joint: TrajectoryJoint,
    /// Target relative to the character frame instead of the parent body (the swing hip always
    /// is).
    pub character_frame: bool,
    /// The rotations (at most [`MAX_COMPONENTS`]).
    pub components: heapless::Vec<Component, MAX_COMPONENTS>,
}

/// One joint as the controller drives it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct WalkJoint {
    /// The parent body's index in the state's bodies.
    pub parent: usize,
    /// The child body's index.
    pub child: usize,
    /// Its freedom (axes in the parent's frame): the torque is projected onto the free axes.
    pub kind: JointKind,
    /// Stiffness, N·m/rad.
    pub kp: f64,
    /// Damping, N·m·s/rad.
    pub kd: f64,
    /// Per-axis scale of the PD torque in the child's axes (Cartwheel's `scale`).
    pub scale: [f64; 3],
    /// The largest torque norm, N·m (the URDF effort).
    pub effort_nm: f64,
}

/// The joints of one side.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SideJoints {
    /// Hip joint index.
    pub hip: usize,
    /// Knee joint index.
    pub knee: usize,
    /// Ankle joint index.
    pub ankle: usize,
    /// Toe joint index, if any.
    pub toe: Option<usize>,
    /// Shoulder joint index, if any.
    pub shoulder: Option<usize>,
    /// Elbow joint index, if any.
    pub elbow: Option<usize>,
    /// The foot's body index (d is measured from its centre of mass).
    pub foot_body: usize,
}

impl SideJoints {
    /// The joint of `limb`, if this side has it.
    pub const fn limb(&self, limb: Limb) -> Option<usize> {
        match limb {
            Limb::Hip => Some(self.hip),
            Limb::Knee => Some(self.knee),
            Limb::Ankle => Some(self.ankle),
            Limb::Toe => self.toe,
            Limb::Shoulder => self.shoulder,
            Limb::Elbow => self.elbow,
        }
    }
}

/// The pelvis's PD (Cartwheel's root control parameters).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RootGains {
    /// Stiffness, N·m/rad.
    pub kp: f64,
    /// Damping, N·m·s/rad.
    pub kd: f64,
    /// Per-axis scale in the pelvis's axes.
    pub scale: [f64; 3],
}

/// Everything the controller is built from.
#[derive(Debug, Clone, PartialEq)]
pub struct Simbicon3dConfig {
    /// Every driven joint, in torque order.
    pub joints: heapless::Vec<WalkJoint, MAX_WALK_JOINTS>,
    /// Every body's mass, kg, in state order (the centre of mass).
    pub body_masses_kg: heapless::Vec<f64, MAX_WALK_BODIES>,
    /// The pelvis's body index.
    pub root_body: usize,
    /// The left and right sides.
    pub sides: [SideJoints; 2],
    /// The pelvis's PD.
    pub root: RootGains,
    /// The walking state's trajectories.
    pub trajectories: heapless::Vec<Trajectory, MAX_TRAJECTORIES>,
    /// The state's duration, s (it ends at phase 1).
    pub state_duration_s: f64,
    /// The phase after which the swing foot's ground contact ends the state.
    pub min_phase_for_contact: f64,
    /// The swing foot's upward ground force that counts as contact, N.
    pub min_swing_force_n: f64,
    /// The stance hip's quadratic damping, N·m·s²/rad² (0: none).
    pub stance_hip_damping: f64,
    /// The relative angular velocity at which that damping's direction vector is capped, rad/s.
    pub stance_hip_max_velocity_rad_s: f64,
    /// The first stance leg.
    pub first_stance: Side,
}

/// What is wrong with a configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConfigError {
    /// A joint's or side's body index is not a body, or a joint's parent is its child.
    BodyIndex,
    /// A side's or trajectory's joint index is not a joint.
    JointIndex,
    /// A mass is not finite and positive.
    Mass,
    /// A gain, scale or effort is not finite, negative, or beyond [`MAX_GAIN`].
    Gain,
    /// A joint's axis is zero or not finite.
    Axis,
    /// A component's axis is not a finite non-zero vector, or a feedback gain is not finite.
    Component,
    /// The state's duration, minimum phase or contact force is not finite and positive.
    Timing,
    /// A limb named by a trajectory is missing on a side.
    MissingLimb,
    /// A speed tuning's target, gain or bound is not finite or out of its range.
    SpeedTuning,
}

/// An input the tick refuses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InputError {
    /// Fewer bodies than the configuration reads.
    TooFewBodies,
    /// A body's value is not finite (its index).
    NonFinite(usize),
    /// A body's orientation is not a unit quaternion (its index).
    NotUnit(usize),
    /// The time or a foot force is not finite.
    Scalar,
}

/// Velocity tuning of the walk's forward speed (see [`SpeedTuner`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SpeedTuning {
    /// The forward speed of the centre of mass to hold, m/s, within ±[`MAX_TUNED_SPEED_M_S`].
    pub target_m_s: f64,
    /// How far one step moves the desired forward velocity per m/s of the last step's speed
    /// error, in [0, [`MAX_TUNING_GAIN`]].
    pub gain: f64,
    /// The desired forward velocity is kept within ±this, m/s, in [0, [`MAX_TUNED_SPEED_M_S`]].
    pub bound_m_s: f64,
}

/// Largest target speed and bound of a [`SpeedTuning`], m/s.
pub const MAX_TUNED_SPEED_M_S: f64 = 5.0;
/// Largest gain of a [`SpeedTuning`].
pub const MAX_TUNING_GAIN: f64 = 10.0;

/// Holds a walk's forward speed by moving the desired forward velocity that SIMBICON's sagittal
/// feedback reads (`Walk3dInput::desired_velocity_m_s[0]`): at each step's start, by
/// `gain` × (target − the mean forward velocity over the step that ended), kept within
/// ±`bound_m_s` (each step it was held at the bound is counted). Too slow a walk raises it, so
/// the feedback places the swing foot less far ahead and the body falls forward faster.
///
/// Never allocates or panics: a non-finite velocity is left out of the mean and counted.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SpeedTuner {
    tuning: SpeedTuning,
    desired_m_s: f64,
    sum_m_s: f64,
    ticks: u32,
    /// Steps that ended with the desired velocity held at its bound.
    pub bound_steps: u32,
    /// Ticks whose velocity was not finite (left out).
    pub skipped_ticks: u32,
    /// The mean forward velocity of the last step that ended, m/s.
    pub last_step_m_s: Option<f64>,
}

impl SpeedTuner {
    /// A tuner starting from a desired forward velocity of 0 (Cartwheel's walk as given).
    pub fn new(tuning: SpeedTuning) -> Result<Self, Walk3dError> {
        let t = tuning;
        let ok = t.target_m_s.is_finite()
            && t.target_m_s.abs() <= MAX_TUNED_SPEED_M_S
            && t.gain.is_finite()
            && (0.0..=MAX_TUNING_GAIN).contains(&t.gain)
            && t.bound_m_s.is_finite()
            && (0.0..=MAX_TUNED_SPEED_M_S).contains(&t.bound_m_s);
        if !ok {
            return Err(Walk3dError::Config(ConfigError::SpeedTuning));
        }
        Ok(Self {
            tuning,
            desired_m_s: 0.0,
            sum_m_s: 0.0,
            ticks: 0,
            bound_steps: 0,
            skipped_ticks: 0,
            last_step_m_s: None,
        })
    }

    /// The desired forward velocity for the next tick, m/s.
    pub fn desired_m_s(&self) -> f64 {
        self.desired_m_s
    }

    /// The tuning.
    pub fn tuning(&self) -> SpeedTuning {
        self.tuning
    }

    /// Changes the target speed (a speed command), m/s; a target not finite or beyond
    /// ±[`MAX_TUNED_SPEED_M_S`] is refused and the old one kept.
    pub fn set_target(&mut self, target_m_s: f64) -> Result<(), Walk3dError> {
        if !(target_m_s.is_finite() && target_m_s.abs() <= MAX_TUNED_SPEED_M_S) {
            return Err(Walk3dError::Config(ConfigError::SpeedTuning));
        }
        self.tuning.target_m_s = target_m_s;
        Ok(())
    }

    /// One tick's forward velocity of the centre of mass (character frame, m/s) and whether a
    /// step began at that tick (`Walk3dCommand::step_began`): a step's start closes the step
    /// before (this tick's velocity counts towards the new step).
    pub fn observe(&mut self, forward_m_s: f64, step_began: bool) {
        if step_began && self.ticks > 0 {
            let mean = self.sum_m_s / f64::from(self.ticks);
            let t = self.tuning;
            let moved = self.desired_m_s + t.gain * (t.target_m_s - mean);
            self.desired_m_s = moved.clamp(-t.bound_m_s, t.bound_m_s);
            if moved.abs() >= t.bound_m_s && t.gain > 0.0 {
                self.bound_steps = self.bound_steps.saturating_add(1);
            }
            self.last_step_m_s = Some(mean);
            self.sum_m_s = 0.0;
            self.ticks = 0;
        }
        if forward_m_s.is_finite() {
            self.sum_m_s += forward_m_s;
            self.ticks = self.ticks.saturating_add(1);
        } else {
            self.skipped_ticks = self.skipped_ticks.saturating_add(1);
        }
    }
}

/// Why a build or a tick failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Walk3dError {
    /// The configuration is invalid.
    Config(ConfigError),
    /// The input is refused (nothing was changed).
    Input(InputError),
    /// The time is earlier than the last tick's.
    TimeWentBack,
}

impl core::fmt::Display for Walk3dError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Self::Config(e) => write!(f, "invalid walking configuration: {e:?}"),
            Self::Input(e) => write!(f, "walking input refused: {e:?}"),
            Self::TimeWentBack => write!(f, "walking input refused: time went back"),
        }
    }
}

impl core::error::Error for Walk3dError {}

/// What a tick reads: the time, every body's motion (the plant's state frame's bodies), and the
/// upward ground force on each foot with its toes.
#[derive(Debug, Clone, Copy)]
pub struct Walk3dInput<'a> {
    /// Time, s.
    pub time_s: f64,
    /// Every body's world motion, in the configuration's body order.
    pub bodies: &'a [BodyMotion],
    /// The ground's upward force on the left and right foot (with toes), N.
    pub foot_up_force_n: [f64; 2],
    /// The desired velocity of the centre of mass in the character frame, m/s: (forward,
    /// rightward). The balance feedback reads v − this (Cartwheel's `vTrajX`/`vTrajZ`); (0, 0)
    /// is Cartwheel's Bip walk as given.
    pub desired_velocity_m_s: [f64; 2],
    /// The heading the pelvis is held at, rad about +y (0: facing +x; Cartwheel's
    /// `desiredHeading`).
    pub desired_heading_rad: f64,
}

/// What a tick returns.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Walk3dCommand {
    /// Each joint's torque, world vector, N·m (+τ on the child, −τ on the parent); joints beyond
    /// the configuration's are zero.
    pub torques_nm: [[f64; 3]; MAX_WALK_JOINTS],
    /// The stance side this tick ran.
    pub stance: Side,
    /// The phase, in [0, 1].
    pub phase: f64,
    /// The state began at this tick (a foot strike or the state's end).
    pub step_began: bool,
    /// Joints whose torque norm was cut to the effort (bit k: joint k).
    pub limited: u32,
    /// Each joint's torque norm as the controller asked for it, before the effort's cut, N·m
    /// (not finite where the torque was not).
    pub asked_nm: [f64; MAX_WALK_JOINTS],
    /// The stance foot's share of the feet's upward force used to split the root's torque
    /// between the hips (Cartwheel's ratio; 1 with no force on either foot).
    pub stance_share: f64,
    /// d, the centre of mass from the stance foot, character frame, m.
    pub d_m: [f64; 3],
    /// v, the centre of mass's velocity, character frame, m/s.
    pub v_m_s: [f64; 3],
}

/// The 3D SIMBICON controller (see the module docs).
#[derive(Debug, Clone)]
pub struct Simbicon3d {
    config: Simbicon3dConfig,
    freedoms: heapless::Vec<Freedom, MAX_WALK_JOINTS>,
    stance: Side,
    state_start_s: Option<f64>,
    last_time_s: Option<f64>,
    steps: u32,
    limited_total: u64,
}

/// What a tick would do, before the effort cut and the commit.
#[derive(Debug, Clone, Copy)]
struct Plan {
    /// Each joint's torque on its free axes, not cut to its effort, N·m.
    torques: [[f64; 3]; MAX_WALK_JOINTS],
    stance: Side,
    phase: f64,
    step_began: bool,
    state_start: f64,
    share: f64,
    d: Vector3<f64>,
    v: Vector3<f64>,
}

fn unit3(v: [f64; 3]) -> Option<Vector3<f64>> {
    let v = Vector3::from(v);
    let n = libm::sqrt(v.norm_squared());
    (v.iter().all(|c| c.is_finite()) && n > 0.0 && n.is_finite()).then(|| v / n)
}

fn gain_ok(g: f64) -> bool {
    g.is_finite() && (0.0..=MAX_GAIN).contains(&g)
}

impl Simbicon3d {
    /// Validates `config` and builds the controller, standing on [`Simbicon3dConfig::first_stance`]
    /// at phase 0 from the first tick.
    pub fn new(config: Simbicon3dConfig) -> Result<Self, Walk3dError> {
        use ConfigError as E;
        let fail = |e| Err(Walk3dError::Config(e));
        let nb = config.body_masses_kg.len();
        let nj = config.joints.len();
        if config
            .body_masses_kg
            .iter()
            .any(|m| !(m.is_finite() && *m > 0.0))
        {
            return fail(E::Mass);
        }
        let mut freedoms = heapless::Vec::new();
        for j in &config.joints {
            if j.parent >= nb || j.child >= nb || j.parent == j.child {
                return fail(E::BodyIndex);
            }
            if !(gain_ok(j.kp)
                && gain_ok(j.kd)
                && j.scale.iter().all(|s| gain_ok(*s))
                && j.effort_nm.is_finite()
                && j.effort_nm > 0.0)
            {
                return fail(E::Gain);
            }
            let f = Freedom::new(&j.kind).map_err(|_| Walk3dError::Config(E::Axis))?;
            // Capacity: joints ≤ MAX_WALK_JOINTS, so this always fits.
            let _ = freedoms.push(f);
        }
        if config.root_body >= nb {
            return fail(E::BodyIndex);
        }
        for s in &config.sides {
            if s.foot_body >= nb {
                return fail(E::BodyIndex);
            }
            let limbs = [
                Some(s.hip),
                Some(s.knee),
                Some(s.ankle),
                s.toe,
                s.shoulder,
                s.elbow,
            ];
            if limbs.iter().flatten().any(|&j| j >= nj) {
                return fail(E::JointIndex);
            }
            if config.joints.get(s.hip).map(|j| j.parent) != Some(config.root_body) {
                return fail(E::JointIndex);
            }
        }
        let r = &config.root;
        if !(gain_ok(r.kp) && gain_ok(r.kd) && r.scale.iter().all(|s| gain_ok(*s))) {
            return fail(E::Gain);
        }
        for t in &config.trajectories {
            match t.joint {
                TrajectoryJoint::Joint(j) if j >= nj => return fail(E::JointIndex),
                TrajectoryJoint::Swing(l) | TrajectoryJoint::Stance(l)
                    if config.sides.iter().any(|s| s.limb(l).is_none()) =>
                {
                    return fail(E::MissingLimb);
                }
                _ => {}
            }
            for c in &t.components {
                let fb_ok = c.feedback.is_none_or(|f| {
                    unit3(f.axis).is_some() && f.cd.is_finite() && f.cv.is_finite()
                });
                if unit3(c.axis).is_none() || !fb_ok {
                    return fail(E::Component);
                }
            }
        }
        let timing_ok = config.state_duration_s.is_finite()
            && config.state_duration_s > 0.0
            && config.min_phase_for_contact.is_finite()
            && (0.0..=1.0).contains(&config.min_phase_for_contact)
            && config.min_swing_force_n.is_finite()
            && config.min_swing_force_n >= 0.0
            && gain_ok(config.stance_hip_damping)
            && config.stance_hip_max_velocity_rad_s.is_finite()
            && config.stance_hip_max_velocity_rad_s > 0.0;
        if !timing_ok {
            return fail(E::Timing);
        }
        Ok(Self {
            stance: config.first_stance,
            config,
            freedoms,
            state_start_s: None,
            last_time_s: None,
            steps: 0,
            limited_total: 0,
        })
    }

    /// The configuration.
    pub fn config(&self) -> &Simbicon3dConfig {
        &self.config
    }

    /// The current stance side.
    pub fn stance(&self) -> Side {
        self.stance
    }

    /// States begun after the first (steps taken).
    pub fn steps(&self) -> u32 {
        self.steps
    }

    /// Joint-ticks whose torque was cut to the effort, since the start.
    pub fn limited_total(&self) -> u64 {
        self.limited_total
    }

    /// One control tick (see the module docs). On an error nothing changed.
    pub fn tick(&mut self, input: &Walk3dInput<'_>) -> Result<Walk3dCommand, Walk3dError> {
        let plan = self.plan(input)?;
        Ok(self.finish(input.time_s, &plan, &plan.torques))
    }

    /// One control tick whose torques are those of `spd` ([`StablePd`]: the walker evaluated on
    /// the state one period ahead, its damping acting on the accelerations its torques cause),
    /// then cut to the efforts as [`Simbicon3d::tick`] cuts them. The second value is what
    /// `spd` did; where it failed, the tick's own torques were sent (a fallback the caller
    /// should count). `spd` remembers the torques as cut: whatever the caller adds to them
    /// afterwards (the ground-contact stabiliser's supplement) its observer takes for a
    /// disturbance, which the damping resists. On an error nothing changed.
    pub fn tick_stable_pd(
        &mut self,
        input: &Walk3dInput<'_>,
        spd: &mut StablePd,
    ) -> Result<(Walk3dCommand, Result<StablePdReport, StablePdError>), Walk3dError> {
        let plan = self.plan(input)?;
        let nj = self.config.joints.len();
        let mut torques = [[0.0; 3]; MAX_WALK_JOINTS];
        let report = spd.torques(
            input.time_s,
            input.bodies,
            |bodies, out| {
                let probe = Walk3dInput { bodies, ..*input };
                match (self.plan(&probe), out.get_mut(..nj)) {
                    (Ok(p), Some(out)) => {
                        out.copy_from_slice(&p.torques[..nj]);
                        true
                    }
                    _ => false,
                }
            },
            &mut torques[..nj],
        );
        let sent = if report.is_ok() {
            &torques
        } else {
            &plan.torques
        };
        let command = self.finish(input.time_s, &plan, sent);
        // The observer's last torques are those sent, as cut.
        spd.set_applied(command.torques_nm.get(..nj).unwrap_or(&[]));
        Ok((command, report))
    }

    /// What a tick at `input` would do, projected onto the joints' free axes but not yet cut
    /// to the efforts; changes nothing.
    fn plan(&self, input: &Walk3dInput<'_>) -> Result<Plan, Walk3dError> {
        let bodies = self.checked_bodies(input)?;
        let n = self.config.body_masses_kg.len();
        let bodies = &bodies[..n];
        if let Some(last) = self.last_time_s
            && input.time_s < last
        {
            return Err(Walk3dError::TimeWentBack);
        }
        let cfg = &self.config;
        // The state machine: the transition is checked before the torques.
        let start = self.state_start_s.unwrap_or(input.time_s);
        let mut stance = self.stance;
        let mut phase = (input.time_s - start) / cfg.state_duration_s;
        let swing_force = input.foot_up_force_n[stance.other().index()];
        let mut step_began = self.state_start_s.is_none();
        let mut state_start = start;
        if phase >= 1.0
            || (phase > cfg.min_phase_for_contact && swing_force > cfg.min_swing_force_n)
        {
            stance = stance.other();
            phase = 0.0;
            state_start = input.time_s;
            step_began = true;
        }
        let phase = phase.clamp(0.0, 1.0);

        // The character frame, d and v.
        let pelvis = &bodies[cfg.root_body];
        let heading = heading_of(&pelvis.0);
        let (mut com, mut vel, mut mass) = (Vector3::zeros(), Vector3::zeros(), 0.0);
        for (b, m) in bodies.iter().zip(&cfg.body_masses_kg) {
            com += b.1 * *m;
            vel += b.2 * *m;
            mass += *m;
        }
        com /= mass;
        vel /= mass;
        let sides = cfg.sides;
        let (st, sw) = (sides[stance.index()], sides[stance.other().index()]);
        let foot = &bodies[st.foot_body];
        let d = heading.inverse() * (com - foot.1);
        let v = heading.inverse() * vel;
        let v_fb = v - Vector3::new(
            input.desired_velocity_m_s[0],
            0.0,
            input.desired_velocity_m_s[1],
        );

        // Targets and PD torques; joints without a trajectory hold the identity relative to
        // their parent.
        let nj = cfg.joints.len();
        let mut targets: [(UnitQuaternion<f64>, bool); MAX_WALK_JOINTS] =
            [(UnitQuaternion::identity(), false); MAX_WALK_JOINTS];
        let mut root_target = UnitQuaternion::identity();
        for t in &cfg.trajectories {
            let mut q = UnitQuaternion::identity();
            for c in &t.components {
                let mut angle = c.angle.at(phase);
                if c.mirror.negates(stance) {
                    angle = -angle;
                }
                if let Some(f) = c.feedback {
                    let axis = Vector3::from(f.axis);
                    angle += f.cd * d.dot(&axis) + f.cv * v_fb.dot(&axis);
                }
                let axis = nalgebra::Unit::new_normalize(Vector3::from(c.axis));
                q = UnitQuaternion::from_axis_angle(&axis, angle) * q;
            }
            let joint = match t.joint {
                TrajectoryJoint::Root => {
                    root_target = q;
                    continue;
                }
                TrajectoryJoint::Swing(l) => sw.limb(l),
                TrajectoryJoint::Stance(l) => st.limb(l),
                TrajectoryJoint::Joint(j) => Some(j),
            };
            if let Some(j) = joint.filter(|&j| j < nj) {
                targets[j] = (q, t.character_frame || j == sw.hip);
            }
        }
        let mut torques = [Vector3::zeros(); MAX_WALK_JOINTS];
        for (k, j) in cfg.joints.iter().enumerate() {
            let (parent, child) = (&bodies[j.parent], &bodies[j.child]);
            let (target, in_character) = targets[k];
            let (wd, frame_w) = if in_character {
                (heading * target, Vector3::zeros())
            } else {
                (parent.0 * target, parent.3)
            };
            let error = axis_angle(&(wd * child.0.inverse())).rotation_vector();
            let tau = error * j.kp + (frame_w - child.3) * j.kd;
            torques[k] = scaled(&child.0, tau, j.scale);
        }

        // The pelvis's torque, made up by the hips (Cartwheel's computeHipTorques).
        let root_d = UnitQuaternion::from_axis_angle(&Vector3::y_axis(), input.desired_heading_rad)
            * root_target;
        let root_error = axis_angle(&(root_d * pelvis.0.inverse())).rotation_vector();
        let root_tau = scaled(
            &pelvis.0,
            root_error * cfg.root.kp - pelvis.3 * cfg.root.kd,
            cfg.root.scale,
        );
        let (f_st, f_sw) = (
            input.foot_up_force_n[stance.index()],
            input.foot_up_force_n[stance.other().index()],
        );
        let total = f_st + f_sw;
        let (share, root_strength) = if total.abs() > 1e-9 {
            (f_st / total, 1.0)
        } else {
            (1.0, 0.0)
        };
        let mut on_pelvis = Vector3::zeros();
        for (k, j) in cfg.joints.iter().enumerate() {
            if j.parent == cfg.root_body {
                on_pelvis -= torques[k];
            }
        }
        let makeup = (on_pelvis - root_tau) * root_strength; // the pelvis then gets root_tau
        // −Σ τ_j (child convention) = the torque on the pelvis; adding the makeup to the hips
        // (which act −τ on the pelvis) brings it to root_tau.
        torques[st.hip] += makeup * share;
        torques[sw.hip] += makeup * (1.0 - share);
        if cfg.stance_hip_damping > 0.0 {
            let mut w = pelvis.3 - bodies[cfg.joints[st.hip].child].3;
            let len = libm::sqrt(w.norm_squared());
            if len > cfg.stance_hip_max_velocity_rad_s {
                w *= cfg.stance_hip_max_velocity_rad_s / len;
            }
            torques[st.hip] += w * (cfg.stance_hip_damping * len);
        }

        // Projection onto the free axes.
        let mut projected = [[0.0; 3]; MAX_WALK_JOINTS];
        for (k, (j, f)) in cfg.joints.iter().zip(&self.freedoms).enumerate() {
            let (sent, _) = f.project(&bodies[j.parent].0, torques[k]);
            projected[k] = [sent.x, sent.y, sent.z];
        }
        Ok(Plan {
            torques: projected,
            stance,
            phase,
            step_began,
            state_start,
            share,
            d,
            v,
        })
    }

    /// The effort cut of `torques` and the output, and the commit of `plan`'s state.
    fn finish(
        &mut self,
        time_s: f64,
        plan: &Plan,
        torques: &[[f64; 3]; MAX_WALK_JOINTS],
    ) -> Walk3dCommand {
        let mut out = [[0.0; 3]; MAX_WALK_JOINTS];
        let mut limited = 0u32;
        let mut asked = [0.0; MAX_WALK_JOINTS];
        for (k, j) in self.config.joints.iter().enumerate() {
            let sent = Vector3::from(torques[k]);
            let norm = libm::sqrt(sent.norm_squared());
            asked[k] = norm;
            let sent = if !norm.is_finite() {
                limited |= 1 << k;
                Vector3::zeros()
            } else if norm > j.effort_nm {
                limited |= 1 << k;
                // Cut a hair below the effort, so that rounding never leaves it above.
                sent * (j.effort_nm * (1.0 - EFFORT_MARGIN) / norm)
            } else {
                sent
            };
            out[k] = [sent.x, sent.y, sent.z];
        }
        // Commit.
        let (stance, d, v) = (plan.stance, plan.d, plan.v);
        if stance != self.stance {
            self.steps = self.steps.saturating_add(1);
        }
        self.stance = stance;
        self.state_start_s = Some(plan.state_start);
        self.last_time_s = Some(time_s);
        self.limited_total = self
            .limited_total
            .saturating_add(u64::from(limited.count_ones()));
        Walk3dCommand {
            torques_nm: out,
            stance,
            phase: plan.phase,
            step_began: plan.step_began,
            limited,
            asked_nm: asked,
            stance_share: plan.share,
            d_m: [d.x, d.y, d.z],
            v_m_s: [v.x, v.y, v.z],
        }
    }

    /// The bodies as (orientation, centre of mass, velocity, angular velocity), checked.
    #[allow(clippy::type_complexity)]
    fn checked_bodies(
        &self,
        input: &Walk3dInput<'_>,
    ) -> Result<
        [(
            UnitQuaternion<f64>,
            Vector3<f64>,
            Vector3<f64>,
            Vector3<f64>,
        ); MAX_WALK_BODIES],
        Walk3dError,
    > {
        let n = self.config.body_masses_kg.len();
        if input.bodies.len() < n {
            return Err(Walk3dError::Input(InputError::TooFewBodies));
        }
        if !(input.time_s.is_finite()
            && input.desired_heading_rad.is_finite()
            && input
                .foot_up_force_n
                .iter()
                .chain(&input.desired_velocity_m_s)
                .all(|f| f.is_finite()))
        {
            return Err(Walk3dError::Input(InputError::Scalar));
        }
        let mut out = [(
            UnitQuaternion::identity(),
            Vector3::zeros(),
            Vector3::zeros(),
            Vector3::zeros(),
        ); MAX_WALK_BODIES];
        for (k, (b, o)) in input.bodies.iter().zip(out.iter_mut()).enumerate() {
            if !b.is_finite() {
                return Err(Walk3dError::Input(InputError::NonFinite(k)));
            }
            let [w, x, y, z] = b.orientation;
            let q = Quaternion::new(w, x, y, z);
            let norm = libm::sqrt(q.norm_squared());
            if (norm - 1.0).abs() > UNIT_TOLERANCE {
                return Err(Walk3dError::Input(InputError::NotUnit(k)));
            }
            *o = (
                UnitQuaternion::new_unchecked(q / norm),
                Vector3::from(b.com_m),
                Vector3::from(b.velocity_m_s),
                Vector3::from(b.angular_velocity_rad_s),
            );
        }
        Ok(out)
    }
}

/// The twist of `q` about the vertical (y): the heading frame.
pub fn heading_of(q: &UnitQuaternion<f64>) -> UnitQuaternion<f64> {
    let c = q.as_ref();
    let (w, y) = (c.w, c.j);
    let n = libm::sqrt(w * w + y * y);
    if n > 1e-12 {
        UnitQuaternion::new_unchecked(Quaternion::new(w / n, 0.0, y / n, 0.0))
    } else {
        // Upside down about a horizontal axis: any heading; keep the identity.
        UnitQuaternion::identity()
    }
}

/// `tau` (world) scaled per axis in the axes of the body oriented `q`.
fn scaled(q: &UnitQuaternion<f64>, tau: Vector3<f64>, scale: [f64; 3]) -> Vector3<f64> {
    let local = q.inverse() * tau;
    q * Vector3::new(local.x * scale[0], local.y * scale[1], local.z * scale[2])
}

/// A joint of the body as the robot model gives it (the controller's gains come from its role).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BodyJoint {
    /// The parent body's index.
    pub parent: usize,
    /// The child body's index.
    pub child: usize,
    /// Its freedom, axes in the parent's frame.
    pub kind: JointKind,
    /// The largest torque norm, N·m.
    pub effort_nm: f64,
}

/// Which joint of a Bip-like body plays which part: the roles come from the caller's
/// configuration (a scenario names its joints), never from joint names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BipRoles {
    /// The pelvis (the floating root).
    pub root_body: usize,
    /// The joint between pelvis and torso.
    pub waist: usize,
    /// The joint between torso and head.
    pub neck: usize,
    /// The left and right sides.
    pub sides: [SideJoints; 2],
}

/// Cartwheel's lateral axis (its x) here.
const CX: [f64; 3] = from_cartwheel([1.0, 0.0, 0.0]);
/// Cartwheel's vertical axis (its y) here.
const CY: [f64; 3] = from_cartwheel([0.0, 1.0, 0.0]);
/// Cartwheel's forward axis (its z) here.
const CZ: [f64; 3] = from_cartwheel([0.0, 0.0, 1.0]);

/// A per-axis scale given in Cartwheel's axes, here: (x, y, z) → (z, y, x).
const fn scale_from_cartwheel(s: [f64; 3]) -> [f64; 3] {
    [s[2], s[1], s[0]]
}

impl Simbicon3dConfig {
    /// Cartwheel-3d's Bip `Walking` controller (its `Walking.py`: gains, knots, feedback; the
    /// `SimBiController` proxy's defaults for the stance hip's damping 25 and its cap 4 rad/s;
    /// the foot-contact transition after phase 0.5 with 20 N) on a body whose joints and roles
    /// are given. `joints` in torque order; every joint must have a role (waist, neck, or a
    /// side's limb), or the configuration is refused ([`ConfigError::MissingLimb`]).
    pub fn cartwheel_bip_walking(
        body_masses_kg: &[f64],
        joints: &[BodyJoint],
        roles: BipRoles,
        first_stance: Side,
    ) -> Result<Self, Walk3dError> {
        use ConfigError as E;
        let cfg_err = |e| Walk3dError::Config(e);
        let mut masses = heapless::Vec::new();
        for m in body_masses_kg {
            masses.push(*m).map_err(|_| cfg_err(E::BodyIndex))?;
        }
        // Gains and scales per role (Cartwheel's axes for the scales).
        let gains = |k: usize| -> Option<(f64, f64, [f64; 3])> {
            if k == roles.waist {
                return Some((200.0, 30.0, [1.0, 0.2, 1.0]));
            }
            if k == roles.neck {
                return Some((200.0, 20.0, [1.0, 0.2, 1.0]));
            }
            for (s, side) in roles.sides.iter().enumerate() {
                let left = s == 0;
                if k == side.hip {
                    return Some((300.0, 30.0, [1.0, 0.66, 1.0]));
                }
                if k == side.knee {
                    return Some((300.0, 30.0, [1.0, 0.2, 1.0]));
                }
                if k == side.ankle {
                    return Some((75.0, 10.0, [1.0, 0.2, 0.2]));
                }
                if Some(k) == side.toe {
                    return Some((10.0, 0.5, [1.0, 1.0, 1.0]));
                }
                if Some(k) == side.shoulder {
                    let sx = if left { 0.5 } else { 0.3 };
                    return Some((20.0, 5.0, [sx, 1.0, 1.0]));
                }
                if Some(k) == side.elbow {
                    return Some((5.0, 1.0, [0.2, 1.0, 1.0]));
                }
            }
            None
        };
        let mut walk_joints = heapless::Vec::new();
        for (k, j) in joints.iter().enumerate() {
            let (kp, kd, scale) = gains(k).ok_or(cfg_err(E::MissingLimb))?;
            walk_joints
                .push(WalkJoint {
                    parent: j.parent,
                    child: j.child,
                    kind: j.kind,
                    kp,
                    kd,
                    scale: scale_from_cartwheel(scale),
                    effort_nm: j.effort_nm,
                })
                .map_err(|_| cfg_err(E::JointIndex))?;
        }
        let spline = |k: &[(f64, f64)]| Spline::new(k).ok_or(cfg_err(E::Component));
        let comp = |axis, knots: &[(f64, f64)], mirror| -> Result<Component, Walk3dError> {
            Ok(Component {
                axis,
                angle: spline(knots)?,
                mirror,
                feedback: None,
            })
        };
        let fb = |c: Component, axis, cd, cv| Component {
            feedback: Some(Feedback { axis, cd, cv }),
            ..c
        };
        let traj = |joint, character_frame, cs: &[Component]| -> Result<Trajectory, Walk3dError> {
            let mut components = heapless::Vec::new();
            for c in cs {
                components.push(*c).map_err(|_| cfg_err(E::Component))?;
            }
            Ok(Trajectory {
                joint,
                character_frame,
                components,
            })
        };
        use Limb::*;
        use Mirror::*;
        use TrajectoryJoint::{Joint, Root, Stance, Swing};
        let list = [
            traj(
                Root,
                false,
                &[
                    comp(
                        CX,
                        &[(0.020067, 0.0713), (0.538462, 0.0713), (0.966555, 0.0713)],
                        Never,
                    )?,
                    comp(
                        CZ,
                        &[
                            (0.006689, 0.037422),
                            (0.491639, -0.030618),
                            (0.993311, 0.034506),
                        ],
                        OnRightStance,
                    )?,
                ],
            )?,
            traj(
                Swing(Hip),
                true,
                &[
                    comp(
                        CY,
                        &[
                            (0.010033, -0.015813),
                            (0.354515, 0.024849),
                            (0.508361, 0.196533),
                        ],
                        OnLeftStance,
                    )?,
                    fb(
                        comp(
                            CX,
                            &[
                                (0.023411, -0.091589),
                                (0.230769, -0.476365),
                                (0.521739, -0.218055),
                                (0.70903, -0.035635),
                                (0.842809, -0.002125),
                                (0.986622, -0.000708),
                            ],
                            Never,
                        )?,
                        CZ,
                        -0.3,
                        -0.3,
                    ),
                    fb(
                        comp(CZ, &[(0.73913, -0.058739)], OnLeftStance)?,
                        CX,
                        0.55,
                        0.3,
                    ),
                ],
            )?,
            traj(
                Swing(Knee),
                false,
                &[comp(
                    CX,
                    &[
                        (0.016722, 0.887089),
                        (0.250836, 0.800963),
                        (0.428094, 0.659216),
                        (0.555184, 0.47829),
                        (0.632107, 0.142159),
                        (0.77592, -0.027983),
                        (0.993311, -0.03162),
                    ],
                    Never,
                )?],
            )?,
            traj(
                Stance(Knee),
                false,
                &[comp(
                    CX,
                    &[
                        (0.046823, 0.39623),
                        (0.207358, 0.134641),
                        (0.662207, -0.011162),
                        (1.0, 0.0),
                    ],
                    Never,
                )?],
            )?,
            traj(
                Swing(Ankle),
                true,
                &[comp(
                    CX,
                    &[
                        (0.0, 1.5804),
                        (0.22408, 0.862791),
                        (0.431438, -0.048689),
                        (0.688963, -0.71086),
                        (0.986622, -0.782532),
                    ],
                    Never,
                )?],
            )?,
            traj(
                Stance(Ankle),
                true,
                &[fb(
                    comp(
                        CX,
                        &[
                            (0.016722, -0.203606),
                            (0.551839, -0.217268),
                            (1.0, 0.030252),
                        ],
                        Never,
                    )?,
                    CZ,
                    0.2,
                    0.2,
                )],
            )?,
            traj(
                Stance(Shoulder),
                false,
                &[
                    comp(CZ, &[(0.0, 1.57), (1.0, 1.57)], OnLeftStance)?,
                    comp(
                        CX,
                        &[
                            (0.036789, 0.087916),
                            (0.665552, -0.282452),
                            (0.989967, -0.224412),
                        ],
                        Never,
                    )?,
                ],
            )?,
            traj(
                Swing(Shoulder),
                false,
                &[
                    comp(CZ, &[(0.0, 1.57), (1.0, 1.57)], OnRightStance)?,
                    comp(
                        CX,
                        &[
                            (0.003344, 0.03002),
                            (0.180602, 0.002729),
                            (0.494983, -0.011906),
                            (0.802676, 0.068758),
                            (0.986622, 0.078197),
                        ],
                        Never,
                    )?,
                ],
            )?,
            traj(
                Stance(Elbow),
                false,
                &[comp(
                    CY,
                    &[
                        (0.033445, 0.310933),
                        (0.521739, 0.419418),
                        (0.939799, 0.310933),
                    ],
                    OnLeftStance,
                )?],
            )?,
            traj(
                Swing(Elbow),
                false,
                &[comp(
                    CY,
                    &[(0.003344, -0.036889), (0.608696, -0.391027), (1.0, -0.3)],
                    OnLeftStance,
                )?],
            )?,
            traj(
                Joint(roles.waist),
                true,
                &[
                    comp(
                        CY,
                        &[
                            (0.010033, 0.00034),
                            (0.505017, -0.100323),
                            (0.986622, -0.001158),
                        ],
                        OnRightStance,
                    )?,
                    comp(CX, &[(0.117057, -0.001063), (0.511706, 0.024454)], Never)?,
                    comp(
                        CZ,
                        &[(0.0, 0.0), (0.280602, 0.015874), (0.99, 0.0)],
                        OnRightStance,
                    )?,
                ],
            )?,
            traj(
                Joint(roles.neck),
                true,
                &[comp(
                    CY,
                    &[(0.010033, 0.0), (0.508361, 0.05), (0.986622, 0.0)],
                    OnRightStance,
                )?],
            )?,
        ];
        let mut trajectories = heapless::Vec::new();
        for t in list {
            trajectories.push(t).map_err(|_| cfg_err(E::Component))?;
        }
        Ok(Self {
            joints: walk_joints,
            body_masses_kg: masses,
            root_body: roles.root_body,
            sides: roles.sides,
            root: RootGains {
                kp: 3000.0,
                kd: 300.0,
                scale: scale_from_cartwheel([1.0, 0.2, 1.0]),
            },
            trajectories,
            state_duration_s: 0.7,
            min_phase_for_contact: 0.5,
            min_swing_force_n: 20.0,
            stance_hip_damping: 25.0,
            stance_hip_max_velocity_rad_s: 4.0,
            first_stance,
        })
    }
}

/// Which joints' gains [`Simbicon3dConfig::stabilised`] moved, and by how much.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GainMoves {
    /// Bit k: joint k's gains were moved.
    pub joints: u32,
    /// Each joint's factor a: kp became kp·a², kd became kd·a (1: unchanged).
    pub factors: [f64; MAX_WALK_JOINTS],
    /// The root's factor.
    pub root: f64,
}

impl Simbicon3dConfig {
    /// This configuration with every PD pair that would be an unstable sampled loop at period
    /// `period_s` moved inside the stable region, by the planar walker's rule
    /// ([`crate::simbicon`], "The rule and its derivation"), per joint: on each free axis i
    /// (the coordinate axes of the zero pose: all three for a ball, the axis's dominant one for a
    /// hinge, the two free ones for a two-axis joint) the pair (kp·s_i, kd·s_i), s_i the
    /// per-axis scale, on the inertia `inertias_kgm2[k][i]` the joint moves about that axis
    /// (the caller's model: e.g. the composite inertia of the child's subtree about the joint)
    /// is a stable loop when s = h√(k/m) < s*(ζ) ([`crate::gains::Integrator`], semi-implicit
    /// Euler, Rapier's); where not, the joint's kp and kd are scaled by a² and a, with a the
    /// smallest μ·s*(ζ_i)/s_i over its unstable axes: the damping ratio on every axis is kept and
    /// its frequency lowered to μ of the edge (`margin` μ in (0, 1)). The root's pair likewise
    /// on `root_inertia_kgm2`. Stable pairs are kept exactly.
    pub fn stabilised(
        mut self,
        period_s: f64,
        margin: f64,
        inertias_kgm2: &[[f64; 3]],
        root_inertia_kgm2: [f64; 3],
    ) -> Result<(Self, GainMoves), Walk3dError> {
        let bad = Walk3dError::Config(ConfigError::Gain);
        if !(period_s.is_finite() && period_s > 0.0 && margin > 0.0 && margin < 1.0) {
            return Err(bad);
        }
        if inertias_kgm2.len() != self.joints.len()
            || inertias_kgm2
                .iter()
                .chain(core::iter::once(&root_inertia_kgm2))
                .flatten()
                .any(|m| !(m.is_finite() && *m > 0.0))
        {
            return Err(bad);
        }
        let factor = |kp: f64, kd: f64, scale: [f64; 3], m: [f64; 3], free: [bool; 3]| {
            let mut a: f64 = 1.0;
            for i in 0..3 {
                let (k, g) = (kp * scale[i], kd * scale[i]);
                if !free[i] || k <= 0.0 {
                    continue;
                }
                let s = period_s * libm::sqrt(k / m[i]);
                let zeta = g / (2.0 * libm::sqrt(k * m[i]));
                let edge = if zeta > 0.0 {
                    crate::gains::Integrator::SemiImplicitEuler.max_normalized_frequency(zeta)
                } else {
                    2.0
                };
                if s >= edge {
                    a = a.min(margin * edge / s);
                }
            }
            a
        };
        let mut moves = GainMoves {
            joints: 0,
            factors: [1.0; MAX_WALK_JOINTS],
            root: 1.0,
        };
        for (k, (j, m)) in self.joints.iter_mut().zip(inertias_kgm2).enumerate() {
            let dominant = |v: &Vector3<f64>| {
                let a = v.abs();
                let i = if a.x >= a.y && a.x >= a.z {
                    0
                } else if a.y >= a.z {
                    1
                } else {
                    2
                };
                let mut f = [false; 3];
                f[i] = true;
                f
            };
            let free = match j.kind {
                JointKind::Ball => [true; 3],
                JointKind::Hinge { axis } => dominant(&axis),
                JointKind::TwoAxis { axes } => {
                    let (a, b) = (dominant(&axes[0]), dominant(&axes[1]));
                    [a[0] || b[0], a[1] || b[1], a[2] || b[2]]
                }
            };
            let a = factor(j.kp, j.kd, j.scale, *m, free);
            if a < 1.0 {
                j.kp *= a * a;
                j.kd *= a;
                moves.joints |= 1 << k;
                moves.factors[k] = a;
            }
        }
        let r = &mut self.root;
        let a = factor(r.kp, r.kd, r.scale, root_inertia_kgm2, [true; 3]);
        if a < 1.0 {
            r.kp *= a * a;
            r.kd *= a;
            moves.root = a;
        }
        Ok((self, moves))
    }
}

impl crate::controller::Controller<Walk3dInput<'_>> for Simbicon3d {
    type Command = Walk3dCommand;
    type Error = Walk3dError;

    fn tick(&mut self, input: &Walk3dInput<'_>) -> Result<Walk3dCommand, Walk3dError> {
        Simbicon3d::tick(self, input)
    }

    /// Joints whose torque norm was cut to the effort.
    fn limits(command: &Walk3dCommand) -> crate::controller::Limits {
        crate::controller::Limits {
            torque_limited: command.limited.count_ones(),
            ..Default::default()
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use proptest::prelude::*;

    const MASSES: [f64; 15] = [
        12.9, 22.5, 5.2, 2.2, 1.7, 2.2, 1.7, 6.6, 3.2, 1.0, 0.2, 6.6, 3.2, 1.0, 0.2,
    ];
    /// Body centres of mass standing in the zero pose (the humanoid's, rounded), m.
    const COMS: [[f64; 3]; 15] = [
        [0.0, 1.03, 0.0],
        [-0.025, 1.37, 0.0],
        [0.0, 1.7, 0.0],
        [0.03, 1.5, -0.37],
        [0.036, 1.5, -0.73],
        [0.03, 1.5, 0.37],
        [0.036, 1.5, 0.73],
        [0.0, 0.77, -0.1],
        [0.0, 0.3, -0.1],
        [0.05, 0.03, -0.1],
        [0.13, 0.01, -0.1],
        [0.0, 0.77, 0.1],
        [0.0, 0.3, 0.1],
        [0.05, 0.03, 0.1],
        [0.13, 0.01, 0.1],
    ];

    fn joints(effort: f64) -> [BodyJoint; 14] {
        let ball = JointKind::Ball;
        let hy = JointKind::Hinge { axis: Vector3::y() };
        let hz = JointKind::Hinge { axis: Vector3::z() };
        let ankle = JointKind::TwoAxis {
            axes: [Vector3::x(), Vector3::z()],
        };
        let j = |parent, child, kind| BodyJoint {
            parent,
            child,
            kind,
            effort_nm: effort,
        };
        [
            j(0, 1, ball),
            j(1, 2, ball),
            j(1, 3, ball),
            j(3, 4, hy),
            j(1, 5, ball),
            j(5, 6, hy),
            j(0, 7, ball),
            j(7, 8, hz),
            j(8, 9, ankle),
            j(9, 10, hz),
            j(0, 11, ball),
            j(11, 12, hz),
            j(12, 13, ankle),
            j(13, 14, hz),
        ]
    }

    fn roles() -> BipRoles {
        let side = |hip: usize, shoulder: usize, foot: usize| SideJoints {
            hip,
            knee: hip + 1,
            ankle: hip + 2,
            toe: Some(hip + 3),
            shoulder: Some(shoulder),
            elbow: Some(shoulder + 1),
            foot_body: foot,
        };
        BipRoles {
            root_body: 0,
            waist: 0,
            neck: 1,
            sides: [side(6, 2, 9), side(10, 4, 13)],
        }
    }

    /// The Bip-like test body's walking configuration, every joint's effort `effort`.
    pub(crate) fn config(effort: f64) -> Simbicon3dConfig {
        Simbicon3dConfig::cartwheel_bip_walking(&MASSES, &joints(effort), roles(), Side::Left)
            .expect("the Bip walking configuration builds")
    }

    /// The test body standing in its zero pose.
    pub(crate) fn standing() -> [BodyMotion; 15] {
        let mut b = [BodyMotion::default(); 15];
        for (m, c) in b.iter_mut().zip(COMS) {
            m.com_m = c;
        }
        b
    }

    fn input(time_s: f64, bodies: &[BodyMotion], forces: [f64; 2]) -> Walk3dInput<'_> {
        Walk3dInput {
            time_s,
            bodies,
            foot_up_force_n: forces,
            desired_velocity_m_s: [0.0, 0.0],
            desired_heading_rad: 0.0,
        }
    }

    #[test]
    fn the_speed_tuner_moves_the_desired_velocity_once_per_step() {
        let tuning = SpeedTuning {
            target_m_s: 1.0,
            gain: 0.5,
            bound_m_s: 0.3,
        };
        let mut t = SpeedTuner::new(tuning).unwrap();
        assert_eq!(t.desired_m_s(), 0.0);
        // A first step at 0.8 m/s (a non-finite tick left out): no change until it ends.
        t.observe(0.7, true);
        t.observe(f64::NAN, false);
        t.observe(0.9, false);
        assert_eq!((t.desired_m_s(), t.skipped_ticks), (0.0, 1));
        // The next step begins: desired += 0.5 × (1.0 − 0.8).
        t.observe(1.2, true);
        assert!((t.desired_m_s() - 0.1).abs() < 1e-15);
        assert_eq!(t.last_step_m_s, Some(0.8));
        // A step far too slow: held at the bound, counted.
        t.observe(0.0, true);
        t.observe(0.0, true);
        assert_eq!((t.desired_m_s(), t.bound_steps), (0.3, 1));
        // Too fast: it comes down (0.3 + 0.5 × (1 − 2)) once a fast step ends.
        t.observe(2.0, true);
        assert_eq!((t.desired_m_s(), t.bound_steps), (0.3, 2));
        t.observe(2.0, true);
        assert!((t.desired_m_s() + 0.2).abs() < 1e-15);
        // A new target; a bad one is refused and the old one kept.
        assert!(t.set_target(0.5).is_ok());
        assert!(t.set_target(f64::INFINITY).is_err());
        assert_eq!(t.tuning().target_m_s, 0.5);
        for bad in [
            SpeedTuning {
                target_m_s: f64::NAN,
                ..tuning
            },
            SpeedTuning {
                gain: -0.1,
                ..tuning
            },
            SpeedTuning {
                bound_m_s: 1e9,
                ..tuning
            },
        ] {
            assert_eq!(
                SpeedTuner::new(bad),
                Err(Walk3dError::Config(ConfigError::SpeedTuning))
            );
        }
    }

    #[test]
    fn splines_evaluate_as_cartwheels_catmull_rom() {
        let s = Spline::new(&[(0.0, 0.0), (1.0, 1.0), (2.0, 0.0)]).unwrap();
        assert_eq!(s.at(-1.0), 0.0);
        assert_eq!(s.at(0.0), 0.0);
        assert_eq!(s.at(1.0), 1.0);
        assert_eq!(s.at(3.0), 0.0);
        // Between the first two knots: p0 = p1 = 0, p2 = 1, p3 = 0; tangents 0.5 and 0;
        // at s = 0.5 the Hermite basis is (0.5, 0.125, 0.5, −0.125).
        assert!((s.at(0.5) - 0.5625).abs() < 1e-15);
        assert_eq!(Spline::constant(0.3).unwrap().at(0.7), 0.3);
        assert_eq!(Spline::new(&[]).unwrap().at(0.5), 0.0);
        assert!(Spline::new(&[(0.5, 1.0), (0.5, 2.0)]).is_none());
        assert!(Spline::new(&[(0.0, f64::NAN)]).is_none());
        assert!(Spline::new(&[(0.0, 0.0); MAX_KNOTS + 1]).is_none());
    }

    #[test]
    fn bad_configurations_are_refused_by_reason() {
        let e = |c: Simbicon3dConfig| Simbicon3d::new(c).err();
        let mut c = config(400.0);
        c.joints[3].child = 40;
        assert_eq!(e(c), Some(Walk3dError::Config(ConfigError::BodyIndex)));
        let mut c = config(400.0);
        c.joints[3].kd = f64::NAN;
        assert_eq!(e(c), Some(Walk3dError::Config(ConfigError::Gain)));
        let mut c = config(400.0);
        c.sides[0].knee = 99;
        assert_eq!(e(c), Some(Walk3dError::Config(ConfigError::JointIndex)));
        let mut c = config(400.0);
        c.body_masses_kg[2] = 0.0;
        assert_eq!(e(c), Some(Walk3dError::Config(ConfigError::Mass)));
        let mut c = config(400.0);
        c.state_duration_s = 0.0;
        assert_eq!(e(c), Some(Walk3dError::Config(ConfigError::Timing)));
        let mut c = config(400.0);
        c.trajectories[1].components[0].axis = [0.0; 3];
        assert_eq!(e(c), Some(Walk3dError::Config(ConfigError::Component)));
        let mut r = roles();
        r.neck = 20; // joint 1 then has no role
        assert_eq!(
            Simbicon3dConfig::cartwheel_bip_walking(&MASSES, &joints(400.0), r, Side::Left).err(),
            Some(Walk3dError::Config(ConfigError::MissingLimb))
        );
    }

    #[test]
    fn refused_inputs_leave_the_state_machine_alone() {
        let mut w = Simbicon3d::new(config(400.0)).unwrap();
        let b = standing();
        w.tick(&input(0.0, &b, [300.0, 300.0])).unwrap();
        let mut nan = b;
        nan[4].velocity_m_s[1] = f64::NAN;
        assert_eq!(
            w.tick(&input(0.6, &nan, [300.0, 300.0])),
            Err(Walk3dError::Input(InputError::NonFinite(4)))
        );
        let mut skew = b;
        skew[2].orientation = [1.1, 0.0, 0.0, 0.0];
        assert_eq!(
            w.tick(&input(0.6, &skew, [300.0, 300.0])),
            Err(Walk3dError::Input(InputError::NotUnit(2)))
        );
        assert_eq!(
            w.tick(&input(0.6, &b[..10], [300.0, 300.0])),
            Err(Walk3dError::Input(InputError::TooFewBodies))
        );
        assert_eq!(
            w.tick(&input(-1.0, &b, [300.0, 300.0])),
            Err(Walk3dError::TimeWentBack)
        );
        assert_eq!((w.steps(), w.stance()), (0, Side::Left));
    }

    #[test]
    fn the_swing_foot_strike_ends_the_step_only_after_half_the_phase() {
        let mut w = Simbicon3d::new(config(400.0)).unwrap();
        let b = standing();
        let c = w.tick(&input(0.0, &b, [600.0, 0.0])).unwrap();
        assert!(c.step_began && c.stance == Side::Left);
        // Phase 0.29: the right foot's force does not count yet.
        let c = w.tick(&input(0.2, &b, [300.0, 300.0])).unwrap();
        assert_eq!((c.stance, c.step_began), (Side::Left, false));
        // Phase 0.57 with 15 N on the swing foot: below the 20 N threshold.
        let c = w.tick(&input(0.4, &b, [600.0, 15.0])).unwrap();
        assert_eq!(c.stance, Side::Left);
        let c = w.tick(&input(0.41, &b, [300.0, 300.0])).unwrap();
        assert_eq!((c.stance, c.step_began, c.phase), (Side::Right, true, 0.0));
        assert_eq!(w.steps(), 1);
        // Without any strike the state ends at phase 1.
        let c = w.tick(&input(0.41 + 0.7, &b, [0.0, 600.0])).unwrap();
        assert_eq!((c.stance, w.steps()), (Side::Left, 2));
    }

    #[test]
    fn the_hips_make_up_the_pelvis_torque_exactly() {
        let mut w = Simbicon3d::new(config(1e6)).unwrap();
        let mut b = standing();
        // A tilted, turning pelvis and a moving torso.
        let q = UnitQuaternion::from_euler_angles(0.1, 0.2, -0.15);
        let c = q.as_ref();
        b[0].orientation = [c.w, c.i, c.j, c.k];
        b[0].angular_velocity_rad_s = [0.3, -0.2, 0.5];
        b[1].angular_velocity_rad_s = [-0.4, 0.1, 0.2];
        b[7].angular_velocity_rad_s = [0.1, 0.1, 0.1];
        let cmd = w.tick(&input(0.0, &b, [500.0, 0.0])).unwrap();
        assert_eq!(cmd.limited, 0);
        // The net torque on the pelvis from its joints, −Σ τ_j (child convention) …
        let net: Vector3<f64> = [0usize, 6, 10]
            .iter()
            .map(|&j| -Vector3::from(cmd.torques_nm[j]))
            .sum();
        // … is the root's PD torque towards its target (phase 0, left stance, heading 0), less
        // the stance hip's damping of the pelvis against the stance thigh.
        let cfg = config(1e6);
        let mut target = UnitQuaternion::identity();
        let root = &cfg.trajectories[0];
        for comp in &root.components {
            let a = nalgebra::Unit::new_normalize(Vector3::from(comp.axis));
            target = UnitQuaternion::from_axis_angle(&a, comp.angle.at(0.0)) * target;
        }
        let err = axis_angle(&(target * q.inverse())).rotation_vector();
        let w_p = Vector3::from(b[0].angular_velocity_rad_s);
        let tau = scaled(&q, err * 3000.0 - w_p * 300.0, cfg.root.scale);
        let wrel = w_p - Vector3::from(b[7].angular_velocity_rad_s);
        let damping = wrel * (25.0 * wrel.norm());
        assert!(
            (net - (tau - damping)).norm() < 1e-9 * tau.norm(),
            "{net} {tau}"
        );
    }

    #[test]
    fn efforts_cut_torques_and_say_so() {
        let mut w = Simbicon3d::new(config(5.0)).unwrap();
        let mut b = standing();
        b[8].angular_velocity_rad_s = [0.0, 0.0, 20.0];
        let cmd = w.tick(&input(0.0, &b, [500.0, 0.0])).unwrap();
        assert_ne!(cmd.limited, 0);
        for (k, t) in cmd.torques_nm.iter().take(14).enumerate() {
            let n = Vector3::from(*t).norm();
            assert!(n <= 5.0, "joint {k}: {n}");
            if cmd.limited & (1 << k) != 0 {
                assert!(cmd.asked_nm[k] > 5.0 && n > 4.99);
            }
        }
        assert_eq!(w.limited_total(), u64::from(cmd.limited.count_ones()));
    }

    #[test]
    fn hinges_and_two_axis_joints_get_no_torque_on_their_locked_axes() {
        let mut w = Simbicon3d::new(config(1e6)).unwrap();
        let mut b = standing();
        b[8].angular_velocity_rad_s = [3.0, 2.0, 1.0];
        let cmd = w.tick(&input(0.0, &b, [500.0, 0.0])).unwrap();
        // Knees (7, 11) and toes (9, 13) about z only; ankles (8, 12) nothing about y.
        for j in [7, 9, 11, 13] {
            assert!(cmd.torques_nm[j][0].abs() + cmd.torques_nm[j][1].abs() < 1e-9);
        }
        for j in [8, 12] {
            assert!(cmd.torques_nm[j][1].abs() < 1e-9);
        }
    }

    #[test]
    fn stable_gains_are_kept_and_unstable_ones_moved_to_the_margin() {
        let cfg = config(400.0);
        let m = [[1.0; 3]; 14];
        // At 2 kHz on 1 kg·m² every pair is stable: nothing moves.
        let (same, moves) = cfg
            .clone()
            .stabilised(1.0 / 2000.0, 0.5, &m, [1.0; 3])
            .unwrap();
        assert_eq!((moves.joints, moves.root), (0, 1.0));
        assert_eq!(same, cfg);
        // The pelvis's 3000/300 on 0.1 kg·m² at 300 Hz is not; it moves to half the edge at
        // the same damping ratio.
        let h = 1.0 / 300.0;
        let (moved, moves) = cfg.clone().stabilised(h, 0.5, &m, [0.1; 3]).unwrap();
        assert!(moves.root < 1.0);
        let (k, g) = (moved.root.kp, moved.root.kd);
        let zeta = |k: f64, g: f64| g / (2.0 * libm::sqrt(k * 0.1));
        assert!((zeta(k, g) - zeta(3000.0, 300.0)).abs() < 1e-12);
        // Its worst axis (scale 1) sits at μ·s*.
        let edge = crate::gains::Integrator::SemiImplicitEuler.max_normalized_frequency(zeta(k, g));
        assert!((h * libm::sqrt(k / 0.1) - 0.5 * edge).abs() < 1e-12);
        assert!(cfg.stabilised(h, 1.0, &m, [0.1; 3]).is_err());
    }

    proptest! {
        #[test]
        fn any_finite_state_gives_finite_torques_within_the_efforts(
            seed in prop::collection::vec(-1.0f64..1.0, 15 * 10),
            forces in prop::array::uniform2(0.0f64..2000.0),
            t in 0.0f64..10.0,
            v in prop::array::uniform2(-1.0f64..1.0),
        ) {
            let mut w = Simbicon3d::new(config(300.0)).unwrap();
            let mut b = standing();
            for (k, m) in b.iter_mut().enumerate() {
                let r = &seed[10 * k..10 * k + 10];
                let q = UnitQuaternion::from_euler_angles(3.0 * r[0], 3.0 * r[1], 3.0 * r[2]);
                let c = q.as_ref();
                m.orientation = [c.w, c.i, c.j, c.k];
                m.angular_velocity_rad_s = [50.0 * r[3], 50.0 * r[4], 50.0 * r[5]];
                m.velocity_m_s = [5.0 * r[6], 5.0 * r[7], 5.0 * r[8]];
                m.com_m[1] += r[9];
            }
            let mut i = input(t, &b, forces);
            i.desired_velocity_m_s = v;
            let cmd = w.tick(&i).unwrap();
            for t in cmd.torques_nm.iter() {
                let n = Vector3::from(*t).norm();
                prop_assert!(n.is_finite() && n <= 300.0);
            }
            prop_assert!((0.0..=1.0).contains(&cmd.phase));
        }

        /// Any state at all, every number now and then NaN, ±∞, huge or subnormal and an
        /// orientation now and then any four numbers: refused, or finite torques within the
        /// efforts; never a panic.
        #[test]
        fn any_state_is_refused_or_gives_finite_torques_within_the_efforts(
            values in prop::collection::vec(
                prop_oneof![200 => -3.0f64..3.0, 1 => proptest::num::f64::ANY],
                15 * 13 + 5,
            ),
            raw_orientation in prop::collection::vec(prop::bool::weighted(0.02), 15),
        ) {
            let mut w = Simbicon3d::new(config(300.0)).unwrap();
            let mut b = standing();
            for (k, m) in b.iter_mut().enumerate() {
                let r = &values[13 * k..13 * k + 13];
                // A unit quaternion from three of the numbers, or now and then the four as
                // they are.
                m.orientation = if raw_orientation[k] {
                    [r[0], r[1], r[2], r[3]]
                } else {
                    let q = UnitQuaternion::from_euler_angles(r[0], r[1], r[2]);
                    let c = q.as_ref();
                    [c.w, c.i, c.j, c.k]
                };
                m.angular_velocity_rad_s = [r[4], r[5], r[6]];
                m.velocity_m_s = [r[7], r[8], r[9]];
                m.com_m = [m.com_m[0] + r[10], m.com_m[1] + r[11], m.com_m[2] + r[12]];
            }
            let r = &values[15 * 13..];
            let mut i = input(r[0].abs(), &b, [1000.0 * r[1], 1000.0 * r[2]]);
            i.desired_velocity_m_s = [r[3], r[4]];
            if let Ok(cmd) = w.tick(&i) {
                for t in cmd.torques_nm.iter() {
                    let n = Vector3::from(*t).norm();
                    prop_assert!(n.is_finite() && n <= 300.0, "{cmd:?}");
                }
                prop_assert!((0.0..=1.0).contains(&cmd.phase));
            }
        }
    }
}
