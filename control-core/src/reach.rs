//! Reaching with a robot's hand: Kenwright's joint-torque control of an end effector
//! ("Joint-Torque Control of Character Motions", seed 002), with the null-space posture torque
//! projected either by the seed's pseudo-inverse or dynamically consistently (Khatib), and
//! cyclic coordinate descent (CCD) inverse kinematics as the cheap kinematic alternative the seed
//! names, both on a fixed-base kinematic [`Tree`] (branches, revolute and prismatic joints; a
//! serial chain is a tree too).
//!
//! For: a controller tick that must put a hand point of the tree at a world target (a
//! spring-damper pulling the hand, mapped to joint torques by Jᵀ) while a secondary posture goal
//! uses only what the hand task leaves free ([`Reach::tick`]); and a bounded IK solve
//! ([`ccd_ik`]) whose joint targets a joint servo ([`crate::articulated::TreeArrival`]) can then
//! track.
//!
//! Must never allocate, block or panic, whatever the input, and never return a NaN: every input
//! is checked ([`ReachError`] names it), a singular or rank-deficient Jacobian is regularised
//! (below) rather than inverted, and a result that is not a finite f64 (finite inputs whose
//! products overflow) is [`ModelError::OutOfRange`]. Nothing loops longer than O(N³) per tick;
//! [`ccd_ik`] runs at most the caller's `max_sweeps` sweeps of O(N) each.
//!
//! ```
//! use control_core::articulated::nalgebra::{Isometry3, Vector3};
//! use control_core::articulated::{LinkSpec, serial_tree};
//! use control_core::reach::{Projector, Reach, ReachConfig, ccd_ik};
//! use control_core::tree::Tree;
//! // A planar 3-link arm about +z, in a vertical plane (gravity −y), as a fixed-base tree: link i
//! // is joint i, its body i + 1, so the hand, at the tip of link 2, is on body 3.
//! let rod = |x: f64| LinkSpec {
//!     origin_xyz_m: [x, 0.0, 0.0],
//!     origin_rpy_rad: [0.0; 3],
//!     axis: [0.0, 0.0, 1.0],
//!     mass_kg: 1.0,
//!     com_m: [0.15, 0.0, 0.0],
//!     inertia_kgm2: [0.0004, 0.0, 0.0, 0.0077, 0.0, 0.0077],
//! };
//! let tree: Tree<3> = serial_tree(&[rod(0.0), rod(0.3), rod(0.3)])?;
//! let base = Isometry3::identity();
//! let hand_body = 3;
//! let reach = Reach::new(ReachConfig {
//!     projector: Projector::DynamicallyConsistent,
//!     hand_point_m: [0.3, 0.0, 0.0],
//!     stiffness_n_per_m: 400.0,
//!     damping_ns_per_m: 40.0,
//!     posture_stiffness_nm_per_rad: 10.0,
//!     posture_damping_nms_per_rad: 2.0,
//!     gravity_compensation: true,
//! })?;
//! let q = [0.3, 0.6, 0.4];
//! let target = Vector3::new(0.5, 0.5, 0.0);
//! let gravity = Vector3::new(0.0, -9.81, 0.0);
//! let command =
//!     reach.tick(&tree, &base, hand_body, &q, &[0.0; 3], &target, &Vector3::zeros(), &q, &gravity)?;
//! assert!(command.torques_nm.iter().all(|t| t.is_finite()));
//! // The IK alternative: joint targets that put the hand on the target.
//! let hand_point = Vector3::new(0.3, 0.0, 0.0);
//! let ik = ccd_ik(&tree, &base, &q, hand_body, &hand_point, &target, 50, 1e-4)?;
//! assert!(ik.converged() && ik.residual_m <= 1e-4);
//!
//! // The same arm built joint by joint, as any tree is: each joint names its parent body.
//! use control_core::tree::{BaseKind, Inertial, JointSpec, JointType, Placement, TreeSpec};
//! let joint = |parent_body: usize, x: f64| JointSpec {
//!     parent_body,
//!     kind: JointType::Revolute,
//!     origin: Placement::from_xyz_rpy([x, 0.0, 0.0], [0.0; 3]),
//!     axis: [0.0, 0.0, 1.0],
//!     body: Inertial {
//!         mass_kg: 1.0,
//!         com_m: [0.15, 0.0, 0.0],
//!         inertia_kgm2: [0.0004, 0.0, 0.0, 0.0077, 0.0, 0.0077],
//!     },
//! };
//! let joints = [joint(0, 0.0), joint(1, 0.3), joint(2, 0.3)];
//! let spec = TreeSpec { base: BaseKind::Fixed, base_body: Inertial::ZERO, joints: &joints };
//! let by_joint = Tree::<3>::new(&spec)?;
//! let same =
//!     reach.tick(&by_joint, &base, 3, &q, &[0.0; 3], &target, &Vector3::zeros(), &q, &gravity)?;
//! assert_eq!(same.torques_nm, command.torques_nm);
//! # Ok::<(), Box<dyn core::error::Error>>(())
//! ```
//!
//! # The hand
//! The hand is a point ([`ReachConfig::hand_point_m`]) on a **body**, `hand_body`: body 0 is the
//! base, joint k's child is body k + 1, and a body's parent is any earlier body. For a chain
//! built link by link ([`crate::articulated::serial_tree`]) link i is body i + 1; on a branching
//! tree no such formula exists. A body past the tree is [`ReachError::NoSuchBody`]; body 0 (the
//! base) is allowed and moves with no joint. Only the joints on the hand body's path to the base
//! carry the hand: the tree's frame Jacobian ([`TreeKinematics::frame_jacobian`], whose linear
//! rows 0..3 are J here) is zero in every other column, so the joints of other branches get no
//! task torque and their posture torque passes the projector unchanged. A prismatic joint's
//! column is its axis s; its position, velocity and posture goal are in m and m/s, its torque
//! entries are forces, N, and the posture gains act on it as N/m and N·s/m. [`Reach::tick`] and
//! [`ccd_ik`] are for a **fixed** base only: a floating base is [`ModelError::FloatingBase`] (its
//! six unactuated coordinates can carry no torque, and CCD would hold them where they are).
//!
//! # The torques
//! With x the world hand point, J its 3×N point Jacobian (the linear rows of
//! [`TreeKinematics::frame_jacobian`]), ẋ = J q̇, M the mass matrix
//! ([`TreeKinematics::mass_matrix`]) and g the gravity holding torque
//! ([`TreeKinematics::gravity`]):
//!
//!   F = K(x* − x) + D(ẋ* − ẋ),  τ_p = K_p(q_g − q) − K_d q̇,
//!   τ = Jᵀ F + (I − Jᵀ Wᵀ) τ_p + g,
//!
//! where Wᵀ is [`Projector::PseudoInverse`]'s J⁺ᵀ = (JJᵀ)⁻¹J (the seed's equation 9: the
//! null-space torque makes no *static* hand force, J⁺ᵀ τ_null = 0, but does accelerate the hand)
//! or [`Projector::DynamicallyConsistent`]'s J̄ᵀ = (JM⁻¹Jᵀ)⁻¹JM⁻¹ (Khatib: J̄ᵀ τ_null = 0, so
//! J M⁻¹ τ_null = 0 and the null-space torque gives the hand no acceleration).
//!
//! # Rank deficiency: a fixed, trace-relative regularisation
//! J is often rank-deficient: a planar arm's J has a zero row (rank ≤ 2), a stretched arm loses
//! a direction, a non-redundant arm has no null space at all. The 3×3 matrix to invert,
//! A = JJᵀ (pseudo-inverse) or A = JM⁻¹Jᵀ (dynamically consistent), is therefore inverted as
//! A + μ²𝟙 with μ² = [`REGULARISATION`]·tr A (after scaling J to a largest entry of 1 and M to
//! a largest diagonal of 1, which changes neither projector; a J that is exactly zero projects
//! nothing and τ_null = τ_p). Precisely, with A's eigenvalues λ_k relative to its trace
//! (λ̂_k = λ_k / tr A), the part of τ_p the projector removes in direction k is scaled by
//! λ̂_k / (λ̂_k + ε), ε = [`REGULARISATION`]:
//! - a direction J does not reach at all (λ̂ = 0: a zero row, the normal of a planar arm) gets
//!   factor 0: it contributes nothing, which is exactly what the Moore–Penrose pseudo-inverse of
//!   the non-degenerate block gives;
//! - a well-conditioned direction (λ̂ ≫ ε) is removed up to a relative leak ε/(λ̂ + ε), 1e−8 at
//!   λ̂ = 0.1;
//! - near a singularity (λ̂ ≈ ε, e.g. an arm within about √ε·reach, 3e−5 of a metre-long arm, of
//!   full stretch) the projector passes smoothly from one to the other instead of jumping, and
//!   every entry of the regularised inverse stays below 1/(ε·tr A): the result is finite.
//!
//! The task torque Jᵀ F involves no inverse and is never regularised.
//!
//! # CCD
//! [`ccd_ik`] sweeps the joints on the hand body's path to the base, tip to root. A revolute
//! joint is turned about its axis by the angle that takes the hand toward the target in the
//! plane normal to the axis (both projected onto it), which minimises the distance over that
//! joint alone, and the hand is carried along by the same rotation; a prismatic joint is slid
//! along its unit axis s by the error's projection onto it, δ = s·(x* − x) (m), which likewise
//! minimises the distance over that joint alone, and the hand is carried by s δ. The joints
//! still to be moved, closer to the root, have not moved, so their positions and axes from the
//! sweep's one tree kinematics hold: a sweep costs one tree kinematics. Joints off the path keep
//! their values. It stops when the residual is within the tolerance ([`CcdOutcome::Converged`]),
//! when a sweep improves it by less than [`CCD_STALL_FRACTION`] of itself (a fixed point: an
//! unreachable target, [`CcdOutcome::Stalled`]) or after `max_sweeps`
//! ([`CcdOutcome::SweepLimit`]); the residual is always reported. No joint limits are applied.
//!
//! To track the solution with PD and gravity, hand its joint positions to
//! [`crate::articulated::TreeArrival::tick`] as [`crate::articulated::JointTarget`]s (a
//! `time_to_go_s` of 0 holds each pose critically damped, with gravity feed-forward): no second
//! PD is kept here.
//!
//! # Costs (measured)
//! `cargo bench -p control-core --bench reach -- --warm-up-time 1 --measurement-time 3`, a
//! 3-link arm built as a [`Tree`], x86-64 baseline build, on a shared 2-core machine under other
//! jobs (load average 1; one run, criterion medians; expect up to 2× spread between runs):
//!
//! | 3-link arm | median |
//! |---|---|
//! | [`Reach::tick`], [`Projector::PseudoInverse`] | 0.53 µs |
//! | [`Reach::tick`], [`Projector::DynamicallyConsistent`] (M and its Cholesky factor) | 0.69 µs |
//! | [`ccd_ik`] to 1e−4 m, 20 sweeps | 6.3 µs |
//!
//! A CCD sweep is one tree kinematics and, per revolute joint on the path, one `atan2` and one
//! `sincos`. The tick forms its hand position through a frame pose (a rotation-to-quaternion
//! conversion it does not need) and its gravity and mass matrix from two separate subtree
//! accumulations.
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

use nalgebra::{Cholesky, Isometry3, Matrix3, SMatrix, SVector, Vector3};

use crate::articulated::{Input, ModelError, model_error};
use crate::tree::{BaseKind, EvalInput, JointType, Placement, Tree, TreeEvalError, TreeKinematics};

/// ε: the regularisation of the 3×3 task-space inverse relative to its trace (see the module
/// docs).
pub const REGULARISATION: f64 = 1e-9;

/// [`ccd_ik`] stops as [`CcdOutcome::Stalled`] when a sweep reduces the residual by less than
/// this fraction of it.
pub const CCD_STALL_FRACTION: f64 = 1e-9;

/// How the posture torque is projected into the hand task's null space.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Projector {
    /// The seed's: τ_null = (I − Jᵀ J⁺ᵀ) τ_p, J⁺ = Jᵀ(JJᵀ)⁻¹. No static hand force; the hand is
    /// still accelerated by τ_null.
    PseudoInverse,
    /// Khatib's: τ_null = (I − Jᵀ J̄ᵀ) τ_p, J̄ = M⁻¹Jᵀ(JM⁻¹Jᵀ)⁻¹. No hand acceleration from
    /// τ_null (J M⁻¹ τ_null = 0).
    DynamicallyConsistent,
}

/// Configuration of [`Reach`]. SI units.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ReachConfig {
    /// The null-space projector.
    pub projector: Projector,
    /// The hand point in the frame of the body that carries it ([`Reach::tick`]'s `hand_body`,
    /// see the module docs, "The hand"), m.
    pub hand_point_m: [f64; 3],
    /// K, the hand spring, N/m (≥ 0).
    pub stiffness_n_per_m: f64,
    /// D, the hand damper, N·s/m (≥ 0).
    pub damping_ns_per_m: f64,
    /// K_p, the posture spring of every joint, N·m/rad (≥ 0).
    pub posture_stiffness_nm_per_rad: f64,
    /// K_d, the posture damper of every joint, N·m·s/rad (≥ 0).
    pub posture_damping_nms_per_rad: f64,
    /// Whether to add the gravity holding torque (outside the projector).
    pub gravity_compensation: bool,
}

/// A field of a [`ReachConfig`], or a setting of [`ccd_ik`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ReachField {
    /// [`ReachConfig::hand_point_m`] (not finite).
    HandPoint,
    /// [`ReachConfig::stiffness_n_per_m`].
    Stiffness,
    /// [`ReachConfig::damping_ns_per_m`].
    Damping,
    /// [`ReachConfig::posture_stiffness_nm_per_rad`].
    PostureStiffness,
    /// [`ReachConfig::posture_damping_nms_per_rad`].
    PostureDamping,
    /// [`ccd_ik`]'s `tolerance_m` (finite, ≥ 0).
    IkTolerance,
}

/// An input of this module that [`Input`] does not name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ReachInput {
    /// The hand target position.
    HandTarget,
    /// The hand target velocity.
    HandTargetVelocity,
    /// A posture goal q_g,i.
    PostureGoal {
        /// The joint.
        joint: usize,
    },
    /// The base pose given to [`Reach::tick`] or [`ccd_ik`] (a NaN or infinite entry, or a
    /// quaternion of length zero).
    BasePose,
}

/// Why [`Reach`] or [`ccd_ik`] returned no result.
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub enum ReachError {
    /// The tree refused an evaluation: a non-finite joint position or velocity
    /// ([`Input::Position`], [`Input::Velocity`], by joint), gravity ([`Input::Gravity`]) or
    /// hand point ([`Input::Point`]), a floating base ([`ModelError::FloatingBase`]), or a
    /// result beyond the f64 range ([`ModelError::OutOfRange`], also when the mass matrix or the
    /// regularised task matrix cannot be factored in f64).
    Model(ModelError),
    /// The hand body given to [`Reach::tick`] or [`ccd_ik`] is past the tree.
    NoSuchBody {
        /// The body asked for.
        body: usize,
        /// The tree's number of bodies (joints + 1, the base included).
        bodies: usize,
    },
    /// A configuration field or setting is not finite or outside its range.
    Config(ReachField),
    /// An input is NaN or infinite.
    NonFinite(ReachInput),
}

impl From<ModelError> for ReachError {
    fn from(error: ModelError) -> Self {
        Self::Model(error)
    }
}

impl fmt::Display for ReachError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Model(error) => write!(f, "reach: {error}"),
            Self::NoSuchBody { body, bodies } => {
                write!(f, "reach: no hand body {body} (the tree has {bodies})")
            }
            Self::Config(field) => write!(f, "reach config: {field:?} out of range"),
            Self::NonFinite(input) => write!(f, "reach: {input:?} is not finite"),
        }
    }
}

impl core::error::Error for ReachError {
    fn source(&self) -> Option<&(dyn core::error::Error + 'static)> {
        match self {
            Self::Model(error) => Some(error),
            _ => None,
        }
    }
}

/// What one [`Reach::tick`] commands, and its parts, for logging. Entries past the tree's joint
/// count are 0. A prismatic joint's entries are forces, N.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ReachCommand<const N: usize> {
    /// Task + null space + gravity, N·m (no torque limit is applied here).
    pub torques_nm: [f64; N],
    /// The task torque Jᵀ F, N·m.
    pub task_torques_nm: [f64; N],
    /// The projected posture torque (I − Jᵀ Wᵀ) τ_p, N·m.
    pub null_space_torques_nm: [f64; N],
    /// The gravity holding torque (0 when [`ReachConfig::gravity_compensation`] is off), N·m.
    pub gravity_torques_nm: [f64; N],
    /// The hand point x, world, m.
    pub hand_position_m: Vector3<f64>,
    /// ẋ = J q̇, world, m/s.
    pub hand_velocity_m_s: Vector3<f64>,
    /// x* − x, world, m.
    pub hand_error_m: Vector3<f64>,
    /// F = K(x* − x) + D(ẋ* − ẋ), world, N.
    pub hand_force_n: Vector3<f64>,
    /// ‖q_g − q‖ over the tree's joints, rad (m for a prismatic joint).
    pub posture_error_rad: f64,
}

impl<const N: usize> ReachCommand<N> {
    /// ‖x* − x‖, m.
    pub fn hand_error_norm_m(&self) -> f64 {
        libm::sqrt(self.hand_error_m.norm_squared())
    }
}

/// Kenwright's hand controller for a fixed-base tree (see the module docs).
/// Stateless: a configuration, validated once.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Reach {
    config: ReachConfig,
}

impl Reach {
    /// Validate `config`: a finite hand point, finite non-negative gains.
    pub fn new(config: ReachConfig) -> Result<Self, ReachError> {
        if !all_finite(&config.hand_point_m) {
            return Err(ReachError::Config(ReachField::HandPoint));
        }
        let gain = |v: f64, field| {
            if v.is_finite() && v >= 0.0 {
                Ok(())
            } else {
                Err(ReachError::Config(field))
            }
        };
        gain(config.stiffness_n_per_m, ReachField::Stiffness)?;
        gain(config.damping_ns_per_m, ReachField::Damping)?;
        gain(
            config.posture_stiffness_nm_per_rad,
            ReachField::PostureStiffness,
        )?;
        gain(
            config.posture_damping_nms_per_rad,
            ReachField::PostureDamping,
        )?;
        Ok(Self { config })
    }

    /// The configuration.
    pub fn config(&self) -> ReachConfig {
        self.config
    }

    /// One tick on a fixed-base kinematic tree ([`Tree`]) welded at `base_pose` (world), the
    /// hand point [`ReachConfig::hand_point_m`] on body `hand_body` (0 the base, k + 1 joint k's
    /// child; see the module docs, "The hand"): the hand's position, velocity and Jacobian at
    /// (`q`, `qd`), the hand force toward `hand_target_m` moving at `hand_target_velocity`
    /// (world, m and m/s), the posture torque toward `posture_rad`, its projection into the
    /// task's null space, and gravity. J is the linear part of the tree's frame Jacobian (zero
    /// in the columns of joints that do not carry the hand), M the tree's mass matrix (CRBA), g
    /// its generalized gravity. Only the first [`Tree::joint_count`] entries of `q`, `qd` and
    /// `posture_rad` are read (rad, rad/s for a revolute joint; m, m/s for a prismatic one);
    /// `gravity` (world, m/s²) is checked even when compensation is off.
    ///
    /// A floating base is [`ModelError::FloatingBase`] and a hand body past the tree
    /// [`ReachError::NoSuchBody`], both before any input is read; a non-finite base pose is
    /// [`ReachInput::BasePose`], a non-finite joint position or velocity is named with its
    /// joint, and every other input by its name ([`ReachError`]).
    ///
    /// Cost: the tree's kinematics, one frame pose and 6×N frame Jacobian, the generalized
    /// gravity (when compensated), and for [`Projector::DynamicallyConsistent`] the mass matrix
    /// and its Cholesky factor (O(N³)).
    #[allow(clippy::too_many_arguments)]
    pub fn tick<const N: usize>(
        &self,
        tree: &Tree<N>,
        base_pose: &Isometry3<f64>,
        hand_body: usize,
        q: &[f64; N],
        qd: &[f64; N],
        hand_target_m: &Vector3<f64>,
        hand_target_velocity: &Vector3<f64>,
        posture_rad: &[f64; N],
        gravity: &Vector3<f64>,
    ) -> Result<ReachCommand<N>, ReachError> {
        check_tree(tree, hand_body)?;
        let goals = Goals {
            q,
            qd,
            hand_target_m,
            hand_target_velocity,
            posture_rad,
            gravity,
        };
        goals.check()?;
        let kin = tree.kinematics(base_pose, q).map_err(tree_error)?;
        let placement = hand_placement(self.config.hand_point_m);
        let hand = tree_hand(&kin, hand_body, &placement)?;
        let jacobian = kin
            .frame_jacobian(hand_body, &placement)
            .map_err(tree_error)?
            .fixed_rows::<3>(0)
            .into_owned();
        let posture = self.posture(&goals, kin.joint_count())?;
        self.command(&goals, &posture, &hand, &jacobian, &kin)
    }

    /// The joint-space part of a tick over the tree's first `joints` joints (entries past them
    /// are never read: they may hold anything), checked joint by joint: q̇, the posture torque
    /// τ_p = K_p(q_g − q) − K_d q̇ and ‖q_g − q‖².
    fn posture<const N: usize>(
        &self,
        goals: &Goals<'_, N>,
        joints: usize,
    ) -> Result<Posture<N>, ReachError> {
        let c = &self.config;
        let mut out = Posture::<N> {
            joints,
            velocity: SVector::zeros(),
            torque: SVector::zeros(),
            error_sq: 0.0,
        };
        for (joint, ((((v, p), &qi), &vi), &goal)) in out
            .velocity
            .iter_mut()
            .zip(out.torque.iter_mut())
            .zip(goals.q.iter())
            .zip(goals.qd.iter())
            .zip(goals.posture_rad.iter())
            .take(joints)
            .enumerate()
        {
            if !vi.is_finite() {
                return Err(ModelError::NonFinite(Input::Velocity { joint }).into());
            }
            if !goal.is_finite() {
                return Err(ReachError::NonFinite(ReachInput::PostureGoal { joint }));
            }
            let error = goal - qi;
            *v = vi;
            *p = c.posture_stiffness_nm_per_rad * error - c.posture_damping_nms_per_rad * vi;
            out.error_sq += error * error;
        }
        Ok(out)
    }

    /// Everything after the hand's position `hand`, its finite 3×N Jacobian `jacobian` (zero
    /// past the tree's joints) and the checked `posture`: ẋ = J q̇, F, Jᵀ F, the null-space
    /// projection, gravity from `kin` (the tree's kinematics at the same configuration) and the
    /// finite check of the result.
    fn command<const N: usize>(
        &self,
        goals: &Goals<'_, N>,
        posture: &Posture<N>,
        hand: &Vector3<f64>,
        jacobian: &SMatrix<f64, 3, N>,
        kin: &TreeKinematics<N>,
    ) -> Result<ReachCommand<N>, ReachError> {
        let c = &self.config;
        let hand_velocity = jacobian * posture.velocity;
        let hand_error = goals.hand_target_m - hand;
        let force = hand_error * c.stiffness_n_per_m
            + (goals.hand_target_velocity - hand_velocity) * c.damping_ns_per_m;
        let task = jacobian.transpose() * force;
        let null_space =
            null_space_torque(c.projector, jacobian, posture.joints, kin, &posture.torque)?;
        let gravity_torques = if c.gravity_compensation {
            kin.gravity(goals.gravity).map_err(tree_error)?
        } else {
            SVector::zeros()
        };
        let torques = task + null_space + gravity_torques;
        let posture_error = libm::sqrt(posture.error_sq);
        let finite = all_finite(torques.as_slice())
            & all_finite(task.as_slice())
            & all_finite(null_space.as_slice())
            & all_finite(hand_velocity.as_slice())
            & all_finite(hand_error.as_slice())
            & all_finite(force.as_slice())
            & posture_error.is_finite();
        if !finite {
            return Err(ModelError::OutOfRange.into());
        }
        Ok(ReachCommand {
            torques_nm: torques.into(),
            task_torques_nm: task.into(),
            null_space_torques_nm: null_space.into(),
            gravity_torques_nm: gravity_torques.into(),
            hand_position_m: *hand,
            hand_velocity_m_s: hand_velocity,
            hand_error_m: hand_error,
            hand_force_n: force,
            posture_error_rad: posture_error,
        })
    }
}

/// The inputs of a tick besides the tree, its base pose and the hand body.
struct Goals<'a, const N: usize> {
    q: &'a [f64; N],
    qd: &'a [f64; N],
    hand_target_m: &'a Vector3<f64>,
    hand_target_velocity: &'a Vector3<f64>,
    posture_rad: &'a [f64; N],
    gravity: &'a Vector3<f64>,
}

impl<const N: usize> Goals<'_, N> {
    /// The hand target, its velocity and gravity are finite (before the tree is evaluated).
    fn check(&self) -> Result<(), ReachError> {
        if !all_finite(self.hand_target_m.as_slice()) {
            return Err(ReachError::NonFinite(ReachInput::HandTarget));
        }
        if !all_finite(self.hand_target_velocity.as_slice()) {
            return Err(ReachError::NonFinite(ReachInput::HandTargetVelocity));
        }
        if !all_finite(self.gravity.as_slice()) {
            return Err(ModelError::NonFinite(Input::Gravity).into());
        }
        Ok(())
    }
}

/// The checked joint-space part of a tick ([`Reach::posture`]).
struct Posture<const N: usize> {
    /// The tree's number of joints.
    joints: usize,
    /// q̇, zero past the tree's joints.
    velocity: SVector<f64, N>,
    /// τ_p, zero past the tree's joints.
    torque: SVector<f64, N>,
    /// ‖q_g − q‖².
    error_sq: f64,
}

/// What [`Reach::tick`] and [`ccd_ik`] refuse before reading any input: a floating base
/// ([`ModelError::FloatingBase`]) and a hand body past the tree ([`ReachError::NoSuchBody`]).
fn check_tree<const N: usize>(tree: &Tree<N>, hand_body: usize) -> Result<(), ReachError> {
    if tree.base() != BaseKind::Fixed {
        return Err(ModelError::FloatingBase.into());
    }
    let bodies = tree.joint_count().saturating_add(1);
    if hand_body >= bodies {
        return Err(ReachError::NoSuchBody {
            body: hand_body,
            bodies,
        });
    }
    Ok(())
}

/// A tree evaluation's error as this module's: the hand body and the base pose by name, the
/// rest as the joint-space controllers name them ([`model_error`]).
fn tree_error(error: TreeEvalError) -> ReachError {
    match error {
        TreeEvalError::NoSuchBody { body, bodies } => ReachError::NoSuchBody { body, bodies },
        TreeEvalError::NonFinite {
            what: EvalInput::BasePose,
        } => ReachError::NonFinite(ReachInput::BasePose),
        error => ReachError::Model(model_error(error)),
    }
}

/// The hand point as a frame placement on its body (unchecked: the tree checks it and names it
/// [`Input::Point`]).
fn hand_placement(point_m: [f64; 3]) -> Placement {
    Placement {
        xyz_m: point_m,
        rotation: Placement::IDENTITY.rotation,
    }
}

/// The world position of the frame at `placement` on body `hand_body`, m.
fn tree_hand<const N: usize>(
    kin: &TreeKinematics<N>,
    hand_body: usize,
    placement: &Placement,
) -> Result<Vector3<f64>, ReachError> {
    Ok(kin
        .frame_pose(hand_body, placement)
        .map_err(tree_error)?
        .translation
        .vector)
}

/// (I − Jᵀ Wᵀ) τ for the projector (see the module docs for the regularisation). `jacobian` is
/// finite, zero past the tree's first `joints` joints; `kin` is the tree's kinematics at the
/// same configuration (a fixed base: the velocity layout is the joint order).
fn null_space_torque<const N: usize>(
    projector: Projector,
    jacobian: &SMatrix<f64, 3, N>,
    joints: usize,
    kin: &TreeKinematics<N>,
    tau: &SVector<f64, N>,
) -> Result<SVector<f64, N>, ReachError> {
    let scale = jacobian.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    if scale == 0.0 {
        // The hand moves with no joint: there is no task to protect.
        return Ok(*tau);
    }
    // Ĵ = J / max|J_ij|: both projectors are unchanged by scaling J (and M), and A below then
    // has a trace in [1, 3N]·(M's scale)⁻¹, far from both ends of the f64 range.
    let j = jacobian / scale;
    // τ_null = τ − Ĵᵀ (A + μ²𝟙)⁻¹ Yᵀ τ, with Y = Ĵᵀ (A = ĴĴᵀ) or Y = M̂⁻¹Ĵᵀ (A = ĴM̂⁻¹Ĵᵀ).
    let (a, y) = match projector {
        Projector::PseudoInverse => (j * j.transpose(), j.transpose()),
        Projector::DynamicallyConsistent => {
            let mut m = kin.mass_matrix().map_err(tree_error)?;
            let m_scale = m.diagonal().iter().fold(0.0f64, |s, v| s.max(*v));
            if m_scale <= 0.0 {
                return Err(ModelError::OutOfRange.into());
            }
            m /= m_scale;
            // Joints past the tree: an identity block, so that M̂ is invertible; Ĵ's columns
            // there are zero, so it changes nothing.
            for i in joints..N {
                if let Some(d) = m.get_mut((i, i)) {
                    *d = 1.0;
                }
            }
            let y = Cholesky::new(m)
                .ok_or(ModelError::OutOfRange)?
                .solve(&j.transpose());
            let a = j * y;
            ((a + a.transpose()) * 0.5, y)
        }
    };
    let regularised = a + Matrix3::from_diagonal_element(REGULARISATION * a.trace());
    if !all_finite(regularised.as_slice()) {
        return Err(ModelError::OutOfRange.into());
    }
    let z = Cholesky::new(regularised)
        .ok_or(ModelError::OutOfRange)?
        .solve(&(y.transpose() * tau));
    let out = tau - j.transpose() * z;
    if all_finite(out.as_slice()) {
        Ok(out)
    } else {
        Err(ModelError::OutOfRange.into())
    }
}

/// How [`ccd_ik`] ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CcdOutcome {
    /// The residual is within the tolerance.
    Converged,
    /// A sweep improved the residual by less than [`CCD_STALL_FRACTION`] of it: a fixed point
    /// outside the tolerance (typically an unreachable target).
    Stalled,
    /// `max_sweeps` sweeps were used without either.
    SweepLimit,
}

/// The result of [`ccd_ik`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CcdSolution<const N: usize> {
    /// The joint positions, rad (m for a prismatic joint); every joint not on the hand body's
    /// path to the base, and every entry past the tree's joints, as given.
    pub q_rad: [f64; N],
    /// ‖target − hand‖ at `q_rad` (from a fresh tree kinematics), m.
    pub residual_m: f64,
    /// Sweeps run (0 if the start was already within the tolerance).
    pub sweeps: usize,
    /// Why it stopped.
    pub outcome: CcdOutcome,
}

impl<const N: usize> CcdSolution<N> {
    /// Whether the residual is within the tolerance.
    pub fn converged(&self) -> bool {
        self.outcome == CcdOutcome::Converged
    }
}

/// Cyclic coordinate descent on a fixed-base kinematic tree ([`Tree`]) welded at `base_pose`
/// (world): joint positions from `q_start` that bring `hand_point` (in body `hand_body`'s
/// frame, m; body 0 is the base, k + 1 joint k's child) to `target` (world, m), within
/// `tolerance_m` (finite, ≥ 0) or as close as CCD gets in `max_sweeps` sweeps (see the module
/// docs). Each sweep moves the joints on the path from the hand body to the base once, tip to
/// root: a revolute joint turned about its axis by the angle that brings the hand closest to
/// the target, a prismatic joint slid along its axis by the projection of the error x* − x
/// onto the axis (m); every other joint keeps its value. One tree kinematics per sweep.
///
/// A floating base is [`ModelError::FloatingBase`] (CCD would hold it where it is: that is
/// not IK of a floating robot) and a hand body past the tree [`ReachError::NoSuchBody`], both
/// before any input is read; a tolerance that is not finite and ≥ 0 is
/// [`ReachField::IkTolerance`], a non-finite target [`ReachInput::HandTarget`], a non-finite
/// base pose [`ReachInput::BasePose`], a non-finite hand point [`Input::Point`] and a
/// non-finite joint position [`Input::Position`] with its joint.
#[allow(clippy::too_many_arguments)]
pub fn ccd_ik<const N: usize>(
    tree: &Tree<N>,
    base_pose: &Isometry3<f64>,
    q_start: &[f64; N],
    hand_body: usize,
    hand_point: &Vector3<f64>,
    target: &Vector3<f64>,
    max_sweeps: usize,
    tolerance_m: f64,
) -> Result<CcdSolution<N>, ReachError> {
    check_tree(tree, hand_body)?;
    let mut model = TreeCcd {
        tree,
        base_pose,
        hand_body,
        placement: hand_placement((*hand_point).into()),
        kin: TreeKinematics::default(),
    };
    ccd(&mut model, q_start, target, max_sweeps, tolerance_m)
}

/// What [`ccd_ik`] runs on: the joints on a tree body's path to the base; one kept kinematics
/// buffer ([`Tree::kinematics_into`]).
struct TreeCcd<'a, const N: usize> {
    tree: &'a Tree<N>,
    base_pose: &'a Isometry3<f64>,
    hand_body: usize,
    placement: Placement,
    kin: TreeKinematics<N>,
}

impl<const N: usize> TreeCcd<'_, N> {
    /// The kinematics at `q` (kept for [`TreeCcd::sweep`]) and the world hand point there, m.
    fn hand(&mut self, q: &[f64; N]) -> Result<Vector3<f64>, ReachError> {
        self.tree
            .kinematics_into(&mut self.kin, self.base_pose, q)
            .map_err(tree_error)?;
        tree_hand(&self.kin, self.hand_body, &self.placement)
    }

    /// One sweep, tip to root, at the configuration of the last [`TreeCcd::hand`] (the hand at
    /// `hand`): each joint on the hand's path moved as the module docs say, the hand carried
    /// along. A joint position pushed past the f64 range is [`ModelError::OutOfRange`] (the
    /// solve's, not the caller's input).
    fn sweep(
        &self,
        q: &mut [f64; N],
        mut hand: Vector3<f64>,
        target: &Vector3<f64>,
    ) -> Result<(), ReachError> {
        let mut body = self.hand_body;
        // A joint's parent body is at most the joint's index, so `body` falls every step.
        while let Some(joint) = body.checked_sub(1) {
            let (Some(qi), Some(origin), Some(axis), Some(kind), Some(parent)) = (
                q.get_mut(joint),
                self.kin.joint_position(joint),
                self.kin.joint_axis(joint),
                self.tree.joint_kind(joint),
                self.tree.parent_body(joint),
            ) else {
                return Ok(());
            };
            hand = match kind {
                JointType::Revolute => ccd_step(qi, &origin, &axis, &hand, target),
                JointType::Prismatic => ccd_slide(qi, &axis, &hand, target),
            };
            if !qi.is_finite() {
                return Err(ModelError::OutOfRange.into());
            }
            body = parent;
        }
        Ok(())
    }
}

/// The CCD loop of [`ccd_ik`]: the settings checked, then evaluate, stop or sweep (see the
/// module docs).
fn ccd<const N: usize>(
    model: &mut TreeCcd<'_, N>,
    q_start: &[f64; N],
    target: &Vector3<f64>,
    max_sweeps: usize,
    tolerance_m: f64,
) -> Result<CcdSolution<N>, ReachError> {
    if !(tolerance_m.is_finite() && tolerance_m >= 0.0) {
        return Err(ReachError::Config(ReachField::IkTolerance));
    }
    if !all_finite(target.as_slice()) {
        return Err(ReachError::NonFinite(ReachInput::HandTarget));
    }
    let mut q = *q_start;
    let mut sweeps = 0;
    let mut previous = f64::INFINITY;
    loop {
        let hand = model.hand(&q)?;
        let residual = libm::sqrt((target - hand).norm_squared());
        if !residual.is_finite() {
            return Err(ModelError::OutOfRange.into());
        }
        let outcome = if residual <= tolerance_m {
            Some(CcdOutcome::Converged)
        } else if residual > previous * (1.0 - CCD_STALL_FRACTION) {
            Some(CcdOutcome::Stalled)
        } else if sweeps >= max_sweeps {
            Some(CcdOutcome::SweepLimit)
        } else {
            None
        };
        if let Some(outcome) = outcome {
            return Ok(CcdSolution {
                q_rad: q,
                residual_m: residual,
                sweeps,
                outcome,
            });
        }
        previous = residual;
        model.sweep(&mut q, hand, target)?;
        sweeps += 1;
    }
}

/// Turn joint angle `qi` (at `origin`, unit `axis`, world) by the angle that brings `hand`
/// closest to `target`; the hand's new position.
fn ccd_step(
    qi: &mut f64,
    origin: &Vector3<f64>,
    axis: &Vector3<f64>,
    hand: &Vector3<f64>,
    target: &Vector3<f64>,
) -> Vector3<f64> {
    let a = hand - origin;
    let b = target - origin;
    let a_plane = a - axis * axis.dot(&a);
    let b_plane = b - axis * axis.dot(&b);
    // atan2(0, 0) = 0: a hand or a target on the axis leaves the joint where it is.
    let angle = libm::atan2(axis.dot(&a_plane.cross(&b_plane)), a_plane.dot(&b_plane));
    let (sin, cos) = libm::sincos(angle);
    *qi += angle;
    // Rodrigues: the hand turned about the axis through the joint.
    origin + a * cos + axis.cross(&a) * sin + axis * (axis.dot(&a) * (1.0 - cos))
}

/// Slide prismatic joint position `qi` (unit `axis`, world) by the projection of the error onto
/// the axis, which brings `hand` closest to `target`; the hand's new position.
fn ccd_slide(
    qi: &mut f64,
    axis: &Vector3<f64>,
    hand: &Vector3<f64>,
    target: &Vector3<f64>,
) -> Vector3<f64> {
    let delta = axis.dot(&(target - hand));
    *qi += delta;
    hand + axis * delta
}

/// Whether every value is finite; without early exit.
fn all_finite(values: &[f64]) -> bool {
    values.iter().fold(true, |ok, v| ok & v.is_finite())
}

/// What [`Reach::tick`] reads each tick, as one value for
/// [`crate::controller::Controller`].
#[derive(Debug, Clone, Copy)]
pub struct ReachTick<'a, const N: usize> {
    /// The robot's fixed-base tree.
    pub tree: &'a Tree<N>,
    /// The base's pose in the world.
    pub base_pose: &'a Isometry3<f64>,
    /// The body whose point is the hand.
    pub hand_body: usize,
    /// Joint positions, rad.
    pub q: &'a [f64; N],
    /// Joint velocities, rad/s.
    pub qd: &'a [f64; N],
    /// Where the hand must be, world, m.
    pub hand_target_m: &'a Vector3<f64>,
    /// The target's velocity, world, m/s.
    pub hand_target_velocity: &'a Vector3<f64>,
    /// The posture the null space is pulled towards, rad.
    pub posture_rad: &'a [f64; N],
    /// Gravity, world, m/s².
    pub gravity: &'a Vector3<f64>,
}

impl<const N: usize> crate::controller::Controller<ReachTick<'_, N>> for Reach {
    type Command = ReachCommand<N>;
    type Error = ReachError;

    fn tick(&mut self, i: &ReachTick<'_, N>) -> Result<ReachCommand<N>, ReachError> {
        Reach::tick(
            self,
            i.tree,
            i.base_pose,
            i.hand_body,
            i.q,
            i.qd,
            i.hand_target_m,
            i.hand_target_velocity,
            i.posture_rad,
            i.gravity,
        )
    }

    /// The reach law applies no clamp or limit of its own: always clear.
    fn limits(_: &ReachCommand<N>) -> crate::controller::Limits {
        crate::controller::Limits::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::articulated::{ArrivalSettings, Coupling, JointTarget, LinkSpec, TreeArrival};
    use crate::tree::{BaseKind, Inertial, JointSpec, JointType, Placement, Tree, TreeSpec};
    use core::f64::consts::PI;
    use nalgebra::{Isometry3, Quaternion, Translation3, UnitQuaternion};
    use proptest::prelude::*;

    /// Capacity of the random trees: 1 to `CAP` joints, so the unused part is exercised too.
    const CAP: usize = 6;

    /// The base pose of the chain-shaped test trees: the world frame.
    fn base() -> Isometry3<f64> {
        Isometry3::identity()
    }

    /// `specs` as a fixed-base tree, link i hanging from body i: link i is body i + 1.
    fn tree_of<const N: usize>(specs: &[LinkSpec]) -> Tree<N> {
        crate::articulated::serial_tree(specs).unwrap()
    }

    /// The world position of the point `point` of body `body` at `q` (base at [`base`]), m.
    fn hand_at<const N: usize>(
        tree: &Tree<N>,
        q: &[f64; N],
        body: usize,
        point: &Vector3<f64>,
    ) -> Vector3<f64> {
        tree.kinematics(&base(), q)
            .unwrap()
            .frame_pose(body, &hand_placement((*point).into()))
            .unwrap()
            .translation
            .vector
    }

    /// A uniform box link `length` long along its x axis (thickness 0.05 m), hinged at its frame
    /// origin about `axis`, its joint frame at `xyz` in its parent's frame.
    fn rod(xyz: [f64; 3], axis: [f64; 3], mass: f64, length: f64) -> LinkSpec {
        let (a, k) = (0.05, mass / 12.0);
        LinkSpec {
            origin_xyz_m: xyz,
            origin_rpy_rad: [0.0; 3],
            axis,
            mass_kg: mass,
            com_m: [length / 2.0, 0.0, 0.0],
            inertia_kgm2: [
                k * 2.0 * a * a,
                0.0,
                0.0,
                k * (length * length + a * a),
                0.0,
                k * (length * length + a * a),
            ],
        }
    }

    /// Link lengths of the planar arm, m.
    const PLANAR: [f64; 3] = [0.4, 0.35, 0.25];

    /// A planar 3-link arm about +z (a vertical plane when gravity is −y) as a fixed-base tree;
    /// the hand is the tip of link 2, on body [`HAND`].
    fn planar() -> Tree<3> {
        let z = [0.0, 0.0, 1.0];
        tree_of(&[
            rod([0.0; 3], z, 2.0, PLANAR[0]),
            rod([PLANAR[0], 0.0, 0.0], z, 1.5, PLANAR[1]),
            rod([PLANAR[1], 0.0, 0.0], z, 1.0, PLANAR[2]),
        ])
    }

    /// The body of [`planar`]'s hand: link 2's, body 3.
    const HAND: usize = 3;

    fn planar_hand() -> Vector3<f64> {
        Vector3::new(PLANAR[2], 0.0, 0.0)
    }

    fn config(projector: Projector, hand: Vector3<f64>) -> ReachConfig {
        ReachConfig {
            projector,
            hand_point_m: hand.into(),
            stiffness_n_per_m: 500.0,
            damping_ns_per_m: 50.0,
            posture_stiffness_nm_per_rad: 20.0,
            posture_damping_nms_per_rad: 3.0,
            gravity_compensation: true,
        }
    }

    const BOTH: [Projector; 2] = [Projector::PseudoInverse, Projector::DynamicallyConsistent];

    /// A link with a random box inertia turned by a random rotation, a random origin and axis.
    fn link_strategy() -> impl Strategy<Value = LinkSpec> {
        let v3 = |r: f64| prop::array::uniform3(-r..r);
        (
            (v3(0.6), v3(PI), v3(1.0)),
            (0.1..5.0f64, v3(0.3), prop::array::uniform3(0.05..0.6f64)),
        )
            .prop_filter("axis not near zero", |((_, _, axis), _)| {
                axis.iter().map(|a| a * a).sum::<f64>() > 0.01
            })
            .prop_map(|((xyz, rpy, axis), (m, com, [x, y, z]))| {
                let k = m / 12.0;
                LinkSpec {
                    origin_xyz_m: xyz,
                    origin_rpy_rad: rpy,
                    axis,
                    mass_kg: m,
                    com_m: com,
                    inertia_kgm2: [
                        k * (y * y + z * z),
                        0.0,
                        0.0,
                        k * (x * x + z * z),
                        0.0,
                        k * (x * x + y * y),
                    ],
                }
            })
    }

    /// The links of a random chain of 1 to [`CAP`] links, and a configuration.
    fn specs_strategy() -> impl Strategy<Value = (Vec<LinkSpec>, [f64; CAP])> {
        (
            prop::collection::vec(link_strategy(), 1..=CAP),
            prop::array::uniform6(-PI..PI),
        )
    }

    /// A random chain of 1 to [`CAP`] links as a fixed-base tree, and a configuration.
    fn chain_strategy() -> impl Strategy<Value = (Tree<CAP>, [f64; CAP])> {
        specs_strategy().prop_map(|(specs, q)| (tree_of(&specs), q))
    }

    /// The point Jacobian (the frame Jacobian's linear rows) of `hand` on body `body` and the
    /// mass matrix's inverse on the tree's joints, the slow way (the n×n block inverted, zero
    /// elsewhere).
    fn jacobian_and_inverse_mass<const N: usize>(
        kin: &TreeKinematics<N>,
        body: usize,
        hand: &Vector3<f64>,
    ) -> (SMatrix<f64, 3, N>, SMatrix<f64, N, N>) {
        let j = kin
            .frame_jacobian(body, &hand_placement((*hand).into()))
            .unwrap()
            .fixed_rows::<3>(0)
            .into_owned();
        let mut m = kin.mass_matrix().unwrap();
        for i in kin.joint_count()..N {
            m[(i, i)] = 1.0;
        }
        let mut m_inv = m.try_inverse().unwrap();
        for i in kin.joint_count()..N {
            m_inv[(i, i)] = 0.0;
        }
        (j, m_inv)
    }

    /// The eigenvalues of a symmetric 3×3 relative to its trace, ascending.
    fn relative_eigenvalues(a: &Matrix3<f64>) -> [f64; 3] {
        let mut e: [f64; 3] = a.symmetric_eigenvalues().into();
        let trace = a.trace();
        e.sort_by(f64::total_cmp);
        e.map(|v| v / trace)
    }

    /// Non-zero eigenvalues of A relative to its trace are kept at least this far from zero by
    /// the property tests, so that the documented leak ε/λ̂ is at most [`LEAK`].
    const FLOOR: f64 = 1e-3;

    /// ε/[`FLOOR`] and a margin: the largest relative leak of the regularised projectors the
    /// property tests accept.
    const LEAK: f64 = 2.0 * REGULARISATION / FLOOR;

    /// A matrix whose non-zero eigenvalues (relative to its trace) are all above [`FLOOR`], its
    /// zero ones below 1e-13: away from the regularisation's transition.
    fn well_separated(a: &Matrix3<f64>) -> bool {
        relative_eigenvalues(a)
            .iter()
            .all(|&e| e.abs() < 1e-13 || e > FLOOR)
    }

    fn null_of<const N: usize>(
        projector: Projector,
        kin: &TreeKinematics<N>,
        body: usize,
        hand: &Vector3<f64>,
        tau: &SVector<f64, N>,
    ) -> SVector<f64, N> {
        let (j, _) = jacobian_and_inverse_mass(kin, body, hand);
        null_space_torque(projector, &j, kin.joint_count(), kin, tau).unwrap()
    }

    proptest! {
        /// Dynamically consistent: the null-space torque gives the hand no acceleration,
        /// J M⁻¹ τ_null = 0 (up to the documented leak ε/λ̂ where A = JM⁻¹Jᵀ is well
        /// separated), while the posture torque alone would.
        #[test]
        fn dynamically_consistent_null_torque_does_not_accelerate_the_hand(
            (tree, q) in chain_strategy(),
            link_pick in 0usize..CAP,
            hand in prop::array::uniform3(-0.5..0.5f64),
            tau in prop::array::uniform6(-20.0..20.0f64),
        ) {
            let n = tree.joint_count();
            let body = link_pick % n + 1;
            let hand = Vector3::from(hand);
            let kin = tree.kinematics(&base(), &q).unwrap();
            let (j, m_inv) = jacobian_and_inverse_mass(&kin, body, &hand);
            let a = j * m_inv * j.transpose();
            prop_assume!(a.trace() > 1e-12 && well_separated(&a));
            let mut tau = SVector::<f64, CAP>::from(tau);
            for i in n..CAP { tau[i] = 0.0; }
            let null = null_of(Projector::DynamicallyConsistent, &kin, body, &hand, &tau);
            let scale = (j * m_inv).norm() * tau.norm();
            let accel = (j * m_inv * null).norm();
            prop_assert!(accel <= LEAK * scale, "J M⁻¹ τ_null = {accel}, scale {scale}");
            // J̄ᵀ τ_null = 0 too, with J̄ᵀ = (JM⁻¹Jᵀ)⁻¹ J M⁻¹ from the exact inverse when A is
            // invertible.
            if relative_eigenvalues(&a)[0] > FLOOR {
                let jbar_t = a.try_inverse().unwrap() * j * m_inv;
                prop_assert!((jbar_t * null).norm() <= LEAK * jbar_t.norm() * tau.norm());
            }
        }

        /// Pseudo-inverse (the seed's): the least-squares static hand force J⁺ᵀ τ is unchanged
        /// by adding the null-space torque, J⁺ᵀ τ_null = 0 (J⁺ the Moore–Penrose inverse, by
        /// SVD, so rank-deficient Jacobians are covered).
        #[test]
        fn pseudo_inverse_null_torque_makes_no_static_hand_force(
            (tree, q) in chain_strategy(),
            link_pick in 0usize..CAP,
            hand in prop::array::uniform3(-0.5..0.5f64),
            tau in prop::array::uniform6(-20.0..20.0f64),
            force in prop::array::uniform3(-50.0..50.0f64),
        ) {
            let n = tree.joint_count();
            let body = link_pick % n + 1;
            let hand = Vector3::from(hand);
            let kin = tree.kinematics(&base(), &q).unwrap();
            let (j, _) = jacobian_and_inverse_mass(&kin, body, &hand);
            let a = j * j.transpose();
            prop_assume!(a.trace() > 1e-12 && well_separated(&a));
            let mut tau = SVector::<f64, CAP>::from(tau);
            for i in n..CAP { tau[i] = 0.0; }
            let null = null_of(Projector::PseudoInverse, &kin, body, &hand, &tau);
            let j_pinv_t = j.pseudo_inverse(1e-9 * j.norm()).unwrap().transpose();
            let task = j.transpose() * Vector3::from(force);
            let before = j_pinv_t * task;
            let after = j_pinv_t * (task + null);
            let scale = j_pinv_t.norm() * tau.norm();
            prop_assert!((after - before).norm() <= LEAK * scale,
                "{before} → {after} (scale {scale})");
        }

        /// Both projectors are projections: applied twice they change nothing more, up to the
        /// regularisation's leak. The leak is bounded in the metric each projector is orthogonal
        /// in: the Euclidean one for the pseudo-inverse's (I − JᵀJ⁺ᵀ is symmetric), the M⁻¹ one
        /// for the dynamically consistent one (M⁻¹(I − JᵀJ̄ᵀ) is symmetric, regularised or not);
        /// in the Euclidean norm the latter's leak can exceed ε/λ̂ by M's conditioning (a found
        /// case: 1.4×).
        #[test]
        fn projecting_twice_is_projecting_once(
            (tree, q) in chain_strategy(),
            tau in prop::array::uniform6(-20.0..20.0f64),
        ) {
            let n = tree.joint_count();
            let body = n;
            let hand = Vector3::new(0.2, 0.1, 0.0);
            let kin = tree.kinematics(&base(), &q).unwrap();
            let (j, m_inv) = jacobian_and_inverse_mass(&kin, body, &hand);
            let identity = SMatrix::<f64, CAP, CAP>::identity();
            for (projector, a, metric) in [
                (Projector::PseudoInverse, j * j.transpose(), identity),
                (Projector::DynamicallyConsistent, j * m_inv * j.transpose(), m_inv),
            ] {
                if !(a.trace() > 1e-12 && well_separated(&a)) { continue; }
                let mut tau = SVector::<f64, CAP>::from(tau);
                for i in n..CAP { tau[i] = 0.0; }
                let once = null_of(projector, &kin, body, &hand, &tau);
                let twice = null_of(projector, &kin, body, &hand, &once);
                let norm = |x: &SVector<f64, CAP>| libm::sqrt((x.transpose() * metric * x)[(0, 0)]);
                prop_assert!(norm(&(twice - once)) <= LEAK * norm(&tau));
            }
        }

        /// CCD reaches every target that is reachable (the hand's position at another random
        /// configuration), on random 3-D chains (as trees, the hand on the last body), within
        /// the tolerance or reports the residual it stopped at.
        #[test]
        fn ccd_reaches_reachable_targets_or_says_how_far(
            (tree, q) in chain_strategy(),
            goal in prop::array::uniform6(-PI..PI),
        ) {
            let n = tree.joint_count();
            let body = n;
            let hand = Vector3::new(0.2, 0.0, 0.0);
            let target = hand_at(&tree, &goal, body, &hand);
            let ik = ccd_ik(&tree, &base(), &q, body, &hand, &target, 500, 1e-6).unwrap();
            let reached = hand_at(&tree, &ik.q_rad, body, &hand);
            prop_assert_eq!(ik.residual_m, libm::sqrt((target - reached).norm_squared()));
            prop_assert_eq!(ik.converged(), ik.residual_m <= 1e-6);
            prop_assert!(ik.sweeps <= 500);
            prop_assert_eq!(&ik.q_rad[n..], &q[n..]);
        }
    }

    /// The hand velocity of a tick is J q̇, the derivative of the hand position along q̇
    /// (central differences of the tree's kinematics; the frame Jacobian itself is checked in
    /// `tree`).
    #[test]
    fn hand_velocity_is_the_derivative_of_the_hand_position() {
        let tree = planar();
        let reach = Reach::new(config(Projector::PseudoInverse, planar_hand())).unwrap();
        let q = [0.3, -0.7, 1.1];
        let qd = [0.4, -1.3, 0.9];
        let z = Vector3::zeros();
        let command = reach
            .tick(&tree, &base(), HAND, &q, &qd, &z, &z, &q, &z)
            .unwrap();
        let h = 1e-6;
        let at = |s: f64| {
            let q = core::array::from_fn(|i| q[i] + s * qd[i]);
            hand_at(&tree, &q, HAND, &planar_hand())
        };
        let fd = (at(h) - at(-h)) / (2.0 * h);
        assert!((command.hand_velocity_m_s - fd).norm() < 1e-8);
        assert_eq!(command.hand_position_m, at(0.0));
    }

    /// The planar arm's Jacobian has a zero z row: both projectors equal the exact ones of the
    /// 2×3 in-plane Jacobian (its zero row contributes nothing), everything is finite, and the
    /// torques add up.
    #[test]
    fn planar_zero_row_is_the_in_plane_projector() {
        let tree = planar();
        let q = [0.4, 0.9, -0.6];
        let kin = tree.kinematics(&base(), &q).unwrap();
        let (j, m_inv) = jacobian_and_inverse_mass(&kin, HAND, &planar_hand());
        assert!(j.row(2).iter().all(|&v| v == 0.0));
        let j2 = j.fixed_rows::<2>(0).into_owned();
        let tau = SVector::<f64, 3>::new(3.0, -2.0, 1.5);
        let pinv = j2.transpose() * (j2 * j2.transpose()).try_inverse().unwrap() * j2;
        let dc = j2.transpose() * (j2 * m_inv * j2.transpose()).try_inverse().unwrap() * j2 * m_inv;
        for (projector, exact) in [
            (Projector::PseudoInverse, tau - pinv * tau),
            (Projector::DynamicallyConsistent, tau - dc * tau),
        ] {
            let null = null_of(projector, &kin, HAND, &planar_hand(), &tau);
            assert!((null - exact).norm() < 1e-7 * tau.norm(), "{projector:?}");
            // One null direction in the plane: τ_null is not zero for a redundant arm.
            assert!(null.norm() > 0.1);
            let reach = Reach::new(config(projector, planar_hand())).unwrap();
            let g = Vector3::new(0.0, -9.81, 0.0);
            let target = Vector3::new(0.5, 0.4, 0.0);
            let c = reach
                .tick(
                    &tree,
                    &base(),
                    HAND,
                    &q,
                    &[0.1, 0.2, -0.3],
                    &target,
                    &Vector3::zeros(),
                    &[0.0; 3],
                    &g,
                )
                .unwrap();
            for i in 0..3 {
                let sum =
                    c.task_torques_nm[i] + c.null_space_torques_nm[i] + c.gravity_torques_nm[i];
                assert_eq!(c.torques_nm[i], sum);
            }
            assert_eq!(c.hand_force_n.z, 0.0);
            assert!((c.posture_error_rad - libm::sqrt(0.16 + 0.81 + 0.36)).abs() < 1e-15);
        }
    }

    /// At and next to singular poses (stretched, folded back, the hand on the base axis) the
    /// torques are finite and the task torque is still Jᵀ F.
    #[test]
    fn singular_poses_stay_finite() {
        let tree = planar();
        let g = Vector3::new(0.0, -9.81, 0.0);
        let target = Vector3::new(0.3, 0.2, 0.0);
        for projector in BOTH {
            let reach = Reach::new(config(projector, planar_hand())).unwrap();
            for q in [
                [0.0, 0.0, 0.0],
                [0.0, 1e-9, 0.0],
                [0.0, 1e-5, -1e-5],
                [0.3, PI, 0.0],
                [0.3, PI, PI],
                [1.0, 0.0, 1e-12],
            ] {
                let c = reach
                    .tick(
                        &tree,
                        &base(),
                        HAND,
                        &q,
                        &[1.0, -1.0, 0.5],
                        &target,
                        &Vector3::zeros(),
                        &[0.5; 3],
                        &g,
                    )
                    .unwrap();
                assert!(c.torques_nm.iter().all(|t| t.is_finite()), "{q:?}");
                assert!(
                    c.null_space_torques_nm.iter().all(|t| t.abs() < 1e3),
                    "{q:?}"
                );
            }
            // The hand on the first joint's axis, on the first link (body 1): J = 0,
            // τ_null = τ_p.
            let reach = Reach::new(config(projector, Vector3::new(0.0, 0.0, 0.3))).unwrap();
            let c = reach
                .tick(
                    &tree,
                    &base(),
                    1,
                    &[0.2; 3],
                    &[0.0; 3],
                    &target,
                    &Vector3::zeros(),
                    &[0.5; 3],
                    &g,
                )
                .unwrap();
            assert_eq!(c.task_torques_nm, [0.0; 3]);
            assert_eq!(c.null_space_torques_nm, [20.0 * 0.3; 3]);
        }
    }

    #[test]
    fn configs_are_checked() {
        let ok = config(Projector::PseudoInverse, planar_hand());
        assert!(Reach::new(ok).is_ok());
        for (bad, field) in [
            (
                ReachConfig {
                    hand_point_m: [0.0, f64::NAN, 0.0],
                    ..ok
                },
                ReachField::HandPoint,
            ),
            (
                ReachConfig {
                    stiffness_n_per_m: -1.0,
                    ..ok
                },
                ReachField::Stiffness,
            ),
            (
                ReachConfig {
                    damping_ns_per_m: f64::INFINITY,
                    ..ok
                },
                ReachField::Damping,
            ),
            (
                ReachConfig {
                    posture_stiffness_nm_per_rad: f64::NAN,
                    ..ok
                },
                ReachField::PostureStiffness,
            ),
            (
                ReachConfig {
                    posture_damping_nms_per_rad: -0.1,
                    ..ok
                },
                ReachField::PostureDamping,
            ),
        ] {
            assert_eq!(Reach::new(bad).unwrap_err(), ReachError::Config(field));
        }
        let z = Vector3::zeros();
        let reach = Reach::new(ok).unwrap();
        assert_eq!(
            reach
                .tick(
                    &planar(),
                    &base(),
                    4,
                    &[0.0; 3],
                    &[0.0; 3],
                    &z,
                    &z,
                    &[0.0; 3],
                    &z
                )
                .unwrap_err(),
            ReachError::NoSuchBody { body: 4, bodies: 4 }
        );
        for tolerance in [-1e-3, f64::NAN, f64::INFINITY] {
            assert_eq!(
                ccd_ik(
                    &planar(),
                    &base(),
                    &[0.0; 3],
                    HAND,
                    &planar_hand(),
                    &z,
                    10,
                    tolerance
                )
                .unwrap_err(),
                ReachError::Config(ReachField::IkTolerance)
            );
        }
    }

    #[test]
    fn ticks_name_the_bad_input() {
        let tree: Tree<4> = tree_of(&[
            rod([0.0; 3], [0.0, 0.0, 1.0], 1.0, 0.3),
            rod([0.3, 0.0, 0.0], [0.0, 1.0, 0.0], 1.0, 0.3),
            rod([0.3, 0.0, 0.0], [0.0, 1.0, 0.0], 1.0, 0.3),
        ]);
        let reach = Reach::new(config(Projector::DynamicallyConsistent, planar_hand())).unwrap();
        let (z, nan) = (Vector3::zeros(), Vector3::new(0.0, f64::NAN, 0.0));
        let ok = [0.1, 0.2, 0.3, 0.0];
        let tick =
            |q: [f64; 4],
             qd: [f64; 4],
             t: &Vector3<f64>,
             tv: &Vector3<f64>,
             p: [f64; 4],
             g: &Vector3<f64>| { reach.tick(&tree, &base(), 3, &q, &qd, t, tv, &p, g) };
        let nan_at = |i: usize| {
            let mut v = ok;
            v[i] = f64::NAN;
            v
        };
        assert_eq!(
            tick(nan_at(1), ok, &z, &z, ok, &z).unwrap_err(),
            ReachError::Model(ModelError::NonFinite(Input::Position { joint: 1 }))
        );
        assert_eq!(
            tick(ok, nan_at(2), &z, &z, ok, &z).unwrap_err(),
            ReachError::Model(ModelError::NonFinite(Input::Velocity { joint: 2 }))
        );
        assert_eq!(
            tick(ok, ok, &z, &z, nan_at(0), &z).unwrap_err(),
            ReachError::NonFinite(ReachInput::PostureGoal { joint: 0 })
        );
        assert_eq!(
            tick(ok, ok, &nan, &z, ok, &z).unwrap_err(),
            ReachError::NonFinite(ReachInput::HandTarget)
        );
        assert_eq!(
            tick(ok, ok, &z, &nan, ok, &z).unwrap_err(),
            ReachError::NonFinite(ReachInput::HandTargetVelocity)
        );
        assert_eq!(
            tick(ok, ok, &z, &z, ok, &nan).unwrap_err(),
            ReachError::Model(ModelError::NonFinite(Input::Gravity))
        );
        // Past the tree nothing is read.
        assert!(tick(nan_at(3), nan_at(3), &z, &z, nan_at(3), &z).is_ok());
        assert_eq!(
            ccd_ik(&tree, &base(), &ok, 3, &planar_hand(), &nan, 10, 1e-3).unwrap_err(),
            ReachError::NonFinite(ReachInput::HandTarget)
        );
        assert_eq!(
            ccd_ik(&tree, &base(), &ok, 3, &nan, &z, 10, 1e-3).unwrap_err(),
            ReachError::Model(ModelError::NonFinite(Input::Point))
        );
    }

    /// Planar 3-link: CCD converges to reachable targets within the tolerance, and for a target
    /// beyond the arm's reach stalls at the stretched arm, reporting the true shortfall.
    #[test]
    fn ccd_planar_reachable_and_unreachable() {
        let tree = planar();
        let reach: f64 = PLANAR.iter().sum();
        let start = [0.2, 0.5, 0.5];
        for target in [
            Vector3::new(0.6, 0.3, 0.0),
            Vector3::new(-0.3, 0.5, 0.0),
            Vector3::new(0.1, -0.2, 0.0),
            Vector3::new(0.0, 0.95 * reach, 0.0),
        ] {
            let ik = ccd_ik(
                &tree,
                &base(),
                &start,
                HAND,
                &planar_hand(),
                &target,
                200,
                1e-5,
            )
            .unwrap();
            assert!(ik.converged(), "{target}: {ik:?}");
            assert!(ik.residual_m <= 1e-5 && ik.sweeps > 0);
        }
        let far = Vector3::new(1.5, 1.0, 0.0);
        let ik = ccd_ik(
            &tree,
            &base(),
            &start,
            HAND,
            &planar_hand(),
            &far,
            10_000,
            1e-5,
        )
        .unwrap();
        assert_eq!(ik.outcome, CcdOutcome::Stalled);
        let shortfall = far.norm() - reach;
        assert!(
            (ik.residual_m - shortfall).abs() < 1e-6,
            "{ik:?} vs {shortfall}"
        );
        // Out of the plane: only the in-plane part can be reached.
        let above = Vector3::new(0.5, 0.3, 0.2);
        let ik = ccd_ik(
            &tree,
            &base(),
            &start,
            HAND,
            &planar_hand(),
            &above,
            200,
            1e-5,
        )
        .unwrap();
        assert!(
            !ik.converged() && (ik.residual_m - 0.2).abs() < 1e-6,
            "{ik:?}"
        );
        // The sweep limit is honoured and said.
        let ik = ccd_ik(&tree, &base(), &start, HAND, &planar_hand(), &far, 2, 1e-5).unwrap();
        assert_eq!((ik.outcome, ik.sweeps), (CcdOutcome::SweepLimit, 2));
        let ik = ccd_ik(&tree, &base(), &start, HAND, &planar_hand(), &far, 0, 1e-5).unwrap();
        assert_eq!(
            (ik.outcome, ik.sweeps, ik.q_rad),
            (CcdOutcome::SweepLimit, 0, start)
        );
    }

    /// The plant for the simulation tests: the tree's own dynamics,
    /// M(q) q̈ + c(q, q̇) + g(q) = τ, with the velocity-product terms c formed from central
    /// differences of the CRBA mass matrix, c = Ṁq̇ − ½∇_q(q̇ᵀMq̇), and semi-implicit Euler.
    fn step(tree: &Tree<3>, q: &mut [f64; 3], qd: &mut [f64; 3], tau: &[f64; 3], dt: f64) {
        let gravity = Vector3::new(0.0, -9.81, 0.0);
        let mass = |q: [f64; 3]| tree.kinematics(&base(), &q).unwrap().mass_matrix().unwrap();
        let v = SVector::<f64, 3>::from(*qd);
        let h = 1e-6;
        let along = |s: f64| core::array::from_fn(|i| q[i] + s * qd[i]);
        let m_dot_v = (mass(along(h)) - mass(along(-h))) / (2.0 * h) * v;
        let grad = SVector::<f64, 3>::from_fn(|k, _| {
            let mut plus = *q;
            let mut minus = *q;
            plus[k] += h;
            minus[k] += -h;
            (v.dot(&(mass(plus) * v)) - v.dot(&(mass(minus) * v))) / (2.0 * h)
        });
        let kin = tree.kinematics(&base(), q).unwrap();
        let rhs =
            SVector::<f64, 3>::from(*tau) - m_dot_v + grad * 0.5 - kin.gravity(&gravity).unwrap();
        let qdd = kin.mass_matrix().unwrap().try_inverse().unwrap() * rhs;
        for i in 0..3 {
            qd[i] += qdd[i] * dt;
            q[i] += qd[i] * dt;
        }
    }

    /// The largest hand error from 0.5 s to 4 s, and the largest posture change, of the planar
    /// arm under gravity holding a fixed hand target while its posture goal swings by ±0.6 rad
    /// (1 kHz tick and plant).
    fn hold_while_the_posture_moves(projector: Projector) -> (f64, f64) {
        let tree = planar();
        let reach = Reach::new(config(projector, planar_hand())).unwrap();
        let gravity = Vector3::new(0.0, -9.81, 0.0);
        let q0 = [0.5, 0.9, 0.8];
        let target = hand_at(&tree, &q0, HAND, &planar_hand());
        let (mut q, mut qd) = (q0, [0.0; 3]);
        let dt = 1e-3;
        let (mut worst_error, mut posture_moved) = (0.0f64, 0.0f64);
        for k in 0..4000 {
            let t = k as f64 * dt;
            let swing = 0.6 * libm::sin(PI * t);
            let posture = [q0[0] + swing, q0[1] - swing, q0[2] + swing];
            let c = reach
                .tick(
                    &tree,
                    &base(),
                    HAND,
                    &q,
                    &qd,
                    &target,
                    &Vector3::zeros(),
                    &posture,
                    &gravity,
                )
                .unwrap();
            if t >= 0.5 {
                worst_error = worst_error.max(c.hand_error_norm_m());
            }
            posture_moved = posture_moved.max((q[0] - q0[0]).abs());
            step(&tree, &mut q, &mut qd, &c.torques_nm, dt);
        }
        (worst_error, posture_moved)
    }

    /// The hand of a planar 3-link arm under gravity stays within 1 cm of a fixed target with
    /// the dynamically consistent projector while the posture goal swings, and the arm really
    /// moves in the null space. The plant includes the velocity-product terms the controller
    /// does not compensate.
    #[test]
    fn dynamically_consistent_hand_holds_while_the_posture_moves() {
        let (dc_error, dc_moved) = hold_while_the_posture_moves(Projector::DynamicallyConsistent);
        let (pi_error, _) = hold_while_the_posture_moves(Projector::PseudoInverse);
        std::println!(
            "hand error: dynamically consistent {dc_error:.2e} m, pseudo-inverse {pi_error:.2e} m; posture moved {dc_moved:.2} rad"
        );
        assert!(dc_error < 0.01, "{dc_error}");
        assert!(dc_moved > 0.1, "{dc_moved}");
        assert!(dc_error < pi_error);
    }

    /// CCD's joint targets tracked by the arrival servo ([`TreeArrival::tick`]: PD with
    /// gravity feed-forward) in the same simulated plant bring the hand to the target.
    #[test]
    fn ccd_targets_tracked_by_the_arrival_servo_reach_the_target() {
        let tree = planar();
        let target = Vector3::new(0.3, 0.55, 0.0);
        let (mut q, mut qd) = ([0.2, 0.3, 0.2], [0.0; 3]);
        let ik = ccd_ik(&tree, &base(), &q, HAND, &planar_hand(), &target, 100, 1e-5).unwrap();
        assert!(ik.converged());
        let servo = TreeArrival::new(ArrivalSettings::default(), Coupling::default()).unwrap();
        let gravity = Vector3::new(0.0, -9.81, 0.0);
        let dt = 1e-3;
        for k in 0..3000 {
            let time_to_go_s = 1.0 - k as f64 * dt;
            let targets = ik.q_rad.map(|pose_rad| JointTarget {
                pose_rad,
                time_to_go_s,
            });
            let tau = servo
                .tick(&tree, &base(), &q, &qd, &targets, &gravity)
                .unwrap()
                .torques();
            step(&tree, &mut q, &mut qd, &tau, dt);
        }
        let hand = hand_at(&tree, &q, HAND, &planar_hand());
        assert!((hand - target).norm() < 5e-3, "{}", (hand - target).norm());
    }

    /// Special values the no-NaN property mixes in.
    const SPECIALS: [f64; 12] = [
        0.0,
        -0.0,
        1.0,
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

    /// Any bits (2 in 8), a special value (1 in 8), or a moderate value in [−3, 3] (5 in 8).
    fn pick((selector, bits): (u8, u64)) -> f64 {
        match selector % 8 {
            0..=1 => f64::from_bits(bits),
            2 => SPECIALS[(bits % SPECIALS.len() as u64) as usize],
            _ => (bits >> 11) as f64 / (1u64 << 53) as f64 * 6.0 - 3.0,
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 2048, ..ProptestConfig::default() })]

        /// For any inputs: a non-finite one that is read is an error; finite ones give either
        /// finite results or `OutOfRange`, never a NaN; moderate ones always give a result.
        #[test]
        fn never_nan_and_non_finite_is_refused(
            (tree, _) in chain_strategy(),
            raw in prop::collection::vec(any::<(u8, u64)>(), 3 * CAP + 9 + 3),
            projector in prop::sample::select(BOTH.to_vec()),
            link_pick in 0usize..CAP,
            sweeps in 0usize..30,
        ) {
            let v: Vec<f64> = raw.iter().copied().map(pick).collect();
            let n = tree.joint_count();
            let q: [f64; CAP] = core::array::from_fn(|i| v[i]);
            let qd: [f64; CAP] = core::array::from_fn(|i| v[CAP + i]);
            let posture: [f64; CAP] = core::array::from_fn(|i| v[2 * CAP + i]);
            let target = Vector3::new(v[18], v[19], v[20]);
            let target_velocity = Vector3::new(v[21], v[22], v[23]);
            let gravity = Vector3::new(v[24], v[25], v[26]);
            let hand = [v[27], v[28], v[29]];
            let body = link_pick % n + 1;
            let inputs_finite = [&q[..n], &qd[..n], &posture[..n], target.as_slice(),
                target_velocity.as_slice(), gravity.as_slice(), &hand].iter()
                .all(|s| all_finite(s));
            let moderate = inputs_finite && [&q[..n], &qd[..n], &posture[..n], target.as_slice(),
                target_velocity.as_slice(), gravity.as_slice(), &hand].iter()
                .all(|s| s.iter().all(|x| x.abs() <= 3.0));
            let cfg = ReachConfig { hand_point_m: hand, ..config(projector, Vector3::zeros()) };
            match Reach::new(cfg) {
                Err(e) => prop_assert_eq!(e, ReachError::Config(ReachField::HandPoint)),
                Ok(reach) => match reach.tick(&tree, &base(), body, &q, &qd, &target,
                    &target_velocity, &posture, &gravity)
                {
                    Ok(c) => {
                        prop_assert!(inputs_finite);
                        for part in [c.torques_nm, c.task_torques_nm, c.null_space_torques_nm, c.gravity_torques_nm] {
                            prop_assert!(all_finite(&part));
                            prop_assert!(part[n..].iter().all(|&t| t == 0.0));
                        }
                        prop_assert!(all_finite(c.hand_error_m.as_slice()) && c.posture_error_rad.is_finite());
                    }
                    Err(e) => {
                        prop_assert!(!moderate, "{e:?}");
                        if inputs_finite {
                            prop_assert_eq!(e, ReachError::Model(ModelError::OutOfRange));
                        }
                    }
                },
            }
            let hand = Vector3::from(hand);
            match ccd_ik(&tree, &base(), &q, body, &hand, &target, sweeps, 1e-4) {
                Ok(ik) => {
                    prop_assert!(all_finite(&ik.q_rad[..n]) && ik.residual_m.is_finite());
                    prop_assert!(ik.sweeps <= sweeps);
                }
                Err(e) => {
                    let ccd_finite = all_finite(&q[..n]) && all_finite(hand.as_slice())
                        && all_finite(target.as_slice());
                    prop_assert!(!(ccd_finite && [&q[..n], hand.as_slice(), target.as_slice()]
                        .iter().all(|s| s.iter().all(|x| x.abs() <= 3.0))), "{e:?}");
                    if ccd_finite {
                        prop_assert_eq!(e, ReachError::Model(ModelError::OutOfRange));
                    }
                }
            }
        }
    }

    // ---- Branching trees, prismatic joints, base poses ----

    /// A fixed-base tree of `joints` (a link, a parent pick, prismatic or not): joint k hangs
    /// from body `pick % (k + 1)`, any earlier body.
    fn branching_tree(joints: &[(LinkSpec, u64, bool)]) -> Tree<CAP> {
        let specs: Vec<JointSpec> = joints
            .iter()
            .enumerate()
            .map(|(k, (l, parent, prismatic))| JointSpec {
                kind: if *prismatic {
                    JointType::Prismatic
                } else {
                    JointType::Revolute
                },
                ..l.tree_joint((parent % (k as u64 + 1)) as usize)
            })
            .collect();
        Tree::new(&TreeSpec {
            base: BaseKind::Fixed,
            base_body: Inertial::ZERO,
            joints: &specs,
        })
        .unwrap()
    }

    /// Random branching trees of 1 to [`CAP`] joints, both kinds, and a configuration.
    fn branching_strategy() -> impl Strategy<Value = (Tree<CAP>, [f64; CAP])> {
        (
            prop::collection::vec((link_strategy(), any::<u64>(), any::<bool>()), 1..=CAP),
            prop::array::uniform6(-PI..PI),
        )
            .prop_map(|(joints, q)| (branching_tree(&joints), q))
    }

    /// Whether joint `joint` is on body `body`'s path to the base.
    fn carries(tree: &Tree<CAP>, body: usize, joint: usize) -> bool {
        let mut b = body;
        while let Some(k) = b.checked_sub(1) {
            if k == joint {
                return true;
            }
            b = tree.parent_body(k).unwrap();
        }
        false
    }

    /// A two-armed tree: a turning torso (joint 0) carrying arm A — a shoulder (1), a prismatic
    /// forearm (2), a wrist (5) with the hand — and arm B — a shoulder (3) and an elbow (4).
    /// Capacity 8, so entries 6 and 7 are past the tree.
    fn two_arms() -> Tree<8> {
        let body = |m: f64, l: f64| Inertial {
            mass_kg: m,
            com_m: [l / 2.0, 0.0, 0.0],
            inertia_kgm2: [0.001 * m, 0.0, 0.0, m * l * l / 12.0, 0.0, m * l * l / 12.0],
        };
        let joint = |parent_body, kind, xyz, axis, inertial| JointSpec {
            parent_body,
            kind,
            origin: Placement::from_xyz_rpy(xyz, [0.0, 0.0, 0.1]),
            axis,
            body: inertial,
        };
        let (r, p) = (JointType::Revolute, JointType::Prismatic);
        let joints = [
            joint(0, r, [0.0; 3], [0.0, 0.0, 1.0], body(8.0, 0.2)),
            joint(1, r, [0.0, 0.2, 0.3], [0.0, 1.0, 0.0], body(2.0, 0.3)),
            joint(2, p, [0.3, 0.0, 0.0], [1.0, 0.0, 0.0], body(1.5, 0.25)),
            joint(1, r, [0.0, -0.2, 0.3], [0.0, 1.0, 0.0], body(2.0, 0.3)),
            joint(4, r, [0.3, 0.0, 0.0], [0.0, 0.0, 1.0], body(1.5, 0.3)),
            joint(3, r, [0.25, 0.0, 0.0], [1.0, 0.0, 0.0], body(0.5, 0.1)),
        ];
        Tree::new(&TreeSpec {
            base: BaseKind::Fixed,
            base_body: Inertial::ZERO,
            joints: &joints,
        })
        .unwrap()
    }

    /// The hand of [`two_arms`]: on the wrist, body 6.
    const WRIST: usize = 6;

    fn wrist_point() -> Vector3<f64> {
        Vector3::new(0.1, 0.0, 0.02)
    }

    /// On a branching tree with a prismatic joint on the hand's path, at a non-identity base
    /// pose: the joints of the other arm (3, 4) get no task torque and their posture torque
    /// passes both projectors unchanged; the task torque is Jᵀ F with J the frame Jacobian's
    /// linear rows; ẋ is the derivative of the hand position; gravity is the tree's; the
    /// dynamically consistent null-space torque gives the hand no acceleration; entries past
    /// the tree are 0.
    #[test]
    fn branching_tree_task_torque_stays_on_the_hands_branch() {
        let tree = two_arms();
        let base = Isometry3::from_parts(
            Translation3::new(0.5, -0.2, 0.8),
            UnitQuaternion::from_euler_angles(0.1, -0.3, 0.7),
        );
        let q = [0.3, -0.5, 0.12, 0.4, -0.8, 0.6, 0.0, 0.0];
        let qd = [0.2, -0.4, 0.3, 0.5, -0.6, 0.7, 0.0, 0.0];
        let posture = [0.0, 0.2, 0.05, -0.3, 0.1, 0.0, 0.0, 0.0];
        let g = Vector3::new(0.0, 0.0, -9.81);
        let target = Vector3::new(0.9, 0.3, 1.2);
        let target_velocity = Vector3::new(0.1, 0.0, -0.1);
        let kin = tree.kinematics(&base, &q).unwrap();
        let placement = Placement {
            xyz_m: wrist_point().into(),
            rotation: Placement::IDENTITY.rotation,
        };
        let j: SMatrix<f64, 3, 8> = kin
            .frame_jacobian(WRIST, &placement)
            .unwrap()
            .fixed_rows::<3>(0)
            .into_owned();
        assert!(
            j.column(3)
                .iter()
                .chain(j.column(4).iter())
                .all(|&v| v == 0.0)
        );
        assert!(j.column(2).norm() > 0.5, "the prismatic column is its axis");
        for projector in BOTH {
            let reach = Reach::new(config(projector, wrist_point())).unwrap();
            let c = reach
                .tick(
                    &tree,
                    &base,
                    WRIST,
                    &q,
                    &qd,
                    &target,
                    &target_velocity,
                    &posture,
                    &g,
                )
                .unwrap();
            let cfg = reach.config();
            let tau_p: [f64; 8] = core::array::from_fn(|i| {
                cfg.posture_stiffness_nm_per_rad * (posture[i] - q[i])
                    - cfg.posture_damping_nms_per_rad * qd[i]
            });
            for other in [3, 4] {
                assert_eq!(c.task_torques_nm[other], 0.0, "{projector:?}");
                assert_eq!(
                    c.null_space_torques_nm[other], tau_p[other],
                    "{projector:?}"
                );
            }
            for i in 0..8 {
                let sum =
                    c.task_torques_nm[i] + c.null_space_torques_nm[i] + c.gravity_torques_nm[i];
                assert_eq!(c.torques_nm[i], sum);
            }
            for part in [
                c.torques_nm,
                c.task_torques_nm,
                c.null_space_torques_nm,
                c.gravity_torques_nm,
            ] {
                assert_eq!(&part[6..], &[0.0, 0.0]);
            }
            let hand = kin
                .frame_pose(WRIST, &placement)
                .unwrap()
                .translation
                .vector;
            assert_eq!(c.hand_position_m, hand);
            assert_eq!(c.hand_error_m, target - hand);
            let v = SVector::<f64, 8>::from(qd);
            assert_eq!(c.hand_velocity_m_s, j * v);
            assert_eq!(
                SVector::<f64, 8>::from(c.task_torques_nm),
                j.transpose() * c.hand_force_n
            );
            assert_eq!(
                SVector::<f64, 8>::from(c.gravity_torques_nm),
                kin.gravity(&g).unwrap()
            );
            let h = 1e-6;
            let at = |s: f64| {
                let q: [f64; 8] = core::array::from_fn(|i| q[i] + s * qd[i]);
                let kin = tree.kinematics(&base, &q).unwrap();
                kin.frame_pose(WRIST, &placement)
                    .unwrap()
                    .translation
                    .vector
            };
            let fd = (at(h) - at(-h)) / (2.0 * h);
            assert!((c.hand_velocity_m_s - fd).norm() < 1e-8);
            if projector == Projector::DynamicallyConsistent {
                let mut m = kin.mass_matrix().unwrap();
                for i in 6..8 {
                    m[(i, i)] = 1.0;
                }
                let mut m_inv = m.try_inverse().unwrap();
                for i in 6..8 {
                    m_inv[(i, i)] = 0.0;
                }
                let null = SVector::<f64, 8>::from(c.null_space_torques_nm);
                let tau = SVector::<f64, 8>::from(tau_p);
                let accel = (j * m_inv * null).norm();
                assert!(accel <= LEAK * (j * m_inv).norm() * tau.norm(), "{accel}");
                assert!((j * m_inv * tau).norm() > 1.0);
            }
        }
    }

    /// CCD on the branching tree: reachable targets (the hand at other configurations of its
    /// arm) are reached, the prismatic joint slides, and nothing off the hand's path moves.
    #[test]
    fn ccd_ik_moves_only_the_hands_path() {
        let tree = two_arms();
        let base = Isometry3::translation(0.1, 0.2, 0.3);
        let start = [0.3, -0.5, 0.12, 0.4, -0.8, 0.6, 7.0, -7.0];
        let placement = Placement {
            xyz_m: wrist_point().into(),
            rotation: Placement::IDENTITY.rotation,
        };
        for goal in [
            [0.9, 0.3, 0.3, 0.4, -0.8, -0.4, 0.0, 0.0],
            [-0.4, -1.2, -0.1, 0.4, -0.8, 1.0, 0.0, 0.0],
            [1.5, 0.8, 0.25, 0.4, -0.8, 0.2, 0.0, 0.0],
        ] {
            let target = tree
                .kinematics(&base, &goal)
                .unwrap()
                .frame_pose(WRIST, &placement)
                .unwrap()
                .translation
                .vector;
            let ik = ccd_ik(
                &tree,
                &base,
                &start,
                WRIST,
                &wrist_point(),
                &target,
                500,
                1e-6,
            )
            .unwrap();
            assert!(ik.converged(), "{goal:?}: {ik:?}");
            assert_eq!(
                [ik.q_rad[3], ik.q_rad[4], ik.q_rad[6], ik.q_rad[7]],
                [start[3], start[4], start[6], start[7]]
            );
            assert_ne!(ik.q_rad[2], start[2], "the prismatic joint slides");
            let reached = tree
                .kinematics(&base, &ik.q_rad)
                .unwrap()
                .frame_pose(WRIST, &placement)
                .unwrap()
                .translation
                .vector;
            assert_eq!(ik.residual_m, libm::sqrt((target - reached).norm_squared()));
        }
    }

    /// A prismatic joint alone is slid by the error's projection onto its axis: one sweep puts
    /// the hand at the foot of the target on the axis line, and the next finds no improvement
    /// (stalled after 2 sweeps).
    #[test]
    fn ccd_slides_a_prismatic_joint_by_the_projection() {
        let axis = [1.0, 1.0, 0.0];
        let tree = Tree::<1>::new(&TreeSpec {
            base: BaseKind::Fixed,
            base_body: Inertial::ZERO,
            joints: &[JointSpec {
                parent_body: 0,
                kind: JointType::Prismatic,
                origin: Placement::IDENTITY,
                axis,
                body: Inertial {
                    mass_kg: 1.0,
                    com_m: [0.0; 3],
                    inertia_kgm2: [0.01, 0.0, 0.0, 0.01, 0.0, 0.01],
                },
            }],
        })
        .unwrap();
        let target = Vector3::new(1.0, 0.0, 0.5);
        let base = Isometry3::identity();
        let ik = ccd_ik(
            &tree,
            &base,
            &[0.0],
            1,
            &Vector3::zeros(),
            &target,
            10,
            1e-9,
        )
        .unwrap();
        assert!((ik.q_rad[0] - core::f64::consts::FRAC_1_SQRT_2).abs() < 1e-15);
        assert!((ik.residual_m - libm::sqrt(0.75)).abs() < 1e-15);
        // The second sweep finds nothing to improve and moves nothing.
        assert_eq!((ik.outcome, ik.sweeps), (CcdOutcome::Stalled, 2));
        // On the line: converged in one sweep.
        let on_line = Vector3::new(-0.3, -0.3, 0.0);
        let ik = ccd_ik(
            &tree,
            &base,
            &[0.0],
            1,
            &Vector3::zeros(),
            &on_line,
            10,
            1e-12,
        )
        .unwrap();
        assert_eq!((ik.outcome, ik.sweeps), (CcdOutcome::Converged, 1));
    }

    /// Every bad input of the tick and of CCD is an error that names it, never a panic: a
    /// floating base, a hand body past the tree, a NaN in any input, a bad base pose, a bad
    /// tolerance; the hand on the base (body 0) has no task.
    #[test]
    fn tree_ticks_name_the_bad_input() {
        let tree = two_arms();
        let reach = Reach::new(config(Projector::DynamicallyConsistent, wrist_point())).unwrap();
        let (z, nan) = (Vector3::zeros(), Vector3::new(0.0, f64::NAN, 0.0));
        let ok = [0.1, 0.2, 0.05, 0.3, -0.1, 0.2, 0.0, 0.0];
        let base = Isometry3::identity();
        let tick =
            |tree: &Tree<8>,
             base: &Isometry3<f64>,
             body: usize,
             q: [f64; 8],
             qd: [f64; 8],
             t: &Vector3<f64>,
             tv: &Vector3<f64>,
             p: [f64; 8],
             g: &Vector3<f64>| { reach.tick(tree, base, body, &q, &qd, t, tv, &p, g) };
        let nan_at = |i: usize| {
            let mut v = ok;
            v[i] = f64::NAN;
            v
        };
        let model = |e: ModelError| ReachError::Model(e);
        assert!(tick(&tree, &base, WRIST, ok, ok, &z, &z, ok, &z).is_ok());
        assert_eq!(
            tick(&tree, &base, 7, ok, ok, &z, &z, ok, &z).unwrap_err(),
            ReachError::NoSuchBody { body: 7, bodies: 7 }
        );
        assert_eq!(
            tick(&tree, &base, usize::MAX, ok, ok, &z, &z, ok, &z).unwrap_err(),
            ReachError::NoSuchBody {
                body: usize::MAX,
                bodies: 7
            }
        );
        assert_eq!(
            tick(&tree, &base, WRIST, nan_at(4), ok, &z, &z, ok, &z).unwrap_err(),
            model(ModelError::NonFinite(Input::Position { joint: 4 }))
        );
        assert_eq!(
            tick(&tree, &base, WRIST, ok, nan_at(3), &z, &z, ok, &z).unwrap_err(),
            model(ModelError::NonFinite(Input::Velocity { joint: 3 }))
        );
        assert_eq!(
            tick(&tree, &base, WRIST, ok, ok, &z, &z, nan_at(5), &z).unwrap_err(),
            ReachError::NonFinite(ReachInput::PostureGoal { joint: 5 })
        );
        assert_eq!(
            tick(&tree, &base, WRIST, ok, ok, &nan, &z, ok, &z).unwrap_err(),
            ReachError::NonFinite(ReachInput::HandTarget)
        );
        assert_eq!(
            tick(&tree, &base, WRIST, ok, ok, &z, &nan, ok, &z).unwrap_err(),
            ReachError::NonFinite(ReachInput::HandTargetVelocity)
        );
        assert_eq!(
            tick(&tree, &base, WRIST, ok, ok, &z, &z, ok, &nan).unwrap_err(),
            model(ModelError::NonFinite(Input::Gravity))
        );
        let bad_bases = [
            Isometry3::translation(f64::NAN, 0.0, 0.0),
            Isometry3::translation(0.0, f64::INFINITY, 0.0),
            Isometry3::from_parts(
                Translation3::identity(),
                UnitQuaternion::new_unchecked(Quaternion::new(0.0, 0.0, 0.0, 0.0)),
            ),
            Isometry3::from_parts(
                Translation3::identity(),
                UnitQuaternion::new_unchecked(Quaternion::new(1.0, f64::NAN, 0.0, 0.0)),
            ),
        ];
        for bad in bad_bases {
            assert_eq!(
                tick(&tree, &bad, WRIST, ok, ok, &z, &z, ok, &z).unwrap_err(),
                ReachError::NonFinite(ReachInput::BasePose)
            );
            assert_eq!(
                ccd_ik(&tree, &bad, &ok, WRIST, &wrist_point(), &z, 10, 1e-3).unwrap_err(),
                ReachError::NonFinite(ReachInput::BasePose)
            );
        }
        // Past the tree nothing is read.
        assert!(
            tick(
                &tree,
                &base,
                WRIST,
                nan_at(7),
                nan_at(6),
                &z,
                &z,
                nan_at(7),
                &z
            )
            .is_ok()
        );
        // The hand on the base: no joint moves it, no task, τ_null = τ_p.
        let c = tick(&tree, &base, 0, ok, [0.0; 8], &z, &z, [0.5; 8], &z).unwrap();
        assert_eq!(c.task_torques_nm, [0.0; 8]);
        assert_eq!(c.hand_position_m, wrist_point());
        for (null, q) in c.null_space_torques_nm.iter().zip(ok).take(6) {
            assert_eq!(*null, 20.0 * (0.5 - q));
        }
        // CCD: the same names.
        let hand = wrist_point();
        assert_eq!(
            ccd_ik(&tree, &base, &ok, 7, &hand, &z, 10, 1e-3).unwrap_err(),
            ReachError::NoSuchBody { body: 7, bodies: 7 }
        );
        assert_eq!(
            ccd_ik(&tree, &base, &nan_at(2), WRIST, &hand, &z, 10, 1e-3).unwrap_err(),
            model(ModelError::NonFinite(Input::Position { joint: 2 }))
        );
        assert_eq!(
            ccd_ik(&tree, &base, &ok, WRIST, &nan, &z, 10, 1e-3).unwrap_err(),
            model(ModelError::NonFinite(Input::Point))
        );
        assert_eq!(
            ccd_ik(&tree, &base, &ok, WRIST, &hand, &nan, 10, 1e-3).unwrap_err(),
            ReachError::NonFinite(ReachInput::HandTarget)
        );
        for tolerance in [-1e-3, f64::NAN, f64::INFINITY] {
            assert_eq!(
                ccd_ik(&tree, &base, &ok, WRIST, &hand, &z, 10, tolerance).unwrap_err(),
                ReachError::Config(ReachField::IkTolerance)
            );
        }
        // Joints off the path are not read by CCD's sweeps but are by the kinematics.
        assert_eq!(
            ccd_ik(&tree, &base, &nan_at(3), WRIST, &hand, &z, 10, 1e-3).unwrap_err(),
            model(ModelError::NonFinite(Input::Position { joint: 3 }))
        );
        // A floating base: refused by both, whatever else is wrong.
        let floating = {
            let joints = [JointSpec {
                parent_body: 0,
                kind: JointType::Revolute,
                origin: Placement::IDENTITY,
                axis: [0.0, 0.0, 1.0],
                body: Inertial {
                    mass_kg: 1.0,
                    com_m: [0.1, 0.0, 0.0],
                    inertia_kgm2: [0.01, 0.0, 0.0, 0.01, 0.0, 0.01],
                },
            }];
            Tree::<8>::new(&TreeSpec {
                base: BaseKind::Floating,
                base_body: Inertial {
                    mass_kg: 5.0,
                    com_m: [0.0; 3],
                    inertia_kgm2: [0.1, 0.0, 0.0, 0.1, 0.0, 0.1],
                },
                joints: &joints,
            })
            .unwrap()
        };
        assert_eq!(
            tick(&floating, &base, 1, ok, ok, &z, &z, ok, &z).unwrap_err(),
            model(ModelError::FloatingBase)
        );
        assert_eq!(
            tick(&floating, &bad_bases[0], 9, nan_at(0), ok, &nan, &z, ok, &z).unwrap_err(),
            model(ModelError::FloatingBase)
        );
        assert_eq!(
            ccd_ik(&floating, &base, &ok, 1, &hand, &z, 10, 1e-3).unwrap_err(),
            model(ModelError::FloatingBase)
        );
        assert_eq!(
            std::format!("{}", ReachError::NoSuchBody { body: 7, bodies: 7 }),
            "reach: no hand body 7 (the tree has 7)"
        );
    }

    proptest! {
        /// On random branching trees with both joint kinds and any hand body: the joints that
        /// do not carry the hand get no task torque and their posture torque unchanged (both
        /// projectors, exactly); the dynamically consistent null-space torque gives the hand no
        /// acceleration (J M⁻¹ τ_null = 0 up to the documented leak, where A is well
        /// separated); the torques add up.
        #[test]
        fn tree_null_space_on_branching_trees(
            (tree, q) in branching_strategy(),
            body_pick in 0usize..=CAP,
            hand in prop::array::uniform3(-0.5..0.5f64),
            qd in prop::array::uniform6(-3.0..3.0f64),
            posture in prop::array::uniform6(-PI..PI),
            target in prop::array::uniform3(-1.5..1.5f64),
        ) {
            let n = tree.joint_count();
            let body = body_pick % (n + 1);
            let hand = Vector3::from(hand);
            let base = Isometry3::identity();
            let g = Vector3::new(0.0, 0.0, -9.81);
            let kin = tree.kinematics(&base, &q).unwrap();
            let placement =
                Placement { xyz_m: hand.into(), rotation: Placement::IDENTITY.rotation };
            let j: SMatrix<f64, 3, CAP> =
                kin.frame_jacobian(body, &placement).unwrap().fixed_rows::<3>(0).into_owned();
            let mut m = kin.mass_matrix().unwrap();
            for i in n..CAP { m[(i, i)] = 1.0; }
            let mut m_inv = m.try_inverse().unwrap();
            for i in n..CAP { m_inv[(i, i)] = 0.0; }
            for projector in BOTH {
                let reach = Reach::new(config(projector, hand)).unwrap();
                let c = reach.tick(&tree, &base, body, &q, &qd, &Vector3::from(target),
                    &Vector3::zeros(), &posture, &g).unwrap();
                let cfg = reach.config();
                let tau_p: [f64; CAP] = core::array::from_fn(|i| if i < n {
                    cfg.posture_stiffness_nm_per_rad * (posture[i] - q[i])
                        - cfg.posture_damping_nms_per_rad * qd[i]
                } else { 0.0 });
                for (k, &tau) in tau_p.iter().enumerate() {
                    if !carries(&tree, body, k) {
                        prop_assert_eq!(c.task_torques_nm[k], 0.0);
                        prop_assert_eq!(c.null_space_torques_nm[k], tau);
                    }
                    let sum = c.task_torques_nm[k] + c.null_space_torques_nm[k]
                        + c.gravity_torques_nm[k];
                    prop_assert_eq!(c.torques_nm[k], sum);
                }
                let a = j * m_inv * j.transpose();
                if projector == Projector::DynamicallyConsistent && a.trace() > 1e-12
                    && well_separated(&a)
                {
                    let null = SVector::<f64, CAP>::from(c.null_space_torques_nm);
                    let scale = (j * m_inv).norm() * SVector::<f64, CAP>::from(tau_p).norm();
                    let accel = (j * m_inv * null).norm();
                    prop_assert!(accel <= LEAK * scale, "J M⁻¹ τ_null = {accel}, scale {scale}");
                }
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 2048, ..ProptestConfig::default() })]

        /// For any inputs of the tick and of CCD (any f64 bits in q, q̇, the posture goals, the
        /// targets, gravity, the hand point and the base pose; any hand body, past the tree
        /// too): a non-finite input that is read, or a hand body past the tree, is an error;
        /// finite ones give finite results or `OutOfRange`, never a NaN; moderate ones on a
        /// body of the tree always give a result.
        #[test]
        fn tree_never_nan_and_non_finite_is_refused(
            (tree, _) in branching_strategy(),
            raw in prop::collection::vec(any::<(u8, u64)>(), 3 * CAP + 12 + 7),
            projector in prop::sample::select(BOTH.to_vec()),
            body_pick in 0usize..CAP + 3,
            sweeps in 0usize..30,
        ) {
            let v: Vec<f64> = raw.iter().copied().map(pick).collect();
            let n = tree.joint_count();
            let q: [f64; CAP] = core::array::from_fn(|i| v[i]);
            let qd: [f64; CAP] = core::array::from_fn(|i| v[CAP + i]);
            let posture: [f64; CAP] = core::array::from_fn(|i| v[2 * CAP + i]);
            let w = &v[3 * CAP..];
            let target = Vector3::new(w[0], w[1], w[2]);
            let target_velocity = Vector3::new(w[3], w[4], w[5]);
            let gravity = Vector3::new(w[6], w[7], w[8]);
            let hand = [w[9], w[10], w[11]];
            let translation = [w[12], w[13], w[14]];
            let quaternion = [w[15], w[16], w[17], w[18]];
            let base = Isometry3::from_parts(
                Translation3::new(translation[0], translation[1], translation[2]),
                UnitQuaternion::new_unchecked(Quaternion::new(
                    quaternion[0], quaternion[1], quaternion[2], quaternion[3])),
            );
            let body = body_pick;
            let known_body = body <= n;
            let base_ok = all_finite(&translation) && all_finite(&quaternion)
                && quaternion.iter().any(|&x| x != 0.0);
            let inputs = [&q[..n], &qd[..n], &posture[..n], target.as_slice(),
                target_velocity.as_slice(), gravity.as_slice(), &hand, &translation, &quaternion];
            let inputs_finite = base_ok && inputs.iter().all(|s| all_finite(s));
            let moderate = inputs_finite && inputs.iter().all(|s| s.iter().all(|x| x.abs() <= 3.0))
                && quaternion.iter().map(|x| x * x).sum::<f64>() >= 0.01;
            let cfg = ReachConfig { hand_point_m: hand, ..config(projector, Vector3::zeros()) };
            match Reach::new(cfg) {
                Err(e) => prop_assert_eq!(e, ReachError::Config(ReachField::HandPoint)),
                Ok(reach) => match reach.tick(&tree, &base, body, &q, &qd, &target,
                    &target_velocity, &posture, &gravity)
                {
                    Ok(c) => {
                        prop_assert!(inputs_finite && known_body);
                        for part in [c.torques_nm, c.task_torques_nm, c.null_space_torques_nm,
                            c.gravity_torques_nm]
                        {
                            prop_assert!(all_finite(&part));
                            prop_assert!(part[n..].iter().all(|&t| t == 0.0));
                        }
                        prop_assert!(all_finite(c.hand_error_m.as_slice())
                            && all_finite(c.hand_velocity_m_s.as_slice())
                            && all_finite(c.hand_force_n.as_slice())
                            && c.posture_error_rad.is_finite());
                    }
                    Err(e) => {
                        prop_assert!(!(moderate && known_body), "{e:?}");
                        if !known_body {
                            prop_assert_eq!(e, ReachError::NoSuchBody { body, bodies: n + 1 });
                        } else if inputs_finite {
                            prop_assert_eq!(e, ReachError::Model(ModelError::OutOfRange));
                        }
                    }
                },
            }
            let hand = Vector3::from(hand);
            match ccd_ik(&tree, &base, &q, body, &hand, &target, sweeps, 1e-4) {
                Ok(ik) => {
                    prop_assert!(known_body && base_ok);
                    prop_assert!(all_finite(&ik.q_rad[..n]) && ik.residual_m.is_finite());
                    prop_assert!(ik.sweeps <= sweeps);
                    for (k, (solved, given)) in ik.q_rad.iter().zip(q).enumerate().take(n) {
                        if !carries(&tree, body, k) {
                            prop_assert_eq!(solved.to_bits(), given.to_bits());
                        }
                    }
                }
                Err(e) => {
                    let ccd_inputs = [&q[..n], hand.as_slice(), target.as_slice(), &translation,
                        &quaternion];
                    let ccd_finite = base_ok && ccd_inputs.iter().all(|s| all_finite(s));
                    let ccd_moderate = ccd_finite
                        && ccd_inputs.iter().all(|s| s.iter().all(|x| x.abs() <= 3.0))
                        && quaternion.iter().map(|x| x * x).sum::<f64>() >= 0.01;
                    prop_assert!(!(ccd_moderate && known_body), "{e:?}");
                    if !known_body {
                        prop_assert_eq!(e, ReachError::NoSuchBody { body, bodies: n + 1 });
                    } else if ccd_finite {
                        prop_assert_eq!(e, ReachError::Model(ModelError::OutOfRange));
                    }
                }
            }
        }
    }
}
