//! Reduced coordinates that no inequality or cone row touches, minimised in closed form before
//! the interior point: with `w = (w_u, w_k)` and `G = [0 G_k]`,
//!
//! ```text
//! min ½ wᵀHw + gᵀw  over w_u  ⇒  w_u = −H_uu⁻¹ (g_u + H_uk w_k)
//! H' = H_kk − Yᵀ Y,  g' = g_k − Yᵀ L⁻¹ g_u,  offset' = offset − ½ ‖L⁻¹ g_u‖²
//! (H_uu = L Lᵀ, Y = L⁻¹ H_uk)
//! ```
//!
//! and the interior point runs on `w_k` alone: every one of its factorisations, solves and
//! products is on the kept coordinates. In the balance QP those are the contact forces; the
//! accelerations that the equalities leave free appear in no inequality (while the torque limits
//! are left out) and are minimised here. Taken only when `H_uu` is clearly positive definite (no
//! Cholesky pivot below `1e-10` of its largest diagonal entry): otherwise the problem is left as
//! it is. The embedding's iterate maps back exactly, `w_u = −L⁻ᵀ (τ L⁻¹ g_u + Y w_k)` (`τ = 0`
//! for a direction, such as a certificate's), and so do its certificates: a direction with
//! `H d = 0` has `d_u = −H_uu⁻¹ H_uk d_k` and `H' d_k = 0`, `g'ᵀd_k = gᵀd`.
//!
//! Never allocates, blocks or panics: every buffer is in [`Condensed`].

use super::linalg::{
    self, axpy, back_substitute_transposed, cholesky, dot, forward_substitute, head, head_mut, row,
    rows_head, rows_head_mut,
};
use super::reduce::head_usize;
use super::{DENSE, Dims, Solver};

/// Pivots of `H_uu`'s Cholesky factor below this fraction of its largest diagonal entry: the
/// coordinates are not minimised in closed form.
const PIVOT_FLOOR: f64 = 1e-10;

/// The coordinates minimised in closed form, and what maps the kept ones back.
pub(super) struct Condensed<const N: usize> {
    /// How many coordinates are minimised in closed form (0: none, the problem as it is).
    pub(super) nu: usize,
    /// The reduced problem's size before (`Dims::r` is the kept coordinates' count while
    /// `nu > 0`).
    pub(super) r_full: usize,
    /// The closed-form coordinates, ascending.
    closed: [usize; N],
    /// The kept coordinates, ascending: the interior point's `w`.
    kept: [usize; N],
    /// Rows `..nu`: `L` (lower triangle); rows `nu..r_full`: `Yᵀ`, one kept coordinate a row.
    fac: [[f64; N]; N],
    /// `L⁻¹ g_u`.
    gy: [f64; N],
}

impl<const N: usize> Condensed<N> {
    /// Nothing condensed.
    pub(super) const fn new() -> Self {
        Self {
            nu: 0,
            r_full: 0,
            closed: [0; N],
            kept: [0; N],
            fac: [[0.0; N]; N],
            gy: [0.0; N],
        }
    }

    /// The full reduced coordinates from the kept ones `w` at `τ` (0 for a direction), into
    /// `full` (`r_full` entries).
    pub(super) fn expand(&self, w: &[f64], tau: f64, full: &mut [f64]) {
        let nu = self.nu;
        let nk = self.r_full.saturating_sub(nu);
        let mut v = [0.0f64; N];
        for (vi, g) in head_mut(&mut v, nu).iter_mut().zip(&self.gy) {
            *vi = g * tau;
        }
        for (j, wj) in head(w, nk).iter().enumerate() {
            axpy(*wj, head(row(&self.fac, nu + j), nu), head_mut(&mut v, nu));
        }
        back_substitute_transposed(&self.fac, nu, head_mut(&mut v, nu));
        for (c, vi) in self.closed.iter().zip(head(&v, nu)) {
            linalg::put(full, *c, -vi);
        }
        for (c, wj) in self.kept.iter().zip(head(w, nk)) {
            linalg::put(full, *c, *wj);
        }
    }

    /// The kept coordinates of `w` (full, `r_full` entries), in place at its head.
    pub(super) fn compact(&self, w: &mut [f64]) {
        let nk = self.r_full.saturating_sub(self.nu);
        for (j, c) in self.kept.iter().enumerate().take(nk) {
            // kept[j] ≥ j: read before written.
            let v = linalg::at(w, *c);
            linalg::put(w, j, v);
        }
    }
}

impl<const N: usize, const M: usize> Solver<N, M> {
    /// Minimises the coordinates no row of `G` touches in closed form (module docs), if any and
    /// if their block of `H` is clearly positive definite; sets `Dims::r` to the kept count.
    pub(super) fn condense(&mut self) {
        let Dims { r, mk, .. } = self.dims;
        let cond = &mut self.cond;
        cond.nu = 0;
        cond.r_full = r;
        if !self.settings.condense {
            return;
        }
        let red = &mut self.red;
        // The columns some row of G touches: a sparse row's support, a dense row scanned.
        let mut touched = [false; N];
        for ((g, nnz), idx) in rows_head(&red.gmat, mk).iter().zip(&red.nnz).zip(&red.idx) {
            if *nnz == DENSE {
                for (t, v) in touched.iter_mut().zip(head(g, r)) {
                    *t |= *v != 0.0;
                }
            } else {
                for c in idx.iter().take(*nnz) {
                    let c = usize::from(*c);
                    if linalg::at(g, c) != 0.0
                        && let Some(t) = touched.get_mut(c)
                    {
                        *t = true;
                    }
                }
            }
        }
        let (mut nu, mut nk) = (0, 0);
        for (c, t) in touched.iter().enumerate().take(r) {
            let (list, count) = if *t {
                (&mut cond.kept, &mut nk)
            } else {
                (&mut cond.closed, &mut nu)
            };
            if let Some(slot) = list.get_mut(*count) {
                *slot = c;
            }
            *count += 1;
        }
        if nu == 0 || nk == 0 {
            return;
        }
        // L, from H_uu's lower triangle.
        let max_diag = linalg::lower_block(&red.hess, head_usize(&cond.closed, nu), &mut cond.fac);
        if !(max_diag > 0.0) || !max_diag.is_finite() {
            return;
        }
        let (replaced, _) = cholesky(&mut cond.fac, nu, PIVOT_FLOOR * max_diag, 1.0);
        if replaced > 0 {
            return;
        }
        // Yᵀ: row j = L⁻¹ H_u,kept[j].
        {
            let (lrows, yrows) = cond.fac.split_at_mut(nu.min(N));
            for (y, ck) in rows_head_mut(yrows, nk).iter_mut().zip(&cond.kept) {
                let y = head_mut(y, nu);
                for (yi, cu) in y.iter_mut().zip(&cond.closed) {
                    *yi = linalg::at(row(&red.hess, *cu), *ck);
                }
                forward_substitute(lrows, nu, y);
            }
        }
        // L⁻¹ g_u.
        for (gy, cu) in head_mut(&mut cond.gy, nu).iter_mut().zip(&cond.closed) {
            *gy = linalg::at(&red.g, *cu);
        }
        forward_substitute(&cond.fac, nu, head_mut(&mut cond.gy, nu));
        // H' into the scratch (lower triangle), g', then both into place.
        let yt = |j: usize| head(row(&cond.fac, nu + j), nu);
        let scratch = &mut self.kkt.chol;
        for (a, (srow, ca)) in rows_head_mut(scratch, nk)
            .iter_mut()
            .zip(&cond.kept)
            .enumerate()
        {
            let hrow = row(&red.hess, *ca);
            for (b, (s, cb)) in head_mut(srow, a + 1).iter_mut().zip(&cond.kept).enumerate() {
                *s = linalg::at(hrow, *cb) - dot(yt(a), yt(b));
            }
        }
        let mut g = [0.0f64; N];
        for (a, (gi, ca)) in head_mut(&mut g, nk).iter_mut().zip(&cond.kept).enumerate() {
            *gi = linalg::at(&red.g, *ca) - dot(yt(a), head(&cond.gy, nu));
        }
        for (hrow, srow) in rows_head_mut(&mut red.hess, nk)
            .iter_mut()
            .zip(scratch.iter())
        {
            linalg::copy(head(srow, nk), head_mut(hrow, nk));
        }
        super::reduce::mirror_lower(&mut red.hess, nk);
        linalg::copy(head(&g, nk), head_mut(&mut red.g, nk));
        // G's kept columns to its front, a run of consecutive ones at a time (kept[j] ≥ j).
        let kept = head_usize(&cond.kept, nk);
        for grow in rows_head_mut(&mut red.gmat, mk) {
            let mut j = 0;
            while let Some(&start) = kept.get(j) {
                let mut len = 1;
                while kept.get(j + len) == Some(&(start + len)) {
                    len += 1;
                }
                if start + len <= grow.len() {
                    grow.copy_within(start..start + len, j);
                }
                j += len;
            }
        }
        let gy = head(&cond.gy, nu);
        self.qr.offset -= 0.5 * dot(gy, gy);
        red.linear = rows_head(&red.hess, nk)
            .iter()
            .all(|row| head(row, nk).iter().all(|v| *v == 0.0));
        super::reduce::supports(red, nk, mk);
        cond.nu = nu;
        self.dims.r = nk;
    }
}
