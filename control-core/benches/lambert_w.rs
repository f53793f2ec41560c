//! Lambert W: `control_core::lambert_w` against the `lambert_w` crate (Fukushima's piecewise
//! minimax, 2.x), side by side on the same fixed inputs, one criterion group per region and
//! branch, f64 and f32.
//!
//! Each benchmark evaluates a batch of 1024 inputs; criterion reports the time per batch and the
//! throughput (ns per call = time / 1024). Groups (`<branch>_<precision>/<region>`, functions
//! `ours` and `lambert_w`):
//!
//! - `branch`: x = −1/e + d, d log-uniform in [1e−16, 1e−3] (f32: [1e−7, 1e−3], f32 cannot get
//!   closer);
//! - `mid`: W₀ half uniform in (−1/e + 1e−3, −1e−3), half log-uniform in [1e−3, 1e3]; W₋₁
//!   uniform in (−1/e + 1e−3, −1e−3);
//! - `small`: W₀ ±(log-uniform in [1e−300, 1e−3]) (f32: [1e−37, 1e−3]); W₋₁ −(log-uniform in
//!   [1e−300, 1e−3]) (f32: [1e−37, 1e−3]);
//! - `tiny` (W₋₁ only): −(log-uniform in [4.9e−324, 1e−300]), two thirds subnormal (f32:
//!   [1.4e−45, 1e−37], three quarters subnormal);
//! - `large` (W₀ only): log-uniform in [1e3, 1e300] (f32: [1e3, 3e38]);
//! - `mixed`: the regions of the branch interleaved, equally weighted (the whole domain).
//!
//! After the criterion groups, a side-by-side table times ours and `lambert_w` in alternation on
//! each group's inputs (medians of 400 rounds and of the per-round ratios): on a shared machine
//! the load changes between criterion's separate measurements, the alternation sees both under
//! the same load.
//!
//! Run: `cargo bench -p control-core --bench lambert_w` (shorter: append
//! `-- --warm-up-time 1 --measurement-time 3`; one group: append `-- wm1_f64/tiny`).

#![allow(missing_docs)] // criterion_group!/criterion_main! generate undocumented items

use std::hint::black_box;

use std::time::Instant;

use criterion::{Criterion, Throughput, criterion_group};

const N: usize = 1024;
const INV_E: f64 = 0.367_879_441_171_442_33;

/// Deterministic uniform numbers in [0, 1) (64-bit LCG, top 53 bits).
struct Lcg(u64);
impl Lcg {
    fn next(&mut self) -> f64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 11) as f64 / (1u64 << 53) as f64
    }
    fn uniform(&mut self, lo: f64, hi: f64) -> f64 {
        lo + self.next() * (hi - lo)
    }
    fn log_uniform(&mut self, lo: f64, hi: f64) -> f64 {
        (lo.ln() + self.next() * (hi.ln() - lo.ln())).exp()
    }
}

/// Which branch and precision a set of inputs is for.
#[derive(Clone, Copy, PartialEq)]
enum Kind {
    W0,
    Wm1,
}

/// A named region: its name and a generator of one input.
type Region = (&'static str, Box<dyn Fn(&mut Lcg) -> f64>);

/// The regions of one branch. f32 inputs use `single`.
fn regions(kind: Kind, single: bool) -> Vec<Region> {
    let mut out: Vec<Region> = Vec::new();
    let d_min = if single { 1e-7 } else { 1e-16 };
    out.push((
        "branch",
        Box::new(move |g: &mut Lcg| -INV_E + g.log_uniform(d_min, 1e-3)),
    ));
    match kind {
        Kind::W0 => out.push((
            "mid",
            Box::new(|g: &mut Lcg| {
                if g.next() < 0.5 {
                    g.uniform(-INV_E + 1e-3, -1e-3)
                } else {
                    g.log_uniform(1e-3, 1e3)
                }
            }),
        )),
        Kind::Wm1 => out.push((
            "mid",
            Box::new(|g: &mut Lcg| g.uniform(-INV_E + 1e-3, -1e-3)),
        )),
    }
    let s_min = if single { 1e-37 } else { 1e-300 };
    match kind {
        Kind::W0 => out.push((
            "small",
            Box::new(move |g: &mut Lcg| {
                let s = if g.next() < 0.5 { -1.0 } else { 1.0 };
                s * g.log_uniform(s_min, 1e-3)
            }),
        )),
        Kind::Wm1 => out.push((
            "small",
            Box::new(move |g: &mut Lcg| -g.log_uniform(s_min, 1e-3)),
        )),
    }
    match kind {
        Kind::W0 => {
            let hi = if single { 3e38 } else { 1e300 };
            out.push(("large", Box::new(move |g: &mut Lcg| g.log_uniform(1e3, hi))));
        }
        Kind::Wm1 => {
            let (lo, hi) = if single {
                (1.4e-45, 1e-37)
            } else {
                (4.9e-324, 1e-300)
            };
            out.push(("tiny", Box::new(move |g: &mut Lcg| -g.log_uniform(lo, hi))));
        }
    }
    out
}

/// 1024 inputs from one generator; f32 inputs rounded to f32 and kept inside the domain.
fn inputs(f: &dyn Fn(&mut Lcg) -> f64, seed: u64) -> Vec<f64> {
    let mut g = Lcg(seed);
    (0..N).map(|_| f(&mut g)).collect()
}

fn to_f32(v: &[f64], kind: Kind) -> Vec<f32> {
    v.iter()
        .map(|&x| {
            // The f32 nearest −1/e (0xbebc5ab2) is below −1/e: keep to the next one up.
            let y = (x as f32).max(f32::from_bits(0xbebc_5ab1));
            if kind == Kind::Wm1 { y.min(-1e-45) } else { y }
        })
        .collect()
}

/// The input sets of every group: (group name, f64 inputs, kind, single).
fn groups() -> Vec<(String, Vec<f64>, Kind, bool)> {
    let mut out = Vec::new();
    for kind in [Kind::W0, Kind::Wm1] {
        let name = if kind == Kind::W0 { "w0" } else { "wm1" };
        for single in [false, true] {
            let regs = regions(kind, single);
            let mut sets: Vec<(&str, Vec<f64>)> = regs
                .iter()
                .enumerate()
                .map(|(i, (r, f))| (*r, inputs(f.as_ref(), 1 + i as u64)))
                .collect();
            // The whole domain: the regions interleaved.
            let k = sets.len();
            let mixed: Vec<f64> = (0..N).map(|i| sets[i % k].1[i / k]).collect();
            sets.push(("mixed", mixed));
            for (region, xs) in sets {
                let prec = if single { "f32" } else { "f64" };
                out.push((format!("{name}_{prec}/{region}"), xs, kind, single));
            }
        }
    }
    out
}

/// One pass over a group's inputs.
type Pass<'a> = Box<dyn Fn() + 'a>;

/// One pass of ours and one of `lambert_w` over a group's inputs.
fn passes(xs: &[f64], kind: Kind, single: bool) -> (Pass<'_>, Pass<'_>) {
    if single {
        let xs: Vec<f32> = to_f32(xs, kind);
        let ys = xs.clone();
        match kind {
            Kind::W0 => (
                Box::new(move || {
                    for &x in black_box(&xs) {
                        black_box(control_core::lambert_w::w0_f32(x).unwrap_or(f32::NAN));
                    }
                }),
                Box::new(move || {
                    for &x in black_box(&ys) {
                        black_box(lambert_w::lambert_w0f(x));
                    }
                }),
            ),
            Kind::Wm1 => (
                Box::new(move || {
                    for &x in black_box(&xs) {
                        black_box(control_core::lambert_w::wm1_f32(x).unwrap_or(f32::NAN));
                    }
                }),
                Box::new(move || {
                    for &x in black_box(&ys) {
                        black_box(lambert_w::lambert_wm1f(x));
                    }
                }),
            ),
        }
    } else {
        match kind {
            Kind::W0 => (
                Box::new(move || {
                    for &x in black_box(xs) {
                        black_box(control_core::lambert_w::w0(x).unwrap_or(f64::NAN));
                    }
                }),
                Box::new(move || {
                    for &x in black_box(xs) {
                        black_box(lambert_w::lambert_w0(x));
                    }
                }),
            ),
            Kind::Wm1 => (
                Box::new(move || {
                    for &x in black_box(xs) {
                        black_box(control_core::lambert_w::wm1(x).unwrap_or(f64::NAN));
                    }
                }),
                Box::new(move || {
                    for &x in black_box(xs) {
                        black_box(lambert_w::lambert_wm1(x));
                    }
                }),
            ),
        }
    }
}

fn bench(c: &mut Criterion) {
    for (name, xs, kind, single) in groups() {
        let (ours, theirs) = passes(&xs, kind, single);
        let mut g = c.benchmark_group(name);
        g.throughput(Throughput::Elements(N as u64));
        g.bench_function("ours", |b| b.iter(&ours));
        g.bench_function("lambert_w", |b| b.iter(&theirs));
        g.finish();
    }
}

/// Side by side: ours and `lambert_w` timed in alternation (4 passes each, 400 rounds), so that
/// both see the same load on a shared machine; prints the medians (ns per call) and the median of
/// the per-round ratios. Criterion times each function over its own seconds, which a busy
/// neighbour can skew either way.
fn side_by_side() {
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    println!("\nside by side (ns per call, medians of 400 alternating rounds):");
    println!(
        "{:<20} {:>8} {:>10} {:>7}",
        "group", "ours", "lambert_w", "ratio"
    );
    for (name, xs, kind, single) in groups() {
        let (ours, theirs) = passes(&xs, kind, single);
        let (mut a, mut b, mut r) = (Vec::new(), Vec::new(), Vec::new());
        let time = |f: &dyn Fn()| {
            let t = Instant::now();
            for _ in 0..4 {
                f();
            }
            t.elapsed().as_secs_f64() * 1e9 / (4 * N) as f64
        };
        for _ in 0..400 {
            let (ta, tb) = (time(&ours), time(&theirs));
            a.push(ta);
            b.push(tb);
            r.push(ta / tb);
        }
        let (ma, mb, mr) = (median(&mut a), median(&mut b), median(&mut r));
        println!("{name:<20} {ma:>8.2} {mb:>10.2} {mr:>7.2}");
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(std::time::Duration::from_millis(500))
        .measurement_time(std::time::Duration::from_secs(2));
    targets = bench
}

fn main() {
    benches();
    side_by_side();
    Criterion::default().configure_from_args().final_summary();
}
