//! ns per control tick of Kenwright's hand controller (`Reach::tick`: forward kinematics, the
//! hand Jacobian, the composite inertias, the null-space projection with either projector,
//! gravity) on a 3-link arm, and per CCD IK solve (`ccd_ik`) on the same arm.
//!
//! `cargo bench -p control-core --bench reach -- --warm-up-time 1 --measurement-time 3`

#![allow(missing_docs)] // criterion_group!/criterion_main! generate undocumented items

use std::hint::black_box;

use control_core::articulated::{Chain, LinkSpec};
use control_core::reach::{Projector, Reach, ReachConfig, ccd_ik};
use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use nalgebra::Vector3;

/// A box link `length` long along its x axis, hinged at its frame origin.
fn link(offset: [f64; 3], rpy: [f64; 3], axis: [f64; 3], mass: f64, length: f64) -> LinkSpec {
    let a = 0.08;
    let k = mass / 12.0;
    LinkSpec {
        origin_xyz_m: offset,
        origin_rpy_rad: rpy,
        axis,
        mass_kg: mass,
        com_m: [length / 2.0, 0.0, 0.0],
        inertia_kgm2: [
            k * 2.0 * a * a,
            0.0,
            0.0,
            k * (length * length + a * a),
            0.0,
            k * (length * length + a * a),
        ],
    }
}

/// The articulated bench's 3-link arm: shoulder yaw, shoulder pitch, elbow.
fn arm() -> Chain<3> {
    Chain::new(&[
        link([0.0; 3], [0.0; 3], [0.0, 0.0, 1.0], 3.0, 0.1),
        link([0.1, 0.0, 0.0], [0.0; 3], [0.0, 1.0, 0.0], 2.0, 0.4),
        link([0.4, 0.0, 0.0], [0.0, 0.0, 0.3], [0.0, 1.0, 0.0], 1.5, 0.35),
    ])
    .expect("valid arm")
}

fn bench(c: &mut Criterion) {
    let chain = arm();
    let hand = Vector3::new(0.35, 0.0, 0.0);
    let q = [0.3, -0.4, 0.9];
    let qd = [0.2, -0.1, 0.3];
    let target = Vector3::new(0.5, 0.2, 0.3);
    let gravity = Vector3::new(0.0, 0.0, -9.81);
    let mut group = c.benchmark_group("reach_tick_3_links");
    for projector in [Projector::PseudoInverse, Projector::DynamicallyConsistent] {
        let reach = Reach::new(ReachConfig {
            projector,
            hand_link: 2,
            hand_point_m: hand.into(),
            stiffness_n_per_m: 500.0,
            damping_ns_per_m: 50.0,
            posture_stiffness_nm_per_rad: 20.0,
            posture_damping_nms_per_rad: 3.0,
            gravity_compensation: true,
        })
        .expect("valid config");
        group.bench_function(BenchmarkId::from_parameter(format!("{projector:?}")), |b| {
            b.iter(|| {
                reach
                    .tick(
                        black_box(&chain),
                        black_box(&q),
                        black_box(&qd),
                        black_box(&target),
                        &Vector3::zeros(),
                        black_box(&[0.0; 3]),
                        &gravity,
                    )
                    .expect("tick")
            })
        });
    }
    group.finish();
    // A reachable target (the hand at another configuration), 1e-4 m, from a fixed start.
    let goal = chain
        .forward_kinematics(&[1.2, -0.9, 1.4])
        .and_then(|k| k.point_in_world(2, &hand))
        .expect("reachable target");
    let ik = ccd_ik(&chain, &q, 2, &hand, &goal, 100, 1e-4).expect("ccd");
    assert!(ik.converged(), "{ik:?}");
    println!("ccd_ik: {} sweeps to {:.1e} m", ik.sweeps, ik.residual_m);
    c.bench_function("ccd_ik_3_links", |b| {
        b.iter(|| {
            ccd_ik(
                black_box(&chain),
                black_box(&q),
                2,
                &hand,
                black_box(&goal),
                100,
                1e-4,
            )
            .expect("ccd")
        })
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
