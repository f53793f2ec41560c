//! Joint-space controllers of a fixed-base robot, on its kinematic tree ([`Tree`]): the Lambert-W
//! arrival gains of every joint solved on that joint's composite inertia ([`TreeArrival`]), with
//! the parent feed-forward of "On the Beat!" (Allen, Chu, Shapiro, Faloutsos, SCA 2007) or the
//! tree's inverse dynamics as the coupling between joints; and [`LinkSpec`] and [`serial_tree`],
//! which build a serial chain of revolute joints (URDF's conventions) as a [`Tree`].
//!
//! Must never allocate, block or panic, whatever the input: every configuration is validated
//! when it is built ([`ModelError::Config`] names the field), every tick checks its inputs and
//! its outputs ([`ModelError`]: a NaN or infinite input is refused and named, and a result that
//! is not a finite f64 — finite parameters and inputs whose products overflow — is
//! [`ModelError::OutOfRange`]), so no NaN ever leaves this module. Only fixed-size `nalgebra`
//! types are used, indices are checked (`get`, iterators), and nothing here loops longer than
//! O(N · depth).
//!
//! ```
//! use control_core::articulated::nalgebra::{Isometry3, Vector3};
//! use control_core::articulated::{ArrivalSettings, TreeArrival, Coupling, JointTarget, LinkSpec, serial_tree};
//! // Two 1 m, 2 kg rods about +z, the second hinged at the tip of the first.
//! let rod = LinkSpec {
//!     origin_xyz_m: [0.0; 3],
//!     origin_rpy_rad: [0.0; 3],
//!     axis: [0.0, 0.0, 1.0],
//!     mass_kg: 2.0,
//!     com_m: [0.5, 0.0, 0.0],
//!     inertia_kgm2: [0.003, 0.0, 0.0, 0.168, 0.0, 0.168],
//! };
//! let tree = serial_tree::<4>(&[rod, LinkSpec { origin_xyz_m: [1.0, 0.0, 0.0], ..rod }])?;
//! let q = [0.3, -0.5, 0.0, 0.0]; // capacity 4, two joints: the rest is not read
//! let kin = tree.kinematics(&Isometry3::identity(), &q)?;
//! let m = kin.mass_matrix()?;
//! let composite = kin.composite()?;
//! assert!((composite.axis_inertia()[0] - m[(0, 0)]).abs() < 1e-12);
//! // One control tick: both joints to 1 rad in 0.5 s.
//! let arrival = TreeArrival::new(ArrivalSettings::default(), Coupling::ParentFeedforward)?;
//! let target = JointTarget { pose_rad: 1.0, time_to_go_s: 0.5 };
//! let gravity = Vector3::new(0.0, -9.81, 0.0);
//! let base = Isometry3::identity();
//! let command = arrival.tick(&tree, &base, &q, &[0.0; 4], &[target; 4], &gravity)?;
//! assert_eq!(command.joints().len(), 2);
//! # Ok::<(), Box<dyn core::error::Error>>(())
//! ```
//!
//! # A chain as a tree
//! [`serial_tree`] hangs link i from link i − 1 (the base, massless and welded, for i = 0) by
//! joint i, so link i is body i + 1 of the tree. Each [`LinkSpec`] is a URDF `<joint>` and its
//! child's `<inertial>`: the joint frame sits at `origin` relative to the parent link's frame at
//! q = 0 (translation `xyz`, then fixed-axis roll–pitch–yaw: R = R_z(yaw)·R_y(pitch)·R_x(roll))
//! and turns by q_i about the unit `axis` given in the joint frame; the link's centre of mass and
//! its inertia about it are in the link frame. q_i > 0 turns counter-clockwise about the axis,
//! torques are positive in the same sense, gravity is a world vector (m/s², e.g. (0, −9.81, 0)).
//! The dynamics ([`crate::tree`]) are Pinocchio's to rounding; on a serial chain the composite
//! inertia of joint i about its axis is exactly the mass matrix's M_ii.
//!
//! # The arrival tick
//! Each joint i is read as a double integrator of inertia m_i, its composite inertia about its
//! own axis at the measured configuration (the subtree it carries taken as one rigid body turning
//! about the joint line: m_i = s_i·D_i s_i + M_i ‖(c_i − d_i) × s_i‖², s_i the unit axis, d_i a
//! point of it, M_i, c_i and D_i the subtree's mass, centre of mass and inertia about it; for a
//! prismatic joint the subtree's mass). Its arrival gains are solved on m_i
//! ([`solve_arrival_gains`]) to pass through the target's pose when its time to go has elapsed,
//! clamped to the stable limit of m_i for the control period ([`GainLimit`]); its torque is the
//! PD drive, the coupling compensation ([`Coupling`]) and the generalized gravity (the holding
//! torque, [`TreeKinematics::gravity`]).
//!
//! # The parent feed-forward, and how the slide is read
//! The slide (seed 001) gives a_i = Σ_{j<i} (τ_j/m_j) G_j s_j, "the total angular acceleration at
//! joint i in world coordinates", and adds a_i·(G s_i) to joint i's PD torque. As printed that
//! adds an acceleration to a torque. Read as **m_i·(a_i·s_i)** it is a torque: the torque joint i
//! must add so that its subtree, treated as rigid about its axis (inertia m_i), turns with the
//! world angular acceleration its ancestors impose, and its own angle is left to its own PD.
//! What is computed, root to leaf along each joint's path from the base, O(n):
//!
//!   a_0 = 0,  a_{i+1} = a_i + (τ_i/m_i) s_i,  ff_i = m_i (a_i · s_i),
//!
//! where τ_j is joint j's own **drive** torque (its PD / arrival torque), not its total: τ_j/m_j
//! is then the acceleration joint j commands relative to its parent, and a_i the sum of those
//! relative accelerations along the path. Adding a parent's own feed-forward (or its gravity
//! torque) into τ_j would count the grandparents' accelerations twice (that part of τ_j only
//! makes link j follow them) and count holding torques as motion. The G_j^w of the slide are the
//! world rotations that turn each s_j into the world s_j used here. A prismatic joint adds no
//! angular acceleration and takes no feed-forward. This is the slide's approximation: the exact
//! coupling is Σ_{j≠i} M_ij q̈_j plus the velocity terms c_i, of which it keeps m_i(s_i·s_j)q̈_j
//! for the ancestors j. It is [`TreeArrival`]'s default ([`Coupling::ParentFeedforward`]);
//! [`Coupling::InverseDynamics`] compensates the exact coupling instead: every joint's drive is
//! read as the acceleration q̈_i = drive_i/m_i of the double integrator its arrival solve assumes,
//! and the torque is the tree's recursive Newton–Euler τ = M q̈ + c + τ_g, so that with an exact
//! model each joint is that double integrator. On a simulated 3-link arm (tested) it passes
//! every keyframe within 1.3e−4 rad, where the parent feed-forward misses by up to 0.7 rad or
//! diverges: the gains clamped to the period's limit for m_i = M_ii exceed the limit of the
//! coupled arm, whose effective inertia 1/(M⁻¹)_ii is smaller.
//!
//! # Costs
//! `cargo bench -p control-core --bench articulated` measures [`TreeArrival::tick`] with both
//! couplings, its pieces and the arrival solves alone on a 3-joint arm and a 28-joint chain;
//! the figures are in the project's `docs/RESULTS.md` ("Costs"). Of a 28-joint tick (5.1 µs)
//! about 2.4 µs (≈ 86 ns per joint) is the 28 arrival solves ([`solve_arrival_gains`]: one
//! Lambert W and a few `exp`/`ln`).

use core::fmt;

/// The `nalgebra` whose fixed-size types this module takes and returns (its vectors, matrices and
/// isometries), for callers that do not depend on it themselves.
pub use nalgebra;
use nalgebra::{Isometry3, Vector3};

use crate::tree::{
    BaseKind, EvalInput, Inertial, JointSpec, JointType, Placement, Tree, TreeError, TreeEvalError,
    TreeKinematics, TreeSpec,
};

use crate::gains::{
    ArrivalProblem, Branch, CriticalGains, GainError, GainLimit, Integrator, closest_arrival_gains,
    solve_arrival_gains,
};

/// One link of a chain and the joint that carries it, as a URDF `<joint>` and the child
/// `<link>`'s `<inertial>` give them. SI units, angles in rad.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LinkSpec {
    /// Position of the joint frame in the parent link's frame (URDF `<origin xyz>`), m.
    pub origin_xyz_m: [f64; 3],
    /// Orientation of the joint frame in the parent link's frame, fixed-axis roll, pitch, yaw
    /// (URDF `<origin rpy>`), rad.
    pub origin_rpy_rad: [f64; 3],
    /// The joint axis in the joint frame (URDF `<axis xyz>`); any non-zero length, normalised.
    pub axis: [f64; 3],
    /// Mass of the link, kg (> 0).
    pub mass_kg: f64,
    /// Centre of mass in the link frame, m.
    pub com_m: [f64; 3],
    /// Inertia tensor about the centre of mass in the link frame, kg·m², as URDF orders it:
    /// ixx, ixy, ixz, iyy, iyz, izz. Must be positive definite.
    pub inertia_kgm2: [f64; 6],
}

impl LinkSpec {
    /// This link as a revolute joint of a kinematic tree hanging from body `parent_body` (its
    /// origin, axis and mass properties unchanged).
    pub fn tree_joint(&self, parent_body: usize) -> JointSpec {
        JointSpec {
            parent_body,
            kind: JointType::Revolute,
            origin: Placement::from_xyz_rpy(self.origin_xyz_m, self.origin_rpy_rad),
            axis: self.axis,
            body: Inertial {
                mass_kg: self.mass_kg,
                com_m: self.com_m,
                inertia_kgm2: self.inertia_kgm2,
            },
        }
    }
}

/// `links` as a chain-shaped fixed-base tree, the base massless: link i is joint i, hanging
/// from body i (so link i is body i + 1); no links is the base alone, a tree without joints
/// (every controller's tick then commands nothing). More links than `N` is
/// [`TreeError::CapacityExceeded`]; everything else [`Tree::new`] checks. No allocation.
pub fn serial_tree<const N: usize>(links: &[LinkSpec]) -> Result<Tree<N>, TreeError> {
    if links.len() > N {
        return Err(TreeError::CapacityExceeded {
            dofs: links.len(),
            capacity: N,
        });
    }
    let mut joints = [JointSpec {
        parent_body: 0,
        kind: JointType::Revolute,
        origin: Placement::IDENTITY,
        axis: [0.0, 0.0, 1.0],
        body: Inertial::ZERO,
    }; N];
    for (k, (slot, link)) in joints.iter_mut().zip(links).enumerate() {
        *slot = link.tree_joint(k);
    }
    Tree::new(&TreeSpec {
        base: BaseKind::Fixed,
        base_body: Inertial::ZERO,
        joints: joints.get(..links.len()).unwrap_or(&[]),
    })
}

/// An input of an evaluation. `joint` counts from 0 at the root.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Input {
    /// A joint position q_i.
    Position {
        /// The joint.
        joint: usize,
    },
    /// A joint velocity.
    Velocity {
        /// The joint.
        joint: usize,
    },
    /// A joint acceleration given to inverse dynamics.
    Acceleration {
        /// The joint.
        joint: usize,
    },
    /// A target pose ([`JointTarget::pose_rad`]).
    TargetPose {
        /// The joint.
        joint: usize,
    },
    /// A target's time to go ([`JointTarget::time_to_go_s`]).
    TimeToGo {
        /// The joint.
        joint: usize,
    },
    /// A keyframe's target velocity ([`crate::beat::BeatTarget::velocity_rad_s`]).
    TargetVelocity {
        /// The joint.
        joint: usize,
    },
    /// A keyframe's segment duration ([`crate::beat::BeatTarget::segment_s`]).
    Segment {
        /// The joint.
        joint: usize,
    },
    /// The gravity vector.
    Gravity,
    /// A point given for a Jacobian or a transform.
    Point,
    /// The base's pose in the world (not finite, or a zero-length rotation quaternion).
    BasePose,
}

/// A field of an [`ArrivalSettings`] or a [`crate::beat::BeatConfig`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ConfigField {
    /// [`ArrivalSettings::period_s`].
    Period,
    /// [`ArrivalSettings::stability_margin`].
    Margin,
    /// [`ArrivalSettings::hold_natural_freq_rad_s`].
    HoldFrequency,
    /// [`ArrivalSettings::pose_tolerance_rad`].
    PoseTolerance,
    /// [`crate::beat::BeatConfig::time_constants`].
    TimeConstants,
}

/// Why a joint-space controller's tick (or a tree evaluation it made) returned no result.
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub enum ModelError {
    /// An input is NaN or infinite.
    NonFinite(Input),
    /// A body index beyond the tree.
    NoSuchLink {
        /// The index asked for.
        link: usize,
        /// The tree's number of bodies.
        len: usize,
    },
    /// A result is not a finite f64: the robot's dimensions, masses and inputs are too far apart
    /// for f64 (for example positions of 1e200 m).
    OutOfRange,
    /// An [`ArrivalSettings`] or [`crate::beat::BeatConfig`] field is not finite or outside its
    /// range.
    Config(ConfigField),
    /// A joint's stable gain limit could not be formed from its composite inertia.
    GainLimit {
        /// The joint.
        joint: usize,
        /// Why.
        error: GainError,
    },
    /// A joint's arrival problem has no gain at all: neither [`solve_arrival_gains`] nor its
    /// fallback [`closest_arrival_gains`] gave one (its scales exceed f64).
    NoGain {
        /// The joint.
        joint: usize,
        /// Why the exact solve refused.
        error: GainError,
    },
    /// A keyframe's segment duration ([`crate::beat::BeatTarget::segment_s`]) is zero or
    /// negative: its time constant λ = t̂/n would be too.
    NonPositiveSegment {
        /// The joint.
        joint: usize,
    },
    /// A joint-space controller was given a floating-base tree: its six unactuated base
    /// coordinates have no target and no torque.
    FloatingBase,
    /// A joint's losses given to [`TreeCommand::add_losses`] are negative or not finite.
    BadLosses {
        /// The joint.
        joint: usize,
    },
}

impl fmt::Display for ModelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NonFinite(input) => write!(f, "joint-space controller: {input:?} is not finite"),
            Self::NoSuchLink { link, len } => {
                write!(
                    f,
                    "joint-space controller: no body {link} (the tree has {len})"
                )
            }
            Self::OutOfRange => write!(f, "joint-space controller: a result exceeds the f64 range"),
            Self::Config(field) => {
                write!(f, "joint-space controller config: {field:?} out of range")
            }
            Self::GainLimit { joint, error } => {
                write!(
                    f,
                    "joint-space controller: joint {joint}: no gain limit: {error}"
                )
            }
            Self::NoGain { joint, error } => {
                write!(f, "joint-space controller: joint {joint}: no gain: {error}")
            }
            Self::NonPositiveSegment { joint } => write!(
                f,
                "joint-space controller: joint {joint}: keyframe segment must be > 0 s"
            ),
            Self::FloatingBase => write!(
                f,
                "joint-space controller: a floating base has no joint targets (a fixed base is needed)"
            ),
            Self::BadLosses { joint } => write!(
                f,
                "joint-space controller: joint {joint}: damping and friction must be finite and >= 0"
            ),
        }
    }
}

impl core::error::Error for ModelError {}

/// Whether every value is finite; without early exit, so that it vectorises.
#[inline]
pub(crate) fn all_finite(values: &[f64]) -> bool {
    values.iter().fold(true, |ok, v| ok & v.is_finite())
}

/// Where one joint must be, and when.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct JointTarget {
    /// The pose to pass through, rad.
    pub pose_rad: f64,
    /// Time left until the joint must be at the pose, s. Zero or negative: hold the pose
    /// (critically damped, at the hold frequency).
    pub time_to_go_s: f64,
}

/// How [`TreeArrival`] compensates the joints' dynamic coupling (what one joint's motion asks of
/// the others).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Coupling {
    /// The slides' parent feed-forward m_i(a_i·s_i) (module docs): the
    /// ancestors' commanded angular accelerations only, on the composite inertia. The linear
    /// acceleration of the parent joints and the velocity-product (centripetal, Coriolis) terms
    /// are left to each joint's PD.
    #[default]
    ParentFeedforward,
    /// Full inverse dynamics ([`TreeKinematics::inverse_dynamics`]): each joint's drive torque is
    /// taken as the acceleration q̈_i = drive_i/m_i it asks of a double integrator of inertia
    /// m_i, and the torque is τ = M(q)q̈ + c(q, q̇) + τ_g(q). With an exact model every joint
    /// then moves as the double integrator its arrival solve assumes.
    InverseDynamics,
}

/// What the arrival gains need: the one configuration of every arrival controller
/// ([`TreeArrival`] on a robot's tree, [`crate::dynamo::DynamoJoint`] on a character's
/// joints).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ArrivalSettings {
    /// The period the gains must be stable for (the state period: the slower of the control
    /// period and the physics step), s (finite, > 0).
    pub period_s: f64,
    /// How the plant integrates between samples: sets the stable gain limit.
    pub integrator: Integrator,
    /// Fraction of the stable gain limit the gains may use, in (0, 1].
    pub stability_margin: f64,
    /// Natural frequency of the critically damped hold once a target's time is up, rad/s
    /// (finite, > 0).
    pub hold_natural_freq_rad_s: f64,
    /// The PD setpoint is re-aimed this far beyond the pose every tick, as seen from where the
    /// joint is (a critically damped motion never reaches its own setpoint in finite time), rad
    /// (finite, > 0).
    pub pose_tolerance_rad: f64,
}

impl Default for ArrivalSettings {
    /// 200 Hz, Rapier's integrator, 0.8 of the stable limit, 10 rad/s hold, 0.05 rad tolerance.
    fn default() -> Self {
        Self {
            period_s: 0.005,
            integrator: Integrator::SemiImplicitEuler,
            stability_margin: 0.8,
            hold_natural_freq_rad_s: 10.0,
            pose_tolerance_rad: 0.05,
        }
    }
}

impl ArrivalSettings {
    /// Refuse a field out of its range, naming it.
    pub fn validate(&self) -> Result<(), ConfigField> {
        let positive = |v: f64| v.is_finite() && v > 0.0;
        if !positive(self.period_s) {
            return Err(ConfigField::Period);
        }
        if !(positive(self.stability_margin) && self.stability_margin <= 1.0) {
            return Err(ConfigField::Margin);
        }
        if !positive(self.hold_natural_freq_rad_s) {
            return Err(ConfigField::HoldFrequency);
        }
        if !positive(self.pose_tolerance_rad) {
            return Err(ConfigField::PoseTolerance);
        }
        Ok(())
    }
}

/// What one joint's gain computation did this tick ([`TreeArrival`]'s arrival solve, or
/// [`crate::beat::BeatServo`]'s time-constant gains, which are only ever `Tracking` or
/// `GainClamped`).
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub enum JointStatus {
    /// The gains arrive on time (for [`crate::beat::BeatServo`]: the method's gains, within the
    /// limit).
    Tracking,
    /// The arriving (or the method's) gains exceed what the period integrates stably; clamped
    /// to the limit.
    GainClamped,
    /// No stable gain arrives on time (the error says why); the gain of the stable range whose
    /// predicted arrival comes closest is used ([`closest_arrival_gains`]).
    Infeasible(GainError),
    /// The time is up (or every gain arrives): critically damped hold about the pose.
    Holding,
}

/// One joint's part of a [`TreeCommand`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct JointCommand {
    /// The inertia about the joint axis the gains were solved for, kg·m²: the composite m_i
    /// (for [`crate::beat::BeatServo`], the one its [`crate::beat::InertiaModel`] picks).
    pub inertia_kgm2: f64,
    /// The gains used (after the clamp).
    pub gains: CriticalGains,
    /// What the solve did.
    pub status: JointStatus,
    /// The PD setpoint, rad.
    pub setpoint_rad: f64,
    /// k(setpoint − θ) − γω, N·m ([`crate::beat::BeatServo`]: k(θ̂ − θ) + γ(ω̂ − ω)).
    pub drive_nm: f64,
    /// The coupling compensation, N·m. Under [`Coupling::ParentFeedforward`] (and for
    /// [`crate::beat::BeatServo`]) the parent feed-forward m_i(a_i·s_i); under
    /// [`Coupling::InverseDynamics`] everything of the inverse-dynamics torque that is neither
    /// the drive nor gravity, τ_i − drive − gravity.
    pub parent_feedforward_nm: f64,
    /// The gravity holding torque, N·m.
    pub gravity_nm: f64,
    /// The joint's losses compensated ([`TreeCommand::add_losses`]), N·m; 0 until they are.
    pub losses_nm: f64,
    /// drive + coupling compensation + gravity (+ losses), N·m (no torque limit is applied
    /// here). Under [`Coupling::InverseDynamics`] it is the inverse-dynamics τ_i itself (plus the
    /// losses), which that sum gives back to within rounding.
    pub torque_nm: f64,
}

impl JointCommand {
    pub(crate) const PLACEHOLDER: Self = Self {
        inertia_kgm2: 0.0,
        gains: CriticalGains {
            stiffness_nm_per_rad: 0.0,
            damping_nms_per_rad: 0.0,
            branch: Branch::Principal,
        },
        status: JointStatus::Holding,
        setpoint_rad: 0.0,
        drive_nm: 0.0,
        parent_feedforward_nm: 0.0,
        gravity_nm: 0.0,
        losses_nm: 0.0,
        torque_nm: 0.0,
    };
}

/// The speed below which [`TreeCommand::add_losses`] compensates only part of a joint's dry
/// friction, in proportion: 0.01 rad/s (m/s for a slider). Full compensation flips sign with
/// the speed's; within this band a joint that holds still is held by the friction itself.
pub const FRICTION_SPEED_BAND: f64 = 0.01;

/// A joint's losses as a plant applies them (URDF's `<dynamics damping friction>`): a viscous
/// torque −d q̇ and a dry (Coulomb) friction that holds the joint against torques up to f and
/// opposes its motion with f.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct JointLosses {
    /// d, N·m·s/rad (N·s/m for a slider), ≥ 0.
    pub damping: f64,
    /// f, N·m (N for a slider), ≥ 0.
    pub friction: f64,
}

/// The torques of one tick of [`TreeArrival::tick`] (or [`crate::beat::BeatServo::tick`]), and
/// how each was made.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TreeCommand<const N: usize> {
    pub(crate) joints: [JointCommand; N],
    pub(crate) len: usize,
}

impl<const N: usize> TreeCommand<N> {
    /// Placeholders for `len` joints, still to be filled.
    pub(crate) const fn empty(len: usize) -> Self {
        Self {
            joints: [JointCommand::PLACEHOLDER; N],
            len,
        }
    }

    /// The joints' commands, root first.
    pub fn joints(&self) -> &[JointCommand] {
        self.joints.get(..self.len).unwrap_or(&[])
    }

    /// The total torque of every joint (0 past the tree's joints), N·m.
    pub fn torques(&self) -> [f64; N] {
        let mut tau = [0.0; N];
        for (t, j) in tau.iter_mut().zip(self.joints()) {
            *t = j.torque_nm;
        }
        tau
    }

    /// Adds to each joint's torque what its `losses` will take from the motion this command asks
    /// for: the velocity the joint is driven towards over the next `period_s`,
    /// v = q̇ + (drive / inertia)·period (the drive read as the acceleration of the double
    /// integrator its gains were solved for), costs d·v of viscous damping and f·sat(v / b) of
    /// dry friction (`b` = [`FRICTION_SPEED_BAND`], sat clamping to ±1). The damping term is
    /// d·v rather than d·q̇ because a plant integrating the damping implicitly (Rapier: −d·q̇ at
    /// the step's end) takes d·q̇_next. A joint with no losses is left untouched (bit for bit).
    ///
    /// Only the first [`TreeCommand::joints`] entries of `losses` and `velocities` are read (the
    /// velocity only of a joint with losses). A loss that is negative or not finite
    /// ([`ModelError::BadLosses`]), a period that is not finite and > 0, a non-finite velocity
    /// of a joint with losses, or a torque that is not a finite f64 is an error, and the
    /// command is then left as it was.
    pub fn add_losses(
        &mut self,
        losses: &[JointLosses; N],
        velocities: &[f64; N],
        period_s: f64,
    ) -> Result<(), ModelError> {
        if !(period_s.is_finite() && period_s > 0.0) {
            return Err(ModelError::Config(ConfigField::Period));
        }
        // Checked whole before any joint is changed: `None` for a joint without losses.
        let mut added = [None; N];
        for (joint, ((out, l), (&omega, cmd))) in added
            .iter_mut()
            .zip(losses)
            .zip(velocities.iter().zip(self.joints()))
            .enumerate()
        {
            let ok = |v: f64| v.is_finite() && v >= 0.0;
            if !(ok(l.damping) && ok(l.friction)) {
                return Err(ModelError::BadLosses { joint });
            }
            if l.damping == 0.0 && l.friction == 0.0 {
                continue;
            }
            if !omega.is_finite() {
                return Err(ModelError::NonFinite(Input::Velocity { joint }));
            }
            let v = omega + cmd.drive_nm / cmd.inertia_kgm2 * period_s;
            let t = l.damping * v + l.friction * (v / FRICTION_SPEED_BAND).clamp(-1.0, 1.0);
            if !(t.is_finite() && (cmd.torque_nm + t).is_finite()) {
                return Err(ModelError::OutOfRange);
            }
            *out = Some(t);
        }
        for (cmd, t) in self.joints.iter_mut().zip(added).take(self.len) {
            if let Some(t) = t {
                cmd.losses_nm = t;
                cmd.torque_nm += t;
            }
        }
        Ok(())
    }
}

/// Arrival gains for every joint of a fixed-base tree, re-solved every tick: each joint's Lambert-W
/// arrival solve ([`solve_arrival_gains`]) uses the composite inertia m_i of the current
/// configuration, its gains are clamped to the stable limit of m_i for the period
/// ([`GainLimit`]), and its torque is the PD drive plus the coupling compensation
/// ([`Coupling`]) plus gravity. Stateless: a configuration, validated once.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TreeArrival {
    settings: ArrivalSettings,
    coupling: Coupling,
}

impl TreeArrival {
    /// Validate `settings`; `coupling` says how the joints' coupling is compensated.
    pub fn new(settings: ArrivalSettings, coupling: Coupling) -> Result<Self, ModelError> {
        settings.validate().map_err(ModelError::Config)?;
        Ok(Self { settings, coupling })
    }

    /// The arrival settings.
    pub fn settings(&self) -> ArrivalSettings {
        self.settings
    }

    /// How the joints' coupling is compensated.
    pub fn coupling(&self) -> Coupling {
        self.coupling
    }

    /// One tick on a fixed-base tree ([`Tree`], any robot a URDF describes; [`serial_tree`] for a
    /// chain), the base welded at `base_pose`: each joint's arrival gains on its composite
    /// inertia about its own axis
    /// ([`TreeComposite::axis_inertia`](crate::tree::TreeComposite::axis_inertia); for a
    /// prismatic joint the subtree's mass, and its pose in m), its drive, the coupling, and the
    /// generalized gravity ([`TreeKinematics::gravity`]). Only the first
    /// [`Tree::joint_count`] entries of `q`, `velocities` and `targets` are read.
    ///
    /// The coupling ([`TreeArrival::coupling`]): under [`Coupling::InverseDynamics`] the
    /// torques are the tree's recursive Newton–Euler τ = M(q)q̈ + c(q, q̇) + g(q) for
    /// q̈_k = drive_k/m_k (one more O(n) pass); under [`Coupling::ParentFeedforward`] each
    /// revolute joint adds m_k(a_k·s_k), a_k the sum of its ancestors' commanded angular
    /// accelerations (τ_j/m_j)s_j along its own path to the base (a prismatic joint adds no
    /// angular acceleration and takes no feed-forward).
    ///
    /// Per joint, as [`crate::servo::ArrivalServo`] does for one: the setpoint is re-aimed
    /// [`ArrivalSettings::pose_tolerance_rad`] beyond the pose as seen from θ; an exact solve is
    /// clamped to the limit; a refused one falls back to [`closest_arrival_gains`]; a target
    /// whose time is up is held.
    ///
    /// A floating base is [`ModelError::FloatingBase`]: its six unactuated coordinates have no
    /// arrival target. Any non-finite input, or a result that is not a finite f64, is an error
    /// for the whole tick (the caller's safe state takes over): no NaN is ever returned.
    pub fn tick<const N: usize>(
        &self,
        tree: &Tree<N>,
        base_pose: &Isometry3<f64>,
        q: &[f64; N],
        velocities: &[f64; N],
        targets: &[JointTarget; N],
        gravity: &Vector3<f64>,
    ) -> Result<TreeCommand<N>, ModelError> {
        let mut tick = TreeTick::new(tree);
        tick.fill(base_pose, q, gravity)?;
        let n = tree.joint_count();
        let mut command = TreeCommand::<N>::empty(n);
        let mut desired = [0.0; N];
        for (joint, ((out, target), qdd)) in command
            .joints
            .iter_mut()
            .zip(targets.iter())
            .zip(desired.iter_mut())
            .enumerate()
            .take(n)
        {
            let (theta, omega, m, gravity_nm) = tick.joint(joint, q, velocities)?;
            if !target.pose_rad.is_finite() {
                return Err(ModelError::NonFinite(Input::TargetPose { joint }));
            }
            if !target.time_to_go_s.is_finite() {
                return Err(ModelError::NonFinite(Input::TimeToGo { joint }));
            }
            let (gains, setpoint, status) = self.joint_gains(joint, m, theta, omega, target)?;
            let drive =
                gains.stiffness_nm_per_rad * (setpoint - theta) - gains.damping_nms_per_rad * omega;
            let parent_feedforward = match self.coupling {
                Coupling::ParentFeedforward => tick.feedforward_step(joint, drive, m)?,
                Coupling::InverseDynamics => {
                    *qdd = drive / m;
                    if !qdd.is_finite() {
                        return Err(ModelError::OutOfRange);
                    }
                    0.0
                }
            };
            let torque = drive + parent_feedforward + gravity_nm;
            if !torque.is_finite() {
                return Err(ModelError::OutOfRange);
            }
            *out = JointCommand {
                inertia_kgm2: m,
                gains,
                status,
                setpoint_rad: setpoint,
                drive_nm: drive,
                parent_feedforward_nm: parent_feedforward,
                gravity_nm,
                losses_nm: 0.0,
                torque_nm: torque,
            };
        }
        if self.coupling == Coupling::InverseDynamics {
            let tau = tick
                .kin
                .inverse_dynamics(velocities, &desired, gravity)
                .map_err(model_error)?;
            for (out, &torque) in command.joints.iter_mut().zip(tau.iter()).take(n) {
                let coupling = torque - out.drive_nm - out.gravity_nm;
                if !coupling.is_finite() {
                    return Err(ModelError::OutOfRange);
                }
                out.parent_feedforward_nm = coupling;
                out.torque_nm = torque;
            }
        }
        Ok(command)
    }

    /// One joint's gains, setpoint and status (inputs finite, m > 0 and finite).
    fn joint_gains(
        &self,
        joint: usize,
        m: f64,
        theta: f64,
        omega: f64,
        target: &JointTarget,
    ) -> Result<(CriticalGains, f64, JointStatus), ModelError> {
        let c = &self.settings;
        let limit = GainLimit::new(m, c.period_s, c.integrator, c.stability_margin)
            .map_err(|error| ModelError::GainLimit { joint, error })?;
        let hold = || {
            CriticalGains::from_damping(m, 2.0 * m * c.hold_natural_freq_rad_s, Branch::Principal)
                .map(|g| g.clamp_to(&limit).gains)
                .ok_or(ModelError::OutOfRange)
        };
        if target.time_to_go_s <= 0.0 {
            return Ok((hold()?, target.pose_rad, JointStatus::Holding));
        }
        let direction = if target.pose_rad >= theta { 1.0 } else { -1.0 };
        let setpoint = target.pose_rad + direction * c.pose_tolerance_rad;
        let problem = ArrivalProblem {
            inertia_kgm2: m,
            position_rad: theta,
            velocity_rad_s: omega,
            setpoint_rad: setpoint,
            arrival_rad: target.pose_rad,
            time_to_go_s: target.time_to_go_s,
        };
        match solve_arrival_gains(&problem) {
            Ok(gains) => {
                let clamped = gains.clamp_to(&limit);
                let status = if clamped.acted {
                    JointStatus::GainClamped
                } else {
                    JointStatus::Tracking
                };
                Ok((clamped.gains, setpoint, status))
            }
            Err(GainError::Indeterminate) => Ok((hold()?, setpoint, JointStatus::Holding)),
            Err(error) => match closest_arrival_gains(&problem, &limit) {
                Some(gains) => Ok((gains, setpoint, JointStatus::Infeasible(error))),
                None => Err(ModelError::NoGain { joint, error }),
            },
        }
    }
}

/// A tree evaluation's error as a chain controller's: the inputs keep their joint.
pub(crate) fn model_error(e: TreeEvalError) -> ModelError {
    match e {
        TreeEvalError::NonFinite { what } => ModelError::NonFinite(match what {
            EvalInput::Position { joint } => Input::Position { joint },
            EvalInput::Velocity { index } => Input::Velocity { joint: index },
            EvalInput::Acceleration { index } => Input::Acceleration { joint: index },
            EvalInput::Gravity => Input::Gravity,
            EvalInput::BasePose => Input::BasePose,
            _ => Input::Point,
        }),
        TreeEvalError::NoSuchBody { body, bodies } => ModelError::NoSuchLink {
            link: body,
            len: bodies,
        },
        _ => ModelError::OutOfRange,
    }
}

/// What a joint-space tick on a fixed-base tree starts from and carries from joint to joint: the
/// kinematics at q, each joint's composite inertia about its axis and gravity holding torque
/// (both by joint: for a fixed base the velocity layout is the joint order), and per body the
/// commanded angular acceleration of the revolute joints on its path from the base.
pub(crate) struct TreeTick<'a, const N: usize> {
    tree: &'a Tree<N>,
    pub(crate) kin: TreeKinematics<N>,
    inertia: [f64; N],
    holding: [f64; N],
    body_acceleration: [Vector3<f64>; N],
}

impl<'a, const N: usize> TreeTick<'a, N> {
    /// Room for a tick of `tree`, to be filled by [`TreeTick::fill`] where it stands (a
    /// `TreeTick` holds a whole [`TreeKinematics`]: it is built in place, never moved).
    #[inline(always)]
    pub(crate) fn new(tree: &'a Tree<N>) -> Self {
        Self {
            tree,
            kin: TreeKinematics::default(),
            inertia: [0.0; N],
            holding: [0.0; N],
            body_acceleration: [Vector3::zeros(); N],
        }
    }

    /// Check `gravity` and the base, then the kinematics, composite inertias and gravity torques
    /// of the tree at `q` (the kinematics into the kept [`TreeKinematics`], the composite
    /// inertias about the axes and the gravity torques in one pass).
    pub(crate) fn fill(
        &mut self,
        base_pose: &Isometry3<f64>,
        q: &[f64; N],
        gravity: &Vector3<f64>,
    ) -> Result<(), ModelError> {
        if self.tree.base() != BaseKind::Fixed {
            return Err(ModelError::FloatingBase);
        }
        if !all_finite(gravity.as_slice()) {
            return Err(ModelError::NonFinite(Input::Gravity));
        }
        self.tree
            .kinematics_into(&mut self.kin, base_pose, q)
            .map_err(model_error)?;
        self.kin
            .axis_inertia_and_gravity(gravity, &mut self.inertia, &mut self.holding)
            .map_err(model_error)
    }

    /// Joint `joint`'s position and velocity (the velocity checked finite; the position was by
    /// the kinematics), its composite inertia about its axis and its gravity holding torque.
    pub(crate) fn joint(
        &self,
        joint: usize,
        q: &[f64; N],
        velocities: &[f64; N],
    ) -> Result<(f64, f64, f64, f64), ModelError> {
        let (Some(&theta), Some(&omega), Some(&m), Some(&gravity_nm)) = (
            q.get(joint),
            velocities.get(joint),
            self.inertia.get(joint),
            self.holding.get(joint),
        ) else {
            return Err(ModelError::OutOfRange);
        };
        if !omega.is_finite() {
            return Err(ModelError::NonFinite(Input::Velocity { joint }));
        }
        Ok((theta, omega, m, gravity_nm))
    }

    /// The slides' parent feed-forward of joint `joint`, m(a·s) with a the angular acceleration
    /// its ancestors command (0 for a prismatic joint), after which the joint's own commanded
    /// acceleration, `drive`/`composite` about its axis, is recorded for its descendants.
    pub(crate) fn feedforward_step(
        &mut self,
        joint: usize,
        drive: f64,
        composite: f64,
    ) -> Result<f64, ModelError> {
        let parent = match self.tree.parent_body(joint).and_then(|b| b.checked_sub(1)) {
            None => Vector3::zeros(),
            Some(k) => self
                .body_acceleration
                .get(k)
                .copied()
                .ok_or(ModelError::OutOfRange)?,
        };
        let axis = self.kin.joint_axis(joint).ok_or(ModelError::OutOfRange)?;
        let (own, feedforward) = if self.tree.joint_kind(joint) == Some(JointType::Revolute) {
            (
                parent + axis * (drive / composite),
                composite * parent.dot(&axis),
            )
        } else {
            (parent, 0.0)
        };
        if !(feedforward.is_finite() && all_finite(own.as_slice())) {
            return Err(ModelError::OutOfRange);
        }
        if let Some(slot) = self.body_acceleration.get_mut(joint) {
            *slot = own;
        }
        Ok(feedforward)
    }
}

/// What a joint-space controller reads from a fixed-base tree each tick, as one value for
/// [`crate::controller::Controller`]: [`TreeArrival::tick`] with `T` = [`JointTarget`],
/// [`crate::beat::BeatServo::tick`] with `T` = [`crate::beat::BeatTarget`].
#[derive(Debug, Clone, Copy)]
pub struct TreeInput<'a, const N: usize, T> {
    /// The robot's tree.
    pub tree: &'a Tree<N>,
    /// The base's pose in the world.
    pub base_pose: &'a Isometry3<f64>,
    /// Joint positions, rad or m.
    pub q: &'a [f64; N],
    /// Joint velocities.
    pub velocities: &'a [f64; N],
    /// One target per joint.
    pub targets: &'a [T; N],
    /// Gravity, world, m/s².
    pub gravity: &'a Vector3<f64>,
}

impl<const N: usize> TreeCommand<N> {
    /// What held the command back: joints whose gains were clamped, or whose target no stable
    /// gain reaches on time (no torque limit is applied here).
    pub fn limits(&self) -> crate::controller::Limits {
        let n = |f: fn(&JointStatus) -> bool| {
            crate::controller::count(self.joints().iter().filter(|j| f(&j.status)).count())
        };
        crate::controller::Limits {
            gain_clamped: n(|s| matches!(s, JointStatus::GainClamped)),
            infeasible: n(|s| matches!(s, JointStatus::Infeasible(_))),
            ..Default::default()
        }
    }
}

impl<const N: usize> crate::controller::Controller<TreeInput<'_, N, JointTarget>> for TreeArrival {
    type Command = TreeCommand<N>;
    type Error = ModelError;

    fn tick(&mut self, i: &TreeInput<'_, N, JointTarget>) -> Result<TreeCommand<N>, ModelError> {
        TreeArrival::tick(
            self,
            i.tree,
            i.base_pose,
            i.q,
            i.velocities,
            i.targets,
            i.gravity,
        )
    }

    fn limits(command: &TreeCommand<N>) -> crate::controller::Limits {
        command.limits()
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::model::ArmModel;
    use crate::servo::{ArrivalServo, JointServo, JointState, ServoConfig};
    use core::f64::consts::{FRAC_PI_2, PI};
    use nalgebra::{Matrix3, Rotation3, SMatrix, SVector};
    use proptest::prelude::*;

    /// Capacity of the random chains of the tests: chains of 1 to `CAP` links, so that the
    /// unused part of the fixed-size results is exercised too.
    pub(crate) const CAP: usize = 6;

    pub(crate) fn close(a: f64, b: f64, rel: f64, abs: f64) -> bool {
        (a - b).abs() <= abs + rel * a.abs().max(b.abs())
    }

    /// The inertia about its centre of a uniform box of mass `m` and sides `x`, `y`, `z`, in URDF
    /// order.
    fn box_inertia(m: f64, [x, y, z]: [f64; 3]) -> [f64; 6] {
        let k = m / 12.0;
        [
            k * (y * y + z * z),
            0.0,
            0.0,
            k * (x * x + z * z),
            0.0,
            k * (x * x + y * y),
        ]
    }

    /// A uniform box link of mass `m`, sides `sides`, hinged at the frame origin about `axis`,
    /// its centre at `com`, its joint frame `xyz` from its parent's frame.
    pub(crate) fn box_link(
        xyz: [f64; 3],
        axis: [f64; 3],
        m: f64,
        com: [f64; 3],
        sides: [f64; 3],
    ) -> LinkSpec {
        LinkSpec {
            origin_xyz_m: xyz,
            origin_rpy_rad: [0.0; 3],
            axis,
            mass_kg: m,
            com_m: com,
            inertia_kgm2: box_inertia(m, sides),
        }
    }

    /// A link with a physical inertia: a box of random sides, its principal axes turned by a
    /// random rotation.
    pub(crate) fn link_strategy() -> impl Strategy<Value = LinkSpec> {
        let v3 = |r: f64| prop::array::uniform3(-r..r);
        (
            (v3(1.0), v3(PI), v3(1.0)),
            (
                0.1..10.0f64,
                v3(0.5),
                prop::array::uniform3(0.05..1.0f64),
                v3(PI),
            ),
        )
            .prop_filter("axis not near zero", |((_, _, axis), _)| {
                axis.iter().map(|a| a * a).sum::<f64>() > 0.01
            })
            .prop_map(|((xyz, rpy, axis), (m, com, sides, principal_rpy))| {
                let [xx, _, _, yy, _, zz] = box_inertia(m, sides);
                let r = Rotation3::from_euler_angles(
                    principal_rpy[0],
                    principal_rpy[1],
                    principal_rpy[2],
                )
                .into_inner();
                let i = r * Matrix3::from_diagonal(&Vector3::new(xx, yy, zz)) * r.transpose();
                LinkSpec {
                    origin_xyz_m: xyz,
                    origin_rpy_rad: rpy,
                    axis,
                    mass_kg: m,
                    com_m: com,
                    inertia_kgm2: [i.m11, i.m12, i.m13, i.m22, i.m23, i.m33],
                }
            })
    }

    /// Random chains of 1 to `CAP` links as serial trees, with their specs and a configuration.
    fn chain_strategy() -> impl Strategy<Value = (Vec<LinkSpec>, Tree<CAP>, [f64; CAP])> {
        (
            prop::collection::vec(link_strategy(), 1..=CAP),
            prop::array::uniform6(-PI..PI),
        )
            .prop_map(|(specs, q)| {
                let tree = serial_tree(&specs).expect("valid random chain");
                (specs, tree, q)
            })
    }

    fn with(q: &[f64; CAP], j: usize, delta: f64) -> [f64; CAP] {
        let mut q = *q;
        q[j] += delta;
        q
    }

    /// The tree's kinematics at `q`, the base welded at the world origin.
    fn fk<const N: usize>(tree: &Tree<N>, q: &[f64; N]) -> TreeKinematics<N> {
        tree.kinematics(&Isometry3::identity(), q).unwrap()
    }

    /// Link k's world pose: body k + 1 of a serial tree.
    fn link_pose<const N: usize>(kin: &TreeKinematics<N>, k: usize) -> Isometry3<f64> {
        kin.body_pose(k + 1).unwrap()
    }

    /// Link k's centre of mass, world.
    fn link_com<const N: usize>(
        kin: &TreeKinematics<N>,
        spec: &LinkSpec,
        k: usize,
    ) -> Vector3<f64> {
        (link_pose(kin, k) * nalgebra::Point3::from(spec.com_m)).coords
    }

    /// Link k's inertia about its centre of mass, world axes.
    fn link_inertia<const N: usize>(
        kin: &TreeKinematics<N>,
        spec: &LinkSpec,
        k: usize,
    ) -> Matrix3<f64> {
        let r = link_pose(kin, k).rotation.to_rotation_matrix().into_inner();
        let [ixx, ixy, ixz, iyy, iyz, izz] = spec.inertia_kgm2;
        r * Matrix3::new(ixx, ixy, ixz, ixy, iyy, iyz, ixz, iyz, izz) * r.transpose()
    }

    /// The point `local` of link k's frame, as a placement on its body.
    fn at(local: &Vector3<f64>) -> Placement {
        Placement {
            xyz_m: [local.x, local.y, local.z],
            rotation: Placement::IDENTITY.rotation,
        }
    }

    /// The point `local` of link k in the world.
    fn point_in_world<const N: usize>(
        kin: &TreeKinematics<N>,
        k: usize,
        local: &Vector3<f64>,
    ) -> Vector3<f64> {
        kin.frame_pose(k + 1, &at(local))
            .unwrap()
            .translation
            .vector
    }

    /// The 3×N Jacobian of the point `local` of link k (the frame Jacobian's linear rows).
    fn point_jacobian<const N: usize>(
        kin: &TreeKinematics<N>,
        k: usize,
        local: &Vector3<f64>,
    ) -> SMatrix<f64, 3, N> {
        kin.frame_jacobian(k + 1, &at(local))
            .unwrap()
            .fixed_rows::<3>(0)
            .into_owned()
    }

    /// The 3×N angular Jacobian of link k (the frame Jacobian's angular rows).
    fn angular_jacobian<const N: usize>(kin: &TreeKinematics<N>, k: usize) -> SMatrix<f64, 3, N> {
        kin.frame_jacobian(k + 1, &Placement::IDENTITY)
            .unwrap()
            .fixed_rows::<3>(3)
            .into_owned()
    }

    /// M = Σ_k J_kᵀ m_k J_k + J_ω,kᵀ I_k J_ω,k, the slow way, from the Jacobians.
    fn slow_mass_matrix(specs: &[LinkSpec], kin: &TreeKinematics<CAP>) -> SMatrix<f64, CAP, CAP> {
        let mut m = SMatrix::<f64, CAP, CAP>::zeros();
        for (k, spec) in specs.iter().enumerate() {
            let j = point_jacobian(kin, k, &Vector3::from(spec.com_m));
            let jw = angular_jacobian(kin, k);
            m +=
                j.transpose() * j * spec.mass_kg + jw.transpose() * link_inertia(kin, spec, k) * jw;
        }
        m
    }

    fn potential(specs: &[LinkSpec], tree: &Tree<CAP>, q: &[f64; CAP], g: &Vector3<f64>) -> f64 {
        let kin = fk(tree, q);
        specs
            .iter()
            .enumerate()
            .map(|(k, spec)| -spec.mass_kg * g.dot(&link_com(&kin, spec, k)))
            .sum()
    }

    /// The slides' parent feed-forward from its definition, joint by joint along a serial
    /// chain: ff_i = m_i (a_i·s_i) with a_i = Σ_{j<i} (τ_j/m_j) s_j.
    pub(crate) fn parent_feedforward_by_definition<const N: usize>(
        kin: &TreeKinematics<N>,
        m: &[f64],
        drive: &[f64],
    ) -> Vec<f64> {
        (0..m.len())
            .map(|i| {
                let a: Vector3<f64> = (0..i)
                    .map(|j| kin.joint_axis(j).unwrap() * (drive[j] / m[j]))
                    .sum();
                m[i] * a.dot(&kin.joint_axis(i).unwrap())
            })
            .collect()
    }

    /// The link frames follow URDF's convention, computed here independently of the tree:
    /// T_i = T_{i−1} · origin_i · Rot(axis_i, q_i) with origin_i = (xyz, R_z(yaw) R_y(pitch)
    /// R_x(roll)).
    fn urdf_poses(specs: &[LinkSpec], q: &[f64]) -> Vec<(Matrix3<f64>, Vector3<f64>)> {
        let mut rotation = Matrix3::identity();
        let mut origin = Vector3::zeros();
        let mut poses = Vec::new();
        for (spec, &qi) in specs.iter().zip(q) {
            let [roll, pitch, yaw] = spec.origin_rpy_rad;
            let origin_rotation = Rotation3::from_axis_angle(&Vector3::z_axis(), yaw)
                * Rotation3::from_axis_angle(&Vector3::y_axis(), pitch)
                * Rotation3::from_axis_angle(&Vector3::x_axis(), roll);
            let axis = nalgebra::Unit::new_normalize(Vector3::from(spec.axis));
            origin += rotation * Vector3::from(spec.origin_xyz_m);
            rotation = rotation
                * origin_rotation.into_inner()
                * Rotation3::from_axis_angle(&axis, qi).into_inner();
            poses.push((rotation, origin));
        }
        poses
    }

    proptest! {
        /// `serial_tree` hangs link i from link i − 1 by joint i, as URDF does: every link
        /// frame (body i + 1) is the product of the origins and joint rotations, formed here
        /// with nalgebra's rotations (1e-12).
        #[test]
        fn serial_tree_follows_urdf_conventions((specs, tree, q) in chain_strategy()) {
            let kin = fk(&tree, &q);
            prop_assert_eq!(tree.joint_count(), specs.len());
            for (k, (rotation, origin)) in urdf_poses(&specs, &q).iter().enumerate() {
                let pose = link_pose(&kin, k);
                let r = pose.rotation.to_rotation_matrix().into_inner();
                prop_assert!((r - rotation).amax() < 1e-12, "link {}: {} vs {}", k, r, rotation);
                let scale = 1.0 + origin.amax();
                prop_assert!((pose.translation.vector - origin).amax() < 1e-12 * scale);
                prop_assert_eq!(tree.parent_body(k), Some(k));
            }
        }

        /// Every column of a link point's Jacobian is the central difference of the point's
        /// world position in that joint; columns past the link are zero.
        #[test]
        fn point_jacobian_is_the_derivative_of_forward_kinematics(
            (specs, tree, q) in chain_strategy(),
            link_pick in 0usize..CAP,
            local in prop::array::uniform3(-0.5..0.5f64),
        ) {
            let link = link_pick % specs.len();
            let local = Vector3::from(local);
            let kin = fk(&tree, &q);
            let jac = point_jacobian(&kin, link, &local);
            let h = 1e-6;
            for j in 0..CAP {
                let column = jac.column(j);
                if j > link {
                    prop_assert!(column.iter().all(|&v| v == 0.0));
                    continue;
                }
                let plus = fk(&tree, &with(&q, j, h));
                let minus = fk(&tree, &with(&q, j, -h));
                let fd = (point_in_world(&plus, link, &local) - point_in_world(&minus, link, &local))
                    / (2.0 * h);
                for r in 0..3 {
                    prop_assert!(close(column[r], fd[r], 1e-6, 1e-8),
                        "J[{r},{j}] = {} vs {}", column[r], fd[r]);
                }
            }
        }

        /// The angular Jacobian is the derivative of the link's world rotation:
        /// (R(q + h e_j) − R(q − h e_j)) Rᵀ / 2h is the cross-product matrix of column j.
        #[test]
        fn angular_jacobian_is_the_derivative_of_the_rotation(
            (specs, tree, q) in chain_strategy(),
            link_pick in 0usize..CAP,
        ) {
            let link = link_pick % specs.len();
            let kin = fk(&tree, &q);
            let rotation = |kin: &TreeKinematics<CAP>| {
                link_pose(kin, link).rotation.to_rotation_matrix().into_inner()
            };
            let r = rotation(&kin);
            let jw = angular_jacobian(&kin, link);
            let h = 1e-6;
            for j in 0..specs.len() {
                let dr = (rotation(&fk(&tree, &with(&q, j, h)))
                    - rotation(&fk(&tree, &with(&q, j, -h))))
                    / (2.0 * h);
                let w = dr * r.transpose();
                let fd = Vector3::new(w.m32, w.m13, w.m21);
                for k in 0..3 {
                    prop_assert!(close(jw[(k, j)], fd[k], 1e-6, 1e-8));
                }
            }
        }

        /// The mass matrix is symmetric, positive definite in its n×n block, zero outside it,
        /// and equal to Σ_k J_kᵀ m_k J_k + J_ω,kᵀ I_k J_ω,k formed from the Jacobians; the
        /// O(n) composite inertia about each joint axis is its diagonal (1e-9 relative).
        #[test]
        fn mass_matrix_is_symmetric_positive_definite_and_the_jacobian_sum(
            (specs, tree, q) in chain_strategy(),
        ) {
            let kin = fk(&tree, &q);
            let m = kin.mass_matrix().unwrap();
            let slow = slow_mass_matrix(&specs, &kin);
            let scale = slow.amax();
            let n = specs.len();
            for i in 0..CAP {
                for j in 0..CAP {
                    prop_assert_eq!(m[(i, j)], m[(j, i)]);
                    if i >= n || j >= n {
                        prop_assert_eq!(m[(i, j)], 0.0);
                    }
                    prop_assert!(close(m[(i, j)], slow[(i, j)], 0.0, 1e-12 * scale),
                        "M[{i},{j}] = {} vs {}", m[(i, j)], slow[(i, j)]);
                }
            }
            let mut padded = m;
            for i in n..CAP {
                padded[(i, i)] = 1.0;
            }
            prop_assert!(padded.cholesky().is_some(), "not positive definite: {m}");
            let axis = kin.composite().unwrap().axis_inertia();
            for i in 0..CAP {
                if i >= n {
                    prop_assert_eq!(axis[i], 0.0);
                    continue;
                }
                prop_assert!(axis[i] > 0.0);
                prop_assert!(close(axis[i], m[(i, i)], 1e-9, 0.0), "{} vs {}", axis[i], m[(i, i)]);
                prop_assert!(close(axis[i], slow[(i, i)], 1e-9, 0.0), "{} vs {}", axis[i], slow[(i, i)]);
            }
        }

        /// The gravity torques are the derivative of the potential energy V = −Σ m_k g·c_k
        /// (central differences), for a random gravity vector.
        #[test]
        fn gravity_torques_are_the_gradient_of_the_potential(
            (specs, tree, q) in chain_strategy(),
            g in prop::array::uniform3(-10.0..10.0f64),
        ) {
            let g = Vector3::from(g);
            let tau = fk(&tree, &q).gravity(&g).unwrap();
            let h = 1e-6;
            let scale: f64 = specs.iter().map(|s| s.mass_kg).sum::<f64>() * g.norm();
            for j in 0..CAP {
                if j >= specs.len() {
                    prop_assert_eq!(tau[j], 0.0);
                    continue;
                }
                let fd = (potential(&specs, &tree, &with(&q, j, h), &g)
                    - potential(&specs, &tree, &with(&q, j, -h), &g))
                    / (2.0 * h);
                prop_assert!(close(tau[j], fd, 1e-6, 1e-8 * scale), "τ[{j}] = {} vs {fd}", tau[j]);
            }
        }

        /// The arrival tick is, joint by joint, the single-joint solve on the composite
        /// inertia: the gains are `solve_arrival_gains` (or its fallback) for m_i, clamped to
        /// the limit of m_i, and the torque is drive + parent feed-forward + gravity, the
        /// feed-forward m_i (a_i·s_i) with a_i = Σ_{j<i} (τ_j/m_j) s_j of the drives.
        #[test]
        fn arrival_tick_solves_each_joint_on_its_composite_inertia(
            (specs, tree, q) in chain_strategy(),
            qd in prop::array::uniform6(-3.0..3.0f64),
            poses in prop::array::uniform6(-PI..PI),
            times in prop::array::uniform6(-0.1..2.0f64),
        ) {
            let arrival = TreeArrival::new(ArrivalSettings::default(), Coupling::default()).unwrap();
            let config = arrival.settings();
            let targets = core::array::from_fn(|i| JointTarget {
                pose_rad: poses[i],
                time_to_go_s: times[i],
            });
            let g = Vector3::new(0.0, -9.81, 0.0);
            let command = arrival.tick(&tree, &Isometry3::identity(), &q, &qd, &targets, &g).unwrap();
            let kin = fk(&tree, &q);
            let composite = kin.composite().unwrap().axis_inertia();
            let gravity = kin.gravity(&g).unwrap();
            prop_assert_eq!(command.joints().len(), specs.len());
            let mut drives = Vec::new();
            let mut inertias = Vec::new();
            for (i, j) in command.joints().iter().enumerate() {
                let m = composite[i];
                prop_assert_eq!(j.inertia_kgm2, m);
                let limit = GainLimit::new(m, config.period_s, config.integrator,
                    config.stability_margin).unwrap();
                prop_assert!(j.gains.damping_nms_per_rad <= limit.max_damping_nms_per_rad);
                let expected = if times[i] <= 0.0 {
                    prop_assert_eq!(j.status, JointStatus::Holding);
                    prop_assert_eq!(j.setpoint_rad, poses[i]);
                    None
                } else {
                    let problem = ArrivalProblem {
                        inertia_kgm2: m,
                        position_rad: q[i],
                        velocity_rad_s: qd[i],
                        setpoint_rad: j.setpoint_rad,
                        arrival_rad: poses[i],
                        time_to_go_s: times[i],
                    };
                    prop_assert!((j.setpoint_rad - poses[i]).abs() - config.pose_tolerance_rad
                        < 1e-12);
                    match solve_arrival_gains(&problem) {
                        Ok(g) => Some(g.clamp_to(&limit).gains),
                        Err(_) => closest_arrival_gains(&problem, &limit),
                    }
                };
                if let Some(gains) = expected {
                    prop_assert_eq!(j.gains, gains);
                }
                let drive = j.gains.stiffness_nm_per_rad * (j.setpoint_rad - q[i])
                    - j.gains.damping_nms_per_rad * qd[i];
                prop_assert_eq!(j.drive_nm, drive);
                prop_assert_eq!(j.gravity_nm, gravity[i]);
                prop_assert_eq!(j.torque_nm, drive + j.parent_feedforward_nm + gravity[i]);
                drives.push(drive);
                inertias.push(m);
            }
            let ff = parent_feedforward_by_definition(&kin, &inertias, &drives);
            for (i, j) in command.joints().iter().enumerate() {
                prop_assert_eq!(j.parent_feedforward_nm, ff[i]);
            }
            let torques = command.torques();
            prop_assert!(torques.iter().skip(specs.len()).all(|&t| t == 0.0));
        }
    }

    /// q̇ᵀ M(q) q̇ at `q`.
    fn twice_kinetic_energy(tree: &Tree<CAP>, q: &[f64; CAP], qd: &SVector<f64, CAP>) -> f64 {
        let m = fk(tree, q).mass_matrix().unwrap();
        qd.dot(&(m * qd))
    }

    /// The velocity terms of the Lagrangian form, c = Ṁq̇ − ½ ∂(q̇ᵀMq̇)/∂q, by central
    /// differences of the mass matrix (Ṁ = dM(q + t q̇)/dt at t = 0).
    fn lagrangian_velocity_torques(
        tree: &Tree<CAP>,
        q: &[f64; CAP],
        qd: &[f64; CAP],
        h: f64,
    ) -> SVector<f64, CAP> {
        let v = SVector::from(*qd);
        let along = |sign: f64| -> [f64; CAP] { core::array::from_fn(|j| q[j] + sign * h * qd[j]) };
        let m_plus = fk(tree, &along(1.0)).mass_matrix().unwrap();
        let m_minus = fk(tree, &along(-1.0)).mass_matrix().unwrap();
        let mut c = (m_plus - m_minus) / (2.0 * h) * v;
        for j in 0..tree.joint_count() {
            let de = (twice_kinetic_energy(tree, &with(q, j, h), &v)
                - twice_kinetic_energy(tree, &with(q, j, -h), &v))
                / (2.0 * h);
            c[j] -= 0.5 * de;
        }
        c
    }

    /// A length scale of a chain at a configuration: the farthest centre of mass from the root
    /// joint, plus 1 m.
    fn reach(specs: &[LinkSpec], kin: &TreeKinematics<CAP>) -> f64 {
        let d0 = kin.joint_position(0).unwrap();
        specs
            .iter()
            .enumerate()
            .map(|(k, spec)| (link_com(kin, spec, k) - d0).norm())
            .fold(1.0, f64::max)
            + 1.0
    }

    proptest! {
        /// At rest and without gravity, inverse dynamics is the mass matrix times q̈.
        #[test]
        fn inverse_dynamics_at_rest_without_gravity_is_m_times_qdd(
            (specs, tree, q) in chain_strategy(),
            qdd in prop::array::uniform6(-20.0..20.0f64),
        ) {
            let kin = fk(&tree, &q);
            let tau = kin.inverse_dynamics(&[0.0; CAP], &qdd, &Vector3::zeros()).unwrap();
            let m = kin.mass_matrix().unwrap();
            let mut qdd_in_chain = SVector::<f64, CAP>::from(qdd);
            for i in specs.len()..CAP {
                qdd_in_chain[i] = 0.0;
            }
            let expected = m * qdd_in_chain;
            let scale = m.amax() * 20.0;
            for i in 0..CAP {
                if i >= specs.len() {
                    prop_assert_eq!(tau[i], 0.0);
                    continue;
                }
                prop_assert!(close(tau[i], expected[i], 0.0, 1e-12 * scale),
                    "τ[{i}] = {} vs M q̈ = {}", tau[i], expected[i]);
            }
        }

        /// Held still, inverse dynamics is the gravity holding torque.
        #[test]
        fn inverse_dynamics_held_still_is_the_gravity_torque(
            (specs, tree, q) in chain_strategy(),
            g in prop::array::uniform3(-10.0..10.0f64),
        ) {
            let g = Vector3::from(g);
            let kin = fk(&tree, &q);
            let tau = kin.inverse_dynamics(&[0.0; CAP], &[0.0; CAP], &g).unwrap();
            let expected = kin.gravity(&g).unwrap();
            let mass: f64 = specs.iter().map(|s| s.mass_kg).sum();
            let scale = mass * g.norm() * reach(&specs, &kin);
            for i in 0..CAP {
                prop_assert!(close(tau[i], expected[i], 0.0, 1e-13 * scale),
                    "τ[{i}] = {} vs τ_g = {}", tau[i], expected[i]);
            }
        }

        /// The velocity terms τ(q, q̇, 0, 0) are the Lagrangian c = Ṁq̇ − ½ ∂(q̇ᵀMq̇)/∂q (central
        /// differences of the mass matrix), and the three parts add up:
        /// τ(q, q̇, q̈, g) = τ(q, 0, q̈, 0) + τ(q, q̇, 0, 0) + τ(q, 0, 0, g).
        #[test]
        fn inverse_dynamics_velocity_terms_are_the_lagrangian_ones(
            (specs, tree, q) in chain_strategy(),
            qd in prop::array::uniform6(-3.0..3.0f64),
            qdd in prop::array::uniform6(-20.0..20.0f64),
            g in prop::array::uniform3(-10.0..10.0f64),
        ) {
            let g = Vector3::from(g);
            let kin = fk(&tree, &q);
            let zero = [0.0; CAP];
            let c = kin.inverse_dynamics(&qd, &zero, &Vector3::zeros()).unwrap();
            let lagrange = lagrangian_velocity_torques(&tree, &q, &qd, 1e-5);
            let m = kin.mass_matrix().unwrap();
            let n = specs.len();
            let speed = qd.iter().take(n).fold(0.0f64, |a, v| a.max(v.abs()));
            // |c| ≲ |∂M/∂q| |q̇|², and |∂M/∂q| ≲ |M| / reach... take |M| |q̇|² as the scale.
            // The differences themselves carry M's rounding, a few ε|M| per entry, divided by
            // the step h and multiplied by q̇ (Ṁq̇ = (M(q + h q̇) − M(q − h q̇)) q̇ / 2h): that
            // term is linear in the speed, so at tiny speeds it exceeds the quadratic one
            // (a single link at 1.1e-5 rad/s, whose exact c is 0: 6.3e-17 N·m of rounding).
            let rounding = 16.0 * f64::EPSILON * m.amax() * speed * CAP as f64 / 1e-5;
            let scale = m.amax() * speed * speed * CAP as f64;
            for i in 0..CAP {
                if i >= n {
                    prop_assert_eq!(c[i], 0.0);
                    continue;
                }
                prop_assert!(close(c[i], lagrange[i], 1e-6, 1e-7 * scale + rounding),
                    "c[{i}] = {} vs Lagrangian {}", c[i], lagrange[i]);
            }
            let all = kin.inverse_dynamics(&qd, &qdd, &g).unwrap();
            let parts = kin.inverse_dynamics(&zero, &qdd, &Vector3::zeros()).unwrap()
                + c
                + kin.inverse_dynamics(&zero, &zero, &g).unwrap();
            let mass: f64 = specs.iter().map(|s| s.mass_kg).sum();
            let total = m.amax() * (20.0 + speed * speed)
                + mass * g.norm() * reach(&specs, &kin);
            for i in 0..CAP {
                prop_assert!(close(all[i], parts[i], 0.0, 1e-12 * total),
                    "τ[{i}] = {} vs the sum of its parts {}", all[i], parts[i]);
            }
        }

        /// With `Coupling::InverseDynamics`, the gains, setpoints, drives and gravity are those
        /// of the default tick bit for bit, the torque is the inverse dynamics of q̈_i =
        /// drive_i/m_i bit for bit, the coupling field is the rest, and the torque asks of the
        /// model exactly those accelerations: M q̈ = τ − c − τ_g.
        #[test]
        fn inverse_dynamics_tick_asks_each_joint_for_drive_over_m(
            (specs, tree, q) in chain_strategy(),
            qd in prop::array::uniform6(-3.0..3.0f64),
            poses in prop::array::uniform6(-PI..PI),
            times in prop::array::uniform6(-0.1..2.0f64),
        ) {
            let plain = TreeArrival::new(ArrivalSettings::default(), Coupling::default()).unwrap();
            let exact =
                TreeArrival::new(ArrivalSettings::default(), Coupling::InverseDynamics).unwrap();
            let targets = core::array::from_fn(|i| JointTarget {
                pose_rad: poses[i],
                time_to_go_s: times[i],
            });
            let g = Vector3::new(0.0, -9.81, 0.0);
            let base = Isometry3::identity();
            let a = plain.tick(&tree, &base, &q, &qd, &targets, &g).unwrap();
            let b = exact.tick(&tree, &base, &q, &qd, &targets, &g).unwrap();
            let kin = fk(&tree, &q);
            let mut desired = [0.0; CAP];
            prop_assert_eq!(b.joints().len(), specs.len());
            for (i, (x, y)) in a.joints().iter().zip(b.joints()).enumerate() {
                prop_assert_eq!(x.inertia_kgm2, y.inertia_kgm2);
                prop_assert_eq!(x.gains, y.gains);
                prop_assert_eq!(x.status, y.status);
                prop_assert_eq!(x.setpoint_rad, y.setpoint_rad);
                prop_assert_eq!(x.drive_nm, y.drive_nm);
                prop_assert_eq!(x.gravity_nm, y.gravity_nm);
                desired[i] = y.drive_nm / y.inertia_kgm2;
            }
            let tau = kin.inverse_dynamics(&qd, &desired, &g).unwrap();
            let bias = kin.inverse_dynamics(&qd, &[0.0; CAP], &g).unwrap();
            let m = kin.mass_matrix().unwrap();
            let asked = m * SVector::from(desired);
            let scale = tau.amax().max(bias.amax()).max(1.0);
            for (i, y) in b.joints().iter().enumerate() {
                prop_assert_eq!(y.torque_nm, tau[i]);
                prop_assert_eq!(y.parent_feedforward_nm, tau[i] - y.drive_nm - y.gravity_nm);
                prop_assert!(close(y.drive_nm + y.parent_feedforward_nm + y.gravity_nm,
                    y.torque_nm, 0.0, 1e-12 * scale));
                prop_assert!(close(asked[i], tau[i] - bias[i], 0.0, 1e-10 * scale),
                    "M q̈[{i}] = {} vs τ − c − τ_g = {}", asked[i], tau[i] - bias[i]);
            }
            prop_assert_eq!(&b.torques()[..], tau.as_slice());
        }
    }

    /// A rotor of inertia 0.02 kg·m² about z through its centre (no gravity torque) with
    /// damping `d` and dry friction `f`, as Rapier integrates them: the damping implicit
    /// (`(m + d·dt) v⁺ = m v + dt·τ`) and the friction a bound on the impulse that stops the
    /// joint (`|impulse| ≤ f·dt`). Four keyframes 0.5 s apart, then 1 s holding the last;
    /// returns each keyframe's error and the error at the end of the hold.
    fn rotor_with_losses(d: f64, f: f64, compensate: bool) -> Vec<f64> {
        let m = 0.02;
        let tree = serial_tree::<1>(&[LinkSpec {
            origin_xyz_m: [0.0; 3],
            origin_rpy_rad: [0.0; 3],
            axis: [0.0, 0.0, 1.0],
            mass_kg: 1.0,
            com_m: [0.0; 3],
            inertia_kgm2: [0.01, 0.0, 0.0, 0.01, 0.0, m],
        }])
        .unwrap();
        let dt = 0.005;
        let arrival = TreeArrival::new(
            ArrivalSettings {
                period_s: dt,
                ..ArrivalSettings::default()
            },
            Coupling::InverseDynamics,
        )
        .unwrap();
        let losses = [JointLosses {
            damping: d,
            friction: f,
        }];
        let g = Vector3::new(0.0, 0.0, -9.81);
        let (mut q, mut v) = (0.0, 0.0);
        let mut errors = Vec::new();
        // Four keyframes, then 1 s holding the last (time to go ≤ 0: the critically damped hold).
        for (k, pose) in [1.0, -0.5, 0.2, 1.4, 1.4].into_iter().enumerate() {
            let deadline = if k < 4 { 100 * (k + 1) } else { 600 };
            for step in 100 * k..deadline {
                let target = JointTarget {
                    pose_rad: pose,
                    time_to_go_s: if k < 4 {
                        (deadline - step) as f64 * dt
                    } else {
                        0.0
                    },
                };
                let mut command = arrival
                    .tick(&tree, &Isometry3::identity(), &[q], &[v], &[target], &g)
                    .unwrap();
                if compensate {
                    command.add_losses(&losses, &[v], dt).unwrap();
                }
                let tau = command.torques()[0];
                // Friction first: it stops the joint if it can, else takes f·dt off its motion.
                let free = (m * v + dt * tau) / (m + d * dt);
                let stop = free * (m + d * dt);
                let v_next = if stop.abs() <= f * dt {
                    0.0
                } else {
                    (stop - f * dt * stop.signum()) / (m + d * dt)
                };
                v = v_next;
                q += v * dt;
            }
            errors.push((q - pose).abs());
        }
        errors
    }

    #[test]
    fn losses_compensated_keep_the_arrival_and_none_change_nothing() {
        // Damping of d·dt = m / 2 (a third off each step's change of velocity) and friction of
        // 1 N·m: uncompensated, the keyframes are missed by more than the pose tours' 1e-2 rad.
        let plain = rotor_with_losses(0.0, 0.0, false);
        let lossy = rotor_with_losses(2.0, 1.0, false);
        let compensated = rotor_with_losses(2.0, 1.0, true);
        let worst = |e: &[f64]| e.iter().take(4).fold(0.0f64, |a, b| a.max(*b));
        assert!(worst(&plain) < 2e-3, "{plain:?}");
        assert!(worst(&lossy) > 1e-2, "{lossy:?}");
        // Compensated, the rotor moves as the lossless one through the keyframes: the damping is
        // cancelled at the step's end velocity, and while moving the friction by its full
        // value.
        for (c, p) in compensated.iter().zip(&plain).take(4) {
            assert!((c - p).abs() < 1e-9, "{compensated:?} vs {plain:?}");
        }
        // Holding, the joint comes to rest where the hold's drive (its setpoint re-aimed past
        // the pose), with the friction compensated in proportion within the speed band, no
        // longer overcomes the friction: 1.2e-3 rad off (uncompensated 3.2e-3, lossless 1.3e-4).
        assert!(plain[4] < 1e-3, "{plain:?}");
        assert!(compensated[4] < 2e-3, "{compensated:?}");
        println!(
            "hold: plain {:.1e}, lossy {:.1e}, compensated {:.1e} rad",
            plain[4], lossy[4], compensated[4]
        );
        // No losses: the command is left as it was, bit for bit.
        assert_eq!(rotor_with_losses(0.0, 0.0, true), plain);
    }

    #[test]
    fn losses_are_damping_on_the_driven_velocity_and_banded_friction() {
        let tree = serial_tree::<2>(&[
            box_link(
                [0.0; 3],
                [0.0, 0.0, 1.0],
                2.0,
                [0.3, 0.0, 0.0],
                [0.6, 0.1, 0.1],
            ),
            box_link(
                [0.6, 0.0, 0.0],
                [0.0, 0.0, 1.0],
                1.0,
                [0.2, 0.0, 0.0],
                [0.4, 0.1, 0.1],
            ),
        ])
        .unwrap();
        let arrival =
            TreeArrival::new(ArrivalSettings::default(), Coupling::InverseDynamics).unwrap();
        let target = JointTarget {
            pose_rad: 0.5,
            time_to_go_s: 0.4,
        };
        let g = Vector3::new(0.0, 0.0, -9.81);
        let q = [0.1, -0.2];
        let qd = [0.3, 0.001];
        let base = arrival
            .tick(&tree, &Isometry3::identity(), &q, &qd, &[target; 2], &g)
            .unwrap();
        let losses = [
            JointLosses {
                damping: 0.5,
                friction: 2.0,
            },
            JointLosses {
                damping: 0.0,
                friction: 0.0,
            },
        ];
        let mut cmd = base;
        cmd.add_losses(&losses, &qd, 0.005).unwrap();
        let j = base.joints()[0];
        let v = qd[0] + j.drive_nm / j.inertia_kgm2 * 0.005;
        let expected = 0.5 * v + 2.0 * (v / FRICTION_SPEED_BAND).clamp(-1.0, 1.0);
        assert_eq!(cmd.joints()[0].losses_nm, expected);
        assert_eq!(cmd.joints()[0].torque_nm, j.torque_nm + expected);
        // The lossless joint is untouched.
        assert_eq!(cmd.joints()[1], base.joints()[1]);
        // Within the speed band the friction is compensated in proportion: none at v = 0, half
        // at half the band, all of it beyond.
        let slow = [JointLosses {
            damping: 0.0,
            friction: 2.0,
        }; 2];
        let driven = base.joints()[0].drive_nm / base.joints()[0].inertia_kgm2 * 0.005;
        for (v, share) in [
            (0.0, 0.0),
            (0.5, 0.5),
            (-0.25, -0.25),
            (3.0, 1.0),
            (-3.0, -1.0),
        ] {
            let mut cmd = base;
            let velocities = [v * FRICTION_SPEED_BAND - driven, 0.0];
            cmd.add_losses(&slow, &velocities, 0.005).unwrap();
            let got = cmd.joints()[0].losses_nm;
            assert!((got - 2.0 * share).abs() < 1e-9, "v = {v} band: {got}");
        }
        // A joint with losses needs a finite velocity; one without is not read.
        let mut cmd = base;
        let e = cmd
            .add_losses(&losses, &[f64::NAN, 0.0], 0.005)
            .unwrap_err();
        assert_eq!(e, ModelError::NonFinite(Input::Velocity { joint: 0 }));
        assert_eq!(cmd, base);
        cmd.add_losses(&losses, &[qd[0], f64::NAN], 0.005).unwrap();
        // Bad friction too.
        for bad in [-0.1, f64::INFINITY] {
            let mut cmd = base;
            let l = [JointLosses {
                damping: 0.0,
                friction: bad,
            }; 2];
            assert_eq!(
                cmd.add_losses(&l, &qd, 0.005),
                Err(ModelError::BadLosses { joint: 0 })
            );
            assert_eq!(cmd, base);
        }
        // Bad losses or periods are refused, the command left as it was.
        for (bad, period) in [
            (-1.0, 0.005),
            (f64::NAN, 0.005),
            (0.5, 0.0),
            (0.5, f64::NAN),
        ] {
            let mut cmd = base;
            let l = [JointLosses {
                damping: bad,
                friction: 0.0,
            }; 2];
            let e = cmd.add_losses(&l, &qd, period).unwrap_err();
            assert!(
                matches!(
                    e,
                    ModelError::BadLosses { joint: 0 } | ModelError::Config(ConfigField::Period)
                ),
                "{e:?}"
            );
            assert_eq!(cmd, base);
        }
    }

    /// The errors |q_i − pose_i| of every joint at every target instant, for a 3-link planar arm
    /// (vertical plane, gravity −y) simulated with the model's own dynamics
    /// q̈ = M⁻¹(τ − c − τ_g), semi-implicit Euler at 1 ms, the arrival tick at 1 ms.
    fn simulated_arrival_errors(coupling: Coupling, stability_margin: f64) -> Vec<[f64; 3]> {
        let z = [0.0, 0.0, 1.0];
        let tree = serial_tree::<3>(&[
            box_link([0.0; 3], z, 3.0, [0.25, 0.0, 0.0], [0.5, 0.08, 0.08]),
            box_link([0.5, 0.0, 0.0], z, 2.0, [0.2, 0.0, 0.0], [0.4, 0.06, 0.06]),
            box_link([0.4, 0.0, 0.0], z, 1.0, [0.15, 0.0, 0.0], [0.3, 0.05, 0.05]),
        ])
        .unwrap();
        let base = Isometry3::identity();
        let dt = 0.001;
        let arrival = TreeArrival::new(
            ArrivalSettings {
                period_s: dt,
                stability_margin,
                ..ArrivalSettings::default()
            },
            coupling,
        )
        .unwrap();
        let g = Vector3::new(0.0, -9.81, 0.0);
        // Keyframes 0.5 s (500 steps) apart, moves of up to 3.5 rad.
        let poses = [
            [1.2, -1.5, 2.0],
            [-0.6, 1.0, -1.2],
            [0.4, 0.2, 1.5],
            [1.5, -0.8, -0.5],
            [0.0, 0.0, 0.0],
        ];
        let steps_per_target = 500;
        let mut q = [0.0; 3];
        let mut qd = [0.0; 3];
        let mut errors = Vec::new();
        for (k, pose) in poses.iter().enumerate() {
            let deadline = steps_per_target * (k + 1);
            for step in steps_per_target * k..deadline {
                let time_to_go_s = (deadline - step) as f64 * dt;
                let targets = pose.map(|pose_rad| JointTarget {
                    pose_rad,
                    time_to_go_s,
                });
                // The model's own dynamics: q̈ = M⁻¹(τ − c − τ_g). A tick or a plant that fails
                // has diverged: every keyframe from here on is missed.
                let step = || -> Option<SVector<f64, 3>> {
                    let command = arrival.tick(&tree, &base, &q, &qd, &targets, &g).ok()?;
                    let kin = tree.kinematics(&base, &q).ok()?;
                    let bias = kin.inverse_dynamics(&qd, &[0.0; 3], &g).ok()?;
                    let m = kin.mass_matrix().ok()?;
                    m.cholesky()
                        .map(|m| m.solve(&(SVector::from(command.torques()) - bias)))
                };
                let Some(qdd) = step() else {
                    errors.resize(poses.len(), [f64::INFINITY; 3]);
                    return errors;
                };
                for j in 0..3 {
                    qd[j] += qdd[j] * dt;
                    q[j] += qd[j] * dt;
                }
            }
            errors.push(core::array::from_fn(|j| (q[j] - pose[j]).abs()));
        }
        errors
    }

    /// With the inverse-dynamics coupling every joint of a simulated 3-link arm passes through
    /// every keyframe within 1e-3 rad (worst 1.3e-4 rad, the leaf), at the default stability
    /// margin and at 0.3. With the slides' parent feed-forward the leaf, whipped by its parents,
    /// misses by far more: at the default margin the arm diverges before the third keyframe (the
    /// gains clamped for M_ii are beyond the period's limit for the coupled arm, whose
    /// effective inertia 1/(M⁻¹)_ii is smaller); at 0.3 it stays finite and misses by up to
    /// 0.7 rad.
    #[test]
    fn inverse_dynamics_coupling_arrives_on_every_keyframe() {
        let worst =
            |errors: &[[f64; 3]], joint: usize| errors.iter().map(|e| e[joint]).fold(0.0, f64::max);
        for margin in [ArrivalSettings::default().stability_margin, 0.3] {
            let exact = simulated_arrival_errors(Coupling::InverseDynamics, margin);
            let slides = simulated_arrival_errors(Coupling::ParentFeedforward, margin);
            println!("margin {margin}: inverse dynamics {exact:?}");
            println!("margin {margin}: parent feed-forward {slides:?}");
            assert!(exact.iter().flatten().all(|&e| e < 1e-3), "{exact:?}");
            assert!(
                worst(&slides, 2) > 100.0 * worst(&exact, 2),
                "{slides:?} vs {exact:?}"
            );
        }
    }

    /// The test arm of `model.rs`: 1 m, 0.1 m square section, 2 kg, 9.8 m/s².
    const ARM: ArmModel = ArmModel {
        length_m: 1.0,
        thickness_m: 0.1,
        mass_kg: 2.0,
        gravity_m_s2: 9.8,
    };

    /// `ARM` as a one-link chain: hinged about +z at the origin, pointing along +x at q = 0.
    fn arm_tree() -> Tree<1> {
        let l = ARM.length_m;
        let a = ARM.thickness_m;
        serial_tree(&[box_link(
            [0.0; 3],
            [0.0, 0.0, 1.0],
            ARM.mass_kg,
            [l / 2.0, 0.0, 0.0],
            [l, a, a],
        )])
        .unwrap()
    }

    #[test]
    fn one_link_chain_is_the_arm_model() {
        let tree = arm_tree();
        let g = Vector3::new(0.0, -ARM.gravity_m_s2, 0.0);
        for k in -8..=8 {
            let theta = f64::from(k) * PI / 8.0;
            let kin = fk(&tree, &[theta]);
            let composite = kin.composite().unwrap();
            let inertia = ARM.inertia_about_hinge_kgm2();
            // M(L²/3 + a²/12) = 2(1/3 + 0.01/12).
            assert!(close(inertia, 2.0 * (1.0 / 3.0 + 0.01 / 12.0), 1e-15, 0.0));
            assert!(close(composite.axis_inertia()[0], inertia, 1e-14, 0.0));
            assert!(close(
                kin.mass_matrix().unwrap()[(0, 0)],
                inertia,
                1e-14,
                0.0
            ));
            // Holding torque = minus the torque gravity exerts.
            let tau = kin.gravity(&g).unwrap()[0];
            assert!(
                close(tau, -ARM.gravity_torque_nm(theta), 1e-14, 1e-14),
                "{tau} at {theta}"
            );
        }
    }

    /// One joint, one tick: the arrival tick gives the torque of the one-joint `ArrivalServo`
    /// configured with the arm's inertia and fed the arm's gravity torque.
    #[test]
    fn one_link_arrival_tick_is_the_arrival_servo() {
        let tree = arm_tree();
        let config = ArrivalSettings::default();
        let arrival = TreeArrival::new(config, Coupling::default()).unwrap();
        let mut servo = ArrivalServo::new(ServoConfig {
            inertia_kgm2: ARM.inertia_about_hinge_kgm2(),
            period_s: config.period_s,
            torque_limit_nm: 1e9,
            integrator: config.integrator,
            stability_margin: config.stability_margin,
            hold_natural_freq_rad_s: config.hold_natural_freq_rad_s,
        })
        .unwrap();
        let g = Vector3::new(0.0, -ARM.gravity_m_s2, 0.0);
        for (theta, omega, pose, t) in [
            (0.0, 0.0, 1.0, 1.0),
            (0.3, -2.0, 1.0, 0.5),
            (1.2, 0.5, -0.4, 0.02),
            (-0.5, 4.0, 0.2, 0.1),
        ] {
            servo
                .set_pose_target(pose, config.pose_tolerance_rad, t)
                .unwrap();
            let state = JointState {
                position_rad: theta,
                velocity_rad_s: omega,
            };
            let expected = servo.tick(0.0, state, -ARM.gravity_torque_nm(theta));
            let command = arrival
                .tick(
                    &tree,
                    &Isometry3::identity(),
                    &[theta],
                    &[omega],
                    &[JointTarget {
                        pose_rad: pose,
                        time_to_go_s: t,
                    }],
                    &g,
                )
                .unwrap();
            let j = command.joints()[0];
            assert_eq!(j.parent_feedforward_nm, 0.0);
            assert!(
                close(j.torque_nm, expected.torque_nm, 1e-12, 1e-12),
                "{} vs {}",
                j.torque_nm,
                expected.torque_nm
            );
            assert!(close(
                j.gains.damping_nms_per_rad,
                expected.damping_nms_per_rad,
                1e-12,
                0.0
            ));
        }
    }

    /// A planar two-link arm about +z: the joint and centre positions of the textbook formulas.
    #[test]
    fn planar_two_link_forward_kinematics() {
        let (l1, l2) = (0.7, 0.4);
        let specs = [
            box_link(
                [0.0; 3],
                [0.0, 0.0, 1.0],
                1.0,
                [l1 / 2.0, 0.0, 0.0],
                [l1, 0.1, 0.1],
            ),
            box_link(
                [l1, 0.0, 0.0],
                [0.0, 0.0, 2.0],
                1.0,
                [l2 / 2.0, 0.0, 0.0],
                [l2, 0.1, 0.1],
            ),
        ];
        let tree = serial_tree::<2>(&specs).unwrap();
        let (q0, q1) = (0.4, -1.1);
        let kin = fk(&tree, &[q0, q1]);
        let d1 = Vector3::new(l1 * q0.cos(), l1 * q0.sin(), 0.0);
        let c2 = d1 + Vector3::new((q0 + q1).cos(), (q0 + q1).sin(), 0.0) * (l2 / 2.0);
        assert!((kin.joint_position(1).unwrap() - d1).norm() < 1e-15);
        assert!((link_com(&kin, &specs[1], 1) - c2).norm() < 1e-15);
        assert!((kin.joint_axis(1).unwrap() - Vector3::z()).norm() < 1e-15);
        assert_eq!(tree.joint_axis(1), Some(Vector3::z()));
        let pose = link_pose(&kin, 1);
        assert!((pose.rotation.angle() - (q0 + q1).abs()).abs() < 1e-15);
        assert!((pose.translation.vector - d1).norm() < 1e-15);
    }

    /// URDF's rpy: fixed-axis roll, pitch, yaw. A yaw of π/2 turns the joint frame's x onto the
    /// parent's y; a roll of π/2 turns a z axis onto −y.
    #[test]
    fn origin_rpy_is_urdf_fixed_axis_roll_pitch_yaw() {
        let mut spec = box_link([0.0; 3], [0.0, 0.0, 1.0], 1.0, [1.0, 0.0, 0.0], [1.0; 3]);
        spec.origin_rpy_rad = [0.0, 0.0, FRAC_PI_2];
        let kin = fk(&serial_tree::<1>(&[spec]).unwrap(), &[0.0]);
        assert!((link_com(&kin, &spec, 0) - Vector3::y()).norm() < 1e-15);
        spec.origin_rpy_rad = [FRAC_PI_2, 0.0, 0.0];
        let kin = fk(&serial_tree::<1>(&[spec]).unwrap(), &[0.0]);
        assert!((kin.joint_axis(0).unwrap() + Vector3::y()).norm() < 1e-15);
        // Roll then pitch then yaw about the fixed axes: R = Rz(y) Ry(p) Rx(r).
        spec.origin_rpy_rad = [0.3, -0.2, 1.1];
        let kin = fk(&serial_tree::<1>(&[spec]).unwrap(), &[0.0]);
        let r = Rotation3::from_axis_angle(&Vector3::z_axis(), 1.1)
            * Rotation3::from_axis_angle(&Vector3::y_axis(), -0.2)
            * Rotation3::from_axis_angle(&Vector3::x_axis(), 0.3);
        let got = link_pose(&kin, 0)
            .rotation
            .to_rotation_matrix()
            .into_inner();
        assert!((got - r.into_inner()).amax() < 1e-15);
    }

    /// Where the child's centre of mass lies on its own axis and the axes are parallel, the
    /// slide's feed-forward is the exact coupling M_10·q̈_0 with q̈_0 = τ_0/m_0; with
    /// perpendicular axes it is zero. The drives are the arrival tick's own.
    #[test]
    fn parent_feedforward_is_exact_for_a_rotor_on_a_parallel_axis() {
        let rotor = |axis| box_link([0.5, 0.0, 0.0], axis, 3.0, [0.0; 3], [0.2, 0.3, 0.4]);
        let arm = box_link(
            [0.0; 3],
            [0.0, 0.0, 1.0],
            2.0,
            [0.25, 0.0, 0.0],
            [0.5, 0.1, 0.1],
        );
        let arrival = TreeArrival::new(ArrivalSettings::default(), Coupling::default()).unwrap();
        let q = [0.3, 0.9];
        let targets = [
            JointTarget {
                pose_rad: 1.0,
                time_to_go_s: 0.5,
            },
            JointTarget {
                pose_rad: 0.2,
                time_to_go_s: 0.5,
            },
        ];
        let tick = |tree: &Tree<2>| {
            arrival
                .tick(
                    tree,
                    &Isometry3::identity(),
                    &q,
                    &[0.0; 2],
                    &targets,
                    &Vector3::zeros(),
                )
                .unwrap()
        };
        let tree = serial_tree::<2>(&[arm, rotor([0.0, 0.0, 1.0])]).unwrap();
        let command = tick(&tree);
        let m = fk(&tree, &q).mass_matrix().unwrap();
        let [j0, j1] = [command.joints()[0], command.joints()[1]];
        assert!(j0.drive_nm.abs() > 1.0, "{j0:?}");
        assert_eq!(j0.parent_feedforward_nm, 0.0);
        assert!(close(
            j1.parent_feedforward_nm,
            m[(1, 0)] * j0.drive_nm / j0.inertia_kgm2,
            1e-14,
            0.0
        ));
        let tree = serial_tree::<2>(&[arm, rotor([1.0, 0.0, 0.0])]).unwrap();
        assert!(tick(&tree).joints()[1].parent_feedforward_nm.abs() < 1e-15);
    }

    /// `serial_tree` refuses what `Tree::new` refuses, naming the joint (link i is joint i),
    /// and more links than its capacity.
    #[test]
    fn serial_tree_names_the_link() {
        let good = box_link(
            [0.1, 0.0, 0.0],
            [0.0, 1.0, 0.0],
            1.0,
            [0.05, 0.0, 0.0],
            [0.1; 3],
        );
        let at_1 = |bad: LinkSpec| serial_tree::<3>(&[good, bad]).unwrap_err();
        for bad in [
            LinkSpec {
                origin_xyz_m: [0.0, f64::NAN, 0.0],
                ..good
            },
            LinkSpec {
                axis: [0.0; 3],
                ..good
            },
            LinkSpec {
                mass_kg: -1.0,
                ..good
            },
            LinkSpec {
                inertia_kgm2: [1.0, 2.0, 0.0, 1.0, 0.0, 1.0],
                ..good
            },
        ] {
            let e = at_1(bad);
            let joint = match e {
                TreeError::NonFinite { joint, .. }
                | TreeError::NonPositiveMass { joint }
                | TreeError::InertiaNotPositiveDefinite { joint } => joint,
                TreeError::ZeroAxis { joint } | TreeError::NotARotation { joint } => Some(joint),
                _ => None,
            };
            assert_eq!(joint, Some(1), "{e:?}");
            assert_eq!(
                e,
                Tree::<3>::new(&TreeSpec {
                    base: BaseKind::Fixed,
                    base_body: Inertial::ZERO,
                    joints: &[good.tree_joint(0), bad.tree_joint(1)],
                })
                .unwrap_err()
            );
        }
        assert_eq!(
            serial_tree::<1>(&[good, good]).unwrap_err(),
            TreeError::CapacityExceeded {
                dofs: 2,
                capacity: 1
            }
        );
    }

    #[test]
    fn ticks_name_the_bad_input() {
        let link = box_link(
            [0.1, 0.0, 0.0],
            [0.0, 1.0, 0.0],
            1.0,
            [0.05, 0.0, 0.0],
            [0.1; 3],
        );
        let tree = serial_tree::<3>(&[link, link]).unwrap();
        let base = Isometry3::identity();
        let arrival = TreeArrival::new(ArrivalSettings::default(), Coupling::default()).unwrap();
        let t = JointTarget {
            pose_rad: 1.0,
            time_to_go_s: 1.0,
        };
        let g = Vector3::new(0.0, 0.0, -9.81);
        let tick = |q: [f64; 3], qd: [f64; 3], targets: [JointTarget; 3]| {
            arrival
                .tick(&tree, &base, &q, &qd, &targets, &g)
                .unwrap_err()
        };
        assert_eq!(
            tick([0.0, f64::NAN, 0.0], [0.0; 3], [t; 3]),
            ModelError::NonFinite(Input::Position { joint: 1 })
        );
        assert_eq!(
            tick([0.0; 3], [0.0, f64::NAN, 0.0], [t; 3]),
            ModelError::NonFinite(Input::Velocity { joint: 1 })
        );
        let bad_pose = JointTarget {
            pose_rad: f64::NAN,
            ..t
        };
        assert_eq!(
            tick([0.0; 3], [0.0; 3], [bad_pose, t, t]),
            ModelError::NonFinite(Input::TargetPose { joint: 0 })
        );
        let bad_time = JointTarget {
            time_to_go_s: f64::NEG_INFINITY,
            ..t
        };
        assert_eq!(
            tick([0.0; 3], [0.0; 3], [t, bad_time, t]),
            ModelError::NonFinite(Input::TimeToGo { joint: 1 })
        );
        assert_eq!(
            arrival
                .tick(
                    &tree,
                    &base,
                    &[0.0; 3],
                    &[0.0; 3],
                    &[t; 3],
                    &Vector3::new(f64::NAN, 0.0, 0.0)
                )
                .unwrap_err(),
            ModelError::NonFinite(Input::Gravity)
        );
        let nowhere = Isometry3::translation(f64::NAN, 0.0, 0.0);
        assert_eq!(
            arrival
                .tick(&tree, &nowhere, &[0.0; 3], &[0.0; 3], &[t; 3], &g)
                .unwrap_err(),
            ModelError::NonFinite(Input::BasePose)
        );
        // Past the tree's joints, nothing is read.
        assert!(
            arrival
                .tick(
                    &tree,
                    &base,
                    &[0.0, 0.0, f64::NAN],
                    &[0.0, 0.0, f64::NAN],
                    &[t, t, bad_pose],
                    &g
                )
                .is_ok()
        );
        // A floating base has no joint targets.
        let floating = Tree::<9>::new(&TreeSpec {
            base: BaseKind::Floating,
            base_body: Inertial {
                mass_kg: 1.0,
                com_m: [0.0; 3],
                inertia_kgm2: [0.1, 0.0, 0.0, 0.1, 0.0, 0.1],
            },
            joints: &[link.tree_joint(0)],
        })
        .unwrap();
        assert_eq!(
            arrival
                .tick(&floating, &base, &[0.0; 9], &[0.0; 9], &[t; 9], &g)
                .unwrap_err(),
            ModelError::FloatingBase
        );
    }

    /// Finite parameters whose products overflow give `OutOfRange`, never a NaN.
    #[test]
    fn overflowing_models_are_out_of_range() {
        let arrival =
            TreeArrival::new(ArrivalSettings::default(), Coupling::InverseDynamics).unwrap();
        let t = JointTarget {
            pose_rad: 1.0,
            time_to_go_s: 1.0,
        };
        let tick = |links: [LinkSpec; 2], q: [f64; 2], qd: [f64; 2]| {
            let tree = serial_tree::<2>(&links).unwrap();
            arrival
                .tick(
                    &tree,
                    &Isometry3::identity(),
                    &q,
                    &qd,
                    &[t; 2],
                    &Vector3::zeros(),
                )
                .unwrap_err()
        };
        let huge = box_link(
            [1e300, 0.0, 0.0],
            [0.0, 0.0, 1.0],
            1e300,
            [1e300, 0.0, 0.0],
            [1.0; 3],
        );
        assert_eq!(tick([huge; 2], [0.0; 2], [0.0; 2]), ModelError::OutOfRange);
        // A moderate chain at a speed whose square overflows.
        let link = box_link(
            [0.5, 0.0, 0.0],
            [0.0, 1.0, 1.0],
            1.0,
            [0.25, 0.0, 0.0],
            [0.5, 0.1, 0.1],
        );
        assert_eq!(
            tick([link; 2], [0.3, 0.2], [1e200, -1e200]),
            ModelError::OutOfRange
        );
        let far = box_link(
            [f64::MAX, 0.0, 0.0],
            [0.0, 0.0, 1.0],
            1.0,
            [0.0; 3],
            [1.0; 3],
        );
        assert_eq!(tick([far; 2], [0.0; 2], [0.0; 2]), ModelError::OutOfRange);
    }

    #[test]
    fn arrival_configs_are_checked() {
        let ok = ArrivalSettings::default();
        for (config, field) in [
            (
                ArrivalSettings {
                    period_s: 0.0,
                    ..ok
                },
                ConfigField::Period,
            ),
            (
                ArrivalSettings {
                    period_s: f64::NAN,
                    ..ok
                },
                ConfigField::Period,
            ),
            (
                ArrivalSettings {
                    stability_margin: 1.5,
                    ..ok
                },
                ConfigField::Margin,
            ),
            (
                ArrivalSettings {
                    stability_margin: 0.0,
                    ..ok
                },
                ConfigField::Margin,
            ),
            (
                ArrivalSettings {
                    hold_natural_freq_rad_s: -1.0,
                    ..ok
                },
                ConfigField::HoldFrequency,
            ),
            (
                ArrivalSettings {
                    pose_tolerance_rad: 0.0,
                    ..ok
                },
                ConfigField::PoseTolerance,
            ),
            (
                ArrivalSettings {
                    pose_tolerance_rad: f64::INFINITY,
                    ..ok
                },
                ConfigField::PoseTolerance,
            ),
        ] {
            assert_eq!(config.validate(), Err(field));
            assert_eq!(
                TreeArrival::new(config, Coupling::default()).unwrap_err(),
                ModelError::Config(field)
            );
        }
    }

    /// Near the deadline the gains hit the period's limit for the joint's composite inertia,
    /// and say so.
    #[test]
    fn gains_near_the_deadline_are_clamped_to_the_composite_limit() {
        let link = box_link(
            [0.3, 0.0, 0.0],
            [0.0, 0.0, 1.0],
            1.0,
            [0.15, 0.0, 0.0],
            [0.3, 0.05, 0.05],
        );
        let tree = serial_tree::<3>(&[link, link, link]).unwrap();
        let arrival = TreeArrival::new(ArrivalSettings::default(), Coupling::default()).unwrap();
        let target = JointTarget {
            pose_rad: 0.5,
            time_to_go_s: 0.006,
        };
        let command = arrival
            .tick(
                &tree,
                &Isometry3::identity(),
                &[0.0; 3],
                &[0.0; 3],
                &[target; 3],
                &Vector3::zeros(),
            )
            .unwrap();
        for j in command.joints() {
            assert_eq!(j.status, JointStatus::GainClamped);
            let c = ArrivalSettings::default();
            let limit =
                GainLimit::new(j.inertia_kgm2, c.period_s, c.integrator, c.stability_margin)
                    .unwrap();
            assert_eq!(j.gains.damping_nms_per_rad, limit.max_damping_nms_per_rad);
        }
        // The root carries the whole chain: the largest composite inertia, the largest gain.
        let joints = command.joints();
        assert!(joints[0].inertia_kgm2 > joints[1].inertia_kgm2);
        assert!(joints[1].inertia_kgm2 > joints[2].inertia_kgm2);
    }

    /// Special values the no-panic property always mixes in.
    const SPECIALS: [f64; 13] = [
        0.0,
        -0.0,
        1.0,
        -1.0,
        f64::NAN,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::MAX,
        f64::MIN,
        f64::MIN_POSITIVE,
        5e-324,
        1e300,
        -1e-300,
    ];

    /// One f64 from a selector and 64 random bits: any bits at all (3 in 8), a special value
    /// (1 in 8), or a moderate value in [−10, 10] (4 in 8). (A plain function of flat
    /// strategies: nested `prop_oneof!` trees overflow the test thread's stack in debug builds.)
    pub(crate) fn pick((selector, bits): (u8, u64)) -> f64 {
        match selector % 8 {
            0..=2 => f64::from_bits(bits),
            3 => SPECIALS[(bits % SPECIALS.len() as u64) as usize],
            _ => (bits >> 11) as f64 / (1u64 << 53) as f64 * 20.0 - 10.0,
        }
    }

    fn pick3(raw: &[(u8, u64)]) -> [f64; 3] {
        [pick(raw[0]), pick(raw[1]), pick(raw[2])]
    }

    /// A link spec from a kind and 19 raw values: any fields at all (1 kind in 8); or one that
    /// mostly builds — finite fields of any magnitude, a positive mass and a box inertia — so
    /// that the evaluations see valid chains of absurd scales too (3 in 8); or a moderate valid
    /// one (4 in 8).
    pub(crate) fn spec_from(kind: u8, raw: &[(u8, u64)]) -> LinkSpec {
        let raw: Vec<(u8, u64)> = match kind % 8 {
            0..=3 => raw.to_vec(),
            _ => raw.iter().map(|&(_, bits)| (4, bits)).collect(),
        };
        let spec = LinkSpec {
            origin_xyz_m: pick3(&raw[0..3]),
            origin_rpy_rad: pick3(&raw[3..6]),
            axis: pick3(&raw[6..9]),
            mass_kg: pick(raw[9]),
            com_m: pick3(&raw[10..13]),
            inertia_kgm2: core::array::from_fn(|i| pick(raw[13 + i])),
        };
        if kind.is_multiple_of(8) {
            return spec;
        }
        let finite = |v: f64| if v.is_finite() { v } else { 0.5 };
        let m = if spec.mass_kg.is_finite() && spec.mass_kg > 0.0 {
            spec.mass_kg
        } else {
            spec.mass_kg.abs().min(1e3) + 0.1
        };
        let sides = [
            spec.inertia_kgm2[0],
            spec.inertia_kgm2[3],
            spec.inertia_kgm2[5],
        ]
        .map(|s| finite(s).abs() + 0.05);
        LinkSpec {
            origin_xyz_m: spec.origin_xyz_m.map(finite),
            origin_rpy_rad: spec.origin_rpy_rad.map(finite),
            axis: spec.axis.map(finite),
            mass_kg: m,
            com_m: spec.com_m.map(finite),
            inertia_kgm2: box_inertia(m, sides),
        }
    }

    pub(crate) fn raw_values(n: usize) -> impl Strategy<Value = Vec<(u8, u64)>> {
        prop::collection::vec(any::<(u8, u64)>(), n)
    }

    pub(crate) fn all_finite_slice(values: &[f64]) -> bool {
        values.iter().all(|v| v.is_finite())
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 2048, ..ProptestConfig::default() })]

        /// Nothing panics on any input, and every result that is returned is finite. (The
        /// tree's own evaluations have the same property test in `tree`.)
        #[test]
        fn nothing_panics_and_nothing_non_finite_escapes(
            links in prop::collection::vec((any::<u8>(), raw_values(19)), 0..=5),
            raw in raw_values(4 * 4 + 3 + 4),
        ) {
            let specs: Vec<LinkSpec> = links.iter().map(|(kind, raw)| spec_from(*kind, raw)).collect();
            let v: Vec<f64> = raw.iter().copied().map(pick).collect();
            let q = [v[0], v[1], v[2], v[3]];
            let qd = [v[4], v[5], v[6], v[7]];
            let poses = [v[8], v[9], v[10], v[11]];
            let times = [v[12], v[13], v[14], v[15]];
            let g = Vector3::new(v[16], v[17], v[18]);
            let config = (v[19], v[20], v[21], v[22]);
            let Ok(tree) = serial_tree::<4>(&specs) else { return Ok(()) };
            let targets = core::array::from_fn(|i| JointTarget {
                pose_rad: poses[i],
                time_to_go_s: times[i],
            });
            let (period_s, stability_margin, hold_natural_freq_rad_s, pose_tolerance_rad) = config;
            for (settings, coupling) in [
                (ArrivalSettings::default(), Coupling::ParentFeedforward),
                (ArrivalSettings::default(), Coupling::InverseDynamics),
                (ArrivalSettings { period_s, stability_margin, hold_natural_freq_rad_s, pose_tolerance_rad, ..ArrivalSettings::default() }, Coupling::ParentFeedforward),
            ] {
                let Ok(arrival) = TreeArrival::new(settings, coupling) else { continue };
                if let Ok(command) = arrival.tick(&tree, &Isometry3::identity(), &q, &qd, &targets, &g) {
                    prop_assert_eq!(command.joints().len(), specs.len());
                    for j in command.joints() {
                        prop_assert!(all_finite_slice(&[j.inertia_kgm2, j.setpoint_rad, j.drive_nm,
                            j.parent_feedforward_nm, j.gravity_nm, j.torque_nm,
                            j.gains.stiffness_nm_per_rad, j.gains.damping_nms_per_rad]));
                        prop_assert!(j.inertia_kgm2 > 0.0);
                    }
                    prop_assert!(all_finite_slice(&command.torques()));
                }
            }
        }
    }
}
