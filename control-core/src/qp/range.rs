//! Range-space elimination of the variables that no inequality or cone row touches, when the
//! objective does not couple them to the others ([`Settings::range_space`]).
//!
//! With `x = (a, f)`, `a` the variables in no row of `A_K`, `P = diag(P_aa, P_ff)` (no
//! coupling) and `P_aa` positive definite, the equalities `E_a a + E_f f = b_E` leave `a` free
//! for any `f` as long as `E_a` has full row rank, and the best `a` for a given `f` is the
//! equality-constrained least squares
//!
//! ```text
//! P_aa = L Lᵀ,  B = E_a L⁻ᵀ,  S = B Bᵀ = K Kᵀ,  c = L⁻¹ q_a
//! ρ(f) = K⁻¹ (b_E − E_f f + B c) = ρ₀ − F f      (F = K⁻¹ E_f)
//! min over a = ½ ‖ρ(f)‖² − ½ ‖c‖²,   a(f) = L⁻ᵀ (Bᵀ K⁻ᵀ ρ(f) − c)
//! ```
//!
//! so the interior point runs on `f` alone: `H = P_ff + FᵀF`, `g = q_f − Fᵀ ρ₀`, `G = A_K`'s
//! `f` columns, `h = b_K`. In the balance QP `a` is the joint accelerations and `f` the contact
//! forces: the equations of motion and the no-slip rows are eliminated by factorisations of the
//! size of the accelerations and of the equalities (`nv³/6 + z nv²/2`), instead of a QR of the
//! equalities over every variable, the null-space basis, `NᵀPN` and the closed-form step
//! ([`super::reduce`], [`super::condense`]) that give the same reduced problem.
//!
//! Taken only when it applies: some equality and some inequality or cone row, `P_af = 0`
//! exactly, `P_aa`'s Cholesky pivots above `1e-10` of its largest diagonal entry and `S`'s
//! likewise (otherwise the problem goes the null-space way, which handles dependent equalities
//! and semidefinite blocks). `P` is then positive semidefinite if and only if `P_ff` passes the
//! same shifted Cholesky test as the whole `P` would ([`Settings::psd_tol`]), which is left out
//! when the caller vouches for `P` ([`Settings::check_p`]).
//!
//! The equality duals come back from the stationarity on `a`: `E_aᵀ y_E = −(P_aa a + q_a)`,
//! `y_E = −S⁻¹ B L⁻¹ (P_aa a + q_a)`; for a certificate (no `a` part) they are 0.
//!
//! Never allocates, blocks or panics: every buffer is in [`Factors`].
//!
//! [`Settings::range_space`]: super::Settings::range_space
//! [`Settings::psd_tol`]: super::Settings::psd_tol
//! [`Settings::check_p`]: super::Settings::check_p

use super::linalg::{
    at, back_substitute_transposed, cholesky, dot, dot_span, fmax, forward_substitute, gather,
    head, head_mut, lower_block, max_abs, put, range, range_mut, row, row_mut, rows_head,
    rows_head_mut, rows_range, run_start,
};
use super::reduce::{head_usize, mirror_lower, supports};
use super::{Basis, Dims, Qr, Solver};

/// Pivots of `P_aa`'s or `S`'s Cholesky factor below this fraction of the largest diagonal
/// entry: not taken (the null-space way instead).
const PIVOT_FLOOR: f64 = 1e-10;

/// What [`Solver::range_space`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Outcome {
    /// The reduced problem is formed ([`Basis::Range`]).
    Reduced,
    /// The structure does not allow it: go the null-space way.
    NotApplicable,
    /// `P_ff` (and so `P`) is not positive semidefinite.
    NotPsd,
}

/// The factors of the elimination (module docs). The eliminated variables are
/// `Qr::pivcol[..na]`, the kept ones `Qr::freecol[..r]`; `B`'s rows are `Qr::basis[..z]`.
pub(super) struct Factors<const N: usize> {
    /// How many variables are eliminated.
    pub(super) na: usize,
    /// How many equality rows (all independent).
    z: usize,
    /// `L` (lower triangle, `na × na`).
    l: [[f64; N]; N],
    /// Row `i` of `L` is zero before column `lo[i]` (`L` is as sparse as `P_aa`: diagonal in
    /// the balance QP without hand tasks).
    lo: [usize; N],
    /// `K` (lower triangle, `z × z`).
    k: [[f64; N]; N],
    /// `Fᵀ`: row `j` is `K⁻¹ E_f e_j` (`z` entries), one kept variable a row.
    ft: [[f64; N]; N],
    /// Row `j` of `Fᵀ` is zero before column `ft_lo[j]`: `K` is lower triangular, so `K⁻¹ E_f
    /// e_j` is zero above the first equality that binds kept variable `j` (in the balance QP
    /// the equations of motion's base rows come after the no-slip rows, which bind only
    /// accelerations: `F` has six non-zero rows, not one per equality).
    ft_lo: [usize; N],
    /// `L⁻¹ q_a`.
    c: [f64; N],
    /// `K⁻¹ (b_E + B c)`.
    rho0: [f64; N],
}

impl<const N: usize> Factors<N> {
    /// Nothing formed.
    pub(super) const fn new() -> Self {
        Self {
            na: 0,
            z: 0,
            l: [[0.0; N]; N],
            lo: [0; N],
            k: [[0.0; N]; N],
            ft: [[0.0; N]; N],
            ft_lo: [0; N],
            c: [0.0; N],
            rho0: [0.0; N],
        }
    }
}

impl<const N: usize, const M: usize> Solver<N, M> {
    /// Forms the reduced problem by range-space elimination if it applies (module docs).
    #[inline(never)]
    pub(super) fn range_space(&mut self) -> Outcome {
        let Dims { n, m, z, mk, .. } = self.dims;
        if !self.settings.range_space || z == 0 || mk == 0 {
            return Outcome::NotApplicable;
        }
        #[cfg(test)]
        if self.force_orthonormal {
            return Outcome::NotApplicable;
        }
        let data = &self.data;
        let Qr {
            range: fac,
            pivcol,
            freecol,
            basis,
            offset,
            xp,
            kind,
            ..
        } = &mut self.qr;
        // The variables some inequality or cone row touches are kept.
        // (Each column's largest magnitude, non-zero where a row touches it: plain maxima
        // that vectorise, the data being finite.)
        let mut touched = [0.0f64; N];
        for (arow, &(lo, hi)) in rows_range(&data.a, z, m)
            .iter()
            .zip(data.aspan.iter().skip(z))
        {
            for (t, v) in range_mut(&mut touched, lo, hi)
                .iter_mut()
                .zip(range(arow, lo, hi))
            {
                *t = fmax(v.abs(), *t);
            }
        }
        let (mut na, mut nk) = (0, 0);
        for (c, t) in touched.iter().enumerate().take(n) {
            let (list, count) = if *t != 0.0 {
                (&mut *freecol, &mut nk)
            } else {
                (&mut *pivcol, &mut na)
            };
            if let Some(slot) = list.get_mut(*count) {
                *slot = c;
            }
            *count += 1;
        }
        if na < z || nk == 0 {
            return Outcome::NotApplicable;
        }
        let elim = head_usize(pivcol, na);
        let kept = head_usize(freecol, nk);
        // No coupling in the objective (looked for in each row's non-zero span).
        for a in elim {
            let prow = row(&data.p, *a);
            let (lo, hi) = data.pspan.get(*a).copied().unwrap_or((0, n));
            if kept
                .iter()
                .any(|k| (lo..hi).contains(k) && at(prow, *k) != 0.0)
            {
                return Outcome::NotApplicable;
            }
        }
        // L, clearly positive definite, and where each of its rows begins.
        let max_diag = lower_block(&data.p, elim, &mut fac.l);
        if !(max_diag > 0.0) || !max_diag.is_finite() {
            return Outcome::NotApplicable;
        }
        if cholesky(&mut fac.l, na, PIVOT_FLOOR * max_diag, 1.0).0 > 0 {
            return Outcome::NotApplicable;
        }
        for (i, (lo, lrow)) in fac.lo.iter_mut().zip(rows_head(&fac.l, na)).enumerate() {
            *lo = head(lrow, i).iter().position(|v| *v != 0.0).unwrap_or(i);
        }
        // B's rows: L⁻¹ E_a[i]ᵀ.
        let elim_run = run_start(elim);
        for (i, brow) in rows_head_mut(basis, z).iter_mut().enumerate() {
            gather(row(&data.a, i), elim, elim_run, head_mut(brow, na));
            forward_l(&fac.l, &fac.lo, head_mut(brow, na));
        }
        // K, clearly positive definite (E_a of full row rank).
        let brows = rows_head(basis, z);
        let mut max_diag = 0.0f64;
        for (i, (krow, bi)) in rows_head_mut(&mut fac.k, z)
            .iter_mut()
            .zip(brows)
            .enumerate()
        {
            for (v, bj) in head_mut(krow, i + 1).iter_mut().zip(brows) {
                *v = dot(head(bi, na), head(bj, na));
            }
            max_diag = max_diag.max(at(krow, i));
        }
        if !(max_diag > 0.0) || !max_diag.is_finite() {
            return Outcome::NotApplicable;
        }
        if cholesky(&mut fac.k, z, PIVOT_FLOOR * max_diag, 1.0).0 > 0 {
            return Outcome::NotApplicable;
        }
        // P_ff positive semidefinite: the whole P's test on its block (P is block diagonal),
        // unless the caller vouches for it.
        if self.settings.check_p {
            let scratch = &mut self.kkt.chol;
            let mut pmax = 0.0f64;
            for (prow, &(lo, hi)) in rows_head(&data.p, n).iter().zip(&data.pspan) {
                pmax = pmax.max(max_abs(range(prow, lo, hi)));
            }
            if pmax > 0.0 {
                let shift = self.settings.psd_tol * pmax;
                lower_block(&data.p, kept, scratch);
                for (i, srow) in rows_head_mut(scratch, nk).iter_mut().enumerate() {
                    let d = at(srow, i);
                    put(srow, i, d + shift);
                }
                if cholesky(scratch, nk, 0.0, 1.0).0 > 0 {
                    return Outcome::NotPsd;
                }
            }
        }
        // c, ρ₀ and Fᵀ.
        for (ci, ai) in head_mut(&mut fac.c, na).iter_mut().zip(elim) {
            *ci = at(&data.q, *ai);
        }
        forward_l(&fac.l, &fac.lo, head_mut(&mut fac.c, na));
        for (i, (r0, bi)) in head_mut(&mut fac.rho0, z).iter_mut().zip(brows).enumerate() {
            *r0 = at(&data.b, i) + dot(head(bi, na), head(&fac.c, na));
        }
        forward_substitute(&fac.k, z, head_mut(&mut fac.rho0, z));
        for ((ftrow, kj), lo) in rows_head_mut(&mut fac.ft, nk)
            .iter_mut()
            .zip(kept)
            .zip(fac.ft_lo.iter_mut())
        {
            for (i, v) in head_mut(ftrow, z).iter_mut().enumerate() {
                *v = at(row(&data.a, i), *kj);
            }
            *lo = head(ftrow, z).iter().position(|v| *v != 0.0).unwrap_or(z);
        }
        forward_substitute_from(&fac.k, z, &mut fac.ft, &fac.ft_lo, nk);
        // H = P_ff + FᵀF, g = q_f − Fᵀρ₀, G, h. (Each row of Fᵀ is zero before its `ft_lo`,
        // where the equalities binding its variable begin: over the rest only, bit for bit.)
        let red = &mut self.red;
        let ft = rows_head(&fac.ft, nk);
        let rho0 = head(&fac.rho0, z);
        for (j, ((fj, kj), lo_j)) in ft.iter().zip(kept).zip(&fac.ft_lo).enumerate() {
            let prow = row(&data.p, *kj);
            let hrow = row_mut(&mut red.hess, j);
            let fj = head(fj, z);
            for (i, ((fi, ki), lo_i)) in ft.iter().zip(kept).zip(&fac.ft_lo).enumerate().take(j + 1)
            {
                let span = ((*lo_j).max(*lo_i), z);
                put(hrow, i, at(prow, *ki) + dot_span(fj, head(fi, z), span));
            }
            put(
                &mut red.g,
                j,
                at(&data.q, *kj) - dot_span(fj, rho0, (*lo_j, z)),
            );
        }
        mirror_lower(&mut red.hess, nk);
        let kept_run = run_start(kept);
        for (grow, arow) in rows_head_mut(&mut red.gmat, mk)
            .iter_mut()
            .zip(rows_range(&data.a, z, m))
        {
            gather(arow, kept, kept_run, head_mut(grow, nk));
        }
        for (h, b) in head_mut(&mut red.h, mk)
            .iter_mut()
            .zip(range(&data.b, z, m))
        {
            *h = *b;
        }
        red.linear = rows_head(&red.hess, nk)
            .iter()
            .all(|r| head(r, nk).iter().all(|v| *v == 0.0));
        supports(red, nk, mk);
        let c = head(&fac.c, na);
        *offset = 0.5 * (dot(rho0, rho0) - dot(c, c));
        head_mut(xp, n).fill(0.0);
        fac.na = na;
        fac.z = z;
        *kind = Basis::Range;
        self.cond.nu = 0;
        self.cond.r_full = nk;
        self.dims.k = z;
        self.dims.r = nk;
        Outcome::Reduced
    }
}

/// `x̃` from the kept variables `ŵ = w · scale` ([`Basis::Range`]): `ŵ` itself at the kept
/// variables and `a(ŵ)` at the eliminated ones (without `ρ₀` and `c`, the direction's part:
/// `with_offset` false).
pub(super) fn x_from_kept<const N: usize, const M: usize>(
    qr: &Qr<N, M>,
    w: &[f64],
    scale: f64,
    with_offset: bool,
    xt: &mut [f64],
) {
    let fac = &qr.range;
    let (na, z) = (fac.na, fac.z);
    let elim = head_usize(&qr.pivcol, na);
    let kept = head_usize(&qr.freecol, w.len());
    let basis = &qr.basis;
    let mut rho = [0.0f64; N];
    if with_offset {
        head_mut(&mut rho, z).copy_from_slice(head(&fac.rho0, z));
    }
    for ((kj, wj), ftrow) in kept.iter().zip(w).zip(&fac.ft) {
        let v = wj * scale;
        put(xt, *kj, v);
        if v != 0.0 {
            super::linalg::axpy(-v, head(ftrow, z), head_mut(&mut rho, z));
        }
    }
    back_substitute_transposed(&fac.k, z, head_mut(&mut rho, z));
    let mut y = [0.0f64; N];
    if with_offset {
        for (yi, ci) in head_mut(&mut y, na).iter_mut().zip(&fac.c) {
            *yi = -ci;
        }
    }
    for (bi, ti) in rows_head(basis, z).iter().zip(head(&rho, z)) {
        super::linalg::axpy(*ti, head(bi, na), head_mut(&mut y, na));
    }
    backward_l(&fac.l, &fac.lo, head_mut(&mut y, na));
    for (ai, v) in elim.iter().zip(head(&y, na)) {
        put(xt, *ai, *v);
    }
}

/// The equality duals (scaled) that cancel `v`'s eliminated part in the stationarity
/// condition, `ỹ_E = −S⁻¹ B L⁻¹ v_a`, into `yt[..z]`.
pub(super) fn equality_duals<const N: usize, const M: usize>(
    qr: &Qr<N, M>,
    v: &[f64],
    yt: &mut [f64],
) {
    let fac = &qr.range;
    let (na, z) = (fac.na, fac.z);
    let elim = head_usize(&qr.pivcol, na);
    let basis = &qr.basis;
    let mut u = [0.0f64; N];
    for (ui, ai) in head_mut(&mut u, na).iter_mut().zip(elim) {
        *ui = at(v, *ai);
    }
    forward_l(&fac.l, &fac.lo, head_mut(&mut u, na));
    let yt = head_mut(yt, z);
    for (y, bi) in yt.iter_mut().zip(rows_head(basis, z)) {
        *y = dot(head(bi, na), head(&u, na));
    }
    forward_substitute(&fac.k, z, yt);
    back_substitute_transposed(&fac.k, z, yt);
    for y in yt.iter_mut() {
        *y = -*y;
    }
}

/// Solves `K yⱼ = bⱼ` in place for each of the leading `count` rows `bⱼ` of `b`, `bⱼ` zero
/// before column `lo[j]` (so is `yⱼ`): the operations of [`forward_substitute`] on the
/// entries from `lo[j]` on, the same answers bit for bit (the entries before stay zero, and
/// [`dot_span`] adds the products in the same running sums).
fn forward_substitute_from<const N: usize>(
    k: &[[f64; N]],
    z: usize,
    b: &mut [[f64; N]],
    lo: &[usize],
    count: usize,
) {
    // The pivots' reciprocals once, not once per row.
    let mut inv = [0.0f64; N];
    for (i, (v, r)) in inv.iter_mut().zip(rows_head(k, z)).enumerate() {
        *v = 1.0 / at(r, i);
    }
    for (bj, lo) in rows_head_mut(b, count).iter_mut().zip(lo) {
        for ((i, r), inv) in rows_head(k, z).iter().enumerate().zip(&inv).skip(*lo) {
            let v = (at(bj, i) - dot_span(head(bj, i), head(r, i), (*lo, i))) * inv;
            put(bj, i, v);
        }
    }
}

/// Solves `L y = b` in place over each row's non-zero span.
fn forward_l<const N: usize>(l: &[[f64; N]], lo: &[usize], b: &mut [f64]) {
    for (i, (r, lo)) in rows_head(l, b.len()).iter().zip(lo).enumerate() {
        let v = (at(b, i) - dot(range(r, *lo, i), range(b, *lo, i))) / at(r, i);
        put(b, i, v);
    }
}

/// Solves `Lᵀ x = y` in place over each row's non-zero span.
fn backward_l<const N: usize>(l: &[[f64; N]], lo: &[usize], b: &mut [f64]) {
    for (i, (r, lo)) in rows_head(l, b.len()).iter().zip(lo).enumerate().rev() {
        let xi = at(b, i) / at(r, i);
        put(b, i, xi);
        super::linalg::axpy(-xi, range(r, *lo, i), super::linalg::range_mut(b, *lo, i));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The substitution from each row's first non-zero entry is the whole substitution, bit
    /// for bit, wherever that entry is (every start, rows of every length up to nine, zeros of
    /// either sign before it), and a row of zeros stays zero.
    #[test]
    fn substitution_from_the_first_non_zero_is_the_whole_substitution() {
        const N: usize = 9;
        for z in 1..=N {
            // A lower triangular K with pivots well away from zero, entries of mixed magnitude.
            let mut k = [[0.0f64; N]; N];
            for (i, row) in k.iter_mut().enumerate().take(z) {
                for (j, v) in row.iter_mut().enumerate().take(i + 1) {
                    let t = (i * 13 + j * 7 + z) as f64;
                    *v = if i == j {
                        1.5 + libm::sin(t).abs()
                    } else {
                        libm::sin(t) * libm::pow(10.0, libm::cos(t) * 3.0)
                    };
                }
            }
            let mut b = [[0.0f64; N]; N];
            let mut lo = [0usize; N];
            for (j, (row, lo)) in b.iter_mut().zip(lo.iter_mut()).enumerate().take(z + 1) {
                // Row j starts at j (the last row, j = z, is all zeros).
                *lo = j.min(z);
                for (i, v) in row.iter_mut().enumerate().take(z) {
                    *v = if i < j {
                        if i % 2 == 0 { 0.0 } else { -0.0 }
                    } else {
                        libm::cos((i * 5 + j * 3) as f64) * 100.0
                    };
                }
            }
            let count = (z + 1).min(N);
            let mut whole = b;
            for row in whole.iter_mut().take(count) {
                forward_substitute(&k, z, head_mut(row, z));
            }
            forward_substitute_from(&k, z, &mut b, &lo, count);
            for j in 0..count {
                for i in 0..z {
                    let (got, want) = (b[j][i], whole[j][i]);
                    // Equal as numbers, and bit for bit wherever not a zero (a zero kept from
                    // the input may keep its sign where the whole substitution writes +0).
                    assert!(got == want, "z {z} row {j} entry {i}: {got} vs {want}");
                    if want != 0.0 {
                        assert_eq!(got.to_bits(), want.to_bits(), "z {z} row {j} entry {i}");
                    }
                }
            }
        }
    }
}
