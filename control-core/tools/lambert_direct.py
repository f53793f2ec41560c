#!/usr/bin/env python3
"""Fits the direct piecewise polynomials of control_core::lambert_w (deterministic).

Two kinds of tables, each row [c, k0_lo, k0, k1, ..., k9] meaning
    W(c + t) = (k0 + k0_lo) + t (k1 + t (k2 + ...)),  k0 + k0_lo = W(c) as a double-double,
a Chebyshev interpolant in t (mpmath.chebyfit) whose error with the coefficients rounded to f64 is
checked on 41 points per piece against TARGET (relative):

- `table`: a positive variable v (|x| or q = x + 1/e) split into binades [2^e, 2^(e+1)), each
  binade into 2^k equal pieces (k >= 2, the smallest k that reaches TARGET). Piece j of binade e
  has centre c = 2^e (1 + (j + 1/2) / 2^k), a short double, so v - c is exact by Sterbenz.
- `etable`: L = ln x (W0) or M = -ln(-x) (W-1), one piece per run of binary exponents of x
  (greedy: the longest run that reaches TARGET), centre rounded to a multiple of 2^-8.

Also prints the 128-entry log table used by ln_dd (TABLE = log). Prints one whole Rust file to
stdout, starting with its `// @generated` line; each table lives in
src/lambert_w/generated/<file>.rs:

    log -> log.rs, w0pos -> w0_pos.rs, w0neg -> w0_neg.rs, w0q -> w0_q.rs, w0log -> w0_l.rs,
    wm1neg -> wm1_neg.rs, wm1q -> wm1_q.rs, wm1log -> wm1_m.rs

Usage: python3 lambert_direct.py TABLE [TARGET [NCOEF]] > src/lambert_w/generated/<file>.rs
(10-35 s each; scripts/check-lambert-tables.sh regenerates them all and diffs).
"""
import sys

import mpmath
from mpmath import mp, mpf

mp.dps = 34
E = mp.e
X_LOG = 16384  # W0 uses the x table below this, L = ln x above
WM1_X_MIN = mpf(2) ** -10  # W-1 uses the x table for -x above this, M = -ln(-x) below
Q_TABLE_MIN = mpf(2) ** -14  # w0/wm1 use the q tables for q = x + 1/e >= this (and x < -0.3)
TARGET = mpf(sys.argv[2]) if len(sys.argv) > 2 else mpf("8e-18")  # max |error| / |W| of each piece with coefficients rounded to f64


def w0(x):
    return mpmath.lambertw(x).real


def wm1(x):
    return mpmath.lambertw(x, -1).real


def fit_piece(f, c, h, ncoef):
    """Chebyshev interpolant of f(c + s), |s| <= h, as f64 monomial coefficients in s, lowest first,
    plus the low part of the constant; returns (coeffs, k0_lo, max relative error)."""
    g = lambda s: f(c + s)
    poly = mpmath.chebyfit(g, [-h, h], ncoef)
    cs = list(reversed(poly))
    k0 = g(mpf(0))  # exact W(c), not the interpolant's value (differs by < the fit error)
    hi = float(k0)
    lo = float(k0 - mpf(hi))
    fl = [hi] + [float(v) for v in cs[1:]]
    worst = mpf(0)
    for i in range(41):
        s = -h + 2 * h * i / 40
        acc = mpf(0)
        for cc in reversed(fl[1:]):
            acc = acc * s + mpf(cc)
        val = mpf(hi) + mpf(lo) + s * acc
        ex = g(s)
        worst = max(worst, abs(val - ex) / abs(ex))
    return fl, lo, worst


def table(name, f, vmin, vmax, ncoef, margin_abs, kmin=2, kmax=9):
    """Pieces for v in [vmin, vmax]."""
    e_lo = int(mpmath.floor(mpmath.log(mpf(vmin), 2)))
    e_hi = int(mpmath.floor(mpmath.log(mpf(vmax), 2)))
    bins = []  # (base, shift)
    rows = []
    worst_all = mpf(0)
    for e in range(e_lo, e_hi + 1):
        b0 = mpf(2) ** e
        for k in range(kmin, kmax + 1):
            n = 2 ** k
            w = b0 / n
            j0 = max(0, int(mpmath.floor((mpf(vmin) - b0) / w)))
            j1 = min(n - 1, int(mpmath.floor((mpf(vmax) - b0) / w)))
            prow = []
            ok = True
            worst = mpf(0)
            for j in range(j0, j1 + 1):
                c = b0 + (j + mpf(1) / 2) * w
                assert float(c) == c
                h = w / 2 + margin_abs + w * mpf("0.002")
                fl, lo, err = fit_piece(f, c, h, ncoef)
                worst = max(worst, err)
                if err > TARGET:
                    ok = False
                    break
                prow.append([float(c), lo] + fl)
            if ok:
                break
        else:
            raise SystemExit(f"{name}: binade {e} needs k > {kmax}")
        bins.append((len(rows) - j0, 52 - k))
        rows.extend(prow)
        worst_all = max(worst_all, worst)
        print(f"// {name}: binade 2^{e}: k = {k}, pieces {j0}..={j1}, max rel err {float(worst):.2e}",
              file=sys.stderr)
    print(f"/// {name}: v in [{vmin}, {vmax}], binades from 2^{e_lo}; max rel err "
          f"{float(worst_all):.2e}.")
    print("#[rustfmt::skip]")
    print(f"pub(crate) const {name}: Table<{len(bins)}, {len(rows)}> = Table {{")
    print(f"    e0: {e_lo + 1023},")
    print("    bins: [" + ", ".join(f"({b}, {s})" for b, s in bins) + "],")
    print("    pieces: [")
    for r in rows:
        print("        [" + ", ".join(repr(v) for v in r) + "],")
    print("    ],")
    print("};")


def etable(name, f, nmin, nmax, interval, ncoef):
    """Pieces over runs of binary exponents: exponent index n in [nmin, nmax] (n = e for W0's
    x = 2^e m, n = -e for W-1's -x = 2^e m) covers the interval(n) of the variable (L or M); each
    piece is the longest run [n0, n1] whose interval union passes TARGET (greedy, by doubling and
    bisection). Prints piece_of[n - nmin] and the rows."""
    rows, piece_of = [], []
    n0 = nmin
    worst_all = mpf(0)

    def attempt(a, b):
        lo, hi = interval(a)[0], interval(b)[1]
        c = (lo + hi) / 2
        c = mpf(float(mpmath.nint(c * 2 ** 8) / 2 ** 8))  # short centre
        h = max(c - lo, hi - c) * (1 + mpf("1e-6"))
        fl, k0lo, err = fit_piece(f, c, h, ncoef)
        return err, [float(c), k0lo] + fl

    while n0 <= nmax:
        good = n0
        err, row = attempt(n0, n0)
        if err > TARGET:
            raise SystemExit(f"{name}: exponent {n0} alone fails ({float(err):.2e})")
        step = 1
        while good + step <= nmax:
            e2, r2 = attempt(n0, good + step)
            if e2 > TARGET:
                break
            good, err, row = good + step, e2, r2
            step *= 2
        step //= 2
        while step >= 1:
            if good + step <= nmax:
                e2, r2 = attempt(n0, good + step)
                if e2 <= TARGET:
                    good, err, row = good + step, e2, r2
            step //= 2
        print(f"// {name}: exponents {n0}..={good}: centre {row[0]}, max rel err {float(err):.2e}",
              file=sys.stderr)
        piece_of.extend([len(rows)] * (good - n0 + 1))
        rows.append(row)
        worst_all = max(worst_all, err)
        n0 = good + 1
    print(f"/// {name}: exponent index n in [{nmin}, {nmax}]; max rel err {float(worst_all):.2e}.")
    print("#[rustfmt::skip]")
    print(f"pub(crate) const {name}: ExpTable<{len(piece_of)}, {len(rows)}> = ExpTable {{")
    print(f"    n0: {nmin},")
    print("    piece_of: [" + ", ".join(str(v) for v in piece_of) + "],")
    print("    pieces: [")
    for r in rows:
        print("        [" + ", ".join(repr(v) for v in r) + "],")
    print("    ],")
    print("};")


def log_table():
    """[1/m_j, ln m_j high (multiple of 2^-42), low] for m_j = 1 + (j + 1/2)/128."""
    print("/// [1/m_j, ln m_j rounded to a multiple of 2^-42, the remainder], m_j = 1 + (j + ½)/128.")
    print("#[rustfmt::skip]")
    print("pub(crate) const LOG_TABLE: [[f64; 3]; 128] = [")
    for j in range(128):
        mj = 1 + (mpf(j) + mpf(1) / 2) / 128
        ln = mpmath.log(mj)
        hi = mpmath.nint(ln * 2 ** 42) / 2 ** 42
        print(f"    [{float(1 / mj)!r}, {float(hi)!r}, {float(ln - hi)!r}],")
    print("];")
    ln2 = mpmath.log(2)
    hi = mpmath.nint(ln2 * 2 ** 42) / 2 ** 42
    print("/// ln 2 rounded to a multiple of 2^-42 (e·LN2_HI exact for |e| < 2^11).")
    print(f"pub(crate) const LN2_HI: f64 = {float(hi)!r};")
    print("/// ln 2 − `LN2_HI`.")
    print(f"pub(crate) const LN2_LO: f64 = {float(ln2 - hi)!r};")


HEADER_DOC = {
    "log": "The 128-entry log table of `ln_dd` and ln 2 split for it.",
    "w0pos": "W₀ for 2⁻¹⁴ ≤ x < 16384, a table in x.",
    "w0neg": "W₀ for −0.3 ≤ x ≤ −2⁻¹⁴, a table in −x.",
    "w0q": "W₀ for x < −0.3, q = x + 1/e ≥ 2⁻¹⁴, a table in q.",
    "w0log": "W₀ for x ≥ 16384, a table in L = ln x.",
    "wm1neg": "W₋₁ for −0.3 ≤ x ≤ −2⁻¹⁰, a table in −x.",
    "wm1q": "W₋₁ for x < −0.3, q = x + 1/e ≥ 2⁻¹⁴, a table in q.",
    "wm1log": "W₋₁ for −2⁻¹⁰ < x < 0, a table in M = −ln(−x).",
}


def main():
    if len(sys.argv) < 2 or sys.argv[1] not in HEADER_DOC:
        raise SystemExit(__doc__)
    which = sys.argv[1]
    nc = int(sys.argv[3]) if len(sys.argv) > 3 else 10
    print(f"// @generated by control-core/tools/lambert_direct.py {' '.join(sys.argv[1:])} — do not edit")
    print(f"//! {HEADER_DOC[which]}")
    print()
    if which == "log":
        log_table()
    elif which in ("w0log", "wm1log"):
        print("use crate::lambert_w::methods::ExpTable;")
        print()
    else:
        print("use crate::lambert_w::methods::Table;")
        print()
    # x tables: the variable is |x| itself (exact), no margin needed beyond rounding.
    if which == "w0pos":
        table("W0_POS", w0, mpf(2) ** -14, X_LOG, nc, 0)
    if which == "w0neg":
        table("W0_NEG", lambda v: w0(-v), mpf(2) ** -14, mpf("0.3001"), nc, 0)
    if which == "wm1neg":
        table("WM1_NEG", lambda v: wm1(-v), WM1_X_MIN, mpf("0.3001"), nc, 0)
    # q tables: q = x + 1/e for x < -0.3 and q >= 2^-14 (below, the branch-point Halley step).
    qa, qb = Q_TABLE_MIN, mpf("0.0680")
    if which == "w0q":
        table("W0_Q", lambda q: w0(q - 1 / E), qa, qb, nc, 0)
    if which == "wm1q":
        table("WM1_Q", lambda q: wm1(q - 1 / E), qa, qb, nc, 0)
    # L and M tables: the piece is chosen from the binary exponent of x, so it is known before ln|x|
    # is formed: x = 2^n m (W0, n >= 14) has L in [n ln2, (n + 1) ln2]; -x = 2^-n m (W-1, n >= 11,
    # up to 1074 for subnormals) has M in [(n - 1) ln2, n ln2].
    ln2 = mpmath.log(2)
    eps = mpf("1e-9")
    if which == "w0log":
        etable("W0_L", lambda L: w0(mpmath.exp(L)), 14, 1023,
               lambda n: (n * ln2 - eps, (n + 1) * ln2 + eps), nc)
    if which == "wm1log":
        etable("WM1_M", lambda M: wm1(-mpmath.exp(-M)), 11, 1074,
               lambda n: ((n - 1) * ln2 - eps, n * ln2 + eps), nc)


if __name__ == "__main__":
    main()
