//! The ground-contact stabiliser of Carensac, Pronost and Bouakaz ("Physics-based control of
//! virtual characters in low frequency simulations", section 3.1): every control tick, a small
//! CMA-ES searches supplementary torques on the stance leg (the ankle's two axes and the knee)
//! that keep the stance foot's ground reaction spread over its four sole corners, each sample
//! judged by a one-step prediction on a (reduced) model of the character.
//!
//! # The prediction
//! The paper steps a copy of a reduced character in its physics engine. Here the prediction is
//! the character's rigid-contact dynamics with every planted foot held still: with `M`, `h` of
//! a floating-base [`Tree`] (the whole character, M0, or one with body parts removed and their
//! weight kept as [`Load`]s, the paper's reduced models), the controller's generalized forces
//! `τ` and the loads' `τ_L = Σ J_pᵀ F`,
//!
//! ```text
//! M a + h = τ + τ_L + J_cᵀ λ,      J_c a = −J̇_c q̇
//! λ = A⁻¹ (−J̇_c q̇ − J_c M⁻¹ (τ + τ_L − h)),   A = J_c M⁻¹ J_cᵀ
//! ```
//!
//! gives each planted body's ground wrench `λ` (force at its frame's origin and moment, world;
//! a joint the caller says is held at its limit adds a row `a_k = 0` to `J_c`, its `λ` the
//! limit's torque),
//! so the stance foot's (its toes' added when they are planted) centre of pressure on its sole.
//! A supplement `s` on the sampled axes adds `Σ s_i c_i` to `τ`, so `λ(s) = λ(0) + B s` is
//! linear: the factorisations are made once per tick and a sample costs a 24 × 3 product.
//! What this prediction cannot see is what the paper's limitation (5.3) names: a foot already
//! on one corner. It holds the foot flat by construction; a centre of pressure off the sole
//! reads as a side carrying nothing (`r = 0`), the worst score.
//!
//! # Baselines
//! With [`StabiliserInput::measured`] the spread without a supplement is the plant's own, from
//! the stance foot's corner forces of the last step, and the model contributes only `G s`, the
//! supplement's effect on the normal force and the centre of pressure. The rigid prediction
//! of the baseline misses what a soft, iterative contact solver does within one step (on the
//! humanoid in Rapier at 1 kHz its normal force errs by more than the force itself per tick,
//! while agreeing on average); the measurement is one step old but is the plant's.
//!
//! # The evaluation (eqs. 1–3)
//! From the stance foot's normal force `F_all` and centre of pressure, `r_front` and `r_left`
//! are the fractions of `F_all` its front and left corners carry (a statically determinate
//! split: the corners' moments balance the centre of pressure), `r_sag = min(r_front,
//! 1 − r_front)` and `r_cor = min(r_left, 1 − r_left)`, and
//!
//! ```text
//! f_eval     = 10 f_quality + f_distance
//! f_quality  = 10¹⁵ / 10^(F_all/10 + 1)                              when F_all < 100 N
//!            = max(0, limit_cor − r_cor)² + max(0, limit_sag − r_sag)²   otherwise
//! f_distance = (r_cor − max(limit_cor, r_cor,init))² + (r_sag − max(limit_sag, r_sag,init))²
//! ```
//!
//! The paper prints `f_quality`'s last case as `(r − limit)²`, which would pull a well-spread
//! foot towards the limit and contradicts its text ("higher values lead to more stable
//! contacts"); it is read here as a penalty below the limit only. Its middle case (`1e5` when
//! `F_all < 75`) can never be reached after the first and is left out.
//!
//! # The search
//! (μ/μ_w, λ)-CMA-ES in three dimensions with the standard weights, cumulative step-size
//! adaptation and rank-one and rank-μ covariance updates, started every tick from no
//! supplement (each tick alone, as the paper), for a fixed number of generations: its cost is
//! bounded. Samples beyond the bounds are evaluated at the bound. The no-supplement torques
//! are evaluated first; the best evaluated point wins, so the stabiliser never returns a
//! supplement predicted worse than none.
//!
//! Must never allocate, block or panic: fixed-size storage (`N` velocities, at most
//! [`MAX_PLANTED`] planted bodies, [`MAX_LOADS`] loads, [`MAX_POPULATION`] samples per
//! generation), every index checked, every failure a [`StabiliserStatus`].
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

use nalgebra::{Isometry3, Matrix3, SMatrix, SVector, Translation3, UnitQuaternion, Vector3};

use crate::tree::{Placement, Tree, TreeKinematics};

pub mod stance;

/// Sampled axes: the stance ankle's two and the knee.
pub const SAMPLE_DIMS: usize = 3;
/// Most bodies held still in one prediction (a stance foot and its toes, the swing foot and
/// its toes).
pub const MAX_PLANTED: usize = 4;
/// Most loads (removed body parts' weights).
pub const MAX_LOADS: usize = 8;
/// Most samples per generation.
pub const MAX_POPULATION: usize = 16;
/// Most joints held at a limit.
pub const MAX_LOCKED: usize = 8;
/// Constraint rows.
const ROWS: usize = 6 * MAX_PLANTED + MAX_LOCKED;
/// Step of the central difference that gives J̇ q̇, s.
const JDOT_STEP_S: f64 = 1e-5;
/// Relative regularisation of `A` (a foot and its toes held together make it singular; the
/// total wrench on the two does not depend on how it is split).
const REGULARISATION: f64 = 1e-12;

/// The stance foot's sole: the rectangle its four bottom corners span, in its body's frame.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sole {
    /// The tree body of the foot.
    pub body: usize,
    /// The centre of the sole's bottom face, body frame, m.
    pub centre_m: [f64; 3],
    /// The foot's forward direction, body frame (unit).
    pub forward: [f64; 3],
    /// Its left direction, body frame (unit, orthogonal to `forward`).
    pub left: [f64; 3],
    /// Half the distance between the back and the front corners, m.
    pub half_length_m: f64,
    /// Half the distance between the right and the left corners, m.
    pub half_width_m: f64,
}

/// A removed body part's weight, kept as a force on the body it hung from.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Load {
    /// The tree body the force acts on.
    pub body: usize,
    /// Where it acts (the removed part's centre of mass), world, m.
    pub point_m: [f64; 3],
    /// The force (its weight), world, N.
    pub force_n: [f64; 3],
}

/// One sampled axis: a torque about tree joint `axis_joint`'s axis, applied by the physical
/// joint whose tree joints are `group_first .. group_first + group_count` (+τ on its child,
/// −τ on its parent, as the plant applies a joint's torque vector).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SampleAxis {
    /// The tree joint whose world axis the torque is about.
    pub axis_joint: usize,
    /// The first tree joint of the physical joint.
    pub group_first: usize,
    /// Its tree joints' count.
    pub group_count: usize,
    /// The largest supplement about this axis, N·m.
    pub max_nm: f64,
}

/// A physical joint's torque vector: +τ on its child, −τ on its parent, world, N·m. Its
/// generalized force on each of its tree joints is that joint's world axis · τ.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct JointTorque {
    /// The joint's first tree joint.
    pub group_first: usize,
    /// Its tree joints' count.
    pub group_count: usize,
    /// The torque, world, N·m.
    pub torque_nm: [f64; 3],
}

/// The stabiliser's fixed settings.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StabiliserSettings {
    /// `limit_cor`: the smallest coronal share the search asks for (the paper: 0.2).
    pub limit_cor: f64,
    /// `limit_sag`: the smallest sagittal share (the paper: 0.2).
    pub limit_sag: f64,
    /// Samples per generation, 2 ..= [`MAX_POPULATION`].
    pub population: usize,
    /// Generations per tick, at least 1.
    pub generations: usize,
    /// The first generation's step size, N·m.
    pub sigma0_nm: f64,
    /// The random generator's seed.
    pub seed: u64,
}

/// A [`StabiliserSettings`] field out of its range ([`StabiliserSettings::check`]).
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub enum SettingsError {
    /// `population` outside 2 ..= [`MAX_POPULATION`].
    Population(usize),
    /// `generations` 0.
    Generations(usize),
    /// `sigma0_nm` not finite and > 0.
    Step(f64),
    /// `limit_cor` not finite.
    LimitCor(f64),
    /// `limit_sag` not finite.
    LimitSag(f64),
}

impl fmt::Display for SettingsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Population(n) => {
                write!(f, "population {n}: must be within 2 ..= {MAX_POPULATION}")
            }
            Self::Generations(n) => write!(f, "generations {n}: must be at least 1"),
            Self::Step(x) => write!(f, "sigma0_nm {x}: must be finite and > 0 N·m"),
            Self::LimitCor(x) => write!(f, "limit_cor {x}: must be finite"),
            Self::LimitSag(x) => write!(f, "limit_sag {x}: must be finite"),
        }
    }
}

impl StabiliserSettings {
    /// The first field out of its range, if any: the population 2 ..= [`MAX_POPULATION`], at
    /// least one generation, a finite step > 0, finite limits.
    pub fn check(&self) -> Result<(), SettingsError> {
        if !(2..=MAX_POPULATION).contains(&self.population) {
            return Err(SettingsError::Population(self.population));
        }
        if self.generations == 0 {
            return Err(SettingsError::Generations(self.generations));
        }
        if !(self.sigma0_nm > 0.0 && self.sigma0_nm.is_finite()) {
            return Err(SettingsError::Step(self.sigma0_nm));
        }
        if !self.limit_cor.is_finite() {
            return Err(SettingsError::LimitCor(self.limit_cor));
        }
        if !self.limit_sag.is_finite() {
            return Err(SettingsError::LimitSag(self.limit_sag));
        }
        Ok(())
    }

    /// The paper's limits (0.2, 0.2); 8 samples × 8 generations from a 10 N·m step.
    pub const DEFAULT: Self = Self {
        limit_cor: 0.2,
        limit_sag: 0.2,
        population: 8,
        generations: 8,
        sigma0_nm: 10.0,
        seed: 0x5eed_cafe_f00d_0001,
    };
}

/// One tick's state and torques.
#[derive(Debug, Clone, Copy)]
pub struct StabiliserInput<'a, const N: usize> {
    /// The base's world pose.
    pub base_pose: &'a Isometry3<f64>,
    /// Joint coordinates (`q[k]`: tree joint k).
    pub q: &'a [f64; N],
    /// Velocities (the base's 6, in its frame, then the joints').
    pub v: &'a [f64; N],
    /// The controller's generalized forces (the base's rows zero), N·m or N, beside
    /// `joint_torques`.
    pub tau: &'a [f64; N],
    /// The controller's torques as a plant applies them: a world torque vector per physical
    /// joint, +τ on its child and −τ on its parent (added to `tau`).
    pub joint_torques: &'a [JointTorque],
    /// Gravity, world, m/s².
    pub gravity: Vector3<f64>,
    /// Tree bodies held still: the stance foot first, then any other body on the ground.
    pub planted: &'a [usize],
    /// How many of `planted` (from the first) make up the stance foot (the foot, its toes).
    pub stance_bodies: usize,
    /// Tree joints held still for the step (a joint at its limit, which the plant's limit
    /// holds and the tree alone would let through), at most [`MAX_LOCKED`].
    pub locked: &'a [usize],
    /// The stance foot's sole.
    pub sole: Sole,
    /// The sampled axes.
    pub axes: &'a [SampleAxis; SAMPLE_DIMS],
    /// Removed body parts' weights.
    pub loads: &'a [Load],
    /// The stance foot's corner normal forces the plant measured over the last step, N
    /// (`[back right, back left, front right, front left]`): when given, the spread without a
    /// supplement is this measurement and the model gives only the supplement's effect
    /// (module docs, "Baselines"); when `None`, both come from the model.
    pub measured: Option<[f64; 4]>,
}

/// How the ground's force spreads over a sole.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Distribution {
    /// `F_all`: the normal force, N.
    pub normal_n: f64,
    /// `r_sag`: the share of the less loaded of the back and front corner pairs (0 ..= 0.5).
    pub r_sag: f64,
    /// `r_cor`: the share of the less loaded of the right and left corner pairs (0 ..= 0.5).
    pub r_cor: f64,
}

impl Distribution {
    /// The spread of four corner normal forces `[back right, back left, front right, front
    /// left]`, N (negative values count as zero).
    pub fn of_corners(normal_n: [f64; 4]) -> Self {
        let [br, bl, fr, fl] = normal_n.map(|f| if f > 0.0 { f } else { 0.0 });
        let all = br + bl + fr + fl;
        if all.is_nan() || all <= 0.0 || !all.is_finite() {
            return Self::default();
        }
        let front = (fr + fl) / all;
        let left = (bl + fl) / all;
        Self {
            normal_n: all,
            r_sag: front.min(1.0 - front),
            r_cor: left.min(1.0 - left),
        }
    }
}

/// Why a tick gave no supplement, or that it did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum StabiliserStatus {
    /// A supplement predicted better than none.
    Improved,
    /// No sample was predicted better than none: no supplement.
    #[default]
    Kept,
    /// The input was refused (a body or joint past the tree, no stance body, a non-finite
    /// value, too many planted bodies or loads): no supplement.
    BadInput,
    /// The model could not be evaluated (a singular mass matrix, a non-finite result): no
    /// supplement.
    Model,
}

/// One tick's result.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct StabiliserOutput {
    /// The supplement about each sampled axis, N·m.
    pub supplement_nm: [f64; SAMPLE_DIMS],
    /// Each sampled axis's world unit axis (the supplement's torque vector is
    /// `supplement_nm[i] · axis[i]`, +τ on the joint's child).
    pub axes: [[f64; 3]; SAMPLE_DIMS],
    /// The spread without a supplement the search started from (measured when the input
    /// gives a measurement, the model's otherwise).
    pub initial: Distribution,
    /// The model's own spread without a supplement.
    pub rigid_initial: Distribution,
    /// The predicted spread with the supplement.
    pub predicted: Distribution,
    /// `f_eval` without and with the supplement.
    pub eval: [f64; 2],
    /// Samples evaluated.
    pub evaluations: u32,
    /// What happened.
    pub status: StabiliserStatus,
}

/// The stabiliser: the tree it predicts with, scratch, the random generator.
#[derive(Debug, Clone)]
pub struct ContactStabiliser<const N: usize> {
    tree: Tree<N>,
    settings: StabiliserSettings,
    kin: TreeKinematics<N>,
    kin_step: TreeKinematics<N>,
    rng: u64,
}

/// A 24 × 3 map from the supplement to the planted bodies' wrenches, and the wrenches without.
struct Linear {
    lambda0: SVector<f64, ROWS>,
    b: SMatrix<f64, ROWS, SAMPLE_DIMS>,
}

impl<const N: usize> ContactStabiliser<N> {
    /// A stabiliser predicting with `tree` (a floating base); settings out of range are
    /// refused, naming the field ([`StabiliserSettings::check`]).
    pub fn new(tree: Tree<N>, settings: StabiliserSettings) -> Result<Self, SettingsError> {
        settings.check()?;
        Ok(Self {
            tree,
            settings,
            kin: TreeKinematics::default(),
            kin_step: TreeKinematics::default(),
            rng: settings.seed | 1,
        })
    }

    /// The settings in use.
    pub const fn settings(&self) -> &StabiliserSettings {
        &self.settings
    }

    /// The tree it predicts with.
    pub const fn tree(&self) -> &Tree<N> {
        &self.tree
    }

    /// One tick: the supplement to add to the sampled axes' torques.
    pub fn tick(&mut self, input: &StabiliserInput<'_, N>) -> StabiliserOutput {
        let mut out = StabiliserOutput::default();
        let linear = match self.predict(input, &mut out) {
            Ok(l) => l,
            Err(status) => {
                out.status = status;
                return out;
            }
        };
        let Some((centre, forward, left)) = self.sole_frame(&input.sole) else {
            out.status = StabiliserStatus::Model;
            return out;
        };
        let stance = input.stance_bodies;
        let mut origins = [Vector3::zeros(); MAX_PLANTED];
        for (o, b) in origins.iter_mut().zip(input.planted.iter().take(stance)) {
            match self.kin.body_pose(*b) {
                Some(p) => *o = p.translation.vector,
                None => {
                    out.status = StabiliserStatus::BadInput;
                    return out;
                }
            }
        }
        // The stance wrench in the sole's terms g = (F_n, M·forward, M·left) about its centre:
        // linear in λ, so g(s) = g0 + G s.
        let sole_terms = |lambda: &SVector<f64, ROWS>| {
            let (mut force, mut moment) = (Vector3::zeros(), Vector3::zeros());
            for (k, o) in origins.iter().enumerate().take(stance) {
                let f = lambda.fixed_rows::<3>(6 * k).into_owned();
                let m = lambda.fixed_rows::<3>(6 * k + 3).into_owned();
                force += f;
                moment += m + (o - centre).cross(&f);
            }
            Vector3::new(
                force.dot(&forward.cross(&left)),
                moment.dot(&forward),
                moment.dot(&left),
            )
        };
        let rigid0 = sole_terms(&linear.lambda0);
        let mut g_of_s = Matrix3::<f64>::zeros();
        for (i, mut column) in g_of_s.column_iter_mut().enumerate() {
            let mut unit = SVector::<f64, SAMPLE_DIMS>::zeros();
            if let Some(u) = unit.get_mut(i) {
                *u = 1.0;
            }
            column.copy_from(&sole_terms(&(linear.b * unit)));
        }
        out.rigid_initial = distribution(&rigid0, &input.sole);
        let g0 = match input.measured {
            Some(corners) => {
                let [br, bl, fr, fl] = corners.map(|f| f.max(0.0));
                let sole = &input.sole;
                Vector3::new(
                    br + bl + fr + fl,
                    sole.half_width_m * ((bl + fl) - (br + fr)),
                    -sole.half_length_m * ((fr + fl) - (br + bl)),
                )
            }
            None => rigid0,
        };
        if !g0.iter().all(|x| x.is_finite()) {
            out.status = StabiliserStatus::BadInput;
            return out;
        }
        let spread =
            |x: &[f64; SAMPLE_DIMS]| distribution(&(g0 + g_of_s * SVector::from(*x)), &input.sole);
        let s = self.settings;
        let initial = spread(&[0.0; SAMPLE_DIMS]);
        let eval = |d: &Distribution| f_eval(d, &initial, s.limit_cor, s.limit_sag);
        let e0 = eval(&initial);
        out.initial = initial;
        out.predicted = initial;
        out.eval = [e0, e0];
        out.evaluations = 1;
        let bounds = input.axes.map(|a| a.max_nm.abs());
        let mut best = ([0.0; SAMPLE_DIMS], e0, initial);
        self.search(&bounds, &mut out.evaluations, |x| {
            let d = spread(x);
            let e = eval(&d);
            if e < best.1 {
                best = (*x, e, d);
            }
            e
        });
        if best.1 < e0 {
            out.supplement_nm = best.0;
            out.predicted = best.2;
            out.eval[1] = best.1;
            out.status = StabiliserStatus::Improved;
        } else {
            out.status = StabiliserStatus::Kept;
        }
        for (a, ax) in out.axes.iter_mut().zip(input.axes) {
            if let Some(w) = self.kin.joint_axis(ax.axis_joint) {
                *a = w.into();
            }
        }
        out
    }

    /// The sole's centre, forward and left directions, world.
    fn sole_frame(&self, sole: &Sole) -> Option<(Vector3<f64>, Vector3<f64>, Vector3<f64>)> {
        let pose = self.kin.body_pose(sole.body)?;
        let v = |a: [f64; 3]| Vector3::new(a[0], a[1], a[2]);
        let centre = pose * nalgebra::Point3::from(v(sole.centre_m));
        Some((
            centre.coords,
            pose.rotation * v(sole.forward),
            pose.rotation * v(sole.left),
        ))
    }

    /// Kinematics, the planted bodies' wrenches without a supplement and their map from it.
    fn predict(
        &mut self,
        input: &StabiliserInput<'_, N>,
        out: &mut StabiliserOutput,
    ) -> Result<Linear, StabiliserStatus> {
        let bad = StabiliserStatus::BadInput;
        let model = |_| StabiliserStatus::Model;
        let planted = input.planted;
        if planted.is_empty()
            || planted.len() > MAX_PLANTED
            || input.stance_bodies == 0
            || input.stance_bodies > planted.len()
            || input.loads.len() > MAX_LOADS
            || input.locked.len() > MAX_LOCKED
            || !input
                .tau
                .iter()
                .chain(input.gravity.iter())
                .all(|x| x.is_finite())
        {
            return Err(bad);
        }
        let nv = self.tree.nv();
        if nv < 6 {
            return Err(bad);
        }
        self.tree
            .kinematics_into(&mut self.kin, input.base_pose, input.q)
            .map_err(|_| bad)?;
        let mut m = SMatrix::<f64, N, N>::zeros();
        self.kin.mass_matrix_into(&mut m).map_err(model)?;
        // Unused capacity: identity rows, so that the factorisation holds.
        for k in nv..N {
            if let Some(x) = m.get_mut((k, k)) {
                *x = 1.0;
            }
        }
        let h = self
            .kin
            .inverse_dynamics(input.v, &[0.0; N], &input.gravity)
            .map_err(model)?;
        let mut rhs = SVector::<f64, N>::from(*input.tau) - h;
        for t in input.joint_torques {
            let torque = Vector3::from(t.torque_nm);
            if !torque.iter().all(|x| x.is_finite()) {
                return Err(bad);
            }
            for k in t.group_first..t.group_first + t.group_count {
                let (Some(w), Some(vi)) = (self.kin.joint_axis(k), self.tree.velocity_index(k))
                else {
                    return Err(bad);
                };
                if let Some(r) = rhs.get_mut(vi) {
                    *r += w.dot(&torque);
                }
            }
        }
        let identity = Placement::from_xyz_rpy([0.0; 3], [0.0; 3]);
        for l in input.loads {
            let pose = self.kin.body_pose(l.body).ok_or(bad)?;
            let local =
                pose.inverse_transform_point(&nalgebra::Point3::from(Vector3::from(l.point_m)));
            let jac = self
                .kin
                .frame_jacobian(
                    l.body,
                    &Placement::from_xyz_rpy(local.coords.into(), [0.0; 3]),
                )
                .map_err(|_| bad)?;
            rhs += jac.fixed_rows::<3>(0).transpose() * Vector3::from(l.force_n);
        }
        // J_c and J̇_c q̇ (central difference along the motion, as the balance controller).
        let mut jc = SMatrix::<f64, ROWS, N>::zeros();
        for (k, b) in planted.iter().enumerate() {
            let jac = self.kin.frame_jacobian(*b, &identity).map_err(|_| bad)?;
            jc.fixed_rows_mut::<6>(6 * k).copy_from(&jac);
        }
        let first_locked = 6 * planted.len();
        for (k, joint) in input.locked.iter().enumerate() {
            let vi = self.tree.velocity_index(*joint).ok_or(bad)?;
            let x = jc.get_mut((first_locked + k, vi)).ok_or(bad)?;
            *x = 1.0;
        }
        let v = SVector::<f64, N>::from(*input.v);
        let mut bias = SVector::<f64, ROWS>::zeros();
        let base = input.base_pose;
        for sign in [1.0, -1.0] {
            let step = sign * JDOT_STEP_S;
            let mut q_step = *input.q;
            for (k, qk) in q_step.iter_mut().enumerate().take(nv - 6) {
                *qk += step * v.get(6 + k).copied().unwrap_or(0.0);
            }
            let lin: Vector3<f64> = v.fixed_rows::<3>(0).into_owned();
            let ang: Vector3<f64> = v.fixed_rows::<3>(3).into_owned();
            let pose = Isometry3::from_parts(
                Translation3::from(base.translation.vector + base.rotation * lin * step),
                base.rotation * UnitQuaternion::from_scaled_axis(ang * step),
            );
            self.tree
                .kinematics_into(&mut self.kin_step, &pose, &q_step)
                .map_err(model)?;
            for (k, b) in planted.iter().enumerate() {
                let jac = self.kin_step.frame_jacobian(*b, &identity).map_err(model)?;
                let mut rows = bias.fixed_rows_mut::<6>(6 * k);
                rows += jac * v * (sign / (2.0 * JDOT_STEP_S));
            }
        }
        let chol = m.cholesky().ok_or(StabiliserStatus::Model)?;
        let y = chol.solve(&jc.transpose()); // M⁻¹ J_cᵀ
        let mut a = jc * y;
        let used = first_locked + input.locked.len();
        let scale = (0..used)
            .filter_map(|k| a.get((k, k)).copied())
            .fold(0.0, f64::max);
        if scale.is_nan() || scale <= 0.0 || !scale.is_finite() {
            return Err(StabiliserStatus::Model);
        }
        for k in 0..ROWS {
            let Some(x) = a.get_mut((k, k)) else {
                continue;
            };
            *x += if k < used {
                REGULARISATION * scale
            } else {
                1.0
            };
        }
        let a = a.cholesky().ok_or(StabiliserStatus::Model)?;
        let lambda0 = a.solve(&(-bias - y.transpose() * rhs));
        // The sampled axes' generalized-force columns.
        let mut columns = SMatrix::<f64, N, SAMPLE_DIMS>::zeros();
        for (i, ax) in input.axes.iter().enumerate() {
            let axis = self.kin.joint_axis(ax.axis_joint).ok_or(bad)?;
            for k in ax.group_first..ax.group_first + ax.group_count {
                let (Some(w), Some(vi)) = (self.kin.joint_axis(k), self.tree.velocity_index(k))
                else {
                    return Err(bad);
                };
                if let Some(c) = columns.get_mut((vi, i)) {
                    *c = w.dot(&axis);
                }
            }
        }
        let b = -a.solve(&(y.transpose() * columns));
        if !lambda0.iter().chain(b.iter()).all(|x| x.is_finite()) {
            return Err(StabiliserStatus::Model);
        }
        out.evaluations = 0;
        Ok(Linear { lambda0, b })
    }

    /// CMA-ES over the supplement (module docs), from zero; `f` evaluates a point.
    fn search(
        &mut self,
        bounds: &[f64; SAMPLE_DIMS],
        evaluations: &mut u32,
        mut f: impl FnMut(&[f64; SAMPLE_DIMS]) -> f64,
    ) {
        const D: usize = SAMPLE_DIMS;
        let s = self.settings;
        let lambda = s.population;
        let mu = lambda / 2;
        let mut weights = [0.0; MAX_POPULATION];
        let ln_half = libm::log(lambda as f64 / 2.0 + 0.5);
        let mut sum = 0.0;
        for (i, w) in weights.iter_mut().enumerate().take(mu) {
            *w = ln_half - libm::log(i as f64 + 1.0);
            sum += *w;
        }
        let mut sum_sq = 0.0;
        for w in weights.iter_mut().take(mu) {
            *w /= sum;
            sum_sq += *w * *w;
        }
        let mu_eff = 1.0 / sum_sq;
        let n = D as f64;
        let c_sigma = (mu_eff + 2.0) / (n + mu_eff + 5.0);
        let d_sigma = 1.0 + 2.0 * (libm::sqrt((mu_eff - 1.0) / (n + 1.0)) - 1.0).max(0.0) + c_sigma;
        let c_c = (4.0 + mu_eff / n) / (n + 4.0 + 2.0 * mu_eff / n);
        let c_1 = 2.0 / ((n + 1.3) * (n + 1.3) + mu_eff);
        let c_mu =
            (1.0 - c_1).min(2.0 * (mu_eff - 2.0 + 1.0 / mu_eff) / ((n + 2.0) * (n + 2.0) + mu_eff));
        let chi_n = libm::sqrt(n) * (1.0 - 1.0 / (4.0 * n) + 1.0 / (21.0 * n * n));
        let mut mean = SVector::<f64, D>::zeros();
        let mut sigma = s.sigma0_nm;
        let mut c = Matrix3::<f64>::identity();
        let mut l = Matrix3::<f64>::identity();
        let (mut p_sigma, mut p_c) = (SVector::<f64, D>::zeros(), SVector::<f64, D>::zeros());
        let mut ys = [SVector::<f64, D>::zeros(); MAX_POPULATION];
        let mut fs = [f64::INFINITY; MAX_POPULATION];
        let mut order = [0usize; MAX_POPULATION];
        for g in 0..s.generations {
            for (y, fv) in ys.iter_mut().zip(fs.iter_mut()).take(lambda) {
                let z = SVector::<f64, D>::from([self.normal(), self.normal(), self.normal()]);
                *y = l * z;
                let x = mean + *y * sigma;
                let mut at = [0.0; D];
                for ((a, xi), b) in at.iter_mut().zip(x.iter()).zip(bounds) {
                    *a = xi.clamp(-b, *b);
                }
                *fv = f(&at);
                if !fv.is_finite() {
                    *fv = f64::MAX;
                }
                *evaluations += 1;
            }
            // Indices by rising f (insertion sort: λ ≤ 16).
            for (i, o) in order.iter_mut().enumerate() {
                *o = i;
            }
            for i in 1..lambda {
                let mut j = i;
                while j > 0 {
                    let (Some(&a), Some(&b)) = (order.get(j - 1), order.get(j)) else {
                        break;
                    };
                    if fs.get(b).copied().unwrap_or(f64::MAX)
                        < fs.get(a).copied().unwrap_or(f64::MAX)
                    {
                        order.swap(j - 1, j);
                        j -= 1;
                    } else {
                        break;
                    }
                }
            }
            let mut y_w = SVector::<f64, D>::zeros();
            for (w, &i) in weights.iter().zip(order.iter()).take(mu) {
                if let Some(y) = ys.get(i) {
                    y_w += *y * *w;
                }
            }
            mean += y_w * sigma;
            // C^(-1/2) y_w through the Cholesky factor: ‖L⁻¹ y‖ is distributed as ‖z‖.
            let whitened = l.solve_lower_triangular(&y_w).unwrap_or(y_w);
            p_sigma = p_sigma * (1.0 - c_sigma)
                + whitened * libm::sqrt(c_sigma * (2.0 - c_sigma) * mu_eff);
            let gens = (g + 1) as f64;
            let norm = p_sigma.norm();
            let h_sigma = norm / libm::sqrt(1.0 - libm::pow(1.0 - c_sigma, 2.0 * gens))
                < (1.4 + 2.0 / (n + 1.0)) * chi_n;
            p_c *= 1.0 - c_c;
            if h_sigma {
                p_c += y_w * libm::sqrt(c_c * (2.0 - c_c) * mu_eff);
            }
            let mut rank_mu = Matrix3::<f64>::zeros();
            for (w, &i) in weights.iter().zip(order.iter()).take(mu) {
                if let Some(y) = ys.get(i) {
                    rank_mu += (*y * y.transpose()) * *w;
                }
            }
            let delta = if h_sigma { 0.0 } else { c_c * (2.0 - c_c) };
            c = c * (1.0 - c_1 - c_mu + c_1 * delta)
                + (p_c * p_c.transpose()) * c_1
                + rank_mu * c_mu;
            sigma *= libm::exp((c_sigma / d_sigma) * (norm / chi_n - 1.0));
            if !sigma.is_finite() || sigma <= 0.0 {
                sigma = s.sigma0_nm;
            }
            match c.cholesky() {
                Some(ch) => l = ch.l(),
                None => {
                    c = Matrix3::identity();
                    l = Matrix3::identity();
                }
            }
        }
    }

    /// A standard normal draw (xorshift64* and Box–Muller).
    fn normal(&mut self) -> f64 {
        let u1 = self.uniform();
        let u2 = self.uniform();
        libm::sqrt(-2.0 * libm::log(u1)) * libm::cos(2.0 * core::f64::consts::PI * u2)
    }

    /// A uniform draw in (0, 1].
    fn uniform(&mut self) -> f64 {
        self.rng ^= self.rng >> 12;
        self.rng ^= self.rng << 25;
        self.rng ^= self.rng >> 27;
        let x = self.rng.wrapping_mul(0x2545_f491_4f6c_dd1d);
        ((x >> 11) as f64 + 1.0) / (1u64 << 53) as f64
    }
}

/// The spread over `sole` of a ground wrench given as its normal force and its moment about
/// the sole's centre along the sole's forward and left directions (`g`).
fn distribution(g: &Vector3<f64>, sole: &Sole) -> Distribution {
    let (all, m_forward, m_left) = (g.x, g.y, g.z);
    if all.is_nan() || all <= 0.0 || !all.is_finite() {
        return Distribution {
            normal_n: if all.is_finite() { all } else { 0.0 },
            r_sag: 0.0,
            r_cor: 0.0,
        };
    }
    // The centre of pressure from the centre: x forward, z left (module docs).
    let x = -m_left / all;
    let z = m_forward / all;
    let share = |d: f64, half: f64| {
        let r = if half > 0.0 {
            (d + half) / (2.0 * half)
        } else {
            0.5
        };
        let r = r.clamp(0.0, 1.0);
        r.min(1.0 - r)
    };
    Distribution {
        normal_n: all,
        r_sag: share(x, sole.half_length_m),
        r_cor: share(z, sole.half_width_m),
    }
}

/// `f_eval` (eqs. 1–3, module docs) of spread `d`, the no-supplement spread being `initial`.
pub fn f_eval(d: &Distribution, initial: &Distribution, limit_cor: f64, limit_sag: f64) -> f64 {
    let quality = if d.normal_n < 100.0 {
        // 10¹⁵ / 10^(F/10 + 1), the exponent kept finite for any force.
        let exponent = (d.normal_n.max(-100.0) / 10.0 + 1.0).min(300.0);
        1e15 / libm::pow(10.0, exponent)
    } else {
        let below = |r: f64, limit: f64| (limit - r).max(0.0);
        sq(below(d.r_cor, limit_cor)) + sq(below(d.r_sag, limit_sag))
    };
    let distance =
        sq(d.r_cor - limit_cor.max(initial.r_cor)) + sq(d.r_sag - limit_sag.max(initial.r_sag));
    10.0 * quality + distance
}

fn sq(x: f64) -> f64 {
    x * x
}

impl<const N: usize> crate::controller::Controller<StabiliserInput<'_, N>>
    for ContactStabiliser<N>
{
    type Command = StabiliserOutput;
    type Error = core::convert::Infallible;

    fn tick(&mut self, input: &StabiliserInput<'_, N>) -> Result<StabiliserOutput, Self::Error> {
        Ok(ContactStabiliser::tick(self, input))
    }

    /// A refused input or model gives no supplement: a fallback.
    fn limits(command: &StabiliserOutput) -> crate::controller::Limits {
        crate::controller::Limits {
            fallback: matches!(
                command.status,
                StabiliserStatus::BadInput | StabiliserStatus::Model
            ),
            ..Default::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tree::{BaseKind, Inertial, JointSpec, JointType, Tree, TreeSpec};
    use proptest::prelude::*;

    const N: usize = 9;
    const G: [f64; 3] = [0.0, -9.81, 0.0];

    /// A 1 kg foot (the floating base, its frame at its centre of mass, its sole 5 cm below),
    /// an ankle (about z, then about x, a massless frame between) 5 cm above it, a 10 kg shank
    /// whose centre of mass is `lean` m ahead and 0.25 m up, a knee about z 0.5 m up and a
    /// 20 kg thigh straight above it.
    fn tree(lean: f64) -> Tree<N> {
        let body = |mass_kg: f64, com_m: [f64; 3]| Inertial {
            mass_kg,
            com_m,
            inertia_kgm2: [
                0.05 * mass_kg,
                0.0,
                0.0,
                0.01 * mass_kg,
                0.0,
                0.05 * mass_kg,
            ],
        };
        let joints = [
            JointSpec {
                parent_body: 0,
                kind: JointType::Revolute,
                origin: Placement::from_xyz_rpy([0.0, 0.05, 0.0], [0.0; 3]),
                axis: [0.0, 0.0, 1.0],
                body: Inertial::ZERO,
            },
            JointSpec {
                parent_body: 1,
                kind: JointType::Revolute,
                origin: Placement::from_xyz_rpy([0.0; 3], [0.0; 3]),
                axis: [1.0, 0.0, 0.0],
                body: body(10.0, [lean, 0.25, 0.0]),
            },
            JointSpec {
                parent_body: 2,
                kind: JointType::Revolute,
                origin: Placement::from_xyz_rpy([0.0, 0.5, 0.0], [0.0; 3]),
                axis: [0.0, 0.0, 1.0],
                body: body(20.0, [0.0, 0.25, 0.0]),
            },
        ];
        Tree::new(&TreeSpec {
            base: BaseKind::Floating,
            base_body: body(1.0, [0.0; 3]),
            joints: &joints,
        })
        .unwrap()
    }

    const SOLE: Sole = Sole {
        body: 0,
        centre_m: [0.0, -0.05, 0.0],
        forward: [1.0, 0.0, 0.0],
        left: [0.0, 0.0, -1.0],
        half_length_m: 0.1,
        half_width_m: 0.05,
    };

    const AXES: [SampleAxis; 3] = [
        SampleAxis {
            axis_joint: 0,
            group_first: 0,
            group_count: 2,
            max_nm: 60.0,
        },
        SampleAxis {
            axis_joint: 1,
            group_first: 0,
            group_count: 2,
            max_nm: 60.0,
        },
        SampleAxis {
            axis_joint: 2,
            group_first: 2,
            group_count: 1,
            max_nm: 60.0,
        },
    ];

    /// The generalized gravity on the joints (the base's rows zero): what holds the leg still.
    fn holding(t: &Tree<N>, pose: &Isometry3<f64>, q: &[f64; N]) -> [f64; N] {
        let g = t
            .kinematics(pose, q)
            .unwrap()
            .gravity(&Vector3::from(G))
            .unwrap();
        let mut tau = [0.0; N];
        tau[6..].copy_from_slice(&g.as_slice()[6..]);
        tau
    }

    const STILL: [f64; N] = [0.0; N];

    /// The test leg's input: at rest on its foot (body 0), no joint torque vectors, nothing
    /// locked, no loads, no measurement; a test changes what it exercises with `..`.
    fn input<'a>(
        pose: &'a Isometry3<f64>,
        q: &'a [f64; N],
        tau: &'a [f64; N],
    ) -> StabiliserInput<'a, N> {
        StabiliserInput {
            base_pose: pose,
            q,
            v: &STILL,
            tau,
            joint_torques: &[],
            gravity: Vector3::from(G),
            planted: &[0],
            stance_bodies: 1,
            locked: &[],
            sole: SOLE,
            axes: &AXES,
            loads: &[],
            measured: None,
        }
    }

    fn run(lean: f64, tau_extra: [f64; 3], settings: StabiliserSettings) -> StabiliserOutput {
        let t = tree(lean);
        let pose = Isometry3::translation(0.0, 0.05, 0.0);
        let q = [0.0; N];
        let mut tau = holding(&t, &pose, &q);
        for (x, e) in tau[6..].iter_mut().zip(tau_extra) {
            *x += e;
        }
        let mut s = ContactStabiliser::new(t, settings).expect("valid settings");
        s.tick(&input(&pose, &q, &tau))
    }

    /// Settings out of range are refused, naming the field; nothing is brought into range.
    #[test]
    fn settings_out_of_range_are_refused_naming_the_field() {
        let d = StabiliserSettings::DEFAULT;
        let cases = [
            (
                StabiliserSettings { population: 1, ..d },
                SettingsError::Population(1),
                "population",
            ),
            (
                StabiliserSettings {
                    population: 17,
                    ..d
                },
                SettingsError::Population(17),
                "population",
            ),
            (
                StabiliserSettings {
                    generations: 0,
                    ..d
                },
                SettingsError::Generations(0),
                "generations",
            ),
            (
                StabiliserSettings {
                    sigma0_nm: 0.0,
                    ..d
                },
                SettingsError::Step(0.0),
                "sigma0_nm",
            ),
            (
                StabiliserSettings {
                    sigma0_nm: f64::INFINITY,
                    ..d
                },
                SettingsError::Step(f64::INFINITY),
                "sigma0_nm",
            ),
            (
                StabiliserSettings {
                    limit_cor: f64::NEG_INFINITY,
                    ..d
                },
                SettingsError::LimitCor(f64::NEG_INFINITY),
                "limit_cor",
            ),
        ];
        for (settings, error, field) in cases {
            assert_eq!(
                ContactStabiliser::new(tree(0.0), settings).err(),
                Some(error)
            );
            let mut text = heapless::String::<96>::new();
            core::fmt::write(&mut text, format_args!("{error}")).expect("fits");
            assert!(text.starts_with(field), "{text}");
        }
        // A NaN limit is refused too (compared by its text: NaN is not equal to itself).
        let nan = StabiliserSettings {
            limit_sag: f64::NAN,
            ..d
        };
        assert!(matches!(nan.check(), Err(SettingsError::LimitSag(x)) if x.is_nan()));
        for ok in [
            d,
            StabiliserSettings {
                population: 2,
                generations: 1,
                ..d
            },
        ] {
            let s = ContactStabiliser::new(tree(0.0), ok).expect("in range");
            assert_eq!(*s.settings(), ok);
        }
    }

    #[test]
    fn a_still_leg_puts_the_centre_of_pressure_under_the_centre_of_mass() {
        // 31 kg: the shank's 10 kg 5 cm ahead of the sole's centre, the rest above it: the
        // centre of pressure 10 · 0.05 / 31 m ahead, so the front carries (x + 0.1) / 0.2.
        let out = run(0.05, [0.0; 3], StabiliserSettings::DEFAULT);
        let x = 10.0 * 0.05 / 31.0;
        let front = (x + 0.1) / 0.2;
        // Exact but for the regularisation of A (1e-12 of its diagonal; 6e-10 relative here).
        assert!(
            (out.initial.normal_n - 31.0 * 9.81).abs() < 1e-8 * 31.0 * 9.81,
            "{out:?}"
        );
        assert!((out.initial.r_sag - (1.0 - front)).abs() < 1e-9, "{out:?}");
        assert!((out.initial.r_cor - 0.5).abs() < 1e-9, "{out:?}");
        // Spread well already: nothing to gain, nothing added.
        assert_eq!(out.status, StabiliserStatus::Kept);
        assert_eq!(out.supplement_nm, [0.0; 3]);
        assert_eq!(out.eval[0], out.eval[1]);
    }

    #[test]
    fn the_supplement_is_predicted_as_the_same_torque_added_by_the_controller() {
        // Linearity: the prediction with a supplement s equals the prediction without one for
        // torques τ + s (each axis's torque vector s_i · axis_i mapped to every coordinate of
        // its joint).
        let with = run(0.05, [-25.0, 0.0, 0.0], StabiliserSettings::DEFAULT);
        assert_eq!(with.status, StabiliserStatus::Improved, "{with:?}");
        let s = with.supplement_nm;
        // Joints 0 (z) and 1 (x) are the ankle, axes orthogonal at q = 0; joint 2 the knee.
        let again = run(0.05, [s[0] - 25.0, s[1], s[2]], StabiliserSettings::DEFAULT);
        for (a, b) in [
            (again.initial.r_sag, with.predicted.r_sag),
            (again.initial.r_cor, with.predicted.r_cor),
            (again.initial.normal_n, with.predicted.normal_n),
        ] {
            assert!((a - b).abs() < 1e-9 * (1.0 + a.abs()), "{again:?} {with:?}");
        }
    }

    #[test]
    fn a_joint_torque_vector_counts_on_each_axis_of_its_joint() {
        // At q = 0 the ankle's axes are z then x: a torque vector (3, 0, −25) on the ankle and
        // 7 about the knee's z are the generalized forces (−25, 3, 7).
        let by_axes = run(0.05, [-25.0, 3.0, 7.0], StabiliserSettings::DEFAULT);
        let t = tree(0.05);
        let pose = Isometry3::translation(0.0, 0.05, 0.0);
        let q = [0.0; N];
        let tau = holding(&t, &pose, &q);
        let mut s = ContactStabiliser::new(t, StabiliserSettings::DEFAULT).expect("valid settings");
        let by_vectors = s.tick(&StabiliserInput {
            joint_torques: &[
                JointTorque {
                    group_first: 0,
                    group_count: 2,
                    torque_nm: [3.0, 0.0, -25.0],
                },
                JointTorque {
                    group_first: 2,
                    group_count: 1,
                    torque_nm: [0.0, 0.0, 7.0],
                },
            ],
            ..input(&pose, &q, &tau)
        });
        assert!((by_axes.initial.r_sag - by_vectors.initial.r_sag).abs() < 1e-12);
        assert!((by_axes.initial.r_cor - by_vectors.initial.r_cor).abs() < 1e-12);
        assert!((by_axes.initial.r_cor - 0.5).abs() > 1e-3, "{by_axes:?}");
    }

    #[test]
    fn a_measured_baseline_is_searched_from_and_spread_back() {
        // The plant says the front corners carry almost everything while the model says the
        // foot is well spread: the search starts from the measurement, and the model's
        // supplement effect spreads it back to the limit.
        let t = tree(0.05);
        let pose = Isometry3::translation(0.0, 0.05, 0.0);
        let q = [0.0; N];
        let tau = holding(&t, &pose, &q);
        let mut s = ContactStabiliser::new(t, StabiliserSettings::DEFAULT).expect("valid settings");
        let corners = [10.0, 10.0, 150.0, 130.0];
        let out = s.tick(&StabiliserInput {
            measured: Some(corners),
            ..input(&pose, &q, &tau)
        });
        let m = Distribution::of_corners(corners);
        assert!((out.initial.r_sag - m.r_sag).abs() < 1e-12, "{out:?}");
        assert!((out.initial.r_cor - m.r_cor).abs() < 1e-12, "{out:?}");
        assert!((out.initial.normal_n - 300.0).abs() < 1e-12, "{out:?}");
        assert!(out.rigid_initial.r_sag > 0.4, "{out:?}");
        assert_eq!(out.status, StabiliserStatus::Improved);
        assert!(out.predicted.r_sag >= 0.19, "{out:?}");
    }

    #[test]
    fn a_locked_joint_takes_the_torque_about_it() {
        // The knee held (at its limit, say): a torque about it accelerates nothing, so the foot's
        // ground reaction is the same with or without it.
        let t = tree(0.05);
        let pose = Isometry3::translation(0.0, 0.05, 0.0);
        let q = [0.0; N];
        let tau = holding(&t, &pose, &q);
        let mut pushed = tau;
        pushed[8] += 50.0;
        let mut s = ContactStabiliser::new(t, StabiliserSettings::DEFAULT).expect("valid settings");
        let mut at = |tau: &[f64; N], locked: &[usize]| {
            s.tick(&StabiliserInput {
                locked,
                ..input(&pose, &q, tau)
            })
            .initial
        };
        let (still, free, held) = (at(&tau, &[2]), at(&pushed, &[]), at(&pushed, &[2]));
        assert!(
            (still.r_sag - held.r_sag).abs() < 1e-9,
            "{still:?} {held:?}"
        );
        assert!(
            (still.normal_n - held.normal_n).abs() < 1e-6,
            "{still:?} {held:?}"
        );
        assert!(
            (still.r_sag - free.r_sag).abs() > 1e-3,
            "{still:?} {free:?}"
        );
    }

    #[test]
    fn a_foot_loaded_on_its_front_edge_is_spread_back_to_the_limit() {
        // An ankle torque of −25 N·m (on the shank; +25 on the foot) puts the centre of
        // pressure near the front edge.
        let out = run(0.05, [-25.0, 0.0, 0.0], StabiliserSettings::DEFAULT);
        assert!(out.initial.r_sag < 0.1, "{out:?}");
        assert_eq!(out.status, StabiliserStatus::Improved);
        assert!(out.predicted.r_sag >= 0.19, "{out:?}");
        assert!(out.eval[1] < out.eval[0]);
        // Within the bounds, and evaluated as many times as the settings say.
        assert!(out.supplement_nm.iter().all(|x| x.abs() <= 60.0));
        let s = StabiliserSettings::DEFAULT;
        assert_eq!(out.evaluations as usize, 1 + s.population * s.generations);
    }

    #[test]
    fn bad_input_is_refused_with_no_supplement() {
        let t = tree(0.0);
        let pose = Isometry3::identity();
        let q = [0.0; N];
        let mut s = ContactStabiliser::new(t, StabiliserSettings::DEFAULT).expect("valid settings");
        let tau = [0.0; N];
        let base = input(&pose, &q, &tau);
        for input in [
            StabiliserInput {
                planted: &[],
                ..base
            },
            StabiliserInput {
                planted: &[0, 1, 2, 3, 0],
                ..base
            },
            StabiliserInput {
                stance_bodies: 2,
                ..base
            },
            StabiliserInput {
                planted: &[7],
                ..base
            },
            StabiliserInput {
                gravity: Vector3::new(0.0, f64::NAN, 0.0),
                ..base
            },
        ] {
            let out = s.tick(&input);
            assert_eq!(out.status, StabiliserStatus::BadInput, "{out:?}");
            assert_eq!(out.supplement_nm, [0.0; 3]);
        }
        let mut bad = tau;
        bad[7] = f64::INFINITY;
        let out = s.tick(&StabiliserInput { tau: &bad, ..base });
        assert_eq!(out.status, StabiliserStatus::BadInput);
    }

    #[test]
    fn a_load_counts_as_weight_where_it_hangs() {
        // A 10 kg load 5 cm ahead on the thigh: the same centre of pressure as the first test's
        // shank lean, the normal force 10 g more.
        let t = tree(0.0);
        let pose = Isometry3::translation(0.0, 0.05, 0.0);
        let q = [0.0; N];
        let mut tau = holding(&t, &pose, &q);
        // The load's holding torque at the joints about z: 10 g · 0.05 (it pulls forward-down).
        tau[6] += 98.1 * 0.05;
        tau[8] += 98.1 * 0.05;
        let mut s = ContactStabiliser::new(t, StabiliserSettings::DEFAULT).expect("valid settings");
        let out = s.tick(&StabiliserInput {
            loads: &[Load {
                body: 3,
                point_m: [0.05, 0.9, 0.0],
                force_n: [0.0, -98.1, 0.0],
            }],
            ..input(&pose, &q, &tau)
        });
        let x = 98.1 * 0.05 / (41.0 * 9.81);
        assert!(
            (out.initial.normal_n - 41.0 * 9.81).abs() < 1e-8 * 41.0 * 9.81,
            "{out:?}"
        );
        assert!(
            (out.initial.r_sag - (1.0 - (x + 0.1) / 0.2)).abs() < 1e-9,
            "{out:?}"
        );
    }

    #[test]
    fn corners_spread_as_their_sums() {
        let d = Distribution::of_corners([10.0, 30.0, 20.0, 40.0]);
        assert_eq!(d.normal_n, 100.0);
        assert!((d.r_sag - 0.4).abs() < 1e-12 && (d.r_cor - 0.3).abs() < 1e-12);
        assert_eq!(Distribution::of_corners([0.0; 4]), Distribution::default());
        let one = Distribution::of_corners([0.0, 0.0, 50.0, -3.0]);
        assert_eq!((one.r_sag, one.r_cor), (0.0, 0.0));
    }

    #[test]
    fn f_eval_follows_the_paper() {
        let init = Distribution {
            normal_n: 500.0,
            r_sag: 0.1,
            r_cor: 0.3,
        };
        // Below the limit sagittally: quality (0.2 − 0.1)², distance to (0.3, 0.2): 0.1².
        let e = f_eval(&init, &init, 0.2, 0.2);
        assert!((e - (10.0 * 0.01 + 0.01)).abs() < 1e-12);
        // Unloaded: 10¹⁵ / 10^(F/10 + 1), finite for any force.
        let light = Distribution {
            normal_n: 50.0,
            ..init
        };
        assert!((f_eval(&light, &init, 0.2, 0.2) - (10.0 * 1e9 + 0.01)).abs() < 1e-3);
        let pulled = Distribution {
            normal_n: -1e300,
            ..init
        };
        assert!(f_eval(&pulled, &init, 0.2, 0.2).is_finite());
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        /// Any finite state and torques: a status, a supplement within the bounds, finite
        /// evaluations that never get worse.
        #[test]
        fn any_finite_state_gives_a_bounded_supplement(
            lean in -0.3f64..0.3,
            q in proptest::array::uniform3(-1.5f64..1.5),
            v in proptest::array::uniform9(-5.0f64..5.0),
            extra in proptest::array::uniform3(-200.0f64..200.0),
            seed in any::<u64>(),
        ) {
            let t = tree(lean);
            let pose = Isometry3::translation(0.0, 0.05, 0.0);
            let mut qq = [0.0; N];
            qq[..3].copy_from_slice(&q);
            let mut tau = holding(&t, &pose, &qq);
            for (x, e) in tau[6..].iter_mut().zip(extra) {
                *x += e;
            }
            let mut s = ContactStabiliser::new(t, StabiliserSettings { seed, ..StabiliserSettings::DEFAULT })
                .expect("valid settings");
            let out = s.tick(&StabiliserInput {
                v: &v,
                ..input(&pose, &qq, &tau)
            });
            prop_assert!(matches!(out.status, StabiliserStatus::Improved | StabiliserStatus::Kept), "{:?}", out);
            prop_assert!(out.supplement_nm.iter().all(|x| x.abs() <= 60.0));
            prop_assert!(out.eval.iter().all(|e| e.is_finite()));
            prop_assert!(out.eval[1] <= out.eval[0]);
        }
    }
}
