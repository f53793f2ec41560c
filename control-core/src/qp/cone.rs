//! The cone `R₊^l × SOC(3)^c` (entries `0..l` non-negative, then blocks `(t, u₁, u₂)` with
//! `‖u‖ ≤ t`), which is self-dual: its Nesterov–Todd scaling, Jordan algebra, step lengths and
//! projection. Every function takes the number `l` of non-negative entries; the rest of each
//! slice is cut into blocks of 3 (a remainder shorter than 3 is ignored: callers pass whole cones).

use super::linalg::{head, head_mut};

/// The non-negative part and the second-order part of `v`.
#[inline]
pub(super) fn split(v: &[f64], l: usize) -> (&[f64], &[f64]) {
    v.split_at(l.min(v.len()))
}

/// The non-negative part and the second-order part of `v`, mutably.
#[inline]
pub(super) fn split_mut(v: &mut [f64], l: usize) -> (&mut [f64], &mut [f64]) {
    let l = l.min(v.len());
    v.split_at_mut(l)
}

/// `t − ‖u‖` for a second-order block: its smallest eigenvalue.
#[inline]
fn soc_margin(t: f64, u1: f64, u2: f64) -> f64 {
    t - libm::hypot(u1, u2)
}

/// `t² − ‖u‖²` computed as a product of sum and difference (less cancellation at the boundary).
#[inline]
fn soc_det(t: f64, u1: f64, u2: f64) -> f64 {
    let r = libm::hypot(u1, u2);
    (t - r) * (t + r)
}

/// The smallest margin (eigenvalue) over all cones and the sum of the positive margins.
pub(super) fn margins(v: &[f64], l: usize) -> (f64, f64) {
    let (vl, vc) = split(v, l);
    let mut min = f64::INFINITY;
    let mut pos = 0.0;
    for &x in vl {
        min = min.min(x);
        pos += x.max(0.0);
    }
    for c in vc.chunks_exact(3) {
        if let &[t, u1, u2] = c {
            let m = soc_margin(t, u1, u2);
            min = min.min(m);
            pos += m.max(0.0);
        }
    }
    (min, pos)
}

/// `v += alpha e`, with `e` the cone's identity (1 on non-negative entries, `(1, 0, 0)` per block).
pub(super) fn shift(v: &mut [f64], l: usize, alpha: f64) {
    let (vl, vc) = split_mut(v, l);
    for x in vl {
        *x += alpha;
    }
    for c in vc.chunks_exact_mut(3) {
        if let Some(t) = c.first_mut() {
            *t += alpha;
        }
    }
}

/// Moves `v` into the interior of the cone the way Clarabel does for its initial point: a
/// shift along `e` so that the smallest margin is at least `max(1, 0.1 · mean positive margin)`.
pub(super) fn shift_to_interior(v: &mut [f64], l: usize, degree: usize) {
    if degree == 0 {
        return;
    }
    let (min, pos) = margins(v, l);
    let target = (0.1 * pos / degree as f64).max(1.0);
    if min <= 0.0 {
        shift(v, l, -min);
        shift(v, l, target);
    } else if min < target {
        shift(v, l, target - min);
    }
}

/// The largest `α ≥ 0` (at most `cap`) with `v + α dv` in the cone; `v` must be in the cone.
pub(super) fn step_length(v: &[f64], dv: &[f64], l: usize, cap: f64) -> f64 {
    let mut alpha = cap;
    let (vl, vc) = split(v, l);
    let (dl, dc) = split(dv, l);
    for (x, d) in vl.iter().zip(dl) {
        if *d < 0.0 {
            alpha = alpha.min(-x / d);
        }
    }
    for (c, d) in vc.chunks_exact(3).zip(dc.chunks_exact(3)) {
        if let (&[t, u1, u2], &[dt, du1, du2]) = (c, d) {
            alpha = alpha.min(soc_step(t, u1, u2, dt, du1, du2));
        }
    }
    alpha.max(0.0)
}

/// The largest `α ≥ 0` keeping `(t, u) + α (dt, du)` in SOC(3); infinity when unbounded.
fn soc_step(t: f64, u1: f64, u2: f64, dt: f64, du1: f64, du2: f64) -> f64 {
    // The linear condition t + α dt ≥ 0 ...
    let mut alpha = if dt < 0.0 { -t / dt } else { f64::INFINITY };
    // ... and the quadratic one (t + α dt)² − ‖u + α du‖² ≥ 0: a α² + b α + c ≥ 0 with c ≥ 0.
    let a = dt * dt - du1 * du1 - du2 * du2;
    let b = 2.0 * (t * dt - u1 * du1 - u2 * du2);
    let c = soc_det(t, u1, u2).max(0.0);
    let root = if a == 0.0 {
        if b < 0.0 { -c / b } else { f64::INFINITY }
    } else {
        let disc = b * b - 4.0 * a * c;
        if disc < 0.0 {
            f64::INFINITY
        } else {
            let sq = libm::sqrt(disc);
            let q = if b >= 0.0 {
                -0.5 * (b + sq)
            } else {
                -0.5 * (b - sq)
            };
            let r1 = if a != 0.0 { q / a } else { f64::INFINITY };
            let r2 = if q != 0.0 { c / q } else { f64::INFINITY };
            let pick = |r: f64| if r > 0.0 { r } else { f64::INFINITY };
            pick(r1).min(pick(r2))
        }
    };
    alpha = alpha.min(root);
    if alpha.is_nan() { 0.0 } else { alpha }
}

/// Nesterov–Todd scaling of an interior pair `(s, z)`: per non-negative entry `w = √(s/z)` in
/// `wbar`; per block the unit-hyperbolic `w̄` in `wbar` and `η` (repeated on its 3 rows) in `eta`,
/// with `W = η [w̄₀ w̄₁ᵀ; w̄₁ I + w̄₁w̄₁ᵀ/(1+w̄₀)]`, `W z = W⁻¹ s = λ`. Returns false if a pair is
/// not strictly interior (numerically), leaving the outputs partly written.
pub(super) fn nt_scaling(
    s: &[f64],
    z: &[f64],
    l: usize,
    wbar: &mut [f64],
    eta: &mut [f64],
    lambda: &mut [f64],
) -> bool {
    let (sl, sc) = split(s, l);
    let (zl, zc) = split(z, l);
    let (wl, wc) = split_mut(wbar, l);
    let (_, ec) = split_mut(eta, l);
    let (ll, lc) = split_mut(lambda, l);
    for (((si, zi), wi), li) in sl.iter().zip(zl).zip(wl.iter_mut()).zip(ll.iter_mut()) {
        if !(*si > 0.0 && *zi > 0.0) {
            return false;
        }
        *wi = libm::sqrt(si / zi);
        *li = libm::sqrt(si * zi);
    }
    let blocks = sc
        .chunks_exact(3)
        .zip(zc.chunks_exact(3))
        .zip(wc.chunks_exact_mut(3))
        .zip(ec.chunks_exact_mut(3))
        .zip(lc.chunks_exact_mut(3));
    for ((((sb, zb), wb), eb), lb) in blocks {
        let (&[s0, s1, s2], &[z0, z1, z2]) = (sb, zb) else {
            return false;
        };
        let sdet = soc_det(s0, s1, s2);
        let zdet = soc_det(z0, z1, z2);
        if !(sdet > 0.0 && zdet > 0.0 && s0 > 0.0 && z0 > 0.0) {
            return false;
        }
        let sn = libm::sqrt(sdet);
        let zn = libm::sqrt(zdet);
        let (a0, a1, a2) = (s0 / sn, s1 / sn, s2 / sn);
        let (b0, b1, b2) = (z0 / zn, z1 / zn, z2 / zn);
        let gamma = libm::sqrt(((1.0 + a0 * b0 + a1 * b1 + a2 * b2) * 0.5).max(0.0));
        if !(gamma > 0.0) {
            return false;
        }
        let w0 = (a0 + b0) / (2.0 * gamma);
        let w1 = (a1 - b1) / (2.0 * gamma);
        let w2 = (a2 - b2) / (2.0 * gamma);
        let e = libm::sqrt(sn / zn);
        if let [o0, o1, o2] = wb {
            (*o0, *o1, *o2) = (w0, w1, w2);
        }
        eb.fill(e);
        let (l0, l1, l2) = w_block(w0, w1, w2, e, z0, z1, z2);
        if let [o0, o1, o2] = lb {
            (*o0, *o1, *o2) = (l0, l1, l2);
        }
    }
    true
}

/// `W v` for one block.
#[inline]
fn w_block(w0: f64, w1: f64, w2: f64, e: f64, v0: f64, v1: f64, v2: f64) -> (f64, f64, f64) {
    let d = w1 * v1 + w2 * v2;
    let c = v0 + d / (1.0 + w0);
    (e * (w0 * v0 + d), e * (v1 + c * w1), e * (v2 + c * w2))
}

/// `W⁻¹ v` for one block.
#[inline]
fn winv_block(w0: f64, w1: f64, w2: f64, e: f64, v0: f64, v1: f64, v2: f64) -> (f64, f64, f64) {
    let d = w1 * v1 + w2 * v2;
    let c = -v0 + d / (1.0 + w0);
    ((w0 * v0 - d) / e, (v1 + c * w1) / e, (v2 + c * w2) / e)
}

/// `W² v` for one block: `η² (2 w̄ (w̄ᵀ v) − J v)`.
#[inline]
fn w2_block(w0: f64, w1: f64, w2: f64, e: f64, v0: f64, v1: f64, v2: f64) -> (f64, f64, f64) {
    let d = 2.0 * (w0 * v0 + w1 * v1 + w2 * v2);
    let e2 = e * e;
    (e2 * (d * w0 - v0), e2 * (d * w1 + v1), e2 * (d * w2 + v2))
}

/// Which product [`apply_w`] forms.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum WOp {
    /// `W v`.
    W,
    /// `W⁻¹ v`.
    Inverse,
    /// `W² v`.
    Square,
}

/// `out = op(W) v` for the scaling stored by [`nt_scaling`].
pub(super) fn apply_w(op: WOp, wbar: &[f64], eta: &[f64], l: usize, v: &[f64], out: &mut [f64]) {
    let (wl, wc) = split(wbar, l);
    let (_, ec) = split(eta, l);
    let (vl, vc) = split(v, l);
    let (ol, oc) = split_mut(out, l);
    for ((o, w), x) in ol.iter_mut().zip(wl).zip(vl) {
        *o = match op {
            WOp::W => w * x,
            WOp::Inverse => x / w,
            WOp::Square => w * w * x,
        };
    }
    let blocks = wc
        .chunks_exact(3)
        .zip(ec.chunks_exact(3))
        .zip(vc.chunks_exact(3))
        .zip(oc.chunks_exact_mut(3));
    for (((wb, eb), vb), ob) in blocks {
        if let (&[w0, w1, w2], Some(&e), &[v0, v1, v2], [o0, o1, o2]) = (wb, eb.first(), vb, ob) {
            let f = match op {
                WOp::W => w_block,
                WOp::Inverse => winv_block,
                WOp::Square => w2_block,
            };
            (*o0, *o1, *o2) = f(w0, w1, w2, e, v0, v1, v2);
        }
    }
}

/// The regularised inverse `(W² + δ I)⁻¹ = W⁻¹ (I + δ W⁻²)⁻¹ W⁻¹`, factored without the
/// cancellation of `W² + δ I` itself (whose condition grows without bound near the cone's
/// boundary): per cone, the Cholesky factor `C` of `I + δ W⁻²` (eigenvalues ≥ 1), stored row by
/// row in `lreg`; a non-negative entry keeps `√(w² + δ)` in its first slot.
pub(super) fn regularised_factor(
    wbar: &[f64],
    eta: &[f64],
    l: usize,
    delta: f64,
    lreg: &mut [[f64; 3]],
) {
    let (wl, wc) = split(wbar, l);
    let (_, ec) = split(eta, l);
    let (rl, rc) = lreg.split_at_mut(l.min(lreg.len()));
    for (r, w) in rl.iter_mut().zip(wl) {
        *r = [libm::sqrt(w * w + delta), 0.0, 0.0];
    }
    for ((wb, eb), rb) in wc
        .chunks_exact(3)
        .zip(ec.chunks_exact(3))
        .zip(rc.chunks_exact_mut(3))
    {
        let (&[w0, w1, w2], Some(&e)) = (wb, eb.first()) else {
            continue;
        };
        // W⁻¹ = (1/η) [w₀ −w₁ᵀ; −w₁ I + w₁w₁ᵀ/(1+w₀)]
        let k = 1.0 / (1.0 + w0);
        let wi = [
            [w0 / e, -w1 / e, -w2 / e],
            [-w1 / e, (1.0 + w1 * w1 * k) / e, w1 * w2 * k / e],
            [-w2 / e, w1 * w2 * k / e, (1.0 + w2 * w2 * k) / e],
        ];
        let w2i = |i: usize, j: usize| -> f64 {
            let (ri, rj) = (
                wi.get(i).copied().unwrap_or([0.0; 3]),
                wi.get(j).copied().unwrap_or([0.0; 3]),
            );
            ri[0] * rj[0] + ri[1] * rj[1] + ri[2] * rj[2]
        };
        let m00 = 1.0 + delta * w2i(0, 0);
        let m10 = delta * w2i(1, 0);
        let m20 = delta * w2i(2, 0);
        let m11 = 1.0 + delta * w2i(1, 1);
        let m21 = delta * w2i(2, 1);
        let m22 = 1.0 + delta * w2i(2, 2);
        let l00 = libm::sqrt(m00.max(1.0));
        let l10 = m10 / l00;
        let l20 = m20 / l00;
        let l11 = libm::sqrt((m11 - l10 * l10).max(1.0));
        let l21 = (m21 - l20 * l10) / l11;
        let l22 = libm::sqrt((m22 - l20 * l20 - l21 * l21).max(1.0));
        if let [r0, r1, r2] = rb {
            *r0 = [l00, 0.0, 0.0];
            *r1 = [l10, l11, 0.0];
            *r2 = [l20, l21, l22];
        }
    }
}

/// `C⁻¹ W⁻¹ v` for one block (the half of `(W² + δ)⁻¹` in the normal matrix).
#[inline]
#[allow(clippy::too_many_arguments)]
pub(super) fn soc_half(
    w: [f64; 3],
    e: f64,
    c: &[[f64; 3]],
    v0: f64,
    v1: f64,
    v2: f64,
) -> (f64, f64, f64) {
    let (t0, t1, t2) = winv_block(w[0], w[1], w[2], e, v0, v1, v2);
    let ([c00, ..], [c10, c11, _], [c20, c21, c22]) = (
        c.first().copied().unwrap_or([1.0; 3]),
        c.get(1).copied().unwrap_or([0.0, 1.0, 0.0]),
        c.get(2).copied().unwrap_or([0.0, 0.0, 1.0]),
    );
    let y0 = t0 / c00;
    let y1 = (t1 - c10 * y0) / c11;
    let y2 = (t2 - c20 * y0 - c21 * y1) / c22;
    (y0, y1, y2)
}

/// `v ← (W² + δ I)⁻¹ v` with the factor from [`regularised_factor`].
pub(super) fn regularised_solve(
    wbar: &[f64],
    eta: &[f64],
    lreg: &[[f64; 3]],
    l: usize,
    v: &mut [f64],
) {
    let (wl, wc) = split(wbar, l);
    let (_, ec) = split(eta, l);
    let (rl, rc) = lreg.split_at(l.min(lreg.len()));
    let (vl, vc) = split_mut(v, l);
    for ((x, r), _) in vl.iter_mut().zip(rl).zip(wl) {
        *x /= r[0] * r[0];
    }
    let blocks = vc
        .chunks_exact_mut(3)
        .zip(rc.chunks_exact(3))
        .zip(wc.chunks_exact(3))
        .zip(ec.chunks_exact(3));
    for (((vb, rb), wb), eb) in blocks {
        if let ([v0, v1, v2], [r0, r1, r2], &[w0, w1, w2], Some(&e)) = (vb, rb, wb, eb.first()) {
            // y = C⁻¹ W⁻¹ v, then x = W⁻¹ C⁻ᵀ y.
            let (y0, y1, y2) = soc_half([w0, w1, w2], e, &[*r0, *r1, *r2], *v0, *v1, *v2);
            let x2 = y2 / r2[2];
            let x1 = (y1 - r2[1] * x2) / r1[1];
            let x0 = (y0 - r1[0] * x1 - r2[0] * x2) / r0[0];
            (*v0, *v1, *v2) = winv_block(w0, w1, w2, e, x0, x1, x2);
        }
    }
}

/// Jordan product `out = u ∘ v`.
pub(super) fn jordan(u: &[f64], v: &[f64], l: usize, out: &mut [f64]) {
    let (ul, uc) = split(u, l);
    let (vl, vc) = split(v, l);
    let (ol, oc) = split_mut(out, l);
    for ((o, a), b) in ol.iter_mut().zip(ul).zip(vl) {
        *o = a * b;
    }
    for ((ub, vb), ob) in uc
        .chunks_exact(3)
        .zip(vc.chunks_exact(3))
        .zip(oc.chunks_exact_mut(3))
    {
        if let (&[u0, u1, u2], &[v0, v1, v2], [o0, o1, o2]) = (ub, vb, ob) {
            *o0 = u0 * v0 + u1 * v1 + u2 * v2;
            *o1 = u0 * v1 + v0 * u1;
            *o2 = u0 * v2 + v0 * u2;
        }
    }
}

/// Inverse Jordan product `out = λ \ d` (the `x` with `λ ∘ x = d`), for `λ` interior.
pub(super) fn jordan_div(lambda: &[f64], d: &[f64], l: usize, out: &mut [f64]) {
    let (ll, lc) = split(lambda, l);
    let (dl, dc) = split(d, l);
    let (ol, oc) = split_mut(out, l);
    for ((o, a), b) in ol.iter_mut().zip(ll).zip(dl) {
        *o = b / a;
    }
    for ((lb, db), ob) in lc
        .chunks_exact(3)
        .zip(dc.chunks_exact(3))
        .zip(oc.chunks_exact_mut(3))
    {
        if let (&[l0, l1, l2], &[d0, d1, d2], [o0, o1, o2]) = (lb, db, ob) {
            let det = soc_det(l0, l1, l2);
            let x0 = (l0 * d0 - l1 * d1 - l2 * d2) / det;
            *o0 = x0;
            *o1 = (d1 - x0 * l1) / l0;
            *o2 = (d2 - x0 * l2) / l0;
        }
    }
}

/// Euclidean projection onto the cone, in place.
pub(super) fn project(v: &mut [f64], l: usize) {
    let (vl, vc) = split_mut(v, l);
    for x in vl {
        *x = x.max(0.0);
    }
    for c in vc.chunks_exact_mut(3) {
        if let [t, u1, u2] = c {
            let r = libm::hypot(*u1, *u2);
            if r <= *t {
                continue;
            }
            if r <= -*t {
                (*t, *u1, *u2) = (0.0, 0.0, 0.0);
                continue;
            }
            let k = 0.5 * (*t + r);
            let f = k / r;
            (*t, *u1, *u2) = (k, *u1 * f, *u2 * f);
        }
    }
}

/// The ∞-norm distance from `v` to the cone.
pub(super) fn distance_inf(v: &[f64], l: usize, scratch: &mut [f64]) -> f64 {
    let n = v.len().min(scratch.len());
    let p = head_mut(scratch, n);
    p.copy_from_slice(head(v, n));
    project(p, l);
    p.iter()
        .zip(v)
        .fold(0.0f64, |m, (a, b)| m.max((a - b).abs()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nt_scaling_maps_z_and_s_to_the_same_point() {
        let s = [0.7, 3.0, 1.0, 0.5, 4.0, -2.0, 1.5, 2.0, 0.1, 0.1];
        let s = [s[0], s[1], s[2], s[3], 4.6, -2.0, 1.5, 2.0, 0.1, 0.1];
        let z = [2.0, 1.6, 1.2, 0.6, 2.0, 0.1, -1.0, 5.0, 4.0, -2.5];
        let (mut w, mut e, mut lam) = ([0.0; 10], [0.0; 10], [0.0; 10]);
        assert!(nt_scaling(&s, &z, 1, &mut w, &mut e, &mut lam));
        let (mut wz, mut wis) = ([0.0; 10], [0.0; 10]);
        apply_w(WOp::W, &w, &e, 1, &z, &mut wz);
        apply_w(WOp::Inverse, &w, &e, 1, &s, &mut wis);
        let (mut w2z, mut wwz) = ([0.0; 10], [0.0; 10]);
        apply_w(WOp::Square, &w, &e, 1, &z, &mut w2z);
        apply_w(WOp::W, &w, &e, 1, &wz, &mut wwz);
        for i in 0..10 {
            assert!((wz[i] - wis[i]).abs() < 1e-12, "{i}");
            assert!((wz[i] - lam[i]).abs() < 1e-12, "{i}");
            assert!((w2z[i] - wwz[i]).abs() < 1e-10, "{i}");
            assert!((w2z[i] - s[i]).abs() < 1e-10, "{i}");
        }
        // (W² + δ)⁻¹ (W² + δ) v = v
        let mut lreg = [[0.0; 3]; 10];
        regularised_factor(&w, &e, 1, 1e-3, &mut lreg);
        let v = [1.0, -2.0, 0.5, 3.0, 0.25, 1.0, -1.0, 2.0, 0.5, 0.0];
        let mut w2v = [0.0; 10];
        apply_w(WOp::Square, &w, &e, 1, &v, &mut w2v);
        for (o, x) in w2v.iter_mut().zip(&v) {
            *o += 1e-3 * x;
        }
        regularised_solve(&w, &e, &lreg, 1, &mut w2v);
        for (a, b) in w2v.iter().zip(&v) {
            assert!((a - b).abs() < 1e-9);
        }
    }

    #[test]
    fn jordan_division_inverts_the_product() {
        let lam = [2.0, 3.0, 1.0, -1.5];
        let x = [0.3, -1.0, 2.0, 0.7];
        let mut d = [0.0; 4];
        jordan(&lam, &x, 1, &mut d);
        let mut back = [0.0; 4];
        jordan_div(&lam, &d, 1, &mut back);
        for (a, b) in back.iter().zip(&x) {
            assert!((a - b).abs() < 1e-12);
        }
    }

    #[test]
    fn step_length_stops_at_the_boundary() {
        let v = [1.0, 2.0, 0.0, 0.0];
        let dv = [-1.0, -1.0, 1.0, 0.0];
        let a = step_length(&v, &dv, 1, 10.0);
        // non-negative: 1 − α ≥ 0 → α ≤ 1; cone: (2 − α)² ≥ α² → α ≤ 1.
        assert!((a - 1.0).abs() < 1e-12);
        let a = step_length(&v, &[0.0, 1.0, 0.5, 0.0], 1, 10.0);
        assert_eq!(a, 10.0);
        let b = step_length(&[0.0, 2.0, 1.0, 1.0], &[0.0, -1.0, 0.0, 0.0], 1, 10.0);
        let r = libm::hypot(1.0, 1.0);
        assert!((b - (2.0 - r)).abs() < 1e-12);
    }

    #[test]
    fn projection_onto_the_second_order_cone() {
        let mut v = [-1.0, 0.0, 3.0, 4.0];
        project(&mut v, 1);
        // (0, 3, 4): ‖u‖ = 5 → ((0 + 5)/2)(1, 3/5, 4/5) = (2.5, 1.5, 2)
        assert_eq!(v[0], 0.0);
        assert!(
            (v[1] - 2.5).abs() < 1e-12 && (v[2] - 1.5).abs() < 1e-12 && (v[3] - 2.0).abs() < 1e-12
        );
        let mut w = [0.0, -5.0, 3.0, 0.0];
        project(&mut w, 1);
        assert_eq!(w, [0.0, 0.0, 0.0, 0.0]);
    }
}
