//! ns per tick of the arrival servo in f64 (libm) and in f32 (feature
//! `micromath`), side by side in one run, on the same states: a ball-blocking-like pose target
//! re-aimed every tick, times to go from 5 ms to 2 s, states on both sides and moving both ways.
//!
//! `cargo bench -p control-core --features micromath --bench servo_f32`

#![allow(missing_docs)] // criterion_group!/criterion_main! generate undocumented items

use std::hint::black_box;

use control_core::servo::{ArrivalServo, JointServo, JointState, ServoConfig};
use control_core::servo_f32::ArrivalServoF32;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};

/// 256 (time, state) pairs from a fixed generator, for a pose target at 0.8 rad due at t = 2 s.
fn ticks() -> Vec<(f64, JointState)> {
    let mut state = 0x2545_F491_4F6C_DD1Du64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state >> 11) as f64 / (1u64 << 53) as f64
    };
    (0..256)
        .map(|_| {
            let now = 2.0 - (0.005 + 1.995 * next());
            let s = JointState {
                position_rad: -2.0 + 4.0 * next(),
                velocity_rad_s: -10.0 + 20.0 * next(),
            };
            (now, s)
        })
        .collect()
}

fn run<S: JointServo>(servo: &mut S, ticks: &[(f64, JointState)]) {
    for &(now, s) in ticks {
        black_box(servo.tick(black_box(now), black_box(s), 0.0));
    }
}

fn bench(c: &mut Criterion) {
    let ticks = ticks();
    let config = ServoConfig {
        inertia_kgm2: 0.67,
        torque_limit_nm: 400.0,
        ..ServoConfig::default()
    };
    let mut f64_servo = ArrivalServo::new(config).expect("valid config");
    let mut f32_servo = ArrivalServoF32::new(config).expect("valid config");
    f64_servo.set_pose_target(0.8, 0.05, 2.0).expect("finite");
    f32_servo.set_pose_target(0.8, 0.05, 2.0).expect("finite");
    let mut group = c.benchmark_group("servo_tick");
    group.throughput(Throughput::Elements(ticks.len() as u64));
    group.bench_function("ArrivalServo (f64, libm)", |b| {
        b.iter(|| run(&mut f64_servo, &ticks))
    });
    group.bench_function("ArrivalServoF32 (f32)", |b| {
        b.iter(|| run(&mut f32_servo, &ticks))
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
