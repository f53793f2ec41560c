//! ns per control tick of a fixed-base robot's joint-space controllers, on its kinematic tree
//! (`control_core::tree::Tree`, here chain-shaped trees built by `articulated::serial_tree`): a
//! 3-link arm and a 28-DoF chain.
//!
//! - `tick`, `tick_feasible`: `TreeArrival::tick` with the parent feed-forward (kinematics, the
//!   composite inertia and gravity torque of every joint, one Lambert-W arrival solve per joint
//!   on its composite inertia clamped to the period's limit, the feed-forward and the torques),
//!   on mixed states and on states where every solve is exact;
//! - `tick_inverse_dynamics`: the same with `Coupling::InverseDynamics` (then one recursive
//!   Newton–Euler pass), what the `arrival` controller runs;
//! - `keyframe_servo`: that law through `keyframes::KeyframeServo` (the keyframe in force, the
//!   joints' losses compensated, every torque within its effort);
//! - `beat_tick`, `beat_tick_single_link`: "On the Beat!"'s tick (`BeatServo::tick`: the same
//!   kinematics, composite inertia, gravity and feed-forward, with the method's closed-form
//!   gains instead of the arrival solve), on the composite and on the single-link inertia;
//! - the pieces alone: `kinematics` (returned, and `kinematics_into` a kept `TreeKinematics`),
//!   `composite`, `gravity`, `inverse_dynamics`, `mass_matrix_into`; and `arrival_solves`, the
//!   solves alone (per joint the tick's `GainLimit`, `solve_arrival_gains` and clamp, or the
//!   `closest_arrival_gains` fallback).
//!
//! `cargo bench -p control-core --bench articulated -- --warm-up-time 1 --measurement-time 3`

#![allow(missing_docs)] // criterion_group!/criterion_main! generate undocumented items

use std::hint::black_box;

use control_core::articulated::{
    ArrivalSettings, Coupling, JointLosses, JointStatus, JointTarget, LinkSpec, TreeArrival,
};
use control_core::beat::{BeatConfig, BeatServo, BeatTarget, InertiaModel};
use control_core::gains::{
    ArrivalProblem, GainError, GainLimit, closest_arrival_gains, solve_arrival_gains,
};
use control_core::keyframes::{JointSafety, KeyframeLaw, KeyframeServo};
use control_core::tree::{Tree, TreeKinematics};
use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use nalgebra::{Isometry3, SMatrix, Vector3};

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

/// A 3-link arm: shoulder yaw, shoulder pitch, elbow.
fn arm() -> Vec<LinkSpec> {
    vec![
        link([0.0; 3], [0.0; 3], [0.0, 0.0, 1.0], 3.0, 0.1),
        link([0.1, 0.0, 0.0], [0.0; 3], [0.0, 1.0, 0.0], 2.0, 0.4),
        link([0.4, 0.0, 0.0], [0.0, 0.0, 0.3], [0.0, 1.0, 0.0], 1.5, 0.35),
    ]
}

/// A 28-DoF serial chain, axes cycling through x, y, z (and tilted), masses and lengths
/// shrinking towards the tip.
fn long_chain() -> Vec<LinkSpec> {
    let axes = [
        [0.0, 0.0, 1.0],
        [0.0, 1.0, 0.0],
        [1.0, 0.0, 0.0],
        [0.0, 1.0, 1.0],
    ];
    (0..28)
        .map(|i| {
            let f = i as f64;
            let length = 0.3 - 0.007 * f;
            let previous_length = if i == 0 { 0.0 } else { 0.3 - 0.007 * (f - 1.0) };
            link(
                [previous_length, 0.0, 0.0],
                [0.1 * (f % 3.0), 0.0, 0.05 * f],
                axes[i % axes.len()],
                4.0 - 0.1 * f,
                length,
            )
        })
        .collect()
}

/// The same links as a fixed-base `Tree` (a chain-shaped tree: joint k hangs from body k),
/// the base massless at the world origin.
fn tree_of<const N: usize>(links: &[LinkSpec]) -> Tree<N> {
    control_core::articulated::serial_tree(links).expect("a valid tree")
}

type State<const N: usize> = ([f64; N], [f64; N], [JointTarget; N]);

/// 64 states and targets from a fixed generator, `mixed`: positions in ±1.5 rad, velocities in
/// ±2 rad/s, poses up to 1 rad away, times to go from 20 ms to 1 s (about one joint solve in ten
/// is infeasible and takes the bisecting fallback); or not: velocities in ±0.2 rad/s towards
/// poses 0.1 to 0.6 rad away, 0.3 to 1 s to go (every solve exact).
fn states<const N: usize>(mixed: bool) -> Vec<State<N>> {
    let mut rng = Rng(0x2545_F491_4F6C_DD1D);
    (0..64)
        .map(|_| {
            let q: [f64; N] = std::array::from_fn(|_| rng.range(-1.5, 1.5));
            if mixed {
                let qd: [f64; N] = std::array::from_fn(|_| rng.range(-2.0, 2.0));
                let targets = std::array::from_fn(|i| JointTarget {
                    pose_rad: q[i] + rng.range(-1.0, 1.0),
                    time_to_go_s: rng.range(0.02, 1.0),
                });
                (q, qd, targets)
            } else {
                let away: [f64; N] = std::array::from_fn(|_| {
                    let d = rng.range(0.1, 0.6);
                    if rng.next() < 0.5 { d } else { -d }
                });
                let qd = std::array::from_fn(|i| away[i].signum() * rng.range(0.0, 0.2));
                let targets = std::array::from_fn(|i| JointTarget {
                    pose_rad: q[i] + away[i],
                    time_to_go_s: rng.range(0.3, 1.0),
                });
                (q, qd, targets)
            }
        })
        .collect()
}

/// Print how the joint solves of `states` went.
fn census<const N: usize>(label: &str, arrival: &TreeArrival, tree: &Tree<N>, states: &[State<N>]) {
    let g = Vector3::new(0.0, 0.0, -9.81);
    let base = Isometry3::identity();
    let (mut tracking, mut clamped, mut infeasible, mut holding) = (0, 0, 0, 0);
    for (q, qd, targets) in states {
        let command = arrival.tick(tree, &base, q, qd, targets, &g).expect("tick");
        for j in command.joints() {
            match j.status {
                JointStatus::Tracking => tracking += 1,
                JointStatus::GainClamped => clamped += 1,
                JointStatus::Infeasible(_) => infeasible += 1,
                _ => holding += 1,
            }
        }
    }
    println!(
        "{label}: joint solves over {} states: {tracking} tracking, {clamped} clamped, \
         {infeasible} infeasible (fallback), {holding} holding",
        states.len()
    );
}

/// Every tick and piece on `links` as a chain-shaped `Tree`, the base welded at the origin.
fn bench_tree<const N: usize>(c: &mut Criterion, name: &str, links: &[LinkSpec]) {
    let tree = tree_of::<N>(links);
    let base = Isometry3::identity();
    let g = Vector3::new(0.0, 0.0, -9.81);
    let mut group = c.benchmark_group("articulated");
    let arrival =
        TreeArrival::new(ArrivalSettings::default(), Coupling::default()).expect("valid config");
    for (label, mixed) in [("tick", true), ("tick_feasible", false)] {
        let states = states::<N>(mixed);
        census(&format!("{label}/{name}"), &arrival, &tree, &states);
        let mut i = 0;
        group.bench_function(BenchmarkId::new(label, name), |b| {
            b.iter(|| {
                i = (i + 1) % states.len();
                let (q, qd, targets) = &states[i];
                black_box(arrival.tick(
                    black_box(&tree),
                    &base,
                    black_box(q),
                    black_box(qd),
                    black_box(targets),
                    &g,
                ))
            })
        });
    }
    let states = states::<N>(true);
    // The arrival tick with the inverse-dynamics coupling, on the mixed states.
    let exact = TreeArrival::new(ArrivalSettings::default(), Coupling::InverseDynamics)
        .expect("valid config");
    let mut i = 0;
    group.bench_function(BenchmarkId::new("tick_inverse_dynamics", name), |b| {
        b.iter(|| {
            i = (i + 1) % states.len();
            let (q, qd, targets) = &states[i];
            black_box(exact.tick(
                black_box(&tree),
                &base,
                black_box(q),
                black_box(qd),
                black_box(targets),
                &g,
            ))
        })
    });
    // The same law through `KeyframeServo` (what the `arrival` controller runs): the keyframe in
    // force, the joints' losses compensated, every torque within its effort.
    let keyframes: Vec<Vec<(f64, [f64; N])>> = states
        .iter()
        .map(|(_, _, targets)| vec![(1.0, targets.map(|t| t.pose_rad))])
        .collect();
    let losses = [JointLosses {
        damping: 0.1,
        friction: 0.05,
    }; N];
    let safety = JointSafety::<N>::new(links.len(), &[1e3; N], &losses, 0.005, 0.9, 20.0)
        .expect("valid limits");
    let mut servo =
        KeyframeServo::new(KeyframeLaw::Arrival(exact), safety, g, 0.0025).expect("valid servo");
    let mut i = 0;
    group.bench_function(BenchmarkId::new("keyframe_servo", name), |b| {
        b.iter(|| {
            i = (i + 1) % states.len();
            let (q, qd, _) = &states[i];
            black_box(servo.tick(
                black_box(&tree),
                &base,
                black_box(q),
                black_box(qd),
                &keyframes[i],
                0.3,
            ))
        })
    });
    // The beat tick on the same states: each time to go taken as the keyframe's segment, ω̂ = 0.
    let beat_states: Vec<([f64; N], [f64; N], [BeatTarget; N])> = states
        .iter()
        .map(|(q, qd, targets)| {
            let targets = targets.map(|t| BeatTarget {
                pose_rad: t.pose_rad,
                velocity_rad_s: 0.0,
                segment_s: t.time_to_go_s,
            });
            (*q, *qd, targets)
        })
        .collect();
    for (label, inertia) in [
        ("beat_tick", InertiaModel::Composite),
        ("beat_tick_single_link", InertiaModel::SingleLink),
    ] {
        let beat = BeatServo::new(BeatConfig {
            inertia,
            ..BeatConfig::default()
        })
        .expect("valid config");
        let mut i = 0;
        group.bench_function(BenchmarkId::new(label, name), |b| {
            b.iter(|| {
                i = (i + 1) % beat_states.len();
                let (q, qd, targets) = &beat_states[i];
                black_box(beat.tick(
                    black_box(&tree),
                    &base,
                    black_box(q),
                    black_box(qd),
                    black_box(targets),
                    &g,
                ))
            })
        });
    }
    let mut i = 0;
    group.bench_function(BenchmarkId::new("kinematics", name), |b| {
        b.iter(|| {
            i = (i + 1) % states.len();
            black_box(black_box(&tree).kinematics(&base, black_box(&states[i].0)))
        })
    });
    let mut kept = TreeKinematics::default();
    group.bench_function(BenchmarkId::new("kinematics_into", name), |b| {
        b.iter(|| {
            i = (i + 1) % states.len();
            black_box(black_box(&tree).kinematics_into(&mut kept, &base, black_box(&states[i].0)))
        })
    });
    let kin: Vec<_> = states
        .iter()
        .map(|(q, _, _)| tree.kinematics(&base, q).expect("kinematics"))
        .collect();
    let mut k = 0;
    group.bench_function(BenchmarkId::new("composite", name), |b| {
        b.iter(|| {
            k = (k + 1) % kin.len();
            black_box(black_box(&kin[k]).composite())
        })
    });
    group.bench_function(BenchmarkId::new("gravity", name), |b| {
        b.iter(|| {
            k = (k + 1) % kin.len();
            black_box(black_box(&kin[k]).gravity(&g))
        })
    });
    // Inverse dynamics at the states' velocities, the velocities taken as accelerations too.
    group.bench_function(BenchmarkId::new("inverse_dynamics", name), |b| {
        b.iter(|| {
            k = (k + 1) % kin.len();
            let qd = &states[k].1;
            black_box(black_box(&kin[k]).inverse_dynamics(black_box(qd), black_box(qd), &g))
        })
    });
    let mut m = SMatrix::<f64, N, N>::zeros();
    group.bench_function(BenchmarkId::new("mass_matrix_into", name), |b| {
        b.iter(|| {
            k = (k + 1) % kin.len();
            black_box(black_box(&kin[k]).mass_matrix_into(&mut m)).expect("crba");
            black_box(&m);
        })
    });
    // The arrival solves alone, as `TreeArrival` makes them (the default config).
    let config = ArrivalSettings::default();
    let problems: Vec<Vec<ArrivalProblem>> = states
        .iter()
        .zip(&kin)
        .map(|((q, qd, targets), kin)| {
            let inertia = kin.composite().expect("composite").axis_inertia();
            (0..links.len())
                .map(|j| {
                    let (theta, target) = (q[j], targets[j]);
                    let direction = if target.pose_rad >= theta { 1.0 } else { -1.0 };
                    ArrivalProblem {
                        inertia_kgm2: inertia[j],
                        position_rad: theta,
                        velocity_rad_s: qd[j],
                        setpoint_rad: target.pose_rad + direction * config.pose_tolerance_rad,
                        arrival_rad: target.pose_rad,
                        time_to_go_s: target.time_to_go_s,
                    }
                })
                .collect()
        })
        .collect();
    group.bench_function(BenchmarkId::new("arrival_solves", name), |b| {
        b.iter(|| {
            k = (k + 1) % problems.len();
            for problem in &problems[k] {
                let problem = black_box(problem);
                let limit = GainLimit::new(
                    problem.inertia_kgm2,
                    config.period_s,
                    config.integrator,
                    config.stability_margin,
                )
                .expect("limit");
                let gains = match solve_arrival_gains(problem) {
                    Ok(gains) => Some(gains.clamp_to(&limit).gains),
                    Err(GainError::Indeterminate) => None,
                    Err(_) => closest_arrival_gains(problem, &limit),
                };
                black_box(gains);
            }
        })
    });
    group.finish();
}

fn bench(c: &mut Criterion) {
    bench_tree::<3>(c, "3dof", &arm());
    bench_tree::<28>(c, "28dof", &long_chain());
}

criterion_group!(benches, bench);
criterion_main!(benches);
