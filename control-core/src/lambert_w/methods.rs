//! The evaluation methods behind the entry points of [`super`]: table evaluation, `ln_dd`, the
//! branch-point step, the Halley and Newton steps and their start values.

use super::generated::{
    E_HI, E_LO, EXP_TABLE, EXPU, INV_E_HI, INV_E_LO, INV_LN2_N, LN_TABLE, LN2_HI, LN2_LO, LN2_N_HI,
    LN2_N_LO, LOG_TABLE, U0_BRANCH, UM1_BRANCH, W_BRANCH_P, W0_LOG, W0_N0, W0_N1, W0_N2, W0_P0,
    W0_SMALL, W0_X0, W0_X1, W0_X2, W0_X3, WM1_LOG, WM1_N0, WM1_N1, WM1_N2, WM1_P0,
};
use super::generated::{W0_NEG, W0_POS, W0_Q, WM1_NEG, WM1_Q};

/// Shifter: adding it to |z| < 2^51 rounds z to an integer held in the low mantissa bits.
const SHIFTER: f64 = 6_755_399_441_055_744.0;
/// Dekker's splitter 2^27 + 1.
const SPLITTER: f64 = 134_217_729.0;

/// A polynomial in (t − c), coefficients lowest degree first.
pub(super) struct Poly<const N: usize> {
    pub(super) c: f64,
    pub(super) k: [f64; N],
}

impl<const N: usize> Poly<N> {
    /// Evaluation at t by Estrin's scheme (short dependency chains).
    #[inline(always)]
    pub(super) fn eval(&self, t: f64) -> f64 {
        estrin(&self.k, t - self.c)
    }
}

/// Estrin evaluation of k[0] + k[1]·s + … + k[n−1]·s^(n−1). The lengths used here are spelled out
/// (after inlining the match resolves statically); other lengths fall back to Horner.
#[inline(always)]
pub(super) fn estrin(k: &[f64], s: f64) -> f64 {
    let s2 = s * s;
    let s4 = s2 * s2;
    match *k {
        [a0, a1, a2, a3, a4, a5] => (a0 + a1 * s) + s2 * ((a2 + a3 * s) + s2 * (a4 + a5 * s)),
        [a0, a1, a2, a3, a4, a5, a6] => {
            ((a0 + a1 * s) + s2 * (a2 + a3 * s)) + s4 * ((a4 + a5 * s) + s2 * a6)
        }
        [a0, a1, a2, a3, a4, a5, a6, a7] => {
            ((a0 + a1 * s) + s2 * (a2 + a3 * s)) + s4 * ((a4 + a5 * s) + s2 * (a6 + a7 * s))
        }
        [a0, a1, a2, a3, a4, a5, a6, a7, a8] => {
            ((a0 + a1 * s) + s2 * (a2 + a3 * s))
                + s4 * (((a4 + a5 * s) + s2 * (a6 + a7 * s)) + s4 * a8)
        }
        [a0, a1, a2, a3, a4, a5, a6, a7, a8, a9] => {
            ((a0 + a1 * s) + s2 * (a2 + a3 * s))
                + s4 * (((a4 + a5 * s) + s2 * (a6 + a7 * s)) + s4 * (a8 + a9 * s))
        }
        [a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11] => {
            ((a0 + a1 * s) + s2 * (a2 + a3 * s))
                + s4 * (((a4 + a5 * s) + s2 * (a6 + a7 * s))
                    + s4 * ((a8 + a9 * s) + s2 * (a10 + a11 * s)))
        }
        _ => k.iter().rev().fold(0.0, |acc, &c| acc * s + c),
    }
}

/// Taylor series of W₀ at 0 for |x| ≤ 1e−4 (truncation < 1e−19 relative). Below |x| = 2⁻⁶⁰,
/// |W₀(x) − x| < x² < 2⁻⁸ ulp(x), so x itself is the rounded result (±0 and subnormals included);
/// returning it early also keeps x² from underflowing (a slow microcode assist on some CPUs).
#[inline(always)]
pub(super) fn w0_taylor(x: f64) -> f64 {
    if x.abs() < TWO_M60 {
        return x;
    }
    let t = -1.0 + x * (1.5 + x * (-8.0 / 3.0 + x * (125.0 / 24.0)));
    x + (x * x) * t
}

/// 2⁻⁶⁰.
const TWO_M60: f64 = 8.673_617_379_884_035e-19;

/// Near the branch point, for 0 ≤ q < 2⁻¹⁴ (|1 + w| < 0.0183): w = −1 + p·S(p) with
/// p = `sign`·√(2e·q) (`sign` = +1 for W₀, −1 for W₋₁) and S one polynomial of degree 6 for both
/// branches (`W_BRANCH_P`, error < 2e−18). p is formed from e's high part only: with the
/// roundings, p carries ~1 ulp of relative error, and u = p·S(p) ~3 ulp of |u| < 0.0183, 0.03 ulp of
/// w at most, before the final rounding of −1 + u. No division, no iteration.
#[inline(always)]
pub(super) fn branch_series(q: f64, sign: f64) -> f64 {
    let p = sign * libm::sqrt(q * (2.0 * E_HI));
    -1.0 + p * estrin(&W_BRANCH_P, p)
}

/// Near the branch point: u = 1 + w from h(u) = e·q by one Halley step. `sign` = +1 for W₀,
/// −1 for W₋₁. Requires 0 ≤ q < `Q_BRANCH`.
#[inline(always)]
pub(super) fn branch(q: f64, sign: f64) -> f64 {
    let eq = E_HI * q + E_LO * q;
    let p = libm::sqrt(2.0 * eq);
    if p < 1e-9 {
        // u = ±p − p²/3 (next term 11p³/72 < 2e−28).
        return -1.0 + (sign * p - p * p / 3.0);
    }
    let u0 = if sign > 0.0 {
        p * U0_BRANCH.eval(p)
    } else {
        -(p * UM1_BRANCH.eval(p))
    };
    let pu = EXPU.eval(u0);
    let eu = 1.0 + (u0 + u0 * u0 * pu); // eᵘ
    let h = (u0 * u0) * (1.0 - (1.0 - u0) * pu);
    let f = h - eq;
    let fp = u0 * eu;
    let fpp = (1.0 + u0) * eu;
    let d = 2.0 * f * fp / (2.0 * fp * fp - f * fpp);
    -1.0 + (u0 - d)
}

/// Start value for W₀ (relative error < 1e−6) for x in [−0.3, MAX] outside the Taylor range.
#[inline(always)]
pub(super) fn w0_start(x: f64) -> f64 {
    if x <= 0.25 {
        if x >= -0.1 {
            return x * W0_SMALL.eval(x);
        }
        if x >= -0.3 {
            return if x < -0.25 {
                W0_N0.eval(x)
            } else if x < -0.18 {
                W0_N1.eval(x)
            } else {
                W0_N2.eval(x)
            };
        }
        return W0_P0.eval(p_of(x));
    }
    if x < 8.0 {
        // In x itself: no square root on the critical path.
        return if x < 0.6 {
            W0_X0.eval(x)
        } else if x < 1.4 {
            W0_X1.eval(x)
        } else if x < 3.2 {
            W0_X2.eval(x)
        } else {
            W0_X3.eval(x)
        };
    }
    // x ≥ 8: L = ln x = e·ln2 + ln m, the piece chosen from e while ln m is computed.
    let (e, head, tail) = log_parts(x);
    let poly = piece(&W0_LOG, e.unsigned_abs());
    estrin(&poly.k, (head - poly.c) + tail)
}

/// p = √(2(1 + e·x)) for start values (a plain double evaluation suffices there).
#[inline(always)]
pub(super) fn p_of(x: f64) -> f64 {
    let q = (x + INV_E_HI) + INV_E_LO;
    libm::sqrt(2.0 * (E_HI * q))
}

/// The start polynomial for exponent magnitude n (x = 2^±n·m): piece j for n in [3·2ʲ, 3·2ʲ⁺¹),
/// clamped to 0..=8.
#[inline(always)]
pub(super) fn piece(table: &[Poly<8>; 9], n: u64) -> &Poly<8> {
    let j = 63u32.saturating_sub((n / 3).max(1).leading_zeros()).min(8);
    match table.get(usize::from(u8::try_from(j).unwrap_or(8))) {
        Some(poly) => poly,
        None => {
            let [.., last] = table;
            last
        }
    }
}

/// ln v = e·ln2 + ln m for positive normal v = 2ᵉ·m, m ∈ [1, 2), as (e, head, tail) with
/// ln v ≈ head + tail to an absolute 2e−7: for start values only (no division, no libm call).
/// ln m = −ln c_j + ln(1 + t), t = m·c_j − 1, with a 64-entry table c_j ≈ 1/m, |t| < 1/128;
/// head = e·ln2 − ln c_j does not depend on t, so it is ready early.
#[inline(always)]
pub(super) fn log_parts(v: f64) -> (i64, f64, f64) {
    let bits = v.to_bits();
    let e = ((bits >> 52) & 0x7ff).cast_signed() - 1023;
    let m = f64::from_bits((bits & ((1u64 << 52) - 1)) | (1023u64 << 52));
    let j = usize::from(u8::try_from((bits >> 46) & 63).unwrap_or(0));
    let [c, neg_ln_c] = LN_TABLE.get(j).copied().unwrap_or([1.0, 0.0]);
    let head = f64::from(i32::try_from(e).unwrap_or(0)) * LN_2 + neg_ln_c;
    let t = m * c - 1.0;
    // ln(1 + t) ≈ t − t²/2 (error < |t|³/3 < 2e−7; the Halley step absorbs start errors < 1e−6).
    let tail = t - 0.5 * (t * t);
    (e, head, tail)
}

/// ln 2.
const LN_2: f64 = core::f64::consts::LN_2;

/// x = q − 1/e as a normalised double-double xh + xl (|xl| ≤ ulp(xh)/2, xh = x rounded once),
/// exact to ~1e−33 absolute: TwoSum of q and −`INV_E_HI` (exact by Sterbenz for q in
/// [0.184, 0.73]), then −`INV_E_LO`, then Fast2Sum. Without the renormalisation xl would be
/// `−INV_E_LO` = 1.2e−17 next to an xh of only ~5e−17 when q is within a few ulps of 1/e, and the
/// Halley step, which takes xl as a small correction, was off by up to 7e11 ulp there.
#[inline(always)]
pub(super) fn minus_inv_e(q: f64) -> (f64, f64) {
    let s = q - INV_E_HI;
    let qv = s + INV_E_HI;
    let cv = s - qv;
    let err = (q - qv) + (-INV_E_HI - cv);
    // |err| ≤ ulp(s)/2; −INV_E_LO adds 1.2e−17 (exact when err = 0, which it is near 1/e).
    let lo = err - INV_E_LO;
    // |s| ≥ |lo| unless s = 0 (q = INV_E_HI), where xh = lo and xl = 0: Fast2Sum is exact.
    let xh = s + lo;
    (xh, lo - (xh - s))
}

/// W₀ at xh + xl for |xh| ≤ 1e−4 (|xl| ≤ ulp(xh)/2): the Taylor series at 0,
/// x − x² + 3x³/2 − 8x⁴/3 + 125x⁵/24 (truncation < 1e−19 relative), one final rounding.
#[inline(always)]
pub(super) fn w0_taylor_dd(xh: f64, xl: f64) -> f64 {
    let t = -1.0 + xh * (1.5 + xh * (-8.0 / 3.0 + xh * (125.0 / 24.0)));
    xh + (xl + (xh * xh) * t)
}

/// e^L·2^s as a normalised double-double (xh, xl) (|xl| ≤ ulp(xh)/2), relative error < 1e−18,
/// for L with e^L·2^s normal, −745.2 ≤ L ≤ 709 (s = 128 lifts results below the normal range).
///
/// L = (kd/128)·ln2 + r, |r| ≤ ln2/256, with r = (L − kd·`LN2_N_HI`) − kd·`LN2_N_LO` (the product
/// and the difference are exact), e^L = 2^k·t_j·(1 + σ) from the Halley step's table (t_j with
/// 26 bits, (1 + τ_j) its remainder) and σ = (1 + τ)eʳ − 1 from the Taylor series of eʳ to r⁵.
#[inline(always)]
pub(super) fn exp_dd(l: f64, s: i64) -> (f64, f64) {
    let z = l * INV_LN2_N;
    let t = z + SHIFTER;
    let kd = t - SHIFTER;
    let ki = t.to_bits().wrapping_sub(SHIFTER.to_bits()); // kd as two's complement
    let r = (l - kd * LN2_N_HI) - kd * LN2_N_LO;
    let [th, tau] = EXP_TABLE
        .get(table_index(ki))
        .copied()
        .unwrap_or([1.0, 0.0]);
    let k = (ki.cast_signed() >> 7).wrapping_add(s);
    let scale = f64::from_bits((k.wrapping_add(1023).cast_unsigned() & 0x7ff) << 52);
    let r2 = r * r;
    let head = tau + (r + tau * (r + r2 * (0.5 + r * (1.0 / 6.0))));
    let sigma = head + r2 * ((0.5 + r * (1.0 / 6.0)) + r2 * (1.0 / 24.0 + r * (1.0 / 120.0)));
    let hi = th * scale;
    let lo = hi * sigma;
    let xh = hi + lo;
    (xh, lo - (xh - hi))
}

/// W₋₁ for x + xl (|xl| ≤ ulp(x)/2, nonzero only from the q entry point) in [−0.3579, 0),
/// outside the branch region.
#[inline(always)]
pub(super) fn wm1_general(x: f64, xl: f64) -> f64 {
    if x < -0.135 {
        let w = if x < -0.3 {
            WM1_P0.eval(p_of(x))
        } else if x < -0.25 {
            WM1_N0.eval(x)
        } else if x < -0.19 {
            WM1_N1.eval(x)
        } else {
            WM1_N2.eval(x)
        };
        return halley_exp(w, x, xl);
    }
    if x > -1e-290 {
        // M > 667: e^M would overflow the scaling of the exp form; the log form needs M to full
        // accuracy (and x may be subnormal), so take it from libm.
        let m = -libm::log(-x);
        let [.., poly] = &WM1_LOG;
        return newton_log_neg(poly.eval(m), m);
    }
    // M = −ln(−x) = −(e·ln2 + ln m) ≥ 2, the piece chosen from e while ln m is computed.
    let (e, head, tail) = log_parts(-x);
    let poly = piece(&WM1_LOG, e.unsigned_abs());
    halley_exp(estrin(&poly.k, (-head - poly.c) - tail), x, xl)
}

/// One Newton step on g(w) = w + ln(−w) + M (W₋₁(−e^(−M)), w < −1). (w + M) is exact by Sterbenz.
#[inline(always)]
pub(super) fn newton_log_neg(w: f64, m: f64) -> f64 {
    let g = (w + m) + libm::log(-w);
    w - g * (w / (1.0 + w))
}

/// One Halley step on f(w) = w − (x + x_lo)·e^(−w) from a start w with relative error < 1e−6.
/// x_lo is a tiny low part of the argument (|x_lo| ≤ ulp(x)/2; 0 except for the q entry
/// points).
///
/// Requires |w| ≥ ~1e−4, w ≤ 704 and w ≥ −690 (so 2ᵏ and x·2ᵏ are normal) and |1 + w| ≥ ~0.2.
#[inline(always)]
pub(super) fn halley_exp(w: f64, x: f64, x_lo: f64) -> f64 {
    // Issued first so the division overlaps the residual: 1/f'(w) ≈ 1/(1 + w) and the Halley
    // factor b = (2 + w)/(2(1 + w)) (f' = 1 + y, f'' = −y with y = x·e^(−w) = w − f), here as
    // kb = b/(1 + w) so that a²·b = a·(f·kb).
    let inv = 1.0 / (1.0 + w);
    let kb = ((0.5 * (2.0 + w)) * inv) * inv;
    // −w = (kd/128)·ln2 + r, |r| ≤ ln2/256.
    let z = -w * INV_LN2_N;
    let t = z + SHIFTER;
    let kd = t - SHIFTER;
    let ki = t.to_bits().wrapping_sub(SHIFTER.to_bits()); // kd as two's complement
    let r = (-w - kd * LN2_N_HI) - kd * LN2_N_LO;
    let [th, tau] = EXP_TABLE
        .get(table_index(ki))
        .copied()
        .unwrap_or([1.0, 0.0]);
    // 2^k with k = kd div 128 (arithmetic shift of the two's complement).
    let k = ki.cast_signed() >> 7;
    let scale = f64::from_bits((k.wrapping_add(1023).cast_unsigned() & 0x7ff) << 52);
    let xs = x * scale;
    // Exact product xs·th = ph + pl (Dekker; th has 26 significant bits, so one split suffices).
    let c = xs * SPLITTER;
    let xh = c - (c - xs);
    let xl = xs - xh;
    let ph = xs * th;
    let pl = (xh * th - ph) + xl * th;
    // x·e^(−w) = (ph + pl)(1 + σ) with 1 + σ = eʳ(1 + τ):
    // σ = (τ + r + τ(r + r²/2 + r³/6)) + r²(1/2 + r/6 + r²/24 + r³/120)
    // (|τ| < 2^−26; dropped: τr⁴/24 < 4e−20, the Taylor remainder r⁶/720 < 6e−19, and
    // pl·σ < 1e−18·|w|).
    let r2 = r * r;
    let head = tau + (r + tau * (r + r2 * (0.5 + r * (1.0 / 6.0))));
    let sigma = head + r2 * ((0.5 + r * (1.0 / 6.0)) + r2 * (1.0 / 24.0 + r * (1.0 / 120.0)));
    // f = w − x·e^(−w): w − ph is exact (Sterbenz), (w − ph) − pl ≈ ph·σ rounds by < 1e−18·|w|.
    // The low part of x enters as x_lo·e^(−w) ≈ x_lo·2ᵏ·th (relative error 3e−3 on a term below
    // 1e−16·|w|).
    // (Subtracted before ph·σ so that it stays off the critical path.)
    let f = (((w - ph) - pl) - x_lo * (scale * th)) - ph * sigma;
    // Halley: δ = f/(f' − f·f''/(2f')) with f' = (1 + w)(1 − a), a = f/(1 + w), f'' = −(w − f):
    // δ = a + a²·b + O(a³) (|a| < 1e−6, so O(a³) < 1e−18 relative). One final rounding.
    let a = f * inv;
    w - (a + a * (f * kb))
}

/// Low 7 bits of the rounded reduction index: the table row.
#[inline(always)]
pub(super) fn table_index(ki: u64) -> usize {
    usize::from(u8::try_from(ki & 127).unwrap_or(0))
}

/// Values stored per piece of a [`Table`]: [c, k0_lo, k0, k1, …, k9].
pub(super) const ROW: usize = 12;
/// Mask of the 52 fraction bits of an f64.
pub(super) const FRACTION: u64 = (1 << 52) - 1;
/// Bit pattern of 1.0.
pub(super) const ONE_BITS: u64 = 1023 << 52;

/// W as a piecewise polynomial in a positive variable v (x, −x, ln x or −ln(−x)): binade
/// [2ᵉ, 2ᵉ⁺¹) number b = e − e0 is split into 2^(52 − shift) equal pieces, piece j of it is row
/// `base + j` (`bins[b] = (base, shift)`, j = the top fraction bits of v). A row holds the piece's
/// centre c (a short double: v − c is exact by Sterbenz) and W(c + t) = (k0 + k0_lo) + t·P(t),
/// k0 + k0_lo = W(c) as a double-double and P of degree 8. Generated by
/// `tools/lambert_direct.py`.
pub(super) struct Table<const B: usize, const N: usize> {
    pub(super) e0: u64,
    pub(super) bins: [(i64, u32); B],
    pub(super) pieces: [[f64; ROW]; N],
}

/// One or two [`Table`]s ready for evaluation: their pieces and, for every cell of 1/64 of a
/// binade, the row of the piece that holds it (binades have at most 64 pieces), so that one load of
/// a `u16` chosen by the top bits of v finds the row. With two tables, the second serves negative
/// v (its cells follow the first's), so W₀ picks its table for x < 0 or x > 0 without a branch.
/// Built at compile time by [`direct`] from the generated tables; a `static`, so each table's rows
/// exist once.
#[derive(Clone, Copy)]
pub(super) struct Direct {
    /// 64 × the biased exponent of the first binade (the same for both tables).
    cell0: u64,
    /// The first cell of the second table (negative v): 64 × the first table's binades.
    neg_cell: u64,
    map: &'static [u16],
    pieces: &'static [[f64; ROW]],
}

impl Direct {
    /// W at |v| = |vh| + vl (|v| = |vh| for `None`), the piece chosen from vh (|vl| small: the fit
    /// covers each piece widened by the largest |vl| of the caller), from the second table for
    /// negative vh. Callers keep |vh| inside the table's range; outside it the nearest cell is
    /// used (inaccurate, never a panic).
    #[inline(always)]
    pub(super) fn eval(self, vh: f64, vl: Option<f64>) -> f64 {
        let bits = vh.to_bits();
        let cell = ((bits & !SIGN) >> 46)
            .wrapping_sub(self.cell0)
            .wrapping_add((bits >> 63) * self.neg_cell);
        let cell = usize::try_from(cell)
            .unwrap_or(usize::MAX)
            .min(self.map.len().saturating_sub(1));
        let idx = usize::from(self.map.get(cell).copied().unwrap_or(0));
        match self.pieces.get(idx) {
            Some(row) => piece_poly(row, vh.abs(), vl),
            None => f64::NAN,
        }
    }
}

/// The sign bit of an f64.
const SIGN: u64 = 1 << 63;

/// The cell map of a [`Direct`] from one table (`second` = `None`) or two (see there): cell c
/// covers binade c / 64 from the first and the top six fraction bits c % 64; its piece is
/// j = (c % 64) >> (shift − 46) of that binade, row `base + j` clamped to its table; the second
/// table's rows follow the first's. Evaluated at compile time only.
pub(super) const fn cell_map<
    const B1: usize,
    const N1: usize,
    const B2: usize,
    const N2: usize,
    const C: usize,
>(
    first: &Table<B1, N1>,
    second: Option<&Table<B2, N2>>,
) -> [u16; C] {
    let b2 = if second.is_some() { B2 } else { 0 };
    assert!(C == (B1 + b2) * 64 && N1 + N2 <= 1 << 16);
    let mut map = [0u16; C];
    let mut cell = 0;
    while cell < C {
        let binade = cell / 64;
        let (base, shift, offset, n) = if binade < B1 {
            let (base, shift) = first.bins[binade];
            (base, shift, 0, N1)
        } else {
            let (base, shift) = match second {
                Some(t) => t.bins[binade - B1],
                None => (0, 52),
            };
            (base, shift, N1, N2)
        };
        assert!(
            shift >= 46 && shift <= 52,
            "more than 64 pieces in a binade"
        );
        let j = ((cell % 64) >> (shift - 46)) as i64;
        let mut idx = base + j;
        if idx < 0 {
            idx = 0;
        }
        if idx > n as i64 - 1 {
            idx = n as i64 - 1;
        }
        map[cell] = (idx as usize + offset) as u16;
        cell += 1;
    }
    map
}

/// The rows of two tables, the second's after the first's. Evaluated at compile time only.
pub(super) const fn concat_rows<const N1: usize, const N2: usize, const N: usize>(
    first: &[[f64; ROW]; N1],
    second: &[[f64; ROW]; N2],
) -> [[f64; ROW]; N] {
    assert!(N == N1 + N2);
    let mut rows = [[0.0; ROW]; N];
    let mut i = 0;
    while i < N {
        rows[i] = if i < N1 { first[i] } else { second[i - N1] };
        i += 1;
    }
    rows
}

/// A [`Direct`] for one generated [`Table`] constant, or for two (the second for negative v; both
/// must start at the same binade), its cell map computed at compile time.
macro_rules! direct {
    ($table:path) => {{
        const MAP: [u16; $table.bins.len() * 64] =
            $crate::lambert_w::methods::cell_map::<_, _, 1, 1, _>(&$table, None);
        $crate::lambert_w::methods::Direct {
            cell0: $table.e0 << 6,
            neg_cell: 0,
            map: &MAP,
            pieces: &$table.pieces,
        }
    }};
    ($pos:path, $neg:path) => {{
        const _: () = assert!($pos.e0 == $neg.e0);
        const MAP: [u16; ($pos.bins.len() + $neg.bins.len()) * 64] =
            $crate::lambert_w::methods::cell_map(&$pos, Some(&$neg));
        const ROWS: [[f64; $crate::lambert_w::methods::ROW];
            $pos.pieces.len() + $neg.pieces.len()] =
            $crate::lambert_w::methods::concat_rows(&$pos.pieces, &$neg.pieces);
        $crate::lambert_w::methods::Direct {
            cell0: $pos.e0 << 6,
            neg_cell: ($pos.bins.len() * 64) as u64,
            map: &MAP,
            pieces: &ROWS,
        }
    }};
}

/// W₀ for 2⁻¹⁴ ≤ |x| ≤ 16384 (x ≥ −0.3001), in |x|: `W0_POS` and, for x < 0, `W0_NEG`.
pub(super) static W0_X_D: Direct = direct!(W0_POS, W0_NEG);
/// W₀ for x < −0.3, q = x + 1/e ≥ 2⁻¹⁴, in q.
pub(super) static W0_Q_D: Direct = direct!(W0_Q);
/// W₋₁ for −0.3001 ≤ x ≤ −2⁻¹⁰, in −x.
pub(super) static WM1_NEG_D: Direct = direct!(WM1_NEG);
/// W₋₁ for x < −0.3, q = x + 1/e ≥ 2⁻¹⁴, in q.
pub(super) static WM1_Q_D: Direct = direct!(WM1_Q);

/// W as a piecewise polynomial in L = ln x (W₀) or M = −ln(−x) (W₋₁), the piece chosen from the
/// binary exponent of x (n = e for x = 2ᵉ·m, n = −e for −x = 2ᵉ·m): row `piece_of[n − n0]` covers
/// a run of whole exponents, so the row is loaded while ln|x| is being formed. Rows as in
/// [`Table`] (centre c a multiple of 2⁻⁸, so head − c is exact). Generated by
/// `tools/lambert_direct.py`.
pub(super) struct ExpTable<const P: usize, const N: usize> {
    pub(super) n0: i64,
    pub(super) piece_of: [u8; P],
    pub(super) pieces: [[f64; ROW]; N],
}

impl<const P: usize, const N: usize> ExpTable<P, N> {
    /// W at v = vh + vl (v = vh for `None`) for exponent index n (clamped to the table; never a
    /// panic).
    #[inline(always)]
    pub(super) fn eval(&self, n: i64, vh: f64, vl: Option<f64>) -> f64 {
        let i = usize::try_from(n.wrapping_sub(self.n0).max(0))
            .unwrap_or(0)
            .min(P.saturating_sub(1));
        let idx = usize::from(self.piece_of.get(i).copied().unwrap_or(0));
        match self.pieces.get(idx) {
            Some(row) => piece_poly(row, vh, vl),
            None => f64::NAN,
        }
    }
}

/// (k0 + k0_lo) + t·(k1 + k2·t + … + k9·t⁸) at t = (vh − c) + vl (t = vh − c for `None`: one
/// addition less for an exact variable), P = E(t²) + t·O(t²). |t·P| is at most ~1/8 of |W| (2 to
/// 64 pieces per binade), so the rounding error stays near 0.5 ulp.
#[inline(always)]
pub(super) fn piece_poly(row: &[f64; ROW], vh: f64, vl: Option<f64>) -> f64 {
    let [c, k0_lo, k0, k1, k2, k3, k4, k5, k6, k7, k8, k9] = *row;
    let t = match vl {
        Some(vl) => (vh - c) + vl,
        None => vh - c,
    };
    // P = E(s) + t·O(s), s = t², E and O by Horner side by side: (e, o) pairs with adjacent
    // coefficients ([k5, k6], [k3, k4], [k1, k2]), which vector units take two at a time.
    let s = t * t;
    let (e, o) = (k9 * s + k7, k8);
    let (e, o) = (e * s + k5, o * s + k6);
    let (e, o) = (e * s + k3, o * s + k4);
    let (e, o) = (e * s + k1, o * s + k2);
    k0 + (k0_lo + t * (e + t * o))
}

/// ln v for v > 0 (normal or subnormal) as (e, head, tail): head + tail = ln v with an absolute
/// error below 1e−18, |tail| < 2⁻⁸ + 2⁻⁴⁰, and e the binary exponent of v (v = 2ᵉ·m, m ∈ [1, 2),
/// also for subnormal v), from which the caller chooses its table piece before ln v is formed.
///
/// v = 2ᵉ·m, m ∈ [1, 2), m_j = 1 + (j + ½)/128 from the top 7 fraction bits: m − m_j is exact,
/// t = (m − m_j)/m_j (|t| ≤ 2⁻⁸, relative error 2⁻⁵²), ln v = e·ln2 + ln m_j + ln(1 + t), where
/// e·`LN2_HI` + (ln m_j)_hi is exact (both multiples of 2⁻⁴², below 2¹⁰) and ln(1 + t) is its
/// Taylor series to t⁷ (remainder < 1e−20).
#[inline(always)]
pub(super) fn ln_dd(v: f64) -> (i64, f64, f64) {
    let bits = v.to_bits();
    // Subnormal v: normalise with an integer shift (no floating-point operation on a subnormal,
    // which costs a microcode assist on some CPUs, and no branch). s = 0 for normal v (its
    // exponent field is nonzero, so at most 11 leading zeros); for subnormal v, `bits << s` has its
    // leading one at bit 52: the bits of m·2⁻¹⁰²², and v = m·2^(−1022 − s).
    let s = u64::from(bits.leading_zeros().saturating_sub(11));
    let bits = bits << s;
    // The biased exponent of v, plus 64 so that it stays positive for subnormal v (s ≤ 52).
    let biased = ((bits >> 52) & 0x7ff) + 64 - s;
    let e = biased.cast_signed() - (1023 + 64);
    // e as a double without an int-to-float conversion (cvtsi2sd would also make this call wait
    // for the register's previous value): 2⁵² + biased, exactly, minus 2⁵² + 1087.
    let ef = f64::from_bits(TWO_52_BITS | biased) - (TWO_52 + 1087.0);
    let m = f64::from_bits((bits & FRACTION) | ONE_BITS);
    let mj = f64::from_bits((bits & (127 << 45)) | (1 << 44) | ONE_BITS);
    let j = usize::try_from((bits >> 45) & 127).unwrap_or(0);
    let [inv, ln_hi, ln_lo] = LOG_TABLE.get(j).copied().unwrap_or([1.0, 0.0, 0.0]);
    let t = (m - mj) * inv;
    let head = ef * LN2_HI + ln_hi;
    let t2 = t * t;
    let q =
        (-0.5 + t * (1.0 / 3.0)) + t2 * ((-0.25 + t * 0.2) + t2 * (-1.0 / 6.0 + t * (1.0 / 7.0)));
    let tail = t + ((ef * LN2_LO + ln_lo) + t2 * q);
    (e, head, tail)
}

/// 2⁵² and its bit pattern.
const TWO_52: f64 = 4_503_599_627_370_496.0;
const TWO_52_BITS: u64 = 0x4330_0000_0000_0000;
