//! A whole humanoid's pose controller built from this module's servos: every joint a
//! [`DynamoJoint`], gains by the part each joint plays ([`JointRole`]), the standing pose's
//! ankle lean, one timed reach, the ankles' damping of the body's lean rate, and Dynamo's root
//! spring, in one of three laws ([`PoseLaw`]):
//! - [`PoseLaw::ParentSpace`]: each joint holds its child's orientation relative to its parent;
//! - [`PoseLaw::WorldSpace`]: Dynamo's world-space servos, targets in person space (relative to
//!   the root's heading), on the upper body (waist, neck, arms): each of those bodies holds the
//!   world orientation the pose gives it with the root upright. The legs (hips, knees, ankles,
//!   toes: the chain that carries the root from the ground) keep parent-space targets: with
//!   world-space targets on every joint each servo holds its child and pushes back on its
//!   parent, so nothing holds the root, which tips as a free inverted pendulum between the hips
//!   (measured on the 15-body humanoid: fell at 1.1–1.5 s unpushed, even with a root PD carried
//!   by the hips as SIMBICON's stance hip);
//! - [`PoseLaw::WorldSpaceRootSpring`]: the same, plus the breakable root spring, an external
//!   torque on the root that never acts about the vertical.
//!
//! Every law uses the same gains ([`nominal_gains`], [`axis_shares`]) and the same standing pose
//! (the ankles lean the body so its centre of mass stands above them, blended to the reach
//! pose's lean while the arm reaches; the leans are the caller's, e.g. `robot-model`'s
//! `HumanoidModel::standing_lean_rad`), and the same damping of the body's lean rate at the
//! ankles ([`LEAN_DAMPING_NMS_PER_RAD`]). The limb joints (neck, shoulders, elbows) run with
//! gains per unit inertia scaled by their subtree's composite inertia about the joint, every
//! tick, plus gravity's torque on the subtree as feed-forward ([`DynamoJoint::tick_scaled`]):
//! with torque gains an arm's swing (0.6 kg·m²) and twist (0.007 kg·m²) cannot both be served,
//! and the arm reaching forward turns one into the other (with torque gains the reach was 1.27
//! rad off at its arrival time and the arms chattered at the Nyquist rate).
//!
//! Roles come from the caller (which joint is an ankle, a hip, an elbow), never from joint
//! names. Capacity is in the type: `J` joints, `B` bodies.
//!
//! [`HumanoidPose::tick`] never allocates, blocks or panics: every buffer is sized when the
//! controller is built. A servo that refuses its input (a non-finite state) gives that joint the
//! safe state's damping for the tick, counted in the command ([`HumanoidCommand::refused`]);
//! bodies that are not the ones it was built for give the safe state.
//!
//! ```
//! use control_core::articulated::nalgebra::{UnitQuaternion, Vector3};
//! use control_core::dynamo::humanoid::{
//!     BodyMass, HumanoidInput, HumanoidJoint, HumanoidPose, HumanoidSpec, JointRole, PoseLaw,
//! };
//! use control_core::dynamo::JointKind;
//! use control_core::frames::BodyMotion;
//! use control_core::simbicon3d::{Limb, Side};
//!
//! // A pelvis (body 0) and a forearm-like limb hanging from it at an elbow.
//! let bodies = [
//!     BodyMass { mass_kg: 10.0, principal_inertia_kgm2: Vector3::new(0.1, 0.1, 0.1) },
//!     BodyMass { mass_kg: 1.0, principal_inertia_kgm2: Vector3::new(0.01, 0.001, 0.01) },
//! ];
//! let joints = [HumanoidJoint {
//!     parent: 0,
//!     child: 1,
//!     kind: JointKind::Hinge { axis: Vector3::z() },
//!     anchor_m: Vector3::new(0.0, -0.1, 0.0),
//!     effort_nm: 50.0,
//!     role: JointRole::Limb(Side::Left, Limb::Elbow),
//! }];
//! let spec = HumanoidSpec::new(&bodies, &joints, 0.005);
//! let mut pose = HumanoidPose::<1, 2>::new(PoseLaw::ParentSpace, &spec)?;
//! let mut state = [BodyMotion::default(); 2];
//! state[1].com_m = [0.0, -0.3, 0.0];
//! state[1].angular_velocity_rad_s = [0.0, 0.0, 1.0]; // the limb turning about the hinge
//! let out = pose.tick(&HumanoidInput { time_s: 0.0, bodies: &state });
//! // The limb is at its target (the zero pose): the servo damps its motion.
//! assert!(!out.safe && out.refused == 0 && out.torques_nm[0].z < 0.0);
//! # Ok::<(), control_core::dynamo::humanoid::HumanoidError>(())
//! ```

use core::fmt;

use nalgebra::{Matrix3, Quaternion, UnitQuaternion, Vector3};

use super::{
    Arrival, ArrivalSettings, BodyInertia, BodyMotion as Motion, DynamoError, DynamoJoint,
    GainStatus, Heading, JointConfig, JointInertia, JointKind, RootSpring, RootSpringConfig,
    SpringState, Target, TargetSpace, gravity_torque_about, heading, subtree_inertia_about,
};
use crate::frames::BodyMotion;
use crate::simbicon3d::{Limb, Side};

/// The part a joint plays.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JointRole {
    /// Between pelvis and torso.
    Waist,
    /// Between torso and head.
    Neck,
    /// A side's limb joint.
    Limb(Side, Limb),
}

impl JointRole {
    /// On a leg (hip, knee, ankle, toe): the support chain.
    pub const fn is_support(self) -> bool {
        matches!(
            self,
            Self::Limb(_, Limb::Hip | Limb::Knee | Limb::Ankle | Limb::Toe)
        )
    }

    /// A limb joint of the upper body (neck, shoulders, elbows): a light subtree hanging from
    /// the heavy torso.
    pub const fn is_upper_limb(self) -> bool {
        matches!(
            self,
            Self::Neck | Self::Limb(_, Limb::Shoulder | Limb::Elbow)
        )
    }

    /// An ankle.
    pub const fn is_ankle(self) -> bool {
        matches!(self, Self::Limb(_, Limb::Ankle))
    }
}

impl fmt::Display for JointRole {
    /// As a scenario's `[roles]` names it: `waist`, `neck`, `left.knee`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Waist => f.write_str("waist"),
            Self::Neck => f.write_str("neck"),
            Self::Limb(side, limb) => {
                let side = match side {
                    Side::Left => "left",
                    Side::Right => "right",
                };
                let limb = match limb {
                    Limb::Hip => "hip",
                    Limb::Knee => "knee",
                    Limb::Ankle => "ankle",
                    Limb::Toe => "toe",
                    Limb::Shoulder => "shoulder",
                    Limb::Elbow => "elbow",
                };
                write!(f, "{side}.{limb}")
            }
        }
    }
}

/// Which joints a gain scale applies to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GainScope {
    /// Every joint, the ankles' lean damping too.
    AllJoints,
    /// The joints whose law differs between the laws: the waist, neck, shoulders and elbows
    /// ([`JointRole::is_support`]: not the legs). The legs keep their nominal gains.
    UpperBody,
}

impl GainScope {
    /// Both, in report order.
    pub const ALL: [Self; 2] = [Self::UpperBody, Self::AllJoints];

    /// The name in scenarios and reports.
    pub const fn name(self) -> &'static str {
        match self {
            Self::AllJoints => "all_joints",
            Self::UpperBody => "upper_body",
        }
    }

    /// The scope named `name`.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|s| s.name() == name)
    }

    /// Whether the scale applies to a joint playing `role`.
    pub fn scales(self, role: JointRole) -> bool {
        match self {
            Self::AllJoints => true,
            Self::UpperBody => !role.is_support(),
        }
    }
}

/// Which law drives the joints (the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PoseLaw {
    /// Parent-space PD on every joint.
    ParentSpace,
    /// Dynamo's world-space PD, person-space targets, on the upper body.
    WorldSpace,
    /// World-space PD plus the root spring.
    WorldSpaceRootSpring,
}

/// One timed joint target: the joint's rotation relative to its parent from `start_s`, to
/// arrive at `arrive_s` (the reach).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Reach {
    /// Joint index.
    pub joint: usize,
    /// The target rotation relative to the parent.
    pub rotation: UnitQuaternion<f64>,
    /// When the target is given, s.
    pub start_s: f64,
    /// When it must be reached, s.
    pub arrive_s: f64,
}

/// One body's mass and principal inertia (about its centre of mass, in its own axes).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BodyMass {
    /// Mass, kg.
    pub mass_kg: f64,
    /// Principal moments of inertia, kg·m².
    pub principal_inertia_kgm2: Vector3<f64>,
}

/// One joint of the humanoid: the bodies it joins, its freedom, where it is, its effort and
/// its part.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HumanoidJoint {
    /// The parent body's index (joints are ordered parents first).
    pub parent: usize,
    /// The child body's index.
    pub child: usize,
    /// Its freedom (ball, hinge, two axes).
    pub kind: JointKind,
    /// The joint point relative to the parent's centre of mass, parent axes, m.
    pub anchor_m: Vector3<f64>,
    /// The largest torque norm it may apply, N·m.
    pub effort_nm: f64,
    /// The part it plays.
    pub role: JointRole,
}

/// What a [`HumanoidPose`] is built from. [`HumanoidSpec::new`] gives the standing zero pose at
/// nominal gains, no reach, the default root spring and y-up gravity; set the rest as needed.
#[derive(Debug, Clone, Copy)]
pub struct HumanoidSpec<'a> {
    /// Every body's mass, body order.
    pub bodies: &'a [BodyMass],
    /// Every joint, parents first.
    pub joints: &'a [HumanoidJoint],
    /// The gain scale (finite, > 0) and the joints it applies to.
    pub gains: (f64, GainScope),
    /// The lean (rad about +z, negative: forward) of the standing pose and of the reach's
    /// pose: the ankles' target, blended over the reach.
    pub lean_rad: (f64, f64),
    /// The timed reach, if any.
    pub reach: Option<Reach>,
    /// The root spring ([`PoseLaw::WorldSpaceRootSpring`] only).
    pub spring: RootSpringConfig,
    /// The control period, s.
    pub period_s: f64,
    /// Gravity, m/s² (the limb joints' feed-forward); y up.
    pub gravity_m_s2: Vector3<f64>,
}

impl<'a> HumanoidSpec<'a> {
    /// `bodies` and `joints` at nominal gains, upright (no lean), no reach, the default root
    /// spring, gravity −9.81 m/s² along y, at `period_s`.
    pub fn new(bodies: &'a [BodyMass], joints: &'a [HumanoidJoint], period_s: f64) -> Self {
        Self {
            bodies,
            joints,
            gains: (1.0, GainScope::AllJoints),
            lean_rad: (0.0, 0.0),
            reach: None,
            spring: RootSpringConfig::default(),
            period_s,
            gravity_m_s2: Vector3::new(0.0, -9.81, 0.0),
        }
    }
}

/// Why a [`HumanoidPose`] cannot be built.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum HumanoidError {
    /// More bodies or joints than the type holds.
    Capacity {
        /// Bodies given.
        bodies: usize,
        /// Joints given.
        joints: usize,
    },
    /// A joint's body index is past the bodies, or joins a body to itself.
    BodyIndex {
        /// The joint.
        joint: usize,
    },
    /// A joint's servo (its effort, gains or kind) or the arrival settings are invalid.
    Joint {
        /// The joint.
        joint: usize,
        /// Why.
        error: DynamoError,
    },
    /// A joint's anchor is not finite.
    Anchor {
        /// The joint.
        joint: usize,
    },
    /// No body is the child of no joint: there is no root.
    NoRoot,
    /// The root spring's configuration is invalid.
    Spring(DynamoError),
    /// The gain scale, a lean, the reach's times, a body's mass or inertia, or gravity is not a
    /// usable number (the field named).
    Config(&'static str),
}

impl fmt::Display for HumanoidError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Capacity { bodies, joints } => write!(
                f,
                "{bodies} bodies and {joints} joints: this controller holds at most the capacity of its type"
            ),
            Self::BodyIndex { joint } => {
                write!(
                    f,
                    "joint {joint}: a body index past the bodies, or its own parent"
                )
            }
            Self::Joint { joint, error } => write!(f, "joint {joint}: {error}"),
            Self::Anchor { joint } => write!(f, "joint {joint}: its anchor is not finite"),
            Self::NoRoot => f.write_str("the model has no root"),
            Self::Spring(e) => write!(f, "root spring: {e}"),
            Self::Config(field) => write!(f, "{field}: not a usable number"),
        }
    }
}

impl core::error::Error for HumanoidError {}

/// What a tick reads: the time and every body's world motion, body order.
#[derive(Debug, Clone, Copy)]
pub struct HumanoidInput<'a> {
    /// The state's time, s.
    pub time_s: f64,
    /// Every body's motion (exactly as many as the controller was built for, or the tick
    /// answers with the safe state).
    pub bodies: &'a [BodyMotion],
}

/// One tick's torques and what limited them.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HumanoidCommand<const J: usize> {
    /// The safe state's damping (the bodies were not the controller's).
    pub safe: bool,
    /// Each joint's torque, world, N·m: +τ on the child, −τ on the parent; joint order (the
    /// first [`HumanoidPose::joint_count`]).
    pub torques_nm: [Vector3<f64>; J],
    /// The root spring's torque on the root, world, N·m (zero without a spring or when it did
    /// not tick).
    pub root_torque_nm: Vector3<f64>,
    /// The root spring's state (none without a spring, or when it refused the root's state).
    pub spring: Option<SpringState>,
    /// Joints whose torque the limit cut.
    pub limited: u16,
    /// Joints whose servo refused its input (damping sent instead), and ankles whose lean
    /// damping could not be formed.
    pub refused: u16,
    /// Joints whose arrival gains were clamped to the stable limit.
    pub gain_clamped: u16,
    /// Joints whose arrival no stable gain reaches on time.
    pub infeasible: u16,
    /// Σ over joints of the squared angle between each joint's relative rotation and its
    /// target, rad².
    pub pose_error_sq_sum: f64,
    /// Joints in that sum.
    pub joints: u16,
    /// The reach joint's angle from its target (the same measure), rad; `None` without a reach.
    pub reach_error_rad: Option<f64>,
}

impl<const J: usize> HumanoidCommand<J> {
    fn zero(safe: bool) -> Self {
        Self {
            safe,
            torques_nm: [Vector3::zeros(); J],
            root_torque_nm: Vector3::zeros(),
            spring: None,
            limited: 0,
            refused: 0,
            gain_clamped: 0,
            infeasible: 0,
            pose_error_sq_sum: 0.0,
            joints: 0,
            reach_error_rad: None,
        }
    }

    /// What held the command back ([`crate::controller::Limits`]): the safe state or a refused
    /// joint is a fallback.
    pub fn limits(&self) -> crate::controller::Limits {
        crate::controller::Limits {
            gain_clamped: u32::from(self.gain_clamped),
            infeasible: u32::from(self.infeasible),
            torque_limited: u32::from(self.limited),
            bounded: u32::from(matches!(self.spring, Some(SpringState::Saturated))),
            fallback: self.safe || self.refused > 0,
        }
    }
}

/// The fraction of a joint's effort the servos may use: a torque scaled down to exactly the
/// effort can have a norm a rounding above it, which a plant checking the effort refuses.
pub const EFFORT_MARGIN: f64 = 1.0 - 1e-9;

/// Each ankle's damping of the body's lean rate (N·m·s/rad, about the horizontal axes, every
/// law): the rate at which the line from the ankle to the whole body's centre of mass turns,
/// measured in world space, ω_lean = r × v_c / |r|². Without it the 15-body humanoid swayed
/// ±3 cm at 0.4 Hz, barely damped (its ankles' k_d of 2 N·m·s/rad cannot be raised: the light
/// foot makes the explicit loop unstable at 20), so a push met each law at another phase of its
/// sway. The lean's inertia about the ankles is the whole body's, about 70 kg·m²:
/// k_d·h/I = 2 × 400 × 0.005 / 70 = 0.06, far inside the sampled loop's bound, and the foot does
/// not enter the measured rate.
pub const LEAN_DAMPING_NMS_PER_RAD: f64 = 400.0;

/// The natural frequency of the limb joints' critically damped gains per unit inertia, rad/s.
/// Measured at 200 Hz on the 15-body humanoid: at 12 rad/s (k_d ≈ 15 N·m·s/rad on an arm's
/// swing) the arms and the torso's yaw (0.21 kg·m²) chatter at the Nyquist rate, saturated at
/// the shoulders' 150 N·m; 8 rad/s does not.
pub const LIMB_NATURAL_FREQ_RAD_S: f64 = 8.0;

/// Nominal gains of a joint by its part, before the scale. Upper limb joints
/// ([`JointRole::is_upper_limb`]): per unit inertia (k_p 1/s², k_d 1/s), critically damped at
/// [`LIMB_NATURAL_FREQ_RAD_S`], with gravity's torque on the limb as feed-forward. The rest
/// (legs, waist, toes): N·m/rad and N·m·s/rad, with the share of them each of the parent's x,
/// y, z axes gets ([`axis_shares`]): stiff where the body's weight rests (legs, waist), light
/// on the toes, and little damping (an explicit PD at 5 ms is stable only for kd·h/I < 2 and
/// ωn·h < 2 on the body it turns: toes of 0.0007 kg·m² allow 0.14 N·m·s/rad; raising the
/// 15-body humanoid's ankles' k_d to 20 made it fall at 1.2 s).
pub fn nominal_gains(role: JointRole) -> (f64, f64) {
    match role {
        r if r.is_upper_limb() => {
            let wn = LIMB_NATURAL_FREQ_RAD_S;
            (wn * wn, 2.0 * wn)
        }
        JointRole::Waist | JointRole::Limb(_, Limb::Hip | Limb::Knee | Limb::Ankle) => {
            (1000.0, 2.0)
        }
        _ => (20.0, 0.1),
    }
}

/// The share of the nominal gains about each of the parent's x, y, z axes of a leg or waist
/// joint (a servo's torque is scaled by it component by component in the parent's frame, after
/// the torque limit, the same for every law). Not [`JointConfig::axis_gains`], which shapes the
/// torque before the limit: with that order the unpushed world-space humanoid fell at 3.4 s.
/// Lateral (x) 0.3 and twist (y) 1/3 on the waist and hips, lateral 0.3 on the ankles (a foot's
/// roll, 0.0025 kg·m² off the ground, is unstable at 1000 N·m/rad at 5 ms: ωn·h = 3.2); 1
/// elsewhere. Limb joints get none: fixed parent axes are wrong for a limb that moves (an arm's
/// twist axis becomes a swing axis when it reaches forward), so they scale by their inertia
/// instead.
pub fn axis_shares(role: JointRole) -> [f64; 3] {
    match role {
        JointRole::Waist | JointRole::Limb(_, Limb::Hip) => [0.3, 1.0 / 3.0, 1.0],
        JointRole::Limb(_, Limb::Ankle) => [0.3, 1.0, 1.0],
        _ => [1.0; 3],
    }
}

/// One joint as the controller drives it.
#[derive(Debug, Clone)]
struct Joint<const B: usize> {
    parent: usize,
    child: usize,
    servo: DynamoJoint,
    /// The joint point relative to the parent's centre of mass, parent axes.
    anchor: Vector3<f64>,
    effort_nm: f64,
    /// [`axis_shares`] of the joint.
    shares: Vector3<f64>,
    /// Bodies the joint moves (its child's subtree: the child first, then in joint order).
    subtree: heapless::Vec<usize, B>,
    /// Whether its gains are per unit inertia ([`JointRole::is_upper_limb`]).
    scaled: bool,
    /// On a leg, between the root and the ground (the support chain).
    support: bool,
    /// An ankle: its target leans the body so its centre of mass stands above the ankles
    /// (every other joint's standing target is the zero pose).
    ankle: bool,
}

/// The humanoid's pose controller (the module docs): `J` joints, `B` bodies.
#[derive(Debug, Clone)]
pub struct HumanoidPose<const J: usize, const B: usize> {
    law: PoseLaw,
    joints: heapless::Vec<Joint<B>, J>,
    root: usize,
    /// Mass and principal inertia per body.
    inertia: heapless::Vec<BodyMass, B>,
    reach: Option<Reach>,
    spring: Option<RootSpring>,
    safe_damping: f64,
    /// The lean (rad about +z) of the standing pose and of the reach's pose, blended over the
    /// reach ([`HumanoidPose::lean_at`]).
    lean_rad: (f64, f64),
    /// Gravity, m/s² (the limb joints' feed-forward).
    gravity: Vector3<f64>,
    /// Each ankle's damping of the body's lean rate, N·m·s/rad ([`LEAN_DAMPING_NMS_PER_RAD`],
    /// scaled).
    lean_damping: f64,
    /// The whole body's mass, kg.
    mass_kg: f64,
}

impl<const J: usize, const B: usize> HumanoidPose<J, B> {
    /// The controller of `law` for `spec`: every joint's servo at its part's gains (scaled as
    /// `spec.gains` says), checked.
    pub fn new(law: PoseLaw, spec: &HumanoidSpec<'_>) -> Result<Self, HumanoidError> {
        let (bodies, model_joints) = (spec.bodies, spec.joints);
        if bodies.len() > B || model_joints.len() > J {
            return Err(HumanoidError::Capacity {
                bodies: bodies.len(),
                joints: model_joints.len(),
            });
        }
        let (gain_scale, scope) = spec.gains;
        let finite = |x: f64| x.is_finite();
        if !(finite(gain_scale) && gain_scale > 0.0) {
            return Err(HumanoidError::Config("gain scale"));
        }
        if !(finite(spec.lean_rad.0) && finite(spec.lean_rad.1)) {
            return Err(HumanoidError::Config("lean"));
        }
        if !spec.gravity_m_s2.iter().all(|g| g.is_finite()) {
            return Err(HumanoidError::Config("gravity"));
        }
        if let Some(r) = spec.reach
            && !(finite(r.start_s) && finite(r.arrive_s) && r.start_s <= r.arrive_s)
        {
            return Err(HumanoidError::Config("reach times"));
        }
        let mut inertia = heapless::Vec::new();
        for b in bodies {
            let usable = finite(b.mass_kg)
                && b.mass_kg > 0.0
                && b.principal_inertia_kgm2
                    .iter()
                    .all(|i| i.is_finite() && *i >= 0.0);
            if !usable || inertia.push(*b).is_err() {
                return Err(HumanoidError::Config("body mass or inertia"));
            }
        }
        let arrival = ArrivalSettings {
            period_s: spec.period_s,
            ..ArrivalSettings::default()
        };
        let mut joints = heapless::Vec::new();
        for (index, j) in model_joints.iter().enumerate() {
            if j.parent >= bodies.len() || j.child >= bodies.len() || j.parent == j.child {
                return Err(HumanoidError::BodyIndex { joint: index });
            }
            let role = j.role;
            let (kp, kd) = nominal_gains(role);
            let gain_scale = if scope.scales(role) { gain_scale } else { 1.0 };
            let config = JointConfig {
                kind: j.kind,
                stiffness_nm_per_rad: kp * gain_scale,
                damping_nms_per_rad: kd * gain_scale,
                // Just inside the effort: a vector scaled to exactly the effort can come out a
                // rounding above it.
                torque_limit_nm: j.effort_nm * EFFORT_MARGIN,
                // Isotropic: the shares scale the limited torque instead (see `axis_shares`).
                axis_gains: Vector3::new(1.0, 1.0, 1.0),
            };
            let servo =
                DynamoJoint::new(config, arrival).map_err(|error| HumanoidError::Joint {
                    joint: index,
                    error,
                })?;
            if !j.anchor_m.iter().all(|a| a.is_finite()) {
                return Err(HumanoidError::Anchor { joint: index });
            }
            // The child's subtree: the child, then every joint's child whose parent is in it
            // (joints are ordered parents first, so one pass finds them all).
            let mut subtree: heapless::Vec<usize, B> = heapless::Vec::new();
            let _ = subtree.push(j.child);
            for k in model_joints {
                if subtree.contains(&k.parent) && !subtree.contains(&k.child) {
                    // At most B distinct bodies: never full.
                    let _ = subtree.push(k.child);
                }
            }
            let joint = Joint {
                parent: j.parent,
                child: j.child,
                servo,
                anchor: j.anchor_m,
                effort_nm: j.effort_nm * EFFORT_MARGIN,
                shares: Vector3::from(axis_shares(role)),
                subtree,
                scaled: role.is_upper_limb(),
                support: role.is_support(),
                ankle: role.is_ankle(),
            };
            if joints.push(joint).is_err() {
                return Err(HumanoidError::Capacity {
                    bodies: bodies.len(),
                    joints: model_joints.len(),
                });
            }
        }
        let root = (0..bodies.len())
            .find(|b| model_joints.iter().all(|j| j.child != *b))
            .ok_or(HumanoidError::NoRoot)?;
        let spring = match law {
            PoseLaw::WorldSpaceRootSpring => {
                Some(RootSpring::new(spec.spring).map_err(HumanoidError::Spring)?)
            }
            _ => None,
        };
        let lean_scale = if scope.scales(JointRole::Limb(Side::Left, Limb::Ankle)) {
            gain_scale
        } else {
            1.0
        };
        Ok(Self {
            law,
            lean_damping: LEAN_DAMPING_NMS_PER_RAD * lean_scale,
            mass_kg: bodies.iter().map(|b| b.mass_kg).sum(),
            gravity: spec.gravity_m_s2,
            lean_rad: spec.lean_rad,
            joints,
            root,
            inertia,
            reach: spec.reach,
            spring,
            safe_damping: 0.5 * gain_scale.min(1.0),
        })
    }

    /// The law it runs.
    pub fn law(&self) -> PoseLaw {
        self.law
    }

    /// Joints it drives.
    pub fn joint_count(&self) -> usize {
        self.joints.len()
    }

    /// Bodies it was built for.
    pub fn body_count(&self) -> usize {
        self.inertia.len()
    }

    /// The root body's index (the child of no joint).
    pub fn root(&self) -> usize {
        self.root
    }

    /// The whole body's mass, kg.
    pub fn mass_kg(&self) -> f64 {
        self.mass_kg
    }

    fn motion(b: &BodyMotion) -> Motion {
        let [w, x, y, z] = b.orientation;
        let [ax, ay, az] = b.angular_velocity_rad_s;
        Motion {
            orientation: UnitQuaternion::new_normalize(Quaternion::new(w, x, y, z)),
            angular_velocity_rad_s: Vector3::new(ax, ay, az),
        }
    }

    /// The lean at time `t`, rad: the standing pose's until the reach starts, the reach pose's
    /// from its arrival, linear in between.
    pub fn lean_at(&self, t: f64) -> f64 {
        let (from, to) = self.lean_rad;
        match self.reach {
            Some(r) if t >= r.arrive_s => to,
            Some(r) if t > r.start_s => {
                from + (to - from) * (t - r.start_s) / (r.arrive_s - r.start_s)
            }
            _ => from,
        }
    }

    /// Joint `j`'s target rotation relative to its parent at time `t` (the identity for a joint
    /// it does not have).
    pub fn relative_target(&self, j: usize, t: f64) -> UnitQuaternion<f64> {
        match self.reach {
            Some(r) if r.joint == j && t >= r.start_s => r.rotation,
            _ if self.joints.get(j).is_some_and(|joint| joint.ankle) => {
                UnitQuaternion::from_axis_angle(&Vector3::z_axis(), -self.lean_at(t))
            }
            _ => UnitQuaternion::identity(),
        }
    }

    /// How far the bodies are from the pose at `t`: into `out`, the squared angle of each
    /// joint's relative rotation from its target summed, the joints summed, and the reach
    /// joint's angle.
    fn pose_error(
        &self,
        motion: &[Motion; B],
        targets: &[UnitQuaternion<f64>; J],
        out: &mut HumanoidCommand<J>,
    ) {
        for (j, joint) in self.joints.iter().enumerate() {
            let (Some(parent), Some(child)) = (motion.get(joint.parent), motion.get(joint.child))
            else {
                continue;
            };
            let actual_rel = parent.orientation.inverse() * child.orientation;
            let target = targets
                .get(j)
                .copied()
                .unwrap_or_else(UnitQuaternion::identity);
            let err = (target.inverse() * actual_rel).angle();
            out.pose_error_sq_sum += err * err;
            out.joints += 1;
            if self.reach.is_some_and(|r| r.joint == j) {
                out.reach_error_rad = Some(err);
            }
        }
    }

    /// Every joint's [`HumanoidPose::relative_target`] at `t` (the identity past the joints).
    pub fn targets(&self, t: f64) -> [UnitQuaternion<f64>; J] {
        let mut targets = [UnitQuaternion::identity(); J];
        for (j, slot) in targets.iter_mut().enumerate().take(self.joints.len()) {
            *slot = self.relative_target(j, t);
        }
        targets
    }

    /// Every body's motion as the servos read it (bodies past `bodies` at rest, upright).
    fn motions(bodies: &[BodyMotion]) -> [Motion; B] {
        let mut motion = [Motion::at_rest(UnitQuaternion::identity()); B];
        for (m, b) in motion.iter_mut().zip(bodies) {
            *m = Self::motion(b);
        }
        motion
    }

    /// The pose error alone (no torques): what [`HumanoidPose::tick`] reports, for a caller
    /// that drives the joints another way toward the same targets ([`HumanoidPose::relative_target`]).
    /// The safe state when the bodies are not the controller's.
    pub fn measure(&self, input: &HumanoidInput<'_>) -> HumanoidCommand<J> {
        if input.bodies.len() != self.inertia.len() {
            return self.safe(input.bodies);
        }
        let mut out = HumanoidCommand::zero(false);
        let targets = self.targets(input.time_s);
        self.pose_error(&Self::motions(input.bodies), &targets, &mut out);
        out
    }

    /// One control tick.
    pub fn tick(&mut self, input: &HumanoidInput<'_>) -> HumanoidCommand<J> {
        let bodies = input.bodies;
        if bodies.len() != self.inertia.len() {
            return self.safe(bodies);
        }
        let mut out = HumanoidCommand::zero(false);
        let t = input.time_s;
        let motion = Self::motions(bodies);
        let root = motion
            .get(self.root)
            .copied()
            .unwrap_or_else(|| Motion::at_rest(UnitQuaternion::identity()));
        let head = heading(&root).unwrap_or(Heading::IDENTITY);
        // Person-space targets: each body's orientation in the heading frame when the root is
        // upright and every joint at its target (joints are ordered parents first).
        // Each joint's target relative to its parent, once a tick.
        let targets = self.targets(t);
        let mut person = [UnitQuaternion::identity(); B];
        if let Some(p) = person.get_mut(self.root) {
            *p = UnitQuaternion::from_axis_angle(&Vector3::z_axis(), self.lean_at(t));
        }
        for (j, joint) in self.joints.iter().enumerate() {
            let parent = person
                .get(joint.parent)
                .copied()
                .unwrap_or_else(UnitQuaternion::identity);
            if let Some(p) = person.get_mut(joint.child) {
                *p = parent
                    * targets
                        .get(j)
                        .copied()
                        .unwrap_or_else(UnitQuaternion::identity);
            }
        }
        // Once a tick, for both ankles' lean damping.
        let centre = self.centre_of_mass(bodies);
        self.pose_error(&motion, &targets, &mut out);
        for (j, joint) in self.joints.iter().enumerate() {
            let (Some(parent), Some(child)) = (motion.get(joint.parent), motion.get(joint.child))
            else {
                continue;
            };
            let rel_target = targets
                .get(j)
                .copied()
                .unwrap_or_else(UnitQuaternion::identity);
            // The composite inertia the joint moves, about the joint point (limb joints every
            // tick, others only for their arrival).
            let arriving = self
                .reach
                // Arrival gains until the arrival; then the joint's own gains hold the reach (the
                // arrival solver's hold at 10 rad/s is weaker than an arm's weight, and its
                // gains re-solved against a droop it cannot see climb without bound).
                .filter(|r| r.joint == j && t >= r.start_s && t < r.arrive_s);
            let inertia = if joint.scaled || arriving.is_some() {
                self.subtree_inertia(joint, bodies, &motion)
            } else {
                None
            };
            let timed = arriving.map(|r| Arrival {
                time_to_go_s: r.arrive_s - t,
                inertia: match inertia {
                    // The gains solved about v also damp every other axis (the servo's
                    // off-axis damping): clamped for the least principal inertia, so the
                    // explicit loop stays stable about every axis.
                    Some((i, _)) if !joint.scaled => {
                        JointInertia::Scalar(i.symmetric_eigenvalues().min())
                    }
                    // Limb joints scale their gains by the tensor and solve for a unit inertia
                    // (`tick_scaled` ignores this one).
                    _ => JointInertia::Scalar(1.0),
                },
            });
            // The legs hold parent-space targets under every law (see the module docs).
            let target = if self.law == PoseLaw::ParentSpace || joint.support {
                Target {
                    arrival: timed,
                    ..Target::fixed(TargetSpace::Parent, rel_target)
                }
            } else {
                Target {
                    arrival: timed,
                    ..Target::fixed(
                        TargetSpace::Person,
                        person
                            .get(joint.child)
                            .copied()
                            .unwrap_or_else(UnitQuaternion::identity),
                    )
                }
            };
            let result = match (joint.scaled, inertia) {
                (true, Some((i, load))) => joint
                    .servo
                    .tick_scaled(parent, child, &head, &target, &i, &-load),
                (true, None) => Err(DynamoError::OutOfRange),
                (false, _) => joint.servo.tick(parent, child, &head, &target),
            };
            let torque = match result {
                Ok(o) => {
                    match o.status {
                        GainStatus::GainClamped => out.gain_clamped += 1,
                        GainStatus::Infeasible(_) => out.infeasible += 1,
                        _ => {}
                    }
                    if o.limited {
                        out.limited += 1;
                    }
                    // The per-axis shares, in the parent's frame (they only shrink it).
                    let local = parent.orientation.inverse() * o.torque_nm;
                    let shared = parent.orientation * local.component_mul(&joint.shares);
                    if joint.ankle {
                        match self.lean_damped(joint, bodies, parent, centre, shared) {
                            Some((damped, limited)) => {
                                if limited && !o.limited {
                                    out.limited += 1;
                                }
                                damped
                            }
                            // A state whose centre of mass or its velocity is not finite: the
                            // servo's torque without the lean damping, counted as refused.
                            None => {
                                out.refused += 1;
                                shared
                            }
                        }
                    } else {
                        shared
                    }
                }
                Err(_) => {
                    out.refused += 1;
                    self.damping(parent, child, joint.effort_nm)
                }
            };
            if let Some(slot) = out.torques_nm.get_mut(j) {
                *slot = torque;
            }
        }
        if let Some(spring) = &mut self.spring
            && let Ok(o) = spring.tick(&root.orientation, &root.angular_velocity_rad_s)
        {
            out.spring = Some(o.state);
            out.root_torque_nm = o.torque_nm;
        }
        out
    }

    /// The inertia of `joint`'s child subtree about the joint point and gravity's torque on it
    /// about that point, world axes (`None` if a body's state or inertia is unusable).
    fn subtree_inertia(
        &self,
        joint: &Joint<B>,
        bodies: &[BodyMotion],
        motion: &[Motion; B],
    ) -> Option<(Matrix3<f64>, Vector3<f64>)> {
        let com = |b: usize| {
            let c = bodies.get(b).map_or([0.0; 3], |m| m.com_m);
            Vector3::new(c[0], c[1], c[2])
        };
        let parent = motion.get(joint.parent)?;
        let point = com(joint.parent) + parent.orientation * joint.anchor;
        let mut members = [BodyInertia {
            mass_kg: 0.0,
            principal_inertia_kgm2: Vector3::zeros(),
            orientation: UnitQuaternion::identity(),
            com_m: Vector3::zeros(),
        }; B];
        let mut n = 0;
        for (slot, &b) in members.iter_mut().zip(&joint.subtree) {
            let BodyMass {
                mass_kg,
                principal_inertia_kgm2,
            } = self.inertia.get(b).copied()?;
            *slot = BodyInertia {
                mass_kg,
                principal_inertia_kgm2,
                orientation: motion.get(b)?.orientation,
                com_m: com(b),
            };
            n += 1;
        }
        let members = members.get(..n)?;
        Some((
            subtree_inertia_about(&point, members).ok()?,
            gravity_torque_about(&point, members, &self.gravity).ok()?,
        ))
    }

    /// The whole body's centre of mass and its velocity (the bodies' mass-weighted means).
    fn centre_of_mass(&self, bodies: &[BodyMotion]) -> (Vector3<f64>, Vector3<f64>) {
        let v = |a: [f64; 3]| Vector3::new(a[0], a[1], a[2]);
        let mut com = Vector3::zeros();
        let mut velocity = Vector3::zeros();
        for (b, m) in bodies.iter().zip(&self.inertia) {
            com += v(b.com_m) * (m.mass_kg / self.mass_kg);
            velocity += v(b.velocity_m_s) * (m.mass_kg / self.mass_kg);
        }
        (com, velocity)
    }

    /// An ankle's `torque` plus its damping of the body's lean rate
    /// ([`LEAN_DAMPING_NMS_PER_RAD`]) about the horizontal axes, limited to the joint's effort,
    /// and whether the limit cut it; `None` if the rate is not finite (a non-finite body
    /// position or velocity, or the centre of mass at the ankle).
    fn lean_damped(
        &self,
        joint: &Joint<B>,
        bodies: &[BodyMotion],
        parent: &Motion,
        (com, velocity): (Vector3<f64>, Vector3<f64>),
        torque: Vector3<f64>,
    ) -> Option<(Vector3<f64>, bool)> {
        let v = |a: [f64; 3]| Vector3::new(a[0], a[1], a[2]);
        let ankle = bodies
            .get(joint.parent)
            .map_or(com, |b| v(b.com_m) + parent.orientation * joint.anchor);
        let r = com - ankle;
        let mut rate = r.cross(&velocity) / r.norm_squared();
        // Only the tipping: no damping about the vertical (y up).
        rate.y = 0.0;
        // On the joint: + on the foot, − on the leg, which carries the body: −k_d·ω_lean on it.
        let damped = torque + rate * self.lean_damping;
        let n = damped.norm();
        if !rate.iter().all(|x| x.is_finite()) || !n.is_finite() {
            None
        } else if n > joint.effort_nm {
            Some((damped * (joint.effort_nm / n), true))
        } else {
            Some((damped, false))
        }
    }

    fn damping(&self, parent: &Motion, child: &Motion, limit: f64) -> Vector3<f64> {
        let t = -self.safe_damping * (child.angular_velocity_rad_s - parent.angular_velocity_rad_s);
        let n = t.norm();
        if !n.is_finite() {
            Vector3::zeros()
        } else if n > limit {
            t * (limit / n)
        } else {
            t
        }
    }

    /// The safe state: damping only on every joint's relative angular velocity, within its
    /// effort; no root torque. Joints whose bodies `bodies` lacks get none.
    pub fn safe(&self, bodies: &[BodyMotion]) -> HumanoidCommand<J> {
        let mut out = HumanoidCommand::zero(true);
        for (slot, joint) in out.torques_nm.iter_mut().zip(&self.joints) {
            let (Some(p), Some(c)) = (bodies.get(joint.parent), bodies.get(joint.child)) else {
                continue;
            };
            *slot = self.damping(&Self::motion(p), &Self::motion(c), joint.effort_nm);
        }
        out
    }
}

impl<const J: usize, const B: usize> crate::controller::Controller<HumanoidInput<'_>>
    for HumanoidPose<J, B>
{
    type Command = HumanoidCommand<J>;
    type Error = core::convert::Infallible;

    fn tick(&mut self, input: &HumanoidInput<'_>) -> Result<HumanoidCommand<J>, Self::Error> {
        Ok(HumanoidPose::tick(self, input))
    }

    fn limits(command: &HumanoidCommand<J>) -> crate::controller::Limits {
        command.limits()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controller::Controller;
    use proptest::prelude::*;

    /// Bodies: pelvis (root), torso, thigh, shin, foot, upper arm, forearm.
    const BODIES: usize = 7;

    fn bodies() -> [BodyMass; BODIES] {
        let b = |mass_kg: f64, i: f64| BodyMass {
            mass_kg,
            principal_inertia_kgm2: Vector3::new(i, i, i),
        };
        [
            b(10.0, 0.1),
            b(20.0, 0.3),
            b(6.0, 0.05),
            b(3.0, 0.03),
            b(1.0, 0.003),
            b(2.0, 0.01),
            b(1.5, 0.008),
        ]
    }

    /// Joints: waist, hip, knee, ankle, shoulder, elbow.
    fn joints() -> [HumanoidJoint; 6] {
        let j = |parent, child, kind, anchor: [f64; 3], effort_nm, role| HumanoidJoint {
            parent,
            child,
            kind,
            anchor_m: Vector3::from(anchor),
            effort_nm,
            role,
        };
        let hinge = JointKind::Hinge { axis: Vector3::z() };
        let left = |limb| JointRole::Limb(Side::Left, limb);
        [
            j(
                0,
                1,
                JointKind::Ball,
                [0.0, 0.1, 0.0],
                200.0,
                JointRole::Waist,
            ),
            j(
                0,
                2,
                JointKind::Ball,
                [0.0, -0.1, -0.1],
                200.0,
                left(Limb::Hip),
            ),
            j(2, 3, hinge, [0.0, -0.2, 0.0], 150.0, left(Limb::Knee)),
            j(
                3,
                4,
                JointKind::Ball,
                [0.0, -0.2, 0.0],
                300.0,
                left(Limb::Ankle),
            ),
            j(
                1,
                5,
                JointKind::Ball,
                [0.0, 0.2, -0.2],
                80.0,
                left(Limb::Shoulder),
            ),
            j(5, 6, hinge, [0.0, -0.15, 0.0], 50.0, left(Limb::Elbow)),
        ]
    }

    /// The zero pose, every body upright at rest, centres of mass roughly where a standing
    /// body's are.
    fn standing() -> [BodyMotion; BODIES] {
        let com = [
            [0.0, 1.0, 0.0],
            [0.0, 1.3, 0.0],
            [0.0, 0.7, -0.1],
            [0.0, 0.35, -0.1],
            [0.05, 0.05, -0.1],
            [0.0, 1.35, -0.2],
            [0.1, 1.1, -0.2],
        ];
        com.map(|com_m| BodyMotion {
            com_m,
            ..BodyMotion::default()
        })
    }

    fn pose(law: PoseLaw, spec: impl FnOnce(&mut HumanoidSpec<'_>)) -> HumanoidPose<8, 8> {
        let (b, j) = (bodies(), joints());
        let mut s = HumanoidSpec::new(&b, &j, 0.005);
        spec(&mut s);
        HumanoidPose::new(law, &s).expect("the test humanoid builds")
    }

    #[test]
    fn a_description_it_cannot_drive_is_refused_naming_why() {
        let (b, j) = (bodies(), joints());
        let spec = HumanoidSpec::new(&b, &j, 0.005);
        let err = |law, spec: &HumanoidSpec<'_>| HumanoidPose::<8, 8>::new(law, spec).err();
        assert_eq!(
            HumanoidPose::<5, 8>::new(PoseLaw::ParentSpace, &spec).err(),
            Some(HumanoidError::Capacity {
                bodies: 7,
                joints: 6
            })
        );
        assert_eq!(
            HumanoidPose::<8, 6>::new(PoseLaw::ParentSpace, &spec).err(),
            Some(HumanoidError::Capacity {
                bodies: 7,
                joints: 6
            })
        );
        let mut bad = j;
        bad[2].child = 9;
        let s = HumanoidSpec::new(&b, &bad, 0.005);
        assert_eq!(
            err(PoseLaw::ParentSpace, &s),
            Some(HumanoidError::BodyIndex { joint: 2 })
        );
        let mut bad = j;
        bad[4].anchor_m.x = f64::NAN;
        let s = HumanoidSpec::new(&b, &bad, 0.005);
        assert_eq!(
            err(PoseLaw::ParentSpace, &s),
            Some(HumanoidError::Anchor { joint: 4 })
        );
        let mut bad = j;
        bad[1].effort_nm = -1.0;
        let s = HumanoidSpec::new(&b, &bad, 0.005);
        assert!(matches!(
            err(PoseLaw::ParentSpace, &s),
            Some(HumanoidError::Joint { joint: 1, .. })
        ));
        // Nothing to stand on: no body, so no root.
        let s = HumanoidSpec::new(&[], &[], 0.005);
        assert_eq!(err(PoseLaw::ParentSpace, &s), Some(HumanoidError::NoRoot));
        for (field, edit) in [
            (
                "gain scale",
                (|s| s.gains.0 = 0.0) as fn(&mut HumanoidSpec<'_>),
            ),
            ("gain scale", |s| s.gains.0 = f64::INFINITY),
            ("lean", |s| s.lean_rad.1 = f64::NAN),
            ("gravity", |s| s.gravity_m_s2.y = f64::NEG_INFINITY),
            ("reach times", |s| {
                s.reach = Some(Reach {
                    joint: 5,
                    rotation: UnitQuaternion::identity(),
                    start_s: 2.0,
                    arrive_s: 1.0,
                })
            }),
        ] {
            let mut s = spec;
            edit(&mut s);
            assert_eq!(
                err(PoseLaw::ParentSpace, &s),
                Some(HumanoidError::Config(field))
            );
        }
        let mut heavy = b;
        heavy[3].mass_kg = 0.0;
        let s = HumanoidSpec::new(&heavy, &j, 0.005);
        assert_eq!(
            err(PoseLaw::ParentSpace, &s),
            Some(HumanoidError::Config("body mass or inertia"))
        );
        let s = HumanoidSpec {
            spring: RootSpringConfig {
                max_torque_nm: -1.0,
                ..RootSpringConfig::default()
            },
            ..spec
        };
        // The spring is checked only by the law that uses it.
        assert!(err(PoseLaw::WorldSpace, &s).is_none());
        assert!(matches!(
            err(PoseLaw::WorldSpaceRootSpring, &s),
            Some(HumanoidError::Spring(_))
        ));
    }

    #[test]
    fn standing_in_its_pose_it_measures_no_error_and_holds_still() {
        for law in [
            PoseLaw::ParentSpace,
            PoseLaw::WorldSpace,
            PoseLaw::WorldSpaceRootSpring,
        ] {
            let mut p = pose(law, |_| {});
            assert_eq!((p.joint_count(), p.body_count(), p.root()), (6, 7, 0));
            assert_eq!(p.mass_kg(), 43.5);
            let state = standing();
            let input = HumanoidInput {
                time_s: 0.0,
                bodies: &state,
            };
            let out = p.tick(&input);
            assert!(!out.safe && out.refused == 0 && out.limited == 0);
            assert_eq!((out.joints, out.pose_error_sq_sum), (6, 0.0));
            // The legs and waist hold with no error and no motion: no torque. The arm's joints
            // carry their limbs' weight (gravity's feed-forward): about −z × r·m·g.
            for j in 0..4 {
                assert_eq!(out.torques_nm[j], Vector3::zeros(), "joint {j}");
            }
            assert!(out.torques_nm[5].norm() > 0.1, "{:?}", out.torques_nm[5]);
            assert_eq!(out.spring.is_some(), law == PoseLaw::WorldSpaceRootSpring);
            assert_eq!(p.measure(&input).pose_error_sq_sum, 0.0);
            assert!(HumanoidPose::<8, 8>::limits(&out).is_clear());
        }
    }

    #[test]
    fn the_reach_and_the_lean_move_the_targets_on_time() {
        let turn = UnitQuaternion::from_axis_angle(&Vector3::z_axis(), 0.5);
        let p = pose(PoseLaw::ParentSpace, |s| {
            s.lean_rad = (-0.05, -0.1);
            s.reach = Some(Reach {
                joint: 5,
                rotation: turn,
                start_s: 1.0,
                arrive_s: 2.0,
            });
        });
        assert_eq!(p.lean_at(0.5), -0.05);
        assert!((p.lean_at(1.5) + 0.075).abs() < 1e-15);
        assert_eq!(p.lean_at(3.0), -0.1);
        assert_eq!(p.relative_target(5, 0.9), UnitQuaternion::identity());
        assert_eq!(p.relative_target(5, 1.0), turn);
        // The ankle's target leans the body forward: the foot turns back about z.
        let ankle = p.relative_target(3, 0.5);
        assert!((ankle.angle() - 0.05).abs() < 1e-15 && ankle.axis().unwrap().z > 0.0);
        assert_eq!(p.relative_target(0, 1.5), UnitQuaternion::identity());
        assert_eq!(p.relative_target(99, 1.5), UnitQuaternion::identity());
        let state = standing();
        let out = p.measure(&HumanoidInput {
            time_s: 1.5,
            bodies: &state,
        });
        assert!((out.reach_error_rad.unwrap() - 0.5).abs() < 1e-12);
        let expected = 0.5 * 0.5 + 0.075 * 0.075;
        assert!((out.pose_error_sq_sum - expected).abs() < 1e-12);
    }

    #[test]
    fn the_arriving_joint_turns_toward_its_target_and_the_spring_holds_the_root() {
        let mut p = pose(PoseLaw::WorldSpaceRootSpring, |s| {
            s.reach = Some(Reach {
                joint: 5,
                rotation: UnitQuaternion::from_axis_angle(&Vector3::z_axis(), 0.5),
                start_s: 0.0,
                arrive_s: 0.5,
            });
        });
        let mut state = standing();
        // The root tipped 0.2 rad about x.
        let q = UnitQuaternion::from_axis_angle(&Vector3::x_axis(), 0.2);
        let q = q.quaternion();
        state[0].orientation = [q.w, q.i, q.j, q.k];
        let out = p.tick(&HumanoidInput {
            time_s: 0.1,
            bodies: &state,
        });
        // The elbow's torque turns its child about +z (beyond holding the forearm's weight).
        let still = pose(PoseLaw::WorldSpaceRootSpring, |_| {}).tick(&HumanoidInput {
            time_s: 0.1,
            bodies: &state,
        });
        assert!(out.torques_nm[5].z > still.torques_nm[5].z + 1.0);
        // The spring pushes the root back about −x, never about the vertical.
        assert_eq!(out.spring, Some(SpringState::Holding));
        assert!(out.root_torque_nm.x < -1.0 && out.root_torque_nm.y == 0.0);
    }

    #[test]
    fn bodies_that_are_not_its_own_get_the_safe_state() {
        let mut p = pose(PoseLaw::WorldSpace, |_| {});
        let mut state = standing();
        state[6].angular_velocity_rad_s = [0.0, 0.0, 4.0];
        let out = p.tick(&HumanoidInput {
            time_s: 0.0,
            bodies: &state[..6],
        });
        assert!(out.safe && HumanoidPose::<8, 8>::limits(&out).fallback);
        let out = p.safe(&state);
        // Damping of the forearm's turning only: −0.5 · 4 about z on the elbow.
        assert_eq!(out.torques_nm[5], Vector3::new(0.0, 0.0, -2.0));
        assert_eq!(out.torques_nm[0], Vector3::zeros());
        let out = p.measure(&HumanoidInput {
            time_s: 0.0,
            bodies: &[],
        });
        assert!(out.safe && out.torques_nm.iter().all(|t| *t == Vector3::zeros()));
    }

    #[test]
    fn the_ankle_damps_the_lean_rate() {
        let mut p = pose(PoseLaw::ParentSpace, |_| {});
        let still = p.tick(&HumanoidInput {
            time_s: 0.0,
            bodies: &standing(),
        });
        let mut moving = standing();
        for b in &mut moving {
            b.velocity_m_s = [0.3, 0.0, 0.0];
        }
        let out = p.tick(&HumanoidInput {
            time_s: 0.0,
            bodies: &moving,
        });
        // The lean's rate ω = r × v / |r|², r from the ankle to the centre of mass; the joint's
        // torque changes by k_d·ω about the horizontal axes.
        let m: f64 = bodies().iter().map(|b| b.mass_kg).sum();
        let com = standing()
            .iter()
            .zip(bodies())
            .fold(Vector3::zeros(), |c, (b, mass)| {
                c + Vector3::from(b.com_m) * (mass.mass_kg / m)
            });
        let ankle = Vector3::from(standing()[3].com_m) + joints()[3].anchor_m;
        let r = com - ankle;
        let rate = r.cross(&Vector3::new(0.3, 0.0, 0.0)) / r.norm_squared();
        let d = out.torques_nm[3] - still.torques_nm[3];
        assert!(rate.z < -0.2 && (d.z - LEAN_DAMPING_NMS_PER_RAD * rate.z).abs() < 1e-9);
        assert!((d.x - LEAN_DAMPING_NMS_PER_RAD * rate.x).abs() < 1e-9 && d.y == 0.0);
        // A gain scale on the upper body leaves the ankle alone; on every joint it does not.
        let tick = |scope| {
            pose(PoseLaw::ParentSpace, |s| s.gains = (4.0, scope)).tick(&HumanoidInput {
                time_s: 0.0,
                bodies: &moving,
            })
        };
        assert_eq!(tick(GainScope::UpperBody).torques_nm[3], out.torques_nm[3]);
        assert_ne!(tick(GainScope::AllJoints).torques_nm[3], out.torques_nm[3]);
    }

    #[test]
    fn roles_and_scopes_by_name() {
        let knee = JointRole::Limb(Side::Left, Limb::Knee);
        assert!(knee.is_support() && !knee.is_upper_limb() && !knee.is_ankle());
        assert!(JointRole::Neck.is_upper_limb() && !JointRole::Waist.is_support());
        assert!(GainScope::UpperBody.scales(JointRole::Waist));
        assert!(!GainScope::UpperBody.scales(knee) && GainScope::AllJoints.scales(knee));
        assert_eq!(
            GainScope::from_name("upper_body"),
            Some(GainScope::UpperBody)
        );
        assert_eq!(GainScope::from_name("legs"), None);
        let mut s = heapless::String::<16>::new();
        core::fmt::write(&mut s, format_args!("{knee}")).unwrap();
        assert_eq!(s.as_str(), "left.knee");
        assert_eq!(nominal_gains(JointRole::Neck), (64.0, 16.0));
        assert_eq!(axis_shares(knee), [1.0; 3]);
    }

    fn any_f64() -> impl Strategy<Value = f64> {
        prop_oneof![
            4 => -10.0..10.0f64,
            1 => Just(f64::NAN),
            1 => Just(f64::INFINITY),
            1 => Just(-1e300),
            1 => Just(0.0),
        ]
    }

    fn any_body() -> impl Strategy<Value = BodyMotion> {
        (
            proptest::array::uniform3(any_f64()),
            proptest::array::uniform4(any_f64()),
            proptest::array::uniform3(any_f64()),
            proptest::array::uniform3(any_f64()),
        )
            .prop_map(
                |(com_m, orientation, velocity_m_s, angular_velocity_rad_s)| BodyMotion {
                    com_m,
                    orientation,
                    velocity_m_s,
                    angular_velocity_rad_s,
                },
            )
    }

    proptest! {
        /// Whatever the bodies (NaN, infinities, zero quaternions, huge values) and the time,
        /// a tick gives finite torques within every joint's effort, and never panics.
        #[test]
        fn any_state_gives_finite_torques_within_the_efforts(
            state in proptest::array::uniform7(any_body()),
            time_s in any_f64(),
            law in 0..3usize,
        ) {
            let law = [PoseLaw::ParentSpace, PoseLaw::WorldSpace, PoseLaw::WorldSpaceRootSpring][law];
            let mut p = pose(law, |s| {
                s.reach = Some(Reach {
                    joint: 5,
                    rotation: UnitQuaternion::from_axis_angle(&Vector3::z_axis(), 1.0),
                    start_s: 0.0,
                    arrive_s: 1.0,
                });
            });
            let out = p.tick(&HumanoidInput { time_s, bodies: &state });
            for (t, j) in out.torques_nm.iter().zip(joints()) {
                prop_assert!(t.iter().all(|x| x.is_finite()), "{t:?}");
                prop_assert!(t.norm() <= j.effort_nm, "{t:?}");
            }
            prop_assert!(out.root_torque_nm.iter().all(|x| x.is_finite()));
        }
    }
}
