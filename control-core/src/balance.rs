//! Whole-body balance by one convex QP per tick, after Abe, da Silva and Popović,
//! "Multiobjective control with frictional contacts" (SCA 2007): joint accelerations `a`,
//! point contact forces `f` and joint torques `u` chosen together, for a floating-base
//! [`Tree`] standing on the ground.
//!
//! Each tick ([`Balance::tick`]) solves, with the [`crate::qp`] solver,
//!
//! ```text
//! minimise   Σ w ‖J a + J̇ q̇ − d‖²  (the objectives below) + w_a ‖a‖² + w_f ‖f‖²
//! subject to M a + h = Sᵀ u + Σ_p J_pᵀ f_p         (equations of motion; the base rows: u = 0)
//!            J_p a + J̇_p q̇ = −k_v J_p q̇            (no slip: every touching point, 3 rows,
//!                                                    reduced to independent ones, below)
//!            ‖f_t‖ ≤ μ f_n,  f_n ≥ f_min            (friction cone and minimum normal force,
//!                                                    per contact point: the slides' contact
//!                                                    stabilisation)
//!            ‖τ_g(u)‖ ≤ effort_g                    (every joint group's torque vector)
//! ```
//!
//! `u` is eliminated (`u = M_j a + h_j − J_{p,j}ᵀ f`, the joint rows of the equations of
//! motion), so the unknowns are `a` (nv), `f` (3 per planted contact point) and one auxiliary
//! per multi-axis joint group (below). The objectives:
//! - **pose** per joint coordinate, `d = k_p (q* − q) − k_d q̇` (a critically damped spring when
//!   `k_d = 2√k_p`);
//! - **upright**: the base's angular acceleration towards a target orientation, the same spring
//!   on the rotation vector of `R_bᵀ R*` (base frame);
//! - **centre of mass** towards the point `com_height_m` above the middle of the touching contact
//!   points (the area centroid of their convex hull seen from above, at their mean height; the
//!   points' mean when the hull has no area): `d = k_s (x_d − x) − k_d ẋ` horizontally with `k_s = k_c √(r₀ / max(‖x_d − x‖, r₀))`
//!   (the slides' `k_s ∝ 1/√‖x_d − x‖` beyond `r₀`, [`BalanceSettings::com_reference_m`]) and
//!   a plain spring vertically. Written on the forces, `m ẍ = Σ f + m g`, which the base rows
//!   make exact;
//! - **angular momentum damping** about the centre of mass, `L̇ = −k_L L`, also on the forces:
//!   `L̇ = Σ (p − x) × f` (gravity acts at the centre of mass);
//! - **end effectors** ([`PointTask`], a hand reaching): a body's point driven along a path in
//!   the world, `J_p a + J̇_p q̇ = ẍ* + k_p (x* − x) + k_d (ẋ* − ẋ)`, on the accelerations
//!   (`J̇_p q̇` by the same central difference as the contacts').
//!
//! # Contact points and their no-slip rows
//! Each contact point that touches (per point, [`BalanceInput::planted`]) gets a force and
//! three no-slip rows. A foot flat on the ground then holds still; one on its front corners
//! only is free to roll about them. The rows hold the body's motion, not each point's: the
//! point's rows `J_p a` (its velocity's rate, `J_p = [I  −[d]×] J` for the offset `d` from the
//! body's origin) equal the body's own no-slip target `t = −J̇ q̇ − k_v J q̇` (the 6D rate of
//! its twist) carried to the point, `t_lin + t_ang × d`. Asking every corner for its own zero
//! acceleration instead would be inconsistent on a turning body: its corners' centripetal
//! accelerations `ω × (ω × d)` are no rigid motion's (measured on the humanoid: up to 2 m/s²
//! between a foot's corners, every such tick infeasible).
//!
//! A body whose touching points span a plane (three of them off one line: a flat foot's
//! corners) is held by its own six rows `J a = t` instead: the same motion (`u + w × d = 0` at
//! three points off one line forces `u = w = 0`), in six rows rather than three per point.
//!
//! The rows still depend on one another: two corners give six rows of rank five, and a foot
//! and its toes, joined by a hinge, add only the hinge's acceleration. Equal in exact
//! arithmetic, dependent rows' right-hand sides differ by rounding (and by the error of the
//! central difference that gives `J̇ q̇`), and such a set of equalities has no solution at all:
//! the solver would report the QP infeasible, correctly.
//! So the no-slip rows are orthonormalised
//! (Gram–Schmidt, a second pass where the first cancelled much of a row) in order, each row
//! whose remainder is below [`DEPENDENT_ROW`] of its norm is left out, and
//! [`BalanceOutput::dependent_rows`] counts them, with the largest gap between a left-out row's
//! right-hand side and the one the kept rows imply in [`BalanceOutput::slip_inconsistency`].
//!
//! # Joint groups
//! A joint of the robot is a [`JointGroup`]: one tree joint (a hinge or a slider), or two or
//! three revolute tree joints hanging from one another at one point (a two-axis or a ball
//! joint modelled as Euler angles, the intermediate bodies massless). The group's torque is the
//! vector `τ` with `u_i = s_i · τ` for its coordinates' world axes `s_i` (the least-norm one:
//! `τ = S (SᵀS)⁻¹ u`), bounded in norm by the group's effort: `|u| ≤ effort` for one
//! coordinate, and for more, with an auxiliary `r`, the two three-dimensional cones
//! `‖(τ_x, τ_y)‖ ≤ r` and `‖(r, τ_z)‖ ≤ effort`, which together are exactly `‖τ‖ ≤ effort`.
//! [`BalanceOutput::group_torques`] gives every group's `τ` in world axes: what a plant with
//! ball joints applies (+τ on the child, −τ on the parent).
//!
//! # Limits left out
//! Most ticks no joint is near its effort, and the limits' rows are the QP's only dense ones
//! (each torque is a row of `M` and the contact Jacobians). So a group's limit is left out of
//! the tick's QP while its torque on the last solved tick was below
//! [`BalanceSettings::screen_fraction`] of its effort (every limit is in on the first tick and
//! after a failed one). After the solve, every left-out group's torque is checked against its
//! effort; if one is past it, the QP is solved again with that group's limit in, and if that
//! answer takes another left-out group past its effort, a third time with every limit in: at
//! most three solves a tick. The answer is
//! the whole QP's: a convex problem's optimum that satisfies the constraints left out of it is
//! the optimum with them in. [`BalanceOutput::solves`] and [`BalanceOutput::limits_left_out`]
//! say what happened. Only the contact forces are regularised (`force_weight`), not the
//! auxiliary variables of the multi-axis limits, so that leaving a limit out changes nothing in
//! the objective. On the 15-body humanoid standing (14 groups), all 14 are left out on almost
//! every tick and the tick takes about half the time.
//!
//! # Stepping
//! The QP balances on the feet where they stand. A push beyond what the feet and the body's
//! momentum can absorb needs a step: [`step::Stepper`] decides when and where (the capture
//! point against the footprint) and gives the swing as [`PointTask`]s and the planted set to
//! leave the swing foot out of, for the caller to pass in [`BalanceInput`].
//!
//! # When the QP fails
//! An infeasible QP (no force the cones allow holds the body), a solve that stops without
//! converging, a model evaluation that fails (a singular Euler configuration of a group, a
//! non-finite input): [`BalanceOutput::status`] names it and the output is the **fallback**:
//! the last solved tick's torques times [`BalanceSettings::fallback_decay`] per failed tick
//! in a row (zero if none was ever solved). Never a NaN torque, never a torque past an effort.
//!
//! # What it must never do
//! Allocate, block or panic. Every buffer is inside [`Balance`], sized by its const
//! parameters: `NV` the tree's velocity capacity, `NX` the QP's variables (at least
//! `nv + 3 × contact points + multi-axis groups`), `NR` its rows (at least `6 + 6 × contact
//! bodies + 4 × points + 2 × one-axis groups + 6 × multi-axis groups`). It is large (the
//! solver's `8 (9 NX² + 2.25 NX NR + …)` bytes and the QP data, about 1.2 MB for `NX = 96`,
//! `NR = 160`): keep it in a `static` or a box.
#![allow(clippy::neg_cmp_op_on_partial_ord)]

use core::fmt;

use nalgebra::{Isometry3, Matrix2, Matrix3, SMatrix, SVector, UnitQuaternion, Vector3};

use crate::qp::{Cones, Problem, QpError, Settings, SolveInfo, Solver, Status, WarmStart};
use crate::tree::{BaseKind, JointType, Placement, Tree, TreeEvalError, TreeKinematics};

/// Most bodies that can stand on the ground.
pub const MAX_CONTACT_BODIES: usize = 8;
/// Most contact points per contact body.
pub const MAX_POINTS: usize = 4;
/// Most contact points in all.
pub const MAX_ALL_POINTS: usize = MAX_CONTACT_BODIES * MAX_POINTS;
/// Most joint groups.
pub const MAX_GROUPS: usize = 64;

/// A body that can stand on the ground, and the points of it that touch (its sole's corners).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ContactBody {
    /// The tree body (0: the base, k + 1: joint k's child).
    pub body: usize,
    /// The contact points in the body's frame, m; the first `count` are used.
    pub points: [[f64; 3]; MAX_POINTS],
    /// How many of `points` are used, 1 – [`MAX_POINTS`].
    pub count: usize,
}

/// A joint of the robot as tree coordinates (see the module docs, "Joint groups").
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct JointGroup {
    /// Its first tree joint.
    pub first: usize,
    /// Its tree joints, 1 – 3: `first`, `first + 1`, …, each (after the first) hanging from the
    /// one before at the same point, all revolute when more than one.
    pub count: usize,
    /// The largest norm of its torque vector, N·m (N for a slider), > 0.
    pub effort: f64,
}

/// Gains, weights and limits of the controller. Gains are per unit of what they accelerate
/// (1/s², 1/s); weights are relative (each objective's residual is an acceleration, m/s² or
/// rad/s²).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BalanceSettings {
    /// Coulomb friction coefficient of the cones, > 0 (at most the real one).
    pub friction: f64,
    /// Smallest normal force per contact point, N, ≥ 0.
    pub min_normal_n: f64,
    /// Pose spring per joint coordinate, 1/s² and 1/s.
    pub pose_kp: f64,
    /// See `pose_kp`.
    pub pose_kd: f64,
    /// Weight of the pose objective.
    pub pose_weight: f64,
    /// Upright spring on the base's orientation, 1/s² and 1/s.
    pub upright_kp: f64,
    /// See `upright_kp`.
    pub upright_kd: f64,
    /// Weight of the upright objective.
    pub upright_weight: f64,
    /// Horizontal centre-of-mass spring `k_c` (1/s²) and damping (1/s).
    pub com_kp: f64,
    /// See `com_kp`.
    pub com_kd: f64,
    /// Distance below which `k_s = k_c`; beyond, `k_s = k_c √(r₀/‖x_d − x‖)`, m, > 0.
    pub com_reference_m: f64,
    /// Weight of the horizontal centre-of-mass objective.
    pub com_weight: f64,
    /// Vertical centre-of-mass spring (1/s²) and damping (1/s).
    pub height_kp: f64,
    /// See `height_kp`.
    pub height_kd: f64,
    /// Weight of the vertical centre-of-mass objective.
    pub height_weight: f64,
    /// Angular momentum damping rate `k_L`, 1/s.
    pub momentum_kd: f64,
    /// Weight of the angular momentum objective (its residual is in N·m per kg of body).
    pub momentum_weight: f64,
    /// End-effector spring on each [`PointTask`]'s point, 1/s² and 1/s.
    pub task_kp: f64,
    /// See `task_kp`.
    pub task_kd: f64,
    /// Weight of each point task (its residual is an acceleration, m/s²).
    pub task_weight: f64,
    /// Regularisation of the accelerations.
    pub accel_weight: f64,
    /// Regularisation of the forces (per N², scaled by 1/m² of the body).
    pub force_weight: f64,
    /// No-slip velocity feedback `k_v`, 1/s (removes drift of a planted body), ≥ 0.
    pub contact_kv: f64,
    /// Fraction of each effort kept in reserve, `[0, 0.1]`: the QP's tolerance must not take a
    /// torque past the effort.
    pub effort_margin: f64,
    /// Factor on the fallback torques per failed tick in a row, `[0, 1]`.
    pub fallback_decay: f64,
    /// Torque limits far from binding are left out of the QP, `[0, 1)`: a joint group's limit
    /// is left out while its torque on the last solved tick was below this fraction of its
    /// effort; a solution that takes a left-out group past its effort is solved again with
    /// that group's limit in (see the module docs, "Limits left out"). 0 keeps every limit in.
    pub screen_fraction: f64,
    /// The QP solver's settings. The default is [`Settings::DEFAULT`] with one equilibration
    /// pass (the balance QP is already scaled by its physics: accelerations, forces of the
    /// body's weight; on the humanoid's recorded QPs one pass takes 9.0 iterations a tick
    /// against 9.4 with five, and 14 % fewer instructions), with the range-space setup
    /// ([`Settings::range_space`]: the accelerations eliminated by their own factorisations; on
    /// the humanoid's recorded QPs 65–70 µs a solve against 108–111 µs the null-space way), and
    /// with a warm start nearer the last tick's answer ([`Settings::warm_start_weight`] 0.9999
    /// instead of 0.99): one tick's QP is the last one moved a little, and on the humanoid's
    /// recorded QPs (every tick of an unpushed and a pushed run, at 200 Hz and 1 kHz) it takes
    /// 3.1–3.3 iterations a tick instead of 4.1–4.2 unpushed and 6.5 instead of 7.1 pushed at
    /// 20 N·s, every one solved. Its `P` is not checked for being symmetric and semidefinite
    /// ([`Settings::check_p`] off): the controller forms it as a sum of squares with
    /// non-negative weights (the settings' weights are checked), each product the same for
    /// `(i, j)` and `(j, i)`, which saves a pass over every pair of `P` and a Cholesky
    /// factorisation of the forces' block every tick.
    pub qp: Settings,
}

impl BalanceSettings {
    /// Defaults for a human-sized body at 200 Hz – 1 kHz.
    pub const DEFAULT: Self = Self {
        friction: 0.7,
        min_normal_n: 5.0,
        pose_kp: 100.0,
        pose_kd: 20.0,
        pose_weight: 0.1,
        upright_kp: 200.0,
        upright_kd: 28.0,
        upright_weight: 1.0,
        com_kp: 60.0,
        com_kd: 15.0,
        com_reference_m: 0.01,
        com_weight: 10.0,
        height_kp: 100.0,
        height_kd: 20.0,
        height_weight: 10.0,
        momentum_kd: 5.0,
        momentum_weight: 1.0,
        task_kp: 400.0,
        task_kd: 40.0,
        task_weight: 10.0,
        accel_weight: 1e-4,
        force_weight: 1e-2,
        contact_kv: 10.0,
        effort_margin: 1e-6,
        fallback_decay: 0.9,
        screen_fraction: 0.5,
        qp: Settings {
            equilibrate_iters: 1,
            range_space: true,
            warm_start_weight: 0.9999,
            check_p: false,
            ..Settings::DEFAULT
        },
    };

    fn check(&self) -> Result<(), BalanceError> {
        let bad = |what| Err(BalanceError::BadSettings(what));
        let nonneg = |v: f64| v >= 0.0 && v.is_finite();
        if !(self.friction > 0.0 && self.friction.is_finite()) {
            return bad("friction");
        }
        if !(self.com_reference_m > 0.0 && self.com_reference_m.is_finite()) {
            return bad("com_reference_m");
        }
        let fields = [
            (self.min_normal_n, "min_normal_n"),
            (self.pose_kp, "pose_kp"),
            (self.pose_kd, "pose_kd"),
            (self.pose_weight, "pose_weight"),
            (self.upright_kp, "upright_kp"),
            (self.upright_kd, "upright_kd"),
            (self.upright_weight, "upright_weight"),
            (self.com_kp, "com_kp"),
            (self.com_kd, "com_kd"),
            (self.com_weight, "com_weight"),
            (self.height_kp, "height_kp"),
            (self.height_kd, "height_kd"),
            (self.height_weight, "height_weight"),
            (self.momentum_kd, "momentum_kd"),
            (self.momentum_weight, "momentum_weight"),
            (self.task_kp, "task_kp"),
            (self.task_kd, "task_kd"),
            (self.task_weight, "task_weight"),
            (self.accel_weight, "accel_weight"),
            (self.force_weight, "force_weight"),
            (self.contact_kv, "contact_kv"),
        ];
        for (v, name) in fields {
            if !nonneg(v) {
                return bad(name);
            }
        }
        if !(self.accel_weight > 0.0) {
            return bad("accel_weight");
        }
        if !(self.effort_margin >= 0.0 && self.effort_margin <= 0.1) {
            return bad("effort_margin");
        }
        if !(self.fallback_decay >= 0.0 && self.fallback_decay <= 1.0) {
            return bad("fallback_decay");
        }
        if !(self.screen_fraction >= 0.0 && self.screen_fraction < 1.0) {
            return bad("screen_fraction");
        }
        Ok(())
    }
}

impl Default for BalanceSettings {
    fn default() -> Self {
        Self::DEFAULT
    }
}

/// Most point tasks a tick.
pub const MAX_TASKS: usize = 4;

/// A point of a body driven along a path in the world: an end effector (a hand reaching). Its
/// objective is `J_p a + J̇_p q̇ = ẍ* + k_p (x* − x) + k_d (ẋ* − ẋ)`
/// ([`BalanceSettings::task_kp`], `task_kd`, weight `task_weight`): a spring to the path's
/// point with its velocity and acceleration fed forward (zero to hold a place).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PointTask {
    /// The tree body (0: the base, k + 1: joint k's child).
    pub body: usize,
    /// The point in the body's frame, m.
    pub point: [f64; 3],
    /// Where it should be, world, m.
    pub target: [f64; 3],
    /// The target's velocity, world, m/s.
    pub target_velocity: [f64; 3],
    /// The target's acceleration, world, m/s².
    pub target_acceleration: [f64; 3],
}

impl PointTask {
    /// Whether its point, target, velocity and acceleration are all finite.
    pub fn is_finite(&self) -> bool {
        self.point
            .iter()
            .chain(&self.target)
            .chain(&self.target_velocity)
            .chain(&self.target_acceleration)
            .all(|x| x.is_finite())
    }

    /// A task on `body`'s frame origin held at the world's origin, at rest: a blank to fill in.
    pub const fn on(body: usize) -> Self {
        Self {
            body,
            point: [0.0; 3],
            target: [0.0; 3],
            target_velocity: [0.0; 3],
            target_acceleration: [0.0; 3],
        }
    }
}

/// The size of a tick's QP (see [`Balance::last_qp`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QpDims {
    /// Variables `n`.
    pub variables: usize,
    /// Rows `m`.
    pub rows: usize,
    /// The cones of the rows.
    pub cones: Cones,
    /// The first variables: the accelerations.
    pub accelerations: usize,
    /// The next: the contact forces.
    pub forces: usize,
}

/// Why a controller could not be built.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum BalanceError {
    /// The tree's base is fixed: balance needs a floating base.
    FixedBase,
    /// A settings field is out of range (named).
    BadSettings(&'static str),
    /// More contact bodies, points or groups than the capacity, or none.
    Capacity(&'static str),
    /// Contact body `index` names a body past the tree, or has 0 or more than [`MAX_POINTS`]
    /// points, or a non-finite point.
    BadContact {
        /// Index into the contact bodies.
        index: usize,
    },
    /// Joint group `index` does not fit: groups must cover every tree joint once, in order;
    /// a group of 2 or 3 must be revolute joints each hanging from the one before at its origin
    /// (identity origin); the effort must be positive and finite.
    BadGroup {
        /// Index into the groups.
        index: usize,
    },
}

impl fmt::Display for BalanceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::FixedBase => write!(f, "balance: the tree's base must be floating"),
            Self::BadSettings(what) => write!(f, "balance: setting {what} is out of range"),
            Self::Capacity(what) => write!(f, "balance: {what} exceed the capacity"),
            Self::BadContact { index } => write!(
                f,
                "balance: contact body {index}: no such body, 0 or more than {MAX_POINTS} points, or a non-finite point"
            ),
            Self::BadGroup { index } => write!(
                f,
                "balance: joint group {index}: groups must cover every joint once in order (1–3 joints; 2–3 revolute joints chained at one point) with a positive finite effort"
            ),
        }
    }
}

impl core::error::Error for BalanceError {}

/// Which input of a tick was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BalanceInputField {
    /// Gravity is not finite or is zero (the cones need an up direction).
    Gravity,
    /// A velocity is not finite.
    Velocity,
    /// A target joint position is not finite.
    Target,
    /// The base orientation target is not finite.
    UprightTarget,
    /// `com_height_m` is not finite.
    ComHeight,
    /// `planted` has another length than the contact bodies.
    Planted,
    /// More than [`MAX_TASKS`] tasks, a body past the tree or a non-finite point or target.
    Tasks,
}

/// How a tick ended.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum BalanceStatus {
    /// The QP was solved; the torques are its answer.
    Solved,
    /// An input was refused: fallback torques.
    Input(BalanceInputField),
    /// The model could not be evaluated: fallback torques.
    Model(TreeEvalError),
    /// Group `group`'s axes are (nearly) dependent: an Euler singularity. Fallback torques.
    Singular {
        /// The group.
        group: usize,
    },
    /// The solver refused the problem (a bug if it happens: the problem is built here).
    Refused(QpError),
    /// The solver stopped without a solution: infeasible, out of iterations or stalled.
    /// Fallback torques.
    NotSolved(Status),
    /// The problem does not fit the capacity (too many planted points). Fallback torques.
    Capacity,
}

/// One tick's input.
#[derive(Debug, Clone, Copy)]
pub struct BalanceInput<'a, const NV: usize> {
    /// The floating base's pose in the world.
    pub base_pose: &'a Isometry3<f64>,
    /// Joint positions, by tree joint.
    pub q: &'a [f64; NV],
    /// Generalized velocity, the tree's velocity layout (base linear and angular velocity in
    /// the base frame, then the joints).
    pub v: &'a [f64; NV],
    /// The pose objective's target positions, by tree joint.
    pub q_target: &'a [f64; NV],
    /// The base orientation the upright objective turns towards.
    pub upright_target: &'a UnitQuaternion<f64>,
    /// Height of the centre-of-mass target above the planted points' mean, m.
    pub com_height_m: f64,
    /// Per contact body (the order given to [`Balance::new`]), per point of it: whether the
    /// point touches the ground (a foot rolling onto its toes touches with its front corners
    /// only). Points past a body's `count` are ignored.
    pub planted: &'a [[bool; MAX_POINTS]],
    /// Gravity, world, m/s² (not zero).
    pub gravity: Vector3<f64>,
    /// End-effector objectives, at most [`MAX_TASKS`] (none: `&[]`).
    pub tasks: &'a [PointTask],
}

/// One tick's output.
#[derive(Debug, Clone, Copy)]
pub struct BalanceOutput<const NV: usize> {
    /// How it ended; anything but [`BalanceStatus::Solved`] means fallback torques.
    pub status: BalanceStatus,
    /// Joint torques, velocity layout (the base's six are 0), N·m or N.
    pub torques: [f64; NV],
    /// Every group's torque vector, world axes, N·m (group order).
    pub group_torques: [[f64; 3]; MAX_GROUPS],
    /// The accelerations the QP chose (zero on fallback).
    pub accelerations: [f64; NV],
    /// Contact forces on the body, world, N, planted points in order (the first
    /// `point_count`).
    pub forces: [[f64; 3]; MAX_ALL_POINTS],
    /// Their world positions, m.
    pub points: [[f64; 3]; MAX_ALL_POINTS],
    /// Planted contact points this tick.
    pub point_count: usize,
    /// The solver's account (`None` when no solve ran).
    pub qp: Option<SolveInfo>,
    /// Centre of mass and its target, world, m.
    pub com: [f64; 3],
    /// See `com`.
    pub com_target: [f64; 3],
    /// Largest ‖f_t‖ / (μ f_n) over the points (≤ 1 within the solver's tolerance).
    pub friction_use: f64,
    /// Groups whose torque came out past the effort by the solver's tolerance and were scaled
    /// back to it.
    pub limited: u32,
    /// Failed ticks in a row (0 when solved).
    pub failures_in_a_row: u32,
    /// QP solves this tick: 1, or 2 or 3 when a group whose limit was left out came out past
    /// its effort and the QP was solved again with it ([`BalanceSettings::screen_fraction`]).
    pub solves: u32,
    /// Interior-point iterations of all this tick's solves.
    pub iterations: u32,
    /// Joint groups whose torque limits were left out of the tick's final QP (their torques
    /// within their efforts, checked after the solve).
    pub limits_left_out: u32,
    /// No-slip rows left out as dependent on the ones before (see the module docs).
    pub dependent_rows: u32,
    /// Largest gap between a left-out row's right-hand side and the one the kept rows imply,
    /// in the row's unit (m/s² or rad/s²): rounding when small.
    pub slip_inconsistency: f64,
    /// Each task's point in the world this tick, m (task order; the first `tasks.len()`).
    pub task_points: [[f64; 3]; MAX_TASKS],
}

impl<const NV: usize> BalanceOutput<NV> {
    fn empty(status: BalanceStatus) -> Self {
        Self {
            status,
            torques: [0.0; NV],
            group_torques: [[0.0; 3]; MAX_GROUPS],
            accelerations: [0.0; NV],
            forces: [[0.0; 3]; MAX_ALL_POINTS],
            points: [[0.0; 3]; MAX_ALL_POINTS],
            point_count: 0,
            qp: None,
            com: [0.0; 3],
            com_target: [0.0; 3],
            friction_use: 0.0,
            limited: 0,
            failures_in_a_row: 0,
            solves: 0,
            iterations: 0,
            limits_left_out: 0,
            dependent_rows: 0,
            slip_inconsistency: 0.0,
            task_points: [[0.0; 3]; MAX_TASKS],
        }
    }
}

/// Step of the central difference that gives J̇ q̇, s.
const JDOT_STEP_S: f64 = 1e-5;

/// A no-slip row whose remainder, after the rows before it are taken out, is below this
/// fraction of its norm depends on them and is left out (see the module docs).
pub const DEPENDENT_ROW: f64 = 1e-8;

/// How far from one line a body's touching points must be for its own six no-slip rows to
/// stand for theirs ([`spans_plane`]): a foot's corners are at 0.46.
const PLANE_AREA: f64 = 1e-3;

/// Most independent no-slip rows (six per body).
const MAX_SLIP_ROWS: usize = 6 * MAX_CONTACT_BODIES;

/// The balance controller: a tree, its contact bodies and joint groups, the settings, the
/// solver and every buffer. See the module docs.
pub struct Balance<const NV: usize, const NX: usize, const NR: usize> {
    tree: Tree<NV>,
    contacts: [ContactBody; MAX_CONTACT_BODIES],
    contact_count: usize,
    groups: [JointGroup; MAX_GROUPS],
    group_count: usize,
    settings: BalanceSettings,
    kin: TreeKinematics<NV>,
    kin_step: TreeKinematics<NV>,
    mass: SMatrix<f64, NV, NV>,
    body_jacobians: [SMatrix<f64, 6, NV>; MAX_CONTACT_BODIES],
    body_bias: [SVector<f64, 6>; MAX_CONTACT_BODIES],
    point_jacobians: [SMatrix<f64, 3, NV>; MAX_ALL_POINTS],
    task_jacobians: [SMatrix<f64, 3, NV>; MAX_TASKS],
    /// The independent no-slip rows (orthonormal) and their right-hand sides.
    slip_rows: [SVector<f64, NV>; MAX_SLIP_ROWS],
    slip_rhs: [f64; MAX_SLIP_ROWS],
    p: [[f64; NX]; NX],
    q: [f64; NX],
    a: [[f64; NX]; NR],
    b: [f64; NR],
    solver: Solver<NX, NR>,
    /// The planted set and the groups whose limits were in the QP at the last solve (bits),
    /// for the warm start.
    last_planted: Option<(u32, u64)>,
    /// Each group's torque norm at the last solved tick (`None` after a failed one), for
    /// leaving limits out ([`BalanceSettings::screen_fraction`]).
    screen_norms: Option<[f64; MAX_GROUPS]>,
    /// The last assembled problem's size: variables, rows, cones, accelerations and forces.
    last_dims: Option<QpDims>,
    /// The last tick's output torques (solved or fallback), and its group torques.
    last_torques: [f64; NV],
    last_group_torques: [[f64; 3]; MAX_GROUPS],
    failures: u32,
}

impl<const NV: usize, const NX: usize, const NR: usize> Balance<NV, NX, NR> {
    /// The controller of `tree` (floating base) standing on `contacts`, its joints grouped as
    /// `groups`, with `settings`. Refuses what does not fit ([`BalanceError`]).
    pub fn new(
        tree: Tree<NV>,
        contacts: &[ContactBody],
        groups: &[JointGroup],
        settings: BalanceSettings,
    ) -> Result<Self, BalanceError> {
        if tree.base() != BaseKind::Floating {
            return Err(BalanceError::FixedBase);
        }
        settings.check()?;
        if contacts.is_empty() || contacts.len() > MAX_CONTACT_BODIES {
            return Err(BalanceError::Capacity("contact bodies"));
        }
        if groups.len() > MAX_GROUPS {
            return Err(BalanceError::Capacity("joint groups"));
        }
        let joints = tree.joint_count();
        for (index, c) in contacts.iter().enumerate() {
            let finite = c
                .points
                .iter()
                .take(c.count)
                .all(|p| p.iter().all(|x| x.is_finite()));
            if c.body > joints || c.count == 0 || c.count > MAX_POINTS || !finite {
                return Err(BalanceError::BadContact { index });
            }
        }
        let mut next = 0;
        let mut multi = 0;
        for (index, g) in groups.iter().enumerate() {
            let bad = Err(BalanceError::BadGroup { index });
            if g.first != next || g.count == 0 || g.count > 3 || !(g.effort > 0.0) {
                return bad;
            }
            if !g.effort.is_finite() {
                return bad;
            }
            if g.count > 1 {
                multi += 1;
                for k in g.first..g.first + g.count {
                    if tree.joint_kind(k) != Some(JointType::Revolute) {
                        return bad;
                    }
                    if k > g.first && tree.parent_body(k) != Some(k) {
                        return bad;
                    }
                }
            }
            next = g.first + g.count;
        }
        if next != joints {
            return Err(BalanceError::BadGroup {
                index: groups.len(),
            });
        }
        let points: usize = contacts.iter().map(|c| c.count).sum();
        let singles = groups.len() - multi;
        if tree.nv() + 3 * points + multi > NX {
            return Err(BalanceError::Capacity("QP variables (NX)"));
        }
        if 6 + 6 * contacts.len() + 4 * points + 2 * singles + 6 * multi > NR {
            return Err(BalanceError::Capacity("QP rows (NR)"));
        }
        let mut contact_array = [ContactBody {
            body: 0,
            points: [[0.0; 3]; MAX_POINTS],
            count: 0,
        }; MAX_CONTACT_BODIES];
        for (slot, c) in contact_array.iter_mut().zip(contacts) {
            *slot = *c;
        }
        let mut group_array = [JointGroup {
            first: 0,
            count: 0,
            effort: 0.0,
        }; MAX_GROUPS];
        for (slot, g) in group_array.iter_mut().zip(groups) {
            *slot = *g;
        }
        Ok(Self {
            tree,
            contacts: contact_array,
            contact_count: contacts.len(),
            groups: group_array,
            group_count: groups.len(),
            settings,
            kin: TreeKinematics::default(),
            kin_step: TreeKinematics::default(),
            mass: SMatrix::zeros(),
            body_jacobians: [SMatrix::zeros(); MAX_CONTACT_BODIES],
            body_bias: [SVector::zeros(); MAX_CONTACT_BODIES],
            point_jacobians: [SMatrix::zeros(); MAX_ALL_POINTS],
            task_jacobians: [SMatrix::zeros(); MAX_TASKS],
            slip_rows: [SVector::zeros(); MAX_SLIP_ROWS],
            slip_rhs: [0.0; MAX_SLIP_ROWS],
            p: [[0.0; NX]; NX],
            q: [0.0; NX],
            a: [[0.0; NX]; NR],
            b: [0.0; NR],
            solver: Solver::new(settings.qp),
            last_planted: None,
            screen_norms: None,
            last_dims: None,
            last_torques: [0.0; NV],
            last_group_torques: [[0.0; 3]; MAX_GROUPS],
            failures: 0,
        })
    }

    /// The tree.
    pub fn tree(&self) -> &Tree<NV> {
        &self.tree
    }

    /// The settings.
    pub fn settings(&self) -> &BalanceSettings {
        &self.settings
    }

    /// The joint groups.
    pub fn groups(&self) -> &[JointGroup] {
        self.groups.get(..self.group_count).unwrap_or(&[])
    }

    /// The contact bodies.
    pub fn contacts(&self) -> &[ContactBody] {
        self.contacts.get(..self.contact_count).unwrap_or(&[])
    }

    /// The QP of the last tick that got as far as assembling one, and the solver's answer to it
    /// (its `x`, whatever its status), for checking it offline against another solver. The
    /// variables are the accelerations (`dims.accelerations`), the forces (`dims.forces`, three
    /// per touching point), then the joint groups' auxiliaries. `None` before the first such
    /// tick.
    pub fn last_qp(&self) -> Option<(Problem<'_>, QpDims, &[f64])> {
        let d = self.last_dims?;
        let problem = Problem {
            p: self.p.as_flattened().get(..d.variables * d.variables)?,
            q: self.q.get(..d.variables)?,
            a: self.a.as_flattened().get(..d.rows * d.variables)?,
            b: self.b.get(..d.rows)?,
            cones: d.cones,
        };
        Some((problem, d, self.solver.x()))
    }

    /// One control tick: the torques for the state in `input` (see the module docs).
    pub fn tick(&mut self, input: &BalanceInput<'_, NV>) -> BalanceOutput<NV> {
        let mut out = BalanceOutput::empty(BalanceStatus::Solved);
        match self.solve_tick(input, &mut out) {
            Ok(()) => {
                self.failures = 0;
                self.last_torques = out.torques;
                self.last_group_torques = out.group_torques;
                out
            }
            Err(status) => {
                self.failures = self.failures.saturating_add(1);
                let decay = self.settings.fallback_decay;
                for t in self.last_torques.iter_mut() {
                    *t *= decay;
                }
                for g in self.last_group_torques.iter_mut() {
                    for t in g.iter_mut() {
                        *t *= decay;
                    }
                }
                let mut fallback = BalanceOutput::empty(status);
                fallback.torques = self.last_torques;
                fallback.group_torques = self.last_group_torques;
                fallback.qp = out.qp;
                fallback.com = out.com;
                fallback.com_target = out.com_target;
                fallback.failures_in_a_row = self.failures;
                fallback.dependent_rows = out.dependent_rows;
                fallback.slip_inconsistency = out.slip_inconsistency;
                fallback
            }
        }
    }

    fn check_input(&self, input: &BalanceInput<'_, NV>) -> Result<(), BalanceStatus> {
        let field = |f| Err(BalanceStatus::Input(f));
        let g = input.gravity;
        if !(g.iter().all(|x| x.is_finite()) && g.norm() > 0.0) {
            return field(BalanceInputField::Gravity);
        }
        let nv = self.tree.nv();
        if !input.v.iter().take(nv).all(|x| x.is_finite()) {
            return field(BalanceInputField::Velocity);
        }
        let joints = self.tree.joint_count();
        if !input.q_target.iter().take(joints).all(|x| x.is_finite()) {
            return field(BalanceInputField::Target);
        }
        if !input.upright_target.coords.iter().all(|x| x.is_finite()) {
            return field(BalanceInputField::UprightTarget);
        }
        if !input.com_height_m.is_finite() {
            return field(BalanceInputField::ComHeight);
        }
        if input.planted.len() != self.contact_count {
            return field(BalanceInputField::Planted);
        }
        let task_ok = |t: &PointTask| {
            t.body <= joints
                && t.point
                    .iter()
                    .chain(&t.target)
                    .chain(&t.target_velocity)
                    .chain(&t.target_acceleration)
                    .all(|x| x.is_finite())
        };
        if input.tasks.len() > MAX_TASKS || !input.tasks.iter().all(task_ok) {
            return field(BalanceInputField::Tasks);
        }
        Ok(())
    }

    fn solve_tick(
        &mut self,
        input: &BalanceInput<'_, NV>,
        out: &mut BalanceOutput<NV>,
    ) -> Result<(), BalanceStatus> {
        self.check_input(input)?;
        let s = self.settings;
        let nv = self.tree.nv();
        let joints = self.tree.joint_count();
        let gravity = input.gravity;
        let up = -gravity / gravity.norm();
        let (t1, t2) = tangents(&up);
        let model = BalanceStatus::Model;

        self.tree
            .kinematics_into(&mut self.kin, input.base_pose, input.q)
            .map_err(model)?;
        self.kin.mass_matrix_into(&mut self.mass).map_err(model)?;
        let h = self
            .kin
            .inverse_dynamics(input.v, &[0.0; NV], &gravity)
            .map_err(model)?;
        let (total_mass, com) = self.kin.center_of_mass().map_err(model)?;
        let v = SVector::<f64, NV>::from(*input.v);
        let base = self
            .kin
            .body_pose(0)
            .ok_or(model(TreeEvalError::OutOfRange))?;
        let r_b = base.rotation.to_rotation_matrix().into_inner();
        let p_b = base.translation.vector;
        let mut momentum = [0.0; 6];
        for (i, m) in momentum.iter_mut().enumerate() {
            *m = (0..nv).map(|c| self.mass[(i, c)] * v[c]).sum();
        }
        let linear = r_b * Vector3::new(momentum[0], momentum[1], momentum[2]);
        let angular_o = r_b * Vector3::new(momentum[3], momentum[4], momentum[5]);
        let com_velocity = linear / total_mass;
        let angular = angular_o - (com - p_b).cross(&linear);
        out.com = com.into();

        // The touching points, their bodies' Jacobians and J̇ q̇.
        let identity = Placement::from_xyz_rpy([0.0; 3], [0.0; 3]);
        let mut planted_bits = 0u32;
        let mut bodies = 0;
        let mut points = 0;
        let mut point_sum = Vector3::zeros();
        // Per touching point: its body's slot and its offset from the body's origin (world).
        let mut point_body = [0usize; MAX_ALL_POINTS];
        let mut point_offset = [Vector3::<f64>::zeros(); MAX_ALL_POINTS];
        let mut body_index = [0usize; MAX_CONTACT_BODIES];
        let mut bit = 0;
        for (ci, c) in self.contacts.iter().take(self.contact_count).enumerate() {
            let touching = input
                .planted
                .get(ci)
                .copied()
                .unwrap_or([false; MAX_POINTS]);
            if !touching.iter().take(c.count).any(|t| *t) {
                bit += c.count;
                continue;
            }
            let jac = self.kin.frame_jacobian(c.body, &identity).map_err(model)?;
            let pose = self
                .kin
                .body_pose(c.body)
                .ok_or(model(TreeEvalError::OutOfRange))?;
            for (p, _) in c
                .points
                .iter()
                .zip(touching.iter())
                .take(c.count)
                .filter(|(_, t)| **t)
            {
                let world = pose * nalgebra::Point3::new(p[0], p[1], p[2]);
                let d = world.coords - pose.translation.vector;
                let jp = self
                    .point_jacobians
                    .get_mut(points)
                    .ok_or(BalanceStatus::Capacity)?;
                *jp = carried(&jac, &d);
                if let Some(slot) = out.points.get_mut(points) {
                    *slot = world.coords.into();
                }
                if let (Some(b), Some(o)) =
                    (point_body.get_mut(points), point_offset.get_mut(points))
                {
                    *b = bodies;
                    *o = d;
                }
                point_sum += world.coords;
                points += 1;
            }
            for (k, t) in touching.iter().take(c.count).enumerate() {
                if *t && bit + k < 32 {
                    planted_bits |= 1 << (bit + k);
                }
            }
            bit += c.count;
            if let Some(slot) = self.body_jacobians.get_mut(bodies) {
                *slot = jac;
            }
            if let Some(slot) = body_index.get_mut(bodies) {
                *slot = ci;
            }
            bodies += 1;
        }
        out.point_count = points;
        // The tasks' points, their Jacobians J_p = J_lin − [d]× J_ang and velocities.
        let tasks = input.tasks;
        let mut task_bias = [Vector3::<f64>::zeros(); MAX_TASKS];
        for (k, t) in tasks.iter().enumerate() {
            let (jp, world) = point_jacobian(&self.kin, t.body, t.point).map_err(model)?;
            if let (Some(slot), Some(p)) =
                (self.task_jacobians.get_mut(k), out.task_points.get_mut(k))
            {
                *slot = jp;
                *p = world.into();
            }
        }
        // J̇ q̇ of every body with a touching point and J̇_p q̇ of every task's point, by a
        // central difference along the motion.
        if bodies > 0 || !tasks.is_empty() {
            for bias in self.body_bias.iter_mut().take(bodies) {
                *bias = SVector::zeros();
            }
            for sign in [1.0, -1.0] {
                let step = sign * JDOT_STEP_S;
                let mut q_step = *input.q;
                for (k, qk) in q_step.iter_mut().enumerate().take(joints) {
                    *qk += step * v[6 + k];
                }
                let lin = Vector3::new(v[0], v[1], v[2]);
                let ang = Vector3::new(v[3], v[4], v[5]);
                let turned = base.rotation * UnitQuaternion::from_scaled_axis(ang * step);
                let moved = nalgebra::Translation3::from(p_b + r_b * lin * step);
                let pose = Isometry3::from_parts(moved, turned);
                self.tree
                    .kinematics_into(&mut self.kin_step, &pose, &q_step)
                    .map_err(model)?;
                for (bias, ci) in self
                    .body_bias
                    .iter_mut()
                    .zip(body_index.iter())
                    .take(bodies)
                {
                    let body = self.contacts.get(*ci).map_or(0, |c| c.body);
                    let jac = self
                        .kin_step
                        .frame_jacobian(body, &identity)
                        .map_err(model)?;
                    *bias += jac * v * (sign / (2.0 * JDOT_STEP_S));
                }
                for (bias, t) in task_bias.iter_mut().zip(tasks) {
                    let (jp, _) = point_jacobian(&self.kin_step, t.body, t.point).map_err(model)?;
                    *bias += jp * v * (sign / (2.0 * JDOT_STEP_S));
                }
            }
        }

        // The no-slip rows, reduced to independent ones (see the module docs): per touching
        // body, its own six J a = t (t = −J̇ q̇ − k_v J q̇) when its touching points span a
        // plane (then those and the points' rows hold the same motion), else each touching
        // point's three J_p a = t_lin + t_ang × d (t carried to the point).
        let mut slip = Slip {
            rows: &mut self.slip_rows,
            rhs: &mut self.slip_rhs,
            kept: 0,
        };
        for slot in 0..bodies {
            let (Some(jac), Some(bias)) = (self.body_jacobians.get(slot), self.body_bias.get(slot))
            else {
                return Err(BalanceStatus::Capacity);
            };
            let t = -bias - jac * v * s.contact_kv;
            let offsets = (0..points)
                .filter(|pi| point_body.get(*pi) == Some(&slot))
                .filter_map(|pi| point_offset.get(pi).copied());
            if spans_plane(offsets) {
                for r in 0..6 {
                    slip.add(jac.row(r).transpose(), t[r], out)?;
                }
                continue;
            }
            for pi in (0..points).filter(|pi| point_body.get(*pi) == Some(&slot)) {
                let (Some(jp), Some(&d)) = (self.point_jacobians.get(pi), point_offset.get(pi))
                else {
                    return Err(BalanceStatus::Capacity);
                };
                let target =
                    Vector3::new(t[0], t[1], t[2]) + Vector3::new(t[3], t[4], t[5]).cross(&d);
                for r3 in 0..3 {
                    slip.add(jp.row(r3).transpose(), target[r3], out)?;
                }
            }
        }
        let kept = slip.kept;

        // The multi-axis groups' torque maps T = S (SᵀS)⁻¹ (3 × count), world axes.
        let mut maps = [Matrix3::<f64>::zeros(); MAX_GROUPS];
        for (gi, g) in self.groups.iter().take(self.group_count).enumerate() {
            let axis = |k: usize| self.kin.joint_axis(k).unwrap_or_else(Vector3::zeros);
            let map = match g.count {
                1 => Some(Matrix3::from_columns(&[
                    axis(g.first),
                    Vector3::zeros(),
                    Vector3::zeros(),
                ])),
                2 => {
                    let (s0, s1) = (axis(g.first), axis(g.first + 1));
                    let gram = Matrix2::new(s0.dot(&s0), s0.dot(&s1), s1.dot(&s0), s1.dot(&s1));
                    gram.try_inverse()
                        .filter(|_| gram.determinant() > 1e-6)
                        .map(|inv| {
                            let c0 = s0 * inv[(0, 0)] + s1 * inv[(1, 0)];
                            let c1 = s0 * inv[(0, 1)] + s1 * inv[(1, 1)];
                            Matrix3::from_columns(&[c0, c1, Vector3::zeros()])
                        })
                }
                _ => {
                    let sm = Matrix3::from_columns(&[
                        axis(g.first),
                        axis(g.first + 1),
                        axis(g.first + 2),
                    ]);
                    // S (SᵀS)⁻¹ = S⁻ᵀ for a square S.
                    sm.try_inverse()
                        .filter(|_| sm.determinant().abs() > 1e-3)
                        .map(|inv| inv.transpose())
                }
            };
            let map = map.ok_or(BalanceStatus::Singular { group: gi })?;
            if let Some(slot) = maps.get_mut(gi) {
                *slot = map;
            }
        }

        // The groups whose limits go into the QP: all, unless the last solved tick's torque
        // was below `screen_fraction` of the effort (see the module docs, "Limits left out").
        let mut include = [true; MAX_GROUPS];
        if s.screen_fraction > 0.0
            && let Some(norms) = &self.screen_norms
        {
            for ((inc, g), norm) in include.iter_mut().zip(&self.groups).zip(norms) {
                *inc = *norm >= s.screen_fraction * g.effort;
            }
        }
        let mut solves = 0u32;
        loop {
            let in_set = include;
            let in_qp = |gi: usize| in_set.get(gi).copied().unwrap_or(true);
            let multi = (0..self.group_count)
                .filter(|&gi| in_qp(gi) && self.groups.get(gi).is_some_and(|g| g.count > 1))
                .count();
            let singles = (0..self.group_count)
                .filter(|&gi| in_qp(gi) && self.groups.get(gi).is_some_and(|g| g.count == 1))
                .count();
            let include_bits = (0..self.group_count.min(64))
                .filter(|&gi| in_qp(gi))
                .fold(0u64, |bits, gi| bits | (1 << gi));
            let nf = 3 * points;
            let nx = nv + nf + multi;
            let zero_rows = 6 + kept;
            let nonneg_rows = points + 2 * singles;
            let soc = points + 2 * multi;
            let rows = zero_rows + nonneg_rows + 3 * soc;
            if nx > NX || rows > NR {
                return Err(BalanceStatus::Capacity);
            }
            let f0 = nv;
            let r0 = nv + nf;
            {
                let p = self.p.as_flattened_mut();
                for x in p.iter_mut().take(nx * nx) {
                    *x = 0.0;
                }
                let a = self.a.as_flattened_mut();
                for x in a.iter_mut().take(rows * nx) {
                    *x = 0.0;
                }
            }
            for x in self.q.iter_mut().take(nx) {
                *x = 0.0;
            }
            for x in self.b.iter_mut().take(rows) {
                *x = 0.0;
            }
            let p = self.p.as_flattened_mut();
            let qv = &mut self.q;
            let add_p = |p: &mut [f64], i: usize, j: usize, w: f64| {
                if let Some(x) = p.get_mut(i * nx + j) {
                    *x += w;
                }
            };
            let add_q = |qv: &mut [f64; NX], i: usize, w: f64| {
                if let Some(x) = qv.get_mut(i) {
                    *x += w;
                }
            };

            // Objectives on a single coordinate: w (x_i − d)².
            let single = |p: &mut [f64], i: usize, d: f64, w: f64, qv: &mut [f64; NX]| {
                add_p(p, i, i, w);
                add_q(qv, i, -w * d);
            };
            for k in 0..joints {
                let i = 6 + k;
                let d = s.pose_kp * (input.q_target[k] - input.q[k]) - s.pose_kd * v[i];
                single(p, i, d, s.pose_weight, qv);
            }
            let error = (base.rotation.inverse() * input.upright_target).scaled_axis();
            for j in 0..3 {
                let d = s.upright_kp * error[j] - s.upright_kd * v[3 + j];
                single(p, 3 + j, d, s.upright_weight, qv);
            }
            for i in 0..nv {
                single(p, i, 0.0, s.accel_weight, qv);
            }
            let force_reg = s.force_weight / (total_mass * total_mass);
            for i in f0..f0 + nf {
                single(p, i, 0.0, force_reg, qv);
            }
            // Point tasks: J_p a = ẍ* + k_p (x* − x) + k_d (ẋ* − J_p q̇) − J̇_p q̇, on the
            // accelerations.
            for (k, ((t, jp), bias)) in tasks
                .iter()
                .zip(&self.task_jacobians)
                .zip(&task_bias)
                .enumerate()
            {
                let x = Vector3::from(out.task_points.get(k).copied().unwrap_or([0.0; 3]));
                let d = Vector3::from(t.target_acceleration)
                    + (Vector3::from(t.target) - x) * s.task_kp
                    + (Vector3::from(t.target_velocity) - jp * v) * s.task_kd
                    - bias;
                for e in 0..3 {
                    let row: SVector<f64, NV> = jp.row(e).transpose();
                    let row = row.as_slice().get(..nv).unwrap_or(&[]);
                    add_row_task(p, nx, qv, 0, row, d[e], s.task_weight);
                }
            }

            // Centre of mass and angular momentum, on the forces: rows over f.
            let mut com_target = com;
            if points > 0 {
                let mean = point_sum / points as f64;
                // The support's middle: the centroid of the touching points' hull (the mean of
                // the points leans towards where corners crowd, the toes), at their mean height.
                let middle = support_centroid(out.points.get(..points).unwrap_or(&[]), &t1, &t2)
                    .map_or(mean, |c| c + up * up.dot(&mean));
                let horizontal = |x: Vector3<f64>| x - up * up.dot(&x);
                com_target = horizontal(middle) + up * (up.dot(&middle) + input.com_height_m);
                let e = com_target - com;
                let e_h = horizontal(e);
                let k_s =
                    s.com_kp * libm::sqrt(s.com_reference_m / e_h.norm().max(s.com_reference_m));
                let d_h = e_h * k_s - horizontal(com_velocity) * s.com_kd;
                let d_v = up * (s.height_kp * up.dot(&e) - s.height_kd * up.dot(&com_velocity));
                let d = d_h + d_v;
                // Σ f / m + g = d along t1, t2 (horizontal weight) and up (vertical).
                for (axis, w) in [
                    (t1, s.com_weight),
                    (t2, s.com_weight),
                    (up, s.height_weight),
                ] {
                    let target = axis.dot(&(d - gravity));
                    let mut row = [0.0; MAX_ALL_POINTS * 3];
                    for pi in 0..points {
                        for c in 0..3 {
                            if let Some(x) = row.get_mut(3 * pi + c) {
                                *x = axis[c] / total_mass;
                            }
                        }
                    }
                    add_row_task(p, nx, qv, f0, row.get(..nf).unwrap_or(&[]), target, w);
                }
                // Σ (p − x) × f = −k_L L, per world axis e: coefficients e × (p − x).
                for e in [Vector3::x(), Vector3::y(), Vector3::z()] {
                    let target = -s.momentum_kd * e.dot(&angular) / total_mass;
                    let mut row = [0.0; MAX_ALL_POINTS * 3];
                    for pi in 0..points {
                        let pw = out.points.get(pi).copied().unwrap_or([0.0; 3]);
                        let arm = Vector3::from(pw) - com;
                        let coeff = e.cross(&arm) / total_mass;
                        for c in 0..3 {
                            if let Some(x) = row.get_mut(3 * pi + c) {
                                *x = coeff[c];
                            }
                        }
                    }
                    add_row_task(
                        p,
                        nx,
                        qv,
                        f0,
                        row.get(..nf).unwrap_or(&[]),
                        target,
                        s.momentum_weight,
                    );
                }
            }
            out.com_target = com_target.into();

            // Constraints.
            let a = self.a.as_flattened_mut();
            let bv = &mut self.b;
            let rows_of = Rows {
                mass: &self.mass,
                points: self.point_jacobians.get(..points).unwrap_or(&[]),
                nv,
                f0,
            };
            let mut row = 0;
            // No slip: the independent rows.
            for (e, c) in self.slip_rows.iter().zip(self.slip_rhs.iter()).take(kept) {
                for col in 0..nv {
                    put(a, nx, row, col, e[col]);
                }
                set(bv, row, *c);
                row += 1;
            }
            // Base rows: M_b a + h_b − J_bᵀ f = 0. After the no-slip rows, which bind
            // accelerations only: the solver's range-space setup then finds the forces bound
            // by the last six equalities alone (`F = K⁻¹ E_f` has six non-zero rows), and
            // forms `FᵀF` over those.
            for i in 0..6 {
                rows_of.add(a, nx, row, i, 1.0);
                set(bv, row, -h[i]);
                row += 1;
            }
            // Minimum normal force: −up · f ≤ −f_min.
            for pi in 0..points {
                for c in 0..3 {
                    put(a, nx, row, f0 + 3 * pi + c, -up[c]);
                }
                set(bv, row, -s.min_normal_n);
                row += 1;
            }
            // One-coordinate groups: ±u ≤ effort.
            let keep = 1.0 - s.effort_margin;
            for (gi, g) in self.groups.iter().take(self.group_count).enumerate() {
                if g.count != 1 || !in_qp(gi) {
                    continue;
                }
                let i = 6 + g.first;
                for sign in [1.0, -1.0] {
                    rows_of.add(a, nx, row, i, sign);
                    set(bv, row, g.effort * keep - sign * h[i]);
                    row += 1;
                }
            }
            // Friction cones: (μ n·f, t1·f, t2·f).
            for pi in 0..points {
                for (k, axis) in [up * s.friction, t1, t2].iter().enumerate() {
                    for c in 0..3 {
                        put(a, nx, row + k, f0 + 3 * pi + c, -axis[c]);
                    }
                }
                row += 3;
            }
            // Multi-axis groups: ‖(τx, τy)‖ ≤ r, ‖(r, τz)‖ ≤ effort, τ = T u; s = b − A x.
            let mut aux = r0;
            for (gi, g) in self.groups.iter().take(self.group_count).enumerate() {
                if g.count == 1 || !in_qp(gi) {
                    continue;
                }
                let map = maps.get(gi).copied().unwrap_or_else(Matrix3::zeros);
                // Row `target` gets −τ_e's coefficients; b gets τ_e's constant Σ T[e][i] h_i.
                let tau_row = |a: &mut [f64], bv: &mut [f64; NR], target: usize, e: usize| {
                    let mut constant = 0.0;
                    for i in 0..g.count {
                        let t = map[(e, i)];
                        let vi = 6 + g.first + i;
                        rows_of.add(a, nx, target, vi, -t);
                        constant += t * h[vi];
                    }
                    set(bv, target, constant);
                };
                // Cone A: (r, τx, τy).
                put(a, nx, row, aux, -1.0);
                tau_row(a, bv, row + 1, 0);
                tau_row(a, bv, row + 2, 1);
                row += 3;
                // Cone B: (effort, r, τz).
                set(bv, row, g.effort * keep);
                put(a, nx, row + 1, aux, -1.0);
                tau_row(a, bv, row + 2, 2);
                row += 3;
                aux += 1;
            }

            let problem = Problem {
                p: self.p.as_flattened().get(..nx * nx).unwrap_or(&[]),
                q: self.q.get(..nx).unwrap_or(&[]),
                a: self.a.as_flattened().get(..rows * nx).unwrap_or(&[]),
                b: self.b.get(..rows).unwrap_or(&[]),
                cones: Cones {
                    zero: zero_rows,
                    nonneg: nonneg_rows,
                    soc3: soc,
                },
            };
            self.last_dims = Some(QpDims {
                variables: nx,
                rows,
                cones: problem.cones,
                accelerations: nv,
                forces: nf,
            });
            let warm = if self.last_planted == Some((planted_bits, include_bits)) {
                WarmStart::Previous
            } else {
                WarmStart::Cold
            };
            let info = self
                .solver
                .solve(&problem, warm)
                .map_err(BalanceStatus::Refused)?;
            solves += 1;
            out.solves = solves;
            out.iterations = out.iterations.saturating_add(info.iterations);
            out.qp = Some(info);
            if info.status != Status::Solved {
                self.last_planted = None;
                self.screen_norms = None;
                return Err(BalanceStatus::NotSolved(info.status));
            }
            self.last_planted = Some((planted_bits, include_bits));
            let x = self.solver.x();
            let xs = |i: usize| x.get(i).copied().unwrap_or(0.0);

            // The torques u = M_j a + h_j − Σ J_p,jᵀ f, the forces, the group vectors.
            for i in 0..nv {
                out.accelerations[i] = xs(i);
            }
            for i in 6..nv {
                out.torques[i] = h[i] + rows_of.dot(i, x);
            }
            let mut friction_use: f64 = 0.0;
            for pi in 0..points {
                let f = Vector3::new(xs(f0 + 3 * pi), xs(f0 + 3 * pi + 1), xs(f0 + 3 * pi + 2));
                if let Some(slot) = out.forces.get_mut(pi) {
                    *slot = f.into();
                }
                let normal = up.dot(&f);
                let tangential = (f - up * normal).norm();
                if normal > 0.0 {
                    friction_use = friction_use.max(tangential / (s.friction * normal));
                }
            }
            out.friction_use = friction_use;
            // A group left out that came out past its effort: solved again with its limit in
            // (the third solve, if it comes to that, with every limit in).
            let mut again = false;
            let mut norms = [0.0; MAX_GROUPS];
            let mut taus = [Vector3::<f64>::zeros(); MAX_GROUPS];
            for (gi, g) in self.groups.iter().take(self.group_count).enumerate() {
                let map = maps.get(gi).copied().unwrap_or_else(Matrix3::zeros);
                let mut tau = Vector3::zeros();
                for i in 0..g.count {
                    let u = out.torques.get(6 + g.first + i).copied().unwrap_or(0.0);
                    tau += map.column(i) * u;
                }
                let norm = tau.norm();
                if let (Some(slot), Some(t)) = (norms.get_mut(gi), taus.get_mut(gi)) {
                    *slot = norm;
                    *t = tau;
                }
                if !in_qp(gi) && !(norm <= g.effort * keep) {
                    if let Some(inc) = include.get_mut(gi) {
                        *inc = true;
                    }
                    again = true;
                }
            }
            if again {
                if solves >= 2 {
                    // A second round still short: every limit in, so that a tick solves at
                    // most three QPs.
                    include = [true; MAX_GROUPS];
                }
                continue;
            }
            out.limits_left_out = (0..self.group_count).filter(|&gi| !in_qp(gi)).count() as u32;
            self.screen_norms = Some(norms);
            for (gi, ((g, mut tau), norm)) in self
                .groups
                .iter()
                .zip(taus)
                .zip(norms)
                .take(self.group_count)
                .enumerate()
            {
                if norm > g.effort {
                    // The solver's tolerance past the margin: scaled back, and counted.
                    let scale = g.effort * keep / norm;
                    tau *= scale;
                    for i in 0..g.count {
                        if let Some(u) = out.torques.get_mut(6 + g.first + i) {
                            *u *= scale;
                        }
                    }
                    out.limited += 1;
                }
                if let Some(slot) = out.group_torques.get_mut(gi) {
                    *slot = tau.into();
                }
            }
            let finite = out.torques.iter().all(|t| t.is_finite())
                && out.group_torques.iter().flatten().all(|t| t.is_finite());
            if !finite {
                self.screen_norms = None;
                return Err(BalanceStatus::NotSolved(Status::Stalled));
            }
            return Ok(());
        }
    }
}

/// Writes `x` at row `r`, column `c` of the row-major `a` with `nx` columns.
fn put(a: &mut [f64], nx: usize, r: usize, c: usize, x: f64) {
    if let Some(slot) = a.get_mut(r * nx + c) {
        *slot = x;
    }
}

/// Writes `x` at `b[r]`.
fn set<const NR: usize>(b: &mut [f64; NR], r: usize, x: f64) {
    if let Some(slot) = b.get_mut(r) {
        *slot = x;
    }
}

/// The equations of motion's rows as coefficients on the QP's (a, f): row i is
/// `M_i a − Σ_p J_p,iᵀ f_p` (plus `h_i`, kept apart).
struct Rows<'a, const NV: usize> {
    mass: &'a SMatrix<f64, NV, NV>,
    points: &'a [SMatrix<f64, 3, NV>],
    nv: usize,
    f0: usize,
}

impl<const NV: usize> Rows<'_, NV> {
    /// Adds `scale` × row `i` to row `r` of `a` (`nx` columns).
    fn add(&self, a: &mut [f64], nx: usize, r: usize, i: usize, scale: f64) {
        let base = r * nx;
        for c in 0..self.nv {
            if let Some(slot) = a.get_mut(base + c) {
                *slot += scale * self.mass[(i, c)];
            }
        }
        for (pi, jp) in self.points.iter().enumerate() {
            for e in 0..3 {
                if let Some(slot) = a.get_mut(base + self.f0 + 3 * pi + e) {
                    *slot -= scale * jp[(e, i)];
                }
            }
        }
    }

    /// Row `i` times the solution `x`.
    fn dot(&self, i: usize, x: &[f64]) -> f64 {
        let at = |c: usize| x.get(c).copied().unwrap_or(0.0);
        let mut sum = 0.0;
        for c in 0..self.nv {
            sum += self.mass[(i, c)] * at(c);
        }
        for (pi, jp) in self.points.iter().enumerate() {
            for e in 0..3 {
                sum -= jp[(e, i)] * at(self.f0 + 3 * pi + e);
            }
        }
        sum
    }
}

/// Adds the task w (row · f − target)² on the force variables starting at `f0`, into the
/// row-major `p` with `nx` columns and `qv`.
fn add_row_task<const NX: usize>(
    p: &mut [f64],
    nx: usize,
    qv: &mut [f64; NX],
    f0: usize,
    row: &[f64],
    target: f64,
    w: f64,
) {
    for (i, ri) in row.iter().enumerate() {
        if *ri == 0.0 {
            continue;
        }
        // w (rᵢ rⱼ), not (w rᵢ) rⱼ: the same product for (i, j) and (j, i), so that `P` is
        // symmetric to the bit (the recorded QP is one triangle of it). Where rⱼ is zero the
        // product is a zero, which leaves the entry as it was (never −0: each starts at +0).
        let start = (f0 + i) * nx + f0;
        if let Some(prow) = p.get_mut(start..start + row.len()) {
            for (x, rj) in prow.iter_mut().zip(row) {
                *x += w * (ri * rj);
            }
        }
        if let Some(x) = qv.get_mut(f0 + i) {
            *x -= w * target * ri;
        }
    }
}

/// Two unit vectors perpendicular to the unit `up` and to each other (t1 × t2 = up).
fn tangents(up: &Vector3<f64>) -> (Vector3<f64>, Vector3<f64>) {
    let pick = if up.x.abs() < 0.6 {
        Vector3::x()
    } else {
        Vector3::y()
    };
    let t1 = (pick - up * up.dot(&pick)).normalize();
    let t2 = up.cross(&t1);
    (t1, t2)
}

/// Intrinsic Euler angles `(α, β, γ)` of the rotation `r` about the coordinate axes `order`
/// (three different indices 0 = x, 1 = y, 2 = z): `r = Rot(e_i, α) Rot(e_j, β) Rot(e_k, γ)`,
/// with `β ∈ [−π/2, π/2]`. At `|β| = π/2` (gimbal lock) `α + γ` (or `α − γ`) is all that is
/// defined; the split returned then puts it in `α`. Returns `None` for repeated axes.
pub fn euler_angles(r: &Matrix3<f64>, order: [usize; 3]) -> Option<[f64; 3]> {
    let [i, j, k] = order;
    if i > 2 || j > 2 || k > 2 || i == j || j == k || i == k {
        return None;
    }
    // +1 for a cyclic order (xyz, yzx, zxy), −1 otherwise.
    let s = if (i + 1) % 3 == j { 1.0 } else { -1.0 };
    let sin_b = (s * r[(i, k)]).clamp(-1.0, 1.0);
    let beta = libm::asin(sin_b);
    let (alpha, gamma) = if sin_b.abs() < 1.0 - 1e-12 {
        (
            libm::atan2(-s * r[(j, k)], r[(k, k)]),
            libm::atan2(-s * r[(i, j)], r[(i, i)]),
        )
    } else {
        // Gimbal lock: γ = 0, α from the rows that remain.
        (libm::atan2(s * r[(k, j)], r[(j, j)]), 0.0)
    };
    Some([alpha, beta, gamma])
}

/// The rates of the Euler angles `angles` (order `order`, as [`euler_angles`]) that give the
/// relative angular velocity `omega` (in the parent's axes): solves
/// `ω = e_i α̇ + Rot(e_i, α) e_j β̇ + Rot(e_i, α) Rot(e_j, β) e_k γ̇`. `None` at (near) gimbal
/// lock, `|cos β| < 1e-6`.
pub fn euler_rates(angles: [f64; 3], order: [usize; 3], omega: &Vector3<f64>) -> Option<[f64; 3]> {
    let [i, j, k] = order;
    let axis = |n: usize| {
        let mut e = Vector3::zeros();
        if let Some(x) = e.get_mut(n) {
            *x = 1.0;
        }
        e
    };
    let (ei, ej, ek) = (axis(i), axis(j), axis(k));
    let r1 = nalgebra::Rotation3::from_axis_angle(&nalgebra::Unit::new_unchecked(ei), angles[0]);
    let r2 = nalgebra::Rotation3::from_axis_angle(&nalgebra::Unit::new_unchecked(ej), angles[1]);
    let columns = Matrix3::from_columns(&[ei, r1 * ej, r1 * (r2 * ek)]);
    if libm::cos(angles[1]).abs() < 1e-6 {
        return None;
    }
    let rates = columns.try_inverse()? * omega;
    Some([rates[0], rates[1], rates[2]])
}

impl<const NV: usize, const NX: usize, const NR: usize>
    crate::controller::Controller<BalanceInput<'_, NV>> for Balance<NV, NX, NR>
{
    type Command = BalanceOutput<NV>;
    type Error = core::convert::Infallible;

    fn tick(&mut self, input: &BalanceInput<'_, NV>) -> Result<BalanceOutput<NV>, Self::Error> {
        Ok(Balance::tick(self, input))
    }

    /// Groups scaled back to their effort; anything but a solved QP is a fallback (the last
    /// torques damped).
    fn limits(command: &BalanceOutput<NV>) -> crate::controller::Limits {
        crate::controller::Limits {
            torque_limited: command.limited,
            fallback: command.status != BalanceStatus::Solved,
            ..Default::default()
        }
    }
}

/// A contact body (a foot, its toes) counts as planted, on the ground, while the plant measured
/// more than this normal force on it, N.
pub const PLANTED_N: f64 = 1.0;

pub mod contact;
pub mod humanoid;
pub mod legged;
pub mod step;
#[cfg(test)]
mod tests;

/// The area centroid of the convex hull of `points` projected on the plane of `t1`, `t2` (in
/// that plane, through the origin), or `None` when the hull has no area (one point, or all on
/// a line). Never allocates: at most [`MAX_ALL_POINTS`] points are read.
fn support_centroid(
    points: &[[f64; 3]],
    t1: &Vector3<f64>,
    t2: &Vector3<f64>,
) -> Option<Vector3<f64>> {
    let mut flat = [[0.0f64; 2]; MAX_ALL_POINTS];
    let mut n = 0;
    for (slot, p) in flat.iter_mut().zip(points) {
        let p = Vector3::new(p[0], p[1], p[2]);
        *slot = [t1.dot(&p), t2.dot(&p)];
        n += 1;
    }
    let flat = flat.get_mut(..n)?;
    // Insertion sort by (a, b): at most 32 points.
    for i in 1..flat.len() {
        let mut j = i;
        while j > 0 {
            let (Some(&a), Some(&b)) = (flat.get(j - 1), flat.get(j)) else {
                break;
            };
            if (a[0], a[1]) <= (b[0], b[1]) {
                break;
            }
            flat.swap(j - 1, j);
            j -= 1;
        }
    }
    let cross = |o: [f64; 2], a: [f64; 2], b: [f64; 2]| {
        (a[0] - o[0]) * (b[1] - o[1]) - (a[1] - o[1]) * (b[0] - o[0])
    };
    // Andrew's monotone chain, counter-clockwise.
    let mut hull = [[0.0f64; 2]; 2 * MAX_ALL_POINTS + 1];
    let mut k = 0usize;
    for pass in 0..2 {
        let start = k;
        for i in 0..flat.len() {
            let q = if pass == 0 {
                flat.get(i)
            } else {
                flat.get(flat.len() - 1 - i)
            };
            let Some(&q) = q else { continue };
            while k >= start + 2 {
                let (Some(&a), Some(&b)) = (hull.get(k - 2), hull.get(k - 1)) else {
                    break;
                };
                if cross(a, b, q) > 0.0 {
                    break;
                }
                k -= 1;
            }
            if let Some(slot) = hull.get_mut(k) {
                *slot = q;
                k += 1;
            }
        }
        k = k.saturating_sub(1);
    }
    let hull = hull.get(..k)?;
    let (mut area2, mut ca, mut cb) = (0.0, 0.0, 0.0);
    for (i, a) in hull.iter().enumerate() {
        let b = hull.get((i + 1) % hull.len())?;
        let c = a[0] * b[1] - b[0] * a[1];
        area2 += c;
        ca += (a[0] + b[0]) * c;
        cb += (a[1] + b[1]) * c;
    }
    // No area to speak of (below a square millimetre): a point or a line.
    if !(area2 > 2e-6) {
        return None;
    }
    let (a, b) = (ca / (3.0 * area2), cb / (3.0 * area2));
    Some(t1 * a + t2 * b)
}

/// The Jacobian `J_p = J_lin − [d]× J_ang` of `point` (body frame) on `body` and the point in
/// the world.
fn point_jacobian<const NV: usize>(
    kin: &TreeKinematics<NV>,
    body: usize,
    point: [f64; 3],
) -> Result<(SMatrix<f64, 3, NV>, Vector3<f64>), TreeEvalError> {
    let identity = Placement::from_xyz_rpy([0.0; 3], [0.0; 3]);
    let jac = kin.frame_jacobian(body, &identity)?;
    let pose = kin.body_pose(body).ok_or(TreeEvalError::OutOfRange)?;
    let world = pose * nalgebra::Point3::from(point);
    let d = world.coords - pose.translation.vector;
    Ok((carried(&jac, &d), world.coords))
}

/// The independent no-slip rows kept so far (orthonormal), and their right-hand sides.
struct Slip<'a, const NV: usize> {
    rows: &'a mut [SVector<f64, NV>; MAX_SLIP_ROWS],
    rhs: &'a mut [f64; MAX_SLIP_ROWS],
    kept: usize,
}

impl<const NV: usize> Slip<'_, NV> {
    /// Adds `row · a = rhs` if it is independent of the rows kept (Gram–Schmidt against them,
    /// a second time where the first cancelled much of the row); otherwise counts it in
    /// `out.dependent_rows` with its gap from the right-hand side the kept rows imply.
    fn add(
        &mut self,
        mut row: SVector<f64, NV>,
        mut rhs: f64,
        out: &mut BalanceOutput<NV>,
    ) -> Result<(), BalanceStatus> {
        let norm = row.norm();
        if !(norm > 0.0) {
            // A point that nothing moves: 0 = rhs.
            out.dependent_rows += 1;
            out.slip_inconsistency = out.slip_inconsistency.max(rhs.abs());
            return Ok(());
        }
        let mut before = norm;
        let mut rest = norm;
        for _pass in 0..2 {
            for (e, c) in self.rows.iter().zip(self.rhs.iter()).take(self.kept) {
                let k = dot_in_nalgebra_order(e.as_slice(), row.as_slice());
                // row −= k e, in place (the same products and differences as
                // `row -= e * k`, without the temporary vector).
                for (r, x) in row.as_mut_slice().iter_mut().zip(e.as_slice()) {
                    *r -= x * k;
                }
                rhs -= k * c;
            }
            rest = row.norm();
            // A second pass only where this one cancelled much of the row (below 1/√2 of
            // it, Daniel, Gragg, Kaufman and Stewart's test) and left it independent: the
            // remainder is then orthogonal to the kept rows to rounding. A dependent row's
            // remainder is already far below DEPENDENT_ROW.
            if rest <= DEPENDENT_ROW * norm || rest >= core::f64::consts::FRAC_1_SQRT_2 * before {
                break;
            }
            before = rest;
        }
        if rest <= DEPENDENT_ROW * norm {
            out.dependent_rows += 1;
            out.slip_inconsistency = out.slip_inconsistency.max(rhs.abs() / norm);
            return Ok(());
        }
        let (Some(e), Some(c)) = (self.rows.get_mut(self.kept), self.rhs.get_mut(self.kept)) else {
            return Err(BalanceStatus::Capacity);
        };
        *e = row / rest;
        *c = rhs / rest;
        self.kept += 1;
        Ok(())
    }
}

/// `a · b` by nalgebra's `Matrix::dot` for a column vector of `a.len()` entries, the same
/// operations in the same order (eight running sums over blocks of eight, added pairwise into
/// the result, then the rest one by one; two, three and four entries summed as it sums them),
/// so the same answer bit for bit, on slices (nalgebra's loop indexes each entry by row and
/// column). `b` is read over `a`'s length.
fn dot_in_nalgebra_order(a: &[f64], b: &[f64]) -> f64 {
    let n = a.len().min(b.len());
    let (a, b) = (a.get(..n).unwrap_or(&[]), b.get(..n).unwrap_or(&[]));
    match (a, b) {
        ([a0, a1], [b0, b1]) => return a0 * b0 + a1 * b1,
        ([a0, a1, a2], [b0, b1, b2]) => return a0 * b0 + a1 * b1 + a2 * b2,
        ([a0, a1, a2, a3], [b0, b1, b2, b3]) => {
            return (a0 * b0 + a2 * b2) + (a1 * b1 + a3 * b3);
        }
        _ => {}
    }
    let mut acc = [0.0f64; 8];
    let blocks_a = a.chunks_exact(8);
    let blocks_b = b.chunks_exact(8);
    let (rest_a, rest_b) = (blocks_a.remainder(), blocks_b.remainder());
    for (x, y) in blocks_a.zip(blocks_b) {
        for ((s, u), v) in acc.iter_mut().zip(x).zip(y) {
            *s += u * v;
        }
    }
    let [a0, a1, a2, a3, a4, a5, a6, a7] = acc;
    let mut res = 0.0;
    res += a0 + a4;
    res += a1 + a5;
    res += a2 + a6;
    res += a3 + a7;
    for (u, v) in rest_a.iter().zip(rest_b) {
        res += u * v;
    }
    res
}

/// Whether the points (offsets from one body's origin) span a plane: three of them clearly
/// not on one line, the triangle's doubled area above [`PLANE_AREA`] of the largest
/// distance's square. Then the body's six no-slip rows and the points' rows hold the same
/// motion: `u + w × d_i = 0` at every point forces `w` and `u` to zero.
fn spans_plane(offsets: impl Iterator<Item = Vector3<f64>> + Clone) -> bool {
    let mut first = None;
    let mut far = 0.0f64;
    let mut area = 0.0f64;
    for (i, di) in offsets.clone().enumerate() {
        let Some(d0) = first else {
            first = Some(di);
            continue;
        };
        let ei = di - d0;
        far = far.max(ei.norm_squared());
        for dj in offsets.clone().skip(i + 1) {
            area = area.max(ei.cross(&(dj - d0)).norm());
        }
    }
    far > 0.0 && area > PLANE_AREA * far
}

/// A body's frame Jacobian `jac` (origin's linear velocity, then angular) carried to the point
/// `d` from its origin (world): `J_lin − [d]× J_ang`.
fn carried<const NV: usize>(jac: &SMatrix<f64, 6, NV>, d: &Vector3<f64>) -> SMatrix<f64, 3, NV> {
    let mut jp = SMatrix::<f64, 3, NV>::zeros();
    for col in 0..NV {
        let lin = Vector3::new(jac[(0, col)], jac[(1, col)], jac[(2, col)]);
        let ang = Vector3::new(jac[(3, col)], jac[(4, col)], jac[(5, col)]);
        let pv = lin + ang.cross(d);
        for r in 0..3 {
            jp[(r, col)] = pv[r];
        }
    }
    jp
}
