//! ns per control tick of Kenwright's hand controller (`Reach::tick`: the tree's kinematics, the
//! hand's frame pose and Jacobian, CRBA, generalized gravity, the null-space projection with
//! either projector) on a 3-link arm as a fixed-base kinematic tree, and per CCD IK solve
//! (`ccd_ik`) on the same arm.
//!
//! `cargo bench -p control-core --bench reach -- --warm-up-time 1 --measurement-time 3`

#![allow(missing_docs)] // criterion_group!/criterion_main! generate undocumented items

use std::hint::black_box;

use control_core::articulated::LinkSpec;
use control_core::reach::{Projector, Reach, ReachConfig, ccd_ik};
use control_core::tree::{BaseKind, Inertial, JointSpec, JointType, Placement, Tree, TreeSpec};
use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use nalgebra::{Isometry3, Vector3};

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
fn arm_links() -> [LinkSpec; 3] {
    [
        link([0.0; 3], [0.0; 3], [0.0, 0.0, 1.0], 3.0, 0.1),
        link([0.1, 0.0, 0.0], [0.0; 3], [0.0, 1.0, 0.0], 2.0, 0.4),
        link([0.4, 0.0, 0.0], [0.0, 0.0, 0.3], [0.0, 1.0, 0.0], 1.5, 0.35),
    ]
}

/// The arm as a fixed-base tree: link i hangs from body i, and is body i + 1.
fn arm_tree() -> Tree<3> {
    let links = arm_links();
    let joints: [JointSpec; 3] = std::array::from_fn(|i| JointSpec {
        parent_body: i,
        kind: JointType::Revolute,
        origin: Placement::from_xyz_rpy(links[i].origin_xyz_m, links[i].origin_rpy_rad),
        axis: links[i].axis,
        body: Inertial {
            mass_kg: links[i].mass_kg,
            com_m: links[i].com_m,
            inertia_kgm2: links[i].inertia_kgm2,
        },
    });
    Tree::new(&TreeSpec {
        base: BaseKind::Fixed,
        base_body: Inertial::ZERO,
        joints: &joints,
    })
    .expect("valid tree")
}

/// The hand's body: the third link.
const HAND_BODY: usize = 3;

fn bench(c: &mut Criterion) {
    let tree = arm_tree();
    let base = Isometry3::identity();
    let hand = Vector3::new(0.35, 0.0, 0.0);
    let q = [0.3, -0.4, 0.9];
    let qd = [0.2, -0.1, 0.3];
    let target = Vector3::new(0.5, 0.2, 0.3);
    let gravity = Vector3::new(0.0, 0.0, -9.81);
    let reach = |projector| {
        Reach::new(ReachConfig {
            projector,
            hand_point_m: hand.into(),
            stiffness_n_per_m: 500.0,
            damping_ns_per_m: 50.0,
            posture_stiffness_nm_per_rad: 20.0,
            posture_damping_nms_per_rad: 3.0,
            gravity_compensation: true,
        })
        .expect("valid config")
    };
    const PROJECTORS: [Projector; 2] = [Projector::PseudoInverse, Projector::DynamicallyConsistent];
    let mut group = c.benchmark_group("reach_tick_3_links");
    for projector in PROJECTORS {
        let reach = reach(projector);
        group.bench_function(BenchmarkId::from_parameter(format!("{projector:?}")), |b| {
            b.iter(|| {
                reach
                    .tick(
                        black_box(&tree),
                        &base,
                        HAND_BODY,
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
    let goal = tree
        .kinematics(&base, &[1.2, -0.9, 1.4])
        .and_then(|k| {
            k.frame_pose(
                HAND_BODY,
                &Placement {
                    xyz_m: hand.into(),
                    rotation: Placement::IDENTITY.rotation,
                },
            )
        })
        .expect("reachable target")
        .translation
        .vector;
    let ik = ccd_ik(&tree, &base, &q, HAND_BODY, &hand, &goal, 100, 1e-4).expect("ccd");
    assert!(ik.converged(), "{ik:?}");
    println!("ccd_ik: {} sweeps to {:.1e} m", ik.sweeps, ik.residual_m);
    c.bench_function("ccd_ik_3_links", |b| {
        b.iter(|| {
            ccd_ik(
                black_box(&tree),
                &base,
                black_box(&q),
                HAND_BODY,
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
