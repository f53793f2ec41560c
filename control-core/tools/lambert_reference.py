#!/usr/bin/env python3
"""Reference data for control_core::lambert_w (seeded, deterministic).

Writes control-core/tests/data/lambert_reference.bin: a sequence of 25-byte little-endian records
    tag: u8      kind * 16 + region (see KINDS / REGIONS below)
    x:   u64     bit pattern of the input as an f64 (f32 inputs are stored widened, exactly)
    hi:  u64     bit pattern of the exact result rounded to nearest f64
    lo:  u64     bit pattern of (exact - hi) rounded to nearest f64  (exact ~= hi + lo to ~106 bits)

kinds: 0 = w0(x), 1 = wm1(x), 2 = w0_f32(x), 3 = wm1_f32(x),
       4 = w0_of_exp(x) = W0(e^x), 5 = wm1_of_neg_exp(x) = W-1(-e^x),
       6 = w0_from_branch_distance(x) = W0(x - 1/e), 7 = wm1_from_branch_distance(x) = W-1(x - 1/e)

Regions 8-14 (appended after the original 600 000 records, which are unchanged) sample the q
entry points within 1e-3 of q = 1/e (x = q - 1/e -> 0, where forming x cancels), tiny and huge q,
and the log entry points near L = -1, where e^L leaves the normal range and far beyond.

Usage: pip install mpmath==1.3.0 gmpy2 (gmpy2 optional, ~5x faster);
python3 lambert_reference.py [out]. Runtime ~2 min on one core with gmpy2.
"""
import math
import random
import struct
import sys

import mpmath
from mpmath import mp, mpf

mp.dps = 50
SEED = 20261122
N_F64 = 210_000  # per f64 branch
N_F32 = 60_000  # per f32 branch
N_EXP = 20_000  # per log-argument entry point
N_Q = 10_000  # per branch-distance entry point

REGIONS = {
    0: "1000 doubles above -1/e",
    1: "-1/e + [1e-15, 1e-3]",
    2: "|x| in [1e-300, 1e-3]",
    3: "subnormal",
    4: "large |w|",
    5: "log-uniform",
    6: "uniform",
    7: "random bits",
    # Appended by gen_extra (kinds 4-7 only; the records above are unchanged):
    8: "q within 4e-6 of 1/e (x -> 0)",
    9: "q near 1/e, |x| in [4e-6, 1e-3]",
    10: "q in [5e-324, 1e-15]",
    11: "q in [1, f64::MAX]",
    12: "L near -1 / L far below 0",
    13: "L in [-800, -600]",
    14: "|L| in [1e3, 1e300]",
    15: "boundaries (lambert_dense.py)",
}

INV_E = mp.e ** -1
NEG_INV_E_F64 = float(-INV_E)  # nearest double; it lies BELOW -1/e (outside both domains)
assert mpf(NEG_INV_E_F64) < -INV_E


def bits64(v: float) -> int:
    return struct.unpack("<Q", struct.pack("<d", v))[0]


def from_bits64(b: int) -> float:
    return struct.unpack("<d", struct.pack("<Q", b))[0]


def f32(v: float) -> float:
    return struct.unpack("<f", struct.pack("<f", v))[0]


def next_up(v: float) -> float:
    import math
    return math.nextafter(v, float("inf"))


def exact_w(x, k):
    return mpmath.lambertw(x, k).real


def record(out, kind, region, x: float, exact):
    hi = float(exact)  # mpf -> float rounds to nearest
    lo = float(exact - mpf(hi))
    out.append(struct.pack("<BQQQ", kind * 16 + region, bits64(x), bits64(hi), bits64(lo)))


def in_domain(x: float, k: int) -> bool:
    if x != x:
        return False
    if k == 0:
        return mpf(x) >= -INV_E and x != float("inf")
    return mpf(x) >= -INV_E and x < 0.0


def log_uniform(rng, lo, hi):
    import math
    return math.exp(rng.uniform(math.log(lo), math.log(hi)))


def gen_branch(rng, k, n, single, out):
    kind = (2 if single else 0) + (0 if k == 0 else 1)
    rnd = f32 if single else (lambda v: v)
    pts = []
    # region 0: consecutive representable values just above -1/e
    x = rnd(NEG_INV_E_F64)
    while not in_domain(x, k):
        x = next_up(x) if not single else struct.unpack("<f", struct.pack("<I", struct.unpack("<I", struct.pack("<f", x))[0] - 1))[0]
    for _ in range(1000):
        pts.append((0, x))
        if single:
            x = struct.unpack("<f", struct.pack("<I", struct.unpack("<I", struct.pack("<f", x))[0] - 1))[0]
        else:
            x = next_up(x)
    per = (n - 1000) // 7
    # region 1: near the branch point
    for _ in range(per):
        d = log_uniform(rng, 1e-15 if not single else 1e-8, 1e-3)
        pts.append((1, rnd(float(-INV_E + mpf(d)))))
    # region 2: small |x|
    for _ in range(per):
        m = log_uniform(rng, 1e-300 if not single else 1e-37, 1e-3)
        s = -1.0 if (k == -1 or rng.random() < 0.5) else 1.0
        pts.append((2, rnd(s * m)))
    # region 3: subnormals (random bit patterns)
    for _ in range(per):
        if single:
            b = rng.randrange(1, 1 << 23)
            v = struct.unpack("<f", struct.pack("<I", b))[0]
        else:
            b = rng.randrange(1, 1 << 52)
            v = from_bits64(b)
        s = -1.0 if (k == -1 or rng.random() < 0.5) else 1.0
        pts.append((3, s * v))
    # region 4: large |w|: W0 for x up to MAX, W-1 for x in -[tiny normal, 1e-30]
    fmax = 3.4028234663852886e38 if single else 1.7976931348623157e308
    tiny = 1.1754943508222875e-38 if single else 2.2250738585072014e-308
    for _ in range(per):
        if k == 0:
            pts.append((4, rnd(min(log_uniform(rng, 1e3, fmax), fmax))))
        else:
            pts.append((4, rnd(-log_uniform(rng, tiny, 1e-30))))
    # region 5: log-uniform over the whole domain
    for _ in range(per):
        if k == 0:
            if rng.random() < 0.5:
                v = log_uniform(rng, tiny, fmax)
            else:
                v = -log_uniform(rng, tiny, 0.36787944117144233)
        else:
            v = -log_uniform(rng, tiny, 0.36787944117144233)
        v = rnd(v)
        if in_domain(v, k):
            pts.append((5, v))
    # region 6: uniform spreads
    for _ in range(per):
        if k == 0:
            v = rng.choice([rng.uniform(-0.36787944117144233, 0.0), rng.uniform(0.0, 10.0), rng.uniform(10.0, 1e6)])
        else:
            v = rng.uniform(-0.36787944117144233, 0.0)
        v = rnd(v)
        if in_domain(v, k) and v != 0.0:
            pts.append((6, v))
    # region 7: random bit patterns in the domain
    while len(pts) < n:
        if single:
            v = struct.unpack("<f", struct.pack("<I", rng.getrandbits(32)))[0]
        else:
            v = from_bits64(rng.getrandbits(64))
        if in_domain(v, k) and v != 0.0 and v != float("inf"):
            pts.append((7, v))
    for region, x in pts:
        if not in_domain(x, k) or x == 0.0:
            continue
        record(out, kind, region, x, exact_w(mpf(x), k))


def gen_exp(rng, n, out):
    # kind 4: W0(e^L), L in [-1000, 1e6] spread; kind 5: W-1(-e^L), L in (-1e6, -1 - 1e-6]
    for i in range(n):
        r = rng.random()
        if r < 0.3:
            L = rng.uniform(-50.0, 50.0)
        elif r < 0.6:
            L = log_uniform(rng, 1.0, 1e6)
        else:
            L = -log_uniform(rng, 1.0, 1e4)
        region = 4 if abs(L) > 700 else 5
        record(out, 4, region, L, exact_w(mpmath.exp(mpf(L)), 0))
    for i in range(n):
        r = rng.random()
        if r < 0.5:
            L = -1.0 - log_uniform(rng, 1e-3, 50.0)
        else:
            L = -log_uniform(rng, 51.0, 1e6)
        region = 4 if abs(L) > 700 else 5
        record(out, 5, region, L, exact_w(-mpmath.exp(mpf(L)), -1))


def gen_q(rng, n, out):
    # q entry points: x is the distance q to the branch point (exact real q - 1/e)
    for kind, k, qmax in ((6, 0, 50.0), (7, -1, 0.3678794411714423)):
        for i in range(n):
            r = rng.random()
            if r < 0.4:
                q = log_uniform(rng, 1e-20, 0.0101)
                region = 1
            elif r < 0.8:
                q = rng.uniform(0.0101, 0.1)
                region = 6
            else:
                q = log_uniform(rng, 0.1, qmax)
                region = 5
            x = mpf(q) - INV_E
            if k == -1 and x >= 0:
                continue
            record(out, kind, region, q, exact_w(x, k))


def gen_extra(rng, out):
    """The regions 8-14 of the q and log entry points: q within a few ulps to 1e-3 of 1/e (x = q - 1/e
    near 0, where q - 1/e cancels), tiny and huge q, L near -1 and far out."""
    inv_e_hi = float(INV_E)
    # q entry points near q = 1/e: the 1500 doubles either side of INV_E_HI, then |x| log-uniform.
    for kind, k in ((6, 0), (7, -1)):
        q = inv_e_hi
        below, above = [], []
        a = b = inv_e_hi
        for _ in range(1500):
            a = math.nextafter(a, 0.0)
            b = math.nextafter(b, 1.0)
            below.append(a)
            above.append(b)
        pts = [inv_e_hi] + below + (above if k == 0 else [])
        for _ in range(3000):
            d = log_uniform(rng, 1e-17, 4e-6)
            if k == 0 and rng.random() < 0.5:
                pts.append(float(INV_E + mpf(d)))
            else:
                pts.append(float(INV_E - mpf(d)))
        for q in pts:
            x = mpf(q) - INV_E
            if k == -1 and x >= 0:
                continue
            record(out, kind, 8, q, exact_w(x, k))
        for _ in range(4000):
            d = log_uniform(rng, 4e-6, 1e-3)
            s = 1 if (k == 0 and rng.random() < 0.5) else -1
            q = float(INV_E + s * mpf(d))
            record(out, kind, 9, q, exact_w(mpf(q) - INV_E, k))
        for _ in range(2000):
            q = log_uniform(rng, 5e-324, 1e-15) if rng.random() < 0.9 else from_bits64(rng.randrange(1, 1 << 52))
            record(out, kind, 10, q, exact_w(mpf(q) - INV_E, k))
        if k == 0:
            for _ in range(4000):
                q = min(log_uniform(rng, 1.0, 1.7976931348623157e308), 1.7976931348623157e308)
                record(out, kind, 11, q, exact_w(mpf(q) - INV_E, k))
    # w0_of_exp: e^L subnormal or below (L < -708), e^L beyond f64 up to L = 1e300.
    for _ in range(4000):
        L = rng.uniform(-746.5, -700.0)
        record(out, 4, 13, L, exact_w(mpmath.exp(mpf(L)), 0))
    for _ in range(1000):
        L = -log_uniform(rng, 746.0, 1e300)
        record(out, 4, 12, L, exact_w(mpmath.exp(mpf(L)), 0))
    for _ in range(3000):
        L = log_uniform(rng, 1e3, 1e300)
        record(out, 4, 14, L, exact_w(mpmath.exp(mpf(L)), 0))
    for _ in range(3000):
        L = rng.uniform(600.0, 800.0)
        record(out, 4, 13, L, exact_w(mpmath.exp(mpf(L)), 0))
    # wm1_of_neg_exp: L = -1 - d (the branch point), L in [-800, -600], L down to -1e300.
    for i in range(200):
        L = -1.0
        for _ in range(i):
            L = math.nextafter(L, -math.inf)
        record(out, 5, 12, L, exact_w(-mpmath.exp(mpf(L)), -1))
    for _ in range(4000):
        L = -1.0 - log_uniform(rng, 1e-17, 0.1)
        record(out, 5, 12, L, exact_w(-mpmath.exp(mpf(L)), -1))
    for _ in range(4000):
        L = rng.uniform(-800.0, -600.0)
        record(out, 5, 13, L, exact_w(-mpmath.exp(mpf(L)), -1))
    for _ in range(2000):
        L = -log_uniform(rng, 1e3, 1e300)
        record(out, 5, 14, L, exact_w(-mpmath.exp(mpf(L)), -1))


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else "control-core/tests/data/lambert_reference.bin"
    rng = random.Random(SEED)
    out = []
    gen_branch(rng, 0, N_F64, False, out)
    gen_branch(rng, -1, N_F64, False, out)
    gen_branch(rng, 0, N_F32, True, out)
    gen_branch(rng, -1, N_F32, True, out)
    gen_exp(rng, N_EXP, out)
    gen_q(random.Random(SEED + 1), N_Q, out)
    gen_extra(random.Random(SEED + 2), out)
    with open(path, "wb") as f:
        f.write(b"".join(out))
    print(f"wrote {len(out)} records to {path}")


if __name__ == "__main__":
    main()
