//! The balance controller (`control_core::balance`, one conic QP a tick) on a real humanoid:
//! Talos (example-robot-data's `talos_full_v2.urdf`, unmodified; floating base, 50 degrees of
//! freedom, its gripper's mimic joints loaded as independent) loaded by robot-model, standing in
//! its SRDF's `half_sitting` pose on both soles (four corners each, a 0.20 × 0.13 m rectangle
//! about each `*_sole_link` frame), every joint a group bounded by its URDF effort.
//!
//! One tick is timed from a state that changes every tick (the base's velocity cycling through
//! 16 small values, as a controller sees a standing robot sway), so the solver warm-starts from
//! the last tick as it would in a loop. Before timing, the bench prints one tick's status and
//! iterations (the QP is solved, not refused). Twice: with the library's settings, the
//! solver's range-space setup (`balance/talos_full/tick`), and with its null-space setup
//! (`balance/talos_full/tick_null_space`, `control_core::qp::Settings::range_space` off).
//!
//! `cargo bench -p robot-model --bench balance -- --warm-up-time 1 --measurement-time 5`

#![allow(missing_docs)] // criterion_group!/criterion_main! generate undocumented items

use std::hint::black_box;

use control_core::balance::{
    Balance, BalanceInput, BalanceSettings, BalanceStatus, ContactBody, MAX_POINTS,
};
use control_core::tree::Tree;
use criterion::{Criterion, criterion_group, criterion_main};
use nalgebra::{Isometry3, Translation3, UnitQuaternion, Vector3};
use robot_model::LoadOptions;

#[path = "../tests/support/mod.rs"]
mod support;
use support::robots_dir;

/// Talos: 6 + 44 velocities.
const NV: usize = 50;
/// Variables: 50 accelerations, 8 corners × 3 forces.
const NX: usize = 80;
/// Rows: 6 base + 12 no-slip + 8 minimum forces + 2 × 44 efforts + 8 cones × 3.
const NR: usize = 144;
type Talos = Balance<NV, NX, NR>;

/// The SRDF's `half_sitting` (talos.srdf), by joint; the grippers at zero.
const HALF_SITTING: [(&str, f64); 30] = [
    ("arm_left_1_joint", 0.25847),
    ("arm_left_2_joint", 0.173046),
    ("arm_left_3_joint", -0.0002),
    ("arm_left_4_joint", -0.525366),
    ("arm_left_5_joint", 0.0),
    ("arm_left_6_joint", 0.0),
    ("arm_left_7_joint", 0.1),
    ("arm_right_1_joint", -0.25847),
    ("arm_right_2_joint", -0.173046),
    ("arm_right_3_joint", 0.0002),
    ("arm_right_4_joint", -0.525366),
    ("arm_right_5_joint", 0.0),
    ("arm_right_6_joint", 0.0),
    ("arm_right_7_joint", 0.1),
    ("head_1_joint", 0.0),
    ("head_2_joint", 0.0),
    ("leg_left_1_joint", 0.0),
    ("leg_left_2_joint", 0.0),
    ("leg_left_3_joint", -0.411354),
    ("leg_left_4_joint", 0.859395),
    ("leg_left_5_joint", -0.448041),
    ("leg_left_6_joint", -0.001708),
    ("leg_right_1_joint", 0.0),
    ("leg_right_2_joint", 0.0),
    ("leg_right_3_joint", -0.411354),
    ("leg_right_4_joint", 0.859395),
    ("leg_right_5_joint", -0.448041),
    ("leg_right_6_joint", -0.001708),
    ("torso_1_joint", 0.0),
    ("torso_2_joint", 0.006761),
];

/// The controller with `settings`, the standing state (base pose, q), the centre of mass's
/// height above the soles and the mass.
fn talos(settings: BalanceSettings) -> (Box<Talos>, Isometry3<f64>, [f64; NV], f64, f64) {
    let urdf = robots_dir().join("talos_data/robots/talos_full_v2.urdf");
    let options = LoadOptions {
        mimic_as_independent: true,
        floating_base: true,
        ..Default::default()
    };
    let model =
        robot_model::load(&urdf, &options).unwrap_or_else(|e| panic!("{}: {e}", urdf.display()));
    let tree: Tree<NV> = model.tree().unwrap_or_else(|e| panic!("talos: {e}"));
    let q: [f64; NV] = model
        .positions(&HALF_SITTING)
        .unwrap_or_else(|e| panic!("talos: {e}"));
    let corners = [
        [0.1, 0.065, 0.0],
        [0.1, -0.065, 0.0],
        [-0.1, 0.065, 0.0],
        [-0.1, -0.065, 0.0],
    ];
    let contacts: Vec<ContactBody> = ["left_sole_link", "right_sole_link"]
        .iter()
        .map(|sole| {
            model
                .contact_body(sole, &corners)
                .unwrap_or_else(|e| panic!("talos: {e}"))
        })
        .collect();
    let groups = model
        .joint_groups()
        .unwrap_or_else(|e| panic!("talos: {e}"));
    // Soles on z = 0: the base lowered by the soles' height with the base at the origin.
    let kin = tree
        .kinematics(&Isometry3::identity(), &q)
        .expect("kinematics");
    let mut lowest = f64::INFINITY;
    for c in &contacts {
        let pose = kin.body_pose(c.body).expect("a sole body");
        for p in c.points.iter().take(c.count) {
            lowest = lowest.min((pose * nalgebra::Point3::from(*p)).z);
        }
    }
    let base = Isometry3::from_parts(
        Translation3::new(0.0, 0.0, -lowest),
        UnitQuaternion::identity(),
    );
    let (mass, com) = kin.center_of_mass().expect("centre of mass");
    let height = com.z - lowest;
    let balance = std::thread::Builder::new()
        .stack_size(64 << 20)
        .spawn(move || {
            Box::new(
                Talos::new(tree, &contacts, &groups, settings)
                    .unwrap_or_else(|e| panic!("talos: {e}")),
            )
        })
        .expect("a builder thread")
        .join()
        .expect("built");
    (balance, base, q, height, mass)
}

fn bench(c: &mut Criterion) {
    let null_space = BalanceSettings {
        qp: control_core::qp::Settings {
            range_space: false,
            ..BalanceSettings::DEFAULT.qp
        },
        ..BalanceSettings::DEFAULT
    };
    // The library's settings, and the same with the solver's null-space setup.
    for (name, settings) in [
        ("balance/talos_full/tick", BalanceSettings::DEFAULT),
        ("balance/talos_full/tick_null_space", null_space),
    ] {
        let (mut balance, base, q, height, mass) = talos(settings);
        let planted = [[true; MAX_POINTS]; 2];
        let velocities: Vec<[f64; NV]> = (0..16)
            .map(|k| {
                let phase = k as f64 * std::f64::consts::TAU / 16.0;
                let mut v = [0.0; NV];
                v[0] = 0.02 * phase.sin();
                v[1] = 0.01 * phase.cos();
                v[4] = 0.05 * phase.sin();
                v
            })
            .collect();
        let mut k = 0;
        let mut tick = |balance: &mut Talos| {
            k = (k + 1) % velocities.len();
            balance.tick(&BalanceInput {
                base_pose: &base,
                q: &q,
                v: &velocities[k],
                q_target: &q,
                upright_target: &UnitQuaternion::identity(),
                com_height_m: height,
                planted: &planted,
                gravity: Vector3::new(0.0, 0.0, -9.81),
                tasks: &[],
            })
        };
        let mut iterations = Vec::new();
        for _ in 0..32 {
            let out = tick(&mut balance);
            assert_eq!(out.status, BalanceStatus::Solved, "{:?}", out.qp);
            iterations.push(out.qp.map_or(0, |i| i.iterations));
        }
        let out = tick(&mut balance);
        let normal: f64 = out.forces.iter().take(out.point_count).map(|f| f[2]).sum();
        let weight = mass * 9.81;
        eprintln!(
            "{name}: solved, {} contact points carrying {:.1} N of its {:.1} N weight, \
             iterations per tick {:?} (the first cold)",
            out.point_count, normal, weight, iterations
        );
        c.bench_function(name, |b| b.iter(|| black_box(tick(&mut balance))));
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
