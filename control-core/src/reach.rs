//! Reaching with a chain's hand: Kenwright's joint-torque control of an end effector ("Joint-
//! Torque Control of Character Motions", seed 002), with the null-space posture torque projected
//! either by the seed's pseudo-inverse or dynamically consistently (Khatib), and cyclic
//! coordinate descent (CCD) inverse kinematics as the cheap kinematic alternative the seed names.
//!
//! For: a controller tick that must put a hand point of an articulated [`Chain`] at a world
//! target (a spring-damper pulling the hand, mapped to joint torques by Jᵀ) while a secondary
//! posture goal uses only what the hand task leaves free; and a bounded IK solve whose joint
//! targets a joint servo ([`crate::articulated::ChainArrival`]) can then track.
//!
//! Must never allocate, block or panic, whatever the input, and never return a NaN: every input
//! is checked ([`ReachError`] names it), a singular or rank-deficient Jacobian is regularised
//! (below) rather than inverted, and a result that is not a finite f64 (finite inputs whose
//! products overflow) is [`ModelError::OutOfRange`]. Nothing loops longer than O(N³) per tick;
//! [`ccd_ik`] runs at most the caller's `max_sweeps` sweeps of O(N) each.
//!
//! ```
//! use control_core::articulated::nalgebra::Vector3;
//! use control_core::articulated::{Chain, LinkSpec};
//! use control_core::reach::{Projector, Reach, ReachConfig, ccd_ik};
//! // A planar 3-link arm about +z, in a vertical plane (gravity −y).
//! let rod = |x: f64| LinkSpec {
//!     origin_xyz_m: [x, 0.0, 0.0],
//!     origin_rpy_rad: [0.0; 3],
//!     axis: [0.0, 0.0, 1.0],
//!     mass_kg: 1.0,
//!     com_m: [0.15, 0.0, 0.0],
//!     inertia_kgm2: [0.0004, 0.0, 0.0, 0.0077, 0.0, 0.0077],
//! };
//! let chain = Chain::<3>::new(&[rod(0.0), rod(0.3), rod(0.3)])?;
//! let reach = Reach::new(ReachConfig {
//!     projector: Projector::DynamicallyConsistent,
//!     hand_link: 2,
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
//! let command = reach.tick(&chain, &q, &[0.0; 3], &target, &Vector3::zeros(), &q, &gravity)?;
//! assert!(command.torques_nm.iter().all(|t| t.is_finite()));
//! // The IK alternative: joint targets that put the hand on the target.
//! let ik = ccd_ik(&chain, &q, 2, &Vector3::new(0.3, 0.0, 0.0), &target, 50, 1e-4)?;
//! assert!(ik.converged() && ik.residual_m <= 1e-4);
//! # Ok::<(), Box<dyn core::error::Error>>(())
//! ```
//!
//! # The torques
//! With x the world hand point, J its 3×N point Jacobian
//! ([`crate::articulated::Kinematics::point_jacobian`]),
//! ẋ = J q̇, M the mass matrix and g the gravity holding torque:
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
//! [`ccd_ik`] sweeps from the hand's link to the root; each joint is turned about its axis by the
//! angle that takes the hand toward the target in the plane normal to the axis (both projected
//! onto it), which minimises the distance over that joint alone. The hand is carried along by
//! the same rotation (joints closer to the root do not move), so a sweep costs one forward
//! kinematics. It stops when the residual is within the tolerance ([`CcdOutcome::Converged`]),
//! when a sweep improves it by less than [`CCD_STALL_FRACTION`] of itself (a fixed point: an
//! unreachable target, [`CcdOutcome::Stalled`]) or after `max_sweeps` ([`CcdOutcome::SweepLimit`]);
//! the residual is always reported. No joint limits are applied.
//!
//! To track the solution with PD and gravity, hand its joint angles to
//! [`crate::articulated::ChainArrival::tick`] as [`crate::articulated::JointTarget`]s (a
//! `time_to_go_s` of 0 holds each pose critically damped, with gravity feed-forward): no second
//! PD is kept here.
//!
//! # Costs (measured)
//! `cargo bench -p control-core --bench reach -- --warm-up-time 1 --measurement-time 3`, the
//! articulated bench's 3-link arm, x86-64 baseline build, on a shared 2-core machine under other
//! jobs (one run; expect up to 2× spread): [`Reach::tick`] 0.45 µs with
//! [`Projector::PseudoInverse`], 0.70 µs with [`Projector::DynamicallyConsistent`] (the mass
//! matrix and its Cholesky factor); [`ccd_ik`] to 1e−4 m, 20 sweeps, 8.0 µs (one forward
//! kinematics, ~0.25 µs, and three `atan2`/`sincos` per sweep).
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

use nalgebra::{Cholesky, Matrix3, SMatrix, SVector, Vector3};

use crate::articulated::{Chain, Composite, Input, ModelError};

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
    /// The link that carries the hand (0 at the root). Checked against the chain every tick.
    pub hand_link: usize,
    /// The hand point in the hand link's frame, m.
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

/// An input of this module that the chain's [`Input`] does not name.
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
}

/// Why [`Reach`] or [`ccd_ik`] returned no result.
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub enum ReachError {
    /// The chain refused an evaluation: a non-finite joint position, velocity, gravity or hand
    /// point, a hand link beyond the chain, or a result beyond the f64 range
    /// ([`ModelError::OutOfRange`], also when the mass matrix or the regularised task matrix
    /// cannot be factored in f64).
    Model(ModelError),
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

/// What one [`Reach::tick`] commands, and its parts, for logging. Entries past the chain's
/// length are 0.
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
    /// ‖q_g − q‖ over the chain's joints, rad.
    pub posture_error_rad: f64,
}

impl<const N: usize> ReachCommand<N> {
    /// ‖x* − x‖, m.
    pub fn hand_error_norm_m(&self) -> f64 {
        libm::sqrt(self.hand_error_m.norm_squared())
    }
}

/// Kenwright's hand controller for a chain (see the module docs). Stateless: a configuration,
/// validated once.
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

    /// One tick: the hand's position, velocity and Jacobian at (`q`, `qd`), the hand force toward
    /// `hand_target_m` moving at `hand_target_velocity` (world, m and m/s), the posture torque
    /// toward `posture_rad`, its projection into the task's null space, and gravity. Only the
    /// first [`Chain::len`] entries of `q`, `qd` and `posture_rad` are read; `gravity` (world,
    /// m/s²) is checked even when compensation is off.
    ///
    /// Cost: forward kinematics, the composite inertias, one 3×N Jacobian, and for
    /// [`Projector::DynamicallyConsistent`] the mass matrix and its Cholesky factor (O(N³)).
    #[allow(clippy::too_many_arguments)]
    pub fn tick<const N: usize>(
        &self,
        chain: &Chain<N>,
        q: &[f64; N],
        qd: &[f64; N],
        hand_target_m: &Vector3<f64>,
        hand_target_velocity: &Vector3<f64>,
        posture_rad: &[f64; N],
        gravity: &Vector3<f64>,
    ) -> Result<ReachCommand<N>, ReachError> {
        let c = &self.config;
        if !all_finite(hand_target_m.as_slice()) {
            return Err(ReachError::NonFinite(ReachInput::HandTarget));
        }
        if !all_finite(hand_target_velocity.as_slice()) {
            return Err(ReachError::NonFinite(ReachInput::HandTargetVelocity));
        }
        if !all_finite(gravity.as_slice()) {
            return Err(ModelError::NonFinite(Input::Gravity).into());
        }
        let kin = chain.forward_kinematics(q)?;
        let hand = kin.point_in_world(c.hand_link, &Vector3::from(c.hand_point_m))?;
        let jacobian = kin.point_jacobian(c.hand_link, &hand)?;
        // The chain's joints only: entries past it are never read (they may hold anything).
        let mut velocity = SVector::<f64, N>::zeros();
        let mut posture = SVector::<f64, N>::zeros();
        let mut posture_error_sq = 0.0;
        for (joint, ((((v, p), &qi), &vi), &goal)) in velocity
            .iter_mut()
            .zip(posture.iter_mut())
            .zip(q.iter())
            .zip(qd.iter())
            .zip(posture_rad.iter())
            .take(kin.len())
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
            posture_error_sq += error * error;
        }
        let hand_velocity = jacobian * velocity;
        let hand_error = hand_target_m - hand;
        let force = hand_error * c.stiffness_n_per_m
            + (hand_target_velocity - hand_velocity) * c.damping_ns_per_m;
        let task = jacobian.transpose() * force;
        let composite = kin.composite()?;
        let null_space = null_space_torque(c.projector, &jacobian, &composite, &posture)?;
        let gravity_torques = if c.gravity_compensation {
            composite.gravity_torques(gravity)?
        } else {
            SVector::zeros()
        };
        let torques = task + null_space + gravity_torques;
        let posture_error = libm::sqrt(posture_error_sq);
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
            hand_position_m: hand,
            hand_velocity_m_s: hand_velocity,
            hand_error_m: hand_error,
            hand_force_n: force,
            posture_error_rad: posture_error,
        })
    }
}

/// (I − Jᵀ Wᵀ) τ for the projector (see the module docs for the regularisation). `jacobian` is
/// finite, zero past the chain; `composite` is the chain's at the same configuration.
fn null_space_torque<const N: usize>(
    projector: Projector,
    jacobian: &SMatrix<f64, 3, N>,
    composite: &Composite<N>,
    tau: &SVector<f64, N>,
) -> Result<SVector<f64, N>, ModelError> {
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
            let mut m = composite.mass_matrix()?;
            let m_scale = m.diagonal().iter().fold(0.0f64, |s, v| s.max(*v));
            if m_scale <= 0.0 {
                return Err(ModelError::OutOfRange);
            }
            m /= m_scale;
            // Joints past the chain: an identity block, so that M̂ is invertible; Ĵ's columns
            // there are zero, so it changes nothing.
            for i in composite.len()..N {
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
        return Err(ModelError::OutOfRange);
    }
    let z = Cholesky::new(regularised)
        .ok_or(ModelError::OutOfRange)?
        .solve(&(y.transpose() * tau));
    let out = tau - j.transpose() * z;
    if all_finite(out.as_slice()) {
        Ok(out)
    } else {
        Err(ModelError::OutOfRange)
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
    /// The joint angles (joints past the hand link, and past the chain, as given), rad.
    pub q_rad: [f64; N],
    /// ‖target − hand‖ at `q_rad` (from a fresh forward kinematics), m.
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

/// Cyclic coordinate descent: joint angles from `q_start` that bring `hand_point` (in link
/// `hand_link`'s frame) to `target` (world), within `tolerance_m` (finite, ≥ 0) or as close as
/// CCD gets in `max_sweeps` sweeps (see the module docs). Each sweep turns joints `hand_link`
/// down to 0 once and costs one forward kinematics.
pub fn ccd_ik<const N: usize>(
    chain: &Chain<N>,
    q_start: &[f64; N],
    hand_link: usize,
    hand_point: &Vector3<f64>,
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
        let kin = chain.forward_kinematics(&q)?;
        let mut hand = kin.point_in_world(hand_link, hand_point)?;
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
        let joints = q.iter_mut().take(hand_link.saturating_add(1)).enumerate();
        for (joint, qi) in joints.rev() {
            let (Some(origin), Some(axis)) = (kin.joint_position(joint), kin.joint_axis(joint))
            else {
                continue;
            };
            hand = ccd_step(qi, &origin, &axis, &hand, target);
        }
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

/// Whether every value is finite; without early exit.
fn all_finite(values: &[f64]) -> bool {
    values.iter().fold(true, |ok, v| ok & v.is_finite())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::articulated::{ArrivalConfig, ChainArrival, JointTarget, Kinematics, LinkSpec};
    use core::f64::consts::PI;
    use proptest::prelude::*;

    /// Capacity of the random chains: 1 to `CAP` links, so the unused part is exercised too.
    const CAP: usize = 6;

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

    /// A planar 3-link arm about +z (a vertical plane when gravity is −y); the hand is the tip
    /// of link 2.
    fn planar() -> Chain<3> {
        let z = [0.0, 0.0, 1.0];
        Chain::new(&[
            rod([0.0; 3], z, 2.0, PLANAR[0]),
            rod([PLANAR[0], 0.0, 0.0], z, 1.5, PLANAR[1]),
            rod([PLANAR[1], 0.0, 0.0], z, 1.0, PLANAR[2]),
        ])
        .unwrap()
    }

    fn planar_hand() -> Vector3<f64> {
        Vector3::new(PLANAR[2], 0.0, 0.0)
    }

    fn config(projector: Projector, hand_link: usize, hand: Vector3<f64>) -> ReachConfig {
        ReachConfig {
            projector,
            hand_link,
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

    fn chain_strategy() -> impl Strategy<Value = (Chain<CAP>, [f64; CAP])> {
        (
            prop::collection::vec(link_strategy(), 1..=CAP),
            prop::array::uniform6(-PI..PI),
        )
            .prop_map(|(specs, q)| (Chain::new(&specs).unwrap(), q))
    }

    /// The Jacobian and the mass matrix's inverse on the chain's joints, the slow way (the n×n
    /// block inverted, zero elsewhere).
    fn jacobian_and_inverse_mass<const N: usize>(
        kin: &Kinematics<N>,
        hand_link: usize,
        hand: &Vector3<f64>,
    ) -> (SMatrix<f64, 3, N>, SMatrix<f64, N, N>) {
        let x = kin.point_in_world(hand_link, hand).unwrap();
        let j = kin.point_jacobian(hand_link, &x).unwrap();
        let mut m = kin.mass_matrix().unwrap();
        for i in kin.len()..N {
            m[(i, i)] = 1.0;
        }
        let mut m_inv = m.try_inverse().unwrap();
        for i in kin.len()..N {
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
        kin: &Kinematics<N>,
        hand_link: usize,
        hand: &Vector3<f64>,
        tau: &SVector<f64, N>,
    ) -> SVector<f64, N> {
        let x = kin.point_in_world(hand_link, hand).unwrap();
        let j = kin.point_jacobian(hand_link, &x).unwrap();
        null_space_torque(projector, &j, &kin.composite().unwrap(), tau).unwrap()
    }

    proptest! {
        /// Dynamically consistent: the null-space torque gives the hand no acceleration,
        /// J M⁻¹ τ_null = 0 (up to the documented leak ε/λ̂ where A = JM⁻¹Jᵀ is well
        /// separated), while the posture torque alone would.
        #[test]
        fn dynamically_consistent_null_torque_does_not_accelerate_the_hand(
            (chain, q) in chain_strategy(),
            link_pick in 0usize..CAP,
            hand in prop::array::uniform3(-0.5..0.5f64),
            tau in prop::array::uniform6(-20.0..20.0f64),
        ) {
            let link = link_pick % chain.len();
            let hand = Vector3::from(hand);
            let kin = chain.forward_kinematics(&q).unwrap();
            let (j, m_inv) = jacobian_and_inverse_mass(&kin, link, &hand);
            let a = j * m_inv * j.transpose();
            prop_assume!(a.trace() > 1e-12 && well_separated(&a));
            let mut tau = SVector::<f64, CAP>::from(tau);
            for i in chain.len()..CAP { tau[i] = 0.0; }
            let null = null_of(Projector::DynamicallyConsistent, &kin, link, &hand, &tau);
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
            (chain, q) in chain_strategy(),
            link_pick in 0usize..CAP,
            hand in prop::array::uniform3(-0.5..0.5f64),
            tau in prop::array::uniform6(-20.0..20.0f64),
            force in prop::array::uniform3(-50.0..50.0f64),
        ) {
            let link = link_pick % chain.len();
            let hand = Vector3::from(hand);
            let kin = chain.forward_kinematics(&q).unwrap();
            let (j, _) = jacobian_and_inverse_mass(&kin, link, &hand);
            let a = j * j.transpose();
            prop_assume!(a.trace() > 1e-12 && well_separated(&a));
            let mut tau = SVector::<f64, CAP>::from(tau);
            for i in chain.len()..CAP { tau[i] = 0.0; }
            let null = null_of(Projector::PseudoInverse, &kin, link, &hand, &tau);
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
            (chain, q) in chain_strategy(),
            tau in prop::array::uniform6(-20.0..20.0f64),
        ) {
            let link = chain.len() - 1;
            let hand = Vector3::new(0.2, 0.1, 0.0);
            let kin = chain.forward_kinematics(&q).unwrap();
            let (j, m_inv) = jacobian_and_inverse_mass(&kin, link, &hand);
            let identity = SMatrix::<f64, CAP, CAP>::identity();
            for (projector, a, metric) in [
                (Projector::PseudoInverse, j * j.transpose(), identity),
                (Projector::DynamicallyConsistent, j * m_inv * j.transpose(), m_inv),
            ] {
                if !(a.trace() > 1e-12 && well_separated(&a)) { continue; }
                let mut tau = SVector::<f64, CAP>::from(tau);
                for i in chain.len()..CAP { tau[i] = 0.0; }
                let once = null_of(projector, &kin, link, &hand, &tau);
                let twice = null_of(projector, &kin, link, &hand, &once);
                let norm = |x: &SVector<f64, CAP>| libm::sqrt((x.transpose() * metric * x)[(0, 0)]);
                prop_assert!(norm(&(twice - once)) <= LEAK * norm(&tau));
            }
        }

        /// CCD reaches every target that is reachable (the hand's position at another random
        /// configuration), on random 3-D chains, within the tolerance or reports the residual
        /// it stopped at.
        #[test]
        fn ccd_reaches_reachable_targets_or_says_how_far(
            (chain, q) in chain_strategy(),
            goal in prop::array::uniform6(-PI..PI),
        ) {
            let link = chain.len() - 1;
            let hand = Vector3::new(0.2, 0.0, 0.0);
            let target = chain.forward_kinematics(&goal).unwrap().point_in_world(link, &hand).unwrap();
            let ik = ccd_ik(&chain, &q, link, &hand, &target, 500, 1e-6).unwrap();
            let reached = chain.forward_kinematics(&ik.q_rad).unwrap().point_in_world(link, &hand).unwrap();
            prop_assert_eq!(ik.residual_m, libm::sqrt((target - reached).norm_squared()));
            prop_assert_eq!(ik.converged(), ik.residual_m <= 1e-6);
            prop_assert!(ik.sweeps <= 500);
            prop_assert_eq!(&ik.q_rad[chain.len()..], &q[chain.len()..]);
        }
    }

    /// The hand velocity of a tick is J q̇, the derivative of the hand position along q̇
    /// (central differences of forward kinematics; the Jacobian itself is checked column by
    /// column in `articulated`).
    #[test]
    fn hand_velocity_is_the_derivative_of_the_hand_position() {
        let chain = planar();
        let reach = Reach::new(config(Projector::PseudoInverse, 2, planar_hand())).unwrap();
        let q = [0.3, -0.7, 1.1];
        let qd = [0.4, -1.3, 0.9];
        let z = Vector3::zeros();
        let command = reach.tick(&chain, &q, &qd, &z, &z, &q, &z).unwrap();
        let h = 1e-6;
        let at = |s: f64| {
            let q = core::array::from_fn(|i| q[i] + s * qd[i]);
            chain
                .forward_kinematics(&q)
                .unwrap()
                .point_in_world(2, &planar_hand())
                .unwrap()
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
        let chain = planar();
        let q = [0.4, 0.9, -0.6];
        let kin = chain.forward_kinematics(&q).unwrap();
        let (j, m_inv) = jacobian_and_inverse_mass(&kin, 2, &planar_hand());
        assert!(j.row(2).iter().all(|&v| v == 0.0));
        let j2 = j.fixed_rows::<2>(0).into_owned();
        let tau = SVector::<f64, 3>::new(3.0, -2.0, 1.5);
        let pinv = j2.transpose() * (j2 * j2.transpose()).try_inverse().unwrap() * j2;
        let dc = j2.transpose() * (j2 * m_inv * j2.transpose()).try_inverse().unwrap() * j2 * m_inv;
        for (projector, exact) in [
            (Projector::PseudoInverse, tau - pinv * tau),
            (Projector::DynamicallyConsistent, tau - dc * tau),
        ] {
            let null = null_of(projector, &kin, 2, &planar_hand(), &tau);
            assert!((null - exact).norm() < 1e-7 * tau.norm(), "{projector:?}");
            // One null direction in the plane: τ_null is not zero for a redundant arm.
            assert!(null.norm() > 0.1);
            let reach = Reach::new(config(projector, 2, planar_hand())).unwrap();
            let g = Vector3::new(0.0, -9.81, 0.0);
            let target = Vector3::new(0.5, 0.4, 0.0);
            let c = reach
                .tick(
                    &chain,
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
        let chain = planar();
        let g = Vector3::new(0.0, -9.81, 0.0);
        let target = Vector3::new(0.3, 0.2, 0.0);
        for projector in BOTH {
            let reach = Reach::new(config(projector, 2, planar_hand())).unwrap();
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
                        &chain,
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
            // The hand on the first joint's axis, on the first link: J = 0, τ_null = τ_p.
            let reach = Reach::new(config(projector, 0, Vector3::new(0.0, 0.0, 0.3))).unwrap();
            let c = reach
                .tick(
                    &chain,
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
        let ok = config(Projector::PseudoInverse, 2, planar_hand());
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
        let reach = Reach::new(ReachConfig { hand_link: 3, ..ok }).unwrap();
        assert_eq!(
            reach
                .tick(&planar(), &[0.0; 3], &[0.0; 3], &z, &z, &[0.0; 3], &z)
                .unwrap_err(),
            ReachError::Model(ModelError::NoSuchLink { link: 3, len: 3 })
        );
        for tolerance in [-1e-3, f64::NAN, f64::INFINITY] {
            assert_eq!(
                ccd_ik(&planar(), &[0.0; 3], 2, &planar_hand(), &z, 10, tolerance).unwrap_err(),
                ReachError::Config(ReachField::IkTolerance)
            );
        }
    }

    #[test]
    fn ticks_name_the_bad_input() {
        let chain = Chain::<4>::new(&[
            rod([0.0; 3], [0.0, 0.0, 1.0], 1.0, 0.3),
            rod([0.3, 0.0, 0.0], [0.0, 1.0, 0.0], 1.0, 0.3),
            rod([0.3, 0.0, 0.0], [0.0, 1.0, 0.0], 1.0, 0.3),
        ])
        .unwrap();
        let reach = Reach::new(config(Projector::DynamicallyConsistent, 2, planar_hand())).unwrap();
        let (z, nan) = (Vector3::zeros(), Vector3::new(0.0, f64::NAN, 0.0));
        let ok = [0.1, 0.2, 0.3, 0.0];
        let tick =
            |q: [f64; 4],
             qd: [f64; 4],
             t: &Vector3<f64>,
             tv: &Vector3<f64>,
             p: [f64; 4],
             g: &Vector3<f64>| { reach.tick(&chain, &q, &qd, t, tv, &p, g) };
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
        // Past the chain nothing is read.
        assert!(tick(nan_at(3), nan_at(3), &z, &z, nan_at(3), &z).is_ok());
        assert_eq!(
            ccd_ik(&chain, &ok, 2, &planar_hand(), &nan, 10, 1e-3).unwrap_err(),
            ReachError::NonFinite(ReachInput::HandTarget)
        );
        assert_eq!(
            ccd_ik(&chain, &ok, 2, &nan, &z, 10, 1e-3).unwrap_err(),
            ReachError::Model(ModelError::NonFinite(Input::Point))
        );
    }

    /// Planar 3-link: CCD converges to reachable targets within the tolerance, and for a target
    /// beyond the arm's reach stalls at the stretched arm, reporting the true shortfall.
    #[test]
    fn ccd_planar_reachable_and_unreachable() {
        let chain = planar();
        let reach: f64 = PLANAR.iter().sum();
        let start = [0.2, 0.5, 0.5];
        for target in [
            Vector3::new(0.6, 0.3, 0.0),
            Vector3::new(-0.3, 0.5, 0.0),
            Vector3::new(0.1, -0.2, 0.0),
            Vector3::new(0.0, 0.95 * reach, 0.0),
        ] {
            let ik = ccd_ik(&chain, &start, 2, &planar_hand(), &target, 200, 1e-5).unwrap();
            assert!(ik.converged(), "{target}: {ik:?}");
            assert!(ik.residual_m <= 1e-5 && ik.sweeps > 0);
        }
        let far = Vector3::new(1.5, 1.0, 0.0);
        let ik = ccd_ik(&chain, &start, 2, &planar_hand(), &far, 10_000, 1e-5).unwrap();
        assert_eq!(ik.outcome, CcdOutcome::Stalled);
        let shortfall = far.norm() - reach;
        assert!(
            (ik.residual_m - shortfall).abs() < 1e-6,
            "{ik:?} vs {shortfall}"
        );
        // Out of the plane: only the in-plane part can be reached.
        let above = Vector3::new(0.5, 0.3, 0.2);
        let ik = ccd_ik(&chain, &start, 2, &planar_hand(), &above, 200, 1e-5).unwrap();
        assert!(
            !ik.converged() && (ik.residual_m - 0.2).abs() < 1e-6,
            "{ik:?}"
        );
        // The sweep limit is honoured and said.
        let ik = ccd_ik(&chain, &start, 2, &planar_hand(), &far, 2, 1e-5).unwrap();
        assert_eq!((ik.outcome, ik.sweeps), (CcdOutcome::SweepLimit, 2));
        let ik = ccd_ik(&chain, &start, 2, &planar_hand(), &far, 0, 1e-5).unwrap();
        assert_eq!(
            (ik.outcome, ik.sweeps, ik.q_rad),
            (CcdOutcome::SweepLimit, 0, start)
        );
    }

    /// The plant for the simulation tests: the chain's own dynamics,
    /// M(q) q̈ + c(q, q̇) + g(q) = τ, with the velocity-product terms c formed from central
    /// differences of the CRBA mass matrix, c = Ṁq̇ − ½∇_q(q̇ᵀMq̇), and semi-implicit Euler.
    fn step(chain: &Chain<3>, q: &mut [f64; 3], qd: &mut [f64; 3], tau: &[f64; 3], dt: f64) {
        let gravity = Vector3::new(0.0, -9.81, 0.0);
        let mass = |q: [f64; 3]| chain.forward_kinematics(&q).unwrap().mass_matrix().unwrap();
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
        let kin = chain.forward_kinematics(q).unwrap();
        let rhs = SVector::<f64, 3>::from(*tau) - m_dot_v + grad * 0.5
            - kin.gravity_torques(&gravity).unwrap();
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
        let chain = planar();
        let reach = Reach::new(config(projector, 2, planar_hand())).unwrap();
        let gravity = Vector3::new(0.0, -9.81, 0.0);
        let q0 = [0.5, 0.9, 0.8];
        let target = chain
            .forward_kinematics(&q0)
            .unwrap()
            .point_in_world(2, &planar_hand())
            .unwrap();
        let (mut q, mut qd) = (q0, [0.0; 3]);
        let dt = 1e-3;
        let (mut worst_error, mut posture_moved) = (0.0f64, 0.0f64);
        for k in 0..4000 {
            let t = k as f64 * dt;
            let swing = 0.6 * libm::sin(PI * t);
            let posture = [q0[0] + swing, q0[1] - swing, q0[2] + swing];
            let c = reach
                .tick(
                    &chain,
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
            step(&chain, &mut q, &mut qd, &c.torques_nm, dt);
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

    /// CCD's joint targets tracked by the existing chain servo ([`ChainArrival`]: PD with
    /// gravity feed-forward) in the same simulated plant bring the hand to the target.
    #[test]
    fn ccd_targets_tracked_by_the_chain_servo_reach_the_target() {
        let chain = planar();
        let target = Vector3::new(0.3, 0.55, 0.0);
        let (mut q, mut qd) = ([0.2, 0.3, 0.2], [0.0; 3]);
        let ik = ccd_ik(&chain, &q, 2, &planar_hand(), &target, 100, 1e-5).unwrap();
        assert!(ik.converged());
        let servo = ChainArrival::new(ArrivalConfig::default()).unwrap();
        let gravity = Vector3::new(0.0, -9.81, 0.0);
        let dt = 1e-3;
        for k in 0..3000 {
            let time_to_go_s = 1.0 - k as f64 * dt;
            let targets = ik.q_rad.map(|pose_rad| JointTarget {
                pose_rad,
                time_to_go_s,
            });
            let tau = servo
                .tick(&chain, &q, &qd, &targets, &gravity)
                .unwrap()
                .torques();
            step(&chain, &mut q, &mut qd, &tau, dt);
        }
        let hand = chain
            .forward_kinematics(&q)
            .unwrap()
            .point_in_world(2, &planar_hand())
            .unwrap();
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
            (chain, _) in chain_strategy(),
            raw in prop::collection::vec(any::<(u8, u64)>(), 3 * CAP + 9 + 3),
            projector in prop::sample::select(BOTH.to_vec()),
            link_pick in 0usize..CAP,
            sweeps in 0usize..30,
        ) {
            let v: Vec<f64> = raw.iter().copied().map(pick).collect();
            let n = chain.len();
            let q: [f64; CAP] = core::array::from_fn(|i| v[i]);
            let qd: [f64; CAP] = core::array::from_fn(|i| v[CAP + i]);
            let posture: [f64; CAP] = core::array::from_fn(|i| v[2 * CAP + i]);
            let target = Vector3::new(v[18], v[19], v[20]);
            let target_velocity = Vector3::new(v[21], v[22], v[23]);
            let gravity = Vector3::new(v[24], v[25], v[26]);
            let hand = [v[27], v[28], v[29]];
            let link = link_pick % n;
            let inputs_finite = [&q[..n], &qd[..n], &posture[..n], target.as_slice(),
                target_velocity.as_slice(), gravity.as_slice(), &hand].iter()
                .all(|s| all_finite(s));
            let moderate = inputs_finite && [&q[..n], &qd[..n], &posture[..n], target.as_slice(),
                target_velocity.as_slice(), gravity.as_slice(), &hand].iter()
                .all(|s| s.iter().all(|x| x.abs() <= 3.0));
            let cfg = ReachConfig { hand_point_m: hand, ..config(projector, link, Vector3::zeros()) };
            match Reach::new(cfg) {
                Err(e) => prop_assert_eq!(e, ReachError::Config(ReachField::HandPoint)),
                Ok(reach) => match reach.tick(&chain, &q, &qd, &target, &target_velocity, &posture, &gravity) {
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
            match ccd_ik(&chain, &q, link, &hand, &target, sweeps, 1e-4) {
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
}
