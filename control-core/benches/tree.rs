//! ns per evaluation of a kinematic tree (`control_core::tree`): forward kinematics, then the
//! mass matrix (CRBA) or inverse dynamics (RNEA), for a Panda-like arm (7 revolute joints and 2
//! prismatic fingers on a fixed base, nv = 9: the numbers of example-robot-data's
//! `panda_description/urdf/panda.urdf`, its fixed joints merged as Pinocchio's URDF parser merges
//! them), its 7 revolute joints alone, and a 50-joint tree on a floating base (nv = 56).
//!
//! Pinocchio 4.1's C++ figures for the Panda on this machine, the goal: CRBA 550 ns, RNEA
//! 1060 ns (each with its own forward kinematics).
//!
//! Each is also timed with one kept `TreeKinematics` filled by `Tree::kinematics_into` (no
//! copy of the frames per call).
//!
//! `cargo bench -p control-core --bench tree`

#![allow(missing_docs)] // criterion_group!/criterion_main! generate undocumented items

use std::f64::consts::FRAC_PI_2;
use std::hint::black_box;

use control_core::tree::{BaseKind, Inertial, JointSpec, JointType, Placement, Tree, TreeSpec};
use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use nalgebra::{Isometry3, Translation3, UnitQuaternion, Vector3};

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

/// One Panda joint: URDF `<origin xyz rpy>`, axis, and the child's `<inertial>` (mass, centre,
/// ixx ixy ixz iyy iyz izz).
struct PandaJoint {
    parent: usize,
    kind: JointType,
    xyz: [f64; 3],
    rpy: [f64; 3],
    axis: [f64; 3],
    mass: f64,
    com: [f64; 3],
    inertia: [f64; 6],
}

const Z: [f64; 3] = [0.0, 0.0, 1.0];

/// panda.urdf's joints 1–7 and the two fingers. Link 7 carries the hand (fixed joints
/// `panda_joint8` and `panda_hand_joint` merged: 1.465522 kg); the fingers hang from it at
/// 0.1654 m, turned −π/4 about z.
const PANDA: [PandaJoint; 9] = [
    PandaJoint {
        parent: 0,
        kind: JointType::Revolute,
        xyz: [0.0, 0.0, 0.333],
        rpy: [0.0; 3],
        axis: Z,
        mass: 4.970684,
        com: [0.003875, 0.002081, -0.04762],
        inertia: [0.70337, -0.000139, 0.006772, 0.70661, 0.019169, 0.009117],
    },
    PandaJoint {
        parent: 1,
        kind: JointType::Revolute,
        xyz: [0.0; 3],
        rpy: [-FRAC_PI_2, 0.0, 0.0],
        axis: Z,
        mass: 0.646926,
        com: [-0.003141, -0.02872, 0.003495],
        inertia: [0.007962, -0.003925, 0.010254, 0.02811, 0.000704, 0.025995],
    },
    PandaJoint {
        parent: 2,
        kind: JointType::Revolute,
        xyz: [0.0, -0.316, 0.0],
        rpy: [FRAC_PI_2, 0.0, 0.0],
        axis: Z,
        mass: 3.228604,
        com: [0.027518, 0.039252, -0.066502],
        inertia: [0.037242, -0.004761, -0.011396, 0.036155, -0.012805, 0.01083],
    },
    PandaJoint {
        parent: 3,
        kind: JointType::Revolute,
        xyz: [0.0825, 0.0, 0.0],
        rpy: [FRAC_PI_2, 0.0, 0.0],
        axis: Z,
        mass: 3.587895,
        com: [-0.05317, 0.104419, 0.027454],
        inertia: [0.025853, 0.007796, -0.001332, 0.019552, 0.008641, 0.028323],
    },
    PandaJoint {
        parent: 4,
        kind: JointType::Revolute,
        xyz: [-0.0825, 0.384, 0.0],
        rpy: [-FRAC_PI_2, 0.0, 0.0],
        axis: Z,
        mass: 1.225946,
        com: [-0.011953, 0.041065, -0.038437],
        inertia: [0.035549, -0.002117, -0.004037, 0.029474, 0.000229, 0.008627],
    },
    PandaJoint {
        parent: 5,
        kind: JointType::Revolute,
        xyz: [0.0; 3],
        rpy: [FRAC_PI_2, 0.0, 0.0],
        axis: Z,
        mass: 1.666555,
        com: [0.060149, -0.014117, -0.010517],
        inertia: [0.001964, 0.000109, -0.001158, 0.004354, 0.000341, 0.005433],
    },
    PandaJoint {
        parent: 6,
        kind: JointType::Revolute,
        xyz: [0.088, 0.0, 0.0],
        rpy: [FRAC_PI_2, 0.0, 0.0],
        axis: Z,
        mass: 1.465522,
        com: [
            0.0017561014923953414,
            0.0013882015818676191,
            0.09915644298345573,
        ],
        inertia: [
            0.016396041602866757,
            0.0003949639647318426,
            -0.0007101156156540998,
            0.01397340252488091,
            -0.0010538087685085858,
            0.0066753082423586735,
        ],
    },
    PandaJoint {
        parent: 7,
        kind: JointType::Prismatic,
        xyz: [0.0, 0.0, 0.1654],
        rpy: [0.0, 0.0, -std::f64::consts::FRAC_PI_4],
        axis: [0.0, 1.0, 0.0],
        mass: 0.015,
        com: [0.0; 3],
        inertia: [2.375e-6, 0.0, 0.0, 2.375e-6, 0.0, 7.5e-7],
    },
    PandaJoint {
        parent: 7,
        kind: JointType::Prismatic,
        xyz: [0.0, 0.0, 0.1654],
        rpy: [0.0, 0.0, -std::f64::consts::FRAC_PI_4],
        axis: [0.0, -1.0, 0.0],
        mass: 0.015,
        com: [0.0; 3],
        inertia: [2.375e-6, 0.0, 0.0, 2.375e-6, 0.0, 7.5e-7],
    },
];

fn panda_joints() -> Vec<JointSpec> {
    PANDA
        .iter()
        .map(|j| JointSpec {
            parent_body: j.parent,
            kind: j.kind,
            origin: Placement::from_xyz_rpy(j.xyz, j.rpy),
            axis: j.axis,
            body: Inertial {
                mass_kg: j.mass,
                com_m: j.com,
                inertia_kgm2: j.inertia,
            },
        })
        .collect()
}

/// panda_link0's inertial: the fixed base (moves nothing).
const PANDA_BASE: Inertial = Inertial {
    mass_kg: 0.629769,
    com_m: [-0.041018, -0.00014, 0.049974],
    inertia_kgm2: [0.00315, 8.2904e-07, 0.00015, 0.00388, 8.2299e-06, 0.004285],
};

fn panda() -> Tree<9> {
    Tree::new(&TreeSpec {
        base: BaseKind::Fixed,
        base_body: PANDA_BASE,
        joints: &panda_joints(),
    })
    .expect("valid panda")
}

/// The Panda's 7 revolute joints alone.
fn panda_arm() -> Tree<7> {
    let joints = panda_joints();
    Tree::new(&TreeSpec {
        base: BaseKind::Fixed,
        base_body: PANDA_BASE,
        joints: &joints[..7],
    })
    .expect("valid arm")
}

/// A 50-joint tree on a floating base: five limbs of ten joints each (a humanoid with a head
/// and a tail, say), axes cycling through z, y, x and a tilted one, one prismatic joint in
/// seven.
fn floating50() -> Tree<56> {
    let axes = [
        [0.0, 0.0, 1.0],
        [0.0, 1.0, 0.0],
        [1.0, 0.0, 0.0],
        [0.0, 0.6, 0.8],
    ];
    let joints: Vec<JointSpec> = (0..50)
        .map(|k| {
            let limb = k / 10;
            let f = (k % 10) as f64;
            let parent_body = if k % 10 == 0 { 0 } else { k };
            let origin = if k % 10 == 0 {
                Placement::from_xyz_rpy(
                    [0.1 * (limb as f64 - 2.0), 0.05 * limb as f64, 0.2],
                    [0.0, 0.3 * limb as f64, 0.0],
                )
            } else {
                Placement::from_xyz_rpy([0.12, 0.0, 0.01 * f], [0.1, 0.0, 0.05 * f])
            };
            let mass = 3.0 - 0.2 * f;
            JointSpec {
                parent_body,
                kind: if k % 7 == 3 {
                    JointType::Prismatic
                } else {
                    JointType::Revolute
                },
                origin,
                axis: axes[k % axes.len()],
                body: Inertial {
                    mass_kg: mass,
                    com_m: [0.06, 0.005, -0.01],
                    inertia_kgm2: [
                        0.004 * mass,
                        0.0001,
                        0.0,
                        0.006 * mass,
                        0.0002,
                        0.005 * mass,
                    ],
                },
            }
        })
        .collect();
    Tree::new(&TreeSpec {
        base: BaseKind::Floating,
        base_body: Inertial {
            mass_kg: 12.0,
            com_m: [0.0, 0.0, 0.05],
            inertia_kgm2: [0.3, 0.0, 0.01, 0.25, 0.0, 0.2],
        },
        joints: &joints,
    })
    .expect("valid 50-joint tree")
}

/// A base pose, joint positions, generalized velocities and accelerations.
type State<const N: usize> = (Isometry3<f64>, [f64; N], [f64; N], [f64; N]);

/// 64 states from a fixed generator: base poses, positions in ±1.5, velocities and
/// accelerations in ±2.
fn states<const N: usize>() -> Vec<State<N>> {
    let mut rng = Rng(0x2545_F491_4F6C_DD1D);
    (0..64)
        .map(|_| {
            let pose = Isometry3::from_parts(
                Translation3::new(rng.range(-1.0, 1.0), rng.range(-1.0, 1.0), 1.0),
                UnitQuaternion::from_euler_angles(
                    rng.range(-1.0, 1.0),
                    rng.range(-1.0, 1.0),
                    rng.range(-3.0, 3.0),
                ),
            );
            let q = std::array::from_fn(|_| rng.range(-1.5, 1.5));
            let v = std::array::from_fn(|_| rng.range(-2.0, 2.0));
            let a = std::array::from_fn(|_| rng.range(-2.0, 2.0));
            (pose, q, v, a)
        })
        .collect()
}

fn bench_tree<const N: usize>(c: &mut Criterion, name: &str, tree: &Tree<N>, fixed_pose: bool) {
    let g = Vector3::new(0.0, 0.0, -9.81);
    let mut states = states::<N>();
    if fixed_pose {
        for s in &mut states {
            s.0 = Isometry3::identity();
        }
    }
    let mut group = c.benchmark_group("tree");
    let mut i = 0;
    group.bench_function(BenchmarkId::new("kinematics", name), |b| {
        b.iter(|| {
            i = (i + 1) % states.len();
            let (pose, q, _, _) = &states[i];
            black_box(tree.kinematics(black_box(pose), black_box(q)).expect("kin"));
        })
    });
    group.bench_function(BenchmarkId::new("kinematics_crba", name), |b| {
        b.iter(|| {
            i = (i + 1) % states.len();
            let (pose, q, _, _) = &states[i];
            let kin = tree.kinematics(black_box(pose), black_box(q)).expect("kin");
            black_box(kin.mass_matrix().expect("crba"));
        })
    });
    group.bench_function(BenchmarkId::new("kinematics_rnea", name), |b| {
        b.iter(|| {
            i = (i + 1) % states.len();
            let (pose, q, v, a) = &states[i];
            let kin = tree.kinematics(black_box(pose), black_box(q)).expect("kin");
            black_box(
                kin.inverse_dynamics(black_box(v), black_box(a), &g)
                    .expect("rnea"),
            );
        })
    });
    // The same with one kept `TreeKinematics` (no copy of it per call).
    let mut kin = control_core::tree::TreeKinematics::default();
    group.bench_function(BenchmarkId::new("kinematics_into_crba", name), |b| {
        b.iter(|| {
            i = (i + 1) % states.len();
            let (pose, q, _, _) = &states[i];
            tree.kinematics_into(&mut kin, black_box(pose), black_box(q))
                .expect("kin");
            black_box(kin.mass_matrix().expect("crba"));
        })
    });
    group.bench_function(BenchmarkId::new("kinematics_into_rnea", name), |b| {
        b.iter(|| {
            i = (i + 1) % states.len();
            let (pose, q, v, a) = &states[i];
            tree.kinematics_into(&mut kin, black_box(pose), black_box(q))
                .expect("kin");
            black_box(
                kin.inverse_dynamics(black_box(v), black_box(a), &g)
                    .expect("rnea"),
            );
        })
    });
    group.bench_function(BenchmarkId::new("kinematics_gravity", name), |b| {
        b.iter(|| {
            i = (i + 1) % states.len();
            let (pose, q, _, _) = &states[i];
            let kin = tree.kinematics(black_box(pose), black_box(q)).expect("kin");
            black_box(kin.gravity(&g).expect("gravity"));
        })
    });
    group.finish();
}

fn bench(c: &mut Criterion) {
    bench_tree(c, "panda", &panda(), true);
    bench_tree(c, "floating50", &floating50(), false);
    // The Panda's arm alone.
    bench_tree(c, "panda_arm7", &panda_arm(), true);
}

criterion_group!(benches, bench);
criterion_main!(benches);
