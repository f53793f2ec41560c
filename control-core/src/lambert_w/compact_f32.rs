//! A compact Lambert W in f32 for microcontrollers with a single-precision FPU: both real
//! branches, within 4 f32 ulp everywhere (measured: ≤ 2 ulp, see below), with a few kilobytes
//! of tables and no iteration on the plain entry points.
//!
//! Every operation is an f32 one (no f64, which a Cortex-M4F emulates in software at ~10× the
//! cost), and the module uses nothing of the f64 path of [`super`] (no f64 tables, no f64
//! function) nor micromath: a firmware that calls only this module links only its own 3 KB of
//! tables. The one external function is libm's `sqrtf` (correctly rounded; a single `vsqrt.f32`
//! on an FPU). It never allocates, blocks or panics: table indices are clamped to the table, loops
//! have fixed trip counts, and every input (NaN, ±∞, ±0, subnormals, values outside the domain)
//! gives `Some(value)` or `None`; a returned value is never NaN.
//!
//! The entry points are drop-in equivalents of those of `micromath_f32` (feature `micromath`:
//! same signatures, same domains and `None` conventions), including the elementary functions
//! [`ln`], [`exp`] and [`expm1`] and the q / log entry points used by `gains_f32`, so a caller
//! switches by changing one `use` line.
//!
//! # Method
//!
//! W is evaluated directly, without an iteration or a division, as W = w + P(t) on one piece of
//! a table: t = v − c a local variable formed exactly (Sterbenz), c the piece centre, w = W(c)
//! rounded to f32, P a degree-7 polynomial (near-minimax, f32 coefficients) whose constant term
//! carries W(c) − w. |P(t)| stays below ~|W|/4, so the f32 evaluation adds about a quarter ulp to
//! the final rounding. The piece is chosen from the bits of the argument (binade and top fraction
//! bit, or the binary exponent through a byte map), not by a chain of comparisons. With
//! q = x + 1/e formed as `(x + INV_E_HI) + INV_E_LO` (the first sum exact by Sterbenz):
//!
//! - **Near zero** (|x| < 2⁻⁵, W₀): w = x + x²·P(x), P of degree 5; subnormal x give x.
//! - **Near the branch point** (W₀ for x < −0.3125, W₋₁ for x ≤ −0.25): w = −1 ± r·S(r),
//!   r = √q (+ for W₀, degree 9; − for W₋₁, degree 11). W is analytic in r; r carries only the
//!   rounding of q and of the square root.
//! - **W₀, −0.3125 ≤ x ≤ −0.25**: one degree-9 piece in −x (the singularity at −1/e is close).
//! - **W₀, 2⁻⁵ ≤ |x| < 0.25 (x < 0) or < 8 (x > 0)**, **W₋₁, 2⁻⁸ ≤ −x < 0.25**: tables in |x|,
//!   two pieces per binade (16, 6 and 12 pieces).
//! - **W₀, x ≥ 8** and **W₋₁, −x < 2⁻⁸** (subnormals included): L = ln|x| as a head + tail
//!   (absolute error < 2⁻²⁸, see below) and tables in L, one piece per run of binary exponents of
//!   x (9 and 11 pieces), t = (head − c) + tail.
//!
//! ln v (v > 0) is v = 2ᵉ·m, m ∈ [1, 2) (subnormals scaled by 2²⁴ first), c_j = 1 + (j + ½)/32
//! from the top five fraction bits, r = (m − c_j)·(1/c_j) (m − c_j exact, |r| ≤ 2⁻⁶), ln(1 + r) to
//! r⁴, and ln v = e·ln2 + ln c_j + ln(1 + r) with ln 2 and ln c_j as f32 pairs and the head
//! e·ln2_hi + (ln c_j)_hi split exactly (Fast2Sum). [`ln`] rounds head + tail (and takes
//! 1 ± 2⁻⁴ by its series, where head + tail would cancel).
//!
//! The branch-distance entry points use the branch polynomials at √q directly and otherwise form
//! x = (q − INV_E_HI) − INV_E_LO; the log entry points use the L tables at L itself, the branch
//! polynomials at q = −(1/e)·expm1(L + 1) near L = −1, x = ±e^L in between, and two Newton steps
//! on the log form w + ln|w| = L beyond the f32 range of x.
//!
//! # Accuracy
//!
//! Against the mpmath reference (`tests/data/lambert_reference.bin` and `lambert_dense.bin`, the
//! f32 records), `cargo test --release -p control-core --features micromath --test
//! lambert_accuracy compact_f32 -- --nocapture` prints per branch and region (max, mean, worst x):
//!
//! | branch | region                       | points | mean ulp | max ulp | worst x      |
//! |--------|------------------------------|--------|----------|---------|--------------|
//! | W₀     | Taylor, \|x\| < 2⁻⁵           | 64139  | 0.058    | 0.534   | −2.7766e−2   |
//! | W₀     | branch series, x < −0.3125   | 15847  | 0.253    | 1.522   | −3.2663e−1   |
//! | W₀     | piece −0.3125 ≤ x ≤ −0.25    | 765    | 0.251    | 0.612   | −2.5086e−1   |
//! | W₀     | x tables                     | 8864   | 0.254    | 0.824   | 3.1250e−2    |
//! | W₀     | L table, x ≥ 8               | 29802  | 0.257    | 0.930   | 2.2750e1     |
//! | W₋₁    | branch series, x ≤ −0.25     | 18572  | 0.274    | 1.615   | −2.9793e−1   |
//! | W₋₁    | x table                      | 9043   | 0.252    | 0.621   | −1.8413e−1   |
//! | W₋₁    | L table, −x < 2⁻⁸            | 62231  | 0.254    | 0.779   | −2.7466e−3   |
//!
//! (the test asserts ≤ 4 ulp in every region). The branch series is the largest: r = √q carries
//! ~0.75 ulp of rounding (q and the root), S's leading coefficient √(2e) one f32 rounding, and
//! r·S one more before −1 is added. The other entry points: [`ln`] and [`exp`] within 1 ulp
//! (unit test), the q and log entry points agree with [`w0`] / [`wm1`] at the same x to a few
//! ulp (they add the rounding of x = q − 1/e or x = ±e^L where they form it).
//!
//! # Size (thumbv7em-none-eabihf, release)
//!
//! The tables are 2970 bytes of `.rodata` (`static`, one copy each); the code of all eleven
//! public functions 4.4 KB of `.text` (`w0` 932 bytes, `wm1` 696), plus libm's `sqrtf`. A
//! firmware calling only `w0` and `wm1` links about 4.6 KB of this module.
//!
//! Tables: `compact_f32/tables.rs`, written by `control-core/tools/lambert_compact_f32.py`
//! (mpmath), which prints each table's approximation error.

mod tables;

use tables::{
    LN_TABLE, W0_BRANCH, W0_L, W0_L_MAP, W0_NEAR, W0_NEG, W0_POS, W0_TAYLOR, WM1_BRANCH, WM1_L,
    WM1_L_MAP, WM1_X,
};

/// 1/e rounded to f32.
pub const INV_E: f32 = INV_E_HI;
/// 1/e rounded to f32 (the head of the pair below).
const INV_E_HI: f32 = 0.367_879_45;
/// 1/e − [`INV_E_HI`], rounded to f32.
const INV_E_LO: f32 = -9.149_756e-9;
/// ln 2 to 16 bits (e·LN2_HI is exact for |e| < 2⁸).
const LN2_HI: f32 = 0.693_145_75;
/// ln 2 − [`LN2_HI`].
const LN2_LO: f32 = 1.428_606_8e-6;
/// log₂ e.
const LOG2_E: f32 = core::f32::consts::LOG2_E;
/// 2²⁴ (scales subnormals to normal numbers exactly).
const TWO_24: f32 = 16_777_216.0;
/// Below this |x| W₀ is its series at 0.
pub const X_TAYLOR: f32 = 0.031_25;
/// W₀ uses the branch polynomial below this x (−0.3125).
pub const X_BRANCH_W0: f32 = -0.3125;
/// W₋₁ uses the branch polynomial at and below this x (−0.25).
pub const X_BRANCH_WM1: f32 = -0.25;
/// W₀ uses the table in L = ln x from this x on.
pub const X_LOG_W0: f32 = 8.0;
/// W₋₁ uses the table in L = ln(−x) below this −x (2⁻⁸).
pub const X_LOG_WM1: f32 = 0.003_906_25;
/// q = x + 1/e at x = [`X_BRANCH_W0`]: the q entry point of W₀ uses the branch polynomial below.
const Q_BRANCH_W0: f32 = 0.055_379_4;
/// q = x + 1/e at x = [`X_BRANCH_WM1`].
const Q_BRANCH_WM1: f32 = 0.117_879_45;
/// ln 8 and ln 2¹²⁸: the range of L of the table [`W0_L`].
const L_W0_MIN: f32 = 2.079_441_5;
const L_W0_MAX: f32 = 88.722_84;
/// ln 2⁻¹⁴⁹ and ln 2⁻⁸: the range of L of the table [`WM1_L`].
const L_WM1_MIN: f32 = -103.278_93;
const L_WM1_MAX: f32 = -5.545_177;

/// One piece of a table: W = w + P(v − c), P's coefficients lowest degree first.
pub(super) struct Piece<const N: usize> {
    /// The centre of the piece (the variable is t = v − c).
    c: f32,
    /// W(c) rounded to f32.
    w: f32,
    /// The coefficients of P (P(0) = W(c) − w).
    a: [f32; N],
}

impl<const N: usize> Piece<N> {
    /// w + P(t), P by Horner.
    #[inline(always)]
    fn eval(&self, t: f32) -> f32 {
        self.w + horner(&self.a, t)
    }
}

/// Σ aᵢtⁱ by Horner (fixed trip count).
#[inline(always)]
fn horner<const N: usize>(a: &[f32; N], t: f32) -> f32 {
    let mut s = 0.0;
    for &c in a.iter().rev() {
        s = s * t + c;
    }
    s
}

/// `table[i]` with i clamped to the table (never out of range; the callers' indices are in range
/// by construction, the clamp only removes the panic path).
#[inline(always)]
fn at<T, const K: usize>(table: &[T; K], i: usize) -> &T {
    &table[i.min(K - 1)]
}

/// The piece index from the binade and top fraction bit of a positive normal v, counted from
/// the binade with biased exponent `first`.
#[inline(always)]
fn half_binade(v: f32, first: u32) -> usize {
    ((v.to_bits() >> 22).saturating_sub(first << 1)) as usize
}

/// ln v for finite v > 0 as (e, head, tail): v = 2ᵉ·m, m ∈ [1, 2), ln v = head + tail with an
/// absolute error below 2⁻²⁸ (|tail| ≤ ulp(head)); `head` alone is e·ln2 + ln c_j rounded.
#[inline]
fn ln_parts(v: f32) -> (i32, f32, f32) {
    let (bits, shift) = if v < f32::MIN_POSITIVE {
        ((v * TWO_24).to_bits(), 24)
    } else {
        (v.to_bits(), 0)
    };
    // Biased exponent in [1, 254] for finite v > 0 (after scaling): no overflow.
    let e = ((bits >> 23) & 0xff) as i32 - 127 - shift;
    let m = f32::from_bits((bits & 0x007f_ffff) | 0x3f80_0000);
    let c = f32::from_bits((bits & 0x007c_0000) | 0x3f82_0000);
    let &(inv_c, ln_c_hi, ln_c_lo) = at(&LN_TABLE, ((bits >> 18) & 31) as usize);
    let r = (m - c) * inv_c;
    let ln1p = r + (r * r) * (-0.5 + r * (0.333_333_34 - 0.25 * r));
    #[allow(clippy::cast_precision_loss)] // |e| ≤ 151: exact
    let ef = e as f32;
    let a = ef * LN2_HI;
    let head = a + ln_c_hi;
    // Fast2Sum: |a| ≥ ln 2 > |ln c_j| unless a = 0.
    let tail = (ln_c_hi - (head - a)) + ((ef * LN2_LO + ln_c_lo) + ln1p);
    (e, head, tail)
}

/// ln v for v > 0 (finite or +∞); `None` for NaN, v ≤ 0 (−0 included). Within 1 ulp: head +
/// tail rounded, and the series ln(1 + d) (d = v − 1 exact) for |v − 1| < 2⁻⁴.
pub fn ln(v: f32) -> Option<f32> {
    if v.is_nan() || v <= 0.0 {
        return None;
    }
    if v == f32::INFINITY {
        return Some(v);
    }
    let d = v - 1.0;
    if d.abs() < 0.0625 {
        // ln(1 + d) = d − d²/2 + … to d⁸ (truncation < 2⁻³⁵|d|).
        let p = -0.125;
        let p = p * d + 0.142_857_15;
        let p = p * d - 0.166_666_67;
        let p = p * d + 0.2;
        let p = p * d - 0.25;
        let p = p * d + 0.333_333_34;
        let p = p * d - 0.5;
        return Some(d + (d * d) * p);
    }
    let (_, head, tail) = ln_parts(v);
    Some(head + tail)
}

/// eᵛ within 1 ulp (normal results): v = k·ln2 + r, |r| ≤ ln2/2, eʳ to r⁷, scaled by 2ᵏ in two
/// steps. NaN gives NaN, +∞ and v > 88.72 give +∞, −∞ and v < −103.98 give 0.
#[inline(never)] // one copy, shared by the entry points that call it
pub fn exp(v: f32) -> f32 {
    if v.is_nan() {
        return v;
    }
    if v > 88.722_84 {
        return f32::INFINITY;
    }
    if v < -103.98 {
        return 0.0;
    }
    // k = round(v·log₂e), |k| ≤ 150.
    #[allow(clippy::cast_possible_truncation)]
    let k = (v * LOG2_E + if v < 0.0 { -0.5 } else { 0.5 }) as i32;
    #[allow(clippy::cast_precision_loss)]
    let kf = k as f32;
    let r = (v - kf * LN2_HI) - kf * LN2_LO;
    let p = 1.0 / 5040.0;
    let p = p * r + 1.0 / 720.0;
    let p = p * r + 1.0 / 120.0;
    let p = p * r + 1.0 / 24.0;
    let p = p * r + 1.0 / 6.0;
    let p = p * r + 0.5;
    let p = 1.0 + (r + (r * r) * p);
    // 2ᵏ = 2^k1·2^k2 with both factors normal (k in [−150, 128]).
    let k1 = k / 2;
    let k2 = k - k1;
    p * pow2(k1) * pow2(k2)
}

/// 2ⁿ for −126 ≤ n ≤ 127 (clamped to that range).
#[inline(always)]
fn pow2(n: i32) -> f32 {
    f32::from_bits(((n.clamp(-126, 127) + 127) as u32) << 23)
}

/// eᵛ − 1: the Taylor series to v⁸ for |v| ≤ 0.25 (truncation < 2⁻²⁷ relative), [`exp`] minus
/// one beyond (no cancellation worse than a factor 4.5 there).
#[inline(never)] // one copy, shared by the entry points that call it
pub fn expm1(v: f32) -> f32 {
    if v.abs() <= 0.25 {
        let p = 1.0 / 40320.0;
        let p = p * v + 1.0 / 5040.0;
        let p = p * v + 1.0 / 720.0;
        let p = p * v + 1.0 / 120.0;
        let p = p * v + 1.0 / 24.0;
        let p = p * v + 1.0 / 6.0;
        let p = p * v + 0.5;
        return v + (v * v) * p;
    }
    exp(v) - 1.0
}

/// √v (v ≥ 0): libm's `sqrtf`, correctly rounded.
#[inline(always)]
fn sqrt(v: f32) -> f32 {
    libm::sqrtf(v)
}

/// W₀ near the branch point from r = √q.
#[inline(always)]
fn w0_branch(r: f32) -> f32 {
    -1.0 + r * horner(&W0_BRANCH, r)
}

/// W₋₁ near the branch point from r = √q.
#[inline(always)]
fn wm1_branch(r: f32) -> f32 {
    -1.0 - r * horner(&WM1_BRANCH, r)
}

/// W₀(x) = x + x²·P(x) for |x| < [`X_TAYLOR`].
#[inline(always)]
fn w0_taylor(x: f32) -> f32 {
    x + (x * x) * horner(&W0_TAYLOR, x)
}

/// W₀(e^L) from the L table, for L in [ln 8, ln 2¹²⁸] as head + tail; `e` = ⌊L/ln2⌋.
#[inline(always)]
fn w0_l_table(e: i32, head: f32, tail: f32) -> f32 {
    let i = usize::try_from(e - 3).unwrap_or(0);
    let p = at(&W0_L, usize::from(*at(&W0_L_MAP, i)));
    p.eval((head - p.c) + tail)
}

/// W₋₁(−e^L) from the L table, for L in [ln 2⁻¹⁴⁹, ln 2⁻⁸] as head + tail; `e` = ⌊L/ln2⌋.
#[inline(always)]
fn wm1_l_table(e: i32, head: f32, tail: f32) -> f32 {
    let i = usize::try_from(-9 - e).unwrap_or(0);
    let p = at(&WM1_L, usize::from(*at(&WM1_L_MAP, i)));
    p.eval((head - p.c) + tail)
}

/// W₀(x) in f32: the w ≥ −1 with w·eʷ = x. `None` for NaN and x < −1/e (the f32 nearest −1/e,
/// −[`INV_E`], lies below −1/e and gives `None`); W₀(+∞) = +∞, W₀(±0) = ±0, subnormal x give x.
#[inline(never)] // one copy, shared by the entry points that call it
pub fn w0(x: f32) -> Option<f32> {
    if x.abs() < X_TAYLOR {
        return Some(w0_taylor(x));
    }
    if x > 0.0 {
        if x < X_LOG_W0 {
            // Biased exponent 122 is 2⁻⁵.
            let p = at(&W0_POS, half_binade(x, 122));
            return Some(p.eval(x - p.c));
        }
        if x == f32::INFINITY {
            return Some(x);
        }
        let (e, head, tail) = ln_parts(x);
        return Some(w0_l_table(e, head, tail));
    }
    if x > X_BRANCH_WM1 {
        let v = -x;
        let p = at(&W0_NEG, half_binade(v, 122));
        return Some(p.eval(v - p.c));
    }
    if x >= X_BRANCH_W0 {
        return Some(W0_NEAR.eval(-x - W0_NEAR.c));
    }
    // x < −0.3125, −∞, or NaN (q NaN fails `q >= 0`).
    let q = (x + INV_E_HI) + INV_E_LO;
    if q >= 0.0 {
        Some(w0_branch(sqrt(q)))
    } else {
        None
    }
}

/// W₋₁(x) in f32: the w ≤ −1 with w·eʷ = x. `None` for NaN, x < −1/e (−[`INV_E`] included),
/// x = +0 and x > 0; W₋₁(−0) = −∞, and subnormal x (down to −2⁻¹⁴⁹, w ≈ −108) are in the domain.
#[inline(never)] // one copy, shared by the entry points that call it
pub fn wm1(x: f32) -> Option<f32> {
    if x.is_nan() || x >= 0.0 {
        return (x == 0.0 && x.is_sign_negative()).then_some(f32::NEG_INFINITY);
    }
    if x <= X_BRANCH_WM1 {
        let q = (x + INV_E_HI) + INV_E_LO;
        return if q >= 0.0 {
            Some(wm1_branch(sqrt(q)))
        } else {
            None
        };
    }
    let v = -x;
    if v >= X_LOG_WM1 {
        // Biased exponent 119 is 2⁻⁸.
        let p = at(&WM1_X, half_binade(v, 119));
        return Some(p.eval(v - p.c));
    }
    let (e, head, tail) = ln_parts(v);
    Some(wm1_l_table(e, head, tail))
}

/// W₀ at x = q − 1/e for the distance q ≥ 0 to the branch point (`None` for NaN and q < 0;
/// +∞ gives +∞). Below q = 0.0554 (x = −0.3125) the branch polynomial at √q, so q carries no
/// rounding of x; beyond, W₀ at x = (q − INV_E_HI) − INV_E_LO.
pub fn w0_from_branch_distance(q: f32) -> Option<f32> {
    if q.is_nan() || q < 0.0 {
        return None;
    }
    if q < Q_BRANCH_W0 {
        return Some(w0_branch(sqrt(q)));
    }
    // x ≥ −0.3126 > −1/e: in the domain.
    w0((q - INV_E_HI) - INV_E_LO)
}

/// W₋₁ at x = q − 1/e for 0 ≤ q ≤ 1/e (`None` for NaN, q < 0 and q > 1/e; x = 0 gives −∞).
pub fn wm1_from_branch_distance(q: f32) -> Option<f32> {
    if q.is_nan() || q < 0.0 {
        return None;
    }
    if q <= Q_BRANCH_WM1 {
        return Some(wm1_branch(sqrt(q)));
    }
    let x = (q - INV_E_HI) - INV_E_LO;
    if x > 0.0 {
        return None;
    }
    if x == 0.0 {
        return Some(f32::NEG_INFINITY);
    }
    wm1(x)
}

/// W₀(e^L) for any L (NaN gives `None`, −∞ gives 0, +∞ gives +∞): x = e^L is never formed where
/// it would overflow. From L = ln 8 to ln 2¹²⁸ the L table at L itself; above, two Newton steps
/// on w + ln w = L; below, W₀ at x = [`exp`]`(L)`.
pub fn w0_of_exp(ln_x: f32) -> Option<f32> {
    let l = ln_x;
    if l.is_nan() {
        return None;
    }
    if l < L_W0_MIN {
        return w0(exp(l));
    }
    if l < L_W0_MAX {
        #[allow(clippy::cast_possible_truncation)] // in [3, 127]
        let e = (l * LOG2_E) as i32;
        return Some(w0_l_table(e, l, 0.0));
    }
    if l == f32::INFINITY {
        return Some(l);
    }
    // L > 88.7: w = L − ln(L − ln L) (error < 1e−3), then Newton on g(w) = w + ln w − L;
    // w − L is exact (L/2 ≤ w ≤ L).
    let mut w = l - ln_pos(l - ln_pos(l));
    for _ in 0..2 {
        let g = (w - l) + ln_pos(w);
        w -= g * (w / (1.0 + w));
    }
    Some(w)
}

/// W₀(−e^L) for L ≤ −1 (NaN and L > −1 give `None`; −∞ gives −0): near L = −1 the branch
/// polynomial at q = −(1/e)·expm1(L + 1) (no cancellation), else W₀ at x = −[`exp`]`(L)`.
pub fn w0_of_neg_exp(ln_neg_x: f32) -> Option<f32> {
    let l = ln_neg_x;
    if l.is_nan() || l > -1.0 {
        return None;
    }
    let q = -(INV_E_HI * expm1(l + 1.0));
    if q < Q_BRANCH_W0 {
        return Some(w0_branch(sqrt(q.max(0.0))));
    }
    // −e^L ≥ −0.3126 > −1/e: in the domain.
    w0(-exp(l))
}

/// W₋₁(−e^L) for L ≤ −1 (NaN and L > −1 give `None`; −∞ gives −∞): near L = −1 the branch
/// polynomial at q = −(1/e)·expm1(L + 1), from L = ln 2⁻⁸ down to ln 2⁻¹⁴⁹ the L table at L
/// itself, below that two Newton steps on w + ln(−w) = L, in between W₋₁ at x = −[`exp`]`(L)`.
pub fn wm1_of_neg_exp(ln_neg_x: f32) -> Option<f32> {
    let l = ln_neg_x;
    if l.is_nan() || l > -1.0 {
        return None;
    }
    if l > L_WM1_MAX {
        let q = -(INV_E_HI * expm1(l + 1.0));
        if q <= Q_BRANCH_WM1 {
            return Some(wm1_branch(sqrt(q.max(0.0))));
        }
        // −e^L in (−0.25, −2⁻⁸]: the x table.
        return wm1(-exp(l));
    }
    if l >= L_WM1_MIN {
        // ⌊L/ln2⌋ in [−149, −9] (truncation towards zero, minus one).
        #[allow(clippy::cast_possible_truncation)]
        let e = (l * LOG2_E) as i32 - 1;
        return Some(wm1_l_table(e, l, 0.0));
    }
    if l == f32::NEG_INFINITY {
        return Some(l);
    }
    // L < −103.3: −w = M + ln(−w) with M = −L; start −w = M + ln(M + ln M), then Newton on
    // g(w) = w + ln(−w) − L; w − L is exact (2L ≤ w ≤ L).
    let m = -l;
    let mut w = -(m + ln_pos(m + ln_pos(m)));
    for _ in 0..2 {
        let g = (w - l) + ln_pos(-w);
        w -= g * (w / (1.0 + w));
    }
    Some(w)
}

/// ln v for v > 0 finite (callers guarantee it); any other input gives 0.
#[inline(never)] // cold: the Newton steps beyond the f32 range only
fn ln_pos(v: f32) -> f32 {
    if v > 0.0 && v < f32::INFINITY {
        let (_, head, tail) = ln_parts(v);
        head + tail
    } else {
        0.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// |w·eʷ − x| relative to x, in f64, or the log-form residual where x is tiny.
    fn residual(w: f32, x: f32) -> f64 {
        let (w, x) = (f64::from(w), f64::from(x));
        if x.abs() < 1e-30 && w < -1.0 {
            // w + ln(−w) − ln(−x), relative to |w| (w·eʷ underflows).
            return ((w + (-w).ln() - (-x).ln()) / w).abs();
        }
        if x == 0.0 {
            return w.abs();
        }
        ((w * w.exp() - x) / x).abs()
    }

    /// The residual bound for a result within 4 ulp of W: a relative error ε in w is a relative
    /// error ε·|1 + w| in w·eʷ (plus the rounding of x itself, ~1e−7·|w/(1 + w)|… measured
    /// relative to x it is ε·|1 + w|).
    fn tolerance(w: f32) -> f64 {
        let w = f64::from(w);
        4.0 * 1.2e-7 * (1.0 + w.abs()).max(1.0) + 1e-12
    }

    #[test]
    fn special_values() {
        assert_eq!(w0(0.0).map(f32::to_bits), Some(0.0f32.to_bits()));
        assert_eq!(w0(-0.0).map(f32::to_bits), Some((-0.0f32).to_bits()));
        assert_eq!(w0(f32::INFINITY), Some(f32::INFINITY));
        assert_eq!(w0(f32::NEG_INFINITY), None);
        assert_eq!(w0(f32::NAN), None);
        assert_eq!(w0(-0.5), None);
        assert_eq!(w0(-INV_E), None);
        assert!(w0(-0.367_879_42).is_some_and(|w| w > -1.0 && w < -0.999));
        assert_eq!(w0(1e-40), Some(1e-40));
        assert_eq!(w0(-1e-40), Some(-1e-40));
        assert_eq!(w0(f32::from_bits(1)), Some(f32::from_bits(1)));
        assert_eq!(wm1(-0.0), Some(f32::NEG_INFINITY));
        assert_eq!(wm1(0.0), None);
        assert_eq!(wm1(0.1), None);
        assert_eq!(wm1(f32::INFINITY), None);
        assert_eq!(wm1(f32::NEG_INFINITY), None);
        assert_eq!(wm1(f32::NAN), None);
        assert_eq!(wm1(-INV_E), None);
        assert!(wm1(-0.367_879_42).is_some_and(|w| w < -1.0 && w > -1.001));
        assert!(wm1(-f32::from_bits(1)).is_some_and(|w| w < -107.0 && w > -109.0));
        assert_eq!(w0_from_branch_distance(0.0), Some(-1.0));
        assert_eq!(wm1_from_branch_distance(0.0), Some(-1.0));
        assert_eq!(w0_from_branch_distance(f32::INFINITY), Some(f32::INFINITY));
        assert_eq!(w0_from_branch_distance(-1e-30), None);
        assert_eq!(wm1_from_branch_distance(0.5), None);
        // As in micromath_f32: q = INV_E (1/e rounded up) is x = +9e−9, outside W₋₁'s domain.
        assert_eq!(wm1_from_branch_distance(INV_E), None);
        assert_eq!(w0_of_exp(f32::NEG_INFINITY), Some(0.0));
        assert_eq!(w0_of_exp(f32::INFINITY), Some(f32::INFINITY));
        assert_eq!(w0_of_exp(f32::NAN), None);
        assert_eq!(
            w0_of_neg_exp(f32::NEG_INFINITY).map(f32::to_bits),
            Some((-0.0f32).to_bits())
        );
        assert_eq!(w0_of_neg_exp(-0.5), None);
        assert_eq!(w0_of_neg_exp(-1.0), Some(-1.0));
        assert_eq!(wm1_of_neg_exp(-1.0), Some(-1.0));
        assert_eq!(wm1_of_neg_exp(-0.5), None);
        assert_eq!(wm1_of_neg_exp(f32::NEG_INFINITY), Some(f32::NEG_INFINITY));
        assert_eq!(ln(1.0), Some(0.0));
        assert_eq!(ln(0.0), None);
        assert_eq!(ln(-1.0), None);
        assert_eq!(ln(f32::INFINITY), Some(f32::INFINITY));
        assert_eq!(exp(0.0), 1.0);
        assert_eq!(exp(f32::NEG_INFINITY), 0.0);
        assert_eq!(exp(f32::INFINITY), f32::INFINITY);
        assert_eq!(expm1(0.0), 0.0);
    }

    #[test]
    fn known_values() {
        // Ω = W₀(1), W₀(e) = 1, W₋₁(−ln2/2) = −ln4, W₀(−ln2/2) = −ln2.
        let close = |a: f32, b: f64, ulps: f64| {
            let u = f64::from(f32::EPSILON) * b.abs();
            assert!((f64::from(a) - b).abs() <= ulps * u, "{a} vs {b}");
        };
        close(w0(1.0).unwrap(), 0.567_143_290_409_783_8, 1.0);
        close(w0(core::f32::consts::E).unwrap(), 1.0, 1.0);
        let x = -(core::f64::consts::LN_2 / 2.0) as f32;
        close(wm1(x).unwrap(), -2.0 * core::f64::consts::LN_2, 2.0);
        close(w0(x).unwrap(), -core::f64::consts::LN_2, 2.0);
    }

    #[test]
    fn elementary_functions_within_one_ulp() {
        let mut v = 1e-40f32;
        while v < 3e38 {
            let l = ln(v).unwrap();
            let exact = f64::from(v).ln();
            let ulp = f64::from(f32::EPSILON) * exact.abs().max(1e-45);
            assert!(
                (f64::from(l) - exact).abs() <= ulp,
                "ln {v}: {l} vs {exact}"
            );
            v *= 1.013;
        }
        let mut v = -103.0f32;
        while v < 88.7 {
            let e = exp(v);
            let exact = f64::from(v).exp();
            if exact > 1.2e-38 {
                let ulp = f64::from(f32::EPSILON) * exact;
                assert!(
                    (f64::from(e) - exact).abs() <= ulp,
                    "exp {v}: {e} vs {exact}"
                );
            }
            let m = expm1(v);
            let exact = f64::from(v).exp_m1();
            assert!(
                (f64::from(m) - exact).abs()
                    <= 4.0 * f64::from(f32::EPSILON) * exact.abs().max(1e-40),
                "expm1 {v}: {m} vs {exact}"
            );
            v += 0.0137;
        }
    }

    /// Monotone (non-strictly, as f32) across every region and piece boundary: W₀ increasing,
    /// W₋₁ decreasing, over runs of consecutive floats around each boundary.
    #[test]
    fn monotone_across_boundaries() {
        let mut w0_points = vec![X_TAYLOR, -X_TAYLOR, X_LOG_W0, X_BRANCH_W0, X_BRANCH_WM1];
        let mut wm1_points = vec![X_BRANCH_WM1, -X_LOG_WM1];
        for e in -6..4 {
            for f in [1.0f32, 1.5] {
                let v = f * 2f32.powi(e);
                w0_points.push(v);
                w0_points.push(-v);
            }
        }
        for e in -150..128 {
            w0_points.push(2f32.powi(e));
        }
        for e in -149..-1 {
            for f in [1.0f32, 1.5] {
                wm1_points.push(-f * 2f32.powi(e));
            }
        }
        let run = |x: f32, f: &dyn Fn(f32) -> Option<f32>, increasing: bool| {
            let mut prev: Option<f32> = None;
            let start = x.to_bits().wrapping_sub(300);
            for k in 0..600u32 {
                let v = f32::from_bits(start.wrapping_add(k));
                if let Some(w) = f(v) {
                    if let Some(p) = prev {
                        // Bits go up: v increases for v > 0 and decreases for v < 0.
                        let up = (v > 0.0) == increasing;
                        assert!(if up { w >= p } else { w <= p }, "{v:e}: {p} then {w}");
                    }
                    prev = Some(w);
                }
            }
        };
        for &x in &w0_points {
            run(x, &w0, true);
        }
        for &x in &wm1_points {
            run(x, &wm1, false);
        }
        // Near the branch point, consecutive floats above −1/e.
        run(-0.367_879_42, &w0, true);
        run(-0.367_879_42, &wm1, false);
    }

    #[test]
    fn log_and_q_entry_points_agree_with_direct_ones() {
        let mut l = -1.0f32;
        while l > -120.0 {
            let x = -exp(l);
            // Normal x only: a subnormal e^L is rounded far more coarsely than L.
            if x < -f32::MIN_POSITIVE && x > -INV_E {
                let direct = wm1(x).unwrap();
                let via_log = wm1_of_neg_exp(l).unwrap();
                assert!(
                    (direct - via_log).abs() <= 8e-7 * direct.abs(),
                    "{l}: {direct} {via_log}"
                );
                let direct = w0(x).unwrap();
                let via_log = w0_of_neg_exp(l).unwrap();
                assert!(
                    (direct - via_log).abs() <= 1e-6 * direct.abs().max(1e-30),
                    "{l}: {direct} {via_log}"
                );
            }
            l -= 0.0123;
        }
        let mut l = -87.0f32;
        while l < 88.0 {
            let direct = w0(exp(l)).unwrap();
            let via_log = w0_of_exp(l).unwrap();
            assert!(
                (direct - via_log).abs() <= 8e-7 * direct.abs(),
                "{l}: {direct} {via_log}"
            );
            l += 0.0123;
        }
        for &l in &[89.0f32, 100.0, 1e3, 1e10, 3e38] {
            let w = f64::from(w0_of_exp(l).unwrap());
            let r = (w + w.ln() - f64::from(l)).abs() / f64::from(l);
            assert!(r < 3e-7, "{l}: {w}");
        }
        for &l in &[-104.0f32, -200.0, -1e4, -1e20, -3e38] {
            let w = f64::from(wm1_of_neg_exp(l).unwrap());
            let r = (w + (-w).ln() - f64::from(l)).abs() / f64::from(-l);
            assert!(r < 3e-7, "{l}: {w}");
        }
        let mut q = 0.0f32;
        while q < 0.36 {
            let x = (q - INV_E_HI) - INV_E_LO;
            for (a, b) in [
                (w0_from_branch_distance(q), w0(x)),
                (wm1_from_branch_distance(q), wm1(x)),
            ] {
                if let (Some(a), Some(b)) = (a, b) {
                    assert!((a - b).abs() <= 2e-6 * a.abs(), "{q}: {a} {b}");
                }
            }
            q += 0.000_37;
        }
    }

    #[test]
    fn never_nan_on_any_bit_pattern() {
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
                ln(v),
            ]
            .into_iter()
            .flatten()
            {
                assert!(!r.is_nan(), "{v:e} ({bits:#x})");
            }
            match bits.checked_add(4099) {
                Some(b) => bits = b,
                None => break,
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(20_000))]

        #[test]
        fn inverts_w_exp_w_on_any_f32(bits in any::<u32>()) {
            let x = f32::from_bits(bits);
            let in_domain = x.is_finite() && f64::from(x) >= -1.0 / core::f64::consts::E;
            match w0(x) {
                Some(w) => {
                    prop_assert!(!w.is_nan());
                    prop_assert!(w >= -1.0);
                    if x.is_finite() {
                        prop_assert!(residual(w, x) <= tolerance(w), "w0({:e}) = {}", x, w);
                    }
                }
                None => prop_assert!(!in_domain || x.is_nan()),
            }
            match wm1(x) {
                Some(w) => {
                    prop_assert!(!w.is_nan());
                    prop_assert!(w <= -1.0);
                    if x != 0.0 {
                        prop_assert!(residual(w, x) <= tolerance(w), "wm1({:e}) = {}", x, w);
                    }
                }
                None => prop_assert!(!(in_domain && x < 0.0)),
            }
            for r in [
                w0_from_branch_distance(x),
                wm1_from_branch_distance(x),
                w0_of_exp(x),
                w0_of_neg_exp(x),
                wm1_of_neg_exp(x),
                ln(x),
            ].into_iter().flatten() {
                prop_assert!(!r.is_nan());
            }
        }
    }
}
