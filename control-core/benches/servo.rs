//! ns per call of the gain solve and of one arrival-servo tick, on a fixed set of states that
//! covers both branches, the crossing case and the clamp near the deadline.
//!
//! `cargo bench -p control-core --bench servo`

#![allow(missing_docs)] // criterion_group!/criterion_main! generate undocumented items

use std::hint::black_box;

use control_core::gains::{ArrivalProblem, solve_arrival_gains};
use control_core::servo::{ArrivalPlan, ArrivalServo, JointServo, JointState, ServoConfig};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};

/// 256 problems from a fixed generator: start offsets, velocities towards and away, arrivals on
/// the same side and across the setpoint, times to go from 5 ms to 2 s.
fn problems() -> Vec<ArrivalProblem> {
    let mut state = 0x2545_F491_4F6C_DD1Du64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state >> 11) as f64 / (1u64 << 53) as f64
    };
    (0..256)
        .map(|_| ArrivalProblem {
            inertia_kgm2: 0.67,
            position_rad: -1.0 + 2.0 * next(),
            velocity_rad_s: -3.0 + 6.0 * next(),
            setpoint_rad: 0.3,
            arrival_rad: 0.3 + (-0.2 + 0.4 * next()),
            time_to_go_s: 0.005 + 2.0 * next(),
        })
        .collect()
}

fn bench(c: &mut Criterion) {
    let problems = problems();
    let solvable = problems
        .iter()
        .filter(|p| solve_arrival_gains(p).is_ok())
        .count();
    println!(
        "gain solve inputs: {solvable} of {} solvable",
        problems.len()
    );
    let mut group = c.benchmark_group("servo");
    group.throughput(Throughput::Elements(problems.len() as u64));
    group.bench_function("solve_arrival_gains", |b| {
        b.iter(|| {
            for p in &problems {
                let _ = black_box(solve_arrival_gains(black_box(p)));
            }
        })
    });
    let config = ServoConfig {
        inertia_kgm2: 0.67,
        torque_limit_nm: 400.0,
        ..ServoConfig::default()
    };
    let mut servo = ArrivalServo::new(config).expect("valid config");
    group.bench_function("arrival_servo_tick", |b| {
        b.iter(|| {
            for p in &problems {
                let _ = servo.set_plan(
                    ArrivalPlan {
                        setpoint_rad: p.setpoint_rad,
                        arrival_rad: p.arrival_rad,
                        deadline_s: p.time_to_go_s,
                    },
                    0.0,
                );
                let state = JointState {
                    position_rad: p.position_rad,
                    velocity_rad_s: p.velocity_rad_s,
                };
                black_box(servo.tick(0.0, black_box(state), black_box(1.0)));
            }
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
