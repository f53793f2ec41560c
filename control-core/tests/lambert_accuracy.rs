//! Accuracy of every entry point of `control_core::lambert_w` against mpmath (50 digits), from two
//! committed data files; both tests fail when their file is missing, truncated or lacks an entry
//! point:
//!
//! - `tests/data/lambert_reference.bin` (`tools/lambert_reference.py`): 25-byte records
//!   (tag = kind·16 + region, then the bits of x, of the exact W rounded to f64 (hi) and of the rest
//!   (lo), little-endian), random points over every entry point's domain by region;
//! - `tests/data/lambert_dense.bin` (`tools/lambert_dense.py`, compact delta format, see
//!   [`read_compact`]): points packed at every table-piece, binade and exponent boundary and at
//!   every region threshold, for every entry point.
//!
//! Asserts max error ≤ 2 ulp for every entry point: `w0`, `wm1`, the branch-distance entry points
//! (input q, exact W(q − 1/e)) and the log-argument entry points (input L, exact W₀(e^L) or
//! W₋₁(−e^L)) in f64 ulp, `w0_f32` and `wm1_f32` in f32 ulp; prints the maxima per region.

use control_core::lambert_w::{
    w0, w0_f32, w0_from_branch_distance, w0_of_exp, wm1, wm1_f32, wm1_from_branch_distance,
    wm1_of_neg_exp,
};

const KINDS: [&str; 8] = [
    "w0",
    "wm1",
    "w0_f32",
    "wm1_f32",
    "w0_of_exp",
    "wm1_of_neg_exp",
    "w0_from_q",
    "wm1_from_q",
];
/// Region names (see `tools/lambert_reference.py`). For the q entry points regions 1, 6 and 5 are
/// q < 0.0101, q in [0.0101, 0.1] and larger q; for the log entry points 4 is |L| > 700.
const REGIONS: [&str; 16] = [
    "1000 values above -1/e",
    "-1/e + [1e-15, 1e-3]",
    "|x| in [1e-300, 1e-3]",
    "subnormal",
    "large |w|",
    "log-uniform",
    "uniform",
    "random bits",
    "q within 4e-6 of 1/e",
    "q near 1/e, |x| 4e-6..1e-3",
    "q in [5e-324, 1e-15]",
    "q in [1, f64::MAX]",
    "L near -1 / L < -746",
    "L in [-800, -600] etc.",
    "|L| in [1e3, 1e300]",
    "boundaries (dense)",
];
/// The bound, in ulp, for every entry point.
const BOUND: f64 = 2.0;

/// One reference point: the entry point (`kind`), the region, the input, and the exact W as
/// hi + lo_units·s with s = [`spacing`]`(hi)`.
struct Record {
    kind: usize,
    region: usize,
    x: f64,
    hi: f64,
    lo_units: f64,
}

/// The spacing of doubles at hi (for |hi| in [2ᵉ, 2ᵉ⁺¹), 2^(e − 52); 2⁻¹⁰⁷⁴ for subnormal hi).
fn spacing(hi: f64) -> f64 {
    let biased = ((hi.to_bits() >> 52) & 0x7ff).max(1);
    pow2(i32::try_from(biased).unwrap() - 1075)
}

/// Spacing of floats with `mant_bits` fraction bits and minimum normal exponent `emin` at the
/// exact value hi + lo (lo of sign `lo_sign`).
fn ulp(hi: f64, lo_sign: f64, mant_bits: i32, emin: i32) -> f64 {
    let a = hi.abs();
    let mut e = i32::try_from((a.to_bits() >> 52) & 0x7ff).unwrap() - 1023;
    if a.to_bits() & ((1u64 << 52) - 1) == 0 && lo_sign != 0.0 && (lo_sign < 0.0) != (hi < 0.0) {
        e -= 1; // hi is a power of two rounded up from below
    }
    if e < emin {
        e = emin;
    }
    pow2(e - mant_bits)
}

/// 2^n for −1074 ≤ n ≤ 1023, exactly (`powi` underflows through 1/2^−n for n < −1023).
fn pow2(n: i32) -> f64 {
    if n >= -1022 {
        f64::from_bits(u64::try_from(n + 1023).unwrap() << 52)
    } else {
        f64::from_bits(1u64 << u32::try_from(n + 1074).unwrap())
    }
}

/// Reads a data file; a missing file is a failure, not a skip.
fn read(name: &str) -> Vec<u8> {
    let path = format!("{}/tests/data/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read(&path).unwrap_or_else(|e| {
        panic!("{path}: {e} (generate it with control-core/tools/lambert_*.py; it is committed)")
    })
}

/// The 25-byte records of `tools/lambert_reference.py`.
fn read_flat(data: &[u8]) -> Vec<Record> {
    assert_eq!(data.len() % 25, 0, "truncated reference file");
    data.chunks_exact(25)
        .map(|rec| {
            let word = |i: usize| {
                f64::from_bits(u64::from_le_bytes(
                    rec[1 + 8 * i..9 + 8 * i].try_into().unwrap(),
                ))
            };
            let (x, hi, lo) = (word(0), word(1), word(2));
            Record {
                kind: usize::from(rec[0] / 16),
                region: usize::from(rec[0] % 16),
                x,
                hi,
                lo_units: lo / spacing(hi),
            }
        })
        .collect()
}

/// The compact format of `tools/lambert_dense.py` (`encode` there): b"LWD1", u32 LE section
/// count; per section a tag byte (kind·16 + region), a u32 LE record count, and per record three
/// zigzag LEB128 integers: the delta of the bits of x, the delta of the bits of hi (both from the
/// previous record, starting at 0), and lo_q = (W − hi)/spacing(hi)·2³¹ rounded.
fn read_compact(data: &[u8]) -> Vec<Record> {
    assert_eq!(
        data.get(..4),
        Some(&b"LWD1"[..]),
        "not a compact reference file"
    );
    let mut pos = 4;
    let u32_at = |pos: &mut usize| {
        let v = u32::from_le_bytes(data[*pos..*pos + 4].try_into().unwrap());
        *pos += 4;
        v
    };
    let sections = u32_at(&mut pos);
    let varint = |pos: &mut usize| -> i64 {
        let mut z = 0u64;
        for shift in (0..64).step_by(7) {
            let b = data[*pos];
            *pos += 1;
            z |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                break;
            }
        }
        ((z >> 1) as i64) ^ -((z & 1) as i64)
    };
    let mut out = Vec::new();
    for _ in 0..sections {
        let tag = data[pos];
        pos += 1;
        let n = u32_at(&mut pos);
        let (mut xb, mut hb) = (0u64, 0u64);
        for _ in 0..n {
            xb = xb.wrapping_add_signed(varint(&mut pos));
            hb = hb.wrapping_add_signed(varint(&mut pos));
            let lo_q = varint(&mut pos);
            out.push(Record {
                kind: usize::from(tag / 16),
                region: usize::from(tag % 16),
                x: f64::from_bits(xb),
                hi: f64::from_bits(hb),
                lo_units: lo_q as f64 / 2_147_483_648.0,
            });
        }
    }
    assert_eq!(
        pos,
        data.len(),
        "trailing bytes in a compact reference file"
    );
    out
}

/// Checks every record against the bound; requires at least `min_per_kind` points for every
/// entry point. Prints the maxima per entry point and region.
fn check(name: &str, records: &[Record], min_per_kind: usize) {
    // [kind][region] -> (count, max err, worst x)
    let mut stats = [[(0usize, 0f64, 0f64); 16]; 8];
    for r in records {
        let (got, mant_bits, emin) = match r.kind {
            0 => (w0(r.x), 52, -1022),
            1 => (wm1(r.x), 52, -1022),
            2 => (w0_f32(r.x as f32).map(f64::from), 23, -126),
            3 => (wm1_f32(r.x as f32).map(f64::from), 23, -126),
            4 => (w0_of_exp(r.x), 52, -1022),
            5 => (wm1_of_neg_exp(r.x), 52, -1022),
            6 => (w0_from_branch_distance(r.x), 52, -1022),
            7 => (wm1_from_branch_distance(r.x), 52, -1022),
            k => panic!("{name}: bad kind {k}"),
        };
        let s = spacing(r.hi);
        let u = ulp(r.hi, r.lo_units, mant_bits, emin);
        let err = match got {
            // (g − hi)/s is exact (a difference of nearby doubles over a power of two).
            Some(g) if g.is_finite() => ((g - r.hi) / s - r.lo_units).abs() * (s / u),
            _ => f64::INFINITY,
        };
        let st = &mut stats[r.kind][r.region];
        st.0 += 1;
        if err > st.1 || st.0 == 1 {
            st.1 = err;
            st.2 = r.x;
        }
    }
    let mut failures = Vec::new();
    println!("{name}:");
    println!(
        "{:<16} {:<28} {:>8} {:>9}  worst x",
        "function", "region", "points", "max ulp"
    );
    for (k, regions) in stats.iter().enumerate() {
        let total: usize = regions.iter().map(|s| s.0).sum();
        let worst = regions.iter().map(|s| s.1).fold(0.0, f64::max);
        for (r, s) in regions.iter().enumerate() {
            if s.0 > 0 {
                println!(
                    "{:<16} {:<28} {:>8} {:>9.3}  {:e}",
                    KINDS[k], REGIONS[r], s.0, s.1, s.2
                );
            }
        }
        println!("{:<16} {:<28} {:>8} {:>9.3}", KINDS[k], "ALL", total, worst);
        if total < min_per_kind {
            failures.push(format!("{}: {total} points < {min_per_kind}", KINDS[k]));
        }
        if worst.is_nan() || worst > BOUND {
            failures.push(format!("{}: {worst} ulp > {BOUND}", KINDS[k]));
        }
    }
    assert!(failures.is_empty(), "{name}: {failures:?}");
}

#[test]
fn lambert_w_matches_mpmath_reference() {
    let records = read_flat(&read("lambert_reference.bin"));
    assert!(records.len() >= 640_000, "{} records", records.len());
    check("lambert_reference.bin", &records, 10_000);
}

#[test]
fn lambert_w_matches_dense_boundary_reference() {
    let records = read_compact(&read("lambert_dense.bin"));
    assert!(records.len() >= 600_000, "{} records", records.len());
    check("lambert_dense.bin", &records, 10_000);
}

/// `lambert_w::micromath_f32` (feature `micromath`: W computed in f32 with micromath's `ln`)
/// against the f32 records (kinds `w0_f32`, `wm1_f32`) of both reference files: max and mean
/// error in f32 ulp per branch and method region, printed. The bounds were set from the method's
/// error analysis (module docs of `micromath_f32`) before the run: the two series regions use no
/// elementary function (≤ 4 ulp); the log-form region inherits micromath's `ln` error (~6e−5
/// absolute, δ·|w/(1 + w)| in w), bounded at 3e−4·|w/(1 + w)| + 4 ulp per point and reported
/// in ulp.
#[cfg(feature = "micromath")]
#[test]
fn micromath_f32_lambert_w_against_mpmath() {
    use control_core::lambert_w::micromath_f32 as mm;
    const REGION: [&str; 3] = ["Taylor |x| <= 1/16", "branch series", "log form"];
    let mut records = read_flat(&read("lambert_reference.bin"));
    records.extend(read_compact(&read("lambert_dense.bin")));
    // [branch][region] -> (count, sum ulp, max ulp, worst x, over-bound count)
    let mut stats = [[(0usize, 0f64, 0f64, 0f64, 0usize); 3]; 2];
    for r in records.iter().filter(|r| r.kind == 2 || r.kind == 3) {
        let branch = r.kind - 2;
        let x = r.x as f32;
        let q = f64::from(x) + 1.0 / std::f64::consts::E;
        let region = if branch == 0 && x.abs() <= mm::X_TAYLOR {
            0
        } else if q < f64::from(mm::Q_SERIES) {
            1
        } else {
            2
        };
        let got = if branch == 0 { mm::w0(x) } else { mm::wm1(x) };
        let s = spacing(r.hi);
        let u = ulp(r.hi, r.lo_units, 23, -126);
        let err = match got.map(f64::from) {
            Some(g) if g.is_finite() => ((g - r.hi) / s - r.lo_units).abs() * (s / u),
            // ±∞ where the exact W is ±∞ (x = 0⁻ for W₋₁) is exact.
            Some(g) if g == r.hi => 0.0,
            _ => f64::INFINITY,
        };
        let w = r.hi;
        let bound = if region == 2 {
            3e-4 * (w / (1.0 + w)).abs() / u + 4.0
        } else {
            4.0
        };
        let st = &mut stats[branch][region];
        st.0 += 1;
        st.1 += err;
        if err > st.2 || st.0 == 1 {
            st.2 = err;
            st.3 = r.x;
        }
        if err.is_nan() || err > bound {
            st.4 += 1;
        }
    }
    println!("micromath_f32 against mpmath (both reference files, f32 records):");
    println!(
        "{:<6} {:<20} {:>8} {:>12} {:>12}  worst x",
        "branch", "region", "points", "mean ulp", "max ulp"
    );
    let mut failures = Vec::new();
    for (b, regions) in stats.iter().enumerate() {
        for (g, st) in regions.iter().enumerate() {
            if st.0 == 0 {
                continue;
            }
            let name = ["W0", "W-1"][b];
            println!(
                "{:<6} {:<20} {:>8} {:>12.2} {:>12.2}  {:e}",
                name,
                REGION[g],
                st.0,
                st.1 / st.0 as f64,
                st.2,
                st.3
            );
            if st.4 > 0 {
                failures.push(format!(
                    "{name} {}: {} points over the bound",
                    REGION[g], st.4
                ));
            }
        }
    }
    assert!(stats[0].iter().map(|s| s.0).sum::<usize>() >= 10_000);
    assert!(stats[1].iter().map(|s| s.0).sum::<usize>() >= 10_000);
    assert!(failures.is_empty(), "{failures:?}");
}

/// `lambert_w::compact_f32` (f32 tables, no micromath) against the f32 records (kinds `w0_f32`,
/// `wm1_f32`) of both reference files: count, mean and max error in f32 ulp and the worst x per
/// branch and method region, printed; asserts max ≤ 4 ulp in every region.
#[cfg(feature = "micromath")]
#[test]
fn compact_f32_lambert_w_against_mpmath() {
    use control_core::lambert_w::compact_f32 as cf;
    const REGION: [&str; 5] = [
        "Taylor |x| < 2^-5",
        "branch series",
        "x in [-0.3125,-0.25]",
        "x tables",
        "L table",
    ];
    const COMPACT_BOUND: f64 = 4.0;
    let mut records = read_flat(&read("lambert_reference.bin"));
    records.extend(read_compact(&read("lambert_dense.bin")));
    // [branch][region] -> (count, sum ulp, max ulp, worst x)
    let mut stats = [[(0usize, 0f64, 0f64, 0f64); 5]; 2];
    for r in records.iter().filter(|r| r.kind == 2 || r.kind == 3) {
        let branch = r.kind - 2;
        let x = r.x as f32;
        let region = if branch == 0 {
            if x.abs() < cf::X_TAYLOR {
                0
            } else if x < cf::X_BRANCH_W0 {
                1
            } else if x <= cf::X_BRANCH_WM1 {
                2
            } else if x < cf::X_LOG_W0 {
                3
            } else {
                4
            }
        } else if x <= cf::X_BRANCH_WM1 {
            1
        } else if -x >= cf::X_LOG_WM1 {
            3
        } else {
            4
        };
        let got = if branch == 0 { cf::w0(x) } else { cf::wm1(x) };
        let s = spacing(r.hi);
        let u = ulp(r.hi, r.lo_units, 23, -126);
        let err = match got.map(f64::from) {
            Some(g) if g.is_finite() => ((g - r.hi) / s - r.lo_units).abs() * (s / u),
            // ±∞ where the exact W is ±∞ (x = 0⁻ for W₋₁, +∞ for W₀) is exact.
            Some(g) if g == r.hi => 0.0,
            _ => f64::INFINITY,
        };
        let st = &mut stats[branch][region];
        st.0 += 1;
        st.1 += err;
        if err > st.2 || st.0 == 1 {
            st.2 = err;
            st.3 = r.x;
        }
    }
    println!("compact_f32 against mpmath (both reference files, f32 records):");
    println!(
        "{:<6} {:<22} {:>8} {:>9} {:>9}  worst x",
        "branch", "region", "points", "mean ulp", "max ulp"
    );
    let mut failures = Vec::new();
    for (b, regions) in stats.iter().enumerate() {
        for (g, st) in regions.iter().enumerate() {
            if st.0 == 0 {
                continue;
            }
            let name = ["W0", "W-1"][b];
            println!(
                "{:<6} {:<22} {:>8} {:>9.3} {:>9.3}  {:e}",
                name,
                REGION[g],
                st.0,
                st.1 / st.0 as f64,
                st.2,
                st.3
            );
            if st.2.is_nan() || st.2 > COMPACT_BOUND {
                failures.push(format!("{name} {}: {} ulp", REGION[g], st.2));
            }
        }
    }
    assert!(stats[0].iter().map(|s| s.0).sum::<usize>() >= 10_000);
    assert!(stats[1].iter().map(|s| s.0).sum::<usize>() >= 10_000);
    assert!(failures.is_empty(), "{failures:?}");
}
