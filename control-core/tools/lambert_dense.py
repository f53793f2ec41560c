#!/usr/bin/env python3
"""Extra reference points for control_core::lambert_w concentrated where the direct tables switch:
piece and binade boundaries of x, -x and q = x + 1/e (a few ulps either side), exponent boundaries
of the L / M tables (powers of two, down to subnormals), the 1/128 steps of the mantissa used by
the log, and random points in between. Same 25-byte record format as lambert_reference.py (kinds
0 = w0, 1 = wm1; region 7). Usage:

    python3 lambert_dense.py OUT [SEED] [N_RANDOM]
    LAMBERT_EXTRA_REFERENCE=OUT cargo test -p control-core --release --test lambert_accuracy
"""
import math
import random
import struct
import sys

import mpmath
from mpmath import mp, mpf

mp.dps = 50
INV_E = 1 / mp.e


def rec(out, kind, x):
    if not (mpf(x) > -INV_E):
        return
    if kind == 1 and not x < 0:
        return
    w = mpmath.lambertw(mpf(x), -1 if kind else 0).real
    hi = float(w)
    lo = float(w - mpf(hi))
    out.append(struct.pack("<BQQQ", kind * 16 + 7, struct.unpack("<Q", struct.pack("<d", x))[0],
                           struct.unpack("<Q", struct.pack("<d", hi))[0],
                           struct.unpack("<Q", struct.pack("<d", lo))[0]))


def around(v, n=2):
    out = [v]
    a = b = v
    for _ in range(n):
        a = math.nextafter(a, -math.inf)
        b = math.nextafter(b, math.inf)
        out += [a, b]
    return out


def main():
    path = sys.argv[1]
    rng = random.Random(int(sys.argv[2]) if len(sys.argv) > 2 else 1)
    nrand = int(sys.argv[3]) if len(sys.argv) > 3 else 20000
    out = []
    pts0, pts1 = [], []
    # x tables: boundaries 2^e (1 + j/64) of |x|.
    for e in range(-15, 15):
        for j in range(64):
            b = math.ldexp(1 + j / 64, e)
            for v in around(b):
                if v <= 0.3001:
                    pts0.append(-v)
                    pts1.append(-v)
                pts0.append(v)
    # q tables: boundaries of q in [2^-15, 0.07].
    for e in range(-15, -3):
        for j in range(64):
            q = math.ldexp(1 + j / 64, e)
            x = q - float(INV_E)
            for v in around(x):
                if -0.37 < v < -0.29:
                    pts0.append(v)
                    pts1.append(v)
    # exponent boundaries (L / M tables) and the log's 1/128 mantissa steps.
    for n in range(-1074, 1024):
        for v in around(math.ldexp(1.0, n), 1):
            if v > 0:
                pts0.append(v)
                if v < 0.3:
                    pts1.append(-v)
    for _ in range(3000):
        n = rng.randint(-1074, 1023)
        j = rng.randint(0, 127)
        v = math.ldexp(1 + j / 128, n)
        for u in around(v, 1):
            if u > 0:
                pts0.append(u)
                if u < 0.3:
                    pts1.append(-u)
    # thresholds
    for t in (1e-4, 0.3, 16384.0, math.ldexp(1, -10), 8.0):
        for v in around(t, 3):
            pts0 += [v, -v]
            pts1.append(-v)
    # random: log-uniform over the whole domain and uniform on (-1/e, 0)
    for _ in range(nrand):
        v = math.exp(rng.uniform(math.log(1e-300), math.log(1.7e308)))
        pts0.append(v)
        u = math.exp(rng.uniform(math.log(1e-320), math.log(0.3679)))
        pts0.append(-u)
        pts1.append(-u)
        y = -float(INV_E) * rng.random()
        pts0.append(y)
        pts1.append(y)
    for x in pts0:
        if -0.3679 < x and math.isfinite(x) and x != 0:
            rec(out, 0, x)
    for x in pts1:
        if -0.3679 < x < 0:
            rec(out, 1, x)
    with open(path, "wb") as f:
        f.write(b"".join(out))
    print(len(out), "records", file=sys.stderr)


if __name__ == "__main__":
    main()
