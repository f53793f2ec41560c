#!/usr/bin/env python3
"""Extra reference points for control_core::lambert_w concentrated where the methods switch, for
every entry point: piece and binade boundaries of x, -x and q = x + 1/e (a few ulps either side),
exponent boundaries of the L / M tables (powers of two, down to subnormals), the 1/128 steps of the
mantissa used by the log, the region thresholds, and random points in between; the same in f32;
for the q entry points the thresholds of their start values, the binary exponents of x = q - 1/e
and the doubles next to 1/e; for the log entry points ln of every table boundary, the multiples of
ln 2, and the thresholds in L. All region 15; written in a compact delta format (see `encode`,
~7 bytes a point instead of the 25 of lambert_reference.py). Usage:

    python3 lambert_dense.py [OUT [SEED [N_RANDOM]]]     (~5 min on one core with gmpy2)

The default OUT is control-core/tests/data/lambert_dense.bin, which tests/lambert_accuracy.rs
checks (it fails when the file is missing).
"""
import math
import random
import struct
import sys

import mpmath
from mpmath import mp, mpf

mp.dps = 50
INV_E = 1 / mp.e


REGION = 15
INV_E_HI = float(INV_E)
MAX = 1.7976931348623157e308


def put(out, kind, x, w):
    out.append((kind, x, w))


def zigzag_varint(v):
    """A signed 64-bit integer as zigzag LEB128."""
    v &= (1 << 64) - 1
    if v >> 63:
        v -= 1 << 64
    z = ((v << 1) ^ (v >> 63)) & ((1 << 64) - 1)
    b = bytearray()
    while True:
        byte = z & 0x7F
        z >>= 7
        if z:
            b.append(byte | 0x80)
        else:
            b.append(byte)
            return bytes(b)


def encode(records):
    """The compact format read by tests/lambert_accuracy.rs (`read_compact`):

        b"LWD1", u32 LE section count, then per section: u8 tag (kind * 16 + region), u32 LE record
        count, and per record (sorted by the bits of x) three zigzag LEB128 integers: the bits of x
        minus those of the previous record's x, the same for hi (the exact W rounded to f64; both
        start from 0), and lo_q = round((W - hi) / s * 2^31) with s = 2^(max(E, 1) - 1075), E the
        biased exponent of hi (s is the spacing of doubles at hi: |lo_q| <= 2^30).

    Nearby points have nearby x and W, so most deltas take one to three bytes."""
    bits = lambda v: struct.unpack("<Q", struct.pack("<d", v))[0]
    kinds = sorted({k for k, _, _ in records})
    body = bytearray(b"LWD1" + struct.pack("<I", len(kinds)))
    for kind in kinds:
        recs = sorted({bits(x): (x, w) for k, x, w in records if k == kind}.items())
        body += struct.pack("<BI", kind * 16 + REGION, len(recs))
        px = ph = 0
        for xb, (x, w) in recs:
            hi = float(w)
            hb = bits(hi)
            e = max((hb >> 52) & 0x7FF, 1)
            lo_q = int(mpmath.nint((w - mpf(hi)) * mpf(2) ** (1075 - e + 31)))
            assert abs(lo_q) <= 1 << 31
            body += zigzag_varint(xb - px) + zigzag_varint(hb - ph) + zigzag_varint(lo_q)
            px, ph = xb, hb
    return bytes(body)


def rec(out, kind, x):
    """kind 0/1 (w0/wm1 of x) and 2/3 (the same for an f32 x)."""
    if not (mpf(x) > -INV_E):
        return
    if kind % 2 == 1 and not x < 0:
        return
    put(out, kind, x, mpmath.lambertw(mpf(x), -1 if kind % 2 else 0).real)


def rec_q(out, kind, q):
    """kind 6/7: W(q - 1/e) for the q entry points."""
    if not (q >= 0 and math.isfinite(q)):
        return
    x = mpf(q) - INV_E
    if kind == 7 and not x < 0:
        return
    put(out, kind, q, mpmath.lambertw(x, -1 if kind == 7 else 0).real)


def rec_l(out, kind, L):
    """kind 4: W0(e^L); kind 5: W-1(-e^L), L <= -1."""
    if not math.isfinite(L) or (kind == 5 and L > -1.0):
        return
    if kind == 4:
        put(out, 4, L, mpmath.lambertw(mpmath.exp(mpf(L))).real)
    else:
        put(out, 5, L, mpmath.lambertw(-mpmath.exp(mpf(L)), -1).real)


def f32(v):
    return struct.unpack("<f", struct.pack("<f", v))[0]


def around32(v, n=2):
    """v rounded to f32 and the n f32 values either side."""
    v = f32(v)
    out = [v]
    a = b = v
    for _ in range(n):
        a = next_f32(a, -1)
        b = next_f32(b, 1)
        out += [a, b]
    return out


def next_f32(v, d):
    """The next f32 after v towards +inf (d = 1) or -inf (d = -1)."""
    b = struct.unpack("<I", struct.pack("<f", v))[0]
    if v == 0:
        return struct.unpack("<f", struct.pack("<I", 1 if d > 0 else 0x80000001))[0]
    up = (v > 0) == (d > 0)
    b = b + 1 if up else b - 1
    return struct.unpack("<f", struct.pack("<I", b))[0]


def around(v, n=2):
    out = [v]
    a = b = v
    for _ in range(n):
        a = math.nextafter(a, -math.inf)
        b = math.nextafter(b, math.inf)
        out += [a, b]
    return out


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else "control-core/tests/data/lambert_dense.bin"
    rng = random.Random(int(sys.argv[2]) if len(sys.argv) > 2 else 1)
    nrand = int(sys.argv[3]) if len(sys.argv) > 3 else 100000
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
    n64 = len(out)
    gen_f32(rng, out)
    n32 = len(out) - n64
    gen_q(rng, out)
    nq = len(out) - n64 - n32
    gen_l(rng, out)
    nl = len(out) - n64 - n32 - nq
    data = encode(out)
    with open(path, "wb") as f:
        f.write(data)
    print(f"{len(out)} records (f64 {n64}, f32 {n32}, q {nq}, log {nl}; duplicates dropped), "
          f"{len(data)} bytes", file=sys.stderr)


def gen_f32(rng, out):
    """The f32 entry points at the same boundaries, in f32 steps."""
    p0, p1 = [], []
    for e in range(-15, 15):
        for j in range(64):
            for v in around32(math.ldexp(1 + j / 64, e)):
                if v <= 0.3001:
                    p0.append(-v)
                    p1.append(-v)
                p0.append(v)
    for e in range(-15, -3):
        for j in range(64):
            for v in around32(math.ldexp(1 + j / 64, e) - INV_E_HI):
                if -0.37 < v < -0.29:
                    p0.append(v)
                    p1.append(v)
    for n in range(-149, 128):
        for v in around32(math.ldexp(1.0, n), 1):
            if 0 < v < 3.4e38:
                p0.append(v)
                if v < 0.3:
                    p1.append(-v)
    for t in (1e-4, 0.3, 16384.0, math.ldexp(1, -10), 8.0):
        for v in around32(t, 3):
            p0 += [v, -v]
            p1.append(-v)
    # the 3000 f32 values above -1/e
    v = next_f32(f32(-INV_E_HI), 1) if f32(-INV_E_HI) < -INV_E else f32(-INV_E_HI)
    for _ in range(3000):
        p0.append(v)
        p1.append(v)
        v = next_f32(v, 1)
    for _ in range(20000):
        p0.append(f32(math.exp(rng.uniform(math.log(1.5e-45), math.log(3.4e38)))))
        u = f32(math.exp(rng.uniform(math.log(1.5e-45), math.log(0.3679))))
        p0.append(-u)
        p1.append(-u)
    for x in p0:
        if -0.3679 < x and math.isfinite(x) and x != 0:
            rec(out, 2, x)
    for x in p1:
        if -0.3679 < x < 0:
            rec(out, 3, x)


def gen_q(rng, out):
    """q entry points: their thresholds (q = 0.0101, the start-value pieces in x, the Taylor range),
    x = q - 1/e at every binary exponent and 1/64 mantissa step, the doubles next to 1/e, tiny q."""
    q0, q1 = [], []
    for t in (0.0101,):
        for v in around(t, 3):
            q0.append(v)
            q1.append(v)
    xs0 = (-0.3, -0.25, -0.18, -0.1, 0.25, 0.6, 1.4, 3.2, 8.0, 1e-4, -1e-4)
    xs1 = (-0.3, -0.25, -0.19, -0.135, -0.3005, -0.1345)
    for x in xs0:
        for v in around(float(mpf(x) + INV_E), 3):
            q0.append(v)
    for x in xs1:
        for v in around(float(mpf(x) + INV_E), 3):
            q1.append(v)
    # x = q - 1/e = +-2^n (and 1/64 steps of its mantissa): the exponent and table piece of x.
    for n in range(-56, 1024):
        for j in (0, 1, 32, 63):
            m = math.ldexp(1 + j / 64, n)
            if m > MAX:
                continue
            for v in around(float(mpf(m) + INV_E), 1):
                q0.append(v)
            if m < 0.3679:
                for v in around(float(INV_E - mpf(m)), 1):
                    q0.append(v)
                    q1.append(v)
    for _ in range(3000):
        n = rng.randint(-56, -2)
        j = rng.randint(0, 63)
        m = math.ldexp(1 + j / 64, n)
        for v in around(float(INV_E - mpf(m)), 1):
            q0.append(v)
            q1.append(v)
    # the 2000 doubles below 1/e (and above, for W0), q tiny and q at powers of two
    a = b = INV_E_HI
    q0.append(a)
    for _ in range(2000):
        a = math.nextafter(a, 0.0)
        b = math.nextafter(b, 1.0)
        q0 += [a, b]
        q1.append(a)
    for n in range(-1074, 1024):
        v = math.ldexp(1.0, n)
        if v <= 0.0101:
            q0.append(v)
            q1.append(v)
        else:
            q0.append(v)
    for _ in range(10000):
        q = math.exp(rng.uniform(math.log(5e-324), math.log(0.3678)))
        q0.append(q)
        q1.append(q)
        q0.append(math.exp(rng.uniform(math.log(0.3678), math.log(1.7e308))))
    for q in q0:
        rec_q(out, 6, q)
    for q in q1:
        rec_q(out, 7, q)


def gen_l(rng, out):
    """Log entry points: L = ln of every boundary of the tables they use, L = n ln2 (the pieces of the
    L / M tables, the normal range), their thresholds, L next to -1 and random L."""
    l0, l1 = [], []
    ln = lambda v: float(mpmath.log(mpf(v)))
    for e in range(-15, 15):
        for j in range(64):
            b = math.ldexp(1 + j / 64, e)
            for v in around(ln(b)):
                l0.append(v)
            if math.ldexp(1, -11) <= b <= 0.3001:
                for v in around(ln(b)):
                    l1.append(v)
    for e in range(-15, -3):
        for j in range(64):
            qb = math.ldexp(1 + j / 64, e)
            if qb < 0.0679:
                for v in around(ln(INV_E - mpf(qb))):
                    l1.append(v)
    ln2 = mpmath.log(2)
    for n in range(-1076, 1025):
        for v in around(float(n * ln2), 2):
            l0.append(v)
            if v <= -1:
                l1.append(v)
    for t in (ln(1e-4), float(14 * ln2), float(1024 * ln2), -708.0, -746.0, -745.1332191019412, 709.0,
              0.0, 1.0):
        for v in around(t, 3):
            l0.append(v)
    for t in (-1.03, float(mpmath.log(INV_E - mpf("0.0101"))), ln(0.3), float(-10 * ln2), -667.0,
              -2.0, -745.2):
        for v in around(t, 3):
            l1.append(v)
    for n in range(0, 60):
        l0 += [math.ldexp(1, -n), -math.ldexp(1, -n)]
    v = -1.0
    for _ in range(2000):
        l1.append(v)
        v = math.nextafter(v, -math.inf)
    for _ in range(10000):
        l0.append(rng.uniform(-750.0, 750.0))
        l1.append(rng.uniform(-750.0, -1.0))
        l1.append(-1.0 - math.exp(rng.uniform(math.log(1e-16), math.log(1.0))))
    for L in l0:
        rec_l(out, 4, L)
    for L in l1:
        rec_l(out, 5, L)


if __name__ == "__main__":
    main()
