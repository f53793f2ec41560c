//! A dense convex QP solver with second-order cones, for a controller's tick: the balance
//! controller's QP over joint accelerations, contact forces and torques (Abe, da Silva and
//! Popović, "Multiobjective control with frictional contacts") at 200 Hz – 1 kHz.
//!
//! It solves
//!
//! ```text
//! minimise ½ xᵀ P x + qᵀ x   subject to   A x + s = b,   s ∈ K = {0}^z × R₊^l × SOC(3)^c
//! ```
//!
//! with `P` symmetric positive semidefinite: the first `z` rows of `A` are equalities (equations
//! of motion, no-slip), the next `l` inequalities (`aᵢᵀ x ≤ bᵢ`: torque limits, minimum normal
//! forces), then `c` friction cones, three rows each, `s = (t, u₁, u₂)` with `‖u‖ ≤ t`. The dual
//! is `maximise −½ xᵀ P x − bᵀ y` subject to `P x + q + Aᵀ y = 0`, `y ∈ K* = R^z × R₊^l ×
//! SOC(3)^c`.
//!
//! ```
//! use control_core::qp::{Cones, Problem, Settings, Solver, Status, WarmStart};
//! // minimise ½‖x‖² − x₀ − x₁ subject to x₀ + x₁ = 1 and x₀ ≤ 0.25.
//! let problem = Problem {
//!     p: &[1.0, 0.0, 0.0, 1.0],
//!     q: &[-1.0, -1.0],
//!     a: &[1.0, 1.0, 1.0, 0.0],
//!     b: &[1.0, 0.25],
//!     cones: Cones { zero: 1, nonneg: 1, soc3: 0 },
//! };
//! let mut solver = Solver::<4, 8>::new(Settings::DEFAULT);
//! let info = solver.solve(&problem, WarmStart::Cold)?;
//! assert_eq!(info.status, Status::Solved);
//! assert!((solver.x()[0] - 0.25).abs() < 1e-7 && (solver.x()[1] - 0.75).abs() < 1e-7);
//! # Ok::<(), control_core::qp::QpError>(())
//! ```
//!
//! # Method: a primal-dual interior point on the equalities' null space
//!
//! An interior point method, not ADMM: a tick needs the answer to the stated accuracy in a
//! bounded time, and an interior point method reaches 1e-8 in 10–25 iterations almost
//! independently of the conditioning (the equations of motion mix kg·m², N and N·m), where ADMM
//! needs hundreds to thousands of cheap iterations for that accuracy and more when the data is
//! badly scaled. Its weakness, a factorisation per iteration, is removed by the structure of the
//! balance QP: most rows are equalities, and they are eliminated once per solve.
//!
//! 1. The data is equilibrated (modified Ruiz: rows of `A`, one factor per cone, columns of
//!    `[P; A]`, and the cost), a bounded number of passes.
//! 2. The equality rows are factored by a Householder QR with column pivoting of `A_Eᵀ`:
//!    rank-deficient equalities (more rows than independent constraints) are fine. Inconsistent
//!    ones give [`Status::PrimalInfeasible`] at once, with a certificate. `x = x_p + N w`, `N` a
//!    basis of the null space of `A_E`, turns the problem into one in `w` (`n − rank`
//!    unknowns) with only the inequality and cone rows. `N` is formed by **variable
//!    elimination**: Gauss–Jordan on the QR's orthonormal rows `Q₁ᵀ`, each equality solved for
//!    one variable (threshold pivoting: among the entries within 1/4 of its row's largest, the
//!    variable in the fewest inequality and cone rows), so that `N = [C; I]` up to a
//!    permutation and every other variable is its own coordinate of `w`. A row of `A_K` that
//!    touches no eliminated variable keeps its sparsity in `w`: in the balance QP the
//!    equalities bind accelerations, and the friction cones and minimum forces on the contact
//!    forces stay one entry per row. The orthonormal basis `Q₂` is used instead where the
//!    equalities outnumber the variables they leave free (forming `Q₁ᵀ` and eliminating on it
//!    would cost more than `Q₂`) and where elimination would be ill-conditioned (a coefficient
//!    of `C` beyond 1e3).
//! 3. The coordinates of `w` that no inequality or cone row touches (in the balance QP, the
//!    accelerations the equalities leave free, while the torque limits are out of the QP) are
//!    minimised in closed form, `w_u = −H_uu⁻¹ (g_u + H_uk w_k)`, when their block `H_uu` is
//!    clearly positive definite: the interior point then works on the Schur complement
//!    `H_kk − H_ku H_uu⁻¹ H_uk` of the others alone ([`Settings::condense`],
//!    [`SolveInfo::condensed`]), and its iterate maps back exactly, certificates included.
//!
//!    Where the variables that no inequality or cone row touches are not coupled to the others
//!    by `P`, `P`'s block on them is clearly positive definite and the equalities have full
//!    rank on them (the balance QP's accelerations while its torque limits are out), steps 2
//!    and 3 are replaced by a **range-space elimination** ([`Settings::range_space`]): with
//!    `P_aa = L Lᵀ` and `E_a P_aa⁻¹ E_aᵀ = K Kᵀ` (factorisations of the size of those
//!    variables and of the equalities), the best of them for given others is
//!    affine in the others, and the interior point works on the others alone with
//!    `H = P_ff + FᵀF`, `F = K⁻¹ E_f` (module `range`). The same reduced problem as the
//!    null-space way, to rounding, at a fraction of its cost: no QR over every variable, no
//!    basis, no `NᵀPN`.
//! 4. On that reduced problem, the homogeneous self-dual embedding of Clarabel (Goulart and
//!    Chen, 2024) for quadratic objectives, Nesterov–Todd scaling, Mehrotra's predictor-
//!    corrector: each iteration forms the normal matrix `H + δI + Gᵀ (W² + δI)⁻¹ G` (dense,
//!    `n − rank`-sized; `(W² + δI)⁻¹` from `W`'s closed form, without forming `W²`; `G`'s sparse rows added on
//!    their supports, the dense ones four at a time, and a cone's dense rows once each through
//!    a 3 × 3 factor of its `W⁻²` block, the sparse and zero rows of the cone apart), factors it by Cholesky
//!    (pivots below `1e-14 ·` its largest diagonal entry are replaced: dynamic regularisation),
//!    and solves three right-hand sides with iterative refinement on the unregularised system.
//!    `δ` is [`Settings::static_reg`] (0 by default) until a solve stays inaccurate after
//!    refinement (relative residual above 1e-9): near the cone's boundary some of `W⁻²` grow
//!    without bound and their rows swamp the rest of the normal matrix in rounding. The step is
//!    then solved again with `δ = 1e-8` on both blocks, which bounds those rows' weight by
//!    `1/δ`, and `δ` is kept for the rest of the solve.
//!    The slack step is taken from the primal equation, so that the primal residual falls with
//!    the step whatever the accuracy of the solve. The embedding gives the infeasibility
//!    certificates; a direction that neither the objective nor any row bounds (`H d = 0`,
//!    `G d = 0`, which makes the Newton system singular) is a certificate if `gᵀd < 0`; it is
//!    looked for when the first normal matrix was nearly singular (a pivot below `1e-6` of its
//!    largest diagonal entry) and the iteration then stops without an answer, or heads for an
//!    infeasibility certificate (`κ > τ`) that the embedding's iterate does not give. Not
//!    before: a merely badly scaled normal matrix (the balance QP's forces far inside their
//!    cones, whose rows then weigh nearly nothing) would pay for the search on every solve.
//! 5. An iteration that does not converge returns its best iterate (smallest ratio of residual
//!    to tolerance), not its last; if that iterate meets the tolerances in the caller's units
//!    (the scaled gate can be stricter), the solve is [`Status::Solved`].
//!
//! Work per solve is bounded: the setup is `O(n³ + m n²)` once (the check that `P` is
//! semidefinite, `n³/6`, is skipped when `P` is bit-identical to the last one accepted, and
//! left out with [`Settings::check_p`] off), then at
//! most [`Settings::max_iter`] iterations of `O(r³ + m r²)` (`r = n − rank`, less the
//! coordinates minimised in closed form) with one
//! factorisation each, plus one for a cold initial point and at most two for the search for
//! free directions, and at most [`Settings::refine_steps`] refinement steps per right-hand side.
//!
//! A warm start ([`WarmStart::Previous`] or [`WarmStart::From`]) begins at
//! `λ (x, s, y)_prev + (1 − λ)(0, e, e)` in the scaled variables (Skajaa, Andersen and Ye,
//! "Warmstarting the homogeneous and self-dual interior point method for linear and conic
//! quadratic problems", 2013), `λ = ` [`Settings::warm_start_weight`], and skips the cold
//! start's factorisation: on the balance QP one tick later, 5 iterations instead of 10.
//!
//! | `benches/qp.rs` (this machine, shared; instructions from callgrind) | iterations | time | instructions |
//! |---|---|---|---|
//! | random, 100 variables, 80 equalities, 40 inequalities, 8 cones, cold | 12 | 0.62 ms | 9.8 M |
//! | the same one tick later, warm | 6 | 0.48 ms | 6.8 M |
//! | balance-shaped, 94 variables, 62 equalities, 72 inequalities, 8 cones, cold | 15 | 0.87 ms | 13.9 M |
//! | the same one tick later, warm | 5 | 0.54 ms | 8.3 M |
//!
//! On the humanoid's own QPs (700 ticks recorded by `hil run --record-qp-every 1` and replayed
//! by the example `qp_replay`): as the balance controller poses them, its joints' torque limits
//! left out while far from binding (typically 64 variables, 19 equalities, 10 inequalities, 10
//! cones) and its angular momentum weighed 30, 3.30 iterations and 65–70 µs a solve on this
//! machine (`QP_REPLAY_PASSES`) with the balance controller's settings ([`Settings::range_space`]
//! on, [`Settings::warm_start_weight`] 0.9999), 108–111 µs the null-space way
//! (`QP_REPLAY_NULL_SPACE=1`: 3.28 iterations, 15 coordinates minimised in closed form); with
//! this module's default warm start of 0.99, 4.24 iterations and 74–75 µs. The controller's
//! whole tick is about 0.08 ms at 200 Hz and 0.10 ms at 1 kHz. RESULTS.md ("A conic QP solver
//! for balance") has the figures with the library's momentum weight and with every limit in.
//!
//! # Tolerances
//!
//! [`Status::Solved`] means, for the returned `(x, s, y)` in the caller's units (∞-norms):
//!
//! - primal: `‖A x + s − b‖ ≤ ε_abs + ε_rel · max(‖A x‖, ‖s‖, ‖b‖)`,
//! - dual: `‖P x + q + Aᵀ y‖ ≤ ε_abs + ε_rel · max(‖P x‖, ‖q‖, ‖Aᵀ y‖)`,
//! - gap: `|pobj − dobj|` and the complementarity `|sᵀy|` each `≤ ε_abs + ε_rel ·
//!   min(|pobj|, |dobj|)` with `pobj = ½xᵀPx + qᵀx`, `dobj = −½xᵀPx − bᵀy` (the two differ by
//!   `xᵀ(P x + q + Aᵀy) − yᵀ(A x + s − b)`, so small residuals alone do not bound one by the
//!   other),
//!
//! with `s ∈ K` and `y ∈ K*` exactly (`s = 0` on the equality rows); defaults
//! `ε_abs = ε_rel = 1e-8`. [`Status::PrimalInfeasible`] returns `y` with `‖y‖∞ = 1`,
//! `y ∈ K*`, `bᵀy ≤ −ε_inf_abs` and `‖Aᵀy‖∞ ≤ ε_inf_rel · |bᵀy|` (no `x` can then satisfy the
//! constraints). [`Status::DualInfeasible`] returns `x` with `‖x‖∞ = 1`, `qᵀx ≤ −ε_inf_abs`,
//! `‖P x‖∞`, `‖A_E x‖∞` and the distance of `−A_K x` to `K` each `≤ ε_inf_rel · |qᵀx|` (a
//! direction along which the objective decreases without bound); `s = Π_K(−A x)` then.
//!
//! # What it must never do
//!
//! Allocate, block or panic. Every buffer is inside [`Solver`], sized by its const parameters
//! (`N` variables, `M` constraint rows at most): a controller keeps one solver and reuses it
//! every tick. It is large, `size_of::<Solver<N, M>>() ≈ 8 (9N² + 2.25 NM + 35N + 41M)` bytes
//! (1.3 MB for `Solver<112, 176>`): keep it in a `static` or a box, not on a small stack.
//! NaN or infinity in the data, wrong lengths, more variables or rows than the capacity, an
//! asymmetric or indefinite `P` (unless [`Settings::check_p`] is off) and out-of-range
//! settings are each refused with a [`QpError`] before any work. Whatever the numbers, the
//! returned solution is finite: a non-finite intermediate or a factorisation that breaks down
//! stops the iteration with [`Status::Stalled`] and the best finite iterate; a last guard zeroes
//! a non-finite solution and reports [`Status::Stalled`].
//!
//! Left out: second-order cones of other dimensions than 3, sparse storage (the data is dense;
//! only `G`'s rows are used on their supports), and reusing a factorisation across solves (the
//! equalities change every tick).
// `!(x > 0.0)` is this module's NaN-catching test (true for NaN), on purpose.
#![allow(clippy::neg_cmp_op_on_partial_ord)]
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

mod condense;
mod cone;
mod ipm;
mod linalg;
mod range;
mod reduce;
#[cfg(test)]
#[path = "../tests/support/qp_testgen.rs"]
mod testgen;
#[cfg(test)]
mod tests;

use linalg::{at, dot, head, head_mut, norm_inf, put, range, range_mut, rows_head};

/// The cone `K`, as numbers of rows in the order of `A`'s rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Cones {
    /// Equality rows (`s = 0`), first.
    pub zero: usize,
    /// Non-negative rows (`s ≥ 0`, i.e. `aᵢᵀ x ≤ bᵢ`), next.
    pub nonneg: usize,
    /// Second-order cones of dimension 3, last: three rows each, `(t, u₁, u₂)` with `‖u‖ ≤ t`.
    pub soc3: usize,
}

impl Cones {
    /// The number of rows of `A`, `zero + nonneg + 3 soc3`, or `None` if it overflows.
    pub const fn rows(&self) -> Option<usize> {
        let Some(c) = self.soc3.checked_mul(3) else {
            return None;
        };
        let Some(e) = self.zero.checked_add(self.nonneg) else {
            return None;
        };
        e.checked_add(c)
    }

    /// The cone's degree (`nonneg + soc3`), the number of complementarity pairs.
    pub const fn degree(&self) -> usize {
        self.nonneg.saturating_add(self.soc3)
    }
}

/// A problem instance, borrowed from the caller. Matrices are dense and row-major; the number of
/// variables `n` is `q.len()` and the number of rows `m` is `b.len()`.
#[derive(Debug, Clone, Copy)]
pub struct Problem<'a> {
    /// `P`, `n × n`, symmetric positive semidefinite (within rounding: see [`QpError`]).
    pub p: &'a [f64],
    /// `q`, length `n`.
    pub q: &'a [f64],
    /// `A`, `m × n`.
    pub a: &'a [f64],
    /// `b`, length `m`.
    pub b: &'a [f64],
    /// The cone of the slacks; its rows must add up to `m`.
    pub cones: Cones,
}

/// Solver settings. Every field is checked at each solve ([`QpError::BadSettings`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Settings {
    /// Most interior-point iterations per solve (each one factorisation), 0 – 10 000.
    pub max_iter: u32,
    /// Absolute tolerance `ε_abs` of the primal and dual residuals and of the gap, > 0.
    pub eps_abs: f64,
    /// Relative tolerance `ε_rel` of the primal and dual residuals and of the gap, > 0.
    pub eps_rel: f64,
    /// Smallest `|bᵀy|` (resp. `|qᵀx|`) of a normalised infeasibility certificate, > 0.
    pub eps_inf_abs: f64,
    /// Largest `‖Aᵀy‖∞ / |bᵀy|` (resp. the dual analogue) of an infeasibility certificate, > 0.
    pub eps_inf_rel: f64,
    /// Equilibration passes, 0 – 100.
    pub equilibrate_iters: u32,
    /// Static regularisation `δ` of the Newton system's two blocks (`H + δI` and `W² + δI`,
    /// scaled units) from the first iteration, in `[0, 1e-2]`; iterative refinement removes its
    /// effect. The default is 0: the solver regularises with `1e-8` by itself from the first
    /// step whose solve stays inaccurate (module doc), and a positive `δ` from the start costs
    /// a refinement step on most Newton solves (the humanoid's balance QPs: 34 % more
    /// instructions with `1e-8`, the same iterations).
    pub static_reg: f64,
    /// Most iterative-refinement steps per Newton solve, 0 – 100.
    pub refine_steps: u32,
    /// Weight `λ` of the previous solution in a warm start, `λ (x, s, y)_prev + (1 − λ)(0, e, e)`
    /// in the scaled variables (Skajaa, Andersen and Ye, 2013), in `[0, 1)`. The default, 0.99,
    /// was the best of 0 – 0.999 on the balance QP perturbed by 1e-4 – 1e-2 per tick
    /// (`tests::warm_start_weight_sweep`: 5 – 6 iterations instead of 10; 0.7 – 0.9 take 6;
    /// 0.9999 fewer at 1e-4, more at 1e-2). The balance controller's own QPs change less from
    /// tick to tick, and its settings take 0.9999 (`balance::BalanceSettings::DEFAULT`).
    pub warm_start_weight: f64,
    /// Fraction of the step to the cone boundary taken, in `(0, 1)`; at most 0.95 while a
    /// solve has gone 15 iterations without coming closer to its tolerances (a cycle).
    pub step_fraction: f64,
    /// `P` is accepted when `P + psd_tol · max|Pᵢⱼ| · I` has a Cholesky factorisation (after
    /// equilibration), in `[0, 1)`.
    pub psd_tol: f64,
    /// Check that `P` is symmetric (each pair within `1e-9` of its largest entry, else
    /// [`QpError::NotSymmetric`]) and positive semidefinite ([`Settings::psd_tol`], else
    /// [`QpError::NotPsd`]). On in [`Settings::DEFAULT`]. A caller whose `P` is both by
    /// construction, equal to its transpose bit for bit and a sum of squares with non-negative
    /// weights, may turn it off to save the pass over every pair of `P` and the Cholesky
    /// factorisation of `P` (of its block on the variables kept by [`Settings::range_space`]):
    /// the balance controller does, 7 % of the humanoid's tick at 1 kHz. Off, `P` is taken as
    /// it is (as its own transpose) and one that is neither is not refused: the solve's answer
    /// then means nothing (it stays finite, like every answer). Finiteness and sizes are
    /// checked either way.
    pub check_p: bool,
    /// Relative threshold below which a pivot of the equalities' QR counts as zero (the row is
    /// dependent), in `(0, 1)`.
    pub rank_tol: f64,
    /// Minimise the reduced coordinates that no inequality or cone row touches in closed form
    /// before the interior point, when their block of the reduced objective is clearly
    /// positive definite (module docs, step 3): the iterations then work on the others alone.
    /// The same solution to the tolerances; off, the interior point sees every coordinate.
    pub condense: bool,
    /// Eliminate the variables that no inequality or cone row touches by their own
    /// factorisations when the objective does not couple them to the others and the
    /// equalities have full rank on them (module docs, step 2): in the balance QP, the joint
    /// accelerations by `nv`- and equality-sized Cholesky factors instead of a QR of the
    /// equalities over every variable. The same reduced problem (to rounding); where it does
    /// not apply, or off, the null-space way. On the humanoid's 700 recorded balance QPs it
    /// takes 65–70 µs a solve against 108–111 µs, every one solved. Off in [`Settings::DEFAULT`] (a
    /// generic problem rarely has the structure), on in the balance controller's settings
    /// (`balance::BalanceSettings::DEFAULT`). Its answers differ from the null-space way's
    /// within the tolerance, which moves outcomes near a threshold (docs/RESULTS.md, "Balance
    /// by a QP").
    pub range_space: bool,
}

impl Settings {
    /// The defaults: 50 iterations, `ε = 1e-8` everywhere, one equilibration pass (as many
    /// problems of the random sweep solved as with five, 7.35 iterations a problem against 7.40;
    /// five passes left one random problem cycling without converging, which one solves in 7
    /// iterations: `hard_random_problems_are_solved`).
    pub const DEFAULT: Self = Self {
        max_iter: 50,
        eps_abs: 1e-8,
        eps_rel: 1e-8,
        eps_inf_abs: 1e-8,
        eps_inf_rel: 1e-8,
        equilibrate_iters: 1,
        static_reg: 0.0,
        refine_steps: 6,
        warm_start_weight: 0.99,
        step_fraction: 0.99,
        psd_tol: 1e-9,
        check_p: true,
        rank_tol: 1e-10,
        condense: true,
        range_space: false,
    };

    fn check(&self) -> Result<(), QpError> {
        let positive = |v: f64| v > 0.0 && v.is_finite();
        let bad = |what: &'static str| Err(QpError::BadSettings(what));
        if self.max_iter > 10_000 {
            return bad("max_iter");
        }
        if !positive(self.eps_abs) || !positive(self.eps_rel) {
            return bad("eps_abs/eps_rel");
        }
        if !positive(self.eps_inf_abs) || !positive(self.eps_inf_rel) {
            return bad("eps_inf_abs/eps_inf_rel");
        }
        if self.equilibrate_iters > 100 {
            return bad("equilibrate_iters");
        }
        if !(self.static_reg >= 0.0 && self.static_reg <= 1e-2) {
            return bad("static_reg");
        }
        if self.refine_steps > 100 {
            return bad("refine_steps");
        }
        if !(self.warm_start_weight >= 0.0 && self.warm_start_weight < 1.0) {
            return bad("warm_start_weight");
        }
        if !(self.step_fraction > 0.0 && self.step_fraction < 1.0) {
            return bad("step_fraction");
        }
        if !(self.psd_tol >= 0.0 && self.psd_tol < 1.0) {
            return bad("psd_tol");
        }
        if !(self.rank_tol > 0.0 && self.rank_tol < 1.0) {
            return bad("rank_tol");
        }
        Ok(())
    }
}

impl Default for Settings {
    fn default() -> Self {
        Self::DEFAULT
    }
}

/// Where the iteration starts.
#[derive(Debug, Clone, Copy)]
pub enum WarmStart<'a> {
    /// From the solver's own initial point.
    Cold,
    /// From the solver's last solution, if the last solve ended [`Status::Solved`],
    /// [`Status::MaxIterations`] or [`Status::Stalled`] on a problem with the same sizes and
    /// cones; otherwise cold ([`SolveInfo::warm_started`] says which).
    Previous,
    /// From a given `(x, s, y)` (lengths `n`, `m`, `m`; finite). `s` and `y` need not be in the
    /// cone: they are moved into its interior.
    From {
        /// Primal variables.
        x: &'a [f64],
        /// Slacks.
        s: &'a [f64],
        /// Duals.
        y: &'a [f64],
    },
}

/// How a solve ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Status {
    /// Converged: residuals and gap within the tolerances (module doc, "Tolerances").
    Solved,
    /// Stopped at [`Settings::max_iter`]; the returned iterate and its residuals are the best
    /// reached (smallest ratio of residual to tolerance).
    MaxIterations,
    /// The constraints cannot be met: [`Solver::y`] is a certificate (module doc).
    PrimalInfeasible,
    /// The objective is unbounded below on the constraints: [`Solver::x`] is a certificate.
    DualInfeasible,
    /// No further progress: a step too short, a non-finite intermediate or a factorisation that
    /// broke down, even regularised. The returned iterate is the best finite one, with its
    /// residuals.
    Stalled,
}

/// What a solve did and reached. Residuals are absolute, in the caller's units (∞-norms); for
/// infeasible problems they and the objectives are 0 and `certificate_residual` is set.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SolveInfo {
    /// How it ended.
    pub status: Status,
    /// Interior-point iterations taken.
    pub iterations: u32,
    /// Cholesky factorisations of the Newton system: one per iteration, plus one for a cold
    /// start, two when free directions were looked for, and one for the step whose solve was
    /// first found inaccurate (factored again, regularised).
    pub factorizations: u32,
    /// Whether the iteration started from a previous or given solution.
    pub warm_started: bool,
    /// `‖A x + s − b‖∞`.
    pub primal_residual: f64,
    /// `‖P x + q + Aᵀ y‖∞`.
    pub dual_residual: f64,
    /// The larger of `|pobj − dobj|` and the complementarity `|sᵀy|`.
    pub gap: f64,
    /// The bound `primal_residual` is compared with for [`Status::Solved`].
    pub primal_tolerance: f64,
    /// The bound `dual_residual` is compared with.
    pub dual_tolerance: f64,
    /// The bound `gap` is compared with.
    pub gap_tolerance: f64,
    /// `½ xᵀPx + qᵀx`.
    pub primal_objective: f64,
    /// `−½ xᵀPx − bᵀy`.
    pub dual_objective: f64,
    /// For a certificate: `‖Aᵀy‖∞ / |bᵀy|` (primal) or the largest of the dual ratios.
    pub certificate_residual: f64,
    /// The numerical rank of the equality rows (fewer than `zero` when some are dependent).
    pub equality_rank: usize,
    /// Coordinates of the equalities' null space that no inequality or cone row touches,
    /// minimised in closed form before the interior point ([`Settings::condense`]); 0 when
    /// none were (none such, the setting off, or their objective block not clearly definite).
    pub condensed: usize,
}

/// An operand of a [`Problem`] or a [`WarmStart::From`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operand {
    /// `P`.
    P,
    /// `q`.
    Q,
    /// `A`.
    A,
    /// `b`.
    B,
    /// The warm start's `x`.
    WarmX,
    /// The warm start's `s`.
    WarmS,
    /// The warm start's `y`.
    WarmY,
}

/// Why a problem was refused. Nothing was solved and the previous solution is kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum QpError {
    /// `q` is empty: a problem needs at least one variable.
    NoVariables,
    /// More variables than the solver's capacity `N`.
    TooManyVariables {
        /// Variables asked for.
        n: usize,
        /// The capacity.
        capacity: usize,
    },
    /// More constraint rows than the solver's capacity `M`.
    TooManyRows {
        /// Rows asked for.
        m: usize,
        /// The capacity.
        capacity: usize,
    },
    /// The cones' rows do not add up to `b.len()` (or overflow).
    ConeRows {
        /// `zero + nonneg + 3 soc3`, saturated.
        cones: usize,
        /// `b.len()`.
        rows: usize,
    },
    /// An operand has the wrong length.
    Size {
        /// Which.
        operand: Operand,
        /// The length it must have.
        expected: usize,
        /// The length it has.
        found: usize,
    },
    /// An operand has a NaN or infinite entry.
    NonFinite(Operand),
    /// `P` is not symmetric: some `|Pᵢⱼ − Pⱼᵢ| > 1e-9 · max(1, max|P|)`.
    NotSymmetric,
    /// `P` is not positive semidefinite (see [`Settings::psd_tol`]).
    NotPsd,
    /// A setting is out of its range (named).
    BadSettings(&'static str),
}

impl fmt::Display for QpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NoVariables => write!(f, "the problem has no variables"),
            Self::TooManyVariables { n, capacity } => {
                write!(
                    f,
                    "{n} variables exceed the solver's capacity of {capacity}"
                )
            }
            Self::TooManyRows { m, capacity } => {
                write!(
                    f,
                    "{m} constraint rows exceed the solver's capacity of {capacity}"
                )
            }
            Self::ConeRows { cones, rows } => {
                write!(f, "the cones have {cones} rows but b has {rows}")
            }
            Self::Size {
                operand,
                expected,
                found,
            } => {
                write!(f, "{operand:?} has length {found}, expected {expected}")
            }
            Self::NonFinite(operand) => write!(f, "{operand:?} has a NaN or infinite entry"),
            Self::NotSymmetric => write!(f, "P is not symmetric"),
            Self::NotPsd => write!(f, "P is not positive semidefinite"),
            Self::BadSettings(what) => write!(f, "setting {what} is out of range"),
        }
    }
}

impl core::error::Error for QpError {}

/// Sizes of the current problem.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Dims {
    /// Variables.
    n: usize,
    /// Rows.
    m: usize,
    /// Equality rows.
    z: usize,
    /// Non-negative rows.
    l: usize,
    /// Second-order cones.
    c: usize,
    /// Inequality and cone rows, `l + 3c`.
    mk: usize,
    /// Numerical rank of the equality rows.
    k: usize,
    /// Reduced variables, `n − k`.
    r: usize,
}

impl Dims {
    fn degree(&self) -> usize {
        self.l + self.c
    }
}

/// The equilibrated copy of the data: `P̃ = c D P D`, `q̃ = c D q`, `Ã = E A D`, `b̃ = E b`.
struct Scaled<const N: usize, const M: usize> {
    p: [[f64; N]; N],
    /// `Ã`; after the reduction its equality rows hold the QR factors instead.
    a: [[f64; N]; M],
    q: [f64; N],
    b: [f64; M],
    /// Column scaling `D`.
    d: [f64; N],
    /// Row scaling `E` (one value per cone).
    e: [f64; M],
    /// Cost scaling `c`.
    c: f64,
    /// Where each row of the caller's `P` (and of `P̃`) is non-zero: entries outside
    /// `lo..hi` are zero, so products, maxima and scalings skip them (see
    /// [`linalg::dot_span`]). The whole row when `P` is not its own transpose bit for bit.
    pspan: [Span; N],
    /// The same for the rows of the caller's `A` (and of `Ã`, which scaling only makes
    /// sparser), as long as they hold it: not the equality rows after a QR.
    aspan: [Span; M],
}

/// A row's non-zero columns `lo..hi` (`linalg::nonzero_span`).
type Span = (usize, usize);

/// The QR factors of `Ã_Eᵀ` (Householder vectors and `R` in `Scaled::a`'s equality rows) and
/// the null-space parametrisation `x̃ = x̃_p + N w`.
struct Qr<const N: usize, const M: usize> {
    tau: [f64; M],
    rdiag: [f64; M],
    /// Position `i` after pivoting holds original equality row `perm[i]`.
    perm: [usize; M],
    norms: [f64; M],
    norms0: [f64; M],
    /// The null space of `Ã_E`: with [`Basis::Orthonormal`], rows `..r` are an orthonormal
    /// basis of it; with [`Basis::Eliminated`], row `t < k` holds `C[t][..r]`, the coefficients
    /// of pivot variable `pivcol[t]` on the free variables `freecol[..r]` (below).
    basis: [[f64; N]; N],
    /// Which null-space basis `N` is formed.
    kind: Basis,
    /// [`Basis::Eliminated`]: the variable solved for by equality `t`, for `t < k`.
    pivcol: [usize; N],
    /// [`Basis::Eliminated`]: the free variables, ascending; `w_j` is `x̃[freecol[j]] −
    /// x̃_p[freecol[j]]`.
    freecol: [usize; N],
    /// `x̃_p`, a particular solution of `Ã_E x̃ = b̃_E` (least squares if inconsistent).
    xp: [f64; N],
    /// `u` with `x̃_p = Q₁ u` (`R₁₁ᵀ u = b̃_basic`).
    coef: [f64; N],
    /// `½ x̃_pᵀ P̃ x̃_p + q̃ᵀ x̃_p`.
    offset: f64,
    /// [`Basis::Range`]'s factors.
    range: range::Factors<N>,
}

/// The null-space basis `N` of the equalities, `x̃ = x̃_p + N w`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Basis {
    /// `N = I` (no equality of positive rank): the basis is not formed.
    Identity,
    /// `N = Q₂` from the QR factors: orthonormal columns, dense.
    Orthonormal,
    /// Variable elimination: each equality solved for one pivot variable, `N = [C; I]` with the
    /// rows permuted (pivot variables `C w`, free variables `w` themselves). A row of `Ã_K` on
    /// free variables only stays as sparse in `w` as it is in `x̃`: the friction cones' rows
    /// on the contact forces keep their one or three entries.
    Eliminated,
    /// Range-space elimination ([`Settings::range_space`]): the variables no inequality
    /// touches (`pivcol`) are the best ones for the kept ones (`freecol`, `w` itself), through
    /// the factors in [`Qr::range`]; `x̃_p = 0`.
    Range,
}

/// The reduced problem: minimise `½ wᵀ H w + gᵀ w` subject to `G w + s = h`, `s ∈ R₊^l × SOC^c`.
struct Reduced<const N: usize, const M: usize> {
    hess: [[f64; N]; N],
    gmat: [[f64; N]; M],
    g: [f64; N],
    h: [f64; M],
    /// `H = 0` (an LP in `w`): the initial point is found differently.
    linear: bool,
    /// Per row of `G`: the number of entries in `idx` (a cone's three rows share the union of
    /// their supports), or [`DENSE`] when the row is used densely.
    nnz: [usize; M],
    /// Per row of `G`: the columns that may be non-zero, ascending (the first `nnz`).
    idx: [[u16; N]; M],
}

/// [`Reduced::nnz`] of a row of `G` used densely (more than half its entries non-zero).
const DENSE: usize = usize::MAX;

/// The Newton system's factors and scratch.
struct Kkt<const N: usize, const M: usize> {
    /// Cholesky factor of `H + δI + GᵀW⁻²G`; also scratch during setup.
    chol: [[f64; N]; N],
    wbar: [f64; M],
    eta: [f64; M],
    lambda: [f64; M],
    lreg: [[f64; 3]; M],
    /// Vectors waiting for a rank-4 update of the normal matrix (`pending` of them).
    rows: [[f64; N]; 6],
    pending: usize,
    tm: [f64; M],
    ex: [f64; N],
    ez: [f64; M],
    cx: [f64; N],
    cz: [f64; M],
    delta: f64,
    /// The largest relative residual any Newton solve of the current step ended with.
    worst: f64,
}

/// The interior-point iterate and directions, in reduced scaled variables.
struct Iterate<const N: usize, const M: usize> {
    w: [f64; N],
    s: [f64; M],
    z: [f64; M],
    tau: f64,
    kappa: f64,
    /// `H w`.
    hw: [f64; N],
    /// `Gᵀ z`.
    gtz: [f64; N],
    /// `G w`.
    gw: [f64; M],
    rx: [f64; N],
    rz: [f64; M],
    rtau: f64,
    x1: [f64; N],
    z1: [f64; M],
    x2: [f64; N],
    z2: [f64; M],
    bx: [f64; N],
    bz: [f64; M],
    dw: [f64; N],
    ds: [f64; M],
    dz: [f64; M],
    dtau: f64,
    dkappa: f64,
    /// `W⁻¹ Δs` and `W Δz` of the affine step (Mehrotra's correction), then scratch.
    ds_scaled: [f64; M],
    dz_scaled: [f64; M],
    /// The complementarity right-hand side `d_s`, then scratch.
    dsr: [f64; M],
    /// `W (λ \ d_s)`.
    u: [f64; M],
    /// The iterate closest to convergence so far, and its merit.
    best_w: [f64; N],
    best_s: [f64; M],
    best_z: [f64; M],
    best_tau: f64,
    best_kappa: f64,
    best_merit: f64,
    /// Iterations since `best_merit` last improved.
    since_best: u32,
    /// A candidate dual-infeasibility certificate.
    cert: [f64; N],
}

/// The returned solution, the recovery scratch and what a warm start needs of the last solve.
struct Output<const N: usize, const M: usize> {
    x: [f64; N],
    s: [f64; M],
    y: [f64; M],
    /// Scratch: `x̃`, `A x` / `ỹ`, `Aᵀy`, `P x`.
    xt: [f64; N],
    yt: [f64; M],
    ax: [f64; M],
    aty: [f64; N],
    px: [f64; N],
    /// `(n, m, cones)` of the solution held, if it can seed a warm start.
    previous: Option<(usize, usize, Cones)>,
}

/// The last `P` found positive semidefinite, to skip the check when it is unchanged.
struct PsdCache<const N: usize> {
    p: [[f64; N]; N],
    n: usize,
    valid: bool,
}

/// The solver, with every buffer for up to `N` variables and `M` constraint rows. Create it
/// once (`const`, so it can live in a `static`), then call [`Solver::solve`] every tick.
pub struct Solver<const N: usize, const M: usize> {
    settings: Settings,
    dims: Dims,
    data: Scaled<N, M>,
    qr: Qr<N, M>,
    red: Reduced<N, M>,
    kkt: Kkt<N, M>,
    it: Iterate<N, M>,
    out: Output<N, M>,
    psd: PsdCache<N>,
    cond: condense::Condensed<N>,
    /// The check of the iterate last recovered, when the iteration stopped at [`Status::Solved`].
    check: Option<Check>,
    /// Tests: always form the orthonormal null basis.
    #[cfg(test)]
    force_orthonormal: bool,
}

impl<const N: usize, const M: usize> Default for Solver<N, M> {
    fn default() -> Self {
        Self::new(Settings::DEFAULT)
    }
}

/// Full-problem residuals of a candidate solution.
#[derive(Debug, Clone, Copy, Default)]
struct Check {
    pres: f64,
    dres: f64,
    gap: f64,
    ptol: f64,
    dtol: f64,
    gtol: f64,
    pobj: f64,
    dobj: f64,
}

impl Check {
    fn ok(&self) -> bool {
        self.pres <= self.ptol && self.dres <= self.dtol && self.gap <= self.gtol
    }
}

impl<const N: usize, const M: usize> Solver<N, M> {
    /// A solver with the given settings (checked at each solve).
    pub const fn new(settings: Settings) -> Self {
        Self {
            settings,
            dims: Dims {
                n: 0,
                m: 0,
                z: 0,
                l: 0,
                c: 0,
                mk: 0,
                k: 0,
                r: 0,
            },
            data: Scaled {
                p: [[0.0; N]; N],
                a: [[0.0; N]; M],
                q: [0.0; N],
                b: [0.0; M],
                d: [1.0; N],
                e: [1.0; M],
                c: 1.0,
                pspan: [(0, 0); N],
                aspan: [(0, 0); M],
            },
            qr: Qr {
                tau: [0.0; M],
                rdiag: [0.0; M],
                perm: [0; M],
                norms: [0.0; M],
                norms0: [0.0; M],
                basis: [[0.0; N]; N],
                kind: Basis::Identity,
                pivcol: [0; N],
                freecol: [0; N],
                xp: [0.0; N],
                coef: [0.0; N],
                offset: 0.0,
                range: range::Factors::new(),
            },
            red: Reduced {
                hess: [[0.0; N]; N],
                gmat: [[0.0; N]; M],
                g: [0.0; N],
                h: [0.0; M],
                linear: false,
                nnz: [DENSE; M],
                idx: [[0; N]; M],
            },
            kkt: Kkt {
                chol: [[0.0; N]; N],
                wbar: [0.0; M],
                eta: [0.0; M],
                lambda: [0.0; M],
                lreg: [[0.0; 3]; M],
                rows: [[0.0; N]; 6],
                pending: 0,
                tm: [0.0; M],
                ex: [0.0; N],
                ez: [0.0; M],
                cx: [0.0; N],
                cz: [0.0; M],
                delta: 0.0,
                worst: 0.0,
            },
            it: Iterate {
                w: [0.0; N],
                s: [0.0; M],
                z: [0.0; M],
                tau: 1.0,
                kappa: 1.0,
                hw: [0.0; N],
                gtz: [0.0; N],
                gw: [0.0; M],
                rx: [0.0; N],
                rz: [0.0; M],
                rtau: 0.0,
                x1: [0.0; N],
                z1: [0.0; M],
                x2: [0.0; N],
                z2: [0.0; M],
                bx: [0.0; N],
                bz: [0.0; M],
                dw: [0.0; N],
                ds: [0.0; M],
                dz: [0.0; M],
                dtau: 0.0,
                dkappa: 0.0,
                ds_scaled: [0.0; M],
                dz_scaled: [0.0; M],
                dsr: [0.0; M],
                u: [0.0; M],
                best_w: [0.0; N],
                best_s: [0.0; M],
                best_z: [0.0; M],
                best_tau: 1.0,
                best_kappa: 1.0,
                best_merit: f64::INFINITY,
                since_best: 0,
                cert: [0.0; N],
            },
            out: Output {
                x: [0.0; N],
                s: [0.0; M],
                y: [0.0; M],
                xt: [0.0; N],
                yt: [0.0; M],
                ax: [0.0; M],
                aty: [0.0; N],
                px: [0.0; N],
                previous: None,
            },
            cond: condense::Condensed::new(),
            psd: PsdCache {
                p: [[0.0; N]; N],
                n: 0,
                valid: false,
            },
            check: None,
            #[cfg(test)]
            force_orthonormal: false,
        }
    }

    /// The settings.
    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// Replaces the settings (checked at the next solve).
    pub fn set_settings(&mut self, settings: Settings) {
        self.settings = settings;
    }

    /// The primal solution `x` of the last solve (length `n`), or a dual-infeasibility
    /// certificate. Empty before the first solve.
    pub fn x(&self) -> &[f64] {
        head(&self.out.x, self.dims.n)
    }

    /// The slacks `s` (length `m`, in `K`).
    pub fn s(&self) -> &[f64] {
        head(&self.out.s, self.dims.m)
    }

    /// The duals `y` (length `m`, in `K*`), or a primal-infeasibility certificate.
    pub fn y(&self) -> &[f64] {
        head(&self.out.y, self.dims.m)
    }

    /// Solves `problem`, starting as `warm` says. `Err` refuses the input (nothing was done and
    /// the previous solution is kept); `Ok` carries how the solve ended.
    pub fn solve(
        &mut self,
        problem: &Problem<'_>,
        warm: WarmStart<'_>,
    ) -> Result<SolveInfo, QpError> {
        self.settings.check()?;
        let (dims, mirrored) = self.validate(problem, &warm)?;
        let warm_ok = match warm {
            WarmStart::Cold => false,
            WarmStart::Previous => self.out.previous == Some((dims.n, dims.m, problem.cones)),
            WarmStart::From { .. } => true,
        };
        let (old_dims, old_previous) = (self.dims, self.out.previous);
        self.dims = dims;
        self.equilibrate(problem, mirrored);
        let eliminated = self.range_space();
        if eliminated == range::Outcome::NotPsd
            || (eliminated == range::Outcome::NotApplicable
                && self.settings.check_p
                && !self.psd_ok(problem))
        {
            // Refused: nothing of the last solution was touched but its sizes.
            self.dims = old_dims;
            self.out.previous = old_previous;
            return Err(QpError::NotPsd);
        }
        // From here on the previous solution is consumed: copy a given warm start into place.
        if let WarmStart::From { x, s, y } = warm {
            linalg::copy(x, &mut self.out.x);
            linalg::copy(s, &mut self.out.s);
            linalg::copy(y, &mut self.out.y);
        }
        self.out.previous = None;
        let mut info = SolveInfo {
            status: Status::Stalled,
            iterations: 0,
            factorizations: 0,
            warm_started: warm_ok,
            primal_residual: 0.0,
            dual_residual: 0.0,
            gap: 0.0,
            primal_tolerance: 0.0,
            dual_tolerance: 0.0,
            gap_tolerance: 0.0,
            primal_objective: 0.0,
            dual_objective: 0.0,
            certificate_residual: 0.0,
            equality_rank: 0,
            condensed: 0,
        };
        if eliminated == range::Outcome::Reduced {
            // Equalities of full rank on variables they leave free: consistent.
            info.equality_rank = self.dims.z;
            info.condensed = self.qr.range.na - self.dims.z;
        } else {
            self.factor_equalities();
            info.equality_rank = self.dims.k;
            if let Some(ratio) = self.inconsistent_equalities(problem) {
                info.status = Status::PrimalInfeasible;
                info.certificate_residual = ratio;
                info.warm_started = false;
                return Ok(self.finish(info));
            }
            self.form_reduced();
            self.condense();
            info.condensed = self.cond.nu;
        }
        self.check = None;
        let status = self.interior_point(problem, warm_ok, &mut info);
        info.status = status;
        match status {
            Status::PrimalInfeasible | Status::DualInfeasible => {}
            _ => {
                let check = match (status, self.check) {
                    (Status::Solved, Some(check)) => check,
                    _ => self.recover(problem),
                };
                info.primal_residual = check.pres;
                info.dual_residual = check.dres;
                info.gap = check.gap;
                info.primal_tolerance = check.ptol;
                info.dual_tolerance = check.dtol;
                info.gap_tolerance = check.gtol;
                info.primal_objective = check.pobj;
                info.dual_objective = check.dobj;
                if status != Status::Solved && check.ok() {
                    info.status = Status::Solved;
                }
            }
        }
        Ok(self.finish(info))
    }

    /// The last guard: a returned solution is finite, whatever happened.
    fn finish(&mut self, mut info: SolveInfo) -> SolveInfo {
        let Dims { n, m, .. } = self.dims;
        let finite = linalg::all_finite(head(&self.out.x, n))
            && linalg::all_finite(head(&self.out.s, m))
            && linalg::all_finite(head(&self.out.y, m));
        let numbers = [
            &mut info.primal_residual,
            &mut info.dual_residual,
            &mut info.gap,
            &mut info.primal_tolerance,
            &mut info.dual_tolerance,
            &mut info.gap_tolerance,
            &mut info.primal_objective,
            &mut info.dual_objective,
            &mut info.certificate_residual,
        ];
        let mut info_finite = true;
        for v in numbers {
            if !v.is_finite() {
                *v = f64::MAX;
                info_finite = false;
            }
        }
        if !finite {
            head_mut(&mut self.out.x, n).fill(0.0);
            head_mut(&mut self.out.s, m).fill(0.0);
            head_mut(&mut self.out.y, m).fill(0.0);
        }
        if !finite || (!info_finite && info.status == Status::Solved) {
            info.status = Status::Stalled;
        }
        self.out.previous = match info.status {
            Status::Solved | Status::MaxIterations | Status::Stalled if finite => Some((
                n,
                m,
                Cones {
                    zero: self.dims.z,
                    nonneg: self.dims.l,
                    soc3: self.dims.c,
                },
            )),
            _ => None,
        };
        info
    }

    /// Checks sizes, finiteness and symmetry; returns the dimensions, and whether `P` is its
    /// own transpose bit for bit (then symmetrising it would change nothing).
    /// Also records each row's non-zero span of `P` and `A` (scratch: recomputed every solve),
    /// which bounds the finiteness check too (NaN and ±∞ count as non-zero).
    fn validate(
        &mut self,
        problem: &Problem<'_>,
        warm: &WarmStart<'_>,
    ) -> Result<(Dims, bool), QpError> {
        let n = problem.q.len();
        let m = problem.b.len();
        if n == 0 {
            return Err(QpError::NoVariables);
        }
        if n > N {
            return Err(QpError::TooManyVariables { n, capacity: N });
        }
        if m > M {
            return Err(QpError::TooManyRows { m, capacity: M });
        }
        let cones = problem.cones;
        match cones.rows() {
            Some(rows) if rows == m => {}
            rows => {
                return Err(QpError::ConeRows {
                    cones: rows.unwrap_or(usize::MAX),
                    rows: m,
                });
            }
        }
        let size = |operand, expected: usize, found: usize| {
            if expected == found {
                Ok(())
            } else {
                Err(QpError::Size {
                    operand,
                    expected,
                    found,
                })
            }
        };
        size(Operand::P, n * n, problem.p.len())?;
        size(Operand::A, m * n, problem.a.len())?;
        let finite = |operand, v: &[f64]| {
            if linalg::all_finite(v) {
                Ok(())
            } else {
                Err(QpError::NonFinite(operand))
            }
        };
        // P's and A's rows: each one's span, and the span finite (zeros outside it are).
        let spans = |m: &[f64], spans: &mut [Span]| {
            let mut ok = true;
            for (row, span) in m.chunks_exact(n).zip(spans.iter_mut()) {
                let (lo, hi) = linalg::nonzero_span(row);
                ok &= linalg::all_finite(range(row, lo, hi));
                *span = (lo, hi);
            }
            ok
        };
        if !spans(problem.p, &mut self.data.pspan) {
            return Err(QpError::NonFinite(Operand::P));
        }
        finite(Operand::Q, problem.q)?;
        if !spans(problem.a, &mut self.data.aspan) {
            return Err(QpError::NonFinite(Operand::A));
        }
        finite(Operand::B, problem.b)?;
        if let WarmStart::From { x, s, y } = warm {
            size(Operand::WarmX, n, x.len())?;
            size(Operand::WarmS, m, s.len())?;
            size(Operand::WarmY, m, y.len())?;
            finite(Operand::WarmX, x)?;
            finite(Operand::WarmS, s)?;
            finite(Operand::WarmY, y)?;
        }
        // Symmetric, unless the caller vouches for it: then taken as its own transpose.
        let mut mirrored = true;
        if self.settings.check_p {
            // Finite: checked above. (Zero outside the rows' spans.)
            let pmax = problem
                .p
                .chunks_exact(n)
                .zip(&self.data.pspan)
                .fold(0.0f64, |m, (row, &(lo, hi))| {
                    linalg::fmax(linalg::max_abs(range(row, lo, hi)), m)
                });
            let tol = 1e-9 * pmax.max(1.0);
            // Row i right of the diagonal against column i below it, every pair looked at.
            let mut asymmetric = false;
            for (i, r) in problem.p.chunks_exact(n).enumerate() {
                for (v, below) in r
                    .iter()
                    .skip(i + 1)
                    .zip(problem.p.chunks_exact(n).skip(i + 1))
                {
                    let w = below.get(i).copied().unwrap_or(*v);
                    asymmetric |= (v - w).abs() > tol;
                    mirrored &= v.to_bits() == w.to_bits();
                }
            }
            if asymmetric {
                return Err(QpError::NotSymmetric);
            }
        }
        let mk = cones.nonneg + 3 * cones.soc3;
        let dims = Dims {
            n,
            m,
            z: cones.zero,
            l: cones.nonneg,
            c: cones.soc3,
            mk,
            k: 0,
            r: n,
        };
        Ok((dims, mirrored))
    }

    /// Copies the data into the scaled buffers and equilibrates it (modified Ruiz). `mirrored`:
    /// `P` equals its transpose bit for bit, so that the symmetrised copy is a plain copy.
    fn equilibrate(&mut self, problem: &Problem<'_>, mirrored: bool) {
        let Dims { n, m, z, l, .. } = self.dims;
        let data = &mut self.data;
        // Copy, symmetrising P: each pair once, the mean written to both (a sum does not
        // depend on the order of its two terms). A mirrored P is copied as it is: the mean of
        // two equal numbers is that number, `0.5 (a + a) = a` exactly (short of overflow).
        if mirrored {
            for (r, src) in rows_head_mut_n(&mut data.p, n)
                .iter_mut()
                .zip(problem.p.chunks_exact(n))
            {
                linalg::copy(src, r);
            }
        } else {
            for i in 0..n {
                for j in i..n {
                    let a = problem.p.get(i * n + j).copied().unwrap_or(0.0);
                    let b = problem.p.get(j * n + i).copied().unwrap_or(0.0);
                    let v = 0.5 * (a + b);
                    if let Some(e) = data.p.get_mut(i).and_then(|r| r.get_mut(j)) {
                        *e = v;
                    }
                    if let Some(e) = data.p.get_mut(j).and_then(|r| r.get_mut(i)) {
                        *e = v;
                    }
                }
            }
            // The caller's rows' spans do not bound the symmetrised ones.
            for span in data.pspan.iter_mut().take(n) {
                *span = (0, n);
            }
        }
        // (The rows' spans are validate's.)
        for (r, src) in rows_head_mut_n(&mut data.a, m)
            .iter_mut()
            .zip(problem.a.chunks_exact(n))
        {
            linalg::copy(src, r);
        }
        linalg::copy(problem.q, &mut data.q);
        linalg::copy(problem.b, &mut data.b);
        head_mut(&mut data.d, n).fill(1.0);
        head_mut(&mut data.e, m).fill(1.0);
        data.c = 1.0;
        let clamp = |norm: f64| {
            if !(norm >= 1e-4) {
                1.0
            } else if norm > 1e4 {
                1e-2
            } else {
                1.0 / libm::sqrt(norm)
            }
        };
        let mut col = [0.0f64; N];
        let mut rowf = [0.0f64; M];
        for _ in 0..self.settings.equilibrate_iters {
            let col = head_mut(&mut col, n);
            col.fill(0.0);
            // (Over each row's non-zero span: a zero changes no maximum and scales to itself.)
            for (r, &(lo, hi)) in rows_head(&data.p, n).iter().zip(&data.pspan) {
                for (c, v) in range_mut(col, lo, hi).iter_mut().zip(range(r, lo, hi)) {
                    *c = linalg::fmax(*c, v.abs());
                }
            }
            let rowf = head_mut(&mut rowf, m);
            for ((r, f), &(lo, hi)) in rows_head(&data.a, m)
                .iter()
                .zip(rowf.iter_mut())
                .zip(&data.aspan)
            {
                let r = range(r, lo, hi);
                for (c, v) in range_mut(col, lo, hi).iter_mut().zip(r) {
                    *c = linalg::fmax(*c, v.abs());
                }
                *f = linalg::max_abs(r);
            }
            // One factor per second-order cone.
            let (_, soc_rows) = rowf.split_at_mut((z + l).min(m));
            for b in soc_rows.chunks_exact_mut(3) {
                let v = linalg::max_abs(b);
                b.fill(v);
            }
            for c in col.iter_mut() {
                *c = clamp(*c);
            }
            for f in rowf.iter_mut() {
                *f = clamp(*f);
            }
            for ((r, ci), &(lo, hi)) in rows_head_mut_n(&mut data.p, n)
                .iter_mut()
                .zip(col.iter())
                .zip(&data.pspan)
            {
                for (v, cj) in range_mut(r, lo, hi).iter_mut().zip(range(col, lo, hi)) {
                    *v *= ci * cj;
                }
            }
            for ((r, f), &(lo, hi)) in rows_head_mut_n(&mut data.a, m)
                .iter_mut()
                .zip(rowf.iter())
                .zip(&data.aspan)
            {
                for (v, cj) in range_mut(r, lo, hi).iter_mut().zip(range(col, lo, hi)) {
                    *v *= f * cj;
                }
            }
            for (d, c) in data.d.iter_mut().zip(col.iter()) {
                *d *= c;
            }
            for (e, f) in data.e.iter_mut().zip(rowf.iter()) {
                *e *= f;
            }
        }
        for (q, d) in head_mut(&mut data.q, n).iter_mut().zip(&data.d) {
            *q *= d;
        }
        for (b, e) in head_mut(&mut data.b, m).iter_mut().zip(&data.e) {
            *b *= e;
        }
        // Cost scaling: the mean column norm of P̃ or ‖q̃‖, whichever is larger, to about 1.
        if self.settings.equilibrate_iters > 0 {
            let mut mean = 0.0;
            for (r, &(lo, hi)) in rows_head(&data.p, n).iter().zip(&data.pspan) {
                mean += linalg::max_abs(range(r, lo, hi));
            }
            mean /= n as f64;
            let scale = mean.max(linalg::max_abs(head(&data.q, n)));
            let c = if !(scale >= 1e-4) {
                1.0
            } else {
                1.0 / scale.min(1e4)
            };
            data.c = c;
            for (r, &(lo, hi)) in rows_head_mut_n(&mut data.p, n).iter_mut().zip(&data.pspan) {
                linalg::scal(c, range_mut(r, lo, hi));
            }
            linalg::scal(c, head_mut(&mut data.q, n));
        }
    }

    /// Whether `P` is positive semidefinite (a Cholesky factorisation of `P̃ + tol·max|P̃|·I`),
    /// skipped when `P` is the one last found so.
    fn psd_ok(&mut self, problem: &Problem<'_>) -> bool {
        let n = self.dims.n;
        let same = self.psd.valid
            && self.psd.n == n
            && rows_head(&self.psd.p, n)
                .iter()
                .zip(problem.p.chunks_exact(n))
                .all(|(a, b)| head(a, n) == b);
        if same {
            return true;
        }
        let chol = &mut self.kkt.chol;
        let mut pmax = 0.0f64;
        for (dst, src) in rows_head_mut_n(chol, n)
            .iter_mut()
            .zip(rows_head(&self.data.p, n))
        {
            linalg::copy(head(src, n), dst);
            pmax = pmax.max(linalg::max_abs(head(src, n)));
        }
        let ok = if pmax > 0.0 {
            let shift = self.settings.psd_tol * pmax;
            for (i, r) in rows_head_mut_n(chol, n).iter_mut().enumerate() {
                let d = at(r, i);
                put(r, i, d + shift);
            }
            linalg::cholesky(chol, n, 0.0, 1.0).0 == 0
        } else {
            true
        };
        if ok {
            for (dst, src) in rows_head_mut_n(&mut self.psd.p, n)
                .iter_mut()
                .zip(problem.p.chunks_exact(n))
            {
                linalg::copy(src, dst);
            }
            self.psd.n = n;
            self.psd.valid = true;
        } else {
            self.psd.valid = false;
        }
        ok
    }

    /// The full-problem (unscaled) residuals of the scaled candidate `x̃ = out.xt`, `s̃_K`
    /// (`out.s` holds it scaled on entry) and `ỹ = out.yt`: unscales into `out.{x, s, y}` and
    /// measures against the caller's data.
    fn unscale_and_check(&mut self, problem: &Problem<'_>) -> Check {
        let Dims { n, m, z, .. } = self.dims;
        let data = &self.data;
        let out = &mut self.out;
        let cinv = if data.c > 0.0 { 1.0 / data.c } else { 1.0 };
        for ((x, xt), d) in head_mut(&mut out.x, n).iter_mut().zip(&out.xt).zip(&data.d) {
            *x = d * xt;
        }
        for (i, ((s, y), (yt, e))) in head_mut(&mut out.s, m)
            .iter_mut()
            .zip(out.y.iter_mut())
            .zip(out.yt.iter().zip(&data.e))
            .enumerate()
        {
            *s = if i < z { 0.0 } else { *s / e };
            *y = e * yt * cinv;
        }
        residuals(
            problem,
            (&data.pspan, &data.aspan),
            n,
            m,
            &out.x,
            &out.s,
            &out.y,
            &mut out.ax,
            &mut out.aty,
            &mut out.px,
            &self.settings,
        )
    }
}

/// `rows[..n]` mutably (local helper with a name that does not clash with `linalg`'s).
fn rows_head_mut_n<const N: usize>(rows: &mut [[f64; N]], n: usize) -> &mut [[f64; N]] {
    linalg::rows_head_mut(rows, n)
}

/// Residuals of `(x, s, y)` against the caller's data.
#[allow(clippy::too_many_arguments)]
fn residuals(
    problem: &Problem<'_>,
    (pspan, aspan): (&[Span], &[Span]),
    n: usize,
    m: usize,
    x: &[f64],
    s: &[f64],
    y: &[f64],
    ax: &mut [f64],
    aty: &mut [f64],
    px: &mut [f64],
    settings: &Settings,
) -> Check {
    let x = head(x, n);
    let ax = head_mut(ax, m);
    let aty = head_mut(aty, n);
    let px = head_mut(px, n);
    aty.fill(0.0);
    // Over each row's non-zero span (the same sums, bit for bit: `linalg::dot_span`).
    for (((axi, r), yi), &span) in ax
        .iter_mut()
        .zip(problem.a.chunks_exact(n))
        .zip(y)
        .zip(aspan)
    {
        *axi = linalg::dot_span(r, x, span);
        linalg::axpy(
            *yi,
            range(r, span.0, span.1),
            range_mut(aty, span.0, span.1),
        );
    }
    for ((pi, r), &span) in px.iter_mut().zip(problem.p.chunks_exact(n)).zip(pspan) {
        *pi = linalg::dot_span(r, x, span);
    }
    let (eps_abs, eps_rel) = (settings.eps_abs, settings.eps_rel);
    let mut pres = 0.0f64;
    for ((a, si), b) in ax.iter().zip(s).zip(problem.b) {
        pres = pres.max((a + si - b).abs());
    }
    let ptol = eps_abs
        + eps_rel
            * norm_inf(ax)
                .max(norm_inf(head(s, m)))
                .max(norm_inf(problem.b));
    let mut dres = 0.0f64;
    for ((p, q), a) in px.iter().zip(problem.q).zip(aty.iter()) {
        dres = dres.max((p + q + a).abs());
    }
    let dtol = eps_abs + eps_rel * norm_inf(px).max(norm_inf(problem.q)).max(norm_inf(aty));
    let xpx = dot(x, px);
    let pobj = 0.5 * xpx + dot(problem.q, x);
    let dobj = -0.5 * xpx - dot(problem.b, head(y, m));
    // The objectives' gap and the complementarity sᵀy (s is zero on the equality rows): equal
    // at an exact solution, they differ by xᵀ(dual residual) − yᵀ(primal residual), so both
    // are held to the tolerance.
    let gap = (pobj - dobj).abs().max(dot(head(s, m), head(y, m)).abs());
    let gtol = eps_abs + eps_rel * pobj.abs().min(dobj.abs());
    Check {
        pres,
        dres,
        gap,
        ptol,
        dtol,
        gtol,
        pobj,
        dobj,
    }
}
