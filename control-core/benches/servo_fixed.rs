//! ns per tick of the f64 arrival servo and of its fixed-point torque law, side by side in one
//! run, on the same 256 arm states (the arm scene's inertia, 200 Hz, 1000 N·m): the f64 servo
//! re-solves every tick; the fixed-point one at its default decimation (a solve every 4th tick)
//! and at decimation 1 (a solve every tick), and `law_only` reuses its gains (an unbounded
//! decimation: the fixed-point law alone, the cost of the ticks between solves).
//!
//! `cargo bench -p control-core --bench servo_fixed`

#![allow(missing_docs)] // criterion_group!/criterion_main! generate undocumented items

use std::hint::black_box;

use control_core::servo::{ArrivalServo, JointServo, JointState, ServoConfig};
use control_core::servo_fixed::{ArrivalServoFixed, DEFAULT_GAIN_DECIMATION};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};

/// 256 arm states from a fixed generator: angles over ±π, velocities up to ±20 rad/s.
fn states() -> Vec<JointState> {
    let mut state = 0x2545_F491_4F6C_DD1Du64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state >> 11) as f64 / (1u64 << 53) as f64
    };
    (0..256)
        .map(|_| JointState {
            position_rad: std::f64::consts::PI * (2.0 * next() - 1.0),
            velocity_rad_s: 20.0 * (2.0 * next() - 1.0),
        })
        .collect()
}

fn bench(c: &mut Criterion) {
    let states = states();
    let config = ServoConfig {
        inertia_kgm2: 0.667,
        torque_limit_nm: 1000.0,
        stability_margin: 0.8,
        ..ServoConfig::default()
    };
    let mut group = c.benchmark_group("servo_fixed");
    group.throughput(Throughput::Elements(states.len() as u64));
    // The same plan for every servo: the first ball's pose, 0.6 s away.
    let deadline_s = 0.6;
    let mut f64_servo = ArrivalServo::new(config).expect("valid config");
    let _ = f64_servo.set_pose_target(0.5, 0.05, deadline_s);
    group.bench_function("f64_tick", |b| {
        b.iter(|| {
            for s in &states {
                black_box(f64_servo.tick(0.0, black_box(*s), black_box(-6.5)));
            }
        })
    });
    for (name, decimation) in [
        ("fixed_tick_decimation_4", DEFAULT_GAIN_DECIMATION),
        ("fixed_tick_decimation_1", 1),
        ("fixed_law_only", u32::MAX),
    ] {
        let mut servo = ArrivalServoFixed::new(config, decimation).expect("fits the formats");
        let _ = servo.set_pose_target(0.5, 0.05, deadline_s);
        // Solve once before measuring: with u32::MAX only the law runs from here on.
        let _ = servo.tick(0.0, states[0], 0.0);
        group.bench_function(name, |b| {
            b.iter(|| {
                for s in &states {
                    black_box(servo.tick(0.0, black_box(*s), black_box(-6.5)));
                }
            })
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
