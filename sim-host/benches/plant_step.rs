//! Plant step cost and lockstep speed.
//!
//! - `plant_step/arm_alone`: one physics step of the arm scene, in process.
//! - `plant_step/arm_4_balls_2_weights`: the same with four balls and two 10 kg weights in
//!   flight (spawned together, hitting the arm and each other; a fresh plant every 200 steps so
//!   that they stay in flight).
//! - `plant_step/arm3_robot`: one physics step of the robot plant (`sim_host::robot`) on
//!   `models/arm3.urdf` (3 multibody joints, in process), released from (−1.0, 0.6, 0.2) rad
//!   under gravity (0, −9.81, 0) and driven by a PD towards a posture (limits engaging at
//!   times); a fresh plant every 400 steps (2 s).
//! - `plant_step/arm3_robot_wall_contact`: the same robot in `scenes/arm3_wall.json` (gravity
//!   off, one wall), its upper arm pressed onto the wall's edge by 5 N·m at the shoulder, the
//!   elbow and wrist held by PDs: every step solves the resting edge contact and sums its
//!   impulses into the frame's contact force. Settled in contact for 0.5 s before timing.
//! - `plant_step/biped_standing`: one step of the SIMBICON biped (`sim_host::biped`, 7 bodies,
//!   6 joints, 7 plane joints, ground contact under both feet) standing on PD torques.
//! - `plant_step/humanoid_standing`: one step of the 15-body humanoid (`models/humanoid15.urdf`,
//!   `sim_host::humanoid`: 15 bodies, 14 impulse joints with limits, ground contact under both
//!   feet) standing on a parent-space PD (the torque vector of every joint from the frame's body
//!   quaternions, as `tests/humanoid.rs` does), a fresh plant every 600 steps (3 s).
//! - `lockstep/binary_*`: one lockstep round through the real `sim-host` process over a
//!   socketpair (send the torque frame for step k, receive the state of step k + 1): the time
//!   per simulated step of a lockstep run, so speed × real time = dt / this. `same_cpu` pins the
//!   plant (`--cpu 0`) and this thread to CPU 0; `any_cpu` leaves placement to the scheduler.
//!
//! Run: `cargo bench -p sim-host`
#![allow(missing_docs)]

use sim_host::SceneFile as _;
use std::hint::black_box;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use control_core::frames::{MAX_FRAME_LEN, StateFrame, TORQUE_FRAME_LEN, TorqueFrame};
use criterion::{Criterion, criterion_group, criterion_main};
use rapier3d::parry::glamx::glam::{DQuat, DVec3};
use sim_host::host::pin_to_cpu;
use sim_host::humanoid::{BodyPose, HumanoidModel, JointKind};
use sim_host::{
    ArmSpec, BallSpawn, BipedPlant, BipedScene, BipedState, HumanoidPlant, HumanoidScene, Plant,
    RobotPlant, RobotScene, Scene, WeightDrop, WeightShape,
};
use transport::{FrameTransport, SeqPacket};

fn busy_scene() -> Scene {
    let mut s = Scene::new(ArmSpec::EXAMPLE, 1e6);
    for (i, (x, y)) in [(0.0, -0.3), (0.0, -0.6), (0.0, -0.9), (0.4, -0.5)]
        .into_iter()
        .enumerate()
    {
        s.balls
            .push(BallSpawn::aimed(i as u16, [x, y], 0.3, 0.3, 0.05, 0.2, 9.8));
    }
    for (i, x) in [0.05, -0.05].into_iter().enumerate() {
        s.weights.push(WeightDrop {
            id: 4 + i as u16, // after the balls' ids: one namespace
            spawn_time_s: 0.0,
            position_m: [x, 0.3 + 0.2 * i as f64, 0.0],
            velocity_m_s: [0.0; 3],
            shape: WeightShape::Box {
                half_extents_m: [0.08; 3],
            },
            mass_kg: 10.0,
        });
    }
    s
}

/// The forward lean at the ankles that puts the standing humanoid's centre of mass above them.
fn ankle_lean_rad(model: &HumanoidModel) -> f64 {
    let upright = BodyPose {
        com_m: [0.0; 3],
        orientation: [1.0, 0.0, 0.0, 0.0],
    };
    let poses = model.pose(upright, &[]);
    let com = model
        .bodies
        .iter()
        .zip(&poses)
        .map(|(b, p)| DVec3::from_array(p.com_m) * b.mass_kg)
        .sum::<DVec3>()
        / model.total_mass_kg();
    let j = &model.joints[model.joint_index("left_ankle").expect("left ankle")];
    let ankle = DVec3::from_array(poses[j.parent].com_m) + DVec3::from_array(j.anchor_in_parent_m);
    (ankle.x - com.x).atan2(com.y - ankle.y)
}

/// The humanoid's standing PD of `tests/humanoid.rs`: per joint, in the parent's axes,
/// −kp ⊙ e − kd ⊙ ω_rel (hinges and two-axis joints projected on their axes), to the world.
fn humanoid_stand(model: &HumanoidModel, lean: f64, f: &StateFrame, tau: &mut [f64]) {
    let q = |o: [f64; 4]| DQuat::from_xyzw(o[1], o[2], o[3], o[0]);
    for (j, joint) in model.joints.iter().enumerate() {
        let (p, c) = (&f.bodies[joint.parent], &f.bodies[joint.child]);
        let qp = q(p.orientation);
        let mut rel = qp.inverse() * q(c.orientation);
        if rel.w < 0.0 {
            rel = -rel;
        }
        let mut e = rel.to_scaled_axis();
        let (kp, kd) = match joint.name.as_str() {
            "neck" => ([100.0; 3], [1.0; 3]),
            n if n.ends_with("shoulder") => ([100.0, 100.0, 20.0], [2.0, 2.0, 0.2]),
            n if n.ends_with("elbow") => ([30.0; 3], [0.5; 3]),
            n if n.ends_with("toe") => ([20.0; 3], [0.1; 3]),
            n if n.ends_with("ankle") => {
                e.z -= lean;
                ([300.0, 0.0, 1000.0], [1.0, 0.0, 2.0])
            }
            _ => ([300.0, 1000.0 / 3.0, 1000.0], [1.0, 2.0 / 3.0, 2.0]),
        };
        let w = qp.inverse()
            * (DVec3::from_array(c.angular_velocity_rad_s)
                - DVec3::from_array(p.angular_velocity_rad_s));
        let mut local = -DVec3::from_array(kp) * e - DVec3::from_array(kd) * w;
        match joint.kind {
            JointKind::Hinge { axis, .. } => {
                let a = DVec3::from_array(axis);
                local = a * a.dot(local);
            }
            JointKind::TwoAxis { axes, .. } => {
                local = axes
                    .iter()
                    .map(|&a| DVec3::from_array(a) * DVec3::from_array(a).dot(local))
                    .sum();
            }
            JointKind::Ball { .. } => {}
        }
        let mut t = qp * local;
        if t.length() > joint.effort_nm {
            t *= joint.effort_nm * (1.0 - 1e-9) / t.length();
        }
        tau[3 * j..3 * j + 3].copy_from_slice(&t.to_array());
    }
}

fn plant_step(c: &mut Criterion) {
    let mut g = c.benchmark_group("plant_step");
    let mut plant = Plant::new(&Scene::new(ArmSpec::EXAMPLE, 1e6)).expect("scene");
    g.bench_function("arm_alone", |b| {
        b.iter(|| black_box(plant.step(black_box(&[0.5]))));
    });
    let scene = busy_scene();
    g.bench_function("arm_4_balls_2_weights", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            let mut left = iters;
            while left > 0 {
                let mut p = Plant::new(&scene).expect("scene");
                p.step(&[0.0]); // spawn everything
                let n = left.min(200);
                let t0 = Instant::now();
                for _ in 0..n {
                    black_box(p.step(black_box(&[0.5])));
                }
                total += t0.elapsed();
                left -= n;
            }
            total
        });
    });
    let mut arm3 = RobotScene::new(
        concat!(env!("CARGO_MANIFEST_DIR"), "/../models/arm3.urdf"),
        1e6,
    );
    arm3.gravity_m_s2 = [0.0, -9.81, 0.0]; // arm3 is described y-up
    for (name, q) in [("shoulder", -1.0), ("elbow", 0.6), ("wrist", 0.2)] {
        arm3.initial_q.insert(String::from(name), q);
    }
    g.bench_function("arm3_robot", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            let mut left = iters;
            while left > 0 {
                let mut p = RobotPlant::new(&arm3).expect("arm3 scene");
                let mut f = p.state_frame();
                let n = left.min(400);
                let t0 = Instant::now();
                for _ in 0..n {
                    let mut tau = [0.0; 3];
                    for (i, (j, target)) in f.joints.iter().zip([-0.4, 1.2, 0.3]).enumerate() {
                        tau[i] = 20.0 * (target - j.position_rad) - 2.0 * j.velocity_rad_s;
                    }
                    f = p.step(black_box(&tau));
                }
                total += t0.elapsed();
                left -= n;
            }
            total
        });
    });
    let mut wall = RobotScene::load(std::path::Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/scenes/arm3_wall.json"
    )))
    .expect("arm3_wall scene");
    wall.end_time_s = 1e6;
    let press = |f: &control_core::frames::StateFrame| {
        let q: Vec<f64> = f.joints.iter().map(|j| j.position_rad).collect();
        let v: Vec<f64> = f.joints.iter().map(|j| j.velocity_rad_s).collect();
        [
            -5.0,
            30.0 * (0.3 - q[1]) - 2.0 * v[1],
            4.0 * (0.0 - q[2]) - 0.2 * v[2],
        ]
    };
    let mut p = RobotPlant::new(&wall).expect("arm3_wall plant");
    let mut f = p.state_frame();
    for _ in 0..100 {
        f = p.step(&press(&f));
    }
    assert_eq!(f.contacts.len(), 1, "in contact before timing");
    g.bench_function("arm3_robot_wall_contact", |b| {
        b.iter(|| {
            f = p.step(black_box(&press(&f)));
        });
    });
    assert_eq!(f.contacts.len(), 1, "still in contact");

    // The SIMBICON biped standing on both feet, held by PDs (kp 300, kd 30) on knees and ankles
    // and the torso's virtual PD through both hips: every step solves 13 impulse joints (6
    // joints, 7 plane joints) and both feet's ground contacts. A fresh plant every 300 steps
    // (1.5 s, before the slow ankle-lean drift brings it down).
    let stand = |s: &BipedState| {
        let tau_torso = -300.0 * s.root.pitch_rad - 30.0 * s.root.angular_velocity_rad_s;
        let mut tau = [0.0; 6];
        for (j, t) in tau.iter_mut().enumerate() {
            *t = if j % 3 == 0 {
                -tau_torso / 2.0
            } else {
                -300.0 * s.joints[j].angle_rad - 30.0 * s.joints[j].rate_rad_s
            };
        }
        tau.map(|t: f64| t.clamp(-1000.0, 1000.0))
    };
    let biped = BipedScene::new(1e6, [0.0, -9.81]);
    g.bench_function("biped_standing", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            let mut left = iters;
            while left > 0 {
                let mut p = BipedPlant::new(&biped).expect("biped scene");
                let mut s = *p.state();
                let n = left.min(300);
                let t0 = Instant::now();
                for _ in 0..n {
                    s = p.step(black_box(&stand(&s))).expect("within the limit");
                }
                total += t0.elapsed();
                left -= n;
            }
            total
        });
    });

    // The 15-body humanoid standing on its parent-space PD: 14 impulse joints with limits, both
    // feet's ground contacts. A fresh plant every 600 steps (3 s).
    let humanoid = HumanoidScene::new(
        concat!(env!("CARGO_MANIFEST_DIR"), "/../models/humanoid15.urdf"),
        1e6,
        [0.0, -9.81, 0.0],
    );
    g.bench_function("humanoid_standing", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            let mut left = iters;
            while left > 0 {
                let mut p = HumanoidPlant::new(&humanoid).expect("humanoid scene");
                let model = p.model().clone();
                let lean = ankle_lean_rad(&model);
                let mut f = p.state_frame();
                let mut tau = vec![0.0; model.torque_len()];
                let n = left.min(600);
                let t0 = Instant::now();
                for _ in 0..n {
                    humanoid_stand(&model, lean, &f, &mut tau);
                    f = p.step(black_box(&tau)).expect("within the limits");
                }
                total += t0.elapsed();
                left -= n;
            }
            total
        });
    });
    g.finish();
}

fn lockstep(c: &mut Criterion) {
    let dir = std::env::temp_dir().join(format!("sim-host-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join("scene.json");
    let scene = Scene::new(ArmSpec::EXAMPLE, 1e6);
    std::fs::write(&path, serde_json::to_string(&scene).expect("json")).expect("write");
    let mut g = c.benchmark_group("lockstep");
    for (name, cpu) in [("binary_same_cpu", Some(0usize)), ("binary_any_cpu", None)] {
        let (ours, theirs) = SeqPacket::pair().expect("socketpair");
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_sim-host"));
        let fd = theirs.inherit_into(&mut cmd);
        cmd.arg("--scene")
            .arg(&path)
            .args(["--fd", &fd.to_string(), "--mode", "lockstep"])
            .stderr(Stdio::null());
        if let Some(cpu) = cpu {
            cmd.args(["--cpu", &cpu.to_string()]);
            pin_to_cpu(cpu).expect("pin");
        }
        let mut child = cmd.spawn().expect("spawn sim-host");
        drop(theirs);
        let mut buf = [0u8; MAX_FRAME_LEN];
        ours.recv(&mut buf).expect("state 0");
        let mut k = 0u64;
        let mut out = [0u8; TORQUE_FRAME_LEN];
        g.bench_function(name, |b| {
            b.iter(|| {
                let mut f = TorqueFrame::new(k, k);
                let _ = f.push_torque(0.5);
                f.encode(&mut out).expect("encode");
                ours.send(&out).expect("send");
                black_box(ours.recv(&mut buf).expect("recv"));
                k += 1;
            });
        });
        drop(ours);
        child.wait().expect("sim-host exit");
        if cpu.is_some() {
            // Undo the pin for the next variant.
            // SAFETY: a zeroed cpu_set_t is a valid empty set, CPU_SET writes inside it.
            unsafe {
                let mut set: libc::cpu_set_t = std::mem::zeroed();
                for i in 0..64 {
                    libc::CPU_SET(i, &mut set);
                }
                libc::sched_setaffinity(0, size_of::<libc::cpu_set_t>(), &set);
            }
        }
    }
    g.finish();
}

criterion_group!(benches, plant_step, lockstep);
criterion_main!(benches);
