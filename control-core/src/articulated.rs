//! A fixed-capacity articulated model: a fixed-base serial chain of up to `N` revolute joints
//! (capacity in the type, no allocation), with what a controller of the chain needs every tick:
//! forward kinematics, point Jacobians, gravity torques, the joint-space mass matrix (CRBA), the
//! composite inertia about each joint axis in O(n), inverse dynamics (recursive Newton–Euler),
//! the parent feed-forward of "On the Beat!" (Allen, Chu, Shapiro, Faloutsos, SCA 2007), and
//! per-joint Lambert-W arrival gains solved on that composite inertia ([`ChainArrival`]).
//!
//! Must never allocate, block or panic, whatever the input: every model is validated when it is
//! built ([`ChainError`] names the link and the field), every evaluation checks its inputs and
//! its outputs ([`ModelError`]: a NaN or infinite input is refused, and a result that is not a
//! finite f64 — finite parameters and inputs whose products overflow — is
//! [`ModelError::OutOfRange`]), so no NaN ever leaves this module. Only fixed-size `nalgebra`
//! types are used, indices are checked (`get`, iterators), and nothing here loops longer than
//! O(N²).
//!
//! ```
//! use control_core::articulated::nalgebra::Vector3;
//! use control_core::articulated::{ArrivalSettings, Chain, ChainArrival, Coupling, JointTarget, LinkSpec};
//! // Two 1 m, 2 kg rods about +z, the second hinged at the tip of the first.
//! let rod = LinkSpec {
//!     origin_xyz_m: [0.0; 3],
//!     origin_rpy_rad: [0.0; 3],
//!     axis: [0.0, 0.0, 1.0],
//!     mass_kg: 2.0,
//!     com_m: [0.5, 0.0, 0.0],
//!     inertia_kgm2: [0.003, 0.0, 0.0, 0.168, 0.0, 0.168],
//! };
//! let chain = Chain::<4>::new(&[rod, LinkSpec { origin_xyz_m: [1.0, 0.0, 0.0], ..rod }])?;
//! let q = [0.3, -0.5, 0.0, 0.0]; // capacity 4, two joints: the rest is not read
//! let kin = chain.forward_kinematics(&q)?;
//! let m = kin.mass_matrix()?;
//! let composite = kin.composite()?;
//! assert!((composite.axis_inertia()[0] - m[(0, 0)]).abs() < 1e-12);
//! // One control tick: both joints to 1 rad in 0.5 s.
//! let arrival = ChainArrival::new(ArrivalSettings::default(), Coupling::ParentFeedforward)?;
//! let target = JointTarget { pose_rad: 1.0, time_to_go_s: 0.5 };
//! let gravity = Vector3::new(0.0, -9.81, 0.0);
//! let command = arrival.tick(&chain, &q, &[0.0; 4], &[target; 4], &gravity)?;
//! assert_eq!(command.joints().len(), 2);
//! # Ok::<(), Box<dyn core::error::Error>>(())
//! ```
//!
//! # Conventions (those of URDF)
//! - The base link is fixed and its frame is the world frame.
//! - Link `i` hangs from link `i − 1` (the base for `i = 0`) by joint `i`. The joint frame, which
//!   is link `i`'s frame, sits at `origin` relative to the parent link's frame at q = 0
//!   (translation `xyz`, then fixed-axis roll–pitch–yaw: R = R_z(yaw)·R_y(pitch)·R_x(roll), as
//!   URDF's `<joint><origin>`), and turns by q_i about the unit `axis` given in the joint frame:
//!   T_i = T_{i−1} · origin_i · Rot(axis_i, q_i).
//! - Each link's centre of mass and its inertia tensor about the centre of mass are given in the
//!   link frame (URDF's `<inertial>` with a rotation-free `<origin>`; a rotated inertial frame
//!   must be rotated into the link frame first).
//! - q_i > 0 turns counter-clockwise about the axis (right-hand rule). Torques are positive in
//!   the same sense. Gravity g is a world vector (m/s², e.g. (0, −9.81, 0)).
//!
//! # The quantities
//! Below, for joint i: s_i its unit axis and d_i its position (both world), and for the subtree
//! of links i..n−1 (link i and everything it carries): M_i its mass, c_i its centre of mass and
//! D_i its inertia tensor about c_i (all world). [`Kinematics`] holds the world frames;
//! [`Composite`] the subtrees.
//! - **Point Jacobian** of a point p on link k: column j ≤ k is s_j × (p − d_j), columns j > k
//!   are zero ([`Kinematics::point_jacobian`]); the angular Jacobian has s_j
//!   ([`Kinematics::angular_jacobian`]).
//! - **Composite inertia about the joint axis**, the subtree taken as one rigid body turning
//!   about the joint line (parallel-axis theorem), slide 001:
//!   m_i = s_i·D_i s_i + M_i ‖(c_i − d_i) × s_i‖². The subtrees are accumulated leaf to root,
//!   each link merged in O(1): M ← M + m, c ← c + (m/M′)(c_link − c),
//!   D ← D + I_link + μ(‖δ‖²𝟙 − δδᵀ) with δ = c_link − c and μ = Mm/(M + m) the reduced mass
//!   ([`Chain::forward_kinematics`] then [`Kinematics::composite`]). **For a serial chain
//!   m_i = M_ii exactly**: the diagonal of the joint-space mass matrix is the inertia the subtree
//!   shows to its own joint when every other joint is held (the tests check 1e−9 relative on
//!   random chains and configurations).
//! - **Mass matrix (CRBA)**: a unit acceleration of joint i alone (at rest) asks of subtree i the
//!   force f_i = M_i s_i × (c_i − d_i) and, about c_i, the moment D_i s_i; joint j ≤ i feels
//!   M_ji = s_j · (D_i s_i + (c_i − d_j) × f_i). The upper triangle is formed so, the lower one
//!   copied ([`Composite::mass_matrix`]); M = Σ_k J_kᵀ m_k J_k + J_ω,kᵀ I_k J_ω,k (tested).
//! - **Gravity torques**: the torque each joint must apply to hold the chain still against
//!   gravity, τ_g = ∂V/∂q with V = −Σ m_k g·c_k, i.e. τ_g,i = s_i · (g × M_i(c_i − d_i))
//!   ([`Composite::gravity_torques`]). This is the *holding* torque, the feed-forward to add: the
//!   negative of the torque gravity exerts ([`crate::model::ArmModel::gravity_torque_nm`]).
//! - **Inverse dynamics (recursive Newton–Euler, world frame)**: τ = M(q)q̈ + c(q, q̇) + τ_g(q)
//!   ([`Kinematics::inverse_dynamics`]), c the centripetal and Coriolis torques, τ_g the holding
//!   torque above. Here m_k, c_k, I_k are link k's own mass, centre and inertia about c_k (world
//!   axes), not its subtree's. Forward pass, root to leaf, from ω_{−1} = ω̇_{−1} = 0 and the
//!   base's acceleration −g (which puts gravity into every link); d_i is a point of link i − 1:
//!
//!   ```text
//!   ω_i     = ω_{i−1} + s_i q̇_i
//!   ω̇_i     = ω̇_{i−1} + s_i q̈_i + ω_{i−1} × s_i q̇_i
//!   a_{d,0} = −g
//!   a_{d,i} = a_{d,i−1} + ω̇_{i−1} × (d_i − d_{i−1}) + ω_{i−1} × (ω_{i−1} × (d_i − d_{i−1}))
//!   a_{c,i} = a_{d,i} + ω̇_i × (c_i − d_i) + ω_i × (ω_i × (c_i − d_i))
//!   ```
//!
//!   Backward pass, leaf to root, from f_n = n_n = 0: the force f_i and the moment n_i about
//!   d_i that joint i passes to links i..n−1, and the joint torque:
//!
//!   ```text
//!   f_i = m_i a_{c,i} + f_{i+1}
//!   n_i = I_i ω̇_i + ω_i × I_i ω_i + (c_i − d_i) × m_i a_{c,i} + n_{i+1} + (d_{i+1} − d_i) × f_{i+1}
//!   τ_i = s_i · n_i
//!   ```
//!
//!   At rest without gravity it is M q̈, held still it is τ_g, and with q̈ = 0 and no gravity it
//!   is the Lagrangian c = Ṁq̇ − ½ ∂(q̇ᵀMq̇)/∂q (the tests check all three).
//!
//! # The parent feed-forward, and how the slide is read
//! The slide (seed 001) gives a_i = Σ_{j<i} (τ_j/m_j) G_j s_j, "the total angular acceleration at
//! joint i in world coordinates", and adds a_i·(G s_i) to joint i's PD torque. As printed that
//! adds an acceleration to a torque. Read as **m_i·(a_i·s_i)** it is a torque: the torque joint i
//! must add so that its subtree, treated as rigid about its axis (inertia m_i), turns with the
//! world angular acceleration its ancestors impose, and its own angle is left to its own PD.
//! What is computed ([`Composite::parent_feedforward`], root to leaf, O(n)):
//!
//!   a_0 = 0,  a_{i+1} = a_i + (τ_i/m_i) s_i,  ff_i = m_i (a_i · s_i),
//!
//! where τ_j is joint j's own **drive** torque (its PD / arrival torque), not its total: τ_j/m_j
//! is then the acceleration joint j commands relative to its parent, and a_i the sum of those
//! relative accelerations along the chain. Adding a parent's own feed-forward (or its gravity
//! torque) into τ_j would count the grandparents' accelerations twice (that part of τ_j only
//! makes link j follow them) and count holding torques as motion. The G_j^w of the slide are the
//! world rotations that turn each s_j into the world s_j used here. This is the slide's
//! approximation: the exact coupling is Σ_{j≠i} M_ij q̈_j plus the velocity terms c_i, of which
//! it keeps m_i(s_i·s_j)q̈_j for the ancestors j < i. It is [`ChainArrival`]'s default
//! ([`Coupling::ParentFeedforward`]); [`Coupling::InverseDynamics`] compensates the exact
//! coupling instead: every joint's drive is read as the acceleration q̈_i = drive_i/m_i of the
//! double integrator its arrival solve assumes, and the torque is τ = M q̈ + c + τ_g, so that
//! with an exact model each joint is that double integrator. On a simulated 3-link arm
//! (tested) it passes every keyframe within 1.3e−4 rad, where the parent feed-forward misses by
//! up to 0.7 rad or diverges: the gains clamped to the period's limit for m_i = M_ii exceed the
//! limit of the coupled arm, whose effective inertia 1/(M⁻¹)_ii is smaller.
//!
//! # Costs (measured)
//! `cargo bench -p control-core --bench articulated -- --warm-up-time 1 --measurement-time 3`,
//! x86-64 baseline build (SSE2, no FMA), on a shared 2-core machine under other jobs (load
//! average 2–5): the lowest median of three runs; the other runs were up to 2.4× higher.
//!
//! | | 3 joints | 28 joints |
//! |---|---|---|
//! | [`ChainArrival::tick`] (kinematics, composite inertia, gravity, one arrival solve per joint, feed-forward, torques) | 0.61 µs | 4.9 µs |
//! | [`Chain::forward_kinematics`] (one `sincos` and ~250 flops per link) | 0.24 µs | 1.4 µs |
//! | [`Kinematics::composite`] (~100 flops per link) | 0.08 µs | 0.57 µs |
//! | [`Kinematics::mass_matrix`] (composite, then ~20 flops per upper-triangle entry) | 0.13 µs | 2.0 µs |
//! | [`ChainArrival::tick`] with [`Coupling::InverseDynamics`] (the tick, then one Newton–Euler pass)¹ | 0.67 µs | 7.0 µs |
//! | [`Kinematics::inverse_dynamics`] (~200 flops per link)¹ | 0.07 µs | 0.78 µs |
//!
//! ¹ Measured later, under a load average of 4–4.5, the lowest median of two runs; the plain
//! tick measured 0.60 µs and 5.7 µs in the same runs (the noise is ±30 %), so the inverse
//! dynamics pass adds about the cost of [`Kinematics::inverse_dynamics`] alone.
//!
//! Of the 28-joint tick about 2.9 µs (≈ 100 ns per joint) is the arrival solve
//! ([`solve_arrival_gains`]: one Lambert W and a few `exp`/`ln`, the same cost per solve as in
//! the servo bench), whether or not some joints take the fallback (a set of targets where every
//! solve is exact costs the same); kinematics and composite inertia cost about 2 µs.

use core::fmt;

/// The `nalgebra` whose fixed-size types this module takes and returns (its vectors, matrices and
/// isometries), for callers that do not depend on it themselves.
pub use nalgebra;
use nalgebra::{
    Isometry3, IsometryMatrix3, Matrix3, Rotation3, SMatrix, SVector, Translation3, Vector3,
};

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
/// from body i (so link i is body i + 1). More links than `N` is
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

/// A field of a [`LinkSpec`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum LinkField {
    /// [`LinkSpec::origin_xyz_m`].
    OriginXyz,
    /// [`LinkSpec::origin_rpy_rad`].
    OriginRpy,
    /// [`LinkSpec::axis`].
    Axis,
    /// [`LinkSpec::mass_kg`].
    Mass,
    /// [`LinkSpec::com_m`].
    CentreOfMass,
    /// [`LinkSpec::inertia_kgm2`].
    Inertia,
}

/// Why a chain could not be built. `link` counts from 0 at the root.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ChainError {
    /// More links than the chain's capacity `N`.
    CapacityExceeded {
        /// The capacity.
        capacity: usize,
    },
    /// A chain needs at least one link.
    Empty,
    /// A field holds NaN or an infinity.
    NonFinite {
        /// The link.
        link: usize,
        /// The field.
        field: LinkField,
    },
    /// The mass is zero or negative.
    NonPositiveMass {
        /// The link.
        link: usize,
    },
    /// The inertia tensor is not positive definite (or so ill-conditioned that f64 cannot tell).
    InertiaNotPositiveDefinite {
        /// The link.
        link: usize,
    },
    /// The joint axis is the zero vector.
    ZeroAxis {
        /// The link.
        link: usize,
    },
}

impl fmt::Display for ChainError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::CapacityExceeded { capacity } => {
                write!(f, "chain: more than its capacity of {capacity} links")
            }
            Self::Empty => write!(f, "chain: no links"),
            Self::NonFinite { link, field } => {
                write!(f, "chain: link {link}: {field:?} is not finite")
            }
            Self::NonPositiveMass { link } => write!(f, "chain: link {link}: mass must be > 0"),
            Self::InertiaNotPositiveDefinite { link } => {
                write!(f, "chain: link {link}: inertia is not positive definite")
            }
            Self::ZeroAxis { link } => write!(f, "chain: link {link}: joint axis is zero"),
        }
    }
}

impl core::error::Error for ChainError {}

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
    /// A joint acceleration given to [`Kinematics::inverse_dynamics`].
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
    /// A drive torque given to [`Composite::parent_feedforward`].
    DriveTorque {
        /// The joint.
        joint: usize,
    },
    /// The gravity vector.
    Gravity,
    /// A point given for a Jacobian or a transform.
    Point,
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

/// Why an evaluation of a chain returned no result.
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub enum ModelError {
    /// An input is NaN or infinite.
    NonFinite(Input),
    /// A link index beyond the chain.
    NoSuchLink {
        /// The index asked for.
        link: usize,
        /// The chain's number of links.
        len: usize,
    },
    /// A result is not a finite f64: the chain's dimensions, masses and inputs are too far apart
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
    /// A joint's losses given to [`ChainCommand::add_losses`] are negative or not finite.
    BadLosses {
        /// The joint.
        joint: usize,
    },
}

impl fmt::Display for ModelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NonFinite(input) => write!(f, "chain: {input:?} is not finite"),
            Self::NoSuchLink { link, len } => {
                write!(f, "chain: no link {link} (the chain has {len})")
            }
            Self::OutOfRange => write!(f, "chain: a result exceeds the f64 range"),
            Self::Config(field) => write!(f, "chain controller config: {field:?} out of range"),
            Self::GainLimit { joint, error } => {
                write!(f, "chain: joint {joint}: no gain limit: {error}")
            }
            Self::NoGain { joint, error } => write!(f, "chain: joint {joint}: no gain: {error}"),
            Self::NonPositiveSegment { joint } => {
                write!(f, "chain: joint {joint}: keyframe segment must be > 0 s")
            }
            Self::FloatingBase => write!(
                f,
                "tree: a floating base has no joint targets (joint-space controllers need a fixed base)"
            ),
            Self::BadLosses { joint } => write!(
                f,
                "chain: joint {joint}: damping and friction must be finite and >= 0"
            ),
        }
    }
}

impl core::error::Error for ModelError {}

/// A validated link, with what forward kinematics needs precomputed.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Link {
    /// The joint frame's rotation in the parent frame, R_o.
    origin_rotation: Matrix3<f64>,
    /// R_o·K and R_o·K², K the cross-product matrix of the unit axis: the rotation of the link in
    /// its parent's frame at angle q is R_o + sin q·R_o K + (1 − cos q)·R_o K² (Rodrigues).
    origin_rotation_k: Matrix3<f64>,
    origin_rotation_k2: Matrix3<f64>,
    /// The joint frame's origin in the parent frame.
    origin_translation: Vector3<f64>,
    /// The unit axis in the parent frame (R_o·axis; it does not turn with q).
    axis_in_parent: Vector3<f64>,
    /// The unit axis in the joint frame.
    axis: Vector3<f64>,
    mass: f64,
    com: Vector3<f64>,
    inertia: Matrix3<f64>,
}

impl Link {
    const PLACEHOLDER: Self = Self {
        origin_rotation: Matrix3::new(0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0),
        origin_rotation_k: Matrix3::new(0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0),
        origin_rotation_k2: Matrix3::new(0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0),
        origin_translation: Vector3::new(0.0, 0.0, 0.0),
        axis_in_parent: Vector3::new(0.0, 0.0, 0.0),
        axis: Vector3::new(0.0, 0.0, 0.0),
        mass: 0.0,
        com: Vector3::new(0.0, 0.0, 0.0),
        inertia: Matrix3::new(0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0),
    };

    fn new(spec: &LinkSpec, link: usize) -> Result<Self, ChainError> {
        let finite = |values: &[f64], field| {
            if values.iter().all(|v| v.is_finite()) {
                Ok(())
            } else {
                Err(ChainError::NonFinite { link, field })
            }
        };
        finite(&spec.origin_xyz_m, LinkField::OriginXyz)?;
        finite(&spec.origin_rpy_rad, LinkField::OriginRpy)?;
        finite(&spec.axis, LinkField::Axis)?;
        finite(&[spec.mass_kg], LinkField::Mass)?;
        finite(&spec.com_m, LinkField::CentreOfMass)?;
        finite(&spec.inertia_kgm2, LinkField::Inertia)?;
        if spec.mass_kg <= 0.0 {
            return Err(ChainError::NonPositiveMass { link });
        }
        let axis = unit_axis(spec.axis).ok_or(ChainError::ZeroAxis { link })?;
        if !positive_definite(&spec.inertia_kgm2) {
            return Err(ChainError::InertiaNotPositiveDefinite { link });
        }
        let [roll, pitch, yaw] = spec.origin_rpy_rad;
        let origin_rotation = Rotation3::from_euler_angles(roll, pitch, yaw).into_inner();
        let k = axis.cross_matrix();
        let origin_rotation_k = origin_rotation * k;
        let [ixx, ixy, ixz, iyy, iyz, izz] = spec.inertia_kgm2;
        Ok(Self {
            origin_rotation,
            origin_rotation_k,
            origin_rotation_k2: origin_rotation_k * k,
            origin_translation: Vector3::from(spec.origin_xyz_m),
            axis_in_parent: origin_rotation * axis,
            axis,
            mass: spec.mass_kg,
            com: Vector3::from(spec.com_m),
            inertia: Matrix3::new(ixx, ixy, ixz, ixy, iyy, iyz, ixz, iyz, izz),
        })
    }
}

/// `v / |v|` for a finite non-zero `v`, formed without overflow or underflow (scaled by its
/// largest component first).
fn unit_axis(v: [f64; 3]) -> Option<Vector3<f64>> {
    let scale = v.iter().fold(0.0f64, |m, x| m.max(x.abs()));
    if !(scale > 0.0 && scale.is_finite()) {
        return None;
    }
    let scaled = Vector3::from(v) / scale;
    let norm = libm::sqrt(scaled.norm_squared());
    // 1 ≤ norm ≤ √3 for the scaled vector.
    Some(scaled / norm)
}

/// Sylvester's criterion on the tensor scaled to a largest entry of 1 (so that no minor
/// overflows or, for a well-conditioned tensor, underflows).
fn positive_definite(i: &[f64; 6]) -> bool {
    let scale = i.iter().fold(0.0f64, |m, x| m.max(x.abs()));
    if !(scale > 0.0 && scale.is_finite()) {
        return false;
    }
    let [xx, xy, xz, yy, yz, zz] = i.map(|v| v / scale);
    let minor2 = xx * yy - xy * xy;
    let det = xx * (yy * zz - yz * yz) - xy * (xy * zz - yz * xz) + xz * (xy * yz - yy * xz);
    xx > 0.0 && minor2 > 0.0 && det > 0.0
}

/// A fixed-base serial chain of at most `N` revolute joints (see the module docs for the
/// conventions). Built by [`ChainBuilder`] or [`Chain::new`], which validate every field.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Chain<const N: usize> {
    links: [Link; N],
    len: usize,
}

/// Builds a [`Chain`] link by link, root first, validating each link as it is added.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ChainBuilder<const N: usize> {
    chain: Chain<N>,
}

impl<const N: usize> Default for ChainBuilder<N> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const N: usize> ChainBuilder<N> {
    /// A builder with no links.
    pub fn new() -> Self {
        Self {
            chain: Chain {
                links: [Link::PLACEHOLDER; N],
                len: 0,
            },
        }
    }

    /// Validate `spec` and add it as the next link (the child of the last one).
    pub fn push(&mut self, spec: &LinkSpec) -> Result<&mut Self, ChainError> {
        let index = self.chain.len;
        let slot = self
            .chain
            .links
            .get_mut(index)
            .ok_or(ChainError::CapacityExceeded { capacity: N })?;
        *slot = Link::new(spec, index)?;
        self.chain.len = index + 1;
        Ok(self)
    }

    /// The chain, if it has at least one link.
    pub fn build(&self) -> Result<Chain<N>, ChainError> {
        if self.chain.len == 0 {
            return Err(ChainError::Empty);
        }
        Ok(self.chain)
    }
}

impl<const N: usize> Chain<N> {
    /// The chain of `links`, root first (at most `N`, at least one), every field validated.
    pub fn new(links: &[LinkSpec]) -> Result<Self, ChainError> {
        let mut builder = ChainBuilder::new();
        for spec in links {
            builder.push(spec)?;
        }
        builder.build()
    }

    /// The number of joints (= links) n ≤ `N`.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Never true for a built chain (kept for the `len` convention).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    fn links(&self) -> &[Link] {
        self.links.get(..self.len).unwrap_or(&[])
    }

    /// World frames of every link at configuration `q` (only the first [`Chain::len`] entries
    /// are read).
    ///
    /// Cost: one `sincos` and about 150 flops per link.
    pub fn forward_kinematics(&self, q: &[f64; N]) -> Result<Kinematics<N>, ModelError> {
        let mut kin = Kinematics {
            frames: [LinkFrame::PLACEHOLDER; N],
            len: self.len,
        };
        self.fill_kinematics(q, &mut kin)?;
        Ok(kin)
    }

    /// [`Chain::forward_kinematics`] into `kin` (whose `len` is this chain's).
    pub(crate) fn fill_kinematics(
        &self,
        q: &[f64; N],
        kin: &mut Kinematics<N>,
    ) -> Result<(), ModelError> {
        let mut parent_rotation = Matrix3::identity();
        let mut parent_origin = Vector3::zeros();
        // Rotations and axes are orthonormal, so always finite; positions and inertias overflow
        // for parameters near the f64 limits. One branch-free check for all of them, at the end.
        let mut finite = true;
        for (joint, ((link, &qi), frame)) in self
            .links()
            .iter()
            .zip(q.iter())
            .zip(kin.frames.iter_mut())
            .enumerate()
        {
            if !qi.is_finite() {
                return Err(ModelError::NonFinite(Input::Position { joint }));
            }
            let (sin, cos) = libm::sincos(qi);
            let local = link.origin_rotation
                + link.origin_rotation_k * sin
                + link.origin_rotation_k2 * (1.0 - cos);
            let rotation = parent_rotation * local;
            let origin = parent_origin + parent_rotation * link.origin_translation;
            let com = origin + rotation * link.com;
            let inertia = rotation * link.inertia * rotation.transpose();
            finite &= all_finite(origin.as_slice())
                & all_finite(com.as_slice())
                & all_finite(inertia.as_slice());
            *frame = LinkFrame {
                rotation,
                origin,
                axis: parent_rotation * link.axis_in_parent,
                com,
                inertia,
                mass: link.mass,
            };
            parent_rotation = rotation;
            parent_origin = origin;
        }
        if finite {
            Ok(())
        } else {
            Err(ModelError::OutOfRange)
        }
    }

    /// The unit joint axis of link `link` in its own frame (as given, normalised).
    pub fn joint_axis_local(&self, link: usize) -> Option<Vector3<f64>> {
        self.links().get(link).map(|l| l.axis)
    }
}

/// The world frame of one link at one configuration.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct LinkFrame {
    rotation: Matrix3<f64>,
    /// The link frame's origin: the joint's position d_i.
    origin: Vector3<f64>,
    /// The unit joint axis s_i.
    axis: Vector3<f64>,
    com: Vector3<f64>,
    /// Inertia about the centre of mass, world axes.
    inertia: Matrix3<f64>,
    mass: f64,
}

impl LinkFrame {
    pub(crate) const PLACEHOLDER: Self = Self {
        rotation: Matrix3::new(0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0),
        origin: Vector3::new(0.0, 0.0, 0.0),
        axis: Vector3::new(0.0, 0.0, 0.0),
        com: Vector3::new(0.0, 0.0, 0.0),
        inertia: Matrix3::new(0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0),
        mass: 0.0,
    };
}

/// Whether every value is finite; without early exit, so that it vectorises.
#[inline]
pub(crate) fn all_finite(values: &[f64]) -> bool {
    values.iter().fold(true, |ok, v| ok & v.is_finite())
}

/// The world frames of a chain's links at one configuration ([`Chain::forward_kinematics`]).
/// Every value in it is finite.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Kinematics<const N: usize> {
    pub(crate) frames: [LinkFrame; N],
    pub(crate) len: usize,
}

impl<const N: usize> Kinematics<N> {
    /// The number of links.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Never true (a chain has at least one link).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    fn frames(&self) -> &[LinkFrame] {
        self.frames.get(..self.len).unwrap_or(&[])
    }

    fn frame(&self, link: usize) -> Result<&LinkFrame, ModelError> {
        self.frames().get(link).ok_or(ModelError::NoSuchLink {
            link,
            len: self.len,
        })
    }

    /// World pose of link `link`'s frame (its joint frame).
    pub fn link_pose(&self, link: usize) -> Option<IsometryMatrix3<f64>> {
        self.frames().get(link).map(|f| {
            IsometryMatrix3::from_parts(
                Translation3::from(f.origin),
                Rotation3::from_matrix_unchecked(f.rotation),
            )
        })
    }

    /// World position of joint `link` (the origin of its link frame), d_i.
    pub fn joint_position(&self, link: usize) -> Option<Vector3<f64>> {
        self.frames().get(link).map(|f| f.origin)
    }

    /// World unit axis of joint `link`, s_i.
    pub fn joint_axis(&self, link: usize) -> Option<Vector3<f64>> {
        self.frames().get(link).map(|f| f.axis)
    }

    /// World centre of mass of link `link`.
    pub fn link_com(&self, link: usize) -> Option<Vector3<f64>> {
        self.frames().get(link).map(|f| f.com)
    }

    /// Inertia tensor of link `link` about its centre of mass, world axes: R I Rᵀ.
    pub fn link_inertia(&self, link: usize) -> Option<Matrix3<f64>> {
        self.frames().get(link).map(|f| f.inertia)
    }

    /// Mass of link `link`.
    pub fn link_mass(&self, link: usize) -> Option<f64> {
        self.frames().get(link).map(|f| f.mass)
    }

    /// The inertia of link `link` alone (no descendants) about its own joint axis:
    /// s·I s + m‖(c − d) × s‖² (its centre-of-mass inertia I, mass m, centre c, joint position
    /// d, unit axis s, all world), kg·m². The composite m_i of a leaf link. A result that is not
    /// a finite positive f64 (a link of extreme dimensions) is [`ModelError::OutOfRange`].
    pub fn own_axis_inertia(&self, link: usize) -> Result<f64, ModelError> {
        let f = self.frame(link)?;
        let arm = (f.com - f.origin).cross(&f.axis);
        let inertia = f.axis.dot(&(f.inertia * f.axis)) + f.mass * arm.norm_squared();
        if inertia.is_finite() && inertia > 0.0 {
            Ok(inertia)
        } else {
            Err(ModelError::OutOfRange)
        }
    }

    /// World position of `point`, given in link `link`'s frame.
    pub fn point_in_world(
        &self,
        link: usize,
        point: &Vector3<f64>,
    ) -> Result<Vector3<f64>, ModelError> {
        if !all_finite(point.as_slice()) {
            return Err(ModelError::NonFinite(Input::Point));
        }
        let f = self.frame(link)?;
        let p = f.origin + f.rotation * point;
        finite_or_out_of_range(p)
    }

    /// The 3×N Jacobian of the linear velocity of the world point `point` rigidly attached to
    /// link `link`: ṗ = J q̇. Column j ≤ `link` is s_j × (p − d_j); the others are zero.
    pub fn point_jacobian(
        &self,
        link: usize,
        point: &Vector3<f64>,
    ) -> Result<SMatrix<f64, 3, N>, ModelError> {
        if !all_finite(point.as_slice()) {
            return Err(ModelError::NonFinite(Input::Point));
        }
        let upto = self.frames().get(..=link).ok_or(ModelError::NoSuchLink {
            link,
            len: self.len,
        })?;
        let mut jacobian = SMatrix::<f64, 3, N>::zeros();
        for (mut column, f) in jacobian.column_iter_mut().zip(upto) {
            let v = f.axis.cross(&(point - f.origin));
            for (entry, value) in column.iter_mut().zip(v.iter()) {
                *entry = *value;
            }
        }
        finite_or_out_of_range(jacobian)
    }

    /// The 3×N Jacobian of link `link`'s world angular velocity: ω = J_ω q̇. Column j ≤ `link` is
    /// s_j; the others are zero.
    pub fn angular_jacobian(&self, link: usize) -> Result<SMatrix<f64, 3, N>, ModelError> {
        let upto = self.frames().get(..=link).ok_or(ModelError::NoSuchLink {
            link,
            len: self.len,
        })?;
        let mut jacobian = SMatrix::<f64, 3, N>::zeros();
        for (mut column, f) in jacobian.column_iter_mut().zip(upto) {
            for (entry, value) in column.iter_mut().zip(f.axis.iter()) {
                *entry = *value;
            }
        }
        Ok(jacobian)
    }

    /// The subtrees of every joint, accumulated leaf to root in O(n), and the composite inertia
    /// about each joint axis m_i (see the module docs).
    ///
    /// Cost: about 80 flops per link.
    pub fn composite(&self) -> Result<Composite<N>, ModelError> {
        let mut composite = Composite {
            subtrees: [Subtree::PLACEHOLDER; N],
            len: self.len,
        };
        self.fill_composite(&mut composite)?;
        Ok(composite)
    }

    /// [`Kinematics::composite`] into `composite` (whose `len` is this one's).
    pub(crate) fn fill_composite(&self, composite: &mut Composite<N>) -> Result<(), ModelError> {
        let subtrees = composite.subtrees.get_mut(..self.len).unwrap_or(&mut []);
        let mut mass = 0.0;
        let mut com = Vector3::zeros();
        let mut inertia = Matrix3::zeros();
        let mut finite = true;
        for (f, subtree) in self.frames().iter().zip(subtrees.iter_mut()).rev() {
            let merged = mass + f.mass;
            let delta = f.com - com;
            // Reduced mass: 0 for the first (leaf) link, whose subtree is the link alone.
            let reduced = mass * (f.mass / merged);
            com += delta * (f.mass / merged);
            inertia += f.inertia + shift(&delta) * reduced;
            mass = merged;
            let arm = (com - f.origin).cross(&f.axis);
            let axis_inertia = f.axis.dot(&(inertia * f.axis)) + mass * arm.norm_squared();
            finite &= mass.is_finite()
                & all_finite(com.as_slice())
                & all_finite(inertia.as_slice())
                & (axis_inertia.is_finite() & (axis_inertia > 0.0));
            *subtree = Subtree {
                mass,
                com,
                inertia,
                axis: f.axis,
                joint: f.origin,
                axis_inertia,
            };
        }
        if finite {
            Ok(())
        } else {
            Err(ModelError::OutOfRange)
        }
    }

    /// The joint-space mass matrix ([`Composite::mass_matrix`]).
    pub fn mass_matrix(&self) -> Result<SMatrix<f64, N, N>, ModelError> {
        self.composite()?.mass_matrix()
    }

    /// The gravity torques ([`Composite::gravity_torques`]).
    pub fn gravity_torques(&self, gravity: &Vector3<f64>) -> Result<SVector<f64, N>, ModelError> {
        self.composite()?.gravity_torques(gravity)
    }

    /// Inverse dynamics by the recursive Newton–Euler algorithm (world frame, see the module
    /// docs): the joint torques τ = M(q)q̈ + c(q, q̇) + τ_g(q) that give the joint accelerations
    /// `accelerations` (q̈, rad/s²) at the velocities `velocities` (q̇, rad/s) and this
    /// configuration, under `gravity` (a world vector, m/s²). τ_g is the holding torque of
    /// [`Composite::gravity_torques`]; with q̇ = 0 and q̈ = 0 the result is τ_g, with gravity 0
    /// and q̇ = 0 it is M q̈, with gravity 0 and q̈ = 0 it is the centripetal and Coriolis
    /// torques c. Only the first [`Kinematics::len`] entries are read; entries past it are 0.
    ///
    /// Cost: O(n), about 200 flops per link, no `sincos` (the frames are this value's).
    pub fn inverse_dynamics(
        &self,
        velocities: &[f64; N],
        accelerations: &[f64; N],
        gravity: &Vector3<f64>,
    ) -> Result<SVector<f64, N>, ModelError> {
        if !all_finite(gravity.as_slice()) {
            return Err(ModelError::NonFinite(Input::Gravity));
        }
        // Forward pass, root to leaf: each link's force m a_c and its moment about its centre
        // of mass I ω̇ + ω × I ω. The base is fixed and accelerates at −g, which puts gravity
        // into every link's acceleration.
        let mut wrenches = [(Vector3::zeros(), Vector3::zeros()); N];
        let mut omega = Vector3::zeros();
        let mut omega_dot = Vector3::zeros();
        let mut joint_acceleration = -gravity;
        let mut parent_joint: Option<Vector3<f64>> = None;
        for (joint, (((f, &qd), &qdd), wrench)) in self
            .frames()
            .iter()
            .zip(velocities.iter())
            .zip(accelerations.iter())
            .zip(wrenches.iter_mut())
            .enumerate()
        {
            if !qd.is_finite() {
                return Err(ModelError::NonFinite(Input::Velocity { joint }));
            }
            if !qdd.is_finite() {
                return Err(ModelError::NonFinite(Input::Acceleration { joint }));
            }
            // d_i is a point of the parent link: it moves with ω_{i−1}, ω̇_{i−1}.
            if let Some(d) = parent_joint {
                let r = f.origin - d;
                joint_acceleration += omega_dot.cross(&r) + omega.cross(&omega.cross(&r));
            }
            let spin = f.axis * qd;
            omega_dot += f.axis * qdd + omega.cross(&spin);
            omega += spin;
            let r = f.com - f.origin;
            let com_acceleration =
                joint_acceleration + omega_dot.cross(&r) + omega.cross(&omega.cross(&r));
            let spin_momentum = f.inertia * omega;
            *wrench = (
                com_acceleration * f.mass,
                f.inertia * omega_dot + omega.cross(&spin_momentum),
            );
            parent_joint = Some(f.origin);
        }
        // Backward pass, leaf to root: the force f_i and the moment n_i about d_i that joint i
        // passes to its subtree, and τ_i = s_i·n_i.
        let mut tau = SVector::<f64, N>::zeros();
        let mut force = Vector3::zeros();
        let mut moment = Vector3::zeros();
        let mut child_joint: Option<Vector3<f64>> = None;
        for ((f, (link_force, link_moment)), entry) in self
            .frames()
            .iter()
            .zip(wrenches.iter())
            .zip(tau.iter_mut())
            .rev()
        {
            if let Some(d) = child_joint {
                moment += (d - f.origin).cross(&force);
            }
            moment += link_moment + (f.com - f.origin).cross(link_force);
            force += link_force;
            *entry = f.axis.dot(&moment);
            child_joint = Some(f.origin);
        }
        // A non-finite intermediate reaches τ_0 at least: every wrench is summed, through cross
        // products and the dot with s_0, into n_0, and a 0·∞ is a NaN.
        finite_or_out_of_range(tau)
    }
}

/// ‖δ‖²𝟙 − δδᵀ: the inertia of a unit mass at δ about the origin.
#[inline]
fn shift(delta: &Vector3<f64>) -> Matrix3<f64> {
    Matrix3::from_diagonal_element(delta.norm_squared()) - delta * delta.transpose()
}

fn finite_or_out_of_range<const R: usize, const C: usize>(
    m: SMatrix<f64, R, C>,
) -> Result<SMatrix<f64, R, C>, ModelError> {
    if all_finite(m.as_slice()) {
        Ok(m)
    } else {
        Err(ModelError::OutOfRange)
    }
}

/// The subtree hanging from one joint (the joint's link and all its descendants), world frame.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Subtree {
    mass: f64,
    com: Vector3<f64>,
    /// About `com`, world axes.
    inertia: Matrix3<f64>,
    axis: Vector3<f64>,
    joint: Vector3<f64>,
    pub(crate) axis_inertia: f64,
}

impl Subtree {
    pub(crate) const PLACEHOLDER: Self = Self {
        mass: 0.0,
        com: Vector3::new(0.0, 0.0, 0.0),
        inertia: Matrix3::new(0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0),
        axis: Vector3::new(0.0, 0.0, 0.0),
        joint: Vector3::new(0.0, 0.0, 0.0),
        axis_inertia: 0.0,
    };
}

/// The subtree of every joint at one configuration ([`Kinematics::composite`]): mass, centre of
/// mass and inertia of each joint's link and its descendants, and the composite inertia about
/// each joint axis. Every value in it is finite, every axis inertia positive.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Composite<const N: usize> {
    pub(crate) subtrees: [Subtree; N],
    pub(crate) len: usize,
}

impl<const N: usize> Composite<N> {
    /// The number of joints.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Never true (a chain has at least one link).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub(crate) fn subtrees(&self) -> &[Subtree] {
        self.subtrees.get(..self.len).unwrap_or(&[])
    }

    /// m_i = s·D s + M‖(c − d) × s‖² for every joint (kg·m²; entries past [`Composite::len`]
    /// are 0). Equal to the diagonal of the mass matrix.
    pub fn axis_inertia(&self) -> SVector<f64, N> {
        let mut m = SVector::<f64, N>::zeros();
        for (entry, s) in m.iter_mut().zip(self.subtrees()) {
            *entry = s.axis_inertia;
        }
        m
    }

    /// The composite inertia about joint `joint`'s axis, m_i.
    pub fn axis_inertia_of(&self, joint: usize) -> Option<f64> {
        self.subtrees().get(joint).map(|s| s.axis_inertia)
    }

    /// Mass of joint `joint`'s subtree, M_i.
    pub fn subtree_mass(&self, joint: usize) -> Option<f64> {
        self.subtrees().get(joint).map(|s| s.mass)
    }

    /// World centre of mass of joint `joint`'s subtree, c_i.
    pub fn subtree_com(&self, joint: usize) -> Option<Vector3<f64>> {
        self.subtrees().get(joint).map(|s| s.com)
    }

    /// Inertia of joint `joint`'s subtree about its centre of mass, world axes, D_i.
    pub fn subtree_inertia(&self, joint: usize) -> Option<Matrix3<f64>> {
        self.subtrees().get(joint).map(|s| s.inertia)
    }

    /// The joint-space mass matrix M (N×N, symmetric, positive definite in its leading n×n
    /// block, zero elsewhere), by the composite-rigid-body algorithm: for j ≤ i,
    /// M_ji = s_j · (D_i s_i + (c_i − d_j) × M_i s_i × (c_i − d_i)).
    ///
    /// Cost: O(n²), about 20 flops per entry of the upper triangle.
    pub fn mass_matrix(&self) -> Result<SMatrix<f64, N, N>, ModelError> {
        let subtrees = self.subtrees();
        let mut m = SMatrix::<f64, N, N>::zeros();
        for (i, (mut column, sub)) in m.column_iter_mut().zip(subtrees).enumerate() {
            let moment = sub.inertia * sub.axis;
            let force = sub.axis.cross(&(sub.com - sub.joint)) * sub.mass;
            let ancestors = subtrees.get(..=i).unwrap_or(&[]);
            for (entry, anc) in column.iter_mut().zip(ancestors) {
                *entry = anc
                    .axis
                    .dot(&(moment + (sub.com - anc.joint).cross(&force)));
            }
        }
        m.fill_lower_triangle_with_upper_triangle();
        finite_or_out_of_range(m)
    }

    /// τ_g: the torque each joint must apply to hold the chain still against `gravity` (a world
    /// vector, m/s²): τ_g,i = s_i · (g × M_i(c_i − d_i)) = ∂V/∂q_i, V = −Σ m_k g·c_k. Entries past
    /// [`Composite::len`] are 0.
    pub fn gravity_torques(&self, gravity: &Vector3<f64>) -> Result<SVector<f64, N>, ModelError> {
        if !all_finite(gravity.as_slice()) {
            return Err(ModelError::NonFinite(Input::Gravity));
        }
        let mut tau = SVector::<f64, N>::zeros();
        for (entry, s) in tau.iter_mut().zip(self.subtrees()) {
            *entry = s.gravity_torque(gravity);
        }
        finite_or_out_of_range(tau)
    }

    /// The parent feed-forward of "On the Beat!", root to leaf (see the module docs):
    /// a_0 = 0, a_{i+1} = a_i + (τ_i/m_i) s_i, ff_i = m_i (a_i · s_i), where `drive_torques` are
    /// the joints' own drive (PD / arrival) torques τ_i. Entries past [`Composite::len`] are 0.
    pub fn parent_feedforward(
        &self,
        drive_torques: &SVector<f64, N>,
    ) -> Result<SVector<f64, N>, ModelError> {
        let mut ff = SVector::<f64, N>::zeros();
        let mut acceleration = Vector3::zeros();
        for (joint, ((entry, s), &drive)) in ff
            .iter_mut()
            .zip(self.subtrees())
            .zip(drive_torques.iter())
            .enumerate()
        {
            if !drive.is_finite() {
                return Err(ModelError::NonFinite(Input::DriveTorque { joint }));
            }
            *entry = s.feedforward_step(&mut acceleration, drive);
        }
        finite_or_out_of_range(ff)
    }
}

impl Subtree {
    pub(crate) fn gravity_torque(&self, gravity: &Vector3<f64>) -> f64 {
        self.axis
            .dot(&gravity.cross(&((self.com - self.joint) * self.mass)))
    }

    /// This joint's feed-forward m_i(a_i·s_i) from the ancestors' acceleration `acceleration`
    /// (a_i), which it then advances to a_{i+1} with its own drive torque.
    pub(crate) fn feedforward_step(&self, acceleration: &mut Vector3<f64>, drive_nm: f64) -> f64 {
        let ff = self.axis_inertia * acceleration.dot(&self.axis);
        *acceleration += self.axis * (drive_nm / self.axis_inertia);
        ff
    }
}

/// What a chain controller's tick starts from: the kinematics and the composite inertia at the
/// measured configuration. Built in place ([`TickModel::empty`], then [`TickModel::fill`]): the
/// N-sized frames are not moved through a `Result`.
pub(crate) struct TickModel<const N: usize> {
    /// The world frames at q.
    pub(crate) kin: Kinematics<N>,
    /// The subtrees and composite inertias at q.
    pub(crate) composite: Composite<N>,
}

impl<const N: usize> TickModel<N> {
    /// Placeholders for `chain`'s links.
    pub(crate) const fn empty(chain: &Chain<N>) -> Self {
        Self {
            kin: Kinematics {
                frames: [LinkFrame::PLACEHOLDER; N],
                len: chain.len,
            },
            composite: Composite {
                subtrees: [Subtree::PLACEHOLDER; N],
                len: chain.len,
            },
        }
    }

    /// Check `gravity`, then the kinematics and the composite inertia of `chain` at `q`.
    pub(crate) fn fill(
        &mut self,
        chain: &Chain<N>,
        q: &[f64; N],
        gravity: &Vector3<f64>,
    ) -> Result<(), ModelError> {
        if !all_finite(gravity.as_slice()) {
            return Err(ModelError::NonFinite(Input::Gravity));
        }
        chain.fill_kinematics(q, &mut self.kin)?;
        self.kin.fill_composite(&mut self.composite)
    }

    /// A command for every joint, still to be filled.
    pub(crate) const fn command(&self) -> ChainCommand<N> {
        ChainCommand {
            joints: [JointCommand::PLACEHOLDER; N],
            len: self.composite.len,
        }
    }
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

/// How [`ChainArrival`] compensates the joints' dynamic coupling (what one joint's motion asks of
/// the others).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Coupling {
    /// The slides' parent feed-forward m_i(a_i·s_i) ([`Composite::parent_feedforward`]): the
    /// ancestors' commanded angular accelerations only, on the composite inertia. The linear
    /// acceleration of the parent joints and the velocity-product (centripetal, Coriolis) terms
    /// are left to each joint's PD.
    #[default]
    ParentFeedforward,
    /// Full inverse dynamics ([`Kinematics::inverse_dynamics`]): each joint's drive torque is
    /// taken as the acceleration q̈_i = drive_i/m_i it asks of a double integrator of inertia
    /// m_i, and the torque is τ = M(q)q̈ + c(q, q̇) + τ_g(q). With an exact model every joint
    /// then moves as the double integrator its arrival solve assumes.
    InverseDynamics,
}

/// What the arrival gains need: the one configuration of every arrival controller
/// ([`ChainArrival`] on a chain or a tree, [`crate::dynamo::DynamoJoint`] on a character's
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

/// What one joint's gain computation did this tick ([`ChainArrival`]'s arrival solve, or
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

/// One joint's part of a [`ChainCommand`].
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
    /// The joint's losses compensated ([`ChainCommand::add_losses`]), N·m; 0 until they are.
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

/// The speed below which [`ChainCommand::add_losses`] compensates only part of a joint's dry
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

/// The torques of one tick of [`ChainArrival::tick`] (or [`crate::beat::BeatServo::tick`]), and
/// how each was made.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ChainCommand<const N: usize> {
    pub(crate) joints: [JointCommand; N],
    pub(crate) len: usize,
}

impl<const N: usize> ChainCommand<N> {
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

    /// The total torque of every joint (0 past the chain's length), N·m.
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
    /// Only the first [`ChainCommand::joints`] entries of `losses` and `velocities` are read (the
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

/// Arrival gains for every joint of a chain, re-solved every tick: each joint's Lambert-W
/// arrival solve ([`solve_arrival_gains`]) uses the composite inertia m_i of the current
/// configuration, its gains are clamped to the stable limit of m_i for the period
/// ([`GainLimit`]), and its torque is the PD drive plus the coupling compensation
/// ([`Coupling`]) plus gravity. Stateless: a configuration, validated once.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ChainArrival {
    settings: ArrivalSettings,
    coupling: Coupling,
}

impl ChainArrival {
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

    /// One tick: forward kinematics at `q`, the composite inertia of every joint, gravity, and
    /// root to leaf each joint's arrival gains (to pass through its target's pose when its time
    /// to go has elapsed), its PD drive torque, its coupling compensation, and its total torque.
    /// Only the first [`Chain::len`] entries of `q`, `velocities` and `targets` are read.
    ///
    /// The coupling ([`ChainArrival::coupling`]): [`Coupling::ParentFeedforward`] adds the
    /// slides' m_i(a_i·s_i), joint by joint; [`Coupling::InverseDynamics`] turns every drive
    /// into the acceleration q̈_i = drive_i/m_i and returns τ = M(q)q̈ + c(q, q̇) + τ_g(q)
    /// ([`Kinematics::inverse_dynamics`], one more O(n) pass).
    ///
    /// Per joint, as [`crate::servo::ArrivalServo`] does for one: the setpoint is re-aimed
    /// [`ArrivalSettings::pose_tolerance_rad`] beyond the pose as seen from θ; an exact solve is
    /// clamped to the limit; a refused one falls back to [`closest_arrival_gains`]; a target
    /// whose time is up is held. Any non-finite input, or a torque that is not a finite f64, is
    /// an error for the whole tick (the caller's safe state takes over): no NaN is ever returned.
    pub fn tick<const N: usize>(
        &self,
        chain: &Chain<N>,
        q: &[f64; N],
        velocities: &[f64; N],
        targets: &[JointTarget; N],
        gravity: &Vector3<f64>,
    ) -> Result<ChainCommand<N>, ModelError> {
        let mut model = TickModel::empty(chain);
        model.fill(chain, q, gravity)?;
        let TickModel { kin, composite } = &model;
        let mut command = model.command();
        let mut acceleration = Vector3::zeros();
        // Under `Coupling::InverseDynamics`, the accelerations the drives ask for.
        let mut desired = [0.0; N];
        for (joint, (((((out, sub), &theta), &omega), target), qdd)) in command
            .joints
            .iter_mut()
            .zip(composite.subtrees())
            .zip(q.iter())
            .zip(velocities.iter())
            .zip(targets.iter())
            .zip(desired.iter_mut())
            .enumerate()
        {
            if !omega.is_finite() {
                return Err(ModelError::NonFinite(Input::Velocity { joint }));
            }
            if !target.pose_rad.is_finite() {
                return Err(ModelError::NonFinite(Input::TargetPose { joint }));
            }
            if !target.time_to_go_s.is_finite() {
                return Err(ModelError::NonFinite(Input::TimeToGo { joint }));
            }
            let m = sub.axis_inertia;
            let (gains, setpoint, status) = self.joint_gains(joint, m, theta, omega, target)?;
            let drive =
                gains.stiffness_nm_per_rad * (setpoint - theta) - gains.damping_nms_per_rad * omega;
            let parent_feedforward = match self.coupling {
                Coupling::ParentFeedforward => sub.feedforward_step(&mut acceleration, drive),
                Coupling::InverseDynamics => {
                    *qdd = drive / m;
                    if !qdd.is_finite() {
                        return Err(ModelError::OutOfRange);
                    }
                    0.0
                }
            };
            let gravity_nm = sub.gravity_torque(gravity);
            let torque = drive + parent_feedforward + gravity_nm;
            if !(torque.is_finite() && all_finite(acceleration.as_slice())) {
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
            let tau = kin.inverse_dynamics(velocities, &desired, gravity)?;
            for (out, &torque) in command.joints.iter_mut().zip(tau.iter()).take(command.len) {
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

    /// The same tick on a fixed-base kinematic tree ([`Tree`], any robot a URDF describes):
    /// each joint's arrival gains on its composite inertia about its own axis
    /// ([`TreeComposite::axis_inertia`](crate::tree::TreeComposite::axis_inertia); for a
    /// prismatic joint the subtree's mass, and its pose in m), its drive, the coupling, and the
    /// generalized gravity ([`TreeKinematics::gravity`]). `base_pose` is where the base is
    /// welded. Under [`Coupling::InverseDynamics`] the torques are the tree's recursive
    /// Newton–Euler τ = M(q)q̈ + c(q, q̇) + g(q) for q̈_k = drive_k/m_k; under
    /// [`Coupling::ParentFeedforward`] each revolute joint adds m_k(a_k·s_k), a_k the sum of
    /// its ancestors' commanded angular accelerations (τ_j/m_j)s_j along its own path to the
    /// base (a prismatic joint adds no angular acceleration and takes no feed-forward).
    ///
    /// A floating base is [`ModelError::FloatingBase`]: its six unactuated coordinates have no
    /// arrival target. Any non-finite input, or a result that is not a finite f64, is an error
    /// for the whole tick.
    pub fn tick_tree<const N: usize>(
        &self,
        tree: &Tree<N>,
        base_pose: &Isometry3<f64>,
        q: &[f64; N],
        velocities: &[f64; N],
        targets: &[JointTarget; N],
        gravity: &Vector3<f64>,
    ) -> Result<ChainCommand<N>, ModelError> {
        let mut tick = TreeTick::new(tree);
        tick.fill(base_pose, q, gravity)?;
        let n = tree.joint_count();
        let mut command = ChainCommand::<N>::empty(n);
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
/// [`crate::controller::Controller`]: [`ChainArrival::tick_tree`] with `T` = [`JointTarget`],
/// [`crate::beat::BeatServo::tick_tree`] with `T` = [`crate::beat::BeatTarget`].
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

impl<const N: usize> ChainCommand<N> {
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

impl<const N: usize> crate::controller::Controller<TreeInput<'_, N, JointTarget>> for ChainArrival {
    type Command = ChainCommand<N>;
    type Error = ModelError;

    fn tick(&mut self, i: &TreeInput<'_, N, JointTarget>) -> Result<ChainCommand<N>, ModelError> {
        self.tick_tree(i.tree, i.base_pose, i.q, i.velocities, i.targets, i.gravity)
    }

    fn limits(command: &ChainCommand<N>) -> crate::controller::Limits {
        command.limits()
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::model::ArmModel;
    use crate::servo::{ArrivalServo, JointServo, JointState, ServoConfig};
    use core::f64::consts::{FRAC_PI_2, PI};
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

    fn chain_strategy() -> impl Strategy<Value = (Chain<CAP>, [f64; CAP])> {
        (
            prop::collection::vec(link_strategy(), 1..=CAP),
            prop::array::uniform6(-PI..PI),
        )
            .prop_map(|(specs, q)| (Chain::new(&specs).expect("valid random chain"), q))
    }

    fn with(q: &[f64; CAP], j: usize, delta: f64) -> [f64; CAP] {
        let mut q = *q;
        q[j] += delta;
        q
    }

    /// M = Σ_k J_kᵀ m_k J_k + J_ω,kᵀ I_k J_ω,k, the slow way, from the Jacobians.
    fn slow_mass_matrix(kin: &Kinematics<CAP>) -> SMatrix<f64, CAP, CAP> {
        let mut m = SMatrix::<f64, CAP, CAP>::zeros();
        for k in 0..kin.len() {
            let j = kin.point_jacobian(k, &kin.link_com(k).unwrap()).unwrap();
            let jw = kin.angular_jacobian(k).unwrap();
            m += j.transpose() * j * kin.link_mass(k).unwrap()
                + jw.transpose() * kin.link_inertia(k).unwrap() * jw;
        }
        m
    }

    fn potential(chain: &Chain<CAP>, q: &[f64; CAP], g: &Vector3<f64>) -> f64 {
        let kin = chain.forward_kinematics(q).unwrap();
        (0..kin.len())
            .map(|k| -kin.link_mass(k).unwrap() * g.dot(&kin.link_com(k).unwrap()))
            .sum()
    }

    proptest! {
        /// Every column of the point Jacobian is the central difference of the point's world
        /// position (forward kinematics) in that joint; columns past the link are zero.
        #[test]
        fn point_jacobian_is_the_derivative_of_forward_kinematics(
            (chain, q) in chain_strategy(),
            link_pick in 0usize..CAP,
            local in prop::array::uniform3(-0.5..0.5f64),
        ) {
            let link = link_pick % chain.len();
            let local = Vector3::from(local);
            let kin = chain.forward_kinematics(&q).unwrap();
            let p = kin.point_in_world(link, &local).unwrap();
            let jac = kin.point_jacobian(link, &p).unwrap();
            let h = 1e-6;
            for j in 0..CAP {
                let column = jac.column(j);
                if j >= chain.len() {
                    prop_assert!(column.iter().all(|&v| v == 0.0));
                    continue;
                }
                let plus = chain.forward_kinematics(&with(&q, j, h)).unwrap();
                let minus = chain.forward_kinematics(&with(&q, j, -h)).unwrap();
                let fd = (plus.point_in_world(link, &local).unwrap()
                    - minus.point_in_world(link, &local).unwrap())
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
            (chain, q) in chain_strategy(),
            link_pick in 0usize..CAP,
        ) {
            let link = link_pick % chain.len();
            let kin = chain.forward_kinematics(&q).unwrap();
            let r = kin.link_pose(link).unwrap().rotation.into_inner();
            let jw = kin.angular_jacobian(link).unwrap();
            let h = 1e-6;
            for j in 0..chain.len() {
                let plus = chain.forward_kinematics(&with(&q, j, h)).unwrap();
                let minus = chain.forward_kinematics(&with(&q, j, -h)).unwrap();
                let dr = (plus.link_pose(link).unwrap().rotation.into_inner()
                    - minus.link_pose(link).unwrap().rotation.into_inner())
                    / (2.0 * h);
                let w = dr * r.transpose();
                let fd = Vector3::new(w.m32, w.m13, w.m21);
                for k in 0..3 {
                    prop_assert!(close(jw[(k, j)], fd[k], 1e-6, 1e-8));
                }
            }
        }

        /// The CRBA mass matrix is symmetric, positive definite in its n×n block, zero outside
        /// it, and equal to Σ_k J_kᵀ m_k J_k + J_ω,kᵀ I_k J_ω,k formed from the Jacobians.
        #[test]
        fn mass_matrix_is_symmetric_positive_definite_and_the_jacobian_sum(
            (chain, q) in chain_strategy(),
        ) {
            let kin = chain.forward_kinematics(&q).unwrap();
            let m = kin.mass_matrix().unwrap();
            let slow = slow_mass_matrix(&kin);
            let scale = slow.amax();
            let n = chain.len();
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
        }

        /// The O(n) composite inertia about each joint axis equals the diagonal of the mass
        /// matrix, both the CRBA one and the one summed from the Jacobians (1e-9 relative).
        #[test]
        fn composite_inertia_is_the_mass_matrix_diagonal((chain, q) in chain_strategy()) {
            let kin = chain.forward_kinematics(&q).unwrap();
            let composite = kin.composite().unwrap();
            let m = composite.axis_inertia();
            let crba = composite.mass_matrix().unwrap();
            let slow = slow_mass_matrix(&kin);
            for i in 0..CAP {
                if i >= chain.len() {
                    prop_assert_eq!(m[i], 0.0);
                    continue;
                }
                prop_assert!(m[i] > 0.0);
                prop_assert!(close(m[i], crba[(i, i)], 1e-9, 0.0), "{} vs {}", m[i], crba[(i, i)]);
                prop_assert!(close(m[i], slow[(i, i)], 1e-9, 0.0), "{} vs {}", m[i], slow[(i, i)]);
            }
        }

        /// The gravity torques are the derivative of the potential energy V = −Σ m_k g·c_k
        /// (central differences), for a random gravity vector.
        #[test]
        fn gravity_torques_are_the_gradient_of_the_potential(
            (chain, q) in chain_strategy(),
            g in prop::array::uniform3(-10.0..10.0f64),
        ) {
            let g = Vector3::from(g);
            let kin = chain.forward_kinematics(&q).unwrap();
            let tau = kin.gravity_torques(&g).unwrap();
            let h = 1e-6;
            let scale: f64 = (0..chain.len()).map(|k| kin.link_mass(k).unwrap()).sum::<f64>()
                * g.norm();
            for j in 0..CAP {
                if j >= chain.len() {
                    prop_assert_eq!(tau[j], 0.0);
                    continue;
                }
                let fd = (potential(&chain, &with(&q, j, h), &g)
                    - potential(&chain, &with(&q, j, -h), &g))
                    / (2.0 * h);
                prop_assert!(close(tau[j], fd, 1e-6, 1e-8 * scale), "τ[{j}] = {} vs {fd}", tau[j]);
            }
        }

        /// The parent feed-forward follows its definition: ff_i = m_i (a_i·s_i) with
        /// a_i = Σ_{j<i} (τ_j/m_j) s_j, for any drive torques.
        #[test]
        fn parent_feedforward_follows_its_definition(
            (chain, q) in chain_strategy(),
            drive in prop::array::uniform6(-50.0..50.0f64),
        ) {
            let kin = chain.forward_kinematics(&q).unwrap();
            let composite = kin.composite().unwrap();
            let ff = composite.parent_feedforward(&SVector::from(drive)).unwrap();
            for i in 0..CAP {
                if i >= chain.len() {
                    prop_assert_eq!(ff[i], 0.0);
                    continue;
                }
                let a: Vector3<f64> = (0..i)
                    .map(|j| {
                        kin.joint_axis(j).unwrap() * (drive[j] / composite.axis_inertia_of(j).unwrap())
                    })
                    .sum();
                let expected = composite.axis_inertia_of(i).unwrap() * a.dot(&kin.joint_axis(i).unwrap());
                prop_assert!(close(ff[i], expected, 1e-12, 1e-12));
            }
        }

        /// The chain's arrival tick is, joint by joint, the single-joint solve on the composite
        /// inertia: the gains are `solve_arrival_gains` (or its fallback) for m_i, clamped to
        /// the limit of m_i, and the torque is drive + parent feed-forward + gravity.
        #[test]
        fn arrival_tick_solves_each_joint_on_its_composite_inertia(
            (chain, q) in chain_strategy(),
            qd in prop::array::uniform6(-3.0..3.0f64),
            poses in prop::array::uniform6(-PI..PI),
            times in prop::array::uniform6(-0.1..2.0f64),
        ) {
            let arrival = ChainArrival::new(ArrivalSettings::default(), Coupling::default()).unwrap();
            let config = arrival.settings();
            let targets = core::array::from_fn(|i| JointTarget {
                pose_rad: poses[i],
                time_to_go_s: times[i],
            });
            let g = Vector3::new(0.0, -9.81, 0.0);
            let command = arrival.tick(&chain, &q, &qd, &targets, &g).unwrap();
            let kin = chain.forward_kinematics(&q).unwrap();
            let composite = kin.composite().unwrap();
            let gravity = composite.gravity_torques(&g).unwrap();
            prop_assert_eq!(command.joints().len(), chain.len());
            let mut drives = SVector::<f64, CAP>::zeros();
            for (i, j) in command.joints().iter().enumerate() {
                let m = composite.axis_inertia_of(i).unwrap();
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
                drives[i] = drive;
            }
            let ff = composite.parent_feedforward(&drives).unwrap();
            for (i, j) in command.joints().iter().enumerate() {
                prop_assert_eq!(j.parent_feedforward_nm, ff[i]);
            }
            let torques = command.torques();
            prop_assert!(torques.iter().skip(chain.len()).all(|&t| t == 0.0));
        }
    }

    /// q̇ᵀ M(q) q̇ at `q`.
    fn twice_kinetic_energy(chain: &Chain<CAP>, q: &[f64; CAP], qd: &SVector<f64, CAP>) -> f64 {
        let m = chain.forward_kinematics(q).unwrap().mass_matrix().unwrap();
        qd.dot(&(m * qd))
    }

    /// The velocity terms of the Lagrangian form, c = Ṁq̇ − ½ ∂(q̇ᵀMq̇)/∂q, by central
    /// differences of the CRBA mass matrix (Ṁ = dM(q + t q̇)/dt at t = 0).
    fn lagrangian_velocity_torques(
        chain: &Chain<CAP>,
        q: &[f64; CAP],
        qd: &[f64; CAP],
        h: f64,
    ) -> SVector<f64, CAP> {
        let v = SVector::from(*qd);
        let along = |sign: f64| -> [f64; CAP] { core::array::from_fn(|j| q[j] + sign * h * qd[j]) };
        let m_plus = chain
            .forward_kinematics(&along(1.0))
            .unwrap()
            .mass_matrix()
            .unwrap();
        let m_minus = chain
            .forward_kinematics(&along(-1.0))
            .unwrap()
            .mass_matrix()
            .unwrap();
        let mut c = (m_plus - m_minus) / (2.0 * h) * v;
        for j in 0..chain.len() {
            let de = (twice_kinetic_energy(chain, &with(q, j, h), &v)
                - twice_kinetic_energy(chain, &with(q, j, -h), &v))
                / (2.0 * h);
            c[j] -= 0.5 * de;
        }
        c
    }

    /// A length scale of a chain at a configuration: the farthest centre of mass from the root
    /// joint, plus 1 m.
    fn reach(kin: &Kinematics<CAP>) -> f64 {
        let d0 = kin.joint_position(0).unwrap();
        (0..kin.len())
            .map(|k| (kin.link_com(k).unwrap() - d0).norm())
            .fold(1.0, f64::max)
            + 1.0
    }

    proptest! {
        /// At rest and without gravity, inverse dynamics is the CRBA mass matrix times q̈.
        #[test]
        fn inverse_dynamics_at_rest_without_gravity_is_m_times_qdd(
            (chain, q) in chain_strategy(),
            qdd in prop::array::uniform6(-20.0..20.0f64),
        ) {
            let kin = chain.forward_kinematics(&q).unwrap();
            let tau = kin.inverse_dynamics(&[0.0; CAP], &qdd, &Vector3::zeros()).unwrap();
            let m = kin.mass_matrix().unwrap();
            let mut qdd_in_chain = SVector::<f64, CAP>::from(qdd);
            for i in chain.len()..CAP {
                qdd_in_chain[i] = 0.0;
            }
            let expected = m * qdd_in_chain;
            let scale = m.amax() * 20.0;
            for i in 0..CAP {
                if i >= chain.len() {
                    prop_assert_eq!(tau[i], 0.0);
                    continue;
                }
                prop_assert!(close(tau[i], expected[i], 0.0, 1e-12 * scale),
                    "τ[{i}] = {} vs M q̈ = {}", tau[i], expected[i]);
            }
        }

        /// Held still, inverse dynamics is the gravity holding torque of the composite.
        #[test]
        fn inverse_dynamics_held_still_is_the_gravity_torque(
            (chain, q) in chain_strategy(),
            g in prop::array::uniform3(-10.0..10.0f64),
        ) {
            let g = Vector3::from(g);
            let kin = chain.forward_kinematics(&q).unwrap();
            let tau = kin.inverse_dynamics(&[0.0; CAP], &[0.0; CAP], &g).unwrap();
            let expected = kin.gravity_torques(&g).unwrap();
            let mass: f64 = (0..chain.len()).map(|k| kin.link_mass(k).unwrap()).sum();
            let scale = mass * g.norm() * reach(&kin);
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
            (chain, q) in chain_strategy(),
            qd in prop::array::uniform6(-3.0..3.0f64),
            qdd in prop::array::uniform6(-20.0..20.0f64),
            g in prop::array::uniform3(-10.0..10.0f64),
        ) {
            let g = Vector3::from(g);
            let kin = chain.forward_kinematics(&q).unwrap();
            let zero = [0.0; CAP];
            let c = kin.inverse_dynamics(&qd, &zero, &Vector3::zeros()).unwrap();
            let lagrange = lagrangian_velocity_torques(&chain, &q, &qd, 1e-5);
            let m = kin.mass_matrix().unwrap();
            let speed = qd.iter().take(chain.len()).fold(0.0f64, |a, v| a.max(v.abs()));
            // |c| ≲ |∂M/∂q| |q̇|², and |∂M/∂q| ≲ |M| / reach... take |M| |q̇|² as the scale.
            let scale = m.amax() * speed * speed * CAP as f64;
            for i in 0..CAP {
                if i >= chain.len() {
                    prop_assert_eq!(c[i], 0.0);
                    continue;
                }
                prop_assert!(close(c[i], lagrange[i], 1e-6, 1e-7 * scale),
                    "c[{i}] = {} vs Lagrangian {}", c[i], lagrange[i]);
            }
            let all = kin.inverse_dynamics(&qd, &qdd, &g).unwrap();
            let parts = kin.inverse_dynamics(&zero, &qdd, &Vector3::zeros()).unwrap()
                + c
                + kin.inverse_dynamics(&zero, &zero, &g).unwrap();
            let mass: f64 = (0..chain.len()).map(|k| kin.link_mass(k).unwrap()).sum();
            let total = m.amax() * (20.0 + speed * speed)
                + mass * g.norm() * reach(&kin);
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
            (chain, q) in chain_strategy(),
            qd in prop::array::uniform6(-3.0..3.0f64),
            poses in prop::array::uniform6(-PI..PI),
            times in prop::array::uniform6(-0.1..2.0f64),
        ) {
            let plain = ChainArrival::new(ArrivalSettings::default(), Coupling::default()).unwrap();
            let exact =
                ChainArrival::new(ArrivalSettings::default(), Coupling::InverseDynamics).unwrap();
            let targets = core::array::from_fn(|i| JointTarget {
                pose_rad: poses[i],
                time_to_go_s: times[i],
            });
            let g = Vector3::new(0.0, -9.81, 0.0);
            let a = plain.tick(&chain, &q, &qd, &targets, &g).unwrap();
            let b = exact.tick(&chain, &q, &qd, &targets, &g).unwrap();
            let kin = chain.forward_kinematics(&q).unwrap();
            let mut desired = [0.0; CAP];
            prop_assert_eq!(b.joints().len(), chain.len());
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

    /// The errors |q_i − pose_i| of every joint at every target instant, for a 3-link planar arm
    /// (vertical plane, gravity −y) simulated with the model's own dynamics
    /// q̈ = M⁻¹(τ − c − τ_g), semi-implicit Euler at 1 ms, the arrival tick at 1 ms.
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
        let arrival = ChainArrival::new(
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
                    .tick_tree(&tree, &Isometry3::identity(), &[q], &[v], &[target], &g)
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
            ChainArrival::new(ArrivalSettings::default(), Coupling::InverseDynamics).unwrap();
        let target = JointTarget {
            pose_rad: 0.5,
            time_to_go_s: 0.4,
        };
        let g = Vector3::new(0.0, 0.0, -9.81);
        let q = [0.1, -0.2];
        let qd = [0.3, 0.001];
        let base = arrival
            .tick_tree(&tree, &Isometry3::identity(), &q, &qd, &[target; 2], &g)
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

    fn simulated_arrival_errors(coupling: Coupling, stability_margin: f64) -> Vec<[f64; 3]> {
        let z = [0.0, 0.0, 1.0];
        let chain = Chain::<3>::new(&[
            box_link([0.0; 3], z, 3.0, [0.25, 0.0, 0.0], [0.5, 0.08, 0.08]),
            box_link([0.5, 0.0, 0.0], z, 2.0, [0.2, 0.0, 0.0], [0.4, 0.06, 0.06]),
            box_link([0.4, 0.0, 0.0], z, 1.0, [0.15, 0.0, 0.0], [0.3, 0.05, 0.05]),
        ])
        .unwrap();
        let dt = 0.001;
        let arrival = ChainArrival::new(
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
                    let command = arrival.tick(&chain, &q, &qd, &targets, &g).ok()?;
                    let kin = chain.forward_kinematics(&q).ok()?;
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
    fn arm_chain() -> Chain<1> {
        let l = ARM.length_m;
        let a = ARM.thickness_m;
        Chain::new(&[box_link(
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
        let chain = arm_chain();
        let g = Vector3::new(0.0, -ARM.gravity_m_s2, 0.0);
        for k in -8..=8 {
            let theta = f64::from(k) * PI / 8.0;
            let kin = chain.forward_kinematics(&[theta]).unwrap();
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
            let tau = kin.gravity_torques(&g).unwrap()[0];
            assert!(
                close(tau, -ARM.gravity_torque_nm(theta), 1e-14, 1e-14),
                "{tau} at {theta}"
            );
        }
    }

    /// One joint, one tick: the chain's arrival tick gives the torque of the one-joint
    /// `ArrivalServo` configured with the arm's inertia and fed the arm's gravity torque.
    #[test]
    fn one_link_arrival_tick_is_the_arrival_servo() {
        let chain = arm_chain();
        let config = ArrivalSettings::default();
        let arrival = ChainArrival::new(config, Coupling::default()).unwrap();
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
                    &chain,
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
        let chain = Chain::<2>::new(&[
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
        ])
        .unwrap();
        let (q0, q1) = (0.4, -1.1);
        let kin = chain.forward_kinematics(&[q0, q1]).unwrap();
        let d1 = Vector3::new(l1 * q0.cos(), l1 * q0.sin(), 0.0);
        let c2 = d1 + Vector3::new((q0 + q1).cos(), (q0 + q1).sin(), 0.0) * (l2 / 2.0);
        assert!((kin.joint_position(1).unwrap() - d1).norm() < 1e-15);
        assert!((kin.link_com(1).unwrap() - c2).norm() < 1e-15);
        assert!((kin.joint_axis(1).unwrap() - Vector3::z()).norm() < 1e-15);
        assert_eq!(chain.joint_axis_local(1), Some(Vector3::z()));
        let pose = kin.link_pose(1).unwrap();
        assert!((pose.rotation.angle() - (q0 + q1).abs()).abs() < 1e-15);
        assert!((pose * nalgebra::Point3::origin() - nalgebra::Point3::from(d1)).norm() < 1e-15);
    }

    /// URDF's rpy: fixed-axis roll, pitch, yaw. A yaw of π/2 turns the joint frame's x onto the
    /// parent's y; a roll of π/2 turns a z axis onto −y.
    #[test]
    fn origin_rpy_is_urdf_fixed_axis_roll_pitch_yaw() {
        let mut spec = box_link([0.0; 3], [0.0, 0.0, 1.0], 1.0, [1.0, 0.0, 0.0], [1.0; 3]);
        spec.origin_rpy_rad = [0.0, 0.0, FRAC_PI_2];
        let kin = Chain::<1>::new(&[spec])
            .unwrap()
            .forward_kinematics(&[0.0])
            .unwrap();
        assert!((kin.link_com(0).unwrap() - Vector3::y()).norm() < 1e-15);
        spec.origin_rpy_rad = [FRAC_PI_2, 0.0, 0.0];
        let kin = Chain::<1>::new(&[spec])
            .unwrap()
            .forward_kinematics(&[0.0])
            .unwrap();
        assert!((kin.joint_axis(0).unwrap() + Vector3::y()).norm() < 1e-15);
        // Roll then pitch then yaw about the fixed axes: R = Rz(y) Ry(p) Rx(r).
        spec.origin_rpy_rad = [0.3, -0.2, 1.1];
        let kin = Chain::<1>::new(&[spec])
            .unwrap()
            .forward_kinematics(&[0.0])
            .unwrap();
        let r = Rotation3::from_axis_angle(&Vector3::z_axis(), 1.1)
            * Rotation3::from_axis_angle(&Vector3::y_axis(), -0.2)
            * Rotation3::from_axis_angle(&Vector3::x_axis(), 0.3);
        assert!((kin.link_pose(0).unwrap().rotation.into_inner() - r.into_inner()).amax() < 1e-15);
    }

    /// Where the child's centre of mass lies on its own axis and the axes are parallel, the
    /// slide's feed-forward is the exact coupling M_10·q̈_0 with q̈_0 = τ_0/m_0; with
    /// perpendicular axes it is zero.
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
        let kin = Chain::<2>::new(&[arm, rotor([0.0, 0.0, 1.0])])
            .unwrap()
            .forward_kinematics(&[0.3, 0.9])
            .unwrap();
        let composite = kin.composite().unwrap();
        let m = composite.mass_matrix().unwrap();
        let drive = SVector::<f64, 2>::new(4.0, -1.0);
        let ff = composite.parent_feedforward(&drive).unwrap();
        assert_eq!(ff[0], 0.0);
        assert!(close(
            ff[1],
            m[(1, 0)] * drive[0] / composite.axis_inertia()[0],
            1e-14,
            0.0
        ));
        let kin = Chain::<2>::new(&[arm, rotor([1.0, 0.0, 0.0])])
            .unwrap()
            .forward_kinematics(&[0.3, 0.9])
            .unwrap();
        let ff = kin.composite().unwrap().parent_feedforward(&drive).unwrap();
        assert!(ff[1].abs() < 1e-15);
    }

    #[test]
    fn the_builder_names_the_link_and_the_field() {
        let good = box_link(
            [0.1, 0.0, 0.0],
            [0.0, 1.0, 0.0],
            1.0,
            [0.05, 0.0, 0.0],
            [0.1; 3],
        );
        let at_1 = |bad: LinkSpec| Chain::<3>::new(&[good, bad]).unwrap_err();
        let non_finite = |field| ChainError::NonFinite { link: 1, field };
        for v in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
            assert_eq!(
                at_1(LinkSpec {
                    origin_xyz_m: [0.0, v, 0.0],
                    ..good
                }),
                non_finite(LinkField::OriginXyz)
            );
            assert_eq!(
                at_1(LinkSpec {
                    origin_rpy_rad: [v, 0.0, 0.0],
                    ..good
                }),
                non_finite(LinkField::OriginRpy)
            );
            assert_eq!(
                at_1(LinkSpec {
                    axis: [0.0, 0.0, v],
                    ..good
                }),
                non_finite(LinkField::Axis)
            );
            assert_eq!(
                at_1(LinkSpec { mass_kg: v, ..good }),
                non_finite(LinkField::Mass)
            );
            assert_eq!(
                at_1(LinkSpec {
                    com_m: [v, 0.0, 0.0],
                    ..good
                }),
                non_finite(LinkField::CentreOfMass)
            );
            let mut inertia = good.inertia_kgm2;
            inertia[4] = v;
            assert_eq!(
                at_1(LinkSpec {
                    inertia_kgm2: inertia,
                    ..good
                }),
                non_finite(LinkField::Inertia)
            );
        }
        for m in [0.0, -0.0, -1.0] {
            assert_eq!(
                at_1(LinkSpec { mass_kg: m, ..good }),
                ChainError::NonPositiveMass { link: 1 }
            );
        }
        assert_eq!(
            at_1(LinkSpec {
                axis: [0.0; 3],
                ..good
            }),
            ChainError::ZeroAxis { link: 1 }
        );
        for inertia in [
            [0.0; 6],
            [-1.0, 0.0, 0.0, 1.0, 0.0, 1.0],
            [1.0, 0.0, 0.0, 1.0, 0.0, 0.0],
            [1.0, 1.0, 0.0, 1.0, 0.0, 1.0], // singular
            [1.0, 2.0, 0.0, 1.0, 0.0, 1.0], // indefinite
        ] {
            assert_eq!(
                at_1(LinkSpec {
                    inertia_kgm2: inertia,
                    ..good
                }),
                ChainError::InertiaNotPositiveDefinite { link: 1 }
            );
        }
        assert_eq!(
            Chain::<1>::new(&[good, good]).unwrap_err(),
            ChainError::CapacityExceeded { capacity: 1 }
        );
        assert_eq!(
            Chain::<0>::new(&[good]).unwrap_err(),
            ChainError::CapacityExceeded { capacity: 0 }
        );
        assert_eq!(Chain::<2>::new(&[]).unwrap_err(), ChainError::Empty);
        let mut builder = ChainBuilder::<2>::new();
        builder.push(&good).unwrap().push(&good).unwrap();
        assert_eq!(
            builder.push(&good).unwrap_err(),
            ChainError::CapacityExceeded { capacity: 2 }
        );
        assert_eq!(builder.build().unwrap().len(), 2);
    }

    /// Any finite non-zero axis is normalised, however large or small; any finite positive
    /// definite inertia is accepted, however large or small.
    #[test]
    fn axes_and_inertias_of_any_scale() {
        let good = box_link(
            [0.1, 0.0, 0.0],
            [0.0, 1.0, 0.0],
            1.0,
            [0.05, 0.0, 0.0],
            [0.1; 3],
        );
        for s in [f64::MAX, 1e200, 1.0, 1e-200, f64::MIN_POSITIVE, 5e-324] {
            let chain = Chain::<1>::new(&[LinkSpec {
                axis: [s, s, 0.0],
                ..good
            }])
            .unwrap();
            let axis = chain.joint_axis_local(0).unwrap();
            assert!(
                (axis - Vector3::new(1.0, 1.0, 0.0) / 2f64.sqrt()).norm() < 1e-15,
                "{s}"
            );
            let inertia = [s, 0.0, 0.0, s, 0.0, s];
            assert!(
                Chain::<1>::new(&[LinkSpec {
                    inertia_kgm2: inertia,
                    ..good
                }])
                .is_ok(),
                "{s}"
            );
        }
    }

    #[test]
    fn evaluations_name_the_bad_input() {
        let link = box_link(
            [0.1, 0.0, 0.0],
            [0.0, 1.0, 0.0],
            1.0,
            [0.05, 0.0, 0.0],
            [0.1; 3],
        );
        let chain = Chain::<3>::new(&[link, link]).unwrap();
        assert_eq!(
            chain.forward_kinematics(&[0.0, f64::NAN, 0.0]).unwrap_err(),
            ModelError::NonFinite(Input::Position { joint: 1 })
        );
        // Entries past the chain are never read.
        let kin = chain.forward_kinematics(&[0.0, 0.0, f64::NAN]).unwrap();
        assert_eq!(
            kin.point_jacobian(2, &Vector3::zeros()).unwrap_err(),
            ModelError::NoSuchLink { link: 2, len: 2 }
        );
        assert_eq!(
            kin.angular_jacobian(usize::MAX).unwrap_err(),
            ModelError::NoSuchLink {
                link: usize::MAX,
                len: 2
            }
        );
        assert_eq!(
            kin.point_jacobian(0, &Vector3::new(f64::INFINITY, 0.0, 0.0))
                .unwrap_err(),
            ModelError::NonFinite(Input::Point)
        );
        assert_eq!(kin.link_pose(2), None);
        assert_eq!(
            kin.gravity_torques(&Vector3::new(0.0, f64::NAN, 0.0))
                .unwrap_err(),
            ModelError::NonFinite(Input::Gravity)
        );
        let composite = kin.composite().unwrap();
        assert_eq!(
            composite
                .parent_feedforward(&SVector::from([1.0, f64::NAN, 0.0]))
                .unwrap_err(),
            ModelError::NonFinite(Input::DriveTorque { joint: 1 })
        );
        let g = Vector3::new(0.0, 0.0, -9.81);
        assert_eq!(
            kin.inverse_dynamics(&[0.0, f64::NAN, 0.0], &[0.0; 3], &g)
                .unwrap_err(),
            ModelError::NonFinite(Input::Velocity { joint: 1 })
        );
        assert_eq!(
            kin.inverse_dynamics(&[0.0; 3], &[f64::INFINITY, 0.0, 0.0], &g)
                .unwrap_err(),
            ModelError::NonFinite(Input::Acceleration { joint: 0 })
        );
        assert_eq!(
            kin.inverse_dynamics(&[0.0; 3], &[0.0; 3], &Vector3::new(f64::NAN, 0.0, 0.0))
                .unwrap_err(),
            ModelError::NonFinite(Input::Gravity)
        );
        // Past the chain, nothing is read.
        assert!(
            kin.inverse_dynamics(&[0.0, 0.0, f64::NAN], &[0.0, 0.0, f64::NAN], &g)
                .is_ok()
        );
        let arrival = ChainArrival::new(ArrivalSettings::default(), Coupling::default()).unwrap();
        let t = JointTarget {
            pose_rad: 1.0,
            time_to_go_s: 1.0,
        };
        let g = Vector3::new(0.0, 0.0, -9.81);
        let tick = |qd: [f64; 3], targets: [JointTarget; 3]| {
            arrival
                .tick(&chain, &[0.0; 3], &qd, &targets, &g)
                .unwrap_err()
        };
        assert_eq!(
            tick([0.0, f64::NAN, 0.0], [t; 3]),
            ModelError::NonFinite(Input::Velocity { joint: 1 })
        );
        let bad_pose = JointTarget {
            pose_rad: f64::NAN,
            ..t
        };
        assert_eq!(
            tick([0.0; 3], [bad_pose, t, t]),
            ModelError::NonFinite(Input::TargetPose { joint: 0 })
        );
        let bad_time = JointTarget {
            time_to_go_s: f64::NEG_INFINITY,
            ..t
        };
        assert_eq!(
            tick([0.0; 3], [t, bad_time, t]),
            ModelError::NonFinite(Input::TimeToGo { joint: 1 })
        );
        // Past the chain, nothing is read.
        assert!(
            arrival
                .tick(
                    &chain,
                    &[0.0; 3],
                    &[0.0, 0.0, f64::NAN],
                    &[t, t, bad_pose],
                    &g
                )
                .is_ok()
        );
    }

    /// Finite parameters whose products overflow give `OutOfRange`, never a NaN.
    #[test]
    fn overflowing_models_are_out_of_range() {
        let huge = box_link(
            [1e300, 0.0, 0.0],
            [0.0, 0.0, 1.0],
            1e300,
            [1e300, 0.0, 0.0],
            [1.0; 3],
        );
        let chain = Chain::<2>::new(&[huge, huge]).unwrap();
        let kin = chain.forward_kinematics(&[0.0, 0.0]).unwrap();
        assert_eq!(kin.composite().unwrap_err(), ModelError::OutOfRange);
        assert_eq!(kin.mass_matrix().unwrap_err(), ModelError::OutOfRange);
        assert_eq!(
            kin.inverse_dynamics(&[0.0; 2], &[1.0; 2], &Vector3::zeros())
                .unwrap_err(),
            ModelError::OutOfRange
        );
        // A moderate chain at a speed whose square overflows.
        let link = box_link(
            [0.5, 0.0, 0.0],
            [0.0, 1.0, 1.0],
            1.0,
            [0.25, 0.0, 0.0],
            [0.5, 0.1, 0.1],
        );
        let kin = Chain::<2>::new(&[link, link])
            .unwrap()
            .forward_kinematics(&[0.3, 0.2])
            .unwrap();
        assert_eq!(
            kin.inverse_dynamics(&[1e200, -1e200], &[0.0; 2], &Vector3::zeros())
                .unwrap_err(),
            ModelError::OutOfRange
        );
        let far = box_link(
            [f64::MAX, 0.0, 0.0],
            [0.0, 0.0, 1.0],
            1.0,
            [0.0; 3],
            [1.0; 3],
        );
        let chain = Chain::<2>::new(&[far, far]).unwrap();
        assert_eq!(
            chain.forward_kinematics(&[0.0, 0.0]).unwrap_err(),
            ModelError::OutOfRange
        );
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
                ChainArrival::new(config, Coupling::default()).unwrap_err(),
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
        let chain = Chain::<3>::new(&[link, link, link]).unwrap();
        let arrival = ChainArrival::new(ArrivalSettings::default(), Coupling::default()).unwrap();
        let target = JointTarget {
            pose_rad: 0.5,
            time_to_go_s: 0.006,
        };
        let command = arrival
            .tick(
                &chain,
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

        /// Nothing panics on any input, and every result that is returned is finite.
        #[test]
        fn nothing_panics_and_nothing_non_finite_escapes(
            links in prop::collection::vec((any::<u8>(), raw_values(19)), 0..=5),
            raw in raw_values(4 * 4 + 3 + 3 + 4),
            link in prop_oneof![0usize..5, any::<usize>()],
        ) {
            let specs: Vec<LinkSpec> = links.iter().map(|(kind, raw)| spec_from(*kind, raw)).collect();
            let v: Vec<f64> = raw.iter().copied().map(pick).collect();
            let q = [v[0], v[1], v[2], v[3]];
            let qd = [v[4], v[5], v[6], v[7]];
            let poses = [v[8], v[9], v[10], v[11]];
            let times = [v[12], v[13], v[14], v[15]];
            let g = [v[16], v[17], v[18]];
            let point = [v[19], v[20], v[21]];
            let config = (v[22], v[23], v[24], v[25]);
            let g = Vector3::from(g);
            let point = Vector3::from(point);
            let Ok(chain) = Chain::<4>::new(&specs) else { return Ok(()) };
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
                let Ok(arrival) = ChainArrival::new(settings, coupling) else { continue };
                if let Ok(command) = arrival.tick(&chain, &q, &qd, &targets, &g) {
                    for j in command.joints() {
                        prop_assert!(all_finite_slice(&[j.inertia_kgm2, j.setpoint_rad, j.drive_nm,
                            j.parent_feedforward_nm, j.gravity_nm, j.torque_nm,
                            j.gains.stiffness_nm_per_rad, j.gains.damping_nms_per_rad]));
                    }
                    prop_assert!(all_finite_slice(&command.torques()));
                }
            }
            let Ok(kin) = chain.forward_kinematics(&q) else { return Ok(()) };
            if let Some(pose) = kin.link_pose(link) {
                prop_assert!(all_finite_slice(pose.rotation.matrix().as_slice()));
            }
            if let Ok(p) = kin.point_in_world(link, &point) {
                prop_assert!(all_finite_slice(p.as_slice()));
            }
            if let Ok(j) = kin.point_jacobian(link, &point) {
                prop_assert!(all_finite_slice(j.as_slice()));
            }
            if let Ok(j) = kin.angular_jacobian(link) {
                prop_assert!(all_finite_slice(j.as_slice()));
            }
            if let Ok(t) = kin.gravity_torques(&g) {
                prop_assert!(all_finite_slice(t.as_slice()));
            }
            if let Ok(m) = kin.mass_matrix() {
                prop_assert!(all_finite_slice(m.as_slice()));
            }
            // Any values as accelerations: the poses.
            if let Ok(t) = kin.inverse_dynamics(&qd, &poses, &g) {
                prop_assert!(all_finite_slice(t.as_slice()));
            }
            if let Ok(composite) = kin.composite() {
                let m = composite.axis_inertia();
                prop_assert!(all_finite_slice(m.as_slice()));
                prop_assert!(m.iter().take(chain.len()).all(|&v| v > 0.0));
                if let Ok(ff) = composite.parent_feedforward(&SVector::from(qd)) {
                    prop_assert!(all_finite_slice(ff.as_slice()));
                }
            }
        }
    }
}
