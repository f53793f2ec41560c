//! Servos for a floating-base humanoid with ball joints, after Dynamo (Wrotek, Jenkins and
//! McGuire, "Dynamo: Dynamic, Data-driven Character Control with Adjustable Balance", Sandbox
//! 2006): the world-space PD servo reduced to one dimension about its rotation axis, targets in
//! parent, world or person space, per-joint Lambert-W arrival gains about that axis, the
//! composite inertia a joint moves, and Dynamo's breakable root spring.
//!
//! Must never allocate, block or panic, whatever the input: every configuration is validated
//! when it is built ([`DynamoError::Config`]), every evaluation refuses a NaN or infinite input
//! ([`DynamoError::NonFinite`]) and an orientation that is not a unit quaternion within
//! [`crate::frames::UNIT_QUATERNION_TOLERANCE`] ([`DynamoError::NotUnitQuaternion`]), and a
//! result that is not a finite f64 (finite inputs whose products overflow) is
//! [`DynamoError::OutOfRange`]: no NaN ever leaves this module. Every joint torque is limited to
//! the joint's magnitude limit by scaling the vector down, and a cut is flagged
//! ([`JointOutput::limited`]), never silent. Only fixed-size `nalgebra` types are used.
//!
//! ```
//! use control_core::articulated::nalgebra::{UnitQuaternion, Vector3};
//! use control_core::dynamo::{
//!     ArrivalSettings, BodyMotion, DynamoJoint, JointConfig, Target, TargetSpace, heading,
//! };
//! let joint = DynamoJoint::new(JointConfig::ball(300.0, 30.0, 200.0), ArrivalSettings::default())?;
//! let root = BodyMotion::at_rest(UnitQuaternion::identity());
//! let child = BodyMotion::at_rest(UnitQuaternion::identity());
//! // Hold the child a quarter turn about world +z, whatever its parent does.
//! let target = Target::fixed(
//!     TargetSpace::World,
//!     UnitQuaternion::from_axis_angle(&Vector3::z_axis(), core::f64::consts::FRAC_PI_2),
//! );
//! let out = joint.tick(&root, &child, &heading(&root)?, &target)?;
//! // kp·v·θ = 300 · z · π/2 ≈ 471 N·m, cut to the 200 N·m limit along the same axis.
//! assert!(out.limited && (out.torque_nm - Vector3::new(0.0, 0.0, 200.0)).norm() < 1e-9);
//! # Ok::<(), control_core::dynamo::DynamoError>(())
//! ```
//!
//! # Conventions
//! - World frame: **y up**, gravity along −y. An orientation is a unit quaternion taking body
//!   coordinates to world coordinates; an angular velocity is a world vector (rad/s), except the
//!   target velocities of [`TargetSpace::Parent`] and [`TargetSpace::Person`], which are in the
//!   parent's and the heading frame's axes.
//! - A **joint torque** is a world vector τ that the plant applies as +τ on the child body and
//!   −τ on its parent ([`JointOutput::torque_nm`]). The root spring's torque acts on the root
//!   alone ([`RootSpringOut::torque_nm`]).
//! - Every rotation error is taken the **short way**: of the two quaternions ±q of a rotation
//!   the one with w ≥ 0, so its angle lies in [0, π]. At exactly π (w = 0) both describe the
//!   same half turn about opposite axes; the one whose first non-zero of (x, y, z) is positive is
//!   taken, so q and −q always give the same torque ([`axis_angle`]).
//!
//! # The laws
//! **Dynamo's world-space PD** (the slides): with W_d the desired and W_a the actual world
//! orientation of the child, T = W_d·W_a⁻¹ the rotation from one to the other, (v, θ) its axis
//! and angle, and ω_d, ω_a the desired and actual world angular velocities,
//!
//! ```text
//! τ = k_p·v·θ + k_d·(ω_d − ω_a).
//! ```
//!
//! The slides reduce the ball joint to a 1-D problem about v ("the rotation axis is fixed during
//! the Euler timestep"). Here that reduction is explicit: each tick the servo's scalar state
//! along v is (θ, ω_a·v) with target (0, ω_d·v), so the torque along v is
//! k_p·θ + k_d·(ω_d − ω_a)·v; the angular velocity error off the axis,
//! (ω_d − ω_a) − ((ω_d − ω_a)·v)v, is **damped with the same k_d**. For fixed gains the sum is
//! exactly the 3-D law above; for arrival gains (below) k_p and k_d are those solved for the 1-D
//! problem and the off-axis damping uses that k_d.
//!
//! **Parent-space PD** (Cartwheel-3d's `computePDTorque`): with q_p the parent's orientation,
//! q_rel = q_p⁻¹·q_c the child's relative to it, q_rel,d and ω_rel,d the target (parent frame),
//! the error rotation in the parent frame is q_rel,d·q_rel⁻¹, its rotation vector is v_p·θ and
//! τ = R_p·(k_p·v_p·θ + k_d·(ω_rel,d − ω_rel)), ω_rel = R_pᵀ(ω_c − ω_p). Since
//! R_p·(q_rel,d·q_rel⁻¹)·R_p⁻¹ = (q_p·q_rel,d)·q_c⁻¹ and R_p·ω_rel = ω_c − ω_p, this is the
//! world-space law for the target W_d = q_p·q_rel,d, ω_d = ω_p + R_p·ω_rel,d: every target
//! space is turned into a world target ([`world_target`]) and one law is applied. With the
//! parent at rest at the identity the two spaces coincide (tested, and the parent-space torque
//! is checked against Cartwheel's formula computed in the child's frame).
//!
//! **Person space** (the slides' remedy for "super-balancing"): the target is relative to the
//! root's heading frame H, the rotation about world y that matches the root's facing
//! ([`heading`]): W_d = H·q_person. A target fixed in the heading frame turns with it, so its
//! angular velocity is ω_d = ψ̇·ŷ + H·ω_person, ψ̇ the heading's own yaw rate (the exact time
//! derivative of the heading angle, [`Heading::yaw_rate_rad_s`]); with the root not turning
//! about y it is H·ω_person.
//!
//! **Hinge and two-axis joints** ([`JointKind`]): the same law, then projected onto the joint's
//! free axes (given in the parent frame, turned to world with the parent): onto the axis of a
//! hinge, onto the plane of the two axes of a two-axis joint (the component along their common
//! normal, which the constraint would absorb, is removed). The removed part is reported
//! ([`JointOutput::absorbed_nm`]) and not sent. The arrival solve (below) is about v; for a
//! hinge it is exact only when v lies along the hinge, as it does for parent-space targets that
//! the hinge can reach.
//!
//! # Gains
//! A target without a time ([`Target::arrival`] `None`) uses the joint's fixed k_p and k_d
//! ([`JointConfig`]), **as given**: Dynamo's point is that world-space control is robust over a
//! wide range of gains, and no stability rule moves them ([`GainStatus::Fixed`]). They may differ
//! per axis of the parent ([`JointConfig::axis_gains`]: stiffness and damping matrices
//! k_p·A, k_d·A with A = R_p·diag(a)·R_pᵀ), as a character's hips are stiff in swing and soft in
//! twist.
//!
//! A target with a time ([`Arrival`]) gets, each tick, the critically damped gains of the
//! project's arrival solver ([`crate::gains::solve_arrival_gains`]) for the 1-D problem about
//! v, the same way [`crate::articulated::TreeArrival`] solves each hinge:
//! - inertia m_v = vᵀ·I·v, I the composite inertia tensor of what the joint moves, world axes,
//!   about the joint point ([`JointInertia::Tensor`], e.g. from [`subtree_inertia_about`]), or
//!   a scalar the caller chose ([`JointInertia::Scalar`]);
//! - position x = θ, the angle still to go (≥ 0), and velocity ẋ = (ω_d − ω_a)·v (sign:
//!   approaching the target reduces θ; a moving target counts as the moving frame);
//! - arrival x = 0 (the target) when the time to go has elapsed, and the PD setpoint re-aimed
//!   [`ArrivalSettings::pose_tolerance_rad`] beyond it, x_s = −tol (a critically damped motion
//!   never reaches its own setpoint in finite time: as
//!   [`crate::servo::ArrivalServo::set_pose_target`] and `TreeArrival`), so the torque along v
//!   is k·(θ + tol) + γ·ẋ and the whole torque τ = k·(θ + tol)·v + γ·(ω_d − ω_a);
//! - the gains are clamped to the stable limit of m_v for the control period
//!   ([`crate::gains::GainLimit`], the period clamp of every other servo here) and the clamp is
//!   reported ([`GainStatus::GainClamped`]); a problem no stable gain arrives at uses the stable
//!   gain whose arrival comes closest ([`crate::gains::closest_arrival_gains`]) and says why
//!   ([`GainStatus::Infeasible`]);
//! - once the time is up, or while the child sits exactly on the target (θ = 0: there is no
//!   axis to re-aim along), the critically damped hold at
//!   [`ArrivalSettings::hold_natural_freq_rad_s`], clamped, pulls to the target itself:
//!   τ = k·v·θ + γ·(ω_d − ω_a) ([`GainStatus::Holding`]).
//!
//! # The root spring
//! Dynamo's "root-spring control": an external ("hand of god") torque on the root only, which
//! opposes only gravity's tipping (no component about world y), is torque-limited, and breaks
//! under excessive strain ([`RootSpring`]). With up = R_root·ŷ the root's up axis, the tilt is
//! the rotation taking up to world +y (axis ∝ up × ŷ, horizontal; angle
//! φ = atan2(|up × ŷ|, up·ŷ)), and
//!
//! ```text
//! τ_balance = k_p,root·(tilt axis)·φ − k_d,root·ω_h,   ω_h = ω_root with its y component removed,
//! ```
//!
//! whose y component is then set to exactly 0 (it is zero by construction: both terms are
//! horizontal). The magnitude law of the slide, with n = |τ_balance|:
//! - n ≤ τ_max: τ = τ_balance ([`SpringState::Holding`]);
//! - τ_max < n ≤ τ_break: τ = τ_balance·τ_max/n ([`SpringState::Saturated`]);
//! - n > τ_break, or φ > the break tilt: the spring **breaks**, τ = 0 from then on, latched
//!   until [`RootSpring::reset`] ([`SpringState::Broken`]).
//!
//! The slide's breaking point is on the τ_balance axis, so the torque criterion
//! ([`RootSpringConfig::break_torque_nm`]) is the slide's; a tilt criterion
//! ([`RootSpringConfig::break_tilt_rad`]) is offered too, because τ_balance contains the damping
//! term and a hard knock can spike it while the root is still nearly upright. Either may be
//! turned off (`None`); when both are set, whichever is passed first breaks the spring. The check
//! is made on the tick's τ_balance before the saturation, and a breaking tick already returns 0.
//! Upside down (up = −ŷ, no tilt axis) the root's local +x, then world +x, made horizontal, is
//! taken as the axis.
//!
//! # The heading
//! [`heading`] returns the yaw ψ of the root's local +x projected onto the horizontal plane:
//! R_y(ψ)·x̂ = (cos ψ, 0, −sin ψ), so ψ = atan2(−x_z, x_x). Where that projection is shorter
//! than [`HEADING_MIN_HORIZONTAL`] (+x within 5.7° of vertical) it falls back to the root's
//! local +z, whose horizontal projection is then at least 0.99 long (z ⟂ x), as
//! ψ = atan2(z_x, z_z) ([`HeadingSource::LocalZ`]). For a root pitched about its lateral axis the
//! two agree exactly, so the switch is continuous there; with a roll about the nearly vertical
//! +x as well they differ by that roll. The local −y projection (the other fallback one could
//! use) gives the facing for a nose-up root but its opposite for a nose-down one, so +z is used.
//! The yaw rate is exact for either axis a: ψ̇ = ω_y − a_y·(a_x·ω_x + a_z·ω_z)/(a_x² + a_z²).
//!
//! # Costs (measured)
//! `cargo bench -p control-core --bench dynamo -- --warm-up-time 1 --measurement-time 3`, x86-64
//! baseline build, on a shared 2-core machine under other jobs (load average 1.7–2): the lower
//! of two runs' medians (the bench's own table, 400 rounds over 64 states; criterion's means
//! agreed within 10 %).
//!
//! | | per call |
//! |---|---|
//! | [`PoseServo::tick`], 14 ball joints, world-space targets, fixed gains (the heading once; per joint the input checks, T = W_d·W_a⁻¹, one `atan2`, the torque, the limit) | 1.7 µs (≈ 120 ns a joint) |
//! | the same with arrival gains about v on each joint's composite inertia tensor (a gain limit and one Lambert-W arrival solve per joint) | 3.1 µs |
//! | [`RootSpring::tick`] | 38 ns |
//! | [`subtree_inertia_about`], the 15 bodies of Cartwheel-3d's "Bip" humanoid | 0.40 µs |
#![deny(missing_docs)]
#![cfg_attr(
    not(test),
    deny(
        clippy::indexing_slicing,
        clippy::unwrap_used,
        clippy::expect_used,
        clippy::panic
    )
)]

use core::fmt;

pub mod humanoid;

use nalgebra::{Matrix3, Quaternion, UnitQuaternion, Vector3};

pub use crate::articulated::ArrivalSettings;
use crate::frames::UNIT_QUATERNION_TOLERANCE;
use crate::gains::{
    ArrivalProblem, Branch, CriticalGains, GainError, GainLimit, closest_arrival_gains,
    solve_arrival_gains,
};

/// [`heading`] uses the root's local +x while its horizontal projection is at least this long
/// (+x at least 5.7° from vertical), and the root's local +z otherwise.
pub const HEADING_MIN_HORIZONTAL: f64 = 0.1;

/// Two free axes of a [`JointKind::TwoAxis`] joint must be at least this far from parallel:
/// the sine of the angle between them (1e−6 rad).
pub const MIN_AXIS_SINE: f64 = 1e-6;

/// Below this length of (up × ŷ) an upside-down root's tilt axis is taken from its local +x
/// (see the module docs, "The root spring").
const MIN_TILT_SINE: f64 = 1e-9;

/// An input of an evaluation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Input {
    /// The parent body's orientation.
    ParentOrientation,
    /// The parent body's angular velocity.
    ParentAngularVelocity,
    /// The child body's orientation.
    ChildOrientation,
    /// The child body's angular velocity.
    ChildAngularVelocity,
    /// The root's orientation (the heading, the root spring).
    RootOrientation,
    /// The root's angular velocity.
    RootAngularVelocity,
    /// A target's orientation.
    TargetOrientation,
    /// A target's angular velocity.
    TargetAngularVelocity,
    /// A target's time to go ([`Arrival::time_to_go_s`]).
    TimeToGo,
    /// A target's inertia ([`Arrival::inertia`]).
    Inertia,
    /// A heading given to [`world_target`] ([`Heading`]).
    Heading,
    /// The gravity vector of [`gravity_torque_about`].
    Gravity,
    /// The feed-forward torque of [`DynamoJoint::tick_scaled`].
    FeedForward,
    /// The point of [`subtree_inertia_about`].
    Point,
    /// A body of [`subtree_inertia_about`].
    Body {
        /// Its index in the slice.
        body: usize,
        /// The field.
        field: BodyField,
    },
}

/// A field of a [`BodyInertia`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum BodyField {
    /// [`BodyInertia::mass_kg`].
    Mass,
    /// [`BodyInertia::principal_inertia_kgm2`].
    PrincipalInertia,
    /// [`BodyInertia::orientation`].
    Orientation,
    /// [`BodyInertia::com_m`].
    CentreOfMass,
}

/// A configuration field that was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ConfigField {
    /// [`JointConfig::stiffness_nm_per_rad`] (finite, ≥ 0).
    Stiffness,
    /// [`JointConfig::damping_nms_per_rad`] (finite, ≥ 0).
    Damping,
    /// [`JointConfig::torque_limit_nm`] (finite, > 0, not subnormal).
    TorqueLimit,
    /// A free axis of [`JointConfig::kind`] (finite, non-zero; two axes not parallel).
    Axis,
    /// A factor of [`JointConfig::axis_gains`] (finite, ≥ 0).
    AxisGains,
    /// A field of the joint's [`ArrivalSettings`] (the field named).
    Arrival(crate::articulated::ConfigField),
    /// [`RootSpringConfig::stiffness_nm_per_rad`] (finite, ≥ 0).
    RootStiffness,
    /// [`RootSpringConfig::damping_nms_per_rad`] (finite, ≥ 0).
    RootDamping,
    /// [`RootSpringConfig::max_torque_nm`] (finite, > 0).
    MaxTorque,
    /// [`RootSpringConfig::break_torque_nm`] (finite, ≥ the maximum torque).
    BreakTorque,
    /// [`RootSpringConfig::break_tilt_rad`] (in (0, π]).
    BreakTilt,
    /// A body index of a [`PoseJointSpec`] or [`PoseServo::new`]'s root (within the bodies).
    BodyIndex,
}

/// Why an evaluation or a configuration was refused.
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub enum DynamoError {
    /// An input is NaN or infinite.
    NonFinite(Input),
    /// An orientation is not a unit quaternion within
    /// [`crate::frames::UNIT_QUATERNION_TOLERANCE`].
    NotUnitQuaternion(Input),
    /// A configuration field is not finite or outside its range.
    Config(ConfigField),
    /// An inertia is not positive where it must be: the target's scalar or vᵀIv
    /// ([`Input::Inertia`]), a body's mass, a body's principal moment (negative)
    /// ([`Input::Body`]).
    NonPositive(Input),
    /// The stable gain limit could not be formed for the inertia about v.
    GainLimit(GainError),
    /// Neither the arrival solve nor its fallback gave a gain (its scales exceed f64).
    NoGain(GainError),
    /// A result is not a finite f64: finite inputs whose products overflow.
    OutOfRange,
    /// A body index beyond the bodies given ([`PoseServo::tick`]).
    NoSuchBody {
        /// The index.
        index: usize,
        /// How many bodies were given.
        len: usize,
    },
}

impl fmt::Display for DynamoError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NonFinite(input) => write!(f, "dynamo: {input:?} is not finite"),
            Self::NotUnitQuaternion(input) => write!(
                f,
                "dynamo: {input:?} is not a unit quaternion (tolerance {UNIT_QUATERNION_TOLERANCE})"
            ),
            Self::Config(field) => write!(f, "dynamo config: {field:?} out of range"),
            Self::NonPositive(input) => write!(f, "dynamo: {input:?} must be > 0"),
            Self::GainLimit(e) => write!(f, "dynamo: no gain limit: {e}"),
            Self::NoGain(e) => write!(f, "dynamo: no gain: {e}"),
            Self::OutOfRange => write!(f, "dynamo: a result exceeds the f64 range"),
            Self::NoSuchBody { index, len } => {
                write!(f, "dynamo: no body {index} (there are {len})")
            }
        }
    }
}

impl core::error::Error for DynamoError {}

/// The measured motion of one body.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BodyMotion {
    /// Body → world.
    pub orientation: UnitQuaternion<f64>,
    /// World angular velocity, rad/s.
    pub angular_velocity_rad_s: Vector3<f64>,
}

impl BodyMotion {
    /// A body with this orientation, not turning.
    pub fn at_rest(orientation: UnitQuaternion<f64>) -> Self {
        Self {
            orientation,
            angular_velocity_rad_s: Vector3::zeros(),
        }
    }
}

/// A rotation as an axis and an angle.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AxisAngle {
    /// Unit axis; the zero vector for the identity (angle 0).
    pub axis: Vector3<f64>,
    /// Angle, rad, in [0, π].
    pub angle_rad: f64,
}

impl AxisAngle {
    /// axis·angle.
    pub fn rotation_vector(&self) -> Vector3<f64> {
        self.axis * self.angle_rad
    }
}

/// The axis and angle of the rotation `q`, the short way (the module docs' conventions): of ±q
/// the one with w > 0, or at w = 0 the one whose first non-zero of (x, y, z) is positive, so the
/// angle 2·atan2(|xyz|, w) lies in [0, π] and q and −q give the same result. `q` is used as
/// given (not re-normalised). For finite `q` the result is finite.
pub fn axis_angle(q: &UnitQuaternion<f64>) -> AxisAngle {
    let c = &q.as_ref().coords; // (x, y, z, w)
    let (x, y, z, w) = (c.x, c.y, c.z, c.w);
    let flip =
        w < 0.0 || (w == 0.0 && (x < 0.0 || (x == 0.0 && (y < 0.0 || (y == 0.0 && z < 0.0)))));
    let sign = if flip { -1.0 } else { 1.0 };
    let v = Vector3::new(sign * x, sign * y, sign * z);
    let w = sign * w;
    let s = libm::sqrt(v.norm_squared());
    if !(s > 0.0 && s.is_finite()) {
        return AxisAngle {
            axis: Vector3::zeros(),
            angle_rad: 0.0,
        };
    }
    AxisAngle {
        axis: v / s,
        angle_rad: 2.0 * libm::atan2(s, w),
    }
}

/// `q` re-normalised if it is a unit quaternion within the tolerance.
fn checked_unit(q: &UnitQuaternion<f64>, input: Input) -> Result<UnitQuaternion<f64>, DynamoError> {
    let c = &q.as_ref().coords;
    if !c.iter().all(|v| v.is_finite()) {
        return Err(DynamoError::NonFinite(input));
    }
    let n2 = c.norm_squared();
    let (lo, hi) = (
        (1.0 - UNIT_QUATERNION_TOLERANCE) * (1.0 - UNIT_QUATERNION_TOLERANCE),
        (1.0 + UNIT_QUATERNION_TOLERANCE) * (1.0 + UNIT_QUATERNION_TOLERANCE),
    );
    if !(n2 >= lo && n2 <= hi) {
        return Err(DynamoError::NotUnitQuaternion(input));
    }
    Ok(UnitQuaternion::new_unchecked(Quaternion::from(
        c * (1.0 / libm::sqrt(n2)),
    )))
}

fn checked_vector(v: &Vector3<f64>, input: Input) -> Result<Vector3<f64>, DynamoError> {
    if v.iter().all(|c| c.is_finite()) {
        Ok(*v)
    } else {
        Err(DynamoError::NonFinite(input))
    }
}

fn finite_vector(v: Vector3<f64>) -> Result<Vector3<f64>, DynamoError> {
    if v.iter().all(|c| c.is_finite()) {
        Ok(v)
    } else {
        Err(DynamoError::OutOfRange)
    }
}

/// Which of the root's axes [`heading`] read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HeadingSource {
    /// Its local +x (the facing), the usual case.
    LocalX,
    /// Its local +z: +x was within 5.7° of vertical ([`HEADING_MIN_HORIZONTAL`]).
    LocalZ,
}

/// The root's heading frame: the rotation about world y that matches its facing.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Heading {
    /// H = R_y(ψ), heading frame → world.
    pub rotation: UnitQuaternion<f64>,
    /// ψ, rad, in [−π, π]: R_y(ψ)·x̂ is the facing.
    pub yaw_rad: f64,
    /// ψ̇, rad/s: the heading frame's own angular velocity is ψ̇·ŷ.
    pub yaw_rate_rad_s: f64,
    /// The axis it was read from.
    pub source: HeadingSource,
}

impl Heading {
    /// The heading frame of a root facing +x and not turning about y: the identity.
    pub const IDENTITY: Self = Self {
        rotation: UnitQuaternion::new_unchecked(Quaternion::new(1.0, 0.0, 0.0, 0.0)),
        yaw_rad: 0.0,
        yaw_rate_rad_s: 0.0,
        source: HeadingSource::LocalX,
    };
}

/// The root's heading frame (the module docs, "The heading"): the yaw of its local +x projected
/// onto the horizontal plane, or of its local +z where +x is nearly vertical, with the exact
/// yaw rate. Finite for every finite unit orientation and finite angular velocity; a yaw rate
/// that overflows is [`DynamoError::OutOfRange`].
pub fn heading(root: &BodyMotion) -> Result<Heading, DynamoError> {
    let q = checked_unit(&root.orientation, Input::RootOrientation)?;
    let w = checked_vector(&root.angular_velocity_rad_s, Input::RootAngularVelocity)?;
    let x = q * Vector3::x();
    let (a, source, c, s) =
        if x.x * x.x + x.z * x.z >= HEADING_MIN_HORIZONTAL * HEADING_MIN_HORIZONTAL {
            (x, HeadingSource::LocalX, x.x, -x.z)
        } else {
            let z = q * Vector3::z();
            (z, HeadingSource::LocalZ, z.z, z.x)
        };
    let yaw = libm::atan2(s, c);
    let half = 0.5 * yaw;
    let rotation =
        UnitQuaternion::new_unchecked(Quaternion::new(libm::cos(half), 0.0, libm::sin(half), 0.0));
    let horizontal = a.x * a.x + a.z * a.z; // ≥ 0.01 (x) or ≥ 0.98 (z)
    let rate = w.y - a.y * ((a.x * w.x + a.z * w.z) / horizontal);
    if !rate.is_finite() {
        return Err(DynamoError::OutOfRange);
    }
    Ok(Heading {
        rotation,
        yaw_rad: yaw,
        yaw_rate_rad_s: rate,
        source,
    })
}

/// The frame a [`Target`] is given in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TargetSpace {
    /// The child's orientation relative to its parent (child → parent), and the relative angular
    /// velocity in the parent's axes: parent-space control.
    Parent,
    /// The child's world orientation and world angular velocity: Dynamo's world space.
    World,
    /// The child's orientation relative to the root's heading frame, and its angular velocity
    /// relative to that frame in its axes: Dynamo's person space.
    Person,
}

/// The inertia the arrival solve sees about the error axis v.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum JointInertia {
    /// The composite inertia tensor of everything the joint moves, world axes, about the joint
    /// point (kg·m²; [`subtree_inertia_about`]); m_v = vᵀIv.
    Tensor(Matrix3<f64>),
    /// One inertia for every axis, kg·m².
    Scalar(f64),
}

impl JointInertia {
    /// The inertia about the unit `axis`: vᵀIv, or the scalar (unchecked).
    pub fn about(&self, axis: &Vector3<f64>) -> f64 {
        match self {
            Self::Tensor(m) => axis.dot(&(m * axis)),
            Self::Scalar(m) => *m,
        }
    }

    /// The inertia used where there is no axis: the mean principal moment tr(I)/3, or the
    /// scalar.
    fn mean(&self) -> f64 {
        match self {
            Self::Tensor(m) => m.trace() / 3.0,
            Self::Scalar(m) => *m,
        }
    }

    fn check(&self) -> Result<(), DynamoError> {
        let finite = match self {
            Self::Tensor(m) => m.iter().all(|v| v.is_finite()),
            Self::Scalar(m) => m.is_finite(),
        };
        if finite {
            Ok(())
        } else {
            Err(DynamoError::NonFinite(Input::Inertia))
        }
    }
}

/// The time part of a target: arrive when `time_to_go_s` has elapsed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Arrival {
    /// Time left until the child must be at the target, s (≤ 0: hold).
    pub time_to_go_s: f64,
    /// What the joint moves ([`JointInertia`]).
    pub inertia: JointInertia,
}

/// What one joint must do.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Target {
    /// The frame of `orientation` and `angular_velocity_rad_s`.
    pub space: TargetSpace,
    /// The desired orientation of the child in `space`.
    pub orientation: UnitQuaternion<f64>,
    /// The desired angular velocity of the child in `space` (see [`TargetSpace`]), rad/s.
    pub angular_velocity_rad_s: Vector3<f64>,
    /// `None`: the joint's fixed gains; `Some`: arrival gains about the error axis.
    pub arrival: Option<Arrival>,
}

impl Target {
    /// Hold `orientation` in `space` at rest, with the joint's fixed gains.
    pub fn fixed(space: TargetSpace, orientation: UnitQuaternion<f64>) -> Self {
        Self {
            space,
            orientation,
            angular_velocity_rad_s: Vector3::zeros(),
            arrival: None,
        }
    }
}

/// A target turned into world space: W_d and ω_d.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct WorldTarget {
    /// W_d, the child's desired orientation (child → world).
    pub orientation: UnitQuaternion<f64>,
    /// ω_d, its desired world angular velocity, rad/s.
    pub angular_velocity_rad_s: Vector3<f64>,
}

/// The world target of `target` (the module docs, "The laws"): for [`TargetSpace::Parent`]
/// W_d = q_p·q_rel,d and ω_d = ω_p + R_p·ω_rel,d; for [`TargetSpace::World`] the target itself;
/// for [`TargetSpace::Person`] W_d = H·q_person and ω_d = ψ̇·ŷ + H·ω_person. `parent` is read
/// only for parent space, `heading` only for person space.
pub fn world_target(
    target: &Target,
    parent: &BodyMotion,
    heading: &Heading,
) -> Result<WorldTarget, DynamoError> {
    resolve(target, parent, None, heading)
}

/// [`world_target`], with the parent's orientation already checked if `parent_q` is given.
fn resolve(
    target: &Target,
    parent: &BodyMotion,
    parent_q: Option<&UnitQuaternion<f64>>,
    heading: &Heading,
) -> Result<WorldTarget, DynamoError> {
    let q = checked_unit(&target.orientation, Input::TargetOrientation)?;
    let w = checked_vector(&target.angular_velocity_rad_s, Input::TargetAngularVelocity)?;
    let (orientation, angular_velocity) = match target.space {
        TargetSpace::World => (q, w),
        TargetSpace::Parent => {
            let qp = match parent_q {
                Some(qp) => *qp,
                None => checked_unit(&parent.orientation, Input::ParentOrientation)?,
            };
            let wp = checked_vector(&parent.angular_velocity_rad_s, Input::ParentAngularVelocity)?;
            (qp * q, wp + qp * w)
        }
        TargetSpace::Person => {
            let h = checked_unit(&heading.rotation, Input::Heading)?;
            if !heading.yaw_rate_rad_s.is_finite() {
                return Err(DynamoError::NonFinite(Input::Heading));
            }
            (
                h * q,
                Vector3::new(0.0, heading.yaw_rate_rad_s, 0.0) + h * w,
            )
        }
    };
    Ok(WorldTarget {
        orientation,
        angular_velocity_rad_s: finite_vector(angular_velocity)?,
    })
}

/// The world-space tracking error of a child: T = W_d·W_a⁻¹ as an axis and angle, and the
/// angular velocity error.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TrackingError {
    /// v (world, unit; zero when θ = 0) and θ ∈ [0, π].
    pub rotation: AxisAngle,
    /// ω_d − ω_a, world, rad/s.
    pub velocity_error_rad_s: Vector3<f64>,
}

impl TrackingError {
    /// The scalar state of the 1-D servo about v: (θ, ω_a·v) as (angle to go, its rate
    /// (ω_d − ω_a)·v), rad and rad/s.
    pub fn along_axis(&self) -> (f64, f64) {
        (
            self.rotation.angle_rad,
            self.velocity_error_rad_s.dot(&self.rotation.axis),
        )
    }
}

/// The tracking error of `child` (its measured world motion) against `target`.
pub fn tracking_error(
    child: &BodyMotion,
    target: &WorldTarget,
) -> Result<TrackingError, DynamoError> {
    let qa = checked_unit(&child.orientation, Input::ChildOrientation)?;
    let wa = checked_vector(&child.angular_velocity_rad_s, Input::ChildAngularVelocity)?;
    let qd = checked_unit(&target.orientation, Input::TargetOrientation)?;
    let wd = checked_vector(&target.angular_velocity_rad_s, Input::TargetAngularVelocity)?;
    error_of(&qa, &wa, &qd, &wd)
}

/// The tracking error from checked inputs.
fn error_of(
    qa: &UnitQuaternion<f64>,
    wa: &Vector3<f64>,
    qd: &UnitQuaternion<f64>,
    wd: &Vector3<f64>,
) -> Result<TrackingError, DynamoError> {
    Ok(TrackingError {
        rotation: axis_angle(&(qd * qa.inverse())),
        velocity_error_rad_s: finite_vector(wd - wa)?,
    })
}

/// Dynamo's world-space PD torque for given gains: k_p·v·θ + k_d·(ω_d − ω_a) (no projection, no
/// limit). Not finite only if the gains or the error are huge.
pub fn world_pd_torque(error: &TrackingError, stiffness: f64, damping: f64) -> Vector3<f64> {
    error.rotation.axis * (stiffness * error.rotation.angle_rad)
        + error.velocity_error_rad_s * damping
}

/// The rotational freedom of a joint; axes in the parent body's frame, any non-zero length.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum JointKind {
    /// Three rotational degrees of freedom: the torque is sent whole.
    Ball,
    /// One: the torque is projected onto the axis.
    Hinge {
        /// The free axis, parent frame.
        axis: Vector3<f64>,
    },
    /// Two (a universal joint, e.g. Cartwheel's ankles): the torque is projected onto the plane
    /// of the two axes.
    TwoAxis {
        /// The free axes, parent frame (not parallel).
        axes: [Vector3<f64>; 2],
    },
}

/// The validated free axes: the hinge's unit axis, or the two-axis joint's unit normal.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Freedom {
    Ball,
    Hinge(Vector3<f64>),
    Plane(Vector3<f64>),
}

impl Freedom {
    pub(crate) fn new(kind: &JointKind) -> Result<Self, DynamoError> {
        let unit = |v: &Vector3<f64>| {
            let n = libm::sqrt(v.norm_squared());
            if v.iter().all(|c| c.is_finite()) && n > 0.0 && n.is_finite() {
                Ok(v / n)
            } else {
                Err(DynamoError::Config(ConfigField::Axis))
            }
        };
        match kind {
            JointKind::Ball => Ok(Self::Ball),
            JointKind::Hinge { axis } => Ok(Self::Hinge(unit(axis)?)),
            JointKind::TwoAxis { axes: [a, b] } => {
                let normal = unit(a)?.cross(&unit(b)?);
                let s = libm::sqrt(normal.norm_squared());
                if s < MIN_AXIS_SINE {
                    return Err(DynamoError::Config(ConfigField::Axis));
                }
                Ok(Self::Plane(normal / s))
            }
        }
    }

    /// (sent, absorbed): τ split into its part along the free axes and the rest.
    pub(crate) fn project(
        &self,
        parent: &UnitQuaternion<f64>,
        tau: Vector3<f64>,
    ) -> (Vector3<f64>, Vector3<f64>) {
        match self {
            Self::Ball => (tau, Vector3::zeros()),
            Self::Hinge(axis) => {
                let a = parent * axis;
                let sent = a * a.dot(&tau);
                (sent, tau - sent)
            }
            Self::Plane(normal) => {
                let n = parent * normal;
                let absorbed = n * n.dot(&tau);
                (tau - absorbed, absorbed)
            }
        }
    }
}

/// One joint's servo configuration.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct JointConfig {
    /// The joint's rotational freedom.
    pub kind: JointKind,
    /// k_p for targets without a time, N·m/rad (finite, ≥ 0).
    pub stiffness_nm_per_rad: f64,
    /// k_d for targets without a time, N·m·s/rad (finite, ≥ 0).
    pub damping_nms_per_rad: f64,
    /// Largest torque magnitude |τ| the joint may send, N·m (finite, > 0, not subnormal).
    pub torque_limit_nm: f64,
    /// Per-axis factors `a` of the fixed gains about the parent's x, y, z axes (each finite,
    /// ≥ 0): the fixed-gain law is τ = R_p·diag(a)·R_pᵀ·(k_p·v·θ + k_d·(ω_d − ω_a)), i.e.
    /// stiffness and damping matrices k_p·A and k_d·A with A = R_p·diag(a)·R_pᵀ (a hip stiff
    /// about its swing axis and soft about its twist). `[1, 1, 1]` is the isotropic law.
    /// Arrival gains are solved about v for the whole torque and ignore these factors.
    pub axis_gains: Vector3<f64>,
}

impl JointConfig {
    /// A ball joint with these fixed gains (the same about every axis) and torque limit.
    pub fn ball(stiffness_nm_per_rad: f64, damping_nms_per_rad: f64, torque_limit_nm: f64) -> Self {
        Self {
            kind: JointKind::Ball,
            stiffness_nm_per_rad,
            damping_nms_per_rad,
            torque_limit_nm,
            axis_gains: Vector3::new(1.0, 1.0, 1.0),
        }
    }
}

/// Where a tick's gains came from.
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub enum GainStatus {
    /// The joint's fixed gains (a target without a time).
    Fixed,
    /// Arrival gains that arrive on time, within the stable limit.
    Tracking,
    /// The arriving gains exceed what the period integrates stably; clamped to the limit.
    GainClamped,
    /// No stable critically damped gain arrives on time (the error says why): the stable gain
    /// whose predicted arrival comes closest.
    Infeasible(GainError),
    /// The time is up, or the child is exactly on the target: the critically damped hold.
    Holding,
}

/// One joint's torque for one tick, and how it was made.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct JointOutput {
    /// The torque to apply, world, N·m: +τ on the child, −τ on the parent. Within the limit.
    pub torque_nm: Vector3<f64>,
    /// The torque before the limit (after the projection onto the free axes), N·m.
    pub requested_nm: Vector3<f64>,
    /// What the projection removed (the constraint's part, not sent), N·m; zero for a ball.
    pub absorbed_nm: Vector3<f64>,
    /// Whether the limit scaled the torque down.
    pub limited: bool,
    /// The world target the law tracked.
    pub target: WorldTarget,
    /// The tracking error (v, θ, ω_d − ω_a).
    pub error: TrackingError,
    /// k used, N·m/rad.
    pub stiffness_nm_per_rad: f64,
    /// γ used (also on the off-axis velocity error), N·m·s/rad.
    pub damping_nms_per_rad: f64,
    /// The setpoint offset beyond the target along v, rad: the pose tolerance while arriving, 0
    /// otherwise.
    pub reaim_rad: f64,
    /// m_v the arrival gains were solved for, kg·m² (`None` for fixed gains). With the child
    /// exactly on the target (no v) the inertia about the velocity error's direction, or
    /// tr(I)/3 if that is zero too.
    pub axis_inertia_kgm2: Option<f64>,
    /// Where the gains came from.
    pub status: GainStatus,
}

/// One joint's validated servo: its freedom, gains, limit and the arrival settings.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DynamoJoint {
    config: JointConfig,
    freedom: Freedom,
    arrival: ArrivalSettings,
}

impl DynamoJoint {
    /// Validate `config` and `arrival`.
    pub fn new(config: JointConfig, arrival: ArrivalSettings) -> Result<Self, DynamoError> {
        let non_negative = |v: f64| v.is_finite() && v >= 0.0;
        if !non_negative(config.stiffness_nm_per_rad) {
            return Err(DynamoError::Config(ConfigField::Stiffness));
        }
        if !non_negative(config.damping_nms_per_rad) {
            return Err(DynamoError::Config(ConfigField::Damping));
        }
        if !(config.torque_limit_nm.is_normal() && config.torque_limit_nm > 0.0) {
            return Err(DynamoError::Config(ConfigField::TorqueLimit));
        }
        if !config.axis_gains.iter().all(|a| non_negative(*a)) {
            return Err(DynamoError::Config(ConfigField::AxisGains));
        }
        arrival
            .validate()
            .map_err(|field| DynamoError::Config(ConfigField::Arrival(field)))?;
        Ok(Self {
            freedom: Freedom::new(&config.kind)?,
            config,
            arrival,
        })
    }

    /// The configuration.
    pub fn config(&self) -> JointConfig {
        self.config
    }

    /// The arrival settings.
    pub fn arrival_settings(&self) -> ArrivalSettings {
        self.arrival
    }

    /// One tick: the target made a world target ([`world_target`]: `parent` for parent space,
    /// `heading` for person space), the tracking error of `child`, the gains (fixed or arrival
    /// about v), the torque, its projection onto the free axes (turned to world with `parent`),
    /// and the limit.
    pub fn tick(
        &self,
        parent: &BodyMotion,
        child: &BodyMotion,
        heading: &Heading,
        target: &Target,
    ) -> Result<JointOutput, DynamoError> {
        self.tick_with(parent, child, heading, target, None)
    }

    /// One tick with the gains **per unit inertia** (k_p in 1/s², k_d in 1/s, arrival gains
    /// solved for a unit inertia, whatever `target.arrival`'s inertia): the law gives the
    /// angular acceleration α = k_p·v·θ + k_d·(ω_d − ω_a), and the torque is I·α with `inertia`
    /// the tensor the joint moves (world axes, about the joint, e.g.
    /// [`subtree_inertia_about`]), then projected and limited as in [`DynamoJoint::tick`].
    ///
    /// What it buys: a sampled PD is stable about an axis only for k_d·h/I and k_p·h²/I within
    /// bounds ([`crate::gains::Integrator::is_stable`]), and a limb's inertia differs a
    /// hundredfold between its swing and its twist (an arm: about 0.6 against 0.007 kg·m²), and
    /// turns with the limb. Torque gains small enough for the twist are too weak for the swing;
    /// gains per unit inertia give every axis the same natural frequency and damping ratio, in
    /// whatever direction the limb points. The output's `stiffness_nm_per_rad` and
    /// `damping_nms_per_rad` are then the per-unit-inertia gains (1/s², 1/s) and
    /// `axis_inertia_kgm2` is 1 for arrival gains. A non-finite `inertia` is
    /// [`DynamoError::NonFinite`]`(`[`Input::Inertia`]`)`, a negative diagonal
    /// [`DynamoError::NonPositive`]`(`[`Input::Inertia`]`)`.
    ///
    /// `feedforward_nm` (world, N·m) is added to I·α before the projection and the limit: the
    /// torque that holds the joint's load still, e.g. gravity's on the subtree
    /// ([`gravity_torque_about`], negated), so the feedback gains need not fight a static load
    /// (a non-finite one is [`DynamoError::NonFinite`]`(`[`Input::FeedForward`]`)`).
    pub fn tick_scaled(
        &self,
        parent: &BodyMotion,
        child: &BodyMotion,
        heading: &Heading,
        target: &Target,
        inertia: &Matrix3<f64>,
        feedforward_nm: &Vector3<f64>,
    ) -> Result<JointOutput, DynamoError> {
        JointInertia::Tensor(*inertia).check()?;
        let feedforward = checked_vector(feedforward_nm, Input::FeedForward)?;
        if inertia.diagonal().iter().any(|&v| v < 0.0) {
            return Err(DynamoError::NonPositive(Input::Inertia));
        }
        let unit = Target {
            arrival: target.arrival.map(|a| Arrival {
                inertia: JointInertia::Scalar(1.0),
                ..a
            }),
            ..*target
        };
        self.tick_with(parent, child, heading, &unit, Some((inertia, &feedforward)))
    }

    fn tick_with(
        &self,
        parent: &BodyMotion,
        child: &BodyMotion,
        heading: &Heading,
        target: &Target,
        scaled: Option<(&Matrix3<f64>, &Vector3<f64>)>,
    ) -> Result<JointOutput, DynamoError> {
        let parent_q = checked_unit(&parent.orientation, Input::ParentOrientation)?;
        let world = resolve(target, parent, Some(&parent_q), heading)?;
        let child_q = checked_unit(&child.orientation, Input::ChildOrientation)?;
        let child_w = checked_vector(&child.angular_velocity_rad_s, Input::ChildAngularVelocity)?;
        let error = error_of(
            &child_q,
            &child_w,
            &world.orientation,
            &world.angular_velocity_rad_s,
        )?;
        let gains = match &target.arrival {
            None => Gains {
                stiffness: self.config.stiffness_nm_per_rad,
                damping: self.config.damping_nms_per_rad,
                reaim: 0.0,
                inertia: None,
                status: GainStatus::Fixed,
            },
            Some(arrival) => self.arrival_gains(&error, arrival)?,
        };
        let v = error.rotation.axis;
        let mut full = finite_vector(
            v * (gains.stiffness * (error.rotation.angle_rad + gains.reaim))
                + error.velocity_error_rad_s * gains.damping,
        )?;
        if gains.status == GainStatus::Fixed && self.config.axis_gains != Vector3::repeat(1.0) {
            // The per-axis gains, about the parent's axes (none to apply when all are 1).
            let local = parent_q.inverse() * full;
            full = finite_vector(parent_q * local.component_mul(&self.config.axis_gains))?;
        }
        if let Some((i, feedforward)) = scaled {
            full = finite_vector(i * full + feedforward)?;
        }
        let (requested, absorbed) = self.freedom.project(&parent_q, full);
        let (torque, limited) =
            limit_vector(finite_vector(requested)?, self.config.torque_limit_nm);
        Ok(JointOutput {
            torque_nm: torque,
            requested_nm: requested,
            absorbed_nm: finite_vector(absorbed)?,
            limited,
            target: world,
            error,
            stiffness_nm_per_rad: gains.stiffness,
            damping_nms_per_rad: gains.damping,
            reaim_rad: gains.reaim,
            axis_inertia_kgm2: gains.inertia,
            status: gains.status,
        })
    }

    /// The arrival gains about v (the module docs, "Gains").
    fn arrival_gains(
        &self,
        error: &TrackingError,
        arrival: &Arrival,
    ) -> Result<Gains, DynamoError> {
        if !arrival.time_to_go_s.is_finite() {
            return Err(DynamoError::NonFinite(Input::TimeToGo));
        }
        arrival.inertia.check()?;
        let (theta, rate) = error.along_axis();
        let at_target = theta <= 0.0;
        let m = if at_target {
            // No axis: the damping acts along the velocity error, if any.
            let n = libm::sqrt(error.velocity_error_rad_s.norm_squared());
            if n > 0.0 && n.is_finite() {
                arrival.inertia.about(&(error.velocity_error_rad_s / n))
            } else {
                arrival.inertia.mean()
            }
        } else {
            arrival.inertia.about(&error.rotation.axis)
        };
        if !m.is_finite() {
            return Err(DynamoError::OutOfRange);
        }
        if m <= 0.0 {
            return Err(DynamoError::NonPositive(Input::Inertia));
        }
        let s = &self.arrival;
        let limit = GainLimit::new(m, s.period_s, s.integrator, s.stability_margin)
            .map_err(DynamoError::GainLimit)?;
        let hold = || {
            let g = CriticalGains::from_damping(
                m,
                2.0 * m * s.hold_natural_freq_rad_s,
                Branch::Principal,
            )
            .ok_or(DynamoError::OutOfRange)?
            .clamp_to(&limit)
            .gains;
            Ok(Gains {
                stiffness: g.stiffness_nm_per_rad,
                damping: g.damping_nms_per_rad,
                reaim: 0.0,
                inertia: Some(m),
                status: GainStatus::Holding,
            })
        };
        if arrival.time_to_go_s <= 0.0 || at_target {
            return hold();
        }
        let tol = s.pose_tolerance_rad;
        let problem = ArrivalProblem {
            inertia_kgm2: m,
            position_rad: theta,
            velocity_rad_s: rate,
            setpoint_rad: -tol,
            arrival_rad: 0.0,
            time_to_go_s: arrival.time_to_go_s,
        };
        let (gains, status) = match solve_arrival_gains(&problem) {
            Ok(gains) => {
                let clamped = gains.clamp_to(&limit);
                let status = if clamped.acted {
                    GainStatus::GainClamped
                } else {
                    GainStatus::Tracking
                };
                (clamped.gains, status)
            }
            Err(GainError::Indeterminate) => return hold(),
            Err(e) => match closest_arrival_gains(&problem, &limit) {
                Some(gains) => (gains, GainStatus::Infeasible(e)),
                None => return Err(DynamoError::NoGain(e)),
            },
        };
        Ok(Gains {
            stiffness: gains.stiffness_nm_per_rad,
            damping: gains.damping_nms_per_rad,
            reaim: tol,
            inertia: Some(m),
            status,
        })
    }
}

/// A tick's gains.
#[derive(Debug, Clone, Copy)]
struct Gains {
    stiffness: f64,
    damping: f64,
    reaim: f64,
    inertia: Option<f64>,
    status: GainStatus,
}

/// `v` scaled down to magnitude `limit` if longer (finite `v`, normal `limit` > 0); whether it
/// was.
fn limit_vector(v: Vector3<f64>, limit: f64) -> (Vector3<f64>, bool) {
    let n2 = v.norm_squared();
    let l2 = limit * limit;
    if n2.is_finite() && l2.is_normal() {
        // n2 > l2 makes n2 normal too.
        if n2 <= l2 {
            return (v, false);
        }
        return (v * (limit / libm::sqrt(n2)), true);
    }
    // Squares out of range (a component beyond 1e154, or a limit beyond 1e154 or below 1e−154):
    // scale by the largest component first.
    let big = v.amax();
    if big == 0.0 {
        return (v, false);
    }
    let u = v / big;
    let nu = libm::sqrt(u.norm_squared()); // in [1, √3]
    if big <= limit / nu {
        return (v, false);
    }
    (u * (limit / nu), true)
}

/// One body's mass properties for [`subtree_inertia_about`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BodyInertia {
    /// Mass, kg (finite, > 0).
    pub mass_kg: f64,
    /// The principal moments about the centre of mass, body frame (the diagonal of the inertia
    /// tensor in a body frame aligned with its principal axes), kg·m² (finite, ≥ 0).
    pub principal_inertia_kgm2: Vector3<f64>,
    /// Body (principal) frame → world.
    pub orientation: UnitQuaternion<f64>,
    /// Centre of mass, world, m.
    pub com_m: Vector3<f64>,
}

/// The torque gravity exerts on `bodies` about `point` (world, N·m): Σ (c_b − p) × m_b·g over
/// the bodies' centres of mass c_b and masses m_b. A joint that holds the subtree still against
/// gravity applies its negative (the feed-forward of [`DynamoJoint::tick_scaled`]). Exact for a
/// subtree touching nothing but its joint (an arm, a head); a body on the ground is carried by
/// the ground too. Errors as [`subtree_inertia_about`]'s for the point and a body's mass or
/// centre, [`DynamoError::NonFinite`]`(`[`Input::Gravity`]`)` for `gravity_m_s2`.
pub fn gravity_torque_about(
    point: &Vector3<f64>,
    bodies: &[BodyInertia],
    gravity_m_s2: &Vector3<f64>,
) -> Result<Vector3<f64>, DynamoError> {
    let point = checked_vector(point, Input::Point)?;
    let g = checked_vector(gravity_m_s2, Input::Gravity)?;
    let mut total = Vector3::zeros();
    for (body, b) in bodies.iter().enumerate() {
        let field = |field| Input::Body { body, field };
        checked_mass(body, b)?;
        let com = checked_vector(&b.com_m, field(BodyField::CentreOfMass))?;
        total += (com - point).cross(&(g * b.mass_kg));
    }
    finite_vector(total)
}

/// Body `body`'s mass if finite and > 0, else the error naming it.
fn checked_mass(body: usize, b: &BodyInertia) -> Result<f64, DynamoError> {
    let field = Input::Body {
        body,
        field: BodyField::Mass,
    };
    if !b.mass_kg.is_finite() {
        Err(DynamoError::NonFinite(field))
    } else if b.mass_kg <= 0.0 {
        Err(DynamoError::NonPositive(field))
    } else {
        Ok(b.mass_kg)
    }
}

/// The inertia tensor (world axes) of the `bodies` together about `point` (world): for each body
/// R·diag(I)·Rᵀ + m(|r|²E − r·rᵀ), r = com − point, summed. Fixed capacity: the caller's slice,
/// no allocation; an empty slice gives zero. A body is refused by index and field
/// ([`Input::Body`]): not finite, a mass ≤ 0, a negative principal moment, an orientation that
/// is not a unit quaternion.
pub fn subtree_inertia_about(
    point: &Vector3<f64>,
    bodies: &[BodyInertia],
) -> Result<Matrix3<f64>, DynamoError> {
    let point = checked_vector(point, Input::Point)?;
    let mut total = Matrix3::zeros();
    for (body, b) in bodies.iter().enumerate() {
        let field = |field| Input::Body { body, field };
        checked_mass(body, b)?;
        let d = checked_vector(
            &b.principal_inertia_kgm2,
            field(BodyField::PrincipalInertia),
        )?;
        if d.iter().any(|&v| v < 0.0) {
            return Err(DynamoError::NonPositive(field(BodyField::PrincipalInertia)));
        }
        let q = checked_unit(&b.orientation, field(BodyField::Orientation))?;
        let com = checked_vector(&b.com_m, field(BodyField::CentreOfMass))?;
        let r = q.to_rotation_matrix();
        let r = r.matrix();
        // R diag(d) Rᵀ = Σ_k d_k c_k c_kᵀ over the columns c_k of R.
        for (k, c) in r.column_iter().enumerate() {
            let dk = match k {
                0 => d.x,
                1 => d.y,
                _ => d.z,
            };
            total += (c * c.transpose()) * dk;
        }
        let o = com - point;
        total += (Matrix3::identity() * o.norm_squared() - o * o.transpose()) * b.mass_kg;
    }
    if total.iter().all(|v| v.is_finite()) {
        Ok(total)
    } else {
        Err(DynamoError::OutOfRange)
    }
}

/// The root spring's configuration ([`RootSpring`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RootSpringConfig {
    /// k_p,root on the tilt, N·m/rad (finite, ≥ 0).
    pub stiffness_nm_per_rad: f64,
    /// k_d,root on the horizontal angular velocity, N·m·s/rad (finite, ≥ 0).
    pub damping_nms_per_rad: f64,
    /// τ_max: above it the torque is saturated to this magnitude, N·m (finite, > 0).
    pub max_torque_nm: f64,
    /// τ_break: a |τ_balance| above it breaks the spring, N·m (finite, ≥ τ_max); `None`: no
    /// torque criterion.
    pub break_torque_nm: Option<f64>,
    /// A tilt above it breaks the spring, rad (in (0, π]); `None`: no tilt criterion.
    pub break_tilt_rad: Option<f64>,
}

impl Default for RootSpringConfig {
    /// An illustrative spring for a 70 kg humanoid whose centre of mass stands about 1 m over
    /// its feet (gravity tips it by about 690 N·m per rad): k_p 1000 N·m/rad, k_d 100 N·m·s/rad,
    /// τ_max 300 N·m, τ_break 600 N·m, no tilt criterion.
    fn default() -> Self {
        Self {
            stiffness_nm_per_rad: 1000.0,
            damping_nms_per_rad: 100.0,
            max_torque_nm: 300.0,
            break_torque_nm: Some(600.0),
            break_tilt_rad: None,
        }
    }
}

/// The root spring's regime this tick.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpringState {
    /// |τ_balance| ≤ τ_max: τ = τ_balance.
    Holding,
    /// τ_max < |τ_balance| ≤ τ_break: τ = τ_balance scaled to τ_max.
    Saturated,
    /// Broken (this tick or before): τ = 0 until [`RootSpring::reset`].
    Broken,
}

/// One tick of the root spring.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RootSpringOut {
    /// The torque on the root, world, N·m; its y component is exactly 0.
    pub torque_nm: Vector3<f64>,
    /// The regime.
    pub state: SpringState,
    /// τ_balance, the torque that would hold the root upright (y exactly 0), N·m; computed even
    /// when broken.
    pub balance_torque_nm: Vector3<f64>,
    /// The tilt φ of the root's up axis from world +y, rad, in [0, π].
    pub tilt_rad: f64,
}

/// Dynamo's root spring (the module docs, "The root spring"): a horizontal torque on the root
/// that holds it upright, saturating at τ_max and breaking, latched, past τ_break or the break
/// tilt.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RootSpring {
    config: RootSpringConfig,
    broken: bool,
}

impl RootSpring {
    /// Validate `config`; the spring starts unbroken.
    pub fn new(config: RootSpringConfig) -> Result<Self, DynamoError> {
        let non_negative = |v: f64| v.is_finite() && v >= 0.0;
        if !non_negative(config.stiffness_nm_per_rad) {
            return Err(DynamoError::Config(ConfigField::RootStiffness));
        }
        if !non_negative(config.damping_nms_per_rad) {
            return Err(DynamoError::Config(ConfigField::RootDamping));
        }
        if !(config.max_torque_nm.is_finite() && config.max_torque_nm > 0.0) {
            return Err(DynamoError::Config(ConfigField::MaxTorque));
        }
        if let Some(b) = config.break_torque_nm
            && !(b.is_finite() && b >= config.max_torque_nm)
        {
            return Err(DynamoError::Config(ConfigField::BreakTorque));
        }
        if let Some(a) = config.break_tilt_rad
            && !(a > 0.0 && a <= core::f64::consts::PI)
        {
            return Err(DynamoError::Config(ConfigField::BreakTilt));
        }
        Ok(Self {
            config,
            broken: false,
        })
    }

    /// The configuration.
    pub fn config(&self) -> RootSpringConfig {
        self.config
    }

    /// Whether the spring has broken (and so returns zero until [`Self::reset`]).
    pub fn is_broken(&self) -> bool {
        self.broken
    }

    /// Mend the spring.
    pub fn reset(&mut self) {
        self.broken = false;
    }

    /// One tick from the root's orientation and world angular velocity. A refused input leaves
    /// the spring as it was (broken or not); the caller applies no root torque for that tick.
    pub fn tick(
        &mut self,
        root_orientation: &UnitQuaternion<f64>,
        root_angular_velocity_rad_s: &Vector3<f64>,
    ) -> Result<RootSpringOut, DynamoError> {
        let q = checked_unit(root_orientation, Input::RootOrientation)?;
        let w = checked_vector(root_angular_velocity_rad_s, Input::RootAngularVelocity)?;
        let (tilt_vector, tilt) = tilt(&q);
        let c = &self.config;
        let balance = Vector3::new(
            c.stiffness_nm_per_rad * tilt_vector.x - c.damping_nms_per_rad * w.x,
            0.0,
            c.stiffness_nm_per_rad * tilt_vector.z - c.damping_nms_per_rad * w.z,
        );
        let balance = finite_vector(balance)?;
        let mut n = libm::sqrt(balance.x * balance.x + balance.z * balance.z);
        if !n.is_finite() {
            // The squares overflowed; the components did not.
            n = libm::hypot(balance.x, balance.z);
        }
        if !n.is_finite() {
            return Err(DynamoError::OutOfRange);
        }
        let breaks =
            c.break_torque_nm.is_some_and(|b| n > b) || c.break_tilt_rad.is_some_and(|a| tilt > a);
        if breaks {
            self.broken = true;
        }
        let (torque, state) = if self.broken {
            (Vector3::zeros(), SpringState::Broken)
        } else if n <= c.max_torque_nm {
            (balance, SpringState::Holding)
        } else {
            let k = c.max_torque_nm / n;
            (
                Vector3::new(balance.x * k, 0.0, balance.z * k),
                SpringState::Saturated,
            )
        };
        Ok(RootSpringOut {
            torque_nm: torque,
            state,
            balance_torque_nm: balance,
            tilt_rad: tilt,
        })
    }
}

/// The rotation vector taking the root's up (local +y) to world +y (y component exactly 0), and
/// its angle in [0, π].
fn tilt(q: &UnitQuaternion<f64>) -> (Vector3<f64>, f64) {
    let up = q * Vector3::y();
    // up × ŷ = (−up_z, 0, up_x).
    let (cx, cz) = (-up.z, up.x);
    let s = libm::sqrt(cx * cx + cz * cz);
    let angle = libm::atan2(s, up.y);
    if s >= MIN_TILT_SINE || up.y > 0.0 {
        if s == 0.0 {
            return (Vector3::zeros(), angle);
        }
        let k = angle / s;
        return (Vector3::new(cx * k, 0.0, cz * k), angle);
    }
    // Upside down: any horizontal axis turns −ŷ to ŷ; take the root's +x made horizontal (it is
    // nearly horizontal here), or world +x.
    let x = q * Vector3::x();
    let h = libm::sqrt(x.x * x.x + x.z * x.z);
    if h > 0.5 {
        (Vector3::new(x.x / h * angle, 0.0, x.z / h * angle), angle)
    } else {
        (Vector3::new(angle, 0.0, 0.0), angle)
    }
}

/// One joint of a [`PoseServo`]: which bodies it joins and its servo.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PoseJointSpec {
    /// The parent body's index in the bodies given to [`PoseServo::tick`].
    pub parent: usize,
    /// The child body's index.
    pub child: usize,
    /// Its servo.
    pub config: JointConfig,
}

/// Why a [`PoseServo`] refused: the joint, and its error.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PoseError {
    /// The joint (index in the joints given), or `None` for the root.
    pub joint: Option<usize>,
    /// The error.
    pub error: DynamoError,
}

impl fmt::Display for PoseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.joint {
            Some(joint) => write!(f, "joint {joint}: {}", self.error),
            None => write!(f, "root: {}", self.error),
        }
    }
}

impl core::error::Error for PoseError {}

/// The torques of one [`PoseServo::tick`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PoseCommand<const N: usize> {
    /// Each joint's output, in the joints' order.
    pub joints: [JointOutput; N],
    /// The root's heading frame the person-space targets used.
    pub heading: Heading,
    /// How many joints' torques the limit cut.
    pub limited: usize,
}

/// `N` joints of a character, each a [`DynamoJoint`] between two of its bodies, and the root
/// whose heading frame person-space targets are relative to.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PoseServo<const N: usize> {
    joints: [(usize, usize, DynamoJoint); N],
    root: usize,
    bodies: usize,
}

impl<const N: usize> PoseServo<N> {
    /// Validate the joints (each joint's config, its body indices below `bodies`) and the
    /// arrival settings; `root` is the root body's index.
    pub fn new(
        bodies: usize,
        root: usize,
        joints: &[PoseJointSpec; N],
        arrival: ArrivalSettings,
    ) -> Result<Self, PoseError> {
        if root >= bodies {
            return Err(PoseError {
                joint: None,
                error: DynamoError::Config(ConfigField::BodyIndex),
            });
        }
        let placeholder = DynamoJoint {
            config: JointConfig::ball(0.0, 0.0, 1.0),
            freedom: Freedom::Ball,
            arrival,
        };
        let mut out = [(0, 0, placeholder); N];
        for (joint, (slot, spec)) in out.iter_mut().zip(joints.iter()).enumerate() {
            let fail = |error| PoseError {
                joint: Some(joint),
                error,
            };
            if spec.parent >= bodies || spec.child >= bodies || spec.parent == spec.child {
                return Err(fail(DynamoError::Config(ConfigField::BodyIndex)));
            }
            *slot = (
                spec.parent,
                spec.child,
                DynamoJoint::new(spec.config, arrival).map_err(fail)?,
            );
        }
        Ok(Self {
            joints: out,
            root,
            bodies,
        })
    }

    /// The joint servos, in order.
    pub fn joint(&self, joint: usize) -> Option<&DynamoJoint> {
        self.joints.get(joint).map(|(_, _, j)| j)
    }

    /// One tick: the root's heading once, then every joint's [`DynamoJoint::tick`]. `bodies`
    /// must hold at least as many bodies as the servo was built for. Any refused input refuses
    /// the whole tick, naming the joint (the caller's safe state takes over).
    pub fn tick(
        &self,
        bodies: &[BodyMotion],
        targets: &[Target; N],
    ) -> Result<PoseCommand<N>, PoseError> {
        let body = |index: usize, joint: Option<usize>| {
            bodies.get(index).ok_or(PoseError {
                joint,
                error: DynamoError::NoSuchBody {
                    index,
                    len: bodies.len(),
                },
            })
        };
        if bodies.len() < self.bodies {
            return Err(PoseError {
                joint: None,
                error: DynamoError::NoSuchBody {
                    index: self.bodies - 1,
                    len: bodies.len(),
                },
            });
        }
        let heading =
            heading(body(self.root, None)?).map_err(|error| PoseError { joint: None, error })?;
        let mut out = [PLACEHOLDER_OUTPUT; N];
        let mut limited = 0;
        for (joint, ((slot, (parent, child, servo)), target)) in out
            .iter_mut()
            .zip(self.joints.iter())
            .zip(targets.iter())
            .enumerate()
        {
            let parent = body(*parent, Some(joint))?;
            let child = body(*child, Some(joint))?;
            *slot = servo
                .tick(parent, child, &heading, target)
                .map_err(|error| PoseError {
                    joint: Some(joint),
                    error,
                })?;
            limited += usize::from(slot.limited);
        }
        Ok(PoseCommand {
            joints: out,
            heading,
            limited,
        })
    }
}

const PLACEHOLDER_OUTPUT: JointOutput = JointOutput {
    torque_nm: Vector3::new(0.0, 0.0, 0.0),
    requested_nm: Vector3::new(0.0, 0.0, 0.0),
    absorbed_nm: Vector3::new(0.0, 0.0, 0.0),
    limited: false,
    target: WorldTarget {
        orientation: UnitQuaternion::new_unchecked(Quaternion::new(1.0, 0.0, 0.0, 0.0)),
        angular_velocity_rad_s: Vector3::new(0.0, 0.0, 0.0),
    },
    error: TrackingError {
        rotation: AxisAngle {
            axis: Vector3::new(0.0, 0.0, 0.0),
            angle_rad: 0.0,
        },
        velocity_error_rad_s: Vector3::new(0.0, 0.0, 0.0),
    },
    stiffness_nm_per_rad: 0.0,
    damping_nms_per_rad: 0.0,
    reaim_rad: 0.0,
    axis_inertia_kgm2: None,
    status: GainStatus::Fixed,
};

/// What [`PoseServo::tick`] reads each tick, as one value for
/// [`crate::controller::Controller`].
#[derive(Debug, Clone, Copy)]
pub struct PoseInput<'a, const N: usize> {
    /// Every body's world motion (at least as many as the servo was built for).
    pub bodies: &'a [BodyMotion],
    /// One target per joint.
    pub targets: &'a [Target; N],
}

impl<const N: usize> PoseCommand<N> {
    /// What held the command back: joints whose torque the limit cut, and whose arrival gains
    /// were clamped or infeasible.
    pub fn limits(&self) -> crate::controller::Limits {
        use crate::controller::count;
        let status =
            |f: fn(&GainStatus) -> bool| count(self.joints.iter().filter(|j| f(&j.status)).count());
        crate::controller::Limits {
            gain_clamped: status(|s| matches!(s, GainStatus::GainClamped)),
            infeasible: status(|s| matches!(s, GainStatus::Infeasible(_))),
            torque_limited: count(self.limited),
            ..Default::default()
        }
    }
}

impl<const N: usize> crate::controller::Controller<PoseInput<'_, N>> for PoseServo<N> {
    type Command = PoseCommand<N>;
    type Error = PoseError;

    fn tick(&mut self, i: &PoseInput<'_, N>) -> Result<PoseCommand<N>, PoseError> {
        PoseServo::tick(self, i.bodies, i.targets)
    }

    fn limits(command: &PoseCommand<N>) -> crate::controller::Limits {
        command.limits()
    }
}

/// What [`RootSpring::tick`] reads each tick, as one value for
/// [`crate::controller::Controller`].
#[derive(Debug, Clone, Copy)]
pub struct RootSpringInput<'a> {
    /// The root's orientation, world.
    pub root_orientation: &'a UnitQuaternion<f64>,
    /// The root's angular velocity, world, rad/s.
    pub root_angular_velocity_rad_s: &'a Vector3<f64>,
}

impl crate::controller::Controller<RootSpringInput<'_>> for RootSpring {
    type Command = RootSpringOut;
    type Error = DynamoError;

    fn tick(&mut self, i: &RootSpringInput<'_>) -> Result<RootSpringOut, DynamoError> {
        RootSpring::tick(self, i.root_orientation, i.root_angular_velocity_rad_s)
    }

    /// A saturated spring is a bound that acted; a broken one applies nothing (a fallback).
    fn limits(command: &RootSpringOut) -> crate::controller::Limits {
        crate::controller::Limits {
            bounded: u32::from(command.state == SpringState::Saturated),
            fallback: command.state == SpringState::Broken,
            ..Default::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::articulated::ConfigField as ArrivalField;
    use crate::gains::Integrator;
    use core::f64::consts::{FRAC_PI_2, PI};
    use nalgebra::Unit;
    use proptest::prelude::*;

    fn rot(axis: [f64; 3], angle: f64) -> UnitQuaternion<f64> {
        UnitQuaternion::from_axis_angle(&Unit::new_normalize(Vector3::from(axis)), angle)
    }

    fn negated(q: &UnitQuaternion<f64>) -> UnitQuaternion<f64> {
        UnitQuaternion::new_unchecked(-q.into_inner())
    }

    fn moving(q: UnitQuaternion<f64>, w: [f64; 3]) -> BodyMotion {
        BodyMotion {
            orientation: q,
            angular_velocity_rad_s: Vector3::from(w),
        }
    }

    fn close(a: &Vector3<f64>, b: &Vector3<f64>, tol: f64) -> bool {
        (a - b).norm() <= tol * (1.0 + a.norm().max(b.norm()))
    }

    fn servo(kp: f64, kd: f64, limit: f64) -> DynamoJoint {
        DynamoJoint::new(JointConfig::ball(kp, kd, limit), ArrivalSettings::default()).unwrap()
    }

    fn world(q: UnitQuaternion<f64>, w: [f64; 3]) -> Target {
        Target {
            space: TargetSpace::World,
            orientation: q,
            angular_velocity_rad_s: Vector3::from(w),
            arrival: None,
        }
    }

    const REST: BodyMotion = BodyMotion {
        orientation: UnitQuaternion::new_unchecked(Quaternion::new(1.0, 0.0, 0.0, 0.0)),
        angular_velocity_rad_s: Vector3::new(0.0, 0.0, 0.0),
    };

    #[test]
    fn a_quarter_turn_about_a_known_axis() {
        let j = servo(10.0, 2.0, 1e6);
        let z = j
            .tick(
                &REST,
                &REST,
                &Heading::IDENTITY,
                &world(rot([0.0, 0.0, 1.0], FRAC_PI_2), [0.0; 3]),
            )
            .unwrap();
        assert!(close(
            &z.torque_nm,
            &Vector3::new(0.0, 0.0, 10.0 * FRAC_PI_2),
            1e-15
        ));
        assert!((z.error.rotation.angle_rad - FRAC_PI_2).abs() < 1e-15);
        assert_eq!(z.status, GainStatus::Fixed);
        assert!(!z.limited);
        // About (1, 2, −2)/3, from a child turning about x towards a target turning about z.
        let axis = Vector3::new(1.0, 2.0, -2.0) / 3.0;
        let child = moving(UnitQuaternion::identity(), [1.0, 0.0, 0.0]);
        let out = j
            .tick(
                &REST,
                &child,
                &Heading::IDENTITY,
                &world(rot([1.0, 2.0, -2.0], FRAC_PI_2), [0.0, 0.0, 1.0]),
            )
            .unwrap();
        let expected = axis * (10.0 * FRAC_PI_2) + Vector3::new(-1.0, 0.0, 1.0) * 2.0;
        assert!(close(&out.torque_nm, &expected, 1e-15), "{out:?}");
        // From a rotated child: T = W_d W_a⁻¹ is what remains, a quarter turn about x.
        let wa = rot([0.0, 1.0, 0.0], 0.4);
        let wd = rot([1.0, 0.0, 0.0], FRAC_PI_2) * wa;
        let out = j
            .tick(
                &REST,
                &BodyMotion::at_rest(wa),
                &Heading::IDENTITY,
                &world(wd, [0.0; 3]),
            )
            .unwrap();
        assert!(close(
            &out.torque_nm,
            &Vector3::new(10.0 * FRAC_PI_2, 0.0, 0.0),
            1e-14
        ));
    }

    #[test]
    fn the_short_way_round() {
        let j = servo(10.0, 0.0, 1e6);
        let out = j
            .tick(
                &REST,
                &REST,
                &Heading::IDENTITY,
                &world(rot([0.0, 0.0, 1.0], 1.5 * PI), [0.0; 3]),
            )
            .unwrap();
        assert!(close(
            &out.torque_nm,
            &Vector3::new(0.0, 0.0, -10.0 * FRAC_PI_2),
            1e-14
        ));
        for angle in [0.0, 1e-300, 1e-9, 0.5, PI - 1e-9, PI] {
            let a = axis_angle(&rot([0.3, -0.2, 0.9], angle));
            assert!(a.angle_rad >= 0.0 && a.angle_rad <= PI && (a.angle_rad - angle).abs() < 1e-15);
        }
        assert_eq!(
            axis_angle(&UnitQuaternion::identity()).axis,
            Vector3::zeros()
        );
    }

    #[test]
    fn the_double_cover_gives_the_same_torque() {
        let j = servo(40.0, 3.0, 1e6);
        let qa = rot([0.2, 1.0, -0.4], 2.3);
        let qd = rot([-0.7, 0.1, 0.5], -1.1);
        let child = moving(qa, [0.3, -1.0, 2.0]);
        let target = world(qd, [1.0, 0.5, -0.2]);
        let base = j
            .tick(&REST, &child, &Heading::IDENTITY, &target)
            .unwrap()
            .torque_nm;
        for (c, t) in [
            (negated(&qa), qd),
            (qa, negated(&qd)),
            (negated(&qa), negated(&qd)),
        ] {
            let out = j
                .tick(
                    &REST,
                    &BodyMotion {
                        orientation: c,
                        ..child
                    },
                    &Heading::IDENTITY,
                    &Target {
                        orientation: t,
                        ..target
                    },
                )
                .unwrap();
            assert!(
                close(&out.torque_nm, &base, 1e-14),
                "{:?} vs {base:?}",
                out.torque_nm
            );
        }
        // Exactly half a turn: w = 0 both ways, the same axis.
        let half = UnitQuaternion::new_unchecked(Quaternion::new(0.0, 0.0, -0.6, 0.8));
        assert_eq!(axis_angle(&half), axis_angle(&negated(&half)));
        assert_eq!(axis_angle(&half).axis, Vector3::new(0.0, 0.6, -0.8));
    }

    #[test]
    fn parent_space_is_world_space_under_a_resting_identity_parent() {
        let j = servo(25.0, 4.0, 1e6);
        let child = moving(rot([1.0, -1.0, 0.3], 0.8), [0.4, 0.1, -2.0]);
        let q = rot([0.0, 1.0, 1.0], -0.6);
        let w = [0.2, 0.0, 1.5];
        let in_world = j
            .tick(&REST, &child, &Heading::IDENTITY, &world(q, w))
            .unwrap();
        let in_parent = j
            .tick(
                &REST,
                &child,
                &Heading::IDENTITY,
                &Target {
                    space: TargetSpace::Parent,
                    ..world(q, w)
                },
            )
            .unwrap();
        assert!(close(&in_world.torque_nm, &in_parent.torque_nm, 1e-15));
    }

    /// Cartwheel-3d's computePDTorque, computed independently: qErr = q_rel⁻¹·q_rel,d in the
    /// child's frame, its axis-angle (nalgebra's), into the parent frame, then into the world.
    #[test]
    fn parent_space_matches_cartwheels_formula() {
        let (kp, kd) = (300.0, 30.0);
        let j = servo(kp, kd, 1e6);
        let parent = moving(rot([0.3, 1.0, 0.2], 1.2), [0.5, -0.3, 1.1]);
        let child = moving(rot([-1.0, 0.4, 0.7], 0.9), [-0.2, 2.0, 0.4]);
        let qd = rot([0.5, 0.5, -1.0], 0.7);
        let wd = Vector3::new(0.3, -0.6, 0.1);
        let target = Target {
            space: TargetSpace::Parent,
            orientation: qd,
            angular_velocity_rad_s: wd,
            arrival: None,
        };
        let out = j
            .tick(&parent, &child, &Heading::IDENTITY, &target)
            .unwrap();
        let qp = parent.orientation;
        let q_rel = qp.inverse() * child.orientation;
        let q_err = q_rel.inverse() * qd;
        let r_child = q_err.scaled_axis();
        let r_parent = q_rel * r_child;
        let w_rel = qp.inverse() * (child.angular_velocity_rad_s - parent.angular_velocity_rad_s);
        let tau = qp * (r_parent * kp + (wd - w_rel) * kd);
        assert!(
            close(&out.torque_nm, &tau, 1e-13),
            "{:?} vs {tau:?}",
            out.torque_nm
        );
    }

    #[test]
    fn person_space_is_world_space_for_a_root_facing_x() {
        let j = servo(50.0, 5.0, 1e6);
        let child = moving(rot([0.1, 0.9, -0.3], 1.4), [1.0, -0.5, 0.2]);
        let q = rot([0.6, -0.2, 0.4], 2.0);
        let w = [0.0, 1.0, -1.0];
        for root in [
            UnitQuaternion::identity(),
            rot([1.0, 0.0, 0.0], 0.5),
            rot([1.0, 0.0, 0.0], -2.5),
        ] {
            let h = heading(&BodyMotion::at_rest(root)).unwrap();
            assert_eq!(h.source, HeadingSource::LocalX);
            assert!(h.yaw_rad.abs() < 1e-15 && h.yaw_rate_rad_s == 0.0);
            let person = j
                .tick(
                    &REST,
                    &child,
                    &h,
                    &Target {
                        space: TargetSpace::Person,
                        ..world(q, w)
                    },
                )
                .unwrap();
            let in_world = j.tick(&REST, &child, &h, &world(q, w)).unwrap();
            assert!(close(&person.torque_nm, &in_world.torque_nm, 1e-15));
        }
    }

    #[test]
    fn person_space_turns_with_the_heading() {
        let j = servo(50.0, 5.0, 1e6);
        let child = moving(rot([0.1, 0.9, -0.3], 1.4), [1.0, -0.5, 0.2]);
        let q = rot([0.6, -0.2, 0.4], 2.0);
        let yaw = 0.7;
        // Yawed, then pitched and rolled a little: the heading is the yaw.
        let root = moving(
            rot([0.0, 1.0, 0.0], yaw) * rot([0.0, 0.0, 1.0], 0.3) * rot([1.0, 0.0, 0.0], 0.2),
            [0.0; 3],
        );
        let h = heading(&root).unwrap();
        assert!((h.yaw_rad - yaw).abs() < 1e-14);
        let person = j
            .tick(
                &REST,
                &child,
                &h,
                &Target {
                    space: TargetSpace::Person,
                    ..world(q, [0.0; 3])
                },
            )
            .unwrap();
        let in_world = j
            .tick(
                &REST,
                &child,
                &h,
                &world(rot([0.0, 1.0, 0.0], yaw) * q, [0.0; 3]),
            )
            .unwrap();
        assert!(close(&person.torque_nm, &in_world.torque_nm, 1e-14));
        // An upright root spinning about y: the target spins with it.
        let spinning = moving(rot([0.0, 1.0, 0.0], yaw), [0.0, 2.0, 0.0]);
        let h = heading(&spinning).unwrap();
        assert!((h.yaw_rate_rad_s - 2.0).abs() < 1e-15);
        let t = world_target(
            &Target {
                space: TargetSpace::Person,
                ..world(q, [1.0, 0.0, 0.0])
            },
            &REST,
            &h,
        )
        .unwrap();
        let expected = Vector3::new(0.0, 2.0, 0.0) + rot([0.0, 1.0, 0.0], yaw) * Vector3::x();
        assert!(close(&t.angular_velocity_rad_s, &expected, 1e-15));
    }

    #[test]
    fn heading_of_yawed_and_pitched_roots() {
        for yaw in [-3.0, -1.0, 0.0, 0.4, 2.5, PI] {
            let h = heading(&BodyMotion::at_rest(rot([0.0, 1.0, 0.0], yaw))).unwrap();
            assert!((h.yaw_rad - yaw).abs() < 1e-14 || (h.yaw_rad.abs() - PI).abs() < 1e-14);
            assert!(h.rotation.angle_to(&rot([0.0, 1.0, 0.0], yaw)) < 1e-7);
        }
        // Pitched ±90° (+x vertical) after a yaw: finite, from +z, the yaw kept.
        for pitch in [FRAC_PI_2, -FRAC_PI_2, FRAC_PI_2 - 1e-3, 1.5] {
            for yaw in [0.0, 0.9, -2.0] {
                let root = moving(
                    rot([0.0, 1.0, 0.0], yaw) * rot([0.0, 0.0, 1.0], pitch),
                    [3.0, -1.0, 2.0],
                );
                let h = heading(&root).unwrap();
                assert_eq!(h.source, HeadingSource::LocalZ);
                assert!((h.yaw_rad - yaw).abs() < 1e-12, "{pitch} {yaw} {h:?}");
                assert!(h.yaw_rate_rad_s.is_finite());
            }
        }
        // Just outside the fallback both axes give the same yaw for a pure pitch.
        let h = heading(&BodyMotion::at_rest(
            rot([0.0, 1.0, 0.0], 0.5) * rot([0.0, 0.0, 1.0], 1.47),
        ))
        .unwrap();
        assert_eq!(h.source, HeadingSource::LocalX);
        assert!((h.yaw_rad - 0.5).abs() < 1e-12);
        // Upside down.
        let h = heading(&BodyMotion::at_rest(rot([1.0, 0.0, 0.0], PI))).unwrap();
        assert!(h.yaw_rad.abs() < 1e-15);
    }

    #[test]
    fn heading_rate_is_the_derivative_of_the_heading() {
        let dt = 1e-6;
        let mut checked = [0; 2];
        for i in 0..200 {
            let f = f64::from(i);
            let q = rot(
                [f.sin(), (1.3 * f).cos(), 0.5 - (0.7 * f).sin()],
                0.1 + 0.0157 * f,
            );
            let w = Vector3::new(
                (2.1 * f).sin() * 3.0,
                (0.3 * f).cos() * 2.0,
                (1.7 * f).cos(),
            );
            let h = heading(&moving(q, w.into())).unwrap();
            let step = |s: f64| {
                heading(&BodyMotion::at_rest(
                    UnitQuaternion::from_scaled_axis(w * s) * q,
                ))
                .unwrap()
            };
            let (before, after) = (step(-dt), step(dt));
            if before.source != h.source || after.source != h.source {
                continue;
            }
            let mut d = after.yaw_rad - before.yaw_rad;
            if d > PI {
                d -= 2.0 * PI;
            } else if d < -PI {
                d += 2.0 * PI;
            }
            let numeric = d / (2.0 * dt);
            assert!(
                (numeric - h.yaw_rate_rad_s).abs() < 1e-5 * (1.0 + numeric.abs()),
                "{i}: {numeric} vs {h:?}"
            );
            checked[usize::from(h.source == HeadingSource::LocalZ)] += 1;
        }
        assert!(checked[0] > 100, "{checked:?}");
        // Near vertical +x (the fallback) explicitly.
        let q = rot([0.0, 1.0, 0.0], 0.3) * rot([0.0, 0.0, 1.0], 1.55) * rot([1.0, 0.0, 0.0], 0.4);
        let w = Vector3::new(0.7, -1.2, 2.0);
        let h = heading(&moving(q, w.into())).unwrap();
        assert_eq!(h.source, HeadingSource::LocalZ);
        let step = |s: f64| {
            heading(&BodyMotion::at_rest(
                UnitQuaternion::from_scaled_axis(w * s) * q,
            ))
            .unwrap()
            .yaw_rad
        };
        let numeric = (step(dt) - step(-dt)) / (2.0 * dt);
        assert!(
            (numeric - h.yaw_rate_rad_s).abs() < 1e-6,
            "{numeric} vs {h:?}"
        );
    }

    fn spring() -> RootSpring {
        RootSpring::new(RootSpringConfig::default()).unwrap()
    }

    #[test]
    fn the_root_spring_holds_saturates_and_breaks() {
        let mut s = spring();
        let still = Vector3::zeros();
        let out = s.tick(&UnitQuaternion::identity(), &still).unwrap();
        assert_eq!(
            (out.state, out.torque_nm, out.tilt_rad),
            (SpringState::Holding, Vector3::zeros(), 0.0)
        );
        // Turned 0.1 rad about +z: up leans to −x; held back about −z with 1000·0.1.
        let out = s.tick(&rot([0.0, 0.0, 1.0], 0.1), &still).unwrap();
        assert_eq!(out.state, SpringState::Holding);
        assert!(
            close(&out.torque_nm, &Vector3::new(0.0, 0.0, -100.0), 1e-14),
            "{out:?}"
        );
        assert!((out.tilt_rad - 0.1).abs() < 1e-15);
        // 0.4 rad: 400 N·m asked, 300 given, same direction.
        let out = s.tick(&rot([0.0, 0.0, 1.0], 0.4), &still).unwrap();
        assert_eq!(out.state, SpringState::Saturated);
        assert!(close(
            &out.torque_nm,
            &Vector3::new(0.0, 0.0, -300.0),
            1e-14
        ));
        assert!(close(
            &out.balance_torque_nm,
            &Vector3::new(0.0, 0.0, -400.0),
            1e-14
        ));
        // Just inside the limit and the breaking point: still held, saturated.
        let at = |tilt: f64| rot([1.0, 0.0, 0.0], tilt);
        assert_eq!(
            s.tick(&at(0.3 - 1e-12), &still).unwrap().state,
            SpringState::Holding
        );
        assert_eq!(
            s.tick(&at(0.6 - 1e-12), &still).unwrap().state,
            SpringState::Saturated
        );
        // 0.7 rad about x: 700 > 600 breaks it; the breaking tick already gives 0.
        let out = s.tick(&at(0.7), &still).unwrap();
        assert_eq!(
            (out.state, out.torque_nm),
            (SpringState::Broken, Vector3::zeros())
        );
        assert!(close(
            &out.balance_torque_nm,
            &Vector3::new(-700.0, 0.0, 0.0),
            1e-14
        ));
        assert!(s.is_broken());
        // Latched: upright again, still broken.
        let out = s.tick(&UnitQuaternion::identity(), &still).unwrap();
        assert_eq!(
            (out.state, out.torque_nm),
            (SpringState::Broken, Vector3::zeros())
        );
        s.reset();
        let out = s.tick(&rot([0.0, 0.0, 1.0], 0.1), &still).unwrap();
        assert_eq!(out.state, SpringState::Holding);
        // A refused input leaves the state alone.
        let nan = Vector3::new(f64::NAN, 0.0, 0.0);
        assert_eq!(
            s.tick(&at(0.7), &nan),
            Err(DynamoError::NonFinite(Input::RootAngularVelocity))
        );
        assert!(!s.is_broken());
    }

    #[test]
    fn the_root_spring_damps_only_the_horizontal_motion() {
        let mut s = spring();
        let out = s
            .tick(&UnitQuaternion::identity(), &Vector3::new(1.0, 5.0, -0.5))
            .unwrap();
        assert_eq!(out.torque_nm, Vector3::new(-100.0, 0.0, 50.0));
        // A pure spin about y: nothing.
        let out = s
            .tick(&rot([0.0, 1.0, 0.0], 1.0), &Vector3::new(0.0, 50.0, 0.0))
            .unwrap();
        assert_eq!(out.torque_nm, Vector3::zeros());
        // A knock breaks it through the damping alone.
        let out = s
            .tick(&UnitQuaternion::identity(), &Vector3::new(7.0, 0.0, 0.0))
            .unwrap();
        assert_eq!(out.state, SpringState::Broken);
    }

    #[test]
    fn the_root_spring_breaks_on_tilt_when_asked() {
        let mut s = RootSpring::new(RootSpringConfig {
            stiffness_nm_per_rad: 10.0,
            damping_nms_per_rad: 1.0,
            max_torque_nm: 300.0,
            break_torque_nm: None,
            break_tilt_rad: Some(0.5),
        })
        .unwrap();
        assert_eq!(
            s.tick(&rot([1.0, 0.0, 1.0], 0.49), &Vector3::zeros())
                .unwrap()
                .state,
            SpringState::Holding
        );
        assert_eq!(
            s.tick(&rot([1.0, 0.0, 1.0], 0.51), &Vector3::zeros())
                .unwrap()
                .state,
            SpringState::Broken
        );
        // No criterion at all: it never breaks, upside down included (finite, horizontal).
        let mut s = RootSpring::new(RootSpringConfig {
            break_torque_nm: None,
            ..RootSpringConfig::default()
        })
        .unwrap();
        for q in [
            rot([1.0, 0.0, 0.0], PI),
            rot([0.0, 0.0, 1.0], PI),
            rot([0.0, 1.0, 0.0], 1.0) * rot([1.0, 0.0, 0.0], PI),
        ] {
            let out = s.tick(&q, &Vector3::new(1e3, -1e3, 1e3)).unwrap();
            assert_eq!(out.state, SpringState::Saturated);
            assert!((out.tilt_rad - PI).abs() < 1e-15);
            assert!(out.torque_nm.iter().all(|v| v.is_finite()) && out.torque_nm.y == 0.0);
            let bare = s.tick(&q, &Vector3::zeros()).unwrap();
            assert!(
                (bare.balance_torque_nm.norm() - 1000.0 * PI).abs() < 1e-9,
                "{bare:?}"
            );
        }
    }

    #[test]
    fn root_spring_configs_are_checked() {
        let ok = RootSpringConfig::default();
        let refused = |c: RootSpringConfig| RootSpring::new(c).err();
        let f = |field| Some(DynamoError::Config(field));
        assert_eq!(
            refused(RootSpringConfig {
                stiffness_nm_per_rad: -1.0,
                ..ok
            }),
            f(ConfigField::RootStiffness)
        );
        assert_eq!(
            refused(RootSpringConfig {
                stiffness_nm_per_rad: f64::NAN,
                ..ok
            }),
            f(ConfigField::RootStiffness)
        );
        assert_eq!(
            refused(RootSpringConfig {
                damping_nms_per_rad: f64::INFINITY,
                ..ok
            }),
            f(ConfigField::RootDamping)
        );
        assert_eq!(
            refused(RootSpringConfig {
                max_torque_nm: 0.0,
                ..ok
            }),
            f(ConfigField::MaxTorque)
        );
        assert_eq!(
            refused(RootSpringConfig {
                break_torque_nm: Some(299.0),
                ..ok
            }),
            f(ConfigField::BreakTorque)
        );
        assert_eq!(
            refused(RootSpringConfig {
                break_torque_nm: Some(f64::INFINITY),
                ..ok
            }),
            f(ConfigField::BreakTorque)
        );
        assert_eq!(
            refused(RootSpringConfig {
                break_tilt_rad: Some(0.0),
                ..ok
            }),
            f(ConfigField::BreakTilt)
        );
        assert_eq!(
            refused(RootSpringConfig {
                break_tilt_rad: Some(3.2),
                ..ok
            }),
            f(ConfigField::BreakTilt)
        );
        assert!(
            RootSpring::new(RootSpringConfig {
                break_torque_nm: Some(300.0),
                break_tilt_rad: Some(PI),
                ..ok
            })
            .is_ok()
        );
        let mut s = spring();
        let bad = UnitQuaternion::new_unchecked(Quaternion::new(1.1, 0.0, 0.0, 0.0));
        assert_eq!(
            s.tick(&bad, &Vector3::zeros()),
            Err(DynamoError::NotUnitQuaternion(Input::RootOrientation))
        );
        assert_eq!(
            s.tick(&UnitQuaternion::identity(), &Vector3::new(1e308, 0.0, 0.0)),
            Err(DynamoError::OutOfRange)
        );
    }

    #[test]
    fn hinges_and_two_axis_joints_send_only_their_free_part() {
        let parent = BodyMotion::at_rest(rot([0.4, 1.0, -0.3], 0.9));
        let child = moving(rot([1.0, 0.2, 0.1], 0.5), [0.3, -0.4, 1.0]);
        let target = world(rot([0.0, 0.3, 1.0], -0.8), [0.0; 3]);
        let ball = servo(100.0, 10.0, 1e6)
            .tick(&parent, &child, &Heading::IDENTITY, &target)
            .unwrap();
        let hinge = DynamoJoint::new(
            JointConfig {
                kind: JointKind::Hinge {
                    axis: Vector3::new(0.0, 0.0, 2.0),
                },
                ..JointConfig::ball(100.0, 10.0, 1e6)
            },
            ArrivalSettings::default(),
        )
        .unwrap()
        .tick(&parent, &child, &Heading::IDENTITY, &target)
        .unwrap();
        let a = parent.orientation * Vector3::z();
        assert!(close(
            &hinge.torque_nm,
            &(a * a.dot(&ball.torque_nm)),
            1e-14
        ));
        assert!(close(
            &(hinge.torque_nm + hinge.absorbed_nm),
            &ball.torque_nm,
            1e-14
        ));
        let two = DynamoJoint::new(
            JointConfig {
                kind: JointKind::TwoAxis {
                    axes: [Vector3::new(3.0, 0.0, 0.0), Vector3::new(1.0, 1.0, 0.0)],
                },
                ..JointConfig::ball(100.0, 10.0, 1e6)
            },
            ArrivalSettings::default(),
        )
        .unwrap()
        .tick(&parent, &child, &Heading::IDENTITY, &target)
        .unwrap();
        assert!(two.torque_nm.dot(&a).abs() < 1e-12 * ball.torque_nm.norm());
        assert!(close(
            &two.absorbed_nm,
            &(a * a.dot(&ball.torque_nm)),
            1e-14
        ));
        assert_eq!(ball.absorbed_nm, Vector3::zeros());
        let refused = |kind| {
            DynamoJoint::new(
                JointConfig {
                    kind,
                    ..JointConfig::ball(1.0, 1.0, 1.0)
                },
                ArrivalSettings::default(),
            )
            .err()
        };
        let axis = Some(DynamoError::Config(ConfigField::Axis));
        assert_eq!(
            refused(JointKind::Hinge {
                axis: Vector3::zeros()
            }),
            axis
        );
        assert_eq!(
            refused(JointKind::Hinge {
                axis: Vector3::new(f64::NAN, 1.0, 0.0)
            }),
            axis
        );
        assert_eq!(
            refused(JointKind::Hinge {
                axis: Vector3::new(1e300, 1e300, 0.0)
            }),
            axis
        );
        assert_eq!(
            refused(JointKind::TwoAxis {
                axes: [Vector3::x(), Vector3::x() * -2.0]
            }),
            axis
        );
        assert_eq!(
            refused(JointKind::TwoAxis {
                axes: [Vector3::x(), Vector3::zeros()]
            }),
            axis
        );
    }

    #[test]
    fn the_limit_scales_the_torque_down_and_says_so() {
        let j = servo(1000.0, 50.0, 20.0);
        let child = moving(UnitQuaternion::identity(), [0.0, 3.0, 0.0]);
        let out = j
            .tick(
                &REST,
                &child,
                &Heading::IDENTITY,
                &world(rot([1.0, 1.0, 0.0], 1.0), [0.0; 3]),
            )
            .unwrap();
        assert!(out.limited);
        assert!((out.torque_nm.norm() - 20.0).abs() < 1e-12);
        assert!(close(
            &(out.torque_nm / 20.0),
            &(out.requested_nm / out.requested_nm.norm()),
            1e-15
        ));
        let (v, cut) = limit_vector(Vector3::new(1e300, -1e300, 1e300), 5.0);
        assert!(cut && (v.norm() - 5.0).abs() < 1e-14 && v.x > 0.0 && v.y < 0.0);
        assert_eq!(
            limit_vector(Vector3::zeros(), 5.0),
            (Vector3::zeros(), false)
        );
        assert_eq!(
            limit_vector(Vector3::new(3.0, 4.0, 0.0), 5.0),
            (Vector3::new(3.0, 4.0, 0.0), false)
        );
        // Limits and torques whose squares leave the f64 range.
        let (v, cut) = limit_vector(Vector3::new(3e250, 4e250, 0.0), 1e250);
        assert!(cut && (v - Vector3::new(6e249, 8e249, 0.0)).amax() < 1e235);
        let (v, cut) = limit_vector(Vector3::new(3e200, 4e200, 0.0), 1e300);
        assert!(!cut && v.x == 3e200);
        let (v, cut) = limit_vector(Vector3::new(3e-190, 4e-190, 0.0), 1e-200);
        assert!(cut && (v - Vector3::new(6e-201, 8e-201, 0.0)).amax() < 1e-215);
        let (_, cut) = limit_vector(Vector3::new(3e-200, 4e-200, 0.0), 1e-190);
        assert!(!cut);
        let (_, cut) = limit_vector(Vector3::new(3e-170, 0.0, 0.0), 1e-100);
        assert!(!cut);
        // A subnormal limit cannot be honoured in f64: refused.
        assert_eq!(
            DynamoJoint::new(
                JointConfig::ball(1.0, 1.0, 1e-310),
                ArrivalSettings::default()
            ),
            Err(DynamoError::Config(ConfigField::TorqueLimit))
        );
    }

    fn timed(q: UnitQuaternion<f64>, time_to_go_s: f64, inertia: JointInertia) -> Target {
        Target {
            arrival: Some(Arrival {
                time_to_go_s,
                inertia,
            }),
            ..world(q, [0.0; 3])
        }
    }

    #[test]
    fn arrival_gains_are_the_one_dimensional_solve_about_v() {
        let j = servo(1.0, 1.0, 1e6);
        let s = ArrivalSettings::default();
        let v = Vector3::new(2.0, -1.0, 2.0) / 3.0;
        // Moving about v away from the target at 0.5 rad/s.
        let child = BodyMotion {
            orientation: UnitQuaternion::identity(),
            angular_velocity_rad_s: v * -0.5 + Vector3::new(1.0, 2.0, 0.0),
        };
        let out = j
            .tick(
                &REST,
                &child,
                &Heading::IDENTITY,
                &timed(rot(v.into(), 0.8), 0.6, JointInertia::Scalar(0.5)),
            )
            .unwrap();
        let problem = ArrivalProblem {
            inertia_kgm2: 0.5,
            position_rad: 0.8,
            velocity_rad_s: 0.5 - Vector3::new(1.0, 2.0, 0.0).dot(&v),
            setpoint_rad: -s.pose_tolerance_rad,
            arrival_rad: 0.0,
            time_to_go_s: 0.6,
        };
        let limit = GainLimit::new(0.5, s.period_s, s.integrator, s.stability_margin).unwrap();
        let g = solve_arrival_gains(&problem).unwrap().clamp_to(&limit);
        assert!(!g.acted);
        assert_eq!(out.status, GainStatus::Tracking);
        let rel = |a: f64, b: f64| (a - b).abs() <= 1e-13 * b.abs();
        assert!(rel(out.stiffness_nm_per_rad, g.gains.stiffness_nm_per_rad));
        assert!(rel(out.damping_nms_per_rad, g.gains.damping_nms_per_rad));
        assert_eq!(out.axis_inertia_kgm2, Some(0.5));
        let (theta, rate) = out.error.along_axis();
        assert!((theta - 0.8).abs() < 1e-15 && (rate - problem.velocity_rad_s).abs() < 1e-14);
        let expected = v * (g.gains.stiffness_nm_per_rad * (0.8 + 0.05))
            - child.angular_velocity_rad_s * g.gains.damping_nms_per_rad;
        assert!(close(&out.torque_nm, &expected, 1e-14));
        // The tensor: about z, m_v = I_zz.
        let tensor = JointInertia::Tensor(Matrix3::from_diagonal(&Vector3::new(1.0, 2.0, 3.0)));
        let out = j
            .tick(
                &REST,
                &REST,
                &Heading::IDENTITY,
                &timed(rot([0.0, 0.0, 1.0], 0.5), 0.6, tensor),
            )
            .unwrap();
        assert_eq!(out.axis_inertia_kgm2, Some(3.0));
    }

    #[test]
    fn arrival_reports_clamps_infeasibility_and_holds() {
        let j = servo(1.0, 1.0, 1e6);
        let m = JointInertia::Scalar(0.5);
        let q = rot([0.0, 1.0, 0.0], 0.8);
        // 20 ms for 0.8 rad at 200 Hz: beyond the stable limit.
        let out = j
            .tick(&REST, &REST, &Heading::IDENTITY, &timed(q, 0.02, m))
            .unwrap();
        assert_eq!(out.status, GainStatus::GainClamped);
        let limit = GainLimit::new(0.5, 0.005, Integrator::SemiImplicitEuler, 0.8).unwrap();
        assert_eq!(out.damping_nms_per_rad, limit.max_damping_nms_per_rad);
        // Rushing at the target at 20 rad/s: no critically damped motion arrives.
        let fast = BodyMotion {
            angular_velocity_rad_s: Vector3::new(0.0, 20.0, 0.0),
            ..REST
        };
        let out = j
            .tick(&REST, &fast, &Heading::IDENTITY, &timed(q, 0.5, m))
            .unwrap();
        assert!(
            matches!(
                out.status,
                GainStatus::Infeasible(GainError::Unreachable { .. })
            ),
            "{out:?}"
        );
        assert!(out.torque_nm.iter().all(|v| v.is_finite()));
        // Time up: the hold, k = m·ω_n² = 50, γ = 2m·ω_n = 10, no re-aim.
        for t in [0.0, -1.0] {
            let out = j
                .tick(&REST, &REST, &Heading::IDENTITY, &timed(q, t, m))
                .unwrap();
            assert_eq!(out.status, GainStatus::Holding);
            assert!(
                (out.stiffness_nm_per_rad - 50.0).abs() < 1e-12
                    && (out.damping_nms_per_rad - 10.0).abs() < 1e-12
            );
            assert!(close(
                &out.torque_nm,
                &Vector3::new(0.0, 50.0 * 0.8, 0.0),
                1e-12
            ));
            assert_eq!(out.reaim_rad, 0.0);
        }
        // On the target exactly, moving: the hold's damping only.
        let spinning = BodyMotion {
            angular_velocity_rad_s: Vector3::new(0.0, 0.0, 1.0),
            ..REST
        };
        let out = j
            .tick(
                &REST,
                &spinning,
                &Heading::IDENTITY,
                &timed(UnitQuaternion::identity(), 0.3, m),
            )
            .unwrap();
        assert_eq!(out.status, GainStatus::Holding);
        assert!(close(&out.torque_nm, &Vector3::new(0.0, 0.0, -10.0), 1e-12));
        // A bad inertia is refused.
        for (inertia, e) in [
            (
                JointInertia::Scalar(0.0),
                DynamoError::NonPositive(Input::Inertia),
            ),
            (
                JointInertia::Scalar(f64::NAN),
                DynamoError::NonFinite(Input::Inertia),
            ),
            (
                JointInertia::Tensor(Matrix3::zeros()),
                DynamoError::NonPositive(Input::Inertia),
            ),
            (
                JointInertia::Tensor(Matrix3::from_element(f64::INFINITY)),
                DynamoError::NonFinite(Input::Inertia),
            ),
        ] {
            assert_eq!(
                j.tick(&REST, &REST, &Heading::IDENTITY, &timed(q, 0.5, inertia)),
                Err(e)
            );
        }
        assert_eq!(
            j.tick(&REST, &REST, &Heading::IDENTITY, &timed(q, f64::NAN, m)),
            Err(DynamoError::NonFinite(Input::TimeToGo))
        );
    }

    /// A free rigid body with isotropic inertia (so the motion about v is exactly 1-D) driven by
    /// the world servo's arrival gains at 200 Hz, integrated as Rapier does (semi-implicit Euler,
    /// the torque held over the step): it is at the target when the time is up (measured
    /// 0.36, 1.3 and 4.6 mrad off; the third starts turning off the axis).
    #[test]
    fn a_free_body_arrives_on_time() {
        let j = servo(0.0, 0.0, 1e6);
        let m = 0.2;
        let h = 0.005;
        for (axis, angle, w0, deadline) in [
            ([0.0, 0.0, 1.0], 1.0, [0.0; 3], 0.5),
            ([1.0, -2.0, 0.5], 2.5, [0.0; 3], 0.8),
            ([0.3, 1.0, 0.0], 0.6, [0.0, -1.0, 0.0], 0.4),
        ] {
            let target_q = rot(axis, angle);
            let mut body = moving(UnitQuaternion::identity(), w0);
            let steps = (deadline / h) as usize;
            for k in 0..steps {
                let t = k as f64 * h;
                let out = j
                    .tick(
                        &REST,
                        &body,
                        &Heading::IDENTITY,
                        &timed(target_q, deadline - t, JointInertia::Scalar(m)),
                    )
                    .unwrap();
                assert!(
                    !matches!(out.status, GainStatus::Infeasible(_)),
                    "{k}: {out:?}"
                );
                body.angular_velocity_rad_s += out.torque_nm * (h / m);
                body.orientation =
                    UnitQuaternion::from_scaled_axis(body.angular_velocity_rad_s * h)
                        * body.orientation;
            }
            let left = body.orientation.angle_to(&target_q);
            assert!(
                left < 0.01,
                "{axis:?} {angle}: {left} rad left at the deadline"
            );
        }
    }

    fn bip() -> [BodyInertia; 15] {
        // Cartwheel-3d's "Bip" masses and principal moments; rough positions (y up).
        let b = |mass_kg: f64, moi: [f64; 3], com: [f64; 3], q: UnitQuaternion<f64>| BodyInertia {
            mass_kg,
            principal_inertia_kgm2: Vector3::from(moi),
            orientation: q,
            com_m: Vector3::from(com),
        };
        let id = UnitQuaternion::identity();
        let tilt = rot([1.0, 0.0, 0.0], 0.2);
        [
            b(12.9, [0.0705, 0.11, 0.13], [0.0, 1.0, 0.0], id),
            b(22.5, [0.34, 0.21, 0.46], [0.0, 1.3, 0.0], id),
            b(5.2, [0.04, 0.02, 0.042], [0.0, 1.7, 0.0], id),
            b(2.2, [0.005, 0.02, 0.02], [0.0, 1.45, 0.3], tilt),
            b(1.7, [0.0024, 0.025, 0.025], [0.0, 1.2, 0.35], tilt),
            b(2.2, [0.005, 0.02, 0.02], [0.0, 1.45, -0.3], tilt),
            b(1.7, [0.0024, 0.025, 0.025], [0.0, 1.2, -0.35], tilt),
            b(6.6, [0.15, 0.022, 0.15], [0.0, 0.75, 0.1], id),
            b(3.2, [0.055, 0.007, 0.055], [0.0, 0.3, 0.1], id),
            b(1.0, [0.007, 0.008, 0.002], [0.05, 0.05, 0.1], id),
            b(0.2, [0.002, 0.002, 0.0005], [0.15, 0.02, 0.1], id),
            b(6.6, [0.15, 0.022, 0.15], [0.0, 0.75, -0.1], id),
            b(3.2, [0.055, 0.007, 0.055], [0.0, 0.3, -0.1], id),
            b(1.0, [0.007, 0.008, 0.002], [0.05, 0.05, -0.1], id),
            b(0.2, [0.002, 0.002, 0.0005], [0.15, 0.02, -0.1], id),
        ]
    }

    #[test]
    fn subtree_inertia_is_rotation_plus_parallel_axis() {
        let q = rot([0.3, 1.0, -0.5], 1.1);
        let d = Vector3::new(0.1, 0.2, 0.3);
        let body = BodyInertia {
            mass_kg: 2.0,
            principal_inertia_kgm2: d,
            orientation: q,
            com_m: Vector3::new(1.0, 2.0, 3.0),
        };
        let r = q.to_rotation_matrix();
        let own = r.matrix() * Matrix3::from_diagonal(&d) * r.matrix().transpose();
        let at_com = subtree_inertia_about(&body.com_m, &[body]).unwrap();
        assert!((at_com - own).norm() < 1e-15);
        let p = Vector3::new(0.5, -1.0, 2.0);
        let o = body.com_m - p;
        let about = subtree_inertia_about(&p, &[body]).unwrap();
        let expected = own + (Matrix3::identity() * o.norm_squared() - o * o.transpose()) * 2.0;
        assert!((about - expected).norm() < 1e-13);
        // About any axis through p: the body's own moment plus m·(distance of the centre from
        // the axis)².
        let v = Vector3::new(1.0, 1.0, -1.0).normalize();
        let direct = v.dot(&(own * v)) + 2.0 * o.cross(&v).norm_squared();
        assert!((v.dot(&(about * v)) - direct).abs() < 1e-13);
        // The whole Bip about its hip: symmetric, positive definite, sums.
        let bodies = bip();
        let hip = Vector3::new(0.0, 0.95, 0.1);
        let all = subtree_inertia_about(&hip, &bodies).unwrap();
        assert!((all - all.transpose()).norm() < 1e-12);
        assert!(all.cholesky().is_some());
        let parts = subtree_inertia_about(&hip, &bodies[..7]).unwrap()
            + subtree_inertia_about(&hip, &bodies[7..]).unwrap();
        assert!((all - parts).norm() < 1e-12);
        assert_eq!(subtree_inertia_about(&hip, &[]).unwrap(), Matrix3::zeros());
    }

    #[test]
    fn subtree_inertia_refuses_bad_bodies_by_index() {
        let bodies = bip();
        let at = |body, field| Input::Body { body, field };
        let with = |i: usize, f: &dyn Fn(&mut BodyInertia)| {
            let mut b = bodies;
            f(&mut b[i]);
            subtree_inertia_about(&Vector3::zeros(), &b).err()
        };
        assert_eq!(
            with(3, &|b| b.mass_kg = f64::NAN),
            Some(DynamoError::NonFinite(at(3, BodyField::Mass)))
        );
        assert_eq!(
            with(4, &|b| b.mass_kg = 0.0),
            Some(DynamoError::NonPositive(at(4, BodyField::Mass)))
        );
        assert_eq!(
            with(5, &|b| b.principal_inertia_kgm2.y = -1e-9),
            Some(DynamoError::NonPositive(at(5, BodyField::PrincipalInertia)))
        );
        assert_eq!(
            with(6, &|b| b.principal_inertia_kgm2.z = f64::INFINITY),
            Some(DynamoError::NonFinite(at(6, BodyField::PrincipalInertia)))
        );
        assert_eq!(
            with(7, &|b| b.orientation = UnitQuaternion::new_unchecked(
                Quaternion::new(0.5, 0.0, 0.0, 0.0)
            )),
            Some(DynamoError::NotUnitQuaternion(at(
                7,
                BodyField::Orientation
            )))
        );
        assert_eq!(
            with(8, &|b| b.com_m.x = f64::NAN),
            Some(DynamoError::NonFinite(at(8, BodyField::CentreOfMass)))
        );
        assert_eq!(
            with(9, &|b| b.com_m.x = 1e200),
            Some(DynamoError::OutOfRange)
        );
        assert_eq!(
            subtree_inertia_about(&Vector3::new(f64::NAN, 0.0, 0.0), &bodies),
            Err(DynamoError::NonFinite(Input::Point))
        );
    }

    #[test]
    fn every_input_is_checked() {
        let j = servo(10.0, 1.0, 100.0);
        let nan = f64::NAN;
        let bad_q = UnitQuaternion::new_unchecked(Quaternion::new(nan, 0.0, 0.0, 0.0));
        let long_q = UnitQuaternion::new_unchecked(Quaternion::new(1.0, 0.01, 0.0, 0.0));
        let bad_w = Vector3::new(0.0, f64::INFINITY, 0.0);
        let parent_target = Target {
            space: TargetSpace::Parent,
            ..world(UnitQuaternion::identity(), [0.0; 3])
        };
        let person_target = Target {
            space: TargetSpace::Person,
            ..parent_target
        };
        let run = |parent: BodyMotion, child: BodyMotion, h: Heading, t: Target| {
            j.tick(&parent, &child, &h, &t).err()
        };
        let h = Heading::IDENTITY;
        use DynamoError::{NonFinite, NotUnitQuaternion};
        assert_eq!(
            run(BodyMotion::at_rest(bad_q), REST, h, parent_target),
            Some(NonFinite(Input::ParentOrientation))
        );
        assert_eq!(
            run(BodyMotion::at_rest(long_q), REST, h, parent_target),
            Some(NotUnitQuaternion(Input::ParentOrientation))
        );
        assert_eq!(
            run(
                BodyMotion {
                    angular_velocity_rad_s: bad_w,
                    ..REST
                },
                REST,
                h,
                parent_target
            ),
            Some(NonFinite(Input::ParentAngularVelocity))
        );
        assert_eq!(
            run(REST, BodyMotion::at_rest(bad_q), h, parent_target),
            Some(NonFinite(Input::ChildOrientation))
        );
        assert_eq!(
            run(REST, BodyMotion::at_rest(long_q), h, parent_target),
            Some(NotUnitQuaternion(Input::ChildOrientation))
        );
        assert_eq!(
            run(
                REST,
                BodyMotion {
                    angular_velocity_rad_s: bad_w,
                    ..REST
                },
                h,
                parent_target
            ),
            Some(NonFinite(Input::ChildAngularVelocity))
        );
        assert_eq!(
            run(
                REST,
                REST,
                h,
                Target {
                    orientation: bad_q,
                    ..parent_target
                }
            ),
            Some(NonFinite(Input::TargetOrientation))
        );
        assert_eq!(
            run(
                REST,
                REST,
                h,
                Target {
                    orientation: long_q,
                    ..person_target
                }
            ),
            Some(NotUnitQuaternion(Input::TargetOrientation))
        );
        assert_eq!(
            run(
                REST,
                REST,
                h,
                Target {
                    angular_velocity_rad_s: bad_w,
                    ..person_target
                }
            ),
            Some(NonFinite(Input::TargetAngularVelocity))
        );
        assert_eq!(
            run(
                REST,
                REST,
                Heading {
                    yaw_rate_rad_s: nan,
                    ..h
                },
                person_target
            ),
            Some(NonFinite(Input::Heading))
        );
        assert_eq!(
            run(
                REST,
                REST,
                Heading {
                    rotation: long_q,
                    ..h
                },
                person_target
            ),
            Some(NotUnitQuaternion(Input::Heading))
        );
        // Heading only read for person space, the parent's velocity only for parent space.
        assert!(
            run(
                REST,
                REST,
                Heading {
                    yaw_rate_rad_s: nan,
                    ..h
                },
                parent_target
            )
            .is_none()
        );
        assert!(
            run(
                BodyMotion {
                    angular_velocity_rad_s: bad_w,
                    ..REST
                },
                REST,
                h,
                world(UnitQuaternion::identity(), [0.0; 3])
            )
            .is_none()
        );
        // Finite but overflowing.
        assert_eq!(
            run(
                REST,
                BodyMotion {
                    angular_velocity_rad_s: Vector3::new(1e308, 0.0, 0.0),
                    ..REST
                },
                h,
                world(UnitQuaternion::identity(), [-1e308, 0.0, 0.0])
            ),
            Some(DynamoError::OutOfRange)
        );
        assert_eq!(
            heading(&BodyMotion::at_rest(bad_q)),
            Err(NonFinite(Input::RootOrientation))
        );
        assert_eq!(
            heading(&BodyMotion {
                angular_velocity_rad_s: bad_w,
                ..REST
            }),
            Err(NonFinite(Input::RootAngularVelocity))
        );
        // Within the tolerance: accepted and re-normalised.
        let near = UnitQuaternion::new_unchecked(Quaternion::new(1.0 + 5e-6, 0.0, 0.0, 0.0));
        assert!(run(REST, BodyMotion::at_rest(near), h, parent_target).is_none());
    }

    /// Gains per unit inertia: the torque is the inertia tensor times the law's output with
    /// those gains, plus the feed-forward; arrival gains are those of a unit inertia whatever
    /// the target's; a non-finite tensor or feed-forward and a negative moment are refused.
    #[test]
    fn scaled_ticks_multiply_the_law_by_the_inertia() {
        let parent = BodyMotion::at_rest(rot([0.4, 1.0, -0.3], 0.9));
        let child = moving(rot([1.0, 0.2, 0.1], 0.5), [0.3, -0.4, 1.0]);
        let target = world(rot([0.0, 0.3, 1.0], -0.8), [0.0; 3]);
        let joint = DynamoJoint::new(
            JointConfig::ball(64.0, 16.0, 1e6),
            ArrivalSettings::default(),
        )
        .unwrap();
        let i = Matrix3::new(0.6, 0.01, 0.0, 0.01, 0.6, 0.02, 0.0, 0.02, 0.007);
        let ff = Vector3::new(1.0, -2.0, 0.5);
        let plain = joint
            .tick(&parent, &child, &Heading::IDENTITY, &target)
            .unwrap();
        let scaled = joint
            .tick_scaled(&parent, &child, &Heading::IDENTITY, &target, &i, &ff)
            .unwrap();
        assert!(close(&scaled.torque_nm, &(i * plain.torque_nm + ff), 1e-12));
        let timed = |m: f64| Target {
            arrival: Some(Arrival {
                time_to_go_s: 0.4,
                inertia: JointInertia::Scalar(m),
            }),
            ..target
        };
        let unit = joint
            .tick(&parent, &child, &Heading::IDENTITY, &timed(1.0))
            .unwrap();
        for m in [0.01, 1.0, 30.0] {
            let s = joint
                .tick_scaled(&parent, &child, &Heading::IDENTITY, &timed(m), &i, &ff)
                .unwrap();
            assert!(
                close(&s.torque_nm, &(i * unit.torque_nm + ff), 1e-12),
                "{m}"
            );
        }
        let mut bad = i;
        bad[(1, 2)] = f64::NAN;
        assert_eq!(
            joint.tick_scaled(&parent, &child, &Heading::IDENTITY, &target, &bad, &ff),
            Err(DynamoError::NonFinite(Input::Inertia))
        );
        let mut negative = i;
        negative[(2, 2)] = -0.1;
        assert_eq!(
            joint.tick_scaled(&parent, &child, &Heading::IDENTITY, &target, &negative, &ff),
            Err(DynamoError::NonPositive(Input::Inertia))
        );
        assert_eq!(
            joint.tick_scaled(
                &parent,
                &child,
                &Heading::IDENTITY,
                &target,
                &i,
                &Vector3::new(0.0, f64::INFINITY, 0.0)
            ),
            Err(DynamoError::NonFinite(Input::FeedForward))
        );
    }

    /// Gravity's torque about a point: a horizontal arm's weight about its shoulder, zero for a
    /// body straight below the point, and bad input refused.
    #[test]
    fn gravity_torque_is_the_moment_of_the_weights() {
        let body = |m: f64, c: [f64; 3]| BodyInertia {
            mass_kg: m,
            principal_inertia_kgm2: Vector3::new(0.01, 0.01, 0.01),
            orientation: UnitQuaternion::identity(),
            com_m: Vector3::new(c[0], c[1], c[2]),
        };
        let g = Vector3::new(0.0, -9.81, 0.0);
        let p = Vector3::new(0.0, 1.4, 0.2);
        // 2.2 kg at 0.17 m and 1.7 kg at 0.45 m along +z: about −x, 9.81·(0.374 + 0.765).
        let arm = [body(2.2, [0.0, 1.4, 0.37]), body(1.7, [0.0, 1.4, 0.65])];
        let t = gravity_torque_about(&p, &arm, &g).unwrap();
        assert!(
            close(
                &t,
                &Vector3::new(9.81 * (2.2 * 0.17 + 1.7 * 0.45), 0.0, 0.0),
                1e-12
            ),
            "{t:?}"
        );
        let hanging = [body(3.0, [0.0, 0.9, 0.2])];
        assert!(gravity_torque_about(&p, &hanging, &g).unwrap().norm() < 1e-12);
        assert_eq!(
            gravity_torque_about(&p, &arm, &Vector3::new(f64::NAN, 0.0, 0.0)),
            Err(DynamoError::NonFinite(Input::Gravity))
        );
        assert_eq!(
            gravity_torque_about(&p, &[body(0.0, [0.0; 3])], &g),
            Err(DynamoError::NonPositive(Input::Body {
                body: 0,
                field: BodyField::Mass
            }))
        );
    }

    /// Per-axis gains act about the parent's axes: a zero factor removes that axis's torque, a
    /// uniform factor scales the whole law, and arrival gains ignore them.
    #[test]
    fn axis_gains_act_about_the_parents_axes() {
        let parent = BodyMotion::at_rest(rot([0.4, 1.0, -0.3], 0.9));
        let child = moving(rot([1.0, 0.2, 0.1], 0.5), [0.3, -0.4, 1.0]);
        let target = world(rot([0.0, 0.3, 1.0], -0.8), [0.0; 3]);
        let with = |a: [f64; 3], t: &Target| {
            DynamoJoint::new(
                JointConfig {
                    axis_gains: Vector3::new(a[0], a[1], a[2]),
                    ..JointConfig::ball(100.0, 10.0, 1e6)
                },
                ArrivalSettings::default(),
            )
            .unwrap()
            .tick(&parent, &child, &Heading::IDENTITY, t)
            .unwrap()
        };
        let whole = with([1.0; 3], &target).torque_nm;
        let local = parent.orientation.inverse() * whole;
        let no_y = parent.orientation.inverse() * with([1.0, 0.0, 1.0], &target).torque_nm;
        assert!(no_y.y.abs() < 1e-12 * whole.norm(), "{no_y:?}");
        assert!((no_y.x - local.x).abs() < 1e-12 * whole.norm());
        assert!((no_y.z - local.z).abs() < 1e-12 * whole.norm());
        let shaped = parent.orientation.inverse() * with([0.3, 0.5, 2.0], &target).torque_nm;
        let expected = local.component_mul(&Vector3::new(0.3, 0.5, 2.0));
        assert!(close(&shaped, &expected, 1e-12));
        assert!(close(
            &with([2.0; 3], &target).torque_nm,
            &(whole * 2.0),
            1e-12
        ));
        let timed = Target {
            arrival: Some(Arrival {
                time_to_go_s: 0.4,
                inertia: JointInertia::Scalar(0.5),
            }),
            ..target
        };
        assert_eq!(
            with([0.0, 0.5, 3.0], &timed).torque_nm,
            with([1.0; 3], &timed).torque_nm
        );
    }

    #[test]
    fn joint_and_arrival_configs_are_checked() {
        let ok = JointConfig::ball(10.0, 1.0, 5.0);
        let refused = |c: JointConfig, a: ArrivalSettings| DynamoJoint::new(c, a).err();
        let a = ArrivalSettings::default();
        let f = |field| Some(DynamoError::Config(field));
        assert_eq!(
            refused(
                JointConfig {
                    stiffness_nm_per_rad: -1.0,
                    ..ok
                },
                a
            ),
            f(ConfigField::Stiffness)
        );
        assert_eq!(
            refused(
                JointConfig {
                    damping_nms_per_rad: f64::NAN,
                    ..ok
                },
                a
            ),
            f(ConfigField::Damping)
        );
        for bad in [-1e-300, f64::NAN, f64::INFINITY] {
            assert_eq!(
                refused(
                    JointConfig {
                        axis_gains: Vector3::new(1.0, bad, 1.0),
                        ..ok
                    },
                    a
                ),
                f(ConfigField::AxisGains)
            );
        }
        assert_eq!(
            refused(
                JointConfig {
                    torque_limit_nm: 0.0,
                    ..ok
                },
                a
            ),
            f(ConfigField::TorqueLimit)
        );
        assert_eq!(
            refused(ok, ArrivalSettings { period_s: 0.0, ..a }),
            f(ConfigField::Arrival(ArrivalField::Period))
        );
        assert_eq!(
            refused(
                ok,
                ArrivalSettings {
                    stability_margin: 1.5,
                    ..a
                }
            ),
            f(ConfigField::Arrival(ArrivalField::Margin))
        );
        assert_eq!(
            refused(
                ok,
                ArrivalSettings {
                    hold_natural_freq_rad_s: f64::INFINITY,
                    ..a
                }
            ),
            f(ConfigField::Arrival(ArrivalField::HoldFrequency))
        );
        assert_eq!(
            refused(
                ok,
                ArrivalSettings {
                    pose_tolerance_rad: -0.1,
                    ..a
                }
            ),
            f(ConfigField::Arrival(ArrivalField::PoseTolerance))
        );
        assert!(DynamoJoint::new(JointConfig::ball(0.0, 0.0, 1.0), a).is_ok());
    }

    /// The Bip's 14 joints as (parent, child).
    const BIP_JOINTS: [(usize, usize); 14] = [
        (0, 1),
        (1, 2),
        (1, 3),
        (3, 4),
        (1, 5),
        (5, 6),
        (0, 7),
        (7, 8),
        (8, 9),
        (9, 10),
        (0, 11),
        (11, 12),
        (12, 13),
        (13, 14),
    ];

    fn bip_servo() -> PoseServo<14> {
        let specs = BIP_JOINTS.map(|(parent, child)| PoseJointSpec {
            parent,
            child,
            config: JointConfig::ball(300.0, 30.0, 500.0),
        });
        PoseServo::new(15, 0, &specs, ArrivalSettings::default()).unwrap()
    }

    #[test]
    fn a_pose_servo_ticks_every_joint_and_names_the_failing_one() {
        let servo = bip_servo();
        let mut bodies = [REST; 15];
        for (i, b) in bodies.iter_mut().enumerate() {
            let f = i as f64;
            *b = moving(rot([f.sin(), 1.0, f.cos()], 0.1 * f), [0.1 * f, -0.2, 0.3]);
        }
        let targets: [Target; 14] = core::array::from_fn(|i| Target {
            space: [TargetSpace::Parent, TargetSpace::World, TargetSpace::Person][i % 3],
            ..world(rot([1.0, 0.0, i as f64], 0.2), [0.0; 3])
        });
        let command = servo.tick(&bodies, &targets).unwrap();
        let h = heading(&bodies[0]).unwrap();
        assert_eq!(command.heading, h);
        for (k, (&(p, c), out)) in BIP_JOINTS.iter().zip(command.joints.iter()).enumerate() {
            let alone = servo
                .joint(k)
                .unwrap()
                .tick(&bodies[p], &bodies[c], &h, &targets[k])
                .unwrap();
            assert_eq!(*out, alone);
        }
        assert_eq!(
            command.limited,
            command.joints.iter().filter(|j| j.limited).count()
        );
        // Errors name the joint (or the root).
        let mut broken = bodies;
        broken[9].angular_velocity_rad_s.x = f64::NAN;
        // Body 9 is the child of joint 8 (first) and the parent of joint 9.
        assert_eq!(
            servo.tick(&broken, &targets),
            Err(PoseError {
                joint: Some(8),
                error: DynamoError::NonFinite(Input::ChildAngularVelocity)
            })
        );
        broken = bodies;
        broken[0].orientation = UnitQuaternion::new_unchecked(Quaternion::new(2.0, 0.0, 0.0, 0.0));
        assert_eq!(
            servo.tick(&broken, &targets).err().map(|e| e.joint),
            Some(None)
        );
        assert_eq!(
            servo.tick(&bodies[..14], &targets),
            Err(PoseError {
                joint: None,
                error: DynamoError::NoSuchBody { index: 14, len: 14 }
            })
        );
        let spec = |parent, child| PoseJointSpec {
            parent,
            child,
            config: JointConfig::ball(1.0, 1.0, 1.0),
        };
        let index = DynamoError::Config(ConfigField::BodyIndex);
        assert_eq!(
            PoseServo::new(3, 3, &[spec(0, 1)], ArrivalSettings::default()),
            Err(PoseError {
                joint: None,
                error: index
            })
        );
        assert_eq!(
            PoseServo::new(3, 0, &[spec(0, 1), spec(1, 3)], ArrivalSettings::default()),
            Err(PoseError {
                joint: Some(1),
                error: index
            })
        );
        assert_eq!(
            PoseServo::new(3, 0, &[spec(0, 1), spec(2, 2)], ArrivalSettings::default()),
            Err(PoseError {
                joint: Some(1),
                error: index
            })
        );
        assert_eq!(
            PoseServo::new(
                3,
                0,
                &[
                    spec(0, 1),
                    PoseJointSpec {
                        config: JointConfig::ball(-1.0, 1.0, 1.0),
                        ..spec(1, 2)
                    }
                ],
                ArrivalSettings::default()
            ),
            Err(PoseError {
                joint: Some(1),
                error: DynamoError::Config(ConfigField::Stiffness)
            })
        );
    }

    /// Any f64 in the ways the tests want it: ordinary values mostly, arbitrary bit patterns
    /// (NaN, infinities, subnormals, huge) sometimes.
    fn any_f64() -> impl Strategy<Value = f64> {
        prop_oneof![
            6 => -10.0..10.0f64,
            1 => any::<u64>().prop_map(f64::from_bits),
            1 => prop::sample::select(vec![0.0, -0.0, f64::NAN, f64::INFINITY, f64::NEG_INFINITY, 1e308, -1e308, 5e-324, 1e-300]),
        ]
    }

    fn unit_quaternion() -> impl Strategy<Value = UnitQuaternion<f64>> {
        (-1.0..1.0f64, -1.0..1.0f64, -1.0..1.0f64, -1.0..1.0f64)
            .prop_filter("not too short", |(w, x, y, z)| {
                w * w + x * x + y * y + z * z > 1e-3
            })
            .prop_map(|(w, x, y, z)| UnitQuaternion::from_quaternion(Quaternion::new(w, x, y, z)))
    }

    fn vector(range: f64) -> impl Strategy<Value = Vector3<f64>> {
        (-range..range, -range..range, -range..range).prop_map(|(x, y, z)| Vector3::new(x, y, z))
    }

    // Boxed: the no-panic test draws 15 inputs, and their value trees unboxed overflowed the
    // 2 MB test thread's stack in a debug build.
    fn raw_quaternion() -> BoxedStrategy<UnitQuaternion<f64>> {
        prop_oneof![
            4 => unit_quaternion(),
            1 => (any_f64(), any_f64(), any_f64(), any_f64())
                .prop_map(|(w, x, y, z)| UnitQuaternion::new_unchecked(Quaternion::new(w, x, y, z))),
        ]
        .boxed()
    }

    fn raw_vector() -> BoxedStrategy<Vector3<f64>> {
        prop_oneof![4 => vector(50.0), 1 => (any_f64(), any_f64(), any_f64()).prop_map(|(x, y, z)| Vector3::new(x, y, z))]
            .boxed()
    }

    fn space() -> impl Strategy<Value = TargetSpace> {
        prop::sample::select(vec![
            TargetSpace::Parent,
            TargetSpace::World,
            TargetSpace::Person,
        ])
    }

    fn finite(v: &Vector3<f64>) -> bool {
        v.iter().all(|c| c.is_finite())
    }

    /// |v| without over- or underflow in the squares.
    fn norm(v: &Vector3<f64>) -> f64 {
        let big = v.amax();
        if big == 0.0 {
            return 0.0;
        }
        big * (v / big).norm()
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(4096))]

        /// Random orientations and velocities in every space, fixed or arrival gains: the torque
        /// is finite, within the limit, and the limit flag says whether it was cut.
        #[test]
        fn outputs_are_finite_and_within_the_limit(
            parent in unit_quaternion(), child in unit_quaternion(), target in unit_quaternion(),
            root in unit_quaternion(),
            wp in vector(50.0), wc in vector(50.0), wt in vector(50.0), wr in vector(50.0),
            space in space(),
            kp in 0.0..1e4f64, kd in 0.0..1e3f64, limit in 1e-3..1e3f64,
            timing in prop::option::of((-0.1..2.0f64, 1e-3..10.0f64, prop::bool::ANY)),
        ) {
            let j = DynamoJoint::new(JointConfig::ball(kp, kd, limit), ArrivalSettings::default()).unwrap();
            let h = heading(&moving(root, wr.into())).unwrap();
            let arrival = timing.map(|(t, m, tensor)| Arrival {
                time_to_go_s: t,
                inertia: if tensor {
                    JointInertia::Tensor(Matrix3::from_diagonal(&Vector3::new(m, 2.0 * m, 0.5 * m)))
                } else {
                    JointInertia::Scalar(m)
                },
            });
            let target = Target { space, orientation: target, angular_velocity_rad_s: wt, arrival };
            let out = j.tick(&moving(parent, wp.into()), &moving(child, wc.into()), &h, &target).unwrap();
            prop_assert!(finite(&out.torque_nm) && finite(&out.requested_nm));
            prop_assert!(norm(&out.torque_nm) <= limit * (1.0 + 1e-12));
            prop_assert_eq!(out.limited, norm(&out.requested_nm) > limit);
            prop_assert!(out.stiffness_nm_per_rad.is_finite() && out.damping_nms_per_rad.is_finite());
            prop_assert!(out.error.rotation.angle_rad >= 0.0 && out.error.rotation.angle_rad <= PI);
        }

        /// With no velocity anywhere, the world servo's torque lies along +v.
        #[test]
        fn a_resting_world_servo_pushes_along_v(
            child in unit_quaternion(), target in unit_quaternion(), kp in 1e-3..1e4f64,
            timing in prop::option::of((0.05..2.0f64, 1e-2..10.0f64)),
        ) {
            let j = DynamoJoint::new(JointConfig::ball(kp, 10.0, 1e9), ArrivalSettings::default()).unwrap();
            let arrival = timing.map(|(t, m)| Arrival { time_to_go_s: t, inertia: JointInertia::Scalar(m) });
            let out = j
                .tick(&REST, &BodyMotion::at_rest(child), &Heading::IDENTITY, &Target { arrival, ..world(target, [0.0; 3]) })
                .unwrap();
            let v = out.error.rotation.axis;
            prop_assert!(out.torque_nm.cross(&v).norm() <= 1e-12 * out.torque_nm.norm());
            prop_assert!(out.torque_nm.dot(&v) >= 0.0);
            let expected = kp * out.error.rotation.angle_rad;
            if timing.is_none() {
                prop_assert!((out.torque_nm.norm() - expected).abs() <= 1e-12 * (1.0 + expected));
            }
        }

        /// The root spring never pushes about the vertical, never exceeds τ_max, never NaNs.
        #[test]
        fn the_root_spring_has_no_vertical_component(
            q in unit_quaternion(), w in vector(100.0),
            kp in 0.0..1e4f64, kd in 0.0..1e3f64, max in 1e-3..1e3f64, extra in 0.0..1e3f64,
            tilt in prop::option::of(0.01..PI),
        ) {
            let mut s = RootSpring::new(RootSpringConfig {
                stiffness_nm_per_rad: kp,
                damping_nms_per_rad: kd,
                max_torque_nm: max,
                break_torque_nm: Some(max + extra),
                break_tilt_rad: tilt,
            }).unwrap();
            let out = s.tick(&q, &w).unwrap();
            prop_assert_eq!(out.torque_nm.y, 0.0);
            prop_assert_eq!(out.balance_torque_nm.y, 0.0);
            prop_assert!(finite(&out.torque_nm) && finite(&out.balance_torque_nm));
            prop_assert!(out.torque_nm.norm() <= max * (1.0 + 1e-12));
            let n = out.balance_torque_nm.norm();
            let state = if n > max + extra || tilt.is_some_and(|a| out.tilt_rad > a) {
                SpringState::Broken
            } else if n > max {
                SpringState::Saturated
            } else {
                SpringState::Holding
            };
            prop_assert_eq!(out.state, state);
            // The balance torque turns the root's up towards world +y (or is zero).
            if kd == 0.0 && out.tilt_rad > 1e-6 && out.tilt_rad < PI - 1e-6 {
                let up = q * Vector3::y();
                prop_assert!(out.balance_torque_nm.cross(&up).dot(&Vector3::y()) >= 0.0);
            }
        }

        /// The heading is finite and yaw-only for any orientation and velocity, and faces the
        /// root's horizontal +x where it reads +x.
        #[test]
        fn the_heading_is_a_finite_yaw(q in unit_quaternion(), w in vector(100.0)) {
            let h = heading(&moving(q, w.into())).unwrap();
            prop_assert!(h.yaw_rad.is_finite() && h.yaw_rate_rad_s.is_finite());
            let r = h.rotation.as_ref().coords;
            prop_assert!(r.x == 0.0 && r.z == 0.0 && (r.norm() - 1.0).abs() < 1e-15);
            if h.source == HeadingSource::LocalX {
                let x = q * Vector3::x();
                let facing = h.rotation * Vector3::x();
                let flat = Vector3::new(x.x, 0.0, x.z).normalize();
                prop_assert!((facing - flat).norm() < 1e-12);
            }
        }

        /// The subtree inertia is symmetric and positive semi-definite, and vᵀIv about a point is
        /// Σ (own moment about the parallel axis through the centre + m·distance²).
        #[test]
        fn subtree_inertia_is_a_symmetric_tensor(
            bodies in prop::collection::vec((1e-3..100.0f64, vector(1.0), unit_quaternion(), vector(2.0)), 0..16),
            point in vector(2.0), v in unit_quaternion(),
        ) {
            let bodies: Vec<BodyInertia> = bodies.into_iter().map(|(m, d, q, c)| BodyInertia {
                mass_kg: m, principal_inertia_kgm2: d.abs(), orientation: q, com_m: c,
            }).collect();
            let t = subtree_inertia_about(&point, &bodies).unwrap();
            prop_assert!((t - t.transpose()).norm() <= 1e-12 * (1.0 + t.norm()));
            let axis = v * Vector3::x();
            let direct: f64 = bodies.iter().map(|b| {
                let local = b.orientation.inverse() * axis;
                local.component_mul(&local).dot(&b.principal_inertia_kgm2)
                    + b.mass_kg * (b.com_m - point).cross(&axis).norm_squared()
            }).sum();
            prop_assert!((axis.dot(&(t * axis)) - direct).abs() <= 1e-12 * (1.0 + direct));
            prop_assert!(axis.dot(&(t * axis)) >= -1e-12);
        }

        /// Nothing panics on any input (NaN, infinities, huge, subnormal, non-unit quaternions),
        /// and whatever is returned is finite.
        #[test]
        fn nothing_panics_and_nothing_non_finite_escapes(
            parent in raw_quaternion(), child in raw_quaternion(), target in raw_quaternion(),
            root in raw_quaternion(),
            wp in raw_vector(), wc in raw_vector(), wt in raw_vector(), wr in raw_vector(),
            space in space(),
            kp in any_f64(), kd in any_f64(), limit in any_f64(), axis in raw_vector(),
            axis_gains in raw_vector(),
            timing in prop::option::of((any_f64(), any_f64(), prop::bool::ANY)),
            spring in (any_f64(), any_f64(), any_f64(), any_f64(), any_f64()),
        ) {
            let kind = if axis.x > 0.0 { JointKind::Hinge { axis } } else if axis.y > 0.0 {
                JointKind::TwoAxis { axes: [axis, Vector3::x()] }
            } else { JointKind::Ball };
            let h = heading(&moving(root, wr.into()));
            if let Ok(h) = &h {
                prop_assert!(h.yaw_rad.is_finite() && h.yaw_rate_rad_s.is_finite());
            }
            let h = h.unwrap_or(Heading::IDENTITY);
            if let Ok(j) = DynamoJoint::new(JointConfig { kind, stiffness_nm_per_rad: kp, damping_nms_per_rad: kd, torque_limit_nm: limit, axis_gains }, ArrivalSettings::default()) {
                let arrival = timing.map(|(t, m, tensor)| Arrival {
                    time_to_go_s: t,
                    inertia: if tensor { JointInertia::Tensor(Matrix3::from_diagonal(&Vector3::new(m, m, 1.0))) } else { JointInertia::Scalar(m) },
                });
                let target = Target { space, orientation: target, angular_velocity_rad_s: wt, arrival };
                if let Ok(out) = j.tick(&moving(parent, wp.into()), &moving(child, wc.into()), &h, &target) {
                    prop_assert!(finite(&out.torque_nm) && finite(&out.requested_nm) && finite(&out.absorbed_nm));
                    prop_assert!(norm(&out.torque_nm) <= limit * (1.0 + 1e-12));
                    prop_assert!(out.stiffness_nm_per_rad.is_finite() && out.damping_nms_per_rad.is_finite());
                }
                let tensor = Matrix3::new(kd, wr.x, wr.y, wr.x, kp, wr.z, wr.y, wr.z, limit);
                if let Ok(out) = j.tick_scaled(&moving(parent, wp.into()), &moving(child, wc.into()), &h, &target, &tensor, &wt) {
                    prop_assert!(finite(&out.torque_nm) && finite(&out.requested_nm) && finite(&out.absorbed_nm));
                    prop_assert!(norm(&out.torque_nm) <= limit * (1.0 + 1e-12));
                }
            }
            let (k, d, m, b, a) = spring;
            if let Ok(mut s) = RootSpring::new(RootSpringConfig {
                stiffness_nm_per_rad: k, damping_nms_per_rad: d, max_torque_nm: m,
                break_torque_nm: (b >= 0.0).then_some(b), break_tilt_rad: (a >= 0.0).then_some(a),
            }) && let Ok(out) = s.tick(&root, &wr)
            {
                prop_assert!(finite(&out.torque_nm) && finite(&out.balance_torque_nm) && out.tilt_rad.is_finite());
                prop_assert_eq!(out.torque_nm.y, 0.0);
            }
            let body = BodyInertia { mass_kg: kp, principal_inertia_kgm2: axis, orientation: child, com_m: wc };
            if let Ok(t) = gravity_torque_about(&wp, &[body, body], &wt) {
                prop_assert!(finite(&t));
            }
            if let Ok(t) = subtree_inertia_about(&wp, &[body, body]) {
                prop_assert!(t.iter().all(|v| v.is_finite()));
            }
        }
    }
}
