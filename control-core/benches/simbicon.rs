//! ns per control tick of SIMBICON's basic walk (`Simbicon::tick`: input validation, the state
//! machine, the balance feedback, six PD torques, the stance hip's composition and the limits),
//! with SIMBICON's fixed gains and with the analytic gains for 200 Hz (the same work per tick:
//! the analytic gains are solved when the controller is built), over 64 walking-like states that
//! cycle through all four states.
//!
//! `cargo bench -p control-core --bench simbicon -- --warm-up-time 1 --measurement-time 3`

#![allow(missing_docs)] // criterion_group!/criterion_main! generate undocumented items

use std::hint::black_box;

use control_core::simbicon::{Gains, Simbicon, SimbiconConfig, WalkerState};
use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};

/// A fixed generator of numbers in [0, 1).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> f64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 >> 11) as f64 / (1u64 << 53) as f64
    }

    fn range(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * self.next()
    }
}

/// 64 walking-like inputs 5 ms apart; the feet touch down now and then so that contact states end.
fn states() -> Vec<WalkerState> {
    let mut rng = Rng(0x2545_F491_4F6C_DD1D);
    (0..64)
        .map(|k| WalkerState {
            time_s: k as f64 / 200.0,
            torso_pitch_rad: rng.range(-0.2, 0.2),
            torso_rate_rad_s: rng.range(-1.0, 1.0),
            joint_angle_rad: std::array::from_fn(|_| rng.range(-1.2, 0.6)),
            joint_rate_rad_s: std::array::from_fn(|_| rng.range(-3.0, 3.0)),
            thigh_pitch_rad: std::array::from_fn(|_| rng.range(-0.6, 0.6)),
            thigh_rate_rad_s: std::array::from_fn(|_| rng.range(-3.0, 3.0)),
            com_ahead_of_ankle_m: std::array::from_fn(|_| rng.range(-0.4, 0.4)),
            com_velocity_m_s: rng.range(0.0, 1.2),
            foot_contact: std::array::from_fn(|_| rng.next() < 0.3),
        })
        .collect()
}

fn bench(c: &mut Criterion) {
    let states = states();
    let mut group = c.benchmark_group("simbicon");
    for (label, gains) in [
        ("tick_fixed", Gains::SIMBICON),
        ("tick_analytic_200hz", Gains::analytic(1.0 / 200.0)),
    ] {
        let config = SimbiconConfig {
            gains,
            ..SimbiconConfig::default()
        };
        let fresh = Simbicon::new(config).expect("valid config");
        let mut walker = fresh;
        let mut i = 0;
        group.bench_function(BenchmarkId::new(label, "7-link"), |b| {
            b.iter(|| {
                i += 1;
                if i == states.len() {
                    // Time restarts: so does the controller.
                    i = 0;
                    walker = fresh;
                }
                black_box(walker.tick(black_box(&states[i])))
            })
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
