//! Lambert W: both real branches, W₀ and W₋₁, in f64 and f32, to within 2 ulp.
//!
//! W(x) solves w·eʷ = x. The principal branch [`w0`] is defined for x ≥ −1/e (w ≥ −1); the
//! lower branch [`wm1`] for −1/e ≤ x < 0 (w ≤ −1). Besides the plain entry points there are
//! entry points that take the distance to the branch point q = x + 1/e
//! ([`w0_from_branch_distance`], [`wm1_from_branch_distance`]) for callers that can form q without
//! cancellation, and entry points that take ln|x| ([`w0_of_exp`], [`wm1_of_neg_exp`]) for arguments
//! that over- or underflow f64.
//!
//! This module never allocates, never blocks and never panics: every function is loop-free
//! arithmetic on `f64` plus `libm` calls, and every input (NaN, ±∞, ±0, subnormals, values outside
//! the domain) yields `Some(value)` or `None`.
//!
//! # Method
//!
//! [`w0`] and [`wm1`] evaluate W directly, without an iteration or a division, everywhere: away
//! from the branch point W = (k0 + k0_lo) + t·P(t) on one piece of a table, P of degree 8 (its
//! even and odd halves by Horner side by side), t a small local variable formed exactly (or with
//! one rounding far below an ulp of W), k0 + k0_lo = W at the piece centre as a double-double.
//! Each piece's approximation error (with its coefficients rounded to f64) is below 8e−18
//! relative, |t·P| ≤ ~|W|/8, so the result is within ~0.5 ulp (final rounding) plus a few
//! hundredths. Within a region the piece is chosen from the
//! bits of a double (binade and top fraction bits, or the binary exponent), not by comparisons. With
//! q = x + 1/e formed as `(x + INV_E_HI) + INV_E_LO` (the first sum is exact near the branch
//! point by Sterbenz' lemma, so q carries no cancellation):
//!
//! - **Near the branch point** (q < 2⁻¹⁴, i.e. |1 + w| < 0.0183, both branches): w = −1 + p·S(p)
//!   with p = ±√(2e·q) (+ for W₀, − for W₋₁): W is analytic in p there, and one degree-6
//!   polynomial S serves both branches (error < 2e−18). No division, no iteration.
//! - **x < −0.3, q ≥ 2⁻¹⁴** (both branches): tables in q (`W0_Q`, `WM1_Q`), 8–16 pieces per
//!   binade of q, t = (qh − c) + `INV_E_LO` with qh = x + `INV_E_HI` exact.
//! - **Near zero** (|x| ≤ 1e−4, W₀ only): the Taylor series w = x + x²(−1 + 3x/2 − 8x²/3 +
//!   125x³/24), one final rounding; below |x| = 2⁻⁶⁰ the rounded result is x itself (±0 and
//!   subnormals included).
//! - **W₀, −0.3 ≤ x < 16384** (outside the Taylor range): tables in |x| (`W0_NEG`, `W0_POS`),
//!   4–64 pieces per binade, t = |x| − c exact.
//! - **W₀, x ≥ 16384**: L = ln x (below) and the table `W0_L` in L, one piece per run of binary
//!   exponents of x.
//! - **W₋₁, −0.3 ≤ x ≤ −2⁻¹⁰**: table in −x (`WM1_NEG`), 16–32 pieces per binade.
//! - **W₋₁, −2⁻¹⁰ < x < 0** (subnormals included): M = −ln(−x) and the table `WM1_M` in M, one
//!   piece per run of binary exponents of x.
//!
//! ln v is formed as head + tail (absolute error < 1e−18) by `ln_dd`: v = 2ᵉ·m (a subnormal v
//! normalised by an integer shift), a 128-entry table
//! at m_j = 1 + (j + ½)/128 (1/m_j and ln m_j as a double-double), t = (m − m_j)/m_j (m − m_j
//! exact, |t| ≤ 2⁻⁸) and ln(1 + t) to t⁷; head = e·ln2_hi + (ln m_j)_hi is exact. The L/M piece
//! depends only on e, so its row is loaded while the log is computed, and t = (head − c) + tail
//! (head − c exact).
//!
//! The q entry points ([`w0_from_branch_distance`], [`wm1_from_branch_distance`]) form
//! x = q − 1/e as a normalised double-double xh + xl (exact to ~1e−33: no cancellation however
//! close q is to 1/e). Within q < 0.0101 (|1 + w| ≲ 0.25) of the branch point the unknown is
//! u = 1 + w: h(u) = 1 − (1 − u)eᵘ = e·q exactly; with eᵘ = 1 + u + u²P(u) (P a degree-11
//! near-minimax polynomial for |u| ≤ 0.27) h(u) = u²(1 − (1 − u)P(u)) has no cancellation, so one
//! Halley step on h(u) − e·q (e·q with e as a double-double) from a start u₀ = ±p·C(p),
//! p = √(2eq), C a degree-6 polynomial (error < 1e−10), gives u to a relative ~1e−16 and
//! w = −1 + u is rounded once. Beyond: W₀ by its Taylor series (with xl) for |x| ≤ 1e−4, else a
//! start value from a piecewise polynomial (relative error < 1e−6; in x for −0.3 ≤ x < 8, in p
//! for x < −0.3, in a cheap L = ln x (x ≥ 8) or M = −ln(−x) (W₋₁, x ≥ −e^(−2)) otherwise) and
//! one Halley step on f(w) = w − x·e^(−w), whose residual is computed almost exactly:
//! e^(−w) = 2ᵏ·t_j·(1 + σ) with a 128-entry table t_j ≈ 2^(j/128) rounded to 26 significant bits
//! plus its relative remainder, |r| ≤ ln2/256 and eʳ − 1 from a degree-5 Taylor polynomial;
//! x·2ᵏ·t_j is an exact two-product (one Dekker split, no FMA needed) and xl enters as a small
//! correction, so the residual's error is ~0.01 ulp(w); the only rounding of size 0.5 ulp is the
//! final `w − δ`.
//!
//! The log entry points ([`w0_of_exp`], [`wm1_of_neg_exp`]) never round e^L to one double: they
//! form x = ±e^L as a double-double with the same 2^(j/128) table (`exp_dd`, relative error
//! < 1e−18) and read the direct tables above at it (q = 1/e − e^L from it for W₋₁ below
//! x = −0.3), or read the L / M tables at L itself where x would take a logarithm; W₀ for a
//! subnormal e^L is e^L rounded once. Near L = −1 (W₋₁, |1 + w| ≤ 0.25) the branch-point step
//! above takes q = −(1/e)·expm1(L + 1). Where e^L over- or underflows the tables (W₀ for
//! L > 709.78, W₋₁ for L < −667) one Newton step on the log form w + ln(±w) = L, whose residual
//! (w − L) + ln(±w) is exact up to the rounding of ln.
//!
//! f32 entry points evaluate the f64 path and round once (≤ 0.5 f32 ulp + a f64 ulp). With the
//! feature `micromath`, `micromath_f32` computes both branches in f32 throughout, for targets
//! with a single-precision FPU, with micromath's `exp`/`ln` in place of libm's (its own accuracy,
//! set by micromath's `ln`, is measured there).
//! `compact_f32` computes both branches in f32 throughout as well, from its own 3 KB of f32
//! tables (no micromath, none of the f64 tables), within 2 f32 ulp of mpmath (measured there).
//!
//! # Layout
//!
//! This file holds the entry points and their dispatch; `methods.rs` the evaluation code (table
//! evaluation, `ln_dd`, `exp_dd`, the branch-point polynomial and step, the Halley and Newton
//! steps and their start values); `tests.rs` the unit and property tests; `generated/` the tables, each file written whole by a tool named on its first line:
//! the direct tables (`Table`, `ExpTable`, the log table) by `control-core/tools/lambert_direct.py`,
//! the constants, start polynomials, Halley-step tables and branch-point polynomials by
//! `control-core/tools/lambert_fit.py`. `scripts/check-lambert-tables.sh` regenerates them all and
//! diffs. Accuracy is checked against mpmath by `control-core/tests/lambert_accuracy.rs`
//! (`tools/lambert_reference.py`, and `tools/lambert_dense.py` densely at every table boundary).

pub mod compact_f32;
mod generated;
mod methods;
#[cfg(feature = "micromath")]
pub mod micromath_f32;
#[cfg(test)]
mod tests;

pub use generated::{E_HI, E_LO, INV_E_HI, INV_E_LO};
use generated::{W0_L, WM1_M};
use methods::{
    W0_Q_D, W0_X_D, WM1_NEG_D, WM1_Q_D, branch, branch_series, exp_dd, halley_exp, ln_dd,
    minus_inv_e, newton_log_neg, w0_start, w0_taylor, w0_taylor_dd, wm1_general,
};

/// The branch point −1/e as the nearest f64. That double lies 1.24e−17 *below* the true −1/e, so
/// it is outside both domains: `w0(BRANCH_POINT)` and `wm1(BRANCH_POINT)` are `None`. Use
/// `w0_from_branch_distance(0.0)` (= −1) for the branch point itself.
pub const BRANCH_POINT: f64 = -INV_E_HI;

/// Below this distance to the branch point the q entry points use the u-form (see the module docs).
const Q_BRANCH: f64 = 0.0101;
/// [`w0`] and [`wm1`] use the q tables (`W0_Q`, `WM1_Q`) for x < −0.3 and q = x + 1/e at or
/// above this (2⁻¹⁴), the branch-point polynomial in p = ±√(2e·q) below it.
const Q_TABLE: f64 = 0.000_061_035_156_25;
/// [`w0_of_exp`] reads W₀ off the table in L ([`W0_L`]) from this L = 14·ln2 (x = 2¹⁴) on.
const L_W0_TABLE: f64 = 9.704_060_527_839_234;
/// 1024·ln2, rounded down: e^L overflows f64 above it; [`W0_L`] reaches it.
const L_OVERFLOW: f64 = 709.782_712_893_384;
/// [`w0_of_exp`] forms e^L as a normal double-double from this L on.
const L_NORMAL: f64 = -708.0;
/// Below this L, e^L < 2⁻¹⁰⁷⁶ and W₀(e^L) rounds to zero.
const L_UNDERFLOW: f64 = -746.0;
/// log₂ e.
const LOG2_E: f64 = core::f64::consts::LOG2_E;
/// 2¹²⁸ and 2⁻¹²⁸.
const TWO_128: f64 = 340_282_366_920_938_463_463_374_607_431_768_211_456.0;
const TWO_M128: f64 = 1.0 / TWO_128;
/// Below this |x| the Taylor series of W₀ at 0 is used.
const X_TAYLOR: f64 = 1e-4;
/// From this x on, W₀ is evaluated from L = ln x ([`W0_L`]); below it from x ([`W0_POS`]).
const X_LOG: f64 = 16384.0;
/// Below this −x, W₋₁ is evaluated from M = −ln(−x) ([`WM1_M`]); above it from −x ([`WM1_NEG`]).
const WM1_X_MIN: f64 = 0.000_976_562_5;
/// Beyond this M = −ln(−x) (x > −1e−290) W₋₁ uses the log form (e^M would overflow the scaling).
const M_LOG_FORM: f64 = 667.0;

/// W₀(x), the principal branch: the w ≥ −1 with w·eʷ = x.
///
/// `None` for NaN and for x < −1/e. Note that the f64 nearest −1/e ([`BRANCH_POINT`]) is below
/// −1/e, so it yields `None`; the smallest valid input is the next double up. W₀(+∞) = +∞,
/// W₀(±0) = ±0, and subnormal x give x exactly (W₀(x) = x − x² + …).
#[inline]
pub fn w0(x: f64) -> Option<f64> {
    // Small |x| inline in the caller (a few instructions), the rest out of line.
    if x.abs() <= X_TAYLOR {
        return Some(w0_taylor(x));
    }
    w0_beyond_taylor(x)
}

/// [`w0`] for |x| > 1e−4 and NaN.
#[inline(never)]
fn w0_beyond_taylor(x: f64) -> Option<f64> {
    // The tests are ordered for the fewest branches on the common paths; NaN fails every
    // comparison and is caught on the last path.
    if x < -0.3 {
        // q = x + 1/e without cancellation: x + INV_E_HI is exact (Sterbenz). x < −1/e (and
        // BRANCH_POINT, which is below −1/e) gives q < 0.
        let q = (x + INV_E_HI) + INV_E_LO;
        if q < Q_TABLE {
            let w = branch_series(q, 1.0);
            return (q >= 0.0).then_some(w);
        }
        // q = qh + INV_E_LO with qh = x + INV_E_HI exact (Sterbenz).
        return Some(W0_Q_D.eval(x + INV_E_HI, Some(INV_E_LO)));
    }
    if x < X_LOG {
        // W0_POS for x > 0, W0_NEG for x < 0, chosen by the sign bit without a branch.
        return Some(W0_X_D.eval(x, None));
    }
    if x.is_nan() || x == f64::INFINITY {
        return (x == f64::INFINITY).then_some(x); // +∞, or NaN
    }
    let (e, head, tail) = ln_dd(x);
    Some(W0_L.eval(e, head, Some(tail)))
}

/// W₋₁(x), the lower branch: the w ≤ −1 with w·eʷ = x.
///
/// `None` for NaN, for x < −1/e (including [`BRANCH_POINT`], which is below −1/e), for x = +0.0
/// and for x > 0. `wm1(-0.0)` is `Some(f64::NEG_INFINITY)`, the limit as x → 0⁻. Subnormal x
/// (down to −5e−324, w ≈ −745) are handled through the log form.
#[inline]
pub fn wm1(x: f64) -> Option<f64> {
    // The tests are ordered for the fewest branches on the common paths; NaN fails every
    // comparison and is caught on the last path.
    if x < -0.3 {
        // As in `w0`: q < 0 for x below −1/e (and for BRANCH_POINT).
        let q = (x + INV_E_HI) + INV_E_LO;
        if q < Q_TABLE {
            let w = branch_series(q, -1.0);
            return (q >= 0.0).then_some(w);
        }
        return Some(WM1_Q_D.eval(x + INV_E_HI, Some(INV_E_LO)));
    }
    if x <= -WM1_X_MIN {
        return Some(WM1_NEG_D.eval(-x, None));
    }
    if x.is_nan() || x >= 0.0 {
        // −0 gives −∞ (the limit as x → 0⁻); +0, x > 0 and NaN are outside the domain.
        return (x == 0.0 && x.is_sign_negative()).then_some(f64::NEG_INFINITY);
    }
    // M = −ln(−x) > 6.9 as −(head + tail).
    let (e, head, tail) = ln_dd(-x);
    Some(WM1_M.eval(-e, -head, Some(-tail)))
}

/// W₀ at x = q − 1/e, for a caller who knows the distance q ≥ 0 to the branch point more accurately
/// than x itself (x + 1/e cancels near the branch point; q does not).
///
/// `None` for NaN and q < 0; `w0_from_branch_distance(0.0)` = −1; +∞ gives +∞. Accuracy is the
/// same 2-ulp bound as [`w0`], relative to the exact W₀(q − 1/e) for the given q.
#[inline]
pub fn w0_from_branch_distance(q: f64) -> Option<f64> {
    if q.is_nan() || q < 0.0 {
        return None;
    }
    if q < Q_BRANCH {
        return Some(branch(q, 1.0));
    }
    if q == f64::INFINITY {
        return Some(f64::INFINITY);
    }
    // x = q − 1/e as xh + xl exactly enough: rounding x to one double would cost up to
    // ~|w|/(2|1 + w|) ulp, which is several ulp just outside the branch region.
    let (xh, xl) = minus_inv_e(q);
    if xh.abs() <= X_TAYLOR {
        return Some(w0_taylor_dd(xh, xl));
    }
    Some(halley_exp(w0_start(xh), xh, xl))
}

/// W₋₁ at x = q − 1/e, for 0 ≤ q ≤ 1/e (q is the distance to the branch point).
///
/// `None` for NaN, q < 0 and q above 1/e. q = [`INV_E_HI`] (the f64 nearest 1/e, which is
/// 1.24e−17 above 1/e) is taken as x = 0⁻ and gives −∞. Accuracy is the same 2-ulp bound as
/// [`wm1`], relative to the exact W₋₁(q − 1/e) for the given q, up to q = 1/e (x = q − 1/e is
/// formed as a double-double, without cancellation). Near q = 1/e, though, q itself is a poor
/// description of a small x (its ulp is 5.6e−17, so x cannot be closer to 0 than that): a caller
/// who has x, or ln(−x), should pass it to [`wm1`] or [`wm1_of_neg_exp`].
#[inline]
pub fn wm1_from_branch_distance(q: f64) -> Option<f64> {
    if q.is_nan() || q < 0.0 {
        return None;
    }
    if q < Q_BRANCH {
        return Some(branch(q, -1.0));
    }
    if q >= INV_E_HI {
        return if q == INV_E_HI {
            Some(f64::NEG_INFINITY)
        } else {
            None
        };
    }
    // x = xh + xl ≤ −4.3e−17 (q ≤ the double below INV_E_HI): W₋₁ ≥ −41.
    let (xh, xl) = minus_inv_e(q);
    if xh >= 0.0 {
        return Some(f64::NEG_INFINITY);
    }
    Some(wm1_general(xh, xl))
}

/// W₀(e^L) for any L (−∞ gives 0, +∞ gives +∞, NaN gives `None`): the principal branch for
/// arguments beyond the f64 range, given their natural log. Same 2-ulp bound as [`w0`], relative
/// to the exact W₀(e^L) for the given L (e^L is never rounded to one double on the way).
#[inline]
pub fn w0_of_exp(ln_x: f64) -> Option<f64> {
    let l = ln_x;
    if l.is_nan() {
        return None;
    }
    if l >= L_W0_TABLE {
        if l < L_OVERFLOW {
            // x = e^L = 2ⁿ·m with n = ⌊L/ln2⌋ in [14, 1023] (the pieces overlap by 1e−9 in L,
            // so the rounding of L·log₂e does not matter), and L itself is exact.
            #[allow(clippy::cast_possible_truncation)]
            let n = (l * LOG2_E) as i64; // truncation = floor for L > 0; `as` saturates
            return Some(W0_L.eval(n, l, None));
        }
        if l == f64::INFINITY {
            return Some(f64::INFINITY);
        }
        // w = L − ln w, iterated twice from w = L (error ~ (ln L)²/L² < 1e−4 for L > 709).
        let w = l - libm::log(l - libm::log(l));
        // Newton on g(w) = w + ln w − L; (w − L) is exact by Sterbenz.
        let g = (w - l) + libm::log(w);
        return Some(w - g * (w / (1.0 + w)));
    }
    if l >= L_NORMAL {
        let (xh, xl) = exp_dd(l, 0);
        if xh <= X_TAYLOR {
            return Some(w0_taylor_dd(xh, xl));
        }
        return Some(W0_X_D.eval(xh, Some(xl))); // 1e−4 < x ≤ 16384
    }
    if l < L_UNDERFLOW {
        return Some(0.0); // e^L < 2⁻¹⁰⁷⁶ (and −∞): W₀ rounds to +0
    }
    // e^L subnormal: W₀(x) = x·(1 − x + …) is x to 1e−307 relative, so the result is x rounded
    // once to the subnormal grid: y = e^L·2¹²⁸ = yh + yl, r = yh·2⁻¹²⁸ rounded, yh − r·2¹²⁸ exact
    // (Sterbenz), and the remainder, with yl, moves r by at most one step.
    let (yh, yl) = exp_dd(l, 128);
    let r = yh * TWO_M128;
    Some(r + ((yh - r * TWO_128) + yl) * TWO_M128)
}

/// W₋₁(−e^L) for L ≤ −1: the lower branch for arguments below the f64 range (or just given by their
/// log). `None` for NaN and L > −1; L = −1 gives −1, L = −∞ gives −∞. Same 2-ulp bound as
/// [`wm1`], relative to the exact W₋₁(−e^L) for the given L.
///
/// Near L = −1 (within 0.0278, |1 + w| ≤ 0.25) the distance to the branch point is formed as
/// q = −(1/e)·expm1(L + 1) (L + 1 is exact), whose relative error moves w by only |1 + w|/2 times
/// it; beyond, x = −e^L is formed as a double-double and the direct tables take it (q = x + 1/e
/// from it below x = −0.3; M = −L, exact, for −x < 2⁻¹⁰); for L < −667 one Newton step on
/// w + ln(−w) = L.
#[inline]
pub fn wm1_of_neg_exp(ln_neg_x: f64) -> Option<f64> {
    let l = ln_neg_x;
    if l.is_nan() || l > -1.0 {
        return None;
    }
    if l >= -1.03 {
        let d = libm::expm1(l + 1.0); // in [−0.0296, 0]
        let q = -(INV_E_HI * d + INV_E_LO * d);
        if q < Q_BRANCH {
            return Some(branch(q.max(0.0), -1.0));
        }
    }
    if l >= -M_LOG_FORM {
        // −x = e^L = xh + xl, in [e^−667, 0.3576].
        let (xh, xl) = exp_dd(l, 0);
        if xh > 0.3 {
            // q = 1/e − (xh + xl) ≥ 0.0101: INV_E_HI − xh is exact (Sterbenz).
            return Some(WM1_Q_D.eval(INV_E_HI - xh, Some(INV_E_LO - xl)));
        }
        if xh >= WM1_X_MIN {
            return Some(WM1_NEG_D.eval(xh, Some(xl)));
        }
        // M = −L exactly; the piece from the binary exponent of −x, −x = 2⁻ⁿ·m.
        let n = 1023 - i64::from(u16::try_from(xh.to_bits() >> 52).unwrap_or(0));
        return Some(WM1_M.eval(n, -l, None));
    }
    if l == f64::NEG_INFINITY {
        return Some(f64::NEG_INFINITY);
    }
    // −w = M + ln(−w), iterated twice from −w = M (error ~ (ln M)²/M² < 1e−4 for M > 667).
    let m = -l;
    let w = -(m + libm::log(m + libm::log(m)));
    Some(newton_log_neg(w, m))
}

/// W₀ in f32: the f64 path rounded once. Same contract as [`w0`].
#[inline]
pub fn w0_f32(x: f32) -> Option<f32> {
    w0(f64::from(x)).map(to_f32)
}

/// W₋₁ in f32: the f64 path rounded once. Same contract as [`wm1`] (−0.0 gives −∞).
#[inline]
pub fn wm1_f32(x: f32) -> Option<f32> {
    wm1(f64::from(x)).map(to_f32)
}

/// Rounds to the nearest f32 (results of W for f32 inputs are always within f32 range).
#[inline(always)]
#[allow(clippy::cast_possible_truncation)]
fn to_f32(w: f64) -> f32 {
    // f64 → f32 `as` rounds to nearest; it cannot saturate here because |W| < 100 for f32 inputs
    // (±∞ maps to ±∞ exactly).
    w as f32
}
