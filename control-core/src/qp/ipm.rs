//! The interior-point iteration on the reduced problem `minimise ½ wᵀHw + gᵀw` subject to
//! `G w + s = h`, `s ∈ K`: Clarabel's homogeneous embedding with `(w, s, z, τ, κ)`, where
//! `H w + Gᵀz + g τ = 0`, `G w + s − h τ = 0`, `κ = −wᵀHw/τ − gᵀw − hᵀz`, `s∘z = 0`, `τκ = 0`.

use super::cone::{self, WOp};
use super::linalg::{
    self, axpy, cholesky, cholesky_solve, dot, head, head_mut, matvec, norm_inf, rows_head,
    rows_head_mut, rows_range,
};
use super::reduce::{equality_duals, x_from_w};
use super::{Basis, DENSE, Dims, Kkt, Problem, Reduced, SolveInfo, Solver, Status};

/// Iterative refinement stops when the residual of the Newton system is below this, relative to
/// `1 + ‖rhs‖∞` (Clarabel's relative tolerance).
const REFINE_TOL: f64 = 1e-13;

/// The proximal weight of the cold initial point's system (scaled units): Clarabel's static
/// regularisation. A larger one (such as 1) pulls the initial point towards `w = 0`, far from
/// the central path on some problems: a QP of two variables and three inequalities then takes 42
/// iterations instead of 6, or cycles without converging under another equilibration.
const COLD_PROXIMAL: f64 = 1e-8;

/// A relative pivot of the first normal matrix at or below which free directions are looked for.
const FREE_PIVOT: f64 = 1e-6;

/// A Newton solve whose residual after refinement, relative to `1 + ‖rhs‖∞`, stays above this is
/// inaccurate: the step is not taken from it, and the normal matrix is factored again with
/// [`FALLBACK_REG`].
const ACCURATE: f64 = 1e-9;

/// The regularisation `δ` (scaled units) of both blocks of the Newton system once a solve was
/// inaccurate without it; kept for the rest of the solve (the system only grows worse
/// conditioned as the iterate nears the cone's boundary). Iterative refinement on the
/// unregularised system removes its effect on the solution.
const FALLBACK_REG: f64 = 1e-8;

/// Once this many iterations have passed without the best merit improving, the steps are
/// shortened to [`STALL_STEP_FRACTION`] of the way to the cone's boundary until it improves
/// again. Two random feasible problems (6 and 11 variables, one and three second-order cones)
/// cycled with period four at the default 0.99, their residuals frozen for hundreds of
/// iterations; shortened, they converge (35 and 38 iterations). No balance QP of the scenarios
/// goes 15 iterations without improving (with 8, a few did, and their answers moved).
const STALL_ITERATIONS: u32 = 15;

/// The step fraction once the iterations stall ([`STALL_ITERATIONS`]).
const STALL_STEP_FRACTION: f64 = 0.95;

/// The two regularisations whose solutions differ by the free component of `g`.
const FREE_DELTAS: (f64, f64) = (1e-8, 2e-8);

/// What became of a Newton step.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Step {
    /// Taken: the iterate moved.
    Taken,
    /// Not taken: a Newton solve stayed inaccurate after refinement.
    Inaccurate,
    /// Not taken: no finite direction, or no room to move along it.
    Failed,
}

impl<const N: usize, const M: usize> Solver<N, M> {
    /// Runs the iteration from a cold or warm initial point; leaves the last iterate in
    /// `self.it` (and, for [`Status::Solved`], its recovery in the output and `self.check`).
    pub(super) fn interior_point(
        &mut self,
        problem: &Problem<'_>,
        warm: bool,
        info: &mut SolveInfo,
    ) -> Status {
        if warm {
            self.warm_point();
        } else {
            if !self.cold_point() {
                return Status::Stalled;
            }
            info.factorizations += 1;
        }
        let mut iter = 0u32;
        let mut delta = self.settings.static_reg;
        // The first normal matrix was nearly singular and the search for a free direction is
        // still to be done: only if the iteration does not converge (module doc, step 4).
        let mut free_pending = false;
        self.it.best_merit = f64::INFINITY;
        self.it.since_best = 0;
        let status = loop {
            self.reduced_residuals();
            if !self.iterate_finite() {
                break Status::Stalled;
            }
            let merit = self.optimal_gate();
            if merit < self.it.best_merit {
                self.save_best(merit);
                self.it.since_best = 0;
            } else {
                self.it.since_best = self.it.since_best.saturating_add(1);
            }
            if merit <= 1.0 {
                let check = self.recover(problem);
                self.check = Some(check);
                if check.ok() {
                    return Status::Solved;
                }
            }
            if self.it.kappa > self.it.tau {
                if let Some(ratio) = self.primal_certificate(problem) {
                    info.certificate_residual = ratio;
                    return Status::PrimalInfeasible;
                }
                if let Some(ratio) = self.dual_certificate(problem) {
                    info.certificate_residual = ratio;
                    return Status::DualInfeasible;
                }
                if free_pending {
                    free_pending = false;
                    if self.search_free(problem, info).is_some() {
                        return Status::DualInfeasible;
                    }
                }
            }
            if iter >= self.settings.max_iter {
                break Status::MaxIterations;
            }
            let Some(min_pivot) = self.factor(true, delta) else {
                break Status::Stalled;
            };
            info.factorizations += 1;
            if iter == 0 && min_pivot <= FREE_PIVOT {
                // The normal matrix is (nearly) singular: [H; G] may have a common null space
                // (free directions). Along one with gᵀd ≠ 0 the objective is unbounded and the
                // iteration cannot converge: it is looked for if the iteration stops without an
                // answer or heads for a certificate (κ > τ) that is not one. Looked for here, it
                // would cost two more factorisations on every solve of a problem whose normal
                // matrix is merely badly scaled (the balance QP's forces far inside their cones,
                // whose rows weigh nearly nothing).
                free_pending = true;
            }
            // Towards an infeasibility certificate (κ > τ, τ → 0) the steps are taken as they
            // come: the certificate needs no accurate solution, and a fixed δ would be large
            // against the vanishing iterate.
            let converging = self.it.tau >= self.it.kappa;
            let mut outcome = self.step(delta >= FALLBACK_REG || !converging);
            if outcome != Step::Taken && delta < FALLBACK_REG && converging {
                // Without regularisation the normal matrix was too ill-conditioned for this
                // step (rows at the cone's boundary, whose W⁻² grow without bound, swamp the
                // rest in rounding): factor it again, regularised, with the same scaling, and
                // keep that for the rest of the solve.
                delta = FALLBACK_REG;
                if self.factor(false, delta).is_none() {
                    break Status::Stalled;
                }
                info.factorizations += 1;
                outcome = self.step(true);
            }
            if outcome != Step::Taken {
                break Status::Stalled;
            }
            iter += 1;
            info.iterations = iter;
        };
        if free_pending && self.search_free(problem, info).is_some() {
            return Status::DualInfeasible;
        }
        // Not converged: return the best iterate seen, not necessarily the last.
        if self.it.best_merit.is_finite() {
            self.restore_best();
        }
        status
    }

    fn save_best(&mut self, merit: f64) {
        let Dims { r, mk, .. } = self.dims;
        let it = &mut self.it;
        it.best_merit = merit;
        linalg::copy(head(&it.w, r), &mut it.best_w);
        linalg::copy(head(&it.s, mk), &mut it.best_s);
        linalg::copy(head(&it.z, mk), &mut it.best_z);
        it.best_tau = it.tau;
        it.best_kappa = it.kappa;
    }

    fn restore_best(&mut self) {
        let Dims { r, mk, .. } = self.dims;
        let it = &mut self.it;
        linalg::copy(head(&it.best_w, r), &mut it.w);
        linalg::copy(head(&it.best_s, mk), &mut it.s);
        linalg::copy(head(&it.best_z, mk), &mut it.z);
        it.tau = it.best_tau;
        it.kappa = it.best_kappa;
    }

    fn iterate_finite(&self) -> bool {
        let Dims { r, mk, .. } = self.dims;
        let it = &self.it;
        it.tau.is_finite()
            && it.kappa.is_finite()
            && it.rtau.is_finite()
            && linalg::all_finite(head(&it.rx, r))
            && linalg::all_finite(head(&it.rz, mk))
    }

    /// Residuals of the embedding and the products they need.
    fn reduced_residuals(&mut self) {
        let Dims { r, mk, .. } = self.dims;
        let red = &self.red;
        let it = &mut self.it;
        matvec(rows_head(&red.hess, r), r, &it.w, head_mut(&mut it.hw, r));
        g_mul_t(red, r, head(&it.z, mk), &mut it.gtz);
        g_mul(red, r, &it.w, head_mut(&mut it.gw, mk));
        let tau = it.tau;
        for (((rx, hw), gtz), g) in head_mut(&mut it.rx, r)
            .iter_mut()
            .zip(&it.hw)
            .zip(&it.gtz)
            .zip(&red.g)
        {
            *rx = hw + gtz + tau * g;
        }
        for (((rz, gw), s), h) in head_mut(&mut it.rz, mk)
            .iter_mut()
            .zip(&it.gw)
            .zip(&it.s)
            .zip(&red.h)
        {
            *rz = gw + s - tau * h;
        }
        let w = head(&it.w, r);
        it.rtau = dot(head(&red.g, r), w)
            + dot(head(&red.h, mk), head(&it.z, mk))
            + it.kappa
            + dot(w, head(&it.hw, r)) / tau;
    }

    /// How far the iterate is from convergence in the scaled reduced problem: the largest ratio
    /// of a residual to its tolerance (≤ 1: converged there; the full check in the caller's units
    /// decides). Infinity for a non-finite iterate.
    fn optimal_gate(&self) -> f64 {
        let Dims { r, mk, .. } = self.dims;
        let (it, red, st) = (&self.it, &self.red, &self.settings);
        let tau = it.tau;
        let c = self.data.c;
        let pres = norm_inf(head(&it.rz, mk));
        let ptol = tau * st.eps_abs
            + st.eps_rel
                * norm_inf(head(&it.gw, mk))
                    .max(norm_inf(head(&it.s, mk)))
                    .max(tau * norm_inf(head(&red.h, mk)));
        let dres = norm_inf(head(&it.rx, r));
        let dtol = tau * st.eps_abs * c
            + st.eps_rel
                * norm_inf(head(&it.hw, r))
                    .max(norm_inf(head(&it.gtz, r)))
                    .max(tau * norm_inf(head(&red.g, r)));
        let w = head(&it.w, r);
        let xhx = dot(w, head(&it.hw, r)) / (tau * tau);
        let gw = dot(head(&red.g, r), w) / tau;
        let hz = dot(head(&red.h, mk), head(&it.z, mk)) / tau;
        let gap = (xhx + gw + hz).abs();
        let pobj = 0.5 * xhx + gw + self.qr.offset;
        let dobj = -0.5 * xhx - hz + self.qr.offset;
        let gtol = st.eps_abs * c + st.eps_rel * pobj.abs().min(dobj.abs());
        let merit = (pres / ptol).max(dres / dtol).max(gap / gtol);
        if merit.is_nan() { f64::INFINITY } else { merit }
    }

    /// Nesterov–Todd scaling at the iterate (if `scale`; otherwise the one already set), and
    /// the Cholesky factor of the normal matrix with `δ` on its diagonal. `None` if the iterate
    /// has left the cone or the factor is not finite; otherwise the smallest pivot relative to
    /// the largest diagonal entry.
    fn factor(&mut self, scale: bool, delta: f64) -> Option<f64> {
        let Dims { r, l, mk, .. } = self.dims;
        let kkt = &mut self.kkt;
        if scale
            && !cone::nt_scaling(
                head(&self.it.s, mk),
                head(&self.it.z, mk),
                l,
                &mut kkt.wbar,
                &mut kkt.eta,
                &mut kkt.lambda,
            )
        {
            return None;
        }
        kkt.delta = delta;
        // Both blocks carry δ (quasi-definite regularisation): the cone block's (W² + δI)⁻¹
        // bounds the weight of a row at the cone's boundary by 1/δ, where W⁻² grows without
        // bound and its rows would swamp the rest of the normal matrix in rounding.
        cone::regularised_factor(
            head(&kkt.wbar, mk),
            head(&kkt.eta, mk),
            l,
            delta,
            &mut kkt.lreg,
        );
        let red = &self.red;
        for (i, (dst, src)) in rows_head_mut(&mut kkt.chol, r)
            .iter_mut()
            .zip(&red.hess)
            .enumerate()
        {
            let n = i + 1;
            linalg::copy(head(src, n), head_mut(dst, n));
            if let Some(d) = dst.get_mut(i) {
                *d += delta;
            }
        }
        // + Gᵀ W⁻² G, row by row: sparse rows (a force's cone, a bound on one variable) on their
        // support at once, dense ones four at a time.
        kkt.pending = 0;
        for (i, lr) in kkt.lreg.iter().enumerate().take(l) {
            let inv = 1.0 / lr[0];
            let grow = linalg::row(&red.gmat, i);
            match support(red, i) {
                None => {
                    let slot = linalg::row_mut(&mut kkt.rows, kkt.pending);
                    for (v, gv) in head_mut(slot, r).iter_mut().zip(grow) {
                        *v = gv * inv;
                    }
                    kkt.pending += 1;
                    flush_rank_four(&mut kkt.chol, &mut kkt.rows, &mut kkt.pending, r, false);
                }
                Some(idx) => {
                    // Slots 3 – 5 are free between flushes (at most three pending).
                    let [.., v0, _, _] = &mut kkt.rows;
                    for (v, c) in v0.iter_mut().zip(idx) {
                        *v = linalg::at(grow, usize::from(*c)) * inv;
                    }
                    let [.., v0, v1, v2] = &kkt.rows;
                    sparse_rank_update(&mut kkt.chol, idx, [v0, v1, v2], 1);
                }
            }
        }
        // A cone's block Gᵦᵀ Dᵦ Gᵦ (Dᵦ = W⁻² of the cone, 3 × 3): its dense rows by a small
        // Cholesky factor of their part of Dᵦ (one dense rank-one each), the rest on supports.
        let (_, lc) = kkt.lreg.split_at(l.min(kkt.lreg.len()));
        let (_, wc) = cone::split(head(&kkt.wbar, mk), l);
        let (_, ec) = cone::split(head(&kkt.eta, mk), l);
        for (cone_index, ((lb, wb), eb)) in lc
            .chunks_exact(3)
            .zip(wc.chunks_exact(3))
            .zip(ec.chunks_exact(3))
            .enumerate()
        {
            let (&[w0, w1, w2], Some(&e)) = (wb, eb.first()) else {
                continue;
            };
            let i = l + 3 * cone_index;
            // T with Tᵀ T = Dᵦ: the half-solve of each unit vector.
            let t = [
                cone::soc_half([w0, w1, w2], e, lb, 1.0, 0.0, 0.0),
                cone::soc_half([w0, w1, w2], e, lb, 0.0, 1.0, 0.0),
                cone::soc_half([w0, w1, w2], e, lb, 0.0, 0.0, 1.0),
            ];
            let col = |q: usize| match t.get(q) {
                Some(&(a, b, c)) => [a, b, c],
                None => [0.0; 3],
            };
            let mut dm = [[0.0f64; 3]; 3];
            for (p, drow) in dm.iter_mut().enumerate() {
                for (q, d) in drow.iter_mut().enumerate() {
                    let (cp, cq) = (col(p), col(q));
                    *d = cp[0] * cq[0] + cp[1] * cq[1] + cp[2] * cq[2];
                }
            }
            let dmat =
                |p: usize, q: usize| dm.get(p).and_then(|r| r.get(q)).copied().unwrap_or(0.0);
            // Rows: dense, sparse (with a support) or zero.
            let mut dense = [0usize; 3];
            let mut nd = 0;
            let mut sparse = [0usize; 3];
            let mut ns = 0;
            for q in 0..3 {
                match red.nnz.get(i + q).copied().unwrap_or(DENSE) {
                    0 => {}
                    DENSE => {
                        put_usize(&mut dense, nd, q);
                        nd += 1;
                    }
                    _ => {
                        put_usize(&mut sparse, ns, q);
                        ns += 1;
                    }
                }
            }
            // Dense × dense: D_dd = L Lᵀ, one rank-one per column of L.
            let mut lf = [[0.0f64; 3]; 3];
            let mut ok = true;
            for a in 0..nd {
                for b in 0..=a {
                    let mut v = dmat(at_usize(&dense, a), at_usize(&dense, b));
                    for c in 0..b {
                        v -= lget(&lf, a, c) * lget(&lf, b, c);
                    }
                    if a == b {
                        if !(v > 0.0) {
                            ok = false;
                            v = 0.0;
                        }
                        lset(&mut lf, a, a, libm::sqrt(v));
                    } else {
                        let d = lget(&lf, b, b);
                        lset(&mut lf, a, b, if d > 0.0 { v / d } else { 0.0 });
                    }
                }
            }
            if !ok {
                // Not positive in rounding: every non-zero row as dense, through T.
                nd = 0;
                for q in 0..3 {
                    if red.nnz.get(i + q).copied().unwrap_or(DENSE) != 0 {
                        put_usize(&mut dense, nd, q);
                        nd += 1;
                    }
                }
                for q in 0..3 {
                    let slot = linalg::row_mut(&mut kkt.rows, kkt.pending);
                    let slot = head_mut(slot, r);
                    slot.fill(0.0);
                    for p in dense.iter().take(nd) {
                        linalg::axpy(
                            col(*p).get(q).copied().unwrap_or(0.0),
                            head(linalg::row(&red.gmat, i + p), r),
                            slot,
                        );
                    }
                    kkt.pending += 1;
                    flush_rank_four(&mut kkt.chol, &mut kkt.rows, &mut kkt.pending, r, false);
                }
                continue;
            }
            for c in 0..nd {
                let slot = head_mut(linalg::row_mut(&mut kkt.rows, kkt.pending), r);
                slot.fill(0.0);
                for a in c..nd {
                    let g = head(linalg::row(&red.gmat, i + at_usize(&dense, a)), r);
                    linalg::axpy(lget(&lf, a, c), g, slot);
                }
                kkt.pending += 1;
                flush_rank_four(&mut kkt.chol, &mut kkt.rows, &mut kkt.pending, r, false);
            }
            // Dense × sparse, both ways: D_pq (g_p g_qᵀ + g_q g_pᵀ) on the lower triangle.
            for p in dense.iter().take(nd) {
                let gp = head(linalg::row(&red.gmat, i + p), r);
                for q in sparse.iter().take(ns) {
                    let dpq = dmat(*p, *q);
                    let gq = linalg::row(&red.gmat, i + q);
                    for c in support(red, i + q).unwrap_or(&[]) {
                        let c = usize::from(*c);
                        let f = dpq * linalg::at(gq, c);
                        if f == 0.0 {
                            continue;
                        }
                        axpy(
                            f,
                            head(gp, c + 1),
                            head_mut(linalg::row_mut(&mut kkt.chol, c), c + 1),
                        );
                        for (arow, gpa) in linalg::rows_range_mut(&mut kkt.chol, c, r)
                            .iter_mut()
                            .zip(linalg::tail(gp, c))
                        {
                            if let Some(x) = arow.get_mut(c) {
                                *x += f * gpa;
                            }
                        }
                    }
                }
            }
            // Sparse × sparse.
            for p in sparse.iter().take(ns) {
                let gp = linalg::row(&red.gmat, i + p);
                let sp = support(red, i + p).unwrap_or(&[]);
                for q in sparse.iter().take(ns) {
                    let dpq = dmat(*p, *q);
                    let gq = linalg::row(&red.gmat, i + q);
                    let sq = support(red, i + q).unwrap_or(&[]);
                    for a in sp {
                        let a = usize::from(*a);
                        let fa = dpq * linalg::at(gp, a);
                        let row = linalg::row_mut(&mut kkt.chol, a);
                        for b in sq {
                            let b = usize::from(*b);
                            if b <= a
                                && let Some(x) = row.get_mut(b)
                            {
                                *x += fa * linalg::at(gq, b);
                            }
                        }
                    }
                }
            }
        }
        flush_rank_four(&mut kkt.chol, &mut kkt.rows, &mut kkt.pending, r, true);
        let mut max_diag = 0.0f64;
        for (i, row) in rows_head(&kkt.chol, r).iter().enumerate() {
            max_diag = max_diag.max(linalg::at(row, i).abs());
        }
        let floor = 1e-14 * max_diag.max(1.0);
        let replacement = 1e-7 * max_diag.max(1.0);
        let (_, min_pivot) = cholesky(&mut kkt.chol, r, floor, replacement);
        let finite = rows_head(&kkt.chol, r)
            .iter()
            .all(|row| linalg::all_finite(head(row, r)));
        finite.then_some(min_pivot / max_diag.max(1.0))
    }

    /// The cold initial point (Clarabel's): `(w, s, z)` from one or two solves with `W = I`,
    /// moved into the cone's interior; `τ = κ = 1`.
    fn cold_point(&mut self) -> bool {
        let Dims { r, l, mk, .. } = self.dims;
        self.identity_scaling();
        // A proximal term keeps the initial point finite along directions that neither the
        // objective nor the constraints bound (free directions of an unbounded problem): the
        // initial point is a heuristic, so the system is solved as regularised, unrefined.
        if self
            .factor(false, COLD_PROXIMAL.max(self.settings.static_reg))
            .is_none()
        {
            return false;
        }
        let refine = 0;
        let it = &mut self.it;
        let red = &self.red;
        let dims = self.dims;
        if red.linear {
            head_mut(&mut it.bx, r).fill(0.0);
            linalg::copy(head(&red.h, mk), head_mut(&mut it.bz, mk));
            kkt_solve(
                &mut self.kkt,
                red,
                dims,
                refine,
                &it.bx,
                &it.bz,
                &mut it.w,
                &mut it.z,
            );
            for (s, v) in head_mut(&mut it.s, mk).iter_mut().zip(&it.z) {
                *s = -v;
            }
            for (b, g) in head_mut(&mut it.bx, r).iter_mut().zip(&red.g) {
                *b = -g;
            }
            head_mut(&mut it.bz, mk).fill(0.0);
            kkt_solve(
                &mut self.kkt,
                red,
                dims,
                refine,
                &it.bx,
                &it.bz,
                &mut it.x1,
                &mut it.z,
            );
        } else {
            for (b, g) in head_mut(&mut it.bx, r).iter_mut().zip(&red.g) {
                *b = -g;
            }
            linalg::copy(head(&red.h, mk), head_mut(&mut it.bz, mk));
            kkt_solve(
                &mut self.kkt,
                red,
                dims,
                refine,
                &it.bx,
                &it.bz,
                &mut it.w,
                &mut it.z,
            );
            for (s, v) in head_mut(&mut it.s, mk).iter_mut().zip(&it.z) {
                *s = -v;
            }
        }
        let degree = dims.degree();
        cone::shift_to_interior(head_mut(&mut it.s, mk), l, degree);
        cone::shift_to_interior(head_mut(&mut it.z, mk), l, degree);
        it.tau = 1.0;
        it.kappa = 1.0;
        linalg::all_finite(head(&it.w, r))
            && linalg::all_finite(head(&it.s, mk))
            && linalg::all_finite(head(&it.z, mk))
    }

    /// The warm initial point: `λ (x, s, y)_prev + (1 − λ)(0, e, e)` in the scaled reduced
    /// variables (Skajaa, Andersen and Ye), `τ = 1`, `κ = sᵀz / degree`.
    fn warm_point(&mut self) {
        let Dims { n, m, z, l, mk, .. } = self.dims;
        // The full reduced coordinates first, then the kept ones of them.
        let r = self.cond.r_full;
        let lam = self.settings.warm_start_weight;
        let data = &self.data;
        let out = &mut self.out;
        let it = &mut self.it;
        // x̃ − x̃_p, then w = Nᵀ(x̃ − x̃_p).
        for (((xt, x), d), xp) in head_mut(&mut out.xt, n)
            .iter_mut()
            .zip(&out.x)
            .zip(&data.d)
            .zip(&self.qr.xp)
        {
            let scaled = if *d > 0.0 { x / d } else { 0.0 };
            *xt = if self.qr.kind == Basis::Identity {
                scaled
            } else {
                scaled - xp
            };
        }
        match self.qr.kind {
            Basis::Identity => {
                for (w, xt) in head_mut(&mut it.w, r).iter_mut().zip(&out.xt) {
                    *w = lam * xt;
                }
            }
            Basis::Orthonormal => {
                for (w, b) in head_mut(&mut it.w, r)
                    .iter_mut()
                    .zip(rows_head(&self.qr.basis, r))
                {
                    *w = lam * dot(head(b, n), head(&out.xt, n));
                }
            }
            Basis::Range => {
                // The kept variables themselves (`x̃_p = 0`).
                for (w, fj) in head_mut(&mut it.w, r).iter_mut().zip(&self.qr.freecol) {
                    *w = lam * linalg::at(&out.xt, *fj);
                }
            }
            Basis::Eliminated => {
                // The orthogonal projection on the null space, Q [0; (Qᵀd)_{k..}], read at
                // the free variables (where N is the identity).
                let k = n - r;
                let a = &data.a;
                let d = head_mut(&mut out.xt, n);
                for s in 0..k {
                    let u = linalg::range(linalg::row(a, s), s, n);
                    linalg::apply_householder(
                        u,
                        linalg::at(&self.qr.tau, s),
                        linalg::tail_mut(d, s),
                    );
                }
                head_mut(d, k).fill(0.0);
                for s in (0..k).rev() {
                    let u = linalg::range(linalg::row(a, s), s, n);
                    linalg::apply_householder(
                        u,
                        linalg::at(&self.qr.tau, s),
                        linalg::tail_mut(d, s),
                    );
                }
                for (w, fj) in head_mut(&mut it.w, r).iter_mut().zip(&self.qr.freecol) {
                    *w = lam * linalg::at(d, *fj);
                }
            }
        }
        let c = data.c;
        let rows = linalg::range(&out.s, z, m)
            .iter()
            .zip(linalg::range(&out.y, z, m))
            .zip(linalg::range(&data.e, z, m));
        for ((si, zi), ((s, y), e)) in head_mut(&mut it.s, mk)
            .iter_mut()
            .zip(head_mut(&mut it.z, mk).iter_mut())
            .zip(rows)
        {
            *si = lam * s * e;
            *zi = if *e > 0.0 { lam * c * y / e } else { 0.0 };
        }
        cone::shift(head_mut(&mut it.s, mk), l, 1.0 - lam);
        cone::shift(head_mut(&mut it.z, mk), l, 1.0 - lam);
        for v in [&mut it.s, &mut it.z] {
            let v = head_mut(v, mk);
            let (min, _) = cone::margins(v, l);
            if min <= 0.0 || !min.is_finite() {
                // Not interior (a given point outside the cone, or overflow): recentre.
                if !linalg::all_finite(v) {
                    v.fill(0.0);
                    cone::shift(v, l, 1.0);
                } else {
                    cone::shift(v, l, -min + (1.0 - lam).max(1e-3));
                }
            }
        }
        if self.cond.nu > 0 {
            self.cond.compact(head_mut(&mut it.w, r));
        }
        let r = self.dims.r;
        if !linalg::all_finite(head(&it.w, r)) {
            head_mut(&mut it.w, r).fill(0.0);
        }
        let degree = self.dims.degree();
        it.tau = 1.0;
        it.kappa = if degree > 0 {
            (dot(head(&it.s, mk), head(&it.z, mk)) / degree as f64).max(1e-8)
        } else {
            1.0 - lam
        };
    }

    /// One predictor–corrector step from the factor in `self.kkt`. An inaccurate step is taken
    /// only if `accept_inaccurate`.
    fn step(&mut self, accept_inaccurate: bool) -> Step {
        let Dims { r, l, mk, .. } = self.dims;
        self.kkt.worst = 0.0;
        let dims = self.dims;
        let refine = self.settings.refine_steps;
        let degree = dims.degree();
        // Constant system: [H Gᵀ; G −W²] [x1; z1] = [−g; h].
        {
            let it = &mut self.it;
            let red = &self.red;
            for (b, g) in head_mut(&mut it.bx, r).iter_mut().zip(&red.g) {
                *b = -g;
            }
            linalg::copy(head(&red.h, mk), head_mut(&mut it.bz, mk));
            kkt_solve(
                &mut self.kkt,
                red,
                dims,
                refine,
                &it.bx,
                &it.bz,
                &mut it.x1,
                &mut it.z1,
            );
        }
        // The Δτ denominator: −((x1 − w/τ)ᵀH(x1 − w/τ) + ‖W z1‖² + κ/τ).
        let den = {
            let it = &mut self.it;
            let tau = it.tau;
            for ((v, x1), w) in head_mut(&mut it.dw, r).iter_mut().zip(&it.x1).zip(&it.w) {
                *v = x1 - w / tau;
            }
            matvec(
                rows_head(&self.red.hess, r),
                r,
                &it.dw,
                head_mut(&mut it.bx, r),
            );
            let vhv = dot(head(&it.dw, r), head(&it.bx, r)).max(0.0);
            let kkt = &self.kkt;
            cone::apply_w(
                WOp::W,
                head(&kkt.wbar, mk),
                head(&kkt.eta, mk),
                l,
                head(&it.z1, mk),
                head_mut(&mut it.u, mk),
            );
            let wz = head(&it.u, mk);
            -(vhv + dot(wz, wz) + it.kappa / tau)
        };
        if !(den < 0.0) || !den.is_finite() {
            return Step::Failed;
        }
        let (tau, kappa) = (self.it.tau, self.it.kappa);
        // Predictor (affine): d_s = λ∘λ, d_κ = τκ.
        {
            let lambda = head(&self.kkt.lambda, mk);
            cone::jordan(lambda, lambda, l, head_mut(&mut self.it.dsr, mk));
        }
        self.direction(1.0, tau * kappa, den);
        let alpha_aff = self.max_step(1.0);
        let sigma = {
            let a = (1.0 - alpha_aff).clamp(0.0, 1.0);
            a * a * a
        };
        let mu =
            (dot(head(&self.it.s, mk), head(&self.it.z, mk)) + tau * kappa) / (degree as f64 + 1.0);
        // Corrector: d_s = λ∘λ + (W⁻¹Δs_a)∘(WΔz_a) − σμe, d_κ = τκ + Δτ_aΔκ_a − σμ.
        let dkappa = tau * kappa + self.it.dtau * self.it.dkappa - sigma * mu;
        {
            let kkt = &self.kkt;
            let it = &mut self.it;
            let (wb, et) = (head(&kkt.wbar, mk), head(&kkt.eta, mk));
            cone::apply_w(
                WOp::Inverse,
                wb,
                et,
                l,
                head(&it.ds, mk),
                head_mut(&mut it.ds_scaled, mk),
            );
            cone::apply_w(
                WOp::W,
                wb,
                et,
                l,
                head(&it.dz, mk),
                head_mut(&mut it.dz_scaled, mk),
            );
            cone::jordan(
                head(&it.ds_scaled, mk),
                head(&it.dz_scaled, mk),
                l,
                head_mut(&mut it.u, mk),
            );
            let lambda = head(&kkt.lambda, mk);
            cone::jordan(lambda, lambda, l, head_mut(&mut it.dsr, mk));
            axpy(1.0, head(&it.u, mk), head_mut(&mut it.dsr, mk));
            cone::shift(head_mut(&mut it.dsr, mk), l, -sigma * mu);
        }
        self.direction(1.0 - sigma, dkappa, den);
        let fraction = if self.it.since_best >= STALL_ITERATIONS {
            self.settings.step_fraction.min(STALL_STEP_FRACTION)
        } else {
            self.settings.step_fraction
        };
        let alpha = fraction * self.max_step(1.0);
        let it = &mut self.it;
        let finite = it.dtau.is_finite()
            && it.dkappa.is_finite()
            && linalg::all_finite(head(&it.dw, r))
            && linalg::all_finite(head(&it.ds, mk))
            && linalg::all_finite(head(&it.dz, mk));
        if !finite || !(alpha > 1e-10) {
            return Step::Failed;
        }
        if !accept_inaccurate && !(self.kkt.worst <= ACCURATE) {
            return Step::Inaccurate;
        }
        axpy(alpha, head(&it.dw, r), head_mut(&mut it.w, r));
        axpy(alpha, head(&it.ds, mk), head_mut(&mut it.s, mk));
        axpy(alpha, head(&it.dz, mk), head_mut(&mut it.z, mk));
        it.tau += alpha * it.dtau;
        it.kappa += alpha * it.dkappa;
        if it.tau > 0.0 && it.kappa > 0.0 {
            Step::Taken
        } else {
            Step::Failed
        }
    }

    /// The Newton direction for right-hand sides `d_x = coef·r_x`, `d_z = coef·r_z`,
    /// `d_τ = coef·r_τ`, `d_s = it.dsr`, `d_κ = dkappa`.
    fn direction(&mut self, coef: f64, dkappa: f64, den: f64) {
        let Dims { r, l, mk, .. } = self.dims;
        let dims = self.dims;
        let refine = self.settings.refine_steps;
        let it = &mut self.it;
        let red = &self.red;
        {
            let kkt = &self.kkt;
            let (wb, et) = (head(&kkt.wbar, mk), head(&kkt.eta, mk));
            // u = W (λ \ d_s)
            cone::jordan_div(
                head(&kkt.lambda, mk),
                head(&it.dsr, mk),
                l,
                head_mut(&mut it.ds, mk),
            );
            cone::apply_w(WOp::W, wb, et, l, head(&it.ds, mk), head_mut(&mut it.u, mk));
        }
        for (b, rx) in head_mut(&mut it.bx, r).iter_mut().zip(&it.rx) {
            *b = -coef * rx;
        }
        for ((b, rz), u) in head_mut(&mut it.bz, mk).iter_mut().zip(&it.rz).zip(&it.u) {
            *b = -coef * rz + u;
        }
        kkt_solve(
            &mut self.kkt,
            red,
            dims,
            refine,
            &it.bx,
            &it.bz,
            &mut it.x2,
            &mut it.z2,
        );
        let tau = it.tau;
        let dtau_rhs = coef * it.rtau;
        let num = -dtau_rhs + dkappa / tau
            - dot(head(&red.g, r), head(&it.x2, r))
            - 2.0 * dot(head(&it.hw, r), head(&it.x2, r)) / tau
            - dot(head(&red.h, mk), head(&it.z2, mk));
        let dtau = num / den;
        for ((d, x2), x1) in head_mut(&mut it.dw, r).iter_mut().zip(&it.x2).zip(&it.x1) {
            *d = x2 + dtau * x1;
        }
        for ((d, z2), z1) in head_mut(&mut it.dz, mk).iter_mut().zip(&it.z2).zip(&it.z1) {
            *d = z2 + dtau * z1;
        }
        // Δs from the primal equation, G Δw + Δs − h Δτ = −d_z, rather than from the
        // linearised complementarity (Δs = −u − W²Δz, the same in exact arithmetic): the primal
        // residual then falls by exactly the step, whatever the accuracy of the solve.
        g_mul(red, r, &it.dw, head_mut(&mut it.ds, mk));
        for ((d, rz), h) in head_mut(&mut it.ds, mk).iter_mut().zip(&it.rz).zip(&red.h) {
            *d = -coef * rz - *d + h * dtau;
        }
        it.dtau = dtau;
        it.dkappa = -(dkappa + it.kappa * dtau) / tau;
    }

    /// The largest step (at most `cap`) keeping `s`, `z`, `τ`, `κ` in their cones.
    fn max_step(&self, cap: f64) -> f64 {
        let Dims { l, mk, .. } = self.dims;
        let it = &self.it;
        let mut a = cone::step_length(head(&it.s, mk), head(&it.ds, mk), l, cap);
        a = a.min(cone::step_length(head(&it.z, mk), head(&it.dz, mk), l, cap));
        if it.dtau < 0.0 {
            a = a.min(-it.tau / it.dtau);
        }
        if it.dkappa < 0.0 {
            a = a.min(-it.kappa / it.dkappa);
        }
        if a.is_nan() { 0.0 } else { a.max(0.0) }
    }

    /// A primal-infeasibility certificate from the iterate's `z`, verified in the caller's units.
    fn primal_certificate(&mut self, problem: &Problem<'_>) -> Option<f64> {
        let Dims { n, m, z, r, mk, .. } = self.dims;
        let it = &self.it;
        let hz = dot(head(&self.red.h, mk), head(&it.z, mk));
        if !(hz < 0.0) || norm_inf(head(&it.gtz, r)) > 1e4 * self.settings.eps_inf_rel * hz.abs() {
            return None;
        }
        // ỹ_K = z, ỹ_E from Ã_Eᵀỹ_E = −Ã_Kᵀz (range part).
        let mut v = [0.0f64; N];
        for (arow, zi) in rows_range(&self.data.a, z, m).iter().zip(head(&it.z, mk)) {
            axpy(*zi, head(arow, n), head_mut(&mut v, n));
        }
        equality_duals(&self.data.a, &self.qr, self.dims, &mut v, &mut self.out.yt);
        let out = &mut self.out;
        let data = &self.data;
        for (i, (y, e)) in head_mut(&mut out.y, m).iter_mut().zip(&data.e).enumerate() {
            let yt = if i < z {
                linalg::at(&out.yt, i)
            } else {
                linalg::at(&it.z, i - z)
            };
            *y = e * yt;
        }
        let y = head_mut(&mut out.y, m);
        let scale = norm_inf(y);
        if !(scale > 0.0) || !scale.is_finite() {
            return None;
        }
        linalg::scal(1.0 / scale, y);
        let aty = head_mut(&mut out.aty, n);
        aty.fill(0.0);
        for (arow, yi) in problem.a.chunks_exact(n).zip(y.iter()) {
            axpy(*yi, arow, aty);
        }
        let by = dot(problem.b, y);
        let ratio = norm_inf(aty) / by.abs();
        if by <= -self.settings.eps_inf_abs && ratio <= self.settings.eps_inf_rel {
            head_mut(&mut out.x, n).fill(0.0);
            head_mut(&mut out.s, m).fill(0.0);
            Some(ratio)
        } else {
            None
        }
    }

    /// A dual-infeasibility certificate from the iterate's `w` (a cheap test of `w` first).
    fn dual_certificate(&mut self, problem: &Problem<'_>) -> Option<f64> {
        let Dims { r, mk, .. } = self.dims;
        let it = &self.it;
        let gw = dot(head(&self.red.g, r), head(&it.w, r));
        let loose = 1e4 * self.settings.eps_inf_rel * gw.abs();
        if !(gw < 0.0) || norm_inf(head(&it.hw, r)) > loose {
            return None;
        }
        let mut worst = 0.0f64;
        for (a, b) in head(&it.gw, mk).iter().zip(&it.s) {
            worst = worst.max((a + b).abs());
        }
        if worst > loose {
            return None;
        }
        let it = &mut self.it;
        linalg::copy(head(&it.w, r), &mut it.cert);
        self.check_dual_certificate(problem)
    }

    /// The search for a free direction with `W = I` (whatever the iterate: the null space of
    /// `[H; G]` does not depend on the scaling), counted as the two factorisations it takes;
    /// the certificate's residual, also in `info`, if one is found.
    fn search_free(&mut self, problem: &Problem<'_>, info: &mut SolveInfo) -> Option<f64> {
        info.factorizations += 2;
        self.identity_scaling();
        let ratio = self.free_direction(problem)?;
        info.certificate_residual = ratio;
        Some(ratio)
    }

    /// Sets the Nesterov–Todd scaling to the identity, `W = I`.
    fn identity_scaling(&mut self) {
        let Dims { l, mk, .. } = self.dims;
        let kkt = &mut self.kkt;
        let (wl, wc) = cone::split_mut(head_mut(&mut kkt.wbar, mk), l);
        wl.fill(1.0);
        for b in wc.chunks_exact_mut(3) {
            b.copy_from_slice(&[1.0, 0.0, 0.0]);
        }
        head_mut(&mut kkt.eta, mk).fill(1.0);
    }

    /// Looks for a free direction `d` (`H d = 0`, `G d = 0`) with `gᵀd < 0`: the difference of
    /// the solutions of `(S + δ I) v = −g` for two small `δ` is the free component of `−g`
    /// (scaled by `1/δ₁ − 1/δ₂`), if any. Verified in the caller's units.
    fn free_direction(&mut self, problem: &Problem<'_>) -> Option<f64> {
        let Dims { r, mk, .. } = self.dims;
        let (d1, d2) = FREE_DELTAS;
        for (delta, second) in [(d1, false), (d2, true)] {
            self.factor(false, delta)?;
            let it = &mut self.it;
            let v = if second { &mut it.x2 } else { &mut it.x1 };
            for (vi, g) in head_mut(v, r).iter_mut().zip(&self.red.g) {
                *vi = -g;
            }
            cholesky_solve(&self.kkt.chol, r, head_mut(v, r));
        }
        let it = &mut self.it;
        for ((c, a), b) in head_mut(&mut it.cert, r).iter_mut().zip(&it.x1).zip(&it.x2) {
            *c = a - b;
        }
        let red = &self.red;
        let gd = dot(head(&red.g, r), head(&it.cert, r));
        if !(gd < 0.0) || !gd.is_finite() {
            return None;
        }
        matvec(
            rows_head(&red.hess, r),
            r,
            &it.cert,
            head_mut(&mut it.bx, r),
        );
        matvec(
            rows_head(&red.gmat, mk),
            r,
            &it.cert,
            head_mut(&mut it.bz, mk),
        );
        let loose = 1e4 * self.settings.eps_inf_rel * gd.abs();
        if norm_inf(head(&it.bx, r)) > loose || norm_inf(head(&it.bz, mk)) > loose {
            return None;
        }
        self.check_dual_certificate(problem)
    }

    /// Verifies the candidate `it.cert` (reduced) as a dual-infeasibility certificate of the
    /// caller's problem and writes it.
    fn check_dual_certificate(&mut self, problem: &Problem<'_>) -> Option<f64> {
        let Dims { n, m, z, l, r, .. } = self.dims;
        let mut full = [0.0f64; N];
        let (cert, rc) = self.full_w(head(&self.it.cert, r), 0.0, &mut full);
        x_from_w(&self.qr, n, rc, cert, 1.0, false, &mut self.out.xt);
        let out = &mut self.out;
        for ((x, xt), d) in head_mut(&mut out.x, n)
            .iter_mut()
            .zip(&out.xt)
            .zip(&self.data.d)
        {
            *x = d * xt;
        }
        let x = head_mut(&mut out.x, n);
        let scale = norm_inf(x);
        if !(scale > 0.0) || !scale.is_finite() {
            return None;
        }
        linalg::scal(1.0 / scale, x);
        let qx = dot(problem.q, x);
        if !(qx <= -self.settings.eps_inf_abs) {
            return None;
        }
        let mut px = 0.0f64;
        for prow in problem.p.chunks_exact(n) {
            px = px.max(dot(prow, x).abs());
        }
        // s = −A x: zero on the equalities (its size is the violation), projected on K.
        let mut eq = 0.0f64;
        for (i, (s, arow)) in head_mut(&mut out.s, m)
            .iter_mut()
            .zip(problem.a.chunks_exact(n))
            .enumerate()
        {
            let v = -dot(arow, x);
            if i < z {
                eq = eq.max(v.abs());
                *s = 0.0;
            } else {
                *s = v;
            }
        }
        let (_, sk) = head_mut(&mut out.s, m).split_at_mut(z.min(m));
        let dist = cone::distance_inf(sk, l, &mut out.yt);
        cone::project(sk, l);
        let ratio = px.max(eq).max(dist) / qx.abs();
        if ratio <= self.settings.eps_inf_rel {
            head_mut(&mut out.y, m).fill(0.0);
            Some(ratio)
        } else {
            None
        }
    }
}

/// Row `i` of `G`'s support, if it is used sparsely.
#[inline]
fn support<const N: usize, const M: usize>(red: &Reduced<N, M>, i: usize) -> Option<&[u16]> {
    let nnz = red.nnz.get(i).copied().unwrap_or(DENSE);
    if nnz == DENSE {
        return None;
    }
    red.idx.get(i).map(|v| v.split_at(nnz.min(v.len())).0)
}

/// `G_i · x` over the first `r` columns.
#[inline]
fn g_dot<const N: usize, const M: usize>(
    red: &Reduced<N, M>,
    i: usize,
    r: usize,
    x: &[f64],
) -> f64 {
    let g = linalg::row(&red.gmat, i);
    match support(red, i) {
        None => dot(head(g, r), head(x, r)),
        Some(idx) => {
            let mut acc = 0.0;
            for c in idx {
                let c = usize::from(*c);
                acc += linalg::at(g, c) * linalg::at(x, c);
            }
            acc
        }
    }
}

/// `y += α G_i` over the first `r` columns.
#[inline]
fn g_axpy<const N: usize, const M: usize>(
    red: &Reduced<N, M>,
    i: usize,
    r: usize,
    alpha: f64,
    y: &mut [f64],
) {
    if alpha == 0.0 {
        return;
    }
    let g = linalg::row(&red.gmat, i);
    match support(red, i) {
        None => axpy(alpha, head(g, r), head_mut(y, r)),
        Some(idx) => {
            for c in idx {
                let c = usize::from(*c);
                if let Some(v) = y.get_mut(c) {
                    *v += alpha * linalg::at(g, c);
                }
            }
        }
    }
}

/// `out = G x` (the first `out.len()` rows).
fn g_mul<const N: usize, const M: usize>(
    red: &Reduced<N, M>,
    r: usize,
    x: &[f64],
    out: &mut [f64],
) {
    for (i, o) in out.iter_mut().enumerate() {
        *o = g_dot(red, i, r, x);
    }
}

/// `out = Gᵀ y` (the first `y.len()` rows, `r` columns).
fn g_mul_t<const N: usize, const M: usize>(
    red: &Reduced<N, M>,
    r: usize,
    y: &[f64],
    out: &mut [f64],
) {
    head_mut(out, r).fill(0.0);
    for (i, yi) in y.iter().enumerate() {
        g_axpy(red, i, r, *yi, out);
    }
}

/// `S += Σ_q v_q v_qᵀ` on the lower triangle, for the first `count` (1 – 3) vectors of `v`,
/// whose entry at position `p` of the ascending support `idx` is `v[q][p]`.
fn sparse_rank_update<const N: usize>(
    s: &mut [[f64; N]; N],
    idx: &[u16],
    v: [&[f64; N]; 3],
    count: usize,
) {
    let [v0, v1, v2] = v;
    let cols = |p: usize| [linalg::at(v0, p), linalg::at(v1, p), linalg::at(v2, p)];
    for (pa, a) in idx.iter().enumerate() {
        let Some(row) = s.get_mut(usize::from(*a)) else {
            continue;
        };
        let va = cols(pa);
        for (pb, b) in idx.iter().enumerate().take(pa + 1) {
            let vb = cols(pb);
            let mut sum = 0.0;
            for (x, y) in va.iter().zip(&vb).take(count) {
                sum += x * y;
            }
            if let Some(e) = row.get_mut(usize::from(*b)) {
                *e += sum;
            }
        }
    }
}

/// Applies the pending vectors of `rows` four at a time (`S += Σ v vᵀ`, lower triangle of the
/// leading `r × r` block); with `all`, the last one to three as well (padded with zeros).
fn flush_rank_four<const N: usize>(
    s: &mut [[f64; N]; N],
    rows: &mut [[f64; N]; 6],
    pending: &mut usize,
    r: usize,
    all: bool,
) {
    if all && *pending > 0 {
        for v in rows.iter_mut().skip(*pending) {
            head_mut(v, r).fill(0.0);
        }
        *pending = 4;
    }
    while *pending >= 4 {
        let [v0, v1, v2, v3, ..] = &*rows;
        for (a, row) in rows_head_mut(s, r).iter_mut().enumerate() {
            let c = [
                linalg::at(v0, a),
                linalg::at(v1, a),
                linalg::at(v2, a),
                linalg::at(v3, a),
            ];
            if c == [0.0; 4] {
                continue;
            }
            let n = a + 1;
            for ((((x, p0), p1), p2), p3) in head_mut(row, n)
                .iter_mut()
                .zip(head(v0, n))
                .zip(head(v1, n))
                .zip(head(v2, n))
                .zip(head(v3, n))
            {
                *x += (c[0] * p0 + c[1] * p1) + (c[2] * p2 + c[3] * p3);
            }
        }
        rows.copy_within(4..6, 0);
        *pending -= 4;
    }
}

/// Solves `[H Gᵀ; G −W²] [x; z] = [bx; bz]` with the regularised factor and iterative
/// refinement on the unregularised system.
#[allow(clippy::too_many_arguments)]
fn kkt_solve<const N: usize, const M: usize>(
    kkt: &mut Kkt<N, M>,
    red: &Reduced<N, M>,
    dims: Dims,
    refine: u32,
    bx: &[f64],
    bz: &[f64],
    x: &mut [f64],
    z: &mut [f64],
) {
    let Dims { r, mk, .. } = dims;
    let (bx, bz) = (head(bx, r), head(bz, mk));
    let (x, z) = (head_mut(x, r), head_mut(z, mk));
    let Kkt {
        chol,
        wbar,
        eta,
        lreg,
        tm,
        ex,
        ez,
        cx,
        cz,
        worst,
        ..
    } = kkt;
    regularised_solve(chol, wbar, eta, lreg, tm, red, dims, bx, bz, x, z);
    let scale = 1.0 + norm_inf(bx).max(norm_inf(bz));
    let mut err = kkt_residual(wbar, eta, ex, ez, red, dims, bx, bz, x, z);
    for _ in 0..refine {
        if !(err > REFINE_TOL * scale) {
            break;
        }
        regularised_solve(
            chol,
            wbar,
            eta,
            lreg,
            tm,
            red,
            dims,
            head(ex, r),
            head(ez, mk),
            cx,
            cz,
        );
        axpy(1.0, head(cx, r), x);
        axpy(1.0, head(cz, mk), z);
        let new = kkt_residual(wbar, eta, ex, ez, red, dims, bx, bz, x, z);
        if !(new < err) {
            axpy(-1.0, head(cx, r), x);
            axpy(-1.0, head(cz, mk), z);
            break;
        }
        let improved = new < 0.5 * err;
        err = new;
        if !improved {
            break;
        }
    }
    let relative = err / scale;
    if relative.is_nan() || relative > *worst {
        *worst = relative;
    }
}

/// One solve with the regularised factors: `z = (W² + δ)⁻¹ (G x − bz)` with
/// `(H + δ + Gᵀ(W² + δ)⁻¹G) x = bx + Gᵀ(W² + δ)⁻¹ bz`.
#[allow(clippy::too_many_arguments)]
fn regularised_solve<const N: usize, const M: usize>(
    chol: &[[f64; N]; N],
    wbar: &[f64; M],
    eta: &[f64; M],
    lreg: &[[f64; 3]; M],
    tm: &mut [f64; M],
    red: &Reduced<N, M>,
    dims: Dims,
    bx: &[f64],
    bz: &[f64],
    x: &mut [f64],
    z: &mut [f64],
) {
    let Dims { r, l, mk, .. } = dims;
    let tm = head_mut(tm, mk);
    linalg::copy(bz, tm);
    cone::regularised_solve(wbar, eta, lreg, l, tm);
    let x = head_mut(x, r);
    linalg::copy(bx, x);
    for (i, t) in tm.iter().enumerate() {
        g_axpy(red, i, r, *t, x);
    }
    cholesky_solve(chol, r, x);
    let z = head_mut(z, mk);
    for (i, (zi, b)) in z.iter_mut().zip(bz).enumerate() {
        *zi = g_dot(red, i, r, x) - b;
    }
    cone::regularised_solve(wbar, eta, lreg, l, z);
}

/// The residual `(bx − Hx − Gᵀz, bz − Gx + W²z)` into `ex`, `ez`; returns its ∞-norm.
#[allow(clippy::too_many_arguments)]
fn kkt_residual<const N: usize, const M: usize>(
    wbar: &[f64; M],
    eta: &[f64; M],
    ex: &mut [f64; N],
    ez: &mut [f64; M],
    red: &Reduced<N, M>,
    dims: Dims,
    bx: &[f64],
    bz: &[f64],
    x: &[f64],
    z: &[f64],
) -> f64 {
    let Dims { r, l, mk, .. } = dims;
    let ex = head_mut(ex, r);
    matvec(rows_head(&red.hess, r), r, x, ex);
    for (e, b) in ex.iter_mut().zip(bx) {
        *e = b - *e;
    }
    for (i, zi) in z.iter().enumerate() {
        g_axpy(red, i, r, -zi, ex);
    }
    let ez = head_mut(ez, mk);
    cone::apply_w(WOp::Square, head(wbar, mk), head(eta, mk), l, z, ez);
    for (i, (e, b)) in ez.iter_mut().zip(bz).enumerate() {
        *e += b - g_dot(red, i, r, x);
    }
    norm_inf(ex).max(norm_inf(ez))
}

fn put_usize(v: &mut [usize; 3], i: usize, x: usize) {
    if let Some(e) = v.get_mut(i) {
        *e = x;
    }
}

fn at_usize(v: &[usize; 3], i: usize) -> usize {
    v.get(i).copied().unwrap_or(0)
}

fn lget(m: &[[f64; 3]; 3], a: usize, b: usize) -> f64 {
    m.get(a).and_then(|r| r.get(b)).copied().unwrap_or(0.0)
}

fn lset(m: &mut [[f64; 3]; 3], a: usize, b: usize, x: f64) {
    if let Some(e) = m.get_mut(a).and_then(|r| r.get_mut(b)) {
        *e = x;
    }
}
