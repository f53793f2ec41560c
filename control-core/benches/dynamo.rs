//! ns per call of `control_core::dynamo` for Cartwheel-3d's 15-body "Bip" humanoid (14 ball
//! joints), over 64 fixed random-looking states cycled through:
//!
//! - `pose_servo/world_fixed_14`: `PoseServo::<14>::tick`, every joint a world-space target with
//!   fixed gains (the heading once, then per joint: input checks, T = W_d·W_a⁻¹, its axis-angle,
//!   the PD torque, the limit);
//! - `pose_servo/world_arrival_14`: the same with arrival gains about v on each joint's
//!   composite inertia tensor (one arrival solve and one gain limit per joint);
//! - `root_spring/tick`: `RootSpring::tick` (never breaking: no break criterion);
//! - `subtree_inertia/bip_15`: `subtree_inertia_about` over the 15 bodies;
//! - `humanoid_pose/root_spring_14`: `humanoid::HumanoidPose::<14, 15>::tick` under
//!   `world_space_root_spring`, the whole controller `dynamo_push` runs: every joint's servo by
//!   its part (the neck, shoulders and elbows scaled by their subtree's inertia every tick, with
//!   gravity's feed-forward), the ankles' lean damping, a shoulder arriving on time, the spring.
//!
//! After criterion's groups a table prints the median ns per call of 400 rounds of each (a
//! round: one pass over the 64 states), which a busy neighbour on a shared machine skews less
//! than a mean.
//!
//! `cargo bench -p control-core --bench dynamo -- --warm-up-time 1 --measurement-time 3`

#![allow(missing_docs)] // criterion_group!/criterion_main! generate undocumented items

use std::hint::black_box;
use std::time::Instant;

use control_core::articulated::nalgebra::{Matrix3, Unit, UnitQuaternion, Vector3};
use control_core::dynamo::JointKind;
use control_core::dynamo::humanoid::{
    BodyMass, HumanoidInput, HumanoidJoint, HumanoidPose, HumanoidSpec, JointRole, PoseLaw, Reach,
};
use control_core::dynamo::{
    Arrival, ArrivalSettings, BodyInertia, BodyMotion, JointConfig, JointInertia, PoseJointSpec,
    PoseServo, RootSpring, RootSpringConfig, Target, TargetSpace, subtree_inertia_about,
};
use control_core::frames::BodyMotion as FrameBody;
use control_core::simbicon3d::{Limb, Side};
use criterion::{Criterion, criterion_group};

const STATES: usize = 64;

/// The Bip's 14 joints as (parent, child) body indices.
const JOINTS: [(usize, usize); 14] = [
    (0, 1),
    (1, 2),
    (1, 3),
    (3, 4),
    (1, 5),
    (5, 6),
    (0, 7),
    (7, 8),
    (8, 9),
    (9, 10),
    (0, 11),
    (11, 12),
    (12, 13),
    (13, 14),
];

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

    fn vector(&mut self, r: f64) -> Vector3<f64> {
        Vector3::new(self.range(-r, r), self.range(-r, r), self.range(-r, r))
    }

    fn rotation(&mut self, max_angle: f64) -> UnitQuaternion<f64> {
        let axis = Unit::new_normalize(self.vector(1.0) + Vector3::new(0.0, 0.0, 1e-3));
        UnitQuaternion::from_axis_angle(&axis, self.range(-max_angle, max_angle))
    }
}

/// Cartwheel-3d's "Bip": masses and principal moments from its character file, rough positions
/// (y up), at rest orientation.
fn bip() -> [BodyInertia; 15] {
    let b = |mass_kg: f64, moi: [f64; 3], com: [f64; 3]| BodyInertia {
        mass_kg,
        principal_inertia_kgm2: Vector3::from(moi),
        orientation: UnitQuaternion::identity(),
        com_m: Vector3::from(com),
    };
    [
        b(12.9, [0.0705, 0.11, 0.13], [0.0, 1.0, 0.0]),
        b(22.5, [0.34, 0.21, 0.46], [0.0, 1.3, 0.0]),
        b(5.2, [0.04, 0.02, 0.042], [0.0, 1.7, 0.0]),
        b(2.2, [0.005, 0.02, 0.02], [0.0, 1.45, 0.3]),
        b(1.7, [0.0024, 0.025, 0.025], [0.0, 1.2, 0.35]),
        b(2.2, [0.005, 0.02, 0.02], [0.0, 1.45, -0.3]),
        b(1.7, [0.0024, 0.025, 0.025], [0.0, 1.2, -0.35]),
        b(6.6, [0.15, 0.022, 0.15], [0.0, 0.75, 0.1]),
        b(3.2, [0.055, 0.007, 0.055], [0.0, 0.3, 0.1]),
        b(1.0, [0.007, 0.008, 0.002], [0.05, 0.05, 0.1]),
        b(0.2, [0.002, 0.002, 0.0005], [0.15, 0.02, 0.1]),
        b(6.6, [0.15, 0.022, 0.15], [0.0, 0.75, -0.1]),
        b(3.2, [0.055, 0.007, 0.055], [0.0, 0.3, -0.1]),
        b(1.0, [0.007, 0.008, 0.002], [0.05, 0.05, -0.1]),
        b(0.2, [0.002, 0.002, 0.0005], [0.15, 0.02, -0.1]),
    ]
}

/// The bodies each joint moves: its child and the child's descendants.
fn subtree(joint: usize) -> Vec<usize> {
    let mut bodies = vec![JOINTS[joint].1];
    let mut k = 0;
    while k < bodies.len() {
        let b = bodies[k];
        bodies.extend(JOINTS.iter().filter(|(p, _)| *p == b).map(|(_, c)| *c));
        k += 1;
    }
    bodies
}

/// Each joint's part, in [`JOINTS`] order.
fn roles() -> [JointRole; 14] {
    let side = |s| move |limb| JointRole::Limb(s, limb);
    let (l, r) = (side(Side::Left), side(Side::Right));
    [
        JointRole::Waist,
        JointRole::Neck,
        l(Limb::Shoulder),
        l(Limb::Elbow),
        r(Limb::Shoulder),
        r(Limb::Elbow),
        l(Limb::Hip),
        l(Limb::Knee),
        l(Limb::Ankle),
        l(Limb::Toe),
        r(Limb::Hip),
        r(Limb::Knee),
        r(Limb::Ankle),
        r(Limb::Toe),
    ]
}

/// The whole humanoid's pose controller on the Bip, the left shoulder reaching 0.8 rad
/// forward over the first second.
fn humanoid_pose() -> HumanoidPose<14, 15> {
    let bip = bip();
    let masses = bip.map(|b| BodyMass {
        mass_kg: b.mass_kg,
        principal_inertia_kgm2: b.principal_inertia_kgm2,
    });
    let roles = roles();
    let joints: [HumanoidJoint; 14] = std::array::from_fn(|j| {
        let (parent, child) = JOINTS[j];
        // The joint halfway between the two centres of mass.
        let anchor_m = (bip[child].com_m - bip[parent].com_m) * 0.5;
        HumanoidJoint {
            parent,
            child,
            kind: JointKind::Ball,
            anchor_m,
            effort_nm: 300.0,
            role: roles[j],
        }
    });
    let spec = HumanoidSpec {
        lean_rad: (-0.02, -0.03),
        reach: Some(Reach {
            joint: 2,
            rotation: UnitQuaternion::from_axis_angle(&Vector3::z_axis(), 0.8),
            start_s: 0.0,
            arrive_s: 1.0,
        }),
        ..HumanoidSpec::new(&masses, &joints, 0.005)
    };
    HumanoidPose::new(PoseLaw::WorldSpaceRootSpring, &spec).expect("valid humanoid")
}

struct Inputs {
    bodies: Vec<[BodyMotion; 15]>,
    /// The same states as a plant's frame carries them (centres of mass at the Bip's, moving).
    frames: Vec<[FrameBody; 15]>,
    fixed: Vec<[Target; 14]>,
    arrival: Vec<[Target; 14]>,
}

fn inputs() -> Inputs {
    let mut rng = Rng(0x2545_F491_4F6C_DD1D);
    let bip = bip();
    // Each joint's composite inertia about its joint point (taken at the child's centre of mass
    // less 0.1 m along y: the bench needs a plausible tensor, not the exact anchor).
    let tensors: Vec<Matrix3<f64>> = (0..14)
        .map(|j| {
            let set: Vec<BodyInertia> = subtree(j).iter().map(|&b| bip[b]).collect();
            let point = bip[JOINTS[j].1].com_m + Vector3::new(0.0, 0.1, 0.0);
            subtree_inertia_about(&point, &set).expect("valid bodies")
        })
        .collect();
    let mut bodies = Vec::new();
    let mut fixed = Vec::new();
    let mut arrival = Vec::new();
    for k in 0..STATES {
        bodies.push(std::array::from_fn(|_| BodyMotion {
            orientation: rng.rotation(1.0),
            angular_velocity_rad_s: rng.vector(2.0),
        }));
        let targets: [Target; 14] = std::array::from_fn(|_| Target {
            space: TargetSpace::World,
            orientation: rng.rotation(1.2),
            angular_velocity_rad_s: rng.vector(0.5),
            arrival: None,
        });
        fixed.push(targets);
        arrival.push(std::array::from_fn(|j| Target {
            arrival: Some(Arrival {
                time_to_go_s: 0.6 - 0.005 * k as f64,
                inertia: JointInertia::Tensor(tensors[j]),
            }),
            ..targets[j]
        }));
    }
    let frames = bodies
        .iter()
        .map(|b: &[BodyMotion; 15]| {
            std::array::from_fn(|i| {
                let q = b[i].orientation.quaternion();
                FrameBody {
                    com_m: bip[i].com_m.into(),
                    orientation: [q.w, q.i, q.j, q.k],
                    velocity_m_s: (b[i].angular_velocity_rad_s * 0.1).into(),
                    angular_velocity_rad_s: b[i].angular_velocity_rad_s.into(),
                }
            })
        })
        .collect();
    Inputs {
        bodies,
        frames,
        fixed,
        arrival,
    }
}

fn pose_servo() -> PoseServo<14> {
    let specs = JOINTS.map(|(parent, child)| PoseJointSpec {
        parent,
        child,
        config: JointConfig::ball(300.0, 30.0, 500.0),
    });
    PoseServo::new(15, 0, &specs, ArrivalSettings::default()).expect("valid servo")
}

fn spring() -> RootSpring {
    RootSpring::new(RootSpringConfig {
        break_torque_nm: None,
        ..RootSpringConfig::default()
    })
    .expect("valid spring")
}

/// One measured pass: a name and a call over the 64 states.
type Pass<'a> = (&'static str, Box<dyn FnMut() + 'a>);

/// The five measured passes, each over the 64 states.
fn passes(inputs: &Inputs) -> Vec<Pass<'_>> {
    let servo = pose_servo();
    let mut spring = spring();
    let mut pose = humanoid_pose();
    let bip = bip();
    let points: Vec<Vector3<f64>> = inputs
        .bodies
        .iter()
        .map(|b| b[7].angular_velocity_rad_s * 0.1 + Vector3::new(0.0, 0.95, 0.1))
        .collect();
    vec![
        (
            "pose_servo/world_fixed_14",
            Box::new(move || {
                for (bodies, targets) in inputs.bodies.iter().zip(&inputs.fixed) {
                    black_box(servo.tick(black_box(bodies), black_box(targets)).is_ok());
                }
            }),
        ),
        (
            "pose_servo/world_arrival_14",
            Box::new(move || {
                for (bodies, targets) in inputs.bodies.iter().zip(&inputs.arrival) {
                    black_box(servo.tick(black_box(bodies), black_box(targets)).is_ok());
                }
            }),
        ),
        (
            "root_spring/tick",
            Box::new(move || {
                for bodies in &inputs.bodies {
                    let root = &bodies[0];
                    black_box(
                        spring
                            .tick(
                                black_box(&root.orientation),
                                black_box(&root.angular_velocity_rad_s),
                            )
                            .is_ok(),
                    );
                }
            }),
        ),
        (
            "subtree_inertia/bip_15",
            Box::new(move || {
                for p in &points {
                    black_box(subtree_inertia_about(black_box(p), black_box(&bip)).is_ok());
                }
            }),
        ),
        (
            "humanoid_pose/root_spring_14",
            Box::new(move || {
                for (k, bodies) in inputs.frames.iter().enumerate() {
                    let input = HumanoidInput {
                        time_s: 0.005 * k as f64,
                        bodies: black_box(bodies),
                    };
                    black_box(pose.tick(&input).limited);
                }
            }),
        ),
    ]
}

fn bench(c: &mut Criterion) {
    let inputs = inputs();
    // Every input is accepted: the bench times the work, not refusals.
    let servo = pose_servo();
    for (bodies, (fixed, arrival)) in inputs
        .bodies
        .iter()
        .zip(inputs.fixed.iter().zip(&inputs.arrival))
    {
        servo.tick(bodies, fixed).expect("fixed tick");
        servo.tick(bodies, arrival).expect("arrival tick");
    }
    let mut pose = humanoid_pose();
    for frame in &inputs.frames {
        let out = pose.tick(&HumanoidInput {
            time_s: 0.1,
            bodies: frame,
        });
        assert!(
            !out.safe && out.refused == 0,
            "the humanoid's tick refused: {out:?}"
        );
    }
    let mut group = c.benchmark_group("dynamo");
    group.throughput(criterion::Throughput::Elements(STATES as u64));
    for (name, mut pass) in passes(&inputs) {
        group.bench_function(name, |b| b.iter(&mut pass));
    }
    group.finish();
}

/// The median ns per call of 400 rounds of each pass.
fn medians() {
    let inputs = inputs();
    println!("\nmedians (ns per call, 400 rounds of {STATES} calls each):");
    for (name, mut pass) in passes(&inputs) {
        for _ in 0..20 {
            pass();
        }
        let mut rounds: Vec<f64> = (0..400)
            .map(|_| {
                let t = Instant::now();
                pass();
                t.elapsed().as_secs_f64() * 1e9 / STATES as f64
            })
            .collect();
        rounds.sort_by(f64::total_cmp);
        println!("{name:<30} {:>9.1}", rounds[rounds.len() / 2]);
    }
}

criterion_group!(benches, bench);

fn main() {
    benches();
    medians();
    Criterion::default().configure_from_args().final_summary();
}
