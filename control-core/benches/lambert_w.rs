//! Lambert W: `control_core::lambert_w` against the `lambert_w` crate (Fukushima's piecewise
//! minimax, 2.x) on the same fixed inputs.
//!
//! Each benchmark evaluates a batch of 1024 inputs spread over the branch's domain; ns per call =
//! reported time / 1024. Run: `cargo bench -p control-core --bench lambert_w`
//! (and with `RUSTFLAGS="-C target-cpu=native"`).

#![allow(missing_docs)] // criterion_group!/criterion_main! generate undocumented items

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};

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
    fn log_uniform(&mut self, lo: f64, hi: f64) -> f64 {
        (lo.ln() + self.next() * (hi.ln() - lo.ln())).exp()
    }
}

/// W₀ inputs: 25% uniform in (−1/e, 0), 50% log-uniform in [1e−4, 1e4], 25% log-uniform in
/// [1e4, 1e300].
fn w0_inputs() -> Vec<f64> {
    let mut g = Lcg(1);
    (0..N)
        .map(|i| match i % 4 {
            0 => -INV_E * (1.0 - g.next()) * 0.999_999,
            1 | 2 => g.log_uniform(1e-4, 1e4),
            _ => g.log_uniform(1e4, 1e300),
        })
        .collect()
}

/// W₋₁ inputs: 50% uniform in (−1/e, 0), 50% −(log-uniform in [1e−300, 1e−1]).
fn wm1_inputs() -> Vec<f64> {
    let mut g = Lcg(2);
    (0..N)
        .map(|i| match i % 2 {
            0 => -INV_E * (1.0 - g.next()) * 0.999_999,
            _ => -g.log_uniform(1e-300, 1e-1),
        })
        .collect()
}

fn f32_of(v: &[f64]) -> Vec<f32> {
    v.iter()
        .map(|&x| (x as f32).clamp(-0.367_879_4, f32::MAX))
        .collect()
}

fn bench(c: &mut Criterion) {
    let x0 = w0_inputs();
    let xm = wm1_inputs();
    let x0f = f32_of(&x0);
    let xmf: Vec<f32> = f32_of(&xm).into_iter().map(|x| x.min(-1e-38)).collect();

    let mut g = c.benchmark_group("lambert_w");
    g.throughput(Throughput::Elements(N as u64));
    g.bench_function("w0_f64/ours", |b| {
        b.iter(|| {
            for &x in black_box(&x0) {
                black_box(control_core::lambert_w::w0(x).unwrap_or(f64::NAN));
            }
        })
    });
    g.bench_function("w0_f64/lambert_w", |b| {
        b.iter(|| {
            for &x in black_box(&x0) {
                black_box(lambert_w::lambert_w0(x));
            }
        })
    });
    g.bench_function("wm1_f64/ours", |b| {
        b.iter(|| {
            for &x in black_box(&xm) {
                black_box(control_core::lambert_w::wm1(x).unwrap_or(f64::NAN));
            }
        })
    });
    g.bench_function("wm1_f64/lambert_w", |b| {
        b.iter(|| {
            for &x in black_box(&xm) {
                black_box(lambert_w::lambert_wm1(x));
            }
        })
    });
    g.bench_function("w0_f32/ours", |b| {
        b.iter(|| {
            for &x in black_box(&x0f) {
                black_box(control_core::lambert_w::w0_f32(x).unwrap_or(f32::NAN));
            }
        })
    });
    g.bench_function("w0_f32/lambert_w", |b| {
        b.iter(|| {
            for &x in black_box(&x0f) {
                black_box(lambert_w::lambert_w0f(x));
            }
        })
    });
    g.bench_function("wm1_f32/ours", |b| {
        b.iter(|| {
            for &x in black_box(&xmf) {
                black_box(control_core::lambert_w::wm1_f32(x).unwrap_or(f32::NAN));
            }
        })
    });
    g.bench_function("wm1_f32/lambert_w", |b| {
        b.iter(|| {
            for &x in black_box(&xmf) {
                black_box(lambert_w::lambert_wm1f(x));
            }
        })
    });
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(std::time::Duration::from_millis(500))
        .measurement_time(std::time::Duration::from_secs(2));
    targets = bench
}
criterion_main!(benches);
