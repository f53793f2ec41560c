//! Elimination of the equality rows: a Householder QR with column pivoting of `Ã_Eᵀ`, the
//! null-space parametrisation `x̃ = x̃_p + N w`, the reduced problem, and the way back (`x̃` from
//! `w`, the equality duals from the stationarity condition).

use super::linalg::{
    self, apply_householder, at, axpy, dot, head, head_mut, norm_inf, norm2, put, range, range_mut,
    row, row_mut, rows_head, rows_head_mut, rows_range,
};
use super::{Basis, Check, DENSE, Dims, Problem, Qr, Reduced, Solver};

/// A pivot of the eliminated basis is at least this fraction of the largest candidate in its
/// row (threshold pivoting: sparsity chosen among numerically acceptable pivots).
const PIVOT_THRESHOLD: f64 = 0.25;

/// Largest coefficient of the eliminated basis accepted; beyond, the orthonormal one is used.
const GROWTH_LIMIT: f64 = 1e3;

impl<const N: usize, const M: usize> Solver<N, M> {
    /// QR-factors the equality rows in place, sets the rank `k`, `x̃_p` and the null basis.
    pub(super) fn factor_equalities(&mut self) {
        let Dims { n, z, .. } = self.dims;
        let a = &mut self.data.a;
        let qr = &mut self.qr;
        for (i, ((p, nr), n0)) in qr
            .perm
            .iter_mut()
            .zip(qr.norms.iter_mut())
            .zip(qr.norms0.iter_mut())
            .enumerate()
            .take(z)
        {
            *p = i;
            *nr = norm2(head(row(a, i), n));
            *n0 = *nr;
        }
        let max0 = norm_inf(head(&qr.norms, z));
        let threshold = self.settings.rank_tol * max0;
        let mut k = 0;
        while k < z.min(n) {
            // Pivot: the remaining row of largest norm.
            let mut best = k;
            let mut best_norm = -1.0;
            for (i, v) in qr.norms.iter().enumerate().take(z).skip(k) {
                if *v > best_norm {
                    best_norm = *v;
                    best = i;
                }
            }
            if !(best_norm > threshold) || !(max0 > 0.0) {
                break;
            }
            if best != k {
                a.swap(k, best);
                qr.perm.swap(k, best);
                qr.norms.swap(k, best);
                qr.norms0.swap(k, best);
            }
            let (tau, beta) = linalg::householder(range_mut(row_mut(a, k), k, n));
            put(&mut qr.tau, k, tau);
            put(&mut qr.rdiag, k, beta);
            let split = (k + 1).min(a.len());
            let (top, rest) = a.split_at_mut(split);
            let u = range(row(top, k), k, n);
            for (j, r) in rows_head_mut(rest, z.saturating_sub(k + 1))
                .iter_mut()
                .enumerate()
            {
                let i = k + 1 + j;
                apply_householder(u, tau, range_mut(r, k, n));
                // Downdate the remaining norm (LAPACK's dgeqp3 safeguard: recompute on
                // cancellation).
                let nr = at(&qr.norms, i);
                if nr > 0.0 {
                    let t = at(r, k).abs() / nr;
                    let t = (1.0 - t * t).max(0.0);
                    let ratio = nr / at(&qr.norms0, i);
                    if t * ratio * ratio <= 1.5e-8 {
                        let fresh = norm2(range(r, k + 1, n));
                        put(&mut qr.norms, i, fresh);
                        put(&mut qr.norms0, i, fresh);
                    } else {
                        put(&mut qr.norms, i, nr * libm::sqrt(t));
                    }
                }
            }
            k += 1;
        }
        self.dims.k = k;
        self.dims.r = n - k;
        qr.kind = if k == 0 {
            Basis::Identity
        } else {
            Basis::Orthonormal
        };
        // x̃_p = Q [u; 0] with R₁₁ᵀ u = b̃_E (permuted).
        let xp = head_mut(&mut qr.xp, n);
        xp.fill(0.0);
        for i in 0..k {
            let bi = at(&self.data.b, qr.perm.get(i).copied().unwrap_or(0));
            let ri = row(a, i);
            let ui = (bi - dot(head(ri, i), head(xp, i))) / at(&qr.rdiag, i);
            put(xp, i, ui);
        }
        head_mut(&mut qr.coef, k).copy_from_slice(head(xp, k));
        for s in (0..k).rev() {
            apply_householder(
                range(row(a, s), s, n),
                at(&qr.tau, s),
                linalg::tail_mut(xp, s),
            );
        }
        #[cfg(test)]
        if self.force_orthonormal && k > 0 {
            self.orthonormal_basis();
            return;
        }
        // Elimination pays when the equalities are fewer than the variables they leave free
        // (forming `Q₁ᵀ` and eliminating on it costs `2k²n`, the orthonormal basis `rkn`).
        if k > 0 && (k > n - k || !self.eliminated_basis()) {
            self.orthonormal_basis();
        }
    }

    /// The orthonormal null basis `Q e_{k+j}`, `j < r`.
    fn orthonormal_basis(&mut self) {
        let Dims { n, k, .. } = self.dims;
        let a = &self.data.a;
        let qr = &mut self.qr;
        qr.kind = Basis::Orthonormal;
        for (j, b) in rows_head_mut(&mut qr.basis, n - k).iter_mut().enumerate() {
            let b = head_mut(b, n);
            b.fill(0.0);
            put(b, k + j, 1.0);
            for s in (0..k).rev() {
                apply_householder(
                    range(row(a, s), s, n),
                    at(&qr.tau, s),
                    linalg::tail_mut(b, s),
                );
            }
        }
    }

    /// The eliminated null basis ([`Basis::Eliminated`]): Gauss–Jordan elimination on the
    /// orthonormal rows `Q₁ᵀ` (the same constraints as `Ã_E`'s independent rows), each row
    /// solved for a variable among those within [`PIVOT_THRESHOLD`] of its largest entry, the
    /// one in the fewest rows of `Ã_K` (so that `G = Ã_K N` keeps `Ã_K`'s sparsity). False, and
    /// nothing usable formed, when the coefficients grow past [`GROWTH_LIMIT`] (an
    /// ill-conditioned choice: the orthonormal basis is used instead).
    fn eliminated_basis(&mut self) -> bool {
        let Dims { n, m, z, k, r, .. } = self.dims;
        let a = &self.data.a;
        let qr = &mut self.qr;
        // How many rows of Ã_K each variable appears in.
        let mut cost = [0usize; N];
        for arow in rows_range(a, z, m) {
            for (c, v) in cost.iter_mut().zip(head(arow, n)) {
                if *v != 0.0 {
                    *c += 1;
                }
            }
        }
        // E = Q₁ᵀ, rows 0..k.
        for (i, e) in rows_head_mut(&mut qr.basis, k).iter_mut().enumerate() {
            let e = head_mut(e, n);
            e.fill(0.0);
            put(e, i, 1.0);
            for s in (0..=i).rev() {
                apply_householder(
                    range(row(a, s), s, n),
                    at(&qr.tau, s),
                    linalg::tail_mut(e, s),
                );
            }
        }
        let mut pivot = [false; N];
        for t in 0..k {
            let et = row(&qr.basis, t);
            let mut amax = 0.0f64;
            for (v, p) in head(et, n).iter().zip(&pivot) {
                if !*p {
                    amax = linalg::fmax(amax, v.abs());
                }
            }
            if !(amax > 0.0) || !amax.is_finite() {
                return false;
            }
            let mut best: Option<(usize, usize, f64)> = None;
            for (c, ((v, p), cc)) in head(et, n).iter().zip(&pivot).zip(&cost).enumerate() {
                let av = v.abs();
                if *p || !(av >= PIVOT_THRESHOLD * amax) {
                    continue;
                }
                let better = match best {
                    None => true,
                    Some((_, bc, bv)) => *cc < bc || (*cc == bc && av > bv),
                };
                if better {
                    best = Some((c, *cc, av));
                }
            }
            let Some((c, _, _)) = best else {
                return false;
            };
            if let Some(p) = pivot.get_mut(c) {
                *p = true;
            }
            if let Some(p) = qr.pivcol.get_mut(t) {
                *p = c;
            }
            // Row t scaled to a unit pivot, then eliminated from every other row.
            let split = t.min(qr.basis.len());
            let (before, rest) = qr.basis.split_at_mut(split);
            let Some((pt, after)) = rest.split_first_mut() else {
                return false;
            };
            let pt = head_mut(pt, n);
            let inv = 1.0 / at(pt, c);
            linalg::scal(inv, pt);
            put(pt, c, 1.0);
            for ei in rows_head_mut(before, t)
                .iter_mut()
                .chain(rows_head_mut(after, k.saturating_sub(t + 1)).iter_mut())
            {
                let ei = head_mut(ei, n);
                let f = at(ei, c);
                if f != 0.0 {
                    axpy(-f, pt, ei);
                    put(ei, c, 0.0);
                }
            }
        }
        // The free variables, and C = −E on them (in place: freecol[j] ≥ j).
        let mut j = 0;
        for (c, p) in pivot.iter().enumerate().take(n) {
            if !*p {
                if let Some(f) = qr.freecol.get_mut(j) {
                    *f = c;
                }
                j += 1;
            }
        }
        if j != r {
            return false;
        }
        for e in rows_head_mut(&mut qr.basis, k) {
            for j in 0..r {
                let v = -at(e, qr.freecol.get(j).copied().unwrap_or(0));
                if !(v.abs() <= GROWTH_LIMIT) {
                    return false;
                }
                put(e, j, v);
            }
        }
        qr.kind = Basis::Eliminated;
        true
    }

    /// If the equalities cannot be met within the primal tolerance and a certificate proves it,
    /// writes it (`y`, with `x = s = 0`) and returns its ratio `‖Aᵀy‖∞ / |bᵀy|`.
    pub(super) fn inconsistent_equalities(&mut self, problem: &Problem<'_>) -> Option<f64> {
        let Dims { n, m, z, k, .. } = self.dims;
        if z == 0 {
            return None;
        }
        let data = &self.data;
        let out = &mut self.out;
        // The residual of x_p in the caller's units.
        for ((x, xt), d) in head_mut(&mut out.px, n)
            .iter_mut()
            .zip(&self.qr.xp)
            .zip(&data.d)
        {
            *x = d * xt;
        }
        let mut res = 0.0f64;
        let mut axn = 0.0f64;
        for (r, b) in problem.a.chunks_exact(n).zip(problem.b).take(z) {
            let ax = dot(r, head(&out.px, n));
            res = res.max((ax - b).abs());
            axn = axn.max(ax.abs());
        }
        let bn = norm_inf(head(problem.b, z));
        if res <= self.settings.eps_abs + self.settings.eps_rel * axn.max(bn) {
            return None;
        }
        // Certificate over the dependent rows: y_nb = ρ = R₁₂ᵀu − b̃_nb, y_b = −R₁₁⁻¹ R₁₂ ρ.
        let a = &data.a;
        let qr = &self.qr;
        let yp = head_mut(&mut out.yt, z);
        yp.fill(0.0);
        for i in k..z {
            let bi = at(&data.b, qr.perm.get(i).copied().unwrap_or(0));
            let rho = dot(head(row(a, i), k), head(&qr.coef, k)) - bi;
            put(yp, i, rho);
        }
        // t = R₁₂ ρ (k entries), then solve R₁₁ y_b = −t by columns.
        let (yb, ynb) = yp.split_at_mut(k.min(yp.len()));
        for (r, rho) in rows_range(a, k, z).iter().zip(ynb.iter()) {
            axpy(-rho, head(r, k), yb);
        }
        back_substitute(a, &qr.rdiag, k, yb);
        // Into row order and the caller's units (y = E ỹ), normalised.
        // (Built in scratch: the output keeps the last solution, for a warm start, unless this is
        // a certificate.)
        let y = head_mut(&mut out.ax, m);
        y.fill(0.0);
        for (i, v) in yp.iter().enumerate() {
            let orig = qr.perm.get(i).copied().unwrap_or(0);
            put(y, orig, v * at(&data.e, orig));
        }
        let scale = norm_inf(y);
        if !(scale > 0.0) {
            return None;
        }
        linalg::scal(1.0 / scale, y);
        let aty = head_mut(&mut out.aty, n);
        aty.fill(0.0);
        for (r, yi) in problem.a.chunks_exact(n).zip(y.iter()).take(z) {
            axpy(*yi, r, aty);
        }
        let by = dot(head(problem.b, z), head(y, z));
        let ratio = norm_inf(aty) / by.abs();
        if by <= -self.settings.eps_inf_abs && ratio <= self.settings.eps_inf_rel {
            linalg::copy(head(&out.ax, m), &mut out.y);
            head_mut(&mut out.x, n).fill(0.0);
            head_mut(&mut out.s, m).fill(0.0);
            Some(ratio)
        } else {
            None
        }
    }

    /// Forms `H = NᵀP̃N`, `g = Nᵀ(P̃x̃_p + q̃)`, `G = Ã_K N`, `h = b̃_K − Ã_K x̃_p`, and the
    /// supports of `G`'s rows.
    pub(super) fn form_reduced(&mut self) {
        let Dims { n, m, z, mk, r, .. } = self.dims;
        let data = &self.data;
        let qr = &mut self.qr;
        let red = &mut self.red;
        let ak = rows_range(&data.a, z, m);
        let offset;
        match qr.kind {
            // Formed by `range_space` instead.
            Basis::Range => return,
            Basis::Identity => {
                for (dst, src) in rows_head_mut(&mut red.hess, n).iter_mut().zip(&data.p) {
                    linalg::copy(head(src, n), dst);
                }
                for (dst, src) in rows_head_mut(&mut red.gmat, mk).iter_mut().zip(ak) {
                    linalg::copy(head(src, n), dst);
                }
                linalg::copy(head(&data.q, n), &mut red.g);
                linalg::copy(range(&data.b, z, m), &mut red.h);
                offset = 0.0;
            }
            Basis::Orthonormal => {
                let basis = rows_head(&qr.basis, r);
                // P̃ N, column by column (rows of the scratch).
                let pn = &mut self.kkt.chol;
                for (dst, bj) in rows_head_mut(pn, r).iter_mut().zip(basis) {
                    for (v, prow) in head_mut(dst, n).iter_mut().zip(rows_head(&data.p, n)) {
                        *v = dot(head(prow, n), head(bj, n));
                    }
                }
                for (i, bi) in basis.iter().enumerate() {
                    for (j, pj) in rows_head(pn, r).iter().enumerate().skip(i) {
                        let v = dot(head(bi, n), head(pj, n));
                        put(row_mut(&mut red.hess, i), j, v);
                        put(row_mut(&mut red.hess, j), i, v);
                    }
                }
                let (t, off) = offset_and_gradient(data, head(&qr.xp, n), &mut self.out.aty);
                offset = off;
                for (gj, bj) in red.g.iter_mut().zip(basis) {
                    *gj = dot(head(bj, n), t);
                }
                for (grow, arow) in rows_head_mut(&mut red.gmat, mk).iter_mut().zip(ak) {
                    let arow = head(arow, n);
                    for (v, bj) in head_mut(grow, r).iter_mut().zip(basis) {
                        *v = dot(arow, head(bj, n));
                    }
                }
            }
            Basis::Eliminated => {
                let k = self.dims.k;
                let coef = rows_head(&qr.basis, k);
                let piv = head_usize(&qr.pivcol, k);
                let free = head_usize(&qr.freecol, r);
                // P̃ N, column j = P̃ e_{free j} + Σ_t C[t][j] P̃ e_{piv t} (rows of P̃: it is
                // symmetric).
                // Each pivot row of P̃ added over its span of non-zeros only (a balance QP's
                // P is block diagonal: the accelerations' rows have no force columns).
                let mut span = [(0usize, 0usize); N];
                for (sp, pt) in span.iter_mut().zip(piv) {
                    *sp = nonzero_span(head(row(&data.p, *pt), n));
                }
                let pn = &mut self.kkt.chol;
                for (j, (dst, fj)) in rows_head_mut(pn, r).iter_mut().zip(free).enumerate() {
                    let dst = head_mut(dst, n);
                    linalg::copy(row(&data.p, *fj), dst);
                    for ((ct, pt), (lo, hi)) in coef.iter().zip(piv).zip(&span) {
                        let c = at(ct, j);
                        if c != 0.0 {
                            axpy(
                                c,
                                range(row(&data.p, *pt), *lo, *hi),
                                range_mut(dst, *lo, *hi),
                            );
                        }
                    }
                }
                // H[j][i] = (P̃N)_j[free i] + Σ_t C[t][i] (P̃N)_j[piv t] for i ≤ j, the sum
                // over t taken in order for all i at once (independent chains: one row of C
                // at a time), then mirrored.
                for (j, pj) in rows_head(pn, r).iter().enumerate() {
                    let hj = head_mut(row_mut(&mut red.hess, j), j + 1);
                    for (h, fi) in hj.iter_mut().zip(free) {
                        *h = at(pj, *fi);
                    }
                    for (ct, pt) in coef.iter().zip(piv) {
                        axpy(at(pj, *pt), head(ct, j + 1), hj);
                    }
                }
                mirror_lower(&mut red.hess, r);
                let (t, off) = offset_and_gradient(data, head(&qr.xp, n), &mut self.out.aty);
                offset = off;
                for (gj, fj) in red.g.iter_mut().zip(free) {
                    *gj = at(t, *fj);
                }
                for (ct, pt) in coef.iter().zip(piv) {
                    axpy(at(t, *pt), head(ct, r), head_mut(&mut red.g, r));
                }
                for (grow, arow) in rows_head_mut(&mut red.gmat, mk).iter_mut().zip(ak) {
                    let grow = head_mut(grow, r);
                    for (v, fj) in grow.iter_mut().zip(free) {
                        *v = at(arow, *fj);
                    }
                    for (ct, pt) in coef.iter().zip(piv) {
                        let c = at(arow, *pt);
                        if c != 0.0 {
                            axpy(c, head(ct, r), grow);
                        }
                    }
                }
            }
        }
        qr.offset = offset;
        if qr.kind != Basis::Identity {
            let xp = head(&qr.xp, n);
            for (hi, (arow, bi)) in red.h.iter_mut().zip(ak.iter().zip(range(&data.b, z, m))) {
                *hi = bi - dot(head(arow, n), xp);
            }
        }
        red.linear = rows_head(&red.hess, r)
            .iter()
            .all(|row| head(row, r).iter().all(|v| *v == 0.0));
        supports(red, r, mk);
    }

    /// The reduced coordinates of the interior point's `w` (kept ones only while some are
    /// minimised in closed form) as the full reduced problem's, at `τ` (0 for a direction): `w`
    /// itself, or `full` filled; with their count.
    pub(super) fn full_w<'a>(
        &self,
        w: &'a [f64],
        tau: f64,
        full: &'a mut [f64; N],
    ) -> (&'a [f64], usize) {
        if self.cond.nu == 0 {
            return (w, w.len());
        }
        self.cond.expand(w, tau, full);
        let r = self.cond.r_full;
        (head(full, r), r)
    }

    /// Maps the current iterate back to the caller's problem (`x`, `s`, `y` in the output) and
    /// measures it.
    pub(super) fn recover(&mut self, problem: &Problem<'_>) -> Check {
        let Dims { n, m, z, r, mk, .. } = self.dims;
        let tau = self.it.tau;
        let inv = if tau > 0.0 { 1.0 / tau } else { 1.0 };
        let mut full = [0.0f64; N];
        let (w, rw) = self.full_w(head(&self.it.w, r), tau, &mut full);
        x_from_w(&self.qr, n, rw, w, inv, true, &mut self.out.xt);
        // s̃_K, ỹ_K
        for ((s, y), (si, zi)) in linalg::tail_mut(head_mut(&mut self.out.s, m), z)
            .iter_mut()
            .zip(linalg::tail_mut(head_mut(&mut self.out.yt, m), z).iter_mut())
            .zip(self.it.s.iter().zip(&self.it.z))
            .take(mk)
        {
            *s = si * inv;
            *y = zi * inv;
        }
        // v = P̃ x̃ + q̃ + Ã_Kᵀ ỹ_K
        let mut v = [0.0f64; N];
        {
            let data = &self.data;
            let xt = head(&self.out.xt, n);
            // (Over each row's non-zero span: the same sums, bit for bit.)
            for (((vi, prow), q), &span) in v
                .iter_mut()
                .zip(rows_head(&data.p, n))
                .zip(&data.q)
                .zip(&data.pspan)
            {
                *vi = linalg::dot_span(head(prow, n), xt, span) + q;
            }
            for ((arow, yi), &(lo, hi)) in rows_range(&data.a, z, m)
                .iter()
                .zip(range(&self.out.yt, z, m))
                .zip(data.aspan.iter().skip(z))
            {
                axpy(*yi, range(arow, lo, hi), range_mut(&mut v, lo, hi));
            }
        }
        equality_duals(&self.data.a, &self.qr, self.dims, &mut v, &mut self.out.yt);
        self.unscale_and_check(problem)
    }
}

/// Solves `R₁₁ y = t` in place (upper triangular; column `i` of `R` is `row(a, i)[..i]` above
/// the diagonal `rdiag[i]`).
fn back_substitute<const N: usize>(a: &[[f64; N]], rdiag: &[f64], k: usize, y: &mut [f64]) {
    for i in (0..k).rev() {
        let d = at(rdiag, i);
        let yi = if d != 0.0 { at(y, i) / d } else { 0.0 };
        put(y, i, yi);
        axpy(-yi, head(row(a, i), i), head_mut(y, i));
    }
}

/// `xt = x̃_p + N ŵ` (or `N ŵ` without `x̃_p`) for `ŵ = w · scale`.
pub(super) fn x_from_w<const N: usize, const M: usize>(
    qr: &Qr<N, M>,
    n: usize,
    r: usize,
    w: &[f64],
    scale: f64,
    with_xp: bool,
    xt: &mut [f64],
) {
    let xt = head_mut(xt, n);
    if qr.kind == Basis::Range {
        super::range::x_from_kept(qr, head(w, r), scale, with_xp, xt);
        return;
    }
    if qr.kind == Basis::Identity {
        for (x, wi) in xt.iter_mut().zip(w) {
            *x = wi * scale;
        }
        return;
    }
    if with_xp {
        linalg::copy(head(&qr.xp, n), xt);
    } else {
        xt.fill(0.0);
    }
    let w = head(w, r);
    if qr.kind == Basis::Eliminated {
        let k = n - r;
        for (fj, wj) in head_usize(&qr.freecol, r).iter().zip(w) {
            if let Some(x) = xt.get_mut(*fj) {
                *x += wj * scale;
            }
        }
        for (ct, pt) in rows_head(&qr.basis, k)
            .iter()
            .zip(head_usize(&qr.pivcol, k))
        {
            if let Some(x) = xt.get_mut(*pt) {
                *x += scale * dot(head(ct, r), w);
            }
        }
        return;
    }
    for (bj, wj) in rows_head(&qr.basis, r).iter().zip(w) {
        axpy(wj * scale, head(bj, n), xt);
    }
}

/// The equality duals (scaled, row order) that cancel the range part of `v` in the stationarity
/// condition: `ỹ_E = −Π R₁₁⁻¹ Q₁ᵀ v` into `yt[..z]`; `v` is overwritten.
pub(super) fn equality_duals<const N: usize, const M: usize>(
    a: &[[f64; N]],
    qr: &Qr<N, M>,
    dims: Dims,
    v: &mut [f64],
    yt: &mut [f64],
) {
    if qr.kind == Basis::Range {
        super::range::equality_duals(qr, v, yt);
        return;
    }
    let Dims { n, z, k, .. } = dims;
    for s in 0..k {
        apply_householder(
            range(row(a, s), s, n),
            at(&qr.tau, s),
            linalg::tail_mut(head_mut(v, n), s),
        );
    }
    let yb = head_mut(v, k);
    linalg::scal(-1.0, yb);
    back_substitute(a, &qr.rdiag, k, yb);
    let yt = head_mut(yt, z);
    yt.fill(0.0);
    for (i, val) in yb.iter().enumerate() {
        put(yt, qr.perm.get(i).copied().unwrap_or(0), *val);
    }
}

/// `t = P̃ x̃_p + q̃` (into `scratch`) and `½ x̃_pᵀP̃x̃_p + q̃ᵀx̃_p`.
fn offset_and_gradient<'s, const N: usize, const M: usize>(
    data: &super::Scaled<N, M>,
    xp: &[f64],
    scratch: &'s mut [f64; N],
) -> (&'s [f64], f64) {
    let n = xp.len();
    let t = head_mut(scratch, n);
    for ((ti, prow), q) in t.iter_mut().zip(&data.p).zip(&data.q) {
        *ti = dot(head(prow, n), xp) + q;
    }
    let offset = 0.5 * (dot(t, xp) + dot(head(&data.q, n), xp));
    (t, offset)
}

/// `v[..n]` of an index array, or all of it.
pub(super) fn head_usize(v: &[usize], n: usize) -> &[usize] {
    v.split_at(n.min(v.len())).0
}

/// The supports of `G`'s rows ([`Reduced::nnz`], [`Reduced::idx`]), each row its own; a row
/// with more than half its `r` entries non-zero is marked [`DENSE`].
pub(super) fn supports<const N: usize, const M: usize>(
    red: &mut Reduced<N, M>,
    r: usize,
    mk: usize,
) {
    let sparse_limit = r / 2;
    for ((g, nnz), idx) in rows_head(&red.gmat, mk)
        .iter()
        .zip(red.nnz.iter_mut())
        .zip(red.idx.iter_mut())
    {
        let mut count = 0usize;
        for (c, v) in head(g, r).iter().enumerate() {
            if *v != 0.0 {
                if let Some(slot) = idx.get_mut(count) {
                    *slot = u16::try_from(c).unwrap_or(u16::MAX);
                }
                count += 1;
            }
        }
        *nnz = if count > sparse_limit || r > usize::from(u16::MAX) {
            DENSE
        } else {
            count
        };
    }
}

/// Copies the strict lower triangle of the leading `r × r` block onto the upper one.
pub(super) fn mirror_lower<const N: usize>(rows: &mut [[f64; N]], r: usize) {
    let rows = rows_head_mut(rows, r);
    for j in 1..rows.len() {
        let (above, rest) = rows.split_at_mut(j);
        let Some(rj) = rest.first() else {
            break;
        };
        for (i, v) in head(rj, j).iter().enumerate() {
            put(row_mut(above, i), j, *v);
        }
    }
}

/// `(first, last + 1)` of the non-zero entries of `v`, `(0, 0)` if there is none.
fn nonzero_span(v: &[f64]) -> (usize, usize) {
    let first = v.iter().position(|x| *x != 0.0);
    let last = v.iter().rposition(|x| *x != 0.0);
    match (first, last) {
        (Some(a), Some(b)) => (a, b + 1),
        _ => (0, 0),
    }
}
