#!/usr/bin/env python3
"""Fits the polynomial coefficients used by control_core::lambert_w (deterministic).

Prints one whole Rust file to stdout, src/lambert_w/generated/fit.rs, starting with its
`// @generated` line. Every fit is a Chebyshev (near-minimax) fit by
mpmath.chebyfit in a variable centred on its interval, so the monomial coefficients stay
well conditioned; the printed `// max rel err` is measured on 4000 points with the
coefficients rounded to f64 and evaluated in f64 by Horner.

Usage: python3 lambert_fit.py > src/lambert_w/generated/fit.rs   (~2 min)

The direct tables used by w0/wm1 outside the branch region come from lambert_direct.py.
"""
import math

import mpmath
from mpmath import mp, mpf

mp.dps = 40
E = mp.e


def w_of_p(p, k):
    # p = sqrt(2(1 + e x)); x = (p^2/2 - 1)/e
    x = (p * p / 2 - 1) / E
    return mpmath.lambertw(x, k).real


def fit(name, f, a, b, n, rel=True, ref=None):
    """Fit f(c + s) for s in [a - c, b - c], c = (a + b)/2, with n coefficients."""
    a, b = mpf(a), mpf(b)
    c = (a + b) / 2
    h = (b - a) / 2
    g = lambda s: f(c + s)
    coeffs, _ = mpmath.chebyfit(g, [-h, h], n, error=True)
    cs = [float(v) for v in reversed(coeffs)]  # lowest degree first
    worst = 0.0
    for i in range(4001):
        s = -h + 2 * h * i / 4000
        sf = float(s)
        acc = 0.0
        for cc in reversed(cs):
            acc = acc * sf + cc
        exact = g(mpf(sf))
        scale = abs(ref(c + mpf(sf))) if ref is not None else (abs(exact) if rel else 1)
        err = abs(mpf(acc) - exact) / scale
        worst = max(worst, float(err))
    return float(c), cs, worst


def emit(name, c, cs, worst, doc):
    body = ", ".join(repr(v) for v in cs)
    print(f"/// {doc}")
    print(f"/// Centre {c!r}, max error {worst:.3e}.")
    print("#[rustfmt::skip]")
    print(f"pub(crate) const {name}: Poly<{len(cs)}> = Poly {{ c: {c!r}, k: [{body}] }};")


def emit_array(name, doc, entries):
    """entries: (piece name, c, cs, worst) of one length each."""
    print(f"/// {doc}")
    print("#[rustfmt::skip]")
    print(f"pub(crate) const {name}: [Poly<{len(entries[0][2])}>; {len(entries)}] = [")
    for nm, c, cs, worst in entries:
        body = ", ".join(repr(v) for v in cs)
        print(f"    // {nm}: centre {c!r}, max error {worst:.3e}")
        print(f"    Poly {{ c: {c!r}, k: [{body}] }},")
    print("];")


def emit_constants():
    def dd(v):
        hi = float(v)
        return hi, float(v - mpf(hi))
    e_hi, e_lo = dd(E)
    print("/// e as a double-double, high part: the f64 nearest to e.")
    assert e_hi == math.e
    print("pub const E_HI: f64 = core::f64::consts::E;")
    print("/// e as a double-double, low part: e − [`E_HI`] rounded to f64.")
    print(f"pub const E_LO: f64 = {e_lo!r};")
    i_hi, i_lo = dd(1 / E)
    assert mpf(i_hi) > 1 / E and i_lo < 0
    print("/// 1/e as a double-double, high part: the f64 nearest to 1/e (1.24e−17 above 1/e).")
    print(f"pub const INV_E_HI: f64 = {i_hi!r};")
    print("/// 1/e as a double-double, low part: 1/e − [`INV_E_HI`] rounded to f64 (negative); the")
    print("/// pair carries 1/e to ~1e−33.")
    print(f"pub const INV_E_LO: f64 = {i_lo!r};")
    # ln2/128 with 20 trailing zero bits in the high part (kd * HI exact for |kd| < 2^20)
    import struct
    N = 128
    v = mpmath.log(2) / N
    hi = float(v)
    b = struct.unpack("<Q", struct.pack("<d", hi))[0] & ~((1 << 20) - 1)
    hi = struct.unpack("<d", struct.pack("<Q", b))[0]
    lo = float(v - mpf(hi))
    print("/// ln2/128, high part (20 trailing zero bits, so kd·HI is exact for |kd| < 2^20).")
    print(f"pub(crate) const LN2_N_HI: f64 = {hi!r};")
    print("/// ln2/128 − `LN2_N_HI`.")
    print(f"pub(crate) const LN2_N_LO: f64 = {lo!r};")
    print("/// 128/ln2.")
    print(f"pub(crate) const INV_LN2_N: f64 = {float(N / mpmath.log(2))!r};")
    # 2^(j/128) rounded to 26 significant bits, and the relative remainder
    print("/// 2^(j/128): [t_j = 2^(j/128) rounded to 26 significant bits (so x·t_j splits exactly with")
    print("/// one Dekker split of x), (2^(j/128) − t_j)/t_j].")
    print("#[rustfmt::skip]")
    print("pub(crate) const EXP_TABLE: [[f64; 2]; 128] = [")
    for j in range(N):
        t = mpf(2) ** (mpf(j) / N)
        e = mpmath.floor(mpmath.log(t, 2))
        scale = mpf(2) ** (25 - e)
        th = float(mpmath.nint(t * scale) / scale)
        tau = float((t - mpf(th)) / mpf(th))
        print(f"    [{th!r}, {tau!r}],")
    print("];")
    # start-value log table: c_j = 1/(1 + (j + 1/2)/64), -ln c_j
    print("/// [c_j, −ln c_j] with c_j = 1/(1 + (j + ½)/64) rounded to f64.")
    print("#[rustfmt::skip]")
    print("pub(crate) const LN_TABLE: [[f64; 2]; 64] = [")
    for j in range(64):
        c = float(1 / (1 + (mpf(j) + mpf(0.5)) / 64))
        print(f"    [{c!r}, {float(-mpmath.log(mpf(c)))!r}],")
    print("];")


def emit_branch_poly():
    """w = -1 + p S(p) near the branch point, p = +-sqrt(2(1 + e x)) (+ for W0, - for W-1): a
    Chebyshev fit of S = (W + 1)/p on |p| <= 1.001 sqrt(2e 2^-14) (q < 2^-14), one polynomial for
    both branches (W is analytic in p there); the error is checked on -1 + p S(p) with the
    coefficients rounded to f64 (absolute, against W ~ -1)."""
    pmax = mpmath.sqrt(2 * E * mpf(2) ** -14) * mpf("1.001")

    def w_of(p):
        return w_of_p(abs(p), 0 if p >= 0 else -1)

    def s_of(p):
        return mpf(1) if p == 0 else (w_of(p) + 1) / p

    poly = mpmath.chebyfit(s_of, [-pmax, pmax], 7)
    cs = [float(v) for v in reversed(poly)]
    worst = mpf(0)
    for i in range(801):
        p = float(-pmax + 2 * pmax * i / 800)
        acc = mpf(0)
        for cc in reversed(cs):
            acc = acc * p + mpf(cc)
        worst = max(worst, abs(-1 + p * acc - w_of(mpf(p))))
    assert worst < mpf("3e-18"), worst
    print("/// The branch point: w = −1 + p·S(p), p = ±√(2(1 + e·x)) (+ for W₀, − for W₋₁), one")
    print(f"/// polynomial S for both branches, |p| ≤ {float(pmax):.5f} (q < 2⁻¹⁴), lowest degree first;")
    print(f"/// max error of −1 + p·S(p) {float(worst):.2e} (absolute).")
    print("#[rustfmt::skip]")
    print(f"pub(crate) const W_BRANCH_P: [f64; {len(cs)}] = [{', '.join(repr(v) for v in cs)}];")


def main():
    print("// @generated by control-core/tools/lambert_fit.py — do not edit")
    print("//! Constants, the Halley-step tables, the branch-point polynomials and the start")
    print("//! polynomials of the q entry points.")
    print()
    print("use crate::lambert_w::methods::Poly;")
    print()
    emit_constants()
    # P(u) with e^u = 1 + u + u^2 P(u), |u| <= 0.25 (absolute accuracy in P)
    c, cs, wst = fit("EXPU", lambda u: (mpmath.exp(u) - 1 - u) / (u * u) if u != 0 else mpf(1) / 2,
                     -0.27, 0.27, 12, rel=False)
    emit("EXPU", c, cs, wst, "P(u) with eᵘ = 1 + u + u²·P(u) for |u| ≤ 0.27 (absolute error in P).")
    emit_branch_poly()

    # branch-point initial guess: u = 1 + w = p * C(p), fit C on [0, PB]
    PB = 0.235
    for k, nm in ((0, "U0_BRANCH"), (-1, "UM1_BRANCH")):
        sgn = 1 if k == 0 else -1

        def f(p, k=k, sgn=sgn):
            if p == 0:
                return mpf(1)
            return (1 + w_of_p(p, k)) / (sgn * p)

        c, cs, wst = fit(nm, f, 0, PB, 7)
        br = "W₀" if k == 0 else "W₋₁"
        emit(nm, c, cs, wst, f"Branch-point start for {br}: u = 1 + w ≈ {'' if k == 0 else '−'}p·C(p), C on [0, {PB}].")

    # W0 near zero: w = x * S(x) on [-0.1, 0.25]
    def s0(x):
        return mpmath.lambertw(x).real / x if x != 0 else mpf(1)

    c, cs, wst = fit("W0_SMALL", s0, -0.1, 0.25, 8)
    emit("W0_SMALL", c, cs, wst, "Start value for W₀: w ≈ x·S(x) on [−0.1, 0.25].")

    # W0 in x pieces on [0.25, 8] (no square root on the critical path)
    for i, (a, b) in enumerate(((0.245, 0.6), (0.6, 1.4), (1.4, 3.2), (3.2, 8.005))):
        c, cs, wst = fit(f"W0_X{i}", lambda x: mpmath.lambertw(x).real, a, b, 8)
        emit(f"W0_X{i}", c, cs, wst, f"Start value for W₀ on [{a}, {b}], in x.")

    # W0 and W-1 in x pieces on [-0.3, -0.1] / [-0.3, -0.135] (no square root on the critical path)
    for i, (a, b) in enumerate(((-0.3005, -0.25), (-0.25, -0.18), (-0.18, -0.0995))):
        c, cs, wst = fit(f"W0_N{i}", lambda x: mpmath.lambertw(x).real, a, b, 8)
        emit(f"W0_N{i}", c, cs, wst, f"Start value for W₀ on [{a}, {b}], in x.")
    for i, (a, b) in enumerate(((-0.3005, -0.25), (-0.25, -0.19), (-0.19, -0.1345))):
        c, cs, wst = fit(f"WM1_N{i}", lambda x: mpmath.lambertw(x, -1).real, a, b, 8)
        emit(f"WM1_N{i}", c, cs, wst, f"Start value for W₋₁ on [{a}, {b}], in x.")

    # W0 in p pieces: [PB, p(-0.1)] and [p(0.25), p(8)] 
    p_m01 = float(mpmath.sqrt(2 * (1 - E * mpf("0.1"))))
    p_025 = float(mpmath.sqrt(2 * (1 + E * mpf("0.25"))))
    p_8 = float(mpmath.sqrt(2 * (1 + E * 8))) + 0.01
    print(f"// p(-0.1) = {p_m01!r}, p(0.25) = {p_025!r}, p(8) = {p_8!r}")
    pieces0 = [(PB - 0.005, 0.7, 8)]  # used for x < -0.3 only
    for i, (a, b, n) in enumerate(pieces0):
        c, cs, wst = fit(f"W0_P{i}", lambda p: w_of_p(p, 0), a, b, n, ref=lambda p: w_of_p(p, 0))
        emit(f"W0_P{i}", c, cs, wst, f"Start value for W₀ on p in [{a}, {b}], p = √(2(1 + e·x)).")

    # W0 in L = ln x for x = 2^e * m >= 8, piece j for e in [3*2^j, 3*2^(j+1)), j = 0..8, so the
    # piece is known from the exponent bits before L is formed: L in [3*2^j ln2, 3*2^(j+1) ln2]
    LN2 = mpmath.log(2)
    entries = []
    for j in range(9):
        a, b = 3 * 2 ** j * LN2 - mpf("0.01"), min(3 * 2 ** (j + 1), 1024) * LN2 + mpf("0.01")
        f = lambda L: mpmath.lambertw(mpmath.exp(L)).real
        c, cs, wst = fit(f"W0_E{j}", f, a, b, 8)
        entries.append((f"W0_E{j}", c, cs, wst))
    emit_array("W0_LOG", "Start values for W₀(e^L), x = 2ᵉ·m ≥ 8: piece j for e in [3·2ʲ, 3·2ʲ⁺¹), j = 0..8.",
               entries)

    # W-1 in p: [PB, p(-e^-2)]
    p_e2 = float(mpmath.sqrt(2 * (1 - E * mpmath.exp(-2)))) + 0.005
    print(f"// p(-e^-2) = {p_e2!r}")
    piecesm = [(PB - 0.005, 0.61, 8)]  # used for x < -0.3 only
    for i, (a, b, n) in enumerate(piecesm):
        c, cs, wst = fit(f"WM1_P{i}", lambda p: w_of_p(p, -1), a, b, n, ref=lambda p: w_of_p(p, -1))
        emit(f"WM1_P{i}", c, cs, wst, f"Start value for W₋₁ on p in [{a}, {b}], p = √(2(1 + e·x)).")

    # W-1 in M = -ln(-x) for -x = 2^e * m, n = -e: piece j for n in [3*2^j, 3*2^(j+1)), j = 0..8
    # (M in ((n - 1) ln2, n ln2]); piece 0 starts at M = 2 (x = -e^-2), piece 8 reaches the
    # smallest subnormal (M = 745.14)
    entries = []
    for j in range(9):
        a = max(mpf(2), (3 * 2 ** j - 1) * LN2) - mpf("0.01")
        b = (3 * 2 ** (j + 1) * LN2 if j < 8 else mpf("745.2")) + mpf("0.01")
        f = lambda M: mpmath.lambertw(-mpmath.exp(-M), -1).real
        c, cs, wst = fit(f"WM1_E{j}", f, a, b, 8)
        entries.append((f"WM1_E{j}", c, cs, wst))
    emit_array("WM1_LOG", "Start values for W₋₁(−e^(−M)), −x = 2ᵉ·m: piece j for −e in [3·2ʲ, 3·2ʲ⁺¹), "
               "j = 0..8 (piece 0 from M = 2, piece 8 to the smallest subnormal, M = 745.2).", entries)


if __name__ == "__main__":
    main()
