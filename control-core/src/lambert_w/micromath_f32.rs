//! Lambert W in f32, computed in f32 with the `micromath` crate's `exp` and `ln` (feature
//! `micromath`): both real branches for microcontrollers with a single-precision FPU. The only
//! function taken from libm is `sqrtf` (correctly rounded; micromath's `sqrt` is a 5 % estimate).
//! Not the f64 path rounded (that is [`super::w0_f32`]): every operation here is an f32 one.
//!
//! Like the rest of the module it never allocates, blocks or panics, and every input (NaN, ±∞,
//! ±0, subnormals, values outside the domain) gives `Some(value)` or `None`; a returned value is
//! never NaN. Loops have fixed trip counts.
//!
//! # Method
//! With q = x + 1/e formed as `(x + INV_E_HI) + INV_E_LO` (the first sum exact by Sterbenz near
//! the branch point):
//!
//! - **Near the branch point** (q < [`Q_SERIES`], |p| ≤ 0.25, both branches): the series
//!   w = −1 + p − p²/3 + 11p³/72 − … to p⁹ in p = ±√(2e·q) (+ for W₀, − for W₋₁). No `exp`, no `ln`.
//! - **Near zero** (|x| ≤ [`X_TAYLOR`], W₀): the Taylor series Σ (−n)ⁿ⁻¹xⁿ/n! to x⁹.
//! - **Elsewhere**: three Halley steps on the log form g(w) = w + ln|w| − ln|x| (both branches),
//!   from a start value within a few per cent: the branch series to p⁵ for x < −0.25, the Taylor
//!   series for W₀ with −0.25 ≤ x < −[`X_TAYLOR`], Winitzki's ln(1 + x)(1 − ln(1 + ln(1 + x))/(2 + ln(1 + x))) for W₀
//!   with x > 0, L₁ − L₂ + L₂/L₁ (L₁ = ln|x|, L₂ = ln|L₁|) for W₋₁ above −0.25. The log form
//!   never overflows (it works with ln|x|, so the entry points that take ln|x| use it directly)
//!   and uses `ln` only.
//!
//! # Accuracy (what micromath costs)
//! micromath's `ln` is a degree-4 polynomial on [1, 2) with an absolute error up to ~6e−5 (its
//! result for arguments below 1 goes through an approximate reciprocal and is far worse, up to
//! 0.1: this module passes it 1/v computed by a true division instead); its `exp` has a relative
//! error up to 2.4e−3 and is not used by the iterations. The Halley steps converge to the root of
//! the *computed* g, so W carries the error of `ln`: an absolute error δ in ln moves w by
//! δ·|w/(1 + w)|, about 1e−4 relative, i.e. hundreds to a few thousand f32 ulp in the log-form
//! region, growing towards the branch point as 1/|1 + w|. The two series regions use no
//! elementary function and are within a few ulp. `tests/lambert_accuracy.rs`
//! (`micromath_f32_lambert_w_against_mpmath`) measures it against the mpmath reference, per
//! branch and region, and asserts the bounds listed there.

use micromath::F32Ext;

/// 1/e rounded to f32.
pub const INV_E: f32 = INV_E_HI;
/// 1/e rounded to f32 (the head of the pair below).
const INV_E_HI: f32 = 0.367_879_45;
/// 1/e − [`INV_E_HI`], rounded to f32.
const INV_E_LO: f32 = -9.149_756e-9;
/// 2e rounded to f32.
const TWO_E: f32 = 5.436_563_5;
/// Below this q = x + 1/e (|p| ≤ 0.25) the branch-point series is used.
pub const Q_SERIES: f32 = 0.011_495;
/// Up to this |x| W₀ is its Taylor series at 0.
pub const X_TAYLOR: f32 = 0.0625;
/// Halley steps of the log form (each one `ln`).
const HALLEY_STEPS: usize = 3;
/// ln 2.
const LN_2: f32 = core::f32::consts::LN_2;

/// ln v for v > 0 (finite or +∞; `None` elsewhere), through micromath's `ln` on arguments ≥ 1
/// only: below 1, −ln(1/v) with a true division (micromath's own v < 1 path uses an
/// approximate reciprocal); subnormal v are scaled by 2⁶⁴ first.
pub fn ln(v: f32) -> Option<f32> {
    if v.is_nan() || v <= 0.0 {
        return None;
    }
    if v == f32::INFINITY {
        return Some(f32::INFINITY);
    }
    if v >= 1.0 {
        return Some(F32Ext::ln(v));
    }
    if v < 1.0e-30 {
        // 1/v would overflow for v < 2.9e−39: ln v = ln(v·2⁶⁴) − 64 ln 2.
        let scaled = v * 18_446_744_073_709_551_616.0;
        return Some(-F32Ext::ln(1.0 / scaled) - 64.0 * LN_2);
    }
    Some(-F32Ext::ln(1.0 / v))
}

/// micromath's `exp` (relative error up to 2.4e−3); 0 for −∞ and below about −87, +∞ above 88.7.
pub fn exp(v: f32) -> f32 {
    if v.is_nan() {
        return v;
    }
    if v < -103.0 {
        return 0.0;
    }
    if v > 88.8 {
        return f32::INFINITY;
    }
    F32Ext::exp(v)
}

/// eᵛ − 1: the Taylor series to v⁷ for |v| ≤ 0.25 (relative error < 1e−8), micromath's `exp`
/// minus one beyond (relative error up to 2.4e−3 of eᵛ).
pub fn expm1(v: f32) -> f32 {
    if v.abs() <= 0.25 {
        let p = 1.0 / 5040.0;
        let p = p * v + 1.0 / 720.0;
        let p = p * v + 1.0 / 120.0;
        let p = p * v + 1.0 / 24.0;
        let p = p * v + 1.0 / 6.0;
        let p = p * v + 0.5;
        let p = p * v + 1.0;
        return p * v;
    }
    exp(v) - 1.0
}

/// √v (v ≥ 0 finite): libm's `sqrtf`, correctly rounded (micromath's `sqrt` is a 5 % estimate).
fn sqrt(v: f32) -> f32 {
    libm::sqrtf(v)
}

/// The branch-point series −1 + p − p²/3 + … to p⁹ (p > 0 for W₀, p < 0 for W₋₁).
fn branch_series(p: f32) -> f32 {
    let s = 0.006_014_543;
    let s = s * p - 0.009_616_892;
    let s = s * p + 0.015_635_633;
    let s = s * p - 0.025_984_715;
    let s = s * p + 0.044_502_314;
    let s = s * p - 0.079_629_63;
    let s = s * p + 0.152_777_78;
    let s = s * p - 0.333_333_34;
    let s = s * p + 1.0;
    -1.0 + p * s
}

/// The same series to p⁵: a start value for the log form (error < 3 % for |p| ≤ 1).
fn branch_start(p: f32) -> f32 {
    let s = 0.044_502_314;
    let s = s * p - 0.079_629_63;
    let s = s * p + 0.152_777_78;
    let s = s * p - 0.333_333_34;
    let s = s * p + 1.0;
    -1.0 + p * s
}

/// The Taylor series of W₀ at 0 to x⁹ (for |x| ≤ [`X_TAYLOR`]: truncation < 5e−9 relative).
fn w0_taylor(x: f32) -> f32 {
    let s = 118.627_94;
    let s = s * x - 52.012_7;
    let s = s * x + 23.343_056;
    let s = s * x - 10.8;
    let s = s * x + 5.208_333_5;
    let s = s * x - 2.666_666_7;
    let s = s * x + 1.5;
    let s = s * x - 1.0;
    let s = s * x + 1.0;
    x * s
}

/// Halley steps on g(w) = w + ln|w| − L from `w` (w ≠ 0, w ≠ −1, of the branch's sign), for
/// ln|x| = `l`. Keeps w on its side of −1 and of 0 (`lower` for W₋₁: w < −1).
fn log_form(mut w: f32, l: f32, lower: bool) -> f32 {
    for _ in 0..HALLEY_STEPS {
        let Some(ln_w) = ln(w.abs()) else {
            break;
        };
        let g = (w - l) + ln_w;
        let one_plus_w = 1.0 + w;
        // Newton step g/g' = g·w/(1 + w); Halley's correction 1 + g/(2(1 + w)²) (g'' = −1/w²).
        let newton = g * w / one_plus_w;
        let step = newton / (1.0 + g / (2.0 * one_plus_w * one_plus_w));
        let next = w - step;
        let inside = if lower {
            next < -1.0
        } else if w > 0.0 {
            next > 0.0
        } else {
            next > -1.0 && next < 0.0
        };
        if !(next.is_finite() && inside) {
            // A step that would leave the branch: halve towards the boundary instead.
            w = if lower {
                if next.is_finite() && next >= -1.0 {
                    0.5 * (w - 1.0)
                } else {
                    w
                }
            } else if w > 0.0 {
                0.5 * w
            } else {
                0.5 * (w - 1.0).max(-1.0) + 0.5 * w.min(0.0)
            };
            continue;
        }
        w = next;
    }
    w
}

/// W₀(x) in f32: the w ≥ −1 with w·eʷ = x. `None` for NaN and x < −1/e; W₀(+∞) = +∞,
/// W₀(±0) = ±0.
pub fn w0(x: f32) -> Option<f32> {
    if x.is_nan() {
        return None;
    }
    if x.abs() <= X_TAYLOR {
        return Some(w0_taylor(x));
    }
    if x == f32::INFINITY {
        return Some(x);
    }
    if x < 0.0 {
        let q = (x + INV_E_HI) + INV_E_LO;
        if q < 0.0 {
            return None;
        }
        return Some(w0_from_q_and_x(q, x));
    }
    let l = ln(x)?;
    Some(w0_positive(x, l))
}

/// W₀ for x > [`X_TAYLOR`] with l = ln x.
fn w0_positive(x: f32, l: f32) -> f32 {
    let start = if l < 1.1 {
        // Winitzki's start value (error < 1 % for 0 ≤ x ≤ e).
        let a = ln(1.0 + x).unwrap_or(l);
        let b = ln(1.0 + a).unwrap_or(0.0);
        a * (1.0 - b / (2.0 + a))
    } else {
        let l2 = ln(l).unwrap_or(0.0);
        l - l2 + l2 / l
    };
    log_form(start.max(f32::MIN_POSITIVE), l, false)
}

/// W₀ for −1/e ≤ x < −[`X_TAYLOR`], q = x + 1/e ≥ 0.
fn w0_from_q_and_x(q: f32, x: f32) -> f32 {
    let p = sqrt(TWO_E * q);
    if q < Q_SERIES {
        return branch_series(p);
    }
    // The Taylor series (to x⁹, within 3 % for |x| ≤ 0.25) or the branch series (to p⁵, within
    // 1 % for x < −0.25) as the start value.
    let start = if x >= -0.25 {
        w0_taylor(x)
    } else {
        branch_start(p)
    };
    let start = start.clamp(-0.999, -0.001);
    match ln(-x) {
        Some(l) => log_form(start, l, false),
        None => start,
    }
}

/// W₋₁(x) in f32: the w ≤ −1 with w·eʷ = x. `None` for NaN, x < −1/e, x = +0 and x > 0;
/// W₋₁(−0) = −∞.
pub fn wm1(x: f32) -> Option<f32> {
    if x.is_nan() || x > 0.0 || (x == 0.0 && x.is_sign_positive()) {
        return None;
    }
    if x == 0.0 {
        return Some(f32::NEG_INFINITY);
    }
    let q = (x + INV_E_HI) + INV_E_LO;
    if q < 0.0 {
        return None;
    }
    let l = ln(-x)?;
    Some(wm1_from_q_and_log(q, l))
}

/// W₋₁ given q = x + 1/e ≥ 0 (used below x = −0.25) and l = ln(−x) ≤ −1.
fn wm1_from_q_and_log(q: f32, l: f32) -> f32 {
    if q < Q_SERIES {
        return branch_series(-sqrt(TWO_E * q));
    }
    let start = if q < 0.118 {
        // x < −0.25.
        branch_start(-sqrt(TWO_E * q))
    } else {
        let l2 = ln(-l).unwrap_or(0.0);
        l - l2 + l2 / l
    };
    log_form(start.min(-1.001), l, true)
}

/// W₀ at x = q − 1/e for the distance q ≥ 0 to the branch point (`None` for NaN and q < 0;
/// +∞ gives +∞).
pub fn w0_from_branch_distance(q: f32) -> Option<f32> {
    if q.is_nan() || q < 0.0 {
        return None;
    }
    if q < Q_SERIES {
        return Some(branch_series(sqrt(TWO_E * q)));
    }
    if q == f32::INFINITY {
        return Some(q);
    }
    let x = (q - INV_E_HI) - INV_E_LO;
    if x < 0.0 && x.abs() > X_TAYLOR {
        return Some(w0_from_q_and_x(q, x));
    }
    w0(x)
}

/// W₋₁ at x = q − 1/e for 0 ≤ q ≤ 1/e (`None` for NaN, q < 0 and q > 1/e; x = 0 gives −∞).
pub fn wm1_from_branch_distance(q: f32) -> Option<f32> {
    if q.is_nan() || q < 0.0 {
        return None;
    }
    if q < Q_SERIES {
        return Some(branch_series(-sqrt(TWO_E * q)));
    }
    let x = (q - INV_E_HI) - INV_E_LO;
    if x > 0.0 {
        return None;
    }
    if x == 0.0 {
        return Some(f32::NEG_INFINITY);
    }
    Some(wm1_from_q_and_log(q, ln(-x)?))
}

/// W₀(e^L) for any L (NaN gives `None`, −∞ gives 0, +∞ gives +∞): x is never formed where it
/// would over- or underflow.
pub fn w0_of_exp(ln_x: f32) -> Option<f32> {
    let l = ln_x;
    if l.is_nan() {
        return None;
    }
    if l == f32::INFINITY {
        return Some(l);
    }
    if l <= -2.772_588_8 {
        // x = e^L ≤ 1/16: the Taylor series at x (x's relative error, up to micromath's 2.4e−3,
        // carries over to W ≈ x).
        return Some(w0_taylor(exp(l)));
    }
    if l < 1.1 {
        return Some(w0_positive(exp(l), l));
    }
    let l2 = ln(l)?;
    Some(log_form(l - l2 + l2 / l, l, false))
}

/// W₀(−e^L) for L ≤ −1 (NaN and L > −1 give `None`; −∞ gives −0).
pub fn w0_of_neg_exp(ln_neg_x: f32) -> Option<f32> {
    let l = ln_neg_x;
    if l.is_nan() || l > -1.0 {
        return None;
    }
    if l <= -2.772_588_8 {
        return Some(w0_taylor(-exp(l)));
    }
    let q = -INV_E_HI * expm1(l + 1.0);
    let q = q.max(0.0);
    if q < Q_SERIES {
        return Some(branch_series(sqrt(TWO_E * q)));
    }
    // As in `w0_from_q_and_x`: the Taylor series for x ≥ −0.25, the branch series below.
    let start = if l <= -1.386_294_4 {
        w0_taylor(-exp(l))
    } else {
        branch_start(sqrt(TWO_E * q))
    };
    Some(log_form(start.clamp(-0.999, -0.001), l, false))
}

/// W₋₁(−e^L) for L ≤ −1 (NaN and L > −1 give `None`; −∞ gives −∞): near L = −1 the distance to
/// the branch point is q = −(1/e)·expm1(L + 1) (a series, no `exp`).
pub fn wm1_of_neg_exp(ln_neg_x: f32) -> Option<f32> {
    let l = ln_neg_x;
    if l.is_nan() || l > -1.0 {
        return None;
    }
    if l == f32::NEG_INFINITY {
        return Some(l);
    }
    let q = if l >= -1.25 {
        -INV_E_HI * expm1(l + 1.0)
    } else {
        // Only compared with thresholds beyond the series region.
        INV_E_HI - exp(l)
    };
    Some(wm1_from_q_and_log(q.max(0.0), l))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(w: f32, x: f32, tol: f32) {
        let back = w * libm::expf(w);
        assert!(
            (back - x).abs() <= tol * x.abs().max(1e-30),
            "w = {w}, w·e^w = {back}, x = {x}"
        );
    }

    #[test]
    fn special_values() {
        assert_eq!(w0(0.0), Some(0.0));
        assert_eq!(w0(f32::INFINITY), Some(f32::INFINITY));
        assert_eq!(w0(f32::NAN), None);
        assert_eq!(w0(-0.5), None);
        assert_eq!(wm1(-0.0), Some(f32::NEG_INFINITY));
        assert_eq!(wm1(0.0), None);
        assert_eq!(wm1(0.1), None);
        assert_eq!(w0_from_branch_distance(0.0), Some(-1.0));
        assert_eq!(wm1_from_branch_distance(0.0), Some(-1.0));
        assert_eq!(w0_of_exp(f32::NEG_INFINITY), Some(0.0));
        assert_eq!(wm1_of_neg_exp(-1.0), Some(-1.0));
        assert_eq!(wm1_of_neg_exp(-0.5), None);
    }

    #[test]
    fn inverts_w_exp_w_on_both_branches() {
        for &x in &[
            -0.367, -0.3, -0.2, -0.1, -0.01, 0.01, 0.1, 1.0, 10.0, 1e5, 1e30, 3e38,
        ] {
            check(w0(x).unwrap(), x, 2e-3);
        }
        for &x in &[
            -0.367, -0.3, -0.2, -0.1, -0.01, -1e-5, -1e-20, -1e-38, -1e-44,
        ] {
            let w = wm1(x).unwrap();
            assert!(w <= -1.0, "{x}: {w}");
            // w e^w underflows in f32 below ~1e-38: compare logs instead.
            let back = w + libm::logf(-w);
            assert!((back - libm::logf(-x)).abs() < 2e-3, "{x}: {w}");
        }
    }

    #[test]
    fn log_entry_points_agree_with_direct_ones() {
        for &l in &[-80.0f32, -10.0, -3.0, -1.5, -1.01, -1.001] {
            let direct = wm1(-libm::expf(l)).unwrap();
            let via_log = wm1_of_neg_exp(l).unwrap();
            assert!((direct - via_log).abs() <= 1e-3 * direct.abs(), "{l}");
        }
        for &l in &[-100.0f32, -3.0, 0.0, 2.0, 50.0, 88.0, 1000.0] {
            let w = w0_of_exp(l).unwrap();
            assert!(w.is_finite() && w >= 0.0, "{l}: {w}");
        }
    }

    #[test]
    fn w0_of_neg_exp_agrees_with_w0() {
        let mut l = -1.0f32;
        while l > -10.0 {
            let direct = w0(-libm::expf(l)).unwrap_or(-1.0);
            let via_log = w0_of_neg_exp(l).unwrap();
            assert!(
                (direct - via_log).abs() <= 3e-3 * direct.abs(),
                "{l}: {direct} {via_log}"
            );
            l -= 0.013;
        }
    }

    #[test]
    fn never_nan_on_any_bit_pattern() {
        // A strided sweep over all f32 bit patterns.
        let mut bits = 0u32;
        loop {
            let v = f32::from_bits(bits);
            for r in [
                w0(v),
                wm1(v),
                w0_from_branch_distance(v),
                wm1_from_branch_distance(v),
                w0_of_exp(v),
                w0_of_neg_exp(v),
                wm1_of_neg_exp(v),
            ]
            .into_iter()
            .flatten()
            {
                assert!(!r.is_nan(), "{v:e} ({bits:#x})");
            }
            match bits.checked_add(65_521) {
                Some(b) => bits = b,
                None => break,
            }
        }
    }
}
